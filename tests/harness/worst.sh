#!/usr/bin/env bash
# check's worst element (docs/VERIFIER.md, "The worst element"): a
# mismatching sample prints one `worst` line whose got and expected differ
# by its abs, at an index within the output, and --json carries the same
# element as a "worst" object; a crash has none (null).
set -uo pipefail
exe="$1"; src="$2"; out="$3"
rm -rf "$out"; mkdir -p "$out"
fail=0; pass=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
cand="$src/data/candidates/smoke/bad_wrong_result.c"
# one seed for both runs: the first failing case is a fixed one, the same in each
"$exe" check "$cand" --no-timing --seed 7 >"$out/text" 2>/dev/null; rc=$?
[ "$rc" -eq 1 ] && ok || no "check exited $rc (want 1)"
grep -q '^status *mismatch$' "$out/text" && ok || no "status is not mismatch: $(cat "$out/text")"
[ "$(grep -c '^worst ' "$out/text")" -eq 1 ] && ok || no "not one worst line: $(cat "$out/text")"
line=$(grep '^worst ' "$out/text")
# worst       forward {N=7} own 'y'[3]: got G expected E abs A rel R
re="^worst +(forward|backward) \{N=([0-9]+)\} ([a-z]+) 'y'\[([0-9]+)\]: got ([^ ]+) expected ([^ ]+) abs ([^ ]+) rel ([^ ]+)$"
if [[ "$line" =~ $re ]]; then
	ok
	n="${BASH_REMATCH[2]}"; idx="${BASH_REMATCH[4]}"
	got="${BASH_REMATCH[5]}"; exp="${BASH_REMATCH[6]}"; abs="${BASH_REMATCH[7]}"
	[ "$idx" -lt "$n" ] && ok || no "index $idx is outside 'y' of $n elements"
	# abs is printed to 3 digits: |got - expected| within 0.1% of it, and not 0
	awk -v g="$got" -v e="$exp" -v a="$abs" 'BEGIN { d = g - e; if (d < 0) d = -d;
		exit !(a > 0 && d > 0 && (d - a) * (d - a) <= (1e-3 * a) * (1e-3 * a)) }' &&
		ok || no "got $got - expected $exp is not abs $abs"
	grep -q "^detail .*{N=$n} ${BASH_REMATCH[3]}: 'y' element $idx: got $got, expected $exp " \
		"$out/text" && ok || no "the detail names another element than '$line': $(grep '^detail' "$out/text")"
else
	no "worst line malformed: '$line'"
	got=x; idx=x
fi
"$exe" check "$cand" --no-timing --seed 7 --json >"$out/json" 2>/dev/null
# keys sorted, two-space indent: the worst object's fields on lines of their own
obj=$(sed -n '/^  "worst": {/,/^  }/p' "$out/json")
for k in stage shape profile output index got expected abs_err rel_err; do
	grep -q "^    \"$k\": " <<<"$obj" && ok || no "worst has no $k: $obj"
done
grep -q "^    \"index\": $idx,\$" <<<"$obj" && ok || no "json index is not the line's $idx: $obj"
jgot=$(sed -n 's/^    "got": \([^,]*\),*$/\1/p' <<<"$obj")
awk -v a="$jgot" -v b="$got" 'BEGIN { d = a - b; exit !(d * d <= 1e-16 * (a * a + 1e-30)) }' &&
	ok || no "json got $jgot is not the line's $got"
"$exe" check "$src/data/candidates/smoke/bad_crash.c" --no-timing --json >"$out/crash" 2>/dev/null
grep -Eq '^  "worst": null,?$' "$out/crash" && ok || no "a crash has a worst element: $(cat "$out/crash")"
"$exe" check "$src/data/candidates/smoke/bad_crash.c" --no-timing >"$out/crash.txt" 2>/dev/null
! grep -q '^worst ' "$out/crash.txt" && ok || no "a crash prints a worst line"
echo "worst: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
