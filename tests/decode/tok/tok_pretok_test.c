/* tok_pretok_test.c — the pre-tokenizer regexes (llama3, qwen2, gpt2,
 * smollm's two in turn, llama.cpp's four-regex default) split
 * known strings where the patterns say they must: contractions, digit runs,
 * whitespace runs, newlines, punctuation, non-Latin scripts, emoji,
 * combining marks and invalid UTF-8. Expected splits are worked out by hand
 * from the regexes; pieces are joined with '|'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/tok/dec_tok_impl.h"
#include "tok_fixture.h"

struct pieces {
	const char *text;
	char out[1024];
	size_t k;
};

static int collect(void *ctx, size_t s, size_t e)
{
	struct pieces *p = ctx;

	if (p->k && p->k < sizeof p->out - 1)
		p->out[p->k++] = '|';
	for (size_t i = s; i < e && p->k < sizeof p->out - 1; i++)
		p->out[p->k++] = p->text[i];
	p->out[p->k] = '\0';
	return 0;
}

static struct dec_tok *make(struct vb *b, const char *pre)
{
	vb_init(b, "gpt2", pre);
	vb_bytes(b);
	vb_tok(b, vb_bl("ab"), 1, 0);
	vb_merge(b, "a", "b");
	return vb_build(b);
}

static void check_split(const struct dec_tok *t, const char *text, const char *want)
{
	struct pieces p = { .text = text };
	struct cr_err e;

	cr_err_init(&e);
	if (dec_tok_pretokenize(t, text, strlen(text), collect, &p, &e) != CR_OK)
		fail_msg("pretokenize: %s", e.msg);
	if (strcmp(p.out, want) != 0)
		fail_msg("split of '%s' (%s)\n got: '%s'\nwant: '%s'", text, dec_tok_pre_name(t), p.out, want);
}

static void tok_pretok_names(void **state)
{
	struct vb b;
	struct dec_tok *t;
	static const struct { const char *pre, *name; } cases[] = {
		{ "llama-bpe", "llama3" }, { "llama3", "llama3" }, { "smaug-bpe", "llama3" },
		{ "qwen2", "qwen2" }, { "deepseek-r1-qwen", "qwen2" }, { "gpt-2", "gpt2" },
		{ "phi-2", "gpt2" }, { "smollm", "smollm" }, { "starcoder", "smollm" },
		{ "default", "default" }, { NULL, "default" },
	};
	/* names the decoder has no rule for: an error naming the key and the
	 * value, never a fallback (gpt2 is llama.cpp's "gpt-2"; the others
	 * are real llama.cpp names with rules of their own) */
	static const char *const unknown[] = { "something-new", "gpt2", "deepseek-coder", "tekken",
					       "gpt-4o", "" };
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		t = make(&b, cases[i].pre);
		assert_string_equal(dec_tok_pre_name(t), cases[i].name);
		dec_tok_free(t);
		vb_release(&b);
	}
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		struct cr_err e;
		char want[128];

		vb_init(&b, "gpt2", unknown[i]);
		vb_bytes(&b);
		vb_tok(&b, vb_bl("ab"), 1, 0);
		vb_merge(&b, "a", "b");
		cr_err_init(&e);
		t = NULL;
		assert_int_equal(dec_tok_new(vb_vocab(&b), &t, &e), CR_EINPUT);
		assert_null(t);
		snprintf(want, sizeof want, "tokenizer.ggml.pre = '%s'", unknown[i]);
		if (!strstr(e.msg, want))
			fail_msg("pre '%s': message '%s' does not name the key and value", unknown[i], e.msg);
		vb_release(&b);
	}
}

static void tok_pretok_llama3(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "llama-bpe");

	(void)state;
	check_split(t, "Hello world's 12345 abc", "Hello| world|'s| |123|45| abc");
	check_split(t, "I'll we're they've don't I'M it'S", "I|'ll| we|'re| they|'ve| don|'t| I|'M| it|'S");
	check_split(t, "abc123def 1234567", "abc|123|def| |123|456|7");
	check_split(t, "a  b\n\n  c\t d   ", "a| | b|\n\n| | c|\t| d|   ");
	check_split(t, "foo.\nbar\r\n\r\nbaz", "foo|.\n|bar|\r\n\r\n|baz");
	check_split(t, "Hi!!! (ok) x+=1;", "Hi|!!!| (|ok|)| x|+=|1|;");
	check_split(t, "Привет мир", "Привет| мир");
	check_split(t, "你好世界，再见", "你好世界|，再见");
	check_split(t, "مرحبا بالعالم", "مرحبا| بالعالم");
	check_split(t, "hi 👋🏽 there😀", "hi| 👋🏽| there|😀");
	check_split(t, "cafe\xcc\x81 ok", "cafe|\xcc\x81| ok");
	check_split(t, "１２３４ ٣٤٥٦", "１２３|４| |٣٤٥|٦");
	check_split(t, "a\xff b\xc3", "a|\xff| b|\xc3");
	check_split(t, "    def f():\n\treturn 0", "   | def| f|():\n|\treturn| |0");
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_pretok_qwen2(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "qwen2");

	(void)state;
	check_split(t, "Hello world's 12345 abc", "Hello| world|'s| |1|2|3|4|5| abc");
	check_split(t, "abc123def", "abc|1|2|3|def");
	check_split(t, "I'll DON'T", "I|'ll| DON|'T");
	check_split(t, "a  b\n\n  c\t d   ", "a| | b|\n\n| | c|\t| d|   ");
	check_split(t, "你好世界，再见", "你好世界|，再见");
	check_split(t, "１２ ٣٤", "１|２| |٣|٤");
	check_split(t, "x = [1, 22];\n", "x| =| [|1|,| |2|2|];\n");
	dec_tok_free(t);
	vb_release(&b);
}

static void tok_pretok_gpt2(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "gpt-2");

	(void)state;
	check_split(t, "Hello world's 12345 abc", "Hello| world|'s| 12345| abc");
	check_split(t, "I'll we're they've don't I'M", "I|'ll| we|'re| they|'ve| don|'t| I|'|M");
	check_split(t, "a  b\n\n  c\t d   ", "a| | b|\n\n | c|\t| d|   ");
	check_split(t, "Hi!!! (ok)", "Hi|!!!| (|ok|)");
	check_split(t, "Привет мир 你好", "Привет| мир| 你好");
	check_split(t, "a\nb", "a|\n|b");
	dec_tok_free(t);
	vb_release(&b);
}

/* SmolLM's rule (llama.cpp's LLAMA_VOCAB_PRE_TYPE_SMOLLM): the regex \p{N}
 * first cuts the text into single number characters and the runs between
 * them; then the gpt2 regex splits each run on its own, so its \s+(?!\S)
 * sees the end of the run (not the digit after it) and takes every
 * whitespace character before a digit. Worked out by hand:
 *   "x =    42"  -> "x =    " 4 2; the run: x, " =", then "    " (end of
 *                   run, so (?!\S) holds for all four)     -> x| =|    |4|2
 *   gpt2 alone: "    42": \s+(?!\S) backs off one space, " 42" is
 *                   ` ?\p{N}+`                              -> x| =|   | 42
 *   "\n\n2."     -> "\n\n" 2 .: "\n\n" ends its run        -> \n\n|2|.
 *   gpt2 alone: "\n" (the second is followed by 2), then "\n" matches no
 *                   alternative (the optional prefix is ' ' only) and is a
 *                   gap of its own                            -> \n|\n|2|.
 *   "  1. a\n  2. b" -> runs "  ", ". a\n  ", ". b" around 1 and 2
 *                                                   -> "  |1|.| a|\n  |2|.| b"
 *   columns "a   1\nbb 22\n" -> runs "a   ", "\nbb ", "\n": "\n" before a
 *                   letter is a gap, the space before 2 ends its run
 *                                                   -> a|   |1|\n|bb| |2|2|\n
 */
static void tok_pretok_smollm(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "smollm");
	struct dec_tok *g;
	struct vb bg;

	(void)state;
	check_split(t, "x =    42", "x| =|    |4|2");
	check_split(t, "\n\n2.", "\n\n|2|.");
	check_split(t, "  1. a\n  2. b", "  |1|.| a|\n  |2|.| b");
	check_split(t, "a   1\nbb 22\n", "a|   |1|\n|bb| |2|2|\n");
	check_split(t, "x\t= 1", "x|\t|=| |1");
	/* letters, contractions and punctuation as gpt2; digits one by one,
	 * Unicode numbers too (\p{N}) */
	check_split(t, "Hello world's 12345 abc", "Hello| world|'s| |1|2|3|4|5| abc");
	check_split(t, "v2.0 １２ ٣", "v|2|.|0| |１|２| |٣");
	check_split(t, "Hi!!! (ok) x+=1;", "Hi|!!!| (|ok|)| x|+=|1|;");
	check_split(t, "a\xff 1\xc3", "a|\xff| |1|\xc3");
	/* the same strings under gpt2, where they part */
	g = make(&bg, "gpt-2");
	check_split(g, "x =    42", "x| =|   | 42");
	check_split(g, "\n\n2.", "\n|\n|2|.");
	check_split(g, "  1. a\n  2. b", " | 1|.| a|\n | 2|.| b");
	dec_tok_free(g);
	vb_release(&bg);
	dec_tok_free(t);
	vb_release(&b);
}

/* llama.cpp's "default" (also its choice when the file names none): runs of
 * punctuation (\p{P} and $+<=>^~|) first, gpt2 within the rest, number runs,
 * then three ASCII digits at a time. "a+=12345;" -> a | += | 12345 | ; ->
 * 12345 -> 123|45. */
static void tok_pretok_default(void **state)
{
	struct vb b;
	struct dec_tok *t = make(&b, "default");

	(void)state;
	check_split(t, "a+=12345;", "a|+=|123|45|;");
	/* " 42" from gpt2 is cut again by \p{N}+ */
	check_split(t, "Hello, world 42", "Hello|,| world| |42");
	/* '=' is a symbol the first regex lists: "x ", "=", "    42" */
	check_split(t, "x =    42", "x| |=|   | |42");
	dec_tok_free(t);
	vb_release(&b);
}

/* Ids on a smollm-style byte-level vocabulary (ids 0..255 = bytes) with
 * merges for runs of spaces and newlines and for " 42": the merges apply
 * within a pre-token only, so under smollm " 42" can never form while the
 * four spaces before it become one token; gpt2 gives the opposite. */
enum { SP2 = 256, SP4, SP_4, SP_42, NL2, NLSP2 };

static struct dec_tok *make_smol(struct vb *b, const char *pre)
{
	vb_init(b, "gpt2", pre);
	vb_bytes(b);
	assert_int_equal(vb_tok(b, "\xc4\xa0\xc4\xa0", 1, 0), SP2);                 /* "ĠĠ" */
	assert_int_equal(vb_tok(b, "\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0", 1, 0), SP4);
	assert_int_equal(vb_tok(b, "\xc4\xa0" "4", 1, 0), SP_4);                     /* "Ġ4" */
	assert_int_equal(vb_tok(b, "\xc4\xa0" "42", 1, 0), SP_42);
	assert_int_equal(vb_tok(b, "\xc4\x8a\xc4\x8a", 1, 0), NL2);                 /* "ĊĊ" */
	assert_int_equal(vb_tok(b, "\xc4\x8a\xc4\xa0\xc4\xa0", 1, 0), NLSP2);      /* "ĊĠĠ" */
	vb_merge(b, "\xc4\xa0", "\xc4\xa0");                 /* r0 Ġ Ġ */
	vb_merge(b, "\xc4\xa0\xc4\xa0", "\xc4\xa0\xc4\xa0"); /* r1 ĠĠ ĠĠ */
	vb_merge(b, "\xc4\xa0", "4");                         /* r2 Ġ 4 */
	vb_merge(b, "\xc4\xa0" "4", "2");                     /* r3 Ġ4 2 */
	vb_merge(b, "\xc4\x8a", "\xc4\x8a");                 /* r4 Ċ Ċ */
	vb_merge(b, "\xc4\x8a", "\xc4\xa0\xc4\xa0");         /* r5 Ċ ĠĠ */
	return vb_build(b);
}

/* From the splits above: "    " merges (r0 leftmost twice, then r1) to
 * SP4; "\n  " to Ċ ĠĠ (r0) then NLSP2 (r5); single characters stay bytes.
 * Under gpt2 "   " is SP2 + ' ' and " 42" is SP_4 then SP_42. */
static void tok_pretok_smollm_ids(void **state)
{
	struct vb b;
	struct dec_tok *t = make_smol(&b, "smollm");

	(void)state;
	EXPECT_IDS(t, "x =    42", 0, 0, 'x', ' ', '=', SP4, '4', '2');
	EXPECT_IDS(t, "\n\n2.", 0, 0, NL2, '2', '.');
	EXPECT_IDS(t, "  1. a\n  2. b", 0, 0, SP2, '1', '.', ' ', 'a', NLSP2, '2', '.', ' ', 'b');
	EXPECT_IDS(t, "a   1\nbb 22\n", 0, 0, 'a', SP2, ' ', '1', '\n', 'b', 'b', ' ', '2', '2', '\n');
	{
		static const char all[] = "x =    42\n\n2.  1. a\n  2. b";

		expect_round_trip(t, all, sizeof all - 1);
	}
	dec_tok_free(t);
	vb_release(&b);
	t = make_smol(&b, "gpt-2");
	EXPECT_IDS(t, "x =    42", 0, 0, 'x', ' ', '=', SP2, ' ', SP_42);
	EXPECT_IDS(t, "\n\n2.", 0, 0, '\n', '\n', '2', '.');
	dec_tok_free(t);
	vb_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tok_pretok_names),
		cmocka_unit_test(tok_pretok_llama3),
		cmocka_unit_test(tok_pretok_qwen2),
		cmocka_unit_test(tok_pretok_gpt2),
		cmocka_unit_test(tok_pretok_smollm),
		cmocka_unit_test(tok_pretok_default),
		cmocka_unit_test(tok_pretok_smollm_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
