/* The reference cache (checks/case.c): a case of a listed shape under a
 * fixed profile, generated again for another candidate of the task, is
 * taken from the cache and is bit for bit what a fresh generation gives
 * (inputs, double reference, f32 baseline); a different profile, stage or
 * seed is not a hit; a case not marked cacheable never is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks/stage.h"
#include "cand/cand.h"
#include "tasks/task_registry.h"

struct fix {
	struct task t;
	struct cr_verify_opts o;
	struct vr v;
};

static void bind(struct fix *f, const char *task, const char *cand)
{
	struct cr_err e;
	struct cr_cand_file cf;
	char path[1024];

	cr_err_init(&e);
	memset(f, 0, sizeof *f);
	assert_int_equal(task_registry_find(task, &f->t, &e), CR_OK);
	snprintf(path, sizeof path, "%s/candidates/smoke/%s", getenv("CRUCIBLE_DATADIR"), cand);
	cr_cand_load(&cf, path);
	assert_true(cf.parsed);
	f->o.seed = 12345;
	f->v.t = &f->t;
	f->v.o = &f->o;
	f->v.status = CHECK_OK;
	assert_int_equal(cr_plan_bind(&f->v.plan, &f->t, &cf.cand, path, &e), CR_OK);
	cr_cand_file_release(&cf);
}

static void gen(struct fix *f, struct vr_case *c, enum cr_stage s, enum task_profile p,
		uint64_t seed, bool cacheable)
{
	struct cr_err e;
	cr_err_init(&e);
	f->v.cache_case = cacheable;
	assert_int_equal(vr_case_init(&f->v, c, s, &f->t.checks[0], p, seed, &e), CR_OK);
	f->v.cache_case = false;
	assert_true(c->ready);
}

static void same(const struct vr_case *a, const struct vr_case *b)
{
	assert_int_equal(a->n_slots, b->n_slots);
	for (int k = 0; k < a->n_slots; k++) {
		size_t n = sizeof(double) * (size_t)a->numel[k];
		assert_int_equal(a->numel[k], b->numel[k]);
		if (a->in[k] && b->in[k])
			assert_memory_equal(a->in[k], b->in[k], n);
		if (a->ref[k] && b->ref[k]) {
			assert_memory_equal(a->ref[k], b->ref[k], n);
			assert_memory_equal(a->base[k], b->base[k], n);
		}
	}
}

static void test_hit_is_exact(void **state, const char *task, const char *cand)
{
	struct fix f;
	struct vr_case fresh, first, again, other;
	long long h0, m0, h1, m1;
	(void)state;

	bind(&f, task, cand);
	gen(&f, &fresh, CR_FWD, TASK_PROF_OWN, 7, false);    /* not cacheable: computed */
	vr_ref_cache_stats(&h0, &m0);
	gen(&f, &first, CR_FWD, TASK_PROF_OWN, 7, true);     /* computed, kept */
	gen(&f, &again, CR_FWD, TASK_PROF_OWN, 7, true);     /* from the cache */
	vr_ref_cache_stats(&h1, &m1);
	assert_int_equal(h1 - h0, 1);
	assert_int_equal(m1 - m0, 1);
	same(&fresh, &first);
	same(&fresh, &again);
	/* another profile, another seed, the other stage: computed, not hits */
	gen(&f, &other, CR_FWD, TASK_PROF_LARGE, 7, true);
	vr_case_release(&other);
	gen(&f, &other, CR_FWD, TASK_PROF_OWN, 8, true);
	vr_case_release(&other);
	if (f.v.plan.has_bwd) {
		gen(&f, &other, CR_BWD, TASK_PROF_OWN, 7, true);
		vr_case_release(&other);
	}
	vr_ref_cache_stats(&h0, &m0);
	assert_int_equal(h0, h1);
	/* a case generated for a candidate that overwrote its copy: the
	 * cache's is untouched */
	for (int k = 0; k < again.n_slots; k++)
		if (again.in[k])
			memset(again.in[k], 0xff, sizeof(double) * (size_t)again.numel[k]);
	vr_case_release(&again);
	gen(&f, &again, CR_FWD, TASK_PROF_OWN, 7, true);
	same(&fresh, &again);
	vr_case_release(&fresh);
	vr_case_release(&first);
	vr_case_release(&again);
	cr_plan_release(&f.v.plan);
	task_release(&f.t);
}

static void test_softmax(void **state)
{
	test_hit_is_exact(state, "smoke/softmax", "softmax_plain.c");
}

static void test_matmul(void **state)
{
	test_hit_is_exact(state, "smoke/matmul", "matmul_plain.c");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_matmul),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
