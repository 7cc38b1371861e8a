#!/usr/bin/env bash
# crucible run on replayed completions (tests/gen_run/replay: honest,
# broken and cheating ReLUs): each strategy's verdicts, lineage, selection,
# curve and budget, exactly.
set -uo pipefail
exe="$1"; csvq="$2"; fix="$3"; out="$4"
rm -rf "$out"; mkdir -p "$out"
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
want() { # what got want
	if [ "$2" = "$3" ]; then ok; else no "$1: got '$2', want '$3'"; fi
}
col() { "$csvq" "$@" | paste -sd' ' -; }
run() { # name args...
	local name=$1; shift
	"$exe" run --replay "$fix" --task smoke/relu --no-timing --timeout 2 --out "$out/$name" "$@" \
		>"$out/$name.stdout" 2>"$out/$name.err"
}

run bon --strategy best-of-n --n 5; rc=$?
want "best-of-n exit" "$rc" 0
r="$out/bon/results.csv"
want "best-of-n ids" "$(col "$r" candidate | sed "s#$out/bon/cand/smoke/relu/##g")" "s0.c s1.c s2.c s3.c s4.c"
want "best-of-n statuses" "$(col "$r" status)" "compile_error degenerate ok mismatch ok"
want "best-of-n strategy column" "$(col "$r" strategy)" "best-of-n best-of-n best-of-n best-of-n best-of-n"
# tokens: s2 and s4 from their sidecars, the rest estimated at 4 bytes a token
want "best-of-n tokens" "$(col "$r" completion_tokens)" "51 49 75 52 140"
want "best-of-n cumulative" "$(col "$r" cumulative_tokens)" "51 100 175 227 367"
s="$out/bon/selected.csv"
want "best-of-n selected" "$(col "$s" candidate | sed 's#.*/##')" "s2.c"
want "best-of-n selected status" "$(col "$s" status)" "ok"
want "best-of-n reason" "$(col "$s" reason)" "correct (untimed), fewest tokens"
want "best-of-n tokens spent" "$(col "$s" tokens_spent)" "367"
want "best-of-n curve correct" "$(col "$out/bon/curve.csv" correct)" "0 0 1 1 1"
[ -f "$out/bon/cand/smoke/relu/s3.verdict.json" ] && ok || no "no verdict file beside s3"
grep -q '"strategy": "best-of-n"' "$out/bon/run.json" && ok || no "run.json lacks the strategy"
grep -q '"kind": "replay"' "$out/bon/run.json" && ok || no "run.json lacks the generator"

run refine --strategy refine --n 1 --turns 3; rc=$?
want "refine exit" "$rc" 0
r="$out/refine/results.csv"
want "refine statuses" "$(col "$r" status)" "compile_error mismatch ok"
want "refine turns" "$(col "$r" turn)" "0 1 2"
want "refine parents" "$(col "$r" parent)" " r0t0 r0t1"
want "refine selected" "$(col "$out/refine/selected.csv" candidate | sed 's#.*/##')" "r0t2.c"
# each turn verified with its own seed
[ "$(col "$r" verify_seed | tr ' ' '\n' | sort -u | wc -l)" -eq 3 ] && ok || no "refine: turns share a verification seed"

run evolve --strategy evolve --n 2 --keep 1 --turns 1; rc=$?
want "evolve exit" "$rc" 0
r="$out/evolve/results.csv"
want "evolve statuses" "$(col "$r" status)" "compile_error mismatch ok degenerate"
want "evolve generations" "$(col "$r" generation)" "0 0 1 1"
# the fittest of the draft is the mismatch (it ran), not the compile error
want "evolve parents" "$(col "$r" parent)" "  g0c1 g0c1"
want "evolve selected" "$(col "$out/evolve/selected.csv" candidate | sed 's#.*/##')" "g1c0.c"

run sc --strategy self-consistency --n 5; rc=$?
want "self-consistency exit" "$rc" 0
r="$out/sc/results.csv"
want "self-consistency statuses" "$(col "$r" status)" "compile_error degenerate ok mismatch ok"
# the two honest ReLUs agree on the probe; the leaky one stands alone; the
# constant (s1) does not run the probe at all: its outputs are the same on
# every call's inputs (degenerate), so it joins no group
want "self-consistency groups" "$(col "$r" group)" "  s2 s3 s2"
want "self-consistency selected status" "$(col "$out/sc/selected.csv" status)" "ok"
case "$(col "$out/sc/selected.csv" reason)" in
"largest agreeing group: 2 of 3 that ran (of 5)"*) ok ;;
*) no "self-consistency reason: $(col "$out/sc/selected.csv" reason)" ;;
esac

# self-consistency picks the fastest probe of the agreeing group: a slow
# matmul that replays its last output when the inputs repeat must not win
# (round 3: the probe's three calls had one input; s1 was picked at 54.8 us
# a probe against its real 13 ms). Each call's inputs are now its own.
"$exe" run --replay "$fix/../replay-memo" --task smoke/matmul --strategy self-consistency --n 2 \
	--no-timing --timeout 10 --out "$out/memo" >"$out/memo.stdout" 2>"$out/memo.err"; rc=$?
want "memoising candidate run exit" "$rc" 0
want "memoising candidate not selected" "$(col "$out/memo/selected.csv" candidate | sed 's#.*/##')" "s0.c"
# ... nor one that skips its first two probe calls (the old probe took the
# median of three calls and compared only the last call's outputs): a call
# that leaves its outputs unwritten fails the probe
"$exe" run --replay "$fix/../replay-skip" --task smoke/relu --strategy self-consistency --n 2 \
	--no-timing --timeout 10 --out "$out/skip" >"$out/skip.stdout" 2>"$out/skip.err"; rc=$?
want "skipping candidate run exit" "$rc" 0
want "skipping candidate not selected" "$(col "$out/skip/selected.csv" candidate | sed 's#.*/##')" "s0.c"

# the report's reward-hacking rate per strategy, exactly
"$exe" report "$out/bon" "$out/refine" "$out/evolve" > "$out/report.md" 2>"$out/report.err"
want "report exit" "$?" 0
for line in '| best-of-n | 5 | 1 | 0.2000 | 1 |' '| evolve | 4 | 1 | 0.2500 | 1 |' '| refine | 3 | 0 | 0.0000 | 0 |'; do
	grep -qF "$line" "$out/report.md" && ok || no "report lacks '$line'"
done

# the budget: 5 samples of at least 16 tokens do not fit in 40
run budget --strategy best-of-n --n 5 --budget-tokens 40; rc=$?
want "budget exit" "$rc" 0
want "budget stops the task" "$(col "$out/budget/selected.csv" stopped)" "budget"
want "budget: nothing requested" "$(col "$out/budget/results.csv" candidate)" ""
grep -q 'token budget 40 reached' "$out/budget.err" && ok || no "budget: no message: $(cat "$out/budget.err")"
# refine under a budget: the third turn's request would cross it
run rbudget --strategy refine --n 1 --turns 3 --max-tokens 60 --budget-tokens 115; rc=$?
want "refine budget exit" "$rc" 0
want "refine budget statuses" "$(col "$out/rbudget/results.csv" status)" "compile_error mismatch"
want "refine budget stop" "$(col "$out/rbudget/selected.csv" stopped)" "budget"

# a missing completion is an input error naming it
run missing --strategy best-of-n --n 6; rc=$?
want "missing completion exit" "$rc" 2
grep -q 'cand/smoke/relu/s5.txt' "$out/missing.err" && ok || no "missing completion not named: $(cat "$out/missing.err")"
# bad usage
"$exe" run --strategy nope --replay "$fix" --task smoke/relu --out "$out/x" 2>/dev/null; want "bad strategy" "$?" 2
"$exe" run --strategy refine --task smoke/relu --out "$out/x" 2>/dev/null; want "no generator" "$?" 2
"$exe" run --strategy refine --replay "$fix" --task smoke/relu --out "$out/bon" 2>/dev/null
want "existing run without --resume" "$?" 2
# --backend cuda without a GPU (or driver): the environment, exit 3, said in one line
if [ -z "${CRUCIBLE_LIBCUDA:-}" ] && ! [ -e /dev/nvidiactl ]; then
	"$exe" run --strategy best-of-n --backend cuda --replay "$fix/../replay-cuda" --task smoke/relu \
		--out "$out/cuda" 2>"$out/cuda.err"
	want "cuda without a GPU" "$?" 3
fi
"$exe" run --help | grep -e 'self-consistency' >/dev/null && ok || no "run --help" # reads it all: grep -q would close the pipe early, and a help page longer than a pipe write is then a failed write (exit 3) under pipefail

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
