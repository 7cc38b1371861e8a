/* dec_tok_spm.c — SentencePiece-style BPE ("llama" tokenizer model): start
 * from one symbol per UTF-8 character, repeatedly join the adjacent pair
 * whose concatenation is the vocabulary token of highest score (leftmost on
 * ties), then emit each symbol's token, or its bytes as <0xNN> tokens when
 * the symbol is not in the vocabulary (byte fallback), or <unk> when the
 * vocabulary has no byte tokens either. The caller has already replaced
 * spaces by U+2581 and added the leading one. */
#include "decode/tok/dec_tok_impl.h"

#include <stdlib.h>
#include <string.h>

struct spm_sym {
	int prev, next;
	size_t off, n; /* n == 0: merged into its left neighbour */
};

struct spm_pair {
	float score;
	int left, right;
	size_t size; /* bytes of the joined text when queued */
};

struct spm_heap {
	struct spm_pair *v;
	size_t n, cap;
};

/* Highest score first; among equal scores the leftmost pair. */
static int pair_before(const struct spm_pair *a, const struct spm_pair *b)
{
	return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static int push(struct spm_heap *h, struct spm_pair p)
{
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct spm_pair *v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	for (i = h->n++; i > 0; i = (i - 1) / 2) {
		size_t par = (i - 1) / 2;
		if (!pair_before(&p, &h->v[par]))
			break;
		h->v[i] = h->v[par];
	}
	h->v[i] = p;
	return 0;
}

static struct spm_pair pop(struct spm_heap *h)
{
	struct spm_pair top = h->v[0], last = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && pair_before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!pair_before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}

static int try_pair(const struct dec_tok *t, const char *text, const struct spm_sym *sym,
		    struct spm_heap *h, int left, int right)
{
	struct spm_pair p;
	int32_t id;

	if (left < 0 || right < 0)
		return 0;
	p.size = sym[left].n + sym[right].n;
	id = dec_tok_map_get(&t->vocab, text + sym[left].off, p.size);
	if (id < 0)
		return 0;
	p.score = t->score[id];
	p.left = left;
	p.right = right;
	return push(h, p);
}

static int emit_symbol(const struct dec_tok *t, const char *s, size_t n, struct idbuf *out)
{
	int32_t id = dec_tok_map_get(&t->vocab, s, n);

	if (id >= 0)
		return dec_tok_idbuf_push(out, id);
	for (size_t i = 0; i < n; i++) {
		if (t->byte_tok[(uint8_t)s[i]] < 0) /* no byte fallback: one <unk> per symbol */
			return t->unk >= 0 ? dec_tok_idbuf_push(out, t->unk) : 0;
	}
	for (size_t i = 0; i < n; i++)
		if (dec_tok_idbuf_push(out, t->byte_tok[(uint8_t)s[i]]))
			return -1;
	return 0;
}

enum cr_status dec_tok_spm_encode(const struct dec_tok *t, const char *text, size_t len,
				  struct idbuf *out, struct cr_err *err)
{
	struct spm_sym *sym = NULL;
	struct spm_heap h = { 0 };
	enum cr_status st = CR_OK;
	int n = 0;

	if (!len)
		return CR_OK;
	sym = malloc(len * sizeof *sym);
	if (!sym)
		goto oom;
	for (size_t off = 0; off < len; n++) {
		/* a malformed sequence is one byte per symbol, so it cannot swallow
		 * the start of the next character (llama.cpp would) */
		size_t cl = dec_tok_utf8_seq(text + off, len - off);
		sym[n].off = off;
		sym[n].n = cl;
		sym[n].prev = n - 1;
		off += cl;
		sym[n].next = off < len ? n + 1 : -1;
	}
	for (int i = 1; i < n; i++)
		if (try_pair(t, text, sym, &h, i - 1, i))
			goto oom;
	while (h.n) {
		struct spm_pair p = pop(&h);
		struct spm_sym *l = &sym[p.left], *r = &sym[p.right];
		if (l->n == 0 || r->n == 0 || l->n + r->n != p.size)
			continue; /* stale: one side changed since it was queued */
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			sym[r->next].prev = p.left;
		if (try_pair(t, text, sym, &h, l->prev, p.left) ||
		    try_pair(t, text, sym, &h, p.left, l->next))
			goto oom;
	}
	for (int i = 0; i >= 0; i = sym[i].next)
		if (emit_symbol(t, text + sym[i].off, sym[i].n, out))
			goto oom;
	goto out;
oom:
	st = cr_errf(err, CR_ENOMEM, "tokenizer: out of memory");
out:
	free(sym);
	free(h.v);
	return st;
}
