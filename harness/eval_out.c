/* eval_out.c — eval's rows sorted at the end of a run, an unreadable
 * results.csv kept aside, run.json's Slurm ids, progress and the closing
 * line on stderr, and SIGINT/SIGTERM as a clean stop (eval_out.h). */
#include "harness/eval_out.h"

#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cr_cli.h"
#include "common/cr_text.h"
#include "common/cr_verdict.h"

/* ---- sorting the rows ---- */

enum { EVAL_SORT_MAX_RESULTS = 1 << 30, EVAL_SORT_MAX_SAMPLES = 256 << 20 };

struct field {
	char *s;
	size_t len;
};

struct row {
	struct field *f;
	int n, cap;
	size_t idx;               /* its place in the file (ties keep it) */
	const char *k1, *k2;      /* sort keys: task and candidate (results), candidate (samples) */
	long rank;                /* samples: the candidate's place among the results' */
};

struct table {
	struct row *rows;
	size_t n, cap;
	struct row cur;
	bool oom;
};

static void tb_field(void *s, size_t len, void *data)
{
	struct table *t = data;
	struct row *r = &t->cur;

	if (t->oom)
		return;
	if (r->n == r->cap) {
		int nc = r->cap ? 2 * r->cap : 4;
		struct field *nf = realloc(r->f, sizeof *nf * (size_t)nc);
		if (!nf) {
			t->oom = true;
			return;
		}
		r->f = nf;
		r->cap = nc;
	}
	if (!(r->f[r->n].s = malloc(len + 1))) {
		t->oom = true;
		return;
	}
	memcpy(r->f[r->n].s, s ? s : "", len);
	r->f[r->n].s[len] = '\0';
	r->f[r->n++].len = len;
}

static void row_free(struct row *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->f[i].s);
	free(r->f);
	memset(r, 0, sizeof *r);
}

static void tb_row(int c, void *data)
{
	struct table *t = data;
	(void)c;
	if (t->oom) {
		row_free(&t->cur);
		return;
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 1024;
		struct row *nr = realloc(t->rows, sizeof *nr * nc);
		if (!nr) {
			t->oom = true;
			row_free(&t->cur);
			return;
		}
		t->rows = nr;
		t->cap = nc;
	}
	if (t->cur.n && t->cur.n < t->cur.cap) {
		/* to fit: 200k samples rows of 4 fields, not 64 slots each */
		struct field *nf = realloc(t->cur.f, sizeof *nf * (size_t)t->cur.n);
		if (nf) {
			t->cur.f = nf;
			t->cur.cap = t->cur.n;
		}
	}
	t->cur.idx = t->n;
	t->rows[t->n++] = t->cur;
	memset(&t->cur, 0, sizeof t->cur);
}

static void tb_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		row_free(&t->rows[i]);
	free(t->rows);
	row_free(&t->cur);
	memset(t, 0, sizeof *t);
}

/* Reads a whole CSV file (rows of any width). *missing when it is not there. */
static enum cr_status tb_read(const char *path, struct table *t, bool *missing, struct cr_err *err)
{
	struct csv_parser p;
	char buf[65536];
	size_t got;
	FILE *f;

	memset(t, 0, sizeof *t);
	*missing = false;
	if (!(f = cr_fopen_data(NULL, path, CR_DATA_MAX_CSV, CR_DATA_OPTIONAL, err))) {
		if (errno == ENOENT && !err->status) {
			*missing = true;
			return CR_OK;
		}
		return err->status ? err->status : cr_errf(err, CR_EIO, "%s: cannot read", path);
	}
	if (csv_init(&p, 0)) {
		fclose(f);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		if (csv_parse(&p, buf, got, tb_field, tb_row, t) != got) {
			csv_free(&p);
			fclose(f);
			tb_free(t);
			return cr_errf(err, CR_EINPUT, "%s: not CSV (%s)", path, csv_strerror(csv_error(&p)));
		}
	csv_fini(&p, tb_field, tb_row, t);
	csv_free(&p);
	fclose(f);
	if (t->oom) {
		tb_free(t);
		return cr_errf(err, CR_ENOMEM, "out of memory reading %s", path);
	}
	return CR_OK;
}

static int cmp_results(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strverscmp(x->k1, y->k1);

	if (!c)
		c = strverscmp(x->k2, y->k2);
	if (!c)
		c = x->idx < y->idx ? -1 : x->idx > y->idx;
	return c;
}

static int cmp_samples(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Writes t (header first, unmoved) to path through a temp file of its
 * folder: fsynced, then renamed over. raw_from: the fields from this one
 * on are written as they are (samples.csv's side and us), the others
 * through csv_fwrite as eval wrote them. */
static enum cr_status tb_write(const char *path, const struct table *t, int raw_from,
			       struct cr_err *err)
{
	char tmp[PATH_MAX + 32];
	FILE *f;
	int bad = 0;

	if (snprintf(tmp, sizeof tmp, "%s.sorting.%d", path, (int)getpid()) >= (int)sizeof tmp)
		return cr_errf(err, CR_EIO, "%s: path too long", path);
	if (!(f = cr_fopen_out(tmp, CR_OUT_NEW, err)))
		return err->status;
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];
		for (int k = 0; k < r->n; k++) {
			if (k)
				fputc(',', f);
			if (raw_from >= 0 && k >= raw_from && i > 0)
				fwrite(r->f[k].s, 1, r->f[k].len, f);
			else if (raw_from >= 0 && i == 0)
				fwrite(r->f[k].s, 1, r->f[k].len, f);  /* samples' header is plain */
			else
				csv_fwrite(f, r->f[k].s, r->f[k].len);
		}
		fputc('\n', f);
	}
	bad = fflush(f) || ferror(f) || fsync(fileno(f));
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path)) {
		int e = errno;
		unlink(tmp);
		return cr_errf(err, CR_EIO, "%s: cannot rewrite sorted: %s", path, strerror(e));
	}
	/* the rename itself, durable */
	{
		char dir[PATH_MAX];
		const char *sl = strrchr(path, '/');
		int dfd;
		snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - path) : 1, sl ? path : ".");
		if ((dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			if (fsync(dfd)) { /* best effort */ }
			close(dfd);
		}
	}
	return CR_OK;
}

enum cr_status eval_out_sort(const char *results, const char *samples, struct cr_err *err)
{
	struct table rt, st;
	bool missing;
	enum cr_status s;
	const char **order = NULL;
	size_t n_order = 0;

	{
		/* the sort holds a file in memory (about 8 times its size for
		 * samples.csv): past these sizes the rows stay in the order they
		 * finished, said once */
		struct stat sb;

		if (!stat(results, &sb) && sb.st_size > EVAL_SORT_MAX_RESULTS) {
			fprintf(stderr, "crucible eval: %s is over %d MB: its rows are left in the order "
				"they finished (not sorted)\n", results, EVAL_SORT_MAX_RESULTS >> 20);
			return CR_OK;
		}
		if (samples && !stat(samples, &sb) && sb.st_size > EVAL_SORT_MAX_SAMPLES) {
			fprintf(stderr, "crucible eval: %s is over %d MB: its rows are left in the order "
				"they finished (not sorted)\n", samples, EVAL_SORT_MAX_SAMPLES >> 20);
			samples = NULL;
		}
	}
	if ((s = tb_read(results, &rt, &missing, err)) || missing)
		return s;
	if (rt.n < 2) {
		tb_free(&rt);
		return CR_OK;
	}
	for (size_t i = 1; i < rt.n; i++) {
		struct row *r = &rt.rows[i];
		r->k1 = r->n > 1 ? r->f[1].s : "";
		r->k2 = r->n > 2 ? r->f[2].s : "";
	}
	qsort(rt.rows + 1, rt.n - 1, sizeof *rt.rows, cmp_results);
	if ((s = tb_write(results, &rt, -1, err)))
		goto out;
	if (!samples)
		goto out;
	if ((s = tb_read(samples, &st, &missing, err)) || missing)
		goto out;
	/* each candidate's rank: its first row in the sorted results */
	if (!(order = calloc(rt.n, sizeof *order))) {
		s = cr_errf(err, CR_ENOMEM, "out of memory");
		tb_free(&st);
		goto out;
	}
	for (size_t i = 1; i < rt.n; i++)
		if (rt.rows[i].n > 2)
			order[n_order++] = rt.rows[i].f[2].s;
	{
		/* (name, rank) pairs sorted by name for a bsearch */
		struct nr { const char *s; long rank; } *byname = calloc(n_order + 1, sizeof *byname);
		if (!byname) {
			s = cr_errf(err, CR_ENOMEM, "out of memory");
			tb_free(&st);
			goto out;
		}
		for (size_t i = 0; i < n_order; i++)
			byname[i] = (struct nr){ order[i], (long)i };
		qsort(byname, n_order, sizeof *byname, cmp_str);
		for (size_t i = 1; i < st.n; i++) {
			struct row *r = &st.rows[i];
			const char *key = r->n ? r->f[0].s : "";
			struct nr *hit = n_order ? bsearch(&key, byname, n_order, sizeof *byname, cmp_str) : NULL;
			/* a candidate with several rows (resume over an edited file): its first */
			while (hit && hit > byname && !strcmp(hit[-1].s, key))
				hit--;
			r->rank = hit ? hit->rank : LONG_MAX;
		}
		free(byname);
	}
	if (st.n > 2)
		qsort(st.rows + 1, st.n - 1, sizeof *st.rows, cmp_samples);
	s = tb_write(samples, &st, 1, err);
	tb_free(&st);
out:
	free(order);
	tb_free(&rt);
	return s;
}

/* ---- --resume over an unreadable results.csv ---- */

enum cr_status eval_out_keep_aside(const char *results, const char *samples, char *moved,
				   size_t cap, struct cr_err *err)
{
	char now[32], sp[PATH_MAX + 64];
	time_t tt = time(NULL);
	struct tm tm;

	/* 20261206T140000Z: no colon in a file name */
	gmtime_r(&tt, &tm);
	strftime(now, sizeof now, "%Y%m%dT%H%M%SZ", &tm);
	if (snprintf(moved, cap, "%s.unreadable-%s", results, now) >= (int)cap)
		return cr_errf(err, CR_EIO, "%s: path too long", results);
	if (rename(results, moved))
		return cr_errf(err, CR_EIO, "%s: cannot keep it aside as %s: %s", results, moved,
			       strerror(errno));
	if (samples) {
		snprintf(sp, sizeof sp, "%s.unreadable-%s", samples, now);
		if (rename(samples, sp) && errno != ENOENT)
			return cr_errf(err, CR_EIO, "%s: cannot keep it aside as %s: %s", samples, sp,
				       strerror(errno));
	}
	return CR_OK;
}

/* ---- run.json "slurm" ---- */

void *eval_out_slurm_json(void)
{
	static const char *const vars[][2] = {
		{ "job_id", "SLURM_JOB_ID" },
		{ "array_job_id", "SLURM_ARRAY_JOB_ID" },
		{ "array_task_id", "SLURM_ARRAY_TASK_ID" },
	};
	json_t *j = NULL;

	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i][1]);
		char esc[256];
		if (!v || !*v)
			continue;
		if (!j)
			j = json_object();
		cr_text_escape(v, strnlen(v, 100), esc, sizeof esc);
		json_object_set_new(j, vars[i][0], json_string(esc));
	}
	if (!j)
		return json_null();
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (!json_object_get(j, vars[i][0]))
			json_object_set_new(j, vars[i][0], json_null());
	return j;
}

/* ---- signals ---- */

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	if (stop_sig) {
		/* the second: as the signal would have, now */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	stop_sig = sig;
	static const char msg[] = "\ncrucible eval: stopping: no candidate starts now, the finished rows are kept "
				  "(again to stop at once)\n";
	if (write(2, msg, sizeof msg - 1) < 0) { /* nothing to do */ }
}

void eval_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int eval_interrupted(void)
{
	return stop_sig;
}

volatile sig_atomic_t *eval_stop_flag(void)
{
	return &stop_sig;
}

/* ---- progress ---- */

/* eval_progress's counts are indexed by verdict, and eval_progress_close reads
 * every one of them */
_Static_assert(CHECK_VERDICT_COUNT <= sizeof ((struct eval_progress *)0)->counts /
		       sizeof ((struct eval_progress *)0)->counts[0],
	       "eval_progress.counts holds fewer slots than there are verdicts");

static void hms(double s, char *b, size_t cap)
{
	long t = s > 0 ? (long)(s + 0.5) : 0;
	if (t >= 3600)
		snprintf(b, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(b, cap, "%ld:%02ld", t / 60, t % 60);
}

double eval_progress_elapsed(const struct eval_progress *p)
{
	return (double)(cr_now_ns() - p->t0) / 1e9;
}

void eval_progress_start(struct eval_progress *p, int n)
{
	const char *nc = getenv("NO_COLOR");

	memset(p, 0, sizeof *p);
	p->n = n;
	p->t0 = cr_now_ns();
	p->tty = isatty(2) && !(nc && *nc) && !(getenv("TERM") && !strcmp(getenv("TERM"), "dumb"));
}

/* "[12/18 done, 2 running] 0:41 elapsed, ~0:20 left" */
static void head(const struct eval_progress *p, int running, char *b, size_t cap)
{
	char el[32], left[32];
	double e = eval_progress_elapsed(p);
	size_t w;

	hms(e, el, sizeof el);
	w = (size_t)snprintf(b, cap, "[%d/%d done", p->done, p->n);
	if (running > 0)
		w += (size_t)snprintf(b + w, w < cap ? cap - w : 0, ", %d running", running);
	w += (size_t)snprintf(b + w, w < cap ? cap - w : 0, "] %s elapsed", el);
	if (p->done > 0 && p->done < p->n) {
		hms(e / p->done * (p->n - p->done), left, sizeof left);
		snprintf(b + w, w < cap ? cap - w : 0, ", ~%s left", left);
	}
}

static const char *base(const char *s)
{
	const char *sl = strrchr(s, '/');
	return sl ? sl + 1 : s;
}

void eval_progress_started(struct eval_progress *p, int running, const char *name)
{
	char h[160], sb[400];

	if (!p->tty)
		return;
	head(p, running, h, sizeof h);
	cr_text_escape_name(base(name), strlen(base(name)), sb, sizeof sb);
	fprintf(stderr, "\r\033[K%s  %.40s", h, sb);
	fflush(stderr);
	p->drawn = true;
}

void eval_progress_finished(struct eval_progress *p, int running, const char *name, int verdict)
{
	char h[160], sb[400];

	p->done++;
	if (verdict >= 0 && verdict < CHECK_VERDICT_COUNT)
		p->counts[verdict]++;
	head(p, running, h, sizeof h);
	cr_text_escape_name(base(name), strlen(base(name)), sb, sizeof sb);
	if (p->tty) {
		fprintf(stderr, "\r\033[K%s", h);
		fflush(stderr);
		p->drawn = true;
		return;
	}
	fprintf(stderr, "%s: %s %s\n", h, sb,
		verdict >= 0 && verdict < CHECK_VERDICT_COUNT ? check_verdict_name((enum check_verdict)verdict) : "");
}

void eval_progress_clear(struct eval_progress *p)
{
	if (p->tty && p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->drawn = false;
	}
}

void eval_progress_close(struct eval_progress *p, int resumed)
{
	double e = eval_progress_elapsed(p);
	int first = 1;

	eval_progress_clear(p);
	fprintf(stderr, "%d evaluated", p->done);
	if (resumed)
		fprintf(stderr, " (%d more already in results.csv)", resumed);
	/* ok first, then the failures in the verdict order */
	for (int pass = 0; pass < 2; pass++)
		for (int v = CHECK_VERDICT_COUNT - 1; v >= 0; v--) {
			bool okish = v == CHECK_OK || v == CHECK_COMPILED;
			if (!p->counts[v] || okish != (pass == 0))
				continue;
			fprintf(stderr, "%s %d %s", first ? ":" : ",", p->counts[v],
				check_verdict_name((enum check_verdict)v));
			first = 0;
		}
	if (e < 10)
		fprintf(stderr, " in %.1f s\n", e);
	else
		fprintf(stderr, " in %.0f s\n", e);
}

/* ---- an unreadable results.csv ---- */

bool eval_out_unreadable(const char *path)
{
	struct stat sb;
	char buf[65536];
	size_t got;
	FILE *f;
	bool bad = false, first = true;
	struct csv_parser p;

	if (lstat(path, &sb) || !S_ISREG(sb.st_mode) || sb.st_size == 0)
		return false;   /* missing, empty, or not a file: the open says so */
	if (!(f = fopen(path, "rb")))
		return errno == EACCES;
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI)) {
		fclose(f);
		return false;
	}
	while (!bad && (got = fread(buf, 1, sizeof buf, f)) > 0) {
		if (memchr(buf, 0, got))
			bad = true;
		/* any crucible's results.csv starts with its run_id column */
		if (first && strncmp(buf, "\"run_id\"", got < 8 ? got : 8) &&
		    strncmp(buf, "run_id", got < 6 ? got : 6))
			bad = true;
		first = false;
		if (!bad && csv_parse(&p, buf, got, NULL, NULL, NULL) != got)
			bad = true;
	}
	if (!bad && ferror(f))
		bad = true;
	csv_free(&p);
	fclose(f);
	return bad;
}

void eval_progress_tick(struct eval_progress *p, int running)
{
	char h[160];
	int64_t now = cr_now_ns();

	if (!p->tty || !p->drawn || now - p->last_tick < 1000000000)
		return;
	p->last_tick = now;
	head(p, running, h, sizeof h);
	fprintf(stderr, "\r\033[K%s", h);
	fflush(stderr);
}

/* ---- work folders ---- */

const char *eval_tmp_base(void)
{
	const char *t = getenv("TMPDIR");
	char p[PATH_MAX], s1[1100], s2[1100];
	struct stat sb;

	if (!t || t[0] != '/' || strlen(t) > 512)
		return "/tmp";
	snprintf(p, sizeof p, "%s", t);
	for (;;) {
		const char *q = p[0] ? p : "/";

		if (stat(q, &sb) || !S_ISDIR(sb.st_mode) || !(sb.st_mode & S_IXOTH)) {
			cr_text_escape_name(t, strlen(t), s1, sizeof s1);
			cr_text_escape_name(q, strlen(q), s2, sizeof s2);
			fprintf(stderr, "crucible: TMPDIR=%s: %s is not a folder the candidates' user "
				"can pass through (o+x): work folders go to /tmp\n", s1, s2);
			return "/tmp";
		}
		if (!p[0])
			break;
		*strrchr(p, '/') = '\0';
	}
	return t;
}

char *eval_workroot_new(void)
{
	char tmpl[600];
	char *d;

	snprintf(tmpl, sizeof tmpl, "%s/crucible-XXXXXX", eval_tmp_base());
	d = mkdtemp(tmpl);
	if (!d)
		return NULL;
	chmod(d, 0755);
	return strdup(d);
}
