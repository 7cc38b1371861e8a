// Honest plain masked prefix sum per row (the mask holds 0 or 1 as int32);
// backward: suffix sums of dy, gated by the mask.
// @task L1/93_masked_cumsum
// @forward mcs_fwd(x, mask, y, B, D)
// @backward mcs_bwd(mask, dy, dx, B, D)
#include <stdint.h>

void mcs_fwd(const float *x, const int32_t *m, float *y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
		for (int64_t k = 0; k < d; k++) {
			s += m[r * d + k] ? x[r * d + k] : 0.0f;
			y[r * d + k] = s;
		}
	}
}

void mcs_bwd(const int32_t *m, const float *dy, float *dx, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
		for (int64_t k = d - 1; k >= 0; k--) {
			s += dy[r * d + k];
			dx[r * d + k] = m[r * d + k] ? s : 0.0f;
		}
	}
}
