/* dec_be_cuda.c — the CUDA backend of dec_be.h: the model's weights, the
 * paged f16 KV cache and the activations in device memory, the forward's
 * operations as kernels (decode/cuda/dec_kernels.cu, embedded in the binary
 * as sm_80 and sm_90 cubins and compute_80 PTX: dec_cu_images.S), issued in
 * order on one stream through the driver table of cuda/cuda_drv_impl.h
 * (libcuda is dlopened: the binary starts without a GPU). This file: the
 * ops, steps, graphs and errors; opening and freeing: dec_be_cuda_open.c.
 *
 * Errors. Ops return nothing: the first failure (a launch refused, or an
 * asynchronous fault seen at the next synchronisation) is kept with the
 * name of the kernel last issued and the layer, and every later status
 * call (set_step, download, kv_copy, graph_end) returns it. With
 * CRUCIBLE_CUDA_SYNC=1 every launch is followed by a synchronisation, so
 * the kernel named is the one that failed (and graphs are off).
 *
 * Graphs. A step shape (nb, n_out, n_seq, attention tiles) seen a second
 * time is captured while its ops are issued and replayed from then on (at
 * most MAX_GRAPHS kept, least recently used evicted; CRUCIBLE_CUDA_GRAPHS=0
 * turns them off). A replay is valid because everything that changes
 * between steps of one shape (token ids, positions, tiles, block tables,
 * output rows) is read by
 * the kernels from fixed device buffers that set_step fills, and the
 * scratch buffers the forward passes never move. */
#include "decode/cuda/dec_cu_host.h"
#include "decode/quant/dec_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const dec_cu_kname[KI_N] = {
#define X(n) #n,
	DEC_CU_KERNELS(X)
#undef X
};

static struct be_cuda *cuda(struct dec_be *be)
{
	return (struct be_cuda *)be;
}

/* ---- errors ------------------------------------------------------------- */

/* The first failure sticks; its message names the last kernel issued. */
static void fail(struct be_cuda *b, CUresult r, const char *what)
{
	char buf[32];
	const char *desc = NULL;

	if (b->err_st)
		return;
	if (b->cu->GetErrorString(r, &desc) != CUDA_SUCCESS)
		desc = NULL;
	b->err_st = CR_EENV;
	if (b->last_kernel >= 0)
		snprintf(b->err_msg, sizeof b->err_msg, "cuda backend: %s: %s%s%s (last kernel issued: %s, layer %d%s)",
			 what, cr_cu_result_name((int)r, buf, sizeof buf), desc ? ": " : "", desc ? desc : "",
			 dec_cu_kname[b->last_kernel], b->last_layer,
			 b->sync_each ? "" : "; CRUCIBLE_CUDA_SYNC=1 names the failing one");
	else
		snprintf(b->err_msg, sizeof b->err_msg, "cuda backend: %s: %s%s%s", what,
			 cr_cu_result_name((int)r, buf, sizeof buf), desc ? ": " : "", desc ? desc : "");
}

static enum cr_status sticky(struct be_cuda *b, struct cr_err *err)
{
	return b->err_st ? cr_errf(err, b->err_st, "%s", b->err_msg) : CR_OK;
}

/* A launch with `smem` bytes of dynamic shared memory. */
static void launch_sm(struct be_cuda *b, enum kid k, int layer, uint64_t gx, unsigned gy, unsigned gz,
		      unsigned threads, unsigned smem, void **params)
{
	CUresult r;
	char what[128];

	if (b->err_st)
		return;
	b->last_kernel = (int)k;
	b->last_layer = layer;
	/* the hardware's limits, checked here so a size never wraps */
	r = gx > INT32_MAX || gy > 65535 || gz > 65535 ? CUDA_ERROR_INVALID_VALUE
		: b->cu->LaunchKernel(b->fn[k], (unsigned)gx, gy, gz, threads, 1, 1, smem, b->st, params, NULL);
	if (r != CUDA_SUCCESS) {
		snprintf(what, sizeof what, "launch of %s (grid %llu,%u,%u, %u threads)", dec_cu_kname[k],
			 (unsigned long long)gx, gy, gz, threads);
		fail(b, r, what);
	} else if (b->sync_each && (r = b->cu->StreamSynchronize(b->st)) != CUDA_SUCCESS) {
		snprintf(what, sizeof what, "kernel %s", dec_cu_kname[k]);
		fail(b, r, what);
	}
}

static void launch(struct be_cuda *b, enum kid k, int layer, uint64_t gx, unsigned gy, unsigned gz,
		   unsigned threads, void **params)
{
	launch_sm(b, k, layer, gx, gy, gz, threads, 0, params);
}

/* The device copy of (layer, k); index into b->mats. */
const struct dmat *dec_cu_dmat(const struct be_cuda *b, int layer, enum dec_wkind k)
{
	static const int slot[DEC_W_N] = { [DEC_W_Q] = 0, [DEC_W_K] = 1, [DEC_W_V] = 2, [DEC_W_O] = 3,
					   [DEC_W_GATE] = 4, [DEC_W_UP] = 5, [DEC_W_DOWN] = 6 };
	int nl = b->base.m->cfg.n_layers;

	if (k == DEC_W_TOK_EMBD)
		return &b->mats[nl * 7];
	if (k == DEC_W_OUTPUT)
		return &b->mats[nl * 7 + 1];
	return &b->mats[layer * 7 + slot[k]];
}

/* ---- ops ---------------------------------------------------------------- */

static void op_embed(struct dec_be *be, float *x)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr px = (CUdeviceptr)(uintptr_t)x;
	void *p[] = { &b->dcfg, &px };

	launch(b, KI_k_embed, -1, (unsigned)b->nb, 1, 1, 256, p);
}

static void op_rmsnorm(struct dec_be *be, float *y, const float *x, int layer, enum dec_wkind w, int nb)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr py = (CUdeviceptr)(uintptr_t)y, px = (CUdeviceptr)(uintptr_t)x, pw;
	int n = be->m->cfg.dim;
	void *p[] = { &b->dcfg, &py, &px, &pw, &n };

	pw = w == DEC_W_OUT_NORM ? b->vecs[2 * be->m->cfg.n_layers] : b->vecs[2 * layer + (w == DEC_W_FFN_NORM)];
	if (nb > 0)
		launch(b, KI_k_rmsnorm, layer, (unsigned)nb, 1, 1, 256, p);
}

/* The activation encoding a weight type meets (dec_vec_type's, on the GPU). */
static enum dec_cu_act act_of(uint32_t t)
{
	switch (t) {
	case DEC_T_F16: return DEC_CU_ACT_F16;
	case DEC_T_BF16: return DEC_CU_ACT_BF16;
	case DEC_T_Q8_0: case DEC_T_Q4_0: case DEC_T_Q5_0: case DEC_T_IQ4_NL: return DEC_CU_ACT_Q8_0;
	case DEC_T_Q4_1: case DEC_T_Q5_1: return DEC_CU_ACT_Q8_1;
	case DEC_T_Q2_K: case DEC_T_Q3_K: case DEC_T_Q4_K: case DEC_T_Q5_K: case DEC_T_Q6_K: case DEC_T_IQ4_XS:
		return DEC_CU_ACT_Q8_K;
	default: return DEC_CU_ACT_F32;
	}
}

static void quantize(struct be_cuda *b, enum dec_cu_act a, const float *in, int cols, int nb, int layer)
{
	CUdeviceptr px = (CUdeviceptr)(uintptr_t)in;
	int64_t n = (int64_t)cols * nb;

	switch (a) {
	case DEC_CU_ACT_F32:
		break;
	case DEC_CU_ACT_F16:
	case DEC_CU_ACT_BF16: {
		void *p[] = { &px, &b->act_q, &n };
		launch(b, a == DEC_CU_ACT_F16 ? KI_k_quant_f16 : KI_k_quant_bf16, layer,
		       ((uint64_t)n + 255) / 256, 1, 1, 256, p);
		break;
	}
	case DEC_CU_ACT_Q8_0: {
		void *p[] = { &px, &b->act_q, &b->act_d, &cols };
		launch(b, KI_k_quant_q8_0, layer, (unsigned)((cols + 127) / 128), (unsigned)nb, 1, 128, p);
		break;
	}
	case DEC_CU_ACT_Q8_1: {
		void *p[] = { &px, &b->act_q, &b->act_d, &b->act_s, &cols };
		launch(b, KI_k_quant_q8_1, layer, (unsigned)((cols + 127) / 128), (unsigned)nb, 1, 128, p);
		break;
	}
	case DEC_CU_ACT_Q8_K: {
		void *p[] = { &px, &b->act_q, &b->act_d, &cols };
		launch(b, KI_k_quant_q8_k, layer, (unsigned)((cols + 1023) / 1024), (unsigned)nb, 1, 128, p);
		break;
	}
	}
}

int dec_cu_mmv_index(uint32_t t)
{
	/* DEC_CU_MMV_TYPES's order */
	static const uint32_t types[DEC_CU_N_MMV_TYPES] = {
		DEC_T_F32, DEC_T_F16, DEC_T_BF16, DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_1, DEC_T_Q5_1,
		DEC_T_Q4_K, DEC_T_Q6_K, DEC_T_Q2_K, DEC_T_Q3_K, DEC_T_Q5_K, DEC_T_IQ4_NL, DEC_T_IQ4_XS,
	};

	for (int i = 0; i < DEC_CU_N_MMV_TYPES; i++)
		if (types[i] == t)
			return i;
	return -1;
}

/* mmv_<type>_<NT>: NT (1, 4, 16, 64) the tokens a pass serves, the
 * smallest that covers nb; *nt gets it. The type is one check_mat let in. */
static enum kid mmv_kernel(uint32_t t, int nb, int *nt)
{
	int ti = dec_cu_mmv_index(t), ni = 0;

	while (ni < 3 && (1 << (2 * ni)) < nb)
		ni++;
	*nt = 1 << (2 * ni);
	/* DEC_CU_KERNELS lists the other kernels, then the types of each NT */
	return (enum kid)(KI_mmv_f32_1 + ni * DEC_CU_N_MMV_TYPES + ti);
}

/* The MMQ kernel of a block type (KI_N: none). */
static enum kid mmq_kernel(uint32_t t)
{
	switch (t) {
	case DEC_T_Q8_0: return KI_mmq_q8_0;
	case DEC_T_Q4_0: return KI_mmq_q4_0;
	case DEC_T_Q5_0: return KI_mmq_q5_0;
	case DEC_T_Q4_1: return KI_mmq_q4_1;
	case DEC_T_Q5_1: return KI_mmq_q5_1;
	case DEC_T_IQ4_NL: return KI_mmq_iq4_nl;
	case DEC_T_Q2_K: return KI_mmq_q2_k;
	case DEC_T_Q3_K: return KI_mmq_q3_k;
	case DEC_T_Q4_K: return KI_mmq_q4_k;
	case DEC_T_Q5_K: return KI_mmq_q5_k;
	case DEC_T_Q6_K: return KI_mmq_q6_k;
	case DEC_T_IQ4_XS: return KI_mmq_iq4_xs;
	default: return KI_N;
	}
}

static void op_matmul(struct dec_be *be, int layer, int nw, const enum dec_wkind *w, float *const *out,
		      const float *in, int nb, int add)
{
	struct be_cuda *b = cuda(be);
	int have = -1; /* the encoding act_* holds for this input */

	if (nb <= 0)
		return;
	for (int k = 0; k < nw; k++) {
		const struct dmat *d = dec_cu_dmat(b, layer, w[k]);
		enum dec_cu_act a = act_of(d->type);
		int nt, rows = d->rows, cols = d->cols;
		enum kid kk = mmv_kernel(d->type, nb, &nt);
		CUdeviceptr pw = d->p, po = (CUdeviceptr)(uintptr_t)out[k];
		CUdeviceptr aq = a == DEC_CU_ACT_F32 ? (CUdeviceptr)(uintptr_t)in : b->act_q;
		CUdeviceptr ad = a >= DEC_CU_ACT_Q8_0 ? b->act_d : 0, as = a == DEC_CU_ACT_Q8_1 ? b->act_s : 0;
		void *p[] = { &pw, &aq, &ad, &as, &po, &rows, &cols, &nb, &add };

		if ((int)a != have)
			quantize(b, a, in, cols, nb, layer);
		have = (int)a;
		/* rows a block: a warp each, two for the F32/F16 kernels (a half warp a row) */
		int rpb = DEC_CU_THREADS / 32 * (d->type == DEC_T_F32 || d->type == DEC_T_F16 ? 2 : 1);
		enum kid mq = b->mmq_on && nb >= DEC_CU_MMQ_MIN ? mmq_kernel(d->type) : KI_N;

		if (mq != KI_N) /* tensor cores: 64 rows x 64 tokens a block, the same bits */
			launch(b, mq, layer, (unsigned)((rows + 63) / 64), (unsigned)((nb + 63) / 64), 1, DEC_CU_THREADS, p);
		else
			launch(b, kk, layer, (unsigned)((rows + rpb - 1) / rpb), (unsigned)((nb + nt - 1) / nt), 1,
			       DEC_CU_THREADS, p);
	}
}

static void op_qkv_post(struct dec_be *be, int layer, float *q, float *k, float *v)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr pq = (CUdeviceptr)(uintptr_t)q, pk = (CUdeviceptr)(uintptr_t)k, pv = (CUdeviceptr)(uintptr_t)v;
	void *p[] = { &b->dcfg, &layer, &pq, &pk, &pv };

	launch(b, KI_k_qkv_post, layer, (unsigned)b->nb, 1, 1, 128, p);
}

static void op_attention(struct dec_be *be, int layer, const float *q, float *out)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr pq = (CUdeviceptr)(uintptr_t)q, po = (CUdeviceptr)(uintptr_t)out;
	void *p1[] = { &b->dcfg, &layer, &pq }, *p2[] = { &b->dcfg, &po };
	unsigned nh = (unsigned)be->m->cfg.n_heads, g = (unsigned)(be->m->cfg.n_heads / be->m->cfg.n_kv_heads);
	unsigned ng = (g + (unsigned)b->cfg->att_heads - 1) / (unsigned)b->cfg->att_heads;

	/* a block per (kv head's group of att_heads query heads, token or
	 * prefill tile, split) */
	if (b->n_tiles)
		launch_sm(b, KI_k_att_tile, layer, (unsigned)be->m->cfg.n_kv_heads * ng, (unsigned)b->n_tiles,
			  (unsigned)b->cfg->att_max_splits, 128, b->att_smem, p1);
	else
		launch(b, KI_k_attention, layer, (unsigned)be->m->cfg.n_kv_heads * ng, (unsigned)b->nb,
		       (unsigned)b->cfg->att_max_splits, 128, p1);
	launch(b, KI_k_att_combine, layer, nh, (unsigned)b->nb, 1, 128, p2);
}

static void op_add(struct dec_be *be, float *x, const float *y, size_t n)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr px = (CUdeviceptr)(uintptr_t)x, py = (CUdeviceptr)(uintptr_t)y;
	int64_t nn = (int64_t)n;
	void *p[] = { &px, &py, &nn };

	if (n)
		launch(b, KI_k_add, -1, ((uint64_t)n + 255) / 256, 1, 1, 256, p);
}

static void op_silu_mul(struct dec_be *be, float *g, const float *u, int nb)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr pg = (CUdeviceptr)(uintptr_t)g, pu = (CUdeviceptr)(uintptr_t)u;
	int hidden = be->m->cfg.hidden_dim;
	int64_t n = (int64_t)nb * hidden;
	void *p[] = { &pg, &pu, &n, &hidden };

	if (n)
		launch(b, KI_k_silu_mul, -1, ((uint64_t)n + 255) / 256, 1, 1, 256, p);
}

static void op_gather(struct dec_be *be, float *dst, const float *src, int width)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr pd = (CUdeviceptr)(uintptr_t)dst, ps = (CUdeviceptr)(uintptr_t)src;
	void *p[] = { &b->dcfg, &pd, &ps, &width };

	if (b->n_out)
		launch(b, KI_k_gather, -1, (unsigned)b->n_out, 1, 1, 256, p);
}

/* ---- step, copies, scratch ---------------------------------------------- */

/* The step buffers' layout in device memory (and in b->stage): tok, pos,
 * seq, att_tile [max_tokens] each, out [max_out], btab [max_seqs,
 * max_blocks]. A step with a run of consecutive positions of one sequence
 * (a prefill chunk) gets attention tiles: the step's tokens cut into runs
 * of up to att_tq, each a k_att_tile block; other steps (decode) none. */
static enum cr_status op_set_step(struct dec_be *be, const struct dec_step *st, struct cr_err *err)
{
	struct be_cuda *b = cuda(be);
	const struct dec_be_cfg *cfg = &be->cfg;
	const struct cr_cu *cu = b->cu;
	int bs = cfg->block_size, mb = dec_be_max_blocks(cfg), mt = cfg->max_tokens;
	int32_t *tok = b->stage, *pos = tok + mt, *seq = pos + mt, *tile = seq + mt, *out = tile + mt;
	int32_t *bt = out + cfg->max_out;
	int n_tiles = 0, tiled = 0, tq = b->cfg->att_tq;
	size_t n;
	CUresult r;

	if (b->err_st)
		return sticky(b, err);
	if (b->capturing)
		return cr_errf(err, CR_EINTERNAL, "cuda backend: set_step while a step is being captured");
	if (st->nb < 1 || st->nb > mt || st->n_seq < 1 || st->n_seq > cfg->max_seqs || st->n_out < 0 ||
	    st->n_out > cfg->max_out)
		return cr_errf(err, CR_EINTERNAL,
			       "cuda backend: step of %d tokens, %d sequences, %d outputs (at most %d, %d, %d)",
			       st->nb, st->n_seq, st->n_out, mt, cfg->max_seqs, cfg->max_out);
	memcpy(bt, st->btab, (size_t)st->n_seq * mb * sizeof *bt);
	for (int i = 0; i < st->nb; i++) {
		int p = st->pos[i], s = st->seq[i];

		if (st->tok[i] < 0 || st->tok[i] >= be->m->cfg.n_vocab)
			return cr_errf(err, CR_EINPUT, "token id %d out of range [0, %d)", st->tok[i],
				       be->m->cfg.n_vocab);
		if (p < 0 || p >= cfg->max_ctx || s < 0 || s >= st->n_seq)
			return cr_errf(err, CR_EINTERNAL, "cuda backend: token %d at sequence %d position %d", i,
				       s, p);
		for (int j = 0; j <= p / bs; j++) {
			int blk = bt[(size_t)s * mb + j];

			if (blk < 0 || blk >= cfg->n_blocks)
				return cr_errf(err, CR_EINTERNAL,
					       "cuda backend: sequence %d has no block for positions %d..%d", s,
					       j * bs, j * bs + bs - 1);
		}
		tok[i] = st->tok[i];
		pos[i] = p;
		seq[i] = s;
	}
	for (int i = 0; tq && i < st->nb;) {
		int n = 1;

		while (i + n < st->nb && n < tq && seq[i + n] == seq[i] && pos[i + n] == pos[i] + n)
			n++;
		tile[n_tiles++] = i << 8 | n;
		tiled |= n > 1;
		i += n;
	}
	for (int i = 0; i < st->n_out; i++) {
		if (st->out[i] < 0 || st->out[i] >= st->nb || (i && st->out[i] <= st->out[i - 1]))
			return cr_errf(err, CR_EINTERNAL, "cuda backend: output row %d is token %d", i, st->out[i]);
		out[i] = st->out[i];
	}
	if ((r = cu->CtxSetCurrent(b->ctx)) != CUDA_SUCCESS) {
		fail(b, r, "cuCtxSetCurrent");
		return sticky(b, err);
	}
	/* from pageable memory: the call returns once it has read the source,
	 * and the copy is ordered before the step's kernels */
	n = (size_t)(4 * mt + cfg->max_out + st->n_seq * mb) * sizeof(int32_t);
	if ((r = cu->MemcpyHtoDAsync(b->step, b->stage, n, b->st)) != CUDA_SUCCESS) {
		fail(b, r, "uploading the step");
		return sticky(b, err);
	}
	b->nb = st->nb;
	b->n_out = st->n_out;
	b->n_seq = st->n_seq;
	b->n_tiles = tiled ? n_tiles : 0;
	b->steps++;
	return CR_OK;
}

static enum cr_status op_download(struct dec_be *be, float *host, const float *src, size_t n,
				  struct cr_err *err)
{
	struct be_cuda *b = cuda(be);
	const struct cr_cu *cu = b->cu;
	CUresult r;

	if (b->capturing)
		return cr_errf(err, CR_EINTERNAL, "cuda backend: download while a step is being captured");
	if (!b->err_st && (r = cu->CtxSetCurrent(b->ctx)) != CUDA_SUCCESS)
		fail(b, r, "cuCtxSetCurrent");
	if (!b->err_st && n &&
	    (r = cu->MemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)src, n * sizeof(float), b->st)) != CUDA_SUCCESS)
		fail(b, r, "copying results to the host");
	if (!b->err_st && (r = cu->StreamSynchronize(b->st)) != CUDA_SUCCESS)
		fail(b, r, "waiting for the step");
	return sticky(b, err);
}

/* k_sample, a block per draw (decode/cuda/dec_cu_sample.cuh): the draws go
 * up, the ids, counts, token logprobs and top logprobs come down; the
 * logits stay. */
static enum cr_status op_sample(struct dec_be *be, const float *logits, int width, struct dec_draw *d, int n,
				struct cr_err *err)
{
	struct be_cuda *b = cuda(be);
	const struct cr_cu *cu = b->cu;
	CUdeviceptr pl = (CUdeviceptr)(uintptr_t)logits, ids = 0, lps = 0;
	int kmax = 0, threads = DEC_CU_SAMPLE_THREADS;
	void *p[] = { &pl, &width, &b->smp_draws, &b->smp_res, &ids, &lps, &kmax };
	CUresult r;
	enum cr_status st;

	if ((st = dec_be_check_draws(be, d, n, width, err)))
		return st;
	if (b->capturing)
		return cr_errf(err, CR_EINTERNAL, "cuda backend: sample while a step is being captured");
	for (int i = 0; i < n; i++) {
		struct dec_cu_draw *c = &b->smp_stage[i];
		const struct dec_sampling *sp = &d[i].samp;

		c->row = d[i].row;
		c->top_k = sp->top_k;
		c->n_logprobs = d[i].n_logprobs < width ? d[i].n_logprobs : width;
		memcpy(&c->temp_bits, &sp->temperature, 4);
		memcpy(&c->top_p_bits, &sp->top_p, 4);
		memcpy(&c->min_p_bits, &sp->min_p, 4);
		c->u53 = d[i].u53;
		c->want_lp = d[i].want_lp != 0;
		c->pad = 0;
		kmax = c->n_logprobs > kmax ? c->n_logprobs : kmax;
	}
	if (!b->err_st && (r = cu->CtxSetCurrent(b->ctx)) != CUDA_SUCCESS)
		fail(b, r, "cuCtxSetCurrent");
	if (!b->err_st && (size_t)n * kmax * 8 > b->smp_top_cap) {
		size_t want = (size_t)DEC_BE_MAX_DRAWS * kmax * 8;

		if (b->smp_top)
			cu->MemFree(b->smp_top);
		b->smp_top = 0;
		b->smp_top_cap = 0;
		if ((r = cu->MemAlloc(&b->smp_top, want)) != CUDA_SUCCESS)
			fail(b, r, "allocating the top logprobs");
		else
			b->smp_top_cap = want;
	}
	ids = b->smp_top;
	lps = b->smp_top + (size_t)n * kmax * 4;
	if (!b->err_st && (r = cu->MemcpyHtoDAsync(b->smp_draws, b->smp_stage, (size_t)n * sizeof *b->smp_stage,
						   b->st)) != CUDA_SUCCESS)
		fail(b, r, "uploading the draws");
	launch(b, KI_k_sample, -1, (unsigned)n, 1, 1, (unsigned)threads, p);
	if (!b->err_st && (r = cu->MemcpyDtoHAsync(b->smp_out, b->smp_res, (size_t)n * DEC_CU_SAMPLE_RES * 4,
						   b->st)) != CUDA_SUCCESS)
		fail(b, r, "copying the draws' tokens to the host");
	for (int i = 0; i < n && kmax && !b->err_st; i++) {
		size_t k = (size_t)b->smp_stage[i].n_logprobs;

		if (k && ((r = cu->MemcpyDtoHAsync(d[i].top_ids, ids + (size_t)i * kmax * 4, k * 4, b->st)) ||
			  (r = cu->MemcpyDtoHAsync(d[i].top_lp, lps + (size_t)i * kmax * 4, k * 4, b->st))))
			fail(b, r, "copying the top logprobs to the host");
	}
	if (!b->err_st && (r = cu->StreamSynchronize(b->st)) != CUDA_SUCCESS)
		fail(b, r, "waiting for the draws");
	if (b->err_st)
		return sticky(b, err);
	for (int i = 0; i < n; i++) {
		const int32_t *o = b->smp_out + (size_t)DEC_CU_SAMPLE_RES * i;

		d[i].id = o[0];
		d[i].n_kept = o[1];
		memcpy(&d[i].lp, &o[2], 4);
		if (d[i].id < 0 || d[i].id >= width)
			return cr_errf(err, CR_EINTERNAL, "cuda backend: k_sample drew token %d of %d", d[i].id, width);
		/* past the vocabulary: as dec_top_logprobs leaves them */
		for (int j = b->smp_stage[i].n_logprobs; j < d[i].n_logprobs; j++) {
			d[i].top_ids[j] = -1;
			d[i].top_lp[j] = -INFINITY;
		}
	}
	return CR_OK;
}

static enum cr_status op_kv_copy(struct dec_be *be, int src, int dst, struct cr_err *err)
{
	struct be_cuda *b = cuda(be);
	void *p[] = { &b->dcfg, &src, &dst };
	CUresult r;

	if (src < 0 || dst < 0 || src >= be->cfg.n_blocks || dst >= be->cfg.n_blocks)
		return cr_errf(err, CR_EINTERNAL, "cuda backend: copy of block %d to %d", src, dst);
	if (b->capturing)
		return cr_errf(err, CR_EINTERNAL, "cuda backend: kv_copy while a step is being captured");
	/* the engine may call from another thread than the last step's */
	if (!b->err_st && (r = b->cu->CtxSetCurrent(b->ctx)) != CUDA_SUCCESS)
		fail(b, r, "cuCtxSetCurrent");
	launch(b, KI_k_kv_copy, -1, (unsigned)be->m->cfg.n_layers, 2, 1, 256, p);
	return sticky(b, err);
}

static float *op_scratch(struct dec_be *be, size_t n)
{
	struct be_cuda *b = cuda(be);
	CUdeviceptr p;

	if (b->n_scr == b->cap_scr) {
		int cap = b->cap_scr ? 2 * b->cap_scr : 16;
		CUdeviceptr *x = realloc(b->scr, (size_t)cap * sizeof *x);

		if (!x)
			return NULL;
		b->scr = x;
		b->cap_scr = cap;
	}
	if (b->cu->CtxSetCurrent(b->ctx) != CUDA_SUCCESS || b->cu->MemAlloc(&p, n ? n * sizeof(float) : 4))
		return NULL;
	b->scr[b->n_scr++] = p;
	return (float *)(uintptr_t)p;
}

/* ---- graphs --------------------------------------------------------------- */

static struct graph *graph_find(struct be_cuda *b, int create)
{
	struct graph *free_g = NULL, *lru = NULL;

	for (int i = 0; i < MAX_GRAPHS; i++) {
		struct graph *g = &b->g[i];

		if (g->seen && g->nb == b->nb && g->n_out == b->n_out && g->n_seq == b->n_seq && g->n_tiles == b->n_tiles)
			return g;
		if (!g->seen && !free_g)
			free_g = g;
		if (g->seen && (!lru || g->used < lru->used))
			lru = g;
	}
	if (!create)
		return NULL;
	if (!free_g) {
		free_g = lru;
		if (lru->exec)
			b->cu->GraphExecDestroy(lru->exec);
	}
	memset(free_g, 0, sizeof *free_g);
	free_g->nb = b->nb;
	free_g->n_out = b->n_out;
	free_g->n_seq = b->n_seq;
	free_g->n_tiles = b->n_tiles;
	return free_g;
}

static int op_graph_begin(struct dec_be *be)
{
	struct be_cuda *b = cuda(be);
	struct graph *g;
	CUresult r;

	if (!b->graphs_on || b->err_st)
		return 0;
	g = graph_find(b, 1);
	g->seen++;
	g->used = b->steps;
	if (g->exec) {
		if ((r = b->cu->GraphLaunch(g->exec, b->st)) != CUDA_SUCCESS)
			fail(b, r, "replaying a step graph");
		return 1; /* download reports a failure */
	}
	if (g->seen < 2)
		return 0;
	if ((r = b->cu->StreamBeginCapture(b->st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) != CUDA_SUCCESS) {
		fail(b, r, "beginning a step capture");
		return 0;
	}
	b->capturing = 1;
	b->cap_g = g;
	return 0;
}

static enum cr_status op_graph_end(struct dec_be *be, struct cr_err *err)
{
	struct be_cuda *b = cuda(be);
	const struct cr_cu *cu = b->cu;
	CUgraph gr = NULL;
	CUresult r;

	if (!b->capturing)
		return sticky(b, err);
	b->capturing = 0;
	r = cu->StreamEndCapture(b->st, &gr);
	if (r != CUDA_SUCCESS)
		fail(b, r, "ending a step capture");
	else if (!b->err_st && (r = cu->GraphInstantiateWithFlags(&b->cap_g->exec, gr, 0)) != CUDA_SUCCESS)
		fail(b, r, "instantiating a step graph");
	if (gr)
		cu->GraphDestroy(gr);
	/* the captured ops have not run: run them now */
	if (!b->err_st && (r = cu->GraphLaunch(b->cap_g->exec, b->st)) != CUDA_SUCCESS)
		fail(b, r, "launching a step graph");
	if (b->err_st && b->cap_g->exec) {
		cu->GraphExecDestroy(b->cap_g->exec);
		b->cap_g->exec = NULL;
	}
	return sticky(b, err);
}

/* ---- open / free ---------------------------------------------------------- */

const struct dec_be_ops dec_cu_ops = {
	.name = "cuda",
	.free = dec_cu_free,
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
	.download = op_download,
	.sample = op_sample,
	.kv_copy = op_kv_copy,
	.graph_begin = op_graph_begin,
	.graph_end = op_graph_end,
};

