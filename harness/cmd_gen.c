/* cmd_gen.c — `crucible generate`: the decoder's generate command over the
 * registry's prompts (gen/), with the run seed. */
#include "harness/cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cr_cli.h"
#include "common/cr_status.h"
#include "harness/backend.h"
#include "gen/gen.h"
#include "harness/seed.h"
#include "tasks/task_rng.h"

/* No --backend: the candidate kind this machine can run, chosen as eval's
 * --backend auto chooses (cuda when a GPU and the CUDA build are there,
 * else cpu) and said on stderr. */
static enum cr_status default_backend(void *ctx, const char **backend, struct cr_err *err)
{
	enum cr_backend be;

	(void)ctx;
	if (cr_backend_pick(NULL, false, &be, "crucible generate"))
		return cr_errf(err, CR_EENV, "cannot choose a backend: give --backend cuda or cpu");
	*backend = be == CR_BACKEND_CUDA ? "cuda" : "cpu";
	return CR_OK;
}

/* Whether argument a is generate's --seed as getopt_long reads it: "--seed"
 * or a prefix of it down to "--se" (no other option of generate begins so),
 * alone (the value is the next argument) or as "--seed=V" (*inl = V). */
static bool is_seed_opt(const char *a, const char **inl)
{
	const char *eq = strchr(a, '=');
	size_t n = eq ? (size_t)(eq - a) : strlen(a);

	*inl = eq ? eq + 1 : NULL;
	return n >= 4 && n <= 6 && !strncmp(a, "--seed", n);
}

/* CRUCIBLE_SEED (read at start-up) is mixed into --seed here, as for eval,
 * so a leaderboard can keep its sampling seed secret too. Every --seed on
 * the command line gets the mixed value (getopt_long keeps the last, whose
 * value is the one mixed); without one, --seed=MIXED is added (before a
 * "--", which ends the options). A value that is not a seed is left as it
 * is, for the decoder to refuse. The scan knows only --seed's spellings: a
 * value of another option that reads "--seed" is taken for one. */
int cr_cmd_generate(int argc, char **argv)
{
	struct dec_task_source src;
	char **av, seedbuf[32], seedopt[40];
	int ac = argc, rc, found = 0, end = argc;
	bool bad = false;
	uint64_t user = 0;

	gen_task_source(&src);
	src.default_backend = default_backend;
	if (!cr_seed_is_secret())
		return dec_generate_main(argc, argv, &src);
	av = calloc((size_t)argc + 2, sizeof *av);
	if (!av) {
		cr_cli_error("generate", "out of memory");
		return CR_EXIT_ENV;
	}
	for (int i = 1; i < argc; i++) {
		const char *inl, *v;

		if (!strcmp(argv[i], "--")) {
			end = i;
			break;
		}
		if (!is_seed_opt(argv[i], &inl))
			continue;
		v = inl ? inl : i + 1 < argc ? argv[++i] : NULL;
		bad = bad || !cr_parse_u64(v, &user);
		found++;
	}
	/* derived apart from the verification seed (cr_seed itself), which the
	 * sidecars' seed must not reveal (it once was cr_seed >> 1) */
	snprintf(seedbuf, sizeof seedbuf, "%llu",
		 (unsigned long long)(task_mix(cr_seed(user), 0x67656e) >> 1));
	snprintf(seedopt, sizeof seedopt, "--seed=%s", seedbuf);
	for (int i = 0, j = 0; i < argc; i++) {
		const char *inl;

		if (i == end && !found)
			av[j++] = seedopt;
		av[j++] = argv[i];
		if (i == 0 || i >= end || bad || !is_seed_opt(argv[i], &inl))
			continue;
		if (inl)
			av[j - 1] = seedopt;
		else if (++i < argc)
			av[j++] = seedbuf;
	}
	if (!found) {
		if (end == argc)
			av[argc] = seedopt;
		ac++;
	}
	rc = dec_generate_main(ac, av, &src);
	free(av);
	return rc;
}
