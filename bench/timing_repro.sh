#!/usr/bin/env bash
# timing_repro.sh — do the speedups a run reports hold in the next run?
# (issue 29; figures in docs/REPORTS.md "Timing under load").
# Evaluates the bundled smoke samples 4 times, alternating a quiet machine
# and one loaded as a shared CI runner is (a busy core, a memory-bandwidth
# hog, and another crucible eval of the same samples in a loop), then, per
# timed candidate: each run's speedup, whether the row was trusted, and
# whether every trusted figure lies within +-15% of the candidate's median
# trusted figure; and the geometric mean of each run's trusted speedups
# (and of all of them). Prints the load average before each run.
# Usage: bench/timing_repro.sh [path/to/crucible] [path/to/csvq]
#   TIMING_REPRO_RUNS: the run pattern, default "quiet loaded quiet loaded"
set -euo pipefail
exe=$(realpath "${1:-build/harness/crucible}")
csvq=$(realpath "${2:-build/tests/gen_run/csvq}")
root=$(cd "$(dirname "$0")/.." && pwd)
runs=(${TIMING_REPRO_RUNS:-quiet loaded quiet loaded})
work=$(mktemp -d)
pids=()
stop_load() {
	for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	pids=()
}
trap 'stop_load; rm -rf "$work"' EXIT

cat > "$work/membw.c" <<'HOG'
#include <stdlib.h>
#include <string.h>
int main(void)
{
	size_t n = (size_t)256 << 20;
	char *a = malloc(n), *b = malloc(n);
	if (!a || !b)
		return 1;
	memset(a, 1, n);
	memset(b, 2, n);
	for (;;) {
		memcpy(b, a, n);
		memcpy(a, b, n);
	}
}
HOG
cc -O2 -o "$work/membw" "$work/membw.c"

start_load() {
	setsid bash -c 'while :; do :; done' & pids+=($!)
	setsid "$work/membw" & pids+=($!)
	setsid bash -c "while :; do '$exe' eval '$root/data/candidates/smoke' --out '$work/other' >/dev/null 2>&1; done" &
	pids+=($!)
	sleep 3
}

i=0
for kind in "${runs[@]}"; do
	i=$((i + 1))
	[ "$kind" = loaded ] && start_load
	echo "run $i ($kind): load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"
	"$exe" eval "$root/data/candidates/smoke" --out "$work/r$i" --seed "$i" >/dev/null 2>&1 || true
	stop_load
	paste -d' ' <("$csvq" "$work/r$i/results.csv" candidate) <("$csvq" "$work/r$i/results.csv" speedup) \
		<("$csvq" "$work/r$i/results.csv" noisy) <("$csvq" "$work/r$i/results.csv" time_us) \
		<("$csvq" "$work/r$i/results.csv" baseline_us) |
		awk -v r="$i" '$2 != "" { sub(/.*\//, "", $1); print r, $1, $2, $3, $4, $5 }' >> "$work/all.txt"
done

awk -v nruns="${#runs[@]}" '
{ run = $1; c = $2; s[c, run] = $3; nz[c, run] = $4; tc[c, run] = $5; tb[c, run] = $6; cands[c] = 1 }
END {
	printf "%-24s", "candidate"
	for (r = 1; r <= nruns; r++) printf " %14s", "run " r
	printf "  %s\n", "trusted within +-15% of their median"
	bad = 0; flagged = 0; total = 0; outside = 0
	for (c in cands) {
		n = 0
		for (r = 1; r <= nruns; r++) if ((c, r) in s && nz[c, r] == "0") v[++n] = s[c, r]
		# the median of the trusted figures
		for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++) if (v[b] < v[a]) { t = v[a]; v[a] = v[b]; v[b] = t }
		med = n ? (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : 0
		printf "%-24s", c
		ok = 1
		for (r = 1; r <= nruns; r++) {
			if (!((c, r) in s)) { printf " %14s", "-"; continue }
			total++
			mark = nz[c, r] == "0" ? " " : "*"
			if (nz[c, r] != "0") flagged++
			if (nz[c, r] == "0" && (s[c, r] > 1.15 * med || s[c, r] < med / 1.15)) { ok = 0; outside++ }
			printf " %8.3fx%s%4s", s[c, r], mark, ""
		}
		printf "  %s (%d trusted)\n", n == 0 ? "-" : ok ? "yes" : "NO", n
		if (!ok) bad++
	}
	printf "(* = flagged noisy: not trusted)\n"
	printf "figures: %d, flagged %d, trusted figures outside +-15%% of their median: %d; candidates with any: %d\n", total, flagged, outside, bad
	for (r = 1; r <= nruns; r++) {
		lt = 0; nt = 0; la = 0; na = 0
		for (c in cands) if ((c, r) in s && s[c, r] > 0) {
			la += log(s[c, r]); na++
			if (nz[c, r] == "0") { lt += log(s[c, r]); nt++ }
		}
		printf "run %d: geometric mean of trusted speedups %.3f over %d rows (all rows: %.3f over %d)\n", r,
			nt ? exp(lt / nt) : 0, nt, na ? exp(la / na) : 0, na
	}
}' "$work/all.txt"
