/* task_ops.h — the primitive-op table behind every task graph.
 *
 * Each op is written once (task_ops_impl.h, a template included twice) and
 * instantiated for double (the reference: inputs are the exact f32 values,
 * all arithmetic and accumulation in double) and for float (the cpu
 * backend's plain-C baseline, -O2, OpenBLAS sgemm for matrix products).
 * Backward ops ACCUMULATE into din (the executor zeroes grads first), so an
 * input used twice gets the sum; din[i].d == NULL means "not needed". */
#ifndef TASK_OPS_H
#define TASK_OPS_H

#include "tasks/task.h"

struct task_val {
	void *d;                      /* double* or float*, row-major */
	int rank;
	int64_t shape[TASK_MAX_RANK];
	int64_t n;                    /* element count */
};

typedef void (*task_fwd_fn)(const struct task_node *nd, const struct task_val *in,
			    struct task_val *out);
typedef void (*task_bwd_fn)(const struct task_node *nd, const struct task_val *in,
			    const struct task_val *out, const struct task_val *dout,
			    struct task_val *din);

struct task_opdef {
	const char *name;
	int min_in, max_in, n_out;
	/* which inputs are differentiable (bit i); integer inputs are not */
	unsigned grad_mask;
	/* Validates attrs and input shapes, fills out[].rank/shape/n. */
	enum cr_status (*infer)(const struct task_node *nd, const struct task_val *in,
				int n_in, struct task_val *out, struct cr_err *err);
	task_fwd_fn fwd_d, fwd_f;
	task_bwd_fn bwd_d, bwd_f;     /* NULL: not differentiable */
};

/* Family tables (tasks/ops_ew.c, ops_reduce.c, ops_linalg.c, ops_nn.c), each ended
 * by an entry whose name is NULL. A name must be unique across tables. */
extern const struct task_opdef task_ops_ew[];
extern const struct task_opdef task_ops_reduce[];
extern const struct task_opdef task_ops_linalg[];
extern const struct task_opdef task_ops_nn[];

const struct task_opdef *task_op_find(const char *name);
/* For `crucible list` and docs: the i-th op, NULL past the end. */
const struct task_opdef *task_op_at(int i);

/* Sets o->n from o->rank and o->shape through task_shape_numel; an error
 * naming op nd when an extent is below 1 or the count overflows or
 * exceeds TASK_MAX_NUMEL. Every infer ends in it or copies an input's n. */
enum cr_status task_val_count(const struct task_node *nd, struct task_val *o,
			      struct cr_err *err);
/* Every value's rank, shape and count under d (v: [t->n_values]): the
 * tensors' from their declarations, the intermediates' from the ops'
 * infer. The message names t's file, the field and which dim set. Output
 * tensors keep their declared shape (the caller compares, check_shapes). */
enum cr_status task_infer(const struct task *t, const struct task_dimset *d, const char *which,
			  struct task_val *v, int64_t *total, struct cr_err *err);

/* Normalises a possibly negative axis; -1 if out of range. */
int task_axis(int64_t axis, int rank);

#endif
