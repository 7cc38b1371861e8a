/* proc.c — spawning and talking to worker processes. */
#include "harness/worker/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness/worker/sandbox.h"

#define LOG_CAP (1 << 20)   /* worker stdout+stderr bytes before SIGXFSZ */

enum cr_status cr_proc_init(struct cr_proc *w, size_t shm_size, struct cr_err *err)
{
	memset(w, 0, sizeof *w);
	w->pid = -1;
	w->fault = -1;
	w->cmd_fd = w->rep_fd = w->log_fd = -1;
	w->shm_size = shm_size;
	w->shm_fd = memfd_create("crucible-shm", MFD_CLOEXEC);
	if (w->shm_fd < 0)
		return cr_errf(err, CR_EENV, "memfd_create: %s", strerror(errno));
	if (ftruncate(w->shm_fd, (off_t)shm_size)) {
		cr_errf(err, CR_ENOMEM, "cannot size shared memory to %zu bytes: %s", shm_size,
			strerror(errno));
		goto fail;
	}
	w->shm = mmap(NULL, shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, w->shm_fd, 0);
	if (w->shm == MAP_FAILED) {
		w->shm = NULL;
		cr_errf(err, CR_ENOMEM, "cannot map %zu bytes of shared memory", shm_size);
		goto fail;
	}
	return CR_OK;
fail:
	close(w->shm_fd);
	w->shm_fd = -1;
	return err->status;
}

static void describe_exit(int status, char *detail, size_t cap)
{
	if (WIFSIGNALED(status))
		snprintf(detail, cap, "killed by signal %s", sigabbrev_np(WTERMSIG(status)) ?
			 sigabbrev_np(WTERMSIG(status)) : "?");
	else if (WIFEXITED(status))
		snprintf(detail, cap, "exited with status %d", WEXITSTATUS(status));
	else
		snprintf(detail, cap, "stopped");
}

/* Reads one reply within the timeout. */
static enum cr_run wait_reply(struct cr_proc *w, double timeout_s, struct cr_reply *r,
			      char *detail, size_t cap)
{
	size_t got = 0;
	int64_t deadline = cr_now_ns() + (int64_t)(timeout_s * 1e9);

	while (got < sizeof *r) {
		struct pollfd pfd = { .fd = w->rep_fd, .events = POLLIN };
		int64_t left = deadline - cr_now_ns();
		int rc;
		if (left <= 0) {
			kill(w->pid, SIGKILL);
			waitpid(w->pid, NULL, 0);
			w->pid = -1;
			snprintf(detail, cap, "no answer within %.1f s (killed)", timeout_s);
			return CR_RUN_TIMEOUT;
		}
		rc = poll(&pfd, 1, (int)(left / 1000000 + 1));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0)
			continue;
		ssize_t n = read(w->rep_fd, (char *)r + got, sizeof *r - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int status = 0;
			waitpid(w->pid, &status, 0);
			w->pid = -1;
			describe_exit(status, detail, cap);
			return CR_RUN_CRASH;
		}
		got += (size_t)n;
	}
	if (r->kind == CR_REP_SYSCALL) {
		snprintf(detail, cap, "forbidden system call %s (%d)",
			 cr_sandbox_syscall_name(r->code), r->code);
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
		w->pid = -1;
		return CR_RUN_SYSCALL;
	}
	return CR_RUN_OK;
}

static void child(struct cr_proc *w, int cmd_r, int rep_w, const char *mode, const char *workdir)
{
	struct rlimit rl;
	char *argv[] = { "crucible", "__worker", (char *)mode, NULL };
	char nthreads[32];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char blas[48];
	/* idle workers must not spin: OpenMP waits passively, OpenBLAS's pool
	 * (linked for the baseline) sleeps at once, and the candidate's worker
	 * gets no OpenBLAS threads at all */
	char libcuda[1100] = "";
	bool cuda = !strcmp(mode, "cuda");
	char *envp[] = { "PATH=/usr/bin:/bin", "OMP_WAIT_POLICY=PASSIVE", nthreads, blas,
			 "OPENBLAS_THREAD_TIMEOUT=4", "LC_ALL=C", NULL, NULL };

	/* a cuda worker uses the driver library the orchestrator was told to */
	if (cuda && getenv("CRUCIBLE_LIBCUDA") && *getenv("CRUCIBLE_LIBCUDA")) {
		snprintf(libcuda, sizeof libcuda, "CRUCIBLE_LIBCUDA=%s", getenv("CRUCIBLE_LIBCUDA"));
		envp[6] = libcuda;
	}

	snprintf(nthreads, sizeof nthreads, "OMP_NUM_THREADS=%ld", ncpu > 0 ? ncpu : 1);
	snprintf(blas, sizeof blas, "OPENBLAS_NUM_THREADS=%ld",
		 1L);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* move every fd above the targets first, so no dup2 clobbers another */
	int hi_cmd = fcntl(cmd_r, F_DUPFD, 100), hi_rep = fcntl(rep_w, F_DUPFD, 100);
	int hi_shm = fcntl(w->shm_fd, F_DUPFD, 100), hi_log = fcntl(w->log_fd, F_DUPFD, 100);
	if (hi_cmd < 0 || hi_rep < 0 || hi_shm < 0 || hi_log < 0 ||
	    dup2(hi_cmd, 3) < 0 || dup2(hi_rep, 4) < 0 || dup2(hi_shm, 5) < 0 ||
	    dup2(hi_log, 1) < 0 || dup2(hi_log, 2) < 0)
		_exit(72);
	for (int fd = 6; fd < 1024; fd++)
		close(fd);
	int nul = open("/dev/null", O_RDONLY);
	if (nul >= 0) {
		dup2(nul, 0);
		close(nul);
	}
	if (chdir(workdir))
		_exit(73);
	/* opened before dropping privileges: the binary may sit under a
	 * directory the unprivileged uid cannot traverse */
	int exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (exe < 0)
		_exit(76);
	/* never run a candidate as root: a different uid cannot read the
	 * orchestrator's memory or environment through /proc */
	if (!strcmp(mode, "cand") && (getuid() == 0 || geteuid() == 0)) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(74);
	}
	rl.rlim_cur = rl.rlim_max = 0;
	setrlimit(RLIMIT_CORE, &rl);
	rl.rlim_cur = rl.rlim_max = LOG_CAP;
	setrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = rl.rlim_max = 600;
	setrlimit(RLIMIT_CPU, &rl);
#ifndef __SANITIZE_ADDRESS__
	/* (a sanitizer build reserves terabytes of shadow memory, and the CUDA
	 * driver reserves a unified address space: no AS limit for either) */
	rl.rlim_cur = rl.rlim_max = (rlim_t)w->shm_size + (4ull << 30);
	if (!cuda)
		setrlimit(RLIMIT_AS, &rl);
#endif
	/* the driver opens its device nodes, CUPTI and cuBLAS their own files */
	rl.rlim_cur = rl.rlim_max = cuda ? 1024 : 64;
	setrlimit(RLIMIT_NOFILE, &rl);
	/* the driver (and the test suite's emulated one) starts threads */
	rl.rlim_cur = rl.rlim_max = cuda ? 4096 : 512;
	setrlimit(RLIMIT_NPROC, &rl);
	fexecve(exe, argv, envp);
	_exit(75);
}

enum cr_run cr_proc_start(struct cr_proc *w, const char *mode, const char *workdir,
			  double timeout_s, char *detail, size_t cap)
{
	int cp[2], rp[2];
	struct cr_reply r;
	enum cr_run res;

	snprintf(w->log_path, sizeof w->log_path, "%s/worker-%s.log", workdir, mode);
	w->log_fd = open(w->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->log_fd < 0) {
		snprintf(detail, cap, "cannot create %s: %s", w->log_path, strerror(errno));
		return CR_RUN_SETUP;
	}
	if (pipe2(cp, O_CLOEXEC) || pipe2(rp, O_CLOEXEC)) {
		snprintf(detail, cap, "pipe: %s", strerror(errno));
		return CR_RUN_SETUP;
	}
	fflush(NULL);
	w->pid = fork();
	if (w->pid < 0) {
		snprintf(detail, cap, "fork: %s", strerror(errno));
		close(cp[0]); close(cp[1]); close(rp[0]); close(rp[1]);
		return CR_RUN_SETUP;
	}
	if (w->pid == 0)
		child(w, cp[0], rp[1], mode, workdir);
	close(cp[0]);
	close(rp[1]);
	w->cmd_fd = cp[1];
	w->rep_fd = rp[0];
	w->have_cpu_clock = clock_getcpuclockid(w->pid, &w->cpu_clock) == 0;
	res = wait_reply(w, timeout_s, &r, detail, cap);
	w->fault = -1;
	if (res == CR_RUN_OK && r.kind != CR_REP_READY) {
		w->fault = r.kind == CR_REP_FAIL ? r.code : -1;
		snprintf(detail, cap, "worker setup failed: %.*s", (int)sizeof r.msg, r.msg);
		return CR_RUN_SETUP;
	}
	if (res == CR_RUN_CRASH) {
		char tmp[256];
		snprintf(tmp, sizeof tmp, "%s", detail);
		snprintf(detail, cap, "worker died while loading the candidate: %s", tmp);
	}
	return res;
}

enum cr_run cr_proc_call(struct cr_proc *w, enum cr_cmd_op op, uint32_t set,
			 double timeout_s, int64_t *ns, char *detail, size_t cap)
{
	struct cr_cmd c = { .op = (uint32_t)op, .set = set, .seq = ++w->seq };
	struct cr_reply r;
	enum cr_run res;
	int64_t t0;

	if (w->pid < 0) {
		snprintf(detail, cap, "worker is not running");
		return CR_RUN_CRASH;
	}
	t0 = cr_now_ns();
	if (write(w->cmd_fd, &c, sizeof c) != (ssize_t)sizeof c) {
		int status = 0;
		waitpid(w->pid, &status, 0);
		w->pid = -1;
		describe_exit(status, detail, cap);
		return CR_RUN_CRASH;
	}
	res = wait_reply(w, timeout_s, &r, detail, cap);
	if (ns)
		*ns = cr_now_ns() - t0;
	if (res == CR_RUN_OK && r.kind == CR_REP_FAULT && r.seq == c.seq) {
		w->fault = r.code;
		w->last = r;
		snprintf(detail, cap, "%.*s", (int)sizeof r.msg, r.msg);
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
		w->pid = -1;
		return CR_RUN_FAULT;
	}
	if (res == CR_RUN_OK)
		w->last = r;
	if (res == CR_RUN_OK && (r.kind != CR_REP_DONE || r.seq != c.seq)) {
		snprintf(detail, cap, "worker protocol error (reply kind %u, seq %u)", r.kind, r.seq);
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
		w->pid = -1;
		return CR_RUN_CRASH;
	}
	return res;
}

void cr_proc_freeze(struct cr_proc *w)
{
	int status;
	if (w->pid <= 0 || kill(w->pid, SIGSTOP))
		return;
	while (waitpid(w->pid, &status, WUNTRACED) < 0 && errno == EINTR)
		;
}

void cr_proc_thaw(struct cr_proc *w)
{
	if (w->pid > 0)
		kill(w->pid, SIGCONT);
}

int64_t cr_proc_cpu_ns(struct cr_proc *w)
{
	struct timespec ts;
	if (w->pid < 0 || !w->have_cpu_clock || clock_gettime(w->cpu_clock, &ts))
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void cr_proc_log_tail(struct cr_proc *w, char *buf, size_t cap)
{
	FILE *f;
	long sz;
	size_t n;

	buf[0] = '\0';
	if (!w->log_path[0] || !(f = fopen(w->log_path, "rb")))
		return;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, sz > (long)cap - 1 ? sz - (long)cap + 1 : 0, SEEK_SET);
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

void cr_proc_release(struct cr_proc *w)
{
	if (w->pid > 0) {
		struct cr_cmd c = { .op = CR_CMD_QUIT };
		if (write(w->cmd_fd, &c, sizeof c) < 0) { /* ignore */ }
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
	}
	w->pid = -1;
	if (w->cmd_fd >= 0) close(w->cmd_fd);
	if (w->rep_fd >= 0) close(w->rep_fd);
	if (w->log_fd >= 0) close(w->log_fd);
	if (w->shm) munmap(w->shm, w->shm_size);
	if (w->shm_fd >= 0) close(w->shm_fd);
	w->cmd_fd = w->rep_fd = w->log_fd = w->shm_fd = -1;
	w->shm = NULL;
}
