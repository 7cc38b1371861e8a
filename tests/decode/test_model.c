/* test_model.c — a bad model file, as a mutated download has it (issue 30):
 * every hyper-parameter that sizes an allocation is checked against the
 * tensors in the file (or bounded, where no tensor has it) before anything
 * is allocated from it, and the error names the file and the key; a
 * tokenizer larger than the embedding names both. Run under the sanitizer
 * build, a huge allocation attempted on the way aborts the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/engine/dec_forward.h"
#include "decode/model/dec_model.h"
#include "decode/model/dec_vocab.h"
#include "decode/quant/dec_quant.h"
#include "decode/tok/dec_tok.h"
#include "dec_testutil.h"

#define BIG (1u << 30)

struct mutation {
	const char *arch;
	const char *key, *key2; /* u32 metadata set to value (key2 too, when not NULL) */
	uint32_t value;
	const char *want;       /* in the message, besides the file's name */
};

static const struct mutation mutations[] = {
	{ "llama", "llama.block_count", NULL, BIG, "key 'llama.block_count'" },
	{ "llama", "llama.block_count", NULL, 3, "key 'llama.block_count'" },
	{ "llama", "llama.block_count", NULL, 1, "key 'llama.block_count'" },
	{ "qwen3", "qwen3.attention.key_length", "qwen3.attention.value_length", BIG,
	  "key 'qwen3.attention.key_length'" },
	{ "qwen3", "qwen3.attention.key_length", "qwen3.attention.value_length", 32,
	  "key 'qwen3.attention.key_length'" },
	{ "llama", "llama.embedding_length", NULL, BIG, "key 'llama.embedding_length'" },
	{ "llama", "llama.embedding_length", NULL, 128, "key 'llama.embedding_length'" },
	{ "llama", "llama.feed_forward_length", NULL, BIG, "key 'llama.feed_forward_length'" },
	{ "phi3", "phi3.feed_forward_length", NULL, BIG, "key 'phi3.feed_forward_length'" },
	{ "llama", "llama.attention.head_count", NULL, BIG, "key 'llama.attention.head_count'" },
	{ "llama", "llama.attention.head_count_kv", NULL, BIG, "key 'llama.attention.head_count_kv'" },
	{ "llama", "llama.attention.head_count_kv", NULL, 1, "key 'llama.attention.head_count_kv'" },
	{ "llama", "llama.context_length", NULL, 1, "key 'llama.context_length'" },
	{ "qwen3moe", "qwen3moe.feed_forward_length", NULL, BIG, "key 'qwen3moe.feed_forward_length'" },
	{ "qwen3moe", "qwen3moe.expert_count", NULL, 4096, "key 'qwen3moe.expert_count'" },
	{ "qwen3moe", "qwen3moe.expert_count", NULL, BIG, "key 'qwen3moe.expert_count'" },
	{ "qwen3moe", "qwen3moe.expert_used_count", NULL, BIG, "key 'qwen3moe.expert_used_count'" },
	{ "qwen3moe", "qwen3moe.expert_feed_forward_length", NULL, BIG,
	  "key 'qwen3moe.expert_feed_forward_length'" },
};

/* Loads img as "bad.gguf"; on success also opens a CPU state on it, as a run
 * would (where today's code made its huge allocations). */
static enum cr_status load(uint8_t *img, size_t n, struct cr_err *e)
{
	struct dec_gguf *g;
	struct dec_model *m;
	struct dec_state *s = NULL;
	enum cr_status st;

	cr_err_init(e);
	if ((st = dec_gguf_from_buffer(img, n, "bad.gguf", &g, e)) || (st = dec_model_load(g, &m, e)))
		return st;
	st = dec_state_new(m, 64, 16, 1, &s, e);
	dec_state_free(s);
	dec_model_free(m);
	return st;
}

/* Each mutation in turn; every one that is not caught is said. */
static void test_hparams_vs_tensors(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof mutations / sizeof *mutations; i++) {
		const struct mutation *mu = &mutations[i];
		struct tiny_spec s;
		struct cr_err e;
		enum cr_status st;
		uint8_t *img;
		size_t n;

		tiny_spec_default(&s, mu->arch, DEC_T_F32);
		s.n_layers = 2;
		img = tiny_model(&s, &n);
		assert_non_null(img);
		/* unmutated: loads */
		assert_int_equal(load(img, n, &e), CR_OK);
		if (gw_patch_u32(img, n, mu->key, mu->value) ||
		    (mu->key2 && gw_patch_u32(img, n, mu->key2, mu->value)))
			fail_msg("%s: no u32 key '%s' to mutate", mu->arch, mu->key);
		st = load(img, n, &e);
		if (getenv("DEC_TEST_VERBOSE"))
			print_message("%s\n", e.msg);
		if (st != CR_EINPUT || !strstr(e.msg, "bad.gguf") || !strstr(e.msg, mu->want)) {
			print_error("%s %s = %u: status %d, want CR_EINPUT naming the file and \"%s\": %s\n",
				    mu->arch, mu->key, mu->value, st, mu->want, e.msg);
			bad++;
		}
		free(img);
	}
	if (bad)
		fail_msg("%d of %zu mutations not caught", bad, sizeof mutations / sizeof *mutations);
}

/* The reader bounds a string length by the bytes left before reading it. */
static void test_gguf_key_length(void **state)
{
	struct tiny_spec s;
	struct cr_err e;
	uint8_t *img;
	size_t n;

	(void)state;
	tiny_spec_default(&s, "llama", DEC_T_F32);
	img = tiny_model(&s, &n);
	assert_int_equal(gw_patch_key_len(img, n, "llama.block_count", BIG), 0);
	assert_int_equal(load(img, n, &e), CR_EINPUT);
	if (!strstr(e.msg, "bad.gguf") || !strstr(e.msg, "metadata key"))
		fail_msg("%s", e.msg);
	free(img);
}

/* Builds the tokenizer of a tied llama whose embedding has `rows` rows
 * (the tokenizer has tiny_vocab_size() tokens). */
static enum cr_status tokenizer_with_rows(uint64_t rows, struct cr_err *e)
{
	struct tiny_spec s;
	struct dec_gguf *g;
	struct dec_model *m;
	struct dec_tok *tok = NULL;
	enum cr_status st;
	uint8_t *img;
	size_t n;

	tiny_spec_default(&s, "llama", DEC_T_F32);
	s.tied = 1;
	s.embd_rows = (int)rows;
	img = tiny_model(&s, &n);
	cr_err_init(e);
	assert_int_equal(dec_gguf_from_buffer(img, n, "bad.gguf", &g, e), CR_OK);
	assert_int_equal(dec_model_load(g, &m, e), CR_OK);
	assert_int_equal(m->cfg.n_vocab, (int)rows);
	st = dec_vocab_tokenizer(m->gguf, &tok, e);
	dec_tok_free(tok);
	dec_model_free(m);
	free(img);
	return st;
}

static void test_tokenizer_vs_embedding(void **state)
{
	struct cr_err e;

	(void)state;
	assert_int_equal(tokenizer_with_rows(200, &e), CR_EINPUT);
	if (!strstr(e.msg, "bad.gguf") || !strstr(e.msg, "key 'tokenizer.ggml.tokens'") ||
	    !strstr(e.msg, "token_embd.weight"))
		fail_msg("%s", e.msg);
	/* fewer tokens than rows (padded embeddings) is fine */
	assert_int_equal(tokenizer_with_rows((uint64_t)tiny_vocab_size() + 8, &e), CR_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hparams_vs_tensors),
		cmocka_unit_test(test_gguf_key_length),
		cmocka_unit_test(test_tokenizer_vs_embedding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
