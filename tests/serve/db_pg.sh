#!/bin/bash
# db_pg.sh — test_db against a real PostgreSQL server: a throw-away one is
# started (pg_lib.sh), test_db runs its SQLite checks and then the same ones
# and PostgreSQL's own with CRUCIBLE_TEST_PG set to the server's URL, and
# the server is stopped and its folder removed however the test ends.
# $1: the crucible executable, from which the build folder is found.
set -u
if [ $# -lt 1 ]; then
	echo "usage: db_pg.sh BUILDDIR/harness/crucible" >&2
	exit 2
fi
builddir=$(cd "$(dirname "$1")/.." && pwd) || exit 1
test_db=$builddir/tests/serve/test_db
if [ ! -x "$test_db" ]; then
	echo "db_pg.sh: $test_db is not built" >&2
	exit 1
fi
# shellcheck source=pg_lib.sh
. "$(dirname "$0")/pg_lib.sh"

dir=$(pg_tmpdir) || exit 1
trap 'pg_stop "$dir"' EXIT
trap 'exit 1' INT TERM HUP
pg_start "$dir" || exit 1
echo "PostgreSQL ($PG_BIN) on $PG_URL"
rc=0
CRUCIBLE_TEST_PG=$PG_URL "$test_db" || rc=1
# the service's tables and queue (test_store) in a database of their own:
# test_db leaves tables of the same names in the default one
psql -X -q -d "$PG_URL" -c "CREATE DATABASE store_test" || rc=1
CRUCIBLE_TEST_PG=${PG_URL%/*}/store_test "$builddir/tests/serve/test_store" || rc=1
exit $rc
