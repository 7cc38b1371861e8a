/* expr.c — compiler (recursive descent to RPN) and evaluator of the integer
 * expressions described in expr.h. */
#include "cand/expr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op_kind {
	OP_CONST, OP_VAR, OP_NEG,
	OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
	OP_CDIV, OP_MIN, OP_MAX
};

struct cr_expr_op {
	int64_t v;   /* OP_CONST: the value; OP_VAR: the variable index */
	int32_t col; /* 1-based column of the token, for messages */
	uint8_t kind;
};

/* Longest piece of expression text quoted in a message. */
#define QUOTE_MAX 200

struct parser {
	const char *s;
	size_t len;
	size_t pos;
	cr_expr_lookup lookup;
	void *ctx;
	struct cr_expr_op *ops; /* capacity len: every op consumes >= 1 char */
	int n_ops;
	int depth;      /* evaluation stack depth after the ops so far */
	int max_depth;
	int nest;       /* current recursion nesting */
	int max_var;
	struct cr_err *err;
};

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_ident0(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident(int c) { return is_ident0(c) || is_digit(c); }

static int quote_len(size_t len) { return len > QUOTE_MAX ? QUOTE_MAX : (int)len; }

/* Records "WHAT at column N in 'TEXT'" (first error wins). */
__attribute__((format(printf, 3, 4)))
static enum cr_status fail(struct parser *p, size_t at, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return cr_errf(p->err, CR_EINPUT, "%s at column %zu in '%.*s%s'", what, at + 1,
	               quote_len(p->len), p->s, p->len > QUOTE_MAX ? "..." : "");
}

static void skip_blanks(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
		p->pos++;
}

/* Next non-blank character, or -1 at the end. */
static int peek(struct parser *p)
{
	skip_blanks(p);
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

/* Describes what stands at p->pos, for "unexpected ..." messages. */
static enum cr_status fail_unexpected(struct parser *p, const char *context)
{
	int c = peek(p);

	if (c < 0)
		return fail(p, p->pos, "unexpected end of expression%s", context);
	if (c > ' ' && c < 127)
		return fail(p, p->pos, "unexpected '%c'%s", c, context);
	return fail(p, p->pos, "unexpected byte 0x%02x%s", c, context);
}

static enum cr_status emit(struct parser *p, enum op_kind k, int64_t v, size_t at)
{
	int pops = 0, pushes = 1;

	if ((size_t)p->n_ops >= p->len)
		return cr_errf(p->err, CR_EINTERNAL, "expression program overflow");
	if (k >= OP_ADD)
		pops = 2;
	else if (k == OP_NEG)
		pops = 1;
	p->depth += pushes - pops;
	if (p->depth > p->max_depth)
		p->max_depth = p->depth;
	if (p->max_depth > CR_EXPR_MAX_STACK)
		return fail(p, at, "expression too complex (needs more than %d stack slots)",
		            CR_EXPR_MAX_STACK);
	p->ops[p->n_ops].v = v;
	p->ops[p->n_ops].col = (int32_t)(at + 1);
	p->ops[p->n_ops].kind = (uint8_t)k;
	p->n_ops++;
	return CR_OK;
}

static enum cr_status parse_expr(struct parser *p);

static enum cr_status enter(struct parser *p)
{
	if (++p->nest > CR_EXPR_MAX_NEST)
		return fail(p, p->pos, "expression nested more than %d deep", CR_EXPR_MAX_NEST);
	return CR_OK;
}

/* Decimal literal at p->pos; negative when it directly follows a unary minus
 * (so that INT64_MIN can be written). */
static enum cr_status parse_number(struct parser *p, bool negative, size_t at)
{
	uint64_t limit = negative ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
	uint64_t v = 0;
	size_t start = p->pos;

	while (p->pos < p->len && is_digit((unsigned char)p->s[p->pos])) {
		unsigned d = (unsigned)(p->s[p->pos] - '0');
		if (v > (limit - d) / 10)
			return fail(p, start, "integer literal out of range");
		v = v * 10 + d;
		p->pos++;
	}
	if (p->pos < p->len && (is_ident(p->s[p->pos]) || p->s[p->pos] == '.'))
		return fail(p, start, "malformed integer literal");
	/* -(2^63) is INT64_MIN; negate in unsigned to avoid overflow. */
	return emit(p, OP_CONST, negative ? (int64_t)(0u - v) : (int64_t)v, at);
}

static enum cr_status parse_call(struct parser *p, enum op_kind k, const char *fn,
                                 size_t at)
{
	enum cr_status st;

	p->pos++; /* '(' */
	if ((st = parse_expr(p)))
		return st;
	if (peek(p) != ',') {
		if (peek(p) == ')')
			return fail(p, at, "'%s' takes 2 arguments, got 1", fn);
		return fail_unexpected(p, ", expected ','");
	}
	p->pos++;
	if ((st = parse_expr(p)))
		return st;
	if (peek(p) != ')') {
		if (peek(p) == ',')
			return fail(p, at, "'%s' takes 2 arguments, got more", fn);
		return fail_unexpected(p, ", expected ')'");
	}
	p->pos++;
	return emit(p, k, 0, at);
}

static enum cr_status parse_name(struct parser *p)
{
	static const struct { const char *name; enum op_kind k; } fns[] = {
		{ "cdiv", OP_CDIV }, { "min", OP_MIN }, { "max", OP_MAX },
	};
	size_t at = p->pos, n;
	const char *name = p->s + at;
	int idx;

	while (p->pos < p->len && is_ident((unsigned char)p->s[p->pos]))
		p->pos++;
	n = p->pos - at;
	if (peek(p) == '(') {
		for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
			if (strlen(fns[i].name) == n && memcmp(fns[i].name, name, n) == 0)
				return parse_call(p, fns[i].k, fns[i].name, at);
		return fail(p, at, "unknown function '%.*s'", quote_len(n), name);
	}
	idx = p->lookup ? p->lookup(p->ctx, name, n) : -1;
	if (idx < 0)
		return fail(p, at, "unknown name '%.*s'", quote_len(n), name);
	if (idx + 1 > p->max_var)
		p->max_var = idx + 1;
	return emit(p, OP_VAR, idx, at);
}

static enum cr_status parse_primary(struct parser *p)
{
	enum cr_status st;
	int c = peek(p);

	if (is_digit(c))
		return parse_number(p, false, p->pos);
	if (is_ident0(c))
		return parse_name(p);
	if (c == '(') {
		size_t open = p->pos++;
		if ((st = parse_expr(p)))
			return st;
		if (peek(p) != ')')
			return peek(p) < 0
				? fail(p, p->pos, "expected ')' (to close '(' at column %zu)", open + 1)
				: fail_unexpected(p, ", expected ')'");
		p->pos++;
		return CR_OK;
	}
	return fail_unexpected(p, ", expected a number, a name or '('");
}

static enum cr_status parse_unary(struct parser *p)
{
	enum cr_status st;
	size_t at;

	if (peek(p) != '-')
		return parse_primary(p);
	at = p->pos++;
	if ((st = enter(p)))
		return st;
	if (is_digit(peek(p)))
		st = parse_number(p, true, at);
	else if (!(st = parse_unary(p)))
		st = emit(p, OP_NEG, 0, at);
	p->nest--;
	return st;
}

static enum cr_status parse_term(struct parser *p)
{
	enum cr_status st;
	int c;

	if ((st = parse_unary(p)))
		return st;
	while ((c = peek(p)) == '*' || c == '/' || c == '%') {
		size_t at = p->pos++;
		if ((st = parse_unary(p)))
			return st;
		if ((st = emit(p, c == '*' ? OP_MUL : c == '/' ? OP_DIV : OP_MOD, 0, at)))
			return st;
	}
	return CR_OK;
}

static enum cr_status parse_expr(struct parser *p)
{
	enum cr_status st;
	int c;

	if ((st = enter(p)))
		return st;
	if ((st = parse_term(p)))
		return st;
	while ((c = peek(p)) == '+' || c == '-') {
		size_t at = p->pos++;
		if ((st = parse_term(p)))
			return st;
		if ((st = emit(p, c == '+' ? OP_ADD : OP_SUB, 0, at)))
			return st;
	}
	p->nest--;
	return CR_OK;
}

enum cr_status cr_expr_compile(struct cr_expr *e, const char *text, size_t len,
                               cr_expr_lookup lookup, void *ctx,
                               struct cr_err *err)
{
	struct parser p = { .s = text, .len = len, .lookup = lookup, .ctx = ctx, .err = err };
	enum cr_status st;
	char *block;

	memset(e, 0, sizeof *e);
	if (len > (size_t)INT32_MAX - 1)
		return cr_errf(err, CR_EINPUT, "expression too long (%zu bytes)", len);
	if (peek(&p) < 0)
		return fail(&p, 0, "empty expression");
	p.pos = 0;
	block = malloc(len * sizeof(struct cr_expr_op) + len + 1);
	if (!block)
		return cr_errf(err, CR_ENOMEM, "out of memory compiling an expression");
	p.ops = (struct cr_expr_op *)(void *)block;
	st = parse_expr(&p);
	if (!st && peek(&p) >= 0)
		st = fail_unexpected(&p, " after expression");
	if (st) {
		free(block);
		return st;
	}
	e->ops = p.ops;
	e->n_ops = p.n_ops;
	e->n_vars_used = p.max_var;
	e->text = block + len * sizeof(struct cr_expr_op);
	memcpy(e->text, text, len);
	e->text[len] = '\0';
	return CR_OK;
}

static enum cr_status eval_fail(const struct cr_expr *e, const struct cr_expr_op *op,
                                struct cr_err *err, const char *what)
{
	size_t len = strlen(e->text);

	return cr_errf(err, CR_EINPUT, "%s at column %d in '%.*s%s'", what, (int)op->col,
	               quote_len(len), e->text, len > QUOTE_MAX ? "..." : "");
}

enum cr_status cr_expr_eval(const struct cr_expr *e, const int64_t *vars,
                            int64_t *out, struct cr_err *err)
{
	int64_t stack[CR_EXPR_MAX_STACK];
	int sp = 0;

	if (!e || e->n_ops <= 0 || (e->n_vars_used > 0 && !vars))
		return cr_errf(err, CR_EINTERNAL, "evaluating an empty expression or without variables");
	for (int i = 0; i < e->n_ops; i++) {
		const struct cr_expr_op *op = &e->ops[i];
		int64_t a, b, r = 0;

		switch ((enum op_kind)op->kind) {
		case OP_CONST: stack[sp++] = op->v; continue;
		case OP_VAR: stack[sp++] = vars[op->v]; continue;
		case OP_NEG:
			if (stack[sp - 1] == INT64_MIN)
				return eval_fail(e, op, err, "integer overflow");
			stack[sp - 1] = -stack[sp - 1];
			continue;
		default:
			break;
		}
		b = stack[--sp];
		a = stack[sp - 1];
		switch ((enum op_kind)op->kind) {
		case OP_ADD:
			if (__builtin_add_overflow(a, b, &r))
				return eval_fail(e, op, err, "integer overflow");
			break;
		case OP_SUB:
			if (__builtin_sub_overflow(a, b, &r))
				return eval_fail(e, op, err, "integer overflow");
			break;
		case OP_MUL:
			if (__builtin_mul_overflow(a, b, &r))
				return eval_fail(e, op, err, "integer overflow");
			break;
		case OP_DIV:
		case OP_MOD:
		case OP_CDIV:
			if (b == 0)
				return eval_fail(e, op, err, op->kind == OP_MOD ? "modulo by zero"
				                                                : "division by zero");
			if (a == INT64_MIN && b == -1)
				return eval_fail(e, op, err, "integer overflow");
			if (op->kind == OP_DIV) {
				r = a / b;
			} else if (op->kind == OP_MOD) {
				r = a % b;
			} else {
				/* ceiling: bump the truncated quotient when the exact
				 * quotient is positive and inexact (a%b, b same sign). */
				r = a / b;
				if (a % b != 0 && ((a % b > 0) == (b > 0)))
					r++;
			}
			break;
		case OP_MIN: r = a < b ? a : b; break;
		case OP_MAX: r = a > b ? a : b; break;
		default:
			return cr_errf(err, CR_EINTERNAL, "bad expression opcode %d", op->kind);
		}
		stack[sp - 1] = r;
	}
	if (sp != 1)
		return cr_errf(err, CR_EINTERNAL, "expression stack depth %d at end", sp);
	*out = stack[0];
	return CR_OK;
}

bool cr_expr_is_const(const struct cr_expr *e)
{
	return e->n_ops > 0 && e->n_vars_used == 0;
}

void cr_expr_release(struct cr_expr *e)
{
	if (!e)
		return;
	free(e->ops);
	memset(e, 0, sizeof *e);
}

static int accept_any(void *ctx, const char *name, size_t len)
{
	(void)ctx; (void)name; (void)len;
	return 0;
}

enum cr_status cr_expr_check(const char *text, size_t len, struct cr_err *err)
{
	struct cr_expr e;
	enum cr_status st = cr_expr_compile(&e, text, len, accept_any, NULL, err);

	cr_expr_release(&e);
	return st;
}
