#!/usr/bin/env bash
# libFuzzer targets of tests/fuzz/ (issue 30): configures a clang sanitizer
# build of them (build-fuzz/, apart from build/), makes the seed corpora with
# the project's own generators, replays every kept regression input
# (tests/fuzz/regress/<target>/), then runs each target for a bounded time
# (--jobs targets at a time, one core each; default: the number of CPUs)
# and prints its executions, exec/s and coverage (libFuzzer's cov: and ft:).
# Exits 1 if a regression input or a fuzzing run crashed, leaked, timed out
# or hit a sanitizer report (the input is left in build-fuzz/artifacts/),
# 2 on bad usage. CI runs `scripts/fuzz.sh --seconds 20` (.ci/run).
#
# usage: scripts/fuzz.sh [--seconds N] [--jobs N] [--target NAME] [--build DIR] [--replay-only]
set -euo pipefail
cd "$(dirname "$0")/.."

targets_all="gguf task directives csv"
seconds=45
only=""
build=build-fuzz
replay_only=0
jobs=$(nproc 2>/dev/null || echo 1)
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds="${2:?--seconds N}"; shift 2 ;;
	--jobs) jobs="${2:?--jobs N}"; shift 2 ;;
	--target) only="${2:?--target NAME}"; shift 2 ;;
	--build) build="${2:?--build DIR}"; shift 2 ;;
	--replay-only) replay_only=1; shift ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: --seconds wants a whole number" >&2; exit 2 ;; esac
case "$jobs" in ''|0|*[!0-9]*) echo "fuzz.sh: --jobs wants a whole number above 0" >&2; exit 2 ;; esac
targets=$targets_all
if [ -n "$only" ]; then
	case " $targets_all " in *" $only "*) targets=$only ;;
	*) echo "fuzz.sh: unknown target '$only' (one of: $targets_all)" >&2; exit 2 ;; esac
fi

start=$(date +%s)
./scripts/setup.sh
# what only fuzzing needs, kept out of setup.sh (the README's commands):
# clang and, in Debian 12, libFuzzer's runtime (libclang-rt-14-dev)
fuzz_pkgs="clang libclang-rt-14-dev"
missing=""
for p in $fuzz_pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "fuzz.sh: installing$missing" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

if [ ! -f "$build/build.ninja" ]; then
	setup_log=$(mktemp)
	CC=clang meson setup "$build" -Dfuzz=true -Dcuda=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args=-fsanitize=fuzzer-no-link >"$setup_log" 2>&1 ||
		{ cat "$setup_log" >&2; rm -f "$setup_log"; exit 1; }
	rm -f "$setup_log"
fi
ninja -C "$build" tests/fuzz/seed_gguf $(for t in $targets; do printf 'tests/fuzz/fuzz_%s ' "$t"; done) \
	>"$build/fuzz-build.log" 2>&1 || { tail -40 "$build/fuzz-build.log" >&2; exit 1; }
built=$(date +%s)

# Sanitizer reports are failures: UBSan stops at the first one, so libFuzzer
# sees it as a crash and keeps the input.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
export CRUCIBLE_DATADIR="$PWD/data"
work="$build/fuzz-work"
mkdir -p "$work" "$build/artifacts"

# Seed corpora, made here by the project's own generators (nothing
# downloaded, no binary committed): tiny GGUFs from the decode suite's
# generator; the bundled task files and candidates as they are; the
# report suite's run directories cut into fuzz_csv's form (files joined by
# form feeds: results.csv, samples.csv, run.json, selected.csv, curve.csv).
seeds() {
	local t=$1 d="$work/seed-$1"
	rm -rf "$d"
	mkdir -p "$d"
	case "$t" in
	gguf) "$build/tests/fuzz/seed_gguf" "$d" ;;
	task) d="$PWD/data/tasks" ;;
	directives) d="$PWD/data/candidates" ;;
	csv)
		local n=0 dir f
		for dir in tests/reports/data/*/; do
			n=$((n + 1))
			for f in results.csv samples.csv run.json selected.csv curve.csv; do
				[ -f "$dir$f" ] && head -c 65536 "$dir$f"
				[ "$f" = curve.csv ] || printf '\f'
			done >"$d/dir$n"
		done
		for f in tests/reports/data/*.csv; do
			head -c 65536 "$f" >"$d/$(basename "$f")"
		done
		# a results.csv of several statuses with its samples, in eval's columns
		{
			echo "run_id,task,candidate,sample,backend,device,status,backward,detail,max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,top_p,top_k,seed,turn,source_sha256,noisy"
			for s in ok mismatch timeout degenerate format_error; do
				echo "r,smoke/relu,c_$s.c,0,cpu,x,$s,pass,\"a, \"\"b\"\"\",0,0,10,9,11,15,1.5,1.2,1.8,3,100,200,m,0.7,0.95,40,1,0,a$s,0"
			done
			printf '\f'
			echo "candidate,source_sha256,side,us"
			for i in 0 1 2; do
				echo "c_ok.c,aok,cand,1$i.5"
				echo "c_ok.c,aok,base,2$i.5"
			done
			printf '\f{"command":"eval","machine":{"verdict":"quiet","why":"x"}}'
		} >"$d/made"
		;;
	esac
	echo "$d"
}

# Everything libFuzzer says goes to the log; a failure is its exit status
# or a sanitizer report in the log.
failed_log() {
	grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|SUMMARY: " "$1"
}

status=0
for t in $targets; do
	exe="$build/tests/fuzz/fuzz_$t"
	reg="tests/fuzz/regress/$t"
	if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
		log="$work/$t.replay.log"
		if "$exe" -rss_limit_mb=2048 -timeout=10 "$reg"/* >"$log" 2>&1 && ! failed_log "$log"; then
			echo "fuzz $t: $(ls -A "$reg" | wc -l) regression inputs replayed, none fails"
		else
			echo "fuzz $t: a regression input of $reg fails:" >&2
			grep -E "Running:|ERROR:|runtime error:|SUMMARY:|^    #[0-9] " "$log" | head -30 >&2
			status=1
		fi
	fi
done
if [ "$replay_only" = 1 ]; then
	exit $status
fi

# One target's run, its exit status in $work/$t.rc (none: it did not get
# as far as libFuzzer's exit, which counts as a failure below).
fuzz_one() {
	local t=$1 exe="$build/tests/fuzz/fuzz_$1" corpus="$work/corpus-$1" seed rc=0
	rm -f "$work/$t.rc" "$work/$t.log"
	mkdir -p "$corpus"
	seed=$(seeds "$t")
	"$exe" "$corpus" "$seed" -max_total_time="$seconds" -print_final_stats=1 \
		-rss_limit_mb=2048 -timeout=10 -artifact_prefix="$build/artifacts/$t-" \
		>"$work/$t.log" 2>&1 || rc=$?
	echo "$rc" >"$work/$t.rc"
}

# --jobs targets at a time: each run is one process on one core, so on
# 2 cores two targets fuzz for as long as one did, side by side
running=0
for t in $targets; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
	fuzz_one "$t" &
	running=$((running + 1))
done
wait || true

printf '%-11s %10s %8s %7s %7s %6s  %s\n' target execs exec/s cov ft corpus result
for t in $targets; do
	log="$work/$t.log"
	[ -f "$log" ] || : >"$log"
	rc=$(cat "$work/$t.rc" 2>/dev/null || echo "none")
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E "^#[0-9]+.*cov: " "$log" | tail -1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
	result=ok
	if [ "$rc" != 0 ] || failed_log "$log"; then
		result="FAILED (exit $rc): $(ls -t "$build/artifacts/$t-"* 2>/dev/null | head -1 || true)"
		status=1
	fi
	printf '%-11s %10s %8s %7s %7s %6s  %s\n' "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" \
		"${corp:-?}" "$result"
	if [ "$result" != ok ]; then
		grep -E "ERROR:|runtime error:|SUMMARY:|^    #[0-9] " "$log" | head -30 >&2 || true
		echo "fuzz $t: the whole log is $log; keep the input as a regression input in tests/fuzz/regress/$t/" >&2
	fi
done
end=$(date +%s)
echo "fuzz: build $((built - start)) s, total $((end - start)) s"
exit $status
