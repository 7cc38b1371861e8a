#!/usr/bin/env bash
# kill -9 in the middle of a refine run, then --resume: the final files
# equal an uninterrupted run's, no completion is asked for twice and no
# verdict on disk is recomputed.
set -uo pipefail
exe="$1"; csvq="$2"; fix="$3"; out="$4"
rm -rf "$out"; mkdir -p "$out"
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
args=(run --strategy refine --n 2 --turns 3 --replay "$fix" --task smoke/relu --no-timing
      --timeout 2 --seed 7)
"$exe" "${args[@]}" --out "$out/whole" >/dev/null 2>"$out/whole.err" || no "uninterrupted run: $(cat "$out/whole.err")"
# r0t1 loops until its 2 s timeout: kill while it is being verified
"$exe" "${args[@]}" --out "$out/cut" >/dev/null 2>"$out/cut.err" &
pid=$!
for _ in $(seq 1 200); do
	[ -f "$out/cut/cand/smoke/relu/r1t0.verdict.json" ] && break
	sleep 0.05
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
rows=$(($(wc -l < "$out/cut/results.csv") - 1))
if [ "$rows" -ge 1 ] && [ "$rows" -lt 6 ]; then ok; else no "the kill did not land mid-run ($rows rows)"; fi
before=$(ls "$out/cut/cand/smoke/relu/"*.verdict.json | wc -l)
stat -c %Y.%N "$out/cut/cand/smoke/relu/"*.verdict.json > "$out/verdicts.before" 2>/dev/null
"$exe" "${args[@]}" --out "$out/cut" --resume >/dev/null 2>"$out/resume.err" || no "resume: $(cat "$out/resume.err")"
# the verdicts on disk were kept, not recomputed
while read -r line; do
	grep -qxF "$line" <(stat -c %Y.%N "$out/cut/cand/smoke/relu/"*.verdict.json) || no "verdict rewritten: $line"
done < "$out/verdicts.before"
[ "$before" -ge 1 ] && ok || no "no verdict before the kill"
for c in candidate status turn parent sample strategy completion_tokens cumulative_tokens verify_seed; do
	a=$("$csvq" "$out/whole/results.csv" "$c" | sed "s#$out/whole#D#")
	b=$("$csvq" "$out/cut/results.csv" "$c" | sed "s#$out/cut#D#")
	[ "$a" = "$b" ] && ok || no "results.csv column $c differs: '$a' vs '$b'"
done
for c in candidate status reason tokens_spent candidates stopped; do
	a=$("$csvq" "$out/whole/selected.csv" "$c" | sed "s#$out/whole#D#")
	b=$("$csvq" "$out/cut/selected.csv" "$c" | sed "s#$out/cut#D#")
	[ "$a" = "$b" ] && ok || no "selected.csv column $c differs: '$a' vs '$b'"
done
cmp -s <(sed "s#$out/whole#D#" "$out/whole/curve.csv") <(sed "s#$out/cut#D#" "$out/cut/curve.csv") && ok || no "curve.csv differs"
for f in "$out"/whole/cand/smoke/relu/*.c; do
	cmp -s "$f" "$out/cut/cand/smoke/relu/$(basename "$f")" && ok || no "$(basename "$f") differs"
done
# a resume with other options is refused
"$exe" run --strategy refine --n 3 --turns 3 --replay "$fix" --task smoke/relu --no-timing \
	--seed 7 --out "$out/cut" --resume 2>/dev/null
[ $? -eq 2 ] && ok || no "resume with other options was not refused"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
