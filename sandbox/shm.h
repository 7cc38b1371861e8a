/* shm.h — the header at the start of a worker's shared memory, and the
 * command/reply records on its pipes. The orchestrator writes the header
 * before every call and never reads it back: a candidate may scribble on it
 * and only hurts itself. Tensor buffers follow the header, each between
 * guard zones; a "set" is one copy of every slot (input rotation). */
#ifndef CR_SHM_H
#define CR_SHM_H

#include <stdint.h>
#include "cand/plan.h"

#define CR_SHM_MAGIC 0x6372756369626c65ull /* "crucible" */
#define CR_MAX_SETS 4
#define CR_GUARD 4096       /* bytes of guard pattern before and after a buffer */
#define CR_SHM_HDR 1048576  /* header bytes (page aligned): this struct, the cuda
			     * launch table (cuda/cuda_worker.h), the time command */

struct cr_shm_hdr {
	uint64_t magic;
	uint32_t stage;          /* enum cr_stage */
	uint32_t n_slots;
	uint32_t n_launch;
	uint32_t n_sets;
	int64_t dims[TASK_MAX_DIMS];
	uint64_t off[CR_MAX_SETS][CR_MAX_SLOTS];   /* buffer offsets from the base */
	int64_t argv[CR_MAX_ARGV];   /* integer args, evaluated: launch i's argument k at
				      * argv[arg0 + k] (struct cr_plaunch) */
	char so_path[1024];      /* candidate mode: the compiled candidate */
	char task_path[1024];    /* baseline mode: the task file */
	char task_name[128];
};

/* RUN: one call on a set. TIME (cuda worker): the same call with the device
 * timed around the launches only (copies and the L2 flush outside). */
enum cr_cmd_op { CR_CMD_RUN = 1, CR_CMD_NOP = 2, CR_CMD_QUIT = 3, CR_CMD_TIME = 4 };
struct cr_cmd {
	uint32_t op, set, seq, pad;
};

/* FAULT: the call failed in a way that is the candidate's (a CUDA launch
 * error, a parameter mismatch): code is the check_verdict, msg the detail;
 * the worker exits after sending it (a CUDA context is unusable after a
 * sticky error). Only a cuda worker may send it: no candidate host code
 * runs there. A cpu worker runs the candidate's code in its own process,
 * which can write this pipe, so from it the orchestrator takes a DONE with
 * the call's number and nothing else (proc.c).
 * LOADING: the cpu worker is about to dlopen the candidate. Everything
 * before it is crucible's own code (the candidate has no constructors:
 * sandbox/elfcheck.c), so a failure before it is the host's, one after it
 * (and before READY) the candidate's. */
enum cr_reply_kind { CR_REP_DONE = 1, CR_REP_READY = 2, CR_REP_SYSCALL = 3, CR_REP_FAIL = 4,
		     CR_REP_FAULT = 5, CR_REP_LOADING = 6 };
struct cr_reply {
	uint32_t kind, seq;
	int32_t code;            /* SYSCALL: the syscall number; FAIL: -1, or the check_verdict
				  * when setup failed for the candidate's fault; FAULT: the verdict */
	int32_t n_kernels;       /* TIME: CUPTI kernel records in the window, -1 without CUPTI */
	int64_t event_ns;        /* TIME: CUDA events around the launches */
	int64_t cupti_ns;        /* TIME: sum of the CUPTI kernel durations, -1 without CUPTI */
	char msg[232];           /* FAIL, FAULT: what went wrong */
};

/* A TIME call's inputs made on the device (so a GPU sample costs no host-side
 * input generation): before the call the worker copies each input from a
 * pool region to its slot and fills each output with the poison word (and
 * 0xff in a tail of fewer than 4 bytes); after it, it copies back the whole
 * region (full_copy) or only the first and last CR_CUDA_PROBE bytes of each
 * output. Offsets are from the start of the region after the header (shm
 * offset - CR_SHM_HDR). Written by the orchestrator before each TIME call;
 * without it (magic 0) a TIME call copies the region in from the host as
 * RUN does. */
#define CR_CUDA_TCMD_OFF 983040
#define CR_CUDA_TCMD_MAGIC 0x74636d6431ull
#define CR_CUDA_PROBE 64
enum cr_cuda_tcmd_kind { CR_TCMD_INPUT = 1, CR_TCMD_OUTPUT = 2 };
struct cr_cuda_tcmd {
	uint64_t magic;
	uint32_t full_copy;
	uint32_t poison;
	uint32_t n;
	uint32_t pad;
	struct { uint64_t dst, src, bytes; uint32_t kind, pad; } e[CR_MAX_SLOTS];
};
_Static_assert(sizeof(struct cr_shm_hdr) <= CR_CUDA_TCMD_OFF, "the header overlaps the time command");
_Static_assert(CR_CUDA_TCMD_OFF + sizeof(struct cr_cuda_tcmd) <= CR_SHM_HDR, "time command does not fit in the header bytes");
#endif
