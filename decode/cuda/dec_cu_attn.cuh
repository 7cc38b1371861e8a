// dec_cu_attn.cuh — attention over the paged f16 KV cache, split over the
// context: a block per (head, token, split of att_split positions) writes
// its split's max, sum of exponentials and unnormalised value sum; a second
// kernel combines a token's splits. The split length is fixed per backend
// (it depends on max_ctx only), so a token's arithmetic depends on its own
// position and cache alone, whatever else is in the step.
//
// As the CPU path: q rounded to f16 meets the f16 keys, scores and the value
// sum in f32 (here summed in another order, and softmax normalised after the
// value sum instead of before: float rounding apart, the same result).
#ifndef DEC_CU_ATTN_CUH
#define DEC_CU_ATTN_CUH

#include "decode/cuda/dec_cu_common.cuh"

// grid (n_heads, tokens, att_max_splits); a block of whole warps
extern "C" __global__ void k_attention(const struct dec_cu_cfg *c, int layer, const float *q)
{
	__shared__ float qh[DEC_CU_MAX_HEAD_DIM];
	__shared__ float sc[DEC_CU_ATT_MAX_SPLIT];
	__shared__ float red[32];
	const struct dec_cu_layer *L = &c->layer[layer];
	int h = (int)blockIdx.x, b = (int)blockIdx.y, s = (int)blockIdx.z;
	int t = (int)threadIdx.x, nt = (int)blockDim.x, warp = t / 32, lane = t % 32, nw = nt / 32;
	int pos = c->pos[b], start = s * c->att_split;
	if (start > pos)
		return;   // the whole block: this split is past the token's context
	int len = imin(start + c->att_split, pos + 1) - start;
	int hd = c->head_dim, kvd = c->kv_dim, bs = c->block_size, kh = h / (c->n_heads / c->n_kv_heads);
	const int32_t *bt = c->btab + (size_t)c->seq[b] * c->max_blocks;
	float scale = fbits(c->att_scale_bits), m = -INFINITY, l = 0.0f;

	for (int i = t; i < hd; i += nt)
		qh[i] = f16f(f32h(q[(size_t)b * c->q_dim + (size_t)h * hd + i]));
	__syncthreads();
	for (int p = warp; p < len; p += nw) {
		int P = start + p;
		const uint16_t *kp = L->kc + ((size_t)bt[P / bs] * bs + P % bs) * kvd + (size_t)kh * hd;
		float sum = 0.0f;
		for (int i = lane; i < hd; i += 32)
			sum += qh[i] * f16f(kp[i]);
		sum = warp_sum(sum);
		if (lane == 0)
			sc[p] = sum * scale;
	}
	__syncthreads();
	for (int i = t; i < len; i += nt)
		m = fmaxf(m, sc[i]);
	m = block_max(m, red);
	for (int i = t; i < len; i += nt) {
		float e = expf(sc[i] - m);
		sc[i] = e;
		l += e;
	}
	l = block_sum(l, red);   // its barriers also publish sc
	float *part = c->att_part + (((size_t)b * c->n_heads + h) * c->att_max_splits + s) * (hd + 2);
	for (int d = t; d < hd; d += nt) {
		float acc = 0.0f;
		for (int p = 0; p < len; p++) {
			int P = start + p;
			acc += sc[p] * f16f(L->vc[((size_t)bt[P / bs] * bs + P % bs) * kvd + (size_t)kh * hd + d]);
		}
		part[d] = acc;
	}
	if (t == 0) {
		part[hd] = m;
		part[hd + 1] = l;
	}
}

// out[b][h] = Σ_s acc_s e^(m_s - M) / Σ_s l_s e^(m_s - M) over the token's
// splits (grid (n_heads, tokens)); out [nb, q_dim]
extern "C" __global__ void k_att_combine(const struct dec_cu_cfg *c, float *out)
{
	int h = (int)blockIdx.x, b = (int)blockIdx.y, hd = c->head_dim, ns = c->pos[b] / c->att_split + 1;
	const float *part = c->att_part + ((size_t)b * c->n_heads + h) * c->att_max_splits * (size_t)(hd + 2);
	float M = -INFINITY, L = 0.0f;

	for (int s = 0; s < ns; s++)
		M = fmaxf(M, part[(size_t)s * (hd + 2) + hd]);
	for (int s = 0; s < ns; s++)
		L += part[(size_t)s * (hd + 2) + hd + 1] * expf(part[(size_t)s * (hd + 2) + hd] - M);
	for (int d = (int)threadIdx.x; d < hd; d += (int)blockDim.x) {
		float acc = 0.0f;
		for (int s = 0; s < ns; s++)
			acc += part[(size_t)s * (hd + 2) + d] * expf(part[(size_t)s * (hd + 2) + hd] - M);
		out[(size_t)b * c->q_dim + (size_t)h * hd + d] = acc / L;
	}
}

#endif
