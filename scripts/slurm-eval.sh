#!/usr/bin/env bash
#SBATCH --job-name=crucible-eval
# slurm-eval.sh — `crucible eval` over a Slurm job array, merged after it,
# with the steps to recover when a shard fails (docs/SCALE.md, "Slurm").
#
# Usage: scripts/slurm-eval.sh MODE [OPTIONS] [-- EVAL_ARGS...]
#
# Modes a user runs:
#   submit -n N -o OUT [options] -- EVAL_ARGS...
#       an array job of N shards (`sbatch --array=0-(N-1)`: shard I+1/N into
#       OUT/shard-I) and a merge job after it (`--dependency=afterok:ARRAY
#       --kill-on-invalid-dep=yes`: a failed or cancelled shard cancels the
#       merge instead of leaving it pending for ever). The settings are kept
#       in OUT/slurm-eval/ for the modes below.
#   status -o OUT
#       each shard: done, failed (exit status), started but unfinished, or
#       not started; exit 0 when every shard is done, 1 otherwise.
#   resubmit-failed -o OUT [options]
#       resubmits as a new array only the shards that are not done (no
#       OUT/shard-I/run.json with "complete": true, or a recorded non-zero
#       exit), each continuing with --resume, and a new merge job after them.
#       A shard whose folder is locked by a running eval is left alone;
#       queued tasks are not asked about: run it once the array has left
#       the queue (squeue -j ARRAY lists nothing).
#   merge-only -o OUT [options]
#       submits the merge job alone (no dependency): after shards fixed by
#       hand, or a merge job that was cancelled.
#   merge -o OUT [-p]
#       runs the merge here, now (the merge job's body; on a login node too):
#       crucible merge OUT/shard-0 ... OUT/shard-(N-1) --out OUT/merged
# The array task's body (sbatch runs it; runs without Slurm too):
#   shard -n N -o OUT [-c CRUCIBLE] [--offset K] -- EVAL_ARGS...
#       crucible eval --shard $((K+SLURM_ARRAY_TASK_ID+1))/N EVAL_ARGS...
#       --out OUT/shard-$((K+SLURM_ARRAY_TASK_ID)), with --resume when that
#       folder holds a run already (a requeued or resubmitted task goes on);
#       records its start and exit status in OUT/slurm-eval/status/.
#
# Options:
#   -n, --shards N        number of shards (1..10000); later modes read it from OUT
#   -o, --out OUT         output root, on a file system every node sees
#   -c, --crucible PATH   the crucible executable (default: $CRUCIBLE, else crucible
#                         on PATH); submit passes it on as an absolute path
#   -s, --sbatch 'OPTS'   sbatch options for both jobs (e.g. "-p cpu --account=x");
#                         a GPU request or --array here is refused
#   --shard-sbatch 'OPTS' sbatch options for the array job only
#                         (e.g. "--gres=gpu:1 --time=04:00:00 --cpus-per-task=8")
#   --merge-sbatch 'OPTS' sbatch options for the merge job only (e.g. "--time=00:30:00");
#                         a GPU request, --array or --dependency here is refused
#   --throttle K          at most K shards running at once (--array=...%K)
#   --max-array-size M    the cluster's MaxArraySize (default: from `scontrol show
#                         config`, else Slurm's default 1001); more shards than M
#                         are submitted as several arrays of at most M tasks
#   --tmpdir DIR          TMPDIR for the shards (e.g. node-local scratch); default:
#                         the job's own TMPDIR, made when missing
#   -p, --partial         the merge runs once the array has ended, whatever its
#                         tasks' exits (afterany), and merges the finished shards
#                         with crucible merge --partial
#   --dry-run             print the sbatch command lines, submit nothing
#
# OPTS strings are split at blanks (no quoting inside). Every shard runs the
# same --seed (submit draws one when EVAL_ARGS has none: a seed drawn per
# shard would differ, and merge refuses that) and the same crucible build.
# Exit codes: 2 bad usage, 3 sbatch or the file system failed, else
# crucible's (SPEC §1). Nothing here sets or exports a SLURM_* variable:
# eval records the job's own SLURM_JOB_ID, SLURM_ARRAY_JOB_ID and
# SLURM_ARRAY_TASK_ID in run.json.
set -euo pipefail

die() { echo "slurm-eval.sh: $*" >&2; exit 2; }
fail() { echo "slurm-eval.sh: $*" >&2; exit 3; }

mode="${1:-}"
case "$mode" in
submit | status | resubmit-failed | merge-only | merge | shard) shift ;;
-h | --help | help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
"") die "give a mode: submit, status, resubmit-failed, merge-only, merge or shard (--help)" ;;
*) die "unknown mode '$mode': submit, status, resubmit-failed, merge-only, merge or shard (--help)" ;;
esac

n=""; out=""; exe="${CRUCIBLE:-}"; partial=""; dry=""; offset=0
sb_both=""; sb_shard=""; sb_merge=""; throttle=""; maxarr=""; tmpdir=""
given=" "   # the options given on this command line (they override OUT's)
need() { [ $# -ge 2 ] || die "option '$1' needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	-n | --shards) need "$@"; n="$2"; given+="n "; shift 2 ;;
	-o | --out) need "$@"; out="$2"; shift 2 ;;
	-c | --crucible) need "$@"; exe="$2"; given+="exe "; shift 2 ;;
	-s | --sbatch) need "$@"; sb_both="$2"; given+="sb_both "; shift 2 ;;
	--shard-sbatch) need "$@"; sb_shard="$2"; given+="sb_shard "; shift 2 ;;
	--merge-sbatch) need "$@"; sb_merge="$2"; given+="sb_merge "; shift 2 ;;
	--throttle) need "$@"; throttle="$2"; given+="throttle "; shift 2 ;;
	--max-array-size) need "$@"; maxarr="$2"; shift 2 ;;
	--tmpdir) need "$@"; tmpdir="$2"; given+="tmpdir "; shift 2 ;;
	--offset) need "$@"; offset="$2"; shift 2 ;;
	-p | --partial) partial="--partial"; given+="partial "; shift ;;
	--dry-run) dry=1; shift ;;
	--) shift; break ;;
	*) die "unknown option '$1' (scripts/slurm-eval.sh --help)" ;;
	esac
done
[ -n "$out" ] || die "-o OUT is required"
state="$out/slurm-eval"
# the script owns each shard's --shard, --out and --resume: given again after
# --, eval would take the last and every array task would run the same shard
for a in "$@"; do
	case "$a" in
	--shard | --shard=* | --out | --out=* | --resume)
		die "'$a' after -- is the script's own (each shard gets its --shard, --out and --resume): leave it out" ;;
	esac
done

# ---- settings kept in OUT/slurm-eval/ by submit, read by the later modes ----
# one file per setting, read as data (never sourced); EVAL_ARGS NUL-separated
case "$mode" in
status | resubmit-failed | merge-only | merge)
	[ -d "$out" ] || die "$out: no such folder"
	if [ -d "$state" ]; then
		for k in n exe sb_both sb_shard sb_merge throttle partial tmpdir; do
			case "$given" in *" $k "*) continue ;; esac
			if [ -f "$state/$k" ]; then printf -v "$k" '%s' "$(cat "$state/$k")"; fi
		done
		if [ -f "$state/n" ] && [ "$n" != "$(cat "$state/n")" ]; then
			die "-n $n: $out was submitted with $(cat "$state/n") shards"
		fi
	fi
	;;
esac

[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 10000 ] ||
	die "-n: '$n' is not a shard count in 1..10000$([ -n "$n" ] || echo " (give -n N: $state holds no settings)")"
[ -z "$throttle" ] || [[ "$throttle" =~ ^[1-9][0-9]*$ ]] || die "--throttle: '$throttle' is not a positive count"
[[ "$offset" =~ ^[0-9]+$ ]] || die "--offset: '$offset' is not a count"

# ---- sbatch options: what goes to which job ----
# A GPU request in the options both jobs get, or in the merge job's, would
# make the merge (a CPU task of seconds) wait for a GPU; --array would make it
# an array. Both are refused by name rather than silently dropped.
check_opts() { # WHAT OPTS ALLOW_GPU
	local w prev=""
	for w in $2; do
		case "$w" in
		-a | -a* | --array | --array=*)
			die "$1 '$2': --array is the script's (give --throttle K for %K)" ;;
		esac
		if [ "$3" = no ]; then
			case "$w" in
			--gres=*[gG][pP][uU]* | --gpus* | -G* | --mem-per-gpu* | \
			--cpus-per-gpu* | --gpu-bind* | --gpu-freq* | --tres-per-task=*[gG][pP][uU]*)
				die "$1 '$2': '$w' asks for a GPU, and the merge job needs none: give it with --shard-sbatch" ;;
			esac
			case "$prev $w" in
			"--gres "*[gG][pP][uU]* | "--tres-per-task "*[gG][pP][uU]*)
				die "$1 '$2': '$prev $w' asks for a GPU, and the merge job needs none: give it with --shard-sbatch" ;;
			esac
		fi
		if [ "$1" = --merge-sbatch ]; then
			case "$w" in
			-d | -d* | --dependency | --dependency=* | --kill-on-invalid-dep*)
				die "$1 '$2': the merge job's dependency is the script's" ;;
			esac
		fi
		prev="$w"
	done
}
check_opts --sbatch "$sb_both" no
check_opts --shard-sbatch "$sb_shard" yes
check_opts --merge-sbatch "$sb_merge" no

find_exe() {
	[ -n "$exe" ] || exe="$(command -v crucible || true)"
	[ -n "$exe" ] || die "no crucible executable: give -c PATH or set CRUCIBLE"
}

# The array limit: indices run 0..MaxArraySize-1, so one array holds at most
# MaxArraySize shards; more are split into several arrays (--offset).
array_limit() {
	if [ -z "$maxarr" ] && command -v scontrol >/dev/null; then
		maxarr=$(scontrol show config 2>/dev/null | awk '$1 == "MaxArraySize" { print $3 }' || true)
	fi
	[ -n "$maxarr" ] || maxarr=1001
	[[ "$maxarr" =~ ^[0-9]+$ ]] && [ "$maxarr" -ge 1 ] || die "--max-array-size: '$maxarr' is not a count"
}

# "0 1 2 5 7 8" -> "0-2,5,7-8"
ranges() {
	local r="" a="" b="" i
	for i in "$@"; do
		if [ -n "$a" ] && [ "$i" -eq $((b + 1)) ]; then b=$i; continue; fi
		[ -z "$a" ] || r+="${r:+,}$a$([ "$a" = "$b" ] || echo "-$b")"
		a=$i; b=$i
	done
	[ -z "$a" ] || r+="${r:+,}$a$([ "$a" = "$b" ] || echo "-$b")"
	echo "$r"
}

# a command line as a reader copies it: plain words bare, others in '...'
quote_line() {
	local w s=""
	for w in "$@"; do
		if [[ "$w" =~ ^[A-Za-z0-9_./:=%,@+-]+$ ]]; then
			s+="$w "
		else
			s+="'${w//\'/\'\\\'\'}' "
		fi
	done
	echo "${s% }"
}

# sbatch, or under --dry-run its command line (shell-quoted) and a made-up id
n_sub=0
run_sbatch() {
	if [ -n "$dry" ]; then
		[ "$n_sub" -gt 1 ] || echo "# dry run: JOBIDk stands for the id sbatch would give the k-th job"
		quote_line sbatch "$@"
		echo "JOBID$n_sub"
		return 0
	fi
	local id
	id=$(sbatch "$@") || fail "sbatch failed (exit $?): sbatch $*"
	id="${id%%;*}"
	[[ "$id" =~ ^[0-9]+$ ]] || fail "sbatch gave '$id', not a job id"
	echo "$id"
}
jobid_of() { tail -n 1 <<<"$1"; }
show() { [ -z "$dry" ] || sed '$d' <<<"$1"; }

# Submits the shards given (indices 0..n-1) as arrays of at most maxarr
# tasks, then the merge job after them. EVAL_ARGS are "$@".
submit_shards() { # "INDICES" then EVAL_ARGS...
	local idx="$1"; shift
	local self ids=() chunk off list r s sbq merge_dep deps="" prev="" what abs
	self="$(realpath "$0")"
	array_limit
	for off in $(seq 0 "$maxarr" $((n - 1))); do
		list=()
		for s in $idx; do
			[ "$s" -ge "$off" ] && [ "$s" -lt $((off + maxarr)) ] && list+=($((s - off)))
		done
		[ ${#list[@]} -gt 0 ] || continue
		chunk="$(ranges "${list[@]}")${throttle:+%$throttle}"
		# shellcheck disable=SC2046  # one index a word
		abs=$(ranges $(for s in "${list[@]}"; do echo $((s + off)); done))
		sbq=()
		# a throttle holds across arrays too: each waits for the one before
		[ -z "$throttle" ] || [ -z "$prev" ] || sbq+=(--dependency=afterany:"$prev")
		n_sub=$((n_sub + 1))   # counted here: run_sbatch runs in a subshell
		# shellcheck disable=SC2086  # the OPTS strings are lists of options
		r=$(run_sbatch --parsable $sb_both $sb_shard --job-name=crucible-eval "${sbq[@]}" \
			--array="$chunk" --output="$state/logs/shard-%A_%a.out" \
			"$self" shard -n "$n" -o "$out" -c "$exe" --offset "$off" \
			${tmpdir:+--tmpdir "$tmpdir"} -- "$@") ||
			fail "no array job for shards $abs${ids[*]:+; submitted already: array job(s) ${ids[*]} (scancel them, or resubmit-failed once fixed)}"
		show "$r"
		prev=$(jobid_of "$r")
		ids+=("$prev")
		what+="${what:+, }array job $prev (shards $abs of 0..$((n - 1)))"
		deps+=":$prev"
	done
	deps_said="${ids[*]}"
	if [ -n "$partial" ]; then
		merge_dep=(--dependency=afterany"$deps")
	else
		merge_dep=(--dependency=afterok"$deps" --kill-on-invalid-dep=yes)
	fi
	submit_merge "${merge_dep[@]}"
	if [ ${#ids[@]} -gt 1 ]; then
		echo "slurm-eval.sh: $n shards are more than MaxArraySize $maxarr: ${#ids[@]} arrays of at most $maxarr" >&2
	fi
	echo "${what}; merge job $mid -> $out/merged${dry:+ (dry run: nothing submitted)}"
}

mid=""; deps_said=""
submit_merge() { # DEPENDENCY OPTIONS...
	local self r
	self="$(realpath "$0")"
	n_sub=$((n_sub + 1))   # counted here: run_sbatch runs in a subshell
	# shellcheck disable=SC2086
	r=$(run_sbatch --parsable $sb_both $sb_merge --job-name=crucible-merge "$@" \
		--output="$state/logs/merge-%j.out" "$self" merge -n "$n" -o "$out" -c "$exe" $partial) ||
		fail "no merge job${deps_said:+ after array job(s) $deps_said}: submit it with 'scripts/slurm-eval.sh merge-only -o $out' once fixed"
	show "$r"
	mid=$(jobid_of "$r")
}

save_settings() { # EVAL_ARGS...
	[ -z "$dry" ] || return 0
	mkdir -p "$state/logs" "$state/status" || fail "cannot create $state"
	local k
	for k in n exe sb_both sb_shard sb_merge throttle partial tmpdir; do
		printf '%s' "${!k}" > "$state/$k" || fail "cannot write $state/$k"
	done
	printf '%s\0' "$@" > "$state/eval_args" || fail "cannot write $state/eval_args"
}

# What state shard I is in: done, failed:RC, started, none.
shard_state() {
	local i="$1" st last=""
	st="$state/status/shard-$i"
	[ -f "$st" ] && last=$(tail -n 1 "$st")
	if [ -f "$out/shard-$i/run.json" ] && grep -q '^  "complete": true' "$out/shard-$i/run.json"; then
		case "$last" in
		end\ exit=0* | "") echo "done" ;;
		end\ exit=*) r=${last#end exit=}; echo "failed:${r%% *}" ;;
		*) echo "done" ;;
		esac
		return
	fi
	case "$last" in
	end\ exit=*) r=${last#end exit=}; echo "failed:${r%% *}" ;;
	start*) echo started ;;
	*) [ -d "$out/shard-$i" ] && echo started || echo none ;;
	esac
}
# the log of shard I's last start (its start line names the array job and index)
shard_log() {
	local a
	a=$(grep '^start ' "$state/status/shard-$1" 2>/dev/null | tail -n 1 | sed -n 's/.* array=\([^ ]*\).*/\1/p')
	case "$a" in
	"" | none_*) echo "$state/status/shard-$1" ;;
	*) echo "$state/logs/shard-$a.out" ;;
	esac
}
# true when a running eval holds OUT/shard-I (its flock); needs flock(1)
shard_locked() {
	local l="$out/shard-$1/.crucible.lock"
	[ -f "$l" ] && command -v flock >/dev/null && ! flock -n "$l" true 2>/dev/null
}

case "$mode" in
submit)
	[ $# -gt 0 ] || die "submit: give the eval arguments after -- (the candidates, --tasks, ...)"
	find_exe
	[ -n "$dry" ] || command -v sbatch >/dev/null ||
		die "sbatch is not on PATH (--dry-run prints the command lines; shard mode runs one shard without Slurm)"
	[ -n "$dry" ] || [ ! -f "$state/n" ] ||
		die "$out was submitted already ($state): resubmit-failed, merge-only, or a new -o"
	exe="$(realpath -m "$exe")"
	[ -n "$dry" ] || mkdir -p "$out" || fail "cannot create $out"
	out="$(realpath -m "$out")"; state="$out/slurm-eval"
	# one seed for every shard (a drawn one would differ per shard: merge refuses)
	if ! printf '%s\n' "$@" | grep -q '^--seed'; then
		seed=$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')
		set -- "$@" --seed "$seed"
		echo "slurm-eval.sh: no --seed given: every shard runs with --seed $seed" >&2
	fi
	save_settings "$@"
	submit_shards "$(seq 0 $((n - 1)))" "$@"
	;;
status | resubmit-failed)
	[ -d "$out" ] || die "$out: no such folder"
	todo=(); busy=(); n_done=0
	for ((i = 0; i < n; i++)); do
		s=$(shard_state "$i")
		if [ "$s" = "done" ]; then n_done=$((n_done + 1)); continue; fi
		if shard_locked "$i"; then
			busy+=("$i")
			[ "$mode" = resubmit-failed ] || echo "shard-$i: running (locked by $(head -c 200 "$out/shard-$i/.crucible.lock" | tr -d '\n'))"
			continue
		fi
		todo+=("$i")
		[ "$mode" = resubmit-failed ] && continue
		case "$s" in
		failed:0) echo "shard-$i: exited 0, but $out/shard-$i/run.json does not say \"complete\": true (log: $(shard_log "$i"))" ;;
		failed:*) echo "shard-$i: failed, exit ${s#failed:} (log: $(shard_log "$i"))" ;;
		started) echo "shard-$i: started, not finished (killed, timed out, preempted, or still running; log: $(shard_log "$i"))" ;;
		none) echo "shard-$i: not started" ;;
		esac
	done
	if [ "$mode" = status ]; then
		echo "$n_done of $n shard(s) done${busy:+, ${#busy[@]} running}${todo:+, ${#todo[@]} to resubmit ($(ranges "${todo[@]}"))}"
		[ "$n_done" -eq "$n" ]
		exit
	fi
	[ ${#busy[@]} -eq 0 ] || echo "slurm-eval.sh: shard(s) $(ranges "${busy[@]}") are running (their folders are locked): left alone" >&2
	if [ ${#todo[@]} -eq 0 ]; then
		echo "slurm-eval.sh: every shard not running is done (${n_done} of $n): nothing to resubmit${busy:+; merge-only once the running ones end}"
		exit 0
	fi
	[ -f "$state/eval_args" ] || die "$state/eval_args is missing: resubmit-failed needs a run made by submit"
	mapfile -d '' args < "$state/eval_args"
	find_exe
	[ -n "$dry" ] || command -v sbatch >/dev/null || die "sbatch is not on PATH"
	out="$(realpath "$out")"; state="$out/slurm-eval"
	[ -n "$dry" ] || save_settings "${args[@]}"
	echo "slurm-eval.sh: resubmitting ${#todo[@]} of $n shard(s): $(ranges "${todo[@]}")" >&2
	submit_shards "${todo[*]}" "${args[@]}"
	;;
merge-only)
	[ -d "$out" ] || die "$out: no such folder"
	find_exe
	[ -n "$dry" ] || command -v sbatch >/dev/null || die "sbatch is not on PATH (merge runs the merge here)"
	out="$(realpath "$out")"; state="$out/slurm-eval"
	[ -n "$dry" ] || mkdir -p "$state/logs" || fail "cannot create $state/logs"
	submit_merge
	echo "merge job $mid -> $out/merged${dry:+ (dry run: nothing submitted)}"
	;;
shard)
	find_exe
	[[ "${SLURM_ARRAY_TASK_ID:-}" =~ ^[0-9]+$ ]] || die "SLURM_ARRAY_TASK_ID '${SLURM_ARRAY_TASK_ID:-}' is not an array index"
	id=$((SLURM_ARRAY_TASK_ID + offset))
	[ "$id" -lt "$n" ] || die "shard index $id (SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_ID + offset $offset) is not in 0..$((n - 1))"
	dir="$out/shard-$id"
	mkdir -p "$out" "$state/status" || fail "cannot create $state/status on $(hostname)"
	# TMPDIR: --tmpdir, else the job's own (a cluster's per-job scratch, or
	# the submitting shell's, exported by sbatch: made here when missing)
	[ -z "$tmpdir" ] || export TMPDIR="$tmpdir"
	if [ -n "${TMPDIR:-}" ]; then
		mkdir -p "$TMPDIR" 2>/dev/null && [ -w "$TMPDIR" ] ||
			fail "TMPDIR $TMPDIR is not a writable folder on $(hostname): give --tmpdir DIR"
	fi
	resume=()
	[ -s "$dir/results.csv" ] || [ -f "$dir/run.json" ] && resume=(--resume)
	st="$state/status/shard-$id"
	echo "start job=${SLURM_JOB_ID:-none} array=${SLURM_ARRAY_JOB_ID:-none}_${SLURM_ARRAY_TASK_ID} host=$(hostname) at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$st"
	rc=0
	"$exe" eval --shard "$((id + 1))/$n" "$@" --out "$dir" "${resume[@]}" || rc=$?
	echo "end exit=$rc at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$st"
	exit "$rc"
	;;
merge)
	find_exe
	dirs=(); unfinished=()
	for ((i = 0; i < n; i++)); do
		if [ -f "$out/shard-$i/run.json" ] && grep -q '^  "complete": true' "$out/shard-$i/run.json"; then
			dirs+=("$out/shard-$i")
		else
			unfinished+=("$i")
		fi
	done
	if [ ${#unfinished[@]} -gt 0 ] && [ -z "$partial" ]; then
		echo "slurm-eval.sh: shard(s) $(ranges "${unfinished[@]}") of 0..$((n - 1)) did not finish (no run.json with \"complete\": true):" \
			"see 'scripts/slurm-eval.sh status -o $out', then resubmit-failed (or merge with -p)" >&2
		exit 2
	fi
	# --partial: the finished shards only
	[ ${#dirs[@]} -gt 0 ] || die "no finished $out/shard-* folder to merge"
	exec "$exe" merge "${dirs[@]}" --out "$out/merged" $partial
	;;
esac
