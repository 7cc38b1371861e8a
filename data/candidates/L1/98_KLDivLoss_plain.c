// Honest plain KL divergence, reduction 'batchmean': sum t * (log t - log p) / B,
// a zero target contributing nothing; backward -t / (p B).
// @task L1/98_KLDivLoss
// @forward kl_fwd(predictions, targets, loss, B, D)
// @backward kl_bwd(predictions, targets, dloss, dpredictions, B, D)
#include <math.h>
#include <stdint.h>

void kl_fwd(const float *p, const float *t, float *loss, int64_t b, int64_t d)
{
	double s = 0;
	for (int64_t i = 0; i < b * d; i++)
		if (t[i] > 0)
			s += t[i] * (logf(t[i]) - logf(p[i]));
	loss[0] = (float)(s / (double)b);
}

void kl_bwd(const float *p, const float *t, const float *dl, float *dp, int64_t b, int64_t d)
{
	float g = dl[0] / (float)b;
	for (int64_t i = 0; i < b * d; i++)
		dp[i] = -g * t[i] / p[i];
}
