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
	r = dec_utf8_repair("ok \xC3\xA9 \xE2\x82", 8);
	assert_string_equal(r, "ok \xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD");
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
		cmocka_unit_test(test_task_line),
		cmocka_unit_test(test_reasoning),
		cmocka_unit_test(test_utf8),
	};

	return cmocka_run_group_tests_name("decode_text", tests, NULL, NULL);
}
