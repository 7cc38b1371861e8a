// Honest upper-triangular product: reads only the upper triangles and skips
// the zero half of the work (c[i,j] sums k from i to j).
// @task L1/14_Matmul_for_upper_triangular_matrices
// @forward triu_fwd(A, B, C, N)
// @backward triu_bwd(A, B, dC, dA, dB, N)
#include <stdint.h>

void triu_fwd(const float *a, const float *b, float *c, int64_t n)
{
	for (int64_t i = 0; i < n * n; i++)
		c[i] = 0;
	for (int64_t i = 0; i < n; i++)
		for (int64_t k = i; k < n; k++) {
			float av = a[i * n + k];
			for (int64_t j = k; j < n; j++)
				c[i * n + j] += av * b[k * n + j];
		}
}

/* Over the triangle: dA[i,k] = sum_{j>=k} dC[i,j] B[k,j] (k >= i);
 * dB[k,j] = sum_{i<=k} A[i,k] dC[i,j] (j >= k); zero elsewhere. */
void triu_bwd(const float *a, const float *b, const float *dc, float *da, float *db, int64_t n)
{
	for (int64_t i = 0; i < n * n; i++)
		da[i] = db[i] = 0;
	for (int64_t i = 0; i < n; i++)
		for (int64_t k = i; k < n; k++) {
			float s = 0, av = a[i * n + k];
			for (int64_t j = k; j < n; j++) {
				s += dc[i * n + j] * b[k * n + j];
				db[k * n + j] += av * dc[i * n + j];
			}
			da[i * n + k] = s;
		}
}
