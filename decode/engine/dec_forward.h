/* dec_forward.h — the forward over a backend (engine/): choosing the
 * backend for a device, the one forward written over the table
 * (dec_graph.c), and struct dec_state, the decoder with fixed sequences
 * (dec_forward.c). The paged, shared alternative is dec_engine.h. */
#ifndef DEC_FORWARD_H
#define DEC_FORWARD_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"
#include "decode/be/dec_be.h"
#include "decode/model/dec_model.h"

struct dec_state;

/* The backend for dev: AUTO takes CUDA when it opens, else the CPU, and
 * writes why CUDA was not taken into note (empty otherwise). */
enum cr_status dec_be_open(const struct dec_model *m, const struct dec_be_cfg *cfg, enum dec_device dev,
			   struct dec_be **out, char *note, size_t note_cap, struct cr_err *err);
/* A dec_state (dec_model.h) on the backend for dev (as dec_be_open). */
enum cr_status dec_state_new_dev(const struct dec_model *m, int max_ctx, int max_block, int n_seq,
				 int n_threads, enum dec_device dev, char *note, size_t note_cap,
				 struct dec_state **out, struct cr_err *err);

/* The forward (dec_graph.c), written once over the table: per layer
 *   xb = rmsnorm(x)·attn_norm; q,k,v = W·xb; qkv_post; xb = attention(q);
 *   x += Wo·xb; xb = rmsnorm(x)·ffn_norm; x += Wdown·(silu(Wgate·xb) ⊙ Wup·xb)
 * then, for the step's output rows, logits = Woutput·rmsnorm(x)·out_norm.
 * The activation buffers are the backend's scratch, sized for its
 * cfg.max_tokens / max_out. */
struct dec_graph {
	struct dec_be *be;
	float *x;        /* [max_tokens, dim] residual stream */
	float *xb;       /* [max_tokens, max(dim, q_dim)] normed input / attention output */
	float *q;        /* [max_tokens, q_dim] */
	float *k, *v;    /* [max_tokens, kv_dim] */
	float *hb, *hb2; /* [max_tokens, hidden_dim] */
	float *xo;       /* [max_out, dim] the output rows, gathered */
	float *t;        /* [max_tokens, dim] a sublayer's output before its post-norm (gemma3) */
	float *logits;   /* [max_out, n_vocab] */
};

enum cr_status dec_graph_init(struct dec_graph *g, struct dec_be *be, struct cr_err *err);
/* Runs one step: the tokens' K/V land in the cache, and the logits of the
 * step's output rows are copied to logits[n_out, n_vocab] (host). */
enum cr_status dec_graph_step(struct dec_graph *g, const struct dec_step *st, float *logits,
			      struct cr_err *err);
/* The same step without the copy: the logits stay in g->logits, for
 * dec_graph_sample (or a download). A failure may surface only at the next
 * call that returns a status. */
enum cr_status dec_graph_forward(struct dec_graph *g, const struct dec_step *st, struct cr_err *err);
/* n draws from the last forward's logits, any n (in calls of at most
 * DEC_BE_MAX_DRAWS); n == 0 only waits for the step. */
enum cr_status dec_graph_sample(struct dec_graph *g, struct dec_draw *d, int n, struct cr_err *err);


/* Run state of the forward with n_seq fixed sequences of max_ctx positions
 * (dec_forward.c): the CPU backend (dec_be.h) with an unshared KV layout,
 * processing blocks of up to max_block tokens. The engine (dec_engine.h)
 * is the paged, shared, continuously batched alternative. */
struct dec_state {
	const struct dec_model *m;
	int max_ctx, max_block, n_threads;
	int n_seq;            /* independent sequences (KV caches) */
	int seq;              /* the sequence dec_forward appends to (0 unless set) */
	int pos;              /* tokens of `seq` already in its cache */
	float *logits;        /* [n_vocab] of the last token */
	void *priv;           /* the backend, the forward's buffers, the step arrays */
};

/* One sequence. n_threads <= 0: the CPUs this process may use (at most 16). */
enum cr_status dec_state_new(const struct dec_model *m, int max_ctx, int max_block,
			     int n_threads, struct dec_state **out, struct cr_err *err);
/* With n_seq independent caches, for decoding several samples in one batch. */
enum cr_status dec_state_new_seqs(const struct dec_model *m, int max_ctx, int max_block, int n_seq,
				  int n_threads, struct dec_state **out, struct cr_err *err);
void dec_state_free(struct dec_state *s);
void dec_state_reset(struct dec_state *s); /* forget the cache */
/* Appends tokens[0..n) at positions pos.. (n <= max_ctx - pos); leaves the
 * last token's logits in s->logits; when all_logits is not NULL, writes
 * [n, n_vocab] there. */
enum cr_status dec_forward(struct dec_state *s, const int32_t *tokens, int n,
			   float *all_logits, struct cr_err *err);
/* One step of several sequences: token b goes to sequence seqs[b] (each at
 * most once) at position pos[b], attending to that sequence's cache below
 * pos[b]. Writes logits [n, n_vocab]. n <= max_block. Each token is computed
 * exactly as dec_forward would compute it alone. */
enum cr_status dec_forward_batch(struct dec_state *s, const int32_t *tokens, const int *seqs,
				 const int *pos, int n, float *logits, struct cr_err *err);
/* Copies the first n_pos cache entries of sequence `from` to `to` (a shared prompt). */
void dec_state_copy_seq(struct dec_state *s, int from, int to, int n_pos);

#endif
