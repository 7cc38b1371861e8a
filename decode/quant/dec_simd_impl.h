/* dec_simd_impl.h — AVX2 building blocks shared by dec_simd.c (one-token
 * dot products) and dec_simd_x4.c (four tokens per weight row). x86-64 with
 * GCC or Clang only; every function carries the target attribute, so the
 * files compile without -mavx2 and run only after a CPU check. */
#ifndef DEC_SIMD_IMPL_H
#define DEC_SIMD_IMPL_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define DEC_HAVE_X86 1
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define PREFETCH 2048 /* bytes ahead of a weight stream the kernels prefetch */

/* dec_simd_rows.c */
void dec_gemv8_q4_k_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q8_0_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q6_k_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q4_0_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q5_0_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q4_1_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q5_1_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q2_k_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q3_k_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_q5_k_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_iq4_nl_avx2(const void *x8, const void *act, int64_t n, float *out);
void dec_gemv8_iq4_xs_avx2(const void *x8, const void *act, int64_t n, float *out);

/* dec_simd_gemm.c: prefill kernels (dec_simd.h's dec_gemm8_fn, dec_gemm_f16_fn) */
void dec_gemm8_q8_0_avx2(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q4_0_avx2(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q5_0_avx2(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q4_1_avx2(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q4_k_avx2(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q6_k_avx2(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q8_0_vnni(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q4_0_vnni(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q5_0_vnni(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q4_1_vnni(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q4_k_vnni(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm8_q6_k_vnni(const void *x8, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm_f16_avx512(const float *w, size_t w_stride, const void *act, size_t stride, int64_t n, float *out);
void dec_gemm_f16_avx2(const float *w, size_t w_stride, const void *act, size_t stride, int64_t n, float *out);

/* dec_simd_k.c: the low-bit types, one row */
float dec_dot_q2_k_avx2(const void *x, const void *act, int64_t n);
float dec_dot_q3_k_avx2(const void *x, const void *act, int64_t n);
float dec_dot_q5_k_avx2(const void *x, const void *act, int64_t n);
float dec_dot_iq4_nl_avx2(const void *x, const void *act, int64_t n);
float dec_dot_iq4_xs_avx2(const void *x, const void *act, int64_t n);

/* dec_simd_x4.c */
void dec_dot4_q8_0_avx2(const void *x, const void *act, size_t stride, int64_t n, float *out);
void dec_dot4_q4_0_avx2(const void *x, const void *act, size_t stride, int64_t n, float *out);
void dec_dot4_q5_0_avx2(const void *x, const void *act, size_t stride, int64_t n, float *out);
void dec_dot4_q4_k_avx2(const void *x, const void *act, size_t stride, int64_t n, float *out);
void dec_dot4_q6_k_avx2(const void *x, const void *act, size_t stride, int64_t n, float *out);
void dec_dot4_f16_avx2(const void *x, const void *act, size_t stride, int64_t n, float *out);

/* Token, row and position loops unrolled, so each one's sums stay in
 * registers. */
#define UNROLL _Pragma("GCC unroll 16")

AVX2 static inline float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

AVX2 static inline int32_t hsum8i(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

/* Sum of 32 signed×signed byte products as 8 int32 lanes. */
AVX2 static inline __m256i mul_s8(__m256i x, __m256i y)
{
	__m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));

	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* 16 packed nibbles -> 32 bytes: low nibbles first (x[0..16)), then high. */
AVX2 static inline __m256i nibbles(const uint8_t *q)
{
	__m128i b = _mm_loadu_si128((const __m128i *)q), m = _mm_set1_epi8(0xF);

	return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

/* Byte j of the result is 0xFF when bit j of the 32-bit word is set: byte
 * j/8 of the word is broadcast to byte j, OR'd with a mask that has every bit
 * but bit j%8 set, and compared with all-ones. */
AVX2 static inline __m256i bits_to_bytes(const uint8_t *p)
{
	uint32_t w;
	__m256i v, sel = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
					   0x0101010101010101ll, 0);

	memcpy(&w, p, 4);
	v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)w), sel);
	v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfell));
	return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

/* The 8 six-bit scales and mins of a Q4_K block, unpacked without branches. */
static inline void q4k_scales(const uint8_t *q, uint8_t *sc, int16_t *mn)
{
	for (int j = 0; j < 4; j++) {
		sc[j] = q[j] & 63;
		mn[j] = q[j + 4] & 63;
		sc[j + 4] = (uint8_t)((q[j + 8] & 0xF) | ((q[j] >> 6) << 4));
		mn[j + 4] = (int16_t)((q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4));
	}
}

/* The eight scales as 16-bit lanes, both halves of a 256-bit register. */
AVX2 static inline __m256i q4k_scale_vec(const uint8_t *sc)
{
	__m128i s = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)sc));

	return _mm256_set_m128i(s, s);
}

/* Scale k broadcast to all sixteen 16-bit lanes (a byte shuffle). */
AVX2 static inline __m256i q4k_scale_at(__m256i scv, int k)
{
	return _mm256_shuffle_epi8(scv, _mm256_set1_epi16((short)(((2 * k + 1) << 8) | (2 * k))));
}

/* sum over the 8 sub-blocks of min[s] * (activation sum of sub-block s). */
AVX2 static inline int32_t q4k_min_sum(const int16_t *mn, const int16_t *bsums)
{
	__m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)bsums),
				    _mm_loadu_si128((const __m128i *)(bsums + 8)));
	__m128i s = _mm_madd_epi16(_mm_loadu_si128((const __m128i *)mn), bs);

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

#endif
#endif
