/* verify_time.c — timing a verified candidate against the baseline.
 *
 * Candidate and baseline run in two separate workers (the baseline is our
 * code, but sharing a process would let a candidate slow it down), called
 * alternately on the cpu bench shape. Every sample gets fresh input contents
 * (new random values, written outside the timed window, alternating between
 * two buffer sets) and a cache flush; a random fifth of the candidate's
 * timed outputs (and the first two) are re-checked against a reference for
 * their own inputs, so caching, replay and skipped work are caught
 * (stale_result). Time is the orchestrator's wall clock around the call,
 * less the median round trip of an empty call. */
#include "checks/stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tasks/task_rng.h"
#include "timing/timing.h"

#define N_SETS 2
#define MAX_SAMPLES 400

/* New random inputs for every input slot of c. */
static void fresh_inputs(struct vr *v, struct vr_case *c, uint64_t seed)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN)
			task_gen_tensor(v->t, st->slots[k].tensor, &c->dims, TASK_PROF_OWN, seed, c->in[k]);
}

/* Reference outputs for c->in into c->ref. */
static enum cr_status reference(struct vr *v, struct vr_case *c, struct cr_err *err)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	struct task_exec x;
	enum cr_status s = task_exec_init(&x, v->t, &c->dims, true, false, err);
	if (s)
		return s;
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN)
			memcpy(x.v[st->slots[k].tensor].d, c->in[k], sizeof(double) * (size_t)c->numel[k]);
	task_exec_forward(&x);
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_OUT) {
			memcpy(c->ref[k], x.v[st->slots[k].tensor].d, sizeof(double) * (size_t)c->numel[k]);
			task_gen_round(st->slots[k].dtype, c->ref[k], c->numel[k]);
		}
	task_exec_release(&x);
	return CR_OK;
}

/* Re-checks the candidate's outputs of a set against a fresh reference. */
static enum cr_status recheck_set(struct vr *v, struct vr_case *c, struct cr_proc *wc,
				  struct cr_proc *wb, int set, int n, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	enum cr_status s;

	vr_read_outputs(v, c, wc->shm, set, c->got);
	vr_read_outputs(v, c, wb->shm, set, c->base);
	if ((s = reference(v, c, err)))
		return s;
	for (int k = 0; k < c->n_slots; k++) {
		struct check_cmp cmp;
		if (st->slots[k].role != CR_SLOT_OUT)
			continue;
		check_compare(c->got[k], c->ref[k], c->base[k], c->numel[k], t->atol, t->rtol, 2, &cmp);
		if (!cmp.pass)
			vr_fail(v, CHECK_STALE_RESULT,
				"timed call %d: '%s' element %lld: got %.9g, expected %.9g for this call's inputs",
				n, st->slots[k].name, (long long)cmp.worst, cmp.got, cmp.exp);
	}
	return CR_OK;
}

/* The worker's CPU clock once its threads are back asleep (a process CPU
 * clock is brought up to date when its threads block). */
static int64_t settled_cpu(struct cr_proc *w)
{
	struct timespec ts = { 0, 300000 };
	nanosleep(&ts, NULL);
	return cr_proc_cpu_ns(w);
}

static double overhead_ns(struct cr_proc *w, double timeout)
{
	double x[31];
	char d[200];
	for (int i = 0; i < 31; i++) {
		int64_t ns = 0;
		if (cr_proc_call(w, CR_CMD_NOP, 0, timeout, &ns, d, sizeof d) != CR_RUN_OK)
			return 0;
		x[i] = (double)ns;
	}
	return timing_median(x, 31);
}

enum cr_status vr_time(struct vr *v, struct cr_result *r, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	struct cr_proc wc, wb;
	struct vr_case c;
	enum cr_status s = CR_OK;
	double *tc = NULL, *tb = NULL, oc, ob;
	char detail[300];
	size_t total;
	int n = 0;
	struct task_rng rng;
	struct timing_rule rule = { .min_samples = v->o->min_samples, .max_samples = MAX_SAMPLES,
				    .rel_target = v->o->rel_target, .max_seconds = v->o->time_cap_s };
	int64_t ref_ns = 0;          /* slowest of the first two re-checks */
	int64_t recheck_total = 0;   /* time spent re-checking, outside the cap */
	int64_t t0, after_cpu = -1, after_wall = 0, idle_cpu = 0, idle_wall = 0;
	bool noisy = false, frozen = false;
	enum cr_run res;

	memset(&wc, 0, sizeof wc);
	memset(&wb, 0, sizeof wb);
	wc.pid = wb.pid = -1;
	wc.shm_fd = wb.shm_fd = wc.cmd_fd = wb.cmd_fd = wc.rep_fd = wb.rep_fd = wc.log_fd = wb.log_fd = -1;
	if ((s = vr_case_init(v, &c, CR_FWD, &t->cpu, TASK_PROF_OWN, 0x7111e, err)))
		return s;
	if (!c.ready)
		return CR_OK;
	total = vr_layout(&c, N_SETS);
	tc = malloc(sizeof *tc * MAX_SAMPLES);
	tb = malloc(sizeof *tb * MAX_SAMPLES);
	if (!tc || !tb) {
		s = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	if ((s = cr_proc_init(&wc, total, err)) || (s = cr_proc_init(&wb, total, err)))
		goto out;
	vr_write_header(v, &c, wc.shm, N_SETS);
	vr_write_header(v, &c, wb.shm, N_SETS);
	res = cr_proc_start(&wc, "cand", v->workdir, v->o->call_timeout_s + 10, detail, sizeof detail);
	if (res != CR_RUN_OK) {
		vr_fail(v, vr_run_verdict(&wc, res),
			"timing: %s", detail);
		goto out;
	}
	res = cr_proc_start(&wb, "base", v->workdir, 60, detail, sizeof detail);
	if (res != CR_RUN_OK) {
		s = cr_errf(err, CR_EENV, "%s: the baseline worker failed: %s", t->name, detail);
		goto out;
	}
	oc = overhead_ns(&wc, v->o->call_timeout_s);
	ob = overhead_ns(&wb, 60);
	task_rng_seed(&rng, task_mix(v->o->seed, 0x71e5));
	/* warm-up: one untimed call per side and buffer set (page faults,
	 * thread pools, lazy binding), outputs checked like any other */
	for (int set = 0; set < N_SETS; set++) {
		uint64_t key = task_rng_next(&rng);
		fresh_inputs(v, &c, key);
		vr_fill_buffers(v, &c, wc.shm, set, 0, key);
		vr_fill_buffers(v, &c, wb.shm, set, 0, key);
		res = cr_proc_call(&wc, CR_CMD_RUN, (uint32_t)set, v->o->call_timeout_s, NULL, detail,
				   sizeof detail);
		if (res != CR_RUN_OK) {
			vr_fail(v, vr_run_verdict(&wc, res),
				"warm-up call: %s", detail);
			goto out;
		}
		if (cr_proc_call(&wb, CR_CMD_RUN, (uint32_t)set, 60, NULL, detail, sizeof detail) != CR_RUN_OK) {
			s = cr_errf(err, CR_EENV, "%s: baseline warm-up failed: %s", t->name, detail);
			goto out;
		}
		if ((s = recheck_set(v, &c, &wc, &wb, set, -1 - set, err)))
			goto out;
		if (v->status != CHECK_OK)
			goto out;
	}
	t0 = cr_now_ns();
	for (;;) {
		int set = n % N_SETS;
		uint64_t key = task_rng_next(&rng);
		/* every timed output is re-checked while the reference is cheap
		 * (measured on the first two); else the first two, a random
		 * quarter and the last */
		bool recheck = n < 2 || ref_ns < 50000000 || task_rng_uniform(&rng) < 0.25;
		int64_t nsc = 0, nsb = 0;

		fresh_inputs(v, &c, key);
		vr_fill_buffers(v, &c, wc.shm, set, n & 1, key);
		vr_fill_buffers(v, &c, wb.shm, set, n & 1, key);
		for (int side = 0; side < 2; side++) {
			/* alternate which side goes first */
			bool cand = (side == 0) == (n % 2 == 0);
			timing_flush_cpu_cache();
			if (cand) {
				int64_t before;
				if (frozen) {
					cr_proc_thaw(&wc);
					frozen = false;
				}
				before = cr_proc_cpu_ns(&wc);
				if (after_cpu >= 0 && before >= 0) {
					idle_cpu += before - after_cpu;
					idle_wall += cr_now_ns() - after_wall;
				}
				res = cr_proc_call(&wc, CR_CMD_RUN, (uint32_t)set, v->o->call_timeout_s,
						   &nsc, detail, sizeof detail);
				if (res != CR_RUN_OK) {
					vr_fail(v, vr_run_verdict(&wc, res),
						"timed call %d: %s", n, detail);
					goto out;
				}
				/* frozen while its outputs are inspected and while the
				 * baseline is prepared; its CPU clock is exact when stopped */
				cr_proc_freeze(&wc);
				after_cpu = cr_proc_cpu_ns(&wc);
				after_wall = cr_now_ns();
				frozen = true;
			} else {
				if (frozen) {
					cr_proc_thaw(&wc);
					frozen = false;
				}
				int64_t idle0 = settled_cpu(&wc);
				res = cr_proc_call(&wb, CR_CMD_RUN, (uint32_t)set, 60, &nsb, detail,
						   sizeof detail);
				int64_t idle1 = cr_proc_cpu_ns(&wc);
				if (res != CR_RUN_OK) {
					s = cr_errf(err, CR_EENV, "%s: baseline call failed: %s", t->name, detail);
					goto out;
				}
				/* the candidate's worker must be idle while the baseline runs */
				if (idle0 >= 0 && idle1 >= 0 && idle1 - idle0 > 1000000 + nsb / 4)
					vr_fail(v, CHECK_STALE_RESULT,
						"timing: candidate worker used %.2f ms of CPU while the baseline ran (%.2f ms)",
						(double)(idle1 - idle0) / 1e6, (double)nsb / 1e6);
			}
		}
		/* the candidate's worker must sleep between its calls */
		if (idle_cpu > 2000000 + idle_wall / 20)
			vr_fail(v, CHECK_STALE_RESULT,
				"timing: candidate worker used %.2f ms of CPU between its calls (%.1f ms idle)",
				(double)idle_cpu / 1e6, (double)idle_wall / 1e6);
		/* every sample: an output still holding its poison was not written */
		for (int k = 0; k < c.n_slots; k++) {
			unsigned char probe[64];
			size_t m = c.bytes[k] < sizeof probe ? c.bytes[k] : sizeof probe;
			if (st->slots[k].role != CR_SLOT_OUT || !m)
				continue;
			check_poison(probe, m, n & 1, key + (uint64_t)k);
			/* head of the buffer; and the tail for the NaN-word poison
			 * (4-byte periodic, so any aligned tail matches the head) */
			if (!memcmp(wc.shm + c.off[set][k], probe, m) ||
			    (!(n & 1) && c.bytes[k] >= 2 * m &&
			     !memcmp(wc.shm + c.off[set][k] + ((c.bytes[k] - m) & ~(size_t)3), probe, m)))
				vr_fail(v, CHECK_STALE_RESULT,
					"timed call %d: '%s' was not written (still holds its poison)", n,
					st->slots[k].name);
		}
		tc[n] = fmax((double)nsc - oc, 1.0) / 1e3;
		tb[n] = fmax((double)nsb - ob, 1.0) / 1e3;
		if (recheck) {
			int64_t r0 = cr_now_ns();
			if ((s = recheck_set(v, &c, &wc, &wb, set, n, err)))
				goto out;
			if (n < 2)
				ref_ns = ref_ns > cr_now_ns() - r0 ? ref_ns : cr_now_ns() - r0;
			recheck_total += cr_now_ns() - r0;
		}
		/* idle time (input generation, cache flush, the baseline's call)
		 * runs with the candidate awake, so work it left behind shows */
		if (frozen) {
			cr_proc_thaw(&wc);
			frozen = false;
		}
		n++;
		if (v->status != CHECK_OK)
			goto out;
		/* the cap counts measuring, not re-checking (bounded at 3x by
		 * the wall clock) */
		double spent = (double)(cr_now_ns() - t0 - recheck_total) / 1e9;
		if ((double)(cr_now_ns() - t0) / 1e9 > 3 * rule.max_seconds)
			spent = 2 * rule.max_seconds + 1;
		if (timing_should_stop(&rule, tc, n, tb, n, spent, &noisy)) {
			/* the last timed output is always re-checked */
			if (!recheck && (s = recheck_set(v, &c, &wc, &wb, set, n - 1, err)))
				goto out;
			if (v->status != CHECK_OK)
				goto out;
			break;
		}
	}
	{
		struct timing_stats sc, sb;
		timing_summarize(tc, n, task_mix(v->o->seed, 1), &sc);
		timing_summarize(tb, n, task_mix(v->o->seed, 2), &sb);
		r->time_us = sc.median;
		r->time_lo_us = sc.lo;
		r->time_hi_us = sc.hi;
		r->baseline_us = sb.median;
		timing_speedup(tb, n, tc, n, task_mix(v->o->seed, 3), &r->speedup, &r->speedup_lo,
			       &r->speedup_hi);
		r->samples = n;
		r->noisy = noisy;
		r->timed = true;
		task_dims_str(t, &t->cpu, r->dims, sizeof r->dims);
	}
out:
	cr_proc_release(&wc);
	cr_proc_release(&wb);
	vr_case_release(&c);
	free(tc);
	free(tb);
	return s;
}
