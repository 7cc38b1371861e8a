/* test_verify.c — harness/verify.c through its API, with real workers (this
 * binary is also the `__worker`, as crucible is): the worst element a row
 * reports (the first failing comparison's, else the largest error seen),
 * the timing hook (twice around a timed stage, never without one), and
 * self-consistency's probe (cr_probe, cr_probe_agree): honest candidates
 * agree, a wrong one does not, a crash is a runtime_error, the seed decides
 * the inputs, and nothing a candidate leaves unwritten survives a call. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cuda/cuda_dev.h"
#include "harness/verify.h"
#include "sandbox/worker.h"
#include "sandbox/compile.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"

static char workroot[64], scratch[64];

static struct cr_verify_opts opts(bool no_timing)
{
	struct cr_verify_opts o = { .seed = 12345, .call_timeout_s = 5, .compile_timeout_s = 60,
				    .time_cap_s = 0.3, .rel_target = 0.02, .min_samples = 10,
				    .no_timing = no_timing, .quick = true, .workroot = workroot };
	return o;
}

static void load_task(const char *name, struct task *t)
{
	struct cr_err err;
	cr_err_init(&err);
	assert_int_equal(task_registry_find(name, t, &err), CR_OK);
}

/* a bundled sample: data/candidates/NAME */
static void sample(const char *name, char *path, size_t cap)
{
	snprintf(path, cap, "%s/candidates/%s", task_datadir(), name);
}

/* a candidate written for the test into scratch/NAME */
static void write_cand(const char *name, const char *src, char *path, size_t cap)
{
	FILE *f;
	snprintf(path, cap, "%s/%s", scratch, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(src, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void verify(const struct task *t, const char *path, const struct cr_verify_opts *o,
		   struct cr_result *r)
{
	struct cr_cand_file f;
	struct cr_err err;
	cr_err_init(&err);
	cr_cand_load(&f, path);
	assert_int_equal(cr_verify(t, &f, o, r, &err), CR_OK);
	cr_cand_file_release(&f);
}

static void probe(const struct task *t, const char *path, uint64_t seed, struct cr_probe *p)
{
	struct cr_verify_opts o = opts(true);
	struct cr_cand_file f;
	struct cr_err err;
	cr_err_init(&err);
	cr_cand_load(&f, path);
	assert_int_equal(cr_probe(t, &f, &o, seed, p, &err), CR_OK);
	cr_cand_file_release(&f);
}

/* The dims of a worst element's shape string ("B=4,D=33"), every dim named. */
static void parse_shape(const struct task *t, const char *s, struct task_dimset *d)
{
	char buf[128], *tok, *save = NULL;
	int seen = 0;
	memset(d, 0, sizeof *d);
	snprintf(buf, sizeof buf, "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		assert_non_null(eq);
		int k = task_find_dim(t, tok, (size_t)(eq - tok));
		assert_true(k >= 0);
		d->v[k] = strtoll(eq + 1, NULL, 10);
		assert_true(d->v[k] >= 1);
		seen++;
	}
	assert_int_equal(seen, t->n_dims);
}

/* The element is one of the output's and its figures are its own: a
 * forward output, or in the backward stage d<x> of a differentiable x. */
static void worst_consistent(const struct task *t, const struct cr_worst *w)
{
	struct task_dimset d;
	int i;
	assert_true(w->set);
	if (!strcmp(w->stage, "forward")) {
		i = task_find_tensor(t, w->output);
		assert_true(i >= 0);
		assert_int_equal(t->tensors[i].role, TASK_OUTPUT);
	} else {
		assert_string_equal(w->stage, "backward");
		assert_true(w->output[0] == 'd');
		i = task_find_tensor(t, w->output + 1);
		assert_true(i >= 0);
		assert_true(t->tensors[i].role != TASK_OUTPUT && t->tensors[i].grad);
	}
	parse_shape(t, w->shape, &d);
	assert_true(w->index >= 0);
	assert_true(w->index < task_tensor_numel(t, i, &d));
	assert_true(task_profile_parse(w->profile) >= 0 || !strcmp(w->profile, "drawn"));
	assert_true(fabs(w->got - w->expected) == w->abs_err);
	if (w->expected != 0)
		assert_true(fabs(w->rel_err - w->abs_err / fabs(w->expected)) <= 1e-12 * w->rel_err);
}

/* A mismatch reports the element its detail names: the first failing
 * comparison's worst. */
static void test_worst_mismatch(void **state)
{
	struct task t;
	struct cr_result r;
	struct cr_verify_opts o = opts(true);
	char path[600], want[600];
	(void)state;
	load_task("smoke/relu", &t);
	sample("smoke/bad_wrong_result.c", path, sizeof path);
	verify(&t, path, &o, &r);
	assert_int_equal(r.status, CHECK_MISMATCH);
	worst_consistent(&t, &r.worst);
	assert_string_equal(r.worst.stage, "forward"); /* the backward never runs after a mismatch */
	assert_string_equal(r.worst.output, "y");
	assert_true(r.worst.abs_err > 0);
	/* the leak is 0.1 x a negative input: got = x/10 where 0 is expected */
	assert_true(r.worst.expected == 0 && r.worst.got < 0);
	snprintf(want, sizeof want, "%s {%s} %s: '%s' element %lld: got %.9g, expected %.9g",
		 r.worst.stage, r.worst.shape, r.worst.profile, r.worst.output, r.worst.index,
		 r.worst.got, r.worst.expected);
	if (strncmp(r.detail, want, strlen(want)))
		fail_msg("detail '%s' does not start with '%s'", r.detail, want);
	task_release(&t);
}

/* Everything passed: the element of the largest error, which is the row's
 * max_abs_err. */
static void test_worst_ok(void **state)
{
	struct task t;
	struct cr_result r;
	struct cr_verify_opts o = opts(true);
	char path[600];
	(void)state;
	load_task("smoke/softmax", &t);
	sample("smoke/softmax_plain.c", path, sizeof path);
	verify(&t, path, &o, &r);
	assert_int_equal(r.status, CHECK_OK);
	worst_consistent(&t, &r.worst);
	assert_true(r.worst.abs_err > 0); /* float exp against the double reference */
	assert_true(r.worst.abs_err == r.max_abs_err);
	task_release(&t);
}

/* A crash compares nothing to the end: no element. */
static void test_worst_crash(void **state)
{
	struct task t;
	struct cr_result r;
	struct cr_verify_opts o = opts(true);
	char path[600];
	(void)state;
	load_task("smoke/relu", &t);
	sample("smoke/bad_crash.c", path, sizeof path);
	verify(&t, path, &o, &r);
	assert_int_equal(r.status, CHECK_RUNTIME_ERROR);
	assert_false(r.worst.set);
	task_release(&t);
}

struct hook_log {
	int calls;
	bool seq[4];
};

static void on_timing(void *ctx, bool start)
{
	struct hook_log *h = ctx;
	if (h->calls < 4)
		h->seq[h->calls] = start;
	h->calls++;
}

static void hooked(const char *cand, bool no_timing, enum check_verdict want, struct hook_log *h)
{
	struct task t;
	struct cr_result r;
	struct cr_verify_opts o = opts(no_timing);
	char path[600];
	load_task("smoke/relu", &t);
	sample(cand, path, sizeof path);
	memset(h, 0, sizeof *h);
	o.on_timing = on_timing;
	o.hook_ctx = h;
	verify(&t, path, &o, &r);
	assert_int_equal(r.status, want);
	assert_int_equal(r.timed, !no_timing && want == CHECK_OK);
	task_release(&t);
}

static void test_timing_hook(void **state)
{
	struct hook_log h;
	(void)state;
	hooked("smoke/relu_plain.c", false, CHECK_OK, &h);
	assert_int_equal(h.calls, 2);
	assert_true(h.seq[0]);
	assert_false(h.seq[1]);
	hooked("smoke/relu_plain.c", true, CHECK_OK, &h);
	assert_int_equal(h.calls, 0);
	/* nothing is timed after a failed correctness stage */
	hooked("smoke/bad_wrong_result.c", false, CHECK_MISMATCH, &h);
	assert_int_equal(h.calls, 0);
}

static void probe_sample(const char *task, const char *cand, uint64_t seed, struct cr_probe *p)
{
	struct task t;
	char path[600];
	load_task(task, &t);
	sample(cand, path, sizeof path);
	probe(&t, path, seed, p);
	task_release(&t);
}

/* An honest probe: one output per task output, at the cpu shape, timed. */
static void probe_ok(const struct task *t, const struct cr_probe *p)
{
	assert_int_equal(p->status, CHECK_OK);
	assert_int_equal(p->n_out, 1);
	int i = task_find_tensor(t, p->names[0]);
	assert_true(i >= 0);
	assert_int_equal(t->tensors[i].role, TASK_OUTPUT);
	assert_int_equal(p->numel[0], task_tensor_numel(t, i, &t->cpu));
	assert_non_null(p->out[0]);
	for (int64_t e = 0; e < p->numel[0]; e++)
		if (!isfinite(p->out[0][e]))
			fail_msg("%s element %lld is %g", p->names[0], (long long)e, p->out[0][e]);
	assert_true(isfinite(p->call_us) && p->call_us > 0);
}

/* Two honest implementations agree, each way; the seed decides the inputs. */
static void test_probe_honest(void **state)
{
	const char *pairs[][3] = { { "smoke/relu", "smoke/relu_plain.c", "smoke/relu_fast.c" },
				   { "smoke/softmax", "smoke/softmax_plain.c", "smoke/softmax_fast.c" } };
	(void)state;
	for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
		struct task t;
		struct cr_probe a, b, c, a2;
		load_task(pairs[k][0], &t);
		probe_sample(pairs[k][0], pairs[k][1], 7, &a);
		probe_sample(pairs[k][0], pairs[k][2], 7, &b);
		probe_sample(pairs[k][0], pairs[k][1], 8, &c);
		probe_sample(pairs[k][0], pairs[k][1], 7, &a2);
		probe_ok(&t, &a);
		probe_ok(&t, &b);
		probe_ok(&t, &c);
		assert_true(cr_probe_agree(&t, &a, &b));
		assert_true(cr_probe_agree(&t, &b, &a));
		/* the same seed: the same inputs, so the same outputs exactly */
		assert_true(cr_probe_agree(&t, &a, &a2));
		assert_memory_equal(a.out[0], a2.out[0], sizeof(double) * (size_t)a.numel[0]);
		/* another seed: other inputs */
		assert_false(cr_probe_agree(&t, &a, &c));
		assert_false(cr_probe_agree(&t, &b, &c));
		cr_probe_release(&a);
		cr_probe_release(&b);
		cr_probe_release(&c);
		cr_probe_release(&a2);
		assert_null(a.out[0]);
		task_release(&t);
	}
}

static void test_probe_wrong(void **state)
{
	struct task t;
	struct cr_probe a, w;
	(void)state;
	load_task("smoke/relu", &t);
	probe_sample("smoke/relu", "smoke/relu_plain.c", 3, &a);
	probe_sample("smoke/relu", "smoke/bad_wrong_result.c", 3, &w);
	probe_ok(&t, &a);
	probe_ok(&t, &w); /* it ran: the probe does not judge */
	assert_false(cr_probe_agree(&t, &a, &w));
	assert_false(cr_probe_agree(&t, &w, &a));
	cr_probe_release(&a);
	cr_probe_release(&w);
	task_release(&t);
}

static void test_probe_failures(void **state)
{
	struct task t;
	struct cr_probe p, q;
	(void)state;
	load_task("smoke/relu", &t);
	probe_sample("smoke/relu", "smoke/bad_crash.c", 3, &p);
	assert_int_equal(p.status, CHECK_RUNTIME_ERROR);
	assert_true(p.detail[0] != '\0');
	assert_int_equal(p.n_out, 0);
	assert_null(p.out[0]);
	probe_sample("smoke/relu", "smoke/bad_infinite_loop.c", 3, &q);
	assert_int_equal(q.status, CHECK_TIMEOUT);
	assert_false(cr_probe_agree(&t, &p, &p));
	cr_probe_release(&p);
	cr_probe_release(&q);
	probe_sample("smoke/relu", "smoke/bad_compile_error.c", 3, &p);
	assert_int_equal(p.status, CHECK_COMPILE_ERROR);
	assert_non_null(strstr(p.detail, "bad_compile_error.c:"));
	cr_probe_release(&p);
	task_release(&t);
}

/* Unwritten outputs read NaN, on every call, and every call is checked: a
 * kernel that writes nothing, or only on its first call, fails the probe
 * (stale_result: it did not run), and a failed probe agrees with nothing,
 * not even itself. */
static void test_probe_poison(void **state)
{
	static const char *srcs[][2] = {
		{ "nothing.c", "// @task smoke/relu\n// @forward relu_fwd(x, y, N)\n#include <stdint.h>\n"
			       "void relu_fwd(const float *x, float *y, int64_t n)\n"
			       "{ (void)x; (void)y; (void)n; }\n" },
		{ "once.c", "// @task smoke/relu\n// @forward relu_fwd(x, y, N)\n#include <stdint.h>\n"
			    "static int calls;\n"
			    "void relu_fwd(const float *x, float *y, int64_t n)\n"
			    "{ if (calls++) return; for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0; }\n" },
	};
	struct task t;
	(void)state;
	load_task("smoke/relu", &t);
	for (size_t k = 0; k < sizeof srcs / sizeof srcs[0]; k++) {
		struct cr_probe p;
		char path[600];
		write_cand(srcs[k][0], srcs[k][1], path, sizeof path);
		probe(&t, path, 5, &p);
		/* a call that left its poison: the probe did not run (round 3: the
		 * old probe ran on, and a candidate skipping its first calls was
		 * picked as the fastest) */
		assert_int_equal(p.status, CHECK_STALE_RESULT);
		assert_non_null(strstr(p.detail, "was not written"));
		assert_int_equal(p.n_out, 0);
		assert_false(cr_probe_agree(&t, &p, &p));
		cr_probe_release(&p);
	}
	task_release(&t);
	/* an integer output's poison is a number, not a NaN: an empty argmax
	 * once ran the probe, agreed with every other empty one and was
	 * selected (round 3's last attacker) */
	{
		struct cr_probe p;
		char path[600];

		load_task("L1/51_Argmax_over_a_dimension", &t);
		write_cand("argmax_nothing.c",
			   "// @task L1/51_Argmax_over_a_dimension\n// @forward argmax_fwd(x, y, B, D1, D2)\n"
			   "#include <stdint.h>\n"
			   "void argmax_fwd(const float *x, int64_t *y, int64_t b, int64_t d1, int64_t d2)\n"
			   "{ (void)x; (void)y; (void)b; (void)d1; (void)d2; }\n",
			   path, sizeof path);
		probe(&t, path, 5, &p);
		assert_int_equal(p.status, CHECK_STALE_RESULT);
		assert_non_null(strstr(p.detail, "was not written"));
		assert_false(cr_probe_agree(&t, &p, &p));
		cr_probe_release(&p);
		/* ... nor one that writes a constant: the same bytes on every
		 * call's fresh inputs (a group of them was selected) */
		write_cand("argmax_zero.c",
			   "// @task L1/51_Argmax_over_a_dimension\n// @forward argmax_fwd(x, y, B, D1, D2)\n"
			   "#include <stdint.h>\n#include <string.h>\n"
			   "void argmax_fwd(const float *x, int64_t *y, int64_t b, int64_t d1, int64_t d2)\n"
			   "{ (void)x; (void)d1; memset(y, 0, sizeof *y * (size_t)(b * d2)); }\n",
			   path, sizeof path);
		probe(&t, path, 5, &p);
		assert_int_equal(p.status, CHECK_DEGENERATE);
		assert_non_null(strstr(p.detail, "do not depend on the input"));
		assert_false(cr_probe_agree(&t, &p, &p));
		cr_probe_release(&p);
		task_release(&t);
		/* ... judged by value: 0 * x writes +0 or -0 as x goes, bytes that
		 * change with the input, the same zero to agreement */
		load_task("smoke/relu", &t);
		write_cand("relu_signed_zero.c",
			   "// @task smoke/relu\n// @forward relu_fwd(x, y, N)\n#include <stdint.h>\n"
			   "void relu_fwd(const float *x, float *y, int64_t n)\n"
			   "{ for (int64_t i = 0; i < n; i++) y[i] = 0.0f * x[i]; }\n",
			   path, sizeof path);
		probe(&t, path, 5, &p);
		assert_int_equal(p.status, CHECK_DEGENERATE);
		cr_probe_release(&p);
		task_release(&t);
	}
}

/* An honest output can be input-independent for one draw: L2/58's clamp
 * saturates under a large drawn bias (every output -1 on calls 1 and 3 at
 * this probe seed), the reference too. The probe's "same outputs on other
 * inputs" rule must hold only where the reference moved, as the stages'
 * does (round 3's last attacker: 4 of 60 seeds refused every honest
 * candidate of the task). */
static void test_probe_saturating(void **state)
{
	struct cr_probe p;
	(void)state;
	probe_sample("L2/58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp", "honest/probe_l58_saturating.c",
		     0x2468acf, &p);
	assert_int_equal(p.status, CHECK_OK);
	cr_probe_release(&p);
}

static int setup(void **state)
{
	char w[] = "/tmp/crucible-test-verify-XXXXXX", s[] = "/tmp/crucible-test-cands-XXXXXX";
	(void)state;
	if (!mkdtemp(w) || chmod(w, 0755) || !mkdtemp(s))
		return -1;
	snprintf(workroot, sizeof workroot, "%s", w);
	snprintf(scratch, sizeof scratch, "%s", s);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return cr_remove_tree(workroot) | cr_remove_tree(scratch);
}

int main(int argc, char **argv)
{
	/* the workers re-run this binary (/proc/self/exe) */
	if (argc >= 2 && !strcmp(argv[1], "__worker"))
		return cr_worker_main(argc - 1, argv + 1, cr_cuda_worker_entry);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worst_mismatch),
		cmocka_unit_test(test_worst_ok),
		cmocka_unit_test(test_worst_crash),
		cmocka_unit_test(test_timing_hook),
		cmocka_unit_test(test_probe_honest),
		cmocka_unit_test(test_probe_wrong),
		cmocka_unit_test(test_probe_failures),
		cmocka_unit_test(test_probe_poison),
		cmocka_unit_test(test_probe_saturating),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
