/* test_report_units.c — pass@k's independent draws (issue 31): per
 * trajectory for refine, per search (and the draft) for evolve, per
 * candidate otherwise; the tables by turn and generation; runs named from
 * their strategy and options; --resume's counts; the no_code status counted.
 * Every figure is worked out by hand from the fixtures:
 *
 *   units_refine (refine, 3 trajectories × 3 turns; speedups after "ok"):
 *     t/A  r0: mismatch, ok 1.5, ok 2.5   r1: compile_error, mismatch, mismatch
 *          r2: ok 0.8, ok 1.2, ok 0.9
 *     t/B  r0: mismatch, mismatch, ok 1.1 r1: mismatch ×3
 *          r2: runtime_error, timeout, mismatch
 *   Per candidate (the old, wrong figure): A n=9 c=5, B n=9 c=1:
 *     pass@1 = (5/9 + 1/9)/2 = 1/3; pass@2 = (1 − C(4,2)/C(9,2) + 1 − C(8,2)/C(9,2))/2
 *     = (5/6 + 2/9)/2 = 19/36; pass@3 = (1 − 4/84 + 1 − 56/84)/2 = 0.642857.
 *   Per trajectory: A n=3 c=2 (r0, r2), B n=3 c=1 (r0):
 *     pass@1 = (2/3 + 1/3)/2 = 1/2; pass@2 = (1 + 1 − C(2,2)/C(3,2))/2 = 5/6;
 *     pass@3 = 1. fast_1: A r0 (1.5), r2 (1.2), B r0 (1.1) → fast_1@1 = 1/2;
 *     fast_2: A r0 (2.5) → fast_2@1 = 1/6.
 *   By turn, pass@1: turn 0 (A r2) 1/6, turn 1 (A r0, r2) 1/3, turn 2 1/2;
 *     pass@2 at turn 0: (1 − C(2,2)/C(3,2) + 0)/2 = 1/3; fast_1@1: 0, 1/3, 1/2.
 *
 *   units_evolve (evolve, N = 2, 2 generations after the draft, keep 1):
 *     t/A  g0: mismatch, ok 1.2   g1: ok 1.5, mismatch   g2: ok 2.1, compile_error
 *     t/B  g0: compile_error, mismatch   g1: mismatch ×2   g2: ok 0.9, mismatch
 *   Per search: pass@1 = 1 (both solved), pass@2 undefined (n = 1);
 *     fast_1@1 = 1/2 (A). By generation pass@1: 1/2, 1/2, 1; fast_2@1: 0, 0, 1/2.
 *   Draft (generation 0): A n=2 c=1, B n=2 c=0: pass@1 = 1/4, pass@2 = 1/2.
 *   Per candidate: A 3 of 6, B 1 of 6: pass@1 = 1/3. */
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

#include "reports/report_impl.h"

static const char *data_dir = "tests/reports/data";

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

static void load(const char *name, const int *k, size_t nk, struct report_run *run,
		 struct report_summary *s)
{
	char p[4096];
	struct report_opts o;
	struct cr_err e;

	cr_err_init(&e);
	snprintf(p, sizeof p, "%s/%s/results.csv", data_dir, name);
	assert_int_equal(report_run_load(p, run, &e), CR_OK);
	report_opts_default(&o);
	if (k) {
		memcpy(o.k, k, nk * sizeof *k);
		o.nk = nk;
	}
	assert_int_equal(report_summary_compute(run, &o, s, &e), CR_OK);
}

static char *md_of(const struct report_summary *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	report_print_md(f, s, 1);
	fclose(f);
	return buf;
}

static const int k123[] = { 1, 2, 3 };

static void test_refine_per_trajectory(void **state)
{
	struct report_run run;
	struct report_summary s;
	const struct report_task *A, *B;
	(void)state;

	load("units_refine", k123, 3, &run, &s);
	assert_int_equal(s.unit, RU_TRAJECTORY);
	A = &s.tasks[0];
	B = &s.tasks[1];
	assert_string_equal(A->name, "t/A");
	assert_int_equal(A->n, 9);
	assert_int_equal(A->c, 5);
	assert_int_equal(A->nu, 3);
	assert_int_equal(A->cu, 2);
	assert_int_equal(B->nu, 3);
	assert_int_equal(B->cu, 1);
	assert_int_equal(s.n_units, 6);
	/* per trajectory: the headline */
	NEAR(s.pass_k[0], 0.5);
	NEAR(s.pass_k[1], 5.0 / 6);
	NEAR(s.pass_k[2], 1.0);
	/* per candidate, as if the turns were independent: differs */
	NEAR(s.pass_k_cand[0], 1.0 / 3);
	NEAR(s.pass_k_cand[1], 19.0 / 36);
	NEAR(s.pass_k_cand[2], (1 - 4.0 / 84 + 1 - 56.0 / 84) / 2);
	/* fast_p@k over trajectories: p grid 0, 0.5, 0.8, 1, 1.5, 2 */
	NEAR(s.fastp_k[0 * 32 + 3], 0.5);
	NEAR(s.fastp_k[0 * 32 + 5], 1.0 / 6);
	/* by turn, each trajectory at its best so far */
	assert_int_equal(s.n_steps, 3);
	assert_int_equal(s.step_ids[2], 2);
	assert_int_equal(s.step_cands[0], 6);
	assert_int_equal(s.step_correct[0], 1);
	assert_int_equal(s.step_correct[1], 2);
	assert_int_equal(s.step_correct[2], 3);
	NEAR(s.step_pass[0 * 3 + 0], 1.0 / 6);
	NEAR(s.step_pass[1 * 3 + 0], 1.0 / 3);
	NEAR(s.step_pass[2 * 3 + 0], 0.5);
	NEAR(s.step_pass[0 * 3 + 1], 1.0 / 3);
	NEAR(s.step_fast[(0 * 3 + 0) * s.opts.np + 3], 0);
	NEAR(s.step_fast[(1 * 3 + 0) * s.opts.np + 3], 1.0 / 3);
	NEAR(s.step_fast[(2 * 3 + 0) * s.opts.np + 3], 0.5);
	/* the last turn is the headline */
	NEAR(s.step_pass[2 * 3 + 1], s.pass_k[1]);
	/* plots use the units too */
	NEAR(report_summary_pass_at(&s, 2), 5.0 / 6);
	report_summary_release(&s);
	report_run_release(&run);
}

static void test_refine_names_and_resume(void **state)
{
	struct report_run run;
	struct report_summary s;
	char *t;
	(void)state;

	/* run.json: options n = 3, turns = 3, resume 4 reused, 14 generated */
	load("units_refine", k123, 3, &run, &s);
	assert_string_equal(s.run_name, "refine, 3 trajectories × 3 turns");
	assert_non_null(strstr(s.label, "refine, 3 trajectories × 3 turns"));
	assert_null(strstr(s.label, "n=9"));
	assert_int_equal(s.meta.reused, 4);
	assert_int_equal(s.meta.generated, 14);
	t = md_of(&s);
	assert_non_null(strstr(t, "Resumed (`--resume`): 4 candidate completion(s) reused from disk, 14 generated anew."));
	assert_non_null(strstr(t, "### By turn (best so far)"));
	assert_non_null(strstr(t, "| 2 | 6 | 3 | 0.5000 | 0.8333 | 1.0000 |"));
	assert_non_null(strstr(t, "| 1 | 0.5000 |"));
	assert_non_null(strstr(t, "pass@1 = 0.3333, pass@2 = 0.5278"));
	assert_non_null(strstr(t, "| t/A | 9 | 5 | 3 | 2 | 0.6667 | 1.0000 | 1.0000 |"));
	assert_non_null(strstr(t, "| trajectory 1 (best of its turns) |"));
	assert_null(strstr(t, "| best-of-n |"));
	free(t);
	report_summary_release(&s);
	report_run_release(&run);

	/* the same rows without run.json: named from the rows, no resume line */
	load("units_refine_bare", k123, 3, &run, &s);
	assert_string_equal(s.run_name, "refine, 3 trajectories × 3 turns");
	assert_int_equal(s.meta.reused, -1);
	NEAR(s.pass_k[0], 0.5);
	t = md_of(&s);
	assert_null(strstr(t, "Resumed"));
	free(t);
	report_summary_release(&s);
	report_run_release(&run);
}

static void test_evolve_per_generation(void **state)
{
	struct report_run run;
	struct report_summary s;
	char *t;
	(void)state;

	load("units_evolve", k123, 3, &run, &s);
	assert_int_equal(s.unit, RU_SEARCH);
	assert_int_equal(s.tasks[0].nu, 1);
	assert_int_equal(s.tasks[0].cu, 1);
	assert_int_equal(s.tasks[1].cu, 1);
	NEAR(s.pass_k[0], 1.0);
	assert_true(isnan(s.pass_k[1]));   /* one search a task: n = 1 < k */
	assert_int_equal(s.k_short[1], 2);
	NEAR(s.fastp_k[0 * 32 + 3], 0.5);
	NEAR(s.pass_k_cand[0], 1.0 / 3);
	assert_int_equal(s.n_steps, 3);
	NEAR(s.step_pass[0 * 3 + 0], 0.5);
	NEAR(s.step_pass[1 * 3 + 0], 0.5);
	NEAR(s.step_pass[2 * 3 + 0], 1.0);
	NEAR(s.step_fast[(1 * 3 + 0) * s.opts.np + 5], 0);
	NEAR(s.step_fast[(2 * 3 + 0) * s.opts.np + 5], 0.5);
	/* the draft: independent samples of one prompt */
	assert_int_equal(s.draft_n, 4);
	assert_int_equal(s.draft_c, 1);
	NEAR(s.draft_pass[0], 0.25);
	NEAR(s.draft_pass[1], 0.5);
	assert_true(isnan(s.draft_pass[2]));
	assert_string_equal(s.run_name, "evolve, 3 generations × 2 (the draft and 2), keep 1, "
			    "budget 5000 tokens a task");
	t = md_of(&s);
	assert_non_null(strstr(t, "### By generation (best so far)"));
	assert_non_null(strstr(t, "| 2 | 4 | 2 | 1.0000 | n/a | n/a |"));
	assert_non_null(strstr(t, "its pass@k over those candidates (4, 1 correct): pass@1 = "
				  "0.2500, pass@2 = 0.5000"));
	free(t);
	report_summary_release(&s);
	report_run_release(&run);
}

static void test_best_of_n_per_candidate(void **state)
{
	struct report_run run;
	struct report_summary s;
	char p[4096];
	struct report_opts o;
	struct cr_err e;
	(void)state;

	cr_err_init(&e);
	report_opts_default(&o);
	snprintf(p, sizeof p, "%s/run_bon/results.csv", data_dir);
	assert_int_equal(report_run_load(p, &run, &e), CR_OK);
	assert_int_equal(report_summary_compute(&run, &o, &s, &e), CR_OK);
	assert_int_equal(s.unit, RU_CANDIDATE);
	assert_int_equal(s.n_steps, 0);
	assert_string_equal(s.run_name, "best-of-n, n=3");
	for (size_t ki = 0; ki < o.nk; ki++)
		assert_true(isnan(s.pass_k[ki]) ? isnan(s.pass_k_cand[ki]) :
			    s.pass_k[ki] == s.pass_k_cand[ki]);
	for (size_t t = 0; t < s.n_tasks; t++) {
		assert_int_equal(s.tasks[t].nu, s.tasks[t].n);
		assert_int_equal(s.tasks[t].cu, s.tasks[t].c);
	}
	report_summary_release(&s);
	report_run_release(&run);
}

/* Names of several runs: the strategy's own name, never n = all candidates. */
static void test_ablation_names(void **state)
{
	struct report_run run[2];
	struct report_summary s[2];
	struct cr_err e;
	(void)state;

	cr_err_init(&e);
	load("units_refine", NULL, 0, &run[0], &s[0]);
	load("units_evolve", NULL, 0, &run[1], &s[1]);
	assert_int_equal(report_name_runs(s, run, 2, &e), CR_OK);
	assert_non_null(strstr(s[0].label, "refine, 3 trajectories × 3 turns"));
	assert_null(strstr(s[0].label, "n="));
	assert_null(strstr(s[0].label, "turns="));
	assert_non_null(strstr(s[1].label, "evolve, 3 generations × 2"));
	for (int i = 0; i < 2; i++) {
		report_summary_release(&s[i]);
		report_run_release(&run[i]);
	}
}

/* issue 31: a completion without a code block is status no_code: its own row
 * in the status table, not correct, never a refused file. */
static void test_no_code_counted(void **state)
{
	struct report_run run;
	struct report_summary s;
	int nc = check_verdict_parse("no_code");
	char *t, *buf = NULL;
	size_t len = 0;
	FILE *f;
	json_t *root;
	(void)state;

	assert_true(nc >= 0); /* common/cr_verdict.c's vocabulary has it */
	load("units_nocode", NULL, 0, &run, &s);
	assert_int_equal(s.status_counts[nc], 3);
	assert_int_equal(s.n_correct, 1);
	assert_int_equal(s.tasks[0].n, 3);
	assert_int_equal(s.tasks[0].c, 1);
	assert_int_equal(s.tasks[1].c, 0);
	NEAR(s.pass_k[0], (1.0 / 3 + 0) / 2);
	assert_string_equal(s.run_name, "best-of-n, n=3");
	t = md_of(&s);
	assert_non_null(strstr(t, "| no_code | 3 | 0.5000 |"));
	free(t);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(report_print_json(f, &s, 1), 0);
	fclose(f);
	root = json_loads(buf, 0, NULL);
	assert_non_null(root);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		json_array_get(json_object_get(root, "runs"), 0), "status_counts"), "no_code")), 3);
	json_decref(root);
	free(buf);
	report_summary_release(&s);
	report_run_release(&run);
}

/* json and csv carry the units and the by-step table. */
static void test_json_csv(void **state)
{
	struct report_run run;
	struct report_summary s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	json_t *root, *u, *rows;
	(void)state;

	load("units_refine", k123, 3, &run, &s);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(report_print_json(f, &s, 1), 0);
	fclose(f);
	root = json_loads(buf, 0, NULL);
	assert_non_null(root);
	u = json_object_get(json_array_get(json_object_get(root, "runs"), 0), "pass_at_k_units");
	assert_string_equal(json_string_value(json_object_get(u, "unit")), "trajectory");
	assert_int_equal(json_integer_value(json_object_get(u, "units")), 6);
	rows = json_object_get(json_object_get(u, "by_step"), "rows");
	assert_int_equal(json_array_size(rows), 3);
	NEAR(json_real_value(json_array_get(json_object_get(json_array_get(rows, 1), "pass"), 0)),
	     1.0 / 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(u, "resume"),
							    "reused")), 4);
	json_decref(root);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	report_print_csv(f, &s, 1);
	fclose(f);
	assert_non_null(strstr(buf, ",pass_at_k_by_step,turn 0,pass@1,0.1666666667\n"));
	assert_non_null(strstr(buf, ",pass_at_k_per_candidate,k=1,pass,0.3333333333\n"));
	assert_non_null(strstr(buf, ",pass_at_k,k=1,pass,0.5\n"));
	free(buf);
	report_summary_release(&s);
	report_run_release(&run);
}

/* A refine file of 1000 turns and one absurd turn number: the by-turn table
 * keeps 256 of them (the last always), each trajectory at its best so far
 * from the first kept turn at or after its correct one. */
static void test_many_turns(void **state)
{
	char dir[] = "/tmp/crucible-units-XXXXXX", p[64];
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	struct cr_err e;
	FILE *f;
	(void)state;

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof p, "%s/results.csv", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "run_id,task,candidate,sample,backend,device,status,backward,detail,"
		"max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,"
		"speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,"
		"temperature,top_p,top_k,seed,turn,source_sha256,strategy\n");
	for (int t = 0; t < 1000; t++)
		fprintf(f, "u,t/A,c%d.c,0,cpu,cpu,%s,,,,,,,,,,,,,,,m,,,,,%d,,refine\n", t,
			t == 500 ? "ok" : "mismatch", t);
	fprintf(f, "u,t/A,cz.c,1,cpu,cpu,mismatch,,,,,,,,,,,,,,,m,,,,,9000000000000000000,,"
		"refine\n");
	fclose(f);
	cr_err_init(&e);
	assert_int_equal(report_run_load(p, &run, &e), CR_OK);
	report_opts_default(&o);
	assert_int_equal(report_summary_compute(&run, &o, &s, &e), CR_OK);
	assert_int_equal(s.unit, RU_TRAJECTORY);
	assert_int_equal(s.n_steps, 256);
	assert_true(s.step_ids[255] == 9000000000000000000L);
	assert_int_equal(s.tasks[0].nu, 2);
	assert_int_equal(s.tasks[0].cu, 1);
	NEAR(s.pass_k[0], 0.5);
	/* turn 500 is correct: 0 before the first kept turn >= 500, 1 from it */
	for (int g = 0; g < 256; g++)
		assert_int_equal(s.step_correct[g], s.step_ids[g] >= 500);
	assert_string_equal(s.run_name, "refine, 2 trajectories × 2147483648 turns");
	report_summary_release(&s);
	report_run_release(&run);
	unlink(p);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refine_per_trajectory),
		cmocka_unit_test(test_refine_names_and_resume),
		cmocka_unit_test(test_evolve_per_generation),
		cmocka_unit_test(test_best_of_n_per_candidate),
		cmocka_unit_test(test_ablation_names),
		cmocka_unit_test(test_no_code_counted),
		cmocka_unit_test(test_json_csv),
		cmocka_unit_test(test_many_turns),
	};

	if (argc > 1)
		data_dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
