/* cuda_worker.c — launch table (orchestrator side) and the device side of a
 * CUDA candidate's worker: module, parameters, mirror, launches. NOT RUN on
 * a GPU yet: it compiles and its logic follows the driver API documentation. */
#include "cuda/cuda_worker.h"
#include "cuda/cuda_cubin.h"
#include "cuda/cuda_drv_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMEM_DEFAULT_MAX (48 * 1024)   /* above this a kernel must opt in */

/* ---- orchestrator side ---- */

static int64_t expr_or_1(const int64_t *vals, int idx)
{
	return idx < 0 ? 1 : vals[idx];
}

enum cr_status cr_cuda_ltab_fill(struct cr_cuda_ltab *t, const struct cr_plan *p, enum cr_stage s,
				 const int64_t *vals, const char *cubin_path, const char *path,
				 struct cr_err *err)
{
	static const int64_t gmax[3] = { 2147483647, 65535, 65535 }, bmax[3] = { 1024, 1024, 64 };
	static const char axis[3] = { 'x', 'y', 'z' };
	const struct cr_pstage *st = &p->st[s];
	const char *name = path ? path : "<candidate>";

	memset(t, 0, sizeof *t);
	t->magic = CR_CUDA_LTAB_MAGIC;
	t->n_launch = (uint32_t)st->n_launch;
	snprintf(t->cubin_path, sizeof t->cubin_path, "%s", cubin_path);
	for (int i = 0; i < st->n_launch; i++) {
		const struct cr_plaunch *l = &st->launch[i];
		struct cr_cuda_lrec *r = &t->l[i];
		int64_t threads = 1, smem = expr_or_1(vals, l->smem);
		snprintf(r->fn, sizeof r->fn, "%s", l->fn);
		r->line = l->line;
		for (int k = 0; k < 3; k++) {
			int64_t g = expr_or_1(vals, l->grid[k]), b = expr_or_1(vals, l->block[k]);
			if (g < 1 || g > gmax[k])
				return cr_errf(err, CR_EINPUT, "%s:%d: grid %c = %lld is out of range [1, %lld]",
					       name, l->line, axis[k], (long long)g, (long long)gmax[k]);
			if (b < 1 || b > bmax[k])
				return cr_errf(err, CR_EINPUT, "%s:%d: block %c = %lld is out of range [1, %lld]",
					       name, l->line, axis[k], (long long)b, (long long)bmax[k]);
			r->grid[k] = (uint32_t)g;
			r->block[k] = (uint32_t)b;
			threads *= b;
		}
		if (threads > 1024)
			return cr_errf(err, CR_EINPUT, "%s:%d: a block of %lld threads (at most 1024)", name,
				       l->line, (long long)threads);
		if (l->smem < 0)
			smem = 0;
		if (smem < 0 || smem > (1 << 30))
			return cr_errf(err, CR_EINPUT, "%s:%d: dynamic shared memory %lld bytes is out of range",
				       name, l->line, (long long)smem);
		r->smem = (uint32_t)smem;
		r->n_args = (uint32_t)l->n_args;
		r->arg0 = (uint32_t)l->arg0;
		for (int a = 0; a < l->n_args; a++) {
			const struct cr_parg *pa = &l->args[a];
			struct cr_cuda_larg *x = &t->args[l->arg0 + a];
			if (pa->kind == CR_PARG_SLOT) {
				x->kind = CR_CUDA_ARG_PTR;
				x->slot = pa->slot;
			} else if (pa->kind == CR_PARG_INT) {
				x->kind = CR_CUDA_ARG_INT;
				x->i = vals[pa->expr];
			} else {
				x->kind = CR_CUDA_ARG_FLOAT;
				x->f = pa->f;
			}
		}
	}
	return CR_OK;
}

/* ---- worker side ---- */

static const struct cr_cuda_ltab *ltab_of(const char *shm)
{
	const struct cr_cuda_ltab *t = (const struct cr_cuda_ltab *)(shm + CR_CUDA_LTAB_OFF);
	if (t->magic != CR_CUDA_LTAB_MAGIC || t->n_launch > CR_MAX_LAUNCH)
		return NULL;
	for (uint32_t i = 0; i < t->n_launch; i++)
		if (t->l[i].n_args > CR_MAX_ARGS || t->l[i].arg0 > CR_MAX_ARGV - t->l[i].n_args)
			return NULL;
	return t;
}

static unsigned char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	long sz;
	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (sz = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET) &&
	    (b = malloc((size_t)sz)) && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
		free(b);
		b = NULL;
	}
	if (b)
		*n = (size_t)sz;
	fclose(f);
	return b;
}

/* Parameter sizes: the driver's cuFuncGetParamInfo (12.4+), else the
 * cubin's KPARAM_INFO records. */
static void param_sizes(struct cr_cuda_worker *w, const struct cr_cu *cu, int i, const char *fn,
			const struct cr_cubin_info *info)
{
	w->n_params[i] = -1;
	if (cu->FuncGetParamInfo) {
		size_t off, size;
		int n = 0;
		CUresult r = CUDA_SUCCESS;
		while (n < CR_MAX_ARGS + 1 &&
		       (r = cu->FuncGetParamInfo((CUfunction)w->fn[i], (size_t)n, &off, &size)) == CUDA_SUCCESS) {
			if (n < CR_MAX_ARGS)
				w->param_size[i][n] = (uint16_t)size;
			n++;
		}
		/* INVALID_VALUE past the last parameter is the end of the list; any
		 * other answer means the driver could not say: use the cubin */
		if (r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_VALUE) {
			w->n_params[i] = n;
			return;
		}
	}
	const struct cr_cubin_kernel *k = cr_cubin_find(info, fn);
	if (k && k->n_params >= 0 && k->n_params <= CR_MAX_ARGS) {
		w->n_params[i] = k->n_params;
		for (int a = 0; a < k->n_params; a++)
			w->param_size[i][a] = (uint16_t)k->param_size[a];
	}
}

enum cr_status cr_cuda_worker_init(struct cr_cuda_worker *w, const char *shm, size_t shm_size,
				   enum check_verdict *verdict, struct cr_err *err)
{
	char why[256];
	const struct cr_cu *cu = cr_cu_load(why, sizeof why);
	const struct cr_cuda_ltab *t = ltab_of(shm);
	enum cr_status st = CR_OK;
	unsigned char *image = NULL;
	size_t image_len = 0;
	struct cr_cubin_info *info = NULL;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUstream stream;
	CUdeviceptr d;

	memset(w, 0, sizeof *w);
	*verdict = CHECK_OK;
	if (!cu)
		return cr_errf(err, CR_EENV, "%s", why);
	if (!t || shm_size <= CR_SHM_HDR)
		return cr_errf(err, CR_EINTERNAL, "no CUDA launch table in the shared memory");
	if (!(image = read_all(t->cubin_path, &image_len)))
		return cr_errf(err, CR_EENV, "cannot read the cubin %s", t->cubin_path);
	if (!(info = calloc(1, sizeof *info))) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	cr_cubin_parse(image, image_len, info);
	if (!(w->param_size = calloc((size_t)t->n_launch + 1, sizeof *w->param_size))) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	CU_CHECK(cu->Init(0));
	CU_CHECK(cu->DeviceGet(&dev, t->device));
	if (t->device_uuid[0]) {
		/* the orchestrator's ordinal must name the same device here: a
		 * different CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER would renumber
		 * them, and the row would name the wrong GPU */
		char u[48] = "";
		CUuuid raw;
		if (!cu->DeviceGetUuid || cu->DeviceGetUuid(&raw, dev) != CUDA_SUCCESS) {
			st = cr_errf(err, CR_EENV, "cannot read the UUID of CUDA device %d", t->device);
			goto out;
		}
		cr_cuda_uuid_str((const unsigned char *)raw.bytes, u, sizeof u);
		if (strcmp(u, t->device_uuid)) {
			st = cr_errf(err, CR_EENV, "CUDA device %d is %s in the worker but %s in the "
				     "orchestrator (the device numbering differs)", t->device, u,
				     t->device_uuid);
			goto out;
		}
	}
	CU_CHECK(cu->DevicePrimaryCtxRetain(&ctx, dev));
	w->ctx = ctx;
	w->device = dev;
	w->have_ctx = true;
	CU_CHECK(cu->CtxSetCurrent(ctx));
	{
		CUjit_option o[3] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
				      CU_JIT_LOG_VERBOSE };
		void *v[3] = { w->jit_log, (void *)(uintptr_t)(sizeof w->jit_log - 1), (void *)(uintptr_t)1 };
		CUresult r = cu->ModuleLoadDataEx(&mod, image, 3, o, v);
		if (r != CUDA_SUCCESS) {
			/* NVRTC compiled it for this device: a rejection is ours or the device's */
			st = cr_cu_fail(cu, r, "cuModuleLoadDataEx", CR_EENV, err);
			goto out;
		}
		w->mod = mod;
	}
	for (uint32_t i = 0; i < t->n_launch; i++) {
		CUfunction f;
		CUresult r = cu->ModuleGetFunction(&f, mod, t->l[i].fn);
		if (r != CUDA_SUCCESS) {
			*verdict = CHECK_FORMAT_ERROR;
			cr_errf(err, CR_EINPUT, "line %d: no extern \"C\" __global__ kernel named '%s'",
				t->l[i].line, t->l[i].fn);
			goto out;
		}
		w->fn[i] = f;
		param_sizes(w, cu, (int)i, t->l[i].fn, info);
		w->cublas[i] = (t->flags & CR_CUDA_LTAB_TRUSTED) && !strcmp(t->l[i].fn, CR_CUDA_CUBLAS_SGEMM);
	}
	CU_CHECK(cu->StreamCreate(&stream, CU_STREAM_DEFAULT)); /* ordered after the legacy-stream copies */
	w->stream = stream;
	w->dsize = shm_size - CR_SHM_HDR;
	CU_CHECK(cu->MemAlloc(&d, w->dsize));
	w->dbase = (uint64_t)d;
out:
	free(image);
	free(info);
	return st;
}

/* Builds the parameter block of launch i: storage in vals, pointers in pv. */
static bool build_params(struct cr_cuda_worker *w, const struct cr_shm_hdr *h, uint32_t set, int i,
			 const struct cr_cuda_ltab *t, uint64_t vals[CR_MAX_ARGS], void *pv[CR_MAX_ARGS],
			 struct cr_err *err)
{
	const struct cr_cuda_lrec *l = &t->l[i];
	if (w->n_params[i] >= 0 && (uint32_t)w->n_params[i] != l->n_args) {
		cr_errf(err, CR_EINPUT, "line %d: kernel '%s' takes %d parameters, the launch passes %u",
			l->line, l->fn, w->n_params[i], l->n_args);
		return false;
	}
	for (uint32_t a = 0; a < l->n_args && a < CR_MAX_ARGS; a++) {
		const struct cr_cuda_larg *x = &t->args[l->arg0 + a];
		int size = w->n_params[i] >= 0 ? w->param_size[i][a] : 8;
		vals[a] = 0;
		pv[a] = &vals[a];
		if (x->kind == CR_CUDA_ARG_PTR) {
			uint64_t p;
			if (x->slot < 0 || (uint32_t)x->slot >= h->n_slots || size != 8) {
				cr_errf(err, CR_EINPUT, "line %d: argument %u of '%s' is a buffer but the parameter is %d bytes",
					l->line, a + 1, l->fn, size);
				return false;
			}
			p = w->dbase + (h->off[set][x->slot] - CR_SHM_HDR);
			memcpy(&vals[a], &p, 8);
		} else if (x->kind == CR_CUDA_ARG_INT) {
			if (size == 8) {
				memcpy(&vals[a], &x->i, 8);
			} else if (size == 4 && x->i >= INT32_MIN && x->i <= INT32_MAX) {
				int32_t v = (int32_t)x->i;
				memcpy(&vals[a], &v, 4);
			} else {
				cr_errf(err, CR_EINPUT,
					"line %d: argument %u of '%s' is the integer %lld; the parameter is %d bytes%s",
					l->line, a + 1, l->fn, (long long)x->i, size,
					size == 4 ? " (too large for int: declare it long long)" : "");
				return false;
			}
		} else if (size == 4) {
			float f = (float)x->f;
			memcpy(&vals[a], &f, 4);
		} else if (size == 8) {
			memcpy(&vals[a], &x->f, 8);
		} else {
			cr_errf(err, CR_EINPUT, "line %d: argument %u of '%s' is a float but the parameter is %d bytes",
				l->line, a + 1, l->fn, size);
			return false;
		}
	}
	return true;
}

/* cuBLAS, loaded on demand for trusted launch tables (the GPU baselines). */
typedef int (*cublas_create_fn)(void **h);
typedef int (*cublas_set_stream_fn)(void *h, void *s);
typedef int (*cublas_set_math_fn)(void *h, int mode);
typedef int (*cublas_destroy_fn)(void *h);
typedef int (*cublas_sgemm_fn)(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
			       const float *a, int lda, const float *b, int ldb, const float *beta,
			       float *c, int ldc);

static bool cublas_open(struct cr_cuda_worker *w, const char *path, struct cr_err *err)
{
	cublas_create_fn create;
	cublas_set_stream_fn set_stream;
	cublas_set_math_fn set_math;
	int rc;

	if (w->cublas_handle)
		return true;
	if (!w->cublas_lib && !(w->cublas_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		cr_errf(err, CR_EENV, "cannot load cuBLAS (%s): %s", path, dlerror());
		return false;
	}
	create = (cublas_create_fn)(uintptr_t)dlsym(w->cublas_lib, "cublasCreate_v2");
	set_stream = (cublas_set_stream_fn)(uintptr_t)dlsym(w->cublas_lib, "cublasSetStream_v2");
	set_math = (cublas_set_math_fn)(uintptr_t)dlsym(w->cublas_lib, "cublasSetMathMode");
	w->cublas_sgemm = dlsym(w->cublas_lib, "cublasSgemm_v2");
	if (!create || !set_stream || !set_math || !w->cublas_sgemm) {
		cr_errf(err, CR_EENV, "%s lacks cublasCreate_v2/SetStream_v2/SetMathMode/Sgemm_v2", path);
		return false;
	}
	/* CUBLAS_DEFAULT_MATH (0): FP32 sgemm without TF32 tensor cores */
	if ((rc = create(&w->cublas_handle)) || (rc = set_stream(w->cublas_handle, w->stream)) ||
	    (rc = set_math(w->cublas_handle, 0))) {
		cr_errf(err, CR_EENV, "cuBLAS setup failed (cublasStatus %d)", rc);
		return false;
	}
	return true;
}

/* Row-major c[M,N] = a[M,K] b[K,N] as column-major c^T = b^T a^T. */
static bool cublas_sgemm(struct cr_cuda_worker *w, const uint64_t *vals, const uint16_t *size,
			 struct cr_err *err)
{
	/* looked up once (cublas_open): this runs inside the timed window */
	cublas_sgemm_fn sgemm = (cublas_sgemm_fn)(uintptr_t)w->cublas_sgemm;
	const float one = 1.0f, zero = 0.0f;
	uint64_t a, b, c;
	int32_t m, k, n;
	int rc;

	if (size[0] != 8 || size[1] != 8 || size[2] != 8 || size[3] != 4 || size[4] != 4 || size[5] != 4)
		return cr_errf(err, CR_EINPUT, CR_CUDA_CUBLAS_SGEMM " takes (a, b, c, int M, int K, int N)"), false;
	memcpy(&a, &vals[0], 8);
	memcpy(&b, &vals[1], 8);
	memcpy(&c, &vals[2], 8);
	memcpy(&m, &vals[3], 4);
	memcpy(&k, &vals[4], 4);
	memcpy(&n, &vals[5], 4);
	rc = sgemm(w->cublas_handle, 0, 0, n, m, k, &one, (const float *)(uintptr_t)b, n,
		   (const float *)(uintptr_t)a, k, &zero, (float *)(uintptr_t)c, n);
	if (rc)
		return cr_errf(err, CR_EFAIL, "cublasSgemm failed (cublasStatus %d)", rc), false;
	return true;
}

/* Every launch of the table on the worker's stream, in order. false with
 * the verdict and message set when one fails. */
static bool launch_all(struct cr_cuda_worker *w, const struct cr_cu *cu, char *shm, uint32_t set,
		       enum check_verdict *verdict, struct cr_err *err)
{
	const struct cr_cuda_ltab *t = ltab_of(shm);
	CUstream s = (CUstream)w->stream;
	CUresult r;

	for (uint32_t i = 0; i < t->n_launch; i++) {
		const struct cr_cuda_lrec *l = &t->l[i];
		uint64_t vals[CR_MAX_ARGS];
		void *pv[CR_MAX_ARGS];
		if (!build_params(w, (const struct cr_shm_hdr *)shm, set, (int)i, t, vals, pv, err)) {
			*verdict = CHECK_FORMAT_ERROR;
			return false;
		}
		if (w->cublas[i]) {
			if (!cublas_open(w, t->cublas_path, err) || !cublas_sgemm(w, vals, w->param_size[i], err)) {
				*verdict = CHECK_RUNTIME_ERROR;
				return false;
			}
			continue;
		}
		if (l->smem > SMEM_DEFAULT_MAX &&
		    (r = cu->FuncSetAttribute((CUfunction)w->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					      (int)l->smem)) != CUDA_SUCCESS) {
			char m[64];
			*verdict = CHECK_RUNTIME_ERROR;
			snprintf(m, sizeof m, "line %d: %u bytes of shared memory", l->line, l->smem);
			cr_cu_fail(cu, r, m, CR_EFAIL, err);
			return false;
		}
		r = cu->LaunchKernel((CUfunction)w->fn[i], l->grid[0], l->grid[1], l->grid[2], l->block[0],
				     l->block[1], l->block[2], l->smem, s, pv, NULL);
		if (r != CUDA_SUCCESS) {
			char m[128];
			*verdict = CHECK_RUNTIME_ERROR;
			snprintf(m, sizeof m, "line %d: launching %s", l->line, l->fn);
			cr_cu_fail(cu, r, m, CR_EFAIL, err);
			return false;
		}
	}
	return true;
}

enum cr_status cr_cuda_worker_run(struct cr_cuda_worker *w, char *shm, uint32_t set,
				  enum check_verdict *verdict, struct cr_err *err)
{
	char why[256];
	const struct cr_cu *cu = cr_cu_load(why, sizeof why);
	const struct cr_shm_hdr *h = (const struct cr_shm_hdr *)shm;
	const struct cr_cuda_ltab *t = ltab_of(shm);
	enum cr_status st = CR_OK;
	CUstream s = (CUstream)w->stream;
	CUresult r;

	*verdict = CHECK_OK;
	if (!cu || !t || !w->dbase || set >= h->n_sets || set >= CR_MAX_SETS)
		return cr_errf(err, CR_EINTERNAL, "CUDA worker not ready");
	for (uint32_t k = 0; k < h->n_slots && k < CR_MAX_SLOTS; k++)
		if (h->off[set][k] < CR_SHM_HDR || h->off[set][k] - CR_SHM_HDR > w->dsize)
			return cr_errf(err, CR_EINTERNAL, "slot %u lies outside the shared memory", k);
	CU_CHECK(cu->MemcpyHtoD((CUdeviceptr)w->dbase, shm + CR_SHM_HDR, w->dsize));
	if (!launch_all(w, cu, shm, set, verdict, err))
		return CR_OK;
	r = cu->StreamSynchronize(s);
	if (r != CUDA_SUCCESS) {
		/* illegal address, device assert, launch failure: sticky */
		*verdict = CHECK_RUNTIME_ERROR;
		cr_cu_fail(cu, r, "after the launches", CR_EFAIL, err);
		return CR_OK;
	}
	CU_CHECK(cu->MemcpyDtoH(shm + CR_SHM_HDR, (CUdeviceptr)w->dbase, w->dsize));
out:
	return st;
}

void cr_cuda_worker_release(struct cr_cuda_worker *w)
{
	char why[256];
	const struct cr_cu *cu = cr_cu_load(why, sizeof why);
	if (cu && w->have_ctx) {
		/* best effort: after a sticky error these fail, and the process ends anyway */
		if (w->dbase)
			cu->MemFree((CUdeviceptr)w->dbase);
		if (w->flush)
			cu->MemFree((CUdeviceptr)w->flush);
		if (w->cublas_handle)
			((cublas_destroy_fn)(uintptr_t)dlsym(w->cublas_lib, "cublasDestroy_v2"))(w->cublas_handle);
		if (w->stream)
			cu->StreamDestroy((CUstream)w->stream);
		if (w->mod)
			cu->ModuleUnload((CUmodule)w->mod);
		cu->DevicePrimaryCtxRelease((CUdevice)w->device);
	}
	free(w->param_size);
	memset(w, 0, sizeof *w);
}

/* ---- timed calls ---- */

int64_t cr_cuda_window_ns(struct cr_cupti_rec *rec, int n, const struct cr_cuda_ltab *t, bool lib,
			  int *n_kernels)
{
	uint64_t sum = 0;
	bool bad = false;
	int k = 0;

	/* in start order (buffers need not arrive in order) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && rec[j].start_ns < rec[j - 1].start_ns; j--) {
			struct cr_cupti_rec x = rec[j];
			rec[j] = rec[j - 1];
			rec[j - 1] = x;
		}
	for (int i = 0; i < n; i++) {
		if (rec[i].kind != CR_CUPTI_KERNEL)
			continue;
		if ((!lib && (k >= (int)t->n_launch ||
			     strncmp(rec[i].name, t->l[k].fn, sizeof rec[i].name - 1))) ||
		    !rec[i].start_ns || rec[i].end_ns < rec[i].start_ns)
			bad = true;
		else
			sum += rec[i].end_ns - rec[i].start_ns;
		k++;
	}
	*n_kernels = k;
	return bad || (lib ? k < 1 : k != (int)t->n_launch) ? -1 : (int64_t)sum;
}

enum cr_status cr_cuda_worker_time(struct cr_cuda_worker *w, char *shm, uint32_t set,
				   struct cr_cuda_timing *tm, enum check_verdict *verdict,
				   struct cr_err *err)
{
	char why[256];
	const struct cr_cu *cu = cr_cu_load(why, sizeof why);
	const struct cr_cuda_ltab *t = ltab_of(shm);
	enum cr_status st = CR_OK;
	CUstream s = (CUstream)w->stream;
	CUevent e0 = NULL, e1 = NULL;
	float ms = 0;
	const struct cr_cuda_tcmd *tc = (const struct cr_cuda_tcmd *)(shm + CR_CUDA_TCMD_OFF);
	CUresult r;

	tm->event_ns = tm->cupti_ns = -1;
	tm->n_kernels = -1;
	if (tc->magic != CR_CUDA_TCMD_MAGIC)
		tc = NULL;
	*verdict = CHECK_OK;
	if (!cu || !t)
		return cr_errf(err, CR_EINTERNAL, "CUDA worker not ready");
	if (!w->flush) {
		/* the L2 flush buffer: max(2 x L2, 256 MiB), written before each sample */
		CUdevice dev = (CUdevice)w->device;
		int l2 = 0;
		CUdeviceptr f;
		cu->DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
		w->flush_bytes = (size_t)l2 * 2 > (256u << 20) ? (size_t)l2 * 2 : (256u << 20);
		CU_CHECK(cu->MemAlloc(&f, w->flush_bytes));
		w->flush = (uint64_t)f;
	}
	CU_CHECK(cu->EventCreate(&e0, CU_EVENT_DEFAULT));
	CU_CHECK(cu->EventCreate(&e1, CU_EVENT_DEFAULT));
	/* inputs and the poisoned outputs in, outside the timed window: from
	 * the device-side pool when the orchestrator says so, else the host */
	if (tc) {
		for (uint32_t i = 0; i < tc->n && i < CR_MAX_SLOTS; i++) {
			uint64_t d = tc->e[i].dst, b = tc->e[i].bytes;
			if (d > w->dsize || b > w->dsize - d ||
			    (tc->e[i].kind == CR_TCMD_INPUT && (tc->e[i].src > w->dsize || b > w->dsize - tc->e[i].src))) {
				st = cr_errf(err, CR_EINTERNAL, "time command entry %u outside the region", i);
				goto out;
			}
			if (tc->e[i].kind == CR_TCMD_INPUT) {
				CU_CHECK(cu->MemcpyDtoD((CUdeviceptr)(w->dbase + d), (CUdeviceptr)(w->dbase + tc->e[i].src), b));
			} else {
				CU_CHECK(cu->MemsetD32((CUdeviceptr)(w->dbase + d), tc->poison, b / 4));
				if (b % 4)
					CU_CHECK(cu->MemsetD8((CUdeviceptr)(w->dbase + d + b / 4 * 4), 0xff, b % 4));
			}
		}
	} else {
		CU_CHECK(cu->MemcpyHtoD((CUdeviceptr)w->dbase, shm + CR_SHM_HDR, w->dsize));
	}
	CU_CHECK(cu->MemsetD32((CUdeviceptr)w->flush, w->flush_seq++, w->flush_bytes / 4));
	CU_CHECK(cu->CtxSynchronize());
	if (w->cupti) {
		/* drop the copies' and the flush's records before the window */
		struct cr_cupti_rec junk[64];
		int n;
		uint64_t dropped;
		do {
			if (cr_cupti_collect(junk, 64, &n, &dropped, err))
				w->cupti = false;
		} while (w->cupti && n == 64);
	}
	CU_CHECK(cu->EventRecord(e0, s));
	if (!launch_all(w, cu, shm, set, verdict, err))
		goto out;
	CU_CHECK(cu->EventRecord(e1, s));
	r = cu->EventSynchronize(e1);
	if (r == CUDA_SUCCESS)
		r = cu->CtxSynchronize(); /* anything else the launches left running */
	if (r != CUDA_SUCCESS) {
		*verdict = CHECK_RUNTIME_ERROR;
		cr_cu_fail(cu, r, "after the launches", CR_EFAIL, err);
		goto out;
	}
	CU_CHECK(cu->EventElapsedTime(&ms, e0, e1));
	tm->event_ns = (int64_t)((double)ms * 1e6);
	if (w->cupti) {
		/* every kernel record of the window: exactly the plan's launches,
		 * in order, with sane timestamps; anything else rejects the sample */
		struct cr_cupti_rec rec[CR_MAX_LAUNCH + 8];
		int n = 0, k = 0;
		uint64_t dropped = 0;
		bool lib = false;
		/* a library call launches kernels of its own choosing: then every
		 * kernel record of the window counts, by timestamps alone */
		for (uint32_t i = 0; i < t->n_launch; i++)
			lib |= w->cublas[i];
		if (cr_cupti_collect(rec, CR_MAX_LAUNCH + 8, &n, &dropped, err)) {
			/* CUPTI gave up: events from here on (this sample by events too) */
			w->cupti = false;
			cr_err_init(err);
			n = -1;
		}
		if (n < 0) {
			tm->n_kernels = -1;
		} else {
			tm->cupti_ns = cr_cuda_window_ns(rec, n, t, lib, &k);
			tm->n_kernels = k;
			if (dropped)
				tm->cupti_ns = -1;
		}
	}
	if (!tc || tc->full_copy) {
		CU_CHECK(cu->MemcpyDtoH(shm + CR_SHM_HDR, (CUdeviceptr)w->dbase, w->dsize));
	} else {
		/* the outputs' heads and tails: enough to see one was not written */
		for (uint32_t i = 0; i < tc->n && i < CR_MAX_SLOTS; i++) {
			uint64_t d = tc->e[i].dst, b = tc->e[i].bytes, m = b < CR_CUDA_PROBE ? b : CR_CUDA_PROBE;
			if (tc->e[i].kind != CR_TCMD_OUTPUT || !m)
				continue;
			CU_CHECK(cu->MemcpyDtoH(shm + CR_SHM_HDR + d, (CUdeviceptr)(w->dbase + d), m));
			CU_CHECK(cu->MemcpyDtoH(shm + CR_SHM_HDR + d + b - m, (CUdeviceptr)(w->dbase + d + b - m), m));
		}
	}
out:
	if (e0)
		cu->EventDestroy(e0);
	if (e1)
		cu->EventDestroy(e1);
	return st;
}

/* ---- the worker process (`crucible __worker cuda`) ---- */

#define CMD_FD 3
#define REP_FD 4

static void cw_reply(const struct cr_reply *r)
{
	if (write(REP_FD, r, sizeof *r) != (ssize_t)sizeof *r)
		_exit(70);
}

static void cw_msg(uint32_t kind, uint32_t seq, int code, const char *msg)
{
	struct cr_reply r;
	memset(&r, 0, sizeof r);
	r.kind = kind;
	r.seq = seq;
	r.code = code;
	snprintf(r.msg, sizeof r.msg, "%s", msg ? msg : "");
	cw_reply(&r);
}

int cr_cuda_worker_main(char *shm, size_t size)
{
	struct cr_cuda_worker w;
	enum check_verdict v = CHECK_OK;
	struct cr_err err;
	const struct cr_shm_hdr *h = (const struct cr_shm_hdr *)shm;

	cr_err_init(&err);
	/* CUPTI first, so it sees the context from its creation; without it
	 * the events time the samples and the reply says so */
	bool cupti = cr_cupti_start(&err) == CR_OK;
	if (!cupti)
		fprintf(stderr, "cuda worker: no CUPTI (%s): events only\n", err.msg);
	cr_err_init(&err);
	if (cr_cuda_worker_init(&w, shm, size, &v, &err) || v != CHECK_OK) {
		cw_msg(CR_REP_FAIL, 0, v != CHECK_OK ? (int)v : -1, err.msg);
		_exit(71);
	}
	w.cupti = cupti;
	cw_msg(CR_REP_READY, 0, 0, NULL);
	for (;;) {
		struct cr_cmd c;
		size_t got = 0;
		while (got < sizeof c) {
			ssize_t n = read(CMD_FD, (char *)&c + got, sizeof c - got);
			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				_exit(0);
			}
			got += (size_t)n;
		}
		if (c.op == CR_CMD_QUIT)
			_exit(0);
		if (c.op == CR_CMD_NOP || c.set >= h->n_sets) {
			cw_msg(CR_REP_DONE, c.seq, 0, NULL);
			continue;
		}
		struct cr_reply r;
		struct cr_cuda_timing tm = { -1, -1, -1 };
		enum cr_status st;
		cr_err_init(&err);
		memset(&r, 0, sizeof r);
		if (c.op == CR_CMD_TIME)
			st = cr_cuda_worker_time(&w, shm, c.set, &tm, &v, &err);
		else
			st = cr_cuda_worker_run(&w, shm, c.set, &v, &err);
		if (st != CR_OK || v != CHECK_OK) {
			/* the candidate's fault, or a device that failed under it: a
			 * sticky error leaves the context unusable, so this worker ends */
			cw_msg(CR_REP_FAULT, c.seq, v != CHECK_OK ? (int)v : (int)CHECK_RUNTIME_ERROR, err.msg);
			_exit(0);
		}
		r.kind = CR_REP_DONE;
		r.seq = c.seq;
		r.event_ns = tm.event_ns;
		r.cupti_ns = tm.cupti_ns;
		r.n_kernels = tm.n_kernels;
		cw_reply(&r);
	}
}
