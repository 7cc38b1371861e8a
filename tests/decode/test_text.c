/* test_text.c — the commands' text helpers: last-code-block extraction,
 * the `// @task` check, reasoning-token counting with and without think
 * markers, and UTF-8 repair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "decode/dec_run.h"

static char *code_of(const char *text)
{
	size_t b, e;

	dec_extract_code(text, strlen(text), &b, &e);
	return strndup(text + b, e - b);
}

static void test_extract(void **st)
{
	char *c;

	(void)st;
	c = code_of("plan\n```cuda\nfirst\n```\nthen\n```cpp\nsecond();\n```\ndone");
	assert_string_equal(c, "second();\n");
	free(c);
	c = code_of("<think>x</think>\n  ```\nindented fence\n  ```\n");
	assert_string_equal(c, "indented fence\n");
	free(c);
	/* unterminated last block runs to the end */
	c = code_of("```c\nint a;\n```\n```c\nint b;");
	assert_string_equal(c, "int b;");
	free(c);
	/* no block: what follows the last </think> */
	c = code_of("<think>hmm</think>raw code");
	assert_string_equal(c, "raw code");
	free(c);
	c = code_of("only prose");
	assert_string_equal(c, "only prose");
	free(c);
	c = code_of("");
	assert_string_equal(c, "");
	free(c);
}

/* The answer is what follows the reasoning, and fences are CommonMark's
 * (white-box attack on issue 31): an unclosed fence in the reasoning does
 * not swallow the answer's block; a fence only in the reasoning is no code
 * block; a ``` indented 4 spaces or carrying backticks after it is no
 * fence; a closing fence is at least as long as its opening and bare. */
static void test_extract_answer(void **st)
{
	static const char *const none[] = {
		"<think>\n```c\nint x;\n```\n</think>I cannot write this kernel",
		"<think>cut inside the reasoning\n```c\nint z;\n```\n",
		"```not code``` said the model\n",
		"    ```\nindented four: code, not a fence\n    ```\n",
		"only prose",
		"sketch:\n```c\nint s;\n```\n</think>\nI cannot provide a kernel.\n",
	};
	char *c;

	(void)st;
	c = code_of("<think>sketch:\n```c\nvoid f(\n</think>\nAnswer:\n```c\nint good;\n```\n");
	assert_string_equal(c, "int good;\n");
	free(c);
	c = code_of("```c\n/* a comment\n    ```\n*/\nint y;\n```\n");
	assert_string_equal(c, "/* a comment\n    ```\n*/\nint y;\n");
	free(c);
	c = code_of("````c\nuse ``` inside\n```\n````\n");
	assert_string_equal(c, "use ``` inside\n```\n");
	free(c);
	c = code_of("```c\na\n```c\nb\n```\n");
	assert_string_equal(c, "a\n```c\nb\n");
	free(c);
	c = code_of("```c\r\nint w;\r\n```\r\n");
	assert_string_equal(c, "int w;\r\n");
	free(c);
	for (size_t i = 0; i < sizeof none / sizeof *none; i++)
		assert_false(dec_has_code_block(none[i], strlen(none[i])));
	assert_true(dec_has_code_block("x\n```\ny\n", 9));
	c = code_of(none[0]);
	assert_string_equal(c, "I cannot write this kernel");
	free(c);
	c = code_of(none[1]);   /* all reasoning: no answer */
	assert_string_equal(c, "");
	free(c);
}

/* Think markers count only where reasoning is (attack round 2 on issue
 * 31): a <think> opening the text up to its first </think>, or a </think>
 * before any fence (the template opened the block); a tag in prose after
 * the kernel or in its code is text. ~~~ fences are fences, and a ```
 * inside a ~~~ block is its content. */
static void test_think_markers(void **st)
{
	static const char *const code_after[][2] = {
		{ "```c\nint k;\n```\nI did not need a <think> phase.\n", "int k;\n" },
		{ "```c\n// strips <think> blocks\nint k;\n```\n", "// strips <think> blocks\nint k;\n" },
		{ "<think>plan</think>\n```c\nint k;\n```\n(The `</think>` tag above closes it.)\n", "int k;\n" },
		{ "```c\nstatic const char *t = \"</think>\";\n```\nDone.\n",
		  "static const char *t = \"</think>\";\n" },
		{ "template-opened reasoning\n</think>\n```c\nint k;\n```\n", "int k;\n" },
		{ "~~~c\nint k;\n~~~\n", "int k;\n" },
		{ "```c\nint k;\n```\n~~~markdown\nan example:\n```\nx\n```\n~~~\n",
		  "an example:\n```\nx\n```\n" },
		{ "~~~c\nint k;\n```\n~~~\n", "int k;\n```\n" },
		/* template-opened reasoning sketching a fence: the </think> alone
		 * on its line ends it (attack round 3) */
		{ "Idea:\n```\nuse a plain loop\n</think>\nHere is the kernel:\n```c\nint k;\n```\n",
		  "int k;\n" },
	};
	(void)st;
	for (size_t i = 0; i < sizeof code_after / sizeof *code_after; i++) {
		char *c = code_of(code_after[i][0]);
		assert_true(dec_has_code_block(code_after[i][0], strlen(code_after[i][0])));
		assert_string_equal(c, code_after[i][1]);
		free(c);
	}
}

static void test_task_line(void **st)
{
	const char *a = "#include <x>\n// @task L1/relu\nvoid f();", *b = "//@task smoke/relu\n";
	const char *c = "/* @task no */\nint x;", *d = "x // @task not at line start\n";

	(void)st;
	assert_true(dec_has_task_line(a, strlen(a)));
	assert_true(dec_has_task_line(b, strlen(b)));
	assert_false(dec_has_task_line(c, strlen(c)));
	assert_false(dec_has_task_line(d, strlen(d)));
}

/* Tokens as a list of pieces: ends[] from their lengths. */
static int count(const char *const *pieces, int n)
{
	size_t ends[64], len = 0;
	char text[1024] = "";

	for (int i = 0; i < n; i++) {
		strcat(text, pieces[i]);
		len += strlen(pieces[i]);
		ends[i] = len;
	}
	return dec_reasoning_tokens(text, ends, n);
}

static void test_reasoning(void **st)
{
	const char *const full[] = { "<think>", "a", " b", " c", "</think>", "```", "x", "```" };
	const char *const opened[] = { "a", " b", "</think>", "```", "x" };      /* template opened it */
	const char *const unclosed[] = { "<think>", "a", " b", " c" };
	const char *const plain[] = { "I", " will", " write", "\n```", "cuda", "\n" };
	const char *const prose[] = { "no", " code" };
	/* the whole completion is the kernel, no fence (SmolLM2 writes these),
	 * an end-of-generation token of no text last */
	const char *const bare[] = { "__global__", " void", " k", "(float", " *x)", " {", "}\n", "" };
	const char *const split[] = { "<th", "ink>", "a", "</th", "ink>" };      /* markers over tokens */

	(void)st;
	assert_int_equal(count(full, 8), 3);
	assert_int_equal(count(opened, 5), 2);
	assert_int_equal(count(unclosed, 4), 3);
	assert_int_equal(count(plain, 6), 3);
	/* neither markers nor a fence: the extracted candidate is the whole
	 * text, so nothing is reasoning (was: every token) */
	assert_int_equal(count(prose, 2), 0);
	assert_int_equal(count(bare, 8), 0);
	{
		size_t b, e;

		dec_extract_code("__global__ void k() {}", 22, &b, &e);
		assert_true(b == 0 && e == 22); /* the premise: all of it is the candidate */
	}
	assert_int_equal(count(split, 5), 1);
}

static void test_utf8(void **st)
{
	char *r;

	(void)st;
	/* one U+FFFD for each maximal subpart: E2 82 cut short is one */
	r = dec_utf8_repair("ok \xC3\xA9 \xE2\x82", 8);
	assert_string_equal(r, "ok \xC3\xA9 \xEF\xBF\xBD");
	free(r);
	r = dec_utf8_repair("\xF0\x9F\x98x\xE2\x82\xC3", 7);
	assert_string_equal(r, "\xEF\xBF\xBDx\xEF\xBF\xBD\xEF\xBF\xBD");
	free(r);
	r = dec_utf8_repair("\xE0\x80\x80\xF4\x90\x80\x80", 7); /* overlong, past U+10FFFF: byte by byte */
	assert_string_equal(r, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
	free(r);
	r = dec_utf8_repair("a\0b\xFF", 4);
	assert_string_equal(r, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
	free(r);
	r = dec_utf8_repair("\xED\xA0\x80", 3); /* a surrogate is not valid UTF-8 */
	assert_string_equal(r, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extract),
		cmocka_unit_test(test_extract_answer),
		cmocka_unit_test(test_think_markers),
		cmocka_unit_test(test_task_line),
		cmocka_unit_test(test_reasoning),
		cmocka_unit_test(test_utf8),
	};

	return cmocka_run_group_tests_name("decode_text", tests, NULL, NULL);
}
