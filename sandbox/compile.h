/* compile.h — building a candidate for the cpu backend: a trampoline per
 * launch (generated C that includes the candidate first and calls its
 * function with typed pointers), compiled by the system C compiler into a
 * shared object, argv only (never a shell), confined (compile.c). */
#ifndef CR_COMPILE_H
#define CR_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include "common/cr_verdict.h"  /* enum cr_compile_result */
#include "cand/plan.h"


/* workdir: the root-owned run directory. Writes cand.c and tramp.c into
 * workdir/cc (the compiler's, removed afterwards), builds there, and copies
 * the result to workdir/cand.so (root's); workdir/compile.log is the
 * compiler's output. log gets its tail, or what went wrong. */
enum cr_compile_result cr_compile_cpu(const struct cr_plan *p, const char *src, size_t len,
				      const char *workdir, double timeout_s, char *log,
				      size_t cap);
/* Runs argv with stdout+stderr into log_path, killing it after timeout_s,
 * with a clean environment; unprivileged: as uid/gid nobody when root.
 * Returns the exit status (>= 0), -1 on timeout, -2 if it could not run. */
int cr_run_argv(char *const argv[], const char *log_path, double timeout_s, bool unprivileged);
/* How the compiler is confined, one line for run.json and `check`, e.g.
 * "landlock v7, namespaces pid+net+ipc, uid nobody", or "no landlock: …". */
const char *cr_compile_sandbox(void);
/* Removes path and all below it through descriptors (no link followed);
 * 0, or -1 with errno. */
int cr_remove_tree(const char *path);

#endif
