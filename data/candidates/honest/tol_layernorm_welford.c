// Honest layer norm: Welford's one-pass mean and variance in float (no
// E[x^2]-E[x]^2 cancellation), then normalise. Its rounding differs from
// the two-pass baseline's; the tolerance must accept it, at every profile
// (offset +10 included).
// @task smoke/layernorm
// @forward ln_fwd(x, w, b, y, B, D)
#include <math.h>
#include <stdint.h>

void ln_fwd(const float *restrict x, const float *restrict w, const float *restrict bias,
	    float *restrict y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * d;
		float mean = 0, m2 = 0;
		for (int64_t k = 0; k < d; k++) {
			float delta = xr[k] - mean;
			mean += delta / (float)(k + 1);
			m2 += delta * (xr[k] - mean);
		}
		float rstd = 1.0f / sqrtf(m2 / (float)d + 1e-5f);
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] = (xr[k] - mean) * rstd * w[k] + bias[k];
	}
}
