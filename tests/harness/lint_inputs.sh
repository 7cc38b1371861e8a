#!/usr/bin/env bash
# crucible lint redraws the inputs and keeps the params (issue 15): a task
# whose output hardly depends on its inputs fails, however much it depends
# on its params. Fixtures in tests/harness/lint/tasks/lintbad: #3 under
# PyTorch's default init (x moves the output by ~1e-7 of its size) and a
# layer whose ReLUs are all off fail; #3 as repaired passes. With the
# params redrawn between the two draws (the old lint) all three passed.
set -uo pipefail
exe="$1"; fixtures="$2"; out="$3"
rm -rf "$out"; mkdir -p "$out"
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
CRUCIBLE_DATADIR="$fixtures" "$exe" lint lintbad >"$out/lint.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] && ok || no "lint exited $rc, want 1"
grep -q '^FAIL lintbad/deep_default .*a kernel ignoring the inputs would pass' "$out/lint.txt" && ok ||
	no "deep_default not failed for ignoring its inputs"
grep -q '^FAIL lintbad/dead_layer .*does not change when the inputs change' "$out/lint.txt" && ok ||
	no "dead_layer not failed as input-independent"
grep -q '^ok   lintbad/deep_relu$' "$out/lint.txt" && ok || no "deep_relu (the control) did not pass"
grep -q '3 task(s) checked, 2 failed' "$out/lint.txt" && ok || no "summary: $(tail -1 "$out/lint.txt")"
[ "$fail" -eq 0 ] || cat "$out/lint.txt"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
