/* cuda_build.h — the compile stage of a CUDA candidate: NVRTC builds the
 * bound plan's source (cuda/cuda_compile.c), the launches are checked
 * against the cubin, and the outcome becomes a verdict in a results row.
 * Serves `eval --backend cuda` (the cubin then runs), `--compile-only`
 * (verdicts without a device, many candidates in parallel) and the GPU
 * baselines. Without CUDA built in, every entry point returns CR_EENV
 * "built without CUDA". */
#ifndef CHECK_CUDA_BUILD_H
#define CHECK_CUDA_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include "checks/result.h"
#include "common/cr_status.h"
#include "cuda/cuda_compile.h"
#include "cand/plan.h"
#include "tasks/task.h"

/* The architecture compile-only targets ("sm_90" without a device). */
const char *check_cuda_arch(const char *requested);

/* The one-line detail of a failed compile: the first error line of the log
 * as "PATH:LINE: error: ..." (naming the candidate, not NVRTC's name for
 * it), or the timeout. */
void check_cuda_compile_detail(const struct cr_cuda_build *b, const char *path, double timeout_s,
			       char *out, size_t cap);

/* Checks a bound CUDA plan against the cubin: every launched kernel is an
 * extern "C" __global__ entry point, and (where the cubin records them) the
 * launch passes as many arguments as the kernel has parameters, a pointer
 * for every buffer (8 bytes) and a 4- or 8-byte value for every integer or
 * float. CR_EINPUT "PATH:LINE: ..." on the first problem (a format_error). */
enum cr_status check_cuda_launches(const struct cr_plan *p, const struct cr_cubin_info *info,
				   const char *path, struct cr_err *err);

/* Builds a bound plan (its candidate's source src/len) and fills r:
 * compile_error (the first error line, naming path and line), format_error
 * (launches that do not match the cubin), or ok with the detail
 * "compiled for sm_90: k1 N regs, 0 spills; ...; not run (compile only)".
 * On ok and cubin_out non-NULL the cubin is written there (for running).
 * Returns CR_OK for every verdict; CR_EENV when NVRTC cannot run at all. */
enum cr_status check_cuda_build(const struct cr_plan *p, const char *path, const char *src,
				size_t len, const struct cr_cuda_opts *o, const char *cubin_out,
				struct cr_result *r, struct cr_err *err);

/* One candidate of a parallel compile: the task, the file, and its parsed
 * directives (ownership moves in; released by check_cuda_compile_many). */
struct check_cuda_job {
	const struct task *t;
	const char *path;
	const char *src;
	size_t len;
	struct cr_cand cand;     /* parsed by the caller: the file is parsed once */
	struct cr_result r;      /* out */
};
/* Compile verdicts of many candidates, NVRTC in parallel (max_par children,
 * <= 0: the cores). Each job's r gets its verdict (sha256 and the fields the
 * caller set are kept); an environment failure (NVRTC cannot run) is
 * returned and the jobs it hit say "not compiled". */
enum cr_status check_cuda_compile_many(struct check_cuda_job *jobs, int n,
				       const struct cr_cuda_opts *o, int max_par,
				       struct cr_err *err);
/* One candidate from its source: parse, bind, build (tests and tools). */
enum cr_status check_cuda_compile(const struct task *t, const char *path, const char *src,
				  size_t len, const struct cr_cuda_opts *o, struct cr_result *r,
				  struct cr_err *err);

#endif
