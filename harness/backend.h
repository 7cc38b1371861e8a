/* backend.h — which backend runs candidates. The only place in harness/
 * that knows whether CUDA is compiled in (backend.c). */
#ifndef CR_BACKEND_H
#define CR_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include "harness/plan.h"
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
/* ---- running CUDA candidates (each fails with CR_EENV "built without
 * CUDA" when CUDA is not compiled in) ---- */

/* The device the cuda backend runs on: "NVIDIA H200 (sm_90, driver 13000)"
 * into desc, its arch into arch. Peak FP32 (non-tensor) TFLOP/s and memory
 * TB/s for the roofline: from a table of known devices, else from the
 * clocks the driver reports (0 when unknown). CR_EENV with the reason when none. */
enum cr_status cr_backend_cuda_device(char *desc, size_t dcap, char *arch, size_t acap,
				      double *peak_tflops, double *peak_tbps, struct cr_err *err);
/* NVRTC-compiles a CUDA candidate for arch, checks its launches against
 * the cubin and writes the cubin to cubin_out; verdicts (compile_error,
 * format_error) land in r, CR_OK returned. */
enum cr_status cr_backend_cuda_build(const struct task *t, const char *path, const char *src,
				     size_t len, const char *arch, const char *cubin_out,
				     struct cr_result *r, struct cr_err *err);
/* Writes stage s's launch table (evaluated with vals) into the header
 * bytes of a cuda worker's shared memory. CR_EINPUT (a format_error) for a
 * launch size out of range. */
enum cr_status cr_backend_cuda_ltab(char *shm, const struct cr_plan *p, enum cr_stage s,
				    const int64_t *vals, const char *cubin_path, const char *path,
				    bool trusted, struct cr_err *err);
/* NVML's view of device 0 now: clocks (current/max), temperature, power,
 * throttle reasons, driver; "unknown (why)" without NVML. */
void cr_backend_cuda_clocks(char *buf, size_t cap);
/* `crucible __worker cuda` (never returns with CUDA; 2 without). */
int cr_backend_cuda_worker(char *shm, size_t size);

/* The architecture compile-only targets ("sm_90" without a device). */
const char *cr_backend_cuda_arch(const char *requested);

#endif
