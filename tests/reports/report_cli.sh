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
exit $fail
