/* cgroup.h — one control group per worker: the container a candidate
 * cannot escape or cancel. Frozen by the cgroup freezer (a SIGCONT from
 * inside cannot undo it; a thread waiting in vfork is frozen too), killed
 * whole, its CPU counted for every thread and child that ever ran in it
 * (also those that exited), its tasks bounded by pids.max (a per-worker
 * quota, not the per-uid RLIMIT_NPROC every worker shares) and its memory
 * capped. The cgroup v2 hierarchy is used where it is mounted (the
 * freezer, kill and CPU files are part of its core); pids and memory come
 * from v2 where the controllers can be enabled, else from v1. Where the
 * orchestrator may not create groups (not root, no cgroupfs) nothing is
 * created: proc.c then falls back to signals, and says so (cr_cg_mode). */
#ifndef CR_CGROUP_H
#define CR_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cr_cg {
	bool on;             /* the group exists: freeze, kill and cpu go through it */
	bool v2;             /* freeze/kill/cpu: v2 (dir) or v1 freezer + cpuacct */
	char dir[384];       /* v2 group, or the v1 freezer group */
	char cpu_dir[384];   /* v1 cpuacct group (when !v2) */
	char pids_dir[384];  /* the group holding pids.max ("" when none) */
	char mem_dir[384];   /* the group holding the memory limit ("" when none) */
	bool pids_v2, mem_v2;
	int freeze_fd;       /* cgroup.freeze or freezer.state, kept open (-1 none) */
	int state_fd;        /* cgroup.events or freezer.state, for the frozen test */
	int cpu_fd;          /* cpu.stat or cpuacct.usage */
	int psi_fd;          /* v2: cpu.pressure (-1: none) */
};

/* Creates the groups for one worker (name unique in this process) with at
 * most pids_max tasks and mem_max bytes (0: no memory limit). Returns 0, or
 * -1 when no group could be made (g->on false; why in cr_cg_mode). A
 * missing pids or memory controller leaves that field empty (and is named
 * by cr_cg_mode). */
int cr_cg_create(struct cr_cg *g, const char *name, long pids_max, uint64_t mem_max);
/* In the spawned child, before anything else runs: joins every group of g
 * (writes "0" to each cgroup.procs). Async-signal-safe. 0 or -1. */
int cr_cg_enter(const struct cr_cg *g);
/* Freezes the group and waits, at most timeout_ns, until every task in it
 * is frozen. 0 frozen, -1 not within the bound (the caller kills it). */
int cr_cg_freeze(const struct cr_cg *g, int64_t timeout_ns);
void cr_cg_thaw(const struct cr_cg *g);
/* CPU time in ns used by every task that ever ran in the group; -1 unknown. */
int64_t cr_cg_cpu_ns(const struct cr_cg *g);
/* Tasks in the group now (from the pids controller or cgroup.procs), -1 unknown. */
/* The group's CPU stall totals from its cpu.pressure (ns, us resolution):
 * some = time at least one of its tasks waited runnable for a CPU, full =
 * time all its non-idle tasks did (none of them ran). -1: not known. */
int cr_cg_stall_ns(const struct cr_cg *g, int64_t *some, int64_t *full);
long cr_cg_tasks(const struct cr_cg *g);
/* SIGKILL to every task in the group (frozen ones too). */
void cr_cg_kill(const struct cr_cg *g);
/* Kills what is left, waits (bounded) for the group to empty and removes
 * it. Safe on a group never created. */
void cr_cg_destroy(struct cr_cg *g);
/* Sizes the per-worker task quota for `workers` workers at once (an eval's
 * jobs times two: a candidate's and a baseline's worker): the tasks the
 * host still allows (pid_max, threads-max and every pids group above
 * crucible, less what runs now) shared among them with one share kept for
 * crucible itself, at most 512 a worker. So workers holding their whole
 * quota cannot together exhaust the host and make a neighbour's start fail
 * (round 3's fourth attacker: five hoarders under a 2200-task limit stopped
 * a batch with exit 3). Returns the quota, or -1 when the share is below
 * 64 tasks (why in cr_cg_mode): the host cannot run that many workers. */
long cr_cg_plan(int workers);
/* Removes the run's reservation group (at the end of the run, in the
 * process that planned it). */
void cr_cg_unplan(void);
/* A group with a task quota only (pids.max = a worker's), in the run's
 * reservation: for the compiler, so its processes are reserved too and a
 * failure to start one can be told from the candidate's (cr_cg_hit_max).
 * 0, or -1 (no group: the caller goes on without). Join with cr_cg_enter;
 * remove with cr_cg_destroy. */
int cr_cg_create_tasks(struct cr_cg *g, const char *name);
/* Whether a task of g was refused for its quota (pids.events "max"). */
bool cr_cg_hit_max(const struct cr_cg *g);
/* The task quota of a worker (cuda: the driver starts more threads). */
long cr_cg_quota(bool cuda);
/* Removes the empty groups of crucible processes that are gone (killed
 * before they could remove their own). */
void cr_cg_sweep(void);
/* What containment workers get on this machine, one line: e.g.
 * "cgroup v2 (freeze, kill, cpu), v1 pids, v1 memory" or "none (…why…):
 * SIGSTOP freeze, per-uid RLIMIT_NPROC". Probes once. */
const char *cr_cg_mode(void);
/* Whether workers get a freezer group (the probe's answer). */
bool cr_cg_available(void);

#endif
