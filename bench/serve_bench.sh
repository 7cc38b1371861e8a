#!/usr/bin/env bash
# crucible serve's figures (issue 33; a benchmark, never a test):
#  1. the service's overhead per submission against `crucible check` of the
#     same file: interleaved pairs (check twice | one submission, whose two
#     runs are two checks on the server's one worker), the median ratio;
#  2. rewards per second for a 16-completion group (POST /v1/reward);
#  3. submissions scored per minute on PostgreSQL with 1 and 2 `serve
#     worker` processes (12 submissions queued at once, each run alone).
# Untimed boards (--no-timing --quick), so the figures are the service's and
# the verifier's, not timing's budget. Prints the load average with each.
#   serve_bench.sh CRUCIBLE [PAIRS]
set -uo pipefail
C=$1
pairs=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
export CRUCIBLE_DATADIR=${CRUCIBLE_DATADIR:-$src/data}
f=$src/data/candidates/smoke/relu_fast.c
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crserve-bench.XXXXXX")
chmod 755 "$tmp"
pids=()
pgdir=""
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$pgdir" ] && pg_stop "$pgdir"
	rm -rf "$tmp"
}
trap cleanup EXIT
now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

serve() { # serve DB LOG WORKERS: a server on a free port, $url set
	rm -f "$tmp/ready"
	"$C" serve --db "$1" --listen 127.0.0.1:0 --ready-file "$tmp/ready" --workers "$3" --log "$tmp/$2" ${4:+--key "$4"} &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
	url=$(sed 's|/$||' "$tmp/ready")
}

# ---- 1. overhead per submission ----
db=$tmp/b.db
"$C" serve --db "$db" board add relu --tasks smoke/relu --no-timing --quick >/dev/null
tok=$("$C" serve --db "$db" user add bench --rate 0 --quota 1000 2>/dev/null)
serve "$db" serve1.log 1
ratios=()
ta=()
tb=()
for i in $(seq "$pairs"); do
	t0=$(now)
	"$C" check "$f" --no-timing --quick --json >/dev/null 2>&1
	"$C" check "$f" --no-timing --quick --json >/dev/null 2>&1
	t1=$(now)
	CRUCIBLE_TOKEN=$tok "$C" submit "$f" --server "$url" --board relu >/dev/null 2>&1
	t2=$(now)
	a=$(echo "$t1 - $t0" | bc -l)
	b=$(echo "$t2 - $t1" | bc -l)
	ta+=("$a")
	tb+=("$b")
	ratios+=("$(echo "$b / $a" | bc -l)")
done
ma=$(printf '%s\n' "${ta[@]}" | median)
mb=$(printf '%s\n' "${tb[@]}" | median)
mr=$(printf '%s\n' "${ratios[@]}" | median)
printf 'serve overhead: %d interleaved pairs; two checks %.2f s, one submission (its two runs) %.2f s; ratio %.3f (median of pairs; min %.3f, max %.3f); per submission +%.2f s; load %s\n' \
	"$pairs" "$ma" "$mb" "$mr" "$(printf '%s\n' "${ratios[@]}" | sort -g | head -1)" \
	"$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)" "$(echo "$mb - $ma" | bc -l)" "$(load)"
kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; pids=()

# ---- 2. rewards per second, a 16-completion group ----
serve "$db" serve2.log 2
fence='```'
jq -n --rawfile good "$f" --arg fe "$fence" \
	'{task: "smoke/relu", timing: false, completions: [range(16) | "Sure:\n\($fe)c\n\($good)\n\($fe)\n"]}' >"$tmp/g.json"
for timing in false true; do
	jq ".timing = $timing" "$tmp/g.json" >"$tmp/g2.json"
	t0=$(now)
	curl -s -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
		--data-binary "@$tmp/g2.json" "$url/v1/reward" >"$tmp/r.json"
	t1=$(now)
	n=$(jq '[.results[] | select(.status == "ok")] | length' "$tmp/r.json")
	printf 'rewards: 16 completions (timing %s) scored in %.1f s by 2 workers: %.2f rewards/s (%s ok); load %s\n' \
		"$timing" "$(echo "$t1 - $t0" | bc -l)" "$(echo "16 / ($t1 - $t0)" | bc -l)" "$n" "$(load)"
done
kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; pids=()

# ---- 3. PostgreSQL with 1 and 2 workers ----
# shellcheck source=../tests/serve/pg_lib.sh
. "$src/tests/serve/pg_lib.sh"
pgdir=$(pg_tmpdir) || exit 1
pg_start "$pgdir" || { echo "serve_bench: no PostgreSQL server here: figure 3 not measured"; exit 0; }
"$C" serve --db "$PG_URL" board add relu --tasks smoke/relu --no-timing --quick >/dev/null
ptok=$("$C" serve --db "$PG_URL" user add bench --rate 0 --quota 1000 2>/dev/null)
serve "$PG_URL" serve3.log 0 "$tmp/pg.key"
body=$(jq -n --rawfile s "$f" '{source: $s, file_name: "relu_fast.c"}')
for workers in 1 2; do
	for i in $(seq 12); do
		curl -s -o /dev/null -H "Authorization: Bearer $ptok" -H 'Content-Type: application/json' \
			--data-binary "$body" "$url/v1/boards/relu/submissions"
	done
	t0=$(now)
	wp=()
	for w in $(seq "$workers"); do
		"$C" serve worker --db "$PG_URL" --workers 1 2>>"$tmp/w.log" &
		wp+=($!)
	done
	while [ "$(psql -X -q -t -A -d "$PG_URL" -c "SELECT count(*) FROM jobs WHERE state <> 'done'")" != 0 ]; do
		sleep 0.2
	done
	t1=$(now)
	kill "${wp[@]}" 2>/dev/null; wait "${wp[@]}" 2>/dev/null
	printf 'postgresql, %d worker(s): 12 submissions (24 runs) in %.1f s: %.1f submissions/min; load %s\n' \
		"$workers" "$(echo "$t1 - $t0" | bc -l)" "$(echo "12 * 60 / ($t1 - $t0)" | bc -l)" "$(load)"
done
