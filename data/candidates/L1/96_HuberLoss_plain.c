// Honest plain smooth-L1 (beta 1) loss, mean over all elements.
// @task L1/96_HuberLoss
// @forward huber_fwd(predictions, targets, loss, B, D)
// @backward huber_bwd(predictions, targets, dloss, dpredictions, B, D)
#include <math.h>
#include <stdint.h>

void huber_fwd(const float *p, const float *t, float *loss, int64_t b, int64_t d)
{
	double s = 0;
	for (int64_t i = 0; i < b * d; i++) {
		float e = p[i] - t[i], a = fabsf(e);
		s += a < 1.0f ? 0.5f * e * e : a - 0.5f;
	}
	loss[0] = (float)(s / (double)(b * d));
}

void huber_bwd(const float *p, const float *t, const float *dl, float *dp, int64_t b, int64_t d)
{
	float g = dl[0] / (float)(b * d);
	for (int64_t i = 0; i < b * d; i++) {
		float e = p[i] - t[i];
		dp[i] = g * (e > 1.0f ? 1.0f : e < -1.0f ? -1.0f : e);
	}
}
