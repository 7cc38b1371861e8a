// Honest plain layer norm: two passes (mean, then centred variance).
// @task smoke/layernorm
// @forward ln_fwd(x, w, b, y, B, D)
// @backward ln_bwd(x, w, dy, dx, dw, db, B, D)
#include <math.h>
#include <stdint.h>

void ln_fwd(const float *x, const float *w, const float *bias, float *y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * d;
		double mu = 0, var = 0;
		for (int64_t k = 0; k < d; k++)
			mu += xr[k];
		mu /= d;
		for (int64_t k = 0; k < d; k++)
			var += (xr[k] - mu) * (xr[k] - mu);
		float rstd = (float)(1.0 / sqrt(var / d + 1e-5));
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] = (float)(xr[k] - mu) * rstd * w[k] + bias[k];
	}
}

void ln_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
	    int64_t b, int64_t d)
{
	for (int64_t k = 0; k < d; k++)
		dw[k] = db[k] = 0;
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * d, *g = dy + r * d;
		double mu = 0, var = 0, s1 = 0, s2 = 0;
		for (int64_t k = 0; k < d; k++)
			mu += xr[k];
		mu /= d;
		for (int64_t k = 0; k < d; k++)
			var += (xr[k] - mu) * (xr[k] - mu);
		double rstd = 1.0 / sqrt(var / d + 1e-5);
		for (int64_t k = 0; k < d; k++) {
			double xh = (xr[k] - mu) * rstd;
			s1 += g[k] * w[k];
			s2 += g[k] * w[k] * xh;
			dw[k] += (float)(g[k] * xh);
			db[k] += g[k];
		}
		s1 /= d;
		s2 /= d;
		for (int64_t k = 0; k < d; k++) {
			double xh = (xr[k] - mu) * rstd;
			dx[r * d + k] = (float)(rstd * (g[k] * w[k] - s1 - xh * s2));
		}
	}
}
