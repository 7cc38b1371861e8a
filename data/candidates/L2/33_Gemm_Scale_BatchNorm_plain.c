// Honest plain linear -> * scale[F] -> training-mode BatchNorm1d: the GEMM as
// row-by-row dot products, batch statistics per feature in double, biased
// variance, eps 1e-5; backward with the batch-statistics terms.
// @task L2/33_Gemm_Scale_BatchNorm
// @scratch z f32[B * F]
// @forward fwd(x, w, b, scale, bn_w, bn_b, y, z, B, K, F)
// @backward bwd(x, w, b, scale, bn_w, dy, dx, dw, db, dscale, dbn_w, dbn_b, z, B, K, F)
#include <math.h>
#include <stdint.h>

static void linear(const float *x, const float *w, const float *b, float *z, int64_t nb, int64_t k,
		   int64_t f)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < nb; r++)
		for (int64_t j = 0; j < f; j++) {
			float acc = 0;
			for (int64_t q = 0; q < k; q++)
				acc += x[r * k + q] * w[j * k + q];
			z[r * f + j] = acc + b[j];
		}
}

static void stats(const float *z, const float *scale, int64_t nb, int64_t f, int64_t j, double *mu,
		  double *rstd)
{
	double m = 0, v = 0;
	for (int64_t r = 0; r < nb; r++)
		m += (double)z[r * f + j] * scale[j];
	m /= (double)nb;
	for (int64_t r = 0; r < nb; r++) {
		double t = (double)z[r * f + j] * scale[j] - m;
		v += t * t;
	}
	*mu = m;
	*rstd = 1.0 / sqrt(v / (double)nb + 1e-5);
}

void fwd(const float *x, const float *w, const float *b, const float *scale, const float *g,
	 const float *be, float *y, float *z, int64_t nb, int64_t k, int64_t f)
{
	linear(x, w, b, z, nb, k, f);
	for (int64_t j = 0; j < f; j++) {
		double mu, rstd;
		stats(z, scale, nb, f, j, &mu, &rstd);
		for (int64_t r = 0; r < nb; r++)
			y[r * f + j] = (float)(((double)z[r * f + j] * scale[j] - mu) * rstd * g[j] + be[j]);
	}
}

void bwd(const float *x, const float *w, const float *b, const float *scale, const float *g,
	 const float *dy, float *dx, float *dw, float *db, float *dscale, float *dg, float *dbe,
	 float *z, int64_t nb, int64_t k, int64_t f)
{
	linear(x, w, b, z, nb, k, f);
	for (int64_t j = 0; j < f; j++) {
		double mu, rstd, s1 = 0, s2 = 0, ds = 0, dbs = 0;
		stats(z, scale, nb, f, j, &mu, &rstd);
		for (int64_t r = 0; r < nb; r++) {
			double uh = ((double)z[r * f + j] * scale[j] - mu) * rstd, d = dy[r * f + j];
			s1 += d;
			s2 += d * uh;
		}
		dg[j] = (float)s2;
		dbe[j] = (float)s1;
		for (int64_t r = 0; r < nb; r++) {
			double uh = ((double)z[r * f + j] * scale[j] - mu) * rstd;
			double du = rstd * g[j] * (dy[r * f + j] - s1 / nb - uh * s2 / nb);
			ds += du * z[r * f + j];
			z[r * f + j] = (float)(du * scale[j]); /* z becomes dz */
			dbs += z[r * f + j];
		}
		dscale[j] = (float)ds;
		db[j] = (float)dbs;
	}
	for (int64_t j = 0; j < f; j++)
		for (int64_t q = 0; q < k; q++) {
			float acc = 0;
			for (int64_t r = 0; r < nb; r++)
				acc += z[r * f + j] * x[r * k + q];
			dw[j * k + q] = acc;
		}
	for (int64_t r = 0; r < nb; r++)
		for (int64_t q = 0; q < k; q++) {
			float acc = 0;
			for (int64_t j = 0; j < f; j++)
				acc += z[r * f + j] * w[j * k + q];
			dx[r * k + q] = acc;
		}
}
