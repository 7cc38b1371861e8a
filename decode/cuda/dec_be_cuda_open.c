/* dec_be_cuda_open.c — opening the CUDA backend (see dec_be_cuda.c): the
 * checks of the model against what the kernels do, the device and its
 * primary context, the kernels' image (the cubin of the device's family or
 * the PTX), the device memory (checked against what is free, then three
 * blocks: weights, KV pools, work area), the uploads (weights in the
 * file's layout, the device config, the RoPE table), and freeing it all. */
#include "decode/cuda/dec_cu_host.h"
#include "decode/be/dec_ref.h"
#include "decode/quant/dec_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the kernel images (dec_cu_images.S, generated at build time) */
extern const unsigned char dec_cu_img_sm_80[], dec_cu_img_sm_90[], dec_cu_img_ptx[];

/* ---- weights ------------------------------------------------------------ */

static const char *wname(int layer, enum dec_wkind k, char *buf, size_t cap)
{
	static const char *const names[DEC_W_N] = {
		[DEC_W_ATTN_NORM] = "attn_norm", [DEC_W_Q] = "attn_q", [DEC_W_K] = "attn_k",
		[DEC_W_V] = "attn_v", [DEC_W_O] = "attn_output", [DEC_W_FFN_NORM] = "ffn_norm",
		[DEC_W_GATE] = "ffn_gate", [DEC_W_UP] = "ffn_up", [DEC_W_DOWN] = "ffn_down",
		[DEC_W_TOK_EMBD] = "token_embd", [DEC_W_OUT_NORM] = "output_norm", [DEC_W_OUTPUT] = "output",
	};

	if (layer >= 0)
		snprintf(buf, cap, "blk.%d.%s.weight", layer, names[k]);
	else
		snprintf(buf, cap, "%s.weight", names[k]);
	return buf;
}

/* The kernels read every type the CPU path reads; rows are cut into slices
 * of 8 values (32 and 256 for the block types, which their block size
 * guarantees). */
static enum cr_status check_mat(const struct dec_mat *w, int layer, enum dec_wkind k, struct cr_err *err)
{
	char nm[64];

	if (dec_cu_mmv_index(w->type) < 0)
		return cr_errf(err, CR_EENV, "cuda backend: %s has type %s, which has no CUDA kernel",
			       wname(layer, k, nm, sizeof nm), dec_type_name(w->type));
	if (w->rows > INT32_MAX || w->cols > INT32_MAX || w->rows * w->cols > ((int64_t)1 << 40))
		return cr_errf(err, CR_EENV, "cuda backend: %s is %lld x %lld: too large for the CUDA kernels",
			       wname(layer, k, nm, sizeof nm), (long long)w->rows, (long long)w->cols);
	return CR_OK;
}

static size_t up256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

/* What the weights need: every matrix (the output shares a tied
 * embedding's copy) and the f32 vectors, each rounded to 256 bytes. */
static size_t weight_bytes(const struct dec_model *m)
{
	const struct dec_config *c = &m->cfg;
	size_t n = up256(m->w.tok_embd.rows * m->w.tok_embd.row_bytes) + up256((size_t)c->dim * 4);

	if (m->w.output.data != m->w.tok_embd.data)
		n += up256(m->w.output.rows * m->w.output.row_bytes);
	for (int L = 0; L < c->n_layers; L++) {
		static const enum dec_wkind ks[] = { DEC_W_Q, DEC_W_K, DEC_W_V, DEC_W_O, DEC_W_GATE, DEC_W_UP, DEC_W_DOWN };

		for (int i = 0; i < 7; i++) {
			const struct dec_mat *w = dec_wmat(m, L, ks[i]);
			n += up256(w->rows * w->row_bytes);
		}
		n += 2 * up256((size_t)c->dim * 4) + 3 * up256((size_t)c->n_heads * c->head_dim * 4) +
		     2 * up256((size_t)c->head_dim * 4);
	}
	return n;
}

static enum cr_status put(struct be_cuda *b, CUdeviceptr *at, const void *src, size_t n, CUdeviceptr *dst,
			  struct cr_err *err)
{
	const struct cr_cu *cu = b->cu;
	enum cr_status st = CR_OK;

	*dst = *at;
	CU_CHECK(cu->MemcpyHtoD(*at, src, n));
	*at += up256(n);
out:
	return st;
}

static enum cr_status upload_mat(struct be_cuda *b, CUdeviceptr *at, const struct dec_mat *w,
				 struct dmat *d, struct cr_err *err)
{
	d->type = w->type;
	d->rows = (int)w->rows;
	d->cols = (int)w->cols;
	return put(b, at, w->data, w->rows * w->row_bytes, &d->p, err);
}

static enum cr_status upload_weights(struct be_cuda *b, struct cr_err *err)
{
	const struct dec_model *m = b->base.m;
	const struct dec_config *c = &m->cfg;
	static const enum dec_wkind ks[] = { DEC_W_Q, DEC_W_K, DEC_W_V, DEC_W_O, DEC_W_GATE, DEC_W_UP, DEC_W_DOWN };
	CUdeviceptr at = b->wmem;
	size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
	enum cr_status st;

	for (int L = 0; L < c->n_layers; L++) {
		const struct dec_layer *l = &m->w.layers[L];
		struct dec_cu_layer *dl = &b->cfg->layer[L];

		for (int i = 0; i < 7; i++)
			if ((st = upload_mat(b, &at, dec_wmat(m, L, ks[i]), &b->mats[L * 7 + i], err)))
				return st;
		if ((st = put(b, &at, l->attn_norm, (size_t)c->dim * 4, &b->vecs[2 * L], err)) ||
		    (st = put(b, &at, l->ffn_norm, (size_t)c->dim * 4, &b->vecs[2 * L + 1], err)))
			return st;
		dl->attn_norm = b->vecs[2 * L];
		dl->ffn_norm = b->vecs[2 * L + 1];
		if ((l->bq && (st = put(b, &at, l->bq, qd * 4, &dl->bq, err))) ||
		    (l->bk && (st = put(b, &at, l->bk, kvd * 4, &dl->bk, err))) ||
		    (l->bv && (st = put(b, &at, l->bv, kvd * 4, &dl->bv, err))) ||
		    (l->q_norm && (st = put(b, &at, l->q_norm, (size_t)c->head_dim * 4, &dl->q_norm, err))) ||
		    (l->k_norm && (st = put(b, &at, l->k_norm, (size_t)c->head_dim * 4, &dl->k_norm, err))))
			return st;
	}
	if ((st = upload_mat(b, &at, &m->w.tok_embd, &b->mats[c->n_layers * 7], err)))
		return st;
	if (m->w.output.data == m->w.tok_embd.data)
		b->mats[c->n_layers * 7 + 1] = b->mats[c->n_layers * 7];
	else if ((st = upload_mat(b, &at, &m->w.output, &b->mats[c->n_layers * 7 + 1], err)))
		return st;
	if ((st = put(b, &at, m->w.out_norm, (size_t)c->dim * 4, &b->vecs[2 * c->n_layers], err)))
		return st;
	b->cfg->emb = b->mats[c->n_layers * 7].p;
	b->cfg->emb_type = (int32_t)m->w.tok_embd.type;
	b->cfg->emb_row_bytes = (int64_t)m->w.tok_embd.row_bytes;
	b->cfg->out_norm = b->vecs[2 * c->n_layers];
	return CR_OK;
}

/* ---- the kernels' image ------------------------------------------------- */

/* The cubin built for the device's architecture family (SASS of sm_XY runs
 * on X.Y' with Y' >= Y), else the PTX for the driver to compile;
 * CRUCIBLE_CUDA_IMAGE=ptx|sm_80|sm_90 forces one. */
static enum cr_status load_module(struct be_cuda *b, const struct cr_cuda_device *d, struct cr_err *err)
{
	const struct cr_cu *cu = b->cu;
	const char *force = getenv("CRUCIBLE_CUDA_IMAGE"), *which;
	const void *img;
	char log[2048] = "";
	CUjit_option opts[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[2] = { log, (void *)(uintptr_t)sizeof log };
	CUresult r;

	if (force && *force)
		which = force;
	else if (d->cc_major == 9 && d->cc_minor >= 0)
		which = "sm_90";
	else if (d->cc_major == 8)
		which = "sm_80";
	else if (d->cc_major > 9)
		which = "ptx";
	else
		return cr_errf(err, CR_EENV, "cuda backend: %s is compute capability %d.%d; the decoder's "
			       "kernels need 8.0 or newer", d->name, d->cc_major, d->cc_minor);
	if (!strcmp(which, "sm_90"))
		img = dec_cu_img_sm_90;
	else if (!strcmp(which, "sm_80"))
		img = dec_cu_img_sm_80;
	else if (!strcmp(which, "ptx"))
		img = dec_cu_img_ptx;
	else
		return cr_errf(err, CR_EUSAGE, "CRUCIBLE_CUDA_IMAGE=%s: expected ptx, sm_80 or sm_90", which);
	r = cu->ModuleLoadDataEx(&b->mod, img, 2, opts, vals);
	if (r != CUDA_SUCCESS) {
		char buf[32];
		return cr_errf(err, CR_EENV, "cuda backend: loading the kernels (%s) on %s (sm_%d%d): %s%s%s", which,
			       d->name, d->cc_major, d->cc_minor, cr_cu_result_name((int)r, buf, sizeof buf),
			       *log ? ": " : "", log);
	}
	for (int k = 0; k < KI_N; k++) {
		r = cu->ModuleGetFunction(&b->fn[k], b->mod, dec_cu_kname[k]);
		if (r != CUDA_SUCCESS) {
			char buf[32];
			return cr_errf(err, CR_EENV, "cuda backend: the kernels image (%s) lacks %s: %s", which,
				       dec_cu_kname[k], cr_cu_result_name((int)r, buf, sizeof buf));
		}
	}
	return CR_OK;
}

void dec_cu_free(struct dec_be *be)
{
	struct be_cuda *b = (struct be_cuda *)be;
	const struct cr_cu *cu = b->cu;

	if (cu && b->retained) {
		cu->CtxSetCurrent(b->ctx);
		if (b->capturing) {
			CUgraph g = NULL;
			if (cu->StreamEndCapture(b->st, &g) == CUDA_SUCCESS && g)
				cu->GraphDestroy(g);
		}
		if (b->st)
			cu->StreamSynchronize(b->st);
		for (int i = 0; i < MAX_GRAPHS; i++)
			if (b->g[i].exec)
				cu->GraphExecDestroy(b->g[i].exec);
		for (int i = 0; i < b->n_scr; i++)
			cu->MemFree(b->scr[i]);
		if (b->work)
			cu->MemFree(b->work);
		if (b->smp_top)
			cu->MemFree(b->smp_top);
		if (b->kvmem)
			cu->MemFree(b->kvmem);
		if (b->wmem)
			cu->MemFree(b->wmem);
		if (b->mod)
			cu->ModuleUnload(b->mod);
		if (b->st)
			cu->StreamDestroy(b->st);
		cu->DevicePrimaryCtxRelease(b->dev);
	}
	free(b->scr);
	free(b->cfg);
	free(b->mats);
	free(b->vecs);
	free(b->stage);
	free(b);
}

static int env_on(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? strcmp(v, "0") != 0 : dflt;
}

/* Positions per attention split. A context of one split gets the CPU's
 * bits (dec_cu_attn.cuh), so the split is long: 512 positions, doubled up
 * to 2048 while a max_ctx context would need more than 16 splits; longer
 * contexts are merged from their splits, each a block of the GPU working
 * in parallel. It depends on max_ctx only, so a token's arithmetic does
 * not depend on the step. CRUCIBLE_CUDA_ATT_SPLIT (a power of two from 32
 * to DEC_CU_ATT_MAX_SPLIT) sets it: the tests use 32 to merge splits on
 * tiny models; a value >= the context makes attention the CPU's, bit for
 * bit, at the cost of one block per (token, head). 0 when the value is bad. */
static int att_split(int max_ctx)
{
	const char *v = getenv("CRUCIBLE_CUDA_ATT_SPLIT");
	int s = 512;

	if (v && *v) {
		s = atoi(v);
		return s >= 32 && s <= DEC_CU_ATT_MAX_SPLIT && !(s & (s - 1)) ? s : 0;
	}
	while (s < 2048 && (max_ctx + s - 1) / s > 16)
		s *= 2;
	return s;
}

/* Prefill attention tiles (k_att_tile): a block takes up to
 * DEC_CU_ATT_TILE consecutive tokens of a sequence, as many as the device's
 * shared memory (its opt-in limit per block) holds the scores of: att_heads
 * rows of min(att_split, max_ctx) floats and the queries, per token.
 * CRUCIBLE_CUDA_ATT_TILE=N caps the tokens (0: no tiles, every token takes
 * k_attention's block of its own); fewer than 2 is no tiles. */
static enum cr_status setup_tiles(struct be_cuda *b, struct cr_err *err)
{
	struct dec_cu_cfg *h = b->cfg;
	const char *v = getenv("CRUCIBLE_CUDA_ATT_TILE");
	int cap = DEC_CU_ATT_TILE, optin = 0, rows = h->att_split < h->max_ctx ? h->att_split : h->max_ctx;
	size_t per = (size_t)4 * h->att_heads * (size_t)(h->head_dim + rows), tq;
	char buf[32];
	CUresult r;

	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);

		if (*end || n < 0 || n > DEC_CU_ATT_TILE)
			return cr_errf(err, CR_EUSAGE, "CRUCIBLE_CUDA_ATT_TILE=%s: expected a whole number from 0 to %d",
				       v, DEC_CU_ATT_TILE);
		cap = (int)n;
	}
	r = b->cu->DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, b->dev);
	if (r != CUDA_SUCCESS)
		return cr_errf(err, CR_EENV, "cuda backend: cuDeviceGetAttribute (shared memory per block): %s",
			       cr_cu_result_name((int)r, buf, sizeof buf));
	tq = optin > 0 ? (size_t)optin / per : 0;
	tq = tq < (size_t)cap ? tq : (size_t)cap;
	h->att_tq = tq >= 2 ? (int32_t)tq : 0;
	b->att_smem = (unsigned)(h->att_tq * per);
	if (h->att_tq && (r = b->cu->FuncSetAttribute(b->fn[KI_k_att_tile],
						      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
						      (int)b->att_smem)) != CUDA_SUCCESS)
		return cr_errf(err, CR_EENV, "cuda backend: allowing k_att_tile %u bytes of shared memory: %s",
			       b->att_smem, cr_cu_result_name((int)r, buf, sizeof buf));
	return CR_OK;
}

static enum cr_status check_model(const struct dec_model *m, struct cr_err *err)
{
	const struct dec_config *c = &m->cfg;
	static const enum dec_wkind ks[] = { DEC_W_Q, DEC_W_K, DEC_W_V, DEC_W_O, DEC_W_GATE, DEC_W_UP, DEC_W_DOWN };
	enum cr_status st;

	if (c->n_expert > 0)
		return cr_errf(err, CR_EENV, "cuda backend: %s: mixture-of-experts layers (%d experts) have no CUDA "
			       "kernels yet", c->arch_name, c->n_expert);
	if (c->n_swa || c->embd_scale > 0 || c->ffn_gelu || (c->n_layers && m->w.layers[0].attn_post_norm))
		return cr_errf(err, CR_EENV, "cuda backend: %s: sliding-window layers, scaled embeddings, GELU and "
			       "post-norms (gemma3) have no CUDA kernels yet", c->arch_name);
	if (c->n_layers > DEC_CU_MAX_LAYERS || c->head_dim > DEC_CU_MAX_HEAD_DIM || c->head_dim % 8 ||
	    c->n_heads % c->n_kv_heads)
		return cr_errf(err, CR_EENV, "cuda backend: %d layers, head dim %d: the CUDA kernels take at "
			       "most %d layers and a head dim of a multiple of 8 up to %d", c->n_layers, c->head_dim,
			       DEC_CU_MAX_LAYERS, DEC_CU_MAX_HEAD_DIM);
	for (int L = 0; L < c->n_layers; L++)
		for (int i = 0; i < 7; i++)
			if ((st = check_mat(dec_wmat(m, L, ks[i]), L, ks[i], err)))
				return st;
	if ((st = check_mat(&m->w.tok_embd, -1, DEC_W_TOK_EMBD, err)) ||
	    (st = check_mat(&m->w.output, -1, DEC_W_OUTPUT, err)))
		return st;
	return CR_OK;
}

/* The work area: the device config, the step buffers, the encoded
 * activations, the attention partials, the RoPE table, the sampler's draws
 * and results. */
static size_t work_bytes(const struct dec_model *m, const struct dec_be_cfg *cfg, int max_splits, size_t *act_cols)
{
	const struct dec_config *c = &m->cfg;
	size_t mt = (size_t)cfg->max_tokens, cols = (size_t)c->dim, qd = (size_t)c->n_heads * c->head_dim;

	cols = cols > qd ? cols : qd;
	cols = cols > (size_t)c->hidden_dim ? cols : (size_t)c->hidden_dim;
	*act_cols = cols;
	return up256(sizeof(struct dec_cu_cfg)) +
	       up256((4 * mt + (size_t)cfg->max_out + (size_t)cfg->max_seqs * dec_be_max_blocks(cfg)) * 4) +
	       up256(mt * cols * 4) + 2 * up256(mt * cols / 32 * 4) +
	       up256(mt * qd / c->head_dim * max_splits * (c->head_dim + 2) * 4) +
	       up256((size_t)cfg->max_ctx * c->rope_dim * 4) +
	       up256(DEC_BE_MAX_DRAWS * sizeof(struct dec_cu_draw)) + up256(DEC_BE_MAX_DRAWS * DEC_CU_SAMPLE_RES * 4);
}

static enum cr_status setup_work(struct be_cuda *b, size_t act_cols, struct cr_err *err)
{
	const struct dec_model *m = b->base.m;
	const struct dec_config *c = &m->cfg;
	const struct dec_be_cfg *cfg = &b->base.cfg;
	const struct cr_cu *cu = b->cu;
	struct dec_cu_cfg *h = b->cfg;
	size_t mt = (size_t)cfg->max_tokens, kvl = (size_t)cfg->n_blocks * cfg->block_size * h->kv_dim;
	CUdeviceptr at = b->work;
	float *rope = NULL;
	enum cr_status st = CR_OK;

	b->dcfg = at;
	at += up256(sizeof *h);
	b->step = at;
	h->tok = at;
	h->pos = at + mt * 4;
	h->seq = at + 2 * mt * 4;
	h->att_tile = at + 3 * mt * 4;
	h->out = at + 4 * mt * 4;
	h->btab = at + (4 * mt + (size_t)cfg->max_out) * 4;
	at += up256(b->step_ints * 4);
	b->act_q = at;
	at += up256(mt * act_cols * 4);
	b->act_d = at;
	at += up256(mt * act_cols / 32 * 4);
	b->act_s = at;
	at += up256(mt * act_cols / 32 * 4);
	h->att_part = at;
	at += up256(mt * c->n_heads * h->att_max_splits * (c->head_dim + 2) * 4);
	h->rope_cs = at;
	at += up256((size_t)cfg->max_ctx * c->rope_dim * 4);
	b->smp_draws = at;
	at += up256(DEC_BE_MAX_DRAWS * sizeof(struct dec_cu_draw));
	b->smp_res = at;
	/* one rotation per position, computed by the CPU path's own function */
	if (!(rope = malloc((size_t)cfg->max_ctx * c->rope_dim * sizeof *rope)))
		return cr_errf(err, CR_ENOMEM, "cuda backend: out of memory for the RoPE table");
	for (int p = 0; p < cfg->max_ctx; p++)
		dec_rope_cs(m, p, rope + (size_t)p * c->rope_dim);
	CU_CHECK(cu->MemcpyHtoD(h->rope_cs, rope, (size_t)cfg->max_ctx * c->rope_dim * sizeof *rope));
	for (int L = 0; L < c->n_layers; L++) {
		h->layer[L].kc = b->kvmem + (size_t)L * 2 * kvl * 2;
		h->layer[L].vc = h->layer[L].kc + kvl * 2;
	}
	CU_CHECK(cu->MemsetD8(b->step, 0, b->step_ints * 4));
	CU_CHECK(cu->MemcpyHtoD(b->dcfg, h, sizeof *h));
out:
	free(rope);
	return st;
}

static enum cr_status open_device(struct be_cuda *b, struct cr_cuda_device *d, struct cr_err *err)
{
	const struct cr_cu *cu = b->cu;
	enum cr_status st = CR_OK;

	if ((st = cr_cuda_device_info(b->base.cfg.device, d, err)))
		return st;
	CU_CHECK(cu->DeviceGet(&b->dev, b->base.cfg.device));
	CU_CHECK(cu->DevicePrimaryCtxRetain(&b->ctx, b->dev));
	b->retained = 1;
	CU_CHECK(cu->CtxSetCurrent(b->ctx));
	/* a blocking stream: it waits for the legacy stream's copies (the
	 * uploads at open, a test's cuMemcpyHtoD), which return once the host
	 * buffer is read, before their DMA has landed */
	CU_CHECK(cu->StreamCreate(&b->st, CU_STREAM_DEFAULT));
out:
	return st;
}

static enum cr_status dev_alloc(struct be_cuda *b, CUdeviceptr *p, size_t n, const char *what, size_t need,
				size_t fr, struct cr_err *err)
{
	CUresult r = b->cu->MemAlloc(p, n);
	char buf[32];

	if (r == CUDA_SUCCESS)
		return CR_OK;
	*p = 0;
	return cr_errf(err, CR_EENV, "cuda backend: allocating %.1f MiB for the %s: %s (%.1f MiB needed in all, "
		       "%.1f MiB were free)", (double)n / 1048576, what, cr_cu_result_name((int)r, buf, sizeof buf),
		       (double)need / 1048576, (double)fr / 1048576);
}

/* The device memory the backend needs, checked against what is free, then
 * allocated as three blocks (weights, KV pools, work area). */
static enum cr_status alloc_all(struct be_cuda *b, const struct cr_cuda_device *d, struct cr_err *err)
{
	const struct dec_model *m = b->base.m;
	const struct cr_cu *cu = b->cu;
	size_t wb = weight_bytes(m), kvb = (size_t)b->base.cfg.n_blocks * dec_be_block_bytes(m, b->base.cfg.block_size);
	size_t act_cols, xb = work_bytes(m, &b->base.cfg, b->cfg->att_max_splits, &act_cols), fr = 0, tot = 0;
	size_t need = wb + kvb + xb;
	enum cr_status st = CR_OK;

	CU_CHECK(cu->MemGetInfo(&fr, &tot));
	if (need > fr)
		return cr_errf(err, CR_EENV,
			       "cuda backend: %s needs %.1f MiB of device memory (weights %.1f, KV cache %.1f for %d "
			       "blocks, work %.1f) but %.1f MiB of %.1f are free", d->name, (double)need / 1048576,
			       (double)wb / 1048576, (double)kvb / 1048576, b->base.cfg.n_blocks,
			       (double)xb / 1048576, (double)fr / 1048576, (double)tot / 1048576);
	if ((st = dev_alloc(b, &b->wmem, wb, "weights", need, fr, err)) ||
	    (st = dev_alloc(b, &b->kvmem, kvb, "KV cache", need, fr, err)) ||
	    (st = dev_alloc(b, &b->work, xb, "activations", need, fr, err)))
		return st;
	CU_CHECK(cu->MemsetD8(b->kvmem, 0, kvb));
	if ((st = upload_weights(b, err)) || (st = setup_work(b, act_cols, err)))
		return st;
	CU_CHECK(cu->CtxSynchronize());
out:
	return st;
}

enum cr_status dec_be_cuda_open(const struct dec_model *m, const struct dec_be_cfg *cfg,
				struct dec_be **out, struct cr_err *err)
{
	const struct dec_config *c = &m->cfg;
	struct be_cuda *b = calloc(1, sizeof *b);
	struct cr_cuda_device d;
	char why[256];
	enum cr_status st = CR_OK;
	struct dec_cu_cfg *h;

	*out = NULL;
	if (!b)
		return cr_errf(err, CR_ENOMEM, "cuda backend: out of memory");
	b->last_kernel = -1;
	b->base.ops = &dec_cu_ops;
	b->base.m = m;
	b->base.cfg = *cfg;
	if (cfg->max_tokens < 1 || cfg->max_out < 0 || cfg->max_out > cfg->max_tokens || cfg->max_seqs < 1 ||
	    cfg->max_ctx < 1 || cfg->block_size < 1 || (cfg->block_size & (cfg->block_size - 1)) ||
	    cfg->n_blocks < 1 || cfg->max_tokens > 65535) {
		st = cr_errf(err, CR_EUSAGE,
			     "cuda backend: bad configuration (tokens %d, outputs %d, sequences %d, context %d, "
			     "block size %d, blocks %d)", cfg->max_tokens, cfg->max_out, cfg->max_seqs, cfg->max_ctx,
			     cfg->block_size, cfg->n_blocks);
		goto out;
	}
	if (!(b->cu = cr_cu_load(why, sizeof why))) {
		st = cr_errf(err, CR_EENV, "cuda backend: %s", why);
		goto out;
	}
	if ((st = check_model(m, err)))
		goto out;
	b->sync_each = env_on("CRUCIBLE_CUDA_SYNC", 0);
	b->mmq_on = env_on("CRUCIBLE_CUDA_MMQ", 1);
	b->graphs_on = env_on("CRUCIBLE_CUDA_GRAPHS", 1) && !b->sync_each;
	b->step_ints = 4 * (size_t)cfg->max_tokens + (size_t)cfg->max_out + (size_t)cfg->max_seqs * dec_be_max_blocks(cfg);
	b->cfg = h = calloc(1, sizeof *h);
	b->mats = calloc((size_t)c->n_layers * 7 + 2, sizeof *b->mats);
	b->vecs = calloc((size_t)c->n_layers * 2 + 1, sizeof *b->vecs);
	b->stage = calloc(b->step_ints, sizeof *b->stage);
	if (!h || !b->mats || !b->vecs || !b->stage) {
		st = cr_errf(err, CR_ENOMEM, "cuda backend: out of memory");
		goto out;
	}
	h->dim = c->dim;
	h->n_heads = c->n_heads;
	h->n_kv_heads = c->n_kv_heads;
	h->head_dim = c->head_dim;
	h->q_dim = c->n_heads * c->head_dim;
	h->kv_dim = c->n_kv_heads * c->head_dim;
	h->hidden = c->hidden_dim;
	h->n_vocab = c->n_vocab;
	h->rope_dim = c->rope_dim;
	h->rope_neox = c->rope_neox;
	h->block_size = cfg->block_size;
	h->max_blocks = dec_be_max_blocks(cfg);
	h->max_tokens = cfg->max_tokens;
	h->max_out = cfg->max_out;
	h->max_seqs = cfg->max_seqs;
	h->max_ctx = cfg->max_ctx;
	h->n_blocks = cfg->n_blocks;
	if (!(h->att_split = att_split(cfg->max_ctx))) {
		st = cr_errf(err, CR_EUSAGE, "CRUCIBLE_CUDA_ATT_SPLIT=%s: expected a power of two from 32 to %d",
			     getenv("CRUCIBLE_CUDA_ATT_SPLIT"), DEC_CU_ATT_MAX_SPLIT);
		goto out;
	}
	h->att_max_splits = (cfg->max_ctx + h->att_split - 1) / h->att_split;
	/* a block serves up to DEC_CU_ATT_HEADS heads of a group, their scores in
	 * DEC_CU_ATT_MAX_SPLIT floats of shared memory */
	h->att_heads = c->n_heads / c->n_kv_heads;
	h->att_heads = h->att_heads < DEC_CU_ATT_HEADS ? h->att_heads : DEC_CU_ATT_HEADS;
	while (h->att_heads > 1 && h->att_heads * h->att_split > DEC_CU_ATT_MAX_SPLIT)
		h->att_heads--;
	{
		float eps = c->eps, scale = c->att_scale > 0 ? c->att_scale : 1.0f / sqrtf((float)c->head_dim);
		memcpy(&h->eps_bits, &eps, 4);
		memcpy(&h->att_scale_bits, &scale, 4);
	}
	if ((st = open_device(b, &d, err)) || (st = load_module(b, &d, err)) || (st = setup_tiles(b, err)) ||
	    (st = alloc_all(b, &d, err)))
		goto out;
	*out = &b->base;
	b = NULL;
out:
	if (b)
		dec_cu_free(&b->base);
	return st;
}
