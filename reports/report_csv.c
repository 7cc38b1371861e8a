/* report_csv.c — loads results.csv (SPEC §6) with libcsv into a struct
 * report_run: columns looked up by header name (extra columns ignored,
 * missing required ones an error), statuses and numbers validated, every
 * error naming the file and the physical line where the record starts.
 * Also loads --task-list files. */
#include <csv.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"
#include "common/cr_text.h"

const char *report_status_name(int status)
{
	return check_verdict_name((enum check_verdict)status);
}
const char *const report_bw_names[RB_COUNT] = { "pass", "fail", "absent", "none" };

/* Columns of SPEC §6; every one must be in the header. */
enum col {
	C_RUN_ID, C_TASK, C_CANDIDATE, C_SAMPLE, C_BACKEND, C_DEVICE, C_STATUS,
	C_BACKWARD, C_DETAIL, C_MAX_ABS_ERR, C_MAX_REL_ERR, C_TIME_US, C_TIME_LO_US,
	C_TIME_HI_US, C_BASELINE_US, C_SPEEDUP, C_SPEEDUP_LO, C_SPEEDUP_HI,
	C_SAMPLES, C_REASONING_TOKENS, C_COMPLETION_TOKENS, C_MODEL, C_TEMPERATURE,
	C_TOP_P, C_TOP_K, C_SEED, C_TURN, C_SOURCE_SHA256,
	C_REQUIRED, /* optional columns follow */
	C_STRATEGY = C_REQUIRED, C_LABEL, C_NOISY, C_VERIFY_SEED, C_GENERATION, C_COUNT
};
static const char *const col_names[C_COUNT] = {
	"run_id", "task", "candidate", "sample", "backend", "device", "status",
	"backward", "detail", "max_abs_err", "max_rel_err", "time_us", "time_lo_us",
	"time_hi_us", "baseline_us", "speedup", "speedup_lo", "speedup_hi",
	"samples", "reasoning_tokens", "completion_tokens", "model", "temperature",
	"top_p", "top_k", "seed", "turn", "source_sha256", "strategy", "label", "noisy",
	"verify_seed", "generation",
};

/* Before the noisy column existed the flag was only this detail prefix. */
static const char noisy_prefix[] = "timing noisy";

/* Parser state shared with the libcsv callbacks. */
struct load {
	struct report_run *run;
	struct cr_err *e;
	const char *path;
	long line;           /* physical line being fed to libcsv */
	long rec_start;      /* line where the current record starts */
	long last_end;       /* line where the last complete record ended */
	long n_records;
	char **fields;       /* fields of the current record, owned */
	size_t n_fields, cap_fields;
	int colidx[C_COUNT]; /* header position of each column, -1 if absent */
	size_t n_header;
	int failed;
};

static void on_field(void *field, size_t len, void *data)
{
	struct load *L = data;
	char *copy;
	size_t i, nl = 0;

	if (L->failed)
		return;
	if (L->n_fields == 0) {
		for (i = 0; i < len; i++)
			nl += ((const char *)field)[i] == '\n';
		L->rec_start = L->line - (long)nl;
	}
	if (L->n_fields == L->cap_fields) {
		size_t cap = L->cap_fields ? 2 * L->cap_fields : 32;
		char **nf = realloc(L->fields, cap * sizeof *nf);
		if (!nf) {
			L->failed = 1;
			cr_errf(L->e, CR_ENOMEM, "%s: out of memory", L->path);
			return;
		}
		L->fields = nf;
		L->cap_fields = cap;
	}
	/* escaped as read: a results.csv may come from anyone, and its text
	 * reaches a terminal, markdown and html (4 bytes out per byte in at most) */
	copy = malloc(4 * len + 1);
	if (copy)
		cr_text_escape(field ? field : "", field ? len : 0, copy, 4 * len + 1);
	if (!copy) {
		L->failed = 1;
		cr_errf(L->e, CR_ENOMEM, "%s: out of memory", L->path);
		return;
	}
	L->fields[L->n_fields++] = copy;
}

static void clear_fields(struct load *L)
{
	for (size_t i = 0; i < L->n_fields; i++)
		free(L->fields[i]);
	L->n_fields = 0;
}

static int fail(struct load *L, const char *fmt, const char *a, const char *b)
{
	char msg[700];

	snprintf(msg, sizeof msg, fmt, a, b);
	cr_errf(L->e, CR_EINPUT, "%s:%ld: %s", L->path, L->rec_start, msg);
	L->failed = 1;
	return -1;
}

static int parse_header(struct load *L)
{
	for (int c = 0; c < C_COUNT; c++)
		L->colidx[c] = -1;
	for (size_t i = 0; i < L->n_fields; i++) {
		char *h = L->fields[i];
		size_t len = strlen(h);
		if (i == 0 && len >= 3 && !memcmp(h, "\xEF\xBB\xBF", 3))
			memmove(h, h + 3, len - 2); /* UTF-8 byte order mark */
		for (int c = 0; c < C_COUNT; c++)
			if (L->colidx[c] < 0 && !strcmp(h, col_names[c]))
				L->colidx[c] = (int)i;
	}
	for (int c = 0; c < C_REQUIRED; c++)
		if (L->colidx[c] < 0) {
			cr_errf(L->e, CR_EINPUT, "%s: missing required column '%s' in the header",
				L->path, col_names[c]);
			L->failed = 1;
			return -1;
		}
	L->n_header = L->n_fields;
	return 0;
}

static const char *field(const struct load *L, enum col c)
{
	return L->colidx[c] < 0 ? "" : L->fields[L->colidx[c]];
}

/* Empty → NAN; else the whole field must be a number. */
static int num(struct load *L, enum col c, int nonneg, double *out)
{
	const char *s = field(L, c);
	char *end;
	double v;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s) {
		*out = NAN;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	while (isspace((unsigned char)*end))
		end++;
	if (end == s || *end || errno == ERANGE)
		return fail(L, "column '%s': bad number '%s'", col_names[c], s);
	if (nonneg && (!isfinite(v) || v < 0))
		return fail(L, "column '%s': expected a finite number >= 0, got '%s'",
			    col_names[c], s);
	*out = v;
	return 0;
}

static int integer(struct load *L, enum col c, long dflt, long *out)
{
	const char *s = field(L, c);
	char *end;
	long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s) {
		*out = dflt;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	while (isspace((unsigned char)*end))
		end++;
	if (end == s || *end || errno == ERANGE || v < 0)
		return fail(L, "column '%s': expected an integer >= 0, got '%s'", col_names[c], s);
	*out = v;
	return 0;
}

static int parse_row(struct load *L, struct report_row *r)
{
	const char *st = field(L, C_STATUS), *bw = field(L, C_BACKWARD);
	char nbuf[2][32];
	int i;

	if (L->n_fields != L->n_header) {
		snprintf(nbuf[0], sizeof nbuf[0], "%zu", L->n_header);
		snprintf(nbuf[1], sizeof nbuf[1], "%zu", L->n_fields);
		return fail(L, "expected %s fields as in the header, found %s", nbuf[0], nbuf[1]);
	}
	if ((i = check_verdict_parse(st)) < 0) {
		/* the list from the vocabulary itself, so it never goes stale */
		char list[400] = "";
		for (int v = 0; v < RS_COUNT; v++) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s%s", v ? ", " : " (expected ",
				 report_status_name(v));
		}
		return fail(L, "unknown status '%s'%s)", st, list);
	}
	r->status = (enum report_rs)i;
	/* a candidate that named no task (or whose file could not be read)
	 * has a failing row with an empty task; a passing row must name one */
	if (!*field(L, C_TASK) && r->status == RS_OK)
		return fail(L, "column '%s' is empty%s", "task", " in a row with status ok");
	for (i = 0; i < RB_COUNT && strcmp(bw, report_bw_names[i]); i++)
		;
	if (!*bw)
		i = RB_NONE;
	else if (i == RB_COUNT)
		return fail(L, "unknown backward '%s'%s", bw, " (expected pass, fail, absent or none)");
	r->backward = (enum report_bw)i;
	if (integer(L, C_SAMPLE, 0, &r->sample) || integer(L, C_TURN, -1, &r->turn) ||
	    integer(L, C_GENERATION, -1, &r->generation) ||
	    num(L, C_SPEEDUP, 1, &r->speedup) || num(L, C_SPEEDUP_LO, 1, &r->speedup_lo) ||
	    num(L, C_SPEEDUP_HI, 1, &r->speedup_hi) || num(L, C_TIME_US, 1, &r->time_us) ||
	    num(L, C_BASELINE_US, 1, &r->baseline_us) ||
	    num(L, C_REASONING_TOKENS, 1, &r->reasoning_tokens) ||
	    num(L, C_COMPLETION_TOKENS, 1, &r->completion_tokens) ||
	    num(L, C_TEMPERATURE, 1, &r->temperature) || num(L, C_TOP_P, 1, &r->top_p) ||
	    num(L, C_TOP_K, 1, &r->top_k))
		return -1;
	/* Validated for the error message, otherwise unused by the tables. */
	{
		double dummy;
		if (num(L, C_MAX_ABS_ERR, 0, &r->max_abs_err) ||
		    num(L, C_MAX_REL_ERR, 0, &r->max_rel_err) ||
		    num(L, C_TIME_LO_US, 1, &dummy) || num(L, C_TIME_HI_US, 1, &dummy) ||
		    num(L, C_SAMPLES, 1, &r->n_samples) || num(L, C_SEED, 1, &dummy))
			return -1;
	}
	if (r->speedup == 0)
		return fail(L, "column '%s': speedup must be > 0, got '%s'", "speedup",
			    field(L, C_SPEEDUP));
	r->task = strdup(field(L, C_TASK));
	r->candidate = strdup(field(L, C_CANDIDATE));
	r->model = strdup(field(L, C_MODEL));
	r->strategy = strdup(field(L, C_STRATEGY));
	r->detail = strdup(field(L, C_DETAIL));
	r->label = strdup(field(L, C_LABEL));
	r->sha256 = strdup(field(L, C_SOURCE_SHA256));
	r->verify_seed = strdup(field(L, C_VERIFY_SEED));
	r->line = L->rec_start;
	if (L->colidx[C_NOISY] >= 0) {
		const char *nz = field(L, C_NOISY);
		if (!strcmp(nz, "1"))
			r->noisy = 1;
		else if (!strcmp(nz, "0"))
			r->noisy = 0;
		else if (!*nz)
			r->noisy = -1;
		else
			return fail(L, "column '%s': expected 1, 0 or empty, got '%s'", "noisy", nz);
	} else {
		r->noisy = !strncmp(field(L, C_DETAIL), noisy_prefix, sizeof noisy_prefix - 1) ? 1 :
			   isnan(r->speedup) ? -1 : 0;
	}
	if (!r->task || !r->candidate || !r->model || !r->strategy || !r->detail || !r->label ||
	    !r->sha256 || !r->verify_seed) {
		cr_errf(L->e, CR_ENOMEM, "%s: out of memory", L->path);
		L->failed = 1;
		return -1;
	}
	return 0;
}

static void free_row(struct report_row *r)
{
	free(r->task);
	free(r->candidate);
	free(r->model);
	free(r->strategy);
	free(r->detail);
	free(r->label);
	free(r->sha256);
	free(r->verify_seed);
	free(r->s_cand);
	free(r->s_base);
}

static void on_record(int term, void *data)
{
	struct load *L = data;
	struct report_run *run = L->run;
	struct report_row r;

	(void)term;
	if (L->failed)
		goto out;
	if (L->n_records++ == 0) {
		parse_header(L);
		goto out;
	}
	if (run->n_rows == run->cap) {
		size_t cap = run->cap ? 2 * run->cap : 64;
		struct report_row *nr = realloc(run->rows, cap * sizeof *nr);
		if (!nr) {
			cr_errf(L->e, CR_ENOMEM, "%s: out of memory", L->path);
			L->failed = 1;
			goto out;
		}
		run->rows = nr;
		run->cap = cap;
	}
	memset(&r, 0, sizeof r);
	if (parse_row(L, &r)) {
		free_row(&r);
		goto out;
	}
	if (!*r.task) {
		run->untasked[r.status]++;
		run->n_untasked++;
		free_row(&r);
		goto out;
	}
	run->rows[run->n_rows++] = r;
out:
	L->last_end = L->line;
	clear_fields(L);
}

enum cr_status report_run_load(const char *path, struct report_run *run, struct cr_err *e)
{
	struct csv_parser p;
	struct load L;
	FILE *f = NULL;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	int pinit = 0;
	enum cr_status st = CR_OK;

	memset(run, 0, sizeof *run);
	memset(&L, 0, sizeof L);
	L.run = run;
	L.e = e;
	L.path = path;
	run->path = strdup(path);
	if (!run->path) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	/* a results.csv is handed over: no link, no FIFO, a bounded regular file */
	f = cr_fopen_data(NULL, path, CR_DATA_MAX_CSV, 0, e);
	if (!f) {
		st = e && e->status ? e->status : CR_EINPUT;
		goto out;
	}
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL)) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	pinit = 1;
	/* Feed one physical line at a time so errors can name the line. */
	while (!L.failed && (len = getline(&buf, &cap, f)) > 0) {
		L.line++;
		if (csv_parse(&p, buf, (size_t)len, on_field, on_record, &L) != (size_t)len &&
		    !L.failed) {
			L.rec_start = L.line;
			st = cr_errf(e, CR_EINPUT, "%s:%ld: malformed CSV (%s): a quote inside an "
				     "unquoted field or text after a closing quote", path, L.line,
				     csv_strerror(csv_error(&p)));
			goto out;
		}
	}
	if (ferror(f)) {
		st = cr_errf(e, CR_EIO, "%s: read error", path);
		goto out;
	}
	if (!L.failed && csv_fini(&p, on_field, on_record, &L)) {
		st = cr_errf(e, CR_EINPUT, "%s:%ld: unterminated quoted field (the file ends "
			     "inside quotes)", path, L.last_end + 1);
		goto out;
	}
	if (L.failed) {
		st = e && e->status ? e->status : CR_EINPUT;
		goto out;
	}
	if (L.n_records == 0)
		st = cr_errf(e, CR_EINPUT, "%s:1: empty file, expected a header row", path);
out:
	clear_fields(&L);
	free(L.fields);
	if (pinit)
		csv_free(&p);
	free(buf);
	if (f)
		fclose(f);
	if (st != CR_OK)
		report_run_release(run);
	return st;
}

void report_run_release(struct report_run *run)
{
	if (!run)
		return;
	for (size_t i = 0; i < run->n_rows; i++)
		free_row(&run->rows[i]);
	free(run->rows);
	free(run->path);
	memset(run, 0, sizeof *run);
}

enum cr_status report_task_list_load(const char *path, char ***names, size_t *n,
				     struct cr_err *e)
{
	long *lines = NULL;
	enum cr_status st = report_task_list_load_lines(path, names, &lines, n, e);

	free(lines);
	return st;
}

enum cr_status report_task_list_load_lines(const char *path, char ***names, long **lines,
					   size_t *n, struct cr_err *e)
{
	FILE *f = cr_fopen_data(NULL, path, CR_DATA_MAX_JSON, 0, e);
	char *buf = NULL, **v = NULL;
	long *ln = NULL, line = 0;
	size_t cap = 0, nv = 0, capv = 0;
	enum cr_status st = CR_OK;

	*names = NULL;
	*lines = NULL;
	*n = 0;
	if (!f)
		return e && e->status ? e->status : CR_EINPUT;
	while (getline(&buf, &cap, f) > 0) {
		char *s = buf, *t;
		line++;
		while (isspace((unsigned char)*s))
			s++;
		t = s + strlen(s);
		while (t > s && isspace((unsigned char)t[-1]))
			*--t = '\0';
		if (!*s || *s == '#')
			continue;
		if (nv == capv) {
			size_t c2 = capv ? 2 * capv : 16;
			char **nn = realloc(v, c2 * sizeof *nn);
			long *nl = nn ? realloc(ln, c2 * sizeof *nl) : NULL;
			if (nn)
				v = nn;
			if (!nl) {
				st = cr_errf(e, CR_ENOMEM, "out of memory");
				goto out;
			}
			ln = nl;
			capv = c2;
		}
		if (!(v[nv] = strdup(s))) {
			st = cr_errf(e, CR_ENOMEM, "out of memory");
			goto out;
		}
		ln[nv++] = line;
	}
	if (nv == 0)
		st = cr_errf(e, CR_EINPUT, "%s: no task names in the task list", path);
out:
	free(buf);
	fclose(f);
	if (st != CR_OK) {
		report_task_list_free(v, nv);
		free(ln);
		return st;
	}
	*names = v;
	*lines = ln;
	*n = nv;
	return CR_OK;
}

void report_task_list_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}
