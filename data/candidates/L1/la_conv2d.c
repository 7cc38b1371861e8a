// Honest direct 3x3 conv (stride 1, no padding): per output row, the inner
// loop runs along the row so it vectorises.
// @task L1/63_conv_standard_2D__square_input__square_kernel
// @forward conv_fwd(x, w, y, N, CI, CO, H, W, OH, OW)
// @backward conv_bwd(x, w, dy, dx, dw, N, CI, CO, H, W, OH, OW)
#include <stdint.h>

void conv_fwd(const float *x, const float *w, float *y, int64_t nb, int64_t ci, int64_t co,
	      int64_t h, int64_t wd, int64_t oh, int64_t ow)
{
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++) {
			float *yp = y + (n * co + o) * oh * ow;
			for (int64_t i = 0; i < oh * ow; i++)
				yp[i] = 0;
			for (int64_t c = 0; c < ci; c++) {
				const float *xp = x + (n * ci + c) * h * wd;
				const float *wp = w + (o * ci + c) * 9;
				for (int64_t r = 0; r < oh; r++)
					for (int64_t kh = 0; kh < 3; kh++)
						for (int64_t kw = 0; kw < 3; kw++) {
							float wv = wp[kh * 3 + kw];
							const float *xr = xp + (r + kh) * wd + kw;
							for (int64_t q = 0; q < ow; q++)
								yp[r * ow + q] += wv * xr[q];
						}
			}
		}
}

void conv_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t nb,
	      int64_t ci, int64_t co, int64_t h, int64_t wd, int64_t oh, int64_t ow)
{
	for (int64_t i = 0; i < nb * ci * h * wd; i++)
		dx[i] = 0;
	for (int64_t i = 0; i < co * ci * 9; i++)
		dw[i] = 0;
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++) {
			const float *g = dy + (n * co + o) * oh * ow;
			for (int64_t c = 0; c < ci; c++) {
				const float *xp = x + (n * ci + c) * h * wd;
				float *dxp = dx + (n * ci + c) * h * wd;
				const float *wp = w + (o * ci + c) * 9;
				float *dwp = dw + (o * ci + c) * 9;
				for (int64_t kh = 0; kh < 3; kh++)
					for (int64_t kw = 0; kw < 3; kw++) {
						float wv = wp[kh * 3 + kw], s = 0;
						for (int64_t r = 0; r < oh; r++) {
							const float *xr = xp + (r + kh) * wd + kw;
							float *dxr = dxp + (r + kh) * wd + kw;
							for (int64_t q = 0; q < ow; q++) {
								s += xr[q] * g[r * ow + q];
								dxr[q] += wv * g[r * ow + q];
							}
						}
						dwp[kh * 3 + kw] += s;
					}
			}
		}
}
