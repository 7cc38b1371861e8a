/* dec_simd.h — the table of hot dot-product kernels (ggml-style: a table of
 * function pointers). The portable versions live in dec_quant.c; dec_simd.c
 * adds AVX2/FMA/F16C versions compiled with target attributes, chosen at run
 * time, so one binary runs on any x86-64 (and builds on other CPUs). */
#ifndef DEC_SIMD_H
#define DEC_SIMD_H

#include <stddef.h>
#include <stdint.h>

typedef float (*dec_dot_fn)(const void *row, const void *act, int64_t n);
/* out[t] = row · act_t for the four activation rows act + t * stride (NULL
 * in a table: use dec_dot_fn four times; same results either way). */
typedef void (*dec_dot4_fn)(const void *row, const void *act, size_t stride, int64_t n, float *out);

/* out[r] = row r · act for the 8 rows of a repacked group (dec_quant.h). */
typedef void (*dec_gemv8_fn)(const void *x8, const void *act, int64_t n, float *out);

/* Prefill kernels. out[8 t + r] = row r · act_t for the 8 rows of a
 * repacked group and the gemm_nt tokens act_t = act + t * stride. */
typedef void (*dec_gemm8_fn)(const void *x8, const void *act, size_t stride, int64_t n, float *out);
/* out[4 t + r] = row r · act_t for 4 rows of F16 weights converted to f32
 * (f16_f32), w + r * w_stride, and 4 tokens (f16r) act + t * stride. */
typedef void (*dec_gemm_f16_fn)(const float *w, size_t w_stride, const void *act, size_t stride, int64_t n,
				float *out);

/* gemm8_q8_0, gemm8_q4_0 and gemm8_q5_0 read each token's Q8_0 block
 * sums (int32, the sum of the block's 32 values) after its blocks, at byte
 * DEC_Q8_0_SUMS(n) of the row: the offset of unsigned weight values is
 * taken off with them, computed once per product rather than once per 8
 * rows. dec_q8_0_sums writes them (the row then needs DEC_Q8_0_SUMS(n) +
 * 4 n / 32 bytes). */
#define DEC_Q8_0_SUMS(n) (((size_t)(n) / 32 * 34 + 3) / 4 * 4)
void dec_q8_0_sums(void *row, int64_t n);

/* Every multi-token kernel gives each (row, token) bit for bit what the
 * same table's one-token kernel gives. */
struct dec_simd {
	const char *name;
	dec_dot_fn dot_f32;  /* f32 · f32 */
	dec_dot_fn dot_f16;  /* f16 · f16r (DEC_T_F16R: f16 values held as f32) */
	dec_dot_fn dot_q8_0; /* q8_0 · q8_0 */
	dec_dot_fn dot_q4_0; /* q4_0 · q8_0 */
	dec_dot_fn dot_q5_0; /* q5_0 · q8_0 */
	dec_dot_fn dot_q4_k; /* q4_K · q8_K */
	dec_dot_fn dot_q6_k; /* q6_K · q8_K */
	/* o[i] += a * v[i], v in f16 (attention over the f16 value cache) */
	void (*axpy_f16)(float a, const uint16_t *v, float *o, int64_t n);
	/* Attention over an f16 cache whose rows are `stride` elements apart:
	 * sc[p] = scale * (q · k[p]) for p < n_pos (q in f16, hd values), and
	 * o += sum_p a[p] * v[p] (o accumulates: a cache split in blocks
	 * gives the bits of one contiguous call when o carries over). */
	void (*att_scores)(const uint16_t *q, const uint16_t *k, int64_t stride, int n_pos, int hd,
			   float scale, float *sc);
	void (*att_values)(const float *a, const uint16_t *v, int64_t stride, int n_pos, int hd, float *o);
	/* x[i] = exp(x[i] - mx) for i < n (x[i] <= mx); returns the sum */
	float (*exp_sum)(float *x, int n, float mx);
	/* sum of exp(x[i] - mx), x left as it is */
	float (*sum_exp)(const float *x, int n, float mx);
	/* x[0..n) (n % 32 == 0) as Q8_0 blocks */
	void (*quant_q8_0)(const float *x, void *blocks, int64_t n);
	/* g[i] = silu(g[i]) * u[i] */
	void (*silu_mul)(float *g, const float *u, int64_t n);
	dec_dot4_fn dot4_q8_0, dot4_q4_0, dot4_q5_0, dot4_q4_k, dot4_q6_k, dot4_f16;
	dec_gemv8_fn gemv8_q4_k; /* q4_K (repacked) · q8_K */
	dec_gemv8_fn gemv8_q8_0; /* q8_0 (repacked) · q8_0 */
	dec_gemv8_fn gemv8_q6_k; /* q6_K (repacked) · q8_K */
	dec_gemv8_fn gemv8_q4_0, gemv8_q5_0; /* (repacked) · q8_0 */
	/* x[0..n) (n % 256 == 0) as Q8_K blocks */
	void (*quant_q8_k)(const float *x, void *blocks, int64_t n);
	/* x[0..n) rounded to f16, held as f32 (DEC_T_F16R) */
	void (*quant_f16r)(const float *x, float *y, int64_t n);
	dec_dot_fn dot_q4_1, dot_q5_1;         /* q4_1 / q5_1 · q8_1 (no four-token kernels) */
	dec_gemv8_fn gemv8_q4_1, gemv8_q5_1;   /* (repacked) · q8_1 */
	dec_dot_fn dot_q2_k, dot_q3_k, dot_q5_k, dot_iq4_xs; /* · q8_K */
	dec_dot_fn dot_iq4_nl;                               /* · q8_0 */
	dec_gemv8_fn gemv8_q2_k, gemv8_q3_k, gemv8_q5_k, gemv8_iq4_xs, gemv8_iq4_nl; /* (repacked) */
	int gemm_nt; /* tokens per gemm8 call */
	dec_gemm8_fn gemm8_q8_0, gemm8_q4_0, gemm8_q5_0, gemm8_q4_1, gemm8_q4_k, gemm8_q6_k; /* NULL: none */
	dec_gemm_f16_fn gemm_f16; /* a 4 × 4 tile, or NULL */
	/* y[i] = x[i] (f16 to f32, exact) */
	void (*f16_f32)(const uint16_t *x, float *y, int64_t n);
	/* x[0..n) (n % 32 == 0) as Q8_1 blocks */
	void (*quant_q8_1)(const float *x, void *blocks, int64_t n);
	/* y[i] = x[i] as f16 (round to nearest even) */
	void (*quant_f16)(const float *x, uint16_t *y, int64_t n);
	/* att_scores / att_values for the G query heads of one kv head at
	 * once (NULL: call those per head): q [G][hd] with head g's scores at
	 * sc + g * sc_stride; head g's weights at a + g * a_stride and sums at
	 * o + g * o_stride. Each head's operations and their order are the
	 * one-head kernel's (the same bits); a key or value row is loaded and
	 * converted once for the G heads. */
	void (*att_scores_g)(const uint16_t *q, int G, const uint16_t *k, int64_t stride, int n_pos, int hd,
			     float scale, float *sc, int64_t sc_stride);
	void (*att_values_g)(const float *a, int64_t a_stride, int G, const uint16_t *v, int64_t stride, int n_pos,
			     int hd, float *o, int64_t o_stride);
	/* x[0..n) (finite) := softmax: the max m, then exp_sum(x, n, m), then
	 * each x[i] divided by the sum */
	void (*softmax)(float *x, int n);
};

/* The best table for this CPU (CRUCIBLE_DEC_SIMD=generic forces the
 * portable one). */
const struct dec_simd *dec_simd_get(void);
const struct dec_simd *dec_simd_generic(void);
const struct dec_simd *dec_simd_avx2(void); /* NULL when the CPU lacks it */
/* AVX2's table with the AVX-512 (F, BW, VL, VNNI) prefill kernels; NULL
 * when the CPU lacks them. Chosen before AVX2 (CRUCIBLE_DEC_SIMD=avx2 keeps
 * AVX2's). */
const struct dec_simd *dec_simd_avx512(void);
/* The eight-row kernel for packed weights of type t (dec_quant.h), or NULL. */
dec_gemv8_fn dec_vec_gemv8_fn(uint32_t t);
/* The multi-token kernel for repacked weights of type t in the chosen
 * table and its token count, or NULL. */
dec_gemm8_fn dec_vec_gemm8_fn(uint32_t t, int *nt);
/* The same two of a given table (the tests run every table the CPU has). */
dec_gemv8_fn dec_simd_gemv8_of(const struct dec_simd *s, uint32_t t);
dec_gemm8_fn dec_simd_gemm8_of(const struct dec_simd *s, uint32_t t);
/* The four-token kernel for weight type t in the chosen table, or NULL. */
dec_dot4_fn dec_vec_dot4_fn(uint32_t t);

float dec_dot_f32_generic(const void *x, const void *y, int64_t n);
float dec_dot_f16_generic(const void *x, const void *y, int64_t n); /* f16 · f16 */
float dec_dot_f16r_generic(const void *x, const void *y, int64_t n); /* f16 · f16r */
float dec_dot_q8_0_generic(const void *x, const void *y, int64_t n);
float dec_dot_q4_0_generic(const void *x, const void *y, int64_t n);
float dec_dot_q5_0_generic(const void *x, const void *y, int64_t n);
float dec_dot_q4_1_generic(const void *x, const void *y, int64_t n);
float dec_dot_q5_1_generic(const void *x, const void *y, int64_t n);
float dec_dot_q4_k_generic(const void *x, const void *y, int64_t n);
float dec_dot_q6_k_generic(const void *x, const void *y, int64_t n);
float dec_dot_q2_k_generic(const void *x, const void *y, int64_t n);
float dec_dot_q3_k_generic(const void *x, const void *y, int64_t n);
float dec_dot_q5_k_generic(const void *x, const void *y, int64_t n);
float dec_dot_iq4_nl_generic(const void *x, const void *y, int64_t n);
float dec_dot_iq4_xs_generic(const void *x, const void *y, int64_t n);
void dec_axpy_f16_generic(float a, const uint16_t *v, float *o, int64_t n);
void dec_att_scores_generic(const uint16_t *q, const uint16_t *k, int64_t stride, int n_pos, int hd,
			    float scale, float *sc);
float dec_exp_sum_generic(float *x, int n, float mx);
void dec_softmax_generic(float *x, int n);
float dec_sum_exp_generic(const float *x, int n, float mx);
void dec_quant_q8_0_generic(const float *x, void *blocks, int64_t n);
void dec_quant_f16r_generic(const float *x, float *y, int64_t n);
void dec_quant_f16_generic(const float *x, uint16_t *y, int64_t n);
void dec_f16_f32_generic(const uint16_t *x, float *y, int64_t n);
void dec_quant_q8_k_generic(const float *x, void *blocks, int64_t n);
void dec_quant_q8_1(const float *x, void *blocks, int64_t n); /* the portable one */
void dec_silu_mul_generic(float *g, const float *u, int64_t n);
void dec_att_values_generic(const float *a, const uint16_t *v, int64_t stride, int n_pos, int hd,
			    float *o);

#endif
