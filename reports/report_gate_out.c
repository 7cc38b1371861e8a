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

static void floor_line(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	fprintf(f, "fast_1 (best-of-n, N = %zu tasks of baseline and current): %.4f "
		"(baseline %.4f)", g->n, g->fast1, g->base_fast1);
	if (!isnan(o->min_fast1))
		fprintf(f, ", floor %.4f: %s", o->min_fast1, g->floor_failed ? "BELOW" : "met");
	fprintf(f, "\n");
}

void report_gate_print_text(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	int wn = 4, wv = 7;

	for (size_t i = 0; i < g->n; i++) {
		int l = (int)strlen(g->tasks[i].name), v;
		wn = l > wn ? l : wn;
		v = (int)strlen(report_verdict_names[g->tasks[i].verdict]);
		wv = v > wv ? v : wv;
	}
	fprintf(f, "crucible gate: %s: ", g->failed ? "FAIL" : "PASS");
	summary_line(f, g);
	fprintf(f, " (threshold %.1f%%, alpha %g)\n", o->threshold * 100, o->alpha);
	floor_line(f, g, o);
	fprintf(f, "\n%-*s  %-*s  %s\n", wn, "task", wv, "verdict", "why");
	for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
		for (size_t i = 0; i < g->n; i++) {
			const struct report_gate_task *t = &g->tasks[i];
			if (t->verdict == order[k])
				fprintf(f, "%-*s  %-*s  %s\n", wn, t->name, wv,
					report_verdict_names[t->verdict], t->reason);
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

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"crucible gate\" "
		"tests=\"%zu\" failures=\"%d\">\n  <testsuite name=\"crucible.gate\" tests=\"%zu\" "
		"failures=\"%d\" errors=\"0\" skipped=\"0\">\n", g->n + floor, nf, g->n + floor, nf);
	for (size_t i = 0; i < g->n; i++) {
		const struct report_gate_task *t = &g->tasks[i];
		fprintf(f, "    <testcase classname=\"crucible.gate\" name=\"");
		xml_text(f, t->name);
		fprintf(f, "\" time=\"0\">\n");
		if (fails(t->verdict)) {
			fprintf(f, "      <failure type=\"%s\" message=\"",
				report_verdict_names[t->verdict]);
			xml_text(f, t->reason);
			fprintf(f, "\">");
			xml_text(f, t->name);
			fprintf(f, ": ");
			xml_text(f, t->reason);
			fprintf(f, "</failure>\n");
		} else {
			fprintf(f, "      <system-out>%s: ", report_verdict_names[t->verdict]);
			xml_text(f, t->reason);
			fprintf(f, "</system-out>\n");
		}
		fprintf(f, "    </testcase>\n");
	}
	if (floor) {
		fprintf(f, "    <testcase classname=\"crucible.gate\" name=\"fast_1 floor\" time=\"0\">\n");
		if (g->floor_failed)
			fprintf(f, "      <failure type=\"floor\" message=\"fast_1 %.4f below the floor "
				"%.4f\"/>\n", g->fast1, o->min_fast1);
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

static void md_rows(FILE *f, const struct report_gate *g, enum report_verdict v)
{
	char b[32], c[32];

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
		fprintf(f, " |\n");
	}
}

void report_gate_print_md(FILE *f, const struct report_gate *g, const struct report_gate_opts *o)
{
	static const char hdr[] = "| task | verdict | baseline speedup | current speedup | |\n"
				  "|---|---|---:|---:|---|\n";
	int folded = g->counts[RV_SAME] + g->counts[RV_INCONCLUSIVE] + g->counts[RV_FAILING];

	fprintf(f, "## crucible gate: %s\n\n", g->failed ? "❌ FAIL" : "✅ PASS");
	summary_line(f, g);
	fprintf(f, " (threshold %.1f%%, alpha %g).  \n", o->threshold * 100, o->alpha);
	floor_line(f, g, o);
	if (g->n - (size_t)folded) {
		fprintf(f, "\n%s", hdr);
		for (size_t k = 0; k < 6; k++)
			md_rows(f, g, order[k]);
	}
	if (folded) {
		fprintf(f, "\n<details><summary>%d same, inconclusive or still failing</summary>\n\n%s",
			folded, hdr);
		for (size_t k = 6; k < sizeof order / sizeof order[0]; k++)
			md_rows(f, g, order[k]);
		fprintf(f, "\n</details>\n");
	}
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
	}
	json_object_set_new(root, "result", json_string(g->failed ? "fail" : "pass"));
	json_object_set_new(root, "threshold", json_real(o->threshold));
	json_object_set_new(root, "alpha", json_real(o->alpha));
	json_object_set_new(root, "confirm", json_integer(o->confirm));
	json_object_set_new(root, "alpha_per_look",
			    json_real(o->confirm > 0 ? o->alpha / o->confirm : o->alpha));
	json_object_set_new(root, "counts", counts);
	json_object_set_new(root, "fast1", json_real(g->fast1));
	json_object_set_new(root, "baseline_fast1", json_real(g->base_fast1));
	json_object_set_new(root, "min_fast1", num_or_null(o->min_fast1));
	json_object_set_new(root, "floor_failed", json_boolean(g->floor_failed));
	json_object_set_new(root, "tasks", tasks);
	rc = json_dumpf(root, f, JSON_INDENT(2));
	fputc('\n', f);
	json_decref(root);
	return rc;
}
