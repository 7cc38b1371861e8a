/* eval_jobs.h — `crucible eval --jobs N`: candidates verified side by side
 * in N job processes (each candidate in workers of its own, as always),
 * with the timing stage kept honest (docs/SCALE.md "--jobs"):
 *   pinned     each job runs on its own disjoint set of cores
 *              (sched_setaffinity, inherited by its workers); timing stages
 *              of different jobs may overlap, each on its own cores;
 *   serial     pinned, and one timing stage at a time on the machine;
 *   exclusive  pinned, and a timing stage runs with no other job doing
 *              anything: it waits for the stages in flight to end and no
 *              stage starts until it is done (a writer-first lock).
 * The parent writes every row: whole, once, in completion order. */
#ifndef CR_EVAL_JOBS_H
#define CR_EVAL_JOBS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "checks/result.h"
#include "common/cr_status.h"

enum eval_job_timing { EJ_PINNED, EJ_SERIAL, EJ_EXCLUSIVE };

extern const char *const eval_job_timing_names[]; /* "pinned", "serial", "exclusive" */

/* What a job sends back: one whole message per candidate. */
struct eval_job_msg {
	int idx;                  /* the caller's index of the candidate */
	int st;                   /* enum cr_status of the verification (CR_OK: r holds the verdict) */
	char err[512];            /* the error when st != CR_OK */
	double verify_s;
	char tname[256];
	struct cr_result r;
};

/* What the parent sends a job: the candidate's index and the caller's
 * words about it (the fallback task name, in eval). */
struct eval_job_cmd {
	int idx;
	char arg[256];
	bool asked;   /* eval: arg is the task the generator asked for (its sidecar's) */
};

/* Runs in a job process: verifies candidate cmd->idx into *out. */
typedef void (*eval_job_fn)(const struct eval_job_cmd *cmd, void *ctx, struct eval_job_msg *out);
/* Runs in the parent for each finished candidate, in completion order;
 * a non-CR_OK return stops the run (the jobs in flight are killed). */
typedef enum cr_status (*eval_job_done_fn)(const struct eval_job_msg *m, void *ctx,
					     struct cr_err *err);

struct eval_jobs;

/* Parses "pinned", "serial", "exclusive"; -1 when it is none of them. */
int eval_job_timing_parse(const char *s);

/* The cores this process may run on (sched_getaffinity). */
int eval_jobs_cores(void);

/* A pool of n job processes, forked now from this one (so each starts from
 * the run's state: options, tasks, candidate list) and kept for the run,
 * each verifying one candidate at a time with fn(cmd, fctx); a job keeps
 * what is worth keeping between candidates (the reference cache,
 * checks/case.c). lockdir holds the pool's lock files (the run's private
 * work root). The cores are split into n disjoint sets when there are at
 * least n; with fewer cores than jobs nothing is pinned and the timing is
 * made exclusive (said on stderr). */
/* n_dev > 1 (eval --gpus): job i uses device i mod n_dev, and in serial
 * mode each device has its own timing lock (a device times one candidate
 * at a time; the devices time side by side). */
enum cr_status eval_jobs_open(struct eval_jobs **pp, int n, enum eval_job_timing mode, int n_dev,
			      const char *lockdir, eval_job_fn fn, void *fctx, struct cr_err *err);
/* In a job process, its slot (0..n-1); -1 outside a job. */
int eval_jobs_slot(void);
/* The mode in force, and a description of the core sets ("0 | 1"). */
enum eval_job_timing eval_jobs_mode(const struct eval_jobs *p);
const char *eval_jobs_cpusets(const struct eval_jobs *p);
int eval_jobs_in_flight(const struct eval_jobs *p);
/* The names of the candidates in flight, "a.c, b.c" (for progress). */
void eval_jobs_names(const struct eval_jobs *p, char *buf, size_t cap);

/* Hands cmd (name: for progress) to a free job, first waiting for one to
 * finish (done() is called for each that does). */
enum cr_status eval_jobs_submit(struct eval_jobs *p, const struct eval_job_cmd *cmd,
				const char *name, eval_job_done_fn done, void *dctx,
				struct cr_err *err);
/* Waits for every job in flight. */
enum cr_status eval_jobs_drain(struct eval_jobs *p, eval_job_done_fn done, void *dctx,
			       struct cr_err *err);
/* A wait for a job that a signal interrupts while *flag is set returns at
 * once with nothing more handed out: eval_jobs_submit hands nothing out
 * (check eval_jobs_stopped), eval_jobs_drain returns with jobs in flight
 * (eval_jobs_close kills and reaps them). */
void eval_jobs_stop_on(struct eval_jobs *p, volatile sig_atomic_t *flag);
bool eval_jobs_stopped(const struct eval_jobs *p);
/* fn(ctx) about twice a second while the pool waits for a job (a progress
 * line's clock). */
void eval_jobs_on_tick(struct eval_jobs *p, void (*fn)(void *), void *ctx);
/* A descriptor the jobs close as they start (eval's --out lock), so the
 * lock ends with the run, not with the last job. -1: none. */
void eval_jobs_private_fd(int fd);
/* Ends the jobs (killing any still in flight) and frees the pool. */
void eval_jobs_close(struct eval_jobs *p);

/* For cr_verify_opts.on_timing inside a job: takes and gives back the
 * pool's timing lock as the mode says. A no-op outside a job. */
void eval_jobs_timing_hook(void *ctx, bool start);

#endif
