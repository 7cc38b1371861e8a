/* case.c — the pieces every stage shares (checks/stage.c, timing/): the
 * results row's initial state, the first-failure rule, the shared-memory
 * layout with its guard zones, a case's inputs, reference and f32 baseline
 * outputs (computed here, never in a worker), its conditioning when a
 * comparison is about to fail (vr_case_cond, checks/cond.c), the header a worker reads,
 * poisoned outputs, reading outputs back and checking inputs intact. */
#include "checks/stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_dev.h"
#include "checks/cond.h"
#include "tasks/task_gen.h"
#include "tasks/task_rng.h"

void cr_result_init(struct cr_result *r)
{
	memset(r, 0, sizeof *r);
	r->status = CHECK_OK;
	snprintf(r->backward, sizeof r->backward, "none");
	r->max_abs_err = r->max_rel_err = r->err_vs_baseline = NAN;
	r->time_us = r->time_lo_us = r->time_hi_us = r->baseline_us = NAN;
	r->speedup = r->speedup_lo = r->speedup_hi = NAN;
	r->tflops = r->tbps = r->roofline = NAN;
	r->gpu = -1;
}

/* Records a failure if it ranks before what is already recorded. */
void vr_fail(struct vr *v, enum check_verdict s, const char *fmt, ...)
{
	va_list ap;
	if (s >= v->status)
		return;
	v->status = s;
	va_start(ap, fmt);
	vsnprintf(v->detail, sizeof v->detail, fmt, ap);
	va_end(ap);
}

/* ---- layout ---- */

static size_t align64(size_t x)
{
	return (x + 63) & ~(size_t)63;
}

/* Lays out n_sets copies of every slot after the header, each between
 * guard zones; returns the total size. */
size_t vr_layout(struct vr_case *c, int n_sets)
{
	size_t off = CR_SHM_HDR;
	for (int s = 0; s < n_sets; s++)
		for (int k = 0; k < c->n_slots; k++) {
			off = align64(off + CR_GUARD);
			c->off[s][k] = off;
			off += c->bytes[k];
		}
	return align64(off + CR_GUARD);
}

/* Fills the gaps between buffers (guards) with the key's pattern. */
void vr_guard_fill(struct vr_case *c, char *shm, int n_sets, size_t total, uint64_t key)
{
	size_t prev = CR_SHM_HDR;
	for (int s = 0; s < n_sets; s++)
		for (int k = 0; k < c->n_slots; k++) {
			check_fill_pattern(shm + prev, c->off[s][k] - prev, key ^ prev);
			prev = c->off[s][k] + c->bytes[k];
		}
	check_fill_pattern(shm + prev, total - prev, key ^ prev);
}

/* Verifies the guards; names the buffer whose neighbourhood was written. */
bool vr_guard_check(struct vr_case *c, const struct cr_pstage *st, char *shm, int n_sets,
		    size_t total, uint64_t key, char *why, size_t cap)
{
	size_t prev = CR_SHM_HDR;
	for (int s = 0; s <= n_sets; s++)
		for (int k = 0; k < (s < n_sets ? c->n_slots : 1); k++) {
			size_t end = s < n_sets ? c->off[s][k] : total;
			int64_t bad = check_verify_pattern(shm + prev, end - prev, key ^ prev);
			if (bad >= 0) {
				/* before buffer k, or after the previous one */
				int64_t from_prev = bad, to_next = (int64_t)(end - prev) - bad;
				if (s < n_sets && to_next <= from_prev)
					snprintf(why, cap, "write %lld bytes before the start of '%s'",
						 (long long)to_next, st->slots[k].name);
				else if (k > 0 || s > 0) {
					int pk = k > 0 ? k - 1 : c->n_slots - 1;
					snprintf(why, cap, "write %lld bytes past the end of '%s'",
						 (long long)from_prev + 1, st->slots[pk].name);
				} else
					snprintf(why, cap, "write in the guard zone before '%s'",
						 st->slots[0].name);
				return false;
			}
			if (s < n_sets)
				prev = c->off[s][k] + c->bytes[k];
		}
	return true;
}

/* ---- references ---- */

/* ---- the reference cache ----
 * A case of a listed shape under a fixed profile has the same inputs for
 * every candidate of a task in a run (its seed is the run's, the stage's,
 * the shape's and the profile's), so its double reference and f32 baseline
 * executions are kept and reused: computed once per process, not once per
 * candidate. Drawn shapes and drawn profiles (fresh from the CSPRNG for each
 * candidate) are never kept. Only the orchestrator holds the cache: a
 * worker gets copies of the inputs in its shared memory, as on a miss.
 * Least recently used entries go first beyond CR_REF_CACHE_BYTES (override:
 * $CRUCIBLE_REF_CACHE_MB, 0 turns it off). One thread verifies at a time
 * in a process (eval's loop, an eval job, run's main thread): the cache has
 * no lock. */
#define CR_REF_CACHE_BYTES (2048ll << 20)
#define CR_REF_CACHE_MAX 512

struct ref_entry {
	char task[128];
	bool bwd;
	enum task_profile prof;
	uint64_t seed;
	struct task_dimset dims;
	struct task_exec xd, xf;  /* the task's tensors only (values and gradients), in mem */
	void *mem;
	long long bytes;
	uint64_t used;
};

static struct {
	struct ref_entry e[CR_REF_CACHE_MAX];
	int n;
	long long bytes, cap;
	uint64_t tick;
	long long hits, misses;
	bool init;
} refc;

static long long ref_cap(void)
{
	if (!refc.init) {
		const char *m = getenv("CRUCIBLE_REF_CACHE_MB");
		long long phys = (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
		char *end;
		long long mb;
		refc.init = true;
		/* 2 GiB, or an eighth of the memory on a small machine */
		refc.cap = phys > 0 && phys / 8 < CR_REF_CACHE_BYTES ? phys / 8 : CR_REF_CACHE_BYTES;
		if (m && *m && (mb = strtoll(m, &end, 10)) >= 0 && !*end)
			refc.cap = mb << 20;
	}
	return refc.cap;
}

/* The bytes of x's tensors (values and gradients; not the intermediates)
 * and of their value tables. */
static long long exec_bytes(const struct task_exec *x)
{
	long long b = 2 * (long long)x->t->n_tensors * (long long)sizeof *x->v;
	size_t es = x->dbl ? sizeof(double) : sizeof(float);
	for (int i = 0; i < x->t->n_tensors; i++) {
		if (x->v[i].d)
			b += x->v[i].n * (long long)es;
		if (x->g[i].d)
			b += x->g[i].n * (long long)es;
	}
	return b;
}

/* Copies x's tensors into *out, their value tables (tensors only) and
 * arrays carved from mem at *off (8-byte aligned: tables first, then
 * doubles, or floats last). */
static void exec_compact(const struct task_exec *x, struct task_exec *out, char *mem, size_t *off)
{
	size_t es = x->dbl ? sizeof(double) : sizeof(float), nt = (size_t)x->t->n_tensors;
	memset(out, 0, sizeof *out);
	out->t = x->t;
	out->dims = x->dims;
	out->dbl = x->dbl;
	out->v = (struct task_val *)(mem + *off);
	out->g = out->v + nt;
	*off += 2 * nt * sizeof *out->v;
	for (int i = 0; i < x->t->n_tensors; i++)
		for (int g = 0; g < 2; g++) {
			const struct task_val *src = g ? &x->g[i] : &x->v[i];
			struct task_val *dst = g ? &out->g[i] : &out->v[i];
			*dst = *src;
			if (!src->d)
				continue;
			dst->d = mem + *off;
			memcpy(dst->d, src->d, (size_t)src->n * es);
			*off += (size_t)src->n * es;
		}
}

static struct ref_entry *ref_find(const struct task *t, bool bwd, enum task_profile prof,
				  uint64_t seed, const struct task_dimset *d)
{
	for (int i = 0; i < refc.n; i++) {
		struct ref_entry *e = &refc.e[i];
		if (e->bwd == bwd && e->prof == prof && e->seed == seed &&
		    !memcmp(&e->dims, d, sizeof *d) && !strcmp(e->task, t->name)) {
			e->used = ++refc.tick;
			refc.hits++;
			return e;
		}
	}
	return NULL;
}

static void ref_drop(int i)
{
	refc.bytes -= refc.e[i].bytes;
	free(refc.e[i].mem);
	refc.e[i] = refc.e[--refc.n];
}

/* Keeps a copy of xd's and xf's tensors when they fit. */
static void ref_keep(const struct task *t, bool bwd, enum task_profile prof, uint64_t seed,
		     const struct task_dimset *d, const struct task_exec *xd,
		     const struct task_exec *xf)
{
	long long b = exec_bytes(xd) + exec_bytes(xf), cap = ref_cap();
	struct ref_entry *e;
	size_t off = 0;
	char *mem;

	if (b > cap / 8 || !(mem = malloc((size_t)(b ? b : 1))))
		return;   /* one case may not crowd out the rest */
	while (refc.n && (refc.n == CR_REF_CACHE_MAX || refc.bytes + b > cap)) {
		int lru = 0;
		for (int i = 1; i < refc.n; i++)
			if (refc.e[i].used < refc.e[lru].used)
				lru = i;
		ref_drop(lru);
	}
	e = &refc.e[refc.n++];
	snprintf(e->task, sizeof e->task, "%s", t->name);
	e->bwd = bwd;
	e->prof = prof;
	e->seed = seed;
	e->dims = *d;
	e->mem = mem;
	exec_compact(xd, &e->xd, mem, &off);
	exec_compact(xf, &e->xf, mem, &off);
	e->bytes = b;
	e->used = ++refc.tick;
	refc.bytes += b;
}

void vr_ref_cache_share(int n)
{
	if (n > 1)
		refc.cap = ref_cap() / n;
}

void vr_ref_cache_stats(long long *hits, long long *misses)
{
	*hits = refc.hits;
	*misses = refc.misses;
}

/* The output gradients of a backward case: N(0, 1) rounded to float, one
 * stream from the case seed over every output in order (into xd->g). */
static void case_dy(const struct task *t, uint64_t seed, struct task_exec *xd)
{
	struct task_rng r;
	task_rng_seed(&r, task_mix(seed, 0xd0u));
	for (int i = 0; i < t->n_tensors; i++) {
		double *dy = xd->g[i].d;
		if (t->tensors[i].role != TASK_OUTPUT)
			continue;
		for (int64_t k = 0; k < xd->v[i].n; k++)
			dy[k] = (float)task_rng_normal(&r);
	}
}

/* The inputs and params of a case as drawn from its seed, into xd (double). */
static void case_inputs(const struct task *t, const struct vr_case *c, uint64_t seed,
			struct task_exec *xd)
{
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role != TASK_OUTPUT)
			task_gen_tensor(t, i, &c->dims, c->prof, seed, xd->v[i].d);
}

/* The double reference and the f32 baseline of case c executed: inputs
 * drawn, forward (and backward, its output gradients drawn) run. */
static enum cr_status case_execute(struct vr *v, struct vr_case *c, uint64_t seed,
				   struct task_exec *xd, struct task_exec *xf, struct cr_err *err)
{
	const struct task *t = v->t;
	enum cr_status st_;
	bool bwd = c->stage == CR_BWD;

	if ((st_ = task_exec_init(xd, t, &c->dims, true, bwd, err)))
		return st_;
	if ((st_ = task_exec_init(xf, t, &c->dims, false, bwd, err))) {
		task_exec_release(xd);
		return st_;
	}
	case_inputs(t, c, seed, xd);
	for (int i = 0; i < t->n_tensors; i++) {
		if (t->tensors[i].role == TASK_OUTPUT)
			continue;
		for (int64_t k = 0; k < xd->v[i].n; k++)
			((float *)xf->v[i].d)[k] = (float)((double *)xd->v[i].d)[k];
	}
	task_exec_forward(xd);
	task_exec_forward(xf);
	if (bwd) {
		case_dy(t, seed, xd);
		for (int i = 0; i < t->n_tensors; i++) {
			double *y = xd->v[i].d, *dy = xd->g[i].d;
			float *dyf = xf->g[i].d;
			if (t->tensors[i].role != TASK_OUTPUT)
				continue;
			/* the backward reads the reference forward outputs as f32 */
			task_gen_round(t->tensors[i].dtype, y, xd->v[i].n);
			for (int64_t k = 0; k < xd->v[i].n; k++) {
				dyf[k] = (float)dy[k];
				((float *)xf->v[i].d)[k] = (float)y[k];
			}
		}
		task_exec_backward(xd);
		task_exec_backward(xf);
	}
	return CR_OK;
}

/* Fills the double values of every input slot of case c and computes the
 * reference outputs (ref[]) and the f32 baseline's outputs (base[]), or
 * takes them from the cache (v->cache_case: a listed shape, a fixed
 * profile). */
static enum cr_status case_generate(struct vr *v, struct vr_case *c, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[c->stage];
	struct task_exec xd_own, xf_own, *xdp = &xd_own, *xfp = &xf_own;
	enum cr_status st_ = CR_OK;
	bool bwd = c->stage == CR_BWD, cache = v->cache_case && ref_cap() > 0, owned = true;
	uint64_t seed = task_mix(v->o->seed, c->seed);
	struct ref_entry *hit = cache ? ref_find(t, bwd, c->prof, seed, &c->dims) : NULL;

	if (hit) {
		xdp = &hit->xd;
		xfp = &hit->xf;
		owned = false;
	} else if (refc.misses++, (st_ = case_execute(v, c, seed, xdp, xfp, err))) {
		return st_;
	}
	for (int k = 0; k < c->n_slots; k++) {
		const struct cr_slot *sl = &st->slots[k];
		if (sl->role == CR_SLOT_SCRATCH)
			continue;
		const struct task_val *src = sl->grad ? &xdp->g[sl->tensor] : &xdp->v[sl->tensor];
		const struct task_val *fsrc = sl->grad ? &xfp->g[sl->tensor] : &xfp->v[sl->tensor];
		if (sl->role == CR_SLOT_IN) {
			memcpy(c->in[k], src->d, sizeof(double) * (size_t)c->numel[k]);
		} else {
			memcpy(c->ref[k], src->d, sizeof(double) * (size_t)c->numel[k]);
			/* what the output dtype can hold: beyond its range the
			 * right answer is an infinity */
			task_gen_round(sl->dtype, c->ref[k], c->numel[k]);
			for (int64_t e = 0; e < c->numel[k]; e++)
				c->base[k][e] = ((float *)fsrc->d)[e];
		}
	}
	if (owned) {
		if (cache)
			ref_keep(t, bwd, c->prof, seed, &c->dims, xdp, xfp);
		task_exec_release(xdp);
		task_exec_release(xfp);
	}
	return CR_OK;
}

/* Allocates the per-slot double arrays of a case. */
bool vr_case_sizes(struct vr *v, struct vr_case *c, enum cr_stage s, const struct task_dimset *d)
{
	const struct cr_pstage *st = &v->plan.st[s];
	struct cr_err e2;
	size_t scratch = 0, tensors = 0;

	c->stage = s;
	c->dims = *d;
	c->n_slots = st->n_slots;
	cr_err_init(&e2);
	if (cr_plan_eval(&v->plan, d, c->vals, &e2)) {
		vr_fail(v, CHECK_FORMAT_ERROR, "%s", e2.msg);
		return false;
	}
	for (int k = 0; k < st->n_slots; k++) {
		const struct cr_slot *sl = &st->slots[k];
		int64_t n = cr_plan_slot_numel(&v->plan, s, k, d, c->vals);
		size_t es = sl->role == CR_SLOT_SCRATCH ? (size_t)v->plan.scratch_esize[sl->scratch]
							: task_dtype_size(sl->dtype);
		if (n < 0 || n > (1ll << 32)) {
			vr_fail(v, CHECK_FORMAT_ERROR, "@scratch %s: %lld elements is out of range",
				sl->name, (long long)n);
			return false;
		}
		c->numel[k] = n;
		c->bytes[k] = (size_t)n * es;
		if (sl->role == CR_SLOT_SCRATCH)
			scratch += c->bytes[k];
		else
			tensors += c->bytes[k];
	}
	/* all scratch of a case together: at most 8x the stage's tensors (an
	 * honest workspace is of their order), at least 64 MiB, never above
	 * 1 GiB — the orchestrator maps, fills and guards every byte of it */
	size_t cap = tensors > (SIZE_MAX >> 4) ? SIZE_MAX : 8 * tensors;
	if (cap < (64ull << 20))
		cap = 64ull << 20;
	if (cap > (1ull << 30))
		cap = 1ull << 30;
	if (scratch > cap) {
		char ds[128];
		task_dims_str(v->t, d, ds, sizeof ds);
		vr_fail(v, CHECK_FORMAT_ERROR,
			"%s:%d: @scratch: %zu bytes in all at {%s}, more than the %zu allowed (8x the tensors' %zu bytes, at least 64 MiB, at most 1 GiB)",
			v->path ? v->path : "<candidate>",
			v->plan.cand.n_scratch ? v->plan.cand.scratch[0].line : 0, scratch, ds, cap,
			tensors);
		return false;
	}
	return true;
}

enum cr_status vr_case_alloc(struct vr *v, struct vr_case *c, enum cr_stage s,
			     const struct task_dimset *d, bool refs, struct cr_err *err)
{
	const struct cr_pstage *st = &v->plan.st[s];
	size_t total = 0, per_out = refs ? 4 : 1;
	double *m;

	memset(c, 0, sizeof *c);
	if (!vr_case_sizes(v, c, s, d))
		return CR_OK; /* format_error recorded; c->ready stays false */
	for (int k = 0; k < st->n_slots; k++)
		if (st->slots[k].role != CR_SLOT_SCRATCH)
			total += (size_t)c->numel[k] * (st->slots[k].role == CR_SLOT_IN ? 1 : per_out);
	m = malloc(sizeof(double) * (total + 1));
	if (!m)
		return cr_errf(err, CR_ENOMEM, "out of memory for a case of %s", v->t->name);
	c->mem = m;
	for (int k = 0; k < st->n_slots; k++) {
		if (st->slots[k].role == CR_SLOT_IN) {
			c->in[k] = m;
			m += c->numel[k];
		} else if (st->slots[k].role == CR_SLOT_OUT) {
			c->got[k] = m; m += c->numel[k];
			if (refs) {
				c->ref[k] = m; m += c->numel[k];
				c->base[k] = m; m += c->numel[k];
				c->got2[k] = m; m += c->numel[k];
			}
		}
	}
	c->ready = true;
	return CR_OK;
}

enum cr_status vr_case_init(struct vr *v, struct vr_case *c, enum cr_stage s,
			    const struct task_dimset *d, enum task_profile p, uint64_t seed,
			    struct cr_err *err)
{
	enum cr_status st = vr_case_alloc(v, c, s, d, true, err);

	c->prof = p;
	c->seed = seed;
	int64_t t0 = cr_now_ns();
	if (st || !c->ready)
		return st;
	st = case_generate(v, c, err);
	v->ns_cases += cr_now_ns() - t0;
	return st;
}

/* Measures c's conditioning on the inputs val (per task tensor) and, for a
 * backward, the output gradients dout, into c->spread (check_cond_spread);
 * a measurement after the first merges into the spread already there. */
static enum cr_status case_cond(struct vr *v, struct vr_case *c, const double *const *val,
				const double *const *dout, struct cr_err *err)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[c->stage];
	struct check_cond_case cc;
	struct check_cond_out outs[CR_MAX_SLOTS];
	enum cr_status s;
	size_t total = 0;
	int n = 0;
	double *m = c->spread_mem;
	bool merge = m != NULL;
	int64_t t0 = cr_now_ns();

	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_OUT)
			total += (size_t)c->numel[k];
	/* [0, total): the spread over every round; [total, 2 total): the first's */
	if (!m && !(m = calloc(2 * total + 1, sizeof *m)))
		return cr_errf(err, CR_ENOMEM, "out of memory for the conditioning of a case of %s", t->name);
	c->spread_mem = m;
	memset(&cc, 0, sizeof cc);
	cc.t = t;
	cc.dims = c->dims;
	cc.bwd = c->stage == CR_BWD;
	for (int i = 0; i < t->n_tensors; i++) {
		cc.val[i] = val[i];
		cc.dout[i] = dout ? dout[i] : NULL;
	}
	for (int k = 0; k < c->n_slots; k++) {
		const struct cr_slot *sl = &st->slots[k];
		if (sl->role != CR_SLOT_OUT)
			continue;
		outs[n++] = (struct check_cond_out){ .tensor = sl->tensor, .grad = sl->grad,
						     .dtype = sl->dtype, .n = c->numel[k],
						     .ref = c->ref[k], .spread = m };
		m += c->numel[k];
	}
	/* the noise from the CSPRNG: nothing the candidate saw or can replay */
	if (!(s = check_cond_spread(&cc, cr_secure_u64(), outs, n, merge, err)))
		for (int k = 0, j = 0; k < c->n_slots; k++)
			if (st->slots[k].role == CR_SLOT_OUT) {
				c->spread[k] = outs[j++].spread;
				c->spread1[k] = c->spread[k] + total;
				if (!merge)
					memcpy(c->spread1[k], c->spread[k],
					       sizeof(double) * (size_t)c->numel[k]);
			}
	v->ns_cond += cr_now_ns() - t0;
	v->n_cond_cases += !merge;
	v->n_cond_rounds++;
	c->cond_rounds++;
	return s;
}

/* The case's own inputs again, from its seed (the reference cache keeps
 * outputs only; a worker's copy is never read back), measured. */
static enum cr_status cond_from_seed(struct vr *v, struct vr_case *c, struct cr_err *err)
{
	const struct task *t = v->t;
	const double *val[TASK_MAX_TENSORS] = { 0 }, *dout[TASK_MAX_TENSORS] = { 0 };
	struct task_exec xd;
	uint64_t seed = task_mix(v->o->seed, c->seed);
	enum cr_status s;

	if ((s = task_exec_init(&xd, t, &c->dims, true, c->stage == CR_BWD, err)))
		return s;
	case_inputs(t, c, seed, &xd);
	if (c->stage == CR_BWD)
		case_dy(t, seed, &xd);
	for (int i = 0; i < t->n_tensors; i++) {
		val[i] = xd.v[i].d;
		dout[i] = xd.g[i].d;
	}
	s = case_cond(v, c, val, dout, err);
	task_exec_release(&xd);
	return s;
}

/* The inputs of a forward case from its slots (c->in); false when some
 * input or param is not a slot of the plan. */
static bool inputs_of_slots(const struct vr *v, const struct vr_case *c, const double **val)
{
	const struct task *t = v->t;
	const struct cr_pstage *st = &v->plan.st[c->stage];

	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_IN && !st->slots[k].grad)
			val[st->slots[k].tensor] = c->in[k];
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role != TASK_OUTPUT && !val[i])
			return false;
	return true;
}

enum cr_status vr_case_cond(struct vr *v, struct vr_case *c, struct cr_err *err)
{
	if (c->spread_mem)
		return CR_OK;
	c->cond_in = false;
	return cond_from_seed(v, c, err);
}

enum cr_status vr_case_cond_inputs(struct vr *v, struct vr_case *c, struct cr_err *err)
{
	const double *val[TASK_MAX_TENSORS] = { 0 };

	if (c->spread_mem || c->stage != CR_FWD)
		return CR_OK;
	if (!inputs_of_slots(v, c, val))
		return CR_OK; /* an input the plan does not bind: nothing measured */
	c->cond_in = true;
	return case_cond(v, c, val, NULL, err);
}

void vr_cond_tol(const struct vr_case *c, int k, struct check_tol *tl)
{
	tl->spread = c->spread_mem ? c->spread[k] : NULL;
	tl->spread_first = c->spread_mem && c->cond_rounds > 1 ? c->spread1[k] : NULL;
	tl->cond_rounds = c->cond_rounds;
}

bool vr_cond_again(const struct vr_case *c, const struct check_cmp *cmp)
{
	/* an element failure whose worst element did not move in the rounds
	 * so far is measured again too: on a discrete output (an argmax) an
	 * unflipped near-tie reads 0 until some run flips it */
	return c->spread_mem && !cmp->pass && cmp->n_ill > 0 && c->cond_rounds < CHECK_COND_ROUNDS;
}

enum cr_status vr_case_cond_more(struct vr *v, struct vr_case *c, struct cr_err *err)
{
	const double *val[TASK_MAX_TENSORS] = { 0 };

	if (!c->spread_mem || c->cond_rounds >= CHECK_COND_ROUNDS)
		return CR_OK;
	if (!c->cond_in)
		return cond_from_seed(v, c, err);
	if (!inputs_of_slots(v, c, val))
		return CR_OK;
	return case_cond(v, c, val, NULL, err);
}

int vr_output_rms(const struct vr *v, const struct vr_case *c, double *rms, int *slot_out)
{
	const struct cr_pstage *st = &v->plan.st[c->stage];
	int n_out = 0;
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_OUT) {
			slot_out[k] = n_out;
			rms[n_out++] = check_rms(c->ref[k], c->numel[k]);
		}
	return n_out;
}

void vr_case_release(struct vr_case *c)
{
	free(c->mem);
	c->mem = NULL;
	free(c->spread_mem);
	c->spread_mem = NULL;
	c->cond_rounds = 0;
}

/* Writes the header for a case into a worker's shared memory. */
bool vr_write_header(struct vr *v, struct vr_case *c, char *shm, int n_sets)
{
	struct cr_shm_hdr *h = (struct cr_shm_hdr *)shm;
	const struct cr_pstage *st = &v->plan.st[c->stage];

	memset(h, 0, sizeof *h);
	h->magic = CR_SHM_MAGIC;
	h->stage = (uint32_t)c->stage;
	h->n_slots = (uint32_t)c->n_slots;
	h->n_launch = (uint32_t)st->n_launch;
	h->n_sets = (uint32_t)n_sets;
	memcpy(h->dims, c->dims.v, sizeof h->dims);
	for (int s = 0; s < n_sets; s++)
		for (int k = 0; k < c->n_slots; k++)
			h->off[s][k] = c->off[s][k];
	for (int i = 0; i < st->n_launch; i++)
		for (int a = 0; a < st->launch[i].n_args; a++)
			if (st->launch[i].args[a].kind == CR_PARG_INT)
				h->argv[st->launch[i].arg0 + a] = c->vals[st->launch[i].args[a].expr];
	snprintf(h->so_path, sizeof h->so_path, "%s/cand.so", v->workdir);
	snprintf(h->task_path, sizeof h->task_path, "%s", v->t->path);
	snprintf(h->task_name, sizeof h->task_name, "%s", v->t->name);
	if (v->cuda) {
		char cubin[700];
		struct cr_err e2;
		cr_err_init(&e2);
		snprintf(cubin, sizeof cubin, "%s/%s", v->workdir, v->cubin);
		if (cr_cuda_ltab_write(shm, &v->plan, c->stage, c->vals, cubin, v->path, v->trusted,
				       v->o->gpu, v->o->gpu_uuid, &e2)) {
			vr_fail(v, CHECK_FORMAT_ERROR, "%s", e2.msg);
			return false;
		}
	}
	return true;
}

const char *vr_worker_mode(const struct vr *v)
{
	return v->cuda ? "cuda" : "cand";
}

/* Stores inputs, poisons outputs, fills scratch with garbage. */
void vr_fill_buffers(struct vr *v, struct vr_case *c, char *shm, int set, int poison,
		     uint64_t key)
{
	const struct cr_pstage *st = &v->plan.st[c->stage];
	for (int k = 0; k < c->n_slots; k++) {
		char *b = shm + c->off[set][k];
		if (st->slots[k].role == CR_SLOT_IN)
			task_gen_store(st->slots[k].dtype, c->in[k], b, c->numel[k]);
		else if (st->slots[k].role == CR_SLOT_OUT)
			check_poison(b, c->bytes[k], poison, key + (uint64_t)k);
		else
			check_fill_pattern(b, c->bytes[k], key ^ 0x5c7a7c4ull ^ (uint64_t)k);
	}
}

/* Reads outputs of a set into dst (got or got2). */
void vr_read_outputs(struct vr *v, struct vr_case *c, const char *shm, int set, double **dst)
{
	const struct cr_pstage *st = &v->plan.st[c->stage];
	for (int k = 0; k < c->n_slots; k++)
		if (st->slots[k].role == CR_SLOT_OUT)
			task_gen_load(st->slots[k].dtype, shm + c->off[set][k], dst[k], c->numel[k]);
}

/* Input verification: every input must hold exactly what was stored. */
bool vr_inputs_intact(struct vr *v, struct vr_case *c, const char *shm, int set, char *why,
		      size_t cap)
{
	const struct cr_pstage *st = &v->plan.st[c->stage];
	for (int k = 0; k < c->n_slots; k++) {
		double x;
		if (st->slots[k].role != CR_SLOT_IN)
			continue;
		for (int64_t e = 0; e < c->numel[k]; e++) {
			task_gen_load(st->slots[k].dtype, shm + c->off[set][k] +
				      (size_t)e * task_dtype_size(st->slots[k].dtype), &x, 1);
			if (x != c->in[k][e] && !(isnan(x) && isnan(c->in[k][e]))) {
				snprintf(why, cap, "input '%s' changed at element %lld (%.6g -> %.6g)",
					 st->slots[k].name, (long long)e, c->in[k][e], x);
				return false;
			}
		}
	}
	return true;
}

enum check_verdict vr_run_verdict(const struct cr_proc *w, enum cr_run res)
{
	if (res == CR_RUN_TIMEOUT)
		return CHECK_TIMEOUT;
	if (res == CR_RUN_FAULT && w->fault >= 0 && w->fault < CHECK_OK)
		return (enum check_verdict)w->fault;
	return CHECK_RUNTIME_ERROR;
}

enum cr_status vr_reference(struct vr *v, const struct vr_case *c, double *const *out, struct cr_err *err)
{
	const struct cr_pstage *st = &v->plan.st[c->stage];
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
			memcpy(out[k], x.v[st->slots[k].tensor].d, sizeof(double) * (size_t)c->numel[k]);
			task_gen_round(st->slots[k].dtype, out[k], c->numel[k]);
		}
	task_exec_release(&x);
	return CR_OK;
}
