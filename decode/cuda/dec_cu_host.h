/* dec_cu_host.h — private to the CUDA backend's two host files
 * (decode/cuda/dec_be_cuda.c: the ops, steps, graphs and errors;
 * decode/cuda/dec_be_cuda_open.c: opening, the uploads, freeing): the backend's
 * state and the kernels' ids. Includes the driver's header through
 * cuda/cuda_drv_impl.h, so only files built with the CUDA backend include
 * it. */
#ifndef DEC_CU_HOST_H
#define DEC_CU_HOST_H

#include "cuda/cuda_cubin.h"
#include "cuda/cuda_drv_impl.h"
#include "decode/cuda/dec_be_cuda.h"
#include "decode/cuda/dec_cu.h"

#define MAX_GRAPHS 64

enum kid {
#define X(n) KI_##n,
	DEC_CU_KERNELS(X)
#undef X
	KI_N
};
_Static_assert(KI_N <= CR_CUBIN_MAX_KERNELS, "the test suite's fake driver reads CR_CUBIN_MAX_KERNELS kernels a cubin");
_Static_assert(KI_mmv_iq4_xs_64 == KI_mmv_f32_1 + 4 * DEC_CU_N_MMV_TYPES - 1,
	       "mmv_kernel() relies on DEC_CU_KERNELS' order");
extern const char *const dec_cu_kname[KI_N]; /* the kernels' names, by kid */

/* a weight matrix in device memory, in the file's layout */
struct dmat {
	CUdeviceptr p;
	uint32_t type;
	int rows, cols;
};

struct graph {
	int nb, n_out, n_seq, n_tiles;
	int seen;              /* steps of this shape so far */
	CUgraphExec exec;      /* once captured */
	uint64_t used;         /* the step counter when last used */
};

struct be_cuda {
	struct dec_be base;
	const struct cr_cu *cu;
	CUdevice dev;
	CUcontext ctx;
	int retained;
	CUmodule mod;
	CUfunction fn[KI_N];
	CUstream st;
	CUdeviceptr wmem, kvmem, work;  /* weights; KV pools; everything else */
	CUdeviceptr dcfg, step, act_q, act_d, act_s;
	struct dec_cu_cfg *cfg;         /* host copy of what dcfg holds */
	struct dmat *mats;              /* [n_layers * 7 + 2]: per layer Q K V O GATE UP DOWN, then embd, output */
	CUdeviceptr *vecs;              /* [n_layers * 2 + 1]: attn_norm, ffn_norm per layer, then out_norm */
	int32_t *stage;                 /* host image of the step buffers */
	size_t step_ints;
	CUdeviceptr *scr;               /* scratch allocations */
	int n_scr, cap_scr;
	/* the current step */
	int nb, n_out, n_seq;
	int n_tiles;                    /* prefill attention tiles (k_att_tile); 0: k_attention */
	unsigned att_smem;              /* k_att_tile's dynamic shared memory, bytes */
	/* errors */
	enum cr_status err_st;
	char err_msg[768];
	int last_kernel, last_layer;
	int sync_each;
	int mmq_on;                     /* CRUCIBLE_CUDA_MMQ (default 1): prefill products on tensor cores */
	/* sampling (op_sample): draws in, ids and counts out, in the work
	 * area; the top logprobs in a buffer grown on demand */
	CUdeviceptr smp_draws, smp_res, smp_top;
	size_t smp_top_cap;             /* bytes at smp_top */
	struct dec_cu_draw smp_stage[DEC_BE_MAX_DRAWS];
	int32_t smp_out[DEC_CU_SAMPLE_RES * DEC_BE_MAX_DRAWS];
	/* graphs */
	int graphs_on, capturing;
	struct graph *cap_g;
	struct graph g[MAX_GRAPHS];
	uint64_t steps;
};

/* dec_be_cuda.c */
extern const struct dec_be_ops dec_cu_ops;
/* the matrix kernels' index of weight type t (DEC_CU_MMV_TYPES's order), or
 * -1: no kernel reads it */
int dec_cu_mmv_index(uint32_t t);
/* the device copy of (layer, k) */
const struct dmat *dec_cu_dmat(const struct be_cuda *b, int layer, enum dec_wkind k);

/* dec_be_cuda_open.c */
void dec_cu_free(struct dec_be *be);

#endif
