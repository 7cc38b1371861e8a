// dec_kernels.cu — the CUDA backend's kernels (decode/cuda/dec_be_cuda.c loads
// them): one translation unit, compiled by nvcc into sm_80 and sm_90 cubins
// and compute_80 PTX that the build embeds in the binary, and by a C++
// compiler against tests/cuda/emu/cuda_emu.hpp into the test suite's
// emulated kernels. The kernel list is DEC_CU_KERNELS in dec_cu.h.
#include "decode/cuda/dec_cu_common.cuh"
#include "decode/cuda/dec_cu_mmv.cuh"
#include "decode/cuda/dec_cu_mmq.cuh"
#include "decode/cuda/dec_cu_ops.cuh"
#include "decode/cuda/dec_cu_attn.cuh"
#include "decode/cuda/dec_cu_sample.cuh"
