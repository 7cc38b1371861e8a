/* backend.h — which backend runs candidates. The only place in harness/
 * that knows whether CUDA is compiled in (backend.c). */
#ifndef CR_BACKEND_H
#define CR_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include "harness/verify.h"

enum cr_backend { CR_BACKEND_CPU, CR_BACKEND_CUDA };

/* Chooses the backend for "auto", "cpu" or "cuda" (NULL = auto) and says
 * why on stderr. compile_only: CUDA compile verdicts without a device.
 * Returns 0 and sets *b, or the SPEC exit code (2 bad name, 3 unavailable). */
int cr_backend_pick(const char *name, bool compile_only, enum cr_backend *b, const char *who);

/* Compile-only verdicts of CUDA candidates, in parallel (a pool sized to
 * the cores). rs[i] for paths[i]/srcs[i]/tasks[i]; tasks[i] NULL means the
 * candidate's task is unknown (rs[i] is left as the caller set it). */
enum cr_status cr_backend_cuda_compile(const struct task *const *tasks, char *const *paths,
				       char *const *srcs, const size_t *lens, int n,
				       const char *arch, struct cr_result *rs, struct cr_err *err);
/* The architecture compile-only targets ("sm_90" without a device). */
const char *cr_backend_cuda_arch(const char *requested);

#endif
