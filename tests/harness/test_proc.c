/* test_proc.c — the orchestrator's own defences (sandbox/proc.c),
 * proven directly, without the worker's sandbox in front of them: the
 * shared memory is sealed; a log path planted as a FIFO, a symbolic link
 * or a directory is refused at once (no hang, the link's target intact);
 * SIGPIPE is ignored; a spawned child is PID 1 of its own namespace unless
 * the kernel refused it (the level is printed), and cr_proc_kill leaves
 * none of what it started. And the worker's container (sandbox/cgroup.c):
 * a freeze that a thread sending itself SIGCONT in a loop cannot cancel,
 * that reaches a thread waiting in vfork, with CPU that stops counting
 * while frozen; a task quota of the group's own. */
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

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "sandbox/cgroup.h"
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
	/* the run directory is root's: a planted log is the host's problem, retried then reported as such */
	assert_int_equal(cr_proc_start(&w, "cand", dir, 5, detail, sizeof detail), CR_RUN_ENV);
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

/* ---- the container ---- */

static volatile unsigned long *counter; /* shared with the child */

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static void *sigcont_loop(void *p)
{
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	(void)p;
	for (;;) {
		syscall(SYS_tgkill, pid, tid, SIGCONT);
		counter[0]++;
	}
	return NULL;
}

static char vstack[1 << 16] __attribute__((aligned(16)));

static int vspin(void *p)
{
	(void)p;
	for (;;)
		counter[1]++;
	return 0;
}

static void *vfork_blocker(void *p)
{
	(void)p;
	clone(vspin, vstack + sizeof vstack, CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_VFORK, NULL);
	return NULL;
}

static void *idle_thread(void *p)
{
	(void)p;
	for (;;)
		sleep_ms(1000);
	return NULL;
}

/* A child in g doing what kind says: 's' SIGCONT loop, 'v' a thread
 * blocked in vfork whose child spins, 'p' as many threads as it can (the
 * count in counter[2]). */
static pid_t group_child(struct cr_cg *g, char kind)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;
		if (cr_cg_enter(g))
			_exit(3);
		if (kind == 's')
			pthread_create(&t, NULL, sigcont_loop, NULL);
		else if (kind == 'v')
			pthread_create(&t, NULL, vfork_blocker, NULL);
		else
			while (counter[2] < 1000 && !pthread_create(&t, NULL, idle_thread, NULL))
				counter[2]++;
		counter[3] = 1;
		for (;;)
			sleep_ms(1000);
	}
	return pid;
}

static void frozen_holds(char kind, int idx)
{
	struct cr_cg g;
	pid_t pid;
	unsigned long a, b;
	int64_t c0, c1;

	if (!cr_cg_available())
		skip(); /* prints; cr_cg_mode() says why, on stdout below */
	counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(counter != MAP_FAILED);
	assert_int_equal(cr_cg_create(&g, "test", 64, 0), 0);
	pid = group_child(&g, kind);
	for (int i = 0; i < 2000 && counter[idx] < 1000; i++)
		sleep_ms(1);
	assert_true(counter[idx] >= 1000); /* it runs */
	assert_int_equal(cr_cg_freeze(&g, 2000000000LL), 0);
	a = counter[idx];
	/* the group's CPU time can be charged a little after the freeze (the
	 * slice that was running, a lagging stat flush on a loaded host): let
	 * it settle, two reads 20 ms apart alike, before the window */
	c0 = cr_cg_cpu_ns(&g);
	for (int i = 0; i < 100; i++) {
		int64_t c;

		sleep_ms(20);
		c = cr_cg_cpu_ns(&g);
		if (c == c0)
			break;
		c0 = c;
	}
	sleep_ms(100);
	b = counter[idx];
	c1 = cr_cg_cpu_ns(&g);
	assert_true(a == b);           /* nothing ran while frozen */
	assert_true(c0 >= 0 && c1 == c0); /* nor used CPU */
	cr_cg_thaw(&g);
	sleep_ms(50);
	assert_true(counter[idx] > b); /* and it runs again once thawed */
	cr_cg_destroy(&g);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	munmap((void *)counter, 4096);
}

static void test_cg_freeze_beats_sigcont(void **state)
{
	(void)state;
	printf("containment: %s\n", cr_cg_mode());
	frozen_holds('s', 0);
}

static void test_cg_freeze_reaches_vfork(void **state)
{
	(void)state;
	frozen_holds('v', 1);
}

/* pids.max is the group's own: 64 tasks, whatever the uid's other
 * processes on the machine */
static void test_cg_pids_quota(void **state)
{
	struct cr_cg g;
	pid_t pid;
	(void)state;
	if (!cr_cg_available())
		skip();
	assert_int_equal(cr_cg_create(&g, "test", 64, 0), 0);
	if (!g.pids_dir[0]) {
		cr_cg_destroy(&g);
		skip(); /* no pids controller: the worker falls back to RLIMIT_NPROC (cr_cg_mode) */
	}
	counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(counter != MAP_FAILED);
	pid = group_child(&g, 'p');
	for (int i = 0; i < 5000 && !counter[3]; i++)
		sleep_ms(1);
	assert_true(counter[3]);
	assert_true(counter[2] >= 50 && counter[2] < 64); /* the child itself is one task */
	assert_true(cr_cg_tasks(&g) <= 64);
	cr_cg_destroy(&g);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	munmap((void *)counter, 4096);
}

/* The quota fits the host: crucible in a pids group of 1400 tasks, six
 * workers at once get at most half of 1399 / 7 each (the other half left
 * to runs beside it); twelve would get fewer than 64, and the plan
 * refuses. */
static void test_cg_plan_fits_host(void **state)
{
	char base[512] = "", grp[600], line[600];
	FILE *f;
	pid_t pid;
	int st;
	(void)state;
	if (!cr_cg_available())
		skip();
	f = fopen("/proc/self/cgroup", "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		char *c = strstr(line, ":pids:");
		if (c) {
			c[strcspn(c, "\n")] = 0;
			snprintf(base, sizeof base, "/sys/fs/cgroup/pids%s", strcmp(c + 6, "/") ? c + 6 : "");
		}
	}
	fclose(f);
	if (!base[0])
		skip(); /* no v1 pids hierarchy here */
	snprintf(grp, sizeof grp, "%s/crucible-test-plan-%d", base, (int)getpid());
	assert_int_equal(mkdir(grp, 0700), 0);
	snprintf(line, sizeof line, "%s/pids.max", grp);
	f = fopen(line, "w");
	assert_non_null(f);
	fputs("1400", f);
	fclose(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long q6, q12, quota6;
		snprintf(line, sizeof line, "%s/cgroup.procs", grp);
		f = fopen(line, "w");
		if (!f || fputs("0", f) < 0 || fclose(f))
			_exit(3);
		q6 = cr_cg_plan(6);
		quota6 = cr_cg_quota(false);
		q12 = cr_cg_plan(12);
		if (!(q6 >= 64 && q6 <= 1399 / 14 && quota6 == q6 && q12 == -1))
			fprintf(stderr, "plan(6) %ld, quota %ld, plan(12) %ld\n", q6, quota6, q12);
		_exit(q6 >= 64 && q6 <= 1399 / 14 && quota6 == q6 && q12 == -1 ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	rmdir(grp);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
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
		cmocka_unit_test(test_cg_freeze_beats_sigcont),
		cmocka_unit_test(test_cg_freeze_reaches_vfork),
		cmocka_unit_test(test_cg_pids_quota),
		cmocka_unit_test(test_cg_plan_fits_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
