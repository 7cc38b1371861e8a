/* test_be_cuda_none.c — a build without the decoder's CUDA backend
 * (-Dcuda=disabled, or no nvcc): dec_be_cuda_open is CR_EENV with one line
 * saying so, and --device auto's dec_be_open runs on the CPU with a note. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "decode/cuda/dec_be_cuda.h"
#include "decode/engine/dec_forward.h"
#include "decode/model/gguf.h"
#include "../decode/dec_testutil.h"

static void test_none(void **state)
{
	struct dec_be_cfg cfg = { .max_tokens = 8, .max_out = 8, .max_seqs = 1, .max_ctx = 32, .block_size = 16,
				  .n_blocks = 2, .n_threads = 1 };
	struct tiny_spec s;
	struct dec_gguf *g;
	struct dec_model *m;
	struct dec_be *be = (struct dec_be *)&cfg;
	struct cr_err e;
	char note[256];
	uint8_t *img;
	size_t n;

	(void)state;
	tiny_spec_default(&s, "llama", 8 /* Q8_0 */);
	assert_non_null(img = tiny_model(&s, &n));
	cr_err_init(&e);
	assert_int_equal(dec_gguf_from_buffer(img, n, "tiny.gguf", &g, &e), CR_OK);
	assert_int_equal(dec_model_load(g, &m, &e), CR_OK);
	assert_int_equal(dec_be_cuda_open(m, &cfg, &be, &e), CR_EENV);
	assert_null(be);
	print_message("  %s\n", e.msg);
	assert_non_null(strstr(e.msg, "not in this build"));
	assert_null(strchr(e.msg, '\n'));
	cr_err_init(&e);
	assert_int_equal(dec_be_open(m, &cfg, DEC_DEV_AUTO, &be, note, sizeof note, &e), CR_OK);
	assert_string_equal(be->ops->name, "cpu");
	assert_non_null(strstr(note, "not in this build"));
	dec_be_free(be);
	dec_model_free(m);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_none) };

	return cmocka_run_group_tests_name("decode_cuda_none", tests, NULL, NULL);
}
