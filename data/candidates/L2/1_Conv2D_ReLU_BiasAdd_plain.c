// Honest plain conv2d(k3) -> relu -> + bias[C,1,1]: direct convolution with
// the row as the inner loop; backward recomputes the conv output to gate the
// gradient through the relu.
// @task L2/1_Conv2D_ReLU_BiasAdd
// @scratch z f32[N * CO * OH * OW]
// @forward fwd(x, w, b, bias, y, z, N, CI, CO, H, W, OH, OW)
// @backward bwd(x, w, b, dy, dx, dw, db, dbias, z, N, CI, CO, H, W, OH, OW)
#include <stdint.h>

static void conv(const float *x, const float *w, const float *b, float *z, int64_t nb, int64_t ci,
		 int64_t co, int64_t h, int64_t wd, int64_t oh, int64_t ow)
{
#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++) {
			float *zp = z + (n * co + o) * oh * ow;
			for (int64_t i = 0; i < oh * ow; i++)
				zp[i] = b[o];
			for (int64_t c = 0; c < ci; c++) {
				const float *xp = x + (n * ci + c) * h * wd;
				const float *wp = w + (o * ci + c) * 9;
				for (int64_t r = 0; r < oh; r++)
					for (int64_t kh = 0; kh < 3; kh++)
						for (int64_t kw = 0; kw < 3; kw++) {
							const float wv = wp[kh * 3 + kw];
							const float *xr = xp + (r + kh) * wd + kw;
							for (int64_t q = 0; q < ow; q++)
								zp[r * ow + q] += wv * xr[q];
						}
			}
		}
}

void fwd(const float *x, const float *w, const float *b, const float *bias, float *y, float *z,
	 int64_t nb, int64_t ci, int64_t co, int64_t h, int64_t wd, int64_t oh, int64_t ow)
{
	conv(x, w, b, z, nb, ci, co, h, wd, oh, ow);
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++) {
			const int64_t off = (n * co + o) * oh * ow;
			for (int64_t i = 0; i < oh * ow; i++)
				y[off + i] = (z[off + i] > 0 ? z[off + i] : 0) + bias[o];
		}
}

void bwd(const float *x, const float *w, const float *b, const float *dy, float *dx, float *dw,
	 float *db, float *dbias, float *z, int64_t nb, int64_t ci, int64_t co, int64_t h,
	 int64_t wd, int64_t oh, int64_t ow)
{
	conv(x, w, b, z, nb, ci, co, h, wd, oh, ow);
	for (int64_t o = 0; o < co; o++) {
		double sb = 0, sz = 0;
		for (int64_t n = 0; n < nb; n++) {
			const int64_t off = (n * co + o) * oh * ow;
			for (int64_t i = 0; i < oh * ow; i++) {
				sb += dy[off + i];
				z[off + i] = z[off + i] > 0 ? dy[off + i] : 0; /* z becomes dz */
				sz += z[off + i];
			}
		}
		dbias[o] = (float)sb;
		db[o] = (float)sz;
	}
	for (int64_t i = 0; i < nb * ci * h * wd; i++)
		dx[i] = 0;
	for (int64_t i = 0; i < co * ci * 9; i++)
		dw[i] = 0;
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++) {
			const float *g = z + (n * co + o) * oh * ow;
			for (int64_t c = 0; c < ci; c++) {
				const float *xp = x + (n * ci + c) * h * wd;
				float *dxp = dx + (n * ci + c) * h * wd;
				const float *wp = w + (o * ci + c) * 9;
				float *dwp = dw + (o * ci + c) * 9;
				for (int64_t kh = 0; kh < 3; kh++)
					for (int64_t kw = 0; kw < 3; kw++) {
						const float wv = wp[kh * 3 + kw];
						float s = 0;
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
