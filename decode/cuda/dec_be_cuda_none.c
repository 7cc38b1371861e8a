/* dec_be_cuda_none.c — the CUDA backend in a build without it (-Dcuda=
 * disabled, or no nvcc at build time): opening it says why. */
#include "decode/cuda/dec_be_cuda.h"

#ifndef DEC_CUDA_WHY
#define DEC_CUDA_WHY "built without CUDA"
#endif

enum cr_status dec_be_cuda_open(const struct dec_model *m, const struct dec_be_cfg *cfg,
				struct dec_be **out, struct cr_err *err)
{
	(void)m;
	(void)cfg;
	*out = NULL;
	return cr_errf(err, CR_EENV, "the decoder's CUDA backend is not in this build (%s)", DEC_CUDA_WHY);
}
