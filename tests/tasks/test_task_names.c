/* test_task_names.c — task specs the way KernelBench users name tasks
 * (issue 32, SPEC §2 "Task names"): sets, full names, problem ids
 * ("L1/23"), id ranges ("L1/1-10"), globs over full names, short names
 * ("L1/softmax"), the same task selected twice counted once, and every
 * error with its message (did-you-mean, ambiguity, bad ranges, globs that
 * match nothing), and task_spec_matches (report and gate filter rows by
 * a spec without the registry). Run with no argument: the repository's registry
 * ($CRUCIBLE_DATADIR). With --synthetic: a registry of its own, made in a
 * temporary folder, for clashing ids and short names and broken files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tasks/task_registry.h"

/* The names a spec selects, joined by ',' (or the error's status). */
static enum cr_status names_of(const char *spec, char *buf, size_t cap, int *n, struct cr_err *e)
{
	char **v;
	size_t l = 0;
	enum cr_status st;

	cr_err_init(e);
	buf[0] = '\0';
	st = task_registry_names(spec, &v, n, e);
	if (st) {
		assert_null(v);
		assert_int_equal(*n, 0);
		return st;
	}
	for (int i = 0; i < *n; i++)
		l += (size_t)snprintf(buf + l, l < cap ? cap - l : 0, "%s%s", i ? "," : "", v[i]);
	task_registry_names_free(v, *n);
	return st;
}

/* spec selects exactly want (names joined by ',') */
static void expect(const char *spec, const char *want)
{
	char buf[16384];
	int n;
	struct cr_err e;
	enum cr_status st = names_of(spec, buf, sizeof buf, &n, &e);
	if (st || strcmp(buf, want))
		fail_msg("spec '%s': got [%s] (%s), want [%s]", spec, buf, st ? e.msg : "ok", want);
}

/* spec is an input error whose message holds each of the NULL-ended parts */
static void expect_error(const char *spec, ...)
{
	char buf[16384];
	int n;
	struct cr_err e;
	va_list ap;
	const char *part;

	if (names_of(spec, buf, sizeof buf, &n, &e) != CR_EINPUT)
		fail_msg("spec '%s': want an input error, got [%s] status %d", spec, buf, e.status);
	va_start(ap, spec);
	while ((part = va_arg(ap, const char *)))
		if (!strstr(e.msg, part)) {
			va_end(ap);
			fail_msg("spec '%s': message '%s' lacks '%s'", spec, e.msg, part);
		}
	va_end(ap);
}

/* ---- the repository's registry ---- */

static void test_sets_and_full_names(void **s)
{
	char buf[16384];
	int n;
	struct cr_err e;
	(void)s;
	expect("L1/23_Softmax", "L1/23_Softmax");
	expect("smoke/relu,smoke/softmax", "smoke/relu,smoke/softmax");
	assert_int_equal(names_of("L1", buf, sizeof buf, &n, &e), CR_OK);
	assert_int_equal(n, 100);
	/* natural order, as before */
	assert_int_equal(strncmp(buf, "L1/1_Square_matrix_multiplication_,L1/2_", 40), 0);
	assert_int_equal(names_of(NULL, buf, sizeof buf, &n, &e), CR_OK);
	assert_true(n > 240);
	/* a set in another case */
	expect("l1/23", "L1/23_Softmax");
	/* spaces around an element, empty elements */
	expect(" L1/23 ,, smoke/relu ", "L1/23_Softmax,smoke/relu");
}

static void test_ids(void **s)
{
	(void)s;
	expect("L1/23", "L1/23_Softmax");
	expect("L1/023", "L1/23_Softmax");
	expect("L2/1", "L2/1_Conv2D_ReLU_BiasAdd");
	expect("L3/19", "L3/19_MobileNetV1");
	expect("L1/100", "L1/100_HingeLoss");
}

/* Every task of L1, L2 and L3 is reached by its id, and ids are unique
 * per set (the lint's check too: task_registry_check_ids). */
static void test_every_id_resolves(void **s)
{
	static const char *const sets[] = { "L1", "L2", "L3" };
	struct cr_err e;
	(void)s;
	cr_err_init(&e);
	assert_int_equal(task_registry_check_ids(&e), CR_OK);
	for (int k = 0; k < 3; k++) {
		char **v, canon[128], byid[64];
		int n;
		cr_err_init(&e);
		assert_int_equal(task_registry_names(sets[k], &v, &n, &e), CR_OK);
		assert_true(n > 40);
		for (int i = 0; i < n; i++) {
			const char *stem = strchr(v[i], '/') + 1;
			size_t dl = strspn(stem, "0123456789");
			if (!dl || stem[dl] != '_')
				fail_msg("%s has no KernelBench id", v[i]);
			snprintf(byid, sizeof byid, "%s/%.*s", sets[k], (int)dl, stem);
			cr_err_init(&e);
			if (task_registry_resolve(byid, canon, sizeof canon, &e) || strcmp(canon, v[i]))
				fail_msg("%s resolves to '%s' (%s), want %s", byid, canon, e.msg, v[i]);
		}
		task_registry_names_free(v, n);
	}
}

static void test_ranges(void **s)
{
	char buf[16384];
	int n;
	struct cr_err e;
	(void)s;
	assert_int_equal(names_of("L1/1-10", buf, sizeof buf, &n, &e), CR_OK);
	assert_int_equal(n, 10);
	assert_int_equal(strncmp(buf, "L1/1_Square", 11), 0);
	assert_non_null(strstr(buf, ",L1/10_3D_tensor_matrix_multiplication"));
	assert_null(strstr(buf, "L1/11_"));
	expect("L1/23-23", "L1/23_Softmax");
	expect("L3/49-60", "L3/49_Mamba2ReturnFinalState,L3/50_ReLUSelfAttention");
	/* ids past the end are simply absent */
	assert_int_equal(names_of("L1/95-200", buf, sizeof buf, &n, &e), CR_OK);
	assert_int_equal(n, 6);
	/* errors */
	expect_error("L1/10-1", "bad id range 'L1/10-1'", "10 is above 1", NULL);
	expect_error("L1/1-", "bad id range 'L1/1-'", "FIRST-LAST", NULL);
	expect_error("L1/-3", "bad id range 'L1/-3'", NULL);
	expect_error("L1/1-2-3", "bad id range 'L1/1-2-3'", NULL);
	expect_error("L1/200-300", "'L1/200-300' matches no task", "1-100", NULL);
	expect_error("smoke/1-3", "'smoke/1-3' matches no task", "no ids", NULL);
}

static void test_globs(void **s)
{
	char buf[16384], *save = NULL;
	int n, hits = 0;
	struct cr_err e;
	(void)s;
	assert_int_equal(names_of("L2/*Conv*", buf, sizeof buf, &n, &e), CR_OK);
	assert_true(n > 10);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), hits++) {
		char low[256];
		snprintf(low, sizeof low, "%s", t);
		for (char *p = low; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
		if (strncmp(t, "L2/", 3) || !strstr(low, "conv"))
			fail_msg("'L2/*Conv*' selected %s", t);
	}
	assert_int_equal(hits, n);
	assert_int_equal(names_of("L2/*Conv*", buf, sizeof buf, &n, &e), CR_OK);
	assert_non_null(strstr(buf, "L2/1_Conv2D_ReLU_BiasAdd"));
	assert_null(strstr(buf, "L2/12_Gemm_Multiply_LeakyReLU"));
	expect("*/19_*", "L1/19_ReLU,L2/19_ConvTranspose2d_GELU_GroupNorm,L3/19_MobileNetV1");
	assert_int_equal(names_of("L1/2?_*", buf, sizeof buf, &n, &e), CR_OK);
	assert_int_equal(n, 10);
	assert_int_equal(strncmp(buf, "L1/20_LeakyReLU,", 16), 0);
	/* case-insensitive: *conv* finds L1's conv_standard and L2's Conv2D */
	assert_int_equal(names_of("*conv*", buf, sizeof buf, &n, &e), CR_OK);
	assert_non_null(strstr(buf, "L1/50_conv_standard_2D"));
	assert_non_null(strstr(buf, "L2/1_Conv2D_ReLU_BiasAdd"));
	expect("smoke/soft*", "smoke/softmax");
	expect_error("L2/*Cnv*", "'L2/*Cnv*' matches no task", NULL);
}

static void test_short_names(void **s)
{
	(void)s;
	expect("L1/softmax", "L1/23_Softmax");
	expect("L1/SOFTMAX", "L1/23_Softmax");
	expect("L1/23_softmax", "L1/23_Softmax");
	expect("L1/gelu", "L1/26_GELU_");
	expect("L1/gelu_", "L1/26_GELU_");
	expect("L1/relu", "L1/19_ReLU");
	expect("L1/square_matrix_multiplication", "L1/1_Square_matrix_multiplication_");
	expect("L3/mobilenetv1", "L3/19_MobileNetV1");
	/* a smoke task has no id: its stem is its short name */
	expect("smoke/softmax", "smoke/softmax");
	/* two problems of L1 share this one: an error listing both */
	expect_error("L1/conv_standard_2d__square_input__square_kernel", "is ambiguous",
		     "L1/50_conv_standard_2D__square_input__square_kernel",
		     "L1/63_conv_standard_2D__square_input__square_kernel", NULL);
}

static void test_dedupe(void **s)
{
	struct task *ts;
	int n;
	struct cr_err e;
	(void)s;
	expect("L1/23,L1/softmax", "L1/23_Softmax");
	expect("L1/23,L1/softmax,L1/23_Softmax,l1/SoftMax,L1/20-25,L1/2?_*",
	       "L1/20_LeakyReLU,L1/21_Sigmoid,L1/22_Tanh,L1/23_Softmax,L1/24_LogSoftmax,L1/25_Swish,"
	       "L1/26_GELU_,L1/27_SELU_,L1/28_HardSigmoid,L1/29_Softplus");
	expect("smoke,smoke/relu,smoke", "smoke/cross_entropy,smoke/gelu,smoke/layernorm,smoke/matmul,"
	       "smoke/relu,smoke/rowsum,smoke/softmax");
	/* loading: each task once, named canonically */
	cr_err_init(&e);
	assert_int_equal(task_registry_load("L1/23,L1/softmax,L1/23_Softmax", &ts, &n, &e), CR_OK);
	assert_int_equal(n, 1);
	assert_string_equal(ts[0].name, "L1/23_Softmax");
	task_list_free(ts, n);
	cr_err_init(&e);
	assert_int_equal(task_registry_load("L1/1-3,L1/2", &ts, &n, &e), CR_OK);
	assert_int_equal(n, 3);
	assert_string_equal(ts[2].name, "L1/3_Batched_matrix_multiplication");
	task_list_free(ts, n);
}

static void test_unknown(void **s)
{
	struct task *ts;
	struct task_broken *bad;
	int n, n_bad;
	struct cr_err e;
	(void)s;
	expect_error("L1/sofmax", "unknown task 'L1/sofmax'", "did you mean 'L1/23_Softmax'?", NULL);
	expect_error("L1/Softmx", "unknown task 'L1/Softmx'", "did you mean 'L1/23_Softmax'?", NULL);
	/* the short name of another set's task */
	expect_error("L2/softmax", "unknown task 'L2/softmax'", "did you mean 'L1/23_Softmax'?", NULL);
	expect_error("L1/zzzzzzzz", "unknown task 'L1/zzzzzzzz'", "crucible list L1", NULL);
	expect_error("L1/999", "unknown task 'L1/999'", "no task of L1 has id 999", "1-100", NULL);
	expect_error("smoke/1", "unknown task 'smoke/1'", "no ids", NULL);
	expect_error("L4/3", "unknown task 'L4/3'", "no task set 'L4'", "L1, L2, L3, smoke", NULL);
	expect_error("no/such", "unknown task 'no/such'", NULL);
	expect_error("l4", "unknown task set 'l4'", NULL);
	expect_error("L", "unknown task set 'L'", NULL);
	/* a task's name without its set */
	expect_error("softmax", "unknown task set 'softmax'", "did you mean 'smoke/softmax'?", NULL);
	expect_error("relu_", "unknown task set 'relu_'", "did you mean", NULL);
	/* malformed */
	expect_error("L1//x", "task name 'L1//x': expected", NULL);
	expect_error("L1/a/b", "task name 'L1/a/b': expected", NULL);
	expect_error("L1/", "task name 'L1/': expected", NULL);
	expect_error("/23", "task name '/23': expected", NULL);
	expect_error("L1/../L2/1", "expected", NULL);
	expect_error("..", "unknown task set '..'", NULL);
	/* one bad element fails the whole spec, nothing half-loaded */
	cr_err_init(&e);
	assert_int_equal(task_registry_scan("smoke,L1/23,L1/nope", &ts, &n, &bad, &n_bad, &e), CR_EINPUT);
	assert_null(ts);
	assert_int_equal(n, 0);
	assert_null(bad);
	assert_non_null(strstr(e.msg, "unknown task 'L1/nope'"));
}

static void test_find(void **s)
{
	struct task t;
	struct cr_err e;
	char canon[128];
	(void)s;
	static const char *const forms[] = { "L1/23_Softmax", "L1/23", "L1/softmax", "l1/SOFTMAX",
					     " L1/023 ", "L1/23_softmax_" };
	for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
		cr_err_init(&e);
		if (task_registry_find(forms[i], &t, &e))
			fail_msg("find '%s': %s", forms[i], e.msg);
		assert_string_equal(t.name, "L1/23_Softmax");
		task_release(&t);
		cr_err_init(&e);
		assert_int_equal(task_registry_resolve(forms[i], canon, sizeof canon, &e), CR_OK);
		assert_string_equal(canon, "L1/23_Softmax");
	}
	cr_err_init(&e);
	assert_int_equal(task_registry_find("smoke/relu", &t, &e), CR_OK);
	assert_string_equal(t.name, "smoke/relu");
	task_release(&t);
	/* several tasks where one is needed */
	cr_err_init(&e);
	assert_int_equal(task_registry_find("L1/1-10", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "one task is needed"));
	cr_err_init(&e);
	assert_int_equal(task_registry_find("L2/*Conv*", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "one task is needed"));
	cr_err_init(&e);
	assert_int_equal(task_registry_find("L1", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "expected"));
	cr_err_init(&e);
	assert_int_equal(task_registry_find("L1/sofmax", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "unknown task 'L1/sofmax'"));
	assert_non_null(strstr(e.msg, "did you mean 'L1/23_Softmax'?"));
	cr_err_init(&e);
	assert_int_equal(task_registry_find("smoke/nope", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "unknown task 'smoke/nope'"));
	/* exists: the canonical name only */
	assert_true(task_registry_exists("L1/23_Softmax"));
	assert_false(task_registry_exists("L1/23"));
	assert_false(task_registry_exists("L1/softmax"));
	/* a canonical name longer than the caller's buffer */
	cr_err_init(&e);
	assert_int_equal(task_registry_resolve("L1/23", canon, 8, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "too long"));
}




/* KernelBench's own spellings: level1 for L1, a problem's file path */
static void test_kernelbench_paths(void **s)
{
	char canon[128];
	struct cr_err e;
	(void)s;
	expect("level1/23", "L1/23_Softmax");
	expect("Level2/1-2", "L2/1_Conv2D_ReLU_BiasAdd,L2/2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide");
	expect("level3/*MobileNetV1*", "L3/19_MobileNetV1");
	expect("KernelBench/level1/23_Softmax.py", "L1/23_Softmax");
	expect("data/tasks/L1/23_Softmax.json", "L1/23_Softmax");
	expect("L1/23_Softmax.json,/abs/path/tasks/L1/19_ReLU.json", "L1/19_ReLU,L1/23_Softmax");
	cr_err_init(&e);
	assert_int_equal(task_registry_resolve("level1/softmax", canon, sizeof canon, &e), CR_OK);
	assert_string_equal(canon, "L1/23_Softmax");
	cr_err_init(&e);
	assert_int_equal(task_registry_resolve("./data/tasks/smoke/relu.json", canon, sizeof canon, &e), CR_OK);
	assert_string_equal(canon, "smoke/relu");
	assert_true(task_spec_matches("level1/23", "L1/23_Softmax"));
	assert_true(task_spec_matches("level1", "L1/23_Softmax"));
	assert_true(task_spec_matches("level1/23_Softmax.py", "L1/23_Softmax"));
	assert_false(task_spec_matches("level2", "L1/23_Softmax"));
	/* not a level, not a path: as written */
	expect_error("levelx/1", "unknown task 'levelx/1'", NULL);
	expect_error("L1/a/b.txt", "expected", NULL);
}


/* odd input is an error or a selection, never a crash (ASan build) */
static void test_odd_inputs(void **s)
{
	static const char *const odd[] = {
		"[", "L1/[", "*", ",", " ", "/", "//", "L1/-", "L1/--", "L1/0", "L1/99999999999",
		"L1/1-99999999999", "L1/0-0", "\t", "L1/23,", ",L1/23", "L1/ 23", "L1/_", "L1/__",
		"L1/23_", ".json", "/.json", "a/.json", ".py", "level", "level/1", "level1/", "L1/\\",
		"L1/%s%n", "L1/*[", "L1/[!a-z]*", "smoke/", "smoke/*/x", "..,L1", "L1/..", "L1/.", ".",
	};
	static char big[6000];
	char buf[16384], canon[128];
	struct task t;
	struct cr_err e;
	int n;
	(void)s;
	for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
		enum cr_status st = names_of(odd[i], buf, sizeof buf, &n, &e);
		if (st != CR_OK && st != CR_EINPUT)
			fail_msg("'%s': status %d (%s)", odd[i], st, e.msg);
		cr_err_init(&e);
		st = task_registry_resolve(odd[i], canon, sizeof canon, &e);
		if (st != CR_OK && st != CR_EINPUT)
			fail_msg("resolve '%s': status %d (%s)", odd[i], st, e.msg);
		cr_err_init(&e);
		if (!task_registry_find(odd[i], &t, &e))
			task_release(&t);
		(void)task_spec_matches(odd[i], "L1/23_Softmax");
		cr_err_init(&e);
		(void)task_spec_check(odd[i], &e);
	}
	/* 0 is no KernelBench id; a trailing comma is an empty element */
	expect("L1/23,", "L1/23_Softmax");
	expect_error("L1/0", "unknown task 'L1/0'", NULL);
	/* long elements: errors, not overflows */
	for (int k = 0; k < 3; k++) {
		memset(big, k == 0 ? 'a' : k == 1 ? '1' : '*', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		memcpy(big, "L1/", 3);
		/* a glob of 6000 stars cut to 255 would select every task */
		assert_int_equal(names_of(big, buf, sizeof buf, &n, &e), CR_EINPUT);
		assert_non_null(strstr(e.msg, "too long"));
		cr_err_init(&e);
		assert_int_not_equal(task_registry_resolve(big, canon, sizeof canon, &e), CR_OK);
		(void)task_spec_matches(big, "L1/23_Softmax");
		cr_err_init(&e);
		(void)task_spec_check(big, &e);
	}
}

/* a candidate's @task: the full name only, the message giving it */
static void test_find_exact(void **s)
{
	struct task t;
	struct cr_err e;
	(void)s;
	cr_err_init(&e);
	assert_int_equal(task_registry_find_exact("L1/23_Softmax", &t, &e), CR_OK);
	assert_string_equal(t.name, "L1/23_Softmax");
	task_release(&t);
	cr_err_init(&e);
	assert_int_equal(task_registry_find_exact("L1/softmax", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "unknown task 'L1/softmax'"));
	assert_non_null(strstr(e.msg, "did you mean 'L1/23_Softmax'?"));
	cr_err_init(&e);
	assert_int_equal(task_registry_find_exact("L1/23", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "'L1/23_Softmax'"));
	cr_err_init(&e);
	assert_int_equal(task_registry_find_exact("no/such", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "unknown task 'no/such'"));
	cr_err_init(&e);
	assert_int_equal(task_registry_find_exact("L1/1-10", &t, &e), CR_EINPUT);
	cr_err_init(&e);
	assert_int_equal(task_registry_find_exact("L1/sofmax", &t, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "unknown task 'L1/sofmax'"));
}

/* report and gate filter rows whose names need not be in the registry */
static void test_spec_matches(void **s)
{
	struct cr_err e;
	(void)s;
	assert_true(task_spec_matches(NULL, "L1/23_Softmax"));
	assert_true(task_spec_matches("", "anything"));
	assert_true(task_spec_matches("L1", "L1/23_Softmax"));
	assert_true(task_spec_matches("l1", "L1/23_Softmax"));
	assert_false(task_spec_matches("L", "L1/23_Softmax"));
	assert_false(task_spec_matches("L1", "L10/x"));
	assert_true(task_spec_matches("L1/23_Softmax", "L1/23_Softmax"));
	assert_true(task_spec_matches("L1/23", "L1/23_Softmax"));
	assert_false(task_spec_matches("L1/2", "L1/23_Softmax"));
	assert_false(task_spec_matches("L2/23", "L1/23_Softmax"));
	assert_true(task_spec_matches("L1/softmax", "L1/23_Softmax"));
	assert_true(task_spec_matches("L1/softmax", "L1/softmax")); /* old rows' names */
	assert_false(task_spec_matches("L1/softmax", "L1/24_LogSoftmax"));
	assert_true(task_spec_matches("L1/20-25", "L1/23_Softmax"));
	assert_false(task_spec_matches("L1/24-25", "L1/23_Softmax"));
	assert_false(task_spec_matches("L1/25-20", "L1/23_Softmax"));
	assert_true(task_spec_matches("L2/*conv*", "L2/1_Conv2D_ReLU_BiasAdd"));
	assert_false(task_spec_matches("L2/*conv*", "L1/50_conv_standard_2D__square_input__square_kernel"));
	assert_true(task_spec_matches("*/19_*", "L3/19_MobileNetV1"));
	assert_true(task_spec_matches("smoke, L1/23 ", "L1/23_Softmax"));
	assert_true(task_spec_matches("smoke, L1/23 ", "smoke/relu"));
	assert_false(task_spec_matches("smoke,L1/23", "L2/1_Conv2D_ReLU_BiasAdd"));
	assert_false(task_spec_matches("L1/23", ""));

	cr_err_init(&e);
	assert_int_equal(task_spec_check("L1, L1/23 ,L1/1-10,'L2/*Conv*',L1/softmax,,", &e), CR_OK);
	assert_int_equal(task_spec_check(NULL, &e), CR_OK);
	assert_int_equal(task_spec_check("L1/10-1", &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "bad id range 'L1/10-1'"));
	cr_err_init(&e);
	assert_int_equal(task_spec_check("smoke,L1/1-", &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "bad id range 'L1/1-'"));
	cr_err_init(&e);
	assert_int_equal(task_spec_check("L1//x", &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "task name 'L1//x': expected"));
	cr_err_init(&e);
	assert_int_equal(task_spec_check("L1/a/b", &e), CR_EINPUT);
}

/* ---- a registry of our own (--synthetic) ---- */

static char datadir[128];

static void put(const char *rel, const char *text)
{
	char p[512];
	FILE *f;
	snprintf(p, sizeof p, "%s/tasks/%s", datadir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_synthetic(void **s)
{
	char canon[128];
	struct cr_err e;
	struct task *ts;
	struct task_broken *bad;
	int n, n_bad;
	(void)s;
	/* ids and short names that clash; every file unloadable */
	put("s/1_Foo.json", "{");
	put("s/1_Bar.json", "{");
	put("s/2_Baz_.json", "{");
	put("s/3_baz.json", "{");
	put("s/4_Qux.json", "{");

	cr_err_init(&e);
	assert_int_equal(task_registry_check_ids(&e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "1_Bar.json"));
	assert_non_null(strstr(e.msg, "1_Foo.json"));
	assert_non_null(strstr(e.msg, "s/1 would be ambiguous"));
	expect_error("s/1", "task 's/1' is ambiguous", "s/1_Bar", "s/1_Foo", NULL);
	expect_error("s/baz", "task 's/baz' is ambiguous", "s/2_Baz_", "s/3_baz", NULL);
	cr_err_init(&e);
	assert_int_equal(task_registry_resolve("s/qux", canon, sizeof canon, &e), CR_OK);
	assert_string_equal(canon, "s/4_Qux");
	expect("s/2-3", "s/2_Baz_,s/3_baz");
	/* an empty set */
	expect_error("t", "unknown task set 't'", "no tasks in", NULL);

	/* a range or glob over broken files: each fails only itself */
	cr_err_init(&e);
	assert_int_equal(task_registry_scan("s/2-4", &ts, &n, &bad, &n_bad, &e), CR_OK);
	assert_int_equal(n, 0);
	assert_null(ts); /* none loaded: nothing to free (it leaked) */
	assert_int_equal(n_bad, 3);
	assert_false(bad[0].named || bad[1].named || bad[2].named);
	free(bad);
	cr_err_init(&e);
	assert_int_equal(task_registry_load("s/*Qu*", &ts, &n, &e), CR_OK);
	assert_int_equal(n, 0);
	assert_null(ts);
	/* named by its id or short name, it is the error */
	cr_err_init(&e);
	assert_int_equal(task_registry_scan("s/2-4,s/qux", &ts, &n, &bad, &n_bad, &e), CR_OK);
	assert_int_equal(n_bad, 3);
	assert_null(ts);
	assert_string_equal(bad[2].name, "s/4_Qux");
	assert_true(bad[2].named);
	free(bad);
	cr_err_init(&e);
	assert_int_equal(task_registry_load("s/4", &ts, &n, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "4_Qux.json"));
	assert_null(ts);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_sets_and_full_names),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_every_id_resolves),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_globs),
		cmocka_unit_test(test_short_names),
		cmocka_unit_test(test_dedupe),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_odd_inputs),
		cmocka_unit_test(test_kernelbench_paths),
		cmocka_unit_test(test_find_exact),
		cmocka_unit_test(test_spec_matches),
	};
	const struct CMUnitTest synthetic[] = {
		cmocka_unit_test(test_synthetic),
	};
	char sub[256], cmd[256];
	int rc;

	if (argc < 2 || strcmp(argv[1], "--synthetic"))
		return cmocka_run_group_tests(real, NULL, NULL);
	/* task_datadir reads the variable once: set before any call */
	snprintf(datadir, sizeof datadir, "/tmp/crucible-names-XXXXXX");
	if (!mkdtemp(datadir))
		return 1;
	snprintf(sub, sizeof sub, "%s/tasks/s", datadir);
	snprintf(sub, sizeof sub, "%s/tasks", datadir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof sub, "%s/tasks/s", datadir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof sub, "%s/tasks/t", datadir);
	mkdir(sub, 0755);
	setenv("CRUCIBLE_DATADIR", datadir, 1);
	rc = cmocka_run_group_tests(synthetic, NULL, NULL);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", datadir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
