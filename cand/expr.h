/* expr.h — integer expressions of candidate directives and task files:
 * launch sizes, scratch sizes, integer arguments (SPEC §3 "Expressions").
 *
 * Grammar (usual C precedence, binary operators left-associative):
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | primary
 *   primary := INT | NAME | FUNC '(' expr ',' expr ')' | '(' expr ')'
 *   FUNC    := cdiv | min | max
 * INT is decimal (a literal right after a unary minus may be 9223372036854775808,
 * so INT64_MIN is writable). NAME is a C identifier; `cdiv`, `min`, `max` are
 * functions only when followed by '(' and ordinary names otherwise.
 *
 * Semantics, all in int64_t:
 *   a / b, a % b   C semantics (truncation toward zero; a % b has a's sign);
 *   cdiv(a, b)     the ceiling of the exact quotient a/b for every sign of a
 *                  and b: cdiv(7,2) = 4, cdiv(-7,2) = -3, cdiv(7,-2) = -3,
 *                  cdiv(-7,-2) = 4;
 *   min, max       as usual.
 * Overflow of a literal or of + - * and unary minus, division or modulo by
 * zero, and INT64_MIN / -1, INT64_MIN % -1, cdiv(INT64_MIN, -1) are errors
 * (CR_EINPUT), never wrapped. Messages carry the 1-based column within the
 * expression text and the text itself, e.g.
 *   "unknown name 'Q' at column 5 in 'N + Q'"
 *   "division by zero at column 3 in 'N / (B - B)'".
 *
 * Names are resolved once, at compile time, through a callback, so that
 * evaluation is a loop over a small RPN program with no allocation. */
#ifndef CR_EXPR_H
#define CR_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cr_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parenthesis/function/unary nesting deeper than this is rejected at compile
 * time (bounds the parser's recursion on hostile input). */
#define CR_EXPR_MAX_NEST 64
/* Evaluation stack size; compile rejects programs that would need more. */
#define CR_EXPR_MAX_STACK 128

/* Returns the variable index (>= 0) for the name text[0..len) (not
 * NUL-terminated), or -1 if the name is unknown. */
typedef int (*cr_expr_lookup)(void *ctx, const char *name, size_t len);

struct cr_expr_op; /* private: one RPN instruction */

/* A compiled expression. Owns one heap block (program + copy of the text);
 * the caller owns the struct. A zeroed struct is a valid empty expression
 * that only cr_expr_release accepts. */
struct cr_expr {
	struct cr_expr_op *ops; /* [n_ops] RPN program, start of the block */
	int n_ops;
	int n_vars_used;        /* 1 + largest variable index used, 0 if none */
	char *text;             /* NUL-terminated copy of the source, in the block */
};

/* Compiles text[0..len) (need not be NUL-terminated). lookup may be NULL,
 * then every name is unknown. On success *e owns storage to be freed with
 * cr_expr_release; on failure *e is left empty (zeroed) and err says what
 * and where (CR_EINPUT, or CR_ENOMEM). */
enum cr_status cr_expr_compile(struct cr_expr *e, const char *text, size_t len,
                               cr_expr_lookup lookup, void *ctx,
                               struct cr_err *err);

/* Evaluates e with vars[i] the value of variable index i (vars may be NULL
 * when e uses no variable). *out is written only on success. Errors:
 * CR_EINPUT for overflow / division by zero; CR_EINTERNAL for an empty e. */
enum cr_status cr_expr_eval(const struct cr_expr *e, const int64_t *vars,
                            int64_t *out, struct cr_err *err);

/* True when e uses no variable (its value is known after compile). */
bool cr_expr_is_const(const struct cr_expr *e);

/* Frees e's storage and zeroes it; safe on a zeroed or released e. */
void cr_expr_release(struct cr_expr *e);

/* Syntax check only: compiles with every name accepted, then releases.
 * Same messages as cr_expr_compile (never "unknown name"). */
enum cr_status cr_expr_check(const char *text, size_t len, struct cr_err *err);

#ifdef __cplusplus
}
#endif
#endif
