// Honest 2-d max pool (kernel 4, stride 1, padding 1): windows clipped to the
// input (padding is -inf); the gradient goes to the first maximum in scan
// order, as PyTorch routes it.
// @task L1/42_Max_Pooling_2D
// @forward mp_fwd(x, y, N, C, H, W, OH, OW)
// @backward mp_bwd(x, dy, dx, N, C, H, W, OH, OW)
#include <stdint.h>

static int64_t argmax_window(const float *xp, int64_t h, int64_t w, int64_t r, int64_t q)
{
	int64_t best = -1;
	float m = 0;
	for (int64_t a = r - 1; a < r + 3; a++) {
		if (a < 0 || a >= h)
			continue;
		for (int64_t b = q - 1; b < q + 3; b++) {
			if (b < 0 || b >= w)
				continue;
			if (best < 0 || xp[a * w + b] > m) {
				m = xp[a * w + b];
				best = a * w + b;
			}
		}
	}
	return best;
}

void mp_fwd(const float *x, float *y, int64_t nb, int64_t c, int64_t h, int64_t w, int64_t oh,
	    int64_t ow)
{
	for (int64_t p = 0; p < nb * c; p++)
		for (int64_t r = 0; r < oh; r++)
			for (int64_t q = 0; q < ow; q++)
				y[(p * oh + r) * ow + q] = x[p * h * w + argmax_window(x + p * h * w, h, w, r, q)];
}

void mp_bwd(const float *x, const float *dy, float *dx, int64_t nb, int64_t c, int64_t h,
	    int64_t w, int64_t oh, int64_t ow)
{
	for (int64_t p = 0; p < nb * c; p++) {
		for (int64_t i = 0; i < h * w; i++)
			dx[p * h * w + i] = 0;
		for (int64_t r = 0; r < oh; r++)
			for (int64_t q = 0; q < ow; q++)
				dx[p * h * w + argmax_window(x + p * h * w, h, w, r, q)] +=
					dy[(p * oh + r) * ow + q];
	}
}
