/* test_expr.c — cand/expr.c: values, precedence, functions, names and
 * every error (compile and evaluation) with its message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cand/expr.h"

/* Dims visible to test expressions: B=4 D=1000 N=7 BIG=INT64_MAX SMALL=INT64_MIN */
static const char *const names[] = { "B", "D", "N", "BIG", "SMALL" };
static const int64_t values[] = { 4, 1000, 7, INT64_MAX, INT64_MIN };

static int lookup(void *ctx, const char *name, size_t len)
{
	(void)ctx;
	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
			return i;
	return -1;
}

static int64_t ev(const char *text)
{
	struct cr_expr e;
	struct cr_err err;
	int64_t v = -12345;

	cr_err_init(&err);
	if (cr_expr_compile(&e, text, strlen(text), lookup, NULL, &err) != CR_OK)
		fail_msg("compile '%s': %s", text, err.msg);
	if (cr_expr_eval(&e, values, &v, &err) != CR_OK)
		fail_msg("eval '%s': %s", text, err.msg);
	cr_expr_release(&e);
	return v;
}

/* Expects compile of text to fail with exactly msg. */
static void compile_fails(const char *text, const char *msg)
{
	struct cr_expr e;
	struct cr_err err;

	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, text, strlen(text), lookup, NULL, &err), CR_EINPUT);
	assert_int_equal(err.status, CR_EINPUT);
	assert_string_equal(err.msg, msg);
	assert_null(e.ops);
	assert_int_equal(e.n_ops, 0);
	cr_expr_release(&e); /* still safe */
}

/* Expects text to compile and its evaluation to fail with exactly msg. */
static void eval_fails(const char *text, const char *msg)
{
	struct cr_expr e;
	struct cr_err err;
	int64_t v = 99;

	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, text, strlen(text), lookup, NULL, &err), CR_OK);
	assert_int_equal(cr_expr_eval(&e, values, &v, &err), CR_EINPUT);
	assert_string_equal(err.msg, msg);
	assert_int_equal(v, 99); /* untouched on failure */
	cr_expr_release(&e);
}

static void test_literals(void **state)
{
	(void)state;
	assert_int_equal(ev("0"), 0);
	assert_int_equal(ev("42"), 42);
	assert_int_equal(ev("  17\t"), 17);
	assert_int_equal(ev("007"), 7);
	assert_true(ev("9223372036854775807") == INT64_MAX);
	assert_true(ev("-9223372036854775808") == INT64_MIN);
	assert_true(ev("-(9223372036854775807)") == -INT64_MAX);
}

static void test_precedence(void **state)
{
	(void)state;
	assert_int_equal(ev("2+3*4"), 14);
	assert_int_equal(ev("(2+3)*4"), 20);
	assert_int_equal(ev("10-3-2"), 5);
	assert_int_equal(ev("100/10/5"), 2);
	assert_int_equal(ev("7/2"), 3);
	assert_int_equal(ev("-7/2"), -3);       /* C: truncation toward zero */
	assert_int_equal(ev("7/-2"), -3);
	assert_int_equal(ev("7%3"), 1);
	assert_int_equal(ev("-7%3"), -1);       /* C: sign of the dividend */
	assert_int_equal(ev("7%-3"), 1);
	assert_int_equal(ev("2*3%4"), 2);       /* (2*3)%4 */
	assert_int_equal(ev("1+2*3-4/2"), 5);
	assert_int_equal(ev("2 - -3"), 5);
	assert_int_equal(ev("--5"), 5);
	assert_int_equal(ev("-(2+3)"), -5);
	assert_int_equal(ev("- - -(1)"), -1);
	assert_int_equal(ev("-2*3"), -6);
	assert_int_equal(ev("((((1))))"), 1);
}

static void test_functions(void **state)
{
	(void)state;
	assert_int_equal(ev("cdiv(7,2)"), 4);
	assert_int_equal(ev("cdiv(8,2)"), 4);
	assert_int_equal(ev("cdiv(0,5)"), 0);
	assert_int_equal(ev("cdiv(1,256)"), 1);
	assert_int_equal(ev("cdiv(-7,2)"), -3);
	assert_int_equal(ev("cdiv(7,-2)"), -3);
	assert_int_equal(ev("cdiv(-7,-2)"), 4);
	assert_int_equal(ev("cdiv(-8,2)"), -4);
	assert_true(ev("cdiv(9223372036854775807, 2)") == INT64_MAX / 2 + 1);
	assert_true(ev("cdiv(-9223372036854775808, 2)") == INT64_MIN / 2);
	assert_int_equal(ev("min(3,5)"), 3);
	assert_int_equal(ev("min(5,3)"), 3);
	assert_int_equal(ev("max(3,5)"), 5);
	assert_int_equal(ev("max(-3,-5)"), -3);
	assert_int_equal(ev("max(min(10, 20), cdiv(50, 2)) * 2"), 50);
	assert_int_equal(ev("cdiv ( D , 256 )"), 4);
	assert_int_equal(ev("min(max(1, 2 + 3), cdiv(100, min(7, 9))) - 1"), 4);
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(ev("B"), 4);
	assert_int_equal(ev("B*D"), 4000);
	assert_int_equal(ev("cdiv(D, 256)"), 4);
	assert_int_equal(ev("N % B + D / (N - 2)"), 203);
	assert_int_equal(ev("(B + N) * (B - N)"), -33);
	assert_true(ev("BIG") == INT64_MAX);
	assert_true(ev("SMALL + 1") == INT64_MIN + 1);
	assert_true(ev("-BIG") == -INT64_MAX);
}

static void test_const_and_release(void **state)
{
	struct cr_expr e;
	struct cr_err err;
	int64_t v = 0;

	(void)state;
	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, "2 * 21", 6, NULL, NULL, &err), CR_OK);
	assert_true(cr_expr_is_const(&e));
	assert_int_equal(cr_expr_eval(&e, NULL, &v, &err), CR_OK);
	assert_int_equal(v, 42);
	assert_string_equal(e.text, "2 * 21");
	cr_expr_release(&e);
	cr_expr_release(&e);
	assert_int_equal(cr_expr_eval(&e, NULL, &v, &err), CR_EINTERNAL);

	/* text need not be NUL-terminated: only len bytes are read */
	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, "N*2)garbage", 3, lookup, NULL, &err), CR_OK);
	assert_false(cr_expr_is_const(&e));
	assert_int_equal(e.n_vars_used, 3);
	assert_int_equal(cr_expr_eval(&e, values, &v, &err), CR_OK);
	assert_int_equal(v, 14);
	cr_expr_release(&e);

	/* with no lookup every name is unknown */
	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, "B", 1, NULL, NULL, &err), CR_EINPUT);
	assert_string_equal(err.msg, "unknown name 'B' at column 1 in 'B'");
}

static void test_check(void **state)
{
	struct cr_err err;

	(void)state;
	cr_err_init(&err);
	assert_int_equal(cr_expr_check("cdiv(anything, 256) * whatever", 30, &err), CR_OK);
	assert_int_equal(err.status, CR_OK);
	assert_int_equal(cr_expr_check("foo(1, 2)", 9, &err), CR_EINPUT);
	assert_string_equal(err.msg, "unknown function 'foo' at column 1 in 'foo(1, 2)'");
}

static void test_compile_errors(void **state)
{
	(void)state;
	compile_fails("N + Q", "unknown name 'Q' at column 5 in 'N + Q'");
	compile_fails("B + Dx", "unknown name 'Dx' at column 5 in 'B + Dx'");
	compile_fails("", "empty expression at column 1 in ''");
	compile_fails("   ", "empty expression at column 1 in '   '");
	compile_fails("9223372036854775808",
	              "integer literal out of range at column 1 in '9223372036854775808'");
	compile_fails("-9223372036854775809",
	              "integer literal out of range at column 2 in '-9223372036854775809'");
	compile_fails("99999999999999999999999",
	              "integer literal out of range at column 1 in '99999999999999999999999'");
	compile_fails("12abc", "malformed integer literal at column 1 in '12abc'");
	compile_fails("1.5", "malformed integer literal at column 1 in '1.5'");
	compile_fails("(1 + 2", "expected ')' (to close '(' at column 1) at column 7 in '(1 + 2'");
	compile_fails("cdiv(D, 256", "unexpected end of expression, expected ')' at column 12 in 'cdiv(D, 256'");
	compile_fails("(B 2", "unexpected '2', expected ')' at column 4 in '(B 2'");
	compile_fails("(B (", "unknown function 'B' at column 2 in '(B ('");
	compile_fails("1 + 2)", "unexpected ')' after expression at column 6 in '1 + 2)'");
	compile_fails("B D", "unexpected 'D' after expression at column 3 in 'B D'");
	compile_fails("4 5", "unexpected '5' after expression at column 3 in '4 5'");
	compile_fails("1 +", "unexpected end of expression, expected a number, a name or '(' "
	              "at column 4 in '1 +'");
	compile_fails("* 2", "unexpected '*', expected a number, a name or '(' at column 1 in '* 2'");
	compile_fails("()", "unexpected ')', expected a number, a name or '(' at column 2 in '()'");
	compile_fails("+1", "unexpected '+', expected a number, a name or '(' at column 1 in '+1'");
	compile_fails("B & 1", "unexpected '&' after expression at column 3 in 'B & 1'");
	compile_fails("B\n", "unexpected byte 0x0a after expression at column 2 in 'B\n'");
	compile_fails("cdiv(7)", "'cdiv' takes 2 arguments, got 1 at column 1 in 'cdiv(7)'");
	compile_fails("1 + min(1, 2, 3)",
	              "'min' takes 2 arguments, got more at column 5 in '1 + min(1, 2, 3)'");
	compile_fails("max()", "unexpected ')', expected a number, a name or '(' at column 5 in 'max()'");
	compile_fails("max(1 2)", "unexpected '2', expected ',' at column 7 in 'max(1 2)'");
	compile_fails("sqrt(4)", "unknown function 'sqrt' at column 1 in 'sqrt(4)'");
	compile_fails("B(1)", "unknown function 'B' at column 1 in 'B(1)'");
	compile_fails("min", "unknown name 'min' at column 1 in 'min'");
}

static void test_nesting_limit(void **state)
{
	char buf[4 * CR_EXPR_MAX_NEST + 16];
	struct cr_expr e;
	struct cr_err err;
	int n = 0;

	(void)state;
	/* just under the limit compiles */
	for (int i = 0; i < CR_EXPR_MAX_NEST - 1; i++)
		buf[n++] = '(';
	buf[n++] = '1';
	for (int i = 0; i < CR_EXPR_MAX_NEST - 1; i++)
		buf[n++] = ')';
	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, buf, (size_t)n, NULL, NULL, &err), CR_OK);
	cr_expr_release(&e);
	/* one more level is rejected, as is a long run of unary minus */
	memmove(buf + 1, buf, (size_t)n);
	buf[0] = '(';
	buf[n + 1] = ')';
	assert_int_equal(cr_expr_compile(&e, buf, (size_t)n + 2, NULL, NULL, &err), CR_EINPUT);
	assert_non_null(strstr(err.msg, "expression nested more than 64 deep at column 65"));
	memset(buf, '-', sizeof buf - 1);
	buf[sizeof buf - 1] = '1';
	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, buf, sizeof buf, NULL, NULL, &err), CR_EINPUT);
	assert_non_null(strstr(err.msg, "expression nested more than 64 deep"));
}

static void test_stack_limit(void **state)
{
	/* "min(1, 1+1*" keeps 3 values pending per nesting level */
	char buf[16 * 64];
	struct cr_expr e;
	struct cr_err err;
	int64_t v = 0;
	size_t n = 0;

	(void)state;
	for (int reps = 30; reps <= 50; reps += 20) {
		n = 0;
		for (int i = 0; i < reps; i++)
			n += (size_t)sprintf(buf + n, "min(1, 1+1*");
		buf[n++] = '1';
		for (int i = 0; i < reps; i++)
			buf[n++] = ')';
		cr_err_init(&err);
		if (reps == 30) {
			assert_int_equal(cr_expr_compile(&e, buf, n, NULL, NULL, &err), CR_OK);
			assert_int_equal(cr_expr_eval(&e, NULL, &v, &err), CR_OK);
			assert_int_equal(v, 1);
			cr_expr_release(&e);
		} else {
			assert_int_equal(cr_expr_compile(&e, buf, n, NULL, NULL, &err), CR_EINPUT);
			assert_non_null(strstr(err.msg, "expression too complex (needs more than 128 "
			                                "stack slots) at column"));
		}
	}
}

static void test_long_chain(void **state)
{
	/* 1+1+...+1: long but flat, so it needs a stack of 2 */
	enum { TERMS = 5000 };
	char *buf = malloc(2 * TERMS);
	struct cr_expr e;
	struct cr_err err;
	int64_t v = 0;

	(void)state;
	assert_non_null(buf);
	for (int i = 0; i < TERMS; i++) {
		buf[2 * i] = '1';
		buf[2 * i + 1] = '+';
	}
	cr_err_init(&err);
	assert_int_equal(cr_expr_compile(&e, buf, 2 * TERMS - 1, NULL, NULL, &err), CR_OK);
	assert_int_equal(cr_expr_eval(&e, NULL, &v, &err), CR_OK);
	assert_int_equal(v, TERMS);
	/* the message quotes at most 200 bytes of the text */
	cr_expr_release(&e);
	buf[2 * TERMS - 1] = '+';
	assert_int_equal(cr_expr_compile(&e, buf, 2 * TERMS, NULL, NULL, &err), CR_EINPUT);
	assert_non_null(strstr(err.msg, "at column 10001 in '1+1+"));
	assert_non_null(strstr(err.msg, "+1+...'"));
	free(buf);
}

static void test_eval_errors(void **state)
{
	(void)state;
	eval_fails("N / (B - B)", "division by zero at column 3 in 'N / (B - B)'");
	eval_fails("N % 0", "modulo by zero at column 3 in 'N % 0'");
	eval_fails("cdiv(D, B - 4)", "division by zero at column 1 in 'cdiv(D, B - 4)'");
	eval_fails("SMALL / -1", "integer overflow at column 7 in 'SMALL / -1'");
	eval_fails("SMALL % -1", "integer overflow at column 7 in 'SMALL % -1'");
	eval_fails("cdiv(SMALL, -1)", "integer overflow at column 1 in 'cdiv(SMALL, -1)'");
	eval_fails("BIG + 1", "integer overflow at column 5 in 'BIG + 1'");
	eval_fails("SMALL - 1", "integer overflow at column 7 in 'SMALL - 1'");
	eval_fails("0 - SMALL", "integer overflow at column 3 in '0 - SMALL'");
	eval_fails("-SMALL", "integer overflow at column 1 in '-SMALL'");
	eval_fails("D * D * D * D * D * D * D",
	           "integer overflow at column 23 in 'D * D * D * D * D * D * D'");
	eval_fails("4294967296 * 4294967296",
	           "integer overflow at column 12 in '4294967296 * 4294967296'");
	eval_fails("-9223372036854775808 * -1",
	           "integer overflow at column 22 in '-9223372036854775808 * -1'");
	/* an error in an operand that is never "used" is still an error */
	eval_fails("min(1, 1 / 0)", "division by zero at column 10 in 'min(1, 1 / 0)'");
}

static void test_first_error_wins(void **state)
{
	struct cr_expr e;
	struct cr_err err;

	(void)state;
	cr_err_init(&err);
	cr_errf(&err, CR_EINPUT, "earlier");
	assert_int_equal(cr_expr_compile(&e, "(", 1, NULL, NULL, &err), CR_EINPUT);
	assert_string_equal(err.msg, "earlier");
	/* NULL err is accepted */
	assert_int_equal(cr_expr_compile(&e, ")", 1, NULL, NULL, NULL), CR_EINPUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literals),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_functions),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_const_and_release),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_compile_errors),
		cmocka_unit_test(test_nesting_limit),
		cmocka_unit_test(test_stack_limit),
		cmocka_unit_test(test_long_chain),
		cmocka_unit_test(test_eval_errors),
		cmocka_unit_test(test_first_error_wins),
	};
	return cmocka_run_group_tests_name("expr", tests, NULL, NULL);
}
