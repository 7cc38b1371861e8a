// Honest plain MinGPT causal self-attention, forward and backward: c_attn
// as row-by-row dot products, then per (batch, head) the scores q k^T /
// sqrt(hs) over s <= t, a max-subtracted softmax, att v; c_proj. The
// backward recomputes qkv and the attention (scratch starts as garbage),
// then dc_proj, d(att out), the softmax's y (dy - sum y dy), dq/dk/dv,
// and c_attn's gradients; OpenMP over rows and (batch, head) pairs; all in
// float, sequential sums. Under the large profile the scores are ~1e5 and
// the softmax nearly one-hot, so a near-tie turns the logits' rounding into
// O(1) changes of the weights (57x the f32 baseline's error on some seeds,
// why _plain.c keeps its intermediates in double); the verifier allows such
// ill-conditioned elements (docs/VERIFIER.md, "Conditioning at float
// precision"), so this plain float form must pass.
// @task L3/43_MinGPTCausalAttention
// @scratch qkv f32[B * T * 3 * C]
// @scratch att f32[B * 8 * T * T]
// @scratch ao f32[B * T * C]
// @scratch dqkv f32[B * T * 3 * C]
// @scratch dao f32[B * T * C]
// @scratch datt f32[B * 8 * T * T]
// @forward attn_fwd(x, c_attn_w, c_attn_b, c_proj_w, c_proj_b, y, qkv, att, ao, B, T, C)
// @backward attn_bwd(x, c_attn_w, c_attn_b, c_proj_w, dy, dx, dc_attn_w, dc_attn_b, dc_proj_w, dc_proj_b, qkv, att, ao, dqkv, dao, datt, B, T, C)
#include <math.h>
#include <stdint.h>

#define NH 8

/* y[r, o] = b[o] + sum_q x[r, q] w[o, q] over nr rows, a sequential float
 * sum */
static void linear(const float *x, const float *w, const float *b, float *y, int64_t nr,
		   int64_t k, int64_t n)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < nr; r++)
		for (int64_t o = 0; o < n; o++) {
			float s = b[o];
			for (int64_t q = 0; q < k; q++)
				s += x[r * k + q] * w[o * k + q];
			y[r * n + o] = s;
		}
}

/* qkv = x c_attn^T + b; att = causal softmax(q k^T / sqrt(hs)); ao = att v,
 * heads side by side as [B, T, C] */
static void attention(const float *x, const float *wa, const float *ba, float *qkv, float *att,
		      float *ao, int64_t nb, int64_t t, int64_t c)
{
	int64_t hs = c / NH, c3 = 3 * c;
	float scale = 1.0f / sqrtf((float)hs);
	linear(x, wa, ba, qkv, nb * t, c, c3);
#pragma omp parallel for schedule(static)
	for (int64_t bh = 0; bh < nb * NH; bh++) {
		int64_t b = bh / NH, h = bh % NH;
		const float *base = qkv + b * t * c3;
		float *p = att + bh * t * t;
		for (int64_t i = 0; i < t; i++) {
			const float *q = base + i * c3 + h * hs;
			float m = -INFINITY, sum = 0;
			for (int64_t j = 0; j <= i; j++) {
				const float *k = base + j * c3 + c + h * hs;
				float s = 0;
				for (int64_t d = 0; d < hs; d++)
					s += q[d] * k[d];
				p[i * t + j] = s * scale;
				if (p[i * t + j] > m)
					m = p[i * t + j];
			}
			for (int64_t j = 0; j <= i; j++) {
				p[i * t + j] = expf(p[i * t + j] - m);
				sum += p[i * t + j];
			}
			for (int64_t j = 0; j <= i; j++)
				p[i * t + j] /= sum;
			for (int64_t j = i + 1; j < t; j++)
				p[i * t + j] = 0;
			for (int64_t d = 0; d < hs; d++) {
				float s = 0;
				for (int64_t j = 0; j <= i; j++)
					s += p[i * t + j] * base[j * c3 + 2 * c + h * hs + d];
				ao[(b * t + i) * c + h * hs + d] = s;
			}
		}
	}
}

void attn_fwd(const float *x, const float *wa, const float *ba, const float *wp, const float *bp,
	      float *y, float *qkv, float *att, float *ao, int64_t nb, int64_t t, int64_t c)
{
	attention(x, wa, ba, qkv, att, ao, nb, t, c);
	linear(ao, wp, bp, y, nb * t, c, c);
}

/* dw[o, q] = sum_r g[r, o] a[r, q]; db[o] = sum_r g[r, o] */
static void weight_grads(const float *a, const float *g, float *dw, float *db, int64_t nr,
			 int64_t k, int64_t n)
{
#pragma omp parallel for schedule(static)
	for (int64_t o = 0; o < n; o++) {
		float sb = 0;
		for (int64_t r = 0; r < nr; r++)
			sb += g[r * n + o];
		db[o] = sb;
		for (int64_t q = 0; q < k; q++) {
			float s = 0;
			for (int64_t r = 0; r < nr; r++)
				s += g[r * n + o] * a[r * k + q];
			dw[o * k + q] = s;
		}
	}
}

/* gin[r, q] = sum_o g[r, o] w[o, q] */
static void input_grad(const float *g, const float *w, float *gin, int64_t nr, int64_t k,
		       int64_t n)
{
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < nr; r++)
		for (int64_t q = 0; q < k; q++) {
			float s = 0;
			for (int64_t o = 0; o < n; o++)
				s += g[r * n + o] * w[o * k + q];
			gin[r * k + q] = s;
		}
}

void attn_bwd(const float *x, const float *wa, const float *ba, const float *wp, const float *dy,
	      float *dx, float *dwa, float *dba, float *dwp, float *dbp, float *qkv, float *att,
	      float *ao, float *dqkv, float *dao, float *datt, int64_t nb, int64_t t, int64_t c)
{
	int64_t hs = c / NH, c3 = 3 * c;
	float scale = 1.0f / sqrtf((float)hs);
	attention(x, wa, ba, qkv, att, ao, nb, t, c);
	weight_grads(ao, dy, dwp, dbp, nb * t, c, c);
	input_grad(dy, wp, dao, nb * t, c, c);
#pragma omp parallel for schedule(static)
	for (int64_t bh = 0; bh < nb * NH; bh++) {
		int64_t b = bh / NH, h = bh % NH;
		const float *base = qkv + b * t * c3, *p = att + bh * t * t;
		float *g = datt + bh * t * t, *dbase = dqkv + b * t * c3;
		/* dP = dao v^T, then the softmax backward into the scaled scores */
		for (int64_t i = 0; i < t; i++) {
			const float *go = dao + (b * t + i) * c + h * hs;
			float dot = 0;
			for (int64_t j = 0; j <= i; j++) {
				float s = 0;
				for (int64_t d = 0; d < hs; d++)
					s += go[d] * base[j * c3 + 2 * c + h * hs + d];
				g[i * t + j] = s;
				dot += s * p[i * t + j];
			}
			for (int64_t j = 0; j <= i; j++)
				g[i * t + j] = p[i * t + j] * (g[i * t + j] - dot) * scale;
		}
		for (int64_t i = 0; i < t; i++)
			for (int64_t d = 0; d < hs; d++) {
				float sq = 0, sk = 0, sv = 0;
				for (int64_t j = 0; j <= i; j++) /* dq_i = sum_j g[i, j] k_j */
					sq += g[i * t + j] * base[j * c3 + c + h * hs + d];
				for (int64_t j = i; j < t; j++) { /* dk_i, dv_i: the rows j >= i that read them */
					sk += g[j * t + i] * base[j * c3 + h * hs + d];
					sv += p[j * t + i] * dao[(b * t + j) * c + h * hs + d];
				}
				dbase[i * c3 + h * hs + d] = sq;
				dbase[i * c3 + c + h * hs + d] = sk;
				dbase[i * c3 + 2 * c + h * hs + d] = sv;
			}
	}
	weight_grads(x, dqkv, dwa, dba, nb * t, c, c3);
	input_grad(dqkv, wa, dx, nb * t, c, c3);
}
