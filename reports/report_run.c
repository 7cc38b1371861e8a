/* report_run.c — the inputs of `crucible report` that are run directories of
 * `crucible run`: which argument is one (run.json says "command": "run"),
 * and their run.json, selected.csv and curve.csv, validated as read (every
 * error names file:line) into struct report_rundir and the curve points of
 * struct report_series. report_run_calc.c computes the tables from them. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reports/report_impl.h"
#include "common/cr_text.h"

const char *const report_strat_names[RST_COUNT] = {
	"best-of-n", "refine", "evolve", "self-consistency",
};

static const char strat_expect[] = "best-of-n, refine, evolve or self-consistency";

static int strat_parse(const char *s)
{
	for (int i = 0; i < RST_COUNT; i++)
		if (!strcmp(s, report_strat_names[i]))
			return i;
	return -1;
}

/* "models/qwen3.gguf" -> "qwen3.gguf" */
static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s && s[1] ? s + 1 : p;
}

/* The directory part of a path ("out/a/results.csv" -> "out/a", "x.csv" -> "."). */
static char *dir_part(const char *path)
{
	const char *s = strrchr(path, '/');

	if (!s)
		return strdup(".");
	if (s == path)
		return strdup("/");
	return strndup(path, (size_t)(s - path));
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* run.json of dir as a json object; *root NULL when there is none. */
static enum cr_status run_json(const char *dir, json_t **root, struct cr_err *e)
{
	char *p = join(dir, "run.json"), *buf = NULL;
	json_error_t je;
	size_t len = 0;
	enum cr_status st = CR_OK;

	*root = NULL;
	if (!p)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	/* a run directory is untrusted: run.json not through a link, not a FIFO */
	if ((buf = cr_read_data(NULL, p, CR_DATA_MAX_JSON, CR_DATA_OPTIONAL, &len, e))) {
		*root = json_loadb(buf, len, 0, &je);
		if (!*root || !json_is_object(*root)) {
			cr_text_escape_inplace(je.text, sizeof je.text);
			st = cr_errf(e, CR_EINPUT, "%s:%d: not a json object%s%s", p,
				     *root ? 1 : je.line, *root ? "" : ": ", *root ? "" : je.text);
			json_decref(*root);
			*root = NULL;
		}
	} else if (errno != ENOENT) {
		st = e && e->status ? e->status : CR_EINPUT;
	}
	free(buf);
	free(p);
	return st;
}

static int is_run(json_t *root)
{
	json_t *c = json_object_get(root, "command");

	return json_is_string(c) && !strcmp(json_string_value(c), "run");
}

enum cr_status report_input_resolve(const char *arg, char **csv, int *isrun, struct cr_err *e)
{
	struct stat sb;
	json_t *root = NULL;
	char *dir = NULL;
	enum cr_status st = CR_OK;

	*csv = NULL;
	*isrun = 0;
	errno = 0;
	if (stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		size_t n = strlen(arg);
		while (n > 1 && arg[n - 1] == '/')
			n--;
		dir = strndup(arg, n);
		if (!dir || !(*csv = join(dir, "results.csv"))) {
			st = cr_errf(e, CR_ENOMEM, "out of memory");
			goto out;
		}
		/* DIR may be a link the user chose; results.csv in it is not followed */
		if (lstat(*csv, &sb) || !S_ISREG(sb.st_mode)) {
			st = cr_errf(e, CR_EINPUT, "%s: cannot open: %s (a run or eval directory "
				     "holds results.csv)", *csv, errno ? strerror(errno) :
				     S_ISLNK(sb.st_mode) ? "a symbolic link (not followed)" :
				     "not a regular file");
			goto out;
		}
	} else {
		if (!(*csv = strdup(arg)) || !(dir = dir_part(arg))) {
			st = cr_errf(e, CR_ENOMEM, "out of memory");
			goto out;
		}
		/* a results.csv named by its path is still its run directory's */
		if (strcmp(base_name(arg), "results.csv"))
			goto out;
	}
	if ((st = run_json(dir, &root, e)) != CR_OK)
		goto out;
	*isrun = root && is_run(root);
out:
	json_decref(root);
	free(dir);
	if (st != CR_OK) {
		free(*csv);
		*csv = NULL;
	}
	return st;
}

/* A column of a run directory's table; missing: CR_EINPUT naming file:1. */
static int need_col(const struct report_table *t, const char *name, struct cr_err *e)
{
	int c = report_table_col(t, name);

	if (c < 0)
		cr_errf(e, CR_EINPUT, "%s:1: missing column '%s' in the header", t->path, name);
	return c;
}

/* Empty -> NAN when allowed; else the whole field a finite number >= 0. */
static int tnum(const struct report_table *t, const struct report_trow *r, int c, int empty_ok,
		double *out, struct cr_err *e)
{
	const char *s = r->f[c];
	char *end;

	if (!*s && empty_ok) {
		*out = NAN;
		return 0;
	}
	errno = 0;
	*out = strtod(s, &end);
	if (!*s || end == s || *end || errno == ERANGE || !isfinite(*out) || *out < 0) {
		cr_errf(e, CR_EINPUT, "%s:%ld: column '%s': expected a number >= 0%s, got '%s'",
			t->path, r->line, t->header[c], empty_ok ? " or empty" : "", s);
		return -1;
	}
	return 0;
}

static int tint(const struct report_table *t, const struct report_trow *r, int c, long lo,
		long hi, long *out, struct cr_err *e)
{
	const char *s = r->f[c];
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	if (!*s || end == s || *end || errno == ERANGE || *out < lo || *out > hi) {
		cr_errf(e, CR_EINPUT, "%s:%ld: column '%s': expected an integer in [%ld, %ld], "
			"got '%s'", t->path, r->line, t->header[c], lo, hi, s);
		return -1;
	}
	return 0;
}

/* A status: a SPEC §4 verdict, or "" (returns RS_COUNT). -1 on error. */
static int tstatus(const struct report_table *t, const struct report_trow *r, int c,
		   struct cr_err *e)
{
	const char *s = r->f[c];

	if (!*s)
		return RS_COUNT;
	for (int i = 0; i < RS_COUNT; i++)
		if (!strcmp(s, report_status_name(i)))
			return i;
	cr_errf(e, CR_EINPUT, "%s:%ld: column '%s': unknown status '%s' (expected a verdict "
		"of SPEC §4, or empty when nothing was picked)", t->path, r->line, t->header[c], s);
	return -1;
}

static int cmp_name(const void *a, const void *b)
{
	return report_name_cmp(*(char *const *)a, *(char *const *)b);
}

long report_rundir_task(const struct report_rundir *d, const char *name)
{
	char *const *p = bsearch(&name, d->tasks, d->n_tasks, sizeof *d->tasks, cmp_name);

	return p ? (long)(p - d->tasks) : -1;
}

/* The task set: --task-list, else the union of the tasks of results.csv,
 * selected.csv and curve.csv. */
static enum cr_status task_set(struct report_rundir *d, const struct report_table *sel,
			       int sel_task, const struct report_table *cur, int cur_task,
			       const struct report_opts *o, struct cr_err *e)
{
	size_t cap = o->task_list && !o->task_union ? o->n_task_list :
		     d->results->n_rows + sel->n_rows + cur->n_rows, n = 0, m = 0;
	const char **v = malloc((cap ? cap : 1) * sizeof *v);

	if (!v)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	if (o->task_list && !o->task_union) {
		d->tasks_from_list = 1;
		for (size_t i = 0; i < o->n_task_list; i++)
			v[n++] = o->task_list[i];
	} else {
		for (size_t i = 0; i < d->results->n_rows; i++)
			v[n++] = d->results->rows[i].task;
		for (size_t i = 0; i < sel->n_rows; i++)
			v[n++] = sel->rows[i].f[sel_task];
		for (size_t i = 0; i < cur->n_rows; i++)
			v[n++] = cur->rows[i].f[cur_task];
	}
	qsort(v, n, sizeof *v, cmp_name);
	d->tasks = calloc(n ? n : 1, sizeof *d->tasks);
	if (!d->tasks) {
		free(v);
		return cr_errf(e, CR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(v[i], d->tasks[m - 1]))
			continue;
		if (!(d->tasks[m] = strdup(v[i]))) {
			d->n_tasks = m;
			free(v);
			return cr_errf(e, CR_ENOMEM, "out of memory");
		}
		m++;
	}
	d->n_tasks = m;
	free(v);
	return CR_OK;
}

/* run.json: strategy (required), generator kind and model. */
static enum cr_status load_meta(struct report_rundir *d, struct cr_err *e)
{
	json_t *root, *g, *s;
	enum cr_status st;
	int k;

	if ((st = run_json(d->dir, &root, e)) != CR_OK)
		return st;
	if (!root)
		return cr_errf(e, CR_EINPUT, "%s/run.json: cannot open: %s", d->dir, strerror(ENOENT));
	s = json_object_get(root, "strategy");
	k = json_is_string(s) ? strat_parse(json_string_value(s)) : -1;
	if (k < 0) {
		st = cr_errf(e, CR_EINPUT, "%s/run.json:1: \"strategy\": expected %s, got %s%s%s",
			     d->dir, strat_expect, json_is_string(s) ? "'" : "",
			     json_is_string(s) ? json_string_value(s) : s ? "a non-string" : "none",
			     json_is_string(s) ? "'" : "");
		goto out;
	}
	d->strategy = (enum report_strat)k;
	g = json_object_get(root, "generator");
	if (json_is_string(json_object_get(g, "kind")))
		snprintf(d->gen_kind, sizeof d->gen_kind, "%s",
			 json_string_value(json_object_get(g, "kind")));
	if (json_is_string(json_object_get(g, "model")))
		snprintf(d->model, sizeof d->model, "%s",
			 base_name(json_string_value(json_object_get(g, "model"))));
	{
		/* the run's name from its own options; what run.json lacks from
		 * the rows: sample j is trajectory j (refine) or sample j of n */
		long smax = -1, last = 0;
		for (size_t i = 0; i < d->results->n_rows; i++) {
			const struct report_row *r = &d->results->rows[i];
			long step = d->strategy == RST_EVOLVE ? r->generation : r->turn;
			smax = r->sample > smax ? r->sample : smax;
			last = step > last ? step : last;
		}
		report_runmeta_read(d->results->path, &d->meta);
		{
			struct report_prov pv;
			report_prov_read(d->results->path, &pv);
			d->untimed = pv.timing == 0;
		}
		smax = smax < INT_MAX ? smax + 1 : INT_MAX;
		report_name_strategy(report_strat_names[d->strategy], &d->meta, smax, smax, last,
				     d->name, sizeof d->name);
	}
	if (!*d->model && d->results->n_rows) {
		/* no model in run.json: the rows', when they agree */
		const char *m = d->results->rows[0].model;
		for (size_t i = 1; i < d->results->n_rows && m; i++)
			if (strcmp(d->results->rows[i].model, m))
				m = NULL;
		snprintf(d->model, sizeof d->model, "%s", m ? base_name(m) : "mixed");
	}
out:
	json_decref(root);
	return st;
}

/* selected.csv: one row per task. */
static enum cr_status load_selected(struct report_rundir *d, const struct report_table *t,
				    const struct report_opts *o, struct cr_err *e)
{
	static const char *const need[] = { "task", "candidate", "status", "backward", "speedup",
					    "reason", "tokens_spent", "candidates", "stopped" };
	int c[9];

	for (int i = 0; i < 9; i++)
		if ((c[i] = need_col(t, need[i], e)) < 0)
			return CR_EINPUT;
	d->picks = calloc(d->n_tasks ? d->n_tasks : 1, sizeof *d->picks);
	if (!d->picks)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < d->n_tasks; i++) {
		d->picks[i].speedup = NAN;
		d->picks[i].tokens_spent = NAN;
	}
	d->n_selected = t->n_rows;
	for (size_t i = 0; i < t->n_rows; i++) {
		const struct report_trow *r = &t->rows[i];
		struct report_pick *p;
		const char *bw = r->f[c[3]], *stop = r->f[c[8]];
		long ti = report_rundir_task(d, r->f[c[0]]), ncand;
		int status = tstatus(t, r, c[2], e), b;

		if (!*r->f[c[0]])
			return cr_errf(e, CR_EINPUT, "%s:%ld: column 'task' is empty", t->path, r->line);
		if (status < 0)
			return CR_EINPUT;
		if ((status == RS_COUNT) != !*r->f[c[1]])
			return cr_errf(e, CR_EINPUT, "%s:%ld: candidate and status must be both empty "
				       "(no candidate picked) or both given, got '%s' and '%s'",
				       t->path, r->line, r->f[c[1]], r->f[c[2]]);
		for (b = 0; b < RB_COUNT && strcmp(bw, report_bw_names[b]); b++)
			;
		if (!*bw)
			b = RB_NONE;
		else if (b == RB_COUNT)
			return cr_errf(e, CR_EINPUT, "%s:%ld: column 'backward': expected pass, fail, "
				       "absent, none or empty, got '%s'", t->path, r->line, bw);
		if (strcmp(stop, "done") && strcmp(stop, "budget") && strcmp(stop, "over_budget"))
			return cr_errf(e, CR_EINPUT, "%s:%ld: column 'stopped': expected done, budget "
				       "or over_budget, got '%s'", t->path, r->line, stop);
		if (ti < 0) {
			d->n_left_out++;
			continue;
		}
		p = &d->picks[ti];
		if (p->line)
			return cr_errf(e, CR_EINPUT, "%s:%ld: task %s picked again (first at line %ld)",
				       t->path, r->line, d->tasks[ti], p->line);
		p->line = r->line;
		if (tnum(t, r, c[4], 1, &p->speedup, e) || tnum(t, r, c[6], 1, &p->tokens_spent, e) ||
		    (*r->f[c[7]] && tint(t, r, c[7], 0, 1L << 40, &ncand, e)))
			return CR_EINPUT;
		if (p->speedup == 0)
			return cr_errf(e, CR_EINPUT, "%s:%ld: column 'speedup': must be > 0, got '%s'",
				       t->path, r->line, r->f[c[4]]);
		p->picked = status != RS_COUNT;
		p->correct = status == RS_OK && b != RB_FAIL &&
			     !(o->strict_backward && b == RB_ABSENT);
		/* over_budget: a completion took the task past its budget (a
		 * replay, a retried stream's lost tokens): a budget stop too */
		p->budget_stop = !strcmp(stop, "budget") || !strcmp(stop, "over_budget");
		p->over_budget = !strcmp(stop, "over_budget");
		d->n_budget_stop += p->budget_stop;
		d->n_over_budget += p->over_budget;
	}
	return CR_OK;
}

static int cmp_pt(const void *a, const void *b)
{
	const struct report_curve_pt *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

/* The series of (dir, strategy, model), added when new. */
static struct report_series *series_of(struct report_runs *R, size_t dir, enum report_strat s,
				       const char *model, struct cr_err *e)
{
	struct report_series *ns;

	for (size_t i = 0; i < R->n_ser; i++)
		if (R->ser[i].dir == dir && R->ser[i].strategy == s && !strcmp(R->ser[i].model, model))
			return &R->ser[i];
	if (!(ns = realloc(R->ser, (R->n_ser + 1) * sizeof *ns))) {
		cr_errf(e, CR_ENOMEM, "out of memory");
		return NULL;
	}
	R->ser = ns;
	ns = &R->ser[R->n_ser++];
	memset(ns, 0, sizeof *ns);
	ns->dir = dir;
	ns->strategy = s;
	snprintf(ns->model, sizeof ns->model, "%s", model);
	return ns;
}

static enum cr_status push_pt(struct report_series *s, const struct report_curve_pt *p,
			      struct cr_err *e)
{
	struct report_curve_pt *np;

	if (s->n_pts == s->cap_pts) {
		size_t cap = s->cap_pts ? 2 * s->cap_pts : 16;
		if (!(np = realloc(s->pts, cap * sizeof *np)))
			return cr_errf(e, CR_ENOMEM, "out of memory");
		s->pts = np;
		s->cap_pts = cap;
	}
	s->pts[s->n_pts++] = *p;
	return CR_OK;
}

/* The pick's timing figure is flagged noisy in the run's results.csv (its
 * row with the same task and candidate); not noisy when no row matches. */
static int pick_noisy(const struct report_rundir *d, const char *task, const char *cand)
{
	const struct report_run *res = d->results;

	for (size_t i = 0; res && *cand && i < res->n_rows; i++)
		if (!strcmp(res->rows[i].task, task) && !strcmp(res->rows[i].candidate, cand))
			return res->rows[i].noisy == 1;
	return 0;
}

/* One curve.csv row into p; the strategy and model of its series. fast1 is
 * kept only for a trusted figure: a pick whose results.csv row is noisy is
 * correct but not fast (issue 29), whether or not curve.csv already says so. */
static int curve_row(const struct report_rundir *d, const struct report_table *t,
		     const struct report_trow *r, const int *c, struct report_curve_pt *p,
		     int *strat, const char **model, struct cr_err *e)
{
	double correct, fast1;
	long v;
	int status, noisy;

	*strat = *r->f[c[0]] ? strat_parse(r->f[c[0]]) : (int)d->strategy;
	if (*strat < 0)
		return cr_errf(e, CR_EINPUT, "%s:%ld: column 'strategy': expected %s, got '%s'",
			       t->path, r->line, strat_expect, r->f[c[0]]), -1;
	*model = *r->f[c[1]] ? base_name(r->f[c[1]]) : *d->model ? d->model : "unknown model";
	if (!*r->f[c[2]])
		return cr_errf(e, CR_EINPUT, "%s:%ld: column 'task' is empty", t->path, r->line), -1;
	if (tint(t, r, c[3], 1, 1L << 40, &p->step, e) || tnum(t, r, c[4], 0, &p->tokens, e) ||
	    tint(t, r, c[5], 0, 1L << 40, &p->turn, e) || (status = tstatus(t, r, c[7], e)) < 0 ||
	    tnum(t, r, c[8], 1, &p->speedup, e) || tint(t, r, c[9], 0, 1, &v, e))
		return -1;
	correct = (double)v;
	if (tint(t, r, c[10], 0, 1, &v, e))
		return -1;
	fast1 = (double)v;
	if ((status == RS_COUNT) != !*r->f[c[6]])
		return cr_errf(e, CR_EINPUT, "%s:%ld: selected and status must be both empty "
			       "(nothing picked yet) or both given, got '%s' and '%s'", t->path,
			       r->line, r->f[c[6]], r->f[c[7]]), -1;
	if (p->speedup == 0)
		return cr_errf(e, CR_EINPUT, "%s:%ld: column 'speedup': must be > 0, got '%s'",
			       t->path, r->line, r->f[c[8]]), -1;
	if (correct && status != RS_OK)
		return cr_errf(e, CR_EINPUT, "%s:%ld: correct is 1 but status is '%s' (correct "
			       "needs ok)", t->path, r->line, r->f[c[7]]), -1;
	noisy = correct && p->speedup > 1 && pick_noisy(d, r->f[c[2]], r->f[c[6]]);
	if (fast1 != (correct && p->speedup > 1) && !(noisy && !fast1))
		return cr_errf(e, CR_EINPUT, "%s:%ld: fast1 is %.0f but correct is %.0f and speedup "
			       "'%s' (fast1 = 1 iff correct and speedup > 1)", t->path, r->line,
			       fast1, correct, r->f[c[8]]), -1;
	p->line = r->line;
	p->correct = (int)correct;
	p->fast1 = (int)fast1 && !noisy;
	return 0;
}

/* curve.csv into the run's series; points in (task, step) order, steps
 * strictly increasing and cumulative_tokens non-decreasing per task. */
static enum cr_status load_curve(struct report_runs *R, size_t di, const struct report_table *t,
				 struct cr_err *e)
{
	static const char *const need[] = { "strategy", "model", "task", "step",
					    "cumulative_tokens", "turn", "selected", "status",
					    "speedup", "correct", "fast1" };
	struct report_rundir *d = &R->dirs[di];
	size_t first_ser = R->n_ser;
	int c[11];
	enum cr_status st;

	for (int i = 0; i < 11; i++)
		if ((c[i] = need_col(t, need[i], e)) < 0)
			return CR_EINPUT;
	for (size_t i = 0; i < t->n_rows; i++) {
		struct report_curve_pt p = { 0 };
		struct report_series *s;
		const char *model;
		int strat;
		long ti;

		if (curve_row(d, t, &t->rows[i], c, &p, &strat, &model, e))
			return CR_EINPUT;
		if ((ti = report_rundir_task(d, t->rows[i].f[c[2]])) < 0) {
			d->n_left_out++;
			continue;
		}
		p.task = (size_t)ti;
		if (!(s = series_of(R, di, (enum report_strat)strat, model, e)))
			return CR_ENOMEM;
		if ((st = push_pt(s, &p, e)) != CR_OK)
			return st;
	}
	for (size_t si = first_ser; si < R->n_ser; si++) {
		struct report_series *s = &R->ser[si];
		s->first = calloc(d->n_tasks ? d->n_tasks : 1, sizeof *s->first);
		s->count = calloc(d->n_tasks ? d->n_tasks : 1, sizeof *s->count);
		if (!s->first || !s->count)
			return cr_errf(e, CR_ENOMEM, "out of memory");
		qsort(s->pts, s->n_pts, sizeof *s->pts, cmp_pt);
		for (size_t i = 0; i < s->n_pts; i++) {
			const struct report_curve_pt *p = &s->pts[i], *q = i ? &s->pts[i - 1] : NULL;
			if (q && q->task == p->task && q->step == p->step)
				return cr_errf(e, CR_EINPUT, "%s:%ld: step %ld of task %s (%s %s) "
					       "again (first at line %ld)", t->path, p->line, p->step,
					       d->tasks[p->task], report_strat_names[s->strategy],
					       s->model, q->line);
			if (q && q->task == p->task && p->tokens < q->tokens)
				return cr_errf(e, CR_EINPUT, "%s:%ld: cumulative_tokens %g at step %ld "
					       "is below step %ld's %g (line %ld): the tokens spent so "
					       "far cannot fall", t->path, p->line, p->tokens, p->step,
					       q->step, q->tokens, q->line);
			if (!q || q->task != p->task)
				s->first[p->task] = i;
			s->count[p->task]++;
			if (p->step > s->max_step)
				s->max_step = p->step;
		}
	}
	return CR_OK;
}

/* Every correct candidate of results.csv, per task of the set. */
static enum cr_status oracle(struct report_rundir *d, const struct report_opts *o,
			     struct cr_err *e)
{
	d->oracle = calloc(d->n_tasks ? d->n_tasks : 1, sizeof *d->oracle);
	if (!d->oracle)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < d->results->n_rows; i++) {
		long t = report_rundir_task(d, d->results->rows[i].task);
		if (t >= 0 && report_row_correct(&d->results->rows[i], o))
			d->oracle[t] = 1;
	}
	for (size_t t = 0; t < d->n_tasks; t++)
		d->n_oracle += d->oracle[t];
	return CR_OK;
}

/* One run directory: run.json, selected.csv, curve.csv. */
static enum cr_status load_dir(struct report_runs *R, size_t di, const struct report_opts *o,
			       struct cr_err *e)
{
	struct report_rundir *d = &R->dirs[di];
	struct report_table sel = { 0 }, cur = { 0 };
	char *ps = join(d->dir, "selected.csv"), *pc = join(d->dir, "curve.csv");
	int cs, cc;
	enum cr_status st;

	if (!ps || !pc) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	if ((st = load_meta(d, e)) != CR_OK || (st = report_table_load(ps, &sel, e)) != CR_OK ||
	    (st = report_table_load(pc, &cur, e)) != CR_OK)
		goto out;
	if ((cs = need_col(&sel, "task", e)) < 0 || (cc = need_col(&cur, "task", e)) < 0) {
		st = CR_EINPUT;
		goto out;
	}
	if ((st = task_set(d, &sel, cs, &cur, cc, o, e)) != CR_OK ||
	    (st = load_selected(d, &sel, o, e)) != CR_OK || (st = load_curve(R, di, &cur, e)) != CR_OK)
		goto out;
	st = oracle(d, o, e);
out:
	report_table_release(&sel);
	report_table_release(&cur);
	free(ps);
	free(pc);
	return st;
}

enum cr_status report_runs_load(struct report_runs *R, char *const *dirs,
				const struct report_run *const *results, size_t n,
				const struct report_opts *o, struct cr_err *e)
{
	enum cr_status st = CR_OK;

	memset(R, 0, sizeof *R);
	if (!(R->dirs = calloc(n ? n : 1, sizeof *R->dirs)))
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct report_rundir *d = &R->dirs[R->n_dirs++];
		d->results = results[i];
		if (!(d->dir = strdup(dirs[i]))) {
			st = cr_errf(e, CR_ENOMEM, "out of memory");
			goto out;
		}
		if ((st = load_dir(R, i, o, e)) != CR_OK)
			goto out;
	}
	st = report_runs_compute(R, e);
out:
	if (st != CR_OK)
		report_runs_release(R);
	return st;
}

void report_runs_release(struct report_runs *R)
{
	if (!R)
		return;
	for (size_t i = 0; i < R->n_dirs; i++) {
		struct report_rundir *d = &R->dirs[i];
		for (size_t t = 0; t < d->n_tasks; t++)
			free(d->tasks[t]);
		free(d->tasks);
		free(d->picks);
		free(d->oracle);
		free(d->dir);
	}
	for (size_t i = 0; i < R->n_ser; i++) {
		struct report_series *s = &R->ser[i];
		free(s->pts);
		free(s->first);
		free(s->count);
		free(s->tok_correct);
		free(s->tok_fast1);
		free(s->step_correct);
		free(s->step_fast1);
	}
	free(R->dirs);
	free(R->ser);
	free(R->grid);
	free(R->steps);
	free(R->by_strat);
	free(R->by_model);
	free(R->sc);
	memset(R, 0, sizeof *R);
}
