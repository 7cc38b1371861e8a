// Honest plain ReLU: one loop, forward and backward.
// @task smoke/relu
// @forward relu_fwd(x, y, N)
// @backward relu_bwd(x, dy, dx, N)
#include <stdint.h>

void relu_fwd(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_bwd(const float *x, const float *dy, float *dx, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}
