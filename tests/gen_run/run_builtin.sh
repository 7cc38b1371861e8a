#!/usr/bin/env bash
# crucible run with the built-in decoder on the decode tests' tiny model:
# every strategy end to end (the candidates are nonsense; the control flow,
# files, columns and resume are what is tested), best-of-n's completions
# byte-identical to `crucible generate`'s with the same seed, refine's
# second turn prefilling only its new tokens, and kill -9 + --resume giving
# the files of an uninterrupted run.
set -uo pipefail
exe="$1"; csvq="$2"; mk="$3"; out="$4"
rm -rf "$out"; mkdir -p "$out"
. "$(dirname "$0")/lib.sh"
"$mk" "$out/tiny.gguf" || { echo "FAIL: mk_tiny"; exit 1; }
common=(--model "$out/tiny.gguf" --task smoke/relu --no-timing --quick --timeout 2 --max-tokens 24
        --threads 1 --seed 11)
for s in best-of-n refine evolve self-consistency; do
	"$exe" run --strategy "$s" --n 2 --turns 2 --keep 1 "${common[@]}" --out "$out/$s" \
		>/dev/null 2>"$out/$s.err"; rc=$?
	want "$s exit" "$rc" 0
	for f in results.csv selected.csv curve.csv run.json samples.csv; do
		[ -s "$out/$s/$f" ] && ok || no "$s: no $f"
	done
	n=$(($(wc -l < "$out/$s/results.csv") - 1))
	case $s in refine) want "$s rows" "$n" 4 ;; evolve) want "$s rows" "$n" 6 ;; *) want "$s rows" "$n" 2 ;; esac
	want "$s strategy column" "$(col "$out/$s/results.csv" strategy | tr ' ' '\n' | sort -u)" "$s"
	grep -q '"model_sha256"' "$out/$s/run.json" && ok || no "$s: run.json lacks the model's sha256"
	[ "$(col "$out/$s/selected.csv" task)" = "smoke/relu" ] && ok || no "$s: selected.csv has no row"
done
# best-of-n is generate's sampling: the same seed, the same completions
"$exe" generate --model "$out/tiny.gguf" --tasks smoke/relu --n 2 --backend cpu --max-tokens 24 \
	--threads 1 --seed 11 --out "$out/gen" >/dev/null 2>&1 || no "generate failed"
for i in 0 1; do
	cmp -s "$out/gen/smoke/relu_s$i.txt" "$out/best-of-n/cand/smoke/relu/s$i.txt" && ok ||
		no "sample $i differs from generate's"
done
# refine's turn 1 continues turn 0's conversation: only the new tokens are computed
p=$(grep -h '"prompt_tokens"' "$out/refine/cand/smoke/relu/r0t1.json" | tr -dc 0-9)
f=$(grep -h '"prefill_tokens"' "$out/refine/cand/smoke/relu/r0t1.json" | tr -dc 0-9)
if [ -n "$p" ] && [ -n "$f" ] && [ "$f" -lt "$p" ] && [ "$f" -gt 0 ]; then ok
else no "refine turn 1 prefilled $f of $p prompt tokens"; fi
want "refine parents" "$(col "$out/refine/results.csv" parent)" "  r0t0 r1t0"
# kill -9 in the middle of a refine run, then --resume
args=(run --strategy refine --n 3 --turns 3 "${common[@]}")
"$exe" "${args[@]}" --out "$out/whole" >/dev/null 2>&1 || no "uninterrupted refine failed"
"$exe" "${args[@]}" --out "$out/cut" >/dev/null 2>&1 &
pid=$!
# killed as soon as a first completion is whole on disk: the tiny model's
# answers have no code block (no_code, nothing compiled), so the whole run
# takes a fraction of a second and a kill timed by rows would often land
# after the end; later turns wait for earlier verdicts, so this is mid-run
for _ in $(seq 1 2000); do
	compgen -G "$out/cut/cand/smoke/relu/r*t0.json" >/dev/null && break
	sleep 0.005
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
rows=$(($(wc -l < "$out/cut/results.csv" 2>/dev/null || echo 1) - 1))
if [ "$rows" -lt 9 ]; then ok; else no "the kill did not land mid-run ($rows rows)"; fi
"$exe" "${args[@]}" --out "$out/cut" --resume >/dev/null 2>"$out/resume.err" || no "resume: $(cat "$out/resume.err")"
grep -q 'run: --resume reused [1-9][0-9]* completion(s) from disk and generated [1-9]' "$out/resume.err" && ok ||
	no "resume does not say what it reused: $(cat "$out/resume.err")"
# the decoder counts its own tokens; the tiny model's answers have no code block
grep -q '"count_src": "decoder"' "$out/whole/cand/smoke/relu/r0t0.json" && ok || no "r0t0's count is not the decoder's"
want "the tiny model's answers" "$(col "$out/whole/results.csv" status | tr ' ' '\n' | sort -u)" "no_code"
for c in candidate status turn parent completion_tokens cumulative_tokens verify_seed; do
	a=$("$csvq" "$out/whole/results.csv" "$c" | sed "s#$out/whole#D#")
	b=$("$csvq" "$out/cut/results.csv" "$c" | sed "s#$out/cut#D#")
	[ "$a" = "$b" ] && ok || no "after resume, results.csv column $c differs"
done
for f in "$out"/whole/cand/smoke/relu/*.txt; do
	cmp -s "$f" "$out/cut/cand/smoke/relu/$(basename "$f")" && ok || no "$(basename "$f") differs after resume"
done
cmp -s <(sed "s#$out/whole#D#" "$out/whole/curve.csv") <(sed "s#$out/cut#D#" "$out/cut/curve.csv") && ok ||
	no "curve.csv differs after resume"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
