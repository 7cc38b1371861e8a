/* cuda_drv_impl.h — the driver API function table loaded at run time and
 * the one checking macro, for the C files that talk to the driver: cuda/'s
 * (cuda_drv.c, cuda_worker.c) and the decoder's CUDA backend
 * (decode/cuda/dec_be_cuda.c). This header includes cuda.h for the driver's types
 * only; nothing links against libcuda. Never include it from a file that is
 * built without HAVE_CUDA. */
#ifndef CR_CUDA_DRV_IMPL_H
#define CR_CUDA_DRV_IMPL_H

#include <stddef.h>
#include <cuda.h>

#include "common/cr_status.h"
#include "cuda/cuda_drv.h"

/* The driver functions crucible uses, each requested from cuGetProcAddress
 * with the CUDA version whose ABI the pointer type below matches (so a newer
 * header or driver cannot silently change a signature). */
struct cr_cu {
	int driver_version;        /* cuDriverGetVersion, e.g. 12080 */
	CUresult (*Init)(unsigned int flags);
	CUresult (*DriverGetVersion)(int *v);
	CUresult (*GetErrorName)(CUresult r, const char **s);
	CUresult (*GetErrorString)(CUresult r, const char **s);
	CUresult (*DeviceGetCount)(int *n);
	CUresult (*DeviceGet)(CUdevice *d, int ordinal);
	CUresult (*DeviceGetAttribute)(int *v, CUdevice_attribute a, CUdevice d);
	CUresult (*DeviceGetName)(char *name, int len, CUdevice d);
	CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice d);
	CUresult (*DeviceGetUuid)(CUuuid *u, CUdevice d);                 /* 11.4 (_v2), may be NULL */
	CUresult (*DeviceGetPCIBusId)(char *id, int len, CUdevice d);     /* may be NULL */
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *c, CUdevice d);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice d);
	CUresult (*CtxSetCurrent)(CUcontext c);
	CUresult (*CtxSynchronize)(void);
	CUresult (*CtxSetLimit)(CUlimit l, size_t v);
	CUresult (*ModuleLoadDataEx)(CUmodule *m, const void *image, unsigned int n,
				     CUjit_option *opts, void **vals);
	CUresult (*ModuleUnload)(CUmodule m);
	CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
	CUresult (*FuncGetAttribute)(int *v, CUfunction_attribute a, CUfunction f);
	CUresult (*FuncSetAttribute)(CUfunction f, CUfunction_attribute a, int v);
	CUresult (*FuncGetParamInfo)(CUfunction f, size_t i, size_t *off, size_t *size); /* 12.4+, may be NULL */
	CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
				 unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
				 void **extra);
	CUresult (*MemAlloc)(CUdeviceptr *p, size_t n);
	CUresult (*MemFree)(CUdeviceptr p);
	CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t n);
	CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t n);
	CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t n);
	CUresult (*MemsetD32)(CUdeviceptr p, unsigned int v, size_t n);
	CUresult (*MemsetD8)(CUdeviceptr p, unsigned char v, size_t n);
	CUresult (*StreamCreate)(CUstream *s, unsigned int flags);
	CUresult (*StreamSynchronize)(CUstream s);
	CUresult (*StreamDestroy)(CUstream s);
	CUresult (*EventCreate)(CUevent *e, unsigned int flags);
	CUresult (*EventRecord)(CUevent e, CUstream s);
	CUresult (*EventSynchronize)(CUevent e);
	CUresult (*EventElapsedTime)(float *ms, CUevent a, CUevent b);
	CUresult (*EventDestroy)(CUevent e);
	/* the decoder's CUDA backend: memory, stream-ordered copies, graphs */
	CUresult (*MemGetInfo)(size_t *free, size_t *total);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t n, CUstream s);
	CUresult (*MemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t n, CUstream s);
	CUresult (*StreamBeginCapture)(CUstream s, CUstreamCaptureMode mode);
	CUresult (*StreamEndCapture)(CUstream s, CUgraph *g);
	CUresult (*GraphInstantiateWithFlags)(CUgraphExec *e, CUgraph g, unsigned long long flags);
	CUresult (*GraphLaunch)(CUgraphExec e, CUstream s);
	CUresult (*GraphExecDestroy)(CUgraphExec e);
	CUresult (*GraphDestroy)(CUgraph g);
};

/* Loads libcuda.so.1 and the table once per process (call it first from one
 * thread); NULL with a one-line reason in why when the driver is missing or
 * too old (cuGetProcAddress_v2 needs CUDA 12.0). Does not call cuInit. */
const struct cr_cu *cr_cu_load(char *why, size_t cap);

/* Formats a failed call ("cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS: an
 * illegal memory access was encountered") into err; returns st. */
enum cr_status cr_cu_fail(const struct cr_cu *cu, CUresult r, const char *call,
			  enum cr_status st, struct cr_err *err);

/* Every driver call is checked through this macro. It needs `cu` (the
 * table), `err` and `st` in scope and an `out:` label; a failure is
 * CR_EENV unless the function sets its own status on the path. */
#define CU_CHECK(call) do { \
	CUresult cu_r_ = (call); \
	if (cu_r_ != CUDA_SUCCESS) { \
		st = cr_cu_fail(cu, cu_r_, #call, CR_EENV, err); \
		goto out; \
	} } while (0)

#endif
