/* stage.h — what the verifier's stages share (checks/case.c, checks/stage.c,
 * timing/time_cpu.c, timing/time_cuda.c, and harness/verify.c that runs
 * them): one candidate's verification in progress and its cases. */
#ifndef CR_VERIFY_IMPL_H
#define CR_VERIFY_IMPL_H

#include <stdarg.h>
#include "cand/plan.h"
#include "sandbox/proc.h"
#include "sandbox/shm.h"
#include "checks/check.h"
#include "checks/result.h"
#include "tasks/task_exec.h"
#include "tasks/task_gen.h"

/* One candidate's verification in progress. */
struct vr {
	const struct task *t;
	const struct cr_verify_opts *o;
	struct cr_plan plan;
	char workdir[600];
	enum check_verdict status;   /* the earliest failing stage so far */
	char detail[768];
	double worst_abs, worst_rel, err_vs_base;
	bool cuda;                   /* candidate runs in a cuda worker from workdir/cand.cubin */
	const char *path;            /* the candidate file, for messages */
	char cubin[32];              /* cuda: the cubin's name in workdir */
	bool own_plan;               /* plan was bound (and must be released) */
	bool trusted;                /* our GPU baseline: library calls allowed */
	char sandbox[320];           /* what was verified of the candidate's first worker's confinement */
	char env_error[320];         /* a worker the host could not start: the stage returns CR_EENV */
	struct cr_worst worst;       /* the element the row reports (checks/stage.c) */
	bool worst_failed;           /* worst is the first failing comparison's: final */
	bool cache_case;             /* the next case may come from the reference cache
	                              * (a listed shape, a fixed profile: checks/case.c) */
	int64_t ns_cases, ns_start;  /* spent generating cases (inputs, reference, baseline
	                              * outputs) and starting workers (struct cr_cost) */
	int64_t ns_cond;             /* spent measuring conditioning (vr_case_cond) */
	int n_cond_cases;            /* cases whose conditioning was measured */
	int n_cond_rounds;           /* measurements, a case's later rounds included */
};

/* One case: a stage under one dim set and init profile. Double copies of
 * inputs (as stored), reference outputs, baseline outputs and what the
 * candidate wrote, per slot. */
struct vr_case {
	enum cr_stage stage;
	struct task_dimset dims;
	enum task_profile prof;
	uint64_t seed;
	bool ready;
	int n_slots;
	int64_t vals[CR_MAX_EXPRS];
	int64_t numel[CR_MAX_SLOTS];
	size_t bytes[CR_MAX_SLOTS];
	size_t off[CR_MAX_SETS][CR_MAX_SLOTS];
	double *in[CR_MAX_SLOTS], *ref[CR_MAX_SLOTS], *base[CR_MAX_SLOTS];
	double *got[CR_MAX_SLOTS], *got2[CR_MAX_SLOTS];
	void *mem;
	/* per output slot: how far the reference moves under float-level
	 * noise (checks/cond.h); measured only when a comparison of the case
	 * failed without it (vr_case_cond), NULL until then */
	double *spread[CR_MAX_SLOTS];
	double *spread1[CR_MAX_SLOTS]; /* the first measurement's alone (later rounds merge into spread) */
	void *spread_mem;
	int cond_rounds;             /* measurements merged into spread (CHECK_COND_ROUNDS at most) */
	bool cond_in;                /* measured on the slots' inputs (vr_case_cond_inputs) */
};

/* The reference cache's hits and misses in this process (checks/case.c). */
void vr_ref_cache_stats(long long *hits, long long *misses);
/* n processes will each keep a cache: each gets 1/n of the budget. */
void vr_ref_cache_share(int n);
void vr_fail(struct vr *v, enum check_verdict s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The verdict of a failed call: timeout, the worker's FAULT verdict (a
 * cuda launch error, a parameter mismatch), else runtime_error. */
enum check_verdict vr_run_verdict(const struct cr_proc *w, enum cr_run res);
/* Records the verdict of a failed call (vr_run_verdict) with what (the case)
 * and detail, and the tail of the worker's output unless it timed out or
 * faulted. */
void vr_call_failed(struct vr *v, struct cr_proc *w, enum cr_run res, const char *what,
		    const char *detail);
/* Writes c's header into w's shared memory and starts w (v's worker mode):
 * false, with the verdict recorded (format_error for a missing launch
 * symbol or a launch out of range, the worker's fault, else the start's
 * runtime_error or timeout), when it does not start. */
bool vr_start_worker(struct vr *v, struct cr_proc *w, struct vr_case *c);
size_t vr_layout(struct vr_case *c, int n_sets);
void vr_guard_fill(struct vr_case *c, char *shm, int n_sets, size_t total, uint64_t key);
bool vr_guard_check(struct vr_case *c, const struct cr_pstage *st, char *shm, int n_sets,
		    size_t total, uint64_t key, char *why, size_t cap);
/* The plan's expression values and every slot's element count and bytes
 * for a dim set (c->stage, dims, n_slots, vals, numel, bytes). false, with
 * a format_error recorded, when an expression fails or a size is out of
 * range. */
bool vr_case_sizes(struct vr *v, struct vr_case *c, enum cr_stage s, const struct task_dimset *d);
/* Sizes (vr_case_sizes) and the double arrays of a case: in and got, and
 * with refs also ref, base and got2; c->ready false when a size failed
 * (format_error recorded). */
enum cr_status vr_case_alloc(struct vr *v, struct vr_case *c, enum cr_stage s,
			     const struct task_dimset *d, bool refs, struct cr_err *err);
enum cr_status vr_case_init(struct vr *v, struct vr_case *c, enum cr_stage s,
			    const struct task_dimset *d, enum task_profile p, uint64_t seed,
			    struct cr_err *err);
void vr_case_release(struct vr_case *c);
/* Measures c's conditioning once (check_cond_spread on the case's own
 * inputs, regenerated from its seed; the noise key from the CSPRNG) into
 * c->spread[k] of every output slot; a no-op when already measured. It
 * costs CHECK_COND_RUNS double references of the case. */
enum cr_status vr_case_cond(struct vr *v, struct vr_case *c, struct cr_err *err);
/* The same for a forward case whose inputs are its slots' values (c->in:
 * the timing stage's fresh draws); nothing measured (c->spread stays NULL)
 * when some input or param is not a slot of the plan. */
enum cr_status vr_case_cond_inputs(struct vr *v, struct vr_case *c, struct cr_err *err);
/* Whether a comparison cmp of an output of c, made with its measured
 * spread, warrants another measurement: it still fails, some element of
 * that output is ill-conditioned (the case is where float rounding
 * decides branches, and the spread is a sample maximum), and fewer than
 * CHECK_COND_ROUNDS measurements were made. */
bool vr_cond_again(const struct vr_case *c, const struct check_cmp *cmp);
/* Sets tl's conditioning from output slot k of c (check.h: spread, and
 * spread_first after later rounds); NULL spread when not measured. */
void vr_cond_tol(const struct vr_case *c, int k, struct check_tol *tl);
/* One more measurement of c, as the first was made (from the case's seed
 * or its slots' inputs), merged into c->spread: each element the largest
 * over all rounds. A no-op at CHECK_COND_ROUNDS or before a first. */
enum cr_status vr_case_cond_more(struct vr *v, struct vr_case *c, struct cr_err *err);
/* The rms of every output's reference (rms[0..n_out), returned), and for
 * each output slot k its index there (slot_out[k]): what check_scale takes. */
int vr_output_rms(const struct vr *v, const struct vr_case *c, double *rms, int *slot_out);
/* Writes the shared-memory header for a case (and a cuda worker's launch
 * table); false, with a format_error recorded, when a launch is out of range. */
bool vr_write_header(struct vr *v, struct vr_case *c, char *shm, int n_sets);
/* "cuda" or "cand": the worker mode for v's candidate. */
const char *vr_worker_mode(const struct vr *v);
void vr_fill_buffers(struct vr *v, struct vr_case *c, char *shm, int set, int poison,
		     uint64_t key);
void vr_read_outputs(struct vr *v, struct vr_case *c, const char *shm, int set, double **dst);
/* The forward's reference outputs (double, rounded to their dtypes) for the
 * inputs c->in, into out[k] for each output slot k. */
enum cr_status vr_reference(struct vr *v, const struct vr_case *c, double *const *out, struct cr_err *err);
bool vr_inputs_intact(struct vr *v, struct vr_case *c, const char *shm, int set, char *why,
		      size_t cap);
/* Correctness of one stage (verify_stage.c). */
enum cr_status vr_run_stage(struct vr *v, enum cr_stage s, struct cr_err *err);
/* Self-consistency's probe (checks/probe.c): the forward plan at the
 * task's cpu shape on its own init, call i's inputs drawn from (seed, i),
 * calls times in one worker, outputs NaN-poisoned before each and every
 * call's checked written; c (allocated here without references, released
 * by the caller) holds the last call's inputs and what it wrote, *call_us
 * that call's time. A failed start or call, or an unwritten output, is a
 * verdict in v (c->got then means nothing). */
#define VR_PROBE_MAX_CALLS 16
enum cr_status vr_probe_run(struct vr *v, uint64_t seed, int calls, struct vr_case *c,
			    double *call_us, struct cr_err *err);
/* Timing of the forward plan against the baseline (verify_time.c). */
enum cr_status vr_time(struct vr *v, struct cr_result *r, struct cr_err *err);
/* The same on the GPU (verify_time_cuda.c): device-timed calls against the
 * task's GPU baseline. */
enum cr_status vr_time_cuda(struct vr *v, struct cr_result *r, struct cr_err *err);

#endif
