/* srv_api.c — the routes of `crucible serve`: who is asking (a bearer
 * token, looked up by its hash), whether they may (a per-user rate, the
 * queue quota), what they asked for (every field checked, a 4xx naming what
 * is wrong otherwise), and the answer. Also the store's connection pool,
 * since every route needs one connection for the length of a request. */
#include "serve/srv_api.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cand/cand.h"
#include "decode/dec_run.h"
#include "serve/srv_page.h"
#include "serve/srv_store.h"
#include "tasks/task_registry.h"

/* ---- the connection pool ---- */

enum { POOL_KEEP = 32 };

struct srv_db_pool {
	pthread_mutex_t mu;
	char *location;
	struct srv_db *idle[POOL_KEEP];
	int n_idle;
};

enum cr_status srv_pool_new(const char *location, struct srv_db_pool **out, struct cr_err *err)
{
	struct srv_db_pool *p = calloc(1, sizeof *p);
	if (!p || !(p->location = strdup(location))) {
		free(p);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return CR_OK;
}

void srv_pool_free(struct srv_db_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_idle; i++)
		srv_db_close(p->idle[i]);
	pthread_mutex_destroy(&p->mu);
	free(p->location);
	free(p);
}

enum cr_status srv_pool_take(struct srv_db_pool *p, struct srv_db **db, struct cr_err *err)
{
	pthread_mutex_lock(&p->mu);
	*db = p->n_idle ? p->idle[--p->n_idle] : NULL;
	pthread_mutex_unlock(&p->mu);
	return *db ? CR_OK : srv_db_open(p->location, db, err);
}

void srv_pool_give(struct srv_db_pool *p, struct srv_db *db, bool broken)
{
	if (!db)
		return;
	pthread_mutex_lock(&p->mu);
	if (!broken && p->n_idle < POOL_KEEP) {
		p->idle[p->n_idle++] = db;
		db = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	srv_db_close(db);
}

/* ---- the service ---- */

/* Per-user state of this process, by user id in an open-addressing table
 * that grows: a token bucket for the rate, and the reward requests waiting.
 * A user never shares an entry (two ids colliding in a fixed table
 * refilled each other's bucket). */
struct bucket {
	int64_t user;            /* 0: free */
	double tokens;
	int64_t last_ms;
	int waiting;             /* reward requests of this user waiting now */
};
enum { REWARD_WAITS_PER_USER = 8 };

struct srv_api {
	struct srv_db_pool *pool;
	unsigned char key[SRV_KEY_BYTES];
	char title[128];
	char reward_backend[8];
	int max_completions;
	double reward_wait_s;
	FILE *log;
	pthread_mutex_t mu; /* buckets */
	struct bucket *buckets;
	size_t n_buckets, cap_buckets;
	atomic_bool stopping; /* waits end at once, answering what is done */
	atomic_int in_flight; /* handlers running now */
};

/* The user's entry (mu held); NULL only when memory runs out. */
static struct bucket *bucket_of(struct srv_api *a, int64_t user)
{
	if (a->n_buckets * 2 >= a->cap_buckets) {
		size_t cap = a->cap_buckets ? a->cap_buckets * 2 : 256;
		struct bucket *nb = calloc(cap, sizeof *nb);
		if (!nb)
			return NULL;
		for (size_t i = 0; i < a->cap_buckets; i++) {
			if (!a->buckets[i].user)
				continue;
			size_t k = (uint64_t)a->buckets[i].user * 0x9e3779b97f4a7c15ull % cap;
			while (nb[k].user)
				k = (k + 1) % cap;
			nb[k] = a->buckets[i];
		}
		free(a->buckets);
		a->buckets = nb;
		a->cap_buckets = cap;
	}
	size_t k = (uint64_t)user * 0x9e3779b97f4a7c15ull % a->cap_buckets;
	while (a->buckets[k].user && a->buckets[k].user != user)
		k = (k + 1) % a->cap_buckets;
	if (!a->buckets[k].user) {
		a->buckets[k] = (struct bucket){ .user = user, .tokens = -1 };
		a->n_buckets++;
	}
	return &a->buckets[k];
}

enum cr_status srv_api_new(const struct srv_api_opts *o, struct srv_api **out, struct cr_err *err)
{
	struct srv_api *a = calloc(1, sizeof *a);
	if (!a)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	enum cr_status st = srv_pool_new(o->db, &a->pool, err);
	if (st) {
		free(a);
		return st;
	}
	memcpy(a->key, o->key, SRV_KEY_BYTES);
	snprintf(a->title, sizeof a->title, "%s", o->title ? o->title : "crucible");
	snprintf(a->reward_backend, sizeof a->reward_backend, "%s",
		 o->reward_backend ? o->reward_backend : "auto");
	a->max_completions = o->max_completions > 0 ? o->max_completions : 64;
	a->reward_wait_s = o->reward_wait_s > 0 ? o->reward_wait_s : 600;
	a->log = o->log;
	pthread_mutex_init(&a->mu, NULL);
	*out = a;
	return CR_OK;
}

void srv_api_free(struct srv_api *a)
{
	if (!a)
		return;
	srv_pool_free(a->pool);
	explicit_bzero(a->key, sizeof a->key);
	pthread_mutex_destroy(&a->mu);
	free(a->buckets);
	free(a);
}

void srv_api_stop(struct srv_api *a, int drain_ms)
{
	atomic_store(&a->stopping, true);
	/* the handlers answer before the connections are closed under them */
	bool waited = false;
	for (int t = 0; t < drain_ms && atomic_load(&a->in_flight) > 0; t += 10) {
		usleep(10 * 1000);
		waited = true;
	}
	if (waited) /* and a moment for the last answers to be written out */
		usleep(200 * 1000);
}

/* One more (or one fewer) reward request of u waiting: false when u has
 * REWARD_WAITS_PER_USER already. */
static bool reward_wait_take(struct srv_api *a, const struct srv_user *u, int d)
{
	pthread_mutex_lock(&a->mu);
	struct bucket *b = bucket_of(a, u->id);
	bool ok = b && (d < 0 || b->waiting < REWARD_WAITS_PER_USER);
	if (ok)
		b->waiting += d;
	pthread_mutex_unlock(&a->mu);
	return ok;
}

static void logf_(struct srv_api *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct srv_api *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	srv_vlog(a->log, "crucible serve: ", fmt, ap);
	va_end(ap);
}

/* The store failed: a 503 for the client (its request may be retried), the
 * reason in the service's log. */
static void store_failed(struct srv_api *a, struct srv_resp *r, const struct cr_err *err)
{
	logf_(a, "store: %s", err->msg);
	srv_resp_error(r, 503, "the store is unavailable; retry later");
}

/* A token bucket per user: `rate` requests a minute, bursts up to rate.
 * false with *retry_s when the request is over. */
static bool rate_ok(struct srv_api *a, const struct srv_user *u, int *retry_s)
{
	if (u->rate <= 0)
		return true;
	int64_t now = srv_now_ms();
	pthread_mutex_lock(&a->mu);
	struct bucket *b = bucket_of(a, u->id);
	if (!b) {
		pthread_mutex_unlock(&a->mu);
		*retry_s = 1;
		return false;
	}
	if (b->tokens < 0) { /* new: a full bucket */
		b->tokens = u->rate;
		b->last_ms = now;
	}
	b->tokens += (double)(now - b->last_ms) * u->rate / 60000.0;
	if (b->tokens > u->rate)
		b->tokens = u->rate;
	b->last_ms = now;
	bool ok = b->tokens >= 1;
	if (ok)
		b->tokens -= 1;
	else
		*retry_s = (int)ceil((1 - b->tokens) * 60.0 / u->rate);
	pthread_mutex_unlock(&a->mu);
	return ok;
}

/* The caller, from "Authorization: Bearer TOKEN": false with the 401 or 429
 * answered. */
static bool auth(struct srv_api *a, struct srv_db *db, const struct srv_req *q,
		 struct srv_resp *r, struct srv_user *u, bool *broken)
{
	const char *h = srv_req_header(q, "Authorization");
	if (!h) {
		srv_resp_error(r, 401, "this needs a token: send 'Authorization: Bearer TOKEN' "
				       "(an administrator makes one with 'crucible serve user add')");
		srv_resp_header(r, "WWW-Authenticate", "Bearer");
		return false;
	}
	if (strncasecmp(h, "Bearer ", 7)) {
		srv_resp_error(r, 401, "the Authorization header must be 'Bearer TOKEN'");
		srv_resp_header(r, "WWW-Authenticate", "Bearer");
		return false;
	}
	const char *tok = h + 7;
	while (*tok == ' ')
		tok++;
	bool found = false;
	struct cr_err err;
	cr_err_init(&err);
	if (srv_user_auth(db, tok, u, &found, &err)) {
		*broken = err.status == CR_EIO;
		store_failed(a, r, &err);
		return false;
	}
	if (!found) {
		srv_resp_error(r, 401, "the token is not valid (tokens come from the operator's "
				       "`crucible serve user add` or `user token`)");
		srv_resp_header(r, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
		return false;
	}
	int retry = 1;
	if (!rate_ok(a, u, &retry)) {
		char s[16];
		snprintf(s, sizeof s, "%d", retry);
		srv_resp_error(r, 429, "rate limit: %d requests a minute for user '%s'; retry in %d s",
			       u->rate, u->name, retry);
		srv_resp_header(r, "Retry-After", s);
		return false;
	}
	return true;
}

/* The body as a JSON object: false with the 400 answered. */
static json_t *body_object(const struct srv_req *q, struct srv_resp *r)
{
	if (q->body_len == 0) {
		srv_resp_error(r, 400, "the request needs a JSON object body");
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadb(q->body, q->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		srv_resp_error(r, 400, "the body is not JSON: line %d column %d: %s", je.line, je.column,
			       je.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		srv_resp_error(r, 400, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

/* Fields of a request: only those named are allowed (a typo is said, not
 * ignored). */
static bool only_fields(const json_t *j, const char *const *names, struct srv_resp *r)
{
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)j, k, v)
	{
		bool known = false;
		for (int i = 0; names[i]; i++)
			known |= !strcmp(k, names[i]);
		if (!known) {
			char allowed[256] = "";
			for (int i = 0; names[i]; i++)
				snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed),
					 "%s%s", i ? ", " : "", names[i]);
			srv_resp_error(r, 400, "unknown field '%.64s' (the fields: %s)", k, allowed);
			return false;
		}
	}
	return true;
}

static bool good_file_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 3 || n > 100 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return (n > 2 && !strcmp(s + n - 2, ".c")) || (n > 3 && !strcmp(s + n - 3, ".cu"));
}

/* A scored view gets "signed" (the object vouched for) and "signature"
 * (HMAC-SHA256 of its canonical text under the server's key). */
static void sign_view(struct srv_api *a, json_t *sub)
{
	json_t *obj = srv_sub_signed(sub);
	char *text = srv_signed_canon(obj);
	if (!text) {
		json_decref(obj);
		json_object_set_new(sub, "signed", json_null());
		json_object_set_new(sub, "signature", json_null());
		return;
	}
	char hex[65];
	srv_hmac_hex(a->key, text, strlen(text), hex);
	json_object_set_new(sub, "signed", obj);
	json_object_set_new(sub, "signature", json_string(hex));
	free(text);
}

static void post_submission(struct srv_api *a, struct srv_db *db, const char *board,
			    const struct srv_req *q, struct srv_resp *r, bool *broken)
{
	struct srv_user u;
	if (!auth(a, db, q, r, &u, broken))
		return;
	struct cr_err err;
	cr_err_init(&err);
	struct srv_board b;
	bool found = false;
	if (srv_board_get(db, board, false, &b, &found, &err)) {
		*broken = err.status == CR_EIO;
		return store_failed(a, r, &err);
	}
	if (!found)
		return srv_resp_error(r, 404, "no board '%.64s' (GET /v1/boards lists them)", board);
	json_t *j = body_object(q, r);
	static const char *const fields[] = { "source", "file_name", "task", NULL };
	const char *src = NULL, *fname = "submission.c";
	char *owned = NULL; /* the source with an @task line put first */
	char task[CR_CAND_TASK] = "";
	struct cr_cand cand;
	memset(&cand, 0, sizeof cand);
	if (!j || !only_fields(j, fields, r))
		goto out;
	const json_t *v = json_object_get(j, "source");
	if (!json_is_string(v) || json_string_length(v) == 0) {
		srv_resp_error(r, 400, "'source' must be the candidate's text, a non-empty string");
		goto out;
	}
	src = json_string_value(v);
	if (strlen(src) != json_string_length(v)) {
		srv_resp_error(r, 400, "'source' holds a NUL byte");
		goto out;
	}
	if (!strcmp(b.backend, "cuda"))
		fname = "submission.cu";
	if ((v = json_object_get(j, "file_name"))) {
		if (!json_is_string(v) || !good_file_name(json_string_value(v))) {
			srv_resp_error(r, 400, "'file_name' must be 1 to 100 characters of A-Z a-z 0-9 "
					       "_ . -, not starting with '.', ending .c or .cu");
			goto out;
		}
		fname = json_string_value(v);
	}
	bool cu = strlen(fname) > 3 && !strcmp(fname + strlen(fname) - 3, ".cu");
	if (cu != !strcmp(b.backend, "cuda")) {
		srv_resp_error(r, 400, "board '%s' runs the %s backend: its candidates are %s files, "
				       "not '%s'",
			       b.name, b.backend, cu ? ".c" : ".cu", fname);
		goto out;
	}
	/* the candidate is read here once: what does not parse is answered now,
	 * naming the line, rather than queued. A task named in the request and
	 * no @task line in the source (the parser's own rule decides: "no @task
	 * line"): the line is put first (a byte-order mark dropped), as
	 * /v1/reward does for a completion; the stored sha256 is of that text */
	v = json_object_get(j, "task");
	enum cr_status pst = cr_cand_parse(&cand, fname, src, strlen(src), &err);
	if (pst && v && json_is_string(v) && strstr(err.msg, "no @task line")) {
		cr_err_init(&err);
		if (task_registry_resolve(json_string_value(v), task, sizeof task, &err)) {
			srv_resp_error(r, 400, "'task': %s", err.msg);
			goto out;
		}
		/* a byte-order mark is dropped: one mid-file would not compile, and
		 * the compiler reads the file the same without it */
		size_t bom = !strncmp(src, "\xef\xbb\xbf", 3) ? 3 : 0;
		if (asprintf(&owned, "// @task %s\n%s", task, src + bom) < 0) {
			owned = NULL;
			srv_resp_error(r, 503, "out of memory");
			goto out;
		}
		src = owned;
		cr_err_init(&err);
		pst = cr_cand_parse(&cand, fname, src, strlen(src), &err);
	}
	if (pst) {
		srv_resp_error(r, 400, "%s", err.msg);
		goto out;
	}
	if ((v = json_object_get(j, "task"))) {
		if (!json_is_string(v)) {
			srv_resp_error(r, 400, "'task' must be a string (a task name, e.g. L1/23)");
			goto out;
		}
		cr_err_init(&err);
		if (task_registry_resolve(json_string_value(v), task, sizeof task, &err)) {
			srv_resp_error(r, 400, "'task': %s", err.msg);
			goto out;
		}
		/* the source's own @task must be the same task: check would give a
		 * format_error, charged to a run that was never going to be judged */
		char own[CR_CAND_TASK];
		cr_err_init(&err);
		if (task_registry_resolve(cand.task, own, sizeof own, &err) || strcmp(own, task)) {
			srv_resp_error(r, 400, "%s:%d: @task %s does not match the task %s given",
				       fname, cand.task_line, cand.task, task);
			goto out;
		}
	} else {
		cr_err_init(&err);
		if (task_registry_resolve(cand.task, task, sizeof task, &err)) {
			srv_resp_error(r, 400, "%s:%d: @task: %s", fname, cand.task_line, err.msg);
			goto out;
		}
	}
	if (!srv_board_has_task(&b, task)) {
		srv_resp_error(r, 400, "task '%s' is not on board '%s' (its tasks: %.600s)", task,
			       b.name, b.tasks);
		goto out;
	}
	int64_t id = 0;
	bool over = false;
	cr_err_init(&err);
	if (srv_sub_create(db, &b, &u, task, fname, src, &id, &over, &err)) {
		*broken = err.status == CR_EIO;
		store_failed(a, r, &err);
		goto out;
	}
	if (over) {
		srv_resp_error(r, 429, "queue quota: user '%s' has %d submissions or reward jobs "
				       "waiting; wait for them to be scored",
			       u.name, u.quota);
		srv_resp_header(r, "Retry-After", "10");
		goto out;
	}
	json_t *view = NULL;
	cr_err_init(&err);
	if (srv_sub_json(db, id, &u, &view, &found, &err) || !found) {
		*broken = err.status == CR_EIO;
		store_failed(a, r, &err);
		goto out;
	}
	sign_view(a, view);
	char loc[64];
	snprintf(loc, sizeof loc, "/v1/submissions/%" PRId64, id);
	json_object_set_new(view, "url", json_string(loc));
	srv_resp_header(r, "Location", loc);
	srv_resp_json(r, 202, view);
out:
	free(owned);
	cr_cand_release(&cand);
	srv_board_release(&b);
	json_decref(j);
}

/* A positive decimal id filling s. */
static bool parse_id(const char *s, int64_t *id)
{
	uint64_t v;
	if (!cr_parse_u64(s, &v) || v == 0 || v > INT64_MAX)
		return false;
	*id = (int64_t)v;
	return true;
}

static void get_submission(struct srv_api *a, struct srv_db *db, const char *ids,
			   const struct srv_req *q, struct srv_resp *r, bool *broken)
{
	struct srv_user u;
	if (!auth(a, db, q, r, &u, broken))
		return;
	int64_t id;
	if (!parse_id(ids, &id))
		return srv_resp_error(r, 400, "a submission id is a positive integer, not '%.32s'", ids);
	json_t *view = NULL;
	bool found = false;
	struct cr_err err;
	cr_err_init(&err);
	if (srv_sub_json(db, id, &u, &view, &found, &err)) {
		*broken = err.status == CR_EIO;
		return store_failed(a, r, &err);
	}
	if (!found)
		return srv_resp_error(r, 404, "no submission %" PRId64 " of yours", id);
	sign_view(a, view);
	srv_resp_json(r, 200, view);
}

static void reward_answer(struct srv_api *a, struct srv_db *db, int64_t id, const struct srv_user *u,
			  double wait_s, struct srv_resp *r, bool *broken)
{
	int64_t deadline = srv_now_ms() + (int64_t)(wait_s * 1000);
	for (;;) {
		json_t *view = NULL;
		bool found = false, done = false;
		struct cr_err err;
		cr_err_init(&err);
		if (srv_reward_json(db, id, u, &view, &found, &done, &err)) {
			*broken = err.status == CR_EIO;
			return store_failed(a, r, &err);
		}
		if (!found)
			return srv_resp_error(r, 404, "no reward group %" PRId64 " of yours", id);
		if (done || srv_now_ms() >= deadline || atomic_load(&a->stopping)) {
			char loc[64];
			snprintf(loc, sizeof loc, "/v1/reward/%" PRId64, id);
			json_object_set_new(view, "url", json_string(loc));
			return srv_resp_json(r, done ? 200 : 202, view);
		}
		json_decref(view);
		usleep(100 * 1000);
	}
}

static void post_reward(struct srv_api *a, struct srv_db *db, const struct srv_req *q,
			struct srv_resp *r, bool *broken)
{
	struct srv_user u;
	if (!auth(a, db, q, r, &u, broken))
		return;
	json_t *j = body_object(q, r);
	static const char *const fields[] = { "task", "completions", "timing", "wait_s", NULL };
	const char **comps = NULL;
	if (!j || !only_fields(j, fields, r))
		goto out;
	const json_t *v = json_object_get(j, "task");
	char task[CR_CAND_TASK];
	struct cr_err err;
	cr_err_init(&err);
	if (!json_is_string(v)) {
		srv_resp_error(r, 400, "'task' must be a task name (e.g. L1/23)");
		goto out;
	}
	if (task_registry_resolve(json_string_value(v), task, sizeof task, &err)) {
		srv_resp_error(r, 400, "'task': %s", err.msg);
		goto out;
	}
	const json_t *c = json_object_get(j, "completions");
	size_t n = json_array_size(c);
	if (!json_is_array(c) || n == 0 || n > (size_t)a->max_completions) {
		srv_resp_error(r, 400, "'completions' must be an array of 1 to %d strings",
			       a->max_completions);
		goto out;
	}
	comps = calloc(n, sizeof *comps);
	if (!comps) {
		srv_resp_error(r, 503, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(c, i);
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e)) {
			srv_resp_error(r, 400, "completions[%zu] must be a string without NUL bytes", i);
			goto out;
		}
		comps[i] = json_string_value(e);
	}
	bool timing = true;
	if ((v = json_object_get(j, "timing"))) {
		if (!json_is_boolean(v)) {
			srv_resp_error(r, 400, "'timing' must be true or false");
			goto out;
		}
		timing = json_is_true(v);
	}
	double wait_s = a->reward_wait_s;
	if ((v = json_object_get(j, "wait_s"))) {
		if (!json_is_number(v) || json_number_value(v) < 0 ||
		    json_number_value(v) > a->reward_wait_s) {
			srv_resp_error(r, 400, "'wait_s' must be a number of seconds from 0 to %g",
				       a->reward_wait_s);
			goto out;
		}
		wait_s = json_number_value(v);
	}
	if (n > (size_t)u.quota) {
		srv_resp_error(r, 400, "a group of %zu completions is over user '%s''s queue quota "
				       "of %d: send smaller groups, or ask the operator for a larger "
				       "--quota (crucible serve user set)",
			       n, u.name, u.quota);
		goto out;
	}
	int64_t id = 0;
	bool over = false;
	cr_err_init(&err);
	if (srv_reward_create(db, &u, task, a->reward_backend, timing, comps, (int)n, &id, &over,
			      &err)) {
		*broken = err.status == CR_EIO;
		store_failed(a, r, &err);
		goto out;
	}
	if (over) {
		srv_resp_error(r, 429, "queue quota: user '%s' may have %d submissions or reward "
				       "completions waiting; this group of %zu is over it",
			       u.name, u.quota, n);
		srv_resp_header(r, "Retry-After", "10");
		goto out;
	}
	/* a user holds at most REWARD_WAITS_PER_USER connections waiting; past
	 * that the group is queued all the same and answered at once (202) */
	if (!reward_wait_take(a, &u, +1))
		wait_s = 0;
	else {
		reward_answer(a, db, id, &u, wait_s, r, broken);
		reward_wait_take(a, &u, -1);
		goto out;
	}
	reward_answer(a, db, id, &u, wait_s, r, broken);
out:
	free(comps);
	json_decref(j);
}

static void get_reward(struct srv_api *a, struct srv_db *db, const char *ids,
		       const struct srv_req *q, struct srv_resp *r, bool *broken)
{
	struct srv_user u;
	if (!auth(a, db, q, r, &u, broken))
		return;
	int64_t id;
	if (!parse_id(ids, &id))
		return srv_resp_error(r, 400, "a reward group id is a positive integer, not '%.32s'", ids);
	reward_answer(a, db, id, &u, 0, r, broken);
}

static void post_verify(struct srv_api *a, const struct srv_req *q, struct srv_resp *r)
{
	json_t *j = body_object(q, r);
	if (!j)
		return;
	const json_t *sig = json_object_get(j, "signature");
	char *text = srv_signed_canon(json_object_get(j, "signed"));
	if (!text || !json_is_string(sig)) {
		free(text);
		json_decref(j);
		return srv_resp_error(r, 400, "the body must be a scored submission as served "
					      "(GET /v1/submissions/ID), with its \"signed\" object "
					      "and \"signature\"");
	}
	bool ok = srv_hmac_check(a->key, text, strlen(text), json_string_value(sig));
	free(text);
	json_decref(j);
	srv_resp_json(r, 200, json_pack("{s:b}", "valid", ok));
}

static void get_page(struct srv_api *a, struct srv_db *db, const struct srv_req *q,
		     struct srv_resp *r, bool *broken)
{
	const char *only = srv_req_query(q, "board");
	json_t *boards = NULL;
	struct cr_err err;
	cr_err_init(&err);
	enum cr_status st;
	if (only) {
		json_t *b = NULL;
		bool found = false;
		st = srv_board_view(db, only, &b, &found, &err);
		if (!st && !found)
			return srv_resp_error(r, 404, "no board '%.64s'", only);
		if (!st)
			boards = json_pack("{s:[o]}", "boards", b);
	} else
		st = srv_boards_view(db, &boards, &err);
	if (st) {
		*broken = err.status == CR_EIO;
		return store_failed(a, r, &err);
	}
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(now, sizeof now, "%Y-%m-%d %H:%M:%S UTC", &tm);
	char *html = srv_page_html(json_object_get(boards, "boards"), a->title, now);
	json_decref(boards);
	if (!html)
		return srv_resp_error(r, 503, "out of memory");
	srv_resp_body(r, 200, "text/html; charset=utf-8", html, strlen(html));
}

static void method_not_allowed(struct srv_resp *r, const char *allow)
{
	srv_resp_error(r, 405, "this path takes %s only", allow);
	srv_resp_header(r, "Allow", allow);
}

/* HEAD is answered as GET (libmicrohttpd leaves the body out). */
static bool is(const struct srv_req *q, const char *m)
{
	return !strcmp(q->method, m) || (!strcmp(m, "GET") && !strcmp(q->method, "HEAD"));
}

static void handle(struct srv_api *a, const struct srv_req *q, struct srv_resp *r);

void srv_api_handle(void *ctx, const struct srv_req *q, struct srv_resp *r)
{
	struct srv_api *a = ctx;
	atomic_fetch_add(&a->in_flight, 1);
	if (atomic_load(&a->stopping)) {
		srv_resp_error(r, 503, "the server is shutting down; retry shortly");
		srv_resp_header(r, "Retry-After", "5");
	} else
		handle(a, q, r);
	atomic_fetch_sub(&a->in_flight, 1);
}

static void handle(struct srv_api *a, const struct srv_req *q, struct srv_resp *r)
{
	const char *p = q->path;
	if (!strcmp(p, "/health")) {
		if (!is(q, "GET") && !is(q, "HEAD"))
			return method_not_allowed(r, "GET");
		return srv_resp_json(r, 200, json_pack("{s:b}", "ok", 1));
	}
	if (!strcmp(p, "/v1/verify")) {
		if (!is(q, "POST"))
			return method_not_allowed(r, "POST");
		return post_verify(a, q, r);
	}
	bool page = !strcmp(p, "/") || !strcmp(p, "/index.html");
	bool known = page || !strcmp(p, "/v1/boards") || !strncmp(p, "/v1/boards/", 11) ||
		     !strncmp(p, "/v1/submissions/", 16) || !strcmp(p, "/v1/reward") ||
		     !strncmp(p, "/v1/reward/", 11);
	if (!known)
		return srv_resp_error(r, 404, "no such path: %.100s (the API: docs/SERVE.md)", p);
	struct srv_db *db = NULL;
	struct cr_err err;
	cr_err_init(&err);
	if (srv_pool_take(a->pool, &db, &err))
		return store_failed(a, r, &err);
	bool broken = false;
	if (page) {
		if (!is(q, "GET") && !is(q, "HEAD"))
			method_not_allowed(r, "GET");
		else
			get_page(a, db, q, r, &broken);
	} else if (!strcmp(p, "/v1/boards")) {
		json_t *v = NULL;
		if (!is(q, "GET"))
			method_not_allowed(r, "GET");
		else if (srv_boards_view(db, &v, &err)) {
			broken = err.status == CR_EIO;
			store_failed(a, r, &err);
		} else
			srv_resp_json(r, 200, v);
	} else if (!strncmp(p, "/v1/boards/", 11)) {
		const char *name = p + 11, *slash = strchr(name, '/');
		if (slash && !strcmp(slash, "/submissions")) {
			char b[SRV_NAME_MAX + 1];
			size_t len = (size_t)(slash - name);
			if (len == 0 || len > SRV_NAME_MAX)
				srv_resp_error(r, 404, "no such board");
			else if (!is(q, "POST"))
				method_not_allowed(r, "POST");
			else {
				memcpy(b, name, len);
				b[len] = 0;
				post_submission(a, db, b, q, r, &broken);
			}
		} else if (slash || !*name)
			srv_resp_error(r, 404, "no such path: %.100s", p);
		else if (!is(q, "GET"))
			method_not_allowed(r, "GET");
		else {
			json_t *v = NULL;
			bool found = false;
			if (srv_board_view(db, name, &v, &found, &err)) {
				broken = err.status == CR_EIO;
				store_failed(a, r, &err);
			} else if (!found)
				srv_resp_error(r, 404, "no board '%.64s' (GET /v1/boards lists them)",
					       name);
			else
				srv_resp_json(r, 200, v);
		}
	} else if (!strncmp(p, "/v1/submissions/", 16)) {
		if (!is(q, "GET"))
			method_not_allowed(r, "GET");
		else
			get_submission(a, db, p + 16, q, r, &broken);
	} else if (!strcmp(p, "/v1/reward")) {
		if (!is(q, "POST"))
			method_not_allowed(r, "POST");
		else
			post_reward(a, db, q, r, &broken);
	} else {
		if (!is(q, "GET"))
			method_not_allowed(r, "GET");
		else
			get_reward(a, db, p + 11, q, r, &broken);
	}
	srv_pool_give(a->pool, db, broken);
}
