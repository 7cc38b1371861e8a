/* dec_sample.h — token sampling and the per-sample random stream.
 *
 * Order, applied to the raw logits of one step:
 *   1. temperature <= 0: greedy (argmax, lowest id on ties); stop here.
 *   2. logits / temperature
 *   3. top-k (k > 0): keep the k largest
 *   4. softmax over the survivors
 *   5. top-p (p < 1): keep the smallest most-likely prefix whose mass >= p
 *   6. min-p (m > 0): keep tokens with prob >= m * max prob
 *   7. renormalise and draw one token with the sample's RNG.
 * This is the order of Hugging Face's and vLLM's samplers (temperature first).
 *
 * The RNG (xoshiro256**) of a sample is seeded from (seed, task name, sample
 * index) alone, so sample i draws the same stream whatever n or batching. */
#ifndef DEC_SAMPLE_H
#define DEC_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"

struct dec_sampling {
	float temperature; /* <= 0: greedy */
	int top_k;         /* <= 0: off */
	float top_p;       /* >= 1: off */
	float min_p;       /* <= 0: off */
};

struct dec_rng {
	uint64_t s[4];
};

void dec_rng_seed(struct dec_rng *r, uint64_t seed, const char *task, uint64_t sample);
uint64_t dec_rng_next(struct dec_rng *r);
double dec_rng_uniform(struct dec_rng *r); /* [0, 1) with 53 bits */

struct dec_cand {
	int32_t id;
	float p; /* logit, then probability */
};

struct dec_sampler {
	struct dec_sampling cfg;
	int n_vocab;
	struct dec_cand *cand; /* [n_vocab] scratch */
	float *work;           /* [n_vocab] scratch: tempered logits, then exp */
};

enum cr_status dec_sampler_init(struct dec_sampler *s, const struct dec_sampling *cfg,
				int n_vocab, struct cr_err *err);
void dec_sampler_release(struct dec_sampler *s);

/* The filtered, normalised distribution of one step (steps 1-6): writes the
 * survivors to s->cand, returns their count. They are sorted by descending
 * probability when top-p is on or at most 4096 survive top-k; otherwise
 * (a plain temperature over a large vocab) they stay in id order.
 * Greedy yields one candidate with p = 1. */
int dec_sampler_dist(struct dec_sampler *s, const float *logits);
int32_t dec_sample(struct dec_sampler *s, const float *logits, struct dec_rng *rng);
/* The same draw with its uniform given (u = u53 · 2^-53): *n_kept gets the
 * survivors' count; when it is 1, u was not needed (dec_sample then leaves
 * the stream where it was). The backends' sample op on the CPU. */
int32_t dec_sample_u(struct dec_sampler *s, const float *logits, uint64_t u53, int *n_kept);

/* Speculative sampling's acceptance rule (Leviathan et al. 2023, Chen et
 * al. 2023) for draft token d at one step. p is the target's distribution
 * (s->cfg applied to logits, as dec_sample draws from); q is the draft's,
 * dense over the vocabulary (q[d] its probability of d), or NULL for a
 * point mass on d (a deterministic draft: n-gram lookup, greedy drafting).
 * Sampled: d is accepted with probability min(1, p(d)/q(d)) (one uniform);
 * on rejection a token is drawn (a second uniform) from norm(max(0, p - q)),
 * so the token returned is distributed as p whatever q is. Greedy
 * (temperature <= 0): d is accepted iff it is the target's argmax, and the
 * argmax is returned, so greedy output is the target's own. */
int32_t dec_spec_accept(struct dec_sampler *s, const float *logits, int32_t d, const float *q,
			struct dec_rng *rng, int *accepted);

/* The k most likely tokens under log-softmax of the raw logits (no
 * temperature or filters), descending: ids[k], logprobs[k]. k <= n. */
void dec_top_logprobs(const float *logits, int n, int k, int32_t *ids, float *logprobs);
/* Token id's logprob under the same log-softmax (dec_top_logprobs' value
 * for it, bit for bit): what a policy gradient needs of the token drawn. */
float dec_token_logprob(const float *logits, int n, int32_t id);

#endif
