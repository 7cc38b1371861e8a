// Honest fast exact GELU: OpenMP + simd, forward and backward.
// @task smoke/gelu
// @forward gelu_fwd(x, y, N)
// @backward gelu_bwd(x, dy, dx, N)
#include <math.h>
#include <stdint.h>

void gelu_fwd(const float *x, float *y, int64_t n)
{
#pragma omp parallel for simd
	for (int64_t i = 0; i < n; i++)
		y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
}

void gelu_bwd(const float *x, const float *dy, float *dx, int64_t n)
{
#pragma omp parallel for simd
	for (int64_t i = 0; i < n; i++) {
		float cdf = 0.5f * (1.0f + erff(x[i] * 0.70710678f));
		float pdf = expf(-0.5f * x[i] * x[i]) * 0.39894228f;
		dx[i] = dy[i] * (cdf + x[i] * pdf);
	}
}
