#!/usr/bin/env bash
# crucible run against fake_openai, a scripted OpenAI-compatible server on
# 127.0.0.1 that records every request: best-of-n sends n and the seed;
# refine's second request carries the first candidate's compiler error and
# never a seed; a 429 is retried; a 401 is a clear error (exit 2); a port
# nobody listens on is exit 3; the budget stops a task before any request.
set -uo pipefail
exe="$1"; csvq="$2"; fake="$3"; fix="$4"; out="$5"
rm -rf "$out"; mkdir -p "$out"
. "$(dirname "$0")/lib.sh"
export FAKE_OPENAI_ECHO_FILE="$fix/echo_relu.txt"
run() { # name args...
	local name=$1; shift
	# counted by usage: a /tokenize probe would take a line of the script
	"$exe" run --endpoint "$url" --api-model fake-coder --task smoke/relu --no-timing --timeout 2 \
		--tokenizer usage --retry-window 10 --out "$out/$name" "$@" >"$out/$name.stdout" 2>"$out/$name.err"
}

serve bon echo.script
run bon --strategy best-of-n --n 3 --seed 4242 --temperature 0.7; rc=$?
stop
want "best-of-n exit" "$rc" 0
req="$out/bon.log/req-0.json"
grep -q '"n": *3' "$req" && ok || no "best-of-n did not send n=3: $(cat "$req")"
grep -q '"seed": *4242[,}]' "$req" && ok || no "best-of-n did not send the seed"
grep -q '"model": *"fake-coder"' "$req" && ok || no "best-of-n did not send the model"
[ ! -e "$out/bon.log/req-1.json" ] && ok || no "best-of-n sent more than one request"
want "best-of-n statuses" "$(col "$out/bon/results.csv" status)" "ok ok ok"
grep -q '"kind": "endpoint"' "$out/bon/run.json" && ok || no "run.json lacks the endpoint"
# the connection options as given, apart from the options --resume compares
grep -q '"retry_window": 10' "$out/bon/run.json" && grep -q '"tokenizer": "usage"' "$out/bon/run.json" && ok ||
	no "run.json lacks the endpoint options"
grep -q '"usage_tokens": ' "$out/bon/cand/smoke/relu/s0.json" && grep -q '"count_src": "usage' "$out/bon/cand/smoke/relu/s0.json" &&
	ok || no "the sidecar lacks its count's source and the server's usage"
! grep -q 'reasoning_effort' "$req" && ok || no "best-of-n sent a reasoning_effort nobody asked for"

# --reasoning: sent with every request and recorded; a bad value or no endpoint is exit 2
serve effort echo.script
run effort --strategy best-of-n --n 1 --reasoning high; rc=$?
stop
want "--reasoning exit" "$rc" 0
grep -q '"reasoning_effort": *"high"' "$out/effort.log/req-0.json" && ok || no "no reasoning_effort in the request"
grep -q '"reasoning_effort": "high"' "$out/effort/run.json" && ok || no "run.json lacks reasoning_effort"
run effort2 --strategy best-of-n --n 1 --reasoning extreme; want "--reasoning extreme" "$?" 2
"$exe" run --replay "$out" --task smoke/relu --strategy best-of-n --out "$out/effort3" --reasoning low \
	>/dev/null 2>"$out/effort3.err"; want "--reasoning without an endpoint" "$?" 2
grep -q 'endpoint' "$out/effort3.err" && ok || no "--reasoning without an endpoint: $(cat "$out/effort3.err")"

serve refine refine.script
run refine --strategy refine --n 1 --turns 2 --seed 99887766; rc=$?
stop
want "refine exit" "$rc" 0
want "refine statuses" "$(col "$out/refine/results.csv" status)" "compile_error ok"
r1="$out/refine.log/req-1.json"
grep -q 'zero_value' "$r1" && ok || no "refine's second request lacks the first candidate"
grep -q 'did not compile' "$r1" && ok || no "refine's second request lacks the compile feedback"
grep -q "undeclared" "$r1" && ok || no "refine's second request lacks the compiler's message"
# no request carries a seed the verifier used (nor the run's, beyond its own field)
for s in $("$csvq" "$out/refine/results.csv" verify_seed); do
	! grep -q "$s" "$out"/refine.log/req-*.json && ok || no "a request carries verification seed $s"
done
! grep -h '"content"' "$out"/refine.log/req-*.json | grep -q 99887766 && ok || no "a message carries the run seed"

serve retry retry.script
run retry --strategy best-of-n --n 1; rc=$?
stop
want "429 retried: exit" "$rc" 0
[ -e "$out/retry.log/req-1.json" ] && ok || no "the 429 was not retried"
want "429 retried: status" "$(col "$out/retry/results.csv" status)" "ok"

serve unauth unauthorized.script
export CRUCIBLE_TEST_KEY=sk-test-very-secret-123
run unauth --strategy best-of-n --n 1 --api-key-env CRUCIBLE_TEST_KEY; rc=$?
stop
want "401 exit" "$rc" 2
grep -q '401' "$out/unauth.err" && grep -q "127.0.0.1" "$out/unauth.err" && ok ||
	no "401: message lacks the status or the endpoint: $(cat "$out/unauth.err")"
grep -q 'Bearer sk-test-very-secret-123' "$out/unauth.log/req-0.head" && ok || no "the key was not sent"
! grep -rq 'sk-test-very-secret-123' "$out/unauth.err" "$out/unauth" && ok || no "the API key was written out"

url="http://127.0.0.1:1/v1"
run refused --strategy best-of-n --n 1; rc=$?
want "connection refused exit" "$rc" 3

serve budget echo.script
run budget --strategy best-of-n --n 4 --budget-tokens 40; rc=$?
stop
want "budget exit" "$rc" 0
[ ! -e "$out/budget.log/req-0.json" ] && ok || no "the budget did not stop the task before a request"
want "budget stop" "$(col "$out/budget/selected.csv" stopped)" "budget"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
