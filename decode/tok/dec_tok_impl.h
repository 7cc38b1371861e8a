/* dec_tok_impl.h — private to decode/tok/: the tokenizer struct, the string
 * hash map it is built on, and the entry points the encode/decode files use
 * from the BPE, SPM and vocabulary files. Nothing outside decode/tok/
 * includes this. */
#ifndef DEC_TOK_IMPL_H
#define DEC_TOK_IMPL_H

#include <stddef.h>
#include <stdint.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "decode/tok/dec_tok.h"

/* Token attributes (bit flags, as llama.cpp keeps them: a token that looks
 * like an end-of-generation marker is forced to CONTROL). */
enum {
	TOK_NORMAL = 1 << 0,
	TOK_UNKNOWN = 1 << 1,
	TOK_CONTROL = 1 << 2,
	TOK_USER = 1 << 3,   /* user-defined */
	TOK_UNUSED = 1 << 4,
	TOK_BYTE = 1 << 5,
	TOK_UNDEF = 1 << 6,
};
/* Tokens matched literally in the text before pre-tokenization. */
#define TOK_SPECIAL (TOK_CONTROL | TOK_USER | TOK_UNKNOWN)

enum tok_model { TOK_BPE, TOK_SPM };
enum tok_pre { PRE_GPT2, PRE_LLAMA3, PRE_QWEN2, PRE_SMOLLM, PRE_DEFAULT };
#define TOK_MAX_RE 4 /* regexes a pre-tokenizer applies in turn */
enum chat_kind { CHAT_NONE, CHAT_CHATML, CHAT_LLAMA3, CHAT_DEEPSEEK_R1, CHAT_PHI3, CHAT_GEMMA };

/* Open-addressing map from a byte string to an int32. Keys are not copied:
 * they point into storage that outlives the map (the token or merge blob). */
struct strmap_slot {
	const char *key; /* NULL: empty slot */
	uint32_t len;
	int32_t val;
};
struct strmap {
	struct strmap_slot *slots; /* [cap] */
	size_t cap;                /* power of two, >= 2 * n */
	size_t n;
};

int dec_tok_map_init(struct strmap *m, size_t n_expected); /* 0 ok, -1 ENOMEM */
void dec_tok_map_release(struct strmap *m);
/* Inserts unless the key is present; returns 1 inserted, 0 present (*old set). */
int dec_tok_map_put(struct strmap *m, const char *key, size_t len, int32_t val,
		    int32_t *old);
int32_t dec_tok_map_get(const struct strmap *m, const char *key, size_t len); /* -1 absent */

struct dec_tok {
	enum tok_model model;
	enum tok_pre pre;
	enum chat_kind chat;
	int no_think;          /* open the answer with an empty think block (Qwen3's switch) */
	size_t n_vocab;
	char *blob;            /* all token texts, back to back */
	size_t *off;           /* [n_vocab] offset of token i in blob */
	uint32_t *len;         /* [n_vocab] */
	float *score;          /* [n_vocab] (0 when the file has none) */
	uint8_t *attr;         /* [n_vocab] TOK_* flags */
	uint8_t *eog;          /* [n_vocab] 1 for end-of-generation tokens */
	struct strmap vocab;   /* token text -> id */
	char *merge_blob;      /* merges "a b", back to back */
	struct strmap merges;  /* "a b" -> rank (BPE only) */
	int32_t *special;      /* ids with TOK_SPECIAL, longest text first */
	size_t n_special;
	int32_t byte_tok[256]; /* token standing for one raw byte, -1 if none */
	char bl[256][2];       /* GPT-2 byte-level spelling of each byte (UTF-8) */
	uint8_t bl_len[256];   /* 1 or 2 */
	int16_t cp_byte[324];  /* byte-level code point -> byte, -1 if none */
	int32_t bos, eos, eot, eom, unk, pad;
	int add_bos, add_eos;  /* resolved defaults */
	int ignore_merges;     /* llama3: a whole pre-token in the vocab is emitted as is */
	int add_space_prefix;  /* SPM: ' ' before text at the start / after a special token */
	pcre2_code *re[TOK_MAX_RE]; /* BPE pre-tokenizer: each splits the pieces of the one before */
	int n_re;
	char *chat_template;   /* copy, or NULL */
};

static inline const char *tok_text(const struct dec_tok *t, int32_t id)
{
	return t->blob + t->off[id];
}

/* Growable output of token ids. */
struct idbuf {
	int32_t *v;
	size_t n, cap;
};
int dec_tok_idbuf_push(struct idbuf *b, int32_t id); /* 0 ok, -1 ENOMEM */

/* GPT-2 byte <-> unicode mapping. */
uint32_t dec_tok_byte_to_cp(uint8_t b);
int dec_tok_cp_to_byte(uint32_t cp); /* -1 when cp is not a byte-level char */
size_t dec_tok_utf8_put(uint32_t cp, char *out); /* writes 1..4 bytes */
/* Length of the UTF-8 sequence a lead byte announces (1 for invalid leads). */
size_t dec_tok_utf8_len(uint8_t lead);
/* Length of the character at s[0..n): its UTF-8 length when well formed
 * (lead byte followed by enough continuation bytes), else 1. */
size_t dec_tok_utf8_seq(const char *s, size_t n);

/* "<0xNN>" -> NN, or -1. */
int dec_tok_parse_byte(const char *s, size_t n);

/* BPE (dec_tok_bpe.c). */
enum cr_status dec_tok_bpe_setup(struct dec_tok *t, const char *pre, struct cr_err *err);
enum cr_status dec_tok_bpe_encode(const struct dec_tok *t, const char *text, size_t len,
				  struct idbuf *out, struct cr_err *err);
/* Splits text by the pre-tokenizer regexes: the first splits the text into
 * its matches and the gaps between them, each next one splits every piece
 * of the one before (seeing only that piece, as llama.cpp's
 * unicode_regex_split); calls fn(start, end) for every final piece, in
 * order. */
typedef int (*pretok_fn)(void *ctx, size_t start, size_t end);
enum cr_status dec_tok_pretokenize(const struct dec_tok *t, const char *text, size_t len,
				   pretok_fn fn, void *ctx, struct cr_err *err);

/* SPM (dec_tok_spm.c): text already has spaces escaped as U+2581. */
enum cr_status dec_tok_spm_encode(const struct dec_tok *t, const char *text, size_t len,
				  struct idbuf *out, struct cr_err *err);

/* Chat (dec_chat.c). */
enum chat_kind dec_chat_detect(const struct dec_tok *t, const char *arch);

#endif
