#!/usr/bin/env bash
# The shared command layer through the real executable, as a newcomer meets
# it (issue 32): for list, dump, lint, run, decode and generate one wording
# for an unknown option or a missing value, with did-you-mean and the --help
# hint, exit 2; every help page with EXIT STATUS and ENVIRONMENT; `help CMD`,
# -V, "did you mean" for a command; standard output that cannot be written
# (> /dev/full) is a non-zero exit for every command; `list --json` numbers
# are numbers; `dump --out a/b/c` and `run --out a/b/c` make the parents;
# a second run into a folder in use is refused, naming the first; curve.csv
# keeps a comma or quote in a path inside its field.
# usage: cli.sh CRUCIBLE CSVQ MK_TINY REPLAY_DIR SCRATCH
set -uo pipefail
exe="$1"; csvq="$2"; mk="$3"; replay="$4"; out="$5"
rm -rf "$out"; mkdir -p "$out"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

mk_ok=0
"$mk" "$out/tiny.gguf" && mk_ok=1 || no "mk_tiny failed"

# ---- unknown options, missing values: one wording, exit 2 ----
bad_opt list --jsn --json
bad_opt list --frobnicate -
bad_opt dump --otu --out smoke/relu
bad_opt lint --hepl --help
bad_opt run --outt --out
bad_opt run --stratgy --strategy
bad_opt decode --promt --prompt --model /nonexistent.gguf
bad_opt generate --taks --tasks --model /nonexistent.gguf
bad_opt generate --frobnicate -
# a missing value
for c in "dump smoke/relu --out" "run --out" "decode --max-tokens" "generate --n"; do
	set -- $c
	err=$("$exe" "$@" 2>&1 >/dev/null); rc=$?
	code "$c (no value)" "$rc" 2
	has "$c (no value)" "$err" "crucible $1: option '${!#}' needs a value"
	has "$c (no value) hint" "$err" "Try 'crucible $1 --help'."
done
# a short option that does not exist
err=$("$exe" lint -x 2>&1 >/dev/null); rc=$?
code "lint -x" "$rc" 2
has "lint -x" "$err" "crucible lint: unknown option '-x'"
# usage errors (not options) carry the hint too
err=$("$exe" dump 2>&1 >/dev/null); rc=$?
code "dump (no task)" "$rc" 2
has "dump (no task)" "$err" "Try 'crucible dump --help'."
err=$("$exe" lint smoke L1 2>&1 >/dev/null); rc=$?
code "lint two sets" "$rc" 2
has "lint two sets" "$err" "unexpected argument 'L1'"
err=$("$exe" run --strategy best-of-n 2>&1 >/dev/null); rc=$?
code "run (incomplete)" "$rc" 2
has "run (incomplete)" "$err" "Try 'crucible run --help'."

# ---- commands: did you mean, help CMD, -V ----
err=$("$exe" evl 2>&1 >/dev/null); rc=$?
code "crucible evl" "$rc" 2
has "crucible evl" "$err" "did you mean 'eval'?"
o=$("$exe" help eval 2>/dev/null); rc=$?
code "help eval" "$rc" 0
has "help eval" "$o" "usage: crucible eval"
for h in help --help; do
	o=$("$exe" help "$h" 2>/dev/null); rc=$?
	code "help $h" "$rc" 0
	has "help $h" "$o" "usage: crucible COMMAND"
done
o=$("$exe" -V); rc=$?
code "-V" "$rc" 0
[[ $o =~ ^crucible\ [0-9]+\.[0-9]+ ]] && ok || no "-V: '$o'"
[ "$("$exe" --version)" = "$o" ] && ok || no "--version differs from -V"

# ---- help pages: the same layout for each command ----
for c in list dump lint run decode generate; do
	o=$("$exe" "$c" --help); rc=$?
	code "$c --help" "$rc" 0
	has "$c --help" "$o" "usage: crucible $c"
	has "$c --help" "$o" "OPTIONS"
	has "$c --help" "$o" "EXIT STATUS"
	has "$c --help" "$o" "ENVIRONMENT"
	[ "$("$exe" help "$c")" = "$o" ] && ok || no "help $c differs from $c --help"
done
has "generate --help: its default backend" "$("$exe" generate --help)" "as eval decides"

# ---- > /dev/full: a write that failed is never success ----
full() { # WHAT ARGS...: exits non-zero, saying so
	local what="$1" err rc; shift
	err=$("$@" 2>&1 >/dev/full); rc=$?
	[ "$rc" -ne 0 ] && ok || no "$what > /dev/full: exit 0"
	has "$what > /dev/full" "$err" "cannot write standard output"
}
for c in list check eval merge report gate lint dump decode generate run; do
	full "$c --help" "$exe" "$c" --help
	full "help $c" "$exe" help "$c"
done
full "--help" "$exe" --help
full "-V" "$exe" -V
full "list" "$exe" list
full "list --json" "$exe" list --json
full "lint smoke" "$exe" lint smoke
full "dump" "$exe" dump smoke/softmax --dims B=3,D=7 --out "$out/dump-full"
full "check" "$exe" check "$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c" --no-timing
if [ "$mk_ok" = 1 ]; then
	full "decode" "$exe" decode --model "$out/tiny.gguf" --tokens 1,2 --max-tokens 2 --threads 1
fi

# ---- list --json: numbers are numbers ----
lj=$("$exe" list --json 2>/dev/null); rc=$?
code "list --json" "$rc" 0
hasnt "list --json flops" "$lj" '"flops": "'
hasnt "list --json bytes" "$lj" '"bytes": "'
[[ $lj =~ \"flops\":\ [0-9] ]] && ok || no "list --json: no numeric flops"
[[ $lj =~ \"bytes\":\ [0-9] ]] && ok || no "list --json: no numeric bytes"
if command -v jq >/dev/null; then
	t=$(printf '%s' "$lj" | jq -r '[.[] | select(.flops != null) | (.flops | type)] | unique | join(",")')
	[ "$t" = number ] && ok || no "list --json: flops of type '$t'"
fi

# ---- output folders: parents made ----
"$exe" dump smoke/softmax --dims B=3,D=7 --out "$out/d/a/b/c" >/dev/null 2>"$out/dump.err"; rc=$?
code "dump --out a/b/c" "$rc" 0
[ -s "$out/d/a/b/c/manifest.json" ] && [ -s "$out/d/a/b/c/x.npy" ] && ok || no "dump --out a/b/c: no files"
# the manifest is JSON through jansson: a newline at the end, numbers as numbers
m=$(cat "$out/d/a/b/c/manifest.json")
has "manifest" "$m" '"task": "smoke/softmax"'
has "manifest" "$m" '"seed": 0'
[ "$(tail -c1 "$out/d/a/b/c/manifest.json" | od -An -c | tr -d ' ')" = '\n' ] && ok || no "manifest: no final newline"
if command -v jq >/dev/null; then
	jq -e '.arrays | length == 4' "$out/d/a/b/c/manifest.json" >/dev/null && ok || no "manifest: not 4 arrays"
fi

# ---- run --out: parents made, locked for the run, curve.csv through libcsv ----
rd="$out/r/a,b\"c/run"
run() { # OUT N: a replayed best-of-n over smoke/relu
	"$exe" run --replay "$replay" --task smoke/relu --strategy best-of-n --n "$2" --no-timing \
		--timeout 2 --out "$1"
}
"$exe" run --replay "$replay" --task smoke/relu --strategy best-of-n --n 5 --no-timing --timeout 2 \
	--out "$rd" >/dev/null 2>"$out/run1.err" &
first=$!
# the lock file names its holder once the folder is locked
for _ in $(seq 200); do
	grep -qs "crucible run" "$rd/.crucible.lock" && break
	sleep 0.05
done
err=$(run "$rd" 1 2>&1 >/dev/null); rc=$?
code "second run into a folder in use" "$rc" 2
has "second run" "$err" "is in use by crucible run, pid $first"
has "second run" "$err" "choose another --out"
wait "$first"; rc=$?
code "first run" "$rc" 0
[ -s "$rd/results.csv" ] && ok || no "run --out with parents: no results.csv"
# the first run's rows are its own: five candidates, once each
n=$("$csvq" "$rd/results.csv" candidate | wc -l)
[ "$n" -eq 5 ] && ok || no "results.csv has $n rows, want 5"
# curve.csv: the path with a comma and a quote is one field
sel=$("$csvq" "$rd/curve.csv" selected | tail -1)
[ "$sel" = "$rd/cand/smoke/relu/s2.c" ] && ok || no "curve.csv selected: '$sel'"
want_cols="strategy,model,task,step,cumulative_tokens,turn,selected,status,speedup,correct,fast1"
[ "$(head -1 "$rd/curve.csv")" = "$want_cols" ] && ok || no "curve.csv header: $(head -1 "$rd/curve.csv")"
[ "$("$csvq" "$rd/curve.csv" correct | paste -sd' ' -)" = "0 0 1 1 1" ] && ok || no "curve.csv correct column"
# released at the end: a held folder is not a stale one (the next run is
# refused for holding a run, not for the lock)
err=$(run "$rd" 1 2>&1 >/dev/null)
has "a finished run's folder" "$err" "holds a run already"
hasnt "a finished run's folder" "$err" "in use by"

# ---- lint: a line per task, flushed as it is judged; [i/N] on stderr ----
"$exe" lint smoke >"$out/lint.out" 2>"$out/lint.err"; rc=$?
code "lint smoke" "$rc" 0
n=$(grep -c '^ok ' "$out/lint.out")
p=$(grep -c '^\[[0-9]*/[0-9]*\] smoke/' "$out/lint.err")
[ "$n" -gt 0 ] && [ "$p" -eq "$n" ] && ok || no "lint: $n tasks, $p progress lines"
grep -q $'\r' "$out/lint.err" && no "lint: redraws on a pipe" || ok
# piped, the first task's line is out before the last task is checked
"$exe" lint smoke 2>"$out/lint2.err" | {
	IFS= read -r first
	last=$(grep -c '^\[' "$out/lint2.err")
	cat >/dev/null
	[ "$last" -lt "$n" ] && echo ok || echo "no: first line '$first' after $last of $n tasks"
} >"$out/lint-stream"
[ "$(cat "$out/lint-stream")" = ok ] && ok || no "lint does not stream: $(cat "$out/lint-stream")"

# ---- generate: the default backend is the machine's, said on stderr ----
if [ "$mk_ok" = 1 ]; then
	"$exe" generate --model "$out/tiny.gguf" --tasks smoke/relu --n 1 --max-tokens 4 --threads 1 \
		--device cpu --out "$out/gen/a/b" >/dev/null 2>"$out/gen.err"; rc=$?
	code "generate" "$rc" 0
	has "generate: says the backend" "$(cat "$out/gen.err")" "backend auto: using"
	if grep -q "using cpu" "$out/gen.err"; then
		[ -f "$out/gen/a/b/smoke/relu_s0.c" ] && ok || no "generate on a cpu machine: no .c candidate"
	else
		[ -f "$out/gen/a/b/smoke/relu_s0.cu" ] && ok || no "generate on a GPU machine: no .cu candidate"
	fi
	# an explicit --backend is kept, and not announced
	"$exe" generate --model "$out/tiny.gguf" --tasks smoke/relu --n 1 --max-tokens 4 --threads 1 \
		--device cpu --backend cuda --out "$out/gen2" >/dev/null 2>"$out/gen2.err"; rc=$?
	code "generate --backend cuda" "$rc" 0
	[ -f "$out/gen2/smoke/relu_s0.cu" ] && ok || no "generate --backend cuda: no .cu candidate"
	grep -q "backend auto" "$out/gen2.err" && no "generate --backend cuda announced auto" || ok
fi

# ---- generate --prompt: one user message, no task, no code file ----
if [ "$mk_ok" = 1 ]; then
	"$exe" generate --model "$out/tiny.gguf" --prompt "Say hi." --system "be brief" --n 2 --max-tokens 4 \
		--threads 1 --device cpu --seed 3 --out "$out/genp" >/dev/null 2>"$out/genp.err"; rc=$?
	code "generate --prompt" "$rc" 0
	has "generate --prompt" "$(cat "$out/genp.err")" "a prompt x 2 samples"
	hasnt "generate --prompt: no backend" "$(cat "$out/genp.err")" "backend auto"
	for i in 0 1; do
		[ -f "$out/genp/prompt_s$i.txt" ] && [ -f "$out/genp/prompt_s$i.json" ] && ok ||
			no "generate --prompt: no prompt_s$i.txt/.json"
		has "generate --prompt: sidecar s$i" "$(cat "$out/genp/prompt_s$i.json")" '"token_ids": ['
		has "generate --prompt: no task" "$(cat "$out/genp/prompt_s$i.json")" '"task": null'
	done
	ls "$out/genp" | grep -Eq '\.(c|cu)$' && no "generate --prompt wrote a code file" || ok
	# a task's sidecar carries its ids too
	has "generate: sidecar token_ids" "$(cat "$out/gen2/smoke/relu_s0.json")" '"token_ids": ['
	err=$("$exe" generate --model "$out/tiny.gguf" --tasks smoke/relu --prompt "hi" --out "$out/genp2" \
		2>&1 >/dev/null); rc=$?
	code "generate --tasks --prompt" "$rc" 2
	has "generate --tasks --prompt" "$err" "--tasks and --prompt exclude each other"
	has "generate --tasks --prompt hint" "$err" "Try 'crucible generate --help'."
	[ -e "$out/genp2" ] && no "generate --tasks --prompt made its folder" || ok
	has "generate --help: --prompt" "$("$exe" generate --help)" "--prompt TEXT"
fi

# ---- generate --out is locked while it writes (a holder of the same flock) ----
if [ "$mk_ok" = 1 ] && command -v flock >/dev/null; then
	mkdir -p "$out/gen3"
	flock "$out/gen3/.crucible.lock" sleep 20 &
	holder=$!
	for _ in $(seq 100); do
		flock -n "$out/gen3/.crucible.lock" true 2>/dev/null || break
		sleep 0.05
	done
	err=$("$exe" generate --model "$out/tiny.gguf" --tasks smoke/relu --n 1 --max-tokens 4 --threads 1 \
		--device cpu --backend cpu --out "$out/gen3" 2>&1 >/dev/null); rc=$?
	kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
	code "generate into a folder in use" "$rc" 2
	has "generate into a folder in use" "$err" "is in use by"
	[ -f "$out/gen3/smoke/relu_s0.c" ] && no "generate wrote into a locked folder" || ok
fi

# ---- run's work folder follows eval's TMPDIR rule ----
mkdir -p "$out/closed/tmp"; chmod 700 "$out/closed"
err=$(TMPDIR="$out/closed/tmp" run "$out/run-tmp" 1 2>&1 >/dev/null); rc=$?
code "run with a closed TMPDIR" "$rc" 0
has "run with a closed TMPDIR" "$err" "work folders go to /tmp"
chmod 755 "$out/closed"

# ---- run stopped by Ctrl-C says how to go on; --resume finishes it ----
"$exe" run --replay "$replay" --task smoke/relu --strategy best-of-n --n 5 --timeout 2 \
	--out "$out/run-int" >/dev/null 2>"$out/run-int.err" &
pid=$!
for _ in $(seq 200); do
	grep -qs "crucible run" "$out/run-int/.crucible.lock" && break
	sleep 0.05
done
sleep 0.5
kill -INT "$pid"; wait "$pid"; rc=$?
code "run stopped by SIGINT" "$rc" 130
has "run stopped by SIGINT" "$(cat "$out/run-int.err")" "run the same command with --resume to finish"
run_resume_err=$("$exe" run --replay "$replay" --task smoke/relu --strategy best-of-n --n 5 --timeout 2 \
	--out "$out/run-int" --resume 2>&1 >/dev/null); rc=$?
code "run --resume after SIGINT" "$rc" 0
has "run --resume after SIGINT" "$run_resume_err" "run: done"

# ---- --backend auto is a value of run and generate too, as of eval ----
err=$("$exe" run --replay "$replay" --task smoke/relu --strategy best-of-n --n 1 --no-timing --timeout 2 \
	--backend auto --out "$out/run-auto" 2>&1 >/dev/null); rc=$?
code "run --backend auto" "$rc" 0
if [ "$mk_ok" = 1 ]; then
	err=$("$exe" generate --model "$out/tiny.gguf" --tasks smoke/relu --n 1 --max-tokens 4 --threads 1 \
		--device cpu --backend auto --out "$out/gen-auto" 2>&1 >/dev/null); rc=$?
	code "generate --backend auto" "$rc" 0
	has "generate --backend auto" "$err" "backend auto: using"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
