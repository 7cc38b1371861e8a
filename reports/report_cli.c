/* report_cli.c — `crucible report` and `crucible gate`: command lines, help,
 * loading the files and handing the summaries to a printer; plus
 * report_print_summary() for `crucible eval`. Exit codes are SPEC §1's. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cr_cli.h"
#include "reports/report.h"
#include "reports/report_impl.h"
#include "tasks/task_registry.h"

static const char report_usage[] =
	"usage: crucible report (RESULTS.csv | DIR)... [options]\n"
	"\n"
	"Fast_p, pass@k / fast_p@k, geometric-mean speedup, status counts, a per-task\n"
	"table and reasoning-length tables of one or more results.csv files (a\n"
	"directory stands for its results.csv). Several files give an ablation table\n"
	"with a column per file (run). Every format begins with each run's provenance\n"
	"from the run.json beside its results.csv (crucible version and revision,\n"
	"device, seed and its source, dates, noisy rows; \"unknown\" without run.json).\n"
	"\n"
	"A run directory of `crucible run` (run.json says \"command\": \"run\"; it also\n"
	"holds selected.csv and curve.csv) adds scaling curves (correct and fast_1 of\n"
	"the selected candidate vs completion tokens per task and vs step), the\n"
	"reward-hacking rate per strategy and per model, and self-consistency's\n"
	"majority pick against a best-of-n run's verifier pick (docs/REPORTS.md).\n"
	"\n"
	"OPTIONS\n"
	"  --format md|html|json|csv  output format (default md)\n"
	"  --p LIST          Fast_p thresholds, comma separated (default 0,0.5,0.8,1,1.5,2)\n"
	"  --k LIST          pass@k values of k (default 1,5,10)\n"
	"  -o, --out FILE    write to FILE instead of stdout (missing folders are made)\n"
	"  --task-list FILE  the task set, one name per line: tasks with no candidate\n"
	"                    count as failed (default: the tasks found in the files);\n"
	"                    a line names one task as the rows do or in any form of\n"
	"                    the registry (L1/23, L1/softmax); a name that is not a\n"
	"                    task is an error naming FILE:LINE\n"
	"  --strict-backward count backward=absent as incorrect\n"
	"  -h, --help        this text\n"
	"\n"
	"A candidate is correct when status is ok and backward is not fail. A timing\n"
	"figure flagged noisy (results.csv column noisy) is not trusted: the row counts\n"
	"for fast_0 but not for fast_p at p > 0 (a lower bound then), nor in the\n"
	"speedup medians; the geometric mean keeps it (a mean over many rows moves\n"
	"little with one row's noise). A run that was not timed (eval --no-timing) or\n"
	"only compiled (--compile-only) shows its speedups (and, compile-only, its\n"
	"correctness) as \"not measured\" (n/a, json null), never as 0. Intervals are\n"
	"within-run: they say nothing about run-to-run variation.\n";

static const char gate_usage[] =
	"usage: crucible gate --baseline A.csv --current B.csv [options]\n"
	"\n"
	"CI regression gate. Per task it compares the same source (source_sha256) when\n"
	"both runs have it correct, else each run's best candidate by a robust rank\n"
	"(trusted timing first, then the median per-sample speedup or the interval's low\n"
	"end), and says SAME, FASTER, SLOWER or INCONCLUSIVE, or for correctness LOST,\n"
	"MISSING, FIXED, NEW or FAILING. It fails only on LOST, MISSING, SLOWER, or a\n"
	"fast_1 floor surely missed.\n"
	"\n"
	"With samples.csv beside both files the per-sample speedups are compared\n"
	"(Mann-Whitney or Yuen's 20%-trimmed means, each at alpha/2, and the ratio of\n"
	"medians beyond the threshold); else the speedup intervals, where a noisy row\n"
	"needs its whole ratio interval beyond the threshold. Undecided noisy tasks are\n"
	"INCONCLUSIVE, never a failure.\n"
	"\n"
	"OPTIONS (--opt VALUE or --opt=VALUE)\n"
	"  --baseline FILE   results.csv of the baseline (required)\n"
	"  --current FILE    results.csv of the current run (required)\n"
	"  --threshold X     relative change that matters, in [0, 1) (default 0.15: what\n"
	"                    separate runs reproduce on a shared machine; see docs)\n"
	"  --alpha P         significance of the sample test, in (0, 0.5] (default 0.01)\n"
	"  --confirm N       re-run each suspect (SLOWER, or INCONCLUSIVE with a slowdown\n"
	"                    beyond the threshold not ruled out) with `crucible eval`,\n"
	"                    the baseline's candidate then the current one each round;\n"
	"                    with samples, stop as soon as a stratified Mann-Whitney at\n"
	"                    alpha/N decides (slower, faster, or a slowdown ruled out),\n"
	"                    at most N rounds; without, N rounds pooled (default 0)\n"
	"  --eval-arg ARG    an argument for those `crucible eval` runs (repeat it:\n"
	"                    --eval-arg=--time-cap --eval-arg=0.3)\n"
	"  --crucible PATH   the crucible binary for the re-runs (default: this one)\n"
	"  --tasks SPEC      only these tasks, comma separated: sets, names, ids,\n"
	"                    ranges or globs (smoke, L1/23, L1/1-10, 'L2/*Conv*')\n"
	"  --min-fast1 F     fail when the current best-of-n fast_1 is surely below F\n"
	"                    (tasks surely fast + undecided < F); between: INCONCLUSIVE\n"
	"  --strict-backward count backward=absent as incorrect\n"
	"  --junit FILE      write JUnit XML (one testcase per task)\n"
	"  --markdown FILE   write a pull-request comment in markdown\n"
	"  --json FILE       write the verdicts as json (\"-\": stdout, no text)\n"
	"                    (the folders of these three files are made when missing)\n"
	"  -h, --help        this text\n"
	"\n"
	"See docs/REPORTS.md for the decision rule and its measured noise figures.\n";

static void report_help(FILE *f)
{
	fputs(report_usage, f);
	cr_cli_help_tail(f,
			 "  0  the report was written\n"
			 "  2  bad usage or bad input: an unreadable or malformed results.csv,\n"
			 "     run.json or samples.csv, a --task-list line naming no task (the\n"
			 "     message names the file and line)\n"
			 "  3  the environment: the output could not be written\n",
			 CR_ENV_DATADIR);
}

static void gate_help(FILE *f)
{
	fputs(gate_usage, f);
	cr_cli_help_tail(f,
			 "  0  passed (also PASS (inconclusive): nothing surely regressed)\n"
			 "  1  a task LOST, MISSING or SLOWER, or the --min-fast1 floor missed\n"
			 "  2  bad usage or bad input (the message names the file and line)\n"
			 "  3  the environment: an output file could not be written\n",
			 /* --confirm re-runs `crucible eval`, which reads these */
			 CR_ENV_DATADIR | CR_ENV_SEED | CR_ENV_CACHE | CR_ENV_CUDA | CR_ENV_TMPDIR);
}

/* The message said once, and SPEC §1's exit code of the status (a file that
 * cannot be read is bad input: 2; the environment, e.g. a write, 3). */
static int say(const char *cmd, const struct cr_err *e)
{
	if (e->msg[0])
		cr_cli_error(cmd, "%s", e->msg);
	return cr_status_exit_code(e->status);
}


/* Whether writing path would overwrite one of the inputs: a results.csv
 * given (or found in a folder given), the samples.csv and run.json read
 * beside it, or another input file. Compared by device and inode, so
 * "e1/./results.csv" and a link count too. CR_EUSAGE naming both. */
static bool same_file(const struct stat *a, const char *path)
{
	struct stat b;

	return !stat(path, &b) && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

static enum cr_status refuse_clobber(const char *path, char *const *inputs, int n,
				     const char *other, struct cr_err *e)
{
	static const char *const beside[] = { "results.csv", "samples.csv", "run.json" };
	struct stat o, s;
	char p[PATH_MAX];

	if (!path || !strcmp(path, "-") || stat(path, &o))
		return CR_OK; /* stdout, or a file not there yet */
	for (int i = 0; i <= n; i++) {
		const char *in = i < n ? inputs[i] : other;
		const char *slash;
		int dl;

		if (!in)
			continue;
		if (same_file(&o, in))
			return cr_errf(e, CR_EUSAGE, "%s is an input (%s): choose another output file",
				       path, in);
		if (!stat(in, &s) && S_ISDIR(s.st_mode)) {
			dl = (int)strlen(in);
		} else {
			slash = strrchr(in, '/');
			dl = slash ? (int)(slash - in) : -1;
		}
		for (size_t k = 0; k < sizeof beside / sizeof beside[0]; k++) {
			if (dl < 0)
				snprintf(p, sizeof p, "%s", beside[k]);
			else
				snprintf(p, sizeof p, "%.*s/%s", dl, in, beside[k]);
			if (same_file(&o, p))
				return cr_errf(e, CR_EUSAGE, "%s is an input (%s, read with %s): choose "
					       "another output file", path, p, in);
		}
	}
	return CR_OK;
}

/* mkdir -p of the folder holding FILE (nothing for "-" or a bare name). */
static enum cr_status make_parent(const char *file, struct cr_err *e)
{
	const char *slash = strrchr(file, '/');
	char *dir;
	enum cr_status st;

	if (!strcmp(file, "-") || !slash || slash == file)
		return CR_OK;
	if (!(dir = strndup(file, (size_t)(slash - file))))
		return cr_errf(e, CR_ENOMEM, "out of memory");
	st = cr_mkdir_p(dir, e);
	free(dir);
	if (st == CR_EIO)
		st = e->status = CR_EENV; /* a folder that cannot be made: the environment */
	return st;
}

/* A number option: the whole string must be a finite number in [lo, hi]
 * (hi_open: [lo, hi)). On error prints "crucible CMD: --OPT: ..." and
 * returns -1 (the caller exits 2). */
static int opt_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
		      int hi_open, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (end == v || *end || errno == ERANGE || !isfinite(x) || x < lo ||
	    (hi_open ? x >= hi : x > hi)) {
		fprintf(stderr, "crucible %s: --%s: expected a number in [%g, %g%s, got '%s'\n",
			cmd, opt, lo, hi, hi_open ? ")" : "]", v);
		return -1;
	}
	*out = x;
	return 0;
}

static int opt_long(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (end == v || *end || errno == ERANGE || x < lo || x > hi) {
		fprintf(stderr, "crucible %s: --%s: expected an integer in [%ld, %ld], got '%s'\n",
			cmd, opt, lo, hi, v);
		return -1;
	}
	*out = x;
	return 0;
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

/* The run directories among the inputs (is_run[i]) into R; *have 1 when
 * there is one. dirs are the results.csv paths without "/results.csv". */
static enum cr_status load_run_dirs(char **files, const int *is_run, const struct report_run *runs,
				    size_t nf, const struct report_opts *o, struct report_runs *R,
				    int *have, struct cr_err *e)
{
	char **dirs = calloc(nf ? nf : 1, sizeof *dirs);
	const struct report_run **res = calloc(nf ? nf : 1, sizeof *res);
	size_t nd = 0;
	enum cr_status st = CR_OK;

	*have = 0;
	if (!dirs || !res) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		const char *slash = strrchr(files[i], '/');
		if (!is_run[i])
			continue;
		dirs[nd] = slash ? strndup(files[i], slash == files[i] ? 1 : (size_t)(slash - files[i])) :
			   strdup(".");
		if (!dirs[nd]) {
			st = cr_errf(e, CR_ENOMEM, "out of memory");
			goto out;
		}
		res[nd++] = &runs[i];
	}
	if (nd && (st = report_runs_load(R, dirs, res, nd, o, e)) == CR_OK)
		*have = 1;
out:
	for (size_t i = 0; dirs && i < nd; i++)
		free(dirs[i]);
	free(dirs);
	free(res);
	return st;
}

/* --task-list: every name must be a task of the rows of a file given (a
 * private or renamed set) or of the registry, by any single-task form of
 * every command (L1/23, L1/softmax: replaced by the canonical name, as the
 * rows name it); anything else is a typo, CR_EINPUT naming FILE:LINE, with
 * the nearest task of the files when one is near, else the registry's
 * did-you-mean. */
static enum cr_status check_task_list(const struct report_opts *o, const struct report_run *runs,
				      size_t nf, struct cr_err *e)
{
	const char **names = NULL;
	size_t nn = 0, total = 0;
	enum cr_status st = CR_OK;

	if (!o->task_list || !o->task_list_lines)
		return CR_OK;
	for (size_t i = 0; i < nf; i++)
		total += runs[i].n_rows;
	if (!(names = malloc((total ? total : 1) * sizeof *names)))
		return cr_errf(e, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < nf; i++)
		for (size_t r = 0; r < runs[i].n_rows; r++)
			names[nn++] = runs[i].rows[r].task;
	for (size_t t = 0; t < o->n_task_list && st == CR_OK; t++) {
		const char *name = o->task_list[t], *near;
		char canon[256], *dup;
		struct cr_err re;
		int found = 0;

		for (size_t j = 0; j < nn && !found; j++)
			found = !strcmp(names[j], name);
		if (found || task_registry_exists(name))
			continue;
		cr_err_init(&re);
		if (task_registry_resolve(name, canon, sizeof canon, &re) == CR_OK) {
			if (!(dup = strdup(canon))) {
				st = cr_errf(e, CR_ENOMEM, "out of memory");
				break;
			}
			free(o->task_list[t]);
			o->task_list[t] = dup;
			continue;
		}
		near = cr_cli_suggest(name, names, nn > INT_MAX ? INT_MAX : (int)nn);
		if (near)
			st = cr_errf(e, CR_EINPUT, "%s:%ld: unknown task '%s' (did you mean '%s'?): "
				     "not in the task registry (%s/tasks) nor in the files given",
				     o->task_list_path, o->task_list_lines[t], name, near, task_datadir());
		else if (re.status == CR_EINPUT && re.msg[0])
			st = cr_errf(e, CR_EINPUT, "%s:%ld: %s (and no file given has it)",
				     o->task_list_path, o->task_list_lines[t], re.msg);
		else
			st = cr_errf(e, CR_EINPUT, "%s:%ld: unknown task '%s': not in the task registry "
				     "(%s/tasks) nor in the files given", o->task_list_path,
				     o->task_list_lines[t], name, task_datadir());
	}
	free(names);
	return st;
}

/* Loads and summarises every input (a results.csv or a directory holding
 * one); prints in the format asked, with the run-directory sections when
 * some inputs are run directories. */
static enum cr_status run_report(char **args, size_t nf, const struct report_opts *o,
				 enum report_fmt fmt, FILE *out, struct cr_err *e)
{
	struct report_run *runs = calloc(nf, sizeof *runs);
	struct report_summary *sums = calloc(nf, sizeof *sums);
	char **files = calloc(nf, sizeof *files);
	int *is_run = calloc(nf, sizeof *is_run);
	struct report_opts local = *o;
	struct report_runs R;
	char **union_names = NULL, tool[160];
	size_t n_union = 0;
	size_t loaded = 0, summed = 0;
	int have_runs = 0;
	enum cr_status st = CR_OK;

	if (!runs || !sums || !files || !is_run) {
		st = cr_errf(e, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nf; i++)
		if ((st = report_input_resolve(args[i], &files[i], &is_run[i], e)) != CR_OK)
			goto out;
	/* one results.csv named several ways (e1, e1/results.csv, ./e1) is one
	 * run, as eval counts a file once: by device and inode */
	for (size_t i = 1; i < nf; i++) {
		struct stat a, b;

		if (stat(files[i], &a))
			continue;
		for (size_t j = 0; j < i; j++)
			if (!stat(files[j], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
				cr_cli_error("report", "'%s' is the same results.csv as '%s': counted once", args[i], args[j]);
				free(files[i]);
				memmove(files + i, files + i + 1, (nf - i - 1) * sizeof *files);
				memmove(is_run + i, is_run + i + 1, (nf - i - 1) * sizeof *is_run);
				memmove(args + i, args + i + 1, (nf - i - 1) * sizeof *args);
				nf--;
				i--;
				break;
			}
	}
	for (; loaded < nf; loaded++)
		if ((st = report_run_load(files[loaded], &runs[loaded], e)) != CR_OK)
			goto out;
	if ((st = check_task_list(o, runs, nf, e)) != CR_OK)
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
	/* runs are named by label or by the options that differ (issue 11 item 8) */
	if ((st = report_name_runs(sums, runs, nf, e)) != CR_OK)
		goto out;
	if ((st = load_run_dirs(files, is_run, runs, nf, o, &R, &have_runs, e)) != CR_OK)
		goto out;
	switch (fmt) {
	case RF_MD:
		report_tool_version(tool, sizeof tool);
		fprintf(out, "# crucible report\n\nMade by %s.\n\n", tool);
		report_print_md_runs(out, sums, nf, have_runs ? &R : NULL);
		break;
	case RF_JSON:
		if (report_print_json_runs(out, sums, nf, have_runs ? &R : NULL))
			st = cr_errf(e, CR_EENV, "cannot write the json output");
		break;
	case RF_CSV:
		report_print_csv_runs(out, sums, nf, have_runs ? &R : NULL);
		break;
	case RF_HTML:
		report_print_html_runs(out, sums, nf, have_runs ? &R : NULL);
		break;
	}
out:
	if (have_runs)
		report_runs_release(&R);
	for (size_t i = 0; i < summed; i++)
		report_summary_release(&sums[i]);
	for (size_t i = 0; i < loaded; i++)
		report_run_release(&runs[i]);
	for (size_t i = 0; files && i < nf; i++)
		free(files[i]);
	free(files);
	free(is_run);
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
	long *lines = NULL;
	const char *out_path = NULL, *list_path = NULL;
	size_t nf = 0, nt = 0;
	FILE *out = stdout;
	int rc = CR_EXIT_USAGE, c;
	enum cr_status st;
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "strict-backward", no_argument, NULL, 'B' },
		{ "format", required_argument, NULL, 'f' },
		{ "p", required_argument, NULL, 'p' },
		{ "k", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "task-list", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};

	report_opts_default(&o);
	cr_err_init(&e);
	files = calloc((size_t)argc + 1, sizeof *files);
	if (!files)
		return CR_EXIT_ENV;
	optind = 0; /* glibc: full reset, the tests call this more than once */
	while ((c = cr_cli_getopt("report", argc, argv, "ho:", lo)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			report_help(stdout);
			rc = CR_EXIT_OK;
			goto out;
		case 'B':
			o.strict_backward = 1;
			break;
		case 'f':
			if (!strcmp(v, "md") || !strcmp(v, "markdown"))
				fmt = RF_MD;
			else if (!strcmp(v, "html"))
				fmt = RF_HTML;
			else if (!strcmp(v, "json"))
				fmt = RF_JSON;
			else if (!strcmp(v, "csv"))
				fmt = RF_CSV;
			else {
				rc = cr_cli_usage("report", "--format: expected md, html, json or csv, "
						  "got '%s'", v);
				goto out;
			}
			break;
		case 'p':
			if (parse_p_list(v, &o)) {
				rc = cr_cli_usage("report", "--p: expected up to 32 numbers >= 0, comma "
						  "separated (e.g. 0,1,1.5), got '%s'", v);
				goto out;
			}
			break;
		case 'k':
			if (parse_k_list(v, &o)) {
				rc = cr_cli_usage("report", "--k: expected up to 32 integers in [1, 1000000], "
						  "comma separated (e.g. 1,5,10), got '%s'", v);
				goto out;
			}
			break;
		case 'o':
			out_path = v;
			break;
		case 't':
			list_path = v;
			break;
		default: /* '?': cr_cli_getopt said what and how */
			goto out;
		}
	}
	for (int i = optind; i < argc; i++)
		files[nf++] = argv[i];
	if (nf == 0) {
		rc = cr_cli_usage("report", "no results.csv or directory given");
		goto out;
	}
	if (list_path) {
		if (report_task_list_load_lines(list_path, &tasks, &lines, &nt, &e) != CR_OK) {
			rc = say("report", &e);
			goto out;
		}
		o.task_list = tasks;
		o.n_task_list = nt;
		o.task_list_path = list_path;
		o.task_list_lines = lines;
	}
	if (out_path) {
		if (refuse_clobber(out_path, files, nf, list_path, &e) != CR_OK) {
			rc = say("report", &e);
			goto out;
		}
		if (make_parent(out_path, &e) != CR_OK) {
			rc = say("report", &e);
			goto out;
		}
		if (!(out = fopen(out_path, "w"))) {
			cr_cli_error("report", "cannot write %s: %s", out_path, strerror(errno));
			out = stdout;
			rc = CR_EXIT_ENV;
			goto out;
		}
	}
	st = run_report(files, nf, &o, fmt, out, &e);
	rc = st == CR_OK ? CR_EXIT_OK : say("report", &e);
	if (out != stdout) {
		int bad = fflush(out) != 0 || ferror(out);
		if (fclose(out) && !bad)
			bad = 1;
		out = stdout;
		if (bad && rc == CR_EXIT_OK) {
			cr_cli_error("report", "cannot write %s", out_path);
			rc = CR_EXIT_ENV;
		}
	}
out:
	if (out != stdout)
		fclose(out);
	report_task_list_free(tasks, nt);
	free(lines);
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
	report_machine_read(csv_path, &s);
	fprintf(out, "## Summary of %s\n\n%zu candidates, %zu tasks, %d correct.\n\n",
		csv_path, s.n_rows, s.n_tasks, s.n_correct);
	report_print_trust_md(out, &s);
	fprintf(out, "| status | candidates |\n|---|---:|\n");
	for (int i = 0; i < RS_COUNT; i++)
		if (s.status_counts[i])
			fprintf(out, "| %s | %d |\n", report_status_name(i), s.status_counts[i]);
	fprintf(out, "\n| | ");
	for (size_t j = 0; j < o.np; j++)
		fprintf(out, "fast_%g | ", o.p[j]);
	fprintf(out, "\n|---|");
	for (size_t j = 0; j < o.np; j++)
		fprintf(out, "---:|");
	fprintf(out, "\n| best-of-n | ");
	for (size_t j = 0; j < o.np; j++)
		fprintf(out, "%s | ", report_fmt_num(nb[0], 32, s.fast_best[j], 4));
	if (s.n_noisy)
		fprintf(out, "\n\nFast_p for p > 0 is a lower bound: %d correct candidate(s) "
			"with noisy figures count for fast_0 but never as faster than p > 0.",
			s.n_correct_noisy);
	if (!s.timing_measured)
		fprintf(out, "\n\nSpeedups not measured (%s): Fast_p is n/a, not 0.\n",
			!s.correct_measured ? "compile-only" : "the run was not timed");
	else if (s.gm_n == 0)
		fprintf(out, "\n\nNo correct candidate was timed.\n");
	else
		fprintf(out, "\n\nGeometric-mean speedup over %d correct timed candidates (%d with a noisy "
			"figure, kept in): %s (95%% interval over the candidates %s – %s).\n", s.gm_n,
			s.n_correct_noisy, report_fmt_num(nb[1], 32, s.gm, 3), report_fmt_num(nb[2], 32, s.gm_lo, 3),
			report_fmt_num(nb[3], 32, s.gm_hi, 3));
	report_summary_release(&s);
	report_run_release(&run);
	return 0;
}

/* Opens FILE for writing ("-": stdout). */
static FILE *open_out(const char *path, struct cr_err *e)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;

	if (!f)
		cr_errf(e, CR_EENV, "cannot write %s: %s", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *path, struct cr_err *e)
{
	if (f == stdout ? fflush(f) : fclose(f)) {
		cr_errf(e, CR_EENV, "write error on %s", path);
		return -1;
	}
	return 0;
}

int report_gate_main(int argc, char **argv)
{
	struct report_gate_opts o;
	struct report_run base, cur;
	struct report_gate g;
	struct cr_err e;
	const char *bpath = NULL, *cpath = NULL, *junit = NULL, *md = NULL, *json = NULL;
	char **eval_args = NULL;
	int rc = 2, c, have_base = 0, have_cur = 0, have_g = 0;
	long n;
	FILE *f;
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "strict-backward", no_argument, NULL, 'B' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "current", required_argument, NULL, 'c' },
		{ "junit", required_argument, NULL, 'j' },
		{ "markdown", required_argument, NULL, 'm' },
		{ "json", required_argument, NULL, 'J' },
		{ "threshold", required_argument, NULL, 't' },
		{ "min-fast1", required_argument, NULL, 'f' },
		{ "alpha", required_argument, NULL, 'a' },
		{ "confirm", required_argument, NULL, 'n' },
		{ "crucible", required_argument, NULL, 'x' },
		{ "eval-arg", required_argument, NULL, 'e' },
		{ "tasks", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};

	cr_err_init(&e);
	report_gate_opts_default(&o);
	if (!(eval_args = calloc((size_t)argc + 1, sizeof *eval_args)))
		return CR_EXIT_ENV;
	optind = 0;
	while ((c = cr_cli_getopt("gate", argc, argv, "h", lo)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			gate_help(stdout);
			rc = CR_EXIT_OK;
			goto out;
		case 'B': o.strict_backward = 1; break;
		case 'b': bpath = v; break;
		case 'c': cpath = v; break;
		case 'j': junit = v; break;
		case 'm': md = v; break;
		case 'J': json = v; break;
		case 'x': o.crucible = v; break;
		case 'T':
			if (!*v || strstr(v, ",,") || *v == ',' || v[strlen(v) - 1] == ',') {
				cr_cli_usage("gate", "--tasks: expected task names or sets, comma "
					     "separated, got '%s'", v);
				goto out;
			}
			/* the KernelBench forms of every command (L1/23, L1/1-10,
			 * a glob, L1/softmax), matched against the rows' names */
			if (task_spec_check(v, &e) != CR_OK) {
				cr_cli_usage("gate", "--tasks: %s", e.msg);
				cr_err_init(&e);
				goto out;
			}
			o.tasks = v;
			break;
		case 'e': eval_args[o.n_eval_args++] = optarg; break;
		case 't':
			if (opt_double("gate", "threshold", v, 0, 1, 1, &o.threshold))
				goto out;
			break;
		case 'f':
			if (opt_double("gate", "min-fast1", v, 0, 1, 0, &o.min_fast1))
				goto out;
			break;
		case 'a':
			if (opt_double("gate", "alpha", v, 1e-9, 0.5, 0, &o.alpha))
				goto out;
			break;
		case 'n':
			if (opt_long("gate", "confirm", v, 0, 100, &n))
				goto out;
			o.confirm = (int)n;
			break;
		default: /* '?': cr_cli_getopt said what and how */
			goto out;
		}
	}
	o.eval_args = eval_args;
	if (optind < argc) {
		cr_cli_usage("gate", "unexpected argument '%s' (the files are given with --baseline "
			     "and --current)", argv[optind]);
		goto out;
	}
	if (!bpath || !cpath) {
		cr_cli_usage("gate", "--baseline and --current are required");
		goto out;
	}
	if (o.n_eval_args && !o.confirm) {
		cr_cli_usage("gate", "--eval-arg is only used with --confirm N");
		goto out;
	}
	{
		char *ins[2] = { (char *)bpath, (char *)cpath };

		if (refuse_clobber(junit, ins, 2, NULL, &e) || refuse_clobber(md, ins, 2, NULL, &e) ||
		    refuse_clobber(json, ins, 2, NULL, &e))
			goto out;
	}
	if ((junit && make_parent(junit, &e) != CR_OK) || (md && make_parent(md, &e) != CR_OK) ||
	    (json && make_parent(json, &e) != CR_OK))
		goto out;
	if (report_run_load(bpath, &base, &e) != CR_OK)
		goto out;
	have_base = 1;
	if (report_run_load_samples(&base, &e) != CR_OK)
		goto out;
	if (report_run_load(cpath, &cur, &e) != CR_OK)
		goto out;
	have_cur = 1;
	if (report_run_load_samples(&cur, &e) != CR_OK)
		goto out;
	if (base.has_samples != cur.has_samples)
		cr_cli_error("gate", "only the %s has a samples.csv; comparing the speedup intervals",
			     base.has_samples ? "baseline" : "current run");
	if (report_gate_compute(&base, &cur, &o, &g, &e) != CR_OK)
		goto out;
	have_g = 1;
	if (report_gate_confirm(&g, &o, stderr, &e) != CR_OK)
		goto out;
	if (!json || strcmp(json, "-"))
		report_gate_print_text(stdout, &g, &o);
	if (junit) {
		if (!(f = open_out(junit, &e)))
			goto out;
		report_gate_print_junit(f, &g, &o);
		if (close_out(f, junit, &e))
			goto out;
	}
	if (md) {
		if (!(f = open_out(md, &e)))
			goto out;
		report_gate_print_md(f, &g, &o);
		if (close_out(f, md, &e))
			goto out;
	}
	if (json) {
		if (!(f = open_out(json, &e)))
			goto out;
		if (report_gate_print_json(f, &g, &o)) {
			if (f != stdout)
				fclose(f);
			cr_errf(&e, CR_EENV, "write error on %s", json);
			goto out;
		}
		if (close_out(f, json, &e))
			goto out;
	}
	rc = g.failed ? 1 : 0;
out:
	if (e.status != CR_OK) {
		cr_cli_error("gate", "%s", e.msg);
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
	free(eval_args);
	return rc;
}
