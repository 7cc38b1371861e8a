#!/usr/bin/env bash
# crucible serve end to end on SQLite, through the real executable, curl and
# crucible submit: boards and users, honest and cheating submissions, every
# kind of bad request (a 4xx with a message), another user's submission, a
# burst of submissions at once, the server killed with -9 mid-queue and
# restarted (every accepted submission scored exactly once), rate limits and
# quotas, /v1/reward for a group, signatures checked offline and by the
# server, the rankings page read in headless Chromium, and the board's
# secret seed in no byte served or logged.
#   serve_sqlite.sh CRUCIBLE
set -uo pipefail
C=$1
here=$(cd "$(dirname "$0")" && pwd)
src=${CRUCIBLE_SRC:-$(cd "$here/../.." && pwd)}
export CRUCIBLE_DATADIR=${CRUCIBLE_DATADIR:-$src/data}
command -v curl >/dev/null || { echo "serve_sqlite: curl is missing (scripts/setup.sh installs it)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "serve_sqlite: sqlite3 is missing (scripts/setup.sh installs it)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crserve.XXXXXX")
chmod 755 "$tmp"
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
db=$tmp/s.db
mkdir -p "$tmp/resp"
nresp=0

start() { # start LOGNAME: the server on a free port, $url set
	rm -f "$tmp/ready"
	"$C" serve --db "$db" --listen 127.0.0.1:0 --ready-file "$tmp/ready" --workers 2 --lease 3 \
		--max-body 262144 --log "$tmp/$1.log" &
	pid=$!
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
	[ -s "$tmp/ready" ] || { echo "FAIL: the server did not start"; cat "$tmp/$1.log"; exit 1; }
	url=$(sed 's|/$||' "$tmp/ready")
}

# req METHOD PATH TOKEN [BODY-FILE]: sets $code, the body in $tmp/resp/N (kept: the
# secret is looked for in every byte served)
req() {
	nresp=$((nresp + 1))
	out=$tmp/resp/$nresp
	local args=(-s -o "$out" -w '%{http_code}' -X "$1" "$url$2")
	[ -n "$3" ] && args+=(-H "Authorization: Bearer $3")
	[ -n "${4:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "@$4")
	code=$(curl "${args[@]}")
}

expect() { # expect CODE WHAT: the last answer's status, and a message with any error
	if [ "$code" != "$1" ]; then
		bad "$2: HTTP $code, expected $1: $(head -c 300 "$out")"
		return
	fi
	if [ "$1" -ge 400 ] && ! jq -e '.error.message | length > 0' "$out" >/dev/null 2>&1; then
		bad "$2: HTTP $code without an error message: $(head -c 300 "$out")"
		return
	fi
	ok
}

json_body() { # json_body FILE [TASK]: a submission body of a candidate file
	jq -n --rawfile s "$1" --arg f "$(basename "$1")" '{source: $s, file_name: $f}' >"$tmp/body.json"
}

# ---- administration ----
"$C" serve --db "$db" board add relu --tasks smoke/relu --no-timing --quick >/dev/null || bad "board add relu"
"$C" serve --db "$db" board add relu_timed --tasks L1/relu,smoke/relu --quick --time-cap 0.2 >/dev/null ||
	bad "board add relu_timed"
"$C" serve --db "$db" board add relu 2>/dev/null --tasks smoke/relu && bad "a board name taken twice was accepted"
rc=0; "$C" serve --db "$db" board add x --tasks L9/nothing 2>"$tmp/e" || rc=$?
[ "$rc" = 2 ] || bad "board add with an unknown task: exit $rc, expected 2"
alice=$("$C" serve --db "$db" user add alice 2>/dev/null)
bob=$("$C" serve --db "$db" user add bob 2>/dev/null)
carol=$("$C" serve --db "$db" user add carol --rate 3 2>/dev/null)
dave=$("$C" serve --db "$db" user add dave --quota 1 2>/dev/null)
admin=$("$C" serve --db "$db" user add root --admin 2>/dev/null)
[[ $alice == crt_* && ${#alice} == 47 ]] || bad "token format: '$alice'"
sqlite3 "$db" "SELECT token_hash FROM users" | grep -qF "$alice" && bad "a token is stored in the clear"
[ "$(stat -c %a "$db")" = 600 ] || bad "the store is mode $(stat -c %a "$db"), not 600"
secret=$(sqlite3 "$db" "SELECT secret FROM boards WHERE name = 'relu'")
[ -n "$secret" ] || bad "no board secret in the store"

start serve1
[ "$(stat -c %a "$db.key")" = 600 ] || bad "the key file is not mode 600"

# ---- bad requests: each a 4xx with a message ----
json_body "$src/data/candidates/smoke/relu_fast.c"
req POST /v1/boards/relu/submissions "" "$tmp/body.json"; expect 401 "no token"
req POST /v1/boards/relu/submissions "crt_$(head -c 43 /dev/zero | tr '\0' A)" "$tmp/body.json"; expect 401 "a bad token"
req POST /v1/boards/relu/submissions "${alice}x" "$tmp/body.json"; expect 401 "a token with a byte added"
printf '{"source": "x", ' >"$tmp/bad.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/bad.json"; expect 400 "malformed JSON"
printf '[1,2]' >"$tmp/bad.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/bad.json"; expect 400 "a JSON array"
jq -n '{source: "int x;", file_nam: "a.c"}' >"$tmp/bad.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/bad.json"; expect 400 "an unknown field"
jq -n '{source: "int x;\n", file_name: "a.c"}' >"$tmp/bad.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/bad.json"; expect 400 "a candidate without directives"
jq -n --rawfile s "$src/data/candidates/smoke/relu_fast.c" '{source: $s, file_name: "../../x.c"}' >"$tmp/bad.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/bad.json"; expect 400 "a file name with a path"
jq -n --rawfile s "$src/data/candidates/smoke/relu_fast.c" '{source: $s, task: "L1/9999"}' >"$tmp/bad.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/bad.json"; expect 400 "an unknown task"
jq -n --rawfile s "$src/data/candidates/smoke/relu_fast.c" '{source: $s, task: "smoke/softmax"}' >"$tmp/bad.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/bad.json"; expect 400 "a task not on the board"
req POST /v1/boards/nope/submissions "$alice" "$tmp/body.json"; expect 404 "an unknown board"
head -c 300000 /dev/zero | tr '\0' a | jq -Rs '{source: .}' >"$tmp/big.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/big.json"; expect 413 "a body over --max-body"
req GET /v1/boards/relu/submissions "$alice"; expect 405 "GET on the submissions path"
req DELETE /v1/boards/relu "$alice"; expect 405 "DELETE on a board"
req GET /v1/nothing ""; expect 404 "an unknown path"
req GET /v1/submissions/abc "$alice"; expect 400 "an id that is not a number"
req GET /v1/submissions/999999 "$alice"; expect 404 "no such submission"
req POST /v1/reward "$alice" "$tmp/bad.json"; expect 400 "a reward request without completions"
# a request that is not HTTP: answered 400 by the HTTP layer, the service never sees it
port=${url##*:}
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GARBAGE \x01\x02\r\n\r\n' >&3
head -c 12 <&3 >"$tmp/raw" 2>/dev/null
exec 3<&- 3>&-
grep -q '^HTTP/1.1 400' "$tmp/raw" || bad "a request line that is not HTTP: '$(cat "$tmp/raw")'"

# a task given with the request: a source whose @task line is written '//<TAB>@task'
# is taken as it is; one with no @task line and a byte-order mark gets the line first
# and loses the mark (put before it, the mark mid-file no longer compiled)
sed 's|^// @task|//\t@task|' "$src/data/candidates/smoke/relu_plain.c" >"$tmp/tab.c"
jq -n --rawfile s "$tmp/tab.c" '{source: $s, file_name: "tab.c", task: "smoke/relu"}' >"$tmp/b1.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/b1.json"; expect 202 "a tab after // in the @task line, task given"
{ printf '\xef\xbb\xbf'; grep -v '@task' "$src/data/candidates/smoke/relu_plain.c"; } >"$tmp/bom.c"
jq -n --rawfile s "$tmp/bom.c" '{source: $s, file_name: "bom.c", task: "smoke/relu"}' >"$tmp/b2.json"
req POST /v1/boards/relu/submissions "$alice" "$tmp/b2.json"; expect 202 "a BOM and no @task line, task given"
bom_id=$(jq -r .id "$out")

# ---- honest and cheating kernels through crucible submit ----
export CRUCIBLE_TOKEN=$alice
rc=0; "$C" submit "$src/data/candidates/smoke/relu_fast.c" --server "$url" --board relu >"$tmp/s1" 2>&1 || rc=$?
[ "$rc" = 0 ] || { bad "submit of an honest kernel: exit $rc"; cat "$tmp/s1"; }
grep -q "ranks 1 of 1" "$tmp/s1" || { bad "the honest kernel does not rank first"; cat "$tmp/s1"; }
cheats="constant_output fp16_emulation nondeterministic exec_shell"
rc=0; "$C" submit $(for c in $cheats; do echo "$src/data/candidates/exploits/$c.c"; done) --server "$url" \
	--board relu >"$tmp/s2" 2>&1 || rc=$?
[ "$rc" = 1 ] || { bad "submit of the cheats: exit $rc, expected 1"; cat "$tmp/s2"; }
for c in $cheats; do
	grep -q "$c.c: #[0-9]* .*not ranked" "$tmp/s2" || { bad "the cheat $c is not said to be unranked"; cat "$tmp/s2"; }
done
rc=0; CRUCIBLE_TOKEN=nope "$C" submit "$src/data/candidates/smoke/relu_fast.c" --server "$url" --board relu 2>"$tmp/e" || rc=$?
[ "$rc" = 2 ] && grep -q "401" "$tmp/e" || bad "submit with a bad token: exit $rc: $(cat "$tmp/e")"
rc=0; "$C" submit "$src/data/candidates/smoke/relu_fast.c" --server "http://127.0.0.1:1" --board relu --retry-window 1 2>/dev/null || rc=$?
[ "$rc" = 3 ] || bad "submit to nothing: exit $rc, expected 3"
# a pipe (process substitution) and a name the service does not take as it is
cp "$src/data/candidates/smoke/relu_plain.c" "$tmp/my relu+.c"
rc=0; "$C" submit <(cat "$src/data/candidates/smoke/relu_plain.c") "$tmp/my relu+.c" --server "$url" \
	--board relu --no-wait >"$tmp/s3" 2>&1 || rc=$?
[ "$rc" = 0 ] || { bad "submit of a pipe and of 'my relu+.c': exit $rc"; cat "$tmp/s3"; }
sqlite3 "$db" "SELECT file_name FROM submissions" | grep -qx 'my_relu_.c' || bad "'my relu+.c' is not shown as my_relu_.c"
unset CRUCIBLE_TOKEN

# another user's submission is not found (nor is it said to exist)
first=$(sqlite3 "$db" "SELECT min(id) FROM submissions")
req GET "/v1/submissions/$first" "$bob"; expect 404 "bob reading alice's submission"
req GET "/v1/submissions/$first" "$admin"; expect 200 "an admin reading alice's submission"
req GET "/v1/submissions/$first" "$alice"; expect 200 "alice reading her own"
cp "$out" "$tmp/alice1.json"

# ---- signatures ----
"$C" serve --db "$db" verify "$tmp/alice1.json" >/dev/null || bad "verify of a served result failed"
"$C" serve verify "$tmp/alice1.json" --server "$url" >/dev/null || bad "verify through the server failed"
jq '.signed.score = 9.9' "$tmp/alice1.json" >"$tmp/forged.json"
rc=0; "$C" serve --db "$db" verify "$tmp/forged.json" >/dev/null || rc=$?
[ "$rc" = 1 ] || bad "a forged score verified (exit $rc)"
jq '.signed.public_status = "ok" | .signed.score = "9.9"' "$tmp/alice1.json" >"$tmp/forged.json"
rc=0; "$C" serve --db "$db" verify "$tmp/forged.json" >/dev/null || rc=$?
[ "$rc" = 1 ] || bad "a score turned into a string verified (exit $rc)"
jq -e '.signed.user == "alice" and .signed.ranked == true and (.signed | has("rank") | not)' "$tmp/alice1.json" >/dev/null ||
	bad "the signed object: $(jq -c .signed "$tmp/alice1.json")"
jq -e '.secret | has("speedup") | not' "$tmp/alice1.json" >/dev/null || bad "the secret run's speedup is shown"
jq '.signed.user = "bob"' "$tmp/alice1.json" >"$tmp/forged.json"
req POST /v1/verify "" "$tmp/forged.json"; expect 200 "verify a forged row"
jq -e '.valid == false' "$out" >/dev/null || bad "the server said a forged row is valid"

# ---- rate limit and quota ----
# carol's twin is the user whose id is carol's + 256: a table of 256 buckets
# keyed by id % 256 once let the two refill each other's
cid=$(sqlite3 "$db" "SELECT id FROM users WHERE name = 'carol'")
sqlite3 "$db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
	INSERT INTO users (name, token_hash, admin, quota, rate, created_ms)
	SELECT 'filler' || i, 'x' || i, 0, 1, 1, 0 FROM n WHERE i <= $cid + 256 - (SELECT max(id) FROM users) - 1"
twin=$("$C" serve --db "$db" user add twin --rate 3 2>/dev/null)
[ "$(sqlite3 "$db" "SELECT id FROM users WHERE name = 'twin'")" = $((cid + 256)) ] || bad "the twin's id is not carol's + 256"
for i in 1 2 3; do req GET /v1/submissions/1 "$carol"; req GET /v1/submissions/1 "$twin"; done
req GET /v1/submissions/1 "$carol"; expect 429 "carol over 3 requests a minute"
req GET /v1/submissions/1 "$twin"; expect 429 "carol's twin over 3 requests a minute"
grep -qi '^retry-after' <(curl -s -D - -o /dev/null -H "Authorization: Bearer $carol" "$url/v1/submissions/1") ||
	bad "429 without Retry-After"
json_body "$src/data/candidates/smoke/relu_plain.c"
req POST /v1/boards/relu/submissions "$dave" "$tmp/body.json"; expect 202 "dave's first"
req POST /v1/boards/relu/submissions "$dave" "$tmp/body.json"; expect 429 "dave over his quota of 1"

# ---- a burst at once, then the server killed with -9 mid-queue ----
burst=10
json_body "$src/data/candidates/smoke/relu_plain.c"
for i in $(seq $burst); do
	curl -s -o "$tmp/resp/burst$i" -w '%{http_code}\n' -H "Authorization: Bearer $bob" \
		-H 'Content-Type: application/json' --data-binary "@$tmp/body.json" \
		"$url/v1/boards/relu/submissions" >>"$tmp/burst_codes" &
done
wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null
n202=$(grep -c '^202$' "$tmp/burst_codes")
[ "$n202" = $burst ] || bad "burst: $n202 of $burst accepted: $(sort "$tmp/burst_codes" | uniq -c)"
# wait until some job of the burst runs, then kill
for _ in $(seq 100); do
	[ "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE state = 'running'")" -gt 0 ] && break
	sleep 0.1
done
accepted=$(sqlite3 "$db" "SELECT count(*) FROM submissions")
checks=$(pgrep -P "$pid" -f " check " | tr '\n' ' ')
kill -9 "$pid"; wait "$pid" 2>/dev/null; pid=""
left=$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE state <> 'done'")
[ "$left" -gt 0 ] || bad "the kill came after the queue was empty: the test proves nothing"
# its checks die with it (PR_SET_PDEATHSIG); a killed process takes a moment to go
# (only its own: another test may be running checks of the same executable)
[ -n "$checks" ] || bad "no check ran under the server when it was killed"
alive() { for c in $checks; do [ -d "/proc/$c" ] && ! grep -q '^State:.*Z' "/proc/$c/status" 2>/dev/null && return 0; done; return 1; }
for _ in $(seq 50); do alive || break; sleep 0.1; done
alive && bad "a check outlived its killed server by 5 s"
start serve2
for _ in $(seq 600); do
	[ "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE state <> 'done'")" = 0 ] && break
	sleep 0.5
done
[ "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE state <> 'done'")" = 0 ] || bad "jobs left after the restart"
[ "$(sqlite3 "$db" "SELECT count(*) FROM submissions")" = "$accepted" ] || bad "submissions lost or added"
[ "$(sqlite3 "$db" "SELECT count(*) FROM submissions WHERE state <> 'scored'")" = 0 ] ||
	bad "submissions not scored: $(sqlite3 "$db" "SELECT id, state FROM submissions WHERE state <> 'scored'")"
[ "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE submission_id IS NOT NULL")" = $((2 * accepted)) ] ||
	bad "a submission has other than two runs"
# each job recorded exactly once over both servers' logs
dups=$(cat "$tmp"/serve1.log "$tmp"/serve2.log | grep -v "harness failure" | grep -o "job [0-9]* ([a-z]*, [^)]*): [a-z_]*" |
	awk '{print $2}' | sort | uniq -d)
[ -z "$dups" ] || bad "jobs recorded twice: $dups"
recorded=$(cat "$tmp"/serve1.log "$tmp"/serve2.log | grep -v "harness failure" | grep -o "job [0-9]* ([a-z]*, [^)]*): [a-z_]*" |
	awk '{print $2}' | sort -u | wc -l)
[ "$recorded" = "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE code_block = 1 AND status <> 'skipped'")" ] ||
	bad "$recorded jobs recorded in the logs, $(sqlite3 "$db" "SELECT count(*) FROM jobs") in the store"
grep -q "took back" "$tmp/serve2.log" || bad "the restarted server did not say it took back the killed one's jobs"

[ "$(sqlite3 "$db" "SELECT status FROM jobs WHERE submission_id = $bom_id AND kind = 'public'")" = ok ] ||
	bad "the BOM file with its @task line added: $(sqlite3 "$db" "SELECT status, detail FROM jobs WHERE submission_id = $bom_id")"

# ---- the ranking holds honest submissions only ----
req GET /v1/boards/relu ""; expect 200 "the board's view"
honest=$(sha256sum "$src/data/candidates/smoke/relu_fast.c" "$src/data/candidates/smoke/relu_plain.c" "$tmp/tab.c" | awk '{print $1}')
honest+=" $(sqlite3 "$db" "SELECT sha256 FROM submissions WHERE id = $bom_id")"
for sha in $(sqlite3 "$db" "SELECT s.sha256 FROM submissions s JOIN jobs p ON p.submission_id = s.id AND p.kind = 'public' JOIN jobs q ON q.submission_id = s.id AND q.kind = 'secret' WHERE p.status = 'ok' AND q.status = 'ok'"); do
	grep -q "$sha" <<<"$honest" || bad "a ranked submission is not an honest file ($sha)"
done
ranked_users=$(jq -r '.task_rankings[0].ranking[].user' "$out" | sort | tr '\n' ' ')
[ "$ranked_users" = "alice bob dave " ] || bad "ranked users: '$ranked_users'"
jq -e '[.submissions[] | select(.ranked) | .file_name] | all(. == "relu_fast.c" or . == "relu_plain.c" or . == "tab.c" or . == "bom.c" or . == "my_relu_.c" or . == "submission.c")' "$out" >/dev/null ||
	bad "a cheat is ranked"

# ---- rewards for a group ----
fence='```'
jq -n --rawfile good "$src/data/candidates/smoke/relu_fast.c" --rawfile cheat "$src/data/candidates/exploits/constant_output.c" \
	--arg f "$fence" '{task: "smoke/relu", timing: false,
	  completions: ["Here it is:\n\($f)c\n\($good)\n\($f)\n", "I cannot write this kernel.",
	                "\($f)c\n\($cheat)\n\($f)"]}' >"$tmp/reward.json"
req POST /v1/reward "$alice" "$tmp/reward.json"; expect 200 "a reward group"
jq -e '.done and (.results | length == 3)' "$out" >/dev/null || bad "reward: not done: $(head -c 400 "$out")"
jq -e '.results[0].status == "ok" and .results[0].reward == 1' "$out" >/dev/null || bad "reward of the honest completion: $(jq -c '.results[0]' "$out")"
jq -e '.results[1].code_block == false and .results[1].status == "no_code" and .results[1].reward == 0' "$out" >/dev/null ||
	bad "reward of the completion without code: $(jq -c '.results[1]' "$out")"
jq -e '.results[2].status == "degenerate" and .results[2].reward == 0 and (.results[2].feedback | length > 0)' "$out" >/dev/null ||
	bad "reward of the cheat: $(jq -c '.results[2]' "$out")"
gid=$(jq -r .id "$out")
req GET "/v1/reward/$gid" "$bob"; expect 404 "bob reading alice's reward group"

# ---- the rankings page, rendered by Chromium ----
if [ -f "$here/chromium_lib.sh" ]; then
	# shellcheck source=/dev/null
	. "$here/chromium_lib.sh"
	if chromium_dump "$url/" "$tmp/page.html"; then
		grep -q 'relu_fast.c' "$tmp/page.html" || bad "the page does not list relu_fast.c"
		grep -q 'id="ranking-relu"' "$tmp/page.html" || bad "the page has no ranking table of board relu"
		grep -q 'alice' "$tmp/page.html" || bad "the page does not show alice"
		cp "$tmp/page.html" "$tmp/resp/page"
	else
		bad "Chromium could not render the page"
	fi
else
	bad "tests/serve/chromium_lib.sh is missing"
fi
curl -s "$url/" >"$tmp/resp/page_raw"
curl -s "$url/?board=relu" >"$tmp/resp/page_relu"

# ---- the secret: in no byte served or logged ----
for f in "$tmp"/resp/* "$tmp"/*.log "$tmp"/s1 "$tmp"/s2; do
	grep -qF "$secret" "$f" && bad "the board's secret appears in $(basename "$f")"
done

# ---- SIGTERM: a clean stop; a reward request waiting is answered at once ----
jq '.wait_s = 600' "$tmp/reward.json" >"$tmp/reward_wait.json"
curl -s -o "$tmp/resp/wait" -w '%{http_code}' -H "Authorization: Bearer $bob" \
	-H 'Content-Type: application/json' --data-binary "@$tmp/reward_wait.json" "$url/v1/reward" >"$tmp/wait_code" &
cpid=$!
sleep 0.5
t0=$(date +%s)
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
pid=""
wait "$cpid"
[ "$rc" = 0 ] || bad "the server stopped by SIGTERM exited $rc"
code=$(cat "$tmp/wait_code")
[ "$code" = 202 ] || [ "$code" = 200 ] || bad "a waiting reward request got '$code' at shutdown"
[ $(($(date +%s) - t0)) -lt 30 ] || bad "the shutdown waited on a reward request"
[ "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE state = 'running'")" = 0 ] ||
	bad "a job was left running by a clean stop"

echo "serve_sqlite: $n_checks checks passed, $fails failed"
[ "$fails" = 0 ]
