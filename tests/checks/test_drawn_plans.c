/* test_drawn_plans.c — every bundled candidate whose sidecar expects a
 * status past the format stage binds a plan that holds on every shape the
 * stages can draw (issue 28, item 6): a drawn shape the task accepts and
 * the expressions or sizes reject is now a format_error at once (no
 * redraw), so an honest plan that failed on one would be a false
 * rejection that a single eval shows only when that shape happens to be
 * drawn. 200 draws per class (a multiple of 32, a prime, 8 or 16 × odd,
 * ragged) per candidate, forward and backward, as checks/stage.c's
 * plan_fits judges them (every expression evaluates; slot sizes within
 * 2^32 elements, scratch within 1 GiB). Catches a class that leads an
 * honest sample's expressions off their domain (a division by N % 8, a
 * size that overflows at the top of a range). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cand/cand.h"
#include "cand/plan.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"
#include "tasks/task_rng.h"

static uint64_t next64(void *ctx)
{
	return task_rng_next(ctx);
}

/* checks/stage.c's plan_fits, without a verifier state. */
static bool fits(const struct cr_plan *p, enum cr_stage s, const struct task_dimset *d, char *msg,
		 size_t cap)
{
	const struct cr_pstage *st = &p->st[s];
	static int64_t vals[CR_MAX_EXPRS];
	struct cr_err e;

	cr_err_init(&e);
	if (cr_plan_eval(p, d, vals, &e)) {
		snprintf(msg, cap, "%s", e.msg);
		return false;
	}
	for (int k = 0; k < st->n_slots; k++) {
		int64_t n = cr_plan_slot_numel(p, s, k, d, vals);
		size_t es = st->slots[k].role == CR_SLOT_SCRATCH ? (size_t)p->scratch_esize[st->slots[k].scratch]
								 : task_dtype_size(st->slots[k].dtype);
		if (n < 0 || n > (1ll << 32) || (st->slots[k].role == CR_SLOT_SCRATCH && (size_t)n * es > (1ull << 30))) {
			snprintf(msg, cap, "slot %s: %lld elements", st->slots[k].name, (long long)n);
			return false;
		}
	}
	return true;
}

/* The sidecar's "expect" of file path (.c or .cu); "" when none. */
static void expect_of(const char *path, char *out, size_t cap)
{
	char side[1200], buf[512];
	const char *dot = strrchr(path, '.');
	FILE *f;
	size_t n;

	out[0] = 0;
	snprintf(side, sizeof side, "%.*s.json", (int)(dot - path), path);
	if (!(f = fopen(side, "r")))
		return;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *q = strstr(buf, "\"expect\"");
	if (q && (q = strchr(q + 8, '"')))
		snprintf(out, cap, "%.*s", (int)strcspn(q + 1, "\""), q + 1);
}

static int check_file(const char *path, struct task_rng *r, int *n_checked)
{
	struct cr_cand_file cf;
	struct cr_plan plan;
	struct task t;
	struct task_shape_range sr;
	struct cr_err e;
	char want[64];
	int bad = 0;

	expect_of(path, want, sizeof want);
	if (!want[0] || !strcmp(want, "format_error"))
		return 0;
	cr_cand_load(&cf, path);
	cr_err_init(&e);
	if (!cf.parsed || task_registry_find(cf.cand.task, &t, &e)) {
		cr_cand_file_release(&cf);
		return 0;
	}
	memset(&plan, 0, sizeof plan);
	if (cr_plan_bind(&plan, &t, &cf.cand, path, &e)) {
		cr_cand_file_release(&cf);
		task_release(&t);
		return 0;
	}
	(*n_checked)++;
	task_shape_range(&t, &sr);
	for (int cls = 0; cls < TASK_SHAPE_CLASSES && !bad; cls++)
		for (int q = 0; q < 200 && !bad; q++) {
			struct task_dimset d;
			char msg[300], ds[128];
			int a = 0;
			while (a < 64 && !task_gen_shape(&t, &sr, a, (enum task_shape_class)cls, next64, r, &d))
				a++;
			if (a == 64)
				continue;
			for (int s = 0; s < (plan.has_bwd ? 2 : 1); s++)
				if (!fits(&plan, (enum cr_stage)s, &d, msg, sizeof msg)) {
					task_dims_str(&t, &d, ds, sizeof ds);
					print_message("%s (expects %s): fails on drawn {%s}: %s\n", path, want, ds, msg);
					bad = 1;
					break;
				}
		}
	cr_plan_release(&plan);
	cr_cand_file_release(&cf);
	task_release(&t);
	return bad;
}

static void test_bundled_plans_hold(void **s)
{
	static const char *sets[] = { "smoke", "smoke-cuda", "L1", "L2", "L3", "honest", "exploits",
				      "exploits-timed", "exploits-timed-cuda" };
	const char *data = getenv("CRUCIBLE_DATADIR");
	struct task_rng r;
	int bad = 0, checked = 0;
	(void)s;
	assert_non_null(data);
	task_rng_seed(&r, 28);
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
		char dir[1024], path[1400];
		struct dirent *de;
		DIR *dp;
		snprintf(dir, sizeof dir, "%s/candidates/%s", data, sets[i]);
		if (!(dp = opendir(dir)))
			continue;
		while ((de = readdir(dp))) {
			size_t n = strlen(de->d_name);
			if (!(n > 2 && !strcmp(de->d_name + n - 2, ".c")) &&
			    !(n > 3 && !strcmp(de->d_name + n - 3, ".cu")))
				continue;
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			bad += check_file(path, &r, &checked);
		}
		closedir(dp);
	}
	print_message("%d bundled plans checked on drawn shapes, %d fail on one\n", checked, bad);
	assert_true(checked > 100);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundled_plans_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
