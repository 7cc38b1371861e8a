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
#include "harness/cand/plan.h"

/* A usable GPU (driver loaded, a device present); why not into why. */
bool cr_cuda_dev_available(char *why, size_t cap);

/* The device the cuda backend runs on: "NVIDIA H200 (sm_90, driver 13000)"
 * into desc, its arch into arch. Peak FP32 (non-tensor) TFLOP/s and memory
 * TB/s for the roofline: from a table of known devices, else from the
 * clocks the driver reports (0 when unknown). CR_EENV with the reason when none. */
enum cr_status cr_cuda_dev_describe(char *desc, size_t dcap, char *arch, size_t acap,
				    double *peak_tflops, double *peak_tbps, struct cr_err *err);
/* Writes stage s's launch table (evaluated with vals) into the header
 * bytes of a cuda worker's shared memory. CR_EINPUT (a format_error) for a
 * launch size out of range. */
enum cr_status cr_cuda_ltab_write(char *shm, const struct cr_plan *p, enum cr_stage s,
				  const int64_t *vals, const char *cubin_path, const char *path,
				  bool trusted, struct cr_err *err);
/* NVML's view of device 0 now: clocks (current/max), temperature, power,
 * throttle reasons, driver; "unknown (why)" without NVML. */
void cr_cuda_clocks_line(char *buf, size_t cap);
/* One sample of device 0's clocks during timing (NVML). */
struct cr_gpu_sample {
	unsigned sm_mhz, mem_mhz, temp_c;
	unsigned long long reasons;     /* clocks-event reasons */
	bool throttled;                 /* a power or thermal slowdown (CR_NVML_THROTTLE_MASK) */
};
/* CR_EENV when NVML is absent (or built without CUDA). */
enum cr_status cr_cuda_dev_sample(struct cr_gpu_sample *s, struct cr_err *err);
/* Names of clocks-event reasons ("none", "sw_power_cap,hw_thermal"). */
void cr_cuda_reasons_str(unsigned long long mask, char *out, size_t cap);
/* --lock-clocks: device 0's SM clock locked at its maximum (lock) or
 * released; CR_EENV with NVML's reason when it cannot (it needs root). */
enum cr_status cr_cuda_dev_lock_clocks(bool lock, struct cr_err *err);
/* `crucible __worker cuda` (never returns with CUDA; 2 without). */
int cr_cuda_worker_entry(char *shm, size_t size);

#endif
