/* ops_linalg.c — the linear-algebra, convolution and pooling op family:
 * shape inference (which validates attributes and inputs, so the bodies
 * cannot fail) and the double/float instantiations of ops_linalg_impl.h.
 *
 *   matmul_t        c = α op(a) op(b), 2-D; attrs trans_a, trans_b, alpha
 *   bmm             the same over equal leading batch dims (rank ≥ 3)
 *   matmul_nd       a[..., K] · b[K, N] (torch.matmul of N-d by 2-D, einsum)
 *   linear          x[..., K] · w[N, K]^T (+ b[N])
 *   diag_matmul     diag(a[N]) · b[N, M]
 *   triu_matmul     triu(triu(a) · triu(b)); tril_matmul likewise
 *   symmetrize      (a + a^T) / 2
 *   conv            N-d (1-3) conv: x [N,C,sp...], w [K,C/g,k...] (+ b[K]);
 *                   attrs stride, padding, dilation (int or list), groups
 *                   (optional: implied by C / w.shape[1])
 *   conv_transpose  x [N,C,sp...], w [C,K/g,k...] (+ b[K]); attrs stride,
 *                   padding, output_padding, dilation, groups
 *   maxpool         N-d; kernel_size, stride (default kernel), padding,
 *                   dilation, ceil_mode; gradient to the first maximum
 *   avgpool         N-d; kernel_size, stride, padding, ceil_mode,
 *                   count_include_pad (default 1)
 * `alpha` may be the string "rsqrt_k": 1/sqrt(K), as in attention. */
#include "tasks/task_ops.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- geometry, shared by both instantiations --------------------------- */

struct mm {
	int64_t batch, m, n, k;   /* op(a) [m,k], op(b) [k,n], per batch */
	bool ta, tb;
	double alpha;
};

static double mm_alpha(const struct task_node *nd, int64_t k)
{
	const char *s = task_node_str(nd, "alpha", NULL);
	if (s && !strcmp(s, "rsqrt_k"))
		return 1.0 / sqrt((double)k);
	return task_node_float(nd, "alpha", 1.0);
}

static void mm_fill(const struct task_node *nd, const struct task_val *in, struct mm *g)
{
	const struct task_val *a = &in[0], *b = &in[1];
	memset(g, 0, sizeof *g);
	if (!strcmp(nd->op, "matmul_nd")) {
		g->k = b->shape[0];
		g->n = b->shape[1];
		g->m = a->n / g->k;
		g->batch = 1;
	} else {
		int r = a->rank;
		g->ta = task_node_int(nd, "trans_a", 0) != 0;
		g->tb = task_node_int(nd, "trans_b", 0) != 0;
		g->m = a->shape[r - (g->ta ? 1 : 2)];
		g->k = a->shape[r - (g->ta ? 2 : 1)];
		g->n = b->shape[r - (g->tb ? 2 : 1)];
		g->batch = 1;
		for (int i = 0; i < r - 2; i++)
			g->batch *= a->shape[i];
	}
	g->alpha = mm_alpha(nd, g->k);
}

/* Spatial dims are right-aligned into 3: a 1-d op has extents 1 in front. */
struct cgeom {
	int64_t n, ci, co, g;            /* the nest's input/output channels */
	int64_t in[3], out[3], k[3], s[3], p[3], d[3];
};

struct pgeom {
	int64_t planes, isz, osz;        /* N·C planes of isz inputs, osz outputs */
	int64_t in[3], out[3], k[3], s[3], p[3], d[3];
	bool count_pad;
};

/* Reads an int-or-list spatial attribute into v[3], right-aligned, the
 * unused leading dims set to dflt (the neutral value: 1 for kernel, stride
 * and dilation, 0 for paddings); 0 if present with the wrong length or a
 * value below lo or above TASK_MAX_NUMEL. */
static int sp_attr(const struct task_node *nd, const char *key, int nsp, int64_t dflt,
		   int64_t lo, int64_t v[3])
{
	int64_t buf[TASK_ATTR_MAX_INTS];
	int cnt = task_node_ints(nd, key, buf, TASK_ATTR_MAX_INTS);
	if (task_node_attr(nd, key) && cnt == 0)
		return 0;
	if (cnt != 0 && cnt != 1 && cnt != nsp)
		return 0;
	for (int q = 0; q < 3; q++) {
		int s = q - (3 - nsp);
		v[q] = s < 0 || cnt == 0 ? dflt : cnt == 1 ? buf[0] : buf[s];
		if (v[q] < lo || v[q] > TASK_MAX_NUMEL) /* the cap bounds the geometry's terms */
			return 0;
	}
	return 1;
}

/* Rejects attributes the op does not know, so that a misspelt "dilation"
 * fails at load time instead of silently meaning 1. */
static enum cr_status known_attrs(const struct task_node *nd, const char *const *keys,
				  struct cr_err *err)
{
	for (int i = 0; i < nd->n_attrs; i++) {
		bool ok = false;
		for (int k = 0; keys[k]; k++)
			ok |= !strcmp(nd->attrs[i].key, keys[k]);
		if (!ok)
			return cr_errf(err, CR_EINPUT, "op %s: unknown attribute \"%s\"", nd->op,
				       nd->attrs[i].key);
	}
	return CR_OK;
}

/* First and one-past-last output column whose tap column o·s + off lies in
 * [0, in). */
static void tap_range(int64_t off, int64_t s, int64_t in, int64_t nout, int64_t *lo,
		      int64_t *hi)
{
	int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
	int64_t b = in - 1 - off < 0 ? 0 : (in - 1 - off) / s + 1;
	if (b > nout)
		b = nout;
	*lo = a;
	*hi = b > a ? b : a;
}

/* The kernel taps k in [lo, hi) whose position st + k·d lies in [0, in). */
static void kernel_range(int64_t st, int64_t d, int64_t k, int64_t in, int64_t *lo, int64_t *hi)
{
	int64_t a = st >= 0 ? 0 : (-st + d - 1) / d;
	int64_t b = in - st <= 0 ? 0 : (in - st + d - 1) / d;
	*lo = a;
	*hi = b < k ? (b > a ? b : a) : (k > a ? k : a);
}

static bool is_transposed(const struct task_node *nd)
{
	return !strcmp(nd->op, "conv_transpose");
}

/* A convolution's output extent, PyTorch's (in + 2p - d(k-1) - 1) / s + 1
 * (0 when the dilated kernel outgrows the padded input); false on
 * overflow. Terms are at most TASK_MAX_NUMEL (sp_attr, the value cap). */
static bool conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t *out)
{
	int64_t span, num;
	if (!task_mul(d, k - 1, &span) || !task_add(in, 2 * p - 1, &num) ||
	    !task_add(num, -span, &num))
		return false;
	*out = num < 0 ? 0 : num / s + 1;
	return true;
}

/* conv_transpose's extent: (o - 1)s - 2p + d(k-1) + op + 1; false on
 * overflow. */
static bool convt_in(int64_t o, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op,
		     int64_t *in)
{
	int64_t a, span;
	if (!task_mul(o - 1, s, &a) || !task_mul(d, k - 1, &span) || !task_add(a, span, &a) ||
	    !task_add(a, op + 1 - 2 * p, &a))
		return false;
	*in = a;
	return true;
}

/* Fills the nest geometry (see conv_nest); false when an extent overflows
 * (infer refuses it; the bodies run on validated inputs only). */
static bool cgeom_fill(const struct task_node *nd, const struct task_val *in, struct cgeom *g)
{
	const struct task_val *x = &in[0], *w = &in[1];
	int nsp = x->rank - 2;
	int64_t op[3];
	bool tr = is_transposed(nd);

	memset(g, 0, sizeof *g);
	g->n = x->shape[0];
	sp_attr(nd, "stride", nsp, 1, 1, g->s);
	sp_attr(nd, "padding", nsp, 0, 0, g->p);
	sp_attr(nd, "dilation", nsp, 1, 1, g->d);
	sp_attr(nd, "output_padding", nsp, 0, 0, op);
	for (int q = 0; q < 3; q++) {
		int s = q - (3 - nsp);
		g->k[q] = s < 0 ? 1 : w->shape[2 + s];
		if (s < 0) {
			g->in[q] = g->out[q] = 1;
			continue;
		}
		if (!tr) {
			g->in[q] = x->shape[2 + s];
			if (!conv_out(g->in[q], g->k[q], g->s[q], g->p[q], g->d[q], &g->out[q]))
				return false;
		} else {
			g->out[q] = x->shape[2 + s];
			if (!convt_in(g->out[q], g->k[q], g->s[q], g->p[q], g->d[q], op[q], &g->in[q]))
				return false;
		}
	}
	if (!tr) {
		g->ci = x->shape[1];
		g->co = w->shape[0];
		g->g = g->ci / w->shape[1];
	} else {
		g->g = task_node_int(nd, "groups", 1);
		g->co = x->shape[1];
		if (!task_mul(w->shape[1], g->g, &g->ci))
			return false;
	}
	return true;
}

/* The three uses of the convolution loop nest (conv_nest). */
enum { CONV_FWD, CONV_DGRAD, CONV_WGRAD };

/* PyTorch's pooling_output_shape; false on overflow. Terms are at most
 * TASK_MAX_NUMEL (sp_attr). */
static bool pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil,
		     int64_t *out)
{
	int64_t span, num, o;
	if (!task_mul(d, k - 1, &span) || !task_add(in, 2 * p - 1 + (ceil ? s - 1 : 0), &num) ||
	    !task_add(num, -span, &num))
		return false;
	o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
	if (ceil && (o - 1) * s >= in + p) /* (o - 1)s <= num: no wrap */
		o--;
	*out = o;
	return true;
}

/* false when an extent overflows (infer refuses it; the bodies run on
 * validated inputs only) */
static bool pgeom_fill(const struct task_node *nd, const struct task_val *in, struct pgeom *g)
{
	const struct task_val *x = &in[0];
	int nsp = x->rank - 2;
	bool ceil = task_node_int(nd, "ceil_mode", 0) != 0;

	memset(g, 0, sizeof *g);
	sp_attr(nd, "kernel_size", nsp, 1, 1, g->k);
	if (!task_node_attr(nd, "stride"))
		memcpy(g->s, g->k, sizeof g->s);
	else
		sp_attr(nd, "stride", nsp, 1, 1, g->s);
	sp_attr(nd, "padding", nsp, 0, 0, g->p);
	sp_attr(nd, "dilation", nsp, 1, 1, g->d);
	g->count_pad = task_node_int(nd, "count_include_pad", 1) != 0;
	g->planes = x->shape[0] * x->shape[1];
	g->isz = g->osz = 1;
	for (int q = 0; q < 3; q++) {
		int s = q - (3 - nsp);
		g->in[q] = s < 0 ? 1 : x->shape[2 + s];
		g->out[q] = 1;
		if (s >= 0 && !pool_out(g->in[q], g->k[q], g->s[q], g->p[q], g->d[q], ceil, &g->out[q]))
			return false;
		g->isz *= g->in[q]; /* extents of x: at most its count */
		if (g->out[q] < 1 || !task_mul(g->osz, g->out[q], &g->osz))
			return false;
	}
	return true;
}

/* Visits every output of one pooling plane: o is its flat index, st the
 * unclipped window start per spatial dim, en scratch for the window end. */
#define POOL_FOR_EACH(pg, o, st, en, ...)                                             \
	for (int64_t od_ = 0; od_ < (pg)->out[0]; od_++)                              \
	for (int64_t oh_ = 0; oh_ < (pg)->out[1]; oh_++)                              \
	for (int64_t ow_ = 0; ow_ < (pg)->out[2]; ow_++) {                            \
		int64_t o = (od_ * (pg)->out[1] + oh_) * (pg)->out[2] + ow_;          \
		int64_t st[3] = { od_ * (pg)->s[0] - (pg)->p[0],                      \
				  oh_ * (pg)->s[1] - (pg)->p[1],                      \
				  ow_ * (pg)->s[2] - (pg)->p[2] };                    \
		int64_t en[3];                                                        \
		(void)en;                                                             \
		__VA_ARGS__                                                           \
	}

/* PyTorch's avg_pool window: end = min(start + k, in + pad) fixes the
 * count_include_pad divisor, then the window is clipped to the input.
 * Returns the divisor, 0 for a window wholly in the padding. */
static int64_t avg_window(const struct pgeom *g, int64_t st[3], int64_t en[3])
{
	int64_t padded = 1, inside = 1;
	for (int q = 0; q < 3; q++) {
		en[q] = st[q] + g->k[q];
		if (en[q] > g->in[q] + g->p[q])
			en[q] = g->in[q] + g->p[q];
		padded *= en[q] - st[q];
		if (st[q] < 0)
			st[q] = 0;
		if (en[q] > g->in[q])
			en[q] = g->in[q];
		inside *= en[q] > st[q] ? en[q] - st[q] : 0;
	}
	if (inside == 0)
		return 0;
	return g->count_pad ? padded : inside;
}

/* ---- the two instantiations -------------------------------------------- */

#define T double
#define ACC double
#define FN(x) x##_d
#define GEMM cblas_dgemm
#include "tasks/ops_linalg_impl.h"
#undef T
#undef ACC
#undef FN
#undef GEMM

#define T float
#define ACC float
#define FN(x) x##_f
#define GEMM cblas_sgemm
#include "tasks/ops_linalg_impl.h"
#undef T
#undef ACC
#undef FN
#undef GEMM

/* ---- shape inference ---------------------------------------------------- */

static enum cr_status set_shape(const struct task_node *nd, struct task_val *o, int rank,
			       const int64_t *shape, struct cr_err *err)
{
	o->rank = rank;
	memcpy(o->shape, shape, sizeof(int64_t) * (size_t)rank);
	return task_val_count(nd, o, err);
}

static enum cr_status blas_range(const struct task_node *nd, int64_t m, int64_t n, int64_t k,
				 struct cr_err *err)
{
	if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
		return cr_errf(err, CR_EINPUT, "op %s: extent exceeds BLAS int range", nd->op);
	return CR_OK;
}

static enum cr_status infer_mm(const struct task_node *nd, const struct task_val *in,
			       int n_in, struct task_val *out, struct cr_err *err)
{
	const struct task_val *a = &in[0], *b = &in[1];
	bool bmm = !strcmp(nd->op, "bmm");
	int64_t shape[TASK_MAX_RANK];
	struct mm g;
	static const char *const keys[] = { "trans_a", "trans_b", "alpha", NULL };
	(void)n_in;
	if (known_attrs(nd, keys, err))
		return CR_EINPUT;
	if (a->rank != b->rank || (bmm ? a->rank < 3 : a->rank != 2))
		return cr_errf(err, CR_EINPUT, "op %s: needs two operands of rank %s (got %d and %d)",
			       nd->op, bmm ? ">= 3" : "2", a->rank, b->rank);
	for (int i = 0; i < a->rank - 2; i++)
		if (a->shape[i] != b->shape[i])
			return cr_errf(err, CR_EINPUT, "op %s: batch dim %d differs (%lld vs %lld)",
				       nd->op, i, (long long)a->shape[i], (long long)b->shape[i]);
	mm_fill(nd, in, &g);
	if (b->shape[a->rank - (g.tb ? 1 : 2)] != g.k)
		return cr_errf(err, CR_EINPUT, "op %s: contraction extents differ (%lld vs %lld)",
			       nd->op, (long long)g.k, (long long)b->shape[a->rank - (g.tb ? 1 : 2)]);
	memcpy(shape, a->shape, sizeof shape);
	shape[a->rank - 2] = g.m;
	shape[a->rank - 1] = g.n;
	if (set_shape(nd, out, a->rank, shape, err))
		return CR_EINPUT;
	return blas_range(nd, g.m, g.n, g.k, err);
}

static enum cr_status infer_mm_nd(const struct task_node *nd, const struct task_val *in,
				  int n_in, struct task_val *out, struct cr_err *err)
{
	static const char *const none[] = { NULL };
	const struct task_val *a = &in[0], *b = &in[1];
	int64_t shape[TASK_MAX_RANK];
	(void)n_in;
	if (known_attrs(nd, none, err))
		return CR_EINPUT;
	if (b->rank != 2 || a->shape[a->rank - 1] != b->shape[0])
		return cr_errf(err, CR_EINPUT, "op %s: needs a[..., K] and b[K, N]", nd->op);
	memcpy(shape, a->shape, sizeof shape);
	shape[a->rank - 1] = b->shape[1];
	if (set_shape(nd, out, a->rank, shape, err))
		return CR_EINPUT;
	return blas_range(nd, a->n / b->shape[0], b->shape[1], b->shape[0], err);
}

static enum cr_status infer_linear(const struct task_node *nd, const struct task_val *in,
				   int n_in, struct task_val *out, struct cr_err *err)
{
	static const char *const none[] = { NULL };
	const struct task_val *x = &in[0], *w = &in[1];
	int64_t shape[TASK_MAX_RANK];
	if (known_attrs(nd, none, err))
		return CR_EINPUT;
	if (w->rank != 2 || x->shape[x->rank - 1] != w->shape[1])
		return cr_errf(err, CR_EINPUT, "op linear: needs x[..., K] and w[N, K]");
	if (n_in > 2 && in[2].n != w->shape[0])
		return cr_errf(err, CR_EINPUT, "op linear: bias needs %lld elements",
			       (long long)w->shape[0]);
	memcpy(shape, x->shape, sizeof shape);
	shape[x->rank - 1] = w->shape[0];
	if (set_shape(nd, out, x->rank, shape, err))
		return CR_EINPUT;
	return blas_range(nd, x->n / w->shape[1], w->shape[0], w->shape[1], err);
}

static enum cr_status infer_diag(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	static const char *const none[] = { NULL };
	(void)n_in;
	if (known_attrs(nd, none, err))
		return CR_EINPUT;
	if (in[0].rank != 1 || in[1].rank != 2 || in[0].shape[0] != in[1].shape[0])
		return cr_errf(err, CR_EINPUT, "op diag_matmul: needs a[N] and b[N, M]");
	return set_shape(nd, out, 2, in[1].shape, err);
}

static enum cr_status infer_square(const struct task_node *nd, const struct task_val *in,
				   int n_in, struct task_val *out, struct cr_err *err)
{
	static const char *const none[] = { NULL };
	if (known_attrs(nd, none, err))
		return CR_EINPUT;
	for (int i = 0; i < n_in; i++)
		if (in[i].rank != 2 || in[i].shape[0] != in[i].shape[1] ||
		    in[i].shape[0] != in[0].shape[0])
			return cr_errf(err, CR_EINPUT, "op %s: needs square matrices of one size",
				       nd->op);
	return set_shape(nd, out, 2, in[0].shape, err);
}

static enum cr_status infer_conv(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	const struct task_val *x = &in[0], *w = &in[1];
	bool tr = is_transposed(nd);
	int nsp = x->rank - 2;
	int64_t v[3], shape[TASK_MAX_RANK], groups;
	struct cgeom g;
	static const char *keys[] = { "stride", "padding", "dilation", "output_padding" };
	static const char *const known[] = { "stride", "padding", "dilation", "output_padding",
					     "groups", NULL };

	if (known_attrs(nd, known, err))
		return CR_EINPUT;

	if (nsp < 1 || nsp > 3 || w->rank != x->rank)
		return cr_errf(err, CR_EINPUT, "op %s: needs x [N, C, 1-3 spatial dims] and w of the same rank",
			       nd->op);
	for (int q = 0; q < 4; q++)
		if (!sp_attr(nd, keys[q], nsp, q == 0 || q == 2 ? 1 : 0, q == 0 || q == 2 ? 1 : 0, v))
			return cr_errf(err, CR_EINPUT, "op %s: %s must be an integer or a list of %d (>= %d, <= %lld)",
				       nd->op, keys[q], nsp, q == 0 || q == 2 ? 1 : 0, (long long)TASK_MAX_NUMEL);
	if (!tr && task_node_attr(nd, "output_padding"))
		return cr_errf(err, CR_EINPUT, "op conv: output_padding belongs to conv_transpose");
	groups = task_node_int(nd, "groups", tr ? 1 : (w->shape[1] ? x->shape[1] / w->shape[1] : 0));
	if (groups < 1 || x->shape[1] % groups)
		return cr_errf(err, CR_EINPUT, "op %s: groups %lld must divide the %lld input channels",
			       nd->op, (long long)groups, (long long)x->shape[1]);
	if (!tr && (w->shape[1] * groups != x->shape[1] || w->shape[0] % groups))
		return cr_errf(err, CR_EINPUT,
			       "op conv: weight [%lld, %lld, ...] does not fit %lld input channels in %lld groups",
			       (long long)w->shape[0], (long long)w->shape[1], (long long)x->shape[1],
			       (long long)groups);
	if (tr && w->shape[0] != x->shape[1])
		return cr_errf(err, CR_EINPUT, "op conv_transpose: weight [%lld, ...] needs the %lld input channels first",
			       (long long)w->shape[0], (long long)x->shape[1]);
	if (!cgeom_fill(nd, in, &g))
		return cr_errf(err, CR_EINPUT,
			       "op %s: stride, padding, dilation and kernel overflow the output extent",
			       nd->op);
	if (tr) {
		int64_t op[3], s[3], d[3];
		sp_attr(nd, "output_padding", nsp, 0, 0, op);
		sp_attr(nd, "stride", nsp, 1, 1, s);
		sp_attr(nd, "dilation", nsp, 1, 1, d);
		for (int q = 0; q < 3; q++)
			if (op[q] >= s[q] && op[q] >= d[q])
				return cr_errf(err, CR_EINPUT,
					       "op conv_transpose: output_padding must be smaller than stride or dilation");
	}
	shape[0] = g.n;
	shape[1] = tr ? g.ci : g.co;
	for (int q = 3 - nsp; q < 3; q++) {
		int64_t o = tr ? g.in[q] : g.out[q];
		if (o < 1)
			return cr_errf(err, CR_EINPUT, "op %s: output extent %lld < 1 on spatial dim %d",
				       nd->op, (long long)o, q - (3 - nsp));
		shape[2 + q - (3 - nsp)] = o;
	}
	if (n_in > 2 && (in[2].rank != 1 || in[2].n != shape[1]))
		return cr_errf(err, CR_EINPUT, "op %s: bias needs %lld elements", nd->op,
			       (long long)shape[1]);
	return set_shape(nd, out, x->rank, shape, err);
}

static enum cr_status infer_pool(const struct task_node *nd, const struct task_val *in,
				 int n_in, struct task_val *out, struct cr_err *err)
{
	const struct task_val *x = &in[0];
	int nsp = x->rank - 2;
	int64_t k[3], s[3], p[3], d[3], shape[TASK_MAX_RANK];
	struct pgeom g;
	static const char *const known[] = { "kernel_size", "stride", "padding", "dilation",
					     "ceil_mode", "count_include_pad", NULL };
	(void)n_in;
	if (known_attrs(nd, known, err))
		return CR_EINPUT;
	if (nsp < 1 || nsp > 3)
		return cr_errf(err, CR_EINPUT, "op %s: needs x [N, C, 1-3 spatial dims]", nd->op);
	if (!task_node_attr(nd, "kernel_size") || !sp_attr(nd, "kernel_size", nsp, 1, 1, k) ||
	    !sp_attr(nd, "stride", nsp, 1, 1, s) || !sp_attr(nd, "padding", nsp, 0, 0, p) ||
	    !sp_attr(nd, "dilation", nsp, 1, 1, d))
		return cr_errf(err, CR_EINPUT,
			       "op %s: kernel_size (required), stride, padding, dilation: an integer or a list of %d",
			       nd->op, nsp);
	if (!strcmp(nd->op, "avgpool") && task_node_attr(nd, "dilation"))
		return cr_errf(err, CR_EINPUT, "op avgpool: takes no dilation");
	for (int q = 0; q < 3; q++) { /* PyTorch: pad <= effective kernel / 2 */
		int64_t span;
		if (!task_mul(k[q] - 1, d[q], &span))
			return cr_errf(err, CR_EINPUT, "op %s: kernel_size x dilation overflows", nd->op);
		if (p[q] > (span + 1) / 2)
			return cr_errf(err, CR_EINPUT,
				       "op %s: padding must be at most half the effective kernel size",
				       nd->op);
	}
	if (!pgeom_fill(nd, in, &g))
		return cr_errf(err, CR_EINPUT,
			       "op %s: an output extent is below 1 or overflows (kernel, stride, padding, dilation)",
			       nd->op);
	shape[0] = x->shape[0];
	shape[1] = x->shape[1];
	for (int q = 3 - nsp; q < 3; q++) {
		if (g.out[q] < 1)
			return cr_errf(err, CR_EINPUT, "op %s: output extent %lld < 1", nd->op,
				       (long long)g.out[q]);
		shape[2 + q - (3 - nsp)] = g.out[q];
	}
	return set_shape(nd, out, x->rank, shape, err);
}

#define OP(nm, lo, hi, mask, inf, base) \
	{ nm, lo, hi, 1, mask, inf, base##_fwd_d, base##_fwd_f, base##_bwd_d, base##_bwd_f }

const struct task_opdef task_ops_linalg[] = {
	OP("matmul_t", 2, 2, 3u, infer_mm, mm),
	OP("bmm", 2, 2, 3u, infer_mm, mm),
	OP("matmul_nd", 2, 2, 3u, infer_mm_nd, mm),
	OP("linear", 2, 3, 7u, infer_linear, linear),
	OP("diag_matmul", 2, 2, 3u, infer_diag, diagmm),
	OP("triu_matmul", 2, 2, 3u, infer_square, trimm),
	OP("tril_matmul", 2, 2, 3u, infer_square, trimm),
	OP("symmetrize", 1, 1, 1u, infer_square, sym),
	OP("conv", 2, 3, 7u, infer_conv, conv),
	OP("conv_transpose", 2, 3, 7u, infer_conv, convt),
	OP("maxpool", 1, 1, 1u, infer_pool, maxpool),
	OP("avgpool", 1, 1, 1u, infer_pool, avgpool),
	{ .name = NULL },
};
