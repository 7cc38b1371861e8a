#!/usr/bin/env bash
#SBATCH --job-name=crucible-eval
# slurm-eval.sh — `crucible eval` over a Slurm job array, merged after it.
#
# Usage:
#   scripts/slurm-eval.sh submit -n N -o OUT [-c CRUCIBLE] [-s SBATCH_ARGS] [-p] -- EVAL_ARGS...
#       submits `sbatch --array=0-(N-1)` of this script in shard mode, and a
#       merge job after it (`sbatch --dependency=afterok:JOB`); prints both ids.
#   scripts/slurm-eval.sh shard -n N -o OUT [-c CRUCIBLE] -- EVAL_ARGS...
#       one array task: crucible eval --shard $((SLURM_ARRAY_TASK_ID+1))/N
#       EVAL_ARGS... --out OUT/shard-$SLURM_ARRAY_TASK_ID (with --resume when
#       that directory already has results, so a requeued task continues).
#       Runs without Slurm too: set SLURM_ARRAY_TASK_ID yourself.
#   scripts/slurm-eval.sh merge -n N -o OUT [-c CRUCIBLE] [-p]
#       crucible merge OUT/shard-0 ... OUT/shard-(N-1) --out OUT/merged
#
#   -n N            number of shards (1..10000)
#   -o OUT          output root; shared by every node (a network file system)
#   -c CRUCIBLE     the crucible executable (default: $CRUCIBLE, else crucible on
#                   PATH); submit passes it on as an absolute path
#   -s SBATCH_ARGS  extra sbatch options for both jobs, one string
#                   (e.g. "-p cpu --time=02:00:00 --cpus-per-task=2")
#   -p              merge with --partial (missing shards allowed)
#
# Example:
#   scripts/slurm-eval.sh submit -n 32 -o /shared/run1 -s "-p cpu --time=1:00:00" -- \
#       /shared/candidates --tasks L1 --seed 42
# Every shard runs the same --seed (submit draws one when EVAL_ARGS has none:
# a seed drawn per shard would differ, and merge refuses that) and must run
# the same crucible build.
# docs/SCALE.md explains the recipe; exit codes are crucible's (SPEC §1).
set -euo pipefail

die() { echo "slurm-eval.sh: $*" >&2; exit 2; }

mode="${1:-}"
[ -n "$mode" ] || die "give a mode: submit, shard or merge (see the header of $0)"
shift
n=""; out=""; exe="${CRUCIBLE:-}"; sbargs=""; partial=""
while [ $# -gt 0 ]; do
	case "$1" in
	-n) n="${2:-}"; shift 2 ;;
	-o) out="${2:-}"; shift 2 ;;
	-c) exe="${2:-}"; shift 2 ;;
	-s) sbargs="${2:-}"; shift 2 ;;
	-p) partial="--partial"; shift ;;
	--) shift; break ;;
	*) die "unknown option '$1' (see the header of $0)" ;;
	esac
done
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 10000 ] || die "-n: '$n' is not a shard count in 1..10000"
[ -n "$out" ] || die "-o OUT is required"
[ -n "$exe" ] || exe="$(command -v crucible || true)"
[ -n "$exe" ] || die "no crucible executable: give -c PATH or set CRUCIBLE"

case "$mode" in
submit)
	command -v sbatch >/dev/null || die "sbatch is not on PATH (shard mode runs one shard without Slurm)"
	exe="$(realpath "$exe")"
	mkdir -p "$out"
	out="$(realpath "$out")"
	self="$(realpath "$0")"
	# one seed for every shard (a drawn one would differ per shard: merge refuses)
	if ! printf '%s\n' "$@" | grep -q '^--seed'; then
		seed=$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')
		set -- "$@" --seed "$seed"
		echo "slurm-eval.sh: no --seed given: every shard runs with --seed $seed"
	fi
	# shellcheck disable=SC2086  # SBATCH_ARGS is a list of options
	jid=$(sbatch --parsable $sbargs --array=0-$((n - 1)) --output="$out/slurm-%A_%a.out" \
		"$self" shard -n "$n" -o "$out" -c "$exe" -- "$@")
	jid="${jid%%;*}"
	# shellcheck disable=SC2086
	mid=$(sbatch --parsable $sbargs --dependency=afterok:"$jid" --job-name=crucible-merge \
		--output="$out/slurm-merge-%j.out" "$self" merge -n "$n" -o "$out" -c "$exe" $partial)
	echo "array job $jid ($n shards) -> $out/shard-*; merge job ${mid%%;*} -> $out/merged"
	;;
shard)
	id="${SLURM_ARRAY_TASK_ID:-}"
	[[ "$id" =~ ^[0-9]+$ ]] && [ "$id" -lt "$n" ] || die "SLURM_ARRAY_TASK_ID '$id' is not in 0..$((n - 1))"
	dir="$out/shard-$id"
	mkdir -p "$out"
	resume=()
	[ -s "$dir/results.csv" ] && resume=(--resume)
	exec "$exe" eval --shard "$((id + 1))/$n" "$@" --out "$dir" "${resume[@]}"
	;;
merge)
	dirs=()
	for ((i = 0; i < n; i++)); do
		if [ -d "$out/shard-$i" ] || [ -z "$partial" ]; then
			dirs+=("$out/shard-$i")
		fi
	done
	[ ${#dirs[@]} -gt 0 ] || die "no $out/shard-* directory to merge"
	exec "$exe" merge "${dirs[@]}" --out "$out/merged" $partial
	;;
*)
	die "unknown mode '$mode': submit, shard or merge"
	;;
esac
