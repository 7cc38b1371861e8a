#!/usr/bin/env bash
# Neighbours (issue 28, item 3): a worker holding 510 threads harms no other
# worker. Every worker runs as uid nobody, and RLIMIT_NPROC counts a uid's
# tasks machine-wide, so under a per-uid quota the honest OpenMP samples of
# other evals failed to start threads (runtime_error, eval exiting 0). Here
# each worker has its own quota (its control group's pids.max): three evals
# of the honest OpenMP samples run at once beside the hoarder, and every row
# must be ok. The uid's tasks are counted while they run: the test fails
# unless they exceeded 512 (the old quota) at some moment.
set -euo pipefail
exe="$1"; out="$2"
d="$CRUCIBLE_DATADIR/candidates"
rm -rf "$out"; mkdir -p "$out/honest"
for f in relu_fast softmax_fast rowsum_fast gelu_fast layernorm_fast; do
	cp "$d/smoke/$f.c" "$d/smoke/$f.json" "$out/honest/"
done
# without a control group per worker (crucible not root, no cgroupfs) the
# quota is the per-uid RLIMIT_NPROC this test shows failing: say so, skip
"$exe" eval "$d/smoke/relu_plain.c" --no-timing --out "$out/probe" >/dev/null 2>&1 || true
if grep -q '"containment": "none' "$out/probe/run.json" 2>/dev/null; then
	echo "SKIP: no control groups here ($(grep -o '"containment": "[^"]*' "$out/probe/run.json"))"
	exit 77
fi
nobody_tasks() { { ps -L -u nobody -o lwp= 2>/dev/null || true; } | wc -l; }
"$exe" eval "$d/exploits/r3_thread_hoard.c" --no-timing --check-expect --timeout 5 --out "$out/hoard" \
	>"$out/hoard.log" 2>&1 &
hoard=$!
for _ in $(seq 1 300); do
	[ "$(nobody_tasks)" -ge 500 ] && break
	sleep 0.1
done
held=$(nobody_tasks)
[ "$held" -ge 500 ] || { echo "FAIL: the neighbour never held its threads ($held tasks of nobody)"; cat "$out/hoard.log"; exit 1; }
pids=()
for i in 1 2 3; do
	"$exe" eval "$out/honest" --no-timing --check-expect --timeout 10 --out "$out/eval$i" \
		>"$out/eval$i.log" 2>&1 &
	pids+=($!)
done
peak=$held
while kill -0 "${pids[0]}" 2>/dev/null || kill -0 "${pids[1]}" 2>/dev/null || kill -0 "${pids[2]}" 2>/dev/null; do
	n=$(nobody_tasks); [ "$n" -gt "$peak" ] && peak=$n
	sleep 0.2
done
fail=0
for i in 1 2 3; do
	if ! wait "${pids[$((i - 1))]}"; then
		echo "FAIL: honest eval $i beside the neighbour:"; grep -- "UNEXPECTED\|expected status" "$out/eval$i.log" || tail -5 "$out/eval$i.log"
		fail=1
	fi
done
still=$(nobody_tasks)
wait "$hoard" || { echo "FAIL: the neighbour's own eval:"; tail -5 "$out/hoard.log"; fail=1; }
echo "tasks of uid nobody: $held when the honest evals started, peak $peak, $still when they ended"
# above 512 the old per-uid quota (RLIMIT_NPROC 512) would have refused
# the honest workers their threads: the overlap this test is about happened
[ "$peak" -gt 512 ] || { echo "FAIL: the honest evals never ran beside the full neighbour (peak $peak tasks)"; fail=1; }
[ "$fail" -eq 0 ] || exit 1
echo "1 passed, 0 failed"
