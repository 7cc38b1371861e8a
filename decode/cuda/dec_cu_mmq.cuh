// dec_cu_mmq.cuh — prefill's matrix products on tensor cores (MMQ) for the
// block types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1; Q4_K, Q6_K), with the CPU path's
// arithmetic, bit for bit, like the mmv kernels.
//
// A block of 4 warps computes 64 rows × 64 tokens, one 32-value block of
// the weights at a time:
//   1. the block's values of the 64 rows are unpacked to int8 in shared
//      memory (dec_cu_mmv.cuh's load: the same unpacking), the tokens' int8
//      activations copied beside them, zeros past the rows and tokens;
//   2. each warp multiplies its 16 rows by the 64 tokens on the tensor
//      cores (int8 wmma, m16n16k16, two k-steps): the block's integer sums,
//      exact whatever the hardware's order;
//   3. each lane folds its (row, token) pairs' block terms, d_w · d_a ·
//      sumi (+ m · s for the _1 types), into their running sums in block
//      order: the CPU's `sum += term`, the same expression as the mmv
//      kernels' (W::term).
// So a product's bits do not depend on which kernel made them: the engine's
// exactness contract (a token's logits whatever its chunk) holds with MMQ
// serving prefill chunks and mmv serving decode. f16 tiles through cuBLAS
// would not keep it (their sums round in the hardware's order).
//
// The K types (Q4_K, Q6_K: sub-block scales inside the integer sum) follow
// below, by half super-block. F32/F16/BF16 stay on the mmv kernels.
#ifndef DEC_CU_MMQ_CUH
#define DEC_CU_MMQ_CUH

#include "decode/cuda/dec_cu_mmv.cuh"
#ifdef __CUDACC__
#include <mma.h>
#endif
#include <type_traits>

#define MMQ_ROWS 64 // rows a block: 16 a warp
#define MMQ_TOK 64  // tokens a block

template <class W> struct alignas(32) mmq_smem {
	signed char w[2][MMQ_ROWS][16];       // the block's values 0-15, 16-31 of each row (A, row-major)
	signed char a[2][MMQ_TOK][16];        // the same of each token (B, column-major)
	int c[DEC_CU_THREADS / 32][4][16 * 16]; // a warp's four 16 x 16 tiles of integer sums
	typename W::regs rg[MMQ_ROWS];        // each row's block scale (and min): W::term's inputs
};

// Slice p's values into the row's 32 (W::load's registers, 4-byte words).
template <class W>
static __device__ __forceinline__ void mmq_put(const typename W::regs &r, int p, signed char (*w)[MMQ_ROWS][16], int i)
{
	if constexpr (std::is_same<W, w_q8_0>::value) {
		// values 8p .. 8p + 7
		*(int *)&w[p / 2][i][8 * (p % 2)] = r.w0;
		*(int *)&w[p / 2][i][8 * (p % 2) + 4] = r.w1;
	} else {
		// values 4p .. 4p + 3 and 16 + 4p .. 16 + 4p + 3
		*(int *)&w[0][i][4 * p] = r.lo;
		*(int *)&w[1][i][4 * p] = r.hi;
	}
}

// out[t][row] (+)= W[row] · act[t] for this block's 64 rows and 64 tokens.
template <class W>
static __device__ __forceinline__ void mmq_blocks(const uint8_t *w, const void *aq, const float *ad, const float *as,
						  float *out, int rows, int cols, int nb, int add)
{
	using namespace nvcuda;
	__shared__ mmq_smem<W> sm;
	int t = (int)threadIdx.x, nt = (int)blockDim.x, warp = t / 32, lane = t % 32;
	int r0 = (int)blockIdx.x * MMQ_ROWS, t0 = (int)blockIdx.y * MMQ_TOK;
	int nblk = cols / 32, ntok = imin(MMQ_TOK, nb - t0), li = lane % 16, row = r0 + 16 * warp + li;
	size_t rbytes = (size_t)nblk * W::BYTES;
	float acc[MMQ_TOK / 2];

	for (int q = 0; q < MMQ_TOK / 2; q++)
		acc[q] = 0.0f;
	for (int blk = 0; blk < nblk; blk++) {
		__syncthreads();   // every warp is done with the last block's tiles
		for (int job = t; job < MMQ_ROWS * 4; job += nt) {
			int i = job / 4, p = job % 4;
			typename W::regs r{};
			if (r0 + i < rows)
				W::load(w + (size_t)(r0 + i) * rbytes, blk, p, r);
			mmq_put<W>(r, p, sm.w, i);
			if (p == 0)
				sm.rg[i] = r;
		}
		for (int job = t; job < MMQ_TOK * 2; job += nt) {
			int j = job / 2, h = job % 2;
			int4 v = { 0, 0, 0, 0 };
			if (j < ntok)
				v = *(const int4 *)((const int8_t *)aq + (size_t)(t0 + j) * cols + 32 * blk + 16 * h);
			*(int4 *)&sm.a[h][j][0] = v;
		}
		__syncthreads();
		{
			wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa0, fa1;
			wmma::load_matrix_sync(fa0, &sm.w[0][16 * warp][0], 16);
			wmma::load_matrix_sync(fa1, &sm.w[1][16 * warp][0], 16);
			for (int n = 0; n < 4 && 16 * n < ntok; n++) {   // uniform across the warp
				wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
				wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
				wmma::fill_fragment(fc, 0);
				wmma::load_matrix_sync(fb, &sm.a[0][16 * n][0], 16);
				wmma::mma_sync(fc, fa0, fb, fc);
				wmma::load_matrix_sync(fb, &sm.a[1][16 * n][0], 16);
				wmma::mma_sync(fc, fa1, fb, fc);
				wmma::store_matrix_sync(&sm.c[warp][n][0], fc, 16, wmma::mem_row_major);
			}
		}
		__syncwarp();
		// lane: row li of the warp's 16, tokens lane / 16 + 2q
		for (int q = 0; q < MMQ_TOK / 2; q++) {
			int j = lane / 16 + 2 * q;
			if (j < ntok) {
				act_ref a = act_of(aq, ad, as, t0 + j, cols, 32, 1);
				int s = sm.c[warp][j / 16][li * 16 + j % 16];
				acc[q] += W::term(sm.rg[16 * warp + li], a, blk, &s);
			}
		}
	}
	if (row < rows)
		for (int q = 0; q < MMQ_TOK / 2; q++) {
			int j = lane / 16 + 2 * q;
			if (j < ntok) {
				float *o = out + (size_t)(t0 + j) * rows + row;
				*o = add ? *o + acc[q] : acc[q];
			}
		}
}


// ---- K types: a 256-value super-block in two halves of 128 ----------------
//
// Q4_K and Q6_K scale their integer sums by sub-block (Q4_K: 8 sub-blocks
// of 32 values with 6-bit scales and mins; Q6_K: 16 of 16 with int8
// scales), inside the super-block's integer sum: sumi = Σ sc · (q · a). The
// tensor cores give each unit's (q · a) exactly (a unit: one sub-block,
// one or two k-steps); each lane adds sc · that into its pairs' sumi, and,
// Q4_K, summ = Σ m · Σa from the tokens' sub-block sums, all exact. At the
// super-block's end each lane folds W::term(sumi, summ) into its running
// sums in super-block order: the mmv kernels' and the CPU's expression.
//
// Shared memory: the half's values of 64 rows and 64 tokens (8 KiB each,
// by 16-value chunk so that every tile starts 256-bit aligned), the warps'
// integer tiles (16 KiB), scales, mins and sums: 42.5 KiB.
//
// mmqk<W>: UNIT, the values a scale covers (one or two k-steps); MINS,
// whether the type subtracts min · Σa; put(regs, p, i, smem), slice p of
// row i (W::load's registers) into the half's chunks, scales, mins and d.

#define MMQK_HALF 128 // values a pass: half a super-block

struct alignas(32) mmqk_smem {
	signed char w[MMQK_HALF / 16][MMQ_ROWS][16]; // chunk k: values 16k .. 16k + 15 of the half (A, row-major)
	signed char a[MMQK_HALF / 16][MMQ_TOK][16];  // the same of each token (B, column-major)
	int c[DEC_CU_THREADS / 32][4][16 * 16];      // a warp's four 16 x 16 tiles of one unit's sums
	int sc[MMQ_ROWS][8];                         // each row's scale of the half's units
	int mn[MMQ_ROWS][16];                        // Q2_K, Q4_K, Q5_K: each row's mins of the super-block's units
	int bs[MMQ_TOK][16];                         // each token's sums (Σa) of the super-block's 16-value groups
	float d[MMQ_ROWS], dmin[MMQ_ROWS];
};

template <class W> struct mmqk;

// Q4_K: unit = sub-block of 32 (two k-steps). Slice p (of 8) is half p / 4;
// its low nibbles are values 64j + 16h + 4k .. + 3 of the half (j = p / 2
// % 2, h = p % 2), sub-block 2j; its high nibbles the same + 32, sub-block
// 2j + 1.
template <> struct mmqk<w_q4_k> {
	static constexpr int UNIT = 32;
	static constexpr bool MINS = true;
	static __device__ __forceinline__ void put(const w_q4_k::regs &r, int p, int i, mmqk_smem &s)
	{
		int j = p / 2 % 2, h = p % 2;
		for (int k = 0; k < 4; k++) {
			*(int *)&s.w[4 * j + h][i][4 * k] = r.lo[k];
			*(int *)&s.w[4 * j + 2 + h][i][4 * k] = r.hi[k];
		}
		if (h == 0) {
			s.sc[i][2 * j] = r.sc0;
			s.sc[i][2 * j + 1] = r.sc1;
			s.mn[i][p / 2 * 2] = r.m0;
			s.mn[i][p / 2 * 2 + 1] = r.m1;
		}
		if (p % 4 == 0) {
			s.d[i] = r.d;
			s.dmin[i] = r.dmin;
		}
	}
};

// Q6_K: unit = sub-block of 16 (one k-step). Slice p is half p / 4; its
// value group k (0-3) is values 32k + l0 + 4i .. + 3 of the half (l0 =
// 8 (p % 4), i = 0, 1), scaled by sub-block 2k + (l0 >= 16).
template <> struct mmqk<w_q6_k> {
	static constexpr int UNIT = 16;
	static constexpr bool MINS = false;
	static __device__ __forceinline__ void put(const w_q6_k::regs &r, int p, int i, mmqk_smem &s)
	{
		int l0 = 8 * (p % 4);
#pragma unroll
		for (int k = 0; k < 4; k++) {
			*(int *)&s.w[2 * k + l0 / 16][i][l0 % 16] = r.w[k][0];
			*(int *)&s.w[2 * k + l0 / 16][i][l0 % 16 + 4] = r.w[k][1];
			if (p % 2 == 0)
				s.sc[i][2 * k + (l0 >= 16)] = r.sc[k];
		}
		if (p % 4 == 0)
			s.d[i] = r.d;
	}
};

// Q5_K: Q4_K's slices with the fifth bits in (the same registers).
template <> struct mmqk<w_q5_k> : mmqk<w_q4_k> {};

// Q2_K and Q3_K: unit = sub-block of 16. Slice p is half p / 4, values
// 32j + 4k .. + 3 of the half in word k (j = p % 4, k = 0..7), sub-blocks
// 2j (k < 4) and 2j + 1.
template <class W> struct mmqk_k2 {
	static constexpr int UNIT = 16;
	static __device__ __forceinline__ void put_values(const typename W::regs &r, int p, int i, mmqk_smem &s)
	{
		int j = p % 4;
#pragma unroll
		for (int k = 0; k < 8; k++)
			*(int *)&s.w[2 * j + k / 4][i][4 * (k % 4)] = r.u[k];
		if (p % 4 == 0)
			s.d[i] = r.d;
	}
};
template <> struct mmqk<w_q2_k> : mmqk_k2<w_q2_k> {
	static constexpr bool MINS = true;
	static __device__ __forceinline__ void put(const w_q2_k::regs &r, int p, int i, mmqk_smem &s)
	{
		int j = p % 4;
		put_values(r, p, i, s);
		s.sc[i][2 * j] = r.sc0 & 0xF;
		s.sc[i][2 * j + 1] = r.sc1 & 0xF;
		s.mn[i][8 * (p / 4) + 2 * j] = r.sc0 >> 4;
		s.mn[i][8 * (p / 4) + 2 * j + 1] = r.sc1 >> 4;
		if (p % 4 == 0)
			s.dmin[i] = r.dmin;
	}
};
template <> struct mmqk<w_q3_k> : mmqk_k2<w_q3_k> {
	static constexpr bool MINS = false;
	static __device__ __forceinline__ void put(const w_q3_k::regs &r, int p, int i, mmqk_smem &s)
	{
		put_values(r, p, i, s);
		s.sc[i][2 * (p % 4)] = r.sc0;
		s.sc[i][2 * (p % 4) + 1] = r.sc1;
	}
};

// IQ4_XS: unit = block of 32. Slice p is block p: half p / 4, its low
// nibbles' values the half's chunk 2 (p % 4), its high nibbles' the next.
template <> struct mmqk<w_iq4_xs> {
	static constexpr int UNIT = 32;
	static constexpr bool MINS = false;
	static __device__ __forceinline__ void put(const w_iq4_xs::regs &r, int p, int i, mmqk_smem &s)
	{
		int lb = p % 4;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			*(int *)&s.w[2 * lb][i][4 * k] = r.lo[k];
			*(int *)&s.w[2 * lb + 1][i][4 * k] = r.hi[k];
		}
		s.sc[i][lb] = r.sc;
		if (lb == 0)
			s.d[i] = r.d;
	}
};

template <class W>
static __device__ __forceinline__ void mmq_kblocks(const uint8_t *w, const void *aq, const float *ad, const float *as,
						   float *out, int rows, int cols, int nb, int add)
{
	using namespace nvcuda;
	constexpr int NU = MMQK_HALF / mmqk<W>::UNIT, KS = mmqk<W>::UNIT / 16; // units a half, k-steps a unit
	constexpr bool MINS = mmqk<W>::MINS;
	constexpr int NMIN = 256 / mmqk<W>::UNIT, GPM = mmqk<W>::UNIT / 16; // units a super-block; 16-value groups a unit
	__shared__ mmqk_smem sm;
	int t = (int)threadIdx.x, nt = (int)blockDim.x, warp = t / 32, lane = t % 32;
	int r0 = (int)blockIdx.x * MMQ_ROWS, t0 = (int)blockIdx.y * MMQ_TOK;
	int nblk = cols / 256, ntok = imin(MMQ_TOK, nb - t0), li = lane % 16, rl = 16 * warp + li, row = r0 + rl;
	size_t rbytes = (size_t)nblk * W::BYTES;
	float acc[MMQ_TOK / 2];
	int si[MMQ_TOK / 2];

	for (int q = 0; q < MMQ_TOK / 2; q++) {
		acc[q] = 0.0f;
		si[q] = 0;
	}
	for (int blk = 0; blk < nblk; blk++) {
		for (int n = 0; n < 2; n++) {
			__syncthreads();   // every warp is done with the last half's tiles (and the fold)
			for (int job = t; job < MMQ_ROWS * 4; job += nt) {
				int i = job / 4, p = 4 * n + job % 4;
				typename W::regs r{};
				if (r0 + i < rows)
					W::load(w + (size_t)(r0 + i) * rbytes, blk, p, r);
				mmqk<W>::put(r, p, i, sm);
			}
			for (int job = t; job < MMQ_TOK * 4; job += nt) {
				int j = job / 4, u = job % 4;   // token j's sub-block u (32 values) of the half
				int4 v0 = { 0, 0, 0, 0 }, v1 = { 0, 0, 0, 0 };
				if (j < ntok) {
					const int8_t *src = (const int8_t *)aq + (size_t)(t0 + j) * cols + 256 * blk +
							    MMQK_HALF * n + 32 * u;
					v0 = *(const int4 *)src;
					v1 = *(const int4 *)(src + 16);
				}
				*(int4 *)&sm.a[2 * u][j][0] = v0;
				*(int4 *)&sm.a[2 * u + 1][j][0] = v1;
				if (MINS) {
					const signed char *b = &sm.a[2 * u][j][0], *b1 = &sm.a[2 * u + 1][j][0];
					int s0 = 0, s1 = 0;
					for (int k = 0; k < 16; k++) {
						s0 += b[k];
						s1 += b1[k];
					}
					sm.bs[j][8 * n + 2 * u] = s0;
					sm.bs[j][8 * n + 2 * u + 1] = s1;
				}
			}
			__syncthreads();
			for (int u = 0; u < NU; u++) {
				for (int c = 0; c < 4 && 16 * c < ntok; c++) {   // uniform across the warp
					wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
					wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
					wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
					wmma::fill_fragment(fc, 0);
					for (int k = 0; k < KS; k++) {
						wmma::load_matrix_sync(fa, &sm.w[KS * u + k][16 * warp][0], 16);
						wmma::load_matrix_sync(fb, &sm.a[KS * u + k][16 * c][0], 16);
						wmma::mma_sync(fc, fa, fb, fc);
					}
					wmma::store_matrix_sync(&sm.c[warp][c][0], fc, 16, wmma::mem_row_major);
				}
				__syncwarp();
				// lane: row li of the warp's 16, tokens lane / 16 + 2q
				int sc = sm.sc[rl][u];
#pragma unroll
				for (int q = 0; q < MMQ_TOK / 2; q++) {
					int j = lane / 16 + 2 * q;
					if (j < ntok)
						si[q] += sc * sm.c[warp][j / 16][li * 16 + j % 16];
				}
				__syncwarp();
			}
		}
		// the super-block's term, folded in super-block order
		typename W::regs rr{};
		rr.d = sm.d[rl];
		if constexpr (MINS)
			rr.dmin = sm.dmin[rl];
#pragma unroll
		for (int q = 0; q < MMQ_TOK / 2; q++) {
			int j = lane / 16 + 2 * q;
			if (j < ntok) {
				act_ref a = act_of(aq, ad, as, t0 + j, cols, 256, 1);
				int s[2] = { si[q], 0 };
				if (MINS)
					for (int k = 0; k < NMIN; k++)
						s[1] += sm.mn[rl][k] * (GPM == 2 ? sm.bs[j][2 * k] + sm.bs[j][2 * k + 1]
										 : sm.bs[j][k]);
				acc[q] += W::term(rr, a, blk, s);
			}
			si[q] = 0;
		}
	}
	if (row < rows) {
#pragma unroll
		for (int q = 0; q < MMQ_TOK / 2; q++) {
			int j = lane / 16 + 2 * q;
			if (j < ntok) {
				float *o = out + (size_t)(t0 + j) * rows + row;
				*o = add ? *o + acc[q] : acc[q];
			}
		}
	}
}

// The kernels: one block per SM's worth of registers allowed (255 a
// thread), so the 256-value types' accumulators do not spill.
#define MMQ_KERNEL(NAME, W)                                                                               \
	extern "C" __global__ void __launch_bounds__(DEC_CU_THREADS, 1)                                  \
	mmq_##NAME(const uint8_t *w, const void *aq, const float *ad, const float *as, float *out, int rows, \
		   int cols, int nb, int add)                                                              \
	{                                                                                                 \
		if constexpr (W::QK == 32)                                                                \
			mmq_blocks<W>(w, aq, ad, as, out, rows, cols, nb, add);                           \
		else                                                                                      \
			mmq_kblocks<W>(w, aq, ad, as, out, rows, cols, nb, add);                          \
	}
MMQ_KERNEL(q8_0, w_q8_0)
MMQ_KERNEL(q4_0, w_q4_0)
MMQ_KERNEL(q5_0, w_q5_0)
MMQ_KERNEL(q4_1, w_q4_1)
MMQ_KERNEL(q5_1, w_q5_1)
MMQ_KERNEL(iq4_nl, w_iq4_nl)
MMQ_KERNEL(q4_k, w_q4_k)
MMQ_KERNEL(q6_k, w_q6_k)
MMQ_KERNEL(q2_k, w_q2_k)
MMQ_KERNEL(q3_k, w_q3_k)
MMQ_KERNEL(q5_k, w_q5_k)
MMQ_KERNEL(iq4_xs, w_iq4_xs)

#endif
