/* report_gate_out.c — the gate's printers (text with widths from the data,
 * JUnit XML, a pull-request comment in markdown, json). Printers only print;
 * --confirm's re-runs are in report_gate_confirm.c. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

static int fails(enum report_verdict v)
{
	return v == RV_LOST || v == RV_MISSING || v == RV_SLOWER;
}

/* Order of the sections: what fails first. */
static const enum report_verdict order[] = { RV_LOST, RV_MISSING, RV_SLOWER, RV_FASTER,
					     RV_FIXED, RV_NEW, RV_INCONCLUSIVE, RV_FAILING,
					     RV_SAME };

static void summary_line(FILE *f, const struct report_gate *g)
{
	int any = 0;

	for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
		fprintf(f, "%s%d %s", any++ ? ", " : "", g->counts[order[k]],
			report_verdict_names[order[k]]);
}

static const char *const floor_names[4] = { "none", "met", "inconclusive", "failed" };

/* A pass that decided little: a compared task left INCONCLUSIVE, or the
 * floor undecided. */
static int undecided(const struct report_gate *g)
{
	return !g->failed && (g->n_decided < g->n_compared || g->floor_state == 2);
}

/* "decided N of M tasks; rerun with --confirm 5" (and the floor), into b. */
static const char *undecided_why(char *b, size_t len, const struct report_gate *g,
				 const struct report_gate_opts *o)
{
	char hint[96];

	if (o->confirm > 0)
		snprintf(hint, sizeof hint, "raise --confirm (%d now) or --time-cap", o->confirm);
	else
		snprintf(hint, sizeof hint, "rerun with --confirm 5");
	snprintf(b, len, "decided %d of %d tasks%s; %s", g->n_decided, g->n_compared,
		 g->floor_state == 2 ? ", fast_1 floor undecided" : "", hint);
	return b;
}

/* What the reason does not say: which files were compared when they are not
 * the same source, and the baseline's drift between the runs. */
static const char *notes(char *b, size_t len, const struct report_gate_task *t,
			 const struct report_gate_opts *o)
{
	size_t l = 0;

	b[0] = '\0';
	if (t->base_row && t->cur_row && t->base_ok && t->cur_ok) {
		int known = *t->base_row->sha256 && *t->cur_row->sha256;
		int same_path = !strcmp(t->base_row->candidate, t->cur_row->candidate);
		if (!t->same_source && (known || !same_path))
			l += (size_t)snprintf(b + l, len - l, "; %s: baseline %s, current %s",
					      known ? "different sources" : "compared",
					      t->base_row->candidate, t->cur_row->candidate);
		else if (strcmp(t->base_row->candidate, t->cur_row->candidate))
			l += (size_t)snprintf(b + l, len - l, "; same source: %s and %s",
					      t->base_row->candidate, t->cur_row->candidate);
	}
	if (l < len && !isnan(t->base_drift) && (t->base_drift > 1 + o->threshold ||
						 t->base_drift < 1 / (1 + o->threshold)))
		snprintf(b + l, len - l, "; baseline %.2g× %s than in the baseline run",
			 t->base_drift > 1 ? t->base_drift : 1 / t->base_drift,
			 t->base_drift > 1 ? "slower" : "faster");
	return b;
}

static void floor_line(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	double n = (double)g->n;
	char bp[48];

	if (!g->cur_timed) {
		fprintf(f, "fast_1: not measured (the current run has no timed row)\n");
		return;
	}

	if (g->base_timed)
		snprintf(bp, sizeof bp, "%.4f", g->base_fast1);
	else
		snprintf(bp, sizeof bp, "not measured");
	fprintf(f, "fast_1 (best-of-n, N = %zu tasks of baseline and current): %d surely fast, "
		"%d undecided, %d surely not: between %.4f and %.4f (point %.4f, baseline point "
		"%s)", g->n, g->n_fast_sure, g->n_fast_undecided, g->n_fast_not,
		g->n_fast_sure / n, (g->n_fast_sure + g->n_fast_undecided) / n, g->fast1, bp);
	if (!isnan(o->min_fast1))
		fprintf(f, ", floor %.4f: %s", o->min_fast1,
			g->floor_state == 1 ? "met" : g->floor_state == 3 ? "BELOW" :
			"INCONCLUSIVE (neither surely met nor surely missed)");
	fprintf(f, "\n");
}

static void drift_line(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	if (g->base_untasked || g->cur_untasked)
		fprintf(f, "rows naming no task (a candidate file that gave none or could not be "
			"read; compared nowhere): %d in the baseline, %d in the current run\n",
			g->base_untasked, g->cur_untasked);
	if (!g->n_drift)
		return;
	fprintf(f, "baseline drift: the task baselines ran %.2f× %s in the current run than in "
		"the baseline run (geometric mean over %d tasks; %d beyond %.1f%%)\n",
		g->drift_gm >= 1 ? g->drift_gm : 1 / g->drift_gm,
		g->drift_gm >= 1 ? "slower" : "faster", g->n_drift, g->n_drift_beyond,
		o->threshold * 100);
}

void report_gate_print_text(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	int wn = 4, wv = 7;
	char why[256], note[1200];

	for (size_t i = 0; i < g->n; i++) {
		int l = (int)strlen(g->tasks[i].name), v;
		wn = l > wn ? l : wn;
		v = (int)strlen(report_verdict_names[g->tasks[i].verdict]);
		wv = v > wv ? v : wv;
	}
	fprintf(f, "crucible gate: %s: ", g->failed ? "FAIL" : undecided(g) ?
		"PASS (inconclusive)" : "PASS");
	summary_line(f, g);
	fprintf(f, " (threshold %.1f%%, alpha %g)\n", o->threshold * 100, o->alpha);
	if (undecided(g))
		fprintf(f, "%s\n", undecided_why(why, sizeof why, g, o));
	floor_line(f, g, o);
	drift_line(f, g, o);
	fprintf(f, "\n%-*s  %-*s  %s\n", wn, "task", wv, "verdict", "why");
	for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
		for (size_t i = 0; i < g->n; i++) {
			const struct report_gate_task *t = &g->tasks[i];
			if (t->verdict == order[k])
				fprintf(f, "%-*s  %-*s  %s%s\n", wn, t->name, wv,
					report_verdict_names[t->verdict], t->reason,
					notes(note, sizeof note, t, o));
		}
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
				fputc(*s, f);
		}
	}
}

void report_gate_print_junit(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	int floor = !isnan(o->min_fast1);
	int nf = g->counts[RV_LOST] + g->counts[RV_MISSING] + g->counts[RV_SLOWER] +
		 g->floor_failed;
	int ns = g->counts[RV_INCONCLUSIVE] + (floor && g->floor_state == 2);
	char note[1200];

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"crucible gate\" "
		"tests=\"%zu\" failures=\"%d\" skipped=\"%d\">\n  <testsuite name=\"crucible.gate\" "
		"tests=\"%zu\" failures=\"%d\" errors=\"0\" skipped=\"%d\">\n", g->n + floor, nf, ns,
		g->n + floor, nf, ns);
	for (size_t i = 0; i < g->n; i++) {
		const struct report_gate_task *t = &g->tasks[i];
		notes(note, sizeof note, t, o);
		fprintf(f, "    <testcase classname=\"crucible.gate\" name=\"");
		xml_text(f, t->name);
		fprintf(f, "\" time=\"0\">\n");
		if (fails(t->verdict)) {
			fprintf(f, "      <failure type=\"%s\" message=\"",
				report_verdict_names[t->verdict]);
			xml_text(f, t->reason);
			xml_text(f, note);
			fprintf(f, "\">");
			xml_text(f, t->name);
			fprintf(f, ": ");
			xml_text(f, t->reason);
			xml_text(f, note);
			fprintf(f, "</failure>\n");
		} else if (t->verdict == RV_INCONCLUSIVE) {
			/* not decided: neither a pass nor a failure */
			fprintf(f, "      <skipped message=\"INCONCLUSIVE: ");
			xml_text(f, t->reason);
			xml_text(f, note);
			fprintf(f, "\"/>\n");
		} else {
			fprintf(f, "      <system-out>%s: ", report_verdict_names[t->verdict]);
			xml_text(f, t->reason);
			xml_text(f, note);
			fprintf(f, "</system-out>\n");
		}
		fprintf(f, "    </testcase>\n");
	}
	if (floor) {
		fprintf(f, "    <testcase classname=\"crucible.gate\" name=\"fast_1 floor\" time=\"0\">\n");
		if (g->floor_state == 3)
			fprintf(f, "      <failure type=\"floor\" message=\"fast_1 below the floor %.4f: "
				"%d surely fast and %d undecided of %zu tasks\"/>\n", o->min_fast1,
				g->n_fast_sure, g->n_fast_undecided, g->n);
		else if (g->floor_state == 2)
			fprintf(f, "      <skipped message=\"INCONCLUSIVE: fast_1 floor %.4f: %d surely "
				"fast, %d undecided, %d surely not of %zu tasks\"/>\n", o->min_fast1,
				g->n_fast_sure, g->n_fast_undecided, g->n_fast_not, g->n);
		fprintf(f, "    </testcase>\n");
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
}

/* Markdown table cells must not contain '|' or newlines. */
static void md_cell(FILE *f, const char *s)
{
	for (; *s; s++)
		fputs(*s == '|' ? "\\|" : *s == '\n' ? " " : (char[2]){ *s, 0 }, f);
}

static void md_rows(FILE *f, const struct report_gate *g, enum report_verdict v,
		    const struct report_gate_opts *o)
{
	char b[32], c[32], note[1200];

	for (size_t i = 0; i < g->n; i++) {
		const struct report_gate_task *t = &g->tasks[i];
		if (t->verdict != v)
			continue;
		fprintf(f, "| `");
		md_cell(f, t->name);
		fprintf(f, "` | %s | %s | %s | ", report_verdict_names[v],
			!t->in_base ? "—" : !t->base_ok ? "not correct" :
			report_fmt_num(b, sizeof b, t->base_sp, 3),
			!t->in_cur ? "missing" : !t->cur_ok ? "not correct" :
			report_fmt_num(c, sizeof c, t->cur_sp, 3));
		md_cell(f, t->reason);
		md_cell(f, notes(note, sizeof note, t, o));
		fprintf(f, " |\n");
	}
}

void report_gate_print_md(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	static const char hdr[] = "| task | verdict | baseline speedup | current speedup | |\n"
				  "|---|---|---:|---:|---|\n";
	int folded = g->counts[RV_SAME] + g->counts[RV_INCONCLUSIVE] + g->counts[RV_FAILING];
	char why[256];

	if (g->failed)
		fprintf(f, "## crucible gate: ❌ FAIL\n\n");
	else if (undecided(g))
		fprintf(f, "## crucible gate: ⚠️ PASS (inconclusive: %s)\n\n",
			undecided_why(why, sizeof why, g, o));
	else
		fprintf(f, "## crucible gate: ✅ PASS\n\n");
	summary_line(f, g);
	fprintf(f, " (threshold %.1f%%, alpha %g).  \n", o->threshold * 100, o->alpha);
	if (undecided(g))
		fprintf(f, "Decided %d of %d tasks: this pass is not evidence of no "
			"regression.  \n", g->n_decided, g->n_compared);
	floor_line(f, g, o);
	if (g->n_drift || g->base_untasked || g->cur_untasked) {
		fprintf(f, "  \n");
		drift_line(f, g, o);
	}
	if (g->n - (size_t)folded) {
		fprintf(f, "\n%s", hdr);
		for (size_t k = 0; k < 6; k++)
			md_rows(f, g, order[k], o);
	}
	if (folded) {
		fprintf(f, "\n<details><summary>%d same, inconclusive or still failing</summary>\n\n%s",
			folded, hdr);
		for (size_t k = 6; k < sizeof order / sizeof order[0]; k++)
			md_rows(f, g, order[k], o);
		fprintf(f, "\n</details>\n");
	}
	fprintf(f, "\nSpeedups are the figures the verdicts compared: the median per-sample "
		"speedup where both runs have samples.csv, else the row's speedup (the same numbers "
		"as the text and json outputs).\n");
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

int report_gate_print_json(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	json_t *root = json_object(), *tasks = json_array(), *counts = json_object();
	int rc;

	for (int v = 0; v < RV_COUNT; v++)
		json_object_set_new(counts, report_verdict_names[v], json_integer(g->counts[v]));
	for (size_t i = 0; i < g->n; i++) {
		const struct report_gate_task *t = &g->tasks[i];
		json_array_append_new(tasks, json_pack(
			"{s:s, s:s, s:b, s:s, s:b, s:b, s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:o, "
			"s:o, s:o, s:o, s:o, s:o, s:i, s:s, s:I, s:I, s:s}",
			"task", t->name, "verdict", report_verdict_names[t->verdict],
			"fails", fails(t->verdict), "method", report_method_names[t->method],
			"in_baseline", t->in_base, "in_current", t->in_cur,
			"baseline_correct", t->base_ok, "current_correct", t->cur_ok,
			"baseline_speedup", num_or_null(t->base_sp),
			"baseline_speedup_lo", num_or_null(t->base_lo),
			"baseline_speedup_hi", num_or_null(t->base_hi),
			"current_speedup", num_or_null(t->cur_sp),
			"current_speedup_lo", num_or_null(t->cur_lo),
			"current_speedup_hi", num_or_null(t->cur_hi),
			"ratio", num_or_null(t->ratio), "ratio_lo", num_or_null(t->ratio_lo),
			"ratio_hi", num_or_null(t->ratio_hi), "p", num_or_null(t->p),
			"p_ruled_out", num_or_null(t->p_ruled_out),
			"reruns", t->reruns, "confirm_stop", report_stop_names[t->stop],
			"baseline_observations", (json_int_t)t->n_obs_base,
			"current_observations", (json_int_t)t->n_obs_cur, "reason", t->reason));
		json_t *jt = json_array_get(tasks, json_array_size(tasks) - 1);
		char note[1200];
		json_object_set_new(jt, "speedup_kind", json_string(
			t->method == RM_SAMPLES ? "median per-sample speedup" :
			t->method == RM_RERUNS ? "median of the re-runs" : "row speedup"));
		json_object_set_new(jt, "p_mann_whitney", num_or_null(t->p_mw));
		json_object_set_new(jt, "p_trimmed_means", num_or_null(t->p_trim));
		json_object_set_new(jt, "baseline_candidate", t->base_row ?
				    json_string(t->base_row->candidate) : json_null());
		json_object_set_new(jt, "current_candidate", t->cur_row ?
				    json_string(t->cur_row->candidate) : json_null());
		json_object_set_new(jt, "same_source", json_boolean(t->same_source));
		json_object_set_new(jt, "baseline_drift", num_or_null(t->base_drift));
		json_object_set_new(jt, "fast1", json_string(!g->cur_timed ? "not measured" :
				    t->fast_state == 1 ? "fast" : t->fast_state == 0 ? "not fast" :
				    "undecided"));
		json_object_set_new(jt, "notes", json_string(notes(note, sizeof note, t, o)));
	}
	json_object_set_new(root, "result", json_string(g->failed ? "fail" : "pass"));
	json_object_set_new(root, "threshold", json_real(o->threshold));
	json_object_set_new(root, "alpha", json_real(o->alpha));
	json_object_set_new(root, "confirm", json_integer(o->confirm));
	json_object_set_new(root, "alpha_per_look",
			    json_real(o->confirm > 0 ? o->alpha / o->confirm : o->alpha));
	json_object_set_new(root, "counts", counts);
	/* not measured (a run without timing): null, not 0 (issue 32) */
	json_object_set_new(root, "fast1", g->cur_timed ? json_real(g->fast1) : json_null());
	json_object_set_new(root, "baseline_fast1", g->base_timed ? json_real(g->base_fast1) :
			    json_null());
	json_object_set_new(root, "untasked_rows", json_pack("{s:i, s:i}", "baseline",
							     g->base_untasked, "current",
							     g->cur_untasked));
	json_object_set_new(root, "min_fast1", num_or_null(o->min_fast1));
	json_object_set_new(root, "floor_failed", json_boolean(g->floor_failed));
	json_object_set_new(root, "floor", json_string(floor_names[g->floor_state]));
	json_object_set_new(root, "fast1_surely_fast", json_integer(g->n_fast_sure));
	json_object_set_new(root, "fast1_undecided", json_integer(g->n_fast_undecided));
	json_object_set_new(root, "fast1_surely_not", json_integer(g->n_fast_not));
	json_object_set_new(root, "compared", json_integer(g->n_compared));
	json_object_set_new(root, "decided", json_integer(g->n_decided));
	json_object_set_new(root, "inconclusive", json_boolean(undecided(g)));
	json_object_set_new(root, "baseline_drift_geomean", num_or_null(g->drift_gm));
	json_object_set_new(root, "baseline_drift_tasks", json_integer(g->n_drift));
	json_object_set_new(root, "baseline_drift_beyond_threshold",
			    json_integer(g->n_drift_beyond));
	json_object_set_new(root, "tasks", tasks);
	rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10)); /* %.10g: exact to the figures a verdict compared, no 17-digit binary noise */
	fputc('\n', f);
	json_decref(root);
	return rc;
}
