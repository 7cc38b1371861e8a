/* tok_spm_test.c — SentencePiece-style BPE ("llama"): spaces as U+2581 with
 * a leading one, pairs joined by highest score (leftmost on ties) with
 * hand-computed ids, byte fallback to <0xNN>, <unk> without byte tokens,
 * BOS by default, special tokens and round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tok_fixture.h"

#define SP "\xe2\x96\x81" /* ▁ */
#define BYTE(c) (3 + (c)) /* <0xNN> ids when byte tokens are present */

struct ids {
	int32_t sp, hello, hell, w_, wor_, world_, h_;
};

static struct dec_tok *make(struct vb *b, int with_bytes, struct ids *x)
{
	vb_init(b, "llama", NULL);
	vb_tok(b, "<unk>", 2, 0);
	vb_tok(b, "<s>", 3, 0);
	vb_tok(b, "</s>", 3, 0);
	if (with_bytes) {
		for (int c = 0; c < 256; c++) {
			char s[8];
			snprintf(s, sizeof s, "<0x%02X>", c);
			vb_tok(b, s, 6, 0);
		}
	}
	x->sp = vb_tok(b, SP, 1, -10);
	vb_tok(b, "h", 1, -10);
	vb_tok(b, "e", 1, -10);
	vb_tok(b, "l", 1, -10);
	vb_tok(b, "o", 1, -10);
	vb_tok(b, "w", 1, -10);
	vb_tok(b, "r", 1, -10);
	vb_tok(b, "d", 1, -10);
	x->h_ = vb_tok(b, SP "h", 1, -5);
	vb_tok(b, "he", 1, -3);
	vb_tok(b, "el", 1, -4);
	vb_tok(b, "ll", 1, -2);
	vb_tok(b, "lo", 1, -6);
	vb_tok(b, "ell", 1, -3.5f);
	x->hell = vb_tok(b, "hell", 1, -1);
	x->hello = vb_tok(b, "hello", 1, -0.5f);
	x->w_ = vb_tok(b, SP "w", 1, -2);
	vb_tok(b, "or", 1, -3);
	x->wor_ = vb_tok(b, SP "wor", 1, -1.5f);
	vb_tok(b, "ld", 1, -4);
	x->world_ = vb_tok(b, SP "world", 1, -1);
	b->v.unk_id = 0;
	b->v.bos_id = 1;
	b->v.eos_id = 2;
	return vb_build(b);
}

static void tok_spm_scores(void **state)
{
	struct vb b;
	struct ids x;
	struct dec_tok *t = make(&b, 1, &x);

	(void)state;
	/* ▁ h e l l o: ll(-2), he(-3), hell(-1), hello(-0.5); "▁hello" is no token */
	EXPECT_IDS(t, "hello", 0, 0, x.sp, x.hello);
	/* ties at -2 (ll, ▁w) and -3 (he, or) go left first; ▁wor + ld -> ▁world */
	EXPECT_IDS(t, "hello world", 0, 0, x.sp, x.hello, x.world_);
	/* BOS by default for SPM */
	assert_int_equal(dec_tok_add_bos(t), 1);
	assert_int_equal(dec_tok_bos(t), 1);
	EXPECT_IDS(t, "hello", 0, -1, 1, x.sp, x.hello);
	EXPECT_IDS(t, "hello", 0, 1, 1, x.sp, x.hello);
	/* a file that says add_space_prefix = false */
	dec_tok_set_add_space_prefix(t, 0);
	EXPECT_IDS(t, "hello", 0, 0, x.hello);
	EXPECT_IDS(t, "hello world", 0, 0, x.hello, x.world_);
	expect_round_trip(t, " hello", 6);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_spm_byte_fallback(void **state)
{
	struct vb b;
	struct ids x;
	struct dec_tok *t = make(&b, 1, &x);
	char buf[4];

	(void)state;
	EXPECT_IDS(t, "h\xe2\x82\xac", 0, 0, x.h_, BYTE(0xE2), BYTE(0x82), BYTE(0xAC));
	/* invalid UTF-8: one byte per symbol, the following space stays a space */
	EXPECT_IDS(t, "\xf0\x9f\x98 h", 0, 0, x.sp, BYTE(0xF0), BYTE(0x9F), BYTE(0x98), x.h_);
	assert_int_equal(dec_tok_piece(t, BYTE(0xE2), buf, sizeof buf), 1);
	assert_int_equal((unsigned char)buf[0], 0xE2);
	assert_int_equal(dec_tok_piece(t, x.world_, buf, sizeof buf), 6);
	assert_memory_equal(buf, " wor", 4);
	dec_tok_free(t);
	vb_release(&b);

	t = make(&b, 0, &x); /* no byte tokens: one <unk> per unknown character */
	EXPECT_IDS(t, "h\xe2\x82\xac\xe2\x82\xac", 0, 0, x.h_, 0, 0);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_spm_special(void **state)
{
	struct vb b;
	struct ids x;
	struct dec_tok *t = make(&b, 1, &x);
	int32_t *ids = NULL;
	size_t n = 0, len = 0;
	char *text = NULL;
	struct cr_err e;

	(void)state;
	/* parsed: text after a special token gets its leading ▁ too */
	EXPECT_IDS(t, "<s>hello</s>", 1, 0, 1, x.sp, x.hello, 2);
	/* not parsed: the markup is text, spelled in bytes */
	EXPECT_IDS(t, "<s>hello</s>", 0, 0, x.sp, BYTE('<'), BYTE('s'), BYTE('>'), x.hello,
		   BYTE('<'), BYTE('/'), BYTE('s'), BYTE('>'));
	/* decode drops the special tokens unless asked, and the added spaces */
	cr_err_init(&e);
	assert_int_equal(dec_tok_encode(t, "<s>hello</s> world", 18, 1, 1, &ids, &n, &e), CR_OK);
	assert_int_equal(dec_tok_decode(t, ids, n, 0, &text, &len, &e), CR_OK);
	assert_string_equal(text, "hello world");
	free(text);
	assert_int_equal(dec_tok_decode(t, ids, n, 1, &text, &len, &e), CR_OK);
	assert_string_equal(text, "<s><s>hello</s> world");
	free(text);
	free(ids);
	assert_true(dec_tok_is_eog(t, 2));
	assert_false(dec_tok_is_eog(t, 1));
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_spm_round_trip(void **state)
{
	struct vb b;
	struct ids x;
	struct dec_tok *t = make(&b, 1, &x);
	static const char *const s[] = {
		"hello world", "  two leading spaces", "trailing  ", "tabs\tand\nnew\r\nlines",
		"emoji 😀👍🏽 CJK 你好 Cyrillic Привет", "combining e\xcc\x81", "x", " ",
		"hello\n\nworld  hello",
	};
	static const char invalid[] = "bad \xff\xfe \xc3 \xe2\x82 end";

	(void)state;
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
		expect_round_trip(t, s[i], strlen(s[i]));
	expect_round_trip(t, invalid, sizeof invalid - 1);
	{
		uint64_t seed = 7;
		char buf[300];
		for (int i = 0; i < 300; i++) {
			size_t n = random_text(&seed, buf, 10 + (size_t)i % 290, 1);
			expect_round_trip(t, buf, n);
		}
	}
	dec_tok_free(t);
	vb_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tok_spm_scores),
		cmocka_unit_test(tok_spm_byte_fallback),
		cmocka_unit_test(tok_spm_special),
		cmocka_unit_test(tok_spm_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
