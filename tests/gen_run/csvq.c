/* csvq — prints one column of a CSV file (libcsv), a value per row, for the
 * shell tests: csvq FILE COLUMN [WHERECOL VALUE]. Exit 2 when the file or a
 * column is missing. */
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct q {
	const char *col, *wcol, *wval;
	int ci, wi, field, row;
	char *cur, *wcur;
	int bad;
};

static void on_field(void *s, size_t n, void *data)
{
	struct q *q = data;
	char *v = strndup(s ? s : "", n);
	if (q->row == 0) {
		if (!strcmp(v, q->col))
			q->ci = q->field;
		if (q->wcol && !strcmp(v, q->wcol))
			q->wi = q->field;
		free(v);
	} else if (q->field == q->ci) {
		free(q->cur);
		q->cur = v;
	} else if (q->field == q->wi) {
		free(q->wcur);
		q->wcur = v;
	} else {
		free(v);
	}
	q->field++;
}

static void on_row(int c, void *data)
{
	struct q *q = data;
	(void)c;
	if (q->row == 0 && (q->ci < 0 || (q->wcol && q->wi < 0))) {
		fprintf(stderr, "csvq: no column %s\n", q->ci < 0 ? q->col : q->wcol);
		q->bad = 1;
	} else if (q->row > 0 && (!q->wcol || (q->wcur && !strcmp(q->wcur, q->wval)))) {
		printf("%s\n", q->cur ? q->cur : "");
	}
	free(q->cur);
	free(q->wcur);
	q->cur = q->wcur = NULL;
	q->field = 0;
	q->row++;
}

int main(int argc, char **argv)
{
	struct csv_parser p;
	struct q q = { .ci = -1, .wi = -1 };
	char buf[65536];
	size_t n;
	FILE *f;

	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: csvq FILE COLUMN [WHERECOL VALUE]\n");
		return 2;
	}
	q.col = argv[2];
	if (argc == 5) {
		q.wcol = argv[3];
		q.wval = argv[4];
	}
	f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	csv_init(&p, CSV_APPEND_NULL);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0 && !q.bad)
		csv_parse(&p, buf, n, on_field, on_row, &q);
	csv_fini(&p, on_field, on_row, &q);
	csv_free(&p);
	fclose(f);
	return q.bad ? 2 : 0;
}
