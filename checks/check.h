/* check.h — the verifier's pure checks on buffers: tolerance comparison
 * with the worst element, degeneracy tests, guard zones, poison patterns.
 * The orchestrator (harness/verify.c) decides what to run them on; these
 * functions only look at numbers, so the CUDA path reuses them as they are. */
#ifndef CHECK_H
#define CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cr_verdict.h"

struct check_cmp {
	int64_t n;
	int64_t worst;          /* index of the worst element (largest excess over tolerance) */
	double got, exp;        /* at worst */
	double max_abs, max_rel;
	int64_t n_bad;          /* elements outside tolerance */
	double base_max_abs;    /* the baseline's worst finite error (0 without one) */
	bool pass;
};

/* Element i passes when |got-exp| <= atol*scale + rtol*|exp|, or when
 * |got-exp| <= allow_factor × the f32 baseline's worst finite error on this
 * case (a kernel as accurate as the baseline always passes), or when got
 * equals exp, or when got equals a non-finite baseline value (a float
 * computation that overflows where the baseline does too). NaN matches
 * nothing else. scale = max(1, rms(exp)). base may be NULL. */
void check_compare(const double *got, const double *exp, const double *base, int64_t n,
		   double atol, double rtol, double allow_factor, struct check_cmp *out);
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

/* Guard zones and poison: deterministic patterns from a 64-bit key. */
void check_fill_pattern(void *p, size_t n, uint64_t key);
/* Offset of the first byte differing from the pattern, or -1. */
int64_t check_verify_pattern(const void *p, size_t n, uint64_t key);
/* Poisons an output buffer: kind 0 quiet-NaN words, kind 1 random bytes. */
void check_poison(void *p, size_t n, int kind, uint64_t key);

#endif
