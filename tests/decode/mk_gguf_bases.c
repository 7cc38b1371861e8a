/* mk_gguf_bases — writes one tiny valid model per architecture (the decode
 * tests' generator, dec_testutil.c) into a folder, the bases that
 * malformed_gguf.c mutates (issue 30). */
#include <stdio.h>

#include "decode/quant/dec_quant.h"
#include "dec_testutil.h"

int main(int argc, char **argv)
{
	static const struct { const char *file, *arch; uint32_t wtype; int tied, rope_freqs; } m[] = {
		{ "llama.gguf", "llama", DEC_T_Q8_0, 0, 1 },
		{ "qwen2.gguf", "qwen2", DEC_T_F16, 1, 0 },
		{ "qwen3.gguf", "qwen3", DEC_T_Q4_K, 0, 0 },
		{ "phi3.gguf", "phi3", DEC_T_F32, 0, 0 },
		{ "qwen3moe.gguf", "qwen3moe", DEC_T_Q8_0, 0, 0 },
		{ "gemma3.gguf", "gemma3", DEC_T_Q8_0, 1, 0 },
	};
	char path[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: mk_gguf_bases OUTDIR\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
		struct tiny_spec s;

		tiny_spec_default(&s, m[i].arch, m[i].wtype);
		s.ctx_len = 4096; /* the registry's prompts run to ~1000 tokens */
		s.tied = m[i].tied;
		s.rope_freqs = m[i].rope_freqs;
		snprintf(path, sizeof path, "%s/%s", argv[1], m[i].file);
		if (tiny_model_write(&s, path)) {
			fprintf(stderr, "mk_gguf_bases: cannot write %s\n", path);
			return 1;
		}
	}
	return 0;
}
