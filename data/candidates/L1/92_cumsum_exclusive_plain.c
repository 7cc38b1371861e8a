// Honest plain exclusive prefix sum per row (double running sum); backward
// is the exclusive suffix sum of dy.
// @task L1/92_cumsum_exclusive
// @forward cse_fwd(x, y, B, D)
// @backward cse_bwd(dy, dx, B, D)
#include <stdint.h>

void cse_fwd(const float *x, float *y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		double s = 0;
		for (int64_t k = 0; k < d; k++) {
			y[r * d + k] = (float)s;
			s += x[r * d + k];
		}
	}
}

void cse_bwd(const float *dy, float *dx, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		double s = 0;
		for (int64_t k = d - 1; k >= 0; k--) {
			dx[r * d + k] = (float)s;
			s += dy[r * d + k];
		}
	}
}
