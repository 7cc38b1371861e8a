/* task_exec.c — the graph executor behind references and baselines. */
#include "tasks/task_exec.h"

#include <stdlib.h>
#include <string.h>

enum cr_status task_exec_init(struct task_exec *x, const struct task *t,
			      const struct task_dimset *d, bool dbl, bool grads,
			      struct cr_err *err)
{
	size_t es = dbl ? sizeof(double) : sizeof(float), off = 0;
	int64_t total = 0;
	char *p;

	size_t nv = (size_t)t->n_values, nt = (size_t)t->n_tensors;

	memset(x, 0, sizeof *x);
	x->t = t;
	x->dims = *d;
	x->dbl = dbl;
	x->vals = calloc(1, 2 * nv * sizeof *x->v + nt * (sizeof *x->src + sizeof *x->src_dt) + 1);
	if (!x->vals)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory for the executor", t->name);
	x->v = x->vals;
	x->g = x->v + nv;
	x->src = (const void **)(x->g + nv);
	x->src_dt = (enum task_dtype *)(x->src + nt);
	/* every count checked (SPEC §2): a dim set from the command line or
	 * a drawn shape is no more trusted than a file */
	if (task_infer(t, d, "dims", x->v, NULL, err)) {
		task_exec_release(x);
		return CR_EINPUT;
	}
	for (int i = 0; i < t->n_values; i++) {
		bool g = grads && (i >= t->n_tensors || t->tensors[i].role == TASK_OUTPUT ||
				   t->tensors[i].grad);
		int64_t b;
		x->g[i] = x->v[i];
		x->g[i].d = NULL;
		/* n <= TASK_MAX_NUMEL: no step can wrap, checked all the same */
		if (!task_mul(x->v[i].n, (int64_t)es, &b) || !task_add(b, 63, &b) ||
		    !task_mul(b & ~(int64_t)63, g ? 2 : 1, &b) || !task_add(total, b, &b)) {
			task_exec_release(x);
			return cr_errf(err, CR_EINPUT, "%s: the executor's size overflows", t->path);
		}
		total = b;
	}
	x->mem = calloc(1, (size_t)total + 1);
	if (!x->mem) {
		task_exec_release(x);
		return cr_errf(err, CR_ENOMEM, "%s: cannot allocate %lld bytes for the executor",
			       t->name, (long long)total);
	}
	p = x->mem;
	for (int i = 0; i < t->n_values; i++) {
		bool g = grads && (i >= t->n_tensors || t->tensors[i].role == TASK_OUTPUT ||
				   t->tensors[i].grad);
		x->v[i].d = p + off;
		off += ((size_t)x->v[i].n * es + 63) & ~(size_t)63;
		if (g) {
			x->g[i].d = p + off;
			off += ((size_t)x->v[i].n * es + 63) & ~(size_t)63;
		}
	}
	return CR_OK;
}

void task_exec_release(struct task_exec *x)
{
	free(x->mem);
	free(x->vals);
	x->mem = x->vals = NULL;
	x->v = x->g = NULL;
	x->src = NULL;
	x->src_dt = NULL;
}

void task_exec_bind(struct task_exec *x, int i, void *ptr)
{
	if (!x->dbl && x->t->tensors[i].dtype != TASK_F32) {
		x->src[i] = ptr;
		x->src_dt[i] = x->t->tensors[i].dtype;
	} else {
		x->v[i].d = ptr;
	}
}

void task_exec_bind_grad(struct task_exec *x, int i, void *ptr)
{
	x->g[i].d = ptr;
}

static void convert_sources(struct task_exec *x)
{
	for (int i = 0; i < x->t->n_tensors; i++) {
		float *dst = x->v[i].d;
		if (!x->src[i])
			continue;
		if (x->src_dt[i] == TASK_I64)
			for (int64_t k = 0; k < x->v[i].n; k++)
				dst[k] = (float)((const int64_t *)x->src[i])[k];
		else if (x->src_dt[i] == TASK_I32)
			for (int64_t k = 0; k < x->v[i].n; k++)
				dst[k] = (float)((const int32_t *)x->src[i])[k];
	}
}

void task_exec_forward(struct task_exec *x)
{
	convert_sources(x);
	for (int n = 0; n < x->t->n_nodes; n++) {
		const struct task_node *nd = &x->t->nodes[n];
		struct task_val in[TASK_MAX_IN], out[TASK_MAX_OUT];
		for (int k = 0; k < nd->n_in; k++)
			in[k] = x->v[nd->in[k]];
		for (int k = 0; k < nd->n_out; k++)
			out[k] = x->v[nd->out[k]];
		(x->dbl ? nd->def->fwd_d : nd->def->fwd_f)(nd, in, out);
		for (int k = 0; x->dbl && x->perturb && k < nd->n_out; k++)
			if (nd->out[k] >= x->t->n_tensors)
				x->perturb(x->perturb_ctx, out[k].d, out[k].n);
	}
}

void task_exec_backward(struct task_exec *x)
{
	const struct task *t = x->t;
	size_t es = x->dbl ? sizeof(double) : sizeof(float);

	convert_sources(x);
	for (int i = 0; i < t->n_values; i++)
		if (x->g[i].d && !(i < t->n_tensors && t->tensors[i].role == TASK_OUTPUT))
			memset(x->g[i].d, 0, (size_t)x->g[i].n * es);
	for (int n = t->n_nodes - 1; n >= 0; n--) {
		const struct task_node *nd = &t->nodes[n];
		struct task_val in[TASK_MAX_IN], out[TASK_MAX_OUT], dout[TASK_MAX_OUT], din[TASK_MAX_IN];
		for (int k = 0; k < nd->n_in; k++) {
			in[k] = x->v[nd->in[k]];
			din[k] = x->g[nd->in[k]];
			if (!(nd->def->grad_mask & (1u << k)))
				din[k].d = NULL;
		}
		for (int k = 0; k < nd->n_out; k++) {
			out[k] = x->v[nd->out[k]];
			dout[k] = x->g[nd->out[k]];
		}
		(x->dbl ? nd->def->bwd_d : nd->def->bwd_f)(nd, in, out, dout, din);
		for (int k = 0; x->dbl && x->perturb && k < nd->n_in; k++)
			if (din[k].d && nd->in[k] >= t->n_tensors)
				x->perturb(x->perturb_ctx, din[k].d, din[k].n);
	}
}
