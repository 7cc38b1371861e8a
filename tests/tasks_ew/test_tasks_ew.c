/* test_tasks_ew.c — the element-wise and reduction op families against
 * closed forms on tiny hand-computed inputs: PyTorch's constants (SELU,
 * tanh-GELU), its derivatives at kinks (hardtanh vs clamp edges,
 * hardswish, leaky/elu at 0), scan flags, first-index ties, broadcasting,
 * norms and losses. Both instantiations (double and float) are run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tasks/task_ops.h"

#define MAXN 32

/* One op call: a node with attributes and up to 3 inputs of given shapes. */
struct call {
	struct task_node nd;
	struct task_val in[4], out[1];
	double xin[3][MAXN], y[MAXN];
	float fin[3][MAXN], fy[MAXN];
};

static void attr_f(struct call *c, const char *k, double v)
{
	struct task_attr *a = &c->nd.attrs[c->nd.n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", k);
	a->kind = TASK_ATTR_FLOAT;
	a->f = v;
}

static void attr_i(struct call *c, const char *k, int64_t v)
{
	struct task_attr *a = &c->nd.attrs[c->nd.n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", k);
	a->kind = TASK_ATTR_INT;
	a->i = v;
}

static void attr_ints(struct call *c, const char *k, int n, const int64_t *v)
{
	struct task_attr *a = &c->nd.attrs[c->nd.n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", k);
	a->kind = TASK_ATTR_INTS;
	a->n_ints = n;
	memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
}

static void attr_s(struct call *c, const char *k, const char *v)
{
	struct task_attr *a = &c->nd.attrs[c->nd.n_attrs++];
	snprintf(a->key, sizeof a->key, "%s", k);
	a->kind = TASK_ATTR_STR;
	snprintf(a->s, sizeof a->s, "%s", v);
}

static void begin(struct call *c, const char *op)
{
	memset(c, 0, sizeof *c);
	c->nd.def = task_op_find(op);
	if (!c->nd.def)
		fail_msg("op %s not registered", op);
	snprintf(c->nd.op, sizeof c->nd.op, "%s", op);
}

/* Adds input k with the given shape and values. */
static void input(struct call *c, int rank, const int64_t *shape, const double *v)
{
	int k = c->nd.n_in++;
	struct task_val *t = &c->in[k];
	t->rank = rank;
	t->n = 1;
	for (int i = 0; i < rank; i++) {
		t->shape[i] = shape[i];
		t->n *= shape[i];
	}
	assert_true(t->n <= MAXN);
	memcpy(c->xin[k], v, sizeof(double) * (size_t)t->n);
}

/* Runs shape inference and the double forward; also the float forward,
 * whose result must agree to float precision. Returns the output count. */
static int64_t run(struct call *c)
{
	struct cr_err e;
	struct task_val fin[4], fout[1];
	cr_err_init(&e);
	if (c->nd.def->infer(&c->nd, c->in, c->nd.n_in, c->out, &e))
		fail_msg("%s: %s", c->nd.op, e.msg);
	for (int k = 0; k < c->nd.n_in; k++) {
		c->in[k].d = c->xin[k];
		fin[k] = c->in[k];
		fin[k].d = c->fin[k];
		for (int64_t i = 0; i < c->in[k].n; i++)
			c->fin[k][i] = (float)c->xin[k][i];
	}
	c->out[0].d = c->y;
	fout[0] = c->out[0];
	fout[0].d = c->fy;
	c->nd.def->fwd_d(&c->nd, c->in, c->out);
	c->nd.def->fwd_f(&c->nd, fin, fout);
	for (int64_t i = 0; i < c->out[0].n; i++)
		if (fabs(c->fy[i] - c->y[i]) > 1e-5 * fmax(1, fabs(c->y[i])))
			fail_msg("%s: float %g vs double %g at %lld", c->nd.op, c->fy[i], c->y[i],
				 (long long)i);
	return c->out[0].n;
}

/* Gradient of input k under upstream dy (double). */
static void grad(struct call *c, const double *dy, int k, double *dx)
{
	struct task_val dout[1], din[4];
	memset(din, 0, sizeof din);
	dout[0] = c->out[0];
	dout[0].d = (void *)dy;
	for (int i = 0; i < c->nd.n_in; i++)
		din[i] = c->in[i];
	for (int i = 0; i < c->nd.n_in; i++)
		din[i].d = NULL;
	din[k].d = dx;
	memset(dx, 0, sizeof(double) * (size_t)c->in[k].n);
	c->nd.def->bwd_d(&c->nd, c->in, c->out, dout, din);
}

static void near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol * fmax(1, fabs(want))))
		fail_msg("got %.17g, want %.17g", got, want);
}

/* unary op on a vector; y and dy/dx (dy = 1) checked */
static void unary(const char *op, int n, const double *x, const double *y, const double *d,
		  const char *k1, double v1, const char *k2, double v2)
{
	struct call c;
	double ones[MAXN], dx[MAXN];
	int64_t sh[1] = { n };
	begin(&c, op);
	if (k1)
		attr_f(&c, k1, v1);
	if (k2)
		attr_f(&c, k2, v2);
	input(&c, 1, sh, x);
	assert_int_equal(run(&c), n);
	for (int i = 0; i < n; i++) {
		near(c.y[i], y[i], 1e-14);
		ones[i] = 1;
	}
	if (!d)
		return;
	grad(&c, ones, 0, dx);
	for (int i = 0; i < n; i++)
		near(dx[i], d[i], 1e-14);
}

static void test_activations(void **s)
{
	const double sc = 1.0507009873554804934193349852946, al = 1.6732632423543772848170429916717;
	(void)s;
	unary("selu", 3, (double[]){ 1, 0, -1 }, (double[]){ sc, 0, sc * al * (exp(-1) - 1) },
	      (double[]){ sc, sc * al, sc * al * exp(-1) }, NULL, 0, NULL, 0);
	/* hardtanh and clamp (scalar bounds): no gradient at the bounds, as
	 * PyTorch 2.15 computes it */
	unary("hardtanh", 5, (double[]){ -2, -1, 0.5, 1, 2 }, (double[]){ -1, -1, 0.5, 1, 1 },
	      (double[]){ 0, 0, 1, 0, 0 }, "min", -1, "max", 1);
	unary("clamp", 5, (double[]){ -2, -1, 0.5, 1, 2 }, (double[]){ -1, -1, 0.5, 1, 1 },
	      (double[]){ 0, 0, 1, 0, 0 }, "min", -1, "max", 1);
	unary("clamp", 3, (double[]){ -2, 0, 2 }, (double[]){ 0, 0, 2 }, (double[]){ 0, 0, 1 },
	      "min", 0, NULL, 0);
	unary("relu6", 4, (double[]){ -1, 0, 6, 7 }, (double[]){ 0, 0, 6, 6 },
	      (double[]){ 0, 0, 0, 0 }, NULL, 0, NULL, 0);
	unary("leaky_relu", 3, (double[]){ -2, 0, 3 }, (double[]){ -0.02, 0, 3 },
	      (double[]){ 0.01, 0.01, 1 }, "slope", 0.01, NULL, 0);
	unary("elu", 2, (double[]){ 0, -1 }, (double[]){ 0, 2 * (exp(-1) - 1) },
	      (double[]){ 2, 2 * exp(-1) }, "alpha", 2, NULL, 0);
	unary("celu", 1, (double[]){ -1 }, (double[]){ 2 * (exp(-0.5) - 1) }, (double[]){ exp(-0.5) },
	      "alpha", 2, NULL, 0);
	unary("hardsigmoid", 4, (double[]){ -3, 0, 3, 1.5 }, (double[]){ 0, 0.5, 1, 0.75 },
	      (double[]){ 0, 1.0 / 6, 0, 1.0 / 6 }, NULL, 0, NULL, 0);
	unary("hardswish", 4, (double[]){ -3, 0, 3, 4 }, (double[]){ 0, 0, 3, 4 },
	      (double[]){ -0.5, 0.5, 1.5, 1 }, NULL, 0, NULL, 0);
	unary("softplus", 3, (double[]){ 0, 25, 10 }, (double[]){ log(2) / 2, 25, log1p(exp(20)) / 2 },
	      (double[]){ 0.5, 1, 1 / (1 + exp(-20)) }, "beta", 2, "threshold", 20);
	unary("gelu_tanh", 1, (double[]){ 1 }, (double[]){ 0.84119199060827680 }, NULL, NULL, 0, NULL, 0);
	unary("mish", 1, (double[]){ 1 }, (double[]){ tanh(log1p(exp(1))) }, NULL, NULL, 0, NULL, 0);
	unary("softsign", 2, (double[]){ -3, 0 }, (double[]){ -0.75, 0 }, (double[]){ 1.0 / 16, 1 },
	      NULL, 0, NULL, 0);
	unary("sigmoid", 1, (double[]){ 0 }, (double[]){ 0.5 }, (double[]){ 0.25 }, NULL, 0, NULL, 0);
	unary("silu", 1, (double[]){ 0 }, (double[]){ 0 }, (double[]){ 0.5 }, NULL, 0, NULL, 0);
	unary("log_sigmoid", 2, (double[]){ 0, -800 }, (double[]){ -log(2), -800 }, (double[]){ 0.5, 1 },
	      NULL, 0, NULL, 0);
	unary("abs", 3, (double[]){ -2, 0, 2 }, (double[]){ 2, 0, 2 }, (double[]){ -1, 0, 1 }, NULL, 0,
	      NULL, 0);
	unary("rsub_scalar", 1, (double[]){ 3 }, (double[]){ -2 }, (double[]){ -1 }, "value", 1, NULL, 0);
	unary("div_scalar", 1, (double[]){ 3 }, (double[]){ 1.5 }, (double[]){ 0.5 }, "value", 2, NULL, 0);
	unary("max_scalar", 3, (double[]){ 1, 2, 3 }, (double[]){ 2, 2, 3 }, (double[]){ 0, 0.5, 1 },
	      "value", 2, NULL, 0);
}

static void test_broadcast(void **s)
{
	struct call c;
	int64_t sa[2] = { 2, 1 }, sb[1] = { 3 };
	double dy[6] = { 1, 1, 1, 1, 1, 1 }, da[2], db[3];
	(void)s;
	begin(&c, "mul");
	input(&c, 2, sa, (double[]){ 2, 3 });
	input(&c, 1, sb, (double[]){ 1, 10, 100 });
	assert_int_equal(run(&c), 6);
	assert_int_equal(c.out[0].rank, 2);
	assert_int_equal(c.out[0].shape[1], 3);
	const double want[6] = { 2, 20, 200, 3, 30, 300 };
	for (int i = 0; i < 6; i++)
		near(c.y[i], want[i], 0);
	grad(&c, dy, 0, da); /* da = row sums of b */
	near(da[0], 111, 0);
	near(da[1], 111, 0);
	grad(&c, dy, 1, db); /* db = column sums of a */
	for (int i = 0; i < 3; i++)
		near(db[i], 5, 0);

	begin(&c, "maximum"); /* ties split the gradient */
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 1, 5 });
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 1, 4 });
	run(&c);
	grad(&c, dy, 0, da);
	near(da[0], 0.5, 0);
	near(da[1], 1, 0);

	struct cr_err e;
	begin(&c, "add");
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 1, 5 });
	input(&c, 1, (int64_t[]){ 3 }, (double[]){ 1, 4, 5 });
	cr_err_init(&e);
	assert_int_equal(c.nd.def->infer(&c.nd, c.in, 2, c.out, &e), CR_EINPUT);
}

static const double v6[6] = { 0.3, -1.2, 2.5, -0.7, 1.1, -2.9 };
static const double u6[6] = { -0.4, 0.9, 1.7, -2.2, 0.5, 0.8 };

static void test_shapes(void **s)
{
	struct call c;
	struct cr_err e;
	(void)s;
	begin(&c, "unsqueeze");
	attr_i(&c, "dim", -1);
	input(&c, 2, (int64_t[]){ 2, 3 }, v6);
	run(&c);
	assert_int_equal(c.out[0].rank, 3);
	assert_int_equal(c.out[0].shape[2], 1);
	near(c.y[5], v6[5], 0);
	begin(&c, "squeeze");
	attr_i(&c, "dim", 1);
	input(&c, 3, (int64_t[]){ 2, 1, 3 }, v6);
	run(&c);
	assert_int_equal(c.out[0].rank, 2);
	assert_int_equal(c.out[0].shape[1], 3);
	begin(&c, "squeeze"); /* extent 3: refused */
	attr_i(&c, "dim", 2);
	input(&c, 3, (int64_t[]){ 2, 1, 3 }, v6);
	cr_err_init(&e);
	assert_int_equal(c.nd.def->infer(&c.nd, c.in, 1, c.out, &e), CR_EINPUT);
	begin(&c, "flatten");
	input(&c, 4, (int64_t[]){ 2, 1, 3, 1 }, v6);
	run(&c);
	assert_int_equal(c.out[0].rank, 2);
	assert_int_equal(c.out[0].shape[0], 2);
	assert_int_equal(c.out[0].shape[1], 3);
}

static void scan(const char *op, int rev, int exc, const double *x, const double *want)
{
	struct call c;
	begin(&c, op);
	attr_i(&c, "dim", 1);
	attr_i(&c, "reverse", rev);
	attr_i(&c, "exclusive", exc);
	input(&c, 2, (int64_t[]){ 1, 4 }, x);
	run(&c);
	for (int i = 0; i < 4; i++)
		near(c.y[i], want[i], 0);
}

static void test_scans(void **s)
{
	const double x[4] = { 1, 2, 3, 4 };
	struct call c;
	double dx[3];
	(void)s;
	scan("cumsum", 0, 0, x, (double[]){ 1, 3, 6, 10 });
	scan("cumsum", 1, 0, x, (double[]){ 10, 9, 7, 4 });
	scan("cumsum", 0, 1, x, (double[]){ 0, 1, 3, 6 });
	scan("cumsum", 1, 1, x, (double[]){ 9, 7, 4, 0 });
	scan("cumprod", 0, 0, x, (double[]){ 1, 2, 6, 24 });
	scan("cumprod", 0, 1, x, (double[]){ 1, 1, 2, 6 });
	scan("cumprod", 1, 0, x, (double[]){ 24, 24, 12, 4 });

	/* cumprod backward through a zero: y = [2, 0, 0] */
	begin(&c, "cumprod");
	attr_i(&c, "dim", 0);
	input(&c, 1, (int64_t[]){ 3 }, (double[]){ 2, 0, 3 });
	run(&c);
	grad(&c, (double[]){ 1, 1, 1 }, 0, dx);
	near(dx[0], 1, 0);
	near(dx[1], 8, 0);
	near(dx[2], 0, 0);

	/* exclusive cumsum backward: dx_j = sum_{k > j} dy_k */
	begin(&c, "cumsum");
	attr_i(&c, "dim", 0);
	attr_i(&c, "exclusive", 1);
	input(&c, 1, (int64_t[]){ 3 }, (double[]){ 5, 6, 7 });
	run(&c);
	grad(&c, (double[]){ 1, 10, 100 }, 0, dx);
	near(dx[0], 110, 0);
	near(dx[1], 100, 0);
	near(dx[2], 0, 0);
}

static void test_reductions(void **s)
{
	struct call c;
	double dx[8];
	(void)s;
	/* first index wins ties */
	begin(&c, "argmax");
	attr_i(&c, "dim", 1);
	input(&c, 2, (int64_t[]){ 2, 4 }, (double[]){ 1, 3, 3, 2, 7, 7, 7, 7 });
	run(&c);
	near(c.y[0], 1, 0);
	near(c.y[1], 0, 0);
	begin(&c, "argmin");
	attr_i(&c, "dim", 0);
	input(&c, 1, (int64_t[]){ 4 }, (double[]){ 2, 0, 5, 0 });
	run(&c);
	near(c.y[0], 1, 0);

	/* max over one axis routes to the first index; over two it splits */
	begin(&c, "max");
	attr_i(&c, "dim", 1);
	input(&c, 2, (int64_t[]){ 1, 3 }, (double[]){ 4, 1, 4 });
	run(&c);
	near(c.y[0], 4, 0);
	grad(&c, (double[]){ 1 }, 0, dx);
	near(dx[0], 1, 0);
	near(dx[2], 0, 0);
	begin(&c, "max");
	attr_ints(&c, "dim", 2, (int64_t[]){ 0, 1 });
	input(&c, 2, (int64_t[]){ 1, 3 }, (double[]){ 4, 1, 4 });
	run(&c);
	grad(&c, (double[]){ 1 }, 0, dx);
	near(dx[0], 0.5, 0);
	near(dx[2], 0.5, 0);

	/* sum over (1, 2) of [2, 2, 2] with keepdim: shape [2, 1, 1] */
	begin(&c, "reduce_sum");
	attr_ints(&c, "dim", 2, (int64_t[]){ 2, 1 });
	attr_i(&c, "keepdim", 1);
	input(&c, 3, (int64_t[]){ 2, 2, 2 }, (double[]){ 1, 2, 3, 4, 5, 6, 7, 8 });
	run(&c);
	assert_int_equal(c.out[0].rank, 3);
	assert_int_equal(c.out[0].shape[1], 1);
	near(c.y[0], 10, 0);
	near(c.y[1], 26, 0);

	begin(&c, "mean"); /* no dim: everything, shape [1] */
	input(&c, 2, (int64_t[]){ 2, 2 }, (double[]){ 1, 2, 3, 6 });
	run(&c);
	assert_int_equal(c.out[0].n, 1);
	near(c.y[0], 3, 0);

	begin(&c, "prod");
	attr_i(&c, "dim", 0);
	input(&c, 1, (int64_t[]){ 3 }, (double[]){ 2, 0, 3 });
	run(&c);
	near(c.y[0], 0, 0);
	grad(&c, (double[]){ 1 }, 0, dx);
	near(dx[0], 0, 0);
	near(dx[1], 6, 0);
	near(dx[2], 0, 0);

	begin(&c, "logsumexp");
	attr_i(&c, "dim", 0);
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ log(1), log(3) });
	run(&c);
	near(c.y[0], log(4), 1e-15);
	grad(&c, (double[]){ 1 }, 0, dx);
	near(dx[0], 0.25, 1e-15);

	begin(&c, "log_softmax");
	attr_i(&c, "dim", 0);
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ log(1), log(3) });
	run(&c);
	near(c.y[0], log(0.25), 1e-15);
	near(c.y[1], log(0.75), 1e-15);
}

static void test_norms(void **s)
{
	struct call c;
	const double r = 1 / sqrt(1 + 1e-5);
	(void)s;
	/* batch norm of x[2, 1, 1] = [1, 3]: statistics over the batch */
	begin(&c, "batchnorm");
	input(&c, 3, (int64_t[]){ 2, 1, 1 }, (double[]){ 1, 3 });
	input(&c, 1, (int64_t[]){ 1 }, (double[]){ 2 });
	input(&c, 1, (int64_t[]){ 1 }, (double[]){ 0.5 });
	run(&c);
	near(c.y[0], -2 * r + 0.5, 1e-14);
	near(c.y[1], 2 * r + 0.5, 1e-14);

	/* instance norm of x[1, 2, 2]: per channel */
	begin(&c, "instancenorm");
	input(&c, 3, (int64_t[]){ 1, 2, 2 }, (double[]){ 1, 3, 10, 30 });
	run(&c);
	near(c.y[0], -1 / sqrt(1 + 1e-5), 1e-14);
	near(c.y[3], 10 / sqrt(100 + 1e-5), 1e-14);

	/* group norm, 2 groups of 2 channels over x[1, 4, 1] */
	begin(&c, "groupnorm");
	attr_i(&c, "groups", 2);
	input(&c, 3, (int64_t[]){ 1, 4, 1 }, (double[]){ 1, 3, 10, 30 });
	input(&c, 1, (int64_t[]){ 4 }, (double[]){ 1, 1, 1, 1 });
	input(&c, 1, (int64_t[]){ 4 }, (double[]){ 0, 0, 0, 0 });
	run(&c);
	near(c.y[1], r, 1e-14);
	near(c.y[2], -10 / sqrt(100 + 1e-5), 1e-14);

	begin(&c, "layer_norm");
	attr_i(&c, "ndim", 2);
	input(&c, 3, (int64_t[]){ 1, 1, 2 }, (double[]){ 1, 3 });
	input(&c, 2, (int64_t[]){ 1, 2 }, (double[]){ 1, 1 });
	input(&c, 2, (int64_t[]){ 1, 2 }, (double[]){ 0, 0 });
	run(&c);
	near(c.y[0], -r, 1e-14);
}

static void test_losses(void **s)
{
	struct call c;
	double dx[4];
	(void)s;
	begin(&c, "smooth_l1_loss");
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 0, 0 });
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 0.5, 2 });
	run(&c);
	near(c.y[0], (0.125 + 1.5) / 2, 1e-15);
	grad(&c, (double[]){ 1 }, 0, dx);
	near(dx[0], -0.25, 1e-15);
	near(dx[1], -0.5, 1e-15);

	/* batchmean divides by the first extent; t = 0 contributes nothing */
	begin(&c, "kl_div");
	attr_s(&c, "reduction", "batchmean");
	input(&c, 2, (int64_t[]){ 2, 2 }, (double[]){ log(0.25), log(0.75), log(0.5), -7 });
	input(&c, 2, (int64_t[]){ 2, 2 }, (double[]){ 0.5, 0.5, 1, 0 });
	run(&c);
	near(c.y[0], (0.5 * log(2) + 0.5 * log(2.0 / 3) + log(2)) / 2, 1e-15);

	/* one row: d(a,p) = ||(3,4) + eps||, d(a,n) = ||(0,1) + eps|| */
	begin(&c, "triplet_margin_loss");
	attr_f(&c, "margin", 1.0);
	input(&c, 2, (int64_t[]){ 1, 2 }, (double[]){ 3, 4 });
	input(&c, 2, (int64_t[]){ 1, 2 }, (double[]){ 0, 0 });
	input(&c, 2, (int64_t[]){ 1, 2 }, (double[]){ 3, 3 });
	run(&c);
	near(c.y[0], hypot(3 + 1e-6, 4 + 1e-6) - hypot(1e-6, 1 + 1e-6) + 1, 1e-14);
}

/* L = sum(w * y) with fixed weights; every input's backward against
 * central differences (double) */
static void fd_check(struct call *c)
{
	double w[MAXN], dx[MAXN];
	run(c);
	for (int i = 0; i < c->out[0].n; i++)
		w[i] = 0.3 + 0.1 * i;
	for (int k = 0; k < c->nd.n_in; k++) {
		if (!(c->nd.def->grad_mask & (1u << k)))
			continue;
		grad(c, w, k, dx);
		for (int64_t i = 0; i < c->in[k].n; i++) {
			double keep = c->xin[k][i], h = 1e-6, lp = 0, lm = 0;
			c->xin[k][i] = keep + h;
			c->nd.def->fwd_d(&c->nd, c->in, c->out);
			for (int q = 0; q < c->out[0].n; q++)
				lp += w[q] * c->y[q];
			c->xin[k][i] = keep - h;
			c->nd.def->fwd_d(&c->nd, c->in, c->out);
			for (int q = 0; q < c->out[0].n; q++)
				lm += w[q] * c->y[q];
			c->xin[k][i] = keep;
			if (fabs((lp - lm) / (2 * h) - dx[i]) > 1e-6)
				fail_msg("%s: d in%d[%lld]: backward %.12g, finite difference %.12g", c->nd.op,
					 k, (long long)i, dx[i], (lp - lm) / (2 * h));
		}
	}
}


static void fd_unary(const char *op)
{
	struct call c;
	begin(&c, op);
	input(&c, 2, (int64_t[]){ 2, 3 }, v6);
	fd_check(&c);
}

static void test_finite_differences(void **s)
{
	static const char *un[] = { "sigmoid", "tanh", "hardtanh", "relu6", "leaky_relu", "elu",
		"selu", "celu", "gelu_tanh", "softplus", "softsign", "silu", "mish", "hardsigmoid",
		"hardswish", "log_sigmoid", "exp", "abs", "square", "neg", "reciprocal", "erf",
		"identity", NULL };
	static const char *bin[] = { "add", "sub", "mul", "div", "maximum", "minimum", NULL };
	static const char *red[] = { "reduce_sum", "mean", "prod", "max", "min", "log_softmax",
		"logsumexp", "cumsum", "cumprod", NULL };
	struct call c;
	(void)s;
	for (int i = 0; un[i]; i++)
		fd_unary(un[i]);
	for (int i = 0; bin[i]; i++) { /* [2,3] against a broadcast [3] */
		begin(&c, bin[i]);
		input(&c, 2, (int64_t[]){ 2, 3 }, v6);
		input(&c, 1, (int64_t[]){ 3 }, u6);
		fd_check(&c);
	}
	for (int i = 0; red[i]; i++)
		for (int rev = 0; rev < 2; rev++)
			for (int exc = 0; exc < 2; exc++) {
				begin(&c, red[i]);
				attr_i(&c, "dim", 1);
				attr_i(&c, "reverse", rev);
				attr_i(&c, "exclusive", exc);
				input(&c, 2, (int64_t[]){ 2, 3 }, v6);
				fd_check(&c);
			}
	begin(&c, "cosine_similarity");
	attr_i(&c, "dim", 1);
	input(&c, 2, (int64_t[]){ 2, 3 }, v6);
	input(&c, 2, (int64_t[]){ 2, 3 }, u6);
	fd_check(&c);
	begin(&c, "groupnorm");
	attr_i(&c, "groups", 2);
	input(&c, 3, (int64_t[]){ 1, 2, 3 }, v6);
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 1.5, -0.5 });
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 0.2, 0.1 });
	fd_check(&c);
	begin(&c, "batchnorm");
	input(&c, 3, (int64_t[]){ 3, 2, 1 }, v6);
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 1.5, -0.5 });
	input(&c, 1, (int64_t[]){ 2 }, (double[]){ 0.2, 0.1 });
	fd_check(&c);
	begin(&c, "smooth_l1_loss");
	input(&c, 2, (int64_t[]){ 2, 3 }, v6);
	input(&c, 2, (int64_t[]){ 2, 3 }, u6);
	fd_check(&c);
	begin(&c, "triplet_margin_loss");
	attr_f(&c, "margin", 3.0);
	input(&c, 2, (int64_t[]){ 2, 3 }, v6);
	input(&c, 2, (int64_t[]){ 2, 3 }, u6);
	input(&c, 2, (int64_t[]){ 2, 3 }, (double[]){ 1, 2, 3, 4, 5, 6 });
	fd_check(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_activations),
		cmocka_unit_test(test_broadcast),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_scans),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_norms),
		cmocka_unit_test(test_losses),
		cmocka_unit_test(test_finite_differences),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
