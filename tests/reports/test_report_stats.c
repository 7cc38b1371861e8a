/* test_report_stats.c — the statistics of reports/ against exact values:
 * pass@k against brute-force enumeration of every k-subset, Pearson r on a
 * known example, type-7 quartiles, bucket boundaries, Student t quantiles and
 * the geometric-mean interval. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "reports/report_impl.h"
#include "test_util.h"

/* Fraction of the k-subsets of n items (items 0..c-1 correct) holding at
 * least one correct item, by enumerating subsets as bit masks. */
static double brute_pass(int n, int c, int k)
{
	long hit = 0, total = 0;

	for (unsigned m = 0; m < (1u << n); m++) {
		if (__builtin_popcount(m) != k)
			continue;
		total++;
		hit += (m & ((1u << c) - 1)) != 0;
	}
	return (double)hit / (double)total;
}

static void test_pass_at_k_brute(void **state)
{
	(void)state;
	for (int n = 1; n <= 12; n++)
		for (int c = 0; c <= n; c++)
			for (int k = 1; k <= n; k++)
				assert_near(report_pass_at_k(n, c, k), brute_pass(n, c, k), 1e-12);
}

static void test_pass_at_k_values(void **state)
{
	(void)state;
	/* Chen et al.: n = 10, c = 3, k = 1 → c/n. */
	assert_near(report_pass_at_k(10, 3, 1), 0.3, 1e-15);
	/* 1 − C(7,5)/C(10,5) = 1 − 21/252. */
	assert_near(report_pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0, 1e-15);
	assert_near(report_pass_at_k(5, 0, 3), 0.0, 0);
	assert_near(report_pass_at_k(5, 3, 3), 1.0, 0);   /* n − c < k */
	assert_true(isnan(report_pass_at_k(3, 1, 4)));            /* k > n */
	assert_true(isnan(report_pass_at_k(3, 1, 0)));
	/* Large n stays finite and exact enough: 1 − C(180,100)/C(200,100). */
	{
		double lg = lgamma(181) - lgamma(101) - lgamma(81) -
			    (lgamma(201) - lgamma(101) - lgamma(101));
		assert_near(report_pass_at_k(200, 20, 100), 1.0 - exp(lg), 1e-12);
	}
}

static void test_pearson(void **state)
{
	/* x = 1..5, y = 2,4,5,4,5: r = 6 / sqrt(10 * 6) = 0.7745966692... */
	double x[] = { 1, 2, 3, 4, 5 }, y[] = { 2, 4, 5, 4, 5 }, z[] = { 3, 3, 3, 3, 3 };
	double neg[] = { 10, 8, 6, 4, 2 };
	(void)state;
	assert_near(report_pearson(x, y, 5), 6.0 / sqrt(60.0), 1e-12);
	assert_near(report_pearson(x, neg, 5), -1.0, 1e-12);
	assert_true(isnan(report_pearson(x, z, 5)));  /* zero variance */
	assert_true(isnan(report_pearson(x, y, 1)));  /* n < 2 */
}

static void test_quantiles(void **state)
{
	double v[] = { 1000, 3000, 4000, 5000, 8500, 8500, 9000, 9000 };
	double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 };
	(void)state;
	assert_near(report_quantile(v, 8, 0.25), 3750, 1e-9);
	assert_near(report_quantile(v, 8, 0.50), 6750, 1e-9);
	assert_near(report_quantile(v, 8, 0.75), 8625, 1e-9);
	assert_near(report_quantile(v, 8, 0.0), 1000, 0);
	assert_near(report_quantile(v, 8, 1.0), 9000, 0);
	assert_near(report_median(odd, 3), 3, 0);
	assert_near(report_median(even, 4), 2.5, 0);
	assert_true(isnan(report_median(even, 0)));
}

static void test_buckets(void **state)
{
	(void)state;
	assert_int_equal(report_bucket(0), 0);
	assert_int_equal(report_bucket(3999.99), 0);
	assert_int_equal(report_bucket(4000), 1);   /* boundary: Medium */
	assert_int_equal(report_bucket(8500), 1);   /* boundary: Medium */
	assert_int_equal(report_bucket(8500.01), 2);
}

static void test_t_quantile(void **state)
{
	(void)state;
	assert_near(report_t_quantile(0.975, 1), 12.7062047362, 1e-8);
	assert_near(report_t_quantile(0.975, 3), 3.1824463053, 1e-8);
	assert_near(report_t_quantile(0.975, 10), 2.2281388520, 1e-8);
	assert_near(report_t_quantile(0.975, 1e6), 1.9599663, 1e-5);
	assert_near(report_t_quantile(0.025, 10), -2.2281388520, 1e-8);
}

static void test_geomean(void **state)
{
	double v[] = { 2.0, 0.5, 1.0, 1.5 }, one = 4.0, gm, lo, hi, m, sd, half;
	(void)state;
	report_geomean(v, 4, &gm, &lo, &hi);
	assert_near(gm, pow(1.5, 0.25), 1e-12);
	m = log(1.5) / 4;
	sd = sqrt((pow(log(2) - m, 2) + pow(log(0.5) - m, 2) + m * m + pow(log(1.5) - m, 2)) / 3);
	half = 3.1824463053 * sd / 2;
	assert_near(lo, exp(m - half), 1e-8);
	assert_near(hi, exp(m + half), 1e-8);
	assert_near(lo, 0.42519, 1e-4);
	assert_near(hi, 2.8805, 1e-4);
	report_geomean(&one, 1, &gm, &lo, &hi);
	assert_near(gm, 4.0, 1e-12);
	assert_true(isnan(lo) && isnan(hi));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_at_k_brute),
		cmocka_unit_test(test_pass_at_k_values),
		cmocka_unit_test(test_pearson),
		cmocka_unit_test(test_quantiles),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_t_quantile),
		cmocka_unit_test(test_geomean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
