/* srv_store.c — the service's tables (schema below) and the writes done on
 * them: users and their hashed tokens, boards and their secrets,
 * submissions and reward groups with their jobs, and the job queue (claim,
 * heartbeat, finish once, reap). The same SQL runs on SQLite and
 * PostgreSQL; the one difference is the claim's row lock (SKIP LOCKED). */
#include "serve/srv_store.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/sha256.h"
#include "decode/dec_run.h"
#include "serve/srv_sign.h"
#include "tasks/task_registry.h"

#define SCHEMA_VERSION "1"

int64_t srv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *schema_fmt =
	"CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
	"CREATE TABLE IF NOT EXISTS users (id %1$s, name TEXT NOT NULL UNIQUE,\n"
	"  token_hash TEXT NOT NULL UNIQUE, admin INTEGER NOT NULL, quota INTEGER NOT NULL,\n"
	"  rate INTEGER NOT NULL, created_ms BIGINT NOT NULL);\n"
	"CREATE TABLE IF NOT EXISTS boards (name TEXT PRIMARY KEY, tasks TEXT NOT NULL,\n"
	"  backend TEXT NOT NULL, rank_rule TEXT NOT NULL, secret TEXT NOT NULL,\n"
	"  timing INTEGER NOT NULL, quick INTEGER NOT NULL, time_cap DOUBLE PRECISION NOT NULL,\n"
	"  created_ms BIGINT NOT NULL);\n"
	"CREATE TABLE IF NOT EXISTS submissions (id %1$s, board TEXT NOT NULL REFERENCES boards(name),\n"
	"  user_id BIGINT NOT NULL REFERENCES users(id), task TEXT NOT NULL, file_name TEXT NOT NULL,\n"
	"  source TEXT NOT NULL, sha256 TEXT NOT NULL, public_seed TEXT NOT NULL,\n"
	"  state TEXT NOT NULL, created_ms BIGINT NOT NULL, scored_ms BIGINT);\n"
	"CREATE TABLE IF NOT EXISTS rewards (id %1$s, user_id BIGINT NOT NULL REFERENCES users(id),\n"
	"  task TEXT NOT NULL, backend TEXT NOT NULL, timing INTEGER NOT NULL, n INTEGER NOT NULL,\n"
	"  seed TEXT NOT NULL, created_ms BIGINT NOT NULL);\n"
	"CREATE TABLE IF NOT EXISTS jobs (id %1$s, kind TEXT NOT NULL,\n"
	"  submission_id BIGINT REFERENCES submissions(id), reward_id BIGINT REFERENCES rewards(id),\n"
	"  idx INTEGER NOT NULL, user_id BIGINT NOT NULL, task TEXT NOT NULL, backend TEXT NOT NULL,\n"
	"  file_name TEXT NOT NULL, source TEXT NOT NULL, seed TEXT NOT NULL, board TEXT,\n"
	"  timing INTEGER NOT NULL, quick INTEGER NOT NULL, time_cap DOUBLE PRECISION NOT NULL,\n"
	"  code_block INTEGER NOT NULL, priority INTEGER NOT NULL, state TEXT NOT NULL,\n"
	"  lease BIGINT, worker TEXT, heartbeat_ms BIGINT, attempts INTEGER NOT NULL,\n"
	"  created_ms BIGINT NOT NULL, started_ms BIGINT, finished_ms BIGINT, status TEXT,\n"
	"  speedup DOUBLE PRECISION, speedup_lo DOUBLE PRECISION, speedup_hi DOUBLE PRECISION,\n"
	"  noisy INTEGER, detail TEXT, feedback TEXT, harness_error TEXT, not_before_ms BIGINT);\n"
	"CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (state, priority, id);\n"
	"CREATE INDEX IF NOT EXISTS jobs_sub ON jobs (submission_id);\n"
	"CREATE INDEX IF NOT EXISTS jobs_reward ON jobs (reward_id);\n"
	"CREATE INDEX IF NOT EXISTS subs_board ON submissions (board);\n"
	"CREATE INDEX IF NOT EXISTS subs_user ON submissions (user_id, state);\n"
	"CREATE INDEX IF NOT EXISTS jobs_user ON jobs (user_id, state, started_ms);\n";

static enum cr_status q(struct srv_db *db, const char *sql, int n, const char *const *p,
			struct srv_rows *rows, struct cr_err *err)
{
	return srv_db_exec(db, sql, n, p, rows, err);
}

static void i64s(int64_t v, char b[24])
{
	snprintf(b, 24, "%" PRId64, v);
}

static int64_t cell_i64(const struct srv_rows *r, int row, int col)
{
	const char *s = srv_rows_get(r, row, col);
	return s ? strtoll(s, NULL, 10) : 0;
}

static double cell_real(const struct srv_rows *r, int row, int col)
{
	const char *s = srv_rows_get(r, row, col);
	return s && *s ? strtod(s, NULL) : NAN;
}

static void reals(double v, char b[40])
{
	snprintf(b, 40, "%.17g", v);
}

enum cr_status srv_store_init(struct srv_db *db, struct cr_err *err)
{
	char *sql = NULL;
	if (asprintf(&sql, schema_fmt, srv_db_pk(db)) < 0)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	enum cr_status st = srv_db_script(db, sql, err);
	free(sql);
	if (st)
		return st;
	struct srv_rows r = { 0 };
	const char *p[] = { "schema", SCHEMA_VERSION };
	st = q(db, "SELECT value FROM meta WHERE key = $1", 1, p, &r, err);
	if (st)
		return st;
	if (r.nrows == 0)
		st = q(db, "INSERT INTO meta (key, value) VALUES ($1, $2)", 2, p, NULL, err);
	else if (strcmp(srv_rows_get(&r, 0, 0) ? srv_rows_get(&r, 0, 0) : "", SCHEMA_VERSION))
		st = cr_errf(err, CR_EINPUT,
			     "the store has schema version %s; this crucible reads version %s",
			     srv_rows_get(&r, 0, 0), SCHEMA_VERSION);
	srv_rows_free(&r);
	return st;
}

static bool good_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > SRV_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

static enum cr_status settle_submission(struct srv_db *db, const char *sub, const char *now,
					struct cr_err *err);

/* The database's clock in epoch milliseconds, as SQL: heartbeats, leases
 * and retry pauses are read and written by it alone, so a machine whose
 * own clock is off can neither take back live jobs nor hide dead ones. */
static const char *db_now(const struct srv_db *db)
{
	return srv_db_kind(db) == SRV_DB_PG
		       ? "CAST(extract(epoch from clock_timestamp()) * 1000 AS BIGINT)"
		       : "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
}

/* ---- users ---- */

enum cr_status srv_user_add(struct srv_db *db, const char *name, bool admin, int quota, int rate,
			    char tok[48], struct cr_err *err)
{
	if (!good_name(name))
		return cr_errf(err, CR_EUSAGE,
			       "user name '%.80s': 1 to %d characters of A-Z a-z 0-9 _ . -", name,
			       SRV_NAME_MAX);
	char hash[65], qs[24], rs[24], now[24];
	srv_token_new(tok);
	srv_token_hash(tok, hash);
	i64s(quota, qs);
	i64s(rate, rs);
	i64s(srv_now_ms(), now);
	const char *p[] = { name, hash, admin ? "1" : "0", qs, rs, now };
	enum cr_status st = q(db,
			      "INSERT INTO users (name, token_hash, admin, quota, rate, created_ms) "
			      "VALUES ($1, $2, $3, $4, $5, $6)",
			      6, p, NULL, err);
	if (st == CR_EINPUT) {
		err->status = CR_OK;
		err->msg[0] = 0;
		return cr_errf(err, CR_EINPUT,
			       "user '%s' exists already (a new token: crucible serve user token %s)",
			       name, name);
	}
	return st;
}

/* The user's stored token hash becomes hash. */
static enum cr_status set_token_hash(struct srv_db *db, const char *name, const char *hash,
				     struct cr_err *err)
{
	struct srv_rows r = { 0 };
	const char *p[] = { hash, name };
	enum cr_status st =
		q(db, "UPDATE users SET token_hash = $1 WHERE name = $2 RETURNING id", 2, p, &r, err);
	if (!st && r.nrows == 0)
		st = cr_errf(err, CR_EINPUT, "no user '%.80s'", name);
	srv_rows_free(&r);
	return st;
}

enum cr_status srv_user_token(struct srv_db *db, const char *name, char tok[48], struct cr_err *err)
{
	struct srv_rows r = { 0 };
	const char *pn[] = { name };
	enum cr_status st0 = q(db, "SELECT substr(token_hash, 1, 8) FROM users WHERE name = $1", 1,
			       pn, &r, err);
	bool removed = !st0 && r.nrows == 1 && !strcmp(srv_rows_get(&r, 0, 0), "removed:");
	srv_rows_free(&r);
	if (st0)
		return st0;
	if (removed)
		return cr_errf(err, CR_EINPUT, "user '%.80s' was removed; add a user of another name",
			       name);
	char hash[65];
	srv_token_new(tok);
	srv_token_hash(tok, hash);
	return set_token_hash(db, name, hash, err);
}

enum cr_status srv_user_set(struct srv_db *db, const char *name, int quota, int rate,
			    struct cr_err *err)
{
	char qs[24], rs[24];
	i64s(quota, qs);
	i64s(rate, rs);
	struct srv_rows r = { 0 };
	const char *p[] = { name, quota >= 0 ? qs : NULL, rate >= 0 ? rs : NULL };
	enum cr_status st = q(db,
			      "UPDATE users SET quota = COALESCE(CAST($2 AS INTEGER), quota), rate = "
			      "COALESCE(CAST($3 AS INTEGER), rate) WHERE name = $1 RETURNING id",
			      3, p, &r, err);
	if (!st && r.nrows == 0)
		st = cr_errf(err, CR_EINPUT, "no user '%.80s'", name);
	srv_rows_free(&r);
	return st;
}

enum cr_status srv_user_disable(struct srv_db *db, const char *name, struct cr_err *err)
{
	/* a hash no token has (it is not 64 hex digits), unique per user */
	char hash[80], now[24];
	snprintf(hash, sizeof hash, "removed:%llx%llx", srv_random_u64(), srv_random_u64());
	i64s(srv_now_ms(), now);
	enum cr_status st = srv_db_begin(db, err);
	if (!st)
		st = set_token_hash(db, name, hash, err);
	/* what the user still has queued is cancelled, not scored */
	struct srv_rows r = { 0 };
	const char *p[] = { name, now };
	if (!st)
		st = q(db,
		       "UPDATE jobs SET state = 'done', status = 'cancelled', finished_ms = "
		       "CAST($2 AS BIGINT) WHERE state = 'queued' AND user_id = (SELECT id FROM users "
		       "WHERE name = $1) RETURNING submission_id",
		       2, p, &r, err);
	for (int i = 0; !st && i < r.nrows; i++)
		if (srv_rows_get(&r, i, 0))
			st = settle_submission(db, srv_rows_get(&r, i, 0), now, err);
	srv_rows_free(&r);
	if (st) {
		srv_db_rollback(db);
		return st;
	}
	return srv_db_commit(db, err);
}

enum cr_status srv_user_auth(struct srv_db *db, const char *tok, struct srv_user *u, bool *found,
			     struct cr_err *err)
{
	*found = false;
	memset(u, 0, sizeof *u);
	/* a token is looked up by its hash: the store never holds one, and the
	 * comparison happens on a digest an attacker cannot steer */
	if (strncmp(tok, "crt_", 4) || strlen(tok) != 47)
		return CR_OK;
	char hash[65];
	srv_token_hash(tok, hash);
	struct srv_rows r = { 0 };
	const char *p[] = { hash };
	enum cr_status st = q(db,
			      "SELECT id, name, admin, quota, rate, token_hash FROM users "
			      "WHERE token_hash = $1",
			      1, p, &r, err);
	if (!st && r.nrows == 1 && srv_ct_equal(srv_rows_get(&r, 0, 5), hash)) {
		u->id = cell_i64(&r, 0, 0);
		snprintf(u->name, sizeof u->name, "%s", srv_rows_get(&r, 0, 1));
		u->admin = cell_i64(&r, 0, 2) != 0;
		u->quota = (int)cell_i64(&r, 0, 3);
		u->rate = (int)cell_i64(&r, 0, 4);
		*found = true;
	}
	srv_rows_free(&r);
	return st;
}

enum cr_status srv_user_list(struct srv_db *db, json_t **out, struct cr_err *err)
{
	struct srv_rows r = { 0 };
	enum cr_status st = q(db,
			      "SELECT name, admin, quota, rate, substr(token_hash, 1, 8) = 'removed:' "
			      "FROM users ORDER BY id",
			      0, NULL, &r, err);
	if (st)
		return st;
	json_t *a = json_array();
	for (int i = 0; i < r.nrows; i++)
		json_array_append_new(a, json_pack("{s:s, s:b, s:I, s:I, s:b}", "name",
						   srv_rows_get(&r, i, 0), "admin",
						   (int)cell_i64(&r, i, 1), "quota",
						   (json_int_t)cell_i64(&r, i, 2), "rate",
						   (json_int_t)cell_i64(&r, i, 3), "removed",
						   !strcmp(srv_rows_get(&r, i, 4), "1") ||
							   !strcmp(srv_rows_get(&r, i, 4), "t")));
	srv_rows_free(&r);
	*out = a;
	return CR_OK;
}

/* ---- boards ---- */

void srv_board_release(struct srv_board *b)
{
	if (!b)
		return;
	free(b->tasks);
	b->tasks = NULL;
}

enum cr_status srv_board_add(struct srv_db *db, struct srv_board *b, const char *tasks_spec,
			     struct cr_err *err)
{
	if (!good_name(b->name))
		return cr_errf(err, CR_EUSAGE,
			       "board name '%.80s': 1 to %d characters of A-Z a-z 0-9 _ . -",
			       b->name, SRV_NAME_MAX);
	if (strcmp(b->backend, "cpu") && strcmp(b->backend, "cuda"))
		return cr_errf(err, CR_EUSAGE, "--backend '%.20s': cpu or cuda", b->backend);
	if (strcmp(b->rank, "geomean") && strcmp(b->rank, "per-task"))
		return cr_errf(err, CR_EUSAGE, "--rank '%.20s': geomean or per-task", b->rank);
	char **names = NULL;
	int n = 0;
	enum cr_status st = task_registry_names(tasks_spec, &names, &n, err);
	if (st)
		return st;
	if (n == 0) {
		task_registry_names_free(names, n);
		return cr_errf(err, CR_EINPUT, "--tasks '%.200s' selects no task", tasks_spec);
	}
	size_t len = 1;
	for (int i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	char *list = calloc(1, len);
	if (!list) {
		task_registry_names_free(names, n);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(list, ",");
		strcat(list, names[i]);
	}
	task_registry_names_free(names, n);
	free(b->tasks);
	b->tasks = list;
	srv_secret_new(b->secret);
	char now[24], cap[40];
	i64s(srv_now_ms(), now);
	reals(b->time_cap_s, cap);
	const char *p[] = { b->name, b->tasks, b->backend, b->rank, b->secret,
			    b->timing ? "1" : "0", b->quick ? "1" : "0", cap, now };
	st = q(db,
	       "INSERT INTO boards (name, tasks, backend, rank_rule, secret, timing, quick, "
	       "time_cap, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
	       9, p, NULL, err);
	if (st == CR_EINPUT) {
		err->status = CR_OK;
		err->msg[0] = 0;
		st = cr_errf(err, CR_EINPUT, "board '%s' exists already", b->name);
	}
	memset(b->secret, 0, sizeof b->secret); /* the caller never needs it */
	return st;
}

enum cr_status srv_board_get(struct srv_db *db, const char *name, bool with_secret,
			     struct srv_board *b, bool *found, struct cr_err *err)
{
	memset(b, 0, sizeof *b);
	*found = false;
	struct srv_rows r = { 0 };
	const char *p[] = { name };
	enum cr_status st = q(db,
			      "SELECT name, tasks, backend, rank_rule, secret, timing, quick, time_cap "
			      "FROM boards WHERE name = $1",
			      1, p, &r, err);
	if (st || r.nrows == 0) {
		srv_rows_free(&r);
		return st;
	}
	snprintf(b->name, sizeof b->name, "%s", srv_rows_get(&r, 0, 0));
	b->tasks = strdup(srv_rows_get(&r, 0, 1));
	snprintf(b->backend, sizeof b->backend, "%s", srv_rows_get(&r, 0, 2));
	snprintf(b->rank, sizeof b->rank, "%s", srv_rows_get(&r, 0, 3));
	if (with_secret)
		snprintf(b->secret, sizeof b->secret, "%s", srv_rows_get(&r, 0, 4));
	b->timing = cell_i64(&r, 0, 5) != 0;
	b->quick = cell_i64(&r, 0, 6) != 0;
	b->time_cap_s = cell_real(&r, 0, 7);
	srv_rows_free(&r);
	if (!b->tasks)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	*found = true;
	return CR_OK;
}

bool srv_board_has_task(const struct srv_board *b, const char *task)
{
	size_t n = strlen(task);
	for (const char *s = b->tasks; s && *s;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == n && !memcmp(s, task, n))
			return true;
		s = e ? e + 1 : s + len;
	}
	return false;
}

/* ---- submissions and reward groups ---- */

/* The user's row is locked first (PostgreSQL), so two creates of one user
 * cannot both pass the quota; SQLite's BEGIN IMMEDIATE serializes them. */
static enum cr_status quota_check(struct srv_db *db, const struct srv_user *u, int adding,
				  bool *over, struct cr_err *err)
{
	char id[24];
	i64s(u->id, id);
	const char *p[] = { id };
	struct srv_rows r = { 0 };
	enum cr_status st = CR_OK;
	if (srv_db_kind(db) == SRV_DB_PG)
		st = q(db, "SELECT id FROM users WHERE id = $1 FOR UPDATE", 1, p, NULL, err);
	if (!st)
		st = q(db,
		       "SELECT (SELECT count(*) FROM submissions WHERE user_id = $1 AND state IN "
		       "('queued', 'running')) + (SELECT count(*) FROM jobs WHERE user_id = $1 AND "
		       "kind = 'reward' AND state <> 'done')",
		       1, p, &r, err);
	if (!st)
		*over = cell_i64(&r, 0, 0) + adding > u->quota;
	srv_rows_free(&r);
	return st;
}

static enum cr_status add_job(struct srv_db *db, const char *kind, const char *sub, const char *rew,
			      int idx, const struct srv_user *u, const char *task,
			      const char *backend, const char *file_name, const char *source,
			      const char *seed, const char *board, bool timing, bool quick,
			      double cap, bool code, const char *now, struct cr_err *err)
{
	char uid[24], ix[24], caps[40];
	i64s(u->id, uid);
	i64s(idx, ix);
	reals(cap, caps);
	/* reward jobs first: a trainer waits on them */
	const char *prio = !strcmp(kind, "reward") ? "0" : "1";
	const char *p[] = { kind, sub, rew, ix, uid, task, backend, file_name, source, seed, board,
			    timing ? "1" : "0", quick ? "1" : "0", caps, code ? "1" : "0", prio,
			    code ? "queued" : "done", now, code ? NULL : "no_code",
			    code ? NULL : now };
	return q(db,
		 "INSERT INTO jobs (kind, submission_id, reward_id, idx, user_id, task, backend, "
		 "file_name, source, seed, board, timing, quick, time_cap, code_block, priority, "
		 "state, attempts, created_ms, status, finished_ms) VALUES ($1, $2, $3, $4, $5, $6, "
		 "$7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 0, $18, $19, $20)",
		 20, p, NULL, err);
}

enum cr_status srv_sub_create(struct srv_db *db, const struct srv_board *b, const struct srv_user *u,
			      const char *task, const char *file_name, const char *source,
			      int64_t *id, bool *over_quota, struct cr_err *err)
{
	*over_quota = false;
	*id = 0;
	char sha[65], seed[24], now[24], uid[24];
	cr_sha256_hex(source, strlen(source), sha);
	snprintf(seed, sizeof seed, "%llu", srv_random_u64() >> 1);
	i64s(srv_now_ms(), now);
	i64s(u->id, uid);
	enum cr_status st = srv_db_begin(db, err);
	if (st)
		return st;
	st = quota_check(db, u, 1, over_quota, err);
	if (st || *over_quota)
		goto out;
	struct srv_rows r = { 0 };
	const char *p[] = { b->name, uid, task, file_name, source, sha, seed, now };
	st = q(db,
	       "INSERT INTO submissions (board, user_id, task, file_name, source, sha256, "
	       "public_seed, state, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8) "
	       "RETURNING id",
	       8, p, &r, err);
	if (!st)
		*id = cell_i64(&r, 0, 0);
	srv_rows_free(&r);
	char ids[24];
	i64s(*id, ids);
	for (int k = 0; !st && k < 2; k++)
		st = add_job(db, k ? "secret" : "public", ids, NULL, 0, u, task, b->backend,
			     file_name, source, seed, b->name, b->timing, b->quick, b->time_cap_s,
			     true, now, err);
out:
	if (st || *over_quota) {
		srv_db_rollback(db);
		return st;
	}
	return srv_db_commit(db, err);
}

enum cr_status srv_reward_create(struct srv_db *db, const struct srv_user *u, const char *task,
				 const char *backend, bool timing, const char *const *completions,
				 int n, int64_t *id, bool *over_quota, struct cr_err *err)
{
	*over_quota = false;
	*id = 0;
	char seed[24], now[24], uid[24], ns[24];
	snprintf(seed, sizeof seed, "%llu", srv_random_u64() >> 1);
	i64s(srv_now_ms(), now);
	i64s(u->id, uid);
	i64s(n, ns);
	enum cr_status st = srv_db_begin(db, err);
	if (st)
		return st;
	st = quota_check(db, u, n, over_quota, err);
	if (st || *over_quota)
		goto out;
	struct srv_rows r = { 0 };
	const char *p[] = { uid, task, backend, timing ? "1" : "0", ns, seed, now };
	st = q(db,
	       "INSERT INTO rewards (user_id, task, backend, timing, n, seed, created_ms) "
	       "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
	       7, p, &r, err);
	if (!st)
		*id = cell_i64(&r, 0, 0);
	srv_rows_free(&r);
	char ids[24];
	i64s(*id, ids);
	for (int i = 0; !st && i < n; i++) {
		const char *c = completions[i];
		size_t len = strlen(c);
		bool code = dec_has_code_block(c, len) != 0;
		char *src = code ? dec_candidate_code(c, len, task) : strdup("");
		if (!src) {
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			break;
		}
		char fname[32];
		snprintf(fname, sizeof fname, "completion_%d.%s", i, !strcmp(backend, "cuda") ? "cu" : "c");
		st = add_job(db, "reward", NULL, ids, i, u, task, backend, fname, src, seed, NULL,
			     timing, false, 0, code, now, err);
		free(src);
	}
out:
	if (st || *over_quota) {
		srv_db_rollback(db);
		return st;
	}
	return srv_db_commit(db, err);
}

/* ---- the queue ---- */

void srv_claim_release(struct srv_claim *c)
{
	if (!c)
		return;
	free(c->source);
	explicit_bzero(c->secret, sizeof c->secret);
	memset(c, 0, sizeof *c);
}

enum cr_status srv_job_claim(struct srv_db *db, const char *worker, bool cuda, struct srv_claim *c,
			     bool *got, struct cr_err *err)
{
	memset(c, 0, sizeof *c);
	*got = false;
	char lease[24];
	c->lease = (int64_t)(srv_random_u64() >> 2) + 1;
	i64s(c->lease, lease);
	bool pg = srv_db_kind(db) == SRV_DB_PG;
	const char *now = db_now(db);
	char sql[2048];
	/* fair between users first: the job of the user with the fewest jobs
	 * running, then with the fewest started in the last 15 minutes; then
	 * reward jobs before submissions (within a tie), then the oldest. So
	 * neither one user's queue of slow kernels nor a trainer's stream of
	 * reward groups holds the workers while others wait */
	snprintf(sql, sizeof sql,
		 "UPDATE jobs SET state = 'running', lease = $1, worker = $2, heartbeat_ms = %1$s, "
		 "started_ms = %1$s WHERE id = (SELECT j.id FROM jobs j WHERE j.state = 'queued' AND "
		 "(j.not_before_ms IS NULL OR j.not_before_ms <= %1$s)%2$s ORDER BY "
		 "(SELECT count(*) FROM jobs r WHERE r.user_id = j.user_id AND r.state = 'running'), "
		 "(SELECT count(*) FROM jobs d WHERE d.user_id = j.user_id AND d.state = 'done' AND "
		 "d.started_ms > %1$s - 900000), j.priority, j.id LIMIT 1%3$s) "
		 "RETURNING id, kind, task, file_name, backend, source, seed, board, timing, quick, "
		 "time_cap, submission_id",
		 now, cuda ? "" : " AND j.backend <> 'cuda'", pg ? " FOR UPDATE SKIP LOCKED" : "");
	enum cr_status st = srv_db_begin(db, err);
	if (st)
		return st;
	struct srv_rows r = { 0 };
	const char *p[] = { lease, worker };
	st = q(db, sql, 2, p, &r, err);
	if (st || r.nrows == 0)
		goto out;
	c->job = cell_i64(&r, 0, 0);
	snprintf(c->kind, sizeof c->kind, "%s", srv_rows_get(&r, 0, 1));
	snprintf(c->task, sizeof c->task, "%s", srv_rows_get(&r, 0, 2));
	snprintf(c->file_name, sizeof c->file_name, "%s", srv_rows_get(&r, 0, 3));
	snprintf(c->backend, sizeof c->backend, "%s", srv_rows_get(&r, 0, 4));
	c->source = strdup(srv_rows_get(&r, 0, 5));
	c->seed = strtoull(srv_rows_get(&r, 0, 6), NULL, 10);
	c->timing = cell_i64(&r, 0, 8) != 0;
	if (!strcmp(c->kind, "secret"))
		c->timing = false; /* its speedup is never kept: its verdict is the gate */
	c->quick = cell_i64(&r, 0, 9) != 0;
	c->time_cap_s = cell_real(&r, 0, 10);
	if (!c->source) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	const char *sub = srv_rows_get(&r, 0, 11);
	if (sub) {
		const char *ps[] = { sub };
		st = q(db, "UPDATE submissions SET state = 'running' WHERE id = $1 AND state = 'queued'",
		       1, ps, NULL, err);
	}
	if (!st && !strcmp(c->kind, "secret")) {
		struct srv_rows b = { 0 };
		const char *pb[] = { srv_rows_get(&r, 0, 7) };
		st = q(db, "SELECT secret FROM boards WHERE name = $1", 1, pb, &b, err);
		if (!st && b.nrows == 1) {
			unsigned char key[SRV_KEY_BYTES] = { 0 };
			const char *bs = srv_rows_get(&b, 0, 0);
			memcpy(key, bs, strlen(bs) < sizeof key ? strlen(bs) : sizeof key);
			char msg[64];
			int n = snprintf(msg, sizeof msg, "crucible secret run v1:%s", sub ? sub : "");
			srv_hmac_hex(key, msg, (size_t)n, c->secret);
			explicit_bzero(key, sizeof key);
		}
		else if (!st)
			st = cr_errf(err, CR_EINTERNAL, "job %" PRId64 ": its board is gone", c->job);
		if (b.cells && b.nrows == 1 && b.cells[0])
			explicit_bzero(b.cells[0], strlen(b.cells[0]));
		srv_rows_free(&b);
	}
	*got = !st;
out:
	srv_rows_free(&r);
	if (st) {
		srv_db_rollback(db);
		srv_claim_release(c);
		*got = false;
		return st;
	}
	st = srv_db_commit(db, err);
	if (st) {
		srv_claim_release(c);
		*got = false;
	}
	return st;
}

enum cr_status srv_job_beat(struct srv_db *db, const struct srv_claim *c, bool *lost,
			    struct cr_err *err)
{
	char id[24], lease[24], sql[256];
	i64s(c->job, id);
	i64s(c->lease, lease);
	snprintf(sql, sizeof sql,
		 "UPDATE jobs SET heartbeat_ms = %s WHERE id = $1 AND lease = $2 AND state = "
		 "'running' RETURNING id",
		 db_now(db));
	struct srv_rows r = { 0 };
	const char *p[] = { id, lease };
	enum cr_status st = q(db, sql, 2, p, &r, err);
	*lost = !st && r.nrows == 0;
	srv_rows_free(&r);
	return st;
}

static void opt_real(double v, char b[40], const char **p)
{
	if (isnan(v)) {
		*p = NULL;
		return;
	}
	reals(v, b);
	*p = b;
}

/* The submission is finished when its last job is: scored, or error when
 * a job ended as harness_error. */
static enum cr_status settle_submission(struct srv_db *db, const char *sub, const char *now,
					struct cr_err *err)
{
	/* a public run that is done and did not pass (a verdict, or its final
	 * harness failure, however it came) decides the submission: its secret
	 * run, when not begun, is not spent on it */
	const char *ps[] = { sub, now };
	enum cr_status st = q(db,
			      "UPDATE jobs SET state = 'done', status = 'skipped', finished_ms = "
			      "CAST($2 AS BIGINT) WHERE submission_id = $1 AND kind = 'secret' AND "
			      "state = 'queued' AND EXISTS (SELECT 1 FROM jobs p WHERE p.submission_id "
			      "= $1 AND p.kind = 'public' AND p.state = 'done' AND p.status <> 'ok')",
			      2, ps, NULL, err);
	if (st)
		return st;
	struct srv_rows r = { 0 };
	const char *p[] = { sub };
	st = q(db,
	       "SELECT count(*), sum(CASE WHEN status = 'harness_error' THEN 1 ELSE 0 "
	       "END) FROM jobs WHERE submission_id = $1 AND state <> 'done'",
	       1, p, &r, err);
	int64_t open = st ? 1 : cell_i64(&r, 0, 0);
	srv_rows_free(&r);
	if (st || open)
		return st;
	st = q(db,
	       "SELECT count(*) FROM jobs WHERE submission_id = $1 AND status IN ('harness_error', "
	       "'cancelled')",
	       1, p, &r, err);
	int64_t bad = st ? 0 : cell_i64(&r, 0, 0);
	srv_rows_free(&r);
	if (st)
		return st;
	const char *p2[] = { sub, bad ? "error" : "scored", now };
	return q(db,
		 "UPDATE submissions SET state = $2, scored_ms = $3 WHERE id = $1 AND state IN "
		 "('queued', 'running')",
		 3, p2, NULL, err);
}

/* A removed user's job that went back to the queue (a retry, a take-back)
 * is cancelled, not scored again; its submission is settled. */
static enum cr_status cancel_removed(struct srv_db *db, const char *now, struct cr_err *err)
{
	struct srv_rows r = { 0 };
	const char *p[] = { now };
	enum cr_status st = q(db,
			      "UPDATE jobs SET state = 'done', status = 'cancelled', finished_ms = "
			      "CAST($1 AS BIGINT) WHERE state = 'queued' AND user_id IN (SELECT id FROM "
			      "users WHERE substr(token_hash, 1, 8) = 'removed:') RETURNING "
			      "submission_id",
			      1, p, &r, err);
	for (int i = 0; !st && i < r.nrows; i++)
		if (srv_rows_get(&r, i, 0))
			st = settle_submission(db, srv_rows_get(&r, i, 0), now, err);
	srv_rows_free(&r);
	return st;
}

enum cr_status srv_job_finish(struct srv_db *db, const struct srv_claim *c,
			      const struct srv_job_out *o, bool *lost, struct cr_err *err)
{
	*lost = false;
	char id[24], lease[24], now[24];
	i64s(c->job, id);
	i64s(c->lease, lease);
	i64s(srv_now_ms(), now);
	enum cr_status st = srv_db_begin(db, err);
	if (st)
		return st;
	struct srv_rows r = { 0 };
	const char *p[] = { id, lease };
	char sql[256];
	snprintf(sql, sizeof sql,
		 "SELECT attempts, submission_id FROM jobs WHERE id = $1 AND lease = $2 AND "
		 "state = 'running'%s",
		 srv_db_kind(db) == SRV_DB_PG ? " FOR UPDATE" : "");
	st = q(db, sql, 2, p, &r, err);
	if (st)
		goto out;
	if (r.nrows == 0) {
		*lost = true;
		goto out;
	}
	int64_t attempts = cell_i64(&r, 0, 0) + 1;
	char sub[24] = "";
	if (srv_rows_get(&r, 0, 1))
		snprintf(sub, sizeof sub, "%s", srv_rows_get(&r, 0, 1));
	char at[24];
	i64s(attempts, at);
	if (o->harness_failed && attempts < SRV_MAX_ATTEMPTS) {
		/* back to the queue, not before a pause that grows with each try:
		 * a machine that cannot score it now is not asked again at once */
		char nb[24], rq[256];
		i64s(5000 * attempts, nb);
		snprintf(rq, sizeof rq,
			 "UPDATE jobs SET state = 'queued', lease = NULL, worker = NULL, attempts = $2, "
			 "harness_error = $3, not_before_ms = %s + CAST($4 AS BIGINT) WHERE id = $1",
			 db_now(db));
		const char *pq[] = { id, at, o->why, nb };
		st = q(db, rq, 4, pq, NULL, err);
		if (!st)
			st = cancel_removed(db, now, err);
		goto out;
	}
	char s1[40], s2[40], s3[40];
	const char *sp, *slo, *shi;
	opt_real(o->speedup, s1, &sp);
	opt_real(o->speedup_lo, s2, &slo);
	opt_real(o->speedup_hi, s3, &shi);
	bool secret = !strcmp(c->kind, "secret");
	const char *pd[] = { id,
			     at,
			     o->harness_failed ? "harness_error" : o->status,
			     secret ? NULL : sp, /* a secret run's speedup is never kept: */
			     secret ? NULL : slo, /* its verdict alone gates the rank */
			     secret ? NULL : shi,
			     o->noisy ? "1" : "0",
			     secret ? "" : o->detail,
			     secret ? "" : o->feedback,
			     o->harness_failed ? o->why : NULL,
			     now };
	st = q(db,
	       "UPDATE jobs SET state = 'done', attempts = $2, status = $3, speedup = $4, "
	       "speedup_lo = $5, speedup_hi = $6, noisy = $7, detail = $8, feedback = $9, "
	       "harness_error = $10, finished_ms = $11 WHERE id = $1",
	       11, pd, NULL, err);
	if (!st && sub[0])
		st = settle_submission(db, sub, now, err);
out:
	srv_rows_free(&r);
	if (st || *lost) {
		srv_db_rollback(db);
		return st;
	}
	return srv_db_commit(db, err);
}

/* Running jobs matching where (over $1..$np) go back to the queue, each
 * counting an attempt; those at SRV_MAX_ATTEMPTS end as harness_error (a
 * candidate that takes its worker down every time does not loop), and
 * their submissions are settled. One transaction; *n how many. */
static enum cr_status take_back(struct srv_db *db, const char *where, int np, const char *const *wp,
				const char *why, int *n, struct cr_err *err)
{
	*n = 0;
	char max[24], now[24], sql[1024];
	i64s(SRV_MAX_ATTEMPTS, max);
	i64s(srv_now_ms(), now);
	const char *p[8];
	for (int i = 0; i < np && i < 5; i++)
		p[i] = wp[i];
	p[np] = max;
	p[np + 1] = now;
	p[np + 2] = why;
	enum cr_status st = srv_db_begin(db, err);
	if (st)
		return st;
	struct srv_rows r = { 0 };
	snprintf(sql, sizeof sql,
		 "UPDATE jobs SET state = 'queued', lease = NULL, worker = NULL, attempts = attempts "
		 "+ 1, harness_error = $%d WHERE state = 'running' AND %s AND attempts + 1 < "
		 "CAST($%d AS INTEGER) RETURNING id",
		 np + 3, where, np + 1);
	st = q(db, sql, np + 3, p, &r, err);
	if (!st)
		*n = r.nrows;
	srv_rows_free(&r);
	if (!st) {
		snprintf(sql, sizeof sql,
			 "UPDATE jobs SET state = 'done', attempts = attempts + 1, status = "
			 "'harness_error', harness_error = $%d, finished_ms = CAST($%d AS BIGINT) WHERE "
			 "state = 'running' AND %s AND attempts + 1 >= CAST($%d AS INTEGER) RETURNING "
			 "submission_id",
			 np + 3, np + 2, where, np + 1);
		st = q(db, sql, np + 3, p, &r, err);
		for (int i = 0; !st && i < r.nrows; i++)
			if (srv_rows_get(&r, i, 0))
				st = settle_submission(db, srv_rows_get(&r, i, 0), now, err);
		if (!st)
			*n += r.nrows;
		srv_rows_free(&r);
	}
	if (!st)
		st = cancel_removed(db, now, err);
	if (st) {
		srv_db_rollback(db);
		return st;
	}
	return srv_db_commit(db, err);
}

enum cr_status srv_job_reap(struct srv_db *db, int64_t lease_ms, int *n, struct cr_err *err)
{
	char lease[24], where[160];
	i64s(lease_ms, lease);
	snprintf(where, sizeof where, "heartbeat_ms < %s - CAST($1 AS BIGINT)", db_now(db));
	const char *p[] = { lease };
	return take_back(db, where, 1, p, "its worker stopped answering", n, err);
}

enum cr_status srv_queue_counts(struct srv_db *db, int *queued, int *running, struct cr_err *err)
{
	struct srv_rows r = { 0 };
	enum cr_status st = q(db,
			      "SELECT sum(CASE WHEN state = 'queued' THEN 1 ELSE 0 END), "
			      "sum(CASE WHEN state = 'running' THEN 1 ELSE 0 END) FROM jobs",
			      0, NULL, &r, err);
	*queued = st ? 0 : (int)cell_i64(&r, 0, 0);
	*running = st ? 0 : (int)cell_i64(&r, 0, 1);
	srv_rows_free(&r);
	return st;
}

enum cr_status srv_job_requeue_prefix(struct srv_db *db, const char *prefix, int *n,
				      struct cr_err *err)
{
	/* LIKE would read % and _ in the prefix: compare the prefix itself */
	char len[24];
	i64s((int64_t)strlen(prefix), len);
	const char *p[] = { prefix, len };
	return take_back(db, "substr(worker, 1, CAST($2 AS INTEGER)) = $1", 2, p,
			 "its worker's process is gone", n, err);
}

enum cr_status srv_job_workers(struct srv_db *db, char ***names, int *n, struct cr_err *err)
{
	*names = NULL;
	*n = 0;
	struct srv_rows r = { 0 };
	enum cr_status st = q(db, "SELECT DISTINCT worker FROM jobs WHERE state = 'running'", 0,
			      NULL, &r, err);
	if (st)
		return st;
	char **v = calloc((size_t)r.nrows + 1, sizeof *v);
	for (int i = 0; v && i < r.nrows; i++)
		v[(*n)++] = strdup(srv_rows_get(&r, i, 0) ? srv_rows_get(&r, i, 0) : "");
	srv_rows_free(&r);
	if (!v)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	*names = v;
	return CR_OK;
}

enum cr_status srv_store_writable(struct srv_db *db, struct cr_err *err)
{
	struct cr_err e;
	cr_err_init(&e);
	enum cr_status st =
		q(db, "UPDATE meta SET value = value WHERE key = 'schema'", 0, NULL, NULL, &e);
	if (st)
		return cr_errf(err, CR_EENV, "the store cannot be written: %s", e.msg);
	return CR_OK;
}

enum cr_status srv_status_json(struct srv_db *db, json_t **out, struct cr_err *err)
{
	*out = NULL;
	struct srv_rows r = { 0 }, w = { 0 };
	char now[24];
	i64s(srv_now_ms(), now);
	const char *p[] = { now };
	enum cr_status st = q(db,
			      "SELECT (SELECT count(*) FROM boards), (SELECT count(*) FROM users), "
			      "(SELECT count(*) FROM submissions), (SELECT count(*) FROM jobs WHERE "
			      "state = 'queued'), (SELECT count(*) FROM jobs WHERE state = 'running'), "
			      "(SELECT CAST($1 AS BIGINT) - min(created_ms) FROM jobs WHERE state = "
			      "'queued'), (SELECT count(*) FROM jobs WHERE status = 'harness_error')",
			      1, p, &r, err);
	if (!st) {
		/* the heartbeat's age by the clock that wrote it, the database's */
		char sql[256];
		snprintf(sql, sizeof sql,
			 "SELECT id, kind, task, worker, %s - heartbeat_ms, attempts FROM jobs WHERE "
			 "state = 'running' ORDER BY id",
			 db_now(db));
		st = q(db, sql, 0, NULL, &w, err);
	}
	if (!st) {
		json_t *run = json_array();
		for (int i = 0; i < w.nrows; i++)
			json_array_append_new(run, json_pack("{s:I, s:s, s:s, s:s, s:f, s:I}", "job",
							     (json_int_t)cell_i64(&w, i, 0), "kind",
							     srv_rows_get(&w, i, 1), "task",
							     srv_rows_get(&w, i, 2), "worker",
							     srv_rows_get(&w, i, 3) ? srv_rows_get(&w, i, 3) : "",
							     "heartbeat_s",
							     (double)cell_i64(&w, i, 4) / 1000.0, "attempts",
							     (json_int_t)cell_i64(&w, i, 5)));
		*out = json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:o}", "boards",
				 (json_int_t)cell_i64(&r, 0, 0), "users", (json_int_t)cell_i64(&r, 0, 1),
				 "submissions", (json_int_t)cell_i64(&r, 0, 2), "queued",
				 (json_int_t)cell_i64(&r, 0, 3), "running", (json_int_t)cell_i64(&r, 0, 4),
				 "oldest_queued_s",
				 srv_rows_get(&r, 0, 5) ? json_real((double)cell_i64(&r, 0, 5) / 1000.0)
							: json_null(),
				 "harness_errors", (json_int_t)cell_i64(&r, 0, 6), "running_jobs", run);
	}
	srv_rows_free(&r);
	srv_rows_free(&w);
	return st;
}
