/* task_registry.h — finding and loading task sets under data/tasks/. */
#ifndef TASK_REGISTRY_H
#define TASK_REGISTRY_H

#include "tasks/task.h"

/* The data directory: $CRUCIBLE_DATADIR, else the source tree's data/. */
const char *task_datadir(void);

/* Loads tasks named by a comma-separated list of sets ("smoke", "L1") and
 * task names ("L1/softmax"); NULL or "" means every set. Sorted by name.
 * *tasks is malloc'd; the caller frees it. */
enum cr_status task_registry_load(const char *spec, struct task **tasks, int *n,
				  struct cr_err *err);
/* Loads one task by name ("smoke/relu"). */
/* A task of that name has a file in the registry (well-formed or not). */
bool task_registry_exists(const char *name);
enum cr_status task_registry_find(const char *name, struct task *t, struct cr_err *err);

#endif
