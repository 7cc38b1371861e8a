/* cand.c — parser of a candidate's directive lines (cand.h). Works on spans
 * of the source text (no copies of lines), so only the fields it fills limit
 * lengths, and each limit is an error, never a truncation. */
#include "cand/cand.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cand/expr.h"
#include "common/sha256.h"

struct span {
	const char *p;
	size_t n;
};

struct parse {
	const char *path;
	int line;
	const char *what;   /* directive being parsed, "@forward", for messages */
	int cpu_line;       /* first CPU-form launch, 0 if none */
	int cuda_line;      /* first CUDA-form launch, 0 if none */
	struct cr_cand *c;
	struct cr_err *err;
};

static const char *const dtypes[] = { "f32", "f16", "bf16", "i32", "i64", "u8" };

static bool is_blank(int c) { return c == ' ' || c == '\t'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_ident0(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident(int c) { return is_ident0(c) || is_digit(c); }

/* Longest piece of candidate text quoted in a message. */
#define QUOTE_MAX 80
static int qlen(size_t n) { return n > QUOTE_MAX ? QUOTE_MAX : (int)n; }

/* "PATH:LINE: @directive: what" (the directive part when one is set). */
__attribute__((format(printf, 2, 3)))
static enum cr_status fail(struct parse *x, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return cr_errf(x->err, CR_EINPUT, "%s:%d: %s%s%s", x->path, x->line,
	               x->what ? x->what : "", x->what ? ": " : "", what);
}

static struct span trim(struct span s)
{
	while (s.n && is_blank((unsigned char)s.p[0]))
		s.p++, s.n--;
	while (s.n && is_blank((unsigned char)s.p[s.n - 1]))
		s.n--;
	return s;
}

static bool span_is(struct span s, const char *lit)
{
	return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

static bool is_identifier(struct span s)
{
	if (!s.n || !is_ident0((unsigned char)s.p[0]))
		return false;
	for (size_t i = 1; i < s.n; i++)
		if (!is_ident((unsigned char)s.p[i]))
			return false;
	return true;
}

/* Length of the identifier at the start of s (0 if none). */
static size_t ident_len(struct span s)
{
	size_t i = 0;

	if (!s.n || !is_ident0((unsigned char)s.p[0]))
		return 0;
	while (i < s.n && is_ident((unsigned char)s.p[i]))
		i++;
	return i;
}

/* Copies s into dst[cap] or fails naming `label` when it does not fit. */
static enum cr_status copy_field(struct parse *x, char *dst, size_t cap, struct span s,
                                 const char *label)
{
	if (s.n >= cap)
		return fail(x, "%s too long (%zu bytes, max %zu): '%.*s...'", label, s.n,
		            cap - 1, qlen(s.n), s.p);
	memcpy(dst, s.p, s.n);
	dst[s.n] = '\0';
	return CR_OK;
}

/* Syntax-checks the expression s and copies it into dst[CR_CAND_EXPR]. */
static enum cr_status take_expr(struct parse *x, char *dst, struct span s,
                                const char *label)
{
	struct cr_err e;
	enum cr_status st;

	s = trim(s);
	if (!s.n)
		return fail(x, "empty %s", label);
	if ((st = copy_field(x, dst, CR_CAND_EXPR, s, label)))
		return st;
	cr_err_init(&e);
	if ((st = cr_expr_check(s.p, s.n, &e)))
		return fail(x, "%s: %s", label, e.msg);
	return CR_OK;
}

/* Index of the ')' matching the '(' at s.p[open], or s.n if unbalanced. */
static size_t match_paren(struct span s, size_t open)
{
	int depth = 0;

	for (size_t i = open; i < s.n; i++) {
		if (s.p[i] == '(')
			depth++;
		else if (s.p[i] == ')' && --depth == 0)
			return i;
	}
	return s.n;
}

static bool balanced(struct span s)
{
	int depth = 0;

	for (size_t i = 0; i < s.n; i++) {
		if (s.p[i] == '(')
			depth++;
		else if (s.p[i] == ')' && --depth < 0)
			return false;
	}
	return depth == 0;
}

/* Splits s at commas outside parentheses into out[max]; *n gets the number
 * of pieces, which may exceed max (the caller reports it). */
static void split_commas(struct span s, struct span *out, int max, int *n)
{
	int depth = 0, k = 0;
	size_t start = 0;

	for (size_t i = 0; i <= s.n; i++) {
		if (i < s.n && s.p[i] == '(') {
			depth++;
		} else if (i < s.n && s.p[i] == ')') {
			depth--;
		} else if (i == s.n || (s.p[i] == ',' && depth == 0)) {
			if (k < max)
				out[k] = (struct span){ s.p + start, i - start };
			k++;
			start = i + 1;
		}
	}
	*n = k;
}

/* grid or block: one expression, or "(e1, e2[, e3])". */
static enum cr_status parse_dim3(struct parse *x, struct span s, char dst[3][CR_CAND_EXPR],
                                 int *n, const char *label)
{
	struct span parts[3];
	enum cr_status st;
	int k;

	s = trim(s);
	*n = 1;
	if (!s.n || s.p[0] != '(' || match_paren(s, 0) != s.n - 1)
		return take_expr(x, dst[0], s, label);
	split_commas((struct span){ s.p + 1, s.n - 2 }, parts, 3, &k);
	if (k == 1)
		return take_expr(x, dst[0], s, label);
	if (k > 3)
		return fail(x, "%s has %d dimensions, at most 3", label, k);
	for (int i = 0; i < k; i++)
		if ((st = take_expr(x, dst[i], parts[i], label)))
			return st;
	*n = k;
	return CR_OK;
}

/* A floating literal: [+-] (d+[.d*] | .d+) [(e|E)[+-]d+] [f|F], with a '.'
 * or an exponent (else it is an integer expression). */
static bool looks_float(struct span s)
{
	size_t i = 0, mant = 0;
	bool point = false, expo = false;

	if (i < s.n && (s.p[i] == '-' || s.p[i] == '+'))
		i++;
	for (; i < s.n && is_digit((unsigned char)s.p[i]); i++)
		mant++;
	if (i < s.n && s.p[i] == '.') {
		point = true;
		for (i++; i < s.n && is_digit((unsigned char)s.p[i]); i++)
			mant++;
	}
	if (!mant)
		return false;
	if (i < s.n && (s.p[i] == 'e' || s.p[i] == 'E')) {
		size_t digits = 0;
		expo = true;
		i++;
		if (i < s.n && (s.p[i] == '-' || s.p[i] == '+'))
			i++;
		for (; i < s.n && is_digit((unsigned char)s.p[i]); i++)
			digits++;
		if (!digits)
			return false;
	}
	if (i < s.n && (s.p[i] == 'f' || s.p[i] == 'F') && (point || expo))
		i++;
	return i == s.n && (point || expo);
}

static enum cr_status parse_arg(struct parse *x, struct cr_arg *a, struct span s, int idx)
{
	char label[32];
	enum cr_status st;

	snprintf(label, sizeof label, "argument %d", idx + 1);
	s = trim(s);
	if (!s.n)
		return fail(x, "empty %s", label);
	if (is_identifier(s)) {
		a->kind = CR_ARG_NAME;
		if ((st = copy_field(x, a->name, sizeof a->name, s, label)))
			return st;
		memcpy(a->text, a->name, s.n + 1);
		return CR_OK;
	}
	if (looks_float(s)) {
		a->kind = CR_ARG_FLOAT;
		if ((st = copy_field(x, a->text, sizeof a->text, s, label)))
			return st;
		a->fval = strtod(a->text, NULL);
		if (isinf(a->fval))
			return fail(x, "%s: floating literal out of range: '%s'", label, a->text);
		return CR_OK;
	}
	a->kind = CR_ARG_EXPR;
	return take_expr(x, a->text, s, label);
}

/* Fills l->args (allocated here; freed here on failure). */
static enum cr_status parse_args(struct parse *x, struct cr_launch *l, struct span s)
{
	struct span *parts = NULL;
	enum cr_status st = CR_OK;
	int k;

	l->n_args = 0;
	if (!trim(s).n)
		return CR_OK;
	split_commas(s, NULL, 0, &k);
	if (k > CR_CAND_MAX_ARGS)
		return fail(x, "%d arguments, at most %d", k, CR_CAND_MAX_ARGS);
	parts = malloc(sizeof *parts * (size_t)k);
	l->args = calloc((size_t)k, sizeof *l->args);
	if (!parts || !l->args) {
		st = cr_errf(x->err, CR_ENOMEM, "%s:%d: out of memory", x->path, x->line);
		goto out;
	}
	split_commas(s, parts, k, &k);
	for (int i = 0; i < k && !st; i++)
		st = parse_arg(x, &l->args[i], parts[i], i);
	if (!st)
		l->n_args = k;
out:
	free(parts);
	if (st) {
		free(l->args);
		l->args = NULL;
	}
	return st;
}

static size_t find(struct span s, size_t from, const char *needle)
{
	size_t m = strlen(needle);

	for (size_t i = from; i + m <= s.n; i++)
		if (memcmp(s.p + i, needle, m) == 0)
			return i;
	return s.n;
}

/* "<<<grid, block[, smem]>>>" starting at s.p[*pos]; *pos moves past ">>>". */
static enum cr_status parse_config(struct parse *x, struct cr_launch *l, struct span s,
                                   size_t *pos)
{
	size_t end = find(s, *pos + 3, ">>>");
	struct span cfg, parts[3];
	enum cr_status st;
	int k;

	if (end == s.n)
		return fail(x, "expected '>>>' after launch configuration");
	cfg = (struct span){ s.p + *pos + 3, end - *pos - 3 };
	if (!balanced(cfg))
		return fail(x, "unbalanced parentheses in launch configuration '%.*s'",
		            qlen(cfg.n), cfg.p);
	split_commas(cfg, parts, 3, &k);
	if (k < 2)
		return fail(x, "launch configuration needs a grid and a block");
	if (k > 3)
		return fail(x, "launch configuration has %d items, at most 3 "
		            "(grid, block, shared memory bytes)", k);
	if ((st = parse_dim3(x, parts[0], l->grid, &l->n_grid, "grid")) ||
	    (st = parse_dim3(x, parts[1], l->block, &l->n_block, "block")))
		return st;
	if (k == 3) {
		l->has_smem = true;
		if ((st = take_expr(x, l->smem, parts[2], "shared memory size")))
			return st;
	}
	*pos = end + 3;
	return CR_OK;
}

static enum cr_status check_form(struct parse *x, bool cuda)
{
	int other = cuda ? x->cpu_line : x->cuda_line;

	if (other)
		return fail(x, "mixed CPU and CUDA launch forms (line %d uses the %s form)",
		            other, cuda ? "CPU" : "CUDA");
	if (cuda && !x->cuda_line)
		x->cuda_line = x->line;
	if (!cuda && !x->cpu_line)
		x->cpu_line = x->line;
	x->c->cuda = cuda;
	return CR_OK;
}

static enum cr_status parse_launch(struct parse *x, struct span s, bool backward)
{
	struct cr_launch **arr = backward ? &x->c->bwd : &x->c->fwd;
	int *n = backward ? &x->c->n_bwd : &x->c->n_fwd;
	struct cr_launch *l;
	enum cr_status st;
	size_t pos, close, len;

	if (*n >= CR_CAND_MAX_LAUNCHES)
		return fail(x, "more than %d launches", CR_CAND_MAX_LAUNCHES);
	/* Grow in powers of two: *n is a power of two exactly when full. */
	if ((*n & (*n - 1)) == 0) {
		size_t cap = *n ? (size_t)*n * 2 : 1;
		void *p = realloc(*arr, cap * sizeof **arr);
		if (!p)
			return cr_errf(x->err, CR_ENOMEM, "%s:%d: out of memory", x->path, x->line);
		*arr = p;
	}
	l = &(*arr)[*n];
	memset(l, 0, sizeof *l);
	l->line = x->line;

	s = trim(s);
	if (!(len = ident_len(s)))
		return fail(x, "expected a kernel or function name, got '%.*s'", qlen(s.n), s.p);
	if ((st = copy_field(x, l->fn, sizeof l->fn, (struct span){ s.p, len }, "name")))
		return st;
	for (pos = len; pos < s.n && is_blank((unsigned char)s.p[pos]); pos++)
		;
	l->cuda = pos + 3 <= s.n && memcmp(s.p + pos, "<<<", 3) == 0;
	if (l->cuda) {
		if ((st = parse_config(x, l, s, &pos)))
			return st;
		while (pos < s.n && is_blank((unsigned char)s.p[pos]))
			pos++;
	}
	if (pos == s.n || s.p[pos] != '(')
		return fail(x, l->cuda ? "expected '(' after '>>>'"
		                       : "expected '<<<' or '(' after '%s'", l->fn);
	close = match_paren(s, pos);
	if (close == s.n)
		return fail(x, "expected ')' to close the argument list");
	if (close + 1 != s.n)
		return fail(x, "unexpected text after the launch: '%.*s'",
		            qlen(s.n - close - 1), s.p + close + 1);
	if ((st = parse_args(x, l, (struct span){ s.p + pos + 1, close - pos - 1 })))
		return st;
	if ((st = check_form(x, l->cuda))) {
		free(l->args);
		l->args = NULL;
		return st;
	}
	(*n)++;
	return CR_OK;
}

static enum cr_status parse_task(struct parse *x, struct span s)
{
	struct cr_cand *c = x->c;

	s = trim(s);
	if (c->task_line) {
		x->what = NULL;
		return fail(x, "duplicate @task (first at line %d)", c->task_line);
	}
	if (!s.n)
		return fail(x, "expected a task name");
	for (size_t i = 0; i < s.n; i++) {
		int ch = (unsigned char)s.p[i];
		if (is_blank(ch))
			return fail(x, "unexpected text after the task name: '%.*s'",
			            qlen(s.n - i), s.p + i);
		if (!is_ident(ch) && ch != '/' && ch != '.' && ch != '-')
			return fail(x, "invalid character in task name '%.*s'", qlen(s.n), s.p);
	}
	if (copy_field(x, c->task, sizeof c->task, s, "task name"))
		return CR_EINPUT;
	c->task_line = x->line;
	return CR_OK;
}

static enum cr_status parse_scratch(struct parse *x, struct span s)
{
	struct cr_cand *c = x->c;
	struct cr_scratch *sc;
	struct span name, dtype, count;
	size_t n, close;
	enum cr_status st;
	bool known = false;

	if (c->n_scratch >= CR_CAND_MAX_SCRATCH)
		return fail(x, "more than %d scratch buffers", CR_CAND_MAX_SCRATCH);
	if ((c->n_scratch & (c->n_scratch - 1)) == 0) {
		size_t cap = c->n_scratch ? (size_t)c->n_scratch * 2 : 1;
		void *p = realloc(c->scratch, cap * sizeof *c->scratch);
		if (!p)
			return cr_errf(x->err, CR_ENOMEM, "%s:%d: out of memory", x->path, x->line);
		c->scratch = p;
	}
	sc = &c->scratch[c->n_scratch];
	memset(sc, 0, sizeof *sc);
	sc->line = x->line;

	s = trim(s);
	if (!(n = ident_len(s)))
		return fail(x, "expected NAME DTYPE[COUNT], got '%.*s'", qlen(s.n), s.p);
	name = (struct span){ s.p, n };
	s = (struct span){ s.p + n, s.n - n };
	if (!s.n || !is_blank((unsigned char)s.p[0]))
		return fail(x, "expected a blank and a dtype after the name");
	s = trim(s);
	if (!(n = ident_len(s)))
		return fail(x, "expected a dtype after the name");
	dtype = (struct span){ s.p, n };
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		known = known || span_is(dtype, dtypes[i]);
	if (!known)
		return fail(x, "unknown dtype '%.*s' (one of f32 f16 bf16 i32 i64 u8)",
		            qlen(dtype.n), dtype.p);
	s = trim((struct span){ s.p + n, s.n - n });
	if (!s.n || s.p[0] != '[')
		return fail(x, "expected '[' after the dtype");
	close = find(s, 1, "]");
	if (close == s.n)
		return fail(x, "expected ']' after the element count");
	count = (struct span){ s.p + 1, close - 1 };
	if (close + 1 != s.n)
		return fail(x, "unexpected text after ']': '%.*s'", qlen(s.n - close - 1),
		            s.p + close + 1);
	if ((st = copy_field(x, sc->name, sizeof sc->name, name, "name")))
		return st;
	for (int i = 0; i < c->n_scratch; i++)
		if (strcmp(c->scratch[i].name, sc->name) == 0)
			return fail(x, "duplicate scratch name '%s' (first at line %d)", sc->name,
			            c->scratch[i].line);
	memcpy(sc->dtype, dtype.p, dtype.n);
	sc->dtype[dtype.n] = '\0';
	if ((st = take_expr(x, sc->count, count, "element count")))
		return st;
	c->n_scratch++;
	return CR_OK;
}

/* One source line (without its '\n'); ignores everything but directives. */
static enum cr_status parse_line(struct parse *x, struct span s)
{
	struct span word, rest;
	size_t i = 0, n;

	while (i < s.n && is_blank((unsigned char)s.p[i]))
		i++;
	if (s.n - i < 2 || s.p[i] != '/' || s.p[i + 1] != '/')
		return CR_OK;
	for (i += 2; i < s.n && is_blank((unsigned char)s.p[i]); i++)
		;
	if (i == s.n || s.p[i] != '@')
		return CR_OK;
	if (s.n > CR_CAND_MAX_LINE)
		return fail(x, "directive line too long (%zu bytes, max %d)", s.n,
		            CR_CAND_MAX_LINE);
	if (s.n && s.p[s.n - 1] == '\r')
		s.n--;
	rest = (struct span){ s.p + i + 1, s.n - i - 1 };
	if (!(n = ident_len(rest)))
		return fail(x, "expected a directive name after '@'");
	word = (struct span){ rest.p, n };
	rest = (struct span){ rest.p + n, rest.n - n };
	if (rest.n && !is_blank((unsigned char)rest.p[0]))
		return fail(x, "expected a blank after '@%.*s'", qlen(word.n), word.p);
	if (span_is(word, "task")) {
		x->what = "@task";
		return parse_task(x, rest);
	}
	if (span_is(word, "forward") || span_is(word, "backward")) {
		x->what = word.p[0] == 'f' ? "@forward" : "@backward";
		return parse_launch(x, rest, word.p[0] == 'b');
	}
	if (span_is(word, "scratch")) {
		x->what = "@scratch";
		return parse_scratch(x, rest);
	}
	return fail(x, "unknown directive '@%.*s'", qlen(word.n), word.p);
}

enum cr_status cr_cand_parse(struct cr_cand *c, const char *path, const char *src,
                             size_t len, struct cr_err *err)
{
	struct parse x = { .path = path ? path : "<candidate>", .c = c, .err = err };
	enum cr_status st = CR_OK;
	size_t start = 0;

	memset(c, 0, sizeof *c);
	while (start < len) {
		const char *nl = memchr(src + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - src) : len;

		x.line++;
		x.what = NULL;
		if ((st = parse_line(&x, (struct span){ src + start, end - start })))
			goto out;
		start = end + 1;
	}
	x.what = NULL;
	if (!c->task_line) {
		x.line = 1;
		st = fail(&x, "no @task line");
	} else if (!c->n_fwd) {
		x.line = c->task_line;
		st = fail(&x, "no @forward line");
	}
out:
	if (st)
		cr_cand_release(c);
	return st;
}

void cr_cand_release(struct cr_cand *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n_fwd; i++)
		free(c->fwd[i].args);
	for (int i = 0; i < c->n_bwd; i++)
		free(c->bwd[i].args);
	free(c->fwd);
	free(c->bwd);
	free(c->scratch);
	memset(c, 0, sizeof *c);
}

/* The name on the first `// @task NAME` line, by the directive rule of
 * cr_cand_parse, without parsing anything else. */
static void scan_task(const char *src, size_t len, char *out, size_t cap)
{
	size_t i = 0;
	out[0] = '\0';
	while (i < len) {
		size_t e = i, k, n = 0;
		while (e < len && src[e] != '\n')
			e++;
		k = i;
		while (k < e && (src[k] == ' ' || src[k] == '\t'))
			k++;
		if (e - k > 2 && src[k] == '/' && src[k + 1] == '/') {
			k += 2;
			while (k < e && (src[k] == ' ' || src[k] == '\t'))
				k++;
			if (e - k > 5 && !strncmp(src + k, "@task", 5) &&
			    (src[k + 5] == ' ' || src[k + 5] == '\t')) {
				k += 5;
				while (k < e && (src[k] == ' ' || src[k] == '\t'))
					k++;
				while (k < e && n + 1 < cap &&
				       (isalnum((unsigned char)src[k]) || strchr("_/.-", src[k])) && src[k])
					out[n++] = src[k++];
				out[n] = '\0';
				return;
			}
		}
		i = e + 1;
	}
}

void cr_cand_load(struct cr_cand_file *f, const char *path)
{
	struct cr_err e;

	memset(f, 0, sizeof *f);
	f->path = path;
	/* a candidate is data: never through a link, never a FIFO (SPEC §3) */
	cr_err_init(&e);
	f->src = cr_read_data(NULL, path, CR_CAND_MAX_FILE, 0, &f->len, &e);
	if (!f->src) {
		snprintf(f->error, sizeof f->error, "%s", e.msg);
		return;
	}
	cr_sha256_hex(f->src, f->len, f->sha256);
	cr_err_init(&e);
	if (cr_cand_parse(&f->cand, path, f->src, f->len, &e)) {
		snprintf(f->error, sizeof f->error, "%s", e.msg[0] ? e.msg : "no @task line");
		scan_task(f->src, f->len, f->task_hint, sizeof f->task_hint);
		return;
	}
	f->parsed = true;
	snprintf(f->task_hint, sizeof f->task_hint, "%s", f->cand.task);
}

void cr_cand_file_release(struct cr_cand_file *f)
{
	cr_cand_release(&f->cand);
	free(f->src);
	memset(f, 0, sizeof *f);
}
