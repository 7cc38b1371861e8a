/* dec_simd_rows.c — AVX2 kernels that compute eight weight rows against one
 * encoded activation row (a token), on the repacked layouts of dec_quant.h
 * (struct dec_block_*_x8): each 32-bit lane of a register belongs to one
 * row, 4 activation bytes are broadcast to all lanes, so the scales, the
 * mins and the float step are done for 8 rows at once and nothing is summed
 * across lanes. 16-bit partial sums are bounded in the comments.
 *
 * Each output is bit for bit what the portable one-row kernel gives (the
 * integer sums are exact, the float operations per row are the same and in
 * the same order); tests/decode/test_quant.c and test_quant_k.c (the
 * low-bit types, after the others in this file) compare them exactly. */
#include "decode/quant/dec_simd.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd_impl.h"

#ifdef DEC_HAVE_X86

/* Prefetches the lines of the block PREFETCH bytes ahead of [p, p + bytes):
 * a thread's weights are one sequential stream, and keeping more of it in
 * flight than the hardware prefetcher does gave +13-20% decode speed on
 * Q8_0 and Q4_K (2-core VM, medians of 8 runs). */
AVX2 static inline void prefetch_ahead(const void *p, size_t bytes)
{
	for (size_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)p + PREFETCH + o, _MM_HINT_T0);
}

/* u (unsigned bytes) · the 4 activation bytes at a, in every lane: two
 * 16-bit sums a lane */
AVX2 static inline __m256i dot4b(__m256i u, const int8_t *a)
{
	int32_t v;

	memcpy(&v, a, 4);
	return _mm256_maddubs_epi16(u, _mm256_set1_epi32(v));
}

AVX2 static inline __m256i lo4(__m256i q)
{
	return _mm256_and_si256(q, _mm256_set1_epi8(0xF));
}

AVX2 static inline __m256i hi4(__m256i q)
{
	return _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(0xF));
}

/* acc + the products of the 4 + 4 nibbles a lane at q with the 8 activation
 * bytes at a (low nibbles: a[0..4), high: a[4..8)) */
AVX2 static inline __m256i nib8(__m256i acc, const void *q, const int8_t *a)
{
	__m256i v = _mm256_loadu_si256((const __m256i *)q);

	return _mm256_add_epi16(acc, _mm256_add_epi16(dot4b(lo4(v), a), dot4b(hi4(v), a + 4)));
}

/* sum += (d_row * d_act) * sumi for the 8 rows: the float step of the
 * portable Q8_0 / Q4_0 / Q5_0 / Q6_K kernels. */
AVX2 static inline __m256 step_d(__m256 sum, const uint16_t *d, float dy, __m256i isum)
{
	__m256 dv = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d)), _mm256_set1_ps(dy));

	return _mm256_add_ps(sum, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(isum)));
}

/* The activation sum of a Q8_0 block in every lane. */
AVX2 static inline __m256i q8_0_sum(const int8_t *a)
{
	__m256i s = _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)a));

	s = _mm256_madd_epi16(s, _mm256_set1_epi16(1));
	s = _mm256_add_epi32(s, _mm256_permute2x128_si256(s, s, 1));
	s = _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0x4e));
	return _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0xb1));
}

/* 16-bit pairs to 32-bit sums */
AVX2 static inline __m256i widen(__m256i p)
{
	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* Signed × signed as mul_s8 does: |w| and the activation carrying w's sign
 * (activations are within ±127). */
AVX2 void dec_gemv8_q8_0_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q8_0_x8 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int g = 0; g < 8; g += 2) {
			__m256i w0 = _mm256_loadu_si256((const __m256i *)x[i].qs[g]);
			__m256i w1 = _mm256_loadu_si256((const __m256i *)x[i].qs[g + 1]);
			int32_t a0, a1;

			memcpy(&a0, y[i].qs + 4 * g, 4);
			memcpy(&a1, y[i].qs + 4 * g + 4, 4);
			acc0 = _mm256_add_epi32(acc0, widen(_mm256_maddubs_epi16(
				_mm256_sign_epi8(w0, w0), _mm256_sign_epi8(_mm256_set1_epi32(a0), w0))));
			acc1 = _mm256_add_epi32(acc1, widen(_mm256_maddubs_epi16(
				_mm256_sign_epi8(w1, w1), _mm256_sign_epi8(_mm256_set1_epi32(a1), w1))));
		}
		sum = step_d(sum, x[i].d, _cvtsh_ss(y[i].d), _mm256_add_epi32(acc0, acc1));
	}
	_mm256_storeu_ps(out, sum);
}

/* Unsigned nibbles times the activation (8 · 2 · 15 · 127 at most in 16
 * bits), minus 8 × the activation sum. */
AVX2 void dec_gemv8_q4_0_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q4_0_x8 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i a16 = _mm256_setzero_si256(), isum;

		prefetch_ahead(&x[i], sizeof x[i]);
		a16 = nib8(a16, x[i].qs[0], y[i].qs);
		a16 = nib8(a16, x[i].qs[1], y[i].qs + 8);
		a16 = nib8(a16, x[i].qs[2], y[i].qs + 16);
		a16 = nib8(a16, x[i].qs[3], y[i].qs + 24);
		isum = _mm256_sub_epi32(widen(a16), _mm256_slli_epi32(q8_0_sum(y[i].qs), 3));
		sum = step_d(sum, x[i].d, _cvtsh_ss(y[i].d), isum);
	}
	_mm256_storeu_ps(out, sum);
}

/* The 5th bits of group g are byte g of each row's lane: broadcast within
 * the lane and one bit tested per byte. 16-bit sums over two groups at a
 * time (4 · 2 · 31 · 127 at most), minus 16 × the activation sum. */
AVX2 void dec_gemv8_q5_0_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q5_0_x8 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	const __m256i b4 = _mm256_set1_epi8(0x10);
	const __m256i lane = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
					      0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
	const __m256i bl = _mm256_set1_epi32(0x08040201), bh = _mm256_set1_epi32((int)0x80402010u);
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh), a16[2], isum;

		prefetch_ahead(&x[i], sizeof x[i]);
		a16[0] = a16[1] = _mm256_setzero_si256();
		for (int g = 0; g < 4; g++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs[g]);
			__m256i hb = _mm256_shuffle_epi8(qh, _mm256_add_epi8(lane, _mm256_set1_epi8((char)g)));
			__m256i hl = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bl), bl), b4);
			__m256i hh = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bh), bh), b4);

			__m256i *acc = &a16[g / 2];

			*acc = _mm256_add_epi16(*acc, dot4b(_mm256_or_si256(lo4(q), hl), y[i].qs + 8 * g));
			*acc = _mm256_add_epi16(*acc, dot4b(_mm256_or_si256(hi4(q), hh), y[i].qs + 8 * g + 4));
		}
		isum = _mm256_add_epi32(widen(a16[0]), widen(a16[1]));
		isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(q8_0_sum(y[i].qs), 4));
		sum = step_d(sum, x[i].d, _cvtsh_ss(y[i].d), isum);
	}
	_mm256_storeu_ps(out, sum);
}

/* sum += ((d_row * d_act) * sumi + m_row * s_act) for the 8 rows: the
 * float step of the portable Q4_1 / Q5_1 kernels. */
AVX2 static inline __m256 step_dm(__m256 sum, const uint16_t *d, const uint16_t *m,
				  const struct dec_block_q8_1 *y, __m256i isum)
{
	__m256 dv = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d)),
				  _mm256_set1_ps(_cvtsh_ss(y->d)));
	__m256 mv = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)m)),
				  _mm256_set1_ps(_cvtsh_ss(y->s)));

	return _mm256_add_ps(sum, _mm256_add_ps(_mm256_mul_ps(dv, _mm256_cvtepi32_ps(isum)), mv));
}

/* As dec_gemv8_q4_0_avx2 without the offset (the values are unsigned). */
AVX2 void dec_gemv8_q4_1_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q4_1_x8 *x = vx;
	const struct dec_block_q8_1 *y = vy;
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i a16 = _mm256_setzero_si256();

		prefetch_ahead(&x[i], sizeof x[i]);
		a16 = nib8(a16, x[i].qs[0], y[i].qs);
		a16 = nib8(a16, x[i].qs[1], y[i].qs + 8);
		a16 = nib8(a16, x[i].qs[2], y[i].qs + 16);
		a16 = nib8(a16, x[i].qs[3], y[i].qs + 24);
		sum = step_dm(sum, x[i].d, x[i].m, &y[i], widen(a16));
	}
	_mm256_storeu_ps(out, sum);
}

/* As dec_gemv8_q5_0_avx2 without the offset. */
AVX2 void dec_gemv8_q5_1_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q5_1_x8 *x = vx;
	const struct dec_block_q8_1 *y = vy;
	const __m256i b4 = _mm256_set1_epi8(0x10);
	const __m256i lane = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
					      0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
	const __m256i bl = _mm256_set1_epi32(0x08040201), bh = _mm256_set1_epi32((int)0x80402010u);
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh), a16[2];

		prefetch_ahead(&x[i], sizeof x[i]);
		a16[0] = a16[1] = _mm256_setzero_si256();
		for (int g = 0; g < 4; g++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs[g]);
			__m256i hb = _mm256_shuffle_epi8(qh, _mm256_add_epi8(lane, _mm256_set1_epi8((char)g)));
			__m256i hl = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bl), bl), b4);
			__m256i hh = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bh), bh), b4);
			__m256i *acc = &a16[g / 2];

			*acc = _mm256_add_epi16(*acc, dot4b(_mm256_or_si256(lo4(q), hl), y[i].qs + 8 * g));
			*acc = _mm256_add_epi16(*acc, dot4b(_mm256_or_si256(hi4(q), hh), y[i].qs + 8 * g + 4));
		}
		sum = step_dm(sum, x[i].d, x[i].m, &y[i], _mm256_add_epi32(widen(a16[0]), widen(a16[1])));
	}
	_mm256_storeu_ps(out, sum);
}

/* One Q4_K sub-block (32 values) of the 8 rows: 8 × 4 products a row summed
 * in 16 bits (at most 8 · 2 · 15 · 128 = 30720), then scaled by the row's
 * scale, put in both 16-bit halves of its lane. */
AVX2 static inline __m256i q4k_sub(const struct dec_block_q4_k_x8 *x, const int8_t *a, int s)
{
	__m256i a16 = _mm256_setzero_si256();
	__m256i scv = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)x->sc[s]));

	a16 = nib8(a16, x->qs[s][0], a);
	a16 = nib8(a16, x->qs[s][1], a + 8);
	a16 = nib8(a16, x->qs[s][2], a + 16);
	a16 = nib8(a16, x->qs[s][3], a + 24);
	return _mm256_madd_epi16(a16, _mm256_or_si256(scv, _mm256_slli_epi32(scv, 16)));
}

AVX2 void dec_gemv8_q4_k_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q4_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum = _mm256_setzero_si256(), msum = _mm256_setzero_si256();
		/* 16-bit lane s: activation sum of sub-block s (at most 32 · 128) */
		__m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y[i].bsums),
					    _mm_loadu_si128((const __m128i *)(y[i].bsums + 8)));
		int32_t pair[4];
		__m256 dx, dm, t;

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int s = 0; s < 8; s++)
			isum = _mm256_add_epi32(isum, q4k_sub(&x[i], y[i].qs + 32 * s, s));
		/* mins of sub-blocks 2p, 2p+1 against their activation sums */
		_mm_storeu_si128((__m128i *)pair, bs);
		for (int p = 0; p < 4; p++) {
			__m256i mn = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x[i].mn[p]));

			msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mn, _mm256_set1_epi32(pair[p])));
		}
		/* sum += y.d * (d * sumi - dmin * summ), as dec_dot_q4_k_generic */
		dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].d));
		dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x[i].dmin));
		t = _mm256_sub_ps(_mm256_mul_ps(dx, _mm256_cvtepi32_ps(isum)),
				  _mm256_mul_ps(dm, _mm256_cvtepi32_ps(msum)));
		sum = _mm256_add_ps(sum, _mm256_mul_ps(_mm256_set1_ps(y[i].d), t));
	}
	_mm256_storeu_ps(out, sum);
}

/* A Q6_K value byte: the low nibble l and the high 2 bits at bit `sh` of h. */
AVX2 static inline __m256i six_bits(__m256i l, __m256i h, int sh)
{
	__m256i hb = _mm256_and_si256(_mm256_srli_epi16(h, sh), _mm256_set1_epi8(3));

	return _mm256_or_si256(l, _mm256_slli_epi16(hb, 4));
}

/* Per group of 16 values the unsigned 6-bit values (q + 32) times the
 * activation, 2 × 4 products a lane summed in 16 bits (at most 2 · 2 · 63 ·
 * 128 = 32256), times the signed scale in both halves of the lane; the
 * offset is taken off with the activation sums; then the float step of
 * dec_dot_q6_k_generic. */
AVX2 void dec_gemv8_q6_k_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q6_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum = _mm256_setzero_si256(), bias = _mm256_setzero_si256();

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int h = 0; h < 16; h++) {
			const int8_t *a = y[i].qs + 16 * h;
			__m256i hb = _mm256_loadu_si256((const __m256i *)x[i].qh[h]);
			__m256i q0 = _mm256_loadu_si256((const __m256i *)x[i].ql[2 * h]);
			__m256i q1 = _mm256_loadu_si256((const __m256i *)x[i].ql[2 * h + 1]);
			__m256i p0 = _mm256_add_epi16(dot4b(six_bits(lo4(q0), hb, 0), a),
						      dot4b(six_bits(hi4(q0), hb, 2), a + 4));
			__m256i p1 = _mm256_add_epi16(dot4b(six_bits(lo4(q1), hb, 4), a + 8),
						      dot4b(six_bits(hi4(q1), hb, 6), a + 12));
			__m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)x[i].sc[h]));

			sc = _mm256_blend_epi16(sc, _mm256_slli_epi32(sc, 16), 0xAA);
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p0, sc));
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p1, sc));
		}
		/* sum of scale × activation sum, groups 2p and 2p+1 a madd */
		for (int p = 0; p < 8; p++) {
			__m128i s2 = _mm_loadu_si128((const __m128i *)x[i].sc[2 * p]);
			__m256i sp = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s2, _mm_srli_si128(s2, 8)));
			int32_t bp;

			memcpy(&bp, y[i].bsums + 2 * p, 4);
			bias = _mm256_add_epi32(bias, _mm256_madd_epi16(sp, _mm256_set1_epi32(bp)));
		}
		sum = step_d(sum, x[i].d, y[i].d, _mm256_sub_epi32(isum, _mm256_slli_epi32(bias, 5)));
	}
	_mm256_storeu_ps(out, sum);
}

/* ---- the low-bit types (dec_pack_k.c's layouts) -------------------------- */

/* Signed bytes w (codebook values) times 4 activation bytes broadcast to
 * every lane: maddubs(|a|, w with a's sign), so |a| is shared by the 8 rows
 * and -128 activations are exact (|w| <= 127: at most 2 · 128 · 127 a pair). */
AVX2 static inline __m256i sdot4b(__m256i w, const int8_t *a)
{
	int32_t v;
	__m256i av;

	memcpy(&v, a, 4);
	av = _mm256_set1_epi32(v);
	return _mm256_maddubs_epi16(_mm256_abs_epi8(av), _mm256_sign_epi8(w, av));
}

AVX2 static inline __m256i iq4_lut(void)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)dec_iq4nl_values));
}

/* The eight rows' signed byte scales s[0..8) in both 16-bit halves of their lanes. */
AVX2 static inline __m256i scale8_s(const int8_t *s)
{
	__m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)s));

	return _mm256_blend_epi16(v, _mm256_slli_epi32(v, 16), 0xAA);
}

AVX2 static inline __m256i scale8_u(__m256i v) /* v: 8 lanes of 0..255 */
{
	return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}

/* sum over sub-block pairs p of (s[2p][row], s[2p+1][row]) · (bsums[2p], bsums[2p+1]),
 * s as 16 rows of 8 signed bytes (Q3_K's scales) */
AVX2 static inline __m256i pair_sums_s(const int8_t (*s)[8], const int16_t *bsums)
{
	__m256i acc = _mm256_setzero_si256();

	for (int p = 0; p < 8; p++) {
		__m128i s2 = _mm_loadu_si128((const __m128i *)s[2 * p]);
		__m256i sp = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s2, _mm_srli_si128(s2, 8)));
		int32_t bp;

		memcpy(&bp, bsums + 2 * p, 4);
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(sp, _mm256_set1_epi32(bp)));
	}
	return acc;
}

/* sum += d_act * (d * isum - dmin * msum) for the 8 rows (Q2_K, Q5_K). */
AVX2 static inline __m256 step_dmin(__m256 sum, const uint16_t *d, const uint16_t *dmin, float dy, __m256i isum,
				    __m256i msum)
{
	__m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d));
	__m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dmin));
	__m256 t = _mm256_sub_ps(_mm256_mul_ps(dx, _mm256_cvtepi32_ps(isum)), _mm256_mul_ps(dm, _mm256_cvtepi32_ps(msum)));

	return _mm256_add_ps(sum, _mm256_mul_ps(_mm256_set1_ps(dy), t));
}

AVX2 void dec_gemv8_iq4_nl_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q4_0_x8 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	const __m256i lut = iq4_lut();
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		__m256i acc = _mm256_setzero_si256();

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int g = 0; g < 4; g++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)x[i].qs[g]);

			acc = _mm256_add_epi32(acc, widen(sdot4b(_mm256_shuffle_epi8(lut, lo4(v)), y[i].qs + 8 * g)));
			acc = _mm256_add_epi32(acc, widen(sdot4b(_mm256_shuffle_epi8(lut, hi4(v)), y[i].qs + 8 * g + 4)));
		}
		sum = step_d(sum, x[i].d, _cvtsh_ss(y[i].d), acc);
	}
	_mm256_storeu_ps(out, sum);
}

/* Per block of 32: the pair sums times the row's scale (|s| <= 32). */
AVX2 void dec_gemv8_iq4_xs_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_iq4_xs_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;
	const __m256i lut = iq4_lut();
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum = _mm256_setzero_si256();

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int j = 0; j < 8; j++) {
			__m256i sc = scale8_s(x[i].sc[j]);

			for (int g = 0; g < 4; g++) {
				__m256i v = _mm256_loadu_si256((const __m256i *)x[i].qs[j][g]);
				const int8_t *a = y[i].qs + 32 * j + 8 * g;

				isum = _mm256_add_epi32(isum, _mm256_madd_epi16(sdot4b(_mm256_shuffle_epi8(lut, lo4(v)), a), sc));
				isum = _mm256_add_epi32(isum, _mm256_madd_epi16(sdot4b(_mm256_shuffle_epi8(lut, hi4(v)), a + 4), sc));
			}
		}
		sum = step_d(sum, x[i].d, y[i].d, isum);
	}
	_mm256_storeu_ps(out, sum);
}

/* Bit `from` of every byte at bit 4 (0x10), the others cleared: a 16-bit
 * shift by at most 4 keeps bit 4 of a byte within its byte. */
AVX2 static inline __m256i bit_to4(__m256i v, int from)
{
	__m256i s = from < 4 ? _mm256_slli_epi16(v, 4 - from) : _mm256_srli_epi16(v, from - 4);

	return _mm256_and_si256(s, _mm256_set1_epi8(0x10));
}

/* Group g of a Q5_K sub-block: 4 + 4 values a row times the activation. */
AVX2 static inline __m256i q5k_group(const void *qs, __m256i qh, const int8_t *a, int g)
{
	__m256i q = _mm256_loadu_si256((const __m256i *)qs);

	return _mm256_add_epi16(dot4b(_mm256_or_si256(lo4(q), bit_to4(qh, 2 * g)), a + 8 * g),
				dot4b(_mm256_or_si256(hi4(q), bit_to4(qh, 2 * g + 1)), a + 8 * g + 4));
}

/* As dec_gemv8_q4_k_avx2 with the 5th bits (of group g: bits 2g, 2g+1 of
 * each byte of qh): two 16-bit sums a sub-block (2 groups, at most
 * 4 · 2 · 31 · 128). */
AVX2 void dec_gemv8_q5_k_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q5_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum = _mm256_setzero_si256(), msum = _mm256_setzero_si256();
		__m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y[i].bsums),
					    _mm_loadu_si128((const __m128i *)(y[i].bsums + 8)));
		int32_t pair[4];

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int s = 0; s < 8; s++) {
			__m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh[s]), a16[2];
			__m256i sc = scale8_u(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)x[i].sc[s])));
			const int8_t *a = y[i].qs + 32 * s;

			/* the groups written out: the shifts must be immediates */
			a16[0] = _mm256_add_epi16(q5k_group(x[i].qs[s][0], qh, a, 0), q5k_group(x[i].qs[s][1], qh, a, 1));
			a16[1] = _mm256_add_epi16(q5k_group(x[i].qs[s][2], qh, a, 2), q5k_group(x[i].qs[s][3], qh, a, 3));
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(a16[0], sc));
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(a16[1], sc));
		}
		_mm_storeu_si128((__m128i *)pair, bs);
		for (int p = 0; p < 4; p++) {
			__m256i mn = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x[i].mn[p]));

			msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mn, _mm256_set1_epi32(pair[p])));
		}
		sum = step_dmin(sum, x[i].d, x[i].dmin, y[i].d, isum, msum);
	}
	_mm256_storeu_ps(out, sum);
}

/* Nibbles q + 4 (0..7), 16-bit sums a sub-block (at most 4 · 2 · 7 · 128),
 * times the signed scale; minus 4 · scale · block sum. */
AVX2 void dec_gemv8_q3_k_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q3_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum = _mm256_setzero_si256(), bias;

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int s = 0; s < 16; s++) {
			__m256i a16 = nib8(_mm256_setzero_si256(), x[i].qs[s][0], y[i].qs + 16 * s);

			a16 = nib8(a16, x[i].qs[s][1], y[i].qs + 16 * s + 8);
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(a16, scale8_s(x[i].sc[s])));
		}
		bias = pair_sums_s(x[i].sc, y[i].bsums);
		sum = step_d(sum, x[i].d, y[i].d, _mm256_sub_epi32(isum, _mm256_slli_epi32(bias, 2)));
	}
	_mm256_storeu_ps(out, sum);
}

/* 2-bit quants, 16-bit sums a sub-block (at most 4 · 2 · 3 · 128), times
 * the 4-bit scale; the 4-bit mins against the activation block sums. */
AVX2 void dec_gemv8_q2_k_avx2(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q2_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;
	const __m256i m2 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi32(0xF);
	__m256 sum = _mm256_setzero_ps();

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		__m256i isum = _mm256_setzero_si256(), msum = _mm256_setzero_si256();

		prefetch_ahead(&x[i], sizeof x[i]);
		for (int s = 0; s < 16; s++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)x[i].qs[s]);
			const int8_t *a = y[i].qs + 16 * s;
			__m256i a16 = _mm256_add_epi16(dot4b(_mm256_and_si256(v, m2), a),
						       dot4b(_mm256_and_si256(_mm256_srli_epi16(v, 2), m2), a + 4));
			__m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)x[i].sm[s]));

			a16 = _mm256_add_epi16(a16, dot4b(_mm256_and_si256(_mm256_srli_epi16(v, 4), m2), a + 8));
			a16 = _mm256_add_epi16(a16, dot4b(_mm256_and_si256(_mm256_srli_epi16(v, 6), m2), a + 12));
			isum = _mm256_add_epi32(isum, _mm256_madd_epi16(a16, scale8_u(_mm256_and_si256(sc, m4))));
		}
		for (int p = 0; p < 8; p++) {
			__m128i s2 = _mm_loadu_si128((const __m128i *)x[i].sm[2 * p]);
			__m256i mn = _mm256_srli_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s2, _mm_srli_si128(s2, 8))), 4);
			int32_t bp;

			memcpy(&bp, y[i].bsums + 2 * p, 4);
			msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mn, _mm256_set1_epi32(bp)));
		}
		sum = step_dmin(sum, x[i].d, x[i].dmin, y[i].d, isum, msum);
	}
	_mm256_storeu_ps(out, sum);
}

#endif
