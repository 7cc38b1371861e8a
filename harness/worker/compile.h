/* compile.h — building a candidate for the cpu backend: a trampoline per
 * launch (generated C that includes the candidate and calls its function
 * with typed pointers), compiled by the system C compiler into a shared
 * object, argv only (never a shell), in the run's private directory. */
#ifndef CR_COMPILE_H
#define CR_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include "common/cr_verdict.h"  /* enum cr_compile_result */
#include "harness/cand/plan.h"


/* Writes workdir/cand.c, workdir/tramp.c, builds workdir/cand.so.
 * log gets the compiler's output (tail). */
enum cr_compile_result cr_compile_cpu(const struct cr_plan *p, const char *src, size_t len,
				      const char *workdir, double timeout_s, char *log,
				      size_t cap);
/* Runs argv with stdout+stderr into log_path, killing it after timeout_s,
 * with a clean environment; unprivileged: as uid/gid nobody when root.
 * Returns the exit status (>= 0), -1 on timeout, -2 if it could not run. */
int cr_run_argv(char *const argv[], const char *log_path, double timeout_s, bool unprivileged);

#endif
