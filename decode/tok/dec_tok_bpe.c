/* dec_tok_bpe.c — byte-level BPE ("gpt2" tokenizer model): the pre-tokenizer
 * regexes (PCRE2, UTF + UCP, so \p{L} and \p{N} are Unicode's categories;
 * some pre-tokenizers apply several in turn, each within the pieces of the
 * one before),
 * the GPT-2 byte encoding of each pre-token, and the merge loop that joins
 * the adjacent pair of lowest merge rank until none is left.
 *
 * The regexes are the ones llama.cpp uses (src/llama-vocab.cpp), which are
 * the tokenizer.json patterns with (?i:'s|...) spelled out as '[sS]|... so
 * that case folding cannot reach beyond ASCII. Text the regex does not match
 * (single whitespace characters before a letter for gpt2, bytes of invalid
 * UTF-8) becomes a pre-token of its own, so no byte is ever dropped. */
#include "decode/tok/dec_tok_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char re_llama3[] =
	"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
	"|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
	"|\\p{N}{1,3}"
	"| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
	"|\\s*[\\r\\n]+"
	"|\\s+(?!\\S)"
	"|\\s+";

/* Qwen2: as llama3 but every digit is a pre-token of its own. */
static const char re_qwen2[] =
	"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
	"|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
	"|\\p{N}"
	"| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
	"|\\s*[\\r\\n]+"
	"|\\s+(?!\\S)"
	"|\\s+";

static const char re_gpt2[] =
	"'s|'t|'re|'ve|'m|'ll|'d"
	"| ?\\p{L}+"
	"| ?\\p{N}+"
	"| ?[^\\s\\p{L}\\p{N}]+"
	"|\\s+(?!\\S)";

/* SmolLM (and the others llama.cpp gives LLAMA_VOCAB_PRE_TYPE_SMOLLM's
 * regexes): every number character is a piece of its own first, then the
 * gpt2 pattern splits each piece between them, seeing only that piece. So
 * "x =    42" is x| =|    |4|2 (the four spaces end their piece, so
 * \s+(?!\S) takes them all), where gpt2 alone gives x| =|   | 42. */
static const char re_digit[] = "\\p{N}";

/* llama.cpp's "default" (LLAMA_VOCAB_PRE_TYPE_DEFAULT): punctuation runs,
 * then gpt2, then number runs, then three ASCII digits at a time. */
static const char re_punct[] = "[\\p{P}\\$\\+<=>\\^~\\|]+";
static const char re_numbers[] = "\\p{N}+";
static const char re_digits3[] = "[0-9][0-9][0-9]";

static int name_in(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

enum cr_status dec_tok_bpe_setup(struct dec_tok *t, const char *pre, struct cr_err *err)
{
	/* llama.cpp's names for these pre-tokenizers (tokenizer.ggml.pre). */
	static const char *const llama3_names[] = {
		"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
		"midm-2.0", "lfm2", NULL };
	static const char *const llama3_regex_only[] = { "dbrx", "smaug-bpe", NULL };
	static const char *const qwen2_names[] = {
		"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", NULL };
	/* LLAMA_VOCAB_PRE_TYPE_GPT2, MPT, OLMO, JAIS: the gpt2 pattern alone */
	static const char *const gpt2_names[] = {
		"gpt-2", "phi-2", "roberta-bpe", "jina-es", "jina-de", "jina-v1-en", "jina-v2-es",
		"jina-v2-de", "jina-v2-code", "gigachat", "olmo", "mpt", "jais", NULL };
	/* STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL, EXAONE, MINERVA: the
	 * same two regexes, and none of them changes how text is encoded
	 * otherwise (their flags are clean_spaces, a detokenizer matter) */
	static const char *const smollm_names[] = {
		"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", NULL };
	const char *src[TOK_MAX_RE] = { NULL };
	int n = 1;

	if (pre && name_in(pre, llama3_names)) {
		t->pre = PRE_LLAMA3;
		t->ignore_merges = 1;
		t->add_bos = 1; /* llama.cpp's default for llama3 when the file says nothing */
	} else if (pre && name_in(pre, llama3_regex_only)) {
		t->pre = PRE_LLAMA3;
	} else if (pre && name_in(pre, qwen2_names)) {
		t->pre = PRE_QWEN2;
	} else if (pre && name_in(pre, gpt2_names)) {
		t->pre = PRE_GPT2;
	} else if (pre && name_in(pre, smollm_names)) {
		t->pre = PRE_SMOLLM;
	} else if (!pre || strcmp(pre, "default") == 0) {
		/* llama.cpp's choice too when the file names none (it warns) */
		t->pre = PRE_DEFAULT;
		if (!pre)
			fprintf(stderr, "tokenizer: no tokenizer.ggml.pre in the file, using llama.cpp's "
					"'default' pre-tokenizer\n");
	} else {
		return cr_errf(err, CR_EINPUT,
			       "tokenizer: tokenizer.ggml.pre = '%.64s' is a pre-tokenizer the decoder does not "
			       "implement (see docs/TOKENIZER.md for the names it does)", pre);
	}
	switch (t->pre) {
	case PRE_LLAMA3: src[0] = re_llama3; break;
	case PRE_QWEN2: src[0] = re_qwen2; break;
	case PRE_GPT2: src[0] = re_gpt2; break;
	case PRE_SMOLLM:
		src[0] = re_digit;
		src[1] = re_gpt2;
		n = 2;
		break;
	case PRE_DEFAULT:
		src[0] = re_punct;
		src[1] = re_gpt2;
		src[2] = re_numbers;
		src[3] = re_digits3;
		n = 4;
		break;
	}
	for (int i = 0; i < n; i++) {
		int ecode;
		PCRE2_SIZE eoff;

		t->re[i] = pcre2_compile((PCRE2_SPTR)src[i], PCRE2_ZERO_TERMINATED,
					 PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &ecode, &eoff, NULL);
		if (!t->re[i]) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(ecode, msg, sizeof msg);
			return cr_errf(err, CR_EINTERNAL, "tokenizer: pre-tokenizer regex %d at %zu: %s", i,
				       (size_t)eoff, (const char *)msg);
		}
		t->n_re = i + 1;
		pcre2_jit_compile(t->re[i], PCRE2_JIT_COMPLETE); /* optional speed-up; the interpreter is the fallback */
	}
	return CR_OK;
}

const char *dec_tok_pre_name(const struct dec_tok *t)
{
	if (t->model == TOK_SPM)
		return "spm";
	switch (t->pre) {
	case PRE_LLAMA3: return "llama3";
	case PRE_QWEN2: return "qwen2";
	case PRE_SMOLLM: return "smollm";
	case PRE_DEFAULT: return "default";
	case PRE_GPT2: break;
	}
	return "gpt2";
}

struct split {
	const struct dec_tok *t;
	const char *text;
	pcre2_match_data *md[TOK_MAX_RE];
	pretok_fn fn;
	void *ctx;
	struct cr_err *err;
};

static enum cr_status split_piece(struct split *sp, int level, size_t start, size_t end);

/* A piece of regex `level`: split further, or handed out after the last. */
static enum cr_status emit(struct split *sp, int level, size_t start, size_t end)
{
	if (level + 1 < sp->t->n_re)
		return split_piece(sp, level + 1, start, end);
	return sp->fn(sp->ctx, start, end) ? CR_ENOMEM : CR_OK;
}

/* Regex `level` over text[start, end): the subject ends at `end`, so a
 * lookahead sees nothing past the piece. */
static enum cr_status split_piece(struct split *sp, int level, size_t start, size_t end)
{
	pcre2_match_data *md = sp->md[level];
	size_t pos = start, last = start;
	enum cr_status st;

	while (pos < end) {
		int rc = pcre2_match(sp->t->re[level], (PCRE2_SPTR)sp->text, end, pos, 0, md, NULL);
		PCRE2_SIZE *ov, m0, m1;

		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(rc, msg, sizeof msg);
			return cr_errf(sp->err, CR_EINTERNAL, "tokenizer: regex match at byte %zu: %s", pos,
				       (const char *)msg);
		}
		ov = pcre2_get_ovector_pointer(md);
		m0 = ov[0]; /* the next level reuses its own match data, not this one */
		m1 = ov[1];
		if (m0 > last && (st = emit(sp, level, last, m0)))
			return st;
		if (m1 == m0) { /* no pattern matches empty; guard anyway */
			pos = m0 + 1;
			last = m0;
			continue;
		}
		if ((st = emit(sp, level, m0, m1)))
			return st;
		last = pos = m1;
	}
	if (last < end)
		return emit(sp, level, last, end);
	return CR_OK;
}

enum cr_status dec_tok_pretokenize(const struct dec_tok *t, const char *text, size_t len,
				   pretok_fn fn, void *ctx, struct cr_err *err)
{
	struct split sp = { .t = t, .text = text, .fn = fn, .ctx = ctx, .err = err };
	enum cr_status st = CR_OK;

	for (int i = 0; i < t->n_re; i++)
		if (!(sp.md[i] = pcre2_match_data_create_from_pattern(t->re[i], NULL))) {
			st = CR_ENOMEM;
			break;
		}
	if (st == CR_OK && len)
		st = split_piece(&sp, 0, 0, len);
	if (st == CR_ENOMEM)
		cr_errf(err, st, "tokenizer: out of memory");
	for (int i = 0; i < t->n_re; i++)
		pcre2_match_data_free(sp.md[i]);
	return st;
}

/* ---- merges ---- */

struct sym {
	int prev, next; /* -1 at the ends */
	uint32_t off, n; /* bytes of the byte-encoded word; n == 0: merged away */
};

struct bigram {
	int32_t rank;
	int left, right;
	uint32_t ln, rn; /* sizes when queued: a changed size means a stale entry */
};

struct bpe_ws {
	const struct dec_tok *t;
	const char *text;
	struct idbuf *out;
	char *enc;           /* the pre-token in GPT-2 byte-level spelling */
	size_t enc_cap;
	char *key;           /* scratch: "left right" merge lookup key */
	size_t key_cap;
	struct sym *sym;
	size_t sym_cap;
	struct bigram *heap;
	size_t heap_n, heap_cap;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void *q;
	size_t c = *cap ? *cap : 64;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* Lowest rank first; among equal ranks the leftmost pair. */
static int bigram_less(const struct bigram *a, const struct bigram *b)
{
	return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int heap_push(struct bpe_ws *w, struct bigram g)
{
	size_t i;

	if (grow((void **)&w->heap, &w->heap_cap, w->heap_n + 1, sizeof *w->heap))
		return -1;
	i = w->heap_n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!bigram_less(&g, &w->heap[p]))
			break;
		w->heap[i] = w->heap[p];
		i = p;
	}
	w->heap[i] = g;
	return 0;
}

static struct bigram heap_pop(struct bpe_ws *w)
{
	struct bigram top = w->heap[0], last = w->heap[--w->heap_n];
	size_t i = 0, n = w->heap_n;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && bigram_less(&w->heap[c + 1], &w->heap[c]))
			c++;
		if (!bigram_less(&w->heap[c], &last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (n)
		w->heap[i] = last;
	return top;
}

static int add_bigram(struct bpe_ws *w, int left, int right)
{
	const struct sym *l, *r;
	struct bigram g;
	int32_t rank;

	if (left < 0 || right < 0)
		return 0;
	l = &w->sym[left];
	r = &w->sym[right];
	/* the merge key "a b": the two symbols are adjacent in enc */
	memcpy(w->key, w->enc + l->off, l->n);
	w->key[l->n] = ' ';
	memcpy(w->key + l->n + 1, w->enc + r->off, r->n);
	rank = dec_tok_map_get(&w->t->merges, w->key, l->n + 1 + r->n);
	if (rank < 0)
		return 0;
	g.rank = rank;
	g.left = left;
	g.right = right;
	g.ln = l->n;
	g.rn = r->n;
	return heap_push(w, g);
}

/* A symbol that is not a token: one token per byte-level character. */
static int emit_bytes(struct bpe_ws *w, const char *s, size_t n)
{
	const struct dec_tok *t = w->t;
	size_t i = 0;

	while (i < n) {
		size_t cl = dec_tok_utf8_len((uint8_t)s[i]);
		int32_t id;
		if (cl > n - i)
			cl = n - i;
		id = dec_tok_map_get(&t->vocab, s + i, cl);
		if (id < 0)
			id = t->unk;
		if (id >= 0 && dec_tok_idbuf_push(w->out, id))
			return -1;
		i += cl;
	}
	return 0;
}

static int bpe_word(void *ctx, size_t start, size_t end)
{
	struct bpe_ws *w = ctx;
	const struct dec_tok *t = w->t;
	size_t n = end - start, elen = 0;
	int nsym = (int)n;

	if (grow((void **)&w->enc, &w->enc_cap, 2 * n + 1, 1) ||
	    grow((void **)&w->key, &w->key_cap, 2 * n + 2, 1) ||
	    grow((void **)&w->sym, &w->sym_cap, n, sizeof *w->sym))
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)w->text[start + i];
		size_t k = t->bl_len[c];
		memcpy(w->enc + elen, t->bl[c], k);
		w->sym[i].prev = (int)i - 1;
		w->sym[i].next = i + 1 < n ? (int)i + 1 : -1;
		w->sym[i].off = (uint32_t)elen;
		w->sym[i].n = (uint32_t)k;
		elen += k;
	}
	if (t->ignore_merges) {
		int32_t id = dec_tok_map_get(&t->vocab, w->enc, elen);
		if (id >= 0)
			return dec_tok_idbuf_push(w->out, id);
	}
	w->heap_n = 0;
	for (int i = 1; i < nsym; i++)
		if (add_bigram(w, i - 1, i))
			return -1;
	while (w->heap_n) {
		struct bigram g = heap_pop(w);
		struct sym *l = &w->sym[g.left], *r = &w->sym[g.right];
		if (l->n != g.ln || r->n != g.rn || l->n == 0 || r->n == 0)
			continue; /* one side has merged since this pair was queued */
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			w->sym[r->next].prev = g.left;
		if (add_bigram(w, l->prev, g.left) || add_bigram(w, g.left, l->next))
			return -1;
	}
	for (int i = 0; i >= 0; i = w->sym[i].next) {
		const struct sym *s = &w->sym[i];
		int32_t id = dec_tok_map_get(&t->vocab, w->enc + s->off, s->n);
		if (id >= 0) {
			if (dec_tok_idbuf_push(w->out, id))
				return -1;
		} else if (emit_bytes(w, w->enc + s->off, s->n)) {
			return -1;
		}
	}
	return 0;
}

enum cr_status dec_tok_bpe_encode(const struct dec_tok *t, const char *text, size_t len,
				  struct idbuf *out, struct cr_err *err)
{
	struct bpe_ws w;
	enum cr_status st;

	memset(&w, 0, sizeof w);
	w.t = t;
	w.text = text;
	w.out = out;
	st = dec_tok_pretokenize(t, text, len, bpe_word, &w, err);
	free(w.enc);
	free(w.key);
	free(w.sym);
	free(w.heap);
	return st;
}
