/* dec_impl.h — private helpers shared inside decode/: the thread pool and
 * the numeric building blocks both forwards use. */
#ifndef DEC_IMPL_H
#define DEC_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"
#include "decode/dec_model.h"
#include "decode/dec_run.h"
#include "decode/dec_sample.h"

/* A fixed set of worker threads that run one function on all threads at
 * once: fn(arg, ith, nth) with ith 0 on the calling thread. */
struct dec_pool;
typedef void (*dec_pool_fn)(void *arg, int ith, int nth);
enum cr_status dec_pool_new(int n_threads, struct dec_pool **out, struct cr_err *err);
void dec_pool_free(struct dec_pool *p);
void dec_pool_run(struct dec_pool *p, dec_pool_fn fn, void *arg);
int dec_pool_size(const struct dec_pool *p);
int dec_cpu_count(void);

/* y = x / rms(x) * w over n values. */
void dec_rmsnorm(float *y, const float *x, const float *w, int n, float eps);
/* The rotation at position pos: cs[2i], cs[2i+1] = cos, sin of
 * θ_i = pos · base^(-2i/rope_dim) / factor[i] · rope_scale, i < rope_dim/2,
 * with θ built by repeated f32 multiplication as ggml does, so angles agree
 * with llama.cpp to the bit. */
void dec_rope_cs(const struct dec_model *m, int pos, float *cs);
/* The same for a layer: local (gemma3's sliding-window layers) uses
 * cfg.rope_base_swa, no scaling and no frequency factors. */
void dec_rope_cs_layer(const struct dec_model *m, int pos, int local, float *cs);
/* The feed-forward's gated activation in place: g = act(g) * u over n,
 * act SiLU, or GELU's tanh form when cfg.ffn_gelu. */
void dec_glu(const struct dec_config *c, float *g, const float *u, int64_t n);
/* Rotates one head vector in place (see dec_config.rope_neox). */
void dec_rope(float *v, const struct dec_config *c, const float *cs);


/* One sample being generated: its RNG stream, text so far and outputs
 * (what the static batch of dec_run.c and the engine share). */
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
 * step's accepted draft, a backend's draw): top logprobs of logits (NULL:
 * already written at the token's place in g->o), the token, the end tests. */
enum cr_status dec_gen_record(struct dec_gen_sample *g, const struct dec_tok *tok, const float *logits,
			      int n_vocab, const struct dec_gen_params *p, int32_t id, struct cr_err *err);
#endif
