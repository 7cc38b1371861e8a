#!/usr/bin/env bash
# A baseline worker that fails fails that candidate's row only (issue 17
# item 5). smoke/relu's task file is removed once the candidate's
# correctness worker runs (the orchestrator has loaded the task by then;
# the candidate sleeps 1 s in its first call to leave time), so relu's
# baseline worker, which loads the task itself, cannot start. Its row must
# be runtime_error naming the baseline; the next candidate (rowsum) must
# still be timed and ok; eval must exit 0.
set -euo pipefail
exe="$1"; src="$2"; out="$3"
rm -rf "$out"
mkdir -p "$out/data/tasks/smoke" "$out/cands"
cp "$src/data/tasks/smoke/relu.json" "$src/data/tasks/smoke/rowsum.json" "$out/data/tasks/smoke/"
cat > "$out/cands/a_relu_sleepy.c" <<'CAND'
// honest relu that sleeps 1 s in its first call
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>
#include <time.h>
static int calls;
void relu_fwd(const float *x, float *y, int64_t n)
{
	if (calls++ == 0) {
		struct timespec ts = { 1, 0 };
		nanosleep(&ts, 0);
	}
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}
CAND
cp "$src/data/candidates/smoke/rowsum_fast.c" "$out/cands/b_rowsum_fast.c"
# --jobs 1: the candidates one after the other, in file order, with their
# workers children of this eval (pgrep -P below)
CRUCIBLE_DATADIR="$out/data" "$exe" eval "$out/cands" --jobs 1 --backend cpu --time-cap 0.3 --timeout 5 \
	--out "$out/res" >"$out/log" 2>&1 &
pid=$!
removed=0
for _ in $(seq 1 600); do
	if pgrep -P "$pid" -f '__worker cand' >/dev/null; then
		rm -f "$out/data/tasks/smoke/relu.json"
		removed=1
		break
	fi
	sleep 0.05
done
rc=0
wait "$pid" || rc=$?
if [ "$removed" != 1 ]; then
	echo "FAIL: never saw the candidate's worker"; cat "$out/log"; exit 1
fi
if [ "$rc" != 0 ]; then
	echo "FAIL: eval exited $rc (a baseline failure must not end the batch)"; cat "$out/log"; exit 1
fi
relu=$(grep 'a_relu_sleepy' "$out/res/results.csv" || true)
rowsum=$(grep 'b_rowsum_fast' "$out/res/results.csv" || true)
echo "relu:   $relu"
echo "rowsum: $rowsum"
case "$relu" in
*runtime_error*"the baseline worker"*) ;;
*) echo "FAIL: relu's row is not a runtime_error naming the baseline"; exit 1 ;;
esac
case "$rowsum" in
*'"ok"'*) ;;
*) echo "FAIL: rowsum's row is not ok (the batch did not go on)"; exit 1 ;;
esac
