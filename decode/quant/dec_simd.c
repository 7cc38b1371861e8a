/* dec_simd.c — AVX2/FMA/F16C dot products (x86-64 only, compiled with
 * function target attributes so the rest of the build stays portable) and
 * the run-time choice between them and the portable kernels.
 *
 * Integer kernels use the maddubs trick: _mm256_maddubs_epi16 multiplies
 * unsigned by signed bytes, so signed×signed goes through |x| and sign(y,x);
 * unsigned quants (Q4_K nibbles, Q6_K 6-bit values before the -32 offset)
 * go in directly and the offset is removed with the activation block sums. */
#include "decode/quant/dec_simd.h"
#include "decode/quant/dec_quant.h"

#include <stdio.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const struct dec_simd generic = {
	"generic", dec_dot_f32_generic, dec_dot_f16r_generic, dec_dot_q8_0_generic,
	dec_dot_q4_0_generic, dec_dot_q5_0_generic, dec_dot_q4_k_generic, dec_dot_q6_k_generic,
	dec_axpy_f16_generic, dec_att_scores_generic, dec_att_values_generic,
	dec_exp_sum_generic, dec_sum_exp_generic, dec_quant_q8_0_generic, dec_silu_mul_generic,
	NULL, NULL, NULL, NULL, NULL, NULL, dec_gemv8_q4_k_generic, dec_gemv8_q8_0_generic,
	dec_gemv8_q6_k_generic, dec_gemv8_q4_0_generic, dec_gemv8_q5_0_generic,
	dec_quant_q8_k_generic, dec_quant_f16r_generic, dec_dot_q4_1_generic, dec_dot_q5_1_generic,
	dec_gemv8_q4_1_generic, dec_gemv8_q5_1_generic,
	.dot_q2_k = dec_dot_q2_k_generic, .dot_q3_k = dec_dot_q3_k_generic, .dot_q5_k = dec_dot_q5_k_generic,
	.dot_iq4_xs = dec_dot_iq4_xs_generic, .dot_iq4_nl = dec_dot_iq4_nl_generic,
	.gemv8_q2_k = dec_gemv8_q2_k_generic, .gemv8_q3_k = dec_gemv8_q3_k_generic,
	.gemv8_q5_k = dec_gemv8_q5_k_generic, .gemv8_iq4_xs = dec_gemv8_iq4_xs_generic,
	.gemv8_iq4_nl = dec_gemv8_iq4_nl_generic,
	.quant_q8_1 = dec_quant_q8_1, .quant_f16 = dec_quant_f16_generic,
	.f16_f32 = dec_f16_f32_generic, .softmax = dec_softmax_generic,
};

void dec_q8_0_sums(void *row, int64_t n)
{
	const struct dec_block_q8_0 *b = row;
	uint8_t *out = (uint8_t *)row + DEC_Q8_0_SUMS(n);

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		int32_t s = 0;

		for (int k = 0; k < DEC_QK; k++)
			s += b[i].qs[k];
		memcpy(out + 4 * i, &s, 4);
	}
}

const struct dec_simd *dec_simd_generic(void)
{
	return &generic;
}

#include "decode/quant/dec_simd_impl.h"

#ifdef DEC_HAVE_X86

AVX2 static float dot_f32(const void *vx, const void *vy, int64_t n)
{
	const float *x = vx, *y = vy;
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	int64_t i = 0;
	float s;

	for (; i + 16 <= n; i += 16) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
	}
	s = hsum8(_mm256_add_ps(a0, a1));
	for (; i < n; i++)
		s += x[i] * y[i];
	return s;
}

/* f16 weights · f16 values held as f32 (DEC_T_F16R). The prefetch 2 KiB
 * ahead (one line per 32 values) keeps more of the weight stream in flight:
 * +5-8% decode speed on the 2-core VM, where the hardware prefetcher alone
 * left the F16 product short of the memory bandwidth. */
AVX2 static float dot_f16(const void *vx, const void *vy, int64_t n)
{
	const uint16_t *x = vx;
	const float *y = vy;
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	int64_t i = 0;
	float s;

	/* two accumulators, 16 values a step: dec_dot4_f16_avx2 repeats this */
	for (; i + 16 <= n; i += 16) {
		if (!(i & 31))
			_mm_prefetch((const char *)(x + i) + PREFETCH, _MM_HINT_T0);
		a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))),
				     _mm256_loadu_ps(y + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i + 8))),
				     _mm256_loadu_ps(y + i + 8), a1);
	}
	s = hsum8(_mm256_add_ps(a0, a1));
	for (; i < n; i++)
		s += dec_f16_to_f32(x[i]) * y[i];
	return s;
}

/* Per block the exact integer sum, then the float step of the portable
 * kernel: bit for bit dec_dot_q8_0_generic (and the repacked eight-row
 * kernels, which carry most rows). */
AVX2 static float dot_q8_0(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q8_0 *x = vx, *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i p = mul_s8(_mm256_loadu_si256((const __m256i *)x[i].qs),
				   _mm256_loadu_si256((const __m256i *)y[i].qs));

		sum += _cvtsh_ss(x[i].d) * _cvtsh_ss(y[i].d) * (float)hsum8i(p);
	}
	return sum;
}

/* Q4_0, Q5_0: the float step of the portable kernels, as dot_q8_0 */
AVX2 static float dot_q4_0(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q4_0 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i q = _mm256_sub_epi8(nibbles(x[i].qs), _mm256_set1_epi8(8));
		__m256i p = mul_s8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));

		sum += _cvtsh_ss(x[i].d) * _cvtsh_ss(y[i].d) * (float)hsum8i(p);
	}
	return sum;
}

AVX2 static float dot_q5_0(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q5_0 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i hi = _mm256_and_si256(bits_to_bytes(x[i].qh), _mm256_set1_epi8(0x10));
		__m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles(x[i].qs), hi), _mm256_set1_epi8(16));
		__m256i p = mul_s8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));

		sum += _cvtsh_ss(x[i].d) * _cvtsh_ss(y[i].d) * (float)hsum8i(p);
	}
	return sum;
}

/* Q4_1, Q5_1: unsigned values straight into maddubs (at most 2 · 31 · 127
 * a pair), then the float step of dec_dot_q4_1_generic: bit for bit. */
AVX2 static float dot_q4_1(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q4_1 *x = vx;
	const struct dec_block_q8_1 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(nibbles(x[i].qs),
								   _mm256_loadu_si256((const __m256i *)y[i].qs)),
					      _mm256_set1_epi16(1));

		sum += _cvtsh_ss(x[i].d) * _cvtsh_ss(y[i].d) * (float)hsum8i(p) +
		       _cvtsh_ss(x[i].m) * _cvtsh_ss(y[i].s);
	}
	return sum;
}

AVX2 static float dot_q5_1(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q5_1 *x = vx;
	const struct dec_block_q8_1 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i hi = _mm256_and_si256(bits_to_bytes(x[i].qh), _mm256_set1_epi8(0x10));
		__m256i q = _mm256_or_si256(nibbles(x[i].qs), hi);
		__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)y[i].qs)),
					      _mm256_set1_epi16(1));

		sum += _cvtsh_ss(x[i].d) * _cvtsh_ss(y[i].d) * (float)hsum8i(p) +
		       _cvtsh_ss(x[i].m) * _cvtsh_ss(y[i].s);
	}
	return sum;
}

/* Per super-block the exact integer sums, then the float step the portable
 * kernel takes (dec_dot_q4_k_generic): the results agree bit for bit. */
AVX2 static float dot_q4_k(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q4_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0xF);
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i acc = _mm256_setzero_si256(), scv;
		uint8_t sc[8];
		int16_t mn[8];
		float dx = _cvtsh_ss(x[i].d), dmin = _cvtsh_ss(x[i].dmin);

		q4k_scales(x[i].scales, sc, mn);
		scv = q4k_scale_vec(sc);
		for (int j = 0; j < 4; j++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * j));
			__m256i lo = _mm256_and_si256(q, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
			__m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * j)));
			__m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * j + 32)));

			acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p0, q4k_scale_at(scv, 2 * j)));
			acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p1, q4k_scale_at(scv, 2 * j + 1)));
		}
		sum += y[i].d * (dx * (float)hsum8i(acc) - dmin * (float)q4k_min_sum(mn, y[i].bsums));
	}
	return sum;
}

AVX2 static float dot_q6_k(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q6_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3);
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i acc = _mm256_setzero_si256();
		const int8_t *sc = x[i].scales;
		int32_t bias = 0;

		for (int g = 0; g < 16; g++)
			bias += sc[g] * y[i].bsums[g];
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
			const int8_t *q8 = y[i].qs + 128 * h;
			__m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
			__m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
			__m256i hb = _mm256_loadu_si256((const __m256i *)qh);
			__m256i u[4];

			u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
			u[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
					       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
			u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
					       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
			u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
					       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
			for (int k = 0; k < 4; k++) {
				__m256i p = _mm256_maddubs_epi16(u[k], _mm256_loadu_si256((const __m256i *)(q8 + 32 * k)));
				int g = 8 * h + 2 * k;
				__m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));

				acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
			}
		}
		sum += _cvtsh_ss(x[i].d) * y[i].d * (float)(hsum8i(acc) - 32 * bias);
	}
	return sum;
}

AVX2 static void axpy_f16(float a, const uint16_t *v, float *o, int64_t n)
{
	__m256 av = _mm256_set1_ps(a);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(o + i, _mm256_fmadd_ps(av, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i))),
							_mm256_loadu_ps(o + i)));
	for (; i < n; i++)
		o[i] += a * dec_f16_to_f32(v[i]);
}

/* hd a multiple of 8 (every model has hd % 32 == 0); else the portable path */
AVX2 static void att_scores(const uint16_t *q, const uint16_t *k, int64_t stride, int n_pos, int hd,
			    float scale, float *sc)
{
	__m256 qv[32];

	if (hd % 8 || hd > 256) {
		dec_att_scores_generic(q, k, stride, n_pos, hd, scale, sc);
		return;
	}
	for (int i = 0; i < hd / 8; i++)
		qv[i] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(q + 8 * i)));
	/* four positions at a time: their chains are independent, so the FMAs'
	 * latency overlaps; each position's operations are the loop's below */
	int p = 0;
	for (; p + 4 <= n_pos; p += 4) {
		__m256 a0[4], a1[4];
		int i = 0;

		UNROLL
		for (int t = 0; t < 4; t++)
			a0[t] = a1[t] = _mm256_setzero_ps();
		for (; i + 2 <= hd / 8; i += 2)
			UNROLL
			for (int t = 0; t < 4; t++) {
				const uint16_t *kp = k + (p + t) * stride + 8 * i;

				a0[t] = _mm256_fmadd_ps(qv[i], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)kp)), a0[t]);
				a1[t] = _mm256_fmadd_ps(qv[i + 1], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kp + 8))),
							a1[t]);
			}
		if (i < hd / 8)
			UNROLL
			for (int t = 0; t < 4; t++)
				a0[t] = _mm256_fmadd_ps(qv[i], _mm256_cvtph_ps(_mm_loadu_si128(
									(const __m128i *)(k + (p + t) * stride + 8 * i))), a0[t]);
		UNROLL
		for (int t = 0; t < 4; t++)
			sc[p + t] = hsum8(_mm256_add_ps(a0[t], a1[t])) * scale;
	}
	for (; p < n_pos; p++) {
		const uint16_t *kp = k + p * stride;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		int i = 0;

		for (; i + 2 <= hd / 8; i += 2) {
			a0 = _mm256_fmadd_ps(qv[i], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kp + 8 * i))), a0);
			a1 = _mm256_fmadd_ps(qv[i + 1],
					     _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kp + 8 * i + 8))), a1);
		}
		if (i < hd / 8)
			a0 = _mm256_fmadd_ps(qv[i], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kp + 8 * i))), a0);
		sc[p] = hsum8(_mm256_add_ps(a0, a1)) * scale;
	}
}

AVX2 static void att_values(const float *a, const uint16_t *v, int64_t stride, int n_pos, int hd, float *o)
{
	__m256 acc[32];

	if (hd % 8 || hd > 256) {
		dec_att_values_generic(a, v, stride, n_pos, hd, o);
		return;
	}
	for (int i = 0; i < hd / 8; i++)
		acc[i] = _mm256_loadu_ps(o + 8 * i);
	for (int p = 0; p < n_pos; p++) {
		const uint16_t *vp = v + p * stride;
		__m256 ap = _mm256_set1_ps(a[p]);

		for (int i = 0; i < hd / 8; i++)
			acc[i] = _mm256_fmadd_ps(ap, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vp + 8 * i))), acc[i]);
	}
	for (int i = 0; i < hd / 8; i++)
		_mm256_storeu_ps(o + 8 * i, acc[i]);
}

/* att_scores for G heads (G constant at each call: the accumulators stay
 * in registers): per position each head's two chains, as att_scores'. */
AVX2 static inline __attribute__((always_inline)) void
scores_g(const float *qf, int G, const uint16_t *k, int64_t stride, int n_pos, int hd, float scale, float *sc,
	 int64_t sc_stride)
{
	for (int p = 0; p < n_pos; p++) {
		const uint16_t *kp = k + p * stride;
		__m256 a0[8], a1[8];
		int i = 0;

		UNROLL
		for (int g = 0; g < G; g++)
			a0[g] = a1[g] = _mm256_setzero_ps();
		for (; i + 2 <= hd / 8; i += 2) {
			__m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kp + 8 * i)));
			__m256 k1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kp + 8 * i + 8)));

			UNROLL
			for (int g = 0; g < G; g++) {
				a0[g] = _mm256_fmadd_ps(_mm256_loadu_ps(qf + g * hd + 8 * i), k0, a0[g]);
				a1[g] = _mm256_fmadd_ps(_mm256_loadu_ps(qf + g * hd + 8 * i + 8), k1, a1[g]);
			}
		}
		if (i < hd / 8) {
			__m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kp + 8 * i)));

			UNROLL
			for (int g = 0; g < G; g++)
				a0[g] = _mm256_fmadd_ps(_mm256_loadu_ps(qf + g * hd + 8 * i), k0, a0[g]);
		}
		UNROLL
		for (int g = 0; g < G; g++)
			sc[g * sc_stride + p] = hsum8(_mm256_add_ps(a0[g], a1[g])) * scale;
	}
}

AVX2 static void att_scores_g(const uint16_t *q, int G, const uint16_t *k, int64_t stride, int n_pos, int hd,
			      float scale, float *sc, int64_t sc_stride)
{
	float qf[8 * 256];

	if (hd % 8 || hd > 256 || G < 2 || G > 8) {
		for (int g = 0; g < G; g++)
			att_scores(q + (size_t)g * hd, k, stride, n_pos, hd, scale, sc + g * sc_stride);
		return;
	}
	for (int i = 0; i < G * hd / 8; i++)
		_mm256_storeu_ps(qf + 8 * i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(q + 8 * i))));
	switch (G) {
	case 2: scores_g(qf, 2, k, stride, n_pos, hd, scale, sc, sc_stride); break;
	case 3: scores_g(qf, 3, k, stride, n_pos, hd, scale, sc, sc_stride); break;
	case 4: scores_g(qf, 4, k, stride, n_pos, hd, scale, sc, sc_stride); break;
	case 5: scores_g(qf, 5, k, stride, n_pos, hd, scale, sc, sc_stride); break;
	case 6: scores_g(qf, 6, k, stride, n_pos, hd, scale, sc, sc_stride); break;
	case 7: scores_g(qf, 7, k, stride, n_pos, hd, scale, sc, sc_stride); break;
	default: scores_g(qf, 8, k, stride, n_pos, hd, scale, sc, sc_stride); break;
	}
}

/* att_values for G heads: NC 8-value chunks of the head a pass, for every
 * head (G * NC <= 12 accumulators); per (head, value) one FMA chain over
 * the positions in order, as att_values'. */
AVX2 static inline __attribute__((always_inline)) void
values_g(const float *a, int64_t a_stride, int G, const uint16_t *v, int64_t stride, int n_pos, int hd, float *o,
	 int64_t o_stride)
{
	enum { CAP = 12 };
	const int NC = G < CAP ? CAP / G : 1;

	for (int c0 = 0; c0 < hd / 8; c0 += NC) {
		__m256 acc[CAP];

		UNROLL
		for (int g = 0; g < G; g++)
			UNROLL
			for (int j = 0; j < NC; j++)
				acc[g * NC + j] = c0 + j < hd / 8 ? _mm256_loadu_ps(o + g * o_stride + 8 * (c0 + j))
								  : _mm256_setzero_ps();
		for (int p = 0; p < n_pos; p++) {
			const uint16_t *vp = v + p * stride + 8 * c0;

			UNROLL
			for (int j = 0; j < NC; j++)
				if (c0 + j < hd / 8) {
					__m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vp + 8 * j)));

					UNROLL
					for (int g = 0; g < G; g++)
						acc[g * NC + j] = _mm256_fmadd_ps(_mm256_set1_ps(a[g * a_stride + p]), x,
										  acc[g * NC + j]);
				}
		}
		UNROLL
		for (int g = 0; g < G; g++)
			UNROLL
			for (int j = 0; j < NC; j++)
				if (c0 + j < hd / 8)
					_mm256_storeu_ps(o + g * o_stride + 8 * (c0 + j), acc[g * NC + j]);
	}
}

AVX2 static void att_values_g(const float *a, int64_t a_stride, int G, const uint16_t *v, int64_t stride, int n_pos,
			      int hd, float *o, int64_t o_stride)
{
	if (hd % 8 || hd > 256 || G < 2 || G > 8) {
		for (int g = 0; g < G; g++)
			att_values(a + g * a_stride, v, stride, n_pos, hd, o + g * o_stride);
		return;
	}
	switch (G) {
	case 2: values_g(a, a_stride, 2, v, stride, n_pos, hd, o, o_stride); break;
	case 3: values_g(a, a_stride, 3, v, stride, n_pos, hd, o, o_stride); break;
	case 4: values_g(a, a_stride, 4, v, stride, n_pos, hd, o, o_stride); break;
	case 5: values_g(a, a_stride, 5, v, stride, n_pos, hd, o, o_stride); break;
	case 6: values_g(a, a_stride, 6, v, stride, n_pos, hd, o, o_stride); break;
	case 7: values_g(a, a_stride, 7, v, stride, n_pos, hd, o, o_stride); break;
	default: values_g(a, a_stride, 8, v, stride, n_pos, hd, o, o_stride); break;
	}
}

/* e^x for x in [-87, 0] (softmax after subtracting the max), 8 lanes:
 * x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for exactness), e^r by
 * Cephes' single-precision polynomial, 2^n built in the exponent bits.
 * Relative error ~2e-7; inputs below -87 give ~e^-87. */
AVX2 static __m256 exp8(__m256 x)
{
	__m256 n, r, p;
	__m256i e;

	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
	n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

AVX2 static float exp_sum(float *x, int n, float mx)
{
	__m256 acc = _mm256_setzero_ps(), m = _mm256_set1_ps(mx);
	int i = 0;
	float s;

	for (; i + 8 <= n; i += 8) {
		__m256 y = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));

		_mm256_storeu_ps(x + i, y);
		acc = _mm256_add_ps(acc, y);
	}
	s = hsum8(acc);
	for (; i < n; i++) {
		x[i] = expf(x[i] - mx);
		s += x[i];
	}
	return s;
}

/* The attention weights of one head: the max 8 lanes at a time (exact in
 * any order for finite scores: ±0 give the same e^(x - m)), exp_sum, then
 * the IEEE quotients, as the scalar steps give them. */
AVX2 static void softmax(float *x, int n)
{
	__m256 m8 = _mm256_set1_ps(-INFINITY);
	float mx = -INFINITY, sum;
	int i = 0;

	for (; i + 8 <= n; i += 8)
		m8 = _mm256_max_ps(_mm256_loadu_ps(x + i), m8);
	{
		float t[8];

		_mm256_storeu_ps(t, m8);
		for (int k = 0; k < 8; k++)
			mx = t[k] > mx ? t[k] : mx;
	}
	for (; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	sum = exp_sum(x, n, mx);
	{
		__m256 s8 = _mm256_set1_ps(sum);

		for (i = 0; i + 8 <= n; i += 8)
			_mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), s8));
		for (; i < n; i++)
			x[i] /= sum;
	}
}

/* Σ e^(x - mx), summed in double lanes (a vocabulary's worth of terms: f32
 * lanes lost ~1e-5 of it at 20k tokens) */
AVX2 static float sum_exp(const float *x, int n, float mx)
{
	__m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
	__m256 m = _mm256_set1_ps(mx);
	double t[4], s;
	int i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 y = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));

		a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(y)));
		a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(y, 1)));
	}
	_mm256_storeu_pd(t, _mm256_add_pd(a0, a1));
	s = (t[0] + t[1]) + (t[2] + t[3]);
	for (; i < n; i++)
		s += expf(x[i] - mx);
	return (float)s;
}

AVX2 static void quant_q8_0(const float *x, void *vb, int64_t n)
{
	struct dec_block_q8_0 *b = vb;
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (int64_t i = 0; i < n / DEC_QK; i++, x += DEC_QK) {
		__m256 v[4], m;
		__m128 m4;
		__m256i q[4], p;
		float a, id;

		for (int k = 0; k < 4; k++)
			v[k] = _mm256_loadu_ps(x + 8 * k);
		m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
				  _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
		m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
		a = _mm_cvtss_f32(m4);
		id = a ? 127.f / a : 0.f;
		b[i].d = (uint16_t)_cvtss_sh(a / 127.f, 0);
		for (int k = 0; k < 4; k++)
			q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], _mm256_set1_ps(id)),
								  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		/* packs work within 128-bit lanes: fix the order with one permute */
		p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
		_mm256_storeu_si256((__m256i *)b[i].qs, _mm256_permutevar8x32_epi32(p, perm));
	}
}

/* dec_quant_q8_1's steps: quant_q8_0's, plus s = fp16(d · Σq) with d the
 * unrounded amax / 127 (the same bytes: tests/decode/test_quant.c). */
AVX2 static void quant_q8_1(const float *x, void *vb, int64_t n)
{
	struct dec_block_q8_1 *b = vb;
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (int64_t i = 0; i < n / DEC_QK; i++, x += DEC_QK) {
		__m256 v[4], m;
		__m128 m4;
		__m256i q[4], p;
		float a, id, d;
		int32_t sum;

		for (int k = 0; k < 4; k++)
			v[k] = _mm256_loadu_ps(x + 8 * k);
		m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
				  _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
		m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
		a = _mm_cvtss_f32(m4);
		id = a ? 127.f / a : 0.f;
		d = a / 127.f;
		b[i].d = (uint16_t)_cvtss_sh(d, 0);
		for (int k = 0; k < 4; k++)
			q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], _mm256_set1_ps(id)),
								  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		sum = hsum8i(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
		p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
		_mm256_storeu_si256((__m256i *)b[i].qs, _mm256_permutevar8x32_epi32(p, perm));
		b[i].s = (uint16_t)_cvtss_sh(d * (float)sum, 0);
	}
}

/* dec_quant_q8_k_generic's steps: amax, 127/amax, round half to even,
 * clamp to ±127, sums of 16 */
AVX2 static void quant_q8_k(const float *x, void *vb, int64_t n)
{
	struct dec_block_q8_K *b = vb;
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (int64_t i = 0; i < n / DEC_QK_K; i++, x += DEC_QK_K) {
		__m256 m = _mm256_setzero_ps(), idv;
		__m128 m4;
		float a, id;

		for (int k = 0; k < DEC_QK_K / 8; k++)
			m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
		m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
		a = _mm_cvtss_f32(m4);
		id = a ? 127.f / a : 0.f;
		b[i].d = a ? 1.f / id : 0.f;
		idv = _mm256_set1_ps(id);
		for (int k = 0; k < DEC_QK_K / 32; k++) {
			__m256i q[4], p;

			for (int j = 0; j < 4; j++)
				q[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * j), idv),
									  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
			/* saturating packs, then the clamp to -127 (x * 127/amax rounds to at most 127) */
			p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
			p = _mm256_max_epi8(_mm256_permutevar8x32_epi32(p, perm), _mm256_set1_epi8(-127));
			_mm256_storeu_si256((__m256i *)(b[i].qs + 32 * k), p);
			/* the two sums of 16 */
			{
				__m256i s16 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), p), _mm256_set1_epi16(1));
				__m128i s = _mm_hadd_epi32(_mm256_castsi256_si128(s16), _mm256_extracti128_si256(s16, 1));

				s = _mm_hadd_epi32(s, s);
				b[i].bsums[2 * k] = (int16_t)_mm_cvtsi128_si32(s);
				b[i].bsums[2 * k + 1] = (int16_t)_mm_extract_epi32(s, 1);
			}
		}
	}
}

/* F16C rounds to nearest even, handles subnormals and overflows to inf, as
 * dec_f32_to_f16 does */
AVX2 static void quant_f16r(const float *x, float *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
	for (; i < n; i++)
		y[i] = dec_f16_to_f32(dec_f32_to_f16(x[i]));
}

AVX2 static void f16_f32(const uint16_t *x, float *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
	for (; i < n; i++)
		y[i] = dec_f16_to_f32(x[i]);
}

/* The same rounding, the f16 bits stored (the KV cache, a query head) */
AVX2 static void quant_f16(const float *x, uint16_t *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		y[i] = dec_f32_to_f16(x[i]);
}

AVX2 static void silu_mul(float *g, const float *u, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i);
		__m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));

		_mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)),
						      _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static const struct dec_simd avx2 = {
	"avx2", dot_f32, dot_f16, dot_q8_0, dot_q4_0, dot_q5_0, dot_q4_k, dot_q6_k, axpy_f16,
	att_scores, att_values, exp_sum, sum_exp, quant_q8_0, silu_mul,
	dec_dot4_q8_0_avx2, dec_dot4_q4_0_avx2, dec_dot4_q5_0_avx2, dec_dot4_q4_k_avx2, dec_dot4_q6_k_avx2,
	dec_dot4_f16_avx2, dec_gemv8_q4_k_avx2, dec_gemv8_q8_0_avx2,
	dec_gemv8_q6_k_avx2, dec_gemv8_q4_0_avx2, dec_gemv8_q5_0_avx2, quant_q8_k, quant_f16r,
	dot_q4_1, dot_q5_1, dec_gemv8_q4_1_avx2, dec_gemv8_q5_1_avx2,
	.dot_q2_k = dec_dot_q2_k_avx2, .dot_q3_k = dec_dot_q3_k_avx2, .dot_q5_k = dec_dot_q5_k_avx2,
	.dot_iq4_xs = dec_dot_iq4_xs_avx2, .dot_iq4_nl = dec_dot_iq4_nl_avx2,
	.gemv8_q2_k = dec_gemv8_q2_k_avx2, .gemv8_q3_k = dec_gemv8_q3_k_avx2,
	.gemv8_q5_k = dec_gemv8_q5_k_avx2, .gemv8_iq4_xs = dec_gemv8_iq4_xs_avx2,
	.gemv8_iq4_nl = dec_gemv8_iq4_nl_avx2,
	.gemm_nt = 4, .gemm8_q8_0 = dec_gemm8_q8_0_avx2, .gemm8_q4_0 = dec_gemm8_q4_0_avx2,
	.gemm8_q5_0 = dec_gemm8_q5_0_avx2, .gemm8_q4_1 = dec_gemm8_q4_1_avx2, .gemm8_q4_k = dec_gemm8_q4_k_avx2,
	.gemm8_q6_k = dec_gemm8_q6_k_avx2, .gemm_f16 = dec_gemm_f16_avx2,
	.quant_q8_1 = quant_q8_1, .quant_f16 = quant_f16, .f16_f32 = f16_f32,
	.att_scores_g = att_scores_g, .att_values_g = att_values_g, .softmax = softmax,
};

static struct dec_simd avx512;

static void avx512_init(void)
{
	avx512 = avx2;
	avx512.name = "avx512";
	avx512.gemm_nt = 8;
	avx512.gemm8_q8_0 = dec_gemm8_q8_0_vnni;
	avx512.gemm8_q4_0 = dec_gemm8_q4_0_vnni;
	avx512.gemm8_q5_0 = dec_gemm8_q5_0_vnni;
	avx512.gemm8_q4_1 = dec_gemm8_q4_1_vnni;
	avx512.gemm8_q4_k = dec_gemm8_q4_k_vnni;
	avx512.gemm8_q6_k = dec_gemm8_q6_k_vnni;
	avx512.gemm_f16 = dec_gemm_f16_avx512;
}

const struct dec_simd *dec_simd_avx512(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (!dec_simd_avx2() || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
	    !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512vnni"))
		return NULL;
	pthread_once(&once, avx512_init);
	return &avx512;
}

const struct dec_simd *dec_simd_avx2(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
	    __builtin_cpu_supports("f16c"))
		return &avx2;
	return NULL;
}
#else
const struct dec_simd *dec_simd_avx2(void)
{
	return NULL;
}

const struct dec_simd *dec_simd_avx512(void)
{
	return NULL;
}
#endif

const struct dec_simd *dec_simd_get(void)
{
	static const struct dec_simd *chosen; /* a cache of a pure function of the CPU */
	const struct dec_simd *s = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
	const char *env;

	if (s)
		return s;
	env = getenv("CRUCIBLE_DEC_SIMD");
	if (env && !strcmp(env, "generic"))
		s = NULL;
	else if (env && !strcmp(env, "avx2"))
		s = dec_simd_avx2();
	else {
		if (env && *env && strcmp(env, "avx512"))
			fprintf(stderr, "crucible: CRUCIBLE_DEC_SIMD=%s is not generic, avx2 or avx512: the CPU's best table is used\n",
				env);
		s = dec_simd_avx512() ? dec_simd_avx512() : dec_simd_avx2();
	}
	if (!s)
		s = &generic;
	__atomic_store_n(&chosen, s, __ATOMIC_RELEASE);
	return s;
}
