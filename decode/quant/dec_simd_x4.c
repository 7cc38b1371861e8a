/* dec_simd_x4.c — AVX2 dot products of one weight row with four encoded
 * activation rows at once (prefill blocks and batched samples): the weight
 * block is loaded and unpacked once and used four times.
 *
 * Each output is bit for bit what the one-token kernel in dec_simd.c gives
 * for that token (same integer sums, same float operations in the same
 * order), so a token's logits do not depend on how it was batched. Keep the
 * two in step: tests/decode/test_quant.c compares them exactly. */
#include "decode/quant/dec_simd.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd_impl.h"

#ifdef DEC_HAVE_X86

#define Y(t) ((const void *)((const uint8_t *)act + (size_t)(t) * stride))

AVX2 void dec_dot4_q8_0_avx2(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q8_0 *x = vx, *y[4] = { Y(0), Y(1), Y(2), Y(3) };
	float sum[4] = { 0, 0, 0, 0 };

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i x0 = _mm256_loadu_si256((const __m256i *)x[i].qs);
		__m256i a0 = _mm256_sign_epi8(x0, x0);
		float d0 = _cvtsh_ss(x[i].d);

		for (int t = 0; t < 4; t++) {
			__m256i y0 = _mm256_loadu_si256((const __m256i *)y[t][i].qs);
			__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(y0, x0)),
						      _mm256_set1_epi16(1));

			sum[t] += d0 * _cvtsh_ss(y[t][i].d) * (float)hsum8i(p);
		}
	}
	for (int t = 0; t < 4; t++)
		out[t] = sum[t];
}

/* Q4_0 and Q5_0: the signed 32 values of block i, then the shared loop. */
AVX2 static inline __m256i q4_0_values(const struct dec_block_q4_0 *x)
{
	return _mm256_sub_epi8(nibbles(x->qs), _mm256_set1_epi8(8));
}

AVX2 static inline __m256i q5_0_values(const struct dec_block_q5_0 *x)
{
	__m256i hi = _mm256_and_si256(bits_to_bytes(x->qh), _mm256_set1_epi8(0x10));

	return _mm256_sub_epi8(_mm256_or_si256(nibbles(x->qs), hi), _mm256_set1_epi8(16));
}

AVX2 void dec_dot4_q4_0_avx2(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q4_0 *x = vx;
	const struct dec_block_q8_0 *y[4] = { Y(0), Y(1), Y(2), Y(3) };
	float sum[4] = { 0, 0, 0, 0 };

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i q = q4_0_values(&x[i]);
		float d = _cvtsh_ss(x[i].d);

		for (int t = 0; t < 4; t++) {
			__m256i p = mul_s8(q, _mm256_loadu_si256((const __m256i *)y[t][i].qs));

			sum[t] += d * _cvtsh_ss(y[t][i].d) * (float)hsum8i(p);
		}
	}
	for (int t = 0; t < 4; t++)
		out[t] = sum[t];
}

AVX2 void dec_dot4_q5_0_avx2(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q5_0 *x = vx;
	const struct dec_block_q8_0 *y[4] = { Y(0), Y(1), Y(2), Y(3) };
	float sum[4] = { 0, 0, 0, 0 };

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i q = q5_0_values(&x[i]);
		float d = _cvtsh_ss(x[i].d);

		for (int t = 0; t < 4; t++) {
			__m256i p = mul_s8(q, _mm256_loadu_si256((const __m256i *)y[t][i].qs));

			sum[t] += d * _cvtsh_ss(y[t][i].d) * (float)hsum8i(p);
		}
	}
	for (int t = 0; t < 4; t++)
		out[t] = sum[t];
}

AVX2 void dec_dot4_q4_k_avx2(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q4_K *x = vx;
	const struct dec_block_q8_K *y[4] = { Y(0), Y(1), Y(2), Y(3) };
	const __m256i m4 = _mm256_set1_epi8(0xF);
	float sum[4] = { 0, 0, 0, 0 };

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i acc[4], scv;
		uint8_t sc[8];
		int16_t mn[8];
		float dx = _cvtsh_ss(x[i].d), dmin = _cvtsh_ss(x[i].dmin);

		q4k_scales(x[i].scales, sc, mn);
		scv = q4k_scale_vec(sc);
		for (int t = 0; t < 4; t++)
			acc[t] = _mm256_setzero_si256();
		for (int j = 0; j < 4; j++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * j));
			__m256i lo = _mm256_and_si256(q, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
			__m256i s0 = q4k_scale_at(scv, 2 * j), s1 = q4k_scale_at(scv, 2 * j + 1);

			for (int t = 0; t < 4; t++) {
				const int8_t *q8 = y[t][i].qs + 64 * j;
				__m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)q8));
				__m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32)));

				acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p0, s0));
				acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p1, s1));
			}
		}
		for (int t = 0; t < 4; t++)
			sum[t] += y[t][i].d * (dx * (float)hsum8i(acc[t]) -
					       dmin * (float)q4k_min_sum(mn, y[t][i].bsums));
	}
	for (int t = 0; t < 4; t++)
		out[t] = sum[t];
}

AVX2 void dec_dot4_q6_k_avx2(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q6_K *x = vx;
	const struct dec_block_q8_K *y[4] = { Y(0), Y(1), Y(2), Y(3) };
	const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3);
	float sum[4] = { 0, 0, 0, 0 };

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i acc[4];
		const int8_t *sc = x[i].scales;
		int32_t bias[4] = { 0, 0, 0, 0 };
		float dx = _cvtsh_ss(x[i].d);

		for (int t = 0; t < 4; t++) {
			for (int g = 0; g < 16; g++)
				bias[t] += sc[g] * y[t][i].bsums[g];
			acc[t] = _mm256_setzero_si256();
		}
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
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
				int g = 8 * h + 2 * k;
				__m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));

				for (int t = 0; t < 4; t++) {
					const int8_t *q8 = y[t][i].qs + 128 * h + 32 * k;
					__m256i p = _mm256_maddubs_epi16(u[k], _mm256_loadu_si256((const __m256i *)q8));

					acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p, s));
				}
			}
		}
		for (int t = 0; t < 4; t++)
			sum[t] += dx * y[t][i].d * (float)(hsum8i(acc[t]) - 32 * bias[t]);
	}
	for (int t = 0; t < 4; t++)
		out[t] = sum[t];
}

AVX2 void dec_dot4_f16_avx2(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const uint16_t *x = vx;
	const float *y[4] = { Y(0), Y(1), Y(2), Y(3) };
	__m256 a0[4], a1[4];
	int64_t i = 0;

	for (int t = 0; t < 4; t++)
		a0[t] = a1[t] = _mm256_setzero_ps();
	for (; i + 16 <= n; i += 16) {
		__m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
		__m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i + 8)));

		for (int t = 0; t < 4; t++) {
			a0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y[t] + i), a0[t]);
			a1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(y[t] + i + 8), a1[t]);
		}
	}
	for (int t = 0; t < 4; t++) {
		float s = hsum8(_mm256_add_ps(a0[t], a1[t]));

		for (int64_t k = i; k < n; k++)
			s += dec_f16_to_f32(x[k]) * y[t][k];
		out[t] = s;
	}
}

#endif
