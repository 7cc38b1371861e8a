/* fuzz_csv.c — libFuzzer target: bytes as the files `crucible report` and
 * `crucible gate` read from a run directory. The input is cut at form feeds
 * ('\f') into results.csv, samples.csv, run.json, selected.csv and
 * curve.csv (an empty or missing part: that file is absent), written into a private
 * temporary folder, and read there through the product's own paths, as
 * report_main and report_gate_main do: report_input_resolve (run.json's
 * "command"), report_run_load (reports/report_csv.c), report_run_load_samples
 * (reports/report_samples.c), report_summary_compute, report_machine_read and
 * report_name_runs (run.json), run directories (report_runs_load: run.json,
 * selected.csv, curve.csv through report_table_load), the gate over the run
 * against itself, and every printer into /dev/null; results.csv is also read
 * as a CSV table and as a task list. The temporary folder is removed at
 * exit; nothing a run allocates outlives it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/cr_status.h"
#include "reports/report_impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const files[] = { "results.csv", "samples.csv", "run.json", "selected.csv",
	"curve.csv" };
#define N_FILES (sizeof files / sizeof files[0])
static char dir[64] = "";

static void path_of(char *buf, size_t cap, size_t i)
{
	snprintf(buf, cap, "%s/%s", dir, files[i]);
}

static void cleanup(void)
{
	char p[128];

	if (!dir[0])
		return;
	for (size_t i = 0; i < N_FILES; i++) {
		path_of(p, sizeof p, i);
		unlink(p);
	}
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc, (void)argv;
	snprintf(dir, sizeof dir, "%s/fz-csv-XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("fuzz_csv: mkdtemp");
		abort();
	}
	atexit(cleanup);
	return 0;
}

static int write_parts(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	char path[128];

	for (size_t i = 0; i < N_FILES; i++) {
		const uint8_t *part = p, *ff = p ? memchr(p, '\f', (size_t)(end - p)) : NULL;
		size_t len = p ? (size_t)((ff ? ff : end) - p) : 0;
		int fd;

		path_of(path, sizeof path, i);
		unlink(path);
		p = ff ? ff + 1 : NULL;
		if (!len) /* an empty or missing part: the file is absent */
			continue;
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
			return -1;
		if (write(fd, part, len) != (ssize_t)len) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

static void summary(struct report_run *run, const char *csv, int is_run, FILE *null)
{
	struct report_opts o;
	struct report_summary s;
	struct report_runs R;
	struct cr_err e;
	int have_runs = 0;

	report_opts_default(&o);
	memset(&s, 0, sizeof s);
	cr_err_init(&e);
	if (report_summary_compute(run, &o, &s, &e) != CR_OK)
		return;
	report_machine_read(csv, &s);
	cr_err_init(&e);
	if (report_name_runs(&s, run, 1, &e) == CR_OK) {
		if (is_run) {
			char *d = dir;
			const struct report_run *r = run;

			cr_err_init(&e);
			memset(&R, 0, sizeof R);
			have_runs = report_runs_load(&R, &d, &r, 1, &o, &e) == CR_OK;
		}
		report_print_md_runs(null, &s, 1, have_runs ? &R : NULL);
		report_print_json_runs(null, &s, 1, have_runs ? &R : NULL);
		report_print_csv_runs(null, &s, 1, have_runs ? &R : NULL);
		report_print_html_runs(null, &s, 1, have_runs ? &R : NULL);
		report_print_trust_md(null, &s);
		if (have_runs)
			report_runs_release(&R);
	}
	report_summary_release(&s);
}

static void gate(const struct report_run *run, FILE *null)
{
	struct report_gate_opts o;
	struct report_gate g;
	struct cr_err e;

	report_gate_opts_default(&o);
	memset(&g, 0, sizeof g);
	cr_err_init(&e);
	if (report_gate_compute(run, run, &o, &g, &e) != CR_OK)
		return;
	report_gate_print_text(null, &g, &o);
	report_gate_print_junit(null, &g, &o);
	report_gate_print_md(null, &g, &o);
	report_gate_print_json(null, &g, &o);
	report_gate_release(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char results[128], *csv = NULL;
	struct report_run run;
	struct report_table tab;
	struct cr_err e;
	char **names = NULL;
	size_t n_names = 0;
	int is_run = 0;
	FILE *null;

	if (write_parts(data, size) || !(null = fopen("/dev/null", "w")))
		return 0;
	path_of(results, sizeof results, 0);
	cr_err_init(&e);
	if (report_input_resolve(dir, &csv, &is_run, &e) != CR_OK)
		is_run = 0;
	free(csv);
	memset(&run, 0, sizeof run);
	cr_err_init(&e);
	if (report_run_load(results, &run, &e) == CR_OK) {
		cr_err_init(&e);
		if (report_run_load_samples(&run, &e) == CR_OK) {
			summary(&run, results, is_run, null);
			gate(&run, null);
		}
		report_run_release(&run);
	}
	memset(&tab, 0, sizeof tab);
	cr_err_init(&e);
	if (report_table_load(results, &tab, &e) == CR_OK)
		report_table_release(&tab);
	cr_err_init(&e);
	if (report_task_list_load(results, &names, &n_names, &e) == CR_OK)
		report_task_list_free(names, n_names);
	fclose(null);
	return 0;
}
