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
#include "harness/cuda_worker.h"
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

#if HAVE_CUDA
/* Datasheet figures (FP32 without tensor cores, memory bandwidth) of the
 * devices we know; others from the reported clocks: FP32 lanes per SM (64
 * on sm_60/70/80, 128 on sm_86 and later) x 2 flops x SM clock, and memory
 * clock x 2 (double data rate) x bus width. */
static void device_peaks(const struct cr_cuda_device *d, double *tflops, double *tbps)
{
	static const struct { const char *name; double tflops, tbps; } tab[] = {
		{ "H200", 67.0, 4.8 }, { "H100 SXM", 67.0, 3.35 }, { "H100 PCIe", 51.2, 2.0 },
		{ "H100 NVL", 60.0, 3.9 }, { "A100-SXM4-80GB", 19.5, 2.039 },
		{ "A100-SXM4-40GB", 19.5, 1.555 }, { "A100-PCIE-40GB", 19.5, 1.555 },
		{ "A100 80GB PCIe", 19.5, 1.935 }, { "L40S", 91.6, 0.864 }, { "L4", 30.3, 0.3 },
		{ "RTX 4090", 82.6, 1.008 }, { "A10G", 31.2, 0.6 },
	};
	int lanes = d->cc_major >= 9 || (d->cc_major == 8 && d->cc_minor >= 6) ? 128 : 64;

	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (strstr(d->name, tab[i].name)) {
			*tflops = tab[i].tflops;
			*tbps = tab[i].tbps;
			return;
		}
	*tflops = (double)d->sm_count * lanes * 2 * d->clock_khz * 1e3 / 1e12;
	*tbps = (double)d->mem_clock_khz * 1e3 * 2 * d->bus_bits / 8 / 1e12;
}
#endif

enum cr_status cr_backend_cuda_device(char *desc, size_t dcap, char *arch, size_t acap,
				      double *peak_tflops, double *peak_tbps, struct cr_err *err)
{
#if HAVE_CUDA
	struct cr_cuda_device d;
	enum cr_status st = cr_cuda_device_info(0, &d, err);
	if (st)
		return st;
	snprintf(desc, dcap, "%s (%s, %d SMs, driver %d.%d)", d.name, d.arch, d.sm_count,
		 d.driver_version / 1000, d.driver_version % 1000 / 10);
	snprintf(arch, acap, "%s", d.arch);
	device_peaks(&d, peak_tflops, peak_tbps);
	return CR_OK;
#else
	(void)desc; (void)dcap; (void)arch; (void)acap; (void)peak_tflops; (void)peak_tbps;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}

enum cr_status cr_backend_cuda_build(const struct task *t, const char *path, const char *src,
				     size_t len, const char *arch, const char *cubin_out,
				     struct cr_result *r, struct cr_err *err)
{
#if HAVE_CUDA
	struct cr_cuda_opts o = { .arch = cr_backend_cuda_arch(arch), .timeout_s = 60 };
	return cr_cuda_check_compile_to(t, path, src, len, &o, cubin_out, r, err);
#else
	(void)t; (void)path; (void)src; (void)len; (void)arch; (void)cubin_out; (void)r;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}

enum cr_status cr_backend_cuda_ltab(char *shm, const struct cr_plan *p, enum cr_stage s,
				    const int64_t *vals, const char *cubin_path, const char *path,
				    bool trusted, struct cr_err *err)
{
#if HAVE_CUDA
	struct cr_cuda_ltab *t = (struct cr_cuda_ltab *)(shm + CR_CUDA_LTAB_OFF);
	enum cr_status st = cr_cuda_ltab_fill(t, p, s, vals, cubin_path, path, err);
	if (!st && trusted) {
		t->flags |= CR_CUDA_LTAB_TRUSTED;
		cr_cuda_toolkit_lib("libcublas.so.13", t->cublas_path, sizeof t->cublas_path);
	}
	return st;
#else
	(void)shm; (void)p; (void)s; (void)vals; (void)cubin_path; (void)path; (void)trusted;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}

int cr_backend_cuda_worker(char *shm, size_t size)
{
#if HAVE_CUDA
	return cr_cuda_worker_main(shm, size);
#else
	(void)shm; (void)size;
	fprintf(stderr, "crucible __worker cuda: built without CUDA\n");
	return 2;
#endif
}

void cr_backend_cuda_clocks(char *buf, size_t cap)
{
#if HAVE_CUDA
	struct cr_nvml_clocks c;
	struct cr_err e;
	cr_err_init(&e);
	if (cr_nvml_clocks(0, &c, &e)) {
		snprintf(buf, cap, "unknown (%s)", e.msg);
		return;
	}
	snprintf(buf, cap, "sm %u/%u MHz, memory %u/%u MHz, %u C, %.0f W, throttle %s, driver %s", c.sm_mhz,
		 c.sm_max_mhz, c.mem_mhz, c.mem_max_mhz, c.temp_c, c.power_mw / 1000.0, c.throttle_str,
		 c.driver);
#else
	snprintf(buf, cap, "unknown (built without CUDA)");
#endif
}
