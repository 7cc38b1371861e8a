/* results.h — results.csv (SPEC §6) through libcsv, one row per candidate,
 * written and flushed (fsync) as soon as the candidate is done, so a killed
 * run loses nothing finished; and run.json. */
#ifndef CR_RESULTS_H
#define CR_RESULTS_H

#include <stdio.h>
#include "common/cr_status.h"
#include "harness/verify.h"

/* Generation metadata from a candidate's sidecar <stem>.json (SPEC §3). */
struct cr_meta {
	char model[128];
	char task[128];          /* the task the generator asked for ("" if absent) */
	char sample[16], seed[32], temperature[32], top_p[32], top_k[32], min_p[32], turn[16];
	char reasoning_tokens[32], completion_tokens[32], prompt_tokens[32], strategy[64];
	char parent[128], generation[16], cumulative_tokens[32], gen_s[32]; /* crucible run */
	char expect[32];         /* crucible's own sample metadata: the expected status */
	char expect_compile[32]; /* ... and the expected status of a compile-only run */
	char bad[256];           /* "" or a message naming the sidecar and its fields of the
				  * wrong type or range, which were left empty */
};

struct cr_row {
	const char *run_id, *task, *candidate, *backend, *device;
	const char *gpu_uuid;        /* cuda: the UUID of the device that ran it (r->gpu), or NULL */
	const char *verify_seed;     /* the run's seed ("secret" when CRUCIBLE_SEED is set) */
	const char *label;           /* eval --label (NULL: none) */
	double verify_s;             /* wall time of the verification (NaN: not measured) */
	const char *group;           /* run's self-consistency: the agreement group (NULL: none) */
	bool no_result;              /* a row for no candidate (selected.csv): status and backward empty */
	const struct cr_result *r;
	const struct cr_meta *m;
};

extern const char *const cr_results_columns[];

/* Opens DIR/results.csv for appending (header written when new). An
 * existing file must have this version's header (CR_EINPUT naming it
 * otherwise: rows of two column sets never share a file). */
enum cr_status cr_results_open(const char *path, FILE **f, struct cr_err *err);
enum cr_status cr_results_write(FILE *f, const struct cr_row *row, struct cr_err *err);
/* A file with the results columns and n_extra more (selected.csv). */
enum cr_status cr_results_header(FILE *f, const char *const *extra, int n_extra, struct cr_err *err);
enum cr_status cr_results_write_extra(FILE *f, const struct cr_row *row, const char *const *extra,
				      int n_extra, struct cr_err *err);
/* Reads the candidate (column 3) and source_sha256 of every complete row of
 * an existing results.csv, for --resume. keys[i] = "candidate\tsha". */
enum cr_status cr_results_done_keys(const char *path, char ***keys, int *n, struct cr_err *err);

/* DIR/samples.csv, next to results.csv: every timed sample of every row
 * (header candidate,source_sha256,side,us; side cand or base, interleaved
 * in time order), so the gate can test raw samples, not only intervals.
 * Opened for appending like results.csv; a row's samples are flushed and
 * fsynced with it. */
enum cr_status cr_samples_open(const char *path, FILE **f, struct cr_err *err);
enum cr_status cr_samples_write(FILE *f, const char *candidate, const struct cr_result *r,
				struct cr_err *err);

/* --resume: cuts a row a kill left half written (everything after the
 * last newline). Best effort: a file that cannot be opened is left alone. */
void cr_csv_drop_partial_row(const char *path);

/* Reads a sidecar (missing file: empty meta, CR_OK; malformed: CR_EINPUT). */
enum cr_status cr_meta_read(const char *cand_path, struct cr_meta *m, struct cr_err *err);
/* j (a json_t) written to path whole or not at all: dumped with jansson's
 * flags into tmp (a fresh file of crucible's own, cr_fopen_out: never
 * through a link planted there), then renamed onto path. CR_EIO naming
 * path otherwise (tmp removed). */
enum cr_status cr_json_write(const void *j, const char *path, const char *tmp, size_t flags,
			     struct cr_err *err);

#endif
