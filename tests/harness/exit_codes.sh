#!/usr/bin/env bash
# SPEC §1 exit codes for bad usage, bad input and an unavailable backend:
# each must be the exact code, with a one-line message, never a crash.
set -u
exe="$1"; shift
pass=0; fail=0
expect() {
	local want="$1"; shift
	local err
	err=$("$exe" "$@" 2>&1 >/dev/null); local got=$?
	if [ "$got" -eq "$want" ] && [ -n "$err" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: crucible $* exited $got (want $want), stderr: ${err:-<empty>}"
		fail=$((fail + 1))
	fi
}
expect 2 check /nonexistent/cand.c
expect 2 list nosuchset
expect 2 frobnicate
expect 2 eval --frobnicate
expect 2 eval --seed notanumber
expect 2 eval --seed -1
expect 2 eval --seed 12abc
expect 2 dump smoke/relu --seed x --out /nonexistent-dump
expect 2 dump smoke/relu --seed 12abc --out /nonexistent-dump
expect 2 eval --json
# --resume onto a results.csv of another column set (an older crucible)
old=$(mktemp -d)
printf '"run_id","task","candidate"\n' > "$old/results.csv"
expect 2 eval --no-timing --resume --out "$old"
rm -rf "$old"
# --resume under other options than run.json's: refused, naming them
rd=$(mktemp -d)
"$exe" eval "$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c" --no-timing --out "$rd" >/dev/null 2>&1
expect 2 eval "$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c" --no-timing --quick --resume --out "$rd"
expect 2 eval "$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c" --no-timing --seed 3 --resume --out "$rd"
expect 2 eval --label ""
rm -rf "$rd"
# --json output: list is one array naming every task, check one object with the status
lj=$("$exe" list smoke --json 2>/dev/null)
case "$lj" in "["*'"task": "smoke/relu"'*"]") pass=$((pass + 1)) ;; *) echo "FAIL: list --json: $lj"; fail=$((fail + 1)) ;; esac
cj=$("$exe" check "$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c" --no-timing --json 2>/dev/null)
case "$cj" in "{"*'"status": "ok"'*"}") pass=$((pass + 1)) ;; *) echo "FAIL: check --json: $cj"; fail=$((fail + 1)) ;; esac
# nothing evaluated is not success: exit 5, with the reason
empty=$(mktemp -d)
expect 5 eval "$empty" --out "$empty/out"
expect 5 eval "$CRUCIBLE_DATADIR/candidates/smoke" --tasks L1 --no-timing --out "$empty/out"
expect 5 eval "$CRUCIBLE_DATADIR/candidates/smoke-cuda" --backend cpu --no-timing --out "$empty/out"
rm -rf "$empty"
expect 2 eval --backend tpu
expect 2 dump smoke/relu --dims Q=3 --out /tmp/crucible-exit-codes
expect 2 report /nonexistent/results.csv
expect 3 eval --backend cuda
# decode and generate parse with cr_cli_getopt: a bad or missing value, an
# unknown option or a stray argument is exit 2 with the option and value named
expect_msg() { # WANT CODE ARGS...: exit CODE with WANT in the message
	local want="$1" code="$2"; shift 2
	local err
	err=$("$exe" "$@" 2>&1 >/dev/null); local got=$?
	if [ "$got" -eq "$code" ] && [[ $err == *"$want"* ]]; then
		pass=$((pass + 1))
	else
		echo "FAIL: crucible $* exited $got (want $code, \"$want\"), stderr: ${err:-<empty>}"
		fail=$((fail + 1))
	fi
}
dm=(--model /nonexistent.gguf --tokens 1)
gm=(--model /nonexistent.gguf --tasks smoke --out /nonexistent-gen)
expect_msg "--max-tokens: expected an integer in 0..16777216, got '12abc'" 2 decode "${dm[@]}" --max-tokens=12abc
expect_msg "--top-k: expected an integer in 0..16777216, got '-5'" 2 decode "${dm[@]}" --top-k -5
expect_msg "--temperature: expected a number in [0, 100], got 'x'" 2 decode "${dm[@]}" --temperature=x
expect_msg "option '--top-logprobs' needs a value" 2 decode "${dm[@]}" --top-logprobs
expect_msg "unknown option '--frobnicate'" 2 decode "${dm[@]}" --frobnicate
expect_msg "unexpected argument 'extra'" 2 decode "${dm[@]}" extra
expect_msg "--n: expected an integer in 1..1000000, got '12abc'" 2 generate "${gm[@]}" --n=12abc
expect_msg "--n: expected an integer in 1..1000000, got '-5'" 2 generate "${gm[@]}" --n -5
expect_msg "--top-p: expected a number in [0, 1], got '1.5'" 2 generate "${gm[@]}" --top-p=1.5
expect_msg "option '--batch' needs a value" 2 generate "${gm[@]}" --batch
expect_msg "unknown option '--frobnicate=1'" 2 generate "${gm[@]}" --frobnicate=1
expect_msg "unexpected argument 'extra'" 2 generate "${gm[@]}" extra
# with CRUCIBLE_SEED, generate mixes it into --seed: a bad seed, either form,
# is still refused and named, never replaced by the mixed one
for s in "--seed 12abc" "--seed=12abc"; do
	CRUCIBLE_SEED=7 expect_msg "--seed: expected a non-negative integer, got '12abc'" 2 generate "${gm[@]}" $s
done
CRUCIBLE_SEED=7 expect_msg "option '--seed' needs a value" 2 generate "${gm[@]}" --seed
expect_msg "--lock-clocks is for timing on the GPU" 2 eval --backend cpu --lock-clocks --no-timing \
	--out "$(mktemp -d /tmp/crucible-lock.XXXXXX)" "$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
