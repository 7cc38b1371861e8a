/* test_tasks.c — the task registry: loader errors on bad files, reference
 * ops against closed forms, and every registered task's backward against
 * central finite differences in double. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tasks/task_exec.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"
#include "tasks/task_rng.h"

static const char *good =
	"{\"dims\": {\"B\": 4, \"D\": 8}, \"cpu_dims\": {\"B\": 4, \"D\": 8},"
	" \"check_dims\": [{\"B\": 1, \"D\": 1}, {\"B\": 3, \"D\": 7}, {\"B\": 7, \"D\": 33}],"
	" \"tensors\": {\"x\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"B\", \"D\"], \"init\": \"normal\"},"
	" \"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"B\", \"D\"]}},"
	" \"graph\": [{\"op\": \"softmax\", \"in\": [\"x\"], \"out\": [\"y\"], \"dim\": -1}]}";

/* Writes text to a temp file, loads it, returns the status and message. */
static enum cr_status load_text(const char *text, char *msg, size_t cap)
{
	char path[] = "/tmp/crucible-task-XXXXXX";
	int fd = mkstemp(path);
	struct task t;
	struct cr_err e;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_err_init(&e);
	enum cr_status st = task_load(&t, path, "test/t", &e);
	snprintf(msg, cap, "%s", e.msg);
	if (st == CR_OK)
		task_release(&t);
	unlink(path);
	return st;
}

/* Replaces the first occurrence of from in good by to. */
static void variant(char *out, size_t cap, const char *from, const char *to)
{
	const char *p = strstr(good, from);
	assert_non_null(p);
	snprintf(out, cap, "%.*s%s%s", (int)(p - good), good, to, p + strlen(from));
}

static void expect_error(const char *from, const char *to, const char *needle)
{
	char text[4096], msg[1024];
	variant(text, sizeof text, from, to);
	assert_int_equal(load_text(text, msg, sizeof msg), CR_EINPUT);
	if (!strstr(msg, needle))
		fail_msg("message '%s' lacks '%s'", msg, needle);
}

static void test_loader_good(void **s)
{
	char msg[1024];
	(void)s;
	assert_int_equal(load_text(good, msg, sizeof msg), CR_OK);
}

static void test_loader_errors(void **s)
{
	char msg[1024];
	(void)s;
	assert_int_equal(load_text("{\"dims\": {\n\"B\": }", msg, sizeof msg), CR_EINPUT);
	assert_non_null(strstr(msg, ":2:")); /* the JSON line */
	expect_error("\"graph\"", "\"grpah\"", "unknown key \"grpah\"");
	expect_error("\"op\": \"softmax\"", "\"op\": \"sofmax\"", "unknown op \"sofmax\"");
	expect_error("\"in\": [\"x\"]", "\"in\": [\"z\"]", "'z' is neither a tensor");
	expect_error("\"dtype\": \"f32\"", "\"dtype\": \"f33\"", "tensors.x.dtype");
	expect_error("\"init\": \"normal\"", "\"init\": \"gaussian\"", "unknown init \"gaussian\"");
	expect_error("{\"B\": 7, \"D\": 33}]", "{\"B\": 7}]", "check_dims[2]: has 1 dims");
	expect_error(", {\"B\": 7, \"D\": 33}]", "]", "check_dims: expected an array of 3");
	expect_error("\"shape\": [\"B\", \"D\"]}}", "\"shape\": [\"B\"]}}", "produces a different shape");
	expect_error("\"D\": 8}, \"cpu", "\"D\": 0}, \"cpu", "dims.D: expected a positive integer");
	expect_error("\"shape\": [\"B\", \"D\"], \"init\"", "\"shape\": [\"B\", \"Q\"], \"init\"", "unknown dim 'Q'");
	expect_error("\"dim\": -1}", "\"dim\": 5}", "out of range");
	expect_error("\"out\": [\"y\"]", "\"out\": [\"w\"]", "output is not written");
	expect_error("\"role\": \"input\"", "\"role\": \"inptu\"", "not input, param or output");
}

/* kaiming's fan_in: the product of all but the first axis, a named dim,
 * or a literal (a depthwise 3x3 weight declared [G, M/G, 1, 3, 3] has
 * fan_in 9, not its trailing product); draws lie within 1/sqrt(fan_in)
 * (kaiming_relu: sqrt(6/fan_in), kaiming_linear: sqrt(3/fan_in)) and
 * reach near it. */
static void test_kaiming_fan(void **s)
{
	static const char *const inits[] = { "kaiming", "kaiming(B)", "kaiming(9)",
					      "kaiming_relu", "kaiming_linear" };
	const double bound[] = { 1 / sqrt(33.0), 1 / sqrt(7.0), 1 / 3.0,
				 sqrt(6 / 33.0), sqrt(3 / 33.0) };
	char text[4096], w[256];
	double v[7 * 33];
	(void)s;
	for (int k = 0; k < 5; k++) {
		char path[] = "/tmp/crucible-task-XXXXXX";
		struct task t;
		struct cr_err e;
		int fd, wi;
		double top = 0;
		snprintf(w, sizeof w,
			 "\"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"B\", \"D\"]},"
			 " \"w\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [\"B\", \"D\"], \"init\": \"%s\"}}",
			 inits[k]);
		variant(text, sizeof text,
			"\"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"B\", \"D\"]}}", w);
		fd = mkstemp(path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
		close(fd);
		cr_err_init(&e);
		if (task_load(&t, path, "test/t", &e))
			fail_msg("%s: %s", inits[k], e.msg);
		unlink(path);
		wi = task_find_tensor(&t, "w");
		assert_true(wi >= 0);
		task_gen_tensor(&t, wi, &t.checks[2], TASK_PROF_OWN, 3, v); /* B 7, D 33 */
		for (int i = 0; i < 7 * 33; i++) {
			assert_true(fabs(v[i]) <= bound[k]);
			top = fmax(top, fabs(v[i]));
		}
		assert_true(top > 0.9 * bound[k]);
		task_release(&t);
	}
	snprintf(w, sizeof w, "\"init\": \"kaiming(0)\"}");
	expect_error("\"init\": \"normal\"}", w, "unknown dim '0'");
}

/* A task of n_tensors tensors (x, params p0.., y, all [D]) and n_ops ops:
 * op k adds p[k mod params] to the previous value, so y = x + the sum. */
static char *big_task(int n_tensors, int n_ops)
{
	size_t cap = 512 + 96 * (size_t)n_tensors + 80 * (size_t)n_ops, n;
	char *s = malloc(cap);
	int np = n_tensors - 2;
	assert_non_null(s);
	n = (size_t)snprintf(s, cap, "{\"dims\": {\"D\": 3}, \"cpu_dims\": {\"D\": 3},"
			     " \"check_dims\": [{\"D\": 1}, {\"D\": 2}, {\"D\": 3}], \"backward\": true,"
			     " \"tensors\": {\"x\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"D\"], \"init\": \"normal\"},"
			     " \"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"D\"]}");
	for (int i = 0; i < np; i++)
		n += (size_t)snprintf(s + n, cap - n, ", \"p%d\": {\"role\": \"param\", \"dtype\": \"f32\","
				      " \"shape\": [\"D\"], \"init\": \"normal\"}", i);
	n += (size_t)snprintf(s + n, cap - n, "}, \"graph\": [");
	for (int k = 0; k < n_ops; k++) {
		char prev[16], out[16];
		snprintf(prev, sizeof prev, k ? "v%d" : "x", k - 1);
		snprintf(out, sizeof out, k == n_ops - 1 ? "y" : "v%d", k);
		n += (size_t)snprintf(s + n, cap - n, "%s{\"op\": \"add\", \"in\": [\"%s\", \"p%d\"], \"out\": [\"%s\"]}",
				      k ? ", " : "", prev, k % np, out);
	}
	snprintf(s + n, cap - n, "]}");
	assert_true(strlen(s) < cap - 1);
	return s;
}

/* A task at the limits (TASK_MAX_TENSORS tensors, TASK_MAX_NODES ops)
 * loads and runs, forward and backward; one tensor or one op more is
 * refused, naming the file and the limit. */
static void test_loader_limits(void **s)
{
	char path[] = "/tmp/crucible-task-XXXXXX", msg[1024], want[256];
	char *text = big_task(TASK_MAX_TENSORS, TASK_MAX_NODES);
	int fd = mkstemp(path);
	struct task t;
	struct task_exec x;
	struct cr_err e;
	(void)s;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	free(text);
	cr_err_init(&e);
	if (task_load(&t, path, "test/big", &e))
		fail_msg("%s", e.msg);
	unlink(path);
	assert_int_equal(t.n_tensors, TASK_MAX_TENSORS);
	assert_int_equal(t.n_nodes, TASK_MAX_NODES);
	assert_int_equal(t.n_values, TASK_MAX_TENSORS + TASK_MAX_NODES - 1);
	assert_int_equal(task_exec_init(&x, &t, &t.checks[2], true, true, &e), CR_OK);
	double want_y[3] = { 0 };
	for (int i = 0; i < t.n_tensors; i++) {
		if (t.tensors[i].role == TASK_OUTPUT)
			continue;
		task_gen_tensor(&t, i, &t.checks[2], TASK_PROF_OWN, 3, x.v[i].d);
	}
	int y = task_find_tensor(&t, "y"), xi = task_find_tensor(&t, "x");
	for (int k = 0; k < 3; k++)
		want_y[k] = ((double *)x.v[xi].d)[k];
	for (int k = 0; k < TASK_MAX_NODES; k++) {
		char pn[16];
		snprintf(pn, sizeof pn, "p%d", k % (TASK_MAX_TENSORS - 2));
		for (int q = 0; q < 3; q++)
			want_y[q] += ((double *)x.v[task_find_tensor(&t, pn)].d)[q];
	}
	task_exec_forward(&x);
	for (int q = 0; q < 3; q++)
		assert_true(fabs(((double *)x.v[y].d)[q] - want_y[q]) < 1e-12 * (1 + fabs(want_y[q])));
	/* d p_j = dy times the number of ops that add p_j */
	for (int q = 0; q < 3; q++)
		((double *)x.g[y].d)[q] = 1.0;
	task_exec_backward(&x);
	assert_true(((double *)x.g[task_find_tensor(&t, "p0")].d)[0] ==
		    (double)((TASK_MAX_NODES + TASK_MAX_TENSORS - 3) / (TASK_MAX_TENSORS - 2)));
	assert_true(((double *)x.g[xi].d)[1] == 1.0);
	task_exec_release(&x);
	task_release(&t);

	text = big_task(TASK_MAX_TENSORS + 1, 4);
	assert_int_equal(load_text(text, msg, sizeof msg), CR_EINPUT);
	free(text);
	snprintf(want, sizeof want, ": tensors: %d tensors, at most %d", TASK_MAX_TENSORS + 1, TASK_MAX_TENSORS);
	if (!strstr(msg, want) || !strstr(msg, "/tmp/crucible-task-"))
		fail_msg("message '%s' lacks the file or '%s'", msg, want);
	text = big_task(8, TASK_MAX_NODES + 1);
	assert_int_equal(load_text(text, msg, sizeof msg), CR_EINPUT);
	free(text);
	snprintf(want, sizeof want, ": graph: %d ops, at most %d", TASK_MAX_NODES + 1, TASK_MAX_NODES);
	if (!strstr(msg, want) || !strstr(msg, "/tmp/crucible-task-"))
		fail_msg("message '%s' lacks the file or '%s'", msg, want);
}

/* Runs a one-op graph on given inputs in double. */
static void run1(const char *path_json, const double *const *in, double *out)
{
	char path[] = "/tmp/crucible-task-XXXXXX";
	int fd = mkstemp(path);
	struct task t;
	struct task_exec x;
	struct cr_err e;
	assert_int_equal(write(fd, path_json, strlen(path_json)), (ssize_t)strlen(path_json));
	close(fd);
	cr_err_init(&e);
	if (task_load(&t, path, "test/t", &e))
		fail_msg("%s", e.msg);
	unlink(path);
	assert_int_equal(task_exec_init(&x, &t, &t.checks[0], true, false, &e), CR_OK);
	int k = 0;
	for (int i = 0; i < t.n_tensors; i++)
		if (t.tensors[i].role != TASK_OUTPUT)
			memcpy(x.v[i].d, in[k++], sizeof(double) * (size_t)x.v[i].n);
	task_exec_forward(&x);
	for (int i = 0; i < t.n_tensors; i++)
		if (t.tensors[i].role == TASK_OUTPUT)
			memcpy(out, x.v[i].d, sizeof(double) * (size_t)x.v[i].n);
	task_exec_release(&x);
	task_release(&t);
}

static void test_closed_forms(void **s)
{
	char msg[1024], buf[4096];
	double y[8];
	(void)s;
	(void)msg;
	/* softmax([0, ln 2]) = [1/3, 2/3] */
	{
		double x[2] = { 0, log(2.0) };
		const double *in[] = { x };
		variant(buf, sizeof buf, "{\"B\": 1, \"D\": 1}, {\"B\": 3", "{\"B\": 1, \"D\": 2}, {\"B\": 3");
		run1(buf, in, y);
		assert_true(fabs(y[0] - 1.0 / 3) < 1e-15 && fabs(y[1] - 2.0 / 3) < 1e-15);
	}
	/* gelu(1) = 0.5 (1 + erf(1/sqrt 2)) = 0.8413447460685429 */
	{
		double x[2] = { 1, -1 };
		const double *in[] = { x };
		char b2[4096];
		variant(b2, sizeof b2, "{\"B\": 1, \"D\": 1}, {\"B\": 3", "{\"B\": 1, \"D\": 2}, {\"B\": 3");
		char *p = strstr(b2, "\"op\": \"softmax\"");
		memcpy(p, "\"op\": \"gelu\",   ", 16);
		run1(b2, in, y);
		assert_true(fabs(y[0] - 0.8413447460685429) < 1e-15);
		assert_true(fabs(y[1] + 0.15865525393145707) < 1e-15);
	}
	/* layer norm of [1, 3], w = 1, b = 0: [-1, 1] / sqrt(1 + 1e-5) */
	{
		const char *ln =
			"{\"dims\": {\"D\": 2}, \"cpu_dims\": {\"D\": 2}, \"check_dims\": [{\"D\": 2}, {\"D\": 3}, {\"D\": 4}],"
			" \"tensors\": {\"x\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [1, \"D\"], \"init\": \"normal\"},"
			" \"w\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [\"D\"], \"init\": \"ones\"},"
			" \"b\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [\"D\"], \"init\": \"zeros\"},"
			" \"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [1, \"D\"]}},"
			" \"graph\": [{\"op\": \"layernorm\", \"in\": [\"x\", \"w\", \"b\"], \"out\": [\"y\"], \"eps\": 1e-5}]}";
		double x[2] = { 1, 3 }, w[2] = { 1, 1 }, b[2] = { 0, 0 };
		const double *in[] = { x, w, b };
		run1(ln, in, y);
		assert_true(fabs(y[0] + 1 / sqrt(1 + 1e-5)) < 1e-15 && fabs(y[1] - 1 / sqrt(1 + 1e-5)) < 1e-15);
	}
	/* cross entropy of uniform logits over C classes is log C */
	{
		const char *ce =
			"{\"dims\": {\"B\": 2, \"C\": 4}, \"cpu_dims\": {\"B\": 2, \"C\": 4}, \"check_dims\": [{\"B\": 2, \"C\": 4}, {\"B\": 1, \"C\": 4}, {\"B\": 3, \"C\": 4}],"
			" \"tensors\": {\"l\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"B\", \"C\"], \"init\": \"normal\"},"
			" \"t\": {\"role\": \"input\", \"dtype\": \"i64\", \"shape\": [\"B\"], \"init\": \"indices[0,C)\"},"
			" \"loss\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [1]}},"
			" \"graph\": [{\"op\": \"cross_entropy\", \"in\": [\"l\", \"t\"], \"out\": [\"loss\"]}]}";
		double l[8] = { 0.5, 0.5, 0.5, 0.5, -2, -2, -2, -2 }, tg[2] = { 3, 0 };
		const double *in[] = { l, tg };
		run1(ce, in, y);
		assert_true(fabs(y[0] - log(4.0)) < 1e-15);
	}
	/* matmul [[1,2],[3,4]] . [[5,6],[7,8]] = [[19,22],[43,50]] */
	{
		const char *mm =
			"{\"dims\": {\"M\": 2}, \"cpu_dims\": {\"M\": 2}, \"check_dims\": [{\"M\": 2}, {\"M\": 3}, {\"M\": 5}],"
			" \"tensors\": {\"a\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"M\", 2], \"init\": \"normal\"},"
			" \"b\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [2, 2], \"init\": \"normal\"},"
			" \"c\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"M\", 2]}},"
			" \"graph\": [{\"op\": \"matmul\", \"in\": [\"a\", \"b\"], \"out\": [\"c\"]}]}";
		double a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 };
		const double *in[] = { a, b };
		run1(mm, in, y);
		assert_true(y[0] == 19 && y[1] == 22 && y[2] == 43 && y[3] == 50);
	}
}

static double fd_loss(struct task_exec *x, const struct task *t)
{
	double acc = 0;
	task_exec_forward(x);
	for (int o = 0; o < t->n_tensors; o++)
		if (t->tensors[o].role == TASK_OUTPUT)
			for (int64_t m = 0; m < x->v[o].n; m++)
				acc += ((double *)x->g[o].d)[m] * ((double *)x->v[o].d)[m];
	return acc;
}

/* One directional difference: u drawn over every element of the tensors
 * marked in pick, (L(v + hu) - L(v - hu)) / 2h against g . u; a step moves
 * every element, so across thousands of ReLU and max-pool kinks one may be
 * crossed: smaller steps (fewer crossings) before calling it a mismatch. */
static int fd_direction(struct task_exec *x, const struct task *t, struct task_rng *r,
			const bool *pick, const char *what)
{
	double **keep = calloc((size_t)t->n_tensors, sizeof *keep), **u = calloc((size_t)t->n_tensors, sizeof *u);
	double gu = 0, mag = 0, rms = 0, fd = 0, h, lp, lm;
	int64_t cnt = 0;
	int bad = 0;
	assert_non_null(keep);
	assert_non_null(u);
	for (int i = 0; i < t->n_tensors; i++) {
		int64_t n = x->v[i].n;
		double *v = x->v[i].d, *g = x->g[i].d;
		if (!pick[i])
			continue;
		keep[i] = malloc(sizeof(double) * (size_t)n);
		u[i] = malloc(sizeof(double) * (size_t)n);
		assert_non_null(keep[i]);
		assert_non_null(u[i]);
		memcpy(keep[i], v, sizeof(double) * (size_t)n);
		for (int64_t k = 0; k < n; k++) {
			u[i][k] = task_rng_normal(r);
			gu += g[k] * u[i][k];
			mag += fabs(g[k] * u[i][k]);
			rms += v[k] * v[k];
		}
		cnt += n;
	}
	for (int step = 0; step < 3; step++) {
		h = pow(10, -6 - step) * fmax(1.0, sqrt(rms / (double)(cnt ? cnt : 1)));
		for (int side = 0; side < 2; side++) {
			for (int i = 0; i < t->n_tensors; i++)
				for (int64_t k = 0; pick[i] && k < x->v[i].n; k++)
					((double *)x->v[i].d)[k] = keep[i][k] + (side ? -h : h) * u[i][k];
			if (side)
				lm = fd_loss(x, t);
			else
				lp = fd_loss(x, t);
		}
		fd = (lp - lm) / (2 * h);
		if (fabs(fd - gu) <= 1e-5 * fmax(1.0, mag))
			break;
	}
	if (fabs(fd - gu) > 1e-5 * fmax(1.0, mag)) {
		print_error("%s: d%s . u: backward %.12g, finite difference %.12g\n", t->name, what, gu, fd);
		bad = 1;
	}
	for (int i = 0; i < t->n_tensors; i++) {
		if (pick[i])
			memcpy(x->v[i].d, keep[i], sizeof(double) * (size_t)x->v[i].n);
		free(keep[i]);
		free(u[i]);
	}
	free(keep);
	free(u);
	return bad;
}

/* Directional form for tasks whose every check shape is large (whole
 * networks on fixed 224x224 images, or KernelBench's literal widths):
 * two random directions per differentiable input, 4 forwards per input
 * instead of 2 per probed element, and every element of the gradient takes
 * part. Past 16 differentiable tensors (a whole network's hundreds of
 * params) two directions over all of them at once, then two on each of the
 * inputs and of 8 params drawn at random. */
static int fd_directional(struct task_exec *x, const struct task *t, struct task_rng *r)
{
	bool *pick = calloc((size_t)t->n_tensors, sizeof *pick);
	int n_grad = 0, n_param = 0, bad = 0;
	assert_non_null(pick);
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role != TASK_OUTPUT && t->tensors[i].grad) {
			n_grad++;
			n_param += t->tensors[i].role == TASK_PARAM;
		}
	for (int i = 0; i < t->n_tensors && !bad; i++) {
		if (t->tensors[i].role == TASK_OUTPUT || !t->tensors[i].grad)
			continue;
		/* a param of a large task: 8 in n_param on average */
		if (n_grad > 16 && t->tensors[i].role == TASK_PARAM &&
		    task_rng_next(r) % (uint64_t)n_param >= 8)
			continue;
		memset(pick, 0, sizeof *pick * (size_t)t->n_tensors);
		pick[i] = true;
		for (int q = 0; q < 2 && !bad; q++)
			bad = fd_direction(x, t, r, pick, t->tensors[i].name);
	}
	free(pick);
	return bad;
}

/* L = sum(dout * out); checks dL/dinput from backward against central
 * differences on up to 64 random elements of every differentiable input
 * (whole networks with dozens of params: 640 probes over all of them, at
 * least 8 per input, or 2 past 80 inputs); directional differences
 * (fd_directional) where no check shape is small. */
static int fd_task(const struct task *t)
{
	const struct task_dimset *d = &t->checks[0];
	struct task_exec x;
	struct cr_err e;
	struct task_rng r;
	int bad = 0;
	bool small = false;

	/* the largest check shape with at most 4096 elements per input; when
	 * none is, the one of the fewest elements */
	int64_t least = -1;
	for (int s = 0; s < t->n_checks; s++) {
		bool fits = true;
		int64_t all = 0;
		for (int i = 0; i < t->n_tensors; i++) {
			int64_t n = task_tensor_numel(t, i, &t->checks[s]);
			fits &= n <= 4096;
			all += n;
		}
		if (fits) {
			d = &t->checks[s];
			small = true;
		} else if (!small && (least < 0 || all < least)) {
			d = &t->checks[s];
			least = all;
		}
	}
	cr_err_init(&e);
	if (task_exec_init(&x, t, d, true, true, &e)) {
		print_error("%s: %s\n", t->name, e.msg);
		return 1;
	}
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role != TASK_OUTPUT)
			task_gen_tensor(t, i, d, TASK_PROF_OWN, 7, x.v[i].d);
	task_rng_seed(&r, 99);
	task_exec_forward(&x);
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role == TASK_OUTPUT)
			for (int64_t k = 0; k < x.v[i].n; k++)
				((double *)x.g[i].d)[k] = task_rng_normal(&r);
	task_exec_backward(&x);
	if (!small) {
		bad = fd_directional(&x, t, &r);
		task_exec_release(&x);
		return bad;
	}
	int n_grad = 0, per;
	for (int i = 0; i < t->n_tensors; i++)
		n_grad += t->tensors[i].role != TASK_OUTPUT && t->tensors[i].grad;
	per = n_grad ? 640 / n_grad : 64;
	/* at least 8 per input, but past 80 inputs (ResNet101's 315) 640 in all,
	 * at least 2 each */
	per = per > 64 ? 64 : per >= 8 ? per : n_grad <= 80 ? 8 : per < 2 ? 2 : per;
	for (int i = 0; i < t->n_tensors && !bad; i++) {
		double *v = x.v[i].d, *g = x.g[i].d;
		if (t->tensors[i].role == TASK_OUTPUT || !t->tensors[i].grad)
			continue;
		for (int q = 0; q < per && q < x.v[i].n; q++) {
			int64_t k = x.v[i].n <= per ? q : (int64_t)(task_rng_next(&r) % (uint64_t)x.v[i].n);
			double keep = v[k], fd = 0;
			/* in a deep network a step can cross a ReLU or max-pool kink
			 * somewhere downstream: smaller steps before calling it a
			 * mismatch (as fd_directional) */
			for (int step = 0; step < 3; step++) {
				double h = pow(10, -6 - step) * fmax(1.0, fabs(keep)), lp = 0, lm = 0;
				for (int side = 0; side < 2; side++) {
					double acc = 0;
					v[k] = keep + (side ? -h : h);
					task_exec_forward(&x);
					for (int o = 0; o < t->n_tensors; o++)
						if (t->tensors[o].role == TASK_OUTPUT)
							for (int64_t m = 0; m < x.v[o].n; m++)
								acc += ((double *)x.g[o].d)[m] * ((double *)x.v[o].d)[m];
					if (side)
						lm = acc;
					else
						lp = acc;
				}
				fd = (lp - lm) / (2 * h);
				if (fabs(fd - g[k]) <= 1e-5 * fmax(1.0, fabs(fd)))
					break;
			}
			v[k] = keep;
			if (!(fabs(fd - g[k]) <= 1e-5 * fmax(1.0, fabs(fd)))) {
				print_error("%s: d%s[%lld]: backward %.12g, finite difference %.12g\n",
					    t->name, t->tensors[i].name, (long long)k, g[k], fd);
				bad = 1;
				break;
			}
		}
	}
	task_exec_release(&x);
	return bad;
}

static void test_backward_fd(void **s)
{
	struct task *ts = NULL;
	int n = 0, bad = 0, checked = 0;
	struct cr_err e;
	(void)s;
	cr_err_init(&e);
	if (task_registry_load(NULL, &ts, &n, &e))
		fail_msg("%s", e.msg);
	assert_true(n >= 7);
	for (int i = 0; i < n; i++)
		if (ts[i].backward) {
			bad += fd_task(&ts[i]);
			checked++;
		}
	print_message("finite differences: %d tasks with a backward checked, %d failed\n", checked, bad);
	task_list_free(ts, n);
	assert_int_equal(bad, 0);
}

static uint64_t test_r64(void *ctx)
{
	return task_rng_next(ctx);
}

static bool test_is_prime(int64_t v)
{
	if (v < 2)
		return false;
	for (int64_t q = 2; q * q <= v; q++)
		if (v % q == 0)
			return false;
	return true;
}

/* Whether [lo, hi] holds a member of class cls, and whether v is one. */
static bool class_possible(enum task_shape_class cls, int64_t lo, int64_t hi)
{
	for (int64_t v = lo; v <= hi && v <= lo + 64; v++)
		if ((cls == TASK_SHAPE_ALIGNED && v % 8 == 0) || (cls == TASK_SHAPE_PRIME && test_is_prime(v)) ||
		    (cls == TASK_SHAPE_MID8 && v % 8 == 0 && v % 32) || (cls == TASK_SHAPE_RAGGED && v % 8))
			return true;
	return false;
}

static bool class_member(enum task_shape_class cls, int64_t v, int64_t lo, int64_t hi)
{
	switch (cls) {
	case TASK_SHAPE_ALIGNED: /* a multiple of 32 wherever the range holds one */
		return v % 8 == 0 && (v % 32 == 0 || (hi / 32) * 32 < lo);
	case TASK_SHAPE_PRIME: return test_is_prime(v);
	case TASK_SHAPE_MID8: return v % 8 == 0 && v % 32;
	default: return v % 8 != 0;
	}
}

/* The stages' schedule: two shapes cover multiples of 8, 16 and 32
 * (ALIGNED is a multiple of 32), primes and odd sizes every time; one
 * shape (--quick) is one of the first two. */
static void test_shape_class_pick(void **s)
{
	int seen[TASK_SHAPE_CLASSES] = { 0 };
	(void)s;
	assert_int_equal(task_shape_class_pick(0, 2, 12345), TASK_SHAPE_ALIGNED);
	assert_int_equal(task_shape_class_pick(1, 2, 12345), TASK_SHAPE_PRIME);
	assert_int_equal(task_shape_class_pick(2, 4, 7), TASK_SHAPE_MID8);
	assert_int_equal(task_shape_class_pick(3, 4, 7), TASK_SHAPE_RAGGED);
	for (uint64_t w = 0; w < 64; w++) {
		enum task_shape_class c = task_shape_class_pick(0, 1, w * 0x9e3779b97f4a7c15ull);
		assert_true(c == TASK_SHAPE_ALIGNED || c == TASK_SHAPE_PRIME);
		seen[c]++;
		seen[task_shape_class_pick(5, 8, w * 0x9e3779b97f4a7c15ull)]++;
	}
	for (int c = 0; c < TASK_SHAPE_CLASSES; c++)
		assert_true(seen[c] > 0);
}

/* Every registry task admits drawn shapes (issue 17, item 14) of every
 * class (issue 28, item 6): 100 runs of the stages' schedule per class (up
 * to 64 attempts each) all find one, each within range, every free dim a
 * member of its class where its range holds one and the draw had neither
 * shrunk its range nor divided it by the listed values' common factor
 * (channels by groups): a multiple of 32 (ALIGNED; a multiple of 8 where
 * no 32 fits), a prime, 8 or 16 times an odd number, a non-multiple of 8.
 * Every declared shape consistent (task_gen_shape runs the graph's shape
 * inference), at most the budget of elements. Catches a draw that stops
 * making a class (the old one never drew a multiple of 8), one that leaves
 * the range, and a class the tasks' shape rules refuse (no shape found). */
static void test_drawn_shapes(void **s)
{
	struct task *ts = NULL;
	int n = 0, bad = 0;
	struct cr_err e;
	struct task_rng r;
	(void)s;
	cr_err_init(&e);
	if (task_registry_load(NULL, &ts, &n, &e))
		fail_msg("%s", e.msg);
	task_rng_seed(&r, 17);
	for (int i = 0; i < n; i++) {
		const struct task *t = &ts[i];
		struct task_shape_range sr;
		int free_dims = 0;
		task_shape_range(t, &sr);
		for (int k = 0; k < t->n_dims; k++)
			free_dims += sr.kind[k] == 1;
		for (int cls = 0; cls < TASK_SHAPE_CLASSES; cls++) {
			int ok = 0, outside = 0, member = 0, tries = 0;
			for (int q = 0; q < 100; q++) {
				struct task_dimset d;
				int64_t total = 0;
				int a = 0;
				while (a < 64 && !task_gen_shape(t, &sr, a, (enum task_shape_class)cls, test_r64, &r, &d))
					a++;
				tries += a + 1;
				if (a == 64)
					continue;
				ok++;
				for (int k = 0; k < t->n_dims; k++) {
					if (sr.kind[k] == 1 && (d.v[k] < sr.lo[k] || d.v[k] > sr.hi[k]))
						fail_msg("%s: dim %s = %lld outside [%lld, %lld]", t->name, t->dim_names[k],
							 (long long)d.v[k], (long long)sr.lo[k], (long long)sr.hi[k]);
					if (sr.kind[k] == 0 && d.v[k] != t->cpu.v[k])
						fail_msg("%s: fixed dim %s moved", t->name, t->dim_names[k]);
					if (sr.kind[k] != 1 || a >= 8 || ((a & 1) && sr.gcd[k] > 1) ||
					    !class_possible((enum task_shape_class)cls, sr.lo[k], sr.hi[k]))
						continue;
					if (class_member((enum task_shape_class)cls, d.v[k], sr.lo[k], sr.hi[k]))
						member++;
					else
						outside++;
				}
				for (int k = 0; k < t->n_tensors; k++)
					total += task_tensor_numel(t, k, &d);
				assert_true(total <= sr.budget);
				struct task_exec x;
				struct cr_err e2;
				cr_err_init(&e2);
				if (q < 2 && task_exec_init(&x, t, &d, true, false, &e2) == CR_OK)
					task_exec_release(&x);
				else if (q < 2)
					fail_msg("%s: drawn shape rejected by the executor: %s", t->name, e2.msg);
			}
			if (outside)
				fail_msg("%s: class %d: %d drawn dims outside their class (%d in it)", t->name, cls,
					 outside, member);
			if (ok < 100 || free_dims == 0) {
				print_message("%s: class %d: %d of 100 draws found a shape, %d free dims\n", t->name,
					      cls, ok, free_dims);
				bad++;
			}
			if (tries > 400)
				print_message("%s: class %d: %.1f attempts per drawn shape\n", t->name, cls,
					      tries / 100.0);
		}
	}
	task_list_free(ts, n);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loader_good),
		cmocka_unit_test(test_loader_errors),
		cmocka_unit_test(test_kaiming_fan),
		cmocka_unit_test(test_loader_limits),
		cmocka_unit_test(test_closed_forms),
		cmocka_unit_test(test_backward_fd),
		cmocka_unit_test(test_shape_class_pick),
		cmocka_unit_test(test_drawn_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
