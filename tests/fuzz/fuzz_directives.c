/* fuzz_directives.c — libFuzzer target: bytes as a candidate source file.
 * The file goes through cr_cand_load as the verifier reads it (a regular
 * file in a private temporary folder, the product's size limit, SHA-256,
 * the `// @task` / `@forward` / `@backward` / `@scratch` parser of
 * cand/cand.c); a candidate that parses is bound to the task it names
 * (cr_plan_bind, cand/plan.c; smoke/relu when the registry has no such
 * task) and every expression of the plan evaluated at the task's dim sets
 * (cr_plan_eval). Each line of the input is also compiled and evaluated as
 * an expression on its own (cand/expr.c) over a few dims at edge values.
 *
 * The registry's smoke, L1 and L2 tasks are loaded once, read-only, in
 * LLVMFuzzerInitialize; the temporary folder is removed at exit. Nothing a
 * run allocates outlives it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "cand/cand.h"
#include "cand/expr.h"
#include "cand/plan.h"
#include "common/cr_status.h"
#include "tasks/task_registry.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct task *tasks;  /* read-only after init */
static int n_tasks;
static char dir[64] = "", file[96];

static void cleanup(void)
{
	task_list_free(tasks, n_tasks);
	if (dir[0]) {
		unlink(file);
		rmdir(dir);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct cr_err err;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc, (void)argv;
	snprintf(dir, sizeof dir, "%s/fz-cand-XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("fuzz_directives: mkdtemp");
		abort();
	}
	snprintf(file, sizeof file, "%s/cand.c", dir);
	cr_err_init(&err);
	if (task_registry_load("smoke,L1,L2", &tasks, &n_tasks, &err) != CR_OK) {
		fprintf(stderr, "fuzz_directives: %s\n", err.msg);
		abort();
	}
	atexit(cleanup);
	return 0;
}

static const struct task *find_task(const char *name)
{
	const struct task *relu = NULL;

	for (int i = 0; i < n_tasks; i++) {
		if (!strcmp(tasks[i].name, name))
			return &tasks[i];
		if (!strcmp(tasks[i].name, "smoke/relu"))
			relu = &tasks[i];
	}
	return relu ? relu : n_tasks ? &tasks[0] : NULL;
}

static void bind_plan(struct cr_cand *c, const char *path)
{
	const struct task *t = find_task(c->task);
	struct cr_plan *p = calloc(1, sizeof *p);
	struct cr_err err;

	if (!t || !p) {
		free(p);
		return;
	}
	cr_err_init(&err);
	if (cr_plan_bind(p, t, c, path, &err) == CR_OK && p->n_exprs >= 0) {
		int64_t *vals = calloc((size_t)p->n_exprs + 1, sizeof *vals);

		for (int k = -2; vals && k < t->n_checks; k++) {
			const struct task_dimset *d = k == -2 ? &t->bench : k == -1 ? &t->cpu : &t->checks[k];

			cr_err_init(&err);
			if (cr_plan_eval(p, d, vals, &err) != CR_OK)
				continue;
			for (int s = 0; s < 2; s++)
				for (int i = 0; i < p->st[s].n_slots; i++)
					cr_plan_slot_numel(p, (enum cr_stage)s, i, d, vals);
		}
		free(vals);
	}
	cr_plan_release(p);
	free(p);
}

static const char *const names[] = { "N", "M", "K", "B", "C", "H", "W", "D", "L", "E" };
#define N_NAMES (int)(sizeof names / sizeof names[0])

static int lookup(void *ctx, const char *name, size_t len)
{
	(void)ctx;
	for (int i = 0; i < N_NAMES; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], name, len))
			return i;
	return -1;
}

static void exprs(const uint8_t *data, size_t size)
{
	static const int64_t vals[3][N_NAMES] = {
		{ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 },
		{ 0, -1, 1, INT64_MAX, INT64_MIN, 65536, 3, 1 << 30, -7, 2 },
		{ 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096 },
	};
	const uint8_t *p = data, *end = data + size;

	for (int lines = 0; p < end && lines < 64; lines++) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		struct cr_expr e;
		struct cr_err err;
		int64_t out;

		if (len <= 2 * CR_CAND_EXPR) {
			cr_err_init(&err);
			cr_expr_check((const char *)p, len, &err);
			cr_err_init(&err);
			if (cr_expr_compile(&e, (const char *)p, len, lookup, NULL, &err) == CR_OK) {
				cr_expr_is_const(&e);
				for (int k = 0; k < 3; k++) {
					cr_err_init(&err);
					cr_expr_eval(&e, vals[k], &out, &err);
				}
				cr_expr_release(&e);
			}
		}
		p = nl ? nl + 1 : end;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cr_cand_file f;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	close(fd);
	memset(&f, 0, sizeof f);
	cr_cand_load(&f, file);
	if (f.parsed)
		bind_plan(&f.cand, file);
	cr_cand_file_release(&f);
	exprs(data, size);
	return 0;
}
