// dec_cu_attn.cuh — attention over the paged f16 KV cache, split over the
// context: a block per (kv head's group of query heads, token or prefill
// tile of tokens, split of att_split positions) writes, per token and head,
// its split's max, sum of exponentials and normalised value sum; a second
// kernel combines a token's splits. The split length is fixed per backend
// (it depends on max_ctx only), so a token's arithmetic depends on its own
// position and cache alone, whatever else is in the step.
//
// As the CPU path: q rounded to f16 meets the f16 keys, scores and the value
// sum in f32.
#ifndef DEC_CU_ATTN_CUH
#define DEC_CU_ATTN_CUH

#include "decode/cuda/dec_cu_common.cuh"

// A block serves att_heads query heads of one kv head's group (groups =
// ceil(group size / att_heads)), so a key or value is read once for them
// all: with GQA (SmolLM2: 3 query heads a kv head; llama 3: 4) that divides
// the cache traffic by the group size. A prefill block (k_att_tile) also
// serves up to att_tq consecutive tokens of one sequence, so a key is read
// once for the tile's tokens too.
//
// Within a split, per (token, head), the CPU's AVX2 arithmetic (dec_simd.c):
// a score is hsum8 of two 8-lane FMA chains over the head (eight lanes of a
// warp per position, their sums paired as hsum8 pairs them); e^(s - max) is
// the table's exp for the context's whole 8-value chunks and expf for the
// rest; their sum runs 8 lanes over the chunks, hsum8, then the tail in
// order; the weights are divided by it; the value sum is one FMA chain per
// dimension over the positions in order. Sharing a key between heads or
// tokens changes no (token, head)'s operations or their order. So a context
// of one split (up to att_split positions) gets the CPU's bits, in a decode
// step or a prefill tile alike; longer ones are merged by k_att_combine
// (float rounding apart, the same result).
#define ATT_CH (DEC_CU_MAX_HEAD_DIM / 8)

// Split s of the attention of tokens b0 .. b0 + n - 1 (one sequence, at
// consecutive positions pos[b0] + i) for the block's heads: each (token,
// head)'s split max, sum and normalised value sum into att_part. qh: n
// tokens' att_heads * head_dim floats; sc: n * att_heads rows of up to
// att_split floats (the scores, then the weights), both in shared memory.
static __device__ __forceinline__ void att_tokens(const struct dec_cu_cfg *c, int layer, const float *q, int b0,
						  int n, int s, float *qh, float *sc)
{
	const struct dec_cu_layer *L = &c->layer[layer];
	int t = (int)threadIdx.x, nt = (int)blockDim.x, warp = t / 32, lane = t % 32, nw = nt / 32;
	int pos0 = c->pos[b0], start = s * c->att_split, end = start + c->att_split;
	if (start >= pos0 + n)
		return;   // the whole block: this split is past the last token's context
	int i0 = start > pos0 ? start - pos0 : 0;   // the first token with positions in this split
	int G = c->n_heads / c->n_kv_heads, ngrp = (G + c->att_heads - 1) / c->att_heads;
	int kh = (int)blockIdx.x / ngrp, h0 = kh * G + (int)blockIdx.x % ngrp * c->att_heads;
	int nh = imin(c->att_heads, kh * G + G - h0);
	int len = imin(end, pos0 + n) - start;   // the last token's positions in the split: the row stride
	int hd = c->head_dim, kvd = c->kv_dim, bs = c->block_size, qs = nh * hd;
	int nch = hd / 8, gi = lane / 8, j = lane % 8;
	const int32_t *bt = c->btab + (size_t)c->seq[b0] * c->max_blocks;
	float scale = fbits(c->att_scale_bits);

	for (int x = t; x < (n - i0) * qs; x += nt) {
		int i = i0 + x / qs, r = x % qs;
		qh[i * qs + r] = f16f(f32h(q[(size_t)(b0 + i) * c->q_dim + (size_t)h0 * hd + r]));
	}
	__syncthreads();
	// scores: a warp takes 4 positions at a time, 8 lanes each; a key is
	// loaded once for every token and head
	for (int p0 = 4 * warp; p0 < len; p0 += 4 * nw) {
		int p = p0 + gi, P = start + p, ok = p < len;
		float kr[ATT_CH];
		if (ok) {
			const uint16_t *kp = L->kc + ((size_t)bt[P / bs] * bs + P % bs) * kvd + (size_t)kh * hd + j;
#pragma unroll
			for (int i = 0; i < ATT_CH; i++)
				kr[i] = i < nch ? f16f(kp[8 * i]) : 0.0f;
		}
		for (int i = i0; i < n; i++) {
			int li = imin(end, pos0 + i + 1) - start, oki = ok && p < li;
			if (p0 >= li)
				continue;   // uniform across the warp: none of its positions is in token i's context
			for (int hh = 0; hh < nh; hh++) {
				const float *qq = qh + i * qs + hh * hd + j;
				float a0 = 0.0f, a1 = 0.0f;
				if (oki) {
					// chunk k into a0 when even, a1 when odd: the CPU's two chains
#pragma unroll
					for (int k = 0; k < ATT_CH; k++)
						if (k < nch) {
							if (k % 2 == 0)
								a0 = fmaf(qq[8 * k], kr[k], a0);
							else
								a1 = fmaf(qq[8 * k], kr[k], a1);
						}
				}
				float v = a0 + a1;
				v += __shfl_xor_sync(FULL, v, 4);
				v += __shfl_xor_sync(FULL, v, 2);
				v += __shfl_xor_sync(FULL, v, 1);
				if (oki && j == 0)
					sc[(size_t)(i * nh + hh) * len + p] = v * scale;
			}
		}
	}
	__syncthreads();
	// softmax: a warp per (token, head) row
	for (int r = i0 * nh + warp; r < n * nh; r += nw) {
		int i = r / nh, hh = r % nh, li = imin(end, pos0 + i + 1) - start;
		int n_pos = pos0 + i + 1, n8 = n_pos - n_pos % 8, c8 = imin(li, n8 - start);
		float *sh = sc + (size_t)r * len, m = -INFINITY, l = 0.0f;
		for (int k = lane; k < li; k += 32)
			m = fmaxf(m, sh[k]);
		m = warp_max(m);
		for (int k = lane; k < li; k += 32)
			sh[k] = start + k < n8 ? exp_cephes(sh[k] - m) : expf(sh[k] - m);
		__syncwarp();
		if (lane < 8)
			for (int k = lane; k < c8; k += 8)
				l += sh[k];
		l += __shfl_xor_sync(FULL, l, 4);
		l += __shfl_xor_sync(FULL, l, 2);
		l += __shfl_xor_sync(FULL, l, 1);
		if (lane == 0)
			for (int k = c8 > 0 ? c8 : 0; k < li; k++)
				l += sh[k];
		l = __shfl_sync(FULL, l, 0);
		for (int k = lane; k < li; k += 32)
			sh[k] /= l;
		if (lane == 0) {
			float *part = c->att_part +
				      (((size_t)(b0 + i) * c->n_heads + h0 + hh) * c->att_max_splits + s) * (hd + 2);
			part[hd] = m;
			part[hd + 1] = l;
		}
	}
	__syncthreads();
	// values: a thread per (token, dimension), one FMA chain per head
	for (int x = t; x < (n - i0) * hd; x += nt) {
		int i = i0 + x / hd, d = x % hd, li = imin(end, pos0 + i + 1) - start;
		const float *si = sc + (size_t)i * nh * len;
		float acc[DEC_CU_ATT_HEADS];
#pragma unroll
		for (int hh = 0; hh < DEC_CU_ATT_HEADS; hh++)
			acc[hh] = 0.0f;
		for (int p = 0; p < li; p++) {
			int P = start + p;
			float v = f16f(L->vc[((size_t)bt[P / bs] * bs + P % bs) * kvd + (size_t)kh * hd + d]);
#pragma unroll
			for (int hh = 0; hh < DEC_CU_ATT_HEADS; hh++)
				if (hh < nh)
					acc[hh] = fmaf(si[(size_t)hh * len + p], v, acc[hh]);
		}
#pragma unroll
		for (int hh = 0; hh < DEC_CU_ATT_HEADS; hh++)
			if (hh < nh)
				c->att_part[(((size_t)(b0 + i) * c->n_heads + h0 + hh) * c->att_max_splits + s) * (hd + 2) +
					    d] = acc[hh];
	}
}

// Decode: grid (n_kv_heads * groups, tokens, att_max_splits), a token a
// block; its att_heads * att_split scores fit DEC_CU_ATT_MAX_SPLIT floats.
extern "C" __global__ void k_attention(const struct dec_cu_cfg *c, int layer, const float *q)
{
	__shared__ float qh[DEC_CU_ATT_HEADS * DEC_CU_MAX_HEAD_DIM];
	__shared__ float sc[DEC_CU_ATT_MAX_SPLIT];

	att_tokens(c, layer, q, (int)blockIdx.y, 1, (int)blockIdx.z, qh, sc);
}

// Prefill: grid (n_kv_heads * groups, tiles, att_max_splits), a tile a
// block: att_tile[y] = first token << 8 | tokens (at most att_tq, one
// sequence, consecutive positions; set_step makes the tiles). Dynamic
// shared memory: att_tq * att_heads * (head_dim + min(att_split, max_ctx))
// floats (dec_be_cuda_open.c sizes att_tq to the device's opt-in limit).
extern "C" __global__ void k_att_tile(const struct dec_cu_cfg *c, int layer, const float *q)
{
	DEC_CU_DYN_SMEM(float, dyn);
	int tile = c->att_tile[blockIdx.y];

	att_tokens(c, layer, q, tile >> 8, tile & 255, (int)blockIdx.z, dyn,
		   dyn + (size_t)c->att_tq * c->att_heads * c->head_dim);
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
