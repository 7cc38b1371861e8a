// Honest plain cumulative product along D (float running product).
// @task L1/90_cumprod
// @forward cumprod_fwd(x, y, B, D)
#include <stdint.h>

void cumprod_fwd(const float *x, float *y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		float p = 1.0f;
		for (int64_t k = 0; k < d; k++) {
			p *= x[r * d + k];
			y[r * d + k] = p;
		}
	}
}
