// dec_cu_attn.cuh — attention over the paged f16 KV cache, split over the
// context: a block per (kv head's group of query heads, token, split of
// att_split positions) writes, per head,
// its split's max, sum of exponentials and unnormalised value sum; a second
// kernel combines a token's splits. The split length is fixed per backend
// (it depends on max_ctx only), so a token's arithmetic depends on its own
// position and cache alone, whatever else is in the step.
//
// As the CPU path: q rounded to f16 meets the f16 keys, scores and the value
// sum in f32.
#ifndef DEC_CU_ATTN_CUH
#define DEC_CU_ATTN_CUH

#include "decode/cuda/dec_cu_common.cuh"

// grid (n_kv_heads * groups, tokens, att_max_splits); a block of whole
// warps. A block serves att_heads query heads of one kv head's group
// (groups = ceil(group size / att_heads)), so a key or value is read once
// for them all: with GQA (SmolLM2: 3 query heads a kv head; llama 3: 4)
// that divides the cache traffic by the group size.
//
// Within a split, per head, the CPU's AVX2 arithmetic (dec_simd.c): a score
// is hsum8 of two 8-lane FMA chains over the head (eight lanes of a warp
// per position, their sums paired as hsum8 pairs them); e^(s - max) is the
// table's exp for the context's whole 8-value chunks and expf for the rest;
// their sum runs 8 lanes over the chunks, hsum8, then the tail in order;
// the weights are divided by it; the value sum is one FMA chain per
// dimension over the positions in order. Sharing a key between heads
// changes no head's operations or their order. So a context of one split
// (up to att_split positions) gets the CPU's bits; longer ones are merged
// by k_att_combine (float rounding apart, the same result).
#define ATT_CH (DEC_CU_MAX_HEAD_DIM / 8)
extern "C" __global__ void k_attention(const struct dec_cu_cfg *c, int layer, const float *q)
{
	__shared__ float qh[DEC_CU_ATT_HEADS * DEC_CU_MAX_HEAD_DIM];
	__shared__ float sc[DEC_CU_ATT_MAX_SPLIT];   // [heads][len]: att_heads * att_split fit
	__shared__ float red[32];
	__shared__ float sum_l[DEC_CU_ATT_HEADS];
	const struct dec_cu_layer *L = &c->layer[layer];
	int b = (int)blockIdx.y, s = (int)blockIdx.z;
	int t = (int)threadIdx.x, nt = (int)blockDim.x, warp = t / 32, lane = t % 32, nw = nt / 32;
	int n_pos = c->pos[b] + 1, start = s * c->att_split, n8 = n_pos - n_pos % 8;
	if (start >= n_pos)
		return;   // the whole block: this split is past the token's context
	int G = c->n_heads / c->n_kv_heads, ngrp = (G + c->att_heads - 1) / c->att_heads;
	int kh = (int)blockIdx.x / ngrp, h0 = kh * G + (int)blockIdx.x % ngrp * c->att_heads;
	int nh = imin(c->att_heads, kh * G + G - h0);
	int len = imin(start + c->att_split, n_pos) - start, c8 = imin(len, n8 - start);
	int hd = c->head_dim, kvd = c->kv_dim, bs = c->block_size;
	int nch = hd / 8, gi = lane / 8, j = lane % 8;
	const int32_t *bt = c->btab + (size_t)c->seq[b] * c->max_blocks;
	float scale = fbits(c->att_scale_bits);

	for (int i = t; i < nh * hd; i += nt)
		qh[i] = f16f(f32h(q[(size_t)b * c->q_dim + (size_t)h0 * hd + i]));
	__syncthreads();
	for (int p0 = 4 * warp; p0 < len; p0 += 4 * nw) {
		int p = p0 + gi, P = start + p, ok = p < len;
		float kr[ATT_CH];
		if (ok) {
			const uint16_t *kp = L->kc + ((size_t)bt[P / bs] * bs + P % bs) * kvd + (size_t)kh * hd + j;
#pragma unroll
			for (int i = 0; i < ATT_CH; i++)
				kr[i] = i < nch ? f16f(kp[8 * i]) : 0.0f;
		}
		for (int hh = 0; hh < nh; hh++) {
			const float *qq = qh + hh * hd + j;
			float a0 = 0.0f, a1 = 0.0f;
			if (ok) {
				// chunk i into a0 when even, a1 when odd: the CPU's two chains
#pragma unroll
				for (int i = 0; i < ATT_CH; i++)
					if (i < nch) {
						if (i % 2 == 0)
							a0 = fmaf(qq[8 * i], kr[i], a0);
						else
							a1 = fmaf(qq[8 * i], kr[i], a1);
					}
			}
			float v = a0 + a1;
			v += __shfl_xor_sync(FULL, v, 4);
			v += __shfl_xor_sync(FULL, v, 2);
			v += __shfl_xor_sync(FULL, v, 1);
			if (ok && j == 0)
				sc[hh * len + p] = v * scale;
		}
	}
	__syncthreads();
	for (int hh = 0; hh < nh; hh++) {
		float *sh = sc + hh * len, m = -INFINITY;
		for (int i = t; i < len; i += nt)
			m = fmaxf(m, sh[i]);
		m = block_max(m, red);
		for (int i = t; i < len; i += nt)
			sh[i] = start + i < n8 ? exp_cephes(sh[i] - m) : expf(sh[i] - m);
		__syncthreads();
		if (warp == 0) {
			float l = 0.0f;
			if (lane < 8)
				for (int i = lane; i < c8; i += 8)
					l += sh[i];
			l += __shfl_xor_sync(FULL, l, 4);
			l += __shfl_xor_sync(FULL, l, 2);
			l += __shfl_xor_sync(FULL, l, 1);
			if (lane == 0) {
				for (int i = c8 > 0 ? c8 : 0; i < len; i++)
					l += sh[i];
				sum_l[hh] = l;
			}
		}
		__syncthreads();
		float l = sum_l[hh];
		for (int i = t; i < len; i += nt)
			sh[i] /= l;
		if (t == 0) {
			float *part = c->att_part + (((size_t)b * c->n_heads + h0 + hh) * c->att_max_splits + s) * (hd + 2);
			part[hd] = m;
			part[hd + 1] = l;
		}
	}
	__syncthreads();
	for (int d = t; d < hd; d += nt) {
		float acc[DEC_CU_ATT_HEADS];
#pragma unroll
		for (int hh = 0; hh < DEC_CU_ATT_HEADS; hh++)
			acc[hh] = 0.0f;
		for (int p = 0; p < len; p++) {
			int P = start + p;
			float v = f16f(L->vc[((size_t)bt[P / bs] * bs + P % bs) * kvd + (size_t)kh * hd + d]);
#pragma unroll
			for (int hh = 0; hh < DEC_CU_ATT_HEADS; hh++)
				if (hh < nh)
					acc[hh] = fmaf(sc[hh * len + p], v, acc[hh]);
		}
#pragma unroll
		for (int hh = 0; hh < DEC_CU_ATT_HEADS; hh++)
			if (hh < nh)
				c->att_part[(((size_t)b * c->n_heads + h0 + hh) * c->att_max_splits + s) * (hd + 2) + d] = acc[hh];
	}
}

// out[b][h] = Σ_s part_s l_s e^(m_s - M) / Σ_s l_s e^(m_s - M) over the
// token's splits, each part_s normalised within its split; one split is
// copied as it is (grid (n_heads, tokens)); out [nb, q_dim]
extern "C" __global__ void k_att_combine(const struct dec_cu_cfg *c, float *out)
{
	int h = (int)blockIdx.x, b = (int)blockIdx.y, hd = c->head_dim, ns = c->pos[b] / c->att_split + 1;
	const float *part = c->att_part + ((size_t)b * c->n_heads + h) * c->att_max_splits * (size_t)(hd + 2);
	float *o = out + (size_t)b * c->q_dim + (size_t)h * hd;
	float M = -INFINITY, L = 0.0f;

	if (ns == 1) {
		for (int d = (int)threadIdx.x; d < hd; d += (int)blockDim.x)
			o[d] = part[d];
		return;
	}
	for (int s = 0; s < ns; s++)
		M = fmaxf(M, part[(size_t)s * (hd + 2) + hd]);
	for (int s = 0; s < ns; s++)
		L += part[(size_t)s * (hd + 2) + hd + 1] * expf(part[(size_t)s * (hd + 2) + hd] - M);
	for (int d = (int)threadIdx.x; d < hd; d += (int)blockDim.x) {
		float acc = 0.0f;
		for (int s = 0; s < ns; s++) {
			const float *ps = part + (size_t)s * (hd + 2);
			acc += ps[d] * (ps[hd + 1] * expf(ps[hd] - M));
		}
		o[d] = acc / L;
	}
}

#endif
