#!/usr/bin/env bash
# The shared option wording for eval, check, merge, report and gate (issue
# 32; their commands are converted apart from list, dump, lint, run, decode
# and generate, which tests/cli/cli.sh checks): an unknown option or a
# missing value worded one way with did-you-mean and the --help hint, exit
# 2, never getopt's own text; each help page with EXIT STATUS and
# ENVIRONMENT, the same as `help CMD`; and each of them, doing real work
# with standard output on /dev/full, exits non-zero saying so.
# usage: cli_others.sh CRUCIBLE
set -uo pipefail
exe="$1"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

bad_opt eval --outt --out
bad_opt eval --frobnicate -
bad_opt check --jsn --json "$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c"
bad_opt merge --partal --partial
bad_opt report --formt --format
bad_opt gate --baselien --baseline   # --baselin would be a valid abbreviation (getopt_long)
for c in eval check merge report gate; do
	err=$("$exe" "$c" --frobnicate 2>&1 >/dev/null); rc=$?
	code "$c --frobnicate" "$rc" 2
	has "$c --frobnicate" "$err" "crucible $c: unknown option '--frobnicate'"
	o=$("$exe" "$c" --help); rc=$?
	code "$c --help" "$rc" 0
	has "$c --help" "$o" "usage: crucible $c"
	has "$c --help" "$o" "EXIT STATUS"
	has "$c --help" "$o" "ENVIRONMENT"
	[ "$("$exe" help "$c")" = "$o" ] && ok || no "help $c differs from $c --help"
done
# a missing value
for c in "eval --out" "report --format" "gate --baseline"; do
	set -- $c
	err=$("$exe" "$@" 2>&1 >/dev/null); rc=$?
	code "$c (no value)" "$rc" 2
	has "$c (no value)" "$err" "crucible $1: option '$2' needs a value"
done
# > /dev/full on real work: a write that failed is never success
tmp=$(mktemp -d /tmp/crucible-cli-others.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
full() { # WHAT ARGS...
	local what="$1" err rc; shift
	err=$("$@" 2>&1 >/dev/full); rc=$?
	[ "$rc" -ne 0 ] && ok || no "$what > /dev/full: exit 0"
	has "$what > /dev/full" "$err" "cannot write standard output"
}
cand="$CRUCIBLE_DATADIR/candidates/smoke/relu_plain.c"
full eval "$exe" eval "$cand" --no-timing --out "$tmp/e1"
"$exe" eval "$cand" --no-timing --shard 1/1 --out "$tmp/e2" >/dev/null 2>&1 || no "eval into $tmp/e2 failed"
full report "$exe" report "$tmp/e2"
full gate "$exe" gate --baseline "$tmp/e2/results.csv" --current "$tmp/e2/results.csv"
full merge "$exe" merge "$tmp/e2" --out "$tmp/m"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
