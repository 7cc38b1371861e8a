/* decode_bench.h — decode_bench's CUDA part (decode_bench_cuda.c, or
 * decode_bench_nocuda.c in a build without the CUDA backend). */
#ifndef DECODE_BENCH_H
#define DECODE_BENCH_H

#include "decode/model/dec_model.h"

/* Prefill, batch-1 decode with the memory roofline, batch 16 and 64 on the
 * CUDA backend; prints; 0, or 3 when the backend does not open or fails. */
int bench_cuda(const struct dec_model *m, const char *label, int n_prompt, int n_gen);
/* Greedy decoding of n_steps on the CPU and CUDA backends: prints where the
 * tokens part and the largest top-5 logprob difference; 0 identical, 1
 * parted, 3 an error. */
int bench_cuda_parity(const struct dec_model *m, int n_steps);

#endif
