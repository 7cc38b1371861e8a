/* cuda_compile.h — the cuda backend's compile step: NVRTC to a cubin for one
 * architecture, no GPU needed.
 *
 * Options: --gpu-architecture=<arch> -default-device -lineinfo --std=c++17
 * --ptxas-options=-v (for spill counts) and the toolkit's include dirs (so
 * cuda_fp16.h, cuda_bf16.h, ... resolve); never -rdc. NVRTC runs in-process
 * and cannot be interrupted, so every compile runs in a forked child that
 * writes the cubin and the log to a private directory and is killed after
 * the timeout. Results (cubins and compile failures, not timeouts) are
 * cached in a directory keyed by sha256(NVRTC version + options + source).
 *
 * Compiled only when HAVE_CUDA (meson option `cuda`). */
#ifndef CR_CUDA_COMPILE_H
#define CR_CUDA_COMPILE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cr_status.h"
#include "common/cr_verdict.h"   /* enum cr_compile_result */
#include "cuda/cuda_cubin.h"

#define CR_CUDA_ARCH_DEFAULT "sm_90"   /* the arch compiled for when there is no device */
#define CR_CUDA_TIMEOUT_S 60.0

struct cr_cuda_opts {
	const char *arch;        /* "sm_90", "sm_80", ...; NULL: CR_CUDA_ARCH_DEFAULT */
	double timeout_s;        /* wall clock per compile; <= 0: CR_CUDA_TIMEOUT_S */
	const char *cache_dir;   /* NULL: cr_cuda_cache_dir(); "": no cache */
};

/* One compiled source. The caller owns the struct (_init/_release); the
 * cubin and log buffers belong to it. */
struct cr_cuda_build {
	enum cr_compile_result res;  /* COMPILED, FAILED (log), TIMEOUT, ENV (log says why) */
	bool cached;                 /* taken from the cache: NVRTC did not run */
	double seconds;              /* wall time of the compile, 0 when cached */
	char arch[16];
	char key[65];                /* the cache key, hex */
	unsigned char *cubin;        /* [cubin_len] when COMPILED, else NULL */
	size_t cubin_len;
	char *log;                   /* NVRTC's log, NUL-terminated, never NULL after a compile */
	struct cr_cubin_info info;   /* entry points, registers, spills, parameter sizes */
};

void cr_cuda_build_init(struct cr_cuda_build *b);
void cr_cuda_build_release(struct cr_cuda_build *b);

/* The cache directory: $CRUCIBLE_CACHE, else $XDG_CACHE_HOME/crucible, else
 * $HOME/.cache/crucible. NULL when none can be named. Not created here. */
const char *cr_cuda_cache_dir(char *buf, size_t cap);

/* Compiles src[0..len) (need not be NUL-terminated). A candidate's fault
 * (compile error, timeout) is b->res with CR_OK returned; CR_EENV when NVRTC
 * itself fails (bad arch, cannot fork, no disk), with b->res == ENV. */
enum cr_status cr_cuda_compile(const char *src, size_t len, const struct cr_cuda_opts *o,
			       struct cr_cuda_build *b, struct cr_err *err);

/* One entry of a parallel compile: src/len in, b out (initialised by
 * cr_cuda_compile_many). */
struct cr_cuda_job {
	const char *src;
	size_t len;
	struct cr_cuda_build b;
};

/* Compiles every job with at most max_par children at a time (<= 0: the
 * cores this process may run on). Cache hits do not take a slot. Returns
 * the first environment failure (every job is still attempted). */
enum cr_status cr_cuda_compile_many(struct cr_cuda_job *jobs, int n, const struct cr_cuda_opts *o,
				    int max_par, struct cr_err *err);

/* "NVRTC 13.0" into buf; the supported archs as "sm_75 sm_80 ..." into archs. */
/* The path of a toolkit library (e.g. "libcublas.so.13") under the toolkit
 * root NVRTC is found in; the bare name when it is not there. */
void cr_cuda_toolkit_lib(const char *name, char *out, size_t cap);

void cr_cuda_nvrtc_version(char *buf, size_t cap, char *archs, size_t archs_cap);

#endif
