/* task_registry.c — data/tasks/<set>/<stem>.json discovery, and task specs
 * resolved the way KernelBench users name tasks: a set ("L1"), a full name
 * ("L1/23_Softmax"), a problem id ("L1/23"), an id range ("L1/1-10"), a glob
 * over full names (case-insensitive; see task_registry.h) and a short name
 * ("L1/softmax": the stem after "N_", any case, trailing '_' ignored). */
#include "tasks/task_registry.h"
#include "common/cr_cli.h"
#include "cr_config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
 * is NULL), sorted; malloc'd strings without the suffix. -1 when dir cannot
 * be read. */
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

/* ---- the registry's directory listing, read lazily ---- */

struct reg {
	char tdir[1024];  /* <datadir>/tasks */
	char **sets;      /* [n_sets], sorted */
	int n_sets;       /* -1: not read yet */
	char ***stems;    /* [n_sets]: each set's stems, sorted; read on demand */
	int *n_stems;     /* [n_sets]; -2: not read yet, -1: unreadable */
};

static void reg_init(struct reg *r)
{
	memset(r, 0, sizeof *r);
	r->n_sets = -1;
	snprintf(r->tdir, sizeof r->tdir, "%s/tasks", task_datadir());
}

static void reg_free(struct reg *r)
{
	for (int i = 0; i < r->n_sets; i++)
		if (r->n_stems && r->n_stems[i] > 0)
			free_list(r->stems[i], r->n_stems[i]);
	free(r->stems);
	free(r->n_stems);
	if (r->n_sets > 0)
		free_list(r->sets, r->n_sets);
	memset(r, 0, sizeof *r);
}

static enum cr_status reg_sets(struct reg *r, struct cr_err *err)
{
	if (r->n_sets >= 0)
		return CR_OK;
	r->n_sets = list_dir(r->tdir, NULL, &r->sets);
	if (r->n_sets < 0)
		return cr_errf(err, CR_EENV, "cannot read the task directory %s", r->tdir);
	r->stems = calloc((size_t)r->n_sets + 1, sizeof *r->stems);
	r->n_stems = calloc((size_t)r->n_sets + 1, sizeof *r->n_stems);
	if (!r->stems || !r->n_stems)
		return cr_errf(err, CR_ENOMEM, "out of memory listing tasks");
	for (int i = 0; i < r->n_sets; i++)
		r->n_stems[i] = -2;
	return CR_OK;
}

/* The stems of set i (0 of them when the folder has none or is unreadable). */
static int reg_stems(struct reg *r, int i, char ***stems)
{
	if (r->n_stems[i] == -2) {
		char sdir[2048];
		snprintf(sdir, sizeof sdir, "%s/%s", r->tdir, r->sets[i]);
		r->n_stems[i] = list_dir(sdir, ".json", &r->stems[i]);
	}
	*stems = r->stems[i];
	return r->n_stems[i] > 0 ? r->n_stems[i] : 0;
}

/* The set called name: exactly, else the one set of that name in another
 * case ("l1"); -1 when none (or several in other cases). */
static int reg_find_set(struct reg *r, const char *name, size_t len)
{
	int hit = -1;
	for (int i = 0; i < r->n_sets; i++)
		if (strlen(r->sets[i]) == len && !strncmp(r->sets[i], name, len))
			return i;
	for (int i = 0; i < r->n_sets; i++)
		if (strlen(r->sets[i]) == len && !strncasecmp(r->sets[i], name, len)) {
			if (hit >= 0)
				return -1;
			hit = i;
		}
	return hit;
}

/* "L1, L2, L3, smoke" */
static void set_names(const struct reg *r, char *buf, size_t cap)
{
	size_t l = 0;
	buf[0] = '\0';
	for (int i = 0; i < r->n_sets && l < cap; i++)
		l += (size_t)snprintf(buf + l, cap - l, "%s%s", i ? ", " : "", r->sets[i]);
	if (!r->n_sets)
		snprintf(buf, cap, "none");
}

/* ---- names: ids and short names ---- */

/* A stem's KernelBench id: its leading digits when an '_' follows them. */
static bool stem_id(const char *stem, unsigned long *id)
{
	const char *p = stem;
	unsigned long v = 0;
	while (isdigit((unsigned char)*p) && p - stem < 9)
		v = v * 10 + (unsigned long)(*p++ - '0');
	if (p == stem || *p != '_')
		return false;
	*id = v;
	return true;
}

/* A stem's short name: after "N_", without trailing '_' (len in *len). */
static const char *stem_short(const char *stem, size_t *len)
{
	unsigned long id;
	const char *k = stem;
	size_t l;
	if (stem_id(stem, &id))
		k = strchr(stem, '_') + 1;
	l = strlen(k);
	while (l && k[l - 1] == '_')
		l--;
	*len = l;
	return k;
}

/* word (without trailing '_') equals the stem or its short name, in any case. */
static bool stem_matches(const char *stem, const char *word)
{
	size_t wl = strlen(word), sl = strlen(stem), kl;
	const char *k = stem_short(stem, &kl);
	while (wl && word[wl - 1] == '_')
		wl--;
	while (sl && stem[sl - 1] == '_')
		sl--;
	if (!wl)
		return false;
	return (wl == kl && !strncasecmp(k, word, wl)) || (wl == sl && !strncasecmp(stem, word, wl));
}

/* A KernelBench problem crucible leaves out (data/excluded/<SET>*.json:
 * [{"source": "KernelBench/levelN/ID_Name.py", "reason": ...}]): its reason
 * and file into why (empty when id is not excluded). For the message of an
 * id the set lacks: "excluded" says more than "no such id". */
static void excluded_reason(const char *set, unsigned long id, char *why, size_t cap)
{
	char dir[600], path[900], want[64];
	DIR *d;
	struct dirent *de;
	size_t sl = strlen(set);

	why[0] = '\0';
	if (set[0] != 'L' || !isdigit((unsigned char)set[1]))
		return;
	snprintf(want, sizeof want, "level%s/%lu_", set + 1, id);
	snprintf(dir, sizeof dir, "%s/excluded", task_datadir());
	if (!(d = opendir(dir)))
		return;
	while (!why[0] && (de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		struct cr_err e;
		size_t len = 0;
		char *buf;
		json_t *j, *it;
		size_t i;

		if (strncmp(de->d_name, set, sl) || (de->d_name[sl] != '.' && de->d_name[sl] != '-') ||
		    nl < 5 || strcmp(de->d_name + nl - 5, ".json"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		cr_err_init(&e);
		if (!(buf = cr_read_data(NULL, path, CR_DATA_MAX_JSON, CR_DATA_FOLLOW, &len, &e)))
			continue;
		j = json_loadb(buf, len, 0, NULL);
		free(buf);
		json_array_foreach(j, i, it) {
			const char *src = json_string_value(json_object_get(it, "source"));
			const char *reason = json_string_value(json_object_get(it, "reason"));

			if (src && reason && strstr(src, want)) {
				snprintf(why, cap, "%s is excluded: %.300s (data/excluded/%s)", src, reason,
					 de->d_name);
				break;
			}
		}
		json_decref(j);
	}
	closedir(d);
}

/* digits only (at most 9), as an id */
static bool parse_id(const char *s, size_t len, unsigned long *id)
{
	unsigned long v = 0;
	if (!len || len > 9)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*id = v;
	return true;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* only digits and '-', with at least one '-': meant as an id range */
static bool range_shaped(const char *s)
{
	if (!strchr(s, '-'))
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && *s != '-')
			return false;
	return true;
}

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* A task file's path as a name: "data/tasks/L1/23_Softmax.json" (tab
 * completion) or KernelBench's "level1/23_Softmax.py" is "<set>/<stem>" of
 * its last two components; KernelBench's "level1" is the set L1. */
static void normalize(const char *in, char *out, size_t cap)
{
	size_t l = strlen(in), d;
	size_t sl = l > 5 && !strcmp(in + l - 5, ".json") ? 5 : l > 3 && !strcmp(in + l - 3, ".py") ? 3 : 0;

	if (sl) {
		const char *cut = in;
		int slashes = 0;
		l -= sl;
		for (const char *p = in + l; p > in; p--)
			if (p[-1] == '/' && ++slashes == 2) {
				cut = p;
				break;
			}
		l -= (size_t)(cut - in);
		in = cut;
	}
	d = l > 5 && !strncasecmp(in, "level", 5) ? strspn(in + 5, "0123456789") : 0;
	if (d && (5 + d == l || in[5 + d] == '/'))
		snprintf(out, cap, "L%.*s", (int)(l - 5), in + 5);
	else
		snprintf(out, cap, "%.*s", (int)l, in);
}

/* ---- a selection: canonical names, each once ---- */

struct sel {
	char (*name)[128];
	bool *named;  /* the spec named it (a name, an id), not only its set, range or glob */
	int n, cap;
};

static enum cr_status sel_add(struct sel *s, const char *set, const char *stem, bool named,
			      struct cr_err *err)
{
	char nm[128];
	if ((size_t)snprintf(nm, sizeof nm, "%s/%s", set, stem) >= sizeof nm)
		return cr_errf(err, CR_EINPUT, "task name '%s/%s' is too long", set, stem);
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], nm)) {
			s->named[i] |= named;
			return CR_OK;
		}
	if (s->n == s->cap) {
		int nc = s->cap ? s->cap * 2 : 64;
		char (*nv)[128] = realloc(s->name, sizeof *nv * (size_t)nc);
		if (!nv)
			return cr_errf(err, CR_ENOMEM, "out of memory selecting tasks");
		s->name = nv;
		bool *nb = realloc(s->named, sizeof *nb * (size_t)nc);
		if (!nb)
			return cr_errf(err, CR_ENOMEM, "out of memory selecting tasks");
		s->named = nb;
		s->cap = nc;
	}
	memcpy(s->name[s->n], nm, sizeof nm);
	s->named[s->n++] = named;
	return CR_OK;
}

static void sel_free(struct sel *s)
{
	free(s->name);
	free(s->named);
	memset(s, 0, sizeof *s);
}

/* ---- resolving one element ---- */

#define FORMS "SET, SET/NAME, SET/ID, SET/FIRST-LAST or a glob (e.g. L1, L1/23_Softmax, " \
	      "L1/softmax, L1/23, L1/1-10, 'L2/*Conv*')"

/* An unknown name in set si: the nearest name or short name of that set, by
 * cr_cli_suggest over lower-cased forms, else the same short name in another
 * set; the canonical "SET/STEM" in hint, or "" when nothing is near. */
static void suggest_in(struct reg *r, int si, const char *word, char *hint, size_t cap)
{
	char **stems, w[128], **low = NULL;
	int ns = reg_stems(r, si, &stems), nl = 0;
	const char *best;
	size_t wl;

	hint[0] = '\0';
	snprintf(w, sizeof w, "%s", word);
	for (char *p = w; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	wl = strlen(w);
	while (wl && w[wl - 1] == '_')
		w[--wl] = '\0';
	low = calloc((size_t)ns * 2 + 1, sizeof *low);
	if (!low)
		return;
	for (int i = 0; i < ns; i++) {
		size_t kl, sl = strlen(stems[i]);
		const char *k = stem_short(stems[i], &kl);
		while (sl && stems[i][sl - 1] == '_')
			sl--;
		low[nl] = strndup(stems[i], sl);
		low[nl + 1] = strndup(k, kl);
		for (int j = nl; j < nl + 2; j++)
			for (char *p = low[j]; p && *p; p++)
				*p = (char)tolower((unsigned char)*p);
		if (!low[nl] || !low[nl + 1]) {
			free(low[nl]);
			free(low[nl + 1]);
			break;
		}
		nl += 2;
	}
	best = wl ? cr_cli_suggest(w, (const char *const *)low, nl) : NULL;
	for (int i = 0; best && i < nl; i++)
		if (low[i] == best) {
			snprintf(hint, cap, "%s/%s", r->sets[si], stems[i / 2]);
			break;
		}
	free_list(low, nl);
	/* the short name of a task of another set: L2/softmax -> L1/23_Softmax */
	for (int o = 0; !hint[0] && o < r->n_sets; o++) {
		if (o == si)
			continue;
		ns = reg_stems(r, o, &stems);
		for (int i = 0; i < ns; i++)
			if (stem_matches(stems[i], word)) {
				snprintf(hint, cap, "%s/%s", r->sets[o], stems[i]);
				break;
			}
	}
}

/* The one task of set si that rest names: its stem exactly, its id ("23"),
 * or its stem or short name in any case ("softmax", "23_softmax"). The stem
 * in *stem (pointing into r). full is the element as written, for messages. */
static enum cr_status resolve_in_set(struct reg *r, int si, const char *rest, const char *full,
				     const char **stem, struct cr_err *err)
{
	char **stems;
	int ns = reg_stems(r, si, &stems), hits[8], nh = 0, total = 0;
	unsigned long want = 0, id, lo = (unsigned long)-1, hi = 0;
	const char *set = r->sets[si];

	*stem = NULL;
	for (int i = 0; i < ns; i++)
		if (!strcmp(stems[i], rest)) {
			*stem = stems[i];
			return CR_OK;
		}
	if (all_digits(rest)) {
		bool ok = parse_id(rest, strlen(rest), &want);
		for (int i = 0; i < ns; i++) {
			if (!stem_id(stems[i], &id))
				continue;
			lo = id < lo ? id : lo;
			hi = id > hi ? id : hi;
			if (ok && id == want) {
				if (nh < 8)
					hits[nh++] = i;
				total++;
			}
		}
		if (!total) {
			if (!hi && lo == (unsigned long)-1)
				return cr_errf(err, CR_EINPUT, "unknown task '%s' (the tasks of %s have no ids; "
					       "`crucible list %s` lists them)", full, set, set);
			char why[512];

			if (ok)
				excluded_reason(set, want, why, sizeof why);
			if (ok && why[0])
				return cr_errf(err, CR_EINPUT, "unknown task '%s' (%s)", full, why);
			return cr_errf(err, CR_EINPUT, "unknown task '%s' (no task of %s has id %s; "
				       "its ids run %lu-%lu)", full, set, rest, lo, hi);
		}
	} else {
		for (int i = 0; i < ns; i++)
			if (stem_matches(stems[i], rest)) {
				if (nh < 8)
					hits[nh++] = i;
				total++;
			}
	}
	if (total == 1) {
		*stem = stems[hits[0]];
		return CR_OK;
	}
	if (total > 1) {
		char list[768];
		size_t l = 0;
		list[0] = '\0';
		for (int i = 0; i < nh && l < sizeof list; i++)
			l += (size_t)snprintf(list + l, sizeof list - l, "%s%s/%s", i ? ", " : "", set,
					      stems[hits[i]]);
		return cr_errf(err, CR_EINPUT, "task '%s' is ambiguous: %d tasks match (%s%s); "
			       "name one by its full name or id", full, total, list, total > nh ? ", ..." : "");
	}
	char hint[256];
	suggest_in(r, si, rest, hint, sizeof hint);
	if (hint[0])
		return cr_errf(err, CR_EINPUT, "unknown task '%s' (did you mean '%s'? `crucible list %s` "
			       "lists the tasks of %s)", full, hint, set, set);
	return cr_errf(err, CR_EINPUT, "unknown task '%s' (no task of %s has that name, id or short "
		       "name; `crucible list %s` lists them)", full, set, set);
}

/* Splits "SET/REST" and finds the set. *rest points into name. */
static enum cr_status split_name(struct reg *r, const char *name, int *si, const char **rest,
				 struct cr_err *err)
{
	const char *slash = strchr(name, '/');
	enum cr_status st;

	if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/') || strstr(name, ".."))
		return cr_errf(err, CR_EINPUT, "task name '%s': expected %s", name, FORMS);
	if ((st = reg_sets(r, err)))
		return st;
	*si = reg_find_set(r, name, (size_t)(slash - name));
	*rest = slash + 1;
	if (*si < 0) {
		char sets[256];
		set_names(r, sets, sizeof sets);
		return cr_errf(err, CR_EINPUT, "unknown task '%s' (no task set '%.*s' in %s; the sets: %s)",
			       name, (int)(slash - name), name, r->tdir, sets);
	}
	return CR_OK;
}

/* An id range "FIRST-LAST" of set si: every task whose id is in it. */
static enum cr_status add_range(struct reg *r, struct sel *s, int si, const char *rest,
				const char *full, struct cr_err *err)
{
	const char *dash = strchr(rest, '-');
	unsigned long a, b, id, lo = (unsigned long)-1, hi = 0;
	char **stems;
	int ns, hits = 0;
	enum cr_status st;

	if (!parse_id(rest, (size_t)(dash - rest), &a) || !parse_id(dash + 1, strlen(dash + 1), &b))
		return cr_errf(err, CR_EINPUT, "bad id range '%s' (expected SET/FIRST-LAST, e.g. L1/1-10)",
			       full);
	if (a > b)
		return cr_errf(err, CR_EINPUT, "bad id range '%s' (%lu is above %lu; write %lu-%lu)", full,
			       a, b, b, a);
	ns = reg_stems(r, si, &stems);
	for (int i = 0; i < ns; i++) {
		if (!stem_id(stems[i], &id))
			continue;
		lo = id < lo ? id : lo;
		hi = id > hi ? id : hi;
		if (id < a || id > b)
			continue;
		if ((st = sel_add(s, r->sets[si], stems[i], false, err)))
			return st;
		hits++;
	}
	if (hits)
		return CR_OK;
	if (lo == (unsigned long)-1)
		return cr_errf(err, CR_EINPUT, "'%s' matches no task (the tasks of %s have no ids)", full,
			       r->sets[si]);
	return cr_errf(err, CR_EINPUT, "'%s' matches no task (the ids of %s run %lu-%lu)", full,
		       r->sets[si], lo, hi);
}

/* A glob over full names "SET/STEM", case-insensitive. */
static enum cr_status add_glob(struct reg *r, struct sel *s, const char *pat, struct cr_err *err)
{
	enum cr_status st;
	int hits = 0;

	if ((st = reg_sets(r, err)))
		return st;
	for (int si = 0; si < r->n_sets; si++) {
		char **stems;
		int ns = reg_stems(r, si, &stems);
		for (int i = 0; i < ns; i++) {
			char nm[256];
			snprintf(nm, sizeof nm, "%s/%s", r->sets[si], stems[i]);
			if (fnmatch(pat, nm, FNM_CASEFOLD))
				continue;
			if ((st = sel_add(s, r->sets[si], stems[i], false, err)))
				return st;
			hits++;
		}
	}
	if (!hits)
		return cr_errf(err, CR_EINPUT, "'%s' matches no task (a glob matches full names SET/STEM, "
			       "in any case; `crucible list` lists them)", pat);
	return CR_OK;
}

/* Every task of a set. must: an unknown or empty set is an error. */
static enum cr_status add_set(struct reg *r, struct sel *s, const char *name, bool must,
			      struct cr_err *err)
{
	enum cr_status st;
	char **stems;
	int si, ns;

	if ((st = reg_sets(r, err)))
		return st;
	si = strstr(name, "..") ? -1 : reg_find_set(r, name, strlen(name));
	ns = si >= 0 ? reg_stems(r, si, &stems) : 0;
	if (ns <= 0 && must) {
		char sets[256], hint[256] = "";
		set_names(r, sets, sizeof sets);
		/* a task's stem or short name without its set: "softmax"
		 * (smoke/softmax, the stem itself, before L1/23_Softmax) */
		for (int pass = 0; pass < 2 && !hint[0]; pass++)
			for (int o = 0; o < r->n_sets && !hint[0]; o++) {
				char **os;
				int on = reg_stems(r, o, &os);
				for (int i = 0; i < on; i++)
					if (pass ? stem_matches(os[i], name) : !strcmp(os[i], name)) {
						snprintf(hint, sizeof hint, "%s/%s", r->sets[o], os[i]);
						break;
					}
			}
		if (!hint[0]) {
			const char *near = cr_cli_suggest(name, (const char *const *)r->sets, r->n_sets);
			if (near)
				snprintf(hint, sizeof hint, "%s", near);
		}
		if (si >= 0)
			return cr_errf(err, CR_EINPUT, "unknown task set '%s' (no tasks in %s/%s)", name,
				       r->tdir, r->sets[si]);
		if (hint[0])
			return cr_errf(err, CR_EINPUT, "unknown task set '%s' (did you mean '%s'? the sets: %s)",
				       name, hint, sets);
		return cr_errf(err, CR_EINPUT, "unknown task set '%s' (no %s/%s; the sets: %s)", name,
			       r->tdir, name, sets);
	}
	for (int i = 0; i < ns; i++)
		if ((st = sel_add(s, r->sets[si], stems[i], false, err)))
			return st;
	return CR_OK;
}

/* One element of a spec, spaces around it dropped. */
static enum cr_status add_element(struct reg *r, struct sel *s, const char *el, struct cr_err *err)
{
	enum cr_status st;
	const char *rest, *stem;
	char tok[256];
	int si;

	if (strlen(el) >= sizeof tok)
		return cr_errf(err, CR_EINPUT, "task name '%.40s...' is too long", el);
	normalize(el, tok, sizeof tok);
	if (is_glob(tok))
		return add_glob(r, s, tok, err);
	if (!strchr(tok, '/'))
		return add_set(r, s, tok, true, err);
	if ((st = split_name(r, tok, &si, &rest, err)))
		return st;
	if (range_shaped(rest))
		return add_range(r, s, si, rest, tok, err);
	if ((st = resolve_in_set(r, si, rest, tok, &stem, err)))
		return st;
	return sel_add(s, r->sets[si], stem, true, err);
}

/* The next element of a comma-separated spec (strtok_r on str, then NULL),
 * blanks around it cut: "" for an empty one, NULL after the last. */
static char *spec_next(char *str, char **save)
{
	char *tok = strtok_r(str, ",", save);
	size_t l;

	if (!tok)
		return NULL;
	while (isspace((unsigned char)*tok))
		tok++;
	l = strlen(tok);
	while (l && isspace((unsigned char)tok[l - 1]))
		tok[--l] = '\0';
	return tok;
}

/* The selection of a spec (NULL: every set). A spec given but naming nothing
 * ("", ",", blanks: an unset variable in a script) is an error, never every
 * task. */
static enum cr_status select_spec(struct reg *r, const char *spec, struct sel *s, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	char *copy, *tok, *save = NULL;
	int named = 0;

	if (!spec) {
		if ((st = reg_sets(r, err)))
			return st;
		for (int i = 0; i < r->n_sets && !st; i++)
			st = add_set(r, s, r->sets[i], false, err);
		return st;
	}
	copy = strdup(spec);
	if (!copy)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	for (tok = spec_next(copy, &save); tok && !st; tok = spec_next(NULL, &save)) {
		if (*tok) {
			named++;
			st = add_element(r, s, tok, err);
		}
	}
	if (!st && !named)
		st = cr_errf(err, CR_EINPUT, "an empty task spec (name a set such as L1 or smoke, or tasks; "
			     "leave the option out for every task)");
	free(copy);
	return st;
}

/* ---- the public functions ---- */

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

enum cr_status task_registry_resolve(const char *name, char *canon, size_t cap, struct cr_err *err)
{
	struct reg r;
	enum cr_status st;
	const char *rest, *stem;
	char buf[256], raw[256];
	size_t l;
	int si;

	if (cap)
		canon[0] = '\0';
	/* the common case, a full name: one stat */
	if (task_registry_exists(name)) {
		if ((size_t)snprintf(canon, cap, "%s", name) >= cap)
			return cr_errf(err, CR_EINPUT, "task name '%s' is too long", name);
		return CR_OK;
	}
	while (isspace((unsigned char)*name))
		name++;
	if (strlen(name) >= sizeof raw)
		return cr_errf(err, CR_EINPUT, "task name '%.40s...' is too long", name);
	snprintf(raw, sizeof raw, "%s", name);
	l = strlen(raw);
	while (l && isspace((unsigned char)raw[l - 1]))
		raw[--l] = '\0';
	normalize(raw, buf, sizeof buf);
	if (is_glob(buf) || (strchr(buf, '/') && range_shaped(strchr(buf, '/') + 1)))
		return cr_errf(err, CR_EINPUT, "'%s' selects tasks by a pattern; one task is needed here "
			       "(SET/NAME, SET/ID or SET/SHORTNAME, e.g. L1/23)", buf);
	reg_init(&r);
	st = split_name(&r, buf, &si, &rest, err);
	if (!st)
		st = resolve_in_set(&r, si, rest, buf, &stem, err);
	if (!st && (size_t)snprintf(canon, cap, "%s/%s", r.sets[si], stem) >= cap)
		st = cr_errf(err, CR_EINPUT, "task name '%s/%s' is too long", r.sets[si], stem);
	reg_free(&r);
	return st;
}

enum cr_status task_registry_find(const char *name, struct task *t, struct cr_err *err)
{
	char canon[128], path[1200];
	enum cr_status st = task_registry_resolve(name, canon, sizeof canon, err);

	if (st)
		return st;
	snprintf(path, sizeof path, "%s/tasks/%s.json", task_datadir(), canon);
	return task_load(t, path, canon, err);
}

enum cr_status task_registry_names(const char *spec, char ***names, int *n, struct cr_err *err)
{
	struct reg r;
	struct sel s = { 0 };
	enum cr_status st;

	*names = NULL;
	*n = 0;
	reg_init(&r);
	st = select_spec(&r, spec, &s, err);
	reg_free(&r);
	if (!st && s.n) {
		*names = calloc((size_t)s.n + 1, sizeof **names);
		if (!*names)
			st = cr_errf(err, CR_ENOMEM, "out of memory");
		for (int i = 0; !st && i < s.n; i++)
			if (!((*names)[i] = strdup(s.name[i]))) {
				st = cr_errf(err, CR_ENOMEM, "out of memory");
				free_list(*names, i);
				*names = NULL;
			}
		if (!st) {
			*n = s.n;
			if (s.n > 1)
				qsort(*names, (size_t)s.n, sizeof **names, cmp_str);
		}
	}
	sel_free(&s);
	return st;
}

void task_registry_names_free(char **names, int n)
{
	free_list(names, n);
}

/* What a scan collects: the loaded tasks and the files that failed. */
struct scan {
	struct task *v;
	int n, cap;
	struct task_broken *bad;
	int n_bad, cap_bad;
};

/* Loads one task (a canonical name) into sc; a file that exists and fails
 * to load is recorded in sc->bad, not returned: one bad file fails only
 * itself. */
static enum cr_status add_task(struct scan *sc, const char *tdir, const char *name, bool named,
			       struct cr_err *err)
{
	struct cr_err e;
	struct task_broken *b;
	char path[1200];

	if (sc->n == sc->cap) {
		int nc = sc->cap ? sc->cap * 2 : 16;
		struct task *nv = realloc(sc->v, sizeof *sc->v * (size_t)nc);
		if (!nv)
			return cr_errf(err, CR_ENOMEM, "out of memory loading tasks");
		sc->v = nv;
		sc->cap = nc;
	}
	cr_err_init(&e);
	snprintf(path, sizeof path, "%s/%s.json", tdir, name);
	if (!task_load(&sc->v[sc->n], path, name, &e)) {
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

enum cr_status task_registry_scan(const char *spec, struct task **tasks, int *n,
				  struct task_broken **broken, int *n_broken, struct cr_err *err)
{
	struct reg r;
	struct sel s = { 0 };
	struct scan sc = { 0 };
	enum cr_status st;

	reg_init(&r);
	st = select_spec(&r, spec, &s, err);
	for (int i = 0; i < s.n && !st; i++)
		st = add_task(&sc, r.tdir, s.name[i], s.named[i], err);
	reg_free(&r);
	sel_free(&s);
	if (st) {
		task_list_free(sc.v, sc.n);
		free(sc.bad);
		sc = (struct scan){ 0 };
	} else {
		if (!sc.n) { /* none loaded: NULL, as the header says of *broken */
			free(sc.v);
			sc.v = NULL;
		}
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

enum cr_status task_registry_check_ids(struct cr_err *err)
{
	struct reg r;
	enum cr_status st;

	reg_init(&r);
	st = reg_sets(&r, err);
	for (int si = 0; !st && si < r.n_sets; si++) {
		char **stems;
		int ns = reg_stems(&r, si, &stems);
		for (int i = 0; !st && i < ns; i++) {
			unsigned long a, b;
			if (!stem_id(stems[i], &a))
				continue;
			for (int j = i + 1; j < ns; j++)
				if (stem_id(stems[j], &b) && a == b) {
					st = cr_errf(err, CR_EINPUT, "%s/%s/%s.json and %s.json share the id %lu "
						     "(%s/%lu would be ambiguous): a set's ids are unique",
						     r.tdir, r.sets[si], stems[i], stems[j], a, r.sets[si], a);
					break;
				}
		}
	}
	reg_free(&r);
	return st;
}

/* a spec's set a[al] names the set b[bl], in any case */
static bool set_eq(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && !strncasecmp(a, b, al);
}

/* One element of a spec against one name, by the forms alone. */
static bool element_matches(const char *raw, const char *name)
{
	const char *ns = strchr(name, '/'), *es, *rest, *stem;
	unsigned long a, b, id;
	char el[256];

	normalize(raw, el, sizeof el);
	if (is_glob(el))
		return !fnmatch(el, name, FNM_CASEFOLD);
	if (!ns)
		return false;
	es = strchr(el, '/');
	if (!es)
		return set_eq(el, strlen(el), name, (size_t)(ns - name));
	if (!set_eq(el, (size_t)(es - el), name, (size_t)(ns - name)))
		return false;
	rest = es + 1;
	stem = ns + 1;
	if (!strcmp(rest, stem))
		return true;
	if (range_shaped(rest)) {
		const char *dash = strchr(rest, '-');
		return parse_id(rest, (size_t)(dash - rest), &a) && parse_id(dash + 1, strlen(dash + 1), &b) &&
		       stem_id(stem, &id) && id >= a && id <= b;
	}
	if (all_digits(rest))
		return parse_id(rest, strlen(rest), &a) && stem_id(stem, &id) && id == a;
	return stem_matches(stem, rest);
}

bool task_spec_matches(const char *spec, const char *name)
{
	char el[256];

	if (!spec || !spec[0])
		return true;
	while (*spec) {
		const char *end = strchr(spec, ',');
		size_t l = end ? (size_t)(end - spec) : strlen(spec);
		while (l && isspace((unsigned char)*spec)) {
			spec++;
			l--;
		}
		while (l && isspace((unsigned char)spec[l - 1]))
			l--;
		if (l && l < sizeof el) {
			memcpy(el, spec, l);
			el[l] = '\0';
			if (element_matches(el, name))
				return true;
		}
		if (!end)
			break;
		spec = end + 1;
	}
	return false;
}

enum cr_status task_spec_check(const char *spec, struct cr_err *err)
{
	char *copy, *tok, *save = NULL;
	enum cr_status st = CR_OK;

	if (!spec || !spec[0])
		return CR_OK;
	copy = strdup(spec);
	if (!copy)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	for (tok = spec_next(copy, &save); tok && !st; tok = spec_next(NULL, &save)) {
		const char *slash, *rest;
		unsigned long a, b;
		size_t l = strlen(tok);

		if (!l || is_glob(tok))
			continue;
		if (l >= 256) {
			st = cr_errf(err, CR_EINPUT, "task name '%.40s...' is too long", tok);
			break;
		}
		slash = strchr(tok, '/');
		if (!slash) {
			if (strstr(tok, ".."))
				st = cr_errf(err, CR_EINPUT, "bad task set '%s'", tok);
			continue;
		}
		rest = slash + 1;
		if (slash == tok || !*rest || strchr(rest, '/') || strstr(tok, "..")) {
			st = cr_errf(err, CR_EINPUT, "task name '%s': expected %s", tok, FORMS);
		} else if (range_shaped(rest)) {
			const char *dash = strchr(rest, '-');
			if (!parse_id(rest, (size_t)(dash - rest), &a) || !parse_id(dash + 1, strlen(dash + 1), &b))
				st = cr_errf(err, CR_EINPUT, "bad id range '%s' (expected SET/FIRST-LAST, e.g. "
					     "L1/1-10)", tok);
			else if (a > b)
				st = cr_errf(err, CR_EINPUT, "bad id range '%s' (%lu is above %lu; write %lu-%lu)",
					     tok, a, b, b, a);
		}
	}
	free(copy);
	return st;
}

enum cr_status task_registry_find_exact(const char *name, struct task *t, struct cr_err *err)
{
	char canon[128], path[1200];
	struct cr_err e;

	if (task_registry_exists(name)) {
		snprintf(path, sizeof path, "%s/tasks/%s.json", task_datadir(), name);
		return task_load(t, path, name, err);
	}
	cr_err_init(&e);
	if (!task_registry_resolve(name, canon, sizeof canon, &e))
		return cr_errf(err, CR_EINPUT, "unknown task '%s' (a full name is needed here: did you "
			       "mean '%s'?)", name, canon);
	if (e.status == CR_ENOMEM || e.status == CR_EENV)
		return cr_errf(err, e.status, "%s", e.msg);
	return cr_errf(err, CR_EINPUT, "%s", e.msg);
}
