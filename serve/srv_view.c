/* srv_view.c — what the service shows, read from the store: a submission
 * (SUBMISSION), a board with its rankings (BOARDVIEW), a reward group, and
 * the text a scored submission's signature covers (docs/SERVE.md).
 *
 * The ranking rule: a submission ranks when its public and its secret run
 * are both ok; its score is the public run's speedup_lo (the secret run is
 * a gate: only its verdict is kept). Per task, each user's best ranked
 * submission counts; a geomean board ranks users who have one on every
 * task by the geometric mean of those. The secret run's detail is never
 * read here: it can describe cases drawn from the secret seed. */
#include "serve/srv_store.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double num(const char *s)
{
	return s && *s ? strtod(s, NULL) : NAN;
}

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *jtime(const char *ms)
{
	if (!ms)
		return json_null();
	time_t t = (time_t)(strtoll(ms, NULL, 10) / 1000);
	struct tm tm;
	char b[32];
	gmtime_r(&t, &tm);
	strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(b);
}

/* One submission with its two runs, as the board's query returns it. */
struct sub {
	int64_t id;
	const char *user, *task, *file_name, *created, *state;
	const char *p_state, *p_status, *p_detail, *s_state, *s_status;
	const char *p_harness, *s_harness; /* why the harness failed (a secret run's: "exit N") */
	double p_speed, p_lo, p_hi, s_speed;
	bool ranked, removed;    /* removed: its user was removed by the operator */
	double score;
};

#define SUB_SEL                                                                                  \
	"s.id, u.name, s.task, s.file_name, s.created_ms, s.state, pj.state, pj.status, "          \
	"pj.detail, sj.state, sj.status, pj.speedup, pj.speedup_lo, pj.speedup_hi, sj.speedup, "    \
	"s.board, s.sha256, s.public_seed, s.scored_ms, s.user_id, pj.harness_error, "              \
	"sj.harness_error, CASE WHEN substr(u.token_hash, 1, 8) = 'removed:' THEN 1 ELSE 0 END "
#define SUB_FROM                                                                                 \
	"FROM submissions s JOIN users u ON u.id = s.user_id "                                      \
	"LEFT JOIN jobs pj ON pj.submission_id = s.id AND pj.kind = 'public' "                      \
	"LEFT JOIN jobs sj ON sj.submission_id = s.id AND sj.kind = 'secret' "
#define SUB_COLS SUB_SEL SUB_FROM

/* Ranked: scored, both runs ok, and its user not removed by the operator. */
#define RANKED                                                                                   \
	"s.state = 'scored' AND pj.status = 'ok' AND sj.status = 'ok' AND "                         \
	"substr(u.token_hash, 1, 8) <> 'removed:'"

/* Each user's best ranked submission per task (the rule of `better`: the
 * higher score, none after any, then the earlier), reduced in the database:
 * a board's view costs what its users and tasks cost, not its history. */
#define BEST_RANKED(where)                                                                       \
	"SELECT * FROM (SELECT " SUB_SEL ", ROW_NUMBER() OVER (PARTITION BY s.user_id, s.task "    \
	"ORDER BY pj.speedup_lo DESC NULLS LAST, s.id) AS best_rn " SUB_FROM "WHERE " where         \
	" AND " RANKED ") t WHERE best_rn = 1"

static void sub_read(const struct srv_rows *r, int i, struct sub *s)
{
	s->id = strtoll(srv_rows_get(r, i, 0), NULL, 10);
	s->user = srv_rows_get(r, i, 1);
	s->task = srv_rows_get(r, i, 2);
	s->file_name = srv_rows_get(r, i, 3);
	s->created = srv_rows_get(r, i, 4);
	s->state = srv_rows_get(r, i, 5);
	s->p_state = srv_rows_get(r, i, 6);
	s->p_status = srv_rows_get(r, i, 7);
	s->p_detail = srv_rows_get(r, i, 8);
	s->s_state = srv_rows_get(r, i, 9);
	s->s_status = srv_rows_get(r, i, 10);
	s->p_speed = num(srv_rows_get(r, i, 11));
	s->p_lo = num(srv_rows_get(r, i, 12));
	s->p_hi = num(srv_rows_get(r, i, 13));
	s->s_speed = num(srv_rows_get(r, i, 14));
	s->p_harness = srv_rows_get(r, i, 20);
	s->s_harness = srv_rows_get(r, i, 21);
	s->removed = srv_rows_get(r, i, 22) && !strcmp(srv_rows_get(r, i, 22), "1");
	/* the rule RANKED says in SQL, said again for a single row */
	s->ranked = s->state && !strcmp(s->state, "scored") && s->p_status &&
		    !strcmp(s->p_status, "ok") && s->s_status && !strcmp(s->s_status, "ok") &&
		    !s->removed;
	/* the score is the public run's speedup at the low end of its interval
	 * (resubmitting to catch a lucky draw earns nothing); the secret run
	 * gates, and only its verdict is ever shown */
	s->score = s->ranked ? s->p_lo : NAN;
}

static const char *why_not(const struct sub *s)
{
	if (s->ranked)
		return NULL;
	if (!s->state || !strcmp(s->state, "queued") || !strcmp(s->state, "running"))
		return "not scored yet";
	if (s->removed)
		return "its user was removed";
	if (!strcmp(s->state, "error"))
		return "the harness failed on it (not charged: resubmit)";
	if (!s->p_status || strcmp(s->p_status, "ok"))
		return "the public run did not pass";
	return "the secret run did not pass";
}

static const char *run_state(const char *job_state)
{
	return job_state ? job_state : "queued";
}

/* Better first: a higher score; NaN (an untimed board) after numbers;
 * ties to the earlier submission. */
static int better(const struct sub *a, const struct sub *b)
{
	bool na = isnan(a->score), nb = isnan(b->score);
	if (na != nb)
		return na ? 1 : -1;
	if (!na && a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_sub(const void *x, const void *y)
{
	return better(*(const struct sub *const *)x, *(const struct sub *const *)y);
}

/* Each user's best ranked submission of task, best first, into best[]
 * (pointers into subs); returns how many. */
static int task_best(struct sub *subs, int n, const char *task, struct sub **best)
{
	int m = 0;
	for (int i = 0; i < n; i++) {
		struct sub *s = &subs[i];
		if (!s->ranked || strcmp(s->task, task))
			continue;
		int k = 0;
		while (k < m && strcmp(best[k]->user, s->user))
			k++;
		if (k == m)
			best[m++] = s;
		else if (better(s, best[k]) < 0)
			best[k] = s;
	}
	qsort(best, m, sizeof *best, cmp_sub);
	return m;
}

/* A submission as lists show it; with_detail (its owner's view only) adds
 * the public run's detail: on a board, other users' details (a compiler
 * quoting the source) are not shown. */
static json_t *sub_brief(const struct sub *s, bool with_detail)
{
	json_t *j = json_object();
	json_object_set_new(j, "id", json_integer(s->id));
	json_object_set_new(j, "user", jstr(s->user));
	json_object_set_new(j, "task", jstr(s->task));
	json_object_set_new(j, "file_name", jstr(s->file_name));
	json_object_set_new(j, "created", jtime(s->created));
	json_object_set_new(j, "state", jstr(s->state));
	json_object_set_new(j, "public",
			    json_pack("{s:s, s:o, s:o}", "state", run_state(s->p_state), "status",
				      jstr(s->p_status), "speedup", jreal(s->p_speed)));
	if (with_detail)
		json_object_set_new(json_object_get(j, "public"), "detail", jstr(s->p_detail));
	json_object_set_new(j, "secret",
			    json_pack("{s:s, s:o}", "state", run_state(s->s_state), "status",
				      jstr(s->s_status)));
	/* the harness's failure, said when it ended the run, so the submitter
	 * knows why (a secret run's says only how check ended) */
	if (s->p_status && !strcmp(s->p_status, "harness_error"))
		json_object_set_new(json_object_get(j, "public"), "harness_error", jstr(s->p_harness));
	if (s->s_status && !strcmp(s->s_status, "harness_error"))
		json_object_set_new(json_object_get(j, "secret"), "harness_error", jstr(s->s_harness));
	json_object_set_new(j, "ranked", json_boolean(s->ranked));
	json_object_set_new(j, "score", jreal(s->score));
	json_object_set_new(j, "why_not_ranked", jstr(why_not(s)));
	return j;
}

struct task_list {
	char **names;
	int n;
};

static void tasks_split(const char *csv, struct task_list *t)
{
	t->n = 0;
	t->names = NULL;
	for (const char *s = csv; s && *s;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char **nn = realloc(t->names, (size_t)(t->n + 1) * sizeof *nn);
		if (!nn)
			break;
		t->names = nn;
		t->names[t->n++] = strndup(s, len);
		s = e ? e + 1 : s + len;
	}
}

static void tasks_free(struct task_list *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
}

static bool entry_before(double a, int64_t fa, double b, int64_t fb)
{
	bool na = isnan(a), nb = isnan(b);
	if (na != nb)
		return nb;
	if (!na && a != b)
		return a > b;
	return fa < fb;
}

/* The board's rankings from its submissions. */
static json_t *rankings(struct sub *subs, int n, const struct task_list *tl, bool geomean,
			json_t **task_rankings)
{
	struct sub **best = calloc((size_t)n + 1, sizeof *best);
	json_t *tr = json_array();
	/* users[u] and per-task bests, for the geomean */
	int n_users = 0;
	const char **users = calloc((size_t)n + 1, sizeof *users);
	struct sub **ub = calloc(((size_t)n + 1) * (size_t)(tl->n + 1), sizeof *ub);
	for (int t = 0; best && users && ub && t < tl->n; t++) {
		int m = task_best(subs, n, tl->names[t], best);
		json_t *rows = json_array();
		for (int k = 0; k < m; k++) {
			json_array_append_new(rows, json_pack("{s:i, s:s, s:o, s:I}", "rank", k + 1,
							      "user", best[k]->user, "speedup",
							      jreal(best[k]->score), "submission",
							      (json_int_t)best[k]->id));
			int u = 0;
			while (u < n_users && strcmp(users[u], best[k]->user))
				u++;
			if (u == n_users)
				users[n_users++] = best[k]->user;
			ub[(size_t)u * (size_t)tl->n + (size_t)t] = best[k];
		}
		json_array_append_new(tr, json_pack("{s:s, s:o}", "task", tl->names[t], "ranking", rows));
	}
	*task_rankings = tr;
	json_t *ranking = json_array();
	if (geomean && best && users && ub) {
		struct entry {
			int u;
			double score;
			int64_t first;
		} *e = calloc((size_t)n_users + 1, sizeof *e);
		int m = 0;
		for (int u = 0; e && u < n_users; u++) {
			double lsum = 0;
			int64_t last = 0;
			bool all = true;
			for (int t = 0; t < tl->n; t++) {
				struct sub *s = ub[(size_t)u * (size_t)tl->n + (size_t)t];
				if (!s) {
					all = false;
					break;
				}
				/* an untimed board has no speedup: no score, ranked by time */
				lsum += isfinite(s->score) && s->score > 0 ? log(s->score) : NAN;
				if (s->id > last)
					last = s->id;
			}
			if (all)
				e[m++] = (struct entry){ u, exp(lsum / tl->n), last };
		}
		/* insertion sort: higher score first (none after any), ties and
		 * unscored to the earlier complete set */
		for (int i = 1; i < m; i++)
			for (int k = i; k > 0 && entry_before(e[k].score, e[k].first, e[k - 1].score,
							      e[k - 1].first);
			     k--) {
				struct entry x = e[k];
				e[k] = e[k - 1];
				e[k - 1] = x;
			}
		for (int i = 0; i < m; i++) {
			json_t *pt = json_array();
			for (int t = 0; t < tl->n; t++) {
				struct sub *s = ub[(size_t)e[i].u * (size_t)tl->n + (size_t)t];
				json_array_append_new(pt, json_pack("{s:s, s:o, s:I}", "task",
								    tl->names[t], "speedup",
								    jreal(s->score), "submission",
								    (json_int_t)s->id));
			}
			json_array_append_new(ranking, json_pack("{s:i, s:s, s:o, s:o}", "rank", i + 1,
								 "user", users[e[i].u], "score",
								 jreal(e[i].score), "per_task", pt));
		}
		free(e);
	}
	free(best);
	free(users);
	free(ub);
	return ranking;
}

enum { HISTORY_MAX = 500 }; /* submissions listed per board, newest first */


/* The rows of a query, read. */
static enum cr_status subs_query(struct srv_db *db, const char *sql, int n, const char *const *p,
				 struct srv_rows *r, struct sub **subs, struct cr_err *err)
{
	enum cr_status st = srv_db_exec(db, sql, n, p, r, err);
	if (st)
		return st;
	*subs = calloc((size_t)r->nrows + 1, sizeof **subs);
	if (!*subs) {
		srv_rows_free(r);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++)
		sub_read(r, i, &(*subs)[i]);
	return CR_OK;
}

/* A board's view: the ranking from its ranked submissions only, the
 * history from the newest HISTORY_MAX (a board of many thousand
 * submissions costs what its ranked rows and one page of history cost). */
static enum cr_status board_view_row(struct srv_db *db, const struct srv_rows *br, int bi,
				     json_t **out, struct cr_err *err)
{
	const char *name = srv_rows_get(br, bi, 0);
	struct srv_rows r = { 0 }, h = { 0 }, c = { 0 };
	struct sub *ranked = NULL, *hist_subs = NULL;
	const char *p[] = { name };
	enum cr_status st = subs_query(db, BEST_RANKED("s.board = $1"), 1, p, &r, &ranked, err);
	if (!st)
		st = subs_query(db,
				"SELECT " SUB_COLS "WHERE s.board = $1 ORDER BY s.id DESC LIMIT 500", 1,
				p, &h, &hist_subs, err);
	if (!st)
		st = srv_db_exec(db, "SELECT count(*) FROM submissions WHERE board = $1", 1, p, &c,
				 err);
	if (st)
		goto out;
	struct task_list tl;
	tasks_split(srv_rows_get(br, bi, 1), &tl);
	bool geomean = !strcmp(srv_rows_get(br, bi, 3), "geomean");
	json_t *tr = NULL;
	json_t *ranking = rankings(ranked, r.nrows, &tl, geomean, &tr);
	json_t *tasks = json_array();
	for (int t = 0; t < tl.n; t++)
		json_array_append_new(tasks, json_string(tl.names[t]));
	json_t *hist = json_array();
	for (int i = 0; i < h.nrows && i < HISTORY_MAX; i++)
		json_array_append_new(hist, sub_brief(&hist_subs[i], false));
	*out = json_pack("{s:s, s:o, s:s, s:s, s:b, s:o, s:o, s:o, s:I}", "name", name, "tasks",
			 tasks, "backend", srv_rows_get(br, bi, 2), "rank", srv_rows_get(br, bi, 3),
			 "timing", strcmp(srv_rows_get(br, bi, 4), "0") != 0, "ranking", ranking,
			 "task_rankings", tr, "submissions", hist, "n_submissions",
			 (json_int_t)strtoll(srv_rows_get(&c, 0, 0), NULL, 10));
	tasks_free(&tl);
	if (!*out)
		st = cr_errf(err, CR_ENOMEM, "out of memory");
out:
	free(ranked);
	free(hist_subs);
	srv_rows_free(&r);
	srv_rows_free(&h);
	srv_rows_free(&c);
	return st;
}

#define BOARD_COLS "SELECT name, tasks, backend, rank_rule, timing FROM boards "

enum cr_status srv_board_view(struct srv_db *db, const char *name, json_t **out, bool *found,
			      struct cr_err *err)
{
	*out = NULL;
	*found = false;
	struct srv_rows br = { 0 };
	const char *p[] = { name };
	enum cr_status st = srv_db_exec(db, BOARD_COLS "WHERE name = $1", 1, p, &br, err);
	if (!st && br.nrows == 1) {
		*found = true;
		st = board_view_row(db, &br, 0, out, err);
	}
	srv_rows_free(&br);
	return st;
}

enum cr_status srv_boards_view(struct srv_db *db, json_t **out, struct cr_err *err)
{
	*out = NULL;
	struct srv_rows br = { 0 };
	enum cr_status st = srv_db_exec(db, BOARD_COLS "ORDER BY name", 0, NULL, &br, err);
	json_t *a = json_array();
	for (int i = 0; !st && i < br.nrows; i++) {
		json_t *b = NULL;
		st = board_view_row(db, &br, i, &b, err);
		if (!st)
			json_array_append_new(a, b);
	}
	srv_rows_free(&br);
	if (st) {
		json_decref(a);
		return st;
	}
	*out = json_pack("{s:o}", "boards", a);
	return CR_OK;
}

/* This submission's place in its task: 1 + the users whose best beats it. */
static enum cr_status place(struct srv_db *db, const char *board, const struct sub *me, int *rank,
			    int *of, struct cr_err *err)
{
	struct srv_rows r = { 0 };
	const char *p[] = { board, me->task };
	enum cr_status st =
		srv_db_exec(db, BEST_RANKED("s.board = $1 AND s.task = $2"), 2, p, &r, err);
	if (st)
		return st;
	struct sub *subs = calloc((size_t)r.nrows + 1, sizeof *subs);
	struct sub **best = calloc((size_t)r.nrows + 1, sizeof *best);
	if (!subs || !best) {
		free(subs);
		free(best);
		srv_rows_free(&r);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	for (int i = 0; i < r.nrows; i++)
		sub_read(&r, i, &subs[i]);
	int m = task_best(subs, r.nrows, me->task, best);
	*rank = 1;
	*of = 1;
	for (int k = 0; k < m; k++) {
		if (!strcmp(best[k]->user, me->user))
			continue;
		(*of)++;
		if (better(best[k], me) < 0)
			(*rank)++;
	}
	free(subs);
	free(best);
	srv_rows_free(&r);
	return CR_OK;
}

enum cr_status srv_sub_json(struct srv_db *db, int64_t id, const struct srv_user *viewer,
			    json_t **out, bool *found, struct cr_err *err)
{
	*out = NULL;
	*found = false;
	char ids[24];
	snprintf(ids, sizeof ids, "%" PRId64, id);
	struct srv_rows r = { 0 };
	const char *p[] = { ids };
	enum cr_status st = srv_db_exec(db, "SELECT " SUB_COLS "WHERE s.id = $1", 1, p, &r, err);
	if (st || r.nrows != 1)
		goto out;
	if (viewer && !viewer->admin && strtoll(srv_rows_get(&r, 0, 19), NULL, 10) != viewer->id)
		goto out; /* another user's: the same answer as none */
	struct sub s;
	sub_read(&r, 0, &s);
	*found = true;
	json_t *j = sub_brief(&s, true);
	json_object_set_new(j, "board", jstr(srv_rows_get(&r, 0, 15)));
	json_object_set_new(j, "sha256", jstr(srv_rows_get(&r, 0, 16)));
	json_object_set_new(j, "scored", jtime(srv_rows_get(&r, 0, 18)));
	json_t *pub = json_object_get(j, "public");
	json_object_set_new(pub, "seed", jstr(srv_rows_get(&r, 0, 17)));
	json_object_set_new(pub, "speedup_lo", jreal(s.p_lo));
	json_object_set_new(pub, "speedup_hi", jreal(s.p_hi));
	json_t *rank = json_null(), *of = json_null();
	if (s.ranked) {
		int k = 0, n = 0;
		st = place(db, srv_rows_get(&r, 0, 15), &s, &k, &n, err);
		if (st) {
			json_decref(j);
			goto out;
		}
		rank = json_integer(k);
		of = json_integer(n);
	}
	json_object_set_new(j, "rank", rank);
	json_object_set_new(j, "of", of);
	*out = j;
out:
	srv_rows_free(&r);
	return st;
}

static const char *jget_s(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void copy(json_t *dst, const char *key, const json_t *src, const char *from)
{
	const json_t *v = json_object_get(src, from);
	json_object_set_new(dst, key, v ? json_deep_copy(v) : json_null());
}

json_t *srv_sub_signed(const json_t *sub)
{
	const char *state = jget_s(sub, "state");
	if (!state || (strcmp(state, "scored") && strcmp(state, "error")))
		return NULL;
	const json_t *pub = json_object_get(sub, "public"), *sec = json_object_get(sub, "secret");
	if (!json_is_object(pub) || !json_is_object(sec))
		return NULL;
	json_t *o = json_object();
	static const char *const top[] = { "board", "id", "user", "task", "file_name", "sha256",
					   "state", "created", "scored", "ranked", "score" };
	for (size_t i = 0; i < sizeof top / sizeof *top; i++)
		copy(o, top[i], sub, top[i]);
	copy(o, "public_seed", pub, "seed");
	copy(o, "public_status", pub, "status");
	copy(o, "public_speedup", pub, "speedup");
	copy(o, "public_speedup_lo", pub, "speedup_lo");
	copy(o, "public_speedup_hi", pub, "speedup_hi");
	copy(o, "secret_status", sec, "status");
	json_object_set_new(o, "version", json_string("crucible-result v1"));
	return o;
}

char *srv_signed_canon(const json_t *obj)
{
	if (!json_is_object(obj))
		return NULL;
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)obj, k, v)
		if (json_is_object(v) || json_is_array(v))
			return NULL;
	return json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII |
				       JSON_REAL_PRECISION(17));
}

enum cr_status srv_reward_json(struct srv_db *db, int64_t id, const struct srv_user *viewer,
			       json_t **out, bool *found, bool *done, struct cr_err *err)
{
	*out = NULL;
	*found = false;
	*done = false;
	char ids[24];
	snprintf(ids, sizeof ids, "%" PRId64, id);
	struct srv_rows g = { 0 }, r = { 0 };
	const char *p[] = { ids };
	enum cr_status st =
		srv_db_exec(db, "SELECT task, user_id, seed, timing FROM rewards WHERE id = $1", 1, p,
			    &g, err);
	if (st || g.nrows != 1)
		goto out;
	if (viewer && !viewer->admin && strtoll(srv_rows_get(&g, 0, 1), NULL, 10) != viewer->id)
		goto out;
	st = srv_db_exec(db,
			 "SELECT idx, state, status, speedup, speedup_lo, speedup_hi, noisy, "
			 "code_block, feedback, harness_error FROM jobs WHERE reward_id = $1 ORDER BY idx",
			 1, p, &r, err);
	if (st)
		goto out;
	*found = true;
	int n_done = 0;
	json_t *res = json_array();
	for (int i = 0; i < r.nrows; i++) {
		const char *state = srv_rows_get(&r, i, 1), *status = srv_rows_get(&r, i, 2);
		bool fin = state && !strcmp(state, "done");
		n_done += fin;
		struct srv_job_out o;
		memset(&o, 0, sizeof o);
		snprintf(o.status, sizeof o.status, "%s", status ? status : "");
		o.speedup = num(srv_rows_get(&r, i, 3));
		o.speedup_lo = num(srv_rows_get(&r, i, 4));
		o.speedup_hi = num(srv_rows_get(&r, i, 5));
		o.noisy = srv_rows_get(&r, i, 6) && strcmp(srv_rows_get(&r, i, 6), "0");
		bool harness = status && !strcmp(status, "harness_error");
		json_t *e = json_object();
		json_object_set_new(e, "index", json_integer(strtol(srv_rows_get(&r, i, 0), NULL, 10)));
		json_object_set_new(e, "state", json_string(fin ? "done" : state ? state : "queued"));
		json_object_set_new(e, "code_block",
				    json_boolean(strcmp(srv_rows_get(&r, i, 7), "0") != 0));
		json_object_set_new(e, "status", jstr(fin ? status : NULL));
		json_object_set_new(e, "speedup", jreal(o.speedup));
		json_object_set_new(e, "speedup_lo", jreal(o.speedup_lo));
		/* a harness failure is no judgement of the completion: no reward */
		json_object_set_new(e, "reward", fin && !harness ? json_real(srv_reward(&o)) : json_null());
		const char *fb = srv_rows_get(&r, i, 8);
		if (fin && !fb && status && !strcmp(status, "no_code"))
			fb = "The answer has no fenced code block: nothing was compiled.";
		json_object_set_new(e, "feedback", jstr(fin ? (harness ? "the harness failed on this "
							      "completion; it is not judged" : fb)
							    : NULL));
		json_array_append_new(res, e);
	}
	*done = n_done == r.nrows;
	*out = json_pack("{s:I, s:s, s:s, s:b, s:b, s:o}", "id", (json_int_t)id, "task",
			 srv_rows_get(&g, 0, 0), "seed", srv_rows_get(&g, 0, 2), "timing",
			 strcmp(srv_rows_get(&g, 0, 3), "0") != 0, "done", *done, "results", res);
out:
	srv_rows_free(&g);
	srv_rows_free(&r);
	return st;
}
