/* dec_graph.c — the forward of the llama family (llama, qwen2, qwen3),
 * written once over the backend table of dec_be.h: which operations run in
 * which order on which buffers. What each operation computes, and on which
 * device, is the backend's (dec_be_cpu.c, dec_be_cuda.c). */
#include "decode/engine/dec_forward.h"

static size_t max2(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* a * b, SIZE_MAX on overflow (which no scratch buffer is given) */
static size_t mul(size_t a, size_t b)
{
	size_t r;

	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

enum cr_status dec_graph_init(struct dec_graph *g, struct dec_be *be, struct cr_err *err)
{
	const struct dec_config *c = &be->m->cfg;
	size_t mt = (size_t)be->cfg.max_tokens, mo = (size_t)(be->cfg.max_out ? be->cfg.max_out : 1);
	size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
	float *(*scratch)(struct dec_be *, size_t) = be->ops->scratch;

	g->be = be;
	g->x = scratch(be, mul(mt, (size_t)c->dim));
	g->xb = scratch(be, mul(mt, max2((size_t)c->dim, qd)));
	g->q = scratch(be, mul(mt, qd));
	g->k = scratch(be, mul(mt, kvd));
	g->v = scratch(be, mul(mt, kvd));
	g->hb = scratch(be, mul(mt, (size_t)c->hidden_dim));
	g->hb2 = scratch(be, mul(mt, (size_t)c->hidden_dim));
	g->xo = scratch(be, mul(mo, (size_t)c->dim));
	g->logits = scratch(be, mul(mo, (size_t)c->n_vocab));
	g->t = be->m->w.layers[0].attn_post_norm ? scratch(be, mul(mt, (size_t)c->dim)) : NULL;
	if (!g->x || !g->xb || !g->q || !g->k || !g->v || !g->hb || !g->hb2 || !g->xo || !g->logits ||
	    (be->m->w.layers[0].attn_post_norm && !g->t))
		return cr_errf(err, CR_ENOMEM, "%s backend: out of memory for the activations of %zu tokens",
			       be->ops->name, mt);
	return CR_OK;
}

/* x += W·in, or with a post-norm (gemma3) x += rmsnorm(W·in)·post. */
static void sublayer_out(struct dec_graph *g, int L, enum dec_wkind w, enum dec_wkind post, const float *in,
			 int nb)
{
	struct dec_be *be = g->be;
	const struct dec_be_ops *o = be->ops;

	if (!g->t) {
		o->matmul(be, L, 1, (const enum dec_wkind[]){ w }, (float *const[]){ g->x }, in, nb, 1);
		return;
	}
	o->matmul(be, L, 1, (const enum dec_wkind[]){ w }, (float *const[]){ g->t }, in, nb, 0);
	o->rmsnorm(be, g->t, g->t, L, post, nb);
	o->add(be, g->x, g->t, (size_t)nb * be->m->cfg.dim);
}

static void layer(struct dec_graph *g, int L, int nb)
{
	struct dec_be *be = g->be;
	const struct dec_be_ops *o = be->ops;

	o->rmsnorm(be, g->xb, g->x, L, DEC_W_ATTN_NORM, nb);
	o->matmul(be, L, 3, (const enum dec_wkind[]){ DEC_W_Q, DEC_W_K, DEC_W_V },
		  (float *const[]){ g->q, g->k, g->v }, g->xb, nb, 0);
	o->qkv_post(be, L, g->q, g->k, g->v);
	o->attention(be, L, g->q, g->xb);
	sublayer_out(g, L, DEC_W_O, DEC_W_ATTN_POST_NORM, g->xb, nb);
	o->rmsnorm(be, g->xb, g->x, L, DEC_W_FFN_NORM, nb);
	if (be->m->w.layers[L].n_expert) {
		o->moe(be, L, g->xb, g->x, nb);
		return;
	}
	o->matmul(be, L, 2, (const enum dec_wkind[]){ DEC_W_GATE, DEC_W_UP },
		  (float *const[]){ g->hb, g->hb2 }, g->xb, nb, 0);
	o->silu_mul(be, g->hb, g->hb2, nb);
	sublayer_out(g, L, DEC_W_DOWN, DEC_W_FFN_POST_NORM, g->hb, nb);
}

enum cr_status dec_graph_forward(struct dec_graph *g, const struct dec_step *st, struct cr_err *err)
{
	struct dec_be *be = g->be;
	const struct dec_be_ops *o = be->ops;
	const struct dec_config *c = &be->m->cfg;
	enum cr_status s;

	if ((s = o->set_step(be, st, err)))
		return s;
	if (!o->graph_begin || !o->graph_begin(be)) {
		o->embed(be, g->x);
		for (int L = 0; L < c->n_layers; L++)
			layer(g, L, st->nb);
		if (st->n_out) {
			o->gather(be, g->xo, g->x, c->dim);
			o->rmsnorm(be, g->xb, g->xo, -1, DEC_W_OUT_NORM, st->n_out);
			o->matmul(be, -1, 1, (const enum dec_wkind[]){ DEC_W_OUTPUT },
				  (float *const[]){ g->logits }, g->xb, st->n_out, 0);
		}
		if (o->graph_end && (s = o->graph_end(be, err)))
			return s;
	}
	return CR_OK;
}

enum cr_status dec_graph_step(struct dec_graph *g, const struct dec_step *st, float *logits,
			      struct cr_err *err)
{
	struct dec_be *be = g->be;
	enum cr_status s;

	if ((s = dec_graph_forward(g, st, err)))
		return s;
	if (!st->n_out)
		return be->ops->download(be, NULL, NULL, 0, err);
	return be->ops->download(be, logits, g->logits, (size_t)st->n_out * be->m->cfg.n_vocab, err);
}

enum cr_status dec_graph_sample(struct dec_graph *g, struct dec_draw *d, int n, struct cr_err *err)
{
	struct dec_be *be = g->be;
	enum cr_status s = CR_OK;

	if (!n)
		return be->ops->download(be, NULL, NULL, 0, err);
	for (int i = 0; i < n && !s; i += DEC_BE_MAX_DRAWS)
		s = be->ops->sample(be, g->logits, be->m->cfg.n_vocab, d + i,
				    n - i < DEC_BE_MAX_DRAWS ? n - i : DEC_BE_MAX_DRAWS, err);
	return s;
}
