/* dec_be_cpu.c — the CPU backend of dec_be.h: the forward's operations on
 * host memory with the kernels of dec_simd*.c, the paged f16 KV cache, and
 * a thread pool.
 *
 * Matrix products are split across the pool by output rows and read each
 * weight row once per step (four tokens per kernel call, or eight repacked
 * rows per token); the input is encoded once per step into the weight's
 * activation type (dec_quant.h). Attention is split by (token, head) and
 * walks the token's block table one block at a time; scores and the value
 * sum continue across blocks exactly as over one contiguous cache, so where
 * a position is stored changes no bit. Which thread computes a row changes
 * no bit either (docs/DECODER.md, Exactness). */
#include "decode/be/dec_be.h"
#include "decode/be/dec_ref.h"
#include "decode/cpu/dec_cpu.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW_CHUNK 16 /* rows a thread claims at a time (a multiple of 8) */
#define MAX_SLOTS 64 /* threads beyond this start by helping the others */

struct scratch_buf {
	struct scratch_buf *next;
	max_align_t data[];
};

struct be_cpu {
	struct dec_be base;
	struct dec_pool *pool;
	int n_threads, max_blocks;
	size_t kv_dim, layer_stride; /* f16 values per position; per layer of a pool */
	uint16_t *kc, *vc;        /* [n_layers, n_blocks, block_size, kv_dim] f16 */
	void *act;                /* [max_tokens, act_stride] encoded activations */
	size_t act_stride;
	float *wbuf;              /* [n_threads, ROW_CHUNK, act_stride / 4] F16 rows in f32 (prefill) */
	float *att;               /* [n_threads, max_ctx] attention scores */
	float *q16;               /* [n_threads, head_dim] a query head in f16 */
	float *rope_cs;           /* [max_tokens, rope_dim] cos, sin per token */
	float *rope_cs_swa;       /* the same for sliding-window layers (gemma3), or NULL */
	/* the step (set_step) */
	int nb, n_out;
	int32_t *tok, *pos, *seq, *out, *btab; /* btab [max_seqs, max_blocks] */
	size_t *slot;             /* [max_tokens] offset of the token's row in a layer's pool */
	struct scratch_buf *bufs;
	void *mem;
	/* mixture of experts (cfg.n_expert > 0) */
	float *moe_lg;            /* [max_tokens, n_expert] router logits */
	float *moe_w;             /* [max_tokens, k] weights of the chosen experts */
	int32_t *moe_sel;         /* [max_tokens, k] the chosen experts, by rank */
	int32_t *moe_tok;         /* [max_tokens] tokens routed to the expert at hand */
	float *moe_in, *moe_tmp;  /* [max_tokens, dim] their inputs, an expert's outputs */
	float *moe_hb, *moe_hb2;  /* [max_tokens, expert_hidden] */
	float *moe_acc;           /* [max_tokens, k, dim] each token's weighted expert outputs */
	void *moe_mem;
	struct dec_sampler *smp;  /* [pool size] the sample op's, for rows of smp_width */
	int smp_width;
};

static struct be_cpu *cpu(struct dec_be *be)
{
	return (struct be_cpu *)be;
}

static const float *wvec(const struct dec_model *m, int layer, enum dec_wkind k)
{
	switch (k) {
	case DEC_W_ATTN_NORM: return m->w.layers[layer].attn_norm;
	case DEC_W_FFN_NORM: return m->w.layers[layer].ffn_norm;
	case DEC_W_OUT_NORM: return m->w.out_norm;
	case DEC_W_ATTN_POST_NORM: return m->w.layers[layer].attn_post_norm;
	case DEC_W_FFN_POST_NORM: return m->w.layers[layer].ffn_post_norm;
	default: return NULL;
	}
}

/* One thread's share of a product's row chunks: [next, end), next atomic. */
struct mm_slot {
	int64_t next, end;
	char pad[48]; /* a cache line each */
};

/* Up to three products sharing one encoded input, run as one dispatch. */
struct mm_job {
	const struct dec_mat *w[3];
	float *out[3];        /* out[k][b * out_stride[k] + r] */
	int64_t out_stride[3];
	int64_t chunk_end[3]; /* cumulative row-chunk counts */
	int nw, add;
	const uint8_t *act;   /* [nb, act_stride] encoded */
	size_t act_stride;
	int nb;
	struct mm_slot *slot; /* [n_slots]: contiguous ranges of chunks, one per thread */
	int n_slots;
	float *wbuf;          /* a thread's ROW_CHUNK rows in f32: wbuf + ith * wpitch */
	size_t wpitch;
};

static void put(const struct mm_job *j, int k, int b, int64_t r, float v)
{
	float *o = &j->out[k][b * j->out_stride[k] + r];

	*o = j->add ? *o + v : v;
}

/* Rows [ROW_CHUNK c, ROW_CHUNK (c + 1)) of the products, in their order.
 * Prefill (several tokens) goes through the multi-token kernels where the
 * table has them: gemm_nt tokens per call on a repacked group, 4 × 4 tiles
 * of F16; the tokens and rows left over through the one- and four-token
 * kernels, which give the same bits. */
static void mm_chunk(const struct mm_job *j, int64_t c, int ith)
{
	const struct dec_mat *w;
	dec_vec_dot_t dot;
	dec_dot4_fn dot4;
	dec_gemv8_fn gemv8;
	dec_gemm8_fn gemm8;
	dec_gemm_f16_fn gemm_f16 = dec_simd_get()->gemm_f16;
	size_t gbytes;
	int64_t r0, r1, r;
	int k = 0, nt, b0 = 0;

	while (k < j->nw && c >= j->chunk_end[k])
		k++;
	w = j->w[k];
	dot = dec_vec_dot_fn(w->type);
	dot4 = dec_vec_dot4_fn(w->type);
	r0 = (c - (k ? j->chunk_end[k - 1] : 0)) * ROW_CHUNK;
	r1 = r0 + ROW_CHUNK < w->rows ? r0 + ROW_CHUNK : w->rows;
	r = r0;
	gemv8 = dec_vec_gemv8_fn(w->type);
	gemm8 = dec_vec_gemm8_fn(w->type, &nt);
	gbytes = dec_x8_group_bytes(w->type, w->cols);
	/* Multi-token tiles, a block of tokens at a time over the chunk's rows:
	 * the chunk's weights and the block's activations stay in L1. */
	if (w->x8 && gemm8 && j->nb >= nt) {
		int64_t re = r0 + (r1 - r0) / 8 * 8;

		for (int b = 0; b + nt <= j->nb; b += nt)
			for (int64_t q = r0; q < re; q += 8) {
				float o[8 * 16];

				gemm8((const uint8_t *)w->x8 + (size_t)(q / 8) * gbytes, j->act + b * j->act_stride,
				      j->act_stride, w->cols, o);
				for (int t = 0; t < nt; t++)
					for (int i = 0; i < 8; i++)
						put(j, k, b + t, q + i, o[8 * t + i]);
			}
		b0 = j->nb / nt * nt;
	}
	if (w->type == DEC_T_F16 && gemm_f16 && j->wbuf && j->nb >= 4) {
		float *wf = j->wbuf + (size_t)ith * j->wpitch; /* the chunk's rows in f32, once */
		size_t ws = (size_t)w->cols;

		r = r0 + (r1 - r0) / 4 * 4;
		for (int64_t q = r0; q < r; q++)
			dec_simd_get()->f16_f32((const uint16_t *)((const uint8_t *)w->data + q * w->row_bytes),
						wf + (q - r0) * ws, w->cols);
		for (int b = 0; b + 4 <= j->nb; b += 4)
			for (int64_t q = r0; q < r; q += 4) {
				float o[16];

				gemm_f16(wf + (q - r0) * ws, ws, j->act + b * j->act_stride, j->act_stride, w->cols, o);
				for (int t = 0; t < 4; t++)
					for (int i = 0; i < 4; i++)
						put(j, k, b + t, q + i, o[4 * t + i]);
			}
		/* the tokens left over, one at a time, on those rows */
		for (int b = j->nb / 4 * 4; b < j->nb; b++)
			for (int64_t q = r0; q < r; q++)
				put(j, k, b, q, dot((const uint8_t *)w->data + q * w->row_bytes,
						    j->act + b * j->act_stride, w->cols));
	}
	/* repacked groups of 8 rows (r0 is a multiple of 8): the tokens from b0 one at a time */
	for (; w->x8 && r + 8 <= r1; r += 8) {
		const uint8_t *g = (const uint8_t *)w->x8 + (size_t)(r / 8) * gbytes;

		for (int b = b0; b < j->nb; b++) {
			float o[8];

			gemv8(g, j->act + b * j->act_stride, w->cols, o);
			for (int t = 0; t < 8; t++)
				put(j, k, b, r + t, o[t]);
		}
	}
	/* four tokens per pass over a row where a kernel exists, a block of
	 * four tokens over all the chunk's remaining rows before the next
	 * block (the four activation rows stay in L1; row by row they were
	 * re-read from L2 for every row: F16 prefill on AVX2 went from 214 to
	 * 276 tok/s on SmolLM2-135M) */
	b0 = dot4 ? j->nb / 4 * 4 : 0;
	for (int b = 0; b < b0; b += 4)
		for (int64_t q = r; q < r1; q++) {
			float o[4];

			dot4((const uint8_t *)w->data + q * w->row_bytes, j->act + b * j->act_stride, j->act_stride,
			     w->cols, o);
			for (int t = 0; t < 4; t++)
				put(j, k, b + t, q, o[t]);
		}
	for (; r < r1; r++)
		for (int b = b0; b < j->nb; b++)
			put(j, k, b, r, dot((const uint8_t *)w->data + r * w->row_bytes, j->act + b * j->act_stride,
					    w->cols));
}

/* Each thread first runs its own contiguous range of chunks (one sequential
 * stream of weights, which the hardware prefetcher follows), then helps with
 * the ranges of the others. */
static void mm_worker(void *arg, int ith, int nth)
{
	struct mm_job *j = arg;

	(void)nth;
	for (int v = 0; v < j->n_slots; v++) {
		struct mm_slot *sl = &j->slot[(ith + v) % j->n_slots];
		int64_t c;

		while ((c = __atomic_fetch_add(&sl->next, 1, __ATOMIC_RELAXED)) < sl->end)
			mm_chunk(j, c, ith);
	}
}

/* The nb input rows in the vec type vt; Q8_0 rows with their block sums
 * (dec_simd.h: the prefill kernels of Q4_0 and Q5_0 read them). The act
 * stride, 4 bytes a value, holds them. */
static void encode(struct be_cpu *c, uint32_t vt, const float *in, int nb, int64_t cols)
{
	for (int b = 0; b < nb; b++) {
		uint8_t *row = (uint8_t *)c->act + b * c->act_stride;

		dec_quantize_row(vt, in + b * cols, row, cols);
		if (vt == DEC_T_Q8_0 && nb > 1)
			dec_q8_0_sums(row, cols);
	}
}

/* out_k[b][r] (+)= w_k[r] · in[b] for k < nw: the input is encoded once per
 * vec type and matrices sharing it run in one dispatch. */
static void matmul_n(struct be_cpu *c, int nw, const struct dec_mat *const *w, float *const *out,
		     const float *in, int nb, int add)
{
	struct mm_slot slot[MAX_SLOTS];
	struct mm_job j = { .nw = 0, .add = add, .act = c->act, .act_stride = c->act_stride, .nb = nb,
			    .slot = slot, .n_slots = c->n_threads < MAX_SLOTS ? c->n_threads : MAX_SLOTS,
			    .wbuf = c->wbuf, .wpitch = ROW_CHUNK * c->act_stride / 4 };
	uint32_t vt = dec_vec_type(w[0]->type);
	int64_t chunks = 0, cols = w[0]->cols;

	encode(c, vt, in, nb, cols);
	for (int k = 0; k < nw; k++) {
		if (dec_vec_type(w[k]->type) != vt) { /* a mixed-type file: run the rest apart */
			matmul_n(c, nw - k, w + k, out + k, in, nb, add);
			break;
		}
		j.w[j.nw] = w[k];
		j.out[j.nw] = out[k];
		j.out_stride[j.nw] = w[k]->rows;
		chunks += (w[k]->rows + ROW_CHUNK - 1) / ROW_CHUNK;
		j.chunk_end[j.nw++] = chunks;
	}
	for (int t = 0; t < j.n_slots; t++) {
		j.slot[t].next = chunks * t / j.n_slots;
		j.slot[t].end = chunks * (t + 1) / j.n_slots;
	}
	/* the recursive call above re-encoded the activations: encode ours again */
	if (j.nw < nw)
		encode(c, vt, in, nb, cols);
	dec_pool_run(c->pool, mm_worker, &j);
}

static void op_matmul(struct dec_be *be, int layer, int nw, const enum dec_wkind *w, float *const *out,
		      const float *in, int nb, int add)
{
	const struct dec_mat *m[3];

	for (int k = 0; k < nw; k++)
		m[k] = dec_wmat(be->m, layer, w[k]);
	matmul_n(cpu(be), nw, m, out, in, nb, add);
}

static int be_layer_swa(const struct be_cpu *c, int layer)
{
	return c->base.m->w.layers[layer].swa;
}

struct att_job {
	struct be_cpu *c;
	int layer;
	const float *q;
	float *out;
	int next;
	int G; /* query heads a task: a kv head's group (its keys and values read once for them), or 1 */
};

static void att_worker(void *arg, int ith, int nth)
{
	struct att_job *j = arg;
	struct be_cpu *c = j->c;
	const struct dec_config *cf = &c->base.m->cfg;
	int hd = cf->head_dim, qd = cf->n_heads * hd, bs = c->base.cfg.block_size, G = j->G;
	int grp = cf->n_heads / cf->n_kv_heads, n_tasks = c->nb * cf->n_heads / G, mc = c->base.cfg.max_ctx;
	float *sc = c->att + (size_t)ith * grp * mc;
	float scale = cf->att_scale > 0 ? cf->att_scale : 1.0f / sqrtf((float)hd);
	int win = be_layer_swa(c, j->layer) ? cf->n_swa : 0;
	uint16_t *q16 = (uint16_t *)(c->q16 + (size_t)ith * grp * hd);
	const struct dec_simd *simd = dec_simd_get();
	const uint16_t *kl = c->kc + (size_t)j->layer * c->layer_stride;
	const uint16_t *vl = c->vc + (size_t)j->layer * c->layer_stride;

	(void)nth;
	for (;;) {
		int task = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED), b, h, n_pos, first;
		const int32_t *bt;
		float *o;
		size_t head;

		if (task >= n_tasks)
			break;
		b = task / (cf->n_heads / G);
		h = task % (cf->n_heads / G) * G; /* heads h .. h + G - 1, of one kv head */
		head = (size_t)(h / grp) * hd;
		n_pos = c->pos[b] + 1;
		/* positions [first, n_pos): all of them, or a window's last ones */
		first = win && n_pos > win ? n_pos - win : 0;
		bt = c->btab + (size_t)c->seq[b] * c->max_blocks;
		/* q meets the f16 keys as f16, as in llama.cpp */
		dec_quantize_row(DEC_T_F16, j->q + (size_t)b * qd + h * hd, q16, (int64_t)G * hd);
		o = j->out + (size_t)b * qd + h * hd;
		for (int p0 = first; p0 < n_pos; p0 = (p0 / bs + 1) * bs) {
			int end = (p0 / bs + 1) * bs < n_pos ? (p0 / bs + 1) * bs : n_pos;
			const uint16_t *kp = kl + ((size_t)bt[p0 / bs] * bs + p0 % bs) * c->kv_dim + head;

			if (G > 1)
				simd->att_scores_g(q16, G, kp, c->kv_dim, end - p0, hd, scale, sc + (p0 - first), mc);
			else
				simd->att_scores(q16, kp, c->kv_dim, end - p0, hd, scale, sc + (p0 - first));
		}
		for (int g = 0; g < G; g++)
			simd->softmax(sc + (size_t)g * mc, n_pos - first);
		memset(o, 0, (size_t)G * hd * sizeof *o);
		for (int p0 = first; p0 < n_pos; p0 = (p0 / bs + 1) * bs) {
			int end = (p0 / bs + 1) * bs < n_pos ? (p0 / bs + 1) * bs : n_pos;
			const uint16_t *vp = vl + ((size_t)bt[p0 / bs] * bs + p0 % bs) * c->kv_dim + head;

			if (G > 1)
				simd->att_values_g(sc + (p0 - first), mc, G, vp, c->kv_dim, end - p0, hd, o, hd);
			else
				simd->att_values(sc + (p0 - first), vp, c->kv_dim, end - p0, hd, o);
		}
	}
}

/* A task per (token, head); per (token, kv head) where the table reads a
 * group's keys once and there are two tasks a thread or more (fewer leave
 * threads idle: a decode step of SmolLM2, 3 kv heads on 2 threads, ran at
 * 69-75 tok/s grouped against 72-81 by head at 2048 positions). Either way
 * each head's arithmetic is the same. */
static void op_attention(struct dec_be *be, int layer, const float *q, float *out)
{
	const struct dec_config *cf = &be->m->cfg;
	const struct dec_simd *s = dec_simd_get();
	int grp = cf->n_heads / cf->n_kv_heads;
	int G = s->att_scores_g && s->att_values_g && grp > 1 && cpu(be)->nb * cf->n_kv_heads >= 2 * cpu(be)->n_threads
			? grp : 1;
	struct att_job j = { cpu(be), layer, q, out, 0, G };

	dec_pool_run(cpu(be)->pool, att_worker, &j);
}

static void add_bias(float *x, const float *b, int nb, int d)
{
	if (b)
		for (int t = 0; t < nb; t++)
			for (int i = 0; i < d; i++)
				x[t * d + i] += b[i];
}

static void op_qkv_post(struct dec_be *be, int layer, float *q, float *k, float *v)
{
	struct be_cpu *c = cpu(be);
	const struct dec_config *cf = &be->m->cfg;
	const struct dec_layer *l = &be->m->w.layers[layer];
	int hd = cf->head_dim, qd = cf->n_heads * hd, kvd = cf->n_kv_heads * hd;

	add_bias(q, l->bq, c->nb, qd);
	add_bias(k, l->bk, c->nb, kvd);
	add_bias(v, l->bv, c->nb, kvd);
	for (int b = 0; b < c->nb; b++) {
		size_t at = (size_t)layer * c->layer_stride + c->slot[b];
		const float *cs = (l->swa ? c->rope_cs_swa : c->rope_cs) + (size_t)b * cf->rope_dim;

		for (int h = 0; h < cf->n_heads; h++) {
			float *qh = q + (size_t)b * qd + h * hd;

			if (l->q_norm)
				dec_rmsnorm(qh, qh, l->q_norm, hd, cf->eps);
			dec_rope(qh, cf, cs);
		}
		for (int h = 0; h < cf->n_kv_heads; h++) {
			float *kh = k + (size_t)b * kvd + h * hd;

			if (l->k_norm)
				dec_rmsnorm(kh, kh, l->k_norm, hd, cf->eps);
			dec_rope(kh, cf, cs);
		}
		dec_quantize_row(DEC_T_F16, k + (size_t)b * kvd, c->kc + at, kvd);
		dec_quantize_row(DEC_T_F16, v + (size_t)b * kvd, c->vc + at, kvd);
	}
}

static void op_embed(struct dec_be *be, float *x)
{
	struct be_cpu *c = cpu(be);
	const struct dec_mat *e = &be->m->w.tok_embd;
	int D = be->m->cfg.dim;

	for (int b = 0; b < c->nb; b++)
		dec_dequant_row(e->type, (const uint8_t *)e->data + (size_t)c->tok[b] * e->row_bytes,
				x + (size_t)b * D, D);
	if (be->m->cfg.embd_scale > 0)
		for (size_t i = 0; i < (size_t)c->nb * D; i++)
			x[i] *= be->m->cfg.embd_scale;
}

static void op_rmsnorm(struct dec_be *be, float *y, const float *x, int layer, enum dec_wkind w, int nb)
{
	const struct dec_config *cf = &be->m->cfg;
	const float *wv = wvec(be->m, layer, w);

	for (int b = 0; b < nb; b++)
		dec_rmsnorm(y + (size_t)b * cf->dim, x + (size_t)b * cf->dim, wv, cf->dim, cf->eps);
}

static void op_add(struct dec_be *be, float *x, const float *y, size_t n)
{
	(void)be;
	for (size_t i = 0; i < n; i++)
		x[i] += y[i];
}

static void op_silu_mul(struct dec_be *be, float *g, const float *u, int nb)
{
	int h = be->m->cfg.hidden_dim;

	for (int b = 0; b < nb; b++) /* per token: results must not depend on the batch */
		dec_glu(&be->m->cfg, g + (size_t)b * h, u + (size_t)b * h, h);
}

static void op_gather(struct dec_be *be, float *dst, const float *src, int width)
{
	struct be_cpu *c = cpu(be);

	for (int i = 0; i < c->n_out; i++)
		if (dst + (size_t)i * width != src + (size_t)c->out[i] * width)
			memmove(dst + (size_t)i * width, src + (size_t)c->out[i] * width,
				(size_t)width * sizeof *dst);
}

/* The router's choice for token b: softmax over the experts (max
 * subtracted, sum in double), the k most likely (ties: lower id), their
 * probabilities renormalised. */
static void route(const float *lg, int E, int K, int32_t *sel, float *w)
{
	float mx = lg[0], p[4096];
	double sum = 0, ssel = 0;

	for (int e = 1; e < E; e++)
		mx = lg[e] > mx ? lg[e] : mx;
	for (int e = 0; e < E; e++) {
		p[e] = expf(lg[e] - mx);
		sum += p[e];
	}
	for (int e = 0; e < E; e++)
		p[e] = (float)(p[e] / sum);
	for (int r = 0; r < K; r++) {
		int best = -1;

		for (int e = 0; e < E; e++) {
			int taken = 0;

			for (int q = 0; q < r && !taken; q++)
				taken = sel[q] == e;
			if (!taken && (best < 0 || p[e] > p[best]))
				best = e;
		}
		sel[r] = best;
		w[r] = p[best];
		ssel += p[best];
	}
	for (int r = 0; r < K; r++)
		w[r] = (float)(w[r] / ssel);
}

static void op_moe(struct dec_be *be, int layer, const float *in, float *out, int nb)
{
	struct be_cpu *c = cpu(be);
	const struct dec_config *cf = &be->m->cfg;
	const struct dec_layer *l = &be->m->w.layers[layer];
	int E = cf->n_expert, K = cf->n_expert_used, D = cf->dim, H = cf->expert_hidden;
	const struct dec_mat *gi = &l->gate_inp;

	matmul_n(c, 1, &gi, &c->moe_lg, in, nb, 0);
	for (int b = 0; b < nb; b++)
		route(c->moe_lg + (size_t)b * E, E, K, c->moe_sel + (size_t)b * K, c->moe_w + (size_t)b * K);
	/* each expert over the tokens routed to it: every row is that token's
	 * own product, so what else was routed there changes no bit */
	for (int e = 0; e < E; e++) {
		const struct dec_mat *gu[2] = { &l->exps[3 * e], &l->exps[3 * e + 1] }, *dn = &l->exps[3 * e + 2];
		int m = 0;

		for (int b = 0; b < nb; b++)
			for (int r = 0; r < K; r++)
				if (c->moe_sel[(size_t)b * K + r] == e) {
					c->moe_tok[m] = b * K + r;
					memcpy(c->moe_in + (size_t)m * D, in + (size_t)b * D, (size_t)D * sizeof *in);
					m++;
				}
		if (!m)
			continue;
		matmul_n(c, 2, gu, (float *const[]){ c->moe_hb, c->moe_hb2 }, c->moe_in, m, 0);
		for (int j = 0; j < m; j++)
			dec_glu(cf, c->moe_hb + (size_t)j * H, c->moe_hb2 + (size_t)j * H, H);
		matmul_n(c, 1, &dn, &c->moe_tmp, c->moe_hb, m, 0);
		for (int j = 0; j < m; j++) {
			float w = c->moe_w[c->moe_tok[j]], *acc = c->moe_acc + (size_t)c->moe_tok[j] * D;
			const float *t = c->moe_tmp + (size_t)j * D;

			for (int i = 0; i < D; i++)
				acc[i] = w * t[i];
		}
	}
	for (int b = 0; b < nb; b++) /* in rank order */
		for (int r = 0; r < K; r++) {
			const float *acc = c->moe_acc + ((size_t)b * K + r) * D;

			for (int i = 0; i < D; i++)
				out[(size_t)b * D + i] += acc[i];
		}
}

static enum cr_status op_set_step(struct dec_be *be, const struct dec_step *st, struct cr_err *err)
{
	struct be_cpu *c = cpu(be);
	const struct dec_be_cfg *cfg = &be->cfg;
	int bs = cfg->block_size;

	if (st->nb < 1 || st->nb > cfg->max_tokens || st->n_seq < 1 || st->n_seq > cfg->max_seqs ||
	    st->n_out < 0 || st->n_out > cfg->max_out)
		return cr_errf(err, CR_EINTERNAL,
			       "cpu backend: step of %d tokens, %d sequences, %d outputs (at most %d, %d, %d)",
			       st->nb, st->n_seq, st->n_out, cfg->max_tokens, cfg->max_seqs, cfg->max_out);
	memcpy(c->btab, st->btab, (size_t)st->n_seq * c->max_blocks * sizeof *c->btab);
	for (int b = 0; b < st->nb; b++) {
		int p = st->pos[b], s = st->seq[b], blk;

		if (st->tok[b] < 0 || st->tok[b] >= be->m->cfg.n_vocab)
			return cr_errf(err, CR_EINPUT, "token id %d out of range [0, %d)", st->tok[b],
				       be->m->cfg.n_vocab);
		if (p < 0 || p >= cfg->max_ctx || s < 0 || s >= st->n_seq)
			return cr_errf(err, CR_EINTERNAL, "cpu backend: token %d at sequence %d position %d",
				       b, s, p);
		for (int j = 0; j <= p / bs; j++) {
			blk = c->btab[(size_t)s * c->max_blocks + j];
			if (blk < 0 || blk >= cfg->n_blocks)
				return cr_errf(err, CR_EINTERNAL,
					       "cpu backend: sequence %d has no block for positions %d..%d",
					       s, j * bs, j * bs + bs - 1);
		}
		blk = c->btab[(size_t)s * c->max_blocks + p / bs];
		c->tok[b] = st->tok[b];
		c->pos[b] = p;
		c->seq[b] = s;
		c->slot[b] = ((size_t)blk * bs + (size_t)(p % bs)) * c->kv_dim;
		dec_rope_cs(be->m, p, c->rope_cs + (size_t)b * be->m->cfg.rope_dim);
		if (c->rope_cs_swa)
			dec_rope_cs_layer(be->m, p, 1, c->rope_cs_swa + (size_t)b * be->m->cfg.rope_dim);
	}
	for (int i = 0; i < st->n_out; i++) {
		if (st->out[i] < 0 || st->out[i] >= st->nb || (i && st->out[i] <= st->out[i - 1]))
			return cr_errf(err, CR_EINTERNAL, "cpu backend: output row %d is token %d", i,
				       st->out[i]);
		c->out[i] = st->out[i];
	}
	c->nb = st->nb;
	c->n_out = st->n_out;
	return CR_OK;
}

static enum cr_status op_download(struct dec_be *be, float *host, const float *src, size_t n,
				  struct cr_err *err)
{
	(void)be;
	(void)err;
	if (host != src)
		memcpy(host, src, n * sizeof *host);
	return CR_OK;
}

struct smp_job {
	struct be_cpu *c;
	const float *logits;
	int width, n;
	struct dec_draw *d;
};

/* Draws ith, ith + nth, ...: each on its own, with the thread's sampler. */
static void smp_worker(void *arg, int ith, int nth)
{
	const struct smp_job *j = arg;
	struct dec_sampler *s = &j->c->smp[ith];

	for (int i = ith; i < j->n; i += nth) {
		struct dec_draw *d = &j->d[i];
		const float *row = j->logits + (size_t)d->row * j->width;

		s->cfg = d->samp;
		d->id = dec_sample_u(s, row, d->u53, &d->n_kept);
		if (d->n_logprobs)
			dec_top_logprobs(row, j->width, d->n_logprobs, d->top_ids, d->top_lp);
		if (d->want_lp)
			d->lp = dec_token_logprob(row, j->width, d->id);
	}
}

/* dec_sample's pipeline on each row, the top logprobs by dec_top_logprobs
 * and the token's by dec_token_logprob (the host's values, bit for bit);
 * the draws spread over the pool's threads (a draw over a 49k vocabulary
 * costs ~0.1 ms: at batch 32, a tenth of a 2-thread step if done alone). */
static enum cr_status op_sample(struct dec_be *be, const float *logits, int width, struct dec_draw *d, int n,
				struct cr_err *err)
{
	struct be_cpu *c = cpu(be);
	int nth = dec_pool_size(c->pool);
	enum cr_status st;
	struct smp_job j = { c, logits, width, n, d };

	if ((st = dec_be_check_draws(be, d, n, width, err)))
		return st;
	if (c->smp_width != width) {
		if (!c->smp && !(c->smp = calloc((size_t)nth, sizeof *c->smp)))
			return cr_errf(err, CR_ENOMEM, "cpu backend: out of memory for the samplers");
		c->smp_width = 0;
		for (int t = 0; t < nth; t++) {
			dec_sampler_release(&c->smp[t]);
			if ((st = dec_sampler_init(&c->smp[t], &(struct dec_sampling){ 0 }, width, err)))
				return st;
		}
		c->smp_width = width;
	}
	if (n == 1)
		smp_worker(&j, 0, 1);
	else
		dec_pool_run(c->pool, smp_worker, &j);
	return CR_OK;
}

static enum cr_status op_kv_copy(struct dec_be *be, int src, int dst, struct cr_err *err)
{
	struct be_cpu *c = cpu(be);
	size_t blk = (size_t)be->cfg.block_size * c->kv_dim;

	if (src < 0 || dst < 0 || src >= be->cfg.n_blocks || dst >= be->cfg.n_blocks)
		return cr_errf(err, CR_EINTERNAL, "cpu backend: copy of block %d to %d", src, dst);
	for (int L = 0; L < be->m->cfg.n_layers; L++) {
		size_t base = (size_t)L * c->layer_stride;

		memcpy(c->kc + base + (size_t)dst * blk, c->kc + base + (size_t)src * blk, blk * 2);
		memcpy(c->vc + base + (size_t)dst * blk, c->vc + base + (size_t)src * blk, blk * 2);
	}
	return CR_OK;
}

static float *op_scratch(struct dec_be *be, size_t n)
{
	struct be_cpu *c = cpu(be);
	struct scratch_buf *s;

	if (n > (SIZE_MAX - sizeof *s - 255) / sizeof(float))
		return NULL; /* the caller says out of memory, naming the buffer */
	s = aligned_alloc(256, (sizeof *s + n * sizeof(float) + 255) / 256 * 256);
	if (!s)
		return NULL;
	s->next = c->bufs;
	c->bufs = s;
	return (float *)(void *)s->data;
}

static void op_free(struct dec_be *be)
{
	struct be_cpu *c = cpu(be);

	while (c->bufs) {
		struct scratch_buf *n = c->bufs->next;

		free(c->bufs);
		c->bufs = n;
	}
	for (int t = 0; c->smp && t < dec_pool_size(c->pool); t++)
		dec_sampler_release(&c->smp[t]);
	free(c->smp);
	dec_pool_free(c->pool);
	free(c->mem);
	free(c->moe_mem);
	free(c->kc);
	free(c);
}

static int op_supports(const struct dec_model *m, char *why, size_t cap)
{
	(void)m;
	(void)why;
	(void)cap;
	return 1; /* every architecture the loader accepts */
}

static const struct dec_be_ops cpu_ops = {
	.name = "cpu",
	.supports = op_supports,
	.free = op_free,
	.scratch = op_scratch,
	.set_step = op_set_step,
	.embed = op_embed,
	.rmsnorm = op_rmsnorm,
	.matmul = op_matmul,
	.qkv_post = op_qkv_post,
	.attention = op_attention,
	.add = op_add,
	.silu_mul = op_silu_mul,
	.gather = op_gather,
	.moe = op_moe,
	.download = op_download,
	.sample = op_sample,
	.kv_copy = op_kv_copy,
};

static size_t max3(size_t a, size_t b, size_t c)
{
	return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

/* a * b and a + b, setting *ovf on overflow: the sizes below multiply the
 * model's dimensions (checked against its tensors at load) by the run's
 * configuration, and each product is checked before it sizes anything. */
static size_t mulz(size_t a, size_t b, int *ovf)
{
	size_t r;

	*ovf |= __builtin_mul_overflow(a, b, &r);
	return r;
}

static size_t addz(size_t a, size_t b, int *ovf)
{
	size_t r;

	*ovf |= __builtin_add_overflow(a, b, &r);
	return r;
}

enum cr_status dec_be_cpu_open(const struct dec_model *m, const struct dec_be_cfg *cfg,
			       struct dec_be **out, struct cr_err *err)
{
	const struct dec_config *cf = &m->cfg;
	struct be_cpu *c = calloc(1, sizeof *c);
	size_t mt, kv, nf, ni, act, wb, grp, total;
	enum cr_status st = CR_OK;
	int ovf = 0;
	uint8_t *p;

	*out = NULL;
	if (!c)
		return cr_errf(err, CR_ENOMEM, "cpu backend: out of memory");
	if (cfg->max_tokens < 1 || cfg->max_out < 0 || cfg->max_out > cfg->max_tokens ||
	    cfg->max_seqs < 1 || cfg->max_ctx < 1 || cfg->block_size < 1 ||
	    (cfg->block_size & (cfg->block_size - 1)) || cfg->n_blocks < 1) {
		st = cr_errf(err, CR_EUSAGE,
			     "cpu backend: bad configuration (tokens %d, outputs %d, sequences %d, "
			     "context %d, block size %d, blocks %d)", cfg->max_tokens, cfg->max_out,
			     cfg->max_seqs, cfg->max_ctx, cfg->block_size, cfg->n_blocks);
		goto out;
	}
	c->base.ops = &cpu_ops;
	c->base.m = m;
	c->base.cfg = *cfg;
	c->max_blocks = dec_be_max_blocks(cfg);
	c->kv_dim = mulz((size_t)cf->n_kv_heads, (size_t)cf->head_dim, &ovf);
	c->layer_stride = mulz(mulz((size_t)cfg->n_blocks, (size_t)cfg->block_size, &ovf), c->kv_dim, &ovf);
	if ((st = dec_pool_new(cfg->n_threads > 0 ? cfg->n_threads : dec_cpu_count(), &c->pool, err)))
		goto out;
	c->n_threads = dec_pool_size(c->pool);
	c->base.cfg.n_threads = c->n_threads;
	/* the KV pools: one allocation, apart from the small things */
	kv = mulz((size_t)cf->n_layers, c->layer_stride, &ovf);
	if (ovf || kv > SIZE_MAX / (2 * sizeof(uint16_t))) {
		st = cr_errf(err, CR_EUSAGE, "cpu backend: a KV cache of %d blocks of %d positions, %d layers of "
			     "%d kv heads of %d, overflows a size", cfg->n_blocks, cfg->block_size, cf->n_layers,
			     cf->n_kv_heads, cf->head_dim);
		goto out;
	}
	c->kc = malloc(2 * kv * sizeof(uint16_t));
	if (!c->kc) {
		st = cr_errf(err, CR_ENOMEM, "cpu backend: out of memory for the KV cache (%zu MiB, %d blocks)",
			     (2 * kv * sizeof(uint16_t)) >> 20, cfg->n_blocks);
		goto out;
	}
	c->vc = c->kc + kv;
	/* encoded activations: at most 4 bytes a value (f32), rounded to 64 B */
	mt = (size_t)cfg->max_tokens;
	c->act_stride = addz(mulz(max3((size_t)cf->dim, mulz((size_t)cf->n_heads, (size_t)cf->head_dim, &ovf),
				       (size_t)cf->hidden_dim), 4, &ovf), 63, &ovf) / 64 * 64;
	act = mulz(c->act_stride, mt, &ovf);
	/* F16 rows in f32 for the prefill tiles, where the kernels have them */
	wb = dec_simd_get()->gemm_f16 ? mulz((size_t)c->n_threads * ROW_CHUNK, c->act_stride, &ovf) : 0;
	/* attention scratch per thread: a kv head's group of score rows and queries */
	grp = (size_t)(cf->n_heads / cf->n_kv_heads);
	nf = addz(mulz((size_t)c->n_threads * grp, (size_t)cfg->max_ctx + (size_t)cf->head_dim, &ovf),
		  mulz(2 * mt, (size_t)cf->rope_dim, &ovf), &ovf);
	ni = mt * 4 + (size_t)cfg->max_out + (size_t)cfg->max_seqs * c->max_blocks;
	total = addz(addz(act, wb, &ovf), mulz(nf, sizeof(float), &ovf), &ovf);
	total = addz(total, ni * sizeof(int32_t) + mt * sizeof(size_t) + 63, &ovf) / 64 * 64;
	if (ovf) {
		st = cr_errf(err, CR_EUSAGE, "cpu backend: the activations of %d tokens (width %zu) and a context "
			     "of %d overflow a size", cfg->max_tokens, c->act_stride / 4, cfg->max_ctx);
		goto out;
	}
	c->mem = aligned_alloc(64, total);
	if (!c->mem) {
		st = cr_errf(err, CR_ENOMEM, "cpu backend: out of memory (context %d)", cfg->max_ctx);
		goto out;
	}
	p = c->mem;
	c->act = p; p += act;
	c->wbuf = wb ? (float *)(void *)p : NULL;
	p += wb;
	c->slot = (size_t *)(void *)p; p += mt * sizeof(size_t);
	c->att = (float *)(void *)p; p += (size_t)c->n_threads * grp * cfg->max_ctx * sizeof(float);
	c->q16 = (float *)(void *)p; p += (size_t)c->n_threads * grp * cf->head_dim * sizeof(float);
	c->rope_cs = (float *)(void *)p; p += mt * cf->rope_dim * sizeof(float);
	if (cf->n_swa)
		c->rope_cs_swa = (float *)(void *)p;
	p += mt * cf->rope_dim * sizeof(float);
	c->tok = (int32_t *)(void *)p; p += mt * sizeof(int32_t);
	c->pos = (int32_t *)(void *)p; p += mt * sizeof(int32_t);
	c->seq = (int32_t *)(void *)p; p += mt * sizeof(int32_t);
	p += mt * sizeof(int32_t); /* spare */
	c->out = (int32_t *)(void *)p; p += (size_t)cfg->max_out * sizeof(int32_t);
	c->btab = (int32_t *)(void *)p;
	if (cf->n_expert) {
		size_t K = (size_t)cf->n_expert_used, D = (size_t)cf->dim, H = (size_t)cf->expert_hidden;
		size_t nf2 = mulz(mt, addz((size_t)cf->n_expert + K + 2 * D + 2 * H, mulz(K, D, &ovf), &ovf), &ovf);
		size_t ni2 = mt * (K + K), moe = addz(mulz(nf2, sizeof(float), &ovf), ni2 * sizeof(int32_t), &ovf);
		float *q;

		if (ovf) {
			st = cr_errf(err, CR_EUSAGE, "cpu backend: the expert buffers of %d tokens (%d experts of %d "
				     "used, width %d) overflow a size", cfg->max_tokens, cf->n_expert_used,
				     cf->n_expert, cf->expert_hidden);
			goto out;
		}
		if (cf->n_expert > 4096 || !(c->moe_mem = malloc(moe))) {
			st = cr_errf(err, CR_ENOMEM, "cpu backend: out of memory for %d experts", cf->n_expert);
			goto out;
		}
		q = c->moe_mem;
		c->moe_lg = q; q += mt * cf->n_expert;
		c->moe_w = q; q += mt * K;
		c->moe_in = q; q += mt * D;
		c->moe_tmp = q; q += mt * D;
		c->moe_hb = q; q += mt * H;
		c->moe_hb2 = q; q += mt * H;
		c->moe_acc = q; q += mt * K * D;
		c->moe_sel = (int32_t *)(void *)q;
		c->moe_tok = c->moe_sel + mt * K;
	}
	*out = &c->base;
	c = NULL;
out:
	if (c)
		op_free(&c->base);
	return st;
}
