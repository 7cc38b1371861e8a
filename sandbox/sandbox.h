/* sandbox.h — the candidate worker's sandbox: seccomp allow-lists
 * (libseccomp), and the probe of which layers this kernel and this process
 * can have (namespaces, empty root and Landlock are in jail.h).
 *
 * Stage 1, installed with TSYNC before the candidate's library is loaded
 * (so its constructors and every thread they start are bound): an
 * allow-list of what dlopen, relocation and constructors need; files may be
 * opened read-only (the loader opens the library), nothing else on files.
 * Stage 2, installed with TSYNC after loading, before the first call: the
 * same allow-list without any open (read-only opens fail with EACCES, so
 * libc falls back, e.g. sysconf(_SC_NPROCESSORS_ONLN)) and without seccomp
 * or Landlock calls; once installed, two canaries drawn after loading
 * (sched_getparam/sched_getscheduler on random pids must fail with random
 * errnos only stage 2 returns) prove that no filter a constructor installed
 * faked its installation. Both: io_uring, exec, fork, sockets, ptrace, signals to
 * others, mount/unshare, writes to files, dup/pipe, ftruncate raise SIGSYS;
 * the handler reports the syscall number on the reply pipe (CR_REP_SYSCALL)
 * and the worker dies. Calls with a libc fallback fail with an errno
 * instead: clone3 and openat2 ENOSYS, sched_setaffinity and the scheduler
 * and NUMA policy setters EPERM, ioctl ENOTTY, stat/access/readlink by path
 * EACCES. */
#ifndef CR_SANDBOX_H
#define CR_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include "common/cr_status.h"

/* What the kernel lets this process have, found in a forked child that
 * tries each layer (nothing of the caller changes). */
struct cr_sandbox_layers {
	bool seccomp_tsync;      /* a seccomp filter with SCMP_FLTATR_CTL_TSYNC loads */
	bool ns;                 /* unshare(user, mount, net, ipc) with our own id maps */
	bool pid_ns;             /* the caller is pid 1 of its own PID namespace */
	bool empty_root;         /* pivot into an empty read-only tmpfs, old root detached */
	int landlock_abi;        /* 0: no Landlock */
	char why[160];           /* why the first missing layer is missing */
};

/* Probes the layers (forks; the child drops to uid nobody first when run as
 * root, as the worker does). CR_EENV only when the probe itself cannot run. */
enum cr_status cr_sandbox_probe_layers(struct cr_sandbox_layers *l, struct cr_err *err);
/* One short line naming every layer, present or missing, e.g. "seccomp
 * allow-list+tsync; user,mount,net,ipc ns; pid ns; empty root; landlock abi 7". */
void cr_sandbox_level(const struct cr_sandbox_layers *l, char *buf, size_t cap);
/* Probe and line in one: returns 0, or -1 with the reason in buf. */
int cr_sandbox_probe(char *buf, size_t cap);

/* Installs the SIGSYS handler (reports on reply_fd) and no_new_privs;
 * before the jail and the filters. */
enum cr_status cr_sandbox_prepare(int reply_fd, struct cr_err *err);
enum cr_status cr_sandbox_stage1(int reply_fd, struct cr_err *err);
enum cr_status cr_sandbox_stage2(int reply_fd, struct cr_err *err);
/* Name of a syscall number on this architecture ("?" if unknown). */
const char *cr_sandbox_syscall_name(int nr);

#endif
