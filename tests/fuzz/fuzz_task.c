/* fuzz_task.c — libFuzzer target: bytes as one task file (SPEC §2).
 * The bytes up to the first NUL are the JSON file, handed to task_load by
 * path exactly as the registry does (a memfd seen as /proc/self/fd/N: JSON
 * cannot hold a raw NUL, so nothing is lost). The bytes after it are dim
 * sets, 8 little-endian bytes a dim, checked by task_check_dims as
 * `crucible dump --dims` and the drawn shapes are (the `--dims` text parser
 * itself is a static helper of harness/cmd_tasks.c, outside any library).
 * A task that loads also has its own dim sets re-checked, rendered, and its
 * flops/bytes expressions evaluated (cr_task_metric). Nothing outlives a run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cand/plan.h"
#include "common/cr_status.h"
#include "tasks/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_set(const struct task *t, const struct task_dimset *d, const char *which)
{
	struct cr_err err;
	char buf[512];
	double v;

	for (int ref = 0; ref < 2; ref++) {
		cr_err_init(&err);
		if (task_check_dims(t, d, which, ref, &err) != CR_OK)
			return;
	}
	task_dims_str(t, d, buf, sizeof buf);
	for (int i = 0; i < t->n_tensors; i++)
		task_tensor_numel(t, i, d);
	cr_task_metric(t, t->flops, d, &v);
	cr_task_metric(t, t->bytes, d, &v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t jlen = nul ? (size_t)(nul - data) : size;
	struct task t;
	struct cr_err err;
	char path[64];
	int fd = memfd_create("fuzz-task", MFD_CLOEXEC);
	enum cr_status st;

	if (fd < 0)
		return 0;
	if (jlen && write(fd, data, jlen) != (ssize_t)jlen) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	cr_err_init(&err);
	st = task_load(&t, path, "fuzz/task", &err);
	close(fd);
	if (st != CR_OK)
		return 0;
	check_set(&t, &t.bench, "dims");
	check_set(&t, &t.cpu, "cpu_dims");
	for (int i = 0; i < t.n_checks; i++)
		check_set(&t, &t.checks[i], "check_dims");
	if (nul) { /* dim sets from the bytes after the NUL */
		const uint8_t *p = nul + 1, *end = data + size;

		for (int k = 0; k < 4 && p < end; k++) {
			struct task_dimset d = t.bench;

			for (int i = 0; i < t.n_dims && p < end; i++) {
				uint64_t v = 0;
				size_t n = (size_t)(end - p) < 8 ? (size_t)(end - p) : 8;

				memcpy(&v, p, n); /* little-endian host */
				p += n;
				d.v[i] = (int64_t)v;
			}
			check_set(&t, &d, "--dims");
		}
	}
	task_find_dim(&t, "N", 1);
	task_find_tensor(&t, "x");
	task_release(&t);
	return 0;
}
