/* gen_run.h — `crucible run`'s search: the four strategies (best-of-n,
 * refine, evolve, self-consistency) over a generator (gen_gen.h) and a
 * verifier the CLI supplies, with token budgets, lineage, resume and
 * generation overlapping verification (gen_run.c). Feedback and memory
 * are rendered from the verifier's result struct (gen_feedback.c). */
#ifndef GEN_RUN_H
#define GEN_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "checks/result.h"
#include "common/cr_status.h"
#include "gen/gen_gen.h"

enum gen_strategy { GEN_BEST_OF_N, GEN_REFINE, GEN_EVOLVE, GEN_SELF_CONSISTENCY };

const char *gen_strategy_name(enum gen_strategy s);
/* -1 when name is none of them. */
int gen_strategy_parse(const char *name);

/* One candidate of a task: what was asked, what came back, where it lies. */
struct gen_cand {
	char id[32];             /* s3 (samples), r1t2 (trajectory 1 turn 2), g2c5 (evolve) */
	char path[1024];         /* DIR/cand/<task>/<id>.c|.cu */
	char parent[32];         /* evolve: the parent's id ("" none) */
	int seq;                 /* order within the task (0-based): rows and curves go by it */
	int sample, trajectory, turn, generation;
	int prompt_tokens, completion_tokens, reasoning_tokens, prefill_tokens;
	long cumulative_tokens;  /* completion tokens of this task up to and including this one */
	double gen_s;
	char finish[16];
	uint64_t verify_seed;    /* the seed it is verified with (run seed, task, trajectory, turn) */
	char *text;              /* the completion */
	char *code;              /* the candidate file's contents */
	bool verified;
	struct cr_result r;
	/* self-consistency */
	bool probed, probe_ok;
	double probe_us;
	void *probe;
	int group;               /* agreement group (index of its first member), -1 none */
};

/* What the search asks of the CLI. Every call runs on the thread that
 * called gen_run. */
struct gen_verifier {
	void *ctx;
	/* Verifies c (its file is on disk) for task with c->verify_seed into
	 * c->r, and appends its results row (group: self-consistency's group id,
	 * or NULL). A verdict already on disk (resume) is loaded, not
	 * recomputed. Fails only when the environment cannot do the work. */
	enum cr_status (*verify)(void *ctx, const char *task, struct gen_cand *c, const char *group,
				 struct cr_err *err);
	/* Self-consistency's probe (no reference): sets c->probed, probe_ok,
	 * probe_us, probe. */
	enum cr_status (*probe)(void *ctx, const char *task, struct gen_cand *c, uint64_t probe_seed,
				struct cr_err *err);
	bool (*agree)(void *ctx, const char *task, const struct gen_cand *a, const struct gen_cand *b);
	void (*probe_free)(void *ctx, struct gen_cand *c);
	/* The task's selection: c NULL when nothing was picked. */
	enum cr_status (*selected)(void *ctx, const char *task, const struct gen_cand *c,
				   const char *reason, long tokens_spent, int n_cands, bool budget_stop,
				   struct cr_err *err);
	/* The verifier is about to time (true) / has timed (false): a CPU
	 * generator pauses meanwhile. */
	void (*on_timing)(void *ctx, bool start);
};

struct gen_run_cfg {
	enum gen_strategy strategy;
	const char *out;             /* the run directory */
	const char *backend;         /* "cpu" or "cuda": the candidate kind asked for */
	const char *model_label;     /* the model's name in sidecars and rows */
	const char *const *tasks;    /* task names, in order */
	int n_tasks;
	int n, turns, keep;
	long budget_tokens;          /* 0: none */
	int max_tokens;
	float temperature, top_p, min_p;
	int top_k;
	uint64_t seed;               /* the generation seed */
	uint64_t verify_seed;        /* the verification seed, mixed per candidate */
	const char *system;          /* system message (NULL: none) */
	int batch;                   /* best-of-n: completions per request (builtin) */
	bool resume;
	/* the registry's prompt of a task for a backend (malloc'd; NULL + err) */
	char *(*prompt)(void *ctx, const char *task, const char *backend, struct cr_err *err);
	void *prompt_ctx;
};

/* Runs the search for every task. Candidate files, sidecars and
 * completions go under cfg->out/cand/, curve.csv next to them; rows and
 * the selection go through v. A task whose generation fails is reported on
 * stderr and skipped (the status returned is the first such failure);
 * CR_ENOMEM and a verifier failure end the run. */
enum cr_status gen_run(const struct gen_run_cfg *cfg, struct gen_generator *g,
		       const struct gen_verifier *v, struct cr_err *err);

/* ---- feedback (gen_feedback.c) ---- */

/* The user message that tells the model how candidate c fared: compile and
 * format errors (the log, trimmed), runtime errors and timeouts, the
 * mismatch's stage, shape, profile and one worst element, the anti-cheat
 * verdict's reason, or a correct candidate's speedup with its interval and
 * roofline fraction. Never a reference array; never the seeds (any digits
 * equal to one of seeds[0..n_seeds) are redacted). malloc'd. */
char *gen_feedback(const struct gen_cand *c, const uint64_t *seeds, int n_seeds);
/* One line of the optimisation memory: what a candidate tried and got. */
void gen_memory_line(const struct gen_cand *c, char *buf, size_t cap);

#endif
