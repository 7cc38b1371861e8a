# tests/serve/pg_lib.sh — a throw-away PostgreSQL server for a test
# (sourced): Debian's server binaries (/usr/lib/postgresql/VERSION/bin), a
# fresh data folder, trust authentication on a unix socket inside that
# folder and on 127.0.0.1 at a free port, nothing else. Root cannot run
# PostgreSQL, so as root the server runs as the `postgres` user (the
# package makes it) in a folder handed to it.
#
#   dir=$(pg_tmpdir) || exit 1      # a new folder, ${TMPDIR:-/tmp}/crucible-pg.XXXXXX
#   trap 'pg_stop "$dir"' EXIT      # stops the server however the test ends
#   trap 'exit 1' INT TERM HUP
#   pg_start "$dir" || exit 1       # exports PG_URL, PG_PORT, PG_BIN
#   ...
#
# pg_start exits 77 (skip) when no server binaries are installed; CI installs
# them (scripts/setup.sh), so there it always runs. Servers of earlier runs
# that were killed before their trap ran are stopped and removed by the next
# pg_tmpdir (their folder names a shell that is gone).

# The newest installed server's bin folder, or nothing.
pg_bindir() {
	local d best=
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && best=$d
	done
	[ -n "$best" ] && printf '%s\n' "$best" | sort -V | tail -n 1
}

# CMD... as the server's user: `postgres` when we are root, else ourselves.
pg_as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# Stops and removes the servers of earlier runs whose shell is gone.
pg_sweep() {
	local base=$1 d owner
	for d in "$base"/crucible-pg.*; do
		[ -d "$d" ] && [ -f "$d/owner" ] || continue
		owner=$(cat "$d/owner" 2>/dev/null)
		case $owner in '' | *[!0-9]*) continue ;; esac
		kill -0 "$owner" 2>/dev/null && continue
		echo "pg_lib: removing a server left by an earlier run ($d)" >&2
		pg_stop "$d"
	done
}

# Prints a new folder for pg_start, owned by the server's user. The folder
# goes under ${TMPDIR:-/tmp}, or /tmp when the server's user cannot reach
# TMPDIR.
pg_tmpdir() {
	local base=${TMPDIR:-/tmp} d
	if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$base" 2>/dev/null; then
		base=/tmp
	fi
	pg_sweep "$base"
	d=$(mktemp -d "$base/crucible-pg.XXXXXX") || return 1
	echo "$$" >"$d/owner"
	printf '%s\n' "$d"
}

# pg_start DIR: initdb into DIR/data, start the server, wait until it
# answers; exports PG_URL (postgresql://postgres@127.0.0.1:PORT/postgres),
# PG_PORT and PG_BIN. Returns 1 with the reason (and the server's log) when
# it cannot; exits 77 when PostgreSQL is not installed.
pg_start() {
	local dir=$1 bin port deadline sock started
	bin=$(pg_bindir)
	if [ -z "$bin" ]; then
		echo "SKIP: no PostgreSQL server installed (/usr/lib/postgresql/*/bin/initdb; Debian's postgresql package)"
		exit 77
	fi
	if [ "$(id -u)" = 0 ]; then
		if ! getent passwd postgres >/dev/null; then
			echo "pg_start: running as root and there is no postgres user to run the server as" >&2
			return 1
		fi
		chown postgres: "$dir" "$dir/owner" || return 1
	fi
	chmod 700 "$dir"
	# initdb and the server complain when they cannot enter the current folder
	if ! (cd "$dir" && pg_as "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale \
		--no-sync >"$dir/initdb.log" 2>&1); then
		echo "pg_start: initdb failed:" >&2
		cat "$dir/initdb.log" >&2
		return 1
	fi
	cat >"$dir/data/pg_hba.conf" <<-EOF
		local all all trust
		host all all 127.0.0.1/32 trust
	EOF
	# a unix socket path is at most 107 bytes: without one when DIR is too long
	sock=$dir
	[ ${#dir} -gt 90 ] && sock=
	started=
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		# something listens there already (a left-over server, another test)
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
		# initdb made both files, so they stay the server user's
		cat >"$dir/data/postgresql.auto.conf" <<-EOF
			listen_addresses = '127.0.0.1'
			port = $port
			unix_socket_directories = '$sock'
			max_connections = 40
			fsync = off
			synchronous_commit = off
			full_page_writes = off
			logging_collector = off
		EOF
		rm -f "$dir/server.log"
		if (cd "$dir" && pg_as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
			>"$dir/pg_ctl.log" 2>&1); then
			started=1
			break
		fi
		# the port was taken between the look and the start: another one;
		# anything else is the answer
		grep -q "could not bind\|Address already in use" "$dir/server.log" 2>/dev/null || break
	done
	deadline=$((SECONDS + 30))
	while [ -n "$started" ] && ! "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 2; do
		if [ $SECONDS -ge $deadline ]; then
			started=
			break
		fi
		sleep 0.2
	done
	if [ -z "$started" ]; then
		echo "pg_start: the server did not start in $dir:" >&2
		cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null
		return 1
	fi
	export PG_BIN=$bin PG_PORT=$port
	export PG_URL="postgresql://postgres@127.0.0.1:$port/postgres"
}

# pg_stop DIR: stops DIR's server at once (its data is thrown away) and
# removes DIR. Nothing there: nothing to do. Safe to call twice.
pg_stop() {
	local dir=$1 bin pid
	[ -n "$dir" ] && [ -d "$dir" ] || return 0
	if [ -f "$dir/data/postmaster.pid" ]; then
		bin=$(pg_bindir)
		if [ -n "$bin" ]; then
			(cd "$dir" && pg_as "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop) \
				>/dev/null 2>&1
		fi
		# pg_ctl could not: the postmaster by its pid, if it is still ours
		pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null)
		if [ -n "$pid" ] && [ -f "$dir/data/postmaster.pid" ] &&
			grep -qaF "$dir/data" "/proc/$pid/cmdline" 2>/dev/null; then
			kill -9 "$pid" 2>/dev/null
		fi
	fi
	rm -rf "$dir"
}
