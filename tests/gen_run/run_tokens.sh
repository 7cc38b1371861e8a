#!/usr/bin/env bash
# crucible run, issue 31, on replayed completions (tests/gen_run/replay-tokens)
# and fake_openai: an answer without a code block is no_code (never
# compiled) and refine's next prompt says so; a replayed completion past
# the budget is a warning and stopped = over_budget; progress off a
# terminal is a line per completion, never the redrawn status line, and on
# a terminal (script(1)) the status line; --resume says what it reused;
# the endpoint options are validated.
set -uo pipefail
exe="$1"; csvq="$2"; fake="$3"; fix="$4"; efix="$5"; out="$6"
rm -rf "$out"; mkdir -p "$out"
. "$(dirname "$0")/lib.sh"
run() { # name args...
	local name=$1; shift
	"$exe" run --replay "$fix" --task smoke/relu --no-timing --timeout 2 --out "$out/$name" "$@" \
		>"$out/$name.stdout" 2>"$out/$name.err"
}
c="cand/smoke/relu"

# no code block: status no_code with its detail, never compiled; refine's
# next turn follows (r0t1 is the fenced answer)
run nocode --strategy refine --n 1 --turns 2 --seed 5; rc=$?
want "no_code exit" "$rc" 0
r="$out/nocode/results.csv"
want "no_code statuses" "$(col "$r" status)" "no_code ok"
want "no_code detail" "$("$csvq" "$r" detail | head -1)" \
	"no code block found in the completion ($(wc -c < "$fix/$c/r0t0.txt") bytes)"
# what a report needs to take pass@k per trajectory: trajectory (sample), turn
want "no_code turns" "$(col "$r" turn)" "0 1"
want "no_code trajectories (sample)" "$(col "$r" sample)" "0 0"
grep -q '"status": "no_code"' "$out/nocode/$c/r0t0.json" && ok || no "the sidecar lacks status no_code"
grep -q '"code_block": false' "$out/nocode/$c/r0t0.json" && ok || no "the sidecar lacks code_block false"
grep -q '"code_block": true' "$out/nocode/$c/r0t1.json" && ok || no "r0t1's sidecar lacks code_block true"
grep -q '"status": "no_code"' "$out/nocode/$c/r0t0.verdict.json" && ok || no "the verdict is not no_code"
grep -q '"no_code": 1' "$out/nocode/run.json" && ok || no "run.json does not count the no-code answer"
"$exe" report "$out/nocode" >"$out/nocode.report" 2>&1; want "report on a no_code row" "$?" 0

# refine's next prompt says the answer had no code block (fake_openai
# records it): the first answer is prose, the second the echo
export FAKE_OPENAI_ECHO_FILE="$efix/echo_relu.txt"
fix="$efix" serve fb nocode.script
"$exe" run --endpoint "$url" --api-model fake-coder --no-stream --tokenizer usage --retry-window 5 \
	--task smoke/relu --no-timing --timeout 2 --strategy refine --n 1 --turns 2 --out "$out/fb" \
	>/dev/null 2>"$out/fb.err"; rc=$?
stop
want "refine after no code exit" "$rc" 0
want "refine after no code statuses" "$(col "$out/fb/results.csv" status)" "no_code ok"
grep -q 'had no code block' "$out/fb.log/req-1.json" && ok || no "refine's second prompt does not say there was no code block"
grep -q 'fenced code block' "$out/fb.log/req-1.json" && ok || no "refine's second prompt does not ask for a fenced block"

# a replayed completion longer than its request takes the task past the
# budget: said on stderr, stopped = over_budget, and nothing more asked for
run over --strategy best-of-n --n 2 --max-tokens 100 --budget-tokens 300; rc=$?
want "over_budget exit" "$rc" 0
want "over_budget stopped" "$(col "$out/over/selected.csv" stopped)" "over_budget"
want "over_budget tokens spent" "$(col "$out/over/selected.csv" tokens_spent)" "590"
grep -q 'warning: smoke/relu s0: 500 tokens.*budget of 300' "$out/over.err" && ok ||
	no "no over-budget warning: $(cat "$out/over.err")"
grep -q '"tasks_over_budget": 1' "$out/over/run.json" && ok || no "run.json does not count the task over budget"
# report reads it: a budget stop, said to be past the budget
"$exe" report "$out/over" --format md > "$out/over.md" 2> "$out/over-report.err"; rc=$?
want "report over_budget exit" "$rc" 0
grep -q '| 1 (1 past it) |' "$out/over.md" && ok || no "report does not say the task went past its budget: $(grep -i 'budget' "$out/over.md" "$out/over-report.err" | head -5)"
# within the budget: done, no warning
run under --strategy best-of-n --n 2 --max-tokens 100; rc=$?
want "no budget: stopped" "$(col "$out/under/selected.csv" stopped)" "done"
! grep -q 'warning' "$out/under.err" && ok || no "a warning without a budget"

# progress off a terminal: one line per completion (id, tokens, count
# source, finish), then the verdict's line; never a carriage return
want "progress lines" "$(grep -c '^run: smoke/relu s[01]: generated, ' "$out/under.err")" 2
grep -q '^run: smoke/relu s0: generated, 500 tokens (sidecar), finish length' "$out/under.err" && ok ||
	no "progress line of s0: $(cat "$out/under.err")"
grep -q '^run: \[1/1\] smoke/relu s0: ok (500 tokens, finish length, 500 so far)' "$out/under.err" && ok ||
	no "verdict line of s0: $(cat "$out/under.err")"
! grep -q $'\r' "$out/under.err" && ok || no "a redrawn line off a terminal"
# on a terminal: the status line (candidates done / planned), no per-completion lines
if script -qec true /dev/null >/dev/null 2>&1; then
	script -qec "$exe run --replay $fix --task smoke/relu --no-timing --timeout 2 --strategy best-of-n \
--n 2 --out $out/tty" /dev/null >"$out/tty.typescript" 2>&1
	grep -q $'\r.*run: 2/2 candidates, 0 in flight' "$out/tty.typescript" && ok ||
		no "no status line on a terminal: $(tr '\r' '|' < "$out/tty.typescript")"
	! grep -q 'generated, ' "$out/tty.typescript" && ok || no "per-completion lines on a terminal"
fi

# --resume: what was on disk is reused, the rest generated, and both said
rm "$out/nocode/$c/r0t1.json"
run nocode --strategy refine --n 1 --turns 2 --seed 5 --resume; rc=$?
want "resume exit" "$rc" 0
grep -q 'run: --resume reused 1 completion(s) from disk and generated 1' "$out/nocode.err" && ok ||
	no "resume counts: $(cat "$out/nocode.err")"
grep -q '"reused": 1' "$out/nocode/run.json" && grep -q '"generated": 1' "$out/nocode/run.json" && ok ||
	no "run.json lacks resume's counts"
want "resume statuses" "$(col "$out/nocode/results.csv" status)" "no_code ok"

# the endpoint's options: validated, and only with --endpoint
e=(run --endpoint http://127.0.0.1:1/v1 --api-model m --task smoke/relu --strategy best-of-n --out "$out/opt")
for bad in "--retry-window 0" "--retry-window x" "--max-retries 0" "--request-timeout -1" \
	   "--connect-timeout 0" "--idle-timeout 1e9" "--tokenizer words" "--tokenizer $out/none.gguf"; do
	# shellcheck disable=SC2086
	"$exe" "${e[@]}" $bad 2>"$out/opt.err"; rc=$?
	want "bad $bad" "$rc" 2
	grep -q -e "${bad%% *}" "$out/opt.err" && ok || no "$bad: message does not name the option: $(cat "$out/opt.err")"
done
"$exe" "${e[@]}" --stream --no-stream 2>"$out/opt.err"; want "--stream --no-stream" "$?" 2
grep -q 'exclude' "$out/opt.err" && ok || no "--stream --no-stream: $(cat "$out/opt.err")"
for o in --stream --no-stream "--retry-window 5" "--max-retries 3" "--tokenizer usage" "--request-timeout 9"; do
	# shellcheck disable=SC2086
	run optrep --strategy best-of-n $o; want "$o with --replay" "$?" 2
	grep -q 'need --endpoint' "$out/optrep.err" && ok || no "$o with --replay: $(cat "$out/optrep.err")"
done
"$exe" run --help | grep -e "--retry-window S" >/dev/null && ok || no "--help lacks --retry-window" # not grep -q: see run_replay.sh

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
