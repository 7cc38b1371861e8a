/* ops_nn.c — the ops whole networks (level 3) need beyond L1/L2: cat,
 * layout ops (reshape, split_dim, permute, transpose, select), adaptive
 * average pooling, F.normalize, attention scores q k^T / sqrt(D) with an
 * optional causal mask, one LSTM or GRU layer in one direction
 * (stacks and bidirectional layers are graphs of these: SPEC §2), and
 * Mamba-2's pieces: zero padding and slicing on one axis, and the segment
 * sum (segsum) behind its decay matrices. Bodies in
 * ops_nn_impl.h, instantiated for double (reference) and float (baseline). */
#include "tasks/task_ops.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* normalize's "dim": an axis or a list of consecutive axes, seen as one
 * axis: outer x len x inner. false when it is neither. */
static bool nn_axes(const struct task_node *nd, const struct task_val *v, int64_t *outer,
		    int64_t *len, int64_t *inner)
{
	int64_t d[TASK_MAX_RANK];
	int n = task_node_ints(nd, "dim", d, TASK_MAX_RANK), lo, hi;
	if (n == 0) {
		if (task_node_attr(nd, "dim"))
			return false;
		d[0] = 1;
		n = 1;
	}
	lo = task_axis(d[0], v->rank);
	hi = task_axis(d[n - 1], v->rank);
	if (lo < 0 || hi < lo || hi - lo + 1 != n)
		return false;
	for (int i = 1; i < n; i++)
		if (task_axis(d[i], v->rank) != lo + i)
			return false;
	*outer = *len = *inner = 1;
	for (int i = 0; i < v->rank; i++)
		*(i < lo ? outer : i > hi ? inner : len) *= v->shape[i];
	return true;
}

/* The permutation of a permute ("dims") or transpose ("dim0", "dim1") node:
 * perm[i] is the input axis that output axis i reads. Validated by infer. */
static void task_op_perm(const struct task_node *nd, int rank, int *perm)
{
	for (int i = 0; i < rank; i++)
		perm[i] = i;
	if (!strcmp(nd->op, "transpose")) {
		int a = task_axis(task_node_int(nd, "dim0", 0), rank);
		int b = task_axis(task_node_int(nd, "dim1", 1), rank);
		perm[a] = b;
		perm[b] = a;
	} else {
		int64_t d[TASK_MAX_RANK];
		task_node_ints(nd, "dims", d, TASK_MAX_RANK);
		for (int i = 0; i < rank; i++)
			perm[i] = task_axis(d[i], rank);
	}
}

/* The band of a pad or slice node: the axis split outer x len x inner on
 * the longer side, the offset of the shorter side's run in it (pad:
 * "before"; slice: its start) and the run's length (pad: the input's
 * extent; slice: the output's). Validated by infer. */
static void nn_band(const struct task_node *nd, const struct task_val *x, const struct task_val *y,
		    int64_t *outer, int64_t *inner, int64_t *off, int64_t *len)
{
	bool pad = !strcmp(nd->op, "pad");
	int axis = task_axis(task_node_int(nd, "dim", pad ? -1 : 0), x->rank);
	*outer = *inner = 1;
	for (int i = 0; i < x->rank; i++)
		if (i != axis)
			*(i < axis ? outer : inner) *= x->shape[i];
	if (pad) {
		*off = task_node_int(nd, "before", 0);
		*len = x->shape[axis];
	} else {
		*off = task_node_int(nd, "start", 0);
		if (*off < 0)
			*off += x->shape[axis];
		*len = y->shape[axis];
	}
}

#define T double
#define ACC double
#define FN(x) x##_d
#define GEMM cblas_dgemm
#include "tasks/ops_nn_impl.h"
#undef T
#undef ACC
#undef FN
#undef GEMM

#define T float
#define ACC float
#define FN(x) x##_f
#define GEMM cblas_sgemm
#include "tasks/ops_nn_impl.h"
#undef T
#undef ACC
#undef FN
#undef GEMM

static enum cr_status infer_cat(const struct task_node *nd, const struct task_val *in,
				int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank, axis = task_axis(task_node_int(nd, "dim", 0), r);
	if (axis < 0)
		return cr_errf(err, CR_EINPUT, "op cat: dim %lld out of range for rank %d",
			       (long long)task_node_int(nd, "dim", 0), r);
	out[0] = in[0];
	out[0].d = NULL;
	for (int k = 1; k < n_in; k++) {
		if (in[k].rank != r)
			return cr_errf(err, CR_EINPUT, "op cat: input %d has rank %d, input 0 rank %d",
				       k, in[k].rank, r);
		for (int i = 0; i < r; i++)
			if (i != axis && in[k].shape[i] != in[0].shape[i])
				return cr_errf(err, CR_EINPUT,
					       "op cat: input %d has extent %lld on axis %d, input 0 %lld",
					       k, (long long)in[k].shape[i], i, (long long)in[0].shape[i]);
		if (!task_add(out[0].shape[axis], in[k].shape[axis], &out[0].shape[axis]))
			return cr_errf(err, CR_EINPUT, "op cat: the extent on axis %d overflows", axis);
	}
	return task_val_count(nd, &out[0], err);
}

/* reshape: "shape" as torch's view, where -1 (at most once) is inferred and
 * 0 copies the input's extent at that position (so a task's shape follows
 * its dims: [0, 0, -1] flattens the trailing axes of a rank-3 input). */
static enum cr_status infer_reshape(const struct task_node *nd, const struct task_val *in,
				    int n_in, struct task_val *out, struct cr_err *err)
{
	int64_t s[TASK_MAX_RANK], known = 1;
	int n = task_node_ints(nd, "shape", s, TASK_MAX_RANK), neg = -1;
	(void)n_in;
	if (n < 1)
		return cr_errf(err, CR_EINPUT, "op reshape: needs \"shape\", a list of 1 to %d integers",
			       TASK_MAX_RANK);
	for (int i = 0; i < n; i++) {
		if (s[i] == 0) {
			if (i >= in[0].rank)
				return cr_errf(err, CR_EINPUT, "op reshape: shape[%d] = 0 past the input's rank %d",
					       i, in[0].rank);
			s[i] = in[0].shape[i];
		}
		if (s[i] == -1 && neg < 0)
			neg = i;
		else if (s[i] < 1)
			return cr_errf(err, CR_EINPUT, "op reshape: shape[%d] = %lld (one -1 at most)", i,
				       (long long)s[i]);
		else if (!task_mul(known, s[i], &known) || known > TASK_MAX_NUMEL)
			return cr_errf(err, CR_EINPUT, "op reshape: shape holds more than %lld elements",
				       (long long)TASK_MAX_NUMEL);
	}
	if (neg >= 0) {
		if (in[0].n % known)
			return cr_errf(err, CR_EINPUT, "op reshape: %lld elements do not divide into %lld",
				       (long long)in[0].n, (long long)known);
		s[neg] = in[0].n / known;
		known = in[0].n;
	}
	if (known != in[0].n)
		return cr_errf(err, CR_EINPUT, "op reshape: shape holds %lld elements, the input %lld",
			       (long long)known, (long long)in[0].n);
	out[0].rank = n;
	memcpy(out[0].shape, s, sizeof(int64_t) * (size_t)n);
	out[0].n = in[0].n;
	return CR_OK;
}

/* split_dim: axis "dim" of extent L becomes (parts, L / parts) — the view
 * behind channel shuffle and head split, independent of the other extents. */
static enum cr_status infer_split_dim(const struct task_node *nd, const struct task_val *in,
				      int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank, axis = task_axis(task_node_int(nd, "dim", 1), r);
	int64_t p = task_node_int(nd, "parts", 0);
	(void)n_in;
	if (axis < 0 || r == TASK_MAX_RANK || p < 1 || in[0].shape[axis] % p)
		return cr_errf(err, CR_EINPUT,
			       "op split_dim: needs \"dim\" within rank %d (< %d) and \"parts\" >= 1 dividing its extent",
			       r, TASK_MAX_RANK);
	out[0].rank = r + 1;
	for (int i = 0, k = 0; i < r; i++) {
		if (i == axis) {
			out[0].shape[k++] = p;
			out[0].shape[k++] = in[0].shape[i] / p;
		} else {
			out[0].shape[k++] = in[0].shape[i];
		}
	}
	out[0].n = in[0].n;
	return CR_OK;
}

static enum cr_status infer_permute(const struct task_node *nd, const struct task_val *in,
				    int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank, perm[TASK_MAX_RANK];
	bool seen[TASK_MAX_RANK] = { false };
	(void)n_in;
	if (!strcmp(nd->op, "transpose")) {
		if (task_axis(task_node_int(nd, "dim0", 0), r) < 0 ||
		    task_axis(task_node_int(nd, "dim1", 1), r) < 0)
			return cr_errf(err, CR_EINPUT, "op transpose: dim0/dim1 out of range for rank %d", r);
	} else {
		int64_t d[TASK_MAX_RANK];
		if (task_node_ints(nd, "dims", d, TASK_MAX_RANK) != r)
			return cr_errf(err, CR_EINPUT, "op permute: \"dims\" needs %d integers", r);
		for (int i = 0; i < r; i++) {
			int a = task_axis(d[i], r);
			if (a < 0 || seen[a])
				return cr_errf(err, CR_EINPUT, "op permute: \"dims\" is not a permutation of %d axes", r);
			seen[a] = true;
		}
	}
	task_op_perm(nd, r, perm);
	out[0].rank = r;
	for (int i = 0; i < r; i++)
		out[0].shape[i] = in[0].shape[perm[i]];
	out[0].n = in[0].n;
	return CR_OK;
}

static enum cr_status infer_select(const struct task_node *nd, const struct task_val *in,
				   int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank, axis = task_axis(task_node_int(nd, "dim", 0), r);
	int64_t ix = task_node_int(nd, "index", 0);
	(void)n_in;
	if (axis < 0 || r < 2 || ix < -in[0].shape[axis] || ix >= in[0].shape[axis])
		return cr_errf(err, CR_EINPUT, "op select: dim/index out of range (rank %d > 1)", r);
	out[0].rank = r - 1;
	for (int i = 0, k = 0; i < r; i++)
		if (i != axis)
			out[0].shape[k++] = in[0].shape[i];
	return task_val_count(nd, &out[0], err);
}

static enum cr_status infer_adapool(const struct task_node *nd, const struct task_val *in,
				    int n_in, struct task_val *out, struct cr_err *err)
{
	int64_t os[4];
	int n = task_node_ints(nd, "output_size", os, 4), r = in[0].rank;
	(void)n_in;
	if (n < 1 || n > 3 || r < n + 1)
		return cr_errf(err, CR_EINPUT,
			       "op adaptive_avgpool: needs \"output_size\" of 1 to 3 extents and a rank above it (got %d, rank %d)",
			       n, r);
	out[0] = in[0];
	out[0].d = NULL;
	for (int i = 0; i < n; i++) {
		if (os[i] < 1)
			return cr_errf(err, CR_EINPUT, "op adaptive_avgpool: output_size[%d] = %lld", i,
				       (long long)os[i]);
		out[0].shape[r - n + i] = os[i];
	}
	return task_val_count(nd, &out[0], err);
}

static enum cr_status infer_normalize(const struct task_node *nd, const struct task_val *in,
				      int n_in, struct task_val *out, struct cr_err *err)
{
	(void)n_in;
	int64_t o, l, i;
	if (!nn_axes(nd, &in[0], &o, &l, &i) || task_node_float(nd, "p", 2) != 2)
		return cr_errf(err, CR_EINPUT,
			       "op normalize: \"dim\" must be an axis or consecutive axes of rank %d, and p 2",
			       in[0].rank);
	out[0] = in[0];
	out[0].d = NULL;
	return CR_OK;
}

/* lstm: x, h0, c0, w_ih, w_hh, b_ih, b_hh -> y, h_n, c_n; gru: x, h0,
 * w_ih, w_hh, b_ih, b_hh -> y, h_n. x is [T, B, ...] (or [B, T, ...]) with
 * I the product of its trailing extents (a bidirectional layer's input
 * [T, B, 2, H]); weights are checked by element count, so PyTorch's
 * weight_ih_l0 [G*H, I] may be declared [G, H, I] (the same memory) and a
 * task's shapes follow H. */
static enum cr_status infer_rnn(const struct task_node *nd, const struct task_val *in,
				int n_in, struct task_val *out, struct cr_err *err)
{
	bool lstm = !strcmp(nd->op, "lstm"), bf = task_node_int(nd, "batch_first", 0) != 0;
	int64_t g = lstm ? 4 : 3, ix = task_node_int(nd, "index", 0), t, b, i, h, tb, gh, ghi, ghh,
		work;
	int w = lstm ? 3 : 2;
	(void)n_in;
	if (in[0].rank < 3 || in[1].rank != 3)
		return cr_errf(err, CR_EINPUT, "op %s: x needs rank 3 or more, h0 rank 3", nd->op);
	t = in[0].shape[bf ? 1 : 0];
	b = in[0].shape[bf ? 0 : 1];
	/* two extents of x: t·b <= x's count, no wrap and no zero (a wrapped
	 * t·b here once divided by zero) */
	if (!task_mul(t, b, &tb) || tb < 1)
		return cr_errf(err, CR_EINPUT, "op %s: T x B overflows", nd->op);
	i = in[0].n / tb;
	h = in[1].shape[2];
	if (in[1].shape[1] != b || ix < 0 || ix >= in[1].shape[0])
		return cr_errf(err, CR_EINPUT, "op %s: h0 needs [L, %lld, H] and index in [0, L)", nd->op,
			       (long long)b);
	if (lstm && (in[2].rank != 3 || memcmp(in[2].shape, in[1].shape, sizeof(int64_t) * 3)))
		return cr_errf(err, CR_EINPUT, "op lstm: c0 needs h0's shape");
	if (!task_mul(g, h, &gh) || !task_mul(gh, i, &ghi) || !task_mul(gh, h, &ghh) ||
	    !task_mul(tb, gh > i ? gh : i, &work))
		return cr_errf(err, CR_EINPUT, "op %s: the weights' extents overflow (H %lld, I %lld)",
			       nd->op, (long long)h, (long long)i);
	if (in[w].n != ghi || in[w + 1].n != ghh || in[w + 2].n != gh || in[w + 3].n != gh)
		return cr_errf(err, CR_EINPUT,
			       "op %s: needs w_ih of %lld x %lld, w_hh of %lld x %lld, b_ih and b_hh of %lld elements",
			       nd->op, (long long)gh, (long long)i, (long long)gh, (long long)h,
			       (long long)gh);
	if (work > INT32_MAX)
		return cr_errf(err, CR_EINPUT, "op %s: extent exceeds BLAS int range", nd->op);
	out[0].rank = 3;
	out[0].shape[0] = in[0].shape[0];
	out[0].shape[1] = in[0].shape[1];
	out[0].shape[2] = h;
	if (task_val_count(nd, &out[0], err))
		return CR_EINPUT;
	for (int k = 1; k < (lstm ? 3 : 2); k++) {
		out[k].rank = 3;
		out[k].shape[0] = 1;
		out[k].shape[1] = b;
		out[k].shape[2] = h;
		if (task_val_count(nd, &out[k], err))
			return CR_EINPUT;
	}
	return CR_OK;
}

/* attn_scores: q [.., T, D], k [.., S, D] with the same leading extents. */
static enum cr_status infer_attn(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank;
	(void)n_in;
	if (task_node_attr(nd, "scale") && task_node_float(nd, "scale", 0) <= 0)
		return cr_errf(err, CR_EINPUT, "op attn_scores: \"scale\" must be positive");
	if (r < 2 || in[1].rank != r || in[1].shape[r - 1] != in[0].shape[r - 1])
		return cr_errf(err, CR_EINPUT, "op attn_scores: needs q [.., T, D] and k [.., S, D]");
	for (int i = 0; i < r - 2; i++)
		if (in[1].shape[i] != in[0].shape[i])
			return cr_errf(err, CR_EINPUT, "op attn_scores: leading extent %d differs", i);
	if (in[0].shape[r - 2] > INT32_MAX || in[1].shape[r - 2] > INT32_MAX ||
	    in[0].shape[r - 1] > INT32_MAX)
		return cr_errf(err, CR_EINPUT, "op attn_scores: extent exceeds BLAS int range");
	out[0] = in[0];
	out[0].d = NULL;
	out[0].shape[r - 1] = in[1].shape[r - 2];
	return task_val_count(nd, &out[0], err);
}

/* pad: F.pad with zeros on one axis, "dim" (default -1), "before" and
 * "after" (>= 0): F.pad(x, (1, 0)) is {"dim": -1, "before": 1}. */
static enum cr_status infer_pad(const struct task_node *nd, const struct task_val *in,
				int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank, axis = task_axis(task_node_int(nd, "dim", -1), r);
	int64_t b = task_node_int(nd, "before", 0), a = task_node_int(nd, "after", 0);
	(void)n_in;
	if (axis < 0 || b < 0 || a < 0 || a > TASK_MAX_NUMEL || b > TASK_MAX_NUMEL ||
	    a + b < 1)
		return cr_errf(err, CR_EINPUT,
			       "op pad: needs \"dim\" within rank %d and \"before\"/\"after\" in [0, 2^34], not both 0", r);
	out[0] = in[0];
	out[0].d = NULL;
	/* each term at most 2^34: the sum cannot wrap */
	out[0].shape[axis] += a + b;
	return task_val_count(nd, &out[0], err);
}

/* slice: x.narrow on "dim" (default 0) from "start" (default 0) to "end"
 * (exclusive, default the extent), both negative from the end as Python's
 * x[:, :-1]; or, with a second input `like`, as long as like's extent on
 * "like_dim" (default "dim") from "start" — a slice sized by a dim, as
 * assignment[:, :K] of NetVLAD's K + G clusters. like gives its shape only
 * (no gradient). */
static enum cr_status infer_slice(const struct task_node *nd, const struct task_val *in,
				  int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank, axis = task_axis(task_node_int(nd, "dim", 0), r);
	int64_t ext, s, e;
	if (axis < 0)
		return cr_errf(err, CR_EINPUT, "op slice: dim %lld out of range for rank %d",
			       (long long)task_node_int(nd, "dim", 0), r);
	ext = in[0].shape[axis];
	s = task_node_int(nd, "start", 0);
	if (s < 0)
		s += ext;
	if (n_in > 1) {
		int la = task_axis(task_node_int(nd, "like_dim", task_node_int(nd, "dim", 0)), in[1].rank);
		if (task_node_attr(nd, "end") || la < 0)
			return cr_errf(err, CR_EINPUT,
				       "op slice: with a second input, its \"like_dim\" sizes the slice (no \"end\")");
		if (!task_add(s, in[1].shape[la], &e))
			e = INT64_MAX; /* past the extent: refused below */
	} else {
		e = task_node_int(nd, "end", ext);
		if (e < 0)
			e += ext;
	}
	if (s < 0 || e > ext || e <= s)
		return cr_errf(err, CR_EINPUT, "op slice: [%lld, %lld) is empty or outside the extent %lld",
			       (long long)s, (long long)e, (long long)ext);
	out[0] = in[0];
	out[0].d = NULL;
	out[0].shape[axis] = e - s;
	return task_val_count(nd, &out[0], err);
}

/* segsum: x [.., T] -> [.., T, T] */
static enum cr_status infer_segsum(const struct task_node *nd, const struct task_val *in,
				   int n_in, struct task_val *out, struct cr_err *err)
{
	int r = in[0].rank;
	(void)n_in; (void)nd;
	if (r == TASK_MAX_RANK)
		return cr_errf(err, CR_EINPUT, "op segsum: the output's rank must stay within %d",
			       TASK_MAX_RANK);
	out[0] = in[0];
	out[0].d = NULL;
	out[0].rank = r + 1;
	out[0].shape[r] = in[0].shape[r - 1];
	return task_val_count(nd, &out[0], err);
}

#define NN(nm, lo, hi, nout, mask, inf, base) \
	{ nm, lo, hi, nout, mask, inf, base##_fwd_d, base##_fwd_f, base##_bwd_d, base##_bwd_f }

const struct task_opdef task_ops_nn[] = {
	NN("cat", 1, TASK_MAX_IN, 1, 0xffffu, infer_cat, cat),
	NN("reshape", 1, 1, 1, 1u, infer_reshape, copy),
	NN("split_dim", 1, 1, 1, 1u, infer_split_dim, copy),
	NN("permute", 1, 1, 1, 1u, infer_permute, permute),
	NN("transpose", 1, 1, 1, 1u, infer_permute, permute),
	NN("select", 1, 1, 1, 1u, infer_select, select),
	NN("adaptive_avgpool", 1, 1, 1, 1u, infer_adapool, adapool),
	NN("normalize", 1, 1, 1, 1u, infer_normalize, normalize),
	NN("lstm", 7, 7, 3, 0x7fu, infer_rnn, lstm),
	NN("gru", 6, 6, 2, 0x3fu, infer_rnn, gru),
	NN("attn_scores", 2, 2, 1, 3u, infer_attn, attn_scores),
	NN("pad", 1, 1, 1, 1u, infer_pad, pad),
	NN("slice", 1, 2, 1, 1u, infer_slice, slice),
	NN("segsum", 1, 1, 1, 1u, infer_segsum, segsum),
	{ .name = NULL },
};
