#!/bin/sh
# proc_contain.sh CRUCIBLE SRCDIR OUTDIR — workers do not outlive their run
# (docs/VERIFIER.md, "Process control and the compiler"):
#  1. a worker mid-call is PID 1 of its own PID namespace, in network and
#     IPC namespaces of its own, as uid nobody when we are root;
#  2. crucible killed with SIGKILL takes that worker with it;
#  3. after an eval whose worker left a thread running, none of the workers
#     seen during it is left.
# A kernel without these namespaces fails this test (it is not skipped):
# crucible then runs workers with a weaker fallback, and says so.
set -u
crucible=$1; src=$2; out=$3
fail() { echo "FAIL: $*"; [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null; exit 1; }
workers_of() { # prints the pids of the worker processes below $1 (children, or
	# grandchildren through an eval --jobs job process)
	for p in $(pgrep -P "$1"); do
		if is_worker "$p"; then
			echo "$p"
		else
			for q in $(pgrep -P "$p"); do
				is_worker "$q" && echo "$q"
			done
		fi
	done
}
is_worker() { # $1 still names a worker process
	tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -q '__worker'
}
first_worker() { # waits up to 10 s for a worker below $1; prints its pid
	for i in $(seq 1 200); do
		fw=$(workers_of "$1" | head -n 1)
		[ -n "$fw" ] && { echo "$fw"; return; }
		sleep 0.05
	done
}
rm -rf "$out"; mkdir -p "$out"

"$crucible" check "$src/proc_linger.c" --no-timing --timeout 60 >"$out/linger.txt" 2>&1 &
pid=$!
w=$(first_worker "$pid")
[ -n "$w" ] || fail "the lingering worker never started ($(cat "$out/linger.txt"))"
nspid=$(awk '/^NSpid:/ { print $NF }' "/proc/$w/status")
[ "$nspid" = 1 ] || fail "worker $w is not PID 1 of its own PID namespace (NSpid ends in $nspid)"
for ns in pid net ipc; do
	[ "$(readlink "/proc/$w/ns/$ns")" != "$(readlink /proc/self/ns/$ns)" ] ||
		fail "worker $w shares crucible's $ns namespace"
done
if [ "$(id -u)" = 0 ]; then
	uid=$(awk '/^Uid:/ { print $2 }' "/proc/$w/status")
	[ "$uid" = 65534 ] || fail "worker $w runs as uid $uid, not nobody"
fi
kill -9 "$pid"
wait "$pid" 2>/dev/null
for i in $(seq 1 40); do
	is_worker "$w" || break
	sleep 0.05
done
pid=""
! is_worker "$w" || { kill -9 "$w"; fail "worker $w outlived crucible killed with SIGKILL"; }

"$crucible" eval "$src/proc_leave_thread.c" --check-expect --no-timing --out "$out/eval" \
	>"$out/eval.txt" 2>&1 &
pid=$!
seen=""
while kill -0 "$pid" 2>/dev/null; do
	for p in $(workers_of "$pid"); do
		case " $seen " in *" $p "*) ;; *) seen="$seen $p" ;; esac
	done
	sleep 0.02
done
wait "$pid" || { pid=""; fail "eval of proc_leave_thread.c: $(cat "$out/eval.txt")"; }
pid=""
[ -n "$seen" ] || fail "never saw a worker of the eval"
for p in $seen; do
	! is_worker "$p" || { kill -9 "$p"; fail "worker $p of a finished eval is still running"; }
done
# 4. eval --jobs 2 killed with SIGKILL mid-call takes its job processes and
#    their workers with it
"$crucible" eval "$src/proc_linger.c" --jobs 2 --no-timing --timeout 60 --out "$out/jobs" \
	>"$out/jobs.txt" 2>&1 &
pid=$!
w=$(first_worker "$pid")
[ -n "$w" ] || fail "the lingering worker under --jobs 2 never started ($(cat "$out/jobs.txt"))"
jobs_pids=$(pgrep -P "$pid")
kill -9 "$pid"
wait "$pid" 2>/dev/null
pid=""
for i in $(seq 1 40); do
	left=""
	for p in $w $jobs_pids; do
		kill -0 "$p" 2>/dev/null && [ "$(awk '/^State:/ { print $2 }' "/proc/$p/status" 2>/dev/null)" != Z ] &&
			left="$left $p"
	done
	[ -z "$left" ] && break
	sleep 0.05
done
[ -z "$left" ] || { kill -9 $left; fail "processes$left outlived eval --jobs 2 killed with SIGKILL"; }
echo "ok: worker in fresh pid/net/ipc namespaces, gone with crucible, none left after eval, none after a killed eval --jobs 2"
