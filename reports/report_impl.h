/* report_impl.h — private types of reports/: the parsed results.csv rows
 * (struct report_run), the numbers computed from them (struct report_summary),
 * the statistics helpers and the printers. Shared by the files of reports/
 * and by tests/reports; not part of the public interface (see report.h). */
#ifndef REPORT_IMPL_H
#define REPORT_IMPL_H

#include <stddef.h>
#include <stdio.h>

#include "common/cr_status.h"
#include "common/cr_verdict.h"

/* SPEC §4 verdicts: the shared vocabulary of common/cr_verdict.h, whatever it
 * holds (issue 31 adds no_code), so a row is never refused for a verdict the
 * verifier writes; RS_COUNT sizes the status tables. */
enum report_rs {
	RS_FORMAT_ERROR = CHECK_FORMAT_ERROR, RS_COMPILE_ERROR = CHECK_COMPILE_ERROR,
	RS_RUNTIME_ERROR = CHECK_RUNTIME_ERROR, RS_TIMEOUT = CHECK_TIMEOUT,
	RS_OUT_OF_BOUNDS = CHECK_OUT_OF_BOUNDS, RS_INPUT_MUTATED = CHECK_INPUT_MUTATED,
	RS_DEGENERATE = CHECK_DEGENERATE, RS_MISMATCH = CHECK_MISMATCH,
	RS_NONDETERMINISTIC = CHECK_NONDETERMINISTIC, RS_STALE_RESULT = CHECK_STALE_RESULT,
	RS_OK = CHECK_OK, RS_COMPILED = CHECK_COMPILED, RS_COUNT = CHECK_VERDICT_COUNT
};
enum report_bw { RB_PASS, RB_FAIL, RB_ABSENT, RB_NONE, RB_COUNT };

/* A status's results.csv name (check_verdict_name). */
const char *report_status_name(int status);
extern const char *const report_bw_names[RB_COUNT];

/* One results.csv row. Unknown (empty) numbers are NAN. */
struct report_row {
	char *task;          /* owned */
	char *candidate;     /* owned */
	char *model;         /* owned, "" when empty */
	char *strategy;      /* owned, "" when the optional column is absent */
	char *detail;        /* owned, the detail column ("" when empty) */
	long line;           /* physical line where the record starts (1-based) */
	long sample;         /* sample index, 0 when empty */
	long turn;           /* refinement turn, -1 when empty */
	long generation;     /* evolve generation (optional column), -1 when empty or absent */
	enum report_rs status;
	enum report_bw backward;
	double speedup, speedup_lo, speedup_hi; /* baseline / candidate time */
	double time_us, baseline_us;
	double max_abs_err, max_rel_err;  /* NAN when empty (crashed, timed out): unknown */
	double reasoning_tokens, completion_tokens;
	double temperature, top_p, top_k;
	char *label;         /* owned, "" when the optional column is absent or empty */
	char *sha256;        /* owned source_sha256, "" when empty */
	char *verify_seed;   /* owned, the optional verify_seed column, "" when absent */
	int noisy;           /* 1 noisy timing, 0 not, -1 unknown (untimed or no flag) */
	double n_samples;    /* the samples column (timed samples), NAN when empty */
	/* Raw timing samples of the row from samples.csv (us), time order; NULL
	 * when the run has no samples.csv or none for this row. Owned. */
	double *s_cand, *s_base;
	size_t n_cand, n_base;
};

/* One results.csv file. */
struct report_run {
	char *path;                /* owned */
	struct report_row *rows;   /* [n_rows], owned */
	size_t n_rows, cap;
	int has_samples;           /* a samples.csv was found beside the file */
	/* rows that name no task (a candidate whose file gave none: eval writes
	 * a format_error row with an empty task): kept out of rows[], counted
	 * by status so the status table and the totals still show them */
	int untasked[RS_COUNT];
	int n_untasked;
};

/* Options of the tables (p and k grids, task set, correctness rule). */
struct report_opts {
	double p[32];   /* Fast_p thresholds, strict speedup > p */
	size_t np;
	int k[32];      /* pass@k grid */
	size_t nk;
	int strict_backward;   /* backward "absent" counts as incorrect */
	char **task_list;      /* the task set (borrowed), or NULL: tasks of the files */
	size_t n_task_list;
	int task_union;       /* task_list is the union of the tasks of several files */
	const char *task_list_path; /* --task-list FILE, NULL otherwise */
	const long *task_list_lines; /* [n_task_list] the line of each name in it, or NULL */
};

void report_opts_default(struct report_opts *o);

/* A row is correct when status is ok and its backward did not fail (nor is
 * absent under --strict-backward). */
int report_row_correct(const struct report_row *r, const struct report_opts *o);
/* A row is fast at p when timed with speedup > p; a noisy figure only at
 * p <= 0 (it ran and was timed, its speed is not trusted). */
int report_row_fast(const struct report_row *r, double p);

/* report_csv.c: load one results.csv. On error the message names the file,
 * line and problem, and the status is CR_EINPUT (bad content) or CR_EIO. */
enum cr_status report_run_load(const char *path, struct report_run *run, struct cr_err *e);
void report_run_release(struct report_run *run);
/* Reads samples.csv beside run->path (same directory) into the rows' s_cand /
 * s_base, matched by candidate and source_sha256. A missing file is not an
 * error (run->has_samples stays 0); a malformed one is (CR_EINPUT). */
enum cr_status report_run_load_samples(struct report_run *run, struct cr_err *e);
/* Natural order of task names (strverscmp): t/2 before t/10. */
int report_name_cmp(const char *a, const char *b);
/* Reads a task list file (one task name per line, '#' comments, blank lines
 * ignored) into a heap array of heap strings. */
enum cr_status report_task_list_load(const char *path, char ***names, size_t *n,
				     struct cr_err *e);
/* As report_task_list_load, with *lines[i] the line of names[i] (heap). */
enum cr_status report_task_list_load_lines(const char *path, char ***names, long **lines,
					   size_t *n, struct cr_err *e);
void report_task_list_free(char **names, size_t n);

/* report_stats.c */
/* Unbiased pass@k = 1 - C(n-c,k)/C(n,k) in the product form
 * 1 - prod_{i=n-c+1..n} (1 - k/i). NAN when k > n or k < 1. */
double report_pass_at_k(int n, int c, int k);
double report_median(double *v, size_t n);           /* sorts v; NAN when n == 0 */
double report_quantile(const double *sorted, size_t n, double q); /* type 7 */
/* Pearson r of (x, y); NAN when n < 2 or a variance is zero. */
double report_pearson(const double *x, const double *y, size_t n);
/* Two-sided Student t quantile: t with P(T <= t) = prob, df >= 1. */
double report_t_quantile(double prob, double df);
/* Two-sided p of Student's t statistic t with df degrees of freedom. */
double report_t_two_sided(double t, double df);
/* Geometric mean of v[n] (all > 0) and its 95% t-interval on log values;
 * lo = hi = NAN when n < 2. */
void report_geomean(const double *v, size_t n, double *gm, double *lo, double *hi);

/* Two-sided p-value of the Mann-Whitney U test that a and b come from the
 * same distribution: exact (no ties, both sizes <= 25) or the normal
 * approximation with tie and continuity corrections. NAN when a side is empty. */
double report_mann_whitney(const double *a, size_t na, const double *b, size_t nb);
/* One stratum (a --confirm round) of a stratified Mann-Whitney test: a[na]
 * against b[nb], both borrowed. */
struct report_stratum {
	const double *a;
	size_t na;
	const double *b;
	size_t nb;
};
/* Stratified Mann-Whitney test: the strata's U statistics summed (van
 * Elteren's test with equal weights), so a shift common to both sides of a
 * stratum cancels. One-sided p values that a tends to lie below b (*p_less)
 * and above b (*p_greater). Exact (the strata's null distributions convolved)
 * when no stratum has ties or more than 25 a side, else the normal
 * approximation with tie and continuity corrections. Strata with an empty side
 * are skipped; NAN when none is left (or out of memory). */
void report_mw_strata(const struct report_stratum *s, size_t k, double *p_less,
		      double *p_greater);

/* Difficulty bucket of an average reasoning length: 0 Easy (< 4000),
 * 1 Medium (4000 <= arl <= 8500), 2 Hard (> 8500). */
int report_bucket(double arl);
extern const char *const report_bucket_names[3];

/* What pass@k counts as one draw (issue 31, docs/REPORTS.md "pass@k of refine and
 * evolve runs"): a candidate (best-of-n, self-consistency, eval), a refine
 * trajectory (its turns depend on each other), or an evolve search of a task. */
enum report_unit { RU_CANDIDATE, RU_TRAJECTORY, RU_SEARCH };
extern const char *const report_unit_names[3];

/* What run.json beside a results.csv says of the run that wrote it. */
struct report_runmeta {
	int found;             /* a run.json was read */
	int is_run;            /* "command": "run" (crucible run) */
	char strategy[32];     /* "strategy", else "options"."strategy"; "" absent */
	long n, turns, keep;   /* "options", -1 absent */
	long budget_tokens;    /* "options"."budget_tokens", -1 absent, 0 none */
	long reused, generated; /* "resume": candidates --resume took from disk and made anew, -1 absent */
};
/* report_names.c: reads run.json beside csv_path into m (m->found = 0 when
 * absent or not a json object: the naming reports that error). */
void report_runmeta_read(const char *csv_path, struct report_runmeta *m);
/* A run's name from its strategy and options ("refine, 2 trajectories × 3
 * turns", "evolve, 3 generations × 4 (the draft and 2), keep 2", "best-of-n,
 * n=8"; ", budget B tokens a task" when budgeted); options run.json lacks
 * from the rows: n_max samples a request (best-of-n, self-consistency) or
 * population (evolve), units_max trajectories per task, last the last turn
 * (generation). "" for another strategy. */
void report_name_strategy(const char *strategy, const struct report_runmeta *m, long n_max,
			  long units_max, long last, char *out, size_t len);

/* A run's provenance (issue 32), from the run.json beside its results.csv:
 * strings "" when run.json lacks them (made safe for markdown and html). */
struct report_prov {
	int found;              /* a run.json (a json object) was read */
	char version[48];       /* "version" (eval) or "crucible" (run) */
	char revision[64];
	char run_id[64];
	char device[160];
	char backend[16];
	char started[40];       /* "started" */
	char finished[40];      /* "finished" (eval), "ended" (run) */
	char seed_source[24];   /* "--seed", "drawn", "secret"; "" absent */
	int has_seed;           /* "seed" is a number */
	long long seed;
	int secret;             /* 1 a CRUCIBLE_SEED secret was mixed in, 0 not, -1 unknown */
	int timing;             /* "timing": 1, 0, -1 absent */
	int complete;           /* "complete": 1, 0, -1 absent */
};
/* report_meta.c */
/* run.json beside a results.csv, untrusted (cr_read_data): the object, or
 * NULL when absent, unreadable or not an object. The caller decrefs. */
struct json_t *report_run_json_beside(const char *csv_path);
void report_prov_read(const char *csv_path, struct report_prov *p);
/* The seed and its source in words ("7 (given with --seed; no secret)",
 * "secret: ...", "unknown (no run.json)"), into buf. */
const char *report_prov_seed(const struct report_prov *p, char *buf, size_t len);
/* "crucible VERSION (revision REV), DATE": the report tool itself, now. */
void report_tool_version(char *out, size_t len);

/* Per-task numbers of one run. */
struct report_task {
	const char *name;      /* borrowed from the rows or the task list */
	int n, c;              /* candidates, correct candidates */
	int *c_fast;           /* [np] correct with speedup > p (into summary storage) */
	double best_speedup;   /* best trusted (not noisy) speedup of a correct candidate, NAN if none */
	double best_time_us, best_base_us; /* that candidate's and its baseline's median times (us) */
	int c_noisy;           /* correct candidates with a noisy (untrusted) timing figure */
	double median_speedup; /* over correct candidates with a speedup */
	double arl;            /* mean reasoning_tokens, NAN when none known */
	int n_tok;             /* rows with reasoning_tokens */
	/* pass@k's independent draws (issue 31): the candidates themselves, refine's
	 * trajectories (correct when any turn is) or evolve's one search of the task */
	int nu, cu;            /* units, units with a correct candidate */
	int *cu_fast;          /* [np] units with a candidate fast at p (into summary storage) */
};

/* A group of candidates (bucket or quartile) in the reasoning tables. */
struct report_group {
	int n_tasks;       /* buckets only */
	int n, n_correct;  /* candidates with reasoning_tokens, correct ones */
	int n_speed;       /* correct with a speedup */
	double median_speedup;
	double lo, hi;     /* reasoning-length range of the group */
};

struct report_summary {
	const char *path;
	char label[160];           /* from metadata: model, T, n, strategy, turns */
	char model[64], strategy[64];
	double temperature;        /* NAN when mixed or unknown */
	int max_turn;              /* -1 when unknown */
	struct report_opts opts;
	size_t n_rows;
	int tasks_from_list;       /* 0: tasks of the file, 1: --task-list, 2: union of files */
	size_t n_tasks;            /* N */
	size_t n_ignored_rows;     /* rows whose task is not in the task list */
	int n_untasked;            /* rows naming no task: in the status counts and
				    * totals, in no task's figures (report_run) */
	struct report_task *tasks; /* [n_tasks], sorted by name */
	int *c_fast_store;         /* [n_tasks * np] */
	int n_min, n_max;          /* candidates per task, over tasks that have any */
	/* Fast_p */
	double fast_best[32];      /* best-of-n, [np] */
	long *sample_ids;          /* [n_samples] distinct sample indices, sorted */
	size_t n_samples;
	double *fast_sample;       /* [n_samples * np] */
	double fast_sample_mean[32];
	int n_correct_nospeed;     /* correct rows with an empty speedup */
	/* pass@k */
	double pass_k[32];         /* [nk], NAN when every task has n < k */
	double fastp_k[32 * 32];   /* [nk * np] */
	int k_short[32];           /* tasks with 0 < n < k, left out of the mean */
	/* units (issue 31): pass_k, fastp_k and k_short are over the tasks' units
	 * (nu, cu); pass_k_cand is the old per-candidate figure, turns or
	 * generations taken as independent (for comparison only) */
	enum report_unit unit;
	struct report_runmeta meta; /* run.json beside the file */
	char run_name[128];        /* from the strategy and its options, "" when unknown */
	int *cu_fast_store;        /* [n_tasks * np] */
	int n_units, nu_max;       /* units over all tasks, most of one task */
	double pass_k_cand[32];    /* [nk] */
	/* by step (refine: turn t; evolve: generation g, the draft 0), each unit
	 * at its best so far: correct at t when one of its candidates of step <= t is */
	int n_steps;               /* 0: no by-step table (candidates) */
	long *step_ids;            /* [n_steps] the turns (generations) the rows have, ascending */
	int *step_cands;           /* [n_steps] candidates of that step */
	int *step_correct;         /* [n_steps] units correct by then (all tasks) */
	double *step_pass;         /* [n_steps * nk] pass@k */
	double *step_fast;         /* [(t * nk + ki) * np + j] fast_p@k at step t */
	/* evolve: the draft (generation 0) is N independent samples of one prompt:
	 * its own pass@k over its candidates ([nk], NAN when none has n >= k) */
	double draft_pass[32];
	int draft_n, draft_c;      /* its candidates and correct ones, all tasks */
	/* provenance (issue 32) and what the run measured: a run that was not
	 * timed (run.json "timing": false, or correct rows but none timed) has
	 * timing_measured 0 and every speedup figure NAN (n/a, json null, never
	 * 0); a compile-only run (rows with status compiled) correct_measured 0
	 * and pass@k NAN too */
	struct report_prov prov;
	int timing_measured, correct_measured;
	/* counts */
	int status_counts[RS_COUNT];
	int bw_counts[RB_COUNT];
	int n_correct;
	/* geometric mean over correct candidates with a trusted speedup (not noisy) */
	int gm_n;
	/* timing trust (issue 29): rows with a timing figure, those flagged noisy,
	 * correct noisy ones (out of Fast_p for p > 0, the geomean, the medians) */
	int n_timed, n_noisy, n_correct_noisy;
	char machine_verdict[24];  /* run.json "machine" "verdict", "" when absent */
	char machine_why[200];     /* its "why" */
	double gm, gm_lo, gm_hi;
	double *speedups;          /* [gm_n] those speedups */
	/* reasoning length */
	int rl_n, rl_missing;      /* rows with / without reasoning_tokens */
	struct report_group bucket[3], quart[4];
	double q1, q2, q3;
	double r_speed, r_correct; /* Pearson r */
	int r_speed_n, r_correct_n;
	double *scatter;           /* [2 * r_speed_n] (tokens, speedup) pairs */
};

/* report_tables.c: compute a summary of a run; tasks borrowed from run. */
enum cr_status report_summary_compute(const struct report_run *run,
				      const struct report_opts *o,
				      struct report_summary *s, struct cr_err *e);
void report_summary_release(struct report_summary *s);
/* Mean pass@k over n_tasks tasks of n[t] draws and c[t * cstride] correct: a
 * task with n = 0 counts 0, one with n < k is left out (counted in *short_out,
 * may be NULL); NAN when no task has n >= k. */
double report_mean_pass(size_t n_tasks, const int *n, const int *c, size_t cstride, int k,
			int *short_out);
/* report_units.c: the units of a summary whose tally is done (tid[i]: row i's
 * task, -1 left out): nu, cu, cu_fast, the by-step and draft figures. */
enum cr_status report_units_compute(const struct report_run *run, const long *tid,
				    struct report_summary *s, struct cr_err *e);
/* report_names.c: s->run_name from s->meta and the units ("refine, 2
 * trajectories × 3 turns"); "" when the strategy is unknown or mixed. */
void report_run_name(struct report_summary *s, const char *strategy);
/* Fast_p best-of-n at any p (for plots). */
double report_summary_fast_at(const struct report_summary *s, double p);
/* pass@k averaged over tasks like pass_k, for any k (for plots). */
double report_summary_pass_at(const struct report_summary *s, int k);

/* report_names.c: the names of several runs (ablations) into s[i].label:
 * their labels, else the options that differ (rows and run.json beside each
 * results.csv), else the directory; never a number. With one run, a label
 * from run.json or the rows is put before the metadata label. */
enum cr_status report_name_runs(struct report_summary *s, const struct report_run *runs,
				size_t n, struct cr_err *e);

/* Printers: only print. */
enum report_fmt { RF_MD, RF_HTML, RF_JSON, RF_CSV };
void report_print_md(FILE *f, const struct report_summary *s, size_t n);
void report_print_ablation_md(FILE *f, const struct report_summary *s, size_t n);
/* The run's timing trust: timed and noisy rows, the machine verdict (issue 29). */
void report_print_trust_md(FILE *f, const struct report_summary *s);
int report_print_json(FILE *f, const struct report_summary *s, size_t n);
void report_print_csv(FILE *f, const struct report_summary *s, size_t n);
void report_print_html(FILE *f, const struct report_summary *s, size_t n);
/* report_svg.c: one self-contained <svg> per call, a line/series per run. */
void report_svg_pass_at_k(FILE *f, const struct report_summary *s, size_t n);
void report_svg_fast_p(FILE *f, const struct report_summary *s, size_t n);
void report_svg_histogram(FILE *f, const struct report_summary *s, size_t n);
void report_svg_scatter(FILE *f, const struct report_summary *s, size_t n);
/* report_meta.c: a run's provenance as a markdown table, a json object
 * (new reference) and long-csv lines (table "provenance"); the report
 * tool's own version, revision and date as json. */
void report_print_prov_md(FILE *f, const struct report_summary *s);
struct json_t *report_prov_json(const struct report_summary *s);
struct json_t *report_tool_json(void);
void report_print_prov_csv(FILE *f, const struct report_summary *s);
/* Writes one CSV field, quoted through libcsv when it needs quoting. */
void report_csv_field(FILE *f, const char *s, int last);
/* One line of the long csv tables: run,file,table,row,column,value (NaN: empty). */
void report_csv_line(FILE *f, const char *run, const char *file, const char *table,
		     const char *row, const char *col, double v);

/* report_gate.c (decision) and report_gate_out.c (printers, re-runs) */
struct report_gate_opts {
	double threshold;  /* relative change that matters, default 0.05 */
	double min_fast1;  /* NAN: no floor */
	int strict_backward;
	double alpha;      /* significance of the sample test, default 0.01 */
	int confirm;       /* --confirm N: re-runs of each suspect, 0 none */
	const char *crucible;  /* binary for the re-runs (default /proc/self/exe) */
	char **eval_args;      /* extra arguments of each `crucible eval` re-run */
	size_t n_eval_args;
	const char *tasks;     /* --tasks SET[,SET]: only these tasks or sets, or NULL */
};
void report_gate_opts_default(struct report_gate_opts *o);

/* Per task: correctness first (LOST, MISSING, FIXED, NEW, FAILING), then for
 * a task correct in both runs the speed verdict (SAME, FASTER, SLOWER,
 * INCONCLUSIVE). LOST, MISSING and SLOWER fail the gate. */
enum report_verdict {
	RV_SAME, RV_FASTER, RV_SLOWER, RV_INCONCLUSIVE,
	RV_LOST, RV_MISSING, RV_FIXED, RV_NEW, RV_FAILING, RV_COUNT
};
extern const char *const report_verdict_names[RV_COUNT];
/* How a speed verdict was reached. */
enum report_method { RM_NONE, RM_INTERVALS, RM_SAMPLES, RM_RERUNS };
extern const char *const report_method_names[4];

/* How a sequential --confirm ended: not run, a decision (SLOWER, FASTER, a
 * slowdown beyond the threshold ruled out), or --confirm rounds without one. */
enum report_stop { RS_NONE, RS_SLOWER, RS_FASTER, RS_RULED_OUT, RS_UNDECIDED };
extern const char *const report_stop_names[5];

struct report_gate_task {
	const char *name;
	int in_base, in_cur;
	int base_ok, cur_ok;
	double base_sp, base_lo, base_hi;
	double cur_sp, cur_lo, cur_hi;
	int base_noisy, cur_noisy;           /* 1 noisy, 0 not, -1 unknown */
	const struct report_row *base_row, *cur_row; /* best rows (borrowed), or NULL */
	/* speedup observations: per-sample speedups (samples.csv pairs) or one
	 * per run (with --confirm re-runs); owned */
	double *obs_base, *obs_cur;
	size_t n_obs_base, n_obs_cur;
	enum report_method method;
	double ratio, ratio_lo, ratio_hi;    /* current / baseline speedup */
	double p;                            /* Mann-Whitney p, NAN without samples */
	int reruns;                          /* re-runs done by --confirm */
	/* The sequential --confirm (samples): round k = 1..reruns holds
	 * obs_base[round_base[k - 1] .. round_base[k]) and obs_cur[round_cur[k - 1]
	 * .. round_cur[k]); round_base[0] and round_cur[0] count the gated rows'
	 * own observations. [confirm + 1] each, owned; NULL without rounds. */
	size_t *round_base, *round_cur;
	int base_rerun;                      /* the baseline was re-run in each round */
	double p_ruled_out;                  /* one-sided p that cur > base (1 - threshold) */
	enum report_stop stop;               /* how --confirm ended */
	enum report_verdict verdict;
	char reason[512];
	/* issue 29: the two tests behind a sample verdict (p is the smaller
	 * Bonferroni-adjusted one), the compared sources, the baseline's drift
	 * (current run's task baseline_us / the baseline run's, NAN unknown) and
	 * the current candidate's fast_1 state (1 surely fast, 0 surely not,
	 * -1 undecided) */
	double p_mw, p_trim;
	int same_source;
	double base_drift;
	int fast_state;
};
struct report_gate {
	struct report_gate_task *tasks; /* [n], natural order of names, names borrowed */
	size_t n;
	int counts[RV_COUNT];
	double fast1;       /* current best-of-n fast_1 over base ∪ current tasks */
	double base_fast1;
	/* the floor by the verdicts' test (issue 29): tasks surely fast, surely
	 * not fast, undecided; floor_state 0 none, 1 met, 2 inconclusive, 3 failed */
	int n_fast_sure, n_fast_not, n_fast_undecided, floor_state;
	int n_compared, n_decided;  /* tasks correct in both, and not INCONCLUSIVE */
	double drift_gm;            /* geometric mean of the tasks' base_drift, NAN none */
	int n_drift, n_drift_beyond; /* tasks with a drift, beyond the threshold */
	int floor_failed;
	int base_untasked, cur_untasked; /* rows naming no task: in no comparison */
	int base_timed, cur_timed;  /* rows with a timing figure (a speedup or samples); 0:
				     * that run was not timed, its fast_1 is not measured */
	int failed;         /* any LOST, MISSING, SLOWER, or the floor */
};
enum cr_status report_gate_compute(const struct report_run *base, const struct report_run *cur,
				   const struct report_gate_opts *o, struct report_gate *g,
				   struct cr_err *e);
/* The speed verdict of a task correct in both runs, from its observations
 * (>= 3 a side: Mann-Whitney) or else its intervals and noisy flags. */
void report_gate_decide(struct report_gate_task *t, const struct report_gate_opts *o);
int report_gate_slowdown_excluded(const struct report_gate_task *t,
				  const struct report_gate_opts *o);
/* Appends x to a task's observations (side 0 baseline, 1 current). */
enum cr_status report_gate_obs_push(struct report_gate_task *t, int side, double x,
				    struct cr_err *e);
/* report_gate_seq.c: one look of the sequential --confirm, after round k of
 * t's rounds (samples): the stratified Mann-Whitney test on rounds 1..k at
 * alpha / confirm (Bonferroni over the confirm looks). Sets t's method, p,
 * ratio, p_ruled_out and reruns; on a decision (or at k == confirm) also the
 * verdict, reason and stop, and returns that stop; RS_NONE: go on. */
enum report_stop report_gate_look(struct report_gate_task *t, int k,
				  const struct report_gate_opts *o);
/* Recounts the verdicts and the failure after a task's verdict changed. */
void report_gate_recount(struct report_gate *g);
/* report_gate_confirm.c, --confirm: re-runs every suspect (SLOWER, or
 * INCONCLUSIVE with a slowdown beyond the threshold not ruled out) with
 * `crucible eval`, the baseline's candidate then the current one each round:
 * with samples, rounds until report_gate_look decides (at most o->confirm);
 * without, o->confirm rounds pooled and decided once. */
enum cr_status report_gate_confirm(struct report_gate *g, const struct report_gate_opts *o,
				   FILE *log, struct cr_err *e);
void report_gate_release(struct report_gate *g);
void report_gate_print_text(FILE *f, const struct report_gate *g, const struct report_gate_opts *o);
void report_gate_print_junit(FILE *f, const struct report_gate *g, const struct report_gate_opts *o);
void report_gate_print_md(FILE *f, const struct report_gate *g, const struct report_gate_opts *o);
int report_gate_print_json(FILE *f, const struct report_gate *g, const struct report_gate_opts *o);

/* report_csvtab.c: a CSV file as text fields (libcsv, strict), each record
 * with the physical line where it starts; every record must have the
 * header's number of fields (CR_EINPUT naming file:line otherwise). */
struct report_trow {
	long line;
	char **f;            /* [n_cols] owned */
};
struct report_table {
	char *path;          /* owned */
	char **header;       /* [n_cols] owned */
	size_t n_cols;
	struct report_trow *rows;  /* [n_rows] owned */
	size_t n_rows, cap;
};
enum cr_status report_table_load(const char *path, struct report_table *t, struct cr_err *e);
int report_table_col(const struct report_table *t, const char *name); /* -1: absent */
void report_table_release(struct report_table *t);

/* report_run.c: run directories of `crucible run` (run.json with "command":
 * "run", results.csv, selected.csv, curve.csv; docs/REPORTS.md, "Run
 * directories"): scaling curves, reward-hacking rates, self-consistency vs
 * the verifier. */
enum report_strat { RST_BEST_OF_N, RST_REFINE, RST_EVOLVE, RST_SELF_CONSISTENCY, RST_COUNT };
extern const char *const report_strat_names[RST_COUNT];

/* The reward-hacking verdicts: statuses that mean the candidate attacked the
 * verifier, and a runtime_error of the candidate's own forbidden system call. */
enum report_hk {
	HK_DEGENERATE, HK_STALE_RESULT, HK_INPUT_MUTATED, HK_OUT_OF_BOUNDS, HK_NONDETERMINISTIC,
	HK_SANDBOX, HK_COUNT
};
extern const char *const report_hk_names[HK_COUNT];
/* The verdict of a results row, or -1 when it is not reward hacking. */
int report_row_hack(const struct report_row *r);

/* One row of curve.csv: the selector's pick after the step-th candidate. */
struct report_curve_pt {
	long line;           /* in curve.csv */
	size_t task;         /* index into the run directory's tasks */
	long step;           /* 1-based */
	long turn;           /* turn (refine), generation (evolve), else 0 */
	double tokens;       /* cumulative_tokens of the task after this candidate */
	double speedup;      /* of the pick, NAN when untimed or nothing picked */
	int correct, fast1;  /* of the pick */
};

/* One row of selected.csv (the pick of a task). */
struct report_pick {
	long line;
	int picked;          /* 0: "no candidate" (empty candidate and status) */
	int correct;         /* report_row_correct's rule on its status and backward */
	double speedup;      /* NAN when untimed */
	double tokens_spent; /* NAN when empty */
	int budget_stop;     /* stopped == budget or over_budget */
	int over_budget;     /* stopped == over_budget: spent past the budget */
};

struct report_rundir {
	char *dir;                 /* owned, as given, no trailing '/' */
	const struct report_run *results;  /* its results.csv (borrowed) */
	enum report_strat strategy;        /* run.json */
	char gen_kind[32];                 /* run.json generator.kind, "" when absent */
	int untimed;                       /* not timed (run.json, issue 32): fast_1 curves n/a */
	char model[128];                   /* generator.model's basename, else the rows' one */
	struct report_runmeta meta;        /* run.json's options and --resume's counts */
	char name[128];                    /* from the strategy and its options (issue 31) */
	char **tasks;                      /* [n_tasks] the task set, natural order, owned */
	size_t n_tasks;
	int tasks_from_list;               /* --task-list gave the set */
	size_t n_left_out;                 /* selected/curve rows outside --task-list */
	struct report_pick *picks;         /* [n_tasks], a task with no selected.csv row:
	                                    * picked = 0, line = 0 */
	size_t n_selected;                 /* rows of selected.csv */
	int n_budget_stop;
	int n_over_budget;                 /* of them, past the budget */
	int n_oracle;                      /* tasks with some correct candidate in results.csv */
	int *oracle;                       /* [n_tasks] 1: some correct candidate */
};

/* One (strategy, model) of one run directory: per task its curve points in
 * step order (pts[first[t] .. first[t] + count[t])) and the means over the
 * run's task set at every budget and step of the report's grids. */
struct report_series {
	size_t dir;                /* index into report_runs.dirs */
	enum report_strat strategy;
	char model[128];
	char label[288];           /* "strategy model" (+ " (dir)" when two coincide) */
	struct report_curve_pt *pts;   /* [n_pts] owned, by (task, step) */
	size_t n_pts;
	size_t cap_pts;
	size_t *first, *count;     /* [n_tasks of dir] */
	long max_step;
	double *tok_correct, *tok_fast1;   /* [n_grid] fraction of tasks */
	double *step_correct, *step_fast1; /* [n_steps] */
};

/* Reward-hacking counts of one strategy or model. */
struct report_hack {
	char key[128];
	long rows;                 /* results.csv rows */
	long n[HK_COUNT];
	long total;                /* rows with any of them */
};

/* Self-consistency's majority pick against the verifier's (best-of-n). */
struct report_sc {
	size_t dir;
	int n_tasks, n_incorrect, n_none;  /* none: no candidate picked */
	int n_wrong_oracle;        /* picked incorrect though a correct candidate existed */
	double tokens_mean;        /* mean tokens_spent over tasks that have it */
	long bon;                  /* the best-of-n run beside it (dirs index), -1: none */
	int bon_correct;
	double bon_tokens_mean;
	char note[320];            /* why no best-of-n is beside it, or which of several */
};

struct report_runs {
	struct report_rundir *dirs;  /* [n_dirs] owned */
	size_t n_dirs;
	struct report_series *ser;   /* [n_ser] owned, by (dir, strategy, model) */
	size_t n_ser;
	double *grid;                /* [n_grid] budgets, completion tokens per task, ascending */
	size_t n_grid, n_budgets;    /* n_budgets: distinct cumulative_tokens before thinning */
	long *steps;                 /* [n_steps] ascending */
	size_t n_steps;
	struct report_hack *by_strat, *by_model, total; /* [n_by_strat], [n_by_model] */
	size_t n_by_strat, n_by_model;
	struct report_sc *sc;        /* [n_sc] one per self-consistency run */
	size_t n_sc;
};

/* A command-line input: a directory (DIR/results.csv) or a results.csv file.
 * *csv: the results.csv path (heap); *is_run: 1 when run.json beside it says
 * "command": "run". A directory without results.csv, or an unreadable
 * run.json, is CR_EINPUT naming the file. */
enum cr_status report_input_resolve(const char *arg, char **csv, int *is_run, struct cr_err *e);
/* Loads the run directories dirs[i] (results[i] their loaded results.csv)
 * and computes every table; o gives the correctness rule and --task-list. */
enum cr_status report_runs_load(struct report_runs *R, char *const *dirs,
				const struct report_run *const *results, size_t n,
				const struct report_opts *o, struct cr_err *e);
void report_runs_release(struct report_runs *R);
/* report_run_calc.c: the grids, the curves, the hacking counts and the
 * self-consistency table of loaded run directories. */
enum cr_status report_runs_compute(struct report_runs *R, struct cr_err *e);
/* Index of a task in d->tasks, -1 when it is not in the set. */
long report_rundir_task(const struct report_rundir *d, const char *name);
/* Budget lookup: the fraction of series s's tasks (n_tasks of its dir)
 * whose pick at budget b (the point with the largest cumulative_tokens <= b;
 * none: incorrect) is correct (fast = 0) or fast_1 (fast = 1). */
double report_series_at_tokens(const struct report_series *s, size_t n_tasks, double b, int fast);
double report_series_at_step(const struct report_series *s, size_t n_tasks, long step, int fast);

/* report_run_out.c: the run-directory sections (only print). */
void report_runs_print_md(FILE *f, const struct report_runs *R);
void report_runs_print_csv(FILE *f, const struct report_runs *R);
struct json_t;
struct json_t *report_runs_json(const struct report_runs *R); /* new reference, NULL: no memory */
/* report_svg.c: scaling curves, a line per series: x = tokens (by_step 0,
 * log axis) or step; y = correct (fast 0) or fast_1 (fast 1). */
void report_svg_scaling(FILE *f, const struct report_runs *R, int by_step, int fast);
/* With the run sections (R may be NULL: as the functions above). */
void report_print_md_runs(FILE *f, const struct report_summary *s, size_t n,
			  const struct report_runs *R);
int report_print_json_runs(FILE *f, const struct report_summary *s, size_t n,
			   const struct report_runs *R);
void report_print_csv_runs(FILE *f, const struct report_summary *s, size_t n,
			   const struct report_runs *R);
void report_print_html_runs(FILE *f, const struct report_summary *s, size_t n,
			    const struct report_runs *R);

/* Formatting helper: "%.*f" or "—"-free "n/a" for NAN, into buf. */
const char *report_fmt_num(char *buf, size_t len, double v, int prec);
/* A time in us, readable: "850 µs", "12.3 ms", "1.50 s"; "n/a" for NAN. */
const char *report_fmt_time(char *buf, size_t len, double us);
/* run.json "machine" beside csv_path into s (left "" when absent or unreadable). */
void report_machine_read(const char *csv_path, struct report_summary *s);

#endif
