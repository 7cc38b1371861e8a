/* dec_forward.c — the optimised CPU forward: f16 KV caches for one or more
 * sequences, blocks of up to max_block tokens (a prompt's consecutive
 * positions, or one token of each of several sequences) in which each weight
 * row is read once (four tokens per kernel call), matrix products split
 * across a thread pool by output rows, dot products on the encoded weight
 * rows (see dec_quant.h), attention split by (token, head).
 *
 * Per block of nb tokens (token b: sequence blk_seq[b], position blk_pos[b]),
 * per layer:
 *   xb = rmsnorm(x)·attn_norm; q,k,v = W·xb (+bias); qwen3: per-head rmsnorm;
 *   RoPE(q,k); cache k,v; xb = softmax(q·K/√d)·V; x += Wo·xb;
 *   xb = rmsnorm(x)·ffn_norm; x += Wdown·(silu(Wgate·xb) ⊙ Wup·xb). */
#include "decode/dec_impl.h"
#include "decode/dec_quant.h"
#include "decode/dec_simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROW_CHUNK 16 /* rows a thread claims at a time (a multiple of 8) */
#define MAX_SLOTS 64 /* threads beyond this start by helping the others */

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
	int nw;
	const uint8_t *act;   /* [nb, act_stride] encoded */
	size_t act_stride;
	int nb;
	struct mm_slot *slot; /* [n_slots]: contiguous ranges of chunks, one per thread */
	int n_slots;
};

/* Rows [ROW_CHUNK c, ROW_CHUNK (c + 1)) of the products, in their order. */
static void mm_chunk(const struct mm_job *j, int64_t c)
{
	const struct dec_mat *w;
	dec_vec_dot_t dot;
	dec_dot4_fn dot4;
	dec_gemv8_fn gemv8;
	size_t gbytes;
	int64_t r0, r1, r;
	int k = 0;

	while (k < j->nw && c >= j->chunk_end[k])
		k++;
	w = j->w[k];
	dot = dec_vec_dot_fn(w->type);
	dot4 = dec_vec_dot4_fn(w->type);
	r0 = (c - (k ? j->chunk_end[k - 1] : 0)) * ROW_CHUNK;
	r1 = r0 + ROW_CHUNK < w->rows ? r0 + ROW_CHUNK : w->rows;
	r = r0;
	gemv8 = dec_vec_gemv8_fn(w->type);
	gbytes = dec_x8_group_bytes(w->type, w->cols);
	/* repacked groups of 8 rows (r0 is a multiple of 8): a token at a time */
	for (; w->x8 && r + 8 <= r1; r += 8) {
		const uint8_t *g = (const uint8_t *)w->x8 + (size_t)(r / 8) * gbytes;

		for (int b = 0; b < j->nb; b++) {
			float o[8];

			gemv8(g, j->act + b * j->act_stride, w->cols, o);
			for (int t = 0; t < 8; t++)
				j->out[k][b * j->out_stride[k] + r + t] = o[t];
		}
	}
	for (; r < r1; r++) {
		const void *row = (const uint8_t *)w->data + r * w->row_bytes;
		int b = 0;

		/* four tokens per pass over the row where a kernel exists */
		for (; dot4 && b + 4 <= j->nb; b += 4) {
			float o[4];

			dot4(row, j->act + b * j->act_stride, j->act_stride, w->cols, o);
			for (int t = 0; t < 4; t++)
				j->out[k][(b + t) * j->out_stride[k] + r] = o[t];
		}
		for (; b < j->nb; b++)
			j->out[k][b * j->out_stride[k] + r] = dot(row, j->act + b * j->act_stride, w->cols);
	}
}

/* Each thread first runs its own contiguous range of chunks (one sequential
 * stream of weights, which the hardware prefetcher follows), then helps with
 * the ranges of the others. Which thread computes a row changes no bit. */
static void mm_worker(void *arg, int ith, int nth)
{
	struct mm_job *j = arg;

	(void)nth;
	for (int v = 0; v < j->n_slots; v++) {
		struct mm_slot *sl = &j->slot[(ith + v) % j->n_slots];
		int64_t c;

		while ((c = __atomic_fetch_add(&sl->next, 1, __ATOMIC_RELAXED)) < sl->end)
			mm_chunk(j, c);
	}
}

/* out_k[b][r] = w_k[r] · in[b] for k < nw: the input is encoded once per
 * vec type and matrices sharing it run in one dispatch. */
static void matmul_n(struct dec_state *s, int nw, const struct dec_mat *const *w, float *const *out,
		     const int64_t *out_stride, const float *in, int64_t in_stride, int nb)
{
	struct mm_slot slot[MAX_SLOTS];
	struct mm_job j = { .nw = 0, .act = s->act, .act_stride = s->act_stride, .nb = nb, .slot = slot,
			    .n_slots = s->n_threads < MAX_SLOTS ? s->n_threads : MAX_SLOTS };
	uint32_t vt = dec_vec_type(w[0]->type);
	int64_t chunks = 0;

	for (int b = 0; b < nb; b++)
		dec_quantize_row(vt, in + b * in_stride, (uint8_t *)s->act + b * s->act_stride, w[0]->cols);
	for (int k = 0; k < nw; k++) {
		if (dec_vec_type(w[k]->type) != vt) { /* a mixed-type file: run the rest apart */
			matmul_n(s, nw - k, w + k, out + k, out_stride + k, in, in_stride, nb);
			break;
		}
		j.w[j.nw] = w[k];
		j.out[j.nw] = out[k];
		j.out_stride[j.nw] = out_stride[k];
		chunks += (w[k]->rows + ROW_CHUNK - 1) / ROW_CHUNK;
		j.chunk_end[j.nw++] = chunks;
	}
	for (int t = 0; t < j.n_slots; t++) {
		j.slot[t].next = chunks * t / j.n_slots;
		j.slot[t].end = chunks * (t + 1) / j.n_slots;
	}
	/* the recursive call above re-encoded s->act: encode ours again */
	if (j.nw < nw)
		for (int b = 0; b < nb; b++)
			dec_quantize_row(vt, in + b * in_stride, (uint8_t *)s->act + b * s->act_stride,
					 w[0]->cols);
	dec_pool_run(s->pool, mm_worker, &j);
}

static void matmul(struct dec_state *s, const struct dec_mat *w, const float *in, int64_t in_stride,
		   int nb, float *out, int64_t out_stride)
{
	matmul_n(s, 1, &w, &out, &out_stride, in, in_stride, nb);
}

/* Offset of (sequence, layer, position) in the f16 caches. */
static size_t kv_index(const struct dec_state *s, int seq, int layer, int pos)
{
	const struct dec_config *c = &s->m->cfg;

	return (((size_t)seq * c->n_layers + layer) * s->max_ctx + pos) * c->n_kv_heads * c->head_dim;
}

struct att_job {
	struct dec_state *s;
	int layer, nb;
	int next;
};

static void att_worker(void *arg, int ith, int nth)
{
	struct att_job *j = arg;
	struct dec_state *s = j->s;
	const struct dec_config *c = &s->m->cfg;
	int hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd;
	int grp = c->n_heads / c->n_kv_heads, n_tasks = j->nb * c->n_heads;
	float *sc = s->att + (size_t)ith * s->max_ctx, scale = 1.0f / sqrtf((float)hd);
	uint16_t *q16 = (uint16_t *)(s->q16 + (size_t)ith * hd);
	const struct dec_simd *simd = dec_simd_get();

	(void)nth;
	for (;;) {
		int task = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED), b, h, kh, n_pos;
		float *o, mx = -INFINITY, sum;
		size_t base;

		if (task >= n_tasks)
			break;
		b = task / c->n_heads;
		h = task % c->n_heads;
		kh = h / grp;
		n_pos = s->blk_pos[b] + 1;
		base = kv_index(s, s->blk_seq[b], j->layer, 0) + (size_t)kh * hd;
		/* q meets the f16 keys as f16, as in llama.cpp */
		dec_quantize_row(DEC_T_F16, s->q + (size_t)b * qd + h * hd, q16, hd);
		o = s->xb + (size_t)b * qd + h * hd;
		simd->att_scores(q16, s->kc + base, kvd, n_pos, hd, scale, sc);
		for (int p = 0; p < n_pos; p++)
			mx = sc[p] > mx ? sc[p] : mx;
		sum = simd->exp_sum(sc, n_pos, mx);
		for (int p = 0; p < n_pos; p++)
			sc[p] /= sum;
		simd->att_values(sc, s->vc + base, kvd, n_pos, hd, o);
	}
}

static void add_bias(float *x, const float *b, int nb, int d)
{
	if (b)
		for (int t = 0; t < nb; t++)
			for (int i = 0; i < d; i++)
				x[t * d + i] += b[i];
}

static void forward_layer(struct dec_state *s, int L, int nb)
{
	const struct dec_config *c = &s->m->cfg;
	const struct dec_layer *l = &s->m->w.layers[L];
	int hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd, D = c->dim;
	struct att_job aj = { s, L, nb, 0 };

	for (int b = 0; b < nb; b++)
		dec_rmsnorm(s->xb + (size_t)b * D, s->x + (size_t)b * D, l->attn_norm, D, c->eps);
	matmul_n(s, 3, (const struct dec_mat *const[]){ &l->wq, &l->wk, &l->wv },
		 (float *const[]){ s->q, s->k, s->v }, (const int64_t[]){ qd, kvd, kvd }, s->xb, D, nb);
	add_bias(s->q, l->bq, nb, qd);
	add_bias(s->k, l->bk, nb, kvd);
	add_bias(s->v, l->bv, nb, kvd);
	for (int b = 0; b < nb; b++) {
		size_t at = kv_index(s, s->blk_seq[b], L, s->blk_pos[b]);

		for (int h = 0; h < c->n_heads; h++) {
			float *qh = s->q + (size_t)b * qd + h * hd;

			if (l->q_norm)
				dec_rmsnorm(qh, qh, l->q_norm, hd, c->eps);
			dec_rope(qh, c, s->rope_cs + (size_t)b * c->rope_dim);
		}
		for (int h = 0; h < c->n_kv_heads; h++) {
			float *kh = s->k + (size_t)b * kvd + h * hd;

			if (l->k_norm)
				dec_rmsnorm(kh, kh, l->k_norm, hd, c->eps);
			dec_rope(kh, c, s->rope_cs + (size_t)b * c->rope_dim);
		}
		dec_quantize_row(DEC_T_F16, s->k + (size_t)b * kvd, s->kc + at, kvd);
		dec_quantize_row(DEC_T_F16, s->v + (size_t)b * kvd, s->vc + at, kvd);
	}
	dec_pool_run(s->pool, att_worker, &aj);
	matmul(s, &l->wo, s->xb, qd, nb, s->hb, D);
	for (size_t i = 0; i < (size_t)nb * D; i++)
		s->x[i] += s->hb[i];
	for (int b = 0; b < nb; b++)
		dec_rmsnorm(s->xb + (size_t)b * D, s->x + (size_t)b * D, l->ffn_norm, D, c->eps);
	matmul_n(s, 2, (const struct dec_mat *const[]){ &l->w_gate, &l->w_up },
		 (float *const[]){ s->hb, s->hb2 }, (const int64_t[]){ c->hidden_dim, c->hidden_dim }, s->xb, D, nb);
	for (int b = 0; b < nb; b++) /* per token: results must not depend on the batch */
		dec_simd_get()->silu_mul(s->hb + (size_t)b * c->hidden_dim, s->hb2 + (size_t)b * c->hidden_dim,
					 c->hidden_dim);
	matmul(s, &l->w_down, s->hb, c->hidden_dim, nb, s->xb, D);
	for (size_t i = 0; i < (size_t)nb * D; i++)
		s->x[i] += s->xb[i];
}

/* Runs tok[0..nb) whose sequences and positions are in s->blk_seq/blk_pos.
 * Logits: of every token into logits[b * n_vocab] when all, else of the last
 * token only into s->logits. */
static void forward_block(struct dec_state *s, const int32_t *tok, int nb, float *logits, int all)
{
	const struct dec_model *m = s->m;
	const struct dec_config *c = &m->cfg;
	int D = c->dim;

	for (int b = 0; b < nb; b++)
		dec_dequant_row(m->w.tok_embd.type,
				(const uint8_t *)m->w.tok_embd.data + (size_t)tok[b] * m->w.tok_embd.row_bytes,
				s->x + (size_t)b * D, D);
	for (int b = 0; b < nb; b++) /* one rotation per position, shared by all layers */
		dec_rope_cs(m, s->blk_pos[b], s->rope_cs + (size_t)b * c->rope_dim);
	for (int L = 0; L < c->n_layers; L++)
		forward_layer(s, L, nb);
	if (all) {
		for (int b = 0; b < nb; b++)
			dec_rmsnorm(s->xb + (size_t)b * D, s->x + (size_t)b * D, m->w.out_norm, D, c->eps);
		matmul(s, &m->w.output, s->xb, D, nb, logits, c->n_vocab);
		memcpy(s->logits, logits + (size_t)(nb - 1) * c->n_vocab, (size_t)c->n_vocab * sizeof(float));
	} else {
		dec_rmsnorm(s->xb, s->x + (size_t)(nb - 1) * D, m->w.out_norm, D, c->eps);
		matmul(s, &m->w.output, s->xb, D, 1, s->logits, c->n_vocab);
	}
}

static enum cr_status check_tokens(const struct dec_state *s, const int32_t *tokens, int n,
				   struct cr_err *err)
{
	for (int i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= s->m->cfg.n_vocab)
			return cr_errf(err, CR_EINPUT, "token id %d out of range [0, %d)", tokens[i],
				       s->m->cfg.n_vocab);
	return CR_OK;
}

enum cr_status dec_forward(struct dec_state *s, const int32_t *tokens, int n,
			   float *all_logits, struct cr_err *err)
{
	const struct dec_config *c = &s->m->cfg;
	enum cr_status st;

	if (n <= 0)
		return cr_errf(err, CR_EUSAGE, "forward: no tokens");
	if (n > s->max_ctx - s->pos)
		return cr_errf(err, CR_EUSAGE, "context full: %d tokens + %d new > %d", s->pos, n,
			       s->max_ctx);
	if ((st = check_tokens(s, tokens, n, err)))
		return st;
	for (int i = 0; i < n; i += s->max_block) {
		int nb = n - i < s->max_block ? n - i : s->max_block;

		for (int b = 0; b < nb; b++) {
			s->blk_seq[b] = s->seq;
			s->blk_pos[b] = s->pos + b;
		}
		forward_block(s, tokens + i, nb, all_logits ? all_logits + (size_t)i * c->n_vocab : NULL,
			      all_logits != NULL);
		s->pos += nb;
	}
	return CR_OK;
}

enum cr_status dec_forward_batch(struct dec_state *s, const int32_t *tokens, const int *seqs,
				 const int *pos, int n, float *logits, struct cr_err *err)
{
	enum cr_status st;

	if (n <= 0 || n > s->max_block)
		return cr_errf(err, CR_EUSAGE, "forward batch: %d tokens (1..%d)", n, s->max_block);
	if ((st = check_tokens(s, tokens, n, err)))
		return st;
	for (int b = 0; b < n; b++) {
		if (seqs[b] < 0 || seqs[b] >= s->n_seq || pos[b] < 0 || pos[b] >= s->max_ctx)
			return cr_errf(err, CR_EUSAGE, "forward batch: sequence %d position %d out of range",
				       seqs[b], pos[b]);
		for (int k = 0; k < b; k++)
			if (seqs[k] == seqs[b])
				return cr_errf(err, CR_EUSAGE, "forward batch: sequence %d twice", seqs[b]);
		s->blk_seq[b] = seqs[b];
		s->blk_pos[b] = pos[b];
	}
	forward_block(s, tokens, n, logits, 1);
	return CR_OK;
}

void dec_state_copy_seq(struct dec_state *s, int from, int to, int n_pos)
{
	const struct dec_config *c = &s->m->cfg;
	size_t n = (size_t)n_pos * c->n_kv_heads * c->head_dim * sizeof(uint16_t);

	if (from == to)
		return;
	for (int L = 0; L < c->n_layers; L++) {
		memcpy(s->kc + kv_index(s, to, L, 0), s->kc + kv_index(s, from, L, 0), n);
		memcpy(s->vc + kv_index(s, to, L, 0), s->vc + kv_index(s, from, L, 0), n);
	}
}

static size_t max3(size_t a, size_t b, size_t c)
{
	return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

enum cr_status dec_state_new(const struct dec_model *m, int max_ctx, int max_block,
			     int n_threads, struct dec_state **out, struct cr_err *err)
{
	return dec_state_new_seqs(m, max_ctx, max_block, 1, n_threads, out, err);
}

enum cr_status dec_state_new_seqs(const struct dec_model *m, int max_ctx, int max_block, int n_seq,
				  int n_threads, struct dec_state **out, struct cr_err *err)
{
	const struct dec_config *c = &m->cfg;
	struct dec_state *s = calloc(1, sizeof *s);
	size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
	size_t wide = max3(c->dim, qd, 0), hid = max3(c->hidden_dim, c->dim, 0), nf, act;
	enum cr_status st = CR_OK;
	float *p;

	*out = NULL;
	if (!s)
		return cr_errf(err, CR_ENOMEM, "decoder state: out of memory");
	if (max_ctx <= 0 || max_block <= 0 || n_seq <= 0) {
		st = cr_errf(err, CR_EUSAGE, "decoder state: bad context %d / block %d / sequences %d",
			     max_ctx, max_block, n_seq);
		goto out;
	}
	s->m = m;
	s->max_ctx = max_ctx;
	s->max_block = max_block;
	s->n_seq = n_seq;
	if ((st = dec_pool_new(n_threads > 0 ? n_threads : dec_cpu_count(), &s->pool, err)))
		goto out;
	s->n_threads = dec_pool_size(s->pool);
	/* encoded activations: at most 4 bytes a value (f32), rounded to 64 B */
	s->act_stride = (max3(c->dim, qd, c->hidden_dim) * 4 + 63) / 64 * 64;
	act = s->act_stride * (size_t)max_block;
	nf = (size_t)max_block * (2 * wide + qd + 2 * kvd + 2 * hid + c->dim) +
	     (size_t)s->n_threads * (max_ctx + (size_t)c->head_dim) + (size_t)c->n_vocab +
	     (size_t)n_seq * c->n_layers * max_ctx * kvd /* two f16 caches */ +
	     (size_t)max_block * (c->rope_dim + 2) /* rope, blk_seq, blk_pos */;
	s->mem = aligned_alloc(64, (nf * sizeof(float) + act + 63) / 64 * 64);
	if (!s->mem) {
		st = cr_errf(err, CR_ENOMEM, "decoder state: out of memory (%zu MiB for context %d)",
			     (nf * sizeof(float) + act) >> 20, max_ctx);
		goto out;
	}
	s->act = s->mem;
	p = (float *)((uint8_t *)s->mem + act);
	s->x = p; p += (size_t)max_block * c->dim;
	s->xb = p; p += (size_t)max_block * wide;
	s->q = p; p += (size_t)max_block * qd;
	s->k = p; p += (size_t)max_block * kvd;
	s->v = p; p += (size_t)max_block * kvd;
	s->hb = p; p += (size_t)max_block * hid;
	s->hb2 = p; p += (size_t)max_block * hid;
	p += (size_t)max_block * wide; /* spare: keeps nf honest if a buffer grows */
	s->att = p; p += (size_t)s->n_threads * max_ctx;
	s->logits = p; p += c->n_vocab;
	s->q16 = p; p += (size_t)s->n_threads * c->head_dim;
	s->rope_cs = p; p += (size_t)max_block * c->rope_dim;
	s->blk_seq = (int *)p; p += max_block;
	s->blk_pos = (int *)p; p += max_block;
	s->kc = (uint16_t *)p;
	s->vc = s->kc + (size_t)n_seq * c->n_layers * max_ctx * kvd;
	*out = s;
	s = NULL;
out:
	dec_state_free(s);
	return st;
}

void dec_state_free(struct dec_state *s)
{
	if (!s)
		return;
	dec_pool_free(s->pool);
	free(s->mem);
	free(s);
}

void dec_state_reset(struct dec_state *s)
{
	s->pos = 0;
}
