/* ops_reduce.c — reductions (reduce_sum, mean, prod, max, min, argmax,
 * argmin), log_softmax and logsumexp, scans (cumsum, cumprod with reverse
 * and exclusive flags), norms (batchnorm in training mode, instancenorm,
 * groupnorm, layer_norm over trailing axes) and losses (smooth_l1_loss,
 * kl_div, triplet_margin_loss, cosine_similarity), with PyTorch's semantics. Bodies in
 * ops_reduce_impl.h (see task_ops.h).
 *
 * Axis attributes: "dim" is an integer or a list of consecutive axes
 * (negative counts from the end); absent means every axis (reductions
 * only). "keepdim" keeps reduced axes as extent 1; a reduction to nothing
 * gives shape [1]. argmax/argmin return indices as values (the task
 * declares the output i64); the first index wins ties, as in PyTorch. */
#include "tasks/task_ops.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Reduced axes of node nd on a rank-r input: [*lo, *hi], consecutive.
 * Returns false when the attribute is malformed. */
static bool rd_range(const struct task_node *nd, int r, int *lo, int *hi)
{
	int64_t v[TASK_MAX_RANK];
	int n = task_node_ints(nd, "dim", v, TASK_MAX_RANK), ax[TASK_MAX_RANK];
	if (n == 0) {
		if (task_node_attr(nd, "dim"))
			return false;
		*lo = 0;
		*hi = r - 1;
		return true;
	}
	for (int i = 0; i < n; i++) {
		ax[i] = task_axis(v[i], r);
		if (ax[i] < 0)
			return false;
	}
	for (int i = 1; i < n; i++) /* insertion sort: n <= 6 */
		for (int j = i; j > 0 && ax[j - 1] > ax[j]; j--) {
			int t = ax[j];
			ax[j] = ax[j - 1];
			ax[j - 1] = t;
		}
	for (int i = 1; i < n; i++)
		if (ax[i] != ax[i - 1] + 1)
			return false;
	*lo = ax[0];
	*hi = ax[n - 1];
	return true;
}

static int rd_naxes(const struct task_node *nd, int r)
{
	int lo, hi;
	return rd_range(nd, r, &lo, &hi) ? hi - lo + 1 : 0;
}

/* The input as outer × len × inner around the reduced axes. */
static void rd_split(const struct task_node *nd, const struct task_val *v, int64_t *outer,
		     int64_t *len, int64_t *inner)
{
	int lo = 0, hi = v->rank - 1;
	int64_t o = 1, l = 1, in = 1;
	rd_range(nd, v->rank, &lo, &hi);
	for (int i = 0; i < v->rank; i++) {
		if (i < lo)
			o *= v->shape[i];
		else if (i <= hi)
			l *= v->shape[i];
		else
			in *= v->shape[i];
	}
	*outer = o;
	*len = l;
	*inner = in;
}

/* Norms see x as [N, C, S] with S the product of the remaining axes. */
enum { NM_BATCH, NM_INSTANCE, NM_GROUP };

static void nm_split(const struct task_val *v, int64_t *n, int64_t *c, int64_t *s)
{
	*n = v->shape[0];
	*c = v->shape[1];
	*s = v->n / (*n * *c);
}

static int64_t nm_groups(const struct task_node *nd, int mode)
{
	return mode == NM_GROUP ? task_node_int(nd, "groups", 1) : 1;
}

static int64_t nm_nstat(int mode, int64_t n, int64_t c, int64_t g)
{
	return mode == NM_BATCH ? c : mode == NM_INSTANCE ? n * c : n * g;
}

static int64_t nm_stat(int mode, int64_t a, int64_t c, int64_t ch, int64_t g)
{
	return mode == NM_BATCH ? c : mode == NM_INSTANCE ? a * ch + c : a * g + c / (ch / g);
}

/* layer_norm: elements per normalized row (the trailing "ndim" axes). */
static int64_t ln_len(const struct task_node *nd, const struct task_val *v)
{
	int64_t d = 1, k = task_node_int(nd, "ndim", 1);
	for (int i = v->rank - (int)k; i < v->rank; i++)
		d *= v->shape[i];
	return d;
}

static int64_t kl_div_den(const struct task_node *nd, const struct task_val *v)
{
	const char *r = task_node_str(nd, "reduction", "batchmean");
	return !strcmp(r, "sum") ? 1 : !strcmp(r, "mean") ? v->n : v->shape[0];
}

#define T double
#define ACC double
#define FN(x) x##_d
#define EXP exp
#define LOG log
#define SQRT sqrt
#define FABS fabs
#include "tasks/ops_reduce_impl.h"
#undef T
#undef ACC
#undef FN
#undef EXP
#undef LOG
#undef SQRT
#undef FABS

#define T float
#define ACC float
#define FN(x) x##_f
#define EXP expf
#define LOG logf
#define SQRT sqrtf
#define FABS fabsf
#include "tasks/ops_reduce_impl.h"
#undef T
#undef ACC
#undef FN
#undef EXP
#undef LOG
#undef SQRT
#undef FABS

static void copy_shape(const struct task_val *src, struct task_val *dst)
{
	dst->rank = src->rank;
	memcpy(dst->shape, src->shape, sizeof dst->shape);
	dst->n = src->n;
}

/* Reductions: dim (int or consecutive list; absent: all), keepdim. */
static enum cr_status infer_reduce(const struct task_node *nd, const struct task_val *in,
				   int n_in, struct task_val *out, struct cr_err *err)
{
	int lo, hi, r = 0;
	bool keep = task_node_int(nd, "keepdim", 0) != 0;
	(void)n_in;
	if (!rd_range(nd, in[0].rank, &lo, &hi))
		return cr_errf(err, CR_EINPUT,
			       "op %s: \"dim\" must be an axis or a list of consecutive axes of a rank-%d input",
			       nd->op, in[0].rank);
	for (int i = 0; i < in[0].rank; i++) {
		if (i >= lo && i <= hi) {
			if (keep)
				out->shape[r++] = 1;
			continue;
		}
		out->shape[r++] = in[0].shape[i];
	}
	if (r == 0)
		out->shape[r++] = 1;
	out->rank = r;
	return task_val_count(nd, out, err);
}

/* One explicit axis ("dim" an integer). */
static enum cr_status need_one_axis(const struct task_node *nd, const struct task_val *in,
				    struct cr_err *err)
{
	const struct task_attr *a = task_node_attr(nd, "dim");
	if (!a || a->kind != TASK_ATTR_INT || task_axis(a->i, in[0].rank) < 0)
		return cr_errf(err, CR_EINPUT, "op %s: needs an integer \"dim\" in range for rank %d",
			       nd->op, in[0].rank);
	return CR_OK;
}

static enum cr_status infer_reduce1(const struct task_node *nd, const struct task_val *in,
				    int n_in, struct task_val *out, struct cr_err *err)
{
	if (need_one_axis(nd, in, err))
		return CR_EINPUT;
	return infer_reduce(nd, in, n_in, out, err);
}

static enum cr_status infer_axis_same(const struct task_node *nd, const struct task_val *in,
				      int n_in, struct task_val *out, struct cr_err *err)
{
	(void)n_in;
	if (need_one_axis(nd, in, err))
		return CR_EINPUT;
	copy_shape(&in[0], out);
	return CR_OK;
}

/* batchnorm/instancenorm/groupnorm: x[N, C, ...], optional w[C], b[C]. */
static enum cr_status infer_norm(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	int64_t c;
	if (in[0].rank < 2)
		return cr_errf(err, CR_EINPUT, "op %s: needs x[N, C, ...] (rank >= 2)", nd->op);
	c = in[0].shape[1];
	for (int i = 1; i < n_in; i++)
		if (in[i].n != c)
			return cr_errf(err, CR_EINPUT, "op %s: weight/bias need C = %lld elements, got %lld",
				       nd->op, (long long)c, (long long)in[i].n);
	if (n_in == 2)
		return cr_errf(err, CR_EINPUT, "op %s: give both weight and bias, or neither", nd->op);
	if (!strcmp(nd->op, "groupnorm")) {
		int64_t g = task_node_int(nd, "groups", 0);
		if (g < 1 || c % g)
			return cr_errf(err, CR_EINPUT, "op groupnorm: \"groups\" (%lld) must divide C = %lld",
				       (long long)g, (long long)c);
	}
	if (task_node_float(nd, "eps", 1e-5) <= 0)
		return cr_errf(err, CR_EINPUT, "op %s: eps must be positive", nd->op);
	copy_shape(&in[0], out);
	return CR_OK;
}

static enum cr_status infer_layer_norm(const struct task_node *nd, const struct task_val *in,
				       int n_in, struct task_val *out, struct cr_err *err)
{
	int64_t k = task_node_int(nd, "ndim", 1), d;
	(void)n_in;
	if (k < 1 || k > in[0].rank)
		return cr_errf(err, CR_EINPUT, "op layer_norm: ndim %lld out of range for rank %d",
			       (long long)k, in[0].rank);
	d = ln_len(nd, &in[0]);
	if (in[1].n != d || in[2].n != d)
		return cr_errf(err, CR_EINPUT,
			       "op layer_norm: weight/bias need %lld elements (the last %lld axes), got %lld/%lld",
			       (long long)d, (long long)k, (long long)in[1].n, (long long)in[2].n);
	copy_shape(&in[0], out);
	return CR_OK;
}

/* Losses: inputs of one shape, output [1]. */
static enum cr_status infer_loss(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	for (int i = 1; i < n_in; i++)
		if (in[i].rank != in[0].rank ||
		    memcmp(in[i].shape, in[0].shape, sizeof(int64_t) * (size_t)in[0].rank))
			return cr_errf(err, CR_EINPUT, "op %s: input %d has a different shape", nd->op, i);
	if (!strcmp(nd->op, "kl_div")) {
		const char *r = task_node_str(nd, "reduction", "batchmean");
		if (strcmp(r, "batchmean") && strcmp(r, "sum") && strcmp(r, "mean"))
			return cr_errf(err, CR_EINPUT, "op kl_div: reduction \"%s\" (batchmean, sum, mean)", r);
	}
	if (!strcmp(nd->op, "smooth_l1_loss") && task_node_float(nd, "beta", 1) <= 0)
		return cr_errf(err, CR_EINPUT, "op smooth_l1_loss: beta must be positive");
	out->rank = 1;
	out->shape[0] = 1;
	out->n = 1;
	return CR_OK;
}

/* cosine_similarity: two inputs of one shape, one axis reduced */
static enum cr_status infer_cos(const struct task_node *nd, const struct task_val *in,
				int n_in, struct task_val *out, struct cr_err *err)
{
	if (in[1].rank != in[0].rank ||
	    memcmp(in[1].shape, in[0].shape, sizeof(int64_t) * (size_t)in[0].rank))
		return cr_errf(err, CR_EINPUT, "op cosine_similarity: inputs of different shapes");
	return infer_reduce1(nd, in, n_in, out, err);
}

#define OPR(nm, lo, hi, mask, inf) \
	{ #nm, lo, hi, 1, mask, inf, nm##_fwd_d, nm##_fwd_f, nm##_bwd_d, nm##_bwd_f }
#define OPR_NOGRAD(nm, inf) { #nm, 1, 1, 1, 0u, inf, nm##_fwd_d, nm##_fwd_f, NULL, NULL }

const struct task_opdef task_ops_reduce[] = {
	OPR(reduce_sum, 1, 1, 1u, infer_reduce),
	OPR(mean, 1, 1, 1u, infer_reduce),
	OPR(prod, 1, 1, 1u, infer_reduce1),
	OPR(max, 1, 1, 1u, infer_reduce),
	OPR(min, 1, 1, 1u, infer_reduce),
	OPR_NOGRAD(argmax, infer_reduce1),
	OPR_NOGRAD(argmin, infer_reduce1),
	OPR(log_softmax, 1, 1, 1u, infer_axis_same),
	OPR(logsumexp, 1, 1, 1u, infer_reduce1),
	OPR(cumsum, 1, 1, 1u, infer_axis_same),
	OPR(cumprod, 1, 1, 1u, infer_axis_same),
	OPR(batchnorm, 1, 3, 7u, infer_norm),
	OPR(instancenorm, 1, 3, 7u, infer_norm),
	OPR(groupnorm, 1, 3, 7u, infer_norm),
	OPR(layer_norm, 3, 3, 7u, infer_layer_norm),
	OPR(smooth_l1_loss, 2, 2, 3u, infer_loss),
	OPR(kl_div, 2, 2, 1u, infer_loss),
	OPR(triplet_margin_loss, 3, 3, 7u, infer_loss),
	OPR(cosine_similarity, 2, 2, 3u, infer_cos),
	{ .name = NULL },
};
