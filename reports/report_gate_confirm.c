/* report_gate_confirm.c — `crucible gate --confirm N`: each suspect task
 * (SLOWER, or INCONCLUSIVE with a slowdown beyond the threshold not ruled out)
 * is re-run through `crucible eval`, the baseline's candidate and then the
 * current one in each round, so both sides of a round see the same load.
 *
 * - Runs with samples (samples.csv, today's eval): sequential. After each
 *   round report_gate_look (report_gate_seq.c) decides SLOWER, FASTER, a
 *   slowdown ruled out, or another round, up to N rounds.
 * - Runs without samples (per-run speedups only): N rounds, then one decision
 *   on the pooled per-run speedups (report_gate_decide), one look at alpha.
 *
 * A current candidate not correct on a re-run is LOST. The re-runs' files
 * are removed afterwards (docs/REPORTS.md "Confirming a regression"). */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reports/report_impl.h"
#include "common/cr_text.h"

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

/* Runs `crucible eval CAND --out DIR ARGS...` (output to DIR/eval.log). */
static enum cr_status run_eval(const struct report_gate_opts *o, const char *cand,
			       const char *dir, struct cr_err *e)
{
	char **argv = calloc(o->n_eval_args + 6, sizeof *argv), logp[4200];
	size_t n = 0;
	int status;
	pid_t pid;

	if (!argv)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	argv[n++] = "crucible";
	argv[n++] = "eval";
	argv[n++] = (char *)cand;
	argv[n++] = "--out";
	argv[n++] = (char *)dir;
	for (size_t i = 0; i < o->n_eval_args; i++)
		argv[n++] = o->eval_args[i];
	snprintf(logp, sizeof logp, "%s.log", dir);
	fflush(NULL); /* else the child's freopen writes the parent's buffers again */
	pid = fork();
	if (pid < 0) {
		free(argv);
		return cr_errf(e, CR_EIO, "--confirm: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (!freopen(logp, "w", stdout) || !freopen(logp, "a", stderr))
			_exit(126);
		execv(o->crucible, argv);
		fprintf(stderr, "cannot run %s: %s\n", o->crucible, strerror(errno));
		_exit(127);
	}
	free(argv);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cr_errf(e, CR_EIO, "--confirm: waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127))
		return cr_errf(e, CR_EINPUT, "--confirm: cannot run %s eval (see %s)",
			       o->crucible, logp);
	if (WIFSIGNALED(status))
		return cr_errf(e, CR_EIO, "--confirm: %s eval %s killed by signal %d (see %s)",
			       o->crucible, cand, WTERMSIG(status), logp);
	return CR_OK;
}

/* One re-run of row r: appends its speedup observations to side of t.
 * *ok is 0 when the re-run was not correct or had no speedup. */
static enum cr_status rerun_one(struct report_gate_task *t, int side, const struct report_row *r,
				const struct report_gate_opts *o, int samples, const char *dir,
				int *ok, struct cr_err *e)
{
	struct report_run run;
	char csv[4200], *path;
	enum cr_status st;
	const struct report_row *hit = NULL;
	struct report_opts ro;

	*ok = 0;
	/* the row holds the file name escaped one to one (cr_text_escape_name) */
	if (!(path = cr_text_unescape_name(r->candidate)))
		return cr_errf(e, CR_ENOMEM, "out of memory");
	st = run_eval(o, path, dir, e);
	free(path);
	if (st != CR_OK)
		return st;
	snprintf(csv, sizeof csv, "%s/results.csv", dir);
	if ((st = report_run_load(csv, &run, e)) != CR_OK)
		return cr_errf(e, st, "--confirm: the re-run of %s wrote no usable results "
			       "(%s; log in %s.log)", r->candidate, e->msg, dir);
	if (samples && (st = report_run_load_samples(&run, e)) != CR_OK)
		goto out;
	for (size_t i = 0; i < run.n_rows && !hit; i++)
		if (!strcmp(run.rows[i].candidate, r->candidate))
			hit = &run.rows[i];
	if (!hit) {
		st = cr_errf(e, CR_EINPUT, "--confirm: the re-run of %s has no row for it (log in "
			     "%s.log)", r->candidate, dir);
		goto out;
	}
	if (*r->sha256 && strcmp(hit->sha256, r->sha256)) {
		st = cr_errf(e, CR_EINPUT, "--confirm: %s changed since the run (source_sha256 "
			     "%.12s… then, %.12s… now)", r->candidate, r->sha256, hit->sha256);
		goto out;
	}
	memset(&ro, 0, sizeof ro);
	ro.strict_backward = o->strict_backward;
	if (!report_row_correct(hit, &ro) || isnan(hit->speedup))
		goto out;
	*ok = 1;
	if (samples) {
		if (!run.has_samples) {
			st = cr_errf(e, CR_EINPUT, "--confirm: the re-run of %s wrote no samples.csv "
				     "but the gated runs have one", r->candidate);
			goto out;
		}
		size_t n = hit->n_cand < hit->n_base ? hit->n_cand : hit->n_base;
		for (size_t k = 0; k < n && st == CR_OK; k++)
			st = report_gate_obs_push(t, side, hit->s_base[k] / hit->s_cand[k], e);
	} else {
		st = report_gate_obs_push(t, side, hit->speedup, e);
	}
	if (hit->noisy == 1)
		*(side ? &t->cur_noisy : &t->base_noisy) = 1;
out:
	report_run_release(&run);
	return st;
}

/* The smallest two-sided Mann-Whitney p of na vs nb observations (perfect
 * separation): below it no difference can be significant. */
static double min_p(size_t na, size_t nb)
{
	double *v = malloc((na + nb + 1) * sizeof *v), p;

	if (!v)
		return NAN;
	for (size_t i = 0; i < na + nb; i++)
		v[i] = (double)i;
	p = report_mann_whitney(v, na, v + na, nb);
	free(v);
	return p;
}

static double log_choose(size_t n, size_t k)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);
}

/* The smallest two-sided stratified p after `rounds` rounds of nb vs nc
 * samples each (every round perfectly separated): 2 / prod C(nb + nc, nb);
 * without baseline re-runs, one stratum of nb vs rounds * nc. */
static double min_p_seq(size_t nb, size_t nc, int rounds, int base_too)
{
	if (!base_too)
		return fmin(1, 2 * exp(-log_choose(nb + (size_t)rounds * nc, nb)));
	return fmin(1, 2 * exp(-(double)rounds * log_choose(nb + nc, nb)));
}

static int suspect(const struct report_gate_task *t, const struct report_gate_opts *o)
{
	return t->verdict == RV_SLOWER ||
	       (t->verdict == RV_INCONCLUSIVE && !report_gate_slowdown_excluded(t, o));
}

/* Without samples: N rounds of per-run speedups, pooled with the gated rows'
 * own, then one decision at alpha (one look: no spending needed). */
static enum cr_status confirm_fixed(struct report_gate_task *t, size_t i, int base_too,
				    const char *root, const struct report_gate_opts *o, FILE *log,
				    struct cr_err *e)
{
	char dir[4200];
	int bad = 0, bad_base = 0, ok;
	enum cr_status st;
	size_t l;

	if ((st = report_gate_obs_push(t, 0, t->base_sp, e)) != CR_OK ||
	    (st = report_gate_obs_push(t, 1, t->cur_sp, e)) != CR_OK)
		return st;
	if (log && min_p(t->n_obs_base + (base_too ? (size_t)o->confirm : 0),
			 t->n_obs_cur + (size_t)o->confirm) >= o->alpha)
		fprintf(log, "crucible gate: warning: %zu vs %zu observations can never reach "
			"p < %g (Mann-Whitney); %s cannot be confirmed, raise --confirm\n",
			t->n_obs_base + (base_too ? (size_t)o->confirm : 0),
			t->n_obs_cur + (size_t)o->confirm, o->alpha, t->name);
	if (log)
		fprintf(log, "crucible gate: confirming %s (%s): %d re-run(s) of %s%s (per-run "
			"speedups: no samples.csv)\n", t->name, report_verdict_names[t->verdict],
			o->confirm, t->cur_row->candidate,
			base_too ? " and of the baseline candidate" : "");
	for (int k = 0; k < o->confirm; k++) {
		if (base_too) {
			snprintf(dir, sizeof dir, "%s/t%zu-base-%d", root, i, k);
			if ((st = rerun_one(t, 0, t->base_row, o, 0, dir, &ok, e)) != CR_OK)
				return st;
			bad_base += !ok;
		}
		snprintf(dir, sizeof dir, "%s/t%zu-cur-%d", root, i, k);
		if ((st = rerun_one(t, 1, t->cur_row, o, 0, dir, &ok, e)) != CR_OK)
			return st;
		bad += !ok;
	}
	t->reruns = o->confirm;
	report_gate_decide(t, o);
	l = strlen(t->reason);
	snprintf(t->reason + l, sizeof t->reason - l, "; after --confirm %d%s%s%s", o->confirm,
		 base_too ? " (both sides)" : " (current only)",
		 bad ? ", current not correct on a re-run" : "",
		 bad_base ? ", baseline not correct on a re-run" : "");
	/* a candidate correct once and not on a re-run is not a speed question:
	 * report it as a correctness loss */
	if (bad)
		t->verdict = RV_LOST;
	return CR_OK;
}

/* With samples: rounds until report_gate_look decides, at most N. */
static enum cr_status confirm_seq(struct report_gate_task *t, size_t i, int base_too,
				  const char *root, const struct report_gate_opts *o, FILE *log,
				  struct cr_err *e)
{
	char dir[4200];
	int bad = 0, bad_base = 0, ok, k = 0;
	enum report_stop stop = RS_NONE;
	enum cr_status st;
	size_t l, n0b = t->n_obs_base, n0c = t->n_obs_cur;

	t->round_base = calloc((size_t)o->confirm + 1, sizeof *t->round_base);
	t->round_cur = calloc((size_t)o->confirm + 1, sizeof *t->round_cur);
	if (!t->round_base || !t->round_cur)
		return cr_errf(e, CR_ENOMEM, "out of memory");
	t->round_base[0] = n0b;
	t->round_cur[0] = n0c;
	t->base_rerun = base_too;
	if (log && min_p_seq(n0b, n0c, o->confirm, base_too) >= o->alpha / o->confirm)
		fprintf(log, "crucible gate: warning: %d round(s) of %zu vs %zu samples can never "
			"reach p < %g (alpha / %d looks); %s cannot be confirmed, raise "
			"--confirm or the samples per run (--time-cap)\n", o->confirm, n0b, n0c,
			o->alpha / o->confirm, o->confirm, t->name);
	if (log)
		fprintf(log, "crucible gate: confirming %s (%s): up to %d round(s) of %s%s, "
			"stopping when decided at p < %g a look\n", t->name,
			report_verdict_names[t->verdict], o->confirm, t->cur_row->candidate,
			base_too ? " after the baseline candidate" : " (baseline not re-run)",
			o->alpha / o->confirm);
	while (k < o->confirm && stop == RS_NONE) {
		k++;
		if (base_too) {
			snprintf(dir, sizeof dir, "%s/t%zu-base-%d", root, i, k);
			if ((st = rerun_one(t, 0, t->base_row, o, 1, dir, &ok, e)) != CR_OK)
				return st;
			bad_base += !ok;
		}
		snprintf(dir, sizeof dir, "%s/t%zu-cur-%d", root, i, k);
		if ((st = rerun_one(t, 1, t->cur_row, o, 1, dir, &ok, e)) != CR_OK)
			return st;
		bad += !ok;
		t->round_base[k] = t->n_obs_base;
		t->round_cur[k] = t->n_obs_cur;
		if (bad)
			break;
		stop = report_gate_look(t, k, o);
		if (log)
			fprintf(log, "crucible gate:   %s round %d: ratio %.3f, p %.2g (a change), "
				"%.2g (no slowdown beyond %g%%)%s%s\n", t->name, k, t->ratio, t->p,
				t->p_ruled_out, o->threshold * 100, stop ? ": " : "",
				stop ? report_stop_names[stop] : "");
	}
	t->reruns = k;
	if (bad) {
		/* correct once and not on a re-run: a correctness loss, not a speed
		 * question */
		t->verdict = RV_LOST;
		t->stop = RS_NONE;
		snprintf(t->reason, sizeof t->reason, "no longer correct: not correct on --confirm "
			 "round %d", k);
		return CR_OK;
	}
	l = strlen(t->reason);
	snprintf(t->reason + l, sizeof t->reason - l, "; --confirm stopped after %d of %d%s",
		 k, o->confirm, bad_base ? ", baseline not correct on a re-run" : "");
	return CR_OK;
}

enum cr_status report_gate_confirm(struct report_gate *g, const struct report_gate_opts *o,
				   FILE *log, struct cr_err *e)
{
	char tmpl[] = "/tmp/crucible-gate-XXXXXX";
	const char *tmp = getenv("TMPDIR");
	char *root;
	enum cr_status st = CR_OK;
	int made = 0;

	if (o->confirm <= 0)
		return CR_OK;
	if (tmp && *tmp) {
		root = malloc(strlen(tmp) + sizeof "/crucible-gate-XXXXXX");
		if (!root)
			return cr_errf(e, CR_ENOMEM, "out of memory");
		sprintf(root, "%s/crucible-gate-XXXXXX", tmp);
	} else if (!(root = strdup(tmpl))) {
		return cr_errf(e, CR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < g->n && st == CR_OK; i++) {
		struct report_gate_task *t = &g->tasks[i];
		/* the baseline is re-run too when it is the same file, unchanged
		 * (access() only; a changed file is caught by its hash) */
		char *bp = t->base_row ? cr_text_unescape_name(t->base_row->candidate) : NULL;
		int base_too = bp && access(bp, R_OK) == 0;
		free(bp);
		if (!suspect(t, o))
			continue;
		if (!made && !(made = mkdtemp(root) != NULL)) {
			st = cr_errf(e, CR_EIO, "--confirm: cannot make %s: %s", root, strerror(errno));
			break;
		}
		if (t->n_obs_base > 0 && t->n_obs_cur > 0)
			st = confirm_seq(t, i, base_too, root, o, log, e);
		else
			st = confirm_fixed(t, i, base_too, root, o, log, e);
	}
	report_gate_recount(g);
	if (made)
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(root);
	return st;
}
