/* tok_pretok_test.c — the pre-tokenizer regexes (llama3, qwen2, gpt2) split
 * known strings where the patterns say they must: contractions, digit runs,
 * whitespace runs, newlines, punctuation, non-Latin scripts, emoji,
 * combining marks and invalid UTF-8. Expected splits are worked out by hand
 * from the regexes; pieces are joined with '|'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
		{ NULL, "gpt2" }, { "something-new", "gpt2" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		t = make(&b, cases[i].pre);
		assert_string_equal(dec_tok_pre_name(t), cases[i].name);
		dec_tok_free(t);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tok_pretok_names),
		cmocka_unit_test(tok_pretok_llama3),
		cmocka_unit_test(tok_pretok_qwen2),
		cmocka_unit_test(tok_pretok_gpt2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
