/* dec_exp.h — e^x for x <= 0 (after a max is subtracted: softmax, SiLU) as
 * the AVX2 table's vector exp computes each lane (dec_simd.c exp8: x = n ln2
 * + r with ln2 split in two, Cephes' single-precision polynomial with the
 * same fused multiply-adds, 2^n in the exponent bits; relative error ~2e-7,
 * inputs below -87 give ~e^-87). One definition for the CPU's scalar uses
 * (dec_sample.c) and the CUDA kernels (decode/cuda/dec_cu_common.cuh, also
 * built as C++ for the emulated driver), so all compute the same bits. */
#ifndef DEC_EXP_H
#define DEC_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef DEC_CU_DEVICE_CODE
#define DEC_EXP_FN static __device__ __forceinline__
#else
#define DEC_EXP_FN static inline
#endif

DEC_EXP_FN float dec_exp_cephes(float x)
{
	float n, r, p, s;
	uint32_t e;

	x = fminf(fmaxf(x, -87.0f), 88.0f);
	n = floorf(fmaf(x, 1.44269504088896341f, 0.5f));
	r = fmaf(-n, 0.693359375f, x);
	r = fmaf(-n, -2.12194440e-4f, r);
	p = 1.9875691500e-4f;
	p = fmaf(p, r, 1.3981999507e-3f);
	p = fmaf(p, r, 8.3334519073e-3f);
	p = fmaf(p, r, 4.1665795894e-2f);
	p = fmaf(p, r, 1.6666665459e-1f);
	p = fmaf(p, r, 5.0000001201e-1f);
	p = fmaf(p, r * r, r + 1.0f);
	e = (uint32_t)((int)n + 127) << 23;
	memcpy(&s, &e, 4);
	return p * s;
}

#endif
