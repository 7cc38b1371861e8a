/* dec_model.h — transformer models from GGUF files (llama, qwen2, qwen3):
 * config, weights (pointers into the mapping), run state, the optimised CPU
 * forward with a KV cache and the plain reference forward it is tested
 * against. qwen3moe's experts come from 3-D tensors [dim, hidden, n_expert]
 * and are split into one matrix per expert. phi3's fused tensors (attn_qkv, ffn_up holding gate and up) are
 * split at load into row ranges, so the forward sees q, k, v, gate and up.
 *
 * Conventions (GGUF / ggml): a weight matrix has ne[0] = in-features
 * (contiguous) and ne[1] = out-features, so row r of W is output r. llama.cpp's
 * converter permutes llama's q/k weights so RoPE rotates adjacent pairs
 * (2i, 2i+1) ("normal"); qwen2/qwen3 rotate (i, i + d/2) ("NEOX"). */
#ifndef DEC_MODEL_H
#define DEC_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"
#include "decode/model/gguf.h"

enum dec_arch { DEC_ARCH_LLAMA, DEC_ARCH_QWEN2, DEC_ARCH_QWEN3, DEC_ARCH_PHI3, DEC_ARCH_QWEN3MOE, DEC_ARCH_GEMMA3 };

struct dec_config {
	enum dec_arch arch;
	char arch_name[16];
	int n_vocab;     /* rows of token_embd */
	int dim;         /* embedding length */
	int n_layers;
	int n_heads;
	int n_kv_heads;  /* grouped-query attention: n_heads % n_kv_heads == 0 */
	int head_dim;    /* attention.key_length, else dim / n_heads */
	int hidden_dim;  /* feed_forward_length */
	int ctx_len;     /* context_length */
	int rope_neox;   /* 0: pairs (2i, 2i+1); 1: pairs (i, i + head_dim/2) */
	int rope_dim;    /* rotated dims per head (rope.dimension_count, else head_dim) */
	float rope_base; /* rope.freq_base */
	float rope_scale; /* position scale: 1 / rope.scaling.factor for "linear" scaling, else 1 */
	float eps;       /* attention.layer_norm_rms_epsilon */
	int n_expert;       /* mixture of experts (qwen3moe): experts per layer; 0: dense */
	int n_expert_used;  /* experts a token is routed to (top-k of the router's softmax) */
	int expert_hidden;  /* expert_feed_forward_length */
	int sliding_window; /* attention.sliding_window where the decoder does not apply it
	                       (llama, qwen2, qwen3): contexts beyond it are refused
	                       (dec_model_check_ctx); 0 none */
	/* gemma3 */
	int n_swa;          /* window of the layers with swa set: a token sees its last n_swa
	                       positions (llama.cpp's standard SWA); 0: no such layer */
	float rope_base_swa; /* RoPE base of those layers (no scaling, no factors) */
	float att_scale;    /* q·k scale; 0: 1/sqrt(head_dim) */
	float embd_scale;   /* embeddings multiplied by it (gemma3: sqrt(dim)); 0: 1 */
	int ffn_gelu;       /* feed-forward activation GELU (tanh form) instead of SiLU */
};

/* A 2-D weight: rows × cols elements of a ggml type, row-major. */
struct dec_mat {
	const void *data;
	uint32_t type;
	int64_t rows, cols;
	size_t row_bytes;
	/* quantized types: the first rows / 8 * 8 rows repacked in groups of 8
	 * (dec_block_*_x8, dec_x8_group_bytes a group) for the forward; NULL
	 * for other types. data keeps the file layout. */
	const void *x8;
};

struct dec_layer {
	const float *attn_norm; /* [dim] */
	struct dec_mat wq;      /* [n_heads*head_dim, dim] */
	struct dec_mat wk;      /* [n_kv_heads*head_dim, dim] */
	struct dec_mat wv;      /* [n_kv_heads*head_dim, dim] */
	struct dec_mat wo;      /* [dim, n_heads*head_dim] */
	const float *bq, *bk, *bv;   /* qwen2 biases [q_dim], [kv_dim], [kv_dim]; else NULL */
	const float *q_norm, *k_norm; /* qwen3 per-head RMS norm [head_dim]; else NULL */
	const float *ffn_norm;  /* [dim] */
	struct dec_mat w_gate;  /* [hidden_dim, dim] */
	struct dec_mat w_up;    /* [hidden_dim, dim] */
	struct dec_mat w_down;  /* [dim, hidden_dim] */
	/* mixture of experts (cfg.n_expert > 0), in place of w_gate/up/down:
	 * the router and, for expert e, its gate, up and down at exps[3e..3e+2]
	 * ([expert_hidden, dim], [expert_hidden, dim], [dim, expert_hidden]) */
	const float *attn_post_norm, *ffn_post_norm; /* gemma3: [dim] on the attention and
	                                                feed-forward outputs before the residual */
	int swa;                 /* gemma3: a sliding-window layer (cfg.n_swa, rope_base_swa) */
	int n_expert;            /* cfg.n_expert for a MoE layer; 0: dense */
	struct dec_mat gate_inp; /* [n_expert, dim] */
	struct dec_mat *exps;
};

struct dec_weights {
	struct dec_mat tok_embd;   /* [n_vocab, dim] */
	struct dec_layer *layers;  /* [n_layers] */
	const float *out_norm;     /* [dim] */
	struct dec_mat output;     /* [n_vocab, dim]; == tok_embd when tied */
	const float *rope_freqs;   /* [rope_dim/2] llama3 frequency factors, or NULL */
	float *vecs;               /* one allocation: all 1-D weights as f32 */
	struct dec_mat *exp_mats;  /* every layer's exps (one allocation) */
	void *packed;              /* one allocation: the forward's copy of the matrices (dec_model_pack) */
};

struct dec_model {
	struct dec_config cfg;
	struct dec_weights w;
	struct dec_gguf *gguf; /* owned */
};

/* Takes ownership of g (freed on error too). Errors name the file and the
 * missing / malformed key or tensor. */
enum cr_status dec_model_load(struct dec_gguf *g, struct dec_model **out, struct cr_err *err);
enum cr_status dec_model_open(const char *path, struct dec_model **out, struct cr_err *err);
void dec_model_free(struct dec_model *m);
/* Copies the matrices the forward multiplies by into w.packed, one
 * allocation on huge pages where the kernel has them: the quantized ones
 * repacked for the eight-row kernels (dec_mat.x8), the others as they are
 * (dec_mat.data then points at the copy, and so does a tied embedding's).
 * dec_model_load calls it; a model built by hand calls it once (and frees
 * its own buffers through pointers it kept, not through dec_mat.data). */
enum cr_status dec_model_pack(struct dec_model *m, struct cr_err *err);
int64_t dec_model_n_params(const struct dec_model *m);
/* CR_EUSAGE naming the metadata key when a context of ctx positions needs
 * more than the model can do (a sliding window shorter than it). */
enum cr_status dec_model_check_ctx(const struct dec_model *m, int ctx, struct cr_err *err);
size_t dec_model_weight_bytes(const struct dec_model *m); /* bytes read per decoded token */


#endif
