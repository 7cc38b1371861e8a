/* test_report_gate.c — `crucible gate` on gate_base.csv / gate_cur.csv:
 * correctness loss, slowdown beyond interval and threshold, change within
 * noise (interval overlap; interval clear but under the threshold),
 * improvement, missing and new tasks, the fast_1 floor, JUnit and markdown
 * output, and the exit codes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "reports/report.h"
#include "reports/report_impl.h"
#include "test_util.h"

static const char *data_dir = "tests/reports/data";

static char *path(char *buf, const char *name)
{
	snprintf(buf, 4096, "%s/%s", data_dir, name);
	return buf;
}

static const struct report_gate_task *find(const struct report_gate *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->tasks[i].name, name))
			return &g->tasks[i];
	fail_msg("task %s not in the gate", name);
	return NULL;
}

static void compute(const char *b, const char *c, struct report_gate_opts *o,
		    struct report_run *base, struct report_run *cur, struct report_gate *g)
{
	char pb[4096], pc[4096];
	struct cr_err e;

	cr_err_init(&e);
	assert_int_equal(report_run_load(path(pb, b), base, &e), CR_OK);
	assert_int_equal(report_run_load(path(pc, c), cur, &e), CR_OK);
	assert_int_equal(report_gate_compute(base, cur, o, g, &e), CR_OK);
}

static void test_gate_cases(void **state)
{
	struct report_gate_opts o = { 0.05, NAN, 0 };
	struct report_run base, cur;
	struct report_gate g;
	(void)state;
	compute("gate_base.csv", "gate_cur.csv", &o, &base, &cur, &g);
	assert_int_equal(g.n, 9);
	/* ok → mismatch/runtime_error */
	assert_int_equal(find(&g, "t/reg_correct")->verdict, RV_REGRESSED);
	/* best 2.0 [1.9, 2.1] → best 1.5 [1.4, 1.6]: below interval and -25% */
	assert_int_equal(find(&g, "t/slow")->verdict, RV_REGRESSED);
	assert_near(find(&g, "t/slow")->base_sp, 2.0, 0);
	assert_near(find(&g, "t/slow")->cur_sp, 1.5, 0);
	/* 2.0 [1.8, 2.2] → 1.85 [1.7, 2.0]: -7.5% but the intervals overlap */
	assert_int_equal(find(&g, "t/noise")->verdict, RV_UNCHANGED);
	/* 2.0 [1.99, 2.01] → 1.96 [1.95, 1.97]: clear of the interval but only -2% */
	assert_int_equal(find(&g, "t/small")->verdict, RV_UNCHANGED);
	assert_int_equal(find(&g, "t/fast")->verdict, RV_IMPROVED);
	assert_int_equal(find(&g, "t/fixed")->verdict, RV_IMPROVED);
	assert_int_equal(find(&g, "t/missing")->verdict, RV_REGRESSED);
	assert_int_equal(find(&g, "t/new")->verdict, RV_NEW);
	assert_int_equal(find(&g, "t/still")->verdict, RV_UNCHANGED);
	assert_int_equal(g.n_regressed, 3);
	assert_int_equal(g.n_improved, 2);
	assert_int_equal(g.n_unchanged, 3);
	assert_int_equal(g.n_new, 1);
	/* fast_1 over the 9 tasks: current slow noise small fast fixed new = 6 */
	assert_near(g.fast1, 6.0 / 9, 1e-15);
	assert_near(g.base_fast1, 5.0 / 9, 1e-15);
	assert_true(g.failed);
	report_gate_release(&g);

	/* A 10% threshold turns nothing else; a 30% one clears t/slow. */
	o.threshold = 0.30;
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &(struct cr_err){ 0 }), CR_OK);
	assert_int_equal(find(&g, "t/slow")->verdict, RV_UNCHANGED);
	assert_int_equal(find(&g, "t/fast")->verdict, RV_IMPROVED);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
}

static void test_gate_clean_and_floor(void **state)
{
	struct report_gate_opts o = { 0.05, NAN, 0 };
	struct report_run base, cur;
	struct report_gate g;
	(void)state;
	compute("gate_base.csv", "gate_base.csv", &o, &base, &cur, &g);
	assert_int_equal(g.n_regressed, 0);
	assert_int_equal(g.n_improved, 0);
	assert_false(g.failed);
	assert_near(g.fast1, 5.0 / 8, 1e-15);
	report_gate_release(&g);
	o.min_fast1 = 0.625; /* equal to the floor passes */
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &(struct cr_err){ 0 }), CR_OK);
	assert_false(g.floor_failed);
	assert_false(g.failed);
	report_gate_release(&g);
	o.min_fast1 = 0.7;
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &(struct cr_err){ 0 }), CR_OK);
	assert_true(g.floor_failed);
	assert_true(g.failed);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
}

/* Rows without speedup_lo/hi: only the threshold decides. */
static void test_gate_no_interval(void **state)
{
	struct report_gate_opts o = { 0.05, NAN, 0 };
	struct report_run base, cur;
	struct report_gate g;
	(void)state;
	compute("gate_noint_base.csv", "gate_noint_cur.csv", &o, &base, &cur, &g);
	assert_int_equal(find(&g, "t/a")->verdict, RV_REGRESSED);  /* -10% */
	assert_int_equal(find(&g, "t/b")->verdict, RV_UNCHANGED);  /* -2.5% */
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
}

static char *slurp(const char *file)
{
	FILE *f = fopen(file, "r");
	char *s = calloc(1, 65536);
	assert_non_null(f);
	assert_true(fread(s, 1, 65535, f) > 0);
	fclose(f);
	return s;
}

static void test_gate_cli(void **state)
{
	char pb[4096], pc[4096], pu[4096], junit[] = "/tmp/crucible-gate-junit-XXXXXX";
	char md[] = "/tmp/crucible-gate-md-XXXXXX";
	char *text;
	(void)state;
	close(mkstemp(junit));
	close(mkstemp(md));
	path(pb, "gate_base.csv");
	path(pc, "gate_cur.csv");
	path(pu, "unknown_status.csv");
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--junit", junit,
				 "--markdown", md, NULL };
		assert_int_equal(report_gate_main(9, argv), 1);
	}
	text = slurp(junit);
	assert_non_null(strstr(text, "<testsuite name=\"crucible.gate\" tests=\"9\" failures=\"3\""));
	assert_non_null(strstr(text, "<testcase classname=\"crucible.gate\" name=\"t/slow\""));
	assert_non_null(strstr(text, "speedup 2.000 -&gt; 1.500"));
	free(text);
	text = slurp(md);
	assert_non_null(strstr(text, "FAIL"));
	assert_non_null(strstr(text, "| `t/missing` | 1.100 | missing |"));
	free(text);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pb, NULL };
		assert_int_equal(report_gate_main(5, argv), 0);
	}
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pb, "--min-fast1", "0.9", NULL };
		assert_int_equal(report_gate_main(7, argv), 1);
	}
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pu, NULL };
		assert_int_equal(report_gate_main(5, argv), 2);
	}
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--threshold", "x", NULL };
		assert_int_equal(report_gate_main(7, argv), 2);
	}
	remove(junit);
	remove(md);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_cases),
		cmocka_unit_test(test_gate_clean_and_floor),
		cmocka_unit_test(test_gate_cli),
		cmocka_unit_test(test_gate_no_interval),
	};
	if (argc > 1)
		data_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
