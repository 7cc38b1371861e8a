/* dec_cpu.h — the CPU backend (dec_be_cpu.c) and its thread pool
 * (dec_pool.c). */
#ifndef DEC_CPU_H
#define DEC_CPU_H

#include "common/cr_status.h"
#include "decode/be/dec_be.h"

/* The CPU backend (always built). */
enum cr_status dec_be_cpu_open(const struct dec_model *m, const struct dec_be_cfg *cfg,
			       struct dec_be **out, struct cr_err *err);

struct dec_pool;
typedef void (*dec_pool_fn)(void *arg, int ith, int nth);
enum cr_status dec_pool_new(int n_threads, struct dec_pool **out, struct cr_err *err);
void dec_pool_free(struct dec_pool *p);
void dec_pool_run(struct dec_pool *p, dec_pool_fn fn, void *arg);
int dec_pool_size(const struct dec_pool *p);
int dec_cpu_count(void);

#endif
