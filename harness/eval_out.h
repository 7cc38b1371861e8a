/* eval_out.h — what `crucible eval` says and leaves besides its rows: the
 * rows sorted at the end of a run (results.csv and samples.csv, rewritten
 * whole through libcsv), an unreadable results.csv kept aside on --resume,
 * run.json's Slurm ids and the run's progress on stderr (finished
 * candidates, elapsed time, ETA, the closing line), and SIGINT/SIGTERM
 * turned into a clean stop. */
#ifndef CR_EVAL_OUT_H
#define CR_EVAL_OUT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/cr_status.h"

/* Files over 1 GB (results) or 256 MB (samples) are left unsorted, said on
 * stderr (the sort holds the file in memory). */
/* Rewrites results (and samples, when not NULL and present) with the rows
 * sorted: results by (task, candidate) in natural order (L1/2 before L1/10),
 * samples by candidate in that same order, each candidate's samples in
 * their time order. Whole or not at all: a temp file of the folder, fsynced,
 * renamed over. Fields are written as they were read (csv_fwrite), so a row's
 * bytes do not change, only its place. A missing file is CR_OK. */
enum cr_status eval_out_sort(const char *results, const char *samples, struct cr_err *err);

/* eval_out_unreadable: a regular file whose rows cannot be read (NUL bytes,
 * not CSV, no run_id column first). Another crucible's header is readable:
 * cr_results_open refuses it. */
/* --resume over a results.csv whose rows cannot be read (not this version's
 * header, or not CSV): renames it to PATH.unreadable-<UTC time> (and
 * samples.csv beside it the same way), says so on stderr. moved receives the
 * new name. CR_EIO when the rename fails. */
bool eval_out_unreadable(const char *path);
enum cr_status eval_out_keep_aside(const char *results, const char *samples, char *moved,
				   size_t cap, struct cr_err *err);

/* run.json "slurm": {"job_id", "array_job_id", "array_task_id"} from the
 * environment (each a string, or null when unset), or null outside Slurm.
 * Returned as a json_t * (void * here: no jansson in this header). */
void *eval_out_slurm_json(void);

/* The folder work folders are made in: TMPDIR when the candidates' user can
 * reach it (absolute, every ancestor o+x: a Slurm job's scratch is often
 * one), else /tmp, said on stderr each call. */
const char *eval_tmp_base(void);
/* A fresh work folder (mode 0755) under eval_tmp_base(): malloc'd path, or
 * NULL with errno set. Used by eval, check and run. */
char *eval_workroot_new(void);

/* SIGINT and SIGTERM: the first sets a flag (the run stops taking
 * candidates, writes what is done, and exits 130 or 143); the second kills
 * the process as the signal would have. Handlers, so a job forked after
 * this and every exec'd worker get the default back at exec. */
void eval_signals_install(void);
/* The signal that asked the run to stop (SIGINT, SIGTERM), or 0. */
int eval_interrupted(void);
/* The flag itself, for the --jobs pool's poll (eval_jobs_stop_on). */
volatile sig_atomic_t *eval_stop_flag(void);

/* Progress on stderr, counting finished candidates: on a terminal one line
 * redrawn ("[12/18 done, 2 running] 0:41 elapsed, ~0:20 left  a.c"), else a
 * line per finished candidate. */
struct eval_progress {
	int n;            /* candidates to evaluate in this run */
	int done;         /* finished */
	bool tty;
	bool drawn;       /* a redrawn line is on the terminal */
	int64_t t0;       /* cr_now_ns() at the start */
	int counts[16];   /* finished candidates by verdict (enum check_verdict) */
	int64_t last_tick; /* eval_progress_tick: the last redraw */
};
void eval_progress_start(struct eval_progress *p, int n);
/* A candidate started (running: how many are in flight now, name: its file). */
void eval_progress_started(struct eval_progress *p, int running, const char *name);
/* A candidate finished with verdict v (its row is written). */
void eval_progress_finished(struct eval_progress *p, int running, const char *name, int verdict);
/* On a terminal, the line already drawn redrawn with the clock now (at most
 * once a second): a long candidate does not freeze it. */
void eval_progress_tick(struct eval_progress *p, int running);
/* Clears a redrawn line (before a table row or a message). */
void eval_progress_clear(struct eval_progress *p);
/* The closing line, pytest's way: "18 evaluated: 14 ok, 1 mismatch, 3
 * compile_error in 76 s" (and how many --resume found done). */
void eval_progress_close(struct eval_progress *p, int resumed);
/* Seconds since eval_progress_start. */
double eval_progress_elapsed(const struct eval_progress *p);

#endif
