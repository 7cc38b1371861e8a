/* cmd_merge.c — `crucible merge DIR... --out DIR`: joins the outputs of
 * `crucible eval --shard i/n` (results.csv, samples.csv, run.json) into one
 * run. Shards of different runs are refused, naming the directories and
 * what differs; rows are kept byte for byte (the columns are this
 * version's, through libcsv); every output is written to a temporary file
 * and renamed, so a killed merge leaves the old output or the new. */
#include "harness/cli.h"

#include <csv.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cr_cli.h"
#include "common/cr_status.h"
#include "common/cr_text.h"
#include "common/sha256.h"
#include "harness/results.h"
#include "reports/report.h"

#define COL_CANDIDATE 2
#define COL_STATUS 6
#define COL_SHA 27

/* One input directory: its run.json and which shard it is. */
struct shard {
	const char *dir;
	char real[PATH_MAX];
	json_t *run;
	unsigned i, n;       /* "shard": "i/n"; a run without one is 1/1 */
	int rows;            /* rows read from its results.csv */
};

/* A results.csv row: its fields as read, and the shard it came from. */
struct row {
	char **f;
	int shard;
};

struct reader {
	const char *path;
	const char *const *cols; /* the header it must have */
	int ncols;           /* ... and the columns of every row */
	int shard;
	char **cur;          /* the row being read */
	int col, line;
	bool header_bad, oom;
	char bad[256];       /* the first malformed row, said */
	struct row *rows;
	size_t n, cap;
};

static const char merge_help[] =
	"usage: crucible merge DIR... --out DIR [--partial] [--no-seen-check]\n"
	"Joins the outputs of `crucible eval --shard I/N` runs (results.csv, samples.csv,\n"
	"run.json) into one results.csv, samples.csv and run.json in --out, rows sorted\n"
	"by candidate; DIR arguments may come in any order.\n"
	"Refused (exit 2, naming the directories and what differs): shards of different\n"
	"task sets, seeds, options, tool versions or backends; an unfinished shard;\n"
	"shards that saw different candidates (run.json \"candidates_seen\", the count\n"
	"and hash of every candidate found before the split: a folder that changed\n"
	"between shard starts); a candidate (path and source_sha256) with different\n"
	"statuses in two shards (an identical duplicate is kept once); shards that do\n"
	"not cover 1..N exactly once, unless --partial.\n"
	"\n"
	"OPTIONS\n"
	"  --out DIR        the merged run: made with its missing parents and locked\n"
	"                   for the merge (DIR/.crucible.lock; a second merge into it\n"
	"                   is refused naming the holder); not one of the shards\n"
	"  --partial        merge the shards given even when some of 1..N are missing\n"
	"                   or given twice (run.json says which, and \"complete\": false)\n"
	"  --no-seen-check  merge shards whose run.json has no \"candidates_seen\"\n"
	"                   (written by a crucible older than that check): whether\n"
	"                   they saw the same candidates is then unknown, and\n"
	"                   run.json says \"candidates_checked\": false\n"
	"  -h, --help       this page\n";

static const char merge_exit[] =
	"  0  merged\n"
	"  2  bad usage, or shards that are not one run (the message says why)\n"
	"  3  a write failed (standard output included)\n"
	"  5  no shard has a row (nothing evaluated)\n";

static void free_fields(char **f, int n)
{
	for (int k = 0; f && k < n; k++)
		free(f[k]);
	free(f);
}

static void rd_field(void *s, size_t len, void *data)
{
	struct reader *r = data;
	if (r->oom)
		return;
	if (r->line == 0) {
		/* the header: this version's columns, in order */
		if (r->col >= r->ncols || strcmp(s ? (char *)s : "", r->cols[r->col]))
			r->header_bad = true;
		r->col++;
		return;
	}
	if (!r->cur && !(r->cur = calloc((size_t)r->ncols, sizeof *r->cur))) {
		r->oom = true;
		return;
	}
	if (r->col < r->ncols && !(r->cur[r->col] = strndup(s ? (char *)s : "", len)))
		r->oom = true;
	r->col++;
}

static int grow(struct reader *r)
{
	size_t nc = r->cap ? r->cap * 2 : 256;
	struct row *nr = realloc(r->rows, nc * sizeof *nr);
	if (!nr)
		return -1;
	r->rows = nr;
	r->cap = nc;
	return 0;
}

static void rd_row(int c, void *data)
{
	struct reader *r = data;
	(void)c;
	if (r->line == 0 && r->col != r->ncols)
		r->header_bad = true;
	if (r->line > 0 && !r->oom) {
		if (r->col != r->ncols) {
			if (!r->bad[0])
				snprintf(r->bad, sizeof r->bad, "%s: row %d has %d columns, not %d",
					 r->path, r->line + 1, r->col, r->ncols);
			free_fields(r->cur, r->ncols);
		} else if (r->n == r->cap && grow(r)) {
			r->oom = true;
			free_fields(r->cur, r->ncols);
		} else {
			r->rows[r->n++] = (struct row){ .f = r->cur, .shard = r->shard };
		}
		r->cur = NULL;
	}
	r->line++;
	r->col = 0;
}

/* Reads path (a csv whose header is cols, ncols of them) into r->rows. */
static enum cr_status read_csv(const char *path, const char *const *cols, int ncols,
			       struct reader *r, struct cr_err *err)
{
	struct csv_parser p;
	char buf[65536];
	size_t got;
	/* another run's output is untrusted: no link, no FIFO (cr_open_data) */
	FILE *f = cr_fopen_data(NULL, path, CR_DATA_MAX_CSV, 0, err);
	enum cr_status st = CR_OK;

	if (!f)
		return err->status ? err->status : CR_EINPUT;
	r->path = path;
	r->cols = cols;
	r->ncols = ncols;
	r->line = r->col = 0;
	r->header_bad = false;
	r->bad[0] = '\0';
	csv_init(&p, CSV_STRICT | CSV_APPEND_NULL);
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		if (csv_parse(&p, buf, got, rd_field, rd_row, r) != got) {
			st = cr_errf(err, CR_EINPUT, "%s: row %d: %s", path, r->line + 1,
				     csv_strerror(csv_error(&p)));
			break;
		}
	if (!st)
		csv_fini(&p, rd_field, rd_row, r);
	csv_free(&p);
	fclose(f);
	free_fields(r->cur, r->ncols);
	r->cur = NULL;
	if (st)
		return st;
	if (r->oom)
		return cr_errf(err, CR_ENOMEM, "out of memory reading %s", path);
	if (r->line == 0 || r->header_bad)
		return cr_errf(err, CR_EINPUT,
			       "%s:1: the header is not this crucible's (%d columns, %s,%s,...)",
			       path, ncols, cols[0], cols[1]);
	if (r->bad[0])
		return cr_errf(err, CR_EINPUT, "%s", r->bad);
	return CR_OK;
}

static const char *jtext(json_t *v, char *buf, size_t cap)
{
	char *s;
	if (!v)
		return "(none)";
	if (json_is_string(v))
		return json_string_value(v);
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	snprintf(buf, cap, "%s", s ? s : "?");
	free(s);
	return buf;
}

/* The run.json fields shards of one run share: what each one means. */
static const struct {
	const char *key, *what;
} same[] = {
	{ "tool", "tool" }, { "version", "tool version" }, { "revision", "tool revision" },
	{ "backend", "backend" }, { "seed_sha256", "seed" }, { "task_set", "task set (--tasks)" },
	{ "timing", "timing (--no-timing)" }, { "quick", "--quick" },
	{ "time_cap_s", "--time-cap" }, { "timeout_s", "--timeout" }, { "label", "--label" },
};

/* Exit 2 (printed) when the shards are not of one run; 0 when they are. */
static int compare_runs(struct shard *s, int ns, json_t *tasks)
{
	int bad = 0;
	char b1[128], b2[128];

	for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
		json_t *v0 = json_object_get(s[0].run, same[k].key);
		bool differ = false;
		for (int i = 1; i < ns; i++) {
			json_t *v = json_object_get(s[i].run, same[k].key);
			differ |= !(v0 ? v && json_equal(v0, v) : !v);
		}
		if (!differ)
			continue;
		bad = 1;
		fprintf(stderr, "crucible merge: the shards differ in %s:", same[k].what);
		for (int i = 0; i < ns; i++) {
			json_t *v = json_object_get(s[i].run, same[k].key);
			if (!strcmp(same[k].key, "seed_sha256"))
				fprintf(stderr, " %s: seed %s;", s[i].dir,
					jtext(json_object_get(s[i].run, "seed"), b1, sizeof b1));
			else
				fprintf(stderr, " %s: %s;", s[i].dir, jtext(v, b1, sizeof b1));
		}
		fprintf(stderr, "\n");
	}
	/* each task a shard used must be the same file in every shard using it */
	for (int i = 0; i < ns; i++) {
		json_t *th = json_object_get(s[i].run, "tasks_sha256"), *v, *w;
		const char *name;
		if (!json_is_object(th)) {
			fprintf(stderr, "crucible merge: %s/run.json has no \"tasks_sha256\" "
				"(not written by this crucible's eval)\n", s[i].dir);
			bad = 1;
			continue;
		}
		json_object_foreach(th, name, v) {
			if (!(w = json_object_get(tasks, name))) {
				json_t *o = json_object();
				json_object_set(o, "sha256", v);
				json_object_set_new(o, "dir", json_string(s[i].dir));
				json_object_set_new(tasks, name, o);
			} else if (!json_equal(json_object_get(w, "sha256"), v)) {
				fprintf(stderr, "crucible merge: the shards differ in the task set:"
					" task %s is %.12s in %s, %.12s in %s\n", name,
					jtext(json_object_get(w, "sha256"), b1, sizeof b1),
					json_string_value(json_object_get(w, "dir")),
					jtext(v, b2, sizeof b2), s[i].dir);
				bad = 1;
			}
		}
	}
	return bad ? 2 : 0;
}

/* The candidates a shard saw: run.json "candidates_seen", the count and a
 * sha256 over every candidate eval found under its paths before the split
 * (sorted "<source_sha256> <task>" lines). Shards of one run saw the same
 * candidates; a folder that changed between two shards' starts gives them
 * different sets, and each shard then took its share of another set (rows
 * lost, or evaluated twice). 0 with *count and *sha set; 1 when absent; 2
 * (printed) when malformed. */
static int seen_of(const struct shard *s, json_int_t *count, const char **sha)
{
	json_t *o = json_object_get(s->run, "candidates_seen");
	json_t *c = json_object_get(o, "count"), *h = json_object_get(o, "sha256");
	const char *t = json_string_value(h);

	if (!o)
		return 1;
	if (!json_is_object(o) || !json_is_integer(c) || json_integer_value(c) < 0 || !t ||
	    strlen(t) != 64 || strspn(t, "0123456789abcdef") != 64) {
		fprintf(stderr, "crucible merge: %s/run.json: \"candidates_seen\" is not "
			"{\"count\": N, \"sha256\": \"<64 hex digits>\"}\n", s->dir);
		return 2;
	}
	*count = json_integer_value(c);
	*sha = t;
	return 0;
}

/* Exit 2 (printed) unless every shard saw the same candidates; with
 * unchecked, shards that predate "candidates_seen" pass (said once) and
 * merged.candidates_checked is false. The refusal groups the shards by the
 * set they saw, so one odd shard of 500 is easy to find. */
static int compare_seen(const struct shard *s, int ns, bool unchecked, json_t *merged)
{
	json_int_t *cnt = calloc((size_t)ns, sizeof *cnt);
	const char **sha = calloc((size_t)ns, sizeof *sha);
	int *grp = calloc((size_t)ns, sizeof *grp), ngrp = 0, absent = 0, bad = 0, rc = 0;

	if (!cnt || !sha || !grp) {
		fprintf(stderr, "crucible merge: out of memory\n");
		rc = 3;
		goto out;
	}
	for (int i = 0; i < ns; i++) {
		int r = seen_of(&s[i], &cnt[i], &sha[i]);
		if (r == 2)
			bad = 1;
		if (r != 1)
			continue;
		absent++;
		if (!unchecked)
			fprintf(stderr, "crucible merge: %s/run.json has no \"candidates_seen\": the "
				"shard predates the check that every shard saw the same candidates "
				"(crucible %s); rerun it with this crucible, or merge with "
				"--no-seen-check\n", s[i].dir,
				json_string_value(json_object_get(s[i].run, "version")) ?
					json_string_value(json_object_get(s[i].run, "version")) : "unknown");
	}
	if (bad || (absent && !unchecked)) {
		rc = 2;
		goto out;
	}
	if (absent)
		fprintf(stderr, "crucible merge: --no-seen-check: %d of %d shard(s) do not say which "
			"candidates they saw; not compared\n", absent, ns);
	json_object_set_new(merged, "candidates_checked", json_boolean(!absent));
	/* group the shards that say, by (count, sha256) */
	for (int i = 0; i < ns; i++) {
		grp[i] = -1;
		if (!sha[i])
			continue;
		for (int k = 0; k < i && grp[i] < 0; k++)
			if (sha[k] && cnt[k] == cnt[i] && !strcmp(sha[k], sha[i]))
				grp[i] = grp[k];
		if (grp[i] < 0)
			grp[i] = ngrp++;
	}
	if (ngrp <= 1)
		goto out;
	fprintf(stderr, "crucible merge: the shards saw different candidates (a folder changed "
		"between shard starts?), %d different sets:\n", ngrp);
	for (int g = 0; g < ngrp; g++) {
		int shown = 0, more = 0;
		for (int i = 0; i < ns; i++) {
			if (grp[i] != g)
				continue;
			if (!shown)
				fprintf(stderr, "  %lld candidate(s), sha256 %.12s: ", (long long)cnt[i], sha[i]);
			if (shown < 8)
				fprintf(stderr, "%s%s (%u/%u)", shown ? ", " : "", s[i].dir, s[i].i, s[i].n);
			else
				more++;
			shown++;
		}
		if (more)
			fprintf(stderr, " and %d more", more);
		fprintf(stderr, "\n");
	}
	fprintf(stderr, "crucible merge: rerun the shards over one unchanging set of candidates "
		"(copy the folder first when it may change)\n");
	rc = 2;
out:
	free(cnt);
	free(sha);
	free(grp);
	return rc;
}


/* Reads DIR/run.json and its shard. Exit 2 (printed) when it is unusable. */
static int load_run(struct shard *s)
{
	char path[PATH_MAX + 16], *buf;
	json_error_t je;
	json_t *v;
	struct cr_err e;
	size_t len = 0;

	snprintf(path, sizeof path, "%s/run.json", s->dir);
	if (!realpath(s->dir, s->real)) {
		fprintf(stderr, "crucible merge: %s: %s\n", s->dir, strerror(errno));
		return 2;
	}
	/* DIR is the user's (it may be a link they chose); run.json in it is
	 * the shard's: never through a link, never a FIFO */
	cr_err_init(&e);
	if (!(buf = cr_read_data(NULL, path, CR_DATA_MAX_JSON, 0, &len, &e))) {
		fprintf(stderr, "crucible merge: %s\n", e.msg);
		return 2;
	}
	s->run = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!s->run || !json_is_object(s->run)) {
		cr_text_escape_inplace(je.text, sizeof je.text);
		fprintf(stderr, "crucible merge: %s:%d: %s\n", path, s->run ? 1 : je.line,
			s->run ? "not a json object" : je.text);
		return 2;
	}
	if (!json_is_true(json_object_get(s->run, "complete"))) {
		fprintf(stderr, "crucible merge: %s: the run did not finish (\"complete\" is not "
			"true); finish it with crucible eval --resume\n", path);
		return 2;
	}
	s->i = s->n = 1;
	v = json_object_get(s->run, "shard");
	if (v) {
		const char *t = json_string_value(v);
		char end;
		if (!t || sscanf(t, "%u/%u%c", &s->i, &s->n, &end) != 2 || s->i < 1 ||
		    s->i > s->n) {
			fprintf(stderr, "crucible merge: %s: \"shard\" is not \"i/n\"\n", path);
			return 2;
		}
	}
	return 0;
}

/* Exit 2 (printed) unless the shards cover 1..n exactly once (or partial);
 * fills the merged run's "merged" object. */
static int coverage(struct shard *s, int ns, bool partial, json_t *merged)
{
	unsigned n = s[0].n;
	int *seen, bad = 0;
	json_t *have = json_array(), *missing = json_array(), *twice = json_array();

	for (int i = 1; i < ns; i++)
		if (s[i].n != n) {
			fprintf(stderr, "crucible merge: the shards are of different splits: %s is "
				"shard %u/%u, %s is %u/%u\n", s[0].dir, s[0].i, s[0].n, s[i].dir,
				s[i].i, s[i].n);
			json_decref(have);
			json_decref(missing);
			json_decref(twice);
			return 2;
		}
	seen = calloc(n + 1, sizeof *seen);
	if (!seen) {
		fprintf(stderr, "crucible merge: out of memory\n");
		return 3;
	}
	for (int i = 0; i < ns; i++) {
		if (seen[s[i].i]++) {
			if (!partial)
				fprintf(stderr, "crucible merge: shard %u/%u is given twice (%s)\n",
					s[i].i, n, s[i].dir);
			json_array_append_new(twice, json_integer(s[i].i));
			bad = 1;
		}
	}
	for (unsigned k = 1; k <= n; k++) {
		char t[32];
		snprintf(t, sizeof t, "%u/%u", k, n);
		if (seen[k])
			json_array_append_new(have, json_string(t));
		else
			json_array_append_new(missing, json_string(t));
	}
	if (json_array_size(missing)) {
		bad = 1;
		if (!partial) {
			size_t k;
			json_t *v;
			fprintf(stderr, "crucible merge: shards missing of %u:", n);
			json_array_foreach(missing, k, v)
				fprintf(stderr, "%s %s", k ? "," : "", json_string_value(v));
			fprintf(stderr, " (--partial merges the shards given)\n");
		}
	}
	free(seen);
	json_object_set_new(merged, "of", json_integer(n));
	json_object_set_new(merged, "shards", have);
	json_object_set_new(merged, "missing", missing);
	json_object_set_new(merged, "given_twice", twice);
	json_object_set_new(merged, "partial", json_boolean(bad));
	return bad && !partial ? 2 : 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strcmp(x->f[COL_CANDIDATE], y->f[COL_CANDIDATE]);
	if (!c)
		c = strcmp(x->f[COL_SHA], y->f[COL_SHA]);
	return c ? c : x->shard - y->shard;
}

static bool same_key(const struct row *x, const struct row *y)
{
	return !strcmp(x->f[COL_CANDIDATE], y->f[COL_CANDIDATE]) &&
	       !strcmp(x->f[COL_SHA], y->f[COL_SHA]);
}

/* Sorted rows -> one per candidate (the first shard's). Exit 2 (printed)
 * when a candidate has two statuses. *n_out rows stay in rows[]. */
static int dedup(struct row *rows, size_t n, const struct shard *s, int ncols, size_t *n_out,
		 int *dups)
{
	size_t k = 0;
	int bad = 0;

	*dups = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		bool conflict = false;
		while (j < n && same_key(&rows[i], &rows[j])) {
			conflict |= strcmp(rows[i].f[COL_STATUS], rows[j].f[COL_STATUS]) != 0;
			j++;
		}
		if (conflict) {
			const char *cand = rows[i].f[COL_CANDIDATE];
			char esc[1100];
			cr_text_escape(cand, strlen(cand), esc, sizeof esc);
			fprintf(stderr, "crucible merge: %s (source_sha256 %.12s) has different "
				"statuses:", esc, rows[i].f[COL_SHA]);
			for (size_t m = i; m < j; m++)
				fprintf(stderr, " %s in %s;", rows[m].f[COL_STATUS],
					s[rows[m].shard].dir);
			fprintf(stderr, "\n");
			bad = 1;
		}
		*dups += (int)(j - i - 1);
		for (size_t m = i + 1; m < j; m++)
			free_fields(rows[m].f, ncols);
		rows[k++] = rows[i];
		i = j;
	}
	*n_out = k;
	return bad ? 2 : 0;
}

/* A temporary file beside path, renamed onto it by commit(). */
static FILE *open_tmp(const char *path, char *tmp, size_t cap)
{
	const char *slash = strrchr(path, '/');
	struct cr_err e;

	snprintf(tmp, cap, "%.*s.%s.%d.tmp", slash ? (int)(slash - path + 1) : 0, path,
		 slash ? slash + 1 : path, (int)getpid());
	cr_err_init(&e);
	return cr_fopen_out(tmp, CR_OUT_NEW, &e);
}

static enum cr_status commit(FILE *f, const char *tmp, const char *path, struct cr_err *err)
{
	bool bad = fflush(f) || ferror(f) || fsync(fileno(f));
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path)) {
		unlink(tmp);
		return cr_errf(err, CR_EIO, "cannot write %s: %s", path, strerror(errno));
	}
	return CR_OK;
}

static bool put(FILE *f, const char *s, bool first)
{
	size_t n = strlen(s);
	char *esc = malloc(4 * n + 1);
	/* fields were escaped when eval wrote them; escaping is idempotent, so
	 * this keeps them byte for byte, whole (a name is never cut), and stops
	 * a forged shard's raw bytes; false: no memory */
	if (!esc)
		return false;
	cr_text_escape(s, n, esc, 4 * n + 1);
	if (!first)
		fputc(',', f);
	csv_fwrite(f, esc, strlen(esc));
	free(esc);
	return true;
}

static enum cr_status write_results(const char *out, struct row *rows, size_t n, int ncols,
				    struct cr_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof path, "%s/results.csv", out);
	if (!(f = open_tmp(path, tmp, sizeof tmp)))
		return cr_errf(err, CR_EIO, "cannot create %s: %s", tmp, strerror(errno));
	if (cr_results_header(f, NULL, 0, err)) {
		fclose(f);
		unlink(tmp);
		return err->status;
	}
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < ncols; k++)
			if (!put(f, rows[i].f[k], k == 0)) {
				fclose(f);
				unlink(tmp);
				return cr_errf(err, CR_ENOMEM, "out of memory writing %s", path);
			}
		fputc('\n', f);
	}
	return commit(f, tmp, path, err);
}

static const char *const sample_cols[] = { "candidate", "source_sha256", "side", "us", NULL };

/* samples.csv: the samples of every kept row, from the shard it was kept
 * from, shard by shard in the order they were taken. */
static enum cr_status write_samples(const char *out, const struct shard *s, int ns,
				    const struct row *kept, size_t n_kept, struct cr_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX + 64], in[PATH_MAX + 16];
	enum cr_status st = CR_OK;
	FILE *f;

	snprintf(path, sizeof path, "%s/samples.csv", out);
	if (!(f = open_tmp(path, tmp, sizeof tmp)))
		return cr_errf(err, CR_EIO, "cannot create %s: %s", tmp, strerror(errno));
	fputs("candidate,source_sha256,side,us\n", f);
	for (int d = 0; d < ns && !st; d++) {
		struct reader r = { .shard = d };
		struct stat sb;
		snprintf(in, sizeof in, "%s/samples.csv", s[d].dir);
		if (lstat(in, &sb) && errno == ENOENT)
			continue;   /* a shard with no timed row may have none (a link to nothing is refused) */
		if ((st = read_csv(in, sample_cols, 4, &r, err)))
			break;
		for (size_t i = 0; i < r.n; i++) {
			struct row key = { .f = (char *[28]){ 0 } }, *hit;
			key.f[COL_CANDIDATE] = r.rows[i].f[0];
			key.f[COL_SHA] = r.rows[i].f[1];
			key.shard = d;
			hit = bsearch(&key, kept, n_kept, sizeof *kept, cmp_row);
			if (hit && !put(f, r.rows[i].f[0], true)) {
				st = cr_errf(err, CR_ENOMEM, "out of memory writing samples.csv");
				break;
			}
			if (hit) {
				char **v = r.rows[i].f;
				fprintf(f, ",%s,%s,%s\n", v[1], v[2], v[3]);
			}
		}
		for (size_t i = 0; i < r.n; i++)
			free_fields(r.rows[i].f, 4);
		free(r.rows);
	}
	if (st) {
		fclose(f);
		unlink(tmp);
		return st;
	}
	return commit(f, tmp, path, err);
}

/* The merged run.json: the shared fields of the first shard, the merge's
 * own command and run id, the union of tasks, and each shard's facts
 * (host, device, run id, rows) under "merged". */
static enum cr_status write_run(const char *out, struct shard *s, int ns, json_t *tasks,
				json_t *merged, json_t *cmd, size_t n_rows, struct cr_err *err)
{
	static const char *const per_shard[] = {
		"run_id", "host", "device", "cores", "cpu_governor", "kernel", "compiler",
		"load_start", "load_end", "sandbox", "gpu_clocks", "clocks_locked", "libcuda",
		"command", "tasks", "slurm", "started", "finished", "interrupted", "machine", "cost",
		"jobs", "job_timing", "job_cpusets", "gpus", "gpu_models"
	};
	char path[PATH_MAX], tmp[PATH_MAX + 64], run_id[64];
	json_t *j = json_deep_copy(s[0].run), *list = json_array(), *th = json_object();
	const char *name;
	json_t *v;
	FILE *f;
	bool partial;
	enum cr_status st;

	for (int i = 0; i < ns; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "dir", json_string(s[i].real));
		json_object_set_new(o, "shard", json_sprintf("%u/%u", s[i].i, s[i].n));
		json_object_set_new(o, "rows", json_integer(s[i].rows));
		for (size_t k = 0; k < sizeof per_shard / sizeof *per_shard; k++)
			if ((v = json_object_get(s[i].run, per_shard[k])))
				json_object_set(o, per_shard[k], v);
		json_array_append_new(list, o);
	}
	for (size_t k = 0; k < sizeof per_shard / sizeof *per_shard; k++)
		json_object_del(j, per_shard[k]);
	json_object_del(j, "shard");
	/* eval's task_set_sha256 hashes the task files themselves, which a merge
	 * does not have: tasks_sha256 (each task's file) stands for it */
	json_object_del(j, "task_set_sha256");
	json_object_foreach(tasks, name, v)
		json_object_set(th, name, json_object_get(v, "sha256"));
	snprintf(run_id, sizeof run_id, "merge-%lld-%d", (long long)time(NULL), (int)getpid());
	json_object_set_new(j, "run_id", json_string(run_id));
	json_object_set(j, "command", cmd);
	json_object_set_new(j, "tasks_sha256", th);
	json_object_set_new(j, "tasks", json_integer((json_int_t)json_object_size(th)));
	json_object_set_new(j, "rows", json_integer((json_int_t)n_rows));
	{
		/* the merged run spans its shards: the first start, the last end
		 * (UTC ISO 8601 strings order as text); each shard's own, and its
		 * Slurm job, are under merged.runs */
		const char *first = NULL, *last = NULL;
		char now[32];
		for (int i = 0; i < ns; i++) {
			const char *a = json_string_value(json_object_get(s[i].run, "started"));
			const char *b = json_string_value(json_object_get(s[i].run, "finished"));
			if (a && (!first || strcmp(a, first) < 0))
				first = a;
			if (b && (!last || strcmp(b, last) > 0))
				last = b;
		}
		json_object_set_new(j, "started", first ? json_string(first) : json_null());
		json_object_set_new(j, "finished", last ? json_string(last) : json_null());
		cr_utc_now(now);
		json_object_set_new(merged, "at", json_string(now));
	}
	json_object_set_new(merged, "runs", list);
	json_object_set(j, "merged", merged);
	partial = json_is_true(json_object_get(merged, "partial"));
	json_object_set_new(j, "complete", json_boolean(!partial));
	snprintf(path, sizeof path, "%s/run.json", out);
	if (!(f = open_tmp(path, tmp, sizeof tmp))) {
		json_decref(j);
		return cr_errf(err, CR_EIO, "cannot create %s: %s", tmp, strerror(errno));
	}
	if (json_dumpf(j, f, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12))) {
		json_decref(j);
		fclose(f);
		unlink(tmp);
		return cr_errf(err, CR_EIO, "cannot write %s: %s", tmp, strerror(errno));
	}
	fputc('\n', f);
	json_decref(j);
	st = commit(f, tmp, path, err);
	return st;
}

int cr_cmd_merge(int argc, char **argv)
{
	enum { O_NO_SEEN = 256 };
	static const struct option lo[] = {
		{ "out", required_argument, 0, 'o' }, { "partial", no_argument, 0, 'p' },
		{ "no-seen-check", no_argument, 0, O_NO_SEEN },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
	};
	const char *out = NULL;
	bool partial = false, unchecked = false;
	struct shard *s = NULL;
	struct reader r = { 0 };
	json_t *tasks = json_object(), *merged = json_object(), *cmd = json_array();
	struct cr_err err;
	char outreal[PATH_MAX], path[PATH_MAX + 16];
	int ns = 0, rc = 0, c, ncols = 0, dups = 0, lock_fd = -1;
	size_t n_kept = 0;

	cr_err_init(&err);
	for (int i = 0; i < argc; i++)   /* before getopt permutes argv */
		json_array_append_new(cmd, json_string(argv[i]));
	optind = 1;
	while ((c = cr_cli_getopt("merge", argc, argv, "h", lo)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'p': partial = true; break;
		case O_NO_SEEN: unchecked = true; break;
		case 'h':
			fputs(merge_help, stdout);
			cr_cli_help_tail(stdout, merge_exit, 0);
			fputs("\nENVIRONMENT\n  none: merge reads only the folders it is given\n", stdout);
			rc = -1;
			goto out;
		default: rc = CR_EXIT_USAGE; goto out; /* said by cr_cli_getopt */
		}
	}
	if (!out || optind >= argc) {
		rc = cr_cli_usage("merge", "%s", !out ? "--out DIR is required"
				  : "no shard directory given (crucible merge DIR... --out DIR)");
		goto out;
	}
	while (cr_results_columns[ncols])
		ncols++;
	ns = argc - optind;
	if (!(s = calloc((size_t)ns, sizeof *s))) {
		cr_cli_error("merge", "out of memory");
		rc = 3;
		goto out;
	}
	for (int i = 0; i < ns; i++) {
		s[i].dir = argv[optind + i];
		if ((rc = load_run(&s[i])))
			goto out;
	}
	/* an --out that exists may not be a shard: said before anything is
	 * made in it (the lock file would land in the shard) */
	if (realpath(out, outreal))
		for (int i = 0; i < ns; i++)
			if (!strcmp(s[i].real, outreal)) {
				rc = cr_cli_usage("merge", "--out %s is one of the shards: merge into "
						  "a new directory", out);
				goto out;
			}
	/* made with its parents, and this merge's alone until it ends */
	if (cr_out_lock(out, "merge", &lock_fd, &err)) {
		rc = cr_cli_status("merge", &err);
		goto out;
	}
	if (!realpath(out, outreal)) {
		cr_cli_error("merge", "%s: %s", out, strerror(errno));
		rc = 2;
		goto out;
	}
	for (int i = 0; i < ns; i++)
		if (!strcmp(s[i].real, outreal)) {
			rc = cr_cli_usage("merge", "--out %s is one of the shards: merge into "
					  "a new directory", out);
			goto out;
		}
	/* shard order, not argument order: the same merge whatever the order given */
	for (int i = 1; i < ns; i++)
		for (int k = i; k > 0 && s[k - 1].i > s[k].i; k--) {
			struct shard t = s[k];
			s[k] = s[k - 1];
			s[k - 1] = t;
		}
	rc = compare_runs(s, ns, tasks);
	{
		int rs = compare_seen(s, ns, unchecked, merged);
		if (!rc)
			rc = rs;
	}
	if (rc || (rc = coverage(s, ns, partial, merged)))
		goto out;
	for (int i = 0; i < ns; i++) {
		size_t before = r.n;
		r.shard = i;
		snprintf(path, sizeof path, "%s/results.csv", s[i].dir);
		if (read_csv(path, cr_results_columns, ncols, &r, &err))
			goto fail;
		s[i].rows = (int)(r.n - before);
	}
	if (r.n)
		qsort(r.rows, r.n, sizeof *r.rows, cmp_row);
	if ((rc = dedup(r.rows, r.n, s, ncols, &n_kept, &dups))) {
		r.n = n_kept;
		goto out;
	}
	r.n = n_kept;
	if (write_samples(out, s, ns, r.rows, n_kept, &err) ||
	    write_results(out, r.rows, n_kept, ncols, &err) ||
	    write_run(out, s, ns, tasks, merged, cmd, n_kept, &err))
		goto fail;
	fprintf(stderr, "crucible merge: %zu row(s) from %d shard(s)%s, %d identical duplicate(s) "
		"kept once; results in %s/results.csv\n", n_kept, ns,
		json_is_true(json_object_get(merged, "partial")) ? " (partial: see run.json)" : "",
		dups, out);
	if (!n_kept) {
		fprintf(stderr, "crucible merge: nothing evaluated: no shard has a row\n");
		rc = 5;
		goto out;
	}
	snprintf(path, sizeof path, "%s/results.csv", out);
	printf("\n");
	fflush(stdout);
	report_print_summary(path, stdout);
	goto out;
fail:
	fprintf(stderr, "crucible merge: %s\n", err.msg);
	rc = cr_status_exit_code(err.status);
out:
	for (size_t i = 0; i < r.n; i++)
		free_fields(r.rows[i].f, ncols);
	free(r.rows);
	for (int i = 0; s && i < ns; i++)
		json_decref(s[i].run);
	free(s);
	json_decref(tasks);
	json_decref(cmd);
	json_decref(merged);
	cr_out_unlock(lock_fd);
	return rc < 0 ? 0 : rc;
}
