/* probe.c — self-consistency's probe run (harness/verify.c, cr_probe): the
 * forward plan of a built candidate in one sandboxed worker on inputs drawn
 * from a probe seed at the task's cpu shape and its own init profile, a few
 * calls, each on inputs of its own (call i's from the probe seed and i: a
 * candidate that replays its last output when the inputs repeat gains no
 * speed, as round 3's sixth attacker's did to be picked the fastest), outputs
 * poisoned (NaN) before each. No reference, no baseline and no
 * checks: what the candidate wrote is all that comes back, so a selector
 * that groups candidates by agreement never sees the right answer. */
#include "checks/stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/task_gen.h"
#include "tasks/task_rng.h"

/* The probe's poison of output k, per dtype, so that an unwritten element
 * can be told from any value a kernel writes: an f16 or bf16 output holds
 * that dtype's NaN in every element (the stages' 0x7fc0dead words are a NaN
 * only as f32: an f16 element at an even index would read -427.25); an f32
 * output keeps those words, as the stages write them (a NaN, and no tell
 * that this call is the probe's: round 3's last attacker read a canonical
 * NaN to skip a busy loop in the probe only); an integer output keeps them
 * too (an index or count never reaches them). 0, or -1 out of memory. */
static int poison_outputs(const struct vr_case *c, const struct cr_pstage *st, char *shm)
{
	for (int k = 0; k < c->n_slots; k++) {
		enum task_dtype dt = st->slots[k].dtype;
		double *nan;

		if (st->slots[k].role != CR_SLOT_OUT || !task_dtype_is_float(dt) || dt == TASK_F32 || !c->numel[k])
			continue;
		if (!(nan = malloc(sizeof *nan * (size_t)c->numel[k])))
			return -1;
		for (int64_t i = 0; i < c->numel[k]; i++)
			nan[i] = NAN;
		task_gen_store(dt, nan, shm + c->off[0][k], c->numel[k]);
		free(nan);
	}
	return 0;
}

/* The first element of output k that still holds the probe's poison (a
 * NaN of a float output, the poison bytes of an integer one), -1 if none,
 * -2 out of memory. */
static int64_t unwritten(const struct vr_case *c, const struct cr_pstage *st, int k, const char *shm)
{
	const char *b = shm + c->off[0][k];
	size_t es = task_dtype_size(st->slots[k].dtype);
	unsigned char *img;
	int64_t at = -1;

	if (task_dtype_is_float(st->slots[k].dtype)) {
		for (int64_t i = 0; i < c->numel[k]; i++)
			if (isnan(c->got[k][i]))
				return i;
		return -1;
	}
	if (!(img = malloc(c->bytes[k] ? c->bytes[k] : 1)))
		return -2;
	check_poison(img, c->bytes[k], 0, 0);
	for (int64_t i = 0; i < c->numel[k] && at < 0; i++)
		if (!memcmp(b + (size_t)i * es, img + (size_t)i * es, es))
			at = i;
	free(img);
	return at;
}

/* Whether every output value of the last call equals what the first call
 * wrote, on other inputs: the kernel does not read them. By value, not by
 * bytes: 0 * x writes +0 or -0 as x goes, the same zero to agreement
 * (round 3's thirteenth attacker). NaN is refused before this. */
static bool same_outputs(const struct vr_case *c, const struct cr_pstage *st, double *const *first)
{
	for (int k = 0; k < c->n_slots; k++) {
		if (st->slots[k].role != CR_SLOT_OUT)
			continue;
		for (int64_t i = 0; i < c->numel[k]; i++)
			if (first[k][i] != c->got[k][i])
				return false;
	}
	return true;
}

/* The probe's inputs of call n (from the probe seed and n) into c->in. */
static void probe_inputs(struct vr *v, struct vr_case *c, uint64_t seed, int n)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];

	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN)
			task_gen_tensor(v->t, st->slots[k].tensor, &c->dims, TASK_PROF_OWN,
					n ? task_mix(seed, (uint64_t)n) : seed, c->in[k]);
}

/* Whether the reference outputs of the first and the last call's inputs
 * differ: 1, 0, or -1 with err set. Leaves the last call's inputs in c->in. */
static int reference_moved(struct vr *v, struct vr_case *c, uint64_t seed, int calls, struct cr_err *err)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	double *a[CR_MAX_SLOTS] = { 0 }, *b[CR_MAX_SLOTS] = { 0 };
	int moved = -1;

	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_OUT &&
		    (!(a[k] = malloc(sizeof(double) * (size_t)(c->numel[k] ? c->numel[k] : 1))) ||
		     !(b[k] = malloc(sizeof(double) * (size_t)(c->numel[k] ? c->numel[k] : 1))))) {
			cr_errf(err, CR_ENOMEM, "out of memory for the probe");
			goto out;
		}
	if (vr_reference(v, c, b, err))
		goto out;
	probe_inputs(v, c, seed, 0);
	if (vr_reference(v, c, a, err))
		goto out;
	probe_inputs(v, c, seed, calls - 1);
	moved = 0;
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_OUT && memcmp(a[k], b[k], sizeof(double) * (size_t)c->numel[k]))
			moved = 1;
out:
	for (int k = 0; k < CR_MAX_SLOTS; k++) {
		free(a[k]);
		free(b[k]);
	}
	return moved;
}

enum cr_status vr_probe_run(struct vr *v, uint64_t seed, int calls, struct vr_case *c,
			    double *call_us, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	int64_t ns[VR_PROBE_MAX_CALLS];
	double *first[CR_MAX_SLOTS] = { 0 };  /* the first call's output values */
	char detail[300], ds[128], what[200];
	struct cr_proc w;
	enum cr_status s;
	int n = 0;

	if (calls < 1 || calls > VR_PROBE_MAX_CALLS)
		return cr_errf(err, CR_EINPUT, "probe: %d calls (1 to %d)", calls, VR_PROBE_MAX_CALLS);
	if ((s = vr_case_alloc(v, c, CR_FWD, &t->cpu, false, err)) || !c->ready)
		return s; /* a size that failed is a format_error, recorded */
	c->prof = TASK_PROF_OWN;
	c->seed = seed;
	task_dims_str(t, &c->dims, ds, sizeof ds);
	snprintf(what, sizeof what, "probe {%s} %s", ds, task_profile_name(TASK_PROF_OWN));
	if ((s = cr_proc_init(&w, vr_layout(c, 1), err)))
		return s;
	if (!vr_start_worker(v, &w, c)) {
		if (v->env_error[0])
			s = cr_errf(err, CR_EENV, "%s: the candidate's worker could not be started: %s", v->path,
				    v->env_error);
		goto out; /* verdict recorded, or the host's failure */
	}
	for (n = 0; n < calls; n++) {
		/* quiet NaNs over the outputs before every call (the stages'
		 * first kind of poison): what a candidate leaves unwritten
		 * reads NaN, never an earlier call's answer, and NaN agrees
		 * with nothing (cr_probe_agree) */
		enum cr_run res;
		/* the stream of each tensor is a function of (seed, call, tensor)
		 * only: probes of one seed see the same inputs call by call,
		 * whatever the run seed; the last call's outputs are compared */
		probe_inputs(v, c, seed, n);
		vr_fill_buffers(v, c, w.shm, 0, 0, cr_secure_u64());
		if (poison_outputs(c, st, w.shm)) {
			s = cr_errf(err, CR_ENOMEM, "out of memory for the probe");
			goto out;
		}
		/* bracketed by freezes: what it had written when the call
		 * returned, nothing later, and nothing done around the call
		 * outside the clock */
		if (cr_proc_freeze(&w, detail, sizeof detail))
			res = CR_RUN_TIMEOUT;
		else
			res = cr_proc_call_frozen(&w, CR_CMD_RUN, 0, v->o->call_timeout_s, &ns[n], detail,
						  sizeof detail);
		if (res != CR_RUN_OK) {
			vr_call_failed(v, &w, res, what, detail);
			goto out;
		}
		vr_read_outputs(v, c, w.shm, 0, c->got);
		/* every call must write its outputs: an element whose bytes still
		 * are the poison's did not run the plan. Bytes, not values: an
		 * integer output's poison is a number, not a NaN (round 3's last
		 * attacker had an empty argmax join the group of empty kernels
		 * and be selected) */
		for (int k = 0; k < c->n_slots; k++) {
			int64_t i = st->slots[k].role == CR_SLOT_OUT ? unwritten(c, st, k, w.shm) : -1;
			if (i == -2) {
				s = cr_errf(err, CR_ENOMEM, "out of memory for the probe");
				goto out;
			}
			if (i >= 0) {
				vr_fail(v, CHECK_STALE_RESULT, "%s call %d: '%s' element %lld was not written "
					"(still holds its poison)", what, n, st->slots[k].name, (long long)i);
				goto out;
			}
		}
		/* the first call's outputs, kept to hold the last call's against:
		 * the same values on other inputs is a kernel that ignores them (a
		 * group of constant writers agreed and was selected, round 3's
		 * last attacker; the stages call it degenerate too) */
		if (n == 0 && calls > 1) {
			for (int k = 0; k < c->n_slots; k++)
				if (st->slots[k].role == CR_SLOT_OUT &&
				    !(first[k] = malloc(sizeof(double) * (size_t)(c->numel[k] ? c->numel[k] : 1)))) {
					s = cr_errf(err, CR_ENOMEM, "out of memory for the probe");
					goto out;
				} else if (st->slots[k].role == CR_SLOT_OUT) {
					memcpy(first[k], c->got[k], sizeof(double) * (size_t)c->numel[k]);
				}
		} else if (n == calls - 1 && same_outputs(c, st, first)) {
			/* as the stages do: degenerate only where the reference itself
			 * moved (an honest output can be input-independent for one
			 * draw: L2/58's clamp saturates under a large bias, round 3's
			 * last attacker); the selector learns that one bit, never a
			 * reference value */
			int moved = reference_moved(v, c, seed, calls, err);
			if (moved < 0) {
				s = err->status;
				goto out;
			}
			if (moved) {
				vr_fail(v, CHECK_DEGENERATE, "%s: the outputs of calls 1 and %d are identical on "
					"different inputs (they do not depend on the input)", what, calls);
				goto out;
			}
		}
	}
	/* the time of the last call, whose outputs are the ones compared: an
	 * earlier call that skipped or faked its work (its outputs are never
	 * compared) cannot make the probe look fast (round 3's seventh
	 * attacker took the median of three, two of them empty); it is warm,
	 * and its inputs were unknown before it */
	*call_us = (double)ns[n - 1] / 1e3;
out:
	for (int k = 0; k < CR_MAX_SLOTS; k++)
		free(first[k]);
	cr_proc_release(&w);
	return s;
}
