/* cuda_cubin.h — what crucible reads from a cubin (the ELF file NVRTC
 * produces) without a GPU: its kernel entry points, each one's register
 * count, stack frame and parameter sizes.
 *
 * Kernels are the symbols that are global functions marked as CUDA entry
 * points (st_other bit 0x10); an `extern "C" __global__` kernel keeps its
 * C name, anything else is C++-mangled. Registers and frame sizes come from
 * the EIATTR records of `.nv.info`, parameter sizes from the KPARAM_INFO
 * records of `.nv.info.<kernel>`. These records are NVIDIA's undocumented
 * but stable format (cuobjdump -elf shows them); the parser checks every
 * bound and leaves a field at -1 when a record is missing. At run time the
 * driver's cuFuncGetParamInfo / cuFuncGetAttribute are authoritative. */
#ifndef CR_CUDA_CUBIN_H
#define CR_CUDA_CUBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CR_CUBIN_NAME 64        /* kernel names kept (incl. NUL); longer ones are skipped */
#define CR_CUBIN_MAX_KERNELS 128
#define CR_CUBIN_MAX_PARAMS 1152 /* a launch's arguments at most (cand/cand.h) */

struct cr_cubin_kernel {
	char name[CR_CUBIN_NAME];  /* the symbol name (mangled unless extern "C") */
	int regs;                  /* registers per thread, -1 unknown */
	int frame;                 /* stack frame bytes, -1 unknown */
	int spill_stores;          /* bytes, from the ptxas -v log, -1 unknown */
	int spill_loads;           /* bytes, from the ptxas -v log, -1 unknown */
	int n_params;              /* -1 unknown */
	int16_t param_size[CR_CUBIN_MAX_PARAMS]; /* bytes, by parameter ordinal (at most 0x3fff), -1 unknown */
	int16_t param_offset[CR_CUBIN_MAX_PARAMS]; /* bytes (a kernel's parameters: under 32 KiB), -1 unknown */
};

struct cr_cubin_info {
	int n_kernels;
	struct cr_cubin_kernel k[CR_CUBIN_MAX_KERNELS];
	int n_skipped;             /* entries beyond the table or with over-long names */
};

/* Reads the entry points of cubin[0..len). Returns false (and leaves
 * n_kernels 0) when the bytes are not a 64-bit little-endian ELF with a
 * symbol table. Never reads out of bounds, whatever the bytes. */
bool cr_cubin_parse(const void *cubin, size_t len, struct cr_cubin_info *out);

/* Adds spill figures from an NVRTC log produced with --ptxas-options=-v
 * ("Function properties for K" followed by "... N bytes spill stores,
 * M bytes spill loads"). Kernels not named there keep -1. */
void cr_cubin_add_ptxas_log(struct cr_cubin_info *info, const char *log);

/* The kernel with exactly this symbol name, or NULL. */
const struct cr_cubin_kernel *cr_cubin_find(const struct cr_cubin_info *info, const char *name);

/* An entry whose mangled name contains `name` as its identifier (e.g.
 * _Z4reluPKfPfi for relu), or NULL: the candidate forgot extern "C". */
const struct cr_cubin_kernel *cr_cubin_find_mangled(const struct cr_cubin_info *info,
						    const char *name);

#ifdef __cplusplus
}
#endif
#endif
