// Honest plain sum over the middle axis, accumulating rows of D2 in order.
// @task L1/47_Sum_reduction_over_a_dimension
// @forward sum_fwd(x, y, B, D1, D2)
// @backward sum_bwd(dy, dx, B, D1, D2)
#include <stdint.h>

void sum_fwd(const float *x, float *y, int64_t b, int64_t d1, int64_t d2)
{
	for (int64_t a = 0; a < b; a++) {
		float *yr = y + a * d2;
		for (int64_t c = 0; c < d2; c++)
			yr[c] = 0;
		for (int64_t k = 0; k < d1; k++)
			for (int64_t c = 0; c < d2; c++)
				yr[c] += x[(a * d1 + k) * d2 + c];
	}
}

void sum_bwd(const float *dy, float *dx, int64_t b, int64_t d1, int64_t d2)
{
	for (int64_t a = 0; a < b; a++)
		for (int64_t k = 0; k < d1; k++)
			for (int64_t c = 0; c < d2; c++)
				dx[(a * d1 + k) * d2 + c] = dy[a * d2 + c];
}
