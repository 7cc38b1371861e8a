/* dec_quant.h — ggml tensor types: block layouts, fp16/bf16 conversion,
 * dequantization, quantization (activations, and weights for tests and the
 * benchmark) and dot products of a weight row with an activation vector.
 *
 * Dot products follow llama.cpp's CPU choices so logits agree with it: the
 * activation vector is first converted to the weight type's "vec type"
 * (F32→F32, F16→F16, BF16→BF16, Q4_0/Q5_0/Q8_0→Q8_0, Q4_K/Q6_K→Q8_K) and
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
	DEC_T_I8 = 24, DEC_T_I16 = 25, DEC_T_I32 = 26, DEC_T_I64 = 27,
	DEC_T_F64 = 28, DEC_T_BF16 = 30
};

#define DEC_QK 32   /* block size of the _0 types */
#define DEC_QK_K 256 /* super-block size of the K types */

struct dec_block_q8_0 { uint16_t d; int8_t qs[DEC_QK]; };                 /* 34 B */
struct dec_block_q4_0 { uint16_t d; uint8_t qs[DEC_QK / 2]; };            /* 18 B: lo nibbles = x[0..16), hi = x[16..32), value-8 */
struct dec_block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[DEC_QK / 2]; }; /* 22 B: bit j of qh = 5th bit of x[j], value-16 */
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
struct dec_block_q8_K {                                                    /* 292 B */
	float d;
	int8_t qs[DEC_QK_K];
	int16_t bsums[DEC_QK_K / 16]; /* sums of each 16 qs */
};

/* Block size and bytes per block; 0 for a type id ggml does not define. */
int dec_type_info(uint32_t t, size_t *blck, size_t *tsize);
const char *dec_type_name(uint32_t t);
/* 1 for the weight types the decoder can dequantize and dot. */
int dec_type_supported(uint32_t t);
size_t dec_row_size(uint32_t t, int64_t n); /* n a multiple of the block size */

float dec_f16_to_f32(uint16_t h);
uint16_t dec_f32_to_f16(float f);
float dec_bf16_to_f32(uint16_t h);
uint16_t dec_f32_to_bf16(float f);

/* dst[0..n) = the decoded row. */
void dec_dequant_row(uint32_t t, const void *src, float *dst, int64_t n);
/* Encodes x[0..n) as type t: F32, F16, BF16, Q8_0, Q8_K (activations) and
 * Q4_0, Q5_0, Q4_K, Q6_K (weights; simple round-to-nearest quantizers, not
 * llama.cpp's optimising ones). Returns 0 for a type it cannot write. */
int dec_quantize_row(uint32_t t, const float *x, void *dst, int64_t n);

/* The activation encoding dot products with a t row expect. */
uint32_t dec_vec_type(uint32_t t);
/* row (type t, n values) · act (dec_vec_type(t), n values). */
float dec_vec_dot(uint32_t t, const void *row, const void *act, int64_t n);
/* The kernel dec_vec_dot uses for t (the best for this CPU), for hot loops. */
typedef float (*dec_vec_dot_t)(const void *row, const void *act, int64_t n);
dec_vec_dot_t dec_vec_dot_fn(uint32_t t);
/* Reference: dequantize both and accumulate in double (tests). */
double dec_vec_dot_ref(uint32_t t, const void *row, const float *x, int64_t n);

#endif
