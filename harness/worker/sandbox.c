/* sandbox.c — seccomp stages for the candidate worker. */
#include "harness/worker/sandbox.h"
#include "harness/worker/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int sigsys_fd = -1;

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

static enum cr_status install_handler(int reply_fd, struct cr_err *err)
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
	(seccomp_rule_add(ctx, act, SCMP_SYS(name), __VA_ARGS__) ? -1 : 0)

static enum cr_status load(scmp_filter_ctx ctx, const char *what, int rc, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	if (rc || seccomp_load(ctx))
		st = cr_errf(err, CR_EENV, "seccomp %s: cannot install the filter", what);
	seccomp_release(ctx);
	return st;
}

enum cr_status cr_sandbox_stage1(int reply_fd, struct cr_err *err)
{
	scmp_filter_ctx ctx;
	int rc = 0;
	static const int banned[] = {
		SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork),
		SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind),
		SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
		SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(setuid), SCMP_SYS(setgid),
		SCMP_SYS(mount), SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(pidfd_open),
		SCMP_SYS(pidfd_getfd), SCMP_SYS(pidfd_send_signal), SCMP_SYS(rt_sigqueueinfo),
		SCMP_SYS(rt_tgsigqueueinfo), SCMP_SYS(open_by_handle_at), SCMP_SYS(creat),
		SCMP_SYS(unlink), SCMP_SYS(unlinkat), SCMP_SYS(rename), SCMP_SYS(renameat),
		SCMP_SYS(renameat2), SCMP_SYS(truncate), SCMP_SYS(link), SCMP_SYS(symlink),
	};

	if (install_handler(reply_fd, err))
		return err->status;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return cr_errf(err, CR_EENV, "seccomp_init failed");
	for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
		rc |= seccomp_rule_add(ctx, SCMP_ACT_TRAP, banned[i], 0) ? 1 : 0;
	/* only threads: clone must carry CLONE_THREAD; clone3 hides its flags,
	 * so it answers ENOSYS and glibc falls back to clone */
	rc |= RULE(ctx, SCMP_ACT_TRAP, clone, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	rc |= RULE(ctx, SCMP_ACT_ERRNO(ENOSYS), clone3, 0);
	rc |= RULE(ctx, SCMP_ACT_TRAP, tgkill, 1, SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)getpid()));
	/* files read-only */
	rc |= RULE(ctx, SCMP_ACT_TRAP, openat, 1,
		   SCMP_A2(SCMP_CMP_MASKED_EQ, O_WRONLY | O_RDWR, O_WRONLY));
	rc |= RULE(ctx, SCMP_ACT_TRAP, openat, 1,
		   SCMP_A2(SCMP_CMP_MASKED_EQ, O_WRONLY | O_RDWR, O_RDWR));
	rc |= RULE(ctx, SCMP_ACT_TRAP, open, 1,
		   SCMP_A1(SCMP_CMP_MASKED_EQ, O_WRONLY | O_RDWR, O_WRONLY));
	rc |= RULE(ctx, SCMP_ACT_TRAP, open, 1,
		   SCMP_A1(SCMP_CMP_MASKED_EQ, O_WRONLY | O_RDWR, O_RDWR));
	return load(ctx, "stage 1", rc, err);
}

enum cr_status cr_sandbox_stage2(int reply_fd, struct cr_err *err)
{
	scmp_filter_ctx ctx;
	int rc = 0;
	static const int allowed[] = {
		SCMP_SYS(read), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect),
		SCMP_SYS(madvise), SCMP_SYS(brk), SCMP_SYS(mremap), SCMP_SYS(futex),
		SCMP_SYS(set_robust_list), SCMP_SYS(get_robust_list), SCMP_SYS(rseq),
		SCMP_SYS(sched_getaffinity), SCMP_SYS(sched_yield), SCMP_SYS(getpid),
		SCMP_SYS(gettid), SCMP_SYS(exit), SCMP_SYS(exit_group),
		SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
		SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(clock_nanosleep),
		SCMP_SYS(nanosleep), SCMP_SYS(gettimeofday), SCMP_SYS(fstat), SCMP_SYS(lseek),
		SCMP_SYS(getrusage), SCMP_SYS(times), SCMP_SYS(sysinfo), SCMP_SYS(getcpu),
		SCMP_SYS(membarrier), SCMP_SYS(get_mempolicy), SCMP_SYS(restart_syscall),
		SCMP_SYS(getrandom), SCMP_SYS(sched_getparam),
		SCMP_SYS(sched_getscheduler),
	};

	(void)reply_fd;
	ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx)
		return cr_errf(err, CR_EENV, "seccomp_init failed");
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0) ? 1 : 0;
	rc |= RULE(ctx, SCMP_ACT_ALLOW, clone, 1,
		   SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
	rc |= RULE(ctx, SCMP_ACT_ERRNO(ENOSYS), clone3, 0);
	rc |= RULE(ctx, SCMP_ACT_ALLOW, tgkill, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	/* thread start-up sets signal actions; SIGSYS stays ours so a forbidden
	 * call is always reported */
	rc |= RULE(ctx, SCMP_ACT_ALLOW, rt_sigaction, 1, SCMP_A0(SCMP_CMP_NE, SIGSYS));
	/* writes: stdout, stderr (a capped file) and the reply pipe only */
	rc |= RULE(ctx, SCMP_ACT_ALLOW, write, 1, SCMP_A0(SCMP_CMP_EQ, 1));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, write, 1, SCMP_A0(SCMP_CMP_EQ, 2));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, write, 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)reply_fd));
	rc |= RULE(ctx, SCMP_ACT_ALLOW, newfstatat, 1,
		   SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
	return load(ctx, "stage 2", rc, err);
}

const char *cr_sandbox_syscall_name(int nr)
{
	static char buf[64];
	char *n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	snprintf(buf, sizeof buf, "%s", n ? n : "?");
	free(n);
	return buf;
}
