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
#include <sys/stat.h>
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
	struct report_gate_opts o;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	struct report_run base, cur;
	struct report_gate g;
	(void)state;
	compute("gate_base.csv", "gate_cur.csv", &o, &base, &cur, &g);
	assert_int_equal(g.n, 9);
	/* ok → mismatch/runtime_error */
	assert_int_equal(find(&g, "t/reg_correct")->verdict, RV_LOST);
	/* best 2.0 [1.9, 2.1] → best 1.5 [1.4, 1.6]: below interval and -25% */
	assert_int_equal(find(&g, "t/slow")->verdict, RV_SLOWER);
	assert_near(find(&g, "t/slow")->base_sp, 2.0, 0);
	assert_near(find(&g, "t/slow")->cur_sp, 1.5, 0);
	/* 2.0 [1.8, 2.2] → 1.85 [1.7, 2.0]: -7.5% but the intervals overlap */
	assert_int_equal(find(&g, "t/noise")->verdict, RV_SAME);
	/* 2.0 [1.99, 2.01] → 1.96 [1.95, 1.97]: clear of the interval but only -2% */
	assert_int_equal(find(&g, "t/small")->verdict, RV_SAME);
	assert_int_equal(find(&g, "t/fast")->verdict, RV_FASTER);
	assert_int_equal(find(&g, "t/fixed")->verdict, RV_FIXED);
	assert_int_equal(find(&g, "t/missing")->verdict, RV_MISSING);
	assert_int_equal(find(&g, "t/new")->verdict, RV_NEW);
	assert_int_equal(find(&g, "t/still")->verdict, RV_FAILING);
	assert_int_equal(g.counts[RV_LOST] + g.counts[RV_MISSING] + g.counts[RV_SLOWER], 3);
	assert_int_equal(g.counts[RV_FASTER] + g.counts[RV_FIXED], 2);
	assert_int_equal(g.counts[RV_SAME], 2);
	assert_int_equal(g.counts[RV_FAILING], 1);
	assert_int_equal(g.counts[RV_NEW], 1);
	/* fast_1 over the 9 tasks: current slow noise small fast fixed new = 6 */
	assert_near(g.fast1, 6.0 / 9, 1e-15);
	assert_near(g.base_fast1, 5.0 / 9, 1e-15);
	assert_true(g.failed);
	report_gate_release(&g);

	/* A 10% threshold turns nothing else; a 30% one clears t/slow. */
	o.threshold = 0.30;
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &(struct cr_err){ 0 }), CR_OK);
	assert_int_equal(find(&g, "t/slow")->verdict, RV_SAME);
	assert_int_equal(find(&g, "t/fast")->verdict, RV_FASTER);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
}

static void test_gate_clean_and_floor(void **state)
{
	struct report_gate_opts o;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	struct report_run base, cur;
	struct report_gate g;
	(void)state;
	compute("gate_base.csv", "gate_base.csv", &o, &base, &cur, &g);
	assert_int_equal(g.counts[RV_SLOWER] + g.counts[RV_LOST] + g.counts[RV_MISSING], 0);
	assert_int_equal(g.counts[RV_FASTER], 0);
	assert_false(g.failed);
	assert_near(g.fast1, 5.0 / 8, 1e-15);
	report_gate_release(&g);
	o.min_fast1 = 0.625; /* equal to the floor passes */
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &(struct cr_err){ 0 }), CR_OK);
	assert_false(g.floor_failed);
	assert_false(g.failed);
	report_gate_release(&g);
	/* identical runs: 4 tasks surely fast (interval above 1), 2 undecided
	 * (t/fast 1.0 [0.95, 1.05], t/missing 1.1 [1.0, 1.2]), 2 not correct: a
	 * floor between 4/8 and 6/8 is neither met nor missed (issue 29) */
	o.min_fast1 = 0.7;
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &(struct cr_err){ 0 }), CR_OK);
	assert_int_equal(g.n_fast_sure, 4);
	assert_int_equal(g.n_fast_undecided, 2);
	assert_int_equal(g.n_fast_not, 2);
	assert_int_equal(g.floor_state, 2);
	assert_false(g.floor_failed);
	assert_false(g.failed);
	report_gate_release(&g);
	o.min_fast1 = 0.8;  /* above 6/8: surely missed */
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &(struct cr_err){ 0 }), CR_OK);
	assert_int_equal(g.floor_state, 3);
	assert_true(g.floor_failed);
	assert_true(g.failed);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
}

/* Rows without speedup_lo/hi: only the threshold decides. */
static void test_gate_no_interval(void **state)
{
	struct report_gate_opts o;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	struct report_run base, cur;
	struct report_gate g;
	(void)state;
	compute("gate_noint_base.csv", "gate_noint_cur.csv", &o, &base, &cur, &g);
	assert_int_equal(find(&g, "t/a")->verdict, RV_SLOWER);  /* -10% */
	assert_int_equal(find(&g, "t/b")->verdict, RV_SAME);  /* -2.5% */
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
	assert_non_null(strstr(text, "| `t/missing` | MISSING | 1.100 | missing |"));
	free(text);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pb, NULL };
		assert_int_equal(report_gate_main(5, argv), 0);
	}
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pb, "--min-fast1", "0.8", NULL };
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

/* Deterministic lognormal-ish noise: x * exp(sd * N(0, 1)) from an LCG. */
static double noisy_value(unsigned *st, double x, double sd)
{
	double u1, u2;
	*st = *st * 1103515245u + 12345u;
	u1 = ((*st >> 8) + 1.0) / 16777218.0;
	*st = *st * 1103515245u + 12345u;
	u2 = ((*st >> 8) + 1.0) / 16777218.0;
	return x * exp(sd * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

static void synth(struct report_gate_task *t, unsigned seed, size_t n, double base, double cur,
		  double sd, int noisy)
{
	unsigned st = seed;
	memset(t, 0, sizeof *t);
	t->name = "t/synth";
	t->in_base = t->in_cur = t->base_ok = t->cur_ok = 1;
	t->base_noisy = t->cur_noisy = noisy;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(report_gate_obs_push(t, 0, noisy_value(&st, base, sd), NULL), CR_OK);
		assert_int_equal(report_gate_obs_push(t, 1, noisy_value(&st, cur, sd), NULL), CR_OK);
	}
	t->base_sp = base;
	t->cur_sp = cur;
	t->base_lo = t->base_hi = t->cur_lo = t->cur_hi = NAN;
}

static void synth_free(struct report_gate_task *t)
{
	free(t->obs_base);
	free(t->obs_cur);
}

/* The decision rule on synthetic samples, over many seeds: identical
 * distributions are never a change, a 30% slowdown under tight noise is
 * always SLOWER, wide noise is INCONCLUSIVE. */
static void test_gate_decide_samples(void **state)
{
	struct report_gate_opts o;
	struct report_gate_task t;
	int same = 0, slower = 0, inconcl = 0;
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	for (unsigned seed = 1; seed <= 200; seed++) {
		synth(&t, seed, 20, 2.0, 2.0, 0.05, 0);
		report_gate_decide(&t, &o);
		same += t.verdict == RV_SAME;
		assert_int_equal(t.method, RM_SAMPLES);
		synth_free(&t);
		synth(&t, seed, 20, 2.0, 2.0 / 1.3, 0.05, 0);
		report_gate_decide(&t, &o);
		slower += t.verdict == RV_SLOWER;
		synth_free(&t);
		/* wide noise, few samples, flagged noisy: a 30% slowdown cannot be told */
		synth(&t, seed, 5, 2.0, 2.0 / 1.3, 0.6, 1);
		report_gate_decide(&t, &o);
		inconcl += t.verdict == RV_INCONCLUSIVE;
		assert_true(t.verdict != RV_FASTER);
		synth_free(&t);
	}
	assert_int_equal(same, 200);
	assert_int_equal(slower, 200);
	assert_true(inconcl >= 190);
}

/* The interval fallback: a noisy pair needs the whole ratio interval beyond
 * the threshold; the "softmax +99.9%" case of issue 11 is INCONCLUSIVE. */
static void test_gate_decide_intervals(void **state)
{
	struct report_gate_opts o;
	struct report_gate_task t;
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	memset(&t, 0, sizeof t);
	t.in_base = t.in_cur = t.base_ok = t.cur_ok = 1;
	/* baseline ran slow by chance: 1.0 [0.5, 2.0] -> 2.0 [1.0, 4.0], noisy */
	t.base_sp = 1.0, t.base_lo = 0.5, t.base_hi = 2.0;
	t.cur_sp = 2.0, t.cur_lo = 1.0, t.cur_hi = 4.0;
	t.base_noisy = t.cur_noisy = 1;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_INCONCLUSIVE);
	assert_int_equal(t.method, RM_INTERVALS);
	/* the same numbers without the flag: overlapping intervals, SAME */
	t.base_noisy = t.cur_noisy = 0;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_SAME);
	/* noisy, but far outside the noise: [0.9,1.1]/[1.9,2.1] -> hi 0.58 */
	t.base_sp = 2.0, t.base_lo = 1.9, t.base_hi = 2.1;
	t.cur_sp = 1.0, t.cur_lo = 0.9, t.cur_hi = 1.1;
	t.cur_noisy = 1;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_SLOWER);
	assert_near(t.ratio_hi, 1.1 / 1.9, 1e-12);
	/* noisy, intervals clear of each other but not of the threshold */
	t.cur_sp = 1.85, t.cur_lo = 1.8, t.cur_hi = 1.88;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_INCONCLUSIVE);
	t.cur_noisy = 0;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_SLOWER);
}

static void test_mann_whitney(void **state)
{
	double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 }, c[] = { 1.5, 2.5, 3.5, 4.5, 5.5 };
	(void)state;
	assert_near(report_mann_whitney(a, 3, b, 3), 2.0 / 20, 1e-12);  /* C(6,3) = 20 */
	assert_near(report_mann_whitney(a, 5, b, 5), 2.0 / 252, 1e-12); /* C(10,5) = 252 */
	assert_near(report_mann_whitney(b, 5, a, 5), 2.0 / 252, 1e-12);
	assert_true(report_mann_whitney(a, 5, c, 5) > 0.5);
	assert_true(isnan(report_mann_whitney(a, 0, b, 5)));
}

/* samples.csv beside results.csv: per-sample speedups decide; the noisy
 * column (baseline) and the detail prefix (current) are both read. */
static void test_gate_samples_files(void **state)
{
	struct report_gate_opts o;
	struct report_run base, cur;
	struct report_gate g;
	struct cr_err e;
	char pb[4096], pc[4096];
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	cr_err_init(&e);
	assert_int_equal(report_run_load(path(pb, "gate_samples_base/results.csv"), &base, &e), CR_OK);
	assert_int_equal(report_run_load_samples(&base, &e), CR_OK);
	assert_int_equal(report_run_load(path(pc, "gate_samples_cur/results.csv"), &cur, &e), CR_OK);
	assert_int_equal(report_run_load_samples(&cur, &e), CR_OK);
	assert_true(base.has_samples && cur.has_samples);
	assert_int_equal(base.rows[0].n_cand, 20);
	assert_int_equal(base.rows[0].n_base, 20);
	assert_int_equal(base.rows[2].noisy, 1);  /* noisy column */
	assert_int_equal(base.rows[0].noisy, 0);
	assert_int_equal(cur.rows[2].noisy, 1);   /* detail prefix */
	assert_int_equal(cur.rows[0].noisy, 0);
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, &e), CR_OK);
	assert_int_equal(find(&g, "t/same")->verdict, RV_SAME);
	assert_int_equal(find(&g, "t/same")->method, RM_SAMPLES);
	assert_int_equal(find(&g, "t/slow")->verdict, RV_SLOWER);
	assert_int_equal(find(&g, "t/slow")->method, RM_SAMPLES);
	assert_true(find(&g, "t/slow")->p < 1e-4);
	assert_int_equal(find(&g, "t/wide")->verdict, RV_INCONCLUSIVE);
	assert_int_equal(find(&g, "t/lost")->verdict, RV_LOST);   /* ok -> mismatch fails */
	assert_true(g.failed);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
}

static void write_file(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* --confirm N with a stand-in for `crucible eval` (data/gate_fake_crucible.sh):
 * a real 30% slowdown hidden in noise is confirmed SLOWER after pooling the
 * re-runs; a slow-by-chance current run of the same code is not. */
static void test_gate_confirm(void **state)
{
	static const char hdr[] = "run_id,task,candidate,sample,backend,device,status,backward,"
		"detail,max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,"
		"speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,"
		"top_p,top_k,seed,turn,source_sha256,noisy\n";
	char dir[] = "/tmp/crucible-gate-confirm-XXXXXX", fast[4200], slow[4200], pb[4200];
	char pc[4200], fake[4096], row[9000], json[4200];
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fast, sizeof fast, "%s/fast.c", dir);
	snprintf(slow, sizeof slow, "%s/slow.c", dir);
	write_file(fast, "// fast\n");
	write_file(slow, "// slow\n");
	snprintf(pb, sizeof pb, "%s/base.csv", dir);
	snprintf(pc, sizeof pc, "%s/cur.csv", dir);
	snprintf(json, sizeof json, "%s/gate.json", dir);
	path(fake, "gate_fake_crucible.sh");
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,1.0,0.5,2.0,5,,,m,,,,,,"
		 "sha-fast,1\n", hdr, fast);
	write_file(pb, row);
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,0.7,0.35,1.4,5,,,m,,,,,,"
		 "sha-slow,1\n", hdr, slow);
	write_file(pc, row);
	{
		/* without --confirm: noisy, inconclusive, the gate passes */
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, NULL };
		assert_int_equal(report_gate_main(5, argv), 0);
	}
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm=5",
				 "--crucible", fake, "--eval-arg=--time-cap", "--eval-arg", "0.3",
				 "--json", json, NULL };
		char *text;
		assert_int_equal(report_gate_main(13, argv), 1);
		text = slurp(json);
		assert_non_null(strstr(text, "\"verdict\": \"SLOWER\""));
		assert_non_null(strstr(text, "\"method\": \"re-runs\""));
		assert_non_null(strstr(text, "\"reruns\": 5"));
		assert_non_null(strstr(text, "\"result\": \"fail\""));
		free(text);
	}
	/* the same code, slow by chance in the current run */
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,0.7,0.35,1.4,5,,,m,,,,,,"
		 "sha-fast,1\n", hdr, fast);
	write_file(pc, row);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm", "5",
				 "--crucible", fake, "--eval-arg=--time-cap", "--eval-arg=0.3", NULL };
		assert_int_equal(report_gate_main(11, argv), 0);
	}
	/* a regression hidden by a baseline measured slow by chance: ratio 0.97,
	 * above 1 - threshold, but the interval does not rule a 5% slowdown out,
	 * so --confirm re-runs it and the pooled runs show it (issue 11: the two
	 * misses of the 20-run noise test) */
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,0.72,0.36,1.44,5,,,m,,,,,,"
		 "sha-fast,1\n", hdr, fast);
	write_file(pb, row);
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,0.70,0.35,1.4,5,,,m,,,,,,"
		 "sha-slow,1\n", hdr, slow);
	write_file(pc, row);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm", "5",
				 "--crucible", fake, "--eval-arg=--time-cap", "--eval-arg=0.3",
				 "--threshold=0.05", NULL };
		assert_int_equal(report_gate_main(12, argv), 1);
	}
	/* noisy but tight: a 5% slowdown is ruled out, so nothing is re-run (a
	 * crucible that does not exist would be an error, exit 2) */
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,1.0,0.99,1.01,5,,,m,,,,,,"
		 "sha-fast,1\n", hdr, fast);
	write_file(pb, row);
	write_file(pc, row);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm", "5",
				 "--crucible", "/nonexistent/crucible", "--eval-arg=--time-cap",
				 "--eval-arg=0.3", NULL };
		assert_int_equal(report_gate_main(11, argv), 0);
	}
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,1.0,0.5,2.0,5,,,m,,,,,,"
		 "sha-fast,1\n", hdr, fast);
	write_file(pb, row);
	/* a re-run whose hash differs: the candidate changed, an error */
	snprintf(row, sizeof row, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,0.7,0.35,1.4,5,,,m,,,,,,"
		 "sha-other,1\n", hdr, fast);
	write_file(pc, row);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm", "2",
				 "--crucible", fake, "--eval-arg=--time-cap", "--eval-arg=0.3", NULL };
		assert_int_equal(report_gate_main(11, argv), 2);
	}
	remove(fast), remove(slow), remove(pb), remove(pc), remove(json);
	rmdir(dir);
}

/* Writes DIR/results.csv (one noisy correct row of cand, speedup 1.0) and
 * DIR/samples.csv with wide per-sample speedups (0.5 to 2.0): a gated run
 * whose samples cannot tell a 30% slowdown, INCONCLUSIVE and a suspect. */
static void wide_run(const char *dir, const char *cand, const char *sha)
{
	static const char hdr[] = "run_id,task,candidate,sample,backend,device,status,backward,"
		"detail,max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,"
		"speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,"
		"top_p,top_k,seed,turn,source_sha256,noisy\n";
	char p[4200], text[9000];
	size_t l;

	snprintf(p, sizeof p, "%s/results.csv", dir);
	snprintf(text, sizeof text, "%sr,t/x,%s,0,cpu,x,ok,none,,,,,,,,1.0,0.5,2.0,10,,,m,,,,,,"
		 "%s,1\n", hdr, cand, sha);
	write_file(p, text);
	snprintf(p, sizeof p, "%s/samples.csv", dir);
	l = (size_t)snprintf(text, sizeof text, "candidate,source_sha256,side,us\n");
	for (int k = 0; k < 10; k++)
		l += (size_t)snprintf(text + l, sizeof text - l, "%s,%s,cand,%.3f\n%s,%s,base,100\n",
				      cand, sha, 100 / (0.5 + 1.5 * ((k * 7) % 10) / 9.0), cand, sha);
	write_file(p, text);
}

/* The sequential --confirm end to end, with a stand-in eval that writes
 * samples (GATE_FAKE_SAMPLES=1): a 30% slowdown is SLOWER after one round
 * and a no-change stops after one round (a slowdown beyond 5% ruled out);
 * the old rule ran all 5 rounds in both cases. */
static void test_gate_confirm_sequential(void **state)
{
	char dir[] = "/tmp/crucible-gate-seq-XXXXXX", fast[4200], slow[4200], bd[4200], cd[4200];
	char pb[4200], pc[4200], fake[4096], json[4200], *text;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fast, sizeof fast, "%s/fast.c", dir);
	snprintf(slow, sizeof slow, "%s/slow.c", dir);
	snprintf(bd, sizeof bd, "%s/b", dir);
	snprintf(cd, sizeof cd, "%s/c", dir);
	assert_int_equal(mkdir(bd, 0700), 0);
	assert_int_equal(mkdir(cd, 0700), 0);
	write_file(fast, "// fast\n");
	write_file(slow, "// slow\n");
	snprintf(pb, sizeof pb, "%s/results.csv", bd);
	snprintf(pc, sizeof pc, "%s/results.csv", cd);
	snprintf(json, sizeof json, "%s/gate.json", dir);
	path(fake, "gate_fake_crucible.sh");
	wide_run(bd, fast, "sha-fast");
	wide_run(cd, slow, "sha-slow");
	assert_int_equal(setenv("GATE_FAKE_SAMPLES", "1", 1), 0);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm", "5",
				 "--crucible", fake, "--eval-arg=--time-cap", "--eval-arg=0.3",
				 "--json", json, NULL };
		assert_int_equal(report_gate_main(13, argv), 1);
		text = slurp(json);
		assert_non_null(strstr(text, "\"verdict\": \"SLOWER\""));
		assert_non_null(strstr(text, "\"reruns\": 1,"));
		assert_non_null(strstr(text, "\"confirm_stop\": \"slower\""));
		assert_non_null(strstr(text, "\"alpha_per_look\": 0.002"));
		free(text);
	}
	wide_run(cd, fast, "sha-fast");
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm", "5",
				 "--crucible", fake, "--eval-arg=--time-cap", "--eval-arg=0.3",
				 "--json", json, NULL };
		assert_int_equal(report_gate_main(13, argv), 0);
		text = slurp(json);
		assert_non_null(strstr(text, "\"verdict\": \"SAME\""));
		assert_non_null(strstr(text, "\"reruns\": 1,"));
		assert_non_null(strstr(text, "\"confirm_stop\": \"ruled-out\""));
		free(text);
	}
	/* a re-run without samples.csv while the gated runs have one: an error */
	assert_int_equal(unsetenv("GATE_FAKE_SAMPLES"), 0);
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--confirm", "5",
				 "--crucible", fake, "--eval-arg=--time-cap", "--eval-arg=0.3", NULL };
		assert_int_equal(report_gate_main(11, argv), 2);
	}
	remove(json);
	for (int i = 0; i < 2; i++) {
		char p[4300];
		snprintf(p, sizeof p, "%s/results.csv", i ? cd : bd);
		remove(p);
		snprintf(p, sizeof p, "%s/samples.csv", i ? cd : bd);
		remove(p);
		rmdir(i ? cd : bd);
	}
	remove(fast), remove(slow);
	rmdir(dir);
}

/* The stratified test: one stratum is Mann-Whitney itself; two strata
 * convolve exactly (2 vs 2 below in both: (1/6)^2); a shift common to both
 * sides of a stratum changes nothing. */
static void test_mw_strata(void **state)
{
	double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 }, c[] = { 1.5, 2.5, 3.5, 9.5, 5.5 };
	double a9[5], c9[5], lo, hi, lo2, hi2;
	struct report_stratum s1 = { a, 5, c, 5 }, two[2] = { { a, 2, b, 2 }, { a + 2, 2, b + 2, 2 } };
	struct report_stratum sh[2] = { { a, 5, c, 5 }, { a9, 5, c9, 5 } }, same[2] = { s1, s1 };
	(void)state;
	report_mw_strata(&s1, 1, &lo, &hi);
	assert_near(fmin(1, 2 * fmin(lo, hi)), report_mann_whitney(a, 5, c, 5), 1e-12);
	report_mw_strata(two, 2, &lo, &hi);
	assert_near(lo, 1.0 / 36, 1e-12);
	assert_near(hi, 1.0, 1e-12);
	for (int i = 0; i < 5; i++)
		a9[i] = 9 * a[i], c9[i] = 9 * c[i];
	report_mw_strata(sh, 2, &lo, &hi);
	report_mw_strata(same, 2, &lo2, &hi2);
	assert_near(lo, lo2, 1e-12);
	assert_near(hi, hi2, 1e-12);
	/* a stratum with an empty side is skipped; none left is NAN */
	two[1].nb = 0;
	report_mw_strata(two, 2, &lo, &hi);
	assert_near(lo, 1.0 / 6, 1e-12);
	two[0].na = 0;
	report_mw_strata(two, 2, &lo, &hi);
	assert_true(isnan(lo) && isnan(hi));
}

/* A task with the gated rows' samples (round 0) and `rounds` --confirm rounds,
 * both sides re-run: round i has baseline samples load[i] * b[j] and current
 * samples load[i] * c[j], n each. */
static void rounds_task(struct report_gate_task *t, int rounds, const double *load,
			const double *b, const double *c, size_t n)
{
	memset(t, 0, sizeof *t);
	t->name = "t/rounds";
	t->in_base = t->in_cur = t->base_ok = t->cur_ok = 1;
	t->base_noisy = t->cur_noisy = 1;
	t->base_sp = t->cur_sp = t->base_lo = t->base_hi = t->cur_lo = t->cur_hi = NAN;
	t->round_base = calloc((size_t)rounds + 1, sizeof *t->round_base);
	t->round_cur = calloc((size_t)rounds + 1, sizeof *t->round_cur);
	assert_non_null(t->round_base);
	assert_non_null(t->round_cur);
	t->base_rerun = 1;
	for (int i = 0; i <= rounds; i++) {
		for (size_t j = 0; j < n; j++) {
			assert_int_equal(report_gate_obs_push(t, 0, load[i] * b[j], NULL), CR_OK);
			assert_int_equal(report_gate_obs_push(t, 1, load[i] * c[j], NULL), CR_OK);
		}
		t->round_base[i] = t->n_obs_base;
		t->round_cur[i] = t->n_obs_cur;
	}
}

static void rounds_free(struct report_gate_task *t)
{
	free(t->obs_base);
	free(t->obs_cur);
	free(t->round_base);
	free(t->round_cur);
}

/* A 1.3x slower candidate (ratio 0.77) in wide noise while the load changes
 * between rounds (x1, x4, x0.25, x2, x0.5 on both sides of a round): each
 * round alone is weak (U = 26 of 100, no ties, p = 0.075), the rounds summed
 * decide at the third look (p = 0.0015 < 0.01 / 5). Pooling the rounds as one sample,
 * the old rule, mixes the loads into the noise and never decides. */
static void test_gate_look_third_round(void **state)
{
	double load[6] = { 1, 1, 4, 0.25, 2, 0.5 }, b[10], c[10];
	struct report_gate_opts o;
	struct report_gate_task t;
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	o.confirm = 5;
	for (int j = 0; j < 10; j++)
		b[j] = 1 + 0.15 * j, c[j] = b[j] * 0.77;
	rounds_task(&t, 5, load, b, c, 10);
	assert_int_equal(report_gate_look(&t, 1, &o), RS_NONE);
	assert_near(t.p, 0.0750, 0.001);
	assert_int_equal(report_gate_look(&t, 2, &o), RS_NONE);
	assert_near(t.p, 0.0104, 0.0005);
	assert_int_equal(report_gate_look(&t, 3, &o), RS_SLOWER);
	assert_near(t.p, 0.0015, 0.0001);
	assert_int_equal(t.verdict, RV_SLOWER);
	assert_int_equal(t.stop, RS_SLOWER);
	assert_int_equal(t.reruns, 3);
	assert_int_equal(t.method, RM_RERUNS);
	assert_near(t.ratio, 0.77, 1e-9);
	assert_non_null(strstr(t.reason, "after 3 rounds"));
	/* the old rule: every observation of the 5 rounds and the gated rows
	 * pooled, one Mann-Whitney at alpha */
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_INCONCLUSIVE);
	assert_true(t.p > 0.01);
	/* the gated rows (round 0) are not a round: a slowdown seen only there,
	 * which made the task a suspect, is not confirmed by equal rounds */
	rounds_free(&t);
	rounds_task(&t, 5, load, b, b, 10);
	for (int j = 0; j < 10; j++)
		t.obs_cur[j] = c[j];
	for (int k = 1; k <= 5; k++)
		assert_true(report_gate_look(&t, k, &o) != RS_SLOWER);
	rounds_free(&t);
}

/* No change under tight noise: the first round rules a slowdown beyond the
 * threshold out and the confirm stops (the old rule ran all N rounds); a
 * change inside the threshold goes on to N rounds and is INCONCLUSIVE. */
static void test_gate_look_stops_early(void **state)
{
	double load[6] = { 1, 1, 1.2, 0.9, 1.1, 1 }, b[10], c[10];
	struct report_gate_opts o;
	struct report_gate_task t;
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	o.confirm = 5;
	for (int j = 0; j < 10; j++)
		b[j] = 2 + 0.01 * j, c[j] = 2.003 + 0.01 * j;
	rounds_task(&t, 5, load, b, c, 10);
	assert_int_equal(report_gate_look(&t, 1, &o), RS_RULED_OUT);
	assert_int_equal(t.verdict, RV_SAME);
	assert_true(t.p_ruled_out < 0.002);
	assert_true(t.p >= 0.002);
	assert_non_null(strstr(t.reason, "no slowdown beyond 5%"));
	rounds_free(&t);
	/* 3% slower in wide noise: never decided, the fifth look says so */
	for (int j = 0; j < 10; j++)
		b[j] = 1 + 0.15 * j, c[j] = b[j] * 0.97;
	rounds_task(&t, 5, load, b, c, 10);
	for (int k = 1; k < 5; k++)
		assert_int_equal(report_gate_look(&t, k, &o), RS_NONE);
	assert_int_equal(report_gate_look(&t, 5, &o), RS_UNDECIDED);
	assert_int_equal(t.verdict, RV_INCONCLUSIVE);
	assert_non_null(strstr(t.reason, "after 5 rounds"));
	rounds_free(&t);
	/* without baseline re-runs: the current re-runs against the gated
	 * baseline row, one stratum */
	for (int j = 0; j < 10; j++)
		b[j] = 1 + 0.01 * j, c[j] = b[j] / 1.3;
	rounds_task(&t, 2, load, b, c, 10);
	t.base_rerun = 0;
	t.round_base[1] = t.round_base[2] = t.round_base[0];
	assert_int_equal(report_gate_look(&t, 1, &o), RS_SLOWER);
	assert_non_null(strstr(t.reason, "against the gated baseline row"));
	rounds_free(&t);
}

/* Simulated gates: per round 10 vs 10 lognormal samples (sd 0.3 in log) and a
 * load drawn for each round (sd 0.5 in log, both sides), 5 rounds, a look
 * after each. Seeded, so the counts are fixed. */
static int simulate(int gates, double ratio, int naive, enum report_stop what)
{
	struct report_gate_opts o;
	unsigned st = 12345;
	int hits = 0;

	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	for (int g = 0; g < gates; g++) {
		double load[6], b[10], c[10];
		struct report_gate_task t;
		for (int i = 0; i < 6; i++)
			load[i] = noisy_value(&st, 1, 0.5);
		/* the rounds share the within-run draws' law, not their values */
		rounds_task(&t, 5, load, (double[10]){ 0 }, (double[10]){ 0 }, 10);
		for (int i = 0; i <= 5; i++)
			for (int j = 0; j < 10; j++) {
				b[j] = noisy_value(&st, 1, 0.3);
				c[j] = noisy_value(&st, ratio, 0.3);
				t.obs_base[i * 10 + j] = load[i] * b[j];
				t.obs_cur[i * 10 + j] = load[i] * c[j];
			}
		for (int k = 1; k <= 5; k++) {
			/* naive: every look at the full alpha */
			o.confirm = naive ? 1 : 5;
			enum report_stop s = report_gate_look(&t, k, &o);
			if (s == what || (what == RS_SLOWER && s == RS_FASTER)) {
				hits++;
				break;
			}
			if (s != RS_NONE && !naive)
				break;
			if (naive && s == RS_RULED_OUT)
				break;
		}
		rounds_free(&t);
	}
	return hits;
}

/* The false-alarm bound across the looks: on 2000 simulated null gates the
 * sequential rule says SLOWER or FASTER at most alpha * 2000 = 20 times;
 * looking 5 times at the full alpha (no spending) exceeds that bound on the
 * same data, so the test can tell. The ruled-out boundary, at a true
 * slowdown of exactly the threshold, stops at most alpha of the gates. */
static void test_gate_look_alpha(void **state)
{
	int seq, naive, ruled;
	(void)state;
	seq = simulate(2000, 1.0, 0, RS_SLOWER);
	naive = simulate(2000, 1.0, 1, RS_SLOWER);
	print_message("null gates: %d of 2000 decided a change (bound 20), %d with alpha "
		      "at every look\n", seq, naive);
	assert_true(seq <= 20);
	assert_true(naive > 20);
	ruled = simulate(2000, 0.95, 0, RS_RULED_OUT);
	print_message("gates at a true 5%% slowdown: %d of 2000 ruled it out (bound 20)\n",
		      ruled);
	assert_true(ruled <= 20);
}

/* Option syntax and validation: --opt=value and --opt value, bad numbers
 * exit 2 with the option named; tasks in natural order; json to stdout. */
static void test_gate_options(void **state)
{
	char pb[4096], pc[4096];
	(void)state;
	path(pb, "gate_base.csv");
	path(pc, "gate_cur.csv");
	{
		char *argv[] = { "gate", "--baseline=x", "--current", pc, "--threshold=0.3", NULL };
		argv[1] = (char[4200]){ 0 };
		snprintf(argv[1], 4200, "--baseline=%s", pb);
		assert_int_equal(report_gate_main(5, argv), 1);
	}
	{
		char *bad[][2] = { { "--threshold", "1" }, { "--threshold", "0.1x" },
				   { "--threshold", "nan" }, { "--min-fast1", "-0.1" },
				   { "--alpha", "0" }, { "--confirm", "-1" }, { "--confirm", "2.5" },
				   { "--confirm", "99999999999999999999" } };
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			char *argv[] = { "gate", "--baseline", pb, "--current", pc, bad[i][0],
					 bad[i][1], NULL };
			assert_int_equal(report_gate_main(7, argv), 2);
		}
	}
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--bogus", NULL };
		assert_int_equal(report_gate_main(6, argv), 2);
	}
	{
		char *argv[] = { "gate", "--baseline", pb, "--current", pc, "--eval-arg", "x", NULL };
		assert_int_equal(report_gate_main(7, argv), 2); /* --eval-arg without --confirm */
	}
}

static void test_natural_order(void **state)
{
	static const char hdr[] = "run_id,task,candidate,sample,backend,device,status,backward,"
		"detail,max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,"
		"speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,"
		"top_p,top_k,seed,turn,source_sha256\n";
	char p[] = "/tmp/crucible-gate-order-XXXXXX";
	struct report_run run;
	struct report_gate g;
	struct report_gate_opts o;
	char text[8192];
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	close(mkstemp(p));
	snprintf(text, sizeof text, "%sr,t/10,a,0,cpu,x,ok,none,,,,,,,,1,,,,,,m,,,,,,\n"
		 "r,t/2,a,0,cpu,x,ok,none,,,,,,,,1,,,,,,m,,,,,,\n"
		 "r,t/1,a,0,cpu,x,ok,none,,,,,,,,1,,,,,,m,,,,,,\n", hdr);
	write_file(p, text);
	assert_int_equal(report_run_load(p, &run, NULL), CR_OK);
	assert_int_equal(report_gate_compute(&run, &run, &o, &g, NULL), CR_OK);
	assert_string_equal(g.tasks[0].name, "t/1");
	assert_string_equal(g.tasks[1].name, "t/2");
	assert_string_equal(g.tasks[2].name, "t/10");
	report_gate_release(&g);
	report_run_release(&run);
	remove(p);
}

/* issue 29 ---------------------------------------------------------------- */

static const char hdr29[] = "run_id,task,candidate,sample,backend,device,status,backward,"
	"detail,max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,"
	"speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,"
	"top_p,top_k,seed,turn,source_sha256,noisy\n";

/* Two runs of the same code on a loaded machine: every row noisy with a wide
 * interval; one task's point speedup crosses 1 between the runs (fast_1
 * 6/7 -> 5/7, the user's 0.857 -> 0.714). The old floor compared the point
 * fast_1 with 0.8 and FAILED identical code; now the crossing tasks are
 * undecided and the floor is INCONCLUSIVE, not a failure. */
static void test_gate_floor_noisy_identical(void **state)
{
	char dir[] = "/tmp/crucible-gate-floor-XXXXXX", pa[4200], pb[4200], t[8192];
	static const double a[7] = { 2.5, 1.8, 3.0, 1.1, 2.2, 1.4, 0.9 };
	static const double b[7] = { 2.2, 2.0, 2.6, 0.95, 2.9, 1.3, 0.8 };
	struct report_gate_opts o;
	struct report_run base, cur;
	struct report_gate g;
	size_t l;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pa, sizeof pa, "%s/a.csv", dir);
	snprintf(pb, sizeof pb, "%s/b.csv", dir);
	for (int side = 0; side < 2; side++) {
		const double *v = side ? b : a;
		l = (size_t)snprintf(t, sizeof t, "%s", hdr29);
		for (int k = 0; k < 7; k++)
			l += (size_t)snprintf(t + l, sizeof t - l, "r,t/%d,c%d.c,0,cpu,x,ok,none,"
					      "timing noisy (load),,,,,,,%.2f,%.2f,%.2f,10,,,m,,,,,,"
					      "sha%d,1\n", k, k, v[k], v[k] * 0.4, v[k] * 2.5, k);
		write_file(side ? pb : pa, t);
	}
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	o.min_fast1 = 0.8;
	assert_int_equal(report_run_load(pa, &base, NULL), CR_OK);
	assert_int_equal(report_run_load(pb, &cur, NULL), CR_OK);
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, NULL), CR_OK);
	assert_near(g.fast1, 5.0 / 7, 1e-12);  /* the point figure the old floor used */
	assert_int_equal(g.floor_state, 2);
	assert_false(g.floor_failed);
	assert_false(g.failed);
	assert_int_equal(g.counts[RV_INCONCLUSIVE], 7);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
	{
		char *argv[] = { "gate", "--baseline", pa, "--current", pb, "--min-fast1", "0.8",
				 NULL };
		assert_int_equal(report_gate_main(7, argv), 0);
	}
	remove(pa), remove(pb);
	rmdir(dir);
}

/* A candidate 18x slower at the median with two fast samples of ten (a
 * preempted baseline partner makes a pair look fast): Mann-Whitney alone
 * gives p = 0.023 (U = 80 of 100) and the old rule said INCONCLUSIVE; the
 * trimmed-means test sees the magnitude of the other eight: SLOWER. */
static void test_gate_heavy_tail_slower(void **state)
{
	struct report_gate_opts o;
	struct report_gate_task t;
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	memset(&t, 0, sizeof t);
	t.name = "t/tail";
	t.in_base = t.in_cur = t.base_ok = t.cur_ok = 1;
	t.base_noisy = t.cur_noisy = 1;
	for (int j = 0; j < 10; j++) {
		double cur = j < 8 ? (1 + 0.02 * j) / 18 : 1.5 + 0.1 * j;
		assert_int_equal(report_gate_obs_push(&t, 0, 1 + 0.02 * j, NULL), CR_OK);
		assert_int_equal(report_gate_obs_push(&t, 1, cur, NULL), CR_OK);
	}
	report_gate_decide(&t, &o);
	assert_near(t.p_mw, 0.023, 0.001);
	assert_true(t.p_trim < 1e-6);
	assert_int_equal(t.verdict, RV_SLOWER);
	assert_true(t.ratio < 0.1);
	synth_free(&t);
}

/* The trimmed-means test does not buy its power with false alarms: 2000
 * null comparisons of identical heavy-tailed distributions (lognormal sd
 * 0.3 with 15% of the samples x4 or /4), 10 vs 10, decide a change at most
 * alpha * 2000 = 20 times. */
static void test_gate_heavy_tail_null(void **state)
{
	struct report_gate_opts o;
	struct report_gate_task t;
	unsigned st = 777;
	int changes = 0;
	(void)state;
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	for (int g = 0; g < 2000; g++) {
		memset(&t, 0, sizeof t);
		t.in_base = t.in_cur = t.base_ok = t.cur_ok = 1;
		t.base_noisy = t.cur_noisy = 1;
		for (int side = 0; side < 2; side++)
			for (int j = 0; j < 10; j++) {
				double x = noisy_value(&st, 1, 0.3), u;
				st = st * 1103515245u + 12345u;
				u = (st >> 8) / 16777216.0;
				x *= u < 0.075 ? 4 : u < 0.15 ? 0.25 : 1;
				assert_int_equal(report_gate_obs_push(&t, side, x, NULL), CR_OK);
			}
		report_gate_decide(&t, &o);
		changes += t.verdict == RV_SLOWER || t.verdict == RV_FASTER;
		synth_free(&t);
	}
	print_message("heavy-tailed null: %d of 2000 decided a change (bound 20)\n", changes);
	assert_true(changes <= 20);
}

/* Which candidates are compared: both runs have b.c (same source_sha256),
 * so b is compared with b although a.c has the baseline's highest point
 * speedup (noisy) and c.c the current's; the outputs say the baseline ran
 * 4.4x slower in the current run, and INCONCLUSIVE is a skipped JUnit test. */
static void test_gate_same_source_drift_junit(void **state)
{
	char dir[] = "/tmp/crucible-gate-src-XXXXXX", pa[4200], pb[4200], pj[4200], pm[4200];
	char pjs[4200], t[8192], *text;
	struct report_gate_opts o;
	struct report_run base, cur;
	struct report_gate g;
	const struct report_gate_task *x;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pa, sizeof pa, "%s/a.csv", dir);
	snprintf(pb, sizeof pb, "%s/b.csv", dir);
	snprintf(pj, sizeof pj, "%s/j.xml", dir);
	snprintf(pm, sizeof pm, "%s/m.md", dir);
	snprintf(pjs, sizeof pjs, "%s/g.json", dir);
	snprintf(t, sizeof t, "%sr,t/x,a.c,0,cpu,x,ok,none,,,,,,,100,3.0,0.5,9.0,10,,,m,,,,,,"
		 "shaA,1\nr,t/x,b.c,1,cpu,x,ok,none,,,,,,,100,2.0,1.9,2.1,10,,,m,,,,,,shaB,0\n"
		 "r,t/y,y.c,0,cpu,x,ok,none,,,,,,,100,2.0,0.5,8.0,10,,,m,,,,,,shaY,1\n", hdr29);
	write_file(pa, t);
	snprintf(t, sizeof t, "%sr,t/x,c.c,0,cpu,x,ok,none,,,,,,,440,5.0,0.5,9.0,10,,,m,,,,,,"
		 "shaC,1\nr,t/x,b.c,1,cpu,x,ok,none,,,,,,,440,1.95,1.9,2.0,10,,,m,,,,,,shaB,0\n"
		 "r,t/y,y.c,0,cpu,x,ok,none,,,,,,,100,1.5,0.4,6.0,10,,,m,,,,,,shaY,1\n", hdr29);
	write_file(pb, t);
	report_gate_opts_default(&o);
	o.threshold = 0.05; /* the rule's mechanics at 5% (the default is 0.15) */
	assert_int_equal(report_run_load(pa, &base, NULL), CR_OK);
	assert_int_equal(report_run_load(pb, &cur, NULL), CR_OK);
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, NULL), CR_OK);
	x = find(&g, "t/x");
	assert_string_equal(x->base_row->candidate, "b.c");
	assert_string_equal(x->cur_row->candidate, "b.c");
	assert_true(x->same_source);
	assert_int_equal(x->verdict, RV_SAME);
	assert_near(x->base_drift, 4.4, 1e-12);
	assert_int_equal(find(&g, "t/y")->verdict, RV_INCONCLUSIVE);
	assert_int_equal(g.n_compared, 2);
	assert_int_equal(g.n_decided, 1);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
	{
		char *argv[] = { "gate", "--baseline", pa, "--current", pb, "--junit", pj,
				 "--markdown", pm, "--json", pjs, NULL };
		assert_int_equal(report_gate_main(11, argv), 0);
	}
	text = slurp(pj);
	assert_non_null(strstr(text, "<skipped message=\"INCONCLUSIVE: inconclusive"));
	assert_non_null(strstr(text, "skipped=\"1\""));
	free(text);
	text = slurp(pm);
	assert_null(strstr(text, "✅ PASS"));
	assert_non_null(strstr(text, "⚠️ PASS (inconclusive: decided 1 of 2 tasks; rerun with "
				     "--confirm 5)"));
	assert_non_null(strstr(text, "baseline 4.4× slower than in the baseline run"));
	assert_non_null(strstr(text, "| `t/x` | SAME | 2.000 | 1.950 |"));
	free(text);
	text = slurp(pjs);
	assert_non_null(strstr(text, "\"baseline_drift\": 4.4"));
	assert_non_null(strstr(text, "\"same_source\": true"));
	assert_non_null(strstr(text, "\"current_speedup\": 1.95"));
	assert_non_null(strstr(text, "\"inconclusive\": true"));
	free(text);
	remove(pa), remove(pb), remove(pj), remove(pm), remove(pjs);
	rmdir(dir);
}

/* The default threshold is what separate runs of the same files reproduce:
 * one file against itself measured 0.532 then 0.482 (-9.5%), each run's
 * samples tight (issue 29): SAME by default, SLOWER only at 5%. */
static void test_gate_default_threshold_run_noise(void **state)
{
	struct report_gate_opts o;
	struct report_gate_task t;
	struct cr_err e;
	(void)state;
	report_gate_opts_default(&o);
	assert_near(o.threshold, 0.15, 1e-15);
	memset(&t, 0, sizeof t);
	for (int k = 0; k < 40; k++) {
		double wig = 1 + 0.02 * ((k % 5) - 2) / 2;
		assert_int_equal(report_gate_obs_push(&t, 0, 0.532 * wig, &e), CR_OK);
		assert_int_equal(report_gate_obs_push(&t, 1, 0.482 * wig, &e), CR_OK);
	}
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_SAME);
	o.threshold = 0.05;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_SLOWER);
	free(t.obs_base);
	free(t.obs_cur);
	/* a 30% slowdown is SLOWER at the default */
	memset(&t, 0, sizeof t);
	for (int k = 0; k < 40; k++) {
		double wig = 1 + 0.02 * ((k % 5) - 2) / 2;
		assert_int_equal(report_gate_obs_push(&t, 0, 1.8 * wig, &e), CR_OK);
		assert_int_equal(report_gate_obs_push(&t, 1, 1.8 / 1.3 * wig, &e), CR_OK);
	}
	o.threshold = 0.15;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_SLOWER);
	/* a figure flagged noisy decides only beyond twice the threshold:
	 * -23% is INCONCLUSIVE, -50% SLOWER */
	t.cur_noisy = 1;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_INCONCLUSIVE);
	for (size_t k = 0; k < t.n_obs_cur; k++)
		t.obs_cur[k] *= 1.3 / 2;
	report_gate_decide(&t, &o);
	assert_int_equal(t.verdict, RV_SLOWER);
	free(t.obs_base);
	free(t.obs_cur);
}

/* The baseline's best file slowed while another file stayed the same: the
 * gate compares the baseline's best with the current best, not the file the
 * two runs happen to share (which would hide the regression). */
static void test_gate_anchor_baseline_best(void **state)
{
	char dir[] = "/tmp/crucible-gate-anchor-XXXXXX", pa[4200], pb[4200], t[8192];
	struct report_gate_opts o;
	struct report_run base, cur;
	struct report_gate g;
	const struct report_gate_task *x;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pa, sizeof pa, "%s/a.csv", dir);
	snprintf(pb, sizeof pb, "%s/b.csv", dir);
	snprintf(t, sizeof t, "%sr,t/x,a.c,0,cpu,x,ok,none,,,,,,,100,3.0,2.9,3.1,10,,,m,,,,,,"
		 "shaA,0\nr,t/x,b.c,1,cpu,x,ok,none,,,,,,,100,1.9,1.85,1.95,10,,,m,,,,,,shaB,0\n", hdr29);
	write_file(pa, t);
	snprintf(t, sizeof t, "%sr,t/x,a.c,0,cpu,x,ok,none,,,,,,,100,2.0,1.95,2.05,10,,,m,,,,,,"
		 "shaA2,0\nr,t/x,b.c,1,cpu,x,ok,none,,,,,,,100,1.9,1.85,1.95,10,,,m,,,,,,shaB,0\n", hdr29);
	write_file(pb, t);
	report_gate_opts_default(&o);
	assert_int_equal(report_run_load(pa, &base, NULL), CR_OK);
	assert_int_equal(report_run_load(pb, &cur, NULL), CR_OK);
	assert_int_equal(report_gate_compute(&base, &cur, &o, &g, NULL), CR_OK);
	x = find(&g, "t/x");
	assert_string_equal(x->base_row->sha256, "shaA");
	assert_string_equal(x->cur_row->sha256, "shaA2");
	assert_false(x->same_source);
	assert_int_equal(x->verdict, RV_SLOWER);
	report_gate_release(&g);
	report_run_release(&base);
	report_run_release(&cur);
	unlink(pa);
	unlink(pb);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_default_threshold_run_noise),
		cmocka_unit_test(test_gate_cases),
		cmocka_unit_test(test_gate_clean_and_floor),
		cmocka_unit_test(test_gate_cli),
		cmocka_unit_test(test_gate_no_interval),
		cmocka_unit_test(test_gate_decide_samples),
		cmocka_unit_test(test_gate_decide_intervals),
		cmocka_unit_test(test_mann_whitney),
		cmocka_unit_test(test_gate_samples_files),
		cmocka_unit_test(test_gate_confirm),
		cmocka_unit_test(test_gate_confirm_sequential),
		cmocka_unit_test(test_mw_strata),
		cmocka_unit_test(test_gate_look_third_round),
		cmocka_unit_test(test_gate_look_stops_early),
		cmocka_unit_test(test_gate_look_alpha),
		cmocka_unit_test(test_gate_options),
		cmocka_unit_test(test_natural_order),
		cmocka_unit_test(test_gate_floor_noisy_identical),
		cmocka_unit_test(test_gate_heavy_tail_slower),
		cmocka_unit_test(test_gate_heavy_tail_null),
		cmocka_unit_test(test_gate_same_source_drift_junit),
		cmocka_unit_test(test_gate_anchor_baseline_best),
	};
	if (argc > 1)
		data_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
