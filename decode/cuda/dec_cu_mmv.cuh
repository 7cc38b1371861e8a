// dec_cu_mmv.cuh — matrix × vector(s) for every weight type, reading the
// file's block layout and dequantizing in registers, with the CPU path's
// arithmetic (decode/quant/dec_quant.c, dec_simd.c's AVX2 table): the same
// products, in the same order, so a product's bits are the CPU's.
//
// Block types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL: 32 values; Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_XS: 256):
// a warp per output row; a block is cut into slices (8 values, 4 lanes a
// block; 32 values, 8 lanes a super-block), so a warp covers G = 8 (or 4)
// consecutive blocks an iteration. A slice's weights are loaded and
// unpacked once and serve every token of the pass. Per token, the lanes of
// a block add their integer partial sums (exact, any order), the block's
// first lane computes the block's float term as the CPU does (d · d_act ·
// sumi, + m · s for the _1 types, d_act (d sumi - dmin summ) for Q4_K) and
// puts it in shared memory; then lane t folds token t's G terms into its
// running sum in block order: the CPU's `sum += term`, block by block.
//
// F32 and F16: the AVX2 kernels' order — 16 running FMA sums over the
// row's 16-value chunks (lane j of a half warp: values 16c + j), added as
// hsum8(a0 + a1) does (a shuffle tree that pairs the same lanes), then the
// n % 16 tail in order. A half warp per row, two rows a warp.
//
// BF16: the CPU sums products one by one in order, so lane t walks token
// t's whole row (the weights, the same for every lane, are broadcast).
//
// Activations meet the weights in the CPU's encodings (Q8_0, Q8_1, Q8_K,
// f16, bf16, f32), made by the k_quant_* kernels with the CPU's rounding.
// A token's result depends on its own input and the row only: not on NT
// (the tokens a pass serves) nor on the other tokens.
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
//
// Each type: load(row, blk, p, regs) for slice p of block blk; part(regs,
// act, blk, p, ints) the slice's integer sums; term(regs, act, blk, ints)
// the block's float term from the block's summed ints.

// Q8_0: d, 32 int8. Slice p: values 8p .. 8p + 7.
struct w_q8_0 {
	static constexpr int QK = 32, BYTES = 34, LPB = 4, NI = 1;
	struct regs { int w0, w1; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		r.d = f16f((uint16_t)ld16(b));
		r.w0 = ld32a2(b + 2 + 8 * p);
		r.w1 = ld32a2(b + 2 + 8 * p + 4);
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		const int *q = (const int *)(a.q + 32 * blk + 8 * p);
		s[0] = __dp4a(r.w0, q[0], __dp4a(r.w1, q[1], 0));
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0];
	}
};

// The nibble types: qs[16] hold values j (low nibble) and 16 + j (high).
// Slice p: bytes 4p .. 4p + 3, i.e. values 4p .. 4p + 3 and 16 + 4p .. 16 + 4p + 3.
static __device__ __forceinline__ int q5_spread(uint32_t bits4)
{
	return (int)(((bits4 & 1u) << 4) | ((bits4 & 2u) << 11) | ((bits4 & 4u) << 18) | ((bits4 & 8u) << 25));
}
static __device__ __forceinline__ int dot_nib(int lo, int hi, const act_ref &a, int blk, int p)
{
	const int8_t *q = a.q + 32 * blk + 4 * p;
	return __dp4a(lo, *(const int *)q, __dp4a(hi, *(const int *)(q + 16), 0));
}

struct w_q4_0 {
	static constexpr int QK = 32, BYTES = 18, LPB = 4, NI = 1;
	struct regs { int lo, hi; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		uint32_t q = (uint32_t)ld32a2(b + 2 + 4 * p);
		r.d = f16f((uint16_t)ld16(b));
		r.lo = (int)__vsub4(q & 0x0F0F0F0Fu, 0x08080808u);
		r.hi = (int)__vsub4((q >> 4) & 0x0F0F0F0Fu, 0x08080808u);
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		s[0] = dot_nib(r.lo, r.hi, a, blk, p);
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0];
	}
};

struct w_q5_0 {
	static constexpr int QK = 32, BYTES = 22, LPB = 4, NI = 1;
	struct regs { int lo, hi; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		uint32_t qh = (uint32_t)ld32a2(b + 2), q = (uint32_t)ld32a2(b + 6 + 4 * p);
		r.d = f16f((uint16_t)ld16(b));
		r.lo = (int)__vsub4((q & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (4 * p)) & 0xF), 0x10101010u);
		r.hi = (int)__vsub4(((q >> 4) & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (16 + 4 * p)) & 0xF),
				    0x10101010u);
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		s[0] = dot_nib(r.lo, r.hi, a, blk, p);
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0];
	}
};

// The _1 types: value d · q + m, q unsigned: term (d d_act) sumi + m s_act.
struct w_q4_1 {
	static constexpr int QK = 32, BYTES = 20, LPB = 4, NI = 1;
	struct regs { int lo, hi; float d, m; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		uint32_t q = (uint32_t)ld32a2(b + 4 + 4 * p);
		r.d = f16f((uint16_t)ld16(b));
		r.m = f16f((uint16_t)ld16(b + 2));
		r.lo = (int)(q & 0x0F0F0F0Fu);
		r.hi = (int)((q >> 4) & 0x0F0F0F0Fu);
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		s[0] = dot_nib(r.lo, r.hi, a, blk, p);
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0] + r.m * a.s[blk];
	}
};

struct w_q5_1 {
	static constexpr int QK = 32, BYTES = 24, LPB = 4, NI = 1;
	struct regs { int lo, hi; float d, m; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		uint32_t qh = (uint32_t)ld32a2(b + 4), q = (uint32_t)ld32a2(b + 8 + 4 * p);
		r.d = f16f((uint16_t)ld16(b));
		r.m = f16f((uint16_t)ld16(b + 2));
		r.lo = (int)((q & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (4 * p)) & 0xF));
		r.hi = (int)(((q >> 4) & 0x0F0F0F0Fu) | (uint32_t)q5_spread((qh >> (16 + 4 * p)) & 0xF));
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		s[0] = dot_nib(r.lo, r.hi, a, blk, p);
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0] + r.m * a.s[blk];
	}
};

// IQ4_NL and IQ4_XS index a 16-value non-linear codebook (dec_quant_k.c's
// dec_iq4nl_values) with each nibble; the values as int8, 4 to a word.
static __device__ __forceinline__ uint32_t iq4_val(uint32_t n)
{
	uint32_t w = n < 8 ? (n < 4 ? 0xBFAD9881u : 0xF6EADDCFu) : (n < 12 ? 0x26190D01u : 0x71594535u);
	return (w >> (8 * (n & 3))) & 0xFFu;
}
// The codebook values of the four nibble indices in q's bytes (each 0..15).
static __device__ __forceinline__ int iq4_lut4(uint32_t q)
{
	return (int)(iq4_val(q & 15) | iq4_val((q >> 8) & 15) << 8 | iq4_val((q >> 16) & 15) << 16 |
		     iq4_val(q >> 24) << 24);
}

// IQ4_NL: Q4_0's layout, sums and term, codebook values for q - 8.
struct w_iq4_nl : w_q4_0 {
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		uint32_t q = (uint32_t)ld32a2(b + 2 + 4 * p);
		r.d = f16f((uint16_t)ld16(b));
		r.lo = iq4_lut4(q & 0x0F0F0F0Fu);
		r.hi = iq4_lut4((q >> 4) & 0x0F0F0F0Fu);
	}
};

// ---- K types: 8 slices of 32 values a 256-value super-block -------------

// Q4_K: d, dmin, 12 bytes of 6-bit scales and mins, qs[128]; slice p
// covers qs bytes 32j + 16h .. + 15 (j = p / 2, h = p % 2): low nibbles are
// values 64j + 16h + i of sub-block 2j, high nibbles 64j + 32 + 16h + i of
// sub-block 2j + 1. Ints: sumi = Σ scale · (q · a), summ = Σ min · Σa.
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
	static constexpr int QK = 256, BYTES = 144, LPB = 8, NI = 2;
	struct regs { int lo[4], hi[4]; int sc0, sc1, m0, m1; float d, dmin; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		int j = p / 2, h = p % 2;
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
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		int j = p / 2, h = p % 2;
		const int *q = (const int *)(a.q + 256 * blk + 64 * j + 16 * h);
		int acc0 = 0, acc1 = 0, bs0 = 0, bs1 = 0;
		for (int k = 0; k < 4; k++) {
			acc0 = __dp4a(r.lo[k], q[k], acc0);
			acc1 = __dp4a(r.hi[k], q[k + 8], acc1);
			bs0 = __dp4a(0x01010101, q[k], bs0);
			bs1 = __dp4a(0x01010101, q[k + 8], bs1);
		}
		s[0] = r.sc0 * acc0 + r.sc1 * acc1;
		s[1] = r.m0 * bs0 + r.m1 * bs1;
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return a.d[blk] * (r.d * (float)s[0] - r.dmin * (float)s[1]);
	}
};

// Q5_K: d, dmin, Q4_K's 12 bytes of scales and mins, qh[32], qs[128] as
// Q4_K's; value 32s + l's fifth bit is bit s of qh[l]. Slices, sums and the
// term as Q4_K's.
struct w_q5_k : w_q4_k {
	static constexpr int BYTES = 176;
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		int j = p / 2, h = p % 2;
		const uint4 q = *(const uint4 *)(b + 48 + 32 * j + 16 * h), qh = *(const uint4 *)(b + 16 + 16 * h);
		uint32_t w[4] = { q.x, q.y, q.z, q.w }, hb[4] = { qh.x, qh.y, qh.z, qh.w };
		r.d = f16f((uint16_t)ld16(b));
		r.dmin = f16f((uint16_t)ld16(b + 2));
		q4k_scale_min(2 * j, b + 4, r.sc0, r.m0);
		q4k_scale_min(2 * j + 1, b + 4, r.sc1, r.m1);
		for (int k = 0; k < 4; k++) {
			r.lo[k] = (int)((w[k] & 0x0F0F0F0Fu) | ((hb[k] >> (2 * j)) & 0x01010101u) << 4);
			r.hi[k] = (int)(((w[k] >> 4) & 0x0F0F0F0Fu) | ((hb[k] >> (2 * j + 1)) & 0x01010101u) << 4);
		}
	}
};

// Q2_K: scales[16] (a sub-block of 16's 4-bit scale, low nibble, and min),
// qs[64], d, dmin; value 128n + 32j + r is bits 2j of qs[32n + r]. Slice p:
// n = p / 4, j = p % 4, the 32 values r = 0..31 (sub-blocks 8n + 2j and
// 8n + 2j + 1). Ints: sumi = Σ sc · (q · a), summ = Σ m · Σa.
struct w_q2_k {
	static constexpr int QK = 256, BYTES = 84, LPB = 8, NI = 2;
	struct regs { int u[8]; int sc0, sc1; float d, dmin; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		int n = p / 4, j = p % 4;
		for (int k = 0; k < 8; k++)
			r.u[k] = (int)(((uint32_t)ld32a2(b + 16 + 32 * n + 4 * k) >> (2 * j)) & 0x03030303u);
		r.sc0 = b[8 * n + 2 * j];
		r.sc1 = b[8 * n + 2 * j + 1];
		r.d = f16f((uint16_t)ld16(b + 80));
		r.dmin = f16f((uint16_t)ld16(b + 82));
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		const int *q = (const int *)(a.q + 256 * blk + 128 * (p / 4) + 32 * (p % 4));
		int acc0 = 0, acc1 = 0, bs0 = 0, bs1 = 0;
		for (int k = 0; k < 4; k++) {
			acc0 = __dp4a(r.u[k], q[k], acc0);
			acc1 = __dp4a(r.u[k + 4], q[k + 4], acc1);
			bs0 = __dp4a(0x01010101, q[k], bs0);
			bs1 = __dp4a(0x01010101, q[k + 4], bs1);
		}
		s[0] = (r.sc0 & 0xF) * acc0 + (r.sc1 & 0xF) * acc1;
		s[1] = (r.sc0 >> 4) * bs0 + (r.sc1 >> 4) * bs1;
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return a.d[blk] * (r.d * (float)s[0] - r.dmin * (float)s[1]);
	}
};

// Q3_K: hmask[32], qs[64] (the low 2 bits as Q2_K's), scales[12] (16 6-bit
// scales, minus 32), d; value 128n + 32j + r's third bit is bit 4n + j of
// hmask[r]; the quant is (low | third << 2) - 4. Slices as Q2_K's.
static __device__ __forceinline__ int q3k_scale(const uint8_t *sc, int j)
{
	int lo = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4, hi = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
	return (lo | hi << 4) - 32;
}

struct w_q3_k {
	static constexpr int QK = 256, BYTES = 110, LPB = 8, NI = 1;
	struct regs { int u[8]; int sc0, sc1; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		int n = p / 4, j = p % 4;
		for (int k = 0; k < 8; k++) {
			uint32_t lo = ((uint32_t)ld32a2(b + 32 + 32 * n + 4 * k) >> (2 * j)) & 0x03030303u;
			uint32_t hb = (((uint32_t)ld32a2(b + 4 * k) >> (4 * n + j)) & 0x01010101u) << 2;
			r.u[k] = (int)__vsub4(lo | hb, 0x04040404u);
		}
		r.sc0 = q3k_scale(b + 96, 8 * n + 2 * j);
		r.sc1 = q3k_scale(b + 96, 8 * n + 2 * j + 1);
		r.d = f16f((uint16_t)ld16(b + 108));
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		const int *q = (const int *)(a.q + 256 * blk + 128 * (p / 4) + 32 * (p % 4));
		int acc0 = 0, acc1 = 0;
		for (int k = 0; k < 4; k++) {
			acc0 = __dp4a(r.u[k], q[k], acc0);
			acc1 = __dp4a(r.u[k + 4], q[k + 4], acc1);
		}
		s[0] = r.sc0 * acc0 + r.sc1 * acc1;
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0];
	}
};

// IQ4_XS: d, scales_h, scales_l[4], qs[128]: 8 blocks of 32 with 6-bit
// scales (minus 32), nibbles as IQ4_NL's (block b: qs[16b .. 16b + 15], low
// nibbles values 32b + 0..15, high 32b + 16..31). Slice p: block p.
static __device__ __forceinline__ int iq4xs_scale(const uint8_t *b, int j)
{
	return (int)(((b[4 + j / 2] >> (4 * (j % 2))) & 0xF) | ((ld16(b + 2) >> (2 * j)) & 3) << 4) - 32;
}

struct w_iq4_xs {
	static constexpr int QK = 256, BYTES = 136, LPB = 8, NI = 1;
	struct regs { int lo[4], hi[4]; int sc; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		for (int k = 0; k < 4; k++) {
			uint32_t q = (uint32_t)ld32a2(b + 8 + 16 * p + 4 * k);
			r.lo[k] = iq4_lut4(q & 0x0F0F0F0Fu);
			r.hi[k] = iq4_lut4((q >> 4) & 0x0F0F0F0Fu);
		}
		r.sc = iq4xs_scale(b, p);
		r.d = f16f((uint16_t)ld16(b));
	}
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		const int *q = (const int *)(a.q + 256 * blk + 32 * p);
		int acc = 0;
		for (int k = 0; k < 4; k++)
			acc = __dp4a(r.lo[k], q[k], __dp4a(r.hi[k], q[k + 4], acc));
		s[0] = r.sc * acc;
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0];
	}
};

// Q6_K: ql[128], qh[64], scales[16] (int8), d. Slice p: half n = p / 4,
// l in l0 .. l0 + 7 (l0 = 8 (p % 4)), the four values 128n + 32k + l
// (k = 0..3); value k's low bits are ql[64n + l + 32 (k & 1)] (low nibble
// for k < 2), its high bits (qh[32n + l] >> 2k) & 3; value - 32.
struct w_q6_k {
	static constexpr int QK = 256, BYTES = 210, LPB = 8, NI = 1;
	struct regs { int w[4][2]; int sc[4]; float d; };
	static __device__ __forceinline__ void load(const uint8_t *row, int blk, int p, regs &r)
	{
		const uint8_t *b = row + (size_t)blk * BYTES;
		int n = p / 4, l0 = 8 * (p % 4);
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
	static __device__ __forceinline__ void part(const regs &r, const act_ref &a, int blk, int p, int *s)
	{
		int n = p / 4, l0 = 8 * (p % 4), sumi = 0;
		const int8_t *q = a.q + 256 * blk + 128 * n + l0;
		for (int k = 0; k < 4; k++) {
			const int *qk = (const int *)(q + 32 * k);
			sumi += r.sc[k] * __dp4a(r.w[k][0], qk[0], __dp4a(r.w[k][1], qk[1], 0));
		}
		s[0] = sumi;
	}
	static __device__ __forceinline__ float term(const regs &r, const act_ref &a, int blk, const int *s)
	{
		return r.d * a.d[blk] * (float)s[0];
	}
};

static __device__ __forceinline__ act_ref act_of(const void *aq, const float *ad, const float *as, int tok, int cols,
						 int qk, int vbytes)
{
	act_ref a;
	a.q = (const int8_t *)aq + (size_t)tok * cols * vbytes;
	a.d = ad ? ad + (size_t)tok * (cols / qk) : nullptr;
	a.s = as ? as + (size_t)tok * (cols / 32) : nullptr;
	return a;
}

// Per warp: the G terms of an iteration for each of NT tokens.
template <int NT, int G> struct fold_smem { float t[DEC_CU_THREADS / 32][NT][G]; };

// out[t][row] (+)= W[row] · act[t], t in this block's tile of NT tokens.
template <class W, int NT>
static __device__ __forceinline__ void mmv_blocks(const uint8_t *w, const void *aq, const float *ad, const float *as,
						  float *out, int rows, int cols, int nb, int add)
{
	constexpr int G = 32 / W::LPB, NF = NT > 32 ? 2 : 1;
	__shared__ fold_smem<NT, G> sm;
	int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / W::LPB, p = lane % W::LPB;
	int row = (int)blockIdx.x * (DEC_CU_THREADS / 32) + warp, t0 = (int)blockIdx.y * NT;
	int nblk = cols / W::QK, ntok = imin(NT, nb - t0);
	const uint8_t *wr = w + (size_t)row * ((size_t)nblk * W::BYTES);
	float acc[NF];

	if (row >= rows)
		return;   // the whole warp: nothing below is block-wide
	for (int f = 0; f < NF; f++)
		acc[f] = 0.0f;
	for (int b0 = 0; b0 < nblk; b0 += G) {
		int blk = b0 + g, ok = blk < nblk;
		typename W::regs r;
		if (ok)
			W::load(wr, blk, p, r);
#pragma unroll
		for (int t = 0; t < NT; t++) {
			if (t >= ntok)
				break;
			act_ref a = act_of(aq, ad, as, t0 + t, cols, W::QK, 1);
			int s[W::NI];
			if (ok)
				W::part(r, a, blk, p, s);
			else
				for (int i = 0; i < W::NI; i++)
					s[i] = 0;
			for (int i = 0; i < W::NI; i++)
				for (int o = 1; o < W::LPB; o <<= 1)
					s[i] += __shfl_xor_sync(FULL, s[i], o);
			if (ok && p == 0)
				sm.t[warp][t][g] = W::term(r, a, blk, s);
		}
		__syncwarp();
		// lane t folds token t's terms, block by block
		for (int f = 0; f < NF; f++) {
			int t = lane + 32 * f;
			if (t < ntok)
				for (int k = 0; k < G && b0 + k < nblk; k++)
					acc[f] += sm.t[warp][t][k];
		}
		__syncwarp();
	}
	for (int f = 0; f < NF; f++) {
		int t = lane + 32 * f;
		if (t < ntok) {
			float *o = out + (size_t)(t0 + t) * rows + row;
			*o = add ? *o + acc[f] : acc[f];
		}
	}
}

// ---- F32, F16: the AVX2 kernels' 16 FMA chains ---------------------------

struct w_f32 {
	static constexpr int BYTES = 4;
	static __device__ __forceinline__ float wv(const uint8_t *row, int i) { return ((const float *)row)[i]; }
	static __device__ __forceinline__ float av(const void *a, int i) { return ((const float *)a)[i]; }
};
struct w_f16 {
	static constexpr int BYTES = 2;
	static __device__ __forceinline__ float wv(const uint8_t *row, int i) { return f16f(((const uint16_t *)row)[i]); }
	static __device__ __forceinline__ float av(const void *a, int i) { return f16f(((const uint16_t *)a)[i]); }
};

template <class W, int NT>
static __device__ __forceinline__ void mmv_fma16(const uint8_t *w, const void *aq, float *out, int rows, int cols,
						 int nb, int add)
{
	int lane = (int)threadIdx.x % 32, j = lane % 16;
	int row = ((int)blockIdx.x * (DEC_CU_THREADS / 32) + (int)threadIdx.x / 32) * 2 + lane / 16;
	int t0 = (int)blockIdx.y * NT, ntok = imin(NT, nb - t0), n16 = cols - cols % 16;
	int ok = row < rows;
	const uint8_t *wr = w + (size_t)(ok ? row : 0) * cols * W::BYTES;
	float acc[NT];

	if (((int)blockIdx.x * (DEC_CU_THREADS / 32) + (int)threadIdx.x / 32) * 2 >= rows)
		return;   // the whole warp
#pragma unroll
	for (int t = 0; t < NT; t++)
		acc[t] = 0.0f;
	for (int c = j; c < n16 && ok; c += 16) {
		float x = W::wv(wr, c);
#pragma unroll
		for (int t = 0; t < NT; t++) {
			if (t >= ntok)
				break;
			acc[t] = fmaf(x, W::av((const uint8_t *)aq + (size_t)(t0 + t) * cols * W::BYTES, c), acc[t]);
		}
	}
#pragma unroll
	for (int t = 0; t < NT; t++) {
		if (t >= ntok)
			break;
		// hsum8(a0 + a1): lanes j and j + 8, then 4, 2, 1 apart
		float v = acc[t];
		v += __shfl_xor_sync(FULL, v, 8);
		v += __shfl_xor_sync(FULL, v, 4);
		v += __shfl_xor_sync(FULL, v, 2);
		v += __shfl_xor_sync(FULL, v, 1);
		if (ok && j == 0) {
			const void *a = (const uint8_t *)aq + (size_t)(t0 + t) * cols * W::BYTES;
			float *o = out + (size_t)(t0 + t) * rows + row;
			for (int i = n16; i < cols; i++)
				v += W::wv(wr, i) * W::av(a, i);
			*o = add ? *o + v : v;
		}
	}
}

// ---- BF16: products summed one by one ------------------------------------

template <int NT>
static __device__ __forceinline__ void mmv_bf16(const uint8_t *w, const void *aq, float *out, int rows, int cols,
						int nb, int add)
{
	constexpr int NF = NT > 32 ? 2 : 1;
	int lane = (int)threadIdx.x % 32, row = (int)blockIdx.x * (DEC_CU_THREADS / 32) + (int)threadIdx.x / 32;
	int t0 = (int)blockIdx.y * NT, ntok = imin(NT, nb - t0);
	const uint16_t *wr = (const uint16_t *)w + (size_t)row * cols;

	if (row >= rows)
		return;
	for (int f = 0; f < NF; f++) {
		int t = lane + 32 * f;
		if (t >= ntok)
			continue;
		const uint16_t *a = (const uint16_t *)aq + (size_t)(t0 + t) * cols;
		float s = 0.0f;
		for (int i = 0; i < cols; i++)
			s += bf16f(wr[i]) * bf16f(a[i]);
		float *o = out + (size_t)(t0 + t) * rows + row;
		*o = add ? *o + s : s;
	}
}

// ---- the kernels -----------------------------------------------------------

#define MMV_KERNEL(NAME, BODY, NT)                                                                       \
	extern "C" __global__ void __launch_bounds__(DEC_CU_THREADS)                                    \
	mmv_##NAME##_##NT(const uint8_t *w, const void *aq, const float *ad, const float *as, float *out, \
			  int rows, int cols, int nb, int add)                                           \
	{                                                                                                \
		(void)ad;                                                                                \
		(void)as;                                                                                \
		BODY;                                                                                    \
	}
#define MMV_ALL_NT(NAME, B1, B4, B16, B64) \
	MMV_KERNEL(NAME, B1, 1) MMV_KERNEL(NAME, B4, 4) MMV_KERNEL(NAME, B16, 16) MMV_KERNEL(NAME, B64, 64)
#define MMV_BLOCKS(NAME, W) \
	MMV_ALL_NT(NAME, (mmv_blocks<W, 1>(w, aq, ad, as, out, rows, cols, nb, add)),              \
		   (mmv_blocks<W, 4>(w, aq, ad, as, out, rows, cols, nb, add)),                    \
		   (mmv_blocks<W, 16>(w, aq, ad, as, out, rows, cols, nb, add)),                   \
		   (mmv_blocks<W, 64>(w, aq, ad, as, out, rows, cols, nb, add)))
#define MMV_FMA16(NAME, W) \
	MMV_ALL_NT(NAME, (mmv_fma16<W, 1>(w, aq, out, rows, cols, nb, add)),              \
		   (mmv_fma16<W, 4>(w, aq, out, rows, cols, nb, add)),                    \
		   (mmv_fma16<W, 16>(w, aq, out, rows, cols, nb, add)),                   \
		   (mmv_fma16<W, 64>(w, aq, out, rows, cols, nb, add)))

MMV_FMA16(f32, w_f32)
MMV_FMA16(f16, w_f16)
MMV_ALL_NT(bf16, (mmv_bf16<1>(w, aq, out, rows, cols, nb, add)), (mmv_bf16<4>(w, aq, out, rows, cols, nb, add)),
	   (mmv_bf16<16>(w, aq, out, rows, cols, nb, add)), (mmv_bf16<64>(w, aq, out, rows, cols, nb, add)))
MMV_BLOCKS(q8_0, w_q8_0)
MMV_BLOCKS(q4_0, w_q4_0)
MMV_BLOCKS(q5_0, w_q5_0)
MMV_BLOCKS(q4_1, w_q4_1)
MMV_BLOCKS(q5_1, w_q5_1)
MMV_BLOCKS(q4_k, w_q4_k)
MMV_BLOCKS(q6_k, w_q6_k)
MMV_BLOCKS(q2_k, w_q2_k)
MMV_BLOCKS(q3_k, w_q3_k)
MMV_BLOCKS(q5_k, w_q5_k)
MMV_BLOCKS(iq4_nl, w_iq4_nl)
MMV_BLOCKS(iq4_xs, w_iq4_xs)

#endif
