/* gen_local.h — what the built-in generator (gen_local.c, opened with
 * gen_local_open of gen_gen.h) shows beyond the generator table: its
 * progress, for tests and progress lines. */
#ifndef GEN_LOCAL_H
#define GEN_LOCAL_H

#include <stdint.h>
#include "gen/gen_gen.h"

/* Wait points passed since gen_local_open: one per engine step (a step
 * computes up to max_batch_tokens tokens: decode tokens and prefill chunks). It does not move while the generator is
 * paused. g must come from gen_local_open. Thread-safe. */
uint64_t gen_local_progress(const struct gen_generator *g);

#endif
