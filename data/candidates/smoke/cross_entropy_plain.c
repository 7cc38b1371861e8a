// Honest plain cross-entropy with max-subtracted log-sum-exp.
// @task smoke/cross_entropy
// @forward xent_fwd(logits, target, loss, B, C)
// @backward xent_bwd(logits, target, dloss, dlogits, B, C)
#include <math.h>
#include <stdint.h>

void xent_fwd(const float *x, const int64_t *t, float *loss, int64_t b, int64_t c)
{
	double total = 0;
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * c;
		float m = xr[0];
		double s = 0;
		for (int64_t k = 1; k < c; k++)
			m = xr[k] > m ? xr[k] : m;
		for (int64_t k = 0; k < c; k++)
			s += expf(xr[k] - m);
		total += m + log(s) - xr[t[r]];
	}
	loss[0] = (float)(total / b);
}

void xent_bwd(const float *x, const int64_t *t, const float *dl, float *dx, int64_t b, int64_t c)
{
	float g = dl[0] / (float)b;
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * c;
		float m = xr[0], s = 0;
		for (int64_t k = 1; k < c; k++)
			m = xr[k] > m ? xr[k] : m;
		for (int64_t k = 0; k < c; k++)
			s += expf(xr[k] - m);
		for (int64_t k = 0; k < c; k++)
			dx[r * c + k] = g * (expf(xr[k] - m) / s - (k == t[r] ? 1.0f : 0.0f));
	}
}
