/* dec_tok_vocab.c — building a tokenizer from the GGUF vocabulary arrays:
 * the string hash map, the GPT-2 byte<->unicode table, token attributes, the
 * special-token list, BOS defaults and the end-of-generation set; plus the
 * small accessors of dec_tok.h. Encoding lives in dec_tok_encode.c,
 * dec_tok_bpe.c and dec_tok_spm.c. */
#include "decode/tok/dec_tok_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- string map ---- */

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a, then a final mix */
	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 1099511628211ull;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

int dec_tok_map_init(struct strmap *m, size_t n_expected)
{
	size_t cap = 16;
	while (cap < 2 * n_expected + 1)
		cap <<= 1;
	m->slots = calloc(cap, sizeof *m->slots);
	m->cap = m->slots ? cap : 0;
	m->n = 0;
	return m->slots ? 0 : -1;
}

void dec_tok_map_release(struct strmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->n = 0;
}

int dec_tok_map_put(struct strmap *m, const char *key, size_t len, int32_t val, int32_t *old)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)hash_bytes(key, len) & mask;

	for (;; i = (i + 1) & mask) {
		struct strmap_slot *s = &m->slots[i];
		if (!s->key) {
			s->key = key;
			s->len = (uint32_t)len;
			s->val = val;
			m->n++;
			return 1;
		}
		if (s->len == len && memcmp(s->key, key, len) == 0) {
			if (old)
				*old = s->val;
			return 0;
		}
	}
}

int32_t dec_tok_map_get(const struct strmap *m, const char *key, size_t len)
{
	size_t mask, i;

	if (!m->cap)
		return -1;
	mask = m->cap - 1;
	for (i = (size_t)hash_bytes(key, len) & mask;; i = (i + 1) & mask) {
		const struct strmap_slot *s = &m->slots[i];
		if (!s->key)
			return -1;
		if (s->len == len && memcmp(s->key, key, len) == 0)
			return s->val;
	}
}

int dec_tok_idbuf_push(struct idbuf *b, int32_t id)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		int32_t *v = realloc(b->v, cap * sizeof *v);
		if (!v)
			return -1;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = id;
	return 0;
}

/* ---- UTF-8 and the GPT-2 byte mapping ---- */

/* GPT-2 maps the printable bytes 33..126, 161..172, 174..255 to themselves
 * and the other 68 bytes, in order, to U+0100.. so that every byte becomes
 * a visible character. */
static int byte_is_printable(unsigned b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

uint32_t dec_tok_byte_to_cp(uint8_t b)
{
	unsigned n = 0;

	if (byte_is_printable(b))
		return b;
	for (unsigned i = 0; i < b; i++)
		n += !byte_is_printable(i);
	return 256 + n;
}

int dec_tok_cp_to_byte(uint32_t cp)
{
	unsigned n = 0;

	if (cp < 256)
		return byte_is_printable(cp) ? (int)cp : -1;
	if (cp >= 256 + 68)
		return -1;
	for (unsigned b = 0; b < 256; b++) {
		if (byte_is_printable(b))
			continue;
		if (256 + n == cp)
			return (int)b;
		n++;
	}
	return -1;
}

size_t dec_tok_utf8_put(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

size_t dec_tok_utf8_len(uint8_t lead)
{
	static const uint8_t by_high_nibble[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
	return by_high_nibble[lead >> 4];
}

size_t dec_tok_utf8_seq(const char *s, size_t n)
{
	size_t cl = dec_tok_utf8_len((uint8_t)s[0]);

	if (cl > n || ((uint8_t)s[0] & 0xC0) == 0x80)
		return 1;
	for (size_t i = 1; i < cl; i++)
		if (((uint8_t)s[i] & 0xC0) != 0x80)
			return 1;
	return cl;
}

/* ---- building ---- */

static uint8_t attr_from_type(int32_t type)
{
	switch (type) {
	case 1: return TOK_NORMAL;
	case 2: return TOK_UNKNOWN;
	case 3: return TOK_CONTROL;
	case 4: return TOK_USER;
	case 5: return TOK_UNUSED;
	case 6: return TOK_BYTE;
	default: return TOK_UNDEF;
	}
}

int dec_tok_parse_byte(const char *s, size_t n)
{
	int v = 0;

	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return -1;
	for (int i = 3; i < 5; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else
			return -1;
	}
	return v;
}

/* Texts that end generation whatever the file's ids say (llama.cpp keeps the
 * same list; Qwen's FIM padding/separator tokens end generation there too). */
static const char *const eog_texts[] = {
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<|eom_id|>", "<EOT>", "<|end_of_text|>",
	"<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
	"<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
};

static void mark_eog(struct dec_tok *t)
{
	int32_t ids[3] = { t->eos, t->eot, t->eom };

	for (size_t i = 0; i < sizeof eog_texts / sizeof eog_texts[0]; i++) {
		int32_t id = dec_tok_map_get(&t->vocab, eog_texts[i], strlen(eog_texts[i]));
		if (id < 0)
			continue;
		t->eog[id] = 1;
		if (!(t->attr[id] & TOK_CONTROL))
			t->attr[id] |= TOK_CONTROL; /* a control-looking token: treat it as one */
	}
	for (int i = 0; i < 3; i++)
		if (ids[i] >= 0)
			t->eog[ids[i]] = 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The special tokens, longest text first (ties by id), as llama.cpp matches
 * them: sorted through (~len << 32 | id) keys. */
static enum cr_status build_special(struct dec_tok *t)
{
	size_t n = 0;
	uint64_t *keys;

	for (size_t i = 0; i < t->n_vocab; i++)
		n += (t->attr[i] & TOK_SPECIAL) && t->len[i] > 0;
	keys = malloc((n ? n : 1) * sizeof *keys);
	t->special = malloc((n ? n : 1) * sizeof *t->special);
	if (!keys || !t->special) {
		free(keys);
		return CR_ENOMEM;
	}
	for (size_t i = 0; i < t->n_vocab; i++)
		if ((t->attr[i] & TOK_SPECIAL) && t->len[i] > 0)
			keys[t->n_special++] = ((uint64_t)(UINT32_MAX - t->len[i]) << 32) | (uint64_t)i;
	qsort(keys, t->n_special, sizeof *keys, cmp_u64);
	for (size_t i = 0; i < t->n_special; i++)
		t->special[i] = (int32_t)(keys[i] & 0xffffffffu);
	free(keys);
	return CR_OK;
}

static enum cr_status copy_tokens(struct dec_tok *t, const struct dec_tok_vocab *v,
				  struct cr_err *err)
{
	size_t total = 0;

	for (size_t i = 0; i < v->n_tokens; i++) {
		if (!v->tokens[i] && v->token_lens[i])
			return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.tokens': token %zu has no text", i);
		total += v->token_lens[i];
	}
	t->blob = malloc(total + 1);
	t->off = malloc(v->n_tokens * sizeof *t->off);
	t->len = malloc(v->n_tokens * sizeof *t->len);
	t->score = calloc(v->n_tokens, sizeof *t->score);
	t->attr = malloc(v->n_tokens);
	t->eog = calloc(v->n_tokens, 1);
	if (!t->blob || !t->off || !t->len || !t->score || !t->attr || !t->eog ||
	    dec_tok_map_init(&t->vocab, v->n_tokens))
		return cr_errf(err, CR_ENOMEM, "tokenizer: out of memory for %zu tokens", v->n_tokens);
	total = 0;
	for (size_t i = 0; i < v->n_tokens; i++) {
		size_t n = v->token_lens[i];
		int32_t old;
		if (n > UINT32_MAX)
			return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.tokens': token %zu is too long", i);
		if (n)
			memcpy(t->blob + total, v->tokens[i], n);
		t->off[i] = total;
		t->len[i] = (uint32_t)n;
		total += n;
		if (v->scores)
			t->score[i] = v->scores[i];
		t->attr[i] = v->types ? attr_from_type(v->types[i]) : TOK_NORMAL;
		if (!v->types && t->model == TOK_SPM && dec_tok_parse_byte(t->blob + t->off[i], n) >= 0)
			t->attr[i] = TOK_BYTE;
		if (n == 0)
			continue; /* an empty token can never be produced by encoding */
		if (!dec_tok_map_put(&t->vocab, t->blob + t->off[i], n, (int32_t)i, &old))
			return cr_errf(err, CR_EINPUT,
				       "key 'tokenizer.ggml.tokens': duplicate token '%.*s' has ids %d and %zu",
				       (int)(n > 64 ? 64 : n), t->blob + t->off[i], old, i);
	}
	t->blob[total] = '\0';
	return CR_OK;
}

static int32_t checked_id(int32_t id, size_t n)
{
	return (id >= 0 && (size_t)id < n) ? id : -1;
}

/* SPM byte fallback: "<0xNN>", else the byte itself as a one-byte token. */
static void spm_byte_tokens(struct dec_tok *t)
{
	for (int b = 0; b < 256; b++) {
		char buf[7];
		snprintf(buf, sizeof buf, "<0x%02X>", b);
		t->byte_tok[b] = dec_tok_map_get(&t->vocab, buf, 6);
		if (t->byte_tok[b] < 0) {
			char c = (char)b;
			t->byte_tok[b] = dec_tok_map_get(&t->vocab, &c, 1);
		}
	}
}

/* Merges "a b" -> rank, the byte-level tables and byte tokens, the regex. */
static enum cr_status setup_bpe(struct dec_tok *t, const struct dec_tok_vocab *v,
				struct cr_err *err)
{
	size_t total = 0;
	enum cr_status st = dec_tok_bpe_setup(t, v->pre, err);

	if (st)
		return st;
	if (!v->merges || !v->merge_lens || !v->n_merges)
		return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.merges' is missing or empty: a gpt2 tokenizer needs it");
	for (size_t i = 0; i < v->n_merges; i++)
		total += v->merge_lens[i];
	t->merge_blob = malloc(total + 1);
	if (!t->merge_blob || dec_tok_map_init(&t->merges, v->n_merges))
		return cr_errf(err, CR_ENOMEM, "tokenizer: out of memory for %zu merges", v->n_merges);
	total = 0;
	for (size_t i = 0; i < v->n_merges; i++) {
		size_t n = v->merge_lens[i];
		if (n && !v->merges[i])
			return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.merges': merge %zu has no text", i);
		if (n)
			memcpy(t->merge_blob + total, v->merges[i], n);
		/* a later duplicate keeps the first (lowest) rank */
		dec_tok_map_put(&t->merges, t->merge_blob + total, n, (int32_t)i, NULL);
		total += n;
	}
	for (uint32_t cp = 0; cp < 324; cp++)
		t->cp_byte[cp] = (int16_t)dec_tok_cp_to_byte(cp);
	for (int b = 0; b < 256; b++) {
		char buf[4];
		size_t n = dec_tok_utf8_put(dec_tok_byte_to_cp((uint8_t)b), buf);
		memcpy(t->bl[b], buf, n);
		t->bl_len[b] = (uint8_t)n;
		t->byte_tok[b] = dec_tok_map_get(&t->vocab, buf, n);
	}
	return CR_OK;
}

static void setup_spm(struct dec_tok *t)
{
	t->pre = PRE_GPT2; /* unused */
	t->add_space_prefix = 1;
	for (size_t i = 0; t->unk < 0 && i < t->n_vocab; i++)
		if (t->attr[i] & TOK_UNKNOWN)
			t->unk = (int32_t)i; /* llama.cpp's SPM default is id 0, <unk> */
	spm_byte_tokens(t);
}

/* BOS: the file's flag wins; else SPM and llama3 add one (dec_tok_bpe_setup
 * set it for llama3), others don't. */
static enum cr_status resolve_bos(struct dec_tok *t, const struct dec_tok_vocab *v,
				  struct cr_err *err)
{
	if (v->add_bos >= 0)
		t->add_bos = v->add_bos != 0;
	else
		t->add_bos = t->model == TOK_SPM || t->add_bos;
	if (t->add_bos && t->bos < 0) {
		if (v->add_bos > 0)
			return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.add_bos_token' is true but there is no BOS token ('tokenizer.ggml.bos_token_id')");
		t->add_bos = 0;
	}
	t->add_eos = v->add_eos > 0 && t->eos >= 0;
	return CR_OK;
}

enum cr_status dec_tok_new(const struct dec_tok_vocab *v, struct dec_tok **out,
			   struct cr_err *err)
{
	struct dec_tok *t = NULL;
	enum cr_status st = CR_OK;

	*out = NULL;
	if (!v || !v->model)
		return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.model' is missing");
	if (!v->n_tokens || !v->tokens || !v->token_lens)
		return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.tokens' is missing or empty: no tokens");
	if (v->n_tokens > INT32_MAX)
		return cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.tokens': %zu tokens is too many", v->n_tokens);
	t = calloc(1, sizeof *t);
	if (!t)
		return cr_errf(err, CR_ENOMEM, "tokenizer: out of memory");
	if (strcmp(v->model, "gpt2") == 0) {
		t->model = TOK_BPE;
	} else if (strcmp(v->model, "llama") == 0) {
		t->model = TOK_SPM;
	} else {
		st = cr_errf(err, CR_EINPUT, "key 'tokenizer.ggml.model': unknown tokenizer model '%s' (expected gpt2 or llama)",
			     v->model);
		goto out;
	}
	t->n_vocab = v->n_tokens;
	st = copy_tokens(t, v, err);
	if (st)
		goto out;

	t->bos = checked_id(v->bos_id, t->n_vocab);
	t->eos = checked_id(v->eos_id, t->n_vocab);
	t->eot = checked_id(v->eot_id, t->n_vocab);
	t->eom = checked_id(v->eom_id, t->n_vocab);
	t->unk = checked_id(v->unk_id, t->n_vocab);
	t->pad = checked_id(v->pad_id, t->n_vocab);
	mark_eog(t);

	st = t->model == TOK_BPE ? setup_bpe(t, v, err) : CR_OK;
	if (st)
		goto out;
	if (t->model == TOK_SPM)
		setup_spm(t);
	st = resolve_bos(t, v, err);
	if (st)
		goto out;
	st = build_special(t);
	if (st) {
		cr_errf(err, st, "tokenizer: out of memory");
		goto out;
	}
	if (v->chat_template) {
		t->chat_template = strdup(v->chat_template);
		if (!t->chat_template) {
			st = cr_errf(err, CR_ENOMEM, "tokenizer: out of memory");
			goto out;
		}
	}
	t->chat = dec_chat_detect(t, v->arch);
out:
	if (st) {
		dec_tok_free(t);
		return st;
	}
	*out = t;
	return CR_OK;
}

void dec_tok_free(struct dec_tok *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n_re; i++)
		pcre2_code_free(t->re[i]);
	dec_tok_map_release(&t->vocab);
	dec_tok_map_release(&t->merges);
	free(t->blob);
	free(t->off);
	free(t->len);
	free(t->score);
	free(t->attr);
	free(t->eog);
	free(t->merge_blob);
	free(t->special);
	free(t->chat_template);
	free(t);
}

size_t dec_tok_n_vocab(const struct dec_tok *t)
{
	return t->n_vocab;
}

int32_t dec_tok_bos(const struct dec_tok *t)
{
	return t->bos;
}

int32_t dec_tok_eos(const struct dec_tok *t)
{
	return t->eos;
}

int dec_tok_add_bos(const struct dec_tok *t)
{
	return t->add_bos;
}

int dec_tok_is_eog(const struct dec_tok *t, int32_t id)
{
	return id >= 0 && (size_t)id < t->n_vocab && t->eog[id];
}

int32_t dec_tok_lookup(const struct dec_tok *t, const char *text, size_t len)
{
	return dec_tok_map_get(&t->vocab, text, len);
}

const char *dec_tok_text(const struct dec_tok *t, int32_t id, size_t *len)
{
	if (id < 0 || (size_t)id >= t->n_vocab) {
		*len = 0;
		return NULL;
	}
	*len = t->len[id];
	return tok_text(t, id);
}

int dec_tok_is_special(const struct dec_tok *t, int32_t id)
{
	return id >= 0 && (size_t)id < t->n_vocab && (t->attr[id] & (TOK_CONTROL | TOK_UNKNOWN));
}

void dec_tok_set_add_space_prefix(struct dec_tok *t, int on)
{
	t->add_space_prefix = t->model == TOK_SPM && on;
}
