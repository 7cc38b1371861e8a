# tests/cli/lib.sh — what cli.sh and cli_others.sh share (sourced): pass and
# fail counts, text checks, and bad_opt, the shared option wording of one
# command. Needs $exe.
pass=0; fail=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
has() { # WHAT TEXT WANT: TEXT contains WANT
	[[ $2 == *"$3"* ]] && ok || no "$1: \"$3\" not in: ${2:-<empty>}"
}
hasnt() { # WHAT TEXT WANT: TEXT does not contain WANT
	[[ $2 != *"$3"* ]] && ok || no "$1: \"$3\" should not be in: $2"
}
code() { # WHAT GOT WANT
	[ "$2" -eq "$3" ] && ok || no "$1: exit $2, want $3"
}

# CMD OPTION SUGGESTION|- [ARGS...]: the message names the option, suggests
# SUGGESTION (or nothing when it is -), then the --help hint; exit 2, never
# getopt's own text or an older wording.
bad_opt() {
	local cmd="$1" opt="$2" sug="$3"; shift 3
	local err rc
	err=$("$exe" "$cmd" "$@" "$opt" 2>&1 >/dev/null); rc=$?
	code "$cmd $opt" "$rc" 2
	if [ "$sug" = - ]; then
		has "$cmd $opt" "$err" "crucible $cmd: unknown option '$opt'"
	else
		has "$cmd $opt" "$err" "crucible $cmd: unknown option '$opt' (did you mean '$sug'?)"
	fi
	has "$cmd $opt hint" "$err" "Try 'crucible $cmd --help'."
	hasnt "$cmd $opt getopt's own text" "$err" "unrecognized option"
	hasnt "$cmd $opt old wording" "$err" "unknown or"
	hasnt "$cmd $opt old hint" "$err" "(see --help)"
}
