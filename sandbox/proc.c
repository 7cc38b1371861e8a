/* proc.c — spawning and talking to worker processes: each worker is PID 1
 * of fresh PID, network and IPC namespaces (cr_proc_spawn), so killing it
 * kills everything it started; its log is created by root in the root-owned
 * run directory; the shared memory is sealed against resizing. */
#include "sandbox/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sandbox/sandbox.h"

#define LOG_CAP (1 << 20)   /* worker stdout+stderr bytes before SIGXFSZ */

/* ---- spawning in fresh namespaces ---- */

#define NS_FLAGS (CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC)
enum ns_level { NS_UNKNOWN, NS_FULL, NS_USER, NS_NONE };
static enum ns_level ns_level = NS_UNKNOWN;
static char ns_why[160];

/* glibc's setuid family signals every thread the parent had and waits for
 * them: in a child cloned from a multithreaded orchestrator that waits for
 * ever. The raw calls change this thread's credentials, the only thread. */
int cr_proc_drop_to_nobody(void)
{
	if (syscall(SYS_setgroups, 0, NULL) || syscall(SYS_setresgid, 65534, 65534, 65534) ||
	    syscall(SYS_setresuid, 65534, 65534, 65534))
		return -1;
	return 0;
}

/* In a child made with CLONE_NEWUSER: map our own uid and gid onto
 * themselves, so files keep their owner. */
static int map_self(uid_t uid, gid_t gid)
{
	char buf[64];
	int fd, n, rc = 0;
	static const char *files[] = { "/proc/self/setgroups", "/proc/self/uid_map",
				       "/proc/self/gid_map" };
	for (int i = 0; i < 3 && !rc; i++) {
		if (i == 0)
			n = snprintf(buf, sizeof buf, "deny");
		else
			n = snprintf(buf, sizeof buf, "%u %u 1", i == 1 ? (unsigned)uid : (unsigned)gid,
				     i == 1 ? (unsigned)uid : (unsigned)gid);
		fd = open(files[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, buf, (size_t)n) != n)
			rc = -1;
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

static pid_t clone_level(enum ns_level l)
{
	unsigned long flags = SIGCHLD;
	uid_t uid = getuid();
	gid_t gid = getgid();
	pid_t pid;

	if (l == NS_FULL)
		flags |= NS_FLAGS;
	else if (l == NS_USER)
		flags |= NS_FLAGS | CLONE_NEWUSER;
	fflush(NULL);
	/* the raw call with no stack behaves like fork, new namespaces aside */
	pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
	/* the maps are written by the child itself, which must be dumpable
	 * for its /proc files to be its own; it is non-dumpable again before
	 * it does anything else (in that window only a same-uid process that
	 * may ptrace could read this copy of the orchestrator: the workers'
	 * seccomp forbids ptrace) */
	if (pid == 0 && l == NS_USER &&
	    (prctl(PR_SET_DUMPABLE, 1) || map_self(uid, gid) || prctl(PR_SET_DUMPABLE, 0)))
		_exit(79);
	return pid;
}

/* Once: the best level at which a child can be made and set up (a user
 * namespace's maps written); the refusals on the way are kept in ns_why. */
static void probe(void)
{
	static const char *names[] = { "", "PID, network and IPC namespaces",
				       "a user namespace with PID, network and IPC namespaces" };
	char why[2][64] = { "", "" };
	enum ns_level l;
	for (l = NS_FULL; l < NS_NONE; l++) {
		int st = 0;
		pid_t pid = clone_level(l);
		if (pid == 0)
			_exit(0);
		if (pid < 0) {
			snprintf(why[l - 1], sizeof why[0], "%s", strerror(errno));
			continue;
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			break;
		snprintf(why[l - 1], sizeof why[0], "the child's setup failed");
	}
	ns_level = l;
	if (l > NS_FULL)
		snprintf(ns_why, sizeof ns_why, "%s refused (%s)%s%s%s%s", names[1], why[0],
			 l > NS_USER ? "; " : "", l > NS_USER ? names[2] : "",
			 l > NS_USER ? " refused: " : "", l > NS_USER ? why[1] : "");
}

pid_t cr_proc_spawn(void)
{
	if (ns_level == NS_UNKNOWN)
		probe();
	return clone_level(ns_level);
}

const char *cr_proc_ns_level(void)
{
	if (ns_level == NS_UNKNOWN)
		probe();
	switch (ns_level) {
	case NS_FULL: return "pid+net+ipc";
	case NS_USER: return "user+pid+net+ipc";
	case NS_NONE: return "none";
	default: return "unknown";
	}
}

const char *cr_proc_ns_why(void)
{
	return ns_why;
}

/* Kills a spawned child and everything it started, and reaps it (status:
 * its wait status, may be NULL). In a PID namespace the child is its init:
 * when it dies the kernel kills every other process of the namespace, and
 * the child is reaped only after they are all gone. Without one, its
 * process group is killed, while the unreaped leader still reserves the
 * group's id, and again until none is left (a process that left the group
 * with setsid survives: the fallback is weaker, and recorded as such). */
static void reap(pid_t pid, int *status)
{
	int st = 0;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (status)
		*status = st;
	if (ns_level != NS_NONE)
		return;
	for (int i = 0; i < 1000 && kill(-pid, 0) == 0; i++) {
		kill(-pid, SIGKILL);
		usleep(1000);
	}
}

void cr_proc_kill(pid_t pid)
{
	if (pid > 0)
		reap(pid, NULL);
}

/* ---- the shared memory ---- */

enum cr_status cr_proc_init(struct cr_proc *w, size_t shm_size, struct cr_err *err)
{
	/* a worker that dies between calls must cost its candidate a verdict,
	 * not crucible its life: writes to a dead worker's pipe return EPIPE
	 * (handled as a crash in cr_proc_call) instead of raising SIGPIPE.
	 * Children set it back to the default before they exec. */
	signal(SIGPIPE, SIG_IGN);
	memset(w, 0, sizeof *w);
	w->pid = -1;
	w->fault = -1;
	w->cmd_fd = w->rep_fd = w->log_fd = -1;
	w->shm_size = shm_size;
	w->shm_fd = memfd_create("crucible-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (w->shm_fd < 0)
		return cr_errf(err, CR_EENV, "memfd_create: %s", strerror(errno));
	if (ftruncate(w->shm_fd, (off_t)shm_size)) {
		cr_errf(err, CR_ENOMEM, "cannot size shared memory to %zu bytes: %s", shm_size,
			strerror(errno));
		goto fail;
	}
	/* a worker that shrank the region would kill crucible with SIGBUS on
	 * its next access; once sealed, nobody can resize it or lift the seals */
	if (fcntl(w->shm_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		cr_errf(err, CR_EENV, "cannot seal the shared memory: %s", strerror(errno));
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
			reap(w->pid, NULL);
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
			reap(w->pid, &status);
			w->pid = -1;
			describe_exit(status, detail, cap);
			return CR_RUN_CRASH;
		}
		got += (size_t)n;
	}
	if (r->kind == CR_REP_SYSCALL) {
		snprintf(detail, cap, "forbidden system call %s (%d)",
			 cr_sandbox_syscall_name(r->code), r->code);
		reap(w->pid, NULL);
		w->pid = -1;
		return CR_RUN_SYSCALL;
	}
	return CR_RUN_OK;
}

static void child(struct cr_proc *w, int cmd_r, int cmd_w, int rep_w, const char *mode,
		  const char *workdir)
{
	struct rlimit rl;
	char *argv[] = { "crucible", "__worker", (char *)mode, NULL };
	char nthreads[32];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char blas[48];
	/* idle workers must not spin: OpenMP waits passively, OpenBLAS's pool
	 * (linked for the baseline) sleeps at once, and the candidate's worker
	 * gets no OpenBLAS threads at all */
	char libcuda[1100] = "", visible[600] = "", order[80] = "";
	bool cuda = !strcmp(mode, "cuda");
	char *envp[] = { "PATH=/usr/bin:/bin", "OMP_WAIT_POLICY=PASSIVE", nthreads, blas,
			 "OPENBLAS_THREAD_TIMEOUT=4", "LC_ALL=C", NULL, NULL, NULL, NULL };
	int ne = 6;

	/* a cuda worker uses the driver library the orchestrator was told to,
	 * and numbers the devices as the orchestrator does (the launch table
	 * names the device by the driver's ordinal; the worker checks its UUID) */
	if (cuda && getenv("CRUCIBLE_LIBCUDA") && *getenv("CRUCIBLE_LIBCUDA")) {
		snprintf(libcuda, sizeof libcuda, "CRUCIBLE_LIBCUDA=%s", getenv("CRUCIBLE_LIBCUDA"));
		envp[ne++] = libcuda;
	}
	if (cuda && getenv("CUDA_VISIBLE_DEVICES")) {
		snprintf(visible, sizeof visible, "CUDA_VISIBLE_DEVICES=%s", getenv("CUDA_VISIBLE_DEVICES"));
		envp[ne++] = visible;
	}
	if (cuda && getenv("CUDA_DEVICE_ORDER")) {
		snprintf(order, sizeof order, "CUDA_DEVICE_ORDER=%s", getenv("CUDA_DEVICE_ORDER"));
		envp[ne++] = order;
	}

	snprintf(nthreads, sizeof nthreads, "OMP_NUM_THREADS=%ld", ncpu > 0 ? ncpu : 1);
	snprintf(blas, sizeof blas, "OPENBLAS_NUM_THREADS=%ld",
		 1L);
	signal(SIGPIPE, SIG_DFL);
	/* its own group: the kill at release reaches what it started even
	 * where no PID namespace could be made */
	setpgid(0, 0);
	/* only the orchestrator holds the command pipe's write end: its end
	 * hanging up means the orchestrator is gone */
	close(cmd_w);
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
		if (cr_proc_drop_to_nobody())
			_exit(74);
	}
	/* after the uid change, which clears it; then make sure the
	 * orchestrator did not die before it was set */
	struct pollfd pfd = { .fd = 3, .events = POLLIN };
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP)))
		_exit(78);
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
	struct stat sb;
	enum cr_run res;

	/* workdir is root's (harness/verify.c): nothing the candidate runs can
	 * plant a link, FIFO or directory here; the flags are the second line */
	snprintf(w->log_path, sizeof w->log_path, "%s/worker-%s.log", workdir, mode);
	if (w->log_fd >= 0)
		close(w->log_fd);
	w->log_fd = open(w->log_path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			 0644);
	if (w->log_fd < 0 || fstat(w->log_fd, &sb) || !S_ISREG(sb.st_mode)) {
		snprintf(detail, cap, "cannot create %s as a regular file: %s", w->log_path,
			 w->log_fd < 0 ? strerror(errno) : "not a regular file");
		return CR_RUN_SETUP;
	}
	if (pipe2(cp, O_CLOEXEC) || pipe2(rp, O_CLOEXEC)) {
		snprintf(detail, cap, "pipe: %s", strerror(errno));
		return CR_RUN_SETUP;
	}
	w->pid = cr_proc_spawn();
	if (w->pid < 0) {
		snprintf(detail, cap, "clone: %s", strerror(errno));
		close(cp[0]); close(cp[1]); close(rp[0]); close(rp[1]);
		return CR_RUN_SETUP;
	}
	if (w->pid == 0)
		child(w, cp[0], cp[1], rp[1], mode, workdir);
	close(cp[0]);
	close(rp[1]);
	w->cmd_fd = cp[1];
	w->rep_fd = rp[0];
	w->have_cpu_clock = clock_getcpuclockid(w->pid, &w->cpu_clock) == 0;
	res = wait_reply(w, timeout_s, &r, detail, cap);
	w->fault = -1;
	if (res == CR_RUN_OK && r.kind == CR_REP_READY)
		snprintf(w->sandbox, sizeof w->sandbox, "%.*s", (int)sizeof r.msg, r.msg);
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

/* A worker that is PID 1 of its namespace ignores SIGXFSZ (the kernel
 * delivers only SIGKILL and SIGSTOP to a namespace's init by default), so
 * a full log is seen here: at the cap the write failed, and the worker is
 * stopped as if the signal had killed it. */
static bool log_full(struct cr_proc *w, char *detail, size_t cap)
{
	struct stat sb;
	if (w->log_fd < 0 || fstat(w->log_fd, &sb) || sb.st_size < LOG_CAP)
		return false;
	cr_proc_kill(w->pid);
	w->pid = -1;
	snprintf(detail, cap, "killed by signal XFSZ (stdout/stderr reached the %d-byte cap)",
		 LOG_CAP);
	return true;
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
	/* a dead worker: EPIPE here (SIGPIPE is ignored, see cr_proc_init) */
	if (write(w->cmd_fd, &c, sizeof c) != (ssize_t)sizeof c) {
		int status = 0;
		reap(w->pid, &status);
		w->pid = -1;
		describe_exit(status, detail, cap);
		return CR_RUN_CRASH;
	}
	res = wait_reply(w, timeout_s, &r, detail, cap);
	w->sent_ns = t0;
	w->recv_ns = cr_now_ns();
	if (ns)
		*ns = w->recv_ns - t0;
	if (res == CR_RUN_OK && log_full(w, detail, cap))
		return CR_RUN_CRASH;
	if (res == CR_RUN_OK && r.kind == CR_REP_FAULT && r.seq == c.seq) {
		w->fault = r.code;
		w->last = r;
		snprintf(detail, cap, "%.*s", (int)sizeof r.msg, r.msg);
		reap(w->pid, NULL);
		w->pid = -1;
		return CR_RUN_FAULT;
	}
	if (res == CR_RUN_OK)
		w->last = r;
	if (res == CR_RUN_OK && (r.kind != CR_REP_DONE || r.seq != c.seq)) {
		snprintf(detail, cap, "worker protocol error (reply kind %u, seq %u)", r.kind, r.seq);
		reap(w->pid, NULL);
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
	struct stat sb;
	off_t from;
	ssize_t n;

	buf[0] = '\0';
	/* read through root's own descriptor, never by path */
	if (w->log_fd < 0 || fstat(w->log_fd, &sb) || cap < 2)
		return;
	from = sb.st_size > (off_t)cap - 1 ? sb.st_size - (off_t)cap + 1 : 0;
	n = pread(w->log_fd, buf, cap - 1, from);
	buf[n > 0 ? n : 0] = '\0';
}

void cr_proc_release(struct cr_proc *w)
{
	if (w->pid > 0) {
		struct cr_cmd c = { .op = CR_CMD_QUIT };
		if (write(w->cmd_fd, &c, sizeof c) < 0) { /* ignore: EPIPE from a dead worker */ }
		cr_proc_kill(w->pid);
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
