/* test_plan.c — cand/plan.c at the limits: a candidate for a task
 * of TASK_MAX_TENSORS tensors binds with one call naming every buffer of
 * its backward (CR_MAX_SLOTS with all the scratch) and a dim; a stage of
 * CR_MAX_LAUNCH launches binds; one launch or argument too many is a
 * format error naming the line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cand/plan.h"

#define NP (TASK_MAX_TENSORS - 2)   /* params: x, p0..p(NP-1), y */

struct buf {
	char *s;
	size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int k;
	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if ((size_t)k < b->cap - b->n)
			break;
		b->cap = 2 * b->cap + (size_t)k + 1;
		b->s = realloc(b->s, b->cap);
		assert_non_null(b->s);
	}
	b->n += (size_t)k;
}

/* The widest task: x, NP params, y; y = x + every param. */
static void load_big(struct task *t)
{
	char path[] = "/tmp/crucible-plan-XXXXXX";
	struct buf b = { calloc(1, 64), 0, 64 };
	struct cr_err e;
	int fd;

	put(&b, "{\"dims\": {\"D\": 3}, \"cpu_dims\": {\"D\": 3}, \"check_dims\": [{\"D\": 1}, {\"D\": 2}, {\"D\": 3}],"
		" \"backward\": true, \"tensors\": {\"x\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"D\"],"
		" \"init\": \"normal\"}, \"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"D\"]}");
	for (int i = 0; i < NP; i++)
		put(&b, ", \"p%d\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [\"D\"], \"init\": \"normal\"}", i);
	put(&b, "}, \"graph\": [");
	for (int k = 0; k < NP; k++) {
		char prev[16], out[16];
		snprintf(prev, sizeof prev, k ? "v%d" : "x", k - 1);
		snprintf(out, sizeof out, k == NP - 1 ? "y" : "v%d", k);
		put(&b, "%s{\"op\": \"add\", \"in\": [\"%s\", \"p%d\"], \"out\": [\"%s\"]}", k ? ", " : "", prev, k, out);
	}
	put(&b, "]}");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b.s, b.n), (ssize_t)b.n);
	close(fd);
	free(b.s);
	cr_err_init(&e);
	if (task_load(t, path, "test/big", &e))
		fail_msg("%s", e.msg);
	unlink(path);
	assert_int_equal(t->n_tensors, TASK_MAX_TENSORS);
}

static enum cr_status bind_src(struct cr_plan *p, const struct task *t, const char *src,
			       struct cr_err *e)
{
	struct cr_cand c;
	enum cr_status st;
	cr_err_init(e);
	if ((st = cr_cand_parse(&c, "big.c", src, strlen(src), e)))
		return st;
	return cr_plan_bind(p, t, &c, "big.c", e);
}

static void test_every_buffer_in_one_call(void **state)
{
	struct task t;
	struct cr_plan p;
	struct cr_err e;
	struct buf b = { calloc(1, 64), 0, 64 };
	(void)state;
	load_big(&t);
	put(&b, "// @task test/big\n");
	for (int i = 0; i < CR_CAND_MAX_SCRATCH; i++)
		put(&b, "// @scratch s%d f32[D]\n", i);
	put(&b, "// @forward f(x, y");
	for (int i = 0; i < NP; i++)
		put(&b, ", p%d", i);
	put(&b, ", D)\n// @backward g(x, y, dy, dx");
	for (int i = 0; i < NP; i++)
		put(&b, ", p%d, dp%d", i, i);
	for (int i = 0; i < CR_CAND_MAX_SCRATCH; i++)
		put(&b, ", s%d", i);
	put(&b, ", D)\n");
	if (bind_src(&p, &t, b.s, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(p.st[CR_BWD].n_slots, CR_MAX_SLOTS);
	assert_int_equal(p.st[CR_BWD].n_launch, 1);
	assert_int_equal(p.st[CR_BWD].launch[0].n_args, CR_MAX_SLOTS + 1);
	assert_int_equal(p.st[CR_BWD].launch[0].args[CR_MAX_SLOTS].kind, CR_PARG_INT);
	assert_int_equal(p.st[CR_FWD].launch[0].n_args, TASK_MAX_TENSORS + 1);
	cr_plan_release(&p);
	free(b.s);
	task_release(&t);
}

static void test_launches(void **state)
{
	struct task t;
	struct cr_plan p;
	struct cr_err e;
	struct buf b = { calloc(1, 64), 0, 64 };
	char want[160];
	int per, n;
	(void)state;
	load_big(&t);
	/* CR_MAX_LAUNCH launches, each with an integer argument at its own place */
	put(&b, "// @task test/big\n");
	for (int i = 0; i < CR_MAX_LAUNCH; i++)
		put(&b, "// @forward f(x, y, %d)\n", i);
	if (bind_src(&p, &t, b.s, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(p.st[CR_FWD].n_launch, CR_MAX_LAUNCH);
	assert_int_equal(p.st[CR_FWD].n_args, 3 * CR_MAX_LAUNCH);
	assert_int_equal(p.st[CR_FWD].launch[CR_MAX_LAUNCH - 1].arg0, 3 * (CR_MAX_LAUNCH - 1));
	int64_t *vals = calloc((size_t)p.n_exprs, sizeof *vals);
	assert_non_null(vals);
	assert_int_equal(cr_plan_eval(&p, &t.checks[0], vals, &e), CR_OK);
	assert_int_equal(vals[p.st[CR_FWD].launch[77].args[2].expr], 77);
	free(vals);
	cr_plan_release(&p);
	/* one launch more: the line of the first launch over the limit */
	put(&b, "// @forward f(x, y, 0)\n");
	assert_int_equal(bind_src(&p, &t, b.s, &e), CR_EINPUT);
	snprintf(want, sizeof want, "big.c:%d: @forward: more than %d launches", CR_MAX_LAUNCH + 2, CR_MAX_LAUNCH);
	assert_string_equal(e.msg, want);
	free(b.s);

	/* arguments over all the launches of a stage: CR_MAX_ARGV fit, one more does not */
	per = CR_MAX_ARGS;
	n = CR_MAX_ARGV / per;
	for (int extra = 0; extra < 2; extra++) {
		b = (struct buf){ calloc(1, 64), 0, 64 };
		put(&b, "// @task test/big\n");
		for (int i = 0; i <= n; i++) {
			int k = i < n ? per : CR_MAX_ARGV - n * per + extra;
			if (k == 0)
				continue;
			put(&b, "// @forward f(x");
			for (int a = 1; a < k; a++)
				put(&b, ", D");
			put(&b, ")\n");
		}
		if (!extra) {
			if (bind_src(&p, &t, b.s, &e))
				fail_msg("%s", e.msg);
			assert_int_equal(p.st[CR_FWD].n_args, CR_MAX_ARGV);
			cr_plan_release(&p);
		} else {
			assert_int_equal(bind_src(&p, &t, b.s, &e), CR_EINPUT);
			snprintf(want, sizeof want, "big.c:%d: more than %d arguments over the @forward launches",
				 n + 2, CR_MAX_ARGV);
			assert_string_equal(e.msg, want);
			cr_plan_release(&p);
		}
		free(b.s);
	}
	task_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_buffer_in_one_call),
		cmocka_unit_test(test_launches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
