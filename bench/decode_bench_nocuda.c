/* decode_bench_nocuda.c — decode_bench --device cuda in a build without the
 * decoder's CUDA backend: says so. */
#include <stdio.h>

#include "bench/decode_bench.h"

int bench_cuda(const struct dec_model *m, const char *label, int n_prompt, int n_gen)
{
	(void)m;
	(void)label;
	(void)n_prompt;
	(void)n_gen;
	fprintf(stderr, "decode_bench: --device cuda: this build has no CUDA backend\n");
	return 3;
}

int bench_cuda_parity(const struct dec_model *m, int n_steps)
{
	return bench_cuda(m, "", 0, n_steps);
}
