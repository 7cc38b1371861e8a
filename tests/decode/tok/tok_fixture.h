/* tok_fixture.h — builds small synthetic vocabularies for the tokenizer
 * tests: a growable list of tokens (text, type, score) and merges, turned
 * into a struct dec_tok_vocab. The GPT-2 byte mapping is written out here
 * independently of decode/tok/ so the tests check it rather than reuse it. */
#ifndef TOK_FIXTURE_H
#define TOK_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "decode/tok/dec_tok.h"

struct vb {
	char **tok;
	size_t *len;
	int32_t *type;
	float *score;
	size_t n, cap;
	char **mrg;
	size_t *mlen;
	size_t nm, mcap;
	struct dec_tok_vocab v;
};

void vb_init(struct vb *b, const char *model, const char *pre);
void vb_release(struct vb *b);
/* Adds a token (NUL-terminated text as stored in the vocab); returns its id. */
int32_t vb_tok(struct vb *b, const char *text, int32_t type, float score);
int32_t vb_tok_n(struct vb *b, const char *text, size_t n, int32_t type, float score);
/* Adds the merge "a b" (rank = order of calls). */
void vb_merge(struct vb *b, const char *a, const char *c);
/* Adds the 256 byte-level tokens so that id == byte value (call first). */
void vb_bytes(struct vb *b);
/* The byte-level spelling of raw text (NUL-terminated, static buffer). */
const char *vb_bl(const char *raw);
/* Fills and returns b->v (ids default to -1, add_bos/add_eos to -1). */
struct dec_tok_vocab *vb_vocab(struct vb *b);
/* dec_tok_new on b->v; fails the test on error. */
struct dec_tok *vb_build(struct vb *b);

/* Encodes and compares with the expected ids; fails the test with both lists. */
void expect_ids(const struct dec_tok *t, const char *text, size_t len, int parse_special,
		int add_bos, const int32_t *want, size_t n_want);
#define EXPECT_IDS(t, text, ps, bos, ...)                                                  \
	do {                                                                               \
		const int32_t want_[] = { __VA_ARGS__ };                                   \
		expect_ids((t), (text), strlen(text), (ps), (bos), want_,                  \
			   sizeof want_ / sizeof want_[0]);                                \
	} while (0)
/* Deterministic random text of n bytes: ASCII words, runs of spaces, tabs,
 * newlines, digits, punctuation, 2-4 byte characters (never U+2581) and,
 * when invalid, stray bytes that are not UTF-8. Returns the length used. */
size_t random_text(uint64_t *state, char *buf, size_t n, int invalid);
/* Encode (no special parsing, no BOS) then decode must give text back. */
void expect_round_trip(const struct dec_tok *t, const char *text, size_t len);

#endif
