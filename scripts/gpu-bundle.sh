#!/bin/sh
# gpu-bundle.sh — builds crucible and the cuda test here and packs them with
# the shared libraries they need into a folder that runs on a GPU machine
# which has the NVIDIA driver and the CUDA toolkit but none of Debian's -dev
# or library packages (jansson, libcsv, PCRE2, OpenBLAS, libseccomp): the
# binaries find lib/ beside them through an $ORIGIN rpath, which also
# serves the worker processes (they run with a scrubbed environment, so
# LD_LIBRARY_PATH would not reach them). NVRTC comes from the machine's
# toolkit (/usr/local/cuda/lib64 is on the rpath too); libcuda, CUPTI and
# NVML are dlopened there as everywhere.
#   scripts/gpu-bundle.sh [OUT_DIR]      (default gpu-bundle/, git-ignored)
# Then, on the GPU machine: scripts/gpu-check.sh OUT_DIR
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-gpu-bundle}
B=build-gpu-bundle
if [ ! -f "$B/build.ninja" ]; then
	meson setup "$B" -Dbuildtype=release -Dcuda=enabled \
		-Dc_link_args="-Wl,-rpath,\$ORIGIN/lib:/usr/local/cuda/lib64" >/dev/null
fi
ninja -C "$B" harness/crucible tests/cuda/test_cuda_run tests/decode_cuda/test_be_cuda decode/decode_bench \
	tests/gen_run/mk_tiny >/dev/null
rm -rf "$OUT"
mkdir -p "$OUT/lib"
cp "$B/harness/crucible" "$B/tests/cuda/test_cuda_run" "$B/tests/decode_cuda/test_be_cuda" \
	"$B/decode/decode_bench" "$B/tests/gen_run/mk_tiny" "$OUT/"
# every library they link except the C runtime's and the toolkit's own
for exe in "$OUT/crucible" "$OUT/test_cuda_run" "$OUT/test_be_cuda" "$OUT/decode_bench"; do
	ldd "$exe" | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
	case $(basename "$lib") in
	libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libnvrtc*|libcuda.so*) ;;
	*) cp -L "$lib" "$OUT/lib/" ;;
	esac
done
du -sh "$OUT" | awk '{ print "gpu-bundle: " $2 " is " $1 " (binaries and lib/)" }'
