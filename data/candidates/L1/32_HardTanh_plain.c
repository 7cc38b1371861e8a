// Honest plain hardtanh(-1, 1); the gradient is zero at and beyond the bounds.
// @task L1/32_HardTanh
// @forward hardtanh_fwd(x, y, B, D)
// @backward hardtanh_bwd(x, dy, dx, B, D)
#include <stdint.h>

void hardtanh_fwd(const float *x, float *y, int64_t b, int64_t d)
{
	for (int64_t i = 0; i < b * d; i++)
		y[i] = x[i] < -1.0f ? -1.0f : x[i] > 1.0f ? 1.0f : x[i];
}

void hardtanh_bwd(const float *x, const float *dy, float *dx, int64_t b, int64_t d)
{
	for (int64_t i = 0; i < b * d; i++)
		dx[i] = (x[i] > -1.0f && x[i] < 1.0f) ? dy[i] : 0.0f;
}
