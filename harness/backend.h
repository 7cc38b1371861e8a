/* backend.h — which backend runs candidates (auto, cpu, cuda). What the
 * CUDA side can do lives in cuda/cuda_dev.h and checks/cuda_build.h. */
#ifndef CR_BACKEND_H
#define CR_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

enum cr_backend { CR_BACKEND_CPU, CR_BACKEND_CUDA };

/* Chooses the backend for "auto", "cpu" or "cuda" (NULL = auto) and says
 * why on stderr. compile_only: CUDA compile verdicts without a device.
 * Returns 0 and sets *b, or the SPEC exit code (2 bad name, 3 unavailable). */
int cr_backend_pick(const char *name, bool compile_only, enum cr_backend *b, const char *who);

#endif
