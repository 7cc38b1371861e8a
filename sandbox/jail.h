/* jail.h — the worker's jail, entered by the worker itself after exec and
 * before any candidate code runs: fresh user, mount, network and IPC
 * namespaces, an empty tmpfs root that holds only the candidate library
 * (CR_JAIL_SO, a read-only bind mount of that one file), the old root detached (no /proc, /sys,
 * /tmp), no capabilities; and Landlock rulesets that handle every access
 * right of the kernel's ABI. The PID namespace is made at clone time by the
 * orchestrator (sandbox/proc.c): unsharing it here would forbid the
 * threads a kernel starts (CLONE_THREAD across PID namespaces is EINVAL). */
#ifndef CR_JAIL_H
#define CR_JAIL_H

#include <stdbool.h>
#include "common/cr_status.h"

/* Where the library lies inside the jail. */
#define CR_JAIL_SO "/cand.so"

/* Enters the namespaces (user, mount, net, ipc) with the caller's uid and
 * gid mapped to themselves. */
enum cr_status cr_jail_unshare(struct cr_err *err);
/* After cr_jail_unshare: makes an empty tmpfs the root, with so_path (from
 * the old root) bind-mounted read-only at CR_JAIL_SO when so_path is not
 * NULL; detaches the old root; drops every capability. */
enum cr_status cr_jail_root(const char *so_path, struct cr_err *err);
/* The kernel's Landlock ABI version, 0 when it has none (or it is off). */
int cr_landlock_abi(void);
/* Restricts the calling thread (and the threads it starts later) to no
 * file access at all, no TCP bind/connect (ABI >= 4), no signals or
 * abstract unix sockets outside its domain (ABI >= 6), except reading the
 * file `readable` when it is not NULL. abi is cr_landlock_abi()'s answer. */
enum cr_status cr_landlock_restrict(int abi, const char *readable, struct cr_err *err);

#endif
