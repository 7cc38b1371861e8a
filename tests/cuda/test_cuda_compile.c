/* test_cuda_compile.c — the NVRTC compile path, no GPU needed (suite
 * 'harness'): every smoke-cuda sample gets the compile verdict its sidecar
 * records ("expect_compile") for sm_90; the cache answers the second
 * compile; a compile that runs past its timeout is killed and reported; a
 * launch naming a missing kernel is a format_error; the parallel pool
 * compiles a batch; the cubin reader survives garbage. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "checks/check.h"
#include "checks/cuda_build.h"
#include "common/sha256.h"
#include "cuda/cuda_compile.h"
#include "cand/cand.h"
#include "cuda/cuda_worker.h"

#ifndef SRC_ROOT
#error SRC_ROOT must name the source tree
#endif

static char cache_dir[256];

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long sz;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)sz + 1);
	if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
		free(b);
		b = NULL;
	}
	if (b)
		b[sz] = '\0';
	*n = (size_t)sz;
	fclose(f);
	return b;
}

/* Loads the task a candidate names ("// @task smoke/relu"). */
static struct task *load_task_of(const char *src)
{
	const char *p = strstr(src, "@task ");
	char name[128], path[512];
	struct cr_err e;
	struct task *t = calloc(1, sizeof *t);
	assert_non_null(p);
	assert_int_equal(sscanf(p + 6, "%127s", name), 1);
	snprintf(path, sizeof path, "%s/data/tasks/%s.json", SRC_ROOT, name);
	cr_err_init(&e);
	if (task_load(t, path, name, &e))
		fail_msg("task %s: %s", name, e.msg);
	return t;
}

static enum cr_status check_src(const char *path, const char *src, size_t len,
				const struct cr_cuda_opts *o, struct cr_result *r)
{
	struct task *t = load_task_of(src);
	struct cr_err e;
	cr_err_init(&e);
	enum cr_status st = check_cuda_compile(t, path, src, len, o, r, &e);
	if (st)
		print_message("environment: %s\n", e.msg);
	task_release(t);
	free(t);
	return st;
}

static void samples_expected(void **state)
{
	char dir[512];
	struct dirent **ents;
	int n, checked = 0;
	struct cr_cuda_opts o = { .arch = "sm_90", .timeout_s = 120, .cache_dir = cache_dir };
	(void)state;

	snprintf(dir, sizeof dir, "%s/data/candidates/smoke-cuda", SRC_ROOT);
	n = scandir(dir, &ents, NULL, alphasort);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		char cu[1024], js[1024];
		size_t len = strlen(ents[i]->d_name), sl = 0;
		if (len > 3 && !strcmp(ents[i]->d_name + len - 3, ".cu")) {
			struct cr_result r;
			json_error_t je;
			json_t *side;
			const char *want;
			char *src;
			snprintf(cu, sizeof cu, "%s/%s", dir, ents[i]->d_name);
			snprintf(js, sizeof js, "%s/%.*s.json", dir, (int)(len - 3), ents[i]->d_name);
			side = json_load_file(js, 0, &je);
			if (!side)
				fail_msg("%s: %s", js, je.text);
			want = json_string_value(json_object_get(side, "expect_compile"));
			assert_non_null(want);
			assert_non_null(json_string_value(json_object_get(side, "expect")));
			src = slurp(cu, &sl);
			assert_non_null(src);
			assert_int_equal(check_src(cu, src, sl, &o, &r), CR_OK);
			/* the library says ok (the build may run); a compile-only row says compiled */
			if (r.status == CHECK_OK)
				r.status = CHECK_COMPILED;
			print_message("%-24s %-14s %s\n", ents[i]->d_name, check_verdict_name(r.status), r.detail);
			if (strcmp(check_verdict_name(r.status), want))
				fail_msg("%s: got %s, expected %s (%s)", ents[i]->d_name,
					 check_verdict_name(r.status), want, r.detail);
			if (r.status == CHECK_COMPILED) {
				assert_non_null(strstr(r.detail, "compiled for sm_90: "));
				assert_non_null(strstr(r.detail, " regs, "));
				assert_non_null(strstr(r.detail, "not run (compile only)"));
			}
			if (r.status == CHECK_COMPILE_ERROR) {
				/* names the candidate and its line, not NVRTC's name for it */
				char want_prefix[1100];
				snprintf(want_prefix, sizeof want_prefix, "%s:8: ", cu);
				assert_non_null(strstr(r.detail, want_prefix));
				assert_null(strstr(r.detail, "cand.cu"));
				assert_non_null(strstr(r.detail, "undeclared_zero"));
			}
			free(src);
			json_decref(side);
			checked++;
		}
		free(ents[i]);
	}
	free(ents);
	assert_true(checked >= 7 * 2 + 7);
}

/* The batch API on every sample (cache hits after samples_expected, plus a
 * fresh arch so the pool compiles for real) agrees with the one-by-one API. */
static void batch_matches(void **state)
{
	char dir[512];
	struct dirent **ents;
	int n, m = 0;
	struct check_cuda_job *jobs;
	char **srcs;
	struct task **tasks;
	char (*paths)[600];
	struct cr_err e;
	(void)state;

	snprintf(dir, sizeof dir, "%s/data/candidates/smoke-cuda", SRC_ROOT);
	n = scandir(dir, &ents, NULL, alphasort);
	assert_true(n > 0);
	jobs = calloc((size_t)n, sizeof *jobs);
	srcs = calloc((size_t)n, sizeof *srcs);
	tasks = calloc((size_t)n, sizeof *tasks);
	paths = calloc((size_t)n, sizeof *paths);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(ents[i]->d_name), sl = 0;
		if (len > 3 && !strcmp(ents[i]->d_name + len - 3, ".cu")) {
			snprintf(paths[m], sizeof paths[m], "%s/%s", dir, ents[i]->d_name);
			srcs[m] = slurp(paths[m], &sl);
			tasks[m] = load_task_of(srcs[m]);
			jobs[m] = (struct check_cuda_job){ .t = tasks[m], .path = paths[m], .src = srcs[m], .len = sl };
			m++;
		}
		free(ents[i]);
	}
	free(ents);
	for (int pass = 0; pass < 2; pass++) {
		struct cr_cuda_opts o = { .arch = pass ? "sm_89" : "sm_90", .timeout_s = 120,
					  .cache_dir = cache_dir };
		/* each call takes the parsed directives over: parse afresh per pass */
		for (int i = 0; i < m; i++) {
			cr_err_init(&e);
			memset(&jobs[i].cand, 0, sizeof jobs[i].cand);
			assert_int_equal(cr_cand_parse(&jobs[i].cand, paths[i], srcs[i], jobs[i].len, &e), CR_OK);
			cr_result_init(&jobs[i].r);
			cr_sha256_hex(srcs[i], jobs[i].len, jobs[i].r.sha256);
		}
		cr_err_init(&e);
		assert_int_equal(check_cuda_compile_many(jobs, m, &o, 0, &e), CR_OK);
		for (int i = 0; i < m; i++) {
			struct cr_result one;
			assert_int_equal(check_src(paths[i], srcs[i], jobs[i].len, &o, &one), CR_OK);
			assert_int_equal(jobs[i].r.status, one.status);
			assert_string_equal(jobs[i].r.detail, one.detail);
			assert_string_equal(jobs[i].r.sha256, one.sha256);
		}
	}
	for (int i = 0; i < m; i++) {
		free(srcs[i]);
		if (tasks[i])
			task_release(tasks[i]);
		free(tasks[i]);
	}
	free(jobs);
	free(srcs);
	free(tasks);
	free(paths);
}

static const char relu_src[] =
	"// @task smoke/relu\n"
	"// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)\n"
	"extern \"C\" __global__ void relu_fwd(const float *x, float *y, int n)\n"
	"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f; }\n";

static void cache_hit(void **state)
{
	struct cr_cuda_opts o = { .arch = "sm_90", .timeout_s = 120, .cache_dir = cache_dir };
	struct cr_cuda_build a, b;
	struct cr_err e;
	char src[1024];
	(void)state;

	/* a source no other test compiles: the first compile is a miss */
	snprintf(src, sizeof src, "%s// unique %ld\n", relu_src, (long)getpid());
	cr_err_init(&e);
	assert_int_equal(cr_cuda_compile(src, strlen(src), &o, &a, &e), CR_OK);
	assert_int_equal(a.res, CR_COMPILED);
	assert_false(a.cached);
	assert_int_equal(cr_cuda_compile(src, strlen(src), &o, &b, &e), CR_OK);
	assert_int_equal(b.res, CR_COMPILED);
	assert_true(b.cached);
	assert_string_equal(a.key, b.key);
	assert_int_equal(a.cubin_len, b.cubin_len);
	assert_memory_equal(a.cubin, b.cubin, a.cubin_len);
	/* what the cubin says about the kernel */
	const struct cr_cubin_kernel *k = cr_cubin_find(&b.info, "relu_fwd");
	assert_non_null(k);
	assert_true(k->regs > 0 && k->regs < 64);
	assert_int_equal(k->spill_stores, 0);
	assert_int_equal(k->n_params, 3);
	assert_int_equal(k->param_size[0], 8);
	assert_int_equal(k->param_size[1], 8);
	assert_int_equal(k->param_size[2], 4);
	/* another arch is another key */
	o.arch = "sm_80";
	struct cr_cuda_build c;
	assert_int_equal(cr_cuda_compile(src, strlen(src), &o, &c, &e), CR_OK);
	assert_int_equal(c.res, CR_COMPILED);
	assert_false(c.cached);
	assert_string_not_equal(a.key, c.key);
	cr_cuda_build_release(&a);
	cr_cuda_build_release(&b);
	cr_cuda_build_release(&c);
}

/* constexpr work that keeps NVRTC busy for seconds */
static const char slow_src[] =
	"// @task smoke/relu\n"
	"// @forward slow<<<1, 1>>>(y)\n"
	"constexpr long long spin(long long n, long long k)\n"
	"{ long long s = k; for (long long i = 0; i < n; i++) s = (s * 31 + i) % 1000003; return s; }\n"
	"template <int I> struct S { static constexpr long long v = spin(100000, I) + S<I - 1>::v; };\n"
	"template <> struct S<0> { static constexpr long long v = 0; };\n"
	"extern \"C\" __global__ void slow(float *y) { y[0] = (float)S<120>::v; }\n";

static void timeout_killed(void **state)
{
	struct cr_cuda_opts o = { .arch = "sm_90", .timeout_s = 1.0, .cache_dir = cache_dir };
	struct cr_result r;
	(void)state;

	assert_int_equal(check_src("slow.cu", slow_src, strlen(slow_src), &o, &r), CR_OK);
	assert_int_equal(r.status, CHECK_COMPILE_ERROR);
	print_message("%s\n", r.detail);
	assert_non_null(strstr(r.detail, "slow.cu: NVRTC did not finish within 1 s"));
	/* a timeout is never cached: the same compile times out again */
	struct cr_cuda_build b;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(cr_cuda_compile(slow_src, strlen(slow_src), &o, &b, &e), CR_OK);
	assert_int_equal(b.res, CR_COMPILE_TIMEOUT);
	assert_false(b.cached);
	assert_true(b.seconds < 5.0);
	cr_cuda_build_release(&b);
}

static void missing_kernel(void **state)
{
	static const char src[] =
		"// @task smoke/relu\n"
		"// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)\n"
		"// @forward nosuch<<<cdiv(N, 256), 256>>>(x, y, N)\n"
		"extern \"C\" __global__ void relu_fwd(const float *x, float *y, int n)\n"
		"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f; }\n";
	static const char argc_src[] =
		"// @task smoke/relu\n"
		"// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y)\n"
		"extern \"C\" __global__ void relu_fwd(const float *x, float *y, int n)\n"
		"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f; }\n";
	struct cr_cuda_opts o = { .arch = "sm_90", .timeout_s = 120, .cache_dir = cache_dir };
	struct cr_result r;
	(void)state;

	assert_int_equal(check_src("m.cu", src, strlen(src), &o, &r), CR_OK);
	assert_int_equal(r.status, CHECK_FORMAT_ERROR);
	assert_string_equal(r.detail, "m.cu:3: no extern \"C\" __global__ kernel named 'nosuch' in the compiled candidate");
	assert_int_equal(check_src("a.cu", argc_src, strlen(argc_src), &o, &r), CR_OK);
	assert_int_equal(r.status, CHECK_FORMAT_ERROR);
	assert_string_equal(r.detail, "a.cu:2: kernel 'relu_fwd' takes 3 parameters, the launch passes 2");
	/* a CPU-form candidate given to the cuda path */
	static const char cpu_src[] = "// @task smoke/relu\n// @forward relu_fwd(x, y, N)\nvoid relu_fwd() {}\n";
	assert_int_equal(check_src("c.c", cpu_src, strlen(cpu_src), &o, &r), CR_OK);
	assert_int_equal(r.status, CHECK_FORMAT_ERROR);
	assert_non_null(strstr(r.detail, "c.c: CPU launch form"));
}

static void parallel_pool(void **state)
{
	struct cr_cuda_opts o = { .arch = "sm_90", .timeout_s = 120, .cache_dir = "" };
	struct cr_cuda_job jobs[4];
	char srcs[4][1200];
	struct cr_err e;
	(void)state;

	for (int i = 0; i < 4; i++) {
		if (i == 2)
			snprintf(srcs[i], sizeof srcs[i], "%s int broken = ;\n", relu_src);
		else
			snprintf(srcs[i], sizeof srcs[i], "%s// variant %d\n", relu_src, i);
		jobs[i].src = srcs[i];
		jobs[i].len = strlen(srcs[i]);
	}
	cr_err_init(&e);
	assert_int_equal(cr_cuda_compile_many(jobs, 4, &o, 2, &e), CR_OK);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(jobs[i].b.res, i == 2 ? CR_COMPILE_FAILED : CR_COMPILED);
		assert_false(jobs[i].b.cached);
		if (i != 2)
			assert_non_null(cr_cubin_find(&jobs[i].b.info, "relu_fwd"));
		cr_cuda_build_release(&jobs[i].b);
	}
	/* a bad arch is a usage error, not a crash */
	o.arch = "sm_9x; rm -rf";
	cr_err_init(&e);
	assert_int_equal(cr_cuda_compile_many(jobs, 1, &o, 1, &e), CR_EUSAGE);
	cr_cuda_build_release(&jobs[0].b);
}

static void cubin_garbage(void **state)
{
	struct cr_cuda_opts o = { .arch = "sm_90", .timeout_s = 120, .cache_dir = cache_dir };
	struct cr_cuda_build b;
	struct cr_cubin_info info;
	struct cr_err e;
	unsigned char junk[4096];
	(void)state;

	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	assert_false(cr_cubin_parse(junk, sizeof junk, &info));
	assert_false(cr_cubin_parse(NULL, 0, &info));
	cr_err_init(&e);
	assert_int_equal(cr_cuda_compile(relu_src, strlen(relu_src), &o, &b, &e), CR_OK);
	assert_int_equal(b.res, CR_COMPILED);
	/* every truncation and many single-byte corruptions: no crash */
	unsigned char *copy = malloc(b.cubin_len);
	for (size_t n = 0; n < b.cubin_len; n += 97)
		cr_cubin_parse(b.cubin, n, &info);
	for (size_t i = 0; i < b.cubin_len; i += 13) {
		memcpy(copy, b.cubin, b.cubin_len);
		copy[i] ^= 0xff;
		if (cr_cubin_parse(copy, b.cubin_len, &info))
			assert_true(info.n_kernels <= CR_CUBIN_MAX_KERNELS);
	}
	free(copy);
	cr_cuda_build_release(&b);
}

/* The launch table the orchestrator writes for the CUDA worker: sizes
 * evaluated and range-checked, arguments resolved (no GPU needed). */
static void launch_table(void **state)
{
	static const char src[] =
		"// @task smoke/relu\n"
		"// @forward k<<<(cdiv(N, 256), 2, 1), (128, 2), 4096>>>(x, y, N, 0.5)\n"
		"// @forward k2<<<N, 1024>>>(y, x, N)\n"
		"// @backward k3<<<70000 * N, 1>>>(x, dy, dx, N)\n";
	static const char big[] = "// @task smoke/relu\n// @forward k<<<1, (64, 32)>>>(x, y, N)\n";
	struct task *t = load_task_of(src);
	struct cr_cand cand;
	struct cr_plan *p = calloc(1, sizeof *p);
	struct cr_cuda_ltab *lt = calloc(1, sizeof *lt);
	struct task_dimset d = { { 1000 } };
	int64_t vals[CR_MAX_EXPRS];
	struct cr_err e;
	(void)state;

	cr_err_init(&e);
	memset(&cand, 0, sizeof cand);
	assert_int_equal(cr_cand_parse(&cand, "t.cu", src, strlen(src), &e), CR_OK);
	assert_int_equal(cr_plan_bind(p, t, &cand, "t.cu", &e), CR_OK);
	assert_int_equal(cr_plan_eval(p, &d, vals, &e), CR_OK);
	assert_int_equal(cr_cuda_ltab_fill(lt, p, CR_FWD, vals, "/x/cand.cubin", "t.cu", &e), CR_OK);
	assert_int_equal(lt->n_launch, 2);
	assert_string_equal(lt->l[0].fn, "k");
	assert_int_equal(lt->l[0].grid[0], 4);
	assert_int_equal(lt->l[0].grid[1], 2);
	assert_int_equal(lt->l[0].block[0], 128);
	assert_int_equal(lt->l[0].block[1], 2);
	assert_int_equal(lt->l[0].block[2], 1);
	assert_int_equal(lt->l[0].smem, 4096);
	assert_int_equal(lt->l[0].n_args, 4);
	assert_int_equal(lt->args[lt->l[0].arg0 + 0].kind, CR_CUDA_ARG_PTR);
	assert_int_equal(lt->args[lt->l[0].arg0 + 1].slot, 1);
	assert_int_equal(lt->args[lt->l[0].arg0 + 2].kind, CR_CUDA_ARG_INT);
	assert_int_equal(lt->args[lt->l[0].arg0 + 2].i, 1000);
	assert_int_equal(lt->args[lt->l[0].arg0 + 3].kind, CR_CUDA_ARG_FLOAT);
	assert_true(lt->args[lt->l[0].arg0 + 3].f == 0.5);
	assert_int_equal(lt->l[1].smem, 0);
	assert_int_equal(lt->l[1].block[0], 1024);
	/* 70000 * N blocks is fine in x; the backward's table is separate */
	assert_int_equal(cr_cuda_ltab_fill(lt, p, CR_BWD, vals, "/x/cand.cubin", "t.cu", &e), CR_OK);
	assert_int_equal(lt->l[0].grid[0], 70000000u);
	cr_plan_release(p);

	/* a block of 64 x 32 = 2048 threads */
	memset(&cand, 0, sizeof cand);
	assert_int_equal(cr_cand_parse(&cand, "b.cu", big, strlen(big), &e), CR_OK);
	assert_int_equal(cr_plan_bind(p, t, &cand, "b.cu", &e), CR_OK);
	assert_int_equal(cr_plan_eval(p, &d, vals, &e), CR_OK);
	assert_int_equal(cr_cuda_ltab_fill(lt, p, CR_FWD, vals, "c", "b.cu", &e), CR_EINPUT);
	assert_string_equal(e.msg, "b.cu:2: a block of 2048 threads (at most 1024)");
	cr_plan_release(p);
	free(p);
	free(lt);
	task_release(t);
	free(t);
}

static int setup(void **state)
{
	(void)state;
	snprintf(cache_dir, sizeof cache_dir, "%s/crucible-cuda-test-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(cache_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[400];
	(void)state;
	/* the directory is ours and freshly made: remove its files */
	DIR *d = opendir(cache_dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		snprintf(cmd, sizeof cmd, "%s/%s", cache_dir, de->d_name);
		unlink(cmd);
	}
	if (d)
		closedir(d);
	rmdir(cache_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(samples_expected),
		cmocka_unit_test(batch_matches),
		cmocka_unit_test(cache_hit),
		cmocka_unit_test(timeout_killed),
		cmocka_unit_test(missing_kernel),
		cmocka_unit_test(parallel_pool),
		cmocka_unit_test(cubin_garbage),
		cmocka_unit_test(launch_table),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
