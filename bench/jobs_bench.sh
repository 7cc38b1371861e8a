#!/usr/bin/env bash
# jobs_bench.sh — verification throughput of `crucible eval --jobs` (issue 14).
# Runs the L1 samples (data/candidates/L1) under --jobs 1 and --jobs 2 in
# each --job-timing mode, interleaved (every round runs each configuration
# once, in a rotated order), and prints per configuration: candidates per
# minute, the ratio to --jobs 1 of the same round (median over rounds), and
# the median relative width of the timing intervals ((hi - lo) / speedup over
# the timed ok rows). Then where a candidate's time goes (run.json "cost" of
# the --jobs 1 runs), and the reference cache on N copies of one candidate
# (cache on and off, interleaved, correctness only).
# Usage: bench/jobs_bench.sh CRUCIBLE CSVQ [ROUNDS]   (ROUNDS default 2)
set -euo pipefail
exe=$(realpath "$1")
csvq=$(realpath "$2")
rounds=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
l1=$root/data/candidates/L1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(j1 j2-exclusive j2-serial j2-pinned)

args_of() {
	case $1 in
	j1) echo "--jobs 1" ;;
	j2-*) echo "--jobs 2 --job-timing ${1#j2-}" ;;
	esac
}
now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "nan"; exit }
	print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

widths() { # widths DIR: the relative interval widths of the timed ok rows
	paste -d' ' <("$csvq" "$1/results.csv" status) <("$csvq" "$1/results.csv" speedup) \
		<("$csvq" "$1/results.csv" speedup_lo) <("$csvq" "$1/results.csv" speedup_hi) |
		awk '$1 == "ok" && $2 != "" && $3 != "" && $4 != "" && $2 > 0 { print ($4 - $3) / $2 }'
}

n=$(find "$l1" -name '*.c' | wc -l)
echo "jobs_bench: $n L1 samples, $rounds round(s), $(nproc) core(s), load at start $(load)"
for r in $(seq 1 "$rounds"); do
	for k in $(seq 0 $((${#configs[@]} - 1))); do
		c=${configs[$(((k + r - 1) % ${#configs[@]}))]}
		out=$work/$c-$r
		t0=$(now)
		# shellcheck disable=SC2046
		if ! "$exe" eval "$l1" $(args_of "$c") --seed 1 --out "$out" >"$out.log" 2>&1; then
			echo "jobs_bench: crucible eval ($c) failed:" >&2
			tail -5 "$out.log" >&2
			exit 2
		fi
		t1=$(now)
		awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.4f\n", 60 * n / (b - a) }' \
			>"$work/$c-$r.cpm"
		widths "$out" >"$work/$c-$r.w"
		printf '  round %d %-13s %6.1f candidates/min (load %s)\n' "$r" "$c" \
			"$(cat "$work/$c-$r.cpm")" "$(load)"
	done
done

echo
printf '%-13s %16s %18s %22s\n' config "candidates/min" "ratio to --jobs 1" "median interval width"
for c in "${configs[@]}"; do
	cpm=$(cat "$work"/$c-*.cpm | median)
	ratio=$(for r in $(seq 1 "$rounds"); do
		awk -v a="$(cat "$work/$c-$r.cpm")" -v b="$(cat "$work/j1-$r.cpm")" 'BEGIN { print a / b }'
	done | median)
	w=$(cat "$work"/$c-*.w | median)
	printf '%-13s %16.1f %18.2f %22.3f\n' "$c" "$cpm" "$ratio" "$w"
done

echo
echo "where a candidate's time goes (--jobs 1, run.json \"cost\", mean per candidate):"
for r in $(seq 1 "$rounds"); do
	j=$work/j1-$r/run.json
	get() { grep -o "\"$1\": [0-9.e+-]*" "$j" | head -1 | awk '{ print $2 }'; }
	awk -v n="$(get candidates)" -v v="$(get verify_s)" -v p="$(get prepare_s)" \
		-v s="$(get stages_s)" -v c="$(get cases_s)" -v w="$(get worker_start_s)" \
		-v t="$(get timing_s)" -v cr="$(get cases_reused)" -v cc="$(get cases_computed)" -v r="$r" \
		'BEGIN { printf "  round %d: %.2f s: bind+compile %.2f, cases (inputs, reference, baseline) %.2f " \
			"(%d of %d reused), worker starts %.2f, calls+checks %.2f, timing %.2f\n", r, v / n, p / n,
			c / n, cr, cr + cc, w / n, (s - c - w) / n, t / n }'
done

echo
copies=4
mkdir -p "$work/copies"
for i in $(seq 1 $copies); do
	cp "$l1/100_HingeLoss_plain.c" "$work/copies/h$i.c"
done
echo "reference cache: $copies copies of L1/100_HingeLoss_plain.c, --jobs 1 --no-timing:"
for r in $(seq 1 "$rounds"); do
	for mode in on off; do
		mb=""
		[ $mode = off ] && mb=0
		t0=$(now)
		CRUCIBLE_REF_CACHE_MB=$mb "$exe" eval "$work/copies" --jobs 1 --no-timing --seed 1 \
			--out "$work/cache-$mode-$r" >/dev/null 2>&1
		t1=$(now)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$work/cache-$mode-$r.s"
	done
	printf '  round %d: cache on %.1f s, off %.1f s\n' "$r" "$(cat "$work/cache-on-$r.s")" \
		"$(cat "$work/cache-off-$r.s")"
done
ratio=$(for r in $(seq 1 "$rounds"); do
	awk -v a="$(cat "$work/cache-off-$r.s")" -v b="$(cat "$work/cache-on-$r.s")" 'BEGIN { print a / b }'
done | median)
echo "  off / on (median over rounds): $ratio"
echo "jobs_bench: load at end $(load)"
