/* test_tasks_linalg.c — closed-form checks of the linalg op family
 * (tasks/ops_linalg.c): every expected value below was worked out by hand
 * from PyTorch's definitions (conv as cross-correlation, padding, dilation,
 * groups; transposed conv with output_padding; pooling with padding,
 * ceil_mode and count_include_pad; first-index ties in max pool's
 * gradient). Each case runs through the double and the float bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tasks/task_ops.h"

/* A node under construction: op name plus attributes. */
static void node_init(struct task_node *nd, const char *op, int n_in)
{
	memset(nd, 0, sizeof *nd);
	snprintf(nd->op, sizeof nd->op, "%s", op);
	nd->def = task_op_find(op);
	assert_non_null(nd->def);
	nd->n_in = n_in;
	nd->n_out = 1;
}

static void attr_int(struct task_node *nd, const char *key, int64_t v)
{
	struct task_attr *a = &nd->attrs[nd->n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", key);
	a->kind = TASK_ATTR_INT;
	a->i = v;
}

static void attr_ints(struct task_node *nd, const char *key, int n, const int64_t *v)
{
	struct task_attr *a = &nd->attrs[nd->n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", key);
	a->kind = TASK_ATTR_INTS;
	a->n_ints = n;
	memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
}

#define MAXN 512

struct tcase {
	struct task_val in[3];
	double buf[3][MAXN];
	int n_in;
};

static void tin(struct tcase *c, int rank, const int64_t *shape, const double *v)
{
	struct task_val *t = &c->in[c->n_in];
	t->rank = rank;
	t->n = 1;
	for (int i = 0; i < rank; i++) {
		t->shape[i] = shape[i];
		t->n *= shape[i];
	}
	assert_true(t->n <= MAXN);
	if (v)
		memcpy(c->buf[c->n_in], v, sizeof(double) * (size_t)t->n);
	else
		memset(c->buf[c->n_in], 0, sizeof(double) * (size_t)t->n);
	c->n_in++;
}

/* Runs nd forward in double and in float; checks shape and values. */
static void run_fwd(const struct task_node *nd, struct tcase *c, int rank, const int64_t *shape,
		    const double *want)
{
	struct task_val out;
	struct cr_err err;
	double yd[MAXN];
	float xf[3][MAXN], yf[MAXN];

	cr_err_init(&err);
	memset(&out, 0, sizeof out);
	for (int i = 0; i < c->n_in; i++)
		c->in[i].d = c->buf[i];
	if (nd->def->infer(nd, c->in, c->n_in, &out, &err))
		fail_msg("%s: infer: %s", nd->op, err.msg);
	assert_int_equal(out.rank, rank);
	for (int i = 0; i < rank; i++)
		assert_int_equal(out.shape[i], shape[i]);
	assert_true(out.n <= MAXN);
	out.d = yd;
	nd->def->fwd_d(nd, c->in, &out);
	for (int64_t k = 0; k < out.n; k++)
		if (fabs(yd[k] - want[k]) > 1e-12)
			fail_msg("%s (double): y[%lld] = %.17g, expected %.17g", nd->op, (long long)k,
				 yd[k], want[k]);
	{
		struct task_val fin[3];
		for (int i = 0; i < c->n_in; i++) {
			fin[i] = c->in[i];
			for (int64_t k = 0; k < c->in[i].n; k++)
				xf[i][k] = (float)c->buf[i][k];
			fin[i].d = xf[i];
		}
		out.d = yf;
		nd->def->fwd_f(nd, fin, &out);
		for (int64_t k = 0; k < out.n; k++)
			if (!(fabs(yf[k] - want[k]) <= 1e-5 * fmax(1, fabs(want[k]))))
				fail_msg("%s (float): y[%lld] = %.9g, expected %.17g", nd->op, (long long)k,
					 (double)yf[k], want[k]);
	}
}

/* Runs nd backward in double with upstream dy; checks din[0]. */
static void run_bwd0(const struct task_node *nd, struct tcase *c, const double *dy,
		     const double *want)
{
	struct task_val out, dout, din[3];
	struct cr_err err;
	double y[MAXN], dx[3][MAXN];

	cr_err_init(&err);
	memset(&out, 0, sizeof out);
	for (int i = 0; i < c->n_in; i++)
		c->in[i].d = c->buf[i];
	assert_int_equal(nd->def->infer(nd, c->in, c->n_in, &out, &err), CR_OK);
	out.d = y;
	nd->def->fwd_d(nd, c->in, &out);
	dout = out;
	dout.d = (void *)dy;
	for (int i = 0; i < c->n_in; i++) {
		din[i] = c->in[i];
		memset(dx[i], 0, sizeof dx[i]);
		din[i].d = dx[i];
	}
	nd->def->bwd_d(nd, c->in, &out, &dout, din);
	for (int64_t k = 0; k < c->in[0].n; k++)
		if (fabs(dx[0][k] - want[k]) > 1e-12)
			fail_msg("%s backward: dx[%lld] = %.17g, expected %.17g", nd->op, (long long)k,
				 dx[0][k], want[k]);
}

#define SH(...) ((const int64_t[]){ __VA_ARGS__ })
#define V(...) ((const double[]){ __VA_ARGS__ })

static void test_conv1d(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	/* x = [1..5], w = [1, 0, -1], stride 2, padding 1: taps (-1,0,1),
	 * (1,2,3), (3,4,5) of the zero-padded x */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 5), V(1, 2, 3, 4, 5));
	tin(&c, 3, SH(1, 1, 3), V(1, 0, -1));
	node_init(&nd, "conv", 2);
	attr_int(&nd, "stride", 2);
	attr_int(&nd, "padding", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 3), V(-2, -2, 4));
	/* dilation 2: one output, taps 0, 2, 4 */
	node_init(&nd, "conv", 2);
	attr_int(&nd, "dilation", 2);
	run_fwd(&nd, &c, 3, SH(1, 1, 1), V(-4));
	/* its input gradient scatters dy through the taps */
	run_bwd0(&nd, &c, V(10), V(10, 0, 0, 0, -10));
}

static void test_conv2d(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	/* 3x3 input 1..9, 2x2 kernel of ones: window sums */
	memset(&c, 0, sizeof c);
	tin(&c, 4, SH(1, 1, 3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9));
	tin(&c, 4, SH(1, 1, 2, 2), V(1, 1, 1, 1));
	node_init(&nd, "conv", 2);
	run_fwd(&nd, &c, 4, SH(1, 1, 2, 2), V(12, 16, 24, 28));
	/* asymmetric padding (1, 0) and stride (2, 1): rows -1..0 and 1..2 */
	node_init(&nd, "conv", 2);
	attr_ints(&nd, "padding", 2, SH(1, 0));
	attr_ints(&nd, "stride", 2, SH(2, 1));
	run_fwd(&nd, &c, 4, SH(1, 1, 2, 2), V(3, 5, 24, 28));

	/* groups 2 (depthwise, implied by w [2,1,1,1]) with a bias */
	memset(&c, 0, sizeof c);
	tin(&c, 4, SH(1, 2, 2, 2), V(1, 2, 3, 4, 5, 6, 7, 8));
	tin(&c, 4, SH(2, 1, 1, 1), V(2, -1));
	tin(&c, 1, SH(2), V(1, 10));
	node_init(&nd, "conv", 3);
	run_fwd(&nd, &c, 4, SH(1, 2, 2, 2), V(3, 5, 7, 9, 5, 4, 3, 2));
	node_init(&nd, "conv", 3);
	attr_int(&nd, "groups", 2);
	run_fwd(&nd, &c, 4, SH(1, 2, 2, 2), V(3, 5, 7, 9, 5, 4, 3, 2));
}

static void test_conv3d(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	/* 2x2x2 input 1..8, kernel (2,1,1) of [1, -1]: x[d=0] - x[d=1] = -4 */
	memset(&c, 0, sizeof c);
	tin(&c, 5, SH(1, 1, 2, 2, 2), V(1, 2, 3, 4, 5, 6, 7, 8));
	tin(&c, 5, SH(1, 1, 2, 1, 1), V(1, -1));
	node_init(&nd, "conv", 2);
	run_fwd(&nd, &c, 5, SH(1, 1, 1, 2, 2), V(-4, -4, -4, -4));
}

static void test_conv_transpose(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	/* x = [1, 2], w = [1, 1, 1], stride 2, output_padding 1: x0 lands on
	 * 0..2, x1 on 2..4, position 5 exists only through output_padding */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 2), V(1, 2));
	tin(&c, 3, SH(1, 1, 3), V(1, 1, 1));
	node_init(&nd, "conv_transpose", 2);
	attr_int(&nd, "stride", 2);
	attr_int(&nd, "output_padding", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 6), V(1, 1, 3, 2, 2, 0));
	/* padding 1 crops one position from each side */
	node_init(&nd, "conv_transpose", 2);
	attr_int(&nd, "stride", 2);
	attr_int(&nd, "padding", 1);
	attr_int(&nd, "output_padding", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 4), V(1, 3, 2, 2));
	/* dilation 2, stride 1: taps at i, i+2, i+4 */
	node_init(&nd, "conv_transpose", 2);
	attr_int(&nd, "dilation", 2);
	run_fwd(&nd, &c, 3, SH(1, 1, 6), V(1, 2, 1, 2, 1, 2));
	/* its input gradient is the conv of dy: dx[i] = dy[i] + dy[i+2] + dy[i+4] */
	run_bwd0(&nd, &c, V(1, 2, 3, 4, 5, 6), V(9, 12));

	/* groups 2: w [2, 1, 1] maps channel c to channel c alone */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 2, 1), V(1, 2));
	tin(&c, 3, SH(2, 1, 1), V(3, 4));
	node_init(&nd, "conv_transpose", 2);
	attr_int(&nd, "groups", 2);
	run_fwd(&nd, &c, 3, SH(1, 2, 1), V(3, 8));
	/* groups 1: w [Cin=2, Cout=2, 1]: y[co] = sum_ci x[ci] w[ci, co] */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 2, 1), V(1, 2));
	tin(&c, 3, SH(2, 2, 1), V(3, 4, 5, 6));
	tin(&c, 1, SH(2), V(100, 200));
	node_init(&nd, "conv_transpose", 3);
	run_fwd(&nd, &c, 3, SH(1, 2, 1), V(113, 216));
}

static void test_maxpool(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 5), V(1, 3, 2, 5, 4));
	node_init(&nd, "maxpool", 1);
	attr_int(&nd, "kernel_size", 2);
	run_fwd(&nd, &c, 3, SH(1, 1, 2), V(3, 5));
	/* ceil_mode keeps the partial last window */
	attr_int(&nd, "ceil_mode", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 3), V(3, 5, 4));
	/* padding 1 is -inf padding */
	node_init(&nd, "maxpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "padding", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 3), V(1, 3, 5));
	/* dilation 2, stride 1: windows (0,2), (1,3), (2,4) */
	node_init(&nd, "maxpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "stride", 1);
	attr_int(&nd, "dilation", 2);
	run_fwd(&nd, &c, 3, SH(1, 1, 3), V(2, 5, 4));
	/* ceil_mode drops a window that would start in the right padding:
	 * L=4, k=2, s=2, p=1: ceil gives 3 windows, the last starts at 3 < 4+1 */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 4), V(1, 2, 3, 4));
	node_init(&nd, "maxpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "padding", 1);
	attr_int(&nd, "ceil_mode", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 3), V(1, 3, 4));

	/* ties: the gradient goes to the first maximum in scan order */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 3), V(2, 2, 1));
	node_init(&nd, "maxpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "stride", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 2), V(2, 2));
	run_bwd0(&nd, &c, V(1, 10), V(1, 10, 0));

	/* 2-d, 2x2 windows on a 3x3 grid with a tie in the last window */
	memset(&c, 0, sizeof c);
	tin(&c, 4, SH(1, 1, 3, 3), V(1, 9, 2, 3, 4, 8, 5, 8, 0));
	node_init(&nd, "maxpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "stride", 1);
	run_fwd(&nd, &c, 4, SH(1, 1, 2, 2), V(9, 9, 8, 8));
	run_bwd0(&nd, &c, V(1, 2, 3, 4), V(0, 3, 0, 0, 0, 4, 0, 3, 0));
}

static void test_avgpool(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 4), V(1, 2, 3, 4));
	/* padding 1, count_include_pad (default): zeros count in the divisor */
	node_init(&nd, "avgpool", 1);
	attr_int(&nd, "kernel_size", 3);
	attr_int(&nd, "stride", 1);
	attr_int(&nd, "padding", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 4), V(1, 2, 3, 7.0 / 3));
	run_bwd0(&nd, &c, V(3, 3, 3, 3), V(2, 3, 3, 2));
	attr_int(&nd, "count_include_pad", 0);
	run_fwd(&nd, &c, 3, SH(1, 1, 4), V(1.5, 2, 3, 3.5));

	/* ceil_mode: the last window is clipped to the input, divisor 1 */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 5), V(1, 2, 3, 4, 5));
	node_init(&nd, "avgpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "ceil_mode", 1);
	run_fwd(&nd, &c, 3, SH(1, 1, 3), V(1.5, 3.5, 5));

	/* 2-d, k 2, stride 1, padding 1 on [[1,2],[3,4]]: corners see one
	 * element out of 4 window cells, the centre all four */
	memset(&c, 0, sizeof c);
	tin(&c, 4, SH(1, 1, 2, 2), V(1, 2, 3, 4));
	node_init(&nd, "avgpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "stride", 1);
	attr_int(&nd, "padding", 1);
	run_fwd(&nd, &c, 4, SH(1, 1, 3, 3), V(0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1));
	attr_int(&nd, "count_include_pad", 0);
	run_fwd(&nd, &c, 4, SH(1, 1, 3, 3), V(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4));
}

static void test_matmuls(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	/* A [K=2, M=3], B [K=2, N=2]: A^T B */
	memset(&c, 0, sizeof c);
	tin(&c, 2, SH(2, 3), V(1, 2, 3, 4, 5, 6));
	tin(&c, 2, SH(2, 2), V(1, 0, 1, 1));
	node_init(&nd, "matmul_t", 2);
	attr_int(&nd, "trans_a", 1);
	run_fwd(&nd, &c, 2, SH(3, 2), V(5, 4, 7, 5, 9, 6));
	/* both transposed: A^T [3,2] · B^T [2,2] */
	attr_int(&nd, "trans_b", 1);
	run_fwd(&nd, &c, 2, SH(3, 2), V(1, 5, 2, 7, 3, 9));

	/* bmm over two batches, B scaled by alpha = 1/sqrt(K) = 1/2 */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(2, 1, 4), V(1, 1, 1, 1, 1, 2, 3, 4));
	tin(&c, 3, SH(2, 4, 1), V(1, 2, 3, 4, 1, 1, 1, 1));
	node_init(&nd, "bmm", 2);
	{
		struct task_attr *a = &nd.attrs[nd.n_attrs++];
		snprintf(a->key, sizeof a->key, "alpha");
		a->kind = TASK_ATTR_STR;
		snprintf(a->s, sizeof a->s, "rsqrt_k");
	}
	run_fwd(&nd, &c, 3, SH(2, 1, 1), V(5, 5));

	/* matmul_nd: [2,1,2] · [2,3] */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(2, 1, 2), V(1, 2, 3, 4));
	tin(&c, 2, SH(2, 3), V(1, 0, 1, 0, 1, 1));
	node_init(&nd, "matmul_nd", 2);
	run_fwd(&nd, &c, 3, SH(2, 1, 3), V(1, 2, 3, 3, 4, 7));

	/* linear: x [1,2] · w[2,2]^T + b */
	memset(&c, 0, sizeof c);
	tin(&c, 2, SH(1, 2), V(1, 2));
	tin(&c, 2, SH(2, 2), V(1, 1, 1, -1));
	tin(&c, 1, SH(2), V(10, 20));
	node_init(&nd, "linear", 3);
	run_fwd(&nd, &c, 2, SH(1, 2), V(13, 19));

	/* triangular: the other triangle of the inputs is ignored */
	memset(&c, 0, sizeof c);
	tin(&c, 2, SH(2, 2), V(1, 2, 3, 4));
	tin(&c, 2, SH(2, 2), V(5, 6, 7, 8));
	node_init(&nd, "triu_matmul", 2);
	run_fwd(&nd, &c, 2, SH(2, 2), V(5, 22, 0, 32));
	node_init(&nd, "tril_matmul", 2);
	run_fwd(&nd, &c, 2, SH(2, 2), V(5, 0, 43, 32));

	/* diag(a) · b and symmetrize */
	memset(&c, 0, sizeof c);
	tin(&c, 1, SH(2), V(2, 3));
	tin(&c, 2, SH(2, 2), V(1, 2, 3, 4));
	node_init(&nd, "diag_matmul", 2);
	run_fwd(&nd, &c, 2, SH(2, 2), V(2, 4, 9, 12));
	memset(&c, 0, sizeof c);
	tin(&c, 2, SH(2, 2), V(1, 2, 4, 3));
	node_init(&nd, "symmetrize", 1);
	run_fwd(&nd, &c, 2, SH(2, 2), V(1, 3, 3, 3));
}

/* Deterministic values in (-2, 2), distinct with high probability. */
static void fill(struct tcase *c, int i, uint64_t seed)
{
	uint64_t z = seed * 0x9E3779B97F4A7C15ull + 1;
	for (int64_t k = 0; k < c->in[i].n; k++) {
		z ^= z >> 12; z ^= z << 25; z ^= z >> 27;
		c->buf[i][k] = (double)((z * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0 * 4 - 2;
	}
}

static double loss(const struct task_node *nd, struct tcase *c, const struct task_val *shape,
		   const double *dy)
{
	struct task_val out = *shape;
	double y[MAXN], l = 0;
	out.d = y;
	nd->def->fwd_d(nd, c->in, &out);
	for (int64_t k = 0; k < out.n; k++)
		l += dy[k] * y[k];
	return l;
}

/* Backward of nd against central differences of L = sum(dy * y), on every
 * element of every differentiable input. */
static void check_fd(const struct task_node *nd, struct tcase *c)
{
	struct task_val out, dout, din[3];
	struct cr_err err;
	double y[MAXN], dy[MAXN], g[3][MAXN];

	cr_err_init(&err);
	memset(&out, 0, sizeof out);
	for (int i = 0; i < c->n_in; i++) {
		c->in[i].d = c->buf[i];
		fill(c, i, 11 + (uint64_t)i);
	}
	if (nd->def->infer(nd, c->in, c->n_in, &out, &err))
		fail_msg("%s: infer: %s", nd->op, err.msg);
	assert_true(out.n <= MAXN);
	for (int64_t k = 0; k < out.n; k++)
		dy[k] = sin(1.0 + (double)k * 0.7);
	out.d = y;
	nd->def->fwd_d(nd, c->in, &out);
	dout = out;
	dout.d = dy;
	for (int i = 0; i < c->n_in; i++) {
		din[i] = c->in[i];
		memset(g[i], 0, sizeof g[i]);
		din[i].d = (nd->def->grad_mask & (1u << i)) ? g[i] : NULL;
	}
	nd->def->bwd_d(nd, c->in, &out, &dout, din);
	for (int i = 0; i < c->n_in; i++) {
		if (!din[i].d)
			continue;
		for (int64_t k = 0; k < c->in[i].n; k++) {
			double keep = c->buf[i][k], h = 1e-6, lp, lm, fdv;
			c->buf[i][k] = keep + h;
			lp = loss(nd, c, &out, dy);
			c->buf[i][k] = keep - h;
			lm = loss(nd, c, &out, dy);
			c->buf[i][k] = keep;
			fdv = (lp - lm) / (2 * h);
			if (!(fabs(fdv - g[i][k]) <= 1e-6 * fmax(1, fabs(fdv))))
				fail_msg("%s: d in[%d][%lld] = %.12g, finite difference %.12g", nd->op, i,
					 (long long)k, g[i][k], fdv);
		}
	}
}

/* Attribute combinations no L1 task exercises get their gradients checked
 * here (the registry-wide finite-difference test covers the tasks). */
static void test_backward_fd(void **s)
{
	struct task_node nd;
	struct tcase c;
	(void)s;
	/* 3-d conv: groups 2, bias, stride, dilation, asymmetric padding */
	memset(&c, 0, sizeof c);
	tin(&c, 5, SH(1, 4, 3, 5, 6), NULL);
	tin(&c, 5, SH(4, 2, 2, 2, 3), NULL);
	tin(&c, 1, SH(4), NULL);
	node_init(&nd, "conv", 3);
	attr_ints(&nd, "stride", 3, SH(1, 2, 1));
	attr_ints(&nd, "padding", 3, SH(1, 0, 2));
	attr_ints(&nd, "dilation", 3, SH(1, 1, 2));
	attr_int(&nd, "groups", 2);
	check_fd(&nd, &c);
	/* 2-d transposed conv: groups 2, bias, stride 3, dilation 2, output_padding 2 */
	memset(&c, 0, sizeof c);
	tin(&c, 4, SH(1, 4, 3, 4), NULL);
	tin(&c, 4, SH(4, 1, 2, 3), NULL);
	tin(&c, 1, SH(2), NULL);
	node_init(&nd, "conv_transpose", 3);
	attr_int(&nd, "stride", 3);
	attr_ints(&nd, "padding", 2, SH(1, 0));
	attr_int(&nd, "dilation", 2);
	attr_int(&nd, "output_padding", 2);
	attr_int(&nd, "groups", 2);
	check_fd(&nd, &c);
	/* depthwise 1-d conv (the direct path) with stride and padding */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(2, 3, 9), NULL);
	tin(&c, 3, SH(3, 1, 4), NULL);
	node_init(&nd, "conv", 2);
	attr_int(&nd, "stride", 2);
	attr_int(&nd, "padding", 2);
	check_fd(&nd, &c);
	/* pools with ceil_mode, padding, dilation, count_include_pad off */
	memset(&c, 0, sizeof c);
	tin(&c, 4, SH(1, 2, 7, 8), NULL);
	node_init(&nd, "maxpool", 1);
	attr_int(&nd, "kernel_size", 3);
	attr_int(&nd, "stride", 2);
	attr_int(&nd, "padding", 1);
	attr_ints(&nd, "dilation", 2, SH(1, 2));
	attr_int(&nd, "ceil_mode", 1);
	check_fd(&nd, &c);
	node_init(&nd, "avgpool", 1);
	attr_ints(&nd, "kernel_size", 2, SH(3, 2));
	attr_int(&nd, "stride", 2);
	attr_int(&nd, "padding", 1);
	attr_int(&nd, "ceil_mode", 1);
	attr_int(&nd, "count_include_pad", 0);
	check_fd(&nd, &c);
	/* products: both transposes with alpha, batched; linear with bias; diag */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(2, 3, 4), NULL);
	tin(&c, 3, SH(2, 5, 3), NULL);
	node_init(&nd, "bmm", 2);
	attr_int(&nd, "trans_a", 1);
	attr_int(&nd, "trans_b", 1);
	{
		struct task_attr *a = &nd.attrs[nd.n_attrs++];
		snprintf(a->key, sizeof a->key, "alpha");
		a->kind = TASK_ATTR_FLOAT;
		a->f = 0.5;
	}
	check_fd(&nd, &c);
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(2, 3, 4), NULL);
	tin(&c, 2, SH(5, 4), NULL);
	tin(&c, 1, SH(5), NULL);
	node_init(&nd, "linear", 3);
	check_fd(&nd, &c);
	memset(&c, 0, sizeof c);
	tin(&c, 1, SH(4), NULL);
	tin(&c, 2, SH(4, 3), NULL);
	node_init(&nd, "diag_matmul", 2);
	check_fd(&nd, &c);
	memset(&c, 0, sizeof c);
	tin(&c, 2, SH(5, 5), NULL);
	tin(&c, 2, SH(5, 5), NULL);
	node_init(&nd, "tril_matmul", 2);
	check_fd(&nd, &c);
}

/* Shape inference refuses what PyTorch refuses. */
static void test_infer_errors(void **s)
{
	struct task_node nd;
	struct tcase c;
	struct task_val out;
	struct cr_err err;
	(void)s;
	/* 3 input channels do not split into weight [.., 2, ..] groups */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 3, 5), NULL);
	tin(&c, 3, SH(1, 2, 3), NULL);
	node_init(&nd, "conv", 2);
	cr_err_init(&err);
	assert_int_not_equal(nd.def->infer(&nd, c.in, 2, &out, &err), CR_OK);
	/* kernel larger than the input */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 2), NULL);
	tin(&c, 3, SH(1, 1, 3), NULL);
	node_init(&nd, "conv", 2);
	cr_err_init(&err);
	assert_int_not_equal(nd.def->infer(&nd, c.in, 2, &out, &err), CR_OK);
	/* output_padding must be below stride or dilation */
	node_init(&nd, "conv_transpose", 2);
	attr_int(&nd, "output_padding", 1);
	cr_err_init(&err);
	assert_int_not_equal(nd.def->infer(&nd, c.in, 2, &out, &err), CR_OK);
	/* a misspelt attribute is an error, not a silent default */
	node_init(&nd, "conv_transpose", 2);
	attr_int(&nd, "dilations", 2);
	cr_err_init(&err);
	assert_int_not_equal(nd.def->infer(&nd, c.in, 2, &out, &err), CR_OK);
	/* pool padding above half the kernel */
	memset(&c, 0, sizeof c);
	tin(&c, 3, SH(1, 1, 8), NULL);
	node_init(&nd, "avgpool", 1);
	attr_int(&nd, "kernel_size", 2);
	attr_int(&nd, "padding", 2);
	cr_err_init(&err);
	assert_int_not_equal(nd.def->infer(&nd, c.in, 1, &out, &err), CR_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv1d),
		cmocka_unit_test(test_conv2d),
		cmocka_unit_test(test_conv3d),
		cmocka_unit_test(test_conv_transpose),
		cmocka_unit_test(test_maxpool),
		cmocka_unit_test(test_avgpool),
		cmocka_unit_test(test_matmuls),
		cmocka_unit_test(test_backward_fd),
		cmocka_unit_test(test_infer_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
