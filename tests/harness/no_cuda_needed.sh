#!/usr/bin/env bash
# The binary needs nothing CUDA to start (NVRTC, the driver, CUPTI and NVML
# are all opened at run time), and without NVRTC a run with CUDA candidates
# is an environment error (exit 3) that says so, while CPU candidates still
# evaluate.
# Usage: no_cuda_needed.sh CRUCIBLE OUTDIR
set -euo pipefail
exe="$1"; out="$2"
d="$CRUCIBLE_DATADIR/candidates"
rm -rf "$out"; mkdir -p "$out"
needed=$(readelf -d "$exe" | awk '/NEEDED/ { print $NF }')
if echo "$needed" | grep -E -i 'nvrtc|libcuda|cupti|nvidia|cudart|cublas'; then
	echo "FAIL: the binary links the CUDA libraries above"
	exit 1
fi
rc=0
CRUCIBLE_NVRTC=/nonexistent/libnvrtc.so "$exe" eval --backend cuda --compile-only \
	"$d/smoke-cuda/softmax_fast.cu" --out "$out/cuda" >"$out/cuda.log" 2>&1 || rc=$?
if [ "$rc" -ne 3 ] || ! grep -q "need NVRTC, which could not be opened (/nonexistent/libnvrtc.so" "$out/cuda.log"; then
	echo "FAIL: without NVRTC a CUDA candidate gave exit $rc:"
	cat "$out/cuda.log"
	exit 1
fi
CRUCIBLE_NVRTC=/nonexistent/libnvrtc.so "$exe" eval --no-timing --quick --check-expect \
	"$d/smoke/relu_plain.c" --out "$out/cpu" >"$out/cpu.log" 2>&1 || {
	echo "FAIL: without NVRTC a CPU candidate did not evaluate:"
	cat "$out/cpu.log"
	exit 1
}
echo "NEEDED: $(echo $needed); without NVRTC: exit 3 for CUDA, CPU ok"
