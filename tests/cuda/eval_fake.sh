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
#
# The kernels run in the emulation's fiber mode (-DCUDA_EMU_FIBERS, as the
# decoder's parity test does): a block's threads take turns on one thread,
# switched at barriers and warp operations. It is deterministic and much
# faster than a std::thread per CUDA thread (cross_entropy_fast's eval: 22 s
# to 1.4 s; the whole test: about 220 s of CPU to 35), and no sample waits
# for another thread's write (bad_infinite_loop, which never ends, times out
# either way). The thread mode keeps its own tests (cuda_emu_samples,
# fakecuda). The two headers are compiled once, as a precompiled header
# (1.2 s to 0.3 s of CPU a sample).
#
# The fake driver is a copy in the test's own folder: it reads its kernels
# and its device list beside itself, so nothing is shared with another test
# (test_fakecuda writes fakecuda-kernels.so beside the built library) and
# meson may run this one beside others.
#
# Then `--gpus` on two emulated devices (fakecuda-devices beside the
# library): `--gpus 0,1 --jobs 2` over every sample whose kernel names are
# not another's (the kernels file is then a stub that loads one library per
# sample), each with its expected status, both devices used (results.csv
# columns gpu and gpu_uuid), run.json listing both; a timed run of the three
# samples that are their baseline's kernels, on both devices; bad --gpus
# values and models that differ.
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
mkdir -p "$T/lib"
cp "$FAKE" "$T/lib/libfakecuda.so"
FAKE=$T/lib/libfakecuda.so
DEVICES=$T/lib/fakecuda-devices
KERNELS=$T/lib/fakecuda-kernels.so

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

# the emulation and the signatures, compiled once with the samples' flags; a
# compiler that cannot use the precompiled header reads emu.hpp itself
EMU_FLAGS="-std=c++20 -O1 -DCUDA_EMU_FIBERS -fno-delete-null-pointer-checks -fPIC -pthread -fno-gnu-unique"
printf '#include "%s"\n#include "%s"\n' "$SRC/tests/cuda/emu/cuda_emu.hpp" \
	"$SRC/tests/cuda/fakecuda/fakecuda_sig.hpp" >"$T/emu.hpp"
# shellcheck disable=SC2086
"$CXX" $EMU_FLAGS -x c++-header "$T/emu.hpp" -o "$T/emu.hpp.gch" 2>/dev/null || rm -f "$T/emu.hpp.gch"

emu_build() { # FILE.cu -> the emulated driver's kernel library
	# the sample, then each extern "C" kernel's parameter signature
	{ echo "#include \"$1\""
	  grep -o 'extern "C" __global__ void [A-Za-z_][A-Za-z_0-9]*' "$1" | awk '{ print "FAKECUDA_SIG(" $5 ")" }'
	} >"$T/wrap.cc"
	# shellcheck disable=SC2086
	"$CXX" $EMU_FLAGS -shared -Wl,-Bsymbolic -include "$T/emu.hpp" \
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
	if emu_build "$cu"; then
		mkdir -p "$T/klib" && cp "$KERNELS" "$T/klib/$name.so"
	else
		echo "  ($name: no emulated build; $(head -c 200 "$T/emu.log" | tr '\n' ' '))"
	fi
	# the default time cap: timing takes its 10 samples whatever the cap
	timing=--no-timing
	case $name in relu_plain|softmax_fast|layernorm_fast|rowsum_fast|gelu_plain) timing="--time-cap 1" ;; esac
	# the timed exploits turn bad only once timing starts
	case $cu in *exploits-timed-cuda*) timing="--time-cap 1" ;; esac
	# the sample that never ends waits out the budget of its call
	call_timeout=20
	[ "$name" != bad_infinite_loop ] || call_timeout=2
	out=$("$CR" eval --backend cuda --quick $timing --timeout $call_timeout --out "$T/out-$name" "$cu" \
		2>"$T/err") || true
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

# ---- --gpus on two emulated devices ----
fail() { echo "FAIL  $*"; fails=$((fails + 1)); }
printf 'crucible fake GPU (CPU emulation)\ncrucible fake GPU (CPU emulation)\n' >"$DEVICES"
# the samples whose kernels no other chosen sample names (the fast ones, the
# bad ones, then the plain ones); one without an emulated build never
# reaches a device worker, so its names do not count
mkdir -p "$T/gpus"
names=" " libs=""
for cu in "$SRC"/data/candidates/smoke-cuda/*_fast.cu "$SRC"/data/candidates/smoke-cuda/bad_*.cu \
	  "$SRC"/data/candidates/smoke-cuda/*_plain.cu; do
	name=$(basename "$cu" .cu) clash=0
	if [ -f "$T/klib/$name.so" ]; then
		kernels=$(grep -o 'extern "C" __global__ void [A-Za-z_][A-Za-z_0-9]*' "$cu" | awk '{ print $5 }')
		for k in $kernels; do case $names in *" $k "*) clash=1 ;; esac; done
		[ "$clash" = 0 ] || continue
		for k in $kernels; do names="$names$k "; done
		libs="$libs $T/klib/$name.so"
	fi
	cp "$cu" "${cu%.cu}.json" "$T/gpus/"
done
printf 'void fakecuda_stub(void) {}\n' >"$T/stub.c"
# shellcheck disable=SC2086
cc -shared -fPIC "$T/stub.c" -o "$KERNELS" -Wl,--no-as-needed $libs
ng=$(ls "$T"/gpus/*.cu | wc -l)
rc=0
"$CR" eval --backend cuda --gpus 0,1 --jobs 2 --quick --no-timing --timeout 20 --check-expect \
	--out "$T/out-gpus" "$T/gpus" >"$T/gpus.out" 2>"$T/gpus.err" || rc=$?
# the last two columns: gpu, gpu_uuid (every field is quoted)
rows=$(tail -n +2 "$T/out-gpus/results.csv" | wc -l)
used=$(tail -n +2 "$T/out-gpus/results.csv" | sed -E 's/.*,"([0-9]*)","([^"]*)"$/\1 \2/' | sort -u)
uuids=$(grep -c '"uuid": "GPU-fa4ecd00-0000-0000-0000-00000000000[12]"' "$T/out-gpus/run.json" || true)
if [ "$rc" -eq 0 ] && [ "$rows" -eq "$ng" ] && [ "$uuids" -eq 2 ] &&
	printf '%s\n' "$used" | grep -qx '0 GPU-fa4ecd00-0000-0000-0000-000000000001' &&
	printf '%s\n' "$used" | grep -qx '1 GPU-fa4ecd00-0000-0000-0000-000000000002' &&
	[ "$(printf '%s\n' "$used" | wc -l)" -eq 2 ]; then
	st=$(awk 'NR > 1 && $2 ~ /\.cu$/ { print $3 }' "$T/gpus.out" | sort | uniq -c | awk '{ printf "%s %s, ", $1, $2 }')
	echo "ok    --gpus 0,1 --jobs 2: $ng samples, every status as expected (${st%, }), rows on both devices, run.json lists both"
else
	fail "--gpus 0,1 --jobs 2: exit $rc, $rows rows of $ng, devices used: $(printf '%s' "$used" | tr '\n' ';'), run.json uuids $uuids"
	grep UNEXPECTED -A1 "$T/gpus.out" | head -20
	tail -5 "$T/gpus.err"
fi
# timed on both devices: the samples whose kernels are their baseline's
mkdir -p "$T/gpus-timed"
for name in softmax_fast layernorm_fast rowsum_fast; do
	cp "$SRC/data/candidates/smoke-cuda/$name.cu" "$SRC/data/candidates/smoke-cuda/$name.json" "$T/gpus-timed/"
done
rc=0
"$CR" eval --backend cuda --gpus 0,1 --jobs 2 --quick --time-cap 1 --timeout 20 --check-expect \
	--out "$T/out-gpus-timed" "$T/gpus-timed" >"$T/gpus-timed.out" 2>"$T/gpus-timed.err" || rc=$?
timed=$(grep -c 'timed by CUDA events' "$T/out-gpus-timed/results.csv" || true)
devs=$(tail -n +2 "$T/out-gpus-timed/results.csv" | sed -E 's/.*,"([0-9]*)","([^"]*)"$/\1/' | sort -u | tr '\n' ' ')
if [ "$rc" -eq 0 ] && [ "$timed" -eq 3 ] && [ "$devs" = "0 1 " ]; then
	echo "ok    --gpus 0,1 --jobs 2, timed: 3 samples timed by events on devices $devs"
else
	fail "--gpus 0,1 --jobs 2, timed: exit $rc, $timed timed by events, devices '$devs'"
	tail -5 "$T/gpus-timed.out" "$T/gpus-timed.err"
fi
# bad values: exit 2 naming the value
cu="$SRC/data/candidates/smoke-cuda/relu_fast.cu"
for bad in 5 0,0 x 1, -1; do
	rc=0
	"$CR" eval --backend cuda --gpus "$bad" --no-timing --out "$T/out-bad" "$cu" >/dev/null 2>"$T/err-bad" || rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "--gpus.*$bad" "$T/err-bad"; then
		echo "ok    --gpus $bad: exit 2: $(head -1 "$T/err-bad")"
	else
		fail "--gpus $bad: exit $rc: $(cat "$T/err-bad")"
	fi
done
rc=0
"$CR" eval --backend cpu --gpus 0 --no-timing --out "$T/out-bad" "$SRC/data/candidates/smoke/relu_plain.c" \
	>/dev/null 2>"$T/err-bad" || rc=$?
[ "$rc" -eq 2 ] && grep -q -- '--gpus' "$T/err-bad" && echo "ok    --gpus on the cpu backend: exit 2" ||
	fail "--gpus on the cpu backend: exit $rc: $(cat "$T/err-bad")"
rc=0
"$CR" eval --backend cuda --gpus 0,1 --jobs 1 --no-timing --out "$T/out-bad" "$cu" >/dev/null 2>"$T/err-bad" || rc=$?
[ "$rc" -eq 2 ] && echo "ok    --gpus 0,1 --jobs 1: exit 2: $(head -1 "$T/err-bad")" ||
	fail "--gpus 0,1 --jobs 1: exit $rc: $(cat "$T/err-bad")"
# models that differ: refused unless --gpus lists them; then each row names its device
printf 'crucible fake GPU (CPU emulation)\ncrucible fake GPU B (CPU emulation)\n' >"$DEVICES"
rc=0
"$CR" eval --backend cuda --no-timing --out "$T/out-mixed" "$cu" >/dev/null 2>"$T/err-mixed" || rc=$?
[ "$rc" -eq 2 ] && grep -q 'different models' "$T/err-mixed" &&
	echo "ok    two models, no --gpus: exit 2: $(head -c 120 "$T/err-mixed")" ||
	fail "two models, no --gpus: exit $rc: $(cat "$T/err-mixed")"
mkdir -p "$T/mixed"
cp "$T"/gpus/relu_fast.* "$T"/gpus/gelu_fast.* "$T/mixed/"
rc=0
"$CR" eval --backend cuda --gpus 0,1 --jobs 2 --quick --no-timing --timeout 20 --check-expect \
	--out "$T/out-mixed" "$T/mixed" >/dev/null 2>"$T/err-mixed" || rc=$?
models=$(grep -c '"name": "crucible fake GPU' "$T/out-mixed/run.json" || true)
if [ "$rc" -eq 0 ] && [ "$models" -eq 2 ] && grep -q 'fake GPU B' "$T/out-mixed/run.json" &&
	grep -q '"crucible fake GPU B (CPU emulation) (sm_90' "$T/out-mixed/results.csv" &&
	grep -q '"crucible fake GPU (CPU emulation) (sm_90' "$T/out-mixed/results.csv"; then
	echo "ok    two models listed with --gpus 0,1: run, run.json and the rows name both"
else
	fail "two models listed with --gpus 0,1: exit $rc, $models devices in run.json: $(tail -3 "$T/err-mixed")"
fi
echo "eval_fake: $n samples, $fails failed"
[ "$fails" -eq 0 ]
