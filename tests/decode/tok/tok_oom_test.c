/* tok_oom_test.c — every allocation the tokenizer makes is failed in turn
 * (malloc/calloc/realloc wrapped at link time): each failure must come back
 * as CR_ENOMEM with a message, leave the outputs NULL and leak nothing (the
 * sanitizer build checks the leaks), and the run after the last allocation
 * must succeed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tok_fixture.h"

static long fail_after = -1; /* allocations left before one fails; -1: never */
static int failed;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static int should_fail(void)
{
	if (fail_after < 0)
		return 0;
	if (fail_after == 0) {
		failed = 1;
		fail_after = -1; /* one failure per run */
		return 1;
	}
	fail_after--;
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	return should_fail() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	return should_fail() ? NULL : __real_realloc(p, n);
}

/* One pass over the API; returns the first non-OK status. */
static enum cr_status scenario(const struct dec_tok_vocab *v, struct cr_err *e)
{
	static const char text[] = "<|im_start|>user\nhello  wörld 123 😀<think>\n\xff";
	struct dec_tok *t = NULL;
	int32_t *ids = NULL;
	size_t n = 0, len = 0;
	char *out = NULL, *chat = NULL;
	enum cr_status st;

	st = dec_tok_new(v, &t, e);
	if (st) {
		assert_null(t);
		return st;
	}
	st = dec_tok_encode(t, text, sizeof text - 1, 1, 0, &ids, &n, e);
	if (st) {
		assert_null(ids);
		goto out;
	}
	st = dec_tok_decode(t, ids, n, 1, &out, &len, e);
	if (st) {
		assert_null(out);
		goto out;
	}
	assert_memory_equal(out, text, sizeof text - 1);
	st = dec_chat_format(t, "sys", "user", &chat, e);
	if (st)
		assert_null(chat);
out:
	free(ids);
	free(out);
	free(chat);
	dec_tok_free(t);
	return st;
}

static void run_all(struct vb *b)
{
	struct dec_tok_vocab *v = vb_vocab(b);
	long k;

	for (k = 0;; k++) {
		struct cr_err e;
		enum cr_status st;
		cr_err_init(&e);
		failed = 0;
		fail_after = k;
		st = scenario(v, &e);
		fail_after = -1;
		if (!failed) {
			assert_int_equal(st, CR_OK);
			break;
		}
		if (st != CR_ENOMEM)
			fail_msg("allocation %ld failed: status %d '%s', want CR_ENOMEM", k, (int)st, e.msg);
		assert_true(e.msg[0] != '\0');
	}
	assert_true(k > 10); /* the wrapping did reach the tokenizer */
}

static void tok_oom_bpe(void **state)
{
	struct vb b;

	(void)state;
	vb_init(&b, "gpt2", "qwen2");
	vb_bytes(&b);
	vb_tok(&b, "<|im_start|>", 3, 0);
	vb_tok(&b, "<|im_end|>", 3, 0);
	vb_tok(&b, "<think>", 4, 0);
	vb_tok(&b, "he", 1, 0);
	vb_merge(&b, "h", "e");
	b.v.arch = "qwen2";
	run_all(&b);
	vb_release(&b);
}

static void tok_oom_spm(void **state)
{
	struct vb b;

	(void)state;
	vb_init(&b, "llama", NULL);
	vb_tok(&b, "<unk>", 2, 0);
	vb_tok(&b, "<s>", 3, 0);
	for (int c = 0; c < 256; c++) {
		char s[8];
		snprintf(s, sizeof s, "<0x%02X>", c);
		vb_tok(&b, s, 6, 0);
	}
	vb_tok(&b, "\xe2\x96\x81", 1, -1);
	vb_tok(&b, "he", 1, -1);
	vb_tok(&b, "h", 1, -2);
	vb_tok(&b, "e", 1, -2);
	vb_tok(&b, "<|im_start|>", 3, 0);
	vb_tok(&b, "<think>", 4, 0);
	b.v.bos_id = 1;
	b.v.chat_template = "{{ '<|im_start|>' }}";
	run_all(&b);
	vb_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tok_oom_bpe),
		cmocka_unit_test(tok_oom_spm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
