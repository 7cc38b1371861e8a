// Honest fast log-softmax: online max and sum per row, rows across threads.
// @task L1/24_LogSoftmax
// @forward lsm_fwd(x, y, B, D)
// @backward lsm_bwd(y, dy, dx, B, D)
#include <math.h>
#include <stdint.h>

void lsm_fwd(const float *restrict x, float *restrict y, int64_t b, int64_t d)
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
		float lse = m + logf(s);
#pragma omp simd
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] = xr[k] - lse;
	}
}

/* dx = dy - softmax * sum(dy), softmax = exp(y) */
void lsm_bwd(const float *restrict y, const float *restrict dy, float *restrict dx, int64_t b,
	     int64_t d)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
#pragma omp simd reduction(+ : s)
		for (int64_t k = 0; k < d; k++)
			s += dy[r * d + k];
		for (int64_t k = 0; k < d; k++)
			dx[r * d + k] = dy[r * d + k] - expf(y[r * d + k]) * s;
	}
}
