#!/usr/bin/env bash
# page_chromium.sh — the rankings page (serve/srv_page.c) as headless
# Chromium renders it: a fixture of two boards (hostile user, file, task and
# board names and details; null numbers; an empty board) is rendered by
# tests/serve/page_fixture, loaded from a file:// URL, and the DOM Chromium
# builds is checked: ranking rows in order, every hostile string present as
# text and no element injected, "—" for each null, the empty states; then a
# screenshot must be a real PNG of some size.
#   page_chromium.sh CRUCIBLE_EXE   (the build folder is $(dirname EXE)/..)
# Exit 0 pass, 1 fail, 77 when the build has no page_fixture yet.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$(dirname "$1")/.." && pwd)
fixture=$build/tests/serve/page_fixture
if [ ! -x "$fixture" ]; then
	echo "page_fixture is missing from the build ($fixture): tests/serve/meson.build does not build it yet"
	exit 77
fi
# shellcheck source=chromium_lib.sh
. "$here/chromium_lib.sh"

pass=0; fail=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
has() { # WHAT TEXT WANT
	[[ $2 == *"$3"* ]] && ok || no "$1: '$3' not found"
}
hasnt() { # WHAT TEXT WANT
	[[ $2 != *"$3"* ]] && ok || no "$1: '$3' should not be there"
}
eq() { # WHAT GOT WANT
	[ "$2" = "$3" ] && ok || no "$1: got [$2], want [$3]"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/page_chromium.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
long=$(printf 'case %d mismatched; ' {1..40})
sed "s|LONGDETAIL|$long|" >"$tmp/boards.json" <<'EOF'
{"boards": [
 {"name": "b1", "tasks": ["L1/23_Softmax", "L1/19_ReLU"], "backend": "cpu", "rank": "geomean",
  "ranking": [
   {"rank": 1, "user": "alice", "score": 1.2345,
    "per_task": [{"task": "L1/23_Softmax", "speedup": 1.5, "submission": 12},
                 {"task": "L1/19_ReLU", "speedup": 1.016, "submission": 14}]},
   {"rank": 2, "user": "<script>alert(1)</script>", "score": 1.1,
    "per_task": [{"task": "L1/23_Softmax", "speedup": 1.21, "submission": 13},
                 {"task": "L1/19_ReLU", "speedup": null, "submission": 15}]},
   {"rank": 3, "user": "bob", "score": null, "per_task": []}],
  "task_rankings": [
   {"task": "L1/23_Softmax", "ranking": [
     {"rank": 1, "user": "alice", "speedup": 1.5, "submission": 12},
     {"rank": 2, "user": "<script>alert(1)</script>", "speedup": 1.21, "submission": 13}]},
   {"task": "L1/19_ReLU", "ranking": []}],
  "submissions": [
   {"id": 16, "user": "mallory", "task": "L1/23_Softmax", "file_name": "\"><img src=x onerror=alert(1)>.c",
    "created": "2026-12-06T18:05:00Z", "state": "error",
    "public": {"status": "compile_error", "speedup": null, "detail": "<script>alert(2)</script> LONGDETAIL"},
    "secret": {"status": null}, "ranked": false, "why_not_ranked": "public run: compile_error <b>"},
   {"id": 15, "user": "<script>alert(1)</script>", "task": "L1/19_ReLU", "file_name": "relu.c",
    "created": "2026-12-06T18:04:00Z", "state": "scored",
    "public": {"status": "ok", "speedup": null, "detail": "ok\u0007bell"},
    "secret": {"status": "ok", "speedup": null}, "ranked": true, "why_not_ranked": null},
   {"id": 14, "user": "alice", "task": "L1/19_ReLU", "file_name": "relu_fast.c",
    "created": "2026-12-06T18:03:00Z", "state": "scored",
    "public": {"status": "ok", "speedup": 1.02, "detail": "all cases passed"},
    "secret": {"status": "ok", "speedup": 1.016}, "ranked": true, "why_not_ranked": null},
   {"id": 13, "user": "<script>alert(1)</script>", "task": "L1/23_Softmax", "file_name": "s'q\".c",
    "created": "2026-12-06T18:02:00Z", "state": "scored",
    "public": {"status": "ok", "speedup": 1.3}, "secret": {"status": "ok"}, "ranked": true},
   {"id": 12, "user": "alice", "task": "L1/23_Softmax", "file_name": "softmax.c",
    "created": "2026-12-06T18:01:00Z", "state": "queued",
    "public": {"state": "running", "status": null}, "secret": {"state": "queued"}}]},
 {"name": "my board <b>\"x\"", "tasks": ["L2/1_<i>Conv</i>"], "backend": "cuda", "rank": "geomean",
  "ranking": [], "task_rankings": [], "submissions": []}]}
EOF
"$fixture" "$tmp/boards.json" "$tmp/page.html" '<script>alert("title")</script> board' ||
	{ echo "FAIL: page_fixture could not render the fixture"; exit 1; }
url="file://$tmp/page.html"

chromium_dump "$url" "$tmp/dom.html" || { echo "FAIL: chromium could not load the page"; exit 1; }
dom=$(cat "$tmp/dom.html")

# what must be there
has "CSP" "$dom" "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
has "title as text" "$dom" "<h1>&lt;script&gt;alert(\"title\")&lt;/script&gt; board</h1>"
has "board name as text" "$dom" "<h2 class=\"board-name\">my board &lt;b&gt;\"x\"</h2>"
has "task name as text" "$dom" "L2/1_&lt;i&gt;Conv&lt;/i&gt;"
has "hostile file name as text" "$dom" "<td class=\"file\">\"&gt;&lt;img src=x onerror=alert(1)&gt;.c</td>"
has "quotes in a file name" "$dom" "<td class=\"file\">s'q\".c</td>"
has "hostile detail as text" "$dom" "<td class=\"detail\">&lt;script&gt;alert(2)&lt;/script&gt; case 1 mismatched;"
has "long detail shortened" "$dom" "…</td>"
hasnt "long detail's tail" "$dom" "case 40 mismatched"
has "control character escaped" "$dom" "ok\\x07bell"
has "why not ranked" "$dom" "no: public run: compile_error &lt;b&gt;</td>"
has "sanitized board id" "$dom" "id=\"ranking-my_board__b__x_\""
has "empty ranking" "$(dom_table "$tmp/dom.html" ranking-my_board__b__x_)" "no ranked submission yet"
has "empty history" "$(dom_table "$tmp/dom.html" subs-my_board__b__x_)" "no submissions"

eq "history headers whole" "$(grep -o "<th>public detail</th></tr></thead>" <<<"$dom" | wc -l)" 2

# the ranking, in order, with the hostile name as text
rk=$(dom_table "$tmp/dom.html" ranking-b1) || no "no table ranking-b1"
eq "ranking users" "$(dom_cells "$rk" user | tr '\n' '|')" "alice|&lt;script&gt;alert(1)&lt;/script&gt;|bob|"
eq "ranking ranks" "$(dom_cells "$rk" 'rank r' | tr '\n' ' ')" "1 2 3 "
eq "ranking scores" "$(dom_cells "$rk" 'score r' | tr '\n' ' ')" "1.23x 1.10x — "
eq "rank rows" "$(grep -o '<tr class="rank-row"' <<<"$rk" | wc -l)" 3
has "per-task cell with submission" "$rk" "1.50x <span class=\"sub\">#12</span>"
has "null per-task speedup" "$rk" "<td class=\"r\">— <span class=\"sub\">#15</span></td>"
sub=$(dom_table "$tmp/dom.html" subs-b1) || no "no table subs-b1"
eq "history rows" "$(grep -o '<tr class="sub-row" data-id="[0-9]*"' <<<"$sub" | grep -o '[0-9][0-9]*' | tr '\n' ' ')" "16 15 14 13 12 "
has "public null speedup" "$sub" "<td class=\"st-ok\">ok</td><td class=\"st-ok\">ok</td>"
has "queued run shows its state" "$sub" "<td class=\"st-na\">running</td><td class=\"st-na\">queued</td>"
has "speedup shown" "$sub" "<td class=\"st-ok\">ok 1.02x</td><td class=\"st-ok\">ok 1.02x</td>"

# what must not be: no element the data could have made, no nan
hasnt "script element" "${dom,,}" "<script"
hasnt "img element" "${dom,,}" "<img"
for tag in iframe svg object embed form input; do
	hasnt "$tag element" "${dom,,}" "<$tag"
done
eq "event attributes" "$(grep -Eoi '<[a-z][^<>]*[[:space:]]on[a-z]+=' <<<"$dom" | wc -l)" 0
eq "links other than the boards'" "$(grep -o '<a [^>]*>' <<<"$dom" | grep -vc '^<a href="#board-[A-Za-z0-9_-]*">$')" 0
hasnt "nan" "${dom,,}" ">nan"
hasnt "nanx" "${dom,,}" "nanx"

# the picture
if chromium_shot "$url" "$tmp/page.png"; then
	size=$(stat -c %s "$tmp/page.png")
	[ "$size" -gt 5120 ] && ok || no "screenshot is $size bytes, want > 5 KB"
	eq "PNG signature" "$(head -c 8 "$tmp/page.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a
	[ -n "${PAGE_SHOT:-}" ] && cp "$tmp/page.png" "$PAGE_SHOT"
else
	no "chromium could not take a screenshot"
fi

echo "page_chromium: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
