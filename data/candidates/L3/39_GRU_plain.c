// Honest plain 6-layer GRU forward (sequence first, PyTorch's gate order
// r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
// h = (1 - z) * n + z * h_prev): per layer, per time step, the hidden
// projection for the batch then the gates, in float; layer outputs
// ping-pong through scratch, the last layer writes y (one launch per
// layer: 26 tensors would not fit one call's argument list).
// @task L3/39_GRU
// @scratch buf0 f32[T * B * H]
// @scratch buf1 f32[T * B * H]
// @scratch hw f32[B * 3 * H]
// @scratch h f32[B * H]
// @forward gru_layer(x, h0, w_ih_l0, w_hh_l0, b_ih_l0, b_hh_l0, buf0, hw, h, T, B, I, H, 0)
// @forward gru_layer(buf0, h0, w_ih_l1, w_hh_l1, b_ih_l1, b_hh_l1, buf1, hw, h, T, B, H, H, 1)
// @forward gru_layer(buf1, h0, w_ih_l2, w_hh_l2, b_ih_l2, b_hh_l2, buf0, hw, h, T, B, H, H, 2)
// @forward gru_layer(buf0, h0, w_ih_l3, w_hh_l3, b_ih_l3, b_hh_l3, buf1, hw, h, T, B, H, H, 3)
// @forward gru_layer(buf1, h0, w_ih_l4, w_hh_l4, b_ih_l4, b_hh_l4, buf0, hw, h, T, B, H, H, 4)
// @forward gru_layer(buf0, h0, w_ih_l5, w_hh_l5, b_ih_l5, b_hh_l5, y, hw, h, T, B, H, H, 5)
#include <math.h>
#include <stdint.h>
#include <string.h>

static float sigm(float v)
{
	return 1.0f / (1.0f + expf(-v));
}

static void layer(const float *x, const float *h0, const float *wi, const float *wh,
		  const float *bi, const float *bh, float *y, float *hw, float *h, int64_t t,
		  int64_t b, int64_t in, int64_t hd)
{
	memcpy(h, h0, sizeof(float) * (size_t)(b * hd));
	for (int64_t s = 0; s < t; s++) {
#pragma omp parallel for schedule(static)
		for (int64_t r = 0; r < b; r++)
			for (int64_t o = 0; o < 3 * hd; o++) {
				float acc = bh[o];
				for (int64_t q = 0; q < hd; q++)
					acc += h[r * hd + q] * wh[o * hd + q];
				hw[r * 3 * hd + o] = acc;
			}
#pragma omp parallel for schedule(static)
		for (int64_t r = 0; r < b; r++) {
			const float *xr = x + (s * b + r) * in;
			for (int64_t k = 0; k < hd; k++) {
				float xg[3];
				for (int g = 0; g < 3; g++) {
					float acc = bi[g * hd + k];
					const float *w = wi + (g * hd + k) * in;
					for (int64_t q = 0; q < in; q++)
						acc += xr[q] * w[q];
					xg[g] = acc;
				}
				const float *hr = hw + r * 3 * hd;
				float rg = sigm(xg[0] + hr[k]), zg = sigm(xg[1] + hr[hd + k]);
				float ng = tanhf(xg[2] + rg * hr[2 * hd + k]);
				y[(s * b + r) * hd + k] = (1 - zg) * ng + zg * h[r * hd + k];
			}
		}
		memcpy(h, y + s * b * hd, sizeof(float) * (size_t)(b * hd));
	}
}

void gru_layer(const float *x, const float *h0, const float *wi, const float *wh,
	       const float *bi, const float *bh, float *y, float *hw, float *h, int64_t t,
	       int64_t b, int64_t in, int64_t hd, int64_t l)
{
	layer(x, h0 + l * b * hd, wi, wh, bi, bh, y, hw, h, t, b, in, hd);
}
