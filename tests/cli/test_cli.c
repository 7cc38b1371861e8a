/* test_cli.c — the shared command layer's words (common/cr_cli.c): git's
 * "did you mean" (cr_cli_suggest) and cr_cli_getopt's one wording for an
 * unknown option, an ambiguous prefix, a missing value, a value given to a
 * flag, each followed by the --help hint; and what it returns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cr_cli.h"

static const char *const commands[] = { "list", "check", "eval", "merge", "report", "gate",
					"lint", "dump", "decode", "generate", "run" };
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void test_suggest(void **state)
{
	(void)state;
	assert_string_equal(cr_cli_suggest("evl", commands, N_COMMANDS), "eval");
	assert_string_equal(cr_cli_suggest("eavl", commands, N_COMMANDS), "eval"); /* a transposition */
	assert_string_equal(cr_cli_suggest("lst", commands, N_COMMANDS), "list");
	assert_string_equal(cr_cli_suggest("genrate", commands, N_COMMANDS), "generate");
	assert_string_equal(cr_cli_suggest("EVAL", commands, N_COMMANDS), "eval"); /* case ignored */
	assert_string_equal(cr_cli_suggest("Lsit", commands, N_COMMANDS), "list");
	assert_string_equal(cr_cli_suggest("gen", commands, N_COMMANDS), "generate"); /* a prefix */
	/* nothing near: no guess */
	assert_null(cr_cli_suggest("frobnicate", commands, N_COMMANDS));
	assert_null(cr_cli_suggest("", commands, N_COMMANDS));
	assert_null(cr_cli_suggest("x", commands, N_COMMANDS));
}

/* Runs cr_cli_getopt over argv to its end; returns what it printed on
 * stderr (malloc'd) and sets *last to the last non -1 return. */
static char *getopt_said(char **argv, int argc, const char *shortopts, const struct option *lo, int *last)
{
	char path[] = "/tmp/crucible-test-cli-XXXXXX";
	int fd = mkstemp(path), saved, c;
	FILE *f;
	char *buf = calloc(1, 4096);

	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	optind = 1;
	*last = 0;
	while ((c = cr_cli_getopt(argv[0], argc, argv, shortopts, lo)) != -1) {
		*last = c;
		if (c == '?')
			break;
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(fd, "r");
	rewind(f);
	size_t n = fread(buf, 1, 4095, f);
	buf[n] = '\0';
	fclose(f);
	unlink(path);
	return buf;
}

static const struct option lo[] = { { "out", required_argument, 0, 'o' },
				    { "outline", no_argument, 0, 'L' },
				    { "json", no_argument, 0, 'j' },
				    { "tasks", required_argument, 0, 't' },
				    { "task", required_argument, 0, 'T' },
				    { "help", no_argument, 0, 'h' },
				    { 0, 0, 0, 0 } };

static void expect(const char *const *args, int n, int want_rc, const char *want)
{
	char *argv[8];
	int rc;
	char *said;

	for (int i = 0; i < n; i++)
		argv[i] = (char *)args[i];
	argv[n] = NULL;
	said = getopt_said(argv, n, "hj", lo, &rc);
	if (rc != want_rc)
		fail_msg("%s: returned %d, want %d (%s)", args[n - 1], rc, want_rc, said);
	if (want && !strstr(said, want))
		fail_msg("%s: \"%s\" not in \"%s\"", args[n - 1], want, said);
	if (want_rc == '?' && !strstr(said, "Try 'crucible dump --help'.\n"))
		fail_msg("%s: no --help hint in \"%s\"", args[n - 1], said);
	if (want_rc != '?' && said[0])
		fail_msg("%s: said \"%s\" on a good option", args[n - 1], said);
	free(said);
}

static void test_getopt_wording(void **state)
{
	(void)state;
	expect((const char *[]){ "dump", "--outt", "x" }, 3, '?',
	       "crucible dump: unknown option '--outt' (did you mean '--out'?)\n");
	expect((const char *[]){ "dump", "--frobnicate=3" }, 2, '?',
	       "crucible dump: unknown option '--frobnicate=3'\n");
	expect((const char *[]){ "dump", "-x" }, 2, '?', "crucible dump: unknown option '-x'\n");
	expect((const char *[]){ "dump", "--out" }, 2, '?', "crucible dump: option '--out' needs a value\n");
	expect((const char *[]){ "dump", "--json=1" }, 2, '?', "crucible dump: option '--json' takes no value\n");
	/* a prefix of two options: ambiguous, said as such */
	expect((const char *[]){ "dump", "--ta", "L1" }, 3, '?', "crucible dump: option '--ta' is ambiguous");
	/* good ones: getopt_long's own return, nothing said */
	expect((const char *[]){ "dump", "--out", "x" }, 3, 'o', NULL);
	expect((const char *[]){ "dump", "--out=x" }, 2, 'o', NULL);
	expect((const char *[]){ "dump", "--js" }, 2, 'j', NULL); /* a unique prefix */
	expect((const char *[]){ "dump", "-h" }, 2, 'h', NULL);
	expect((const char *[]){ "dump", "--tasks", "L1" }, 3, 't', NULL);
	expect((const char *[]){ "dump", "--task", "L1" }, 3, 'T', NULL);
}

/* cr_cli_usage: the message, then the hint, and CR_EXIT_USAGE. */
static void test_usage(void **state)
{
	char path[] = "/tmp/crucible-test-cli-XXXXXX";
	int fd = mkstemp(path), saved, rc;
	char buf[512];
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	rc = cr_cli_usage("lint", "unexpected argument '%s'", "L1");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_int_equal(rc, CR_EXIT_USAGE);
	n = pread(fd, buf, sizeof buf - 1, 0);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "crucible lint: unexpected argument 'L1'\nTry 'crucible lint --help'.\n");
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_getopt_wording),
		cmocka_unit_test(test_usage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
