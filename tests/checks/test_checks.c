/* test_checks.c — the pure buffer checks: tolerance comparison, degeneracy,
 * guard patterns, poison, verdict names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "checks/check.h"

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
		cmocka_unit_test(test_degenerate),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_verdict_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
