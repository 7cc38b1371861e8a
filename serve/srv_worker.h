/* srv_worker.h — the workers of `crucible serve` (srv_worker.c): threads
 * that claim jobs from the store, score each through srv_job_run, and
 * record the outcome once; one heartbeat thread keeps their claims alive
 * and takes back the jobs of workers that died. Used in the server's own
 * process and by `crucible serve worker` on other machines. */
#ifndef SRV_WORKER_H
#define SRV_WORKER_H

#include <stdint.h>
#include <stdio.h>
#include "common/cr_status.h"

struct srv_workers;

struct srv_worker_opts {
	const char *db;          /* the store's location */
	const char *crucible;    /* the crucible executable that scores (check) */
	int n;                   /* worker threads: jobs scored at once */
	const int *gpus;         /* [n_gpus] device ordinals, worker i gets gpus[i % n_gpus] */
	int n_gpus;
	double wall_limit_s;     /* one check's limit before it counts as a harness failure */
	int64_t lease_ms;        /* a job whose heartbeat is older goes back to the queue */
	const char *tmpdir;      /* work folders (NULL: $TMPDIR or /tmp) */
	FILE *log;               /* one line per job (never a secret) */
};

enum cr_status srv_workers_start(const struct srv_worker_opts *o, struct srv_workers **out,
				 struct cr_err *err);
/* No new job is claimed from now on (returns at once). */
void srv_workers_signal(struct srv_workers *w);
/* Stops claiming; waits for the jobs being scored to be recorded, frees. */
void srv_workers_stop(struct srv_workers *w);
/* Jobs recorded so far by these workers (scored or failed). */
long srv_workers_done(const struct srv_workers *w);

#endif
