/* check.h — the verifier's pure checks on buffers: tolerance comparison
 * (worst element, aggregate error, bias, at each output's own scale),
 * degeneracy tests, guard zones, poison patterns.
 * The orchestrator (harness/verify.c) decides what to run them on; these
 * functions only look at numbers, so the CUDA path reuses them as they are. */
#ifndef CHECK_H
#define CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cr_verdict.h"

/* Which bound of the comparison failed first (in this order). */
enum check_bound {
	CHECK_BOUND_NONE,      /* passed */
	CHECK_BOUND_ELEMENT,   /* some element outside its tolerance */
	CHECK_BOUND_AGGREGATE, /* the error as a whole (rms) too large */
	CHECK_BOUND_BIAS       /* the mean signed error too large */
};

/* The rule one output is judged by. scale: the output's own magnitude
 * (check_scale), never a floor of 1. The distribution bounds (aggregate,
 * bias) apply only with a baseline and dist set; each is a multiple of the
 * f32 baseline's own figure plus a floor that is a fraction of the element
 * tolerance, so a kernel as accurate as the baseline always passes and one
 * that games the worst-element bound does not. */
struct check_tol {
	double atol, rtol;
	double scale;          /* |got-exp| <= atol*scale + rtol*|exp| */
	double allow_factor;   /* element: or <= this × the baseline's worst error */
	bool dist;             /* aggregate and bias bounds (needs a baseline) */
	double agg_factor, agg_floor;   /* rms(e)/scale <= f × baseline's + floor × (atol+rtol) */
	double bias_factor, bias_floor; /* |mean(e)|/scale <= f × (baseline's + its rms/sqrt(n)) + floor × (atol+rtol) */
	/* neither floor below few_floor × (atol+rtol)/sqrt(n) over n elements:
	 * a few elements are no distribution (check_compare_tol) */
	double few_floor;
	/* conditioning at float precision (checks/cond.h): spread[i], how far
	 * the reference's element i moves under float-level noise; NULL
	 * until measured (only for a comparison that failed without it) */
	const double *spread;
	double cond_factor;    /* element: or <= this × spread[i] */
	/* later rounds (checks/cond.h CHECK_COND_ROUNDS): spread is then the
	 * largest over all of them and spread_first the first round's alone;
	 * the allowance is the larger of cond_factor × spread_first[i] and
	 * cond_factor_later × spread[i]. NULL: one round */
	const double *spread_first;
	double cond_factor_later;
	int cond_rounds;       /* measurements merged into spread (messages) */
};

/* The verifier's margins (docs/VERIFIER.md, "Scale-aware tolerance"). */
#define CHECK_ALLOW_FACTOR 16.0
#define CHECK_AGG_FACTOR 32.0
#define CHECK_AGG_FLOOR 0.1
#define CHECK_BIAS_FACTOR 32.0
#define CHECK_BIAS_FLOOR 0.05
/* The distribution floors are at least this × (atol+rtol)/sqrt(n): one
 * element at its element tolerance, the others exact, has an rms of about
 * (atol+rtol)/sqrt(n) of the scale, and n independent errors within it a
 * mean of that order; with 1, at n = 1 the aggregate and bias bounds allow
 * all the element bound does, and from n = 100 (aggregate) and 400 (bias)
 * on the fixed floors decide as before (docs/VERIFIER.md). */
#define CHECK_FEW_FLOOR 1.0
/* An element is allowed this many times the spread of the reference under
 * float-level noise (checks/cond.h); it widens an element's bound
 * only where the spread exceeds 1/this of its tolerance. */
#define CHECK_COND_FACTOR 4.0
/* The factor on the spread merged over later rounds: a maximum over more
 * runs is larger where the spread is heavy-tailed (a recurrence's
 * cascades), so the margin the first round's factor gives is not given
 * again on it: later rounds find the elements a float kernel may flip,
 * and allow about the flip they saw (docs/VERIFIER.md). */
#define CHECK_COND_FACTOR_LATER 1.5
/* An output whose reference rms is below this fraction of the largest rms
 * among the same case's outputs is zero in exact arithmetic (rounding noise
 * of the double reference): it is judged at the other outputs' scale. */
#define CHECK_NEAR_ZERO 1e-9
/* An output of fewer elements than this is judged at no smaller a scale
 * than the rms of its case's float inputs: a few values are no measure of
 * an output's magnitude, and where a function squashes its input (GELU's
 * or a sigmoid's tail) an honest float formula is accurate relative to the
 * input, not to the tiny result (docs/VERIFIER.md). */
#define CHECK_SMALL_OUTPUT 64

/* What the conditioning allows element i (tol->spread set): cond_factor ×
 * the first round's spread, or cond_factor_later × the spread over all
 * rounds when larger; 0 where not finite. */
double check_cond_allowance(const struct check_tol *tol, int64_t i);

/* The verifier's rule for one output at the given scale. */
void check_tol_default(struct check_tol *tol, double atol, double rtol, double scale);

struct check_cmp {
	int64_t n;
	int64_t worst;          /* index of the worst element (largest excess over tolerance) */
	double got, exp;        /* at worst */
	double max_abs, max_rel;
	int64_t max_abs_at;     /* index of the largest abs error, NaN left out (0: all exact; -1: n == 0) */
	int64_t n_bad;          /* elements outside tolerance */
	double base_max_abs;    /* the baseline's worst finite error (0 without one) */
	double scale;           /* the scale the output was judged at */
	double agg, base_agg;   /* rms error / scale: candidate, baseline */
	double bias, base_bias; /* |mean signed error| / scale: candidate, baseline */
	double agg_bound, bias_bound; /* what agg and bias were held to (0: not applied) */
	double agg_floor, bias_floor; /* their floors' fractions of (atol+rtol) at this n */
	int64_t n_cond;         /* elements within bounds only by the conditioning allowance */
	double spread;          /* tol->spread at worst (NaN: not measured) */
	double spread_first;    /* tol->spread_first at worst (NaN: one round) */
	int64_t n_ill;          /* ill-conditioned elements: cond_factor × spread above their tolerance */
	enum check_bound failed;
	bool pass;
};

/* Element i passes when |got-exp| <= atol*scale + rtol*|exp|, or when
 * |got-exp| <= allow_factor × the f32 baseline's worst finite error on this
 * case (a kernel as accurate as the baseline always passes), or when got
 * equals exp, or when got equals a non-finite baseline value (a float
 * computation that overflows where the baseline does too), or, with
 * tol->spread, when |got-exp| <= cond_factor × spread[i] (an element float
 * arithmetic cannot pin down for this input). NaN matches nothing else.
 * Then, with tol->dist and a baseline, the aggregate and bias bounds over
 * the n elements whose reference is finite, each floor at least
 * few_floor × (atol+rtol)/sqrt(n) (at n = 1 they then never reject what the
 * element bound accepts: |e| <= (atol+rtol)·scale there, since scale >=
 * |exp|, or 16 × the baseline's one error); with tol->spread each error
 * (and the baseline's) counts only beyond cond_factor × spread[i], the
 * part float-level noise of the inputs does not explain. base may be NULL. */
void check_compare_tol(const double *got, const double *exp, const double *base, int64_t n,
		       const struct check_tol *tol, struct check_cmp *out);
/* check_compare_tol with the verifier's rule at the output's own scale
 * (rms of exp): distribution bounds when base is given and allow_factor > 0. */
void check_compare(const double *got, const double *exp, const double *base, int64_t n,
		   double atol, double rtol, double allow_factor, struct check_cmp *out);
/* The scale output k of a case is judged at: its reference's rms, or, when
 * that is below CHECK_NEAR_ZERO × the largest rms among the case's outputs
 * (rms[0..n_out)), that largest rms. */
double check_scale(const double *rms, int n_out, int k);
/* One line naming the failed bound and its figures. */
void check_cmp_str(const struct check_cmp *c, const struct check_tol *tol, char *buf, size_t cap);
double check_rms(const double *v, int64_t n);

/* Degeneracy of one output against its reference: writes a reason and
 * returns true when degenerate (NaN/Inf where the reference is finite;
 * constant where the reference is not; all zero where the reference is
 * not). tol: the comparison tolerance at the reference's scale. A
 * non-finite value where the f32 baseline has the same is not degenerate. */
bool check_degenerate(const double *got, const double *ref, const double *base, int64_t n,
		      double tol, char *why, size_t cap);
/* true when got equals inp (same count) while ref differs from inp. */
bool check_equals_input(const double *got, const double *inp, const double *ref, int64_t n,
			double tol);

/* Guard zones and poison: deterministic patterns from a 64-bit key. The
 * stages draw keys from the CSPRNG (cr_secure_u64), never from the seed:
 * a pattern reveals its key, so a key must reveal nothing else. */
void check_fill_pattern(void *p, size_t n, uint64_t key);
/* Offset of the first byte differing from the pattern, or -1. */
int64_t check_verify_pattern(const void *p, size_t n, uint64_t key);
/* Poisons an output buffer: kind 0 quiet-NaN words, kind 1 random bytes. */
void check_poison(void *p, size_t n, int kind, uint64_t key);

#endif
