// Honest plain batched matmul: one i-k-j product per batch.
// @task L1/3_Batched_matrix_multiplication
// @forward bmm_fwd(A, Bm, C, B, M, K, N)
// @backward bmm_bwd(A, Bm, dC, dA, dBm, B, M, K, N)
#include <stdint.h>

void bmm_fwd(const float *a, const float *b, float *c, int64_t nb, int64_t m, int64_t k,
	     int64_t n)
{
	for (int64_t q = 0; q < nb; q++) {
		const float *aq = a + q * m * k, *bq = b + q * k * n;
		float *cq = c + q * m * n;
		for (int64_t i = 0; i < m; i++) {
			for (int64_t j = 0; j < n; j++)
				cq[i * n + j] = 0;
			for (int64_t p = 0; p < k; p++) {
				float av = aq[i * k + p];
				for (int64_t j = 0; j < n; j++)
					cq[i * n + j] += av * bq[p * n + j];
			}
		}
	}
}

/* dA = dC B^T, dB = A^T dC, per batch */
void bmm_bwd(const float *a, const float *b, const float *dc, float *da, float *db, int64_t nb,
	     int64_t m, int64_t k, int64_t n)
{
	for (int64_t q = 0; q < nb; q++) {
		const float *aq = a + q * m * k, *bq = b + q * k * n, *cq = dc + q * m * n;
		float *daq = da + q * m * k, *dbq = db + q * k * n;
		for (int64_t i = 0; i < m; i++)
			for (int64_t p = 0; p < k; p++) {
				float s = 0;
				for (int64_t j = 0; j < n; j++)
					s += cq[i * n + j] * bq[p * n + j];
				daq[i * k + p] = s;
			}
		for (int64_t p = 0; p < k * n; p++)
			dbq[p] = 0;
		for (int64_t i = 0; i < m; i++)
			for (int64_t p = 0; p < k; p++) {
				float av = aq[i * k + p];
				for (int64_t j = 0; j < n; j++)
					dbq[p * n + j] += av * cq[i * n + j];
			}
	}
}
