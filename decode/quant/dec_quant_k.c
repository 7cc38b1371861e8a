/* dec_quant_k.c — the low-bit types of llama.cpp's Q2_K…Q5_K_M and IQ4
 * files: Q2_K, Q3_K, Q5_K, IQ4_NL and IQ4_XS. Where a value sits in a block
 * (the layouts are ggml's, see the structs in dec_quant.h), dequantization,
 * round-to-nearest quantizers (tests and the benchmark) and the portable dot
 * products, which fix the float steps every other kernel of these types
 * repeats (dec_simd_k.c, dec_pack.c):
 *
 *   Q2_K, Q5_K  sum += d_act · (d · sumi − dmin · summ)   (as Q4_K)
 *   Q3_K        sum += (d · d_act) · sumi                  (as Q6_K)
 *   IQ4_XS      sum += (d · d_act) · sumi                  (a super-block)
 *   IQ4_NL      sum += (d · d_act) · sumi                  (a block, as Q4_0)
 *
 * sumi the exact integer sum of scale × quant × activation over the
 * (super-)block, summ that of min × activation block sum; no FMA. */
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"

#include <math.h>
#include <string.h>

const int8_t dec_iq4nl_values[16] = {
	-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
};

/* ---- where the values are ---------------------------------------------- */

/* Q2_K / Q3_K low bits: value v = 128 n + 32 j + r is bits 2j, 2j+1 of
 * qs[32 n + r]. */
static int low2(const uint8_t *qs, int v)
{
	return (qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
}

int dec_q2k_u(const struct dec_block_q2_K *b, int v)
{
	return low2(b->qs, v);
}

int dec_q3k_u(const struct dec_block_q3_K *b, int v)
{
	int hbit = (b->hmask[v % 32] >> (4 * (v / 128) + (v % 128) / 32)) & 1;

	return low2(b->qs, v) | hbit << 2;
}

int dec_q5k_u(const struct dec_block_q5_K *b, int v)
{
	int s = v / 32, l = v % 32;

	return ((b->qs[32 * (s / 2) + l] >> (4 * (s & 1))) & 0xF) | ((b->qh[l] >> s) & 1) << 4;
}

int dec_iq4xs_u(const struct dec_block_iq4_xs *b, int v)
{
	int l = v % 32;

	return (b->qs[16 * (v / 32) + l % 16] >> (l < 16 ? 0 : 4)) & 0xF;
}

int dec_q3k_scale(const uint8_t *sc, int j)
{
	int lo = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4, hi = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;

	return (lo | hi << 4) - 32;
}

int dec_iq4xs_scale(const struct dec_block_iq4_xs *b, int j)
{
	return (((b->scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | ((b->scales_h >> (2 * j)) & 3) << 4) - 32;
}

/* ---- dequantization ---------------------------------------------------- */

/* The float operations are ggml's (dequantize_row_*): d · sc first, then
 * times the quant, minus dmin · m. */
static void deq_q2_k(const struct dec_block_q2_K *b, float *y)
{
	float d = dec_f16_to_f32(b->d), dmin = dec_f16_to_f32(b->dmin);

	for (int s = 0; s < 16; s++) {
		float dl = d * (float)(b->scales[s] & 0xF), ml = dmin * (float)(b->scales[s] >> 4);

		for (int l = 0; l < 16; l++)
			y[16 * s + l] = dl * (float)dec_q2k_u(b, 16 * s + l) - ml;
	}
}

static void deq_q3_k(const struct dec_block_q3_K *b, float *y)
{
	float d = dec_f16_to_f32(b->d);

	for (int s = 0; s < 16; s++) {
		float dl = d * (float)dec_q3k_scale(b->scales, s);

		for (int l = 0; l < 16; l++)
			y[16 * s + l] = dl * (float)(dec_q3k_u(b, 16 * s + l) - 4);
	}
}

static void deq_q5_k(const struct dec_block_q5_K *b, float *y)
{
	float d = dec_f16_to_f32(b->d), dmin = dec_f16_to_f32(b->dmin);

	for (int s = 0; s < 8; s++) {
		uint8_t sc, m;
		float dl, ml;

		dec_q4k_scale_min(s, b->scales, &sc, &m);
		dl = d * sc;
		ml = dmin * m;
		for (int l = 0; l < 32; l++)
			y[32 * s + l] = dl * (float)dec_q5k_u(b, 32 * s + l) - ml;
	}
}

static void deq_iq4_xs(const struct dec_block_iq4_xs *b, float *y)
{
	float d = dec_f16_to_f32(b->d);

	for (int j = 0; j < 8; j++) {
		float dl = d * (float)dec_iq4xs_scale(b, j);

		for (int l = 0; l < 32; l++)
			y[32 * j + l] = dl * (float)dec_iq4nl_values[dec_iq4xs_u(b, 32 * j + l)];
	}
}

int dec_dequant_row_k(uint32_t t, const void *src, float *y, int64_t n)
{
	switch (t) {
	case DEC_T_Q2_K:
		for (int64_t i = 0; i < n / DEC_QK_K; i++)
			deq_q2_k((const struct dec_block_q2_K *)src + i, y + i * DEC_QK_K);
		return 1;
	case DEC_T_Q3_K:
		for (int64_t i = 0; i < n / DEC_QK_K; i++)
			deq_q3_k((const struct dec_block_q3_K *)src + i, y + i * DEC_QK_K);
		return 1;
	case DEC_T_Q5_K:
		for (int64_t i = 0; i < n / DEC_QK_K; i++)
			deq_q5_k((const struct dec_block_q5_K *)src + i, y + i * DEC_QK_K);
		return 1;
	case DEC_T_IQ4_XS:
		for (int64_t i = 0; i < n / DEC_QK_K; i++)
			deq_iq4_xs((const struct dec_block_iq4_xs *)src + i, y + i * DEC_QK_K);
		return 1;
	case DEC_T_IQ4_NL: {
		const struct dec_block_iq4_nl *b = src;

		for (int64_t i = 0; i < n / DEC_QK; i++, y += DEC_QK) {
			float d = dec_f16_to_f32(b[i].d);

			for (int j = 0; j < 16; j++) {
				y[j] = d * (float)dec_iq4nl_values[b[i].qs[j] & 0xF];
				y[j + 16] = d * (float)dec_iq4nl_values[b[i].qs[j] >> 4];
			}
		}
		return 1;
	}
	}
	return 0;
}

/* ---- quantization (round to nearest; for tests and the benchmark) ------ */

static float amax_signed(const float *x, int n)
{
	float m = 0, a = 0;

	for (int i = 0; i < n; i++)
		if (fabsf(x[i]) > a) {
			a = fabsf(x[i]);
			m = x[i];
		}
	return m;
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int nearest_iq4(float x)
{
	int best = 0;

	for (int k = 1; k < 16; k++)
		if (fabsf(x - dec_iq4nl_values[k]) < fabsf(x - dec_iq4nl_values[best]))
			best = k;
	return best;
}

/* Sub-blocks of `len` values with a range [lo, hi] (lo <= 0): value =
 * d · sc · q − dmin · m with q < levels; the scales and mins quantized to
 * `sbits` bits against the super-block's d and dmin (Q2_K: 4, Q5_K: 6).
 * Writes the integer scales, mins and quants. */
static void quant_affine(const float *x, int nsub, int len, int levels, int sbits, uint16_t *dh,
			 uint16_t *dminh, uint8_t *qsc, uint8_t *qmn, uint8_t *q)
{
	float sc[16], mn[16], msc = 0, mmn = 0, d, dmin;
	int smax = (1 << sbits) - 1;

	for (int s = 0; s < nsub; s++) {
		float lo = 0, hi = 0;

		for (int l = 0; l < len; l++) {
			lo = fminf(lo, x[len * s + l]);
			hi = fmaxf(hi, x[len * s + l]);
		}
		sc[s] = (hi - lo) / (float)(levels - 1);
		mn[s] = -lo;
		msc = fmaxf(msc, sc[s]);
		mmn = fmaxf(mmn, mn[s]);
	}
	*dh = dec_f32_to_f16(msc / (float)smax);
	*dminh = dec_f32_to_f16(mmn / (float)smax);
	d = dec_f16_to_f32(*dh);
	dmin = dec_f16_to_f32(*dminh);
	for (int s = 0; s < nsub; s++) {
		float ds, ms;

		qsc[s] = (uint8_t)(d ? clampi((int)lrintf(sc[s] / d), 0, smax) : 0);
		qmn[s] = (uint8_t)(dmin ? clampi((int)lrintf(mn[s] / dmin), 0, smax) : 0);
		ds = d * qsc[s];
		ms = dmin * qmn[s];
		for (int l = 0; l < len; l++)
			q[len * s + l] = (uint8_t)(ds ? clampi((int)lrintf((x[len * s + l] + ms) / ds), 0, levels - 1) : 0);
	}
}

/* The 2-bit fields of 256 values into Q2_K / Q3_K's qs. */
static void put_low2(uint8_t *qs, const uint8_t *u)
{
	memset(qs, 0, DEC_QK_K / 4);
	for (int v = 0; v < DEC_QK_K; v++)
		qs[32 * (v / 128) + v % 32] |= (uint8_t)((u[v] & 3) << (2 * ((v % 128) / 32)));
}

static void quant_q2_k(const float *x, struct dec_block_q2_K *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK_K) {
		uint8_t sc[16], mn[16], u[DEC_QK_K];

		quant_affine(x, 16, 16, 4, 4, &b[i].d, &b[i].dmin, sc, mn, u);
		for (int s = 0; s < 16; s++)
			b[i].scales[s] = (uint8_t)(sc[s] | mn[s] << 4);
		put_low2(b[i].qs, u);
	}
}

static void quant_q5_k(const float *x, struct dec_block_q5_K *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK_K) {
		uint8_t sc[8], mn[8], u[DEC_QK_K];

		quant_affine(x, 8, 32, 32, 6, &b[i].d, &b[i].dmin, sc, mn, u);
		for (int j = 0; j < 4; j++) {
			b[i].scales[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
			b[i].scales[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
			b[i].scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
		}
		memset(b[i].qh, 0, sizeof b[i].qh);
		for (int s = 0; s < 8; s++)
			for (int l = 0; l < 32; l++) {
				int q = u[32 * s + l];

				if (s & 1)
					b[i].qs[32 * (s / 2) + l] |= (uint8_t)((q & 0xF) << 4);
				else
					b[i].qs[32 * (s / 2) + l] = (uint8_t)(q & 0xF);
				b[i].qh[l] |= (uint8_t)((q >> 4) << s);
			}
	}
}

/* Symmetric: each sub-block's signed extreme maps to q = -4. */
static void quant_q3_k(const float *x, struct dec_block_q3_K *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK_K) {
		float sc[16], big = 0, d;
		uint8_t L[16], u[DEC_QK_K];

		for (int s = 0; s < 16; s++) {
			sc[s] = amax_signed(x + 16 * s, 16) / -4.f;
			if (fabsf(sc[s]) > fabsf(big))
				big = sc[s];
		}
		b[i].d = dec_f32_to_f16(fabsf(big) / 31.f);
		d = dec_f16_to_f32(b[i].d);
		for (int s = 0; s < 16; s++) {
			int q = d ? clampi((int)lrintf(sc[s] / d), -32, 31) : 0;
			float ds = d * (float)q;

			L[s] = (uint8_t)(q + 32);
			for (int l = 0; l < 16; l++)
				u[16 * s + l] = (uint8_t)(ds ? clampi((int)lrintf(x[16 * s + l] / ds), -4, 3) + 4 : 4);
		}
		memset(b[i].scales, 0, sizeof b[i].scales);
		for (int s = 0; s < 16; s++) {
			b[i].scales[s % 8] |= (uint8_t)((L[s] & 0xF) << (s < 8 ? 0 : 4));
			b[i].scales[8 + s % 4] |= (uint8_t)(((L[s] >> 4) & 3) << (2 * (s / 4)));
		}
		put_low2(b[i].qs, u);
		memset(b[i].hmask, 0, sizeof b[i].hmask);
		for (int v = 0; v < DEC_QK_K; v++)
			b[i].hmask[v % 32] |= (uint8_t)((u[v] >> 2) << (4 * (v / 128) + (v % 128) / 32));
	}
}

/* The block's signed extreme maps to the codebook's -127. */
static void quant_iq4_nl(const float *x, struct dec_block_iq4_nl *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK) {
		float d;

		b[i].d = dec_f32_to_f16(amax_signed(x, DEC_QK) / -127.f);
		d = dec_f16_to_f32(b[i].d);
		for (int j = 0; j < 16; j++)
			b[i].qs[j] = (uint8_t)(nearest_iq4(d ? x[j] / d : 0) | nearest_iq4(d ? x[j + 16] / d : 0) << 4);
	}
}

static void quant_iq4_xs(const float *x, struct dec_block_iq4_xs *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK_K) {
		float s[8], big = 0, d;

		for (int j = 0; j < 8; j++) {
			s[j] = amax_signed(x + 32 * j, 32) / -127.f;
			if (fabsf(s[j]) > fabsf(big))
				big = s[j];
		}
		b[i].d = dec_f32_to_f16(big / -32.f);
		d = dec_f16_to_f32(b[i].d);
		b[i].scales_h = 0;
		memset(b[i].scales_l, 0, sizeof b[i].scales_l);
		for (int j = 0; j < 8; j++) {
			int ls = d ? clampi((int)lrintf(s[j] / d), -32, 31) : 0;
			float dl = d * (float)ls;

			b[i].scales_l[j / 2] |= (uint8_t)(((ls + 32) & 0xF) << (4 * (j % 2)));
			b[i].scales_h |= (uint16_t)(((ls + 32) >> 4) << (2 * j));
			for (int l = 0; l < 16; l++) {
				const float *xj = x + 32 * j;

				b[i].qs[16 * j + l] = (uint8_t)(nearest_iq4(dl ? xj[l] / dl : 0) |
								nearest_iq4(dl ? xj[l + 16] / dl : 0) << 4);
			}
		}
	}
}

int dec_quantize_row_k(uint32_t t, const float *x, void *dst, int64_t n)
{
	switch (t) {
	case DEC_T_Q2_K: quant_q2_k(x, dst, n / DEC_QK_K); return 1;
	case DEC_T_Q3_K: quant_q3_k(x, dst, n / DEC_QK_K); return 1;
	case DEC_T_Q5_K: quant_q5_k(x, dst, n / DEC_QK_K); return 1;
	case DEC_T_IQ4_NL: quant_iq4_nl(x, dst, n / DEC_QK); return 1;
	case DEC_T_IQ4_XS: quant_iq4_xs(x, dst, n / DEC_QK_K); return 1;
	}
	return 0;
}

/* ---- dot products (portable) ------------------------------------------- */

float dec_dot_q2_k_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q2_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		int32_t sumi = 0, summ = 0;

		for (int s = 0; s < 16; s++) {
			/* sub-block s = 8 n + 2 j + h: bytes 32 n + 16 h + l, bits 2j */
			const uint8_t *q = x[i].qs + 32 * (s / 8) + 16 * (s & 1);
			const int8_t *a = y[i].qs + 16 * s;
			int sh = 2 * ((s % 8) / 2);
			int32_t acc = 0;

			for (int l = 0; l < 16; l++)
				acc += ((q[l] >> sh) & 3) * a[l];
			sumi += (x[i].scales[s] & 0xF) * acc;
			summ += (x[i].scales[s] >> 4) * y[i].bsums[s];
		}
		sum += y[i].d * (dec_f16_to_f32(x[i].d) * (float)sumi - dec_f16_to_f32(x[i].dmin) * (float)summ);
	}
	return sum;
}

float dec_dot_q3_k_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q3_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		int32_t sumi = 0;

		for (int s = 0; s < 16; s++) {
			int h = s & 1, j = (s % 8) / 2, nn = s / 8;
			const uint8_t *q = x[i].qs + 32 * nn + 16 * h, *hm = x[i].hmask + 16 * h;
			const int8_t *a = y[i].qs + 16 * s;
			int32_t acc = 0;

			for (int l = 0; l < 16; l++)
				acc += (((q[l] >> (2 * j)) & 3) - (((hm[l] >> (4 * nn + j)) & 1) ? 0 : 4)) * a[l];
			sumi += dec_q3k_scale(x[i].scales, s) * acc;
		}
		sum += dec_f16_to_f32(x[i].d) * y[i].d * (float)sumi;
	}
	return sum;
}

float dec_dot_q5_k_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q5_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		int32_t sumi = 0, summ = 0;

		for (int s = 0; s < 8; s++) {
			const uint8_t *q = x[i].qs + 32 * (s / 2);
			const int8_t *a = y[i].qs + 32 * s;
			int sh = 4 * (s & 1);
			uint8_t sc, m;
			int32_t acc = 0;

			dec_q4k_scale_min(s, x[i].scales, &sc, &m);
			for (int l = 0; l < 32; l++)
				acc += (((q[l] >> sh) & 0xF) | ((x[i].qh[l] >> s) & 1) << 4) * a[l];
			sumi += sc * acc;
			summ += m * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
		}
		sum += y[i].d * (dec_f16_to_f32(x[i].d) * (float)sumi - dec_f16_to_f32(x[i].dmin) * (float)summ);
	}
	return sum;
}

float dec_dot_iq4_nl_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_iq4_nl *x = vx;
	const struct dec_block_q8_0 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		int32_t acc = 0;

		for (int j = 0; j < 16; j++)
			acc += dec_iq4nl_values[x[i].qs[j] & 0xF] * y[i].qs[j] +
			       dec_iq4nl_values[x[i].qs[j] >> 4] * y[i].qs[j + 16];
		sum += dec_f16_to_f32(x[i].d) * dec_f16_to_f32(y[i].d) * (float)acc;
	}
	return sum;
}

float dec_dot_iq4_xs_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_iq4_xs *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		int32_t sumi = 0;

		for (int b = 0; b < 8; b++) {
			const uint8_t *q = x[i].qs + 16 * b;
			const int8_t *a = y[i].qs + 32 * b;
			int32_t acc = 0;

			for (int l = 0; l < 16; l++)
				acc += dec_iq4nl_values[q[l] & 0xF] * a[l] + dec_iq4nl_values[q[l] >> 4] * a[l + 16];
			sumi += dec_iq4xs_scale(&x[i], b) * acc;
		}
		sum += dec_f16_to_f32(x[i].d) * y[i].d * (float)sumi;
	}
	return sum;
}
