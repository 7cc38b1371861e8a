/* time_cuda.c — timing a verified CUDA candidate on the GPU against
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
 * host code, so its device-side times can be trusted, and there is nothing of
 * the candidate's to freeze on the host: its kernels run only inside the
 * worker's launches, which end with a synchronisation before the reply.
 *
 * Pools, input windows, poison words, guard patterns and the choice of fully
 * checked samples come from the kernel's CSPRNG (cr_secure_u64), never from
 * the run seed. At least MIN_SAMPLES samples whatever the time cap; a full
 * check (guards, pools, inputs, comparison) on the first two, the last and a
 * random quarter. A failure of the baseline's worker, or CUPTI records that
 * are not the plan's launches, fail this row (runtime_error), never the
 * batch. */
#include "checks/stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks/cuda_build.h"
#include "cuda/cuda_dev.h"
#include "cand/cand.h"
#include "tasks/task_rng.h"
#include "timing/timing.h"

#define N_SETS 2
#define MAX_SAMPLES 400
#define MAX_RETAKE 100 /* pairs retaken because the GPU throttled, per row */
#define MIN_SAMPLES 10    /* whatever the time cap */
#define REL_TARGET 0.005  /* 0.5 % relative CI half-width, as nvbench's default spread */

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
	if (access(bpath, F_OK))
		return CR_OK;          /* no GPU baseline for this task */
	if (!(src = cr_read_file(bpath, CR_CAND_MAX_FILE, &len)))
		return cr_errf(err, CR_EIO, "%s: cannot read", bpath);
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
	snprintf(cubin, sizeof cubin, "%s/%s", v->workdir, vb->cubin);
	cr_result_init(&r);
	struct cr_cuda_opts co = { .arch = v->o->arch, .timeout_s = 60 };
	if ((st = check_cuda_build(&vb->plan, bpath, src, len, &co, cubin, &r, err)))
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

/* One side's (candidate's or baseline's) layout for timing: the case, two
 * buffer sets between guard zones, then a pool per input slot holding two
 * tensors' worth of values, from which each sample's inputs are a fresh
 * window (a whole number of rows in), copied on the device. */
struct side {
	struct vr *v;
	struct vr_case c;
	struct cr_proc w;
	size_t sets_end, total;      /* end of the guarded sets; whole region */
	size_t pool_off[CR_MAX_SLOTS];
	int64_t row[CR_MAX_SLOTS];   /* elements per row of an input (its first axis) */
	unsigned char *pool[CR_MAX_SLOTS]; /* host copy of each pool, as stored */
	uint64_t gkey;
};

static void side_init(struct side *s, struct vr *v, uint64_t gkey)
{
	memset(s, 0, sizeof *s);
	s->v = v;
	s->gkey = gkey;
	cr_proc_blank(&s->w);
}

static void side_release(struct side *s)
{
	cr_proc_release(&s->w);
	vr_case_release(&s->c);
	for (int k = 0; k < CR_MAX_SLOTS; k++)
		free(s->pool[k]);
}

static size_t esize(const struct cr_slot *sl)
{
	return task_dtype_size(sl->dtype);
}

/* Sizes the layout (after vr_case_alloc) and creates the shared memory. */
static enum cr_status side_layout(struct side *s, struct cr_err *err)
{
	const struct cr_pstage *st = &s->v->plan.st[CR_FWD];
	const struct task *t = s->v->t;
	size_t off;

	s->sets_end = off = vr_layout(&s->c, N_SETS);
	for (int k = 0; k < s->c.n_slots; k++) {
		int64_t shape[TASK_MAX_RANK];
		if (st->slots[k].role != CR_SLOT_IN)
			continue;
		task_tensor_shape(t, st->slots[k].tensor, &s->c.dims, shape);
		s->row[k] = t->tensors[st->slots[k].tensor].rank > 0 && shape[0] > 0
				    ? s->c.numel[k] / shape[0] : 1;
		if (s->row[k] < 1)
			s->row[k] = 1;
		off = (off + 63) & ~(size_t)63;
		s->pool_off[k] = off;
		off += 2 * s->c.bytes[k];
	}
	s->total = (off + 63) & ~(size_t)63;
	return cr_proc_init(&s->w, s->total, err);
}

/* The candidate's slot k holds the same tensor as the baseline's slot j. */
static int same_slot(const struct cr_pstage *a, int k, const struct cr_pstage *b)
{
	for (int j = 0; j < b->n_slots; j++)
		if (b->slots[j].role == a->slots[k].role && b->slots[j].role != CR_SLOT_SCRATCH &&
		    b->slots[j].tensor == a->slots[k].tensor && b->slots[j].grad == a->slots[k].grad)
			return j;
	return -1;
}

/* The pools: two tensors of fresh values per input, generated once and
 * stored in the region (the first call copies them to the device). */
static enum cr_status fill_pools(struct side *sc, struct side *sb, uint64_t seed, struct cr_err *err)
{
	const struct task *t = sc->v->t;
	const struct cr_pstage *st = &sc->v->plan.st[CR_FWD];

	for (int k = 0; k < sc->c.n_slots; k++) {
		const struct cr_slot *sl = &st->slots[k];
		int64_t n = sc->c.numel[k];
		double *d;
		if (sl->role != CR_SLOT_IN)
			continue;
		if (!(d = malloc(sizeof *d * (size_t)(2 * n + 1))) || !(sc->pool[k] = malloc(2 * sc->c.bytes[k] + 1))) {
			free(d);
			return cr_errf(err, CR_ENOMEM, "out of memory for the timing inputs of %s", t->name);
		}
		task_gen_tensor(t, sl->tensor, &sc->c.dims, TASK_PROF_OWN, task_mix(seed, 2 * (uint64_t)k), d);
		task_gen_tensor(t, sl->tensor, &sc->c.dims, TASK_PROF_OWN, task_mix(seed, 2 * (uint64_t)k + 1), d + n);
		task_gen_store(sl->dtype, d, sc->pool[k], 2 * n);
		free(d);
		memcpy(sc->w.shm + sc->pool_off[k], sc->pool[k], 2 * sc->c.bytes[k]);
		if (sb && sb->v) {
			int j = same_slot(st, k, &sb->v->plan.st[CR_FWD]);
			if (j < 0)
				return cr_errf(err, CR_EINPUT, "the GPU baseline of %s has no input '%s'", t->name, sl->name);
			if (!(sb->pool[j] = malloc(2 * sb->c.bytes[j] + 1)))
				return cr_errf(err, CR_ENOMEM, "out of memory");
			memcpy(sb->pool[j], sc->pool[k], 2 * sc->c.bytes[k]);
			memcpy(sb->w.shm + sb->pool_off[j], sc->pool[k], 2 * sc->c.bytes[k]);
		}
	}
	return CR_OK;
}

/* Host-side contents of a set for a RUN call: input windows at offsets
 * (in rows), poisoned outputs, scratch garbage. */
static void fill_set(struct side *s, int set, const int64_t *rows, uint64_t key)
{
	const struct cr_pstage *st = &s->v->plan.st[CR_FWD];
	for (int k = 0; k < s->c.n_slots; k++) {
		char *b = s->w.shm + s->c.off[set][k];
		if (st->slots[k].role == CR_SLOT_IN)
			memcpy(b, s->pool[k] + (size_t)(rows[k] * s->row[k]) * esize(&st->slots[k]), s->c.bytes[k]);
		else if (st->slots[k].role == CR_SLOT_OUT)
			check_poison(b, s->c.bytes[k], 0, key + (uint64_t)k);
		else
			check_fill_pattern(b, s->c.bytes[k], key ^ 0x5c7a7c4ull ^ (uint64_t)k);
	}
}

/* The time command of a device-input sample. */
static void write_tcmd(struct side *s, int set, const int64_t *rows, uint32_t poison, bool full)
{
	const struct cr_pstage *st = &s->v->plan.st[CR_FWD];
	struct cr_cuda_tcmd *tc = (struct cr_cuda_tcmd *)(s->w.shm + CR_CUDA_TCMD_OFF);
	memset(tc, 0, sizeof *tc);
	tc->magic = CR_CUDA_TCMD_MAGIC;
	tc->full_copy = full;
	tc->poison = poison;
	for (int k = 0; k < s->c.n_slots; k++) {
		if (st->slots[k].role == CR_SLOT_SCRATCH)
			continue;
		tc->e[tc->n].dst = s->c.off[set][k] - CR_SHM_HDR;
		tc->e[tc->n].bytes = s->c.bytes[k];
		if (st->slots[k].role == CR_SLOT_IN) {
			tc->e[tc->n].kind = CR_TCMD_INPUT;
			tc->e[tc->n].src = s->pool_off[k] - CR_SHM_HDR +
					   (size_t)(rows[k] * s->row[k]) * esize(&st->slots[k]);
		} else {
			tc->e[tc->n].kind = CR_TCMD_OUTPUT;
		}
		tc->n++;
	}
}

/* The byte at position x of an output filled with the poison word. */
static unsigned char poison_byte(uint32_t word, size_t x, size_t bytes)
{
	unsigned char w[4];
	memcpy(w, &word, 4);
	return x < bytes / 4 * 4 ? w[x % 4] : 0xff;
}

static bool still_poisoned(const unsigned char *b, size_t bytes, uint32_t word, size_t from, size_t n)
{
	for (size_t x = from; x < from + n; x++)
		if (b[x] != poison_byte(word, x, bytes))
			return false;
	return true;
}

static int64_t sample_ns(const struct cr_reply *r, bool *rejected)
{
	/* CUPTI running (n_kernels >= 0): its sum, or the sample is rejected */
	*rejected = r->n_kernels >= 0 && r->cupti_ns < 0;
	return r->n_kernels >= 0 ? r->cupti_ns : r->event_ns;
}

/* Everything checked of the candidate's outputs after a call (call < 0:
 * warm-up); full: the whole region came back (guards, pools, inputs and the
 * comparison with the baseline), else only the outputs' heads and tails. */
static void check_call(struct side *sc, struct side *sb, int set, const int64_t *rows, uint32_t word,
		       bool device_inputs, bool full, int call)
{
	struct vr *v = sc->v;
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	struct vr_case *c = &sc->c;
	char why[300];

	for (int k = 0; k < c->n_slots; k++) {
		const unsigned char *b = (const unsigned char *)sc->w.shm + c->off[set][k];
		size_t m = c->bytes[k] < CR_CUDA_PROBE ? c->bytes[k] : CR_CUDA_PROBE;
		bool untouched;
		if (st->slots[k].role != CR_SLOT_OUT || !m)
			continue;
		if (device_inputs) {
			untouched = still_poisoned(b, c->bytes[k], word, 0, m) ||
				    still_poisoned(b, c->bytes[k], word, c->bytes[k] - m, m);
		} else {
			unsigned char probe[CR_CUDA_PROBE];
			check_poison(probe, m, 0, 0);
			untouched = !memcmp(b, probe, m);
		}
		if (untouched)
			vr_fail(v, CHECK_STALE_RESULT, "timed call %d: '%s' was not written (still holds its poison)",
				call, st->slots[k].name);
	}
	if (!full)
		return;
	if (!vr_guard_check(c, st, sc->w.shm, N_SETS, sc->sets_end, sc->gkey, why, sizeof why))
		vr_fail(v, CHECK_OUT_OF_BOUNDS, "timed call %d: %s", call, why);
	for (int k = 0; k < c->n_slots; k++) {
		size_t es = esize(&st->slots[k]);
		if (st->slots[k].role != CR_SLOT_IN)
			continue;
		if (memcmp(sc->w.shm + sc->pool_off[k], sc->pool[k], 2 * c->bytes[k]))
			vr_fail(v, CHECK_OUT_OF_BOUNDS, "timed call %d: a write outside the buffers (into the input pool behind them)", call);
		const unsigned char *want = sc->pool[k] + (size_t)(rows[k] * sc->row[k]) * es;
		const unsigned char *got = (const unsigned char *)sc->w.shm + c->off[set][k];
		if (memcmp(got, want, c->bytes[k])) {
			size_t e = 0;
			while (e + 1 < (size_t)c->numel[k] && !memcmp(got + e * es, want + e * es, es))
				e++;
			vr_fail(v, CHECK_INPUT_MUTATED, "timed call %d: input '%s' changed at element %zu", call,
				st->slots[k].name, e);
		}
	}
	if (!sb->v)
		return;
	vr_read_outputs(v, c, sc->w.shm, set, c->got);
	vr_read_outputs(sb->v, &sb->c, sb->w.shm, set, sb->c.got);
	for (int k = 0; k < c->n_slots; k++) {
		int j = same_slot(st, k, &sb->v->plan.st[CR_FWD]);
		struct check_cmp cmp;
		if (st->slots[k].role != CR_SLOT_OUT || j < 0)
			continue;
		/* both are f32 results: twice the task's tolerance */
		check_compare(c->got[k], sb->c.got[j], NULL, c->numel[k], 2 * t->atol, 2 * t->rtol, 0, &cmp);
		if (!cmp.pass)
			vr_fail(v, CHECK_STALE_RESULT,
				"timed call %d: '%s' element %lld: got %.9g, the baseline %.9g for this call's inputs",
				call, st->slots[k].name, (long long)cmp.worst, cmp.got, cmp.exp);
	}
}

enum cr_status vr_time_cuda(struct vr *v, struct cr_result *r, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[CR_FWD];
	struct vr vb;
	struct side sc, sb;
	enum cr_status s = CR_OK;
	double *tc = NULL, *tb = NULL, *ratio = NULL;
	char detail[300], bpath[1100];
	int n = 0, rejected = 0, n_ratio = 0;
	struct timing_rule rule = { .min_samples = v->o->min_samples > MIN_SAMPLES ? v->o->min_samples : MIN_SAMPLES,
				    .max_samples = MAX_SAMPLES, .rel_target = REL_TARGET,
				    .max_seconds = v->o->time_cap_s };
	/* guards, pools, windows, poison words and the choice of fully checked
	 * samples: all from the CSPRNG, nothing from the run seed */
	uint64_t gkey = cr_secure_u64();
	int rej_c = 0, rej_b = 0;
	bool have_base = false, noisy = false, cupti = false;
	/* NVML after every pair: a pair timed while the GPU throttled for
	 * power or heat is retaken (at most MAX_RETAKE times, then kept and
	 * the row marked noisy) */
	bool nvml = true;
	unsigned long long reasons = 0;
	int64_t t0 = cr_now_ns(), rows[CR_MAX_SLOTS], rows_b[CR_MAX_SLOTS];
	enum cr_run res;
	sigset_t pipe_mask;

	timing_pipe_guard_begin(&pipe_mask);
	side_init(&sc, v, gkey);
	side_init(&sb, NULL, cr_secure_u64());
	if ((s = baseline_build(v, &vb, bpath, sizeof bpath, &have_base, err)))
		goto out;
	/* no reference: bench shapes are too large for the double reference;
	 * the baseline's outputs serve */
	if ((s = vr_case_alloc(v, &sc.c, CR_FWD, &t->bench, false, err)) || !sc.c.ready)
		goto out; /* out of memory, or a format_error recorded */
	if (have_base) {
		sb.v = &vb;
		if ((s = vr_case_alloc(&vb, &sb.c, CR_FWD, &t->bench, false, err)))
			goto out;
		if (!sb.c.ready) {
			s = cr_errf(err, CR_EINPUT, "GPU baseline %s: %s", bpath, vb.detail);
			goto out;
		}
	}
	tc = malloc(sizeof *tc * MAX_SAMPLES);
	tb = malloc(sizeof *tb * MAX_SAMPLES);
	ratio = malloc(sizeof *ratio * 2 * MAX_SAMPLES);
	if (!tc || !tb || !ratio) {
		s = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	if ((s = side_layout(&sc, err)) || (have_base && (s = side_layout(&sb, err))))
		goto out;
	if (!vr_write_header(v, &sc.c, sc.w.shm, N_SETS))
		goto out;
	vr_guard_fill(&sc.c, sc.w.shm, N_SETS, sc.sets_end, sc.gkey);
	if (have_base) {
		if (!vr_write_header(&vb, &sb.c, sb.w.shm, N_SETS)) {
			s = cr_errf(err, CR_EINPUT, "GPU baseline %s: %s", bpath, vb.detail);
			goto out;
		}
		vr_guard_fill(&sb.c, sb.w.shm, N_SETS, sb.sets_end, sb.gkey);
	}
	if ((s = fill_pools(&sc, have_base ? &sb : NULL, cr_secure_u64(), err)))
		goto out;
	res = cr_proc_start(&sc.w, "cuda", v->workdir, v->o->call_timeout_s + 30, detail, sizeof detail);
	if (res == CR_RUN_ENV) {
		s = cr_errf(err, CR_EENV, "timing: the candidate's worker: %s", detail);
		goto out;
	}
	if (res != CR_RUN_OK) {
		vr_fail(v, vr_run_verdict(&sc.w, res), "timing: %s", detail);
		goto out;
	}
	if (have_base &&
	    (res = cr_proc_start(&sb.w, "cuda", v->workdir, 60, detail, sizeof detail)) != CR_RUN_OK) {
		/* this row only: see time_cpu.c's base_failed */
		vr_fail(v, CHECK_RUNTIME_ERROR, "timing: the GPU baseline's worker failed at start (%s); not timed",
			detail);
		goto out;
	}
	/* calls -2, -1: warm-up (RUN: the whole region, pools included, goes to
	 * the device; sets from the host), untimed. Then timed samples with
	 * device-side inputs; after the stopping rule, one more call brings
	 * everything back for the last full check. */
	bool last = false;
	for (int i = -N_SETS; ; i++) {
		int set = (i + 2 * N_SETS) % N_SETS;
		bool warm = i < 0;
		bool full = warm || last || i < 2 || (double)(cr_secure_u64() >> 11) * 0x1.0p-53 < 0.25;
		uint32_t word = (i & 1) ? (uint32_t)cr_secure_u64() : 0x7fc0deadu;
		int64_t nsc = 0, nsb = 0;

		for (int k = 0; k < sc.c.n_slots; k++) {
			rows[k] = 0;
			if (st->slots[k].role == CR_SLOT_IN)
				rows[k] = (int64_t)(cr_secure_u64() % (uint64_t)(sc.c.numel[k] / sc.row[k] + 1));
			if (have_base) {
				int j = same_slot(st, k, &vb.plan.st[CR_FWD]);
				if (j >= 0)
					rows_b[j] = rows[k];
			}
		}
		if (warm) {
			fill_set(&sc, set, rows, gkey + (uint64_t)i);
			if (have_base)
				fill_set(&sb, set, rows_b, gkey + (uint64_t)i);
		} else {
			write_tcmd(&sc, set, rows, word, full);
			if (have_base)
				write_tcmd(&sb, set, rows_b, word, full);
		}
		for (int side = 0; side < 2; side++) {
			bool cand = (side == 0) == (i % 2 == 0);
			struct cr_proc *w = cand ? &sc.w : &sb.w;
			bool rej = false;
			if (!cand && !have_base)
				continue;
			res = cr_proc_call(w, warm ? CR_CMD_RUN : CR_CMD_TIME, (uint32_t)set,
					   cand ? v->o->call_timeout_s : 60, NULL, detail, sizeof detail);
			if (res != CR_RUN_OK && !cand) {
				vr_fail(v, CHECK_RUNTIME_ERROR, "timing: the GPU baseline's call %d failed (%s); not timed",
					i, detail);
				goto out;
			}
			if (res != CR_RUN_OK) {
				vr_fail(v, vr_run_verdict(&sc.w, res), "timed call %d: %s", i, detail);
				goto out;
			}
			if (warm || last)
				continue;
			int64_t ns = sample_ns(&w->last, &rej);
			if (w->last.n_kernels >= 0)
				cupti = true;
			if (rej) {
				rejected++;
				if (cand)
					rej_c++;
				else
					rej_b++;
			}
			else if (cand)
				nsc = ns;
			else
				nsb = ns;
			/* CUPTI against the events, both sides */
			if (w->last.n_kernels >= 0 && w->last.cupti_ns > 0 && w->last.event_ns > 0)
				ratio[n_ratio++ % (2 * MAX_SAMPLES)] =
					(double)w->last.event_ns / (double)w->last.cupti_ns;
		}
		check_call(&sc, &sb, set, rows, word, !warm, full, i);
		if (v->status != CHECK_OK || last)
			goto done;
		if (warm) {
			if (i == -1)
				t0 = cr_now_ns();
			continue;
		}
		bool throttled = false;
		if (nvml) {
			struct cr_gpu_sample gs;
			struct cr_err ge;
			cr_err_init(&ge);
			if (cr_cuda_dev_sample(v->o->gpu_bus_id, &gs, &ge)) {
				nvml = false;
			} else {
				if (!r->gpu_sampled || gs.sm_mhz < r->gpu_sm_min_mhz)
					r->gpu_sm_min_mhz = gs.sm_mhz;
				if (gs.sm_mhz > r->gpu_sm_max_mhz)
					r->gpu_sm_max_mhz = gs.sm_mhz;
				if (gs.temp_c > r->gpu_temp_max_c)
					r->gpu_temp_max_c = gs.temp_c;
				r->gpu_mem_mhz = gs.mem_mhz;
				r->gpu_sampled = true;
				reasons |= gs.reasons;
				throttled = gs.throttled;
			}
		}
		if (throttled && r->gpu_retaken < MAX_RETAKE) {
			r->gpu_retaken++;
		} else if (nsc > 0 && (!have_base || nsb > 0)) {
			noisy |= throttled;
			tc[n] = (double)nsc / 1e3;
			tb[n] = have_base ? (double)nsb / 1e3 : tc[n];
			n++;
		}
		/* a row's failure, never the batch's: extra kernels (dynamic
		 * parallelism, other streams) are the candidate's doing */
		if (rejected > 20 && rejected > n) {
			vr_fail(v, CHECK_RUNTIME_ERROR,
				"timing: %d of %d GPU samples rejected (CUPTI records were not the plan's launches: %d the candidate's, %d the baseline's)",
				rejected, n + rejected, rej_c, rej_b);
			goto out;
		}
		if (timing_should_stop(&rule, tc, n, tb, n, (double)(cr_now_ns() - t0) / 1e9, &noisy) &&
		    n >= 2)
			last = true;
	}
done:
	if (v->status != CHECK_OK)
		goto out;
	{
		struct timing_stats sct, sbt;
		/* the raw samples, in time order, for samples.csv (the gate) */
		r->n_raw = n < CR_RAW_MAX ? n : CR_RAW_MAX;
		for (int i = 0; i < r->n_raw; i++) {
			r->raw_cand_us[i] = (float)tc[i];
			r->raw_base_us[i] = (float)tb[i];
		}
		timing_summarize(tc, n, task_mix(v->o->seed, 1), &sct);
		r->time_us = sct.median;
		r->time_lo_us = sct.lo;
		r->time_hi_us = sct.hi;
		if (have_base) {
			timing_summarize(tb, n, task_mix(v->o->seed, 2), &sbt);
			r->baseline_us = sbt.median;
			timing_speedup(tb, tc, n, task_mix(v->o->seed, 3), &r->speedup, &r->speedup_lo,
				       &r->speedup_hi);
		}
		r->samples = n;
		r->noisy = noisy;
		if (noisy)
			snprintf(r->noisy_why, sizeof r->noisy_why, "%s",
				 r->gpu_retaken >= MAX_RETAKE ? "the GPU throttled through every retake"
							     : "spread above target at the time cap");
		if (r->gpu_sampled)
			cr_cuda_reasons_str(reasons, r->gpu_reasons, sizeof r->gpu_reasons);
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
		snprintf(v->detail, sizeof v->detail, "timed by %s over %d samples%s%s", cupti ? "CUPTI" : "CUDA events",
			 n, rejected ? " (some rejected)" : "", have_base ? "" : "; no GPU baseline for this task");
		if (r->gpu_retaken) {
			size_t l = strlen(v->detail);
			snprintf(v->detail + l, sizeof v->detail - l, "; %d sample(s) retaken: the GPU throttled (%s)%s",
				 r->gpu_retaken, r->gpu_reasons, r->gpu_retaken >= MAX_RETAKE ? ", then kept: noisy" : "");
		}
		if (n_ratio > 0) {
			size_t l = strlen(v->detail);
			snprintf(v->detail + l, sizeof v->detail - l, "; events/CUPTI median %.3f",
				 timing_median(ratio, n_ratio));
		}
	}
out:
	side_release(&sc);
	side_release(&sb);
	free(tc);
	free(tb);
	free(ratio);
	if (vb.own_plan)
		cr_plan_release(&vb.plan);
	timing_pipe_guard_end(&pipe_mask);
	return s;
}
