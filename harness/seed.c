/* seed.c — the run seed: --seed mixed with CRUCIBLE_SEED, which is read
 * once at start-up and scrubbed from the environment before any candidate
 * runs (a leaderboard can keep it secret). */
#include "harness/seed.h"

#include <stdlib.h>
#include <string.h>

#include "tasks/task_rng.h"

extern char **environ;

static uint64_t env_seed;
static int env_seed_set;

/* Reads CRUCIBLE_SEED once, then erases it: the bytes in the environment
 * block are overwritten (so /proc/<pid>/environ no longer shows them) and
 * the variable is removed, before any candidate runs. */
void cr_seed_take_env(void)
{
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "CRUCIBLE_SEED=", 14))
			continue;
		const char *v = *e + 14;
		uint64_t h = 0xcbf29ce484222325ull;
		for (const char *p = v; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		env_seed = h;
		env_seed_set = 1;
		memset(*e + 14, 0, strlen(v));
	}
	unsetenv("CRUCIBLE_SEED");
}

uint64_t cr_seed(uint64_t flag_seed)
{
	return env_seed_set ? task_mix(flag_seed, env_seed) : flag_seed;
}

int cr_seed_is_secret(void)
{
	return env_seed_set;
}
