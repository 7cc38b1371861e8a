/* stage.c — one correctness stage of a candidate in its own worker: every
 * case (listed shapes × fixed profiles, shapes and profile parameters
 * drawn per run from the CSPRNG), every check. */
#include "checks/stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tasks/task_rng.h"

/* Shapes drawn per stage and run (one under --quick). */
#define VR_DRAWN_SHAPES 2

static uint64_t hash_doubles(uint64_t h, const double *x, int64_t n)
{
	const unsigned char *b = (const unsigned char *)x;
	for (size_t i = 0; i < (size_t)n * sizeof *x; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
	while (nanosleep(&ts, &ts))
		;
}

/* The largest shared-memory size any case of the stage needs; 0 (with a
 * format_error recorded) when some shape cannot be sized, so nothing runs
 * before every expression has evaluated on every shape. */
static size_t stage_shm_size(struct vr *v, enum cr_stage s, const struct task_dimset *shapes,
			     int n_shapes, int n_sets)
{
	size_t best = 0;
	for (int i = 0; i < n_shapes; i++) {
		struct vr_case c;
		memset(&c, 0, sizeof c);
		if (!vr_case_sizes(v, &c, s, &shapes[i]))
			return 0;
		size_t sz = vr_layout(&c, n_sets);
		if (sz > best)
			best = sz;
	}
	return best;
}

static const char *stage_name(enum cr_stage s)
{
	return s == CR_FWD ? "forward" : "backward";
}

void vr_call_failed(struct vr *v, struct cr_proc *w, enum cr_run res, const char *what,
		    const char *detail)
{
	char tail[200];
	cr_proc_log_tail(w, tail, sizeof tail);
	for (char *p = tail; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	enum check_verdict s = vr_run_verdict(w, res);

	if (res == CR_RUN_TIMEOUT || res == CR_RUN_FAULT)
		vr_fail(v, s, "%s: %s", what, detail);
	else
		vr_fail(v, s, "%s: %s%s%s", what, detail, tail[0] ? "; output: " : "",
			tail);
}

/* The one element the row reports (struct cr_worst) from the comparison
 * of output k of c: the first failing comparison's worst element (the
 * largest excess over the tolerance; for a failed aggregate or bias bound,
 * where every element passed, the largest error), final once set; until
 * then the element of the largest abs error seen. */
static void note_worst(struct vr *v, const struct vr_case *c, int k, const struct check_cmp *cmp)
{
	const struct cr_slot *sl = &v->plan.st[c->stage].slots[k];
	struct cr_worst *w = &v->worst;
	int64_t i;
	double got, exp, d;

	if (v->worst_failed || cmp->n <= 0)
		return;
	i = !cmp->pass && cmp->failed == CHECK_BOUND_ELEMENT ? cmp->worst : cmp->max_abs_at;
	got = c->got[k][i];
	exp = c->ref[k][i];
	d = fabs(got - exp);
	if (cmp->pass && w->set && !(d > w->abs_err))
		return;
	memset(w, 0, sizeof *w);
	w->set = true;
	snprintf(w->stage, sizeof w->stage, "%s", stage_name(c->stage));
	task_dims_str(v->t, &c->dims, w->shape, sizeof w->shape);
	snprintf(w->profile, sizeof w->profile, "%s", task_profile_name(c->prof));
	snprintf(w->output, sizeof w->output, "%s", sl->name);
	w->index = (long long)i;
	w->got = got;
	w->expected = exp;
	w->abs_err = d;
	w->rel_err = exp != 0 ? d / fabs(exp) : d == 0 ? 0 : INFINITY;
	v->worst_failed = !cmp->pass;
}

/* The scale output slot k of c is judged at: its own (check_scale), and for
 * an output of fewer than CHECK_SMALL_OUTPUT elements at least the rms of
 * the case's float inputs. */
static double judged_scale(const struct vr *v, const struct vr_case *c, int k, double own)
{
	const struct cr_pstage *st = &v->plan.st[c->stage];
	double ss = 0;
	int64_t n = 0;

	if (c->numel[k] >= CHECK_SMALL_OUTPUT)
		return own;
	for (int q = 0; q < c->n_slots; q++) {
		if (st->slots[q].role != CR_SLOT_IN || !task_dtype_is_float(st->slots[q].dtype))
			continue;
		for (int64_t i = 0; i < c->numel[q]; i++)
			if (isfinite(c->in[q][i])) {
				ss += c->in[q][i] * c->in[q][i];
				n++;
			}
	}
	return n ? fmax(own, sqrt(ss / (double)n)) : own;
}

/* Runs one case through the worker and all buffer checks. Returns false
 * when the worker is gone (crash, timeout), or with *st_out set when the
 * orchestrator failed (out of memory measuring the conditioning). */
static bool run_case(struct vr *v, struct cr_proc *w, struct vr_case *c, bool repeat,
		     const char *note, uint64_t *out_hash, enum cr_status *st_out,
		     struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[c->stage];
	char detail[300], why[300], why_g[300], ds[128], what[480];
	/* guard, poison and scratch patterns from the CSPRNG, fresh per call:
	 * a pattern can be inverted to its key (8 guard bytes suffice), so the
	 * key must be worth nothing else; never the run seed */
	uint64_t key = cr_secure_u64();
	int poison = (int)(cr_secure_u64() & 1);
	size_t total = vr_layout(c, 1);
	int64_t ns = 0, cpu0, cpu1, settle, win;
	enum cr_run res;

	task_dims_str(t, &c->dims, ds, sizeof ds);
	snprintf(what, sizeof what, "%s {%s} %s%s", stage_name(c->stage), ds, task_profile_name(c->prof), note);
	if (!vr_write_header(v, c, w->shm, 1))
		return false; /* format_error recorded */
	vr_guard_fill(c, w->shm, 1, total, key);
	vr_fill_buffers(v, c, w->shm, 0, poison, key);
	/* the call bracketed by freezes of the worker's whole group: the
	 * output is read as it stood when the call returned, before a thread
	 * left behind could finish the work */
	if (cr_proc_freeze(w, detail, sizeof detail))
		res = CR_RUN_TIMEOUT;
	else
		res = cr_proc_call_frozen(w, CR_CMD_RUN, 0, v->o->call_timeout_s, &ns, detail, sizeof detail);
	if (res != CR_RUN_OK) {
		vr_call_failed(v, w, res, what, detail);
		return false;
	}
	vr_read_outputs(v, c, w->shm, 0, c->got);
	/* guards and inputs while it is frozen, here and after the settle
	 * window: a thread left behind could otherwise restore an input the
	 * call used as scratch (or a guard it overwrote) before they are read */
	bool guards_ok = vr_guard_check(c, st, w->shm, 1, total, key, why_g, sizeof why_g);
	bool inputs_ok = vr_inputs_intact(v, c, w->shm, 0, why, sizeof why);
	/* the CPU of the worker's whole group (threads that exited, children
	 * too), counted by the kernel, never by the worker */
	cpu0 = cr_proc_cpu_ns(w);
	win = cr_now_ns();
	cr_proc_thaw(w);
	settle = ns * 2 < 1000000 ? 1000000 : ns * 2 > 20000000 ? 20000000 : ns * 2;
	sleep_ns(settle);
	if (cr_proc_freeze(w, detail, sizeof detail)) {
		vr_call_failed(v, w, CR_RUN_TIMEOUT, what, detail);
		return false;
	}
	cpu1 = cr_proc_cpu_ns(w);
	/* the window as it really was: on a loaded machine the sleep overshoots */
	win = cr_now_ns() - win;
	vr_read_outputs(v, c, w->shm, 0, c->got2);
	guards_ok = guards_ok && vr_guard_check(c, st, w->shm, 1, total, key, why_g, sizeof why_g);
	inputs_ok = inputs_ok && vr_inputs_intact(v, c, w->shm, 0, why, sizeof why);
	/* it stays frozen: outside its calls and their settle windows a worker
	 * gets no CPU in any stage (a thread spinning between calls would take
	 * it from every other process on the machine) */
	for (int k = 0; k < c->n_slots; k++) {
		if (st->slots[k].role != CR_SLOT_OUT)
			continue;
		if (memcmp(c->got[k], c->got2[k], sizeof(double) * (size_t)c->numel[k]))
			vr_fail(v, CHECK_STALE_RESULT, "%s: '%s' changed after the call returned (work finished late)",
				what, st->slots[k].name);
	}
	/* margins absorb thread pools going back to sleep on a loaded machine;
	 * a thread doing real work after return uses most of the window */
	/* (a cuda worker runs no candidate code on the CPU: nothing to catch) */
	/* the freezer's invariant: a frozen group uses no CPU (the slack covers
	 * the accounting around the reads); more means it was not frozen */
	if (!v->cuda && cr_proc_ran_frozen(w))
		vr_fail(v, CHECK_STALE_RESULT, "%s: the worker used %.2f ms of CPU while frozen", what,
			(double)w->ran_frozen_ns / 1e6);
	if (!v->cuda && cpu0 >= 0 && cpu1 >= 0 && cpu1 - cpu0 > 2000000 + win / 2)
		vr_fail(v, CHECK_STALE_RESULT, "%s: worker used %.1f ms of CPU in %.1f ms after returning",
			what, (double)(cpu1 - cpu0) / 1e6, (double)win / 1e6);
	if (!guards_ok)
		vr_fail(v, CHECK_OUT_OF_BOUNDS, "%s: %s", what, why_g);
	if (!inputs_ok)
		vr_fail(v, CHECK_INPUT_MUTATED, "%s: %s", what, why);
	*out_hash = 0xcbf29ce484222325ull;
	/* each output at its own scale; one that is zero in exact arithmetic
	 * (rounding noise of the reference) at the scale of the others */
	double rms[CR_MAX_SLOTS];
	int slot_out[CR_MAX_SLOTS], n_out = vr_output_rms(v, c, rms, slot_out);
	for (int k = 0; k < c->n_slots; k++) {
		const struct cr_slot *sl = &st->slots[k];
		struct check_cmp cmp;
		struct check_tol tl;
		double tol;
		char line[512];
		if (sl->role != CR_SLOT_OUT)
			continue;
		*out_hash = hash_doubles(*out_hash, c->got[k], c->numel[k]);
		check_tol_default(&tl, t->atol, t->rtol,
				  judged_scale(v, c, k, check_scale(rms, n_out, slot_out[k])));
		check_compare_tol(c->got[k], c->ref[k], c->base[k], c->numel[k], &tl, &cmp);
		/* about to fail: how far the reference itself moves there under
		 * float-level noise (lazy: a passing comparison never pays
		 * for it; nor does a candidate whose status is already final) */
		if (!cmp.pass && v->status > CHECK_MISMATCH) {
			if ((*st_out = vr_case_cond(v, c, err)))
				return false;
			vr_cond_tol(c, k, &tl);
			if (tl.spread)
				check_compare_tol(c->got[k], c->ref[k], c->base[k], c->numel[k], &tl, &cmp);
			/* still failing where the case is ill-conditioned: the
			 * spread is a sample maximum, measured again (merged) */
			while (tl.spread && vr_cond_again(c, &cmp)) {
				if ((*st_out = vr_case_cond_more(v, c, err)))
					return false;
				vr_cond_tol(c, k, &tl);
				check_compare_tol(c->got[k], c->ref[k], c->base[k], c->numel[k], &tl, &cmp);
			}
		}
		/* what counts as "varies" or "zero": beyond the tolerance at the
		 * judged scale and beyond what the f32 baseline resolves */
		tol = fmax(t->atol * tl.scale, tl.allow_factor * cmp.base_max_abs);
		if (check_degenerate(c->got[k], c->ref[k], c->base[k], c->numel[k], tol, why, sizeof why))
			vr_fail(v, CHECK_DEGENERATE, "%s: '%s': %s", what, sl->name, why);
		for (int q = 0; q < c->n_slots; q++)
			if (st->slots[q].role == CR_SLOT_IN && c->numel[q] == c->numel[k] &&
			    check_equals_input(c->got[k], c->in[q], c->ref[k], c->numel[k], tol))
				vr_fail(v, CHECK_DEGENERATE, "%s: '%s' equals the input '%s'", what,
					sl->name, st->slots[q].name);
		note_worst(v, c, k, &cmp);
		if (!(cmp.max_abs <= v->worst_abs))
			v->worst_abs = cmp.max_abs;
		if (!(cmp.max_rel <= v->worst_rel))
			v->worst_rel = cmp.max_rel;
		if (cmp.base_max_abs > 0 && !(cmp.max_abs / cmp.base_max_abs <= v->err_vs_base))
			v->err_vs_base = cmp.max_abs / cmp.base_max_abs;
		if (!cmp.pass) {
			check_cmp_str(&cmp, &tl, line, sizeof line);
			vr_fail(v, CHECK_MISMATCH, "%s: '%s' %s", what, sl->name, line);
		}
	}
	if (repeat) {
		/* the same inputs again, with the other poison and fresh keys */
		double *keep[CR_MAX_SLOTS];
		key = cr_secure_u64();
		vr_guard_fill(c, w->shm, 1, total, key);
		vr_fill_buffers(v, c, w->shm, 0, !poison, cr_secure_u64());
		res = cr_proc_call_frozen(w, CR_CMD_RUN, 0, v->o->call_timeout_s, &ns, detail, sizeof detail);
		if (res != CR_RUN_OK) {
			vr_call_failed(v, w, res, what, detail);
			return false;
		}
		memcpy(keep, c->got2, sizeof keep);
		vr_read_outputs(v, c, w->shm, 0, c->got2);
		if (!vr_guard_check(c, st, w->shm, 1, total, key, why, sizeof why))
			vr_fail(v, CHECK_OUT_OF_BOUNDS, "%s (rerun): %s", what, why);
		for (int k = 0; k < c->n_slots; k++) {
			struct check_cmp cmp;
			if (st->slots[k].role != CR_SLOT_OUT)
				continue;
			check_compare(c->got2[k], c->got[k], NULL, c->numel[k], t->atol, t->rtol, 0, &cmp);
			if (!cmp.pass)
				vr_fail(v, CHECK_NONDETERMINISTIC,
					"%s: '%s' element %lld: %.9g on one run, %.9g on the next",
					what, st->slots[k].name, (long long)cmp.worst, cmp.got, cmp.exp);
		}
	}
	return true;
}

static uint64_t secure_r64(void *ctx)
{
	(void)ctx;
	return cr_secure_u64();
}

/* Whether the plan's expressions and sizes hold on d, without recording a
 * verdict (vr_case_sizes records one); msg says why not. */
static bool plan_fits(struct vr *v, enum cr_stage s, const struct task_dimset *d, char *msg, size_t cap)
{
	const struct cr_pstage *st = &v->plan.st[s];
	int64_t vals[CR_MAX_EXPRS];
	struct cr_err e;

	cr_err_init(&e);
	if (cr_plan_eval(&v->plan, d, vals, &e)) {
		snprintf(msg, cap, "%s", e.msg);
		return false;
	}
	for (int k = 0; k < st->n_slots; k++) {
		int64_t n = cr_plan_slot_numel(&v->plan, s, k, d, vals);
		size_t es = st->slots[k].role == CR_SLOT_SCRATCH
				    ? (size_t)v->plan.scratch_esize[st->slots[k].scratch]
				    : task_dtype_size(st->slots[k].dtype);
		if (n < 0 || n > (1ll << 32) ||
		    (st->slots[k].role == CR_SLOT_SCRATCH && (size_t)n * es > (1ull << 30))) {
			if (st->slots[k].role == CR_SLOT_SCRATCH)
				snprintf(msg, cap, "%s:%d: @scratch %s: %lld elements is out of range",
					 v->path, v->plan.cand.scratch[st->slots[k].scratch].line,
					 st->slots[k].name, (long long)n);
			else
				snprintf(msg, cap, "%s: %s: %lld elements is out of range", v->path,
					 st->slots[k].name, (long long)n);
			return false;
		}
	}
	return true;
}

/* Appends up to want shapes drawn from the CSPRNG (task_gen_shape) to
 * shapes, the i-th of the class task_shape_class_pick gives it (a multiple
 * of 32, then a prime, ...). A draw the task rejects is drawn again; one
 * the task accepts but the candidate's expressions or sizes do not is a
 * format_error naming it: a plan that holds on every listed shape and
 * fails on some shape the task accepts could steer the draws away from the
 * lengths its kernel gets wrong, and redrawing it even a few times in 64
 * let it (a dodge of half the shapes escaped 255 times in 256 when 8
 * rejections were needed). Returns the count added (-1: format_error). */
static int draw_shapes(struct vr *v, enum cr_stage s, struct task_dimset *shapes, int want)
{
	struct task_shape_range sr;
	int got = 0;

	task_shape_range(v->t, &sr);
	for (int i = 0; i < want; i++) {
		enum task_shape_class cls = task_shape_class_pick(i, want, cr_secure_u64());
		char msg[300] = "", ds[128];
		struct task_dimset d;
		int a;
		for (a = 0; a < 64; a++)
			if (task_gen_shape(v->t, &sr, a, cls, secure_r64, NULL, &d))
				break;
		if (a == 64) {
			fprintf(stderr, "crucible: %s: %s: no valid shape drawn in 64 attempts; "
				"this stage checks the listed shapes only\n", v->path, stage_name(s));
			break;
		}
		if (!plan_fits(v, s, &d, msg, sizeof msg)) {
			task_dims_str(v->t, &d, ds, sizeof ds);
			vr_fail(v, CHECK_FORMAT_ERROR,
				"%s: the expressions fail on a shape drawn within the task's range, which "
				"the task accepts ({%s}, drawn per run, not from --seed: %s)",
				v->path, ds, msg);
			return -1;
		}
		shapes[got++] = d;
	}
	return got;
}

/* The element count of the smallest float input at d. */
static int64_t shape_values(struct vr *v, const struct task_dimset *d)
{
	int64_t least = INT64_MAX;
	for (int i = 0; i < v->t->n_tensors; i++) {
		const struct task_tensor *tt = &v->t->tensors[i];
		if (tt->role != TASK_INPUT || !task_dtype_is_float(tt->dtype))
			continue;
		int64_t n = task_tensor_numel(v->t, i, d);
		if (n < least)
			least = n;
	}
	return least;
}

bool vr_start_worker(struct vr *v, struct cr_proc *w, struct vr_case *c)
{
	char detail[300];
	enum cr_run res;

	int64_t t0 = cr_now_ns();

	if (!vr_write_header(v, c, w->shm, 1))
		return false; /* format_error recorded */
	res = cr_proc_start(w, vr_worker_mode(v), v->workdir, v->o->call_timeout_s + 10, detail,
			    sizeof detail);
	v->ns_start += cr_now_ns() - t0;
	if (res == CR_RUN_OK && !v->sandbox[0])
		snprintf(v->sandbox, sizeof v->sandbox, "%s", w->sandbox);
	/* frozen from READY on: it runs only inside its calls */
	if (res == CR_RUN_OK && cr_proc_freeze(w, detail, sizeof detail))
		res = CR_RUN_TIMEOUT;
	if (res == CR_RUN_OK)
		return true;
	if (res == CR_RUN_ENV)
		snprintf(v->env_error, sizeof v->env_error, "%s", detail);
	else if (res == CR_RUN_SETUP && w->fault >= 0 && w->fault < CHECK_OK)
		vr_fail(v, (enum check_verdict)w->fault, "%s: %s", v->path, detail);
	else
		vr_call_failed(v, w, res == CR_RUN_SETUP ? CR_RUN_CRASH : res, "loading the candidate",
			       detail);
	return false;
}

enum cr_status vr_run_stage(struct vr *v, enum cr_stage s, struct cr_err *err)
{
	const struct task *t = v->t;
	/* the listed check shapes, the cpu bench shape, then shapes drawn
	 * per run (not reproducible from --seed) */
	struct task_dimset shapes[TASK_MAX_CHECKS + 1 + VR_DRAWN_SHAPES];
	enum task_profile profs[TASK_PROF_COUNT + 1];
	int n_shapes = 0, n_fixed, n_profs = 0, n_drawn;
	struct cr_proc w;
	struct vr_case c;
	enum cr_status st = CR_OK;
	bool started = false;

	for (int i = 0; i < t->n_checks; i++)
		shapes[n_shapes++] = t->checks[i];
	shapes[n_shapes++] = t->cpu;
	n_fixed = n_shapes;
	n_drawn = draw_shapes(v, s, shapes + n_shapes, v->o->quick ? 1 : VR_DRAWN_SHAPES);
	if (n_drawn < 0)
		return CR_OK; /* format_error recorded */
	n_shapes += n_drawn;
	for (int p = 0; p < TASK_PROF_COUNT; p++)
		if (!v->o->quick || p == TASK_PROF_OWN || p == TASK_PROF_LARGE || p == TASK_PROF_OFFSET)
			profs[n_profs++] = (enum task_profile)p;
	size_t shm = stage_shm_size(v, s, shapes, n_shapes, 1);
	if (!shm)
		return CR_OK; /* format_error recorded */
	if ((st = cr_proc_init(&w, shm, err)))
		return st;
	for (int i = 0; i < n_shapes && v->status > CHECK_TIMEOUT; i++) {
		uint64_t first_hash = 0, first_ref = 0;
		bool bench = i == n_fixed - 1, drawn_shape = i >= n_fixed;
		/* the case list of this shape: listed shapes get the fixed
		 * profiles and (all of them, or under --quick the bench shape)
		 * one drawn profile; drawn shapes the task's own init and a
		 * drawn profile */
		enum task_profile list[TASK_PROF_COUNT + 1];
		int n_list = 0;
		if (drawn_shape) {
			list[n_list++] = TASK_PROF_OWN;
		} else {
			memcpy(list, profs, sizeof(profs[0]) * (size_t)n_profs);
			n_list = n_profs;
		}
		/* not on a shape whose inputs hold fewer than 64 values each: a
		 * drawn scale can then put every value in a function's tail
		 * (GELU's backward below -4), where an honest float formula has
		 * absolute but not relative accuracy and the output's own scale
		 * would reject it; the fixed profiles cover those shapes */
		if ((drawn_shape || !v->o->quick || bench) && shape_values(v, &shapes[i]) >= 64)
			list[n_list++] = TASK_PROF_DRAWN;
		for (int p = 0; p < n_list && v->status > CHECK_TIMEOUT; p++) {
			uint64_t h = 0, rh = 0xcbf29ce484222325ull;
			/* a drawn profile's parameters come from the CSPRNG */
			uint64_t seed = list[p] == TASK_PROF_DRAWN ? cr_secure_u64()
								   : task_mix((uint64_t)s + 1, (uint64_t)(i * 16 + p));
			char note[300] = "", ds[128];
			v->cache_case = !drawn_shape && list[p] != TASK_PROF_DRAWN;
			st = vr_case_init(v, &c, s, &shapes[i], list[p], seed, err);
			v->cache_case = false;
			if (st)
				goto out;
			if (!c.ready) {
				vr_case_release(&c);
				goto out; /* format_error recorded */
			}
			task_dims_str(t, &shapes[i], ds, sizeof ds);
			if (list[p] == TASK_PROF_DRAWN) {
				char pd[200];
				/* the seed case_generate gives task_gen_tensor */
				task_prof_draw_str(t, task_mix(v->o->seed, seed), pd, sizeof pd);
				snprintf(note, sizeof note, "(%s)%s", pd, drawn_shape ? "" : " [profile drawn per run, not from --seed]");
			}
			if (drawn_shape)
				snprintf(note + strlen(note), sizeof note - strlen(note),
					 " [shape drawn per run, not from --seed: reproduce with --dims %s]", ds);
			if (!started) {
				started = true;
				if (!vr_start_worker(v, &w, &c)) {
					vr_case_release(&c);
					if (v->env_error[0])
						st = cr_errf(err, CR_EENV, "%s: the candidate's worker could not be "
							     "started: %s", v->path, v->env_error);
					goto out;
				}
			}
			if (!run_case(v, &w, &c, bench && list[p] == TASK_PROF_OWN, note, &h, &st, err)) {
				vr_case_release(&c);
				goto out;
			}
			for (int k = 0; k < c.n_slots; k++)
				if (v->plan.st[s].slots[k].role == CR_SLOT_OUT)
					rh = hash_doubles(rh, c.ref[k], c.numel[k]);
			if (p == 0) {
				first_hash = h;
				first_ref = rh;
			} else if (h == first_hash && rh != first_ref) {
				vr_fail(v, CHECK_DEGENERATE,
					"%s {%s}: output identical for inputs '%s' and '%s' (does not depend on the input)%s",
					stage_name(s), ds, task_profile_name(list[0]), task_profile_name(list[p]),
					drawn_shape ? " [shape drawn per run]" : "");
			}
			vr_case_release(&c);
		}
	}
out:
	cr_proc_release(&w);
	return st;
}
