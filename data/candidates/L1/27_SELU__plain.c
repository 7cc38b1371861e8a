// Honest plain SELU with PyTorch's constants; x <= 0 takes the exponential branch.
// @task L1/27_SELU_
// @forward selu_fwd(x, y, B, D)
// @backward selu_bwd(x, dy, dx, B, D)
#include <math.h>
#include <stdint.h>

#define SCALE 1.0507009873554804934f
#define ALPHA 1.6732632423543772848f

void selu_fwd(const float *x, float *y, int64_t b, int64_t d)
{
	for (int64_t i = 0; i < b * d; i++)
		y[i] = x[i] > 0 ? SCALE * x[i] : SCALE * ALPHA * expm1f(x[i]);
}

void selu_bwd(const float *x, const float *dy, float *dx, int64_t b, int64_t d)
{
	for (int64_t i = 0; i < b * d; i++)
		dx[i] = dy[i] * (x[i] > 0 ? SCALE : SCALE * ALPHA * expf(x[i]));
}
