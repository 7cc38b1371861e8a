/* fakecuda_impl.h — private to the fake CUDA driver (fakecuda.c: device,
 * context, memory, streams, events, cuGetProcAddress; fakecuda_module.c:
 * modules, functions, launches): its objects and the one shared state.
 * Every object lives in a list, so a handle is checked by membership (a
 * stale or foreign handle is CUDA_ERROR_INVALID_HANDLE, never a read of
 * freed memory). */
#ifndef FAKECUDA_IMPL_H
#define FAKECUDA_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cuda.h>

#include "cuda/cuda_cubin.h"

#define EXPORT __attribute__((visibility("default")))

#define DRIVER_VERSION 13000
#define DEVICE_NAME "crucible fake GPU (CPU emulation)"
#define TOTAL_MEM ((size_t)16 << 30)       /* what cuDeviceTotalMem claims, bytes */
#define L2_BYTES (4 << 20)
#define SMEM_DEFAULT (48 * 1024)           /* dynamic smem allowed without the attribute */
#define SMEM_OPTIN (227 * 1024)            /* sm_90's opt-in maximum per block */
#define REGS_PER_BLOCK 65536
#define EMU_MAX_ARGS 10                    /* emu_launch passes ten int64 */
#define KERNELS_FILE "fakecuda-kernels.so"

typedef void (*emu_launch_fn)(void *fn, const unsigned g[3], const unsigned b[3], unsigned smem, const int64_t a[10]);

struct ctx {
	int refs;                  /* primary context retains; 0: inactive */
	size_t limits[CU_LIMIT_MAX];
};

struct alloc {
	struct alloc *next;
	uintptr_t base;
	size_t size;               /* bytes asked for */
};

struct module;

struct func {
	struct module *mod;
	const struct cr_cubin_kernel *k;   /* in mod->info */
	void *sym;                 /* the emulated kernel */
	emu_launch_fn launch;      /* emu_launch of the object that defines sym (its own
	                            * threadIdx/blockIdx), or NULL: the module's */
	const char *sig;           /* fakecuda_sig_<name>: a char per parameter, or NULL */
	int max_dyn_smem;          /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
	int carveout;
};

struct module {
	struct module *next;
	void *so;
	emu_launch_fn launch;
	struct cr_cubin_info info;
	struct func fn[CR_CUBIN_MAX_KERNELS];
};

struct stream {
	struct stream *next;
};

struct event {
	struct event *next;
	unsigned flags;
	int recorded;
	struct timespec t;
};

struct fk_state {
	pthread_mutex_t mu;        /* guards everything below and the lists */
	int init;                  /* cuInit succeeded */
	struct ctx ctx;            /* the device's primary context */
	struct alloc *allocs;
	struct module *mods;
	struct stream *streams;
	struct event *events;
};
extern struct fk_state fk;

#define LOCK() pthread_mutex_lock(&fk.mu)
#define UNLOCK() pthread_mutex_unlock(&fk.mu)

/* CUDA_SUCCESS when initialised with an active current context. */
CUresult fk_ready(void);
/* NULL, the legacy / per-thread handles, or a live stream. */
CUresult fk_check_stream(CUstream s);
/* Unloads and frees a module; with the lock held. */
void fk_module_free(struct module *x);

CUresult fk_module_load_data_ex(CUmodule *m, const void *image, unsigned int n, CUjit_option *opts,
				void **vals);
CUresult fk_module_unload(CUmodule m);
CUresult fk_module_get_function(CUfunction *f, CUmodule m, const char *name);
CUresult fk_func_get_attribute(int *v, CUfunction_attribute a, CUfunction f);
CUresult fk_func_set_attribute(CUfunction f, CUfunction_attribute a, int v);
CUresult fk_func_get_param_info(CUfunction f, size_t i, size_t *off, size_t *size);
CUresult fk_launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			  unsigned bz, unsigned smem, CUstream s, void **params, void **extra);

/* fakecuda_graph.c: stream capture, graphs, memory info */
int fk_capturing(CUstream s);
void fk_capture_invalidate(CUstream s);
/* 1 when s is capturing: the launch or copy was recorded (status in *r) */
int fk_capture_launch(CUstream s, emu_launch_fn launch, void *sym, const unsigned g[3], const unsigned b[3],
		      unsigned smem, const int64_t a[EMU_MAX_ARGS], CUresult *r);
int fk_capture_copy(CUstream s, void *dst, const void *src, size_t n, CUresult *r);
CUresult fk_stream_begin_capture(CUstream s, CUstreamCaptureMode mode);
CUresult fk_stream_end_capture(CUstream s, CUgraph *g);
CUresult fk_graph_instantiate(CUgraphExec *e, CUgraph g, unsigned long long flags);
CUresult fk_graph_launch(CUgraphExec e, CUstream s);
CUresult fk_graph_destroy(CUgraph g);
CUresult fk_graph_exec_destroy(CUgraphExec e);
void fk_graphs_free_all_locked(void);
CUresult fk_mem_get_info(size_t *free_b, size_t *total_b);

#endif
