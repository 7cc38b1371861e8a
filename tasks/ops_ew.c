/* ops_ew.c — element-wise ops: activations with PyTorch's exact formulas
 * (and its derivatives at kinks), scalar ops (attribute "value"), and binary
 * ops with NumPy broadcasting. Bodies in ops_ew_impl.h (see task_ops.h).
 *
 * Attributes: hardtanh min/max (-1, 1); clamp min/max (absent: unbounded);
 * leaky_relu slope (0.01); elu/celu alpha (1); softplus beta (1) and
 * threshold (20); *_scalar value. Shape-only ops (unsqueeze, squeeze,
 * flatten, identity, dropout as identity) copy their input. */
#include "tasks/task_ops.h"

#include <math.h>
#include <string.h>

/* Strides of input a in the index space of the broadcast output o (NumPy
 * rules: shapes aligned on the right; extent-1 axes and missing leading
 * axes get stride 0). */
static void bc_strides(const struct task_val *a, const struct task_val *o, int64_t *s)
{
	int64_t st = 1;
	for (int d = o->rank - 1, k = a->rank - 1; d >= 0; d--, k--) {
		if (k < 0 || a->shape[k] == 1) {
			s[d] = 0;
		} else {
			s[d] = st;
		}
		if (k >= 0)
			st *= a->shape[k];
	}
}

#define T double
#define ACC double
#define FN(x) x##_d
#define EXP exp
#define LOG log
#define LOG1P log1p
#define TANH tanh
#define SQRT sqrt
#define FABS fabs
#define ERF erf
#include "tasks/ops_ew_impl.h"
#undef T
#undef ACC
#undef FN
#undef EXP
#undef LOG
#undef LOG1P
#undef TANH
#undef SQRT
#undef FABS
#undef ERF

#define T float
#define ACC float
#define FN(x) x##_f
#define EXP expf
#define LOG logf
#define LOG1P log1pf
#define TANH tanhf
#define SQRT sqrtf
#define FABS fabsf
#define ERF erff
#include "tasks/ops_ew_impl.h"
#undef T
#undef ACC
#undef FN
#undef EXP
#undef LOG
#undef LOG1P
#undef TANH
#undef SQRT
#undef FABS
#undef ERF

static enum cr_status infer_same(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	(void)nd; (void)n_in; (void)err;
	out[0].rank = in[0].rank;
	memcpy(out[0].shape, in[0].shape, sizeof out[0].shape);
	out[0].n = in[0].n;
	return CR_OK;
}

/* Scalar ops need their "value"; a division by zero is refused here. */
static enum cr_status infer_scalar(const struct task_node *nd, const struct task_val *in,
				   int n_in, struct task_val *out, struct cr_err *err)
{
	const struct task_attr *a = task_node_attr(nd, "value");
	if (!a || (a->kind != TASK_ATTR_FLOAT && a->kind != TASK_ATTR_INT))
		return cr_errf(err, CR_EINPUT, "op %s: needs a numeric attribute \"value\"", nd->op);
	if (!strcmp(nd->op, "div_scalar") && task_node_float(nd, "value", 0) == 0)
		return cr_errf(err, CR_EINPUT, "op div_scalar: value 0");
	return infer_same(nd, in, n_in, out, err);
}

static enum cr_status infer_positive_attr(const struct task_node *nd, const char *key,
					  struct cr_err *err)
{
	const struct task_attr *a = task_node_attr(nd, key);
	if (a && ((a->kind != TASK_ATTR_FLOAT && a->kind != TASK_ATTR_INT) ||
		  task_node_float(nd, key, 0) <= 0))
		return cr_errf(err, CR_EINPUT, "op %s: attribute \"%s\" must be a positive number",
			       nd->op, key);
	return CR_OK;
}

/* Unary ops with attributes: checks their types and ranges. */
static enum cr_status infer_attr(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	for (int i = 0; i < nd->n_attrs; i++) {
		const struct task_attr *a = &nd->attrs[i];
		if (a->kind != TASK_ATTR_FLOAT && a->kind != TASK_ATTR_INT)
			return cr_errf(err, CR_EINPUT, "op %s: attribute \"%s\" must be a number",
				       nd->op, a->key);
	}
	if (!strcmp(nd->op, "hardtanh") &&
	    task_node_float(nd, "min", -1) >= task_node_float(nd, "max", 1))
		return cr_errf(err, CR_EINPUT, "op hardtanh: needs min < max");
	if (!strcmp(nd->op, "elu") || !strcmp(nd->op, "celu")) {
		if (infer_positive_attr(nd, "alpha", err))
			return CR_EINPUT;
	}
	if (!strcmp(nd->op, "softplus") && infer_positive_attr(nd, "beta", err))
		return CR_EINPUT;
	/* the identity: p = 0 (or eval mode); training-mode dropout with p > 0
	 * is stochastic and has no reference */
	if (!strcmp(nd->op, "dropout") && task_node_float(nd, "p", 0) != 0)
		return cr_errf(err, CR_EINPUT, "op dropout: only p = 0 (the identity) has a reference");
	return infer_same(nd, in, n_in, out, err);
}

/* NumPy broadcasting of two shapes. */
static enum cr_status infer_bcast(const struct task_node *nd, const struct task_val *in,
				  int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank > in[1].rank ? in[0].rank : in[1].rank;
	(void)n_in;
	out[0].rank = r;
	for (int d = r - 1, i = in[0].rank - 1, j = in[1].rank - 1; d >= 0; d--, i--, j--) {
		int64_t a = i >= 0 ? in[0].shape[i] : 1, b = j >= 0 ? in[1].shape[j] : 1;
		if (a != b && a != 1 && b != 1)
			return cr_errf(err, CR_EINPUT,
				       "op %s: shapes do not broadcast (axis %d from the right: %lld vs %lld)",
				       nd->op, r - 1 - d, (long long)a, (long long)b);
		out[0].shape[d] = a == 1 ? b : a;
	}
	return task_val_count(nd, &out[0], err);
}

/* unsqueeze: "dim" in [-(rank+1), rank], as torch.unsqueeze */
static enum cr_status infer_unsqueeze(const struct task_node *nd, const struct task_val *in,
				      int n_in, struct task_val *out, struct cr_err *err)
{
	const struct task_attr *a = task_node_attr(nd, "dim");
	int r = in[0].rank, d;
	(void)n_in;
	d = a && a->kind == TASK_ATTR_INT ? task_axis(a->i, r + 1) : -1;
	if (d < 0 || r == TASK_MAX_RANK)
		return cr_errf(err, CR_EINPUT, "op unsqueeze: needs an integer \"dim\" in [%d, %d] (rank < %d)",
			       -(r + 1), r, TASK_MAX_RANK);
	out[0].rank = r + 1;
	for (int i = 0, k = 0; i <= r; i++)
		out[0].shape[i] = i == d ? 1 : in[0].shape[k++];
	out[0].n = in[0].n;
	return CR_OK;
}

/* squeeze: "dim" must have extent 1 (torch.squeeze(x, dim) would keep
 * an axis of another extent; a task asking for that is an error here) */
static enum cr_status infer_squeeze(const struct task_node *nd, const struct task_val *in,
				    int n_in, struct task_val *out, struct cr_err *err)
{
	const struct task_attr *a = task_node_attr(nd, "dim");
	int r = in[0].rank, d;
	(void)n_in;
	d = a && a->kind == TASK_ATTR_INT ? task_axis(a->i, r) : -1;
	if (d < 0 || in[0].shape[d] != 1 || r == 1)
		return cr_errf(err, CR_EINPUT, "op squeeze: needs an integer \"dim\" of extent 1 (rank %d > 1)", r);
	out[0].rank = r - 1;
	for (int i = 0, k = 0; i < r; i++)
		if (i != d)
			out[0].shape[k++] = in[0].shape[i];
	out[0].n = in[0].n;
	return CR_OK;
}

/* flatten(start_dim = 1, end_dim = -1), as torch.flatten */
static enum cr_status infer_flatten(const struct task_node *nd, const struct task_val *in,
				    int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank, lo = task_axis(task_node_int(nd, "start_dim", 1), r),
	    hi = task_axis(task_node_int(nd, "end_dim", -1), r), k = 0;
	(void)n_in;
	if (lo < 0 || hi < lo)
		return cr_errf(err, CR_EINPUT, "op flatten: start_dim/end_dim out of range for rank %d", r);
	for (int i = 0; i < r; i++) {
		if (i > lo && i <= hi)
			out[0].shape[k - 1] *= in[0].shape[i];
		else
			out[0].shape[k++] = in[0].shape[i];
	}
	out[0].rank = k;
	out[0].n = in[0].n;
	return CR_OK;
}

#define UN(nm, inf) { #nm, 1, 1, 1, 1u, inf, nm##_fwd_d, nm##_fwd_f, nm##_bwd_d, nm##_bwd_f }
#define BIN(nm) { #nm, 2, 2, 1, 3u, infer_bcast, nm##_fwd_d, nm##_fwd_f, nm##_bwd_d, nm##_bwd_f }

const struct task_opdef task_ops_ew[] = {
	UN(sigmoid, infer_same),
	UN(tanh, infer_same),
	UN(hardtanh, infer_attr),
	UN(relu6, infer_same),
	UN(clamp, infer_attr),
	UN(leaky_relu, infer_attr),
	UN(elu, infer_attr),
	UN(selu, infer_same),
	UN(celu, infer_attr),
	UN(gelu_tanh, infer_same),
	UN(softplus, infer_attr),
	UN(softsign, infer_same),
	UN(silu, infer_same),
	UN(mish, infer_same),
	UN(hardsigmoid, infer_same),
	UN(hardswish, infer_same),
	UN(log_sigmoid, infer_same),
	UN(exp, infer_same),
	UN(log, infer_same),
	UN(abs, infer_same),
	UN(erf, infer_same),
	UN(identity, infer_same),
	{ "dropout", 1, 1, 1, 1u, infer_attr, identity_fwd_d, identity_fwd_f, identity_bwd_d,
	  identity_bwd_f },
	UN(sqrt, infer_same),
	UN(square, infer_same),
	UN(neg, infer_same),
	UN(reciprocal, infer_same),
	UN(sign, infer_same),
	UN(add_scalar, infer_scalar),
	UN(sub_scalar, infer_scalar),
	UN(rsub_scalar, infer_scalar),
	UN(mul_scalar, infer_scalar),
	UN(div_scalar, infer_scalar),
	UN(max_scalar, infer_scalar),
	UN(min_scalar, infer_scalar),
	UN(unsqueeze, infer_unsqueeze),
	{ "squeeze", 1, 1, 1, 1u, infer_squeeze, unsqueeze_fwd_d, unsqueeze_fwd_f, unsqueeze_bwd_d,
	  unsqueeze_bwd_f },
	{ "flatten", 1, 1, 1, 1u, infer_flatten, unsqueeze_fwd_d, unsqueeze_fwd_f, unsqueeze_bwd_d,
	  unsqueeze_bwd_f },
	BIN(add),
	BIN(sub),
	BIN(mul),
	BIN(div),
	BIN(maximum),
	BIN(minimum),
	{ .name = NULL },
};
