/* report_cli.c — `crucible report` and `crucible gate`: command lines, help,
 * loading the files and handing the summaries to a printer; plus
 * report_print_summary() for `crucible eval`. Exit codes are SPEC §1's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"
#include "reports/report_impl.h"

static const char report_usage[] =
	"usage: crucible report RESULTS.csv... [options]\n"
	"\n"
	"Fast_p, pass@k / fast_p@k, geometric-mean speedup, status counts, a per-task\n"
	"table and reasoning-length tables of one or more results.csv files. Several\n"
	"files give an ablation table with a column per file (run).\n"
	"\n"
	"options:\n"
	"  --format md|html|json|csv  output format (default md)\n"
	"  --p LIST          Fast_p thresholds, comma separated (default 0,0.5,0.8,1,1.5,2)\n"
	"  --k LIST          pass@k values of k (default 1,5,10)\n"
	"  --out FILE        write to FILE instead of stdout\n"
	"  --task-list FILE  the task set, one name per line: tasks with no candidate\n"
	"                    count as failed (default: the tasks found in the files)\n"
	"  --strict-backward count backward=absent as incorrect\n"
	"  --help            this text\n"
	"\n"
	"A candidate is correct when status is ok and backward is not fail.\n"
	"exit: 0 ok, 2 bad usage or bad input file.\n";

static const char gate_usage[] =
	"usage: crucible gate --baseline A.csv --current B.csv [options]\n"
	"\n"
	"CI regression gate. Per task it compares the best candidate (correct, highest\n"
	"speedup) of the baseline and the current run. A task regresses when it was\n"
	"correct and no longer is, when it is missing from the current run, or when its\n"
	"speedup fell beyond both its interval (current speedup_hi < baseline\n"
	"speedup_lo) and the threshold (current < baseline x (1 - threshold)).\n"
	"\n"
	"options:\n"
	"  --baseline FILE   results.csv of the baseline (required)\n"
	"  --current FILE    results.csv of the current run (required)\n"
	"  --threshold X     relative slowdown tolerated (default 0.05)\n"
	"  --min-fast1 F     fail when the current best-of-n fast_1 is below F\n"
	"  --strict-backward count backward=absent as incorrect\n"
	"  --junit FILE      write JUnit XML (one testcase per task)\n"
	"  --markdown FILE   write a pull-request comment in markdown\n"
	"  --help            this text\n"
	"\n"
	"exit: 0 clean, 1 regression or floor missed, 2 bad usage or bad input file.\n";

/* "--name VALUE" or "--name=VALUE"; advances *i. NULL with a message on error. */
static const char *opt_value(int argc, char **argv, int *i, const char *name,
			     const char *cmd, int *matched)
{
	size_t len = strlen(name);
	const char *a = argv[*i];

	*matched = 0;
	if (strncmp(a, name, len))
		return NULL;
	if (a[len] == '=') {
		*matched = 1;
		return a + len + 1;
	}
	if (a[len])
		return NULL;
	*matched = 1;
	if (*i + 1 >= argc) {
		fprintf(stderr, "crucible %s: %s needs a value\n", cmd, name);
		return NULL;
	}
	return argv[++*i];
}

static int parse_p_list(const char *s, struct report_opts *o)
{
	char *end;

	o->np = 0;
	while (*s) {
		double v;
		errno = 0;
		v = strtod(s, &end);
		if (end == s || errno || !isfinite(v) || v < 0 || o->np == 32 ||
		    (*end && *end != ','))
			return -1;
		o->p[o->np++] = v;
		s = *end ? end + 1 : end;
	}
	return o->np ? 0 : -1;
}

static int parse_k_list(const char *s, struct report_opts *o)
{
	char *end;

	o->nk = 0;
	while (*s) {
		long v;
		errno = 0;
		v = strtol(s, &end, 10);
		if (end == s || errno || v < 1 || v > 1000000 || o->nk == 32 ||
		    (*end && *end != ','))
			return -1;
		o->k[o->nk++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return o->nk ? 0 : -1;
}

/* Loads and summarises every file; prints in the format asked. */
static enum cr_status run_report(char **files, size_t nf, const struct report_opts *o,
				 enum report_fmt fmt, FILE *out, struct cr_err *e)
{
	struct report_run *runs = calloc(nf, sizeof *runs);
	struct report_summary *sums = calloc(nf, sizeof *sums);
	struct report_opts local = *o;
	char **union_names = NULL;
	size_t n_union = 0;
	size_t loaded = 0, summed = 0;
	enum cr_status st = CR_OK;

	if (!runs || !sums) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (; loaded < nf; loaded++)
		if ((st = report_run_load(files[loaded], &runs[loaded], e)) != CR_OK)
			goto out;
	/* Several runs without a task list: N is every task of every file, so a
	 * task one run lacks counts as failed there. */
	if (!o->task_list && nf > 1) {
		size_t total = 0;
		for (size_t i = 0; i < nf; i++)
			total += runs[i].n_rows;
		union_names = malloc((total ? total : 1) * sizeof *union_names);
		if (!union_names) {
			st = cr_errf(e, CR_ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < nf; i++)
			for (size_t r = 0; r < runs[i].n_rows; r++)
				union_names[n_union++] = runs[i].rows[r].task;
		local.task_list = union_names;
		local.n_task_list = n_union;
		local.task_union = 1;
		o = &local;
	}
	for (; summed < nf; summed++)
		if ((st = report_summary_compute(&runs[summed], o, &sums[summed], e)) != CR_OK)
			goto out;
	/* runs whose metadata gives the same label are told apart by number */
	for (size_t i = 0; i < nf; i++)
		for (size_t k = 0; k < nf; k++)
			if (k != i && !strcmp(sums[i].label, sums[k].label)) {
				char tmp[sizeof sums[i].label];
				for (size_t q = 0; q < nf; q++)
					if (!strcmp(sums[q].label, sums[i].label) && q != i) {
						snprintf(tmp, sizeof tmp, "%.*s (run %zu)",
							 (int)sizeof tmp - 12, sums[q].label, q + 1);
						memcpy(sums[q].label, tmp, sizeof tmp);
					}
				snprintf(tmp, sizeof tmp, "%.*s (run %zu)", (int)sizeof tmp - 12,
					 sums[i].label, i + 1);
				memcpy(sums[i].label, tmp, sizeof tmp);
				break;
			}
	switch (fmt) {
	case RF_MD:
		fprintf(out, "# crucible report\n\n");
		report_print_md(out, sums, nf);
		break;
	case RF_JSON:
		if (report_print_json(out, sums, nf))
			st = cr_errf(e, CR_EIO, "cannot write the json output");
		break;
	case RF_CSV:
		report_print_csv(out, sums, nf);
		break;
	case RF_HTML:
		report_print_html(out, sums, nf);
		break;
	}
out:
	for (size_t i = 0; i < summed; i++)
		report_summary_release(&sums[i]);
	for (size_t i = 0; i < loaded; i++)
		report_run_release(&runs[i]);
	free(union_names);
	free(sums);
	free(runs);
	return st;
}

int report_main(int argc, char **argv)
{
	struct report_opts o;
	struct cr_err e;
	enum report_fmt fmt = RF_MD;
	char **files = NULL, **tasks = NULL;
	const char *out_path = NULL, *list_path = NULL;
	size_t nf = 0, nt = 0;
	FILE *out = stdout;
	int rc = 2, m;
	enum cr_status st;

	report_opts_default(&o);
	cr_err_init(&e);
	files = calloc((size_t)argc + 1, sizeof *files);
	if (!files)
		goto out;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(report_usage, stdout);
			rc = 0;
			goto out;
		}
		if (!strcmp(a, "--strict-backward")) {
			o.strict_backward = 1;
		} else if ((v = opt_value(argc, argv, &i, "--format", "report", &m)) || m) {
			if (!v)
				goto out;
			if (!strcmp(v, "md") || !strcmp(v, "markdown"))
				fmt = RF_MD;
			else if (!strcmp(v, "html"))
				fmt = RF_HTML;
			else if (!strcmp(v, "json"))
				fmt = RF_JSON;
			else if (!strcmp(v, "csv"))
				fmt = RF_CSV;
			else {
				fprintf(stderr, "crucible report: unknown format '%s' (md, html, json, csv)\n", v);
				goto out;
			}
		} else if ((v = opt_value(argc, argv, &i, "--p", "report", &m)) || m) {
			if (!v || parse_p_list(v, &o)) {
				fprintf(stderr, "crucible report: --p wants numbers >= 0, e.g. 0,1,1.5\n");
				goto out;
			}
		} else if ((v = opt_value(argc, argv, &i, "--k", "report", &m)) || m) {
			if (!v || parse_k_list(v, &o)) {
				fprintf(stderr, "crucible report: --k wants integers >= 1, e.g. 1,5,10\n");
				goto out;
			}
		} else if ((v = opt_value(argc, argv, &i, "--out", "report", &m)) || m) {
			if (!v)
				goto out;
			out_path = v;
		} else if ((v = opt_value(argc, argv, &i, "--task-list", "report", &m)) || m) {
			if (!v)
				goto out;
			list_path = v;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "crucible report: unknown option '%s' (see --help)\n", a);
			goto out;
		} else {
			files[nf++] = argv[i];
		}
	}
	if (nf == 0) {
		fprintf(stderr, "crucible report: no results.csv given (see --help)\n");
		goto out;
	}
	if (list_path) {
		if (report_task_list_load(list_path, &tasks, &nt, &e) != CR_OK) {
			fprintf(stderr, "crucible report: %s\n", e.msg);
			rc = cr_status_exit_code(e.status);
			goto out;
		}
		o.task_list = tasks;
		o.n_task_list = nt;
	}
	if (out_path && !(out = fopen(out_path, "w"))) {
		fprintf(stderr, "crucible report: cannot write %s: %s\n", out_path, strerror(errno));
		out = stdout;
		goto out;
	}
	st = run_report(files, nf, &o, fmt, out, &e);
	if (st != CR_OK)
		fprintf(stderr, "crucible report: %s\n", e.msg);
	rc = cr_status_exit_code(st);
	if (fflush(out) && rc == 0) {
		fprintf(stderr, "crucible report: write error\n");
		rc = 2;
	}
out:
	if (out != stdout)
		fclose(out);
	report_task_list_free(tasks, nt);
	free(files);
	return rc;
}

int report_print_summary(const char *csv_path, FILE *out)
{
	struct report_run run;
	struct report_summary s;
	struct report_opts o;
	struct cr_err e;
	char nb[4][32];
	enum cr_status st;

	report_opts_default(&o);
	cr_err_init(&e);
	if ((st = report_run_load(csv_path, &run, &e)) != CR_OK) {
		fprintf(stderr, "crucible: %s\n", e.msg);
		return cr_status_exit_code(st);
	}
	if ((st = report_summary_compute(&run, &o, &s, &e)) != CR_OK) {
		fprintf(stderr, "crucible: %s\n", e.msg);
		report_run_release(&run);
		return cr_status_exit_code(st);
	}
	fprintf(out, "## Summary of %s\n\n%zu candidates, %zu tasks, %d correct.\n\n"
		"| status | candidates |\n|---|---:|\n", csv_path, s.n_rows, s.n_tasks, s.n_correct);
	for (int i = 0; i < RS_COUNT; i++)
		if (s.status_counts[i])
			fprintf(out, "| %s | %d |\n", report_status_names[i], s.status_counts[i]);
	fprintf(out, "\n| | ");
	for (size_t j = 0; j < o.np; j++)
		fprintf(out, "fast_%g | ", o.p[j]);
	fprintf(out, "\n|---|");
	for (size_t j = 0; j < o.np; j++)
		fprintf(out, "---:|");
	fprintf(out, "\n| best-of-n | ");
	for (size_t j = 0; j < o.np; j++)
		fprintf(out, "%s | ", report_fmt_num(nb[0], 32, s.fast_best[j], 4));
	if (s.gm_n == 0)
		fprintf(out, "\n\nNo correct candidate with a speedup.\n");
	else
		fprintf(out, "\n\nGeometric-mean speedup over %d correct candidates: %s "
			"(95%% interval %s – %s).\n", s.gm_n, report_fmt_num(nb[1], 32, s.gm, 3),
		report_fmt_num(nb[2], 32, s.gm_lo, 3), report_fmt_num(nb[3], 32, s.gm_hi, 3));
	report_summary_release(&s);
	report_run_release(&run);
	return 0;
}

int report_gate_main(int argc, char **argv)
{
	struct report_gate_opts o = { 0.05, NAN, 0 };
	struct report_run base, cur;
	struct report_gate g;
	struct cr_err e;
	const char *bpath = NULL, *cpath = NULL, *junit = NULL, *md = NULL;
	int rc = 2, m, have_base = 0, have_cur = 0, have_g = 0;
	FILE *f;

	cr_err_init(&e);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		char *end;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(gate_usage, stdout);
			return 0;
		}
		if (!strcmp(a, "--strict-backward")) {
			o.strict_backward = 1;
		} else if ((v = opt_value(argc, argv, &i, "--baseline", "gate", &m)) || m) {
			if (!(bpath = v))
				return 2;
		} else if ((v = opt_value(argc, argv, &i, "--current", "gate", &m)) || m) {
			if (!(cpath = v))
				return 2;
		} else if ((v = opt_value(argc, argv, &i, "--junit", "gate", &m)) || m) {
			if (!(junit = v))
				return 2;
		} else if ((v = opt_value(argc, argv, &i, "--markdown", "gate", &m)) || m) {
			if (!(md = v))
				return 2;
		} else if ((v = opt_value(argc, argv, &i, "--threshold", "gate", &m)) || m) {
			if (!v)
				return 2;
			o.threshold = strtod(v, &end);
			if (end == v || *end || !(o.threshold >= 0 && o.threshold < 1)) {
				fprintf(stderr, "crucible gate: --threshold wants a number in [0, 1)\n");
				return 2;
			}
		} else if ((v = opt_value(argc, argv, &i, "--min-fast1", "gate", &m)) || m) {
			if (!v)
				return 2;
			o.min_fast1 = strtod(v, &end);
			if (end == v || *end || !(o.min_fast1 >= 0 && o.min_fast1 <= 1)) {
				fprintf(stderr, "crucible gate: --min-fast1 wants a number in [0, 1]\n");
				return 2;
			}
		} else {
			fprintf(stderr, "crucible gate: unknown %s '%s' (see --help)\n",
				a[0] == '-' ? "option" : "argument", a);
			return 2;
		}
	}
	if (!bpath || !cpath) {
		fprintf(stderr, "crucible gate: --baseline and --current are required (see --help)\n");
		return 2;
	}
	if (report_run_load(bpath, &base, &e) != CR_OK)
		goto out;
	have_base = 1;
	if (report_run_load(cpath, &cur, &e) != CR_OK)
		goto out;
	have_cur = 1;
	if (report_gate_compute(&base, &cur, &o, &g, &e) != CR_OK)
		goto out;
	have_g = 1;
	report_gate_print_text(stdout, &g, &o);
	if (junit) {
		if (!(f = fopen(junit, "w"))) {
			cr_errf(&e, CR_EIO, "cannot write %s: %s", junit, strerror(errno));
			goto out;
		}
		report_gate_print_junit(f, &g, &o);
		if (fclose(f)) {
			cr_errf(&e, CR_EIO, "write error on %s", junit);
			goto out;
		}
	}
	if (md) {
		if (!(f = fopen(md, "w"))) {
			cr_errf(&e, CR_EIO, "cannot write %s: %s", md, strerror(errno));
			goto out;
		}
		report_gate_print_md(f, &g, &o);
		if (fclose(f)) {
			cr_errf(&e, CR_EIO, "write error on %s", md);
			goto out;
		}
	}
	rc = g.failed ? 1 : 0;
out:
	if (e.status != CR_OK) {
		fprintf(stderr, "crucible gate: %s\n", e.msg);
		rc = cr_status_exit_code(e.status);
		if (e.status == CR_EFAIL || e.status == CR_EIO)
			rc = 2;
	}
	if (have_g)
		report_gate_release(&g);
	if (have_cur)
		report_run_release(&cur);
	if (have_base)
		report_run_release(&base);
	return rc;
}
