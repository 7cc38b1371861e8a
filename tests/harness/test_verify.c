/* test_verify.c — harness/verify.c through its API, with real workers (this
 * binary is also the `__worker`, as crucible is): the worst element a row
 * reports (the first failing comparison's, else the largest error seen)
 * and the timing hook (twice around a timed stage, never without one). */
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
#include "harness/worker/worker.h"
#include "harness/worker/compile.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"

static char workroot[64];

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

static int setup(void **state)
{
	char w[] = "/tmp/crucible-test-verify-XXXXXX";
	(void)state;
	if (!mkdtemp(w) || chmod(w, 0755))
		return -1;
	snprintf(workroot, sizeof workroot, "%s", w);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return cr_remove_tree(workroot);
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
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
