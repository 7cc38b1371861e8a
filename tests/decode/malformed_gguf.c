/* malformed_gguf.c — issue 30's malformed-model replay: the tiny valid
 * models of every architecture (mk_gguf_bases, from the decode tests'
 * generator) mutated field by field — header counts, every metadata value
 * and type, string and array lengths, key lengths, tensor dims, types and
 * offsets, alignment, the size keys against the tensors, the tokenizer
 * against the embedding — and each run through `crucible decode` (and
 * `generate` on a sample). Each must exit 2 with a message naming the file
 * and the key or tensor (or, for a mutation that leaves a valid model,
 * exit 0), with no sanitizer report, no signal and no hang.
 *
 * usage: malformed_gguf CRUCIBLE MK_GGUF_BASES [--full] [--jobs N]
 *                       [--timeout S] [--asan] [--report CSV] [--keep DIR]
 *                       [--arch A,B] [--count] [--emit DIR]
 *
 * Without --full: a fixed sixth of the mutants (every family in it), the
 * test suite's `malformed_gguf`; --full: all of them, meant for an
 * ASan+UBSan build with --asan (no address-space limit). --emit DIR writes
 * the chosen mutants and a MANIFEST (name, mutation, must fail, fields)
 * into DIR and runs nothing: a replay by hand of one of them is
 * `crucible decode --model DIR/NAME ...`. Exit 0 when every input passes.
 *
 * The mutants are byte for byte those of the Python driver this replaces,
 * in the same order under the same names (ARCH_I.gguf), so the sample
 * (crc32 of the name) and the counts of both agree. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common/malformed_run.h"

/* ---- the GGUF model ------------------------------------------------------- */

enum { U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 };

/* bytes of a scalar of type t; 0 for STR, ARR and unknown types */
static size_t tsize(uint32_t t)
{
	static const size_t sz[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

	return t < 13 ? sz[t] : 0;
}

static int is_signed(uint32_t t) { return t == I8 || t == I16 || t == I32 || t == I64; }

/* a string's bytes, or a scalar's little-endian bytes */
struct blob {
	uint8_t *p;
	size_t n;
};

struct kv {
	struct blob key;
	uint32_t type, atype;
	struct blob val;  /* not ARR */
	struct blob *arr; /* ARR: narr values of atype */
	size_t narr;
};

struct tens {
	struct blob name;
	uint32_t nd;
	uint64_t ne[8];
	uint32_t type;
	uint64_t off;
};

/* a parsed file: metadata, tensor infos, the data blob; gg_write() lays it
 * out again, remembering where each field went (for byte patches) */
struct gguf {
	uint32_t version;
	struct kv *kv;
	size_t nkv;
	struct tens *t;
	size_t nt;
	uint64_t align;
	const uint8_t *data; /* borrowed from the base */
	size_t ndata;
};

/* where gg_write() put each field, per kv and per tensor */
struct at {
	size_t version, n_tensors, n_kv, data;
	size_t *key, *type, *atype, *alen, *val;
	size_t *tname, *ndims, (*ne)[8], *ttype, *toff;
};

static struct blob blob_of(const void *p, size_t n)
{
	struct blob b = { mr_xrealloc(NULL, n), n };

	memcpy(b.p, p, n);
	return b;
}

static struct blob blob_str(const char *s) { return blob_of(s, strlen(s)); }

/* v as the little-endian bytes of a type-t scalar */
static struct blob blob_int(uint32_t t, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return blob_of(b, tsize(t));
}

static struct blob blob_f32(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return blob_int(U32, u);
}

static struct blob blob_f64(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return blob_int(U64, u);
}

static int blob_is(const struct blob *b, const char *s)
{
	return b->n == strlen(s) && !memcmp(b->p, s, b->n);
}

/* the value of an integer scalar, sign-extended for the signed types */
static int64_t int_value(uint32_t t, const struct blob *b)
{
	uint64_t v = 0;
	size_t n = tsize(t);

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)b->p[i] << (8 * i);
	if (is_signed(t) && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ull << (8 * n);
	return (int64_t)v;
}

struct rd {
	const uint8_t *p;
	size_t n, pos;
	const char *file;
};

static const uint8_t *rd_bytes(struct rd *r, size_t n)
{
	const uint8_t *p = r->p + r->pos;

	if (n > r->n - r->pos)
		mr_die("%s: truncated base", r->file);
	r->pos += n;
	return p;
}

static uint64_t rd_u(struct rd *r, size_t n)
{
	const uint8_t *p = rd_bytes(r, n);
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static struct blob rd_str(struct rd *r)
{
	uint64_t n = rd_u(r, 8);

	return blob_of(rd_bytes(r, n), n);
}

static struct blob rd_val(struct rd *r, uint32_t t)
{
	if (t == STR)
		return rd_str(r);
	if (!tsize(t))
		mr_die("%s: a base with a value of type %u", r->file, t);
	return blob_of(rd_bytes(r, tsize(t)), tsize(t));
}

static void gg_parse(struct gguf *g, const uint8_t *raw, size_t n, const char *file)
{
	struct rd r = { raw, n, 0, file };
	uint64_t start;

	memset(g, 0, sizeof *g);
	if (n < 24 || memcmp(raw, "GGUF", 4))
		mr_die("%s: not a GGUF base", file);
	r.pos = 4;
	g->version = (uint32_t)rd_u(&r, 4);
	g->nt = rd_u(&r, 8);
	g->nkv = rd_u(&r, 8);
	g->kv = mr_xrealloc(NULL, sizeof *g->kv * g->nkv);
	g->t = mr_xrealloc(NULL, sizeof *g->t * g->nt);
	g->align = 32;
	for (size_t i = 0; i < g->nkv; i++) {
		struct kv *k = &g->kv[i];

		memset(k, 0, sizeof *k);
		k->key = rd_str(&r);
		k->type = (uint32_t)rd_u(&r, 4);
		if (k->type == ARR) {
			k->atype = (uint32_t)rd_u(&r, 4);
			k->narr = rd_u(&r, 8);
			k->arr = mr_xrealloc(NULL, sizeof *k->arr * k->narr);
			for (size_t j = 0; j < k->narr; j++)
				k->arr[j] = rd_val(&r, k->atype);
		} else {
			k->val = rd_val(&r, k->type);
			if (blob_is(&k->key, "general.alignment"))
				g->align = (uint64_t)int_value(k->type, &k->val);
		}
	}
	for (size_t i = 0; i < g->nt; i++) {
		struct tens *t = &g->t[i];

		t->name = rd_str(&r);
		t->nd = (uint32_t)rd_u(&r, 4);
		if (t->nd > 8)
			mr_die("%s: a base tensor of %u dims", file, t->nd);
		for (uint32_t d = 0; d < t->nd; d++)
			t->ne[d] = rd_u(&r, 8);
		t->type = (uint32_t)rd_u(&r, 4);
		t->off = rd_u(&r, 8);
	}
	start = (r.pos + g->align - 1) / g->align * g->align;
	g->data = raw + (start < n ? start : n);
	g->ndata = start < n ? n - start : 0;
}

static void kv_release(struct kv *k)
{
	free(k->key.p);
	free(k->val.p);
	for (size_t j = 0; j < k->narr; j++)
		free(k->arr[j].p);
	free(k->arr);
}

static void kv_copy(struct kv *d, const struct kv *s)
{
	*d = *s;
	d->key = blob_of(s->key.p, s->key.n);
	d->val = s->val.p ? blob_of(s->val.p, s->val.n) : (struct blob){ NULL, 0 };
	d->arr = mr_xrealloc(NULL, sizeof *d->arr * s->narr);
	for (size_t j = 0; j < s->narr; j++)
		d->arr[j] = blob_of(s->arr[j].p, s->arr[j].n);
}

static struct gguf *gg_clone(const struct gguf *g)
{
	struct gguf *h = mr_xrealloc(NULL, sizeof *h);

	*h = *g;
	h->kv = mr_xrealloc(NULL, sizeof *h->kv * (g->nkv + 1));
	h->t = mr_xrealloc(NULL, sizeof *h->t * (g->nt + 1));
	for (size_t i = 0; i < g->nkv; i++)
		kv_copy(&h->kv[i], &g->kv[i]);
	for (size_t i = 0; i < g->nt; i++) {
		h->t[i] = g->t[i];
		h->t[i].name = blob_of(g->t[i].name.p, g->t[i].name.n);
	}
	return h;
}

static void gg_release(struct gguf *g)
{
	for (size_t i = 0; i < g->nkv; i++)
		kv_release(&g->kv[i]);
	for (size_t i = 0; i < g->nt; i++)
		free(g->t[i].name.p);
	free(g->kv);
	free(g->t);
}

static void gg_free(struct gguf *g)
{
	if (!g)
		return;
	gg_release(g);
	free(g);
}

static struct kv *find_kv(const struct gguf *g, const char *key)
{
	for (size_t i = 0; i < g->nkv; i++)
		if (blob_is(&g->kv[i].key, key))
			return &g->kv[i];
	return NULL;
}

static void put_u(struct mr_sbuf *b, uint64_t v, size_t n)
{
	char c[8];

	for (size_t i = 0; i < n; i++)
		c[i] = (char)(v >> (8 * i));
	mr_sb_addn(b, c, n);
}

static void put_str(struct mr_sbuf *b, const struct blob *s, size_t *at)
{
	if (at)
		*at = b->n;
	put_u(b, s->n, 8);
	mr_sb_addn(b, (const char *)s->p, s->n);
}

static void put_val(struct mr_sbuf *b, uint32_t t, const struct blob *v, size_t *at)
{
	if (t == STR) {
		put_str(b, v, at);
		return;
	}
	if (at)
		*at = b->n;
	mr_sb_addn(b, (const char *)v->p, v->n);
}

/* the file's bytes (*n of them); with at, where each field went */
static uint8_t *gg_write(const struct gguf *g, struct at *at, size_t *n)
{
	struct mr_sbuf b = { 0 };
	size_t pad;

	if (at) {
		at->key = mr_xrealloc(NULL, sizeof(size_t) * (g->nkv + 1));
		at->type = mr_xrealloc(NULL, sizeof(size_t) * (g->nkv + 1));
		at->atype = mr_xrealloc(NULL, sizeof(size_t) * (g->nkv + 1));
		at->alen = mr_xrealloc(NULL, sizeof(size_t) * (g->nkv + 1));
		at->val = mr_xrealloc(NULL, sizeof(size_t) * (g->nkv + 1));
		at->tname = mr_xrealloc(NULL, sizeof(size_t) * (g->nt + 1));
		at->ndims = mr_xrealloc(NULL, sizeof(size_t) * (g->nt + 1));
		at->ne = mr_xrealloc(NULL, sizeof *at->ne * (g->nt + 1));
		at->ttype = mr_xrealloc(NULL, sizeof(size_t) * (g->nt + 1));
		at->toff = mr_xrealloc(NULL, sizeof(size_t) * (g->nt + 1));
	}
	mr_sb_adds(&b, "GGUF");
	if (at)
		at->version = b.n;
	put_u(&b, g->version, 4);
	if (at)
		at->n_tensors = b.n;
	put_u(&b, g->nt, 8);
	if (at)
		at->n_kv = b.n;
	put_u(&b, g->nkv, 8);
	for (size_t i = 0; i < g->nkv; i++) {
		const struct kv *k = &g->kv[i];

		put_str(&b, &k->key, at ? &at->key[i] : NULL);
		if (at)
			at->type[i] = b.n;
		put_u(&b, k->type, 4);
		if (k->type == ARR) {
			if (at)
				at->atype[i] = b.n;
			put_u(&b, k->atype, 4);
			if (at)
				at->alen[i] = b.n;
			put_u(&b, k->narr, 8);
			for (size_t j = 0; j < k->narr; j++)
				put_val(&b, k->atype, &k->arr[j], NULL);
		} else {
			put_val(&b, k->type, &k->val, at ? &at->val[i] : NULL);
		}
	}
	for (size_t i = 0; i < g->nt; i++) {
		const struct tens *t = &g->t[i];

		put_str(&b, &t->name, at ? &at->tname[i] : NULL);
		if (at)
			at->ndims[i] = b.n;
		put_u(&b, t->nd, 4);
		for (uint32_t d = 0; d < t->nd; d++) {
			if (at)
				at->ne[i][d] = b.n;
			put_u(&b, t->ne[d], 8);
		}
		if (at)
			at->ttype[i] = b.n;
		put_u(&b, t->type, 4);
		if (at)
			at->toff[i] = b.n;
		put_u(&b, t->off, 8);
	}
	if (at)
		at->data = b.n;
	pad = (size_t)((g->align - b.n % g->align) % g->align);
	for (size_t i = 0; i < pad; i++)
		mr_sb_addn(&b, "", 1);
	mr_sb_addn(&b, (const char *)g->data, g->ndata);
	*n = b.n;
	if (!b.p)
		b.p = mr_xrealloc(NULL, 1);
	return (uint8_t *)b.p;
}

static void at_release(struct at *a)
{
	free(a->key);
	free(a->type);
	free(a->atype);
	free(a->alen);
	free(a->val);
	free(a->tname);
	free(a->ndims);
	free(a->ne);
	free(a->ttype);
	free(a->toff);
}

/* ---- the mutants -------------------------------------------------------- */

/* one input: a mutant of a base, what a message may name, whether it must
 * be refused */
struct job {
	char *name, *arch, *suffix;
	uint8_t *data;
	size_t n;
	struct mr_strlist fields;
	int must, seq;
};

struct mctx {
	const char *arch;
	int i, full;
	void (*sink)(void *arg, struct job *j); /* takes the job */
	void *arg;
};

static struct mr_strlist FL(const char *s, ...)
{
	struct mr_strlist l = { 0 };
	va_list ap;

	va_start(ap, s);
	for (; s; s = va_arg(ap, const char *))
		mr_sl_add(&l, s);
	va_end(ap);
	return l;
}

static const char *const HDR[] = { "count", "tensor", "key", "truncated", "past the end", "offset" };

static void add_hdr(struct mr_strlist *l)
{
	for (size_t i = 0; i < sizeof HDR / sizeof *HDR; i++)
		mr_sl_add(l, HDR[i]);
}

/* the mutant number m->i: kept (to the sink) when in the sample */
static void emit(struct mctx *m, char *suffix, uint8_t *data, size_t n, struct mr_strlist f, int must)
{
	char *name = mr_fmt("%s_%d.gguf", m->arch, m->i++);
	struct job *j;

	if (!m->full && mr_crc32_str(name) % 6) {
		free(name);
		free(suffix);
		free(data);
		mr_sl_free(&f);
		return;
	}
	j = mr_xrealloc(NULL, sizeof *j);
	*j = (struct job){ name, mr_xstrdup(m->arch), suffix, data, n, f, must, 0 };
	m->sink(m->arg, j);
}

/* raw with the n-byte little-endian v at off */
static uint8_t *patch(const uint8_t *raw, size_t len, size_t off, size_t n, uint64_t v)
{
	uint8_t *b = mr_xrealloc(NULL, len);

	memcpy(b, raw, len);
	for (size_t i = 0; i < n; i++)
		b[off + i] = (uint8_t)(v >> (8 * i));
	return b;
}

static uint8_t *gg_bytes(struct gguf *h, size_t *n)
{
	uint8_t *b = gg_write(h, NULL, n);

	gg_free(h);
	return b;
}

static const uint64_t U32_VALS[] = { 0, 1, 2, 3, 7, 1 << 16, 1 << 24, 1u << 30, (1u << 30) + 1, (1u << 31) - 1,
	1u << 31, 0xffffffffu };
static const uint64_t U64_VALS[] = { 1ull << 32, 1ull << 40, 1ull << 62, (1ull << 63) - 1, 1ull << 63, ~0ull };

/* v fits a type-t scalar (Python's struct.error otherwise) */
static int fits(uint32_t t, int64_t v)
{
	switch (t) {
	case U8: return v >= 0 && v <= 0xff;
	case I8: return v >= -128 && v <= 127;
	case U16: return v >= 0 && v <= 0xffff;
	case I16: return v >= -32768 && v <= 32767;
	case U32: return v >= 0 && v <= 0xffffffffll;
	case I32: return v >= INT32_MIN && v <= INT32_MAX;
	case U64: return v >= 0;
	default: return 1;
	}
}

static void mut_header(struct mctx *m, const struct gguf *g, const uint8_t *raw, size_t len, const struct at *at)
{
	static const uint32_t ver[] = { 0, 2, 4, 1u << 31 };
	const size_t nfix = 6;

	for (size_t i = 0; i < 4; i++)
		emit(m, mr_fmt("version=%u", ver[i]), patch(raw, len, at->version, 4, ver[i]), len, FL("version", NULL), 1);
	{
		uint8_t *b = patch(raw, len, 0, 0, 0);

		memcpy(b, "GGUX", 4);
		emit(m, mr_xstrdup("magic"), b, len, FL("GGUF", "magic", NULL), 1);
	}
	for (int f = 0; f < 2; f++) {
		uint64_t n = f ? g->nkv : g->nt;
		uint64_t vals[10] = { 0, 1, n - 1, n + 1, 1ull << 31, 1ull << 32 };

		for (size_t i = 0; i < 4; i++)
			vals[nfix + i] = U64_VALS[2 + i];
		for (size_t i = 0; i < 10; i++) {
			struct mr_strlist fl = { 0 };

			if (vals[i] == n)
				continue;
			add_hdr(&fl);
			mr_sl_add(&fl, "tensor");
			mr_sl_add(&fl, "key");
			mr_sl_add(&fl, "metadata");
			emit(m, mr_fmt("%s=%llu", f ? "n_kv" : "n_tensors", (unsigned long long)vals[i]),
			     patch(raw, len, f ? at->n_kv : at->n_tensors, 8, vals[i]), len, fl, 1);
		}
	}
	/* truncations: at each section boundary, and mid-way through the data */
	{
		size_t arch_type = 0, cuts[8];

		for (size_t i = 0; i < g->nkv; i++)
			if (blob_is(&g->kv[i].key, "general.architecture"))
				arch_type = at->type[i];
		cuts[0] = 10;
		cuts[1] = 24;
		cuts[2] = arch_type;
		cuts[3] = at->tname[0];
		cuts[4] = at->data;
		cuts[5] = at->data + 1;
		cuts[6] = len / 2;
		cuts[7] = len - 1;
		for (size_t i = 0; i < 8; i += m->full ? 1 : 2) {
			size_t c = cuts[i] < len ? cuts[i] : len;
			struct mr_strlist fl = { 0 };

			add_hdr(&fl);
			mr_sl_add(&fl, "bytes");
			mr_sl_add(&fl, "GGUF");
			/* the last byte may be the last tensor's padding: still whole */
			emit(m, mr_fmt("truncate=%zu", cuts[i]), patch(raw, c, 0, 0, 0), c, fl, c != len - 1);
		}
	}
}

/* every metadata value kept at its type, its type and its key's length */
static void mut_values(struct mctx *m, const struct gguf *g, const uint8_t *raw, size_t len, const struct at *at,
		       const char *A)
{
	static const float f32v[] = { 0.0f, -1.0f, NAN, INFINITY, 1e30f };
	static const char *const f32s[] = { "0.0", "-1.0", "nan", "inf", "1e+30" };
	static const int64_t svals[] = { 0, 1, -1, 2, 1 << 30, INT32_MAX, INT32_MIN };
	static const uint32_t tfull[] = { STR, ARR, 13, F32, U64, U8, BOOL, F64 };
	static const uint64_t klen[] = { 0, 1ull << 30, ~0ull };

	for (size_t ki = 0; ki < g->nkv; ki++) {
		const struct kv *k = &g->kv[ki];
		char *key = strndup((const char *)k->key.p, k->key.n);
		uint32_t t = k->type;

		if (t == U32 || t == I32 || t == U64 || t == I64 || t == U16 || t == I16 || t == U8 || t == I8) {
			if (m->full || !strncmp(key, A, strlen(A)) || strstr(key, "token_id")) {
				int64_t vals[32];
				size_t nv = 0;
				int64_t cur = int_value(t, &k->val);

				if (t == U32 || t == U64)
					for (size_t i = 0; i < 12; i++)
						vals[nv++] = (int64_t)U32_VALS[i];
				else
					for (size_t i = 0; i < 7; i++)
						vals[nv++] = svals[i];
				if ((t == U64 || t == I64) && m->full)
					for (size_t i = 0; i < 3; i++)
						vals[nv++] = (int64_t)U64_VALS[i];
				for (size_t i = 0; i < nv; i++) {
					if (vals[i] == cur || !fits(t, vals[i]))
						continue;
					emit(m, mr_fmt("%s=%lld", key, (long long)vals[i]),
					     patch(raw, len, at->val[ki], tsize(t), (uint64_t)vals[i]), len, FL(key, NULL), 0);
				}
			}
		} else if (t == F32) {
			for (size_t i = 0; i < 5; i++) {
				uint32_t u;

				memcpy(&u, &f32v[i], 4);
				emit(m, mr_fmt("%s=%s", key, f32s[i]), patch(raw, len, at->val[ki], 4, u), len, FL(key, NULL), 0);
			}
		} else if (t == BOOL) {
			emit(m, mr_fmt("%s=7", key), patch(raw, len, at->val[ki], 1, 7), len, FL(key, NULL), 0);
		} else if (t == STR) {
			uint64_t n = k->val.n, v[] = { n + 1, n + 1000, 1ull << 32, (1ull << 63) - 1, ~0ull };

			for (size_t i = 0; i < 5; i++) {
				struct mr_strlist fl = FL(key, NULL);

				add_hdr(&fl);
				emit(m, mr_fmt("strlen %s=%llu", key, (unsigned long long)v[i]),
				     patch(raw, len, at->val[ki], 8, v[i]), len, fl, 1);
			}
		} else if (t == ARR) {
			int64_t n = (int64_t)k->narr;
			int64_t vf[] = { 0, 1, n - 1, n + 1, 1ll << 31, -1 }, vq[] = { 0, n + 1, -1 };
			const int64_t *v = m->full ? vf : vq;
			uint32_t at4[] = { ARR, 13, k->atype != STR ? STR : U32, 1u << 31 };

			for (size_t i = 0; i < (m->full ? 6u : 3u); i++) {
				struct mr_strlist fl = FL(key, NULL);
				/* the last value is 2^64-1: more than any n */
				int must = v[i] == -1 && i == (m->full ? 5u : 2u) ? 1 : v[i] > n;
				char *s = v[i] == -1 && must ? mr_fmt("arrlen %s=18446744073709551615", key)
							    : mr_fmt("arrlen %s=%lld", key, (long long)v[i]);

				add_hdr(&fl);
				emit(m, s, patch(raw, len, at->alen[ki], 8, (uint64_t)v[i]), len, fl, must);
			}
			for (size_t i = 0; i < 4; i++) {
				struct mr_strlist fl = FL(key, NULL);

				add_hdr(&fl);
				emit(m, mr_fmt("arrtype %s=%u", key, at4[i]), patch(raw, len, at->atype[ki], 4, at4[i]), len,
				     fl, 1);
			}
		}
		/* the key's type changed under its value */
		for (size_t i = 0; i < (m->full ? 8u : 3u); i++) {
			struct mr_strlist fl;

			if (tfull[i] == t)
				continue;
			fl = FL(key, NULL);
			add_hdr(&fl);
			mr_sl_add(&fl, "general.architecture");
			mr_sl_add(&fl, "tokenizer");
			emit(m, mr_fmt("type %s=%u", key, tfull[i]), patch(raw, len, at->type[ki], 4, tfull[i]), len, fl, 0);
		}
		/* the key's own length */
		for (size_t i = 0; i < 3; i++) {
			struct mr_strlist fl = { 0 };

			add_hdr(&fl);
			mr_sl_add(&fl, "general.architecture");
			mr_sl_add(&fl, key);
			emit(m, mr_fmt("keylen %s=%llu", key, (unsigned long long)klen[i]),
			     patch(raw, len, at->key[ki], 8, klen[i]), len, fl, klen[i] != 0);
		}
		free(key);
	}
}

/* set key (appended when missing) to a scalar of type t */
static void set_kv(struct gguf *h, const char *key, uint32_t t, struct blob v)
{
	struct kv *k = find_kv(h, key);

	if (!k) {
		k = &h->kv[h->nkv++];
		memset(k, 0, sizeof *k);
		k->key = blob_str(key);
	} else {
		struct blob kb = k->key;

		k->key.p = NULL;
		kv_release(k);
		memset(k, 0, sizeof *k);
		k->key = kb;
	}
	k->type = t;
	k->val = v;
}

/* keys set to values of another type, and removed */
static void mut_retype(struct mctx *m, const struct gguf *g, const char *A)
{
	static const uint32_t nt[] = { STR, I32, I64, U64, F32, F64, ARR };

	for (size_t ki = 0; ki < g->nkv; ki++) {
		char *key = strndup((const char *)g->kv[ki].key.p, g->kv[ki].key.n);
		struct gguf *h;
		size_t n;
		uint8_t *b;

		if (!m->full && strncmp(key, A, strlen(A))) {
			free(key);
			continue;
		}
		for (size_t i = 0; i < 7; i++) {
			struct blob v;

			if (nt[i] == g->kv[ki].type)
				continue;
			h = gg_clone(g);
			switch (nt[i]) {
			case STR: v = blob_str("x"); break;
			case I32: v = blob_int(I32, (uint64_t)-1); break;
			case I64: v = blob_int(I64, (uint64_t)-(1ll << 40)); break;
			case U64: v = blob_int(U64, ~0ull); break;
			case F32: v = blob_f32(2.5f); break;
			case F64: v = blob_f64(1e300); break;
			default: v = (struct blob){ NULL, 0 }; break;
			}
			set_kv(h, key, nt[i], v);
			if (nt[i] == ARR) {
				struct kv *k = find_kv(h, key);

				k->atype = U32;
				k->narr = 2;
				k->arr = mr_xrealloc(NULL, sizeof *k->arr * 2);
				k->arr[0] = blob_int(U32, 1);
				k->arr[1] = blob_int(U32, 2);
			}
			b = gg_bytes(h, &n);
			emit(m, mr_fmt("retype %s=%u", key, nt[i]), b, n, FL(key, "general.architecture", NULL), 0);
		}
		h = gg_clone(g);
		kv_release(&h->kv[ki]);
		memmove(&h->kv[ki], &h->kv[ki + 1], sizeof *h->kv * (h->nkv - ki - 1));
		h->nkv--;
		b = gg_bytes(h, &n);
		emit(m, mr_fmt("-%s", key), b, n, FL(key, "tokenizer", "tensor", NULL), 0);
		free(key);
	}
}

/* keys a model may have, added with values out of range */
static void mut_extra(struct mctx *m, const struct gguf *g, const char *A)
{
	struct ex {
		const char *key; /* after A when a[0] is '.' */
		uint32_t t;
		uint64_t u;
		float f;
		const char *s, *repr;
	};
#define XU(k, v) { k, U32, v, 0, NULL, #v }
#define XF(k, v, r) { k, F32, 0, v, NULL, r }
#define XS(k, v, r) { k, STR, 0, 0, v, r }
	static const struct ex ex[] = {
		XU("general.alignment", 0), XU("general.alignment", 3), { "general.alignment", U32, 1u << 20, 0, NULL, "1048576" },
		{ "general.alignment", U32, 0xffffffffu, 0, NULL, "4294967295" },
		XU(".context_length", 0), XU(".context_length", 1), XU(".context_length", 2),
		{ ".context_length", U32, 1u << 31, 0, NULL, "2147483648" },
		XU(".rope.dimension_count", 0), XU(".rope.dimension_count", 1), XU(".rope.dimension_count", 3),
		{ ".rope.dimension_count", U32, 1u << 20, 0, NULL, "1048576" },
		XU(".attention.sliding_window", 0), XU(".attention.sliding_window", 1),
		{ ".attention.sliding_window", U32, (1u << 31) - 1, 0, NULL, "2147483647" },
		XU(".attention.sliding_window_pattern", 0), XU(".attention.sliding_window_pattern", 1),
		{ ".attention.sliding_window_pattern", U32, 1u << 30, 0, NULL, "1073741824" },
		XU(".attention.key_length", 0), XU(".attention.key_length", 1), XU(".attention.key_length", 2),
		XU(".attention.key_length", 6), { ".attention.key_length", U32, 1u << 30, 0, NULL, "1073741824" },
		XU(".attention.value_length", 0), XU(".attention.value_length", 32),
		{ ".attention.value_length", U32, 1u << 30, 0, NULL, "1073741824" },
		XU(".expert_count", 0), XU(".expert_count", 1), XU(".expert_count", 5),
		{ ".expert_count", U32, 1u << 30, 0, NULL, "1073741824" },
		XU(".expert_used_count", 0), XU(".expert_used_count", 1), XU(".expert_used_count", 5),
		{ ".expert_used_count", U32, 1u << 30, 0, NULL, "1073741824" },
		XU(".expert_feed_forward_length", 0), XU(".expert_feed_forward_length", 1),
		XU(".expert_feed_forward_length", 5), { ".expert_feed_forward_length", U32, 1u << 30, 0, NULL, "1073741824" },
		XS(".rope.scaling.type", "yarn", "'yarn'"), XS(".rope.scaling.type", "", "''"),
		XS(".rope.scaling.type", "linear", "'linear'"),
		XF(".rope.scaling.factor", 0.0f, "0.0"), XF(".rope.scaling.factor", -1.0f, "-1.0"),
		XF(".rope.scaling.factor", NAN, "nan"), XF(".final_logit_softcapping", 30.0f, "30.0"),
		XS("tokenizer.ggml.model", "llama", "'llama'"), XS("tokenizer.ggml.model", "bert", "'bert'"),
		XS("tokenizer.ggml.model", "", "''"), XS("tokenizer.ggml.model", "gpt2", "'gpt2'"),
		{ "tokenizer.ggml.bos_token_id", U32, 1u << 20, 0, NULL, "1048576" },
		{ "tokenizer.ggml.bos_token_id", U32, 0xffffffffu, 0, NULL, "4294967295" },
		{ "tokenizer.ggml.eos_token_id", U32, 1u << 20, 0, NULL, "1048576" },
		{ "tokenizer.ggml.eos_token_id", U32, 0xffffffffu, 0, NULL, "4294967295" },
		{ "tokenizer.ggml.padding_token_id", U32, 1u << 20, 0, NULL, "1048576" },
		{ "tokenizer.ggml.padding_token_id", U32, 0xffffffffu, 0, NULL, "4294967295" },
		{ "tokenizer.ggml.unknown_token_id", U32, 1u << 20, 0, NULL, "1048576" },
		{ "tokenizer.ggml.unknown_token_id", U32, 0xffffffffu, 0, NULL, "4294967295" },
	};
#undef XU
#undef XF
#undef XS
	for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
		char *key = ex[i].key[0] == '.' ? mr_fmt("%.*s%s", (int)strlen(A) - 1, A, ex[i].key) : mr_xstrdup(ex[i].key);
		struct gguf *h = gg_clone(g);
		struct blob v = ex[i].t == U32 ? blob_int(U32, ex[i].u) : ex[i].t == F32 ? blob_f32(ex[i].f)
									   : blob_str(ex[i].s);
		size_t n;
		uint8_t *b;

		set_kv(h, key, ex[i].t, v);
		b = gg_bytes(h, &n);
		emit(m, mr_fmt("add %s=%s", key, ex[i].repr), b, n, FL(key, strrchr(key, '.') + 1, NULL), 0);
		free(key);
	}
}

/* Python's len(x[:n]) for a list of len elements */
static size_t py_slice(size_t len, int64_t n)
{
	if (n < 0)
		return (int64_t)len + n > 0 ? (size_t)((int64_t)len + n) : 0;
	return (size_t)n < len ? (size_t)n : len;
}

/* the array of k: its first keep values, then copies of its first value
 * up to n (Python's (v + v[:1] * n)[:n]) */
static void arr_resize(struct kv *k, size_t n)
{
	size_t old = k->narr;

	if (n < old) {
		for (size_t j = n; j < old; j++)
			free(k->arr[j].p);
	} else if (old) {
		k->arr = mr_xrealloc(k->arr, sizeof *k->arr * n);
		for (size_t j = old; j < n; j++)
			k->arr[j] = blob_of(k->arr[0].p, k->arr[0].n);
	} else {
		n = 0;
	}
	k->narr = n;
}

/* the tokenizer against the embedding: more tokens, fewer, and its
 * arrays of other lengths; odd entries; the chat template */
static void mut_tokenizer(struct mctx *m, const struct gguf *g)
{
	const struct kv *toks = find_kv(g, "tokenizer.ggml.tokens");
	struct gguf *h;
	uint8_t *b;
	size_t n;

	if (toks) {
		size_t ntok = toks->narr, ns[] = { 0, 1, ntok + 1, ntok * 4 };
		static const char *const other2[] = { "tokenizer.ggml.token_type", "tokenizer.ggml.scores" };
		static const char *const other3[] = { "tokenizer.ggml.token_type", "tokenizer.ggml.merges" };

		for (size_t i = 0; i < 4; i++) {
			struct kv *tk;

			h = gg_clone(g);
			tk = find_kv(h, "tokenizer.ggml.tokens");
			if (ns[i] > ntok) {
				tk->arr = mr_xrealloc(tk->arr, sizeof *tk->arr * ns[i]);
				for (size_t j = ntok; j < ns[i]; j++) {
					char *s = mr_fmt("<x%zu>", j - ntok);

					tk->arr[j] = blob_str(s);
					free(s);
				}
				tk->narr = ns[i];
			} else {
				arr_resize(tk, ns[i]);
			}
			for (size_t o = 0; o < 2; o++) {
				struct kv *ok = find_kv(h, other2[o]);

				if (ok)
					arr_resize(ok, ns[i]);
			}
			b = gg_bytes(h, &n);
			emit(m, mr_fmt("tokens=%zu", ns[i]), b, n, FL("tokenizer.ggml.tokens", "token_embd", NULL),
			     ns[i] > ntok || ns[i] < 3);
		}
		for (size_t o = 0; o < 2; o++) {
			const struct kv *ok = find_kv(g, other3[o]);
			int64_t L;

			if (!ok)
				continue;
			L = (int64_t)ok->narr;
			{
				int64_t vs[] = { 0, 1, L - 1, L + 1 };

				for (size_t i = 0; i < 4; i++) {
					struct kv *k2;

					h = gg_clone(g);
					k2 = find_kv(h, other3[o]);
					arr_resize(k2, py_slice(k2->narr + (k2->narr ? 1 : 0), vs[i]));
					b = gg_bytes(h, &n);
					emit(m, mr_fmt("%s len=%lld", other3[o], (long long)vs[i]), b, n, FL(other3[o], NULL),
					     o == 0 && vs[i] != (int64_t)ntok);
				}
			}
		}
		if (find_kv(g, "tokenizer.ggml.token_type")) {
			static const int64_t tv[] = { -1, 7, 1 << 30 };

			for (size_t i = 0; i < 3; i++) {
				struct kv *k2;

				h = gg_clone(g);
				k2 = find_kv(h, "tokenizer.ggml.token_type");
				free(k2->arr[0].p);
				k2->arr[0] = blob_int(k2->atype, (uint64_t)tv[i]);
				b = gg_bytes(h, &n);
				emit(m, mr_fmt("token_type[0]=%lld", (long long)tv[i]), b, n,
				     FL("tokenizer.ggml.token_type", NULL), 0);
			}
		}
		if (find_kv(g, "tokenizer.ggml.merges")) {
			static const char *const mv[] = { "", "a", "a b c", " ", "\xc3\xbf\xc3\xbe b", "zz yy" };

			for (size_t i = 0; i < 6; i++) {
				struct kv *k2;

				h = gg_clone(g);
				k2 = find_kv(h, "tokenizer.ggml.merges");
				free(k2->arr[0].p);
				k2->arr[0] = blob_str(mv[i]);
				b = gg_bytes(h, &n);
				emit(m, mr_fmt("merges[0]='%s'", mv[i]), b, n, FL("tokenizer.ggml.merges", NULL), 0);
			}
		}
		{
			char *a70k = mr_xrealloc(NULL, 70001), *im3 = mr_fmt("%s%s%s", "<|im_start|>", "<|im_start|>",
								 "<|im_start|>");
			struct blob tv[4] = { { (uint8_t *)"", 0 }, { (uint8_t *)"", 1 }, { (uint8_t *)a70k, 70000 },
					      { (uint8_t *)im3, strlen(im3) } };
			static const char *const tr[] = { "''", "'\\x00'", "'aaaaaaaaaaaa'", "'<|im_start|>'" };

			memset(a70k, 'a', 70000);
			a70k[70000] = 0;
			for (size_t i = 0; i < 4; i++) {
				struct kv *k2;

				h = gg_clone(g);
				k2 = find_kv(h, "tokenizer.ggml.tokens");
				free(k2->arr[ntok / 2].p);
				k2->arr[ntok / 2] = blob_of(tv[i].p, tv[i].n);
				b = gg_bytes(h, &n);
				emit(m, mr_fmt("tokens[n/2]=%s", tr[i]), b, n, FL("tokenizer.ggml.tokens", NULL), 0);
			}
			free(a70k);
			free(im3);
		}
	}
	/* the chat template */
	{
		char *br = mr_xrealloc(NULL, 2001), *ifs = mr_xrealloc(NULL, 200 * 10 + 1);
		const char *cv[4];
		static const char *const cr[] = { "'{% for %}'", "'{{{{{{{{{{{{'", "'{% if x %}{%'", "''" };

		memset(br, '{', 2000);
		br[2000] = 0;
		ifs[0] = 0;
		for (int i = 0; i < 200; i++)
			strcat(ifs + i * 10, "{% if x %}");
		cv[0] = "{% for %}";
		cv[1] = br;
		cv[2] = ifs;
		cv[3] = "";
		for (size_t i = 0; i < 4; i++) {
			struct kv *k0;

			h = gg_clone(g);
			k0 = find_kv(h, "tokenizer.chat_template");
			if (!k0) {
				gg_free(h);
				continue;
			}
			free(k0->val.p);
			k0->val = blob_str(cv[i]);
			b = gg_bytes(h, &n);
			emit(m, mr_fmt("chat_template=%s", cr[i]), b, n, FL("tokenizer.chat_template", "template", NULL), 0);
		}
		free(br);
		free(ifs);
	}
}

/* every tensor: dims, type, offset, name; a tensor twice, a layer past
 * block_count */
static void mut_tensors(struct mctx *m, const struct gguf *g, const uint8_t *raw, size_t len, const struct at *at)
{
	struct gguf *h;
	uint8_t *b;
	size_t n;

	for (size_t ti = 0; ti < g->nt; ti++) {
		const struct tens *t = &g->t[ti];
		char *nm = strndup((const char *)t->name.p, t->name.n);

		if (!m->full && ti % 5) {
			free(nm);
			continue;
		}
		for (uint32_t d = 0; d < t->nd; d++) {
			uint64_t e = t->ne[d];
			uint64_t vf[] = { 0, 1, 2, e + 1, e * 2, 1ull << 31, 1ull << 32, 1ull << 40, 1ull << 41, 1ull << 63,
					  ~0ull };
			uint64_t vq[] = { 0, e * 2, 1ull << 40, ~0ull };
			const uint64_t *v = m->full ? vf : vq;

			for (size_t i = 0; i < (m->full ? 11u : 4u); i++) {
				if (v[i] == e)
					continue;
				emit(m, mr_fmt("%s ne[%u]=%llu", nm, d, (unsigned long long)v[i]),
				     patch(raw, len, at->ne[ti][d], 8, v[i]), len, FL(nm, NULL), 1);
			}
		}
		{
			static const uint32_t tf[] = { 0, 3, 5, 16, 31, 39, 40, 1u << 31, 0xffffffffu }, tq[] = { 4, 39, 0xffffffffu };
			const uint32_t *v = m->full ? tf : tq;

			for (size_t i = 0; i < (m->full ? 9u : 3u); i++) {
				if (v[i] == t->type)
					continue;
				emit(m, mr_fmt("%s type=%u", nm, v[i]), patch(raw, len, at->ttype[ti], 4, v[i]), len, FL(nm, NULL), 0);
			}
		}
		{
			uint64_t v[] = { t->off + 1, t->off + g->align, g->ndata, 1ull << 63, 0 - g->align };

			for (size_t i = 0; i < 5; i++)
				emit(m, mr_fmt("%s offset=%llu", nm, (unsigned long long)v[i]), patch(raw, len, at->toff[ti], 8, v[i]),
				     len, FL(nm, NULL), v[i] != t->off + g->align);
		}
		{
			static const uint32_t v[] = { 0, 3, 5, 0xffffffffu };

			for (size_t i = 0; i < 4; i++) {
				struct mr_strlist fl = FL(nm, NULL);

				if (v[i] == t->nd) {
					mr_sl_free(&fl);
					continue;
				}
				add_hdr(&fl);
				emit(m, mr_fmt("%s n_dims=%u", nm, v[i]), patch(raw, len, at->ndims[ti], 4, v[i]), len, fl, 1);
			}
		}
		{
			static const uint64_t v[] = { 0, 1ull << 30, ~0ull };

			for (size_t i = 0; i < 3; i++) {
				struct mr_strlist fl = { 0 };

				add_hdr(&fl);
				mr_sl_add(&fl, "tensor");
				emit(m, mr_fmt("%s namelen=%llu", nm, (unsigned long long)v[i]), patch(raw, len, at->tname[ti], 8, v[i]),
				     len, fl, 1);
			}
		}
		if (m->full || ti == 0) {
			h = gg_clone(g);
			free(h->t[ti].name.p);
			memmove(&h->t[ti], &h->t[ti + 1], sizeof *h->t * (h->nt - ti - 1));
			h->nt--;
			b = gg_bytes(h, &n);
			emit(m, mr_fmt("-%s", nm), b, n, FL(nm, "block_count", "offset", "tensor count", NULL), 1);
			h = gg_clone(g);
			h->t[ti].off = ti ? h->t[0].off : h->t[h->nt - 1].off;
			b = gg_bytes(h, &n);
			emit(m, mr_fmt("%s aliases", nm), b, n, FL(nm, NULL), 0);
		}
		free(nm);
	}
	{
		char *n1 = strndup((const char *)g->t[1].name.p, g->t[1].name.n);

		h = gg_clone(g);
		h->t[h->nt] = g->t[1];
		h->t[h->nt].name = blob_of(g->t[1].name.p, g->t[1].name.n);
		h->nt++;
		b = gg_bytes(h, &n);
		emit(m, mr_xstrdup("duplicate tensor"), b, n, FL(n1, NULL), 1);
		free(n1);
	}
	h = gg_clone(g);
	h->t[h->nt] = (struct tens){ blob_str("blk.99.attn_norm.weight"), 1, { g->t[g->nt - 1].ne[0] }, 0, 0 };
	h->nt++;
	b = gg_bytes(h, &n);
	emit(m, mr_xstrdup("blk.99"), b, n, FL("block_count", "blk.99", NULL), 1);
}

/* every mutant of the base g of arch, in the Python driver's order */
static void mutations(struct mctx *m, const struct gguf *g)
{
	struct at at;
	size_t len;
	uint8_t *raw = gg_write(g, &at, &len);
	char *A = mr_fmt("%s.", m->arch);

	if (g->nt < 2)
		mr_die("%s: a base of fewer than 2 tensors", m->arch);
	mut_header(m, g, raw, len, &at);
	mut_values(m, g, raw, len, &at, A);
	mut_retype(m, g, A);
	mut_extra(m, g, A);
	mut_tokenizer(m, g);
	mut_tensors(m, g, raw, len, &at);
	free(A);
	free(raw);
	at_release(&at);
}

/* ---- running them --------------------------------------------------------- */

struct result {
	int seq, hung, rc;
	const char *cmd; /* decode, generate */
	char *name, *arch, *suffix, *verdict, *out;
	size_t outn;
};

struct opts {
	const char *crucible, *work, *emit;
	char **env;
	double timeout;
	rlim_t rlimit;
};

/* the mutants flow through a queue of 2 * jobs (as the Python driver
 * keeps 2 * jobs in flight), the results into one list */
struct pool {
	const struct opts *o;
	struct mr_pool run;
	pthread_mutex_t mu; /* on res, nres */
	struct result *res;
	int nres;
	int count_only, n_jobs;
	FILE *manifest;
};

static char *judge(int rc, int hung, const char *out, size_t n, const char *fname, const struct mr_strlist *f, int must)
{
	char *v = mr_judge_crash(rc, hung, out, n);

	if (v)
		return v;
	if (rc == 0 && !must)
		return NULL;
	if (rc != 2)
		return mr_fmt("exit %d", rc);
	return mr_judge_names(out, n, fname, f, " / ", 4);
}

static void add_result(struct pool *p, const struct job *j, const char *cmd, int rc, int hung, char *v, char *out,
		       size_t n)
{
	struct result *r;

	pthread_mutex_lock(&p->mu);
	p->res = mr_xrealloc(p->res, sizeof *p->res * (size_t)(p->nres + 1));
	r = &p->res[p->nres++];
	*r = (struct result){ j->seq, hung, hung ? 0 : rc, cmd, mr_xstrdup(j->name), mr_xstrdup(j->arch), mr_xstrdup(j->suffix),
			      v, out, n };
	pthread_mutex_unlock(&p->mu);
}

/* decode on the mutant; the chat path and the candidate writer on a
 * sample of those that load */
static void one(struct pool *p, struct job *j)
{
	const struct opts *o = p->o;
	char *path = mr_fmt("%s/m/%s", o->work, j->name), *out, *v;
	char *argv[] = { (char *)o->crucible, "decode", "--model", path, "--prompt", "hi <|im_start|>", "--max-tokens",
			 "2", "--device", "cpu", "--threads", "1", NULL };
	size_t n;
	int rc, hung;

	mr_write_file(path, (const char *)j->data, j->n);
	rc = mr_run(argv, o->env, o->timeout, o->rlimit, &out, &n, &hung);
	v = judge(rc, hung, out, n, j->name, &j->fields, j->must);
	add_result(p, j, "decode", rc, hung, v, out, n);
	if (!hung && rc == 0 && mr_crc32_str(j->name) % 16 == 0) {
		char *od = mr_fmt("%s.out", path);
		char *argv2[] = { (char *)o->crucible, "generate", "--model", path, "--tasks", "smoke/relu", "--n", "1",
				  "--max-tokens", "4", "--device", "cpu", "--threads", "1", "--out", od, NULL };
		int rc2 = mr_run(argv2, o->env, o->timeout, o->rlimit, &out, &n, &hung);

		v = judge(rc2, hung, out, n, j->name, &j->fields, 0);
		add_result(p, j, "generate", rc2, hung, v, out, n);
		mr_rm_rf(od);
		free(od);
	}
	unlink(path);
	free(path);
}

static void job_free(struct job *j)
{
	free(j->name);
	free(j->arch);
	free(j->suffix);
	free(j->data);
	mr_sl_free(&j->fields);
	free(j);
}

/* one mutant on a thread of the pool */
static void run_job(void *arg, void *item)
{
	one(arg, item);
	job_free(item);
}

/* the sink of the generator: counted, emitted, or queued */
static void sink(void *arg, struct job *j)
{
	struct pool *p = arg;

	j->seq = p->n_jobs++;
	if (p->count_only) {
		job_free(j);
		return;
	}
	if (p->o->emit) {
		char *path = mr_fmt("%s/%s", p->o->emit, j->name);

		mr_write_file(path, (const char *)j->data, j->n);
		fprintf(p->manifest, "%s\t%s\t%d\t", j->name, j->suffix, j->must);
		for (int i = 0; i < j->fields.n; i++)
			fprintf(p->manifest, "%s%s", i ? "|" : "", j->fields.v[i]);
		fputc('\n', p->manifest);
		free(path);
		job_free(j);
		return;
	}
	mr_pool_put(&p->run, j);
}

static int cmp_result(const void *a, const void *b)
{
	const struct result *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return strcmp(x->cmd, y->cmd);
}

/* the bases from mk_gguf_bases WORK */
static void make_bases(const char *mk, const char *work)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		mr_die("fork: %s", strerror(errno));
	if (pid == 0) {
		execl(mk, mk, work, (char *)NULL);
		fprintf(stderr, "malformed_gguf: cannot run %s: %s\n", mk, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		mr_die("%s %s failed", mk, work);
}

static void usage(void)
{
	fprintf(stderr, "usage: malformed_gguf CRUCIBLE MK_GGUF_BASES [--full] [--jobs N] [--timeout S] [--asan]\n"
			"                      [--report CSV] [--keep DIR] [--arch A,B] [--count] [--emit DIR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *pos[2] = { NULL, NULL }, *arch_f = "", *emit_dir = NULL;
	struct mr_args ar = { .jobs = 2, .timeout = 60 };
	int npos = 0, bad_names = 0, n_ok0 = 0, nfiles;
	char *work, **env, **files, *mdir;
	struct opts o;
	struct pool p;

	mr_set_prog("malformed_gguf");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (mr_args_opt(&ar, argc, argv, &i, usage) || mr_opt(argc, argv, &i, "--arch", &arch_f, usage) ||
		    mr_opt(argc, argv, &i, "--emit", &emit_dir, usage))
			continue;
		if (mr_bad_arg(a) || npos == 2)
			usage();
		pos[npos++] = a;
	}
	if (npos != 2)
		usage();
	work = mr_workdir(ar.keep, "crucible-badgguf");
	env = mr_san_env();
	make_bases(pos[1], work);
	files = mr_list_dir(work, &nfiles);
	mdir = mr_fmt("%s/m", work);
	mr_mkdir_p(mdir);
	o = (struct opts){ pos[0], work, emit_dir, env, ar.timeout, mr_as_limit(ar.asan) };
	memset(&p, 0, sizeof p);
	p.o = &o;
	pthread_mutex_init(&p.mu, NULL);
	p.count_only = ar.count;
	if (emit_dir) {
		char *mf = mr_fmt("%s/MANIFEST", emit_dir);

		mr_mkdir_p(emit_dir);
		p.manifest = fopen(mf, "w");
		if (!p.manifest)
			mr_die("cannot write %s", mf);
		free(mf);
	}
	mr_pool_start(&p.run, ar.count || emit_dir ? 0 : ar.jobs, 2 * ar.jobs, run_job, &p);
	for (int fi = 0; fi < nfiles; fi++) {
		size_t fl = strlen(files[fi]), len;
		char *arch, *path;
		uint8_t *raw;
		struct gguf g;
		struct mctx m;

		if (fl < 5 || strcmp(files[fi] + fl - 5, ".gguf"))
			continue;
		arch = strndup(files[fi], fl - 5);
		if (*arch_f && !mr_in_list(arch_f, arch)) {
			free(arch);
			continue;
		}
		path = mr_fmt("%s/%s", work, files[fi]);
		raw = (uint8_t *)mr_read_file(path, &len);
		gg_parse(&g, raw, len, path);
		m = (struct mctx){ arch, 0, ar.full, sink, &p };
		mutations(&m, &g);
		gg_release(&g);
		free(raw);
		free(path);
		free(arch);
	}
	mr_pool_finish(&p.run);
	if (p.manifest)
		fclose(p.manifest);
	if (ar.count || emit_dir) {
		printf("%d inputs\n", p.n_jobs);
		goto done;
	}
	qsort(p.res, (size_t)p.nres, sizeof *p.res, cmp_result);
	for (int i = 0; i < p.nres; i++) {
		struct result *r = &p.res[i];
		char *msg;

		if (r->cmd[0] == 'd' && !r->hung && r->rc == 0)
			n_ok0++;
		if (!r->verdict)
			continue;
		msg = mr_squash_tail(r->out, r->outn, 400);
		printf("FAIL %s [%s: %s] %s: %s -- %s\n", r->name, r->arch, r->suffix, r->cmd, r->verdict, msg);
		free(msg);
		/* failed names: a name's results are adjacent once sorted */
		if (!(i > 0 && p.res[i - 1].seq == r->seq && p.res[i - 1].verdict))
			bad_names++;
	}
	if (ar.report) {
		FILE *f = mr_report_open(ar.report, "name,arch,mutation,command,rc,verdict,message\r\n");

		for (int i = 0; i < p.nres; i++) {
			const struct result *r = &p.res[i];
			const char *id[3] = { r->name, r->arch, r->suffix };

			mr_report_row(f, id, r->cmd, r->rc, r->hung, r->verdict, r->out, r->outn);
		}
		fclose(f);
	}
	printf("gguf: %d inputs, %d failed, %d accepted as valid\n", p.n_jobs, bad_names, n_ok0);
done:
	fflush(stdout);
	if (!ar.keep)
		mr_rm_rf(work);
	for (int i = 0; i < p.nres; i++) {
		free(p.res[i].name);
		free(p.res[i].arch);
		free(p.res[i].suffix);
		free(p.res[i].verdict);
		free(p.res[i].out);
	}
	free(p.res);
	pthread_mutex_destroy(&p.mu);
	for (int i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	free(mdir);
	free(work);
	mr_env_free(env);
	return bad_names ? 1 : 0;
}
