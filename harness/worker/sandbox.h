/* sandbox.h — seccomp filters for the candidate worker (libseccomp).
 * Stage 1 (before the candidate is loaded): no exec, no new processes, no
 * sockets, no ptrace or cross-process memory access, no signals to others,
 * files only read-only. Stage 2 (after loading, before the first call):
 * an allow-list of what a kernel needs (memory, threads, futex, time, exit,
 * writes to its own pipe and stdout/stderr). A forbidden call raises
 * SIGSYS; the handler reports the syscall number on the reply pipe. */
#ifndef CR_SANDBOX_H
#define CR_SANDBOX_H

#include "common/cr_status.h"

enum cr_status cr_sandbox_stage1(int reply_fd, struct cr_err *err);
enum cr_status cr_sandbox_stage2(int reply_fd, struct cr_err *err);
/* Name of a syscall number on this architecture ("?" if unknown). */
const char *cr_sandbox_syscall_name(int nr);

#endif
