// Honest plain NetVLAD, forward and backward: the soft assignment
// softmax(batchnorm(x clusters)) with the batch statistics over all B*N
// rows (training mode, biased variance, eps 1e-5), vlad = a^T x - a_sum *
// clusters2, F.normalize over D per cluster, then over the flattened
// D*K. The backward recomputes the forward (scratch starts as garbage) and
// walks it back: both normalisations, the residual, softmax, BatchNorm and
// the first matmul. Sums accumulate in double; OpenMP over rows and batch.
// @task L3/47_NetVladNoGhostClusters
// @scratch asg f32[B * N * K]
// @scratch xh f32[B * N * K]
// @scratch stat f32[2 * K]
// @scratch vl f32[B * D * K]
// @scratch v1 f32[B * D * K]
// @scratch nrm f32[B * K + B]
// @scratch asum f32[B * K]
// @scratch g f32[B * D * K]
// @scratch ga f32[B * N * K]
// @forward vlad_fwd(x, clusters, batch_norm_w, batch_norm_b, clusters2, y, asg, xh, stat, vl, v1, nrm, asum, B, N, D, K)
// @backward vlad_bwd(x, clusters, batch_norm_w, batch_norm_b, clusters2, y, dy, dx, dclusters, dbatch_norm_w, dbatch_norm_b, dclusters2, asg, xh, stat, vl, v1, nrm, asum, g, ga, B, N, D, K)
#include <math.h>
#include <stdint.h>

#define EPS_BN 1e-5
#define EPS_NORM 1e-12

/* The forward: asg the softmax assignment [B*N, K], xh the normalised
 * pre-activations, stat the per-cluster mean and 1/std, vl the residual
 * sums [B, D, K], v1 those intra-normalised, nrm the per (b, k) norms then
 * the per-b norms, asum the per (b, k) assignment mass; y the output. */
static void forward(const float *x, const float *cl, const float *bw, const float *bb,
		    const float *c2, float *y, float *asg, float *xh, float *stat, float *vl,
		    float *v1, float *nrm, float *asum, int64_t nb, int64_t n, int64_t d, int64_t k)
{
	int64_t rows = nb * n;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++)
		for (int64_t j = 0; j < k; j++) {
			double s = 0;
			for (int64_t q = 0; q < d; q++)
				s += (double)x[r * d + q] * cl[q * k + j];
			asg[r * k + j] = (float)s;
		}
	for (int64_t j = 0; j < k; j++) {
		double m = 0, v = 0;
		for (int64_t r = 0; r < rows; r++)
			m += asg[r * k + j];
		m /= (double)rows;
		for (int64_t r = 0; r < rows; r++)
			v += (asg[r * k + j] - m) * (asg[r * k + j] - m);
		v /= (double)rows;
		stat[j] = (float)m;
		stat[k + j] = (float)(1.0 / sqrt(v + EPS_BN));
	}
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		double mx = -INFINITY, s = 0;
		for (int64_t j = 0; j < k; j++) {
			xh[r * k + j] = (asg[r * k + j] - stat[j]) * stat[k + j];
			asg[r * k + j] = xh[r * k + j] * bw[j] + bb[j];
			if (asg[r * k + j] > mx)
				mx = asg[r * k + j];
		}
		for (int64_t j = 0; j < k; j++) {
			asg[r * k + j] = (float)exp(asg[r * k + j] - mx);
			s += asg[r * k + j];
		}
		for (int64_t j = 0; j < k; j++)
			asg[r * k + j] = (float)(asg[r * k + j] / s);
	}
#pragma omp parallel for schedule(static)
	for (int64_t b = 0; b < nb; b++) {
		const float *xb = x + b * n * d, *ab = asg + b * n * k;
		double tot = 0;
		for (int64_t j = 0; j < k; j++) {
			double s = 0;
			for (int64_t i = 0; i < n; i++)
				s += ab[i * k + j];
			asum[b * k + j] = (float)s;
		}
		for (int64_t q = 0; q < d; q++)
			for (int64_t j = 0; j < k; j++) {
				double s = 0;
				for (int64_t i = 0; i < n; i++)
					s += (double)ab[i * k + j] * xb[i * d + q];
				vl[(b * d + q) * k + j] = (float)(s - (double)asum[b * k + j] * c2[q * k + j]);
			}
		for (int64_t j = 0; j < k; j++) {
			double s = 0;
			for (int64_t q = 0; q < d; q++)
				s += (double)vl[(b * d + q) * k + j] * vl[(b * d + q) * k + j];
			nrm[b * k + j] = (float)fmax(sqrt(s), EPS_NORM);
			for (int64_t q = 0; q < d; q++) {
				float v = vl[(b * d + q) * k + j] / nrm[b * k + j];
				v1[(b * d + q) * k + j] = v;
				tot += (double)v * v;
			}
		}
		nrm[nb * k + b] = (float)fmax(sqrt(tot), EPS_NORM);
		for (int64_t e = 0; e < d * k; e++)
			y[b * d * k + e] = v1[b * d * k + e] / nrm[nb * k + b];
	}
}

void vlad_fwd(const float *x, const float *cl, const float *bw, const float *bb, const float *c2,
	      float *y, float *asg, float *xh, float *stat, float *vl, float *v1, float *nrm,
	      float *asum, int64_t nb, int64_t n, int64_t d, int64_t k)
{
	forward(x, cl, bw, bb, c2, y, asg, xh, stat, vl, v1, nrm, asum, nb, n, d, k);
}

void vlad_bwd(const float *x, const float *cl, const float *bw, const float *bb, const float *c2,
	      const float *yref, const float *dy, float *dx, float *dcl, float *dbw, float *dbb,
	      float *dc2, float *asg, float *xh, float *stat, float *vl, float *v1, float *nrm,
	      float *asum, float *g, float *ga, int64_t nb, int64_t n, int64_t d, int64_t k)
{
	int64_t rows = nb * n;
	float *y = g; /* the recomputed output, overwritten by its gradient below */
	(void)yref;
	forward(x, cl, bw, bb, c2, y, asg, xh, stat, vl, v1, nrm, asum, nb, n, d, k);
#pragma omp parallel for schedule(static)
	for (int64_t b = 0; b < nb; b++) {
		const float *xb = x + b * n * d, *ab = asg + b * n * k;
		float *gb = g + b * d * k;
		double dot = 0, n2 = nrm[nb * k + b];
		/* y = v1 / |v1|: dv1 = (dy - y (y . dy)) / |v1| */
		for (int64_t e = 0; e < d * k; e++)
			dot += (double)y[b * d * k + e] * dy[b * d * k + e];
		for (int64_t e = 0; e < d * k; e++)
			gb[e] = (float)((dy[b * d * k + e] - y[b * d * k + e] * dot) / n2);
		/* v1 = vl / |vl| per cluster: dvl = (dv1 - v1 (v1 . dv1)) / |vl| */
		for (int64_t j = 0; j < k; j++) {
			double s = 0, n1 = nrm[b * k + j];
			for (int64_t q = 0; q < d; q++)
				s += (double)v1[(b * d + q) * k + j] * gb[q * k + j];
			for (int64_t q = 0; q < d; q++)
				gb[q * k + j] = (float)((gb[q * k + j] - v1[(b * d + q) * k + j] * s) / n1);
		}
		/* vl = a^T x - asum * c2: da[i, j] = sum_q dvl[q, j] (x[i, q] - c2[q, j]) */
		for (int64_t i = 0; i < n; i++)
			for (int64_t j = 0; j < k; j++) {
				double s = 0;
				for (int64_t q = 0; q < d; q++)
					s += (double)gb[q * k + j] * (xb[i * d + q] - c2[q * k + j]);
				ga[(b * n + i) * k + j] = (float)s;
			}
		for (int64_t i = 0; i < n; i++)
			for (int64_t q = 0; q < d; q++) {
				double s = 0;
				for (int64_t j = 0; j < k; j++)
					s += (double)ab[i * k + j] * gb[q * k + j];
				dx[(b * n + i) * d + q] = (float)s;
			}
	}
	for (int64_t e = 0; e < d * k; e++) {
		double s = 0;
		for (int64_t b = 0; b < nb; b++)
			s += (double)g[b * d * k + e] * asum[b * k + e % k];
		dc2[e] = (float)-s;
	}
	/* softmax backward, in place on ga */
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		double s = 0;
		for (int64_t j = 0; j < k; j++)
			s += (double)asg[r * k + j] * ga[r * k + j];
		for (int64_t j = 0; j < k; j++)
			ga[r * k + j] = (float)(asg[r * k + j] * (ga[r * k + j] - s));
	}
	/* BatchNorm (batch statistics) backward, in place on ga */
	for (int64_t j = 0; j < k; j++) {
		double sg = 0, sgx = 0;
		for (int64_t r = 0; r < rows; r++) {
			sg += ga[r * k + j];
			sgx += (double)ga[r * k + j] * xh[r * k + j];
		}
		dbw[j] = (float)sgx;
		dbb[j] = (float)sg;
		for (int64_t r = 0; r < rows; r++)
			ga[r * k + j] = (float)(bw[j] * stat[k + j] *
						(ga[r * k + j] - sg / rows - xh[r * k + j] * sgx / rows));
	}
	/* asg0 = x clusters: dclusters = x^T ga, dx += ga clusters^T */
#pragma omp parallel for schedule(static)
	for (int64_t q = 0; q < d; q++)
		for (int64_t j = 0; j < k; j++) {
			double s = 0;
			for (int64_t r = 0; r < rows; r++)
				s += (double)x[r * d + q] * ga[r * k + j];
			dcl[q * k + j] = (float)s;
		}
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++)
		for (int64_t q = 0; q < d; q++) {
			double s = 0;
			for (int64_t j = 0; j < k; j++)
				s += (double)ga[r * k + j] * cl[q * k + j];
			dx[r * d + q] += (float)s;
		}
}
