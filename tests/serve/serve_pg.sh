#!/usr/bin/env bash
# crucible serve on a real PostgreSQL server (started here, thrown away at
# the end): the API server with no worker of its own, two `crucible serve
# worker` processes claiming jobs (FOR UPDATE SKIP LOCKED), one killed with
# -9 in the middle of a job; every accepted submission is scored exactly
# once, the dead worker's job goes back to the queue, its check dies with
# it, the ranking holds the honest submissions only, and the board's
# secret is in no byte served or logged.
#   serve_pg.sh CRUCIBLE
set -uo pipefail
C=$1
here=$(cd "$(dirname "$0")" && pwd)
src=${CRUCIBLE_SRC:-$(cd "$here/../.." && pwd)}
export CRUCIBLE_DATADIR=${CRUCIBLE_DATADIR:-$src/data}
# shellcheck source=pg_lib.sh
. "$here/pg_lib.sh"
for t in curl jq psql; do
	command -v $t >/dev/null || { echo "serve_pg: $t is missing (scripts/setup.sh installs it)"; exit 1; }
done
pgdir=$(pg_tmpdir) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crserve-pg.XXXXXX")
pids=()
nspid=""
cleanup() {
	for p in "${pids[@]}" $nspid; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	pg_stop "$pgdir"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
pg_start "$pgdir" || exit $?
db=$PG_URL
fails=0
n_checks=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
sql() { psql -X -q -t -A -d "$db" -c "$1"; }

"$C" serve --db "$db" board add relu --tasks smoke/relu --no-timing --quick >/dev/null || bad "board add"
alice=$("$C" serve --db "$db" user add alice 2>/dev/null) || bad "user add alice"
bob=$("$C" serve --db "$db" user add bob 2>/dev/null) || bad "user add bob"
secret=$(sql "SELECT secret FROM boards WHERE name = 'relu'")
[ -n "$secret" ] || bad "no board secret in the store"
rc=0; "$C" serve --db "$db" --listen 127.0.0.1:0 2>"$tmp/e" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--key" "$tmp/e" || bad "a PostgreSQL server without --key: exit $rc: $(cat "$tmp/e")"

"$C" serve --db "$db" --key "$tmp/key" --listen 127.0.0.1:0 --ready-file "$tmp/ready" --workers 0 \
	--lease 3 --log "$tmp/serve.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
[ -s "$tmp/ready" ] || { echo "FAIL: the server did not start"; cat "$tmp/serve.log"; exit 1; }
url=$(sed 's|/$||' "$tmp/ready")
"$C" serve worker --db "$db" --workers 1 --lease 3 2>"$tmp/w1.log" &
w1=$!
pids+=($w1)
"$C" serve worker --db "$db" --workers 1 --lease 3 2>"$tmp/w2.log" &
pids+=($!)
# a process of the same host in another PID namespace (a container with the
# host's name): the pids of the workers above mean nothing there, so it must
# not take their live jobs back as if they were gone
if unshare -pf --mount-proc true 2>/dev/null; then
	# --kill-child: the worker (pid 1 there) dies with unshare, not orphaned
	unshare -pf --mount-proc --kill-child "$C" serve worker --db "$db" --workers 0 --lease 30 \
		2>"$tmp/wns.log" &
	nspid=$!
else
	echo "serve_pg: unshare -p is not allowed here: the PID-namespace check is not run"
fi

submit() { # submit TOKEN FILE: one submission by raw HTTP
	jq -n --rawfile s "$2" --arg f "$(basename "$2")" '{source: $s, file_name: $f}' |
		curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $1" \
			-H 'Content-Type: application/json' --data-binary @- "$url/v1/boards/relu/submissions"
}
codes=""
for i in 1 2 3; do codes+=$(submit "$alice" "$src/data/candidates/smoke/relu_fast.c"); done
for i in 1 2 3; do codes+=$(submit "$bob" "$src/data/candidates/smoke/relu_plain.c"); done
codes+=$(submit "$bob" "$src/data/candidates/exploits/constant_output.c")
codes+=$(submit "$bob" "$src/data/candidates/exploits/fp16_emulation.c")
[ "$codes" = "202202202202202202202202" ] || bad "submissions not all accepted: $codes"
accepted=$(sql "SELECT count(*) FROM submissions")

# kill worker 1 while it scores a job
for _ in $(seq 200); do
	[ "$(sql "SELECT count(*) FROM jobs WHERE state = 'running' AND worker LIKE '%:$w1:%'")" -gt 0 ] && break
	sleep 0.05
done
held=$(sql "SELECT id FROM jobs WHERE state = 'running' AND worker LIKE '%:$w1:%'")
[ -n "$held" ] || bad "worker 1 never held a job: the kill proves nothing"
kill -9 "$w1"
sleep 1
for _ in $(seq 600); do
	[ "$(sql "SELECT count(*) FROM jobs WHERE state <> 'done'")" = 0 ] && break
	sleep 0.5
done
[ "$(sql "SELECT count(*) FROM jobs WHERE state <> 'done'")" = 0 ] || bad "jobs left: $(sql "SELECT id, state, worker FROM jobs WHERE state <> 'done'")"
[ "$(sql "SELECT count(*) FROM submissions")" = "$accepted" ] || bad "submissions lost or added"
[ "$(sql "SELECT count(*) FROM submissions WHERE state <> 'scored'")" = 0 ] ||
	bad "submissions not scored: $(sql "SELECT id, state FROM submissions WHERE state <> 'scored'")"
for j in $held; do
	w=$(sql "SELECT worker FROM jobs WHERE id = $j")
	[[ $w == *":$w1:"* ]] && bad "job $j, held by the killed worker, was recorded by it"
done
# each job recorded exactly once over the surviving worker's log and the killed one's
recorded() { cat "$tmp"/w1.log "$tmp"/w2.log | grep -v "harness failure" | grep -o "job [0-9]* ([a-z]*, [^)]*): [a-z_]*" | awk '{print $2}'; }
dups=$(recorded | sort | uniq -d)
[ -z "$dups" ] || bad "jobs recorded twice: $dups"
# (a secret run skipped because its public run failed is recorded by nobody)
scoredjobs=$(sql "SELECT count(*) FROM jobs WHERE status <> 'skipped'")
[ "$(recorded | sort -u | wc -l)" = "$scoredjobs" ] ||
	bad "$(recorded | sort -u | wc -l) jobs recorded, $scoredjobs scored in the store"
grep -q "took back" "$tmp/w2.log" "$tmp/serve.log" || bad "nobody said the killed worker's job was taken back"
[ -f "$tmp/wns.log" ] && grep -q "took back" "$tmp/wns.log" &&
	bad "a worker in another PID namespace took jobs back: $(grep "took back" "$tmp/wns.log" | head -3)"
if [ -n "$nspid" ]; then
	kill -9 "$nspid" 2>/dev/null
	wait "$nspid" 2>/dev/null
	nspid=""
fi

# the ranking: honest files only
curl -s "$url/v1/boards/relu" >"$tmp/board.json"
users=$(jq -r '.task_rankings[0].ranking[].user' "$tmp/board.json" | sort | tr '\n' ' ')
[ "$users" = "alice bob " ] || bad "ranked users: '$users'"
jq -e '[.submissions[] | select(.ranked) | .file_name] | all(. == "relu_fast.c" or . == "relu_plain.c")' "$tmp/board.json" >/dev/null ||
	bad "a cheat is ranked"
jq -e '[.submissions[] | select(.file_name == "constant_output.c" or .file_name == "fp16_emulation.c") | .ranked] | all(. == false) and length == 2' "$tmp/board.json" >/dev/null ||
	bad "the cheats' state: $(jq -c '[.submissions[] | {file_name, ranked, why_not_ranked}]' "$tmp/board.json")"
id=$(sql "SELECT min(id) FROM submissions")
curl -s -H "Authorization: Bearer $alice" "$url/v1/submissions/$id" >"$tmp/sub.json"
"$C" serve --db "$db" --key "$tmp/key" verify "$tmp/sub.json" >/dev/null || bad "verify of a served result"
curl -s "$url/" >"$tmp/page.html"
for f in "$tmp"/*.log "$tmp"/*.json "$tmp"/page.html; do
	grep -qF "$secret" "$f" && bad "the board's secret appears in $(basename "$f")"
done
# SIGTERM of a worker in the middle of a job: it stops claiming but keeps
# beating until the job is recorded, so a process with a short lease (w4,
# the only other one left) does not take the job back
for p in "${pids[@]:1}"; do kill -TERM "$p" 2>/dev/null; done
wait "${pids[@]:1}" 2>/dev/null
pids=("${pids[0]}")
"$C" serve worker --db "$db" --workers 0 --lease 1 2>"$tmp/w4.log" &
pids+=($!)
"$C" serve worker --db "$db" --workers 1 --lease 1 2>"$tmp/w3.log" &
w3=$!
pids+=($w3)
codes=$(submit "$alice" "$src/data/candidates/smoke/relu_plain.c")
for _ in $(seq 200); do
	[ "$(sql "SELECT count(*) FROM jobs WHERE state = 'running' AND worker LIKE '%:$w3:%'")" -gt 0 ] && break
	sleep 0.05
done
job=$(sql "SELECT id FROM jobs WHERE state = 'running' AND worker LIKE '%:$w3:%'")
kill -TERM "$w3"
rc=0; wait "$w3" || rc=$?
[ "$rc" = 0 ] || bad "a worker stopped by SIGTERM exited $rc"
[ -n "$job" ] && grep -q "job $job (" "$tmp/w3.log" || bad "the job held at SIGTERM ($job) was not recorded by its worker: $(cat "$tmp/w3.log")"
grep -q "taken back" "$tmp/w3.log" && bad "the job held at SIGTERM was taken back: its heartbeat stopped first"
n_checks=$((n_checks + 15))
echo "serve_pg: $((n_checks - fails)) of $n_checks checks passed"
[ "$fails" = 0 ]
