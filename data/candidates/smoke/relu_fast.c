// Honest fast ReLU: OpenMP across cores, vectorised branch-free body.
// @task smoke/relu
// @forward relu_fwd(x, y, N)
// @backward relu_bwd(x, dy, dx, N)
#include <stdint.h>

void relu_fwd(const float *restrict x, float *restrict y, int64_t n)
{
#pragma omp parallel for simd schedule(static)
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_bwd(const float *restrict x, const float *restrict dy, float *restrict dx, int64_t n)
{
#pragma omp parallel for simd schedule(static)
	for (int64_t i = 0; i < n; i++)
		dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}
