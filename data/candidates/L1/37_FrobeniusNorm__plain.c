// Honest plain Frobenius normalisation: one double sum of squares, then a
// scale; backward (dy - y <y, dy>) / ||x||.
// @task L1/37_FrobeniusNorm_
// @forward fro_fwd(x, y, N, C, H, W)
// @backward fro_bwd(x, dy, dx, N, C, H, W)
#include <math.h>
#include <stdint.h>

static double norm(const float *x, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	return sqrt(s);
}

void fro_fwd(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t m = n * c * h * w;
	double inv = 1.0 / norm(x, m);
	for (int64_t i = 0; i < m; i++)
		y[i] = (float)(x[i] * inv);
}

void fro_bwd(const float *x, const float *dy, float *dx, int64_t n, int64_t c, int64_t h, int64_t w)
{
	int64_t m = n * c * h * w;
	double nr = norm(x, m), dot = 0;
	for (int64_t i = 0; i < m; i++)
		dot += (double)x[i] * dy[i];
	for (int64_t i = 0; i < m; i++)
		dx[i] = (float)((dy[i] - x[i] * dot / (nr * nr)) / nr);
}
