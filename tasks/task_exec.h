/* task_exec.h — runs a task graph forward and backward, in double (the
 * reference) or in float (the cpu baseline). The executor owns one
 * allocation carved into every value and gradient; float-mode callers may
 * bind tensors to external buffers (the worker's shared memory). */
#ifndef TASK_EXEC_H
#define TASK_EXEC_H

#include "tasks/task.h"
#include "tasks/task_ops.h"

struct task_exec {
	const struct task *t;
	struct task_dimset dims;
	bool dbl;                            /* double (reference) or float */
	struct task_val *v;                  /* [n_values]: tensors then intermediates */
	struct task_val *g;                  /* [n_values]: gradients (d == NULL: none) */
	const void **src;                    /* [n_tensors]: integer tensors bound in float mode */
	enum task_dtype *src_dt;             /* [n_tensors] */
	void *vals;                          /* the allocation behind v, g, src, src_dt */
	void *mem;                           /* the values' and gradients' storage */
	/* double mode, NULL unless set: called on every intermediate value a
	 * node writes (forward) and every intermediate gradient it adds to
	 * (backward), never on a task tensor's; the verifier's conditioning
	 * (checks/cond.c) perturbs them as float rounding would */
	void (*perturb)(void *ctx, double *v, int64_t n);
	void *perturb_ctx;
};

/* On failure x holds nothing (task_exec_release is then a no-op). */
enum cr_status task_exec_init(struct task_exec *x, const struct task *t,
			      const struct task_dimset *d, bool dbl, bool grads,
			      struct cr_err *err);
void task_exec_release(struct task_exec *x);
/* Float mode: tensor i's values live at ptr (f32 tensors are used in place;
 * integer tensors are converted at the start of every forward/backward). */
void task_exec_bind(struct task_exec *x, int i, void *ptr);
/* Gradient of tensor i lives at ptr (float mode, f32 only). */
void task_exec_bind_grad(struct task_exec *x, int i, void *ptr);
void task_exec_forward(struct task_exec *x);
/* Needs the forward values in place and g[] of every output tensor set;
 * zeroes and then accumulates every other gradient. */
void task_exec_backward(struct task_exec *x);

#endif
