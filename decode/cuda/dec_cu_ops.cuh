// dec_cu_ops.cuh — the decoder's non-matrix kernels: activation encodings,
// embedding lookup, RMS norm, the q/k/v step before attention (biases,
// per-head norms, RoPE, the f16 cache store), residual add, SwiGLU, gather,
// and the copy of a KV block. Each computes what the CPU path computes
// (decode/engine/dec_forward.c, dec_ref.c, dec_quant.c) with the same rounding
// steps; where a sum's order differs it says so.
#ifndef DEC_CU_OPS_CUH
#define DEC_CU_OPS_CUH

#include "decode/cuda/dec_cu_common.cuh"
#include "decode/cuda/dec_cu_mmv.cuh"

// ---- activation encodings (dec_quant.c's quantizers) ---------------------

// Q8_0 / Q8_1: a warp per 32-value block (grid x: cols / 128, y: tokens).
// amax, id = 127 / amax, q = round-half-even(x id), d = fp16(amax / 127);
// Q8_1 adds s = fp16(d · Σq) with d unrounded. Scales are stored as the f32
// value of their fp16, which is what the CPU's dot products read.
template <int Q81>
static __device__ __forceinline__ void quant_q8(const float *x, int8_t *qs, float *d, float *s, int cols)
{
	int b = (int)blockIdx.y, i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i >= cols)
		return;   // cols % 32 == 0: whole warps
	float v = x[(size_t)b * cols + i], a = warp_max(fabsf(v)), id = a != 0.0f ? 127.f / a : 0.f;
	float dq = a / 127.f;
	int q = __float2int_rn(v * id);
	qs[(size_t)b * cols + i] = (int8_t)q;
	if (Q81) {
		int sum = warp_sum_i(q);
		if (i % 32 == 0)
			s[(size_t)b * (cols / 32) + i / 32] = f16f(f32h(dq * (float)sum));
	}
	if (i % 32 == 0)
		d[(size_t)b * (cols / 32) + i / 32] = f16f(f32h(dq));
}

extern "C" __global__ void k_quant_q8_0(const float *x, int8_t *qs, float *d, int cols)
{
	quant_q8<0>(x, qs, d, nullptr, cols);
}
extern "C" __global__ void k_quant_q8_1(const float *x, int8_t *qs, float *d, float *s, int cols)
{
	quant_q8<1>(x, qs, d, s, cols);
}

// Q8_K: a warp per 256-value block, 8 values a lane (grid x: cols / 1024).
// d = 1 / id kept in f32, q clamped to ±127, as dec_quant_q8_k.
extern "C" __global__ void k_quant_q8_k(const float *x, int8_t *qs, float *d, int cols)
{
	int b = (int)blockIdx.y, blk = (int)(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32), lane = (int)threadIdx.x % 32;
	if (blk * 256 >= cols)
		return;
	const float *xb = x + (size_t)b * cols + 256 * (size_t)blk;
	float v[8], a = 0.0f;
	for (int k = 0; k < 8; k++) {
		v[k] = xb[32 * k + lane];
		a = fmaxf(a, fabsf(v[k]));
	}
	a = warp_max(a);
	float id = a != 0.0f ? 127.f / a : 0.f;
	for (int k = 0; k < 8; k++) {
		int q = __float2int_rn(v[k] * id);
		qs[(size_t)b * cols + 256 * (size_t)blk + 32 * k + lane] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
	}
	if (lane == 0)
		d[(size_t)b * (cols / 256) + blk] = a != 0.0f ? 1.f / id : 0.f;
}

// f16 / bf16 rounding of n values (grid: n / 256 rounded up).
extern "C" __global__ void k_quant_f16(const float *x, uint16_t *y, int64_t n)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = f32h(x[i]);
}
extern "C" __global__ void k_quant_bf16(const float *x, uint16_t *y, int64_t n)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = f32bf(x[i]);
}

// ---- embedding: a token's row dequantized (dec_dequant_row, bit for bit) --

// Value j of a row of type t.
static __device__ float deq(int t, const uint8_t *row, int j)
{
	switch (t) {
	case 0: /* F32 */ return ((const float *)row)[j];
	case 1: /* F16 */ return f16f(((const uint16_t *)row)[j]);
	case 30: /* BF16 */ return bf16f(((const uint16_t *)row)[j]);
	case 8: { /* Q8_0 */
		const uint8_t *b = row + (size_t)(j / 32) * 34;
		return f16f((uint16_t)ld16(b)) * (float)(int8_t)b[2 + j % 32];
	}
	case 2: { /* Q4_0 */
		const uint8_t *b = row + (size_t)(j / 32) * 18;
		int k = j % 32, q = k < 16 ? (b[2 + k] & 0xF) : (b[2 + k - 16] >> 4);
		return f16f((uint16_t)ld16(b)) * (float)(q - 8);
	}
	case 6: { /* Q5_0 */
		const uint8_t *b = row + (size_t)(j / 32) * 22;
		uint32_t qh = (uint32_t)ld32a2(b + 2);
		int k = j % 32, q = (k < 16 ? (b[6 + k] & 0xF) : (b[6 + k - 16] >> 4)) | (int)(((qh >> k) & 1) << 4);
		return f16f((uint16_t)ld16(b)) * (float)(q - 16);
	}
	case 3: { /* Q4_1 */
		const uint8_t *b = row + (size_t)(j / 32) * 20;
		int k = j % 32, q = k < 16 ? (b[4 + k] & 0xF) : (b[4 + k - 16] >> 4);
		return f16f((uint16_t)ld16(b)) * (float)q + f16f((uint16_t)ld16(b + 2));
	}
	case 7: { /* Q5_1 */
		const uint8_t *b = row + (size_t)(j / 32) * 24;
		uint32_t qh = (uint32_t)ld32a2(b + 4);
		int k = j % 32, q = (k < 16 ? (b[8 + k] & 0xF) : (b[8 + k - 16] >> 4)) | (int)(((qh >> k) & 1) << 4);
		return f16f((uint16_t)ld16(b)) * (float)q + f16f((uint16_t)ld16(b + 2));
	}
	case 12: { /* Q4_K */
		const uint8_t *b = row + (size_t)(j / 256) * 144;
		int k = j % 256, g = k / 64, r = k % 64, sub = 2 * g + (r >= 32), sc, m;
		int q = r < 32 ? (b[16 + 32 * g + r] & 0xF) : (b[16 + 32 * g + r - 32] >> 4);
		q4k_scale_min(sub, b + 4, sc, m);
		return f16f((uint16_t)ld16(b)) * (float)sc * (float)q - f16f((uint16_t)ld16(b + 2)) * (float)m;
	}
	case 14: { /* Q6_K */
		const uint8_t *b = row + (size_t)(j / 256) * 210;
		int k = j % 256, n = k / 128, r = k % 128, kk = r / 32, l = r % 32;
		int lo = b[64 * n + l + 32 * (kk & 1)], hi = (b[128 + 32 * n + l] >> (2 * kk)) & 3;
		int v = ((kk >= 2 ? lo >> 4 : lo & 0xF) | (hi << 4)) - 32;
		return f16f((uint16_t)ld16(b + 208)) * (float)(int8_t)b[192 + k / 16] * (float)v;
	}
	case 10: { /* Q2_K: d · sc · q − dmin · m */
		const uint8_t *b = row + (size_t)(j / 256) * 84;
		int k = j % 256, sc = b[k / 16], u = (b[16 + 32 * (k / 128) + k % 32] >> (2 * (k % 128 / 32))) & 3;
		float dl = f16f((uint16_t)ld16(b + 80)) * (float)(sc & 0xF);
		float ml = f16f((uint16_t)ld16(b + 82)) * (float)(sc >> 4);
		return dl * (float)u - ml;
	}
	case 11: { /* Q3_K: d · sc · (q − 4) */
		const uint8_t *b = row + (size_t)(j / 256) * 110;
		int k = j % 256, n = k / 128, jj = k % 128 / 32, r = k % 32;
		int u = ((b[32 + 32 * n + r] >> (2 * jj)) & 3) | ((b[r] >> (4 * n + jj)) & 1) << 2;
		float dl = f16f((uint16_t)ld16(b + 108)) * (float)q3k_scale(b + 96, k / 16);
		return dl * (float)(u - 4);
	}
	case 13: { /* Q5_K: d · sc · q − dmin · m */
		const uint8_t *b = row + (size_t)(j / 256) * 176;
		int k = j % 256, s = k / 32, l = k % 32, sc, m;
		int u = ((b[48 + 32 * (s / 2) + l] >> (4 * (s & 1))) & 0xF) | ((b[16 + l] >> s) & 1) << 4;
		q4k_scale_min(s, b + 4, sc, m);
		float dl = f16f((uint16_t)ld16(b)) * (float)sc, ml = f16f((uint16_t)ld16(b + 2)) * (float)m;
		return dl * (float)u - ml;
	}
	case 20: { /* IQ4_NL: d · kv[q] */
		const uint8_t *b = row + (size_t)(j / 32) * 18;
		int k = j % 32, q = k < 16 ? (b[2 + k] & 0xF) : (b[2 + k - 16] >> 4);
		return f16f((uint16_t)ld16(b)) * (float)(int8_t)iq4_val((uint32_t)q);
	}
	case 23: { /* IQ4_XS: d · sc · kv[q] */
		const uint8_t *b = row + (size_t)(j / 256) * 136;
		int k = j % 256, jb = k / 32, l = k % 32, q = (b[8 + 16 * jb + l % 16] >> (l < 16 ? 0 : 4)) & 0xF;
		float dl = f16f((uint16_t)ld16(b)) * (float)iq4xs_scale(b, jb);
		return dl * (float)(int8_t)iq4_val((uint32_t)q);
	}
	}
	return 0.0f; // unreachable: the host refuses other types at open
}

// x[b] = tok_embd[tok[b]] (grid: tokens; a thread per value, strided)
extern "C" __global__ void k_embed(const struct dec_cu_cfg *c, float *x)
{
	int b = (int)blockIdx.x;
	const uint8_t *row = c->emb + (size_t)c->tok[b] * (size_t)c->emb_row_bytes;
	for (int j = (int)threadIdx.x; j < c->dim; j += (int)blockDim.x)
		x[(size_t)b * c->dim + j] = deq(c->emb_type, row, j);
}

// ---- RMS norm: y = x / rms(x) · w, the sum of squares in double ----------

// The CPU's dec_rmsnorm: ss = Σ x² in double (here in another order; a
// double sum of floats' squares rounds to the same scale but in rare ties),
// scale = (float)(1 / sqrt(ss / n + eps)), y = x · scale · w in f32.
static __device__ __forceinline__ void rms_row(float *y, const float *x, const float *w, int n, float eps,
					       double *red)
{
	double ss = 0.0;
	for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x)
		ss += (double)x[i] * x[i];
	ss = block_sum_d(ss, red);
	float scale = (float)(1.0 / sqrt(ss / n + (double)eps));
	for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x)
		y[i] = x[i] * scale * w[i];
}

// y[b] = rmsnorm(x[b]) · w, rows of n (grid: tokens)
extern "C" __global__ void k_rmsnorm(const struct dec_cu_cfg *c, float *y, const float *x, const float *w, int n)
{
	__shared__ double red[32];
	size_t b = blockIdx.x;
	rms_row(y + b * n, x + b * n, w, n, fbits(c->eps_bits), red);
}

// ---- q, k, v before attention (grid: tokens) ------------------------------

// A warp's per-head RMS norm, in place (the whole head read before any write).
static __device__ __forceinline__ void rms_head(float *v, const float *w, int hd, float eps)
{
	int lane = (int)threadIdx.x % 32;
	double ss = 0.0;
	for (int i = lane; i < hd; i += 32)
		ss += (double)v[i] * v[i];
	ss = warp_sum_d(ss);
	float scale = (float)(1.0 / sqrt(ss / hd + (double)eps));
	__syncwarp();
	for (int i = lane; i < hd; i += 32)
		v[i] = v[i] * scale * w[i];
}

// The rotation of pair i of a head at the token's position (dec_rope).
static __device__ __forceinline__ void rope_pair(float *v, const float *cs, int i, int half, int neox)
{
	float c = cs[2 * i], s = cs[2 * i + 1];
	int a = neox ? i : 2 * i, bb = neox ? i + half : 2 * i + 1;
	float x0 = v[a], x1 = v[bb];
	v[a] = x0 * c - x1 * s;
	v[bb] = x0 * s + x1 * c;
}

// Per token: biases (qwen2), per-head norms (qwen3), RoPE, then k and v
// stored as f16 at the token's cache slot. q [nb, q_dim], k, v [nb, kv_dim].
extern "C" __global__ void k_qkv_post(const struct dec_cu_cfg *c, int layer, float *q, float *k, float *v)
{
	const struct dec_cu_layer *L = &c->layer[layer];
	int b = (int)blockIdx.x, t = (int)threadIdx.x, nt = (int)blockDim.x;
	int hd = c->head_dim, qd = c->q_dim, kvd = c->kv_dim, half = c->rope_dim / 2;
	int warp = t / 32, nw = nt / 32, pos = c->pos[b];
	float eps = fbits(c->eps_bits);
	float *qb = q + (size_t)b * qd, *kb = k + (size_t)b * kvd, *vb = v + (size_t)b * kvd;
	const float *cs = c->rope_cs + (size_t)pos * c->rope_dim;

	for (int i = t; L->bq && i < qd; i += nt)
		qb[i] += L->bq[i];
	for (int i = t; L->bk && i < kvd; i += nt)
		kb[i] += L->bk[i];
	for (int i = t; L->bv && i < kvd; i += nt)
		vb[i] += L->bv[i];
	__syncthreads();
	for (int h = warp; h < c->n_heads + c->n_kv_heads; h += nw)
		if (h < c->n_heads && L->q_norm)
			rms_head(qb + (size_t)h * hd, L->q_norm, hd, eps);
		else if (h >= c->n_heads && L->k_norm)
			rms_head(kb + (size_t)(h - c->n_heads) * hd, L->k_norm, hd, eps);
	__syncthreads();
	for (int i = t; i < (c->n_heads + c->n_kv_heads) * half; i += nt) {
		int h = i / half, p = i % half;
		rope_pair(h < c->n_heads ? qb + (size_t)h * hd : kb + (size_t)(h - c->n_heads) * hd, cs, p, half,
			  c->rope_neox);
	}
	__syncthreads();
	{
		int blk = c->btab[(size_t)c->seq[b] * c->max_blocks + pos / c->block_size];
		size_t at = ((size_t)blk * c->block_size + pos % c->block_size) * kvd;
		for (int i = t; i < kvd; i += nt) {
			L->kc[at + i] = f32h(kb[i]);
			L->vc[at + i] = f32h(vb[i]);
		}
	}
}

// ---- elementwise ----------------------------------------------------------

extern "C" __global__ void k_add(float *x, const float *y, int64_t n)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += y[i];
}

// g = silu(g) · u over rows of `hidden`, as the CPU's AVX2 silu_mul: g /
// (1 + e^-g) · u with its e^x for each row's whole 8-value chunks, expf
// for the rest
extern "C" __global__ void k_silu_mul(float *g, const float *u, int64_t n, int hidden)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float x = g[i], e = i % hidden < hidden - hidden % 8 ? exp_cephes(0.0f - x) : expf(-x);
		g[i] = x / (1.0f + e) * u[i];
	}
}

// dst[i] = src[out[i]], rows of width (grid: the step's n_out)
extern "C" __global__ void k_gather(const struct dec_cu_cfg *c, float *dst, const float *src, int width)
{
	size_t i = blockIdx.x, from = (size_t)c->out[i];
	for (int j = (int)threadIdx.x; j < width; j += (int)blockDim.x)
		dst[i * width + j] = src[from * width + j];
}

// KV block src copied to dst, K and V of every layer (grid: layers × 2)
extern "C" __global__ void k_kv_copy(const struct dec_cu_cfg *c, int src, int dst)
{
	const struct dec_cu_layer *L = &c->layer[blockIdx.x];
	uint16_t *p = blockIdx.y ? L->vc : L->kc;
	size_t n = (size_t)c->block_size * c->kv_dim;
	for (size_t i = threadIdx.x; i < n; i += blockDim.x)
		p[(size_t)dst * n + i] = p[(size_t)src * n + i];
}

#endif
