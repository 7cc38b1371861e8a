/* test_cond.c — conditioning at float precision (checks/cond.c and the
 * comparison's allowance in checks/check.c). Two elements float arithmetic
 * cannot pin down, built by hand on registry tasks: a softmax near-tie
 * (L2/99: linear, GELU, softmax; logits 1e5 and 1e5 + 0.003, which float
 * rounds to one value) and a ReLU whose input is 2^-46 (L2/63: linear,
 * ReLU, /2; a float product rounds it to 0, the other branch, and the
 * backward's dx moves by O(1)). Each is rejected by the rule without the
 * measurement and accepted with it; what must stay rejected stays so: a
 * wrong element of a well-conditioned row, a uniformly biased output, the
 * ill-conditioned elements themselves off by 10x the spread measured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks/check.h"
#include "checks/cond.h"
#include "tasks/task_exec.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"
#include "tasks/task_rng.h"

#define ROWS 8 /* row 0 holds the ill-conditioned element, rows 1.. are ordinary */

/* A task, its dims and every tensor's double values (inputs, params, and
 * for a backward the output gradients), with the reference of one result. */
struct fix {
	struct task t;
	struct task_dimset d;
	bool bwd;
	double *val[TASK_MAX_TENSORS], *dout[TASK_MAX_TENSORS];
	int res;          /* the tensor whose value (forward) or gradient (backward) is judged */
	int64_t n;
	double *ref, *base, *got, *spread;
};

static void load(struct fix *f, const char *task, int64_t b, int64_t k, int64_t fo, bool bwd,
		 const char *res)
{
	struct cr_err e;
	cr_err_init(&e);
	memset(f, 0, sizeof *f);
	assert_int_equal(task_registry_find(task, &f->t, &e), CR_OK);
	f->d.v[task_find_dim(&f->t, "B", 1)] = b;
	f->d.v[task_find_dim(&f->t, "K", 1)] = k;
	f->d.v[task_find_dim(&f->t, "F", 1)] = fo;
	f->bwd = bwd;
	for (int i = 0; i < f->t.n_tensors; i++) {
		int64_t n = task_tensor_numel(&f->t, i, &f->d);
		if (f->t.tensors[i].role != TASK_OUTPUT) {
			f->val[i] = calloc((size_t)n, sizeof(double));
			/* ordinary values: N(0, 1) rounded to float */
			task_gen_tensor(&f->t, i, &f->d, TASK_PROF_OWN, 99, f->val[i]);
		} else if (bwd) {
			struct task_rng r;
			f->dout[i] = calloc((size_t)n, sizeof(double));
			task_rng_seed(&r, 7);
			for (int64_t q = 0; q < n; q++)
				f->dout[i][q] = (float)task_rng_normal(&r);
		}
	}
	f->res = task_find_tensor(&f->t, res);
	f->n = task_tensor_numel(&f->t, f->res, &f->d);
	f->ref = calloc((size_t)f->n, sizeof(double));
	f->base = calloc((size_t)f->n, sizeof(double));
	f->got = calloc((size_t)f->n, sizeof(double));
	f->spread = calloc((size_t)f->n, sizeof(double));
}

static void release(struct fix *f)
{
	for (int i = 0; i < f->t.n_tensors; i++) {
		free(f->val[i]);
		free(f->dout[i]);
	}
	free(f->ref);
	free(f->base);
	free(f->got);
	free(f->spread);
}

static double *tensor(struct fix *f, const char *name)
{
	return f->val[task_find_tensor(&f->t, name)];
}

/* The double reference of the judged result, rounded to float as the
 * verifier compares it; the f32 baseline is taken to be lucky (the
 * reference rounded), as OpenBLAS's sgemm was on the inputs that failed. */
static void reference(struct fix *f)
{
	struct task_exec x;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(task_exec_init(&x, &f->t, &f->d, true, f->bwd, &e), CR_OK);
	for (int i = 0; i < f->t.n_tensors; i++)
		if (f->t.tensors[i].role != TASK_OUTPUT)
			memcpy(x.v[i].d, f->val[i], sizeof(double) * (size_t)x.v[i].n);
	task_exec_forward(&x);
	if (f->bwd) {
		for (int i = 0; i < f->t.n_tensors; i++)
			if (f->t.tensors[i].role == TASK_OUTPUT) {
				task_gen_round(TASK_F32, x.v[i].d, x.v[i].n);
				memcpy(x.g[i].d, f->dout[i], sizeof(double) * (size_t)x.g[i].n);
			}
		task_exec_backward(&x);
	}
	memcpy(f->ref, f->bwd ? x.g[f->res].d : x.v[f->res].d, sizeof(double) * (size_t)f->n);
	task_gen_round(TASK_F32, f->ref, f->n);
	for (int64_t i = 0; i < f->n; i++)
		f->base[i] = f->got[i] = (float)f->ref[i];
	task_exec_release(&x);
}

static void measure_merge(struct fix *f, uint64_t key, bool merge)
{
	struct check_cond_case cc;
	struct check_cond_out o = { .tensor = f->res, .grad = f->bwd, .dtype = TASK_F32, .n = f->n,
				    .ref = f->ref, .spread = f->spread };
	struct cr_err e;
	cr_err_init(&e);
	memset(&cc, 0, sizeof cc);
	cc.t = &f->t;
	cc.dims = f->d;
	cc.bwd = f->bwd;
	for (int i = 0; i < f->t.n_tensors; i++) {
		cc.val[i] = f->val[i];
		cc.dout[i] = f->dout[i];
	}
	assert_int_equal(check_cond_spread(&cc, key, &o, 1, merge, &e), CR_OK);
}

static void measure(struct fix *f, uint64_t key)
{
	measure_merge(f, key, false);
}

/* The verifier's rule at the output's own scale, with (spread) or without
 * (NULL) the conditioning measured. */
static bool judge(struct fix *f, const double *spread, struct check_cmp *c)
{
	struct check_tol tol;
	check_tol_default(&tol, f->t.atol, f->t.rtol, check_rms(f->ref, f->n));
	tol.spread = spread;
	check_compare_tol(f->got, f->ref, f->base, f->n, &tol, c);
	return c->pass;
}

static double lim(const struct fix *f, int64_t i)
{
	return f->t.atol * check_rms(f->ref, f->n) + f->t.rtol * fabs(f->ref[i]);
}

/* L2/99 with row 0 a near-tie: x[0] = (1e5, 1, 0...), w[0] = (1, 0...),
 * w[1] = (1, c...), b = 0 there: logits 1e5 and 1e5 + c, c = 0.003 below
 * half a float ulp of 1e5 (0.0039), so a float kernel's logits tie and it
 * returns (1/2, 1/2) where the softmax is (σ(-c), σ(c)). */
static void tie_case(struct fix *f)
{
	double *x, *w, *b;
	int64_t k = 4, fo = 2;
	load(f, "L2/99_Matmul_GELU_Softmax", ROWS, k, fo, false, "y");
	x = tensor(f, "x");
	w = tensor(f, "w");
	b = tensor(f, "b");
	for (int64_t q = 0; q < k; q++)
		x[q] = w[q] = w[k + q] = 0;
	x[0] = 1e5;
	x[1] = 1;
	w[0] = w[k] = 1;
	w[k + 1] = (float)0.003;
	b[0] = b[1] = 0;
	reference(f);
	/* what a float kernel computes in row 0: the logits rounded alike */
	f->got[0] = f->got[1] = 0.5;
}

/* L2/63 with row 0's first pre-activation 2^-46: x[0] = (1 + 2^-23,
 * 1 + 2^-22, 0...), w[0] = (1 + 2^-23, -1, 0...), b[0] = 0. In float the
 * product (1 + 2^-23)^2 rounds to 1 + 2^-22 and the pre-activation to 0,
 * so the ReLU's gradient there is 0 where the reference's is 1: dx[0, :]
 * lacks dy[0, 0]/2 × w[0, :]. */
static void relu_case(struct fix *f)
{
	double *x, *w, *b, g;
	int64_t k = 4, fo = 3;
	load(f, "L2/63_Gemm_ReLU_Divide", ROWS, k, fo, true, "x");
	x = tensor(f, "x");
	w = tensor(f, "w");
	b = tensor(f, "b");
	for (int64_t q = 0; q < k; q++)
		x[q] = w[q] = 0;
	x[0] = 1 + 0x1p-23;
	x[1] = 1 + 0x1p-22;
	w[0] = 1 + 0x1p-23;
	w[1] = -1;
	b[0] = 0;
	reference(f);
	g = f->dout[task_find_tensor(&f->t, "y")][0] / 2;
	for (int64_t q = 0; q < k; q++)
		f->got[q] = (float)(f->ref[q] - g * w[q]);
}

/* Both elements of row 0 are rejected without the measurement, accepted
 * with it, whatever the noise key (the antithetic pairs push the logits'
 * difference both ways); rows 1.. are not ill-conditioned. */
static void accepted(struct fix *f, int64_t n_ill)
{
	struct check_cmp c;
	assert_false(judge(f, NULL, &c));
	assert_int_equal(c.failed, CHECK_BOUND_ELEMENT);
	for (uint64_t key = 1; key <= 20; key++) {
		measure(f, key * 0x9e3779b97f4a7c15ull);
		assert_true(judge(f, f->spread, &c));
		assert_int_equal(c.n_ill, n_ill);
		assert_true(c.n_cond >= 1);
	}
}

static void test_tie_accepted(void **s)
{
	struct fix f;
	(void)s;
	tie_case(&f);
	assert_true(fabs(f.got[0] - f.ref[0]) > 5 * lim(&f, 0));
	accepted(&f, 2);
	release(&f);
}

static void test_relu_flip_accepted(void **s)
{
	struct fix f;
	(void)s;
	relu_case(&f);
	assert_true(fabs(f.got[0] - f.ref[0]) > 1000 * lim(&f, 0));
	/* dx[0, 0] and dx[0, 1] (w[0, 2..] are 0: nothing moves there) */
	accepted(&f, 2);
	release(&f);
}

/* The antithetic pairs: whatever the key, some run takes the ReLU's other
 * branch, so the spread at dx[0, 0] is the flip's whole effect. (Runs of
 * independent signs would each miss it half the time: 8 of them one key in
 * 256, about 8 of these 2000.) */
static void test_relu_flip_every_key(void **s)
{
	struct fix f;
	double flip;
	(void)s;
	relu_case(&f);
	flip = fabs(f.got[0] - f.ref[0]);
	for (uint64_t key = 1; key <= 2000; key++) {
		measure(&f, task_mix(key, 0xc0d));
		assert_true(f.spread[0] >= 0.99 * flip);
	}
	release(&f);
}

/* A later round (checks/stage.c: a comparison still failing where the
 * case is ill-conditioned) merges: each element is the largest over the
 * rounds, never less than what either measured alone, and a round without
 * merge starts again from nothing. */
static void test_rounds_merge(void **s)
{
	struct fix f;
	double *a, *b;
	(void)s;
	relu_case(&f);
	a = malloc(sizeof *a * (size_t)f.n);
	b = malloc(sizeof *b * (size_t)f.n);
	assert_non_null(a);
	assert_non_null(b);
	measure(&f, 11);
	memcpy(a, f.spread, sizeof *a * (size_t)f.n);
	measure(&f, 12);
	memcpy(b, f.spread, sizeof *b * (size_t)f.n);
	measure(&f, 11);
	measure_merge(&f, 12, true);
	for (int64_t i = 0; i < f.n; i++)
		assert_true(f.spread[i] == fmax(a[i], b[i]));
	measure(&f, 12);
	for (int64_t i = 0; i < f.n; i++)
		assert_true(f.spread[i] == b[i]);
	free(a);
	free(b);
	release(&f);
}

/* After later rounds an element is allowed the larger of 4 × the first
 * round's spread and 1.5 × the spread over all rounds, never 4 × the
 * merged maximum (a white-box attack pushed a chaotic GRU's elements to
 * 2.5 × its own replicas' range, inside 4 × a 64-run maximum 19 times in
 * 20): an error of 3 × the merged spread is a mismatch, 1.4 × passes. */
static void test_later_rounds_factor(void **s)
{
	struct check_tol tol;
	struct check_cmp c;
	double exp[2] = { 1.0, 1.0 }, first[2] = { 0.0, 0.25 }, all[2] = { 0.5, 0.25 };
	double base[2] = { 1.0, 1.0 }, got[2];
	(void)s;
	check_tol_default(&tol, 1e-4, 1e-4, 1.0);
	tol.dist = false;
	tol.spread = all;
	tol.spread_first = first;
	tol.cond_rounds = 2;
	assert_true(check_cond_allowance(&tol, 0) == CHECK_COND_FACTOR_LATER * 0.5);
	assert_true(check_cond_allowance(&tol, 1) == CHECK_COND_FACTOR * 0.25);
	got[0] = 1.0 + 3 * 0.5;   /* within 4 × the merged spread, beyond 1.5 × */
	got[1] = 1.0;
	check_compare_tol(got, exp, base, 2, &tol, &c);
	assert_false(c.pass);
	assert_int_equal(c.worst, 0);
	got[0] = 1.0 + 1.4 * 0.5;
	check_compare_tol(got, exp, base, 2, &tol, &c);
	assert_true(c.pass);
	got[1] = 1.0 + 0.9;        /* 4 × the first round's 0.25 covers it */
	check_compare_tol(got, exp, base, 2, &tol, &c);
	assert_true(c.pass);
	tol.spread_first = NULL;   /* one round: 4 × the spread */
	got[0] = 1.0 + 3 * 0.5;
	check_compare_tol(got, exp, base, 2, &tol, &c);
	assert_true(c.pass);
}

/* With the ill-conditioned element accepted, a wrong element elsewhere (a
 * well-conditioned row) is still a mismatch, and names that element. */
static void wrong_elsewhere(struct fix *f, int64_t at)
{
	struct check_cmp c;
	measure(f, 1);
	assert_true(judge(f, f->spread, &c));
	f->got[at] = f->ref[at] + 10 * lim(f, at);
	assert_false(judge(f, f->spread, &c));
	assert_int_equal(c.failed, CHECK_BOUND_ELEMENT);
	assert_int_equal(c.worst, at);
	assert_int_equal(c.n_bad, 1);
	assert_true(f->spread[at] * CHECK_COND_FACTOR < lim(f, at));
}

static void test_wrong_well_conditioned(void **s)
{
	struct fix f;
	(void)s;
	tie_case(&f);
	wrong_elsewhere(&f, 2 * 3 + 1);
	release(&f);
	relu_case(&f);
	wrong_elsewhere(&f, 4 * 5 + 2);
	release(&f);
}

/* Every element pushed by 0.9 of its tolerance (each passes on its own):
 * the bias bound still fails with the measurement, the ill-conditioned
 * elements being left out of it and the rest carrying the bias. */
static void biased(struct fix *f)
{
	struct check_cmp c;
	measure(f, 2);
	for (int64_t i = 0; i < f->n; i++)
		if (f->spread[i] * CHECK_COND_FACTOR <= lim(f, i))
			f->got[i] = f->ref[i] + 0.9 * lim(f, i);
	assert_false(judge(f, f->spread, &c));
	assert_true(c.failed == CHECK_BOUND_BIAS || c.failed == CHECK_BOUND_AGGREGATE);
	assert_int_equal(c.n_bad, 0);
	assert_int_equal(c.n_ill, 2);
}

static void test_biased_rejected(void **s)
{
	struct fix f;
	(void)s;
	tie_case(&f);
	biased(&f);
	release(&f);
	relu_case(&f);
	biased(&f);
	release(&f);
}

/* The allowance is bounded: the ill-conditioned elements off by 10x the
 * spread measured there are a mismatch. */
static void beyond_spread(struct fix *f)
{
	struct check_cmp c;
	measure(f, 3);
	for (int64_t i = 0; i < 2; i++) {
		assert_true(f->spread[i] * CHECK_COND_FACTOR > lim(f, i));
		f->got[i] = f->ref[i] + 10 * f->spread[i];
	}
	assert_false(judge(f, f->spread, &c));
	assert_int_equal(c.failed, CHECK_BOUND_ELEMENT);
	assert_int_equal(c.n_bad, 2);
	assert_true(c.worst == 0 || c.worst == 1);
}

static void test_beyond_spread_rejected(void **s)
{
	struct fix f;
	(void)s;
	tie_case(&f);
	beyond_spread(&f);
	release(&f);
	relu_case(&f);
	beyond_spread(&f);
	release(&f);
}

/* Well-conditioned inputs (the task's own init): the spread stays far
 * below the tolerance everywhere, so the measurement allows nothing new. */
static void test_ordinary_allows_nothing(void **s)
{
	struct fix f;
	struct check_cmp c;
	(void)s;
	load(&f, "L2/99_Matmul_GELU_Softmax", 16, 100, 129, false, "y");
	reference(&f);
	measure(&f, 4);
	assert_true(judge(&f, f.spread, &c));
	assert_int_equal(c.n_ill, 0);
	for (int64_t i = 0; i < f.n; i++)
		assert_true(f.spread[i] * CHECK_COND_FACTOR < lim(&f, i));
	release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tie_accepted),
		cmocka_unit_test(test_relu_flip_accepted),
		cmocka_unit_test(test_relu_flip_every_key),
		cmocka_unit_test(test_rounds_merge),
		cmocka_unit_test(test_later_rounds_factor),
		cmocka_unit_test(test_wrong_well_conditioned),
		cmocka_unit_test(test_biased_rejected),
		cmocka_unit_test(test_beyond_spread_rejected),
		cmocka_unit_test(test_ordinary_allows_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
