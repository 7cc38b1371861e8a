// Honest L2/58, plain loops (round 3's last white-box attacker's kernel).
// Under a large drawn bias its clamp saturates: every output -1 (or 1) on
// any input, the reference too. The probe's input-independence rule must
// not refuse it (test_verify: test_probe_saturating, probe seed 0x2468acf).
// @task L2/58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp
// @forward fwd(x, w, b, bias, y, N, CI, CO, D, H, W, OD, OH, OW)
#include <stdint.h>
#include <math.h>

void fwd(const float *x, const float *w, const float *b, const float *bias, float *y, int64_t nb, int64_t ci,
	 int64_t co, int64_t d, int64_t h, int64_t wd, int64_t od, int64_t oh, int64_t ow)
{
	for (int64_t n = 0; n < nb; n++)
		for (int64_t pd = 0; pd < od; pd++)
			for (int64_t ph = 0; ph < oh; ph++)
				for (int64_t pw = 0; pw < ow; pw++) {
					double v[64];
					double m = -INFINITY;
					for (int64_t o = 0; o < co; o++) {
						double acc = b[o];
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
										acc += (double)x[(((n * ci + c) * d + td / 2) * h + th / 2) * wd + tw / 2] *
										       w[(((c * co + o) * 3 + kd) * 3 + kh) * 3 + kw];
								}
							}
						}
						v[o] = acc;
						if (acc > m)
							m = acc;
					}
					double s = 0;
					for (int64_t o = 0; o < co; o++)
						s += exp(v[o] - m);
					double l = m + log(s);
					double t = l / (1.0 + exp(-(l + 3.0))) / 6.0 - bias[0];
					t = t < -1.0 ? -1.0 : t > 1.0 ? 1.0 : t;
					y[((n * od + pd) * oh + ph) * ow + pw] = (float)t;
				}
}
