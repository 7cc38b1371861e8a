/* test_cupti_window.c — the CUPTI window rule of a timed GPU call
 * (cr_cuda_window_ns): a sample counts only when its kernel records are
 * exactly the plan's launches, so work hidden in extra kernels, a launch
 * that never ran, or broken timestamps reject the sample. No GPU needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cuda/cuda_drv.h"
#include "cuda/cuda_worker.h"

static struct cr_cuda_ltab tab;

static void two_launches(void)
{
	memset(&tab, 0, sizeof tab);
	tab.n_launch = 2;
	strcpy(tab.l[0].fn, "rows");
	strcpy(tab.l[1].fn, "mean");
}

static struct cr_cupti_rec rec(enum cr_cupti_kind kind, const char *name, uint64_t s, uint64_t e)
{
	struct cr_cupti_rec r;
	memset(&r, 0, sizeof r);
	r.kind = kind;
	r.start_ns = s;
	r.end_ns = e;
	snprintf(r.name, sizeof r.name, "%s", name);
	return r;
}

static void exact_launches_sum(void **state)
{
	struct cr_cupti_rec r[3] = { rec(CR_CUPTI_KERNEL, "rows", 1000, 1500),
				     rec(CR_CUPTI_MEMSET, "", 1600, 1700),
				     rec(CR_CUPTI_KERNEL, "mean", 1800, 1830) };
	int k = -1;
	(void)state;
	two_launches();
	assert_int_equal(cr_cuda_window_ns(r, 3, &tab, false, &k), 530);
	assert_int_equal(k, 2);
}

static void out_of_order_records_are_sorted(void **state)
{
	struct cr_cupti_rec r[2] = { rec(CR_CUPTI_KERNEL, "mean", 1800, 1830),
				     rec(CR_CUPTI_KERNEL, "rows", 1000, 1500) };
	int k;
	(void)state;
	two_launches();
	assert_int_equal(cr_cuda_window_ns(r, 2, &tab, false, &k), 530);
}

static void extra_kernel_rejects(void **state)
{
	struct cr_cupti_rec r[3] = { rec(CR_CUPTI_KERNEL, "rows", 1000, 1500),
				     rec(CR_CUPTI_KERNEL, "mean", 1800, 1830),
				     rec(CR_CUPTI_KERNEL, "hidden", 1900, 9000) };
	int k;
	(void)state;
	two_launches();
	assert_int_equal(cr_cuda_window_ns(r, 3, &tab, false, &k), -1);
	assert_int_equal(k, 3);
}

static void missing_or_renamed_kernel_rejects(void **state)
{
	struct cr_cupti_rec one[1] = { rec(CR_CUPTI_KERNEL, "rows", 1000, 1500) };
	struct cr_cupti_rec other[2] = { rec(CR_CUPTI_KERNEL, "rows", 1000, 1500),
					  rec(CR_CUPTI_KERNEL, "meanx", 1800, 1830) };
	int k;
	(void)state;
	two_launches();
	assert_int_equal(cr_cuda_window_ns(one, 1, &tab, false, &k), -1);
	assert_int_equal(cr_cuda_window_ns(other, 2, &tab, false, &k), -1);
}

static void bad_timestamps_reject(void **state)
{
	struct cr_cupti_rec zero[2] = { rec(CR_CUPTI_KERNEL, "rows", 0, 1500),
					rec(CR_CUPTI_KERNEL, "mean", 1800, 1830) };
	struct cr_cupti_rec back[2] = { rec(CR_CUPTI_KERNEL, "rows", 1000, 1500),
					rec(CR_CUPTI_KERNEL, "mean", 1800, 1700) };
	int k;
	(void)state;
	two_launches();
	assert_int_equal(cr_cuda_window_ns(zero, 2, &tab, false, &k), -1);
	assert_int_equal(cr_cuda_window_ns(back, 2, &tab, false, &k), -1);
}

static void library_call_counts_every_kernel(void **state)
{
	struct cr_cupti_rec r[2] = { rec(CR_CUPTI_KERNEL, "sm90_xmma_gemm", 100, 400),
				     rec(CR_CUPTI_KERNEL, "splitk_reduce", 450, 500) };
	int k;
	(void)state;
	memset(&tab, 0, sizeof tab);
	tab.n_launch = 1;
	strcpy(tab.l[0].fn, CR_CUDA_CUBLAS_SGEMM);
	assert_int_equal(cr_cuda_window_ns(r, 2, &tab, true, &k), 350);
	assert_int_equal(k, 2);
	assert_int_equal(cr_cuda_window_ns(r, 0, &tab, true, &k), -1); /* nothing ran */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exact_launches_sum),
		cmocka_unit_test(out_of_order_records_are_sorted),
		cmocka_unit_test(extra_kernel_rejects),
		cmocka_unit_test(missing_or_renamed_kernel_rejects),
		cmocka_unit_test(bad_timestamps_reject),
		cmocka_unit_test(library_call_counts_every_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
