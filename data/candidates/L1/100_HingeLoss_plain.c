// Honest plain hinge loss: mean of max(1 - p[b, n] * t[n], 0), the targets
// broadcast along the last axis; backward -t where the margin is active.
// @task L1/100_HingeLoss
// @forward hinge_fwd(predictions, targets, loss, B, N)
// @backward hinge_bwd(predictions, targets, dloss, dpredictions, B, N)
#include <stdint.h>

void hinge_fwd(const float *p, const float *t, float *loss, int64_t b, int64_t n)
{
	double s = 0;
	for (int64_t r = 0; r < b; r++)
		for (int64_t k = 0; k < n; k++) {
			float m = 1.0f - p[r * n + k] * t[k];
			s += m > 0 ? m : 0;
		}
	loss[0] = (float)(s / (double)(b * n));
}

void hinge_bwd(const float *p, const float *t, const float *dl, float *dp, int64_t b, int64_t n)
{
	float g = dl[0] / (float)(b * n);
	for (int64_t r = 0; r < b; r++)
		for (int64_t k = 0; k < n; k++)
			dp[r * n + k] = 1.0f - p[r * n + k] * t[k] >= 0 ? -g * t[k] : 0.0f;
}
