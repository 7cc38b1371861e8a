/* test_timing.c — medians, bootstrap intervals, speedup intervals and the
 * stopping rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "timing/timing.h"

static void test_median(void **s)
{
	double a[5] = { 5, 1, 4, 2, 3 }, b[4] = { 4, 1, 3, 2 };
	(void)s;
	assert_true(timing_median(a, 5) == 3);
	assert_true(timing_median(b, 4) == 2.5);
	assert_true(a[0] == 5); /* not modified */
}

static void test_summarize(void **s)
{
	double x[50];
	struct timing_stats st;
	(void)s;
	for (int i = 0; i < 50; i++)
		x[i] = 100 + (i % 5); /* median 102 */
	timing_summarize(x, 50, 1, &st);
	assert_int_equal(st.n, 50);
	assert_true(st.median == 102);
	assert_true(st.lo <= 102 && st.hi >= 102 && st.lo >= 100 && st.hi <= 104);
	assert_true(st.rel_halfwidth < 0.02);
	/* deterministic for a seed */
	struct timing_stats st2;
	timing_summarize(x, 50, 1, &st2);
	assert_true(st.lo == st2.lo && st.hi == st2.hi);
}

static void test_speedup(void **s)
{
	double base[20], cand[20], med, lo, hi;
	(void)s;
	for (int i = 0; i < 20; i++) {
		base[i] = 200 + (i % 3);
		cand[i] = 100 + (i % 3) * 0.5;
	}
	timing_speedup(base, cand, 20, 3, &med, &lo, &hi);
	/* every pair's ratio is 2 (200/100, 201/100.5, 202/101) */
	assert_true(fabs(med - 2.0) < 1e-12);
	assert_true(lo <= med && med <= hi && lo > 1.9 && hi < 2.1);
	/* a load that slows both sides of some pairs ×4 cancels in those
	 * pairs' ratios: the figure stays 2 */
	for (int i = 0; i < 20; i += 3) {
		base[i] *= 4;
		cand[i] *= 4;
	}
	timing_speedup(base, cand, 20, 3, &med, &lo, &hi);
	assert_true(fabs(med - 2.0) < 1e-12);
}

static void test_stopping_rule(void **s)
{
	struct timing_rule r = { .min_samples = 10, .max_samples = 100, .rel_target = 0.02, .max_seconds = 1 };
	double steady[10], noisy[30];
	bool flag;
	(void)s;
	for (int i = 0; i < 10; i++)
		steady[i] = 100;
	for (int i = 0; i < 30; i++)
		noisy[i] = (i % 2) ? 100 : 300;
	/* below the minimum: go on */
	assert_false(timing_should_stop(&r, steady, 9, steady, 9, 0.1, &flag));
	/* steady: stop, not noisy */
	assert_true(timing_should_stop(&r, steady, 10, steady, 10, 0.1, &flag));
	assert_false(flag);
	/* noisy within the cap: go on; at the cap: stop and say noisy */
	assert_false(timing_should_stop(&r, noisy, 30, noisy, 30, 0.5, &flag));
	assert_true(timing_should_stop(&r, noisy, 30, noisy, 30, 1.5, &flag));
	assert_true(flag);
}

/* The minimum holds past any time cap: a candidate that sleeps through its
 * first calls cannot end the measurement (and its re-checks) early. */
static void test_minimum_past_cap(void **s)
{
	struct timing_rule r = { .min_samples = 10, .max_samples = 100, .rel_target = 0.02, .max_seconds = 1 };
	double slow[10];
	bool flag;
	(void)s;
	for (int i = 0; i < 10; i++)
		slow[i] = 1.9e6;
	for (int n = 1; n < 10; n++)
		assert_false(timing_should_stop(&r, slow, n, slow, n, 1e3, &flag));
	assert_true(timing_should_stop(&r, slow, 10, slow, 10, 1e3, &flag));
	/* at max_samples it stops even below the time cap */
	double many[100];
	for (int i = 0; i < 100; i++)
		many[i] = (i % 2) ? 100 : 300;
	assert_true(timing_should_stop(&r, many, 100, many, 100, 0.1, &flag));
}

/* What a stalled call is charged (timing_uncontended_ns). */
static void test_uncontended(void **s)
{
	enum timing_adj how;
	(void)s;
	/* quiet: the wall time stands */
	struct timing_call q = { .wall_ns = 1000000, .cpu_ns = 990000, .stall_some_ns = 0, .stall_full_ns = 0,
				 .ncpu = 1 };
	assert_float_equal(timing_uncontended_ns(&q, &how), 1e6, 1e-9);
	assert_int_equal(how, TIMING_CLEAN);
	/* on its one CPU, another process held it for 3 ms of a 4 ms call:
	 * taken out */
	struct timing_call p = { .wall_ns = 4000000, .cpu_ns = 1000000, .stall_some_ns = 3000000,
				 .stall_full_ns = 3000000, .ncpu = 1 };
	assert_float_equal(timing_uncontended_ns(&p, &how), 1e6, 1e-9);
	assert_int_equal(how, TIMING_CORRECTED);
	/* never more than the group's CPU time leaves: a stall record of 3.5 ms
	 * with 1 ms of CPU in a 4 ms call takes out 3 ms */
	p.stall_full_ns = 3500000;
	assert_float_equal(timing_uncontended_ns(&p, &how), 1e6, 1e-9);
	p.stall_full_ns = 3000000;
	/* the same on two CPUs: the kernel averages "full" over them, so a
	 * thread starving on one while another computes would count; nothing
	 * is taken out, and the sample is preempted beyond correction */
	p.ncpu = 2;
	assert_float_equal(timing_uncontended_ns(&p, &how), 4e6, 1e-9);
	assert_int_equal(how, TIMING_PREEMPTED);
	/* a thread of its own kept another waiting (some, not full): nothing
	 * is taken out */
	struct timing_call self = { .wall_ns = 4000000, .cpu_ns = 4000000, .stall_some_ns = 3000000,
				    .stall_full_ns = 0, .ncpu = 1 };
	assert_float_equal(timing_uncontended_ns(&self, &how), 4e6, 1e-9);
	assert_int_equal(how, TIMING_CLEAN);
	/* off the CPU for most of the call with no stall recorded (preempted
	 * for less than a tick, or sleeping): nothing taken out, counted as
	 * preempted (so a row of them is not trusted) */
	struct timing_call sub = { .wall_ns = 3000000, .cpu_ns = 1000000, .stall_some_ns = 0,
				   .stall_full_ns = 0, .ncpu = 1 };
	assert_float_equal(timing_uncontended_ns(&sub, &how), 3e6, 1e-9);
	assert_int_equal(how, TIMING_PREEMPTED);
	/* no pressure records: likewise */
	struct timing_call np = { .wall_ns = 4000000, .cpu_ns = 1000000, .stall_some_ns = -1,
				  .stall_full_ns = -1, .ncpu = 1 };
	assert_float_equal(timing_uncontended_ns(&np, &how), 4e6, 1e-9);
	assert_int_equal(how, TIMING_PREEMPTED);
	/* the bracket's own thaw and freeze (tens of us off the CPU) in a short
	 * quiet call are not preemption */
	struct timing_call shortq = { .wall_ns = 100000, .cpu_ns = 75000, .stall_some_ns = 0,
				      .stall_full_ns = 0, .ncpu = 1 };
	timing_uncontended_ns(&shortq, &how);
	assert_int_equal(how, TIMING_CLEAN);
	/* a stall record larger than the bracket (us rounding) never makes a
	 * negative time */
	struct timing_call r = { .wall_ns = 1500, .cpu_ns = 0, .stall_some_ns = 2000, .stall_full_ns = 2000,
				 .ncpu = 1 };
	assert_true(timing_uncontended_ns(&r, &how) >= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_summarize),
		cmocka_unit_test(test_speedup),
		cmocka_unit_test(test_stopping_rule),
		cmocka_unit_test(test_minimum_past_cap),
		cmocka_unit_test(test_uncontended),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
