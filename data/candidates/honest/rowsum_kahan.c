// Honest row sum with Kahan (compensated) summation: more accurate than the
// plain loop, so a tolerance rule that rejects it is rejecting honesty.
// @task smoke/rowsum
// @forward rowsum_kahan(x, y, B, D)
#include <stdint.h>

void rowsum_kahan(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		float s = 0, c = 0;
		for (int64_t k = 0; k < d; k++) {
			float t = x[r * d + k] - c;
			float u = s + t;
			c = (u - s) - t;
			s = u;
		}
		y[r] = s;
	}
}
