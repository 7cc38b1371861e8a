/* report_gate_seq.c — the stopping rule of `crucible gate --confirm N` when
 * the runs have samples (docs/REPORTS.md "Confirming a regression"): after
 * each round (the baseline's candidate re-run, then the current one), one
 * look at rounds 1..k:
 *
 * - the stratified Mann-Whitney test (one stratum per round: a load that
 *   changes between rounds moves both sides of a round and cancels), two-sided
 *   p < alpha / N and the ratio beyond the threshold: SLOWER or FASTER;
 * - the same test of the current samples against the baseline's scaled by
 *   1 - threshold, one-sided p < alpha / N: a slowdown beyond the threshold is
 *   ruled out, SAME;
 * - otherwise another round, up to N; then INCONCLUSIVE.
 *
 * N looks at alpha / N each (Bonferroni) keep the chance of a false SLOWER
 * or FASTER under alpha whatever the dependence between the looks; the
 * ruled-out boundary only stops early, so it cannot add false alarms, and at
 * alpha / N a look it stops a real slowdown beyond the threshold with
 * probability under alpha. The gated rows' own samples (round 0) are not
 * used: they are what made the task a suspect. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

const char *const report_stop_names[5] = { "none", "slower", "faster", "ruled-out",
					   "undecided" };

static double median_of(const double *v, size_t n)
{
	double *c, m;

	if (!n || !(c = malloc(n * sizeof *c)))
		return NAN;
	memcpy(c, v, n * sizeof *c);
	m = report_median(c, n);
	free(c);
	return m;
}

/* The strata of rounds 1..k: one per round when the baseline was re-run,
 * else one (the current re-runs pooled against the gated baseline row). */
static size_t strata(const struct report_gate_task *t, int k, struct report_stratum *s)
{
	const size_t *rb = t->round_base, *rc = t->round_cur;

	if (!t->base_rerun) {
		s[0] = (struct report_stratum){ t->obs_cur + rc[0], rc[k] - rc[0], t->obs_base,
						rb[0] };
		return 1;
	}
	for (int i = 1; i <= k; i++)
		s[i - 1] = (struct report_stratum){ t->obs_cur + rc[i - 1], rc[i] - rc[i - 1],
						    t->obs_base + rb[i - 1], rb[i] - rb[i - 1] };
	return (size_t)k;
}

/* The geometric mean of the strata's ratios of medians (current / baseline). */
static double strata_ratio(const struct report_stratum *s, size_t n)
{
	double sum = 0;
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		if (!s[i].na || !s[i].nb)
			continue;
		sum += log(median_of(s[i].a, s[i].na) / median_of(s[i].b, s[i].nb));
		used++;
	}
	return used ? exp(sum / (double)used) : NAN;
}

static void counts(const struct report_stratum *s, size_t n, size_t *nb, size_t *nc)
{
	*nb = *nc = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i].na && s[i].nb)
			*nb += s[i].nb, *nc += s[i].na;
}

enum report_stop report_gate_look(struct report_gate_task *t, int k,
				  const struct report_gate_opts *o)
{
	int looks = o->confirm > 0 ? o->confirm : 1;
	double a = o->alpha / looks, lim = 1 - o->threshold, lo, hi, lo2, hi2;
	struct report_stratum *s = calloc((size_t)k, sizeof *s), *sc = calloc((size_t)k, sizeof *sc);
	double *scaled = malloc((t->n_obs_base ? t->n_obs_base : 1) * sizeof *scaled);
	size_t n, nb, nc, off = 0;
	enum report_stop stop = RS_NONE;
	const char *side = t->base_rerun ? "" : ", current re-runs against the gated baseline row";

	t->method = RM_RERUNS;
	t->reruns = k;
	t->p = t->p_ruled_out = t->ratio = NAN;
	t->ratio_lo = t->ratio_hi = NAN;
	if (!s || !sc || !scaled) {
		stop = k >= looks ? RS_UNDECIDED : RS_NONE;
		if (stop)
			t->verdict = RV_INCONCLUSIVE;
		snprintf(t->reason, sizeof t->reason, "inconclusive: out of memory");
		goto out;
	}
	n = strata(t, k, s);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < s[i].nb; j++)
			scaled[off + j] = s[i].b[j] * lim;
		sc[i] = (struct report_stratum){ s[i].a, s[i].na, scaled + off, s[i].nb };
		off += s[i].nb;
	}
	report_mw_strata(s, n, &lo, &hi);
	report_mw_strata(sc, n, &lo2, &hi2);
	t->p = isnan(lo) ? NAN : fmin(1, 2 * fmin(lo, hi));
	t->p_ruled_out = hi2;
	t->ratio = strata_ratio(s, n);
	counts(s, n, &nb, &nc);
	if (t->p < a && t->ratio < lim)
		stop = RS_SLOWER;
	else if (t->p < a && t->ratio > 1 + o->threshold)
		stop = RS_FASTER;
	else if (t->p_ruled_out < a && t->ratio > lim)
		stop = RS_RULED_OUT;
	else if (k >= looks)
		stop = RS_UNDECIDED;
	if (stop == RS_SLOWER || stop == RS_FASTER) {
		t->verdict = stop == RS_SLOWER ? RV_SLOWER : RV_FASTER;
		snprintf(t->reason, sizeof t->reason, "%s: ratio %.3f (%+.1f%%) after %d round%s; "
			 "stratified Mann-Whitney p = %.2g < %.2g (alpha / %d looks), %zu vs %zu "
			 "samples%s", stop == RS_SLOWER ? "slower" : "faster", t->ratio,
			 (t->ratio - 1) * 100, k, k == 1 ? "" : "s", t->p, a, looks, nb, nc, side);
	} else if (stop == RS_RULED_OUT) {
		t->verdict = RV_SAME;
		snprintf(t->reason, sizeof t->reason, "no slowdown beyond %g%%: ratio %.3f after %d "
			 "round%s; p = %.2g < %.2g (alpha / %d looks) that it is above %.3f, %zu vs "
			 "%zu samples%s", o->threshold * 100, t->ratio, k, k == 1 ? "" : "s",
			 t->p_ruled_out, a, looks, lim, nb, nc, side);
	} else if (stop == RS_UNDECIDED) {
		t->verdict = RV_INCONCLUSIVE;
		snprintf(t->reason, sizeof t->reason, "inconclusive: ratio %.3f (%+.1f%%) after %d "
			 "round%s; p = %.2g (a change) and %.2g (no slowdown beyond %g%%), neither < "
			 "%.2g (alpha / %d looks), %zu vs %zu samples%s", t->ratio,
			 (t->ratio - 1) * 100, k, k == 1 ? "" : "s", t->p, t->p_ruled_out,
			 o->threshold * 100, a, looks, nb, nc, side);
	}
out:
	t->stop = stop;
	free(s);
	free(sc);
	free(scaled);
	return stop;
}
