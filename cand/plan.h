/* plan.h — a candidate bound to its task: the buffer slots of each stage,
 * every launch argument resolved to a slot, a compiled expression or a float
 * literal. The plan is public information: the worker gets it too. */
#ifndef CR_PLAN_H
#define CR_PLAN_H

#include "cand/cand.h"
#include "cand/expr.h"
#include "tasks/task.h"

/* Buffers of a stage: the backward's are every tensor, every d<out> and
 * every d<in> (2 x the tensors at most), then scratch. */
#define CR_MAX_SLOTS (2 * TASK_MAX_TENSORS + CR_CAND_MAX_SCRATCH)
#define CR_MAX_LAUNCH CR_CAND_MAX_LAUNCHES
#define CR_MAX_ARGS CR_CAND_MAX_ARGS
#define CR_MAX_ARGV 16384   /* arguments of all the launches of one stage */
#define CR_MAX_EXPRS 16384  /* expressions of a plan: integer args, launch sizes, scratch */
_Static_assert(CR_MAX_ARGS >= CR_MAX_SLOTS + TASK_MAX_DIMS,
	       "a call cannot pass every buffer and dim of the largest task");

enum cr_stage { CR_FWD = 0, CR_BWD = 1 };
enum cr_slot_role { CR_SLOT_IN, CR_SLOT_OUT, CR_SLOT_SCRATCH };

/* One buffer the candidate sees. Forward: the task's tensors then scratch.
 * Backward: inputs and params, forward outputs (reference values), d<out>
 * (upstream gradients), d<in> for every differentiable input/param (the
 * candidate's outputs), then scratch. */
struct cr_slot {
	char name[TASK_NAME_MAX + 1];
	enum task_dtype dtype;
	enum cr_slot_role role;
	int tensor;     /* task tensor index, -1 for scratch */
	bool grad;      /* the gradient of that tensor */
	int scratch;    /* index into plan scratch, -1 otherwise */
};

enum cr_parg_kind { CR_PARG_SLOT, CR_PARG_INT, CR_PARG_FLOAT };
struct cr_parg {
	enum cr_parg_kind kind;
	int slot;       /* SLOT */
	int expr;       /* INT: index into plan exprs */
	double f;       /* FLOAT */
};

struct cr_plaunch {
	char fn[CR_CAND_NAME];
	int line;
	int n_args;
	int arg0;                    /* args are the stage's argv[arg0 .. arg0 + n_args) */
	struct cr_parg *args;        /* [n_args]: into the stage's args */
	int grid[3], block[3], smem; /* CUDA: expr indices (-1: absent / 1) */
};

struct cr_pstage {
	int n_slots;
	struct cr_slot slots[CR_MAX_SLOTS];
	int n_launch;
	struct cr_plaunch *launch;   /* [n_launch], owned */
	int n_args;                  /* all launches' arguments, <= CR_MAX_ARGV */
	struct cr_parg *args;        /* [n_args], owned */
};

struct cr_plan {
	const struct task *task;
	struct cr_cand cand;
	bool cuda;
	bool has_bwd;            /* the candidate has @backward and the task has one */
	bool bwd_absent;         /* task has backward, candidate has none */
	struct cr_pstage st[2];
	int n_scratch;
	int scratch_esize[CR_CAND_MAX_SCRATCH];     /* bytes per element */
	int scratch_count[CR_CAND_MAX_SCRATCH];  /* expr indices */
	int n_exprs, cap_exprs;
	struct cr_expr *exprs;        /* [n_exprs], owned */
	int *expr_line;               /* [n_exprs]: the directive line of each expression */
	char path[512];               /* the candidate, for messages */
};

/* Binds a parsed candidate (ownership of *cand moves into the plan) to its
 * task. Errors are CR_EINPUT "PATH:LINE: ..." (a format_error). */
enum cr_status cr_plan_bind(struct cr_plan *p, const struct task *t, struct cr_cand *cand,
			    const char *path, struct cr_err *err);
void cr_plan_release(struct cr_plan *p);
/* A task's flops or bytes expression at dims d; false when absent or it
 * does not evaluate. */
bool cr_task_metric(const struct task *t, const char *text, const struct task_dimset *d, double *out);

/* Elements one scratch buffer may hold (the checks bound its bytes too). */
#define CR_PLAN_MAX_SCRATCH_NUMEL ((int64_t)1 << 32)
/* Evaluates every expression of the plan under a dim set: vals[n_exprs];
 * a scratch count below 0 or over CR_PLAN_MAX_SCRATCH_NUMEL is an error
 * naming the file, the line and the buffer. */
enum cr_status cr_plan_eval(const struct cr_plan *p, const struct task_dimset *d,
			    int64_t *vals, struct cr_err *err);
/* Elements of a slot under a dim set (vals from cr_plan_eval). */
int64_t cr_plan_slot_numel(const struct cr_plan *p, enum cr_stage s, int slot,
			   const struct task_dimset *d, const int64_t *vals);

#endif
