#!/usr/bin/env bash
# scripts/slurm-eval.sh read as a Slurm user reads it (issue 32, docs/SCALE.md
# "Slurm"): fake sbatch and scontrol on PATH record every command line, and a
# fake crucible records how the shard and merge steps call it. Checked: the
# merge job never asks for a GPU nor is an array, has --kill-on-invalid-dep=yes
# and afterok on the array's id; shard options reach only the array job;
# --throttle K is %K; GPU requests and --array in the wrong place are refused
# by name; --dry-run prints the lines and submits nothing; MaxArraySize splits
# the array; resubmit-failed resubmits only the unfinished shards (a running,
# locked one left alone) with the settings of submit; merge-only is a merge
# job alone; the shard step honours TMPDIR and --tmpdir and passes the Slurm
# ids through untouched. Slurm itself is not needed (nor run).
# usage: slurm_script.sh SOURCE_ROOT OUTDIR
set -uo pipefail
src="$1"; out="$2"
slurm="$src/scripts/slurm-eval.sh"
rm -rf "$out"
mkdir -p "$out/bin"
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
no() { fail=$((fail + 1)); echo "FAIL: $*"; }
has() { [[ $2 == *"$3"* ]] && ok "$1" || no "$1: \"$3\" not in: ${2:-<empty>}"; }
hasnt() { [[ $2 != *"$3"* ]] && ok "$1" || no "$1: \"$3\" should not be in: $2"; }
code() { [ "$2" -eq "$3" ] && ok "$1: exit $3" || no "$1: exit $2, want $3"; }

# fake sbatch: one line per call (its arguments, shell-quoted), ids 1001, 1002...
# printed the way --parsable prints them on a federated cluster ("id;cluster")
cat > "$out/bin/sbatch" <<'EOF'
#!/usr/bin/env bash
log="$SLURM_FAKE_LOG"
n=$(( $(cat "$log" 2>/dev/null | wc -l) + 1 ))
if [ "$n" = "${SLURM_FAKE_FAIL_AT:-0}" ]; then
	echo "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy" >&2
	exit 1
fi
printf '%q ' "$@" >> "$log"; echo >> "$log"
echo "$((1000 + n));cluster0"
EOF
# fake scontrol: MaxArraySize from the environment
cat > "$out/bin/scontrol" <<'EOF'
#!/usr/bin/env bash
[ "$*" = "show config" ] || exit 1
echo "MaxArraySize            = ${SLURM_FAKE_MAXARRAY:-1001}"
echo "MaxJobCount             = 10000"
EOF
# fake crucible: its arguments, its TMPDIR and the Slurm ids it was given
cat > "$out/bin/crucible" <<'EOF'
#!/usr/bin/env bash
{ printf '%q ' "$@"; echo; echo "TMPDIR=${TMPDIR:-unset}"
  echo "SLURM_JOB_ID=${SLURM_JOB_ID:-unset} SLURM_ARRAY_JOB_ID=${SLURM_ARRAY_JOB_ID:-unset} SLURM_ARRAY_TASK_ID=${SLURM_ARRAY_TASK_ID:-unset}"
} > "$CRUCIBLE_FAKE_LOG"
exit "${CRUCIBLE_FAKE_RC:-0}"
EOF
chmod +x "$out/bin/"*
export PATH="$out/bin:$PATH" SLURM_FAKE_LOG="$out/sbatch.log" CRUCIBLE_FAKE_LOG="$out/crucible.log"
unset SLURM_JOB_ID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID CRUCIBLE
fake="$out/bin/crucible"
line() { sed -n "${1}p" "$SLURM_FAKE_LOG"; }
calls() { [ -f "$SLURM_FAKE_LOG" ] && wc -l < "$SLURM_FAKE_LOG" || echo 0; }
reset() { rm -f "$SLURM_FAKE_LOG"; }

# ---- submit: the array job gets the shard options, the merge job none of them ----
reset
o=$("$slurm" submit -n 5 -o "$out/r1" -c "$fake" -s "-p cpu --account=lab" \
	--shard-sbatch "--gres=gpu:1 --cpus-per-task=8 --time=04:00:00" \
	--merge-sbatch "--time=00:15:00 --mem=2G" --throttle 2 -- "$out/my cands" --tasks L1 2>&1); rc=$?
code "submit" "$rc" 0
[ "$(calls)" -eq 2 ] && ok "submit: two sbatch calls" || no "submit: $(calls) sbatch calls: $(cat "$SLURM_FAKE_LOG")"
a=$(line 1); m=$(line 2)
has "array job: throttled --array" "$a" "--array=0-4%2 "
has "array job: the shard options" "$a" "--gres=gpu:1 --cpus-per-task=8 --time=04:00:00"
has "array job: the common options" "$a" "-p cpu --account=lab"
has "array job: shard mode" "$a" " shard -n 5 -o $out/r1 "
has "array job: a candidate path with a blank is one argument" "$a" '-- '"$out"'/my\ cands --tasks L1 --seed '
has "array job: one seed drawn for all" "$o" "every shard runs with --seed"
hasnt "array job: no merge options" "$a" "--mem=2G"
hasnt "array job: no dependency" "$a" "--dependency"
has "merge job: afterok on the array's id (';cluster' cut)" "$m" "--dependency=afterok:1001 "
has "merge job: kill-on-invalid-dep" "$m" "--kill-on-invalid-dep=yes"
hasnt "merge job: no --gres" "$m" "--gres"
hasnt "merge job: nothing about GPUs" "$m" "gpu"
hasnt "merge job: not an array" "$m" "--array"
hasnt "merge job: not the shard's cores" "$m" "--cpus-per-task"
has "merge job: its own options" "$m" "--time=00:15:00 --mem=2G"
has "merge job: the common options" "$m" "-p cpu --account=lab"
has "merge job: merge mode" "$m" " merge -n 5 -o $out/r1 "
has "submit says the ids" "$o" "array job 1001 (shards 0-4 of 0..4); merge job 1002"
[ -f "$out/r1/slurm-eval/sb_shard" ] && [ -f "$out/r1/slurm-eval/eval_args" ] &&
	ok "submit keeps its settings in OUT/slurm-eval/" || no "no settings in $out/r1/slurm-eval"
# submitted twice into one OUT: refused
reset
o=$("$slurm" submit -n 5 -o "$out/r1" -c "$fake" -- x 2>&1); rc=$?
code "a second submit into the same OUT" "$rc" 2
has "... says what to do" "$o" "resubmit-failed"

# ---- the options that would reach the merge job: refused by name ----
reset
for bad in "-s --gres=gpu:1" "-s --gpus=2" "--merge-sbatch --gres=gpu:a100:1" \
	"--merge-sbatch -G1" "--merge-sbatch --gpus-per-node=1" "-s --mem-per-gpu=8G"; do
	set -- $bad
	o=$("$slurm" submit -n 3 -o "$out/bad" -c "$fake" "$1" "$2" -- x 2>&1); rc=$?
	code "$bad refused" "$rc" 2
	has "$bad: says to use --shard-sbatch" "$o" "give it with --shard-sbatch"
done
o=$("$slurm" submit -n 3 -o "$out/bad" -c "$fake" --merge-sbatch "--gres gpu:1" -- x 2>&1); rc=$?
code "--merge-sbatch '--gres gpu:1' (two words) refused" "$rc" 2
for bad in "-s --array=0-3%1" "--shard-sbatch --array=1-2" "--shard-sbatch -a0-3"; do
	set -- $bad
	o=$("$slurm" submit -n 3 -o "$out/bad" -c "$fake" "$1" "$2" -- x 2>&1); rc=$?
	code "$bad refused" "$rc" 2
	has "$bad: says to use --throttle" "$o" "--throttle K"
done
o=$("$slurm" submit -n 3 -o "$out/bad" -c "$fake" --merge-sbatch "--dependency=afterok:1" -- x 2>&1); rc=$?
code "--merge-sbatch --dependency refused" "$rc" 2
o=$("$slurm" submit -n 3 -o "$out/bad" -c "$fake" --throttle 0 -- x 2>&1); rc=$?
code "--throttle 0 refused" "$rc" 2
[ "$(calls)" -eq 0 ] && ok "nothing submitted by a refused command" || no "refused commands submitted: $(cat "$SLURM_FAKE_LOG")"
# a partition called gpu is not a GPU request
o=$("$slurm" submit -n 3 -o "$out/part" -c "$fake" -s "-p gpu" --dry-run -- x 2>&1); rc=$?
code "-s '-p gpu' (a partition's name) accepted" "$rc" 0

# ---- --dry-run: the exact lines, nothing submitted, nothing made ----
reset
o=$("$slurm" submit -n 4 -o "$out/dry" -c "$fake" --shard-sbatch "--gres=gpu:1" --dry-run -- x --seed 3 2>&1); rc=$?
code "--dry-run" "$rc" 0
[ "$(calls)" -eq 0 ] && ok "--dry-run calls no sbatch" || no "--dry-run called sbatch"
[ ! -e "$out/dry" ] && ok "--dry-run makes no folder" || no "--dry-run made $out/dry"
sb=$(grep '^sbatch ' <<<"$o")
[ "$(wc -l <<<"$sb")" -eq 2 ] && ok "--dry-run prints two sbatch lines" || no "--dry-run printed: $o"
has "--dry-run array line" "$(sed -n 1p <<<"$sb")" "--array=0-3 "
has "--dry-run merge line" "$(sed -n 2p <<<"$sb")" "--dependency=afterok:JOBID1 --kill-on-invalid-dep=yes"
hasnt "--dry-run merge line: no GPU" "$(sed -n 2p <<<"$sb")" "gpu"
has "--dry-run says so" "$o" "dry run: nothing submitted"

# ---- MaxArraySize: from scontrol, or given; more shards are several arrays ----
reset
o=$(SLURM_FAKE_MAXARRAY=4 "$slurm" submit -n 10 -o "$out/big" -c "$fake" -- x --seed 1 2>&1); rc=$?
code "10 shards, MaxArraySize 4 (scontrol)" "$rc" 0
[ "$(calls)" -eq 4 ] && ok "three arrays and a merge job" || no "$(calls) sbatch calls: $(cat "$SLURM_FAKE_LOG")"
has "array 1: indices 0-3, offset 0" "$(line 1)" "--array=0-3 "
has "array 1: offset 0" "$(line 1)" "--offset 0 "
has "array 2: offset 4" "$(line 2)" "--offset 4 "
has "array 3: indices 0-1, offset 8" "$(line 3)" "--array=0-1 "
has "array 3: offset 8" "$(line 3)" "--offset 8 "
has "merge after all three" "$(line 4)" "--dependency=afterok:1001:1002:1003 --kill-on-invalid-dep=yes"
has "the split is said" "$o" "more than MaxArraySize 4"
reset
o=$("$slurm" submit -n 10 -o "$out/big2" -c "$fake" --max-array-size 5 --throttle 3 -- x --seed 1 2>&1); rc=$?
code "--max-array-size 5 --throttle 3" "$rc" 0
has "array 1 throttled" "$(line 1)" "--array=0-4%3 "
has "array 2 waits for array 1 (the throttle holds across arrays)" "$(line 2)" "--dependency=afterany:1001 "
has "array 2 throttled" "$(line 2)" "--array=0-4%3 "

# ---- -p: the merge runs whatever the shards' exits and merges what finished ----
reset
"$slurm" submit -n 2 -o "$out/part2" -c "$fake" -p -- x --seed 1 >/dev/null 2>&1
has "-p: merge afterany" "$(line 2)" "--dependency=afterany:1001 "
has "-p: merge --partial" "$(line 2)" " merge -n 2 -o $out/part2 -c $fake --partial"

# ---- sbatch refusing: exit 3, saying what was submitted already ----
reset
o=$(SLURM_FAKE_FAIL_AT=2 "$slurm" submit -n 8 -o "$out/sbf1" -c "$fake" --max-array-size 4 -- x --seed 1 2>&1); rc=$?
code "sbatch refuses the second array" "$rc" 3
has "... sbatch's own error shown" "$o" "Job violates accounting/QOS policy"
has "... names the shards and the array already in" "$o" "no array job for shards 4-7; submitted already: array job(s) 1001"
reset
o=$(SLURM_FAKE_FAIL_AT=2 "$slurm" submit -n 3 -o "$out/sbf2" -c "$fake" -- x --seed 1 2>&1); rc=$?
code "sbatch refuses the merge job" "$rc" 3
has "... says to use merge-only" "$o" "no merge job after array job(s) 1001: submit it with 'scripts/slurm-eval.sh merge-only -o $out/sbf2'"

# ---- the shard step: index, offset, TMPDIR, Slurm ids untouched ----
rc=0
SLURM_JOB_ID=77 SLURM_ARRAY_JOB_ID=70 SLURM_ARRAY_TASK_ID=1 TMPDIR="$out/scratch/job77" \
	"$slurm" shard -n 10 -o "$out/sh" -c "$fake" --offset 4 -- cands --seed 5 >/dev/null 2>&1 || rc=$?
code "shard step" "$rc" 0
c=$(cat "$CRUCIBLE_FAKE_LOG")
has "shard: index 1 + offset 4 is shard 6/10" "$c" "eval --shard 6/10 cands --seed 5 --out $out/sh/shard-5"
hasnt "shard: a fresh folder is not resumed" "$c" "--resume"
has "shard: TMPDIR passed on" "$c" "TMPDIR=$out/scratch/job77"
[ -d "$out/scratch/job77" ] && ok "shard: a missing TMPDIR is made" || no "shard: TMPDIR not made"
has "shard: Slurm ids untouched" "$c" "SLURM_JOB_ID=77 SLURM_ARRAY_JOB_ID=70 SLURM_ARRAY_TASK_ID=1"
st=$(cat "$out/sh/slurm-eval/status/shard-5" 2>/dev/null)
has "shard: start recorded" "$st" "start job=77 array=70_1"
has "shard: exit recorded" "$st" "end exit=0"
mkdir -p "$out/sh/shard-5"; echo '{}' > "$out/sh/shard-5/run.json"
rc=0
SLURM_ARRAY_TASK_ID=5 CRUCIBLE_FAKE_RC=3 "$slurm" shard -n 10 -o "$out/sh" -c "$fake" \
	--tmpdir "$out/local" -- cands >/dev/null 2>&1 || rc=$?
code "shard step: crucible's exit status is the step's" "$rc" 3
c=$(cat "$CRUCIBLE_FAKE_LOG")
has "shard: a started folder is resumed" "$c" "--out $out/sh/shard-5 --resume"
has "shard: --tmpdir wins" "$c" "TMPDIR=$out/local"
has "shard: the failure recorded" "$(tail -n 1 "$out/sh/slurm-eval/status/shard-5")" "end exit=3"
touch "$out/afile"
rc=0
SLURM_ARRAY_TASK_ID=0 TMPDIR="$out/afile/sub" "$slurm" shard -n 2 -o "$out/sh" -c "$fake" -- c \
	>/dev/null 2>"$out/tmp.err" || rc=$?
code "shard: a TMPDIR that cannot be made" "$rc" 3
has "shard: ... named" "$(cat "$out/tmp.err")" "TMPDIR $out/afile/sub is not a writable folder"
rc=0
SLURM_ARRAY_TASK_ID=2 "$slurm" shard -n 2 -o "$out/sh" -c "$fake" -- c >/dev/null 2>&1 || rc=$?
code "shard: index 2 of 2 shards" "$rc" 2
if grep -n '/tmp' "$slurm" >/dev/null; then
	no "slurm-eval.sh names /tmp: $(grep -n '/tmp' "$slurm" | head -3)"
else
	ok "slurm-eval.sh has no hard-coded /tmp"
fi
grep -qE '(export|unset) +SLURM_|SLURM_[A-Z_]+=' "$slurm" && no "slurm-eval.sh sets a SLURM_ variable" ||
	ok "slurm-eval.sh sets no SLURM_ variable"

# ---- resubmit-failed: only the shards not done, with submit's settings ----
reset
"$slurm" submit -n 6 -o "$out/r2" -c "$fake" --shard-sbatch "--gres=gpu:1" --throttle 2 \
	-- "$out/my cands" --seed 9 >/dev/null 2>&1
done_shard() { # I [EXIT]
	mkdir -p "$out/r2/shard-$1"
	printf '{\n  "complete": true,\n  "shard": "%d/6"\n}\n' $(($1 + 1)) > "$out/r2/shard-$1/run.json"
	printf 'start job=1 array=1001_%d\nend exit=%d at=x\n' "$1" "${2:-0}" >> "$out/r2/slurm-eval/status/shard-$1"
}
done_shard 0; done_shard 1; done_shard 3
mkdir -p "$out/r2/shard-2"   # killed (time limit, preempted, cancelled): started, never finished
printf '{\n  "complete": false\n}\n' > "$out/r2/shard-2/run.json"
echo "start job=1 array=1001_2" > "$out/r2/slurm-eval/status/shard-2"
done_shard 5 3               # finished its run.json, yet exited 3
# shard 4 never started
o=$("$slurm" status -o "$out/r2" 2>&1); rc=$?
code "status with unfinished shards" "$rc" 1
has "status: shard 2 killed" "$o" "shard-2: started, not finished"
has "status: shard 4 not started" "$o" "shard-4: not started"
has "status: shard 5 failed" "$o" "shard-5: failed, exit 3 (log: $out/r2/slurm-eval/logs/shard-1001_5.out)"
has "status: shard 2 log" "$o" "log: $out/r2/slurm-eval/logs/shard-1001_2.out"
has "status: the count" "$o" "3 of 6 shard(s) done"
reset
o=$("$slurm" resubmit-failed -o "$out/r2" 2>&1); rc=$?
code "resubmit-failed" "$rc" 0
[ "$(calls)" -eq 2 ] && ok "resubmit-failed: one array and one merge job" || no "resubmit-failed: $(cat "$SLURM_FAKE_LOG")"
has "resubmit-failed: only shards 2, 4, 5" "$(line 1)" "--array=2\\,4-5%2 "
has "resubmit-failed: submit's shard options" "$(line 1)" "--gres=gpu:1"
has "resubmit-failed: submit's eval arguments, seed included" "$(line 1)" "-- $out/my\\ cands --seed 9"
has "resubmit-failed: a new merge after the new array" "$(line 2)" "--dependency=afterok:1001 --kill-on-invalid-dep=yes"
hasnt "resubmit-failed: merge without GPU" "$(line 2)" "gpu"
has "resubmit-failed: says which" "$o" "resubmitting 3 of 6 shard(s): 2,4-5"
# a running shard (its folder locked by an eval) is left alone
mkdir -p "$out/r2/shard-4"
exec 9>"$out/r2/shard-4/.crucible.lock"   # held here, as an eval holds its --out
flock 9
reset
o=$("$slurm" resubmit-failed -o "$out/r2" --max-array-size 3 2>&1); rc=$?
exec 9>&-
code "resubmit-failed with shard 4 running" "$rc" 0
has "resubmit-failed: shard 2 in the first array of 3" "$(line 1)" "--array=2%2 "
has "resubmit-failed: shard 5 in the second (offset 3)" "$(line 2)" "--array=2%2 "
has "... offset 3" "$(line 2)" "--offset 3 "
hasnt "resubmit-failed: shard 4 (running) left alone" "$(line 1)$(line 2)" "--array=1"
has "resubmit-failed: says shard 4 runs" "$o" "shard(s) 4 are running"
# every shard done: nothing to resubmit
for i in 2 4 5; do rm -rf "$out/r2/shard-$i" "$out/r2/slurm-eval/status/shard-$i"; done
done_shard 2; done_shard 4; done_shard 5
reset
o=$("$slurm" resubmit-failed -o "$out/r2" 2>&1); rc=$?
code "resubmit-failed with every shard done" "$rc" 0
[ "$(calls)" -eq 0 ] && ok "... submits nothing" || no "... submitted: $(cat "$SLURM_FAKE_LOG")"
o=$("$slurm" status -o "$out/r2" 2>&1); rc=$?
code "status, every shard done" "$rc" 0

# ---- merge-only: a merge job alone; merge: refuses unfinished shards unless -p ----
reset
o=$("$slurm" merge-only -o "$out/r2" 2>&1); rc=$?
code "merge-only" "$rc" 0
[ "$(calls)" -eq 1 ] && ok "merge-only: one sbatch call" || no "merge-only: $(cat "$SLURM_FAKE_LOG")"
m=$(line 1)
hasnt "merge-only: no dependency" "$m" "--dependency"
hasnt "merge-only: no GPU (not the shard options)" "$m" "gpu"
hasnt "merge-only: no array" "$m" "--array"
has "merge-only: merge mode" "$m" " merge -n 6 -o $out/r2 "
rc=0
"$slurm" merge -o "$out/r2" >/dev/null 2>&1 || rc=$?
code "merge, every shard finished" "$rc" 0
has "merge: every shard to crucible merge" "$(cat "$CRUCIBLE_FAKE_LOG")" "merge $out/r2/shard-0 $out/r2/shard-1 $out/r2/shard-2 $out/r2/shard-3 $out/r2/shard-4 $out/r2/shard-5 --out $out/r2/merged"
printf '{\n  "complete": false\n}\n' > "$out/r2/shard-3/run.json"
rm -f "$CRUCIBLE_FAKE_LOG"
rc=0
"$slurm" merge -o "$out/r2" >/dev/null 2>"$out/merge.err" || rc=$?
code "merge with shard 3 unfinished" "$rc" 2
has "merge: names shard 3" "$(cat "$out/merge.err")" "shard(s) 3 of 0..5 did not finish"
[ ! -e "$CRUCIBLE_FAKE_LOG" ] && ok "merge: crucible not run" || no "merge ran crucible"
rc=0
"$slurm" merge -o "$out/r2" -p >/dev/null 2>&1 || rc=$?
code "merge -p with shard 3 unfinished" "$rc" 0
c=$(cat "$CRUCIBLE_FAKE_LOG")
has "merge -p: the finished shards, --partial" "$c" "$out/r2/shard-2 $out/r2/shard-4 $out/r2/shard-5 --out $out/r2/merged --partial"
hasnt "merge -p: not shard 3" "$c" "shard-3"

# ---- --shard, --out or --resume after --: the script's own, refused ----
for a in "--shard 1/2" "--shard=1/2" "--out elsewhere" "--resume"; do
	reset
	# shellcheck disable=SC2086 # word splitting of $a is the point
	o=$("$slurm" submit -n 2 -o "$out/own" -c "$fake" --dry-run -- x $a 2>&1); rc=$?
	code "$a after --" "$rc" 2
	has "$a after --" "$o" "is the script's own"
	[ "$(calls)" -eq 0 ] && ok "$a after --: nothing submitted" || no "$a after --: sbatch called"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
