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
	if (n > 1) /* v is NULL for an empty directory */
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

/* What a scan collects: the loaded tasks and the files that failed. */
struct scan {
	struct task *v;
	int n, cap;
	struct task_broken *bad;
	int n_bad, cap_bad;
};

static bool seen(struct scan *sc, const char *name, bool named)
{
	for (int i = 0; i < sc->n; i++)
		if (!strcmp(sc->v[i].name, name))
			return true;
	for (int i = 0; i < sc->n_bad; i++)
		if (!strcmp(sc->bad[i].name, name)) {
			sc->bad[i].named |= named;
			return true;
		}
	return false;
}

/* Loads one task into sc; a file that exists and fails to load is recorded
 * in sc->bad, not returned: one bad file fails only itself. */
static enum cr_status add_task(struct scan *sc, const char *name, bool named, struct cr_err *err)
{
	struct cr_err e;
	struct task_broken *b;

	if (seen(sc, name, named))
		return CR_OK;
	if (sc->n == sc->cap) {
		int nc = sc->cap ? sc->cap * 2 : 16;
		struct task *nv = realloc(sc->v, sizeof *sc->v * (size_t)nc);
		if (!nv)
			return cr_errf(err, CR_ENOMEM, "out of memory loading tasks");
		sc->v = nv;
		sc->cap = nc;
	}
	cr_err_init(&e);
	if (!task_registry_find(name, &sc->v[sc->n], &e)) {
		sc->n++;
		return CR_OK;
	}
	if (e.status == CR_ENOMEM || !task_registry_exists(name))
		return cr_errf(err, e.status, "%s", e.msg);
	if (sc->n_bad == sc->cap_bad) {
		int nc = sc->cap_bad ? sc->cap_bad * 2 : 4;
		struct task_broken *nb = realloc(sc->bad, sizeof *sc->bad * (size_t)nc);
		if (!nb)
			return cr_errf(err, CR_ENOMEM, "out of memory loading tasks");
		sc->bad = nb;
		sc->cap_bad = nc;
	}
	b = &sc->bad[sc->n_bad++];
	memset(b, 0, sizeof *b);
	snprintf(b->name, sizeof b->name, "%s", name);
	snprintf(b->msg, sizeof b->msg, "%s", e.msg);
	b->named = named;
	return CR_OK;
}

static int cmp_task(const void *a, const void *b)
{
	/* natural order: L1/2_x before L1/10_x */
	return strverscmp(((const struct task *)a)->name, ((const struct task *)b)->name);
}

static int cmp_broken(const void *a, const void *b)
{
	return strverscmp(((const struct task_broken *)a)->name, ((const struct task_broken *)b)->name);
}

/* Every task of set dir/set (a file name without ".json"). */
static enum cr_status add_set(struct scan *sc, const char *tdir, const char *set, bool must,
			      struct cr_err *err)
{
	enum cr_status st = CR_OK;
	char sdir[1024], **stems;
	int ns;

	snprintf(sdir, sizeof sdir, "%s/%s", tdir, set);
	ns = list_dir(sdir, ".json", &stems);
	if (ns <= 0 && must)
		st = cr_errf(err, CR_EINPUT, "unknown task set '%s' (no tasks in %s)", set, sdir);
	for (int k = 0; k < ns && !st; k++) {
		char nm[256];
		snprintf(nm, sizeof nm, "%s/%s", set, stems[k]);
		st = add_task(sc, nm, false, err);
	}
	free_list(stems, ns > 0 ? ns : 0);
	return st;
}

enum cr_status task_registry_scan(const char *spec, struct task **tasks, int *n,
				  struct task_broken **broken, int *n_broken, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	struct scan sc = { 0 };
	char *copy = NULL, *tok, *save = NULL, **sets = NULL, tdir[1024];
	int nsets = 0;

	snprintf(tdir, sizeof tdir, "%s/tasks", task_datadir());
	if (!spec || !spec[0]) {
		nsets = list_dir(tdir, NULL, &sets);
		if (nsets < 0) {
			st = cr_errf(err, CR_EENV, "cannot read the task directory %s", tdir);
			goto out;
		}
		for (int i = 0; i < nsets && !st; i++)
			st = add_set(&sc, tdir, sets[i], false, err);
		goto out;
	}
	copy = strdup(spec);
	if (!copy) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (tok = strtok_r(copy, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
		if (strchr(tok, '/'))
			st = add_task(&sc, tok, true, err);
		else if (strstr(tok, ".."))
			st = cr_errf(err, CR_EINPUT, "bad task set '%s'", tok);
		else
			st = add_set(&sc, tdir, tok, true, err);
	}
out:
	free(copy);
	free_list(sets, nsets > 0 ? nsets : 0);
	if (st) {
		task_list_free(sc.v, sc.n);
		free(sc.bad);
		sc = (struct scan){ 0 };
	} else {
		if (sc.n > 1)
			qsort(sc.v, (size_t)sc.n, sizeof *sc.v, cmp_task);
		if (sc.n_bad > 1)
			qsort(sc.bad, (size_t)sc.n_bad, sizeof *sc.bad, cmp_broken);
	}
	*tasks = sc.v;
	*n = sc.n;
	*broken = sc.bad;
	*n_broken = sc.n_bad;
	return st;
}

enum cr_status task_registry_load(const char *spec, struct task **tasks, int *n,
				  struct cr_err *err)
{
	struct task_broken *bad;
	int n_bad;
	enum cr_status st = task_registry_scan(spec, tasks, n, &bad, &n_bad, err);

	for (int i = 0; !st && i < n_bad; i++)
		if (bad[i].named) {
			st = cr_errf(err, CR_EINPUT, "%s", bad[i].msg);
			task_list_free(*tasks, *n);
			*tasks = NULL;
			*n = 0;
		}
	free(bad);
	return st;
}
