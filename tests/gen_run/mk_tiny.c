/* mk_tiny — writes the decode tests' tiny model (qwen2, Q8_0, a byte-level
 * vocabulary and a chat template) to a path, for the shell tests of
 * `crucible run --model`. */
#include <stdio.h>

#include "decode/quant/dec_quant.h"
#include "dec_testutil.h"

int main(int argc, char **argv)
{
	struct tiny_spec s;

	if (argc != 2) {
		fprintf(stderr, "usage: mk_tiny OUT.gguf\n");
		return 2;
	}
	tiny_spec_default(&s, "qwen2", DEC_T_Q8_0);
	s.ctx_len = 4096; /* the registry's prompts run to ~1000 tokens */
	return tiny_model_write(&s, argv[1]) ? 1 : 0;
}
