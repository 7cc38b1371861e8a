/* emu_samples.c — the smoke-cuda samples' arithmetic checked without a GPU:
 * each sample is compiled by the C++ compiler against cuda_emu.hpp (a CPU
 * emulation of the CUDA subset they use), run on every check shape of its
 * task under two init profiles, forward and backward, and compared with the
 * double reference exactly as verify.c does (tolerance plus twice the f32
 * baseline's error). Samples whose sidecar expects "ok" must pass; those
 * expecting "mismatch" or "degenerate" must not; the rest (crashes, timeouts,
 * guards, input writes) need the real worker and are skipped.
 * Exits 77 when no C++20 compiler is found, or off x86-64.
 *   emu_samples [FILE.cu ...]     (default: every sample) */
#include <dirent.h>
#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checks/check.h"
#include "cand/cand.h"
#include "cuda/cuda_worker.h"
#include "cand/plan.h"
#include "tasks/task_exec.h"
#include "tasks/task_gen.h"
#include "tasks/task_rng.h"

#ifndef SRC_ROOT
#error SRC_ROOT must name the source tree
#endif

typedef void (*emu_launch_fn)(void *fn, const unsigned *g, const unsigned *b, unsigned smem, const int64_t *a);

static char tmpdir[256];

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
	if ((b = malloc((size_t)sz + 1)) && fread(b, 1, (size_t)sz, f) == (size_t)sz)
		b[sz] = '\0';
	*n = (size_t)sz;
	fclose(f);
	return b;
}

/* Runs argv with output to log; killed after timeout_s. 0 on success. */
static int run(char *const argv[], const char *log, double timeout_s)
{
	struct timespec t0, t1;
	int status = 0, fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	if (fd < 0)
		return -1;
	fflush(NULL);
	if ((pid = fork()) == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd);
	if (pid < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((double)(t1.tv_sec - t0.tv_sec) > timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(10000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int build(const char *src, const char *out)
{
	char log[600];
	const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "c++";
	char *argv[] = { (char *)cxx, "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-fno-gnu-unique", "-include",
			 SRC_ROOT "/tests/cuda/emu/cuda_emu.hpp", "-x", "c++", (char *)src, "-o",
			 (char *)out, NULL };
	snprintf(log, sizeof log, "%s/build.log", tmpdir);
	return run(argv, log, 300);
}

/* Inputs and references of one case, as verify.c's case_generate. */
static void generate(const struct task *t, const struct task_dimset *d, enum task_profile prof,
		     uint64_t seed, bool bwd, struct task_exec *xd, struct task_exec *xf)
{
	struct cr_err e;
	cr_err_init(&e);
	task_exec_init(xd, t, d, true, bwd, &e);
	task_exec_init(xf, t, d, false, bwd, &e);
	for (int i = 0; i < t->n_tensors; i++) {
		if (t->tensors[i].role == TASK_OUTPUT)
			continue;
		task_gen_tensor(t, i, d, prof, seed, xd->v[i].d);
		for (int64_t k = 0; k < xd->v[i].n; k++)
			((float *)xf->v[i].d)[k] = (float)((double *)xd->v[i].d)[k];
	}
	task_exec_forward(xd);
	task_exec_forward(xf);
	if (!bwd)
		return;
	struct task_rng r;
	task_rng_seed(&r, task_mix(seed, 0xd0u));
	for (int i = 0; i < t->n_tensors; i++) {
		double *y = xd->v[i].d, *dy = xd->g[i].d;
		float *dyf = xf->g[i].d;
		if (t->tensors[i].role != TASK_OUTPUT)
			continue;
		task_gen_round(t->tensors[i].dtype, y, xd->v[i].n);
		for (int64_t k = 0; k < xd->v[i].n; k++) {
			dy[k] = (float)task_rng_normal(&r);
			dyf[k] = (float)dy[k];
			((float *)xf->v[i].d)[k] = (float)y[k];
		}
	}
	task_exec_backward(xd);
	task_exec_backward(xf);
}

/* Runs one stage on one case; returns the number of failing outputs. */
static int run_case(const struct cr_plan *p, enum cr_stage s, void *so, emu_launch_fn launch,
		    const struct task_dimset *d, enum task_profile prof, uint64_t seed, char *why,
		    size_t cap)
{
	const struct task *t = p->task;
	const struct cr_pstage *st = &p->st[s];
	struct task_exec xd, xf;
	struct cr_cuda_ltab *lt = calloc(1, sizeof *lt);
	void *buf[CR_MAX_SLOTS] = { 0 };
	int64_t numel[CR_MAX_SLOTS], *vals = calloc(CR_MAX_EXPRS, sizeof *vals);
	struct cr_err e;
	int bad = 0;

	cr_err_init(&e);
	if (cr_plan_eval(p, d, vals, &e) || cr_cuda_ltab_fill(lt, p, s, vals, "-", "emu", &e)) {
		snprintf(why, cap, "%s", e.msg);
		free(lt);
		free(vals);
		return 1;
	}
	generate(t, d, prof, seed, s == CR_BWD, &xd, &xf);
	for (int k = 0; k < st->n_slots; k++) {
		const struct cr_slot *sl = &st->slots[k];
		numel[k] = cr_plan_slot_numel(p, s, k, d, vals);
		buf[k] = malloc((size_t)numel[k] * 8 + 64);
		memset(buf[k], 0xff, (size_t)numel[k] * 8 + 64);   /* NaN poison and garbage */
		if (sl->role == CR_SLOT_IN)
			task_gen_store(sl->dtype, (sl->grad ? &xd.g[sl->tensor] : &xd.v[sl->tensor])->d, buf[k],
				       numel[k]);
	}
	for (uint32_t i = 0; i < lt->n_launch && !bad; i++) {
		int64_t a[10] = { 0 };
		void *fn = dlsym(so, lt->l[i].fn);
		if (!fn || lt->l[i].n_args > 10) {
			snprintf(why, cap, "kernel %s: not found or more than 10 parameters", lt->l[i].fn);
			bad = 1;
			break;
		}
		for (uint32_t k = 0; k < lt->l[i].n_args; k++) {
			const struct cr_cuda_larg *x = &lt->args[lt->l[i].arg0 + k];
			if (x->kind == CR_CUDA_ARG_FLOAT) {
				snprintf(why, cap, "float arguments are not emulated");
				bad = 1;
			}
			a[k] = x->kind == CR_CUDA_ARG_PTR ? (int64_t)(uintptr_t)buf[x->slot] : x->i;
		}
		if (!bad)
			launch(fn, lt->l[i].grid, lt->l[i].block, lt->l[i].smem, a);
	}
	/* as checks/stage.c: each output at check_scale over the outputs' rms */
	double rms[CR_MAX_SLOTS];
	int n_out = 0, out_ix[CR_MAX_SLOTS];
	for (int k = 0; k < st->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_OUT) {
			const struct cr_slot *sl = &st->slots[k];
			const struct task_val *rv = sl->grad ? &xd.g[sl->tensor] : &xd.v[sl->tensor];
			out_ix[k] = n_out;
			rms[n_out++] = check_rms(rv->d, numel[k]);
		}
	for (int k = 0; k < st->n_slots && !bad; k++) {
		const struct cr_slot *sl = &st->slots[k];
		struct check_cmp cc;
		struct check_tol tl;
		if (sl->role != CR_SLOT_OUT)
			continue;
		const struct task_val *rv = sl->grad ? &xd.g[sl->tensor] : &xd.v[sl->tensor];
		const struct task_val *fv = sl->grad ? &xf.g[sl->tensor] : &xf.v[sl->tensor];
		double *got = malloc((size_t)numel[k] * 8), *base = malloc((size_t)numel[k] * 8);
		task_gen_load(sl->dtype, buf[k], got, numel[k]);
		for (int64_t q = 0; q < numel[k]; q++)
			base[q] = ((float *)fv->d)[q];
		/* as checks/stage.c: the verifier's rule (check_tol_default) */
		check_tol_default(&tl, t->atol, t->rtol, check_scale(rms, n_out, out_ix[k]));
		check_compare_tol(got, rv->d, base, numel[k], &tl, &cc);
		if (!cc.pass) {
			char ds[128];
			task_dims_str(t, d, ds, sizeof ds);
			snprintf(why, cap, "%s {%s} %s: '%s' element %lld: got %.9g, expected %.9g",
				 s == CR_FWD ? "forward" : "backward", ds, task_profile_name(prof), sl->name,
				 (long long)cc.worst, cc.got, cc.exp);
			bad++;
		}
		free(got);
		free(base);
	}
	for (int k = 0; k < st->n_slots; k++)
		free(buf[k]);
	task_exec_release(&xd);
	task_exec_release(&xf);
	free(lt);
	free(vals);
	return bad;
}

/* 1 pass, 0 fail, -1 could not run */
static int check_sample(const char *file, char *why, size_t cap)
{
	char so_path[600], tpath[600];
	size_t len;
	char *src = slurp(file, &len);
	struct cr_cand cand;
	struct cr_err e;
	struct task *t = calloc(1, sizeof *t);
	struct cr_plan *p = calloc(1, sizeof *p);
	void *so = NULL;
	int res = 1;

	cr_err_init(&e);
	memset(&cand, 0, sizeof cand);
	/* a fresh name each time: a C++ module may stay loaded after dlclose */
	static int serial;
	snprintf(so_path, sizeof so_path, "%s/sample-%d.so", tmpdir, serial++);
	if (!src || cr_cand_parse(&cand, file, src, len, &e)) {
		snprintf(why, cap, "parse: %s", e.msg);
		res = -1;
		goto out;
	}
	snprintf(tpath, sizeof tpath, "%s/data/tasks/%s.json", SRC_ROOT, cand.task);
	if (task_load(t, tpath, cand.task, &e) || cr_plan_bind(p, t, &cand, file, &e)) {
		snprintf(why, cap, "bind: %s", e.msg);
		res = -1;
		goto out;
	}
	if (build(file, so_path)) {
		snprintf(why, cap, "the C++ build of the emulation failed (%s/build.log)", tmpdir);
		res = -1;
		goto out;
	}
	if (!(so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, cap, "dlopen: %s", dlerror());
		res = -1;
		goto out;
	}
	emu_launch_fn launch = (emu_launch_fn)(uintptr_t)dlsym(so, "emu_launch");
	for (int s = 0; s < (p->has_bwd ? 2 : 1) && res == 1; s++)
		for (int c = 0; c < t->n_checks && res == 1; c++)
			for (int q = 0; q < 2 && res == 1; q++)
				if (run_case(p, (enum cr_stage)s, so, launch, &t->checks[c],
					     q ? TASK_PROF_LARGE : TASK_PROF_OWN, task_mix(7, (uint64_t)(c * 16 + q)),
					     why, cap))
					res = 0;
out:
	if (so)
		dlclose(so);
	unlink(so_path);
	cr_plan_release(p);
	free(p);
	task_release(t);
	free(t);
	free(src);
	return res;
}

static const char *expect_of(const char *file, char *buf, size_t cap)
{
	char js[700];
	json_error_t je;
	json_t *j;
	snprintf(js, sizeof js, "%.*s.json", (int)(strlen(file) - 3), file);
	buf[0] = '\0';
	if ((j = json_load_file(js, 0, &je))) {
		const char *s = json_string_value(json_object_get(j, "expect"));
		snprintf(buf, cap, "%s", s ? s : "");
		json_decref(j);
	}
	return buf;
}

int main(int argc, char **argv)
{
	char dir[512], files[64][600], why[600], exp[64], log[600];
	int n = 0, failures = 0;

#if !defined(__x86_64__)
	printf("skip: the emulation's calling trick needs x86-64\n");
	return 77;
#endif
	snprintf(tmpdir, sizeof tmpdir, "%s/crucible-emu-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir))
		return 1;
	/* a C++20 compiler with <barrier>? */
	{
		char probe[600], out[600];
		snprintf(probe, sizeof probe, "%s/probe.cu", tmpdir);
		snprintf(out, sizeof out, "%s/probe.so", tmpdir);
		FILE *f = fopen(probe, "w");
		fputs("extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = 1; }\n", f);
		fclose(f);
		int rc = build(probe, out);
		unlink(probe);
		unlink(out);
		if (rc) {
			printf("skip: no C++20 compiler for the emulation (set CXX)\n");
			snprintf(log, sizeof log, "%s/build.log", tmpdir);
			unlink(log);
			rmdir(tmpdir);
			return 77;
		}
	}
	if (argc > 1) {
		for (int i = 1; i < argc && n < 64; i++)
			snprintf(files[n++], sizeof files[0], "%s", argv[i]);
	} else {
		struct dirent **ents;
		snprintf(dir, sizeof dir, "%s/data/candidates/smoke-cuda", SRC_ROOT);
		int m = scandir(dir, &ents, NULL, alphasort);
		for (int i = 0; i < m; i++) {
			size_t l = strlen(ents[i]->d_name);
			if (l > 3 && !strcmp(ents[i]->d_name + l - 3, ".cu") && n < 64)
				snprintf(files[n++], sizeof files[0], "%s/%s", dir, ents[i]->d_name);
			free(ents[i]);
		}
		free(ents);
	}
	for (int i = 0; i < n; i++) {
		const char *want = expect_of(files[i], exp, sizeof exp);
		const char *base = strrchr(files[i], '/') ? strrchr(files[i], '/') + 1 : files[i];
		bool must_pass = !strcmp(want, "ok");
		bool must_fail = !strcmp(want, "mismatch") || !strcmp(want, "degenerate");
		if (!must_pass && !must_fail) {
			printf("%-24s skipped (expects %s: needs the real worker)\n", base, want);
			continue;
		}
		why[0] = '\0';
		int r = check_sample(files[i], why, sizeof why);
		bool good = r >= 0 && (must_pass ? r == 1 : r == 0);
		printf("%-24s %-4s %s%s%s\n", base, good ? "ok" : "FAIL",
		       r == 1 ? "matches the reference" : r == 0 ? "differs" : "could not run",
		       why[0] ? ": " : "", why);
		failures += !good;
	}
	snprintf(log, sizeof log, "%s/build.log", tmpdir);
	unlink(log);
	rmdir(tmpdir);
	printf("%s\n", failures ? "FAILED" : "all samples behave as expected under emulation");
	return failures ? 1 : 0;
}
