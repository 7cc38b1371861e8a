/* verify.c — the evaluation of one candidate, start to verdict (SPEC §4):
 * the parsed file is bound to its task once, built (the cpu compiler or
 * NVRTC) in a private work directory, then the forward and backward
 * correctness stages (checks/stage.c) and timing (timing/time_cpu.c,
 * timing/time_cuda.c) run on that one plan. Self-consistency's probe
 * (cr_probe) shares the binding and the build, then runs the forward plan
 * only (checks/probe.c): no reference, no checks. */
#include "harness/verify.h"
#include "checks/stage.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks/cuda_build.h"
#include "sandbox/compile.h"

/* ---- the whole candidate ---- */

/* The run directory is root's (0755: the worker, as nobody, reads cand.so
 * in it): nothing a candidate runs can create anything here, so the logs
 * root opens in it cannot be planted links, FIFOs or directories. The
 * compiler gets a subdirectory of its own for the compile only
 * (sandbox/compile.c). */
static enum cr_status make_workdir(struct vr *v, const char *root, struct cr_err *err)
{
	snprintf(v->workdir, sizeof v->workdir, "%s/cXXXXXX", root);
	if (!mkdtemp(v->workdir))
		return cr_errf(err, CR_EENV, "cannot create a work directory under %s: %s", root,
			       strerror(errno));
	if (chmod(v->workdir, 0755))
		return cr_errf(err, CR_EENV, "cannot open %s to the unprivileged user: %s", v->workdir,
			       strerror(errno));
	return CR_OK;
}

static void remove_workdir(struct vr *v)
{
	if (cr_remove_tree(v->workdir))
		fprintf(stderr, "crucible: cannot remove %s: %s\n", v->workdir, strerror(errno));
}

/* path lies under dir (both resolved). */
static bool in_dir(const char *path, const char *dir)
{
	char rp[PATH_MAX], rd[PATH_MAX];
	size_t n;
	if (!dir || !realpath(path, rp) || !realpath(dir, rd))
		return false;
	n = strlen(rd);
	return !strncmp(rp, rd, n) && rp[n] == '/';
}

/* The first error line of a failed compile, naming the candidate rather
 * than the private copy compiled: the compile_error's detail. log is
 * modified. */
static void compile_failed(struct vr *v, char *log)
{
	/* the first error line is the most useful detail ("error:" from the
	 * compiler, "Error:" from the assembler) */
	char *e = strcasestr(log, "error");
	char *start = e, *nl, *c;
	while (start && start > log && start[-1] != '\n')
		start--;
	if (!start)  /* no error line ("cc1: out of memory …"): the first non-blank one */
		for (start = log; *start == '\n' || *start == ' '; start++)
			;
	if ((nl = strchr(start, '\n')))
		*nl = '\0';
	c = strstr(start, "/cand.c:");
	if (!c && !strncmp(start, "cand.c:", 7))
		c = start - 1; /* from the trampoline's #line */
	vr_fail(v, CHECK_COMPILE_ERROR, "%s%s", c ? v->path : "", c ? c + 7 : start);
}

/* What cr_verify and cr_probe share: f bound to t (its parsed directives
 * move into v->plan) and built in a fresh work directory, cand.so by the
 * cpu compiler or, on the cuda backend, cand.cubin by NVRTC. A bad
 * candidate is a verdict in v->status (CR_OK returned); only an
 * environment that cannot do the work is an error. release() undoes it,
 * whatever the outcome. */
static enum cr_status prepare(struct vr *v, const struct task *t, struct cr_cand_file *f,
			      const struct cr_verify_opts *o, struct cr_err *err)
{
	struct cr_cand cand;
	struct cr_err e2;
	enum cr_status st;
	char log[2048];

	memset(v, 0, sizeof *v);
	v->t = t;
	v->o = o;
	v->status = CHECK_OK;
	v->path = f->path;
	cr_err_init(&e2);
	if (!f->parsed) {
		vr_fail(v, CHECK_FORMAT_ERROR, "%s", f->error);
		return CR_OK;
	}
	cand = f->cand;           /* the plan takes the parsed directives over */
	memset(&f->cand, 0, sizeof f->cand);
	f->parsed = false;
	v->cuda = o->cuda;
	v->trusted = o->cuda && in_dir(f->path, o->baseline_dir); /* our own GPU baselines */
	snprintf(v->cubin, sizeof v->cubin, "cand.cubin");
	if (cand.cuda != o->cuda) {
		if (cand.cuda)
			vr_fail(v, CHECK_FORMAT_ERROR, "%s:%d: CUDA launch form on the cpu backend (a .c candidate takes function(args))",
				f->path, cand.n_fwd ? cand.fwd[0].line : cand.task_line);
		else
			vr_fail(v, CHECK_FORMAT_ERROR, "%s:%d: C call form on the cuda backend (a .cu candidate launches kernel<<<grid, block>>>(args))",
				f->path, cand.n_fwd ? cand.fwd[0].line : cand.task_line);
		cr_cand_release(&cand);
		return CR_OK;
	}
	v->own_plan = true;       /* the plan owns cand from here, bound or not */
	if (cr_plan_bind(&v->plan, t, &cand, f->path, &e2)) {
		vr_fail(v, CHECK_FORMAT_ERROR, "%s", e2.msg);
		return CR_OK;
	}
	if ((st = make_workdir(v, o->workroot, err))) {
		v->workdir[0] = '\0';
		return st;
	}
	if (v->cuda) {
		struct cr_result cr;
		char cubin[700];
		cr_result_init(&cr);
		snprintf(cubin, sizeof cubin, "%s/%s", v->workdir, v->cubin);
		struct cr_cuda_opts co = { .arch = o->arch, .timeout_s = 60 };
		if ((st = check_cuda_build(&v->plan, f->path, f->src, f->len, &co, cubin, &cr, err)))
			return st;
		if (cr.status != CHECK_OK)
			vr_fail(v, cr.status, "%s", cr.detail);
		return CR_OK;
	}
	/* a host that cannot run the compiler for a moment is waited out
	 * (as a worker's start is, sandbox/proc.c), then reported as the
	 * host's: never the candidate's compile_error */
	static const int backoff_ms[] = { 50, 250, 1000, 3000 };
	enum cr_compile_result cres;
	for (int a = 0;; a++) {
		cres = cr_compile_cpu(&v->plan, f->src, f->len, v->workdir, o->compile_timeout_s, log, sizeof log);
		if (cres != CR_COMPILE_ENV || a == (int)(sizeof backoff_ms / sizeof backoff_ms[0]))
			break;
		usleep((useconds_t)backoff_ms[a] * 1000);
		/* the failed attempt's cand.so, if any, goes before the next */
		{
			char so[700];
			snprintf(so, sizeof so, "%s/cand.so", v->workdir);
			unlink(so);
		}
	}
	switch (cres) {
	case CR_COMPILED:
		break;
	case CR_COMPILE_ENV:
		return cr_errf(err, CR_EENV, "%s", log);
	case CR_COMPILE_TIMEOUT:
	case CR_COMPILE_FAILED:
		compile_failed(v, log);
		break;
	}
	return CR_OK;
}

static void release(struct vr *v)
{
	if (v->own_plan)
		cr_plan_release(&v->plan);
	v->own_plan = false;
	if (v->workdir[0])
		remove_workdir(v);
	v->workdir[0] = '\0';
}

enum cr_status cr_verify(const struct task *t, struct cr_cand_file *f,
			 const struct cr_verify_opts *o, struct cr_result *r, struct cr_err *err)
{
	struct vr v;
	enum cr_status st;

	int64_t t0 = cr_now_ns(), t1;
	long long h0, m0, h1, m1;

	vr_ref_cache_stats(&h0, &m0);
	cr_result_init(r);
	snprintf(r->sha256, sizeof r->sha256, "%s", f->sha256);
	st = prepare(&v, t, f, o, err);
	t1 = cr_now_ns();
	r->cost.prepare_s = (double)(t1 - t0) / 1e9;
	if (st || v.status != CHECK_OK)
		goto done;
	v.worst_abs = v.worst_rel = v.err_vs_base = 0;
	if ((st = vr_run_stage(&v, CR_FWD, err)))
		goto done;
	if (v.status == CHECK_OK && v.plan.has_bwd) {
		enum check_verdict fwd = v.status;
		if ((st = vr_run_stage(&v, CR_BWD, err)))
			goto done;
		snprintf(r->backward, sizeof r->backward, "%s", v.status == fwd ? "pass" : "fail");
	} else if (v.plan.bwd_absent) {
		snprintf(r->backward, sizeof r->backward, "absent");
	}
	r->max_abs_err = v.worst_abs;
	r->max_rel_err = v.worst_rel;
	r->err_vs_baseline = v.err_vs_base;
	r->cost.stages_s = (double)(cr_now_ns() - t1) / 1e9;
	t1 = cr_now_ns();
	if (v.status == CHECK_OK && !o->no_timing) {
		/* crucible run pauses a CPU generator while the candidate is timed */
		if (o->on_timing)
			o->on_timing(o->hook_ctx, true);
		/* eval --jobs: the wait for the timing lock is not timing */
		r->cost.timing_wait_s = (double)(cr_now_ns() - t1) / 1e9;
		t1 = cr_now_ns();
		st = v.cuda ? vr_time_cuda(&v, r, err) : vr_time(&v, r, err);
		r->cost.timing_s = (double)(cr_now_ns() - t1) / 1e9;
		if (o->on_timing)
			o->on_timing(o->hook_ctx, false);
	}
	if (v.status != CHECK_OK) {
		r->time_us = r->time_lo_us = r->time_hi_us = r->baseline_us = NAN;
		r->speedup = r->speedup_lo = r->speedup_hi = NAN;
		r->tflops = r->tbps = r->roofline = NAN;
		r->samples = 0;
		r->timed = false;
	}
done:
	r->cost.cases_s = (double)v.ns_cases / 1e9;
	r->cost.worker_start_s = (double)v.ns_start / 1e9;
	r->cost.cond_s = (double)v.ns_cond / 1e9;
	r->cost.cases_cond = v.n_cond_cases;
	r->cost.cond_rounds = v.n_cond_rounds;
	vr_ref_cache_stats(&h1, &m1);
	r->cost.cases_reused = (int)(h1 - h0);
	r->cost.cases_computed = (int)(m1 - m0);
	r->status = v.status;
	/* a crash or timeout leaves nothing compared to the end: no element
	 * (as max_abs_err is then unknown) */
	if (v.status > CHECK_TIMEOUT)
		r->worst = v.worst;
	snprintf(r->sandbox, sizeof r->sandbox, "%s", v.sandbox);
	snprintf(r->detail, sizeof r->detail, "%s", v.detail);
	if (r->status == CHECK_OK && r->noisy)
		snprintf(r->detail, sizeof r->detail, "timing noisy (%s)%s%.600s", r->noisy_why,
			 v.detail[0] ? "; " : "", v.detail);
	release(&v);
	return st;
}

/* ---- self-consistency's probe ---- */

#define PROBE_CALLS 3

enum cr_status cr_probe(const struct task *t, struct cr_cand_file *f,
			const struct cr_verify_opts *o, uint64_t probe_seed, struct cr_probe *p,
			struct cr_err *err)
{
	const struct cr_pstage *ps;
	struct vr v;
	struct vr_case c;
	enum cr_status st;

	memset(p, 0, sizeof *p);
	memset(&c, 0, sizeof c);
	p->call_us = NAN;
	if ((st = prepare(&v, t, f, o, err)) || v.status != CHECK_OK)
		goto done;
	if ((st = vr_probe_run(&v, probe_seed, PROBE_CALLS, &c, &p->call_us, err)) ||
	    v.status != CHECK_OK)
		goto done;
	ps = &v.plan.st[CR_FWD];
	for (int k = 0; k < c.n_slots; k++) {
		int i = p->n_out;
		if (ps->slots[k].role != CR_SLOT_OUT)
			continue;
		if (i == (int)(sizeof p->out / sizeof p->out[0])) {
			st = cr_errf(err, CR_EINPUT, "%s: more than %d outputs: the probe holds %d", t->name,
				     i, i);
			goto done;
		}
		p->out[i] = malloc(sizeof(double) * (size_t)(c.numel[k] ? c.numel[k] : 1));
		if (!p->out[i]) {
			st = cr_errf(err, CR_ENOMEM, "out of memory for the probe of %s", t->name);
			goto done;
		}
		memcpy(p->out[i], c.got[k], sizeof(double) * (size_t)c.numel[k]);
		snprintf(p->names[i], sizeof p->names[i], "%s", ps->slots[k].name);
		p->numel[i] = c.numel[k];
		p->n_out++;
	}
done:
	p->status = v.status;
	snprintf(p->detail, sizeof p->detail, "%s", v.detail);
	if (st || p->status != CHECK_OK) {
		cr_probe_release(p);
		p->status = v.status;
		snprintf(p->detail, sizeof p->detail, "%s", v.detail);
		p->call_us = NAN;
	}
	vr_case_release(&c);
	release(&v);
	return st;
}

/* a judged against b at b's scales, as the verifier judges an output
 * against its reference, without a baseline */
static bool probe_within(const struct task *t, const struct cr_probe *a, const struct cr_probe *b)
{
	double rms[8];
	for (int k = 0; k < b->n_out; k++)
		rms[k] = check_rms(b->out[k], b->numel[k]);
	for (int k = 0; k < a->n_out; k++) {
		struct check_tol tl;
		struct check_cmp cmp;
		check_tol_default(&tl, t->atol, t->rtol, check_scale(rms, b->n_out, k));
		check_compare_tol(a->out[k], b->out[k], NULL, a->numel[k], &tl, &cmp);
		if (!cmp.pass)
			return false;
	}
	return true;
}

bool cr_probe_agree(const struct task *t, const struct cr_probe *a, const struct cr_probe *b)
{
	if (a->status != CHECK_OK || b->status != CHECK_OK || a->n_out < 1 || a->n_out != b->n_out)
		return false;
	for (int k = 0; k < a->n_out; k++)
		if (strcmp(a->names[k], b->names[k]) || a->numel[k] != b->numel[k] || !a->out[k] ||
		    !b->out[k])
			return false;
	return probe_within(t, a, b) && probe_within(t, b, a);
}

void cr_probe_release(struct cr_probe *p)
{
	if (!p)
		return;
	for (int k = 0; k < (int)(sizeof p->out / sizeof p->out[0]); k++)
		free(p->out[k]);
	memset(p, 0, sizeof *p);
	p->call_us = NAN;
}
