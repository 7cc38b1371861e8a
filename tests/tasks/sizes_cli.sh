#!/usr/bin/env bash
# Issue 30 through the CLI: dims that overflow are exit 2 naming the dim
# (once a SIGSEGV); a set with one broken task file lists, lints and
# dumps its other tasks, the broken one with its error (SPEC §2).
set -u
exe="$1"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. --dims whose count wraps int64
err=$("$exe" dump smoke/softmax --dims B=4611686018427387904,D=4 --out "$tmp/d1" 2>&1 >/dev/null); rc=$?
if [ "$rc" -eq 2 ] && grep -q 'B = 4611686018427387904' <<<"$err" && grep -q 'softmax.json' <<<"$err"; then ok
else bad "dump --dims B=2^62: exit $rc (want 2 naming B and the file): $err"; fi
# each dim within the cap, the reference over its cap
err=$("$exe" dump smoke/softmax --dims B=65536,D=65536 --out "$tmp/d2" 2>&1 >/dev/null); rc=$?
if [ "$rc" -eq 2 ] && grep -q -- '--dims' <<<"$err"; then ok
else bad "dump --dims B=D=65536: exit $rc (want 2): $err"; fi
"$exe" dump smoke/softmax --dims B=3,D=5 --out "$tmp/d3" >/dev/null 2>&1 && ok || bad "dump --dims B=3,D=5 failed"

# 2. a set with one broken file (a copy of smoke plus one)
real="${CRUCIBLE_DATADIR:?}"
src="$real/tasks/smoke"
mkdir -p "$tmp/data/tasks/s" "$tmp/data/tasks/smoke"
ln -s "$real/baselines" "$tmp/data/baselines"
cp "$src/relu.json" "$src/softmax.json" "$tmp/data/tasks/s/"
sed 's/"dims": {"B": 4096, "D": 16384}/"dims": {"B": 4611686018427387904, "D": 4}/' "$src/softmax.json" \
	> "$tmp/data/tasks/s/broken.json"
grep -q 4611686018427387904 "$tmp/data/tasks/s/broken.json" || bad "test setup: the sed did not apply"
# a file every loader refused: it used to fail list and eval of its set
printf '{"dims": ' > "$tmp/data/tasks/s/broken_json.json"
export CRUCIBLE_DATADIR="$tmp/data"
out=$("$exe" list s 2>"$tmp/err"); rc=$?
if [ "$rc" -eq 0 ] && grep -q '^s/relu ' <<<"$out" && grep -q '^s/softmax ' <<<"$out" &&
   grep -q '^s/broken .*error: .*broken.json: dims.B' <<<"$out" &&
   grep -q '^s/broken_json .*error: .*broken_json.json' <<<"$out"; then ok
else bad "list s: exit $rc, want 0 with s/relu, s/softmax and s/broken's error: $out $(cat "$tmp/err")"; fi
out=$("$exe" list 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && grep -q '^s/relu ' <<<"$out" && ok || bad "list (all sets): exit $rc: $out"
out=$("$exe" list s --json 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && grep -q '"error": ".*broken.json' <<<"$out" && ok || bad "list s --json: exit $rc: $out"
err=$("$exe" list s/broken 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q 'broken.json' <<<"$err" && ok || bad "list s/broken: exit $rc (want 2): $err"
"$exe" list s/relu >/dev/null 2>&1 && ok || bad "list s/relu failed"
out=$("$exe" lint s 2>&1); rc=$?
if [ "$rc" -eq 1 ] && grep -q '^FAIL s/broken .*does not load' <<<"$out" && grep -q '^ok   s/relu' <<<"$out"; then ok
else bad "lint s: exit $rc (want 1, s/broken failing, s/relu ok): $out"; fi

# eval of a candidate for another task of a set with a broken file, the
# set as its --tasks filter
cp "$src/relu.json" "$tmp/data/tasks/smoke/"
cp "$tmp/data/tasks/s/broken.json" "$tmp/data/tasks/s/broken_json.json" "$tmp/data/tasks/smoke/"
out=$("$exe" eval "$real/candidates/smoke/relu_plain.c" --tasks smoke --out "$tmp/ev" 2>&1); rc=$?
if [ "$rc" -eq 0 ] && grep -q '"smoke/relu",.*,"ok",' "$tmp/ev/results.csv" 2>/dev/null; then ok
else bad "eval relu_plain.c --tasks smoke: exit $rc, want 0 and an ok row: $out"; fi

# a candidate OF the broken task: an input error naming the task file
# (exit 2), never a format_error blamed on the candidate (tests/harness/rows.sh)
sed 's|^// @task smoke/softmax|// @task smoke/broken|' "$real/candidates/smoke/softmax_plain.c" > "$tmp/for_broken.c"
grep -q '@task smoke/broken' "$tmp/for_broken.c" || bad "test setup: the @task line did not change"
out=$("$exe" eval "$tmp/for_broken.c" --no-timing --out "$tmp/ev2" 2>&1); rc=$?
if [ "$rc" -eq 2 ] && grep -q 'broken.json' <<<"$out"; then ok
else bad "eval of a candidate for the broken task: exit $rc, want 2 naming broken.json: $out"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
