// Honest minGPT GELU with a hand-written exp: 0.5x(1 + tanh(u)) rewritten
// as x * sigmoid(2u) = x / (1 + exp(-2u)) (no cancellation for negative x),
// exp by range reduction and a degree-6 polynomial (relative error ~2e-7).
// Forward and backward; the tolerance must accept approximate
// transcendentals within float accuracy.
// @task L1/88_MinGPTNewGelu
// @forward gelu_fwd(x, y, B, D)
// @backward gelu_bwd(x, dy, dx, B, D)
#include <math.h>
#include <stdint.h>

static float poly_exp(float v)
{
	if (v > 88.0f)
		return INFINITY;
	if (v < -87.0f)
		return 0.0f;
	float k = nearbyintf(v * 1.44269504f);
	float r = (v - k * 0.693145752f) - k * 1.42860677e-6f;
	float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
	return ldexpf(p, (int)k);
}

void gelu_fwd(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	const float c = 0.7978845608f;
	for (int64_t i = 0; i < b * d; i++) {
		float v = x[i], u = c * (v + 0.044715f * v * v * v);
		y[i] = v / (1.0f + poly_exp(-2.0f * u));
	}
}

/* d/dx [x sigmoid(2u)] = s + x * 2 s (1 - s) * u', s = sigmoid(2u) */
void gelu_bwd(const float *restrict x, const float *restrict dy, float *restrict dx, int64_t b,
	      int64_t d)
{
	const float c = 0.7978845608f;
	for (int64_t i = 0; i < b * d; i++) {
		float v = x[i], u = c * (v + 0.044715f * v * v * v);
		float s = 1.0f / (1.0f + poly_exp(-2.0f * u));
		float du = c * (1.0f + 3 * 0.044715f * v * v);
		dx[i] = dy[i] * (s + v * 2.0f * s * (1.0f - s) * du);
	}
}
