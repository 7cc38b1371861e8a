// Honest transposed 1-d conv (k 3, stride 1): gather form, each output sums
// the inputs whose taps reach it: y[n,o,l] = sum_c sum_k x[n,c,l-k] w[c,o,k].
// @task L1/64_conv_transposed_1D
// @forward convt_fwd(x, w, y, N, CI, CO, L, OL)
// @backward convt_bwd(x, w, dy, dx, dw, N, CI, CO, L, OL)
#include <stdint.h>

void convt_fwd(const float *x, const float *w, float *y, int64_t nb, int64_t ci, int64_t co,
	       int64_t l, int64_t ol)
{
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++) {
			float *yp = y + (n * co + o) * ol;
			for (int64_t t = 0; t < ol; t++)
				yp[t] = 0;
			for (int64_t c = 0; c < ci; c++) {
				const float *xp = x + (n * ci + c) * l;
				for (int64_t k = 0; k < 3; k++) {
					float wv = w[(c * co + o) * 3 + k];
					for (int64_t i = 0; i < l; i++)
						yp[i + k] += wv * xp[i];
				}
			}
		}
}

/* dx[n,c,i] = sum_o sum_k dy[n,o,i+k] w[c,o,k]; dw[c,o,k] = sum_n,i x[n,c,i] dy[n,o,i+k] */
void convt_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t nb,
	       int64_t ci, int64_t co, int64_t l, int64_t ol)
{
	for (int64_t i = 0; i < nb * ci * l; i++)
		dx[i] = 0;
	for (int64_t i = 0; i < ci * co * 3; i++)
		dw[i] = 0;
	for (int64_t n = 0; n < nb; n++)
		for (int64_t c = 0; c < ci; c++) {
			const float *xp = x + (n * ci + c) * l;
			float *dxp = dx + (n * ci + c) * l;
			for (int64_t o = 0; o < co; o++) {
				const float *g = dy + (n * co + o) * ol;
				for (int64_t k = 0; k < 3; k++) {
					float wv = w[(c * co + o) * 3 + k], s = 0;
					for (int64_t i = 0; i < l; i++) {
						dxp[i] += wv * g[i + k];
						s += xp[i] * g[i + k];
					}
					dw[(c * co + o) * 3 + k] += s;
				}
			}
		}
}
