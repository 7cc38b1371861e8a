/* dec_be.h — the decoder's device backends: one table of the forward's
 * operations per device (CPU, CUDA), in ggml's spirit. The forward itself
 * (dec_graph.c) is written once over this table; the KV-cache manager
 * (dec_kv.c) and the scheduler (dec_engine.c) know nothing of the device.
 *
 * Memory. A backend holds, in its own memory (host for the CPU, the GPU's
 * for CUDA):
 *   - the model's weights (the CPU reads struct dec_model's packed copy; a
 *     GPU backend uploads them at open);
 *   - the paged KV cache: per layer, K and V pools of n_blocks blocks of
 *     block_size positions × kv_dim f16 values (kv_dim = n_kv_heads ·
 *     head_dim), so position p of a sequence whose block table is t lives in
 *     block t[p / block_size], row p % block_size;
 *   - activation scratch: f32 buffers handed out by scratch(), row-major
 *     [tokens, width] with rows packed (stride = width);
 *   - the current step's indices (set_step).
 * Pointers returned by scratch() are in the backend's address space: the
 * caller passes them back to ops and never dereferences them (except on the
 * CPU, where they are host memory).
 *
 * Ordering and errors. Ops are issued in program order on one queue (the
 * CUDA backend's stream) and may run asynchronously; they return nothing.
 * A failure inside an op (a sticky CUDA error) is reported by the next call
 * that returns a status: set_step, download, kv_copy or graph_end, naming
 * the failing kernel. Only one thread uses a backend at a time.
 *
 * Exactness contract (what the engine relies on): every op computes each
 * token's row from that token's inputs alone, with the same arithmetic
 * whatever else is in the step (how many tokens, which sequences, prefill or
 * decode). So a token's logits and cache entries do not depend on batching,
 * chunking or which blocks hold its context, and a cached block can be
 * reused by any sequence with the same prefix. */
#ifndef DEC_BE_H
#define DEC_BE_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"
#include "decode/model/dec_model.h"
#include "decode/sample/dec_sample.h"

/* Which weight of a layer (layer >= 0) or of the model (layer == -1). */
enum dec_wkind {
	DEC_W_ATTN_NORM, /* [dim] f32 */
	DEC_W_Q,         /* [q_dim, dim] */
	DEC_W_K,         /* [kv_dim, dim] */
	DEC_W_V,         /* [kv_dim, dim] */
	DEC_W_O,         /* [dim, q_dim] */
	DEC_W_FFN_NORM,  /* [dim] f32 */
	DEC_W_GATE,      /* [hidden, dim] */
	DEC_W_UP,        /* [hidden, dim] */
	DEC_W_DOWN,      /* [dim, hidden] */
	DEC_W_ATTN_POST_NORM, /* [dim] f32 (gemma3) */
	DEC_W_FFN_POST_NORM,  /* [dim] f32 (gemma3) */
	/* layer == -1 */
	DEC_W_TOK_EMBD,  /* [n_vocab, dim] */
	DEC_W_OUT_NORM,  /* [dim] f32 */
	DEC_W_OUTPUT,    /* [n_vocab, dim] (tok_embd when tied) */
	DEC_W_N
};

/* The matrix of a matmul weight (Q, K, V, O, GATE, UP, DOWN, TOK_EMBD,
 * OUTPUT); NULL for the norm vectors. */
const struct dec_mat *dec_wmat(const struct dec_model *m, int layer, enum dec_wkind k);

struct dec_be_cfg {
	int max_tokens;  /* tokens per step at most: rows of the activations */
	int max_out;     /* rows of logits per step at most (<= max_tokens) */
	int max_seqs;    /* sequences per step at most: rows of the block tables */
	int max_ctx;     /* positions per sequence at most */
	int block_size;  /* positions per KV block (a power of two) */
	int n_blocks;    /* KV pool size, blocks */
	int n_threads;   /* CPU: worker threads (<= 0: the usable CPUs, at most 16) */
	int device;      /* CUDA: the driver's device ordinal */
};

/* Blocks per sequence at most: the width of a block-table row. */
static inline int dec_be_max_blocks(const struct dec_be_cfg *c)
{
	return (c->max_ctx + c->block_size - 1) / c->block_size;
}

/* One step, host side, filled by the caller. Token b belongs to sequence
 * row seq[b] of btab and sits at position pos[b] of it; it attends to
 * positions 0..pos[b] of that sequence (its own included), whose K/V must be
 * in the cache by the time attention runs (earlier steps, or earlier in this
 * step: a prefill chunk's tokens attend to each other). Positions of one
 * sequence within a step are consecutive and ascending. out[] lists the
 * tokens whose logits are wanted, ascending. */
struct dec_step {
	int nb;                /* tokens, 1..max_tokens */
	const int32_t *tok;    /* [nb] ids */
	const int32_t *pos;    /* [nb] */
	const int32_t *seq;    /* [nb] row of btab */
	int n_seq;             /* rows of btab, 1..max_seqs */
	const int32_t *btab;   /* [n_seq, dec_be_max_blocks] physical blocks, -1 past the end */
	int n_out;             /* 0..max_out */
	const int32_t *out;    /* [n_out] token indices */
};

/* One token to draw from a row of the step's logits (the sample op). The
 * uniform is drawn by the caller from the sample's stream; a draw that
 * finds one survivor does not use it, and the caller puts it back (so the
 * stream advances as dec_sample's does). */
struct dec_draw {
	int32_t row;              /* logits row, < the step's n_out */
	struct dec_sampling samp;
	uint64_t u53;             /* the uniform: u = u53 · 2^-53 (dec_rng_next >> 11) */
	int n_logprobs;           /* K: the K most likely under the raw logits, 0..DEC_MAX_LOGPROBS */
	int32_t *top_ids;         /* [K] host, written when K > 0 */
	float *top_lp;            /* [K] host */
	int want_lp;              /* 1: lp wanted (a log-sum-exp over the row more) */
	/* results */
	int32_t id;
	int n_kept;               /* tokens left by the filters; <= 1: u was not used */
	float lp;                 /* with want_lp: id's log-softmax under the raw logits, as
	                             dec_token_logprob (the top logprobs' normaliser) */
};
#define DEC_BE_MAX_DRAWS 256  /* draws per sample call at most */
#define DEC_MAX_LOGPROBS 1024

struct dec_be_ops;

/* A backend instance: one model on one device. Backends embed this first. */
struct dec_be {
	const struct dec_be_ops *ops;
	const struct dec_model *m;
	struct dec_be_cfg cfg;
};

struct dec_be_ops {
	const char *name; /* "cpu", "cuda" */
	void (*free)(struct dec_be *be);
	/* f32 [n] in the backend's memory, 256-byte aligned, alive until free;
	 * NULL when out of memory. */
	float *(*scratch)(struct dec_be *be, size_t n);
	/* Copies the step's indices in (the caller's arrays may change after);
	 * checks them (a position past max_ctx, a block out of the pool, a
	 * missing block for a position: CR_EINTERNAL naming it). */
	enum cr_status (*set_step)(struct dec_be *be, const struct dec_step *st, struct cr_err *err);

	/* The forward's operations over the current step (nb tokens). */
	/* x[b] = tok_embd[tok[b]] as f32, times cfg.embd_scale when set (gemma3) */
	void (*embed)(struct dec_be *be, float *x);
	/* y[b] = x[b] / rms(x[b]) * w, rows of dim, b < nb (w: a norm weight);
	 * y may be x */
	void (*rmsnorm)(struct dec_be *be, float *y, const float *x, int layer, enum dec_wkind w,
			int nb);
	/* out[k][b] (+)= W_k · in[b] for k < nw (1..3), b < nb: the weights
	 * share one input ([nb, cols]); out[k] is [nb, rows of W_k]. With add
	 * (nw == 1 only) the product is added to out, which saves a pass. */
	void (*matmul)(struct dec_be *be, int layer, int nw, const enum dec_wkind *w,
		       float *const *out, const float *in, int nb, int add);
	/* Per token, in order: q, k, v biases (qwen2); per-head RMS norm of q and
	 * k (qwen3, gemma3); RoPE of q and k at the token's position (a layer
	 * with swa set: cfg.rope_base_swa, dec_rope_cs_layer); k and v stored as
	 * f16 in the cache at the token's slot. q [nb, q_dim], k, v [nb, kv_dim]. */
	void (*qkv_post)(struct dec_be *be, int layer, float *q, float *k, float *v);
	/* out[b] = softmax(q[b] · K · s) · V per head over the token's
	 * positions 0..pos[b] in the cache, s = cfg.att_scale or 1/sqrt(head_dim);
	 * in a layer with swa set only the last cfg.n_swa positions (q meets K
	 * as f16, as llama.cpp does); q, out [nb, q_dim]. */
	void (*attention)(struct dec_be *be, int layer, const float *q, float *out);
	/* x[i] += y[i], i < n */
	void (*add)(struct dec_be *be, float *x, const float *y, size_t n);
	/* g[b][i] = act(g[b][i]) * u[b][i] over rows of hidden_dim, b < nb; act
	 * SiLU, or GELU's tanh form when cfg.ffn_gelu (dec_glu) */
	void (*silu_mul)(struct dec_be *be, float *g, const float *u, int nb);
	/* dst[i] = src[out[i]] for the step's n_out rows of width values */
	void (*gather)(struct dec_be *be, float *dst, const float *src, int width);
	/* Mixture of experts (NULL when the backend has none: a model that needs
	 * it is refused when the backend opens): per token, the router's
	 * softmax over the experts, its top n_expert_used (ties: lower id),
	 * their weights renormalised to sum 1, and out[b] += sum in rank order
	 * of w_e * down_e(silu(gate_e in[b]) * up_e in[b]); in, out [nb, dim]. */
	void (*moe)(struct dec_be *be, int layer, const float *in, float *out, int nb);

	/* Device → host copy of n floats (n == 0: only waits); waits for every
	 * op before it, and reports an op's failure. */
	enum cr_status (*download)(struct dec_be *be, float *host, const float *src, size_t n,
				   struct cr_err *err);
	/* Draws n (1..DEC_BE_MAX_DRAWS) tokens from the rows of logits
	 * (rows of width values, in the backend's memory: the graph's logits)
	 * as dec_sample.h's pipeline does, each a function of its row, its
	 * settings and its uniform alone; fills each draw's results. Waits
	 * for every op before it and reports an op's failure, as download. On
	 * the CPU this is dec_sample's own code; on CUDA a kernel, and only the
	 * ids, counts, top logprobs and token logprobs come back to the host. */
	enum cr_status (*sample)(struct dec_be *be, const float *logits, int width, struct dec_draw *d, int n,
				 struct cr_err *err);
	/* KV block src copied to dst in every layer (copy-on-write). */
	enum cr_status (*kv_copy)(struct dec_be *be, int src, int dst, struct cr_err *err);

	/* Which models it runs (NULL: the llama family only — llama, qwen2,
	 * qwen3, phi3: no experts, no gemma3 features); 0 with the reason in why
	 * otherwise, and the backend is not used for that model. */
	int (*supports)(const struct dec_model *m, char *why, size_t cap);
	/* Optional (NULL on the CPU): replay of a captured step. graph_begin
	 * returns 1 when it replayed the graph captured for this step shape (the
	 * caller then skips the ops and goes to download), 0 when the caller
	 * should issue the ops (captured if the backend chooses to, until
	 * graph_end). The shape key is (nb, n_out, n_seq); set_step has run. */
	int (*graph_begin)(struct dec_be *be);
	enum cr_status (*graph_end)(struct dec_be *be, struct cr_err *err);
};

void dec_be_free(struct dec_be *be); /* NULL: no-op */
/* What every sample op checks first: 1..DEC_BE_MAX_DRAWS draws, rows within
 * max_out, logprobs 0..DEC_MAX_LOGPROBS (CR_EINTERNAL naming the backend). */
enum cr_status dec_be_check_draws(const struct dec_be *be, const struct dec_draw *d, int n, int width,
				  struct cr_err *err);

enum dec_device { DEC_DEV_AUTO, DEC_DEV_CPU, DEC_DEV_CUDA };
/* Whether be runs m (its supports, or the llama family when it has none);
 * the reason in why when not. */
int dec_be_supports(const struct dec_be *be, const struct dec_model *m, char *why, size_t cap);
/* "auto", "cpu", "cuda" into *dev; CR_EUSAGE naming the value otherwise. */
enum cr_status dec_device_parse(const char *s, enum dec_device *dev, struct cr_err *err);

/* Bytes of KV cache one block takes on any backend (K and V, every layer). */
size_t dec_be_block_bytes(const struct dec_model *m, int block_size);

#endif
