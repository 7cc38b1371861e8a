#!/usr/bin/env bash
# eval and check as a newcomer meets them (issue 32): the same file named
# three ways counts once; an unknown --task is a usage error; --out is made
# with its parents and locked (a second eval into it is refused, naming the
# holder); Ctrl-C keeps what is done, says "interrupted after k of N" and
# exits 130, and --resume finishes the run; --resume over an unreadable
# results.csv keeps it aside; rows sorted by (task, candidate); run.json's
# started/finished, slurm and candidates_seen; the closing line.
set -u
exe="$1"; out="$2"
rm -rf "$out"; mkdir -p "$out"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
smoke="$CRUCIBLE_DATADIR/candidates/smoke"

# --- the same file three times, and a folder holding it: one row
mkdir -p "$out/c"
cp "$smoke/relu_plain.c" "$smoke/relu_plain.json" "$smoke/rowsum_fast.c" "$smoke/rowsum_fast.json" "$out/c/"
"$exe" eval "$out/c/relu_plain.c" "$out/c/relu_plain.c" "$out/c/./relu_plain.c" "$out/c" \
	--no-timing --jobs 1 --out "$out/d/e/f" >"$out/dedupe.out" 2>"$out/dedupe.err"; rc=$?
[ "$rc" -eq 0 ] && ok || no "eval of one file named four ways exited $rc: $(tail -3 "$out/dedupe.err")"
# --out a/b/c: made with its parents
[ -f "$out/d/e/f/results.csv" ] && ok || no "--out d/e/f was not created"
rows=$(($(wc -l < "$out/d/e/f/results.csv") - 1))
[ "$rows" -eq 2 ] && ok || no "one file named four ways (and a second file): $rows rows, want 2"
grep -q "counted once" "$out/dedupe.err" && ok || no "the duplicate names were not reported"
# the closing line, pytest's way
grep -Eq '^2 evaluated: 2 ok in [0-9.]+ s$' "$out/dedupe.err" && ok ||
	no "no closing line '2 evaluated: 2 ok in N s': $(tail -2 "$out/dedupe.err")"
# run.json: when, and what it saw (every collected candidate, once)
rj="$out/d/e/f/run.json"
grep -Eq '"started": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"' "$rj" && ok || no "run.json: no started"
grep -Eq '"finished": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"' "$rj" && ok || no "run.json: no finished"
grep -q '"slurm": null' "$rj" && ok || no "run.json: slurm not null outside Slurm"
tr -d ' \n' < "$rj" | grep -Eq '"candidates_seen":\{"count":2,"sha256":"[0-9a-f]{64}"\}' && ok ||
	no "run.json: candidates_seen is not {count 2, sha256}"

# --- check --task with a name no task has: exit 2, said as a usage error
err=$("$exe" check "$smoke/relu_plain.c" --task L1/sofmax --no-timing 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && case "$err" in *"unknown task 'L1/sofmax'"*) true ;; *) false ;; esac && ok ||
	no "check --task L1/sofmax: exit $rc, $err"
case "$err" in *"line 0"*|*format_error*) no "check --task unknown reads as the candidate's error: $err" ;; *) ok ;; esac
err=$("$exe" eval "$smoke" --tasks L1/nosuchtask --no-timing --out "$out/unk" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && ok || no "eval --tasks L1/nosuchtask: exit $rc, $err"

# --- help: the shared layout, exit status and environment
h=$("$exe" eval --help); rc=$?
[ "$rc" -eq 0 ] && case "$h" in *"EXIT STATUS"*"130"*"ENVIRONMENT"*CRUCIBLE_DATADIR*CRUCIBLE_REF_CACHE_MB*) true ;; *) false ;; esac &&
	ok || no "eval --help lacks EXIT STATUS (130) or ENVIRONMENT"
h=$("$exe" help check); rc=$?
[ "$rc" -eq 0 ] && case "$h" in "usage: crucible check"*"EXIT STATUS"*) true ;; *) false ;; esac && ok || no "help check"
err=$("$exe" eval --outt x 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && case "$err" in *"unknown option '--outt' (did you mean '--out'?)"*) true ;; *) false ;; esac &&
	ok || no "eval --outt: exit $rc, $err"

# --- Slurm ids in run.json
SLURM_JOB_ID=4242 SLURM_ARRAY_JOB_ID=4240 SLURM_ARRAY_TASK_ID=2 \
	"$exe" eval "$out/c/relu_plain.c" --no-timing --jobs 1 --out "$out/slurm" >/dev/null 2>&1
tr -d ' \n' < "$out/slurm/run.json" | grep -q '"slurm":{"array_job_id":"4240","array_task_id":"2","job_id":"4242"}' &&
	ok || no "run.json slurm ids: $(grep -A4 slurm "$out/slurm/run.json")"

# --- one --out, two evals at once: the second refused, naming the first
"$exe" eval "$smoke" --no-timing --jobs 1 --out "$out/busy" >/dev/null 2>"$out/busy.err" &
pid=$!
for _ in $(seq 1 600); do
	[ -f "$out/busy/results.csv" ] && [ "$(wc -l < "$out/busy/results.csv")" -ge 3 ] && break
	sleep 0.1
done
# run.json is there from the start, saying the run is not finished
grep -q '"finished": null' "$out/busy/run.json" && grep -q '"complete": false' "$out/busy/run.json" && ok ||
	no "run.json during the run: not finished:null, complete:false"
err=$("$exe" eval "$out/c/relu_plain.c" --no-timing --out "$out/busy" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && case "$err" in *"in use by crucible eval, pid $pid "*) true ;; *) false ;; esac && ok ||
	no "a second eval into a busy --out: exit $rc, $err"
# --- Ctrl-C: the finished rows kept, the line, exit 130
kill -INT "$pid"
wait "$pid"; rc=$?
[ "$rc" -eq 130 ] && ok || no "eval stopped by SIGINT exited $rc (want 130): $(tail -3 "$out/busy.err")"
grep -Eq '^crucible eval: interrupted after [0-9]+ of 18: rerun with --resume$' "$out/busy.err" && ok ||
	no "no 'interrupted after k of 18' line: $(tail -3 "$out/busy.err")"
grep -q '"complete": false' "$out/busy/run.json" && grep -q '"interrupted": "SIGINT"' "$out/busy/run.json" && ok ||
	no "run.json of an interrupted run: not complete:false, interrupted:SIGINT"
kept=$(($(wc -l < "$out/busy/results.csv") - 1))
[ "$kept" -ge 2 ] && ok || no "interrupted: only $kept rows kept"
sleep 0.5
# a job is a fork of eval: the same command line
left=$(pgrep -f -- "--out $out/busy\b" 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && ok || no "interrupted: $left process(es) of the run left"
# ... and --resume completes it: every candidate once, rows sorted
"$exe" eval "$smoke" --no-timing --jobs 2 --out "$out/busy" --resume >/dev/null 2>"$out/resume.err"; rc=$?
[ "$rc" -eq 0 ] && ok || no "--resume after SIGINT exited $rc: $(tail -3 "$out/resume.err")"
rows=$(($(wc -l < "$out/busy/results.csv") - 1))
uniq=$(tail -n +2 "$out/busy/results.csv" | cut -d, -f3 | sort -u | wc -l)
[ "$rows" -eq 18 ] && [ "$uniq" -eq 18 ] && ok || no "after --resume: $rows rows, $uniq candidates (want 18, 18)"
keys=$(tail -n +2 "$out/busy/results.csv" | cut -d, -f2,3)
[ "$keys" = "$(printf '%s\n' "$keys" | LC_ALL=C sort -t, -k1,1V -k2,2V)" ] && ok ||
	no "rows not sorted by (task, candidate)"
grep -q "already in results.csv" "$out/resume.err" && ok || no "--resume: the closing line does not count the rows found"

# --- the same under --jobs 2: the jobs in flight killed and reaped
"$exe" eval "$smoke" --no-timing --jobs 2 --out "$out/busy2" >/dev/null 2>"$out/busy2.err" &
pid=$!
for _ in $(seq 1 600); do
	[ -f "$out/busy2/results.csv" ] && [ "$(wc -l < "$out/busy2/results.csv")" -ge 3 ] && break
	sleep 0.1
done
kill -TERM "$pid"
wait "$pid"; rc=$?
[ "$rc" -eq 143 ] && grep -q "interrupted after" "$out/busy2.err" && ok ||
	no "--jobs 2 stopped by SIGTERM: exit $rc (want 143): $(tail -3 "$out/busy2.err")"
sleep 0.5
left=$(pgrep -f -- "--out $out/busy2" 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && ok || no "--jobs 2 interrupted: $left job(s) left"
"$exe" eval "$out/c/relu_plain.c" --no-timing --jobs 1 --out "$out/busy2" >/dev/null 2>&1 && ok ||
	no "the --out of a stopped run is still locked"

# --- --resume over an unreadable results.csv: kept aside, said, a fresh start
head -c 2000 /dev/urandom > "$out/d/e/f/results.csv"
"$exe" eval "$out/c" --no-timing --jobs 1 --out "$out/d/e/f" --resume >/dev/null 2>"$out/aside.err"; rc=$?
[ "$rc" -eq 0 ] && ok || no "--resume over garbage exited $rc: $(tail -3 "$out/aside.err")"
ls "$out/d/e/f"/results.csv.unreadable-* >/dev/null 2>&1 && grep -q "kept aside as" "$out/aside.err" && ok ||
	no "the unreadable results.csv was not kept aside: $(ls "$out/d/e/f")"
rows=$(($(wc -l < "$out/d/e/f/results.csv") - 1))
[ "$rows" -eq 2 ] && ok || no "after keeping the garbage aside: $rows rows, want 2"
# ... while another version's results.csv (readable) is still refused
printf '"run_id","task","candidate"\n' > "$out/d/e/f/results.csv"
"$exe" eval "$out/c" --no-timing --jobs 1 --out "$out/d/e/f" --resume >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] && ok || no "--resume over another version's results.csv: exit $rc, want 2"

# --- TMPDIR: honoured when the candidates' user can reach it, else /tmp, said
mkdir -p "$out/priv/inner"; chmod 700 "$out/priv"
err=$(TMPDIR="$out/priv/inner" "$exe" check "$smoke/relu_plain.c" --no-timing 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 0 ] && case "$err" in *"TMPDIR=$out/priv/inner"*"work folders go to /tmp"*) true ;; *) false ;; esac &&
	ok || no "TMPDIR out of the candidates' reach: exit $rc, $err"

# --- a folder holding a crucible run is not an eval's: refused, untouched
mkdir -p "$out/runfolder"
printf '{"command": "run", "run_id": "x"}\n' > "$out/runfolder/run.json"
printf 'keep\n' > "$out/runfolder/selected.csv"
err=$("$exe" eval "$smoke/relu_plain.c" --no-timing --out "$out/runfolder" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && grep -q "holds a crucible run" <<<"$err" && ok || no "eval into a run folder: exit $rc: $err"
[ ! -e "$out/runfolder/results.csv" ] && grep -q '"run"' "$out/runfolder/run.json" && ok ||
	no "eval into a run folder wrote into it"
# --- an --out that cannot be made is the environment's (exit 3), as for every command
touch "$out/afile"
"$exe" eval "$smoke/relu_plain.c" --no-timing --out "$out/afile/x" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 3 ] && ok || no "eval --out under a file: exit $rc, want 3"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
