#!/usr/bin/env bash
# crucible run against fake_openai when the server misbehaves (issue 31):
# a server that is gone for longer than --retry-window stops the run with
# exit 3, every row so far kept, and --resume (against the server back on
# another port) finishes it, reusing what was on disk; a slow, dropping,
# restarting server with llama.cpp's usage is counted exactly.
set -uo pipefail
exe="$1"; csvq="$2"; fake="$3"; fix="$4"; out="$5"
rm -rf "$out"; mkdir -p "$out"
. "$(dirname "$0")/lib.sh"
export FAKE_OPENAI_ECHO_FILE="$fix/echo_relu.txt"
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

# the whole of issue 31 at once: a server that streams slowly, reports
# usage for one choice of three, drops a stream, restarts (refused for 3 s)
# and answers once without a code block. The run finishes without
# --resume; every sidecar's count is what the server generated for it,
# a dropped stream's tokens are lost tokens (recorded, not charged: the
# budget spends the completions the search received), the budget holds,
# and the prose answer is no_code.
serve e2e restart.script
"$exe" run --endpoint "$url" --api-model fake-coder --task smoke/relu --no-timing --timeout 2 \
	--strategy evolve --n 3 --keep 1 --turns 1 --concurrency 1 --budget-tokens 2000 --retry-window 30 \
	--idle-timeout 10 --seed 3 --out "$out/e2e" >/dev/null 2>"$out/e2e.err"; rc=$?
stop
want "restart: exit" "$rc" 0
d="$out/e2e/cand/smoke/relu"
want "restart: candidates" "$(col "$out/e2e/results.csv" candidate | sed "s#$d/##g")" \
	"g0c0.c g0c1.c g0c2.c g1c0.c g1c1.c g1c2.c"
want "restart: the prose answer" "$("$csvq" "$out/e2e/results.csv" status | sed -n 5p)" "no_code"
jq_int() { # file key: an integer field of a flat JSON object
	sed -n "s/^ *\"$2\": \([0-9-]*\),*$/\1/p" "$1" | head -1
}
gen_tok() { # request choice: the tokens the fake made for it
	tr -d ' \n' < "$out/e2e.log/gen-$1.json" | sed 's/.*"tokens":\[\([0-9,]*\)\].*/\1/' | cut -d, -f$(($2 + 1))
}
gen_sent() {
	tr -d ' \n' < "$out/e2e.log/gen-$1.json" | sed 's/.*"sent":\[\([0-9,]*\)\].*/\1/' | cut -d, -f$(($2 + 1))
}
spent=0; lost=0
for pair in g0c0:0:0 g0c1:0:1 g0c2:0:2 g1c0:2:0 g1c1:4:0 g1c2:5:0; do
	id=${pair%%:*}; rest=${pair#*:}; req=${rest%%:*}; k=${rest#*:}
	got=$(jq_int "$d/$id.json" completion_tokens)
	want "restart: $id's tokens are the server's" "$got" "$(gen_tok "$req" "$k")"
	lost=$((lost + $(jq_int "$d/$id.json" lost_tokens)))
	spent=$((spent + got))
done
want "restart: the dropped stream's tokens are lost tokens" "$(jq_int "$d/g1c0.json" lost_tokens)" "$(gen_sent 1 0)"
grep -q '"dropped": *true' "$out/e2e.log/gen-1.json" && ok || no "the fake did not drop request 1"
[ "$(gen_tok 0 0)" != "$(gen_tok 0 1)" ] && ok || no "the draft's choices have one length"
want "restart: tokens spent" "$(col "$out/e2e/selected.csv" tokens_spent)" "$spent"
[ "$spent" -le 2000 ] && ok || no "the budget of 2000 did not hold: $spent"
grep -q "\"lost_tokens\": $lost," "$out/e2e/run.json" && ok || no "run.json does not record the $lost lost tokens"
want "restart: stopped" "$(col "$out/e2e/selected.csv" stopped)" "done"
grep -q '"complete": true' "$out/e2e/run.json" && ok || no "run.json does not say the run is complete"
want "restart: a line per completion" "$(grep -c ': generated, ' "$out/e2e.err")" 6

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
