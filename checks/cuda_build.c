/* cuda_build.c — the compile stage of CUDA candidates: the detail of a
 * failed compile, the launch checks against the cubin (missing kernels,
 * parameter counts and sizes), one build from a bound plan, and the
 * parallel compile-only pool. The one file of checks/ that knows whether
 * CUDA is built in. */
#include "checks/cuda_build.h"
#include "cr_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sha256.h"

const char *check_cuda_arch(const char *requested)
{
	return requested && requested[0] ? requested : "sm_90";
}

#if HAVE_CUDA

#define PROG_NAME "cand.cu"        /* NVRTC's name for the source (cuda_compile.c) */

void check_cuda_compile_detail(const struct cr_cuda_build *b, const char *path, double timeout_s,
			    char *out, size_t cap)
{
	const char *log = b->log ? b->log : "", *line = NULL, *p = log;
	const char *name = path ? path : "<candidate>";
	char first[600];

	if (b->res == CR_COMPILE_TIMEOUT) {
		snprintf(out, cap, "%s: NVRTC did not finish within %.0f s", name,
			 timeout_s > 0 ? timeout_s : CR_CUDA_TIMEOUT_S);
		return;
	}
	/* the first line that reports an error, skipping ptxas's info lines */
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		snprintf(first, sizeof first, "%.*s", (int)(n < sizeof first ? n : sizeof first - 1), p);
		/* "cand.cu(8): error: ...", "... catastrophic error: ...",
		 * "ptxas error   : ...", "NVRTC: ... failed" */
		if (strncmp(first, "ptxas info", 10) &&
		    (strstr(first, "error:") || strstr(first, "error   :") || !strncmp(first, "NVRTC", 5))) {
			line = p;
			break;
		}
		if (!line && n && strncmp(first, "ptxas", 5))
			line = p;    /* fallback: the first non-info line */
		p = eol ? eol + 1 : p + n;
	}
	if (!line) {
		snprintf(out, cap, "%s: NVRTC failed without a message", name);
		return;
	}
	size_t n = strcspn(line, "\n");
	snprintf(first, sizeof first, "%.*s", (int)(n < sizeof first ? n : sizeof first - 1), line);
	/* "cand.cu(12): error: ..." -> "PATH:12: error: ..." */
	int ln;
	char rest[600];
	if (sscanf(first, PROG_NAME "(%d): %599[^\n]", &ln, rest) == 2)
		snprintf(out, cap, "%s:%d: %s", name, ln, rest);
	else
		snprintf(out, cap, "%s: %s", name, first);
}

static const char *arg_desc(const struct cr_plan *p, int stage, const struct cr_plaunch *l, int a,
			    char *buf, size_t cap)
{
	const struct cr_parg *pa = &l->args[a];
	if (pa->kind == CR_PARG_SLOT)
		snprintf(buf, cap, "buffer '%s' (a pointer, 8 bytes)", p->st[stage].slots[pa->slot].name);
	else if (pa->kind == CR_PARG_INT)
		snprintf(buf, cap, "an integer");
	else
		snprintf(buf, cap, "a float literal");
	return buf;
}

enum cr_status check_cuda_launches(const struct cr_plan *p, const struct cr_cubin_info *info,
				      const char *path, struct cr_err *err)
{
	const char *name = path ? path : "<candidate>";
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < p->st[s].n_launch; i++) {
			const struct cr_plaunch *l = &p->st[s].launch[i];
			const struct cr_cubin_kernel *k = cr_cubin_find(info, l->fn), *m;
			char d[200];
			if (!k) {
				if ((m = cr_cubin_find_mangled(info, l->fn)))
					return cr_errf(err, CR_EINPUT,
						       "%s:%d: kernel '%s' is not extern \"C\" (the cubin has the C++ name %s): declare it extern \"C\" __global__",
						       name, l->line, l->fn, m->name);
				return cr_errf(err, CR_EINPUT,
					       "%s:%d: no extern \"C\" __global__ kernel named '%s' in the compiled candidate",
					       name, l->line, l->fn);
			}
			if (k->n_params < 0)
				continue;   /* sizes not recorded: the driver checks at run time */
			if (k->n_params != l->n_args)
				return cr_errf(err, CR_EINPUT,
					       "%s:%d: kernel '%s' takes %d parameter%s, the launch passes %d",
					       name, l->line, l->fn, k->n_params, k->n_params == 1 ? "" : "s",
					       l->n_args);
			for (int a = 0; a < l->n_args; a++) {
				int sz = k->param_size[a];
				bool ok = l->args[a].kind == CR_PARG_SLOT ? sz == 8 : (sz == 4 || sz == 8);
				if (!ok)
					return cr_errf(err, CR_EINPUT,
						       "%s:%d: argument %d of '%s' is %s but the kernel's parameter is %d bytes",
						       name, l->line, a + 1, l->fn,
						       arg_desc(p, s, l, a, d, sizeof d), sz);
			}
		}
	return CR_OK;
}

static void ok_detail(const struct cr_plan *p, const struct cr_cuda_build *b, char *out, size_t cap)
{
	const char *seen[2 * CR_MAX_LAUNCH];
	int n_seen = 0;
	size_t used = (size_t)snprintf(out, cap, "compiled for %s: ", b->arch);

	for (int s = 0; s < 2; s++)
		for (int i = 0; i < p->st[s].n_launch; i++) {
			const char *fn = p->st[s].launch[i].fn;
			const struct cr_cubin_kernel *k = cr_cubin_find(&b->info, fn);
			bool dup = false;
			char sp[64];
			for (int q = 0; q < n_seen; q++)
				dup |= !strcmp(seen[q], fn);
			if (dup || !k || used >= cap)
				continue;
			seen[n_seen++] = fn;
			if (k->spill_stores < 0)
				snprintf(sp, sizeof sp, "spills unknown");
			else if (k->spill_stores + k->spill_loads == 0)
				snprintf(sp, sizeof sp, "0 spills");
			else
				snprintf(sp, sizeof sp, "spills %d B stored, %d B loaded", k->spill_stores,
					 k->spill_loads);
			used += (size_t)snprintf(out + used, cap - used, "%s %d regs, %s; ", fn, k->regs, sp);
		}
	if (used < cap)
		snprintf(out + used, cap - used, "not run (compile only)");
}

/* Binds a parsed candidate (moved into the plan) for the cuda backend;
 * false with r's status and detail set (format_error) when it cannot go on
 * to the compiler. On true the plan is bound (release it). */
static bool bind_cuda(const struct task *t, const char *path, struct cr_cand *cand,
		      struct cr_plan *plan, struct cr_result *r)
{
	struct cr_err e2;
	const char *name = path ? path : "<candidate>";

	cr_err_init(&e2);
	if (!cand->cuda) {
		r->status = CHECK_FORMAT_ERROR;
		snprintf(r->detail, sizeof r->detail,
			 "%s: CPU launch form on the cuda backend (a CUDA candidate launches kernel<<<grid, block>>>(args))",
			 name);
		cr_cand_release(cand);
		return false;
	}
	if (cr_plan_bind(plan, t, cand, path, &e2)) {
		r->status = CHECK_FORMAT_ERROR;
		snprintf(r->detail, sizeof r->detail, "%s", e2.msg);
		cr_plan_release(plan);
		return false;
	}
	return true;
}

/* The verdict of a bound candidate from its build. */
static void conclude(const struct cr_plan *plan, const struct cr_cuda_build *b, const char *path,
		     double timeout_s, struct cr_result *r)
{
	struct cr_err e2;
	const char *name = path ? path : "<candidate>";

	cr_err_init(&e2);
	if (b->res != CR_COMPILED) {
		r->status = CHECK_COMPILE_ERROR;
		check_cuda_compile_detail(b, name, timeout_s, r->detail, sizeof r->detail);
		return;
	}
	if (check_cuda_launches(plan, &b->info, path, &e2)) {
		r->status = CHECK_FORMAT_ERROR;
		snprintf(r->detail, sizeof r->detail, "%s", e2.msg);
		return;
	}
	r->status = CHECK_OK;
	ok_detail(plan, b, r->detail, sizeof r->detail);
	if (plan->bwd_absent)
		snprintf(r->backward, sizeof r->backward, "absent");
}

static struct cr_cuda_opts with_arch(const struct cr_cuda_opts *o)
{
	struct cr_cuda_opts x = o ? *o : (struct cr_cuda_opts){ 0 };
	x.arch = check_cuda_arch(x.arch);
	return x;
}

enum cr_status check_cuda_build(const struct cr_plan *p, const char *path, const char *src,
				size_t len, const struct cr_cuda_opts *o, const char *cubin_out,
				struct cr_result *r, struct cr_err *err)
{
	struct cr_cuda_opts x = with_arch(o);
	struct cr_cuda_build b;
	enum cr_status st;

	if (!(st = cr_cuda_compile(src, len, &x, &b, err)))
		conclude(p, &b, path, x.timeout_s, r);
	if (!st && cubin_out && r->status == CHECK_OK) {
		FILE *f = fopen(cubin_out, "wb");
		if (!f || fwrite(b.cubin, 1, b.cubin_len, f) != b.cubin_len)
			st = cr_errf(err, CR_EIO, "cannot write %s", cubin_out);
		if (f && fclose(f) && !st)
			st = cr_errf(err, CR_EIO, "cannot write %s", cubin_out);
	}
	cr_cuda_build_release(&b);
	return st;
}

enum cr_status check_cuda_compile(const struct task *t, const char *path, const char *src,
				  size_t len, const struct cr_cuda_opts *o, struct cr_result *r,
				  struct cr_err *err)
{
	struct check_cuda_job j = { .t = t, .path = path, .src = src, .len = len };
	struct cr_err e2;
	enum cr_status st;

	cr_result_init(&j.r);
	cr_sha256_hex(src, len, j.r.sha256);
	cr_err_init(&e2);
	if (cr_cand_parse(&j.cand, path, src, len, &e2)) {
		*r = j.r;
		r->status = CHECK_FORMAT_ERROR;
		snprintf(r->detail, sizeof r->detail, "%s", e2.msg);
		return CR_OK;
	}
	st = check_cuda_compile_many(&j, 1, o, 1, err);
	*r = j.r;
	return st;
}

/* Plans are large (~140 KB): the pool binds and concludes this many
 * candidates at a time, each bound once. */
#define CHUNK 64

static enum cr_status compile_chunk(struct check_cuda_job *jobs, int n,
				    const struct cr_cuda_opts *o, int max_par, struct cr_plan *plan,
				    struct cr_cuda_job *cj, int *of, struct cr_err *err)
{
	int m = 0;
	enum cr_status st;

	for (int i = 0; i < n; i++)
		if (bind_cuda(jobs[i].t, jobs[i].path, &jobs[i].cand, &plan[m], &jobs[i].r)) {
			memset(&cj[m], 0, sizeof cj[m]);
			cj[m].src = jobs[i].src;
			cj[m].len = jobs[i].len;
			of[m++] = i;
		}
	st = cr_cuda_compile_many(cj, m, o, max_par, err);
	for (int k = 0; k < m; k++) {
		struct check_cuda_job *j = &jobs[of[k]];
		if (cj[k].b.res == CR_COMPILE_ENV) {
			j->r.status = CHECK_COMPILE_ERROR;
			snprintf(j->r.detail, sizeof j->r.detail, "%s: not compiled: %s",
				 j->path ? j->path : "<candidate>", cj[k].b.log ? cj[k].b.log : "");
		} else {
			conclude(&plan[k], &cj[k].b, j->path, o ? o->timeout_s : 0, &j->r);
		}
		cr_plan_release(&plan[k]);
		cr_cuda_build_release(&cj[k].b);
	}
	return st;
}

enum cr_status check_cuda_compile_many(struct check_cuda_job *jobs, int n,
				       const struct cr_cuda_opts *o, int max_par,
				       struct cr_err *err)
{
	struct cr_cuda_opts x = with_arch(o);
	struct cr_cuda_job *cj = calloc(CHUNK, sizeof *cj);
	int *of = calloc(CHUNK, sizeof *of);
	struct cr_plan *plan = calloc(CHUNK, sizeof *plan);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	enum cr_status st = CR_OK;

	if (max_par <= 0)
		max_par = cores > 0 ? (int)cores : 1;
	if (!cj || !of || !plan) {
		st = cr_errf(err, CR_ENOMEM, "out of memory for %d compile jobs", n);
		for (int i = 0; i < n; i++)
			cr_cand_release(&jobs[i].cand);
	}
	for (int i = 0; !st && i < n; i += CHUNK) {
		enum cr_status s2 = compile_chunk(jobs + i, n - i < CHUNK ? n - i : CHUNK, &x, max_par,
						  plan, cj, of, err);
		if (s2 && !st)
			st = s2;
	}
	free(cj);
	free(of);
	free(plan);
	return st;
}

#else /* !HAVE_CUDA */

void check_cuda_compile_detail(const struct cr_cuda_build *b, const char *path, double timeout_s,
			       char *out, size_t cap)
{
	(void)b; (void)timeout_s;
	snprintf(out, cap, "%s: built without CUDA", path ? path : "<candidate>");
}

enum cr_status check_cuda_launches(const struct cr_plan *p, const struct cr_cubin_info *info,
				   const char *path, struct cr_err *err)
{
	(void)p; (void)info; (void)path;
	return cr_errf(err, CR_EENV, "built without CUDA");
}

enum cr_status check_cuda_build(const struct cr_plan *p, const char *path, const char *src,
				size_t len, const struct cr_cuda_opts *o, const char *cubin_out,
				struct cr_result *r, struct cr_err *err)
{
	(void)p; (void)path; (void)src; (void)len; (void)o; (void)cubin_out; (void)r;
	return cr_errf(err, CR_EENV, "built without CUDA");
}

enum cr_status check_cuda_compile_many(struct check_cuda_job *jobs, int n,
				       const struct cr_cuda_opts *o, int max_par,
				       struct cr_err *err)
{
	(void)o; (void)max_par;
	for (int i = 0; i < n; i++)
		cr_cand_release(&jobs[i].cand);
	return cr_errf(err, CR_EENV, "built without CUDA");
}

enum cr_status check_cuda_compile(const struct task *t, const char *path, const char *src,
				  size_t len, const struct cr_cuda_opts *o, struct cr_result *r,
				  struct cr_err *err)
{
	(void)t; (void)path; (void)src; (void)len; (void)o; (void)r;
	return cr_errf(err, CR_EENV, "built without CUDA");
}

#endif
