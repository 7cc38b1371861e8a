#!/usr/bin/env bash
# Text a candidate controls never reaches the user raw: a candidate that
# prints terminal control sequences, and a candidate whose file name holds
# them, leave no control byte (ESC, BEL, C1, bidi override) in crucible's
# terminal output, results.csv or a report.
set -euo pipefail
exe="$1"; src="$2"; out="$3"
rm -rf "$out"; mkdir -p "$out/cands"
cp "$src/data/candidates/exploits/orch_terminal_escape.c" "$out/cands/"
# a file name with ESC and a bidi override in it
name=$(printf 'evil\033[2K\342\200\256name.c')
cp "$src/data/candidates/smoke/bad_crash.c" "$out/cands/$name"
bad() { # prints the offending bytes of file $1, if any
	LC_ALL=C grep -c -P '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]' "$1" || true
}
"$exe" check "$out/cands/orch_terminal_escape.c" --no-timing --timeout 2 > "$out/check.txt" 2>"$out/check.err" || true
"$exe" eval "$out/cands" --no-timing --timeout 2 --out "$out/run" > "$out/eval.txt" 2>"$out/eval.err" || true
"$exe" report "$out/run/results.csv" --format md > "$out/report.md" 2>"$out/report.err" || true
"$exe" report "$out/run/results.csv" --format html > "$out/report.html" 2>>"$out/report.err" || true
fail=0
for f in check.txt check.err eval.txt eval.err run/results.csv report.md report.html; do
	n=$(bad "$out/$f")
	if [ "$n" != "0" ]; then echo "FAIL: $f has $n line(s) with control bytes"; fail=1; fi
done
grep -q 'status      runtime_error' "$out/check.txt" || { echo "FAIL: check did not say runtime_error"; fail=1; }
grep -q '\\x1b' "$out/check.txt" || { echo "FAIL: the escaped sequence is not shown"; fail=1; }
[ "$(tail -n +2 "$out/run/results.csv" | wc -l)" -eq 2 ] || { echo "FAIL: expected 2 rows"; fail=1; }
[ "$fail" -eq 0 ] && echo "1 passed, 0 failed" || { echo "0 passed, 1 failed"; exit 1; }
