// Honest plain NetVLAD with ghost clusters, forward and backward: the soft
// assignment softmax(batchnorm(x [clusters | clusters_ghost])) over all
// K + G clusters, with the batch statistics over all B*N rows (training
// mode, biased variance, eps 1e-5); the ghost columns are then dropped:
// vlad = a[:, :K]^T x - a_sum * clusters2, F.normalize over D per cluster,
// then over the flattened D*K. The backward recomputes the forward
// (scratch starts as garbage) and walks it back; the ghosts get their
// gradient through the softmax's normaliser and BatchNorm only. Sums
// accumulate in double; OpenMP over rows and batch.
// @task L3/46_NetVladWithGhostClusters
// @scratch asg f32[B * N * (K + G)]
// @scratch xh f32[B * N * (K + G)]
// @scratch stat f32[2 * (K + G)]
// @scratch vl f32[B * D * K]
// @scratch v1 f32[B * D * K]
// @scratch nrm f32[B * K + B]
// @scratch asum f32[B * K]
// @scratch g f32[B * D * K]
// @scratch ga f32[B * N * (K + G)]
// @forward vlad_fwd(x, clusters, clusters_ghost, batch_norm_w, batch_norm_w_ghost, batch_norm_b, batch_norm_b_ghost, clusters2, y, asg, xh, stat, vl, v1, nrm, asum, B, N, D, K, G)
// @backward vlad_bwd_assign(x, clusters, clusters_ghost, batch_norm_w, batch_norm_w_ghost, batch_norm_b, batch_norm_b_ghost, clusters2, dy, dx, dclusters2, asg, xh, stat, vl, v1, nrm, asum, g, ga, B, N, D, K, G)
// @backward vlad_bwd_params(x, clusters, clusters_ghost, batch_norm_w, batch_norm_w_ghost, dx, dclusters, dclusters_ghost, dbatch_norm_w, dbatch_norm_w_ghost, dbatch_norm_b, dbatch_norm_b_ghost, asg, xh, stat, ga, B, N, D, K, G)
#include <math.h>
#include <stdint.h>
#include <math.h>
#include <stdint.h>

#define EPS_BN 1e-5
#define EPS_NORM 1e-12

/* Column j of the K + G clusters (the ghosts after the K real ones). */
static float col(const float *real, const float *ghost, int64_t q, int64_t j, int64_t k,
		 int64_t g)
{
	return j < k ? real[q * k + j] : ghost[q * g + j - k];
}

static float pick(const float *real, const float *ghost, int64_t j, int64_t k)
{
	return j < k ? real[j] : ghost[j - k];
}

/* asg the softmax assignment [B*N, K+G], xh the normalised
 * pre-activations, stat the per-cluster mean and 1/std, vl the residual
 * sums [B, D, K], v1 those intra-normalised, nrm the per (b, k) norms then
 * the per-b norms, asum the per (b, k) assignment mass; y the output. */
static void forward(const float *x, const float *cl, const float *clg, const float *bw,
		    const float *bwg, const float *bb, const float *bbg, const float *c2, float *y,
		    float *asg, float *xh, float *stat, float *vl, float *v1, float *nrm, float *asum,
		    int64_t nb, int64_t n, int64_t d, int64_t k, int64_t g)
{
	int64_t rows = nb * n, kk = k + g;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++)
		for (int64_t j = 0; j < kk; j++) {
			double s = 0;
			for (int64_t q = 0; q < d; q++)
				s += (double)x[r * d + q] * col(cl, clg, q, j, k, g);
			asg[r * kk + j] = (float)s;
		}
	for (int64_t j = 0; j < kk; j++) {
		double m = 0, v = 0;
		for (int64_t r = 0; r < rows; r++)
			m += asg[r * kk + j];
		m /= (double)rows;
		for (int64_t r = 0; r < rows; r++)
			v += (asg[r * kk + j] - m) * (asg[r * kk + j] - m);
		v /= (double)rows;
		stat[j] = (float)m;
		stat[kk + j] = (float)(1.0 / sqrt(v + EPS_BN));
	}
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		double mx = -INFINITY, s = 0;
		for (int64_t j = 0; j < kk; j++) {
			xh[r * kk + j] = (asg[r * kk + j] - stat[j]) * stat[kk + j];
			asg[r * kk + j] = xh[r * kk + j] * pick(bw, bwg, j, k) + pick(bb, bbg, j, k);
			if (asg[r * kk + j] > mx)
				mx = asg[r * kk + j];
		}
		for (int64_t j = 0; j < kk; j++) {
			asg[r * kk + j] = (float)exp(asg[r * kk + j] - mx);
			s += asg[r * kk + j];
		}
		for (int64_t j = 0; j < kk; j++)
			asg[r * kk + j] = (float)(asg[r * kk + j] / s);
	}
#pragma omp parallel for schedule(static)
	for (int64_t b = 0; b < nb; b++) {
		const float *xb = x + b * n * d, *ab = asg + b * n * kk;
		double tot = 0;
		for (int64_t j = 0; j < k; j++) {
			double s = 0;
			for (int64_t i = 0; i < n; i++)
				s += ab[i * kk + j];
			asum[b * k + j] = (float)s;
		}
		for (int64_t q = 0; q < d; q++)
			for (int64_t j = 0; j < k; j++) {
				double s = 0;
				for (int64_t i = 0; i < n; i++)
					s += (double)ab[i * kk + j] * xb[i * d + q];
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

void vlad_fwd(const float *x, const float *cl, const float *clg, const float *bw, const float *bwg,
	      const float *bb, const float *bbg, const float *c2, float *y, float *asg, float *xh,
	      float *stat, float *vl, float *v1, float *nrm, float *asum, int64_t nb, int64_t n,
	      int64_t d, int64_t k, int64_t g)
{
	forward(x, cl, clg, bw, bwg, bb, bbg, c2, y, asg, xh, stat, vl, v1, nrm, asum, nb, n, d, k, g);
}

/* The forward again, then back to the assignment: both normalisations,
 * the residual (dx's part through a^T x, dclusters2), and the softmax over
 * all K + G (the ghosts' upstream gradient is 0) into ga. */
void vlad_bwd_assign(const float *x, const float *cl, const float *clg, const float *bw,
		     const float *bwg, const float *bb, const float *bbg, const float *c2,
		     const float *dy, float *dx, float *dc2, float *asg, float *xh, float *stat,
		     float *vl, float *v1, float *nrm, float *asum, float *g, float *ga, int64_t nb,
		     int64_t n, int64_t d, int64_t k, int64_t gh)
{
	int64_t rows = nb * n, kk = k + gh;
	float *y = g; /* the recomputed output, overwritten by its gradient below */
	forward(x, cl, clg, bw, bwg, bb, bbg, c2, y, asg, xh, stat, vl, v1, nrm, asum, nb, n, d, k, gh);
#pragma omp parallel for schedule(static)
	for (int64_t b = 0; b < nb; b++) {
		const float *xb = x + b * n * d, *ab = asg + b * n * kk;
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
			for (int64_t j = 0; j < kk; j++) {
				double s = 0;
				for (int64_t q = 0; j < k && q < d; q++)
					s += (double)gb[q * k + j] * (xb[i * d + q] - c2[q * k + j]);
				ga[(b * n + i) * kk + j] = (float)s;
			}
		for (int64_t i = 0; i < n; i++)
			for (int64_t q = 0; q < d; q++) {
				double s = 0;
				for (int64_t j = 0; j < k; j++)
					s += (double)ab[i * kk + j] * gb[q * k + j];
				dx[(b * n + i) * d + q] = (float)s;
			}
	}
	for (int64_t e = 0; e < d * k; e++) {
		double s = 0;
		for (int64_t b = 0; b < nb; b++)
			s += (double)g[b * d * k + e] * asum[b * k + e % k];
		dc2[e] = (float)-s;
	}
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		double s = 0;
		for (int64_t j = 0; j < kk; j++)
			s += (double)asg[r * kk + j] * ga[r * kk + j];
		for (int64_t j = 0; j < kk; j++)
			ga[r * kk + j] = (float)(asg[r * kk + j] * (ga[r * kk + j] - s));
	}
}

/* BatchNorm (batch statistics) backward over the K + G clusters, then the
 * first matmul: the cluster columns' gradients and dx's second part. */
void vlad_bwd_params(const float *x, const float *cl, const float *clg, const float *bw,
		     const float *bwg, float *dx, float *dcl, float *dclg, float *dbw, float *dbwg,
		     float *dbb, float *dbbg, float *asg, float *xh, float *stat, float *ga,
		     int64_t nb, int64_t n, int64_t d, int64_t k, int64_t g)
{
	int64_t rows = nb * n, kk = k + g;
	(void)asg;
	for (int64_t j = 0; j < kk; j++) {
		double sg = 0, sgx = 0;
		for (int64_t r = 0; r < rows; r++) {
			sg += ga[r * kk + j];
			sgx += (double)ga[r * kk + j] * xh[r * kk + j];
		}
		if (j < k) {
			dbw[j] = (float)sgx;
			dbb[j] = (float)sg;
		} else {
			dbwg[j - k] = (float)sgx;
			dbbg[j - k] = (float)sg;
		}
		for (int64_t r = 0; r < rows; r++)
			ga[r * kk + j] = (float)(pick(bw, bwg, j, k) * stat[kk + j] *
						 (ga[r * kk + j] - sg / rows - xh[r * kk + j] * sgx / rows));
	}
#pragma omp parallel for schedule(static)
	for (int64_t q = 0; q < d; q++)
		for (int64_t j = 0; j < kk; j++) {
			double s = 0;
			for (int64_t r = 0; r < rows; r++)
				s += (double)x[r * d + q] * ga[r * kk + j];
			if (j < k)
				dcl[q * k + j] = (float)s;
			else
				dclg[q * g + j - k] = (float)s;
		}
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++)
		for (int64_t q = 0; q < d; q++) {
			double s = 0;
			for (int64_t j = 0; j < kk; j++)
				s += (double)ga[r * kk + j] * col(cl, clg, q, j, k, g);
			dx[r * d + q] += (float)s;
		}
}
