// Honest plain conv_transpose3d(k3, stride 2, padding 1) -> training-mode
// BatchNorm3d -> x - mean(x, spatial): the transposed conv gathers per output
// voxel; statistics in double.
// @task L2/15_ConvTranspose3d_BatchNorm_Subtract
// @forward fwd(x, w, b, bn_w, bn_b, y, N, CI, CO, D, H, W, OD, OH, OW)
#include <math.h>
#include <stdint.h>

void fwd(const float *x, const float *w, const float *b, const float *g, const float *be, float *y,
	 int64_t nb, int64_t ci, int64_t co, int64_t d, int64_t h, int64_t wd, int64_t od, int64_t oh,
	 int64_t ow)
{
	const int64_t sp = od * oh * ow;
#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t n = 0; n < nb; n++)
		for (int64_t o = 0; o < co; o++)
			for (int64_t pd = 0; pd < od; pd++)
				for (int64_t ph = 0; ph < oh; ph++)
					for (int64_t pw = 0; pw < ow; pw++) {
						float acc = b[o];
						for (int64_t kd = 0; kd < 3; kd++) {
							int64_t td = pd + 1 - kd;
							if (td < 0 || td % 2 || td / 2 >= d)
								continue;
							for (int64_t kh = 0; kh < 3; kh++) {
								int64_t th = ph + 1 - kh;
								if (th < 0 || th % 2 || th / 2 >= h)
									continue;
								for (int64_t kw = 0; kw < 3; kw++) {
									int64_t tw = pw + 1 - kw;
									if (tw < 0 || tw % 2 || tw / 2 >= wd)
										continue;
									for (int64_t c = 0; c < ci; c++)
										acc += x[(((n * ci + c) * d + td / 2) * h + th / 2) * wd + tw / 2] *
										       w[(((c * co + o) * 3 + kd) * 3 + kh) * 3 + kw];
								}
							}
						}
						y[(n * co + o) * sp + (pd * oh + ph) * ow + pw] = acc;
					}
	for (int64_t o = 0; o < co; o++) {
		double m = 0, v = 0, rstd;
		for (int64_t n = 0; n < nb; n++)
			for (int64_t i = 0; i < sp; i++)
				m += y[(n * co + o) * sp + i];
		m /= (double)(nb * sp);
		for (int64_t n = 0; n < nb; n++)
			for (int64_t i = 0; i < sp; i++) {
				double t = y[(n * co + o) * sp + i] - m;
				v += t * t;
			}
		rstd = 1.0 / sqrt(v / (double)(nb * sp) + 1e-5);
		for (int64_t n = 0; n < nb; n++) {
			float *yp = y + (n * co + o) * sp;
			double s = 0, mu;
			for (int64_t i = 0; i < sp; i++) {
				yp[i] = (float)((yp[i] - m) * rstd * g[o] + be[o]);
				s += yp[i];
			}
			mu = s / (double)sp;
			for (int64_t i = 0; i < sp; i++)
				yp[i] = (float)(yp[i] - mu);
		}
	}
}
