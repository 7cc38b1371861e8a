// Honest depthwise 3x3 conv (groups = C, stride 1, no padding): each channel
// convolved with its own kernel.
// @task L1/82_conv_depthwise_2D_square_input_square_kernel
// @forward dw_fwd(x, w, y, N, C, H, W, OH, OW)
// @backward dw_bwd(x, w, dy, dx, dw, N, C, H, W, OH, OW)
#include <stdint.h>

void dw_fwd(const float *x, const float *w, float *y, int64_t nb, int64_t c, int64_t h,
	    int64_t wd, int64_t oh, int64_t ow)
{
	for (int64_t p = 0; p < nb * c; p++) {
		const float *xp = x + p * h * wd, *wp = w + (p % c) * 9;
		float *yp = y + p * oh * ow;
		for (int64_t r = 0; r < oh; r++)
			for (int64_t q = 0; q < ow; q++) {
				float s = 0;
				for (int64_t a = 0; a < 3; a++)
					for (int64_t b = 0; b < 3; b++)
						s += xp[(r + a) * wd + q + b] * wp[a * 3 + b];
				yp[r * ow + q] = s;
			}
	}
}

void dw_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t nb,
	    int64_t c, int64_t h, int64_t wd, int64_t oh, int64_t ow)
{
	for (int64_t i = 0; i < nb * c * h * wd; i++)
		dx[i] = 0;
	for (int64_t i = 0; i < c * 9; i++)
		dw[i] = 0;
	for (int64_t p = 0; p < nb * c; p++) {
		const float *xp = x + p * h * wd, *wp = w + (p % c) * 9, *g = dy + p * oh * ow;
		float *dxp = dx + p * h * wd, *dwp = dw + (p % c) * 9;
		for (int64_t a = 0; a < 3; a++)
			for (int64_t b = 0; b < 3; b++) {
				float s = 0;
				for (int64_t r = 0; r < oh; r++)
					for (int64_t q = 0; q < ow; q++) {
						s += xp[(r + a) * wd + q + b] * g[r * ow + q];
						dxp[(r + a) * wd + q + b] += wp[a * 3 + b] * g[r * ow + q];
					}
				dwp[a * 3 + b] += s;
			}
	}
}
