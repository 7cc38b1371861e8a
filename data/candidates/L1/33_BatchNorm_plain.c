// Honest plain training-mode batch norm: per-channel mean and biased variance
// over (N, H, W) in double, then the affine transform; backward with the
// batch-statistics terms.
// @task L1/33_BatchNorm
// @forward bn_fwd(x, w, b, y, N, C, H, W)
// @backward bn_bwd(x, w, dy, dx, dw, db, N, C, H, W)
#include <math.h>
#include <stdint.h>

static void stats(const float *x, int64_t n, int64_t c, int64_t s, int64_t ch, double *mu,
		  double *rstd)
{
	double m = 0, v = 0;
	for (int64_t a = 0; a < n; a++)
		for (int64_t k = 0; k < s; k++)
			m += x[(a * c + ch) * s + k];
	m /= (double)(n * s);
	for (int64_t a = 0; a < n; a++)
		for (int64_t k = 0; k < s; k++) {
			double t = x[(a * c + ch) * s + k] - m;
			v += t * t;
		}
	*mu = m;
	*rstd = 1.0 / sqrt(v / (double)(n * s) + 1e-5);
}

void bn_fwd(const float *x, const float *w, const float *b, float *y, int64_t n, int64_t c,
	    int64_t h, int64_t wd)
{
	int64_t s = h * wd;
	for (int64_t ch = 0; ch < c; ch++) {
		double mu, rstd;
		stats(x, n, c, s, ch, &mu, &rstd);
		for (int64_t a = 0; a < n; a++)
			for (int64_t k = 0; k < s; k++) {
				int64_t i = (a * c + ch) * s + k;
				y[i] = (float)((x[i] - mu) * rstd * w[ch] + b[ch]);
			}
	}
}

void bn_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
	    int64_t n, int64_t c, int64_t h, int64_t wd)
{
	int64_t s = h * wd;
	double cnt = (double)(n * s);
	for (int64_t ch = 0; ch < c; ch++) {
		double mu, rstd, g = 0, gx = 0;
		stats(x, n, c, s, ch, &mu, &rstd);
		for (int64_t a = 0; a < n; a++)
			for (int64_t k = 0; k < s; k++) {
				int64_t i = (a * c + ch) * s + k;
				g += dy[i];
				gx += dy[i] * (x[i] - mu) * rstd;
			}
		dw[ch] = (float)gx;
		db[ch] = (float)g;
		for (int64_t a = 0; a < n; a++)
			for (int64_t k = 0; k < s; k++) {
				int64_t i = (a * c + ch) * s + k;
				double xh = (x[i] - mu) * rstd;
				dx[i] = (float)(rstd * w[ch] * (dy[i] - g / cnt - xh * gx / cnt));
			}
	}
}
