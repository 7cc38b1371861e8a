/* report_tables.c — computes every number of `crucible report` for one run
 * (struct report_summary): the task set, per-task counts, Fast_p per sample
 * index and best-of-n, pass@k and fast_p@k, status counts, the geometric mean
 * speedup, the reasoning-length buckets, quartiles and correlations, and the
 * run's label from its metadata. Only trusted timing figures (not flagged
 * noisy) enter a speedup aggregate or Fast_p for p > 0 (issue 29). Printers read the summary; they compute
 * nothing but formatting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

void report_opts_default(struct report_opts *o)
{
	static const double p[] = { 0, 0.5, 0.8, 1.0, 1.5, 2.0 };
	static const int k[] = { 1, 5, 10 };

	memset(o, 0, sizeof *o);
	memcpy(o->p, p, sizeof p);
	o->np = sizeof p / sizeof p[0];
	memcpy(o->k, k, sizeof k);
	o->nk = sizeof k / sizeof k[0];
}

int report_row_correct(const struct report_row *r, const struct report_opts *o)
{
	if (r->status != RS_OK || r->backward == RB_FAIL)
		return 0;
	return !(o->strict_backward && r->backward == RB_ABSENT);
}

const char *report_fmt_num(char *buf, size_t len, double v, int prec)
{
	if (isnan(v))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.*f", prec, v);
	return buf;
}

const char *report_fmt_time(char *buf, size_t len, double us)
{
	if (isnan(us))
		snprintf(buf, len, "n/a");
	else if (us < 1000)
		snprintf(buf, len, "%.3g µs", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.3g ms", us / 1e3);
	else
		snprintf(buf, len, "%.3g s", us / 1e6);
	return buf;
}

/* A row's timing figure is trusted when it has one and timing did not flag it
 * noisy (noisy -1: no flag, as in files older than the flag's column). */
static int trusted(const struct report_row *r)
{
	return !isnan(r->speedup) && r->noisy != 1;
}

/* A correct row is fast at p when timed with speedup > p; a noisy figure
 * only at p <= 0 (it says the candidate ran and was timed, not how fast). */
int report_row_fast(const struct report_row *r, double p)
{
	return !isnan(r->speedup) && r->speedup > p && (p <= 0 || r->noisy != 1);
}

/* natural order (t/2 before t/10); also the bsearch order of find_task */
static int cmp_str(const void *a, const void *b)
{
	return report_name_cmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorted, de-duplicated task names: the list, or the tasks of the rows. */
static enum cr_status task_names(const struct report_run *run, const struct report_opts *o,
				 const char ***out, size_t *n_out, struct cr_err *e)
{
	size_t n = o->task_list ? o->n_task_list : run->n_rows, m = 0;
	const char **v = malloc((n ? n : 1) * sizeof *v);

	if (!v)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = o->task_list ? o->task_list[i] : run->rows[i].task;
	qsort(v, n, sizeof *v, cmp_str);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || strcmp(v[m - 1], v[i]))
			v[m++] = v[i];
	*out = v;
	*n_out = m;
	return CR_OK;
}

static long find_task(const char **names, size_t n, const char *t)
{
	const char **hit = bsearch(&t, names, n, sizeof *names, cmp_str);
	return hit ? (long)(hit - names) : -1;
}

/* Label from metadata; "mixed" where rows disagree. */
static void make_label(const struct report_run *run, struct report_summary *s)
{
	const char *model = NULL, *strat = NULL, *base;
	int mixed_model = 0, mixed_strat = 0, mixed_t = 0;
	double t = NAN;
	char nbuf[48], tbuf[32] = "", turns[32] = "";

	s->max_turn = -1;
	for (size_t i = 0; i < run->n_rows; i++) {
		const struct report_row *r = &run->rows[i];
		/* Empty values are unknown, not a different setting. */
		if (!model && *r->model)
			model = r->model;
		else if (*r->model && strcmp(model, r->model))
			mixed_model = 1;
		if (!strat && *r->strategy)
			strat = r->strategy;
		else if (*r->strategy && strcmp(strat, r->strategy))
			mixed_strat = 1;
		if (isnan(t))
			t = r->temperature;
		else if (!isnan(r->temperature) && t != r->temperature)
			mixed_t = 1;
		if (r->turn > s->max_turn)
			s->max_turn = (int)r->turn;
	}
	s->temperature = mixed_t ? NAN : t;
	/* Model: the file name without directories or .gguf, shortened. */
	base = mixed_model ? "mixed" : model && *model ? model : NULL;
	if (base && strrchr(base, '/'))
		base = strrchr(base, '/') + 1;
	if (!base) {
		base = strrchr(run->path, '/') ? strrchr(run->path, '/') + 1 : run->path;
	}
	snprintf(s->model, sizeof s->model, "%s", base);
	{
		char *dot = strstr(s->model, ".gguf");
		size_t len;
		if (dot)
			*dot = '\0';
		len = strlen(s->model);
		if (len > 24)
			memcpy(s->model + 21, "...", 4);
	}
	snprintf(s->strategy, sizeof s->strategy, "%s",
		 mixed_strat ? "mixed" : strat && *strat ? strat : "");
	if (!isnan(s->temperature))
		snprintf(tbuf, sizeof tbuf, " T=%g", s->temperature);
	if (s->n_min == s->n_max)
		snprintf(nbuf, sizeof nbuf, " n=%d", s->n_max);
	else
		snprintf(nbuf, sizeof nbuf, " n=%d-%d", s->n_min, s->n_max);
	if (s->max_turn >= 0)
		snprintf(turns, sizeof turns, " turns=%d", s->max_turn + 1);
	if (*s->run_name) {
		/* the command's own options name the run (issue 31): a refine run
		 * of 2 trajectories × 3 turns is not "n=6" */
		snprintf(s->label, sizeof s->label, "%s%s %s", s->model, tbuf, s->run_name);
		return;
	}
	snprintf(s->label, sizeof s->label, "%s%s%s%s%s%s", s->model, tbuf, nbuf,
		 *s->strategy ? " " : "", s->strategy, turns);
}

double report_mean_pass(size_t n_tasks, const int *n_of, const int *c_of, size_t stride, int k,
			int *short_out)
{
	double sum = 0;
	size_t used = 0, eligible = 0;
	int nshort = 0;

	for (size_t t = 0; t < n_tasks; t++) {
		int n = n_of[t], c = c_of[t * stride];
		if (n == 0) {
			used++; /* a task with no candidate counts as failed */
		} else if (n < k) {
			nshort++;
		} else {
			sum += report_pass_at_k(n, c, k);
			used++;
			eligible++;
		}
	}
	if (short_out)
		*short_out = nshort;
	if (!eligible)
		return NAN; /* no task has n >= k */
	return sum / (double)used;
}

double report_summary_pass_at(const struct report_summary *s, int k)
{
	size_t nt = s->n_tasks;
	int *n = malloc((nt ? nt : 1) * sizeof *n), *c = malloc((nt ? nt : 1) * sizeof *c);
	double v = NAN;

	if (n && c && s->correct_measured) {
		for (size_t t = 0; t < nt; t++) {
			n[t] = s->tasks[t].nu;
			c[t] = s->tasks[t].cu;
		}
		v = report_mean_pass(nt, n, c, 1, k, NULL);
	}
	free(n);
	free(c);
	return v;
}

double report_summary_fast_at(const struct report_summary *s, double p)
{
	size_t hit = 0;

	if (!s->timing_measured)
		return NAN;
	for (size_t t = 0; t < s->n_tasks; t++)
		hit += s->tasks[t].best_speedup > p || (p <= 0 && s->tasks[t].c_noisy > 0);
	return s->n_tasks ? (double)hit / (double)s->n_tasks : NAN;
}

/* Reasoning-length tables over rows (indices in idx[], task ids in tid[]). */
static enum cr_status reasoning(const struct report_run *run, const long *tid,
				struct report_summary *s, struct cr_err *e)
{
	const struct report_opts *o = &s->opts;
	size_t nr = run->n_rows, ns = 0;
	double *tok = malloc((nr ? nr : 1) * sizeof *tok);
	double *sp = malloc((nr ? nr : 1) * sizeof *sp);
	double *cor = malloc((nr ? nr : 1) * sizeof *cor);
	double *grp = malloc((nr ? nr : 1) * sizeof *grp);
	enum cr_status st = CR_OK;

	s->scatter = malloc((nr ? 2 * nr : 1) * sizeof *s->scatter);
	if (!tok || !sp || !cor || !grp || !s->scatter) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (int b = 0; b < 3; b++) {
		s->bucket[b].lo = s->bucket[b].hi = NAN;
		s->bucket[b].median_speedup = NAN;
	}
	for (size_t t = 0; t < s->n_tasks; t++) {
		struct report_group *g;
		if (!s->tasks[t].n_tok)
			continue;
		g = &s->bucket[report_bucket(s->tasks[t].arl)];
		g->n_tasks++;
		if (isnan(g->lo) || s->tasks[t].arl < g->lo)
			g->lo = s->tasks[t].arl;
		if (isnan(g->hi) || s->tasks[t].arl > g->hi)
			g->hi = s->tasks[t].arl;
	}
	/* Pass 1: lengths, correctness, Pearson inputs. */
	for (size_t i = 0; i < nr; i++) {
		const struct report_row *r = &run->rows[i];
		if (tid[i] < 0)
			continue;
		if (isnan(r->reasoning_tokens)) {
			s->rl_missing++;
			continue;
		}
		tok[s->rl_n] = r->reasoning_tokens;
		cor[s->rl_n] = report_row_correct(r, o);
		s->rl_n++;
		if (report_row_correct(r, o) && trusted(r)) {
			s->scatter[2 * ns] = r->reasoning_tokens;
			s->scatter[2 * ns + 1] = r->speedup;
			sp[ns++] = r->speedup;
		}
	}
	s->r_correct_n = s->rl_n;
	s->r_correct = report_pearson(tok, cor, (size_t)s->rl_n);
	s->r_speed_n = (int)ns;
	for (size_t i = 0; i < ns; i++)
		tok[i] = s->scatter[2 * i];
	s->r_speed = report_pearson(tok, sp, ns);
	/* Quartile thresholds of the candidates' own lengths. */
	{
		size_t m = 0;
		for (size_t i = 0; i < nr; i++)
			if (tid[i] >= 0 && !isnan(run->rows[i].reasoning_tokens))
				tok[m++] = run->rows[i].reasoning_tokens;
		qsort(tok, m, sizeof *tok, cmp_dbl);
		s->q1 = report_quantile(tok, m, 0.25);
		s->q2 = report_quantile(tok, m, 0.50);
		s->q3 = report_quantile(tok, m, 0.75);
	}
	/* Groups: g < 3 buckets (by the task's ARL), g >= 3 quartiles (own length). */
	for (int g = 0; g < 7; g++) {
		struct report_group *G = g < 3 ? &s->bucket[g] : &s->quart[g - 3];
		size_t m = 0;
		if (g >= 3)
			G->lo = G->hi = NAN;
		for (size_t i = 0; i < nr; i++) {
			const struct report_row *r = &run->rows[i];
			double x = r->reasoning_tokens;
			int q;
			if (tid[i] < 0 || isnan(x))
				continue;
			if (g < 3) {
				if (report_bucket(s->tasks[tid[i]].arl) != g)
					continue;
			} else {
				q = x <= s->q1 ? 0 : x <= s->q2 ? 1 : x <= s->q3 ? 2 : 3;
				if (q != g - 3)
					continue;
				if (isnan(G->lo) || x < G->lo)
					G->lo = x;
				if (isnan(G->hi) || x > G->hi)
					G->hi = x;
			}
			G->n++;
			if (report_row_correct(r, o)) {
				G->n_correct++;
				if (trusted(r))
					grp[m++] = r->speedup;
			}
		}
		G->n_speed = (int)m;
		G->median_speedup = report_median(grp, m);
	}
out:
	free(tok);
	free(sp);
	free(cor);
	free(grp);
	return st;
}

/* Per-task counts, Fast_p per sample, statuses, geomean. */
static enum cr_status tally(const struct report_run *run, const long *tid,
			    struct report_summary *s, struct cr_err *e)
{
	const struct report_opts *o = &s->opts;
	size_t nr = run->n_rows, np = o->np, nsp = 0;
	double *v = malloc((nr ? nr : 1) * sizeof *v);
	double *tokens = calloc(s->n_tasks ? s->n_tasks : 1, sizeof *tokens);
	unsigned char *flag = NULL;
	enum cr_status st = CR_OK;

	s->speedups = malloc((nr ? nr : 1) * sizeof *s->speedups);
	if (!v || !tokens || !s->speedups) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	/* Distinct sample indices. */
	s->sample_ids = malloc((nr ? nr : 1) * sizeof *s->sample_ids);
	if (!s->sample_ids) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nr; i++)
		if (tid[i] >= 0)
			s->sample_ids[s->n_samples++] = run->rows[i].sample;
	qsort(s->sample_ids, s->n_samples, sizeof *s->sample_ids, cmp_long);
	{
		size_t m = 0;
		for (size_t i = 0; i < s->n_samples; i++)
			if (m == 0 || s->sample_ids[m - 1] != s->sample_ids[i])
				s->sample_ids[m++] = s->sample_ids[i];
		s->n_samples = m;
	}
	s->fast_sample = calloc(s->n_samples * np + 1, sizeof *s->fast_sample);
	flag = calloc(s->n_tasks * s->n_samples * np + 1, 1);
	if (!s->fast_sample || !flag) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct report_row *r = &run->rows[i];
		struct report_task *T;
		int ok;
		if (tid[i] < 0) {
			s->n_ignored_rows++;
			continue;
		}
		T = &s->tasks[tid[i]];
		ok = report_row_correct(r, o);
		s->status_counts[r->status]++;
		s->bw_counts[r->backward]++;
		T->n++;
		s->n_timed += r->noisy >= 0 || !isnan(r->speedup);
		s->n_noisy += r->noisy == 1;
		if (!isnan(r->reasoning_tokens)) {
			T->n_tok++;
			tokens[tid[i]] += r->reasoning_tokens;
		}
		if (!ok)
			continue;
		T->c++;
		s->n_correct++;
		if (isnan(r->speedup)) {
			s->n_correct_nospeed++;
			continue;
		}
		/* the geometric mean takes every figure, noisy ones too: one
		 * row's noise moves it little, while dropping the noisy rows makes
		 * it a mean over a different subset each run (bench/timing_repro.sh,
		 * 4 runs of the smoke set: 1.121-1.155 over all rows, 0.964-1.416
		 * over the trusted ones) */
		s->speedups[nsp++] = r->speedup;
		if (r->noisy == 1) {
			T->c_noisy++;
			s->n_correct_noisy++;
		} else {
			/* best-of-n: never a noisy figure over a trusted one */
			if (isnan(T->best_speedup) || r->speedup > T->best_speedup) {
				T->best_speedup = r->speedup;
				T->best_time_us = r->time_us;
				T->best_base_us = r->baseline_us;
			}
		}
		{
			long *hit = bsearch(&r->sample, s->sample_ids, s->n_samples,
					    sizeof *s->sample_ids, cmp_long);
			size_t si = (size_t)(hit - s->sample_ids);
			for (size_t j = 0; j < np; j++)
				if (report_row_fast(r, o->p[j])) {
					T->c_fast[j]++;
					flag[((size_t)tid[i] * s->n_samples + si) * np + j] = 1;
				}
		}
	}
	for (size_t t = 0; t < s->n_tasks; t++) {
		struct report_task *T = &s->tasks[t];
		size_t m = 0;
		T->arl = T->n_tok ? tokens[t] / T->n_tok : NAN;
		for (size_t i = 0; i < nr; i++)
			if (tid[i] == (long)t && report_row_correct(&run->rows[i], o) &&
			    trusted(&run->rows[i]))
				v[m++] = run->rows[i].speedup;
		T->median_speedup = report_median(v, m);
		for (size_t j = 0; j < np; j++) {
			s->fast_best[j] += T->c_fast[j] > 0;
			for (size_t si = 0; si < s->n_samples; si++)
				s->fast_sample[si * np + j] += flag[(t * s->n_samples + si) * np + j];
		}
	}
	for (size_t j = 0; j < np; j++) {
		double sum = 0;
		s->fast_best[j] /= (double)s->n_tasks;
		for (size_t si = 0; si < s->n_samples; si++) {
			s->fast_sample[si * np + j] /= (double)s->n_tasks;
			sum += s->fast_sample[si * np + j];
		}
		s->fast_sample_mean[j] = s->n_samples ? sum / (double)s->n_samples : NAN;
	}
	s->gm_n = (int)nsp;
	report_geomean(s->speedups, nsp, &s->gm, &s->gm_lo, &s->gm_hi);
out:
	free(v);
	free(tokens);
	free(flag);
	return st;
}

/* Unknown is not zero (issue 32): a run that was not timed, or only
 * compiled, has its unmeasured figures NAN (n/a, json null), never 0. */
static void measured(const struct report_run *run, struct report_summary *s)
{
	const struct report_opts *o = &s->opts;

	report_prov_read(run->path, &s->prov);
	s->correct_measured = s->status_counts[RS_COMPILED] == 0;
	s->timing_measured = s->correct_measured && s->prov.timing != 0 &&
			     !(s->n_timed == 0 && s->n_correct > 0);
	if (!s->timing_measured) {
		for (size_t j = 0; j < o->np; j++) {
			s->fast_best[j] = s->fast_sample_mean[j] = NAN;
			for (size_t si = 0; si < s->n_samples; si++)
				s->fast_sample[si * o->np + j] = NAN;
			for (size_t ki = 0; ki < o->nk; ki++) {
				s->fastp_k[ki * 32 + j] = NAN;
				for (int g = 0; g < s->n_steps; g++)
					s->step_fast[((size_t)g * o->nk + ki) * o->np + j] = NAN;
			}
		}
		s->gm = s->gm_lo = s->gm_hi = NAN;
	}
	if (!s->correct_measured)
		for (size_t ki = 0; ki < o->nk; ki++) {
			s->pass_k[ki] = s->pass_k_cand[ki] = s->draft_pass[ki] = NAN;
			for (int g = 0; g < s->n_steps; g++)
				s->step_pass[(size_t)g * o->nk + ki] = NAN;
		}
}

enum cr_status report_summary_compute(const struct report_run *run,
				      const struct report_opts *o,
				      struct report_summary *s, struct cr_err *e)
{
	const char **names = NULL;
	long *tid = NULL;
	size_t nt = 0;
	enum cr_status st;

	memset(s, 0, sizeof *s);
	s->path = run->path;
	s->opts = *o;
	s->n_rows = run->n_rows;
	s->tasks_from_list = !o->task_list ? 0 : o->task_union ? 2 : 1;
	report_runmeta_read(run->path, &s->meta);
	if (o->np > 32 || o->nk > 32)
		return cr_errf(e, CR_EUSAGE, "at most 32 values of p and of k");
	st = task_names(run, o, &names, &nt, e);
	if (st != CR_OK)
		goto out;
	if (nt == 0 && !run->n_untasked) {
		st = cr_errf(e, CR_EINPUT, "%s: no candidate rows (and no --task-list): "
			     "nothing to report", run->path);
		goto out;
	}
	s->n_tasks = nt;
	s->tasks = calloc(nt ? nt : 1, sizeof *s->tasks);
	s->c_fast_store = calloc((nt ? nt : 1) * (o->np ? o->np : 1), sizeof *s->c_fast_store);
	s->cu_fast_store = calloc((nt ? nt : 1) * (o->np ? o->np : 1), sizeof *s->cu_fast_store);
	tid = malloc((run->n_rows ? run->n_rows : 1) * sizeof *tid);
	if (!s->tasks || !s->c_fast_store || !s->cu_fast_store || !tid) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t t = 0; t < nt; t++) {
		s->tasks[t].name = names[t];
		s->tasks[t].c_fast = s->c_fast_store + t * o->np;
		s->tasks[t].cu_fast = s->cu_fast_store + t * o->np;
		s->tasks[t].best_speedup = NAN;
		s->tasks[t].best_time_us = s->tasks[t].best_base_us = NAN;
	}
	for (size_t i = 0; i < run->n_rows; i++)
		tid[i] = find_task(names, nt, run->rows[i].task);
	if ((st = tally(run, tid, s, e)) != CR_OK || (st = reasoning(run, tid, s, e)) != CR_OK)
		goto out;
	/* rows naming no task: in the status table and the totals, in no
	 * task's figures */
	s->n_untasked = run->n_untasked;
	s->n_rows += (size_t)run->n_untasked;
	for (int i = 0; i < RS_COUNT; i++)
		s->status_counts[i] += run->untasked[i];
	s->n_min = -1;
	for (size_t t = 0; t < nt; t++) {
		int n = s->tasks[t].n;
		if (n && (s->n_min < 0 || n < s->n_min))
			s->n_min = n;
		if (n > s->n_max)
			s->n_max = n;
	}
	if (s->n_min < 0)
		s->n_min = 0;
	if ((st = report_units_compute(run, tid, s, e)) != CR_OK)
		goto out;
	for (size_t ki = 0; ki < o->nk; ki++) {
		/* pass@k over the units; the per-candidate figure beside it */
		int *n = malloc((nt ? nt : 1) * sizeof *n), *c = malloc((nt ? nt : 1) * sizeof *c);
		int *nc = malloc((nt ? nt : 1) * sizeof *nc), *cc = malloc((nt ? nt : 1) * sizeof *cc);
		if (!n || !c || !nc || !cc) {
			free(n);
			free(c);
			free(nc);
			free(cc);
			st = cr_errf(e, CR_ENOMEM, "out of memory");
			goto out;
		}
		for (size_t t = 0; t < nt; t++) {
			n[t] = s->tasks[t].nu;
			c[t] = s->tasks[t].cu;
			nc[t] = s->tasks[t].n;
			cc[t] = s->tasks[t].c;
		}
		s->pass_k[ki] = report_mean_pass(nt, n, c, 1, o->k[ki], &s->k_short[ki]);
		s->pass_k_cand[ki] = report_mean_pass(nt, nc, cc, 1, o->k[ki], NULL);
		for (size_t j = 0; j < o->np; j++)
			s->fastp_k[ki * 32 + j] = report_mean_pass(nt, n, s->cu_fast_store + j,
								   o->np, o->k[ki], NULL);
		free(n);
		free(c);
		free(nc);
		free(cc);
	}
	measured(run, s);
	make_label(run, s);
out:
	free(tid);
	if (st != CR_OK) {
		free(names);
		report_summary_release(s);
		return st;
	}
	/* Task names are borrowed from the rows/list; keep the array for release. */
	free(names);
	return CR_OK;
}

void report_summary_release(struct report_summary *s)
{
	if (!s)
		return;
	free(s->tasks);
	free(s->c_fast_store);
	free(s->cu_fast_store);
	free(s->step_ids);
	free(s->step_cands);
	free(s->step_correct);
	free(s->step_pass);
	free(s->step_fast);
	free(s->sample_ids);
	free(s->fast_sample);
	free(s->speedups);
	free(s->scatter);
	memset(s, 0, sizeof *s);
}
