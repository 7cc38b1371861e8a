#!/usr/bin/env bash
# Issue 32 through the CLI: tasks named the way KernelBench users name them
# (SPEC §2 "Task names"): `crucible list L1/23`, `list 'L2/*Conv*'`,
# `list L1/1-10`, short names, the same task twice listed once, `dump`,
# `lint` and `eval --tasks` in these forms, and the
# errors (exit 2, "crucible list: ..." with a did-you-mean).
set -u
exe="$1"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# the task names `crucible list SPEC` prints, one a line
names() { "$exe" list "$@" | awk '$1 ~ /^(L[0-9]|smoke)\// { print $1 }'; }

got=$(names L1/23); rc=$?
[ "$rc" -eq 0 ] && [ "$got" = "L1/23_Softmax" ] && ok || bad "list L1/23: exit $rc, got [$got]"

got=$(names L1/softmax)
[ "$got" = "L1/23_Softmax" ] && ok || bad "list L1/softmax: got [$got]"

got=$(names L1/1-10)
want=$(printf 'L1/%s\n' 1_Square_matrix_multiplication_ 2_Standard_matrix_multiplication_ \
	3_Batched_matrix_multiplication 4_Matrix_vector_multiplication_ \
	5_Matrix_scalar_multiplication 6_Matmul_with_large_K_dimension_ \
	7_Matmul_with_small_K_dimension_ 8_Matmul_with_irregular_shapes_ \
	9_Tall_skinny_matrix_multiplication_ 10_3D_tensor_matrix_multiplication)
[ "$got" = "$want" ] && ok || bad "list L1/1-10: got [$got]"

got=$(names 'L2/*Conv*'); n=$(grep -c . <<<"$got")
want=$(ls "${CRUCIBLE_DATADIR:?}/tasks/L2" | grep -i conv | sed 's/\.json$//; s|^|L2/|' | sort -V)
[ "$n" -gt 10 ] && [ "$got" = "$want" ] && ok || bad "list 'L2/*Conv*': got $n [$got]"

got=$(names '*/19_*' | tr '\n' ' ')
[ "$got" = "L1/19_ReLU L2/19_ConvTranspose2d_GELU_GroupNorm L3/19_MobileNetV1 " ] && ok ||
	bad "list '*/19_*': got [$got]"

# the same task three ways: once
got=$(names L1/23,L1/softmax,L1/23_Softmax | grep -c .)
[ "$got" -eq 1 ] && ok || bad "list L1/23,L1/softmax,L1/23_Softmax: $got rows"
got=$(names L1/23 L1/softmax | grep -c .)
[ "$got" -eq 1 ] && ok || bad "list L1/23 L1/softmax: $got rows"

# errors: exit 2, one line naming what is wrong
err=$("$exe" list L1/sofmax 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "^crucible list: unknown task 'L1/sofmax' (did you mean 'L1/23_Softmax'?" <<<"$err" &&
	ok || bad "list L1/sofmax: exit $rc: $err"
err=$("$exe" list 'L2/*Cnv*' 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "'L2/\*Cnv\*' matches no task" <<<"$err" && ok || bad "list 'L2/*Cnv*': exit $rc: $err"
err=$("$exe" list L1/10-1 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "bad id range 'L1/10-1'" <<<"$err" && ok || bad "list L1/10-1: exit $rc: $err"
err=$("$exe" list L1/200-300 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "'L1/200-300' matches no task" <<<"$err" && ok || bad "list L1/200-300: exit $rc: $err"
err=$("$exe" list L1/999 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "unknown task 'L1/999'" <<<"$err" && ok || bad "list L1/999: exit $rc: $err"
err=$("$exe" list L1/conv_standard_2d__square_input__square_kernel 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "is ambiguous" <<<"$err" && ok || bad "list of an ambiguous short name: exit $rc: $err"

# one task by id or short name where one task is needed (dump, lint)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$exe" dump L1/19 --dims B=2,D=3 --out "$tmp/d" >/dev/null 2>"$tmp/err" && grep -q '19_ReLU' "$tmp/d/manifest.json" &&
	ok || bad "dump L1/19: $(cat "$tmp/err")"
"$exe" lint smoke/softmax,L1/23 > "$tmp/lint" 2>/dev/null; rc=$?
grep -q 'L1/23_Softmax' "$tmp/lint" && grep -q 'smoke/softmax' "$tmp/lint" && ok ||
	bad "lint smoke/softmax,L1/23: exit $rc: $(head -c 400 "$tmp/lint")"


# eval --tasks in the new forms selects those tasks' candidates (no timing)
cands="$CRUCIBLE_DATADIR/candidates/L1"
"$exe" eval "$cands" --tasks L1/21 --no-timing --out "$tmp/e1" >/dev/null 2>"$tmp/err"; rc=$?
got=$(tail -n +2 "$tmp/e1/results.csv" 2>/dev/null | cut -d, -f2 | sort -u)
[ "$rc" -eq 0 ] && [ "$got" = '"L1/21_Sigmoid"' ] && ok || bad "eval --tasks L1/21: exit $rc, tasks [$got]: $(tail -2 "$tmp/err")"
"$exe" eval "$cands" --tasks 'L1/2?_*' --no-timing --out "$tmp/e2" >/dev/null 2>"$tmp/err"; rc=$?
got=$(tail -n +2 "$tmp/e2/results.csv" 2>/dev/null | cut -d, -f2 | sort -u)
n=$(grep -c . <<<"$got")
[ "$rc" -eq 0 ] && [ "$n" -ge 2 ] && ! grep -qv '^"L1/2[0-9]_' <<<"$got" && ok ||
	bad "eval --tasks 'L1/2?_*': exit $rc, tasks [$got]: $(tail -2 "$tmp/err")"
err=$("$exe" eval "$cands" --tasks 'L1/2?_X*' --no-timing --out "$tmp/e3" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "matches no task" <<<"$err" && ok || bad "eval --tasks 'L1/2?_X*': exit $rc: $err"

# check --task in any form names the canonical task; an unknown one is exit 2
# with a did-you-mean; a candidate's @task in another form is a format_error
# whose detail gives the full name and whose row names no invented task
c="$CRUCIBLE_DATADIR/candidates/L1/21_Sigmoid_plain.c"
got=$("$exe" check "$c" --task l1/21 --json --no-timing 2>/dev/null | grep '"task"')
grep -q '"L1/21_Sigmoid"' <<<"$got" && ok || bad "check --task l1/21: $got"
"$exe" check "$c" --task L1/sigmod --no-timing >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "did you mean 'L1/21_Sigmoid'" "$tmp/err" && ok || bad "check --task L1/sigmod: exit $rc: $(cat "$tmp/err")"
mkdir -p "$tmp/at"
sed 's|^// @task .*|// @task L1/sigmoid|' "$c" > "$tmp/at/x.c"
"$exe" check "$tmp/at/x.c" --json --no-timing > "$tmp/at.json" 2>/dev/null
grep -q '"status": "format_error"' "$tmp/at.json" && grep -q "did you mean 'L1/21_Sigmoid'" "$tmp/at.json" &&
	! grep -q '"task": "L1/sigmoid"' "$tmp/at.json" && ok || bad "@task L1/sigmoid: $(head -c 600 "$tmp/at.json")"

# a spec given but naming nothing (an unset variable in a script) is an
# error, never every task
for s in '' ',' ' , '; do
	"$exe" list "$s" >/dev/null 2>"$tmp/err"; rc=$?
	[ "$rc" -eq 2 ] && grep -q "an empty task spec" "$tmp/err" && ok || bad "list '$s': exit $rc: $(cat "$tmp/err")"
done
"$exe" eval "$cands" --tasks '' --no-timing --out "$tmp/e-empty" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "an empty task spec" "$tmp/err" && ok || bad "eval --tasks '': exit $rc: $(tail -2 "$tmp/err")"

# a KernelBench problem crucible excluded is said to be excluded, with why
"$exe" list L2/80 >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "80_Gemm_Max_Subtract_GELU.py is excluded: degenerate" "$tmp/err" &&
	grep -q "data/excluded/L2.json" "$tmp/err" && ok || bad "list L2/80: exit $rc: $(cat "$tmp/err")"

echo "names_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
