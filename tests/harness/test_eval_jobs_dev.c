/* test_eval_jobs_dev.c — the timing locks of eval --jobs per device
 * (eval --gpus, harness/eval_jobs.c): two jobs in serial mode hold "the"
 * timing lock one at a time when they share a device, and side by side
 * when each has its own. Each job's fake timing stage records its start and
 * end (CLOCK_MONOTONIC, one clock for every process) and its slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness/eval_jobs.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* In a job: a timing stage of 300 ms under the pool's lock. */
static void job(const struct eval_job_cmd *cmd, void *ctx, struct eval_job_msg *out)
{
	struct timespec d = { 0, 300 * 1000 * 1000 };
	(void)cmd;
	(void)ctx;
	cr_result_init(&out->r);
	eval_jobs_timing_hook(NULL, true);
	out->r.time_lo_us = now_s();
	nanosleep(&d, NULL);
	out->r.time_hi_us = now_s();
	eval_jobs_timing_hook(NULL, false);
	out->r.samples = eval_jobs_slot();
	out->st = CR_OK;
}

struct seen {
	int n;
	double lo[8], hi[8];
	int slot[8];
};

static enum cr_status done(const struct eval_job_msg *m, void *ctx, struct cr_err *err)
{
	struct seen *s = ctx;
	(void)err;
	assert_int_equal(m->st, CR_OK);
	assert_true(s->n < 8);
	s->lo[s->n] = m->r.time_lo_us;
	s->hi[s->n] = m->r.time_hi_us;
	s->slot[s->n++] = m->r.samples;
	return CR_OK;
}

/* Four stages over two jobs; returns how many pairs of stages overlapped. */
static int run_pool(int n_dev, struct seen *s)
{
	char dir[] = "/tmp/crucible-jobsdev-XXXXXX";
	struct eval_jobs *p = NULL;
	struct cr_err e;
	int overlaps = 0;

	memset(s, 0, sizeof *s);
	cr_err_init(&e);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(eval_jobs_open(&p, 2, EJ_SERIAL, n_dev, dir, job, NULL, &e), CR_OK);
	assert_int_equal(eval_jobs_mode(p), EJ_SERIAL);
	for (int i = 0; i < 4; i++) {
		struct eval_job_cmd c = { .idx = i };
		assert_int_equal(eval_jobs_submit(p, &c, "stage", done, s, &e), CR_OK);
	}
	assert_int_equal(eval_jobs_drain(p, done, s, &e), CR_OK);
	eval_jobs_close(p);
	rmdir(dir);
	assert_int_equal(s->n, 4);
	for (int i = 0; i < s->n; i++) {
		assert_true(s->slot[i] == 0 || s->slot[i] == 1);
		for (int k = i + 1; k < s->n; k++)
			overlaps += s->lo[i] < s->hi[k] && s->lo[k] < s->hi[i];
	}
	return overlaps;
}

static void test_one_device_serialises(void **state)
{
	struct seen s;
	(void)state;
	assert_int_equal(run_pool(1, &s), 0);
}

static void test_two_devices_side_by_side(void **state)
{
	struct seen s;
	int per_slot[2] = { 0, 0 };
	(void)state;
	/* job i is on device i mod 2: the two jobs time side by side */
	assert_true(run_pool(2, &s) >= 1);
	for (int i = 0; i < s.n; i++)
		per_slot[s.slot[i]]++;
	assert_true(per_slot[0] >= 1 && per_slot[1] >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_device_serialises),
		cmocka_unit_test(test_two_devices_side_by_side),
	};
	if (eval_jobs_cores() < 2) {
		printf("skip: the jobs are pinned to disjoint cores only with 2 cores or more\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
