#!/usr/bin/env bash
# crucible serve --model end to end, through the real executable and curl,
# on the decode tests' tiny model: chat completions with n = 4, logprobs and
# token ids equal to `crucible generate --prompt` with the same seed (and
# with "task", to `generate --tasks`); the same answer streamed (text,
# logprobs, usage); 16 concurrent seeded requests each equal to the same
# request alone; usage against the tokens; /v1/completions with token-id
# prompts and legacy logprobs; /tokenize and /detokenize in llama.cpp's and
# vLLM's shapes; bad requests and context overflow (4xx with a message); a
# client that hangs up mid-stream (its sequences cancelled at once); a full
# queue (429, Retry-After); `crucible run --endpoint` against it; SIGTERM;
# a KV cache too small for the batch (preemption) changing no sample.
#   model_server.sh CRUCIBLE MK_TINY
set -uo pipefail
C=$1
MK=$2
command -v curl >/dev/null || { echo "model_server: curl is missing (scripts/setup.sh installs it)"; exit 1; }
command -v jq >/dev/null || { echo "model_server: jq is missing (scripts/setup.sh installs it)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crmodel.XXXXXX")
pid=""
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
n_checks=0
ok() { n_checks=$((n_checks + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$MK" "$tmp/tiny.gguf" || { echo "FAIL: mk_tiny"; exit 1; }
M=$tmp/tiny.gguf
CTX=4096

start() { # start [ARGS...]: the server on a free port, $url set
	rm -f "$tmp/ready"
	"$C" serve --model "$M" --listen 127.0.0.1:0 --ready-file "$tmp/ready" --threads 2 --ctx $CTX \
		--log "$tmp/server.log" "$@" &
	pid=$!
	for _ in $(seq 200); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
	[ -s "$tmp/ready" ] || { echo "FAIL: the server did not start"; cat "$tmp/server.log"; exit 1; }
	url=$(sed 's|/$||' "$tmp/ready")
}
stop() {
	kill -TERM "$pid"
	wait "$pid"
	local rc=$?
	pid=""
	return $rc
}

# post PATH JSON [OUT]: sets $code, the body in $out
post() {
	out=${3:-$tmp/out.json}
	code=$(curl -s -o "$out" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$2" "$url$1")
}
expect() { # expect CODE WHAT [PATTERN]: the status, and a message matching PATTERN
	if [ "$code" != "$1" ]; then
		bad "$2: HTTP $code, expected $1: $(head -c 300 "$out")"
		return 1
	fi
	if [ -n "${3:-}" ] && ! jq -e --arg p "$3" '.error.message | test($p)' "$out" >/dev/null 2>&1; then
		bad "$2: the message does not say '$3': $(head -c 300 "$out")"
		return 1
	fi
	ok
}
metric() { curl -s "$url/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
# together NAME K: requests $tmp/NAME0..K-1.json sent at once, answers in
# $tmp/NAMEconcI.json; $same: how many have the token ids of $tmp/NAMEaloneI.json
together() {
	local cpids="" k a
	for k in $(seq 0 $(($2 - 1))); do
		curl -s -H 'Content-Type: application/json' --data-binary "@$tmp/$1$k.json" "$url/v1/chat/completions" \
			>"$tmp/$1conc$k.json" &
		cpids="$cpids $!"
	done
	wait $cpids
	same=0
	for k in $(seq 0 $(($2 - 1))); do
		a=$(jq -c '.choices[0].token_ids' "$tmp/$1alone$k.json")
		[ -n "$a" ] && [ "$a" != null ] && [ "$a" = "$(jq -c '.choices[0].token_ids' "$tmp/$1conc$k.json")" ] &&
			same=$((same + 1))
	done
}

start --batch 4 --max-queue 12 --name tiny --drain 1
PROMPT="Write a kernel that adds two vectors."

# ---- the routes that describe the server ----
code=$(curl -s -o "$tmp/h.json" -w '%{http_code}' "$url/health")
[ "$code" = 200 ] && jq -e '.status == "ok"' "$tmp/h.json" >/dev/null && ok || bad "/health: $code $(cat "$tmp/h.json")"
curl -s "$url/v1/models" >"$tmp/m.json"
jq -e '.data[0].id == "tiny" and .data[0].max_model_len == '$CTX "$tmp/m.json" >/dev/null && ok ||
	bad "/v1/models: $(cat "$tmp/m.json")"
[ "$(curl -s "$url/models/tiny" | jq -r .id)" = tiny ] && ok || bad "/models/tiny (without /v1)"

# ---- n = 4 with logprobs and token ids, against crucible generate ----
chat() { # chat SEED N MAXTOK [EXTRA-JSON]: the request body
	jq -nc --arg p "$PROMPT" --argjson seed "$1" --argjson n "$2" --argjson mt "$3" --argjson x "${4:-{\}}" \
		'{model: "tiny", messages: [{role: "user", content: $p}], n: $n, seed: $seed,
		  temperature: 0.9, top_p: 0.95, max_tokens: $mt, logprobs: true, top_logprobs: 3,
		  return_token_ids: true} + $x'
}
post /v1/chat/completions "$(chat 7 4 24)" "$tmp/c4.json"
expect 200 "chat n=4"
"$C" generate --model "$M" --prompt "$PROMPT" --seed 7 --n 4 --temperature 0.9 --top-p 0.95 --max-tokens 24 \
	--threads 2 --out "$tmp/gen" 2>"$tmp/gen.err" || bad "generate --prompt failed: $(tail -3 "$tmp/gen.err")"
for i in 0 1 2 3; do
	s=$(jq -c ".choices[$i].token_ids" "$tmp/c4.json")
	g=$(jq -c '.token_ids' "$tmp/gen/prompt_s$i.json" 2>/dev/null)
	[ -n "$s" ] && [ "$s" = "$g" ] && ok || bad "choice $i: tokens $s, generate's $g"
	# the text is generate's .txt
	jq -j ".choices[$i].message.content" "$tmp/c4.json" >"$tmp/c4_$i.txt"
	# the text is generate's. The tiny model writes bytes that are not UTF-8,
	# which JSON carries as U+FFFD (one per maximal ill-formed subpart, as
	# Python decodes; jq -R differs on overlong forms): such a text is
	# compared with the server's reading of generate's own tokens
	if iconv -f UTF-8 -t UTF-8 "$tmp/gen/prompt_s$i.txt" >/dev/null 2>&1; then
		want=$(jq -Rs . "$tmp/gen/prompt_s$i.txt")
	else
		post /detokenize "$(jq -c '{tokens: (if .finish_reason == "eog" then .token_ids[:-1] else .token_ids end)}' \
			"$tmp/gen/prompt_s$i.json")" "$tmp/detok.json"
		want=$(jq .content "$tmp/detok.json")
	fi
	[ "$(jq ".choices[$i].message.content" "$tmp/c4.json")" = "$want" ] && ok ||
		bad "choice $i: text differs from generate's"
	# one logprob entry a token, each with 3 alternatives; per-choice count
	jq -e ".choices[$i] | (.logprobs.content | length) == (.token_ids | length) and
		(.logprobs.content | all(.top_logprobs | length == 3)) and
		(.logprobs.content | all(.logprob <= 0)) and .completion_tokens == (.token_ids | length)" \
		"$tmp/c4.json" >/dev/null && ok || bad "choice $i: logprobs or count do not match the tokens"
done
jq -e '.usage.completion_tokens == ([.choices[].token_ids | length] | add) and
	.usage.prompt_tokens == (.prompt_token_ids | length) and
	.usage.total_tokens == .usage.prompt_tokens + .usage.completion_tokens' "$tmp/c4.json" >/dev/null && ok ||
	bad "usage does not count the tokens: $(jq -c .usage "$tmp/c4.json")"
# the 4 samples differ (not one sample repeated)
[ "$(jq -r '[.choices[].token_ids | tostring] | unique | length' "$tmp/c4.json")" = 4 ] && ok ||
	bad "the 4 choices are not 4 different samples"
# the sampled token's logprob is its entry among the top ones when it is there
# (told apart by bytes: a byte vocabulary has many tokens shown as U+FFFD)
jq -e '[.choices[].logprobs.content[] | . as $e | (.top_logprobs[] | select(.bytes == $e.bytes) | .logprob) as $l
	| ($l - $e.logprob | fabs) < 1e-4] | (length > 0 and all)' "$tmp/c4.json" >/dev/null && ok ||
	bad "a sampled token's logprob differs from its top_logprobs entry"

# "task" keys the stream as generate --tasks does: the same seed draws another sample
post /v1/chat/completions "$(chat 7 1 24 '{"task": "smoke/relu"}')" "$tmp/task.json"
expect 200 "chat with a task"
[ "$(jq -c '.choices[0].token_ids' "$tmp/task.json")" != "$(jq -c '.choices[0].token_ids' "$tmp/c4.json")" ] && ok ||
	bad "a task's stream is the task-less one"
post /v1/chat/completions "$(chat 11 2 16 '{"messages": []}')" "$tmp/bad.json"
expect 400 "empty messages" "messages"

# ---- the same answer streamed ----
curl -sN -H 'Content-Type: application/json' --data-binary \
	"$(chat 7 4 24 '{"stream": true, "stream_options": {"include_usage": true}}')" \
	"$url/v1/chat/completions" >"$tmp/s4.sse"
grep -q '^data: \[DONE\]$' "$tmp/s4.sse" && ok || bad "the stream has no [DONE]"
sed -n 's/^data: //p' "$tmp/s4.sse" | grep -v '^\[DONE\]$' >"$tmp/s4.jsonl"
for i in 0 1 2 3; do
	jq -j "select(.choices | length > 0) | .choices[] | select(.index == $i) | .delta.content // \"\"" \
		"$tmp/s4.jsonl" >"$tmp/s4_$i.txt"
	cmp -s "$tmp/s4_$i.txt" "$tmp/c4_$i.txt" && ok || bad "choice $i streamed: the text differs from the whole answer"
	st=$(jq -c -s "[.[] | .choices[] | select(.index == $i) | .token_ids // [] | .[]]" "$tmp/s4.jsonl")
	[ "$st" = "$(jq -c ".choices[$i].token_ids" "$tmp/c4.json")" ] && ok || bad "choice $i streamed: token ids differ"
	sl=$(jq -s "[.[] | .choices[] | select(.index == $i) | .logprobs.content // [] | .[]] | length" "$tmp/s4.jsonl")
	[ "$sl" = "$(jq ".choices[$i].token_ids | length" "$tmp/c4.json")" ] && ok || bad "choice $i streamed: $sl logprobs"
	fr=$(jq -r "select(.choices | length > 0) | .choices[] | select(.index == $i) | .finish_reason // empty" "$tmp/s4.jsonl")
	[ "$fr" = "$(jq -r ".choices[$i].finish_reason" "$tmp/c4.json")" ] && ok || bad "choice $i streamed: finish $fr"
done
jq -s -e '[.[] | select(.usage)] | length == 1 and .[0].usage.completion_tokens > 0' "$tmp/s4.jsonl" >/dev/null &&
	[ "$(jq -s -c '[.[] | select(.usage)][0].usage.completion_tokens' "$tmp/s4.jsonl")" = \
	  "$(jq -c .usage.completion_tokens "$tmp/c4.json")" ] && ok || bad "streamed usage differs"

# ---- a stop string: the streamed text never shows it, and is the whole answer's ----
stopbody=$(jq -nc --arg p "$PROMPT" '{messages: [{role: "user", content: $p}], seed: 3, temperature: 1.0,
	max_tokens: 48, stop: ["e", "th"]}')
post /v1/chat/completions "$stopbody" "$tmp/stop.json"
expect 200 "chat with stop strings"
curl -sN -H 'Content-Type: application/json' --data-binary "$(jq -c '. + {stream: true}' <<<"$stopbody")" \
	"$url/v1/chat/completions" | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' |
	jq -j '.choices[]? | .delta.content // ""' >"$tmp/stop_s.txt"
jq -j '.choices[0].message.content' "$tmp/stop.json" >"$tmp/stop_w.txt"
cmp -s "$tmp/stop_s.txt" "$tmp/stop_w.txt" && ! grep -q -e e -e th "$tmp/stop_w.txt" && ok ||
	bad "stop strings: streamed '$(cat "$tmp/stop_s.txt")' whole '$(cat "$tmp/stop_w.txt")'"

# ---- 16 concurrent seeded requests, each as it is alone ----
for k in $(seq 0 15); do
	p="$PROMPT (variant $((k % 3)))"
	jq -nc --arg p "$p" --argjson s $((100 + k)) '{messages: [{role: "user", content: $p}], seed: $s,
		temperature: 0.8, max_tokens: 12, return_token_ids: true}' >"$tmp/q$k.json"
done
for k in $(seq 0 15); do
	curl -s -H 'Content-Type: application/json' --data-binary "@$tmp/q$k.json" "$url/v1/chat/completions" \
		>"$tmp/qalone$k.json"
done
together q 16
[ $same = 16 ] && ok || bad "16 concurrent requests: $same of 16 as they are alone"
# the prefix cache served the repeated prompts
cached=$(metric crucible_prompt_tokens_cached_total)
[ "${cached:-0}" -gt 0 ] && ok || bad "no prompt token came from the prefix cache ($cached)"

# ---- completions: token-id prompts, legacy logprobs ----
ids=$(jq -c '.prompt_token_ids' "$tmp/c4.json")
post /v1/completions "{\"prompt\": $ids, \"seed\": 5, \"max_tokens\": 8, \"temperature\": 0.7, \"logprobs\": 2, \"n\": 2}" "$tmp/cmp.json"
expect 200 "completions with token ids"
jq -e '.object == "text_completion" and (.choices | length == 2) and
	all(.choices[]; (.logprobs.tokens | length) == .completion_tokens) and
	all(.choices[]; (.logprobs.token_logprobs | length) == (.logprobs.text_offset | length)) and
	(.choices[0].logprobs.top_logprobs[0] | length >= 1) and
	.usage.completion_tokens == ([.choices[].completion_tokens] | add)' "$tmp/cmp.json" >/dev/null && ok ||
	bad "completions: $(head -c 400 "$tmp/cmp.json")"
post /v1/completions '{"prompt": "hello", "max_tokens": 4, "temperature": 0}' "$tmp/cmp2.json"
expect 200 "completions with a text prompt"
# streamed legacy logprobs: the same tokens and text_offset as the whole
# answer, though a stop string holds text back (offsets count the pieces)
lbody='{"prompt": "hello", "max_tokens": 40, "temperature": 0, "logprobs": 1, "stop": ["zzzz"]}'
post /v1/completions "$lbody" "$tmp/lw.json"
curl -sN -H 'Content-Type: application/json' --data-binary "$(jq -c '. + {stream: true}' <<<"$lbody")" \
	"$url//v1/completions" | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' >"$tmp/ls.jsonl"
[ "$(jq -s -c '[.[].choices[]? | .logprobs.text_offset // [] | .[]]' "$tmp/ls.jsonl")" = \
  "$(jq -c '.choices[0].logprobs.text_offset' "$tmp/lw.json")" ] &&
[ "$(jq -s -c '[.[].choices[]? | .logprobs.tokens // [] | .[]]' "$tmp/ls.jsonl")" = \
  "$(jq -c '.choices[0].logprobs.tokens' "$tmp/lw.json")" ] && ok ||
	bad "streamed legacy logprobs differ from the whole answer's (text_offset or tokens)"

# ---- tokenize / detokenize, both shapes ----
post /tokenize '{"content": "hello world", "add_special": false}' "$tmp/t1.json"
expect 200 "tokenize (llama.cpp)"
post /tokenize '{"model": "tiny", "prompt": "hello world", "add_special_tokens": false}' "$tmp/t2.json"
expect 200 "tokenize (vLLM)"
[ "$(jq -c .tokens "$tmp/t1.json")" = "$(jq -c .tokens "$tmp/t2.json")" ] &&
	jq -e '.count == (.tokens | length)' "$tmp/t2.json" >/dev/null && ok || bad "tokenize shapes disagree"
post /detokenize "{\"tokens\": $(jq -c .tokens "$tmp/t1.json")}" "$tmp/d.json"
expect 200 "detokenize"
jq -e '.content == "hello world" and .prompt == "hello world"' "$tmp/d.json" >/dev/null && ok ||
	bad "detokenize: $(cat "$tmp/d.json")"

# ---- bad requests: 4xx with a message ----
post /v1/chat/completions 'not json' ; expect 400 "a body that is not JSON" "not JSON"
post /v1/chat/completions '{"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]}'
expect 404 "an unknown model" "does not exist"
post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "temperature": 5}'
expect 400 "temperature 5" "temperature"
post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "n": 0}'
expect 400 "n 0" "'n'"
post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}'
expect 400 "top_logprobs without logprobs" "logprobs"
post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "frequency_penalty": 0.5}'
expect 400 "an unsupported penalty" "not supported"
post /v1/chat/completions '{"messages": [{"role": "tool", "content": "x"}]}'
expect 400 "a tool message" "role"
post /v1/completions '{"prompt": [999999]}'
expect 400 "a token id out of range" "token id"
code=$(curl -s -o "$tmp/out.json" -w '%{http_code}' "$url/v1/chat/completions"); out=$tmp/out.json
expect 405 "GET on a POST route"
# context overflow: a prompt past the context, and max_tokens past what is left
long=$(head -c 6000 /dev/urandom | base64 -w0)
post /v1/completions "{\"prompt\": \"$long\", \"max_tokens\": 4}"
expect 400 "a prompt longer than the context" "context"
post /v1/chat/completions "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": $CTX}"
expect 400 "max_tokens past the context" "context"
post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "n": 17}'
expect 400 "n past the queue's room" "room"

# ---- a client that hangs up mid-stream: its sequences leave at once ----
# (greedy after "hello" the tiny model never ends: 4000 tokens, ~18 s)
before=$(metric 'crucible_requests_total{outcome="client_gone"}')
curl -sN --max-time 0.5 -H 'Content-Type: application/json' --data-binary \
	'{"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4000, "n": 2, "stream": true, "temperature": 0}' \
	"$url/v1/chat/completions" >"$tmp/cut.sse" 2>/dev/null
grep -q '"delta"' "$tmp/cut.sse" && ok || bad "the stream sent nothing before the hang-up"
gone=0
for _ in $(seq 20); do
	[ "$(metric crucible_samples_in)" = 0 ] && { gone=1; break; }
	sleep 0.1
done
after=$(metric 'crucible_requests_total{outcome="client_gone"}')
[ $gone = 1 ] && [ "$after" -gt "$before" ] && ok ||
	bad "after a hang-up: samples_in $(metric crucible_samples_in), cancelled $before -> $after"
# and its KV blocks came back (the prompt's full blocks stay cached, unheld)
[ "$(metric 'crucible_kv_blocks{state="used"}')" = 0 ] && ok ||
	bad "after a hang-up $(metric 'crucible_kv_blocks{state="used"}') KV blocks are still held"
# a whole (not streamed) request whose client hangs up is cancelled too
before=$after
curl -s --max-time 0.5 -H 'Content-Type: application/json' --data-binary \
	'{"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4000, "temperature": 0}' \
	"$url/v1/chat/completions" >/dev/null 2>&1
gone=0
for _ in $(seq 20); do
	[ "$(metric crucible_samples_in)" = 0 ] && { gone=1; break; }
	sleep 0.1
done
after=$(metric 'crucible_requests_total{outcome="client_gone"}')
[ $gone = 1 ] && [ "$after" -gt "$before" ] && ok || bad "a whole request's hang-up: cancelled $before -> $after"

# ---- a full queue: 429 with Retry-After ----
for k in 1 2 3 4; do
	curl -sN --max-time 20 -H 'Content-Type: application/json' --data-binary \
		'{"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4000, "n": 4, "stream": true, "temperature": 0}' \
		"$url/v1/chat/completions" >/dev/null 2>&1 &
	eval "fill$k=\$!"
done
for _ in $(seq 50); do [ "$(metric crucible_samples_in)" = 16 ] && break; sleep 0.05; done
code=$(curl -s -D "$tmp/hdr" -o "$tmp/out.json" -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary '{"messages": [{"role": "user", "content": "x"}], "max_tokens": 2}' "$url/v1/chat/completions")
out=$tmp/out.json
expect 429 "a request past the queue" "queue is full" && {
	grep -qi '^Retry-After: [0-9]' "$tmp/hdr" && ok || bad "429 without Retry-After"
}
kill "$fill1" "$fill2" "$fill3" "$fill4" 2>/dev/null
wait "$fill1" "$fill2" "$fill3" "$fill4" 2>/dev/null
for _ in $(seq 30); do [ "$(metric crucible_samples_in)" = 0 ] && break; sleep 0.1; done

# ---- crucible run --endpoint against it, unchanged ----
CRUCIBLE_DATADIR=${CRUCIBLE_DATADIR:-} "$C" run --strategy best-of-n --endpoint "$url/v1" --api-model tiny \
	--tasks smoke/relu --n 3 --max-tokens 32 --out "$tmp/run" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
if [ $rc = 0 ] && jq -e '.run.complete == true and .run.completions == 3' "$tmp/run/run.json" >/dev/null 2>&1; then
	ok
	# its token counts come from the server's /tokenize (llama.cpp's shape, probed)
	jq -e '.generator.token_counts.source == "server"' "$tmp/run/run.json" >/dev/null 2>&1 && ok ||
		bad "run counted tokens without the server's tokenizer: $(jq -c .generator.token_counts "$tmp/run/run.json")"
	[ "$(wc -l <"$tmp/run/results.csv")" = 4 ] && ok || bad "run: $(wc -l <"$tmp/run/results.csv") lines in results.csv"
else
	bad "crucible run --endpoint: exit $rc: $(tail -5 "$tmp/run.err")"
fi

# the samples of the KV-pressure check below, on a roomy cache: greedy after
# "hello" (never ends: every sample runs to max_tokens) and sampled
jq -nc '{messages: [{role: "user", content: "hello"}], n: 4, temperature: 0, max_tokens: 200,
	return_token_ids: true}' >"$tmp/kv0.json"
jq -nc '{messages: [{role: "user", content: "kv pressure"}], n: 4, seed: 7, temperature: 0.8, max_tokens: 200,
	return_token_ids: true}' >"$tmp/kv1.json"
for k in 0 1; do
	curl -s -H 'Content-Type: application/json' --data-binary "@$tmp/kv$k.json" "$url/v1/chat/completions" \
		>"$tmp/kvalone$k.json"
done

# ---- SIGTERM under load (--drain 1): the short requests are answered
# whole, the endless ones cancelled (503; a stream, an error event and
# [DONE]), every answer sent before the exit, exit 0 ----
short='{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "temperature": 0}'
endless='{"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4000, "temperature": 0}'
tpids=""
for k in 1 2; do
	curl -s -o "$tmp/term_e$k.json" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$endless" \
		"$url/v1/chat/completions" >"$tmp/term_e$k.code" &
	tpids="$tpids $!"
	curl -sN -H 'Content-Type: application/json' --data-binary "$(jq -c '. + {stream: true}' <<<"$endless")" \
		"$url/v1/chat/completions" >"$tmp/term_t$k.sse" &
	tpids="$tpids $!"
done
for _ in $(seq 50); do [ "$(metric crucible_samples_in)" -ge 4 ] 2>/dev/null && break; sleep 0.05; done
for k in 1 2; do
	curl -s -o "$tmp/term_s$k.json" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$short" \
		"$url/v1/chat/completions" >"$tmp/term_s$k.code" &
	tpids="$tpids $!"
done
sleep 0.1
stop && ok || bad "SIGTERM under load: exit $?"
wait $tpids
for k in 1 2; do
	[ "$(cat "$tmp/term_s$k.code")" = 200 ] || [ "$(cat "$tmp/term_s$k.code")" = 503 ] && ok ||
		bad "a short request at SIGTERM: HTTP $(cat "$tmp/term_s$k.code")"
	[ "$(cat "$tmp/term_e$k.code")" = 503 ] && jq -e '.error.message | test("stopping")' "$tmp/term_e$k.json" \
		>/dev/null && ok || bad "an endless request at SIGTERM: HTTP $(cat "$tmp/term_e$k.code") $(head -c 200 "$tmp/term_e$k.json")"
	grep -q '"error"' "$tmp/term_t$k.sse" && tail -n 2 "$tmp/term_t$k.sse" | grep -q '^data: \[DONE\]$' && ok ||
		bad "an endless stream at SIGTERM: no error event and [DONE]: $(tail -c 200 "$tmp/term_t$k.sse")"
done
grep -q "stopping" "$tmp/server.log" && ok || bad "the log does not say it stopped"

# ---- KV pressure: 16 blocks of 16 positions, and 4 greedy samples of ~210
# positions each (14 blocks) beside 4 sampled ones: sequences are preempted
# and recomputed, and no sample changes ----
start --batch 4 --kv-mem 256K
together kv 2
same=0
for k in 0 1; do
	[ "$(jq -c '[.choices[].token_ids]' "$tmp/kvalone$k.json")" = "$(jq -c '[.choices[].token_ids]' "$tmp/kvconc$k.json")" ] &&
		[ "$(jq '[.choices[].token_ids | length] | add' "$tmp/kvconc$k.json")" -gt 0 ] && same=$((same + 1))
done
pre=$(metric crucible_preemptions_total)
[ $same = 2 ] && [ "${pre:-0}" -gt 0 ] && ok || bad "under KV pressure: $same of 2 requests unchanged, $pre preemptions"
[ "$(metric 'crucible_kv_blocks{state="total"}')" = 16 ] && ok || bad "the KV pool is not 16 blocks"
# a sequence the pool can never hold is refused up front, not failed in the engine
post /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 300}'
expect 400 "max_tokens past the KV pool" "KV cache"
post /v1/completions '{"prompt": "hi", "max_tokens": 8}'
expect 200 "a request beside the refused one"
stop && ok || bad "SIGTERM after the KV-pressure check: exit $?"

# ---- usage errors of the command ----
"$C" serve --model "$M" --temperature 0.5 >/dev/null 2>"$tmp/e1"; rc=$?
[ $rc = 2 ] && grep -q "temperature" "$tmp/e1" && ok || bad "serve --model --temperature: exit $rc $(cat "$tmp/e1")"
"$C" serve --model "$tmp/none.gguf" --listen 127.0.0.1:0 >/dev/null 2>"$tmp/e2"; rc=$?
[ $rc = 2 ] && grep -q "none.gguf" "$tmp/e2" && ok || bad "a missing model: exit $rc $(cat "$tmp/e2")"
"$C" serve --model "$M" --help | grep -q "chat/completions" && ok || bad "serve --model --help"

echo "model_server: $n_checks checks passed, $fails failed"
[ $fails = 0 ]
