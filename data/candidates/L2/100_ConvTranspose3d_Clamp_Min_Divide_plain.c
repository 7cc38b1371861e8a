// Honest plain conv_transpose3d(k3, stride 2, padding 1) -> clamp(min=-1) -> / 2:
// each output voxel gathers the input voxels whose stride-2 footprint covers
// it (od = 2*id - 1 + kd), so no atomics and one write per output.
// @task L2/100_ConvTranspose3d_Clamp_Min_Divide
// @forward fwd(x, w, b, y, N, CI, CO, D, H, W, OD, OH, OW)
#include <stdint.h>

void fwd(const float *x, const float *w, const float *b, float *y, int64_t nb, int64_t ci,
	 int64_t co, int64_t d, int64_t h, int64_t wd, int64_t od, int64_t oh, int64_t ow)
{
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
						acc = acc < -1.0f ? -1.0f : acc;
						y[(((n * co + o) * od + pd) * oh + ph) * ow + pw] = acc / 2.0f;
					}
}
