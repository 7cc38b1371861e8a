/* task_gen.h — input generation: a task's init families under the init
 * profiles of the verifier (SPEC §4), the per-run drawn profile, and drawn
 * shapes within a task's range. Values are produced in double and rounded
 * to the tensor's storage dtype, so the reference sees exactly what the
 * candidate sees. */
#ifndef TASK_GEN_H
#define TASK_GEN_H

#include "tasks/task.h"

enum task_profile {
	TASK_PROF_OWN,     /* the task's own init */
	TASK_PROF_LARGE,   /* float inits ×1e3 */
	TASK_PROF_SMALL,   /* ×1e-3 */
	TASK_PROF_OFFSET,  /* +10 (catches softmax without max-subtraction, E[x²]−E[x]²) */
	TASK_PROF_SPARSE,  /* 80% zeros */
	TASK_PROF_MIXED,   /* per-element scale 10^U(-3,3) */
	TASK_PROF_COUNT,   /* the fixed, public list ends here */
	TASK_PROF_DRAWN = TASK_PROF_COUNT /* parameters drawn per input tensor from the seed
					   * (task_prof_draw); the stages seed it from the CSPRNG */
};

const char *task_profile_name(enum task_profile p);
int task_profile_parse(const char *s); /* a fixed profile's index; -1 if unknown (or "drawn") */
/* Magnitude factor of a profile (used to scale atol). */
double task_profile_scale(enum task_profile p);

/* Fills dst (numel values, as double) for tensor i of t. Integer tensors get
 * integer values. The stream is a pure function of (seed, i). Profiles
 * apply to inputs; params always get their own init. */
void task_gen_tensor(const struct task *t, int i, const struct task_dimset *d,
		     enum task_profile p, uint64_t seed, double *dst);
/* The drawn profile's transform of one input tensor: per element
 * v = scale * (v0 * 10^U(-spread, spread) + offset), then a fraction
 * sparsity set to zero (positive inits: to their lower bound). Within the
 * span of the fixed profiles (scale 1e-3..1e3 but never within 2x of
 * 1e-3, 1 or 1e3; offset 0..12 before scaling; 30-95% zeros; spread
 * up to 10^±3), at values no fixed profile takes, and independently per
 * tensor (mixtures). */
struct task_prof_draw {
	double scale, offset, sparsity, spread;
};
/* The parameters tensor i of t gets under the drawn profile and seed
 * (the seed task_gen_tensor receives). */
void task_prof_draw_params(const struct task *t, int i, uint64_t seed, struct task_prof_draw *pd);
/* "x: x312 +4.1 sparse 47%; y: x0.02" over t's input tensors. */
void task_prof_draw_str(const struct task *t, uint64_t seed, char *buf, size_t cap);

/* Drawn shapes. A dim is free when it sizes an input or param, derived
 * when it sizes outputs only (solved by the graph's shape inference), and
 * fixed (its cpu bench value) when it sizes no tensor (an index bound) or
 * its range is a single value. Free dims range over the smallest to the
 * largest value the task's check shapes and cpu bench shape give it; a
 * drawn shape holds at most as many elements (all tensors) as the largest
 * of those shapes. */
struct task_shape_range {
	int64_t lo[TASK_MAX_DIMS], hi[TASK_MAX_DIMS];
	int64_t gcd[TASK_MAX_DIMS];  /* of the listed values: a divisibility an op may need (groups) */
	int kind[TASK_MAX_DIMS];     /* 0 fixed, 1 free, 2 derived */
	int64_t budget;              /* elements over all tensors */
};
void task_shape_range(const struct task *t, struct task_shape_range *r);
/* The number classes a drawn shape's free dims are made (each dim where
 * its range holds a member; a kernel is as often wrong on one class as on
 * another: a SIMD body without its remainder on ragged lengths, an aligned
 * fast path on multiples of 8, 16 or 32, a tiling that needs a divisor on
 * primes). ALIGNED is a multiple of 32 (else of 16, else of 8), so it is a
 * member of "multiple of 8", "of 16" and "of 32" at once; PRIME is odd too. */
enum task_shape_class {
	TASK_SHAPE_ALIGNED, /* multiple of 32 (else 16, else 8) */
	TASK_SHAPE_PRIME,   /* prime (else odd) */
	TASK_SHAPE_MID8,    /* 8 or 16 times an odd number: a tail of 8 or 16 after a 32-wide body */
	TASK_SHAPE_RAGGED,  /* odd or 32q±(1..7): never a multiple of 8 */
	TASK_SHAPE_CLASSES
};
/* The class of the i-th of want shapes a stage draws: ALIGNED, PRIME,
 * MID8, RAGGED in turn (so two shapes cover multiples of 8, 16 and 32,
 * primes and odd sizes with certainty), then word % 4; a stage that draws
 * one shape gets ALIGNED or PRIME by word's low bit. word: a fresh random
 * draw (the stages: the CSPRNG). */
enum task_shape_class task_shape_class_pick(int i, int want, uint64_t word);
/* Draws one shape from r64 (64-bit words from the caller's generator, so
 * the stages can use the CSPRNG): every free dim log-uniform within its
 * range, then made a member of cls where the range holds one (else
 * ragged: odd or 32q±(1..7)), derived dims solved. false when the task
 * rejects it (an op's shape rule, a derived dim below 1, over the budget)
 * or it is one of the listed shapes: draw again with attempt + 1. Odd
 * attempts draw a dim whose listed values share a factor as a multiple of
 * it (channels divisible by groups: the class then applies to the
 * quotient); from attempt 8 on the ranges shrink towards their low ends
 * (0.8x every 4 attempts), so that a task with many dims finds shapes
 * within its element budget. */
bool task_gen_shape(const struct task *t, const struct task_shape_range *r, int attempt,
		    enum task_shape_class cls, uint64_t (*r64)(void *), void *ctx,
		    struct task_dimset *out);

/* Rounds in place to what dtype can hold (f32: float rounding). */
void task_gen_round(enum task_dtype dt, double *v, int64_t n);
/* Converts n doubles to the dtype's storage. */
void task_gen_store(enum task_dtype dt, const double *src, void *dst, int64_t n);
/* Converts n stored values to double. */
void task_gen_load(enum task_dtype dt, const void *src, double *dst, int64_t n);

#endif
