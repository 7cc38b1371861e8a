// Honest fast matmul: 64x64 blocking with remainders, rows of blocks across threads.
// @task smoke/matmul
// @forward mm_fwd(a, b, c, M, K, N)
#include <stdint.h>

#define BS 64

void mm_fwd(const float *restrict a, const float *restrict b, float *restrict c,
	    int64_t m, int64_t k, int64_t n)
{
#pragma omp parallel for schedule(static)
	for (int64_t i0 = 0; i0 < m; i0 += BS) {
		int64_t i1 = i0 + BS < m ? i0 + BS : m;
		for (int64_t i = i0; i < i1; i++)
			for (int64_t j = 0; j < n; j++)
				c[i * n + j] = 0;
		for (int64_t p0 = 0; p0 < k; p0 += BS) {
			int64_t p1 = p0 + BS < k ? p0 + BS : k;
			for (int64_t i = i0; i < i1; i++)
				for (int64_t p = p0; p < p1; p++) {
					float av = a[i * k + p];
#pragma omp simd
					for (int64_t j = 0; j < n; j++)
						c[i * n + j] += av * b[p * n + j];
				}
		}
	}
}
