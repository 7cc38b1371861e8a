/* test_feedback.c — refine's and evolve's feedback (gen/gen_feedback.c):
 * what each verdict tells the model (an answer without a code block too), one worst element for a mismatch,
 * never a seed, and the optimisation memory's lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen_run.h"

static void cand(struct gen_cand *c, enum check_verdict v, const char *detail)
{
	memset(c, 0, sizeof *c);
	snprintf(c->id, sizeof c->id, "r0t1");
	cr_result_init(&c->r);
	c->r.status = v;
	snprintf(c->r.detail, sizeof c->r.detail, "%s", detail);
}

static void test_compile_error_has_log(void **state)
{
	struct gen_cand c;
	(void)state;
	cand(&c, CHECK_COMPILE_ERROR, "cand.c:9:41: error: 'zero' undeclared");
	char *f = gen_feedback(&c, NULL, 0);
	assert_non_null(strstr(f, "did not compile"));
	assert_non_null(strstr(f, "cand.c:9:41: error: 'zero' undeclared"));
	free(f);
}

/* issue 31: prose without a fence was compiled; now it is no_code and the
 * model is asked for a fenced block, not told about a compiler error */
static void test_no_code_block(void **state)
{
	struct gen_cand c;
	(void)state;
	cand(&c, CHECK_NO_CODE, "no code block found in the completion (240 bytes)");
	char *f = gen_feedback(&c, NULL, 0);
	assert_non_null(strstr(f, "had no code block"));
	assert_non_null(strstr(f, "one fenced code block"));
	assert_null(strstr(f, "compile:"));
	free(f);
	char line[200];
	gen_memory_line(&c, line, sizeof line);
	assert_string_equal(line, "- r0t1: no_code");
}

static void test_path_is_file_name(void **state)
{
	struct gen_cand c;
	(void)state;
	cand(&c, CHECK_COMPILE_ERROR, "/runs/a/cand/smoke/relu/r0t0.c:7:45: error: 'z' undeclared");
	snprintf(c.path, sizeof c.path, "/runs/a/cand/smoke/relu/r0t0.c");
	char *f = gen_feedback(&c, NULL, 0);
	assert_null(strstr(f, "/runs/a"));
	assert_non_null(strstr(f, "r0t0.c:7:45: error"));
	free(f);
}

static void test_mismatch_one_element(void **state)
{
	struct gen_cand c;
	(void)state;
	cand(&c, CHECK_MISMATCH, "forward {N=17} normal: 'y' 3 of 17 elements outside the tolerance");
	c.r.worst = (struct cr_worst){ .set = true, .stage = "forward", .shape = "N=17",
				       .profile = "normal", .output = "y", .index = 5, .got = -0.125,
				       .expected = 0, .abs_err = 0.125, .rel_err = INFINITY };
	char *f = gen_feedback(&c, NULL, 0);
	assert_non_null(strstr(f, "forward stage, shape {N=17}, inputs 'normal'"));
	assert_non_null(strstr(f, "element 5 is -0.125, expected 0"));
	free(f);
}

static void test_seeds_redacted(void **state)
{
	struct gen_cand c;
	uint64_t seeds[2] = { 12345678901234ull, 0xdeadbeefcafef00dull };
	char det[300];
	(void)state;
	snprintf(det, sizeof det, "case seed 12345678901234 and deadbeefcafef00d leaked");
	cand(&c, CHECK_RUNTIME_ERROR, det);
	char *f = gen_feedback(&c, seeds, 2);
	assert_null(strstr(f, "12345678901234"));
	assert_null(strstr(f, "deadbeefcafef00d"));
	assert_non_null(strstr(f, "<redacted>"));
	free(f);
}

static void test_correct_speedup(void **state)
{
	struct gen_cand c;
	(void)state;
	cand(&c, CHECK_OK, "");
	c.r.timed = true;
	c.r.speedup = 1.5;
	c.r.speedup_lo = 1.4;
	c.r.speedup_hi = 1.6;
	c.r.time_us = 10;
	c.r.baseline_us = 15;
	c.r.roofline = 0.25;
	char *f = gen_feedback(&c, NULL, 0);
	assert_non_null(strstr(f, "speedup 1.50x [1.40, 1.60]"));
	assert_non_null(strstr(f, "25% of the roofline"));
	free(f);
}

static void test_anticheat_reason(void **state)
{
	struct gen_cand c;
	(void)state;
	cand(&c, CHECK_INPUT_MUTATED, "forward {N=17}: input 'x' was written");
	char *f = gen_feedback(&c, NULL, 0);
	assert_non_null(strstr(f, "rejected (input_mutated)"));
	assert_non_null(strstr(f, "input 'x' was written"));
	free(f);
}

static void test_memory_line(void **state)
{
	struct gen_cand c;
	char line[200];
	(void)state;
	cand(&c, CHECK_OK, "");
	snprintf(c.id, sizeof c.id, "g2c1");
	snprintf(c.parent, sizeof c.parent, "g1c0");
	c.r.timed = true;
	c.r.speedup = 2.25;
	gen_memory_line(&c, line, sizeof line);
	assert_string_equal(line, "- g2c1 (child of g1c0): correct, 2.25x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compile_error_has_log), cmocka_unit_test(test_no_code_block),
		cmocka_unit_test(test_path_is_file_name), cmocka_unit_test(test_mismatch_one_element),
		cmocka_unit_test(test_seeds_redacted), cmocka_unit_test(test_correct_speedup),
		cmocka_unit_test(test_anticheat_reason), cmocka_unit_test(test_memory_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
