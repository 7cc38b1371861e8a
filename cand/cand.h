/* cand.h — the directive lines of a candidate source (SPEC §3): @task,
 * @forward / @backward launches and @scratch buffers.
 *
 * A directive line is one whose first non-blank characters are `//`, then
 * optional blanks, then `@word`. Every other line is ordinary source and is
 * ignored. The parser checks syntax only: names are not bound to the task's
 * tensors and dims here. Expressions (launch sizes, scratch counts,
 * expression arguments) are syntax-checked with cr_expr_check and kept as
 * text; the caller compiles them with cr_expr_compile once it knows the dims.
 *
 * Every error is CR_EINPUT with the message "PATH:LINE: what is wrong"; the
 * first error ends the parse. Nothing is ever truncated: a value longer than
 * its field is an error. */
#ifndef CR_CAND_H
#define CR_CAND_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cr_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CR_CAND_MAX_LINE 65536 /* bytes in one directive line (a call naming every
				* tensor of a whole network and its gradients) */
#define CR_CAND_NAME 64        /* C identifiers: kernels, args, scratch (incl. NUL) */
#define CR_CAND_TASK 128       /* task name, e.g. "L1/softmax" (incl. NUL) */
#define CR_CAND_EXPR 256       /* one expression's text (incl. NUL) */
/* One call may pass every buffer of the largest task's backward and every
 * dim (cand/plan.h checks it against the task limits); a candidate
 * may launch once per op of the largest graph. */
#define CR_CAND_MAX_ARGS 1152
#define CR_CAND_DTYPE 8
#define CR_CAND_MAX_LAUNCHES 2048 /* @forward lines, and @backward lines */
#define CR_CAND_MAX_SCRATCH 64

enum cr_arg_kind {
	CR_ARG_NAME,  /* a bare C identifier: tensor, scratch or dim, bound later */
	CR_ARG_EXPR,  /* an integer expression over dims (includes int literals) */
	CR_ARG_FLOAT  /* a floating literal: 0.5, 1e-5, -3.0f */
};

struct cr_arg {
	enum cr_arg_kind kind;
	char name[CR_CAND_NAME];  /* CR_ARG_NAME: the identifier */
	char text[CR_CAND_EXPR];  /* every kind: the argument's source, trimmed */
	double fval;              /* CR_ARG_FLOAT: the value */
};

/* One kernel launch (CUDA form) or function call (CPU form). grid, block and
 * smem are expression texts; a grid or block given as one expression has
 * n_grid / n_block == 1 (the x dimension). */
struct cr_launch {
	int line;                 /* 1-based source line */
	char fn[CR_CAND_NAME];    /* kernel / function name */
	bool cuda;                /* kernel<<<...>>>(...) form */
	char grid[3][CR_CAND_EXPR];
	int n_grid;               /* 1..3 when cuda, else 0 */
	char block[3][CR_CAND_EXPR];
	int n_block;              /* 1..3 when cuda, else 0 */
	char smem[CR_CAND_EXPR];  /* dynamic shared memory, bytes */
	bool has_smem;
	int n_args;
	struct cr_arg *args;      /* [n_args], owned (cr_cand_release) */
};

struct cr_scratch {
	int line;
	char name[CR_CAND_NAME];
	char dtype[CR_CAND_DTYPE];  /* f32 f16 bf16 i32 i64 u8 */
	char count[CR_CAND_EXPR];   /* element count expression */
};

/* A parsed candidate. The caller owns the struct; cr_cand_parse fills it and
 * the arrays it points to are owned by it until cr_cand_release. */
struct cr_cand {
	char task[CR_CAND_TASK];
	int task_line;
	bool cuda;                 /* launches use the CUDA form (all of them) */
	struct cr_launch *fwd;     /* [n_fwd], in source order; n_fwd >= 1 */
	int n_fwd;
	struct cr_launch *bwd;     /* [n_bwd], in source order; 0 = no backward */
	int n_bwd;
	struct cr_scratch *scratch; /* [n_scratch], names distinct */
	int n_scratch;
};

/* Parses src[0..len) (the whole file; NUL bytes allowed, need not be
 * NUL-terminated). path is used in messages only (NULL: "<candidate>").
 * Requires exactly one @task and at least one @forward; launches must all be
 * CUDA or all CPU form. On failure *c is left empty (as after release). */
enum cr_status cr_cand_parse(struct cr_cand *c, const char *path, const char *src,
                             size_t len, struct cr_err *err);

/* Frees c's arrays and zeroes it; safe on a zeroed or released c. */
void cr_cand_release(struct cr_cand *c);

#define CR_CAND_MAX_FILE (8u << 20)  /* bytes in a candidate file */

/* A candidate file on its way through the verifier: read, hashed and parsed
 * once (cr_cand_load), then handed to every stage. The plan binding takes
 * cand over (cr_plan_bind zeroes it). */
struct cr_cand_file {
	const char *path;
	char *src;                 /* the whole file, NUL-terminated; NULL: unreadable */
	size_t len;
	char sha256[65];           /* of src ("" when unreadable) */
	bool parsed;               /* cand holds the directives */
	char task_hint[CR_CAND_TASK]; /* the first @task line's name, found even when
				       * the parse failed later (a broken @forward) */
	struct cr_cand cand;
	char error[1024];          /* when !parsed: "PATH:LINE: ..." or "PATH: cannot read ..." */
};

/* Reads, hashes and parses path. An unreadable file or a parse error is
 * recorded in f (error), not returned: the caller makes it a verdict. */
void cr_cand_load(struct cr_cand_file *f, const char *path);
void cr_cand_file_release(struct cr_cand_file *f);

#ifdef __cplusplus
}
#endif
#endif
