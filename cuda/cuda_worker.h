/* cuda_worker.h — the device side of a CUDA candidate's worker: the launch
 * table the orchestrator writes into the shared-memory header, and the
 * worker's state (module, functions, one device mirror of the buffers).
 *
 * Layout: the same shared memory as the cpu worker (struct cr_shm_hdr, then
 * every slot between guard zones, CR_SHM_HDR bytes in). The device holds a
 * mirror of everything after the header: a call copies the whole region
 * host -> device (inputs, the host's poison in outputs, garbage in scratch,
 * guard patterns), launches the stage's kernels in order on one stream,
 * synchronises, and copies the region back, so the cpu path's checks
 * (guards, inputs intact, outputs, poison) run on the host unchanged.
 *
 * A candidate's fault is a verdict (runtime_error with the CUresult name,
 * format_error for a parameter mismatch), never a crash. After a sticky
 * error (illegal address, launch failure) the context is unusable: the
 * orchestrator ends this worker and starts a fresh one.
 *
 * Compiled only when HAVE_CUDA. NOT RUN on a GPU yet (see docs/CUDA.md). */
#ifndef CR_CUDA_WORKER_H
#define CR_CUDA_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cr_verdict.h"
#include "common/cr_status.h"
#include "cand/plan.h"
#include "sandbox/shm.h"
#include "cuda/cuda_cubin.h"

#define CR_CUDA_LTAB_OFF 196608         /* inside the CR_SHM_HDR bytes, after struct cr_shm_hdr */
#define CR_CUDA_LTAB_MAGIC 0x6375646174616231ull

enum cr_cuda_arg { CR_CUDA_ARG_PTR = 1, CR_CUDA_ARG_INT = 2, CR_CUDA_ARG_FLOAT = 3 };

struct cr_cuda_larg {
	uint32_t kind;                  /* enum cr_cuda_arg */
	int32_t slot;                   /* PTR: the slot */
	int64_t i;                      /* INT: the value (sized to the parameter at launch) */
	double f;                       /* FLOAT: the value (float or double parameter) */
};

struct cr_cuda_lrec {
	char fn[CR_CAND_NAME];
	int line;                       /* the directive's line, for messages */
	uint32_t grid[3], block[3];
	uint32_t smem;                  /* dynamic shared memory, bytes */
	uint32_t n_args;
	uint32_t arg0;                  /* its args: the table's args[arg0 .. arg0 + n_args) */
};

/* Library calls a trusted launch table (our GPU baselines, never a
 * candidate's) may make in place of a kernel launch: the launch names a
 * kernel of this name (the baseline defines an empty kernel with the same
 * parameters, so the compile-time checks apply) and the worker calls the
 * library instead. crucible_cublas_sgemm(a, b, c, M, K, N): row-major
 * c[M,N] = a[M,K] b[K,N] by cublasSgemm (FP32, TF32 off). */
#define CR_CUDA_CUBLAS_SGEMM "crucible_cublas_sgemm"
#define CR_CUDA_LTAB_TRUSTED 1u

/* The launch table of one stage under one dim set, at shm + CR_CUDA_LTAB_OFF. */
struct cr_cuda_ltab {
	uint64_t magic;
	uint32_t n_launch;
	uint32_t flags;                 /* CR_CUDA_LTAB_TRUSTED: library calls allowed */
	char cubin_path[1024];
	char cublas_path[1024];         /* trusted: libcublas to dlopen */
	int32_t device;                 /* the driver's ordinal of the device to run on */
	char device_uuid[48];           /* its UUID as the orchestrator saw it ("": not checked) */
	struct cr_cuda_lrec l[CR_MAX_LAUNCH];
	struct cr_cuda_larg args[CR_MAX_ARGV]; /* every launch's, in launch order */
};

_Static_assert(CR_CUDA_LTAB_OFF >= sizeof(struct cr_shm_hdr), "launch table overlaps the header");
_Static_assert(CR_CUBIN_MAX_PARAMS >= CR_MAX_ARGS, "the cubin reader keeps fewer parameters than a launch may pass");
_Static_assert(CR_CUDA_LTAB_OFF + sizeof(struct cr_cuda_ltab) <= CR_SHM_HDR,
	       "launch table does not fit in the header bytes");

_Static_assert(CR_CUDA_LTAB_OFF + sizeof(struct cr_cuda_ltab) <= CR_CUDA_TCMD_OFF, "launch table overlaps the time command");

/* Orchestrator side: fills t for stage s from the plan and the evaluated
 * expressions (vals from cr_plan_eval). Launch sizes out of range (grid x
 * over 2^31-1, y/z over 65535, a block over 1024 threads, anything below 1)
 * are CR_EINPUT "PATH:LINE: ..." (a format_error). */
enum cr_status cr_cuda_ltab_fill(struct cr_cuda_ltab *t, const struct cr_plan *p, enum cr_stage s,
				 const int64_t *vals, const char *cubin_path, const char *path,
				 struct cr_err *err);

/* Worker side. The caller owns the struct (_init/_release). */
struct cr_cuda_worker {
	void *ctx, *mod, *stream;       /* CUcontext, CUmodule, CUstream (opaque here) */
	void *fn[CR_MAX_LAUNCH];        /* CUfunction per launch */
	int device;
	bool have_ctx;
	uint64_t dbase;                 /* CUdeviceptr of the mirror */
	size_t dsize;                   /* bytes: shm size - CR_SHM_HDR */
	int n_params[CR_MAX_LAUNCH];    /* -1: unknown (no cuFuncGetParamInfo and no cubin record) */
	uint16_t (*param_size)[CR_MAX_ARGS]; /* [n_launch]: each parameter's bytes (heap) */
	char jit_log[2048];             /* the module loader's error log */
	bool cublas[CR_MAX_LAUNCH];     /* launch i is a cublasSgemm call */
	void *cublas_lib, *cublas_handle, *cublas_sgemm;
	uint64_t flush;                 /* CUdeviceptr of the L2 flush buffer (timing), 0 until needed */
	size_t flush_bytes;
	uint32_t flush_seq;
	bool cupti;                     /* CUPTI activity records are being collected */
};

/* Loads the cubin named in the launch table, finds every kernel, reads its
 * parameter sizes and allocates the mirror. A candidate's fault (missing
 * kernel, parameter mismatch, module rejected) is *verdict with the detail
 * in err and CR_OK returned; CR_EENV when the device itself fails. */
enum cr_status cr_cuda_worker_init(struct cr_cuda_worker *w, const char *shm, size_t shm_size,
				   enum check_verdict *verdict, struct cr_err *err);
/* One call on buffer set `set`: copy in, launch all, synchronise, copy out.
 * *verdict is CHECK_OK, or RUNTIME_ERROR / FORMAT_ERROR with err's message. */
enum cr_status cr_cuda_worker_run(struct cr_cuda_worker *w, char *shm, uint32_t set,
				  enum check_verdict *verdict, struct cr_err *err);
/* A timed call: copy in, flush L2, then only the launches between two
 * events (and in CUPTI's kernel records), synchronise, copy out. */
/* The sum of the kernel records of one timed window (sorted here by start
 * time), which must be exactly the table's launches by name and order with
 * sane timestamps; when lib (a library call launches kernels of its own
 * choosing) every kernel record counts. -1 when the window is not that.
 * *n_kernels gets the kernel records seen. */
struct cr_cupti_rec;
int64_t cr_cuda_window_ns(struct cr_cupti_rec *rec, int n, const struct cr_cuda_ltab *t, bool lib,
			  int *n_kernels);

struct cr_cuda_timing {
	int64_t event_ns;               /* events around the launches */
	int64_t cupti_ns;               /* sum of the kernel records; -1 without CUPTI or when the
					 * records were not exactly the plan's launches */
	int n_kernels;                  /* kernel records seen, -1 without CUPTI */
};
enum cr_status cr_cuda_worker_time(struct cr_cuda_worker *w, char *shm, uint32_t set,
				   struct cr_cuda_timing *tm, enum check_verdict *verdict,
				   struct cr_err *err);
void cr_cuda_worker_release(struct cr_cuda_worker *w);

/* `crucible __worker cuda`: fds 3 (commands), 4 (replies); shm is the
 * mapped shared memory. RUN and TIME commands; never returns. */
int cr_cuda_worker_main(char *shm, size_t size);

#endif
