#!/usr/bin/env bash
# One bad file never loses the batch (issue 30): a folder of good and
# broken candidates gets a row for every file eval could read, rows for
# files that name no task (or a task that does not exist) name none and
# `report` and `gate` accept them, file names with a newline, CR or tab
# are escaped as \xNN (SPEC §1), and a sidecar's mistyped fields are named
# and left empty instead of making results.csv unreadable.
set -uo pipefail
exe="$1"; src="$2"; out="$3"
rm -rf "$out"; mkdir -p "$out/c"
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
c="$out/c"; S="$src/data/candidates/smoke"
cp "$S/relu_plain.c" "$c/good.c"
printf 'int x;\n' > "$c/notask.c"
: > "$c/empty.c"
head -c 3000 /dev/urandom | tr -d '@' > "$c/garbage.c"
{ printf '// @task no/such\n'; sed 1,2d "$S/relu_plain.c"; } > "$c/unknown_task.c"
{ printf '// @task no/such\n'; sed 1,2d "$S/relu_plain.c"; } > "$c/unknown_asked.c"
echo '{"task": "smoke/relu"}' > "$c/unknown_asked.json"
cp "$S/gelu_plain.c" "$c/other_task.c"        # answers another task than it was asked for
echo '{"task": "smoke/relu"}' > "$c/other_task.json"
head -c $((9 << 20)) /dev/zero | tr '\0' ' ' > "$c/too_big.c"   # over the 8 MiB cap: unreadable
echo '{"task": "smoke/relu"}' > "$c/too_big.json"
{ printf '// @task smoke/\033[31mrelu\n'; sed 1,2d "$S/relu_plain.c"; } > "$c/esc_task.c"
cp "$S/relu_plain.c" "$c/new
line.c"
cp "$S/relu_plain.c" "$c/$(printf 'cr\rname.c')"
cp "$S/relu_plain.c" "$c/$(printf 'tab\tname.c')"
cp "$S/relu_plain.c" "$c/"'tab\x09name.c'   # the text of an escaped tab, literally
ln -s /nonexistent "$c/dangling.c"
mkfifo "$c/fifo.c"
cp "$S/relu_plain.c" "$c/side_types.c"
printf '{"model": "m", "sample": "x", "seed": -1, "temperature": "hot", "turn": 1.5, "top_k": true}' > "$c/side_types.json"
cp "$S/relu_plain.c" "$c/side_bad.c"
printf '{"model": ' > "$c/side_bad.json"

timeout 300 "$exe" eval "$c" --no-timing --backend cpu --jobs 1 --out "$out/run" >"$out/eval.txt" 2>"$out/eval.err"; rc=$?
[ "$rc" -eq 0 ] && ok || no "eval exited $rc: $(tail -3 "$out/eval.err")"
R="$out/run/results.csv"
# names are escaped, so no field holds a raw newline: a line is a row
rows=$(awk 'END { print NR - 1 }' "$R")
[ "$rows" = 15 ] && ok || no "expected 15 rows (every regular file), found $rows"
grep -q 'skipped .*dangling.c: a symbolic link' "$out/eval.err" && ok || no "dangling link not named on stderr"
grep -q 'skipped .*fifo.c: a FIFO' "$out/eval.err" && ok || no "FIFO not named on stderr"
for stem in notask empty garbage unknown_task esc_task; do
	grep -q "^\"[^\"]*\",\"\",\"[^\"]*$stem.c\",.*\"format_error\"" "$R" && ok ||
		no "$stem: not a format_error row naming no task: $(grep "$stem" "$R" | cut -c1-160)"
done
grep -q 'unknown_task.c:1: @task: unknown task' "$R" && ok || no "unknown task: detail does not say so"
# a real but different @task, or a file too big to read: still the asked task's failure
grep -q '^"[^"]*","smoke/relu","[^"]*other_task.c",.*"format_error".*@task smoke/gelu, but it was asked for smoke/relu' "$R" && ok ||
	no "another @task than asked: row does not name the asked task: $(grep other_task "$R" | cut -c1-200)"
grep -q '^"[^"]*","smoke/relu","[^"]*too_big.c",.*"format_error"' "$R" && ok ||
	no "an unreadable file: row does not name its sidecar's task: $(grep too_big "$R" | cut -c1-200)"
# an unknown @task with a sidecar naming the task it was asked for: that task's failure
grep -q '^"[^"]*","smoke/relu","[^"]*unknown_asked.c",.*"format_error"' "$R" && ok ||
	no "unknown @task: row does not name the sidecar's task: $(grep unknown_asked "$R" | cut -c1-160)"
for esc in 'new\\x0aline.c' 'cr\\x0dname.c' 'tab\\x09name.c'; do
	grep -q "\"smoke/relu\",\"[^\"]*$esc\"" "$R" && ok || no "file name not escaped as $esc in results.csv"
	grep -q "$esc" "$out/eval.txt" && ok || no "file name not escaped as $esc on the terminal"
done
grep -q '"[^"]*tab\\x5cx09name.c"' "$R" && ok || no "a literal backslash in a name is not escaped (\\x5c): two names would read alike"
# --resume finds every row by its escaped name: nothing evaluated twice
timeout 300 "$exe" eval "$c" --no-timing --backend cpu --jobs 1 --out "$out/run" --resume >/dev/null 2>"$out/resume.err"; rc=$?
[ "$rc" -eq 0 ] && ok || no "eval --resume exited $rc: $(tail -3 "$out/resume.err")"
rows=$(awk 'END { print NR - 1 }' "$R")
[ "$rows" = 15 ] && ok || no "--resume evaluated again: $rows rows, want 15"
grep -q 'side_types.json: not a number >= 0.*sample, seed, temperature, top_k, turn' "$out/eval.err" && ok ||
	no "sidecar's mistyped fields not named: $(grep side_types "$out/eval.err")"
grep 'side_bad.json' "$out/eval.err" | grep -q 'unexpected token' && ok || no "broken sidecar not named"
grep -q '^crucible: ' "$out/eval.err" && no "eval's summary refused its own results: $(grep '^crucible: ' "$out/eval.err")" || ok
for fmt in md json csv html; do
	"$exe" report "$out/run" --format "$fmt" >"$out/report.$fmt" 2>"$out/report.err"; rc=$?
	[ "$rc" -eq 0 ] && ok || no "report --format $fmt exited $rc: $(cat "$out/report.err")"
done
grep -q '"untasked_rows": 5' "$out/report.json" && ok || no "report json: untasked_rows is not 5"
grep -q '5 row(s) name no task' "$out/report.md" && ok || no "report md does not say 5 rows name no task"
grep -q '| format_error | 8 |' "$out/report.md" && ok || no "status table does not count the 8 format errors: $(grep format_error "$out/report.md" | head -2)"
"$exe" gate --baseline "$R" --current "$R" >"$out/gate.txt" 2>"$out/gate.err"; rc=$?
[ "$rc" -eq 0 ] && ok || no "gate exited $rc: $(cat "$out/gate.err")"
grep -q 'rows naming no task.*5 in the baseline, 5 in the current run' "$out/gate.txt" && ok ||
	no "gate does not say 5 rows name no task"
# a passing row must name its task: a forged results.csv is refused, naming the line
awk -F, 'NR==1 || /"ok"/' "$R" | head -2 | sed '2s/"smoke\/relu"/""/' > "$out/forged.csv"
"$exe" report "$out/forged.csv" >/dev/null 2>"$out/forged.err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "forged.csv:2: column 'task' is empty in a row with status ok" "$out/forged.err" && ok ||
	no "an ok row naming no task: exit $rc, $(cat "$out/forged.err")"
# a made-up sidecar task is no request: the row falls to the one task of --tasks
mkdir -p "$out/mu"
{ printf '// @task nope/nothing\n'; sed 1,2d "$S/relu_plain.c"; } > "$out/mu/bad.c"
echo '{"task": "nope/zzz"}' > "$out/mu/bad.json"
"$exe" eval "$out/mu" --no-timing --backend cpu --jobs 1 --tasks smoke/relu --out "$out/mu-run" >/dev/null 2>&1
grep -q '^"[^"]*","smoke/relu","[^"]*bad.c",.*"format_error"' "$out/mu-run/results.csv" && ok ||
	no "a made-up sidecar task took the row out of --tasks smoke/relu: $(tail -1 "$out/mu-run/results.csv" | cut -c1-120)"
# --compile-only (NVRTC, no GPU) takes the candidates the main loop would:
# --tasks by the row's task, --resume by name; skipped without NVRTC (exit 3)
mkdir -p "$out/cu"
cp "$src/data/candidates/smoke-cuda/relu_plain.cu" "$out/cu/r.cu"
{ printf '// @task no/such\n'; sed 1,2d "$src/data/candidates/smoke-cuda/relu_plain.cu"; } > "$out/cu/b.cu"
printf '// @task smoke/gelu\n// @forward\nthis is not cuda\n' > "$out/cu/garbage.cu"
"$exe" eval "$out/cu" --backend cuda --compile-only --tasks smoke/gelu --out "$out/cu-run" >/dev/null 2>"$out/cu.err"; rc=$?
if [ "$rc" -eq 3 ]; then
	echo "SKIP: --compile-only checks (no NVRTC: $(tail -1 "$out/cu.err"))"
else
	"$exe" eval "$out/cu" --backend cuda --compile-only --tasks smoke/gelu --out "$out/cu-run" --resume >/dev/null 2>>"$out/cu.err"
	rows=$(awk 'END { print NR - 1 }' "$out/cu-run/results.csv")
	[ "$rows" = 2 ] && ok || no "--compile-only --tasks smoke/gelu, then --resume: $rows rows, want 2 (b.cu, garbage.cu under smoke/gelu)"
	grep -q '^"[^"]*","smoke/gelu","[^"]*garbage.cu",.*"format_error".*garbage.cu:2: @forward' "$out/cu-run/results.csv" && ok ||
		no "--compile-only: a .cu whose directives do not parse is not a format_error: $(grep garbage "$out/cu-run/results.csv" | cut -c1-160)"
	grep -q '^"[^"]*","smoke/gelu","[^"]*b.cu",.*"format_error"' "$out/cu-run/results.csv" && ok ||
		no "--compile-only: an unknown @task's row does not name the one task of --tasks"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
