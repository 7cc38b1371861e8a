// Honest Mamba-2 final state without the chunked SSD form: the state after
// the whole sequence is the sum over positions s of w_s B_s (x) X_s, with
// w_s = exp(A_{s+1} + ... + A_{S-1}) the decay from s to the end (the
// chunked scan's exp(segsum) within and across chunks, multiplied out).
// The backward follows from that form: with g_s = <dy, B_s (x) X_s>,
// dB_s = w_s dy^T X_s, dX_s = w_s dy B_s and dA_t = sum_{s < t} w_s g_s
// (a prefix sum). Sums in double; OpenMP over (batch, head).
// @task L3/49_Mamba2ReturnFinalState
// @forward ssd_final(x, A, B, y, BS, NC, L, H, P, N)
// @backward ssd_final_bwd(x, A, B, dy, dx, dA, dB, BS, NC, L, H, P, N)
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* w[s] = exp(sum of A over the positions after s), for one (batch, head) */
static void decays(const float *a, int64_t s_len, int64_t h, double *w)
{
	double tail = 0;
	for (int64_t s = s_len - 1; s >= 0; s--) {
		w[s] = exp(tail);
		tail += a[s * h];
	}
}

void ssd_final(const float *x, const float *a, const float *b, float *y, int64_t bs, int64_t nc,
	       int64_t l, int64_t h, int64_t p, int64_t n)
{
	int64_t sl = nc * l;
#pragma omp parallel for schedule(static)
	for (int64_t bh = 0; bh < bs * h; bh++) {
		int64_t bi = bh / h, hi = bh % h;
		double *w = malloc(sizeof(double) * (size_t)sl), *acc = calloc((size_t)(p * n), sizeof(double));
		if (!w || !acc)
			abort();
		decays(a + bi * sl * h + hi, sl, h, w);
		for (int64_t s = 0; s < sl; s++) {
			const float *xs = x + ((bi * sl + s) * h + hi) * p, *bsn = b + ((bi * sl + s) * h + hi) * n;
			for (int64_t i = 0; i < p; i++) {
				double wx = w[s] * xs[i];
				for (int64_t j = 0; j < n; j++)
					acc[i * n + j] += wx * bsn[j];
			}
		}
		for (int64_t e = 0; e < p * n; e++)
			y[(bi * h + hi) * p * n + e] = (float)acc[e];
		free(w);
		free(acc);
	}
}

void ssd_final_bwd(const float *x, const float *a, const float *b, const float *dy, float *dx,
		   float *da, float *db, int64_t bs, int64_t nc, int64_t l, int64_t h, int64_t p,
		   int64_t n)
{
	int64_t sl = nc * l;
#pragma omp parallel for schedule(static)
	for (int64_t bh = 0; bh < bs * h; bh++) {
		int64_t bi = bh / h, hi = bh % h;
		const float *g = dy + (bi * h + hi) * p * n;
		double *w = malloc(sizeof(double) * (size_t)sl), prefix = 0;
		if (!w)
			abort();
		decays(a + bi * sl * h + hi, sl, h, w);
		for (int64_t s = 0; s < sl; s++) {
			int64_t row = (bi * sl + s) * h + hi;
			const float *xs = x + row * p, *bsn = b + row * n;
			double gs = 0;
			/* dA_s collects the positions before s, whose decay runs through A_s */
			da[row] = (float)prefix;
			for (int64_t i = 0; i < p; i++) {
				double t = 0;
				for (int64_t j = 0; j < n; j++)
					t += (double)g[i * n + j] * bsn[j];
				dx[row * p + i] = (float)(w[s] * t);
				gs += t * xs[i];
			}
			for (int64_t j = 0; j < n; j++) {
				double t = 0;
				for (int64_t i = 0; i < p; i++)
					t += (double)g[i * n + j] * xs[i];
				db[row * n + j] = (float)(w[s] * t);
			}
			prefix += w[s] * gs;
		}
		free(w);
	}
}
