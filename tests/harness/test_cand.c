/* test_cand.c — cand/cand.c: the SPEC §3 example, both launch forms,
 * arguments, scratch, every error message with its line, limits, and a
 * fuzz pass (random bytes, truncations, mutations) that must never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cand/cand.h"

static const char spec_example[] =
	"// @task L1/softmax\n"
	"// @scratch rowmax f32[B]\n"
	"// @forward row_max<<<B, 256>>>(x, rowmax, B, D)\n"
	"// @forward softmax_rows<<<(cdiv(D, 256), B), 256, 1024>>>(x, rowmax, y, B, D)\n"
	"// @backward softmax_bwd<<<B, 256>>>(y, dy, dx, B, D)\n"
	"extern \"C\" __global__ void row_max(const float* x, float* m, int B, int D) { }\n";

static void parse_ok(struct cr_cand *c, const char *path, const char *src)
{
	struct cr_err err;

	cr_err_init(&err);
	if (cr_cand_parse(c, path, src, strlen(src), &err) != CR_OK)
		fail_msg("parse failed: %s", err.msg);
	assert_int_equal(err.status, CR_OK);
}

/* Expects src to be rejected with exactly msg, and c left empty. */
static void parse_fails(const char *src, const char *msg)
{
	struct cr_cand c;
	struct cr_err err;

	cr_err_init(&err);
	assert_int_equal(cr_cand_parse(&c, "cand.cu", src, strlen(src), &err), CR_EINPUT);
	assert_string_equal(err.msg, msg);
	assert_null(c.fwd);
	assert_null(c.bwd);
	assert_null(c.scratch);
	assert_int_equal(c.task_line, 0);
	cr_cand_release(&c);
}

static void assert_arg(const struct cr_arg *a, enum cr_arg_kind kind, const char *text)
{
	assert_int_equal(a->kind, kind);
	assert_string_equal(a->text, text);
	if (kind == CR_ARG_NAME)
		assert_string_equal(a->name, text);
}

static void test_spec_example(void **state)
{
	struct cr_cand c;
	const struct cr_launch *l;

	(void)state;
	parse_ok(&c, "softmax.cu", spec_example);
	assert_string_equal(c.task, "L1/softmax");
	assert_int_equal(c.task_line, 1);
	assert_true(c.cuda);

	assert_int_equal(c.n_scratch, 1);
	assert_int_equal(c.scratch[0].line, 2);
	assert_string_equal(c.scratch[0].name, "rowmax");
	assert_string_equal(c.scratch[0].dtype, "f32");
	assert_string_equal(c.scratch[0].count, "B");

	assert_int_equal(c.n_fwd, 2);
	l = &c.fwd[0];
	assert_int_equal(l->line, 3);
	assert_string_equal(l->fn, "row_max");
	assert_true(l->cuda);
	assert_int_equal(l->n_grid, 1);
	assert_string_equal(l->grid[0], "B");
	assert_int_equal(l->n_block, 1);
	assert_string_equal(l->block[0], "256");
	assert_false(l->has_smem);
	assert_int_equal(l->n_args, 4);
	assert_arg(&l->args[0], CR_ARG_NAME, "x");
	assert_arg(&l->args[1], CR_ARG_NAME, "rowmax");
	assert_arg(&l->args[2], CR_ARG_NAME, "B");
	assert_arg(&l->args[3], CR_ARG_NAME, "D");

	l = &c.fwd[1];
	assert_int_equal(l->line, 4);
	assert_string_equal(l->fn, "softmax_rows");
	assert_int_equal(l->n_grid, 2);
	assert_string_equal(l->grid[0], "cdiv(D, 256)");
	assert_string_equal(l->grid[1], "B");
	assert_int_equal(l->n_block, 1);
	assert_string_equal(l->block[0], "256");
	assert_true(l->has_smem);
	assert_string_equal(l->smem, "1024");
	assert_int_equal(l->n_args, 5);
	assert_arg(&l->args[2], CR_ARG_NAME, "y");

	assert_int_equal(c.n_bwd, 1);
	l = &c.bwd[0];
	assert_int_equal(l->line, 5);
	assert_string_equal(l->fn, "softmax_bwd");
	assert_int_equal(l->n_args, 5);
	assert_arg(&l->args[1], CR_ARG_NAME, "dy");
	assert_arg(&l->args[2], CR_ARG_NAME, "dx");
	cr_cand_release(&c);
	assert_null(c.fwd);
	cr_cand_release(&c);
}

static void test_cpu_form(void **state)
{
	static const char src[] =
		"#include <math.h>\n"
		"/* a block comment\n"
		"   text // @notadirective: only a directive at the start of a line */\n"
		"   //@task smoke/layernorm   \r\n"
		"\t//\t@forward   ln_fwd ( x, w, b, y, B, D, 1e-5, 0.5, -3.0f, .5, 5., 2E+3F ) \r\n"
		"int x = 3; // @ is fine after code\n"
		"// plain comment @task not a directive\n"
		"/// @task neither is this\n"
		"// @backward ln_bwd(x, w, dy, dx, dw, db, B * D, cdiv(D, 4), min(B, D), -1, 7)\n"
		"// @backward done()\n"
		"void ln_fwd(void) {}\n";
	struct cr_cand c;
	const struct cr_launch *l;

	(void)state;
	parse_ok(&c, "ln.c", src);
	assert_string_equal(c.task, "smoke/layernorm");
	assert_int_equal(c.task_line, 4);
	assert_false(c.cuda);
	assert_int_equal(c.n_scratch, 0);
	assert_null(c.scratch);

	assert_int_equal(c.n_fwd, 1);
	l = &c.fwd[0];
	assert_int_equal(l->line, 5);
	assert_string_equal(l->fn, "ln_fwd");
	assert_false(l->cuda);
	assert_int_equal(l->n_grid, 0);
	assert_int_equal(l->n_block, 0);
	assert_int_equal(l->n_args, 12);
	assert_arg(&l->args[5], CR_ARG_NAME, "D");
	assert_arg(&l->args[6], CR_ARG_FLOAT, "1e-5");
	assert_true(l->args[6].fval == 1e-5);
	assert_arg(&l->args[7], CR_ARG_FLOAT, "0.5");
	assert_true(l->args[7].fval == 0.5);
	assert_arg(&l->args[8], CR_ARG_FLOAT, "-3.0f");
	assert_true(l->args[8].fval == -3.0);
	assert_true(l->args[9].fval == 0.5);
	assert_true(l->args[10].fval == 5.0);
	assert_arg(&l->args[11], CR_ARG_FLOAT, "2E+3F");
	assert_true(l->args[11].fval == 2000.0);

	assert_int_equal(c.n_bwd, 2);
	l = &c.bwd[0];
	assert_int_equal(l->line, 9);
	assert_int_equal(l->n_args, 11);
	assert_arg(&l->args[6], CR_ARG_EXPR, "B * D");
	assert_arg(&l->args[7], CR_ARG_EXPR, "cdiv(D, 4)");
	assert_arg(&l->args[8], CR_ARG_EXPR, "min(B, D)");
	assert_arg(&l->args[9], CR_ARG_EXPR, "-1");
	assert_arg(&l->args[10], CR_ARG_EXPR, "7");
	l = &c.bwd[1];
	assert_string_equal(l->fn, "done");
	assert_int_equal(l->n_args, 0);
	cr_cand_release(&c);
}

static void test_launch_config(void **state)
{
	static const char src[] =
		"// @task smoke/matmul\n"
		"// @forward mm<<<(cdiv(N, 16), cdiv(M, 16), 1), (16, 16), 2 * 16 * 16 * 4>>>(a, b, c, M, N, K)\n"
		"// @forward k2 <<< ( B ) , (256) >>> ( )\n"
		"// @forward k3<<<(max(B, 1) + 1) * 2, min(1024, D)>>>(c)\n"
		"// @forward k4<<<1, 1, 0>>>(c)\n";
	struct cr_cand c;
	const struct cr_launch *l;

	(void)state;
	parse_ok(&c, "mm.cu", src);
	assert_int_equal(c.n_fwd, 4);
	l = &c.fwd[0];
	assert_int_equal(l->n_grid, 3);
	assert_string_equal(l->grid[0], "cdiv(N, 16)");
	assert_string_equal(l->grid[1], "cdiv(M, 16)");
	assert_string_equal(l->grid[2], "1");
	assert_int_equal(l->n_block, 2);
	assert_string_equal(l->block[0], "16");
	assert_string_equal(l->block[1], "16");
	assert_true(l->has_smem);
	assert_string_equal(l->smem, "2 * 16 * 16 * 4");
	assert_int_equal(l->n_args, 6);
	l = &c.fwd[1];
	assert_string_equal(l->fn, "k2");
	assert_int_equal(l->n_grid, 1);
	assert_string_equal(l->grid[0], "( B )");
	assert_int_equal(l->n_block, 1);
	assert_string_equal(l->block[0], "(256)");
	assert_int_equal(l->n_args, 0);
	/* parenthesised at the start but not a tuple */
	l = &c.fwd[2];
	assert_int_equal(l->n_grid, 1);
	assert_string_equal(l->grid[0], "(max(B, 1) + 1) * 2");
	assert_string_equal(l->block[0], "min(1024, D)");
	l = &c.fwd[3];
	assert_true(l->has_smem);
	assert_string_equal(l->smem, "0");
	cr_cand_release(&c);
}

static void test_scratch(void **state)
{
	static const char src[] =
		"// @task L2/fused\n"
		"// @scratch a f32[B * D]\n"
		"// @scratch b_2 bf16 [ cdiv(D, 32) ]  \n"
		"// @scratch c f16[1]\n"
		"// @scratch d i32[N]\n"
		"// @scratch e i64[N]\n"
		"// @scratch f u8[4096]\n"
		"// @forward k(a, b_2, c, d, e, f)\n";
	static const char *const dt[] = { "f32", "bf16", "f16", "i32", "i64", "u8" };
	struct cr_cand c;

	(void)state;
	parse_ok(&c, NULL, src);
	assert_int_equal(c.n_scratch, 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(c.scratch[i].line, i + 2);
		assert_string_equal(c.scratch[i].dtype, dt[i]);
	}
	assert_string_equal(c.scratch[0].count, "B * D");
	assert_string_equal(c.scratch[1].name, "b_2");
	assert_string_equal(c.scratch[1].count, "cdiv(D, 32)");
	cr_cand_release(&c);
}

/* No @task, empty file, file with only code. */
static void test_missing(void **state)
{
	struct cr_cand c;
	struct cr_err err;

	(void)state;
	parse_fails("", "cand.cu:1: no @task line");
	parse_fails("int main;\n// @forward k<<<1,1>>>()\n", "cand.cu:1: no @task line");
	parse_fails("\n\n// @task a/b\n// @backward k<<<1,1>>>()\n", "cand.cu:3: no @forward line");
	cr_err_init(&err);
	assert_int_equal(cr_cand_parse(&c, NULL, NULL, 0, &err), CR_EINPUT);
	assert_string_equal(err.msg, "<candidate>:1: no @task line");
}

static void test_errors(void **state)
{
	static const struct { const char *src, *msg; } cases[] = {
		{ "// @task a\n// @task b\n// @forward k()\n",
		  "cand.cu:2: duplicate @task (first at line 1)" },
		{ "// @task\n", "cand.cu:1: @task: expected a task name" },
		{ "// @task a b\n", "cand.cu:1: @task: unexpected text after the task name: ' b'" },
		{ "// @task a$b\n", "cand.cu:1: @task: invalid character in task name 'a$b'" },
		{ "x\n// @tasks a\n", "cand.cu:2: unknown directive '@tasks'" },
		{ "// @task a\n// @param x the input\n", "cand.cu:2: unknown directive '@param'" },
		{ "// @\n", "cand.cu:1: expected a directive name after '@'" },
		{ "// @ task a\n", "cand.cu:1: expected a directive name after '@'" },
		{ "// @task: a\n", "cand.cu:1: expected a blank after '@task'" },
		{ "// @task a\n// @forward\n",
		  "cand.cu:2: @forward: expected a kernel or function name, got ''" },
		{ "// @task a\n// @forward 3k()\n",
		  "cand.cu:2: @forward: expected a kernel or function name, got '3k()'" },
		{ "// @task a\n// @forward k\n",
		  "cand.cu:2: @forward: expected '<<<' or '(' after 'k'" },
		{ "// @task a\n// @forward k[1](x)\n",
		  "cand.cu:2: @forward: expected '<<<' or '(' after 'k'" },
		{ "// @task a\n\n// @forward k<<<B, 256>>(x)\n",
		  "cand.cu:3: @forward: expected '>>>' after launch configuration" },
		{ "// @task a\n// @forward k<<<B>>>(x)\n",
		  "cand.cu:2: @forward: launch configuration needs a grid and a block" },
		{ "// @task a\n// @forward k<<<1, 2, 3, 4>>>(x)\n",
		  "cand.cu:2: @forward: launch configuration has 4 items, at most 3 "
		  "(grid, block, shared memory bytes)" },
		{ "// @task a\n// @forward k<<<(1, 2, 3, 4), 1>>>(x)\n",
		  "cand.cu:2: @forward: grid has 4 dimensions, at most 3" },
		{ "// @task a\n// @forward k<<<1, (1, , 3)>>>(x)\n",
		  "cand.cu:2: @forward: empty block" },
		{ "// @task a\n// @forward k<<<, 1>>>(x)\n", "cand.cu:2: @forward: empty grid" },
		{ "// @task a\n// @forward k<<<1, 1, >>>(x)\n",
		  "cand.cu:2: @forward: empty shared memory size" },
		{ "// @task a\n// @forward k<<<cdiv(D, 256, B), 1>>>(x)\n",
		  "cand.cu:2: @forward: grid: 'cdiv' takes 2 arguments, got more at column 1 in "
		  "'cdiv(D, 256, B)'" },
		{ "// @task a\n// @forward k<<<cdiv(D, 256, B>>>(x)\n",
		  "cand.cu:2: @forward: unbalanced parentheses in launch configuration "
		  "'cdiv(D, 256, B'" },
		{ "// @task a\n// @forward k<<<(D + 1, 256>>>(x)\n",
		  "cand.cu:2: @forward: unbalanced parentheses in launch configuration "
		  "'(D + 1, 256'" },
		{ "// @task a\n// @forward k<<<B), (1>>>(x)\n",
		  "cand.cu:2: @forward: unbalanced parentheses in launch configuration "
		  "'B), (1'" },
		{ "// @task a\n// @forward k<<<(B, 1)), 1>>>(x)\n",
		  "cand.cu:2: @forward: unbalanced parentheses in launch configuration "
		  "'(B, 1)), 1'" },
		{ "// @task a\n// @forward k<<<(B, 1) + 1, 1>>>(x)\n",
		  "cand.cu:2: @forward: grid: unexpected ',', expected ')' at column 3 in '(B, 1) + 1'" },
		{ "// @task a\n// @forward k<<<B, 256 256>>>(x)\n",
		  "cand.cu:2: @forward: block: unexpected '2' after expression at column 5 in "
		  "'256 256'" },
		{ "// @task a\n// @forward k<<<B, 1, D * 4.0>>>(x)\n",
		  "cand.cu:2: @forward: shared memory size: malformed integer literal at column 5 in "
		  "'D * 4.0'" },
		{ "// @task a\n// @forward k<<<B, 1>>> x\n",
		  "cand.cu:2: @forward: expected '(' after '>>>'" },
		{ "// @task a\n// @forward k<<<B, 1>>>(x, y\n",
		  "cand.cu:2: @forward: expected ')' to close the argument list" },
		{ "// @task a\n// @forward k<<<B, 1>>>(x) ;\n",
		  "cand.cu:2: @forward: unexpected text after the launch: ' ;'" },
		{ "// @task a\n// @forward k(x)(y)\n",
		  "cand.cu:2: @forward: unexpected text after the launch: '(y)'" },
		{ "// @task a\n// @forward k(x,,y)\n", "cand.cu:2: @forward: empty argument 2" },
		{ "// @task a\n// @forward k(x, )\n", "cand.cu:2: @forward: empty argument 2" },
		{ "// @task a\n// @forward k(&x)\n",
		  "cand.cu:2: @forward: argument 1: unexpected '&', expected a number, a name or '(' "
		  "at column 1 in '&x'" },
		{ "// @task a\n// @forward k(\"s\")\n",
		  "cand.cu:2: @forward: argument 1: unexpected '\"', expected a number, a name or '(' "
		  "at column 1 in '\"s\"'" },
		{ "// @task a\n// @forward k(1e)\n",
		  "cand.cu:2: @forward: argument 1: malformed integer literal at column 1 in '1e'" },
		{ "// @task a\n// @forward k(0x10)\n",
		  "cand.cu:2: @forward: argument 1: malformed integer literal at column 1 in '0x10'" },
		{ "// @task a\n// @forward k(1e999)\n",
		  "cand.cu:2: @forward: argument 1: floating literal out of range: '1e999'" },
		{ "// @task a\n// @forward k(B * (D)\n",
		  "cand.cu:2: @forward: expected ')' to close the argument list" },
		{ "// @task a\n// @forward k(99999999999999999999)\n",
		  "cand.cu:2: @forward: argument 1: integer literal out of range at column 1 in "
		  "'99999999999999999999'" },
		{ "// @task a\n// @backward k(x) junk\n",
		  "cand.cu:2: @backward: unexpected text after the launch: ' junk'" },
		{ "// @task a\n// @forward k<<<1, 1>>>(x)\n// @forward h(x)\n",
		  "cand.cu:3: @forward: mixed CPU and CUDA launch forms (line 2 uses the CUDA form)" },
		{ "// @task a\n// @forward h(x)\n// @backward k<<<1, 1>>>(x)\n",
		  "cand.cu:3: @backward: mixed CPU and CUDA launch forms (line 2 uses the CPU form)" },
		{ "// @task a\n// @scratch\n",
		  "cand.cu:2: @scratch: expected NAME DTYPE[COUNT], got ''" },
		{ "// @task a\n// @scratch s\n",
		  "cand.cu:2: @scratch: expected a blank and a dtype after the name" },
		{ "// @task a\n// @scratch s[4]\n",
		  "cand.cu:2: @scratch: expected a blank and a dtype after the name" },
		{ "// @task a\n// @scratch s [4]\n",
		  "cand.cu:2: @scratch: expected a dtype after the name" },
		{ "// @task a\n\n\n\n// @scratch s f128[4]\n",
		  "cand.cu:5: @scratch: unknown dtype 'f128' (one of f32 f16 bf16 i32 i64 u8)" },
		{ "// @task a\n// @scratch s f32\n", "cand.cu:2: @scratch: expected '[' after the dtype" },
		{ "// @task a\n// @scratch s f32(4)\n",
		  "cand.cu:2: @scratch: expected '[' after the dtype" },
		{ "// @task a\n// @scratch s f32[4\n",
		  "cand.cu:2: @scratch: expected ']' after the element count" },
		{ "// @task a\n// @scratch s f32[]\n", "cand.cu:2: @scratch: empty element count" },
		{ "// @task a\n// @scratch s f32[4] x\n",
		  "cand.cu:2: @scratch: unexpected text after ']': ' x'" },
		{ "// @task a\n// @scratch s f32[4][2]\n",
		  "cand.cu:2: @scratch: unexpected text after ']': '[2]'" },
		{ "// @task a\n// @scratch s f32[B +]\n",
		  "cand.cu:2: @scratch: element count: unexpected end of expression, expected a number, "
		  "a name or '(' at column 4 in 'B +'" },
		{ "// @task a\n// @scratch s f32[4]\n// @scratch s i32[8]\n",
		  "cand.cu:3: @scratch: duplicate scratch name 's' (first at line 2)" },
		{ "// @task a\n// @forward k<<<1, 1>>>(x)\r\n// @forward k<<<1, 1>>>(x) \x01\n",
		  "cand.cu:3: @forward: unexpected text after the launch: ' \x01'" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		print_message("case %zu\n", i);
		parse_fails(cases[i].src, cases[i].msg);
	}
}

/* Builds "// @task t\n// @forward k(" + n copies of "x," + "x)\n". */
static char *many_args(int n)
{
	char *s = malloc(64 + 2 * (size_t)n);
	size_t k;

	if (!s)
		abort();   /* (not assert_non_null: gcc -fsanitize cannot see it returns only on non-NULL) */
	k = (size_t)sprintf(s, "// @task t\n// @forward k(");
	for (int i = 0; i < n; i++)
		k += (size_t)sprintf(s + k, "x,");
	sprintf(s + k, "x)\n");
	return s;
}

static void test_limits(void **state)
{
	char buf[CR_CAND_MAX_LINE + 256], *s;
	struct cr_cand c;
	struct cr_err err;
	size_t n;

	(void)state;
	/* CR_CAND_MAX_ARGS arguments fit (every buffer of the largest task's
	 * backward and its dims, on one line), one more does not */
	s = many_args(CR_CAND_MAX_ARGS - 1);
	parse_ok(&c, "a.c", s);
	assert_int_equal(c.fwd[0].n_args, CR_CAND_MAX_ARGS);
	cr_cand_release(&c);
	free(s);
	s = many_args(CR_CAND_MAX_ARGS);
	snprintf(buf, sizeof buf, "cand.cu:2: @forward: %d arguments, at most %d", CR_CAND_MAX_ARGS + 1,
		 CR_CAND_MAX_ARGS);
	parse_fails(s, buf);
	free(s);

	/* a 63-byte name fits, 64 bytes do not */
	n = (size_t)sprintf(buf, "// @task t\n// @forward ");
	memset(buf + n, 'k', 63);
	strcpy(buf + n + 63, "(x)\n");
	parse_ok(&c, "a.c", buf);
	assert_int_equal(strlen(c.fwd[0].fn), 63);
	cr_cand_release(&c);
	memset(buf + n, 'k', 64);
	strcpy(buf + n + 64, "(x)\n");
	parse_fails(buf, "cand.cu:2: @forward: name too long (64 bytes, max 63): "
	            "'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...'");
	/* an argument name too long */
	n = (size_t)sprintf(buf, "// @task t\n// @forward k(");
	memset(buf + n, 'x', 64);
	strcpy(buf + n + 64, ")\n");
	parse_fails(buf, "cand.cu:2: @forward: argument 1 too long (64 bytes, max 63): "
	            "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'");
	/* an expression longer than 255 bytes */
	n = (size_t)sprintf(buf, "// @task t\n// @forward k<<<1");
	for (int i = 0; i < 128; i++)
		n += (size_t)sprintf(buf + n, "+1");
	strcpy(buf + n, ", 1>>>()\n");
	parse_fails(buf, "cand.cu:2: @forward: grid too long (257 bytes, max 255): "
	            "'1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+...'");
	/* a task name of 128 bytes */
	n = (size_t)sprintf(buf, "// @task ");
	memset(buf + n, 't', 128);
	strcpy(buf + n + 128, "\n");
	cr_err_init(&err);
	assert_int_equal(cr_cand_parse(&c, "f", buf, strlen(buf), &err), CR_EINPUT);
	assert_non_null(strstr(err.msg, "f:1: @task: task name too long (128 bytes, max 127)"));
	/* a directive line over CR_CAND_MAX_LINE bytes, even if its content would fit */
	n = (size_t)sprintf(buf, "// @task t\n// @forward k(x)");
	memset(buf + n, ' ', CR_CAND_MAX_LINE);
	strcpy(buf + n + CR_CAND_MAX_LINE, "\n");
	{
		char want[128];
		snprintf(want, sizeof want, "cand.cu:2: directive line too long (%d bytes, max %d)",
			 CR_CAND_MAX_LINE + 16, CR_CAND_MAX_LINE);
		parse_fails(buf, want);
	}
	/* ... but long ordinary lines are fine */
	n = (size_t)sprintf(buf, "// @task t\n// @forward k(x)\nint a;");
	memset(buf + n, ' ', CR_CAND_MAX_LINE);
	strcpy(buf + n + CR_CAND_MAX_LINE, "\n");
	parse_ok(&c, "a.c", buf);
	cr_cand_release(&c);
}

static void test_launch_count(void **state)
{
	size_t cap = 32 + 24 * (CR_CAND_MAX_LAUNCHES + 1), n;
	char want[128], last[16];
	char *s = malloc(cap);
	struct cr_cand c;

	(void)state;
	assert_non_null(s);
	n = (size_t)sprintf(s, "// @task t\n");
	for (int i = 0; i < CR_CAND_MAX_LAUNCHES; i++)
		n += (size_t)sprintf(s + n, "// @forward k%d(x)\n", i);
	parse_ok(&c, "a.c", s);
	assert_int_equal(c.n_fwd, CR_CAND_MAX_LAUNCHES);
	for (int i = 0; i < CR_CAND_MAX_LAUNCHES; i++)
		assert_int_equal(c.fwd[i].line, i + 2);
	snprintf(last, sizeof last, "k%d", CR_CAND_MAX_LAUNCHES - 1);
	assert_string_equal(c.fwd[CR_CAND_MAX_LAUNCHES - 1].fn, last);
	cr_cand_release(&c);
	sprintf(s + n, "// @forward k(x)\n");
	snprintf(want, sizeof want, "cand.cu:%d: @forward: more than %d launches", CR_CAND_MAX_LAUNCHES + 2,
		 CR_CAND_MAX_LAUNCHES);
	parse_fails(s, want);
	free(s);

	/* the same for scratch buffers */
	s = malloc(64 + 24 * (CR_CAND_MAX_SCRATCH + 1));
	assert_non_null(s);
	n = (size_t)sprintf(s, "// @task t\n// @forward k(x)\n");
	for (int i = 0; i < CR_CAND_MAX_SCRATCH; i++)
		n += (size_t)sprintf(s + n, "// @scratch s%d u8[%d]\n", i, i + 1);
	parse_ok(&c, "a.c", s);
	assert_int_equal(c.n_scratch, CR_CAND_MAX_SCRATCH);
	assert_string_equal(c.scratch[40].name, "s40");
	assert_string_equal(c.scratch[40].count, "41");
	cr_cand_release(&c);
	sprintf(s + n, "// @scratch t u8[1]\n");
	parse_fails(s, "cand.cu:67: @scratch: more than 64 scratch buffers");
	free(s);
}

/* Nothing may crash, leak or read out of bounds (run under ASan/UBSan):
 * each result is either CR_OK with a consistent struct, or CR_EINPUT with a
 * "PATH:LINE: " message and an empty struct. */
static void check_any(const char *src, size_t len)
{
	struct cr_cand c;
	struct cr_err err;
	char *copy = malloc(len ? len : 1); /* exact size: ASan catches overreads */
	enum cr_status st;

	assert_non_null(copy);
	memcpy(copy, src, len);
	cr_err_init(&err);
	st = cr_cand_parse(&c, "f.cu", copy, len, &err);
	if (st == CR_OK) {
		assert_true(c.task_line >= 1);
		assert_true(c.n_fwd >= 1 && c.n_fwd <= CR_CAND_MAX_LAUNCHES);
		for (int i = 0; i < c.n_fwd; i++)
			assert_true(c.fwd[i].n_args <= CR_CAND_MAX_ARGS);
	} else {
		assert_int_equal(st, CR_EINPUT);
		assert_true(strncmp(err.msg, "f.cu:", 5) == 0);
		assert_null(c.fwd);
	}
	cr_cand_release(&c);
	free(copy);
}

static void test_fuzz(void **state)
{
	static const char alphabet[] = "/@ \t\n(),<>[]+-*/%0123456789.eEfBDxk_cdivminax"
	                               "taskforwardbackwardscratch\r\"";
	size_t len = sizeof spec_example - 1;
	char buf[512];
	uint64_t rng = 0x9e3779b97f4a7c15u;

	(void)state;
	for (size_t n = 0; n <= len; n++)
		check_any(spec_example, n);
	for (int it = 0; it < 20000; it++) {
		size_t n;
		/* xorshift64 */
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		if (it % 3 == 0) {        /* random bytes, directive-shaped start */
			n = rng % sizeof buf;
			for (size_t i = 0; i < n; i++) {
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				buf[i] = (char)(rng & 0xff);
			}
			if (n > 4)
				memcpy(buf, "// @", 4);
		} else if (it % 3 == 1) { /* random text over a directive alphabet */
			n = rng % sizeof buf;
			for (size_t i = 0; i < n; i++) {
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				buf[i] = alphabet[rng % (sizeof alphabet - 1)];
			}
		} else {                  /* the example with a few bytes mutated */
			memcpy(buf, spec_example, len);
			n = len;
			for (int k = 0; k < 3; k++) {
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				buf[rng % len] = alphabet[(rng >> 32) % (sizeof alphabet - 1)];
			}
		}
		check_any(buf, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_example),
		cmocka_unit_test(test_cpu_form),
		cmocka_unit_test(test_launch_config),
		cmocka_unit_test(test_scratch),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_launch_count),
		cmocka_unit_test(test_fuzz),
	};
	return cmocka_run_group_tests_name("cand", tests, NULL, NULL);
}
