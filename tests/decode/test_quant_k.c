/* test_quant_k.c — the low-bit types Q2_K, Q3_K, Q5_K, IQ4_NL, IQ4_XS: the
 * type table; hand-built blocks with hand-computed values and dot products;
 * quantize → dequantize error; every dot product (portable and AVX2) against
 * dequantize + double; the AVX2 and repacked eight-row kernels against the
 * portable one-row kernel bit for bit, on random blocks and at the 16-bit
 * partial sums' worst case; and llama.cpp's own numbers (golden_k.h):
 * its quantized rows dequantize to its floats bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"
#include "golden_k.h"

static const uint32_t ktypes[] = { DEC_T_Q2_K, DEC_T_Q3_K, DEC_T_Q5_K, DEC_T_IQ4_NL, DEC_T_IQ4_XS };
#define N_KTYPES (sizeof ktypes / sizeof ktypes[0])

static void fill(float *x, int n, uint32_t seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		x[i] = ((float)(seed >> 8) / (float)(1 << 24) * 2 - 1) * (1 + (float)(i % 7));
	}
}

static void fill_bytes(void *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		((uint8_t *)p)[i] = (uint8_t)(seed >> 24);
	}
}

static void set_bsums(struct dec_block_q8_K *a)
{
	for (int g = 0; g < DEC_QK_K / 16; g++) {
		int s = 0;

		for (int k = 0; k < 16; k++)
			s += a->qs[16 * g + k];
		a->bsums[g] = (int16_t)s;
	}
}

/* The table of a simd struct entry for type t. */
static dec_dot_fn dot_of(const struct dec_simd *s, uint32_t t)
{
	switch (t) {
	case DEC_T_Q2_K: return s->dot_q2_k;
	case DEC_T_Q3_K: return s->dot_q3_k;
	case DEC_T_Q5_K: return s->dot_q5_k;
	case DEC_T_IQ4_NL: return s->dot_iq4_nl;
	case DEC_T_IQ4_XS: return s->dot_iq4_xs;
	}
	return NULL;
}

static dec_gemv8_fn gemv8_of(const struct dec_simd *s, uint32_t t)
{
	switch (t) {
	case DEC_T_Q2_K: return s->gemv8_q2_k;
	case DEC_T_Q3_K: return s->gemv8_q3_k;
	case DEC_T_Q5_K: return s->gemv8_q5_k;
	case DEC_T_IQ4_NL: return s->gemv8_iq4_nl;
	case DEC_T_IQ4_XS: return s->gemv8_iq4_xs;
	}
	return NULL;
}

static void test_type_table(void **st)
{
	static const struct { uint32_t t; size_t blck, size; const char *name; uint32_t vt; } want[] = {
		{ DEC_T_Q2_K, 256, 84, "Q2_K", DEC_T_Q8_K },
		{ DEC_T_Q3_K, 256, 110, "Q3_K", DEC_T_Q8_K },
		{ DEC_T_Q5_K, 256, 176, "Q5_K", DEC_T_Q8_K },
		{ DEC_T_IQ4_NL, 32, 18, "IQ4_NL", DEC_T_Q8_0 },
		{ DEC_T_IQ4_XS, 256, 136, "IQ4_XS", DEC_T_Q8_K },
	};
	size_t b, s;

	(void)st;
	assert_int_equal(sizeof(struct dec_block_q2_K), 84);
	assert_int_equal(sizeof(struct dec_block_q3_K), 110);
	assert_int_equal(sizeof(struct dec_block_q5_K), 176);
	assert_int_equal(sizeof(struct dec_block_iq4_nl), 18);
	assert_int_equal(sizeof(struct dec_block_iq4_xs), 136);
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		assert_true(dec_type_info(want[k].t, &b, &s));
		assert_int_equal(b, want[k].blck);
		assert_int_equal(s, want[k].size);
		assert_string_equal(dec_type_name(want[k].t), want[k].name);
		assert_true(dec_type_supported(want[k].t));
		assert_int_equal(dec_vec_type(want[k].t), want[k].vt);
		assert_non_null(dot_of(dec_simd_generic(), want[k].t));
		assert_true(dec_vec_dot_fn(want[k].t) == dot_of(dec_simd_get(), want[k].t));
	}
	/* ggml types the decoder does not run: sized (a file holding one parses)
	 * and named (the loader's refusal says which) */
	assert_true(dec_type_info(DEC_T_IQ2_XXS, &b, &s) && b == 256 && s == 66);
	assert_true(dec_type_info(DEC_T_IQ3_S, &b, &s) && b == 256 && s == 110);
	assert_true(dec_type_info(DEC_T_MXFP4, &b, &s) && b == 32 && s == 17);
	assert_string_equal(dec_type_name(DEC_T_IQ1_M), "IQ1_M");
	assert_false(dec_type_supported(DEC_T_IQ2_XXS) || dec_type_supported(DEC_T_TQ1_0));
}

/* Q2_K: sub-block 0 scale 2 min 4, quants l % 4 (bits 0-1 of bytes 0..15);
 * sub-block 5 (bytes 16..31, bits 4-5) scale 3 min 1, quants 3 - l % 4. */
static void test_hand_q2_k(void **st)
{
	struct dec_block_q2_K b;
	struct dec_block_q8_K a;
	float y[256];

	(void)st;
	memset(&b, 0, sizeof b);
	b.d = dec_f32_to_f16(1.0f);
	b.dmin = dec_f32_to_f16(0.5f);
	b.scales[0] = 2 | 4 << 4;
	b.scales[5] = 3 | 1 << 4;
	for (int l = 0; l < 16; l++) {
		b.qs[l] = (uint8_t)(l % 4);
		b.qs[16 + l] = (uint8_t)((3 - l % 4) << 4);
	}
	dec_dequant_row(DEC_T_Q2_K, &b, y, 256);
	for (int l = 0; l < 16; l++) {
		assert_true(y[l] == 2.0f * (float)(l % 4) - 2.0f);          /* 1 · 2 · q - 0.5 · 4 */
		assert_true(y[80 + l] == 3.0f * (float)(3 - l % 4) - 0.5f); /* value 64 + 16 + l */
		assert_true(y[16 + l] == 0 && y[64 + l] == 0);
	}
	/* activations 1 (d 0.5, q 2): 0.5 · (1 · (2 · 2 · 24 + 3 · 2 · 24) - 0.5 · (4 · 32 + 1 · 32)) */
	memset(&a, 0, sizeof a);
	a.d = 0.5f;
	memset(a.qs, 2, sizeof a.qs);
	set_bsums(&a);
	assert_true(dec_dot_q2_k_generic(&b, &a, 256) == 80.0f);
	if (dec_simd_avx2())
		assert_true(dec_simd_avx2()->dot_q2_k(&b, &a, 256) == 80.0f);
}

/* Q3_K, d 0.5: sub-block 0 scale 40 - 32 = 8, quants l % 4 - 4 (l >= 8)
 * (3rd bit, bit 0 of hmask[l], set for l < 8); sub-block 13 (values 208..223:
 * bytes 48..63 bits 4-5, hmask[16 + l] bit 6) scale 20 - 32 = -12, quants
 * 3 - l % 4; the others scale 32 - 32 = 0. Packed by hand: scales[0] low
 * nibble 8 (40 & 15), scales[5] high nibble 4 (20 & 15); high 2 bits 2 for
 * every scale (0xAA) but sub-block 13's, 1 (bits 6-7 of scales[9]). */
static void test_hand_q3_k(void **st)
{
	struct dec_block_q3_K b;
	struct dec_block_q8_K a;
	float y[256];

	(void)st;
	memset(&b, 0, sizeof b);
	b.d = dec_f32_to_f16(0.5f);
	b.scales[0] = 0x08;
	b.scales[5] = 0x40;
	b.scales[8] = 0xAA;
	b.scales[9] = 0x6A;
	b.scales[10] = 0xAA;
	b.scales[11] = 0xAA;
	for (int l = 0; l < 16; l++) {
		b.qs[l] = (uint8_t)(l % 4);
		b.hmask[l] = l < 8 ? 1 : 0;
		b.qs[48 + l] = (uint8_t)((3 - l % 4) << 4);
		b.hmask[16 + l] = 1 << 6;
	}
	assert_int_equal(dec_q3k_scale(b.scales, 0), 8);
	assert_int_equal(dec_q3k_scale(b.scales, 13), -12);
	assert_int_equal(dec_q3k_scale(b.scales, 7), 0);
	dec_dequant_row(DEC_T_Q3_K, &b, y, 256);
	for (int l = 0; l < 16; l++) {
		assert_true(y[l] == 4.0f * (float)(l % 4 - (l >= 8 ? 4 : 0)));
		assert_true(y[208 + l] == -6.0f * (float)(3 - l % 4));
		assert_true(y[16 + l] == 0 && y[192 + l] == 0);
	}
	/* activations 0.25 (d 0.25, q 1): 0.5 · 0.25 · (8 · -8 - 12 · 24) = -44 */
	memset(&a, 0, sizeof a);
	a.d = 0.25f;
	memset(a.qs, 1, sizeof a.qs);
	set_bsums(&a);
	assert_true(dec_dot_q3_k_generic(&b, &a, 256) == -44.0f);
	if (dec_simd_avx2())
		assert_true(dec_simd_avx2()->dot_q3_k(&b, &a, 256) == -44.0f);
}

/* Q5_K: Q4_K's scales (sub-block 0: scale 2, min 4; sub-block 5: 33, 17);
 * sub-block 0 quants l (the 5th bit, bit 0 of qh[l], for l >= 16), sub-block
 * 5 (high nibbles of bytes 64..95, bit 5 of qh) quants 31 - l. */
static void test_hand_q5_k(void **st)
{
	struct dec_block_q5_K b;
	struct dec_block_q8_K a;
	float y[256];

	(void)st;
	memset(&b, 0, sizeof b);
	b.d = dec_f32_to_f16(1.0f);
	b.dmin = dec_f32_to_f16(0.25f);
	b.scales[0] = 2;
	b.scales[4] = 4;
	b.scales[1] = (uint8_t)((33 >> 4) << 6);
	b.scales[5] = (uint8_t)((17 >> 4) << 6);
	b.scales[9] = (uint8_t)((33 & 0xF) | ((17 & 0xF) << 4));
	for (int l = 0; l < 32; l++) {
		b.qs[l] = (uint8_t)(l % 16);
		b.qs[64 + l] = (uint8_t)(((31 - l) % 16) << 4);
		b.qh[l] = (uint8_t)((l >= 16 ? 1 : 0) | (l < 16 ? 1 << 5 : 0));
	}
	dec_dequant_row(DEC_T_Q5_K, &b, y, 256);
	for (int l = 0; l < 32; l++) {
		assert_true(y[l] == 2.0f * (float)l - 1.0f);
		assert_true(y[160 + l] == 33.0f * (float)(31 - l) - 4.25f);
		assert_true(y[32 + l] == 0);
	}
	/* activations 0.125 (d 0.125, q 1): 0.125 · (2 · 496 + 33 · 496 - 0.25 · (4 · 32 + 17 · 32)) */
	memset(&a, 0, sizeof a);
	a.d = 0.125f;
	memset(a.qs, 1, sizeof a.qs);
	set_bsums(&a);
	assert_true(dec_dot_q5_k_generic(&b, &a, 256) == 2149.0f);
	if (dec_simd_avx2())
		assert_true(dec_simd_avx2()->dot_q5_k(&b, &a, 256) == 2149.0f);
}

/* IQ4_NL: d 0.5, nibbles j and 15 - j; the codebook is ggml's kvalues_iq4nl
 * (sum -94). */
static void test_hand_iq4_nl(void **st)
{
	struct dec_block_iq4_nl b;
	struct dec_block_q8_0 a;
	float y[32];

	(void)st;
	b.d = dec_f32_to_f16(0.5f);
	for (int j = 0; j < 16; j++)
		b.qs[j] = (uint8_t)(j | (15 - j) << 4);
	dec_dequant_row(DEC_T_IQ4_NL, &b, y, 32);
	assert_true(y[0] == -63.5f && y[7] == -5.0f && y[8] == 0.5f && y[15] == 56.5f);
	assert_true(y[16] == 56.5f && y[31] == -63.5f && y[17] == 44.5f);
	/* activations d 2, q 1 (first half) and 2: 0.5 · 2 · (-94 + 2 · -94) */
	a.d = dec_f32_to_f16(2.0f);
	for (int j = 0; j < 32; j++)
		a.qs[j] = j < 16 ? 1 : 2;
	assert_true(dec_dot_iq4_nl_generic(&b, &a, 32) == -282.0f);
	if (dec_simd_avx2())
		assert_true(dec_simd_avx2()->dot_iq4_nl(&b, &a, 32) == -282.0f);
}

/* IQ4_XS, d 0.25: block 0 scale 40 - 32 = 8 (nibbles j, 15 - j), block 3
 * 17 - 32 = -15 (every nibble 8: codebook 1), block 6 63 - 32 = 31 (low
 * nibbles 0: -127, high 15: 113), the others 32 - 32 = 0. Packed by hand:
 * scales_l = 0x08, 0x10, 0x00, 0x0F; scales_h = 2-bit fields 2, 2, 2, 1, 2,
 * 2, 3, 2 = 0xBA6A. */
static void test_hand_iq4_xs(void **st)
{
	struct dec_block_iq4_xs b;
	struct dec_block_q8_K a;
	float y[256];

	(void)st;
	memset(&b, 0, sizeof b);
	b.d = dec_f32_to_f16(0.25f);
	b.scales_l[0] = 0x08;
	b.scales_l[1] = 0x10;
	b.scales_l[3] = 0x0F;
	b.scales_h = 0xBA6A;
	for (int j = 0; j < 16; j++) {
		b.qs[j] = (uint8_t)(j | (15 - j) << 4);
		b.qs[48 + j] = 0x88;
		b.qs[96 + j] = 0xF0;
	}
	assert_int_equal(dec_iq4xs_scale(&b, 0), 8);
	assert_int_equal(dec_iq4xs_scale(&b, 3), -15);
	assert_int_equal(dec_iq4xs_scale(&b, 6), 31);
	assert_int_equal(dec_iq4xs_scale(&b, 7), 0);
	dec_dequant_row(DEC_T_IQ4_XS, &b, y, 256);
	assert_true(y[0] == -254.0f && y[16] == 226.0f && y[8] == 2.0f);
	for (int j = 0; j < 32; j++) {
		assert_true(y[96 + j] == -3.75f);
		assert_true(y[192 + j] == (j < 16 ? -984.25f : 875.75f));
		assert_true(y[32 + j] == 0);
	}
	/* activations 0.5 (d 0.5, q 1): 0.25 · 0.5 · (8 · -188 - 15 · 32 + 31 · 16 · -14) */
	memset(&a, 0, sizeof a);
	a.d = 0.5f;
	memset(a.qs, 1, sizeof a.qs);
	set_bsums(&a);
	assert_true(dec_dot_iq4_xs_generic(&b, &a, 256) == -1116.0f);
	if (dec_simd_avx2())
		assert_true(dec_simd_avx2()->dot_iq4_xs(&b, &a, 256) == -1116.0f);
}

/* Round-to-nearest quantizers: relative rms error of a round trip. */
static void test_roundtrip(void **st)
{
	enum { N = 1024 };
	float x[N], y[N];
	uint8_t q[N * 2];

	(void)st;
	fill(x, N, 7);
	for (size_t t = 0; t < N_KTYPES; t++) {
		double err = 0, ref = 0, tol;

		assert_true(dec_quantize_row(ktypes[t], x, q, N));
		dec_dequant_row(ktypes[t], q, y, N);
		for (int i = 0; i < N; i++) {
			err += (x[i] - y[i]) * (x[i] - y[i]);
			ref += x[i] * x[i];
		}
		err = sqrt(err / ref);
		switch (ktypes[t]) {
		case DEC_T_Q2_K: tol = 0.4; break;
		case DEC_T_Q3_K: tol = 0.25; break;
		case DEC_T_Q5_K: tol = 0.06; break;
		default: tol = 0.15; break;
		}
		if (getenv("DEC_TEST_VERBOSE"))
			print_message("%s: round trip %.4f\n", dec_type_name(ktypes[t]), err);
		if (err > tol || err < tol / 20)
			fail_msg("%s: relative rms error %g, expected (%g, %g]", dec_type_name(ktypes[t]), err,
				 tol / 20, tol);
	}
}

/* dot(row, encode(x)) against dequant(row) · dequant(encode(x)) in double,
 * and against dequant(row) · x within the activation encoding's error. */
static void check_dot(const struct dec_simd *s)
{
	enum { N = 1280 }; /* 5 super-blocks, 40 blocks */
	float x[N], w[N], xd[N];
	uint8_t q[N * 2], a[N * 2];

	for (size_t t = 0; t < N_KTYPES; t++) {
		uint32_t ty = ktypes[t], vt = dec_vec_type(ty);
		double exact, with_act = 0, mag = 0;
		float got;

		fill(w, N, 11 + (uint32_t)t);
		fill(x, N, 99);
		assert_true(dec_quantize_row(ty, w, q, N));
		dec_quantize_row(vt, x, a, N);
		dec_dequant_row(vt, a, xd, N);
		exact = dec_vec_dot_ref(ty, q, x, N);
		dec_dequant_row(ty, q, w, N);
		for (int i = 0; i < N; i++) {
			with_act += (double)w[i] * xd[i];
			mag += fabs((double)w[i] * x[i]);
		}
		got = dot_of(s, ty)(q, a, N);
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

/* Bytes of one block of t and where its fp16 scales sit. */
static size_t block_bytes(uint32_t t)
{
	size_t b, s;

	dec_type_info(t, &b, &s);
	return s;
}

/* Sane fp16 scales in a block of random bytes (d and dmin), scale r, i. */
static void set_scales(uint32_t t, uint8_t *blk, int r, int i)
{
	uint16_t d = dec_f32_to_f16(0.01f * (float)(r + 1) / (float)(i + 1));
	uint16_t dm = dec_f32_to_f16(0.003f * (float)(i + 2));

	switch (t) {
	case DEC_T_Q2_K: memcpy(blk + 80, &d, 2); memcpy(blk + 82, &dm, 2); break;
	case DEC_T_Q3_K: memcpy(blk + 108, &d, 2); break;
	case DEC_T_Q5_K: memcpy(blk, &d, 2); memcpy(blk + 2, &dm, 2); break;
	case DEC_T_IQ4_NL: case DEC_T_IQ4_XS: memcpy(blk, &d, 2); break;
	}
}

/* Every AVX2 kernel (one row, eight repacked rows) and the portable
 * eight-row kernel give exactly the portable one-row result: random blocks
 * (every bit pattern of the packed scales), then every quant bit set against
 * activations all at +127 or -128 (the 16-bit partial sums' worst case;
 * the quantizers write ±127, but the kernels are exact at -128 too). */
static void test_same_bits(void **st)
{
	enum { N = 1024, ROWS = 8 };
	static uint8_t w[ROWS][N / 256 * 176], x8[N / 256 * 8 * 256], act[4][N / 32 * 34 + N / 256 * 292];
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	for (size_t ti = 0; ti < N_KTYPES; ti++) {
		uint32_t t = ktypes[ti], vt = dec_vec_type(t);
		size_t bs = block_bytes(t), nblk = N / (t == DEC_T_IQ4_NL ? 32 : 256);

		for (int pass = 0; pass < 3; pass++) {
			fill_bytes(w, sizeof w, 7 + (uint32_t)(pass + 3 * ti));
			for (int r = 0; r < ROWS; r++)
				for (size_t i = 0; i < nblk; i++) {
					if (pass == 2)
						memset(w[r] + i * bs, 0xff, bs);
					set_scales(t, w[r] + i * bs, r, (int)i);
				}
			for (int k = 0; k < 4; k++) {
				fill_bytes(act[k], sizeof act[k], 77 + (uint32_t)(pass * 4 + k));
				if (vt == DEC_T_Q8_K) {
					struct dec_block_q8_K *a = (void *)act[k];

					for (size_t i = 0; i < N / 256; i++) {
						a[i].d = 0.02f * (float)(k + 1);
						for (int j = 0; j < 256; j++)
							if (pass == 2)
								a[i].qs[j] = (int8_t)(k & 1 ? 127 : -128);
						set_bsums(&a[i]);
					}
				} else {
					struct dec_block_q8_0 *a = (void *)act[k];

					for (size_t i = 0; i < N / 32; i++) {
						a[i].d = dec_f32_to_f16(0.02f * (float)(k + 1));
						for (int j = 0; j < 32; j++)
							if (pass == 2)
								a[i].qs[j] = (int8_t)(k & 1 ? 127 : -128);
					}
				}
			}
			if (dec_x8_group_bytes(t, N))
				dec_pack_x8(t, w, sizeof w[0], N, x8);
			for (int k = 0; k < 4; k++)
				for (int s = 0; s < 2 && tab[s]; s++) {
					dec_gemv8_fn g8 = gemv8_of(tab[s], t);
					float o[8];

					if (g8)
						g8(x8, act[k], N, o);
					for (int r = 0; r < ROWS; r++) {
						float one = dot_of(dec_simd_generic(), t)(w[r], act[k], N);
						float v = dot_of(tab[s], t)(w[r], act[k], N);

						if (memcmp(&one, &v, sizeof one) || (g8 && memcmp(&one, &o[r], sizeof one)))
							fail_msg("%s %s pass %d token %d row %d: dot %.9g gemv8 %.9g generic %.9g",
								 tab[s]->name, dec_type_name(t), pass, k, r, v, g8 ? o[r] : 0.f,
								 one);
					}
				}
		}
	}
}

static uint64_t fnv1a(const void *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= ((const uint8_t *)p)[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* llama.cpp's quantized rows (its optimising quantizers' output, so the
 * blocks are realistic) dequantize here to exactly ggml's floats, and the
 * dot products with our activation encoding agree with ggml's vec_dot on
 * its own encoding within float summation order (ggml's SIMD kernels sum in
 * another order, with FMA): measured 0 (IQ4_NL, IQ4_XS) to 8e-9 (Q5_K) of
 * the sum of |products|, bound 1e-6. */
static void test_golden_llama(void **st)
{
	enum { N = 512 };
	float w[N], x[N], xd[N];
	uint8_t q[N], a[N * 2];
	const struct dec_simd *tab[2] = { dec_simd_generic(), dec_simd_avx2() };

	(void)st;
	fill(x, N, 7);
	for (size_t k = 0; k < sizeof golden_k / sizeof golden_k[0]; k++) {
		const struct golden_k *g = &golden_k[k];
		uint32_t t = g->type;
		double sum = 0, mag = 0;

		assert_int_equal(dec_row_size(t, N), g->bytes);
		for (size_t i = 0; i < g->bytes; i++) {
			unsigned v;

			assert_int_equal(sscanf(g->hex + 2 * i, "%2x", &v), 1);
			q[i] = (uint8_t)v;
		}
		dec_dequant_row(t, q, w, N);
		for (int i = 0; i < N; i++)
			sum += w[i];
		if (fnv1a(w, sizeof w) != g->deq_fnv || sum != g->deq_sum || w[0] != g->y0 || w[1] != g->y1 ||
		    w[511] != g->y511)
			fail_msg("%s: dequantized sum %.17g, values %a %a %a; llama.cpp %.17g, %a %a %a",
				 dec_type_name(t), sum, w[0], w[1], w[511], g->deq_sum, g->y0, g->y1, g->y511);
		dec_quantize_row(dec_vec_type(t), x, a, N);
		dec_dequant_row(dec_vec_type(t), a, xd, N);
		for (int i = 0; i < N; i++)
			mag += fabs((double)w[i] * xd[i]);
		for (int s = 0; s < 2 && tab[s]; s++) {
			float d = dot_of(tab[s], t)(q, a, N);

			if (getenv("DEC_TEST_VERBOSE"))
				print_message("%s %s: dot %.9g, llama.cpp %.9g (difference %.3g of the sum of |products|)\n",
					      tab[s]->name, dec_type_name(t), d, g->dot, fabs(d - g->dot) / mag);
			if (fabs(d - g->dot) > 1e-6 * mag)
				fail_msg("%s %s: dot %.9g, llama.cpp %.9g", tab[s]->name, dec_type_name(t), d, g->dot);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type_table),
		cmocka_unit_test(test_hand_q2_k),
		cmocka_unit_test(test_hand_q3_k),
		cmocka_unit_test(test_hand_q5_k),
		cmocka_unit_test(test_hand_iq4_nl),
		cmocka_unit_test(test_hand_iq4_xs),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_dot_generic),
		cmocka_unit_test(test_dot_avx2),
		cmocka_unit_test(test_same_bits),
		cmocka_unit_test(test_golden_llama),
	};

	return cmocka_run_group_tests_name("decode_quant_k", tests, NULL, NULL);
}
