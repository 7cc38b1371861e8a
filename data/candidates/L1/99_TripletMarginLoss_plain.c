// Honest plain triplet margin loss (margin 1, p 2, eps 1e-6 added to the
// differences), mean over rows; gradients for all three inputs.
// @task L1/99_TripletMarginLoss
// @forward tml_fwd(anchor, positive, negative, loss, B, D)
// @backward tml_bwd(anchor, positive, negative, dloss, danchor, dpositive, dnegative, B, D)
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

static void dists(const float *a, const float *p, const float *n, int64_t d, double *dp, double *dn)
{
	double sp = 0, sn = 0;
	for (int64_t k = 0; k < d; k++) {
		double u = (double)a[k] - p[k] + 1e-6, v = (double)a[k] - n[k] + 1e-6;
		sp += u * u;
		sn += v * v;
	}
	*dp = sqrt(sp);
	*dn = sqrt(sn);
}

void tml_fwd(const float *a, const float *p, const float *n, float *loss, int64_t b, int64_t d)
{
	double s = 0;
	for (int64_t r = 0; r < b; r++) {
		double dp, dn;
		dists(a + r * d, p + r * d, n + r * d, d, &dp, &dn);
		s += fmax(dp - dn + 1.0, 0.0);
	}
	loss[0] = (float)(s / (double)b);
}

void tml_bwd(const float *a, const float *p, const float *n, const float *dl, float *da, float *dpo,
	     float *dne, int64_t b, int64_t d)
{
	double g = dl[0] / (double)b;
	for (int64_t r = 0; r < b; r++) {
		double dp, dn;
		const float *ar = a + r * d, *pr = p + r * d, *nr = n + r * d;
		dists(ar, pr, nr, d, &dp, &dn);
		bool on = dp - dn + 1.0 >= 0;
		for (int64_t k = 0; k < d; k++) {
			double u = on ? g * ((double)ar[k] - pr[k] + 1e-6) / dp : 0;
			double v = on ? g * ((double)ar[k] - nr[k] + 1e-6) / dn : 0;
			da[r * d + k] = (float)(u - v);
			dpo[r * d + k] = (float)-u;
			dne[r * d + k] = (float)v;
		}
	}
}
