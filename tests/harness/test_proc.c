/* test_proc.c — the orchestrator's own defences (sandbox/proc.c),
 * proven directly, without the worker's sandbox in front of them: the
 * shared memory is sealed; a log path planted as a FIFO, a symbolic link
 * or a directory is refused at once (no hang, the link's target intact);
 * SIGPIPE is ignored; a spawned child is PID 1 of its own namespace unless
 * the kernel refused it (the level is printed), and cr_proc_kill leaves
 * none of what it started. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox/proc.h"

static void test_shm_sealed(void **state)
{
	struct cr_proc w;
	struct cr_err err;
	(void)state;
	cr_err_init(&err);
	assert_int_equal(cr_proc_init(&w, 1 << 20, &err), CR_OK);
	int seals = fcntl(w.shm_fd, F_GET_SEALS);
	assert_int_equal(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	errno = 0;
	assert_int_equal(ftruncate(w.shm_fd, 262144), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(w.shm_fd, 2 << 20), -1);
	assert_int_equal(fcntl(w.shm_fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	w.shm[(1 << 20) - 1] = 1; /* still mapped, still writable */
	cr_proc_release(&w);
}

static void test_sigpipe_ignored(void **state)
{
	struct cr_proc w;
	struct cr_err err;
	struct sigaction sa;
	(void)state;
	cr_err_init(&err);
	assert_int_equal(cr_proc_init(&w, 4096 * 64, &err), CR_OK);
	assert_int_equal(sigaction(SIGPIPE, NULL, &sa), 0);
	assert_true(sa.sa_handler == SIG_IGN);
	cr_proc_release(&w);
}

/* kind: 'f' FIFO, 'l' link to a file that must stay intact, 'd' directory */
static void planted(char kind)
{
	char dir[] = "/tmp/crucible-test-proc-XXXXXX", log[128], target[128], detail[300], buf[8];
	struct cr_proc w;
	struct cr_err err;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(log, sizeof log, "%s/worker-cand.log", dir);
	snprintf(target, sizeof target, "%s/precious", dir);
	fd = open(target, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	if (kind == 'f')
		assert_int_equal(mkfifo(log, 0666), 0);
	else if (kind == 'l')
		assert_int_equal(symlink(target, log), 0);
	else
		assert_int_equal(mkdir(log, 0777), 0);
	cr_err_init(&err);
	assert_int_equal(cr_proc_init(&w, 4096 * 64, &err), CR_OK);
	alarm(10); /* a blocking open would hang here: fail instead */
	assert_int_equal(cr_proc_start(&w, "cand", dir, 5, detail, sizeof detail), CR_RUN_SETUP);
	alarm(0);
	assert_non_null(strstr(detail, "worker-cand.log"));
	assert_int_equal(w.pid, -1);  /* nothing was started */
	cr_proc_release(&w);
	fd = open(target, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof buf), 4);
	assert_memory_equal(buf, "keep", 4);
	close(fd);
	unlink(target);
	if (kind == 'd')
		rmdir(log);
	else
		unlink(log);
	rmdir(dir);
}

static void test_planted_fifo(void **state) { (void)state; planted('f'); }
static void test_planted_link(void **state) { (void)state; planted('l'); }
static void test_planted_dir(void **state) { (void)state; planted('d'); }

/* The child starts a grandchild that holds a pipe's write end and sleeps;
 * once cr_proc_kill returns, the read end must see EOF: nobody holds it. */
static void test_spawn_kill_all(void **state)
{
	const char *level = cr_proc_ns_level();
	int p[2], st = 0;
	char c;
	pid_t pid;
	(void)state;
	print_message("spawn level: %s%s%s\n", level, *cr_proc_ns_why() ? ": " : "",
		      cr_proc_ns_why());
	/* the PID 1 check */
	pid = cr_proc_spawn();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(getpid() == 1 ? 0 : 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), strcmp(level, "none") ? 0 : 1);
	/* nothing left */
	assert_int_equal(pipe(p), 0);
	pid = cr_proc_spawn();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (fork() == 0) {
			for (;;)
				pause();
		}
		close(p[1]);
		for (;;)
			pause();
	}
	close(p[1]);
	usleep(100000);
	cr_proc_kill(pid);
	alarm(10);
	assert_int_equal(read(p[0], &c, 1), 0);
	alarm(0);
	close(p[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_sealed),
		cmocka_unit_test(test_sigpipe_ignored),
		cmocka_unit_test(test_planted_fifo),
		cmocka_unit_test(test_planted_link),
		cmocka_unit_test(test_planted_dir),
		cmocka_unit_test(test_spawn_kill_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
