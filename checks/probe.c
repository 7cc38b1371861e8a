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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/task_gen.h"
#include "tasks/task_rng.h"

/* The first element of an output (bytes at b, numel elements) whose bytes
 * are still the poison vr_fill_buffers wrote there (kind 0), -1 if none,
 * -2 out of memory. */
static int64_t unwritten(const char *b, size_t bytes, int64_t numel)
{
	size_t es = numel > 0 ? bytes / (size_t)numel : 0;
	unsigned char *img;
	int64_t at = -1;

	if (!es)
		return -1;
	if (!(img = malloc(bytes)))
		return -2;
	check_poison(img, bytes, 0, 0);
	for (int64_t i = 0; i < numel && at < 0; i++)
		if (!memcmp(b + (size_t)i * es, img + (size_t)i * es, es))
			at = i;
	free(img);
	return at;
}

enum cr_status vr_probe_run(struct vr *v, uint64_t seed, int calls, struct vr_case *c,
			    double *call_us, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	int64_t ns[VR_PROBE_MAX_CALLS];
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
		for (int k = 0; k < c->n_slots; k++)
			if (st->slots[k].role == CR_SLOT_IN)
				task_gen_tensor(t, st->slots[k].tensor, &c->dims, TASK_PROF_OWN,
						n ? task_mix(seed, (uint64_t)n) : seed, c->in[k]);
		vr_fill_buffers(v, c, w.shm, 0, 0, cr_secure_u64());
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
			int64_t i = st->slots[k].role == CR_SLOT_OUT ? unwritten(w.shm + c->off[0][k], c->bytes[k],
										 c->numel[k]) : -1;
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
	}
	/* the time of the last call, whose outputs are the ones compared: an
	 * earlier call that skipped or faked its work (its outputs are never
	 * compared) cannot make the probe look fast (round 3's seventh
	 * attacker took the median of three, two of them empty); it is warm,
	 * and its inputs were unknown before it */
	*call_us = (double)ns[n - 1] / 1e3;
out:
	cr_proc_release(&w);
	return s;
}
