// Honest fast softmax: online (single-pass) max and sum per row, rows across threads.
// @task smoke/softmax
// @forward softmax_fwd(x, y, B, D)
// @backward softmax_bwd(y, dy, dx, B, D)
#include <math.h>
#include <stdint.h>

void softmax_fwd(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * d;
		float m = -INFINITY, s = 0;
		for (int64_t k = 0; k < d; k++) {
			float v = xr[k];
			if (v > m) {
				s *= expf(m - v);
				m = v;
			}
			s += expf(v - m);
		}
		float inv = 1.0f / s;
#pragma omp simd
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] = expf(xr[k] - m) * inv;
	}
}

void softmax_bwd(const float *restrict y, const float *restrict dy, float *restrict dx,
		 int64_t b, int64_t d)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < b; r++) {
		float dot = 0;
#pragma omp simd reduction(+ : dot)
		for (int64_t k = 0; k < d; k++)
			dot += y[r * d + k] * dy[r * d + k];
#pragma omp simd
		for (int64_t k = 0; k < d; k++)
			dx[r * d + k] = y[r * d + k] * (dy[r * d + k] - dot);
	}
}
