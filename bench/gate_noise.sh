#!/usr/bin/env bash
# gate_noise.sh — benchmark of the gate's decision rule on real, noisy runs
# (issue 11 item 1; figures in docs/REPORTS.md "The 20-run noise test").
# Each iteration evaluates 4 smoke samples twice with different seeds (A, B)
# and gates B against A: any FAIL is a false alarm. It also evaluates a copy
# of smoke/matmul_plain.c whose forward does its work 1.3x (the first 30% of
# the rows are computed twice, with identical results) and gates it against
# A's matmul: a PASS is a missed regression. Every gate runs with
# --confirm N, re-running its suspects through this same crucible binary
# (with samples.csv: rounds until the sequential test decides, at most N).
# Each iteration prints the load average and the rounds each task used.
# Usage: bench/gate_noise.sh [path/to/crucible]
#   GATE_NOISE_ITERS (default 20), GATE_NOISE_CONFIRM (default 8; 0 for no re-runs),
#   GATE_NOISE_CAP (time cap, default 0.3)
set -euo pipefail
exe=$(realpath "${1:-build/harness/crucible}")
root=$(cd "$(dirname "$0")/.." && pwd)
iters=${GATE_NOISE_ITERS:-20}
confirm=${GATE_NOISE_CONFIRM:-8}
cap=${GATE_NOISE_CAP:-0.3}
smoke=$root/data/candidates/smoke
cands=("$smoke/matmul_plain.c" "$smoke/softmax_fast.c" "$smoke/rowsum_plain.c" "$smoke/gelu_fast.c")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# The slowed copy: same results, 1.3x the forward work.
cat > matmul_slow.c <<'SLOW'
// smoke/matmul_plain.c made 30% slower for bench/gate_noise.sh: the forward
// computes rows [0, m) and then rows [0, 0.3 m) again, identically.
// @task smoke/matmul
// @forward mm_fwd(a, b, c, M, K, N)
// @backward mm_bwd(a, b, dc, da, db, M, K, N)
#include <stdint.h>

void mm_fwd(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n)
{
	for (int rep = 0; rep < 2; rep++) {
		int64_t rows = rep ? m * 3 / 10 : m;
		for (int64_t i = 0; i < rows * n; i++)
			c[i] = 0;
		for (int64_t i = 0; i < rows; i++)
			for (int64_t p = 0; p < k; p++)
				for (int64_t j = 0; j < n; j++)
					c[i * n + j] += a[i * k + p] * b[p * n + j];
	}
}

void mm_bwd(const float *a, const float *b, const float *dc, float *da, float *db,
	    int64_t m, int64_t k, int64_t n)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++) {
			float s = 0;
			for (int64_t j = 0; j < n; j++)
				s += dc[i * n + j] * b[p * n + j];
			da[i * k + p] = s;
		}
	for (int64_t p = 0; p < k * n; p++)
		db[p] = 0;
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++)
			for (int64_t j = 0; j < n; j++)
				db[p * n + j] += a[i * k + p] * dc[i * n + j];
}
SLOW

ev() { # ev OUT SEED CANDIDATE...
	local out=$1 seed=$2
	shift 2
	if ! "$exe" eval "$@" --time-cap "$cap" --quick --seed "$seed" --out "$out" >"$out.log" 2>&1; then
		echo "gate_noise: crucible eval failed (see below)" >&2
		cat "$out.log" >&2
		exit 2
	fi
}
gate() { # gate BASE CUR [ARGS]; prints the first line, returns the gate's exit code
	local b=$1 c=$2 rc=0
	shift 2
	local re=()
	[ "$confirm" -gt 0 ] && re=(--confirm "$confirm" --eval-arg=--time-cap --eval-arg="$cap" --eval-arg=--quick)
	"$exe" gate --baseline "$b" --current "$c" "${re[@]}" "$@" --json gate.json >gate.out \
		2>gate.err || rc=$?
	if [ "$rc" -ge 2 ]; then
		echo "gate_noise: crucible gate failed (exit $rc)" >&2
		cat gate.out gate.err >&2
		exit 2
	fi
	return "$rc"
}

rounds() { # the --confirm rounds of each task of the last gate: task=rounds/stop
	jq -r '[.tasks[] | "\(.task | sub("^smoke/"; ""))=\(.reruns)/\(.confirm_stop)"] | join(" ")' gate.json
}

alarms=0 caught=0 samples=no
t0=$(date +%s)
echo "gate_noise: $iters iterations, 4 candidates, --time-cap $cap --quick, --confirm $confirm, $(nproc) cores"
echo "uptime before: $(uptime)"
for i in $(seq 1 "$iters"); do
	rm -rf A B S A.log B.log S.log
	ev A $((2 * i - 1)) "${cands[@]}"
	ev B $((2 * i)) "${cands[@]}"
	ev S $((2 * i)) "$work/matmul_slow.c"
	[ -f A/samples.csv ] && samples=yes
	if gate A/results.csv B/results.csv; then
		noise="pass"
	else
		noise="FALSE ALARM"
		alarms=$((alarms + 1))
	fi
	noise="$noise: $(sed -n 1p gate.out | sed 's/^crucible gate: //'); rounds $(rounds)"
	if gate A/results.csv S/results.csv --tasks smoke/matmul; then
		slow="MISSED"
	else
		slow="caught"
		caught=$((caught + 1))
	fi
	slow="$slow: $(grep '^smoke/matmul ' gate.out | sed 's/  */ /g')"
	printf '%2d  %s load %s\n    same code: %s\n    1.3x matmul: %s\n' "$i" "$(date -u +%H:%M:%S)" \
		"$(cut -d' ' -f1-3 /proc/loadavg)" "$noise" "$slow"
done
t1=$(date +%s)
echo "uptime after: $(uptime)"
if [ "$samples" = yes ]; then
	how="the gate compared per-sample speedups"
else
	how="the gate compared speedup intervals and noisy flags$([ "$confirm" -gt 0 ] && echo ', then per-run speedups of the re-runs')"
fi
echo "samples.csv from eval: $samples ($how)"
printf 'gate_noise: false alarms %d/%d (same code, seeds differ), slowdowns caught %d/%d (1.3x matmul), %d s\n' \
	"$alarms" "$iters" "$caught" "$iters" $((t1 - t0))
