// Honest softmax: online (single-pass) running max and rescaled sum, with a
// hand-written exp (Cody-Waite range reduction to [-ln2/2, ln2/2] and a
// degree-6 Taylor polynomial: relative error ~2e-7, a few float ulps). The
// tolerance must accept approximate transcendentals within float accuracy
// and a different order of operations.
// @task smoke/softmax
// @forward softmax_fwd(x, y, B, D)
#include <math.h>
#include <stdint.h>

static float poly_exp(float v)
{
	if (v < -87.0f)
		return 0.0f;
	float k = nearbyintf(v * 1.44269504f);
	float r = (v - k * 0.693145752f) - k * 1.42860677e-6f;
	float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
	return ldexpf(p, (int)k);
}

void softmax_fwd(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		const float *xr = x + r * d;
		float m = -INFINITY, s = 0;
		for (int64_t k = 0; k < d; k++) {
			if (xr[k] > m) {
				s = s * poly_exp(m - xr[k]);
				m = xr[k];
			}
			s += poly_exp(xr[k] - m);
		}
		float inv = 1.0f / s;
		for (int64_t k = 0; k < d; k++)
			y[r * d + k] = poly_exp(xr[k] - m) * inv;
	}
}
