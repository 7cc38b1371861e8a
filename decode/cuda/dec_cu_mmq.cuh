// dec_cu_mmq.cuh — prefill's matrix products on tensor cores (MMQ) for the
// 32-value block types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1), with the CPU path's
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
// The K types (Q4_K, Q6_K: sub-block scales inside the integer sum) and
// F32/F16/BF16 stay on the mmv kernels.
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

#define MMQ_KERNEL(NAME, W)                                                                               \
	extern "C" __global__ void __launch_bounds__(DEC_CU_THREADS)                                     \
	mmq_##NAME(const uint8_t *w, const void *aq, const float *ad, const float *as, float *out, int rows, \
		   int cols, int nb, int add)                                                              \
	{                                                                                                 \
		mmq_blocks<W>(w, aq, ad, as, out, rows, cols, nb, add);                                   \
	}
MMQ_KERNEL(q8_0, w_q8_0)
MMQ_KERNEL(q4_0, w_q4_0)
MMQ_KERNEL(q5_0, w_q5_0)
MMQ_KERNEL(q4_1, w_q4_1)
MMQ_KERNEL(q5_1, w_q5_1)

#endif
