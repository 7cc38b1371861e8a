#!/usr/bin/env bash
# Benchmark: (1) wall time to evaluate the whole bundled smoke batch with
# timing, as `crucible eval` does by default; (2) the cost of full
# verification of one candidate (all shapes × profiles, forward and
# backward, every check; no timing) relative to one plain call of it.
# Usage: bench/smoke_bench.sh [path/to/crucible]
set -euo pipefail
exe="${1:-build/harness/crucible}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
t0=$(date +%s.%N)
"$exe" eval --out "$out/eval" >/dev/null 2>&1 || true
t1=$(date +%s.%N)
n=$(($(wc -l < "$out/eval/results.csv") - 1))
printf 'smoke batch: %d candidates evaluated in %.1f s (target < 60 s) on %d cores\n' \
	"$n" "$(echo "$t1 - $t0" | bc -l)" "$(nproc)"
printf '%-34s %12s %14s %10s\n' candidate "one call us" "verify ms" ratio
# columns: candidate=3 status=7 time_us=12
tail -n +2 "$out/eval/results.csv" | awk -F, '{ gsub(/"/, "") } $7 == "ok" { print $3 "," $12 }' | while IFS=, read -r cand us; do
	s0=$(date +%s.%N)
	"$exe" check --no-timing "$cand" >/dev/null 2>&1 || true
	s1=$(date +%s.%N)
	ms=$(echo "($s1 - $s0) * 1000" | bc -l)
	printf '%-34s %12.1f %14.1f %10.0f\n' "$(basename "$cand")" "$us" "$ms" "$(echo "$ms * 1000 / $us" | bc -l)"
done
