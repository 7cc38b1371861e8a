/* time_cpu.c — timing a verified candidate against the baseline on the cpu.
 *
 * Candidate and baseline run in two separate workers, called alternately on
 * the cpu bench shape, each on two buffer sets. Both workers are frozen
 * (SIGSTOP, confirmed stopped) at all times except inside their own timed
 * call: thawed right before the command is sent, frozen as soon as the
 * reply is read. So neither can compute, prefetch or hog memory bandwidth
 * while inputs are written, caches flushed, outputs checked or the other
 * side runs; a frozen worker's CPU clock must not move (checked).
 *
 * Everything a candidate could use to predict a sample comes from the
 * kernel's CSPRNG (cr_secure_u64), drawn per sample: the input values, the
 * poison, the choice of re-checked samples; the guard pattern per run. The
 * run seed governs only the correctness cases; nothing the worker sees is
 * derived from it here.
 *
 * After every timed call, with the candidate frozen: outputs not written
 * (poison still there), guard zones (out_of_bounds), inputs byte-identical
 * to what was stored (input_mutated); every output re-checked against a
 * double reference for its own inputs while a re-check is cheap, else the
 * first two, a random quarter and the last (stale_result). At least
 * MIN_SAMPLES samples (so at least three re-checks) whatever the time cap.
 *
 * Time is the orchestrator's wall clock around the call, overhead included:
 * no round trip is subtracted (it cannot be measured with calls the worker
 * cannot tell apart from real ones), which biases a speedup towards 1, never
 * away from it. A baseline failure fails the row (runtime_error naming the
 * baseline's failure), never the batch. */
#include "checks/stage.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/task_rng.h"
#include "timing/timing.h"

#define N_SETS 2
#define N_BLOCKS 3              /* fresh workers and buffers per block: between-run variation seen in the run */
#define MIN_BLOCK_SAMPLES 4
#define MAX_SAMPLES 400
#define MIN_SAMPLES 10          /* whatever the time cap */
#define BASE_TIMEOUT_S 60.0     /* a baseline call; our code, at the cpu bench shape */
#define RECHECK_CHEAP_NS 50000000
/* One worker and its call timeout. */
struct wk {
	struct cr_proc w;
	const char *who;        /* "candidate" or "baseline", for messages */
	double timeout_s;       /* per call */
	bool rt;                /* the orchestrator waits for its replies at real time */
};

static void wk_init(struct wk *k, const char *who, double timeout_s)
{
	memset(k, 0, sizeof *k);
	cr_proc_blank(&k->w);
	k->who = who;
	k->timeout_s = timeout_s;
}

/* One call of a frozen worker, bracketed (cr_proc_call_frozen): the clock
 * starts before the thaw and stops once the group is frozen again, so a
 * thread that works in the gap before or after the call is inside the
 * sample; CPU the group used while frozen between calls is counted by
 * proc.c (cr_proc_ran_frozen: it must be none). */
static enum cr_run wk_call(struct wk *k, int set, struct timing_call *tc, char *detail, size_t cap)
{
	cpu_set_t cs;
	int ncpu = sched_getaffinity(0, sizeof cs, &cs) ? 0 : CPU_COUNT(&cs); /* the worker's, inherited */
	struct cr_call_time t = { .rt = k->rt };
	enum cr_run res = cr_proc_call_timed(&k->w, CR_CMD_RUN, (uint32_t)set, k->timeout_s, &t, detail, cap);
	if (tc)
		*tc = (struct timing_call){ .wall_ns = t.wall_ns, .cpu_ns = t.cpu_ns,
					    .stall_some_ns = t.stall_some_ns, .stall_full_ns = t.stall_full_ns,
					    .ncpu = ncpu };
	return res;
}

/* What the scheduler did to a row's samples. */
struct sched_tally {
	int corrected, preempted[2];
};

/* The call's time without the machine's other work (timing_uncontended_ns),
 * in us; tallies what was done. */
static double sample_us(const struct timing_call *tc, int side, struct sched_tally *st)
{
	enum timing_adj how;
	double a = timing_uncontended_ns(tc, &how);
	st->corrected += how == TIMING_CORRECTED;
	st->preempted[side] += how == TIMING_PREEMPTED;
	return a / 1e3;
}

static const char *run_what(enum cr_run res)
{
	switch (res) {
	case CR_RUN_TIMEOUT: return "timed out";
	case CR_RUN_SYSCALL: return "made a forbidden system call";
	case CR_RUN_SETUP: return "failed its setup";
	case CR_RUN_FAULT: return "reported a fault";
	case CR_RUN_ENV: return "could not be started by the host";
	default: return "crashed";
	}
}

/* A baseline failure fails this row only. runtime_error: the row cannot be
 * timed, and a candidate gains nothing from it (ok needs the whole timing
 * stage; the candidate is frozen whenever the baseline runs and shares no
 * memory or process with it, so it cannot cause one anyway). */
static void base_failed(struct vr *v, enum cr_run res, const char *when, const char *detail)
{
	vr_fail(v, CHECK_RUNTIME_ERROR, "timing: the baseline worker %s %s (%s); not timed",
		run_what(res), when, detail);
}

static double secure_uniform(void)
{
	return (double)(cr_secure_u64() >> 11) * 0x1.0p-53;
}

/* New random inputs for every input slot of c (key from the CSPRNG). */
static void fresh_inputs(struct vr *v, struct vr_case *c, uint64_t key)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN)
			task_gen_tensor(v->t, st->slots[k].tensor, &c->dims, TASK_PROF_OWN, key, c->in[k]);
}

/* Re-checks the candidate's outputs of a set against a fresh reference
 * (the baseline's outputs for the same inputs give the f32 allowance). */
static enum cr_status recheck_set(struct vr *v, struct vr_case *c, struct cr_proc *wc,
				  struct cr_proc *wb, int set, int n, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	enum cr_status s;

	vr_read_outputs(v, c, wc->shm, set, c->got);
	vr_read_outputs(v, c, wb->shm, set, c->base);
	if ((s = vr_reference(v, c, c->ref, err)))
		return s;
	/* a conditioning measured for an earlier call's inputs says nothing of
	 * these */
	free(c->spread_mem);
	c->spread_mem = NULL;
	c->cond_rounds = 0;
	memset(c->spread, 0, sizeof c->spread);
	memset(c->spread1, 0, sizeof c->spread1);
	/* the correctness stage's rule (checks/stage.c): each output at its own
	 * scale, a near-zero one at the others' */
	double rms[CR_MAX_SLOTS];
	int slot_out[CR_MAX_SLOTS], n_out = vr_output_rms(v, c, rms, slot_out);
	for (int k = 0; k < c->n_slots; k++) {
		struct check_cmp cmp;
		struct check_tol tl;
		if (st->slots[k].role != CR_SLOT_OUT)
			continue;
		check_tol_default(&tl, t->atol, t->rtol, check_scale(rms, n_out, slot_out[k]));
		check_compare_tol(c->got[k], c->ref[k], c->base[k], c->numel[k], &tl, &cmp);
		/* about to fail: the conditioning of this call's inputs, as in the
		 * correctness stage (measured once per call, only then) */
		if (!cmp.pass && v->status > CHECK_STALE_RESULT) {
			if ((s = vr_case_cond_inputs(v, c, err)))
				return s;
			vr_cond_tol(c, k, &tl);
			if (tl.spread)
				check_compare_tol(c->got[k], c->ref[k], c->base[k], c->numel[k], &tl, &cmp);
			/* still failing where the case is ill-conditioned: the spread
			 * is a sample maximum, measured again (merged) */
			while (tl.spread && vr_cond_again(c, &cmp)) {
				if ((s = vr_case_cond_more(v, c, err)))
					return s;
				vr_cond_tol(c, k, &tl);
				check_compare_tol(c->got[k], c->ref[k], c->base[k], c->numel[k], &tl, &cmp);
			}
		}
		if (!cmp.pass)
			vr_fail(v, CHECK_STALE_RESULT,
				"timed call %d: '%s' element %lld: got %.9g, expected %.9g for this call's inputs",
				n, st->slots[k].name, (long long)cmp.worst, cmp.got, cmp.exp);
	}
	return CR_OK;
}

/* Writes a sample's inputs into both workers' set (both frozen) and keeps
 * the stored bytes of each input (saved[k]) for the intact check. */
static uint64_t fill_sample(struct vr *v, struct vr_case *c, struct wk *wc, struct wk *wb, int set,
			    int poison, unsigned char **saved)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	uint64_t pkey = cr_secure_u64();
	fresh_inputs(v, c, cr_secure_u64());
	vr_fill_buffers(v, c, wc->w.shm, set, poison, pkey);
	vr_fill_buffers(v, c, wb->w.shm, set, poison, pkey);
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN)
			memcpy(saved[k], wc->w.shm + c->off[set][k], c->bytes[k]);
	return pkey;
}

/* What is checked of every candidate call, the candidate frozen: unwritten
 * outputs (head, and tail for the NaN-word poison), guards, inputs. */
static void check_call(struct vr *v, struct vr_case *c, struct wk *wc, int set, int n, int poison,
		       uint64_t pkey, size_t total, uint64_t gkey, unsigned char **saved)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	char why[300];

	for (int k = 0; k < c->n_slots; k++) {
		const char *b = wc->w.shm + c->off[set][k];
		unsigned char probe[64];
		size_t m = c->bytes[k] < sizeof probe ? c->bytes[k] : sizeof probe;
		if (st->slots[k].role != CR_SLOT_OUT || !m)
			continue;
		/* the head; and the tail for the NaN-word poison (4-byte
		 * periodic, so any aligned window matches the head) */
		check_poison(probe, m, poison, pkey + (uint64_t)k);
		if (!memcmp(b, probe, m) ||
		    (!poison && c->bytes[k] >= 2 * m && !memcmp(b + ((c->bytes[k] - m) & ~(size_t)3), probe, m)))
			vr_fail(v, CHECK_STALE_RESULT, "timed call %d: '%s' was not written (still holds its poison)",
				n, st->slots[k].name);
	}
	if (!vr_guard_check(c, st, wc->w.shm, N_SETS, total, gkey, why, sizeof why))
		vr_fail(v, CHECK_OUT_OF_BOUNDS, "timed call %d: %s", n, why);
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN && memcmp(saved[k], wc->w.shm + c->off[set][k], c->bytes[k])) {
			if (!vr_inputs_intact(v, c, wc->w.shm, set, why, sizeof why))
				vr_fail(v, CHECK_INPUT_MUTATED, "timed call %d: %s", n, why);
			else
				vr_fail(v, CHECK_INPUT_MUTATED, "timed call %d: input '%s' changed (bytes differ)",
					n, st->slots[k].name);
		}
	if (cr_proc_ran_frozen(&wc->w))
		vr_fail(v, CHECK_STALE_RESULT, "timing: the candidate worker used %.2f ms of CPU while frozen",
			(double)wc->w.ran_frozen_ns / 1e6);
}

/* Whether the row's figure can be trusted to hold in another run, and why
 * not (r->noisy, r->noisy_why). The stopping rule's target (each median
 * within rel_target) is what sampling aims for; trust asks for less and
 * more: the speedup's own within-run interval within TRUST_HALFWIDTH; the
 * N_BLOCKS blocks' figures, each from fresh workers and buffers (their
 * pages, so their cache placement, are a re-run's), within TRUST_BLOCKS of
 * each other (measured: smoke matmul_plain ran 0.45x in one run and 0.57x
 * in two others, each within ±3% inside its run); and no more than
 * TRUST_PREEMPTED of either side's samples preempted beyond correction
 * (timing_uncontended_ns). */
#define TRUST_HALFWIDTH 0.05
#define TRUST_BLOCKS 1.10
#define TRUST_PREEMPTED 0.10
static void timing_trust(struct cr_result *r, const int preempted[2])
{
	double hw = r->speedup > 0 ? (r->speedup_hi - r->speedup_lo) / 2 / r->speedup : 1;
	size_t w = 0, cap = sizeof r->noisy_why;

	r->noisy_why[0] = '\0';
	if (hw > TRUST_HALFWIDTH)
		w += (size_t)snprintf(r->noisy_why + w, cap - w, "speedup interval \u00b1%.0f%% within the run",
				      100 * hw);
	if (r->block_lo > 0 && r->block_hi > TRUST_BLOCKS * r->block_lo && w < cap)
		w += (size_t)snprintf(r->noisy_why + w, cap - w, "%sfresh workers measured %.2fx to %.2fx",
				      w ? "; " : "", r->block_lo, r->block_hi);
	for (int side = 0; side < 2 && w < cap; side++)
		if (preempted[side] > TRUST_PREEMPTED * r->samples)
			w += (size_t)snprintf(r->noisy_why + w, cap - w,
					      "%s%d of %d %s samples off the CPU with no stall to take out",
					      w ? "; " : "",
					      preempted[side], r->samples, side ? "baseline" : "candidate");
	r->noisy = r->noisy_why[0] != '\0';
	if (r->noisy && r->n_corrected && w < cap)
		snprintf(r->noisy_why + w, cap - w, "; %d of %d samples stalled by other work, taken out",
			 r->n_corrected, 2 * r->samples);
}

enum cr_status vr_time(struct vr *v, struct cr_result *r, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	struct wk wc, wb;
	struct vr_case c;
	enum cr_status s = CR_OK;
	double *tc = NULL, *tb = NULL;
	struct sched_tally tally = { 0 };
	unsigned char *saved[CR_MAX_SLOTS] = { 0 };
	char detail[300];
	size_t total;
	int n = 0, block_end[N_BLOCKS] = { 0 };
	struct timing_rule rule = { .min_samples = v->o->min_samples > MIN_SAMPLES ? v->o->min_samples : MIN_SAMPLES,
				    .max_samples = MAX_SAMPLES, .rel_target = v->o->rel_target,
				    .max_seconds = v->o->time_cap_s };
	int64_t ref_ns = 0;          /* slowest of the first two re-checks */
	int64_t check_total = 0;     /* time spent checking, outside the cap */
	int64_t t0;
	uint64_t gkey = cr_secure_u64();
	bool noisy = false;
	enum cr_run res;
	sigset_t pipe_mask;
	int old_nice = 0;
	bool boosted;

	timing_pipe_guard_begin(&pipe_mask);
	boosted = !timing_boost_self(&old_nice);
	wk_init(&wc, "candidate", v->o->call_timeout_s);
	wk_init(&wb, "baseline", BASE_TIMEOUT_S);
	/* sizes and arrays only: every value the workers see is drawn below */
	if ((s = vr_case_alloc(v, &c, CR_FWD, &t->cpu, true, err)))
		goto out;
	c.prof = TASK_PROF_OWN;
	if (!c.ready)
		goto out;
	total = vr_layout(&c, N_SETS);
	tc = malloc(sizeof *tc * MAX_SAMPLES);
	tb = malloc(sizeof *tb * MAX_SAMPLES);
	if (!tc || !tb) {
		s = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < c.n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN && !(saved[k] = malloc(c.bytes[k] + 1))) {
			s = cr_errf(err, CR_ENOMEM, "out of memory");
			goto out;
		}
	for (int blk = 0; blk < N_BLOCKS; blk++) {
		int b0 = n;
		struct timing_rule rb = { .min_samples = (rule.min_samples + N_BLOCKS - 1) / N_BLOCKS,
					  .max_samples = MAX_SAMPLES / N_BLOCKS, .rel_target = rule.rel_target,
					  .max_seconds = rule.max_seconds / N_BLOCKS };

		/* a fresh pair of workers and buffers: what a re-run would get */
		cr_proc_release(&wc.w);
		cr_proc_release(&wb.w);
		cr_proc_blank(&wc.w);
		cr_proc_blank(&wb.w);
		gkey = cr_secure_u64();
		if (rb.min_samples < MIN_BLOCK_SAMPLES)
			rb.min_samples = MIN_BLOCK_SAMPLES;
		if ((s = cr_proc_init(&wc.w, total, err)) || (s = cr_proc_init(&wb.w, total, err)))
			goto out;
		vr_write_header(v, &c, wc.w.shm, N_SETS);
		vr_write_header(v, &c, wb.w.shm, N_SETS);
		vr_guard_fill(&c, wc.w.shm, N_SETS, total, gkey);
		vr_guard_fill(&c, wb.w.shm, N_SETS, total, cr_secure_u64());
		/* the candidate first, then frozen while the baseline starts */
		res = cr_proc_start(&wc.w, "cand", v->workdir, v->o->call_timeout_s + 10, detail, sizeof detail);
		if (res == CR_RUN_ENV) {
			s = cr_errf(err, CR_EENV, "timing: the candidate's worker: %s", detail);
			goto out;
		}
		if (res != CR_RUN_OK || cr_proc_freeze(&wc.w, detail, sizeof detail)) {
			vr_fail(v, vr_run_verdict(&wc.w, res != CR_RUN_OK ? res : CR_RUN_TIMEOUT), "timing: %s", detail);
			goto out;
		}
		res = cr_proc_start(&wb.w, "base", v->workdir, BASE_TIMEOUT_S, detail, sizeof detail);
		if (res == CR_RUN_ENV) {
			s = cr_errf(err, CR_EENV, "timing: the baseline's worker: %s", detail);
			goto out;
		}
		if (res != CR_RUN_OK || cr_proc_freeze(&wb.w, detail, sizeof detail)) {
			base_failed(v, res != CR_RUN_OK ? res : CR_RUN_TIMEOUT, "at start", detail);
			goto out;
		}
		/* the workers keep the default priority: a candidate's threads
		 * at nice -20 would starve whatever shares its cores for up to
		 * every call's timeout (measured: a nice-0 loop beside it got
		 * 0.4-2.6% of a CPU); their preemption is taken out as stalls.
		 * Only the orchestrator is raised, and waits for each reply at
		 * real time (wk_call) */
		wc.rt = wb.rt = boosted;
		/* warm-up: one untimed call per side and buffer set (page faults,
		 * thread pools, lazy binding), outputs checked like any other */
		for (int set = 0; set < N_SETS; set++) {
			uint64_t pkey = fill_sample(v, &c, &wc, &wb, set, 0, saved);
			if ((res = wk_call(&wc, set, NULL, detail, sizeof detail)) != CR_RUN_OK) {
				vr_fail(v, vr_run_verdict(&wc.w, res), "warm-up call: %s", detail);
				goto out;
			}
			if ((res = wk_call(&wb, set, NULL, detail, sizeof detail)) != CR_RUN_OK) {
				base_failed(v, res, "in its warm-up call", detail);
				goto out;
			}
			check_call(v, &c, &wc, set, -1 - set, 0, pkey, total, gkey, saved);
			if (v->status == CHECK_OK && (s = recheck_set(v, &c, &wc.w, &wb.w, set, -1 - set, err)))
				goto out;
			if (v->status != CHECK_OK)
				goto out;
		}
		t0 = cr_now_ns();
		check_total = 0;
		for (;;) {
			int set = n % N_SETS;
			/* every timed output is re-checked while the reference is cheap
			 * (measured on the first two); else the first two, a random
			 * quarter (CSPRNG: not predictable) and the last */
			bool recheck = n < 2 || ref_ns < RECHECK_CHEAP_NS || secure_uniform() < 0.25;
			struct timing_call callc = { 0 }, callb = { 0 };
			int64_t c0;
			uint64_t pkey = fill_sample(v, &c, &wc, &wb, set, n & 1, saved);

			for (int side = 0; side < 2; side++) {
				/* alternate which side goes first */
				bool cand = (side == 0) == (n % 2 == 0);
				timing_flush_cpu_cache(); /* both frozen */
				if (cand) {
					if ((res = wk_call(&wc, set, &callc, detail, sizeof detail)) != CR_RUN_OK) {
						vr_fail(v, vr_run_verdict(&wc.w, res), "timed call %d: %s", n, detail);
						goto out;
					}
				} else if ((res = wk_call(&wb, set, &callb, detail, sizeof detail)) != CR_RUN_OK) {
					base_failed(v, res, "in a timed call", detail);
					goto out;
				}
			}
			c0 = cr_now_ns();
			check_call(v, &c, &wc, set, n, n & 1, pkey, total, gkey, saved);
			tc[n] = sample_us(&callc, 0, &tally);
			tb[n] = sample_us(&callb, 1, &tally);
			if (recheck && v->status == CHECK_OK) {
				int64_t r0 = cr_now_ns();
				if ((s = recheck_set(v, &c, &wc.w, &wb.w, set, n, err)))
					goto out;
				if (n < 2 && cr_now_ns() - r0 > ref_ns)
					ref_ns = cr_now_ns() - r0;
			}
			check_total += cr_now_ns() - c0;
			n++;
			if (v->status != CHECK_OK)
				goto out;
			/* the cap counts measuring, not checking (bounded at 3x by the
			 * wall clock); the minimum holds regardless */
			double spent = (double)(cr_now_ns() - t0 - check_total) / 1e9;
			if ((double)(cr_now_ns() - t0) / 1e9 > 3 * rb.max_seconds)
				spent = 2 * rb.max_seconds + 1;
			if (timing_should_stop(&rb, tc + b0, n - b0, tb + b0, n - b0, spent, &noisy)) {
				/* the last timed output is always re-checked */
				if (!recheck && (s = recheck_set(v, &c, &wc.w, &wb.w, set, n - 1, err)))
					goto out;
				if (v->status != CHECK_OK)
					goto out;
				break;
			}
		}
		block_end[blk] = n;
	}
	{
		struct timing_stats sc, sb;
		/* the raw samples, in time order, for samples.csv (the gate) */
		r->n_raw = n < CR_RAW_MAX ? n : CR_RAW_MAX;
		for (int i = 0; i < r->n_raw; i++) {
			r->raw_cand_us[i] = (float)tc[i];
			r->raw_base_us[i] = (float)tb[i];
		}
		timing_summarize(tc, n, task_mix(v->o->seed, 1), &sc);
		timing_summarize(tb, n, task_mix(v->o->seed, 2), &sb);
		r->time_us = sc.median;
		r->time_lo_us = sc.lo;
		r->time_hi_us = sc.hi;
		r->baseline_us = sb.median;
		timing_speedup(tb, tc, n, task_mix(v->o->seed, 3), &r->speedup, &r->speedup_lo,
			       &r->speedup_hi);
		r->samples = n;
		r->n_corrected = tally.corrected;
		r->n_preempted = tally.preempted[0] + tally.preempted[1];
		r->boosted = boosted;
		/* each block's own figure: how far apart fresh workers and buffers
		 * put it */
		r->block_lo = r->block_hi = r->speedup;
		for (int blk = 0, b0 = 0; blk < N_BLOCKS; b0 = block_end[blk++]) {
			double m, lo, hi;
			timing_speedup(tb + b0, tc + b0, block_end[blk] - b0, task_mix(v->o->seed, 4 + blk), &m, &lo, &hi);
			r->block_lo = blk ? fmin(r->block_lo, m) : m;
			r->block_hi = blk ? fmax(r->block_hi, m) : m;
		}
		timing_trust(r, tally.preempted);
		r->timed = true;
		task_dims_str(t, &t->cpu, r->dims, sizeof r->dims);
	}
out:
	cr_proc_release(&wc.w);
	cr_proc_release(&wb.w);
	vr_case_release(&c);
	for (int k = 0; k < CR_MAX_SLOTS; k++)
		free(saved[k]);
	free(tc);
	free(tb);
	timing_unboost_self(old_nice);
	timing_pipe_guard_end(&pipe_mask);
	return s;
}
