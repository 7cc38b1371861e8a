/* tok_fixture.c — synthetic vocabulary builder and encode/decode checks
 * shared by the tokenizer tests (see tok_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tok_fixture.h"

void vb_init(struct vb *b, const char *model, const char *pre)
{
	memset(b, 0, sizeof *b);
	b->v.model = model;
	b->v.pre = pre;
	b->v.bos_id = b->v.eos_id = b->v.eot_id = b->v.eom_id = b->v.pad_id = b->v.unk_id = -1;
	b->v.add_bos = b->v.add_eos = -1;
}

void vb_release(struct vb *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->tok[i]);
	for (size_t i = 0; i < b->nm; i++)
		free(b->mrg[i]);
	free(b->tok);
	free(b->len);
	free(b->type);
	free(b->score);
	free(b->mrg);
	free(b->mlen);
	memset(b, 0, sizeof *b);
}

int32_t vb_tok_n(struct vb *b, const char *text, size_t n, int32_t type, float score)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 512;
		b->tok = realloc(b->tok, b->cap * sizeof *b->tok);
		b->len = realloc(b->len, b->cap * sizeof *b->len);
		b->type = realloc(b->type, b->cap * sizeof *b->type);
		b->score = realloc(b->score, b->cap * sizeof *b->score);
		assert_non_null(b->tok);
		assert_non_null(b->len);
		assert_non_null(b->type);
		assert_non_null(b->score);
	}
	b->tok[b->n] = malloc(n + 1);
	assert_non_null(b->tok[b->n]);
	memcpy(b->tok[b->n], text, n);
	b->tok[b->n][n] = '\0';
	b->len[b->n] = n;
	b->type[b->n] = type;
	b->score[b->n] = score;
	return (int32_t)b->n++;
}

int32_t vb_tok(struct vb *b, const char *text, int32_t type, float score)
{
	return vb_tok_n(b, text, strlen(text), type, score);
}

void vb_merge(struct vb *b, const char *a, const char *c)
{
	size_t n = strlen(a) + 1 + strlen(c);

	if (b->nm == b->mcap) {
		b->mcap = b->mcap ? 2 * b->mcap : 512;
		b->mrg = realloc(b->mrg, b->mcap * sizeof *b->mrg);
		b->mlen = realloc(b->mlen, b->mcap * sizeof *b->mlen);
		assert_non_null(b->mrg);
		assert_non_null(b->mlen);
	}
	b->mrg[b->nm] = malloc(n + 1);
	assert_non_null(b->mrg[b->nm]);
	snprintf(b->mrg[b->nm], n + 1, "%s %s", a, c);
	b->mlen[b->nm++] = n;
}

/* GPT-2's bytes_to_unicode(): printable Latin-1 bytes keep their code point,
 * the rest get 256, 257, ... in byte order. */
static uint32_t bl_cp(unsigned char c)
{
	unsigned n = 0;

	if ((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)
		return c;
	for (unsigned i = 0; i < c; i++)
		if (!((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE))
			n++;
	return 256 + n;
}

static size_t put_utf8(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xC0 | (cp >> 6)); /* byte-level code points are < 0x800 */
	o[1] = (char)(0x80 | (cp & 0x3F));
	return 2;
}

const char *vb_bl(const char *raw)
{
	static char buf[1024];
	size_t k = 0;

	for (; *raw && k + 3 < sizeof buf; raw++)
		k += put_utf8(bl_cp((unsigned char)*raw), buf + k);
	buf[k] = '\0';
	return buf;
}

void vb_bytes(struct vb *b)
{
	for (unsigned c = 0; c < 256; c++) {
		char s[3];
		size_t n = put_utf8(bl_cp((unsigned char)c), s);
		vb_tok_n(b, s, n, 1, 0.0f);
	}
}

struct dec_tok_vocab *vb_vocab(struct vb *b)
{
	b->v.n_tokens = b->n;
	b->v.tokens = (const char *const *)b->tok;
	b->v.token_lens = b->len;
	b->v.types = b->type;
	b->v.scores = b->score;
	b->v.n_merges = b->nm;
	b->v.merges = (const char *const *)b->mrg;
	b->v.merge_lens = b->mlen;
	return &b->v;
}

struct dec_tok *vb_build(struct vb *b)
{
	struct dec_tok *t = NULL;
	struct cr_err e;

	cr_err_init(&e);
	if (dec_tok_new(vb_vocab(b), &t, &e) != CR_OK)
		fail_msg("dec_tok_new: %s", e.msg);
	return t;
}

static void print_ids(char *o, size_t cap, const int32_t *ids, size_t n)
{
	size_t k = 0;

	o[0] = '\0';
	for (size_t i = 0; i < n && k + 16 < cap; i++)
		k += (size_t)snprintf(o + k, cap - k, "%s%d", i ? " " : "", ids[i]);
}

void expect_ids(const struct dec_tok *t, const char *text, size_t len, int parse_special,
		int add_bos, const int32_t *want, size_t n_want)
{
	int32_t *ids = NULL;
	size_t n = 0;
	struct cr_err e;
	char got_s[2048], want_s[2048];

	cr_err_init(&e);
	if (dec_tok_encode(t, text, len, parse_special, add_bos, &ids, &n, &e) != CR_OK)
		fail_msg("encode '%s': %s", text, e.msg);
	if (n != n_want || (n && memcmp(ids, want, n * sizeof *ids) != 0)) {
		print_ids(got_s, sizeof got_s, ids, n);
		print_ids(want_s, sizeof want_s, want, n_want);
		free(ids);
		fail_msg("encode '%s': got [%s], want [%s]", text, got_s, want_s);
	}
	free(ids);
}

void expect_round_trip(const struct dec_tok *t, const char *text, size_t len)
{
	int32_t *ids = NULL;
	size_t n = 0, outlen = 0;
	char *out = NULL;
	struct cr_err e;

	cr_err_init(&e);
	if (dec_tok_encode(t, text, len, 0, 0, &ids, &n, &e) != CR_OK)
		fail_msg("encode: %s", e.msg);
	if (dec_tok_decode(t, ids, n, 1, &out, &outlen, &e) != CR_OK) {
		free(ids);
		fail_msg("decode: %s", e.msg);
	}
	if (outlen != len || memcmp(out, text, len) != 0) {
		fprintf(stderr, "round trip of %zu bytes gave %zu bytes: '%.*s'\n", len, outlen,
			(int)outlen, out);
		free(ids);
		free(out);
		fail_msg("round trip differs for '%.*s'", (int)len, text);
	}
	free(ids);
	free(out);
}

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

size_t random_text(uint64_t *state, char *buf, size_t n, int invalid)
{
	static const char ascii[] = "abcdeXYZ0123456789 .,;:!?'\"()[]{}<>|_-+=*&^%$#@~`/\\";
	size_t k = 0;

	while (k + 4 < n) {
		uint32_t r = rnd(state) % 16, cp;
		if (r < 7) {
			buf[k++] = ascii[rnd(state) % (sizeof ascii - 1)];
		} else if (r < 9) {
			buf[k++] = " \t\n\r"[rnd(state) % 4];
		} else if (r < 11) {
			cp = 0x80 + rnd(state) % (0x800 - 0x80);
			buf[k++] = (char)(0xC0 | (cp >> 6));
			buf[k++] = (char)(0x80 | (cp & 0x3F));
		} else if (r < 13) {
			do
				cp = 0x800 + rnd(state) % (0x10000 - 0x800);
			while ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0x2581);
			buf[k++] = (char)(0xE0 | (cp >> 12));
			buf[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (cp & 0x3F));
		} else if (r < 15 || !invalid) {
			cp = 0x10000 + rnd(state) % (0x110000 - 0x10000);
			buf[k++] = (char)(0xF0 | (cp >> 18));
			buf[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
			buf[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (cp & 0x3F));
		} else {
			buf[k++] = (char)(0x80 + rnd(state) % 0x80); /* stray byte */
		}
	}
	return k;
}
