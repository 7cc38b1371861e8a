/* proc.c — spawning and talking to worker processes: each worker is PID 1
 * of fresh PID, network, IPC and UTS namespaces (cr_proc_spawn) and alone in
 * a control group of its own (cgroup.c), so freezing, killing and counting
 * CPU reach everything it started; every signal and wait goes through its
 * pidfd, and every wait is bounded; its log is created by root in the
 * root-owned run directory; the shared memory is sealed against resizing.
 * Nothing the worker says decides anything but that a call is over: the
 * confinement is read from /proc, the CPU from the group, the time from
 * this side's clock. */
#include "sandbox/proc.h"

#include <dirent.h>
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
#include "common/cr_verdict.h"
#include "sandbox/sandbox.h"

#define LOG_CAP (1 << 20)   /* worker stdout+stderr bytes before SIGXFSZ */

/* ---- spawning in fresh namespaces ---- */

#define NS_FLAGS (CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
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
	static const char *names[] = { "", "PID, network, IPC and UTS namespaces",
				       "a user namespace with PID, network, IPC and UTS namespaces" };
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
	case NS_FULL: return "pid+net+ipc+uts";
	case NS_USER: return "user+pid+net+ipc+uts";
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
#define REAP_TIMEOUT_MS 5000

int cr_proc_pidfd(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Waits, at most REAP_TIMEOUT_MS, for the child behind pidfd to die, and
 * reaps it; 0, or -1 when it is still there (reported; never a hang). */
static int reap_fd(int pidfd, pid_t pid, int *status)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	int64_t end = cr_now_ns() + (int64_t)REAP_TIMEOUT_MS * 1000000;
	siginfo_t si;

	for (;;) {
		int64_t left = end - cr_now_ns();
		int rc = poll(&pfd, 1, left > 0 ? (int)(left / 1000000) + 1 : 0);

		if (rc > 0)
			break;
		if (rc < 0 && errno == EINTR)
			continue;
		if (left <= 0) {
			fprintf(stderr, "crucible: worker %d did not die within %d ms of SIGKILL; "
					"left behind\n", (int)pid, REAP_TIMEOUT_MS);
			return -1;
		}
	}
	memset(&si, 0, sizeof si);
	while (waitid((idtype_t)3 /* P_PIDFD */, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
	if (status) {
		if (si.si_code == CLD_EXITED)
			*status = (si.si_status & 0xff) << 8;
		else
			*status = si.si_status & 0x7f;
	}
	return 0;
}

/* SIGKILL through the pidfd (never to a pid that may have been reused),
 * to the process group too where no PID namespace holds the tree. */
static void kill_fd(int pidfd, pid_t pid)
{
	syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	if (ns_level == NS_NONE)
		kill(-pid, SIGKILL);
}

static void reap(pid_t pid, int pidfd, int *status)
{
	int own = -1;

	if (pidfd < 0)
		pidfd = own = cr_proc_pidfd(pid);
	if (pidfd < 0) {
		/* no pidfd (pre-5.3 kernel): the pid is still ours, unreaped */
		int st = 0;
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (status)
			*status = st;
		return;
	}
	kill_fd(pidfd, pid);
	reap_fd(pidfd, pid, status);
	if (own >= 0)
		close(own);
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
		reap(pid, -1, NULL);
}

/* The worker and everything in its group killed and reaped. */
static void kill_worker(struct cr_proc *w, int *status)
{
	if (w->cg.on)
		cr_cg_kill(&w->cg);
	if (w->pid > 0)
		reap(w->pid, w->pidfd, status);
	w->pid = -1;
}

/* ---- the shared memory ---- */

void cr_proc_blank(struct cr_proc *w)
{
	memset(w, 0, sizeof *w);
	w->pid = -1;
	w->pidfd = -1;
	w->fault = -1;
	w->frozen_cpu_ns = -1;
	w->cmd_fd = w->rep_fd = w->log_fd = w->shm_fd = -1;
}

enum cr_status cr_proc_init(struct cr_proc *w, size_t shm_size, struct cr_err *err)
{
	/* a worker that dies between calls must cost its candidate a verdict,
	 * not crucible its life: writes to a dead worker's pipe return EPIPE
	 * (handled as a crash in cr_proc_call) instead of raising SIGPIPE.
	 * Children set it back to the default before they exec. */
	signal(SIGPIPE, SIG_IGN);
	cr_proc_blank(w);
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
			kill_worker(w, NULL);
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
			kill_worker(w, &status);
			describe_exit(status, detail, cap);
			return CR_RUN_CRASH;
		}
		got += (size_t)n;
	}
	if (r->kind == CR_REP_SYSCALL) {
		/* the name is the word of the worker's SIGSYS handler, which the
		 * candidate can forge: its own runtime_error either way, worded as
		 * the worker's report (docs/VERIFIER.md, Known gaps) */
		snprintf(detail, cap, "forbidden system call %s (%d, as the worker reported it)",
			 cr_sandbox_syscall_name(r->code), r->code);
		kill_worker(w, NULL);
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
			 "OPENBLAS_THREAD_TIMEOUT=4", "LC_ALL=C", NULL, NULL, NULL, NULL, NULL };
	int ne = 6;

#if defined(__SANITIZE_ADDRESS__)
	/* a sanitizer build of crucible: the candidate's own fault in the
	 * instrumented worker is the candidate's signal (runtime_error), not
	 * an AddressSanitizer report of crucible's */
	envp[ne++] = "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:"
		     "handle_sigill=0:handle_abort=0:detect_leaks=0";
#endif

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
	/* first of all, into its control group: everything it will start
	 * is born there */
	if (cr_cg_enter(&w->cg))
		_exit(80);
	signal(SIGPIPE, SIG_DFL);
	/* its own group: the kill at release reaches what it started even
	 * where no PID namespace could be made */
	setpgid(0, 0);
	/* its own host name (a UTS namespace, when it has one): nothing of the
	 * machine's */
	if (ns_level != NS_NONE)
		sethostname("crucible", 8);
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
	/* tasks: the group's pids.max is this worker's own quota; RLIMIT_NPROC
	 * counts every process of the uid on the machine (all workers run as
	 * nobody), so a neighbour holding threads would fail this one: only
	 * without a pids group is it the bound (the driver, and the test
	 * suite's emulated one, start threads) */
	if (w->cg.pids_dir[0]) {
		getrlimit(RLIMIT_NPROC, &rl);
		rl.rlim_cur = rl.rlim_max;
	} else {
		rl.rlim_cur = rl.rlim_max = cuda ? 4096 : 512;
	}
	setrlimit(RLIMIT_NPROC, &rl);
	fexecve(exe, argv, envp);
	_exit(75);
}

/* One line of /proc/PID/status ("Seccomp:\t2" → "2"), "" if absent. */
static void status_field(const char *status, const char *key, char *out, size_t cap)
{
	const char *p = status;
	size_t kl = strlen(key);

	out[0] = 0;
	while (p && *p) {
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			p += kl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			snprintf(out, cap, "%.*s", (int)strcspn(p, "\n"), p);
			return;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
}

/* Whether /proc/PID/ns/NAME is another namespace than ours. */
static bool own_ns(pid_t pid, const char *name)
{
	char a[64], b[64], la[64] = "", lb[64] = "";
	ssize_t n;

	snprintf(a, sizeof a, "/proc/%d/ns/%s", (int)pid, name);
	snprintf(b, sizeof b, "/proc/self/ns/%s", name);
	if ((n = readlink(a, la, sizeof la - 1)) <= 0)
		return false;
	la[n] = 0;
	if ((n = readlink(b, lb, sizeof lb - 1)) <= 0)
		return false;
	lb[n] = 0;
	return strcmp(la, lb) != 0;
}

/* What the orchestrator itself sees of a READY worker's confinement: the
 * kernel's record of its seccomp filters and no_new_privs, its uids, which
 * namespaces are its own, what its root holds, and its control group. The
 * worker's READY line is never read. For a cpu candidate worker the
 * layers every machine has are required (seccomp filters, no_new_privs, a
 * uid other than root's when crucible is root); missing one is a failed
 * setup (the host's before LOADING, the candidate's after: start_once).
 * Returns 0, or -1 with why in detail. */
static int verify_sandbox(struct cr_proc *w, const char *mode, char *detail, size_t cap)
{
	char path[64], status[4096] = "", sc[16], nf[16], nnp[16], uid[64], ns[64] = "";
	static const char *const nss[] = { "user", "mnt", "pid", "net", "ipc", "uts" };
	int fd, entries = -1;
	ssize_t n;
	bool cand = !strcmp(mode, "cand");

	snprintf(path, sizeof path, "/proc/%d/status", (int)w->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, status, sizeof status - 1)) <= 0) {
		if (fd >= 0)
			close(fd);
		snprintf(detail, cap, "cannot read %s to verify the worker's sandbox: %s", path,
			 strerror(errno));
		return -1;
	}
	close(fd);
	status[n] = 0;
	status_field(status, "Seccomp", sc, sizeof sc);
	status_field(status, "Seccomp_filters", nf, sizeof nf);
	status_field(status, "NoNewPrivs", nnp, sizeof nnp);
	status_field(status, "Uid", uid, sizeof uid);
	uid[strcspn(uid, "\t ")] = 0;
	for (size_t i = 0; i < sizeof nss / sizeof nss[0]; i++)
		if (own_ns(w->pid, nss[i]))
			snprintf(ns + strlen(ns), sizeof ns - strlen(ns), "%s%s", ns[0] ? "+" : "", nss[i]);
	/* the jail's root: an empty tmpfs holding cand.so (cpu candidate) */
	if (cand) {
		char rp[64];
		DIR *d;

		snprintf(rp, sizeof rp, "/proc/%d/root", (int)w->pid);
		if ((d = opendir(rp))) {
			struct dirent *e;

			entries = 0;
			while ((e = readdir(d)))
				if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
					entries++;
			closedir(d);
		}
	}
	snprintf(w->sandbox, sizeof w->sandbox,
		 "verified: seccomp mode %s with %s filter(s), no_new_privs %s, uid %s, own ns %s%s; %s",
		 sc[0] ? sc : "?", nf[0] ? nf : "?", nnp[0] ? nnp : "?", uid[0] ? uid : "?",
		 ns[0] ? ns : "none",
		 entries < 0 ? "" : entries <= 1 ? ", root holds only the candidate" : ", root not empty",
		 w->cg.on ? cr_cg_mode() : "no cgroup");
	if (!cand)
		return 0;
	if (strcmp(sc, "2") || atoi(nf) < 2 || strcmp(nnp, "1") ||
	    (geteuid() == 0 && !strcmp(uid, "0"))) {
		snprintf(detail, cap, "the candidate's worker is not confined as required (%s)", w->sandbox);
		return -1;
	}
	return 0;
}

/* One attempt. CR_RUN_ENV: the host's failure, before the candidate could
 * matter (retried by cr_proc_start). */
static enum cr_run start_once(struct cr_proc *w, const char *mode, const char *workdir,
			      double timeout_s, char *detail, size_t cap)
{
	int cp[2], rp[2];
	struct cr_reply r;
	struct stat sb;
	enum cr_run res;
	bool cuda = !strcmp(mode, "cuda");
	char name[16];

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
		return CR_RUN_ENV;
	}
	w->cuda = cuda;
	w->loading = false;
	w->fault = -1;
	w->sandbox[0] = 0;
	/* its own control group: tasks bounded per worker, memory capped (not
	 * a cuda worker's: the driver maps and pins what it needs) */
	snprintf(name, sizeof name, "w%s", mode);
	if (cr_cg_available() &&
	    cr_cg_create(&w->cg, name, cr_cg_quota(cuda), cuda ? 0 : (uint64_t)w->shm_size + (4ull << 30))) {
		snprintf(detail, cap, "cannot create the worker's control group: %s (%s)", strerror(errno),
			 cr_cg_mode());
		return CR_RUN_ENV;
	}
	if (pipe2(cp, O_CLOEXEC) || pipe2(rp, O_CLOEXEC)) {
		snprintf(detail, cap, "pipe: %s", strerror(errno));
		cr_cg_destroy(&w->cg);
		return CR_RUN_ENV;
	}
	w->pid = cr_proc_spawn();
	if (w->pid < 0) {
		snprintf(detail, cap, "clone: %s", strerror(errno));
		close(cp[0]); close(cp[1]); close(rp[0]); close(rp[1]);
		cr_cg_destroy(&w->cg);
		return CR_RUN_ENV;
	}
	if (w->pid == 0)
		child(w, cp[0], cp[1], rp[1], mode, workdir);
	/* before anything can reap it: the pid is still ours */
	w->pidfd = cr_proc_pidfd(w->pid);
	close(cp[0]);
	close(rp[1]);
	w->cmd_fd = cp[1];
	w->rep_fd = rp[0];
	/* the sequence numbers start somewhere the candidate cannot guess
	 * before its first call */
	w->seq = (uint32_t)cr_secure_u64();
	w->have_cpu_clock = clock_getcpuclockid(w->pid, &w->cpu_clock) == 0;
	for (;;) {
		res = wait_reply(w, timeout_s, &r, detail, cap);
		if (res != CR_RUN_OK || r.kind != CR_REP_LOADING || w->loading)
			break;
		w->loading = true;
	}
	/* Once LOADING was said, the candidate's bytes are in the process and
	 * everything after is the candidate's: a failure then is its verdict,
	 * never the host's (a candidate that ran code at load time and forged
	 * a setup failure of ours would otherwise stop the batch with exit 3).
	 * Before LOADING only crucible's code has run in a candidate's worker:
	 * a failure there is the host's. A baseline's worker failing in its own
	 * setup (its task file gone, say) is that row's failure, as SPEC §5
	 * says, not the host's: only the spawn's own failures above are. */
	bool cand = !strcmp(mode, "cand");
	if (res == CR_RUN_OK && r.kind == CR_REP_READY) {
		if (verify_sandbox(w, mode, detail, cap)) {
			kill_worker(w, NULL);
			return w->loading || !cand ? CR_RUN_SETUP : CR_RUN_ENV;
		}
		return CR_RUN_OK;
	}
	if (res == CR_RUN_OK) {
		/* a FAIL: the verdict it names where the candidate may have
		 * written it (after LOADING, or any from a cuda worker, which runs
		 * no candidate host code), runtime_error after LOADING otherwise;
		 * the host's before */
		bool named = r.kind == CR_REP_FAIL && r.code >= 0 && r.code < CHECK_OK;
		snprintf(detail, cap, "worker setup failed: %.*s", (int)sizeof r.msg, r.msg);
		kill_worker(w, NULL);
		if ((w->loading || w->cuda) && named) {
			w->fault = r.code;
			return CR_RUN_SETUP;
		}
		if (w->loading) {
			snprintf(detail, cap, "the worker failed after loading the candidate (reply kind %u)", r.kind);
			w->fault = CHECK_RUNTIME_ERROR;
			return CR_RUN_SETUP;
		}
		return cand ? CR_RUN_ENV : CR_RUN_SETUP;
	}
	if (!w->loading && cand && (res == CR_RUN_CRASH || res == CR_RUN_TIMEOUT)) {
		char tmp[256];
		snprintf(tmp, sizeof tmp, "%s", detail);
		snprintf(detail, cap, "worker died before loading the candidate: %s", tmp);
		return CR_RUN_ENV;
	}
	if (res == CR_RUN_CRASH) {
		char tmp[256];
		snprintf(tmp, sizeof tmp, "%s", detail);
		snprintf(detail, cap, "worker died while loading the candidate: %s", tmp);
	}
	return res;
}

static void release_process(struct cr_proc *w)
{
	if (w->pid > 0) {
		struct cr_cmd c = { .op = CR_CMD_QUIT };
		if (write(w->cmd_fd, &c, sizeof c) < 0) { /* ignore: EPIPE from a dead worker */ }
		kill_worker(w, NULL);
	}
	w->pid = -1;
	if (w->pidfd >= 0) close(w->pidfd);
	if (w->cmd_fd >= 0) close(w->cmd_fd);
	if (w->rep_fd >= 0) close(w->rep_fd);
	w->pidfd = w->cmd_fd = w->rep_fd = -1;
	cr_cg_destroy(&w->cg);
}

enum cr_run cr_proc_start(struct cr_proc *w, const char *mode, const char *workdir,
			  double timeout_s, char *detail, size_t cap)
{
	/* a host out of processes, memory or file descriptors for a moment
	 * (another run on the machine) is waited out, then reported as the
	 * host's: never as the candidate's verdict */
	static const int backoff_ms[] = { 50, 250, 1000, 3000 };
	enum cr_run res;

	for (int a = 0;; a++) {
		res = start_once(w, mode, workdir, timeout_s, detail, cap);
		if (res != CR_RUN_ENV || a == (int)(sizeof backoff_ms / sizeof backoff_ms[0]))
			break;
		release_process(w);
		usleep((useconds_t)backoff_ms[a] * 1000);
	}
	if (res == CR_RUN_ENV)
		release_process(w);
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
	kill_worker(w, NULL);
	snprintf(detail, cap, "killed by signal XFSZ (stdout/stderr reached the %d-byte cap)",
		 LOG_CAP);
	return true;
}

/* Sends the command; a dead worker is EPIPE here (SIGPIPE is ignored, see
 * cr_proc_init). */
static enum cr_run send_cmd(struct cr_proc *w, const struct cr_cmd *c, char *detail, size_t cap)
{
	if (write(w->cmd_fd, c, sizeof *c) != (ssize_t)sizeof *c) {
		int status = 0;
		kill_worker(w, &status);
		describe_exit(status, detail, cap);
		return CR_RUN_CRASH;
	}
	return CR_RUN_OK;
}

/* The reply of call c: DONE with its number, or (cuda worker) FAULT. A cpu
 * worker's pipe can be written by the candidate's own code, so anything
 * else from it is a protocol violation, worded here, never by the worker. */
static enum cr_run take_reply(struct cr_proc *w, const struct cr_cmd *c, enum cr_run res,
			      const struct cr_reply *r, char *detail, size_t cap)
{
	if (res == CR_RUN_OK && log_full(w, detail, cap))
		return CR_RUN_CRASH;
	if (res != CR_RUN_OK)
		return res;
	if (r->kind == CR_REP_FAULT && w->cuda && r->seq == c->seq) {
		w->fault = r->code;
		w->last = *r;
		snprintf(detail, cap, "%.*s", (int)sizeof r->msg, r->msg);
		kill_worker(w, NULL);
		return CR_RUN_FAULT;
	}
	if (r->kind != CR_REP_DONE || r->seq != c->seq) {
		snprintf(detail, cap, "worker protocol violation (a reply of kind %u for call %u, in call %u): "
			 "only the candidate's code could have written it", r->kind, r->seq, c->seq);
		kill_worker(w, NULL);
		return CR_RUN_CRASH;
	}
	w->last = *r;
	return CR_RUN_OK;
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
	if ((res = send_cmd(w, &c, detail, cap)))
		return res;
	res = wait_reply(w, timeout_s, &r, detail, cap);
	if (ns)
		*ns = cr_now_ns() - t0;
	return take_reply(w, &c, res, &r, detail, cap);
}

static void account_thaw(struct cr_proc *w, int64_t cpu_now);
static void raw_thaw(struct cr_proc *w);

/* The bracket (cr_proc_call_frozen); with t, the scheduler's records are
 * read around it too, outside the bracket, the worker frozen. */
static enum cr_run call_bracket(struct cr_proc *w, enum cr_cmd_op op, uint32_t set, double timeout_s,
				struct cr_call_time *t, int64_t *wall, char *detail, size_t cap)
{
	struct cr_cmd c = { .op = (uint32_t)op, .set = set, .seq = ++w->seq };
	struct cr_reply r;
	enum cr_run res;
	int64_t t0, cpu0 = -1, some0 = 0, full0 = 0, x, y;
	bool psi = false;
	struct sched_param sp_old = { 0 };
	int old_policy = SCHED_OTHER;

	*wall = 0;
	if (t) {
		t->cpu_ns = t->stall_some_ns = t->stall_full_ns = -1;
		t->rt_ok = false;
	}
	if (w->pid < 0) {
		snprintf(detail, cap, "worker is not running");
		return CR_RUN_CRASH;
	}
	/* the command waits in the pipe while the worker is frozen; the clock
	 * starts before the thaw lets anything in the group run */
	if ((res = send_cmd(w, &c, detail, cap)))
		return res;
	cpu0 = cr_proc_cpu_ns(w);
	account_thaw(w, cpu0);
	if (t) {
		psi = !cr_cg_stall_ns(&w->cg, &some0, &full0);
		/* from the thaw to the reply at a real-time priority: no other
		 * work on the machine, whatever its nice or autogroup, delays
		 * seeing the reply (measured: 2-4 ms, a tick, in a quarter of the
		 * samples beside a busy loop in another session); only that, so
		 * the rest of the timing loop (cache flushes, checks) stays a
		 * normal task's and real-time throttling is never approached */
		if (t->rt) {
			struct sched_param sp = { .sched_priority = 1 };
			t->rt_ok = !sched_getparam(0, &sp_old) && (old_policy = sched_getscheduler(0)) >= 0 &&
				   !sched_setscheduler(0, SCHED_FIFO, &sp);
		}
	}
	t0 = cr_now_ns();
	raw_thaw(w);
	res = wait_reply(w, timeout_s, &r, detail, cap);
	/* the reply seen: the freeze needs the worker to run (its tasks enter
	 * the freezer themselves), which a real-time caller's waits would
	 * delay (measured: 1 ms a sample); a worker that then waits for the
	 * CPU is a full stall of its group, taken out */
	if (t && t->rt_ok)
		sched_setscheduler(0, old_policy, &sp_old);
	if (res == CR_RUN_OK && cr_proc_freeze(w, detail, cap))
		res = CR_RUN_TIMEOUT;
	*wall = cr_now_ns() - t0;
	if (t && res == CR_RUN_OK) {
		if (cpu0 >= 0 && (x = cr_proc_cpu_ns(w)) >= 0)
			t->cpu_ns = x - cpu0;
		if (psi && !cr_cg_stall_ns(&w->cg, &x, &y)) {
			t->stall_some_ns = x - some0;
			t->stall_full_ns = y - full0;
		}
	}
	return take_reply(w, &c, res, &r, detail, cap);
}

enum cr_run cr_proc_call_timed(struct cr_proc *w, enum cr_cmd_op op, uint32_t set,
			       double timeout_s, struct cr_call_time *t, char *detail, size_t cap)
{
	return call_bracket(w, op, set, timeout_s, t, &t->wall_ns, detail, cap);
}

enum cr_run cr_proc_call_frozen(struct cr_proc *w, enum cr_cmd_op op, uint32_t set,
				double timeout_s, int64_t *ns, char *detail, size_t cap)
{
	int64_t wall;
	enum cr_run res = call_bracket(w, op, set, timeout_s, NULL, &wall, detail, cap);
	if (ns)
		*ns = wall;
	return res;
}

int cr_proc_freeze(struct cr_proc *w, char *detail, size_t cap)
{
	int64_t end = cr_now_ns() + CR_FREEZE_TIMEOUT_NS;

	if (w->pid <= 0)
		return 0;
	if (w->cg.on) {
		if (cr_cg_freeze(&w->cg, CR_FREEZE_TIMEOUT_NS) == 0)
			goto frozen;
	} else if (!syscall(SYS_pidfd_send_signal, w->pidfd, SIGSTOP, NULL, 0) || !kill(w->pid, SIGSTOP)) {
		/* no group: a stop a thread of the worker's can cancel with
		 * SIGCONT (recorded in the sandbox line); bounded all the same */
		for (;;) {
			siginfo_t si;

			memset(&si, 0, sizeof si);
			if (waitid(P_PID, (id_t)w->pid, &si, WSTOPPED | WNOHANG) == 0 && si.si_pid == w->pid &&
			    si.si_code == CLD_STOPPED)
				goto frozen;
			if (cr_now_ns() > end)
				break;
			usleep(200);
		}
	}
	kill_worker(w, NULL);
	if (detail)
		snprintf(detail, cap, "the worker could not be frozen within %.1f s (killed)",
			 CR_FREEZE_TIMEOUT_NS / 1e9);
	return -1;
frozen:
	if (w->frozen_cpu_ns < 0)
		w->frozen_cpu_ns = cr_proc_cpu_ns(w);
	return 0;
}

/* Notes the CPU the group used since it was frozen (cpu_now: its CPU now),
 * for the freezer's invariant; then it counts as thawed. */
static void account_thaw(struct cr_proc *w, int64_t cpu_now)
{
	if (w->frozen_cpu_ns < 0)
		return;
	if (cpu_now > w->frozen_cpu_ns)
		w->ran_frozen_ns += cpu_now - w->frozen_cpu_ns;
	w->n_thaws++;
	w->frozen_cpu_ns = -1;
}

static void raw_thaw(struct cr_proc *w)
{
	if (w->cg.on)
		cr_cg_thaw(&w->cg);
	else if (syscall(SYS_pidfd_send_signal, w->pidfd, SIGCONT, NULL, 0))
		kill(w->pid, SIGCONT);
}

bool cr_proc_ran_frozen(const struct cr_proc *w)
{
	return w->ran_frozen_ns > 5000000 + (int64_t)w->n_thaws * 20000;
}

void cr_proc_thaw(struct cr_proc *w)
{
	if (w->pid <= 0)
		return;
	if (w->frozen_cpu_ns >= 0)
		account_thaw(w, cr_proc_cpu_ns(w));
	raw_thaw(w);
}

int64_t cr_proc_cpu_ns(struct cr_proc *w)
{
	struct timespec ts;
	if (w->pid < 0)
		return -1;
	if (w->cg.on)
		return cr_cg_cpu_ns(&w->cg);
	if (!w->have_cpu_clock || clock_gettime(w->cpu_clock, &ts))
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
	release_process(w);
	if (w->log_fd >= 0) close(w->log_fd);
	if (w->shm) munmap(w->shm, w->shm_size);
	if (w->shm_fd >= 0) close(w->shm_fd);
	w->log_fd = w->shm_fd = -1;
	w->shm = NULL;
}
