/* report_out.c — the machine-readable printers of `crucible report`:
 * json (jansson; unknown numbers are null) and csv (a long table, one value a
 * line: run,file,table,row,column,value, quoted through libcsv; the machine
 * verdict's two values are text). Both carry the same numbers as the
 * markdown tables. */
#include <csv.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/report_impl.h"

void report_csv_field(FILE *f, const char *s, int last)
{
	if (strpbrk(s, ",\"\r\n") || (*s && (s[0] == ' ' || s[strlen(s) - 1] == ' ')))
		csv_fwrite(f, s, strlen(s));
	else
		fputs(s, f);
	fputc(last ? '\n' : ',', f);
}

static json_t *jnum(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

static json_t *jgroup(const struct report_group *g, const char *name, int with_tasks)
{
	json_t *o = json_pack("{s:s, s:i, s:i, s:o, s:o, s:i, s:o, s:o}", "name", name,
			      "candidates", g->n, "correct", g->n_correct, "correctness",
			      jnum(g->n ? (double)g->n_correct / g->n : NAN), "median_speedup",
			      jnum(g->median_speedup), "speedup_n", g->n_speed, "tokens_min",
			      jnum(g->lo), "tokens_max", jnum(g->hi));
	if (o && with_tasks)
		json_object_set_new(o, "tasks", json_integer(g->n_tasks));
	return o;
}

/* pass@k's units (issue 31): what n counts, the per-candidate figure beside
 * it, the table by turn or generation, evolve's draft, --resume's counts. */
static json_t *units_json(const struct report_summary *s)
{
	const struct report_opts *o = &s->opts;
	json_t *u = json_pack("{s:s, s:s, s:i}", "unit", report_unit_names[s->unit], "run_name",
			      s->run_name, "units", s->n_units);
	json_t *a = json_array(), *steps = json_array();

	if (!u || !a || !steps) {
		json_decref(u);
		json_decref(a);
		json_decref(steps);
		return NULL;
	}
	for (size_t ki = 0; ki < o->nk; ki++)
		json_array_append_new(a, json_pack("{s:i, s:o}", "k", o->k[ki], "pass",
						   jnum(s->pass_k_cand[ki])));
	json_object_set_new(u, "pass_at_k_per_candidate", a);
	for (int g = 0; g < s->n_steps; g++) {
		json_t *pk = json_array(), *fk = json_array();
		for (size_t ki = 0; ki < o->nk; ki++) {
			json_t *v = json_array();
			json_array_append_new(pk, jnum(s->step_pass[(size_t)g * o->nk + ki]));
			for (size_t j = 0; j < o->np; j++)
				json_array_append_new(v, jnum(s->step_fast[((size_t)g * o->nk + ki) *
									   o->np + j]));
			json_array_append_new(fk, v);
		}
		json_array_append_new(steps, json_pack("{s:I, s:i, s:i, s:o, s:o}", "step",
						       (json_int_t)s->step_ids[g], "candidates",
						       s->step_cands[g], "units_correct",
						       s->step_correct[g], "pass", pk, "fast_p", fk));
	}
	json_object_set_new(u, "by_step", json_pack("{s:s, s:o}", "step", s->unit == RU_TRAJECTORY ?
						     "turn" : s->unit == RU_SEARCH ? "generation" :
						     "none", "rows", steps));
	if (s->unit == RU_SEARCH) {
		a = json_array();
		for (size_t ki = 0; ki < o->nk; ki++)
			json_array_append_new(a, jnum(s->draft_pass[ki]));
		json_object_set_new(u, "draft", json_pack("{s:i, s:i, s:o}", "candidates",
							  s->draft_n, "correct", s->draft_c,
							  "pass", a));
	} else {
		json_object_set_new(u, "draft", json_null());
	}
	json_object_set_new(u, "resume", s->meta.reused < 0 ? json_null() :
			    json_pack("{s:I, s:I}", "reused", (json_int_t)s->meta.reused,
				      "generated", (json_int_t)(s->meta.generated < 0 ? 0 :
							       s->meta.generated)));
	return u;
}

static json_t *run_json(const struct report_summary *s)

{
	const struct report_opts *o = &s->opts;
	json_t *r, *fp, *a, *pk, *st, *bw, *tasks, *rl, *bk, *qt;

	r = json_pack("{s:s, s:s, s:s, s:o, s:s, s:o, s:I, s:I, s:s, s:I, s:{s:i, s:i}, s:i, s:s}",
		      "file", s->path, "label", s->label, "model", s->model,
		      "temperature", jnum(s->temperature), "strategy", s->strategy,
		      "turns", s->max_turn >= 0 ? json_integer(s->max_turn + 1) : json_null(),
		      "rows", (json_int_t)s->n_rows, "tasks_n", (json_int_t)s->n_tasks,
		      "task_set", s->tasks_from_list == 1 ? "task-list" :
		      s->tasks_from_list == 2 ? "tasks in the files" : "tasks in the file",
		      "ignored_rows", (json_int_t)s->n_ignored_rows, "candidates_per_task",
		      "min", s->n_min, "max", s->n_max, "correct", s->n_correct,
		      "correct_rule", s->opts.strict_backward ?
		      "status ok and backward pass or none" : "status ok and backward not fail");
	if (!r)
		return NULL;
	json_object_set_new(r, "provenance", report_prov_json(s));
	json_object_set_new(r, "measured", json_pack("{s:b, s:b}", "correctness",
						     s->correct_measured, "timing",
						     s->timing_measured));
	fp = json_object();
	json_object_set_new(r, "fast_p", fp);
	a = json_array();
	for (size_t j = 0; j < o->np; j++)
		json_array_append_new(a, json_real(o->p[j]));
	json_object_set_new(fp, "p", a);
	a = json_array();
	for (size_t j = 0; j < o->np; j++)
		json_array_append_new(a, jnum(s->fast_best[j]));
	json_object_set_new(fp, "best_of_n", a);
	a = json_array();
	for (size_t j = 0; j < o->np; j++)
		json_array_append_new(a, jnum(s->fast_sample_mean[j]));
	json_object_set_new(fp, "mean_per_sample", a);
	a = json_array();
	for (size_t si = 0; si < s->n_samples; si++) {
		json_t *v = json_array();
		for (size_t j = 0; j < o->np; j++)
			json_array_append_new(v, jnum(s->fast_sample[si * o->np + j]));
		json_array_append_new(a, json_pack("{s:I, s:o}", "sample",
						   (json_int_t)s->sample_ids[si], "values", v));
	}
	json_object_set_new(fp, "per_sample", a);
	json_object_set_new(fp, "correct_without_speedup", json_integer(s->n_correct_nospeed));

	pk = json_array();
	for (size_t ki = 0; ki < o->nk; ki++) {
		json_t *v = json_array();
		for (size_t j = 0; j < o->np; j++)
			json_array_append_new(v, jnum(s->fastp_k[ki * 32 + j]));
		json_array_append_new(pk, json_pack("{s:i, s:o, s:o, s:i}", "k", o->k[ki],
						    "pass", jnum(s->pass_k[ki]), "fast_p", v,
						    "tasks_n_lt_k", s->k_short[ki]));
	}
	json_object_set_new(r, "pass_at_k", pk);
	if (!(a = units_json(s))) {
		json_decref(r);
		return NULL;
	}
	json_object_set_new(r, "pass_at_k_units", a);
	json_object_set_new(r, "geomean_speedup",
			    json_pack("{s:o, s:o, s:o, s:i, s:i, s:s, s:s}", "value", jnum(s->gm),
				      "lo", jnum(s->gm_lo), "hi", jnum(s->gm_hi), "n", s->gm_n,
				      "correct_n", s->n_correct, "over",
				      "correct candidates with a trusted speedup (timed, not noisy)",
				      "interval", "within-run 95% interval: Student t on this run's "
				      "log speedups"));
	json_object_set_new(r, "untasked_rows", json_integer(s->n_untasked));
	json_object_set_new(r, "timing", json_pack(
		"{s:i, s:i, s:i, s:b, s:s}", "timed_rows", s->n_timed, "noisy_rows", s->n_noisy,
		"noisy_correct", s->n_correct_noisy, "fast_p_lower_bound", s->n_noisy > 0, "rule",
		"noisy figures are not trusted: kept out of fast_p for p > 0, the geometric "
		"mean and the speedup medians"));
	if (*s->machine_verdict)
		json_object_set_new(r, "machine", json_pack("{s:s, s:s}", "verdict",
							    s->machine_verdict, "why",
							    s->machine_why));
	st = json_object();
	for (int i = 0; i < RS_COUNT; i++)
		json_object_set_new(st, report_status_name(i), json_integer(s->status_counts[i]));
	json_object_set_new(r, "status_counts", st);
	bw = json_object();
	for (int i = 0; i < RB_COUNT; i++)
		json_object_set_new(bw, report_bw_names[i], json_integer(s->bw_counts[i]));
	json_object_set_new(r, "backward_counts", bw);

	tasks = json_array();
	for (size_t t = 0; t < s->n_tasks; t++) {
		const struct report_task *T = &s->tasks[t];
		json_t *tk = json_array();
		for (size_t ki = 0; ki < o->nk; ki++)
			json_array_append_new(tk, !s->correct_measured ? json_null() :
					      T->nu == 0 ? json_integer(0) :
					      jnum(report_pass_at_k(T->nu, T->cu, o->k[ki])));
		json_array_append_new(tasks, json_pack(
			"{s:s, s:i, s:o, s:i, s:o, s:o, s:o, s:o, s:i, s:o, s:o, s:o}", "task",
			T->name, "n", T->n, "pass_at_k", tk,
			"correct", T->c, "pass_at_1", !s->correct_measured ? json_null() :
			T->nu ? jnum(report_pass_at_k(T->nu, T->cu, 1)) : json_integer(0), "best_speedup", jnum(T->best_speedup), "best_time_us",
			jnum(T->best_time_us), "best_baseline_us", jnum(T->best_base_us),
			"noisy_correct", T->c_noisy, "median_speedup",
			jnum(T->median_speedup), "arl", jnum(T->arl), "bucket",
			T->n_tok ? json_string(report_bucket_names[report_bucket(T->arl)]) :
			json_null()));
		json_object_set_new(json_array_get(tasks, json_array_size(tasks) - 1), "units",
				    json_pack("{s:i, s:i}", "n", T->nu, "correct", T->cu));
	}
	json_object_set_new(r, "tasks", tasks);

	rl = json_pack("{s:i, s:i}", "with_tokens", s->rl_n, "left_out", s->rl_missing);
	bk = json_array();
	for (int b = 0; b < 3; b++)
		json_array_append_new(bk, jgroup(&s->bucket[b], report_bucket_names[b], 1));
	json_object_set_new(rl, "buckets", bk);
	qt = json_array();
	for (int q = 0; q < 4; q++) {
		char name[4] = { 'Q', (char)('1' + q), 0, 0 };
		json_array_append_new(qt, jgroup(&s->quart[q], name, 0));
	}
	json_object_set_new(rl, "quartile_bounds", json_pack("[o, o, o]", jnum(s->q1),
							     jnum(s->q2), jnum(s->q3)));
	json_object_set_new(rl, "quartiles", qt);
	json_object_set_new(rl, "pearson_length_speedup",
			    json_pack("{s:o, s:i}", "r", jnum(s->r_speed), "n", s->r_speed_n));
	json_object_set_new(rl, "pearson_length_correct",
			    json_pack("{s:o, s:i}", "r", jnum(s->r_correct), "n", s->r_correct_n));
	json_object_set_new(r, "reasoning", rl);
	return r;
}

int report_print_json_runs(FILE *f, const struct report_summary *s, size_t n,
			   const struct report_runs *R)
{
	json_t *root = json_pack("{s:i, s:o, s:[]}", "version", 1, "report", report_tool_json(),
				 "runs");
	json_t *runs;
	int rc = -1;

	if (!root)
		return -1;
	runs = json_object_get(root, "runs");
	for (size_t i = 0; i < n; i++) {
		json_t *r = run_json(&s[i]);
		if (!r)
			goto out;
		json_array_append_new(runs, r);
	}
	if (R) {
		json_t *rj = report_runs_json(R);
		if (!rj)
			goto out;
		json_object_set_new(root, "run_dirs", rj);
	}
	if (json_dumpf(root, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10)))
		goto out;
	fputc('\n', f);
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int report_print_json(FILE *f, const struct report_summary *s, size_t n)
{
	return report_print_json_runs(f, s, n, NULL);
}

/* One line of the long csv: run,file,table,row,column,value (NaN: empty). */
void report_csv_line(FILE *f, const char *run, const char *file, const char *table,
		     const char *row, const char *col, double v)
{
	char b[64];

	report_csv_field(f, run, 0);
	report_csv_field(f, file, 0);
	report_csv_field(f, table, 0);
	report_csv_field(f, row, 0);
	report_csv_field(f, col, 0);
	if (isnan(v))
		b[0] = '\0';
	else
		snprintf(b, sizeof b, "%.10g", v);
	report_csv_field(f, b, 1);
}

static void line(FILE *f, const struct report_summary *s, const char *table, const char *row,
		 const char *col, double v)
{
	report_csv_line(f, s->label, s->path, table, row, col, v);
}

static void csv_group(FILE *f, const struct report_summary *s, const char *table,
		      const char *name, const struct report_group *g)
{
	line(f, s, table, name, "candidates", g->n);
	line(f, s, table, name, "correct", g->n_correct);
	line(f, s, table, name, "correctness", g->n ? (double)g->n_correct / g->n : NAN);
	line(f, s, table, name, "median_speedup", g->median_speedup);
	line(f, s, table, name, "speedup_n", g->n_speed);
	line(f, s, table, name, "tokens_min", g->lo);
	line(f, s, table, name, "tokens_max", g->hi);
}

/* pass@k's units (issue 31): table pass_at_k_units (row = the unit), the
 * per-candidate figure, the table by turn or generation, evolve's draft. */
static void csv_units(FILE *f, const struct report_summary *S)
{
	const struct report_opts *o = &S->opts;
	const char *step = S->unit == RU_TRAJECTORY ? "turn" : "generation";
	char r[96], c[64];

	line(f, S, "pass_at_k_units", report_unit_names[S->unit], "units", S->n_units);
	for (size_t ki = 0; ki < o->nk; ki++) {
		snprintf(r, sizeof r, "k=%d", o->k[ki]);
		line(f, S, "pass_at_k_per_candidate", r, "pass", S->pass_k_cand[ki]);
		if (S->unit == RU_SEARCH)
			line(f, S, "pass_at_k_draft", r, "pass", S->draft_pass[ki]);
	}
	for (int g = 0; g < S->n_steps; g++) {
		snprintf(r, sizeof r, "%s %ld", step, S->step_ids[g]);
		line(f, S, "pass_at_k_by_step", r, "candidates", S->step_cands[g]);
		line(f, S, "pass_at_k_by_step", r, "units_correct", S->step_correct[g]);
		for (size_t ki = 0; ki < o->nk; ki++) {
			snprintf(c, sizeof c, "pass@%d", o->k[ki]);
			line(f, S, "pass_at_k_by_step", r, c, S->step_pass[(size_t)g * o->nk + ki]);
			for (size_t j = 0; j < o->np; j++) {
				snprintf(c, sizeof c, "fast_%g@%d", o->p[j], o->k[ki]);
				line(f, S, "pass_at_k_by_step", r, c,
				     S->step_fast[((size_t)g * o->nk + ki) * o->np + j]);
			}
		}
	}
	if (S->meta.reused >= 0) {
		line(f, S, "resume", "all", "reused", (double)S->meta.reused);
		line(f, S, "resume", "all", "generated",
		     S->meta.generated < 0 ? 0 : (double)S->meta.generated);
	}
}

void report_print_csv_runs(FILE *f, const struct report_summary *s, size_t n,
			   const struct report_runs *R)
{
	char r[96], c[64];

	fputs("run,file,table,row,column,value\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct report_summary *S = &s[i];
		const struct report_opts *o = &S->opts;
		report_print_prov_csv(f, S);
		line(f, S, "run", "all", "rows", (double)S->n_rows);
		line(f, S, "measured", "all", "correctness", S->correct_measured);
		line(f, S, "measured", "all", "timing", S->timing_measured);
		line(f, S, "run", "all", "tasks_n", (double)S->n_tasks);
		line(f, S, "run", "all", "correct", S->n_correct);
		line(f, S, "run", "all", "untasked_rows", S->n_untasked);
		for (size_t j = 0; j < o->np; j++) {
			snprintf(c, sizeof c, "fast_%g", o->p[j]);
			line(f, S, "fast_p", "best_of_n", c, S->fast_best[j]);
			line(f, S, "fast_p", "mean_per_sample", c, S->fast_sample_mean[j]);
			for (size_t si = 0; si < S->n_samples; si++) {
				snprintf(r, sizeof r, "sample %ld", S->sample_ids[si]);
				line(f, S, "fast_p", r, c, S->fast_sample[si * o->np + j]);
			}
		}
		for (size_t ki = 0; ki < o->nk; ki++) {
			snprintf(r, sizeof r, "k=%d", o->k[ki]);
			line(f, S, "pass_at_k", r, "pass", S->pass_k[ki]);
			for (size_t j = 0; j < o->np; j++) {
				snprintf(c, sizeof c, "fast_%g", o->p[j]);
				line(f, S, "pass_at_k", r, c, S->fastp_k[ki * 32 + j]);
			}
			line(f, S, "pass_at_k", r, "tasks_n_lt_k", S->k_short[ki]);
		}
		csv_units(f, S);
		line(f, S, "geomean_speedup", "all", "value", S->gm);
		line(f, S, "geomean_speedup", "all", "lo95", S->gm_lo);
		line(f, S, "geomean_speedup", "all", "hi95", S->gm_hi);
		line(f, S, "geomean_speedup", "all", "n", S->gm_n);
		line(f, S, "geomean_speedup", "all", "correct_n", S->n_correct);
		line(f, S, "timing", "all", "timed_rows", S->n_timed);
		line(f, S, "timing", "all", "noisy_rows", S->n_noisy);
		line(f, S, "timing", "all", "noisy_correct", S->n_correct_noisy);
		line(f, S, "timing", "all", "fast_p_lower_bound", S->n_noisy > 0);
		if (*S->machine_verdict) {
			const char *key[2] = { "verdict", "why" };
			const char *val[2] = { S->machine_verdict, S->machine_why };
			for (int k = 0; k < 2; k++) {
				report_csv_field(f, S->label, 0);
				report_csv_field(f, S->path, 0);
				report_csv_field(f, "machine", 0);
				report_csv_field(f, "all", 0);
				report_csv_field(f, key[k], 0);
				report_csv_field(f, val[k], 1);
			}
		}
		for (int k = 0; k < RS_COUNT; k++)
			line(f, S, "status_counts", report_status_name(k), "candidates",
			     S->status_counts[k]);
		for (int k = 0; k < RB_COUNT; k++)
			line(f, S, "backward_counts", report_bw_names[k], "candidates", S->bw_counts[k]);
		for (size_t t = 0; t < S->n_tasks; t++) {
			const struct report_task *T = &S->tasks[t];
			line(f, S, "tasks", T->name, "n", T->n);
			line(f, S, "tasks", T->name, "correct", T->c);
			line(f, S, "tasks", T->name, "units", T->nu);
			line(f, S, "tasks", T->name, "units_correct", T->cu);
			line(f, S, "tasks", T->name, "pass_at_1", !S->correct_measured ? NAN :
			     T->nu ? report_pass_at_k(T->nu, T->cu, 1) : 0);
			line(f, S, "tasks", T->name, "best_speedup", T->best_speedup);
			line(f, S, "tasks", T->name, "best_time_us", T->best_time_us);
			line(f, S, "tasks", T->name, "best_baseline_us", T->best_base_us);
			line(f, S, "tasks", T->name, "noisy_correct", T->c_noisy);
			line(f, S, "tasks", T->name, "median_speedup", T->median_speedup);
			line(f, S, "tasks", T->name, "arl", T->arl);
		}
		line(f, S, "reasoning", "all", "with_tokens", S->rl_n);
		line(f, S, "reasoning", "all", "left_out", S->rl_missing);
		for (int b = 0; b < 3; b++)
			csv_group(f, S, "reasoning_bucket", report_bucket_names[b], &S->bucket[b]);
		for (int q = 0; q < 4; q++) {
			snprintf(r, sizeof r, "Q%d", q + 1);
			csv_group(f, S, "reasoning_quartile", r, &S->quart[q]);
		}
		line(f, S, "reasoning", "pearson_length_speedup", "r", S->r_speed);
		line(f, S, "reasoning", "pearson_length_speedup", "n", S->r_speed_n);
		line(f, S, "reasoning", "pearson_length_correct", "r", S->r_correct);
		line(f, S, "reasoning", "pearson_length_correct", "n", S->r_correct_n);
	}
	if (R)
		report_runs_print_csv(f, R);
}

void report_print_csv(FILE *f, const struct report_summary *s, size_t n)
{
	report_print_csv_runs(f, s, n, NULL);
}
