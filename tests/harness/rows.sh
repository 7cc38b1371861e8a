#!/usr/bin/env bash
# Rows always name their task (from @task even when a later directive is
# broken, or from the sidecar), and a broken task file is an input error
# (exit 2 naming the file), never a format_error blamed on each candidate.
set -uo pipefail
exe="$1"; src="$2"; out="$3"
rm -rf "$out"; mkdir -p "$out/c"
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
cat > "$out/c/broken_forward.c" <<'C'
// @task smoke/relu
// @forward relu_fwd(x, y, N
void relu_fwd(const float *x, float *y, long n) { (void)x; (void)y; (void)n; }
C
cat > "$out/c/no_task_line.c" <<'C'
// @forward relu_fwd(x, y, N)
void relu_fwd(const float *x, float *y, long n) { (void)x; (void)y; (void)n; }
C
echo '{"task": "smoke/relu", "model": "m"}' > "$out/c/no_task_line.json"
"$exe" eval "$out/c" --no-timing --out "$out/run" >/dev/null 2>"$out/err"; rc=$?
[ "$rc" -eq 0 ] && ok || no "eval exited $rc"
for stem in broken_forward no_task_line; do
	row=$(grep "$stem" "$out/run/results.csv")
	case "$row" in
	*'"smoke/relu"'*'format_error'*) ok ;;
	*) no "$stem: row does not name smoke/relu with format_error: $row" ;;
	esac
done
# a broken task file in a private data dir
mkdir -p "$out/data/tasks"
cp -r "$src/data/tasks/smoke" "$out/data/tasks/"
printf '{"name": "relu",\n  "dims": [oops]\n}\n' > "$out/data/tasks/smoke/relu.json"
CRUCIBLE_DATADIR="$out/data" "$exe" eval "$src/data/candidates/smoke/relu_plain.c" --no-timing \
	--out "$out/run2" >/dev/null 2>"$out/err2"; rc=$?
[ "$rc" -eq 2 ] && ok || no "broken task file: exit $rc, want 2"
grep -q 'relu.json' "$out/err2" && ok || no "broken task file: message does not name it: $(cat "$out/err2")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
