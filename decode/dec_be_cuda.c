/* dec_be_cuda.c — the CUDA backend of dec_be.h. Not in this build yet: the
 * kernels and their host side are being written (issue 13); until then
 * opening it says so, and `--device auto` runs on the CPU. */
#include "decode/dec_be.h"

enum cr_status dec_be_cuda_open(const struct dec_model *m, const struct dec_be_cfg *cfg,
				struct dec_be **out, struct cr_err *err)
{
	(void)m;
	(void)cfg;
	*out = NULL;
	return cr_errf(err, CR_EENV, "the decoder's CUDA backend is not in this build");
}
