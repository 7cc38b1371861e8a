// Honest fast row sum: rows across threads, an 8-wide vector reduction per row
// (a different summation order from the plain one; within tolerance).
// @task smoke/rowsum
// @forward rowsum_fwd(x, y, B, D)
// @backward rowsum_bwd(dy, dx, B, D)
#include <stdint.h>

void rowsum_fwd(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
#pragma omp simd reduction(+ : s)
		for (int64_t k = 0; k < d; k++)
			s += x[r * d + k];
		y[r] = s;
	}
}

void rowsum_bwd(const float *restrict dy, float *restrict dx, int64_t b, int64_t d)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < b; r++)
		for (int64_t k = 0; k < d; k++)
			dx[r * d + k] = dy[r];
}
