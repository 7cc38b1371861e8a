/* dec_tok_encode.c — text to ids and back: the special-token partition
 * (literal control/user-defined tokens cut out of the text before
 * pre-tokenization, longest first, as llama.cpp does), BOS/EOS, dispatch to
 * BPE or SPM per text fragment; dec_tok_piece and dec_tok_decode. */
#include "decode/tok/dec_tok_impl.h"

#include <stdlib.h>
#include <string.h>

/* A piece of the input: a special token (id >= 0) or raw text (id == -1). */
struct frag {
	int32_t id;
	size_t off, len;
};

struct fragbuf {
	struct frag *v;
	size_t n, cap;
};

static int frag_push(struct fragbuf *b, int32_t id, size_t off, size_t len)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		struct frag *v = realloc(b->v, cap * sizeof *v);
		if (!v)
			return -1;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n].id = id;
	b->v[b->n].off = off;
	b->v[b->n].len = len;
	b->n++;
	return 0;
}

/* Cuts every occurrence of each special token out of the raw fragments, one
 * token at a time, longest token first. User-defined tokens are cut even
 * without parse_special (llama.cpp and HF tokenizers do the same); control
 * and unknown tokens only with it. */
static enum cr_status partition(const struct dec_tok *t, const char *text, size_t len,
				int parse_special, struct fragbuf *fb, struct cr_err *err)
{
	struct fragbuf next = { 0 };
	enum cr_status st = CR_OK;

	if (frag_push(fb, -1, 0, len))
		goto oom;
	for (size_t k = 0; k < t->n_special; k++) {
		int32_t id = t->special[k];
		const char *s = tok_text(t, id);
		size_t sl = t->len[id];
		int hit = 0;

		if (!parse_special && !(t->attr[id] & TOK_USER))
			continue;
		next.n = 0;
		for (size_t i = 0; i < fb->n; i++) {
			struct frag f = fb->v[i];
			size_t pos = f.off, end = f.off + f.len;
			if (f.id >= 0) {
				if (frag_push(&next, f.id, 0, 0))
					goto oom;
				continue;
			}
			while (pos < end) {
				const char *m = end - pos >= sl ? memmem(text + pos, end - pos, s, sl) : NULL;
				size_t mo;
				if (!m)
					break;
				hit = 1;
				mo = (size_t)(m - text);
				if (mo > pos && frag_push(&next, -1, pos, mo - pos))
					goto oom;
				if (frag_push(&next, id, 0, 0))
					goto oom;
				pos = mo + sl;
			}
			if (pos < end && frag_push(&next, -1, pos, end - pos))
				goto oom;
		}
		if (hit) { /* swap: next becomes the current list */
			struct fragbuf tmp = *fb;
			*fb = next;
			next = tmp;
		}
	}
	goto out;
oom:
	st = cr_errf(err, CR_ENOMEM, "tokenizer: out of memory");
out:
	free(next.v);
	return st;
}

/* SPM: ' ' -> U+2581, with a leading one when asked. */
static char *spm_escape(const char *s, size_t n, int prefix, size_t *outlen)
{
	size_t spaces = prefix, k = 0;
	char *o;

	for (size_t i = 0; i < n; i++)
		spaces += s[i] == ' ';
	o = malloc(n + 2 * spaces + 1);
	if (!o)
		return NULL;
	if (prefix) {
		memcpy(o, "\xe2\x96\x81", 3);
		k = 3;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ') {
			memcpy(o + k, "\xe2\x96\x81", 3);
			k += 3;
		} else {
			o[k++] = s[i];
		}
	}
	*outlen = k;
	return o;
}

enum cr_status dec_tok_encode(const struct dec_tok *t, const char *text, size_t len,
			      int parse_special, int add_bos, int32_t **ids, size_t *n,
			      struct cr_err *err)
{
	struct fragbuf fb = { 0 };
	struct idbuf out = { 0 };
	enum cr_status st = CR_OK;
	int want_bos = add_bos < 0 ? t->add_bos : add_bos != 0;
	int want_eos = add_bos != 0 && t->add_eos;
	int prev_special = 1; /* SPM: the text start counts as after a special token */

	*ids = NULL;
	*n = 0;
	if (!text && len)
		return cr_errf(err, CR_EUSAGE, "tokenizer: NULL text");
	if (want_bos && t->bos < 0)
		return cr_errf(err, CR_EINPUT, "tokenizer: BOS requested but the vocabulary has none");
	if (len) {
		st = partition(t, text, len, parse_special, &fb, err);
		if (st)
			goto out;
	}
	/* The vocabulary's default never doubles a BOS the text already starts
	 * with (a rendered chat template); an explicit add_bos = 1 does. */
	if (add_bos < 0 && fb.n && fb.v[0].id == t->bos)
		want_bos = 0;
	if (want_bos && dec_tok_idbuf_push(&out, t->bos))
		goto oom;
	for (size_t i = 0; i < fb.n; i++) {
		const struct frag *f = &fb.v[i];
		if (f->id >= 0) {
			if (dec_tok_idbuf_push(&out, f->id))
				goto oom;
			prev_special = 1;
			continue;
		}
		if (t->model == TOK_BPE) {
			st = dec_tok_bpe_encode(t, text + f->off, f->len, &out, err);
		} else {
			size_t elen;
			char *esc = spm_escape(text + f->off, f->len, t->add_space_prefix && prev_special, &elen);
			if (!esc)
				goto oom;
			st = dec_tok_spm_encode(t, esc, elen, &out, err);
			free(esc);
		}
		if (st)
			goto out;
		prev_special = 0;
	}
	if (want_eos && dec_tok_idbuf_push(&out, t->eos))
		goto oom;
	if (!out.v && !(out.v = malloc(sizeof *out.v))) /* never NULL on success */
		goto oom;
	*ids = out.v;
	*n = out.n;
	out.v = NULL;
	goto out;
oom:
	st = cr_errf(err, CR_ENOMEM, "tokenizer: out of memory");
out:
	free(fb.v);
	free(out.v);
	return st;
}

/* ---- ids to bytes ---- */

/* Writes at most cap bytes of the piece, returns its full length. */
size_t dec_tok_piece(const struct dec_tok *t, int32_t id, char *buf, size_t cap)
{
	const char *s;
	size_t n, k = 0;
	uint8_t a;

	if (id < 0 || (size_t)id >= t->n_vocab)
		return 0;
	s = tok_text(t, id);
	n = t->len[id];
	a = t->attr[id];
	if (a & (TOK_CONTROL | TOK_UNKNOWN | TOK_USER)) {
		if (cap)
			memcpy(buf, s, n < cap ? n : cap);
		return n;
	}
	if (a & TOK_BYTE) {
		int b = dec_tok_parse_byte(s, n);
		if (b < 0) { /* a byte-typed token not spelled <0xNN>: its text */
			if (cap)
				memcpy(buf, s, n < cap ? n : cap);
			return n;
		}
		if (cap)
			buf[0] = (char)b;
		return 1;
	}
	if (!(a & TOK_NORMAL))
		return 0; /* unused and undefined tokens print nothing, as in llama.cpp */
	for (size_t i = 0; i < n;) {
		size_t cl = dec_tok_utf8_len((uint8_t)s[i]);
		if (cl > n - i)
			cl = n - i;
		if (t->model == TOK_SPM) {
			if (cl == 3 && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
				if (k < cap)
					buf[k] = ' ';
				k++;
			} else {
				for (size_t j = 0; j < cl; j++, k++)
					if (k < cap)
						buf[k] = s[i + j];
			}
		} else {
			uint32_t cp = (uint8_t)s[i];
			int b;
			if (cl == 2)
				cp = ((cp & 0x1F) << 6) | ((uint8_t)s[i + 1] & 0x3F);
			b = cl <= 2 && cp < 324 ? t->cp_byte[cp] : -1;
			if (b >= 0) {
				if (k < cap)
					buf[k] = (char)b;
				k++;
			} else { /* not a byte-level character: keep it as it is */
				for (size_t j = 0; j < cl; j++, k++)
					if (k < cap)
						buf[k] = s[i + j];
			}
		}
		i += cl;
	}
	return k;
}

enum cr_status dec_tok_decode(const struct dec_tok *t, const int32_t *ids, size_t n,
			      int render_special, char **text, size_t *len,
			      struct cr_err *err)
{
	char *o = NULL;
	size_t k = 0, cap = 0;
	int strip = t->model == TOK_SPM && t->add_space_prefix;

	*text = NULL;
	*len = 0;
	for (size_t i = 0; i < n; i++) {
		int32_t id = ids[i];
		size_t need;
		if (id < 0 || (size_t)id >= t->n_vocab) {
			free(o);
			return cr_errf(err, CR_EINPUT, "tokenizer: token id %d out of range [0, %zu)",
				       id, t->n_vocab);
		}
		need = dec_tok_piece(t, id, NULL, 0);
		if (k + need + 1 > cap) {
			size_t nc = cap ? cap : 256;
			char *q;
			while (nc < k + need + 1)
				nc *= 2;
			q = realloc(o, nc);
			if (!q) {
				free(o);
				return cr_errf(err, CR_ENOMEM, "tokenizer: out of memory");
			}
			o = q;
			cap = nc;
		}
		if (t->attr[id] & TOK_SPECIAL) {
			/* SPM's encoder put a space after this token: undo it next */
			strip = t->model == TOK_SPM && t->add_space_prefix;
			if ((t->attr[id] & TOK_USER) || render_special)
				k += dec_tok_piece(t, id, o + k, need);
			continue;
		}
		dec_tok_piece(t, id, o + k, need);
		if (strip && need) { /* only the first piece after the start or a special token */
			if ((t->attr[id] & TOK_NORMAL) && o[k] == ' ') {
				memmove(o + k, o + k + 1, need - 1);
				need--;
			}
			strip = 0;
		}
		k += need;
	}
	if (!o) {
		o = malloc(1);
		if (!o)
			return cr_errf(err, CR_ENOMEM, "tokenizer: out of memory");
	}
	o[k] = '\0';
	*text = o;
	*len = k;
	return CR_OK;
}
