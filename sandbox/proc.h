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
#include "sandbox/shm.h"

struct cr_proc {
	pid_t pid;
	int cmd_fd, rep_fd, shm_fd, log_fd;
	char *shm;               /* mapping of the whole region */
	size_t shm_size;
	uint32_t seq;
	clockid_t cpu_clock;     /* the worker's process CPU clock */
	bool have_cpu_clock;
	int fault;               /* the check_verdict of the last FAULT reply or failed setup, -1 if none */
	struct cr_reply last;    /* the last reply (TIME: its device times) */
	int64_t sent_ns, recv_ns; /* the last call: CLOCK_MONOTONIC at sending it and at its reply */
	char sandbox[232];       /* the worker's READY line: the sandbox layers it got */
	char log_path[600];
};

enum cr_run {
	CR_RUN_OK,
	CR_RUN_CRASH,    /* died: detail has the signal or exit status */
	CR_RUN_TIMEOUT,  /* killed after the wall-clock budget */
	CR_RUN_SYSCALL,  /* a forbidden system call */
	CR_RUN_SETUP,    /* failed before the first call (dlopen, limits) */
	CR_RUN_FAULT     /* the call failed for the candidate's fault (FAULT reply: w->fault is
			  * the verdict, detail the message); the worker is gone */
};

/* Creates the shared memory region (zeroed) and maps it; the caller fills
 * the header and buffers, then calls cr_proc_start. */
enum cr_status cr_proc_init(struct cr_proc *w, size_t shm_size, struct cr_err *err);
/* Forks and execs `crucible __worker MODE` with limits; waits for READY. */
enum cr_run cr_proc_start(struct cr_proc *w, const char *mode, const char *workdir,
			  double timeout_s, char *detail, size_t cap);
/* One call: RUN on a set (or NOP). *ns gets the wall-clock time from sending
 * the command to reading the reply. */
enum cr_run cr_proc_call(struct cr_proc *w, enum cr_cmd_op op, uint32_t set,
			 double timeout_s, int64_t *ns, char *detail, size_t cap);
/* Stops the worker (SIGSTOP) and waits until it is stopped, so nothing it
 * left running can write or compute while the orchestrator looks; its CPU
 * clock is exact once stopped. Thaw resumes it. */
void cr_proc_freeze(struct cr_proc *w);
void cr_proc_thaw(struct cr_proc *w);
/* Worker CPU time in ns (all threads), -1 if unavailable. */
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
/* SIGKILL to a spawned child and all it started, reaped; none left after. */
void cr_proc_kill(pid_t pid);


#endif
