/* task_gen.h — input generation: a task's init families under the init
 * profiles of the verifier (SPEC §4). Values are produced in double and
 * rounded to the tensor's storage dtype, so the reference sees exactly what
 * the candidate sees. */
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
	TASK_PROF_COUNT
};

const char *task_profile_name(enum task_profile p);
int task_profile_parse(const char *s); /* -1 if unknown */
/* Magnitude factor of a profile (used to scale atol). */
double task_profile_scale(enum task_profile p);

/* Fills dst (numel values, as double) for tensor i of t. Integer tensors get
 * integer values. The stream is a pure function of (seed, i). Profiles
 * apply to inputs; params always get their own init. */
void task_gen_tensor(const struct task *t, int i, const struct task_dimset *d,
		     enum task_profile p, uint64_t seed, double *dst);
/* Rounds in place to what dtype can hold (f32: float rounding). */
void task_gen_round(enum task_dtype dt, double *v, int64_t n);
/* Converts n doubles to the dtype's storage. */
void task_gen_store(enum task_dtype dt, const double *src, void *dst, int64_t n);
/* Converts n stored values to double. */
void task_gen_load(enum task_dtype dt, const void *src, double *dst, int64_t n);

#endif
