/* sandbox.c — seccomp allow-lists for the candidate worker, and the probe
 * of the sandbox layers this kernel offers (see sandbox.h, jail.h). */
#include "sandbox/sandbox.h"
#include "sandbox/jail.h"
#include "sandbox/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define TSYNC_ESRCH (1UL << 4)   /* SECCOMP_FILTER_FLAG_TSYNC_ESRCH, Linux 5.7 */
/* open flags that make an open more than a read (O_TMPFILE's own bit:
 * glibc's __O_TMPFILE includes O_DIRECTORY, which a read may carry) */
#define TMPFILE_BIT 020000000
#define OPEN_WRITE_BITS (O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | TMPFILE_BIT)

#define CLONE_NS_BITS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
		       CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

static int sigsys_fd = -1;
/* Stage 2's proof of presence: sched_getparam and sched_getscheduler on
 * a random pid fail with random errnos under stage 2 only (a filter that
 * guesses both has odds of 1 in 3000^2). Drawn after the candidate is
 * loaded, so no filter a constructor installed can know them. */
static const int canary_nr[2] = { SCMP_SYS(sched_getparam), SCMP_SYS(sched_getscheduler) };
static long canary_pid[2];
static int canary_errno[2];

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	struct cr_reply r;
	(void)sig; (void)uc;
	memset(&r, 0, sizeof r);
	r.kind = CR_REP_SYSCALL;
	r.code = si->si_syscall;
	if (write(sigsys_fd, &r, sizeof r) < 0)
		_exit(128 + SIGSYS);
	_exit(128 + SIGSYS);
}

enum cr_status cr_sandbox_prepare(int reply_fd, struct cr_err *err)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigsys_fd = reply_fd;
	if (sigaction(SIGSYS, &sa, NULL))
		return cr_errf(err, CR_EENV, "sigaction(SIGSYS): %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return cr_errf(err, CR_EENV, "prctl(NO_NEW_PRIVS): %s", strerror(errno));
	return CR_OK;
}

#define RULE(ctx, act, name, ...) \
	(seccomp_rule_add(ctx, act, SCMP_SYS(name), __VA_ARGS__) ? 1 : 0)

/* What both stages allow: memory, threads, futex, time, exit, signals to
 * itself, writes to stdout/stderr/the reply pipe, reads of fds it holds. */
static int add_common(scmp_filter_ctx ctx, int reply_fd)
{
	static const int allowed[] = {
		SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(readv), SCMP_SYS(lseek),
		SCMP_SYS(fstat), SCMP_SYS(close),
		SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect), SCMP_SYS(madvise),
		SCMP_SYS(brk), SCMP_SYS(mremap), SCMP_SYS(futex), SCMP_SYS(set_robust_list),
		SCMP_SYS(get_robust_list), SCMP_SYS(rseq), SCMP_SYS(set_tid_address),
		SCMP_SYS(sched_getaffinity), SCMP_SYS(sched_yield),
		SCMP_SYS(sched_get_priority_max),
		SCMP_SYS(sched_get_priority_min), SCMP_SYS(getpid), SCMP_SYS(gettid),
		SCMP_SYS(getppid), SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid),
		SCMP_SYS(getegid), SCMP_SYS(exit), SCMP_SYS(exit_group),
		SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
		SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(clock_nanosleep),
		SCMP_SYS(nanosleep), SCMP_SYS(gettimeofday), SCMP_SYS(time), SCMP_SYS(getrusage),
		SCMP_SYS(times), SCMP_SYS(getcpu), SCMP_SYS(membarrier),
		SCMP_SYS(get_mempolicy), SCMP_SYS(restart_syscall), SCMP_SYS(getrandom),
		SCMP_SYS(uname), SCMP_SYS(getrlimit),
	};
	/* where libc or the runtime has a fallback: an errno, not a kill */
	static const struct { int nr, err; } soft[] = {
		{ SCMP_SYS(clone3), ENOSYS },   /* its flags are behind a pointer; glibc falls back to clone */
		{ SCMP_SYS(openat2), ENOSYS },  /* likewise: callers fall back to openat */
		/* machine-wide counts (processes, load, memory): nothing a kernel
		 * needs, and a window on the neighbours */
		{ SCMP_SYS(sysinfo), ENOSYS },
		{ SCMP_SYS(sched_setaffinity), EPERM }, { SCMP_SYS(sched_setscheduler), EPERM },
		{ SCMP_SYS(sched_setparam), EPERM }, { SCMP_SYS(sched_setattr), EPERM },
		{ SCMP_SYS(set_mempolicy), EPERM }, { SCMP_SYS(mbind), EPERM },
		{ SCMP_SYS(prctl), EPERM }, { SCMP_SYS(ioctl), ENOTTY }, { SCMP_SYS(fcntl), EPERM },
		{ SCMP_SYS(access), EACCES }, { SCMP_SYS(faccessat), EACCES },
		{ SCMP_SYS(faccessat2), EACCES }, { SCMP_SYS(readlink), EACCES },
		{ SCMP_SYS(readlinkat), EACCES }, { SCMP_SYS(statx), EACCES },
		{ SCMP_SYS(stat), EACCES }, { SCMP_SYS(lstat), EACCES },
		{ SCMP_SYS(getdents64), EACCES },
	};
	int rc = 0;

	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0) ? 1 : 0;
	for (size_t i = 0; i < sizeof soft / sizeof soft[0]; i++)
		rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(soft[i].err), soft[i].nr, 0) ? 1 : 0;
	/* threads only: clone must carry CLONE_THREAD, and no namespace or
	 * ptrace flag */
	rc |= RULE(ctx, SCMP_ACT_ALLOW, clone, 1,
		   SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_NS_BITS | CLONE_PTRACE, CLONE_THREAD));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, tgkill, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	/* getrlimit through prlimit64 (no new limit) on itself */
	rc |= RULE(ctx, SCMP_ACT_ALLOW, prlimit64, 2, SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_EQ, 0));
	/* thread start-up sets signal actions; SIGSYS stays ours so a forbidden
	 * call is always reported */
	rc |= RULE(ctx, SCMP_ACT_ALLOW, rt_sigaction, 1, SCMP_A0(SCMP_CMP_NE, SIGSYS));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, write, 1, SCMP_A0(SCMP_CMP_EQ, 1));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, write, 1, SCMP_A0(SCMP_CMP_EQ, 2));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, write, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)reply_fd));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, writev, 1, SCMP_A0(SCMP_CMP_EQ, 1));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, writev, 1, SCMP_A0(SCMP_CMP_EQ, 2));
	/* fstat through newfstatat(fd, "", AT_EMPTY_PATH); by path: EACCES */
	rc |= RULE(ctx, SCMP_ACT_ALLOW, newfstatat, 1,
		   SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
	rc |= RULE(ctx, SCMP_ACT_ERRNO(EACCES), newfstatat, 1,
		   SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, 0));
	return rc;
}

/* Read-only opens get `read_act`; any other open is left to the default
 * action (SIGSYS). */
static int add_opens(scmp_filter_ctx ctx, uint32_t read_act)
{
	int rc = 0;
	rc |= RULE(ctx, read_act, openat, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, OPEN_WRITE_BITS, 0));
	rc |= RULE(ctx, read_act, open, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, OPEN_WRITE_BITS, 0));
	return rc;
}

static int add_canary(scmp_filter_ctx ctx, int stage)
{
	int rc = 0;
	for (int i = 0; i < 2; i++) {
		if (stage == 1) {
			rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, canary_nr[i], 0) ? 1 : 0;
			continue;
		}
		rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, canary_nr[i], 1,
				       SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)canary_pid[i])) ? 1 : 0;
		rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)canary_errno[i]), canary_nr[i], 1,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)canary_pid[i])) ? 1 : 0;
	}
	return rc;
}

static scmp_filter_ctx build(int stage, int reply_fd, struct cr_err *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	int rc = 0;

	if (!ctx) {
		cr_errf(err, CR_EENV, "seccomp_init failed");
		return NULL;
	}
	/* every thread, also those a constructor started; no_new_privs is set
	 * already (cr_sandbox_prepare), so libseccomp need not call prctl */
	rc |= seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) ? 1 : 0;
	rc |= seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) ? 1 : 0;
	rc |= add_common(ctx, reply_fd);
	rc |= add_canary(ctx, stage);
	if (stage == 1) {
		/* the loader opens the library; our own stage 2 and Landlock
		 * calls follow (a constructor may use them too: they can only
		 * restrict it further) */
		rc |= add_opens(ctx, SCMP_ACT_ALLOW);
		rc |= RULE(ctx, SCMP_ACT_ALLOW, seccomp, 2, SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER),
			   SCMP_A1(SCMP_CMP_EQ, SECCOMP_FILTER_FLAG_TSYNC));
		/* (libseccomp adds TSYNC_ESRCH where the kernel has it) */
		rc |= RULE(ctx, SCMP_ACT_ALLOW, seccomp, 2, SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER),
			   SCMP_A1(SCMP_CMP_EQ, SECCOMP_FILTER_FLAG_TSYNC | TSYNC_ESRCH));
		rc |= RULE(ctx, SCMP_ACT_ALLOW, seccomp, 1, SCMP_A0(SCMP_CMP_EQ, SECCOMP_GET_ACTION_AVAIL));
		rc |= RULE(ctx, SCMP_ACT_ALLOW, landlock_create_ruleset, 0);
		rc |= RULE(ctx, SCMP_ACT_ALLOW, landlock_add_rule, 0);
		rc |= RULE(ctx, SCMP_ACT_ALLOW, landlock_restrict_self, 0);
	} else {
		/* sysconf(_SC_NPROCESSORS_ONLN) reads /sys, then /proc, then asks
		 * sched_getaffinity: a failed open keeps honest code alive */
		rc |= add_opens(ctx, SCMP_ACT_ERRNO(EACCES));
	}
	if (rc) {
		seccomp_release(ctx);
		cr_errf(err, CR_EENV, "seccomp stage %d: cannot build the filter", stage);
		return NULL;
	}
	return ctx;
}

static enum cr_status load(scmp_filter_ctx ctx, int stage, struct cr_err *err)
{
	int rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc)
		return cr_errf(err, CR_EENV, "seccomp stage %d: cannot install the filter with tsync: %s",
			       stage, strerror(-rc));
	return CR_OK;
}

enum cr_status cr_sandbox_stage1(int reply_fd, struct cr_err *err)
{
	scmp_filter_ctx ctx;

	if (sigsys_fd != reply_fd)
		return cr_errf(err, CR_EINTERNAL, "seccomp stage 1 before cr_sandbox_prepare");
	if (!(ctx = build(1, reply_fd, err)))
		return err->status;
	return load(ctx, 1, err);
}

enum cr_status cr_sandbox_stage2(int reply_fd, struct cr_err *err)
{
	scmp_filter_ctx ctx;
	long got;

	for (int i = 0; i < 2; i++) {
		uint64_t r = cr_secure_u64();
		/* a pid above any pid_max (2^22), an errno no call returns */
		canary_pid[i] = 0x10000000L | (long)(r & 0x0fffffff);
		canary_errno[i] = 1000 + (int)((r >> 32) % 3000);
	}
	if (!(ctx = build(2, reply_fd, err)) || load(ctx, 2, err))
		return err->status;
	/* a constructor may have installed a filter that answers seccomp()
	 * with success: then the canaries reach the kernel (ESRCH, EINVAL) */
	for (int i = 0; i < 2; i++) {
		errno = 0;
		got = syscall(canary_nr[i], canary_pid[i], NULL);
		if (got != -1 || errno != canary_errno[i])
			return cr_errf(err, CR_EFAIL, "seccomp stage 2 is not in force after loading "
				       "(canary %d returned %ld, errno %d): something loaded before it "
				       "interferes", i, got, errno);
	}
	return CR_OK;
}

const char *cr_sandbox_syscall_name(int nr)
{
	static char buf[64];
	char *n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	snprintf(buf, sizeof buf, "%s", n ? n : "?");
	free(n);
	return buf;
}

/* ---- the probe ---- */

/* In the child: each layer in the worker's order; stops at the first that
 * fails (a later layer depends on the earlier ones). */
static void probe_child(struct cr_sandbox_layers *l)
{
	struct cr_err err;
	scmp_filter_ctx ctx;

	cr_err_init(&err);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		snprintf(l->why, sizeof l->why, "no_new_privs: %s", strerror(errno));
		return;
	}
	l->landlock_abi = cr_landlock_abi();
	if (cr_jail_unshare(&err)) {
		snprintf(l->why, sizeof l->why, "%s", err.msg);
	} else {
		l->ns = true;
		if (cr_jail_root(NULL, &err))
			snprintf(l->why, sizeof l->why, "%s", err.msg);
		else
			l->empty_root = true;
	}
	if (l->landlock_abi > 0 && cr_landlock_restrict(l->landlock_abi, NULL, &err)) {
		snprintf(l->why, sizeof l->why, "%s", err.msg);
		l->landlock_abi = 0;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx && !seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) && !seccomp_load(ctx))
		l->seccomp_tsync = true;
	else
		snprintf(l->why, sizeof l->why, "seccomp with tsync cannot be installed");
	if (ctx)
		seccomp_release(ctx);
}

enum cr_status cr_sandbox_probe_layers(struct cr_sandbox_layers *l, struct cr_err *err)
{
	int p[2], status = 0;
	pid_t pid;
	ssize_t n;

	memset(l, 0, sizeof *l);
	if (pipe2(p, O_CLOEXEC))
		return cr_errf(err, CR_EENV, "sandbox probe: pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return cr_errf(err, CR_EENV, "sandbox probe: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		struct cr_sandbox_layers c;
		memset(&c, 0, sizeof c);
		close(p[0]);
		/* as the worker runs: never as root */
		if (geteuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534) ||
				       prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)))
			snprintf(c.why, sizeof c.why, "cannot drop to uid nobody: %s", strerror(errno));
		/* (dumpable again, as after the worker's exec: else its
		 * /proc/self files, id maps among them, stay root's) */
		else
			probe_child(&c);
		_exit(write(p[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
	}
	close(p[1]);
	do
		n = read(p[0], l, sizeof *l);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof *l) {
		memset(l, 0, sizeof *l);
		return cr_errf(err, CR_EENV, "sandbox probe: the child died (status %d)", status);
	}
	l->why[sizeof l->why - 1] = '\0';
	/* made at clone time by the orchestrator: the caller is its pid 1 */
	l->pid_ns = getpid() == 1;
	return CR_OK;
}

void cr_sandbox_level(const struct cr_sandbox_layers *l, char *buf, size_t cap)
{
	char ll[32];
	if (l->landlock_abi > 0)
		snprintf(ll, sizeof ll, "landlock abi %d", l->landlock_abi);
	else
		snprintf(ll, sizeof ll, "NO landlock");
	snprintf(buf, cap, "%s; %s; %s; %s; %s",
		 l->seccomp_tsync ? "seccomp allow-list+tsync" : "NO seccomp tsync",
		 l->ns ? "user,mount,net,ipc ns" : "NO namespaces",
		 l->pid_ns ? "pid ns" : "NO pid ns",
		 l->empty_root ? "empty root" : "NO empty root", ll);
}

int cr_sandbox_probe(char *buf, size_t cap)
{
	struct cr_sandbox_layers l;
	struct cr_err err;

	cr_err_init(&err);
	if (cr_sandbox_probe_layers(&l, &err)) {
		snprintf(buf, cap, "%s", err.msg);
		return -1;
	}
	cr_sandbox_level(&l, buf, cap);
	return 0;
}
