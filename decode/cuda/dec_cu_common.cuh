// dec_cu_common.cuh — helpers every decoder kernel uses: conversions that
// round as the CPU path rounds (f16 and bf16 round to nearest even), loads of
// 16-bit-aligned words (ggml blocks are 18, 22, 34, 210 bytes), and warp and
// block reductions in a fixed order (so a row's result never depends on
// which other rows or tokens share the launch). Compiled by nvcc and, for the
// test suite, by a C++ compiler against tests/cuda/emu/cuda_emu.hpp.
#ifndef DEC_CU_COMMON_CUH
#define DEC_CU_COMMON_CUH

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif
#include <stddef.h>
#include <stdint.h>

#define DEC_CU_DEVICE_CODE 1
#include "decode/cuda/dec_cu.h"
#include "decode/quant/dec_exp.h"

#define FULL 0xffffffffu

static __device__ __forceinline__ float f16f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ uint16_t f32h(float f) { return __half_as_ushort(__float2half_rn(f)); }
static __device__ __forceinline__ float bf16f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
// as dec_f32_to_bf16: nearest even, NaN kept quiet
static __device__ __forceinline__ uint16_t f32bf(float f)
{
	uint32_t u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 64);
	return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}
static __device__ __forceinline__ float fbits(uint32_t u) { return __uint_as_float(u); }

static __device__ __forceinline__ uint32_t ld16(const uint8_t *p) { return *(const uint16_t *)p; }
// 32 bits from a 2-byte-aligned address, little-endian
static __device__ __forceinline__ int ld32a2(const uint8_t *p)
{
	return (int)(ld16(p) | (ld16(p + 2) << 16));
}

static __device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

// A kernel's dynamic shared memory (the launch's bytes), as T name[]: nvcc's
// extern __shared__; the emulation's buffer of the launch (cuda_emu.hpp).
#ifdef __CUDACC__
#define DEC_CU_DYN_SMEM(T, name) extern __shared__ __align__(16) T name[]
#else
#define DEC_CU_DYN_SMEM(T, name) T *const name = (T *)emu_dyn_smem
#endif

// e^x as the CPU's AVX2 table computes it (dec_simd.c's exp8, lane by lane),
// for x <= 0 after a max is subtracted (softmax, SiLU): the same bits as the
// CPU, from the definition the CPU's scalar code uses (decode/quant/dec_exp.h)
#define exp_cephes dec_exp_cephes

static __device__ __forceinline__ float warp_sum(float v)
{
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(FULL, v, o);
	return v;
}
static __device__ __forceinline__ double warp_sum_d(double v)
{
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(FULL, v, o);
	return v;
}
static __device__ __forceinline__ int warp_sum_i(int v)
{
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(FULL, v, o);
	return v;
}
static __device__ __forceinline__ float warp_max(float v)
{
	for (int o = 16; o; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(FULL, v, o));
	return v;
}

// Block-wide reductions for blocks of a multiple of 32 threads (at most
// 1024); every thread gets the result. red: 32 slots of shared memory.
static __device__ __forceinline__ double block_sum_d(double v, double *red)
{
	int w = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32, nw = (int)blockDim.x / 32;
	v = warp_sum_d(v);
	__syncthreads();
	if (l == 0)
		red[w] = v;
	__syncthreads();
	v = l < nw ? red[l] : 0.0;
	return warp_sum_d(v);
}
static __device__ __forceinline__ float block_sum(float v, float *red)
{
	int w = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32, nw = (int)blockDim.x / 32;
	v = warp_sum(v);
	__syncthreads();
	if (l == 0)
		red[w] = v;
	__syncthreads();
	v = l < nw ? red[l] : 0.0f;
	return warp_sum(v);
}
static __device__ __forceinline__ float block_max(float v, float *red)
{
	int w = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32, nw = (int)blockDim.x / 32;
	v = warp_max(v);
	__syncthreads();
	if (l == 0)
		red[w] = v;
	__syncthreads();
	v = l < nw ? red[l] : -INFINITY;
	return warp_max(v);
}

#endif
