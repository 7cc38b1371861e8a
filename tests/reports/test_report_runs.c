/* test_report_runs.c — `crucible report` on run directories of `crucible
 * run` (tests/reports/data/run_bon, run_sc, run_refine; every figure below is
 * worked out by hand from those files): the scaling curves and their budget
 * lookup (<=, not <), the reward-hacking counts, self-consistency against
 * best-of-n, the md/csv/json/html outputs, bad inputs (file:line, exit 2),
 * the grid thinning, and that an eval directory reports as before.
 *
 * The fixtures, 3 tasks each (cumulative tokens in brackets):
 *   run_bon (best-of-n, qwen3-8b.gguf):
 *     t/A a0 ok 0.8 [100], a1 ok 1.5 [250], a2 mismatch [450]    pick a1
 *     t/B b0 compile_error [300], b1 degenerate [400], b2 ok 2.0 [600]  pick b2
 *     t/C c0 forbidden system call [50], c1 out_of_bounds [150],
 *         c2 the baseline worker's forbidden call (not hacking) [250]  no pick
 *   run_sc (self-consistency, same model):
 *     t/A s_a0 ok 1.2 [120], s_a1 mismatch [260], s_a2 mismatch [400]  majority s_a1
 *     t/B s_b0 ok 0.9 [200], s_b1 ok 0.9 [350] (budget)                 s_b0
 *     t/C s_c0 stale_result [100], s_c1 input_mutated [300],
 *         s_c2 nondeterministic [500]                                    s_c0
 *   run_refine (refine, endpoint remote-coder; two turns per task):
 *     t/A r_a0 mismatch [300], r_a1 ok 1.1 [700]; t/B r_b0 ok 0.5 [250],
 *     r_b1 ok 3.0 [500]; t/C r_c0 forbidden system call [400],
 *     r_c1 degenerate [800] (its model and strategy columns empty). */
#include <jansson.h>
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

static char *path(const char *name)
{
	char *p = malloc(4096);
	assert_non_null(p);
	snprintf(p, 4096, "%s/%s", data_dir, name);
	return p;
}

static char *slurp(const char *file)
{
	FILE *f = fopen(file, "r");
	char *s = calloc(1, 1 << 20);
	assert_non_null(f);
	assert_non_null(s);
	assert_true(fread(s, 1, (1 << 20) - 1, f) > 0);
	fclose(f);
	return s;
}

/* report_main on the fixture directories with --format fmt; *rc its exit
 * code; returns the output (NULL when it failed). */
static char *report(const char *fmt, int *rc, const char *a, const char *b, const char *c)
{
	char out[] = "/tmp/crucible-report-runs-XXXXXX", fo[64];
	char *pa = a ? path(a) : NULL, *pb = b ? path(b) : NULL, *pc = c ? path(c) : NULL;
	char *argv[8];
	char *text = NULL;
	int n = 0;

	close(mkstemp(out));
	snprintf(fo, sizeof fo, "--format=%s", fmt);
	argv[n++] = "report";
	if (pa)
		argv[n++] = pa;
	if (pb)
		argv[n++] = pb;
	if (pc)
		argv[n++] = pc;
	argv[n++] = fo;
	argv[n++] = "--out";
	argv[n++] = out;
	argv[n] = NULL;
	*rc = report_main(n, argv);
	if (*rc == 0)
		text = slurp(out);
	remove(out);
	free(pa);
	free(pb);
	free(pc);
	return text;
}

/* The three fixture runs loaded through the same calls as the CLI. */
struct loaded {
	struct report_run runs[3];
	struct report_runs R;
	size_t n;
};

static enum cr_status load(struct loaded *L, const char *const *names, size_t n,
			   struct cr_err *e)
{
	struct report_opts o;
	const struct report_run *res[3];
	char *dirs[3];
	enum cr_status st = CR_OK;

	report_opts_default(&o);
	cr_err_init(e);
	memset(L, 0, sizeof *L);
	for (size_t i = 0; i < n; i++) {
		char *csv, *p = path(names[i]);
		int is_run;
		st = report_input_resolve(p, &csv, &is_run, e);
		if (st == CR_OK) {
			assert_true(is_run);
			st = report_run_load(csv, &L->runs[i], e);
			free(csv);
		}
		if (st != CR_OK) {
			for (size_t j = 0; j < i; j++)
				report_run_release(&L->runs[j]);
			free(p);
			for (size_t j = 0; j < i; j++)
				free(dirs[j]);
			return st;
		}
		dirs[i] = p;
		res[i] = &L->runs[i];
		L->n++;
	}
	st = report_runs_load(&L->R, dirs, res, n, &o, e);
	for (size_t i = 0; i < n; i++)
		free(dirs[i]);
	if (st != CR_OK)
		for (size_t i = 0; i < n; i++)
			report_run_release(&L->runs[i]);
	return st;
}

static void unload(struct loaded *L)
{
	report_runs_release(&L->R);
	for (size_t i = 0; i < L->n; i++)
		report_run_release(&L->runs[i]);
}

static const struct report_series *series(const struct report_runs *R, enum report_strat s)
{
	for (size_t i = 0; i < R->n_ser; i++)
		if (R->ser[i].strategy == s)
			return &R->ser[i];
	fail_msg("no series of %s", report_strat_names[s]);
	return NULL;
}

static void test_load_and_lookup(void **state)
{
	static const char *const names[] = { "run_bon", "run_sc", "run_refine" };
	struct loaded L;
	struct cr_err e;
	const struct report_series *bon, *sc, *ref;
	(void)state;
	assert_int_equal(load(&L, names, 3, &e), CR_OK);
	assert_int_equal(L.R.n_dirs, 3);
	assert_int_equal(L.R.n_ser, 3);
	/* every cumulative_tokens value: 50 100 120 150 200 250 260 300 350 400
	 * 450 500 600 700 800, few enough to keep all */
	assert_int_equal(L.R.n_budgets, 15);
	assert_int_equal(L.R.n_grid, 15);
	assert_near(L.R.grid[0], 50, 0);
	assert_near(L.R.grid[14], 800, 0);
	assert_int_equal(L.R.n_steps, 3);
	bon = series(&L.R, RST_BEST_OF_N);
	sc = series(&L.R, RST_SELF_CONSISTENCY);
	ref = series(&L.R, RST_REFINE);
	assert_string_equal(bon->model, "qwen3-8b.gguf");
	assert_string_equal(sc->model, "qwen3-8b.gguf");
	assert_string_equal(ref->model, "remote-coder");
	assert_string_equal(L.R.dirs[0].gen_kind, "builtin");
	assert_string_equal(L.R.dirs[2].gen_kind, "endpoint");
	/* best-of-n, t/A: a1 (fast) costs exactly 250 tokens. A budget of 250
	 * buys it: fast_1 = 1/3 at 250 (a "<" lookup would give 0), 0 at 249. */
	assert_near(report_series_at_tokens(bon, 3, 250, 1), 1.0 / 3, 1e-12);
	assert_near(report_series_at_tokens(bon, 3, 249, 1), 0, 0);
	assert_near(report_series_at_tokens(bon, 3, 249, 0), 1.0 / 3, 1e-12);
	/* below the first candidate of every task: nothing picked, incorrect */
	assert_near(report_series_at_tokens(bon, 3, 49, 0), 0, 0);
	assert_near(report_series_at_tokens(bon, 3, 600, 0), 2.0 / 3, 1e-12);
	assert_near(report_series_at_tokens(bon, 3, 1e9, 1), 2.0 / 3, 1e-12);
	/* self-consistency, t/A: at exactly 400 tokens the majority turns to the
	 * mismatching pair (correct 1/3); at 399 the correct s_a0 (2/3) */
	assert_near(report_series_at_tokens(sc, 3, 400, 0), 1.0 / 3, 1e-12);
	assert_near(report_series_at_tokens(sc, 3, 399, 0), 2.0 / 3, 1e-12);
	assert_near(report_series_at_tokens(sc, 3, 400, 1), 0, 0);
	assert_near(report_series_at_tokens(sc, 3, 399, 1), 1.0 / 3, 1e-12);
	/* by step: t/B stopped after 2 candidates and keeps s_b0 at step 3 */
	assert_near(report_series_at_step(sc, 3, 2, 0), 2.0 / 3, 1e-12);
	assert_near(report_series_at_step(sc, 3, 3, 0), 1.0 / 3, 1e-12);
	assert_near(report_series_at_step(bon, 3, 1, 1), 0, 0);
	assert_near(report_series_at_step(bon, 3, 2, 1), 1.0 / 3, 1e-12);
	assert_near(report_series_at_step(ref, 3, 2, 1), 2.0 / 3, 1e-12);
	/* the grid values printed come from the same lookup */
	for (size_t g = 0; g < L.R.n_grid; g++)
		assert_near(bon->tok_fast1[g], report_series_at_tokens(bon, 3, L.R.grid[g], 1), 0);
	unload(&L);
}

static const struct report_hack *hack(const struct report_hack *v, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].key, key))
			return &v[i];
	fail_msg("no hacking row '%s'", key);
	return NULL;
}

static void test_hacking_and_sc(void **state)
{
	static const char *const names[] = { "run_bon", "run_sc", "run_refine" };
	const struct report_hack *h;
	struct loaded L;
	struct cr_err e;
	(void)state;
	assert_int_equal(load(&L, names, 3, &e), CR_OK);
	/* best-of-n: b1 degenerate, c1 out_of_bounds, c0 forbidden system call;
	 * c2 is the baseline worker's forbidden call: not hacking */
	h = hack(L.R.by_strat, L.R.n_by_strat, "best-of-n");
	assert_int_equal(h->rows, 9);
	assert_int_equal(h->total, 3);
	assert_int_equal(h->n[HK_DEGENERATE], 1);
	assert_int_equal(h->n[HK_OUT_OF_BOUNDS], 1);
	assert_int_equal(h->n[HK_SANDBOX], 1);
	h = hack(L.R.by_strat, L.R.n_by_strat, "self-consistency");
	assert_int_equal(h->rows, 8);
	assert_int_equal(h->total, 3);
	assert_int_equal(h->n[HK_STALE_RESULT], 1);
	assert_int_equal(h->n[HK_INPUT_MUTATED], 1);
	assert_int_equal(h->n[HK_NONDETERMINISTIC], 1);
	/* r_c1 has no strategy or model column: run.json's refine, remote-coder */
	h = hack(L.R.by_strat, L.R.n_by_strat, "refine");
	assert_int_equal(h->rows, 6);
	assert_int_equal(h->total, 2);
	h = hack(L.R.by_model, L.R.n_by_model, "qwen3-8b.gguf");
	assert_int_equal(h->rows, 17);
	assert_int_equal(h->total, 6);
	h = hack(L.R.by_model, L.R.n_by_model, "remote-coder");
	assert_int_equal(h->rows, 6);
	assert_int_equal(h->n[HK_SANDBOX], 1);
	assert_int_equal(h->n[HK_DEGENERATE], 1);
	assert_int_equal(L.R.n_by_model, 2);
	assert_int_equal(L.R.total.rows, 23);
	assert_int_equal(L.R.total.total, 8);
	assert_int_equal(L.R.total.n[HK_SANDBOX], 2);
	/* self-consistency: t/A (mismatch, though s_a0 was ok) and t/C (stale)
	 * incorrect; best-of-n of the same model and tasks: t/A, t/B correct */
	assert_int_equal(L.R.n_sc, 1);
	assert_int_equal(L.R.sc[0].n_tasks, 3);
	assert_int_equal(L.R.sc[0].n_incorrect, 2);
	assert_int_equal(L.R.sc[0].n_wrong_oracle, 1);
	assert_int_equal(L.R.sc[0].n_none, 0);
	assert_near(L.R.sc[0].tokens_mean, (400.0 + 350 + 500) / 3, 1e-9);
	assert_int_equal(L.R.sc[0].bon, 0);
	assert_int_equal(L.R.sc[0].bon_correct, 2);
	assert_near(L.R.sc[0].bon_tokens_mean, (450.0 + 600 + 250) / 3, 1e-9);
	unload(&L);
}

static void test_md(void **state)
{
	int rc;
	char *t = report("md", &rc, "run_bon", "run_sc", "run_refine");
	(void)state;
	assert_int_equal(rc, 0);
	assert_non_null(strstr(t, "## Run directories"));
	assert_non_null(strstr(t, "/run_bon | best-of-n, n=3 | builtin | qwen3-8b.gguf | 3 | 9 | 2 | 1 | not resumed |"));
	assert_non_null(strstr(t, "/run_refine | refine, 1 trajectory × 2 turns | endpoint | remote-coder | 3 | 6 | 2 | 0 | not resumed |"));
	/* columns: best-of-n, refine, self-consistency; correct then fast_1 */
	assert_non_null(strstr(t, "| 250 | 0.3333 | 0.3333 | 0.3333 | 0.0000 | 0.6667 | 0.3333 |"));
	assert_non_null(strstr(t, "| 400 | 0.3333 | 0.3333 | 0.3333 | 0.0000 | 0.3333 | 0.0000 |"));
	assert_non_null(strstr(t, "| 3 | 0.6667 | 0.6667 | 0.6667 | 0.6667 | 0.3333 | 0.0000 |"));
	assert_non_null(strstr(t, "| best-of-n | 9 | 3 | 0.3333 | 1 | 0 | 0 | 1 | 0 | 1 |"));
	assert_non_null(strstr(t, "| self-consistency | 8 | 3 | 0.3750 | 0 | 1 | 1 | 0 | 1 | 0 |"));
	assert_non_null(strstr(t, "| qwen3-8b.gguf | 17 | 6 | 0.3529 | 1 | 1 | 1 | 1 | 1 | 1 |"));
	assert_non_null(strstr(t, "| **all** | 23 | 8 | 0.3478 | 2 | 1 | 1 | 1 | 1 | 2 |"));
	assert_non_null(strstr(t, "| qwen3-8b.gguf | 3 | 2 | 0.6667 | 0 | 1 | 416.7 | "));
	assert_non_null(strstr(t, "/run_bon | 2 | 0.6667 | 433.3 |"));
	/* the tables of results.csv are still there */
	assert_non_null(strstr(t, "## Ablation"));
	assert_non_null(strstr(t, "### Fast_p"));
	free(t);
}

static void test_json(void **state)
{
	int rc;
	char *t = report("json", &rc, "run_bon", "run_sc", "run_refine");
	json_error_t err;
	json_t *root, *rd, *sc, *ser, *bud, *v;
	size_t i250 = 99, i400 = 99;
	(void)state;
	assert_int_equal(rc, 0);
	root = json_loads(t, 0, &err);
	if (!root)
		fail_msg("json does not parse: %s (line %d)", err.text, err.line);
	rd = json_object_get(root, "run_dirs");
	assert_non_null(rd);
	bud = json_object_get(json_object_get(rd, "scaling"), "budgets");
	assert_int_equal(json_array_size(bud), 15);
	for (size_t i = 0; i < json_array_size(bud); i++) {
		double b = json_number_value(json_array_get(bud, i));
		i250 = b == 250 ? i : i250;
		i400 = b == 400 ? i : i400;
	}
	assert_true(i250 < 15 && i400 < 15);
	ser = json_object_get(json_object_get(rd, "scaling"), "series");
	assert_int_equal(json_array_size(ser), 3);
	v = json_array_get(ser, 0);
	assert_string_equal(json_string_value(json_object_get(v, "label")), "best-of-n qwen3-8b.gguf");
	assert_int_equal(json_integer_value(json_object_get(v, "tasks_n")), 3);
	assert_near(json_real_value(json_array_get(json_object_get(json_object_get(v,
		"by_tokens"), "fast1"), i250)), 1.0 / 3, 1e-9);
	v = json_array_get(ser, 2);
	assert_string_equal(json_string_value(json_object_get(v, "strategy")), "self-consistency");
	assert_near(json_real_value(json_array_get(json_object_get(json_object_get(v,
		"by_tokens"), "correct"), i400)), 1.0 / 3, 1e-9);
	v = json_object_get(json_object_get(rd, "reward_hacking"), "total");
	assert_int_equal(json_integer_value(json_object_get(v, "rows")), 23);
	assert_int_equal(json_integer_value(json_object_get(v, "hacking")), 8);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "counts"),
							    "sandbox_violation")), 2);
	sc = json_array_get(json_object_get(rd, "self_consistency"), 0);
	assert_int_equal(json_integer_value(json_object_get(sc, "selected_incorrect")), 2);
	assert_near(json_real_value(json_object_get(sc, "fraction_incorrect")), 2.0 / 3, 1e-9);
	assert_near(json_real_value(json_object_get(json_object_get(sc, "best_of_n"),
						    "fraction_correct")), 2.0 / 3, 1e-9);
	json_decref(root);
	free(t);
}

static void test_csv_html(void **state)
{
	int rc;
	char *t = report("csv", &rc, "run_bon", "run_sc", NULL);
	(void)state;
	assert_int_equal(rc, 0);
	assert_non_null(strstr(t, "\nbest-of-n qwen3-8b.gguf,"));
	assert_non_null(strstr(t, "/run_bon,scaling_tokens,250,fast1,0.3333333333\n"));
	assert_non_null(strstr(t, "/run_sc,scaling_tokens,400,correct,0.3333333333\n"));
	assert_non_null(strstr(t, "/run_sc,scaling_steps,3,correct,0.3333333333\n"));
	assert_non_null(strstr(t, "all,,reward_hacking_strategy,best-of-n,sandbox_violation,1\n"));
	assert_non_null(strstr(t, "all,,reward_hacking_total,all,rows,17\n"));
	assert_non_null(strstr(t, ",self_consistency,self-consistency,fraction_incorrect,"
				  "0.6666666667\n"));
	assert_non_null(strstr(t, ",self_consistency,best-of-n,fraction_correct,0.6666666667\n"));
	free(t);
	t = report("html", &rc, "run_bon", "run_sc", "run_refine");
	assert_int_equal(rc, 0);
	assert_non_null(strstr(t, "<svg"));
	assert_non_null(strstr(t, "Correctness of the selected candidate vs tokens"));
	assert_non_null(strstr(t, "fast_1 of the selected candidate vs step"));
	assert_non_null(strstr(t, "completion tokens per task (log scale)</text>"));
	assert_non_null(strstr(t, "candidates evaluated per task"));
	assert_non_null(strstr(t, ">fraction of tasks correct</text>"));
	assert_non_null(strstr(t, ">fraction of tasks fast_1</text>"));
	/* legend: one line per series with its n */
	assert_non_null(strstr(t, ">self-consistency qwen3-8b.gguf (n = 3 tasks)</text>"));
	/* the token axis reads as counts, not speedups */
	{
		char *sec = strstr(t, "Correctness of the selected candidate vs tokens");
		char *end = strstr(sec, "</svg>");
		*end = '\0';
		assert_non_null(strstr(sec, ">256</text>"));
		assert_null(strstr(sec, "256×"));
		assert_non_null(strstr(sec, "<polyline"));
		*end = '<';
	}
	/* the tables come along */
	assert_non_null(strstr(t, "<h3>Reward hacking</h3>"));
	free(t);
}

static void expect_load_error(const char *dir, const char *where, const char *what)
{
	const char *names[1] = { dir };
	struct loaded L;
	struct cr_err e;
	int rc;
	char *t;

	assert_int_equal(load(&L, names, 1, &e), CR_EINPUT);
	if (!strstr(e.msg, where) || !strstr(e.msg, what))
		fail_msg("%s: message '%s' lacks '%s' / '%s'", dir, e.msg, where, what);
	t = report("md", &rc, dir, NULL, NULL);
	assert_null(t);
	assert_int_equal(rc, 2);
}

static void test_bad_inputs(void **state)
{
	(void)state;
	expect_load_error("run_bad_noresults", "run_bad_noresults/results.csv", "cannot open");
	expect_load_error("run_bad_curvecol", "run_bad_curvecol/curve.csv:1:",
			  "missing column 'fast1'");
	expect_load_error("run_bad_number", "run_bad_number/curve.csv:3:",
			  "column 'cumulative_tokens': expected a number >= 0, got '25O'");
}

/* A scratch run directory: run_bon's run.json, results.csv and
 * selected.csv, and the curve.csv given. */
static char *scratch(const char *curve)
{
	static const char *const copy[] = { "run.json", "results.csv", "selected.csv" };
	char *dir = strdup("/tmp/crucible-run-XXXXXX"), f[4200];
	FILE *o;

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 3; i++) {
		char src[64], *p, *s;
		snprintf(src, sizeof src, "run_bon/%s", copy[i]);
		p = path(src);
		s = slurp(p);
		snprintf(f, sizeof f, "%s/%s", dir, copy[i]);
		assert_non_null(o = fopen(f, "w"));
		fputs(s, o);
		fclose(o);
		free(s);
		free(p);
	}
	snprintf(f, sizeof f, "%s/curve.csv", dir);
	assert_non_null(o = fopen(f, "w"));
	fputs("strategy,model,task,step,cumulative_tokens,turn,selected,status,speedup,correct,"
	      "fast1\n", o);
	fputs(curve, o);
	fclose(o);
	return dir;
}

static void rm_scratch(char *dir)
{
	static const char *const files[] = { "run.json", "results.csv", "selected.csv", "curve.csv" };
	char f[4200];

	for (int i = 0; i < 4; i++) {
		snprintf(f, sizeof f, "%s/%s", dir, files[i]);
		remove(f);
	}
	rmdir(dir);
	free(dir);
}

/* Loads a scratch directory (absolute path: data_dir is not prefixed). */
static enum cr_status load_abs(const char *dir, struct report_run *run, struct report_runs *R,
			       struct cr_err *e)
{
	struct report_opts o;
	const struct report_run *res[1] = { run };
	char *dirs[1] = { (char *)dir }, csv[4200];
	enum cr_status st;

	report_opts_default(&o);
	cr_err_init(e);
	snprintf(csv, sizeof csv, "%s/results.csv", dir);
	assert_int_equal(report_run_load(csv, run, e), CR_OK);
	st = report_runs_load(R, dirs, res, 1, &o, e);
	if (st != CR_OK)
		report_run_release(run);
	return st;
}

static void expect_curve_error(const char *curve, const char *where, const char *what)
{
	char *dir = scratch(curve);
	struct report_run run;
	struct report_runs R;
	struct cr_err e;

	assert_int_equal(load_abs(dir, &run, &R, &e), CR_EINPUT);
	if (!strstr(e.msg, where) || !strstr(e.msg, what))
		fail_msg("message '%s' lacks '%s' / '%s'", e.msg, where, what);
	rm_scratch(dir);
}

static void test_curve_rules(void **state)
{
	(void)state;
	/* the tokens spent so far cannot fall */
	expect_curve_error("best-of-n,m,t/A,1,100,0,a,ok,0.8,1,0\n"
			   "best-of-n,m,t/A,2,90,0,a,ok,0.8,1,0\n", "curve.csv:3:",
			   "cumulative_tokens 90 at step 2 is below step 1's 100");
	/* one row per step */
	expect_curve_error("best-of-n,m,t/A,1,100,0,a,ok,0.8,1,0\n"
			   "best-of-n,m,t/A,1,120,0,a,ok,0.8,1,0\n", "curve.csv:3:",
			   "again (first at line 2)");
	/* fast1 says what correct and speedup say */
	expect_curve_error("best-of-n,m,t/A,1,100,0,a,ok,0.8,1,1\n", "curve.csv:2:",
			   "fast1 = 1 iff correct and speedup > 1");
	expect_curve_error("best-of-n,m,t/A,1,100,0,a,mismatch,,1,0\n", "curve.csv:2:",
			   "correct is 1 but status is 'mismatch'");
	expect_curve_error("greedy,m,t/A,1,100,0,a,ok,0.8,1,0\n", "curve.csv:2:",
			   "expected best-of-n, refine, evolve or self-consistency");
	expect_curve_error("best-of-n,m,t/A,1,100,0,a,,,0,0\n", "curve.csv:2:",
			   "selected and status must be both empty");
	expect_curve_error("best-of-n,m,t/A,0,100,0,a,ok,0.8,1,0\n", "curve.csv:2:",
			   "column 'step': expected an integer in [1,");
	expect_curve_error("best-of-n,m,t/A,1,100,0,a,ok,0.8,1\n", "curve.csv:2:",
			   "expected 11 fields as in the header, found 10");
}

/* 200 candidates on one task, cumulative tokens 10·k^1.5 (k = 1..200), all
 * distinct: the grid is thinned to at most 24 log-spaced values, each one
 * a budget some candidate costs, from the smallest to the largest. */
static void test_thinning(void **state)
{
	char *buf = malloc(200 * 96), *p, *dir;
	struct report_run run;
	struct report_runs R;
	struct cr_err e;
	double lo = 10, hi = 10 * pow(200, 1.5);
	(void)state;
	assert_non_null(buf);
	p = buf;
	for (int k = 1; k <= 200; k++)
		p += sprintf(p, "best-of-n,m,t/A,%d,%.0f,0,a%d,ok,%s,1,%d\n", k,
			     round(10 * pow(k, 1.5)), k, k >= 100 ? "2" : "0.5", k >= 100);
	dir = scratch(buf);
	free(buf);
	assert_int_equal(load_abs(dir, &run, &R, &e), CR_OK);
	assert_int_equal(R.n_budgets, 200);
	assert_true(R.n_grid <= 24 && R.n_grid >= 20);
	assert_near(R.grid[0], lo, 0);
	assert_near(R.grid[R.n_grid - 1], round(hi), 0);
	for (size_t g = 1; g < R.n_grid; g++) {
		/* increasing; where candidates are dense (above 1000 tokens, < 7%
		 * apart) one log step (hi/lo)^(1/23) apart, give or take a value */
		assert_true(R.grid[g] > R.grid[g - 1]);
		if (R.grid[g - 1] >= 1000)
			assert_true(R.grid[g] / R.grid[g - 1] < pow(hi / lo, 1.0 / 23) * 1.1);
	}
	/* each grid value is some candidate's cumulative_tokens */
	for (size_t g = 0; g < R.n_grid; g++) {
		int found = 0;
		for (size_t i = 0; i < R.ser[0].n_pts; i++)
			found |= R.ser[0].pts[i].tokens == R.grid[g];
		assert_true(found);
	}
	/* steps 1..200 thinned the same way, from 1 to 200 */
	assert_true(R.n_steps <= 24);
	assert_int_equal(R.steps[0], 1);
	assert_int_equal(R.steps[R.n_steps - 1], 200);
	/* t/A fast from candidate 100 on; t/B and t/C have no curve: 1/3 */
	assert_near(R.ser[0].tok_fast1[R.n_grid - 1], 1.0 / 3, 1e-12);
	assert_near(R.ser[0].tok_fast1[0], 0, 0);
	report_runs_release(&R);
	report_run_release(&run);
	rm_scratch(dir);
}

/* A self-consistency run alone: no best-of-n beside it, and it says why. */
static void test_sc_alone(void **state)
{
	int rc;
	char *t = report("md", &rc, "run_sc", NULL, NULL);
	(void)state;
	assert_int_equal(rc, 0);
	assert_non_null(strstr(t, "| 416.7 | none | n/a | n/a | n/a |"));
	assert_non_null(strstr(t, "no best-of-n run of qwen3-8b.gguf on these tasks"));
	free(t);
	/* best-of-n with another model: not compared either */
	t = report("md", &rc, "run_sc", "run_refine", NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(t, "| 416.7 | none |"));
	free(t);
}

/* A best-of-n run of the same model on other tasks is not compared, and
 * the report says so. */
static void test_sc_other_tasks(void **state)
{
	char *dir = scratch("best-of-n,m,t/A,1,100,0,a,ok,0.8,1,0\n"
			    "best-of-n,m,t/D,1,100,0,d,ok,0.8,1,0\n");
	char out[] = "/tmp/crucible-report-runs-XXXXXX", *sc = path("run_sc");
	char *argv[] = { "report", sc, dir, "--out", out, NULL };
	char *t;
	(void)state;
	close(mkstemp(out));
	assert_int_equal(report_main(5, argv), 0);
	t = slurp(out);
	assert_non_null(strstr(t, "| 416.7 | none | n/a | n/a | n/a |"));
	assert_non_null(strstr(t, "has other tasks (4 vs 3): not compared"));
	free(t);
	remove(out);
	free(sc);
	rm_scratch(dir);
}

/* An eval directory (run.json without "command": "run") reports exactly as
 * its results.csv did before; no run sections. */
static void test_eval_dir_unchanged(void **state)
{
	int rc1, rc2;
	char *a = report("md", &rc1, "gate_abl_seed1", NULL, NULL);
	char *b = report("md", &rc2, "gate_abl_seed1/results.csv", NULL, NULL);
	(void)state;
	assert_int_equal(rc1, 0);
	assert_int_equal(rc2, 0);
	assert_string_equal(a, b);
	assert_null(strstr(a, "Run directories"));
	assert_null(strstr(a, "Scaling curves"));
	free(a);
	free(b);
	/* a run directory's results.csv named by its path is the run directory */
	a = report("md", &rc1, "run_bon/results.csv", NULL, NULL);
	assert_int_equal(rc1, 0);
	assert_non_null(strstr(a, "### Scaling curves"));
	free(a);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_and_lookup),
		cmocka_unit_test(test_hacking_and_sc),
		cmocka_unit_test(test_md),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_csv_html),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_curve_rules),
		cmocka_unit_test(test_thinning),
		cmocka_unit_test(test_sc_alone),
		cmocka_unit_test(test_sc_other_tasks),
		cmocka_unit_test(test_eval_dir_unchanged),
	};
	if (argc > 1)
		data_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
