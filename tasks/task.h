/* task.h — a task of the registry: dims, tensors, graph, tolerances.
 *
 * A task is a JSON file under data/tasks/<set>/<stem>.json (SPEC §2). The
 * loader validates it completely (every error names the file and the key)
 * and resolves the graph: every op input names a tensor or an earlier op's
 * output; shapes of intermediates are inferred by the ops (task_ref.c). */
#ifndef TASK_H
#define TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"

#define TASK_MAX_DIMS 16
/* A whole network (L3) is one task: DenseNet201 has ~310 tensors and ~500
 * ops, a 256-step RNN unrolled ~1300 ops. The arrays are allocated to a
 * file's own counts; these bound them (and the candidate's slots,
 * cand/plan.h). */
#define TASK_MAX_TENSORS 512
#define TASK_MAX_RANK 6
#define TASK_MAX_CHECKS 12
#define TASK_MAX_NODES 2048
#define TASK_MAX_VALUES (TASK_MAX_TENSORS + TASK_MAX_OUT * TASK_MAX_NODES) /* tensors + op outputs */
#define TASK_MAX_ATTRS 8
#define TASK_MAX_IN 16      /* inputs of one op (cat of a stack's h_n) */
#define TASK_MAX_OUT 4
#define TASK_NAME_MAX 64
/* Size caps (SPEC §2), checked before anything is allocated: every value
 * (tensor or op output) under every dim set holds at most TASK_MAX_NUMEL
 * elements (so every extent and dim is at most that too); under the shapes
 * the CPU reference runs in double (check_dims, cpu_dims, `dump --dims`)
 * all values together hold at most TASK_MAX_REF_NUMEL (16 GiB as double).
 * The largest task today: a 2^32-element f32 avgpool input at its bench
 * shape; a check shape, DenseNet201's ~2^25 elements over all values. */
#define TASK_MAX_NUMEL ((int64_t)1 << 34)
#define TASK_MAX_REF_NUMEL ((int64_t)1 << 31)

enum task_dtype { TASK_F32, TASK_F16, TASK_BF16, TASK_I32, TASK_I64 };
enum task_role { TASK_INPUT, TASK_PARAM, TASK_OUTPUT };

/* Distribution families. The profile (checks/) scales/offsets/sparsifies
 * the float families; domain-constrained families keep their domain. */
enum task_init_kind {
	TASK_INIT_NORMAL,    /* N(mean, std) */
	TASK_INIT_UNIFORM,   /* U[lo, hi) */
	TASK_INIT_POSITIVE,  /* |N(0,std)| + lo, strictly positive */
	TASK_INIT_PROBS,     /* rows (last axis) sum to 1 */
	TASK_INIT_INDICES,   /* integers in [0, dim) */
	TASK_INIT_KAIMING,   /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = product of all but the first axis,
			      * or the extent of a named dim ("kaiming(H)": PyTorch's RNN init),
			      * or a literal ("kaiming(9)": b holds it);
			      * a: a gain ("kaiming_relu": sqrt(6), He's uniform bound) */
	TASK_INIT_ONES,
	TASK_INIT_ZEROS
};

struct task_init {
	enum task_init_kind kind;
	double a, b;          /* normal: mean,std; uniform: lo,hi; positive: lo,std; kaiming: gain, literal fan_in (0: none) */
	int bound_dim;        /* indices: the dim giving the upper bound */
	int fan_dim;          /* kaiming(DIM): the dim giving fan_in, or -1 */
};

struct task_tensor {
	char name[TASK_NAME_MAX];
	enum task_role role;
	enum task_dtype dtype;
	int rank;
	int dim[TASK_MAX_RANK];    /* dim index, or -1 for a literal */
	int64_t lit[TASK_MAX_RANK];/* literal extent where dim[i] == -1 */
	struct task_init init;
	bool grad;                 /* differentiable (inputs/params) */
};

enum task_attr_kind { TASK_ATTR_INT, TASK_ATTR_FLOAT, TASK_ATTR_STR, TASK_ATTR_INTS };
#define TASK_ATTR_MAX_INTS 6
struct task_attr {
	char key[32];
	enum task_attr_kind kind;
	int64_t i;
	double f;
	char s[32];
	int n_ints;                       /* TASK_ATTR_INTS: a JSON array of integers */
	int64_t ints[TASK_ATTR_MAX_INTS];
};

/* One op of the graph. Values are indexed in one table: tensors first
 * (0 .. n_tensors-1), then intermediates in the order ops create them. */
struct task_node {
	char op[32];
	const struct task_opdef *def;
	int n_in, n_out;
	int in[TASK_MAX_IN], out[TASK_MAX_OUT];
	int n_attrs;
	struct task_attr attrs[TASK_MAX_ATTRS];
};

struct task_dimset {
	int64_t v[TASK_MAX_DIMS];
};

struct task {
	char name[128];       /* "<set>/<stem>" */
	char path[512];       /* the JSON file */
	char source[256];     /* the KernelBench file it mirrors, or "" */
	char description[512];
	char repair[512];     /* how a degenerate KernelBench problem was repaired, or "" */
	int n_dims;
	char dim_names[TASK_MAX_DIMS][TASK_NAME_MAX];
	struct task_dimset bench;   /* GPU bench shape */
	struct task_dimset cpu;     /* cpu backend bench shape */
	int n_checks;
	struct task_dimset checks[TASK_MAX_CHECKS];
	int n_tensors;
	struct task_tensor *tensors;         /* [n_tensors] */
	int n_nodes;
	struct task_node *nodes;             /* [n_nodes] */
	int n_values;                        /* tensors + intermediates */
	char (*value_names)[TASK_NAME_MAX];  /* [n_values] */
	void *mem;                           /* the one allocation behind the three arrays */
	double atol, rtol;
	bool backward;
	char flops[256], bytes[256]; /* expressions over dims ("" if absent) */
};

/* Loads and validates one task file. name is "<set>/<stem>". On success
 * the caller owns t's arrays (task_release); on failure t holds none. A
 * struct task may be moved (realloc, qsort): nothing points into it. */
enum cr_status task_load(struct task *t, const char *path, const char *name,
			 struct cr_err *err);
/* Frees t's arrays and zeroes its counts; safe on a released or zeroed t. */
void task_release(struct task *t);
/* task_release on each of ts[0..n), then free(ts); NULL is a no-op. */
void task_list_free(struct task *ts, int n);

int task_find_dim(const struct task *t, const char *name, size_t len);
int task_find_tensor(const struct task *t, const char *name);
/* Checked shape arithmetic: every shape, size and offset computed from a
 * task file's numbers goes through these (or multiplies a subset of one
 * already counted value's extents, which cannot exceed its count). They
 * return false on int64 overflow, *r then unspecified. */
static inline bool task_mul(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}
static inline bool task_add(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r);
}
/* Element count of a shape; false (and *n = INT64_MAX) when an extent is
 * below 1 or the count overflows or exceeds TASK_MAX_NUMEL. */
bool task_shape_numel(const int64_t *shape, int rank, int64_t *n);

/* Extent of tensor i under a dim set, and its element count. The count is
 * only meaningful for a dim set that task_check_dims accepted (the task's
 * own dim sets are checked by task_load). */
void task_tensor_shape(const struct task *t, int i, const struct task_dimset *d,
		       int64_t shape[TASK_MAX_RANK]);
int64_t task_tensor_numel(const struct task *t, int i, const struct task_dimset *d);
/* Checks a dim set that did not come from the file (`--dims`, a drawn
 * shape): every dim, every tensor and every op's output within
 * TASK_MAX_NUMEL, every op accepting its inputs; with ref, all values
 * together within TASK_MAX_REF_NUMEL. which names the dim set in the
 * message ("--dims"); the message names the file and the field. */
enum cr_status task_check_dims(const struct task *t, const struct task_dimset *d,
			       const char *which, bool ref, struct cr_err *err);
size_t task_dtype_size(enum task_dtype dt);
const char *task_dtype_name(enum task_dtype dt);
const char *task_dtype_ctype(enum task_dtype dt); /* "float", "int64_t", ... */
bool task_dtype_is_float(enum task_dtype dt);
const char *task_role_name(enum task_role r);
/* Writes a one-line "B=4,D=33" rendering of a dim set. */
void task_dims_str(const struct task *t, const struct task_dimset *d, char *buf, size_t cap);

/* Attribute access for ops. */
const struct task_attr *task_node_attr(const struct task_node *n, const char *key);
int64_t task_node_int(const struct task_node *n, const char *key, int64_t dflt);
double task_node_float(const struct task_node *n, const char *key, double dflt);
/* Integer list attribute: copies up to max values into out and returns the
 * count; a scalar integer attribute counts as a list of one; absent: 0. */
int task_node_ints(const struct task_node *n, const char *key, int64_t *out, int max);
/* String attribute, or dflt. */
const char *task_node_str(const struct task_node *n, const char *key, const char *dflt);

#endif
