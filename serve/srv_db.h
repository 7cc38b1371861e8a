/* srv_db.h — the store's connection (srv_db.c): one thin layer over SQLite
 * (a file, WAL, the default) and PostgreSQL (libpq, when the location is a
 * postgresql:// or postgres:// URL). SQL is written once for both: the
 * parameters are $1..$n and are passed as text (NULL: SQL NULL), the
 * results come back as text. A connection belongs to one thread. */
#ifndef SRV_DB_H
#define SRV_DB_H

#include <stdbool.h>
#include "common/cr_status.h"

struct srv_db;

enum srv_db_kind { SRV_DB_SQLITE, SRV_DB_PG };

/* A query's rows, as text: cell(r, c) = cells[r * ncols + c], NULL for SQL
 * NULL. */
struct srv_rows {
	int nrows, ncols;
	char **cells;
};
const char *srv_rows_get(const struct srv_rows *r, int row, int col);
void srv_rows_free(struct srv_rows *r);  /* zeroes r; a zeroed r is a no-op */

/* Opens the store. SQLite: the file is created mode 0600 when missing,
 * journal_mode=WAL, synchronous=FULL, foreign_keys=ON, busy_timeout 30 s.
 * PostgreSQL: PQconnectdb(url), client_encoding UTF8. The message names
 * the location (never a password in it). */
enum cr_status srv_db_open(const char *location, struct srv_db **out, struct cr_err *err);
void srv_db_close(struct srv_db *db);  /* NULL: no-op */
enum srv_db_kind srv_db_kind(const struct srv_db *db);
/* true when location names PostgreSQL */
bool srv_db_is_pg_url(const char *location);

/* One statement; rows NULL when the caller wants none. Errors:
 * CR_EINPUT for a constraint violated (unique, foreign key, check),
 * CR_EIO for everything else (connection lost, busy past the timeout),
 * the message says which statement failed and the database's words. */
enum cr_status srv_db_exec(struct srv_db *db, const char *sql, int nparams,
			   const char *const *params, struct srv_rows *rows, struct cr_err *err);
/* Several statements without parameters (the schema). */
enum cr_status srv_db_script(struct srv_db *db, const char *sql, struct cr_err *err);

/* Transactions. SQLite: BEGIN IMMEDIATE (the write lock up front, so two
 * claimers never both read the same queued job); PostgreSQL: BEGIN. */
enum cr_status srv_db_begin(struct srv_db *db, struct cr_err *err);
enum cr_status srv_db_commit(struct srv_db *db, struct cr_err *err);
void srv_db_rollback(struct srv_db *db);

/* Added with srv_db.c (helper H2). */
/* The location as messages name it: "store FILE" or "store URL" with the
 * URL's password left out. Owned by db. */
const char *srv_db_where(const struct srv_db *db);
/* The column type of a table's integer key, for the schema's writer:
 * "INTEGER PRIMARY KEY" (SQLite) or "BIGSERIAL PRIMARY KEY" (PostgreSQL). */
const char *srv_db_pk(const struct srv_db *db);
/* Whether the last failed call (exec, script, begin, commit) failed only
 * because of another connection: SQLite busy past the timeout, PostgreSQL
 * serialization failure (40001), deadlock (40P01) or lock timeout (55P03).
 * The caller rolls back and runs the whole transaction again. */
bool srv_db_retryable(const struct srv_db *db);
/* PostgreSQL: the connection is lost (every call fails with CR_EIO until
 * srv_db_reconnect). SQLite: always false. */
bool srv_db_lost(const struct srv_db *db);
/* PostgreSQL: a new connection with the same parameters (PQreset), set up
 * as srv_db_open sets one up; an open transaction is gone. SQLite: CR_OK. */
enum cr_status srv_db_reconnect(struct srv_db *db, struct cr_err *err);
/* How long a statement waits for another connection's lock before failing
 * (CR_EIO, retryable), in ms: SQLite's busy timeout (30 s by default),
 * PostgreSQL's lock_timeout (none by default; kept across reconnects).
 * For tests and for callers that would rather retry than wait. */
enum cr_status srv_db_set_timeout(struct srv_db *db, int ms, struct cr_err *err);
/* srv_db_commit, when it fails, has rolled the transaction back (on
 * PostgreSQL, COMMIT after a failed statement answers ROLLBACK: that is a
 * failure too). srv_db_exec refuses more than one statement on both, and on
 * SQLite a $k beyond nparams (PostgreSQL refuses it too); a parameter the
 * SQL does not use is fine on both. */

#endif
