/* report_gate.c — `crucible gate`: per task, the compared candidates of a
 * baseline and a current results.csv (the same source when both runs have
 * it, else each side's best by a robust statistic); a correctness verdict
 * (LOST, MISSING, FIXED, NEW, FAILING) or, for a task correct in both, a
 * speed verdict in nvbench's terms: SAME, FASTER, SLOWER or INCONCLUSIVE.
 * The gate fails only on LOST, MISSING, a SLOWER, or a fast_1 floor that is
 * surely missed. The decision rule (docs/REPORTS.md "The gate"):
 *
 * - With samples on both sides (per-sample speedups from samples.csv, or
 *   per-run speedups pooled by --confirm): two tests, each at alpha / 2
 *   (Bonferroni): the Mann-Whitney rank test on the whole distributions and
 *   Yuen's test of 20%-trimmed means of the log speedups (magnitudes, robust
 *   to a few outliers a side); a change needs either AND the ratio of medians
 *   beyond the threshold. Fewer than 3 a side: INCONCLUSIVE (too few).
 * - Otherwise the rows' intervals: ratio = cur/base, ratio interval
 *   [cur_lo/base_hi, cur_hi/base_lo]. A change needs the interval clear of 1
 *   and the point beyond the threshold; when either row is noisy, the whole
 *   interval beyond the threshold ("far outside the noise"). A row timed
 *   with fewer than 3 samples counts as noisy (no estimate of its noise).
 * - No change decided: INCONCLUSIVE when either row is noisy, else SAME.
 *
 * The fast_1 floor counts a task fast only when a current candidate's speedup
 * is surely above 1 by the same tests (its baseline times against its own). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"
#include "tasks/task_registry.h"

const char *const report_verdict_names[RV_COUNT] = {
	"SAME", "FASTER", "SLOWER", "INCONCLUSIVE", "LOST", "MISSING", "FIXED", "NEW", "FAILING",
};
const char *const report_method_names[4] = { "none", "intervals", "samples", "re-runs" };

void report_gate_opts_default(struct report_gate_opts *o)
{
	memset(o, 0, sizeof *o);
	/* what separate runs of the same files reproduce on a shared machine:
	 * trusted figures agreed within +-15% (docs/REPORTS.md, "Timing under
	 * load"), and at 5% three gates of one file against itself out of three
	 * called a task SLOWER (-5.9% to -10%, each run's interval within +-5%:
	 * where the buffers landed moves a figure between runs) */
	o->threshold = 0.15;
	o->min_fast1 = NAN;
	o->alpha = 0.01;
	o->crucible = "/proc/self/exe";
}

int report_name_cmp(const char *a, const char *b)
{
	return strverscmp(a, b);
}

/* One candidate row of a task and its rank among the task's rows: correct
 * first, then trusted timing (not noisy) before noisy, then the robust score
 * (the median of its per-sample speedups, else the low end of its speedup
 * interval, else its speedup), then the candidate path (deterministic). */
struct best {
	const char *name;
	const struct report_row *row;
	int ok, trusted;
	double score;
};

/* A task's rows in rank order: rows[0] is the side's best. */
struct group {
	const char *name;
	struct best *rows;
	size_t n;
};

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

/* The median of a row's per-sample speedups (base_k / cand_k), NAN without. */
static double row_sample_median(const struct report_row *r)
{
	size_t n = r->n_cand < r->n_base ? r->n_cand : r->n_base;
	double *v, m;

	if (!n || !(v = malloc(n * sizeof *v)))
		return NAN;
	for (size_t k = 0; k < n; k++)
		v[k] = r->s_base[k] / r->s_cand[k];
	m = report_median(v, n);
	free(v);
	return m;
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

static int cmp_rank(const void *a, const void *b)
{
	const struct best *x = a, *y = b;
	int c = report_name_cmp(x->name, y->name);

	if (c)
		return c;
	if (x->ok != y->ok)
		return y->ok - x->ok;
	if (x->trusted != y->trusted)
		return y->trusted - x->trusted;
	if (isnan(x->score) != isnan(y->score))
		return isnan(x->score) ? 1 : -1;
	if (!isnan(x->score) && x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return strcmp(x->row->candidate, y->row->candidate);
}

/* --tasks: a comma-separated list of task names or sets (the part before
 * '/'); NULL keeps every task. */
/* The rows of the run (selected tasks) in rank order, *rows, and one group
 * per task in natural order, *out; both owned by the caller (*out points
 * into *rows). */
static enum cr_status groups_of(const struct report_run *run, int strict, const char *sel,
				struct best **rows, struct group **out, size_t *n, struct cr_err *e)
{
	struct report_opts o;
	struct best *v = malloc((run->n_rows ? run->n_rows : 1) * sizeof *v);
	struct group *g = malloc((run->n_rows ? run->n_rows : 1) * sizeof *g);
	size_t m = 0, k = 0;

	*rows = NULL;
	*out = NULL;
	*n = 0;
	if (!v || !g) {
		free(v);
		free(g);
		return cr_errf(e, CR_ENOMEM, "out of memory");
	}
	memset(&o, 0, sizeof o);
	o.strict_backward = strict;
	for (size_t i = 0; i < run->n_rows; i++) {
		const struct report_row *r = &run->rows[i];
		double sm;
		if (sel && !task_spec_matches(sel, r->task))
			continue;
		v[m].name = r->task;
		v[m].row = r;
		v[m].ok = report_row_correct(r, &o);
		v[m].trusted = row_noisy(r) != 1;
		sm = row_sample_median(r);
		v[m].score = !v[m].ok ? NAN : !isnan(sm) ? sm :
			     !isnan(r->speedup_lo) && !few_samples(r) ? r->speedup_lo : r->speedup;
		m++;
	}
	qsort(v, m, sizeof *v, cmp_rank);
	for (size_t i = 0; i < m; i++) {
		if (k && !strcmp(g[k - 1].name, v[i].name)) {
			g[k - 1].n++;
			continue;
		}
		g[k++] = (struct group){ v[i].name, &v[i], 1 };
	}
	*rows = v;
	*out = g;
	*n = k;
	return CR_OK;
}

/* The compared pair of a task present on both sides, anchored on the
 * baseline's best (rows ranked: correct, trusted, then the robust
 * statistic): that same source (source_sha256) in the current run when it
 * is there and correct, so two runs of the same files compare one kernel
 * however the noise ranked the others; else (the file changed or went) the
 * current run's best. Not the first source the two runs share: a task whose
 * best file was slowed while another file stayed would compare the one that
 * stayed and miss the regression. *same: 1 when the sources match. */
static void pick_pair(const struct group *B, const struct group *C, const struct best **b,
		      const struct best **c, int *same)
{
	const char *sha = B->rows[0].row->sha256;

	*b = &B->rows[0];
	*c = &C->rows[0];
	*same = 0;
	if (!B->rows[0].ok || !*sha)
		return;
	for (size_t j = 0; j < C->n && C->rows[j].ok; j++)
		if (!strcmp(C->rows[j].row->sha256, sha)) {
			*c = &C->rows[j];
			*same = 1;
			return;
		}
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One side of Yuen's test on log values: the 20%-trimmed mean, the squared
 * standard error d = (n - 1) s_w^2 / (h (h - 1)) from the winsorized
 * variance s_w^2, and h, the values left after trimming. 0 on failure. */
static int yuen_side(const double *v, size_t n, double *tm, double *d, double *h)
{
	double *x = malloc(n * sizeof *x), wm = 0, ss = 0;
	size_t g = (size_t)floor(0.2 * (double)n), k = n - 2 * g;

	if (!x)
		return 0;
	for (size_t i = 0; i < n; i++)
		x[i] = log(v[i]);
	qsort(x, n, sizeof *x, cmp_double);
	*tm = 0;
	for (size_t i = g; i < n - g; i++)
		*tm += x[i] / (double)k;
	for (size_t i = 0; i < n; i++)
		wm += x[i < g ? g : i >= n - g ? n - g - 1 : i] / (double)n;
	for (size_t i = 0; i < n; i++) {
		double w = x[i < g ? g : i >= n - g ? n - g - 1 : i] - wm;
		ss += w * w;
	}
	*d = ss / ((double)k * (double)(k - 1));
	*h = (double)k;
	free(x);
	return 1;
}

/* Two-sided p of Yuen's test that the 20%-trimmed means of log a and log b
 * are equal (Welch's degrees of freedom). It compares magnitudes, like a t
 * test, but the trimming makes it robust to up to 20% outliers at each end
 * of a side (Wilcox, "Introduction to Robust Estimation and Hypothesis
 * Testing", ch. 5). NAN with fewer than 3 a side or non-positive values. */
static double yuen_log(const double *a, size_t na, const double *b, size_t nb)
{
	double ta, da, ha, tb, db, hb, t, df;

	if (na < 3 || nb < 3)
		return NAN;
	for (size_t i = 0; i < na; i++)
		if (!(a[i] > 0))
			return NAN;
	for (size_t i = 0; i < nb; i++)
		if (!(b[i] > 0))
			return NAN;
	if (!yuen_side(a, na, &ta, &da, &ha) || !yuen_side(b, nb, &tb, &db, &hb))
		return NAN;
	if (da + db <= 0)
		return ta == tb ? 1 : 0;
	t = fabs(ta - tb) / sqrt(da + db);
	df = (da + db) * (da + db) / (da * da / (ha - 1) + db * db / (hb - 1));
	return report_t_two_sided(t, df);
}

/* The verdicts' test of a against b (speedup observations, or times): the
 * Mann-Whitney p and Yuen's p, each Bonferroni-adjusted for the two
 * (x2); *p the smaller. A difference needs *p < alpha and the ratio of
 * medians beyond what the caller asks. */
static void two_tests(const double *a, size_t na, const double *b, size_t nb, double *p,
		      double *p_mw, double *p_trim)
{
	*p_mw = report_mann_whitney(a, na, b, nb);
	*p_trim = yuen_log(a, na, b, nb);
	*p = fmin(1, 2 * (isnan(*p_trim) ? *p_mw : isnan(*p_mw) ? *p_trim :
			  fmin(*p_mw, *p_trim)));
}

void report_gate_decide(struct report_gate_task *t, const struct report_gate_opts *o)
{
	double thr = o->threshold;
	int noisy = t->base_noisy == 1 || t->cur_noisy == 1;
	int slower = 0, faster = 0, few = 0;
	const char *how;
	char extra[160] = "";

	t->p = t->p_mw = t->p_trim = NAN;
	t->ratio_lo = t->ratio_hi = NAN;
	if (t->n_obs_base > 0 && t->n_obs_cur > 0) {
		/* the figure compared is the median observation: it is the one
		 * every output shows (the row's own interval is of another
		 * statistic, so it is not carried) */
		t->base_sp = median_copy(t->obs_base, t->n_obs_base);
		t->cur_sp = median_copy(t->obs_cur, t->n_obs_cur);
		t->base_lo = t->base_hi = t->cur_lo = t->cur_hi = NAN;
		t->method = t->reruns ? RM_RERUNS : RM_SAMPLES;
		t->ratio = t->cur_sp / t->base_sp;
		few = t->n_obs_base < 3 || t->n_obs_cur < 3;
		if (!few) {
			two_tests(t->obs_cur, t->n_obs_cur, t->obs_base, t->n_obs_base, &t->p,
				  &t->p_mw, &t->p_trim);
			/* a figure timing did not trust decides only far outside
			 * the noise: twice the threshold (under load one file
			 * against itself moved -14.6% and +17.7% with p < alpha,
			 * both rows flagged noisy); re-runs are the confirmation
			 * and decide at the threshold */
			double lim = noisy && !t->reruns ? 2 * thr : thr;
			slower = t->p < o->alpha && t->ratio < 1 - lim;
			faster = t->p < o->alpha && t->ratio > 1 + lim;
		}
		snprintf(extra, sizeof extra, "; p = %.2g (Mann-Whitney %.2g, trimmed means %.2g, "
			 "each x2), %zu vs %zu %s%s", t->p, t->p_mw, t->p_trim, t->n_obs_base,
			 t->n_obs_cur, t->n_obs_cur > (size_t)t->reruns + 1 ? "samples" : "runs",
			 few ? ": too few to test" : "");
		noisy = noisy || few;
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
	how = slower ? "slower" : faster ? "faster" : few ? "inconclusive, too few samples" :
	      noisy ? "inconclusive, timing noisy" : "same within noise";
	snprintf(t->reason, sizeof t->reason, "%s: %sspeedup %.3f -> %.3f (%+.1f%%)%s", how,
		 t->method == RM_INTERVALS ? "" : "median ", t->base_sp, t->cur_sp,
		 (t->ratio - 1) * 100, extra);
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
			 report_status_name(t->cur_row->status));
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

/* Whether a correct row's speedup is above 1, by the verdicts' test: 1
 * surely, 0 surely not, -1 undecided. With samples (3 or more a side) its
 * baseline times against its candidate times (Mann-Whitney and trimmed
 * means, each at alpha / 2); else its interval, which must clear 1 (a
 * trusted row) or 1 -+ the threshold (a noisy one); a trusted row without
 * an interval by its speedup alone; a noisy one without is undecided. */
static int row_fast(const struct report_row *r, const struct report_gate_opts *o)
{
	double thr = o->threshold;
	int noisy = row_noisy(r) == 1;

	if (r->n_cand >= 3 && r->n_base >= 3) {
		double p, pm, pt, sp = median_copy(r->s_base, r->n_base) /
				       median_copy(r->s_cand, r->n_cand);
		two_tests(r->s_base, r->n_base, r->s_cand, r->n_cand, &p, &pm, &pt);
		return !(p < o->alpha) || sp == 1 ? -1 : sp > 1;
	}
	if (r->n_cand || r->n_base)
		return -1;
	if (isnan(r->speedup))
		return 0;
	if (!isnan(r->speedup_lo) && !isnan(r->speedup_hi) && !few_samples(r)) {
		if (r->speedup_lo > (noisy ? 1 + thr : 1))
			return 1;
		if (r->speedup_hi < (noisy ? 1 - thr : 1))
			return 0;
		return -1;
	}
	return noisy ? -1 : r->speedup > 1;
}

/* The current run's best-of-n fast_1 of a task: surely fast when one of its
 * correct candidates is, surely not when none can be, else undecided. */
static int task_fast(const struct group *C, const struct report_gate_opts *o)
{
	int any_undecided = 0;

	for (size_t k = 0; C && k < C->n && C->rows[k].ok; k++) {
		int f = row_fast(C->rows[k].row, o);
		if (f == 1)
			return 1;
		any_undecided |= f < 0;
	}
	return any_undecided ? -1 : 0;
}

static int any_point_fast(const struct group *G)
{
	for (size_t k = 0; G && k < G->n && G->rows[k].ok; k++)
		if (G->rows[k].row->speedup > 1)
			return 1;
	return 0;
}

void report_gate_recount(struct report_gate *g)
{
	memset(g->counts, 0, sizeof g->counts);
	g->n_compared = g->n_decided = 0;
	for (size_t i = 0; i < g->n; i++) {
		enum report_verdict v = g->tasks[i].verdict;
		g->counts[v]++;
		if (v == RV_SAME || v == RV_FASTER || v == RV_SLOWER || v == RV_INCONCLUSIVE) {
			g->n_compared++;
			g->n_decided += v != RV_INCONCLUSIVE;
		}
	}
	g->failed = g->counts[RV_LOST] + g->counts[RV_MISSING] + g->counts[RV_SLOWER] > 0 ||
		    g->floor_failed;
}

/* The floor: met when the surely fast tasks reach it, failed only when the
 * surely fast and the undecided together cannot, else inconclusive. */
static void floor_decide(struct report_gate *g, const struct report_gate_opts *o)
{
	double n = (double)g->n;

	g->floor_state = 0;
	if (isnan(o->min_fast1))
		return;
	if ((double)g->n_fast_sure / n >= o->min_fast1)
		g->floor_state = 1;
	else if ((double)(g->n_fast_sure + g->n_fast_undecided) / n < o->min_fast1)
		g->floor_state = 3;
	else
		g->floor_state = 2;
	g->floor_failed = g->floor_state == 3;
}

/* The baseline's drift between the runs: the current run's task baseline
 * median time over the baseline run's (both rows' baseline_us). */
static void drift(struct report_gate *g, struct report_gate_task *t, double thr)
{
	double a = t->base_row ? t->base_row->baseline_us : NAN;
	double b = t->cur_row ? t->cur_row->baseline_us : NAN;

	t->base_drift = a > 0 && b > 0 && isfinite(a) && isfinite(b) ? b / a : NAN;
	if (isnan(t->base_drift))
		return;
	g->drift_gm += log(t->base_drift);
	g->n_drift++;
	g->n_drift_beyond += t->base_drift > 1 + thr || t->base_drift < 1 / (1 + thr);
}

enum cr_status report_gate_compute(const struct report_run *base, const struct report_run *cur,
				   const struct report_gate_opts *o, struct report_gate *g,
				   struct cr_err *e)
{
	struct best *RB = NULL, *RC = NULL;
	struct group *B = NULL, *C = NULL;
	size_t nb = 0, nc = 0, i = 0, j = 0;
	int fast_b = 0, fast_c = 0;
	int samples = base->has_samples && cur->has_samples;
	enum cr_status st;

	memset(g, 0, sizeof *g);
	g->base_untasked = base->n_untasked;
	g->cur_untasked = cur->n_untasked;
	for (size_t r = 0; r < base->n_rows; r++)
		g->base_timed += !isnan(base->rows[r].speedup) || base->rows[r].n_cand;
	for (size_t r = 0; r < cur->n_rows; r++)
		g->cur_timed += !isnan(cur->rows[r].speedup) || cur->rows[r].n_cand;
	/* a speed floor on a run that was not timed cannot be checked: not a
	 * fast_1 of 0 that fails, not a pass (issue 32, unknown is not zero) */
	if (!isnan(o->min_fast1) && !g->cur_timed)
		return cr_errf(e, CR_EUSAGE, "--min-fast1: the current run %s has no timed row (run "
			       "without timing?): its fast_1 is not measured, so the floor cannot be "
			       "checked", cur->path);
	if ((st = groups_of(base, o->strict_backward, o->tasks, &RB, &B, &nb, e)) != CR_OK ||
	    (st = groups_of(cur, o->strict_backward, o->tasks, &RC, &C, &nc, e)) != CR_OK)
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
		const struct best *bb = c <= 0 ? &B[i].rows[0] : NULL;
		const struct best *cb = c >= 0 ? &C[j].rows[0] : NULL;
		t->base_sp = t->base_lo = t->base_hi = NAN;
		t->cur_sp = t->cur_lo = t->cur_hi = NAN;
		t->ratio = t->ratio_lo = t->ratio_hi = t->p = t->p_ruled_out = NAN;
		t->p_mw = t->p_trim = t->base_drift = NAN;
		t->base_noisy = t->cur_noisy = -1;
		if (bb && cb)
			pick_pair(&B[i], &C[j], &bb, &cb, &t->same_source);
		if (bb) {
			t->name = bb->name;
			side_init(t, 0, bb);
		}
		if (cb) {
			t->name = cb->name;
			side_init(t, 1, cb);
		}
		t->fast_state = task_fast(cb ? &C[j] : NULL, o);
		fast_b += any_point_fast(bb ? &B[i] : NULL);
		fast_c += any_point_fast(cb ? &C[j] : NULL);
		g->n_fast_sure += t->fast_state == 1;
		g->n_fast_not += t->fast_state == 0;
		g->n_fast_undecided += t->fast_state < 0;
		i += bb != NULL;
		j += cb != NULL;
		drift(g, t, o->threshold);
		if (classify_correctness(t)) {
			/* per-sample speedups only when both rows have samples: one
			 * kind of observation a side */
			if (samples && t->base_row->n_cand && t->base_row->n_base &&
			    t->cur_row->n_cand && t->cur_row->n_base &&
			    ((st = row_obs(t, 0, t->base_row, e)) != CR_OK ||
			     (st = row_obs(t, 1, t->cur_row, e)) != CR_OK))
				goto out;
			report_gate_decide(t, o);
		}
	}
	g->drift_gm = g->n_drift ? exp(g->drift_gm / g->n_drift) : NAN;
	g->fast1 = (double)fast_c / (double)g->n;
	g->base_fast1 = (double)fast_b / (double)g->n;
	floor_decide(g, o);
	report_gate_recount(g);
out:
	free(RB);
	free(RC);
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
