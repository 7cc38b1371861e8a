#!/usr/bin/env bash
# eval --jobs 2 over the hostile corpus (crashing, hanging, forking, flooding
# and sandbox-probing candidates) mixed with every honest sample: each
# candidate gets its row exactly once and its expected status (the honest
# ones `ok`), and the run survives (issue 14).
set -euo pipefail
exe="$1"; out="$2"
d="$CRUCIBLE_DATADIR/candidates"
rm -rf "$out"
rc=0
# correctness only: eval_honest and eval_exploits_timed time under the default --jobs
"$exe" eval --jobs 2 --check-expect --no-timing --timeout 2 --out "$out" \
	"$d/exploits" "$d/honest" "$d/smoke" >"$out.log" 2>"$out.err" || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "FAIL: crucible eval --jobs 2 exited $rc"
	grep -- "UNEXPECTED\|expected status" "$out.log" || true
	tail -5 "$out.err"
	exit 1
fi
total=$(find "$d/exploits" "$d/honest" "$d/smoke" -name '*.c' | wc -l)
rows=$(($(wc -l < "$out/results.csv") - 1))
uniq=$(tail -n +2 "$out/results.csv" | cut -d, -f3 | sort -u | wc -l)
echo "candidates: $total; rows: $rows; distinct candidates: $uniq"
[ "$rows" -eq "$total" ] && [ "$uniq" -eq "$total" ] || { echo "FAIL: duplicate or missing rows"; exit 1; }
grep -q '"jobs": 2' "$out/run.json" || { echo "FAIL: run.json does not say --jobs 2"; exit 1; }
grep -q '"job_timing": "serial"' "$out/run.json" || { echo "FAIL: run.json lacks the timing mode"; exit 1; }
echo "1 passed, 0 failed"
