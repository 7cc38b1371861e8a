/* dec_testutil.c — GGUF writer and tiny random models for the decode tests
 * (see dec_testutil.h). Allocation failures abort: this is test code. */
#include "dec_testutil.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/model/gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	if (n)
		memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void put_u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(struct buf *b, const char *s)
{
	put_u64(b, strlen(s));
	put(b, s, strlen(s));
}

struct gw {
	struct buf kv, ti, data;
	uint64_t n_kv, n_t;
};

struct gw *gw_new(void)
{
	struct gw *w = calloc(1, sizeof *w);

	if (!w)
		abort();
	return w;
}

void gw_free(struct gw *w)
{
	if (!w)
		return;
	free(w->kv.p);
	free(w->ti.p);
	free(w->data.p);
	free(w);
}

void gw_kv_raw(struct gw *w, const char *key, uint32_t type, const void *val, size_t n)
{
	put_str(&w->kv, key);
	put_u32(&w->kv, type);
	put(&w->kv, val, n);
	w->n_kv++;
}

void gw_kv_str(struct gw *w, const char *key, const char *val)
{
	put_str(&w->kv, key);
	put_u32(&w->kv, DEC_GGUF_STRING);
	put_str(&w->kv, val);
	w->n_kv++;
}

void gw_kv_u32(struct gw *w, const char *key, uint32_t v) { gw_kv_raw(w, key, DEC_GGUF_U32, &v, 4); }
void gw_kv_i32(struct gw *w, const char *key, int32_t v) { gw_kv_raw(w, key, DEC_GGUF_I32, &v, 4); }
void gw_kv_f32(struct gw *w, const char *key, float v) { gw_kv_raw(w, key, DEC_GGUF_F32, &v, 4); }
void gw_kv_bool(struct gw *w, const char *key, int v)
{
	uint8_t b = (uint8_t)(v != 0);

	gw_kv_raw(w, key, DEC_GGUF_BOOL, &b, 1);
}

void gw_kv_arr(struct gw *w, const char *key, uint32_t etype, const void *vals, uint64_t n)
{
	put_str(&w->kv, key);
	put_u32(&w->kv, DEC_GGUF_ARRAY);
	put_u32(&w->kv, etype);
	put_u64(&w->kv, n);
	put(&w->kv, vals, n * dec_gguf_vtype_size(etype));
	w->n_kv++;
}

void gw_kv_arr_str(struct gw *w, const char *key, const char *const *vals, uint64_t n)
{
	put_str(&w->kv, key);
	put_u32(&w->kv, DEC_GGUF_ARRAY);
	put_u32(&w->kv, DEC_GGUF_STRING);
	put_u64(&w->kv, n);
	for (uint64_t i = 0; i < n; i++)
		put_str(&w->kv, vals[i]);
	w->n_kv++;
}

void gw_tensor(struct gw *w, const char *name, int n_dims, const uint64_t *ne, uint32_t type,
	       const void *data, size_t nbytes)
{
	static const uint8_t zero[32];

	put_str(&w->ti, name);
	put_u32(&w->ti, (uint32_t)n_dims);
	for (int i = 0; i < n_dims; i++)
		put_u64(&w->ti, ne[i]);
	put_u32(&w->ti, type);
	put_u64(&w->ti, w->data.n);
	put(&w->data, data, nbytes);
	put(&w->data, zero, (32 - w->data.n % 32) % 32);
	w->n_t++;
}

uint8_t *gw_finish(struct gw *w, size_t *size)
{
	struct buf f = { 0 };
	static const uint8_t zero[32];

	put(&f, "GGUF", 4);
	put_u32(&f, 3);
	put_u64(&f, w->n_t);
	put_u64(&f, w->n_kv);
	put(&f, w->kv.p, w->kv.n);
	put(&f, w->ti.p, w->ti.n);
	put(&f, zero, (32 - f.n % 32) % 32);
	put(&f, w->data.p, w->data.n);
	*size = f.n;
	return f.p;
}

int gw_write(struct gw *w, const char *path)
{
	size_t n;
	uint8_t *p = gw_finish(w, &n);
	FILE *f = fopen(path, "wb");
	int rc = -1;

	if (f && fwrite(p, 1, n, f) == n)
		rc = 0;
	if (f && fclose(f))
		rc = -1;
	free(p);
	return rc;
}

/* The offset of the u64 length in front of string z in the image (the
 * first one: keys and tensor names are unique), or -1. */
static long find_str(const uint8_t *img, size_t size, const char *z)
{
	uint64_t n = strlen(z);

	for (size_t i = 0; i + 8 + n <= size; i++)
		if (!memcmp(img + i + 8, z, n) && !memcmp(img + i, &n, 8))
			return (long)i;
	return -1;
}

int gw_patch_u32(uint8_t *img, size_t size, const char *key, uint32_t v)
{
	long at = find_str(img, size, key);
	size_t o = (size_t)at + 8 + strlen(key);
	uint32_t type;

	if (at < 0 || o + 8 > size)
		return -1;
	memcpy(&type, img + o, 4);
	if (type != DEC_GGUF_U32)
		return -1;
	memcpy(img + o + 4, &v, 4);
	return 0;
}

int gw_patch_key_len(uint8_t *img, size_t size, const char *key, uint64_t len)
{
	long at = find_str(img, size, key);

	if (at < 0)
		return -1;
	memcpy(img + at, &len, 8);
	return 0;
}

int gw_patch_ne(uint8_t *img, size_t size, const char *name, int dim, uint64_t v)
{
	long at = find_str(img, size, name);
	size_t o = (size_t)at + 8 + strlen(name);
	uint32_t n_dims;

	if (at < 0 || o + 4 > size)
		return -1;
	memcpy(&n_dims, img + o, 4);
	if (dim < 0 || (uint32_t)dim >= n_dims || o + 4 + 8 * (size_t)n_dims > size)
		return -1;
	memcpy(img + o + 4 + 8 * (size_t)dim, &v, 8);
	return 0;
}

/* ---- tiny models ------------------------------------------------------- */

static const char *const merges[] = { "Ġ t", "h e", "i n", "Ġt he", "r e", "o n" };
static const char *const merged[] = { "Ġt", "he", "in", "Ġthe", "re", "on" };
static const char *const specials[] = {
	"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
};
#define N_MERGES 6
#define N_SPECIAL 5

int tiny_vocab_size(void)
{
	return 256 + N_MERGES + N_SPECIAL;
}

/* GPT-2's byte → printable code point mapping, as UTF-8. */
static void byte_token(int b, char *out)
{
	int cp = b;

	if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
		int k = 0;

		for (int c = 0; c < b; c++)
			if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255)))
				k++;
		cp = 256 + k;
	}
	if (cp < 0x80) {
		out[0] = (char)cp;
		out[1] = 0;
	} else {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		out[2] = 0;
	}
}

static void add_vocab(struct gw *w)
{
	int n = tiny_vocab_size();
	char bytes[256][4];
	const char *toks[256 + N_MERGES + N_SPECIAL];
	int32_t types[256 + N_MERGES + N_SPECIAL];

	for (int i = 0; i < 256; i++) {
		byte_token(i, bytes[i]);
		toks[i] = bytes[i];
		types[i] = 1;
	}
	for (int i = 0; i < N_MERGES; i++) {
		toks[256 + i] = merged[i];
		types[256 + i] = 1;
	}
	for (int i = 0; i < N_SPECIAL; i++) {
		toks[256 + N_MERGES + i] = specials[i];
		types[256 + N_MERGES + i] = 3;
	}
	gw_kv_str(w, "tokenizer.ggml.model", "gpt2");
	gw_kv_str(w, "tokenizer.ggml.pre", "qwen2");
	gw_kv_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)n);
	gw_kv_arr(w, "tokenizer.ggml.token_type", DEC_GGUF_I32, types, (uint64_t)n);
	gw_kv_arr_str(w, "tokenizer.ggml.merges", merges, N_MERGES);
	gw_kv_u32(w, "tokenizer.ggml.bos_token_id", 256 + N_MERGES);
	gw_kv_u32(w, "tokenizer.ggml.eos_token_id", 256 + N_MERGES + 2);
	gw_kv_u32(w, "tokenizer.ggml.padding_token_id", 256 + N_MERGES);
	gw_kv_bool(w, "tokenizer.ggml.add_bos_token", 0);
	gw_kv_str(w, "tokenizer.chat_template",
		  "{% for message in messages %}<|im_start|>{{ message.role }}\n"
		  "{{ message.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n");
}

void tiny_spec_default(struct tiny_spec *s, const char *arch, uint32_t wtype)
{
	memset(s, 0, sizeof *s);
	s->arch = arch;
	s->wtype = wtype;
	s->dim = 256;
	s->n_layers = 2;
	s->n_heads = 4;
	s->n_kv_heads = 2;
	s->head_dim = 64;
	s->hidden = 512;
	s->seed = 1234;
	if (!strcmp(arch, "qwen3")) {
		s->n_heads = 8; /* head_dim 64 != dim / n_heads: exercises key_length */
		s->n_kv_heads = 2;
	}
	/* every expert used: routing is then a continuous function of the input,
	 * so files that differ by quantization can be compared; a test that
	 * wants top-k selection sets n_expert_used below n_expert */
	if (!strcmp(arch, "qwen3moe"))
		s->n_expert = s->n_expert_used = 4;
}

static double rnd(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53 * 2 - 1; /* [-1, 1) */
}

static void add_mat(struct gw *w, uint64_t *st, const char *name, uint32_t type, int64_t rows,
		    int64_t cols, double scale)
{
	float *x = malloc((size_t)(rows * cols) * sizeof *x);
	size_t rb = dec_row_size(type, cols);
	uint8_t *q = malloc(rb * (size_t)rows);
	uint64_t ne[2] = { (uint64_t)cols, (uint64_t)rows };

	if (!x || !q)
		abort();
	for (int64_t i = 0; i < rows * cols; i++)
		x[i] = (float)(rnd(st) * scale);
	for (int64_t r = 0; r < rows; r++)
		if (!dec_quantize_row(type, x + r * cols, q + r * rb, cols))
			abort();
	gw_tensor(w, name, 2, ne, type, q, rb * (size_t)rows);
	free(x);
	free(q);
}

/* A 3-D expert tensor: n_exp matrices rows x cols, back to back. */
static void add_experts(struct gw *w, uint64_t *st, const char *name, uint32_t type, int n_exp, int64_t rows,
			int64_t cols, double scale)
{
	size_t rb = dec_row_size(type, cols);
	float *x = malloc((size_t)cols * sizeof *x);
	uint8_t *q = malloc(rb * (size_t)rows * n_exp);
	uint64_t ne[3] = { (uint64_t)cols, (uint64_t)rows, (uint64_t)n_exp };

	if (!x || !q)
		abort();
	for (int64_t r = 0; r < rows * n_exp; r++) {
		for (int64_t j = 0; j < cols; j++)
			x[j] = (float)(rnd(st) * scale);
		if (!dec_quantize_row(type, x, q + r * rb, cols))
			abort();
	}
	gw_tensor(w, name, 3, ne, type, q, rb * (size_t)rows * n_exp);
	free(x);
	free(q);
}

static void add_vec(struct gw *w, uint64_t *st, const char *name, int64_t n, double center,
		    double spread)
{
	float *x = malloc((size_t)n * sizeof *x);
	uint64_t ne[1] = { (uint64_t)n };

	if (!x)
		abort();
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(center + spread * rnd(st));
	gw_tensor(w, name, 1, ne, DEC_T_F32, x, (size_t)n * 4);
	free(x);
}

uint8_t *tiny_model(const struct tiny_spec *s, size_t *size)
{
	struct gw *w = gw_new();
	uint64_t st = s->seed;
	int qd = s->n_heads * s->head_dim, kvd = s->n_kv_heads * s->head_dim;
	int nv = s->embd_rows > 0 ? s->embd_rows : tiny_vocab_size();
	int phi3 = !strcmp(s->arch, "phi3"), moe = !strcmp(s->arch, "qwen3moe"), gemma3 = !strcmp(s->arch, "gemma3");
	int n_exp = s->n_expert ? s->n_expert : 4;
	char key[96];
	uint8_t *out;

	gw_kv_str(w, "general.architecture", s->arch);
	gw_kv_str(w, "general.name", "tiny-test");
	gw_kv_u32(w, "general.alignment", 32);
#define K(suffix) (snprintf(key, sizeof key, "%s." suffix, s->arch), key)
	gw_kv_u32(w, K("context_length"), s->ctx_len > 0 ? (uint32_t)s->ctx_len : 512);
	gw_kv_u32(w, K("embedding_length"), (uint32_t)s->dim);
	gw_kv_u32(w, K("block_count"), (uint32_t)s->n_layers);
	gw_kv_u32(w, K("feed_forward_length"), (uint32_t)s->hidden);
	gw_kv_u32(w, K("attention.head_count"), (uint32_t)s->n_heads);
	gw_kv_u32(w, K("attention.head_count_kv"), (uint32_t)s->n_kv_heads);
	if (s->head_dim * s->n_heads != s->dim) {
		/* as real files do: both, equal */
		gw_kv_u32(w, K("attention.key_length"), (uint32_t)s->head_dim);
		gw_kv_u32(w, K("attention.value_length"), (uint32_t)s->head_dim);
	}
	gw_kv_f32(w, K("rope.freq_base"), strcmp(s->arch, "llama") ? 1000000.f : 10000.f);
	gw_kv_f32(w, K("attention.layer_norm_rms_epsilon"), 1e-6f);
	if (s->rope_linear > 0) {
		gw_kv_str(w, K("rope.scaling.type"), "linear");
		gw_kv_f32(w, K("rope.scaling.factor"), s->rope_linear);
	}
	if (phi3) /* phi-3-mini's (not applied, as in llama.cpp) */
		gw_kv_u32(w, K("attention.sliding_window"), 2047);
	if (gemma3) { /* a window of 4 in layer 0, 2, ...; layers 1, 3, ... global */
		gw_kv_u32(w, K("attention.sliding_window"), 4);
		gw_kv_u32(w, K("attention.sliding_window_pattern"), 2);
		gw_kv_f32(w, K("rope.freq_base_swa"), 10000.f);
	}
	if (moe) { /* experts of half the width */
		gw_kv_u32(w, K("expert_count"), (uint32_t)n_exp);
		gw_kv_u32(w, K("expert_used_count"), s->n_expert_used ? (uint32_t)s->n_expert_used : 2);
		gw_kv_u32(w, K("expert_feed_forward_length"), (uint32_t)s->hidden / 2);
	}
#undef K
	if (!s->no_vocab)
		add_vocab(w);
	add_mat(w, &st, "token_embd.weight", s->wtype, nv, s->dim, 1.0);
	for (int l = 0; l < s->n_layers; l++) {
#define N(x) (snprintf(key, sizeof key, "blk.%d." x, l), key)
		double a = 1.0 / sqrt((double)s->dim), h = 1.0 / sqrt((double)s->hidden);

		add_vec(w, &st, N("attn_norm.weight"), s->dim, 1.0, 0.2);
		if (phi3) { /* fused, as llama.cpp's converter writes phi3 */
			add_mat(w, &st, N("attn_qkv.weight"), s->wtype, qd + 2 * kvd, s->dim, 2 * a);
		} else {
			add_mat(w, &st, N("attn_q.weight"), s->wtype, qd, s->dim, 2 * a);
			add_mat(w, &st, N("attn_k.weight"), s->wtype, kvd, s->dim, 2 * a);
			add_mat(w, &st, N("attn_v.weight"), s->vtype ? s->vtype : s->wtype, kvd, s->dim, 2 * a);
		}
		add_mat(w, &st, N("attn_output.weight"), s->wtype, s->dim, qd, 1.0 / sqrt((double)qd));
		if (!strcmp(s->arch, "qwen2")) {
			add_vec(w, &st, N("attn_q.bias"), qd, 0, 0.3);
			add_vec(w, &st, N("attn_k.bias"), kvd, 0, 0.3);
			add_vec(w, &st, N("attn_v.bias"), kvd, 0, 0.3);
		}
		if (!strcmp(s->arch, "qwen3") || moe || gemma3) {
			add_vec(w, &st, N("attn_q_norm.weight"), s->head_dim, 1.0, 0.3);
			add_vec(w, &st, N("attn_k_norm.weight"), s->head_dim, 1.0, 0.3);
		}
		if (gemma3)
			add_vec(w, &st, N("post_attention_norm.weight"), s->dim, 1.0, 0.2);
		add_vec(w, &st, N("ffn_norm.weight"), s->dim, 1.0, 0.2);
		if (gemma3)
			add_vec(w, &st, N("post_ffw_norm.weight"), s->dim, 1.0, 0.2);
		if (moe) {
			add_mat(w, &st, N("ffn_gate_inp.weight"), DEC_T_F32, n_exp, s->dim, 4 * a);
			add_experts(w, &st, N("ffn_gate_exps.weight"), s->wtype, n_exp, s->hidden / 2, s->dim, 2 * a);
			add_experts(w, &st, N("ffn_up_exps.weight"), s->wtype, n_exp, s->hidden / 2, s->dim, 2 * a);
			add_experts(w, &st, N("ffn_down_exps.weight"), s->wtype, n_exp, s->dim, s->hidden / 2,
				    1.0 / sqrt((double)s->hidden / 2));
			continue;
		} else if (phi3) {
			add_mat(w, &st, N("ffn_up.weight"), s->wtype, 2 * s->hidden, s->dim, 2 * a);
		} else {
			add_mat(w, &st, N("ffn_gate.weight"), s->wtype, s->hidden, s->dim, 2 * a);
			add_mat(w, &st, N("ffn_up.weight"), s->vtype ? s->vtype : s->wtype, s->hidden, s->dim, 2 * a);
		}
		add_mat(w, &st, N("ffn_down.weight"), s->wtype, s->dim, s->hidden, h);
#undef N
	}
	add_vec(w, &st, "output_norm.weight", s->dim, 1.0, 0.2);
	if (s->rope_freqs)
		add_vec(w, &st, "rope_freqs.weight", s->head_dim / 2, 2.0, 1.0);
	if (!s->tied)
		add_mat(w, &st, "output.weight", s->wtype, nv, s->dim, 4.0 / sqrt((double)s->dim));
	out = gw_finish(w, size);
	gw_free(w);
	return out;
}

int tiny_model_write(const struct tiny_spec *s, const char *path)
{
	size_t n;
	uint8_t *p = tiny_model(s, &n);
	FILE *f = fopen(path, "wb");
	int rc = -1;

	if (f && fwrite(p, 1, n, f) == n)
		rc = 0;
	if (f && fclose(f))
		rc = -1;
	free(p);
	return rc;
}

void tiny_tmpname(char *buf, size_t cap, const char *suffix)
{
	static int counter;
	const char *dir = getenv("TMPDIR");

	snprintf(buf, cap, "%s/crdec_%ld_%d%s", dir && *dir ? dir : "/tmp", (long)getpid(),
		 counter++, suffix);
}

char *tiny_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (p = malloc((size_t)n + 1)) && fread(p, 1, (size_t)n, f) == (size_t)n) {
		p[n] = 0;
		if (len)
			*len = (size_t)n;
	} else {
		free(p);
		p = NULL;
	}
	fclose(f);
	return p;
}

struct dec_model *tiny_load(const struct tiny_spec *s, uint8_t **img)
{
	size_t n;
	struct dec_gguf *g;
	struct dec_model *m;
	struct cr_err e;

	*img = tiny_model(s, &n);
	cr_err_init(&e);
	if (!*img) {
		fprintf(stderr, "tiny_load: the GGUF image could not be built\n");
		exit(1);
	}
	if (dec_gguf_from_buffer(*img, n, "tiny.gguf", &g, &e) || dec_model_load(g, &m, &e)) {
		fprintf(stderr, "tiny_load: %s\n", e.msg);
		exit(1);
	}
	return m;
}
