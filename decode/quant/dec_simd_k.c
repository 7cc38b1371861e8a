/* dec_simd_k.c — AVX2 kernels of the low-bit types (Q2_K, Q3_K, Q5_K,
 * IQ4_NL, IQ4_XS): one row against one token (eight repacked rows against
 * one token are in dec_simd_rows.c with the other types'). Each takes the
 * exact integer sums and then the float step of its portable kernel
 * (dec_quant_k.c), so the results agree bit for bit;
 * tests/decode/test_quant_k.c compares them exactly.
 *
 * Unsigned quants (Q2_K 0..3, Q3_K's q + 4 in 0..7, Q5_K 0..31) go straight
 * into maddubs and Q3_K's offset comes off with the activation block sums;
 * the IQ4 codebook values (signed, |v| <= 127) are looked up with a byte
 * shuffle and multiplied as maddubs(|a|, v with a's sign), exact for every
 * activation byte, -128 included. */
#include "decode/quant/dec_simd.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd_impl.h"

#ifdef DEC_HAVE_X86

/* The two 16-bit scales of consecutive sub-blocks, each in one 128-bit half
 * (a maddubs of 32 values gives sub-block s in the low half). */
AVX2 static inline __m256i scale_pair(int lo, int hi)
{
	return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
}

/* The 2-bit fields at bit 2j of each byte. */
AVX2 static inline __m256i bits2(__m256i q, int j)
{
	return _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), _mm256_set1_epi8(3));
}

/* Bit k of each byte, moved to bit `to`. */
AVX2 static inline __m256i bit_at(__m256i h, int k, int to)
{
	return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, k), _mm256_set1_epi8(1)), to);
}

/* sum of m[s] * bsums[s] over the 16 sub-blocks (m as 16 bytes) */
AVX2 static inline int32_t min_sum16(__m128i m, const int16_t *bsums)
{
	__m256i p = _mm256_madd_epi16(_mm256_cvtepu8_epi16(m), _mm256_loadu_si256((const __m256i *)bsums));

	return hsum8i(p);
}

AVX2 static inline int32_t smin_sum16(const int8_t *m, const int16_t *bsums)
{
	__m256i p = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)m)),
				      _mm256_loadu_si256((const __m256i *)bsums));

	return hsum8i(p);
}

/* Quarter j of a Q2_K / Q3_K half (bits 2j of the 32 bytes q, sub-blocks
 * s, s + 1 = 8 h + 2 j, + 1): u · a as 16-bit pairs, times the two scales.
 * Called with constant j so the shifts are immediates. */
AVX2 static inline __m256i k2_quarter(__m256i u, const int8_t *a, int sc0, int sc1)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)a)), scale_pair(sc0, sc1));
}

#define Q2K_Q(j) k2_quarter(bits2(q, j), a + 32 * (j), sc[s0 + 2 * (j)] & 0xF, sc[s0 + 2 * (j) + 1] & 0xF)

/* Products of 2-bit quants (at most 2 · 3 · 128 a pair) times 4-bit scales. */
AVX2 float dec_dot_q2_k_avx2(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q2_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		const uint8_t *sc = x[i].scales;
		__m128i s16 = _mm_loadu_si128((const __m128i *)sc);
		__m256i acc = _mm256_setzero_si256();
		int32_t summ = min_sum16(_mm_and_si128(_mm_srli_epi16(s16, 4), _mm_set1_epi8(0xF)), y[i].bsums);

		for (int h = 0; h < 2; h++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
			const int8_t *a = y[i].qs + 128 * h;
			int s0 = 8 * h;

			acc = _mm256_add_epi32(acc, _mm256_add_epi32(Q2K_Q(0), Q2K_Q(1)));
			acc = _mm256_add_epi32(acc, _mm256_add_epi32(Q2K_Q(2), Q2K_Q(3)));
		}
		sum += y[i].d * (_cvtsh_ss(x[i].d) * (float)hsum8i(acc) - _cvtsh_ss(x[i].dmin) * (float)summ);
	}
	return sum;
}

/* Q3_K's 16 scales (-32..31) from the 12 packed bytes, four at a time:
 * low nibbles from bytes 0..7 (scales 0..7) and their high nibbles (8..15),
 * the top 2 bits from bytes 8..11 at bit 2 (j / 4). */
static inline __m128i q3k_scales(const uint8_t *p)
{
	uint32_t a[3], o[4];

	memcpy(a, p, 12);
	o[0] = (a[0] & 0x0f0f0f0f) | (a[2] & 0x03030303) << 4;
	o[1] = (a[1] & 0x0f0f0f0f) | (a[2] >> 2 & 0x03030303) << 4;
	o[2] = (a[0] >> 4 & 0x0f0f0f0f) | (a[2] >> 4 & 0x03030303) << 4;
	o[3] = (a[1] >> 4 & 0x0f0f0f0f) | (a[2] >> 6 & 0x03030303) << 4;
	return _mm_sub_epi8(_mm_loadu_si128((const __m128i *)o), _mm_set1_epi8(32));
}

#define Q3K_Q(j) k2_quarter(_mm256_or_si256(bits2(q, j), bit_at(hm, 4 * h + (j), 2)), a + 32 * (j), \
			    sc[8 * h + 2 * (j)], sc[8 * h + 2 * (j) + 1])

/* Half h (values 128 h ..) of a Q3_K block; h constant at each call. */
AVX2 static inline __m256i q3k_half(const uint8_t *qs, __m256i hm, const int8_t *a, const int8_t *sc, int h)
{
	__m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));

	a += 128 * h;
	return _mm256_add_epi32(_mm256_add_epi32(Q3K_Q(0), Q3K_Q(1)), _mm256_add_epi32(Q3K_Q(2), Q3K_Q(3)));
}

/* q + 4 (0..7: the low 2 bits and the 3rd bit) times the activation, at most
 * 2 · 7 · 128 a pair, times the signed scales; minus 4 · scale · block sum. */
AVX2 float dec_dot_q3_k_avx2(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q3_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		int8_t sc[16];
		__m256i acc, hm = _mm256_loadu_si256((const __m256i *)x[i].hmask);
		int32_t bias;

		_mm_storeu_si128((__m128i *)sc, q3k_scales(x[i].scales));
		bias = smin_sum16(sc, y[i].bsums);
		acc = _mm256_add_epi32(q3k_half(x[i].qs, hm, y[i].qs, sc, 0), q3k_half(x[i].qs, hm, y[i].qs, sc, 1));
		sum += _cvtsh_ss(x[i].d) * y[i].d * (float)(hsum8i(acc) - 4 * bias);
	}
	return sum;
}

/* Pair j of a Q5_K block: sub-blocks 2j (low nibbles, bit 2j of qh) and
 * 2j + 1 (high nibbles, bit 2j + 1), at most 2 · 31 · 128 a pair. */
AVX2 static inline __m256i q5k_pair(const uint8_t *qs, __m256i qh, const int8_t *a, __m256i scv, int j)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);
	__m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
	__m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), bit_at(qh, 2 * j, 4));
	__m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), bit_at(qh, 2 * j + 1, 4));
	__m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(a + 64 * j)));
	__m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a + 64 * j + 32)));

	return _mm256_add_epi32(_mm256_madd_epi16(p0, q4k_scale_at(scv, 2 * j)),
				_mm256_madd_epi16(p1, q4k_scale_at(scv, 2 * j + 1)));
}

/* As dot_q4_k with the 5th bits. */
AVX2 float dec_dot_q5_k_avx2(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q5_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i acc, scv, qh = _mm256_loadu_si256((const __m256i *)x[i].qh);
		uint8_t sc[8];
		int16_t mn[8];

		q4k_scales(x[i].scales, sc, mn);
		scv = q4k_scale_vec(sc);
		acc = _mm256_add_epi32(q5k_pair(x[i].qs, qh, y[i].qs, scv, 0), q5k_pair(x[i].qs, qh, y[i].qs, scv, 1));
		acc = _mm256_add_epi32(acc, _mm256_add_epi32(q5k_pair(x[i].qs, qh, y[i].qs, scv, 2),
							     q5k_pair(x[i].qs, qh, y[i].qs, scv, 3)));
		sum += y[i].d * (_cvtsh_ss(x[i].d) * (float)hsum8i(acc) -
				 _cvtsh_ss(x[i].dmin) * (float)q4k_min_sum(mn, y[i].bsums));
	}
	return sum;
}

/* The codebook in both 128-bit halves, for _mm256_shuffle_epi8. */
AVX2 static inline __m256i iq4_lut(void)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)dec_iq4nl_values));
}

AVX2 float dec_dot_iq4_nl_avx2(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_iq4_nl *x = vx;
	const struct dec_block_q8_0 *y = vy;
	const __m256i lut = iq4_lut();
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i q = _mm256_shuffle_epi8(lut, nibbles(x[i].qs));
		__m256i p = mul_s8(_mm256_loadu_si256((const __m256i *)y[i].qs), q);

		sum += _cvtsh_ss(x[i].d) * _cvtsh_ss(y[i].d) * (float)hsum8i(p);
	}
	return sum;
}

/* Per block of 32 the signed products in 16-bit pairs (at most 2 · 127 ·
 * 127), times the block's scale (|s| <= 32) into 32 bits. */
AVX2 float dec_dot_iq4_xs_avx2(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_iq4_xs *x = vx;
	const struct dec_block_q8_K *y = vy;
	const __m256i lut = iq4_lut();
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i acc = _mm256_setzero_si256();

		for (int b = 0; b < 8; b++) {
			__m256i q = _mm256_shuffle_epi8(lut, nibbles(x[i].qs + 16 * b));
			__m256i a = _mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * b));
			__m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(q, a));

			acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16((short)dec_iq4xs_scale(&x[i], b))));
		}
		sum += _cvtsh_ss(x[i].d) * y[i].d * (float)hsum8i(acc);
	}
	return sum;
}

#endif
