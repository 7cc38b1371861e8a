/* report_names.c — names of the runs of a multi-run report (ablations): a
 * run's own label (run.json "label", else the rows' label column), else the
 * options that differ between the runs (model, temperature, n, strategy,
 * turns from the rows; seed, quick, timing, backend, version, revision from
 * run.json beside results.csv), else the file's directory. Never "run k":
 * names that still collide get the differing options, then the path. Also
 * run.json's "machine" verdict (how loaded the machine was while timing). */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"
#include "common/cr_text.h"

enum { K_LABEL, K_MODEL, K_TEMP, K_N, K_STRATEGY, K_TURNS, K_SEED, K_QUICK, K_TIMING,
       K_BACKEND, K_VERSION, K_REVISION, K_COUNT };
/* How a differing key is written: "seed=1"; booleans as the word or "no-word". */
static const char *const key_names[K_COUNT] = {
	"label", "", "T", "n", "", "turns", "seed", "quick", "timing", "backend", "version",
	"revision",
};

struct meta {
	char v[K_COUNT][160]; /* "" unknown */
	int named;           /* the strategy's own name holds n and turns (issue 31) */
};

static void json_str(json_t *root, const char *key, char *out, size_t len)
{
	json_t *v = json_object_get(root, key);

	if (json_is_string(v))
		snprintf(out, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(out, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(out, len, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(out, len, "%s", json_is_true(v) ? "1" : "0");
}

/* run.json "machine" (issue 29): how loaded the machine was while timing,
 * "verdict" (quiet, busy, oversubscribed) and "why"; made safe for a terminal
 * and a markdown table. Left "" when absent (older run.json). */
static void machine(json_t *root, struct report_summary *s)
{
	json_t *mc = json_object_get(root, "machine");
	const char *v = json_string_value(json_object_get(mc, "verdict"));
	const char *w = json_string_value(json_object_get(mc, "why"));

	s->machine_verdict[0] = s->machine_why[0] = '\0';
	if (!v)
		return;
	snprintf(s->machine_verdict, sizeof s->machine_verdict, "%s", v);
	snprintf(s->machine_why, sizeof s->machine_why, "%s", w ? w : "");
	cr_text_escape_inplace(s->machine_verdict, sizeof s->machine_verdict);
	cr_text_escape_inplace(s->machine_why, sizeof s->machine_why);
	for (char *c = s->machine_verdict; *c; c++)
		*c = *c == '|' || *c == '`' || *c == '*' ? '/' : *c;
	for (char *c = s->machine_why; *c; c++)
		*c = *c == '|' || *c == '`' || *c == '*' ? '/' : *c;
}

/* run.json beside the results.csv, when there is one. A run.json that is
 * not valid json is an error: its options name the run. s (may be NULL)
 * gets its "machine". */
static enum cr_status read_run_json(const char *csv, struct meta *m, struct report_summary *s,
				    struct cr_err *e)
{
	char *p = malloc(strlen(csv) + sizeof "run.json"), *slash, *buf;
	json_error_t je;
	json_t *root;
	size_t len = 0;

	if (!p)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	strcpy(p, csv);
	slash = strrchr(p, '/');
	strcpy(slash ? slash + 1 : p, "run.json");
	/* untrusted like the run it names: no link, no FIFO; absent is fine */
	if (!(buf = cr_read_data(NULL, p, CR_DATA_MAX_JSON, CR_DATA_OPTIONAL, &len, e))) {
		free(p);
		return errno == ENOENT ? CR_OK : e && e->status ? e->status : CR_EINPUT;
	}
	root = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!root || !json_is_object(root)) {
		cr_text_escape_inplace(je.text, sizeof je.text);
		enum cr_status st = cr_errf(e, CR_EINPUT, "%s:%d: not a json object: %s", p,
					    je.line, root ? "" : je.text);
		json_decref(root);
		free(p);
		return st;
	}
	json_str(root, "label", m->v[K_LABEL], sizeof m->v[K_LABEL]);
	if (!strcmp(json_string_value(json_object_get(root, "seed_source")) ?: "", "secret"))
		snprintf(m->v[K_SEED], sizeof m->v[K_SEED], "secret");
	else
		json_str(root, "seed", m->v[K_SEED], sizeof m->v[K_SEED]);
	json_str(root, "quick", m->v[K_QUICK], sizeof m->v[K_QUICK]);
	json_str(root, "timing", m->v[K_TIMING], sizeof m->v[K_TIMING]);
	json_str(root, "backend", m->v[K_BACKEND], sizeof m->v[K_BACKEND]);
	json_str(root, "version", m->v[K_VERSION], sizeof m->v[K_VERSION]);
	json_str(root, "revision", m->v[K_REVISION], sizeof m->v[K_REVISION]);
	if (s)
		machine(root, s);
	json_decref(root);
	free(p);
	return CR_OK;
}

static void from_rows(const struct report_run *run, const struct report_summary *s,
		      struct meta *m)
{
	const char *label = NULL;
	int mixed = 0;

	for (size_t i = 0; i < run->n_rows; i++) {
		const char *l = run->rows[i].label;
		if (!label)
			label = l;
		else if (strcmp(label, l))
			mixed = 1;
	}
	if (!*m->v[K_LABEL] && label && *label)
		snprintf(m->v[K_LABEL], sizeof m->v[K_LABEL], "%s", mixed ? "mixed" : label);
	snprintf(m->v[K_MODEL], sizeof m->v[K_MODEL], "%s", s->model);
	if (!isnan(s->temperature))
		snprintf(m->v[K_TEMP], sizeof m->v[K_TEMP], "%g", s->temperature);
	if (s->n_min == s->n_max)
		snprintf(m->v[K_N], sizeof m->v[K_N], "%d", s->n_max);
	else
		snprintf(m->v[K_N], sizeof m->v[K_N], "%d-%d", s->n_min, s->n_max);
	snprintf(m->v[K_STRATEGY], sizeof m->v[K_STRATEGY], "%s", s->strategy);
	if (s->max_turn >= 0)
		snprintf(m->v[K_TURNS], sizeof m->v[K_TURNS], "%d", s->max_turn + 1);
	if (*s->run_name) {
		/* "refine, 2 trajectories × 3 turns": n and turns are in it */
		snprintf(m->v[K_STRATEGY], sizeof m->v[K_STRATEGY], "%s", s->run_name);
		m->named = 1;
	}
	/* a seed the rows agree on, when run.json does not say */
	if (!*m->v[K_SEED] && run->n_rows && *run->rows[0].verify_seed) {
		const char *v = run->rows[0].verify_seed;
		for (size_t i = 1; i < run->n_rows && v; i++)
			if (strcmp(run->rows[i].verify_seed, v))
				v = NULL;
		if (v)
			snprintf(m->v[K_SEED], sizeof m->v[K_SEED], "%s", v);
	}
}

static void append(char *out, size_t len, const char *s)
{
	size_t l = strlen(out);

	if (l + 1 < len)
		snprintf(out + l, len - l, "%s%s", l ? " " : "", s);
}

/* The options of run i that differ between the runs, "seed=1 quick". */
static void differing(const struct meta *m, size_t n, size_t i, char *out, size_t len)
{
	char b[128];

	for (int k = K_MODEL; k < K_COUNT; k++) {
		int differ = 0;
		for (size_t j = 0; j < n && !differ; j++)
			differ = strcmp(m[j].v[k], m[i].v[k]) != 0;
		if (!differ)
			continue;
		if (m[i].named && (k == K_N || k == K_TURNS))
			continue;
		if (k == K_QUICK || k == K_TIMING) {
			if (!*m[i].v[k])
				snprintf(b, sizeof b, "%s=?", key_names[k]);
			else
				snprintf(b, sizeof b, "%s%s", strcmp(m[i].v[k], "1") ? "no-" : "",
					 key_names[k]);
		} else if (*key_names[k]) {
			snprintf(b, sizeof b, "%s=%s", key_names[k], *m[i].v[k] ? m[i].v[k] : "?");
		} else {
			snprintf(b, sizeof b, "%s", *m[i].v[k] ? m[i].v[k] : "?");
		}
		append(out, len, b);
	}
}

/* The directory of a results.csv ("out/a/results.csv" -> "out/a"), or the path. */
static void dir_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash && !strcmp(slash + 1, "results.csv") && slash > path)
		snprintf(out, len, "%.*s", (int)(slash - path), path);
	else
		snprintf(out, len, "%s", path);
}

enum cr_status report_name_runs(struct report_summary *s, const struct report_run *runs,
				size_t n, struct cr_err *e)
{
	struct meta *m = calloc(n ? n : 1, sizeof *m);
	char (*name)[sizeof s->label] = calloc(n ? n : 1, sizeof *name);
	enum cr_status st = CR_OK;
	char orig[sizeof s->label];

	if (!m || !name) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if ((st = read_run_json(runs[i].path, &m[i], &s[i], e)) != CR_OK)
			goto out;
		from_rows(&runs[i], &s[i], &m[i]);
	}
	if (n < 2) {
		/* one run: its label, with the metadata label after it */
		if (n == 1 && *m[0].v[K_LABEL]) {
			char tmp[sizeof s->label];
			snprintf(tmp, sizeof tmp, "%s (%s)", m[0].v[K_LABEL], s[0].label);
			memcpy(s[0].label, tmp, sizeof tmp);
		} else if (n == 1 && !strncmp(s[0].label, "results.csv", 11)) {
			/* no model column named it: its folder does ("e3 n=1", not
			 * "results.csv n=1") */
			char dir[sizeof s->label], tmp[sizeof s->label];
			const char *d;

			dir_of(runs[0].path, dir, sizeof dir);
			d = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
			if (strcmp(d, "results.csv")) {
				snprintf(tmp, sizeof tmp, "%s%s", d, s[0].label + 11);
				memcpy(s[0].label, tmp, sizeof tmp);
			}
		}
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (*m[i].v[K_LABEL])
			snprintf(name[i], sizeof name[i], "%s", m[i].v[K_LABEL]);
		else
			differing(m, n, i, name[i], sizeof name[i]);
		if (!*name[i])
			dir_of(runs[i].path, name[i], sizeof name[i]);
	}
	/* collisions: first the differing options, then the path */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			int dup = 0;
			for (size_t j = 0; j < n; j++)
				dup |= j != i && !strcmp(name[i], name[j]);
			if (!dup)
				continue;
			memcpy(orig, name[i], sizeof orig);
			for (size_t j = i; j < n; j++) {
				char extra[sizeof s->label] = "";
				if (strcmp(name[j], orig))
					continue;
				if (pass == 0)
					differing(m, n, j, extra, sizeof extra);
				else
					snprintf(extra, sizeof extra, "%s", runs[j].path);
				if (*extra && !strstr(name[j], extra)) {
					size_t l = strlen(name[j]);
					snprintf(name[j] + l, sizeof name[j] - l, " (%s)", extra);
				}
			}
		}
	for (size_t i = 0; i < n; i++)
		memcpy(s[i].label, name[i], sizeof s[i].label);
out:
	free(m);
	free(name);
	return st;
}

void report_machine_read(const char *csv_path, struct report_summary *s)
{
	struct meta m = { 0 };
	struct cr_err e;

	cr_err_init(&e);
	s->machine_verdict[0] = s->machine_why[0] = '\0';
	(void)read_run_json(csv_path, &m, s, &e);
}

static long json_long(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : -1;
}

void report_runmeta_read(const char *csv_path, struct report_runmeta *m)
{
	json_t *root, *opts, *res;
	const char *st;

	memset(m, 0, sizeof *m);
	m->n = m->turns = m->keep = m->budget_tokens = m->reused = m->generated = -1;
	if (!(root = report_run_json_beside(csv_path)))
		return;
	m->found = 1;
	m->is_run = !strcmp(json_string_value(json_object_get(root, "command")) ?: "", "run");
	opts = json_object_get(root, "options");
	st = json_string_value(json_object_get(root, "strategy"));
	if (!st)
		st = json_string_value(json_object_get(opts, "strategy"));
	if (st) {
		snprintf(m->strategy, sizeof m->strategy, "%s", st);
		cr_text_escape_inplace(m->strategy, sizeof m->strategy);
	}
	m->n = json_long(opts, "n");
	m->turns = json_long(opts, "turns");
	m->keep = json_long(opts, "keep");
	m->budget_tokens = json_long(opts, "budget_tokens");
	res = json_object_get(root, "resume");
	m->reused = json_long(res, "reused");
	m->generated = json_long(res, "generated");
	json_decref(root);
}

void report_name_strategy(const char *strategy, const struct report_runmeta *m, long n_max,
			  long units_max, long last, char *out, size_t len)
{
	size_t l;

	out[0] = '\0';
	if (last > INT_MAX)
		last = INT_MAX;
	if (!strcmp(strategy, "refine")) {
		/* --n trajectories of --turns turns (the first included) */
		long j = m->n >= 0 ? m->n : units_max, t = m->turns >= 0 ? m->turns : last + 1;
		snprintf(out, len, "refine, %ld trajector%s × %ld turn%s", j,
			 j == 1 ? "y" : "ies", t, t == 1 ? "" : "s");
	} else if (!strcmp(strategy, "evolve")) {
		/* a draft of --n, then --turns generations of --n, --keep parents */
		long g = m->turns >= 0 ? m->turns : last;
		long n = m->n >= 0 ? m->n : n_max;
		l = (size_t)snprintf(out, len,
				     "evolve, %ld generation%s × %ld (the draft and %ld)", g + 1,
				     g ? "s" : "", n, g);
		if (m->keep >= 0 && l < len)
			snprintf(out + l, len - l, ", keep %ld", m->keep);
	} else if (!strcmp(strategy, "best-of-n") || !strcmp(strategy, "self-consistency")) {
		snprintf(out, len, "%s, n=%ld", strategy,
			 m->n >= 0 ? m->n : n_max);
	} else {
		return; /* unknown or mixed: the rows' metadata name it */
	}
	l = strlen(out);
	if (m->budget_tokens > 0 && l < len)
		snprintf(out + l, len - l, ", budget %ld tokens a task",
			 m->budget_tokens);
}

void report_run_name(struct report_summary *s, const char *strategy)
{
	long last = s->n_steps ? s->step_ids[s->n_steps - 1] : 0;
	/* a turn number is any long a file holds: bounded before arithmetic */
	if (last > INT_MAX)
		last = INT_MAX;
	/* evolve without run.json: n_max candidates over last + 1 generations */
	long n = !strcmp(strategy, "evolve") ? (s->n_max + last) / (last + 1) : s->n_max;

	report_name_strategy(strategy, &s->meta, n, s->nu_max, last, s->run_name,
			     sizeof s->run_name);
}
