#!/bin/sh
# eval_fake.sh — `crucible eval --backend cuda` end to end on a machine
# without a GPU: the emulated driver (tests/cuda/fakecuda, CRUCIBLE_LIBCUDA)
# runs each CUDA sample's kernels on the CPU (tests/cuda/emu/cuda_emu.hpp),
# so the whole launch path runs: NVRTC compile, launch table, the cuda
# worker, parameters, copies, guards, poison, input checks, verdicts, and
# the device-timed loop against the GPU baseline (CUDA events; no CUPTI).
#
# Every sample must get the status its sidecar expects. The tasks are the
# smoke set with the GPU and cpu bench shapes shrunk to their largest check
# shape (emulated threads are slow); the check shapes are unchanged.
# Timing runs for samples whose kernels are the baseline's own (the
# emulated driver loads one kernel library at a time).
#   eval_fake.sh CRUCIBLE LIBFAKECUDA SRC_ROOT
# Exits 77 (skip) without a C++20 compiler or off x86-64.
set -eu
CR=$1 FAKE=$2 SRC=$3
CXX=${CXX:-c++}
[ "$(uname -m)" = x86_64 ] || { echo "skip: the emulation is x86-64 only"; exit 77; }
T=$(mktemp -d /tmp/crucible-evalfake.XXXXXX)
trap 'rm -rf "$T"' EXIT
printf 'int main(){}\n' >"$T/probe.cc"
"$CXX" -std=c++20 -x c++ "$T/probe.cc" -o "$T/probe" 2>/dev/null || { echo "skip: no C++20 compiler"; exit 77; }
KERNELS=$(dirname "$FAKE")/fakecuda-kernels.so

# the data dir: smoke tasks with small bench shapes, the GPU baselines
mkdir -p "$T/data/tasks/smoke" "$T/data/baselines"
cp -rL "$SRC/data/baselines/cuda" "$T/data/baselines/"
# gelu without a baseline: timed alone (no speedup), which must say so
rm "$T/data/baselines/cuda/smoke/gelu.cu"
for f in "$SRC"/data/tasks/smoke/*.json; do
	last=$(grep '"check_dims"' "$f" | sed -E 's/.*(\{[^{}]*\})\],?$/\1/')
	sed -E "s/^  \"dims\": .*/  \"dims\": $last,/; s/^  \"cpu_dims\": .*/  \"cpu_dims\": $last,/" "$f" \
		>"$T/data/tasks/smoke/$(basename "$f")"
	grep -q "\"dims\": $last" "$T/data/tasks/smoke/$(basename "$f")" || { echo "cannot shrink $f"; exit 1; }
done

emu_build() { # FILE.cu -> the emulated driver's kernel library
	# the sample, then each extern "C" kernel's parameter signature
	{ echo "#include \"$1\""
	  grep -o 'extern "C" __global__ void [A-Za-z_][A-Za-z_0-9]*' "$1" | awk '{ print "FAKECUDA_SIG(" $5 ")" }'
	} >"$T/wrap.cc"
	"$CXX" -std=c++20 -O1 -fno-delete-null-pointer-checks -fPIC -shared -pthread -fno-gnu-unique \
		-include "$SRC/tests/cuda/emu/cuda_emu.hpp" \
		-include "$SRC/tests/cuda/fakecuda/fakecuda_sig.hpp" \
		-x c++ "$T/wrap.cc" -o "$T/k.so" 2>"$T/emu.log" || return 1
	mv "$T/k.so" "$KERNELS"
}

export CRUCIBLE_LIBCUDA="$FAKE" CRUCIBLE_DATADIR="$T/data"
fails=0 n=0
for cu in "$SRC"/data/candidates/smoke-cuda/*.cu "$SRC"/data/candidates/exploits-timed-cuda/*.cu; do
	name=$(basename "$cu" .cu)
	expect=$(sed -E 's/.*"expect": *"([a-z_]+)".*/\1/' "${cu%.cu}.json")
	rm -f "$KERNELS"
	# samples that never reach the worker need no kernels
	emu_build "$cu" || echo "  ($name: no emulated build; $(head -c 200 "$T/emu.log" | tr '\n' ' '))"
	timing=--no-timing
	case $name in relu_plain|softmax_fast|layernorm_fast|rowsum_fast|gelu_plain) timing="--time-cap 3" ;; esac
	# the timed exploits turn bad only once timing starts
	case $cu in *exploits-timed-cuda*) timing="--time-cap 3" ;; esac
	out=$("$CR" eval --backend cuda --quick $timing --timeout 20 --out "$T/out-$name" "$cu" 2>"$T/err") || true
	got=$(printf '%s\n' "$out" | awk -v c="$name.cu" '$2 == c { print $3; exit }')
	n=$((n + 1))
	if [ "$got" = "$expect" ]; then
		line=$(printf '%s\n' "$out" | grep -F "$name.cu" | head -1 | cut -c1-150)
		echo "ok    $name: $got   $line"
	else
		echo "FAIL  $name: expected $expect, got '${got:-nothing}'"
		printf '%s\n' "$out" | head -5
		tail -5 "$T/err"
		fails=$((fails + 1))
	fi
	case $expect:$timing in ok:--time-cap*)
		# the timed samples: a speedup against the baseline, by events
		if ! grep -q 'timed by CUDA events' "$T/out-$name/results.csv"; then
			echo "FAIL  $name: not timed by events"; fails=$((fails + 1))
		fi
		if [ "$name" = gelu_plain ] && ! grep -q 'no GPU baseline' "$T/out-$name/results.csv"; then
			echo "FAIL  $name: timed without a baseline, but the row does not say so"; fails=$((fails + 1))
		fi ;;
	esac
done
# --lock-clocks where NVML cannot lock (the emulated driver has no NVML):
# the run is refused, exit 3, said in one line; nothing is evaluated
cu="$SRC/data/candidates/smoke-cuda/relu_plain.cu"
if ! command -v nvidia-smi >/dev/null 2>&1; then
	rc=0
	"$CR" eval --backend cuda --lock-clocks --no-timing --out "$T/out-lock" "$cu" >/dev/null 2>"$T/err-lock" || rc=$?
	if [ "$rc" -eq 3 ] && grep -q -- '--lock-clocks:.*not run' "$T/err-lock" && ! [ -e "$T/out-lock/results.csv" ]; then
		echo "ok    --lock-clocks without NVML: exit 3: $(head -1 "$T/err-lock")"
	else
		echo "FAIL  --lock-clocks without NVML: exit $rc: $(cat "$T/err-lock")"; fails=$((fails + 1))
	fi
fi
echo "eval_fake: $n samples, $fails failed"
[ "$fails" -eq 0 ]
