/* backend.c — which backend runs the candidates: auto, cpu or cuda, and
 * the one line on stderr that says why. */
#include "harness/backend.h"
#include "cr_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_dev.h"

int cr_backend_pick(const char *name, bool compile_only, enum cr_backend *b, const char *who)
{
	char why[256] = "built without CUDA (meson -Dcuda=disabled)";
	bool gpu = false;

	if (name && strcmp(name, "auto") && strcmp(name, "cpu") && strcmp(name, "cuda")) {
		fprintf(stderr, "%s: --backend %s: expected auto, cpu or cuda\n", who, name);
		return 2;
	}
	gpu = cr_cuda_dev_available(why, sizeof why);
	if (!name || !strcmp(name, "auto")) {
		if (compile_only) {
			*b = CR_BACKEND_CUDA;
			return HAVE_CUDA ? 0 : (fprintf(stderr, "%s: --compile-only needs CUDA: %s\n", who, why), 3);
		}
		*b = gpu ? CR_BACKEND_CUDA : CR_BACKEND_CPU;
		if (gpu)
			fprintf(stderr, "%s: backend auto: using cuda (a GPU is present; --backend cpu for .c candidates)\n", who);
		else
			fprintf(stderr, "%s: backend auto: using cpu (no GPU: %s)\n", who, why);
		return 0;
	}
	if (!strcmp(name, "cpu")) {
		if (compile_only) {
			fprintf(stderr, "%s: --compile-only applies to the cuda backend\n", who);
			return 2;
		}
		*b = CR_BACKEND_CPU;
		return 0;
	}
	*b = CR_BACKEND_CUDA;
#if HAVE_CUDA
	if (compile_only)
		return 0;
	if (gpu)
		return 0;
	fprintf(stderr, "%s: --backend cuda: %s (use --compile-only for compile verdicts)\n", who, why);
	return 3;
#else
	fprintf(stderr, "%s: --backend cuda: %s\n", who, why);
	return 3;
#endif
}
