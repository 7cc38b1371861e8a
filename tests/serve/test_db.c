/* test_db.c — the store's connection (serve/srv_db.c) on SQLite (a file in
 * a fresh temporary folder) and, when CRUCIBLE_TEST_PG names a server's URL
 * (tests/serve/db_pg.sh starts one), on PostgreSQL: the same checks on both
 * (parameters, NULL, UTF-8 and quotes, RETURNING, constraints, bad SQL,
 * transactions, scripts, lock waits that give up and say "retry"), the
 * queue's core guarantee (4 threads, each with its own connection, claim
 * 200 jobs: every job exactly once), then what only one of them has (the
 * file's mode, WAL and links for SQLite; serialization failures, a lost
 * connection and the password kept out of messages for PostgreSQL). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "serve/srv_db.h"

struct ctx {
	bool pg;
	char dir[PATH_MAX];      /* SQLite: the test's temporary folder */
	char loc[PATH_MAX + 16]; /* the location srv_db_open is given */
};

/* ---- helpers -------------------------------------------------------------- */

static void has(const char *text, const char *want)
{
	if (!strstr(text, want)) {
		print_error("\"%s\" not in: %s\n", want, text);
		fail();
	}
}

static void hasnt(const char *text, const char *bad)
{
	if (strstr(text, bad)) {
		print_error("\"%s\" should not be in: %s\n", bad, text);
		fail();
	}
}

static struct srv_db *open_ok(const char *loc)
{
	struct srv_db *db = NULL;
	struct cr_err e;

	cr_err_init(&e);
	if (srv_db_open(loc, &db, &e) != CR_OK) {
		print_error("open %s: %s\n", loc, e.msg);
		fail();
	}
	return db;
}

/* sql with n parameters must succeed; rows may be NULL */
static void ok(struct srv_db *db, const char *sql, int n, const char *const *p, struct srv_rows *rows)
{
	struct cr_err e;

	cr_err_init(&e);
	if (srv_db_exec(db, sql, n, p, rows, &e) != CR_OK) {
		print_error("%s\n", e.msg);
		fail();
	}
}

/* sql must fail with status want; the message comes back in e */
static void fails(struct srv_db *db, const char *sql, int n, const char *const *p, enum cr_status want,
		  struct cr_err *e)
{
	struct srv_rows r = {0};

	cr_err_init(e);
	enum cr_status st = srv_db_exec(db, sql, n, p, &r, e);
	if (st != want) {
		print_error("%s: status %s, want %s (%s)\n", sql, cr_status_name(st), cr_status_name(want),
			    e->msg);
		fail();
	}
	assert_int_equal(r.nrows, 0);
	assert_null(r.cells);
}

static void script_ok(struct srv_db *db, const char *sql)
{
	struct cr_err e;

	cr_err_init(&e);
	if (srv_db_script(db, sql, &e) != CR_OK) {
		print_error("%s\n", e.msg);
		fail();
	}
}

static long count(struct srv_db *db, const char *sql)
{
	struct srv_rows r = {0};

	ok(db, sql, 0, NULL, &r);
	assert_int_equal(r.nrows, 1);
	long n = strtol(srv_rows_get(&r, 0, 0), NULL, 10);
	srv_rows_free(&r);
	return n;
}

static void items_table(struct srv_db *db)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "CREATE TABLE items (id %s, name TEXT NOT NULL, note TEXT, n INTEGER UNIQUE,"
		 " CHECK (n IS NULL OR n >= 0))",
		 srv_db_pk(db));
	script_ok(db, sql);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

/* ---- setup ---------------------------------------------------------------- */

static int lite_setup(void **state)
{
	struct ctx *c = *state;
	const char *tmp = getenv("TMPDIR");

	c->pg = false;
	snprintf(c->dir, sizeof(c->dir), "%s/test_db.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(c->dir))
		return -1;
	snprintf(c->loc, sizeof(c->loc), "%s/store.db", c->dir);
	return 0;
}

static int lite_teardown(void **state)
{
	struct ctx *c = *state;

	return nftw(c->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Each test starts from no tables of its own. */
static int pg_setup(void **state)
{
	struct ctx *c = *state;
	struct srv_db *db = NULL;
	struct cr_err e;

	c->pg = true;
	snprintf(c->loc, sizeof(c->loc), "%s", getenv("CRUCIBLE_TEST_PG"));
	cr_err_init(&e);
	if (srv_db_open(c->loc, &db, &e) != CR_OK ||
	    srv_db_script(db, "SET client_min_messages = warning;"
			      "DROP TABLE IF EXISTS child, parent, items, jobs, t1, t2 CASCADE", &e) != CR_OK) {
		fprintf(stderr, "test_db: %s\n", e.msg);
		srv_db_close(db);
		return -1;
	}
	srv_db_close(db);
	return 0;
}

static int pg_teardown(void **state)
{
	(void)state;
	return 0;
}

/* ---- the same checks on both ---------------------------------------------- */

static void test_roundtrip(void **state)
{
	struct ctx *c = *state;
	struct srv_db *db = open_ok(c->loc);
	struct srv_rows r = {0};
	const char *name = "O'Brien \"the\" naïve — 日本語 ✓ $1 ?; --";
	char *big = malloc(100001);

	assert_int_equal(srv_db_kind(db), c->pg ? SRV_DB_PG : SRV_DB_SQLITE);
	assert_string_equal(srv_db_pk(db), c->pg ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY");
	has(srv_db_where(db), "store ");
	items_table(db);
	const char *p1[] = {name, NULL, "7"};
	ok(db, "INSERT INTO items (name, note, n) VALUES ($1, $2, $3) RETURNING id", 3, p1, &r);
	assert_int_equal(r.nrows, 1);
	assert_int_equal(r.ncols, 1);
	assert_string_equal(srv_rows_get(&r, 0, 0), "1");
	srv_rows_free(&r);
	assert_int_equal(r.nrows, 0);
	assert_null(r.cells);
	srv_rows_free(&r); /* a zeroed one: nothing */

	assert_non_null(big);
	memset(big, 'x', 100000);
	big[100000] = '\0';
	const char *p2[] = {big, "note", NULL};
	ok(db, "INSERT INTO items (name, note, n) VALUES ($1, $2, $3) RETURNING id, n", 3, p2, &r);
	assert_string_equal(srv_rows_get(&r, 0, 0), "2");
	assert_null(srv_rows_get(&r, 0, 1));
	srv_rows_free(&r);

	/* $2 given and unused: fine on both */
	const char *p3[] = {"1", "unused"};
	ok(db, "SELECT id, name, note, n FROM items WHERE id = $1", 2, p3, &r);
	assert_int_equal(r.nrows, 1);
	assert_int_equal(r.ncols, 4);
	assert_string_equal(srv_rows_get(&r, 0, 0), "1");
	assert_string_equal(srv_rows_get(&r, 0, 1), name);
	assert_null(srv_rows_get(&r, 0, 2));
	assert_string_equal(srv_rows_get(&r, 0, 3), "7");
	assert_null(srv_rows_get(&r, 1, 0));
	assert_null(srv_rows_get(&r, 0, 4));
	assert_null(srv_rows_get(&r, -1, 0));
	srv_rows_free(&r);

	const char *p4[] = {big};
	ok(db, "SELECT length(name), note FROM items WHERE name = $1", 1, p4, &r);
	assert_int_equal(r.nrows, 1);
	assert_string_equal(srv_rows_get(&r, 0, 0), "100000");
	assert_string_equal(srv_rows_get(&r, 0, 1), "note");
	srv_rows_free(&r);

	/* a NULL parameter compares as SQL NULL; no rows is rows, not NULL */
	const char *p5[] = {NULL};
	ok(db, "SELECT id FROM items WHERE note = $1", 1, p5, &r);
	assert_int_equal(r.nrows, 0);
	assert_int_equal(r.ncols, 1);
	srv_rows_free(&r);
	ok(db, "SELECT id FROM items WHERE note IS NULL ORDER BY id", 0, NULL, &r);
	assert_int_equal(r.nrows, 1);
	srv_rows_free(&r);

	/* a parameter used twice; rows NULL: the caller wants none */
	const char *p6[] = {"2"};
	ok(db, "UPDATE items SET n = $1 WHERE id = $1", 1, p6, NULL);
	assert_int_equal(count(db, "SELECT n FROM items WHERE id = 2"), 2);
	free(big);
	srv_db_close(db);
	srv_db_close(NULL);
}

static void test_constraints(void **state)
{
	struct ctx *c = *state;
	struct srv_db *db = open_ok(c->loc);
	struct cr_err e;
	char sql[512];

	items_table(db);
	snprintf(sql, sizeof(sql),
		 "CREATE TABLE parent (id %s);"
		 "CREATE TABLE child (id %s, parent BIGINT NOT NULL REFERENCES parent(id));",
		 srv_db_pk(db), srv_db_pk(db));
	script_ok(db, sql);
	const char *p[] = {"a", "5"};
	ok(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, p, NULL);
	fails(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, p, CR_EINPUT, &e);
	has(e.msg, srv_db_where(db));
	has(e.msg, "INSERT INTO items");
	assert_false(srv_db_retryable(db));
	const char *neg[] = {"b", "-1"};
	fails(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, neg, CR_EINPUT, &e);
	const char *nul[] = {NULL, "9"};
	fails(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, nul, CR_EINPUT, &e);
	const char *orphan[] = {"42"};
	fails(db, "INSERT INTO child (parent) VALUES ($1)", 1, orphan, CR_EINPUT, &e);
	ok(db, "INSERT INTO parent (id) VALUES (42)", 0, NULL, NULL);
	ok(db, "INSERT INTO child (parent) VALUES ($1)", 1, orphan, NULL);
	fails(db, "DELETE FROM parent", 0, NULL, CR_EINPUT, &e);
	assert_int_equal(count(db, "SELECT count(*) FROM items"), 1);
	srv_db_close(db);
}

static void test_bad_sql(void **state)
{
	struct ctx *c = *state;
	struct srv_db *db = open_ok(c->loc);
	struct cr_err e;

	fails(db, "SELEC 1", 0, NULL, CR_EIO, &e);
	has(e.msg, srv_db_where(db));
	has(e.msg, "\"SELEC 1\" failed: ");
	assert_false(srv_db_retryable(db));
	fails(db, "SELECT * FROM no_such_table", 0, NULL, CR_EIO, &e);
	has(e.msg, "no_such_table");
	/* $2 without a second parameter; two statements in one call */
	const char *p[] = {"1"};
	fails(db, "SELECT $1, $2", 1, p, CR_EIO, &e);
	has(e.msg, "$2");
	fails(db, "SELECT 1; SELECT 2", 0, NULL, CR_EIO, &e);
	ok(db, "SELECT 1;", 0, NULL, NULL);
	/* a long statement is named by its head */
	fails(db, "SELECT    nothing_here,\n\n   a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u "
		  "FROM nowhere", 0, NULL, CR_EIO, &e);
	has(e.msg, "\"SELECT nothing_here, a, b, c,");
	has(e.msg, "...\" failed");
	cr_err_init(&e);
	assert_int_equal(srv_db_script(db, "CREATE TABLE t1 (a INTEGER); CREATE TABLE t1 (a INTEGER)", &e),
			 CR_EIO);
	has(e.msg, srv_db_where(db));
	srv_db_close(db);
}

static void test_transactions(void **state)
{
	struct ctx *c = *state;
	struct srv_db *db = open_ok(c->loc);
	struct cr_err e;
	const char *a[] = {"a", "1"}, *b[] = {"b", "2"};

	items_table(db);
	cr_err_init(&e);
	assert_int_equal(srv_db_begin(db, &e), CR_OK);
	ok(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, a, NULL);
	assert_int_equal(count(db, "SELECT count(*) FROM items"), 1);
	srv_db_rollback(db);
	assert_int_equal(count(db, "SELECT count(*) FROM items"), 0);
	srv_db_rollback(db); /* none open: nothing */

	assert_int_equal(srv_db_begin(db, &e), CR_OK);
	ok(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, a, NULL);
	assert_int_equal(srv_db_commit(db, &e), CR_OK);
	assert_int_equal(count(db, "SELECT count(*) FROM items"), 1);

	/* a failed statement, then rollback: the transaction's rows are gone */
	assert_int_equal(srv_db_begin(db, &e), CR_OK);
	ok(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, b, NULL);
	fails(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, a, CR_EINPUT, &e);
	srv_db_rollback(db);
	assert_int_equal(count(db, "SELECT count(*) FROM items"), 1);

	/* one connection sees another's rows only once committed */
	struct srv_db *other = open_ok(c->loc);
	assert_int_equal(srv_db_begin(db, &e), CR_OK);
	ok(db, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, b, NULL);
	assert_int_equal(count(other, "SELECT count(*) FROM items"), 1);
	assert_int_equal(srv_db_commit(db, &e), CR_OK);
	assert_int_equal(count(other, "SELECT count(*) FROM items"), 2);
	srv_db_close(other);
	srv_db_close(db);
}

/* Another connection holds the write lock (SQLite) or the row (PostgreSQL):
 * a short wait gives up with CR_EIO and says "retry"; after the other
 * connection is done the same work goes through. */
static void test_busy_retryable(void **state)
{
	struct ctx *c = *state;
	struct srv_db *a = open_ok(c->loc), *b = open_ok(c->loc);
	struct cr_err e;
	const char *p[] = {"x", "1"};

	items_table(a);
	ok(a, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, p, NULL);
	cr_err_init(&e);
	assert_int_equal(srv_db_set_timeout(b, 200, &e), CR_OK);
	assert_int_equal(srv_db_begin(a, &e), CR_OK);
	ok(a, "UPDATE items SET n = 2 WHERE n = 1", 0, NULL, NULL);
	cr_err_init(&e);
	if (!c->pg) {
		assert_int_equal(srv_db_begin(b, &e), CR_EIO);
		has(e.msg, "busy for more than 200 ms");
	} else {
		assert_int_equal(srv_db_begin(b, &e), CR_OK);
		fails(b, "UPDATE items SET n = 3 WHERE name = 'x'", 0, NULL, CR_EIO, &e);
		has(e.msg, "55P03");
	}
	has(e.msg, srv_db_where(b));
	assert_true(srv_db_retryable(b));
	srv_db_rollback(b);
	assert_true(srv_db_retryable(b)); /* rollback keeps the answer */
	assert_int_equal(srv_db_commit(a, &e), CR_OK);
	assert_int_equal(srv_db_begin(b, &e), CR_OK);
	assert_false(srv_db_retryable(b));
	ok(b, "UPDATE items SET n = 3 WHERE name = 'x'", 0, NULL, NULL);
	assert_int_equal(srv_db_commit(b, &e), CR_OK);
	assert_int_equal(count(a, "SELECT n FROM items"), 3);
	srv_db_close(a);
	srv_db_close(b);
}

/* ---- the queue's guarantee: every job claimed exactly once ----------------- */

#define NJOBS 200
#define NCLAIMERS 4

struct claimer {
	const char *loc;
	const char *sql;
	char name[16];
	pthread_barrier_t *start;
	long ids[NJOBS];   /* the jobs this claimer got */
	int n, retries;
	char error[1100];  /* empty: none */
};

static void *claim_loop(void *arg)
{
	struct claimer *cl = arg;
	struct srv_db *db = NULL;
	struct cr_err e;
	const char *p[] = {cl->name};

	cr_err_init(&e);
	enum cr_status st = srv_db_open(cl->loc, &db, &e);
	pthread_barrier_wait(cl->start);
	while (st == CR_OK) {
		struct srv_rows r = {0};
		cr_err_init(&e);
		st = srv_db_begin(db, &e);
		if (st == CR_OK)
			st = srv_db_exec(db, cl->sql, 1, p, &r, &e);
		if (st == CR_OK)
			st = srv_db_commit(db, &e);
		if (st != CR_OK) {
			srv_db_rollback(db);
			srv_rows_free(&r);
			if (srv_db_retryable(db)) {
				cl->retries++;
				st = CR_OK;
				continue;
			}
			break;
		}
		if (r.nrows == 1 && cl->n < NJOBS) {
			cl->ids[cl->n++] = strtol(srv_rows_get(&r, 0, 0), NULL, 10);
		} else if (r.nrows == 0) {
			/* none free for us: done once none is queued at all (on
			 * PostgreSQL the others may hold the last ones locked) */
			struct srv_rows q = {0};
			st = srv_db_exec(db, "SELECT count(*) FROM jobs WHERE state = 'queued'", 0, NULL,
					 &q, &e);
			bool done = st == CR_OK && !strcmp(srv_rows_get(&q, 0, 0), "0");
			srv_rows_free(&q);
			if (done) {
				srv_rows_free(&r);
				break;
			}
		} else {
			snprintf(e.msg, sizeof(e.msg), "%d rows claimed at once", r.nrows);
			st = CR_EINTERNAL;
		}
		srv_rows_free(&r);
	}
	if (st != CR_OK)
		snprintf(cl->error, sizeof(cl->error), "%s: %s", cl->name, e.msg);
	srv_db_close(db);
	return NULL;
}

static void test_claim_once(void **state)
{
	struct ctx *c = *state;
	struct srv_db *db = open_ok(c->loc);
	struct cr_err e;
	char sql[512];
	static struct claimer cl[NCLAIMERS];
	pthread_t th[NCLAIMERS];
	pthread_barrier_t start;
	int claimed[NJOBS + 1] = {0};

	snprintf(sql, sizeof(sql),
		 "CREATE TABLE jobs (id %s, state TEXT NOT NULL DEFAULT 'queued', worker TEXT)",
		 srv_db_pk(db));
	script_ok(db, sql);
	cr_err_init(&e);
	assert_int_equal(srv_db_begin(db, &e), CR_OK);
	for (int i = 0; i < NJOBS; i++)
		ok(db, "INSERT INTO jobs (state) VALUES ('queued')", 0, NULL, NULL);
	assert_int_equal(srv_db_commit(db, &e), CR_OK);
	assert_int_equal(count(db, "SELECT min(id) FROM jobs"), 1);
	assert_int_equal(count(db, "SELECT max(id) FROM jobs"), NJOBS);

	snprintf(sql, sizeof(sql),
		 "UPDATE jobs SET state = 'running', worker = $1 WHERE id = (SELECT id FROM jobs"
		 " WHERE state = 'queued' ORDER BY id LIMIT 1%s) RETURNING id",
		 c->pg ? " FOR UPDATE SKIP LOCKED" : "");
	pthread_barrier_init(&start, NULL, NCLAIMERS);
	for (int t = 0; t < NCLAIMERS; t++) {
		memset(&cl[t], 0, sizeof(cl[t]));
		cl[t].loc = c->loc;
		cl[t].sql = sql;
		cl[t].start = &start;
		snprintf(cl[t].name, sizeof(cl[t].name), "w%d", t);
		assert_int_equal(pthread_create(&th[t], NULL, claim_loop, &cl[t]), 0);
	}
	for (int t = 0; t < NCLAIMERS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&start);

	int total = 0;
	for (int t = 0; t < NCLAIMERS; t++) {
		if (cl[t].error[0]) {
			print_error("%s\n", cl[t].error);
			fail();
		}
		for (int i = 0; i < cl[t].n; i++) {
			assert_in_range(cl[t].ids[i], 1, NJOBS);
			claimed[cl[t].ids[i]]++;
		}
		total += cl[t].n;
		print_message("  %s claimed %d jobs (%d retries)\n", cl[t].name, cl[t].n, cl[t].retries);
	}
	for (int id = 1; id <= NJOBS; id++)
		if (claimed[id] != 1) {
			print_error("job %d claimed %d times\n", id, claimed[id]);
			fail();
		}
	/* the rows say the same: each claimer's jobs are its own */
	for (int t = 0; t < NCLAIMERS; t++) {
		char q[128];
		snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE worker = '%s'", cl[t].name);
		assert_int_equal(count(db, q), cl[t].n);
	}
	assert_int_equal(total, NJOBS);
	assert_int_equal(count(db, "SELECT count(*) FROM jobs WHERE state = 'running'"), NJOBS);
	srv_db_close(db);
}

/* ---- SQLite only ---------------------------------------------------------- */

static void test_lite_file(void **state)
{
	struct ctx *c = *state;
	struct stat sb;
	struct srv_rows r = {0};
	mode_t old = umask(0); /* what the file gets is the store's doing, not the umask's */
	struct srv_db *db = open_ok(c->loc);

	umask(old);
	assert_int_equal(lstat(c->loc, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0600);
	ok(db, "PRAGMA journal_mode", 0, NULL, &r);
	assert_string_equal(srv_rows_get(&r, 0, 0), "wal");
	srv_rows_free(&r);
	assert_int_equal(count(db, "PRAGMA synchronous"), 2); /* FULL */
	assert_int_equal(count(db, "PRAGMA foreign_keys"), 1);
	items_table(db);
	char wal[PATH_MAX + 32];
	snprintf(wal, sizeof(wal), "%s-wal", c->loc);
	assert_int_equal(lstat(wal, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	srv_db_close(db);

	/* an existing store keeps its rows and its mode */
	db = open_ok(c->loc);
	assert_int_equal(count(db, "SELECT count(*) FROM items"), 0);
	assert_false(srv_db_lost(db));
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_db_reconnect(db, &e), CR_OK);
	srv_db_close(db);
	assert_int_equal(lstat(c->loc, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
}

static void test_lite_refused(void **state)
{
	struct ctx *c = *state;
	struct srv_db *db = NULL;
	struct cr_err e;
	char link[PATH_MAX + 32], real[PATH_MAX + 32], junk[PATH_MAX + 32];
	struct stat sb;

	/* a link, to a store or to nowhere, is refused and nothing is made */
	snprintf(real, sizeof(real), "%s/real.db", c->dir);
	snprintf(link, sizeof(link), "%s/link.db", c->dir);
	db = open_ok(real);
	srv_db_close(db);
	db = NULL;
	assert_int_equal(symlink(real, link), 0);
	cr_err_init(&e);
	assert_int_equal(srv_db_open(link, &db, &e), CR_EINPUT);
	assert_null(db);
	has(e.msg, link);
	has(e.msg, "symbolic link");
	assert_int_equal(unlink(link), 0);
	snprintf(junk, sizeof(junk), "%s/absent.db", c->dir);
	assert_int_equal(symlink(junk, link), 0);
	cr_err_init(&e);
	assert_int_equal(srv_db_open(link, &db, &e), CR_EINPUT);
	assert_int_equal(lstat(junk, &sb), -1);

	/* a folder; a file that is not a database; a folder that is not there */
	cr_err_init(&e);
	assert_int_equal(srv_db_open(c->dir, &db, &e), CR_EINPUT);
	has(e.msg, "directory");
	FILE *f = fopen(junk, "w");
	assert_non_null(f);
	for (int i = 0; i < 200; i++)
		fputs("this is not an SQLite database at all. ", f);
	fclose(f);
	cr_err_init(&e);
	assert_int_equal(srv_db_open(junk, &db, &e), CR_EINPUT);
	has(e.msg, junk);
	snprintf(junk, sizeof(junk), "%s/no/such/folder.db", c->dir);
	cr_err_init(&e);
	assert_int_equal(srv_db_open(junk, &db, &e), CR_EIO);
	has(e.msg, "cannot create");
	cr_err_init(&e);
	assert_int_equal(srv_db_open("", &db, &e), CR_EUSAGE);
	assert_null(db);
}

/* ---- PostgreSQL only ------------------------------------------------------ */

/* No server needed: nothing listens on port 1. */
static void test_pg_password_hidden(void **state)
{
	(void)state;
	struct srv_db *db = NULL;
	struct cr_err e;

	assert_true(srv_db_is_pg_url("postgresql://h/db"));
	assert_true(srv_db_is_pg_url("postgres://h/db"));
	assert_false(srv_db_is_pg_url("store.db"));
	assert_false(srv_db_is_pg_url("postgresql:/h"));
	assert_false(srv_db_is_pg_url(NULL));
	cr_err_init(&e);
	assert_int_equal(srv_db_open("postgresql://alice:secretpw@127.0.0.1:1/crucible"
				     "?sslmode=disable&password=otherpw&connect_timeout=5",
				     &db, &e),
			 CR_EIO);
	assert_null(db);
	has(e.msg, "store postgresql://alice@127.0.0.1:1/crucible?sslmode=disable&connect_timeout=5");
	has(e.msg, "cannot connect");
	hasnt(e.msg, "secretpw");
	hasnt(e.msg, "otherpw");
	cr_err_init(&e);
	assert_int_equal(srv_db_open("postgres://bob:s3cr%40t@127.0.0.1:1/x", &db, &e), CR_EIO);
	has(e.msg, "store postgres://bob@127.0.0.1:1/x");
	hasnt(e.msg, "s3cr");
	cr_err_init(&e);
	assert_int_equal(srv_db_open("postgresql://carol:pw@[::1:1/x", &db, &e), CR_EINPUT);
	hasnt(e.msg, ":pw");
}

/* A password in the URL (trust auth ignores it) never shows in a message. */
static void test_pg_password_live(void **state)
{
	struct ctx *c = *state;
	char url[PATH_MAX + 64];
	const char *at = strstr(c->loc, "://") + 3;
	const char *user_end = at + strcspn(at, "@:/");
	struct cr_err e;

	if (*user_end != '@')
		skip(); /* no user in the URL to give a password to */
	snprintf(url, sizeof(url), "%.*s:secretpw%s", (int)(user_end - c->loc), c->loc, user_end);
	struct srv_db *db = open_ok(url);
	hasnt(srv_db_where(db), "secretpw");
	fails(db, "SELECT * FROM no_such_table", 0, NULL, CR_EIO, &e);
	has(e.msg, srv_db_where(db));
	hasnt(e.msg, "secretpw");
	srv_db_close(db);
}

/* Two repeatable-read transactions update one row: the later one fails
 * with 40001, which is retryable. */
static void test_pg_serialization(void **state)
{
	struct ctx *c = *state;
	struct srv_db *a = open_ok(c->loc), *b = open_ok(c->loc);
	struct cr_err e;
	const char *p[] = {"x", "1"};

	items_table(a);
	ok(a, "INSERT INTO items (name, n) VALUES ($1, $2)", 2, p, NULL);
	cr_err_init(&e);
	assert_int_equal(srv_db_begin(a, &e), CR_OK);
	ok(a, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", 0, NULL, NULL);
	assert_int_equal(count(a, "SELECT n FROM items"), 1);
	ok(b, "UPDATE items SET n = 2", 0, NULL, NULL);
	fails(a, "UPDATE items SET n = n + 10", 0, NULL, CR_EIO, &e);
	has(e.msg, "40001");
	assert_true(srv_db_retryable(a));
	/* commit after a failed statement is a failure, and ends the transaction */
	cr_err_init(&e);
	assert_int_equal(srv_db_commit(a, &e), CR_EIO);
	has(e.msg, "rolled back");
	assert_int_equal(count(a, "SELECT n FROM items"), 2);
	srv_db_close(a);
	srv_db_close(b);
}

/* The server ends a connection: calls fail with CR_EIO, srv_db_lost says
 * so, srv_db_reconnect recovers it with its settings. */
static void test_pg_reconnect(void **state)
{
	struct ctx *c = *state;
	struct srv_db *a = open_ok(c->loc), *b = open_ok(c->loc);
	struct srv_rows r = {0};
	struct cr_err e;

	cr_err_init(&e);
	assert_int_equal(srv_db_set_timeout(b, 1500, &e), CR_OK);
	ok(b, "SELECT pg_backend_pid()", 0, NULL, &r);
	const char *pid[] = {srv_rows_get(&r, 0, 0)};
	struct srv_rows t = {0};
	ok(a, "SELECT pg_terminate_backend($1, 10000)", 1, pid, &t);
	assert_string_equal(srv_rows_get(&t, 0, 0), "t");
	srv_rows_free(&t);
	srv_rows_free(&r);
	assert_false(srv_db_lost(b));
	fails(b, "SELECT 1", 0, NULL, CR_EIO, &e);
	has(e.msg, srv_db_where(b));
	assert_false(srv_db_retryable(b));
	assert_true(srv_db_lost(b));
	fails(b, "SELECT 1", 0, NULL, CR_EIO, &e);
	has(e.msg, "connection is lost");
	cr_err_init(&e);
	assert_int_equal(srv_db_begin(b, &e), CR_EIO);
	cr_err_init(&e);
	if (srv_db_reconnect(b, &e) != CR_OK) {
		print_error("%s\n", e.msg);
		fail();
	}
	assert_false(srv_db_lost(b));
	ok(b, "SHOW client_encoding", 0, NULL, &r);
	assert_string_equal(srv_rows_get(&r, 0, 0), "UTF8");
	srv_rows_free(&r);
	ok(b, "SHOW lock_timeout", 0, NULL, &r);
	assert_string_equal(srv_rows_get(&r, 0, 0), "1500ms");
	srv_rows_free(&r);
	srv_db_close(a);
	srv_db_close(b);
}

/* ---- main ------------------------------------------------------------------- */

#define ON(f, setup, teardown, c) cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, c)

int main(void)
{
	static struct ctx lite, pg;
	const struct CMUnitTest sqlite_tests[] = {
		ON(test_roundtrip, lite_setup, lite_teardown, &lite),
		ON(test_constraints, lite_setup, lite_teardown, &lite),
		ON(test_bad_sql, lite_setup, lite_teardown, &lite),
		ON(test_transactions, lite_setup, lite_teardown, &lite),
		ON(test_busy_retryable, lite_setup, lite_teardown, &lite),
		ON(test_claim_once, lite_setup, lite_teardown, &lite),
		ON(test_lite_file, lite_setup, lite_teardown, &lite),
		ON(test_lite_refused, lite_setup, lite_teardown, &lite),
		cmocka_unit_test(test_pg_password_hidden),
	};
	const struct CMUnitTest pg_tests[] = {
		ON(test_roundtrip, pg_setup, pg_teardown, &pg),
		ON(test_constraints, pg_setup, pg_teardown, &pg),
		ON(test_bad_sql, pg_setup, pg_teardown, &pg),
		ON(test_transactions, pg_setup, pg_teardown, &pg),
		ON(test_busy_retryable, pg_setup, pg_teardown, &pg),
		ON(test_claim_once, pg_setup, pg_teardown, &pg),
		ON(test_pg_password_live, pg_setup, pg_teardown, &pg),
		ON(test_pg_serialization, pg_setup, pg_teardown, &pg),
		ON(test_pg_reconnect, pg_setup, pg_teardown, &pg),
	};
	int failed = cmocka_run_group_tests_name("sqlite", sqlite_tests, NULL, NULL);
	const char *url = getenv("CRUCIBLE_TEST_PG");

	if (url && *url) {
		if (!srv_db_is_pg_url(url)) {
			fprintf(stderr, "test_db: CRUCIBLE_TEST_PG is not a postgresql:// URL\n");
			return 1;
		}
		failed += cmocka_run_group_tests_name("postgresql", pg_tests, NULL, NULL);
	} else {
		printf("test_db: CRUCIBLE_TEST_PG not set: SQLite only (tests/serve/db_pg.sh runs both)\n");
	}
	return failed;
}
