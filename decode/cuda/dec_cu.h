/* dec_cu.h — what the CUDA backend's host side (decode/cuda/dec_be_cuda.c) and its
 * kernels (decode/cuda/dec_kernels.cu) share: the device-resident
 * description of the model and the step, and the list of kernels. Plain C,
 * no CUDA header: the host sees device pointers as 64-bit integers.
 *
 * Every kernel takes at most 10 parameters, each a pointer or an integer
 * (never a float: numbers such as eps travel in struct dec_cu_cfg), so the
 * emulated driver of the test suite can call it (tests/cuda/fakecuda). */
#ifndef DEC_CU_H
#define DEC_CU_H

#include <stdint.h>

#ifdef __CUDACC__
#define DEC_CU_PTR(T) T *
#elif defined(__cplusplus) && defined(DEC_CU_DEVICE_CODE)
#define DEC_CU_PTR(T) T *   /* the C++ build of the kernels (emulation) */
#else
#define DEC_CU_PTR(T) unsigned long long /* CUdeviceptr */
#endif

#define DEC_CU_MAX_LAYERS 256
#define DEC_CU_THREADS 128     /* threads per block of the matrix kernels: 4 warps, a row each */
#define DEC_CU_TOK_TILE 64     /* tokens per pass over the weights (grid.y tiles beyond) */
#define DEC_CU_ATT_MAX_SPLIT 4096 /* positions per attention split, at most (16 KiB of shared memory) */
#define DEC_CU_MAX_HEAD_DIM 256
#define DEC_CU_ATT_HEADS 8        /* query heads of a kv head's group per attention block, at most */
#define DEC_CU_ATT_TILE 16        /* tokens of a prefill attention block (k_att_tile), at most */
#define DEC_CU_MMQ_MIN 16         /* tokens from which a product of a 32-value block type takes MMQ */
#define DEC_CU_SAMPLE_THREADS 512 /* threads of a draw's block (k_sample) */
#define DEC_CU_MAX_LOGPROBS 1024  /* top logprobs per draw at most (k_sample sorts them in shared memory) */

/* One layer's vectors (f32) and its KV pools (f16, [n_blocks, block_size,
 * kv_dim] each). NULL (0) where the architecture has none. */
struct dec_cu_layer {
	DEC_CU_PTR(const float) attn_norm;
	DEC_CU_PTR(const float) ffn_norm;
	DEC_CU_PTR(const float) bq;
	DEC_CU_PTR(const float) bk;
	DEC_CU_PTR(const float) bv;
	DEC_CU_PTR(const float) q_norm;
	DEC_CU_PTR(const float) k_norm;
	DEC_CU_PTR(uint16_t) kc;
	DEC_CU_PTR(uint16_t) vc;
};

/* The model and the step buffers, in device memory, read by every kernel.
 * Written once at open; the step's indices change in place (set_step), so a
 * captured graph stays valid. */
struct dec_cu_cfg {
	int32_t dim, n_heads, n_kv_heads, head_dim, q_dim, kv_dim, hidden, n_vocab;
	int32_t rope_dim, rope_neox;
	int32_t block_size, max_blocks;   /* positions per KV block; width of a block-table row */
	int32_t max_tokens, max_out, max_seqs, max_ctx, n_blocks;
	int32_t att_split, att_max_splits; /* positions per attention split; splits per token at most */
	int32_t att_heads;                /* query heads per attention block (of one kv head's group) */
	int32_t att_tq;                   /* tokens per prefill attention tile at most (0: no tiles) */
	int32_t emb_type;                 /* ggml type of tok_embd */
	uint32_t eps_bits;                /* rms eps, f32 bits */
	uint32_t att_scale_bits;          /* 1 / sqrt(head_dim), f32 bits */
	int64_t emb_row_bytes;
	DEC_CU_PTR(const uint8_t) emb;    /* tok_embd [n_vocab, dim] in the file's layout */
	DEC_CU_PTR(const float) out_norm;
	DEC_CU_PTR(const float) rope_cs;  /* [max_ctx, rope_dim]: cos, sin per pair (dec_rope_cs) */
	/* the step (set_step), fixed addresses */
	DEC_CU_PTR(const int32_t) tok;    /* [max_tokens] */
	DEC_CU_PTR(const int32_t) pos;    /* [max_tokens] */
	DEC_CU_PTR(const int32_t) seq;    /* [max_tokens] */
	DEC_CU_PTR(const int32_t) att_tile; /* [max_tokens]: first token << 8 | tokens, per k_att_tile block */
	DEC_CU_PTR(const int32_t) out;    /* [max_out] */
	DEC_CU_PTR(const int32_t) btab;   /* [max_seqs, max_blocks] */
	DEC_CU_PTR(float) att_part;       /* [max_tokens, n_heads, att_max_splits, head_dim + 2] */
	struct dec_cu_layer layer[DEC_CU_MAX_LAYERS];
};

/* One draw of k_sample (decode/cuda/dec_cu_sample.cuh), host to device:
 * the sampling settings of struct dec_sampling as f32 bits, the draw's
 * uniform as its 53 bits (u = u53 * 2^-53), how many top logprobs of the
 * raw logits to return and whether the drawn token's logprob. */
struct dec_cu_draw {
	int32_t row;         /* the logits row */
	int32_t top_k;       /* <= 0: off */
	int32_t n_logprobs;  /* 0..DEC_CU_MAX_LOGPROBS */
	uint32_t temp_bits;  /* temperature; <= 0: greedy */
	uint32_t top_p_bits; /* >= 1: off */
	uint32_t min_p_bits; /* <= 0: off */
	int32_t want_lp;     /* 1: the token's logprob (res[4 * draw + 2]) */
	int32_t pad;
	uint64_t u53;
};
/* What k_sample returns per draw: 4 int32 (id, survivors, logprob's f32
 * bits, 0). */
#define DEC_CU_SAMPLE_RES 4

/* Activations as the quantized products read them, per token row b of a
 * product with `cols` inputs (see dec_cu_act_bytes): the int8 values at
 * qs + b * cols, a scale per block at d + b * (cols / block) and, for Q8_1,
 * the block's d * sum at s + b * (cols / 32). F16/BF16 weights meet 16-bit
 * activations (f16 rounded, bf16 rounded) at qs + 2 * b * cols. */
enum dec_cu_act {
	DEC_CU_ACT_F32,   /* the f32 input as it is */
	DEC_CU_ACT_F16,   /* f16 (F16 weights: ggml's F16R) */
	DEC_CU_ACT_BF16,
	DEC_CU_ACT_Q8_0,  /* Q4_0, Q5_0, Q8_0 */
	DEC_CU_ACT_Q8_1,  /* Q4_1, Q5_1 */
	DEC_CU_ACT_Q8_K   /* Q4_K, Q6_K */
};

/* The kernels, by name: X(name). The matrix kernels exist for every weight
 * type and token count per pass (NT = 1, 4, 16, 64: a pass serves up to NT
 * tokens, so NT only sizes the accumulators); the MMQ kernels (tensor
 * cores, 64 tokens a block) for the block types. At most
 * CR_CUBIN_MAX_KERNELS (128) in all: the cubin reader (cuda/cuda_cubin.h),
 * which the emulated driver loads modules with, keeps no more. */
#define DEC_CU_N_MMV_TYPES 15 /* weight types of the matrix kernels, in DEC_CU_MMV_TYPES's order */
#define DEC_CU_MMV_TYPES(X, NT) \
	X(mmv_f32_##NT) X(mmv_f16_##NT) X(mmv_bf16_##NT) X(mmv_q8_0_##NT) X(mmv_q4_0_##NT) \
	X(mmv_q5_0_##NT) X(mmv_q4_1_##NT) X(mmv_q5_1_##NT) X(mmv_q4_k_##NT) X(mmv_q6_k_##NT) \
	X(mmv_q2_k_##NT) X(mmv_q3_k_##NT) X(mmv_q5_k_##NT) X(mmv_iq4_nl_##NT) X(mmv_iq4_xs_##NT)
#define DEC_CU_KERNELS(X) \
	X(k_embed) X(k_rmsnorm) X(k_quant_f16) X(k_quant_bf16) X(k_quant_q8_0) X(k_quant_q8_1) \
	X(k_quant_q8_k) X(k_qkv_post) X(k_attention) X(k_att_tile) X(k_att_combine) X(k_add) X(k_silu_mul) \
	X(k_gather) X(k_kv_copy) X(k_sample) \
	DEC_CU_MMV_TYPES(X, 1) DEC_CU_MMV_TYPES(X, 4) DEC_CU_MMV_TYPES(X, 16) DEC_CU_MMV_TYPES(X, 64) \
	X(mmq_q8_0) X(mmq_q4_0) X(mmq_q5_0) X(mmq_q4_1) X(mmq_q5_1) X(mmq_iq4_nl) \
	X(mmq_q2_k) X(mmq_q3_k) X(mmq_q4_k) X(mmq_q5_k) X(mmq_q6_k) X(mmq_iq4_xs)

#endif
