/* cmd_gen.c — `crucible generate`: the decoder's generate command over the
 * registry's prompts (gen/), with the run seed. */
#include "harness/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"
#include "harness/seed.h"
#include "tasks/task_rng.h"

/* CRUCIBLE_SEED (read at start-up) is mixed into --seed here, as for eval,
 * so a leaderboard can keep its sampling seed secret too. */
int cr_cmd_generate(int argc, char **argv)
{
	struct dec_task_source src;
	char **av, seedbuf[32];
	int ac = argc, rc, at = -1;

	gen_task_source(&src);
	if (!cr_seed_is_secret())
		return dec_generate_main(argc, argv, &src);
	av = calloc((size_t)argc + 3, sizeof *av);
	if (!av) {
		fprintf(stderr, "crucible generate: out of memory\n");
		return 2;
	}
	for (int i = 0; i < argc; i++) {
		av[i] = argv[i];
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			at = i + 1;
	}
	/* derived apart from the verification seed (cr_seed itself), which the
	 * sidecars' seed must not reveal (it once was cr_seed >> 1) */
	snprintf(seedbuf, sizeof seedbuf, "%llu",
		 (unsigned long long)(task_mix(cr_seed(at > 0 ? strtoull(argv[at], NULL, 10) : 0),
					       0x67656e) >> 1));
	if (at > 0) {
		av[at] = seedbuf;
	} else {
		av[ac++] = "--seed";
		av[ac++] = seedbuf;
	}
	rc = dec_generate_main(ac, av, &src);
	free(av);
	return rc;
}
