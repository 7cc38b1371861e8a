/* verify.c — the evaluation of one candidate, start to verdict (SPEC §4):
 * the parsed file is bound to its task once, built (the cpu compiler or
 * NVRTC) in a private work directory, then the forward and backward
 * correctness stages (checks/stage.c) and timing (timing/time_cpu.c,
 * timing/time_cuda.c) run on that one plan. */
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
#include "harness/worker/compile.h"

/* ---- the whole candidate ---- */

/* The run directory is root's (0755: the worker, as nobody, reads cand.so
 * in it): nothing a candidate runs can create anything here, so the logs
 * root opens in it cannot be planted links, FIFOs or directories. The
 * compiler gets a subdirectory of its own for the compile only
 * (harness/worker/compile.c). */
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

enum cr_status cr_verify(const struct task *t, struct cr_cand_file *f,
			 const struct cr_verify_opts *o, struct cr_result *r, struct cr_err *err)
{
	struct vr v;
	struct cr_cand cand;
	struct cr_err e2;
	enum cr_status st = CR_OK;
	char log[2048];
	bool bound = false, have_dir = false;
	const char *path = f->path, *src = f->src;
	size_t len = f->len;

	memset(&v, 0, sizeof v);
	memset(&cand, 0, sizeof cand);
	v.t = t;
	v.o = o;
	v.status = CHECK_OK;
	cr_result_init(r);
	snprintf(r->sha256, sizeof r->sha256, "%s", f->sha256);
	cr_err_init(&e2);
	if (!f->parsed) {
		vr_fail(&v, CHECK_FORMAT_ERROR, "%s", f->error);
		goto done;
	}
	cand = f->cand;           /* the plan takes the parsed directives over */
	memset(&f->cand, 0, sizeof f->cand);
	f->parsed = false;
	v.cuda = o->cuda;
	v.path = path;
	v.trusted = o->cuda && in_dir(path, o->baseline_dir); /* our own GPU baselines */
	snprintf(v.cubin, sizeof v.cubin, "cand.cubin");
	if (cand.cuda != o->cuda) {
		if (cand.cuda)
			vr_fail(&v, CHECK_FORMAT_ERROR, "%s:%d: CUDA launch form on the cpu backend (a .c candidate takes function(args))",
				path, cand.n_fwd ? cand.fwd[0].line : cand.task_line);
		else
			vr_fail(&v, CHECK_FORMAT_ERROR, "%s:%d: C call form on the cuda backend (a .cu candidate launches kernel<<<grid, block>>>(args))",
				path, cand.n_fwd ? cand.fwd[0].line : cand.task_line);
		cr_cand_release(&cand);
		goto done;
	}
	if (cr_plan_bind(&v.plan, t, &cand, path, &e2)) {
		bound = true;
		vr_fail(&v, CHECK_FORMAT_ERROR, "%s", e2.msg);
		goto done;
	}
	bound = true;
	if ((st = make_workdir(&v, o->workroot, err)))
		goto done;
	have_dir = true;
	if (v.cuda) {
		struct cr_result cr;
		char cubin[700];
		cr_result_init(&cr);
		snprintf(cubin, sizeof cubin, "%s/%s", v.workdir, v.cubin);
		struct cr_cuda_opts co = { .arch = o->arch, .timeout_s = 60 };
		if ((st = check_cuda_build(&v.plan, path, src, len, &co, cubin, &cr, err)))
			goto done;
		if (cr.status != CHECK_OK) {
			vr_fail(&v, cr.status, "%s", cr.detail);
			goto done;
		}
		goto run;
	}
	switch (cr_compile_cpu(&v.plan, src, len, v.workdir, o->compile_timeout_s, log, sizeof log)) {
	case CR_COMPILED:
		break;
	case CR_COMPILE_ENV:
		st = cr_errf(err, CR_EENV, "%s", log);
		goto done;
	case CR_COMPILE_TIMEOUT:
	case CR_COMPILE_FAILED: {
		/* the first error line is the most useful detail ("error:" from
		 * the compiler, "Error:" from the assembler) */
		char *e = strcasestr(log, "error");
		char *start = e, *nl;
		while (start && start > log && start[-1] != '\n')
			start--;
		if (!start)  /* no error line ("cc1: out of memory …"): the first non-blank one */
			for (start = log; *start == '\n' || *start == ' '; start++)
				;
		if ((nl = strchr(start, '\n')))
			*nl = '\0';
		{
			/* name the candidate, not the private copy compiled */
			char *c = strstr(start, "/cand.c:");
			if (!c && !strncmp(start, "cand.c:", 7))
				c = start - 1; /* from the trampoline's #line */
			vr_fail(&v, CHECK_COMPILE_ERROR, "%s%s", c ? path : "", c ? c + 7 : start);
		}
		goto done;
	}
	}
run:
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
	if (v.status == CHECK_OK && !o->no_timing) {
		/* crucible run pauses a CPU generator while the candidate is timed */
		if (o->on_timing)
			o->on_timing(o->hook_ctx, true);
		st = v.cuda ? vr_time_cuda(&v, r, err) : vr_time(&v, r, err);
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
	r->status = v.status;
	/* a crash or timeout leaves nothing compared to the end: no element
	 * (as max_abs_err is then unknown) */
	if (v.status > CHECK_TIMEOUT)
		r->worst = v.worst;
	snprintf(r->sandbox, sizeof r->sandbox, "%s", v.sandbox);
	snprintf(r->detail, sizeof r->detail, "%s", v.detail);
	if (r->status == CHECK_OK && r->noisy)
		snprintf(r->detail, sizeof r->detail, "timing noisy (spread above target at the time cap)%s%.600s",
			 v.detail[0] ? "; " : "", v.detail);
	if (bound)
		cr_plan_release(&v.plan);
	else
		cr_cand_release(&cand);
	if (have_dir)
		remove_workdir(&v);
	return st;
}

