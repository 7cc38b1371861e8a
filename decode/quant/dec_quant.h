/* dec_quant.h — ggml tensor types: block layouts, fp16/bf16 conversion,
 * dequantization, quantization (activations, and weights for tests and the
 * benchmark) and dot products of a weight row with an activation vector.
 *
 * Dot products follow llama.cpp's CPU choices so logits agree with it: the
 * activation vector is first converted to the weight type's "vec type"
 * (F32→F32, F16→F16 values held as f32 (DEC_T_F16R), BF16→BF16, Q4_0/Q5_0/Q8_0/IQ4_NL→Q8_0,
 * Q4_1/Q5_1→Q8_1, Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_XS→Q8_K) and
 * the dot product runs on the two encoded rows, integer where it can. */
#ifndef DEC_QUANT_H
#define DEC_QUANT_H

#include <stddef.h>
#include <stdint.h>

enum dec_type {
	DEC_T_F32 = 0, DEC_T_F16 = 1, DEC_T_Q4_0 = 2, DEC_T_Q4_1 = 3,
	DEC_T_Q5_0 = 6, DEC_T_Q5_1 = 7, DEC_T_Q8_0 = 8, DEC_T_Q8_1 = 9,
	DEC_T_Q2_K = 10, DEC_T_Q3_K = 11, DEC_T_Q4_K = 12, DEC_T_Q5_K = 13,
	DEC_T_Q6_K = 14, DEC_T_Q8_K = 15,
	DEC_T_IQ2_XXS = 16, DEC_T_IQ2_XS = 17, DEC_T_IQ3_XXS = 18, DEC_T_IQ1_S = 19,
	DEC_T_IQ4_NL = 20, DEC_T_IQ3_S = 21, DEC_T_IQ2_S = 22, DEC_T_IQ4_XS = 23,
	DEC_T_IQ1_M = 29, DEC_T_TQ1_0 = 34, DEC_T_TQ2_0 = 35, DEC_T_MXFP4 = 39,
	DEC_T_I8 = 24, DEC_T_I16 = 25, DEC_T_I32 = 26, DEC_T_I64 = 27,
	DEC_T_F64 = 28, DEC_T_BF16 = 30,
	/* not a ggml type: the activations F16 weights meet, f32 values rounded
	 * to f16 (so the dot product sees f16 × f16 products, as in ggml) but
	 * stored as f32, converted once per product instead of once per row */
	DEC_T_F16R = 1000
};

#define DEC_QK 32   /* block size of the _0 types */
#define DEC_QK_K 256 /* super-block size of the K types */

struct dec_block_q8_0 { uint16_t d; int8_t qs[DEC_QK]; };                 /* 34 B */
struct dec_block_q4_0 { uint16_t d; uint8_t qs[DEC_QK / 2]; };            /* 18 B: lo nibbles = x[0..16), hi = x[16..32), value-8 */
struct dec_block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[DEC_QK / 2]; }; /* 22 B: bit j of qh = 5th bit of x[j], value-16 */
/* The _1 types: value = d * q + m with q unsigned (0..15, 0..31); nibbles and
 * 5th bits laid out as in Q4_0 / Q5_0. They meet Q8_1 activations, whose s is
 * d * (sum of the 32 qs) in fp16 (d the unrounded f32 scale), so the offset
 * term of a block is m * s. */
struct dec_block_q4_1 { uint16_t d, m; uint8_t qs[DEC_QK / 2]; };                  /* 20 B */
struct dec_block_q5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[DEC_QK / 2]; };   /* 24 B */
struct dec_block_q8_1 { uint16_t d, s; int8_t qs[DEC_QK]; };                        /* 36 B */
struct dec_block_q4_K {                                                    /* 144 B */
	uint16_t d, dmin;           /* super-block scales for the 6-bit scales and mins */
	uint8_t scales[12];         /* 8 scales + 8 mins, 6 bits each, packed */
	uint8_t qs[DEC_QK_K / 2];   /* per 64 values: lo nibbles = sub-block 2j, hi = 2j+1 */
};
struct dec_block_q6_K {                                                    /* 210 B */
	uint8_t ql[DEC_QK_K / 2];   /* low 4 bits */
	uint8_t qh[DEC_QK_K / 4];   /* high 2 bits */
	int8_t scales[DEC_QK_K / 16]; /* one per 16 values */
	uint16_t d;
};
/* Q5_K: Q4_K's scales and nibbles plus a 5th bit: bit s of qh[l] belongs
 * to value 32 s + l. value = d * sc * q - dmin * m, q in 0..31. */
struct dec_block_q5_K {                                                    /* 176 B */
	uint16_t d, dmin;
	uint8_t scales[12];         /* as Q4_K's */
	uint8_t qh[DEC_QK_K / 8];
	uint8_t qs[DEC_QK_K / 2];   /* as Q4_K's */
};
/* Q2_K: 16 sub-blocks of 16 values; value v (128 n + 32 j + r, r < 32) is
 * bits 2j..2j+1 of qs[32 n + r]; scales[v / 16] holds the sub-block's 4-bit
 * scale (low nibble) and 4-bit min (high). value = d * sc * q - dmin * m. */
struct dec_block_q2_K {                                                    /* 84 B */
	uint8_t scales[DEC_QK_K / 16];
	uint8_t qs[DEC_QK_K / 4];
	uint16_t d, dmin;
};
/* Q3_K: the low 2 bits laid out as Q2_K's, the 3rd bit of value v in bit
 * 4 n + j of hmask[r]; q = low | hbit << 2, value = d * (sc - 32) * (q - 4),
 * sc one of 16 6-bit scales packed in 12 bytes (dec_q3k_scale). */
struct dec_block_q3_K {                                                    /* 110 B */
	uint8_t hmask[DEC_QK_K / 8];
	uint8_t qs[DEC_QK_K / 4];
	uint8_t scales[12];
	uint16_t d;
};
/* IQ4_NL: Q4_0's layout, but a nibble indexes a 16-entry non-linear codebook
 * (dec_iq4nl_values): value = d * kv[q]. */
struct dec_block_iq4_nl { uint16_t d; uint8_t qs[DEC_QK / 2]; };          /* 18 B */
/* IQ4_XS: a super-block of 8 IQ4_NL-like blocks of 32 (nibbles as IQ4_NL,
 * 16 bytes a block) with 6-bit scales: low 4 bits of block b in nibble b % 2
 * of scales_l[b / 2], high 2 bits at bit 2 b of scales_h; value = d * (sc -
 * 32) * kv[q]. */
struct dec_block_iq4_xs {                                                  /* 136 B */
	uint16_t d;
	uint16_t scales_h;
	uint8_t scales_l[DEC_QK_K / 64];
	uint8_t qs[DEC_QK_K / 2];
};
extern const int8_t dec_iq4nl_values[16];

struct dec_block_q8_K {                                                    /* 292 B */
	float d;
	int8_t qs[DEC_QK_K];
	int16_t bsums[DEC_QK_K / 16]; /* sums of each 16 qs */
};

/* Q4_K regrouped at load for the multi-row kernels: one super-block of 8
 * consecutive rows, scales and mins unpacked, nibbles interleaved so that
 * 32 bytes hold 4 + 4 values of each of the 8 rows (a 32-bit lane per row).
 * The values are those of the 8 source blocks; only the layout differs. */
struct dec_block_q4_k_x8 {                                                 /* 1184 B */
	uint16_t d[8], dmin[8];   /* per row */
	uint8_t sc[8][8];         /* [sub-block][row] 6-bit scales */
	uint8_t mn[4][8][2];      /* [sub-block pair][row][first, second] 6-bit mins */
	uint8_t qs[8][4][8][4];   /* [sub-block][group g][row][k]: value 8g+k | value 8g+4+k << 4 */
};

/* Q8_0 regrouped the same way: one block of 8 consecutive rows, 4 values of
 * each row per 32 bytes. */
struct dec_block_q8_0_x8 {                                                 /* 272 B */
	uint16_t d[8];            /* per row */
	int8_t qs[8][8][4];       /* [group g][row][k]: value 4g+k */
};

/* Q4_0 and Q5_0 regrouped the same way, as unsigned nibbles (value + 8,
 * value + 16 without its 5th bit); Q5_0's 5th bits of values 8g..8g+7 of
 * a row in byte g of its lane. */
struct dec_block_q4_0_x8 {                                                 /* 144 B */
	uint16_t d[8];            /* per row */
	uint8_t qs[4][8][4];      /* [group g of 8][row][k]: value 8g+k | value 8g+4+k << 4 */
};
struct dec_block_q5_0_x8 {                                                 /* 176 B */
	uint16_t d[8];
	uint8_t qs[4][8][4];      /* as dec_block_q4_0_x8, low 4 bits */
	uint8_t qh[8][4];         /* [row][g]: bit k = 5th bit of value 8g+k */
};

/* Q4_1 and Q5_1 regrouped as Q4_0 / Q5_0, with each row's m beside its d. */
struct dec_block_q4_1_x8 {                                                 /* 160 B */
	uint16_t d[8], m[8];      /* per row */
	uint8_t qs[4][8][4];      /* as dec_block_q4_0_x8 */
};
struct dec_block_q5_1_x8 {                                                 /* 192 B */
	uint16_t d[8], m[8];
	uint8_t qs[4][8][4];      /* as dec_block_q5_0_x8 */
	uint8_t qh[8][4];
};

/* Q6_K regrouped the same way, values as 6-bit unsigned (q + 32): low 4
 * bits interleaved as Q4_K's nibbles, the high 2 bits of 16 values of a row
 * in its 32-bit lane. */
struct dec_block_q6_k_x8 {                                                 /* 1680 B */
	uint16_t d[8];            /* per row */
	int8_t sc[16][8];         /* [group of 16 values][row] */
	uint8_t ql[32][8][4];     /* [group g of 8][row][k]: low bits of value 8g+k | of 8g+4+k << 4 */
	uint8_t qh[16][8][4];     /* [group h of 16][row][k]: high bits of values 16h+k, +4, +8, +12 at bits 0, 2, 4, 6 */
};

/* The low-bit types regrouped the same way (dec_pack_k.c). IQ4_NL uses
 * dec_block_q4_0_x8 as it is (its nibbles are codebook indexes). */
struct dec_block_q5_k_x8 {                                                 /* 1440 B */
	uint16_t d[8], dmin[8];
	uint8_t sc[8][8];         /* as dec_block_q4_k_x8 */
	uint8_t mn[4][8][2];
	uint8_t qs[8][4][8][4];   /* low 4 bits, as dec_block_q4_k_x8 */
	uint8_t qh[8][8][4];      /* [sub-block][row][k]: bits 2g, 2g+1 = 5th bits of values 8g+k, 8g+4+k */
};
/* Q3_K's quants as unsigned nibbles q + 4 (0..7), 16 per sub-block of a row. */
struct dec_block_q3_k_x8 {                                                 /* 1168 B */
	uint16_t d[8];
	int8_t sc[16][8];         /* [sub-block][row]: scale - 32 */
	uint8_t qs[16][2][8][4];  /* [sub-block][g][row][k]: value 8g+k | value 8g+4+k << 4 */
};
/* Q2_K keeps its 2 bits a value: 16 values of a row in its 32-bit lane. */
struct dec_block_q2_k_x8 {                                                 /* 672 B */
	uint16_t d[8], dmin[8];
	uint8_t sm[16][8];        /* [sub-block][row]: scale | min << 4, as in the file */
	uint8_t qs[16][8][4];     /* [sub-block][row][k]: bits 2j, 2j+1 = value 4j+k */
};
struct dec_block_iq4_xs_x8 {                                               /* 1104 B */
	uint16_t d[8];
	int8_t sc[8][8];          /* [block of 32][row]: scale - 32 */
	uint8_t qs[8][4][8][4];   /* [block][g][row][k]: index of value 8g+k | of 8g+4+k << 4 */
};

/* Block size and bytes per block; 0 for a type id ggml does not define. */
int dec_type_info(uint32_t t, size_t *blck, size_t *tsize);
const char *dec_type_name(uint32_t t);
/* The weight types the decoder can dequantize and dot, for messages. */
#define DEC_TYPES_SUPPORTED \
	"F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS"
/* 1 for the weight types the decoder can dequantize and dot. */
int dec_type_supported(uint32_t t);
size_t dec_row_size(uint32_t t, int64_t n); /* n a multiple of the block size */

float dec_f16_to_f32(uint16_t h);
uint16_t dec_f32_to_f16(float f);
float dec_bf16_to_f32(uint16_t h);
uint16_t dec_f32_to_bf16(float f);

/* Scale and min of Q4_K sub-block j (0..8) from the 12 packed bytes q. */
void dec_q4k_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m);
/* The 256 signed values (-32..31) of a Q6_K block. */
void dec_q6k_values(const struct dec_block_q6_K *b, int8_t *v);
/* Value v (0..256) of a block as stored, unsigned: Q2_K 0..3, Q3_K 0..7
 * (the signed value + 4), Q5_K 0..31, IQ4_XS the codebook index 0..15. */
int dec_q2k_u(const struct dec_block_q2_K *b, int v);
int dec_q3k_u(const struct dec_block_q3_K *b, int v);
int dec_q5k_u(const struct dec_block_q5_K *b, int v);
int dec_iq4xs_u(const struct dec_block_iq4_xs *b, int v);
/* Q3_K's scale of sub-block j (0..16) and IQ4_XS's of block j (0..8), the
 * 6-bit field minus 32: -32..31. */
int dec_q3k_scale(const uint8_t *scales, int j);
int dec_iq4xs_scale(const struct dec_block_iq4_xs *b, int j);

/* dst[0..n) = the decoded row. */
void dec_dequant_row(uint32_t t, const void *src, float *dst, int64_t n);
/* Encodes x[0..n) as type t: F32, F16, BF16, Q8_0, Q8_1, Q8_K (activations) and
 * Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS (weights;
 * simple round-to-nearest quantizers, not llama.cpp's optimising ones).
 * Returns 0 for a type it cannot write. */
int dec_quantize_row(uint32_t t, const float *x, void *dst, int64_t n);
/* The two for Q2_K, Q3_K, Q5_K, IQ4_NL, IQ4_XS (dec_quant_k.c), which the
 * functions above call; 0 for another type. */
int dec_dequant_row_k(uint32_t t, const void *src, float *dst, int64_t n);
int dec_quantize_row_k(uint32_t t, const float *x, void *dst, int64_t n);

/* The activation encoding dot products with a t row expect. */
uint32_t dec_vec_type(uint32_t t);
/* row (type t, n values) · act (dec_vec_type(t), n values). */
float dec_vec_dot(uint32_t t, const void *row, const void *act, int64_t n);
/* The kernel dec_vec_dot uses for t (the best for this CPU), for hot loops. */
typedef float (*dec_vec_dot_t)(const void *row, const void *act, int64_t n);
dec_vec_dot_t dec_vec_dot_fn(uint32_t t);
/* Packs 8 Q4_K rows of n values (row r at rows + r * row_bytes) into n / 256
 * dec_block_q4_k_x8 blocks. */
void dec_pack_q4_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
/* out[r] = row r · act for the 8 rows of a packed group (act Q8_K): exactly
 * dec_vec_dot of each source row. */
void dec_gemv8_q4_k_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q8_0_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q8_0_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q4_0_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q4_0_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q5_0_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q5_0_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q4_1_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q4_1_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q5_1_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q5_1_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q6_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q6_k_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q2_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q2_k_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q3_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q3_k_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_q5_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_q5_k_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_iq4_nl_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_iq4_nl_generic(const void *x8, const void *act, int64_t n, float *out);
void dec_pack_iq4_xs_x8(const void *rows, size_t row_bytes, int64_t n, void *dst);
void dec_gemv8_iq4_xs_generic(const void *x8, const void *act, int64_t n, float *out);
/* Bytes of one packed group of 8 rows of n values of type t; 0 when t has
 * no packed layout (then dec_pack_x8 does nothing). */
size_t dec_x8_group_bytes(uint32_t t, int64_t n);
void dec_pack_x8(uint32_t t, const void *rows, size_t row_bytes, int64_t n, void *dst);
/* Reference: dequantize both and accumulate in double (tests). */
double dec_vec_dot_ref(uint32_t t, const void *row, const float *x, int64_t n);

#endif
