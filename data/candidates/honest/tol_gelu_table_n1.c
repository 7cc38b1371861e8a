// Honest exact GELU from an interpolated table: GELU(x) and GELU(-x) at
// nodes 128 to a binade from 2^-13 to 8 (indexed by the float's exponent and
// top 7 mantissa bits, so every cell is the same fraction of its x), linear
// interpolation between them (within 3.4e-6 of the exact value); above 8,
// x or -0; below 2^-13, the slope at 0, x/2, within 0.399 x^2 of the exact
// value: a relative error under 9.8e-5, inside rtol = 1e-4 by itself. The
// table is built in double (erfc) on the first call.
// What it tests (issue 28, item 6): on the listed {N=1} under the small
// profile (x ~ 1e-3 N(0,1)) an x just under 2^-13 gives an error of
// 0.399|x|, up to 4.9e-5 of the output's scale (|x|, the input's rms), a
// third of the element bound; the aggregate (rms) bound, then at its fixed
// floor 0.1 x (atol+rtol) = 2e-5, rejected it as a mismatch: a bound meant
// for a distribution, applied to one element (about 1 seed in 18; --seed 51
// gave rms 4.06e-5 of the scale 1.11e-4). Over thousands of elements the
// same kernel's rms error is at most 1.7e-6 of the scale (small profile),
// under a tenth of that floor. Must be ok: the distribution floors are now
// at least (atol+rtol)/sqrt(n) (docs/VERIFIER.md, "Scale-aware tolerance").
// @task smoke/gelu
// @forward gelu_table(x, y, N)
#include <math.h>
#include <stdint.h>
#include <string.h>

#define CELLS (16 * 128) /* 16 binades from 2^-13, 128 cells each */

static float pos[CELLS + 1], neg[CELLS + 1];
static int ready;

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static void build(void)
{
	uint32_t b0 = bits_of(0x1p-13f);
	for (int k = 0; k <= CELLS; k++) {
		double a = from_bits(b0 + ((uint32_t)k << 16));
		pos[k] = (float)(0.5 * a * erfc(-a / sqrt(2.0)));
		neg[k] = (float)(-0.5 * a * erfc(a / sqrt(2.0)));
	}
	ready = 1;
}

void gelu_table(const float *restrict x, float *restrict y, int64_t n)
{
	const uint32_t b0 = bits_of(0x1p-13f);
	if (!ready)
		build();
	for (int64_t i = 0; i < n; i++) {
		float v = x[i], a = fabsf(v);
		if (a < 0x1p-13f) {
			y[i] = 0.5f * v;
			continue;
		}
		if (a >= 8.0f) {
			y[i] = v > 0 ? v : 0.0f * v;
			continue;
		}
		uint32_t k = (bits_of(a) - b0) >> 16;
		float lo = from_bits(b0 + (k << 16)), hi = from_bits(b0 + ((k + 1) << 16));
		float f = (a - lo) / (hi - lo); /* exact: a power-of-two cell width */
		const float *t = v > 0 ? pos : neg;
		y[i] = t[k] + f * (t[k + 1] - t[k]);
	}
}
