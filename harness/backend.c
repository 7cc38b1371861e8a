/* backend.c — backend selection; the one file of the CLI that knows
 * whether CUDA is built in. */
#include "harness/backend.h"
#include "cr_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if HAVE_CUDA
#include "harness/cuda_compile.h"
#include "harness/cuda_drv.h"
#endif

int cr_backend_pick(const char *name, bool compile_only, enum cr_backend *b, const char *who)
{
	char why[256] = "built without CUDA (meson -Dcuda=disabled)";
	bool gpu = false;

	if (name && strcmp(name, "auto") && strcmp(name, "cpu") && strcmp(name, "cuda")) {
		fprintf(stderr, "%s: --backend %s: expected auto, cpu or cuda\n", who, name);
		return 2;
	}
#if HAVE_CUDA
	gpu = cr_cuda_available(why, sizeof why);
#endif
	if (!name || !strcmp(name, "auto")) {
		if (compile_only) {
			*b = CR_BACKEND_CUDA;
			return HAVE_CUDA ? 0 : (fprintf(stderr, "%s: --compile-only needs CUDA: %s\n", who, why), 3);
		}
		*b = CR_BACKEND_CPU;
		if (gpu)
			fprintf(stderr, "%s: backend auto: using cpu (a GPU is present, but launching CUDA candidates is not integrated yet)\n", who);
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
	if (!gpu)
		fprintf(stderr, "%s: --backend cuda: %s (use --compile-only for compile verdicts)\n", who, why);
	else
		fprintf(stderr, "%s: --backend cuda: launching CUDA candidates is not integrated yet (use --compile-only)\n", who);
	return 3;
#else
	fprintf(stderr, "%s: --backend cuda: %s\n", who, why);
	return 3;
#endif
}

const char *cr_backend_cuda_arch(const char *requested)
{
	return requested && requested[0] ? requested : "sm_90";
}

enum cr_status cr_backend_cuda_compile(const struct task *const *tasks, char *const *paths,
				       char *const *srcs, const size_t *lens, int n,
				       const char *arch, struct cr_result *rs, struct cr_err *err)
{
#if HAVE_CUDA
	struct cr_cuda_check_job *jobs = calloc((size_t)(n ? n : 1), sizeof *jobs);
	struct cr_cuda_opts o = { .arch = cr_backend_cuda_arch(arch), .timeout_s = 60 };
	int m = 0, *map = calloc((size_t)(n ? n : 1), sizeof *map);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	enum cr_status st;

	if (!jobs || !map) {
		free(jobs);
		free(map);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		if (!tasks[i])
			continue;
		jobs[m] = (struct cr_cuda_check_job){ .t = tasks[i], .path = paths[i], .src = srcs[i],
						      .len = lens[i] };
		map[m++] = i;
	}
	st = cr_cuda_check_compile_many(jobs, m, &o, cores > 0 ? (int)cores : 1, err);
	for (int k = 0; !st && k < m; k++)
		rs[map[k]] = jobs[k].r;
	free(jobs);
	free(map);
	return st;
#else
	(void)tasks; (void)paths; (void)srcs; (void)lens; (void)n; (void)arch; (void)rs;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}
