/* main.c — the crucible executable: subcommand dispatch and the hidden
 * worker mode. exit() is called here only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "cr_config.h"
#include "cr_version.h"
#include "decode/dec.h"
#include "cuda/cuda_dev.h"
#include "harness/cli.h"
#include "harness/seed.h"
#include "sandbox/worker.h"
#include "reports/report.h"

static void usage(FILE *f)
{
	fprintf(f,
		"crucible %s — verify and time GPU/CPU kernels written by language models\n\n"
		"usage: crucible COMMAND [ARGS]   (crucible COMMAND --help for each)\n\n"
		"  list [SET...]             list tasks\n"
		"  check FILE [--task T]     one candidate, full verdict with diagnostics\n"
		"  eval [PATH...]            verify and time every candidate; no PATH: the bundled samples\n"
		"  merge DIR... --out DIR    join the outputs of eval --shard runs into one\n"
		"  report RESULTS.csv...     Fast_p, pass@k and reasoning-length tables\n"
		"  gate --baseline A --current B   CI regression gate\n"
		"  lint [SET]                check the task registry itself\n"
		"  dump TASK --out DIR       one case's inputs and references as .npy\n"
		"  decode --model M.gguf     raw completion from a GGUF model\n"
		"  generate --model M.gguf   write candidates with the built-in decoder\n"
		"  run --strategy S ...      search: best-of-n, refine, evolve, self-consistency,\n"
		"                            with the verifier in the loop\n\n"
		"Exit codes: 0 ok, 1 a check or gate failed, 2 bad usage or input, 3 environment,\n"
		"5 eval evaluated nothing.\n",
		CRUCIBLE_VERSION);
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc >= 2 && !strcmp(argv[1], "__worker"))
		return cr_worker_main(argc - 1, argv + 1, cr_cuda_worker_entry);
	cr_seed_take_env();
	/* candidates run as another uid; keep this process out of their reach */
	prctl(PR_SET_DUMPABLE, 0);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("crucible %s (%s)\n", CRUCIBLE_VERSION, CRUCIBLE_REVISION);
		return 0;
	}
	if (!strcmp(cmd, "list")) return cr_cmd_list(argc - 1, argv + 1);
	if (!strcmp(cmd, "check")) return cr_cmd_check(argc - 1, argv + 1);
	if (!strcmp(cmd, "eval")) return cr_cmd_eval(argc - 1, argv + 1);
	if (!strcmp(cmd, "merge")) return cr_cmd_merge(argc - 1, argv + 1);
	if (!strcmp(cmd, "dump")) return cr_cmd_dump(argc - 1, argv + 1);
	if (!strcmp(cmd, "lint")) return cr_cmd_lint(argc - 1, argv + 1);
	if (!strcmp(cmd, "report")) return report_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "gate")) return report_gate_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "decode")) return dec_decode_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "generate")) return cr_cmd_generate(argc - 1, argv + 1);
	if (!strcmp(cmd, "run")) return cr_cmd_run(argc - 1, argv + 1);
	fprintf(stderr, "crucible: unknown command '%s'\n\n", cmd);
	usage(stderr);
	return 2;
}
