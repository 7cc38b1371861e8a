// Honest row sum whose library is large (a 4 MiB constant table, as a
// kernel with big lookup tables has): the jail must bring the library in
// whole (a read-only bind mount; a copy would hit the worker's 1 MiB
// RLIMIT_FSIZE and kill the worker with SIGXFSZ).
// @task smoke/rowsum
// @forward rowsum_table(x, y, B, D)
#include <stdint.h>

#define TABLE_N (1 << 20)
/* exported, so the compiler can neither drop nor fold it */
const float sbx_scale_table[TABLE_N] = { [0 ... TABLE_N - 1] = 1.0f };

void rowsum_table(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	float one = sbx_scale_table[(uint64_t)(b * d) % TABLE_N];
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
		for (int64_t k = 0; k < d; k++)
			s += x[r * d + k];
		y[r] = s * one;
	}
}
