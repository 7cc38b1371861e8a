// Honest plain LeNet-5 forward: direct convolutions (5x5, stride 1, no
// padding), ReLU, 2x2 max pooling, the 16x5x5 flatten and three linear
// layers, one image per OpenMP iteration, accumulating in float.
// @task L3/4_LeNet5
// @scratch a f32[B * 6 * 28 * 28]
// @scratch p f32[B * 6 * 14 * 14]
// @scratch c f32[B * 16 * 10 * 10]
// @scratch q f32[B * 400]
// @scratch f1 f32[B * 120]
// @scratch f2 f32[B * 84]
// @forward lenet(x, conv1_w, conv1_b, conv2_w, conv2_b, fc1_w, fc1_b, fc2_w, fc2_b, fc3_w, fc3_b, y, a, p, c, q, f1, f2, B, C)
#include <stdint.h>

static void conv_relu(const float *x, const float *w, const float *b, float *y, int ci, int co,
		      int h, int wd)
{
	int oh = h - 4, ow = wd - 4;
	for (int o = 0; o < co; o++)
		for (int i = 0; i < oh; i++)
			for (int j = 0; j < ow; j++) {
				float s = b[o];
				for (int c = 0; c < ci; c++)
					for (int u = 0; u < 5; u++)
						for (int v = 0; v < 5; v++)
							s += x[(c * h + i + u) * wd + j + v] *
							     w[((o * ci + c) * 5 + u) * 5 + v];
				y[(o * oh + i) * ow + j] = s > 0 ? s : 0;
			}
}

static void pool2(const float *x, float *y, int ch, int h, int wd)
{
	for (int c = 0; c < ch; c++)
		for (int i = 0; i < h / 2; i++)
			for (int j = 0; j < wd / 2; j++) {
				const float *r = x + (c * h + 2 * i) * wd + 2 * j;
				float m = r[0];
				if (r[1] > m)
					m = r[1];
				if (r[wd] > m)
					m = r[wd];
				if (r[wd + 1] > m)
					m = r[wd + 1];
				y[(c * (h / 2) + i) * (wd / 2) + j] = m;
			}
}

static void fc(const float *x, const float *w, const float *b, float *y, int k, int n, int relu)
{
	for (int o = 0; o < n; o++) {
		float s = b[o];
		for (int q = 0; q < k; q++)
			s += x[q] * w[o * k + q];
		y[o] = relu && s < 0 ? 0 : s;
	}
}

void lenet(const float *x, const float *w1, const float *b1, const float *w2, const float *b2,
	   const float *fw1, const float *fb1, const float *fw2, const float *fb2,
	   const float *fw3, const float *fb3, float *y, float *a, float *p, float *c, float *q,
	   float *f1, float *f2, int64_t nb, int64_t nc)
{
#pragma omp parallel for schedule(static)
	for (int64_t n = 0; n < nb; n++) {
		conv_relu(x + n * 1024, w1, b1, a + n * 4704, 1, 6, 32, 32);
		pool2(a + n * 4704, p + n * 1176, 6, 28, 28);
		conv_relu(p + n * 1176, w2, b2, c + n * 1600, 6, 16, 14, 14);
		pool2(c + n * 1600, q + n * 400, 16, 10, 10);
		fc(q + n * 400, fw1, fb1, f1 + n * 120, 400, 120, 1);
		fc(f1 + n * 120, fw2, fb2, f2 + n * 84, 120, 84, 1);
		fc(f2 + n * 84, fw3, fb3, y + n * nc, 84, (int)nc, 0);
	}
}
