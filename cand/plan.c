/* plan.c — binding a candidate's directives to its task. */
#include "cand/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(line, ...) do { \
	char m_[600]; snprintf(m_, sizeof m_, __VA_ARGS__); \
	st = cr_errf(err, CR_EINPUT, "%s:%d: %s", path, line, m_); goto out; } while (0)

static int dim_lookup(void *ctx, const char *name, size_t len)
{
	return task_find_dim(ctx, name, len);
}

static int add_expr(struct cr_plan *p, const char *text, int line, const char *path,
		    struct cr_err *err)
{
	struct cr_err e2;
	if (p->n_exprs == CR_MAX_EXPRS) {
		cr_errf(err, CR_EINPUT, "%s:%d: more than %d expressions", path, line, CR_MAX_EXPRS);
		return -1;
	}
	if (p->n_exprs == p->cap_exprs) {
		int cap = p->cap_exprs ? 2 * p->cap_exprs : 64;
		struct cr_expr *e = realloc(p->exprs, sizeof *e * (size_t)cap);
		int *l = e ? realloc(p->expr_line, sizeof *l * (size_t)cap) : NULL;
		if (e)
			p->exprs = e;
		if (l)
			p->expr_line = l;
		if (!e || !l) {
			cr_errf(err, CR_ENOMEM, "%s:%d: out of memory", path, line);
			return -1;
		}
		p->cap_exprs = cap;
	}
	cr_err_init(&e2);
	if (cr_expr_compile(&p->exprs[p->n_exprs], text, strlen(text), dim_lookup,
			    (void *)p->task, &e2)) {
		cr_errf(err, CR_EINPUT, "%s:%d: %s", path, line, e2.msg);
		return -1;
	}
	p->expr_line[p->n_exprs] = line;
	return p->n_exprs++;
}

static void add_slot(struct cr_pstage *s, const char *name, enum task_dtype dt,
		     enum cr_slot_role role, int tensor, bool grad, int scratch)
{
	struct cr_slot *sl = &s->slots[s->n_slots++];
	snprintf(sl->name, sizeof sl->name, "%s", name);
	sl->dtype = dt;
	sl->role = role;
	sl->tensor = tensor;
	sl->grad = grad;
	sl->scratch = scratch;
}

static void build_slots(struct cr_plan *p)
{
	const struct task *t = p->task;
	struct cr_pstage *f = &p->st[CR_FWD], *b = &p->st[CR_BWD];
	char nm[TASK_NAME_MAX + 1];

	for (int i = 0; i < t->n_tensors; i++)
		add_slot(f, t->tensors[i].name, t->tensors[i].dtype,
			 t->tensors[i].role == TASK_OUTPUT ? CR_SLOT_OUT : CR_SLOT_IN, i, false, -1);
	/* backward: inputs, params and forward outputs are all read-only */
	for (int i = 0; i < t->n_tensors; i++)
		add_slot(b, t->tensors[i].name, t->tensors[i].dtype, CR_SLOT_IN, i, false, -1);
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role == TASK_OUTPUT) {
			snprintf(nm, sizeof nm, "d%s", t->tensors[i].name);
			add_slot(b, nm, t->tensors[i].dtype, CR_SLOT_IN, i, true, -1);
		}
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role != TASK_OUTPUT && t->tensors[i].grad) {
			snprintf(nm, sizeof nm, "d%s", t->tensors[i].name);
			add_slot(b, nm, t->tensors[i].dtype, CR_SLOT_OUT, i, true, -1);
		}
}

static int find_slot(const struct cr_pstage *s, const char *name)
{
	for (int i = 0; i < s->n_slots; i++)
		if (!strcmp(s->slots[i].name, name))
			return i;
	return -1;
}

static enum cr_status bind_launches(struct cr_plan *p, enum cr_stage which,
				   const struct cr_launch *ls, int n, const char *path,
				   struct cr_err *err)
{
	enum cr_status st = CR_OK;
	struct cr_pstage *s = &p->st[which];
	int total = 0;

	if (n > CR_MAX_LAUNCH)
		FAIL(ls[0].line, "more than %d launches", CR_MAX_LAUNCH);
	for (int i = 0; i < n; i++) {
		total += ls[i].n_args;
		if (total > CR_MAX_ARGV)
			FAIL(ls[i].line, "more than %d arguments over the %s launches", CR_MAX_ARGV,
			     which == CR_FWD ? "@forward" : "@backward");
	}
	s->launch = calloc((size_t)(n > 0 ? n : 1), sizeof *s->launch);
	s->args = calloc((size_t)total + 1, sizeof *s->args);
	if (!s->launch || !s->args)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory binding the launches", path);
	for (int i = 0; i < n; i++) {
		const struct cr_launch *l = &ls[i];
		struct cr_plaunch *pl = &s->launch[s->n_launch++];
		snprintf(pl->fn, sizeof pl->fn, "%s", l->fn);
		pl->line = l->line;
		pl->n_args = l->n_args;
		pl->arg0 = s->n_args;
		pl->args = s->args + s->n_args;
		s->n_args += l->n_args;
		if (!strncmp(l->fn, "__crucible", 10))
			FAIL(l->line, "names starting with __crucible are reserved");
		for (int k = 0; k < 3; k++)
			pl->grid[k] = pl->block[k] = -1;
		pl->smem = -1;
		for (int k = 0; k < l->n_grid; k++)
			if ((pl->grid[k] = add_expr(p, l->grid[k], l->line, path, err)) < 0)
				return CR_EINPUT;
		for (int k = 0; k < l->n_block; k++)
			if ((pl->block[k] = add_expr(p, l->block[k], l->line, path, err)) < 0)
				return CR_EINPUT;
		if (l->has_smem && (pl->smem = add_expr(p, l->smem, l->line, path, err)) < 0)
			return CR_EINPUT;
		for (int a = 0; a < l->n_args; a++) {
			const struct cr_arg *arg = &l->args[a];
			struct cr_parg *pa = &pl->args[a];
			if (arg->kind == CR_ARG_FLOAT) {
				pa->kind = CR_PARG_FLOAT;
				pa->f = arg->fval;
				continue;
			}
			if (arg->kind == CR_ARG_NAME) {
				int sl = find_slot(s, arg->name);
				if (sl >= 0) {
					pa->kind = CR_PARG_SLOT;
					pa->slot = sl;
					continue;
				}
				if (task_find_dim(p->task, arg->name, strlen(arg->name)) < 0) {
					int other = find_slot(&p->st[!which], arg->name);
					if (other >= 0)
						FAIL(l->line, "'%s' is not available in @%s (it belongs to the %s pass)",
						     arg->name, which == CR_FWD ? "forward" : "backward",
						     which == CR_FWD ? "backward" : "forward");
					FAIL(l->line, "unknown name '%s' (not a tensor, gradient, scratch buffer or dim of %s)",
					     arg->name, p->task->name);
				}
			}
			pa->kind = CR_PARG_INT;
			if ((pa->expr = add_expr(p, arg->text, l->line, path, err)) < 0)
				return CR_EINPUT;
		}
	}
out:
	return st;
}

enum cr_status cr_plan_bind(struct cr_plan *p, const struct task *t, struct cr_cand *cand,
			    const char *path, struct cr_err *err)
{
	enum cr_status st = CR_OK;

	memset(p, 0, sizeof *p);
	snprintf(p->path, sizeof p->path, "%s", path);
	p->task = t;
	p->cand = *cand;
	memset(cand, 0, sizeof *cand);
	p->cuda = p->cand.cuda;
	build_slots(p);
	for (int i = 0; i < p->cand.n_scratch; i++) {
		const struct cr_scratch *sc = &p->cand.scratch[i];
		static const struct { const char *n; int sz; } dts[] = {
			{ "f32", 4 }, { "f16", 2 }, { "bf16", 2 }, { "i32", 4 }, { "i64", 8 }, { "u8", 1 } };
		int sz = 0;
		for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++)
			if (!strcmp(sc->dtype, dts[k].n))
				sz = dts[k].sz;
		if (!sz)
			FAIL(sc->line, "@scratch %s: unknown dtype '%s'", sc->name, sc->dtype);
		if (find_slot(&p->st[CR_FWD], sc->name) >= 0 || find_slot(&p->st[CR_BWD], sc->name) >= 0 ||
		    task_find_dim(t, sc->name, strlen(sc->name)) >= 0)
			FAIL(sc->line, "@scratch %s: the name is already a tensor, gradient or dim", sc->name);
		if (p->st[CR_FWD].n_slots >= CR_MAX_SLOTS || p->st[CR_BWD].n_slots >= CR_MAX_SLOTS)
			FAIL(sc->line, "too many buffers");
		p->scratch_esize[i] = sz;
		if ((p->scratch_count[i] = add_expr(p, sc->count, sc->line, path, err)) < 0) {
			st = CR_EINPUT;
			goto out;
		}
		add_slot(&p->st[CR_FWD], sc->name, TASK_F32, CR_SLOT_SCRATCH, -1, false, i);
		add_slot(&p->st[CR_BWD], sc->name, TASK_F32, CR_SLOT_SCRATCH, -1, false, i);
		p->n_scratch++;
	}
	if (strcmp(p->cand.task, t->name))
		FAIL(p->cand.task_line, "@task %s does not match the task %s", p->cand.task, t->name);
	if ((st = bind_launches(p, CR_FWD, p->cand.fwd, p->cand.n_fwd, path, err)))
		goto out;
	if (p->cand.n_bwd) {
		if (!t->backward)
			FAIL(p->cand.bwd[0].line, "@backward given, but task %s has no backward check", t->name);
		if ((st = bind_launches(p, CR_BWD, p->cand.bwd, p->cand.n_bwd, path, err)))
			goto out;
		p->has_bwd = true;
	} else {
		p->bwd_absent = t->backward;
	}
out:
	return st;
}

void cr_plan_release(struct cr_plan *p)
{
	for (int i = 0; i < p->n_exprs; i++)
		cr_expr_release(&p->exprs[i]);
	free(p->exprs);
	free(p->expr_line);
	p->exprs = NULL;
	p->expr_line = NULL;
	p->n_exprs = p->cap_exprs = 0;
	for (int s = 0; s < 2; s++) {
		free(p->st[s].launch);
		free(p->st[s].args);
		p->st[s].launch = NULL;
		p->st[s].args = NULL;
		p->st[s].n_launch = p->st[s].n_args = 0;
	}
	cr_cand_release(&p->cand);
}

enum cr_status cr_plan_eval(const struct cr_plan *p, const struct task_dimset *d,
			    int64_t *vals, struct cr_err *err)
{
	for (int i = 0; i < p->n_exprs; i++) {
		struct cr_err e2;
		cr_err_init(&e2);
		if (cr_expr_eval(&p->exprs[i], d->v, &vals[i], &e2)) {
			char ds[256];
			task_dims_str(p->task, d, ds, sizeof ds);
			return cr_errf(err, CR_EINPUT, "%s:%d: at {%s}: %s", p->path, p->expr_line[i],
				       ds, e2.msg);
		}
	}
	/* a scratch count sizes an allocation: out of range names its line
	 * here, before any caller multiplies it by the element size */
	for (int i = 0; i < p->n_scratch; i++) {
		int64_t n = vals[p->scratch_count[i]];
		if (n < 0 || n > CR_PLAN_MAX_SCRATCH_NUMEL) {
			char ds[256];
			task_dims_str(p->task, d, ds, sizeof ds);
			return cr_errf(err, CR_EINPUT, "%s:%d: at {%s}: @scratch %s: %lld elements is out of range "
				       "(0..%lld)", p->path, p->cand.scratch[i].line, ds, p->cand.scratch[i].name,
				       (long long)n, (long long)CR_PLAN_MAX_SCRATCH_NUMEL);
		}
	}
	return CR_OK;
}

int64_t cr_plan_slot_numel(const struct cr_plan *p, enum cr_stage s, int slot,
			   const struct task_dimset *d, const int64_t *vals)
{
	const struct cr_slot *sl = &p->st[s].slots[slot];
	if (sl->role == CR_SLOT_SCRATCH)
		return vals[p->scratch_count[sl->scratch]];
	return task_tensor_numel(p->task, sl->tensor, d);
}

bool cr_task_metric(const struct task *t, const char *text, const struct task_dimset *d, double *out)
{
	struct cr_expr e;
	struct cr_err err;
	int64_t v;
	bool ok;

	if (!text[0])
		return false;
	cr_err_init(&err);
	if (cr_expr_compile(&e, text, strlen(text), dim_lookup, (void *)t, &err))
		return false;
	ok = !cr_expr_eval(&e, d->v, &v, &err);
	cr_expr_release(&e);
	if (ok)
		*out = (double)v;
	return ok;
}
