#!/bin/sh
# gpu-check.sh — the GPU checks in one go, for the GPU machine (a few
# minutes). Prints the figures a note needs:
#   1. the device and its clocks;
#   2. the `cuda` suite (tests/cuda/test_cuda_run.c: samples through the
#      worker, 50 event-timed launches of relu_fast with their relative
#      spread, CUPTI's kernel sum against the events);
#   3. every smoke-cuda sample through `crucible eval --backend cuda`, each
#      against the status its sidecar expects (exit 1 otherwise), timed
#      against the GPU baselines (CUPTI, events as cross-check, roofline);
#   4. the GPU baselines themselves against the double reference on the
#      check shapes;
#   5. the same candidate timed five times over: the spread of its medians;
#   6. `crucible run --backend cuda` on replayed CUDA completions;
#   7. with two devices or more: `eval --gpus` over all of them, a job each
#      (every sample's status, every device used, the speedups per device);
#      skipped, saying so, with one device.
# Usage:
#   scripts/gpu-check.sh BUNDLE   a folder from scripts/gpu-bundle.sh (built
#                                 elsewhere; the machine needs only the
#                                 driver and the CUDA toolkit)
#   scripts/gpu-check.sh [BUILD]  builds here (needs the -dev packages)
# Exit 77 when there is no usable GPU.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
if [ $# -ge 1 ] && [ -x "$1/crucible" ]; then
	CR=$1/crucible RUN=$1/test_cuda_run
else
	B=${1:-build-gpu}
	[ -f "$B/build.ninja" ] || meson setup "$B" -Dbuildtype=release -Dcuda=enabled >/dev/null
	ninja -C "$B" harness/crucible tests/cuda/test_cuda_run >/dev/null
	CR=$B/harness/crucible RUN=$B/tests/cuda/test_cuda_run
fi
export CRUCIBLE_DATADIR="$ROOT/data" CRUCIBLE_SRC_ROOT="$ROOT"
OUT=${OUT:-$(mktemp -d /tmp/crucible-gpucheck.XXXXXX)}
mkdir -p "$OUT"
fail=0

echo "== 1. device"
command -v nvidia-smi >/dev/null &&
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader || true

echo "== 2. cuda suite"
rc=0
"$RUN" || rc=$?
case $rc in
0) echo "gpu-check: cuda suite passed" ;;
77) echo "gpu-check: cuda suite SKIPPED (no usable GPU)"; exit 77 ;;
*) echo "gpu-check: cuda suite FAILED (exit $rc)"; fail=1 ;;
esac

echo "== 3. smoke-cuda samples (expected statuses, timed against the GPU baselines)"
"$CR" eval --backend cuda --time-cap 2 --out "$OUT/samples" || { echo "gpu-check: samples FAILED"; fail=1; }
grep -o '"gpu_clocks": "[^"]*"' "$OUT/samples/run.json" || true

echo "== 3b. timed CUDA exploits (each must be caught)"
"$CR" eval --backend cuda --check-expect --time-cap 2 --out "$OUT/exploits" data/candidates/exploits-timed-cuda ||
	{ echo "gpu-check: a timed exploit was NOT caught"; fail=1; }

echo "== 4. GPU baselines against the double reference (check shapes)"
"$CR" eval --backend cuda --no-timing --out "$OUT/baselines" data/baselines/cuda ||
	{ echo "gpu-check: a baseline FAILED"; fail=1; }

echo "== 5. one candidate timed five times (spread of the medians)"
for i in 1 2 3 4 5; do
	"$CR" check --backend cuda data/candidates/smoke-cuda/relu_fast.cu 2>/dev/null |
		awk '/^time|^speedup|^detail|^achieved/ { printf "  %s", $0 "\n" }'
done
echo "== 6. crucible run on the GPU (replayed CUDA completions: best-of-n, refine)"
"$CR" run --strategy best-of-n --n 3 --backend cuda --replay tests/gen_run/replay-cuda --task smoke/relu \
	--out "$OUT/run-bon" 2>"$OUT/run-bon.err" || { echo "gpu-check: run best-of-n FAILED"; tail -3 "$OUT/run-bon.err"; fail=1; }
grep -E 'selected|loop overhead' "$OUT/run-bon.err" || true
"$CR" run --strategy refine --n 1 --turns 3 --backend cuda --replay tests/gen_run/replay-cuda \
	--task smoke/relu --out "$OUT/run-refine" 2>"$OUT/run-refine.err" || { echo "gpu-check: run refine FAILED"; fail=1; }
echo "== 7. --gpus: the samples on every visible device, a job each"
ndev=$(grep -c '"ordinal":' "$OUT/samples/run.json" 2>/dev/null || true)
ndev=${ndev:-0}
if [ "$ndev" -lt 2 ]; then
	echo "gpu-check: --gpus SKIPPED: $ndev device(s) visible (multi-GPU needs two or more)"
else
	list=$(seq -s, 0 $((ndev - 1)))
	"$CR" eval --backend cuda --gpus "$list" --jobs "$ndev" --check-expect --time-cap 2 \
		--out "$OUT/gpus" data/candidates/smoke-cuda || { echo "gpu-check: --gpus $list FAILED"; fail=1; }
	# the last two columns are gpu and gpu_uuid (every field quoted)
	used=$(tail -n +2 "$OUT/gpus/results.csv" | sed -E 's/.*,"([0-9]*)","[^"]*"$/\1/' | sort -u | wc -l)
	[ "$used" -eq "$ndev" ] && echo "gpu-check: --gpus $list: rows on all $ndev devices" ||
		{ echo "gpu-check: --gpus $list: rows on $used of $ndev devices"; fail=1; }
	# the same candidate on each device alone (same model: speedups within noise)
	for d in $(seq 0 $((ndev - 1))); do
		CUDA_VISIBLE_DEVICES=$d "$CR" check --backend cuda data/candidates/smoke-cuda/relu_fast.cu 2>/dev/null |
			awk -v d="$d" '/^speedup/ { print "  device " d ": " $0 }'
	done
fi
echo "gpu-check: results under $OUT"
[ "$fail" -eq 0 ] && echo "gpu-check: all passed"
exit "$fail"
