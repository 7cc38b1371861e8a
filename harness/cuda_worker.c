/* cuda_worker.c — launch table (orchestrator side) and the device side of a
 * CUDA candidate's worker: module, parameters, mirror, launches. NOT RUN on
 * a GPU yet: it compiles and its logic follows the driver API documentation. */
#include "harness/cuda_worker.h"
#include "harness/cuda_cubin.h"
#include "harness/cuda_drv_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		for (int a = 0; a < l->n_args; a++) {
			const struct cr_parg *pa = &l->args[a];
			struct cr_cuda_larg *x = &r->args[a];
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
	return t->magic == CR_CUDA_LTAB_MAGIC && t->n_launch <= CR_MAX_LAUNCH ? t : NULL;
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
		while (n < CR_MAX_ARGS + 1 &&
		       cu->FuncGetParamInfo((CUfunction)w->fn[i], (size_t)n, &off, &size) == CUDA_SUCCESS) {
			if (n < CR_MAX_ARGS)
				w->param_size[i][n] = (uint16_t)size;
			n++;
		}
		w->n_params[i] = n;
		return;
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
	CU_CHECK(cu->Init(0));
	CU_CHECK(cu->DeviceGet(&dev, 0));
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
			 const struct cr_cuda_lrec *l, uint64_t vals[CR_MAX_ARGS], void *pv[CR_MAX_ARGS],
			 struct cr_err *err)
{
	if (w->n_params[i] >= 0 && (uint32_t)w->n_params[i] != l->n_args) {
		cr_errf(err, CR_EINPUT, "line %d: kernel '%s' takes %d parameters, the launch passes %u",
			l->line, l->fn, w->n_params[i], l->n_args);
		return false;
	}
	for (uint32_t a = 0; a < l->n_args && a < CR_MAX_ARGS; a++) {
		const struct cr_cuda_larg *x = &l->args[a];
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
	for (uint32_t i = 0; i < t->n_launch; i++) {
		const struct cr_cuda_lrec *l = &t->l[i];
		uint64_t vals[CR_MAX_ARGS];
		void *pv[CR_MAX_ARGS];
		if (!build_params(w, h, set, (int)i, l, vals, pv, err)) {
			*verdict = CHECK_FORMAT_ERROR;
			return CR_OK;
		}
		if (l->smem > SMEM_DEFAULT_MAX &&
		    (r = cu->FuncSetAttribute((CUfunction)w->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					      (int)l->smem)) != CUDA_SUCCESS) {
			*verdict = CHECK_RUNTIME_ERROR;
			char m[64];
			snprintf(m, sizeof m, "line %d: %u bytes of shared memory", l->line, l->smem);
			cr_cu_fail(cu, r, m, CR_EFAIL, err);
			return CR_OK;
		}
		r = cu->LaunchKernel((CUfunction)w->fn[i], l->grid[0], l->grid[1], l->grid[2], l->block[0],
				     l->block[1], l->block[2], l->smem, s, pv, NULL);
		if (r != CUDA_SUCCESS) {
			char m[128];
			*verdict = CHECK_RUNTIME_ERROR;
			snprintf(m, sizeof m, "line %d: launching %s", l->line, l->fn);
			cr_cu_fail(cu, r, m, CR_EFAIL, err);
			return CR_OK;
		}
	}
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
		if (w->stream)
			cu->StreamDestroy((CUstream)w->stream);
		if (w->mod)
			cu->ModuleUnload((CUmodule)w->mod);
		cu->DevicePrimaryCtxRelease((CUdevice)w->device);
	}
	memset(w, 0, sizeof *w);
}
