#!/bin/sh
# report_cli.sh CRUCIBLE DATA — `crucible report` and `crucible gate` on the
# shared command layer (issue 32): one wording for an unknown option with
# "did you mean", help pages with EXIT STATUS and ENVIRONMENT, a --task-list
# typo an error naming FILE:LINE (exit 2, not a silent zero row), missing
# folders of an output file made.
set -u
exe=$1 data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# expect RC CMD...: the exit code, stderr in $tmp/err, stdout in $tmp/out
expect() {
	want=$1; shift
	"$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
	[ "$rc" = "$want" ] || { bad "exit $rc, not $want: $*"; sed 's/^/  | /' "$tmp/err"; }
}
has() { grep -qF -- "$2" "$1" || { bad "$1 lacks: $2"; sed 's/^/  | /' "$1" | head -20; }; }
hasnt() { ! grep -qF -- "$2" "$1" || bad "$1 has: $2"; }

for cmd in report gate; do
	expect 2 "$exe" $cmd --x
	has "$tmp/err" "crucible $cmd: unknown option '--x'"
	has "$tmp/err" "Try 'crucible $cmd --help'."
	hasnt "$tmp/err" "unrecognized"
	expect 0 "$exe" $cmd --help
	has "$tmp/out" "usage: crucible $cmd"
	has "$tmp/out" "EXIT STATUS"
	has "$tmp/out" "ENVIRONMENT"
	has "$tmp/out" "CRUCIBLE_DATADIR"
	expect 0 "$exe" help $cmd
	has "$tmp/out" "usage: crucible $cmd"
done
expect 2 "$exe" report --fromat md "$data/basic.csv"
has "$tmp/err" "crucible report: unknown option '--fromat' (did you mean '--format'?)"
expect 2 "$exe" gate --baseline "$data/gate_base.csv" --current "$data/gate_cur.csv" --treshold 0.1
has "$tmp/err" "crucible gate: unknown option '--treshold' (did you mean '--threshold'?)"
expect 2 "$exe" report --format pdf "$data/basic.csv"
has "$tmp/err" "crucible report: --format: expected md, html, json or csv, got 'pdf'"
has "$tmp/err" "Try 'crucible report --help'."
expect 2 "$exe" report
has "$tmp/err" "crucible report: no results.csv or directory given"

# --task-list: a typo is an error naming the file and line, not a zero row
printf 't/A\n# a comment\n\nt/Bx\n' >"$tmp/typo.txt"
expect 2 "$exe" report "$data/basic.csv" --task-list "$tmp/typo.txt"
has "$tmp/err" "$tmp/typo.txt:4: unknown task 't/Bx' (did you mean 't/B'?)"
[ -s "$tmp/out" ] && bad "a report was written despite the typo"
# a task of the registry that no file has is a task with no candidate (0)
printf 't/A\nsmoke/relu\n' >"$tmp/reg.txt"
expect 0 "$exe" report "$data/basic.csv" --task-list "$tmp/reg.txt"
has "$tmp/out" "| smoke/relu | 0 | 0 |"
# any single-task form of every command resolves to the canonical name
printf 't/A\nL1/1\nsmoke/RELU\n' >"$tmp/forms.txt"
expect 0 "$exe" report "$data/basic.csv" --task-list "$tmp/forms.txt"
has "$tmp/out" "| L1/1_Square_matrix_multiplication_ | 0 | 0 |"
has "$tmp/out" "| smoke/relu | 0 | 0 |"
printf 't/A\n\nL1/9999\n' >"$tmp/badid.txt"
expect 2 "$exe" report "$data/basic.csv" --task-list "$tmp/badid.txt"
has "$tmp/err" "$tmp/badid.txt:3: unknown task 'L1/9999'"
# gate --tasks takes the same forms (a glob here), its syntax checked
expect 1 "$exe" gate --baseline "$data/gate_base.csv" --current "$data/gate_cur.csv" --tasks 't/s*'
has "$tmp/out" "N = 3 tasks"
hasnt "$tmp/out" "t/fast"
expect 2 "$exe" gate --baseline "$data/gate_base.csv" --current "$data/gate_cur.csv" --tasks L1/5-2
has "$tmp/err" "crucible gate: --tasks: bad id range 'L1/5-2'"
# the same name check in the json format (no half-written output)
expect 2 "$exe" report "$data/basic.csv" --task-list "$tmp/typo.txt" --format json

# -o / --out: missing folders are made
expect 0 "$exe" report "$data/basic.csv" -o "$tmp/a/b/c/report.md"
[ -s "$tmp/a/b/c/report.md" ] || bad "report -o a/b/c/report.md wrote nothing"
expect 0 "$exe" gate --baseline "$data/gate_base.csv" --current "$data/gate_base.csv" \
	--json "$tmp/g/h/gate.json" --junit "$tmp/g/j/junit.xml" --markdown "$tmp/g/k/pr.md"
for f in g/h/gate.json g/j/junit.xml g/k/pr.md; do
	[ -s "$tmp/$f" ] || bad "gate did not write $f"
done
# a folder that cannot be made is the environment (3), said once
: >"$tmp/file"
expect 3 "$exe" report "$data/basic.csv" -o "$tmp/file/sub/report.md"
has "$tmp/err" "crucible report: "
# an output that cannot be written is the environment too (3), not 0 or 2
if [ -w /dev/full ]; then
	expect 3 "$exe" report "$data/basic.csv" -o /dev/full
	expect 3 "$exe" gate --baseline "$data/gate_base.csv" --current "$data/gate_base.csv" --json /dev/full
	has "$tmp/err" "crucible gate: write error on /dev/full"
fi

# ---- unknown is not zero: a run without timing (eval --no-timing) ----
hdr=run_id,task,candidate,sample,backend,device,status,backward,detail,max_abs_err,max_rel_err,time_us,time_lo_us,time_hi_us,baseline_us,speedup,speedup_lo,speedup_hi,samples,reasoning_tokens,completion_tokens,model,temperature,top_p,top_k,seed,turn,source_sha256
mkdir -p "$tmp/untimed" "$tmp/compiled" "$tmp/passk"
{
	echo "$hdr"
	echo "r,t/a,a0.c,0,cpu,x,ok,none,,0,0,,,,,,,,,,,m,,,,7,,s1"
	echo "r,t/a,a1.c,1,cpu,x,mismatch,none,,1,1,,,,,,,,,,,m,,,,7,,s2"
	echo "r,t/b,b0.c,0,cpu,x,ok,none,,0,0,,,,,,,,,,,m,,,,7,,s3"
} >"$tmp/untimed/results.csv"
cat >"$tmp/untimed/run.json" <<'JSON'
{"tool": "crucible", "version": "9.8.7", "revision": "abc123def456", "run_id": "r",
 "device": "Test CPU @ 1 GHz", "backend": "cpu", "seed": 7, "seed_source": "--seed",
 "started": "2026-12-06T10:00:00Z", "finished": "2026-12-06T10:05:00Z",
 "timing": false, "complete": true}
JSON
expect 0 "$exe" report "$tmp/untimed"
cp "$tmp/out" "$tmp/untimed.md"
has "$tmp/untimed.md" "| best-of-n | n/a | n/a | n/a | n/a | n/a | n/a |"
has "$tmp/untimed.md" "**Not measured**: the run was not timed"
hasnt "$tmp/untimed.md" "| best-of-n | 0.0000"
has "$tmp/untimed.md" "| timing | not measured (run without timing) |"
# correctness was measured: pass@1 is a number
has "$tmp/untimed.md" "| 1 | 0.7500 |"
expect 0 "$exe" report "$tmp/untimed" --format json
cp "$tmp/out" "$tmp/untimed.json"
tr -d ' \n' <"$tmp/untimed.json" >"$tmp/untimed.flat"
has "$tmp/untimed.flat" '"best_of_n":[null,null,null,null,null,null]'
has "$tmp/untimed.flat" '"measured":{"correctness":true,"timing":false}'
has "$tmp/untimed.flat" '"seed":7,"seed_source":"--seed","secret_seed":false'
has "$tmp/untimed.flat" '"revision":"abc123def456"'
has "$tmp/untimed.flat" '"started":"2026-12-06T10:00:00Z"'
has "$tmp/untimed.flat" '"report":{'
has "$tmp/untimed.flat" '"pass":0.75'
# json numbers as numbers at %.10g (basic.csv's fast_1 is 2/3): no 17-digit
# binary noise (0.66666666666666663), no numbers as strings
expect 0 "$exe" report "$data/basic.csv" --format json
has "$tmp/out" '0.6666666667,'
hasnt "$tmp/out" '66666666666'
grep -v '"version"' "$tmp/out" | grep -Eq '": "[0-9.eE+-]+"' && bad "report json has a number as a string"
expect 1 "$exe" gate --baseline "$data/gate_base.csv" --current "$data/gate_cur.csv" --json -
grep -q '"ratio": [0-9]' "$tmp/out" || bad "gate json has no ratio figure"
grep -Eq '[0-9]\.[0-9]{11,}' "$tmp/out" && bad "gate json has 17-digit numbers"
grep -Eq '": "[0-9.eE+-]+"' "$tmp/out" && bad "gate json has a number as a string"
expect 0 "$exe" report "$tmp/untimed" --format html
cp "$tmp/out" "$tmp/untimed.html"
has "$tmp/untimed.html" "abc123def456"
has "$tmp/untimed.html" "7 (given with --seed; no secret)"
has "$tmp/untimed.html" "<b>Fast_p vs p</b>: not measured (no run was timed)"
hasnt "$tmp/untimed.html" "Fast_p vs p (best-of-n"
# no reasoning tokens: no reasoning panel with invented axes, a note instead
has "$tmp/untimed.html" "<b>Reasoning length vs speedup</b>: no reasoning-length data"
hasnt "$tmp/untimed.html" "Reasoning length vs speedup (correct"
has "$tmp/untimed.md" "No reasoning-length data: no row has reasoning_tokens."
expect 0 "$exe" report "$tmp/untimed" --format csv
has "$tmp/out" ",fast_p,best_of_n,fast_1,"
grep -q ',fast_p,best_of_n,fast_1,0$' "$tmp/out" && bad "csv: fast_1 of an untimed run is 0"

# a secret seed: said so, the value never invented
sed 's/"seed": 7, "seed_source": "--seed"/"seed": "secret", "seed_source": "secret"/' \
	"$tmp/untimed/run.json" >"$tmp/x.json" && mv "$tmp/x.json" "$tmp/untimed/run.json"
expect 0 "$exe" report "$tmp/untimed" --format html
has "$tmp/out" "secret: a CRUCIBLE_SEED secret was mixed in"
expect 0 "$exe" report "$tmp/untimed" --format json
tr -d ' \n' <"$tmp/out" >"$tmp/x.flat"
has "$tmp/x.flat" '"seed":"secret","seed_source":"secret","secret_seed":true'
# no run.json: unknown, not invented
rm "$tmp/untimed/run.json"
expect 0 "$exe" report "$tmp/untimed"
has "$tmp/out" "| revision | unknown (no run.json) |"
has "$tmp/out" "| seed | unknown (no run.json) |"
# no run.json and no timed row: still not measured (correct rows, none timed)
has "$tmp/out" "| best-of-n | n/a |"
expect 0 "$exe" report "$tmp/untimed" --format json
tr -d ' \n' <"$tmp/out" >"$tmp/x.flat"
has "$tmp/x.flat" '"run_json":false,"version":null,"revision":null'

# the gate on runs that were not timed: fast_1 not measured, not 0; a
# --min-fast1 floor on them cannot be checked (exit 2), it neither fails as 0
# nor passes
expect 0 "$exe" gate --baseline "$tmp/untimed/results.csv" --current "$tmp/untimed/results.csv"
has "$tmp/out" "fast_1: not measured (the current run has no timed row)"
expect 0 "$exe" gate --baseline "$tmp/untimed/results.csv" --current "$tmp/untimed/results.csv" --json -
tr -d ' \n' <"$tmp/out" >"$tmp/x.flat"
has "$tmp/x.flat" '"fast1":null,"baseline_fast1":null'
has "$tmp/x.flat" '"fast1":"notmeasured"'
expect 2 "$exe" gate --baseline "$tmp/untimed/results.csv" --current "$tmp/untimed/results.csv" --min-fast1 0.5
has "$tmp/err" "crucible gate: --min-fast1: the current run $tmp/untimed/results.csv has no timed row"

# ---- a compile-only run: correctness not measured either ----
{
	echo "$hdr"
	echo "r,t/a,a0.cu,0,cuda,x,compiled,none,,,,,,,,,,,,,,m,,,,7,,s1"
	echo "r,t/b,b0.cu,0,cuda,x,compile_error,none,,,,,,,,,,,,,,m,,,,7,,s2"
} >"$tmp/compiled/results.csv"
expect 0 "$exe" report "$tmp/compiled"
has "$tmp/out" "| 1 | n/a |"
has "$tmp/out" "**Not measured**: a compile-only run (1 candidate(s) compiled, never run)"
has "$tmp/out" "| t/a | 1 | 0 | n/a |"
expect 0 "$exe" report "$tmp/compiled" --format json
tr -d ' \n' <"$tmp/out" >"$tmp/x.flat"
has "$tmp/x.flat" '"pass":null'
has "$tmp/x.flat" '"pass_at_1":null'
expect 0 "$exe" report "$tmp/compiled" --format html
has "$tmp/out" "<b>pass@k vs k</b>: not measured"

# ---- pass@k over fixed task sets: t/a has 5 candidates, none correct; t/b 2,
# both correct. Leaving t/b out at k >= 3 made the one curve dip from 0.5 to 0.
{
	echo "$hdr"
	for i in 0 1 2 3 4; do echo "r,t/a,a$i.c,$i,cpu,x,mismatch,none,,1,1,,,,,,,,,,,m,,,,7,,a$i"; done
	for i in 0 1; do echo "r,t/b,b$i.c,$i,cpu,x,ok,none,,0,0,10,9,11,20,2,1.9,2.1,5,,,m,,,,7,,b$i"; done
} >"$tmp/passk/results.csv"
expect 0 "$exe" report "$tmp/passk" --format html
awk '/pass@k vs k/,/<\/svg>/' "$tmp/out" >"$tmp/passk.svg"
has "$tmp/passk.svg" ": all 2 tasks (each has n &gt;= 2), k &lt;= 2</text>"
has "$tmp/passk.svg" ": the 1 of 2 tasks with n = 5, k &lt;= 5</text>"
# the solid curve over both tasks has k = 1, 2 only (2 points), both at 0.5
pts=$(grep -o '<polyline[^>]*points="[^"]*"' "$tmp/passk.svg" | head -1 | sed 's/.*points="//; s/"$//')
[ "$(echo $pts | wc -w)" = 2 ] || bad "the all-tasks pass@k curve has points '$pts', not k = 1, 2"
[ "$(echo $pts | tr ' ' '\n' | cut -d, -f2 | sort -u | wc -l)" = 1 ] ||
	bad "the all-tasks pass@k curve is not flat at 0.5: '$pts'"

# a `crucible run` directory run with --no-timing: its fast_1 curves are n/a
# and not drawn (no flat zero), its correctness curves are
cp -r "$data/run_bon" "$tmp/rb"
sed 's/"backend": "cpu",/"backend": "cpu", "options": {"no_timing": true},/' "$data/run_bon/run.json" \
	>"$tmp/rb/run.json"
expect 0 "$exe" report "$tmp/rb"
has "$tmp/out" "| 100 | 0.3333 | n/a |"
has "$tmp/out" "| timing | not measured (run without timing) |"
expect 0 "$exe" report "$tmp/rb" --format html
has "$tmp/out" "(n = 3 tasks): not measured (not timed)</text>"
expect 0 "$exe" report "$data/run_bon"
has "$tmp/out" "| 100 | 0.3333 | 0."

# an ablation says what produced each column
expect 0 "$exe" report "$data/gate_abl_seed1" "$data/gate_abl_seed2"
has "$tmp/out" "| seed | 1 (given with --seed; no secret) | 2 (given with --seed; no secret) |"
has "$tmp/out" "| revision | unknown | unknown |"

# reasoning tokens present: the panel is drawn
expect 0 "$exe" report "$data/basic.csv" --format html
has "$tmp/out" "Reasoning length vs speedup (correct"

# an output file that is one of the inputs is refused before anything is
# written (report -o run.json truncated the run.json it was about to read)
cp -r "$tmp/untimed" "$tmp/clob"
before=$(cat "$tmp/clob/results.csv" "$tmp/clob/run.json" 2>/dev/null | cksum)
expect 2 "$exe" report "$tmp/clob" -o "$tmp/clob/results.csv"
has "$tmp/err" "is an input"
[ -f "$tmp/clob/run.json" ] && expect 2 "$exe" report "$tmp/clob/results.csv" --format csv -o "$tmp/clob/./run.json"
expect 2 "$exe" gate --baseline "$tmp/untimed/results.csv" --current "$tmp/clob/results.csv" --json "$tmp/clob/results.csv"
has "$tmp/err" "is an input"
[ "$(cat "$tmp/clob/results.csv" "$tmp/clob/run.json" 2>/dev/null | cksum)" = "$before" ] || bad "an input was overwritten"

# one results.csv named three ways is one run; an
# untimed run says nothing of the machine "while timing"
expect 0 "$exe" report "$tmp/untimed" "$tmp/untimed/results.csv" "$tmp/untimed/./results.csv"
has "$tmp/err" "counted once"
[ "$(grep -c '^## Run' "$tmp/out")" = 1 ] || bad "one results.csv named three ways: $(grep -c '^## Run' "$tmp/out") runs"
hasnt "$tmp/out" "Machine while timing"
exit $fail
