/* dec_quant.c — portable (scalar, auto-vectorisable) implementations of the
 * type table, conversions, dequantization, quantization and dot products.
 * dec_simd.c provides AVX2 versions of the hot dot products; dec_vec_dot
 * picks them at run time when the CPU has them. */
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"

#include <math.h>
#include <string.h>

int dec_type_info(uint32_t t, size_t *blck, size_t *tsize)
{
	size_t b = 1, s = 0;

	switch (t) {
	case DEC_T_F32: s = 4; break;
	case DEC_T_F16: case DEC_T_BF16: case DEC_T_I16: s = 2; break;
	case DEC_T_I8: s = 1; break;
	case DEC_T_I32: s = 4; break;
	case DEC_T_I64: case DEC_T_F64: s = 8; break;
	case DEC_T_Q4_0: b = 32; s = 18; break;
	case DEC_T_Q4_1: b = 32; s = 20; break;
	case DEC_T_Q5_0: b = 32; s = 22; break;
	case DEC_T_Q5_1: b = 32; s = 24; break;
	case DEC_T_Q8_0: b = 32; s = 34; break;
	case DEC_T_Q8_1: b = 32; s = 36; break;
	case DEC_T_Q2_K: b = 256; s = 84; break;
	case DEC_T_Q3_K: b = 256; s = 110; break;
	case DEC_T_Q4_K: b = 256; s = 144; break;
	case DEC_T_Q5_K: b = 256; s = 176; break;
	case DEC_T_Q6_K: b = 256; s = 210; break;
	case DEC_T_Q8_K: b = 256; s = 292; break;
	case DEC_T_IQ4_NL: b = 32; s = 18; break;
	case DEC_T_IQ4_XS: b = 256; s = 136; break;
	/* known to ggml, not decoded: sized so that a file holding them parses
	 * and the loader can name the type of a tensor it refuses */
	case DEC_T_IQ2_XXS: b = 256; s = 66; break;
	case DEC_T_IQ2_XS: b = 256; s = 74; break;
	case DEC_T_IQ2_S: b = 256; s = 82; break;
	case DEC_T_IQ3_XXS: b = 256; s = 98; break;
	case DEC_T_IQ3_S: b = 256; s = 110; break;
	case DEC_T_IQ1_S: b = 256; s = 50; break;
	case DEC_T_IQ1_M: b = 256; s = 56; break;
	case DEC_T_TQ1_0: b = 256; s = 54; break;
	case DEC_T_TQ2_0: b = 256; s = 66; break;
	case DEC_T_MXFP4: b = 32; s = 17; break;
	default: return 0;
	}
	if (blck)
		*blck = b;
	if (tsize)
		*tsize = s;
	return 1;
}

const char *dec_type_name(uint32_t t)
{
	switch (t) {
	case DEC_T_F32: return "F32";
	case DEC_T_F16: return "F16";
	case DEC_T_BF16: return "BF16";
	case DEC_T_Q4_0: return "Q4_0";
	case DEC_T_Q4_1: return "Q4_1";
	case DEC_T_Q5_0: return "Q5_0";
	case DEC_T_Q5_1: return "Q5_1";
	case DEC_T_Q8_0: return "Q8_0";
	case DEC_T_Q8_1: return "Q8_1";
	case DEC_T_Q2_K: return "Q2_K";
	case DEC_T_Q3_K: return "Q3_K";
	case DEC_T_Q4_K: return "Q4_K";
	case DEC_T_Q5_K: return "Q5_K";
	case DEC_T_Q6_K: return "Q6_K";
	case DEC_T_Q8_K: return "Q8_K";
	case DEC_T_IQ4_NL: return "IQ4_NL";
	case DEC_T_IQ4_XS: return "IQ4_XS";
	case DEC_T_IQ2_XXS: return "IQ2_XXS";
	case DEC_T_IQ2_XS: return "IQ2_XS";
	case DEC_T_IQ2_S: return "IQ2_S";
	case DEC_T_IQ3_XXS: return "IQ3_XXS";
	case DEC_T_IQ3_S: return "IQ3_S";
	case DEC_T_IQ1_S: return "IQ1_S";
	case DEC_T_IQ1_M: return "IQ1_M";
	case DEC_T_TQ1_0: return "TQ1_0";
	case DEC_T_TQ2_0: return "TQ2_0";
	case DEC_T_MXFP4: return "MXFP4";
	case DEC_T_I8: return "I8";
	case DEC_T_I16: return "I16";
	case DEC_T_I32: return "I32";
	case DEC_T_I64: return "I64";
	case DEC_T_F64: return "F64";
	case DEC_T_F16R: return "F16R";
	}
	return "unknown";
}

int dec_type_supported(uint32_t t)
{
	switch (t) {
	case DEC_T_F32: case DEC_T_F16: case DEC_T_BF16: case DEC_T_Q8_0:
	case DEC_T_Q4_0: case DEC_T_Q5_0: case DEC_T_Q4_K: case DEC_T_Q6_K:
	case DEC_T_Q4_1: case DEC_T_Q5_1: case DEC_T_Q2_K: case DEC_T_Q3_K:
	case DEC_T_Q5_K: case DEC_T_IQ4_NL: case DEC_T_IQ4_XS:
		return 1;
	}
	return 0;
}

size_t dec_row_size(uint32_t t, int64_t n)
{
	size_t b = 1, s = 0;

	dec_type_info(t, &b, &s);
	return (size_t)n / b * s;
}

/* ---- conversions ------------------------------------------------------ */

float dec_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
	float f;

	if (exp == 0) {
		/* zero or subnormal: man * 2^-24 */
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		u = sign | 0x7f800000u | (man << 13);
	else
		u = sign | ((exp + 112) << 23) | (man << 13);
	memcpy(&f, &u, 4);
	return f;
}

uint16_t dec_f32_to_f16(float f)
{
	uint32_t u, sign, man;
	int32_t exp;

	memcpy(&u, &f, 4);
	sign = (u >> 16) & 0x8000;
	exp = (int32_t)((u >> 23) & 0xff);
	man = u & 0x7fffff;
	if (exp == 255) /* inf / nan */
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	exp -= 112;
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		/* subnormal half: shift in the implicit bit, round to nearest even */
		uint32_t m, shift, r, half;

		if (exp < -10)
			return (uint16_t)sign;
		m = man | 0x800000;
		shift = (uint32_t)(14 - exp);
		r = m >> shift;
		half = 1u << (shift - 1);
		if ((m & ((half << 1) - 1)) > half || ((m & ((half << 1) - 1)) == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	{
		uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;

		if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
			h++; /* may carry into the exponent: that is the correct rounding */
		return (uint16_t)h;
	}
}

float dec_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

uint16_t dec_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 64); /* quiet nan */
	return (uint16_t)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

/* ---- dequantization --------------------------------------------------- */

void dec_q4k_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
	if (j < 4) {
		*d = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
		*m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
	}
}

static void deq_q4_k(const struct dec_block_q4_K *b, float *y)
{
	float d = dec_f16_to_f32(b->d), dmin = dec_f16_to_f32(b->dmin);
	const uint8_t *q = b->qs;

	for (int j = 0; j < 4; j++, q += 32, y += 64) {
		uint8_t sc, m;
		float d1, m1, d2, m2;

		dec_q4k_scale_min(2 * j, b->scales, &sc, &m);
		d1 = d * sc;
		m1 = dmin * m;
		dec_q4k_scale_min(2 * j + 1, b->scales, &sc, &m);
		d2 = d * sc;
		m2 = dmin * m;
		for (int l = 0; l < 32; l++) {
			y[l] = d1 * (q[l] & 0xF) - m1;
			y[l + 32] = d2 * (q[l] >> 4) - m2;
		}
	}
}

/* The 256 signed 6-bit values of a Q6_K block, in order. */
void dec_q6k_values(const struct dec_block_q6_K *b, int8_t *v)
{
	for (int n = 0; n < 2; n++) {
		const uint8_t *ql = b->ql + 64 * n, *qh = b->qh + 32 * n;

		for (int l = 0; l < 32; l++) {
			v[128 * n + l] = (int8_t)(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
			v[128 * n + l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
			v[128 * n + l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
			v[128 * n + l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
		}
	}
}

void dec_dequant_row(uint32_t t, const void *src, float *y, int64_t n)
{
	switch (t) {
	case DEC_T_F32:
		memcpy(y, src, (size_t)n * 4);
		break;
	case DEC_T_F16: {
		const uint16_t *h = src;

		for (int64_t i = 0; i < n; i++)
			y[i] = dec_f16_to_f32(h[i]);
		break;
	}
	case DEC_T_BF16: {
		const uint16_t *h = src;

		for (int64_t i = 0; i < n; i++)
			y[i] = dec_bf16_to_f32(h[i]);
		break;
	}
	case DEC_T_Q8_0: {
		const struct dec_block_q8_0 *b = src;

		for (int64_t i = 0; i < n / DEC_QK; i++, y += DEC_QK) {
			float d = dec_f16_to_f32(b[i].d);

			for (int j = 0; j < DEC_QK; j++)
				y[j] = d * b[i].qs[j];
		}
		break;
	}
	case DEC_T_Q4_0: {
		const struct dec_block_q4_0 *b = src;

		for (int64_t i = 0; i < n / DEC_QK; i++, y += DEC_QK) {
			float d = dec_f16_to_f32(b[i].d);

			for (int j = 0; j < 16; j++) {
				y[j] = d * ((b[i].qs[j] & 0xF) - 8);
				y[j + 16] = d * ((b[i].qs[j] >> 4) - 8);
			}
		}
		break;
	}
	case DEC_T_Q5_0: {
		const struct dec_block_q5_0 *b = src;

		for (int64_t i = 0; i < n / DEC_QK; i++, y += DEC_QK) {
			float d = dec_f16_to_f32(b[i].d);
			uint32_t qh;

			memcpy(&qh, b[i].qh, 4);
			for (int j = 0; j < 16; j++) {
				int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;

				y[j] = d * (((b[i].qs[j] & 0xF) | h0) - 16);
				y[j + 16] = d * (((b[i].qs[j] >> 4) | h1) - 16);
			}
		}
		break;
	}
	case DEC_T_Q4_1: {
		const struct dec_block_q4_1 *b = src;

		for (int64_t i = 0; i < n / DEC_QK; i++, y += DEC_QK) {
			float d = dec_f16_to_f32(b[i].d), m = dec_f16_to_f32(b[i].m);

			for (int j = 0; j < 16; j++) {
				y[j] = d * (b[i].qs[j] & 0xF) + m;
				y[j + 16] = d * (b[i].qs[j] >> 4) + m;
			}
		}
		break;
	}
	case DEC_T_Q5_1: {
		const struct dec_block_q5_1 *b = src;

		for (int64_t i = 0; i < n / DEC_QK; i++, y += DEC_QK) {
			float d = dec_f16_to_f32(b[i].d), m = dec_f16_to_f32(b[i].m);
			uint32_t qh;

			memcpy(&qh, b[i].qh, 4);
			for (int j = 0; j < 16; j++) {
				int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;

				y[j] = d * ((b[i].qs[j] & 0xF) | h0) + m;
				y[j + 16] = d * ((b[i].qs[j] >> 4) | h1) + m;
			}
		}
		break;
	}
	case DEC_T_Q8_1: {
		const struct dec_block_q8_1 *b = src;

		for (int64_t i = 0; i < n / DEC_QK; i++, y += DEC_QK) {
			float d = dec_f16_to_f32(b[i].d);

			for (int j = 0; j < DEC_QK; j++)
				y[j] = d * b[i].qs[j];
		}
		break;
	}
	case DEC_T_Q4_K: {
		const struct dec_block_q4_K *b = src;

		for (int64_t i = 0; i < n / DEC_QK_K; i++)
			deq_q4_k(&b[i], y + i * DEC_QK_K);
		break;
	}
	case DEC_T_Q6_K: {
		const struct dec_block_q6_K *b = src;
		int8_t v[DEC_QK_K];

		for (int64_t i = 0; i < n / DEC_QK_K; i++, y += DEC_QK_K) {
			float d = dec_f16_to_f32(b[i].d);

			dec_q6k_values(&b[i], v);
			for (int j = 0; j < DEC_QK_K; j++)
				y[j] = d * b[i].scales[j / 16] * v[j];
		}
		break;
	}
	case DEC_T_F16R:
		memcpy(y, src, (size_t)n * 4);
		break;
	case DEC_T_Q8_K: {
		const struct dec_block_q8_K *b = src;

		for (int64_t i = 0; i < n / DEC_QK_K; i++, y += DEC_QK_K)
			for (int j = 0; j < DEC_QK_K; j++)
				y[j] = b[i].d * b[i].qs[j];
		break;
	}
	default:
		if (!dec_dequant_row_k(t, src, y, n))
			memset(y, 0, (size_t)n * 4); /* unsupported: callers check dec_type_supported */
	}
}

/* ---- quantization ----------------------------------------------------- */

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

/* As llama.cpp's x86 path does it: scale 127/amax, round half to even. */
void dec_quant_q8_0_generic(const float *x, void *vb, int64_t n)
{
	struct dec_block_q8_0 *b = vb;

	for (int64_t i = 0; i < n / DEC_QK; i++, x += DEC_QK) {
		float a = 0, id;

		for (int j = 0; j < DEC_QK; j++)
			a = fmaxf(a, fabsf(x[j]));
		id = a ? 127.f / a : 0.f;
		b[i].d = dec_f32_to_f16(a / 127.f);
		for (int j = 0; j < DEC_QK; j++)
			b[i].qs[j] = (int8_t)lrintf(x[j] * id);
	}
}

/* Q8_1 as llama.cpp writes it (quantize_row_q8_1 on x86, and the
 * reference): the Q8_0 steps (127/amax, round half to even), then
 * s = fp16(d * sum of the qs) with d = amax/127 unrounded. One portable
 * version serves every table: activations cost O(n) beside the O(n · rows)
 * product, and lrintf rounds as the AVX2 quantizers do. */
void dec_quant_q8_1(const float *x, void *vb, int64_t n)
{
	struct dec_block_q8_1 *b = vb;

	for (int64_t i = 0; i < n / DEC_QK; i++, x += DEC_QK) {
		float a = 0, id, d;
		int sum = 0;

		for (int j = 0; j < DEC_QK; j++)
			a = fmaxf(a, fabsf(x[j]));
		id = a ? 127.f / a : 0.f;
		d = a / 127.f;
		b[i].d = dec_f32_to_f16(d);
		for (int j = 0; j < DEC_QK; j++) {
			b[i].qs[j] = (int8_t)lrintf(x[j] * id);
			sum += b[i].qs[j];
		}
		b[i].s = dec_f32_to_f16(d * (float)sum);
	}
}

void dec_f16_f32_generic(const uint16_t *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = dec_f16_to_f32(x[i]);
}

void dec_quant_f16_generic(const float *x, uint16_t *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = dec_f32_to_f16(x[i]);
}

void dec_quant_f16r_generic(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = dec_f16_to_f32(dec_f32_to_f16(x[i]));
}

void dec_silu_mul_generic(float *g, const float *u, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void dec_quant_q8_k_generic(const float *x, void *vb, int64_t n)
{
	struct dec_block_q8_K *b = vb;
	int64_t nb = n / DEC_QK_K;

	for (int64_t i = 0; i < nb; i++, x += DEC_QK_K) {
		float a = 0, id;

		for (int j = 0; j < DEC_QK_K; j++)
			a = fmaxf(a, fabsf(x[j]));
		id = a ? 127.f / a : 0.f;
		b[i].d = a ? 1.f / id : 0.f;
		for (int j = 0; j < DEC_QK_K; j++) {
			int q = (int)lrintf(x[j] * id);

			b[i].qs[j] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
		}
		for (int g = 0; g < DEC_QK_K / 16; g++) {
			int s = 0;

			for (int j = 0; j < 16; j++)
				s += b[i].qs[16 * g + j];
			b[i].bsums[g] = (int16_t)s;
		}
	}
}

static void quant_q4_0(const float *x, struct dec_block_q4_0 *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK) {
		float m = amax_signed(x, DEC_QK), d = m / -8, id = d ? 1.f / d : 0.f;

		b[i].d = dec_f32_to_f16(d);
		for (int j = 0; j < 16; j++) {
			int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[j + 16] * id + 8.5f);

			q0 = q0 > 15 ? 15 : q0 < 0 ? 0 : q0;
			q1 = q1 > 15 ? 15 : q1 < 0 ? 0 : q1;
			b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
		}
	}
}

static void quant_q5_0(const float *x, struct dec_block_q5_0 *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK) {
		float m = amax_signed(x, DEC_QK), d = m / -16, id = d ? 1.f / d : 0.f;
		uint32_t qh = 0;

		b[i].d = dec_f32_to_f16(d);
		for (int j = 0; j < 16; j++) {
			int q0 = (int)(x[j] * id + 16.5f), q1 = (int)(x[j + 16] * id + 16.5f);

			q0 = q0 > 31 ? 31 : q0 < 0 ? 0 : q0;
			q1 = q1 > 31 ? 31 : q1 < 0 ? 0 : q1;
			b[i].qs[j] = (uint8_t)((q0 & 0xF) | ((q1 & 0xF) << 4));
			qh |= (uint32_t)((q0 >> 4) & 1) << j;
			qh |= (uint32_t)((q1 >> 4) & 1) << (j + 16);
		}
		memcpy(b[i].qh, &qh, 4);
	}
}

/* The _1 types: d = (max - min) / levels, m = min, q = (x - min) / d
 * rounded half up and clamped, as ggml's reference quantizers. */
static void quant_q4_1(const float *x, struct dec_block_q4_1 *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK) {
		float lo = x[0], hi = x[0], d, id;

		for (int j = 1; j < DEC_QK; j++) {
			lo = fminf(lo, x[j]);
			hi = fmaxf(hi, x[j]);
		}
		d = (hi - lo) / 15;
		id = d ? 1.f / d : 0.f;
		b[i].d = dec_f32_to_f16(d);
		b[i].m = dec_f32_to_f16(lo);
		for (int j = 0; j < 16; j++) {
			int q0 = (int)((x[j] - lo) * id + 0.5f), q1 = (int)((x[j + 16] - lo) * id + 0.5f);

			q0 = q0 > 15 ? 15 : q0;
			q1 = q1 > 15 ? 15 : q1;
			b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
		}
	}
}

static void quant_q5_1(const float *x, struct dec_block_q5_1 *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK) {
		float lo = x[0], hi = x[0], d, id;
		uint32_t qh = 0;

		for (int j = 1; j < DEC_QK; j++) {
			lo = fminf(lo, x[j]);
			hi = fmaxf(hi, x[j]);
		}
		d = (hi - lo) / 31;
		id = d ? 1.f / d : 0.f;
		b[i].d = dec_f32_to_f16(d);
		b[i].m = dec_f32_to_f16(lo);
		for (int j = 0; j < 16; j++) {
			int q0 = (int)((x[j] - lo) * id + 0.5f), q1 = (int)((x[j + 16] - lo) * id + 0.5f);

			q0 = q0 > 31 ? 31 : q0;
			q1 = q1 > 31 ? 31 : q1;
			b[i].qs[j] = (uint8_t)((q0 & 0xF) | ((q1 & 0xF) << 4));
			qh |= (uint32_t)((q0 >> 4) & 1) << j;
			qh |= (uint32_t)((q1 >> 4) & 1) << (j + 16);
		}
		memcpy(b[i].qh, &qh, 4);
	}
}

static void quant_q4_k(const float *x, struct dec_block_q4_K *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK_K) {
		float sc[8], mn[8], msc = 0, mmn = 0, d, dmin;
		uint8_t qsc[8], qmn[8];

		for (int s = 0; s < 8; s++) {
			float lo = 0, hi = 0;

			for (int l = 0; l < 32; l++) {
				lo = fminf(lo, x[32 * s + l]);
				hi = fmaxf(hi, x[32 * s + l]);
			}
			sc[s] = (hi - lo) / 15.f;
			mn[s] = -lo;
			msc = fmaxf(msc, sc[s]);
			mmn = fmaxf(mmn, mn[s]);
		}
		b[i].d = dec_f32_to_f16(msc / 63.f);
		b[i].dmin = dec_f32_to_f16(mmn / 63.f);
		d = dec_f16_to_f32(b[i].d);
		dmin = dec_f16_to_f32(b[i].dmin);
		for (int s = 0; s < 8; s++) {
			int a = d ? (int)lrintf(sc[s] / d) : 0, c = dmin ? (int)lrintf(mn[s] / dmin) : 0;

			qsc[s] = (uint8_t)(a > 63 ? 63 : a);
			qmn[s] = (uint8_t)(c > 63 ? 63 : c);
		}
		for (int j = 0; j < 4; j++) {
			b[i].scales[j] = (uint8_t)((qsc[j] & 63) | ((qsc[j + 4] >> 4) << 6));
			b[i].scales[j + 4] = (uint8_t)((qmn[j] & 63) | ((qmn[j + 4] >> 4) << 6));
			b[i].scales[j + 8] = (uint8_t)((qsc[j + 4] & 0xF) | ((qmn[j + 4] & 0xF) << 4));
		}
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++) {
				int q[2];

				for (int h = 0; h < 2; h++) {
					int s = 2 * j + h;
					float ds = d * qsc[s], v = x[32 * s + l] + dmin * qmn[s];

					q[h] = ds ? (int)lrintf(v / ds) : 0;
					q[h] = q[h] > 15 ? 15 : q[h] < 0 ? 0 : q[h];
				}
				b[i].qs[32 * j + l] = (uint8_t)(q[0] | (q[1] << 4));
			}
	}
}

static void quant_q6_k(const float *x, struct dec_block_q6_K *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += DEC_QK_K) {
		float sc[16], ms = 0, d;
		uint8_t L[DEC_QK_K];

		for (int g = 0; g < 16; g++) {
			sc[g] = amax_signed(x + 16 * g, 16) / -32.f;
			ms = fmaxf(ms, fabsf(sc[g]));
		}
		b[i].d = dec_f32_to_f16(ms / 127.f);
		d = dec_f16_to_f32(b[i].d);
		for (int g = 0; g < 16; g++) {
			int s = d ? (int)lrintf(sc[g] / d) : 0;
			float ds;

			b[i].scales[g] = (int8_t)(s > 127 ? 127 : s < -128 ? -128 : s);
			ds = d * b[i].scales[g];
			for (int l = 0; l < 16; l++) {
				int q = ds ? (int)lrintf(x[16 * g + l] / ds) : 0;

				q = q > 31 ? 31 : q < -32 ? -32 : q;
				L[16 * g + l] = (uint8_t)(q + 32);
			}
		}
		for (int n = 0; n < 2; n++) {
			uint8_t *ql = b[i].ql + 64 * n, *qh = b[i].qh + 32 * n;
			const uint8_t *v = L + 128 * n;

			for (int l = 0; l < 32; l++) {
				ql[l] = (uint8_t)((v[l] & 0xF) | ((v[l + 64] & 0xF) << 4));
				ql[l + 32] = (uint8_t)((v[l + 32] & 0xF) | ((v[l + 96] & 0xF) << 4));
				qh[l] = (uint8_t)((v[l] >> 4) | ((v[l + 32] >> 4) << 2) |
						  ((v[l + 64] >> 4) << 4) | ((v[l + 96] >> 4) << 6));
			}
		}
	}
}

int dec_quantize_row(uint32_t t, const float *x, void *dst, int64_t n)
{
	switch (t) {
	case DEC_T_F32:
		memcpy(dst, x, (size_t)n * 4);
		return 1;
	case DEC_T_F16: dec_simd_get()->quant_f16(x, dst, n); return 1;
	case DEC_T_BF16:
		for (int64_t i = 0; i < n; i++)
			((uint16_t *)dst)[i] = dec_f32_to_bf16(x[i]);
		return 1;
	case DEC_T_F16R: dec_simd_get()->quant_f16r(x, dst, n); return 1;
	case DEC_T_Q8_0: dec_simd_get()->quant_q8_0(x, dst, n); return 1;
	case DEC_T_Q8_K: dec_simd_get()->quant_q8_k(x, dst, n); return 1;
	case DEC_T_Q4_0: quant_q4_0(x, dst, n / DEC_QK); return 1;
	case DEC_T_Q5_0: quant_q5_0(x, dst, n / DEC_QK); return 1;
	case DEC_T_Q8_1: dec_simd_get()->quant_q8_1(x, dst, n); return 1;
	case DEC_T_Q4_1: quant_q4_1(x, dst, n / DEC_QK); return 1;
	case DEC_T_Q5_1: quant_q5_1(x, dst, n / DEC_QK); return 1;
	case DEC_T_Q4_K: quant_q4_k(x, dst, n / DEC_QK_K); return 1;
	case DEC_T_Q6_K: quant_q6_k(x, dst, n / DEC_QK_K); return 1;
	}
	return dec_quantize_row_k(t, x, dst, n);
}

/* ---- dot products (portable) ------------------------------------------ */

uint32_t dec_vec_type(uint32_t t)
{
	switch (t) {
	case DEC_T_F16: return DEC_T_F16R;
	case DEC_T_BF16: return DEC_T_BF16;
	case DEC_T_Q4_0: case DEC_T_Q5_0: case DEC_T_Q8_0: case DEC_T_IQ4_NL: return DEC_T_Q8_0;
	case DEC_T_Q4_1: case DEC_T_Q5_1: return DEC_T_Q8_1;
	case DEC_T_Q2_K: case DEC_T_Q3_K: case DEC_T_Q4_K: case DEC_T_Q5_K: case DEC_T_Q6_K:
	case DEC_T_IQ4_XS:
		return DEC_T_Q8_K;
	default: return DEC_T_F32;
	}
}

float dec_dot_q4_k_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q4_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		int32_t sumi = 0, summ = 0;

		for (int s = 0; s < 8; s++) {
			uint8_t sc, m;
			int32_t acc = 0;
			const uint8_t *q = x[i].qs + 32 * (s / 2);
			const int8_t *a = y[i].qs + 32 * s;

			dec_q4k_scale_min(s, x[i].scales, &sc, &m);
			if (s & 1)
				for (int l = 0; l < 32; l++)
					acc += (q[l] >> 4) * a[l];
			else
				for (int l = 0; l < 32; l++)
					acc += (q[l] & 0xF) * a[l];
			sumi += sc * acc;
			summ += m * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
		}
		sum += y[i].d * (dec_f16_to_f32(x[i].d) * sumi - dec_f16_to_f32(x[i].dmin) * summ);
	}
	return sum;
}

float dec_dot_q6_k_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q6_K *x = vx;
	const struct dec_block_q8_K *y = vy;
	int8_t v[DEC_QK_K];
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK_K; i++) {
		int32_t sumi = 0;

		dec_q6k_values(&x[i], v);
		for (int g = 0; g < 16; g++) {
			int32_t acc = 0;

			for (int l = 0; l < 16; l++)
				acc += v[16 * g + l] * y[i].qs[16 * g + l];
			sumi += x[i].scales[g] * acc;
		}
		sum += dec_f16_to_f32(x[i].d) * y[i].d * sumi;
	}
	return sum;
}

float dec_dot_q8_0_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q8_0 *x = vx, *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		int32_t acc = 0;

		for (int j = 0; j < DEC_QK; j++)
			acc += x[i].qs[j] * y[i].qs[j];
		sum += dec_f16_to_f32(x[i].d) * dec_f16_to_f32(y[i].d) * acc;
	}
	return sum;
}

float dec_dot_q4_0_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q4_0 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		int32_t acc = 0;

		for (int j = 0; j < 16; j++)
			acc += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
		sum += dec_f16_to_f32(x[i].d) * dec_f16_to_f32(y[i].d) * acc;
	}
	return sum;
}

float dec_dot_q5_0_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q5_0 *x = vx;
	const struct dec_block_q8_0 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		int32_t acc = 0;
		uint32_t qh;

		memcpy(&qh, x[i].qh, 4);
		for (int j = 0; j < 16; j++) {
			int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;

			acc += (((x[i].qs[j] & 0xF) | h0) - 16) * y[i].qs[j] +
			       (((x[i].qs[j] >> 4) | h1) - 16) * y[i].qs[j + 16];
		}
		sum += dec_f16_to_f32(x[i].d) * dec_f16_to_f32(y[i].d) * acc;
	}
	return sum;
}

/* Per block the exact integer sum of q · q_act, then
 * sum += (d · d_act) · sumi + m · s_act (llama.cpp's portable step). */
float dec_dot_q4_1_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q4_1 *x = vx;
	const struct dec_block_q8_1 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		int32_t acc = 0;

		for (int j = 0; j < 16; j++)
			acc += (x[i].qs[j] & 0xF) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
		sum += dec_f16_to_f32(x[i].d) * dec_f16_to_f32(y[i].d) * acc +
		       dec_f16_to_f32(x[i].m) * dec_f16_to_f32(y[i].s);
	}
	return sum;
}

float dec_dot_q5_1_generic(const void *vx, const void *vy, int64_t n)
{
	const struct dec_block_q5_1 *x = vx;
	const struct dec_block_q8_1 *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n / DEC_QK; i++) {
		int32_t acc = 0;
		uint32_t qh;

		memcpy(&qh, x[i].qh, 4);
		for (int j = 0; j < 16; j++) {
			int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;

			acc += ((x[i].qs[j] & 0xF) | h0) * y[i].qs[j] + ((x[i].qs[j] >> 4) | h1) * y[i].qs[j + 16];
		}
		sum += dec_f16_to_f32(x[i].d) * dec_f16_to_f32(y[i].d) * acc +
		       dec_f16_to_f32(x[i].m) * dec_f16_to_f32(y[i].s);
	}
	return sum;
}

float dec_dot_f16_generic(const void *vx, const void *vy, int64_t n)
{
	const uint16_t *x = vx, *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n; i++)
		sum += dec_f16_to_f32(x[i]) * dec_f16_to_f32(y[i]);
	return sum;
}

float dec_dot_f16r_generic(const void *vx, const void *vy, int64_t n)
{
	const uint16_t *x = vx;
	const float *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n; i++)
		sum += dec_f16_to_f32(x[i]) * y[i];
	return sum;
}

void dec_axpy_f16_generic(float a, const uint16_t *v, float *o, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		o[i] += a * dec_f16_to_f32(v[i]);
}

float dec_dot_f32_generic(const void *vx, const void *vy, int64_t n)
{
	const float *x = vx, *y = vy;
	float s[8] = { 0 };

	for (int64_t i = 0; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			s[j] += x[i + j] * y[i + j];
	for (int64_t i = n & ~(int64_t)7; i < n; i++)
		s[0] += x[i] * y[i];
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static float dot_bf16(const void *vx, const void *vy, int64_t n)
{
	const uint16_t *x = vx, *y = vy;
	float sum = 0;

	for (int64_t i = 0; i < n; i++)
		sum += dec_bf16_to_f32(x[i]) * dec_bf16_to_f32(y[i]);
	return sum;
}

static float dot_none(const void *x, const void *y, int64_t n)
{
	(void)x;
	(void)y;
	(void)n;
	return 0;
}

dec_vec_dot_t dec_vec_dot_fn(uint32_t t)
{
	const struct dec_simd *s = dec_simd_get();

	switch (t) {
	case DEC_T_F32: return s->dot_f32;
	case DEC_T_F16: return s->dot_f16;
	case DEC_T_BF16: return dot_bf16;
	case DEC_T_Q8_0: return s->dot_q8_0;
	case DEC_T_Q4_0: return s->dot_q4_0;
	case DEC_T_Q5_0: return s->dot_q5_0;
	case DEC_T_Q4_1: return s->dot_q4_1;
	case DEC_T_Q5_1: return s->dot_q5_1;
	case DEC_T_Q4_K: return s->dot_q4_k;
	case DEC_T_Q6_K: return s->dot_q6_k;
	case DEC_T_Q2_K: return s->dot_q2_k;
	case DEC_T_Q3_K: return s->dot_q3_k;
	case DEC_T_Q5_K: return s->dot_q5_k;
	case DEC_T_IQ4_NL: return s->dot_iq4_nl;
	case DEC_T_IQ4_XS: return s->dot_iq4_xs;
	}
	return dot_none;
}

float dec_vec_dot(uint32_t t, const void *row, const void *act, int64_t n)
{
	return dec_vec_dot_fn(t)(row, act, n);
}

double dec_vec_dot_ref(uint32_t t, const void *row, const float *x, int64_t n)
{
	float buf[DEC_QK_K];
	size_t blck = 1, tsize = 0;
	double s = 0;

	dec_type_info(t, &blck, &tsize);
	for (int64_t i = 0; i < n; i += DEC_QK_K) {
		int64_t m = n - i < DEC_QK_K ? n - i : DEC_QK_K;

		dec_dequant_row(t, (const uint8_t *)row + (size_t)i / blck * tsize, buf, m);
		for (int64_t j = 0; j < m; j++)
			s += (double)buf[j] * x[i + j];
	}
	return s;
}

void dec_att_scores_generic(const uint16_t *q, const uint16_t *k, int64_t stride, int n_pos, int hd,
			    float scale, float *sc)
{
	for (int p = 0; p < n_pos; p++)
		sc[p] = dec_dot_f16_generic(q, k + p * stride, hd) * scale;
}

void dec_att_values_generic(const float *a, const uint16_t *v, int64_t stride, int n_pos, int hd,
			    float *o)
{
	for (int p = 0; p < n_pos; p++)
		dec_axpy_f16_generic(a[p], v + p * stride, o, hd);
}

float dec_exp_sum_generic(float *x, int n, float mx)
{
	double sum = 0;

	for (int i = 0; i < n; i++) {
		x[i] = expf(x[i] - mx);
		sum += x[i];
	}
	return (float)sum;
}

void dec_softmax_generic(float *x, int n)
{
	float mx = -INFINITY, sum;

	for (int i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	sum = dec_exp_sum_generic(x, n, mx);
	for (int i = 0; i < n; i++)
		x[i] /= sum;
}

dec_gemm8_fn dec_vec_gemm8_fn(uint32_t t, int *nt)
{
	*nt = dec_simd_get()->gemm_nt;
	return dec_simd_gemm8_of(dec_simd_get(), t);
}

dec_gemm8_fn dec_simd_gemm8_of(const struct dec_simd *s, uint32_t t)
{
	switch (t) {
	case DEC_T_Q8_0: return s->gemm8_q8_0;
	case DEC_T_Q4_0: return s->gemm8_q4_0;
	case DEC_T_Q5_0: return s->gemm8_q5_0;
	case DEC_T_Q4_1: return s->gemm8_q4_1;
	case DEC_T_Q4_K: return s->gemm8_q4_k;
	case DEC_T_Q6_K: return s->gemm8_q6_k;
	}
	return NULL;
}

dec_dot4_fn dec_vec_dot4_fn(uint32_t t)
{
	const struct dec_simd *s = dec_simd_get();

	switch (t) {
	case DEC_T_Q8_0: return s->dot4_q8_0;
	case DEC_T_Q4_0: return s->dot4_q4_0;
	case DEC_T_Q5_0: return s->dot4_q5_0;
	case DEC_T_Q4_K: return s->dot4_q4_k;
	case DEC_T_Q6_K: return s->dot4_q6_k;
	case DEC_T_F16: return s->dot4_f16;
	}
	return NULL;
}

float dec_sum_exp_generic(const float *x, int n, float mx)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += expf(x[i] - mx);
	return (float)sum;
}
