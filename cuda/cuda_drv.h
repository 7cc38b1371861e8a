/* cuda_drv.h — the GPU as the rest of crucible sees it, with no CUDA header:
 * is a usable device here (and if not, why, in one line), what it is, and
 * the optional NVML (clocks, throttle reasons) and CUPTI (kernel activity
 * records) libraries. libcuda, NVML and CUPTI are all loaded with dlopen,
 * so a binary built with HAVE_CUDA starts on a machine without a GPU.
 *
 * Compiled only when HAVE_CUDA. Untested on a GPU unless docs/CUDA.md says
 * otherwise. */
#ifndef CR_CUDA_DRV_H
#define CR_CUDA_DRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cr_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* true when libcuda loads, cuInit succeeds and device 0 exists; otherwise
 * false with one line in why: "no libcuda.so.1 (no NVIDIA driver)",
 * "cuInit failed: CUDA_ERROR_NO_DEVICE", ... */
bool cr_cuda_available(char *why, size_t cap);

struct cr_cuda_device {
	int ordinal;
	char name[256];
	int cc_major, cc_minor;
	char arch[16];              /* "sm_90": what NVRTC compiles for */
	int sm_count;
	size_t total_mem;           /* bytes */
	int l2_bytes;
	int smem_optin;             /* max dynamic + static shared memory per block, bytes */
	int clock_khz, mem_clock_khz, bus_bits;   /* 0 when the driver no longer reports them */
	int driver_version;         /* e.g. 12080 */
	char uuid[48];              /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi
	                             * prints it; "" when the driver does not say */
	char bus_id[32];            /* PCI "0000:65:00.0"; "" when the driver does not say */
};

/* Fills d for device `ordinal`, the driver's ordinal (cuDeviceGet; cuInit
 * first). CR_EENV with the reason. */
enum cr_status cr_cuda_device_info(int ordinal, struct cr_cuda_device *d, struct cr_err *err);
/* The devices the driver shows this process (cuInit first). */
enum cr_status cr_cuda_device_count(int *n, struct cr_err *err);
/* A CUuuid's 16 bytes as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
void cr_cuda_uuid_str(const unsigned char b[16], char *out, size_t cap);

/* CUresult as its enum name ("CUDA_ERROR_ILLEGAL_ADDRESS"), from our own
 * table (no driver needed); "CUDA_ERROR_<n>" for an unknown code. */
const char *cr_cu_result_name(int code, char *buf, size_t cap);

/* ---- NVML (optional) ---- */

struct cr_nvml_clocks {
	unsigned sm_mhz, mem_mhz;           /* current */
	unsigned sm_max_mhz, mem_max_mhz;
	unsigned temp_c;
	unsigned power_mw;
	unsigned long long throttle;        /* clocks event reasons bit mask */
	char throttle_str[160];             /* "none", or "sw_power_cap,hw_slowdown,..." */
	char driver[80];                    /* NVML's driver version string */
};

/* NVML numbers devices its own way (PCI order), which need not be the
 * driver's ordinals (CUDA_DEVICE_ORDER, CUDA_VISIBLE_DEVICES): a device is
 * found by its PCI bus id (struct cr_cuda_device.bus_id), never by index. */
/* Reads the clocks of the device at bus_id now. CR_EENV when NVML is absent
 * or does not know that device. */
enum cr_status cr_nvml_clocks(const char *bus_id, struct cr_nvml_clocks *c, struct cr_err *err);
/* The clocks-event reasons that slow a kernel down for reasons of power
 * or heat (sw_power_cap, hw_slowdown, sw_thermal, hw_thermal,
 * hw_power_brake): a timed sample taken under one is retaken. Idle,
 * application-clock and sync-boost reasons are not slowdowns. */
#define CR_NVML_THROTTLE_MASK ((1ull << 2) | (1ull << 3) | (1ull << 5) | (1ull << 6) | (1ull << 7))
/* The reasons in mask as names ("none", "sw_power_cap,hw_slowdown"). */
void cr_nvml_reasons_str(unsigned long long mask, char *out, size_t cap);
/* Locks the SM clock of the device at bus_id at its maximum (lock) or
 * releases the lock (!lock) through NVML. CR_EENV with NVML's reason (no
 * NVML, "Insufficient Permissions": locking needs root) when it cannot. */
enum cr_status cr_nvml_lock_clocks(const char *bus_id, bool lock, struct cr_err *err);

/* ---- CUPTI (optional) ---- */

enum cr_cupti_kind { CR_CUPTI_KERNEL = 1, CR_CUPTI_MEMSET = 2, CR_CUPTI_MEMCPY = 3 };

/* One activity record, reduced to what timing needs. */
struct cr_cupti_rec {
	enum cr_cupti_kind kind;
	uint64_t start_ns, end_ns;          /* GPU timestamps */
	uint32_t correlation, stream;
	char name[64];                      /* kernels: the function name (truncated) */
};

/* Process-wide collector: CUPTI delivers buffers from its own thread. */
enum cr_status cr_cupti_start(struct cr_err *err);   /* loads CUPTI, enables the three kinds */
/* Flushes and moves up to cap completed records into out; *n gets the
 * count, *dropped the records CUPTI or this buffer had to drop. */
enum cr_status cr_cupti_collect(struct cr_cupti_rec *out, int cap, int *n, uint64_t *dropped,
				struct cr_err *err);
void cr_cupti_stop(void);

#ifdef __cplusplus
}
#endif
#endif
