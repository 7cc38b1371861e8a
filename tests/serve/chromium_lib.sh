# tests/serve/chromium_lib.sh — headless Chromium for the serve tests
# (sourced by page_chromium.sh, and by the end-to-end tests for the live
# server's page). Each call runs its own browser with a private profile in a
# temporary folder, time-boxed; when Chromium fails, its stderr is printed
# and the function returns 1 (a test fails rather than skips: CI installs
# Chromium through scripts/setup.sh).
#   chromium_dump URL OUT      the DOM as Chromium builds it, serialized to OUT
#   chromium_shot URL PNG      a 1280x2000 screenshot of URL
#   dom_table DOM ID           the element <table ... id="ID"> of the DOM file,
#                              on one line (newlines as spaces)
#   dom_cells HTML CLASS       the text of each <td class="CLASS"> in HTML, a line each
# CHROMIUM names the browser when it is not chromium on the PATH;
# CHROMIUM_TIMEOUT bounds each run in seconds (default 60).

chromium_bin() {
	local c
	for c in "${CHROMIUM:-}" chromium chromium-browser google-chrome; do
		[ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && { command -v "$c"; return 0; }
	done
	echo "chromium: no browser found (install Debian's chromium package, or set CHROMIUM)" >&2
	return 1
}

# URL OUTFILE ARGS...: runs the browser with ARGS on URL, stdout to OUTFILE.
# --no-sandbox: the sandbox cannot start as root (CI containers); the pages
# loaded here are the project's own.
chromium_run() {
	local url=$1 out=$2 bin dir rc
	shift 2
	bin=$(chromium_bin) || return 1
	dir=$(mktemp -d "${TMPDIR:-/tmp}/crchromium.XXXXXX") || return 1
	HOME=$dir timeout "${CHROMIUM_TIMEOUT:-60}" "$bin" --headless=new --no-sandbox --disable-gpu \
		--disable-dev-shm-usage --no-first-run --no-default-browser-check --disable-extensions \
		--disable-background-networking --disable-sync --no-proxy-server --hide-scrollbars \
		--mute-audio --user-data-dir="$dir/profile" "$@" "$url" >"$out" 2>"$dir/stderr"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "chromium: exit $rc on $url$([ "$rc" -eq 124 ] && echo " (timed out)"); its stderr:" >&2
		cat "$dir/stderr" >&2
	fi
	rm -rf "$dir"
	return "$rc"
}

chromium_dump() { # URL OUT
	chromium_run "$1" "$2" --dump-dom || return 1
	if ! grep -qi '<html' "$2"; then
		echo "chromium: --dump-dom of $1 gave no document" >&2
		return 1
	fi
}

chromium_shot() { # URL PNG
	local log rc
	log=$(mktemp "${TMPDIR:-/tmp}/crshot.XXXXXX") || return 1
	rm -f "$2"
	chromium_run "$1" "$log" --screenshot="$2" --window-size=1280,2000
	rc=$?
	rm -f "$log"
	[ "$rc" -eq 0 ] || return 1
	if [ ! -s "$2" ]; then
		echo "chromium: no screenshot written to $2" >&2
		return 1
	fi
}

dom_table() { # DOM ID
	local flat
	flat=$(tr '\n' ' ' <"$1")
	case $flat in
	*"id=\"$2\""*) ;;
	*) return 1 ;;
	esac
	flat=${flat#*id=\"$2\"}
	printf '<table id="%s"%s</table>\n' "$2" "${flat%%</table>*}"
}

dom_cells() { # HTML CLASS
	grep -o "<td class=\"$2\">[^<]*</td>" <<<"$1" | sed -e "s|^<td class=\"$2\">||" -e 's|</td>$||'
}
