// dec_cu_mmv.cuh — matrix × vector(s) for every weight type, reading the
// file's block layout and dequantizing in registers.
//
// A warp computes one output row; a block of DEC_CU_THREADS threads, four
// rows. The row is cut into slices (8 values for the 32-value block types
// and the float types, 32 for the K types' 256-value super-blocks), lane l
// taking slices l, l + 32, ...; a slice's weights are loaded and unpacked
// once and serve every token of the pass (NT tokens, one accumulator each),
// so a weight byte is read once per NT tokens. The lanes' partial sums meet
// in a fixed xor tree. Hence a token's result depends on its own input and
// the row's length only: not on NT, nor on the other tokens.
//
// Activations meet the weights in the encoding the CPU path gives them
// (dec_quant.h: Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for
// Q4_K/Q6_K, f16 for F16, bf16 for BF16, f32 for F32), quantized by the
// k_quant_* kernels exactly as the CPU quantizes them, and each slice's
// integer sum is exact (dp4a); the CPU's per-block float step becomes a
// per-slice one and the blocks are summed in another order, so a product
// differs from the CPU's by float rounding only.
#ifndef DEC_CU_MMV_CUH
#define DEC_CU_MMV_CUH

#include "decode/cuda/dec_cu_common.cuh"

// Per token: the encoded activation row.
struct act_ref {
	const int8_t *q;    // [cols] (16-bit activations: as uint16_t [cols]; f32: float [cols])
	const float *d;     // [cols / block]
	const float *s;     // Q8_1: [cols / 32]
};

// ---- 32-value block types: 4 slices of 8 values a block -----------------

// Q8_0: d, 32 int8. Slice p: values 8p .. 8p + 7.
struct w_q8_0 {
	static constexpr int VS = 8, QK = 32, BYTES = 34;
	struct regs { int w0, w1; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const uint8_t *b = row + (size_t)(s / 4) * BYTES;
		int p = s % 4;
		r.d = f16f((uint16_t)ld16(b));
		r.w0 = ld32a2(b + 2 + 8 * p);
		r.w1 = ld32a2(b + 2 + 8 * p + 4);
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		const int *q = (const int *)(a.q + 8 * s);
		int sum = __dp4a(r.w0, q[0], __dp4a(r.w1, q[1], 0));
		return r.d * a.d[s / 4] * (float)sum;
	}
};

// The nibble types: qs[16] hold values j (low nibble) and 16 + j (high).
// Slice p: bytes 4p .. 4p + 3, i.e. values 4p .. 4p + 3 and 20p .. (16 + 4p + 3).
static __device__ __forceinline__ int q5_spread(uint32_t bits4)
{
	return (int)(((bits4 & 1u) << 4) | ((bits4 & 2u) << 11) | ((bits4 & 4u) << 18) | ((bits4 & 8u) << 25));
}
static __device__ __forceinline__ int dot_nib(int lo, int hi, const act_ref &a, int s)
{
	const int8_t *q = a.q + 32 * (s / 4) + 4 * (s % 4);
	return __dp4a(lo, *(const int *)q, __dp4a(hi, *(const int *)(q + 16), 0));
}

struct w_q4_0 {
	static constexpr int VS = 8, QK = 32, BYTES = 18;
	struct regs { int lo, hi; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const uint8_t *b = row + (size_t)(s / 4) * BYTES;
		uint32_t q = (uint32_t)ld32a2(b + 2 + 4 * (s % 4));
		r.d = f16f((uint16_t)ld16(b));
		r.lo = (int)__vsub4(q & 0x0F0F0F0Fu, 0x08080808u);
		r.hi = (int)__vsub4((q >> 4) & 0x0F0F0F0Fu, 0x08080808u);
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		return r.d * a.d[s / 4] * (float)dot_nib(r.lo, r.hi, a, s);
	}
};

struct w_q5_0 {
	static constexpr int VS = 8, QK = 32, BYTES = 22;
	struct regs { int lo, hi; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const uint8_t *b = row + (size_t)(s / 4) * BYTES;
		int p = s % 4;
		uint32_t qh = (uint32_t)ld32a2(b + 2), q = (uint32_t)ld32a2(b + 6 + 4 * p);
		r.d = f16f((uint16_t)ld16(b));
		r.lo = (int)__vsub4((q & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (4 * p)) & 0xF), 0x10101010u);
		r.hi = (int)__vsub4(((q >> 4) & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (16 + 4 * p)) & 0xF),
				    0x10101010u);
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		return r.d * a.d[s / 4] * (float)dot_nib(r.lo, r.hi, a, s);
	}
};

// The _1 types: value d * q + m, q unsigned; the block's m * s term is
// added by its first slice.
struct w_q4_1 {
	static constexpr int VS = 8, QK = 32, BYTES = 20;
	struct regs { int lo, hi; float d, m; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const uint8_t *b = row + (size_t)(s / 4) * BYTES;
		uint32_t q = (uint32_t)ld32a2(b + 4 + 4 * (s % 4));
		r.d = f16f((uint16_t)ld16(b));
		r.m = s % 4 ? 0.0f : f16f((uint16_t)ld16(b + 2));
		r.lo = (int)(q & 0x0F0F0F0Fu);
		r.hi = (int)((q >> 4) & 0x0F0F0F0Fu);
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		return r.d * a.d[s / 4] * (float)dot_nib(r.lo, r.hi, a, s) + r.m * a.s[s / 4];
	}
};

struct w_q5_1 {
	static constexpr int VS = 8, QK = 32, BYTES = 24;
	struct regs { int lo, hi; float d, m; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const uint8_t *b = row + (size_t)(s / 4) * BYTES;
		int p = s % 4;
		uint32_t qh = (uint32_t)ld32a2(b + 4), q = (uint32_t)ld32a2(b + 8 + 4 * p);
		r.d = f16f((uint16_t)ld16(b));
		r.m = p ? 0.0f : f16f((uint16_t)ld16(b + 2));
		r.lo = (int)((q & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (4 * p)) & 0xF));
		r.hi = (int)(((q >> 4) & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (16 + 4 * p)) & 0xF));
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		return r.d * a.d[s / 4] * (float)dot_nib(r.lo, r.hi, a, s) + r.m * a.s[s / 4];
	}
};

// ---- K types: 8 slices of 32 values a 256-value super-block -------------

// Q4_K: d, dmin, 12 bytes of 6-bit scales and mins, qs[128]; slice p
// covers qs bytes 32j + 16h .. + 15 (j = p / 2, h = p % 2): low nibbles are
// values 64j + 16h + i of sub-block 2j, high nibbles 64j + 32 + 16h + i of
// sub-block 2j + 1. The term is d_act (d sumi - dmin summ), as the CPU's.
static __device__ __forceinline__ void q4k_scale_min(int j, const uint8_t *q, int &d, int &m)
{
	if (j < 4) {
		d = q[j] & 63;
		m = q[j + 4] & 63;
	} else {
		d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
		m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}

struct w_q4_k {
	static constexpr int VS = 32, QK = 256, BYTES = 144;
	struct regs { int lo[4], hi[4]; int sc0, sc1, m0, m1; float d, dmin; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const uint8_t *b = row + (size_t)(s / 8) * BYTES;
		int p = s % 8, j = p / 2, h = p % 2;
		const uint8_t *sc = b + 4;
		const uint4 q = *(const uint4 *)(b + 16 + 32 * j + 16 * h);
		uint32_t w[4] = { q.x, q.y, q.z, q.w };
		r.d = f16f((uint16_t)ld16(b));
		r.dmin = f16f((uint16_t)ld16(b + 2));
		q4k_scale_min(2 * j, sc, r.sc0, r.m0);
		q4k_scale_min(2 * j + 1, sc, r.sc1, r.m1);
		for (int k = 0; k < 4; k++) {
			r.lo[k] = (int)(w[k] & 0x0F0F0F0Fu);
			r.hi[k] = (int)((w[k] >> 4) & 0x0F0F0F0Fu);
		}
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		int p = s % 8, j = p / 2, h = p % 2;
		const int *q = (const int *)(a.q + 256 * (s / 8) + 64 * j + 16 * h);
		int acc0 = 0, acc1 = 0, bs0 = 0, bs1 = 0;
		for (int k = 0; k < 4; k++) {
			acc0 = __dp4a(r.lo[k], q[k], acc0);
			acc1 = __dp4a(r.hi[k], q[k + 8], acc1);
			bs0 = __dp4a(0x01010101, q[k], bs0);
			bs1 = __dp4a(0x01010101, q[k + 8], bs1);
		}
		int sumi = r.sc0 * acc0 + r.sc1 * acc1, summ = r.m0 * bs0 + r.m1 * bs1;
		return a.d[s / 8] * (r.d * (float)sumi - r.dmin * (float)summ);
	}
};

// Q6_K: ql[128], qh[64], scales[16] (int8), d. Slice p: half n = p / 4,
// l in l0 .. l0 + 7 (l0 = 8 (p % 4)), the four values 128n + 32k + l
// (k = 0..3); value k's low bits are ql[64n + l + 32 (k & 1)] (low nibble
// for k < 2), its high bits (qh[32n + l] >> 2k) & 3; value - 32.
struct w_q6_k {
	static constexpr int VS = 32, QK = 256, BYTES = 210;
	struct regs { int w[4][2]; int sc[4]; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const uint8_t *b = row + (size_t)(s / 8) * BYTES;
		int p = s % 8, n = p / 4, l0 = 8 * (p % 4);
		r.d = f16f((uint16_t)ld16(b + 208));
		for (int i = 0; i < 2; i++) {
			uint32_t qa = (uint32_t)ld32a2(b + 64 * n + l0 + 4 * i);
			uint32_t qb = (uint32_t)ld32a2(b + 64 * n + 32 + l0 + 4 * i);
			uint32_t qh = (uint32_t)ld32a2(b + 128 + 32 * n + l0 + 4 * i);
			r.w[0][i] = (int)__vsub4((qa & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4), 0x20202020u);
			r.w[1][i] = (int)__vsub4((qb & 0x0F0F0F0Fu) | (((qh >> 2) & 0x03030303u) << 4), 0x20202020u);
			r.w[2][i] = (int)__vsub4(((qa >> 4) & 0x0F0F0F0Fu) | (((qh >> 4) & 0x03030303u) << 4), 0x20202020u);
			r.w[3][i] = (int)__vsub4(((qb >> 4) & 0x0F0F0F0Fu) | (((qh >> 6) & 0x03030303u) << 4), 0x20202020u);
		}
		for (int k = 0; k < 4; k++)
			r.sc[k] = (int8_t)b[192 + 8 * n + 2 * k + (l0 >= 16)];
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		int p = s % 8, n = p / 4, l0 = 8 * (p % 4), sumi = 0;
		const int8_t *q = a.q + 256 * (s / 8) + 128 * n + l0;
		for (int k = 0; k < 4; k++) {
			const int *qk = (const int *)(q + 32 * k);
			sumi += r.sc[k] * __dp4a(r.w[k][0], qk[0], __dp4a(r.w[k][1], qk[1], 0));
		}
		return r.d * a.d[s / 8] * (float)sumi;
	}
};

// ---- float types: slices of 8 values ------------------------------------

struct w_f16 {
	static constexpr int VS = 8, QK = 1, BYTES = 2;
	struct regs { float w[8]; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		uint4 v = *(const uint4 *)(row + 16 * (size_t)s);
		uint32_t u[4] = { v.x, v.y, v.z, v.w };
		for (int k = 0; k < 4; k++) {
			r.w[2 * k] = f16f((uint16_t)(u[k] & 0xffff));
			r.w[2 * k + 1] = f16f((uint16_t)(u[k] >> 16));
		}
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		uint4 v = *(const uint4 *)((const uint8_t *)a.q + 16 * (size_t)s);
		uint32_t u[4] = { v.x, v.y, v.z, v.w };
		float sum = 0.0f;
		for (int k = 0; k < 4; k++) {
			sum += r.w[2 * k] * f16f((uint16_t)(u[k] & 0xffff));
			sum += r.w[2 * k + 1] * f16f((uint16_t)(u[k] >> 16));
		}
		return sum;
	}
};

struct w_bf16 {
	static constexpr int VS = 8, QK = 1, BYTES = 2;
	struct regs { float w[8]; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		uint4 v = *(const uint4 *)(row + 16 * (size_t)s);
		uint32_t u[4] = { v.x, v.y, v.z, v.w };
		for (int k = 0; k < 4; k++) {
			r.w[2 * k] = bf16f((uint16_t)(u[k] & 0xffff));
			r.w[2 * k + 1] = bf16f((uint16_t)(u[k] >> 16));
		}
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		uint4 v = *(const uint4 *)((const uint8_t *)a.q + 16 * (size_t)s);
		uint32_t u[4] = { v.x, v.y, v.z, v.w };
		float sum = 0.0f;
		for (int k = 0; k < 4; k++) {
			sum += r.w[2 * k] * bf16f((uint16_t)(u[k] & 0xffff));
			sum += r.w[2 * k + 1] * bf16f((uint16_t)(u[k] >> 16));
		}
		return sum;
	}
};

struct w_f32 {
	static constexpr int VS = 8, QK = 1, BYTES = 4;
	struct regs { float4 a, b; };
	static __device__ __forceinline__ void load(const uint8_t *row, int s, regs &r)
	{
		const float4 *p = (const float4 *)(row + 32 * (size_t)s);
		r.a = p[0];
		r.b = p[1];
	}
	static __device__ __forceinline__ float dot(const regs &r, const act_ref &a, int s)
	{
		const float4 *p = (const float4 *)((const uint8_t *)a.q + 32 * (size_t)s);
		float4 x = p[0], y = p[1];
		float sum = r.a.x * x.x;
		sum += r.a.y * x.y;
		sum += r.a.z * x.z;
		sum += r.a.w * x.w;
		sum += r.b.x * y.x;
		sum += r.b.y * y.y;
		sum += r.b.z * y.z;
		sum += r.b.w * y.w;
		return sum;
	}
};

// ---- the kernel ----------------------------------------------------------

// out[t][row] (+)= W[row] · act[t] for the tokens t of this block's tile
// (blockIdx.y * NT ..), t < nb. Activation byte strides per token: q_stride
// (values × their size), cols / QK scales.
template <class W, int NT>
static __device__ __forceinline__ void mmv(const uint8_t *w, const void *aq, const float *ad, const float *as,
					   float *out, int rows, int cols, int nb, int add)
{
	int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
	int row = (int)blockIdx.x * (DEC_CU_THREADS / 32) + warp, t0 = (int)blockIdx.y * NT;
	int nslices = cols / W::VS, nblk = cols / (W::QK > 1 ? W::QK : 1), nbq = cols / 32;
	size_t row_bytes = (size_t)(cols / W::QK) * W::BYTES;
	size_t qbytes = W::QK == 1 ? (size_t)cols * W::BYTES : (size_t)cols;
	const uint8_t *wr = w + (size_t)row * row_bytes;
	float acc[NT];

	if (row >= rows)
		return;   // the whole warp: nothing below is block-wide
#pragma unroll
	for (int t = 0; t < NT; t++)
		acc[t] = 0.0f;
	for (int s = lane; s < nslices; s += 32) {
		typename W::regs r;
		W::load(wr, s, r);
#pragma unroll
		for (int t = 0; t < NT; t++) {
			if (t0 + t >= nb)
				break;
			act_ref a;
			a.q = (const int8_t *)aq + (size_t)(t0 + t) * qbytes;
			a.d = ad ? ad + (size_t)(t0 + t) * nblk : nullptr;
			a.s = as ? as + (size_t)(t0 + t) * nbq : nullptr;
			acc[t] += W::dot(r, a, s);
		}
	}
#pragma unroll
	for (int t = 0; t < NT; t++) {
		float v = warp_sum(acc[t]);
		if (lane == 0 && t0 + t < nb) {
			float *o = out + (size_t)(t0 + t) * rows + row;
			*o = add ? *o + v : v;
		}
	}
}

#define MMV_KERNEL(NAME, W, NT)                                                                          \
	extern "C" __global__ void __launch_bounds__(DEC_CU_THREADS)                                    \
	mmv_##NAME##_##NT(const uint8_t *w, const void *aq, const float *ad, const float *as, float *out, \
			  int rows, int cols, int nb, int add)                                           \
	{                                                                                                \
		mmv<W, NT>(w, aq, ad, as, out, rows, cols, nb, add);                                     \
	}
#define MMV_ALL_NT(NAME, W) \
	MMV_KERNEL(NAME, W, 1) MMV_KERNEL(NAME, W, 4) MMV_KERNEL(NAME, W, 16) MMV_KERNEL(NAME, W, 64)

MMV_ALL_NT(f32, w_f32)
MMV_ALL_NT(f16, w_f16)
MMV_ALL_NT(bf16, w_bf16)
MMV_ALL_NT(q8_0, w_q8_0)
MMV_ALL_NT(q4_0, w_q4_0)
MMV_ALL_NT(q5_0, w_q5_0)
MMV_ALL_NT(q4_1, w_q4_1)
MMV_ALL_NT(q5_1, w_q5_1)
MMV_ALL_NT(q4_k, w_q4_k)
MMV_ALL_NT(q6_k, w_q6_k)

#endif
