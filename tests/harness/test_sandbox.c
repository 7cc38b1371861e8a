/* test_sandbox.c — the worker's sandbox layers on this kernel: the probe
 * answers and names every layer; the jail's root is empty (no /proc, no
 * other file); Landlock denies the root directory; a stage-2 filter makes
 * read-only opens fail with EACCES and sched_setaffinity with EPERM; a
 * kernel without namespaces or Landlock is reported as such.
 * Each check runs in a forked child (the layers cannot be undone). A layer
 * the probe says is missing is printed and that test is skipped, never
 * passed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <seccomp.h>

#include "sandbox/jail.h"
#include "sandbox/sandbox.h"

static struct cr_sandbox_layers layers;

static int prctl_nnp(void)
{
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* Runs fn in a child; the child's exit status is the number of the first
 * failed check (0: all passed). */
static int in_child(int (*fn)(void))
{
	int status = 0;
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn());
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_probe_line(void **state)
{
	char line[232];
	int64_t t0 = cr_now_ns();
	(void)state;
	assert_int_equal(cr_sandbox_probe(line, sizeof line), 0);
	printf("# sandbox level here: %s (probe: %.2f ms)\n", line, (double)(cr_now_ns() - t0) / 1e6);
	assert_non_null(strstr(line, layers.seccomp_tsync ? "seccomp allow-list+tsync" : "NO seccomp"));
	assert_non_null(strstr(line, layers.ns ? "user,mount,net,ipc ns" : "NO namespaces"));
	if (cr_landlock_abi() > 0) {
		char ll[32];
		snprintf(ll, sizeof ll, "landlock abi %d", cr_landlock_abi());
		assert_non_null(strstr(line, ll));
	} else {
		assert_non_null(strstr(line, "NO landlock"));
	}
}

static int empty_root(void)
{
	struct cr_err err;
	DIR *d;
	struct dirent *e;
	int n = 0;

	cr_err_init(&err);
	if (cr_jail_unshare(&err) || cr_jail_root(NULL, &err))
		return 1;
	if (access("/proc/self", F_OK) == 0 || errno != ENOENT)
		return 2;
	if (!(d = opendir("/")))
		return 3;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	if (n)
		return 4;
	if (open("/x", O_WRONLY | O_CREAT, 0600) >= 0 || errno != EROFS)
		return 5;
	return 0;
}

static void test_empty_root(void **state)
{
	(void)state;
	if (!layers.empty_root) {
		printf("# no empty root on this kernel: %s\n", layers.why);
		skip();
	}
	assert_int_equal(in_child(empty_root), 0);
}

static int landlock_denies(void)
{
	struct cr_err err;
	cr_err_init(&err);
	if (open("/", O_RDONLY | O_DIRECTORY) < 0)
		return 1; /* readable before */
	if (prctl_nnp())
		return 2;
	if (cr_landlock_restrict(cr_landlock_abi(), NULL, &err))
		return 3;
	if (open("/", O_RDONLY | O_DIRECTORY) >= 0 || errno != EACCES)
		return 4;
	return 0;
}

static void test_landlock(void **state)
{
	(void)state;
	if (!layers.landlock_abi) {
		printf("# no Landlock on this kernel\n");
		skip();
	}
	assert_int_equal(in_child(landlock_denies), 0);
}

static int stage2_errnos(void)
{
	struct cr_err err;
	cpu_set_t set;
	cr_err_init(&err);
	if (cr_sandbox_prepare(2, &err) || cr_sandbox_stage1(2, &err) || cr_sandbox_stage2(2, &err))
		return 1;
	if (open("/", O_RDONLY) >= 0 || errno != EACCES)
		return 2;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof set, &set) == 0 || errno != EPERM)
		return 3;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 1)
		return 4;
	return 0;
}

static void test_stage2_errnos(void **state)
{
	(void)state;
	assert_true(layers.seccomp_tsync);
	assert_int_equal(in_child(stage2_errnos), 0);
}

/* A kernel without user namespaces or Landlock, imitated by a filter that
 * refuses unshare (EPERM) and landlock_create_ruleset (ENOSYS): the probe
 * must name both layers missing, not pass them over. */
static int degraded(void)
{
	struct cr_sandbox_layers l;
	struct cr_err err;
	char line[232];
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	cr_err_init(&err);
	if (!ctx || prctl_nnp() ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(landlock_create_ruleset), 0) ||
	    seccomp_load(ctx))
		return 1;
	if (cr_sandbox_probe_layers(&l, &err))
		return 2;
	if (l.ns || l.empty_root || l.landlock_abi || !l.seccomp_tsync)
		return 3;
	cr_sandbox_level(&l, line, sizeof line);
	if (!strstr(line, "NO namespaces") || !strstr(line, "NO empty root") ||
	    !strstr(line, "NO landlock") || !strstr(line, "seccomp allow-list+tsync"))
		return 4;
	if (!strstr(l.why, "unshare"))
		return 5;
	return 0;
}

static void test_degraded(void **state)
{
	(void)state;
	assert_int_equal(in_child(degraded), 0);
}

int main(void)
{
	struct cr_err err;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_line),
		cmocka_unit_test(test_empty_root),
		cmocka_unit_test(test_landlock),
		cmocka_unit_test(test_stage2_errnos),
		cmocka_unit_test(test_degraded),
	};
	cr_err_init(&err);
	if (cr_sandbox_probe_layers(&layers, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
