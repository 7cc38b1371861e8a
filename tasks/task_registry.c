/* task_registry.c — data/tasks/<set>/<stem>.json discovery. */
#include "tasks/task_registry.h"
#include "cr_config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *task_datadir(void)
{
	/* absolute, so workers started in their own directory find it too */
	static char abs[4096];
	const char *d = getenv("CRUCIBLE_DATADIR");
	d = d && d[0] ? d : CRUCIBLE_DATADIR;
	if (!abs[0] && !realpath(d, abs))
		snprintf(abs, sizeof abs, "%s", d);
	return abs;
}

static int cmp_str(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* Lists entries of dir (files ending in suffix, or directories when suffix
 * is NULL), sorted; malloc'd strings without the suffix. */
static int list_dir(const char *dir, const char *suffix, char ***out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	int n = 0;

	*out = NULL;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char p[1024];
		struct stat sb;
		size_t l = strlen(e->d_name);
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (stat(p, &sb))
			continue;
		if (suffix) {
			size_t sl = strlen(suffix);
			if (!S_ISREG(sb.st_mode) || l <= sl || strcmp(e->d_name + l - sl, suffix))
				continue;
			l -= sl;
		} else if (!S_ISDIR(sb.st_mode)) {
			continue;
		}
		char **nv = realloc(v, sizeof *v * (size_t)(n + 1));
		if (!nv)
			break;
		v = nv;
		v[n] = strndup(e->d_name, l);
		if (v[n])
			n++;
	}
	closedir(d);
	qsort(v, (size_t)n, sizeof *v, cmp_str);
	*out = v;
	return n;
}

static void free_list(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

bool task_registry_exists(const char *name)
{
	char path[1024];
	const char *slash = strchr(name, '/');
	struct stat sb;

	if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/') || strstr(name, ".."))
		return false;
	snprintf(path, sizeof path, "%s/tasks/%s.json", task_datadir(), name);
	return !stat(path, &sb);
}

enum cr_status task_registry_find(const char *name, struct task *t, struct cr_err *err)
{
	char path[1024];
	const char *slash = strchr(name, '/');
	struct stat sb;

	if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/') || strstr(name, ".."))
		return cr_errf(err, CR_EINPUT, "task name '%s': expected SET/NAME (e.g. smoke/relu)", name);
	snprintf(path, sizeof path, "%s/tasks/%s.json", task_datadir(), name);
	if (stat(path, &sb))
		return cr_errf(err, CR_EINPUT, "unknown task '%s' (no %s)", name, path);
	return task_load(t, path, name, err);
}

static enum cr_status add_task(struct task **v, int *n, int *cap, const char *name,
			       struct cr_err *err)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp((*v)[i].name, name))
			return CR_OK;
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 16;
		struct task *nv = realloc(*v, sizeof **v * (size_t)nc);
		if (!nv)
			return cr_errf(err, CR_ENOMEM, "out of memory loading tasks");
		*v = nv;
		*cap = nc;
	}
	if (task_registry_find(name, &(*v)[*n], err))
		return err->status;
	(*n)++;
	return CR_OK;
}

static int cmp_task(const void *a, const void *b)
{
	/* natural order: L1/2_x before L1/10_x */
	return strverscmp(((const struct task *)a)->name, ((const struct task *)b)->name);
}

enum cr_status task_registry_load(const char *spec, struct task **tasks, int *n,
				  struct cr_err *err)
{
	enum cr_status st = CR_OK;
	struct task *v = NULL;
	int cnt = 0, cap = 0;
	char *copy = NULL, *tok, *save = NULL, **sets = NULL, tdir[1024];
	int nsets = 0;

	snprintf(tdir, sizeof tdir, "%s/tasks", task_datadir());
	if (!spec || !spec[0]) {
		nsets = list_dir(tdir, NULL, &sets);
		if (nsets < 0) {
			st = cr_errf(err, CR_EENV, "cannot read the task directory %s", tdir);
			goto out;
		}
		for (int i = 0; i < nsets && !st; i++) {
			char sdir[1024], **stems;
			int ns;
			snprintf(sdir, sizeof sdir, "%s/%s", tdir, sets[i]);
			ns = list_dir(sdir, ".json", &stems);
			for (int k = 0; k < ns && !st; k++) {
				char nm[256];
				snprintf(nm, sizeof nm, "%s/%s", sets[i], stems[k]);
				st = add_task(&v, &cnt, &cap, nm, err);
			}
			free_list(stems, ns > 0 ? ns : 0);
		}
		goto out;
	}
	copy = strdup(spec);
	if (!copy) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (tok = strtok_r(copy, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
		if (strchr(tok, '/')) {
			st = add_task(&v, &cnt, &cap, tok, err);
		} else {
			char sdir[1024], **stems;
			int ns;
			if (strstr(tok, "..")) {
				st = cr_errf(err, CR_EINPUT, "bad task set '%s'", tok);
				break;
			}
			snprintf(sdir, sizeof sdir, "%s/%s", tdir, tok);
			ns = list_dir(sdir, ".json", &stems);
			if (ns <= 0) {
				free_list(stems, ns > 0 ? ns : 0);
				st = cr_errf(err, CR_EINPUT, "unknown task set '%s' (no tasks in %s)", tok, sdir);
				break;
			}
			for (int k = 0; k < ns && !st; k++) {
				char nm[256];
				snprintf(nm, sizeof nm, "%s/%s", tok, stems[k]);
				st = add_task(&v, &cnt, &cap, nm, err);
			}
			free_list(stems, ns);
		}
	}
out:
	free(copy);
	free_list(sets, nsets > 0 ? nsets : 0);
	if (st) {
		free(v);
		v = NULL;
		cnt = 0;
	} else if (cnt > 1) {
		qsort(v, (size_t)cnt, sizeof *v, cmp_task);
	}
	*tasks = v;
	*n = cnt;
	return st;
}
