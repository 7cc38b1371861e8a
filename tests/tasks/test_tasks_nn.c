/* test_tasks_nn.c — the whole-network ops (tasks/ops_nn.c): closed forms
 * worked out by hand from PyTorch's definitions (cat, the layout ops,
 * adaptive pooling's floor/ceil windows, F.normalize, one LSTM and GRU step
 * with gate order i,f,g,o and r,z,n, F.pad, slicing by bounds or by another
 * input's extent, Mamba-2's segsum against its naive cumsum form), the
 * float body against the double one,
 * and every op's backward against central finite differences of
 * L = sum(dy * y) on random inputs, over every attribute variant the tasks
 * use (reverse, batch_first, a non-zero h0 slice). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/task_ops.h"
#include "tasks/task_rng.h"

#define MAXN 4096
#define MAXIN 8

struct nd_case {
	struct task_node nd;
	struct task_val in[MAXIN], out[TASK_MAX_OUT];
	double x[MAXIN][MAXN], y[TASK_MAX_OUT][MAXN];
	int n_in;
};

static void c_init(struct nd_case *c, const char *op)
{
	memset(c, 0, sizeof *c);
	snprintf(c->nd.op, sizeof c->nd.op, "%s", op);
	c->nd.def = task_op_find(op);
	assert_non_null(c->nd.def);
	c->nd.n_out = c->nd.def->n_out;
}

static void c_int(struct nd_case *c, const char *key, int64_t v)
{
	struct task_attr *a = &c->nd.attrs[c->nd.n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", key);
	a->kind = TASK_ATTR_INT;
	a->i = v;
}

static void c_ints(struct nd_case *c, const char *key, int n, const int64_t *v)
{
	struct task_attr *a = &c->nd.attrs[c->nd.n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", key);
	a->kind = TASK_ATTR_INTS;
	a->n_ints = n;
	memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
}

/* Adds an input of the given shape: values v, or N(0, 1) draws from r. */
static void c_in(struct nd_case *c, int rank, const int64_t *shape, const double *v,
		 struct task_rng *r)
{
	struct task_val *t = &c->in[c->n_in];
	t->rank = rank;
	t->n = 1;
	for (int i = 0; i < rank; i++) {
		t->shape[i] = shape[i];
		t->n *= shape[i];
	}
	assert_true(t->n <= MAXN);
	for (int64_t k = 0; k < t->n; k++)
		c->x[c->n_in][k] = v ? v[k] : r ? task_rng_normal(r) : 0;
	t->d = c->x[c->n_in];
	c->n_in++;
	c->nd.n_in = c->n_in;
}

static void c_infer(struct nd_case *c)
{
	struct cr_err err;
	cr_err_init(&err);
	memset(c->out, 0, sizeof c->out);
	if (c->nd.def->infer(&c->nd, c->in, c->n_in, c->out, &err))
		fail_msg("%s: infer: %s", c->nd.op, err.msg);
	for (int k = 0; k < c->nd.n_out; k++) {
		assert_true(c->out[k].n <= MAXN);
		c->out[k].d = c->y[k];
	}
}

/* Forward in double; checks output k's shape and values against want. */
static void c_expect(struct nd_case *c, int k, int rank, const int64_t *shape,
		     const double *want, double tol)
{
	c_infer(c);
	c->nd.def->fwd_d(&c->nd, c->in, c->out);
	assert_int_equal(c->out[k].rank, rank);
	for (int i = 0; i < rank; i++)
		assert_int_equal(c->out[k].shape[i], shape[i]);
	for (int64_t e = 0; e < c->out[k].n; e++)
		if (fabs(c->y[k][e] - want[e]) > tol)
			fail_msg("%s: y%d[%lld] = %.17g, expected %.17g", c->nd.op, k, (long long)e,
				 c->y[k][e], want[e]);
}

/* The float body agrees with the double one (within float rounding). */
static void c_float_matches(struct nd_case *c)
{
	static float xf[MAXIN][MAXN], yf[TASK_MAX_OUT][MAXN];
	struct task_val fin[MAXIN], fout[TASK_MAX_OUT];
	c_infer(c);
	c->nd.def->fwd_d(&c->nd, c->in, c->out);
	for (int i = 0; i < c->n_in; i++) {
		fin[i] = c->in[i];
		for (int64_t e = 0; e < c->in[i].n; e++)
			xf[i][e] = (float)c->x[i][e];
		fin[i].d = xf[i];
	}
	for (int k = 0; k < c->nd.n_out; k++) {
		fout[k] = c->out[k];
		fout[k].d = yf[k];
	}
	c->nd.def->fwd_f(&c->nd, fin, fout);
	for (int k = 0; k < c->nd.n_out; k++)
		for (int64_t e = 0; e < c->out[k].n; e++)
			if (!(fabs(yf[k][e] - c->y[k][e]) <= 1e-4 * fmax(1, fabs(c->y[k][e]))))
				fail_msg("%s (float): y%d[%lld] = %.9g, double %.17g", c->nd.op, k,
					 (long long)e, (double)yf[k][e], c->y[k][e]);
}

static double c_loss(struct nd_case *c, double dy[][MAXN])
{
	double l = 0;
	c->nd.def->fwd_d(&c->nd, c->in, c->out);
	for (int k = 0; k < c->nd.n_out; k++)
		for (int64_t e = 0; e < c->out[k].n; e++)
			if (dy[k][e] != 0) /* a masked -inf output has dy 0 (see c_fd) */
				l += dy[k][e] * c->y[k][e];
	return l;
}

/* Backward (double and float) against central differences of sum(dy * y)
 * for every element of every differentiable input. An infinite output (a
 * masked entry: a constant) gets dy 0, as the exp after it would give. */
static void c_fd(struct nd_case *c, struct task_rng *r)
{
	static double dy[TASK_MAX_OUT][MAXN], dx[MAXIN][MAXN];
	static float xf[MAXIN][MAXN], yf[TASK_MAX_OUT][MAXN], dyf[TASK_MAX_OUT][MAXN],
		dxf[MAXIN][MAXN];
	struct task_val dout[TASK_MAX_OUT], din[MAXIN], fin[MAXIN], fout[TASK_MAX_OUT],
		fdout[TASK_MAX_OUT], fdin[MAXIN];

	c_infer(c);
	c->nd.def->fwd_d(&c->nd, c->in, c->out);
	for (int k = 0; k < c->nd.n_out; k++) {
		for (int64_t e = 0; e < c->out[k].n; e++) {
			dy[k][e] = isinf(c->y[k][e]) ? 0 : task_rng_normal(r);
			dyf[k][e] = (float)dy[k][e];
		}
		dout[k] = fdout[k] = c->out[k];
		dout[k].d = dy[k];
		fdout[k].d = dyf[k];
		fout[k] = c->out[k];
		fout[k].d = yf[k];
	}
	for (int i = 0; i < c->n_in; i++) {
		memset(dx[i], 0, sizeof dx[i]);
		memset(dxf[i], 0, sizeof dxf[i]);
		din[i] = fdin[i] = fin[i] = c->in[i];
		din[i].d = (c->nd.def->grad_mask >> i & 1) ? dx[i] : NULL;
		fdin[i].d = (c->nd.def->grad_mask >> i & 1) ? dxf[i] : NULL;
		for (int64_t e = 0; e < c->in[i].n; e++)
			xf[i][e] = (float)c->x[i][e];
		fin[i].d = xf[i];
	}
	c->nd.def->fwd_d(&c->nd, c->in, c->out);
	c->nd.def->bwd_d(&c->nd, c->in, c->out, dout, din);
	c->nd.def->fwd_f(&c->nd, fin, fout);
	c->nd.def->bwd_f(&c->nd, fin, fout, fdout, fdin);
	for (int i = 0; i < c->n_in; i++) {
		if (!din[i].d)
			continue;
		for (int64_t e = 0; e < c->in[i].n; e++) {
			double keep = c->x[i][e], h = 1e-6, lp, lm, fd;
			c->x[i][e] = keep + h;
			lp = c_loss(c, dy);
			c->x[i][e] = keep - h;
			lm = c_loss(c, dy);
			c->x[i][e] = keep;
			fd = (lp - lm) / (2 * h);
			if (!(fabs(fd - dx[i][e]) <= 1e-6 * fmax(1, fabs(fd))))
				fail_msg("%s: d(in %d)[%lld]: backward %.12g, finite difference %.12g",
					 c->nd.op, i, (long long)e, dx[i][e], fd);
			if (!(fabs(dxf[i][e] - dx[i][e]) <= 2e-3 * fmax(1, fabs(dx[i][e]))))
				fail_msg("%s (float): d(in %d)[%lld]: %.9g, double %.12g", c->nd.op, i,
					 (long long)e, (double)dxf[i][e], dx[i][e]);
		}
	}
	c->nd.def->fwd_d(&c->nd, c->in, c->out);
}

#define SH(...) ((const int64_t[]){ __VA_ARGS__ })
#define V(...) ((const double[]){ __VA_ARGS__ })

static void test_cat(void **s)
{
	static struct nd_case c;
	struct task_rng r;
	(void)s;
	/* [2,1] and [2,2] along dim 1 (negative axis): rows interleave */
	c_init(&c, "cat");
	c_int(&c, "dim", -1);
	c_in(&c, 2, SH(2, 1), V(1, 2), NULL);
	c_in(&c, 2, SH(2, 2), V(3, 4, 5, 6), NULL);
	c_expect(&c, 0, 2, SH(2, 3), V(1, 3, 4, 2, 5, 6), 0);
	/* three inputs along dim 0 */
	c_init(&c, "cat");
	c_in(&c, 2, SH(1, 2), V(1, 2), NULL);
	c_in(&c, 2, SH(2, 2), V(3, 4, 5, 6), NULL);
	c_in(&c, 2, SH(1, 2), V(7, 8), NULL);
	c_expect(&c, 0, 2, SH(4, 2), V(1, 2, 3, 4, 5, 6, 7, 8), 0);
	task_rng_seed(&r, 1);
	c_init(&c, "cat");
	c_int(&c, "dim", 1);
	c_in(&c, 3, SH(2, 3, 2), NULL, &r);
	c_in(&c, 3, SH(2, 1, 2), NULL, &r);
	c_in(&c, 3, SH(2, 2, 2), NULL, &r);
	c_fd(&c, &r);
}

static void test_layout(void **s)
{
	static struct nd_case c;
	struct task_rng r;
	(void)s;
	/* transpose of [2,3] */
	c_init(&c, "transpose");
	c_int(&c, "dim0", 0);
	c_int(&c, "dim1", 1);
	c_in(&c, 2, SH(2, 3), V(1, 2, 3, 4, 5, 6), NULL);
	c_expect(&c, 0, 2, SH(3, 2), V(1, 4, 2, 5, 3, 6), 0);
	/* permute (2, 0, 1) of [2,1,2]: y[k][i][j] = x[i][j][k] */
	c_init(&c, "permute");
	c_ints(&c, "dims", 3, SH(2, 0, 1));
	c_in(&c, 3, SH(2, 1, 2), V(1, 2, 3, 4), NULL);
	c_expect(&c, 0, 3, SH(2, 2, 1), V(1, 3, 2, 4), 0);
	/* channel shuffle, groups 2, of 4 channels: split_dim -> transpose ->
	 * flatten is channels (0, 2, 1, 3) */
	c_init(&c, "split_dim");
	c_int(&c, "dim", 1);
	c_int(&c, "parts", 2);
	c_in(&c, 3, SH(1, 4, 1), V(10, 11, 12, 13), NULL);
	c_expect(&c, 0, 4, SH(1, 2, 2, 1), V(10, 11, 12, 13), 0);
	{
		double mid[4];
		memcpy(mid, c.y[0], sizeof mid);
		c_init(&c, "transpose");
		c_int(&c, "dim0", 1);
		c_int(&c, "dim1", 2);
		c_in(&c, 4, SH(1, 2, 2, 1), mid, NULL);
		c_expect(&c, 0, 4, SH(1, 2, 2, 1), V(10, 12, 11, 13), 0);
	}
	/* reshape with 0 (copy) and -1 (inferred) */
	c_init(&c, "reshape");
	c_ints(&c, "shape", 3, SH(0, -1, 2));
	c_in(&c, 3, SH(2, 3, 2), V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), NULL);
	c_expect(&c, 0, 3, SH(2, 3, 2), V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), 0);
	/* select index -1 on dim 1 (x[:, -1, :]) */
	c_init(&c, "select");
	c_int(&c, "dim", 1);
	c_int(&c, "index", -1);
	c_in(&c, 3, SH(2, 3, 1), V(1, 2, 3, 4, 5, 6), NULL);
	c_expect(&c, 0, 2, SH(2, 1), V(3, 6), 0);
	task_rng_seed(&r, 2);
	c_fd(&c, &r);
	c_init(&c, "permute");
	c_ints(&c, "dims", 4, SH(0, 2, 3, 1));
	c_in(&c, 4, SH(2, 3, 2, 5), NULL, &r);
	c_fd(&c, &r);
	c_init(&c, "reshape");
	c_ints(&c, "shape", 2, SH(-1, 6));
	c_in(&c, 3, SH(2, 3, 2), NULL, &r);
	c_fd(&c, &r);
	c_init(&c, "split_dim");
	c_int(&c, "dim", -1);
	c_int(&c, "parts", 3);
	c_in(&c, 2, SH(2, 6), NULL, &r);
	c_fd(&c, &r);
}

static void test_adaptive_avgpool(void **s)
{
	static struct nd_case c;
	struct task_rng r;
	(void)s;
	/* length 5 to 3: windows [0,2), [1,4), [3,5) */
	c_init(&c, "adaptive_avgpool");
	c_ints(&c, "output_size", 1, SH(3));
	c_in(&c, 2, SH(1, 5), V(1, 2, 3, 4, 5), NULL);
	c_expect(&c, 0, 2, SH(1, 3), V(1.5, 3, 4.5), 1e-15);
	/* 2x3 to 1x1: the mean */
	c_init(&c, "adaptive_avgpool");
	c_ints(&c, "output_size", 2, SH(1, 1));
	c_in(&c, 4, SH(1, 1, 2, 3), V(1, 2, 3, 4, 5, 6), NULL);
	c_expect(&c, 0, 4, SH(1, 1, 1, 1), V(3.5), 1e-15);
	/* 3x3 to 2x2: overlapping windows rows/cols [0,2), [1,3) */
	c_init(&c, "adaptive_avgpool");
	c_ints(&c, "output_size", 2, SH(2, 2));
	c_in(&c, 4, SH(1, 1, 3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9), NULL);
	c_expect(&c, 0, 4, SH(1, 1, 2, 2), V(3, 4, 6, 7), 1e-15);
	task_rng_seed(&r, 3);
	c_init(&c, "adaptive_avgpool");
	c_ints(&c, "output_size", 2, SH(3, 2));
	c_in(&c, 4, SH(2, 2, 7, 5), NULL, &r);
	c_fd(&c, &r);
	c_float_matches(&c);
}

static void test_normalize(void **s)
{
	static struct nd_case c;
	struct task_rng r;
	(void)s;
	/* rows (3, 4) and (0, 0): 5 and eps-clamped */
	c_init(&c, "normalize");
	c_int(&c, "dim", 1);
	c_in(&c, 2, SH(2, 2), V(3, 4, 0, 0), NULL);
	c_expect(&c, 0, 2, SH(2, 2), V(0.6, 0.8, 0, 0), 1e-15);
	/* over axes (1, 2) together: the row (1, 2, 2) has norm 3 */
	c_init(&c, "normalize");
	c_ints(&c, "dim", 2, SH(1, 2));
	c_in(&c, 3, SH(1, 3, 1), V(1, 2, 2), NULL);
	c_expect(&c, 0, 3, SH(1, 3, 1), V(1.0 / 3, 2.0 / 3, 2.0 / 3), 1e-15);
	task_rng_seed(&r, 4);
	c_init(&c, "normalize");
	c_int(&c, "dim", 1);
	c_in(&c, 3, SH(2, 5, 3), NULL, &r);
	c_fd(&c, &r);
	c_float_matches(&c);
	c_init(&c, "normalize");
	c_ints(&c, "dim", 2, SH(1, 2));
	c_in(&c, 3, SH(2, 5, 3), NULL, &r);
	c_fd(&c, &r);
	c_float_matches(&c);
}

/* One LSTM step with zero weights: every gate is its summed biases.
 * i = s(b0), f = s(b1), g = tanh(b2), o = s(b3); c = f c0 + i g;
 * h = o tanh(c). */
static void test_lstm_closed(void **s)
{
	static struct nd_case c;
	double bi[4] = { 0.5, -1, 0.25, 2 }, bh[4] = { 0.5, 0, 0.5, -1 }, c0 = 0.75, h0 = -2;
	double gi = 1 / (1 + exp(-1.0)), gf = 1 / (1 + exp(1.0)), gg = tanh(0.75),
	       go = 1 / (1 + exp(-1.0));
	double cv = gf * c0 + gi * gg, hv = go * tanh(cv);
	(void)s;
	c_init(&c, "lstm");
	c_in(&c, 3, SH(1, 1, 2), V(3, -4), NULL);   /* x [T=1, B=1, I=2] */
	c_in(&c, 3, SH(1, 1, 1), V(h0), NULL);
	c_in(&c, 3, SH(1, 1, 1), V(c0), NULL);
	c_in(&c, 2, SH(4, 2), V(0, 0, 0, 0, 0, 0, 0, 0), NULL);
	c_in(&c, 2, SH(4, 1), V(0, 0, 0, 0), NULL);
	c_in(&c, 1, SH(4), bi, NULL);
	c_in(&c, 1, SH(4), bh, NULL);
	c_expect(&c, 0, 3, SH(1, 1, 1), V(hv), 1e-15);
	c_expect(&c, 1, 3, SH(1, 1, 1), V(hv), 1e-15);
	c_expect(&c, 2, 3, SH(1, 1, 1), V(cv), 1e-15);
	/* the g gate reads x through row 2 of w_ih: w_ih[2] = (1, 0) adds x0 = 3 */
	c.x[3][4] = 1;
	gg = tanh(3.75);
	cv = gf * c0 + gi * gg;
	c_expect(&c, 2, 3, SH(1, 1, 1), V(cv), 1e-15);
}

/* One GRU step with zero weights: r = s(b_ir + b_hr), z = s(b_iz + b_hz),
 * n = tanh(b_in + r b_hn), h = (1 - z) n + z h0. */
static void test_gru_closed(void **s)
{
	static struct nd_case c;
	double bi[3] = { 1, -0.5, 0.25 }, bh[3] = { -0.5, 1, 2 }, h0 = 0.5;
	double gr = 1 / (1 + exp(-0.5)), gz = 1 / (1 + exp(-0.5)), gn = tanh(0.25 + gr * 2);
	(void)s;
	c_init(&c, "gru");
	c_in(&c, 3, SH(1, 1, 2), V(3, -4), NULL);
	c_in(&c, 3, SH(1, 1, 1), V(h0), NULL);
	c_in(&c, 2, SH(3, 2), V(0, 0, 0, 0, 0, 0), NULL);
	c_in(&c, 2, SH(3, 1), V(0, 0, 0), NULL);
	c_in(&c, 1, SH(3), bi, NULL);
	c_in(&c, 1, SH(3), bh, NULL);
	c_expect(&c, 0, 3, SH(1, 1, 1), V((1 - gz) * gn + gz * h0), 1e-15);
	/* w_hh's n row acts inside r: w_hh[2] = 1 adds h0 to W_hn h + b_hn */
	c.x[3][2] = 1;
	gn = tanh(0.25 + gr * 2.5);
	c_expect(&c, 1, 3, SH(1, 1, 1), V((1 - gz) * gn + gz * h0), 1e-15);
}

static void rnn_case(struct nd_case *c, const char *op, int64_t t, int64_t b, int64_t i,
		     int64_t h, int64_t layers, int64_t index, int reverse, int bf,
		     struct task_rng *r)
{
	int64_t g = strcmp(op, "lstm") ? 3 : 4;
	c_init(c, op);
	c_int(c, "index", index);
	c_int(c, "reverse", reverse);
	c_int(c, "batch_first", bf);
	c_in(c, 3, bf ? SH(b, t, i) : SH(t, b, i), NULL, r);
	c_in(c, 3, SH(layers, b, h), NULL, r);
	if (g == 4)
		c_in(c, 3, SH(layers, b, h), NULL, r);
	c_in(c, 2, SH(g * h, i), NULL, r);
	c_in(c, 2, SH(g * h, h), NULL, r);
	c_in(c, 1, SH(g * h), NULL, r);
	c_in(c, 1, SH(g * h), NULL, r);
	/* PyTorch's init scale, U(-1/sqrt(H), 1/sqrt(H)) ~ N(0, 0.5) here:
	 * keeps the gates off saturation so the differences are informative */
	for (int k = g == 4 ? 3 : 2; k < c->n_in; k++)
		for (int64_t e = 0; e < c->in[k].n; e++)
			c->x[k][e] *= 0.5;
}

static void test_rnn_fd(void **s)
{
	static struct nd_case c;
	struct task_rng r;
	(void)s;
	task_rng_seed(&r, 5);
	for (int v = 0; v < 4; v++) {
		rnn_case(&c, "lstm", 4, 3, 2, 3, 2, v & 1, v >> 1 & 1, v & 1, &r);
		c_fd(&c, &r);
		c_float_matches(&c);
		rnn_case(&c, "gru", 4, 3, 2, 3, 2, v & 1, v >> 1 & 1, v & 1, &r);
		c_fd(&c, &r);
		c_float_matches(&c);
	}
}

/* reverse runs the time axis backwards: reversing x and the output gives
 * the forward direction's result. */
static void test_rnn_reverse(void **s)
{
	static struct nd_case a, b;
	struct task_rng r;
	(void)s;
	for (int lstm = 0; lstm < 2; lstm++) {
		const char *op = lstm ? "lstm" : "gru";
		task_rng_seed(&r, 6);
		rnn_case(&a, op, 5, 2, 3, 2, 1, 0, 0, 0, &r);
		task_rng_seed(&r, 6);
		rnn_case(&b, op, 5, 2, 3, 2, 1, 0, 1, 0, &r);
		for (int64_t t = 0; t < 5; t++)
			memcpy(b.x[0] + t * 6, a.x[0] + (4 - t) * 6, sizeof(double) * 6);
		c_infer(&a);
		a.nd.def->fwd_d(&a.nd, a.in, a.out);
		c_infer(&b);
		b.nd.def->fwd_d(&b.nd, b.in, b.out);
		for (int64_t t = 0; t < 5; t++)
			for (int e = 0; e < 4; e++)
				assert_true(fabs(a.y[0][t * 4 + e] - b.y[0][(4 - t) * 4 + e]) < 1e-14);
		for (int e = 0; e < 4; e++)
			assert_true(fabs(a.y[1][e] - b.y[1][e]) < 1e-14);
	}
}

/* q k^T / sqrt(D), the causal mask's -inf above the diagonal, and the
 * backward: central differences without the mask; with it, the gradient is
 * the unmasked one with dy zeroed where the mask is (the masked entries are
 * constants). */
static void test_attn_scores(void **s)
{
	static struct nd_case c, m;
	static double dy[MAXN], dq[2][MAXN], dk[2][MAXN];
	struct task_rng r;
	double h = 1 / sqrt(2.0);
	(void)s;
	c_init(&c, "attn_scores");
	c_in(&c, 3, SH(1, 2, 2), V(1, 0, 0, 1), NULL);
	c_in(&c, 3, SH(1, 2, 2), V(1, 2, 3, 4), NULL);
	c_expect(&c, 0, 3, SH(1, 2, 2), V(h, 3 * h, 2 * h, 4 * h), 1e-15);
	c_int(&c, "causal", 1);
	c_infer(&c);
	c.nd.def->fwd_d(&c.nd, c.in, c.out);
	assert_true(isinf(c.y[0][1]) && c.y[0][1] < 0);
	assert_true(fabs(c.y[0][0] - h) < 1e-15 && fabs(c.y[0][2] - 2 * h) < 1e-15 &&
		    fabs(c.y[0][3] - 4 * h) < 1e-15);
	task_rng_seed(&r, 7);
	c_init(&c, "attn_scores");
	c_in(&c, 4, SH(2, 3, 5, 4), NULL, &r);
	c_in(&c, 4, SH(2, 3, 5, 4), NULL, &r);
	c_fd(&c, &r);
	c_float_matches(&c);
	/* causal backward = unmasked backward of the masked dy */
	m = c;
	for (int k = 0; k < 2; k++)
		m.in[k].d = m.x[k];
	c_int(&m, "causal", 1);
	c_infer(&m);
	c_infer(&c);
	for (int64_t e = 0; e < c.out[0].n; e++)
		dy[e] = task_rng_normal(&r);
	for (int pass = 0; pass < 2; pass++) {
		struct nd_case *p = pass ? &m : &c;
		struct task_val dout = p->out[0], din[2] = { p->in[0], p->in[1] };
		static double dym[MAXN];
		for (int64_t e = 0; e < c.out[0].n; e++) {
			int64_t i = e / 5 % 5, j = e % 5;
			dym[e] = pass || j <= i ? dy[e] : 0;
		}
		dout.d = dym;
		memset(dq[pass], 0, sizeof dq[pass]);
		memset(dk[pass], 0, sizeof dk[pass]);
		din[0].d = dq[pass];
		din[1].d = dk[pass];
		p->nd.def->fwd_d(&p->nd, p->in, p->out);
		p->nd.def->bwd_d(&p->nd, p->in, p->out, &dout, din);
	}
	for (int64_t e = 0; e < c.in[0].n; e++) {
		assert_true(fabs(dq[0][e] - dq[1][e]) < 1e-12);
		assert_true(fabs(dk[0][e] - dk[1][e]) < 1e-12);
	}
}

/* F.pad(x, (1, 0)) on the last axis, a pad in the middle, x[:, :-1],
 * x[:, 1:3] and a slice sized by a second input's extent; backward by
 * central differences. */
static void test_pad_slice(void **s)
{
	static struct nd_case c;
	struct task_rng r;
	(void)s;
	c_init(&c, "pad");
	c_int(&c, "before", 1);
	c_in(&c, 2, SH(2, 2), V(1, 2, 3, 4), NULL);
	c_expect(&c, 0, 2, SH(2, 3), V(0, 1, 2, 0, 3, 4), 0);
	c_init(&c, "pad");
	c_int(&c, "dim", 1);
	c_int(&c, "before", 1);
	c_int(&c, "after", 2);
	c_in(&c, 3, SH(1, 1, 2), V(5, 6), NULL);
	c_expect(&c, 0, 3, SH(1, 4, 2), V(0, 0, 5, 6, 0, 0, 0, 0), 0);
	c_init(&c, "slice");
	c_int(&c, "dim", 1);
	c_int(&c, "end", -1);
	c_in(&c, 2, SH(2, 3), V(1, 2, 3, 4, 5, 6), NULL);
	c_expect(&c, 0, 2, SH(2, 2), V(1, 2, 4, 5), 0);
	c_init(&c, "slice");
	c_int(&c, "dim", -1);
	c_int(&c, "start", 1);
	c_int(&c, "end", 3);
	c_in(&c, 2, SH(2, 4), V(1, 2, 3, 4, 5, 6, 7, 8), NULL);
	c_expect(&c, 0, 2, SH(2, 2), V(2, 3, 6, 7), 0);
	/* assignment[:, :K]: K from like [1, 1, 2] on the same axis */
	c_init(&c, "slice");
	c_int(&c, "dim", 2);
	c_in(&c, 3, SH(1, 2, 3), V(1, 2, 3, 4, 5, 6), NULL);
	c_in(&c, 3, SH(1, 1, 2), V(0, 0), NULL);
	c_expect(&c, 0, 3, SH(1, 2, 2), V(1, 2, 4, 5), 0);
	task_rng_seed(&r, 8);
	c_init(&c, "pad");
	c_int(&c, "dim", 1);
	c_int(&c, "before", 2);
	c_int(&c, "after", 1);
	c_in(&c, 3, SH(2, 3, 2), NULL, &r);
	c_fd(&c, &r);
	c_float_matches(&c);
	c_init(&c, "slice");
	c_int(&c, "dim", 1);
	c_int(&c, "start", -3);
	c_int(&c, "end", -1);
	c_in(&c, 3, SH(2, 5, 3), NULL, &r);
	c_fd(&c, &r);
	c_float_matches(&c);
	c_init(&c, "slice");
	c_int(&c, "dim", 2);
	c_int(&c, "start", 1);
	c_int(&c, "like_dim", 0);
	c_in(&c, 3, SH(2, 3, 5), NULL, &r);
	c_in(&c, 1, SH(3), NULL, &r);
	c_fd(&c, &r);
	c_float_matches(&c);
}

/* segsum of (1, 2, 3, 4): y[i][j] = x[j+1] + .. + x[i] below the diagonal,
 * 0 on it, -inf above; equal to cumsum[i] - cumsum[j]; the backward by
 * central differences (the -inf entries get dy 0) and on a closed form:
 * with dy all ones below the diagonal, dx[k] = k (T - k). */
static void test_segsum(void **s)
{
	static struct nd_case c;
	static double dy[MAXN], dx[MAXN];
	struct task_rng r;
	const double ni = -INFINITY;
	(void)s;
	c_init(&c, "segsum");
	c_in(&c, 1, SH(4), V(1, 2, 3, 4), NULL);
	c_expect(&c, 0, 2, SH(4, 4),
		 V(0, ni, ni, ni, 2, 0, ni, ni, 5, 3, 0, ni, 9, 7, 4, 0), 0);
	{
		struct task_val dout = c.out[0], din = c.in[0];
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
				dy[i * 4 + j] = j < i ? 1 : 0;
		memset(dx, 0, sizeof dx);
		dout.d = dy;
		din.d = dx;
		c.nd.def->bwd_d(&c.nd, c.in, c.out, &dout, &din);
		for (int k = 0; k < 4; k++)
			assert_true(fabs(dx[k] - k * (4 - k)) < 1e-15);
	}
	task_rng_seed(&r, 9);
	c_init(&c, "segsum");
	c_in(&c, 3, SH(2, 3, 6), NULL, &r);
	c_fd(&c, &r);
	{
		/* the naive form KernelBench writes: cumsum differences */
		c_infer(&c);
		c.nd.def->fwd_d(&c.nd, c.in, c.out);
		for (int row = 0; row < 6; row++) {
			double cs[6], a = 0;
			for (int k = 0; k < 6; k++)
				cs[k] = a += c.x[0][row * 6 + k];
			for (int i = 0; i < 6; i++)
				for (int j = 0; j <= i; j++)
					assert_true(fabs(c.y[0][row * 36 + i * 6 + j] - (cs[i] - cs[j])) < 1e-13);
		}
	}
	c_init(&c, "segsum");
	c_in(&c, 2, SH(3, 7), NULL, &r);
	c_fd(&c, &r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cat),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_adaptive_avgpool),
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_lstm_closed),
		cmocka_unit_test(test_gru_closed),
		cmocka_unit_test(test_rnn_fd),
		cmocka_unit_test(test_rnn_reverse),
		cmocka_unit_test(test_attn_scores),
		cmocka_unit_test(test_pad_slice),
		cmocka_unit_test(test_segsum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
