/* srv_job.h — scoring one job (srv_job.c): the candidate written to a
 * private temp file, `crucible check FILE --task T --seed S --json` run as a
 * child process (the secret run with CRUCIBLE_SEED in the child's
 * environment only), its JSON read back into a few fields; a harness
 * failure (the child killed, exit 2 or 3, output that is not check's JSON)
 * is told apart from a verdict, so it is retried and never charged to the
 * submission. Also the reward formula of /v1/reward. */
#ifndef SRV_JOB_H
#define SRV_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include "common/cr_status.h"

struct srv_job_spec {
	const char *crucible;    /* the crucible executable (the server's own, /proc/self/exe) */
	const char *source;      /* the candidate's text */
	const char *file_name;   /* its name as submitted (".c" or ".cu" decides the kind) */
	const char *task;        /* canonical task name */
	const char *backend;     /* "cpu" | "cuda" | "auto" */
	uint64_t seed;           /* --seed */
	const char *secret;      /* NULL: a public run; else the CRUCIBLE_SEED value (never
				  * logged, never in an argument, never in an error message) */
	bool timing;             /* false: --no-timing */
	bool quick;              /* --quick */
	double time_cap_s;       /* --time-cap (0: check's default) */
	int gpu;                 /* -1: none; else CUDA_VISIBLE_DEVICES=gpu for the child */
	double wall_limit_s;     /* the child is killed (its process group) after this
				  * many seconds (a harness failure); <= 0: no limit */
	const char *tmpdir;      /* where the private work folder goes (NULL: $TMPDIR or /tmp) */
};

struct srv_job_out {
	bool harness_failed;     /* the harness, not the candidate, failed: retry */
	char why[512];           /* harness_failed: why (exit code, signal, unparsable output) */
	char status[32];         /* the verdict name (checks' vocabulary: "ok", "mismatch", ...) */
	double speedup, speedup_lo, speedup_hi; /* NaN when not timed */
	bool noisy;
	char detail[1024];       /* the verdict's detail; "" for a secret run (it can describe
				  * cases drawn from the secret seed) */
	char sha256[65];
	char feedback[4096];     /* public runs: text for a model (status, detail, worst element) */
	int pgid;                /* the child's pid and process group (gone when srv_job_run
				  * returns; -1: never started): for tests and logs */
};

/* Runs the child and fills o. CR_OK whenever o says what happened (a
 * verdict or a harness failure); another status only when nothing could be
 * started (no temp folder, fork failed). */
enum cr_status srv_job_run(const struct srv_job_spec *s, struct srv_job_out *o, struct cr_err *err);

/* The reward of /v1/reward (docs/SERVE.md): 0 unless status is ok; ok
 * untimed 1; ok timed 1 + clamp(log2(speedup_lo), 0, 4). */
double srv_reward(const struct srv_job_out *o);

#endif
