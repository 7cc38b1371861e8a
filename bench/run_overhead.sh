#!/usr/bin/env bash
# The overhead of `crucible run`'s loop per candidate: wall time not spent
# verifying or waiting for the generator (files with fsync, rows, curve,
# selection). A replayed best-of-N over copies of two completions, so the
# generator costs nothing; verification with --no-timing.
set -euo pipefail
exe="$1"; n="${2:-64}"
src="$(cd "$(dirname "$0")/.." && pwd)/tests/gen_run/replay/cand/smoke/relu"
work=$(mktemp -d /tmp/crucible-bench-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/replay/cand/smoke/relu"
for i in $(seq 0 $((n - 1))); do
	if [ $((i % 2)) -eq 0 ]; then cp "$src/s0.txt" "$work/replay/cand/smoke/relu/s$i.txt"
	else cp "$src/s2.txt" "$work/replay/cand/smoke/relu/s$i.txt"; fi
done
for strategy in best-of-n self-consistency; do
	"$exe" run --strategy "$strategy" --n "$n" --replay "$work/replay" --task smoke/relu --no-timing \
		--quick --out "$work/$strategy" 2>"$work/$strategy.err" >/dev/null
	echo "run_overhead $strategy n=$n: $(grep 'loop overhead' "$work/$strategy.err" | sed 's/^run: //')"
done
echo "run_overhead: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
