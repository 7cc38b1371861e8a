// Honest plain MLP (linear -> relu -> linear -> relu -> linear), forward and
// backward: each linear layer as row-by-row dot products, OpenMP over rows;
// the backward recomputes the hidden activations (scratch starts as
// garbage), then walks the layers back: dW = dZ^T A, db = column sums,
// dA = dZ W, times the ReLU mask (0 at 0, as PyTorch).
// @task L3/1_MLP
// @scratch a1 f32[B * H1]
// @scratch a2 f32[B * H2]
// @scratch g1 f32[B * H1]
// @scratch g2 f32[B * H2]
// @forward mlp_fwd(x, fc0_w, fc0_b, fc1_w, fc1_b, fc2_w, fc2_b, y, a1, a2, B, I, H1, H2, O)
// @backward mlp_bwd(x, fc0_w, fc0_b, fc1_w, fc1_b, fc2_w, dy, dx, dfc0_w, dfc0_b, dfc1_w, dfc1_b, dfc2_w, dfc2_b, a1, a2, g1, g2, B, I, H1, H2, O)
#include <stdint.h>
#include <string.h>

static void linear(const float *x, const float *w, const float *b, float *y, int64_t nb,
		   int64_t k, int64_t n, int relu)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < nb; r++)
		for (int64_t o = 0; o < n; o++) {
			float s = b[o];
			for (int64_t q = 0; q < k; q++)
				s += x[r * k + q] * w[o * k + q];
			y[r * n + o] = relu && s < 0 ? 0 : s;
		}
}

void mlp_fwd(const float *x, const float *w0, const float *b0, const float *w1, const float *b1,
	     const float *w2, const float *b2, float *y, float *a1, float *a2, int64_t nb,
	     int64_t ni, int64_t h1, int64_t h2, int64_t no)
{
	linear(x, w0, b0, a1, nb, ni, h1, 1);
	linear(a1, w1, b1, a2, nb, h1, h2, 1);
	linear(a2, w2, b2, y, nb, h2, no, 0);
}

/* For a layer a_out = f(a_in W^T + b) with upstream gz (already masked):
 * dW += gz^T a_in, db += colsum gz, and (when gin) gin = gz W. */
static void layer_bwd(const float *ain, const float *w, const float *gz, float *dw, float *db,
		      float *gin, int64_t nb, int64_t k, int64_t n)
{
#pragma omp parallel for schedule(static)
	for (int64_t o = 0; o < n; o++) {
		float sb = 0;
		for (int64_t r = 0; r < nb; r++)
			sb += gz[r * n + o];
		db[o] = sb;
		for (int64_t q = 0; q < k; q++) {
			float s = 0;
			for (int64_t r = 0; r < nb; r++)
				s += gz[r * n + o] * ain[r * k + q];
			dw[o * k + q] = s;
		}
	}
	if (!gin)
		return;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < nb; r++)
		for (int64_t q = 0; q < k; q++) {
			float s = 0;
			for (int64_t o = 0; o < n; o++)
				s += gz[r * n + o] * w[o * k + q];
			gin[r * k + q] = s;
		}
}

void mlp_bwd(const float *x, const float *w0, const float *b0, const float *w1, const float *b1,
	     const float *w2, const float *dy, float *dx, float *dw0, float *db0, float *dw1,
	     float *db1, float *dw2, float *db2, float *a1, float *a2, float *g1, float *g2,
	     int64_t nb, int64_t ni, int64_t h1, int64_t h2, int64_t no)
{
	linear(x, w0, b0, a1, nb, ni, h1, 1);
	linear(a1, w1, b1, a2, nb, h1, h2, 1);
	layer_bwd(a2, w2, dy, dw2, db2, g2, nb, h2, no);
	for (int64_t e = 0; e < nb * h2; e++)
		if (!(a2[e] > 0))
			g2[e] = 0;
	layer_bwd(a1, w1, g2, dw1, db1, g1, nb, h1, h2);
	for (int64_t e = 0; e < nb * h1; e++)
		if (!(a1[e] > 0))
			g1[e] = 0;
	layer_bwd(x, w0, g1, dw0, db0, dx, nb, ni, h1);
}
