/* seed.h — the run seed (seed.c): --seed mixed with CRUCIBLE_SEED. */
#ifndef CR_SEED_H
#define CR_SEED_H

#include <stdint.h>

/* Reads CRUCIBLE_SEED once, then erases it: the bytes in the environment
 * block are overwritten (so /proc/<pid>/environ no longer shows them) and
 * the variable is removed. Call first thing in main. */
void cr_seed_take_env(void);
/* The seed of this process: --seed mixed with CRUCIBLE_SEED. */
uint64_t cr_seed(uint64_t flag_seed);
/* CRUCIBLE_SEED was set (the seed must not be printed). */
int cr_seed_is_secret(void);

#endif
