// Honest plain matmul: i-k-j loops, float accumulation.
// @task smoke/matmul
// @forward mm_fwd(a, b, c, M, K, N)
// @backward mm_bwd(a, b, dc, da, db, M, K, N)
#include <stdint.h>

void mm_fwd(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n)
{
	for (int64_t i = 0; i < m * n; i++)
		c[i] = 0;
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++)
			for (int64_t j = 0; j < n; j++)
				c[i * n + j] += a[i * k + p] * b[p * n + j];
}

void mm_bwd(const float *a, const float *b, const float *dc, float *da, float *db,
	    int64_t m, int64_t k, int64_t n)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++) {
			float s = 0;
			for (int64_t j = 0; j < n; j++)
				s += dc[i * n + j] * b[p * n + j];
			da[i * k + p] = s;
		}
	for (int64_t p = 0; p < k * n; p++)
		db[p] = 0;
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++)
			for (int64_t j = 0; j < n; j++)
				db[p * n + j] += a[i * k + p] * dc[i * n + j];
}
