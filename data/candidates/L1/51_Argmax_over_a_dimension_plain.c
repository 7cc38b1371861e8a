// Honest plain argmax over the middle axis; the first maximal index wins.
// @task L1/51_Argmax_over_a_dimension
// @forward argmax_fwd(x, y, B, D1, D2)
#include <stdint.h>

void argmax_fwd(const float *x, int64_t *y, int64_t b, int64_t d1, int64_t d2)
{
	for (int64_t a = 0; a < b; a++)
		for (int64_t c = 0; c < d2; c++) {
			const float *xl = x + a * d1 * d2 + c;
			float best = xl[0];
			int64_t bi = 0;
			for (int64_t k = 1; k < d1; k++)
				if (xl[k * d2] > best) {
					best = xl[k * d2];
					bi = k;
				}
			y[a * d2 + c] = bi;
		}
}
