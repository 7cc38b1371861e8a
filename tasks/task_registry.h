/* task_registry.h — finding and loading task sets under data/tasks/. */
#ifndef TASK_REGISTRY_H
#define TASK_REGISTRY_H

#include "tasks/task.h"

/* The data directory: $CRUCIBLE_DATADIR, else the source tree's data/. */
const char *task_datadir(void);

/* A task file that failed to load (SPEC §2: it fails only itself). */
struct task_broken {
	char name[128];    /* "<set>/<stem>" */
	char msg[1024];    /* the loader's message: the file, the field, what is wrong */
	bool named;        /* the spec named this task, not only its set */
};

/* Loads tasks named by a comma-separated list of sets ("smoke", "L1") and
 * task names ("L1/softmax"); NULL or "" means every set. Sorted by name.
 * A task file of a listed set that fails to load is left out (the rest of
 * its set loads); one the spec names fails the call with its message.
 * *tasks is malloc'd; the caller frees it (task_list_free). */
enum cr_status task_registry_load(const char *spec, struct task **tasks, int *n,
				  struct cr_err *err);
/* As task_registry_load, but every task file that fails to load, named or
 * not, is reported in *broken ([*n_broken], sorted by name, malloc'd, NULL
 * when none; the caller frees it) instead of failing the call. Errors:
 * a malformed spec, an unknown set or task, an unreadable directory, no
 * memory. */
enum cr_status task_registry_scan(const char *spec, struct task **tasks, int *n,
				  struct task_broken **broken, int *n_broken, struct cr_err *err);
/* Loads one task by name ("smoke/relu"). */
/* A task of that name has a file in the registry (well-formed or not). */
bool task_registry_exists(const char *name);
enum cr_status task_registry_find(const char *name, struct task *t, struct cr_err *err);

#endif
