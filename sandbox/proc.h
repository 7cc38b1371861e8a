/* proc.h — the orchestrator's handle on one worker process: shared memory,
 * pipes, limits, timeouts, and the wall-clock timer around each call (the
 * worker's own clocks are never trusted); and the spawn in fresh PID,
 * network and IPC namespaces that the worker and the compiler share. */
#ifndef CR_PROC_H
#define CR_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "common/cr_status.h"
#include "sandbox/cgroup.h"
#include "sandbox/shm.h"

struct cr_proc {
	pid_t pid;
	int pidfd;               /* the worker's pidfd: every signal and wait goes through it */
	int cmd_fd, rep_fd, shm_fd, log_fd;
	struct cr_cg cg;         /* its control group (cgroup.h); cg.on false: signals only */
	bool cuda;               /* a cuda worker: no candidate host code runs in it */
	char *shm;               /* mapping of the whole region */
	size_t shm_size;
	uint32_t seq;
	clockid_t cpu_clock;     /* the worker's process CPU clock */
	bool have_cpu_clock;
	int fault;               /* the check_verdict of the last FAULT reply (cuda workers only)
				  * or of a setup failure of the candidate's, -1 if none */
	bool loading;            /* the worker said it started loading the candidate */
	struct cr_reply last;    /* the last reply (TIME: its device times) */
	int64_t frozen_cpu_ns;   /* the group's CPU when last frozen (-1: not frozen) */
	int64_t ran_frozen_ns;   /* CPU the group used while frozen, summed over thaws: must stay
				  * ~0 (the freezer's invariant: cr_proc_ran_frozen) */
	int n_thaws;
	char sandbox[320];       /* what the orchestrator verified of the worker's confinement
				  * (/proc and its own records; never the worker's words) */
	char log_path[600];
};

enum cr_run {
	CR_RUN_OK,
	CR_RUN_CRASH,    /* died: detail has the signal or exit status */
	CR_RUN_TIMEOUT,  /* killed after the wall-clock budget */
	CR_RUN_SYSCALL,  /* a forbidden system call */
	CR_RUN_SETUP,    /* failed before the first call (dlopen, limits) */
	CR_RUN_FAULT,    /* the call failed for the candidate's fault (FAULT reply of a cuda
			  * worker: w->fault is the verdict, detail the message); the worker is gone */
	CR_RUN_ENV       /* the host could not start or set up the worker (clone, pipe, cgroup,
			  * a setup step of ours), retried with backoff: not the candidate's */
};

/* How long a freeze may take before the worker counts as unstoppable and
 * is killed (a frozen group normally settles in microseconds). */
#define CR_FREEZE_TIMEOUT_NS 2000000000LL

/* A cr_proc that owns nothing (release is then a no-op). */
void cr_proc_blank(struct cr_proc *w);

/* Creates the shared memory region (zeroed) and maps it; the caller fills
 * the header and buffers, then calls cr_proc_start. */
enum cr_status cr_proc_init(struct cr_proc *w, size_t shm_size, struct cr_err *err);
/* Forks and execs `crucible __worker MODE` with limits, in a control group
 * of its own; waits for READY, then verifies the confinement itself
 * (w->sandbox). A failure of the host's (CR_RUN_ENV) is retried with
 * backoff before it is returned. */
enum cr_run cr_proc_start(struct cr_proc *w, const char *mode, const char *workdir,
			  double timeout_s, char *detail, size_t cap);
/* One call: RUN on a set (or NOP). *ns gets the wall-clock time from sending
 * the command to reading the reply. */
enum cr_run cr_proc_call(struct cr_proc *w, enum cr_cmd_op op, uint32_t set,
			 double timeout_s, int64_t *ns, char *detail, size_t cap);
/* The same call on a frozen worker, bracketed: the clock starts before the
 * thaw and stops after the worker is frozen again, so nothing it does in
 * between is outside *ns. Leaves it frozen (or gone). */
enum cr_run cr_proc_call_frozen(struct cr_proc *w, enum cr_cmd_op op, uint32_t set,
				double timeout_s, int64_t *ns, char *detail, size_t cap);
/* What a bracketed call got from the machine, read around the bracket
 * (the worker frozen at both ends): the group's CPU time (all its threads,
 * dead ones included) and its CPU stall from cpu.pressure (v2 groups):
 * some = a task of the group waited runnable for a CPU, full = all its
 * tasks did and none ran. A field the kernel does not give is -1.
 * (A thread's schedstat "wait" is not used: a thread that sleeps can be
 * counted there while the scheduler delays its dequeue, measured on 6.18.) */
struct cr_call_time {
	bool rt;                 /* in: the calling thread waits for the reply at SCHED_FIFO (root) */
	bool rt_ok;              /* out: it did */
	int64_t wall_ns;         /* the bracket, as cr_proc_call_frozen's *ns */
	int64_t cpu_ns;          /* the group's CPU, all threads */
	int64_t stall_some_ns;   /* the group's cpu.pressure: some of its tasks waited */
	int64_t stall_full_ns;   /* all of its tasks waited, none ran */
};

enum cr_run cr_proc_call_timed(struct cr_proc *w, enum cr_cmd_op op, uint32_t set,
			       double timeout_s, struct cr_call_time *t, char *detail, size_t cap);
/* Freezes the worker's group (the cgroup freezer, which nothing inside can
 * undo; SIGSTOP without a group) and waits, at most CR_FREEZE_TIMEOUT_NS,
 * until every task in it is frozen, so nothing it left running can write
 * or compute while the orchestrator looks. 0 when frozen; -1 when it could
 * not be stopped in time: it is then killed (w->pid -1) and detail says so.
 * Thaw resumes it. */
int cr_proc_freeze(struct cr_proc *w, char *detail, size_t cap);
void cr_proc_thaw(struct cr_proc *w);
/* The freezer's invariant broken: the group used CPU while frozen beyond
 * 5 ms plus 20 us a thaw (the accounting around the reads: 1.27 and 1.49
 * ms were seen for a spinning thread under SIGSTOP; the cgroup freezer
 * shows 0). The stages fail such a worker (stale_result). */
bool cr_proc_ran_frozen(const struct cr_proc *w);
/* CPU time in ns of every task that ever ran in the worker's group (its
 * process CPU clock without a group), -1 if unavailable. */
int64_t cr_proc_cpu_ns(struct cr_proc *w);
/* Kills (if alive) and frees everything; safe to call twice. */
void cr_proc_release(struct cr_proc *w);
/* Last bytes of the worker's captured stdout/stderr (NUL-terminated). */
void cr_proc_log_tail(struct cr_proc *w, char *buf, size_t cap);

/* Like fork, but the child is PID 1 of fresh PID, network and IPC
 * namespaces (adding a user namespace that maps the caller's uid when that
 * is refused, plain fork when even that is: the level is found once, by a
 * throw-away child); returns 0 in the child, the pid in the parent, -1
 * with errno. The child should be ended with cr_proc_kill. */
pid_t cr_proc_spawn(void);
/* The isolation children get, after a probe if none was spawned yet:
 * "pid+net+ipc", "user+pid+net+ipc", or "none" (plain fork: a worker's
 * descendants are then contained by its process group and seccomp only). */
const char *cr_proc_ns_level(void);
/* Empty at full isolation, else what was refused and why (one line). */
const char *cr_proc_ns_why(void);
/* In a spawned child (one thread): uid, gid nobody, no groups; 0 or -1. */
int cr_proc_drop_to_nobody(void);
/* SIGKILL to a spawned child and all it started, reaped; none left after
 * (the wait is bounded: a child that outlives it is reported on stderr). */
void cr_proc_kill(pid_t pid);
/* The pidfd of a child just spawned (before anything can reap it), -1 on
 * error. */
int cr_proc_pidfd(pid_t pid);


#endif
