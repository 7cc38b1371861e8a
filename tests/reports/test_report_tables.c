/* test_report_tables.c — the tables of `crucible report` on hand-made CSVs
 * (tests/reports/data/basic.csv; every expected value is computed by hand in
 * the comments), malformed CSVs, the json and csv printers, and the CLI. */
#include <jansson.h>
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

static const char *path(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/%s", data_dir, name);
	return buf;
}

/* basic.csv (N = 3 tasks, 3 candidates each):
 *   t/A: s0 ok 2.0 (1000 tok), s1 ok/absent 0.5 (3000), s2 mismatch (5000)
 *   t/B: s0 ok but backward fail 3.0 (9000), s1 ok 1.0 (9000), s2 compile_error (no tokens)
 *   t/C: s0 timeout (4000), s1 runtime_error (8500), s2 ok 1.5 (8500)
 * Correct: A0 2.0, A1 0.5, B1 1.0, C2 1.5. */
static void load_basic(struct report_run *run, struct report_summary *s, struct report_opts *o)
{
	struct cr_err e;

	cr_err_init(&e);
	assert_int_equal(report_run_load(path("basic.csv"), run, &e), CR_OK);
	assert_int_equal(run->n_rows, 9);
	assert_int_equal(report_summary_compute(run, o, s, &e), CR_OK);
}

static void test_basic_fast_p(void **state)
{
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	/* p grid 0, 0.5, 0.8, 1, 1.5, 2 */
	static const double best[] = { 1, 1, 1, 2.0 / 3, 1.0 / 3, 0 };
	static const double s0[] = { 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0 };
	static const double s1[] = { 2.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 0 };
	static const double s2[] = { 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0 };
	(void)state;
	report_opts_default(&o);
	load_basic(&run, &s, &o);
	assert_int_equal(s.n_tasks, 3);
	assert_int_equal(s.n_samples, 3);
	for (int j = 0; j < 6; j++) {
		assert_near(s.fast_best[j], best[j], 1e-15);
		assert_near(s.fast_sample[0 * 6 + j], s0[j], 1e-15);
		assert_near(s.fast_sample[1 * 6 + j], s1[j], 1e-15);
		assert_near(s.fast_sample[2 * 6 + j], s2[j], 1e-15);
		assert_near(s.fast_sample_mean[j], (s0[j] + s1[j] + s2[j]) / 3, 1e-15);
	}
	assert_near(report_summary_fast_at(&s, 1.0), 2.0 / 3, 1e-15);
	assert_near(report_summary_fast_at(&s, 1.49), 2.0 / 3, 1e-15);
	assert_int_equal(s.n_correct, 4);
	assert_int_equal(s.status_counts[RS_OK], 5);
	assert_int_equal(s.status_counts[RS_MISMATCH], 1);
	assert_int_equal(s.status_counts[RS_COMPILE_ERROR], 1);
	assert_int_equal(s.bw_counts[RB_ABSENT], 1);
	assert_int_equal(s.bw_counts[RB_FAIL], 1);
	/* Geometric mean of 2, 0.5, 1, 1.5 = 1.5^(1/4). */
	assert_int_equal(s.gm_n, 4);
	assert_near(s.gm, pow(1.5, 0.25), 1e-12);
	assert_string_equal(s.label, "qwen3-8b-q4_k T=0.6 n=3 turns=1");
	/* Line numbers: the quoted detail of t/A s2 spans lines 4-5. */
	assert_int_equal(run.rows[2].line, 4);
	assert_int_equal(run.rows[3].line, 6);
	assert_string_equal(run.rows[3].task, "t/B");
	report_summary_release(&s);
	report_run_release(&run);
}

static void test_basic_pass_at_k(void **state)
{
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	(void)state;
	report_opts_default(&o);
	o.nk = 4;
	o.k[0] = 1, o.k[1] = 2, o.k[2] = 3, o.k[3] = 5;
	load_basic(&run, &s, &o);
	/* c = 2, 1, 1 of n = 3 */
	assert_near(s.pass_k[0], (2.0 / 3 + 1.0 / 3 + 1.0 / 3) / 3, 1e-15);
	assert_near(s.pass_k[1], (1 + 2.0 / 3 + 2.0 / 3) / 3, 1e-15);
	assert_near(s.pass_k[2], 1.0, 1e-15);
	assert_true(isnan(s.pass_k[3]));
	assert_int_equal(s.k_short[3], 3);
	/* fast_1@k: correct and > 1 is A0 and C2 only (B1 is exactly 1). */
	assert_near(s.fastp_k[0 * 32 + 3], (1.0 / 3 + 0 + 1.0 / 3) / 3, 1e-15);
	assert_near(s.fastp_k[1 * 32 + 3], (2.0 / 3 + 0 + 2.0 / 3) / 3, 1e-15);
	assert_near(report_summary_pass_at(&s, 2), s.pass_k[1], 1e-15);
	report_summary_release(&s);
	report_run_release(&run);
}

static void test_basic_reasoning(void **state)
{
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	(void)state;
	report_opts_default(&o);
	load_basic(&run, &s, &o);
	assert_int_equal(s.rl_n, 8);
	assert_int_equal(s.rl_missing, 1);
	/* ARL: A 3000 Easy, B 9000 Hard (the row without tokens is left out), C 7000 Medium. */
	assert_near(s.tasks[0].arl, 3000, 1e-9);
	assert_near(s.tasks[1].arl, 9000, 1e-9);
	assert_near(s.tasks[2].arl, 7000, 1e-9);
	assert_int_equal(s.bucket[0].n, 3);
	assert_int_equal(s.bucket[0].n_correct, 2);
	assert_near(s.bucket[0].median_speedup, 1.25, 1e-15);
	assert_int_equal(s.bucket[1].n, 3);
	assert_int_equal(s.bucket[1].n_correct, 1);
	assert_near(s.bucket[1].median_speedup, 1.5, 1e-15);
	assert_int_equal(s.bucket[2].n, 2);
	assert_int_equal(s.bucket[2].n_correct, 1);
	assert_near(s.bucket[2].median_speedup, 1.0, 1e-15);
	/* Quartiles of 1000 3000 4000 5000 8500 8500 9000 9000. */
	assert_near(s.q1, 3750, 1e-9);
	assert_near(s.q2, 6750, 1e-9);
	assert_near(s.q3, 8625, 1e-9);
	assert_int_equal(s.quart[0].n, 2);
	assert_int_equal(s.quart[0].n_correct, 2);
	assert_near(s.quart[0].median_speedup, 1.25, 1e-15);
	assert_int_equal(s.quart[1].n_correct, 0);
	assert_true(isnan(s.quart[1].median_speedup));
	assert_int_equal(s.quart[2].n_correct, 1);
	assert_int_equal(s.quart[3].n, 2);
	assert_near(s.quart[3].median_speedup, 1.0, 1e-15);
	/* r(length, speedup) over (1000,2) (3000,.5) (8500,1.5) (9000,1):
	 * sxy = -1625, sxx = 47687500, syy = 1.25. */
	assert_int_equal(s.r_speed_n, 4);
	assert_near(s.r_speed, -1625 / sqrt(47687500 * 1.25), 1e-12);
	/* r(length, correct): sxy = -2500, sxx = 69.5e6, syy = 2. */
	assert_int_equal(s.r_correct_n, 8);
	assert_near(s.r_correct, -2500 / sqrt(69.5e6 * 2), 1e-12);
	report_summary_release(&s);
	report_run_release(&run);
}

static void test_task_list_and_strict(void **state)
{
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	struct cr_err e;
	char **names;
	size_t n;
	(void)state;
	cr_err_init(&e);
	assert_int_equal(report_task_list_load(path("tasks4.txt"), &names, &n, &e), CR_OK);
	assert_int_equal(n, 4);
	report_opts_default(&o);
	o.task_list = names;
	o.n_task_list = n;
	load_basic(&run, &s, &o);
	/* t/D has no candidate: N = 4 and it counts as failed. */
	assert_int_equal(s.n_tasks, 4);
	assert_near(s.fast_best[0], 3.0 / 4, 1e-15);
	assert_near(s.fast_best[3], 2.0 / 4, 1e-15);
	assert_near(s.pass_k[0], (2.0 / 3 + 1.0 / 3 + 1.0 / 3 + 0) / 4, 1e-15);
	report_summary_release(&s);
	report_run_release(&run);
	report_task_list_free(names, n);

	/* --strict-backward: A1 (absent) is no longer correct. */
	report_opts_default(&o);
	o.strict_backward = 1;
	load_basic(&run, &s, &o);
	assert_int_equal(s.n_correct, 3);
	assert_near(s.pass_k[0], 1.0 / 3, 1e-15);
	assert_near(s.fast_sample[1 * 6 + 0], 1.0 / 3, 1e-15);
	assert_near(s.gm, cbrt(3.0), 1e-12);
	report_summary_release(&s);
	report_run_release(&run);
}

static void expect_error(const char *file, const char *where, const char *what)
{
	struct report_run run;
	struct cr_err e;
	char want[4200];

	cr_err_init(&e);
	assert_int_equal(report_run_load(path(file), &run, &e), CR_EINPUT);
	snprintf(want, sizeof want, "%s%s", path(file), where);
	if (!strstr(e.msg, want) || !strstr(e.msg, what))
		fail_msg("message '%s' lacks '%s' or '%s'", e.msg, want, what);
	assert_null(run.rows);
}

static void test_malformed(void **state)
{
	(void)state;
	expect_error("missing_column.csv", ":", "missing required column 'speedup_lo'");
	expect_error("unknown_status.csv", ":3:", "unknown status 'passed'");
	expect_error("bad_number.csv", ":4:", "bad number '1.2x'");
	expect_error("unterminated.csv", ":3:", "unterminated quoted field");
	expect_error("short_row.csv", ":3:", "expected 28 fields as in the header, found 12");
	expect_error("no_such_file.csv", ":", "cannot open");
}

static FILE *render(enum report_fmt fmt, char **text)
{
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	FILE *f = tmpfile();
	long len;

	assert_non_null(f);
	report_opts_default(&o);
	load_basic(&run, &s, &o);
	if (fmt == RF_JSON)
		assert_int_equal(report_print_json(f, &s, 1), 0);
	else if (fmt == RF_CSV)
		report_print_csv(f, &s, 1);
	else if (fmt == RF_HTML)
		report_print_html(f, &s, 1);
	else
		report_print_md(f, &s, 1);
	report_summary_release(&s);
	report_run_release(&run);
	len = ftell(f);
	rewind(f);
	*text = calloc((size_t)len + 1, 1);
	assert_int_equal(fread(*text, 1, (size_t)len, f), (size_t)len);
	rewind(f);
	return f;
}

static void test_json_parses(void **state)
{
	char *text;
	FILE *f = render(RF_JSON, &text);
	json_error_t err;
	json_t *root = json_loadf(f, 0, &err), *run, *v;
	(void)state;
	if (!root)
		fail_msg("json does not parse: %s (line %d)", err.text, err.line);
	run = json_array_get(json_object_get(root, "runs"), 0);
	assert_non_null(run);
	assert_int_equal(json_integer_value(json_object_get(run, "tasks_n")), 3);
	v = json_array_get(json_object_get(json_object_get(run, "fast_p"), "best_of_n"), 3);
	assert_near(json_real_value(v), 2.0 / 3, 1e-10);
	v = json_object_get(json_object_get(run, "geomean_speedup"), "value");
	assert_near(json_real_value(v), pow(1.5, 0.25), 1e-9);
	v = json_object_get(json_array_get(json_object_get(run, "pass_at_k"), 0), "pass");
	assert_near(json_real_value(v), 4.0 / 9, 1e-10);
	/* k = 5 > n = 3: null, not a number */
	v = json_object_get(json_array_get(json_object_get(run, "pass_at_k"), 1), "pass");
	assert_true(json_is_null(v));
	json_decref(root);
	fclose(f);
	free(text);
}

static void test_csv_md_html(void **state)
{
	char *text;
	FILE *f;
	(void)state;
	f = render(RF_CSV, &text);
	assert_non_null(strstr(text, "run,file,table,row,column,value\n"));
	assert_non_null(strstr(text, ",fast_p,best_of_n,fast_1,0.6666666667\n"));
	assert_non_null(strstr(text, ",tasks,t/B,best_speedup,1\n"));
	fclose(f);
	free(text);
	f = render(RF_MD, &text);
	assert_non_null(strstr(text, "| best-of-n | 1.0000 | 1.0000 | 1.0000 | 0.6667 | 0.3333 | 0.0000 |"));
	assert_non_null(strstr(text, "1 left out"));
	fclose(f);
	free(text);
	f = render(RF_HTML, &text);
	assert_non_null(strstr(text, "<svg"));
	assert_non_null(strstr(text, "</html>"));
	fclose(f);
	free(text);
}

static void test_cli(void **state)
{
	char out[] = "/tmp/crucible-report-test-XXXXXX";
	int fd = mkstemp(out);
	char *help[] = { "report", "--help", NULL };
	char *bad[] = { "report", "--bogus", NULL };
	char *none[] = { "report", NULL };
	char *missing[] = { "report", (char *)"/nonexistent/results.csv", NULL };
	char *badfmt[] = { "report", "x.csv", "--format", "pdf", NULL };
	char *badp[] = { "report", "x.csv", "--p", "1,abc", NULL };
	char *good[] = { "report", NULL, "--format=json", "--out", out, "--k", "1,2", NULL };
	char *malformed[] = { "report", NULL, NULL };
	char *ghelp[] = { "gate", "--help", NULL };
	char *gbad[] = { "gate", "--baseline", NULL };
	char *gnone[] = { "gate", "--threshold", "0.1", NULL };
	char b[4096], m[4096];
	(void)state;
	assert_true(fd >= 0);
	close(fd);
	snprintf(b, sizeof b, "%s", path("basic.csv"));
	snprintf(m, sizeof m, "%s", path("unknown_status.csv"));
	good[1] = b;
	malformed[1] = m;
	assert_int_equal(report_main(2, help), 0);
	assert_int_equal(report_main(2, bad), 2);
	assert_int_equal(report_main(1, none), 2);
	assert_int_equal(report_main(2, missing), 2);
	assert_int_equal(report_main(4, badfmt), 2);
	assert_int_equal(report_main(4, badp), 2);
	assert_int_equal(report_main(7, good), 0);
	assert_int_equal(report_main(2, malformed), 2);
	assert_int_equal(report_gate_main(2, ghelp), 0);
	assert_int_equal(report_gate_main(2, gbad), 2);
	assert_int_equal(report_gate_main(3, gnone), 2);
	{
		json_error_t err;
		json_t *root = json_load_file(out, 0, &err);
		assert_non_null(root);
		json_decref(root);
	}
	remove(out);
	{
		FILE *f = tmpfile();
		assert_int_equal(report_print_summary(b, f), 0);
		fclose(f);
		assert_int_equal(report_print_summary(m, stderr), 2);
	}
}

/* Several files without --task-list: N is the union of their tasks, so the
 * 9 gate tasks missing from basic.csv count as failed in its column. */
static void test_ablation_union(void **state)
{
	char out[] = "/tmp/crucible-report-abl-XXXXXX", a[4096], b[4096];
	char *argv[] = { "report", a, b, "--format", "json", "--out", out, NULL };
	json_error_t err;
	json_t *root, *r0, *r1;
	(void)state;
	close(mkstemp(out));
	snprintf(a, sizeof a, "%s", path("basic.csv"));
	snprintf(b, sizeof b, "%s", path("gate_base.csv"));
	assert_int_equal(report_main(7, argv), 0);
	root = json_load_file(out, 0, &err);
	assert_non_null(root);
	r0 = json_array_get(json_object_get(root, "runs"), 0);
	r1 = json_array_get(json_object_get(root, "runs"), 1);
	assert_int_equal(json_integer_value(json_object_get(r0, "tasks_n")), 11);
	assert_int_equal(json_integer_value(json_object_get(r1, "tasks_n")), 11);
	/* basic: 3 of 11 tasks correct; gate_base: 6 of 11 (t/fixed, t/still fail) */
	assert_near(json_real_value(json_array_get(json_object_get(json_object_get(r0, "fast_p"),
			"best_of_n"), 0)), 3.0 / 11, 1e-10);
	assert_near(json_real_value(json_array_get(json_object_get(json_object_get(r1, "fast_p"),
			"best_of_n"), 0)), 6.0 / 11, 1e-10);
	/* per-task pass@k: t/A n = 3, c = 2, k = 1, 5, 10 → 2/3, null, null */
	{
		json_t *pk = json_object_get(json_array_get(json_object_get(r0, "tasks"), 0), "pass_at_k");
		assert_near(json_real_value(json_array_get(pk, 0)), 2.0 / 3, 1e-10);
		assert_true(json_is_null(json_array_get(pk, 1)));
	}
	json_decref(root);
	remove(out);
}

static char *slurp(const char *file)
{
	FILE *f = fopen(file, "r");
	char *s = calloc(1, 1 << 20);
	assert_non_null(f);
	assert_true(fread(s, 1, (1 << 20) - 1, f) > 0);
	fclose(f);
	return s;
}

/* report FILES... --format FMT into a string. */
static char *run_report(const char *fmt, const char *a, const char *b)
{
	char out[] = "/tmp/crucible-report-names-XXXXXX", pa[4096], pb[4096], fo[64];
	char *argv[] = { "report", pa, pb, fo, "--out", out, NULL };
	char *text;
	close(mkstemp(out));
	snprintf(pa, sizeof pa, "%s", path(a));
	snprintf(pb, sizeof pb, "%s", path(b));
	snprintf(fo, sizeof fo, "--format=%s", fmt);
	assert_int_equal(report_main(6, argv), 0);
	text = slurp(out);
	remove(out);
	return text;
}

/* Issue 11 item 8: runs are named by label or by what differs, never "run k". */
static void test_run_names(void **state)
{
	char *t;
	(void)state;
	/* run.json: seed and quick differ */
	t = run_report("md", "gate_abl_seed1/results.csv", "gate_abl_seed2/results.csv");
	assert_non_null(strstr(t, "| seed=1 no-quick |"));
	assert_non_null(strstr(t, "| seed=2 quick |"));
	assert_null(strstr(t, "(run "));
	free(t);
	/* nothing differs: the directories name them */
	t = run_report("md", "gate_abl_seed1/results.csv", "gate_abl_copy/results.csv");
	assert_non_null(strstr(t, "gate_abl_seed1 |"));
	assert_non_null(strstr(t, "gate_abl_copy |"));
	assert_null(strstr(t, "(run "));
	free(t);
	/* a label column names its run; the other by its differing options */
	t = run_report("md", "gate_abl_labelled/results.csv", "gate_abl_seed1/results.csv");
	assert_non_null(strstr(t, "| fp16-try |"));
	assert_non_null(strstr(t, "| n=1-2 seed=1 no-quick timing backend=cpu version=0.1.0 |"));
	free(t);
	/* the same file twice: the path is all that tells them apart, and it
	 * does not: both keep the same name rather than a made-up number */
	t = run_report("md", "basic.csv", "basic.csv");
	assert_null(strstr(t, "(run "));
	free(t);
	/* every plot's legend names each run (pass@k's names the task set after
	 * the name); a plot with nothing to draw is a note, not empty axes */
	t = run_report("html", "gate_abl_seed1/results.csv", "gate_abl_seed2/results.csv");
	{
		const char *p = t;
		int svgs = 0;
		while ((p = strstr(p, "<svg"))) {
			const char *end = strstr(p, "</svg>");
			char *one = strndup(p, (size_t)(end - p));
			assert_true(strstr(one, ">seed=1 no-quick</text>") ||
				    strstr(one, ">seed=1 no-quick: all "));
			assert_true(strstr(one, ">seed=2 quick</text>") ||
				    strstr(one, ">seed=2 quick: all "));
			free(one);
			svgs++;
			p = end;
		}
		/* pass@k, Fast_p, the speedup histogram; no reasoning_tokens: the
		 * scatter is a note */
		assert_int_equal(svgs, 3);
		assert_non_null(strstr(t, "<b>Reasoning length vs speedup</b>: no reasoning-length data"));
	}
	free(t);
}

static int count(const char *s, const char *what)
{
	int n = 0;
	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

static char *section(const char *html, const char *title)
{
	const char *p = strstr(html, title), *end;
	assert_non_null(p);
	end = strstr(p, "</svg>");
	assert_non_null(end);
	return strndup(p, (size_t)(end - p));
}

/* Issue 11 item 9: pass@k to the largest n with a marker per point; axes
 * never clip the largest speedup. */
static void test_html_plots(void **state)
{
	char *t, *sec;
	(void)state;
	/* basic.csv: n = 3 per task; gate_base.csv: n = 1 or 2 */
	t = run_report("html", "basic.csv", "gate_base.csv");
	sec = section(t, "pass@k vs k");
	/* run 0 (circles): k = 1, 2, 3 and one in the legend */
	assert_int_equal(count(sec, "<circle"), 4);
	/* run 1 (squares): n = 1 or 2, so two fixed task sets (issue 32: one
	 * curve that left tasks out at k = 2 dipped): every task at k = 1 (one
	 * marker and its legend), the tasks with n = 2 at k = 1, 2 (two and
	 * the legend); the frame is the other <rect x= */
	assert_int_equal(count(sec, "<rect x=") - 1, 5);
	assert_non_null(strstr(sec, ": the 1 of 11 tasks with n = 2, k &lt;= 2</text>"));
	assert_non_null(strstr(sec, "n=1-2 turns=?: all 11 tasks, k &lt;= 1 (n &gt;= 1 where"));
	free(sec);
	free(t);
	/* speedups of 40x and 2000x: the Fast_p axis is not cut at 16, the
	 * histogram's not at 1024x */
	t = run_report("html", "gate_big_speedup.csv", "basic.csv");
	sec = section(t, "Fast_p vs p");
	assert_non_null(strstr(sec, ">2000</text>"));
	free(sec);
	sec = section(t, "Speedup distribution");
	assert_non_null(strstr(sec, ">2048×</text>"));
	free(sec);
	free(t);
}

/* Issue 11 item 9 (reader half): empty error columns are unknown, not 0. */
static void test_empty_errors_unknown(void **state)
{
	struct report_run run;
	(void)state;
	assert_int_equal(report_run_load(path("basic.csv"), &run, NULL), CR_OK);
	for (size_t i = 0; i < run.n_rows; i++)
		if (run.rows[i].status == RS_TIMEOUT || run.rows[i].status == RS_RUNTIME_ERROR) {
			assert_true(isnan(run.rows[i].max_abs_err));
			assert_true(isnan(run.rows[i].max_rel_err));
		}
	report_run_release(&run);
}

/* Issue 11 item 10: --opt=value and --opt value, numbers validated, natural order. */
static void test_report_options(void **state)
{
	char pb[4096];
	char *t;
	(void)state;
	snprintf(pb, sizeof pb, "%s", path("basic.csv"));
	{
		char *argv[] = { "report", pb, "--k=0", NULL };
		assert_int_equal(report_main(3, argv), 2);
	}
	{
		char *argv[] = { "report", pb, "--p", "1,-1", NULL };
		assert_int_equal(report_main(4, argv), 2);
	}
	{
		char *argv[] = { "report", pb, "--k", "1,2x", NULL };
		assert_int_equal(report_main(4, argv), 2);
	}
	{
		char *argv[] = { "report", pb, "--format", NULL };
		assert_int_equal(report_main(3, argv), 2);
	}
	t = run_report("md", "gate_base.csv", "gate_cur.csv");
	/* natural order would not matter here; the per-task table follows names */
	assert_true(strstr(t, "t/fast") < strstr(t, "t/missing"));
	free(t);
}

/* Issue 29: noisy timing figures. A temp dir with results.csv (hdr, rows) and,
 * when machine is not NULL, a run.json with that "machine" object. */
static void write_run(char *dir, const char *hdr, const char *rows, const char *machine)
{
	char f[4200];
	FILE *o;
	assert_non_null(mkdtemp(dir));
	snprintf(f, sizeof f, "%s/results.csv", dir);
	assert_non_null(o = fopen(f, "w"));
	fprintf(o, "%s\n%s", hdr, rows);
	fclose(o);
	if (machine) {
		snprintf(f, sizeof f, "%s/run.json", dir);
		assert_non_null(o = fopen(f, "w"));
		fprintf(o, "{\"label\": \"\", \"machine\": %s}\n", machine);
		fclose(o);
	}
}

static void rm_run(const char *dir)
{
	char f[4200];
	snprintf(f, sizeof f, "%s/results.csv", dir);
	remove(f);
	snprintf(f, sizeof f, "%s/run.json", dir);
	remove(f);
	rmdir(dir);
}

#define NOISY_HDR "run_id,task,candidate,sample,backend,device,status,backward,detail," \
	"max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,speedup_lo," \
	"speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,top_p,top_k," \
	"seed,turn,source_sha256"
/* N = 4: t/A a noisy 3.0 and a trusted 1.2 (50 us against 60 us); t/B only a
 * noisy 2.5; t/C a mismatch; t/D a trusted 0.8. Trusted: fast_0 = 3/4 (a
 * noisy row still counts there), fast_1 = 1/4 (t/A by a1), fast_2 = 0; the
 * geomean is over all four figures (noisy ones kept: a mean over many rows
 * moves little with one's noise, a changing subset moves it more). */
static const char noisy_rows[] =
	"r,t/A,a0,0,cpu,cpu,ok,none,\"timing noisy (9 of 9 samples preempted)\",0,0,10,9,11,30,"
	"3.0,2.5,3.5,9,,,m,,,,,0,aa,1\n"
	"r,t/A,a1,1,cpu,cpu,ok,none,,0,0,50,49,51,60,1.2,1.1,1.3,9,,,m,,,,,0,ab,0\n"
	"r,t/B,b0,0,cpu,cpu,ok,none,\"timing noisy (interval ±9%)\",0,0,10,9,11,25,2.5,2,3,9,,,"
	"m,,,,,0,ba,1\n"
	"r,t/C,c0,0,cpu,cpu,mismatch,none,,1,1,,,,,,,,,,,m,,,,,0,ca,\n"
	"r,t/D,d0,0,cpu,cpu,ok,none,,0,0,1250,1200,1300,1000,0.8,0.7,0.9,9,,,m,,,,,0,da,0\n";

static void check_noisy_summary(const struct report_summary *s)
{
	/* p grid 0, 0.5, 0.8, 1, 1.5, 2 */
	static const double best[] = { 0.75, 0.5, 0.25, 0.25, 0, 0 };
	for (int j = 0; j < 6; j++)
		assert_near(s->fast_best[j], best[j], 1e-15);
	assert_near(report_summary_fast_at(s, 0), 0.75, 1e-15);
	assert_near(report_summary_fast_at(s, 1), 0.25, 1e-15);
	assert_near(report_summary_fast_at(s, 2), 0, 1e-15);
	/* fast_1@1: only a1 of t/A's two candidates is trusted fast: (1/2) / 4 */
	assert_near(s->fastp_k[0 * 32 + 3], 0.5 / 4, 1e-15);
	assert_int_equal(s->n_correct, 4);
	assert_int_equal(s->gm_n, 4);
	assert_near(s->gm, pow(3.0 * 1.2 * 2.5 * 0.8, 0.25), 1e-12);
	assert_int_equal(s->n_timed, 4);
	assert_int_equal(s->n_noisy, 2);
	assert_int_equal(s->n_correct_noisy, 2);
	assert_near(s->tasks[0].best_speedup, 1.2, 1e-15);
	assert_near(s->tasks[0].best_time_us, 50, 1e-15);
	assert_near(s->tasks[0].best_base_us, 60, 1e-15);
	assert_int_equal(s->tasks[0].c_noisy, 1);
	assert_true(isnan(s->tasks[1].best_speedup));
	assert_true(isnan(s->tasks[1].median_speedup));
}

static void test_noisy_not_fast(void **state)
{
	char dir[] = "/tmp/crucible-report-noisy-XXXXXX", csv[4200], hdr[1024];
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	struct cr_err e;
	(void)state;
	report_opts_default(&o);
	cr_err_init(&e);
	/* with the noisy column */
	snprintf(hdr, sizeof hdr, "%s,noisy", NOISY_HDR);
	write_run(dir, hdr, noisy_rows, NULL);
	snprintf(csv, sizeof csv, "%s/results.csv", dir);
	assert_int_equal(report_run_load(csv, &run, &e), CR_OK);
	assert_int_equal(report_summary_compute(&run, &o, &s, &e), CR_OK);
	check_noisy_summary(&s);
	report_summary_release(&s);
	report_run_release(&run);
	rm_run(dir);
}

/* An older results.csv without the noisy column: the detail prefix says it. */
static void test_noisy_old_csv(void **state)
{
	char dir[] = "/tmp/crucible-report-noisy-XXXXXX", csv[4200], rows[sizeof noisy_rows];
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	struct cr_err e;
	(void)state;
	report_opts_default(&o);
	cr_err_init(&e);
	/* the same rows without their last field (the flag) */
	{
		const char *p = noisy_rows;
		char *q = rows;
		while (*p) {
			const char *nl = strchr(p, '\n'), *comma = nl;
			while (comma > p && comma[-1] != ',')
				comma--;
			memcpy(q, p, (size_t)(comma - 1 - p));
			q += comma - 1 - p;
			*q++ = '\n';
			p = nl + 1;
		}
		*q = '\0';
	}
	write_run(dir, NOISY_HDR, rows, NULL);
	snprintf(csv, sizeof csv, "%s/results.csv", dir);
	assert_int_equal(report_run_load(csv, &run, &e), CR_OK);
	assert_int_equal(report_summary_compute(&run, &o, &s, &e), CR_OK);
	check_noisy_summary(&s);
	report_summary_release(&s);
	report_run_release(&run);
	rm_run(dir);
	/* basic.csv (no noisy column, no prefix): every timed row is trusted */
	assert_int_equal(report_run_load(path("basic.csv"), &run, &e), CR_OK);
	assert_int_equal(report_summary_compute(&run, &o, &s, &e), CR_OK);
	assert_int_equal(s.n_timed, 5);
	assert_int_equal(s.n_noisy, 0);
	assert_int_equal(s.gm_n, 4);
	report_summary_release(&s);
	report_run_release(&run);
}

/* The noisy count, the lower-bound note, the machine verdict (once) and the
 * interval's label in every format and in eval's summary. */
static void test_noisy_outputs(void **state)
{
	char dir[] = "/tmp/crucible-report-noisy-XXXXXX", hdr[1024], csv[4200];
	char out[] = "/tmp/crucible-report-noisyout-XXXXXX";
	char *argv[] = { "report", dir, "--format", NULL, "--out", out, NULL };
	char fmt[8];
	char *t;
	json_error_t err;
	json_t *root, *r;
	(void)state;
	close(mkstemp(out));
	snprintf(hdr, sizeof hdr, "%s,noisy", NOISY_HDR);
	write_run(dir, hdr, noisy_rows, "{\"verdict\": \"busy\", \"why\": \"load 5.2 on 2 cores; "
		  "1 other crucible run\"}");
	argv[3] = fmt;
	snprintf(fmt, sizeof fmt, "md");
	assert_int_equal(report_main(6, argv), 0);
	t = slurp(out);
	assert_non_null(strstr(t, "Timing: 4 timed row(s), 2 noisy (figures not trusted, kept "
				  "out of Fast_p)"));
	assert_non_null(strstr(t, "Fast_p for p > 0 is a lower bound"));
	assert_non_null(strstr(t, "over 4 correct timed candidates, 2 of them with a noisy figure"));
	assert_int_equal(count(t, "Machine while timing: **busy** — load 5.2 on 2 cores; 1 other "
			       "crucible run."), 1);
	/* the times beside the best speedup */
	assert_non_null(strstr(t, "| t/A | 2 | 2 | 1.0000 | n < k | n < k | 1.200 | 50 µs | 60 µs |"));
	assert_non_null(strstr(t, "| t/D | 1 | 1 | 1.0000 | n < k | n < k | 0.800 | 1.25 ms | 1 ms |"));
	assert_non_null(strstr(t, "| best-of-n | 0.7500 | 0.5000 | 0.2500 | 0.2500 | 0.0000 | 0.0000 |"));
	free(t);
	snprintf(fmt, sizeof fmt, "json");
	assert_int_equal(report_main(6, argv), 0);
	root = json_load_file(out, 0, &err);
	assert_non_null(root);
	r = json_array_get(json_object_get(root, "runs"), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "timing"),
							    "noisy_rows")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "timing"),
							    "timed_rows")), 4);
	assert_true(json_is_true(json_object_get(json_object_get(r, "timing"),
						 "fast_p_lower_bound")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "geomean_speedup"),
							    "n")), 4);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "machine"),
							      "verdict")), "busy");
	json_decref(root);
	snprintf(fmt, sizeof fmt, "csv");
	assert_int_equal(report_main(6, argv), 0);
	t = slurp(out);
	assert_non_null(strstr(t, ",timing,all,noisy_rows,2\n"));
	assert_non_null(strstr(t, ",machine,all,verdict,busy\n"));
	free(t);
	snprintf(fmt, sizeof fmt, "html");
	assert_int_equal(report_main(6, argv), 0);
	t = slurp(out);
	assert_non_null(strstr(t, "4 timed row(s), 2 noisy"));
	free(t);
	/* eval's summary */
	{
		FILE *f = fopen(out, "w");
		assert_non_null(f);
		snprintf(csv, sizeof csv, "%s/results.csv", dir);
		assert_int_equal(report_print_summary(csv, f), 0);
		fclose(f);
		t = slurp(out);
		assert_non_null(strstr(t, "4 timed row(s), 2 noisy"));
		assert_non_null(strstr(t, "lower bound"));
		assert_non_null(strstr(t, "over 4 correct timed candidates (2 with a noisy figure, kept in)"));
		assert_non_null(strstr(t, "Machine while timing: **busy**"));
		free(t);
	}
	rm_run(dir);
	remove(out);
	/* no machine in run.json (older files): nothing said about it */
	t = run_report("md", "basic.csv", "gate_abl_seed1/results.csv");
	assert_null(strstr(t, "achine"));
	assert_non_null(strstr(t, "| timed rows (noisy) | 5 (0) |"));
	free(t);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_fast_p),
		cmocka_unit_test(test_basic_pass_at_k),
		cmocka_unit_test(test_basic_reasoning),
		cmocka_unit_test(test_task_list_and_strict),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_json_parses),
		cmocka_unit_test(test_csv_md_html),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_ablation_union),
		cmocka_unit_test(test_run_names),
		cmocka_unit_test(test_html_plots),
		cmocka_unit_test(test_empty_errors_unknown),
		cmocka_unit_test(test_report_options),
		cmocka_unit_test(test_noisy_not_fast),
		cmocka_unit_test(test_noisy_old_csv),
		cmocka_unit_test(test_noisy_outputs),
	};
	if (argc > 1)
		data_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
