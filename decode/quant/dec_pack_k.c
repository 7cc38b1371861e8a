/* dec_pack_k.c — the repacked eight-row layouts of the low-bit types
 * (struct dec_block_q2_k_x8 … in dec_quant.h; IQ4_NL reuses Q4_0's): the
 * packers, and the portable eight-row kernels, which take the integer sums
 * and float steps of the one-row portable kernels in dec_quant_k.c, per
 * row. The AVX2 eight-row kernels are in dec_simd_rows.c. */
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"

#include <string.h>

/* Block i of row r of a group whose rows are row_bytes apart. */
#define BLOCK(type, rows, row_bytes, r, i) \
	((const type *)((const uint8_t *)(rows) + (size_t)(r) * (row_bytes)) + (i))

void dec_pack_q5_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q5_k_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK_K; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q5_K *b = BLOCK(struct dec_block_q5_K, rows, row_bytes, r, i);

			o->d[r] = b->d;
			o->dmin[r] = b->dmin;
			for (int s = 0; s < 8; s++) {
				dec_q4k_scale_min(s, b->scales, &o->sc[s][r], &o->mn[s / 2][r][s & 1]);
				memset(o->qh[s][r], 0, 4);
				for (int g = 0; g < 4; g++)
					for (int k = 0; k < 4; k++) {
						int lo = dec_q5k_u(b, 32 * s + 8 * g + k), hi = dec_q5k_u(b, 32 * s + 8 * g + 4 + k);

						o->qs[s][g][r][k] = (uint8_t)((lo & 0xF) | (hi & 0xF) << 4);
						o->qh[s][r][k] |= (uint8_t)((lo >> 4) << (2 * g) | (hi >> 4) << (2 * g + 1));
					}
			}
		}
}

void dec_pack_q3_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q3_k_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK_K; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q3_K *b = BLOCK(struct dec_block_q3_K, rows, row_bytes, r, i);

			o->d[r] = b->d;
			for (int s = 0; s < 16; s++) {
				o->sc[s][r] = (int8_t)dec_q3k_scale(b->scales, s);
				for (int g = 0; g < 2; g++)
					for (int k = 0; k < 4; k++)
						o->qs[s][g][r][k] = (uint8_t)(dec_q3k_u(b, 16 * s + 8 * g + k) |
									      dec_q3k_u(b, 16 * s + 8 * g + 4 + k) << 4);
			}
		}
}

void dec_pack_q2_k_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q2_k_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK_K; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_q2_K *b = BLOCK(struct dec_block_q2_K, rows, row_bytes, r, i);

			o->d[r] = b->d;
			o->dmin[r] = b->dmin;
			for (int s = 0; s < 16; s++) {
				o->sm[s][r] = b->scales[s];
				for (int k = 0; k < 4; k++) {
					uint8_t q = 0;

					for (int j = 0; j < 4; j++)
						q |= (uint8_t)(dec_q2k_u(b, 16 * s + 4 * j + k) << (2 * j));
					o->qs[s][r][k] = q;
				}
			}
		}
}

void dec_pack_iq4_nl_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_q4_0_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_iq4_nl *b = BLOCK(struct dec_block_iq4_nl, rows, row_bytes, r, i);

			o->d[r] = b->d;
			for (int g = 0; g < 4; g++)
				for (int k = 0; k < 4; k++) {
					int j = 8 * g + k; /* j and j + 4 are both below 16 or both above */
					int lo = j < 16 ? b->qs[j] & 0xF : b->qs[j - 16] >> 4;
					int hi = j < 16 ? b->qs[j + 4] & 0xF : b->qs[j - 12] >> 4;

					o->qs[g][r][k] = (uint8_t)(lo | hi << 4);
				}
		}
}

void dec_pack_iq4_xs_x8(const void *rows, size_t row_bytes, int64_t n, void *dst)
{
	struct dec_block_iq4_xs_x8 *o = dst;

	for (int64_t i = 0; i < n / DEC_QK_K; i++, o++)
		for (int r = 0; r < 8; r++) {
			const struct dec_block_iq4_xs *b = BLOCK(struct dec_block_iq4_xs, rows, row_bytes, r, i);

			o->d[r] = b->d;
			for (int j = 0; j < 8; j++) {
				o->sc[j][r] = (int8_t)dec_iq4xs_scale(b, j);
				for (int g = 0; g < 4; g++)
					for (int k = 0; k < 4; k++)
						o->qs[j][g][r][k] = (uint8_t)(dec_iq4xs_u(b, 32 * j + 8 * g + k) |
									      dec_iq4xs_u(b, 32 * j + 8 * g + 4 + k) << 4);
			}
		}
}

/* ---- portable eight-row kernels: per row, the one-row kernel's steps ---- */

void dec_gemv8_q5_k_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q5_k_x8 *x = vx;
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
						uint8_t q = x[i].qs[s][g][r][k], h = x[i].qh[s][r][k];

						acc += ((q & 0xF) | ((h >> (2 * g)) & 1) << 4) * a[0] +
						       ((q >> 4) | ((h >> (2 * g + 1)) & 1) << 4) * a[4];
					}
				sumi += x[i].sc[s][r] * acc;
				summ += x[i].mn[s / 2][r][s & 1] * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
			}
			sum += y[i].d * (dec_f16_to_f32(x[i].d[r]) * (float)sumi - dec_f16_to_f32(x[i].dmin[r]) * (float)summ);
		}
		out[r] = sum;
	}
}

void dec_gemv8_q3_k_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q3_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK_K; i++) {
			int32_t sumi = 0;

			for (int s = 0; s < 16; s++) {
				int32_t acc = 0;

				for (int g = 0; g < 2; g++)
					for (int k = 0; k < 4; k++) {
						const int8_t *a = y[i].qs + 16 * s + 8 * g + k;
						uint8_t q = x[i].qs[s][g][r][k];

						acc += ((q & 0xF) - 4) * a[0] + ((q >> 4) - 4) * a[4];
					}
				sumi += x[i].sc[s][r] * acc;
			}
			sum += dec_f16_to_f32(x[i].d[r]) * y[i].d * (float)sumi;
		}
		out[r] = sum;
	}
}

void dec_gemv8_q2_k_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_q2_k_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK_K; i++) {
			int32_t sumi = 0, summ = 0;

			for (int s = 0; s < 16; s++) {
				int32_t acc = 0;

				for (int j = 0; j < 4; j++)
					for (int k = 0; k < 4; k++)
						acc += ((x[i].qs[s][r][k] >> (2 * j)) & 3) * y[i].qs[16 * s + 4 * j + k];
				sumi += (x[i].sm[s][r] & 0xF) * acc;
				summ += (x[i].sm[s][r] >> 4) * y[i].bsums[s];
			}
			sum += y[i].d * (dec_f16_to_f32(x[i].d[r]) * (float)sumi - dec_f16_to_f32(x[i].dmin[r]) * (float)summ);
		}
		out[r] = sum;
	}
}

void dec_gemv8_iq4_nl_generic(const void *vx, const void *vy, int64_t n, float *out)
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

					acc += dec_iq4nl_values[q & 0xF] * y[i].qs[8 * g + k] +
					       dec_iq4nl_values[q >> 4] * y[i].qs[8 * g + 4 + k];
				}
			sum += dec_f16_to_f32(x[i].d[r]) * dec_f16_to_f32(y[i].d) * (float)acc;
		}
		out[r] = sum;
	}
}

void dec_gemv8_iq4_xs_generic(const void *vx, const void *vy, int64_t n, float *out)
{
	const struct dec_block_iq4_xs_x8 *x = vx;
	const struct dec_block_q8_K *y = vy;

	for (int r = 0; r < 8; r++) {
		float sum = 0;

		for (int64_t i = 0; i < n / DEC_QK_K; i++) {
			int32_t sumi = 0;

			for (int j = 0; j < 8; j++) {
				int32_t acc = 0;

				for (int g = 0; g < 4; g++)
					for (int k = 0; k < 4; k++) {
						const int8_t *a = y[i].qs + 32 * j + 8 * g + k;
						uint8_t q = x[i].qs[j][g][r][k];

						acc += dec_iq4nl_values[q & 0xF] * a[0] + dec_iq4nl_values[q >> 4] * a[4];
					}
				sumi += x[i].sc[j][r] * acc;
			}
			sum += dec_f16_to_f32(x[i].d[r]) * y[i].d * (float)sumi;
		}
		out[r] = sum;
	}
}
