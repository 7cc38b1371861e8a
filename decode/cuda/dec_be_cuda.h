/* dec_be_cuda.h — the CUDA backend's one entry point (dec_be_cuda_open.c;
 * dec_be_cuda_none.c when built without CUDA or nvcc). */
#ifndef DEC_BE_CUDA_H
#define DEC_BE_CUDA_H

#include "common/cr_status.h"
#include "decode/be/dec_be.h"

/* The CUDA backend: CR_EENV with the reason (no driver, no device, built
 * without CUDA) when unavailable. */
enum cr_status dec_be_cuda_open(const struct dec_model *m, const struct dec_be_cfg *cfg,
				struct dec_be **out, struct cr_err *err);

#endif
