/* report_gate.c — `crucible gate`: per task, the best candidate (correct,
 * highest speedup) of a baseline and a current results.csv; a correctness
 * verdict (LOST, MISSING, FIXED, NEW, FAILING) or, for a task correct in
 * both, a speed verdict in nvbench's terms: SAME, FASTER, SLOWER or
 * INCONCLUSIVE. The gate fails only on LOST, MISSING, a confirmed SLOWER,
 * or the fast_1 floor. The decision rule (docs/REPORTS.md "The gate"):
 *
 * - With >= 3 speedup observations a side (per-sample speedups from
 *   samples.csv, or per-run speedups pooled by --confirm): a change needs the
 *   two-sided Mann-Whitney p < alpha AND the ratio of medians beyond the
 *   threshold.
 * - Otherwise the rows' intervals: ratio = cur/base, ratio interval
 *   [cur_lo/base_hi, cur_hi/base_lo]. A change needs the interval clear of 1
 *   and the point beyond the threshold; when either row is noisy, the whole
 *   interval beyond the threshold ("far outside the noise"). A row timed
 *   with fewer than 3 samples counts as noisy (no estimate of its noise).
 * - No change decided: INCONCLUSIVE when either row is noisy, else SAME. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

const char *const report_verdict_names[RV_COUNT] = {
	"SAME", "FASTER", "SLOWER", "INCONCLUSIVE", "LOST", "MISSING", "FIXED", "NEW", "FAILING",
};
const char *const report_method_names[4] = { "none", "intervals", "samples", "re-runs" };

void report_gate_opts_default(struct report_gate_opts *o)
{
	memset(o, 0, sizeof *o);
	o->threshold = 0.05;
	o->min_fast1 = NAN;
	o->alpha = 0.01;
	o->crucible = "/proc/self/exe";
}

int report_name_cmp(const char *a, const char *b)
{
	return strverscmp(a, b);
}

struct best {
	const char *name;
	const struct report_row *row;
	int ok;
	double sp;
};

static int cmp_best(const void *a, const void *b)
{
	return report_name_cmp(((const struct best *)a)->name, ((const struct best *)b)->name);
}

/* --tasks: a comma-separated list of task names or sets (the part before
 * '/'); NULL keeps every task. */
static int task_selected(const char *list, const char *task)
{
	size_t tl = strlen(task);

	while (list && *list) {
		const char *end = strchr(list, ',');
		size_t l = end ? (size_t)(end - list) : strlen(list);
		if (l && l <= tl && !strncmp(list, task, l) && (task[l] == '\0' || task[l] == '/'))
			return 1;
		list += l + (end != NULL);
	}
	return !list;
}

/* One struct best per task of the run, in natural order; *out owned by caller. */
static enum cr_status best_per_task(const struct report_run *run, int strict, const char *sel,
				    struct best **out, size_t *n, struct cr_err *e)
{
	struct report_opts o;
	struct best *v = malloc((run->n_rows ? run->n_rows : 1) * sizeof *v);
	size_t m = 0, kept;

	*out = NULL;
	*n = 0;
	if (!v)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	memset(&o, 0, sizeof o);
	o.strict_backward = strict;
	for (size_t i = 0; i < run->n_rows; i++) {
		const struct report_row *r = &run->rows[i];
		if (!task_selected(sel, r->task))
			continue;
		v[m].name = r->task;
		v[m].row = r;
		v[m].ok = report_row_correct(r, &o);
		v[m].sp = v[m].ok ? r->speedup : NAN;
		m++;
	}
	qsort(v, m, sizeof *v, cmp_best);
	kept = m;
	m = 0;
	for (size_t i = 0; i < kept; i++) {
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

enum cr_status report_gate_obs_push(struct report_gate_task *t, int side, double x,
				    struct cr_err *e)
{
	double **v = side ? &t->obs_cur : &t->obs_base;
	size_t *n = side ? &t->n_obs_cur : &t->n_obs_base;
	double *nv = realloc(*v, (*n + 1) * sizeof *nv);

	if (!nv)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	nv[(*n)++] = x;
	*v = nv;
	return CR_OK;
}

/* Per-sample speedups of a row: the k-th baseline sample over the k-th
 * candidate sample (they alternate in time, so a pair shares the load). */
static enum cr_status row_obs(struct report_gate_task *t, int side, const struct report_row *r,
			      struct cr_err *e)
{
	size_t n = r->n_cand < r->n_base ? r->n_cand : r->n_base;
	enum cr_status st = CR_OK;

	for (size_t k = 0; k < n && st == CR_OK; k++)
		st = report_gate_obs_push(t, side, r->s_base[k] / r->s_cand[k], e);
	return st;
}

static double median_copy(const double *v, size_t n)
{
	double *c = malloc((n ? n : 1) * sizeof *c), m;

	if (!c)
		return NAN;
	memcpy(c, v, n * sizeof *c);
	m = report_median(c, n);
	free(c);
	return m;
}

void report_gate_decide(struct report_gate_task *t, const struct report_gate_opts *o)
{
	double thr = o->threshold;
	int noisy = t->base_noisy == 1 || t->cur_noisy == 1;
	int slower = 0, faster = 0;
	const char *how;
	char extra[96] = "";

	t->p = NAN;
	t->ratio_lo = t->ratio_hi = NAN;
	if (t->n_obs_base >= 3 && t->n_obs_cur >= 3) {
		double mb = median_copy(t->obs_base, t->n_obs_base);
		double mc = median_copy(t->obs_cur, t->n_obs_cur);
		t->method = t->reruns ? RM_RERUNS : RM_SAMPLES;
		t->ratio = mc / mb;
		t->p = report_mann_whitney(t->obs_cur, t->n_obs_cur, t->obs_base, t->n_obs_base);
		slower = t->p < o->alpha && t->ratio < 1 - thr;
		faster = t->p < o->alpha && t->ratio > 1 + thr;
		snprintf(extra, sizeof extra, "; Mann-Whitney p = %.2g, %zu vs %zu %s", t->p,
			 t->n_obs_base, t->n_obs_cur,
			 t->n_obs_cur > (size_t)t->reruns + 1 ? "samples" : "runs");
	} else if (isnan(t->base_sp) || isnan(t->cur_sp)) {
		t->method = RM_NONE;
		t->ratio = NAN;
		t->verdict = noisy ? RV_INCONCLUSIVE : RV_SAME;
		snprintf(t->reason, sizeof t->reason, "correct; no speedup to compare");
		return;
	} else {
		int have = !isnan(t->cur_lo) && !isnan(t->cur_hi) && !isnan(t->base_lo) &&
			   !isnan(t->base_hi) && t->base_lo > 0;
		t->method = RM_INTERVALS;
		t->ratio = t->cur_sp / t->base_sp;
		if (have) {
			t->ratio_lo = t->cur_lo / t->base_hi;
			t->ratio_hi = t->cur_hi / t->base_lo;
			snprintf(extra, sizeof extra, "; ratio interval [%.3f, %.3f]", t->ratio_lo,
				 t->ratio_hi);
		}
		if (noisy) {
			slower = have && t->ratio_hi < 1 - thr;
			faster = have && t->ratio_lo > 1 + thr;
		} else {
			slower = (!have || t->ratio_hi < 1) && t->ratio < 1 - thr;
			faster = (!have || t->ratio_lo > 1) && t->ratio > 1 + thr;
		}
	}
	t->verdict = slower ? RV_SLOWER : faster ? RV_FASTER : noisy ? RV_INCONCLUSIVE : RV_SAME;
	how = slower ? "slower" : faster ? "faster" : noisy ? "inconclusive, timing noisy" :
	      "same within noise";
	if (t->method == RM_INTERVALS)
		snprintf(t->reason, sizeof t->reason, "%s: speedup %.3f -> %.3f (%+.1f%%)%s", how,
			 t->base_sp, t->cur_sp, (t->ratio - 1) * 100, extra);
	else
		snprintf(t->reason, sizeof t->reason, "%s: median speedup %.3f -> %.3f (%+.1f%%)%s",
			 how, median_copy(t->obs_base, t->n_obs_base),
			 median_copy(t->obs_cur, t->n_obs_cur), (t->ratio - 1) * 100, extra);
}

/* 1 when the data rule out a slowdown beyond the threshold: the ratio
 * interval's low end is at or above 1 - threshold (intervals), or the current
 * samples are significantly above the baseline's scaled by 1 - threshold
 * (Mann-Whitney at alpha, samples and re-runs). `--confirm` re-runs every
 * INCONCLUSIVE task for which this is 0: a task whose first run looked no
 * slower may still hide a regression when the baseline itself measured slow. */
int report_gate_slowdown_excluded(const struct report_gate_task *t,
				  const struct report_gate_opts *o)
{
	double lim = 1 - o->threshold;

	if (t->method == RM_INTERVALS)
		return !isnan(t->ratio_lo) && t->ratio_lo >= lim;
	if (t->method == RM_SAMPLES || t->method == RM_RERUNS) {
		double *sb = malloc((t->n_obs_base ? t->n_obs_base : 1) * sizeof *sb), p, mb, mc;
		if (!sb)
			return 0;
		for (size_t i = 0; i < t->n_obs_base; i++)
			sb[i] = t->obs_base[i] * lim;
		p = report_mann_whitney(t->obs_cur, t->n_obs_cur, sb, t->n_obs_base);
		mb = median_copy(sb, t->n_obs_base);
		mc = median_copy(t->obs_cur, t->n_obs_cur);
		free(sb);
		return !isnan(p) && p < o->alpha && mc > mb;
	}
	return 0;
}

/* The correctness verdict; 1 when the task needs a speed verdict. */
static int classify_correctness(struct report_gate_task *t)
{
	if (!t->in_cur) {
		t->verdict = RV_MISSING;
		snprintf(t->reason, sizeof t->reason, "missing from the current run");
	} else if (!t->in_base) {
		t->verdict = RV_NEW;
		snprintf(t->reason, sizeof t->reason, "new task (%s)",
			 t->cur_ok ? "correct" : "not correct");
	} else if (t->base_ok && !t->cur_ok) {
		t->verdict = RV_LOST;
		snprintf(t->reason, sizeof t->reason, "no longer correct (%s)",
			 report_status_names[t->cur_row->status]);
	} else if (!t->base_ok && t->cur_ok) {
		t->verdict = RV_FIXED;
		snprintf(t->reason, sizeof t->reason, "now correct");
	} else if (!t->base_ok) {
		t->verdict = RV_FAILING;
		snprintf(t->reason, sizeof t->reason, "still not correct");
	} else {
		return 1;
	}
	return 0;
}

/* A row timed with fewer than 3 samples has no estimate of its noise (its
 * interval may even have zero width): it counts as noisy, without interval. */
static int few_samples(const struct report_row *r)
{
	return !isnan(r->n_samples) && r->n_samples < 3 && !isnan(r->speedup);
}

static int row_noisy(const struct report_row *r)
{
	return few_samples(r) ? 1 : r->noisy;
}

static void side_init(struct report_gate_task *t, int side, const struct best *b)
{
	const struct report_row *r = b->row;

	if (side) {
		t->in_cur = 1, t->cur_ok = b->ok, t->cur_row = r;
		t->cur_sp = b->ok ? r->speedup : NAN;
		t->cur_lo = b->ok ? r->speedup_lo : NAN;
		t->cur_hi = b->ok ? r->speedup_hi : NAN;
		t->cur_noisy = row_noisy(r);
		if (few_samples(r))
			t->cur_lo = t->cur_hi = NAN;
	} else {
		t->in_base = 1, t->base_ok = b->ok, t->base_row = r;
		t->base_sp = b->ok ? r->speedup : NAN;
		t->base_lo = b->ok ? r->speedup_lo : NAN;
		t->base_hi = b->ok ? r->speedup_hi : NAN;
		t->base_noisy = row_noisy(r);
		if (few_samples(r))
			t->base_lo = t->base_hi = NAN;
	}
}

void report_gate_recount(struct report_gate *g)
{
	memset(g->counts, 0, sizeof g->counts);
	for (size_t i = 0; i < g->n; i++)
		g->counts[g->tasks[i].verdict]++;
	g->failed = g->counts[RV_LOST] + g->counts[RV_MISSING] + g->counts[RV_SLOWER] > 0 ||
		    g->floor_failed;
}

enum cr_status report_gate_compute(const struct report_run *base, const struct report_run *cur,
				   const struct report_gate_opts *o, struct report_gate *g,
				   struct cr_err *e)
{
	struct best *B = NULL, *C = NULL;
	size_t nb = 0, nc = 0, i = 0, j = 0;
	int fast_b = 0, fast_c = 0;
	int samples = base->has_samples && cur->has_samples;
	enum cr_status st;

	memset(g, 0, sizeof *g);
	if ((st = best_per_task(base, o->strict_backward, o->tasks, &B, &nb, e)) != CR_OK ||
	    (st = best_per_task(cur, o->strict_backward, o->tasks, &C, &nc, e)) != CR_OK)
		goto out;
	if (nb == 0) {
		st = cr_errf(e, CR_EINPUT, "%s: the baseline has no candidate rows%s%s", base->path,
			     o->tasks ? " for --tasks " : "", o->tasks ? o->tasks : "");
		goto out;
	}
	g->tasks = calloc(nb + nc, sizeof *g->tasks);
	if (!g->tasks) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	while (i < nb || j < nc) {
		struct report_gate_task *t = &g->tasks[g->n++];
		int c = i >= nb ? 1 : j >= nc ? -1 : report_name_cmp(B[i].name, C[j].name);
		t->base_sp = t->base_lo = t->base_hi = NAN;
		t->cur_sp = t->cur_lo = t->cur_hi = NAN;
		t->ratio = t->ratio_lo = t->ratio_hi = t->p = t->p_ruled_out = NAN;
		t->base_noisy = t->cur_noisy = -1;
		if (c <= 0) {
			t->name = B[i].name;
			side_init(t, 0, &B[i++]);
		}
		if (c >= 0) {
			t->name = C[j].name;
			side_init(t, 1, &C[j++]);
		}
		if (classify_correctness(t)) {
			if (samples && ((st = row_obs(t, 0, t->base_row, e)) != CR_OK ||
					(st = row_obs(t, 1, t->cur_row, e)) != CR_OK))
				goto out;
			report_gate_decide(t, o);
		}
		fast_b += t->base_ok && t->base_sp > 1;
		fast_c += t->cur_ok && t->cur_sp > 1;
	}
	g->fast1 = (double)fast_c / (double)g->n;
	g->base_fast1 = (double)fast_b / (double)g->n;
	g->floor_failed = !isnan(o->min_fast1) && g->fast1 < o->min_fast1;
	report_gate_recount(g);
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
	for (size_t i = 0; g->tasks && i < g->n; i++) {
		free(g->tasks[i].obs_base);
		free(g->tasks[i].obs_cur);
		free(g->tasks[i].round_base);
		free(g->tasks[i].round_cur);
	}
	free(g->tasks);
	memset(g, 0, sizeof *g);
}
