/* dec_engine.h — the decoder's serving engine: requests in, completions
 * out, over one device backend (dec_be.h).
 *
 * - Paged KV cache (dec_kv.h): blocks of block_size positions in a pool of
 *   kv_mem bytes; a sequence holds a block table.
 * - Prefix sharing: the n samples of a request prefill the prompt once and
 *   hold its blocks together (the block they diverge in is copied on first
 *   write); full blocks are published in a prefix cache, so a later request
 *   with the same prefix (a conversation's next turn, the same prompt)
 *   computes only what is new.
 * - Continuous batching: every step the scheduler retires finished
 *   sequences and admits waiting ones, mixing one decode token per running
 *   sequence with prefill chunks under max_batch_tokens; a short sample
 *   never waits for a long one.
 * - Preemption: when no block is free the newest sequence gives its blocks
 *   back and is recomputed later (its tokens so far prefilled again).
 *
 * None of this changes a sample: a token's logits do not depend on batching
 * or on which blocks hold its context (dec_be.h, exactness), and sample i of
 * a request draws from the stream (seed, task, sample0 + i) alone. So with
 * greedy decoding every sample's tokens are those of decoding it alone. */
#ifndef DEC_ENGINE_H
#define DEC_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"
#include "decode/be/dec_be.h"
#include "decode/model/dec_model.h"
#include "decode/engine/dec_gen.h"

struct dec_engine_cfg {
	enum dec_device device;
	int max_seqs;          /* sequences decoding together (default 8) */
	int max_batch_tokens;  /* tokens per step, decode and prefill (default 256; >= max_seqs) */
	int max_ctx;           /* positions per sequence (required) */
	int block_size;        /* KV positions per block (default 16) */
	size_t kv_mem;         /* KV pool bytes (0: max_seqs + 1 whole contexts, at most a
	                          quarter of the memory available) */
	int n_threads;         /* CPU threads (0: the usable CPUs, at most 16) */
	int cuda_device;       /* the driver's ordinal */
	/* Speculative decoding: up to draft_tokens (0: off, at most 64; 4 with a
	 * draft model) tokens proposed per decoding sequence and step, by a draft
	 * model or by prompt lookup (the tokens
	 * that followed the latest earlier occurrence of its last 3, 2 or 1
	 * tokens) and checked by the target in that step (dec_spec_accept):
	 * greedy output is the target's own, sampled output has the target's
	 * distribution. */
	int draft_tokens;
	/* With a draft model (the same vocabulary: the caller checks the
	 * tokenizers), the drafts are its own, drawn with the request's sampling
	 * from its distribution q, which the rule then uses; its K/V live in a
	 * cache of its own under the same block ids (--kv-mem covers both). */
	const struct dec_model *draft_model;
	/* Where tokens are drawn. 0: by the backend's sample op, where the
	 * logits are (on CUDA only the ids and the requested logprobs come
	 * back); 1: on the host from the downloaded logits. Speculative
	 * decoding always draws on the host (its acceptance rule reads both
	 * distributions). Either way the same pipeline (dec_sample.h) and the
	 * same per-sample stream: on the CPU the tokens are identical. */
	int host_sample;
	/* Called between steps (may be NULL): where a caller can pause the engine. */
	void (*on_step)(void *ctx);
	void *ctx;
};

/* A request: n samples after one prompt. The caller owns it and outs[n];
 * both must stay valid until the request is done. */
struct dec_req {
	const int32_t *prompt;    /* [n_prompt] copied at submit */
	int n_prompt;
	int n;
	struct dec_gen_params p;  /* sample i draws from stream p.sample + i; p.on_token is
	                             called with the request's largest token count each step */
	const struct dec_tok *tok; /* end-of-generation and text (may be NULL: ids only) */
	struct dec_gen_out *outs; /* [n] filled; prefill_s: submit to first token, decode_s:
	                             first token to the sample's end */
	/* Called when sample i is whole in outs[i] (may be NULL). */
	void (*on_sample)(void *ctx, struct dec_req *r, int i);
	void *ctx;
	/* set by the engine */
	int prefill_tokens;       /* prompt tokens computed for it (the rest came from the cache) */
	int n_done;               /* samples finished */
};

struct dec_engine_stats {
	int64_t steps;
	int64_t decode_tokens;    /* tokens computed one per sequence */
	int64_t prefill_tokens;   /* tokens computed in prefill chunks (recompute included) */
	int64_t cached_tokens;    /* prompt tokens taken from the prefix cache */
	int64_t preemptions;
	int64_t cow_copies;       /* shared blocks copied before a write */
	int64_t evictions;        /* cached blocks reused */
	int64_t shared_blocks;    /* block references taken by forked samples */
	int64_t spec_checks;      /* target passes that checked drafts (one per sequence) */
	int64_t draft_proposed, draft_accepted;
	int n_blocks, block_size, peak_blocks;
	int free_blocks;          /* allocatable now: free, or cached and held by no sequence */
};

struct dec_engine;

/* Opens the backend for cfg->device (AUTO: CUDA when a GPU is usable, else
 * the CPU; which one and why is in dec_engine_device). */
enum cr_status dec_engine_new(const struct dec_model *m, const struct dec_engine_cfg *cfg,
			      struct dec_engine **out, struct cr_err *err);
void dec_engine_free(struct dec_engine *e);
/* "cpu" or "cuda", and for AUTO the reason the other was not taken. */
const char *dec_engine_device(const struct dec_engine *e);
const char *dec_engine_device_note(const struct dec_engine *e);

/* Queues r (its prompt copied; its samples' outputs initialised). A prompt
 * must leave room for one token (n_prompt < max_ctx). */
enum cr_status dec_engine_submit(struct dec_engine *e, struct dec_req *r, struct cr_err *err);
/* Steps until every submitted request is done. On error the requests not
 * done are dropped (their outs released). */
enum cr_status dec_engine_run(struct dec_engine *e, struct cr_err *err);
/* One step (on_step first); a caller interleaving submits with steps (a
 * serving loop) uses this. Errors as dec_engine_run's. */
enum cr_status dec_engine_step(struct dec_engine *e, struct cr_err *err);
/* Stops r's unfinished samples now; called between steps (never from a
 * callback inside one). Their sequences leave the engine — the prompt's
 * leader too, whether r waits, is in prefill, forked, preempted or drawing
 * with drafts — and give their KV blocks back (full blocks published in
 * the prefix cache stay cached, as when a sample ends). Their outs keep the
 * tokens drawn so far (token_lp, top logprobs with them; none when the
 * prompt was not done), text NULL, finish "cancelled", and are the
 * caller's to dec_gen_out_release; on_sample is not called for them, and
 * they count in r->n_done, which is then r->n. Samples already finished
 * are untouched. A no-op when r is done or was never submitted here. */
void dec_engine_cancel(struct dec_engine *e, struct dec_req *r);
/* Whether any submitted request is unfinished. */
int dec_engine_busy(const struct dec_engine *e);
const struct dec_engine_stats *dec_engine_stats(const struct dec_engine *e);

#endif
