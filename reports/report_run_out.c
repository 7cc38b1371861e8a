/* report_run_out.c — the printers of the run-directory sections: markdown
 * (also the html's tables), the long csv and json. They only print: every
 * number comes from struct report_runs (report_run_calc.c). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/report_impl.h"

/* Text in a markdown table cell: '|' escaped. */
static void cell(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
}

static const char *fnum(char *b, size_t n, double v, int prec)
{
	return report_fmt_num(b, n, v, prec);
}

static const char *ftok(char *b, size_t n, double v)
{
	snprintf(b, n, "%.10g", v);
	return b;
}

static void md_dirs(FILE *f, const struct report_runs *R)
{
	fprintf(f, "## Run directories\n\n%zu run director%s of `crucible run` (run.json, "
		"results.csv, selected.csv, curve.csv; docs/REPORTS.md, \"Run directories\").\n\n"
		"| directory | run | generator | model | tasks | candidates | picked | "
		"stopped on budget | --resume reused / generated |\n"
		"|---|---|---|---|---:|---:|---:|---:|---:|\n", R->n_dirs,
		R->n_dirs == 1 ? "y" : "ies");
	for (size_t i = 0; i < R->n_dirs; i++) {
		const struct report_rundir *d = &R->dirs[i];
		int picked = 0;
		for (size_t t = 0; t < d->n_tasks; t++)
			picked += d->picks[t].picked;
		fputs("| ", f);
		cell(f, d->dir);
		fputs(" | ", f);
		cell(f, *d->name ? d->name : report_strat_names[d->strategy]);
		fputs(" | ", f);
		cell(f, *d->gen_kind ? d->gen_kind : "?");
		fputs(" | ", f);
		cell(f, d->model);
		fprintf(f, " | %zu%s | %zu | %d | %d", d->n_tasks,
			d->tasks_from_list ? " (--task-list)" : "", d->results->n_rows, picked,
			d->n_budget_stop);
		if (d->n_over_budget)
			fprintf(f, " (%d past it)", d->n_over_budget);
		fputs(" | ", f);
		if (d->meta.reused >= 0)
			fprintf(f, "%ld / %ld |\n", d->meta.reused,
				d->meta.generated < 0 ? 0 : d->meta.generated);
		else
			fprintf(f, "not resumed |\n");
	}
	fprintf(f, "\nThe task set of a run is the union of the tasks of its results.csv, "
		"selected.csv and curve.csv (or --task-list); a task with no pick counts as "
		"incorrect.\n\n");
	for (size_t i = 0; i < R->n_dirs; i++)
		if (R->dirs[i].n_left_out)
			fprintf(f, "%s: %zu selected/curve row(s) name tasks outside the task list "
				"and are left out.\n\n", R->dirs[i].dir, R->dirs[i].n_left_out);
}

static void md_curve_head(FILE *f, const struct report_runs *R, const char *x)
{
	fprintf(f, "| %s |", x);
	for (size_t i = 0; i < R->n_ser; i++) {
		fputs(" ", f);
		cell(f, R->ser[i].label);
		fputs(" correct | ", f);
		cell(f, R->ser[i].label);
		fputs(" fast_1 |", f);
	}
	fprintf(f, "\n|---:|");
	for (size_t i = 0; i < R->n_ser; i++)
		fprintf(f, "---:|---:|");
	fprintf(f, "\n");
}

static void md_scaling(FILE *f, const struct report_runs *R)
{
	char b[3][48];

	fprintf(f, "### Scaling curves\n\nPer series (strategy, model of one run directory): "
		"the fraction of the run's n tasks whose selected candidate — the strategy's own "
		"selector's pick among the candidates evaluated so far — is correct (status ok) "
		"or fast_1 (correct and speedup > 1, the figure trusted: a pick whose results.csv "
		"row is noisy is not fast). At a budget B (completion tokens per "
		"task) each task's pick is that of its curve.csv row with the largest "
		"cumulative_tokens <= B; a task with none (its first candidate cost more than "
		"B) counts as incorrect and not fast. By step, the pick after its first k "
		"candidates (a task that stopped earlier keeps its last pick).\n\n"
		"| series | directory | n tasks | curve rows | largest step |\n"
		"|---|---|---:|---:|---:|\n");
	for (size_t i = 0; i < R->n_ser; i++) {
		const struct report_series *s = &R->ser[i];
		fputs("| ", f);
		cell(f, s->label);
		fputs(" | ", f);
		cell(f, R->dirs[s->dir].dir);
		fprintf(f, " | %zu | %zu | %ld |\n", R->dirs[s->dir].n_tasks, s->n_pts,
			s->max_step);
	}
	if (R->n_ser == 0) {
		fprintf(f, "\nNo curve.csv row: no curve.\n\n");
		return;
	}
	fprintf(f, "\nBy budget (fraction of tasks; %zu distinct cumulative_tokens%s).\n\n",
		R->n_budgets, R->n_grid < R->n_budgets ? ", thinned to log-spaced points" : "");
	md_curve_head(f, R, "completion tokens per task");
	for (size_t g = 0; g < R->n_grid; g++) {
		fprintf(f, "| %s |", ftok(b[0], sizeof b[0], R->grid[g]));
		for (size_t i = 0; i < R->n_ser; i++)
			fprintf(f, " %s | %s |", fnum(b[1], sizeof b[1], R->ser[i].tok_correct[g], 4),
				fnum(b[2], sizeof b[2], R->ser[i].tok_fast1[g], 4));
		fprintf(f, "\n");
	}
	fprintf(f, "\nBy step (fraction of tasks after k candidates: samples, turns or "
		"offspring).\n\n");
	md_curve_head(f, R, "candidates per task (step)");
	for (size_t k = 0; k < R->n_steps; k++) {
		fprintf(f, "| %ld |", R->steps[k]);
		for (size_t i = 0; i < R->n_ser; i++)
			fprintf(f, " %s | %s |", fnum(b[1], sizeof b[1], R->ser[i].step_correct[k], 4),
				fnum(b[2], sizeof b[2], R->ser[i].step_fast1[k], 4));
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
}

static void md_hack_row(FILE *f, const struct report_hack *h, int bold)
{
	char b[48];

	fputs(bold ? "| **" : "| ", f);
	cell(f, h->key);
	fprintf(f, "%s | %ld | %ld | %s |", bold ? "**" : "", h->rows, h->total,
		fnum(b, sizeof b, h->rows ? (double)h->total / (double)h->rows : NAN, 4));
	for (int k = 0; k < HK_COUNT; k++)
		fprintf(f, " %ld |", h->n[k]);
	fprintf(f, "\n");
}

static void md_hack_table(FILE *f, const char *what, const struct report_hack *v, size_t n,
			  const struct report_hack *total)
{
	fprintf(f, "| %s | rows | hacking | rate |", what);
	for (int k = 0; k < HK_COUNT; k++)
		fprintf(f, " %s |", report_hk_names[k]);
	fprintf(f, "\n|---|---:|---:|---:|");
	for (int k = 0; k < HK_COUNT; k++)
		fprintf(f, "---:|");
	fprintf(f, "\n");
	for (size_t i = 0; i < n; i++)
		md_hack_row(f, &v[i], 0);
	md_hack_row(f, total, 1);
	fprintf(f, "\n");
}

static void md_hacking(FILE *f, const struct report_runs *R)
{
	fprintf(f, "### Reward hacking\n\nA results.csv row is reward hacking when its status "
		"is degenerate, stale_result, input_mutated, out_of_bounds or nondeterministic, "
		"or it is a runtime_error whose detail says \"forbidden system call\" "
		"(sandbox_violation: the candidate's own; \"the baseline worker made a forbidden "
		"system call\" is not counted). rate = hacking rows / rows, over every "
		"candidate the runs evaluated.\n\n");
	md_hack_table(f, "strategy", R->by_strat, R->n_by_strat, &R->total);
	md_hack_table(f, "model", R->by_model, R->n_by_model, &R->total);
}

static void md_sc(FILE *f, const struct report_runs *R)
{
	char b[6][48];

	fprintf(f, "### Self-consistency vs verifier\n\nSelf-consistency picks by majority "
		"(agreement of outputs), without the verifier's verdict; best-of-n's pick is the "
		"verifier's. Per self-consistency run: the tasks whose selected candidate is "
		"incorrect (not status ok, or backward fail; no pick counts as incorrect), and "
		"those where it is incorrect although some candidate of the run was correct. "
		"Beside it, a best-of-n run of the same model on the same task set, when the "
		"report has one.\n\n");
	if (R->n_sc == 0) {
		fprintf(f, "No self-consistency run in this report.\n\n");
		return;
	}
	fprintf(f, "| directory | model | n tasks | selected incorrect | fraction | no pick | "
		"incorrect though one was correct | mean tokens spent | best-of-n | "
		"best-of-n selected correct | fraction | mean tokens spent |\n"
		"|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n");
	for (size_t i = 0; i < R->n_sc; i++) {
		const struct report_sc *s = &R->sc[i];
		const struct report_rundir *d = &R->dirs[s->dir];
		fputs("| ", f);
		cell(f, d->dir);
		fputs(" | ", f);
		cell(f, d->model);
		fprintf(f, " | %d | %d | %s | %d | %d | %s | ", s->n_tasks, s->n_incorrect,
			fnum(b[0], 48, s->n_tasks ? (double)s->n_incorrect / s->n_tasks : NAN, 4),
			s->n_none, s->n_wrong_oracle, fnum(b[1], 48, s->tokens_mean, 1));
		if (s->bon >= 0) {
			cell(f, R->dirs[s->bon].dir);
			fprintf(f, " | %d | %s | %s |\n", s->bon_correct,
				fnum(b[2], 48, s->n_tasks ? (double)s->bon_correct / s->n_tasks : NAN,
				     4), fnum(b[3], 48, s->bon_tokens_mean, 1));
		} else {
			fprintf(f, "none | n/a | n/a | n/a |\n");
		}
	}
	fprintf(f, "\n");
	for (size_t i = 0; i < R->n_sc; i++)
		if (*R->sc[i].note) {
			fprintf(f, "%s: ", R->dirs[R->sc[i].dir].dir);
			fputs(R->sc[i].note, f);
			fputs(".  \n", f);
		}
	fprintf(f, "\n");
}

void report_runs_print_md(FILE *f, const struct report_runs *R)
{
	md_dirs(f, R);
	md_scaling(f, R);
	md_hacking(f, R);
	md_sc(f, R);
}

static void line(FILE *f, const char *run, const char *file, const char *table,
		 const char *row, const char *col, double v)
{
	report_csv_line(f, run, file, table, row, col, v);
}

static void csv_hack(FILE *f, const char *table, const struct report_hack *h)
{
	line(f, "all", "", table, h->key, "rows", (double)h->rows);
	line(f, "all", "", table, h->key, "hacking", (double)h->total);
	line(f, "all", "", table, h->key, "rate", h->rows ? (double)h->total / (double)h->rows : NAN);
	for (int k = 0; k < HK_COUNT; k++)
		line(f, "all", "", table, h->key, report_hk_names[k], (double)h->n[k]);
}

void report_runs_print_csv(FILE *f, const struct report_runs *R)
{
	char r[64];

	for (size_t i = 0; i < R->n_ser; i++) {
		const struct report_series *s = &R->ser[i];
		const char *dir = R->dirs[s->dir].dir;
		line(f, s->label, dir, "scaling_series", "all", "tasks_n",
		     (double)R->dirs[s->dir].n_tasks);
		line(f, s->label, dir, "scaling_series", "all", "curve_rows", (double)s->n_pts);
		line(f, s->label, dir, "scaling_series", "all", "max_step", (double)s->max_step);
		for (size_t g = 0; g < R->n_grid; g++) {
			snprintf(r, sizeof r, "%.10g", R->grid[g]);
			line(f, s->label, dir, "scaling_tokens", r, "correct", s->tok_correct[g]);
			line(f, s->label, dir, "scaling_tokens", r, "fast1", s->tok_fast1[g]);
		}
		for (size_t k = 0; k < R->n_steps; k++) {
			snprintf(r, sizeof r, "%ld", R->steps[k]);
			line(f, s->label, dir, "scaling_steps", r, "correct", s->step_correct[k]);
			line(f, s->label, dir, "scaling_steps", r, "fast1", s->step_fast1[k]);
		}
	}
	for (size_t i = 0; i < R->n_by_strat; i++)
		csv_hack(f, "reward_hacking_strategy", &R->by_strat[i]);
	for (size_t i = 0; i < R->n_by_model; i++)
		csv_hack(f, "reward_hacking_model", &R->by_model[i]);
	csv_hack(f, "reward_hacking_total", &R->total);
	for (size_t i = 0; i < R->n_sc; i++) {
		const struct report_sc *s = &R->sc[i];
		const struct report_rundir *d = &R->dirs[s->dir];
		const char *bon = s->bon >= 0 ? R->dirs[s->bon].dir : "";
		double n = s->n_tasks ? (double)s->n_tasks : NAN;
		line(f, d->model, d->dir, "self_consistency", "self-consistency", "tasks_n", n);
		line(f, d->model, d->dir, "self_consistency", "self-consistency",
		     "selected_incorrect", s->n_incorrect);
		line(f, d->model, d->dir, "self_consistency", "self-consistency",
		     "fraction_incorrect", s->n_incorrect / n);
		line(f, d->model, d->dir, "self_consistency", "self-consistency", "no_pick",
		     s->n_none);
		line(f, d->model, d->dir, "self_consistency", "self-consistency",
		     "incorrect_though_one_correct", s->n_wrong_oracle);
		line(f, d->model, d->dir, "self_consistency", "self-consistency",
		     "tokens_spent_mean", s->tokens_mean);
		if (s->bon < 0)
			continue;
		line(f, d->model, bon, "self_consistency", "best-of-n", "selected_correct",
		     s->bon_correct);
		line(f, d->model, bon, "self_consistency", "best-of-n", "fraction_correct",
		     s->bon_correct / n);
		line(f, d->model, bon, "self_consistency", "best-of-n", "tokens_spent_mean",
		     s->bon_tokens_mean);
	}
}

static json_t *jnum(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

static json_t *jarr(const double *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, jnum(v[i]));
	return a;
}

static json_t *jhack(const struct report_hack *h, const char *keyname)
{
	json_t *c = json_object(), *o;

	for (int k = 0; c && k < HK_COUNT; k++)
		json_object_set_new(c, report_hk_names[k], json_integer(h->n[k]));
	o = json_pack("{s:s, s:I, s:I, s:o, s:o}", keyname, h->key, "rows", (json_int_t)h->rows,
		      "hacking", (json_int_t)h->total, "rate",
		      jnum(h->rows ? (double)h->total / (double)h->rows : NAN), "counts", c);
	return o;
}

static json_t *jdirs(const struct report_runs *R)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < R->n_dirs; i++) {
		const struct report_rundir *d = &R->dirs[i];
		json_array_append_new(a, json_pack(
			"{s:s, s:s, s:{s:s, s:s}, s:I, s:s, s:I, s:I, s:i, s:i}", "dir", d->dir,
			"strategy", report_strat_names[d->strategy], "generator", "kind", d->gen_kind,
			"model", d->model, "tasks_n", (json_int_t)d->n_tasks, "task_set",
			d->tasks_from_list ? "task-list" : "tasks of the run's files",
			"candidates", (json_int_t)d->results->n_rows, "left_out_rows",
			(json_int_t)d->n_left_out, "stopped_on_budget", d->n_budget_stop,
			"tasks_with_a_correct_candidate", d->n_oracle));
		json_object_set_new(json_array_get(a, json_array_size(a) - 1), "over_budget",
				    json_integer(d->n_over_budget));
		json_object_set_new(json_array_get(a, json_array_size(a) - 1), "name",
				    json_string(d->name));
		json_object_set_new(json_array_get(a, json_array_size(a) - 1), "resume",
				    d->meta.reused < 0 ? json_null() :
				    json_pack("{s:I, s:I}", "reused", (json_int_t)d->meta.reused,
					      "generated", (json_int_t)(d->meta.generated < 0 ? 0 :
								       d->meta.generated)));
	}
	return a;
}

static json_t *jscaling(const struct report_runs *R)
{
	json_t *steps = json_array(), *ser = json_array(), *o;

	for (size_t k = 0; steps && k < R->n_steps; k++)
		json_array_append_new(steps, json_integer(R->steps[k]));
	for (size_t i = 0; ser && i < R->n_ser; i++) {
		const struct report_series *s = &R->ser[i];
		json_array_append_new(ser, json_pack(
			"{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:{s:o, s:o}, s:{s:o, s:o}}",
			"label", s->label, "strategy", report_strat_names[s->strategy], "model",
			s->model, "dir", R->dirs[s->dir].dir, "tasks_n",
			(json_int_t)R->dirs[s->dir].n_tasks, "curve_rows", (json_int_t)s->n_pts,
			"max_step", (json_int_t)s->max_step, "by_tokens", "correct",
			jarr(s->tok_correct, R->n_grid), "fast1", jarr(s->tok_fast1, R->n_grid),
			"by_step", "correct", jarr(s->step_correct, R->n_steps), "fast1",
			jarr(s->step_fast1, R->n_steps)));
	}
	o = json_pack("{s:s, s:o, s:I, s:o, s:o}", "budget_unit", "completion tokens per task",
		      "budgets", jarr(R->grid, R->n_grid), "budgets_distinct",
		      (json_int_t)R->n_budgets, "steps", steps, "series", ser);
	return o;
}

static json_t *jhacking(const struct report_runs *R)
{
	json_t *v = json_array(), *bs = json_array(), *bm = json_array();

	for (int k = 0; v && k < HK_COUNT; k++)
		json_array_append_new(v, json_string(report_hk_names[k]));
	for (size_t i = 0; bs && i < R->n_by_strat; i++)
		json_array_append_new(bs, jhack(&R->by_strat[i], "strategy"));
	for (size_t i = 0; bm && i < R->n_by_model; i++)
		json_array_append_new(bm, jhack(&R->by_model[i], "model"));
	return json_pack("{s:o, s:o, s:o, s:o}", "verdicts", v, "by_strategy", bs, "by_model", bm,
			 "total", jhack(&R->total, "key"));
}

static json_t *jsc(const struct report_runs *R)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < R->n_sc; i++) {
		const struct report_sc *s = &R->sc[i];
		const struct report_rundir *d = &R->dirs[s->dir];
		double n = s->n_tasks ? (double)s->n_tasks : NAN;
		json_t *bon = s->bon < 0 ? json_null() :
			json_pack("{s:s, s:i, s:o, s:o}", "dir", R->dirs[s->bon].dir,
				  "selected_correct", s->bon_correct, "fraction_correct",
				  jnum(s->bon_correct / n), "tokens_spent_mean",
				  jnum(s->bon_tokens_mean));
		json_array_append_new(a, json_pack(
			"{s:s, s:s, s:i, s:i, s:o, s:i, s:i, s:o, s:o, s:s}", "dir", d->dir, "model",
			d->model, "tasks_n", s->n_tasks, "selected_incorrect", s->n_incorrect,
			"fraction_incorrect", jnum(s->n_incorrect / n), "no_pick", s->n_none,
			"incorrect_though_one_correct", s->n_wrong_oracle, "tokens_spent_mean",
			jnum(s->tokens_mean), "best_of_n", bon, "note", s->note));
	}
	return a;
}

struct json_t *report_runs_json(const struct report_runs *R)
{
	return json_pack("{s:o, s:o, s:o, s:o}", "runs", jdirs(R), "scaling", jscaling(R),
			 "reward_hacking", jhacking(R), "self_consistency", jsc(R));
}
