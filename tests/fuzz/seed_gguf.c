/* seed_gguf.c — writes the seed corpus of fuzz_gguf into DIR: tiny models
 * of every architecture the decoder knows, built by the decode suite's own
 * generator (tests/decode/dec_testutil.c) at the smallest sizes it allows,
 * and vocabulary-only files (byte-level BPE, SentencePiece) written with its
 * GGUF writer. Made at fuzz time by scripts/fuzz.sh; nothing is committed.
 * usage: seed_gguf DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/model/gguf.h"
#include "decode/quant/dec_quant.h"
#include "tests/decode/dec_testutil.h"

static int write_model(const char *dir, const char *arch, uint32_t wtype, int tied, int no_vocab)
{
	struct tiny_spec s;
	char path[4096];

	tiny_spec_default(&s, arch, wtype);
	s.dim = 32;
	s.n_layers = 1;
	s.n_heads = 4;
	s.n_kv_heads = 2;
	s.head_dim = 8;
	s.hidden = 64;
	s.tied = tied;
	s.no_vocab = no_vocab;
	s.ctx_len = 64;
	if (!strcmp(arch, "qwen3moe"))
		s.n_expert = 2, s.n_expert_used = 1;
	if (!strcmp(arch, "llama"))
		s.rope_freqs = 1, s.rope_linear = 2.0f;
	snprintf(path, sizeof path, "%s/%s-t%u%s%s.gguf", dir, arch, (unsigned)wtype, tied ? "-tied" : "",
		 no_vocab ? "-novocab" : "");
	return tiny_model_write(&s, path);
}

/* A SentencePiece vocabulary with byte fallback, no tensors. */
static int write_spm(const char *dir)
{
	static const char *const words[] = { "\xe2\x96\x81", "\xe2\x96\x81" "the", "\xe2\x96\x81" "a", "er",
		"in", "\xe2\x96\x81" "x", "on", "\xe2\x96\x81" "def", "(", ")", "=", "\xe2\x96\x81" "return" };
	const size_t nw = sizeof words / sizeof words[0], n = 3 + 256 + nw;
	const char **toks = calloc(n, sizeof *toks);
	char (*bytes)[8] = calloc(256, sizeof *bytes);
	float *scores = calloc(n, sizeof *scores);
	int32_t *types = calloc(n, sizeof *types);
	struct gw *w = gw_new();
	char path[4096];
	int rc;

	if (!toks || !bytes || !scores || !types || !w)
		abort();
	toks[0] = "<unk>", types[0] = 2;
	toks[1] = "<s>", types[1] = 3;
	toks[2] = "</s>", types[2] = 3;
	for (int i = 0; i < 256; i++) {
		snprintf(bytes[i], sizeof bytes[i], "<0x%02X>", i);
		toks[3 + i] = bytes[i], types[3 + i] = 6;
	}
	for (size_t i = 0; i < nw; i++)
		toks[259 + i] = words[i], types[259 + i] = 1, scores[259 + i] = -(float)i;
	gw_kv_str(w, "general.architecture", "llama");
	gw_kv_str(w, "tokenizer.ggml.model", "llama");
	gw_kv_arr_str(w, "tokenizer.ggml.tokens", toks, n);
	gw_kv_arr(w, "tokenizer.ggml.scores", DEC_GGUF_F32, scores, n);
	gw_kv_arr(w, "tokenizer.ggml.token_type", DEC_GGUF_I32, types, n);
	gw_kv_u32(w, "tokenizer.ggml.bos_token_id", 1);
	gw_kv_u32(w, "tokenizer.ggml.eos_token_id", 2);
	gw_kv_u32(w, "tokenizer.ggml.unknown_token_id", 0);
	gw_kv_bool(w, "tokenizer.ggml.add_bos_token", 1);
	gw_kv_bool(w, "tokenizer.ggml.add_space_prefix", 1);
	gw_kv_str(w, "tokenizer.chat_template", "{{ bos_token }}<start_of_turn>user\n");
	snprintf(path, sizeof path, "%s/spm-vocab.gguf", dir);
	rc = gw_write(w, path);
	gw_free(w);
	free(toks);
	free(bytes);
	free(scores);
	free(types);
	return rc;
}

/* Every metadata value type, an array of arrays' worth of keys, one tensor. */
static int write_kinds(const char *dir)
{
	struct gw *w = gw_new();
	static const uint64_t ne[2] = { 32, 2 };
	float data[64] = { 0 };
	int16_t i16[3] = { -1, 0, 1 };
	double f64 = 0.5;
	uint64_t u64 = 7;
	char path[4096];
	int rc;

	gw_kv_str(w, "general.architecture", "qwen2");
	gw_kv_u32(w, "general.alignment", 64);
	gw_kv_i32(w, "k.i32", -3);
	gw_kv_f32(w, "k.f32", 1.5f);
	gw_kv_bool(w, "k.bool", 1);
	gw_kv_raw(w, "k.f64", DEC_GGUF_F64, &f64, sizeof f64);
	gw_kv_raw(w, "k.u64", DEC_GGUF_U64, &u64, sizeof u64);
	gw_kv_arr(w, "k.i16", DEC_GGUF_I16, i16, 3);
	gw_tensor(w, "token_embd.weight", 2, ne, DEC_T_F32, data, sizeof data);
	snprintf(path, sizeof path, "%s/kinds.gguf", dir);
	rc = gw_write(w, path);
	gw_free(w);
	return rc;
}

int main(int argc, char **argv)
{
	static const char *const arches[] = { "llama", "qwen2", "qwen3", "phi3", "qwen3moe", "gemma3" };
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: seed_gguf DIR\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
		rc |= write_model(argv[1], arches[i], i % 2 ? DEC_T_F16 : DEC_T_Q8_0, (int)(i % 3 == 1), 0);
	rc |= write_model(argv[1], "qwen2", DEC_T_Q4_0, 1, 1);
	rc |= write_model(argv[1], "llama", DEC_T_F32, 1, 0);
	rc |= write_spm(argv[1]);
	rc |= write_kinds(argv[1]);
	if (rc)
		fprintf(stderr, "seed_gguf: could not write every seed into %s\n", argv[1]);
	return rc ? 1 : 0;
}
