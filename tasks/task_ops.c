/* task_ops.c — the op table: shape inference per op, and the double and
 * float instantiations of the op bodies in task_ops_impl.h. */
#include "tasks/task_ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define T double
#define ACC double
#define FN(x) x##_d
#define GEMM cblas_dgemm
#define RELU(v) ((v) > 0 ? (v) : 0)
#include "tasks/task_ops_impl.h"
#undef T
#undef ACC
#undef FN
#undef GEMM
#undef RELU

/* max(v, 0) on the sign bit: no branch, so random signs cost the baseline
 * no mispredictions (GCC keeps a branch for every ternary form at -O2). */
static inline float relu_bits(float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	u &= ~(uint32_t)((int32_t)u >> 31);
	memcpy(&v, &u, 4);
	return v;
}

#define T float
#define ACC float
#define FN(x) x##_f
#define GEMM cblas_sgemm
#define RELU(v) relu_bits(v)
#include "tasks/task_ops_impl.h"
#undef T
#undef ACC
#undef FN
#undef GEMM
#undef RELU

int task_axis(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	return axis >= 0 && axis < rank ? (int)axis : -1;
}

static void same_shape(const struct task_val *src, struct task_val *dst)
{
	dst->rank = src->rank;
	memcpy(dst->shape, src->shape, sizeof dst->shape);
	dst->n = src->n;
}

static enum cr_status infer_same(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	(void)nd; (void)n_in; (void)err;
	same_shape(&in[0], &out[0]);
	return CR_OK;
}

static enum cr_status infer_axis_same(const struct task_node *nd, const struct task_val *in,
				      int n_in, struct task_val *out, struct cr_err *err)
{
	(void)n_in;
	if (task_axis(task_node_int(nd, "dim", -1), in[0].rank) < 0)
		return cr_errf(err, CR_EINPUT, "op %s: dim %lld out of range for rank %d",
			       nd->op, (long long)task_node_int(nd, "dim", -1), in[0].rank);
	same_shape(&in[0], &out[0]);
	return CR_OK;
}

static enum cr_status infer_sum(const struct task_node *nd, const struct task_val *in,
				int n_in, struct task_val *out, struct cr_err *err)
{
	int axis = task_axis(task_node_int(nd, "dim", -1), in[0].rank), r = 0;
	(void)n_in;
	if (axis < 0)
		return cr_errf(err, CR_EINPUT, "op sum: dim out of range for rank %d",
			       in[0].rank);
	for (int i = 0; i < in[0].rank; i++) {
		if (i == axis)
			continue;
		out->shape[r++] = in[0].shape[i];
	}
	if (r == 0)
		out->shape[r++] = 1;
	out->rank = r;
	return task_val_count(nd, out, err);
}

static enum cr_status infer_layernorm(const struct task_node *nd, const struct task_val *in,
				      int n_in, struct task_val *out, struct cr_err *err)
{
	int64_t d = in[0].shape[in[0].rank - 1];
	(void)nd; (void)n_in;
	if (in[1].n != d || in[2].n != d)
		return cr_errf(err, CR_EINPUT,
			       "op layernorm: weight/bias need %lld elements (last axis of x), got %lld/%lld",
			       (long long)d, (long long)in[1].n, (long long)in[2].n);
	same_shape(&in[0], &out[0]);
	return CR_OK;
}

static enum cr_status infer_matmul(const struct task_node *nd, const struct task_val *in,
				   int n_in, struct task_val *out, struct cr_err *err)
{
	(void)nd; (void)n_in;
	if (in[0].rank != 2 || in[1].rank != 2 || in[0].shape[1] != in[1].shape[0])
		return cr_errf(err, CR_EINPUT, "op matmul: needs a[M,K], b[K,N] (got rank %d and %d, K %lld vs %lld)",
			       in[0].rank, in[1].rank, (long long)in[0].shape[in[0].rank - 1],
			       (long long)in[1].shape[0]);
	if (in[0].shape[0] > INT32_MAX || in[0].shape[1] > INT32_MAX || in[1].shape[1] > INT32_MAX)
		return cr_errf(err, CR_EINPUT, "op matmul: extent exceeds BLAS int range");
	out->rank = 2;
	out->shape[0] = in[0].shape[0];
	out->shape[1] = in[1].shape[1];
	return task_val_count(nd, out, err);
}

static enum cr_status infer_xent(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	(void)nd; (void)n_in;
	if (in[0].rank != 2 || in[1].rank != 1 || in[1].shape[0] != in[0].shape[0])
		return cr_errf(err, CR_EINPUT, "op cross_entropy: needs logits[B,C] and target[B]");
	out->rank = 1;
	out->shape[0] = 1;
	out->n = 1;
	return CR_OK;
}

#define OP(nm, lo, hi, mask, inf, base) \
	{ nm, lo, hi, 1, mask, inf, base##_fwd_d, base##_fwd_f, base##_bwd_d, base##_bwd_f }

static const struct task_opdef ops[] = {
	OP("relu", 1, 1, 1u, infer_same, relu),
	OP("gelu", 1, 1, 1u, infer_same, gelu),
	OP("sum", 1, 1, 1u, infer_sum, sum),
	OP("softmax", 1, 1, 1u, infer_axis_same, softmax),
	OP("layernorm", 3, 3, 7u, infer_layernorm, layernorm),
	OP("matmul", 2, 2, 3u, infer_matmul, matmul),
	OP("cross_entropy", 2, 2, 1u, infer_xent, xent),
};

/* Op families live in their own files (tasks/ops_*.c), each a table
 * ended by an entry with a NULL name. */
static const struct task_opdef *const tables[] = {
	task_ops_ew, task_ops_reduce, task_ops_linalg, task_ops_nn,
};

static int core_n(void)
{
	return (int)(sizeof ops / sizeof ops[0]);
}

const struct task_opdef *task_op_at(int i)
{
	if (i < 0)
		return NULL;
	if (i < core_n())
		return &ops[i];
	i -= core_n();
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (const struct task_opdef *d = tables[t]; d->name; d++)
			if (i-- == 0)
				return d;
	return NULL;
}

const struct task_opdef *task_op_find(const char *name)
{
	const struct task_opdef *d;
	for (int i = 0; (d = task_op_at(i)); i++)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}
