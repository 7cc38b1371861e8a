#!/bin/sh
# gpu-check.sh — for the GPU machine: builds the cuda tests (or reuses a
# build dir given as $1 whose source dir is this checkout), runs the NVRTC
# compile tests and the `cuda` suite, and prints the figures (device, clocks,
# sample verdicts, event-timed spread, CUPTI vs events). A few minutes.
#   scripts/gpu-check.sh [BUILD_DIR]
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
if [ -f "$B/build.ninja" ] && ! grep -q "$(pwd)" "$B/build.ninja" 2>/dev/null; then
	echo "gpu-check: $B was configured for another checkout; using build-gpu-fresh" >&2
	B=build-gpu-fresh
fi
[ -f "$B/build.ninja" ] || meson setup "$B" -Dcuda=enabled >/dev/null
ninja -C "$B" -j"$(nproc)" tests/cuda/test_cuda_compile tests/cuda/test_cuda_run >/dev/null
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader || true
echo "== NVRTC compile tests (suite harness)"
"$B/tests/cuda/test_cuda_compile" 2>&1 | tail -4
echo "== cuda suite"
rc=0
"$B/tests/cuda/test_cuda_run" || rc=$?
case $rc in
0) echo "gpu-check: cuda suite passed" ;;
77) echo "gpu-check: cuda suite SKIPPED (no usable GPU)"; exit 77 ;;
*) echo "gpu-check: cuda suite FAILED (exit $rc)"; exit 1 ;;
esac
