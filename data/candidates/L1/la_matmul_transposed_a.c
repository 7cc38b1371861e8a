// Honest plain A^T.B: rows of A^T are columns of A; p-outer loops keep the
// inner loop contiguous in both A and B.
// @task L1/16_Matmul_with_transposed_A
// @forward mmta_fwd(A, B, C, M, K, N)
// @backward mmta_bwd(A, B, dC, dA, dB, M, K, N)
#include <stdint.h>

/* A [K, M], B [K, N], C [M, N] = A^T B */
void mmta_fwd(const float *a, const float *b, float *c, int64_t m, int64_t k, int64_t n)
{
	for (int64_t i = 0; i < m * n; i++)
		c[i] = 0;
	for (int64_t p = 0; p < k; p++)
		for (int64_t i = 0; i < m; i++) {
			float av = a[p * m + i];
			for (int64_t j = 0; j < n; j++)
				c[i * n + j] += av * b[p * n + j];
		}
}

/* dA [K, M] = B dC^T, dB [K, N] = A dC */
void mmta_bwd(const float *a, const float *b, const float *dc, float *da, float *db, int64_t m,
	      int64_t k, int64_t n)
{
	for (int64_t p = 0; p < k; p++) {
		for (int64_t i = 0; i < m; i++) {
			float s = 0;
			for (int64_t j = 0; j < n; j++)
				s += b[p * n + j] * dc[i * n + j];
			da[p * m + i] = s;
		}
		for (int64_t j = 0; j < n; j++)
			db[p * n + j] = 0;
		for (int64_t i = 0; i < m; i++) {
			float av = a[p * m + i];
			for (int64_t j = 0; j < n; j++)
				db[p * n + j] += av * dc[i * n + j];
		}
	}
}
