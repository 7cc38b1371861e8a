/* fuzz_gguf.c — libFuzzer target: bytes as a GGUF file, as far as the
 * decoder goes from a file without running the model. The reader validates
 * the image (dec_gguf_from_buffer: the same checks as dec_gguf_open, on the
 * fuzzer's exact-size buffer so ASan sees any read past the end), the
 * tokenizer the metadata describes is built (dec_vocab_tokenizer) and used
 * (encode/decode of fixed strings and of the input's last bytes, pieces,
 * chat prompt), then the model is loaded (dec_model_load: hyperparameters,
 * every weight checked, copied and repacked). Nothing outlives a run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cr_status.h"
#include "decode/model/dec_model.h"
#include "decode/model/dec_vocab.h"
#include "decode/model/gguf.h"
#include "decode/tok/dec_tok.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const texts[] = {
	"Hello world",
	"def f(x):\n    return x * 2  # 12345\n",
	"<|im_start|>user\nhi<|im_end|>\n<think>\n</think>",
	"\xc3\xa9t\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80 \t\r\n  ",
	"",
};

static void use_tokenizer(const struct dec_tok *t, const uint8_t *tail, size_t ntail)
{
	struct cr_err err;
	size_t nv = dec_tok_n_vocab(t);
	char piece[64];

	for (size_t i = 0; i <= sizeof texts / sizeof texts[0]; i++) {
		const char *s = i < sizeof texts / sizeof texts[0] ? texts[i] : (const char *)tail;
		size_t len = i < sizeof texts / sizeof texts[0] ? strlen(s) : ntail;
		int32_t *ids = NULL;
		size_t n = 0;
		char *text = NULL;
		size_t tlen = 0;

		cr_err_init(&err);
		if (dec_tok_encode(t, s, len, (int)(i & 1), -1, &ids, &n, &err) == CR_OK) {
			cr_err_init(&err);
			if (dec_tok_decode(t, ids, n, (int)(i & 1), &text, &tlen, &err) == CR_OK)
				free(text);
			for (size_t j = 0; j < n && j < 8; j++) {
				dec_tok_piece(t, ids[j], piece, sizeof piece);
				dec_tok_is_eog(t, ids[j]);
				dec_tok_is_special(t, ids[j]);
			}
		}
		free(ids);
	}
	/* ids the sampler could draw: any of the vocabulary */
	if (nv) {
		int32_t ids[16];
		char *text = NULL;
		size_t tlen = 0;

		for (size_t j = 0; j < 16; j++)
			ids[j] = (int32_t)((j < ntail ? tail[j] * 257u + j : j * 7919u) % nv);
		cr_err_init(&err);
		if (dec_tok_decode(t, ids, 16, 1, &text, &tlen, &err) == CR_OK)
			free(text);
		dec_tok_piece(t, (int32_t)(nv - 1), piece, sizeof piece);
	}
	{
		char *prompt = NULL;
		struct dec_chat_msg msgs[3] = {
			{ "system", "be brief" }, { "assistant", "<think>a</think>\n\nok" },
			{ "user", "write a kernel" },
		};

		dec_chat_template_name(t);
		cr_err_init(&err);
		if (dec_chat_format(t, "be brief", "write a kernel", &prompt, &err) == CR_OK)
			free(prompt);
		prompt = NULL;
		cr_err_init(&err);
		if (dec_chat_format_msgs(t, msgs, 3, &prompt, &err) == CR_OK)
			free(prompt);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec_gguf *g = NULL;
	struct dec_tok *tok = NULL;
	struct dec_model *m = NULL;
	struct cr_err err;
	size_t ntail = size < 48 ? size : 48;

	cr_err_init(&err);
	if (dec_gguf_from_buffer(data, size, "fuzz.gguf", &g, &err) != CR_OK)
		return 0;
	cr_err_init(&err);
	if (dec_vocab_tokenizer(g, &tok, &err) == CR_OK) {
		use_tokenizer(tok, data + size - ntail, ntail);
		dec_tok_free(tok);
	}
	cr_err_init(&err);
	if (dec_model_load(g, &m, &err) == CR_OK) { /* takes g, on error too */
		dec_model_n_params(m);
		dec_model_weight_bytes(m);
		cr_err_init(&err);
		dec_model_check_ctx(m, 64, &err);
		dec_model_free(m);
	}
	return 0;
}
