// Honest plain sigmoid; backward s * (1 - s) recomputed from x.
// @task L1/21_Sigmoid
// @forward sigmoid_fwd(x, y, B, D)
// @backward sigmoid_bwd(x, dy, dx, B, D)
#include <math.h>
#include <stdint.h>

void sigmoid_fwd(const float *x, float *y, int64_t b, int64_t d)
{
	for (int64_t i = 0; i < b * d; i++)
		y[i] = 1.0f / (1.0f + expf(-x[i]));
}

void sigmoid_bwd(const float *x, const float *dy, float *dx, int64_t b, int64_t d)
{
	for (int64_t i = 0; i < b * d; i++) {
		float s = 1.0f / (1.0f + expf(-x[i]));
		dx[i] = dy[i] * s * (1.0f - s);
	}
}
