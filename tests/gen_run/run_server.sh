#!/usr/bin/env bash
# crucible run against fake_openai when the server goes away (issue 31):
# a server that is gone for longer than --retry-window stops the run with
# exit 3, every row so far kept, and --resume (against the server back on
# another port) finishes it, reusing what was on disk.
set -uo pipefail
exe="$1"; csvq="$2"; fake="$3"; fix="$4"; out="$5"
rm -rf "$out"; mkdir -p "$out"
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
want() { if [ "$2" = "$3" ]; then ok; else no "$1: got '$2', want '$3'"; fi; }
col() { "$csvq" "$@" | paste -sd' ' -; }
export FAKE_OPENAI_ECHO_FILE="$fix/echo_relu.txt"
server_pid=
serve() { # name script [fake options]: starts the server, sets $url
	local name=$1 script=$2; shift 2
	mkdir -p "$out/$name.log"
	"$fake" --port-file "$out/$name.port" --script "$fix/$script" --log "$out/$name.log" "$@" &
	server_pid=$!
	for _ in $(seq 1 100); do [ -s "$out/$name.port" ] && break; sleep 0.05; done
	url="http://127.0.0.1:$(cat "$out/$name.port")/v1"
}
stop() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
args=(--api-model fake-coder --task smoke/relu --no-timing --timeout 2 --strategy refine --n 1 --turns 3
      --seed 11 --tokenizer usage)

# the server answers the first turn and exits: the second turn's request
# is refused, retried for 2 s, and the run stops (exit 3) with r0t0's row
serve gone echo4.script --max-requests 1
t0=$(date +%s)
"$exe" run --endpoint "$url" "${args[@]}" --retry-window 2 --out "$out/r" >/dev/null 2>"$out/gone.err"; rc=$?
t1=$(date +%s)
stop
want "window spent: exit" "$rc" 3
[ $((t1 - t0)) -lt 30 ] && ok || no "the 2 s window took $((t1 - t0)) s"
want "window spent: rows kept" "$(col "$out/r/results.csv" status)" "ok"
grep -q -e '--resume' "$out/gone.err" && ok || no "the stop does not say --resume: $(cat "$out/gone.err")"
grep -q '"complete": false' "$out/r/run.json" && ok || no "run.json does not say the run is incomplete"
# the server back (another port): --resume finishes, asking only for what is missing
serve back echo4.script
"$exe" run --endpoint "$url" "${args[@]}" --retry-window 2 --out "$out/r" --resume >/dev/null 2>"$out/back.err"; rc=$?
stop
want "resume after the stop: exit" "$rc" 0
want "resume after the stop: statuses" "$(col "$out/r/results.csv" status)" "ok ok ok"
want "resume after the stop: turns" "$(col "$out/r/results.csv" turn)" "0 1 2"
grep -q 'reused 1 completion(s) from disk and generated 2' "$out/back.err" && ok || no "resume counts: $(cat "$out/back.err")"
[ -e "$out/back.log/req-1.json" ] && [ ! -e "$out/back.log/req-2.json" ] && ok ||
	no "the resumed run did not ask for exactly the two missing turns"
grep -q '"complete": true' "$out/r/run.json" && ok || no "run.json does not say the run is complete"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
