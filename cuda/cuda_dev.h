/* cuda_dev.h — what the rest of crucible asks of the NVIDIA stack, built
 * with or without CUDA (cuda_dev.c; without CUDA each entry says so, with
 * CR_EENV "built without CUDA" or false). The driver, CUPTI and NVML are
 * loaded at run time (cuda_drv.c, cuda_cupti.c), so the binary starts on a
 * machine without them. */
#ifndef CR_CUDA_DEV_H
#define CR_CUDA_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cr_status.h"
#include "cand/plan.h"

/* A usable GPU (driver loaded, a device present); why not into why. */
bool cr_cuda_dev_available(char *why, size_t cap);

/* One CUDA device as a run sees it (cr_cuda_dev_get). */
struct cr_gpu {
	int ordinal;                 /* the driver's ordinal (cuDeviceGet): what --gpus takes */
	char name[256];              /* the model, "NVIDIA H200" */
	char arch[16];               /* "sm_90": what NVRTC compiles for */
	char desc[320];              /* "NVIDIA H200 (sm_90, 132 SMs, driver 13.0)" */
	char uuid[48];               /* "GPU-..." as nvidia-smi prints it, "" when unknown */
	char bus_id[32];             /* PCI "0000:65:00.0", "" when unknown: how NVML finds it */
	size_t total_mem;            /* bytes */
	int sm_count, clock_khz, mem_clock_khz;   /* 0 when the driver does not say */
	double peak_tflops, peak_tbps;            /* for the roofline, 0 when unknown */
};

/* The devices visible to this process (cuInit first). CR_EENV with the
 * reason when there is no usable driver. */
enum cr_status cr_cuda_dev_count(int *n, struct cr_err *err);
/* Device `ordinal`'s facts. Peak FP32 (non-tensor) TFLOP/s and memory TB/s
 * for the roofline: from a table of known devices, else from the clocks the
 * driver reports (0 when unknown). CR_EENV with the reason when none. */
enum cr_status cr_cuda_dev_get(int ordinal, struct cr_gpu *g, struct cr_err *err);
/* Device 0's description, arch and peaks (crucible run's one device). */
enum cr_status cr_cuda_dev_describe(char *desc, size_t dcap, char *arch, size_t acap,
				    double *peak_tflops, double *peak_tbps, struct cr_err *err);
/* Writes stage s's launch table (evaluated with vals) into the header
 * bytes of a cuda worker's shared memory, for the device of driver ordinal
 * `device` whose UUID is uuid ("" or NULL: not checked; the worker refuses
 * a device whose UUID differs). CR_EINPUT (a format_error) for a launch
 * size out of range. */
enum cr_status cr_cuda_ltab_write(char *shm, const struct cr_plan *p, enum cr_stage s,
				  const int64_t *vals, const char *cubin_path, const char *path,
				  bool trusted, int device, const char *uuid, struct cr_err *err);
/* NVML's view of the device at PCI bus_id now (NVML indexes devices its
 * own way, so a device is found by bus id): clocks (current/max),
 * temperature, power, throttle reasons, driver; "unknown (why)" without
 * NVML. */
void cr_cuda_clocks_line(const char *bus_id, char *buf, size_t cap);
/* One sample of a device's clocks during timing (NVML). */
struct cr_gpu_sample {
	unsigned sm_mhz, mem_mhz, temp_c;
	unsigned long long reasons;     /* clocks-event reasons */
	bool throttled;                 /* a power or thermal slowdown (CR_NVML_THROTTLE_MASK) */
};
/* The device at PCI bus_id; CR_EENV when NVML is absent or does not know
 * it (or built without CUDA). */
enum cr_status cr_cuda_dev_sample(const char *bus_id, struct cr_gpu_sample *s,
				  struct cr_err *err);
/* Names of clocks-event reasons ("none", "sw_power_cap,hw_thermal"). */
void cr_cuda_reasons_str(unsigned long long mask, char *out, size_t cap);
/* --lock-clocks: the SM clock of the device at bus_id locked at its maximum
 * (lock) or released; CR_EENV with NVML's reason when it cannot (it needs
 * root). */
enum cr_status cr_cuda_dev_lock_clocks(const char *bus_id, bool lock, struct cr_err *err);
/* `crucible __worker cuda` (never returns with CUDA; 2 without). */
int cr_cuda_worker_entry(char *shm, size_t size);

#endif
