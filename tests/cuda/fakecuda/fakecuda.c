/* fakecuda.c — an emulated CUDA driver (libfakecuda.so) for the test suite:
 * the subset of the driver API that crucible's cuda backend uses, on the
 * CPU, so the whole launch path (cr_cu_load, the worker, parameters, copies,
 * events, verdicts) runs on a machine without a GPU. Tests point
 * CRUCIBLE_LIBCUDA at this library. FOR TESTS ONLY.
 *
 * What it is, as the worker sees it: one device ("crucible fake GPU (CPU
 * emulation)", sm_90, 4 MiB L2), or as many as the lines of the file
 * <directory of this library>/fakecuda-devices (each line a device's name;
 * a file, not an environment variable, because the worker runs with a
 * scrubbed environment), each with its own UUID (GPU-fa4ecd00-...-0000000000NN)
 * and PCI bus id (0000:NN:00.0, NN = ordinal + 1) and all sharing one
 * emulated primary context; device memory that is
 * host memory (a CUdeviceptr is a host address, 256-aligned; copies and
 * memsets are bounds-checked against the allocations), modules that are
 * real cubins (parsed with cr_cubin_parse: kernel names, parameter sizes,
 * registers) whose kernels run as C++ emulations (tests/cuda/emu): the
 * emulated build of the candidate under test lies at the fixed path
 * <directory of this library>/fakecuda-kernels.so, dlopened by
 * cuModuleLoadDataEx. The worker runs with a scrubbed environment, so that
 * path is the only configuration.
 *
 * Launches run synchronously in the calling thread (emu_launch), so stream
 * and event order is call order, synchronisation is trivial and an event
 * records CLOCK_MONOTONIC when it is recorded. Launch limits are checked as
 * the hardware checks them. Not emulated: GPU floating point, asynchronous
 * execution, sticky errors, illegal addresses (a wild pointer in an
 * emulated kernel crashes the process), CUPTI, float parameters (the
 * emulation calls every kernel through one all-int64 signature: a kernel
 * whose emulated build records a float parameter is CUDA_ERROR_NOT_SUPPORTED).
 *
 * For the decoder's CUDA backend (fakecuda_graph.c): asynchronous copies
 * (run at once), stream capture (launches and copies recorded), graphs
 * (the records replayed in order) and cuMemGetInfo (FAKECUDA_MEM bytes).
 *
 * Exports cuDriverGetVersion and cuGetProcAddress_v2 only; every other
 * function is handed out by cuGetProcAddress_v2 at the ABI version crucible
 * requests (see cuda_drv.c's table). */
#include "fakecuda_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fk_state fk = { .mu = PTHREAD_MUTEX_INITIALIZER };

static _Thread_local struct ctx *current;  /* cuCtxSetCurrent is per thread */

CUresult fk_ready(void)
{
	if (!fk.init)
		return CUDA_ERROR_NOT_INITIALIZED;
	return current && current->refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---- errors ---- */

static const struct { CUresult r; const char *name, *desc; } errs[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ CUDA_ERROR_UNSUPPORTED_LIMIT, "CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported on this architecture" },
	{ CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND",
	  "file not found (fakecuda: no " KERNELS_FILE " next to libfakecuda.so)" },
	{ CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	  "shared object initialization failed (fakecuda: the emulated kernels did not load)" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
	{ CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	  "too many resources requested for launch" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
	  "operation not supported (fakecuda: float parameters, more than 10 parameters, "
	  "launch 'extra' and parameters of other sizes are not emulated)" },
};

static CUresult get_error_name(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].r == r) {
			*s = errs[i].name;
			return CUDA_SUCCESS;
		}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult get_error_string(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].r == r) {
			*s = errs[i].desc;
			return CUDA_SUCCESS;
		}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- init, device, context ---- */

EXPORT CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = DRIVER_VERSION;
	return CUDA_SUCCESS;
}

#define FK_MAX_DEV 8
static int n_dev = 1;
static char dev_names[FK_MAX_DEV][128];

/* The devices: one per non-empty line of fakecuda-devices beside this
 * library (its name), else one named DEVICE_NAME. */
static void load_devices(void)
{
	char path[4096], line[256];
	Dl_info di;
	const char *slash;
	FILE *f = NULL;

	n_dev = 0;
	if (dladdr((void *)(uintptr_t)&cuDriverGetVersion, &di) && di.dli_fname &&
	    (slash = strrchr(di.dli_fname, '/')) &&
	    snprintf(path, sizeof path, "%.*s/fakecuda-devices", (int)(slash - di.dli_fname),
		     di.dli_fname) < (int)sizeof path)
		f = fopen(path, "r");
	while (f && n_dev < FK_MAX_DEV && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0])
			snprintf(dev_names[n_dev++], sizeof dev_names[0], "%s", line);
	}
	if (f)
		fclose(f);
	if (!n_dev)
		snprintf(dev_names[n_dev++], sizeof dev_names[0], "%s", DEVICE_NAME);
}

static CUresult init(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (!fk.init)
		load_devices();
	fk.init = 1;
	UNLOCK();
	return CUDA_SUCCESS;
}

static CUresult device_get_count(int *n)
{
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	if (!fk.init)
		return CUDA_ERROR_NOT_INITIALIZED;
	*n = n_dev;
	return CUDA_SUCCESS;
}

static CUresult device_get(CUdevice *d, int ordinal)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (!fk.init)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= n_dev)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

static CUresult check_dev(CUdevice d)
{
	return !fk.init ? CUDA_ERROR_NOT_INITIALIZED : d < 0 || d >= n_dev ? CUDA_ERROR_INVALID_DEVICE
									     : CUDA_SUCCESS;
}

/* An H100-like sm_90 part, scaled down where a figure sizes host work
 * (SM count, L2: the timing path's flush buffer is 2 x L2). */
static const struct { CUdevice_attribute a; int v; } attrs[] = {
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, SMEM_DEFAULT },
	{ CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536 },
	{ CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32 },
	{ CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, REGS_PER_BLOCK },
	{ CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1755000 },
	{ CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512 },
	{ CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1 },
	{ CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 4 },
	{ CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0 },
	{ CU_DEVICE_ATTRIBUTE_INTEGRATED, 0 },
	{ CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT },
	{ CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1 },
	{ CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0 },
	{ CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0 },
	{ CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0 },
	{ CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0 },
	{ CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0 },
	{ CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120 },
	{ CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, L2_BYTES },
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048 },
	{ CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2 },
	{ CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 228 * 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536 },
	{ CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0 },
	{ CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 0 },
	{ CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2 },
	{ CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0 },
	{ CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0 },
	{ CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, SMEM_OPTIN },
	{ CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 0 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32 },
	{ CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024 },
};

static CUresult device_get_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
	CUresult r = check_dev(d);
	if (r)
		return r;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	if (a == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) {
		*v = d + 1;
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
		if (attrs[i].a == a) {
			*v = attrs[i].v;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult device_get_name(char *name, int len, CUdevice d)
{
	CUresult r = check_dev(d);
	if (r)
		return r;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", dev_names[d]);
	return CUDA_SUCCESS;
}

static CUresult device_get_uuid(CUuuid *u, CUdevice d)
{
	CUresult r = check_dev(d);
	if (r)
		return r;
	if (!u)
		return CUDA_ERROR_INVALID_VALUE;
	memset(u->bytes, 0, sizeof u->bytes);
	memcpy(u->bytes, "\xfa\x4e\xcd\x00", 4);
	u->bytes[15] = (char)(d + 1);
	return CUDA_SUCCESS;
}

static CUresult device_get_pci_bus_id(char *id, int len, CUdevice d)
{
	CUresult r = check_dev(d);
	if (r)
		return r;
	if (!id || len < 13)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(id, (size_t)len, "0000:%02x:00.0", (unsigned)d + 1);
	return CUDA_SUCCESS;
}

static CUresult device_total_mem(size_t *bytes, CUdevice d)
{
	CUresult r = check_dev(d);
	if (r)
		return r;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = TOTAL_MEM;
	return CUDA_SUCCESS;
}

static void free_all_locked(void);

static CUresult primary_ctx_retain(CUcontext *c, CUdevice d)
{
	CUresult r = check_dev(d);
	if (r)
		return r;
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	fk.ctx.refs++;
	UNLOCK();
	*c = (CUcontext)(void *)&fk.ctx;
	return CUDA_SUCCESS;
}

/* The last release makes the context inactive and frees what it owned, as
 * the driver does. */
static CUresult primary_ctx_release(CUdevice d)
{
	CUresult r = check_dev(d);
	if (r)
		return r;
	LOCK();
	if (fk.ctx.refs <= 0)
		r = CUDA_ERROR_INVALID_CONTEXT;
	else if (--fk.ctx.refs == 0)
		free_all_locked();
	UNLOCK();
	return r;
}

static CUresult ctx_set_current(CUcontext c)
{
	if (!fk.init)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (c && (struct ctx *)(void *)c != &fk.ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	current = (struct ctx *)(void *)c;
	return CUDA_SUCCESS;
}

static CUresult ctx_synchronize(void)
{
	return fk_ready();   /* every launch has finished when it returns */
}

static CUresult ctx_set_limit(CUlimit l, size_t v)
{
	CUresult r = fk_ready();
	if (r)
		return r;
	switch (l) {
	case CU_LIMIT_STACK_SIZE:
	case CU_LIMIT_PRINTF_FIFO_SIZE:
	case CU_LIMIT_MALLOC_HEAP_SIZE:
	case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
	case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
	case CU_LIMIT_PERSISTING_L2_CACHE_SIZE:
		LOCK();
		fk.ctx.limits[l] = v;
		UNLOCK();
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	}
}

/* ---- memory ---- */

static CUresult mem_alloc(CUdeviceptr *p, size_t n)
{
	CUresult r = fk_ready();
	struct alloc *a;
	void *m;
	if (r)
		return r;
	if (!p || !n)
		return CUDA_ERROR_INVALID_VALUE;
	if (n > TOTAL_MEM || !(a = calloc(1, sizeof *a)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!(m = aligned_alloc(256, (n + 255) & ~(size_t)255))) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->base = (uintptr_t)m;
	a->size = n;
	LOCK();
	a->next = fk.allocs;
	fk.allocs = a;
	UNLOCK();
	*p = (CUdeviceptr)a->base;
	return CUDA_SUCCESS;
}

static CUresult mem_free(CUdeviceptr p)
{
	CUresult r = fk_ready();
	if (r)
		return r;
	if (!p)
		return CUDA_SUCCESS;
	r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	for (struct alloc **a = &fk.allocs; *a; a = &(*a)->next)
		if ((*a)->base == (uintptr_t)p) {
			struct alloc *x = *a;
			*a = x->next;
			free((void *)x->base);
			free(x);
			r = CUDA_SUCCESS;
			break;
		}
	UNLOCK();
	return r;
}

/* [p, p + n) inside one allocation? */
static CUresult in_alloc(CUdeviceptr p, size_t n)
{
	CUresult r = fk_ready();
	if (r)
		return r;
	r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	for (const struct alloc *a = fk.allocs; a; a = a->next)
		if ((uintptr_t)p >= a->base && (uintptr_t)p - a->base <= a->size &&
		    n <= a->size - ((uintptr_t)p - a->base)) {
			r = CUDA_SUCCESS;
			break;
		}
	UNLOCK();
	return r;
}

static CUresult memcpy_htod(CUdeviceptr dst, const void *src, size_t n)
{
	CUresult r = in_alloc(dst, n);
	if (r)
		return r;
	if (n && !src)
		return CUDA_ERROR_INVALID_VALUE;
	if (n)
		memcpy((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}

static CUresult memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	CUresult r = in_alloc(dst, n);
	if (r || (r = in_alloc(src, n)))
		return r;
	if (n)
		memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

static CUresult memcpy_dtoh(void *dst, CUdeviceptr src, size_t n)
{
	CUresult r = in_alloc(src, n);
	if (r)
		return r;
	if (n && !dst)
		return CUDA_ERROR_INVALID_VALUE;
	if (n)
		memcpy(dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

/* Stream-ordered copies: run now (every earlier launch has finished), or
 * recorded when the stream is capturing. */
static CUresult memcpy_htod_async(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	CUresult r = fk_check_stream(s);
	if (r || (r = in_alloc(dst, n)))
		return r;
	if (n && !src)
		return CUDA_ERROR_INVALID_VALUE;
	if (fk_capture_copy(s, (void *)(uintptr_t)dst, src, n, &r))
		return r;
	return memcpy_htod(dst, src, n);
}

static CUresult memcpy_dtoh_async(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	CUresult r = fk_check_stream(s);
	if (r || (r = in_alloc(src, n)))
		return r;
	if (n && !dst)
		return CUDA_ERROR_INVALID_VALUE;
	if (fk_capture_copy(s, dst, (const void *)(uintptr_t)src, n, &r))
		return r;
	return memcpy_dtoh(dst, src, n);
}

static CUresult memset_d32(CUdeviceptr p, unsigned int v, size_t n)
{
	CUresult r;
	if (n > SIZE_MAX / 4 || (p & 3))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = in_alloc(p, n * 4)))
		return r;
	uint32_t *d = (uint32_t *)(uintptr_t)p;
	for (size_t i = 0; i < n; i++)
		d[i] = v;
	return CUDA_SUCCESS;
}

static CUresult memset_d8(CUdeviceptr p, unsigned char v, size_t n)
{
	CUresult r = in_alloc(p, n);
	if (r)
		return r;
	memset((void *)(uintptr_t)p, v, n);
	return CUDA_SUCCESS;
}

/* ---- streams and events ---- */

static CUresult stream_create(CUstream *s, unsigned int flags)
{
	CUresult r = fk_ready();
	struct stream *x;
	if (r)
		return r;
	if (!s || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if (!(x = calloc(1, sizeof *x)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	x->next = fk.streams;
	fk.streams = x;
	UNLOCK();
	*s = (CUstream)(void *)x;
	return CUDA_SUCCESS;
}

/* NULL and the legacy / per-thread default stream handles are streams too. */
CUresult fk_check_stream(CUstream s)
{
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return CUDA_SUCCESS;
	LOCK();
	for (struct stream *x = fk.streams; x; x = x->next)
		if ((void *)x == (void *)s)
			r = CUDA_SUCCESS;
	UNLOCK();
	return r;
}

static CUresult stream_synchronize(CUstream s)
{
	CUresult r = fk_ready();
	if (r || (r = fk_check_stream(s)))
		return r;
	/* as the driver: not allowed while capturing, and it ends the capture's validity */
	if (fk_capturing(s)) {
		fk_capture_invalidate(s);
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	return CUDA_SUCCESS;
}

static CUresult stream_destroy(CUstream s)
{
	CUresult r = fk_ready();
	if (r)
		return r;
	r = CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	for (struct stream **x = &fk.streams; *x; x = &(*x)->next)
		if ((void *)*x == (void *)s) {
			struct stream *d = *x;
			*x = d->next;
			free(d);
			r = CUDA_SUCCESS;
			break;
		}
	UNLOCK();
	return r;
}

static struct event *find_event(CUevent e)
{
	for (struct event *x = fk.events; x; x = x->next)
		if ((void *)x == (void *)e)
			return x;
	return NULL;
}

static CUresult event_create(CUevent *e, unsigned int flags)
{
	CUresult r = fk_ready();
	struct event *x;
	if (r)
		return r;
	if (!e || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
		return CUDA_ERROR_INVALID_VALUE;
	if (!(x = calloc(1, sizeof *x)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->flags = flags;
	LOCK();
	x->next = fk.events;
	fk.events = x;
	UNLOCK();
	*e = (CUevent)(void *)x;
	return CUDA_SUCCESS;
}

/* Launches have run by the time they return: the event's time is now. */
static CUresult event_record(CUevent e, CUstream s)
{
	CUresult r = fk_ready();
	struct event *x;
	if (r || (r = fk_check_stream(s)))
		return r;
	LOCK();
	if ((x = find_event(e))) {
		clock_gettime(CLOCK_MONOTONIC, &x->t);
		x->recorded = 1;
	}
	UNLOCK();
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult event_synchronize(CUevent e)
{
	CUresult r = fk_ready();
	struct event *x;
	if (r)
		return r;
	LOCK();
	x = find_event(e);
	UNLOCK();
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult event_elapsed_time(float *ms, CUevent a, CUevent b)
{
	CUresult r = fk_ready();
	struct event *x, *y;
	if (r)
		return r;
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	x = find_event(a);
	y = find_event(b);
	/* as the driver: an unrecorded or non-timing event is an invalid handle */
	if (!x || !y || !x->recorded || !y->recorded || (x->flags | y->flags) & CU_EVENT_DISABLE_TIMING)
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*ms = (float)((double)(y->t.tv_sec - x->t.tv_sec) * 1e3 + (double)(y->t.tv_nsec - x->t.tv_nsec) / 1e6);
	UNLOCK();
	return r;
}

static CUresult event_destroy(CUevent e)
{
	CUresult r = fk_ready();
	if (r)
		return r;
	r = CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	for (struct event **x = &fk.events; *x; x = &(*x)->next)
		if ((void *)*x == (void *)e) {
			struct event *d = *x;
			*x = d->next;
			free(d);
			r = CUDA_SUCCESS;
			break;
		}
	UNLOCK();
	return r;
}

/* What the primary context owned, freed on its last release. */
static void free_all_locked(void)
{
	while (fk.allocs) {
		struct alloc *a = fk.allocs;
		fk.allocs = a->next;
		free((void *)a->base);
		free(a);
	}
	while (fk.mods) {
		struct module *m = fk.mods;
		fk.mods = m->next;
		fk_module_free(m);
	}
	while (fk.streams) {
		struct stream *s = fk.streams;
		fk.streams = s->next;
		free(s);
	}
	while (fk.events) {
		struct event *e = fk.events;
		fk.events = e->next;
		free(e);
	}
	fk_graphs_free_all_locked();
}

/* ---- cuGetProcAddress ---- */

/* Each function at the first CUDA version whose ABI this implementation
 * has (e.g. cuMemAlloc's size_t form is 3.2's _v2). */
static const struct {
	const char *name;
	int since;
	void *fn;
} procs[] = {
#define P(n, v, f) { "cu" #n, v, (void *)(uintptr_t)&f }
	P(Init, 2000, init), P(DriverGetVersion, 2020, cuDriverGetVersion),
	P(GetErrorName, 6000, get_error_name), P(GetErrorString, 6000, get_error_string),
	P(DeviceGetCount, 2000, device_get_count), P(DeviceGet, 2000, device_get),
	P(DeviceGetAttribute, 2000, device_get_attribute), P(DeviceGetName, 2000, device_get_name),
	P(DeviceTotalMem, 3020, device_total_mem), P(DevicePrimaryCtxRetain, 7000, primary_ctx_retain),
	P(DeviceGetUuid, 11040, device_get_uuid), P(DeviceGetPCIBusId, 4010, device_get_pci_bus_id),
	P(DevicePrimaryCtxRelease, 7000, primary_ctx_release), P(CtxSetCurrent, 4000, ctx_set_current),
	P(CtxSynchronize, 2000, ctx_synchronize), P(CtxSetLimit, 3010, ctx_set_limit),
	P(ModuleLoadDataEx, 2010, fk_module_load_data_ex), P(ModuleUnload, 2000, fk_module_unload),
	P(ModuleGetFunction, 2000, fk_module_get_function), P(FuncGetAttribute, 2020, fk_func_get_attribute),
	P(FuncSetAttribute, 9000, fk_func_set_attribute), P(FuncGetParamInfo, 12040, fk_func_get_param_info),
	P(LaunchKernel, 4000, fk_launch_kernel), P(MemAlloc, 3020, mem_alloc), P(MemFree, 3020, mem_free),
	P(MemcpyHtoD, 3020, memcpy_htod), P(MemcpyDtoH, 3020, memcpy_dtoh),
	P(MemcpyDtoD, 3020, memcpy_dtod),
	P(MemsetD32, 3020, memset_d32), P(MemsetD8, 3020, memset_d8),
	P(StreamCreate, 2000, stream_create), P(StreamSynchronize, 2000, stream_synchronize),
	P(StreamDestroy, 4000, stream_destroy), P(EventCreate, 2000, event_create),
	P(EventRecord, 2000, event_record), P(EventSynchronize, 2000, event_synchronize),
	P(EventElapsedTime, 2000, event_elapsed_time), P(EventDestroy, 4000, event_destroy),
	/* fakecuda_graph.c, and the asynchronous copies above */
	P(MemGetInfo, 3020, fk_mem_get_info), P(MemcpyHtoDAsync, 3020, memcpy_htod_async),
	P(MemcpyDtoHAsync, 3020, memcpy_dtoh_async), P(StreamBeginCapture, 10010, fk_stream_begin_capture),
	P(StreamEndCapture, 10000, fk_stream_end_capture),
	P(GraphInstantiateWithFlags, 11040, fk_graph_instantiate), P(GraphLaunch, 10000, fk_graph_launch),
	P(GraphExecDestroy, 10000, fk_graph_exec_destroy), P(GraphDestroy, 10000, fk_graph_destroy),
#undef P
};

/* A name we do not implement, or a version older than the ABI we do, is
 * CUDA_ERROR_NOT_FOUND with *pfn NULL and the reason in *status (the CUDA
 * 13 header documents CUDA_SUCCESS with a NULL *pfn instead; cr_cu_load
 * treats both as missing). A version newer than the driver is
 * CUDA_ERROR_INVALID_VALUE. */
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status)
{
	(void)flags;
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (version > DRIVER_VERSION)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
		if (strcmp(procs[i].name, symbol))
			continue;
		if (version < procs[i].since) {
			if (status)
				*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
			return CUDA_ERROR_NOT_FOUND;
		}
		*pfn = procs[i].fn;
		if (status)
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_NOT_FOUND;
}
