/* result.h — what the verifier's stages share: the options of one
 * verification and the results row they fill (status and detail from the
 * checks, errors, backward, and the figures timing/ adds). The stages in
 * checks/ and timing/ fill it; harness/results.c writes it; reports/ reads
 * the CSV back. */
#ifndef CHECK_RESULT_H
#define CHECK_RESULT_H

#include <stdbool.h>
#include <stdint.h>
#include "common/cr_verdict.h"

#define CR_RAW_MAX 512           /* raw timing samples a row keeps (samples.csv) */

struct cr_verify_opts {
	uint64_t seed;           /* mixed from --seed and CRUCIBLE_SEED; never sent to a worker */
	double call_timeout_s;   /* wall-clock budget of one call */
	double compile_timeout_s;
	double time_cap_s;       /* timing cap per candidate */
	double rel_target;       /* timing: relative CI half-width target */
	int min_samples;
	bool no_timing;
	bool quick;              /* fewer init profiles (own, large, offset) */
	const char *workroot;    /* private temp dir for this run */
	bool cuda;               /* the cuda backend: .cu candidates on the GPU */
	const char *arch;        /* cuda: NVRTC's target ("sm_90"), the device's */
	const char *baseline_dir; /* cuda: the GPU baselines (DIR/TASK-NAME.cu); NULL: none */
	double peak_tflops, peak_tbps; /* cuda: the device's peaks for the roofline (0: unknown) */
	int gpu;                 /* cuda: the driver's ordinal of the device to run on */
	const char *gpu_uuid;    /* cuda: its UUID, checked by the worker (NULL or "": not) */
	const char *gpu_bus_id;  /* cuda: its PCI bus id, how NVML finds it (NULL: device 0's) */
	/* called with true just before the timing stage and false just after
	 * (crucible run pauses a CPU generator meanwhile); may be NULL */
	void (*on_timing)(void *ctx, bool start);
	void *hook_ctx;
};

/* One element, for diagnostics (check's worst-element line, run's refine
 * feedback): where it was and what it was. Never a whole tensor. */
struct cr_worst {
	bool set;
	char stage[12];          /* forward, backward */
	char shape[128];         /* the case's dims as task_dims_str writes them ("N=4096") */
	char profile[48];        /* the init profile's name (own, large, ..., drawn) */
	char output[32];         /* the output slot: a forward output, or d<x> in the backward */
	long long index;         /* flat element index within that output */
	double got, expected, abs_err, rel_err; /* abs = |got - expected|, rel = abs / |expected|
	                          * (infinite where 0 is expected and abs > 0) */
};

struct cr_result {
	enum check_verdict status;
	char detail[768];
	char backward[8];        /* pass, fail, absent, none */
	double max_abs_err, max_rel_err;
	double err_vs_baseline;  /* candidate's worst abs error / baseline's, on the worst case */
	double time_us, time_lo_us, time_hi_us, baseline_us;
	double speedup, speedup_lo, speedup_hi;
	int samples;
	bool noisy;              /* the figure is not trusted: noisy_why says why */
	char noisy_why[160];
	bool timed;
	/* cpu timing: what the scheduler did to the samples (timing_uncontended_ns) */
	int n_corrected;         /* samples (both sides) whose run-queue waits were taken out */
	int n_preempted;         /* samples preempted whose waits could not be taken out */
	double block_lo, block_hi; /* the lowest and highest speedup of the timing's blocks
				  * (fresh workers each) */
	bool boosted;            /* timed at TIMING_NICE (root), else at the default priority */
	char sha256[65];
	char dims[128];          /* the timed shape */
	double tflops, tbps;     /* achieved, from the task's flops and bytes (NaN: unknown) */
	double roofline;         /* roofline time / measured time (1 = at the roofline) */
	struct cr_worst worst;   /* mismatch: the first failing comparison's worst element; else
	                          * the element of the largest error seen (set false: none
	                          * compared, or a crash or timeout) */
	/* cuda: NVML during timing (gpu_sampled false: not sampled) */
	bool gpu_sampled;
	unsigned gpu_sm_min_mhz, gpu_sm_max_mhz, gpu_mem_mhz, gpu_temp_max_c;
	char gpu_reasons[96];    /* every clocks-event reason seen ("none") */
	int gpu_retaken;         /* samples retaken because the GPU throttled */
	int gpu;                 /* cuda: the driver's ordinal of the device that ran it; -1: none */
	char sandbox[320];       /* what the orchestrator verified of the candidate's worker's
				  * confinement ("" if none ran) */
	/* where the verification's wall time went (check --json "cost", bench/jobs_bench.sh):
	 * bind and compile; the correctness stages, of which generating the cases
	 * (inputs, the double reference, the f32 baseline's outputs) and starting
	 * workers; the timing stage */
	struct cr_cost {
		double prepare_s, stages_s, cases_s, worker_start_s, timing_s;
		double timing_wait_s;         /* eval --jobs: waiting for the timing lock */
		int cases_reused, cases_computed; /* cases from the reference cache, and not */
		/* conditioning (checks/cond.h): the correctness stages' measurements
		 * (in stages_s) and the timing stage's re-checks of timed calls (in
		 * timing_s) together */
		double cond_s;                /* measuring it */
		int cases_cond;               /* cases (and timed calls) measured */
		int cond_rounds;              /* measurements, later rounds of a case included */
	} cost;
	int n_raw;               /* timed samples kept (the first CR_RAW_MAX), in time order */
	float raw_cand_us[CR_RAW_MAX], raw_base_us[CR_RAW_MAX]; /* sample i of each side */
};

void cr_result_init(struct cr_result *r);

#endif
