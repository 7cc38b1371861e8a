/* dec_be.c — what every backend of dec_be.h shares: a layer's weight by
 * kind, the check of a sample op's draws, the KV block size, freeing, the
 * support test, and the --device value. Nothing here knows a backend by
 * name: choosing one is the engine's (engine/dec_forward.c, dec_be_open). */
#include "decode/be/dec_be.h"

#include <stdio.h>
#include <string.h>

const struct dec_mat *dec_wmat(const struct dec_model *m, int layer, enum dec_wkind k)
{
	const struct dec_layer *l = layer >= 0 ? &m->w.layers[layer] : NULL;

	switch (k) {
	case DEC_W_Q: return &l->wq;
	case DEC_W_K: return &l->wk;
	case DEC_W_V: return &l->wv;
	case DEC_W_O: return &l->wo;
	case DEC_W_GATE: return &l->w_gate;
	case DEC_W_UP: return &l->w_up;
	case DEC_W_DOWN: return &l->w_down;
	case DEC_W_TOK_EMBD: return &m->w.tok_embd;
	case DEC_W_OUTPUT: return &m->w.output;
	default: return NULL;
	}
}

enum cr_status dec_be_check_draws(const struct dec_be *be, const struct dec_draw *d, int n, int width,
				  struct cr_err *err)
{
	if (n < 1 || n > DEC_BE_MAX_DRAWS || width < 1)
		return cr_errf(err, CR_EINTERNAL, "%s backend: %d draws from rows of %d", be->ops->name, n, width);
	for (int i = 0; i < n; i++)
		if (d[i].row < 0 || d[i].row >= be->cfg.max_out || d[i].n_logprobs < 0 ||
		    d[i].n_logprobs > DEC_MAX_LOGPROBS)
			return cr_errf(err, CR_EINTERNAL, "%s backend: draw from row %d with %d logprobs",
				       be->ops->name, d[i].row, d[i].n_logprobs);
	return CR_OK;
}

size_t dec_be_block_bytes(const struct dec_model *m, int block_size)
{
	const struct dec_config *c = &m->cfg;

	return (size_t)2 * c->n_layers * block_size * c->n_kv_heads * c->head_dim * sizeof(uint16_t);
}

void dec_be_free(struct dec_be *be)
{
	if (be)
		be->ops->free(be);
}

int dec_be_supports(const struct dec_be *be, const struct dec_model *m, char *why, size_t cap)
{
	if (be->ops->supports)
		return be->ops->supports(m, why, cap);
	if (m->cfg.n_expert || m->cfg.arch == DEC_ARCH_GEMMA3) {
		snprintf(why, cap, "%s needs %s, which it has no kernels for", m->cfg.arch_name,
			 m->cfg.n_expert ? "mixture-of-experts layers" : "gemma3's sliding windows, post-norms and GELU");
		return 0;
	}
	return 1;
}

enum cr_status dec_device_parse(const char *s, enum dec_device *dev, struct cr_err *err)
{
	if (!strcmp(s, "auto"))
		*dev = DEC_DEV_AUTO;
	else if (!strcmp(s, "cpu"))
		*dev = DEC_DEV_CPU;
	else if (!strcmp(s, "cuda"))
		*dev = DEC_DEV_CUDA;
	else
		return cr_errf(err, CR_EUSAGE, "--device: expected cpu, cuda or auto, got '%s'", s);
	return CR_OK;
}
