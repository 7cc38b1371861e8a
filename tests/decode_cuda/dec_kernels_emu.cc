// dec_kernels_emu.cc — the decoder's CUDA kernels built as C++ for the fake
// driver (tests/cuda/fakecuda): the same source as the cubins, compiled with
// -include cuda_emu.hpp (fibers) -include fakecuda_sig.hpp, and a parameter
// signature per kernel so the fake can refuse a launch it cannot pass.
#include "decode/cuda/dec_kernels.cu"

#define X(k) FAKECUDA_SIG(k)
DEC_CU_KERNELS(X)
