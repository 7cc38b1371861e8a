// Honest plain linear -> exact (erf) GELU -> row softmax: one row per
// iteration, the GEMM as dot products against the rows of W, the softmax
// max-subtracted with the sum in double.
// @task L2/99_Matmul_GELU_Softmax
// @forward fwd(x, w, b, y, B, K, F)
#include <math.h>
#include <stdint.h>

void fwd(const float *x, const float *w, const float *b, float *y, int64_t nb, int64_t k, int64_t f)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < nb; r++) {
		const float *xr = x + r * k;
		float *yr = y + r * f;
		float m = -INFINITY;
		double s = 0;
		for (int64_t j = 0; j < f; j++) {
			const float *wj = w + j * k;
			float acc = 0;
			for (int64_t q = 0; q < k; q++)
				acc += xr[q] * wj[q];
			acc += b[j];
			acc = 0.5f * acc * (1.0f + erff(acc * 0.70710678118654752f));
			yr[j] = acc;
			m = acc > m ? acc : m;
		}
		for (int64_t j = 0; j < f; j++) {
			yr[j] = expf(yr[j] - m);
			s += yr[j];
		}
		for (int64_t j = 0; j < f; j++)
			yr[j] = (float)(yr[j] / s);
	}
}
