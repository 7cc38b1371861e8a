/* test_fakecuda.c — suite 'harness': the cuda backend's launch path on the
 * fake CUDA driver (tests/cuda/fakecuda), no GPU needed. CRUCIBLE_LIBCUDA
 * names libfakecuda.so; each candidate is compiled by NVRTC for sm_90 (the
 * fake's arch) and its emulated build is written where the fake loads it.
 * Checks: the device the harness sees; cuGetProcAddress_v2's answers; relu
 * through the real worker (cr_cuda_worker_init/run/time) on a guarded
 * layout: exact output, input and guards intact, the emulated kernels
 * unloaded on release; a 2048-thread block fails cleanly; a parameter
 * mismatch is a format_error; a garbage image is an error with a JIT log;
 * and the driver calls directly: parameter info, attributes, shared memory
 * opt-in, bounds-checked copies and memsets, events, float parameters.
 * Exits 77 without a C++20 compiler (the emulation needs one). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "checks/check.h"
#include "fakecuda/fakecuda_kernels.h"
#include "cand/cand.h"
#include "cuda/cuda_compile.h"
#include "cuda/cuda_drv.h"
#include "cuda/cuda_drv_impl.h"
#include "cuda/cuda_worker.h"
#include "cand/plan.h"

#ifndef SRC_ROOT
#error SRC_ROOT must name the source tree
#endif
#ifndef FAKECUDA_LIB
#error FAKECUDA_LIB must name libfakecuda.so
#endif

#define SAMPLES SRC_ROOT "/data/candidates/smoke-cuda/"

static char tmpdir[256], kpath[4096], cur_cand[600];
static const struct cr_cu *cu;

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long sz;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (sz >= 0 && (b = malloc((size_t)sz + 1)) && fread(b, 1, (size_t)sz, f) == (size_t)sz) {
		b[sz] = '\0';
		*n = (size_t)sz;
	} else {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static void spit(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* NVRTC for sm_90 into b, and the candidate's emulation into the fake's
 * kernels file (skipped when that candidate is already there). */
static void prepare(const char *file, struct cr_cuda_build *b)
{
	struct cr_cuda_opts o = { .arch = "sm_90", .timeout_s = 120, .cache_dir = "" };
	struct cr_err e;
	char why[1024];
	size_t len;
	char *src = slurp(file, &len);

	assert_non_null(src);
	cr_err_init(&e);
	if (cr_cuda_compile(src, len, &o, b, &e))
		fail_msg("NVRTC: %s", e.msg);
	free(src);
	if (b->res != CR_COMPILED)
		fail_msg("%s did not compile: %s", file, b->log);
	if (strcmp(cur_cand, file)) {
		cur_cand[0] = '\0';
		if (fakecuda_build_kernels(SRC_ROOT, file, &b->info, kpath, why, sizeof why))
			fail_msg("%s", why);
		snprintf(cur_cand, sizeof cur_cand, "%s", file);
	}
}

/* ---- a relu-task candidate through the worker, as test_cuda_run.c ---- */

struct run {
	struct task task;
	struct cr_plan plan;
	char *shm;
	size_t shm_size;
	int64_t n;
	int64_t vals[CR_MAX_EXPRS];
	char cubin_path[300];
	struct cr_cuda_worker w;
	char *ref;              /* the region as laid out, before any call */
	bool have_w;
};

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* Parses, binds and compiles file, lays out the forward buffers for n
 * elements (each slot between guard zones, x set, y poisoned), fills the
 * launch table and starts the worker. cubin_override: load that file as
 * the module instead of NVRTC's cubin. Returns the worker's status. */
static enum cr_status setup_run(struct run *r, const char *file, int64_t n, const char *cubin_override,
				enum check_verdict *v, struct cr_err *e)
{
	char tpath[512], *src;
	size_t len;
	struct cr_cand cand;
	struct cr_cuda_build b;
	struct task_dimset d = { { 0 } };
	enum cr_status st;

	memset(r, 0, sizeof *r);
	r->n = n;
	snprintf(tpath, sizeof tpath, "%s/data/tasks/smoke/relu.json", SRC_ROOT);
	assert_int_equal(task_load(&r->task, tpath, "smoke/relu", e), CR_OK);
	assert_non_null(src = slurp(file, &len));
	memset(&cand, 0, sizeof cand);
	assert_int_equal(cr_cand_parse(&cand, file, src, len, e), CR_OK);
	assert_int_equal(cr_plan_bind(&r->plan, &r->task, &cand, file, e), CR_OK);
	free(src);
	d.v[0] = n;
	assert_int_equal(cr_plan_eval(&r->plan, &d, r->vals, e), CR_OK);
	cr_cuda_build_init(&b);
	prepare(file, &b);
	snprintf(r->cubin_path, sizeof r->cubin_path, "%s/cand.cubin", tmpdir);
	spit(r->cubin_path, b.cubin, b.cubin_len);
	cr_cuda_build_release(&b);

	const struct cr_pstage *stg = &r->plan.st[CR_FWD];
	size_t off = CR_SHM_HDR, offs[CR_MAX_SLOTS];
	assert_int_equal(stg->n_slots, 2);
	for (int k = 0; k < stg->n_slots; k++) {
		off = align256(off + CR_GUARD);
		offs[k] = off;
		off += (size_t)cr_plan_slot_numel(&r->plan, CR_FWD, k, &d, r->vals) * 4;
	}
	r->shm_size = align256(off + CR_GUARD);
	/* C11: the size must be a multiple of the alignment */
	assert_non_null(r->shm = aligned_alloc(4096, (r->shm_size + 4095) & ~(size_t)4095));
	memset(r->shm, 0, CR_SHM_HDR);
	struct cr_shm_hdr *h = (struct cr_shm_hdr *)r->shm;
	h->magic = CR_SHM_MAGIC;
	h->stage = CR_FWD;
	h->n_slots = (uint32_t)stg->n_slots;
	h->n_launch = (uint32_t)stg->n_launch;
	h->n_sets = 1;
	h->dims[0] = n;
	for (int k = 0; k < stg->n_slots; k++)
		h->off[0][k] = offs[k];
	check_fill_pattern(r->shm + CR_SHM_HDR, r->shm_size - CR_SHM_HDR, 0x6a6a);
	float *x = (float *)(r->shm + offs[0]);
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)((i * 7919 % 2001) - 1000) / 100.0f;
	check_poison(r->shm + offs[1], (size_t)n * 4, 0, 0x1234);
	assert_non_null(r->ref = malloc(r->shm_size));
	memcpy(r->ref, r->shm, r->shm_size);
	assert_int_equal(cr_cuda_ltab_fill((struct cr_cuda_ltab *)(r->shm + CR_CUDA_LTAB_OFF), &r->plan, CR_FWD,
					   r->vals, cubin_override ? cubin_override : r->cubin_path, file, e),
			 CR_OK);
	st = cr_cuda_worker_init(&r->w, r->shm, r->shm_size, v, e);
	r->have_w = true;
	return st;
}

static void teardown_run(struct run *r)
{
	if (r->have_w)
		cr_cuda_worker_release(&r->w);
	cr_plan_release(&r->plan);
	task_release(&r->task);
	free(r->shm);
	free(r->ref);
	unlink(r->cubin_path);
}

/* y == relu(x) exactly; x and everything outside y (guards) as laid out. */
static void check_relu(const struct run *r)
{
	const struct cr_shm_hdr *h = (const struct cr_shm_hdr *)r->shm;
	size_t y0 = h->off[0][1], y1 = y0 + (size_t)r->n * 4;
	const float *x = (const float *)(r->shm + h->off[0][0]), *y = (const float *)(r->shm + y0);
	for (int64_t i = 0; i < r->n; i++) {
		float xi = (float)((i * 7919 % 2001) - 1000) / 100.0f;
		if (x[i] != xi || y[i] != (xi > 0 ? xi : 0.0f))
			fail_msg("element %lld: x %g y %g, expected x %g y %g", (long long)i, x[i], y[i], xi,
				 xi > 0 ? xi : 0.0);
	}
	assert_memory_equal(r->shm + CR_SHM_HDR, r->ref + CR_SHM_HDR, y0 - CR_SHM_HDR);
	assert_memory_equal(r->shm + y1, r->ref + y1, r->shm_size - y1);
}

/* ---- tests ---- */

static void test_device(void **state)
{
	char why[256];
	struct cr_cuda_device d;
	struct cr_err e;
	(void)state;
	assert_true(cr_cuda_available(why, sizeof why));
	assert_non_null(strstr(why, "crucible fake GPU (CPU emulation) (sm_90), driver CUDA 13.0"));
	cr_err_init(&e);
	assert_int_equal(cr_cuda_device_info(0, &d, &e), CR_OK);
	assert_string_equal(d.arch, "sm_90");
	assert_string_equal(d.name, "crucible fake GPU (CPU emulation)");
	assert_int_equal(d.cc_major, 9);
	assert_int_equal(d.cc_minor, 0);
	assert_int_equal(d.l2_bytes, 4 << 20);
	assert_int_equal(d.smem_optin, 227 * 1024);
	assert_true(d.sm_count > 0 && d.total_mem > ((size_t)1 << 30) && d.clock_khz > 0);
	assert_int_equal(d.driver_version, 13000);
	assert_int_equal(cr_cuda_device_info(1, &d, &e), CR_EENV);
	assert_non_null(strstr(e.msg, "no CUDA device 1 (1 visible)"));
}

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void test_proc_address(void **state)
{
	void *lib = dlopen(FAKECUDA_LIB, RTLD_NOW | RTLD_LOCAL), *fn = (void *)1;
	CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
	get_proc_fn gp;
	(void)state;
	assert_non_null(lib);
	gp = (get_proc_fn)(uintptr_t)dlsym(lib, "cuGetProcAddress_v2");
	assert_non_null(gp);
	/* only the two entry points are exported */
	assert_null(dlsym(lib, "cuMemAlloc_v2"));
	assert_null(dlsym(lib, "cr_cubin_parse"));
	assert_int_equal(gp("cuNoSuchThing", &fn, 12000, 0, &q), CUDA_ERROR_NOT_FOUND);
	assert_null(fn);
	assert_int_equal(q, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	/* cuMemAlloc at 2.0 has a 32-bit CUdeviceptr: not this ABI */
	fn = (void *)1;
	assert_int_equal(gp("cuMemAlloc", &fn, 2000, 0, &q), CUDA_ERROR_NOT_FOUND);
	assert_null(fn);
	assert_int_equal(q, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	assert_int_equal(gp("cuMemAlloc", &fn, 3020, 0, &q), CUDA_SUCCESS);
	assert_non_null(fn);
	assert_int_equal(q, CU_GET_PROC_ADDRESS_SUCCESS);
	assert_int_equal(gp("cuMemAlloc", &fn, 14000, 0, &q), CUDA_ERROR_INVALID_VALUE);
	dlclose(lib);
	/* the harness's table is complete, the optional entry included */
	assert_non_null(cu);
	assert_non_null(cu->FuncGetParamInfo);
	assert_int_equal(cu->driver_version, 13000);
	const char *s = NULL;
	assert_int_equal(cu->GetErrorName(CUDA_ERROR_INVALID_IMAGE, &s), CUDA_SUCCESS);
	assert_string_equal(s, "CUDA_ERROR_INVALID_IMAGE");
	assert_int_equal(cu->GetErrorString(CUDA_ERROR_NOT_SUPPORTED, &s), CUDA_SUCCESS);
	assert_non_null(strstr(s, "float parameters"));
	assert_int_equal(cu->GetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	assert_null(s);
}

static void test_relu_exact(void **state)
{
	static const int64_t ns[] = { 10007, 7 };
	(void)state;
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		struct run r;
		struct cr_err e;
		enum check_verdict v = CHECK_VERDICT_COUNT;
		cr_err_init(&e);
		if (setup_run(&r, SAMPLES "relu_plain.cu", ns[i], NULL, &v, &e) || v != CHECK_OK)
			fail_msg("worker init: %s", e.msg);
		assert_int_equal(r.w.n_params[0], 3);
		assert_int_equal(r.w.param_size[0][0], 8);
		assert_int_equal(r.w.param_size[0][2], 4);
		for (int call = 0; call < 2; call++) {
			v = CHECK_VERDICT_COUNT;
			if (cr_cuda_worker_run(&r.w, r.shm, 0, &v, &e) || v != CHECK_OK)
				fail_msg("run: %s %s", check_verdict_name(v), e.msg);
			check_relu(&r);
			/* the host re-poisons y; the next call must write it again */
			memcpy(r.shm + CR_SHM_HDR, r.ref + CR_SHM_HDR, r.shm_size - CR_SHM_HDR);
		}
		teardown_run(&r);
	}
	/* cuModuleUnload dlclosed the emulation: the next candidate loads afresh */
	void *still = dlopen(kpath, RTLD_NOW | RTLD_NOLOAD);
	if (still)
		dlclose(still);
	assert_null(still);
}

static void test_relu_timed(void **state)
{
	struct run r;
	struct cr_err e;
	struct cr_cuda_timing tm;
	struct timespec t0, t1;
	enum check_verdict v = CHECK_VERDICT_COUNT;
	(void)state;
	cr_err_init(&e);
	if (setup_run(&r, SAMPLES "relu_plain.cu", 100003, NULL, &v, &e) || v != CHECK_OK)
		fail_msg("worker init: %s", e.msg);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cr_cuda_worker_time(&r.w, r.shm, 0, &tm, &v, &e) || v != CHECK_OK)
		fail_msg("time: %s %s", check_verdict_name(v), e.msg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	check_relu(&r);
	int64_t wall = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
	/* the events bracket the emulated kernel: inside the call's wall time */
	assert_true(tm.event_ns > 0);
	assert_true(tm.event_ns <= wall);
	assert_int_equal(tm.cupti_ns, -1);
	print_message("relu_plain N=100003 emulated: %.2f ms (events), %.2f ms (the whole timed call)\n",
		      (double)tm.event_ns / 1e6, (double)wall / 1e6);
	teardown_run(&r);
}

/* A launch the hardware refuses (ltab_fill would refuse it too; the table
 * is edited after filling) is a runtime_error, and nothing ran. */
static void test_block_too_large(void **state)
{
	struct run r;
	struct cr_err e;
	enum check_verdict v = CHECK_VERDICT_COUNT;
	(void)state;
	cr_err_init(&e);
	if (setup_run(&r, SAMPLES "relu_plain.cu", 4096, NULL, &v, &e) || v != CHECK_OK)
		fail_msg("worker init: %s", e.msg);
	struct cr_cuda_ltab *t = (struct cr_cuda_ltab *)(r.shm + CR_CUDA_LTAB_OFF);
	t->l[0].block[0] = 2048;
	t->l[0].grid[0] = 2;
	assert_int_equal(cr_cuda_worker_run(&r.w, r.shm, 0, &v, &e), CR_OK);
	assert_int_equal(v, CHECK_RUNTIME_ERROR);
	assert_non_null(strstr(e.msg, "launching relu_fwd: CUDA_ERROR_INVALID_VALUE"));
	assert_memory_equal(r.shm + CR_SHM_HDR, r.ref + CR_SHM_HDR, r.shm_size - CR_SHM_HDR);
	/* a block of 1024 x 2 x 1 is also 2048 threads */
	t->l[0].block[0] = 1024;
	t->l[0].block[1] = 2;
	cr_err_init(&e);
	assert_int_equal(cr_cuda_worker_run(&r.w, r.shm, 0, &v, &e), CR_OK);
	assert_int_equal(v, CHECK_RUNTIME_ERROR);
	/* and the worker still works afterwards (no sticky error for this) */
	t->l[0].block[0] = 256;
	t->l[0].block[1] = 1;
	t->l[0].grid[0] = 16;
	cr_err_init(&e);
	assert_int_equal(cr_cuda_worker_run(&r.w, r.shm, 0, &v, &e), CR_OK);
	assert_int_equal(v, CHECK_OK);
	check_relu(&r);
	teardown_run(&r);
}

static void test_param_mismatch(void **state)
{
	struct run r;
	struct cr_err e;
	enum check_verdict v = CHECK_VERDICT_COUNT;
	(void)state;
	cr_err_init(&e);
	if (setup_run(&r, SAMPLES "bad_param_mismatch.cu", 1000, NULL, &v, &e) || v != CHECK_OK)
		fail_msg("worker init: %s", e.msg);
	assert_int_equal(cr_cuda_worker_run(&r.w, r.shm, 0, &v, &e), CR_OK);
	assert_int_equal(v, CHECK_FORMAT_ERROR);
	assert_non_null(strstr(e.msg, "argument 3 of 'relu_fwd' is a buffer but the parameter is 4 bytes"));
	/* nothing launched, nothing copied back */
	assert_memory_equal(r.shm + CR_SHM_HDR, r.ref + CR_SHM_HDR, r.shm_size - CR_SHM_HDR);
	teardown_run(&r);
}

static void test_garbage_image(void **state)
{
	char bad[300], log[512] = "", info[512] = "";
	unsigned char junk[4096];
	struct run r;
	struct cr_err e;
	enum check_verdict v = CHECK_VERDICT_COUNT;
	CUcontext ctx;
	CUmodule m = NULL;
	(void)state;
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	/* through the worker: the module is rejected, an environment failure */
	snprintf(bad, sizeof bad, "%s/garbage.cubin", tmpdir);
	spit(bad, junk, sizeof junk);
	cr_err_init(&e);
	assert_int_equal(setup_run(&r, SAMPLES "relu_plain.cu", 64, bad, &v, &e), CR_EENV);
	assert_non_null(strstr(e.msg, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_IMAGE"));
	assert_non_null(strstr(r.w.jit_log, "not a 64-bit ELF cubin"));
	teardown_run(&r);
	unlink(bad);
	/* directly: the log buffers are filled and their used sizes written back */
	assert_int_equal(cu->DevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	assert_int_equal(cu->CtxSetCurrent(ctx), CUDA_SUCCESS);
	CUjit_option o[4] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
			      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES };
	void *vals[4] = { log, (void *)(uintptr_t)sizeof log, info, (void *)(uintptr_t)sizeof info };
	assert_int_equal(cu->ModuleLoadDataEx(&m, junk, 4, o, vals), CUDA_ERROR_INVALID_IMAGE);
	assert_non_null(strstr(log, "not a 64-bit ELF"));
	assert_int_equal((size_t)(uintptr_t)vals[1], strlen(log) + 1);
	/* an ELF that is not CUDA's */
	memcpy(junk, "\177ELF\2\1\1", 7);
	assert_int_equal(cu->ModuleLoadDataEx(&m, junk, 4, o, vals), CUDA_ERROR_INVALID_IMAGE);
	assert_non_null(strstr(log, "not a CUDA ELF"));
	assert_int_equal(cu->ModuleLoadDataEx(&m, junk, 1, o, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->DevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

/* The driver calls the worker makes, called directly on relu_plain. */
static void test_driver_calls(void **state)
{
	struct cr_cuda_build b;
	CUcontext ctx;
	CUmodule m;
	CUfunction f, g;
	CUstream s;
	CUevent e0, e1, e2;
	CUdeviceptr d, d2;
	size_t off, size;
	int v, n = 3000;
	float ms = -1, x[3000], y[3000];
	(void)state;
	cr_cuda_build_init(&b);
	prepare(SAMPLES "relu_plain.cu", &b);
	assert_int_equal(cu->DevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	/* no current context yet in this thread's sense: set it */
	assert_int_equal(cu->CtxSetCurrent(ctx), CUDA_SUCCESS);
	assert_int_equal(cu->CtxSetLimit(CU_LIMIT_STACK_SIZE, 4096), CUDA_SUCCESS);
	assert_int_equal(cu->ModuleLoadDataEx(&m, b.cubin, 0, NULL, NULL), CUDA_SUCCESS);
	cr_cuda_build_release(&b);
	assert_int_equal(cu->ModuleGetFunction(&f, m, "nope"), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(cu->ModuleGetFunction(&f, m, "relu_fwd"), CUDA_SUCCESS);
	assert_int_equal(cu->ModuleGetFunction(&g, m, "relu_fwd"), CUDA_SUCCESS);
	assert_ptr_equal(f, g);

	/* parameters and attributes from the cubin */
	static const size_t psize[3] = { 8, 8, 4 }, poff[3] = { 0, 8, 16 };
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(cu->FuncGetParamInfo(f, i, &off, &size), CUDA_SUCCESS);
		assert_int_equal(size, psize[i]);
		assert_int_equal(off, poff[i]);
	}
	assert_int_equal(cu->FuncGetParamInfo(f, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->FuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_SUCCESS);
	assert_true(v > 0 && v <= 255);
	assert_int_equal(cu->FuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), CUDA_SUCCESS);
	assert_int_equal(v, 1024);
	assert_int_equal(cu->FuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f), CUDA_SUCCESS);
	assert_int_equal(v, 48 * 1024);

	/* memory: bounds-checked copies and memsets */
	for (int i = 0; i < n; i++)
		x[i] = (float)(i % 17) - 8.5f;
	assert_int_equal(cu->MemAlloc(&d, 4 * (size_t)n), CUDA_SUCCESS);
	assert_int_equal(d % 256, 0);
	assert_int_equal(cu->MemAlloc(&d2, 4 * (size_t)n), CUDA_SUCCESS);
	assert_int_equal(cu->MemAlloc(&d2, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->MemAlloc(&d2, 4 * (size_t)n), CUDA_SUCCESS);
	assert_int_equal(cu->MemcpyHtoD(d, x, 4 * (size_t)n + 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->MemcpyHtoD(d + 4, x, 4 * (size_t)n), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->MemcpyHtoD((CUdeviceptr)(uintptr_t)x, x, 4), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->MemcpyHtoD(d, x, 4 * (size_t)n), CUDA_SUCCESS);
	assert_int_equal(cu->MemsetD32(d2, 0xdeadbeefu, (size_t)n), CUDA_SUCCESS);
	assert_int_equal(cu->MemsetD32(d2, 0, (size_t)n + 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->MemsetD8(d2 + 4 * (size_t)n - 1, 0x11, 1), CUDA_SUCCESS);
	assert_int_equal(cu->MemsetD8(d2 + 4 * (size_t)n - 1, 0x11, 2), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->MemcpyDtoH(y, d2, 4 * (size_t)n), CUDA_SUCCESS);
	{
		uint32_t w0, wn;
		memcpy(&w0, &y[0], 4);
		memcpy(&wn, &y[n - 1], 4);
		assert_int_equal(w0, 0xdeadbeefu);
		assert_int_equal(wn, 0x11adbeefu);
	}

	/* launches: the hardware's limits, then a real one between events */
	void *params[3] = { &d, &d2, &n };
	assert_int_equal(cu->StreamCreate(&s, CU_STREAM_DEFAULT), CUDA_SUCCESS);
	assert_int_equal(cu->EventCreate(&e0, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	assert_int_equal(cu->EventCreate(&e1, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	assert_int_equal(cu->EventCreate(&e2, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
	assert_int_equal(cu->EventElapsedTime(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
	assert_int_equal(cu->LaunchKernel(f, 12, 1, 1, 2048, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->LaunchKernel(f, 12, 1, 1, 16, 1, 65, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->LaunchKernel(f, 12, 65536, 1, 256, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->LaunchKernel(f, 0, 1, 1, 256, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->LaunchKernel(f, 12, 1, 1, 256, 1, 1, 0, (CUstream)(void *)x, params, NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cu->LaunchKernel((CUfunction)(void *)x, 12, 1, 1, 256, 1, 1, 0, s, params, NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cu->LaunchKernel(f, 12, 1, 1, 256, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	/* dynamic shared memory above 48 KiB needs the opt-in, up to 227 KiB */
	assert_int_equal(cu->LaunchKernel(f, 12, 1, 1, 256, 1, 1, 64 * 1024, s, params, NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 228 * 1024),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024),
			 CUDA_SUCCESS);
	assert_int_equal(cu->MemcpyDtoH(y, d2, 4 * (size_t)n), CUDA_SUCCESS);
	{
		uint32_t w5;
		memcpy(&w5, &y[5], 4);
		assert_int_equal(w5, 0xdeadbeefu);   /* no refused launch ran */
	}
	assert_int_equal(cu->EventRecord(e0, s), CUDA_SUCCESS);
	assert_int_equal(cu->LaunchKernel(f, 12, 1, 1, 256, 1, 1, 64 * 1024, s, params, NULL), CUDA_SUCCESS);
	assert_int_equal(cu->EventRecord(e1, s), CUDA_SUCCESS);
	assert_int_equal(cu->EventRecord(e2, NULL), CUDA_SUCCESS);
	assert_int_equal(cu->EventSynchronize(e1), CUDA_SUCCESS);
	assert_int_equal(cu->StreamSynchronize(s), CUDA_SUCCESS);
	assert_int_equal(cu->CtxSynchronize(), CUDA_SUCCESS);
	assert_int_equal(cu->EventElapsedTime(&ms, e0, e1), CUDA_SUCCESS);
	assert_true(ms > 0 && ms < 60000);
	assert_int_equal(cu->EventElapsedTime(&ms, e0, e2), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cu->MemcpyDtoH(y, d2, 4 * (size_t)n), CUDA_SUCCESS);
	for (int i = 0; i < n; i++)
		if (y[i] != (x[i] > 0 ? x[i] : 0.0f))
			fail_msg("y[%d] = %g for x %g", i, y[i], x[i]);

	assert_int_equal(cu->EventDestroy(e0), CUDA_SUCCESS);
	assert_int_equal(cu->EventDestroy(e1), CUDA_SUCCESS);
	assert_int_equal(cu->EventDestroy(e2), CUDA_SUCCESS);
	assert_int_equal(cu->EventDestroy(e2), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cu->StreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cu->MemFree(d), CUDA_SUCCESS);
	assert_int_equal(cu->MemFree(d), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cu->MemcpyHtoD(d, x, 4), CUDA_ERROR_INVALID_VALUE);   /* freed */
	assert_int_equal(cu->MemFree(d2), CUDA_SUCCESS);
	assert_int_equal(cu->ModuleUnload(m), CUDA_SUCCESS);
	assert_int_equal(cu->ModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cu->FuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cu->DevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	/* the primary context is inactive now */
	assert_int_equal(cu->MemAlloc(&d, 64), CUDA_ERROR_INVALID_CONTEXT);
}

/* A float parameter cannot travel through the emulation's all-integer
 * call: the fake refuses the launch instead of running it with garbage. */
static void test_float_param(void **state)
{
	static const char src[] =
		"extern \"C\" __global__ void scale(float *y, float a, int n)\n"
		"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= a; }\n"
		"extern \"C\" __global__ void fill(int *y, long long v, int n)\n"
		"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = (int)(v >> 32) + i; }\n";
	char file[300];
	struct cr_cuda_build b;
	CUcontext ctx;
	CUmodule m;
	CUfunction f, g;
	CUdeviceptr d;
	float a = 2.0f;
	long long big = 5ll << 32;
	int n = 40, out[40];
	(void)state;
	snprintf(file, sizeof file, "%s/floatparam.cu", tmpdir);
	spit(file, src, sizeof src - 1);
	cr_cuda_build_init(&b);
	prepare(file, &b);
	assert_int_equal(cu->DevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	assert_int_equal(cu->CtxSetCurrent(ctx), CUDA_SUCCESS);
	assert_int_equal(cu->ModuleLoadDataEx(&m, b.cubin, 0, NULL, NULL), CUDA_SUCCESS);
	cr_cuda_build_release(&b);
	assert_int_equal(cu->ModuleGetFunction(&f, m, "scale"), CUDA_SUCCESS);
	assert_int_equal(cu->ModuleGetFunction(&g, m, "fill"), CUDA_SUCCESS);
	assert_int_equal(cu->MemAlloc(&d, sizeof out), CUDA_SUCCESS);
	void *pf[3] = { &d, &a, &n }, *pg[3] = { &d, &big, &n };
	assert_int_equal(cu->LaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, pf, NULL), CUDA_ERROR_NOT_SUPPORTED);
	/* a 64-bit integer goes through whole */
	assert_int_equal(cu->LaunchKernel(g, 1, 1, 1, 64, 1, 1, 0, NULL, pg, NULL), CUDA_SUCCESS);
	assert_int_equal(cu->MemcpyDtoH(out, d, sizeof out), CUDA_SUCCESS);
	for (int i = 0; i < n; i++)
		assert_int_equal(out[i], 5 + i);
	/* replacing the kernels file while a module still holds the old copy:
	 * refused (dlopen would hand back the old code), with a log */
	{
		char log[512] = "";
		CUmodule m2 = NULL;
		CUjit_option o[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
		void *vals[2] = { log, (void *)(uintptr_t)sizeof log };
		cr_cuda_build_init(&b);
		prepare(SAMPLES "relu_plain.cu", &b);
		assert_int_equal(cu->ModuleLoadDataEx(&m2, b.cubin, 2, o, vals), CUDA_ERROR_SHARED_OBJECT_INIT_FAILED);
		assert_non_null(strstr(log, "was replaced while an earlier copy is still loaded"));
		assert_int_equal(cu->ModuleUnload(m), CUDA_SUCCESS);
		assert_int_equal(cu->ModuleLoadDataEx(&m2, b.cubin, 0, NULL, NULL), CUDA_SUCCESS);
		assert_int_equal(cu->ModuleGetFunction(&f, m2, "relu_fwd"), CUDA_SUCCESS);
		assert_int_equal(cu->ModuleGetFunction(&f, m2, "scale"), CUDA_ERROR_NOT_FOUND);
		cr_cuda_build_release(&b);
	}
	assert_int_equal(cu->DevicePrimaryCtxRelease(0), CUDA_SUCCESS);   /* frees d and m2 */
	unlink(file);
}

static int group_setup(void **state)
{
	char why[256];
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "%s/crucible-fakecuda-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	if (fakecuda_kernels_path(FAKECUDA_LIB, kpath, sizeof kpath))
		return -1;
	if (!(cu = cr_cu_load(why, sizeof why))) {
		print_error("cr_cu_load: %s\n", why);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(kpath);
	rmdir(tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device),
		cmocka_unit_test(test_proc_address),
		cmocka_unit_test(test_relu_exact),
		cmocka_unit_test(test_relu_timed),
		cmocka_unit_test(test_block_too_large),
		cmocka_unit_test(test_param_mismatch),
		cmocka_unit_test(test_garbage_image),
		cmocka_unit_test(test_driver_calls),
		cmocka_unit_test(test_float_param),
	};
#if !defined(__x86_64__)
	printf("skip: the emulation's calling trick needs x86-64\n");
	return 77;
#endif
	/* the fake driver, whatever the environment said (before any cr_cu_load) */
	setenv("CRUCIBLE_LIBCUDA", FAKECUDA_LIB, 1);
	/* the emulated kernels need a C++20 compiler */
	{
		const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "c++";
		char cmd[512];
		snprintf(cmd, sizeof cmd, "echo '#include <barrier>' | %s -std=c++20 -fsyntax-only -x c++ - 2>/dev/null", cxx);
		if (system(cmd)) {
			printf("skip: no C++20 compiler for the emulated kernels (set CXX)\n");
			return 77;
		}
	}
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
