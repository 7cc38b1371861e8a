// Honest plain softmax: max, exp-sum, normalise; backward y * (dy - <dy, y>).
// @task smoke/softmax
// @forward softmax_fwd(x, y, B, D)
// @backward softmax_bwd(y, dy, dx, B, D)
#include <math.h>
#include <stdint.h>

void softmax_fwd(const float *x, float *y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * d;
		float m = xr[0], s = 0;
		for (int64_t k = 1; k < d; k++)
			m = xr[k] > m ? xr[k] : m;
		for (int64_t k = 0; k < d; k++) {
			y[r * d + k] = expf(xr[k] - m);
			s += y[r * d + k];
		}
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] /= s;
	}
}

void softmax_bwd(const float *y, const float *dy, float *dx, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		float dot = 0;
		for (int64_t k = 0; k < d; k++)
			dot += y[r * d + k] * dy[r * d + k];
		for (int64_t k = 0; k < d; k++)
			dx[r * d + k] = y[r * d + k] * (dy[r * d + k] - dot);
	}
}
