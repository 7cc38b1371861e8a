/* report_csvtab.c — a plain CSV table (header + records of text fields, each
 * with the physical line where it starts), read with libcsv in strict mode,
 * for the files of a run directory (selected.csv, curve.csv) whose columns
 * report_run.c interprets. Fields are escaped as read (cr_text_escape): their
 * text reaches a terminal, markdown and html. */
#include <csv.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"
#include "common/cr_text.h"

struct tload {
	struct report_table *t;
	struct cr_err *e;
	long line, rec_start;
	char **fields;       /* the record being read, owned until stored */
	size_t n, cap;
	int failed;
};

static void on_field(void *field, size_t len, void *data)
{
	struct tload *L = data;
	char *copy;

	if (L->failed)
		return;
	if (L->n == 0) {
		size_t nl = 0;
		for (size_t i = 0; i < len; i++)
			nl += ((const char *)field)[i] == '\n';
		L->rec_start = L->line - (long)nl;
	}
	if (L->n == L->cap) {
		size_t cap = L->cap ? 2 * L->cap : 32;
		char **nf = realloc(L->fields, cap * sizeof *nf);
		if (!nf)
			goto oom;
		L->fields = nf;
		L->cap = cap;
	}
	if (!(copy = malloc(4 * len + 1)))
		goto oom;
	cr_text_escape(field ? field : "", field ? len : 0, copy, 4 * len + 1);
	L->fields[L->n++] = copy;
	return;
oom:
	L->failed = 1;
	cr_errf(L->e, CR_ENOMEM, "%s: out of memory", L->t->path);
}

static void drop_fields(struct tload *L)
{
	for (size_t i = 0; i < L->n; i++)
		free(L->fields[i]);
	L->n = 0;
}

static void on_record(int term, void *data)
{
	struct tload *L = data;
	struct report_table *t = L->t;

	(void)term;
	if (L->failed) {
		drop_fields(L);
		return;
	}
	if (!t->header) {
		if (L->n && !strncmp(L->fields[0], "\xEF\xBB\xBF", 3))
			memmove(L->fields[0], L->fields[0] + 3, strlen(L->fields[0]) - 2);
		t->header = L->fields;
		t->n_cols = L->n;
		L->fields = NULL;
		L->n = L->cap = 0;
		return;
	}
	if (L->n != t->n_cols) {
		cr_errf(L->e, CR_EINPUT, "%s:%ld: expected %zu fields as in the header, found %zu",
			t->path, L->rec_start, t->n_cols, L->n);
		L->failed = 1;
		drop_fields(L);
		return;
	}
	if (t->n_rows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct report_trow *nr = realloc(t->rows, cap * sizeof *nr);
		if (!nr) {
			cr_errf(L->e, CR_ENOMEM, "%s: out of memory", t->path);
			L->failed = 1;
			drop_fields(L);
			return;
		}
		t->rows = nr;
		t->cap = cap;
	}
	t->rows[t->n_rows].line = L->rec_start;
	t->rows[t->n_rows].f = L->fields;
	t->n_rows++;
	L->fields = NULL;
	L->n = L->cap = 0;
}

enum cr_status report_table_load(const char *path, struct report_table *t, struct cr_err *e)
{
	struct csv_parser p;
	struct tload L = { 0 };
	FILE *f = NULL;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	int pinit = 0;
	enum cr_status st = CR_OK;

	memset(t, 0, sizeof *t);
	L.t = t;
	L.e = e;
	if (!(t->path = strdup(path))) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	/* a run directory's table: no link, no FIFO (cr_open_data) */
	if (!(f = cr_fopen_data(NULL, path, CR_DATA_MAX_CSV, 0, e))) {
		st = e && e->status ? e->status : CR_EINPUT;
		goto out;
	}
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL)) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	pinit = 1;
	while (!L.failed && (len = getline(&buf, &cap, f)) > 0) {
		L.line++;
		if (csv_parse(&p, buf, (size_t)len, on_field, on_record, &L) != (size_t)len &&
		    !L.failed) {
			st = cr_errf(e, CR_EINPUT, "%s:%ld: malformed CSV (%s)", path, L.line,
				     csv_strerror(csv_error(&p)));
			goto out;
		}
	}
	if (ferror(f)) {
		st = cr_errf(e, CR_EIO, "%s: read error: %s", path, strerror(errno));
		goto out;
	}
	if (!L.failed && csv_fini(&p, on_field, on_record, &L)) {
		st = cr_errf(e, CR_EINPUT, "%s:%ld: unterminated quoted field", path, L.line);
		goto out;
	}
	if (L.failed) {
		st = e && e->status ? e->status : CR_EINPUT;
		goto out;
	}
	if (!t->header)
		st = cr_errf(e, CR_EINPUT, "%s:1: empty file, expected a header row", path);
out:
	drop_fields(&L);
	free(L.fields);
	if (pinit)
		csv_free(&p);
	free(buf);
	if (f)
		fclose(f);
	if (st != CR_OK)
		report_table_release(t);
	return st;
}

int report_table_col(const struct report_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_cols; i++)
		if (!strcmp(t->header[i], name))
			return (int)i;
	return -1;
}

void report_table_release(struct report_table *t)
{
	if (!t)
		return;
	for (size_t r = 0; r < t->n_rows; r++) {
		for (size_t i = 0; i < t->n_cols; i++)
			free(t->rows[r].f[i]);
		free(t->rows[r].f);
	}
	for (size_t i = 0; t->header && i < t->n_cols; i++)
		free(t->header[i]);
	free(t->header);
	free(t->rows);
	free(t->path);
	memset(t, 0, sizeof *t);
}
