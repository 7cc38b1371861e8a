/* dec_model.c — builds struct dec_model from a parsed GGUF file: reads the
 * architecture's hyper-parameters and checks each size against the tensors
 * that have it (or bounds it) before anything is allocated by it, finds and
 * shape-checks every tensor, copies the 1-D weights (norms, biases) into one
 * f32 allocation and the matrices into the forward's copy (repacked, on huge
 * pages). */
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

struct loader {
	struct dec_gguf *g;
	struct dec_model *m;
	struct cr_err *err;
	float *vec_next; /* bump pointer into m->w.vecs */
	int swa_pattern; /* gemma3: layer i is local unless i % pattern == pattern - 1; 0: none */
	const struct dec_gguf_kv *swa_flags; /* gemma3: or a flag per layer */
};

/* "<file>: key '<arch>.<suffix>': <what>", CR_EINPUT. */
static enum cr_status key_err(struct loader *L, const char *suffix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum cr_status key_err(struct loader *L, const char *suffix, const char *fmt, ...)
{
	char what[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return cr_errf(L->err, CR_EINPUT, "%s: key '%s.%s': %s", L->g->path, L->m->cfg.arch_name, suffix,
		       what);
}

static int has_key(struct loader *L, const char *suffix)
{
	char key[128];

	snprintf(key, sizeof key, "%s.%s", L->m->cfg.arch_name, suffix);
	return dec_gguf_find(L->g, key) != NULL;
}

/* An integer key in 0..2^30 (every size the decoder reads is an int, and
 * the checks against the tensors below keep the products in 64 bits). */
static enum cr_status get_int_key(struct loader *L, const char *suffix, int required,
				  int64_t dflt, int *out)
{
	char key[128];
	int64_t v;

	snprintf(key, sizeof key, "%s.%s", L->m->cfg.arch_name, suffix);
	if (!dec_gguf_get_int(L->g, key, &v)) {
		if (required || dec_gguf_find(L->g, key))
			return key_err(L, suffix, "%s", dec_gguf_find(L->g, key) ? "not an integer" : "missing");
		v = dflt;
	}
	if (v < 0 || v > (1 << 30))
		return key_err(L, suffix, "%lld is out of range (0..2^30)", (long long)v);
	*out = (int)v;
	return CR_OK;
}

static float get_float_key(struct loader *L, const char *suffix, double dflt)
{
	char key[128];
	double v;

	snprintf(key, sizeof key, "%s.%s", L->m->cfg.arch_name, suffix);
	return dec_gguf_get_float(L->g, key, &v) ? (float)v : (float)dflt;
}

/* A real-valued key in [lo, hi] (dflt when absent): a NaN, an infinity or
 * a value out of range (a zero RoPE base, a negative epsilon) would give
 * NaN logits, not an error, so it is one here; so is a key of another type. */
static enum cr_status get_real_key(struct loader *L, const char *suffix, double dflt, double lo, double hi,
				   float *out)
{
	char key[128];
	double v;

	snprintf(key, sizeof key, "%s.%s", L->m->cfg.arch_name, suffix);
	if (!dec_gguf_get_float(L->g, key, &v)) {
		if (dec_gguf_find(L->g, key))
			return key_err(L, suffix, "not a number");
		v = dflt;
	}
	if (!isfinite(v) || v < lo || v > hi)
		return key_err(L, suffix, "%g is out of range [%g, %g]", v, lo, hi);
	*out = (float)v;
	return CR_OK;
}

/* gemma3's hyper-parameters, as llama.cpp reads them: the window and its
 * layer pattern (an array of flags, or n: layer i local unless i % n == n - 1;
 * default 6), the local layers' RoPE base (default 10000), the attention
 * scale (1/sqrt(head_dim); 1/sqrt(dim/heads) for the 62-layer model),
 * embeddings scaled by sqrt(dim), GELU. Logit soft-capping is refused. */
static enum cr_status read_gemma3(struct loader *L)
{
	struct dec_config *c = &L->m->cfg;
	char key[128];
	const struct dec_gguf_kv *kv;
	enum cr_status st;
	int pattern = 6;

	c->ffn_gelu = 1;
	c->embd_scale = sqrtf((float)c->dim);
	c->att_scale = c->n_layers == 62 ? 1.0f / sqrtf((float)(c->dim / c->n_heads))
					 : 1.0f / sqrtf((float)c->head_dim);
	if ((st = get_real_key(L, "rope.freq_base_swa", 10000.0, 1e-3, 1e12, &c->rope_base_swa)))
		return st;
	if (get_float_key(L, "final_logit_softcapping", 0) != 0)
		return cr_errf(L->err, CR_EINPUT, "%s: metadata '%s.final_logit_softcapping': logit "
			       "soft-capping is not supported", L->g->path, c->arch_name);
	if ((st = get_int_key(L, "attention.sliding_window", 0, 0, &c->n_swa)))
		return st;
	snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", c->arch_name);
	kv = dec_gguf_find(L->g, key);
	if (kv && kv->type == DEC_GGUF_ARRAY) { /* a flag per layer */
		if (kv->n != (uint64_t)c->n_layers)
			return cr_errf(L->err, CR_EINPUT, "%s: metadata '%s' has %llu flags for %d layers",
				       L->g->path, key, (unsigned long long)kv->n, c->n_layers);
		L->swa_flags = kv;
	} else if ((st = get_int_key(L, "attention.sliding_window_pattern", 0, 6, &pattern))) {
		return st;
	}
	c->sliding_window = 0;
	L->swa_pattern = c->n_swa > 0 ? pattern : 0;
	return CR_OK;
}

static enum cr_status get_mat(struct loader *L, const char *name, int64_t rows, int64_t cols,
			      int optional, struct dec_mat *out);

/* The tensor `name`, or an error saying it is missing. */
static const struct dec_gguf_tensor *need_tensor(struct loader *L, const char *name)
{
	const struct dec_gguf_tensor *t = dec_gguf_tensor(L->g, name);

	if (!t)
		cr_errf(L->err, CR_EINPUT, "%s: tensor '%s' is missing", L->g->path, name);
	return t;
}

/* block_count against the layers in the file: a blk.<i>.attn_norm.weight
 * for every i below it and no blk.<i>.* tensor at or past it, checked
 * before anything is allocated per layer. */
static enum cr_status check_block_count(struct loader *L)
{
	const struct dec_gguf *g = L->g;
	int n = L->m->cfg.n_layers;
	uint8_t *seen;
	enum cr_status st = CR_OK;

	if ((uint64_t)n > g->n_tensors)
		return key_err(L, "block_count", "%d layers, but the file has %llu tensors in all", n,
			       (unsigned long long)g->n_tensors);
	if (!(seen = calloc((size_t)n, 1)))
		return cr_errf(L->err, CR_ENOMEM, "%s: out of memory", g->path);
	for (uint64_t k = 0; k < g->n_tensors && !st; k++) {
		const struct dec_gguf_str *nm = &g->tensors[k].name;
		uint64_t i = 0, j = 4;

		if (nm->len < 6 || memcmp(nm->ptr, "blk.", 4))
			continue;
		while (j < nm->len && j < 14 && nm->ptr[j] >= '0' && nm->ptr[j] <= '9')
			i = i * 10 + (uint64_t)(nm->ptr[j++] - '0');
		if (j == 4 || j >= nm->len || nm->ptr[j] != '.')
			continue;
		if (i >= (uint64_t)n)
			st = key_err(L, "block_count", "%d layers, but the file has tensor '%.*s'", n,
				     (int)(nm->len < 100 ? nm->len : 100), nm->ptr);
		else if (nm->len - j - 1 == 16 && !memcmp(nm->ptr + j + 1, "attn_norm.weight", 16))
			seen[i] = 1;
	}
	for (int i = 0; i < n && !st; i++)
		if (!seen[i])
			st = key_err(L, "block_count", "%d layers, but tensor 'blk.%d.attn_norm.weight' is missing",
				     n, i);
	free(seen);
	return st;
}

/* want (what the keys give, said by `what`) against dimension d of tensor name. */
static enum cr_status check_dim(struct loader *L, const char *suffix, const char *name, int d, int64_t want,
				const char *what)
{
	const struct dec_gguf_tensor *t = need_tensor(L, name);

	if (!t)
		return CR_EINPUT;
	if (t->ne[d] != (uint64_t)want)
		return key_err(L, suffix, "%lld %s, but tensor '%s' has %llu", (long long)want, what, name,
			       (unsigned long long)t->ne[d]);
	return CR_OK;
}

/* Every hyper-parameter that sizes a buffer against the tensors that have
 * it (layer 0's; load_layer checks every layer's whole shape), before the
 * loader or a backend allocates by it. The keys are at most 2^30 each, so
 * the products here fit in 64 bits. */
static enum cr_status check_tensors(struct loader *L)
{
	struct dec_config *c = &L->m->cfg;
	const struct dec_gguf_tensor *te = need_tensor(L, "token_embd.weight");
	int64_t qd = (int64_t)c->n_heads * c->head_dim, kvd = (int64_t)c->n_kv_heads * c->head_dim;
	const char *hk = has_key(L, "attention.key_length") ? "attention.key_length" : "attention.head_count";
	const char *kk = has_key(L, "attention.head_count_kv") ? "attention.head_count_kv" : "attention.head_count";
	char what[160];
	enum cr_status st;

	if (!te)
		return CR_EINPUT;
	if (te->ne[0] != (uint64_t)c->dim)
		return key_err(L, "embedding_length", "%d, but tensor 'token_embd.weight' is [%llu, %llu]", c->dim,
			       (unsigned long long)te->ne[0], (unsigned long long)te->ne[1]);
	if (te->n_dims != 2 || te->ne[1] > (1u << 24))
		return cr_errf(L->err, CR_EINPUT, "%s: tensor 'token_embd.weight' is not [dim, n_vocab <= 2^24]",
			       L->g->path);
	c->n_vocab = (int)te->ne[1];
	{
		const struct dec_gguf_tensor *to = dec_gguf_tensor(L->g, "output.weight");

		if (to && to->ne[1] != te->ne[1])
			return cr_errf(L->err, CR_EINPUT, "%s: tensor 'output.weight' has %llu rows and tensor "
				       "'token_embd.weight' %llu: both have one per token of the vocabulary",
				       L->g->path, (unsigned long long)to->ne[1], (unsigned long long)te->ne[1]);
	}
	if ((st = get_mat(L, "token_embd.weight", c->n_vocab, c->dim, 0, &L->m->w.tok_embd)) ||
	    (st = check_block_count(L)))
		return st;
	if (c->arch == DEC_ARCH_PHI3 && dec_gguf_tensor(L->g, "blk.0.attn_qkv.weight")) {
		snprintf(what, sizeof what, "q, k, v rows (%d + 2 x %d heads ('%s.attention.head_count', "
			 "'%s.attention.head_count_kv') of %d)", c->n_heads, c->n_kv_heads, c->arch_name, c->arch_name,
			 c->head_dim);
		st = check_dim(L, hk, "blk.0.attn_qkv.weight", 1, qd + 2 * kvd, what);
	} else {
		snprintf(what, sizeof what, "query rows (%d heads ('%s.attention.head_count') of %d)", c->n_heads,
			 c->arch_name, c->head_dim);
		if (!(st = check_dim(L, hk, "blk.0.attn_q.weight", 1, qd, what))) {
			snprintf(what, sizeof what, "key rows (%d kv heads ('%s.attention.head_count_kv') of %d)",
				 c->n_kv_heads, c->arch_name, c->head_dim);
			st = check_dim(L, kk, "blk.0.attn_k.weight", 1, kvd, what);
		}
	}
	if (st)
		return st;
	{
		const struct dec_gguf_tensor *rf = dec_gguf_tensor(L->g, "rope_freqs.weight");

		if (rf && rf->ne[0] != (uint64_t)c->rope_dim / 2)
			return key_err(L, has_key(L, "rope.dimension_count") ? "rope.dimension_count" : hk,
				       "%d rotated dims, but tensor 'rope_freqs.weight' has %llu factors (one per "
				       "pair)", c->rope_dim, (unsigned long long)rf->ne[0]);
	}
	if (c->n_expert) {
		if ((st = check_dim(L, "expert_count", "blk.0.ffn_gate_inp.weight", 1, c->n_expert, "experts")) ||
		    (st = check_dim(L, "expert_count", "blk.0.ffn_gate_exps.weight", 2, c->n_expert, "experts")))
			return st;
		return check_dim(L, "expert_feed_forward_length", "blk.0.ffn_gate_exps.weight", 1, c->expert_hidden,
				 "rows an expert");
	}
	if (c->arch == DEC_ARCH_PHI3) /* [gate; up] */
		return check_dim(L, "feed_forward_length", "blk.0.ffn_up.weight", 1, 2 * (int64_t)c->hidden_dim,
				 "gate and up rows (twice the width)");
	return check_dim(L, "feed_forward_length", "blk.0.ffn_gate.weight", 1, c->hidden_dim, "gate rows");
}

static enum cr_status read_config(struct loader *L)
{
	struct dec_config *c = &L->m->cfg;
	char *arch = dec_gguf_get_strdup(L->g, "general.architecture");
	enum cr_status st = CR_OK;

	if (!arch)
		return cr_errf(L->err, CR_EINPUT, "%s: metadata 'general.architecture' is missing",
			       L->g->path);
	if (!strcmp(arch, "llama"))
		c->arch = DEC_ARCH_LLAMA;
	else if (!strcmp(arch, "qwen2"))
		c->arch = DEC_ARCH_QWEN2;
	else if (!strcmp(arch, "qwen3"))
		c->arch = DEC_ARCH_QWEN3;
	else if (!strcmp(arch, "phi3"))
		c->arch = DEC_ARCH_PHI3;
	else if (!strcmp(arch, "qwen3moe"))
		c->arch = DEC_ARCH_QWEN3MOE;
	else if (!strcmp(arch, "gemma3"))
		c->arch = DEC_ARCH_GEMMA3;
	else
		st = cr_errf(L->err, CR_EINPUT,
			     "%s: architecture '%.40s' is not supported (llama, qwen2, qwen3, qwen3moe, phi3, "
			     "gemma3)", L->g->path, arch);
	snprintf(c->arch_name, sizeof c->arch_name, "%s", arch);
	free(arch);
	if (st)
		return st;
	if (c->arch == DEC_ARCH_QWEN3MOE) {
		if ((st = get_int_key(L, "expert_count", 1, 0, &c->n_expert)) ||
		    (st = get_int_key(L, "expert_used_count", 1, 0, &c->n_expert_used)) ||
		    (st = get_int_key(L, "expert_feed_forward_length", 1, 0, &c->expert_hidden)))
			return st;
		if (c->n_expert < 1 || c->n_expert > 4096)
			return key_err(L, "expert_count", "%d experts (1..4096)", c->n_expert);
		if (c->n_expert_used < 1 || c->n_expert_used > c->n_expert)
			return key_err(L, "expert_used_count", "%d of %d experts ('%s.expert_count') used",
				       c->n_expert_used, c->n_expert, c->arch_name);
		if (c->expert_hidden < 1)
			return key_err(L, "expert_feed_forward_length", "0");
		if (dec_gguf_tensor(L->g, "blk.0.ffn_up_shexp.weight"))
			return cr_errf(L->err, CR_EINPUT, "%s: tensor 'blk.0.ffn_up_shexp.weight': a shared "
				       "expert in qwen3moe is not supported", L->g->path);
	}
	if ((st = get_int_key(L, "embedding_length", 1, 0, &c->dim)) ||
	    (st = get_int_key(L, "block_count", 1, 0, &c->n_layers)) ||
	    (st = get_int_key(L, "feed_forward_length", !c->n_expert, c->expert_hidden, &c->hidden_dim)) ||
	    (st = get_int_key(L, "attention.head_count", 1, 0, &c->n_heads)) ||
	    (st = get_int_key(L, "context_length", 0, 4096, &c->ctx_len)))
		return st;
	if ((st = get_int_key(L, "attention.head_count_kv", 0, c->n_heads, &c->n_kv_heads)))
		return st;
	if (c->dim <= 0)
		return key_err(L, "embedding_length", "0");
	if (c->n_layers <= 0)
		return key_err(L, "block_count", "0");
	if (c->hidden_dim <= 0)
		return key_err(L, "feed_forward_length", "0");
	if (c->n_heads <= 0)
		return key_err(L, "attention.head_count", "0");
	if (c->n_kv_heads <= 0 || c->n_heads % c->n_kv_heads)
		return key_err(L, "attention.head_count_kv", "%d does not divide the %d heads ('%s.attention.head_count')",
			       c->n_kv_heads, c->n_heads, c->arch_name);
	/* qwen3moe has no dense feed-forward: no tensor has this width, yet
	 * the scratch is sized by it; bounded by all the experts together */
	if (c->n_expert && c->hidden_dim > (int64_t)c->n_expert * c->expert_hidden)
		return key_err(L, "feed_forward_length", "%d is wider than all %d experts together (%d x %d, "
			       "'%s.expert_count' x '%s.expert_feed_forward_length'), and no tensor has this width",
			       c->hidden_dim, c->n_expert, c->n_expert, c->expert_hidden, c->arch_name, c->arch_name);
	if (c->n_expert && c->hidden_dim < c->expert_hidden) /* scratch sized by the widest */
		c->hidden_dim = c->expert_hidden;
	if ((st = get_int_key(L, "attention.key_length", 0, c->dim / c->n_heads, &c->head_dim)) ||
	    (st = get_int_key(L, "rope.dimension_count", 0, c->head_dim, &c->rope_dim)))
		return st;
	if (c->head_dim <= 0 || c->head_dim % 2)
		return has_key(L, "attention.key_length")
			       ? key_err(L, "attention.key_length", "head size %d (a positive even number)", c->head_dim)
			       : key_err(L, "attention.head_count", "%d heads of '%s.embedding_length' %d give a head "
					 "size of %d (a positive even number)", c->n_heads, c->arch_name, c->dim, c->head_dim);
	{
		int vlen = 0;
		if ((st = get_int_key(L, "attention.value_length", 0, c->head_dim, &vlen)))
			return st;
		if (vlen != c->head_dim)
			return key_err(L, "attention.value_length", "%d differs from '%s.attention.key_length' %d "
				       "(not supported)", vlen, c->arch_name, c->head_dim);
	}
	if (c->rope_dim % 2 || c->rope_dim > c->head_dim)
		return key_err(L, "rope.dimension_count", "%d rotated dims in heads of %d (even, at most the head)",
			       c->rope_dim, c->head_dim);
	if (c->ctx_len == 1)
		return key_err(L, "context_length", "1 position holds no prompt token and the next one (at "
			       "least 2, or 0: unknown)");
	if ((st = get_real_key(L, "rope.freq_base", 10000.0, 1e-3, 1e12, &c->rope_base)) ||
	    (st = get_real_key(L, "attention.layer_norm_rms_epsilon", 1e-5, 0, 1, &c->eps)))
		return st;
	c->rope_scale = 1;
	{
		char key[96], *type;
		float f;

		if ((st = get_real_key(L, "rope.scaling.factor", 0, 0, 1e6, &f)))
			return st;

		snprintf(key, sizeof key, "%s.rope.scaling.type", c->arch_name);
		type = dec_gguf_get_strdup(L->g, key);
		if (type && strcmp(type, "linear") && strcmp(type, "none")) {
			st = cr_errf(L->err, CR_EINPUT,
				     "%s: metadata '%s' = '%.40s': this RoPE scaling is not supported (none, linear)",
				     L->g->path, key, type);
			free(type);
			return st;
		}
		if (type && !strcmp(type, "linear") && f > 0)
			c->rope_scale = 1 / f;
		free(type);
		/* phi3's long-context RoPE (longrope) comes as factor tensors */
		if (dec_gguf_tensor(L->g, "rope_factors_long.weight") ||
		    dec_gguf_tensor(L->g, "rope_factors_short.weight"))
			return cr_errf(L->err, CR_EINPUT,
				       "%s: tensor 'rope_factors_long.weight' / 'rope_factors_short.weight': "
				       "long-context RoPE factors are not supported", L->g->path);
		if ((st = get_real_key(L, "rope.scale_linear", 0, 0, 1e6, &f))) /* the older key */
			return st;
		if (f > 0)
			c->rope_scale = 1 / f;
	}
	c->rope_neox = c->arch != DEC_ARCH_LLAMA;
	if (c->arch == DEC_ARCH_GEMMA3) {
		if ((st = read_gemma3(L)))
			return st;
	} else if (c->arch != DEC_ARCH_PHI3) {
		/* phi3's is not applied, as llama.cpp does not apply it */
		if ((st = get_int_key(L, "attention.sliding_window", 0, 0, &c->sliding_window)))
			return st;
	}
	if (c->ctx_len <= 0)
		c->ctx_len = 4096;
	return check_tensors(L);
}

static enum cr_status get_mat(struct loader *L, const char *name, int64_t rows, int64_t cols,
			      int optional, struct dec_mat *out)
{
	const struct dec_gguf_tensor *t = dec_gguf_tensor(L->g, name);

	memset(out, 0, sizeof *out);
	if (!t)
		return optional ? CR_OK : cr_errf(L->err, CR_EINPUT, "%s: tensor '%s' is missing",
						  L->g->path, name);
	if (t->n_dims != 2 || (int64_t)t->ne[0] != cols || (int64_t)t->ne[1] != rows)
		return cr_errf(L->err, CR_EINPUT,
			       "%s: tensor '%s' has shape [%llu, %llu], expected [%lld, %lld]",
			       L->g->path, name, (unsigned long long)t->ne[0],
			       (unsigned long long)t->ne[1], (long long)cols, (long long)rows);
	if (!dec_type_supported(t->type))
		return cr_errf(L->err, CR_EINPUT,
			       "%s: tensor '%s' has type %s, which the decoder does not support "
			       "(" DEC_TYPES_SUPPORTED ")",
			       L->g->path, name, dec_type_name(t->type));
	out->data = t->data;
	out->type = t->type;
	out->rows = rows;
	out->cols = cols;
	out->row_bytes = dec_row_size(t->type, cols);
	return CR_OK;
}

static enum cr_status get_vec(struct loader *L, const char *name, int64_t n, int optional,
			      const float **out)
{
	const struct dec_gguf_tensor *t = dec_gguf_tensor(L->g, name);

	*out = NULL;
	if (!t)
		return optional ? CR_OK : cr_errf(L->err, CR_EINPUT, "%s: tensor '%s' is missing",
						  L->g->path, name);
	if (t->ne[0] != (uint64_t)n || t->ne[1] * t->ne[2] * t->ne[3] != 1)
		return cr_errf(L->err, CR_EINPUT, "%s: tensor '%s' has %llu elements, expected %lld",
			       L->g->path, name, (unsigned long long)t->ne[0], (long long)n);
	if (!dec_type_supported(t->type))
		return cr_errf(L->err, CR_EINPUT, "%s: tensor '%s' has unsupported type %s (" DEC_TYPES_SUPPORTED ")",
			       L->g->path, name, dec_type_name(t->type));
	dec_dequant_row(t->type, t->data, L->vec_next, n);
	*out = L->vec_next;
	L->vec_next += n;
	return CR_OK;
}

/* Rows [r0, r0 + n) of m, as a matrix of their own (rows are independent
 * in every type, so a range of them is one). */
static struct dec_mat rows_of(const struct dec_mat *m, int64_t r0, int64_t n)
{
	struct dec_mat v = *m;

	v.data = (const uint8_t *)m->data + (size_t)r0 * m->row_bytes;
	v.rows = n;
	return v;
}

/* A 3-D expert tensor [cols, rows, n_expert] (one matrix per expert, back
 * to back) as n_expert matrices at out[3e + k]. */
static enum cr_status get_expert_mats(struct loader *L, const char *name, int64_t rows, int64_t cols,
				      struct dec_mat *out, int k)
{
	const struct dec_gguf_tensor *t = dec_gguf_tensor(L->g, name);
	int ne = L->m->cfg.n_expert;
	size_t rb;

	if (!t)
		return cr_errf(L->err, CR_EINPUT, "%s: tensor '%s' is missing", L->g->path, name);
	if (t->n_dims != 3 || (int64_t)t->ne[0] != cols || (int64_t)t->ne[1] != rows || (int64_t)t->ne[2] != ne)
		return cr_errf(L->err, CR_EINPUT,
			       "%s: tensor '%s' has shape [%llu, %llu, %llu], expected [%lld, %lld, %d]", L->g->path,
			       name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
			       (unsigned long long)t->ne[2], (long long)cols, (long long)rows, ne);
	if (!dec_type_supported(t->type))
		return cr_errf(L->err, CR_EINPUT,
			       "%s: tensor '%s' has type %s, which the decoder does not support (" DEC_TYPES_SUPPORTED ")",
			       L->g->path, name, dec_type_name(t->type));
	rb = dec_row_size(t->type, cols);
	for (int e = 0; e < ne; e++)
		out[3 * e + k] = (struct dec_mat){ .data = (const uint8_t *)t->data + (size_t)e * rows * rb,
						   .type = t->type, .rows = rows, .cols = cols, .row_bytes = rb };
	return CR_OK;
}

/* qwen3moe's feed-forward: the router and the experts (no shared expert). */
static enum cr_status get_experts(struct loader *L, int i, struct dec_layer *l)
{
	const struct dec_config *c = &L->m->cfg;
	char n[4][64];
	enum cr_status st;

	snprintf(n[0], sizeof n[0], "blk.%d.ffn_gate_inp.weight", i);
	snprintf(n[1], sizeof n[1], "blk.%d.ffn_gate_exps.weight", i);
	snprintf(n[2], sizeof n[2], "blk.%d.ffn_up_exps.weight", i);
	snprintf(n[3], sizeof n[3], "blk.%d.ffn_down_exps.weight", i);
	l->n_expert = c->n_expert;
	l->exps = L->m->w.exp_mats + (size_t)i * 3 * c->n_expert;
	if ((st = get_mat(L, n[0], c->n_expert, c->dim, 0, &l->gate_inp)) ||
	    (st = get_expert_mats(L, n[1], c->expert_hidden, c->dim, l->exps, 0)) ||
	    (st = get_expert_mats(L, n[2], c->expert_hidden, c->dim, l->exps, 1)) ||
	    (st = get_expert_mats(L, n[3], c->dim, c->expert_hidden, l->exps, 2)))
		return st;
	return CR_OK;
}

static enum cr_status load_layer(struct loader *L, int i, struct dec_layer *l)
{
	const struct dec_config *c = &L->m->cfg;
	int64_t qd = (int64_t)c->n_heads * c->head_dim, kvd = (int64_t)c->n_kv_heads * c->head_dim;
	int qwen2 = c->arch == DEC_ARCH_QWEN2;
	int qwen3 = c->arch == DEC_ARCH_QWEN3 || c->arch == DEC_ARCH_QWEN3MOE || c->arch == DEC_ARCH_GEMMA3;
	char n[10][64];
	enum cr_status st;
	static const char *const names[10] = {
		"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
		"ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "",
	};
	char b[6][64];

	for (int k = 0; k < 9; k++)
		snprintf(n[k], sizeof n[k], "blk.%d.%s.weight", i, names[k]);
	snprintf(b[0], sizeof b[0], "blk.%d.attn_q.bias", i);
	snprintf(b[1], sizeof b[1], "blk.%d.attn_k.bias", i);
	snprintf(b[2], sizeof b[2], "blk.%d.attn_v.bias", i);
	snprintf(b[3], sizeof b[3], "blk.%d.attn_q_norm.weight", i);
	snprintf(b[4], sizeof b[4], "blk.%d.attn_k_norm.weight", i);
	struct dec_mat qkv, gu;

	/* phi3 fuses attn_qkv = [q; k; v] rows (some files keep the three
	 * apart) and ffn_up = [gate; up] rows; the other archs keep them apart */
	snprintf(b[5], sizeof b[5], "blk.%d.attn_qkv.weight", i);
	if ((st = get_vec(L, n[0], c->dim, 0, &l->attn_norm)))
		return st;
	if (c->arch == DEC_ARCH_PHI3 && dec_gguf_tensor(L->g, b[5])) {
		if ((st = get_mat(L, b[5], qd + 2 * kvd, c->dim, 0, &qkv)))
			return st;
		l->wq = rows_of(&qkv, 0, qd);
		l->wk = rows_of(&qkv, qd, kvd);
		l->wv = rows_of(&qkv, qd + kvd, kvd);
	} else if ((st = get_mat(L, n[1], qd, c->dim, 0, &l->wq)) ||
		   (st = get_mat(L, n[2], kvd, c->dim, 0, &l->wk)) ||
		   (st = get_mat(L, n[3], kvd, c->dim, 0, &l->wv))) {
		return st;
	}
	if ((st = get_mat(L, n[4], c->dim, qd, 0, &l->wo)) || (st = get_vec(L, n[5], c->dim, 0, &l->ffn_norm)))
		return st;
	if (c->n_expert) {
		if ((st = get_experts(L, i, l)))
			return st;
	} else if (c->arch == DEC_ARCH_PHI3) {
		if ((st = get_mat(L, n[7], 2 * (int64_t)c->hidden_dim, c->dim, 0, &gu)))
			return st;
		l->w_gate = rows_of(&gu, 0, c->hidden_dim);
		l->w_up = rows_of(&gu, c->hidden_dim, c->hidden_dim);
	} else if ((st = get_mat(L, n[6], c->hidden_dim, c->dim, 0, &l->w_gate)) ||
		   (st = get_mat(L, n[7], c->hidden_dim, c->dim, 0, &l->w_up))) {
		return st;
	}
	if (!c->n_expert && (st = get_mat(L, n[8], c->dim, c->hidden_dim, 0, &l->w_down)))
		return st;
	if (c->arch == DEC_ARCH_GEMMA3) {
		char pn[2][64];

		snprintf(pn[0], sizeof pn[0], "blk.%d.post_attention_norm.weight", i);
		snprintf(pn[1], sizeof pn[1], "blk.%d.post_ffw_norm.weight", i);
		if ((st = get_vec(L, pn[0], c->dim, 0, &l->attn_post_norm)) ||
		    (st = get_vec(L, pn[1], c->dim, 0, &l->ffn_post_norm)))
			return st;
		l->swa = L->swa_flags ? c->n_swa > 0 && dec_gguf_arr_int(L->swa_flags, (uint64_t)i) != 0
				      : L->swa_pattern > 0 && i % L->swa_pattern < L->swa_pattern - 1;
	}
	/* biases: required for qwen2, accepted on any arch when present */
	if ((st = get_vec(L, b[0], qd, !qwen2, &l->bq)) ||
	    (st = get_vec(L, b[1], kvd, !qwen2, &l->bk)) ||
	    (st = get_vec(L, b[2], kvd, !qwen2, &l->bv)) ||
	    (st = get_vec(L, b[3], c->head_dim, !qwen3, &l->q_norm)) ||
	    (st = get_vec(L, b[4], c->head_dim, !qwen3, &l->k_norm)))
		return st;
	return CR_OK;
}

/* Every matrix the forward multiplies by, into list (when not NULL); the
 * count. Per layer q, k, v, o, then gate, up, down, or the router and each
 * expert's three; then the output. */
static size_t forward_mats(struct dec_model *m, struct dec_mat **list)
{
	size_t n = 0;

#define PUT(x) do { if (list) list[n] = (x); n++; } while (0)
	for (int i = 0; i < m->cfg.n_layers; i++) {
		struct dec_layer *l = &m->w.layers[i];

		PUT(&l->wq);
		PUT(&l->wk);
		PUT(&l->wv);
		PUT(&l->wo);
		if (l->n_expert) {
			PUT(&l->gate_inp);
			for (int e = 0; e < 3 * l->n_expert; e++)
				PUT(&l->exps[e]);
		} else {
			PUT(&l->w_gate);
			PUT(&l->w_up);
			PUT(&l->w_down);
		}
	}
	PUT(&m->w.output);
#undef PUT
	return n;
}

static size_t x8_bytes(const struct dec_mat *w)
{
	return (size_t)(w->rows / 8) * dec_x8_group_bytes(w->type, w->cols);
}

/* Bytes w takes in the forward's copy: its repacked rows, or all of it as
 * it is for the types without a packed layout; 64-byte multiples. */
static size_t copy_bytes(const struct dec_mat *w)
{
	size_t n = dec_x8_group_bytes(w->type, w->cols) ? x8_bytes(w) : (size_t)w->rows * w->row_bytes;

	return (n + 63) / 64 * 64;
}

enum cr_status dec_model_pack(struct dec_model *m, struct cr_err *err)
{
	size_t n_mats = forward_mats(m, NULL);
	struct dec_mat **mats = malloc(n_mats * sizeof *mats);
	size_t total = 0;
	uint8_t *p;

	if (!mats)
		return cr_errf(err, CR_ENOMEM, "copying the weights: out of memory");
	forward_mats(m, mats);
	for (size_t k = 0; k < n_mats; k++)
		if (__builtin_add_overflow(total, copy_bytes(mats[k]), &total) || total > SIZE_MAX - HUGE_PAGE) {
			free(mats);
			return cr_errf(err, CR_EINPUT, "copying the weights: their size overflows");
		}
	/* 2 MiB aligned and, where the kernel offers it, on huge pages: every
	 * token streams the whole buffer, and with 4 KiB pages the TLB misses
	 * cost 17-22% of the decode speed (2-core VM, F16, Q8_0, Q4_K) */
	total = (total + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	if (!total) {
		free(mats);
		return CR_OK;
	}
	if (!(m->w.packed = aligned_alloc(HUGE_PAGE, total))) {
		free(mats);
		return cr_errf(err, CR_ENOMEM, "copying the weights: out of memory (%zu MiB)", total >> 20);
	}
#ifdef MADV_HUGEPAGE
	madvise(m->w.packed, total, MADV_HUGEPAGE); /* advice: failure changes nothing */
#endif
	p = m->w.packed;
	for (size_t k = 0; k < n_mats; k++) {
		struct dec_mat *w = mats[k];
		size_t gb = dec_x8_group_bytes(w->type, w->cols);

		if (!gb) {
			memcpy(p, w->data, (size_t)w->rows * w->row_bytes);
			if (m->w.tok_embd.data == w->data) /* tied: both read the copy */
				m->w.tok_embd.data = p;
			w->data = p;
		} else if (w->rows >= 8) {
			for (int64_t g = 0; g < w->rows / 8; g++)
				dec_pack_x8(w->type, (const uint8_t *)w->data + (size_t)g * 8 * w->row_bytes,
					    w->row_bytes, w->cols, p + (size_t)g * gb);
			w->x8 = p;
		}
		p += copy_bytes(w);
	}
	free(mats);
	return CR_OK;
}

/* The floats of every 1-D weight (norms, biases, rope factors); 1 when the
 * count overflows. */
static int vec_floats(const struct dec_config *c, size_t *out)
{
	size_t a, b, per, n;

	if (__builtin_mul_overflow((size_t)c->n_heads + 2 * (size_t)c->n_kv_heads + 2, (size_t)c->head_dim, &a) ||
	    __builtin_add_overflow(a, 4 * (size_t)c->dim, &per) ||
	    __builtin_mul_overflow(per, (size_t)c->n_layers, &b) ||
	    __builtin_add_overflow(b, (size_t)c->dim + (size_t)c->head_dim, &n) || n > SIZE_MAX / sizeof(float))
		return 1;
	*out = n;
	return 0;
}

enum cr_status dec_model_load(struct dec_gguf *g, struct dec_model **out, struct cr_err *err)
{
	struct dec_model *m = calloc(1, sizeof *m);
	struct loader L = { .g = g, .m = m, .err = err };
	enum cr_status st = CR_OK;
	size_t nvec;
	struct dec_config *c;

	*out = NULL;
	if (!m) {
		st = cr_errf(err, CR_ENOMEM, "%s: out of memory", g->path);
		goto out;
	}
	m->gguf = g;
	c = &m->cfg;
	if ((st = read_config(&L)))
		goto out;
	/* the sizes were checked against the tensors (read_config): these
	 * products cannot overflow on 64 bits, and are checked all the same */
	if (vec_floats(c, &nvec)) {
		st = cr_errf(err, CR_EINPUT, "%s: key '%s.block_count': %d layers of width %d overflow a size",
			     g->path, c->arch_name, c->n_layers, c->dim);
		goto out;
	}
	m->w.vecs = malloc(nvec * sizeof(float));
	m->w.layers = calloc((size_t)c->n_layers, sizeof *m->w.layers);
	if (c->n_expert)
		m->w.exp_mats = calloc((size_t)c->n_layers * 3 * c->n_expert, sizeof *m->w.exp_mats);
	if (!m->w.vecs || !m->w.layers || (c->n_expert && !m->w.exp_mats)) {
		st = cr_errf(err, CR_ENOMEM, "%s: out of memory", g->path);
		goto out;
	}
	L.vec_next = m->w.vecs;
	if ((st = get_mat(&L, "token_embd.weight", c->n_vocab, c->dim, 0, &m->w.tok_embd)))
		goto out;
	for (int i = 0; i < c->n_layers; i++)
		if ((st = load_layer(&L, i, &m->w.layers[i])))
			goto out;
	if ((st = get_vec(&L, "output_norm.weight", c->dim, 0, &m->w.out_norm)) ||
	    (st = get_mat(&L, "output.weight", c->n_vocab, c->dim, 1, &m->w.output)) ||
	    (st = get_vec(&L, "rope_freqs.weight", c->rope_dim / 2, 1, &m->w.rope_freqs)))
		goto out;
	if (!m->w.output.data)
		m->w.output = m->w.tok_embd; /* tied embeddings */
	if ((st = dec_model_pack(m, err)))
		goto out;
	*out = m;
	m = NULL;
out:
	if (m)
		dec_model_free(m);
	else if (st)
		dec_gguf_free(g);
	return st;
}

enum cr_status dec_model_open(const char *path, struct dec_model **out, struct cr_err *err)
{
	struct dec_gguf *g;
	enum cr_status st = dec_gguf_open(path, &g, err);

	*out = NULL;
	if (st)
		return st;
	return dec_model_load(g, out, err);
}

void dec_model_free(struct dec_model *m)
{
	if (!m)
		return;
	free(m->w.layers);
	free(m->w.exp_mats);
	free(m->w.vecs);
	free(m->w.packed);
	dec_gguf_free(m->gguf);
	free(m);
}

static int64_t mat_n(const struct dec_mat *w)
{
	return w->rows * w->cols;
}

enum cr_status dec_model_check_ctx(const struct dec_model *m, int ctx, struct cr_err *err)
{
	if (m->cfg.sliding_window > 0 && ctx > m->cfg.sliding_window)
		return cr_errf(err, CR_EUSAGE,
			       "a context of %d positions: the model's attention is limited to a sliding "
			       "window of %d (%s: key '%s.attention.sliding_window'), which the decoder does not do; "
			       "use --ctx %d or less", ctx, m->cfg.sliding_window, m->gguf->path, m->cfg.arch_name,
			       m->cfg.sliding_window);
	return CR_OK;
}

int64_t dec_model_n_params(const struct dec_model *m)
{
	int64_t n = mat_n(&m->w.tok_embd);

	for (int i = 0; i < m->cfg.n_layers; i++) {
		const struct dec_layer *l = &m->w.layers[i];

		n += mat_n(&l->wq) + mat_n(&l->wk) + mat_n(&l->wv) + mat_n(&l->wo) +
		     mat_n(&l->w_gate) + mat_n(&l->w_up) + mat_n(&l->w_down) + mat_n(&l->gate_inp);
		for (int e = 0; e < 3 * l->n_expert; e++)
			n += mat_n(&l->exps[e]);
	}
	if (m->w.output.data != m->w.tok_embd.data)
		n += mat_n(&m->w.output);
	return n;
}

size_t dec_model_weight_bytes(const struct dec_model *m)
{
	size_t n = (size_t)m->w.output.rows * m->w.output.row_bytes;

	for (int i = 0; i < m->cfg.n_layers; i++) {
		const struct dec_layer *l = &m->w.layers[i];
		const struct dec_mat *ms[7] = { &l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down };

		for (int k = 0; k < 7; k++)
			n += (size_t)ms[k]->rows * ms[k]->row_bytes;
		/* a token reads the router and its experts' matrices */
		n += (size_t)l->gate_inp.rows * l->gate_inp.row_bytes;
		for (int e = 0; e < 3 * m->cfg.n_expert_used && l->n_expert; e++)
			n += (size_t)l->exps[e].rows * l->exps[e].row_bytes;
	}
	return n;
}
