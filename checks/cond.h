/* cond.h — the reference's conditioning at float precision: how far each
 * element of the double reference moves when every float input and param
 * (in a backward also every output gradient) and every intermediate value
 * the executor stores is multiplied by 1 + δ, |δ| a few units of float
 * rounding. An element that moves by more than its tolerance there is
 * one float arithmetic cannot pin down for this input (a softmax near-tie,
 * a ReLU input within rounding of 0, a recurrence that amplifies
 * rounding): the comparison allows it CHECK_COND_FACTOR × that spread, and
 * counts every error only beyond that in its aggregate and bias bounds
 * (check.h, struct check_tol; docs/VERIFIER.md "Conditioning at float
 * precision"). Only the orchestrator runs this, only for a case
 * whose comparison is about to fail, and the noise comes from a key the
 * caller draws from the CSPRNG: nothing the candidate sees. */
#ifndef CHECK_COND_H
#define CHECK_COND_H

#include <stdbool.h>
#include <stdint.h>

#include "common/cr_status.h"
#include "tasks/task.h"

/* Perturbed references per measurement, in antithetic pairs (+δ, -δ): a
 * quantity that depends nearly linearly on the noise (a ReLU's or a
 * softmax's argument) is pushed both ways by each pair, so a branch within
 * reach of the noise flips in one run of the pair whatever its side (one
 * random sign misses it half the time). Eight pairs: where flips cascade (a
 * recurrence, a ReLU before a BatchNorm) any one pair reproduces a given
 * float kernel's flips only now and then (four pairs still missed an honest
 * GRU's flipped gate 7 times in 20 at one seed); docs/VERIFIER.md has the
 * rates. */
#define CHECK_COND_RUNS 16
/* |δ| <= this × 2^-24, uniform, one level per pair (inputs, params, output
 * gradients, and every intermediate value and gradient the executor
 * stores). 8: of the order of a float kernel's own rounding over a few
 * operations, which keeps a run as near the reference's trajectory as a
 * float kernel's is (through a recurrence's saturated gates, noise of
 * 128 × 2^-24 flipped other branches than the kernel's and saw less of
 * what it did); 32: a float dot product of length K accumulates ~K/sqrt(6)
 * roundings of its terms' magnitude on random signs, against
 * 0.8 × sqrt(K) × 32 for this noise on its K products, so up to K = 4096
 * the noise moves a nonlinearity's argument at least as far as a
 * sequential float sum's rounding does. */
#define CHECK_COND_NOISE { 8.0, 32.0, 8.0, 32.0, 8.0, 32.0, 8.0, 32.0 }
/* Measurements of one case at most. The spread is a sample maximum: where
 * a comparison still fails after a measurement and the case is
 * ill-conditioned somewhere in that output (a recurrence's gates, a ReLU
 * band), the case is measured again with a fresh key and the spreads
 * merged (largest), up to this many measurements in all (checks/stage.c;
 * docs/VERIFIER.md has the rates). */
#define CHECK_COND_ROUNDS 4

/* One case's inputs as the reference took them. */
struct check_cond_case {
	const struct task *t;
	struct task_dimset dims;
	bool bwd;                             /* the backward stage's reference */
	const double *val[TASK_MAX_TENSORS];  /* every input and param (not outputs) */
	const double *dout[TASK_MAX_TENSORS]; /* bwd: every output's gradient */
};

/* One result to measure: tensor's value (forward) or gradient (grad, a
 * backward), n elements, as the caller compared it (ref rounded to dtype). */
struct check_cond_out {
	int tensor;
	bool grad;
	enum task_dtype dtype;
	int64_t n;
	const double *ref;
	double *spread;   /* out: max over the runs of |ref_p - ref|; 0 where either is not finite */
};

/* Runs CHECK_COND_RUNS references of cc's inputs perturbed with noise from
 * key (from cr_secure_u64: never the run seed) and fills every out[j].spread
 * (merge: keeps what out[j].spread holds, each element the larger of it
 * and this measurement's: another round of the same measurement).
 * The forward of a backward case runs on the perturbed inputs and its
 * outputs are rounded to their dtype, as the reference's are. */
enum cr_status check_cond_spread(const struct check_cond_case *cc, uint64_t key,
				 struct check_cond_out *out, int n_out, bool merge,
				 struct cr_err *err);

#endif
