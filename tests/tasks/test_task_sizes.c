/* test_task_sizes.c — issue 30: task dims that overflow or outgrow the size
 * caps (SPEC §2) are load errors naming the file and the field, never a
 * wrapped count (a heap write past a buffer, a division by zero); and a
 * broken task file fails only itself, not its set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tasks/task_exec.h"
#include "tasks/task_registry.h"

static char datadir[64];

/* softmax over [B, D]; %s: the bench dims, then the check dims */
static const char *softmax_fmt =
	"{\"dims\": %s, \"cpu_dims\": {\"B\": 4, \"D\": 8},"
	" \"check_dims\": [{\"B\": 1, \"D\": 1}, {\"B\": 3, \"D\": 7}, %s],"
	" \"tensors\": {\"x\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"B\", \"D\"], \"init\": \"normal\"},"
	" \"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"B\", \"D\"]}},"
	" \"graph\": [{\"op\": \"softmax\", \"in\": [\"x\"], \"out\": [\"y\"], \"dim\": -1}]}";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Loads text as a task file; returns the status, the message in msg. */
static enum cr_status load_text(const char *text, char *msg, size_t cap, char *path, size_t pcap)
{
	struct task t;
	struct cr_err e;
	enum cr_status st;
	snprintf(path, pcap, "%s/one.json", datadir);
	write_file(path, text);
	cr_err_init(&e);
	st = task_load(&t, path, "test/one", &e);
	snprintf(msg, cap, "%s", e.msg);
	if (st == CR_OK)
		task_release(&t);
	unlink(path);
	return st;
}

static void expect_load_error(const char *text, const char *n1, const char *n2)
{
	char msg[1024], path[256];
	assert_int_equal(load_text(text, msg, sizeof msg, path, sizeof path), CR_EINPUT);
	if (!strstr(msg, path) || !strstr(msg, n1) || (n2 && !strstr(msg, n2)))
		fail_msg("message '%s' lacks the file, '%s' or '%s'", msg, n1, n2 ? n2 : "");
}

static void test_numel_overflow(void **s)
{
	char text[4096];
	(void)s;
	/* 2^62 x 4 wraps to 0 in int64: a zero-sized buffer, written past */
	snprintf(text, sizeof text, softmax_fmt, "{\"B\": 4611686018427387904, \"D\": 4}",
		 "{\"B\": 7, \"D\": 33}");
	expect_load_error(text, "dims.B", NULL);
	/* each dim within the cap, their product 2^66: wraps to 4 */
	snprintf(text, sizeof text, softmax_fmt, "{\"B\": 8589934592, \"D\": 8589934592}",
		 "{\"B\": 7, \"D\": 33}");
	expect_load_error(text, "tensors.x.shape", "dims");
	/* a literal extent over the cap */
	snprintf(text, sizeof text, softmax_fmt, "{\"B\": 4, \"D\": 8}", "{\"B\": 7, \"D\": 33}");
	{
		char *p = strstr(text, "[\"B\", \"D\"], \"init\"");
		char t2[4096];
		assert_non_null(p);
		snprintf(t2, sizeof t2, "%.*s[\"B\", 36028797018963968], \"init\"%s", (int)(p - text), text,
			 p + strlen("[\"B\", \"D\"], \"init\""));
		expect_load_error(t2, "tensors.x.shape[1]", NULL);
	}
}

static void test_check_dims_cap(void **s)
{
	char text[4096];
	(void)s;
	/* 2^31 x 8 elements on a check shape: the reference would ask for
	 * 2 x 128 GiB in double */
	snprintf(text, sizeof text, softmax_fmt, "{\"B\": 4, \"D\": 8}",
		 "{\"B\": 2147483648, \"D\": 8}");
	expect_load_error(text, "check_dims[2]", "cap");
	/* the same at the bench shape is within the per-value cap: loads */
	{
		char msg[1024], path[256];
		snprintf(text, sizeof text, softmax_fmt, "{\"B\": 2147483648, \"D\": 4}",
			 "{\"B\": 7, \"D\": 33}");
		assert_int_equal(load_text(text, msg, sizeof msg, path, sizeof path), CR_OK);
	}
}

/* gru over x [T, B, I]: T·B wrapped to 0 once divided by zero (SIGFPE) */
static void test_rnn_tb_overflow(void **s)
{
	static const char *fmt =
		"{\"dims\": %s, \"cpu_dims\": {\"T\": 3, \"B\": 2, \"I\": 4, \"H\": 5},"
		" \"check_dims\": [{\"T\": 1, \"B\": 1, \"I\": 1, \"H\": 1}, {\"T\": 2, \"B\": 3, \"I\": 2, \"H\": 2},"
		" {\"T\": 3, \"B\": 2, \"I\": 4, \"H\": 5}],"
		" \"tensors\": {\"x\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"T\", \"B\", \"I\"], \"init\": \"normal\"},"
		" \"h0\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [1, \"B\", \"H\"], \"init\": \"normal\"},"
		" \"w_ih\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [3, \"H\", \"I\"], \"init\": \"kaiming(H)\"},"
		" \"w_hh\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [3, \"H\", \"H\"], \"init\": \"kaiming(H)\"},"
		" \"b_ih\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [3, \"H\"], \"init\": \"kaiming(H)\"},"
		" \"b_hh\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [3, \"H\"], \"init\": \"kaiming(H)\"},"
		" \"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"T\", \"B\", \"H\"]}},"
		" \"graph\": [{\"op\": \"gru\", \"in\": [\"x\", \"h0\", \"w_ih\", \"w_hh\", \"b_ih\", \"b_hh\"],"
		" \"out\": [\"y\", \"hn\"], \"index\": 0}]}";
	char text[8192], msg[1024], path[256];
	(void)s;
	snprintf(text, sizeof text, fmt, "{\"T\": 3, \"B\": 2, \"I\": 4, \"H\": 5}");
	assert_int_equal(load_text(text, msg, sizeof msg, path, sizeof path), CR_OK);
	snprintf(text, sizeof text, fmt, "{\"T\": 4294967296, \"B\": 4294967296, \"I\": 1, \"H\": 1}");
	expect_load_error(text, "tensors.x.shape", "dims");
}

/* conv/pool geometry from attributes: a padding of 2^62 wrapped 2p */
static void test_geometry_overflow(void **s)
{
	static const char *fmt =
		"{\"dims\": {\"N\": 1, \"C\": 2, \"L\": %s}, \"cpu_dims\": {\"N\": 1, \"C\": 2, \"L\": 9},"
		" \"check_dims\": [{\"N\": 1, \"C\": 2, \"L\": 9}, {\"N\": 2, \"C\": 2, \"L\": 9}, {\"N\": 3, \"C\": 2, \"L\": 9}],"
		" \"tensors\": {\"x\": {\"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"N\", \"C\", \"L\"], \"init\": \"normal\"},"
		" \"w\": {\"role\": \"param\", \"dtype\": \"f32\", \"shape\": [\"C\", \"C\", 3], \"init\": \"kaiming\"},"
		" \"y\": {\"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"N\", \"C\", %s]}},"
		" \"graph\": [{\"op\": \"%s\", \"in\": [\"x\", \"w\"], \"out\": [\"y\"], %s}]}";
	char text[4096], msg[1024], path[256];
	(void)s;
	snprintf(text, sizeof text, fmt, "9", "9", "conv", "\"padding\": 1");
	assert_int_equal(load_text(text, msg, sizeof msg, path, sizeof path), CR_OK);
	snprintf(text, sizeof text, fmt, "9", "9", "conv", "\"padding\": 4611686018427387904");
	expect_load_error(text, "graph[0] (conv)", "padding");
	/* (L - 1) stride = 2^30 · 2^34: past int64 */
	snprintf(text, sizeof text, fmt, "1073741825", "9", "conv_transpose", "\"stride\": 17179869184");
	expect_load_error(text, "graph[0] (conv_transpose)", NULL);
}

/* A set with one broken file: the rest loads, the broken one is reported,
 * naming it fails. */
static void test_registry_one_bad_file(void **s)
{
	char path[256], text[4096];
	struct task *ts = NULL;
	struct task_broken *bad = NULL;
	int n = 0, n_bad = 0;
	struct cr_err e;
	(void)s;
	snprintf(text, sizeof text, softmax_fmt, "{\"B\": 4, \"D\": 8}", "{\"B\": 7, \"D\": 33}");
	snprintf(path, sizeof path, "%s/tasks/s/a_good.json", datadir);
	write_file(path, text);
	snprintf(path, sizeof path, "%s/tasks/s/c_good.json", datadir);
	write_file(path, text);
	snprintf(text, sizeof text, softmax_fmt, "{\"B\": 4611686018427387904, \"D\": 4}",
		 "{\"B\": 7, \"D\": 33}");
	snprintf(path, sizeof path, "%s/tasks/s/b_bad.json", datadir);
	write_file(path, text);
	/* a file every loader refused: it used to fail the whole set */
	snprintf(path, sizeof path, "%s/tasks/s/d_syntax.json", datadir);
	write_file(path, "{\"dims\": ");

	cr_err_init(&e);
	assert_int_equal(task_registry_load("s", &ts, &n, &e), CR_OK);
	assert_int_equal(n, 2);
	assert_string_equal(ts[0].name, "s/a_good");
	assert_string_equal(ts[1].name, "s/c_good");
	task_list_free(ts, n);

	assert_int_equal(task_registry_scan(NULL, &ts, &n, &bad, &n_bad, &e), CR_OK);
	assert_int_equal(n, 2);
	assert_int_equal(n_bad, 2);
	assert_string_equal(bad[0].name, "s/b_bad");
	assert_string_equal(bad[1].name, "s/d_syntax");
	assert_non_null(strstr(bad[1].msg, "d_syntax.json"));
	assert_false(bad[0].named);
	assert_non_null(strstr(bad[0].msg, "b_bad.json"));
	assert_non_null(strstr(bad[0].msg, "dims.B"));
	task_list_free(ts, n);
	free(bad);

	/* named, it is the error */
	cr_err_init(&e);
	assert_int_equal(task_registry_load("s/b_bad", &ts, &n, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "b_bad.json"));
	assert_null(ts);
	cr_err_init(&e);
	assert_int_equal(task_registry_load("s,s/b_bad", &ts, &n, &e), CR_EINPUT);
	assert_null(ts);
	/* an unknown task is still an error, not a broken row */
	cr_err_init(&e);
	assert_int_equal(task_registry_scan("s/nope", &ts, &n, &bad, &n_bad, &e), CR_EINPUT);
}

/* The executor on a dim set from outside the file (`--dims`, a drawn
 * shape) checks it the same way, before allocating. */
static void test_exec_checks_dims(void **s)
{
	char path[256], text[4096];
	struct task t;
	struct task_exec x;
	struct task_dimset d;
	struct cr_err e;
	(void)s;
	snprintf(text, sizeof text, softmax_fmt, "{\"B\": 4, \"D\": 8}", "{\"B\": 7, \"D\": 33}");
	snprintf(path, sizeof path, "%s/ex.json", datadir);
	write_file(path, text);
	cr_err_init(&e);
	assert_int_equal(task_load(&t, path, "test/ex", &e), CR_OK);
	d = t.checks[0];
	d.v[0] = (int64_t)1 << 62; /* B */
	assert_int_equal(task_exec_init(&x, &t, &d, true, false, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "B"));
	d.v[0] = (int64_t)1 << 33;
	d.v[1] = (int64_t)1 << 33;
	cr_err_init(&e);
	assert_int_equal(task_check_dims(&t, &d, "--dims", true, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "tensors.x.shape"));
	assert_non_null(strstr(e.msg, "--dims"));
	task_release(&t);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numel_overflow),
		cmocka_unit_test(test_check_dims_cap),
		cmocka_unit_test(test_rnn_tb_overflow),
		cmocka_unit_test(test_geometry_overflow),
		cmocka_unit_test(test_registry_one_bad_file),
		cmocka_unit_test(test_exec_checks_dims),
	};
	char sub[128];
	int rc;

	/* a registry of our own: task_datadir reads the variable once */
	snprintf(datadir, sizeof datadir, "/tmp/crucible-sizes-XXXXXX");
	if (!mkdtemp(datadir))
		return 1;
	snprintf(sub, sizeof sub, "%s/tasks", datadir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof sub, "%s/tasks/s", datadir);
	mkdir(sub, 0755);
	setenv("CRUCIBLE_DATADIR", datadir, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	{
		char cmd[256];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", datadir);
		if (system(cmd) != 0)
			rc = rc ? rc : 1;
	}
	return rc;
}
