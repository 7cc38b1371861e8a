/* task_registry.h — finding and loading task sets under data/tasks/, and
 * task specs in the forms KernelBench users type (SPEC §2 "Task names"). */
#ifndef TASK_REGISTRY_H
#define TASK_REGISTRY_H

#include <stddef.h>

#include "tasks/task.h"

/* The data directory: $CRUCIBLE_DATADIR, else the source tree's data/. */
const char *task_datadir(void);

/* A task file that failed to load (SPEC §2: it fails only itself). */
struct task_broken {
	char name[128];    /* "<set>/<stem>" */
	char msg[1024];    /* the loader's message: the file, the field, what is wrong */
	bool named;        /* the spec named this task (a name, an id), not only its set, range or glob */
};

/* A task spec is a comma-separated list of elements (spaces around one are
 * dropped; the same task selected twice counts once):
 *   L1               a set: every task of data/tasks/L1/
 *   L1/23_Softmax    a task by its full name "<set>/<stem>" (canonical)
 *   L1/23            a KernelBench problem id: the task whose stem is "23_..."
 *   L1/softmax       a short name: the stem after "N_", in any case, trailing
 *                    '_' ignored (23_Softmax, 26_GELU_); also the stem in any case
 *   L1/1-10          an id range, inclusive (absent ids are skipped)
 *   L1/2?_*          a glob: fnmatch over the full names of every set, in
 *                    any case, '*' crossing '/' (so "*Conv*" restricted to
 *                    L2, or "19_*" in any set, are globs too: SPEC §2)
 * A set's name may be given in another case ("l1/23") or as KernelBench's
 * level ("level1/23"); a path to a task or problem file ending ".json" or
 * ".py" names the task of its last two components
 * ("data/tasks/L1/23_Softmax.json", "level1/23_Softmax.py"). Errors (CR_EINPUT,
 * exit 2 in every command; the message says "unknown task 'X' ..." with a
 * did-you-mean, or "'X' matches no task", or "task 'X' is ambiguous: ..."
 * listing the matches, or "bad id range 'X' ..."): an unknown set, name or
 * id; a short name several tasks of the set share; a malformed or reversed
 * range; a range or glob that matches nothing. CR_EENV: the task directory
 * cannot be read. */

/* Loads the tasks a spec selects; NULL means every set, a spec naming
 * nothing ("", ",") is CR_EINPUT. Sorted by
 * name (natural order: L1/2_x before L1/10_x). A task file of a listed set,
 * range or glob that fails to load is left out (the rest loads); one the
 * spec names (by name or id) fails the call with its message.
 * *tasks is malloc'd (NULL when none loads); the caller frees it
 * (task_list_free). */
enum cr_status task_registry_load(const char *spec, struct task **tasks, int *n,
				  struct cr_err *err);
/* As task_registry_load, but every task file that fails to load, named or
 * not, is reported in *broken ([*n_broken], sorted by name, malloc'd, NULL
 * when none; the caller frees it) instead of failing the call. Errors:
 * those of a spec (above), an unreadable directory, no memory. */
enum cr_status task_registry_scan(const char *spec, struct task **tasks, int *n,
				  struct task_broken **broken, int *n_broken, struct cr_err *err);
/* The canonical names a spec selects, without loading a file: sorted as
 * task_registry_load sorts, each once; *names ([*n], NULL when none) is
 * freed with task_registry_names_free. Cheap: a directory listing. */
enum cr_status task_registry_names(const char *spec, char ***names, int *n, struct cr_err *err);
void task_registry_names_free(char **names, int n);

/* One task named by any single-task form (full name, SET/ID, short name,
 * set in any case) -> its canonical "<set>/<stem>" in canon[cap]. A glob or
 * a range is an error here (one task is needed). A full name costs one
 * stat; other forms one directory listing. */
enum cr_status task_registry_resolve(const char *name, char *canon, size_t cap, struct cr_err *err);
/* Loads one task named by any single-task form (as task_registry_resolve);
 * t->name is the canonical name, whatever the spelling given. */
enum cr_status task_registry_find(const char *name, struct task *t, struct cr_err *err);
/* As task_registry_find, but only the canonical full name is a task here
 * (a candidate's `@task`, SPEC §3): another form is an "unknown task" whose
 * message gives the full name ("did you mean 'L1/23_Softmax'?"). */
enum cr_status task_registry_find_exact(const char *name, struct task *t, struct cr_err *err);
/* A task file of exactly that canonical name exists (well-formed or not);
 * no other form is resolved here (task_registry_resolve does that). */
bool task_registry_exists(const char *name);

/* Each set's KernelBench ids are unique (no two stems "23_..."): CR_EINPUT
 * naming both files otherwise, CR_EENV when the task directory cannot be
 * read. For `crucible lint`, the registry's CI gate. */
enum cr_status task_registry_check_ids(struct cr_err *err);

/* Without the registry, for names that need not exist in it (a results
 * file's rows: `report --tasks`, `gate --tasks`): whether name is selected
 * by spec, element by element, by the forms above (a set: its prefix "SET/";
 * a full name; an id; a range; a glob; a short name), set names in any
 * case. NULL or "" selects every name. */
bool task_spec_matches(const char *spec, const char *name);
/* The syntax of a spec alone, without the registry: CR_EINPUT for a
 * malformed element ("L1//x") or a malformed or reversed range, the message
 * worded as task_registry_scan words it. */
enum cr_status task_spec_check(const char *spec, struct cr_err *err);

#endif
