#!/bin/sh
# gate_fake_crucible.sh — stands in for `crucible eval CAND --out DIR [ARGS]` in the
# --confirm tests: writes DIR/results.csv with one noisy, correct row for
# CAND, speedup 0.7 when its name has "slow" in it, else 1.0, times a jitter
# of +-2% ($RANDOM-free: from the process id, so re-runs differ). With
# GATE_FAKE_SAMPLES=1 it also writes DIR/samples.csv: 10 alternating pairs,
# baseline 100 us and candidate 100/speedup us, each with a +-0.5% jitter
# (so the same code is always within 5% and 0.7 always below it).
[ "$1" = eval ] || { echo "gate_fake_crucible: expected eval" >&2; exit 2; }
cand=$2
[ "$3" = --out ] || { echo "gate_fake_crucible: expected --out" >&2; exit 2; }
dir=$4
shift 4
[ "$1" = --time-cap ] && [ "$2" = 0.3 ] || { echo "gate_fake_crucible: eval args not passed" >&2; exit 2; }
mkdir -p "$dir"
base=1.0
case "$cand" in *slow*) base=0.7 ;; esac
sp=$(awk -v b="$base" -v s="$$" 'BEGIN { srand(s); printf "%.4f", b * (0.98 + 0.04 * rand()) }')
name=$(basename "$cand" .c)
{
	echo "run_id,task,candidate,sample,backend,device,status,backward,detail,max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,top_p,top_k,seed,turn,source_sha256,noisy"
	echo "r,t/x,$cand,0,cpu,x,ok,none,,,,,,,,$sp,,,5,,,m,,,,,,sha-$name,1"
} > "$dir/results.csv"
[ "${GATE_FAKE_SAMPLES:-0}" = 1 ] || exit 0
awk -v b="$base" -v s="$$" -v c="$cand" -v h="sha-$name" 'BEGIN {
	srand(s + 1)
	print "candidate,source_sha256,side,us"
	for (k = 0; k < 10; k++) {
		printf "%s,%s,cand,%.4f\n", c, h, 100 / b * (0.995 + 0.01 * rand())
		printf "%s,%s,base,%.4f\n", c, h, 100 * (0.995 + 0.01 * rand())
	}
}' > "$dir/samples.csv"
