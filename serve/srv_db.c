/* srv_db.c — the store's connection (srv_db.h): one statement, a script or
 * a transaction, on SQLite (a file in WAL mode, the default) or PostgreSQL
 * (libpq, for a postgresql:// or postgres:// location). The SQL is the
 * caller's and the same on both; this file only binds the $1..$n text
 * parameters, copies the rows out as text and turns each database's errors
 * into one status: CR_EINPUT for a violated constraint, CR_EIO otherwise,
 * with the location (its password removed) and the statement named. */
#include "serve/srv_db.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUSY_MS_DEFAULT 30000
#define PG_CONNECT_TIMEOUT_S "10"
#define PG_TEXT_OID 25 /* pg_type.oid of text, for a parameter the SQL does not use */

struct srv_db {
	enum srv_db_kind kind;
	sqlite3 *lite;
	PGconn *pg;
	char *where;     /* the location for messages: "store FILE" or the URL without a password */
	char *password;  /* the URL's password, decoded (libpq's parse), to scrub from messages */
	int timeout_ms;  /* SQLite: the busy timeout; PostgreSQL: lock_timeout, 0 (none) unless set */
	bool retryable;  /* the last error was busy, a serialization failure or a deadlock */
};

/* ---- rows ----------------------------------------------------------------- */

const char *srv_rows_get(const struct srv_rows *r, int row, int col)
{
	if (!r || !r->cells || row < 0 || col < 0 || row >= r->nrows || col >= r->ncols)
		return NULL;
	return r->cells[(size_t)row * (size_t)r->ncols + (size_t)col];
}

void srv_rows_free(struct srv_rows *r)
{
	if (!r)
		return;
	if (r->cells)
		for (size_t i = 0; i < (size_t)r->nrows * (size_t)r->ncols; i++)
			free(r->cells[i]);
	free(r->cells);
	memset(r, 0, sizeof(*r));
}

/* Room for one more row of r->ncols cells (cap: rows allocated). */
static bool rows_grow(struct srv_rows *r, int *cap)
{
	if (r->nrows < *cap)
		return true;
	int ncap = *cap ? *cap * 2 : 16;
	size_t ncols = r->ncols ? (size_t)r->ncols : 1;
	char **c = realloc(r->cells, (size_t)ncap * ncols * sizeof(*c));

	if (!c)
		return false;
	r->cells = c;
	*cap = ncap;
	return true;
}

/* ---- messages ------------------------------------------------------------- */

bool srv_db_is_pg_url(const char *location)
{
	return location && (!strncmp(location, "postgresql://", 13) || !strncmp(location, "postgres://", 11));
}

/* The URL as a message may show it: "user:password@" becomes "user@", and a
 * password=... query parameter is left out. malloc'd. */
static char *url_without_password(const char *url)
{
	size_t n = strlen(url);
	char *out = malloc(n + 1), *o = out;
	const char *p = strstr(url, "://") + 3;

	if (!out)
		return NULL;
	memcpy(o, url, (size_t)(p - url));
	o += p - url;
	const char *host_end = p + strcspn(p, "/?");
	const char *at = NULL;
	for (const char *q = p; q < host_end; q++)
		if (*q == '@')
			at = q;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		const char *user_end = colon ? colon : at;
		memcpy(o, p, (size_t)(user_end - p));
		o += user_end - p;
		p = at;
	}
	const char *query = strchr(p, '?');
	size_t keep = query ? (size_t)(query - p) : strlen(p);
	memcpy(o, p, keep);
	o += keep;
	if (query) {
		/* the parameters, one by one, all but password=... */
		char sep = '?';
		const char *q = query + 1;
		while (*q) {
			size_t len = strcspn(q, "&");
			if (strncmp(q, "password=", 9) != 0) {
				*o++ = sep;
				memcpy(o, q, len);
				o += len;
				sep = '&';
			}
			q += len + (q[len] == '&');
		}
	}
	*o = '\0';
	return out;
}

/* The statement, whitespace folded, cut at 60 characters: enough to say
 * which one failed. */
static void sql_head(const char *sql, char *buf, size_t size)
{
	size_t n = 0;
	bool space = false;

	for (const char *s = sql; *s && n + 4 < size; s++) {
		if (isspace((unsigned char)*s)) {
			space = n > 0;
			continue;
		}
		if (n >= 60) {
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		if (space)
			buf[n++] = ' ';
		space = false;
		buf[n++] = *s;
	}
	buf[n] = '\0';
}

/* The database's words: the first line, without a trailing newline, with
 * the password (if libpq ever quoted it) masked. */
static void db_words(const struct srv_db *db, const char *msg, char *buf, size_t size)
{
	if (!msg || !*msg)
		msg = "(no message)";
	size_t n = strcspn(msg, "\n");
	if (n >= size)
		n = size - 1;
	memcpy(buf, msg, n);
	buf[n] = '\0';
	if (db->password && *db->password) {
		size_t plen = strlen(db->password);
		for (char *p = strstr(buf, db->password); p; p = strstr(p + 3, db->password)) {
			memset(p, '*', 3);
			memmove(p + 3, p + plen, strlen(p + plen) + 1);
		}
	}
}

static enum cr_status fail(struct srv_db *db, enum cr_status st, const char *sql, const char *words,
			   struct cr_err *err)
{
	char head[80], w[600];

	db_words(db, words, w, sizeof(w));
	if (!sql)
		return cr_errf(err, st, "%s: %s", db->where, w);
	sql_head(sql, head, sizeof(head));
	return cr_errf(err, st, "%s: \"%s\" failed: %s", db->where, head, w);
}

/* ---- SQLite --------------------------------------------------------------- */

static enum cr_status lite_status(struct srv_db *db, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_CONSTRAINT:
		return CR_EINPUT;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		db->retryable = true;
		return CR_EIO;
	case SQLITE_NOMEM:
		return CR_ENOMEM;
	case SQLITE_NOTADB:
		return CR_EINPUT;
	default:
		return CR_EIO;
	}
}

static enum cr_status lite_fail(struct srv_db *db, int rc, const char *sql, struct cr_err *err)
{
	char words[400];
	enum cr_status st = lite_status(db, rc);

	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		snprintf(words, sizeof(words), "%s (busy for more than %d ms)", sqlite3_errmsg(db->lite),
			 db->timeout_ms);
	else
		snprintf(words, sizeof(words), "%s", sqlite3_errmsg(db->lite));
	return fail(db, st, sql, words, err);
}

/* Every parameter the statement names is $k with 1 <= k <= n: SQLite would
 * bind NULL to one left over, PostgreSQL refuses it, so both refuse it. */
static enum cr_status lite_bind(struct srv_db *db, sqlite3_stmt *st, const char *sql, int n,
				const char *const *params, struct cr_err *err)
{
	int count = sqlite3_bind_parameter_count(st);

	for (int i = 1; i <= count; i++) {
		const char *name = sqlite3_bind_parameter_name(st, i);
		uint64_t k = 0;
		if (!name || name[0] != '$' || !cr_parse_u64(name + 1, &k) || k < 1 || k > (uint64_t)n) {
			char w[200];
			snprintf(w, sizeof(w), "parameter %s is not one of $1..$%d%s", name ? name : "?", n,
				 name && strstr(name, "::") ? " (a cast is CAST($k AS TYPE) here, not $k::TYPE)"
							    : "");
			return fail(db, CR_EIO, sql, w, err);
		}
	}
	for (int k = 1; k <= n; k++) {
		char name[16];
		snprintf(name, sizeof(name), "$%d", k);
		int idx = sqlite3_bind_parameter_index(st, name);
		if (idx == 0)
			continue;
		int rc = params[k - 1] ? sqlite3_bind_text(st, idx, params[k - 1], -1, SQLITE_TRANSIENT)
				       : sqlite3_bind_null(st, idx);
		if (rc != SQLITE_OK)
			return lite_fail(db, rc, sql, err);
	}
	return CR_OK;
}

static enum cr_status lite_exec(struct srv_db *db, const char *sql, int n, const char *const *params,
				struct srv_rows *rows, struct cr_err *err)
{
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	enum cr_status s = CR_OK;
	int cap = 0, rc = sqlite3_prepare_v2(db->lite, sql, -1, &st, &tail);

	if (rc != SQLITE_OK)
		return lite_fail(db, rc, sql, err);
	if (!st)
		return fail(db, CR_EIO, sql, "no statement", err);
	while (tail && (isspace((unsigned char)*tail) || *tail == ';'))
		tail++;
	if (tail && *tail) {
		s = fail(db, CR_EIO, sql, "more than one statement (use srv_db_script)", err);
		goto out;
	}
	s = lite_bind(db, st, sql, n, params, err);
	if (s != CR_OK)
		goto out;
	if (rows)
		rows->ncols = sqlite3_column_count(st);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!rows)
			continue;
		if (!rows_grow(rows, &cap)) {
			s = cr_errf(err, CR_ENOMEM, "%s: out of memory reading rows", db->where);
			goto out;
		}
		for (int c = 0; c < rows->ncols; c++) {
			const unsigned char *t = sqlite3_column_text(st, c);
			char **cell = &rows->cells[(size_t)rows->nrows * (size_t)rows->ncols + (size_t)c];
			*cell = NULL;
			if (t && !(*cell = strdup((const char *)t))) {
				for (int d = 0; d < c; d++)
					free(rows->cells[(size_t)rows->nrows * (size_t)rows->ncols + (size_t)d]);
				s = cr_errf(err, CR_ENOMEM, "%s: out of memory reading rows", db->where);
				goto out;
			}
		}
		rows->nrows++;
	}
	if (rc != SQLITE_DONE)
		s = lite_fail(db, rc, sql, err);
out:
	sqlite3_finalize(st);
	if (s != CR_OK && rows)
		srv_rows_free(rows);
	return s;
}

static enum cr_status lite_script(struct srv_db *db, const char *sql, struct cr_err *err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db->lite, sql, NULL, NULL, &msg);

	sqlite3_free(msg); /* sqlite3_errmsg says the same */
	return rc == SQLITE_OK ? CR_OK : lite_fail(db, rc, sql, err);
}

/* One PRAGMA whose single row must read want (NULL: no check). */
static enum cr_status lite_pragma(struct srv_db *db, const char *sql, const char *want,
				  struct cr_err *err)
{
	struct srv_rows r = {0};
	enum cr_status s = lite_exec(db, sql, 0, NULL, &r, err);

	if (s == CR_OK && want) {
		const char *got = srv_rows_get(&r, 0, 0);
		if (!got || strcasecmp(got, want) != 0)
			s = cr_errf(err, CR_EIO, "%s: \"%s\" did not take: the database says %s, not %s",
				    db->where, sql, got ? got : "nothing", want);
	}
	srv_rows_free(&r);
	return s;
}

/* The file is made here, mode 0600, when missing (the store holds token
 * hashes and each board's secret); a link is refused, not followed; SQLite
 * gives its -wal and -shm files the mode of the database. */
static enum cr_status lite_open(struct srv_db *db, const char *path, struct cr_err *err)
{
	struct stat sb;

	if (!sqlite3_threadsafe())
		return cr_errf(err, CR_EENV, "%s: this SQLite is built without threads (the server needs them)",
			       db->where);
	for (;;) {
		if (lstat(path, &sb) == 0) {
			if (!S_ISREG(sb.st_mode))
				return cr_errf(err, CR_EINPUT, "%s: is %s", db->where,
					       cr_file_kind(sb.st_mode));
			break;
		}
		if (errno != ENOENT)
			return cr_errf(err, CR_EIO, "%s: %s", db->where, strerror(errno));
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			break;
		}
		if (errno != EEXIST) /* EEXIST: made meanwhile (another connection): look again */
			return cr_errf(err, CR_EIO, "%s: cannot create: %s", db->where, strerror(errno));
	}
	int rc = sqlite3_open_v2(path, &db->lite, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return db->lite ? lite_fail(db, rc, NULL, err)
				: cr_errf(err, CR_ENOMEM, "%s: out of memory", db->where);
	sqlite3_extended_result_codes(db->lite, 1);
	sqlite3_busy_timeout(db->lite, db->timeout_ms);
	enum cr_status s = lite_pragma(db, "PRAGMA journal_mode=WAL", "wal", err);
	if (s == CR_OK)
		s = lite_pragma(db, "PRAGMA synchronous=FULL", NULL, err);
	if (s == CR_OK)
		s = lite_pragma(db, "PRAGMA foreign_keys=ON", NULL, err);
	if (s == CR_OK)
		s = lite_pragma(db, "PRAGMA foreign_keys", "1", err);
	return s;
}

/* ---- PostgreSQL ------------------------------------------------------------ */

/* Marks in used[k-1] each $k the statement names (outside quotes and
 * comments): PostgreSQL cannot infer the type of a parameter the SQL never
 * uses, so those are sent as text, and the others untyped (inferred). */
static void pg_params_used(const char *sql, int n, bool *used)
{
	for (const char *s = sql; *s; s++) {
		if (*s == '\'' || *s == '"') {
			const char *e = strchr(s + 1, *s);
			if (!e)
				return;
			s = e;
		} else if (s[0] == '-' && s[1] == '-') {
			s += strcspn(s, "\n");
			if (!*s)
				return;
		} else if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");
			if (!e)
				return;
			s = e + 1;
		} else if (*s == '$' && isdigit((unsigned char)s[1])) {
			long k = strtol(s + 1, NULL, 10);
			if (k >= 1 && k <= n)
				used[k - 1] = true;
		}
	}
}

static enum cr_status pg_lost(struct srv_db *db, const char *sql, struct cr_err *err)
{
	return fail(db, CR_EIO, sql, PQerrorMessage(db->pg), err);
}

/* The result's status: ok, a constraint (class 23), or anything else;
 * serialization failures, deadlocks and lock timeouts are retryable. */
static enum cr_status pg_result(struct srv_db *db, PGresult *res, const char *sql, struct cr_err *err)
{
	if (!res)
		return pg_lost(db, sql, err);
	ExecStatusType es = PQresultStatus(res);
	if (es == PGRES_COMMAND_OK || es == PGRES_TUPLES_OK)
		return CR_OK;
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	enum cr_status st = CR_EIO;
	if (state && !strncmp(state, "23", 2))
		st = CR_EINPUT;
	if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03")))
		db->retryable = true;
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	if (!primary || !state)
		return fail(db, st, sql, *PQresultErrorMessage(res) ? PQresultErrorMessage(res)
							    : PQerrorMessage(db->pg), err);
	char words[600];
	snprintf(words, sizeof(words), "%s (SQLSTATE %s)", primary, state);
	return fail(db, st, sql, words, err);
}

static enum cr_status pg_exec(struct srv_db *db, const char *sql, int n, const char *const *params,
			      struct srv_rows *rows, struct cr_err *err)
{
	if (PQstatus(db->pg) == CONNECTION_BAD)
		return fail(db, CR_EIO, sql, "the connection is lost (srv_db_reconnect)", err);
	Oid *types = NULL;
	bool *used = NULL;
	if (n > 0) {
		types = calloc((size_t)n, sizeof(*types));
		used = calloc((size_t)n, sizeof(*used));
		if (!types || !used) {
			free(types);
			free(used);
			return cr_errf(err, CR_ENOMEM, "%s: out of memory", db->where);
		}
		pg_params_used(sql, n, used);
		for (int k = 0; k < n; k++)
			types[k] = used[k] ? 0 : PG_TEXT_OID;
	}
	PGresult *res = PQexecParams(db->pg, sql, n, types, params, NULL, NULL, 0);
	free(types);
	free(used);
	enum cr_status s = pg_result(db, res, sql, err);
	if (s == CR_OK && rows) {
		int nr = PQntuples(res), nc = PQnfields(res);
		rows->ncols = nc;
		rows->cells = calloc((size_t)(nr ? nr : 1) * (size_t)(nc ? nc : 1), sizeof(char *));
		if (!rows->cells)
			s = cr_errf(err, CR_ENOMEM, "%s: out of memory reading rows", db->where);
		for (int r = 0; s == CR_OK && r < nr; r++) {
			rows->nrows = r + 1; /* so a failure frees what was copied */
			for (int c = 0; c < nc; c++) {
				if (PQgetisnull(res, r, c))
					continue;
				char *v = strdup(PQgetvalue(res, r, c));
				if (!v) {
					s = cr_errf(err, CR_ENOMEM, "%s: out of memory reading rows", db->where);
					break;
				}
				rows->cells[(size_t)r * (size_t)nc + (size_t)c] = v;
			}
		}
		if (s != CR_OK)
			srv_rows_free(rows);
	}
	PQclear(res);
	return s;
}

static enum cr_status pg_script(struct srv_db *db, const char *sql, struct cr_err *err)
{
	if (PQstatus(db->pg) == CONNECTION_BAD)
		return fail(db, CR_EIO, sql, "the connection is lost (srv_db_reconnect)", err);
	PGresult *res = PQexec(db->pg, sql);
	enum cr_status s = pg_result(db, res, sql, err);
	PQclear(res);
	return s;
}

/* What every new connection (open, reconnect) is set to: UTF-8 text, and
 * the lock timeout when one was asked for. */
static enum cr_status pg_session(struct srv_db *db, struct cr_err *err)
{
	if (PQstatus(db->pg) != CONNECTION_OK)
		return fail(db, CR_EIO, NULL, PQerrorMessage(db->pg), err);
	if (strcmp(pg_encoding_to_char(PQclientEncoding(db->pg)), "UTF8") != 0 &&
	    PQsetClientEncoding(db->pg, "UTF8") != 0)
		return fail(db, CR_EIO, "SET client_encoding", PQerrorMessage(db->pg), err);
	if (db->timeout_ms > 0) {
		char sql[64];
		snprintf(sql, sizeof(sql), "SET lock_timeout = %d", db->timeout_ms);
		return pg_script(db, sql, err);
	}
	return CR_OK;
}

/* The server's notices (NOTICE, WARNING) are not errors and are not the
 * store's to print: libpq's default writes them to stderr. */
static void pg_quiet(void *arg, const char *message)
{
	(void)arg, (void)message;
}

static enum cr_status pg_open(struct srv_db *db, const char *url, struct cr_err *err)
{
	/* the URL's own connect_timeout (later) wins over ours; the encoding
	 * (after it) wins over the URL's and survives PQreset */
	const char *keys[] = {"connect_timeout", "fallback_application_name", "dbname",
			      "client_encoding", NULL};
	const char *vals[] = {PG_CONNECT_TIMEOUT_S, "crucible-serve", url, "UTF8", NULL};
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(url, &perr);

	if (!opts) {
		/* libpq's words may quote the URL: they are not repeated */
		PQfreemem(perr);
		return cr_errf(err, CR_EINPUT, "%s: not a valid PostgreSQL URL", db->where);
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val && *o->val)
			db->password = strdup(o->val);
	PQconninfoFree(opts);
	db->pg = PQconnectdbParams(keys, vals, 1);
	if (!db->pg)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", db->where);
	PQsetNoticeProcessor(db->pg, pg_quiet, NULL); /* kept by PQreset */
	if (PQstatus(db->pg) != CONNECTION_OK) {
		char w[600];
		db_words(db, PQerrorMessage(db->pg), w, sizeof(w));
		return cr_errf(err, CR_EIO, "%s: cannot connect: %s", db->where, w);
	}
	return pg_session(db, err);
}

/* ---- the interface ---------------------------------------------------------- */

enum cr_status srv_db_open(const char *location, struct srv_db **out, struct cr_err *err)
{
	*out = NULL;
	if (!location || !*location)
		return cr_errf(err, CR_EUSAGE, "store: no location given (a file or a postgresql:// URL)");
	struct srv_db *db = calloc(1, sizeof(*db));
	if (!db)
		return cr_errf(err, CR_ENOMEM, "store: out of memory"); /* location may hold a password */
	db->kind = srv_db_is_pg_url(location) ? SRV_DB_PG : SRV_DB_SQLITE;
	db->timeout_ms = db->kind == SRV_DB_PG ? 0 : BUSY_MS_DEFAULT;
	if (db->kind == SRV_DB_PG) {
		char *shown = url_without_password(location);
		size_t n = shown ? strlen(shown) + 8 : 0;
		if (shown && (db->where = malloc(n)))
			snprintf(db->where, n, "store %s", shown);
		free(shown);
	} else {
		size_t n = strlen(location) + 8;
		if ((db->where = malloc(n)))
			snprintf(db->where, n, "store %s", location);
	}
	if (!db->where) {
		free(db);
		return cr_errf(err, CR_ENOMEM, "store: out of memory");
	}
	enum cr_status s = db->kind == SRV_DB_PG ? pg_open(db, location, err) : lite_open(db, location, err);
	if (s != CR_OK) {
		srv_db_close(db);
		return s;
	}
	*out = db;
	return CR_OK;
}

void srv_db_close(struct srv_db *db)
{
	if (!db)
		return;
	if (db->lite)
		sqlite3_close_v2(db->lite);
	if (db->pg)
		PQfinish(db->pg);
	free(db->where);
	free(db->password);
	free(db);
}

enum srv_db_kind srv_db_kind(const struct srv_db *db)
{
	return db->kind;
}

const char *srv_db_where(const struct srv_db *db)
{
	return db->where;
}

const char *srv_db_pk(const struct srv_db *db)
{
	return db->kind == SRV_DB_PG ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY";
}

bool srv_db_retryable(const struct srv_db *db)
{
	return db->retryable;
}

bool srv_db_lost(const struct srv_db *db)
{
	return db->kind == SRV_DB_PG && PQstatus(db->pg) == CONNECTION_BAD;
}

enum cr_status srv_db_set_timeout(struct srv_db *db, int ms, struct cr_err *err)
{
	db->retryable = false;
	db->timeout_ms = ms < 0 ? 0 : ms;
	if (db->kind == SRV_DB_SQLITE) {
		sqlite3_busy_timeout(db->lite, db->timeout_ms);
		return CR_OK;
	}
	char sql[64];
	snprintf(sql, sizeof(sql), "SET lock_timeout = %d", db->timeout_ms);
	return pg_script(db, sql, err);
}

enum cr_status srv_db_reconnect(struct srv_db *db, struct cr_err *err)
{
	db->retryable = false;
	if (db->kind == SRV_DB_SQLITE)
		return CR_OK;
	PQreset(db->pg);
	if (PQstatus(db->pg) != CONNECTION_OK) {
		char w[600];
		db_words(db, PQerrorMessage(db->pg), w, sizeof(w));
		return cr_errf(err, CR_EIO, "%s: cannot reconnect: %s", db->where, w);
	}
	return pg_session(db, err);
}

enum cr_status srv_db_exec(struct srv_db *db, const char *sql, int nparams,
			   const char *const *params, struct srv_rows *rows, struct cr_err *err)
{
	db->retryable = false;
	if (rows)
		memset(rows, 0, sizeof(*rows));
	if (nparams < 0 || (nparams > 0 && !params))
		return cr_errf(err, CR_EINTERNAL, "%s: %d parameters without their values", db->where,
			       nparams);
	return db->kind == SRV_DB_PG ? pg_exec(db, sql, nparams, params, rows, err)
				     : lite_exec(db, sql, nparams, params, rows, err);
}

enum cr_status srv_db_script(struct srv_db *db, const char *sql, struct cr_err *err)
{
	db->retryable = false;
	return db->kind == SRV_DB_PG ? pg_script(db, sql, err) : lite_script(db, sql, err);
}

enum cr_status srv_db_begin(struct srv_db *db, struct cr_err *err)
{
	return srv_db_script(db, db->kind == SRV_DB_PG ? "BEGIN" : "BEGIN IMMEDIATE", err);
}

/* A commit that fails leaves no transaction open: it is rolled back (on
 * PostgreSQL a transaction in which a statement failed answers COMMIT with
 * ROLLBACK, which is a failure too). */
enum cr_status srv_db_commit(struct srv_db *db, struct cr_err *err)
{
	db->retryable = false;
	if (db->kind == SRV_DB_SQLITE) {
		enum cr_status s = lite_script(db, "COMMIT", err);
		if (s != CR_OK && !sqlite3_get_autocommit(db->lite))
			sqlite3_exec(db->lite, "ROLLBACK", NULL, NULL, NULL);
		return s;
	}
	if (PQstatus(db->pg) == CONNECTION_BAD)
		return fail(db, CR_EIO, "COMMIT", "the connection is lost (srv_db_reconnect)", err);
	PGresult *res = PQexec(db->pg, "COMMIT");
	enum cr_status s = pg_result(db, res, "COMMIT", err);
	if (s == CR_OK && !strcmp(PQcmdStatus(res), "ROLLBACK"))
		s = fail(db, CR_EIO, "COMMIT", "rolled back: a statement in the transaction had failed",
			 err);
	PQclear(res);
	return s;
}

void srv_db_rollback(struct srv_db *db)
{
	if (db->kind == SRV_DB_SQLITE) {
		if (!sqlite3_get_autocommit(db->lite))
			sqlite3_exec(db->lite, "ROLLBACK", NULL, NULL, NULL);
		return;
	}
	if (PQstatus(db->pg) == CONNECTION_OK && PQtransactionStatus(db->pg) != PQTRANS_IDLE)
		PQclear(PQexec(db->pg, "ROLLBACK"));
}
