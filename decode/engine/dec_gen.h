/* dec_gen.h — generation over a dec_state (dec_gen.c): the parameters, a
 * completion, the loop for one or n samples of a prompt, and one sample's
 * state as it draws, which the engine (dec_engine.c) uses too. */
#ifndef DEC_GEN_H
#define DEC_GEN_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"
#include "decode/engine/dec_forward.h"
#include "decode/sample/dec_sample.h"
#include "decode/tok/dec_tok.h"

struct dec_gen_params {
	int max_tokens;
	struct dec_sampling samp;
	uint64_t seed;
	const char *task;           /* RNG stream key (may be NULL) */
	uint64_t sample;            /* RNG stream index */
	const char *const *stops;   /* stop strings: generation ends when the text contains one */
	int n_stops;
	int top_logprobs;           /* K per step, 0 for none */
	/* called after each generated token (may be NULL) */
	void (*on_token)(void *ctx, int n_generated);
	void *ctx;
	/* 1: each generated token's logprob into token_lp (last, so that
	 * positional initialisers of the members above still compile) */
	int logprobs;
};

struct dec_gen_out {
	int32_t *tokens;     /* [n_tokens] generated ids, the final end-of-generation token included */
	int n_tokens;
	int32_t *top_ids;    /* [n_tokens * top_logprobs] */
	float *top_lp;       /* [n_tokens * top_logprobs] */
	/* [n_tokens] (room for max_tokens) with p->logprobs, else NULL: the
	 * log-softmax of the raw logits (no temperature, no filters: as top_lp)
	 * at the token drawn. Entry k is written before n_tokens becomes k + 1,
	 * so a caller reading between engine steps sees whole entries. */
	float *token_lp;
	char *text;          /* generated text (specials rendered), cut before a stop string */
	size_t text_len;
	const char *finish;  /* "eog", "stop", "length" or "context" */
	double prefill_s, decode_s;
};

/* Generates after prompt[0..n_prompt). When prompt_logits is NULL the cache
 * is reset and the prompt prefilled; otherwise the cache must already hold
 * this prompt and prompt_logits are its last logits (samples share a
 * prefill). */
enum cr_status dec_generate(struct dec_state *s, const struct dec_tok *tok,
			    const int32_t *prompt, int n_prompt, const float *prompt_logits,
			    const struct dec_gen_params *p, struct dec_gen_out *out,
			    struct cr_err *err);
/* n samples at once (RNG streams p->sample .. p->sample + n - 1), stepped as
 * one batch over sequences 0..n-1 of s (s->n_seq and s->max_block >= n): the
 * prompt is in sequence 0 (prefilled here unless prompt_logits is given) and
 * copied to the others. Each sample's tokens are exactly those dec_generate
 * would produce for it alone. outs[n]; decode_s is the batch's time. */
enum cr_status dec_generate_n(struct dec_state *s, const struct dec_tok *tok,
			      const int32_t *prompt, int n_prompt, const float *prompt_logits,
			      const struct dec_gen_params *p, int n, struct dec_gen_out *outs,
			      struct cr_err *err);
void dec_gen_out_release(struct dec_gen_out *o);
/* Decode speed: forward passes (every generated token but the last is fed
 * back) per second of decode time. */
double dec_gen_rate(const struct dec_gen_out *o);

/* One sample being drawn: its stream, its text so far, its completion. */
struct dec_textbuf {
	char *p;
	size_t n, cap;
};
struct dec_gen_sample {
	struct dec_rng rng;
	struct dec_textbuf tb;
	struct dec_gen_out *o;
	int cap, done;
};
/* Clears o and g, allocates o's arrays for p->max_tokens tokens, seeds the
 * stream (p->seed, p->task, index); done at once when max_tokens is 0. */
enum cr_status dec_gen_sample_init(struct dec_gen_sample *g, struct dec_gen_out *o,
				   const struct dec_gen_params *p, uint64_t index, struct cr_err *err);
/* Draws the sample's next token from logits and records it (top logprobs
 * first when asked); sets done at end-of-generation, a stop string (the
 * text cut before it) or max tokens. */
enum cr_status dec_gen_take(struct dec_gen_sample *g, struct dec_sampler *smp, const struct dec_tok *tok,
			    const float *logits, int n_vocab, const struct dec_gen_params *p,
			    struct cr_err *err);
/* dec_gen_take's bookkeeping for a token chosen elsewhere (a speculative
 * step's accepted draft, a backend's draw): top logprobs and the token's
 * logprob of logits (NULL: already written at the token's place in g->o),
 * the token, the end tests. */
enum cr_status dec_gen_record(struct dec_gen_sample *g, const struct dec_tok *tok, const float *logits,
			      int n_vocab, const struct dec_gen_params *p, int32_t id, struct cr_err *err);

#endif
