/* report_units.c — what pass@k counts as one independent draw (issue 31).
 * pass@k's estimator assumes n independent samples of one distribution. The
 * candidates of best-of-n and self-consistency are (one prompt, a stream of
 * its own each); the turns of a refine trajectory are not (turn t+1 is
 * prompted with turn t and its verdict), nor are the generations of an
 * evolve search (children of the fittest so far, with the memory of every
 * earlier candidate). So, as the literature reports depth (Kevin-32B:
 * best-of-trajectory at each turn, pass@k over independent trajectories):
 *
 *  - refine: a unit is a trajectory, the rows of one (task, sample);
 *    it is correct at turn t when one of its turns <= t is, fast at p when
 *    one of them is fast at p (the best so far); pass@k over the task's
 *    trajectories (n trajectories, c correct by the last turn), and by turn.
 *  - evolve: a unit is the search of a task (all its rows): one per
 *    task, solved at generation g when a candidate of generations <= g is
 *    correct, so pass@1 by generation is the fraction of tasks solved so far
 *    and pass@k for k > 1 is undefined (n = 1 < k). The draft (generation 0)
 *    is N independent samples of one prompt: its own pass@k is given apart.
 *  - anything else (best-of-n, self-consistency, eval, a file of mixed
 *    strategies): a unit is a candidate, as before.
 *
 * The strategy is the rows' (when they all agree), else run.json's. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

const char *const report_unit_names[3] = { "candidate", "trajectory", "search" };

/* The by-step table keeps at most this many turns (generations). */
#define MAX_STEPS 256

/* The strategy of the rows when they agree (empty ones are unknown), "mixed"
 * when they do not, else run.json's, else "". */
static const char *file_strategy(const struct report_run *run, const struct report_summary *s)
{
	const char *st = NULL;

	for (size_t i = 0; i < run->n_rows; i++) {
		const char *r = run->rows[i].strategy;
		if (!*r)
			continue;
		if (!st)
			st = r;
		else if (strcmp(st, r))
			return "mixed";
	}
	return st ? st : s->meta.strategy;
}

/* One row's place: its unit (task, key) and its step. A results.csv holds one
 * run (one model; an empty model column is unknown, not another model). */
struct ent {
	long tid;
	long key;    /* the trajectory (sample) for refine, 0 for a search */
	long step;   /* turn or generation, >= 0 */
	size_t row;
};

static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->row > y->row) - (x->row < y->row);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* s->step_ids: the distinct steps of v[ne], ascending (at most MAX_STEPS); each
 * v[i].step becomes the index of the first kept step >= it. */
static enum cr_status step_index(struct report_summary *s, struct ent *v, size_t ne,
				 struct cr_err *e)
{
	size_t m = 0;

	s->step_ids = malloc((ne ? ne : 1) * sizeof *s->step_ids);
	if (!s->step_ids)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < ne; i++)
		s->step_ids[i] = v[i].step;
	qsort(s->step_ids, ne, sizeof *s->step_ids, cmp_long);
	for (size_t i = 0; i < ne; i++)
		if (m == 0 || s->step_ids[m - 1] != s->step_ids[i])
			s->step_ids[m++] = s->step_ids[i];
	if (m > MAX_STEPS) {
		/* MAX_STEPS of them, evenly, the last kept: the table stays
		 * n_tasks × MAX_STEPS whatever turn numbers a file holds */
		for (size_t i = 0; i < MAX_STEPS; i++)
			s->step_ids[i] = s->step_ids[(i + 1) * m / MAX_STEPS - 1];
		m = MAX_STEPS;
	}
	for (size_t i = 0; i < ne; i++) {
		/* the first kept step at or after the row's: its best so far
		 * counts from there */
		size_t lo = 0, hi = m - 1;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (s->step_ids[mid] < v[i].step)
				lo = mid + 1;
			else
				hi = mid;
		}
		v[i].step = (long)lo;
	}
	s->n_steps = (int)m;
	return CR_OK;
}

/* Units are candidates: nu = n, cu = c, cu_fast = c_fast. */
static void as_candidates(struct report_summary *s)
{
	for (size_t t = 0; t < s->n_tasks; t++) {
		struct report_task *T = &s->tasks[t];
		T->nu = T->n;
		T->cu = T->c;
		memcpy(T->cu_fast, T->c_fast, s->opts.np * sizeof *T->cu_fast);
	}
}

/* The by-step tables from the per-task counts of units correct (fast) by
 * each step: cstep[t * n_steps + g], cfstep[(t * n_steps + g) * np + j]. */
static enum cr_status by_step(struct report_summary *s, const int *cstep, const int *cfstep,
			      struct cr_err *e)
{
	const struct report_opts *o = &s->opts;
	size_t ns = (size_t)s->n_steps, np = o->np, nk = o->nk, nt = s->n_tasks;
	int *nu = malloc((nt ? nt : 1) * sizeof *nu);
	int *cf = malloc((nt ? nt : 1) * sizeof *cf);

	s->step_pass = malloc((ns * nk + 1) * sizeof *s->step_pass);
	s->step_fast = malloc((ns * nk * np + 1) * sizeof *s->step_fast);
	if (!nu || !cf || !s->step_pass || !s->step_fast) {
		free(nu);
		free(cf);
		return cr_errf(e, CR_ENOMEM, "out of memory");
	}
	for (size_t t = 0; t < nt; t++)
		nu[t] = s->tasks[t].nu;
	for (size_t g = 0; g < ns; g++) {
		for (size_t t = 0; t < nt; t++)
			s->step_correct[g] += cstep[t * ns + g];
		for (size_t ki = 0; ki < nk; ki++) {
			s->step_pass[g * nk + ki] = report_mean_pass(nt, nu, cstep + g, ns, o->k[ki],
								     NULL);
			for (size_t j = 0; j < np; j++) {
				for (size_t t = 0; t < nt; t++)
					cf[t] = cfstep[(t * ns + g) * np + j];
				s->step_fast[(g * nk + ki) * np + j] =
					report_mean_pass(nt, nu, cf, 1, o->k[ki], NULL);
			}
		}
	}
	free(nu);
	free(cf);
	return CR_OK;
}

/* evolve: generation 0's candidates of each task as independent draws. */
static enum cr_status draft(const struct report_run *run, const long *tid,
			    struct report_summary *s, struct cr_err *e)
{
	size_t nt = s->n_tasks;
	int *n = calloc(nt ? nt : 1, sizeof *n), *c = calloc(nt ? nt : 1, sizeof *c);

	if (!n || !c) {
		free(n);
		free(c);
		return cr_errf(e, CR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < run->n_rows; i++) {
		const struct report_row *r = &run->rows[i];
		if (tid[i] < 0 || r->generation != 0) /* later, or unknown: not the draft */
			continue;
		n[tid[i]]++;
		s->draft_n++;
		if (report_row_correct(r, &s->opts)) {
			c[tid[i]]++;
			s->draft_c++;
		}
	}
	for (size_t ki = 0; ki < s->opts.nk; ki++)
		s->draft_pass[ki] = report_mean_pass(nt, n, c, 1, s->opts.k[ki], NULL);
	free(n);
	free(c);
	return CR_OK;
}

enum cr_status report_units_compute(const struct report_run *run, const long *tid,
				    struct report_summary *s, struct cr_err *e)
{
	const struct report_opts *o = &s->opts;
	const char *strat = file_strategy(run, s);
	size_t nr = run->n_rows, np = o->np, ne = 0, ns;
	struct ent *v = NULL;
	int *cstep = NULL, *cfstep = NULL;
	long *ffast = NULL;
	enum cr_status st = CR_OK;

	for (size_t ki = 0; ki < o->nk; ki++)
		s->draft_pass[ki] = NAN;
	s->unit = !strcmp(strat, "refine") ? RU_TRAJECTORY :
		  !strcmp(strat, "evolve") ? RU_SEARCH : RU_CANDIDATE;
	if (s->unit == RU_CANDIDATE) {
		as_candidates(s);
		goto count;
	}
	v = malloc((nr ? nr : 1) * sizeof *v);
	ffast = malloc((np ? np : 1) * sizeof *ffast);
	if (!v || !ffast) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct report_row *r = &run->rows[i];
		long step = s->unit == RU_TRAJECTORY ? r->turn : r->generation;
		if (tid[i] < 0)
			continue;
		v[ne].tid = tid[i];
		v[ne].key = s->unit == RU_TRAJECTORY ? r->sample : 0;
		v[ne].step = step < 0 ? 0 : step; /* unknown: the first */
		v[ne].row = i;
		ne++;
	}
	/* the steps are the distinct turns (generations) of the rows, in
	 * order: a turn number far past the rows costs nothing */
	if ((st = step_index(s, v, ne, e)) != CR_OK)
		goto out;
	qsort(v, ne, sizeof *v, cmp_ent);
	ns = (size_t)s->n_steps;
	s->step_cands = calloc(ns ? ns : 1, sizeof *s->step_cands);
	s->step_correct = calloc(ns ? ns : 1, sizeof *s->step_correct);
	cstep = calloc(s->n_tasks * ns + 1, sizeof *cstep);
	cfstep = calloc(s->n_tasks * ns * np + 1, sizeof *cfstep);
	if (!s->step_cands || !s->step_correct || !cstep || !cfstep) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t a = 0, b; a < ne; a = b) {
		struct report_task *T = &s->tasks[v[a].tid];
		long fok = LONG_MAX;
		for (size_t j = 0; j < np; j++)
			ffast[j] = LONG_MAX;
		/* one unit: v[a .. b) */
		for (b = a; b < ne && v[b].tid == v[a].tid && v[b].key == v[a].key; b++) {
			const struct report_row *r = &run->rows[v[b].row];
			s->step_cands[v[b].step]++;
			if (!report_row_correct(r, o))
				continue;
			if (v[b].step < fok)
				fok = v[b].step;
			for (size_t j = 0; j < np; j++)
				if (report_row_fast(r, o->p[j]) && v[b].step < ffast[j])
					ffast[j] = v[b].step;
		}
		T->nu++;
		T->cu += fok != LONG_MAX;
		for (long g = fok; g < s->n_steps; g++)
			cstep[(size_t)v[a].tid * ns + (size_t)g]++;
		for (size_t j = 0; j < np; j++) {
			T->cu_fast[j] += ffast[j] != LONG_MAX;
			for (long g = ffast[j]; g < s->n_steps; g++)
				cfstep[((size_t)v[a].tid * ns + (size_t)g) * np + j]++;
		}
	}
	if ((st = by_step(s, cstep, cfstep, e)) != CR_OK)
		goto out;
	if (s->unit == RU_SEARCH && (st = draft(run, tid, s, e)) != CR_OK)
		goto out;
count:
	for (size_t t = 0; t < s->n_tasks; t++) {
		s->n_units += s->tasks[t].nu;
		if (s->tasks[t].nu > s->nu_max)
			s->nu_max = s->tasks[t].nu;
	}
	report_run_name(s, strat);
out:
	free(v);
	free(ffast);
	free(cstep);
	free(cfstep);
	return st;
}
