/* report_run_calc.c — the numbers of the run-directory sections, from the
 * loaded run directories (report_run.c): the budget and step grids, each
 * series' scaling curve (the budget lookup: per task the curve point with the
 * largest cumulative_tokens <= budget), the reward-hacking counts per
 * strategy and per model, and self-consistency's majority pick against the
 * verifier-selected pick of a best-of-n run of the same model and tasks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

/* Most points of a grid (budgets, steps) after thinning. */
#define GRID_MAX 24

const char *const report_hk_names[HK_COUNT] = {
	"degenerate", "stale_result", "input_mutated", "out_of_bounds", "nondeterministic",
	"sandbox_violation",
};

/* A sandbox violation is the candidate's own forbidden system call; the
 * timing stage's "the baseline worker made a forbidden system call" is the
 * baseline's failure, not the candidate's. */
int report_row_hack(const struct report_row *r)
{
	switch (r->status) {
	case RS_DEGENERATE: return HK_DEGENERATE;
	case RS_STALE_RESULT: return HK_STALE_RESULT;
	case RS_INPUT_MUTATED: return HK_INPUT_MUTATED;
	case RS_OUT_OF_BOUNDS: return HK_OUT_OF_BOUNDS;
	case RS_NONDETERMINISTIC: return HK_NONDETERMINISTIC;
	case RS_RUNTIME_ERROR:
		return strstr(r->detail, "forbidden system call") &&
		       !strstr(r->detail, "baseline worker") ? HK_SANDBOX : -1;
	default: return -1;
	}
}

/* The pick of task t after the candidates whose cumulative_tokens <= b
 * (<=: a budget of exactly what a candidate cost buys that candidate), or
 * NULL when even the first cost more. Points are in step order, tokens
 * non-decreasing, so the last point <= b is the one with the largest tokens. */
static const struct report_curve_pt *at_tokens(const struct report_series *s, size_t t,
					       double b)
{
	const struct report_curve_pt *p = s->pts + s->first[t];
	size_t lo = 0, hi = s->count[t];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p[mid].tokens <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &p[lo - 1] : NULL;
}

static const struct report_curve_pt *at_step(const struct report_series *s, size_t t, long k)
{
	const struct report_curve_pt *p = s->pts + s->first[t];
	size_t lo = 0, hi = s->count[t];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p[mid].step <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &p[lo - 1] : NULL;
}

static double frac(const struct report_series *s, size_t n_tasks, int fast, double b, long k,
		   int by_step)
{
	size_t hits = 0;

	if (n_tasks == 0)
		return NAN;
	for (size_t t = 0; t < n_tasks; t++) {
		const struct report_curve_pt *p = by_step ? at_step(s, t, k) : at_tokens(s, t, b);
		hits += p && (fast ? p->fast1 : p->correct);
	}
	return (double)hits / (double)n_tasks;
}

double report_series_at_tokens(const struct report_series *s, size_t n_tasks, double b, int fast)
{
	return frac(s, n_tasks, fast, b, 0, 0);
}

double report_series_at_step(const struct report_series *s, size_t n_tasks, long step, int fast)
{
	return frac(s, n_tasks, fast, 0, step, 1);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorted distinct values v[n] thinned in place to at most GRID_MAX: all of
 * them when they fit, else 0 (when present), the smallest and the largest
 * positive value and, between them, for log-spaced targets
 * lo·(hi/lo)^(i/(m−1)), the largest value <= the target (so every grid point
 * is a value where some curve steps). Returns the new count. */
static size_t thin(double *v, size_t n)
{
	size_t z = n && v[0] == 0, m = GRID_MAX - z, out = z, j = z;
	double lo, hi;

	if (n <= GRID_MAX)
		return n;
	lo = v[z];
	hi = v[n - 1];
	for (size_t i = 0; i < m; i++) {
		double target = i + 1 == m ? hi : lo * pow(hi / lo, (double)i / (double)(m - 1));
		while (j + 1 < n && v[j + 1] <= target * (1 + 1e-12))
			j++;
		if (out == z || v[out - 1] != v[j])
			v[out++] = v[j];
	}
	return out;
}

static size_t uniq(double *v, size_t n)
{
	size_t m = 0;

	qsort(v, n, sizeof *v, cmp_dbl);
	for (size_t i = 0; i < n; i++)
		if (!m || v[i] != v[m - 1])
			v[m++] = v[i];
	return m;
}

static enum cr_status grids(struct report_runs *R, struct cr_err *e)
{
	size_t total = 0, n = 0, ns = 0;
	long max_step = 0;
	double *v;

	for (size_t i = 0; i < R->n_ser; i++) {
		total += R->ser[i].n_pts;
		if (R->ser[i].max_step > max_step)
			max_step = R->ser[i].max_step;
	}
	if (!(v = malloc((total ? total : 1) * sizeof *v)))
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < R->n_ser; i++)
		for (size_t k = 0; k < R->ser[i].n_pts; k++)
			v[n++] = R->ser[i].pts[k].tokens;
	n = uniq(v, n);
	R->n_budgets = n;
	R->n_grid = thin(v, n);
	R->grid = v;
	/* steps: every step a curve has (1..max_step when none was skipped) */
	if (!(v = malloc((total ? total : 1) * sizeof *v)))
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < R->n_ser; i++)
		for (size_t k = 0; k < R->ser[i].n_pts; k++)
			v[ns++] = (double)R->ser[i].pts[k].step;
	ns = thin(v, uniq(v, ns));
	R->steps = malloc((ns ? ns : 1) * sizeof *R->steps);
	if (!R->steps) {
		free(v);
		return cr_errf(e, CR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < ns; i++)
		R->steps[i] = (long)v[i];
	R->n_steps = ns;
	free(v);
	return CR_OK;
}

static enum cr_status curves(struct report_runs *R, struct cr_err *e)
{
	for (size_t i = 0; i < R->n_ser; i++) {
		struct report_series *s = &R->ser[i];
		size_t nt = R->dirs[s->dir].n_tasks;
		size_t ng = R->n_grid ? R->n_grid : 1, nk = R->n_steps ? R->n_steps : 1;
		s->tok_correct = malloc(ng * sizeof(double));
		s->tok_fast1 = malloc(ng * sizeof(double));
		s->step_correct = malloc(nk * sizeof(double));
		s->step_fast1 = malloc(nk * sizeof(double));
		if (!s->tok_correct || !s->tok_fast1 || !s->step_correct || !s->step_fast1)
			return cr_errf(e, CR_ENOMEM, "out of memory");
		for (size_t g = 0; g < R->n_grid; g++) {
			s->tok_correct[g] = report_series_at_tokens(s, nt, R->grid[g], 0);
			/* an untimed run's fast_1 is unknown, not 0 (issue 32) */
			s->tok_fast1[g] = R->dirs[s->dir].untimed ? NAN :
					  report_series_at_tokens(s, nt, R->grid[g], 1);
		}
		for (size_t k = 0; k < R->n_steps; k++) {
			s->step_correct[k] = report_series_at_step(s, nt, R->steps[k], 0);
			s->step_fast1[k] = R->dirs[s->dir].untimed ? NAN :
					   report_series_at_step(s, nt, R->steps[k], 1);
		}
	}
	return CR_OK;
}

static int cmp_series(const void *a, const void *b)
{
	const struct report_series *x = a, *y = b;
	int c;

	if (x->strategy != y->strategy)
		return x->strategy < y->strategy ? -1 : 1;
	if ((c = report_name_cmp(x->model, y->model)))
		return c;
	return (x->dir > y->dir) - (x->dir < y->dir);
}

/* "strategy model"; series that would coincide get their directory. */
static void labels(struct report_runs *R)
{
	qsort(R->ser, R->n_ser, sizeof *R->ser, cmp_series);
	for (size_t i = 0; i < R->n_ser; i++)
		snprintf(R->ser[i].label, sizeof R->ser[i].label, "%s %s",
			 report_strat_names[R->ser[i].strategy], R->ser[i].model);
	for (size_t i = 0; i < R->n_ser; i++) {
		int dup = 0;
		for (size_t j = 0; j < R->n_ser; j++)
			dup |= j != i && R->ser[j].strategy == R->ser[i].strategy &&
			       !strcmp(R->ser[j].model, R->ser[i].model);
		if (dup) {
			size_t l = strlen(R->ser[i].label);
			snprintf(R->ser[i].label + l, sizeof R->ser[i].label - l, " (%s)",
				 R->dirs[R->ser[i].dir].dir);
		}
	}
}

static struct report_hack *hack_of(struct report_hack **v, size_t *n, const char *key,
				   struct cr_err *e)
{
	struct report_hack *nv;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].key, key))
			return &(*v)[i];
	if (!(nv = realloc(*v, (*n + 1) * sizeof *nv))) {
		cr_errf(e, CR_ENOMEM, "out of memory");
		return NULL;
	}
	*v = nv;
	nv = &nv[(*n)++];
	memset(nv, 0, sizeof *nv);
	snprintf(nv->key, sizeof nv->key, "%s", key);
	return nv;
}

static void hack_add(struct report_hack *h, int k)
{
	h->rows++;
	if (k >= 0) {
		h->n[k]++;
		h->total++;
	}
}

static int cmp_hack(const void *a, const void *b)
{
	return report_name_cmp(((const struct report_hack *)a)->key,
			       ((const struct report_hack *)b)->key);
}

/* Over the results.csv rows of every run directory (tasks of its set). */
static enum cr_status hacking(struct report_runs *R, struct cr_err *e)
{
	snprintf(R->total.key, sizeof R->total.key, "all");
	for (size_t i = 0; i < R->n_dirs; i++) {
		const struct report_rundir *d = &R->dirs[i];
		for (size_t r = 0; r < d->results->n_rows; r++) {
			const struct report_row *row = &d->results->rows[r];
			const char *strat = *row->strategy ? row->strategy :
					    report_strat_names[d->strategy];
			const char *slash = strrchr(row->model, '/');
			const char *model = *row->model ? (slash && slash[1] ? slash + 1 : row->model) :
					    *d->model ? d->model : "unknown model";
			struct report_hack *hs, *hm;
			int k = report_row_hack(row);
			if (report_rundir_task(d, row->task) < 0)
				continue;
			if (!(hs = hack_of(&R->by_strat, &R->n_by_strat, strat, e)) ||
			    !(hm = hack_of(&R->by_model, &R->n_by_model, model, e)))
				return CR_ENOMEM;
			hack_add(hs, k);
			hack_add(hm, k);
			hack_add(&R->total, k);
		}
	}
	if (R->by_strat)
		qsort(R->by_strat, R->n_by_strat, sizeof *R->by_strat, cmp_hack);
	if (R->by_model)
		qsort(R->by_model, R->n_by_model, sizeof *R->by_model, cmp_hack);
	return CR_OK;
}

static int same_tasks(const struct report_rundir *a, const struct report_rundir *b)
{
	if (a->n_tasks != b->n_tasks)
		return 0;
	for (size_t t = 0; t < a->n_tasks; t++)
		if (strcmp(a->tasks[t], b->tasks[t]))
			return 0;
	return 1;
}

static double mean_tokens(const struct report_rundir *d)
{
	double sum = 0;
	size_t n = 0;

	for (size_t t = 0; t < d->n_tasks; t++)
		if (!isnan(d->picks[t].tokens_spent)) {
			sum += d->picks[t].tokens_spent;
			n++;
		}
	return n ? sum / (double)n : NAN;
}

static void note_add(char *note, size_t len, const char *s)
{
	size_t l = strlen(note);

	if (l + 1 < len)
		snprintf(note + l, len - l, "%s%s", l ? "; " : "", s);
}

/* One row per self-consistency run; a best-of-n run beside it when one has
 * the same model and exactly the same task set. */
static enum cr_status self_consistency(struct report_runs *R, struct cr_err *e)
{
	R->sc = calloc(R->n_dirs ? R->n_dirs : 1, sizeof *R->sc);
	if (!R->sc)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < R->n_dirs; i++) {
		const struct report_rundir *d = &R->dirs[i];
		struct report_sc *sc;
		int more = 0;
		char b[300];

		if (d->strategy != RST_SELF_CONSISTENCY)
			continue;
		sc = &R->sc[R->n_sc++];
		sc->dir = i;
		sc->bon = -1;
		sc->n_tasks = (int)d->n_tasks;
		for (size_t t = 0; t < d->n_tasks; t++) {
			sc->n_incorrect += !d->picks[t].correct;
			sc->n_none += !d->picks[t].picked;
			sc->n_wrong_oracle += !d->picks[t].correct && d->oracle[t];
		}
		sc->tokens_mean = mean_tokens(d);
		for (size_t j = 0; j < R->n_dirs; j++) {
			const struct report_rundir *o = &R->dirs[j];
			if (o->strategy != RST_BEST_OF_N || strcmp(o->model, d->model))
				continue;
			if (!same_tasks(o, d)) {
				snprintf(b, sizeof b, "best-of-n %s has other tasks (%zu vs %zu): "
					 "not compared", o->dir, o->n_tasks, d->n_tasks);
				note_add(sc->note, sizeof sc->note, b);
			} else if (sc->bon < 0) {
				sc->bon = (long)j;
			} else {
				more++;
			}
		}
		if (sc->bon >= 0) {
			const struct report_rundir *o = &R->dirs[sc->bon];
			for (size_t t = 0; t < o->n_tasks; t++)
				sc->bon_correct += o->picks[t].correct;
			sc->bon_tokens_mean = mean_tokens(o);
			if (more) {
				snprintf(b, sizeof b, "%d more best-of-n run(s) of this model and "
					 "tasks; the first given is shown", more);
				note_add(sc->note, sizeof sc->note, b);
			}
		} else {
			sc->bon_tokens_mean = NAN;
			if (!*sc->note) {
				snprintf(b, sizeof b, "no best-of-n run of %s on these tasks in this "
					 "report", d->model);
				note_add(sc->note, sizeof sc->note, b);
			}
		}
	}
	return CR_OK;
}

enum cr_status report_runs_compute(struct report_runs *R, struct cr_err *e)
{
	enum cr_status st;

	labels(R);
	if ((st = grids(R, e)) != CR_OK || (st = curves(R, e)) != CR_OK ||
	    (st = hacking(R, e)) != CR_OK)
		return st;
	return self_consistency(R, e);
}
