/* verify_time_cuda.c — timing a verified CUDA candidate on the GPU against
 * the task's GPU baseline (data/baselines/cuda/TASK.cu, our own kernels in
 * the candidate format, run by the same kind of worker).
 *
 * Shape: the task's GPU bench shape. Two workers (candidate, baseline),
 * called alternately, each on two buffer sets. Every sample gets fresh
 * input values and freshly poisoned outputs (written on the host and copied
 * in outside the timed window), an L2 flush (memset of max(2 x L2, 256 MiB)),
 * then the launches alone are timed: by CUPTI's kernel records (the sum of
 * the plan's kernel durations; a sample whose records are not exactly the
 * plan's launches is rejected) and by CUDA events around the launches (the
 * fallback without CUPTI, and the cross-check). After every sample the
 * candidate's outputs are checked on the host: not written (poison still
 * there), guard zones, inputs intact, and agreement with the baseline's
 * outputs for the same inputs (at bench shapes the baseline is the
 * reference; it is itself checked against the double reference on the
 * check shapes by tests/cuda). The worker is our code: the candidate has no
 * host code, so its device-side times can be trusted. */
#include "harness/verify_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/backend.h"
#include "harness/cand.h"
#include "tasks/task_rng.h"
#include "timing/timing.h"

#define N_SETS 2
#define MAX_SAMPLES 400
#define REL_TARGET 0.005  /* 0.5 % relative CI half-width, as nvbench's default spread */

/* Sizes and input arrays (no reference: bench shapes are too large for the
 * double reference; the baseline's outputs serve). */
static bool case_alloc(struct vr *v, struct vr_case *c, const struct task_dimset *d)
{
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	size_t total = 0;
	double *m;

	memset(c, 0, sizeof *c);
	if (!vr_case_sizes(v, c, CR_FWD, d))
		return false;
	for (int k = 0; k < st->n_slots; k++)
		if (st->slots[k].role != CR_SLOT_SCRATCH)
			total += (size_t)c->numel[k] * (st->slots[k].role == CR_SLOT_IN ? 1 : 2);
	if (!(m = malloc(sizeof(double) * (total + 1))))
		return false;
	c->mem = m;
	for (int k = 0; k < st->n_slots; k++) {
		if (st->slots[k].role == CR_SLOT_IN) {
			c->in[k] = m;
			m += c->numel[k];
		} else if (st->slots[k].role == CR_SLOT_OUT) {
			c->got[k] = m; m += c->numel[k];
			c->ref[k] = m; m += c->numel[k];
		}
	}
	c->ready = true;
	return true;
}

/* The baseline's slot holding the same tensor (and gradient flag) as the
 * candidate's slot k, or -1. */
static int same_slot(const struct cr_pstage *a, int k, const struct cr_pstage *b)
{
	for (int j = 0; j < b->n_slots; j++)
		if (b->slots[j].role == a->slots[k].role && b->slots[j].role != CR_SLOT_SCRATCH &&
		    b->slots[j].tensor == a->slots[k].tensor && b->slots[j].grad == a->slots[k].grad)
			return j;
	return -1;
}

/* Binds and compiles the task's GPU baseline into vb (workdir/base.cubin).
 * false when the task has none (*why says so) or it fails to build (an
 * environment error in err). */
static enum cr_status baseline_build(struct vr *v, struct vr *vb, char *bpath, size_t bcap,
				     bool *have, struct cr_err *err)
{
	struct cr_cand cand;
	struct cr_result r;
	struct cr_err e2;
	size_t len = 0;
	char *src = NULL, cubin[700];
	FILE *f;
	enum cr_status st = CR_OK;

	*have = false;
	memset(vb, 0, sizeof *vb);
	vb->t = v->t;
	vb->o = v->o;
	vb->cuda = true;
	vb->trusted = true;
	vb->status = CHECK_OK;
	snprintf(vb->workdir, sizeof vb->workdir, "%s", v->workdir);
	snprintf(vb->cubin, sizeof vb->cubin, "base.cubin");
	if (!v->o->baseline_dir)
		return CR_OK;
	snprintf(bpath, bcap, "%s/%s.cu", v->o->baseline_dir, v->t->name);
	vb->path = bpath;
	if (!(f = fopen(bpath, "rb")))
		return CR_OK;
	if (fseek(f, 0, SEEK_END) || (len = (size_t)ftell(f)) > (8u << 20) || fseek(f, 0, SEEK_SET) ||
	    !(src = malloc(len + 1)) || fread(src, 1, len, f) != len) {
		fclose(f);
		free(src);
		return cr_errf(err, CR_EIO, "%s: cannot read", bpath);
	}
	fclose(f);
	src[len] = '\0';
	cr_err_init(&e2);
	memset(&cand, 0, sizeof cand);
	if (cr_cand_parse(&cand, bpath, src, len, &e2)) {
		cr_cand_release(&cand);
		st = cr_errf(err, CR_EINPUT, "GPU baseline %s", e2.msg);
		goto out;
	}
	vb->own_plan = true; /* the plan owns the parsed candidate from here */
	if (cr_plan_bind(&vb->plan, v->t, &cand, bpath, &e2)) {
		st = cr_errf(err, CR_EINPUT, "GPU baseline %s", e2.msg);
		goto out;
	}
	snprintf(cubin, sizeof cubin, "%s/base.cubin", v->workdir);
	cr_result_init(&r);
	if ((st = cr_backend_cuda_build(v->t, bpath, src, len, v->o->arch, cubin, &r, err)))
		goto out;
	if (r.status != CHECK_OK) {
		st = cr_errf(err, CR_EINPUT, "GPU baseline %s: %s: %s", bpath, check_verdict_name(r.status),
			     r.detail);
		goto out;
	}
	*have = true;
out:
	free(src);
	return st;
}

static int64_t sample_ns(const struct cr_reply *r, bool *rejected)
{
	/* CUPTI running (n_kernels >= 0): its sum, or the sample is rejected */
	*rejected = r->n_kernels >= 0 && r->cupti_ns < 0;
	return r->n_kernels >= 0 ? r->cupti_ns : r->event_ns;
}

enum cr_status vr_time_cuda(struct vr *v, struct cr_result *r, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	struct vr vb;
	struct cr_proc wc, wb;
	struct vr_case c, cb;
	enum cr_status s = CR_OK;
	double *tc = NULL, *tb = NULL, *ratio = NULL;
	char detail[300], why[300], bpath[1100];
	size_t total_c, total_b = 0;
	int n = 0, rejected = 0, n_ratio = 0;
	struct task_rng rng;
	struct timing_rule rule = { .min_samples = v->o->min_samples, .max_samples = MAX_SAMPLES,
				    .rel_target = REL_TARGET, .max_seconds = v->o->time_cap_s };
	uint64_t gkey = task_mix(v->o->seed, 0x6c2d);
	bool have_base = false, noisy = false, cupti = false;
	int64_t t0 = cr_now_ns();
	enum cr_run res;

	memset(&c, 0, sizeof c);
	memset(&cb, 0, sizeof cb);
	memset(&wc, 0, sizeof wc);
	memset(&wb, 0, sizeof wb);
	wc.pid = wb.pid = -1;
	wc.shm_fd = wb.shm_fd = wc.cmd_fd = wb.cmd_fd = wc.rep_fd = wb.rep_fd = wc.log_fd = wb.log_fd = -1;
	if ((s = baseline_build(v, &vb, bpath, sizeof bpath, &have_base, err)))
		goto out_plan;
	if (!case_alloc(v, &c, &t->bench)) {
		if (v->status == CHECK_OK)
			s = cr_errf(err, CR_ENOMEM, "out of memory for the bench shape of %s", t->name);
		goto out_plan;
	}
	if (have_base && !case_alloc(&vb, &cb, &t->bench)) {
		s = cr_errf(err, CR_EINPUT, "GPU baseline %s: %s", bpath, vb.detail[0] ? vb.detail : "out of memory");
		goto out_plan;
	}
	tc = malloc(sizeof *tc * MAX_SAMPLES);
	tb = malloc(sizeof *tb * MAX_SAMPLES);
	ratio = malloc(sizeof *ratio * 2 * MAX_SAMPLES);
	if (!tc || !tb || !ratio) {
		s = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	total_c = vr_layout(&c, N_SETS);
	if ((s = cr_proc_init(&wc, total_c, err)))
		goto out;
	if (!vr_write_header(v, &c, wc.shm, N_SETS))
		goto out;
	vr_guard_fill(&c, wc.shm, N_SETS, total_c, gkey);
	if (have_base) {
		total_b = vr_layout(&cb, N_SETS);
		if ((s = cr_proc_init(&wb, total_b, err)))
			goto out;
		if (!vr_write_header(&vb, &cb, wb.shm, N_SETS)) {
			s = cr_errf(err, CR_EINPUT, "GPU baseline %s: %s", bpath, vb.detail);
			goto out;
		}
		vr_guard_fill(&cb, wb.shm, N_SETS, total_b, gkey ^ 1);
	}
	res = cr_proc_start(&wc, "cuda", v->workdir, v->o->call_timeout_s + 30, detail, sizeof detail);
	if (res != CR_RUN_OK) {
		vr_fail(v, res == CR_RUN_TIMEOUT ? CHECK_TIMEOUT : CHECK_RUNTIME_ERROR, "timing: %s", detail);
		goto out;
	}
	if (have_base &&
	    (res = cr_proc_start(&wb, "cuda", v->workdir, 60, detail, sizeof detail)) != CR_RUN_OK) {
		s = cr_errf(err, CR_EENV, "%s: the GPU baseline's worker failed: %s", t->name, detail);
		goto out;
	}
	task_rng_seed(&rng, task_mix(v->o->seed, 0x71e6));
	/* warm-up: one untimed call per side and set (module load, clocks) */
	for (int i = -N_SETS; ; i++) {
		int set = (i + 2 * N_SETS) % N_SETS;
		uint64_t key = task_rng_next(&rng);
		bool warm = i < 0;
		int64_t nsc = 0, nsb = 0;

		for (int k = 0; k < c.n_slots; k++)
			if (st->slots[k].role == CR_SLOT_IN)
				task_gen_tensor(t, st->slots[k].tensor, &c.dims, TASK_PROF_OWN, key, c.in[k]);
		vr_fill_buffers(v, &c, wc.shm, set, i & 1, key);
		if (have_base) {
			for (int k = 0; k < c.n_slots; k++) {
				int j = same_slot(st, k, &vb.plan.st[CR_FWD]);
				if (st->slots[k].role == CR_SLOT_IN && j >= 0)
					memcpy(cb.in[j], c.in[k], sizeof(double) * (size_t)c.numel[k]);
			}
			vr_fill_buffers(&vb, &cb, wb.shm, set, i & 1, key);
		}
		for (int side = 0; side < 2; side++) {
			bool cand = (side == 0) == (i % 2 == 0);
			struct cr_proc *w = cand ? &wc : &wb;
			bool rej = false;
			if (!cand && !have_base)
				continue;
			res = cr_proc_call(w, warm ? CR_CMD_RUN : CR_CMD_TIME, (uint32_t)set,
					   cand ? v->o->call_timeout_s : 60, NULL, detail, sizeof detail);
			if (res != CR_RUN_OK && !cand) {
				s = cr_errf(err, CR_EENV, "%s: GPU baseline call failed: %s", t->name, detail);
				goto out;
			}
			if (res == CR_RUN_FAULT && wc.fault >= 0 && wc.fault < CHECK_OK) {
				vr_fail(v, (enum check_verdict)wc.fault, "timed call %d: %s", i, detail);
				goto out;
			}
			if (res != CR_RUN_OK) {
				vr_fail(v, res == CR_RUN_TIMEOUT ? CHECK_TIMEOUT : CHECK_RUNTIME_ERROR,
					"timed call %d: %s", i, detail);
				goto out;
			}
			if (warm)
				continue;
			int64_t ns = sample_ns(&w->last, &rej);
			if (w->last.n_kernels >= 0)
				cupti = true;
			if (rej)
				rejected++;
			else if (cand)
				nsc = ns;
			else
				nsb = ns;
			/* CUPTI against the events, both sides */
			if (w->last.n_kernels >= 0 && w->last.cupti_ns > 0 && w->last.event_ns > 0)
				ratio[n_ratio++ % (2 * MAX_SAMPLES)] =
					(double)w->last.event_ns / (double)w->last.cupti_ns;
		}
		/* the candidate's outputs of this call, checked on the host */
		if (!vr_guard_check(&c, st, wc.shm, N_SETS, total_c, gkey, why, sizeof why))
			vr_fail(v, CHECK_OUT_OF_BOUNDS, "timed call %d: %s", i, why);
		if (!vr_inputs_intact(v, &c, wc.shm, set, why, sizeof why))
			vr_fail(v, CHECK_INPUT_MUTATED, "timed call %d: %s", i, why);
		for (int k = 0; k < c.n_slots; k++) {
			unsigned char probe[64];
			size_t m = c.bytes[k] < sizeof probe ? c.bytes[k] : sizeof probe;
			if (st->slots[k].role != CR_SLOT_OUT || !m)
				continue;
			check_poison(probe, m, i & 1, key + (uint64_t)k);
			if (!memcmp(wc.shm + c.off[set][k], probe, m))
				vr_fail(v, CHECK_STALE_RESULT, "timed call %d: '%s' was not written (still holds its poison)",
					i, st->slots[k].name);
		}
		if (have_base) {
			vr_read_outputs(v, &c, wc.shm, set, c.got);
			vr_read_outputs(&vb, &cb, wb.shm, set, cb.got);
			for (int k = 0; k < c.n_slots; k++) {
				int j = same_slot(st, k, &vb.plan.st[CR_FWD]);
				struct check_cmp cmp;
				if (st->slots[k].role != CR_SLOT_OUT || j < 0)
					continue;
				/* both are f32 results: twice the task's tolerance */
				check_compare(c.got[k], cb.got[j], NULL, c.numel[k], 2 * t->atol, 2 * t->rtol, 0, &cmp);
				if (!cmp.pass)
					vr_fail(v, CHECK_STALE_RESULT,
						"timed call %d: '%s' element %lld: got %.9g, the baseline %.9g for this call's inputs",
						i, st->slots[k].name, (long long)cmp.worst, cmp.got, cmp.exp);
			}
		}
		if (v->status != CHECK_OK)
			goto out;
		if (warm) {
			if (i == -1)
				t0 = cr_now_ns();
			continue;
		}
		if (nsc > 0 && (!have_base || nsb > 0)) {
			tc[n] = (double)nsc / 1e3;
			tb[n] = have_base ? (double)nsb / 1e3 : tc[n];
			n++;
		}
		if (rejected > 20 && rejected > n) {
			s = cr_errf(err, CR_EENV, "%s: %d of %d GPU samples rejected (CUPTI records were not the plan's launches)",
				    t->name, rejected, n + rejected);
			goto out;
		}
		if (timing_should_stop(&rule, tc, n, tb, n, (double)(cr_now_ns() - t0) / 1e9, &noisy) &&
		    n >= 2)
			break;
	}
	{
		struct timing_stats sc, sb;
		timing_summarize(tc, n, task_mix(v->o->seed, 1), &sc);
		r->time_us = sc.median;
		r->time_lo_us = sc.lo;
		r->time_hi_us = sc.hi;
		if (have_base) {
			timing_summarize(tb, n, task_mix(v->o->seed, 2), &sb);
			r->baseline_us = sb.median;
			timing_speedup(tb, n, tc, n, task_mix(v->o->seed, 3), &r->speedup, &r->speedup_lo,
				       &r->speedup_hi);
		}
		r->samples = n;
		r->noisy = noisy;
		r->timed = true;
		task_dims_str(t, &t->bench, r->dims, sizeof r->dims);
		/* roofline: the task's flops and bytes at the bench shape against the
		 * device's peaks; the bound is the slower of the two */
		double fl = 0, by = 0, sec = r->time_us * 1e-6, roof = 0;
		bool hf = cr_task_metric(t, t->flops, &t->bench, &fl), hb = cr_task_metric(t, t->bytes, &t->bench, &by);
		if (hf && sec > 0)
			r->tflops = fl / sec / 1e12;
		if (hb && sec > 0)
			r->tbps = by / sec / 1e12;
		if (hf && v->o->peak_tflops > 0)
			roof = fl / (v->o->peak_tflops * 1e12);
		if (hb && v->o->peak_tbps > 0 && by / (v->o->peak_tbps * 1e12) > roof)
			roof = by / (v->o->peak_tbps * 1e12);
		if (roof > 0 && sec > 0)
			r->roofline = roof / sec;
		if (n_ratio > 2 * MAX_SAMPLES)
			n_ratio = 2 * MAX_SAMPLES;
		snprintf(v->detail, sizeof v->detail, "timed by %s over %d samples%s%s%s", cupti ? "CUPTI" : "CUDA events",
			 n, rejected ? " (some rejected)" : "", have_base ? "" : "; no GPU baseline for this task",
			 "");
		if (n_ratio > 0) {
			size_t l = strlen(v->detail);
			snprintf(v->detail + l, sizeof v->detail - l, "; events/CUPTI median %.3f",
				 timing_median(ratio, n_ratio));
		}
	}
out:
	cr_proc_release(&wc);
	cr_proc_release(&wb);
	vr_case_release(&c);
	vr_case_release(&cb);
	free(tc);
	free(tb);
	free(ratio);
out_plan:
	if (vb.own_plan)
		cr_plan_release(&vb.plan);
	return s;
}
