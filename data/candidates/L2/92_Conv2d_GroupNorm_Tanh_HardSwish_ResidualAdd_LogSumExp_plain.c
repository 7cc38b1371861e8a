// Honest plain conv2d(k3) = c -> GroupNorm(16) -> tanh -> hardswish -> c + that
// -> logsumexp over channels: the conv output is kept in scratch for the
// residual, GroupNorm statistics in double, the logsumexp max-subtracted.
// @task L2/92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp
// @scratch c f32[N * CO * OH * OW]
// @forward fwd(x, w, b, gn_w, gn_b, y, c, N, CI, CO, H, W, OH, OW)
#include <math.h>
#include <stdint.h>

void fwd(const float *x, const float *w, const float *b, const float *g, const float *be, float *y,
	 float *c, int64_t nb, int64_t ci, int64_t co, int64_t h, int64_t wd, int64_t oh, int64_t ow)
{
	const int64_t sp = oh * ow, groups = 16, cpg = co / groups;
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++) {
			float *cp = c + (n * co + o) * sp;
			for (int64_t i = 0; i < sp; i++)
				cp[i] = b[o];
			for (int64_t k = 0; k < ci; k++) {
				const float *xp = x + (n * ci + k) * h * wd;
				const float *wp = w + (o * ci + k) * 9;
				for (int64_t r = 0; r < oh; r++)
					for (int64_t kh = 0; kh < 3; kh++)
						for (int64_t kw = 0; kw < 3; kw++) {
							const float wv = wp[kh * 3 + kw];
							const float *xr = xp + (r + kh) * wd + kw;
							for (int64_t q = 0; q < ow; q++)
								cp[r * ow + q] += wv * xr[q];
						}
			}
		}
	for (int64_t n = 0; n < nb; n++) {
		float mu[co], rs[co];
		for (int64_t gi = 0; gi < groups; gi++) {
			const float *gp = c + (n * co + gi * cpg) * sp;
			double m = 0, v = 0;
			for (int64_t i = 0; i < cpg * sp; i++)
				m += gp[i];
			m /= (double)(cpg * sp);
			for (int64_t i = 0; i < cpg * sp; i++)
				v += (gp[i] - m) * (gp[i] - m);
			for (int64_t o = gi * cpg; o < (gi + 1) * cpg; o++) {
				mu[o] = (float)m;
				rs[o] = (float)(1.0 / sqrt(v / (double)(cpg * sp) + 1e-5));
			}
		}
		for (int64_t i = 0; i < sp; i++) {
			float t[co], m = -INFINITY;
			double s = 0;
			for (int64_t o = 0; o < co; o++) {
				const float cv = c[(n * co + o) * sp + i];
				float v = tanhf((cv - mu[o]) * rs[o] * g[o] + be[o]);
				float hs = v + 3.0f;
				hs = hs < 0 ? 0 : hs > 6 ? 6 : hs;
				t[o] = cv + v * hs / 6.0f;
				m = t[o] > m ? t[o] : m;
			}
			for (int64_t o = 0; o < co; o++)
				s += exp((double)t[o] - m);
			y[n * sp + i] = (float)(m + log(s));
		}
	}
}
