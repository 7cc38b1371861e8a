/* main.c — the crucible executable: subcommand dispatch, `help CMD`, "did you
 * mean", -V, the hidden worker mode, and standard output's write errors
 * turned into the exit code (common/cr_cli.h). exit() is called here only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "cr_config.h"
#include "cr_version.h"
#include "common/cr_cli.h"
#include "decode/dec.h"
#include "cuda/cuda_dev.h"
#include "harness/cli.h"
#include "harness/seed.h"
#include "sandbox/worker.h"
#include "reports/report.h"

static const struct {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *synopsis;
} commands[] = {
	{ "list", cr_cmd_list, "list [SET...]             list tasks" },
	{ "check", cr_cmd_check, "check FILE [--task T]     one candidate, full verdict with diagnostics" },
	{ "eval", cr_cmd_eval, "eval [PATH...]            verify and time every candidate; no PATH: the bundled samples" },
	{ "merge", cr_cmd_merge, "merge DIR... --out DIR    join the outputs of eval --shard runs into one" },
	{ "report", report_main, "report RESULTS.csv...     Fast_p, pass@k and reasoning-length tables" },
	{ "gate", report_gate_main, "gate --baseline A --current B   CI regression gate" },
	{ "lint", cr_cmd_lint, "lint [SET]                check the task registry itself" },
	{ "dump", cr_cmd_dump, "dump TASK --out DIR       one case's inputs and references as .npy" },
	{ "decode", dec_decode_main, "decode --model M.gguf     raw completion from a GGUF model" },
	{ "generate", cr_cmd_generate, "generate --model M.gguf   write candidates with the built-in decoder" },
	{ "run", cr_cmd_run, "run --strategy S ...      search: best-of-n, refine, evolve, self-consistency,\n"
			     "                            with the verifier in the loop" },
	{ "serve", cr_cmd_serve, "serve [--db DB]            leaderboard and RL reward service (HTTP) on the verifier" },
	{ "submit", cr_cmd_submit, "submit FILE... --server URL --board NAME   submit kernels to a crucible serve" },
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f)
{
	fprintf(f,
		"crucible %s — verify and time GPU/CPU kernels written by language models\n\n"
		"usage: crucible COMMAND [ARGS]\n"
		"       crucible help COMMAND      (or crucible COMMAND --help)\n"
		"       crucible -V | --version\n\n"
		"COMMANDS\n",
		CRUCIBLE_VERSION);
	for (int i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %s\n", commands[i].synopsis);
	fputs("\nTasks are named as KernelBench names problems: a level (L1, L2, L3, smoke),\n"
	      "L1/23 (problem 23 of level 1), L1/1-10, L1/softmax, 'L2/*Conv*'.\n",
	      f);
	cr_cli_help_tail(f,
			 "  0  done (eval: every candidate has a verdict; gate: passed)\n"
			 "  1  a check or the gate failed\n"
			 "  2  bad usage or bad input (the message names the file and line)\n"
			 "  3  the environment: no GPU, no compiler, a write that failed\n"
			 "  5  eval evaluated nothing\n"
			 "  130, 143  eval stopped by SIGINT (Ctrl-C) or SIGTERM: rows kept, rerun\n"
			 "            with --resume\n",
			 CR_ENV_ALL);
}

static int find_command(const char *name)
{
	for (int i = 0; i < N_COMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return i;
	return -1;
}

static int unknown_command(const char *name)
{
	const char *names[N_COMMANDS];
	const char *s;

	for (int i = 0; i < N_COMMANDS; i++)
		names[i] = commands[i].name;
	s = cr_cli_suggest(name, names, N_COMMANDS);
	if (s)
		return cr_cli_usage(NULL, "'%s' is not a command (did you mean '%s'?)", name, s);
	return cr_cli_usage(NULL, "'%s' is not a command (see 'crucible --help' for the list)", name);
}

static int dispatch(int argc, char **argv)
{
	const char *cmd;
	int i;

	if (argc < 2) {
		usage(stderr);
		return CR_EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || (!strcmp(cmd, "help") && argc == 2)) {
		usage(stdout);
		return CR_EXIT_OK;
	}
	if (!strcmp(cmd, "help")) {
		/* git's `help CMD`: the command's own --help page */
		char *hv[3] = { argv[2], (char *)"--help", NULL };

		if (argc > 3)
			return cr_cli_usage(NULL, "help takes one command (crucible help COMMAND)");
		if (!strcmp(argv[2], "help") || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
			usage(stdout);
			return CR_EXIT_OK;
		}
		if ((i = find_command(argv[2])) < 0)
			return unknown_command(argv[2]);
		return commands[i].main(2, hv);
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
		printf("crucible %s (%s)\n", CRUCIBLE_VERSION, CRUCIBLE_REVISION);
		return CR_EXIT_OK;
	}
	if (cmd[0] == '-')
		return cr_cli_usage(NULL, "unknown option '%s' (a command comes first)", cmd);
	if ((i = find_command(cmd)) < 0)
		return unknown_command(cmd);
	return commands[i].main(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "__worker"))
		return cr_worker_main(argc - 1, argv + 1, cr_cuda_worker_entry);
	cr_seed_take_env();
	/* candidates run as another uid; keep this process out of their reach */
	prctl(PR_SET_DUMPABLE, 0);
	return cr_cli_close_stdout(argc >= 2 && argv[1][0] != '-' ? argv[1] : NULL, dispatch(argc, argv));
}
