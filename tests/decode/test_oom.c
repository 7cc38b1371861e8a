/* test_oom.c — every allocation of the model path is failed in turn
 * (malloc/calloc/realloc/aligned_alloc wrapped at link time): parsing a GGUF
 * image, loading the model, building the tokenizer, a forward pass and a
 * batched generation must each report the failure (never crash) and free
 * what they hold — the sanitizer build checks the leaks — and the run after
 * the last allocation must succeed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/engine/dec_engine.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/dec_run.h"
#include "dec_testutil.h"

static long fail_after = -1; /* allocations left before one fails; -1: never */
static int failed;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);

static int should_fail(void)
{
	if (fail_after < 0)
		return 0;
	if (fail_after == 0) {
		failed = 1;
		fail_after = -1;
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

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	return should_fail() ? NULL : __real_aligned_alloc(a, n);
}

/* The whole path once; the first non-OK status. */
static enum cr_status scenario(const uint8_t *img, size_t size, struct cr_err *e)
{
	struct dec_gguf *g = NULL;
	struct dec_model *m = NULL;
	struct dec_tok *tok = NULL;
	struct dec_state *s = NULL;
	struct dec_gen_out outs[2];
	struct dec_gen_params p = { 3, { 0.8f, 20, 0.9f, 0.01f }, 7, "oom/task", 0, NULL, 0, 2, NULL, NULL, 1 };
	int32_t prompt[4] = { 10, 20, 30, 40 };
	enum cr_status st;

	memset(outs, 0, sizeof outs);
	if ((st = dec_gguf_from_buffer(img, size, "oom.gguf", &g, e)))
		goto out;
	st = dec_model_load(g, &m, e); /* takes g, also on failure */
	g = NULL;
	if (st)
		goto out;
	if ((st = dec_vocab_tokenizer(m->gguf, &tok, e)) ||
	    (st = dec_state_new_seqs(m, 16, 8, 2, 1, &s, e)) ||
	    (st = dec_generate_n(s, tok, prompt, 4, NULL, &p, 2, outs, e)))
		goto out;
	assert_int_equal(outs[0].n_tokens, 3);
	/* the engine: two requests, one of two samples sharing its prompt */
	{
		struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = 2, .max_ctx = 16, .n_threads = 1 };
		struct dec_engine *eng = NULL;
		struct dec_gen_out eo[3];
		struct dec_req r1 = { .prompt = prompt, .n_prompt = 4, .n = 2, .p = p, .tok = tok, .outs = eo };
		struct dec_req r2 = { .prompt = prompt, .n_prompt = 3, .n = 1, .p = p, .tok = tok, .outs = eo + 2 };

		memset(eo, 0, sizeof eo);
		if (!(st = dec_engine_new(m, &cfg, &eng, e)) && !(st = dec_engine_submit(eng, &r1, e)) &&
		    !(st = dec_engine_submit(eng, &r2, e)) && !(st = dec_engine_run(eng, e))) {
			assert_int_equal(eo[1].n_tokens, outs[1].n_tokens);
			assert_memory_equal(eo[1].tokens, outs[1].tokens, sizeof(int32_t) * (size_t)eo[1].n_tokens);
		}
		for (int i = 0; i < 3; i++)
			dec_gen_out_release(&eo[i]);
		dec_engine_free(eng);
	}
out:
	dec_gen_out_release(&outs[0]);
	dec_gen_out_release(&outs[1]);
	dec_state_free(s);
	dec_tok_free(tok);
	dec_model_free(m);
	dec_gguf_free(g);
	return st;
}

static void test_every_allocation(void **state)
{
	struct tiny_spec spec;
	size_t size;
	uint8_t *img;
	long k;

	(void)state;
	tiny_spec_default(&spec, "qwen3", DEC_T_Q8_0);
	spec.n_layers = 1;
	img = tiny_model(&spec, &size);
	assert_non_null(img);
	for (k = 0;; k++) {
		struct cr_err e;
		enum cr_status st;

		cr_err_init(&e);
		failed = 0;
		fail_after = k;
		st = scenario(img, size, &e);
		fail_after = -1;
		if (!failed) {
			assert_int_equal(st, CR_OK);
			break;
		}
		if (st == CR_OK)
			fail_msg("allocation %ld failed but the run reported success", k);
		assert_true(e.msg[0] != '\0');
	}
	print_message("%ld allocations failed in turn\n", k);
	assert_true(k > 10);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation),
	};

	return cmocka_run_group_tests_name("decode_oom", tests, NULL, NULL);
}
