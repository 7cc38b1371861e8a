/* report_samples.c — loads the raw timing samples of an eval run: the sidecar
 * samples.csv beside results.csv (header `candidate,source_sha256,side,us`,
 * one row per timed sample, side `cand` or `base`, in time order) into the
 * rows of a struct report_run, matched by candidate and source_sha256. The
 * gate compares these samples when both runs have them (docs/REPORTS.md). */
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

enum scol { S_CAND, S_SHA, S_SIDE, S_US, S_COUNT };
static const char *const scol_names[S_COUNT] = { "candidate", "source_sha256", "side", "us" };

struct sload {
	struct report_run *run;
	struct cr_err *e;
	const char *path;
	long line, rec;
	char *f[16];         /* fields of the current record (first 16), owned */
	size_t nf;
	int idx[S_COUNT];
	long n_records;
	size_t last;         /* row matched by the previous sample */
	int failed;
};

static void s_field(void *field, size_t len, void *data)
{
	struct sload *L = data;

	if (L->failed || L->nf >= 16) {
		L->nf += !L->failed;
		return;
	}
	L->f[L->nf] = strndup(field ? field : "", field ? len : 0);
	if (!L->f[L->nf]) {
		L->failed = 1;
		cr_errf(L->e, CR_ENOMEM, "%s: out of memory", L->path);
		return;
	}
	L->nf++;
}

static int s_fail(struct sload *L, const char *what, const char *v)
{
	cr_errf(L->e, CR_EINPUT, "%s:%ld: %s '%s'", L->path, L->rec, what, v);
	L->failed = 1;
	return -1;
}

static int push(double **v, size_t *n, double x)
{
	/* grow at powers of two */
	if ((*n & (*n - 1)) == 0) {
		double *nv = realloc(*v, (*n ? 2 * *n : 8) * sizeof *nv);
		if (!nv)
			return -1;
		*v = nv;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static int s_row(struct sload *L)
{
	const char *cand = L->f[L->idx[S_CAND]], *sha = L->f[L->idx[S_SHA]];
	const char *side = L->f[L->idx[S_SIDE]], *us = L->f[L->idx[S_US]];
	struct report_run *run = L->run;
	struct report_row *r = NULL;
	char *end;
	double x;

	errno = 0;
	x = strtod(us, &end);
	if (end == us || *end || errno == ERANGE || !isfinite(x) || x <= 0)
		return s_fail(L, "column 'us': expected a time > 0, got", us);
	if (strcmp(side, "cand") && strcmp(side, "base"))
		return s_fail(L, "column 'side': expected cand or base, got", side);
	for (size_t k = 0; k < run->n_rows; k++) {
		size_t i = (L->last + k) % run->n_rows;
		if (!strcmp(run->rows[i].candidate, cand) && !strcmp(run->rows[i].sha256, sha)) {
			r = &run->rows[i];
			L->last = i;
			break;
		}
	}
	if (!r)
		return s_fail(L, "no results.csv row for the candidate", cand);
	if (side[0] == 'c' ? push(&r->s_cand, &r->n_cand, x) : push(&r->s_base, &r->n_base, x)) {
		cr_errf(L->e, CR_ENOMEM, "%s: out of memory", L->path);
		L->failed = 1;
		return -1;
	}
	return 0;
}

static void s_record(int term, void *data)
{
	struct sload *L = data;

	(void)term;
	if (L->failed)
		goto out;
	if (L->nf > 16) {
		s_fail(L, "too many fields in the record", "");
		goto out;
	}
	if (L->n_records++ == 0) {
		for (int c = 0; c < S_COUNT; c++) {
			L->idx[c] = -1;
			for (size_t i = 0; i < L->nf; i++)
				if (!strcmp(L->f[i], scol_names[c]))
					L->idx[c] = (int)i;
			if (L->idx[c] < 0) {
				s_fail(L, "missing required column", scol_names[c]);
				goto out;
			}
		}
		goto out;
	}
	for (int c = 0; c < S_COUNT; c++)
		if ((size_t)L->idx[c] >= L->nf) {
			s_fail(L, "record shorter than the header, no column", scol_names[c]);
			goto out;
		}
	s_row(L);
out:
	for (size_t i = 0; i < L->nf && i < 16; i++)
		free(L->f[i]);
	L->nf = 0;
}

enum cr_status report_run_load_samples(struct report_run *run, struct cr_err *e)
{
	struct csv_parser p;
	struct sload L;
	char *path = NULL, *buf = NULL, *slash;
	size_t cap = 0;
	ssize_t len;
	FILE *f = NULL;
	int pinit = 0;
	enum cr_status st = CR_OK;

	memset(&L, 0, sizeof L);
	run->has_samples = 0;
	path = malloc(strlen(run->path) + sizeof "samples.csv");
	if (!path)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	strcpy(path, run->path);
	slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "samples.csv");
	/* beside results.csv, as untrusted: no link, no FIFO; absent is fine */
	if (!(f = cr_fopen_data(NULL, path, CR_DATA_MAX_CSV, CR_DATA_OPTIONAL, e))) {
		if (errno != ENOENT)
			st = e && e->status ? e->status : CR_EINPUT;
		goto out;
	}
	L.run = run;
	L.e = e;
	L.path = path;
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL)) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	pinit = 1;
	while (!L.failed && (len = getline(&buf, &cap, f)) > 0) {
		L.rec = ++L.line;
		if (csv_parse(&p, buf, (size_t)len, s_field, s_record, &L) != (size_t)len &&
		    !L.failed) {
			st = cr_errf(e, CR_EINPUT, "%s:%ld: malformed CSV (%s)", path, L.line,
				     csv_strerror(csv_error(&p)));
			goto out;
		}
	}
	if (!L.failed && csv_fini(&p, s_field, s_record, &L)) {
		st = cr_errf(e, CR_EINPUT, "%s:%ld: unterminated quoted field", path, L.line);
		goto out;
	}
	if (L.failed) {
		st = e && e->status ? e->status : CR_EINPUT;
		goto out;
	}
	if (L.n_records == 0) {
		st = cr_errf(e, CR_EINPUT, "%s:1: empty file, expected a header row", path);
		goto out;
	}
	run->has_samples = 1;
out:
	for (size_t i = 0; i < L.nf && i < 16; i++)
		free(L.f[i]);
	if (pinit)
		csv_free(&p);
	if (f)
		fclose(f);
	free(buf);
	free(path);
	return st;
}
