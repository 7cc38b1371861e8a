/* test_quant.c — tensor types: fp16/bf16 conversion, dequantization of
 * hand-built blocks, quantize→dequantize error bounds, and every dot product
 * (portable and AVX2) against dequantize + double dot; the four-token and
 * repacked eight-row kernels against the one-row ones, bit for bit, and the
 * prefill kernels (eight rows × several tokens, F16 tiles) of every table
 * this CPU has against the one-token ones, bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"

static const uint32_t weight_types[] = {
	DEC_T_F32, DEC_T_F16, DEC_T_BF16, DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_K, DEC_T_Q6_K,
	DEC_T_Q4_1, DEC_T_Q5_1,
};
#define N_TYPES (sizeof weight_types / sizeof weight_types[0])

static void fill(float *x, int n, uint32_t seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		x[i] = ((float)(seed >> 8) / (float)(1 << 24) * 2 - 1) * (1 + (float)(i % 7));
	}
}

static void test_f16(void **st)
{
	(void)st;
	assert_int_equal(dec_f32_to_f16(1.0f), 0x3c00);
	assert_int_equal(dec_f32_to_f16(-2.0f), 0xc000);
	assert_int_equal(dec_f32_to_f16(65504.f), 0x7bff);
	assert_int_equal(dec_f32_to_f16(1e6f), 0x7c00);
	assert_int_equal(dec_f32_to_f16(0.0f), 0);
	assert_true(dec_f16_to_f32(0x0001) == ldexpf(1, -24)); /* smallest subnormal */
	assert_true(dec_f16_to_f32(0x3555) > 0.333f && dec_f16_to_f32(0x3555) < 0.3334f);
	/* every finite half round-trips */
	for (uint32_t h = 0; h < 0x10000; h++)
		if ((h & 0x7c00) != 0x7c00)
			assert_int_equal(dec_f32_to_f16(dec_f16_to_f32((uint16_t)h)), h);
	assert_int_equal(dec_f32_to_bf16(1.0f), 0x3f80);
	assert_true(dec_bf16_to_f32(0x4040) == 3.0f);
	/* round to nearest even: 1 + 2^-11 ties to 1, 1 + 3*2^-11 to 1 + 2^-9 */
	assert_int_equal(dec_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00);
	assert_int_equal(dec_f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3c02);
}

static void test_hand_q8_0(void **st)
{
	struct dec_block_q8_0 b;
	float y[32];

	(void)st;
	b.d = dec_f32_to_f16(0.5f);
	for (int i = 0; i < 32; i++)
		b.qs[i] = (int8_t)(i - 16);
	dec_dequant_row(DEC_T_Q8_0, &b, y, 32);
	for (int i = 0; i < 32; i++)
		assert_true(y[i] == 0.5f * (i - 16));
}

static void test_hand_q4_0(void **st)
{
	struct dec_block_q4_0 b;
	float y[32];

	(void)st;
	b.d = dec_f32_to_f16(2.0f);
	for (int i = 0; i < 16; i++)
		b.qs[i] = (uint8_t)(i | ((15 - i) << 4));
	dec_dequant_row(DEC_T_Q4_0, &b, y, 32);
	for (int i = 0; i < 16; i++) {
		assert_true(y[i] == 2.0f * (i - 8));
		assert_true(y[i + 16] == 2.0f * (15 - i - 8));
	}
}

static void test_hand_q5_0(void **st)
{
	struct dec_block_q5_0 b;
	float y[32];
	uint32_t qh = 0x80000001u; /* 5th bit set for x[0] and x[31] */

	(void)st;
	b.d = dec_f32_to_f16(1.0f);
	memcpy(b.qh, &qh, 4);
	for (int i = 0; i < 16; i++)
		b.qs[i] = (uint8_t)(3 | (5 << 4));
	dec_dequant_row(DEC_T_Q5_0, &b, y, 32);
	assert_true(y[0] == 16 + 3 - 16);
	assert_true(y[1] == 3 - 16);
	assert_true(y[16] == 5 - 16);
	assert_true(y[31] == 16 + 5 - 16);
}

/* value = d * q + m */
static void test_hand_q4_1(void **st)
{
	struct dec_block_q4_1 b;
	float y[32];

	(void)st;
	b.d = dec_f32_to_f16(0.5f);
	b.m = dec_f32_to_f16(-3.0f);
	for (int i = 0; i < 16; i++)
		b.qs[i] = (uint8_t)(i | ((15 - i) << 4));
	dec_dequant_row(DEC_T_Q4_1, &b, y, 32);
	for (int i = 0; i < 16; i++) {
		assert_true(y[i] == 0.5f * (float)i - 3);
		assert_true(y[i + 16] == 0.5f * (float)(15 - i) - 3);
	}
}

static void test_hand_q5_1(void **st)
{
	struct dec_block_q5_1 b;
	float y[32];
	uint32_t qh = 0x80000001u; /* 5th bit set for x[0] and x[31] */

	(void)st;
	b.d = dec_f32_to_f16(1.0f);
	b.m = dec_f32_to_f16(0.25f);
	memcpy(b.qh, &qh, 4);
	for (int i = 0; i < 16; i++)
		b.qs[i] = (uint8_t)(3 | (5 << 4));
	dec_dequant_row(DEC_T_Q5_1, &b, y, 32);
	assert_true(y[0] == 19.25f);  /* 16 + 3 + 0.25 */
	assert_true(y[1] == 3.25f);
	assert_true(y[16] == 5.25f);
	assert_true(y[31] == 21.25f); /* 16 + 5 + 0.25 */
}

/* Q8_1 activations and the _1 dot products on hand-built blocks. */
static void test_hand_q8_1(void **st)
{
	struct dec_block_q8_1 a;
	struct dec_block_q4_1 w4;
	struct dec_block_q5_1 w5;
	float x[32];
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };
	uint32_t qh = 0xffffffffu;

	(void)st;
	/* amax 1: d = 1/127, id = 127; 1 -> 127, -0.5 -> -63.5 -> -64 (nearest
	 * even, and away from zero too); sum 16 · 127 - 16 · 64 = 1008;
	 * s = 1008/127 = 7.93700... -> fp16 7.9375 (step 2^-8 in [4, 8)) */
	for (int j = 0; j < 32; j++)
		x[j] = j % 2 ? 1.0f : -0.5f;
	assert_true(dec_quantize_row(DEC_T_Q8_1, x, &a, 32));
	assert_int_equal(a.d, dec_f32_to_f16(1.0f / 127));
	assert_true(dec_f16_to_f32(a.s) == 7.9375f);
	for (int j = 0; j < 32; j++)
		assert_int_equal(a.qs[j], j % 2 ? 127 : -64);
	/* every weight value 0.5 · 2 - 1 = 0, every activation q 1 (d 1, s 3
	 * as if another block's): (0.5 · 1) · (32 · 2) + (-1) · 3 = 29 */
	w4.d = dec_f32_to_f16(0.5f);
	w4.m = dec_f32_to_f16(-1.0f);
	memset(w4.qs, 0x22, sizeof w4.qs);
	a.d = dec_f32_to_f16(1.0f);
	a.s = dec_f32_to_f16(3.0f);
	memset(a.qs, 1, sizeof a.qs);
	/* Q5_1: every 5th bit set, nibbles 2: q = 18; (0.5 · 1) · (32 · 18) - 3 = 285 */
	w5.d = w4.d;
	w5.m = w4.m;
	memcpy(w5.qh, &qh, 4);
	memset(w5.qs, 0x22, sizeof w5.qs);
	for (int k = 0; k < 2 && tab[k]; k++) {
		assert_true(tab[k]->dot_q4_1(&w4, &a, 32) == 29.0f);
		assert_true(tab[k]->dot_q5_1(&w5, &a, 32) == 285.0f);
	}
}

static void test_hand_q4_k(void **st)
{
	struct dec_block_q4_K b;
	float y[256];

	(void)st;
	memset(&b, 0, sizeof b);
	b.d = dec_f32_to_f16(1.0f);
	b.dmin = dec_f32_to_f16(0.5f);
	/* sub-block 0: scale 2, min 4; sub-block 5: scale 33 (needs the high bits), min 17 */
	b.scales[0] = 2;
	b.scales[4] = 4;
	b.scales[1] = (uint8_t)((33 >> 4) << 6);      /* high bits of scale 5 ride on scales[1] */
	b.scales[5] = (uint8_t)((17 >> 4) << 6);      /* high bits of min 5 ride on scales[5] */
	b.scales[9] = (uint8_t)((33 & 0xF) | ((17 & 0xF) << 4));
	for (int l = 0; l < 32; l++) {
		b.qs[l] = (uint8_t)(l % 16);              /* sub-block 0 = lo nibbles of chunk 0 */
		b.qs[64 + l] = (uint8_t)((l % 16) << 4);  /* sub-block 5 = hi nibbles of chunk 2 */
	}
	dec_dequant_row(DEC_T_Q4_K, &b, y, 256);
	for (int l = 0; l < 32; l++) {
		assert_true(fabsf(y[l] - (2.0f * (l % 16) - 0.5f * 4)) < 1e-6f);
		assert_true(fabsf(y[160 + l] - (33.0f * (l % 16) - 0.5f * 17)) < 1e-6f);
		assert_true(y[32 + l] == 0.0f); /* sub-block 1: scale 0, min 0 */
	}
}

static void test_hand_q6_k(void **st)
{
	struct dec_block_q6_K b;
	float y[256];

	(void)st;
	memset(&b, 0, sizeof b);
	b.d = dec_f32_to_f16(0.25f);
	for (int g = 0; g < 16; g++)
		b.scales[g] = (int8_t)(g - 8);
	/* y[0]: ql[0] lo=5, qh[0] bits0-1=2 -> 5+32-32 = 5; y[64]: ql[0] hi=1, qh bits4-5=3 -> 49-32 = 17
	 * y[160] (second half, l=0, +32): ql[96] lo=0, qh[32] bits2-3=1 -> 16-32 = -16 */
	b.ql[0] = 5 | (1 << 4);
	b.qh[0] = 2 | (3 << 4);
	b.qh[32] = 1 << 2;
	dec_dequant_row(DEC_T_Q6_K, &b, y, 256);
	assert_true(y[0] == 0.25f * -8 * 5);
	assert_true(y[64] == 0.25f * (4 - 8) * 17);
	assert_true(y[160] == 0.25f * (10 - 8) * -16);
	assert_true(y[1] == 0.25f * -8 * -32); /* all-zero bits decode to -32 */
}

static void test_roundtrip(void **st)
{
	enum { N = 512 };
	float x[N], y[N];
	uint8_t q[N * 4];

	(void)st;
	fill(x, N, 7);
	for (size_t t = 0; t < N_TYPES; t++) {
		double err = 0, ref = 0, tol;

		assert_true(dec_quantize_row(weight_types[t], x, q, N));
		dec_dequant_row(weight_types[t], q, y, N);
		for (int i = 0; i < N; i++) {
			err += (x[i] - y[i]) * (x[i] - y[i]);
			ref += x[i] * x[i];
		}
		err = sqrt(err / ref);
		switch (weight_types[t]) {
		case DEC_T_F32: tol = 0; break;
		case DEC_T_F16: tol = 1e-3; break;
		case DEC_T_BF16: tol = 5e-3; break;
		case DEC_T_Q8_0: tol = 0.01; break;
		case DEC_T_Q6_K: tol = 0.05; break;
		case DEC_T_Q5_0: case DEC_T_Q5_1: tol = 0.06; break;
		default: tol = 0.15; break;
		}
		if (err > tol)
			fail_msg("%s: relative rms error %g > %g", dec_type_name(weight_types[t]), err, tol);
	}
}

/* dot(row, encode(x)) must match dequant(row)·dequant(encode(x)) closely and
 * dequant(row)·x within the activation quantization error. */
static void check_dot(const struct dec_simd *s)
{
	enum { NMAX = 1056 };
	float x[NMAX], w[NMAX], xd[NMAX];
	uint8_t q[NMAX * 4], a[NMAX * 4 + 64];

	for (size_t t = 0; t < N_TYPES; t++) {
		uint32_t ty = weight_types[t], vt = dec_vec_type(ty);
		/* 33 blocks for the _0 types: odd, so unrolled loops run their tails */
		int N = ty == DEC_T_Q4_K || ty == DEC_T_Q6_K ? 1024 : 1056;
		double exact, with_act = 0, mag = 0;
		float got;

		fill(w, N, 11 + (uint32_t)t);
		fill(x, N, 99);
		dec_quantize_row(ty, w, q, N);
		dec_quantize_row(vt, x, a, N);
		dec_dequant_row(vt, a, xd, N);
		exact = dec_vec_dot_ref(ty, q, x, N);
		dec_dequant_row(ty, q, w, N);
		for (int i = 0; i < N; i++) {
			with_act += (double)w[i] * xd[i];
			mag += fabs((double)w[i] * x[i]);
		}
		if (vt == DEC_T_Q8_1) {
			/* the offset term of a block is m · s_act, s the fp16 of
			 * (unrounded d) · sum q, not m · (fp16 d) · sum q */
			const struct dec_block_q8_1 *ab = (const void *)a;

			for (int i = 0; i < N / DEC_QK; i++) {
				uint16_t mh;
				int sq = 0;

				memcpy(&mh, q + (size_t)i * (ty == DEC_T_Q4_1 ? 20 : 24) + 2, 2);
				for (int j = 0; j < DEC_QK; j++)
					sq += ab[i].qs[j];
				with_act += (double)dec_f16_to_f32(mh) *
					    ((double)dec_f16_to_f32(ab[i].s) - (double)dec_f16_to_f32(ab[i].d) * sq);
			}
		}
		switch (ty) {
		case DEC_T_F32: got = s->dot_f32(q, a, N); break;
		case DEC_T_F16: got = s->dot_f16(q, a, N); break;
		case DEC_T_Q8_0: got = s->dot_q8_0(q, a, N); break;
		case DEC_T_Q4_0: got = s->dot_q4_0(q, a, N); break;
		case DEC_T_Q5_0: got = s->dot_q5_0(q, a, N); break;
		case DEC_T_Q4_1: got = s->dot_q4_1(q, a, N); break;
		case DEC_T_Q5_1: got = s->dot_q5_1(q, a, N); break;
		case DEC_T_Q4_K: got = s->dot_q4_k(q, a, N); break;
		case DEC_T_Q6_K: got = s->dot_q6_k(q, a, N); break;
		default: got = dec_vec_dot(ty, q, a, N); break;
		}
		if (fabs(got - with_act) > 1e-5 * mag + 1e-4)
			fail_msg("%s %s: dot %g vs dequantized %g", s->name, dec_type_name(ty), got, with_act);
		if (fabs(got - exact) > 0.01 * mag)
			fail_msg("%s %s: dot %g vs f32 activations %g", s->name, dec_type_name(ty), got, exact);
	}
}

static void test_dot_generic(void **st)
{
	(void)st;
	check_dot(dec_simd_generic());
}

static void test_dot_avx2(void **st)
{
	(void)st;
	if (!dec_simd_avx2())
		skip();
	check_dot(dec_simd_avx2());
}

static void test_axpy_f16(void **st)
{
	enum { N = 77 };
	float v[N], o1[N], o2[N];
	uint16_t h[N];
	const struct dec_simd *simd[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	fill(v, N, 5);
	dec_quantize_row(DEC_T_F16, v, h, N);
	for (int k = 0; k < 2; k++) {
		float *o = k ? o2 : o1;

		if (!simd[k]) {
			memcpy(o2, o1, sizeof o1);
			continue;
		}
		for (int i = 0; i < N; i++)
			o[i] = (float)i;
		simd[k]->axpy_f16(0.5f, h, o, N);
	}
	for (int i = 0; i < N; i++) {
		assert_true(fabsf(o1[i] - (i + 0.5f * dec_f16_to_f32(h[i]))) < 1e-6f);
		assert_true(fabsf(o1[i] - o2[i]) < 1e-5f);
	}
}

static void test_attention_kernels(void **st)
{
	enum { HD = 64, NP = 37, STRIDE = 3 * HD };
	float x[NP * STRIDE], q[HD], a[NP], s1[NP], s2[NP], o1[HD], o2[HD];
	uint16_t k[NP * STRIDE], q16[HD];
	const struct dec_simd *g = dec_simd_generic(), *v = dec_simd_avx2();

	(void)st;
	if (!v)
		skip();
	fill(x, NP * STRIDE, 3);
	fill(q, HD, 4);
	fill(a, NP, 6);
	dec_quantize_row(DEC_T_F16, x, k, NP * STRIDE);
	dec_quantize_row(DEC_T_F16, q, q16, HD);
	g->att_scores(q16, k + HD, STRIDE, NP, HD, 0.125f, s1);
	v->att_scores(q16, k + HD, STRIDE, NP, HD, 0.125f, s2);
	for (int p = 0; p < NP; p++) {
		double ref = 0;

		for (int i = 0; i < HD; i++)
			ref += (double)dec_f16_to_f32(q16[i]) * dec_f16_to_f32(k[p * STRIDE + HD + i]);
		assert_true(fabs(s1[p] - 0.125 * ref) < 1e-4 && fabs(s2[p] - 0.125 * ref) < 1e-4);
	}
	memset(o1, 0, sizeof o1);
	memset(o2, 0, sizeof o2);
	g->att_values(a, k + HD, STRIDE, NP, HD, o1);
	v->att_values(a, k + HD, STRIDE, NP, HD, o2);
	for (int i = 0; i < HD; i++) {
		double ref = 0;

		for (int p = 0; p < NP; p++)
			ref += (double)a[p] * dec_f16_to_f32(k[p * STRIDE + HD + i]);
		assert_true(fabs(o1[i] - ref) < 1e-4 && fabs(o2[i] - ref) < 1e-4);
	}
	/* o accumulates: the cache in two pieces (paged blocks) gives the bits
	 * of one call, in each table */
	for (int t = 0; t < 2; t++) {
		const struct dec_simd *d = t ? v : g;
		float *whole = t ? o2 : o1, split[HD];

		memset(split, 0, sizeof split);
		d->att_values(a, k + HD, STRIDE, 5, HD, split);
		d->att_values(a + 5, k + HD + 5 * STRIDE, STRIDE, NP - 5, HD, split);
		assert_memory_equal(split, whole, sizeof split);
	}
}

/* The grouped kernels (a kv head's G query heads at once) give each head
 * the one-head kernels' bits, for G = 2..8 and head sizes 64, 72 (an odd
 * count of 8-value chunks: the tail chain) and 128, over 37 positions (not
 * a multiple of anything) in two calls. */
static void test_attention_groups(void **st)
{
	enum { MAXG = 8, MAXHD = 128, NP = 37, STRIDE = 2 * MAXHD };
	static const int hds[] = { 64, 72, 128 };
	float x[NP * STRIDE], q[MAXG * MAXHD], a[MAXG * NP], s1[MAXG * NP], s2[MAXG * NP];
	float o1[MAXG * MAXHD], o2[MAXG * MAXHD];
	uint16_t k[NP * STRIDE], q16[MAXG * MAXHD];
	const struct dec_simd *v = dec_simd_avx2();

	(void)st;
	if (!v)
		skip();
	assert_non_null(v->att_scores_g);
	assert_non_null(v->att_values_g);
	fill(x, NP * STRIDE, 7);
	fill(q, MAXG * MAXHD, 8);
	fill(a, MAXG * NP, 9);
	dec_quantize_row(DEC_T_F16, x, k, NP * STRIDE);
	dec_quantize_row(DEC_T_F16, q, q16, MAXG * MAXHD);
	for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
		for (int G = 2; G <= MAXG; G++) {
			int hd = hds[hi];

			for (int g = 0; g < G; g++)
				v->att_scores(q16 + g * hd, k + 3, STRIDE, NP, hd, 0.125f, s1 + g * NP);
			v->att_scores_g(q16, G, k + 3, STRIDE, 20, hd, 0.125f, s2, NP);
			v->att_scores_g(q16, G, k + 3 + 20 * STRIDE, STRIDE, NP - 20, hd, 0.125f, s2 + 20, NP);
			assert_memory_equal(s1, s2, (size_t)G * NP * sizeof *s1);
			memset(o1, 0, sizeof o1);
			memset(o2, 0, sizeof o2);
			for (int g = 0; g < G; g++)
				v->att_values(a + g * NP, k + 3, STRIDE, NP, hd, o1 + g * hd);
			v->att_values_g(a, NP, G, k + 3, STRIDE, 20, hd, o2, hd);
			v->att_values_g(a + 20, NP, G, k + 3 + 20 * STRIDE, STRIDE, NP - 20, hd, o2, hd);
			assert_memory_equal(o1, o2, (size_t)G * hd * sizeof *o1);
		}
}

/* The AVX2 table's softmax equals its steps one by one (max, exp_sum,
 * quotients), bit for bit, at widths around the 8-lane blocks. */
static void test_softmax(void **st)
{
	enum { N = 2051 };
	static const int ns[] = { 1, 7, 8, 37, N };
	float x[N], a[N], b[N];
	const struct dec_simd *v = dec_simd_avx2();

	(void)st;
	if (!v)
		skip();
	assert_non_null(v->softmax);
	fill(x, N, 12);
	for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
		int n = ns[k];
		float mx = -INFINITY, sum;

		memcpy(a, x, sizeof x);
		memcpy(b, x, sizeof x);
		for (int i = 0; i < n; i++)
			mx = a[i] > mx ? a[i] : mx;
		sum = v->exp_sum(a, n, mx);
		for (int i = 0; i < n; i++)
			a[i] /= sum;
		v->softmax(b, n);
		assert_memory_equal(a, b, (size_t)n * sizeof *a);
	}
}

static void test_exp_sum(void **st)
{
	enum { N = 203 };
	float x[N], y[N];
	const struct dec_simd *v = dec_simd_avx2();
	double ref = 0;
	float s;

	(void)st;
	if (!v)
		skip();
	for (int i = 0; i < N; i++)
		x[i] = y[i] = -100.0f + (float)i * 0.5f; /* -100 .. 1, max 1 */
	s = v->exp_sum(x, N, 1.0f);
	for (int i = 0; i < N; i++) {
		double e = exp((double)y[i] - 1.0);

		ref += e;
		if (y[i] > -80 && fabs(x[i] - e) > 1e-6 * e)
			fail_msg("exp(%g) = %g, want %g", y[i] - 1.0, x[i], e);
	}
	assert_true(fabs(s - ref) < 1e-5 * ref);
	/* the non-storing variant agrees and leaves its input alone */
	assert_true(fabs(v->sum_exp(y, N, 1.0f) - ref) < 1e-5 * ref);
	assert_true(y[0] == -100.0f);
}

/* The AVX2 activation quantizer writes the same bytes as the portable one,
 * and silu_mul agrees with expf. */
static void test_act_kernels(void **st)
{
	enum { N = 256 };
	float x[N], g1[N], g2[N], u[N];
	uint8_t a1[N * 2], a2[N * 2];
	const struct dec_simd *v = dec_simd_avx2();

	(void)st;
	if (!v)
		skip();
	fill(x, N, 21);
	x[5] = 0.5f * (127.f / 7.f); /* a half-way case after scaling is possible */
	for (int i = 64; i < 96; i++)
		x[i] = 0; /* an all-zero block */
	dec_quant_q8_0_generic(x, a1, N);
	v->quant_q8_0(x, a2, N);
	assert_memory_equal(a1, a2, N / 32 * sizeof(struct dec_block_q8_0));
	dec_quant_q8_1(x, a1, N);
	v->quant_q8_1(x, a2, N);
	assert_memory_equal(a1, a2, N / 32 * sizeof(struct dec_block_q8_1));
	{
		struct dec_block_q8_K k1[N / DEC_QK_K], k2[N / DEC_QK_K];

		static const float zero[DEC_QK_K];

		dec_quant_q8_k_generic(x, k1, N);
		v->quant_q8_k(x, k2, N);
		assert_memory_equal(k1, k2, sizeof k1);
		dec_quant_q8_k_generic(zero, k1, DEC_QK_K); /* an all-zero block */
		v->quant_q8_k(zero, k2, DEC_QK_K);
		assert_memory_equal(k1, k2, sizeof k1[0]);
	}
	fill(u, N, 22);
	for (int i = 0; i < N; i++) {
		g1[i] = g2[i] = x[i] * 30; /* reaches both tails of the sigmoid */
	}
	dec_silu_mul_generic(g1, u, N);
	v->silu_mul(g2, u, N);
	for (int i = 0; i < N; i++)
		assert_true(fabsf(g1[i] - g2[i]) <= 1e-6f * (1 + fabsf(g1[i])));
	/* f16 rounding (F16R activations): normals, ties, subnormals, overflow */
	for (int i = 0; i < N; i++)
		g1[i] = ldexpf(x[i], i % 48 - 30);
	g1[0] = 1.0f + ldexpf(1, -11);
	g1[1] = 1.0f + 3 * ldexpf(1, -11);
	g1[2] = 1e6f;
	g1[3] = -ldexpf(1, -25);
	g1[4] = ldexpf(3, -26);
	dec_quant_f16r_generic(g1, u, N - 3); /* N - 3: the AVX2 tail runs too */
	v->quant_f16r(g1, g2, N - 3);
	assert_memory_equal(u, g2, (N - 3) * sizeof(float));
	{
		uint16_t h1[N], h2[N];

		dec_quant_f16_generic(g1, h1, N - 3);
		v->quant_f16(g1, h2, N - 3);
		assert_memory_equal(h1, h2, (N - 3) * sizeof h1[0]);
	}
}

/* Four-token kernels give exactly the one-token results. */
static void test_dot4(void **st)
{
	enum { NMAX = 1056, STRIDE = NMAX * 4 }; /* f32 activations (F16R) are the widest */
	static const uint32_t q[] = { DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_K, DEC_T_Q6_K, DEC_T_F16 };
	float x[NMAX], w[NMAX];
	uint8_t row[NMAX * 2], act[4 * STRIDE];

	(void)st;
	if (!dec_vec_dot4_fn(DEC_T_Q8_0)) /* the portable table has none */
		skip();
	for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
		int n = q[k] == DEC_T_Q4_K || q[k] == DEC_T_Q6_K ? 1024 : 1056;
		dec_dot4_fn d4 = dec_vec_dot4_fn(q[k]);
		float o[4];

		assert_non_null(d4);
		fill(w, n, 40 + (uint32_t)k);
		dec_quantize_row(q[k], w, row, n);
		for (int t = 0; t < 4; t++) {
			fill(x, n, 50 + (uint32_t)t);
			dec_quantize_row(dec_vec_type(q[k]), x, act + t * STRIDE, n);
		}
		d4(row, act, STRIDE, n, o);
		for (int t = 0; t < 4; t++) {
			float one = dec_vec_dot(q[k], row, act + t * STRIDE, n);

			if (memcmp(&one, &o[t], sizeof one))
				fail_msg("%s token %d: %.9g vs %.9g", dec_type_name(q[k]), t, o[t], one);
		}
	}
}

/* Random bytes: every bit pattern of the packed 6-bit scales and mins. */
static void fill_bytes(void *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		((uint8_t *)p)[i] = (uint8_t)(seed >> 24);
	}
}

/* The repacked Q4_K kernels (8 rows at once) give exactly the one-row
 * portable results, and so do the one- and four-token AVX2 kernels, on
 * random blocks and on activations at the extremes (-128 everywhere against
 * nibbles 15: the 16-bit partial sums' worst case). */
static void test_gemv8_q4_k(void **st)
{
	enum { N = 1024, NB = N / DEC_QK_K, ROWS = 8 };
	static struct dec_block_q4_K w[ROWS][NB];
	static struct dec_block_q4_k_x8 x8[NB];
	static struct dec_block_q8_K a[4][NB];
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	for (int pass = 0; pass < 3; pass++) {
		fill_bytes(w, sizeof w, 7 + (uint32_t)pass);
		for (int r = 0; r < ROWS; r++)
			for (int i = 0; i < NB; i++) {
				w[r][i].d = dec_f32_to_f16(0.01f * (float)(r + 1) / (float)(i + 1));
				w[r][i].dmin = dec_f32_to_f16(0.003f * (float)(i + 2));
				if (pass == 2)
					memset(w[r][i].qs, 0xff, sizeof w[r][i].qs);
			}
		for (int t = 0; t < 4; t++) {
			fill_bytes(a[t], sizeof a[t], 77 + (uint32_t)(pass * 4 + t));
			for (int i = 0; i < NB; i++) {
				a[t][i].d = 0.02f * (float)(t + 1);
				if (pass == 2)
					memset(a[t][i].qs, t & 1 ? 0x7f : 0x80, sizeof a[t][i].qs);
				for (int g = 0; g < DEC_QK_K / 16; g++) {
					int sum = 0;

					for (int k = 0; k < 16; k++)
						sum += a[t][i].qs[16 * g + k];
					a[t][i].bsums[g] = (int16_t)sum;
				}
			}
		}
		dec_pack_q4_k_x8(w, sizeof w[0], N, x8);
		for (int t = 0; t < 4; t++)
			for (int k = 0; k < 2 && tab[k]; k++) {
				float o[8];

				tab[k]->gemv8_q4_k(x8, a[t], N, o);
				for (int r = 0; r < ROWS; r++) {
					float one = dec_dot_q4_k_generic(w[r], a[t], N), v = tab[k]->dot_q4_k(w[r], a[t], N);

					if (memcmp(&one, &o[r], sizeof one) || memcmp(&one, &v, sizeof one))
						fail_msg("%s pass %d token %d row %d: gemv8 %.9g dot %.9g generic %.9g",
							 tab[k]->name, pass, t, r, o[r], v, one);
				}
			}
		if (tab[1])
			for (int r = 0; r < ROWS; r++) {
				float o[4];

				tab[1]->dot4_q4_k(w[r], a, sizeof a[0], N, o);
				for (int t = 0; t < 4; t++) {
					float one = dec_dot_q4_k_generic(w[r], a[t], N);

					if (memcmp(&one, &o[t], sizeof one))
						fail_msg("dot4 pass %d row %d token %d: %.9g vs %.9g", pass, r, t, o[t], one);
				}
			}
	}
}

/* The same for Q8_0: repacked eight-row kernels, the one- and four-token
 * AVX2 kernels and the portable one agree bit for bit; weights may hold
 * -128 (activations never do: the quantizer clamps to ±127). */
static void test_gemv8_q8_0(void **st)
{
	enum { N = 1056, NB = N / DEC_QK, ROWS = 8 };
	static struct dec_block_q8_0 w[ROWS][NB], a[4][NB];
	static struct dec_block_q8_0_x8 x8[NB];
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	for (int pass = 0; pass < 3; pass++) {
		fill_bytes(w, sizeof w, 17 + (uint32_t)pass);
		fill_bytes(a, sizeof a, 23 + (uint32_t)pass);
		for (int i = 0; i < NB; i++) {
			for (int r = 0; r < ROWS; r++) {
				w[r][i].d = dec_f32_to_f16(0.01f * (float)(r + 1) / (float)(i + 1));
				if (pass == 2)
					memset(w[r][i].qs, 0x80, sizeof w[r][i].qs);
			}
			for (int t = 0; t < 4; t++) {
				a[t][i].d = dec_f32_to_f16(0.02f * (float)(t + 1));
				for (int k = 0; k < DEC_QK; k++)
					if (pass == 2)
						a[t][i].qs[k] = t & 1 ? 127 : -127;
					else if (a[t][i].qs[k] == -128)
						a[t][i].qs[k] = -127;
			}
		}
		dec_pack_q8_0_x8(w, sizeof w[0], N, x8);
		for (int t = 0; t < 4; t++)
			for (int k = 0; k < 2 && tab[k]; k++) {
				float o[8];

				tab[k]->gemv8_q8_0(x8, a[t], N, o);
				for (int r = 0; r < ROWS; r++) {
					float one = dec_dot_q8_0_generic(w[r], a[t], N), v = tab[k]->dot_q8_0(w[r], a[t], N);

					if (memcmp(&one, &o[r], sizeof one) || memcmp(&one, &v, sizeof one))
						fail_msg("%s pass %d token %d row %d: gemv8 %.9g dot %.9g generic %.9g",
							 tab[k]->name, pass, t, r, o[r], v, one);
				}
			}
		if (tab[1])
			for (int r = 0; r < ROWS; r++) {
				float o[4];

				tab[1]->dot4_q8_0(w[r], a, sizeof a[0], N, o);
				for (int t = 0; t < 4; t++) {
					float one = dec_dot_q8_0_generic(w[r], a[t], N);

					if (memcmp(&one, &o[t], sizeof one))
						fail_msg("dot4 pass %d row %d token %d: %.9g vs %.9g", pass, r, t, o[t], one);
				}
			}
	}
}

/* And for Q6_K (signed scales, -128 included; 6-bit values at 63 against
 * activations at -128 is the 16-bit worst case). */
static void test_gemv8_q6_k(void **st)
{
	enum { N = 1024, NB = N / DEC_QK_K, ROWS = 8 };
	static struct dec_block_q6_K w[ROWS][NB];
	static struct dec_block_q6_k_x8 x8[NB];
	static struct dec_block_q8_K a[4][NB];
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	for (int pass = 0; pass < 3; pass++) {
		fill_bytes(w, sizeof w, 31 + (uint32_t)pass);
		for (int r = 0; r < ROWS; r++)
			for (int i = 0; i < NB; i++) {
				w[r][i].d = dec_f32_to_f16(0.01f * (float)(r + 1) / (float)(i + 1));
				if (pass == 2) {
					memset(w[r][i].ql, 0xff, sizeof w[r][i].ql);
					memset(w[r][i].qh, 0xff, sizeof w[r][i].qh);
					memset(w[r][i].scales, 0x80, sizeof w[r][i].scales);
				}
			}
		for (int t = 0; t < 4; t++) {
			fill_bytes(a[t], sizeof a[t], 41 + (uint32_t)(pass * 4 + t));
			for (int i = 0; i < NB; i++) {
				a[t][i].d = 0.02f * (float)(t + 1);
				if (pass == 2)
					memset(a[t][i].qs, t & 1 ? 0x7f : 0x80, sizeof a[t][i].qs);
				for (int g = 0; g < DEC_QK_K / 16; g++) {
					int sum = 0;

					for (int k = 0; k < 16; k++)
						sum += a[t][i].qs[16 * g + k];
					a[t][i].bsums[g] = (int16_t)sum;
				}
			}
		}
		dec_pack_q6_k_x8(w, sizeof w[0], N, x8);
		for (int t = 0; t < 4; t++)
			for (int k = 0; k < 2 && tab[k]; k++) {
				float o[8];

				tab[k]->gemv8_q6_k(x8, a[t], N, o);
				for (int r = 0; r < ROWS; r++) {
					float one = dec_dot_q6_k_generic(w[r], a[t], N), v = tab[k]->dot_q6_k(w[r], a[t], N);

					if (memcmp(&one, &o[r], sizeof one) || memcmp(&one, &v, sizeof one))
						fail_msg("%s pass %d token %d row %d: gemv8 %.9g dot %.9g generic %.9g",
							 tab[k]->name, pass, t, r, o[r], v, one);
				}
			}
		if (tab[1])
			for (int r = 0; r < ROWS; r++) {
				float o[4];

				tab[1]->dot4_q6_k(w[r], a, sizeof a[0], N, o);
				for (int t = 0; t < 4; t++) {
					float one = dec_dot_q6_k_generic(w[r], a[t], N);

					if (memcmp(&one, &o[t], sizeof one))
						fail_msg("dot4 pass %d row %d token %d: %.9g vs %.9g", pass, r, t, o[t], one);
				}
			}
	}
}

/* Q4_0 and Q5_0 likewise: random blocks, then every value at its largest
 * (the 16-bit partial sums' worst case). */
static void test_gemv8_q4_0_q5_0(void **st)
{
	enum { N = 1056, NB = N / DEC_QK, ROWS = 8, BMAX = 22 };
	static uint8_t w[ROWS][NB * BMAX], x8[NB * 176];
	static struct dec_block_q8_0 a[4][NB];
	static const uint32_t types[2] = { DEC_T_Q4_0, DEC_T_Q5_0 };
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	for (int ty = 0; ty < 2; ty++)
		for (int pass = 0; pass < 3; pass++) {
			uint32_t t0 = types[ty];
			size_t bs = t0 == DEC_T_Q4_0 ? sizeof(struct dec_block_q4_0) : sizeof(struct dec_block_q5_0);
			dec_dot_fn gen = t0 == DEC_T_Q4_0 ? dec_dot_q4_0_generic : dec_dot_q5_0_generic;

			fill_bytes(w, sizeof w, 51 + (uint32_t)(pass + 3 * ty));
			fill_bytes(a, sizeof a, 61 + (uint32_t)(pass + 3 * ty));
			for (int i = 0; i < NB; i++) {
				for (int r = 0; r < ROWS; r++) {
					uint16_t d = dec_f32_to_f16(0.01f * (float)(r + 1) / (float)(i + 1));
					uint8_t *b = w[r] + i * bs;

					if (pass == 2)
						memset(b + 2, 0xff, bs - 2);
					memcpy(b, &d, 2);
				}
				for (int t = 0; t < 4; t++) {
					a[t][i].d = dec_f32_to_f16(0.02f * (float)(t + 1));
					for (int k = 0; k < DEC_QK; k++)
						if (pass == 2)
							a[t][i].qs[k] = t & 1 ? 127 : -127;
						else if (a[t][i].qs[k] == -128)
							a[t][i].qs[k] = -127;
				}
			}
			dec_pack_x8(t0, w, sizeof w[0], N, x8);
			for (int t = 0; t < 4; t++)
				for (int k = 0; k < 2 && tab[k]; k++) {
					const struct dec_simd *sk = tab[k];
					dec_gemv8_fn g8 = t0 == DEC_T_Q4_0 ? sk->gemv8_q4_0 : sk->gemv8_q5_0;
					dec_dot_fn dot = t0 == DEC_T_Q4_0 ? sk->dot_q4_0 : sk->dot_q5_0;
					float o[8];

					g8(x8, a[t], N, o);
					for (int r = 0; r < ROWS; r++) {
						float one = gen(w[r], a[t], N), v = dot(w[r], a[t], N);

						if (memcmp(&one, &o[r], sizeof one) || memcmp(&one, &v, sizeof one))
							fail_msg("%s %s pass %d token %d row %d: gemv8 %.9g dot %.9g generic %.9g",
								 sk->name, dec_type_name(t0), pass, t, r, o[r], v, one);
					}
				}
			if (tab[1])
				for (int r = 0; r < ROWS; r++) {
					float o[4];

					(t0 == DEC_T_Q4_0 ? tab[1]->dot4_q4_0 : tab[1]->dot4_q5_0)(w[r], a, sizeof a[0], N, o);
					for (int t = 0; t < 4; t++) {
						float one = gen(w[r], a[t], N);

						if (memcmp(&one, &o[t], sizeof one))
							fail_msg("dot4 %s pass %d row %d token %d: %.9g vs %.9g",
								 dec_type_name(t0), pass, r, t, o[t], one);
					}
				}
		}
}

/* Q4_1 and Q5_1 likewise, against Q8_1 activations: random blocks, then
 * every value at its largest against activations at ±127. */
static void test_gemv8_q4_1_q5_1(void **st)
{
	enum { N = 1056, NB = N / DEC_QK, ROWS = 8, BMAX = 24 };
	static uint8_t w[ROWS][NB * BMAX], x8[NB * 192];
	static struct dec_block_q8_1 a[4][NB];
	static const uint32_t types[2] = { DEC_T_Q4_1, DEC_T_Q5_1 };
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	for (int ty = 0; ty < 2; ty++)
		for (int pass = 0; pass < 3; pass++) {
			uint32_t t0 = types[ty];
			size_t bs = t0 == DEC_T_Q4_1 ? sizeof(struct dec_block_q4_1) : sizeof(struct dec_block_q5_1);
			dec_dot_fn gen = t0 == DEC_T_Q4_1 ? dec_dot_q4_1_generic : dec_dot_q5_1_generic;

			fill_bytes(w, sizeof w, 151 + (uint32_t)(pass + 3 * ty));
			fill_bytes(a, sizeof a, 161 + (uint32_t)(pass + 3 * ty));
			for (int i = 0; i < NB; i++) {
				for (int r = 0; r < ROWS; r++) {
					uint16_t dm[2] = { dec_f32_to_f16(0.01f * (float)(r + 1) / (float)(i + 1)),
							   dec_f32_to_f16(-0.05f * (float)(r + 2) / (float)(i + 3)) };
					uint8_t *b = w[r] + i * bs;

					if (pass == 2)
						memset(b + 4, 0xff, bs - 4);
					memcpy(b, dm, 4);
				}
				for (int t = 0; t < 4; t++) {
					a[t][i].d = dec_f32_to_f16(0.02f * (float)(t + 1));
					a[t][i].s = dec_f32_to_f16(0.3f * (float)(t - 1) + 0.01f * (float)i);
					for (int k = 0; k < DEC_QK; k++)
						if (pass == 2)
							a[t][i].qs[k] = t & 1 ? 127 : -127;
						else if (a[t][i].qs[k] == -128)
							a[t][i].qs[k] = -127;
				}
			}
			dec_pack_x8(t0, w, sizeof w[0], N, x8);
			for (int t = 0; t < 4; t++)
				for (int k = 0; k < 2 && tab[k]; k++) {
					const struct dec_simd *sk = tab[k];
					dec_gemv8_fn g8 = t0 == DEC_T_Q4_1 ? sk->gemv8_q4_1 : sk->gemv8_q5_1;
					dec_dot_fn dot = t0 == DEC_T_Q4_1 ? sk->dot_q4_1 : sk->dot_q5_1;
					float o[8];

					g8(x8, a[t], N, o);
					for (int r = 0; r < ROWS; r++) {
						float one = gen(w[r], a[t], N), v = dot(w[r], a[t], N);

						if (memcmp(&one, &o[r], sizeof one) || memcmp(&one, &v, sizeof one))
							fail_msg("%s %s pass %d token %d row %d: gemv8 %.9g dot %.9g generic %.9g",
								 sk->name, dec_type_name(t0), pass, t, r, o[r], v, one);
					}
				}
		}
}

/* The tables this CPU can run: generic, AVX2, AVX-512 (NULL where absent). */
static void tables(const struct dec_simd *tab[3])
{
	tab[0] = dec_simd_generic();
	tab[1] = dec_simd_avx2();
	tab[2] = dec_simd_avx512();
}

/* The prefill kernels (8 repacked rows × gemm_nt tokens) of every table
 * against the portable one-row kernel and the table's own eight-row one,
 * bit for bit: random blocks with activations from the quantizer, then
 * every value at its largest (scales and mins at 63) against activations
 * at the quantizer's extremes (+127 / -127, and -128 for Q8_K): the 16-bit
 * partial sums' worst case. Also checks the kernel the dispatch picks. */
static void test_gemm8(void **st)
{
	enum { NMAX = 1056, ROWS = 8, TMAX = 16 };
	static const uint32_t types[] = { DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_1, DEC_T_Q4_K,
					  DEC_T_Q6_K };
	static uint8_t w[ROWS][NMAX * 2], x8[NMAX * 2 * ROWS], act[TMAX][NMAX * 2];
	const struct dec_simd *tab[3];
	float xf[NMAX];
	int ran = 0;

	(void)st;
	assert_true(DEC_Q8_0_SUMS(NMAX) + 4 * NMAX / 32 <= sizeof act[0]);
	tables(tab);
	for (size_t ty = 0; ty < sizeof types / sizeof types[0]; ty++)
		for (int pass = 0; pass < 3; pass++) {
			uint32_t t0 = types[ty], vt = dec_vec_type(t0);
			int kt = t0 == DEC_T_Q4_K || t0 == DEC_T_Q6_K, n = kt ? 1024 : NMAX;
			size_t rb = dec_row_size(t0, n), ab = dec_row_size(vt, n);
			size_t bs = dec_row_size(t0, kt ? DEC_QK_K : DEC_QK);
			/* the f16 fields: d (and dmin or m) first; Q6_K's d last */
			size_t hdr = t0 == DEC_T_Q8_0 || t0 == DEC_T_Q4_0 || t0 == DEC_T_Q5_0 ? 2 : 4;
			dec_dot_fn gen = dec_simd_generic()->dot_q8_0;

			switch (t0) {
			case DEC_T_Q4_0: gen = dec_dot_q4_0_generic; break;
			case DEC_T_Q5_0: gen = dec_dot_q5_0_generic; break;
			case DEC_T_Q4_1: gen = dec_dot_q4_1_generic; break;
			case DEC_T_Q4_K: gen = dec_dot_q4_k_generic; break;
			case DEC_T_Q6_K: gen = dec_dot_q6_k_generic; break;
			}
			fill_bytes(w, sizeof w, 71 + (uint32_t)(pass + 3 * ty));
			for (int r = 0; r < ROWS; r++)
				for (size_t b = 0; b < rb / bs; b++) {
					uint8_t *p = w[r] + b * bs;
					/* Q4_K has d at 0 and dmin at 2, the _1 types d and m */
					uint16_t d = dec_f32_to_f16(0.01f * (float)(r + 1) / (float)(b + 1));
					uint16_t m = dec_f32_to_f16(-0.003f * (float)(r + 2));

					if (t0 == DEC_T_Q6_K) { /* scales signed: -1 at the extreme pass */
						if (pass == 2)
							memset(p, 0xff, bs - 2);
						memcpy(p + bs - 2, &d, 2);
						continue;
					}
					if (pass == 2)
						memset(p + hdr, 0xff, bs - hdr);
					memcpy(p, &d, 2);
					if (hdr == 4)
						memcpy(p + 2, &m, 2);
				}
			for (int t = 0; t < TMAX; t++) {
				fill(xf, n, 81 + (uint32_t)(t + 16 * pass));
				if (pass == 2)
					for (int i = 0; i < n; i++)
						xf[i] = t & 1 ? 1.0f : -1.0f;
				assert_int_equal(dec_quantize_row(vt, xf, act[t], n), 1);
				if (vt == DEC_T_Q8_0)
					dec_q8_0_sums(act[t], n);
			}
			dec_pack_x8(t0, w, sizeof w[0], n, x8);
			for (int k = 0; k < 3; k++) {
				dec_gemm8_fn g = tab[k] ? dec_simd_gemm8_of(tab[k], t0) : NULL;
				int nt = tab[k] ? tab[k]->gemm_nt : 0;
				float o[8 * TMAX], o1[8];

				if (!g)
					continue;
				assert_true(nt >= 1 && nt <= TMAX);
				ran++;
				for (int b0 = 0; b0 + nt <= TMAX; b0 += nt) {
					g(x8, act[b0], sizeof act[0], n, o);
					for (int t = 0; t < nt; t++) {
						dec_simd_gemv8_of(tab[k], t0)(x8, act[b0 + t], n, o1);
						for (int r = 0; r < ROWS; r++) {
							float one = gen(w[r], act[b0 + t], n);

							if (memcmp(&one, &o[8 * t + r], sizeof one) ||
							    memcmp(&one, &o1[r], sizeof one))
								fail_msg("%s %s pass %d token %d row %d: gemm8 %.9g gemv8 %.9g "
									 "generic %.9g", tab[k]->name, dec_type_name(t0), pass,
									 b0 + t, r, o[8 * t + r], o1[r], one);
						}
					}
				}
			}
			(void)ab;
		}
	/* the dispatch: the chosen table's kernel, or none for the portable one */
	{
		int nt;
		dec_gemm8_fn g = dec_vec_gemm8_fn(DEC_T_Q8_0, &nt);

		assert_true(g == dec_simd_get()->gemm8_q8_0);
		assert_null(dec_vec_gemm8_fn(DEC_T_Q2_K, &nt));
	}
	if (!ran && tab[1])
		fail_msg("AVX2 present but no prefill kernel ran");
}

/* The F16 tile (4 rows × 4 tokens, the weights converted to f32 by the
 * table's f16_f32) against the table's one-token F16 kernel, bit for bit,
 * with a tail (n % 16 != 0) and without. */
static void test_gemm_f16(void **st)
{
	enum { NMAX = 1061 };
	static uint16_t w[4][NMAX];
	static float a[4][NMAX], wf[4][NMAX];
	const struct dec_simd *tab[3];
	float xf[NMAX];
	int ran = 0;

	(void)st;
	tables(tab);
	for (int k = 0; k < 3; k++) {
		if (!tab[k] || !tab[k]->gemm_f16)
			continue;
		for (int pass = 0; pass < 2; pass++) {
			int n = pass ? NMAX : 1056;
			float o[16];

			for (int r = 0; r < 4; r++) {
				fill(xf, n, 91 + (uint32_t)r);
				dec_quantize_row(DEC_T_F16, xf, w[r], n);
			}
			for (int t = 0; t < 4; t++) {
				fill(xf, n, 95 + (uint32_t)t);
				dec_quantize_row(DEC_T_F16R, xf, a[t], n);
			}
			for (int r = 0; r < 4; r++) {
				tab[k]->f16_f32(w[r], wf[r], n);
				for (int i = 0; i < n; i++)
					assert_true(wf[r][i] == dec_f16_to_f32(w[r][i]));
			}
			tab[k]->gemm_f16(wf[0], NMAX, a, sizeof a[0], n, o);
			ran++;
			for (int r = 0; r < 4; r++)
				for (int t = 0; t < 4; t++) {
					float one = tab[k]->dot_f16(w[r], a[t], n);

					if (memcmp(&one, &o[4 * t + r], sizeof one))
						fail_msg("%s f16 n %d row %d token %d: tile %.9g one %.9g", tab[k]->name, n,
							 r, t, o[4 * t + r], one);
					if (tab[k] == dec_simd_get() && one != dec_vec_dot(DEC_T_F16, w[r], a[t], n))
						fail_msg("f16: the dispatch's kernel differs");
				}
		}
	}
	if (!ran)
		skip();
}

static void test_type_table(void **st)
{
	size_t b, s;

	(void)st;
	assert_true(dec_type_info(DEC_T_Q4_K, &b, &s) && b == 256 && s == sizeof(struct dec_block_q4_K));
	assert_true(dec_type_info(DEC_T_Q6_K, &b, &s) && b == 256 && s == sizeof(struct dec_block_q6_K));
	assert_true(dec_type_info(DEC_T_Q5_0, &b, &s) && b == 32 && s == sizeof(struct dec_block_q5_0));
	assert_true(dec_type_info(DEC_T_Q8_K, &b, &s) && s == sizeof(struct dec_block_q8_K));
	assert_false(dec_type_info(4, &b, &s)); /* removed Q4_2 */
	assert_true(dec_type_info(DEC_T_Q4_1, &b, &s) && b == 32 && s == sizeof(struct dec_block_q4_1));
	assert_true(dec_type_info(DEC_T_Q5_1, &b, &s) && b == 32 && s == sizeof(struct dec_block_q5_1));
	assert_true(dec_type_info(DEC_T_Q8_1, &b, &s) && b == 32 && s == sizeof(struct dec_block_q8_1));
	assert_true(dec_type_supported(DEC_T_Q4_1) && dec_type_supported(DEC_T_Q5_1));
	assert_int_equal(dec_vec_type(DEC_T_Q4_1), DEC_T_Q8_1);
	assert_int_equal(dec_vec_type(DEC_T_Q5_1), DEC_T_Q8_1);
	assert_false(dec_type_supported(DEC_T_IQ2_XXS));
	assert_int_equal(dec_row_size(DEC_T_Q8_0, 64), 68);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f16),
		cmocka_unit_test(test_type_table),
		cmocka_unit_test(test_hand_q8_0),
		cmocka_unit_test(test_hand_q4_0),
		cmocka_unit_test(test_hand_q5_0),
		cmocka_unit_test(test_hand_q4_1),
		cmocka_unit_test(test_hand_q5_1),
		cmocka_unit_test(test_hand_q8_1),
		cmocka_unit_test(test_hand_q4_k),
		cmocka_unit_test(test_hand_q6_k),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_dot_generic),
		cmocka_unit_test(test_dot_avx2),
		cmocka_unit_test(test_axpy_f16),
		cmocka_unit_test(test_dot4),
		cmocka_unit_test(test_gemv8_q4_k),
		cmocka_unit_test(test_gemv8_q8_0),
		cmocka_unit_test(test_gemv8_q6_k),
		cmocka_unit_test(test_gemv8_q4_0_q5_0),
		cmocka_unit_test(test_gemv8_q4_1_q5_1),
		cmocka_unit_test(test_gemm8),
		cmocka_unit_test(test_gemm_f16),
		cmocka_unit_test(test_act_kernels),
		cmocka_unit_test(test_exp_sum),
		cmocka_unit_test(test_attention_kernels),
		cmocka_unit_test(test_attention_groups),
		cmocka_unit_test(test_softmax),
	};

	return cmocka_run_group_tests_name("decode_quant", tests, NULL, NULL);
}
