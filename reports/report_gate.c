/* report_gate.c — `crucible gate`: compares the best candidate of each task in
 * a baseline and a current results.csv and classifies every task as
 * regressed, improved, unchanged within noise, or new; checks the fast_1
 * floor; prints the verdict as text, JUnit XML and a pull-request comment.
 *
 * Best candidate of a task: a correct one with the highest speedup (a correct
 * one without a speedup only when no correct one has a speedup). A slowdown
 * must clear both the measured noise (current speedup_hi < baseline
 * speedup_lo) and the threshold (current < baseline × (1 − threshold)); when a
 * row lacks its interval only the threshold applies. An improvement mirrors
 * it (current speedup_lo > baseline speedup_hi and current > baseline ×
 * (1 + threshold)). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

struct best {
	const char *name;
	int ok;
	double sp, lo, hi;
};

static int cmp_best(const void *a, const void *b)
{
	return strcmp(((const struct best *)a)->name, ((const struct best *)b)->name);
}

/* One struct best per task of the run, sorted by name; *out owned by caller. */
static enum cr_status best_per_task(const struct report_run *run, int strict,
				    struct best **out, size_t *n, struct cr_err *e)
{
	struct report_opts o;
	struct best *v = malloc((run->n_rows ? run->n_rows : 1) * sizeof *v);
	size_t m = 0;

	*out = NULL;
	*n = 0;
	if (!v)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	memset(&o, 0, sizeof o);
	o.strict_backward = strict;
	for (size_t i = 0; i < run->n_rows; i++) {
		const struct report_row *r = &run->rows[i];
		v[i].name = r->task;
		v[i].ok = report_row_correct(r, &o);
		v[i].sp = v[i].ok ? r->speedup : NAN;
		v[i].lo = v[i].ok ? r->speedup_lo : NAN;
		v[i].hi = v[i].ok ? r->speedup_hi : NAN;
	}
	qsort(v, run->n_rows, sizeof *v, cmp_best);
	for (size_t i = 0; i < run->n_rows; i++) {
		struct best *b = m ? &v[m - 1] : NULL;
		if (!b || strcmp(b->name, v[i].name)) {
			v[m++] = v[i];
			continue;
		}
		if (v[i].ok && (!b->ok || (!isnan(v[i].sp) && (isnan(b->sp) || v[i].sp > b->sp))))
			*b = v[i];
	}
	*out = v;
	*n = m;
	return CR_OK;
}

static void classify(struct report_gate_task *t, double thr)
{
	double b = t->base_sp, c = t->cur_sp;

	if (!t->in_cur) {
		t->verdict = RV_REGRESSED;
		snprintf(t->reason, sizeof t->reason, "missing from the current run");
	} else if (!t->in_base) {
		t->verdict = RV_NEW;
		snprintf(t->reason, sizeof t->reason, "new task (%s)",
			 t->cur_ok ? "correct" : "not correct");
	} else if (t->base_ok && !t->cur_ok) {
		t->verdict = RV_REGRESSED;
		snprintf(t->reason, sizeof t->reason, "no longer correct");
	} else if (!t->base_ok && t->cur_ok) {
		t->verdict = RV_IMPROVED;
		snprintf(t->reason, sizeof t->reason, "now correct");
	} else if (!t->base_ok) {
		t->verdict = RV_UNCHANGED;
		snprintf(t->reason, sizeof t->reason, "still not correct");
	} else if (isnan(b) || isnan(c)) {
		t->verdict = RV_UNCHANGED;
		snprintf(t->reason, sizeof t->reason, "correct; no speedup to compare");
	} else {
		int below = isnan(t->cur_hi) || isnan(t->base_lo) || t->cur_hi < t->base_lo;
		int above = isnan(t->cur_lo) || isnan(t->base_hi) || t->cur_lo > t->base_hi;
		double rel = (c / b - 1) * 100;
		if (below && c < b * (1 - thr)) {
			t->verdict = RV_REGRESSED;
			snprintf(t->reason, sizeof t->reason, "slower: speedup %.3f -> %.3f (%+.1f%%)",
				 b, c, rel);
		} else if (above && c > b * (1 + thr)) {
			t->verdict = RV_IMPROVED;
			snprintf(t->reason, sizeof t->reason, "faster: speedup %.3f -> %.3f (%+.1f%%)",
				 b, c, rel);
		} else {
			t->verdict = RV_UNCHANGED;
			snprintf(t->reason, sizeof t->reason, "within noise: speedup %.3f -> %.3f "
				 "(%+.1f%%)", b, c, rel);
		}
	}
}

enum cr_status report_gate_compute(const struct report_run *base, const struct report_run *cur,
				   const struct report_gate_opts *o, struct report_gate *g,
				   struct cr_err *e)
{
	struct best *B = NULL, *C = NULL;
	size_t nb = 0, nc = 0, i = 0, j = 0;
	int fast_b = 0, fast_c = 0;
	enum cr_status st;

	memset(g, 0, sizeof *g);
	if ((st = best_per_task(base, o->strict_backward, &B, &nb, e)) != CR_OK ||
	    (st = best_per_task(cur, o->strict_backward, &C, &nc, e)) != CR_OK)
		goto out;
	if (nb == 0) {
		st = cr_errf(e, CR_EINPUT, "%s: the baseline has no candidate rows", base->path);
		goto out;
	}
	g->tasks = calloc(nb + nc, sizeof *g->tasks);
	if (!g->tasks) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	while (i < nb || j < nc) {
		struct report_gate_task *t = &g->tasks[g->n++];
		int c = i >= nb ? 1 : j >= nc ? -1 : strcmp(B[i].name, C[j].name);
		t->base_sp = t->base_lo = t->base_hi = NAN;
		t->cur_sp = t->cur_lo = t->cur_hi = NAN;
		if (c <= 0) {
			t->name = B[i].name;
			t->in_base = 1;
			t->base_ok = B[i].ok;
			t->base_sp = B[i].sp;
			t->base_lo = B[i].lo;
			t->base_hi = B[i].hi;
			i++;
		}
		if (c >= 0) {
			t->name = C[j].name;
			t->in_cur = 1;
			t->cur_ok = C[j].ok;
			t->cur_sp = C[j].sp;
			t->cur_lo = C[j].lo;
			t->cur_hi = C[j].hi;
			j++;
		}
		classify(t, o->threshold);
		fast_b += t->base_ok && t->base_sp > 1;
		fast_c += t->cur_ok && t->cur_sp > 1;
		g->n_regressed += t->verdict == RV_REGRESSED;
		g->n_improved += t->verdict == RV_IMPROVED;
		g->n_unchanged += t->verdict == RV_UNCHANGED;
		g->n_new += t->verdict == RV_NEW;
	}
	g->fast1 = (double)fast_c / (double)g->n;
	g->base_fast1 = (double)fast_b / (double)g->n;
	g->floor_failed = !isnan(o->min_fast1) && g->fast1 < o->min_fast1;
	g->failed = g->n_regressed > 0 || g->floor_failed;
out:
	free(B);
	free(C);
	if (st != CR_OK)
		report_gate_release(g);
	return st;
}

void report_gate_release(struct report_gate *g)
{
	if (!g)
		return;
	free(g->tasks);
	memset(g, 0, sizeof *g);
}

static const char *const verdict_names[] = { "unchanged", "improved",
					     "regressed", "new" };

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
	static const enum report_verdict order[] = { RV_REGRESSED, RV_IMPROVED, RV_NEW,
						     RV_UNCHANGED };

	fprintf(f, "crucible gate: %s: %d regressed, %d improved, %d unchanged within noise, "
		"%d new (threshold %.1f%%)\n", g->failed ? "FAIL" : "PASS", g->n_regressed,
		g->n_improved, g->n_unchanged, g->n_new, o->threshold * 100);
	floor_line(f, g, o);
	for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
		int any = 0;
		for (size_t i = 0; i < g->n; i++) {
			if (g->tasks[i].verdict != order[k])
				continue;
			if (!any++)
				fprintf(f, "\n%s:\n", order[k] == RV_UNCHANGED ?
					"unchanged within noise" : verdict_names[order[k]]);
			fprintf(f, "  %s: %s\n", g->tasks[i].name, g->tasks[i].reason);
		}
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

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"crucible gate\" "
		"tests=\"%zu\" failures=\"%d\">\n  <testsuite name=\"crucible.gate\" tests=\"%zu\" "
		"failures=\"%d\" errors=\"0\" skipped=\"0\">\n", g->n + floor,
		g->n_regressed + g->floor_failed, g->n + floor, g->n_regressed + g->floor_failed);
	for (size_t i = 0; i < g->n; i++) {
		const struct report_gate_task *t = &g->tasks[i];
		fprintf(f, "    <testcase classname=\"crucible.gate\" name=\"");
		xml_text(f, t->name);
		fprintf(f, "\" time=\"0\">\n");
		if (t->verdict == RV_REGRESSED) {
			fprintf(f, "      <failure type=\"regression\" message=\"");
			xml_text(f, t->reason);
			fprintf(f, "\">");
			xml_text(f, t->name);
			fprintf(f, ": ");
			xml_text(f, t->reason);
			fprintf(f, "</failure>\n");
		} else {
			fprintf(f, "      <system-out>%s: ", verdict_names[t->verdict]);
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
		fprintf(f, "` | %s | %s | ",
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
	static const char hdr[] = "| task | baseline speedup | current speedup | |\n|---|---:|---:|---|\n";

	fprintf(f, "## crucible gate: %s\n\n**%d regressed**, %d improved, %d unchanged within "
		"noise, %d new (threshold %.1f%%).  \n", g->failed ? "❌ FAIL" : "✅ PASS",
		g->n_regressed, g->n_improved, g->n_unchanged, g->n_new, o->threshold * 100);
	floor_line(f, g, o);
	if (g->n_regressed)
		fprintf(f, "\n### Regressed\n\n%s", hdr), md_rows(f, g, RV_REGRESSED);
	if (g->n_improved)
		fprintf(f, "\n### Improved\n\n%s", hdr), md_rows(f, g, RV_IMPROVED);
	if (g->n_new)
		fprintf(f, "\n### New\n\n%s", hdr), md_rows(f, g, RV_NEW);
	if (g->n_unchanged) {
		fprintf(f, "\n<details><summary>%d unchanged within noise</summary>\n\n%s",
			g->n_unchanged, hdr);
		md_rows(f, g, RV_UNCHANGED);
		fprintf(f, "\n</details>\n");
	}
}
