/* cuda_dev.c — what the rest of crucible asks of the NVIDIA stack, with or
 * without CUDA built in (the one file of cuda/ built either way): is a GPU
 * there, which one and its peaks, NVML's clocks, a cuda worker's launch
 * table, and the device worker's entry. Without CUDA each says so. */
#include "cuda/cuda_dev.h"
#include "cr_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if HAVE_CUDA
#include "cuda/cuda_compile.h"
#include "cuda/cuda_drv.h"
#include "cuda/cuda_worker.h"
#endif

bool cr_cuda_dev_available(char *why, size_t cap)
{
#if HAVE_CUDA
	return cr_cuda_available(why, cap);
#else
	snprintf(why, cap, "built without CUDA (meson -Dcuda=disabled)");
	return false;
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

enum cr_status cr_cuda_dev_count(int *n, struct cr_err *err)
{
#if HAVE_CUDA
	return cr_cuda_device_count(n, err);
#else
	*n = 0;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}

enum cr_status cr_cuda_dev_get(int ordinal, struct cr_gpu *g, struct cr_err *err)
{
	memset(g, 0, sizeof *g);
#if HAVE_CUDA
	struct cr_cuda_device d;
	enum cr_status st = cr_cuda_device_info(ordinal, &d, err);
	if (st)
		return st;
	g->ordinal = ordinal;
	snprintf(g->name, sizeof g->name, "%s", d.name);
	snprintf(g->arch, sizeof g->arch, "%s", d.arch);
	snprintf(g->desc, sizeof g->desc, "%s (%s, %d SMs, driver %d.%d)", d.name, d.arch,
		 d.sm_count, d.driver_version / 1000, d.driver_version % 1000 / 10);
	snprintf(g->uuid, sizeof g->uuid, "%s", d.uuid);
	snprintf(g->bus_id, sizeof g->bus_id, "%s", d.bus_id);
	g->total_mem = d.total_mem;
	g->sm_count = d.sm_count;
	g->clock_khz = d.clock_khz;
	g->mem_clock_khz = d.mem_clock_khz;
	device_peaks(&d, &g->peak_tflops, &g->peak_tbps);
	return CR_OK;
#else
	(void)ordinal;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}

enum cr_status cr_cuda_dev_describe(char *desc, size_t dcap, char *arch, size_t acap,
				      double *peak_tflops, double *peak_tbps, struct cr_err *err)
{
	struct cr_gpu g;
	enum cr_status st = cr_cuda_dev_get(0, &g, err);

	if (st)
		return st;
	snprintf(desc, dcap, "%s", g.desc);
	snprintf(arch, acap, "%s", g.arch);
	*peak_tflops = g.peak_tflops;
	*peak_tbps = g.peak_tbps;
	return CR_OK;
}

enum cr_status cr_cuda_ltab_write(char *shm, const struct cr_plan *p, enum cr_stage s,
				    const int64_t *vals, const char *cubin_path, const char *path,
				    bool trusted, int device, const char *uuid, struct cr_err *err)
{
#if HAVE_CUDA
	struct cr_cuda_ltab *t = (struct cr_cuda_ltab *)(shm + CR_CUDA_LTAB_OFF);
	enum cr_status st = cr_cuda_ltab_fill(t, p, s, vals, cubin_path, path, err);
	if (!st) {
		t->device = device;
		snprintf(t->device_uuid, sizeof t->device_uuid, "%s", uuid ? uuid : "");
	}
	if (!st && trusted) {
		t->flags |= CR_CUDA_LTAB_TRUSTED;
		cr_cuda_toolkit_lib("libcublas.so.13", t->cublas_path, sizeof t->cublas_path);
	}
	return st;
#else
	(void)shm; (void)p; (void)s; (void)vals; (void)cubin_path; (void)path; (void)trusted;
	(void)device; (void)uuid;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}

int cr_cuda_worker_entry(char *shm, size_t size)
{
#if HAVE_CUDA
	return cr_cuda_worker_main(shm, size);
#else
	(void)shm; (void)size;
	fprintf(stderr, "crucible __worker cuda: built without CUDA\n");
	return 2;
#endif
}

void cr_cuda_clocks_line(const char *bus_id, char *buf, size_t cap)
{
#if HAVE_CUDA
	struct cr_nvml_clocks c;
	struct cr_err e;
	cr_err_init(&e);
	if (cr_nvml_clocks(bus_id, &c, &e)) {
		snprintf(buf, cap, "unknown (%s)", e.msg);
		return;
	}
	snprintf(buf, cap, "sm %u/%u MHz, memory %u/%u MHz, %u C, %.0f W, throttle %s, driver %s", c.sm_mhz,
		 c.sm_max_mhz, c.mem_mhz, c.mem_max_mhz, c.temp_c, c.power_mw / 1000.0, c.throttle_str,
		 c.driver);
#else
	(void)bus_id;
	snprintf(buf, cap, "unknown (built without CUDA)");
#endif
}

enum cr_status cr_cuda_dev_sample(const char *bus_id, struct cr_gpu_sample *s,
				    struct cr_err *err)
{
	memset(s, 0, sizeof *s);
#if HAVE_CUDA
	struct cr_nvml_clocks c;
	if (cr_nvml_clocks(bus_id, &c, err))
		return err->status;
	s->sm_mhz = c.sm_mhz;
	s->mem_mhz = c.mem_mhz;
	s->temp_c = c.temp_c;
	s->reasons = c.throttle;
	s->throttled = (c.throttle & CR_NVML_THROTTLE_MASK) != 0;
	return CR_OK;
#else
	(void)bus_id;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}

void cr_cuda_reasons_str(unsigned long long mask, char *out, size_t cap)
{
#if HAVE_CUDA
	cr_nvml_reasons_str(mask, out, cap);
#else
	snprintf(out, cap, mask ? "0x%llx" : "none", mask);
#endif
}

enum cr_status cr_cuda_dev_lock_clocks(const char *bus_id, bool lock, struct cr_err *err)
{
#if HAVE_CUDA
	return cr_nvml_lock_clocks(bus_id, lock, err);
#else
	(void)bus_id; (void)lock;
	return cr_errf(err, CR_EENV, "built without CUDA");
#endif
}
