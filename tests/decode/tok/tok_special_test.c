/* tok_special_test.c — special tokens in byte-level BPE: literal control
 * tokens parsed only when asked, user-defined ones always, longest first;
 * BOS defaults by pre-tokenizer and by the file's flag; the end-of-generation
 * set; decode with and without special tokens; error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tok_fixture.h"

enum { IM_START = 256, IM_END, EOT_TEXT, IM_PREFIX, THINK, BOT, EOT_ID, HI, REPO, PLAIN };

static void fill(struct vb *b, const char *pre)
{
	vb_init(b, "gpt2", pre);
	vb_bytes(b);
	assert_int_equal(vb_tok(b, "<|im_start|>", 3, 0), IM_START);
	assert_int_equal(vb_tok(b, "<|im_end|>", 3, 0), IM_END);
	assert_int_equal(vb_tok(b, "<|endoftext|>", 3, 0), EOT_TEXT);
	assert_int_equal(vb_tok(b, "<|im", 3, 0), IM_PREFIX); /* a shorter overlapping special */
	assert_int_equal(vb_tok(b, "<think>", 4, 0), THINK);  /* user-defined */
	assert_int_equal(vb_tok(b, "<|begin_of_text|>", 3, 0), BOT);
	assert_int_equal(vb_tok(b, "<|eot_id|>", 1, 0), EOT_ID); /* typed normal: forced control */
	assert_int_equal(vb_tok(b, "hi", 1, 0), HI);
	assert_int_equal(vb_tok(b, "<|repo_name|>", 3, 0), REPO);
	assert_int_equal(vb_tok(b, "plain", 1, 0), PLAIN);
	vb_merge(b, "h", "i");
	b->v.eos_id = EOT_TEXT;
}

static struct dec_tok *make(struct vb *b, const char *pre)
{
	fill(b, pre);
	return vb_build(b);
}

static void tok_special_parse(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");

	(void)state;
	EXPECT_IDS(t, "<|im_start|>hi<|im_end|>", 1, 0, IM_START, HI, IM_END);
	/* longest first: <|im_start|> wins over its prefix <|im */
	EXPECT_IDS(t, "<|im<|im_start|>", 1, 0, IM_PREFIX, IM_START);
	/* not parsed: plain text, byte by byte ('<' '|' 'i' 'm' ...) */
	EXPECT_IDS(t, "<|im_end|>", 0, 0, '<', '|', 'i', 'm', '_', 'e', 'n', 'd', '|', '>');
	/* user-defined tokens are matched either way */
	EXPECT_IDS(t, "hi<think>hi", 0, 0, HI, THINK, HI);
	EXPECT_IDS(t, "hi<think>hi", 1, 0, HI, THINK, HI);
	/* adjacent and repeated specials, text between them kept whole */
	EXPECT_IDS(t, "<|im_end|><|im_end|> hi", 1, 0, IM_END, IM_END, ' ', HI);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_special_decode(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");
	const int32_t ids[] = { IM_START, HI, THINK, ' ', IM_END };
	char *text = NULL;
	size_t len = 0;
	struct cr_err e;

	(void)state;
	cr_err_init(&e);
	assert_int_equal(dec_tok_decode(t, ids, 5, 1, &text, &len, &e), CR_OK);
	assert_string_equal(text, "<|im_start|>hi<think> <|im_end|>");
	assert_int_equal(len, strlen(text));
	free(text);
	assert_int_equal(dec_tok_decode(t, ids, 5, 0, &text, &len, &e), CR_OK);
	assert_string_equal(text, "hi<think> "); /* user-defined text stays */
	free(text);
	assert_int_equal(dec_tok_decode(t, ids, 0, 0, &text, &len, &e), CR_OK);
	assert_string_equal(text, "");
	assert_int_equal(len, 0);
	free(text);
	assert_true(dec_tok_is_special(t, IM_END));
	assert_false(dec_tok_is_special(t, THINK));
	assert_int_equal(dec_tok_lookup(t, "<think>", 7), THINK);
	assert_int_equal(dec_tok_lookup(t, "nope", 4), -1);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_special_eog(void **state)
{
	struct vb b;
	struct dec_tok *t;

	(void)state;
	fill(&b, "qwen2");
	b.v.eom_id = PLAIN; /* whatever the file names as eom ends generation */
	t = vb_build(&b);
	assert_true(dec_tok_is_eog(t, EOT_TEXT));
	assert_true(dec_tok_is_eog(t, IM_END));
	assert_true(dec_tok_is_eog(t, EOT_ID));
	assert_true(dec_tok_is_eog(t, REPO));
	assert_true(dec_tok_is_eog(t, PLAIN));
	assert_false(dec_tok_is_eog(t, IM_START));
	assert_false(dec_tok_is_eog(t, THINK));
	assert_false(dec_tok_is_eog(t, HI));
	assert_false(dec_tok_is_eog(t, -1));
	assert_false(dec_tok_is_eog(t, 1 << 20));
	assert_int_equal(dec_tok_eos(t), EOT_TEXT);
	/* <|eot_id|> was typed normal; as an end marker it became control */
	assert_true(dec_tok_is_special(t, EOT_ID));
	EXPECT_IDS(t, "<|eot_id|>", 1, 0, EOT_ID);
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_special_bos(void **state)
{
	struct vb b;
	struct dec_tok *t;
	int32_t *ids = NULL;
	size_t n = 0;
	struct cr_err e;

	(void)state;
	/* llama3 adds BOS by default */
	fill(&b, "llama-bpe");
	b.v.bos_id = BOT;
	t = vb_build(&b);
	assert_int_equal(dec_tok_add_bos(t), 1);
	EXPECT_IDS(t, "hi", 0, -1, BOT, HI);
	EXPECT_IDS(t, "hi", 0, 0, HI);
	/* a chat prompt that writes BOS itself: parse_special=1, add_bos=0 */
	EXPECT_IDS(t, "<|begin_of_text|>hi", 1, 0, BOT, HI);
	/* the default does not double it; asking explicitly does */
	EXPECT_IDS(t, "<|begin_of_text|>hi", 1, -1, BOT, HI);
	EXPECT_IDS(t, "<|begin_of_text|>hi", 1, 1, BOT, BOT, HI);
	dec_tok_free(t);
	vb_release(&b);

	/* the file's flag wins */
	fill(&b, "llama-bpe");
	b.v.bos_id = BOT;
	b.v.add_bos = 0;
	t = vb_build(&b);
	assert_int_equal(dec_tok_add_bos(t), 0);
	EXPECT_IDS(t, "hi", 0, -1, HI);
	EXPECT_IDS(t, "hi", 0, 1, BOT, HI);
	dec_tok_free(t);
	vb_release(&b);

	/* qwen2 adds none by default, even with a BOS id; add_eos appends EOS */
	fill(&b, "qwen2");
	b.v.bos_id = BOT;
	b.v.add_eos = 1;
	t = vb_build(&b);
	assert_int_equal(dec_tok_add_bos(t), 0);
	EXPECT_IDS(t, "hi", 0, -1, HI, EOT_TEXT);
	EXPECT_IDS(t, "hi", 0, 0, HI);
	dec_tok_free(t);
	vb_release(&b);

	/* asking for BOS when there is none */
	t = make(&b, "qwen2");
	cr_err_init(&e);
	assert_int_equal(dec_tok_encode(t, "hi", 2, 0, 1, &ids, &n, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "BOS"));
	assert_null(ids);
	dec_tok_free(t);
	vb_release(&b);
}

static void expect_new_fails(struct vb *b, const char *needle)
{
	struct dec_tok *t = (struct dec_tok *)1;
	struct cr_err e;

	cr_err_init(&e);
	assert_int_equal(dec_tok_new(vb_vocab(b), &t, &e), CR_EINPUT);
	assert_null(t);
	if (!strstr(e.msg, needle))
		fail_msg("error '%s' does not mention '%s'", e.msg, needle);
}

static void tok_special_errors(void **state)
{
	struct vb b;
	struct dec_tok *t = (struct dec_tok *)1;
	struct dec_tok_vocab v;
	struct cr_err e;

	(void)state;
	fill(&b, "qwen2");
	b.v.model = "bert";
	expect_new_fails(&b, "unknown tokenizer model 'bert'");
	vb_release(&b);

	fill(&b, "qwen2");
	vb_vocab(&b);
	b.v.n_merges = 0;
	b.v.merges = NULL;
	cr_err_init(&e);
	assert_int_equal(dec_tok_new(&b.v, &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "merges"));
	vb_release(&b);

	fill(&b, "qwen2");
	vb_tok(&b, "hi", 1, 0); /* duplicate */
	expect_new_fails(&b, "duplicate token 'hi'");
	vb_release(&b);

	fill(&b, "qwen2");
	b.v.add_bos = 1; /* BOS wanted, none named */
	expect_new_fails(&b, "BOS");
	vb_release(&b);

	/* no tokens at all */
	memset(&v, 0, sizeof v);
	v.model = "gpt2";
	cr_err_init(&e);
	assert_int_equal(dec_tok_new(&v, &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "no tokens"));
	v.model = NULL;
	cr_err_init(&e);
	assert_int_equal(dec_tok_new(&v, &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "model"));
	dec_tok_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tok_special_parse),
		cmocka_unit_test(tok_special_decode),
		cmocka_unit_test(tok_special_eog),
		cmocka_unit_test(tok_special_bos),
		cmocka_unit_test(tok_special_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
