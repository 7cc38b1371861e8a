/* fakecuda_kernels.h — for tests that run candidates on the fake CUDA
 * driver (libfakecuda.so): where the fake looks for the emulated kernels,
 * and the C++ build of a candidate's emulation into that place.
 *
 * The fake loads <directory of libfakecuda.so>/fakecuda-kernels.so at each
 * cuModuleLoadDataEx; a test builds the candidate under test there before it
 * starts the worker. The build is `c++ -std=c++20 -include cuda_emu.hpp
 * -include fakecuda_sig.hpp` of a wrapper that includes the candidate and
 * records each kernel's parameter kinds (FAKECUDA_SIG), written to a
 * temporary file and renamed into place. */
#ifndef FAKECUDA_KERNELS_H
#define FAKECUDA_KERNELS_H

#include <stddef.h>

#include "cuda/cuda_cubin.h"

/* dirname(lib) + "/fakecuda-kernels.so" into out; -1 when it does not fit. */
int fakecuda_kernels_path(const char *lib, char *out, size_t cap);

/* Builds the emulation of the candidate at cu_path, with a signature for
 * every extern "C" kernel of its cubin (info), into dest. $CXX, else c++.
 * 0 on success; -1 with the reason (and the compiler log's path) in why. */
int fakecuda_build_kernels(const char *src_root, const char *cu_path, const struct cr_cubin_info *info,
			   const char *dest, char *why, size_t cap);

#endif
