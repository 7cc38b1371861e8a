/* cond.c — the reference's spread under float-level noise (cond.h). */
#include "checks/cond.h"

#include <math.h>
#include <string.h>

#include "tasks/task_exec.h"
#include "tasks/task_gen.h"
#include "tasks/task_rng.h"

static const double cond_noise[CHECK_COND_RUNS / 2] = CHECK_COND_NOISE;

/* Copies src into dst times (1 + δ), δ uniform in ±amp, drawn from r (the
 * pair's stream: both runs of a pair draw the same values, amp with one
 * sign, then the other). */
static void perturb(double *dst, const double *src, int64_t n, struct task_rng *r, double amp)
{
	for (int64_t i = 0; i < n; i++)
		dst[i] = src[i] * (1 + amp * (2 * task_rng_uniform(r) - 1));
}

struct noise {
	struct task_rng r;
	double amp;
};

/* The executor's hook: an intermediate value (or gradient) times 1 + δ. */
static void perturb_in_place(void *ctx, double *v, int64_t n)
{
	struct noise *z = ctx;
	perturb(v, v, n, &z->r, z->amp);
}

/* One perturbed reference into x, noise amplitude amp (signed: the pair's
 * stream starts again at key_p for both of its runs, one with each sign,
 * and draws as many values in each). */
static void run_one(const struct check_cond_case *cc, struct task_exec *x, uint64_t key_p,
		    double amp)
{
	const struct task *t = cc->t;
	struct noise z;
	struct task_rng *r = &z.r;

	task_rng_seed(r, key_p);
	z.amp = amp;
	/* every intermediate rounded with the same noise: a long same-sign
	 * sum followed by a cancellation (a convolution of offset inputs, then
	 * BatchNorm's mean subtracted) errs by far more than its inputs'
	 * rounding moves it */
	x->perturb = perturb_in_place;
	x->perturb_ctx = &z;
	for (int i = 0; i < t->n_tensors; i++) {
		const struct task_tensor *tt = &t->tensors[i];
		if (tt->role == TASK_OUTPUT)
			continue;
		if (task_dtype_is_float(tt->dtype))
			perturb(x->v[i].d, cc->val[i], x->v[i].n, r, amp);
		else
			memcpy(x->v[i].d, cc->val[i], sizeof(double) * (size_t)x->v[i].n);
	}
	task_exec_forward(x);
	if (cc->bwd) {
		for (int i = 0; i < t->n_tensors; i++) {
			if (t->tensors[i].role != TASK_OUTPUT)
				continue;
			/* the backward reads the forward outputs as their dtype holds them */
			task_gen_round(t->tensors[i].dtype, x->v[i].d, x->v[i].n);
			perturb(x->g[i].d, cc->dout[i], x->g[i].n, r, amp);
		}
		task_exec_backward(x);
	}
	x->perturb = NULL; /* z ends here */
	x->perturb_ctx = NULL;
}

enum cr_status check_cond_spread(const struct check_cond_case *cc, uint64_t key,
				 struct check_cond_out *out, int n_out, bool merge,
				 struct cr_err *err)
{
	struct task_exec x;
	enum cr_status st;

	if ((st = task_exec_init(&x, cc->t, &cc->dims, true, cc->bwd, err)))
		return st;
	for (int j = 0; j < n_out && !merge; j++)
		memset(out[j].spread, 0, sizeof(double) * (size_t)out[j].n);
	for (int p = 0; p < CHECK_COND_RUNS; p++) {
		/* pair p / 2 at its noise level, the second run of a pair with -δ */
		run_one(cc, &x, task_mix(key, (uint64_t)(p / 2)),
			(p % 2 ? -1.0 : 1.0) * cond_noise[p / 2] * 0x1.0p-24);
		for (int j = 0; j < n_out; j++) {
			const struct task_val *tv = out[j].grad ? &x.g[out[j].tensor] : &x.v[out[j].tensor];
			double *y = tv->d;
			int64_t n = out[j].n < tv->n ? out[j].n : tv->n;
			task_gen_round(out[j].dtype, y, n);
			for (int64_t i = 0; i < n; i++) {
				double d = fabs(y[i] - out[j].ref[i]);
				if (isfinite(d) && d > out[j].spread[i])
					out[j].spread[i] = d;
			}
		}
	}
	task_exec_release(&x);
	return CR_OK;
}
