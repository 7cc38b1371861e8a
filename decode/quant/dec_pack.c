/* dec_pack.c — the repacked layouts of the quantized types (struct
 * dec_block_*_x8 in dec_quant.h: 8 rows interleaved so that a 32-bit lane
 * holds one row's values), the packers, and the portable eight-row kernels,
 * which take the integer sums and float steps of the one-row portable
 * kernels in dec_quant.c, per row; the AVX2 ones are in dec_simd_rows.c. */
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"

#include <string.h>

size_t dec_x8_group_bytes(uint32_t t, int64_t n)
{
	switch (t) {
	case DEC_T_Q8_0: return (size_t)(n / DEC_QK) * sizeof(struct dec_block_q8_0_x8);
	case DEC_T_Q4_0: return (size_t)(n / DEC_QK) * sizeof(struct dec_block_q4_0_x8);
	case DEC_T_Q5_0: return (size_t)(n / DEC_QK) * sizeof(struct dec_block_q5_0_x8);
	case DEC_T_Q4_1: return (size_t)(n / DEC_QK) * sizeof(struct dec_block_q4_1_x8);
	case DEC_T_Q5_1: return (size_t)(n / DEC_QK) * sizeof(struct dec_block_q5_1_x8);
	case DEC_T_Q4_K: return (size_t)(n / DEC_QK_K) * sizeof(struct dec_block_q4_k_x8);
	case DEC_T_Q6_K: return (size_t)(n / DEC_QK_K) * sizeof(struct dec_block_q6_k_x8);
	case DEC_T_Q2_K: return (size_t)(n / DEC_QK_K) * sizeof(struct dec_block_q2_k_x8);
	case DEC_T_Q3_K: return (size_t)(n / DEC_QK_K) * sizeof(struct dec_block_q3_k_x8);
	case DEC_T_Q5_K: return (size_t)(n / DEC_QK_K) * sizeof(struct dec_block_q5_k_x8);
	case DEC_T_IQ4_NL: return (size_t)(n / DEC_QK) * sizeof(struct dec_block_q4_0_x8);
	case DEC_T_IQ4_XS: return (size_t)(n / DEC_QK_K) * sizeof(struct dec_block_iq4_xs_x8);
	}
	return 0;
}

void dec_pack_x8(uint32_t t, const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	if (t == DEC_T_Q8_0)
		dec_pack_q8_0_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q4_0)
		dec_pack_q4_0_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q5_0)
		dec_pack_q5_0_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q4_1)
		dec_pack_q4_1_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q5_1)
		dec_pack_q5_1_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q4_K)
		dec_pack_q4_k_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q6_K)
		dec_pack_q6_k_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q2_K)
		dec_pack_q2_k_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q3_K)
		dec_pack_q3_k_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_Q5_K)
		dec_pack_q5_k_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_IQ4_NL)
		dec_pack_iq4_nl_x8(rows, row_bytes, n, dst);
	else if (t == DEC_T_IQ4_XS)
		dec_pack_iq4_xs_x8(rows, row_bytes, n, dst);
}

dec_gemv8_fn dec_vec_gemv8_fn(uint32_t t)
{
	return dec_simd_gemv8_of(dec_simd_get(), t);
}

dec_gemv8_fn dec_simd_gemv8_of(const struct dec_simd *s, uint32_t t)
{
	switch (t) {
	case DEC_T_Q8_0: return s->gemv8_q8_0;
	case DEC_T_Q4_0: return s->gemv8_q4_0;
	case DEC_T_Q5_0: return s->gemv8_q5_0;
	case DEC_T_Q4_1: return s->gemv8_q4_1;
	case DEC_T_Q5_1: return s->gemv8_q5_1;
	case DEC_T_Q4_K: return s->gemv8_q4_k;
	case DEC_T_Q6_K: return s->gemv8_q6_k;
	case DEC_T_Q2_K: return s->gemv8_q2_k;
	case DEC_T_Q3_K: return s->gemv8_q3_k;
	case DEC_T_Q5_K: return s->gemv8_q5_k;
	case DEC_T_IQ4_NL: return s->gemv8_iq4_nl;
	case DEC_T_IQ4_XS: return s->gemv8_iq4_xs;
	}
	return NULL;
}

void dec_pack_q4_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q4_k_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK_K; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q4_K *b =
				(const struct dec_block_q4_K *)((const uint8_t *)rows + r * row_bytes) + i;

			o->d[r] = b->d;
			o->dmin[r] = b->dmin;
			for (int s = 0; s < 8; s++) {
				const uint8_t *q = b->qs + 32 * (s / 2);
				int sh = 4 * (s & 1);

				dec_q4k_scale_min(s, b->scales, &o->sc[s][r], &o->mn[s / 2][r][s & 1]);
				for (int g = 0; g < 4; g++)
					for (int k = 0; k < 4; k++)
						o->qs[s][g][r][k] = (uint8_t)(((q[8 * g + k] >> sh) & 0xF) |
									      ((q[8 * g + 4 + k] >> sh) & 0xF) << 4);
			}
		}
}

void dec_pack_q8_0_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q8_0_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q8_0 *b =
				(const struct dec_block_q8_0 *)((const uint8_t *)rows + r * row_bytes) + i;

			o->d[r] = b->d;
			for (int g = 0; g < 8; g++)
				memcpy(o->qs[g][r], b->qs + 4 * g, 4);
		}
}

/* Value j (0..32) of a Q4_0 / Q5_0 / Q4_1 / Q5_1 block as stored, from its
 * 16 nibble bytes qs and (5-bit types) its 4 bytes qh. */
static int nib_u(const uint8_t *qs, int j)
{
	return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
}

static int nib5_u(const uint8_t *qs, const uint8_t *qhb, int j)
{
	uint32_t qh;

	memcpy(&qh, qhb, 4);
	return nib_u(qs, j) | (int)((qh >> j) & 1) << 4;
}

static int q4_0_u(const struct dec_block_q4_0 *b, int j)
{
	return nib_u(b->qs, j);
}

static int q5_0_u(const struct dec_block_q5_0 *b, int j)
{
	return nib5_u(b->qs, b->qh, j);
}

/* The 4-bit part of a block into qs[g][r][k], its 5th bits (qhb non-NULL)
 * into qh[r][g]: the layout of dec_block_q4_0_x8 / q5_0_x8. */
static void pack_nibbles(const uint8_t *qsb, const uint8_t *qhb, int r, uint8_t qs[4][8][4],
			 uint8_t qh[8][4])
{
	for (int g = 0; g < 4; g++) {
		for (int k = 0; k < 4; k++)
			qs[g][r][k] = (uint8_t)((nib_u(qsb, 8 * g + k)) | nib_u(qsb, 8 * g + 4 + k) << 4);
		if (!qhb)
			continue;
		qh[r][g] = 0;
		for (int k = 0; k < 8; k++)
			qh[r][g] |= (uint8_t)((nib5_u(qsb, qhb, 8 * g + k) >> 4) << k);
	}
}

void dec_pack_q4_1_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q4_1_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q4_1 *b =
				(const struct dec_block_q4_1 *)((const uint8_t *)rows + r * row_bytes) + i;

			o->d[r] = b->d;
			o->m[r] = b->m;
			pack_nibbles(b->qs, NULL, r, o->qs, NULL);
		}
}

void dec_pack_q5_1_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q5_1_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q5_1 *b =
				(const struct dec_block_q5_1 *)((const uint8_t *)rows + r * row_bytes) + i;

			o->d[r] = b->d;
			o->m[r] = b->m;
			pack_nibbles(b->qs, b->qh, r, o->qs, o->qh);
		}
}

/* The integer sums and the float step of dec_dot_q4_1_generic and
 * dec_dot_q5_1_generic, per row. */
void dec_gemv8_q4_1_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q4_1_x8 *x = vx;
	const struct dec_block_q8_1 *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK; i++) {
			int32_t acc = 0;

			for (int g = 0; g < 4; g++)
				for (int k = 0; k < 4; k++) {
					uint8_t q = x[i].qs[g][r][k];

					acc += (q & 0xF) * y[i].qs[8 * g + k] + (q >> 4) * y[i].qs[8 * g + 4 + k];
				}
			sum += dec_f16_to_f32(x[i].d[r]) * dec_f16_to_f32(y[i].d) * acc +
			       dec_f16_to_f32(x[i].m[r]) * dec_f16_to_f32(y[i].s);
		}
		out[r] = sum;
	}
}

void dec_gemv8_q5_1_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q5_1_x8 *x = vx;
	const struct dec_block_q8_1 *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK; i++) {
			int32_t acc = 0;

			for (int g = 0; g < 4; g++)
				for (int k = 0; k < 4; k++) {
					uint8_t q = x[i].qs[g][r][k], h = x[i].qh[r][g];

					acc += ((q & 0xF) | ((h >> k) & 1) << 4) * y[i].qs[8 * g + k] +
					       ((q >> 4) | ((h >> (k + 4)) & 1) << 4) * y[i].qs[8 * g + 4 + k];
				}
			sum += dec_f16_to_f32(x[i].d[r]) * dec_f16_to_f32(y[i].d) * acc +
			       dec_f16_to_f32(x[i].m[r]) * dec_f16_to_f32(y[i].s);
		}
		out[r] = sum;
	}
}

void dec_pack_q4_0_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q4_0_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q4_0 *b =
				(const struct dec_block_q4_0 *)((const uint8_t *)rows + r * row_bytes) + i;

			o->d[r] = b->d;
			for (int g = 0; g < 4; g++)
				for (int k = 0; k < 4; k++)
					o->qs[g][r][k] = (uint8_t)(q4_0_u(b, 8 * g + k) | q4_0_u(b, 8 * g + 4 + k) << 4);
		}
}

void dec_pack_q5_0_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q5_0_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q5_0 *b =
				(const struct dec_block_q5_0 *)((const uint8_t *)rows + r * row_bytes) + i;

			o->d[r] = b->d;
			for (int g = 0; g < 4; g++) {
				o->qh[r][g] = 0;
				for (int k = 0; k < 4; k++)
					o->qs[g][r][k] = (uint8_t)((q5_0_u(b, 8 * g + k) & 0xF) |
								   (q5_0_u(b, 8 * g + 4 + k) & 0xF) << 4);
				for (int k = 0; k < 8; k++)
					o->qh[r][g] |= (uint8_t)((q5_0_u(b, 8 * g + k) >> 4) << k);
			}
		}
}

/* The integer sums and the float step of dec_dot_q4_0_generic and
 * dec_dot_q5_0_generic, per row. */
void dec_gemv8_q4_0_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q4_0_x8 *x = vx;
	const struct dec_block_q8_0 *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK; i++) {
			int32_t acc = 0;

			for (int g = 0; g < 4; g++)
				for (int k = 0; k < 4; k++) {
					uint8_t q = x[i].qs[g][r][k];

					acc += ((q & 0xF) - 8) * y[i].qs[8 * g + k] + ((q >> 4) - 8) * y[i].qs[8 * g + 4 + k];
				}
			sum += dec_f16_to_f32(x[i].d[r]) * dec_f16_to_f32(y[i].d) * acc;
		}
		out[r] = sum;
	}
}

void dec_gemv8_q5_0_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q5_0_x8 *x = vx;
	const struct dec_block_q8_0 *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK; i++) {
			int32_t acc = 0;

			for (int g = 0; g < 4; g++)
				for (int k = 0; k < 4; k++) {
					uint8_t q = x[i].qs[g][r][k], h = x[i].qh[r][g];

					acc += (((q & 0xF) | ((h >> k) & 1) << 4) - 16) * y[i].qs[8 * g + k] +
					       (((q >> 4) | ((h >> (k + 4)) & 1) << 4) - 16) * y[i].qs[8 * g + 4 + k];
				}
			sum += dec_f16_to_f32(x[i].d[r]) * dec_f16_to_f32(y[i].d) * acc;
		}
		out[r] = sum;
	}
}

/* The integer sums and the float step of dec_dot_q8_0_generic, per row. */
void dec_gemv8_q8_0_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q8_0_x8 *x = vx;
	const struct dec_block_q8_0 *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK; i++) {
			int32_t acc = 0;

			for (int g = 0; g < 8; g++)
				for (int k = 0; k < 4; k++)
					acc += x[i].qs[g][r][k] * y[i].qs[4 * g + k];
			sum += dec_f16_to_f32(x[i].d[r]) * dec_f16_to_f32(y[i].d) * acc;
		}
		out[r] = sum;
	}
}

/* The integer sums and the float step of dec_dot_q4_k_generic, per row. */
void dec_gemv8_q4_k_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q4_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK_K; i++) {
			int32_t sumi = 0, summ = 0;

			for (int s = 0; s < 8; s++) {
				int32_t acc = 0;

				for (int g = 0; g < 4; g++)
					for (int k = 0; k < 4; k++) {
						const int8_t *a = y[i].qs + 32 * s + 8 * g + k;
						uint8_t q = x[i].qs[s][g][r][k];

						acc += (q & 0xF) * a[0] + (q >> 4) * a[4];
					}
				sumi += x[i].sc[s][r] * acc;
				summ += x[i].mn[s / 2][r][s & 1] * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
			}
			sum += y[i].d * (dec_f16_to_f32(x[i].d[r]) * sumi - dec_f16_to_f32(x[i].dmin[r]) * summ);
		}
		out[r] = sum;
	}
}

void dec_pack_q6_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q6_k_x8 *o = dst;
	int8_t v[DEC_QK_K];

	for (int64_t i = 0; i < n / DEC_QK_K; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q6_K *b =
				(const struct dec_block_q6_K *)((const uint8_t *)rows + r * row_bytes) + i;

			o->d[r] = b->d;
			dec_q6k_values(b, v);
			for (int g = 0; g < 16; g++)
				o->sc[g][r] = b->scales[g];
			for (int g = 0; g < 32; g++)
				for (int k = 0; k < 4; k++)
					o->ql[g][r][k] = (uint8_t)(((v[8 * g + k] + 32) & 0xF) |
								   ((v[8 * g + 4 + k] + 32) & 0xF) << 4);
			for (int h = 0; h < 16; h++)
				for (int k = 0; k < 4; k++) {
					uint8_t q = 0;

					for (int j = 0; j < 4; j++)
						q |= (uint8_t)(((v[16 * h + 4 * j + k] + 32) >> 4) << (2 * j));
					o->qh[h][r][k] = q;
				}
		}
}

/* The integer sums and the float step of dec_dot_q6_k_generic, per row. */
void dec_gemv8_q6_k_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q6_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK_K; i++) {
			int32_t sumi = 0;

			for (int h = 0; h < 16; h++) {
				int32_t acc = 0;

				for (int j = 0; j < 4; j++)
					for (int k = 0; k < 4; k++) {
						int l = 4 * j + k;
						uint8_t lo = x[i].ql[2 * h + j / 2][r][k];
						int u = ((j & 1 ? lo >> 4 : lo & 0xF) |
							 ((x[i].qh[h][r][k] >> (2 * j)) & 3) << 4);

						acc += (u - 32) * y[i].qs[16 * h + l];
					}
				sumi += x[i].sc[h][r] * acc;
			}
			sum += dec_f16_to_f32(x[i].d[r]) * y[i].d * sumi;
		}
		out[r] = sum;
	}
}
