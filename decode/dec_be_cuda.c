/* dec_be_cuda.c — the CUDA backend of dec_be.h: the model's weights, the
 * paged f16 KV cache and the activations in device memory, the forward's
 * operations as kernels (decode/cuda/dec_kernels.cu, embedded in the binary
 * as sm_80 and sm_90 cubins and compute_80 PTX: dec_cu_images.S), issued in
 * order on one stream through the driver table of cuda/cuda_drv_impl.h
 * (libcuda is dlopened: the binary starts without a GPU).
 *
 * Errors. Ops return nothing: the first failure (a launch refused, or an
 * asynchronous fault seen at the next synchronisation) is kept with the
 * name of the kernel last issued and the layer, and every later status
 * call (set_step, download, kv_copy, graph_end) returns it. With
 * CRUCIBLE_CUDA_SYNC=1 every launch is followed by a synchronisation, so
 * the kernel named is the one that failed (and graphs are off).
 *
 * Graphs. A step shape (nb, n_out, n_seq) seen a second time is captured
 * while its ops are issued and replayed from then on (at most MAX_GRAPHS
 * kept, least recently used evicted; CRUCIBLE_CUDA_GRAPHS=0 turns them
 * off). A replay is valid because everything that changes between steps of
 * one shape (token ids, positions, block tables, output rows) is read by
 * the kernels from fixed device buffers that set_step fills, and the
 * scratch buffers the forward passes never move. */
#include "decode/dec_be.h"
#include "decode/dec_impl.h"
#include "decode/dec_quant.h"
#include "decode/cuda/dec_cu.h"
#include "cuda/cuda_drv_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GRAPHS 64

/* the kernel images (dec_cu_images.S, generated at build time) */
extern const unsigned char dec_cu_img_sm_80[], dec_cu_img_sm_90[], dec_cu_img_ptx[];

enum kid {
#define X(n) KI_##n,
	DEC_CU_KERNELS(X)
#undef X
	KI_N
};
_Static_assert(KI_N <= 64, "the test suite's fake driver reads 64 kernels a cubin (cuda/cuda_cubin.h)");
_Static_assert(KI_mmv_q6_k_64 == KI_mmv_f32_1 + 39, "mmv_kernel() relies on DEC_CU_KERNELS' order");
static const char *const kname[KI_N] = {
#define X(n) #n,
	DEC_CU_KERNELS(X)
#undef X
};

/* a weight matrix in device memory, in the file's layout */
struct dmat {
	CUdeviceptr p;
	uint32_t type;
	int rows, cols;
};

struct graph {
	int nb, n_out, n_seq;
	int seen;              /* steps of this shape so far */
	CUgraphExec exec;      /* once captured */
	uint64_t used;         /* the step counter when last used */
};

struct be_cuda {
	struct dec_be base;
	const struct cr_cu *cu;
	CUdevice dev;
	CUcontext ctx;
	int retained;
	CUmodule mod;
	CUfunction fn[KI_N];
	CUstream st;
	CUdeviceptr wmem, kvmem, work;  /* weights; KV pools; everything else */
	CUdeviceptr dcfg, step, act_q, act_d, act_s;
	struct dec_cu_cfg *cfg;         /* host copy of what dcfg holds */
	struct dmat *mats;              /* [n_layers * 7 + 2]: per layer Q K V O GATE UP DOWN, then embd, output */
	CUdeviceptr *vecs;              /* [n_layers * 2 + 1]: attn_norm, ffn_norm per layer, then out_norm */
	int32_t *stage;                 /* host image of the step buffers */
	size_t step_ints;
	CUdeviceptr *scr;               /* scratch allocations */
	int n_scr, cap_scr;
	/* the current step */
	int nb, n_out, n_seq;
	/* errors */
	enum cr_status err_st;
	char err_msg[768];
	int last_kernel, last_layer;
	int sync_each;
	/* graphs */
	int graphs_on, capturing;
	struct graph *cap_g;
	struct graph g[MAX_GRAPHS];
	uint64_t steps;
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
			 kname[b->last_kernel], b->last_layer,
			 b->sync_each ? "" : "; CRUCIBLE_CUDA_SYNC=1 names the failing one");
	else
		snprintf(b->err_msg, sizeof b->err_msg, "cuda backend: %s: %s%s%s", what,
			 cr_cu_result_name((int)r, buf, sizeof buf), desc ? ": " : "", desc ? desc : "");
}

static enum cr_status sticky(struct be_cuda *b, struct cr_err *err)
{
	return b->err_st ? cr_errf(err, b->err_st, "%s", b->err_msg) : CR_OK;
}

static void launch(struct be_cuda *b, enum kid k, int layer, uint64_t gx, unsigned gy, unsigned gz,
		   unsigned threads, void **params)
{
	CUresult r;
	char what[128];

	if (b->err_st)
		return;
	b->last_kernel = (int)k;
	b->last_layer = layer;
	/* the hardware's limits, checked here so a size never wraps */
	r = gx > INT32_MAX || gy > 65535 || gz > 65535 ? CUDA_ERROR_INVALID_VALUE
		: b->cu->LaunchKernel(b->fn[k], (unsigned)gx, gy, gz, threads, 1, 1, 0, b->st, params, NULL);
	if (r != CUDA_SUCCESS) {
		snprintf(what, sizeof what, "launch of %s (grid %llu,%u,%u, %u threads)", kname[k],
			 (unsigned long long)gx, gy, gz, threads);
		fail(b, r, what);
	} else if (b->sync_each && (r = b->cu->StreamSynchronize(b->st)) != CUDA_SUCCESS) {
		snprintf(what, sizeof what, "kernel %s", kname[k]);
		fail(b, r, what);
	}
}

/* ---- weights ------------------------------------------------------------ */

static const struct dec_mat *wmat(const struct dec_model *m, int layer, enum dec_wkind k)
{
	const struct dec_layer *l = layer >= 0 ? &m->w.layers[layer] : NULL;

	switch (k) {
	case DEC_W_Q: return &l->wq;
	case DEC_W_K: return &l->wk;
	case DEC_W_V: return &l->wv;
	case DEC_W_O: return &l->wo;
	case DEC_W_GATE: return &l->w_gate;
	case DEC_W_UP: return &l->w_up;
	case DEC_W_DOWN: return &l->w_down;
	case DEC_W_TOK_EMBD: return &m->w.tok_embd;
	case DEC_W_OUTPUT: return &m->w.output;
	default: return NULL;
	}
}

/* The device copy of (layer, k); index into b->mats. */
static const struct dmat *dmat_of(const struct be_cuda *b, int layer, enum dec_wkind k)
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

	switch (w->type) {
	case DEC_T_F32: case DEC_T_F16: case DEC_T_BF16: case DEC_T_Q8_0: case DEC_T_Q4_0:
	case DEC_T_Q5_0: case DEC_T_Q4_1: case DEC_T_Q5_1: case DEC_T_Q4_K: case DEC_T_Q6_K:
		break;
	default:
		return cr_errf(err, CR_EENV, "cuda backend: %s has type %s, which has no CUDA kernel",
			       wname(layer, k, nm, sizeof nm), dec_type_name(w->type));
	}
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
			const struct dec_mat *w = wmat(m, L, ks[i]);
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
			if ((st = upload_mat(b, &at, wmat(m, L, ks[i]), &b->mats[L * 7 + i], err)))
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
		r = cu->ModuleGetFunction(&b->fn[k], b->mod, kname[k]);
		if (r != CUDA_SUCCESS) {
			char buf[32];
			return cr_errf(err, CR_EENV, "cuda backend: the kernels image (%s) lacks %s: %s", which,
				       kname[k], cr_cu_result_name((int)r, buf, sizeof buf));
		}
	}
	return CR_OK;
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
	case DEC_T_Q8_0: case DEC_T_Q4_0: case DEC_T_Q5_0: return DEC_CU_ACT_Q8_0;
	case DEC_T_Q4_1: case DEC_T_Q5_1: return DEC_CU_ACT_Q8_1;
	case DEC_T_Q4_K: case DEC_T_Q6_K: return DEC_CU_ACT_Q8_K;
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

/* mmv_<type>_<NT>: NT (1, 4, 16, 64) the tokens a pass serves, the
 * smallest that covers nb; *nt gets it */
static enum kid mmv_kernel(uint32_t t, int nb, int *nt)
{
	static const uint32_t types[10] = { DEC_T_F32, DEC_T_F16, DEC_T_BF16, DEC_T_Q8_0, DEC_T_Q4_0,
					    DEC_T_Q5_0, DEC_T_Q4_1, DEC_T_Q5_1, DEC_T_Q4_K, DEC_T_Q6_K };
	int ti = 0, ni = 0;

	while (ti < 9 && types[ti] != t)
		ti++;
	while (ni < 3 && (1 << (2 * ni)) < nb)
		ni++;
	*nt = 1 << (2 * ni);
	/* DEC_CU_KERNELS lists the other kernels, then the 10 types of each NT */
	return (enum kid)(KI_mmv_f32_1 + ni * 10 + ti);
}

static void op_matmul(struct dec_be *be, int layer, int nw, const enum dec_wkind *w, float *const *out,
		      const float *in, int nb, int add)
{
	struct be_cuda *b = cuda(be);
	int have = -1; /* the encoding act_* holds for this input */

	if (nb <= 0)
		return;
	for (int k = 0; k < nw; k++) {
		const struct dmat *d = dmat_of(b, layer, w[k]);
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
	unsigned nh = (unsigned)be->m->cfg.n_heads;

	launch(b, KI_k_attention, layer, nh, (unsigned)b->nb, (unsigned)b->cfg->att_max_splits, 128, p1);
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
 * seq [max_tokens] each, out [max_out], btab [max_seqs, max_blocks]. */
static enum cr_status op_set_step(struct dec_be *be, const struct dec_step *st, struct cr_err *err)
{
	struct be_cuda *b = cuda(be);
	const struct dec_be_cfg *cfg = &be->cfg;
	const struct cr_cu *cu = b->cu;
	int bs = cfg->block_size, mb = dec_be_max_blocks(cfg), mt = cfg->max_tokens;
	int32_t *tok = b->stage, *pos = tok + mt, *seq = pos + mt, *out = seq + mt, *bt = out + cfg->max_out;
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
	n = (size_t)(3 * mt + cfg->max_out + st->n_seq * mb) * sizeof(int32_t);
	if ((r = cu->MemcpyHtoDAsync(b->step, b->stage, n, b->st)) != CUDA_SUCCESS) {
		fail(b, r, "uploading the step");
		return sticky(b, err);
	}
	b->nb = st->nb;
	b->n_out = st->n_out;
	b->n_seq = st->n_seq;
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
	if (!b->err_st && n &&
	    (r = cu->MemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)src, n * sizeof(float), b->st)) != CUDA_SUCCESS)
		fail(b, r, "copying results to the host");
	if (!b->err_st && (r = cu->StreamSynchronize(b->st)) != CUDA_SUCCESS)
		fail(b, r, "waiting for the step");
	return sticky(b, err);
}

static enum cr_status op_kv_copy(struct dec_be *be, int src, int dst, struct cr_err *err)
{
	struct be_cuda *b = cuda(be);
	void *p[] = { &b->dcfg, &src, &dst };

	if (src < 0 || dst < 0 || src >= be->cfg.n_blocks || dst >= be->cfg.n_blocks)
		return cr_errf(err, CR_EINTERNAL, "cuda backend: copy of block %d to %d", src, dst);
	if (b->capturing)
		return cr_errf(err, CR_EINTERNAL, "cuda backend: kv_copy while a step is being captured");
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

		if (g->seen && g->nb == b->nb && g->n_out == b->n_out && g->n_seq == b->n_seq)
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

static void op_free(struct dec_be *be)
{
	struct be_cuda *b = cuda(be);
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

static const struct dec_be_ops cuda_ops = {
	.name = "cuda",
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
	.download = op_download,
	.kv_copy = op_kv_copy,
	.graph_begin = op_graph_begin,
	.graph_end = op_graph_end,
};

static int env_on(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? strcmp(v, "0") != 0 : dflt;
}

/* Positions per attention split: a power of two giving at most 16 splits,
 * between 32 and DEC_CU_ATT_MAX_SPLIT. It depends on max_ctx only. */
static int att_split(int max_ctx)
{
	int s = 32;

	while (s < DEC_CU_ATT_MAX_SPLIT && (max_ctx + s - 1) / s > 16)
		s *= 2;
	return s;
}

static enum cr_status check_model(const struct dec_model *m, struct cr_err *err)
{
	const struct dec_config *c = &m->cfg;
	static const enum dec_wkind ks[] = { DEC_W_Q, DEC_W_K, DEC_W_V, DEC_W_O, DEC_W_GATE, DEC_W_UP, DEC_W_DOWN };
	enum cr_status st;

	if (c->n_expert > 0)
		return cr_errf(err, CR_EENV, "cuda backend: %s: mixture-of-experts layers (%d experts) have no CUDA "
			       "kernels yet", c->arch_name, c->n_expert);
	if (c->n_layers > DEC_CU_MAX_LAYERS || c->head_dim > DEC_CU_MAX_HEAD_DIM || c->head_dim % 8 ||
	    c->n_heads % c->n_kv_heads)
		return cr_errf(err, CR_EENV, "cuda backend: %d layers, head dim %d: the CUDA kernels take at "
			       "most %d layers and a head dim of a multiple of 8 up to %d", c->n_layers, c->head_dim,
			       DEC_CU_MAX_LAYERS, DEC_CU_MAX_HEAD_DIM);
	for (int L = 0; L < c->n_layers; L++)
		for (int i = 0; i < 7; i++)
			if ((st = check_mat(wmat(m, L, ks[i]), L, ks[i], err)))
				return st;
	if ((st = check_mat(&m->w.tok_embd, -1, DEC_W_TOK_EMBD, err)) ||
	    (st = check_mat(&m->w.output, -1, DEC_W_OUTPUT, err)))
		return st;
	return CR_OK;
}

/* The work area: the device config, the step buffers, the encoded
 * activations, the attention partials, the RoPE table. */
static size_t work_bytes(const struct dec_model *m, const struct dec_be_cfg *cfg, int max_splits, size_t *act_cols)
{
	const struct dec_config *c = &m->cfg;
	size_t mt = (size_t)cfg->max_tokens, cols = (size_t)c->dim, qd = (size_t)c->n_heads * c->head_dim;

	cols = cols > qd ? cols : qd;
	cols = cols > (size_t)c->hidden_dim ? cols : (size_t)c->hidden_dim;
	*act_cols = cols;
	return up256(sizeof(struct dec_cu_cfg)) +
	       up256((3 * mt + (size_t)cfg->max_out + (size_t)cfg->max_seqs * dec_be_max_blocks(cfg)) * 4) +
	       up256(mt * cols * 4) + 2 * up256(mt * cols / 32 * 4) +
	       up256(mt * qd / c->head_dim * max_splits * (c->head_dim + 2) * 4) +
	       up256((size_t)cfg->max_ctx * c->rope_dim * 4);
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
	h->out = at + 3 * mt * 4;
	h->btab = at + (3 * mt + (size_t)cfg->max_out) * 4;
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
	b->base.ops = &cuda_ops;
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
	b->graphs_on = env_on("CRUCIBLE_CUDA_GRAPHS", 1) && !b->sync_each;
	b->step_ints = 3 * (size_t)cfg->max_tokens + (size_t)cfg->max_out + (size_t)cfg->max_seqs * dec_be_max_blocks(cfg);
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
	h->att_split = att_split(cfg->max_ctx);
	h->att_max_splits = (cfg->max_ctx + h->att_split - 1) / h->att_split;
	{
		float eps = c->eps, scale = 1.0f / sqrtf((float)c->head_dim);
		memcpy(&h->eps_bits, &eps, 4);
		memcpy(&h->att_scale_bits, &scale, 4);
	}
	if ((st = open_device(b, &d, err)) || (st = load_module(b, &d, err)) || (st = alloc_all(b, &d, err)))
		goto out;
	*out = &b->base;
	b = NULL;
out:
	if (b)
		op_free(&b->base);
	return st;
}
