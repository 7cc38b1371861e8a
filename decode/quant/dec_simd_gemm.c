/* dec_simd_gemm.c — blocked kernels for prefill: the 8 rows of a repacked
 * group (dec_quant.h's struct dec_block_*_x8) against NT tokens per call,
 * the weights loaded and unpacked once for the NT tokens. Two builds of one
 * body (this file includes itself): AVX2 (NT = 4, byte products summed in
 * 16 bits as dec_simd_rows.c does) and AVX-512 VNNI (NT = 8, vpdpbusd
 * summing four byte products straight into 32 bits; the extra registers of
 * AVX-512 hold the eight tokens' sums).
 *
 * Bit identity: per (row, token) the integer sum of a block or sub-block is
 * exact in both builds (16-bit partial sums bounded as in dec_simd_rows.c,
 * vpdpbusd does not saturate), and the float step is the one-token kernel's
 * (same operations, same order, block by block), so each output equals the
 * one-token kernel's bit for bit (tests/decode/test_quant.c). */
#ifndef GEMM_BODY
#include "decode/quant/dec_simd.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd_impl.h"

#ifdef DEC_HAVE_X86

#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

/* Token t's encoded activation row. */
#define YT(t) ((const void *)((const uint8_t *)act + (size_t)(t) * stride))

AVX2 static inline __m256i lo4g(__m256i q)
{
	return _mm256_and_si256(q, _mm256_set1_epi8(0xF));
}

AVX2 static inline __m256i hi4g(__m256i q)
{
	return _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(0xF));
}

/* 4 activation bytes broadcast to every lane */
AVX2 static inline __m256i bc4(const int8_t *a)
{
	int32_t v;

	memcpy(&v, a, 4);
	return _mm256_set1_epi32(v);
}

/* ---- AVX2: 16-bit partial sums, widened as the one-token kernels widen */
#define GEMM_BODY 1
#define NT 4
#define VNNI 0
#define KATTR AVX2
#define NAME(x) dec_gemm8_##x##_avx2
/* acc (int32 lanes) += the four u8 × s8 products of each lane */
#define DOTW(acc, u, s) _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
/* a run of 16-bit sums begun from acc32 and ended into it */
#define BEGIN16(acc32) _mm256_setzero_si256()
#define ADD16(a16, u, s) _mm256_add_epi16((a16), _mm256_maddubs_epi16((u), (s)))
#define END16(acc32, a16) _mm256_add_epi32((acc32), _mm256_madd_epi16((a16), _mm256_set1_epi16(1)))
/* a Q4_K sub-block's sum (as two 16-bit halves of a lane) times its scale */
#define SCALE16(a16, scv) _mm256_madd_epi16((a16), _mm256_or_si256((scv), _mm256_slli_epi32((scv), 16)))
/* acc (int32) += the pair products of 16-bit lanes */
#define MADDACC(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#include "decode/quant/dec_simd_gemm.c"
#undef NT
#undef VNNI
#undef KATTR
#undef NAME
#undef DOTW
#undef BEGIN16
#undef ADD16
#undef END16
#undef SCALE16
#undef MADDACC

/* ---- AVX-512 VNNI: vpdpbusd into 32 bits */
#define NT 8
#define VNNI 1
#define KATTR AVX512
#define NAME(x) dec_gemm8_##x##_vnni
#define DOTW(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))
#define BEGIN16(acc32) (acc32)
#define ADD16(a16, u, s) _mm256_dpbusd_epi32((a16), (u), (s))
#define END16(acc32, a16) (a16)
/* the sum (up to 32 · 15 · 128 = 61440: not 16 bits) times the scale */
#define SCALE16(a32, scv) _mm256_mullo_epi32((a32), (scv))
#define MADDACC(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
#include "decode/quant/dec_simd_gemm.c"

/* ---- F16: a tile of 4 rows × 4 tokens, AVX-512 ----------------------------
 * The one-token AVX2 kernel (dot_f16 in dec_simd.c) keeps two 8-lane FMA
 * chains, lane j of the first taking values 16c + j, of the second 16c + 8
 * + j, then hsum8(a0 + a1) and the n % 16 tail one by one. A 16-lane
 * register holds both chains (lane j: values 16c + j), so each (row, token)
 * of the tile is one register and its FMAs are the one-token kernel's, in
 * order; the halves are added and summed as hsum8 does. The weights come
 * converted to f32 (exactly: once per row chunk, by the caller), so a step
 * of 16 values is 8 loads for 16 FMAs and no conversion. */
AVX512 void dec_gemm_f16_avx512(const float *w, size_t w_stride, const void *act, size_t stride, int64_t n,
				float *out)
{
	const float *x0 = w, *x1 = w + w_stride, *x2 = w + 2 * w_stride, *x3 = w + 3 * w_stride;
	const float *y0 = YT(0), *y1 = YT(1), *y2 = YT(2), *y3 = YT(3);
	const float *x[4] = { x0, x1, x2, x3 }, *y[4] = { y0, y1, y2, y3 };
	__m512 acc[4][4];
	int64_t i = 0;

	UNROLL
	for (int r = 0; r < 4; r++) {
		UNROLL
		for (int t = 0; t < 4; t++)
			acc[r][t] = _mm512_setzero_ps();
	}
	for (; i + 16 <= n; i += 16) {
		__m512 w0 = _mm512_loadu_ps(x0 + i), w1 = _mm512_loadu_ps(x1 + i);
		__m512 w2 = _mm512_loadu_ps(x2 + i), w3 = _mm512_loadu_ps(x3 + i);
		__m512 a0 = _mm512_loadu_ps(y0 + i), a1 = _mm512_loadu_ps(y1 + i);
		__m512 a2 = _mm512_loadu_ps(y2 + i), a3 = _mm512_loadu_ps(y3 + i);

#define ROW(r, wr)                                                    \
	acc[r][0] = _mm512_fmadd_ps(wr, a0, acc[r][0]);               \
	acc[r][1] = _mm512_fmadd_ps(wr, a1, acc[r][1]);               \
	acc[r][2] = _mm512_fmadd_ps(wr, a2, acc[r][2]);               \
	acc[r][3] = _mm512_fmadd_ps(wr, a3, acc[r][3]);
		ROW(0, w0)
		ROW(1, w1)
		ROW(2, w2)
		ROW(3, w3)
#undef ROW
	}
	for (int r = 0; r < 4; r++)
		for (int t = 0; t < 4; t++) {
			__m512 v = acc[r][t];
			__m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
			float s = hsum8(_mm256_add_ps(_mm512_castps512_ps256(v), hi));

			for (int64_t k = i; k < n; k++)
				s += x[r][k] * y[t][k];
			out[4 * t + r] = s;
		}
}

/* ---- F16: the same tile for AVX2 -----------------------------------------
 * Row by row, the one-token kernel's two 8-lane chains for each of the 4
 * tokens (dec_dot4_f16_avx2's loop), on the weights the caller converted to
 * f32 once per row chunk instead of converting them per 4 tokens: the same
 * FMAs in the same order, without the conversions. */
AVX2 void dec_gemm_f16_avx2(const float *w, size_t w_stride, const void *act, size_t stride, int64_t n,
			    float *out)
{
	const float *y[4] = { YT(0), YT(1), YT(2), YT(3) };

	for (int r = 0; r < 4; r++) {
		const float *x = w + (size_t)r * w_stride;
		__m256 a0[4], a1[4];
		int64_t i = 0;

		UNROLL
		for (int t = 0; t < 4; t++)
			a0[t] = a1[t] = _mm256_setzero_ps();
		for (; i + 16 <= n; i += 16) {
			__m256 w0 = _mm256_loadu_ps(x + i), w1 = _mm256_loadu_ps(x + i + 8);

			UNROLL
			for (int t = 0; t < 4; t++) {
				a0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y[t] + i), a0[t]);
				a1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(y[t] + i + 8), a1[t]);
			}
		}
		for (int t = 0; t < 4; t++) {
			float s = hsum8(_mm256_add_ps(a0[t], a1[t]));

			for (int64_t k = i; k < n; k++)
				s += x[k] * y[t][k];
			out[4 * t + r] = s;
		}
	}
}

#endif /* DEC_HAVE_X86 */

#else /* GEMM_BODY: the kernels, once per build above */

/* AVX2: weights signed, |w| times the activation carrying w's sign
 * (dec_gemv8_q8_0_avx2). VNNI: the weights made unsigned (w + 128, once
 * for the NT tokens) times the activation, less 128 × the activation's
 * block sum (DEC_Q8_0_SUMS); the same exact integer either way. */
KATTR void NAME(q8_0)(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q8_0_x8 *x = vx;
	const struct dec_block_q8_0 *y[NT];
	const int32_t *ys[NT];
	__m256 sum[NT];

	UNROLL
	for (int t = 0; t < NT; t++) {
		y[t] = YT(t);
		ys[t] = (const int32_t *)((const uint8_t *)y[t] + DEC_Q8_0_SUMS(n));
		sum[t] = _mm256_setzero_ps();
	}
	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i acc[NT];
		__m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].d));

		UNROLL
		for (int t = 0; t < NT; t++)
			acc[t] = _mm256_setzero_si256();
		UNROLL
		for (int g = 0; g < 8; g++) {
			__m256i w = _mm256_loadu_si256((const __m256i *)x[i].qs[g]);
#if VNNI
			__m256i u = _mm256_xor_si256(w, _mm256_set1_epi8((char)0x80));

			UNROLL
			for (int t = 0; t < NT; t++)
				acc[t] = DOTW(acc[t], u, bc4(y[t][i].qs + 4 * g));
#else
			__m256i u = _mm256_sign_epi8(w, w);

			UNROLL
			for (int t = 0; t < NT; t++)
				acc[t] = DOTW(acc[t], u, _mm256_sign_epi8(bc4(y[t][i].qs + 4 * g), w));
#endif
		}
		UNROLL
		for (int t = 0; t < NT; t++) {
			__m256 dv = _mm256_mul_ps(dx, _mm256_set1_ps(_cvtsh_ss(y[t][i].d)));

#if VNNI
			acc[t] = _mm256_sub_epi32(acc[t], _mm256_set1_epi32(ys[t][i] * 128));
#else
			(void)ys;
#endif

			sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(dv, _mm256_cvtepi32_ps(acc[t])));
		}
	}
	UNROLL
	for (int t = 0; t < NT; t++)
		_mm256_storeu_ps(out + 8 * t, sum[t]);
}

/* Unsigned nibbles times the activation, minus 8 × the activation sum
 * (the row's block sums: DEC_Q8_0_SUMS). */
KATTR void NAME(q4_0)(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q4_0_x8 *x = vx;
	const struct dec_block_q8_0 *y[NT];
	const int32_t *ys[NT];
	__m256 sum[NT];

	UNROLL
	for (int t = 0; t < NT; t++) {
		y[t] = YT(t);
		ys[t] = (const int32_t *)((const uint8_t *)y[t] + DEC_Q8_0_SUMS(n));
		sum[t] = _mm256_setzero_ps();
	}
	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i acc[NT];
		__m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].d));

		UNROLL
		for (int t = 0; t < NT; t++)
			acc[t] = BEGIN16(_mm256_setzero_si256());
		UNROLL
		for (int g = 0; g < 4; g++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs[g]), l = lo4g(q), h = hi4g(q);

			UNROLL
			for (int t = 0; t < NT; t++) {
				acc[t] = ADD16(acc[t], l, bc4(y[t][i].qs + 8 * g));
				acc[t] = ADD16(acc[t], h, bc4(y[t][i].qs + 8 * g + 4));
			}
		}
		UNROLL
		for (int t = 0; t < NT; t++) {
			__m256i isum = _mm256_sub_epi32(END16(_mm256_setzero_si256(), acc[t]),
							_mm256_set1_epi32(ys[t][i] * 8));
			__m256 dv = _mm256_mul_ps(dx, _mm256_set1_ps(_cvtsh_ss(y[t][i].d)));

			sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(dv, _mm256_cvtepi32_ps(isum)));
		}
	}
	UNROLL
	for (int t = 0; t < NT; t++)
		_mm256_storeu_ps(out + 8 * t, sum[t]);
}

/* As q4_0 with Q5_0's 5th bits (byte g of each row's lane for group g),
 * 16-bit sums over two groups at a time, minus 16 × the activation sum. */
KATTR void NAME(q5_0)(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q5_0_x8 *x = vx;
	const struct dec_block_q8_0 *y[NT];
	const int32_t *ys[NT];
	const __m256i b4 = _mm256_set1_epi8(0x10);
	const __m256i lane = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
					      0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
	const __m256i bl = _mm256_set1_epi32(0x08040201), bh = _mm256_set1_epi32((int)0x80402010u);
	__m256 sum[NT];

	UNROLL
	for (int t = 0; t < NT; t++) {
		y[t] = YT(t);
		ys[t] = (const int32_t *)((const uint8_t *)y[t] + DEC_Q8_0_SUMS(n));
		sum[t] = _mm256_setzero_ps();
	}
	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh), acc[NT];
		__m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].d));

		UNROLL
		for (int t = 0; t < NT; t++)
			acc[t] = _mm256_setzero_si256();
		UNROLL
		for (int g2 = 0; g2 < 4; g2 += 2) {
			__m256i a16[NT];

			UNROLL
			for (int t = 0; t < NT; t++)
				a16[t] = BEGIN16(acc[t]);
			UNROLL
			for (int g = g2; g < g2 + 2; g++) {
				__m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs[g]);
				__m256i hb = _mm256_shuffle_epi8(qh, _mm256_add_epi8(lane, _mm256_set1_epi8((char)g)));
				__m256i l = _mm256_or_si256(lo4g(q), _mm256_and_si256(
					_mm256_cmpeq_epi8(_mm256_and_si256(hb, bl), bl), b4));
				__m256i h = _mm256_or_si256(hi4g(q), _mm256_and_si256(
					_mm256_cmpeq_epi8(_mm256_and_si256(hb, bh), bh), b4));

				UNROLL
				for (int t = 0; t < NT; t++) {
					a16[t] = ADD16(a16[t], l, bc4(y[t][i].qs + 8 * g));
					a16[t] = ADD16(a16[t], h, bc4(y[t][i].qs + 8 * g + 4));
				}
			}
			UNROLL
			for (int t = 0; t < NT; t++)
				acc[t] = END16(acc[t], a16[t]);
		}
		UNROLL
		for (int t = 0; t < NT; t++) {
			__m256i isum = _mm256_sub_epi32(acc[t], _mm256_set1_epi32(ys[t][i] * 16));
			__m256 dv = _mm256_mul_ps(dx, _mm256_set1_ps(_cvtsh_ss(y[t][i].d)));

			sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(dv, _mm256_cvtepi32_ps(isum)));
		}
	}
	UNROLL
	for (int t = 0; t < NT; t++)
		_mm256_storeu_ps(out + 8 * t, sum[t]);
}

/* Unsigned nibbles, no offset; the float step of the _1 types (step_dm). */
KATTR void NAME(q4_1)(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q4_1_x8 *x = vx;
	const struct dec_block_q8_1 *y[NT];
	__m256 sum[NT];

	UNROLL
	for (int t = 0; t < NT; t++) {
		y[t] = YT(t);
		sum[t] = _mm256_setzero_ps();
	}
	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i acc[NT];
		__m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].d));
		__m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].m));

		UNROLL
		for (int t = 0; t < NT; t++)
			acc[t] = BEGIN16(_mm256_setzero_si256());
		UNROLL
		for (int g = 0; g < 4; g++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs[g]), l = lo4g(q), h = hi4g(q);

			UNROLL
			for (int t = 0; t < NT; t++) {
				acc[t] = ADD16(acc[t], l, bc4(y[t][i].qs + 8 * g));
				acc[t] = ADD16(acc[t], h, bc4(y[t][i].qs + 8 * g + 4));
			}
		}
		UNROLL
		for (int t = 0; t < NT; t++) {
			__m256 dv = _mm256_mul_ps(dx, _mm256_set1_ps(_cvtsh_ss(y[t][i].d)));
			__m256 mv = _mm256_mul_ps(mx, _mm256_set1_ps(_cvtsh_ss(y[t][i].s)));
			__m256i isum = END16(_mm256_setzero_si256(), acc[t]);

			sum[t] = _mm256_add_ps(sum[t], _mm256_add_ps(_mm256_mul_ps(dv, _mm256_cvtepi32_ps(isum)), mv));
		}
	}
	UNROLL
	for (int t = 0; t < NT; t++)
		_mm256_storeu_ps(out + 8 * t, sum[t]);
}

/* Per sub-block: the nibble sums (16-bit, at most 8 · 2 · 15 · 128 = 30720)
 * times the row's scale; mins against the activation pair sums; then
 * sum += y.d * (d * isum - dmin * msum), as dec_gemv8_q4_k_avx2. */
KATTR void NAME(q4_k)(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q4_k_x8 *x = vx;
	const struct dec_block_q8_K *y[NT];
	__m256 sum[NT];

	UNROLL
	for (int t = 0; t < NT; t++) {
		y[t] = YT(t);
		sum[t] = _mm256_setzero_ps();
	}
	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum[NT];
		__m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].d));
		__m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].dmin));

		UNROLL
		for (int t = 0; t < NT; t++)
			isum[t] = _mm256_setzero_si256();
		UNROLL
		for (int s = 0; s < 8; s++) {
			__m256i scv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)x[i].sc[s]));
			__m256i a16[NT];

			UNROLL
			for (int t = 0; t < NT; t++)
				a16[t] = BEGIN16(_mm256_setzero_si256());
			UNROLL
			for (int g = 0; g < 4; g++) {
				__m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs[s][g]);
				__m256i l = lo4g(q), h = hi4g(q);

				UNROLL
				for (int t = 0; t < NT; t++) {
					const int8_t *a = y[t][i].qs + 32 * s + 8 * g;

					a16[t] = ADD16(a16[t], l, bc4(a));
					a16[t] = ADD16(a16[t], h, bc4(a + 4));
				}
			}
			UNROLL
			for (int t = 0; t < NT; t++)
				isum[t] = _mm256_add_epi32(isum[t], SCALE16(a16[t], scv));
		}
		UNROLL
		for (int t = 0; t < NT; t++) {
			__m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y[t][i].bsums),
						    _mm_loadu_si128((const __m128i *)(y[t][i].bsums + 8)));
			__m256i msum = _mm256_setzero_si256();
			__m256 tt;

			UNROLL
			for (int p = 0; p < 4; p++) {
				__m256i mn = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x[i].mn[p]));
				int32_t pr = _mm_extract_epi32(bs, 0);

				switch (p) { /* _mm_extract_epi32 wants a constant */
				case 1: pr = _mm_extract_epi32(bs, 1); break;
				case 2: pr = _mm_extract_epi32(bs, 2); break;
				case 3: pr = _mm_extract_epi32(bs, 3); break;
				}
				msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mn, _mm256_set1_epi32(pr)));
			}
			tt = _mm256_sub_ps(_mm256_mul_ps(dx, _mm256_cvtepi32_ps(isum[t])),
					   _mm256_mul_ps(dm, _mm256_cvtepi32_ps(msum)));
			sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(_mm256_set1_ps(y[t][i].d), tt));
		}
	}
	UNROLL
	for (int t = 0; t < NT; t++)
		_mm256_storeu_ps(out + 8 * t, sum[t]);
}

/* Q6_K: per group of 16 values the unsigned 6-bit values (q + 32) times the
 * activation, 2 × 4 products a lane in 16 bits (at most 2 · 2 · 63 · 128 =
 * 32256) times the signed scale in both halves of the lane; the offset off
 * with the activation sums; the float step of dec_gemv8_q6_k_avx2. */
KATTR void NAME(q6_k)(const void *vx, const void *act, size_t stride, int64_t n, float *out)
{
	const struct dec_block_q6_k_x8 *x = vx;
	const struct dec_block_q8_K *y[NT];
	const __m256i m3 = _mm256_set1_epi8(3);
	__m256 sum[NT];

	UNROLL
	for (int t = 0; t < NT; t++) {
		y[t] = YT(t);
		sum[t] = _mm256_setzero_ps();
	}
	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum[NT];
		__m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].d));

		UNROLL
		for (int t = 0; t < NT; t++)
			isum[t] = _mm256_setzero_si256();
		for (int h = 0; h < 16; h++) {
			__m256i hb = _mm256_loadu_si256((const __m256i *)x[i].qh[h]);
			__m256i q0 = _mm256_loadu_si256((const __m256i *)x[i].ql[2 * h]);
			__m256i q1 = _mm256_loadu_si256((const __m256i *)x[i].ql[2 * h + 1]);
			__m256i v0 = _mm256_or_si256(lo4g(q0), _mm256_slli_epi16(_mm256_and_si256(hb, m3), 4));
			__m256i v1 = _mm256_or_si256(hi4g(q0), _mm256_slli_epi16(
				_mm256_and_si256(_mm256_srli_epi16(hb, 2), m3), 4));
			__m256i v2 = _mm256_or_si256(lo4g(q1), _mm256_slli_epi16(
				_mm256_and_si256(_mm256_srli_epi16(hb, 4), m3), 4));
			__m256i v3 = _mm256_or_si256(hi4g(q1), _mm256_slli_epi16(
				_mm256_and_si256(_mm256_srli_epi16(hb, 6), m3), 4));
			__m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)x[i].sc[h]));

			sc = _mm256_blend_epi16(sc, _mm256_slli_epi32(sc, 16), 0xAA);
			UNROLL
			for (int t = 0; t < NT; t++) {
				const int8_t *a = y[t][i].qs + 16 * h;
				__m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(v0, bc4(a)),
							      _mm256_maddubs_epi16(v1, bc4(a + 4)));
				__m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(v2, bc4(a + 8)),
							      _mm256_maddubs_epi16(v3, bc4(a + 12)));

				isum[t] = MADDACC(MADDACC(isum[t], p0, sc), p1, sc);
			}
		}
		UNROLL
		for (int t = 0; t < NT; t++) {
			__m256i bias = _mm256_setzero_si256();

			for (int p = 0; p < 8; p++) {
				__m128i s2 = _mm_loadu_si128((const __m128i *)x[i].sc[2 * p]);
				__m256i sp = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s2, _mm_srli_si128(s2, 8)));
				int32_t bp;

				memcpy(&bp, y[t][i].bsums + 2 * p, 4);
				bias = _mm256_add_epi32(bias, _mm256_madd_epi16(sp, _mm256_set1_epi32(bp)));
			}
			{
				__m256i is = _mm256_sub_epi32(isum[t], _mm256_slli_epi32(bias, 5));
				__m256 dv = _mm256_mul_ps(dx, _mm256_set1_ps(y[t][i].d));

				sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(dv, _mm256_cvtepi32_ps(is)));
			}
		}
	}
	UNROLL
	for (int t = 0; t < NT; t++)
		_mm256_storeu_ps(out + 8 * t, sum[t]);
}

#endif /* GEMM_BODY */
