/* dec_forward.c — struct dec_state: the decoder with n_seq fixed sequences
 * of max_ctx positions each, on the CPU backend through the one forward
 * (dec_graph.c). Sequence s owns KV blocks [s·B, (s+1)·B) (B blocks of
 * STATE_BLOCK positions cover max_ctx): the plain, unshared layout that
 * `decode --score`, the benchmarks and the forward's tests use (on any
 * backend: dec_state_new_dev). The engine
 * (dec_engine.c) shares and pages the same backend's blocks instead. */
#include "decode/engine/dec_forward.h"
#include "decode/cpu/dec_cpu.h"
#include "decode/cuda/dec_be_cuda.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

#define STATE_BLOCK 16

struct dec_state_priv {
	struct dec_be *be;
	struct dec_graph g;
	int max_blocks;
	int32_t *tok, *pos, *seq, *out, *btab; /* a step: [max_block] each; btab [max_block, max_blocks] */
};

static struct dec_state_priv *priv(const struct dec_state *s)
{
	return s->priv;
}

/* Row r of the step's block tables = sequence q's blocks. */
static void table_row(struct dec_state *s, int r, int q)
{
	struct dec_state_priv *p = priv(s);

	for (int j = 0; j < p->max_blocks; j++)
		p->btab[(size_t)r * p->max_blocks + j] = q * p->max_blocks + j;
}

enum cr_status dec_forward(struct dec_state *s, const int32_t *tokens, int n,
			   float *all_logits, struct cr_err *err)
{
	struct dec_state_priv *p = priv(s);
	const struct dec_config *c = &s->m->cfg;
	enum cr_status st;

	if (n <= 0)
		return cr_errf(err, CR_EUSAGE, "forward: no tokens");
	if (n > s->max_ctx - s->pos)
		return cr_errf(err, CR_EUSAGE, "context full: %d tokens + %d new > %d", s->pos, n,
			       s->max_ctx);
	for (int i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
			return cr_errf(err, CR_EINPUT, "token id %d out of range [0, %d)", tokens[i],
				       c->n_vocab);
	table_row(s, 0, s->seq);
	for (int i = 0; i < n; i += s->max_block) {
		int nb = n - i < s->max_block ? n - i : s->max_block;
		struct dec_step step = { .nb = nb, .tok = tokens + i, .pos = p->pos, .seq = p->seq,
					 .n_seq = 1, .btab = p->btab, .out = p->out };

		for (int b = 0; b < nb; b++) {
			p->pos[b] = s->pos + b;
			p->seq[b] = 0;
		}
		if (all_logits) {
			step.n_out = nb;
			for (int b = 0; b < nb; b++)
				p->out[b] = b;
		} else {
			/* only the last block's last token gives logits */
			step.n_out = i + nb == n;
			p->out[0] = nb - 1;
		}
		st = dec_graph_step(&p->g, &step, all_logits ? all_logits + (size_t)i * c->n_vocab : s->logits,
				    err);
		if (st)
			return st;
		s->pos += nb;
	}
	if (all_logits)
		memcpy(s->logits, all_logits + (size_t)(n - 1) * c->n_vocab, (size_t)c->n_vocab * sizeof(float));
	return CR_OK;
}

enum cr_status dec_forward_batch(struct dec_state *s, const int32_t *tokens, const int *seqs,
				 const int *pos, int n, float *logits, struct cr_err *err)
{
	struct dec_state_priv *p = priv(s);
	struct dec_step step = { .nb = n, .tok = tokens, .pos = p->pos, .seq = p->seq, .n_seq = n,
				 .btab = p->btab, .n_out = n, .out = p->out };

	if (n <= 0 || n > s->max_block)
		return cr_errf(err, CR_EUSAGE, "forward batch: %d tokens (1..%d)", n, s->max_block);
	for (int b = 0; b < n; b++) {
		if (seqs[b] < 0 || seqs[b] >= s->n_seq || pos[b] < 0 || pos[b] >= s->max_ctx)
			return cr_errf(err, CR_EUSAGE, "forward batch: sequence %d position %d out of range",
				       seqs[b], pos[b]);
		for (int k = 0; k < b; k++)
			if (seqs[k] == seqs[b])
				return cr_errf(err, CR_EUSAGE, "forward batch: sequence %d twice", seqs[b]);
		table_row(s, b, seqs[b]);
		p->pos[b] = pos[b];
		p->seq[b] = b;
		p->out[b] = b;
	}
	return dec_graph_step(&p->g, &step, logits, err);
}

void dec_state_copy_seq(struct dec_state *s, int from, int to, int n_pos)
{
	struct dec_state_priv *p = priv(s);
	struct cr_err e;

	if (from == to)
		return;
	cr_err_init(&e);
	/* whole blocks: positions past n_pos in the last one are rewritten
	 * before anything reads them */
	for (int j = 0; j < (n_pos + STATE_BLOCK - 1) / STATE_BLOCK; j++)
		p->be->ops->kv_copy(p->be, from * p->max_blocks + j, to * p->max_blocks + j, &e);
}

enum cr_status dec_state_new(const struct dec_model *m, int max_ctx, int max_block,
			     int n_threads, struct dec_state **out, struct cr_err *err)
{
	return dec_state_new_seqs(m, max_ctx, max_block, 1, n_threads, out, err);
}

enum cr_status dec_state_new_seqs(const struct dec_model *m, int max_ctx, int max_block, int n_seq,
				  int n_threads, struct dec_state **out, struct cr_err *err)
{
	return dec_state_new_dev(m, max_ctx, max_block, n_seq, n_threads, DEC_DEV_CPU, NULL, 0, out, err);
}

enum cr_status dec_state_new_dev(const struct dec_model *m, int max_ctx, int max_block, int n_seq,
				 int n_threads, enum dec_device dev, char *note, size_t note_cap,
				 struct dec_state **out, struct cr_err *err)
{
	struct dec_state *s = calloc(1, sizeof *s);
	struct dec_state_priv *p = calloc(1, sizeof *p);
	struct dec_be_cfg cfg = { .max_tokens = max_block, .max_out = max_block, .max_seqs = max_block,
				  .max_ctx = max_ctx, .block_size = STATE_BLOCK, .n_threads = n_threads };
	enum cr_status st = CR_OK;
	size_t mb;

	*out = NULL;
	if (!s || !p) {
		free(s);
		free(p);
		return cr_errf(err, CR_ENOMEM, "decoder state: out of memory");
	}
	s->priv = p;
	if (max_ctx <= 0 || max_block <= 0 || n_seq <= 0) {
		st = cr_errf(err, CR_EUSAGE, "decoder state: bad context %d / block %d / sequences %d",
			     max_ctx, max_block, n_seq);
		goto out;
	}
	if ((st = dec_model_check_ctx(m, max_ctx, err)))
		goto out;
	s->m = m;
	s->max_ctx = max_ctx;
	s->max_block = max_block;
	s->n_seq = n_seq;
	p->max_blocks = dec_be_max_blocks(&cfg);
	cfg.n_blocks = n_seq * p->max_blocks;
	mb = (size_t)p->max_blocks;
	if ((st = dec_be_open(m, &cfg, dev, &p->be, note, note_cap, err)) ||
	    (st = dec_graph_init(&p->g, p->be, err)))
		goto out;
	s->n_threads = p->be->cfg.n_threads;
	s->logits = malloc((size_t)m->cfg.n_vocab * sizeof *s->logits);
	p->tok = malloc((size_t)max_block * (4 + mb) * sizeof(int32_t));
	if (!s->logits || !p->tok) {
		st = cr_errf(err, CR_ENOMEM, "decoder state: out of memory");
		goto out;
	}
	p->pos = p->tok + max_block;
	p->seq = p->pos + max_block;
	p->out = p->seq + max_block;
	p->btab = p->out + max_block;
	*out = s;
	s = NULL;
out:
	dec_state_free(s);
	return st;
}

void dec_state_free(struct dec_state *s)
{
	if (!s)
		return;
	if (s->priv) {
		dec_be_free(priv(s)->be);
		free(priv(s)->tok);
		free(s->priv);
	}
	free(s->logits);
	free(s);
}

void dec_state_reset(struct dec_state *s)
{
	s->pos = 0;
}

enum cr_status dec_be_open(const struct dec_model *m, const struct dec_be_cfg *cfg, enum dec_device dev,
			   struct dec_be **out, char *note, size_t note_cap, struct cr_err *err)
{
	struct cr_err ce;
	enum cr_status st;

	*out = NULL;
	if (note_cap)
		note[0] = 0;
	if (dev == DEC_DEV_CPU)
		return dec_be_cpu_open(m, cfg, out, err);
	cr_err_init(&ce);
	if (!(st = dec_be_cuda_open(m, cfg, out, &ce))) {
		char why[256] = "";

		if (dec_be_supports(*out, m, why, sizeof why))
			return CR_OK;
		dec_be_free(*out);
		*out = NULL;
		st = cr_errf(&ce, CR_EENV, "the cuda backend does not run this model: %s", why);
	}
	if (dev == DEC_DEV_CUDA)
		return cr_errf(err, st, "%s", ce.msg);
	if (note_cap)
		snprintf(note, note_cap, "cuda not used (%s): running on the CPU", ce.msg);
	return dec_be_cpu_open(m, cfg, out, err);
}
