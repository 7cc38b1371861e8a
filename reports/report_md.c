/* report_md.c — the markdown printer of `crucible report`: the ablation table
 * (a column per run) and, per run, the timing trust (noisy rows, machine
 * verdict), Fast_p, pass@k / fast_p@k, geometric-mean speedup, status counts,
 * the per-task table and the reasoning-length tables. Prints only; every
 * number comes from struct report_summary. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/report_impl.h"

/* Function calls are sequenced, so several NUM() in one printf get distinct buffers. */
static const char *fmtn(char (*nb)[32], unsigned *i, double v, int prec)
{
	return report_fmt_num(nb[(*i)++ % 8], 32, v, prec);
}
#define NUM(v, prec) fmtn(nb, &nbi, (v), (prec))
static const char *fmtt(char (*nb)[32], unsigned *i, double us)
{
	return report_fmt_time(nb[(*i)++ % 8], 32, us);
}
#define TIME(us) fmtt(nb, &nbi, (us))

static void print_fast(FILE *f, const struct report_summary *s)
{
	char nb[8][32];
	unsigned nbi = 0;
	const struct report_opts *o = &s->opts;

	fprintf(f, "### Fast_p\n\nfast_p = (1/N) Σ_tasks 1[some candidate correct ∧ speedup > p], "
		"N = %zu; a task with no candidate counts as failed. For p > 0 only trusted "
		"figures count (timed, not noisy).\n\n| | ", s->n_tasks);
	for (size_t j = 0; j < o->np; j++)
		fprintf(f, "fast_%g | ", o->p[j]);
	fprintf(f, "\n|---|");
	for (size_t j = 0; j < o->np; j++)
		fprintf(f, "---:|");
	fprintf(f, "\n| %s | ", s->unit == RU_CANDIDATE ? "best-of-n" :
		s->unit == RU_TRAJECTORY ? "best of every candidate (all trajectories and turns)" :
		"best of every candidate (all generations)");
	for (size_t j = 0; j < o->np; j++)
		fprintf(f, "%s | ", NUM(s->fast_best[j], 4));
	fprintf(f, "\n| mean over %s | ", s->unit == RU_TRAJECTORY ? "trajectories" :
		"sample indices");
	for (size_t j = 0; j < o->np; j++)
		fprintf(f, "%s | ", NUM(s->fast_sample_mean[j], 4));
	fprintf(f, "\n");
	for (size_t si = 0; si < s->n_samples; si++) {
		fprintf(f, s->unit == RU_TRAJECTORY ? "| trajectory %ld (best of its turns) | " :
			s->unit == RU_SEARCH ? "| child index %ld (every generation) | " :
			"| sample %ld | ", s->sample_ids[si]);
		for (size_t j = 0; j < o->np; j++)
			fprintf(f, "%s | ", NUM(s->fast_sample[si * o->np + j], 4));
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
	if (!s->timing_measured) {
		fprintf(f, "**Not measured**: %s, so fast_p is n/a (unknown), not 0.\n\n",
			!s->correct_measured ? "a compile-only run (nothing was run or timed)" :
			s->prov.timing == 0 ? "the run was not timed (run.json \"timing\": false)" :
			"no row of the run was timed");
		return;
	}
	if (s->n_correct_nospeed)
		fprintf(f, "%d correct candidate(s) have no speedup: they count as correct "
			"but never as faster than p.\n\n", s->n_correct_nospeed);
	if (s->n_noisy)
		fprintf(f, "**Fast_p for p > 0 is a lower bound**: %d row(s) have noisy timing "
			"figures (%d of them correct); a correct noisy row counts for fast_0 but "
			"never as faster than p > 0.\n\n", s->n_noisy, s->n_correct_noisy);
}

void report_print_trust_md(FILE *f, const struct report_summary *s)
{
	if (s->n_untasked)
		fprintf(f, "%d row(s) name no task (a candidate file that gave none or could not "
			"be read): counted in the status table, in no task's figures.\n\n",
			s->n_untasked);
	if (!s->n_timed)
		fprintf(f, "Timing: no timed rows.\n\n");
	else if (!s->n_noisy)
		fprintf(f, "Timing: %d timed row(s), none noisy.\n\n", s->n_timed);
	else
		fprintf(f, "Timing: %d timed row(s), %d noisy (figures not trusted, kept out of "
			"Fast_p).\n\n", s->n_timed, s->n_noisy);
	if (*s->machine_verdict && s->timing_measured) /* nothing was timed: no load to judge */
		fprintf(f, "Machine while timing: **%s**%s%s.\n\n", s->machine_verdict,
			*s->machine_why ? " — " : "", s->machine_why);
}

/* What n counts in pass@k, by the run's unit (issue 31). */
static void print_unit_rule(FILE *f, const struct report_summary *s)
{
	if (s->unit == RU_TRAJECTORY)
		fprintf(f, "Refine run: the turns of a trajectory depend on each other (turn t+1 "
			"is prompted with turn t and its verdict), so they are not independent "
			"samples. n = the task's trajectories (%d in all), c = those with a correct "
			"turn (fast_p@k: a turn correct and faster than p) — each trajectory at its "
			"best so far, as Kevin reports best-of-trajectory.", s->n_units);
	else if (s->unit == RU_SEARCH)
		fprintf(f, "Evolve run: the candidates of later generations are children of the "
			"fittest so far, prompted with every earlier result, so they are not "
			"independent samples: a task's search is one draw (n = 1), correct when "
			"any of its candidates is. pass@1 is the fraction of tasks the search "
			"solved; pass@k for k > 1 is undefined. The draft's own pass@k is below.");
	else
		fprintf(f, "n = the task's candidates, c = correct ones (or correct and faster "
			"than p for fast_p@k).");
}

static void print_passk(FILE *f, const struct report_summary *s)
{
	char nb[8][32];
	unsigned nbi = 0;
	const struct report_opts *o = &s->opts;

	fprintf(f, "### pass@k and fast_p@k\n\nUnbiased estimator 1 − C(n−c,k)/C(n,k) = "
		"1 − Π_{i=n−c+1..n} (1 − k/i), averaged over tasks. ");
	print_unit_rule(f, s);
	fprintf(f, " Defined for k ≤ n; tasks with n < k are left out of that k's mean and "
		"counted below.\n\n| k | pass@k | ");
	for (size_t j = 0; j < o->np; j++)
		fprintf(f, "fast_%g@k | ", o->p[j]);
	fprintf(f, "tasks with n < k |\n|---:|---:|");
	for (size_t j = 0; j < o->np; j++)
		fprintf(f, "---:|");
	fprintf(f, "---:|\n");
	for (size_t ki = 0; ki < o->nk; ki++) {
		fprintf(f, "| %d | %s | ", o->k[ki], NUM(s->pass_k[ki], 4));
		for (size_t j = 0; j < o->np; j++)
			fprintf(f, "%s | ", NUM(s->fastp_k[ki * 32 + j], 4));
		fprintf(f, "%d%s |\n", s->k_short[ki],
			isnan(s->pass_k[ki]) && s->correct_measured ?
			" (n < k for every task: undefined)" : "");
	}
	fprintf(f, "\n");
	if (!s->correct_measured)
		fprintf(f, "**Not measured**: a compile-only run (%d candidate(s) compiled, never "
			"run), so pass@k is n/a (unknown), not 0.\n\n",
			s->status_counts[RS_COMPILED]);
	else if (!s->timing_measured)
		fprintf(f, "fast_p@k is n/a: the run was not timed.\n\n");
	if (s->unit == RU_CANDIDATE)
		return;
	fprintf(f, "For comparison only, every candidate taken as an independent sample "
		"(what this table showed before issue 31; not a pass@k of this run):");
	for (size_t ki = 0; ki < o->nk; ki++)
		fprintf(f, "%s pass@%d = %s", ki ? "," : "", o->k[ki], NUM(s->pass_k_cand[ki], 4));
	fprintf(f, ".\n\n");
	if (s->unit == RU_SEARCH) {
		fprintf(f, "The draft (generation 0) is N independent samples of one prompt: its "
			"pass@k over those candidates (%d, %d correct):", s->draft_n, s->draft_c);
		for (size_t ki = 0; ki < o->nk; ki++)
			fprintf(f, "%s pass@%d = %s", ki ? "," : "", o->k[ki],
				NUM(s->draft_pass[ki], 4));
		fprintf(f, ".\n\n");
	}
}

/* pass@k and fast_p@1 by turn (refine) or generation (evolve), each unit at
 * its best so far. */
static void print_steps(FILE *f, const struct report_summary *s)
{
	char nb[8][32];
	unsigned nbi = 0;
	const struct report_opts *o = &s->opts;
	const char *step = s->unit == RU_TRAJECTORY ? "turn" : "generation";
	const char *units = s->unit == RU_TRAJECTORY ? "trajectories" : "tasks";
	size_t k1 = o->nk;

	if (s->unit == RU_CANDIDATE || !s->n_steps)
		return;
	for (size_t ki = 0; ki < o->nk && k1 == o->nk; ki++)
		if (o->k[ki] == 1)
			k1 = ki;
	fprintf(f, "### By %s (best so far)\n\nAt %s t a %s counts as correct when one of "
		"its candidates of %s ≤ t is (fast at p likewise); n is the same at every %s "
		"(%d %s in all). %s\n\n| %s | candidates of this %s | %s correct so far |", step,
		step, s->unit == RU_TRAJECTORY ? "trajectory" : "task's search", step, step,
		s->n_units, units, s->unit == RU_TRAJECTORY ? "fast_p@1 is the mean over tasks of the "
		"fraction of their trajectories fast at p by then." : "fast_p@1 is the fraction of "
		"tasks whose search has a candidate fast at p by then.", step, step, units);
	for (size_t ki = 0; ki < o->nk; ki++)
		fprintf(f, " pass@%d |", o->k[ki]);
	if (k1 < o->nk)
		for (size_t j = 0; j < o->np; j++)
			fprintf(f, " fast_%g@1 |", o->p[j]);
	fprintf(f, "\n|---:|---:|---:|");
	for (size_t ki = 0; ki < o->nk; ki++)
		fprintf(f, "---:|");
	if (k1 < o->nk)
		for (size_t j = 0; j < o->np; j++)
			fprintf(f, "---:|");
	fprintf(f, "\n");
	for (int g = 0; g < s->n_steps; g++) {
		fprintf(f, "| %ld | %d | %d |", s->step_ids[g], s->step_cands[g], s->step_correct[g]);
		for (size_t ki = 0; ki < o->nk; ki++)
			fprintf(f, " %s |", NUM(s->step_pass[(size_t)g * o->nk + ki], 4));
		if (k1 < o->nk)
			for (size_t j = 0; j < o->np; j++)
				fprintf(f, " %s |", NUM(s->step_fast[((size_t)g * o->nk + k1) * o->np + j], 4));
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
}

static void print_counts(FILE *f, const struct report_summary *s)
{
	char nb[8][32];
	unsigned nbi = 0;
	size_t tot = s->n_rows - s->n_ignored_rows;

	fprintf(f, "### Geometric-mean speedup\n\n");
	if (!s->timing_measured)
		fprintf(f, "Not measured (the run was not timed): n/a.\n\n");
	else if (s->gm_n == 0)
		fprintf(f, "No correct candidate was timed (%d correct).\n\n", s->n_correct);
	else
		fprintf(f, "%s over %d correct timed candidates, %d of them with a noisy figure (kept in: "
			"one row's noise moves a mean over many little, a subset that changes every run "
			"moves it more); 95%% interval %s – %s (Student t-interval on this run's log "
			"speedups, exponentiated; it says nothing about run-to-run variation).\n\n",
			NUM(s->gm, 3), s->gm_n, s->n_correct_noisy, NUM(s->gm_lo, 3), NUM(s->gm_hi, 3));
	fprintf(f, "### Status counts\n\n| status | candidates | share |\n|---|---:|---:|\n");
	for (int i = 0; i < RS_COUNT; i++)
		fprintf(f, "| %s | %d | %s |\n", report_status_name(i), s->status_counts[i],
			NUM(tot ? (double)s->status_counts[i] / (double)tot : NAN, 4));
	fprintf(f, "| **total** | %zu | |\n\n| backward | candidates |\n|---|---:|\n", tot);
	for (int i = 0; i < RB_COUNT; i++)
		fprintf(f, "| %s | %d |\n", report_bw_names[i], s->bw_counts[i]);
	fprintf(f, "\nCorrect (status ok, backward not fail%s): %d of %zu.\n\n",
		s->opts.strict_backward ? " nor absent" : "; absent counts as correct",
		s->n_correct, tot);
}

static void print_tasks(FILE *f, const struct report_summary *s)
{
	char nb[8][32];
	unsigned nbi = 0;
	const struct report_opts *o = &s->opts;

	fprintf(f, "### Per task\n\npass@k per task is \"n < k\" where the task has fewer "
		"than k candidates; a task with no candidate counts as 0. Best and median "
		"speedup are over correct candidates with a trusted figure (timed, not noisy); "
		"beside the best, the median per-call times of that candidate and of the "
		"baseline; \"noisy\" counts the correct candidates whose figure is not "
		"trusted.%s\n\n| task | n | correct |%s", s->unit == RU_TRAJECTORY ?
		" pass@k is over the task's trajectories (n trajectories, c with a correct turn)." :
		s->unit == RU_SEARCH ? " pass@k is over the task's one search (n = 1)." : "",
		s->unit == RU_TRAJECTORY ? " trajectories | correct trajectories |" : "");
	for (size_t ki = 0; ki < o->nk; ki++)
		fprintf(f, " pass@%d |", o->k[ki]);
	fprintf(f, " best speedup | its time | baseline time | median speedup | noisy | ARL | "
		"bucket |\n|---|---:|---:|%s", s->unit == RU_TRAJECTORY ? "---:|---:|" : "");
	for (size_t ki = 0; ki < o->nk; ki++)
		fprintf(f, "---:|");
	fprintf(f, "---:|---:|---:|---:|---:|---:|---|\n");
	for (size_t t = 0; t < s->n_tasks; t++) {
		const struct report_task *T = &s->tasks[t];
		fprintf(f, "| %s | %d | %d |", T->name, T->n, T->c);
		if (s->unit == RU_TRAJECTORY)
			fprintf(f, " %d | %d |", T->nu, T->cu);
		for (size_t ki = 0; ki < o->nk; ki++)
			fprintf(f, " %s |", !s->correct_measured ? "n/a" : T->nu == 0 ? "0" :
				T->nu < o->k[ki] ? "n < k" :
				NUM(report_pass_at_k(T->nu, T->cu, o->k[ki]), 4));
		fprintf(f, " %s | %s | %s | %s | %d | %s | %s |\n", NUM(T->best_speedup, 3),
			TIME(T->best_time_us), TIME(T->best_base_us),
			NUM(T->median_speedup, 3), T->c_noisy, NUM(T->arl, 0),
			T->n_tok ? report_bucket_names[report_bucket(T->arl)] : "n/a");
	}
	fprintf(f, "\n");
}

static void print_group(FILE *f, const char *name, const char *rule,
			const struct report_group *g, int with_tasks)
{
	char nb[8][32];
	unsigned nbi = 0;

	fprintf(f, "| %s | %s | ", name, rule);
	if (with_tasks)
		fprintf(f, "%d | ", g->n_tasks);
	fprintf(f, "%d | %d | %s | %s (%d) |\n", g->n, g->n_correct,
		NUM(g->n ? (double)g->n_correct / g->n : NAN, 4), NUM(g->median_speedup, 3),
		g->n_speed);
}

static void print_reasoning(FILE *f, const struct report_summary *s)
{
	char nb[8][32], rule[96];
	unsigned nbi = 0;
	static const char *const rules[3] = { "ARL < 4000", "4000 ≤ ARL ≤ 8500", "ARL > 8500" };

	if (s->rl_n == 0) {
		/* no tables of empty groups (issue 32) */
		fprintf(f, "### Reasoning length\n\nNo reasoning-length data: no row has "
			"reasoning_tokens.\n\n");
		return;
	}
	fprintf(f, "### Reasoning length\n\n%d candidate(s) with reasoning_tokens; %d left out "
		"(no reasoning_tokens).\n\n", s->rl_n, s->rl_missing);
	fprintf(f, "Difficulty bucket of a task by its average reasoning length (ARL); "
		"correctness and median speedup over its candidates with reasoning_tokens "
		"(median over correct ones with a trusted speedup, their count in "
		"parentheses).\n\n"
		"| bucket | rule | tasks | candidates | correct | correctness | median speedup (n) |\n"
		"|---|---|---:|---:|---:|---:|---:|\n");
	for (int b = 0; b < 3; b++)
		print_group(f, report_bucket_names[b], rules[b], &s->bucket[b], 1);
	fprintf(f, "\nQuartiles of the candidates' own reasoning length (type-7 quantiles "
		"Q1 = %s, Q2 = %s, Q3 = %s; a length equal to a boundary goes to the lower "
		"quartile).\n\n| quartile | tokens | candidates | correct | correctness | "
		"median speedup (n) |\n|---|---|---:|---:|---:|---:|\n",
		NUM(s->q1, 1), NUM(s->q2, 1), NUM(s->q3, 1));
	for (int q = 0; q < 4; q++) {
		char name[8];
		snprintf(name, sizeof name, "Q%d", q + 1);
		if (s->quart[q].n)
			snprintf(rule, sizeof rule, "%.0f – %.0f", s->quart[q].lo, s->quart[q].hi);
		else
			snprintf(rule, sizeof rule, "(empty)");
		print_group(f, name, rule, &s->quart[q], 0);
	}
	fprintf(f, "\nPearson r, reasoning length vs speedup (correct candidates with a "
		"trusted speedup): %s (n = %d).  \nPearson r, reasoning length vs correctness (0/1, all "
		"candidates with reasoning_tokens): %s (n = %d).\n\n",
		NUM(s->r_speed, 4), s->r_speed_n, NUM(s->r_correct, 4), s->r_correct_n);
}

void report_print_md_runs(FILE *f, const struct report_summary *s, size_t n,
			  const struct report_runs *R)
{
	if (R)
		report_runs_print_md(f, R);
	report_print_md(f, s, n);
}

void report_print_md(FILE *f, const struct report_summary *s, size_t n)
{
	if (n > 1)
		report_print_ablation_md(f, s, n);
	for (size_t i = 0; i < n; i++) {
		char per[32];
		if (s[i].n_min == s[i].n_max)
			snprintf(per, sizeof per, "%d", s[i].n_max);
		else
			snprintf(per, sizeof per, "%d–%d", s[i].n_min, s[i].n_max);
		fprintf(f, "## Run: %s\n\n", s[i].label);
		report_print_prov_md(f, &s[i]);
		fprintf(f, "File `%s`: %zu rows, N = %zu tasks (%s), %s candidates "
			"per task.\n\n", s[i].path, s[i].n_rows, s[i].n_tasks,
			s[i].tasks_from_list == 1 ? "the --task-list set" :
			s[i].tasks_from_list == 2 ? "every task found in the files given; "
			"give --task-list for the full set" :
			"the distinct tasks of the file; give --task-list for the full set", per);
		if (s[i].unit == RU_TRAJECTORY)
			fprintf(f, "Trajectories: %d in all, up to %d per task (pass@k counts "
				"trajectories, not turns).\n\n", s[i].n_units, s[i].nu_max);
		if (s[i].meta.reused >= 0)
			fprintf(f, "Resumed (`--resume`): %ld candidate completion(s) reused from disk, "
				"%ld generated anew.\n\n", s[i].meta.reused,
				s[i].meta.generated < 0 ? 0 : s[i].meta.generated);
		if (s[i].n_ignored_rows)
			fprintf(f, "%zu row(s) name tasks outside the task list and are left out.\n\n",
				s[i].n_ignored_rows);
		report_print_trust_md(f, &s[i]);
		print_fast(f, &s[i]);
		print_passk(f, &s[i]);
		print_steps(f, &s[i]);
		print_counts(f, &s[i]);
		print_tasks(f, &s[i]);
		print_reasoning(f, &s[i]);
	}
}

void report_print_ablation_md(FILE *f, const struct report_summary *s, size_t n)
{
	char nb[8][32];
	unsigned nbi = 0;
	const struct report_opts *o = &s[0].opts;
	int machine = 0, noisy = 0;

	fprintf(f, "## Ablation\n\n| metric |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s |", s[i].label);
	fprintf(f, "\n|---|");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "---:|");
	fprintf(f, "\n| file |");
	/* the whole path: every eval directory holds a results.csv */
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s |", s[i].path);
	/* provenance (issue 32): what produced each column */
	fprintf(f, "\n| revision |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s |", *s[i].prov.revision ? s[i].prov.revision : "unknown");
	fprintf(f, "\n| device |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s |", *s[i].prov.device ? s[i].prov.device : "unknown");
	fprintf(f, "\n| seed |");
	for (size_t i = 0; i < n; i++) {
		char seed[160];
		fprintf(f, " %s |", report_prov_seed(&s[i].prov, seed, sizeof seed));
	}
	fprintf(f, "\n| tasks N |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %zu |", s[i].n_tasks);
	fprintf(f, "\n| candidates |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %zu |", s[i].n_rows - s[i].n_ignored_rows);
	for (size_t j = 0; j < o->np; j++) {
		fprintf(f, "\n| fast_%g best-of-n |", o->p[j]);
		for (size_t i = 0; i < n; i++)
			fprintf(f, " %s |", NUM(s[i].fast_best[j], 4));
	}
	for (size_t j = 0; j < o->np; j++) {
		fprintf(f, "\n| fast_%g mean per sample |", o->p[j]);
		for (size_t i = 0; i < n; i++)
			fprintf(f, " %s |", NUM(s[i].fast_sample_mean[j], 4));
	}
	fprintf(f, "\n| pass@k counts (n) |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s (%d) |", s[i].unit == RU_TRAJECTORY ? "trajectories" :
			s[i].unit == RU_SEARCH ? "searches" : "candidates", s[i].n_units);
	for (size_t ki = 0; ki < o->nk; ki++) {
		fprintf(f, "\n| pass@%d |", o->k[ki]);
		for (size_t i = 0; i < n; i++)
			fprintf(f, " %s |", NUM(s[i].pass_k[ki], 4));
	}
	fprintf(f, "\n| timed rows (noisy) |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %d (%d) |", s[i].n_timed, s[i].n_noisy);
	for (size_t i = 0; i < n; i++)
		machine |= *s[i].machine_verdict != '\0';
	if (machine) {
		fprintf(f, "\n| machine while timing |");
		for (size_t i = 0; i < n; i++)
			fprintf(f, " %s |", *s[i].machine_verdict ? s[i].machine_verdict : "n/a");
	}
	fprintf(f, "\n| geomean speedup [95%% interval] (timed of correct) |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s [%s, %s] (%d of %d) |", NUM(s[i].gm, 3), NUM(s[i].gm_lo, 3),
			NUM(s[i].gm_hi, 3), s[i].gm_n, s[i].n_correct);
	fprintf(f, "\n| r(length, speedup) (n) |");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s (%d) |", NUM(s[i].r_speed, 3), s[i].r_speed_n);
	fprintf(f, "\n\n");
	for (size_t i = 0; i < n; i++)
		noisy |= s[i].n_noisy > 0;
	if (noisy)
		fprintf(f, "Speedups are over trusted figures only (timed, not noisy): in a run "
			"with noisy rows fast_p for p > 0 is a lower bound.\n\n");
}
