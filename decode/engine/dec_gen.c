/* dec_gen.c — the generation loop over a dec_state (prefill → sample →
 * append until an end-of-generation token, a stop string, max tokens or a
 * full context), and what the loop and the engine share: one sample's
 * tokens, logprobs and text as they are drawn. */
#include "decode/engine/dec_gen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int tb_reserve(struct dec_textbuf *t, size_t more)
{
	if (t->n + more + 1 > t->cap) {
		size_t cap = (t->n + more + 1) * 2;
		char *p = realloc(t->p, cap);

		if (!p)
			return -1;
		t->p = p;
		t->cap = cap;
	}
	return 0;
}

/* Appends the token's text; returns -1 on allocation failure. */
static int append_piece(struct dec_textbuf *t, const struct dec_tok *tok, int32_t id)
{
	size_t n = dec_tok_piece(tok, id, NULL, 0);

	if (tb_reserve(t, n))
		return -1;
	dec_tok_piece(tok, id, t->p + t->n, n + 1);
	t->n += n;
	t->p[t->n] = 0;
	return 0;
}

/* The earliest stop string that now occurs, searching only where a new one
 * can start (from old_len - longest stop + 1); its offset, or -1. */
static long find_stop(const struct dec_textbuf *t, size_t old_len, const struct dec_gen_params *p)
{
	long best = -1;

	for (int k = 0; k < p->n_stops; k++) {
		size_t sl = strlen(p->stops[k]), from = old_len >= sl ? old_len - sl + 1 : 0;
		const char *hit;

		if (!sl)
			continue;
		hit = memmem(t->p + from, t->n - from, p->stops[k], sl);
		if (hit && (best < 0 || hit - t->p < best))
			best = hit - t->p;
	}
	return best;
}

/* Draws the sample's next token from logits and records it; sets done when
 * the sample ends (end-of-generation, stop string, max tokens). */
enum cr_status dec_gen_take(struct dec_gen_sample *g, struct dec_sampler *smp, const struct dec_tok *tok,
			   const float *logits, int n_vocab, const struct dec_gen_params *p,
			   struct cr_err *err)
{
	int32_t id;

	id = dec_sample(smp, logits, &g->rng);
	return dec_gen_record(g, tok, logits, n_vocab, p, id, err);
}

enum cr_status dec_gen_record(struct dec_gen_sample *g, const struct dec_tok *tok, const float *logits,
			      int n_vocab, const struct dec_gen_params *p, int32_t id, struct cr_err *err)
{
	struct dec_gen_out *o = g->o;
	int k = p->top_logprobs;
	size_t old = g->tb.n;
	long stop;

	if (k && logits)
		dec_top_logprobs(logits, n_vocab, k, o->top_ids + (size_t)o->n_tokens * k,
				 o->top_lp + (size_t)o->n_tokens * k);
	if (p->logprobs && logits)
		o->token_lp[o->n_tokens] = dec_token_logprob(logits, n_vocab, id);
	o->tokens[o->n_tokens++] = id;
	if (tok && dec_tok_is_eog(tok, id)) {
		o->finish = "eog";
		g->done = 1;
		return CR_OK;
	}
	if (tok && append_piece(&g->tb, tok, id))
		return cr_errf(err, CR_ENOMEM, "generate: out of memory");
	if ((stop = find_stop(&g->tb, old, p)) >= 0) {
		g->tb.n = (size_t)stop;
		g->tb.p[g->tb.n] = 0;
		o->finish = "stop";
		g->done = 1;
	} else if (o->n_tokens == g->cap) {
		g->done = 1;
	}
	return CR_OK;
}

enum cr_status dec_gen_sample_init(struct dec_gen_sample *g, struct dec_gen_out *o, const struct dec_gen_params *p,
				  uint64_t index, struct cr_err *err)
{
	int cap = p->max_tokens > 0 ? p->max_tokens : 0, k = p->top_logprobs;

	memset(o, 0, sizeof *o);
	memset(g, 0, sizeof *g);
	g->o = o;
	g->cap = cap;
	g->done = cap == 0;
	o->finish = "length";
	o->tokens = malloc((size_t)(cap ? cap : 1) * sizeof *o->tokens);
	o->top_ids = malloc((size_t)(cap && k ? cap * k : 1) * sizeof *o->top_ids);
	o->top_lp = malloc((size_t)(cap && k ? cap * k : 1) * sizeof *o->top_lp);
	if (p->logprobs && !(o->token_lp = malloc((size_t)(cap ? cap : 1) * sizeof *o->token_lp)))
		return cr_errf(err, CR_ENOMEM, "generate: out of memory");
	if (!o->tokens || !o->top_ids || !o->top_lp || tb_reserve(&g->tb, 64))
		return cr_errf(err, CR_ENOMEM, "generate: out of memory");
	g->tb.p[0] = 0;
	dec_rng_seed(&g->rng, p->seed, p->task, index);
	return CR_OK;
}

enum cr_status dec_generate_n(struct dec_state *s, const struct dec_tok *tok,
			      const int32_t *prompt, int n_prompt, const float *prompt_logits,
			      const struct dec_gen_params *p, int n, struct dec_gen_out *outs,
			      struct cr_err *err)
{
	struct dec_sampler smp = { 0 };
	struct dec_gen_sample *g = calloc((size_t)(n > 0 ? n : 1), sizeof *g);
	int n_vocab = s->m->cfg.n_vocab, *seqs = NULL, *pos = NULL, step = 0, nb = 0;
	float *logits = NULL;
	int32_t *toks = NULL;
	enum cr_status st = CR_OK;
	double t0, t_dec;

	for (int i = 0; i < n; i++)
		memset(&outs[i], 0, sizeof outs[i]);
	if (!g || n < 1 || n > s->n_seq || n > s->max_block) {
		st = g ? cr_errf(err, CR_EINTERNAL, "generate: batch of %d needs %d sequences, state has %d",
				 n, n, s->n_seq)
		       : cr_errf(err, CR_ENOMEM, "generate: out of memory");
		goto out;
	}
	if (n_prompt <= 0 || n_prompt >= s->max_ctx) {
		st = cr_errf(err, CR_EUSAGE, "prompt of %d tokens: need 1..%d", n_prompt, s->max_ctx - 1);
		goto out;
	}
	seqs = malloc((size_t)n * sizeof *seqs);
	pos = malloc((size_t)n * sizeof *pos);
	toks = malloc((size_t)n * sizeof *toks);
	logits = malloc((size_t)n * n_vocab * sizeof *logits);
	if (!seqs || !pos || !toks || !logits || (st = dec_sampler_init(&smp, &p->samp, n_vocab, err))) {
		st = st ? st : cr_errf(err, CR_ENOMEM, "generate: out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if ((st = dec_gen_sample_init(&g[i], &outs[i], p, p->sample + (uint64_t)i, err)))
			goto out;
	t0 = now_s();
	if (!prompt_logits) {
		s->seq = 0;
		dec_state_reset(s);
		if ((st = dec_forward(s, prompt, n_prompt, NULL, err)))
			goto out;
	}
	for (int i = 1; i < n; i++)
		dec_state_copy_seq(s, 0, i, n_prompt);
	for (int i = 0; i < n; i++) {
		outs[i].prefill_s = now_s() - t0;
		memcpy(logits + (size_t)i * n_vocab, prompt_logits ? prompt_logits : s->logits,
		       (size_t)n_vocab * sizeof *logits);
	}
	t0 = now_s();
	for (;;) {
		/* each live sample draws from its row: the prompt's logits at step 0,
		 * then row b of the batch it was in */
		if (step == 0) {
			for (int i = 0; i < n; i++)
				if (!g[i].done &&
				    (st = dec_gen_take(&g[i], &smp, tok, logits + (size_t)i * n_vocab, n_vocab, p, err)))
					goto out;
		} else {
			for (int b = 0; b < nb; b++)
				if ((st = dec_gen_take(&g[seqs[b]], &smp, tok, logits + (size_t)b * n_vocab, n_vocab, p, err)))
					goto out;
		}
		if (p->on_token)
			p->on_token(p->ctx, step + 1);
		/* the next batch: each live sample's newest token at its position */
		nb = 0;
		for (int i = 0; i < n; i++) {
			if (g[i].done)
				continue;
			if (n_prompt + outs[i].n_tokens > s->max_ctx) {
				outs[i].finish = "context";
				g[i].done = 1;
				continue;
			}
			seqs[nb] = i;
			pos[nb] = n_prompt + outs[i].n_tokens - 1;
			toks[nb++] = outs[i].tokens[outs[i].n_tokens - 1];
		}
		if (!nb)
			break;
		if ((st = dec_forward_batch(s, toks, seqs, pos, nb, logits, err)))
			goto out;
		step++;
	}
	t_dec = now_s() - t0;
	for (int i = 0; i < n; i++) {
		outs[i].decode_s = t_dec;
		outs[i].text = g[i].tb.p;
		outs[i].text_len = g[i].tb.n;
		g[i].tb.p = NULL;
	}
out:
	for (int i = 0; g && i < n; i++)
		free(g[i].tb.p);
	free(g);
	free(seqs);
	free(pos);
	free(toks);
	free(logits);
	dec_sampler_release(&smp);
	if (st)
		for (int i = 0; i < n; i++)
			dec_gen_out_release(&outs[i]);
	return st;
}

enum cr_status dec_generate(struct dec_state *s, const struct dec_tok *tok,
			    const int32_t *prompt, int n_prompt, const float *prompt_logits,
			    const struct dec_gen_params *p, struct dec_gen_out *out,
			    struct cr_err *err)
{
	return dec_generate_n(s, tok, prompt, n_prompt, prompt_logits, p, 1, out, err);
}

void dec_gen_out_release(struct dec_gen_out *o)
{
	free(o->tokens);
	free(o->top_ids);
	free(o->top_lp);
	free(o->token_lp);
	free(o->text);
	memset(o, 0, sizeof *o);
}


double dec_gen_rate(const struct dec_gen_out *o)
{
	return o->decode_s > 0 && o->n_tokens > 1 ? (o->n_tokens - 1) / o->decode_s : 0;
}
