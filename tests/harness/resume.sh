#!/usr/bin/env bash
# Kill `crucible eval` midway, rerun with --resume: every candidate ends up
# with exactly one row and the rows finished before the kill are kept.
set -euo pipefail
exe="$1"; out="$2"
rm -rf "$out"
"$exe" eval --no-timing --timeout 2 --out "$out" >/dev/null 2>&1 &
pid=$!
# wait until at least 4 rows (plus the header) are on disk, then kill hard
for _ in $(seq 1 600); do
	[ -f "$out/results.csv" ] && [ "$(wc -l < "$out/results.csv")" -ge 5 ] && break
	sleep 0.1
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
before=$(($(wc -l < "$out/results.csv") - 1))
head -n "$((before + 1))" "$out/results.csv" > "$out/before.csv"
[ "$before" -ge 4 ] || { echo "only $before rows before the kill"; exit 1; }
"$exe" eval --no-timing --timeout 2 --out "$out" --resume >/dev/null 2>"$out/resume.err"
total=$(find "${CRUCIBLE_DATADIR}/candidates/smoke" -name '*.c' | wc -l)
rows=$(($(wc -l < "$out/results.csv") - 1))
uniq=$(tail -n +2 "$out/results.csv" | cut -d, -f3 | sort -u | wc -l)
echo "rows before kill: $before; after resume: $rows; distinct candidates: $uniq; candidates: $total"
[ "$rows" -eq "$total" ] && [ "$uniq" -eq "$total" ] || { echo "FAIL: duplicates or missing rows"; exit 1; }
# rows finished before the kill are unchanged (the end of the run sorts
# them by task and candidate: each is still there, byte for byte)
if grep -vxFf "$out/results.csv" "$out/before.csv" | grep -q .; then
	echo "FAIL: rows finished before the kill changed or were lost"; exit 1
fi
grep -q "skipped (--resume)" "$out/resume.err"
echo "1 passed, 0 failed"
