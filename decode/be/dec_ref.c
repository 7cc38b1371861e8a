/* dec_ref.c — the reference forward pass, written to be obviously right
 * rather than fast: the whole sequence at once, layer by layer, every weight
 * row dequantized to f32 and every dot product summed in double, attention
 * recomputed from scratch (no cache). Also the shared RMS norm and RoPE. */
#include "decode/be/dec_ref.h"
#include "decode/quant/dec_simd.h"
#include "decode/quant/dec_quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void dec_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
	double ss = 0;
	float scale;

	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	scale = (float)(1.0 / sqrt(ss / n + eps));
	for (int i = 0; i < n; i++)
		y[i] = x[i] * scale * w[i];
}

void dec_glu(const struct dec_config *c, float *g, const float *u, int64_t n)
{
	if (!c->ffn_gelu) {
		dec_simd_get()->silu_mul(g, u, n);
		return;
	}
	/* GELU, tanh form, as llama.cpp's CPU backend computes it: the input
	 * rounded to f16, 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))) in
	 * f32, the result rounded to f16 (its lookup table); 0 below -10, x
	 * above 10 */
	for (int64_t i = 0; i < n; i++) {
		float x = g[i], y;

		if (x <= -10.0f) {
			y = 0;
		} else if (x >= 10.0f) {
			y = x;
		} else {
			x = dec_f16_to_f32(dec_f32_to_f16(x));
			y = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * x * (1.0f + 0.044715f * x * x)));
			y = dec_f16_to_f32(dec_f32_to_f16(y));
		}
		g[i] = y * u[i];
	}
}

void dec_rope_cs(const struct dec_model *m, int pos, float *cs)
{
	dec_rope_cs_layer(m, pos, 0, cs);
}

void dec_rope_cs_layer(const struct dec_model *m, int pos, int local, float *cs)
{
	const struct dec_config *c = &m->cfg;
	float theta = (float)pos, step = powf(local ? c->rope_base_swa : c->rope_base, -2.0f / (float)c->rope_dim);
	float scale = local || !c->rope_scale ? 1.0f : c->rope_scale;
	const float *fr = local ? NULL : m->w.rope_freqs;

	for (int i = 0; i < c->rope_dim / 2; i++) {
		float th = theta / (fr ? fr[i] : 1.0f) * scale;

		cs[2 * i] = cosf(th);
		cs[2 * i + 1] = sinf(th);
		theta *= step;
	}
}

void dec_rope(float *v, const struct dec_config *c, const float *csin)
{
	int half = c->rope_dim / 2;

	for (int i = 0; i < half; i++) {
		float cs = csin[2 * i], sn = csin[2 * i + 1];
		int a = c->rope_neox ? i : 2 * i, b = c->rope_neox ? i + half : 2 * i + 1;
		float x0 = v[a], x1 = v[b];

		v[a] = x0 * cs - x1 * sn;
		v[b] = x0 * sn + x1 * cs;
	}
}

/* out[t][r] = W[r] · in[t] for t < n (in has stride cols, out stride rows). */
static void matmul_ref(const struct dec_mat *w, const float *in, int n, float *out, float *row)
{
	for (int64_t r = 0; r < w->rows; r++) {
		dec_dequant_row(w->type, (const uint8_t *)w->data + r * w->row_bytes, row, w->cols);
		for (int t = 0; t < n; t++) {
			double s = 0;

			for (int64_t j = 0; j < w->cols; j++)
				s += (double)row[j] * in[t * w->cols + j];
			out[t * w->rows + r] = (float)s;
		}
	}
}

static void add_bias(float *x, const float *b, int n, int d)
{
	if (b)
		for (int t = 0; t < n; t++)
			for (int i = 0; i < d; i++)
				x[t * d + i] += b[i];
}

/* gemma3's post-norms on a sublayer's output, row by row (w NULL: none). */
static void post_norm(const struct dec_config *c, const float *w, float *y, int n)
{
	if (w)
		for (int t = 0; t < n; t++)
			dec_rmsnorm(y + (size_t)t * c->dim, y + (size_t)t * c->dim, w, c->dim, c->eps);
}

/* The gated activation in double, SiLU or GELU's tanh form. */
static float glu_ref(const struct dec_config *c, double x, double u)
{
	if (c->ffn_gelu)
		return (float)(0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * u);
	return (float)(x / (1 + exp(-x)) * u);
}

/* Causal attention; with win > 0 a query sees only its last win positions. */
static void attention_ref(const struct dec_config *c, const float *q, const float *k,
			  const float *v, int n, int win, float *out, double *sc)
{
	int hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd;
	int grp = c->n_heads / c->n_kv_heads;

	for (int t = 0; t < n; t++)
		for (int h = 0; h < c->n_heads; h++) {
			const float *qh = q + t * qd + h * hd;
			int kh = h / grp;
			double mx = -INFINITY, sum = 0;

			int s0 = win && t + 1 > win ? t + 1 - win : 0;

			for (int s = s0; s <= t; s++) {
				double d = 0;

				for (int i = 0; i < hd; i++)
					d += (double)qh[i] * k[s * kvd + kh * hd + i];
				sc[s] = d * (c->att_scale > 0 ? c->att_scale : 1 / sqrt((double)hd));
				mx = sc[s] > mx ? sc[s] : mx;
			}
			for (int s = s0; s <= t; s++) {
				sc[s] = exp(sc[s] - mx);
				sum += sc[s];
			}
			for (int i = 0; i < hd; i++) {
				double o = 0;

				for (int s = s0; s <= t; s++)
					o += sc[s] * v[s * kvd + kh * hd + i];
				out[t * qd + h * hd + i] = (float)(o / sum);
			}
		}
}

/* Mixture of experts, token by token in double: the router's softmax, the
 * top n_expert_used (ties: lower id), weights renormalised, the weighted
 * sum of the chosen experts' SwiGLU outputs added to x. g, u: expert_hidden
 * floats; tmp: dim floats. */
static enum cr_status moe_ref(const struct dec_model *m, const struct dec_layer *l, const float *xb, int n,
			      float *x, float *row, float *g, float *u, float *tmp, struct cr_err *err)
{
	const struct dec_config *c = &m->cfg;
	int E = c->n_expert, K = c->n_expert_used, H = c->expert_hidden;
	double *p = malloc((size_t)E * sizeof *p);
	float *lg = malloc((size_t)E * sizeof *lg);
	int *sel = malloc((size_t)K * sizeof *sel);

	if (!p || !lg || !sel) {
		free(p);
		free(lg);
		free(sel);
		return cr_errf(err, CR_ENOMEM, "reference forward: out of memory");
	}
	for (int t = 0; t < n; t++) {
		const float *in = xb + (size_t)t * c->dim;
		double mx, sum = 0, ssel = 0;

		matmul_ref(&l->gate_inp, in, 1, lg, row);
		mx = lg[0];
		for (int e = 1; e < E; e++)
			mx = lg[e] > mx ? lg[e] : mx;
		for (int e = 0; e < E; e++)
			sum += p[e] = exp((double)lg[e] - mx);
		for (int r = 0; r < K; r++) {
			sel[r] = -1;
			for (int e = 0; e < E; e++) {
				int taken = 0;

				for (int q = 0; q < r; q++)
					taken |= sel[q] == e;
				if (!taken && (sel[r] < 0 || p[e] > p[sel[r]]))
					sel[r] = e;
			}
			ssel += p[sel[r]];
		}
		for (int r = 0; r < K; r++) {
			const struct dec_mat *ex = l->exps + 3 * sel[r];

			matmul_ref(&ex[0], in, 1, g, row);
			matmul_ref(&ex[1], in, 1, u, row);
			for (int i = 0; i < H; i++)
				g[i] = glu_ref(c, g[i], u[i]);
			matmul_ref(&ex[2], g, 1, tmp, row);
			for (int i = 0; i < c->dim; i++)
				x[(size_t)t * c->dim + i] += (float)(p[sel[r]] / ssel * tmp[i]);
		}
	}
	free(p);
	free(lg);
	free(sel);
	return CR_OK;
}

enum cr_status dec_forward_ref(const struct dec_model *m, const int32_t *tokens, int n,
			       float *logits, struct cr_err *err)
{
	const struct dec_config *c = &m->cfg;
	int hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd;
	int wide = c->dim > qd ? c->dim : qd;
	size_t nf, per = 2 * (size_t)c->dim + 2 * (size_t)wide + 2 * (size_t)kvd + 2 * (size_t)c->hidden_dim;
	int ovf = __builtin_mul_overflow((size_t)n, per, &nf) ||
		  __builtin_add_overflow(nf, (size_t)(c->hidden_dim > wide ? c->hidden_dim : wide) +
						     (size_t)c->n_vocab + (size_t)c->rope_dim, &nf) ||
		  nf > SIZE_MAX / sizeof(float);
	float *mem = ovf ? NULL : malloc(nf * sizeof(float)), *x, *xb, *q, *k, *v, *att, *g, *u, *row, *inv, *tmp;
	double *sc = malloc((size_t)n * sizeof(double));
	enum cr_status st = CR_OK;

	if (!mem || !sc) {
		st = cr_errf(err, CR_ENOMEM, "reference forward: out of memory");
		goto out;
	}
	x = mem;
	tmp = x + (size_t)n * c->dim;
	xb = tmp + (size_t)n * c->dim;
	q = xb + (size_t)n * wide;
	k = q + (size_t)n * wide;
	v = k + (size_t)n * kvd;
	g = v + (size_t)n * kvd;
	u = g + (size_t)n * c->hidden_dim;
	row = u + (size_t)n * c->hidden_dim;
	inv = row + (c->hidden_dim > wide ? c->hidden_dim : wide) + c->n_vocab;
	att = xb; /* attention output reuses xb */
	for (int t = 0; t < n; t++) {
		if (tokens[t] < 0 || tokens[t] >= c->n_vocab) {
			st = cr_errf(err, CR_EINPUT, "token id %d out of range [0, %d)", tokens[t], c->n_vocab);
			goto out;
		}
		dec_dequant_row(m->w.tok_embd.type,
				(const uint8_t *)m->w.tok_embd.data + tokens[t] * m->w.tok_embd.row_bytes,
				x + (size_t)t * c->dim, c->dim);
		if (c->embd_scale > 0)
			for (int i = 0; i < c->dim; i++)
				x[(size_t)t * c->dim + i] *= c->embd_scale;
	}
	for (int L = 0; L < c->n_layers; L++) {
		const struct dec_layer *l = &m->w.layers[L];

		for (int t = 0; t < n; t++)
			dec_rmsnorm(xb + t * c->dim, x + t * c->dim, l->attn_norm, c->dim, c->eps);
		matmul_ref(&l->wq, xb, n, q, row);
		matmul_ref(&l->wk, xb, n, k, row);
		matmul_ref(&l->wv, xb, n, v, row);
		add_bias(q, l->bq, n, qd);
		add_bias(k, l->bk, n, kvd);
		add_bias(v, l->bv, n, kvd);
		for (int t = 0; t < n; t++) {
			dec_rope_cs_layer(m, t, l->swa, inv);
			for (int h = 0; h < c->n_heads; h++) {
				float *qh = q + t * qd + h * hd;

				if (l->q_norm)
					dec_rmsnorm(qh, qh, l->q_norm, hd, c->eps);
				dec_rope(qh, c, inv);
			}
			for (int h = 0; h < c->n_kv_heads; h++) {
				float *kh = k + t * kvd + h * hd;

				if (l->k_norm)
					dec_rmsnorm(kh, kh, l->k_norm, hd, c->eps);
				dec_rope(kh, c, inv);
			}
		}
		attention_ref(c, q, k, v, n, l->swa ? c->n_swa : 0, att, sc);
		matmul_ref(&l->wo, att, n, tmp, row);
		post_norm(c, l->attn_post_norm, tmp, n);
		for (size_t i = 0; i < (size_t)n * c->dim; i++)
			x[i] += tmp[i];
		for (int t = 0; t < n; t++)
			dec_rmsnorm(xb + t * c->dim, x + t * c->dim, l->ffn_norm, c->dim, c->eps);
		if (l->n_expert) {
			if ((st = moe_ref(m, l, xb, n, x, row, g, u, tmp, err)))
				goto out;
			continue;
		}
		matmul_ref(&l->w_gate, xb, n, g, row);
		matmul_ref(&l->w_up, xb, n, u, row);
		for (size_t i = 0; i < (size_t)n * c->hidden_dim; i++)
			g[i] = glu_ref(c, g[i], u[i]);
		matmul_ref(&l->w_down, g, n, tmp, row);
		post_norm(c, l->ffn_post_norm, tmp, n);
		for (size_t i = 0; i < (size_t)n * c->dim; i++)
			x[i] += tmp[i];
	}
	for (int t = 0; t < n; t++)
		dec_rmsnorm(xb + t * c->dim, x + t * c->dim, m->w.out_norm, c->dim, c->eps);
	matmul_ref(&m->w.output, xb, n, logits, row);
out:
	free(mem);
	free(sc);
	return st;
}
