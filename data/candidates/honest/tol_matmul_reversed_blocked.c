// Honest matmul in another summation order: K split into blocks of 64
// taken from the last block to the first, each block's partial dot product
// accumulated in float and added to the running float sum. Its rounding
// errors differ from the baseline's (OpenBLAS) in sign and size; the
// aggregate and bias bounds must accept them.
// @task smoke/matmul
// @forward mm(a, b, c, M, K, N)
#include <stdint.h>

void mm(const float *restrict a, const float *restrict b, float *restrict c, int64_t m, int64_t kk,
	int64_t n)
{
	const int64_t bk = 64;
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++)
			c[i * n + j] = 0;
	for (int64_t k0 = ((kk - 1) / bk) * bk; k0 >= 0; k0 -= bk) {
		int64_t k1 = k0 + bk < kk ? k0 + bk : kk;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				float s = 0;
				for (int64_t k = k0; k < k1; k++)
					s += a[i * kk + k] * b[k * n + j];
				c[i * n + j] += s;
			}
	}
}
