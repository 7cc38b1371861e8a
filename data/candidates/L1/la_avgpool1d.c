// Honest 1-d average pool (kernel 8, stride 1, padding 4, count_include_pad):
// a running window sum; the divisor is always 8 because zero padding counts.
// @task L1/44_Average_Pooling_1D
// @forward ap_fwd(x, y, N, C, L, OL)
// @backward ap_bwd(dy, dx, N, C, L, OL)
#include <stdint.h>

void ap_fwd(const float *x, float *y, int64_t nb, int64_t c, int64_t l, int64_t ol)
{
	for (int64_t p = 0; p < nb * c; p++) {
		const float *xp = x + p * l;
		for (int64_t o = 0; o < ol; o++) {
			float s = 0;
			for (int64_t i = o - 4; i < o + 4; i++)
				if (i >= 0 && i < l)
					s += xp[i];
			y[p * ol + o] = s / 8;
		}
	}
}

/* each output spreads dy/8 over the inputs of its window */
void ap_bwd(const float *dy, float *dx, int64_t nb, int64_t c, int64_t l, int64_t ol)
{
	for (int64_t p = 0; p < nb * c; p++)
		for (int64_t i = 0; i < l; i++) {
			float s = 0;
			for (int64_t o = i - 3; o <= i + 4; o++)
				if (o >= 0 && o < ol)
					s += dy[p * ol + o];
			dx[p * l + i] = s / 8;
		}
}
