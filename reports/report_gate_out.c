/* report_gate_out.c — the gate's printers (text with widths from the data,
 * JUnit XML, a pull-request comment in markdown, json) and --confirm: the
 * re-runs of suspect candidates through `crucible eval`, pooled and decided
 * again (docs/REPORTS.md "Confirming a regression"). Printers only print. */
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
			"s:o, s:o, s:o, s:o, s:i, s:I, s:I, s:s}",
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
			"reruns", t->reruns, "baseline_observations", (json_int_t)t->n_obs_base,
			"current_observations", (json_int_t)t->n_obs_cur, "reason", t->reason));
	}
	json_object_set_new(root, "result", json_string(g->failed ? "fail" : "pass"));
	json_object_set_new(root, "threshold", json_real(o->threshold));
	json_object_set_new(root, "alpha", json_real(o->alpha));
	json_object_set_new(root, "confirm", json_integer(o->confirm));
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

/* --confirm ------------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

/* Runs `crucible eval CAND --out DIR ARGS...` (output to DIR/eval.log). */
static enum cr_status run_eval(const struct report_gate_opts *o, const char *cand,
			       const char *dir, struct cr_err *e)
{
	char **argv = calloc(o->n_eval_args + 6, sizeof *argv), logp[4200];
	size_t n = 0;
	int status;
	pid_t pid;

	if (!argv)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	argv[n++] = "crucible";
	argv[n++] = "eval";
	argv[n++] = (char *)cand;
	argv[n++] = "--out";
	argv[n++] = (char *)dir;
	for (size_t i = 0; i < o->n_eval_args; i++)
		argv[n++] = o->eval_args[i];
	snprintf(logp, sizeof logp, "%s.log", dir);
	pid = fork();
	if (pid < 0) {
		free(argv);
		return cr_errf(e, CR_EIO, "--confirm: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (!freopen(logp, "w", stdout) || !freopen(logp, "a", stderr))
			_exit(126);
		execv(o->crucible, argv);
		fprintf(stderr, "cannot run %s: %s\n", o->crucible, strerror(errno));
		_exit(127);
	}
	free(argv);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cr_errf(e, CR_EIO, "--confirm: waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127))
		return cr_errf(e, CR_EINPUT, "--confirm: cannot run %s eval (see %s)",
			       o->crucible, logp);
	if (WIFSIGNALED(status))
		return cr_errf(e, CR_EIO, "--confirm: %s eval %s killed by signal %d (see %s)",
			       o->crucible, cand, WTERMSIG(status), logp);
	return CR_OK;
}

/* One re-run of row r: appends its speedup observations to side of t.
 * *ok is 0 when the re-run was not correct or had no speedup. */
static enum cr_status rerun_one(struct report_gate_task *t, int side, const struct report_row *r,
				const struct report_gate_opts *o, int samples, const char *dir,
				int *ok, struct cr_err *e)
{
	struct report_run run;
	char csv[4200];
	enum cr_status st;
	const struct report_row *hit = NULL;
	struct report_opts ro;

	*ok = 0;
	if ((st = run_eval(o, r->candidate, dir, e)) != CR_OK)
		return st;
	snprintf(csv, sizeof csv, "%s/results.csv", dir);
	if ((st = report_run_load(csv, &run, e)) != CR_OK)
		return cr_errf(e, st, "--confirm: the re-run of %s wrote no usable results "
			       "(%s; log in %s.log)", r->candidate, e->msg, dir);
	if (samples && (st = report_run_load_samples(&run, e)) != CR_OK)
		goto out;
	for (size_t i = 0; i < run.n_rows && !hit; i++)
		if (!strcmp(run.rows[i].candidate, r->candidate))
			hit = &run.rows[i];
	if (!hit) {
		st = cr_errf(e, CR_EINPUT, "--confirm: the re-run of %s has no row for it (log in "
			     "%s.log)", r->candidate, dir);
		goto out;
	}
	if (*r->sha256 && strcmp(hit->sha256, r->sha256)) {
		st = cr_errf(e, CR_EINPUT, "--confirm: %s changed since the run (source_sha256 "
			     "%.12s… then, %.12s… now)", r->candidate, r->sha256, hit->sha256);
		goto out;
	}
	memset(&ro, 0, sizeof ro);
	ro.strict_backward = o->strict_backward;
	if (!report_row_correct(hit, &ro) || isnan(hit->speedup))
		goto out;
	*ok = 1;
	if (samples) {
		if (!run.has_samples) {
			st = cr_errf(e, CR_EINPUT, "--confirm: the re-run of %s wrote no samples.csv "
				     "but the gated runs have one", r->candidate);
			goto out;
		}
		size_t n = hit->n_cand < hit->n_base ? hit->n_cand : hit->n_base;
		for (size_t k = 0; k < n && st == CR_OK; k++)
			st = report_gate_obs_push(t, side, hit->s_base[k] / hit->s_cand[k], e);
	} else {
		st = report_gate_obs_push(t, side, hit->speedup, e);
	}
	if (hit->noisy == 1)
		*(side ? &t->cur_noisy : &t->base_noisy) = 1;
out:
	report_run_release(&run);
	return st;
}

/* The smallest two-sided Mann-Whitney p of na vs nb observations (perfect
 * separation): below it no difference can be significant. */
static double min_p(size_t na, size_t nb)
{
	double *v = malloc((na + nb + 1) * sizeof *v), p;

	if (!v)
		return NAN;
	for (size_t i = 0; i < na + nb; i++)
		v[i] = (double)i;
	p = report_mann_whitney(v, na, v + na, nb);
	free(v);
	return p;
}

static int suspect(const struct report_gate_task *t, const struct report_gate_opts *o)
{
	return t->verdict == RV_SLOWER ||
	       (t->verdict == RV_INCONCLUSIVE && !report_gate_slowdown_excluded(t, o));
}

enum cr_status report_gate_confirm(struct report_gate *g, const struct report_gate_opts *o,
				   FILE *log, struct cr_err *e)
{
	char tmpl[] = "/tmp/crucible-gate-XXXXXX", dir[4200];
	const char *tmp = getenv("TMPDIR");
	char *root;
	enum cr_status st = CR_OK;
	int made = 0;

	if (o->confirm <= 0)
		return CR_OK;
	if (tmp && *tmp) {
		root = malloc(strlen(tmp) + sizeof "/crucible-gate-XXXXXX");
		if (!root)
			return cr_errf(e, CR_ENOMEM, "out of memory");
		sprintf(root, "%s/crucible-gate-XXXXXX", tmp);
	} else if (!(root = strdup(tmpl))) {
		return cr_errf(e, CR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < g->n && st == CR_OK; i++) {
		struct report_gate_task *t = &g->tasks[i];
		/* the baseline is re-run too when it is the same file, unchanged
		 * (access() only; a changed file is caught by its hash) */
		int base_too = access(t->base_row ? t->base_row->candidate : "", R_OK) == 0;
		int bad = 0, bad_base = 0, samples = t->n_obs_base > 0 && t->n_obs_cur > 0, ok;
		if (!suspect(t, o))
			continue;
		if (!made && !(made = mkdtemp(root) != NULL)) {
			st = cr_errf(e, CR_EIO, "--confirm: cannot make %s: %s", root, strerror(errno));
			break;
		}
		if (!samples) {
			/* run-level speedups: the original rows are the first observations */
			if ((st = report_gate_obs_push(t, 0, t->base_sp, e)) != CR_OK ||
			    (st = report_gate_obs_push(t, 1, t->cur_sp, e)) != CR_OK)
				break;
		}
		if (log && min_p(t->n_obs_base + (base_too ? (size_t)o->confirm : 0),
				 t->n_obs_cur + (size_t)o->confirm) >= o->alpha)
			fprintf(log, "crucible gate: warning: %zu vs %zu observations can never reach "
				"p < %g (Mann-Whitney); %s cannot be confirmed, raise --confirm\n",
				t->n_obs_base + (base_too ? (size_t)o->confirm : 0),
				t->n_obs_cur + (size_t)o->confirm, o->alpha, t->name);
		if (log)
			fprintf(log, "crucible gate: confirming %s (%s): %d re-run(s) of %s%s\n",
				t->name, report_verdict_names[t->verdict], o->confirm,
				t->cur_row->candidate, base_too ? " and of the baseline candidate" : "");
		/* baseline and current alternate, so both see the same load */
		for (int k = 0; k < o->confirm && st == CR_OK; k++) {
			if (base_too) {
				snprintf(dir, sizeof dir, "%s/t%zu-base-%d", root, i, k);
				st = rerun_one(t, 0, t->base_row, o, samples, dir, &ok, e);
				if (st != CR_OK)
					break;
				bad_base += !ok;
			}
			snprintf(dir, sizeof dir, "%s/t%zu-cur-%d", root, i, k);
			st = rerun_one(t, 1, t->cur_row, o, samples, dir, &ok, e);
			bad += !ok;
		}
		if (st != CR_OK)
			break;
		t->reruns = o->confirm;
		report_gate_decide(t, o);
		{
			size_t l = strlen(t->reason);
			snprintf(t->reason + l, sizeof t->reason - l, "; after --confirm %d%s%s%s",
				 o->confirm, base_too ? " (both sides)" : " (current only)",
				 bad ? ", current not correct on a re-run" : "",
				 bad_base ? ", baseline not correct on a re-run" : "");
		}
		if (bad) {
			/* a candidate correct once and not on a re-run is not a speed
			 * question: report it as a correctness loss */
			t->verdict = RV_LOST;
		}
	}
	report_gate_recount(g);
	if (made)
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(root);
	return st;
}
