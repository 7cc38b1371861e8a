/* cuda_drv.c — libcuda and NVML loaded at run time: the driver function
 * table, the one-line "why not" of a machine without a usable GPU, device
 * facts, and our own CUresult name table. */
#include "cuda/cuda_drv_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CUresult names (generated from CUDA 13.0's cuda.h) ---- */

static const struct { int code; const char *name; } cu_names[] = {
	{ 0, "CUDA_SUCCESS" },
	{ 1, "CUDA_ERROR_INVALID_VALUE" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED" },
	{ 4, "CUDA_ERROR_DEINITIALIZED" },
	{ 5, "CUDA_ERROR_PROFILER_DISABLED" },
	{ 6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED" },
	{ 7, "CUDA_ERROR_PROFILER_ALREADY_STARTED" },
	{ 8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED" },
	{ 34, "CUDA_ERROR_STUB_LIBRARY" },
	{ 36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER" },
	{ 46, "CUDA_ERROR_DEVICE_UNAVAILABLE" },
	{ 100, "CUDA_ERROR_NO_DEVICE" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE" },
	{ 102, "CUDA_ERROR_DEVICE_NOT_LICENSED" },
	{ 200, "CUDA_ERROR_INVALID_IMAGE" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT" },
	{ 202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT" },
	{ 205, "CUDA_ERROR_MAP_FAILED" },
	{ 206, "CUDA_ERROR_UNMAP_FAILED" },
	{ 207, "CUDA_ERROR_ARRAY_IS_MAPPED" },
	{ 208, "CUDA_ERROR_ALREADY_MAPPED" },
	{ 209, "CUDA_ERROR_NO_BINARY_FOR_GPU" },
	{ 210, "CUDA_ERROR_ALREADY_ACQUIRED" },
	{ 211, "CUDA_ERROR_NOT_MAPPED" },
	{ 212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY" },
	{ 213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER" },
	{ 214, "CUDA_ERROR_ECC_UNCORRECTABLE" },
	{ 215, "CUDA_ERROR_UNSUPPORTED_LIMIT" },
	{ 216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE" },
	{ 217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED" },
	{ 218, "CUDA_ERROR_INVALID_PTX" },
	{ 219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT" },
	{ 220, "CUDA_ERROR_NVLINK_UNCORRECTABLE" },
	{ 221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND" },
	{ 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" },
	{ 223, "CUDA_ERROR_JIT_COMPILATION_DISABLED" },
	{ 224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY" },
	{ 225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC" },
	{ 226, "CUDA_ERROR_CONTAINED" },
	{ 300, "CUDA_ERROR_INVALID_SOURCE" },
	{ 301, "CUDA_ERROR_FILE_NOT_FOUND" },
	{ 302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND" },
	{ 303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED" },
	{ 304, "CUDA_ERROR_OPERATING_SYSTEM" },
	{ 400, "CUDA_ERROR_INVALID_HANDLE" },
	{ 401, "CUDA_ERROR_ILLEGAL_STATE" },
	{ 402, "CUDA_ERROR_LOSSY_QUERY" },
	{ 500, "CUDA_ERROR_NOT_FOUND" },
	{ 600, "CUDA_ERROR_NOT_READY" },
	{ 700, "CUDA_ERROR_ILLEGAL_ADDRESS" },
	{ 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" },
	{ 702, "CUDA_ERROR_LAUNCH_TIMEOUT" },
	{ 703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING" },
	{ 704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED" },
	{ 705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED" },
	{ 708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE" },
	{ 709, "CUDA_ERROR_CONTEXT_IS_DESTROYED" },
	{ 710, "CUDA_ERROR_ASSERT" },
	{ 711, "CUDA_ERROR_TOO_MANY_PEERS" },
	{ 712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED" },
	{ 713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED" },
	{ 714, "CUDA_ERROR_HARDWARE_STACK_ERROR" },
	{ 715, "CUDA_ERROR_ILLEGAL_INSTRUCTION" },
	{ 716, "CUDA_ERROR_MISALIGNED_ADDRESS" },
	{ 717, "CUDA_ERROR_INVALID_ADDRESS_SPACE" },
	{ 718, "CUDA_ERROR_INVALID_PC" },
	{ 719, "CUDA_ERROR_LAUNCH_FAILED" },
	{ 720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" },
	{ 721, "CUDA_ERROR_TENSOR_MEMORY_LEAK" },
	{ 800, "CUDA_ERROR_NOT_PERMITTED" },
	{ 801, "CUDA_ERROR_NOT_SUPPORTED" },
	{ 802, "CUDA_ERROR_SYSTEM_NOT_READY" },
	{ 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" },
	{ 804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE" },
	{ 805, "CUDA_ERROR_MPS_CONNECTION_FAILED" },
	{ 806, "CUDA_ERROR_MPS_RPC_FAILURE" },
	{ 807, "CUDA_ERROR_MPS_SERVER_NOT_READY" },
	{ 808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED" },
	{ 809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED" },
	{ 810, "CUDA_ERROR_MPS_CLIENT_TERMINATED" },
	{ 811, "CUDA_ERROR_CDP_NOT_SUPPORTED" },
	{ 812, "CUDA_ERROR_CDP_VERSION_MISMATCH" },
	{ 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" },
	{ 901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED" },
	{ 902, "CUDA_ERROR_STREAM_CAPTURE_MERGE" },
	{ 903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED" },
	{ 904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED" },
	{ 905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION" },
	{ 906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT" },
	{ 907, "CUDA_ERROR_CAPTURED_EVENT" },
	{ 908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD" },
	{ 909, "CUDA_ERROR_TIMEOUT" },
	{ 910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE" },
	{ 911, "CUDA_ERROR_EXTERNAL_DEVICE" },
	{ 912, "CUDA_ERROR_INVALID_CLUSTER_SIZE" },
	{ 913, "CUDA_ERROR_FUNCTION_NOT_LOADED" },
	{ 914, "CUDA_ERROR_INVALID_RESOURCE_TYPE" },
	{ 915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" },
	{ 916, "CUDA_ERROR_KEY_ROTATION" },
	{ 999, "CUDA_ERROR_UNKNOWN" },
};

const char *cr_cu_result_name(int code, char *buf, size_t cap)
{
	for (size_t i = 0; i < sizeof cu_names / sizeof cu_names[0]; i++)
		if (cu_names[i].code == code)
			return cu_names[i].name;
	snprintf(buf, cap, "CUDA_ERROR_%d", code);
	return buf;
}

/* ---- the driver table ---- */

typedef CUresult (*get_proc_fn)(const char *sym, void **pfn, int ver, cuuint64_t flags,
				CUdriverProcAddressQueryResult *status);

/* Each entry: the base name, the CUDA version whose ABI our pointer type
 * has, where it goes, and whether crucible can do without it. */
static const struct {
	const char *name;
	int version;
	size_t off;
	int optional;
} cu_syms[] = {
#define E(f, v, opt) { "cu" #f, v, offsetof(struct cr_cu, f), opt }
	E(Init, 2000, 0), E(DriverGetVersion, 2020, 0), E(GetErrorName, 6000, 0),
	E(GetErrorString, 6000, 0), E(DeviceGetCount, 2000, 0), E(DeviceGet, 2000, 0),
	E(DeviceGetAttribute, 2000, 0), E(DeviceGetName, 2000, 0), E(DeviceTotalMem, 3020, 0),
	E(DeviceGetUuid, 11040, 1), E(DeviceGetPCIBusId, 4010, 1),
	E(DevicePrimaryCtxRetain, 7000, 0), E(DevicePrimaryCtxRelease, 11000, 0),
	E(CtxSetCurrent, 4000, 0), E(CtxSynchronize, 2000, 0), E(CtxSetLimit, 3010, 0),
	E(ModuleLoadDataEx, 2010, 0), E(ModuleUnload, 2000, 0), E(ModuleGetFunction, 2000, 0),
	E(FuncGetAttribute, 2020, 0), E(FuncSetAttribute, 9000, 0), E(FuncGetParamInfo, 12040, 1),
	E(LaunchKernel, 4000, 0), E(MemAlloc, 3020, 0), E(MemFree, 3020, 0),
	E(MemcpyHtoD, 3020, 0), E(MemcpyDtoH, 3020, 0), E(MemcpyDtoD, 3020, 0), E(MemsetD32, 3020, 0),
	E(MemsetD8, 3020, 0), E(StreamCreate, 2000, 0), E(StreamSynchronize, 2000, 0),
	E(StreamDestroy, 4000, 0), E(EventCreate, 2000, 0), E(EventRecord, 2000, 0),
	E(EventSynchronize, 2000, 0), E(EventElapsedTime, 2000, 0), E(EventDestroy, 4000, 0),
	E(MemGetInfo, 3020, 0), E(MemcpyHtoDAsync, 3020, 0), E(MemcpyDtoHAsync, 3020, 0),
	E(StreamBeginCapture, 10010, 0), E(StreamEndCapture, 10000, 0),
	E(GraphInstantiateWithFlags, 11040, 0), E(GraphLaunch, 10000, 0), E(GraphExecDestroy, 10000, 0),
	E(GraphDestroy, 10000, 0),
#undef E
};

static struct {
	int state;                 /* 0 not tried, 1 loaded, -1 failed */
	char why[256];
	void *lib;
	const char *path;          /* the library dlopened */
	struct cr_cu cu;
} drv;

const struct cr_cu *cr_cu_load(char *why, size_t cap)
{
	get_proc_fn get_proc;
	int (*get_version)(int *);

	if (drv.state == 1)
		return &drv.cu;
	if (drv.state == -1)
		goto fail;
	drv.state = -1;
	/* CRUCIBLE_LIBCUDA names another driver library (a non-standard
	 * install, or the test suite's emulated driver); run.json records it */
	drv.path = getenv("CRUCIBLE_LIBCUDA") && *getenv("CRUCIBLE_LIBCUDA") ? getenv("CRUCIBLE_LIBCUDA")
									       : "libcuda.so.1";
	drv.lib = dlopen(drv.path, RTLD_NOW | RTLD_LOCAL);
	if (!drv.lib) {
		if (strcmp(drv.path, "libcuda.so.1"))
			snprintf(drv.why, sizeof drv.why, "CRUCIBLE_LIBCUDA=%s: %s", drv.path, dlerror());
		else
			snprintf(drv.why, sizeof drv.why, "no libcuda.so.1 (no NVIDIA driver installed)");
		goto fail;
	}
	get_proc = (get_proc_fn)(uintptr_t)dlsym(drv.lib, "cuGetProcAddress_v2");
	get_version = (int (*)(int *))(uintptr_t)dlsym(drv.lib, "cuDriverGetVersion");
	if (!get_proc || !get_version || get_version(&drv.cu.driver_version)) {
		snprintf(drv.why, sizeof drv.why,
			 "the NVIDIA driver is too old (no cuGetProcAddress_v2: CUDA 12.0 or newer needed)");
		goto fail;
	}
	for (size_t i = 0; i < sizeof cu_syms / sizeof cu_syms[0]; i++) {
		void *fn = NULL;
		CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
		CUresult r = get_proc(cu_syms[i].name, &fn, cu_syms[i].version,
				      CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q);
		if ((r != CUDA_SUCCESS || !fn) && !strcmp(cu_syms[i].name, "cuEventElapsedTime"))
			r = get_proc(cu_syms[i].name, &fn, 12080, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q);
		if (r != CUDA_SUCCESS || !fn) {
			if (cu_syms[i].optional)
				continue;
			snprintf(drv.why, sizeof drv.why, "the NVIDIA driver (CUDA %d.%d) lacks %s",
				 drv.cu.driver_version / 1000, drv.cu.driver_version % 1000 / 10,
				 cu_syms[i].name);
			goto fail;
		}
		memcpy((char *)&drv.cu + cu_syms[i].off, &fn, sizeof fn);
	}
	drv.state = 1;
	return &drv.cu;
fail:
	if (why && cap)
		snprintf(why, cap, "%s", drv.why);
	return NULL;
}

enum cr_status cr_cu_fail(const struct cr_cu *cu, CUresult r, const char *call,
			  enum cr_status st, struct cr_err *err)
{
	char buf[32], fn[64];
	const char *desc = NULL;
	size_t n = strcspn(call, "(");

	if (cu && cu->GetErrorString && cu->GetErrorString(r, &desc) != CUDA_SUCCESS)
		desc = NULL;
	/* "cu->LaunchKernel(f, ...)" -> "cuLaunchKernel" */
	if (!strncmp(call, "cu->", 4))
		snprintf(fn, sizeof fn, "cu%.*s", (int)(n > 4 ? n - 4 : 0), call + 4);
	else
		snprintf(fn, sizeof fn, "%.*s", (int)n, call);
	return cr_errf(err, st, "%s: %s%s%s", fn, cr_cu_result_name((int)r, buf, sizeof buf),
		       desc ? ": " : "", desc ? desc : "");
}

bool cr_cuda_available(char *why, size_t cap)
{
	const struct cr_cu *cu = cr_cu_load(why, cap);
	struct cr_err e;
	struct cr_cuda_device d;

	if (!cu)
		return false;
	cr_err_init(&e);
	if (cr_cuda_device_info(0, &d, &e)) {
		snprintf(why, cap, "%s", e.msg);
		return false;
	}
	snprintf(why, cap, "%s (%s), driver CUDA %d.%d", d.name, d.arch, d.driver_version / 1000,
		 d.driver_version % 1000 / 10);
	return true;
}

enum cr_status cr_cuda_device_info(int ordinal, struct cr_cuda_device *d, struct cr_err *err)
{
	char why[256];
	const struct cr_cu *cu = cr_cu_load(why, sizeof why);
	enum cr_status st = CR_OK;
	CUdevice dev;
	int n = 0;

	memset(d, 0, sizeof *d);
	if (!cu)
		return cr_errf(err, CR_EENV, "%s", why);
	d->ordinal = ordinal;
	d->driver_version = cu->driver_version;
	{
		CUresult r = cu->Init(0);
		if (r != CUDA_SUCCESS) {
			char b[32];
			return cr_errf(err, CR_EENV, "cuInit failed: %s (no usable GPU)",
				       cr_cu_result_name((int)r, b, sizeof b));
		}
	}
	CU_CHECK(cu->DeviceGetCount(&n));
	if (ordinal >= n)
		return cr_errf(err, CR_EENV, "no CUDA device %d (%d visible)", ordinal, n);
	CU_CHECK(cu->DeviceGet(&dev, ordinal));
	CU_CHECK(cu->DeviceGetName(d->name, (int)sizeof d->name - 1, dev));
	CU_CHECK(cu->DeviceGetAttribute(&d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CU_CHECK(cu->DeviceGetAttribute(&d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	CU_CHECK(cu->DeviceGetAttribute(&d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CU_CHECK(cu->DeviceGetAttribute(&d->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
	CU_CHECK(cu->DeviceGetAttribute(&d->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
	CU_CHECK(cu->DeviceTotalMem(&d->total_mem, dev));
	/* deprecated attributes: a driver may answer with an error */
	if (cu->DeviceGetAttribute(&d->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev))
		d->clock_khz = 0;
	if (cu->DeviceGetAttribute(&d->mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev))
		d->mem_clock_khz = 0;
	if (cu->DeviceGetAttribute(&d->bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev))
		d->bus_bits = 0;
	snprintf(d->arch, sizeof d->arch, "sm_%d%d", d->cc_major, d->cc_minor);
	/* identity: what NVML and nvidia-smi call the same device (their
	 * indices may differ from the driver's ordinals) */
	if (cu->DeviceGetUuid) {
		CUuuid u;
		if (cu->DeviceGetUuid(&u, dev) == CUDA_SUCCESS)
			cr_cuda_uuid_str((const unsigned char *)u.bytes, d->uuid, sizeof d->uuid);
	}
	if (cu->DeviceGetPCIBusId && cu->DeviceGetPCIBusId(d->bus_id, (int)sizeof d->bus_id, dev))
		d->bus_id[0] = '\0';
out:
	return st;
}

void cr_cuda_uuid_str(const unsigned char b[16], char *out, size_t cap)
{
	snprintf(out, cap, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

enum cr_status cr_cuda_device_count(int *n, struct cr_err *err)
{
	char why[256];
	const struct cr_cu *cu = cr_cu_load(why, sizeof why);
	enum cr_status st = CR_OK;
	CUresult r;

	*n = 0;
	if (!cu)
		return cr_errf(err, CR_EENV, "%s", why);
	if ((r = cu->Init(0)) != CUDA_SUCCESS) {
		char b[32];
		return cr_errf(err, CR_EENV, "cuInit failed: %s (no usable GPU)",
			       cr_cu_result_name((int)r, b, sizeof b));
	}
	CU_CHECK(cu->DeviceGetCount(n));
out:
	return st;
}

/* ---- NVML ---- */

typedef int nvml_ret;
typedef void *nvml_dev;

static struct {
	int state;
	void *lib;
	nvml_ret (*Init)(void);
	nvml_ret (*GetHandleByBusId)(const char *bus_id, nvml_dev *d);
	nvml_ret (*GetClockInfo)(nvml_dev d, int type, unsigned *mhz);
	nvml_ret (*GetMaxClockInfo)(nvml_dev d, int type, unsigned *mhz);
	nvml_ret (*GetReasons)(nvml_dev d, unsigned long long *mask);
	nvml_ret (*GetTemperature)(nvml_dev d, int sensor, unsigned *c);
	nvml_ret (*GetPowerUsage)(nvml_dev d, unsigned *mw);
	nvml_ret (*DriverVersion)(char *v, unsigned len);
	nvml_ret (*SetLocked)(nvml_dev d, unsigned lo, unsigned hi);
	nvml_ret (*ResetLocked)(nvml_dev d);
	const char *(*ErrorString)(nvml_ret r);
} nvml;

#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2

static void *nvml_sym(const char *a, const char *b)
{
	void *p = dlsym(nvml.lib, a);
	return p || !b ? p : dlsym(nvml.lib, b);
}

static bool nvml_load(char *why, size_t cap)
{
	if (nvml.state)
		goto done;
	nvml.state = -1;
	if (!(nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, cap, "no libnvidia-ml.so.1 (NVML)");
		return false;
	}
#define S(f, a, b) *(void **)&nvml.f = nvml_sym(a, b)
	S(Init, "nvmlInit_v2", NULL);
	S(GetHandleByBusId, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
	S(GetClockInfo, "nvmlDeviceGetClockInfo", NULL);
	S(GetMaxClockInfo, "nvmlDeviceGetMaxClockInfo", NULL);
	S(GetReasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
	S(GetTemperature, "nvmlDeviceGetTemperature", NULL);
	S(GetPowerUsage, "nvmlDeviceGetPowerUsage", NULL);
	S(DriverVersion, "nvmlSystemGetDriverVersion", NULL);
	S(SetLocked, "nvmlDeviceSetGpuLockedClocks", NULL);
	S(ResetLocked, "nvmlDeviceResetGpuLockedClocks", NULL);
	S(ErrorString, "nvmlErrorString", NULL);
#undef S
	if (!nvml.Init || !nvml.GetHandleByBusId || !nvml.GetClockInfo || nvml.Init()) {
		snprintf(why, cap, "NVML did not initialise");
		return false;
	}
	nvml.state = 1;
done:
	if (nvml.state != 1)
		snprintf(why, cap, "NVML unavailable");
	return nvml.state == 1;
}

void cr_nvml_reasons_str(unsigned long long m, char *out, size_t cap)
{
	static const char *names[] = { "gpu_idle", "app_clocks", "sw_power_cap", "hw_slowdown",
				       "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake",
				       "display_clocks" };
	size_t used = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		if (m & (1ull << i) && used < cap)
			used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "," : "", names[i]);
	if (!used)
		snprintf(out, cap, m ? "0x%llx" : "none", m);
}

enum cr_status cr_nvml_lock_clocks(const char *bus_id, bool lock, struct cr_err *err)
{
	char why[128];
	nvml_dev d;
	nvml_ret r;
	unsigned max = 0;

	if (!nvml_load(why, sizeof why))
		return cr_errf(err, CR_EENV, "%s", why);
	if (!nvml.SetLocked || !nvml.ResetLocked)
		return cr_errf(err, CR_EENV, "this NVML cannot lock clocks (no nvmlDeviceSetGpuLockedClocks)");
	if (!bus_id || !bus_id[0])
		return cr_errf(err, CR_EENV, "the driver gave no PCI bus id to find the device in NVML");
	if ((r = nvml.GetHandleByBusId(bus_id, &d)))
		return cr_errf(err, CR_EENV, "nvmlDeviceGetHandleByPciBusId(%s): %s", bus_id,
			       nvml.ErrorString ? nvml.ErrorString(r) : "failed");
	if (!lock)
		r = nvml.ResetLocked(d);
	else if (!nvml.GetMaxClockInfo || nvml.GetMaxClockInfo(d, NVML_CLOCK_SM, &max) || !max)
		return cr_errf(err, CR_EENV, "NVML does not give the device's maximum SM clock");
	else
		r = nvml.SetLocked(d, max, max);
	if (r)
		return cr_errf(err, CR_EENV, "%s: %s", lock ? "nvmlDeviceSetGpuLockedClocks" : "nvmlDeviceResetGpuLockedClocks",
			       nvml.ErrorString ? nvml.ErrorString(r) : "failed");
	return CR_OK;
}

enum cr_status cr_nvml_clocks(const char *bus_id, struct cr_nvml_clocks *c, struct cr_err *err)
{
	char why[128];
	nvml_dev d;
	nvml_ret r;

	memset(c, 0, sizeof *c);
	if (!nvml_load(why, sizeof why))
		return cr_errf(err, CR_EENV, "%s", why);
	if (!bus_id || !bus_id[0])
		return cr_errf(err, CR_EENV, "the driver gave no PCI bus id to find the device in NVML");
	if ((r = nvml.GetHandleByBusId(bus_id, &d)))
		return cr_errf(err, CR_EENV, "nvmlDeviceGetHandleByPciBusId(%s): %s", bus_id,
			       nvml.ErrorString ? nvml.ErrorString(r) : "failed");
	/* each figure is best effort: an unsupported query leaves 0 */
	if (nvml.GetClockInfo(d, NVML_CLOCK_SM, &c->sm_mhz))
		c->sm_mhz = 0;
	if (nvml.GetClockInfo(d, NVML_CLOCK_MEM, &c->mem_mhz))
		c->mem_mhz = 0;
	if (nvml.GetMaxClockInfo && nvml.GetMaxClockInfo(d, NVML_CLOCK_SM, &c->sm_max_mhz))
		c->sm_max_mhz = 0;
	if (nvml.GetMaxClockInfo && nvml.GetMaxClockInfo(d, NVML_CLOCK_MEM, &c->mem_max_mhz))
		c->mem_max_mhz = 0;
	if (nvml.GetReasons && nvml.GetReasons(d, &c->throttle))
		c->throttle = 0;
	if (nvml.GetTemperature && nvml.GetTemperature(d, 0, &c->temp_c))
		c->temp_c = 0;
	if (nvml.GetPowerUsage && nvml.GetPowerUsage(d, &c->power_mw))
		c->power_mw = 0;
	if (nvml.DriverVersion && nvml.DriverVersion(c->driver, sizeof c->driver))
		c->driver[0] = '\0';
	cr_nvml_reasons_str(c->throttle, c->throttle_str, sizeof c->throttle_str);
	return CR_OK;
}
