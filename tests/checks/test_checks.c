/* test_checks.c — the pure buffer checks: tolerance comparison (each
 * gaming pattern that passed the old worst-element rule with its floor of
 * 1, and the honest perturbations that must keep passing), degeneracy,
 * the worst and the largest-error element, guard patterns, poison, verdict
 * names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checks/check.h"
#include "tasks/task_rng.h"

/* The rule before issue 17: worst element only, scale max(1, rms). */
static bool old_rule(const double *got, const double *exp, const double *base, int64_t n)
{
	struct check_tol tol;
	struct check_cmp c;
	check_tol_default(&tol, 1e-4, 1e-4, fmax(1.0, check_rms(exp, n)));
	tol.dist = false;
	check_compare_tol(got, exp, base, n, &tol, &c);
	return c.pass;
}

/* The verifier's rule at the output's own scale; returns the failed bound. */
static enum check_bound new_rule(const double *got, const double *exp, const double *base, int64_t n)
{
	struct check_tol tol;
	struct check_cmp c;
	check_tol_default(&tol, 1e-4, 1e-4, check_rms(exp, n));
	check_compare_tol(got, exp, base, n, &tol, &c);
	assert_true(c.pass == (c.failed == CHECK_BOUND_NONE));
	return c.failed;
}

/* What an f32 kernel as good as the baseline returns: exp rounded to float. */
static void f32_of(const double *exp, double *out, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		out[i] = (float)exp[i];
}

static void normal_vec(double *v, int64_t n, double sd, uint64_t seed)
{
	struct task_rng r;
	task_rng_seed(&r, seed);
	for (int64_t i = 0; i < n; i++)
		v[i] = sd * task_rng_normal(&r);
}

static void test_compare_tolerance(void **s)
{
	double exp[4] = { 1, 2, 3, 4 }, got[4] = { 1, 2, 3, 4 };
	struct check_cmp c;
	(void)s;
	check_compare(got, exp, NULL, 4, 1e-4, 1e-4, 0, &c);
	assert_true(c.pass);
	assert_int_equal(c.n_bad, 0);
	/* scale = max(1, rms(exp)) = sqrt(7.5): atol*scale + rtol*4 = 6.74e-4 */
	got[3] = 4 + 6.7e-4;
	check_compare(got, exp, NULL, 4, 1e-4, 1e-4, 0, &c);
	assert_true(c.pass);
	got[3] = 4 + 6.8e-4;
	check_compare(got, exp, NULL, 4, 1e-4, 1e-4, 0, &c);
	assert_false(c.pass);
	assert_int_equal(c.worst, 3);
	assert_int_equal(c.n_bad, 1);
	assert_true(fabs(c.max_abs - 6.8e-4) < 1e-12);
}

static void test_compare_nan_inf_baseline(void **s)
{
	double exp[3] = { 1, INFINITY, 5 }, got[3] = { NAN, INFINITY, 5 }, base[3] = { 1, INFINITY, 5 };
	struct check_cmp c;
	(void)s;
	check_compare(got, exp, base, 3, 1e-4, 1e-4, 2, &c);
	assert_false(c.pass); /* NaN matches nothing */
	assert_int_equal(c.worst, 0);
	got[0] = 1;
	check_compare(got, exp, base, 3, 1e-4, 1e-4, 2, &c);
	assert_true(c.pass); /* Inf equals the reference's Inf */
	/* an overflow where the baseline overflows too is accepted */
	exp[1] = 3e38;
	check_compare(got, exp, base, 3, 1e-4, 1e-4, 2, &c);
	assert_true(c.pass);
	/* but not where the baseline is finite */
	base[1] = 3e38;
	check_compare(got, exp, base, 3, 1e-4, 1e-4, 2, &c);
	assert_false(c.pass);
}

static void test_compare_baseline_allowance(void **s)
{
	double exp[2] = { 100, 0 }, base[2] = { 100.5, 0 }, got[2] = { 100.9, 0 };
	struct check_cmp c;
	(void)s;
	/* tolerance 1e-4*70.7 + 1e-4*100 = 0.017; baseline error 0.5: allow 1.0 */
	check_compare(got, exp, base, 2, 1e-4, 1e-4, 2, &c);
	assert_true(c.pass);
	assert_true(fabs(c.base_max_abs - 0.5) < 1e-12);
	got[0] = 101.1;
	check_compare(got, exp, base, 2, 1e-4, 1e-4, 2, &c);
	assert_false(c.pass);
}

#define N 4096

/* softmax of one row of D = 1024, rounded to 1.9e-4 steps: median relative
 * error 7%, worst element under the old floor of atol*1 */
static void test_gaming_softmax_rounded(void **s)
{
	const int64_t d = 1024;
	double *x = malloc(sizeof(double) * 3 * d), *exp = x + d, *got = exp + d, *base, sum = 0;
	(void)s;
	base = malloc(sizeof(double) * d);
	normal_vec(x, d, 1, 1);
	for (int64_t i = 0; i < d; i++)
		sum += exp[i] = __builtin_exp(x[i]);
	for (int64_t i = 0; i < d; i++) {
		exp[i] /= sum;
		got[i] = __builtin_round(exp[i] / 1.9e-4) * 1.9e-4;
	}
	f32_of(exp, base, d);
	assert_true(old_rule(got, exp, base, d));
	assert_int_equal(new_rule(got, exp, base, d), CHECK_BOUND_ELEMENT);
	free(x);
	free(base);
}

/* every element pushed by 0.9x its tolerance: within the worst-element
 * bound everywhere; the aggregate error (same sign: also the bias) shows it */
static void test_gaming_pushed(void **s)
{
	double *exp = malloc(sizeof(double) * 3 * N), *got = exp + N, *base = got + N, sc;
	(void)s;
	normal_vec(exp, N, 3, 2);
	f32_of(exp, base, N);
	sc = check_rms(exp, N);
	for (int64_t i = 0; i < N; i++)
		got[i] = exp[i] + 0.9 * (1e-4 * sc + 1e-4 * fabs(exp[i]));
	assert_true(old_rule(got, exp, base, N));
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_AGGREGATE);
	/* alternating signs: no bias, the aggregate still */
	for (int64_t i = 0; i < N; i++)
		got[i] = exp[i] + (i & 1 ? 0.9 : -0.9) * (1e-4 * sc + 1e-4 * fabs(exp[i]));
	assert_true(old_rule(got, exp, base, N));
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_AGGREGATE);
	/* a small push all one way stays under the aggregate floor; the bias shows it */
	for (int64_t i = 0; i < N; i++)
		got[i] = exp[i] + 0.12e-4 * sc;
	assert_true(old_rule(got, exp, base, N));
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_BIAS);
	free(exp);
}

/* cross-entropy backward without the softmax term: dlogits = -onehot/B.
 * The softmax terms (1/(B*C)) all lie under the old floor of 1e-4. */
static void test_gaming_ce_no_softmax(void **s)
{
	const int64_t b = 512, c = 1000, n = b * c; /* smoke/cross_entropy's cpu bench shape */
	double *x = malloc(sizeof(double) * 4 * (size_t)n), *exp = x + n, *got = exp + n, *base = got + n;
	(void)s;
	normal_vec(x, n, 1, 3);
	for (int64_t r = 0; r < b; r++) {
		double sum = 0;
		int64_t tgt = (r * 7919) % c;
		for (int64_t k = 0; k < c; k++)
			sum += __builtin_exp(x[r * c + k]);
		for (int64_t k = 0; k < c; k++) {
			double oh = k == tgt ? 1 : 0;
			exp[r * c + k] = (__builtin_exp(x[r * c + k]) / sum - oh) / (double)b;
			got[r * c + k] = -oh / (double)b;
		}
	}
	f32_of(exp, base, n);
	assert_true(old_rule(got, exp, base, n));
	assert_int_equal(new_rule(got, exp, base, n), CHECK_BOUND_ELEMENT);
	free(x);
}

/* a small-magnitude output (rms 1e-3) off by half the old absolute floor */
static void test_gaming_small_scale(void **s)
{
	double *exp = malloc(sizeof(double) * 3 * N), *got = exp + N, *base = got + N;
	(void)s;
	normal_vec(exp, N, 1e-3, 4);
	f32_of(exp, base, N);
	for (int64_t i = 0; i < N; i++)
		got[i] = exp[i] + 5e-5;
	assert_true(old_rule(got, exp, base, N));
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_ELEMENT);
	free(exp);
}

/* honest kernels: what float arithmetic done another way produces */
static void test_honest_perturbations(void **s)
{
	double *exp = malloc(sizeof(double) * 3 * N), *got = exp + N, *base = got + N;
	struct task_rng r;
	(void)s;
	task_rng_seed(&r, 5);
	normal_vec(exp, N, 1, 6);
	f32_of(exp, base, N);
	/* another summation order: a few ulps either way */
	for (int64_t i = 0; i < N; i++)
		got[i] = (float)(exp[i] * (1 + 4e-7 * (2 * task_rng_uniform(&r) - 1)));
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_NONE);
	/* an approximate exp/tanh within 1e-6 relative, random sign */
	for (int64_t i = 0; i < N; i++)
		got[i] = exp[i] * (1 + 1e-6 * (2 * task_rng_uniform(&r) - 1));
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_NONE);
	/* the same approximation biased one way (a polynomial that always
	 * errs high): mean error 1e-6 of the scale, under the bias floor 1e-5 */
	for (int64_t i = 0; i < N; i++)
		got[i] = exp[i] + 1e-6 * fabs(exp[i]);
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_NONE);
	/* cancellation: the baseline itself is off by 1e-3 of the scale (a
	 * sum of large terms that nearly cancel); a kernel twice as noisy, in
	 * another order, passes on the baseline's multiples (its error is 20x
	 * the aggregate floor) */
	for (int64_t i = 0; i < N; i++) {
		double u = 2 * task_rng_uniform(&r) - 1, w = 2 * task_rng_uniform(&r) - 1;
		base[i] = exp[i] + 1e-3 * u;
		got[i] = exp[i] + 1.9e-3 * w;
	}
	assert_int_equal(new_rule(got, exp, base, N), CHECK_BOUND_NONE);
	free(exp);
}

/* the conv bias gradient before a training-mode BatchNorm (L2/73): zero in
 * exact arithmetic, rounding noise of ~1e-13 in the double reference, ~1e-5
 * in float; judged at the other gradients' scale (343), not its own */
static void test_near_zero_scale(void **s)
{
	double rms[3] = { 1e-13, 343, 2 }, rms2[2] = { 1e-6, 1 };
	double exp[8], got[8], base[8];
	struct check_tol tol;
	struct check_cmp c;
	(void)s;
	assert_true(check_scale(rms, 3, 0) == 343);
	assert_true(check_scale(rms, 3, 1) == 343);
	assert_true(check_scale(rms, 3, 2) == 2);
	/* small but not zero in exact arithmetic: its own scale */
	assert_true(check_scale(rms2, 2, 0) == 1e-6);
	for (int i = 0; i < 8; i++) {
		exp[i] = (i & 1 ? 1e-13 : -1e-13) * (1 + i);
		got[i] = (i % 3 ? 2e-5 : -3e-5);
		base[i] = (i & 2 ? 1e-6 : -1e-6);
	}
	check_tol_default(&tol, 1e-4, 1e-4, check_scale(rms, 3, 0));
	check_compare_tol(got, exp, base, 8, &tol, &c);
	assert_true(c.pass);
	check_tol_default(&tol, 1e-4, 1e-4, check_rms(exp, 8));
	check_compare_tol(got, exp, base, 8, &tol, &c);
	assert_false(c.pass);
	/* but noise at the other outputs' scale is still caught */
	for (int i = 0; i < 8; i++)
		got[i] = 0.1;
	check_tol_default(&tol, 1e-4, 1e-4, check_scale(rms, 3, 0));
	check_compare_tol(got, exp, base, 8, &tol, &c);
	assert_false(c.pass);
	assert_int_equal(c.failed, CHECK_BOUND_ELEMENT);
}

/* The two elements a comparison names: the worst (largest excess over the
 * tolerance) and the largest abs error, which differ where |expected| is
 * large enough to allow more; all exact: element 0; a NaN counts for the
 * worst, never for the largest error. */
static void test_worst_and_largest(void **s)
{
	double exp[5] = { 0, 100, 0, 100, 1 }, got[5] = { 0, 100.005, 0.003, 100, 1 };
	double nan_got[5] = { 0, 100.005, NAN, 100, 1 };
	struct check_cmp c;
	struct check_tol tol;
	(void)s;
	check_tol_default(&tol, 1e-4, 1e-4, 10);
	tol.dist = false;
	check_compare_tol(got, exp, NULL, 5, &tol, &c);
	assert_false(c.pass);
	assert_int_equal(c.worst, 2);          /* 0.003 against 1e-3 allowed */
	assert_int_equal(c.max_abs_at, 1);     /* 0.005, within its 1e-3 + 1e-2 */
	assert_true(fabs(c.max_abs - 0.005) < 1e-9);
	check_compare_tol(exp, exp, NULL, 5, &tol, &c);
	assert_true(c.pass);
	assert_int_equal(c.max_abs_at, 0);
	check_compare_tol(nan_got, exp, NULL, 5, &tol, &c);
	assert_int_equal(c.worst, 2);
	assert_int_equal(c.max_abs_at, 1);
	check_compare_tol(got, exp, NULL, 0, &tol, &c);
	assert_int_equal(c.max_abs_at, -1);
}

static void test_cmp_str(void **s)
{
	double exp[4] = { 1, 2, 3, 4 }, got[4] = { 1, 2, 3, 5 };
	struct check_tol tol;
	struct check_cmp c;
	char buf[400];
	(void)s;
	check_tol_default(&tol, 1e-4, 1e-4, check_rms(exp, 4));
	check_compare_tol(got, exp, exp, 4, &tol, &c);
	check_cmp_str(&c, &tol, buf, sizeof buf);
	assert_non_null(strstr(buf, "element 3: got 5, expected 4"));
	/* 1.5e-4 relative: each within atol·2.74 + rtol·|exp|, the rms over
	 * the floor, which at n = 4 is (atol+rtol)/sqrt(4) */
	for (int i = 0; i < 4; i++)
		got[i] = exp[i] * (1 + 1.5e-4);
	check_compare_tol(got, exp, exp, 4, &tol, &c);
	assert_int_equal(c.failed, CHECK_BOUND_AGGREGATE);
	check_cmp_str(&c, &tol, buf, sizeof buf);
	assert_non_null(strstr(buf, "rms error"));
	assert_non_null(strstr(buf, "+ 0.5 × (atol+rtol)"));
}

/* One element is no distribution (issue 28, item 6). smoke/gelu at {N=1}
 * under the small profile, a table GELU that is x/2 below 2^-13: x just
 * under it, error 0.399 x^2 = 4.8e-5 of the scale |x| (the input's rms),
 * a third of its element tolerance; the f32 baseline exact. The fixed
 * aggregate floor (2e-5) rejected it; with the floors at least
 * (atol+rtol)/sqrt(n) it passes. Catches: the few-element floor dropped or
 * weakened (few_floor 0: the old rule, kept here to show it fails). */
static void test_few_one_element(void **s)
{
	double x = 1.213e-4, exp = x * 0.5 * erfc(-x / sqrt(2.0)), got = 0.5 * x, base = (float)exp;
	struct check_tol tol;
	struct check_cmp c;
	(void)s;
	check_tol_default(&tol, 1e-4, 1e-4, x);
	check_compare_tol(&got, &exp, &base, 1, &tol, &c);
	assert_true(c.pass);
	assert_true(c.agg > 4.8e-5 && c.agg < 4.9e-5);
	assert_true(c.agg_floor == 1 && c.bias_floor == 1);
	tol.few_floor = 0;
	check_compare_tol(&got, &exp, &base, 1, &tol, &c);
	assert_int_equal(c.failed, CHECK_BOUND_AGGREGATE);
	/* beyond the element tolerance it is still a mismatch */
	tol.few_floor = CHECK_FEW_FLOOR;
	got = exp + 1.01 * (1e-4 * x + 1e-4 * fabs(exp));
	check_compare_tol(&got, &exp, &base, 1, &tol, &c);
	assert_int_equal(c.failed, CHECK_BOUND_ELEMENT);
}

/* At n = 1 the distribution bounds never reject what the element bound
 * accepts (the scale is at least |exp| there): 2000 random values, scales
 * and errors within 0.999 of the element tolerance, either sign, the
 * baseline exact or off by a little. Catches a few-element floor below
 * (atol+rtol)/sqrt(n) (0.9 × it fails here) or a bias floor left fixed. */
static void test_few_element_implies(void **s)
{
	struct task_rng r;
	(void)s;
	task_rng_seed(&r, 28);
	for (int q = 0; q < 2000; q++) {
		double exp = (2 * task_rng_uniform(&r) - 1) * pow(10, 6 * task_rng_uniform(&r) - 3);
		double sc = fabs(exp) * (1 + (q & 1 ? 3 * task_rng_uniform(&r) : 0));
		double lim = 1e-4 * sc + 1e-4 * fabs(exp), got = exp + (q & 2 ? 0.999 : -0.999) * lim;
		double base = q & 4 ? exp : (float)exp;
		struct check_tol tol;
		struct check_cmp c;
		check_tol_default(&tol, 1e-4, 1e-4, sc);
		check_compare_tol(&got, &exp, &base, 1, &tol, &c);
		if (!c.pass)
			fail_msg("exp %g scale %g got %g: bound %d failed", exp, sc, got, (int)c.failed);
	}
}

/* The floors against n: (atol+rtol)/sqrt(n) up to n = 100 (aggregate) and
 * 400 (bias), the fixed fractions above, so large outputs are judged as
 * before; and a push of 0.9x the tolerance on every element is still
 * caught from n = 2 on (its rms is 0.9 × (atol+rtol) of the scale where
 * |exp| is constant). Catches floors that grow with n or a few-element
 * floor applied to every n. */
static void test_few_floor_by_n(void **s)
{
	static double exp[10000], got[10000], base[10000];
	const int64_t ns[] = { 2, 4, 16, 64, 100, 400, 10000 };
	(void)s;
	for (int q = 0; q < 7; q++) {
		int64_t n = ns[q];
		struct check_tol tol;
		struct check_cmp c;
		for (int64_t i = 0; i < n; i++) {
			exp[i] = i & 1 ? 1.5 : -1.5;
			base[i] = exp[i];
			got[i] = exp[i] + 0.9 * (1e-4 * 1.5 + 1e-4 * 1.5) * (i & 2 ? 1 : -1);
		}
		check_tol_default(&tol, 1e-4, 1e-4, check_rms(exp, n));
		check_compare_tol(got, exp, base, n, &tol, &c);
		assert_true(fabs(c.agg_floor - fmax(0.1, 1 / sqrt((double)n))) < 1e-12);
		assert_true(fabs(c.bias_floor - fmax(0.05, 1 / sqrt((double)n))) < 1e-12);
		assert_false(c.pass);
		assert_int_equal(c.failed, CHECK_BOUND_AGGREGATE);
	}
}

static void test_degenerate(void **s)
{
	double ref[4] = { 1, 2, 3, 4 }, got[4] = { 2, 2, 2, 2 }, zero[4] = { 0 }, inp[4] = { 1, 2, 3, 4 };
	char why[200];
	(void)s;
	assert_true(check_degenerate(got, ref, NULL, 4, 1e-4, why, sizeof why));
	assert_non_null(strstr(why, "constant"));
	assert_true(check_degenerate(zero, ref, NULL, 4, 1e-4, why, sizeof why));
	got[0] = NAN;
	assert_true(check_degenerate(got, ref, NULL, 4, 1e-4, why, sizeof why));
	assert_non_null(strstr(why, "NaN at element 0"));
	assert_false(check_degenerate(ref, ref, NULL, 4, 1e-4, why, sizeof why));
	/* constant where the reference is constant too is not degenerate */
	double c4[4] = { 5, 5, 5, 5 };
	assert_false(check_degenerate(c4, c4, NULL, 4, 1e-4, why, sizeof why));
	/* equal to the input where the reference differs */
	double r2[4] = { 0, 2, 0, 4 };
	assert_true(check_equals_input(inp, inp, r2, 4, 1e-4));
	assert_false(check_equals_input(inp, inp, inp, 4, 1e-4));
}

static void test_patterns(void **s)
{
	unsigned char b[100];
	(void)s;
	check_fill_pattern(b, sizeof b, 42);
	assert_int_equal(check_verify_pattern(b, sizeof b, 42), -1);
	assert_int_equal(check_verify_pattern(b, sizeof b, 43) >= 0, 1);
	b[77] ^= 1;
	assert_int_equal(check_verify_pattern(b, sizeof b, 42), 77);
	float f[3];
	check_poison(f, sizeof f, 0, 1);
	assert_true(isnan(f[0]) && isnan(f[2]));
}

static void test_verdict_names(void **s)
{
	(void)s;
	assert_string_equal(check_verdict_name(CHECK_OK), "ok");
	assert_string_equal(check_verdict_name(CHECK_STALE_RESULT), "stale_result");
	for (int i = 0; i < CHECK_VERDICT_COUNT; i++)
		assert_int_equal(check_verdict_parse(check_verdict_name((enum check_verdict)i)), i);
	assert_int_equal(check_verdict_parse("okay"), -1);
	/* SPEC §4 order */
	assert_true(CHECK_FORMAT_ERROR < CHECK_COMPILE_ERROR && CHECK_TIMEOUT < CHECK_OUT_OF_BOUNDS &&
		    CHECK_INPUT_MUTATED < CHECK_DEGENERATE && CHECK_DEGENERATE < CHECK_MISMATCH &&
		    CHECK_NONDETERMINISTIC < CHECK_STALE_RESULT && CHECK_STALE_RESULT < CHECK_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_tolerance),
		cmocka_unit_test(test_compare_nan_inf_baseline),
		cmocka_unit_test(test_compare_baseline_allowance),
		cmocka_unit_test(test_gaming_softmax_rounded),
		cmocka_unit_test(test_gaming_pushed),
		cmocka_unit_test(test_gaming_ce_no_softmax),
		cmocka_unit_test(test_gaming_small_scale),
		cmocka_unit_test(test_honest_perturbations),
		cmocka_unit_test(test_near_zero_scale),
		cmocka_unit_test(test_worst_and_largest),
		cmocka_unit_test(test_cmp_str),
		cmocka_unit_test(test_few_one_element),
		cmocka_unit_test(test_few_element_implies),
		cmocka_unit_test(test_few_floor_by_n),
		cmocka_unit_test(test_degenerate),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_verdict_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
