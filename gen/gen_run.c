/* gen_run.c — the search of `crucible run`.
 *
 * Every task has a list of candidates in a fixed order (seq). A strategy
 * issues requests for candidates (each request names the candidates it
 * will fill); generator threads take the pending request of the lowest
 * (task, seq) and fill it, while this thread verifies candidates strictly
 * in (task, seq) order and tells the strategy each verdict, which may issue
 * more requests. So generation overlaps verification, yet every file,
 * row, seed and budget decision is the same whatever the timing: the
 * requests a strategy issues depend only on verdicts, taken in order, and
 * the budget reserves n × max_tokens for each request in flight.
 *
 * On disk, per candidate: cand/<task>/<id>.txt (the completion, written by
 * the generator thread, fsynced) and then <id>.json (its sidecar, renamed
 * into place: its presence means the completion is whole). --resume
 * takes a completion whose sidecar exists from disk instead of asking the
 * generator. The candidate file <id>.c|.cu and the full sidecar are
 * written before the candidate is verified. */
#include "gen/gen_run.h"
#include "gen/gen_impl.h"

#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cr_text.h"
#include "decode/dec_run.h"
#include "tasks/task_rng.h"

#define MIN_REQUEST_TOKENS 16   /* below this a request is not worth sending: the budget is spent */
#define MEMORY_LINES 12         /* evolve: earlier children shown to a new child */

static const char *const strategy_names[] = { "best-of-n", "refine", "evolve", "self-consistency" };

const char *gen_strategy_name(enum gen_strategy s)
{
	return (unsigned)s < 4 ? strategy_names[s] : "?";
}

int gen_strategy_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (name && !strcmp(name, strategy_names[i]))
			return i;
	return -1;
}

/* ---- requests ---- */

struct request {
	int task;                    /* index into the run's tasks */
	int seq0;                    /* the seq of its first candidate: its priority */
	int n;
	struct gen_cand **cands;     /* [n] */
	char **ids;                  /* [n] */
	struct gen_msg *msgs;        /* owned strings */
	int n_msgs;
	char conv[160];
	uint64_t seed, sample0;
	int max_tokens;
	long reserved;               /* n × max_tokens, held against the budget until verified */
	bool taken, done, on_disk;
	enum cr_status st;
	struct cr_err err;
	struct gen_completion *outs; /* [n] */
	struct request *next;
	/* progress (under run.pmu) */
	struct run *R;
	int *tok;                    /* [n] tokens so far of each completion, as reported */
	long tok_sum;
	int64_t t_start;             /* when a generator thread took it */
};

struct task_state {
	const char *name;
	int idx;
	char *prompt;                /* the registry's user prompt */
	struct gen_cand **c;         /* by seq */
	int n_c, cap_c;
	int next;                    /* seq of the next candidate to verify (or probe) */
	int next2;                   /* self-consistency: the next to verify after the probes */
	long spent;                  /* completion tokens of the candidates verified so far */
	long reserved;               /* of requests not yet verified */
	int outstanding;             /* requests not yet done */
	bool budget_stop, over_budget, finished;
	int evolve_gen;              /* evolve: the generation being verified */
	uint64_t probe_seed;         /* self-consistency: the probes' inputs, a CSPRNG draw per task
				      * and process (0: not drawn yet), never from the run seed */
	FILE *curve;
};

struct run {
	const struct gen_run_cfg *cfg;
	struct gen_generator *g;
	const struct gen_verifier *v;
	struct task_state *ts;
	pthread_mutex_t mu;
	pthread_cond_t cv_gen, cv_main;
	struct request *queue;       /* every request issued, newest first */
	bool stop;
	int busy;
	FILE *curve;
	/* the loop's own cost: wall time not spent verifying or waiting */
	int64_t wait_ns, verify_ns;
	int n_cands;
	struct gen_run_stats st;     /* under mu where generator threads touch it */
	/* progress on stderr (under pmu): the status line of a terminal */
	pthread_mutex_t pmu;
	bool tty, drawn;
	int64_t last_draw, busy_ns, busy_since;
	long p_tokens;               /* tokens reported by generators so far, this process */
	int p_inflight, p_finished, p_planned;
	struct request *live[16];    /* requests in flight shown on the line */
	int n_live;
};

const char *const gen_run_count_srcs[GEN_RUN_COUNT_SRCS] = { "decoder", "tokenizer", "usage",
	"usage-split", "chunks", "sidecar", "estimate", "unknown", "other" };

static int count_src_index(const char *s)
{
	for (int i = 0; i < GEN_RUN_COUNT_SRCS - 2; i++)
		if (!strcmp(s, gen_run_count_srcs[i]))
			return i;
	return s[0] && strcmp(s, "unknown") ? GEN_RUN_COUNT_SRCS - 1 : GEN_RUN_COUNT_SRCS - 2;
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

static uint64_t seed_of(uint64_t seed, const char *task, uint64_t a, uint64_t b)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = task; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return task_mix(task_mix(task_mix(seed, h), a + 1), b + 1);
}

/* ---- files ---- */

static enum cr_status mkdirs(const char *path, struct cr_err *err)
{
	char p[1400];
	snprintf(p, sizeof p, "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return cr_errf(err, CR_EIO, "%s: cannot create directory: %s", p, strerror(errno));
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return cr_errf(err, CR_EIO, "%s: cannot create directory: %s", p, strerror(errno));
	return CR_OK;
}

/* Writes path through path.tmp, fsync and rename: whole or absent. */
static enum cr_status write_atomic(const char *path, const char *data, size_t n, struct cr_err *err)
{
	char tmp[1500];
	int fd;

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	/* whatever is planted at tmp is removed, not written through */
	if (unlink(tmp) && errno != ENOENT)
		return cr_errf(err, CR_EIO, "%s: cannot replace: %s", tmp, strerror(errno));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return cr_errf(err, CR_EIO, "%s: cannot write: %s", tmp, strerror(errno));
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, data + off, n - off);
		if (w <= 0) {
			close(fd);
			return cr_errf(err, CR_EIO, "%s: write failed: %s", tmp, strerror(errno));
		}
		off += (size_t)w;
	}
	if (fsync(fd) || close(fd) || rename(tmp, path))
		return cr_errf(err, CR_EIO, "%s: cannot write: %s", path, strerror(errno));
	return CR_OK;
}

static void cand_file(const struct run *R, const char *task, const char *id, const char *ext,
		      char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/cand/%s/%s.%s", R->cfg->out, task, id, ext);
}

/* A token count, null when unknown. */
static json_t *count(int n)
{
	return n >= 0 ? json_integer(n) : json_null();
}

/* The sidecar (SPEC §3): generation fields and token counts (count_src,
 * usage_tokens, lost_tokens: gen_gen.h), and once the candidate's place in
 * its task is known (full), the tokens so far and whether the completion
 * had a code block (none: "status": "no_code"). */
static enum cr_status write_sidecar(const struct run *R, const char *task, const struct gen_cand *c,
				    bool full, struct cr_err *err)
{
	const struct gen_run_cfg *cfg = R->cfg;
	json_t *j = json_object();
	char path[1400], *txt;
	enum cr_status st;

	json_object_set_new(j, "model", json_string(cfg->model_label ? cfg->model_label : ""));
	json_object_set_new(j, "task", json_string(task));
	json_object_set_new(j, "id", json_string(c->id));
	json_object_set_new(j, "strategy", json_string(gen_strategy_name(cfg->strategy)));
	json_object_set_new(j, "sample", json_integer(c->sample));
	json_object_set_new(j, "trajectory", json_integer(c->trajectory));
	json_object_set_new(j, "turn", json_integer(c->turn));
	json_object_set_new(j, "generation", json_integer(c->generation));
	json_object_set_new(j, "parent", json_string(c->parent));
	json_object_set_new(j, "seed", json_integer((json_int_t)(cfg->seed & 0x7fffffffffffffffull)));
	json_object_set_new(j, "temperature", json_real(cfg->temperature));
	json_object_set_new(j, "top_p", json_real(cfg->top_p));
	json_object_set_new(j, "top_k", json_integer(cfg->top_k));
	json_object_set_new(j, "min_p", json_real(cfg->min_p));
	json_object_set_new(j, "max_tokens", json_integer(cfg->max_tokens));
	json_object_set_new(j, "prompt_tokens", count(c->prompt_tokens));
	json_object_set_new(j, "prefill_tokens", count(c->prefill_tokens));
	json_object_set_new(j, "completion_tokens", json_integer(c->completion_tokens));
	json_object_set_new(j, "count_src", json_string(c->count_src));
	json_object_set_new(j, "usage_tokens", count(c->usage_tokens));
	json_object_set_new(j, "lost_tokens", json_integer(c->lost_tokens));
	json_object_set_new(j, "reasoning_tokens", count(c->reasoning_tokens));
	json_object_set_new(j, "finish_reason", json_string(c->finish));
	json_object_set_new(j, "gen_s", json_real(c->gen_s));
	if (full) {
		json_object_set_new(j, "cumulative_tokens", json_integer(c->cumulative_tokens));
		json_object_set_new(j, "code_block", json_boolean(!c->no_code));
		if (c->no_code)
			json_object_set_new(j, "status", json_string(check_verdict_name(CHECK_NO_CODE)));
	}
	txt = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6) | JSON_SORT_KEYS);
	json_decref(j);
	if (!txt)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	cand_file(R, task, c->id, "json", path, sizeof path);
	st = write_atomic(path, txt, strlen(txt), err);
	free(txt);
	return st;
}

/* Takes a completion into its candidate: counts (estimated at four bytes
 * a token where the generator gave none, count_src "estimate") and text. */
static void take_completion(struct gen_cand *c, struct gen_completion *o)
{
	c->text = o->text;
	o->text = NULL;
	c->prompt_tokens = o->prompt_tokens;
	c->completion_tokens = o->completion_tokens >= 0 ? o->completion_tokens
							 : (int)((o->len + 3) / 4);
	snprintf(c->count_src, sizeof c->count_src, "%s",
		 o->completion_tokens < 0 ? "estimate" : o->count_src[0] ? o->count_src : "unknown");
	c->usage_tokens = o->usage_tokens;
	c->lost_tokens = o->lost_tokens > 0 ? o->lost_tokens : 0;
	c->reasoning_tokens = o->reasoning_tokens;
	c->prefill_tokens = o->prefill_tokens;
	c->gen_s = o->gen_s;
	snprintf(c->finish, sizeof c->finish, "%s", o->finish[0] ? o->finish : "?");
}

/* ---- progress on stderr ----
 *
 * On a terminal one status line, redrawn at most 4 times a second from the
 * generators' progress callbacks; every other line clears it first (it
 * comes back with the next callback). Elsewhere a line per finished
 * completion, never the status line. */

#define DRAW_NS 250000000 /* the status line at most 4 times a second */

/* With pmu held: the status line wiped, for a line of its own. */
static void line_clear(struct run *R)
{
	if (R->drawn) {
		fputs("\r\033[K", stderr);
		R->drawn = false;
	}
}

/* A line of its own on stderr (fmt ends with a newline). */
static void say(struct run *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct run *R, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&R->pmu);
	line_clear(R);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	pthread_mutex_unlock(&R->pmu);
}

/* Before a verifier callback, which may print. */
static void quiet(struct run *R)
{
	pthread_mutex_lock(&R->pmu);
	line_clear(R);
	fflush(stderr);
	pthread_mutex_unlock(&R->pmu);
}

static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*n >= cap)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *n, cap - *n, fmt, ap);
	va_end(ap);
	*n = k < 0 ? cap : *n + (size_t)k < cap ? *n + (size_t)k : cap - 1;
}

/* With pmu held: the status line, unless it was drawn less than DRAW_NS ago. */
static void draw(struct run *R)
{
	int64_t now = cr_now_ns(), busy = R->busy_ns + (R->p_inflight ? now - R->busy_since : 0);
	char line[400];
	size_t n = 0;

	if (!R->tty || now - R->last_draw < DRAW_NS)
		return;
	R->last_draw = now;
	append(line, sizeof line, &n, "run: %d/%d candidates, %d in flight", R->p_finished, R->p_planned,
	       R->p_inflight);
	for (int i = 0; i < R->n_live && n < 200; i++) {
		const struct request *q = R->live[i];
		const char *t = R->ts[q->task].name, *b = strrchr(t, '/');
		append(line, sizeof line, &n, "%s%s %s%s%s %ld", i ? ", " : " (", b ? b + 1 : t, q->ids[0],
		       q->n > 1 ? ".." : "", q->n > 1 ? q->ids[q->n - 1] : "", q->tok_sum);
	}
	append(line, sizeof line, &n, "%s, %ld tokens, %.1f tokens/s", R->n_live ? ")" : "", R->p_tokens,
	       busy > 0 ? (double)R->p_tokens * 1e9 / (double)busy : 0.0);
	/* one terminal line: a status line that wraps cannot be redrawn */
	if (n > 159)
		memcpy(line + 156, "...", 4);
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	R->drawn = true;
}

/* gen_req.on_progress: completion k of request pctx has tokens so far. */
static void on_progress(void *pctx, int k, int tokens, size_t bytes)
{
	struct request *q = pctx;
	struct run *R = q->R;

	(void)bytes;
	if (k < 0 || k >= q->n || tokens < 0)
		return;
	pthread_mutex_lock(&R->pmu);
	q->tok_sum += tokens - q->tok[k];
	R->p_tokens += tokens - q->tok[k];
	q->tok[k] = tokens;
	draw(R);
	pthread_mutex_unlock(&R->pmu);
}

/* A generator thread takes q (start) or is done with it. */
static void live(struct run *R, struct request *q, bool start, bool ok)
{
	int64_t now = cr_now_ns();

	pthread_mutex_lock(&R->pmu);
	if (start) {
		if (!R->p_inflight++)
			R->busy_since = now;
		q->t_start = now;
		if (R->n_live < (int)(sizeof R->live / sizeof R->live[0]))
			R->live[R->n_live++] = q;
	} else {
		if (!--R->p_inflight)
			R->busy_ns += now - R->busy_since;
		for (int i = 0; i < R->n_live; i++)
			if (R->live[i] == q) {
				memmove(R->live + i, R->live + i + 1, sizeof *R->live * (size_t)(R->n_live - i - 1));
				R->n_live--;
				break;
			}
		if (ok)
			R->p_finished += q->n;
		/* the counts as stored replace the estimates of the stream */
		for (int k = 0; k < q->n && ok; k++) {
			long fin = q->cands[k]->completion_tokens + q->cands[k]->lost_tokens;
			R->p_tokens += fin - q->tok[k];
			q->tok_sum += fin - q->tok[k];
			q->tok[k] = (int)fin;
		}
		R->last_draw = 0;
		draw(R);
	}
	pthread_mutex_unlock(&R->pmu);
}

/* With mu held: the run's token books. */
static void count_completion(struct run *R, const struct gen_cand *c)
{
	R->st.completion_tokens += c->completion_tokens;
	R->st.lost_tokens += c->lost_tokens;
	R->st.by_src[count_src_index(c->count_src)]++;
}

/* ---- the generator threads ---- */

static struct request *next_pending(struct run *R)
{
	struct request *best = NULL;
	for (struct request *q = R->queue; q; q = q->next)
		if (!q->taken && !q->done &&
		    (!best || q->task < best->task || (q->task == best->task && q->seq0 < best->seq0)))
			best = q;
	return best;
}

/* The completions of a finished request, on disk before anything else
 * sees them: <id>.txt then the sidecar. */
static enum cr_status store(struct run *R, struct request *q, struct cr_err *err)
{
	const char *task = R->ts[q->task].name;
	enum cr_status st = CR_OK;

	for (int k = 0; k < q->n && !st; k++) {
		struct gen_cand *c = q->cands[k];
		char path[1400];
		take_completion(c, &q->outs[k]);
		if (q->on_disk)
			continue;
		cand_file(R, task, c->id, "txt", path, sizeof path);
		if (!(st = write_atomic(path, c->text ? c->text : "", c->text ? strlen(c->text) : 0, err)))
			st = write_sidecar(R, task, c, false, err);
	}
	return st;
}

static void *gen_thread(void *arg)
{
	struct run *R = arg;
	sigset_t all;

	/* signals are the main thread's (the workers' timeouts and children) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&R->mu);
	for (;;) {
		struct request *q = NULL;
		while (!R->stop && !(q = next_pending(R)))
			pthread_cond_wait(&R->cv_gen, &R->mu);
		if (R->stop)
			break;
		q->taken = true;
		R->busy++;
		pthread_mutex_unlock(&R->mu);
		struct gen_req rq = { .task = R->ts[q->task].name, .conv = q->conv[0] ? q->conv : NULL,
				      .msgs = q->msgs, .n_msgs = q->n_msgs, .n = q->n,
				      .ids = (const char *const *)q->ids, .seed = q->seed,
				      .sample0 = q->sample0, .max_tokens = q->max_tokens,
				      .temperature = R->cfg->temperature, .top_p = R->cfg->top_p,
				      .min_p = R->cfg->min_p, .top_k = R->cfg->top_k,
				      .on_progress = on_progress, .pctx = q };
		live(R, q, true, false);
		cr_err_init(&q->err);
		q->st = R->g->complete(R->g->ctx, &rq, q->outs, &q->err);
		if (!q->st)
			q->st = store(R, q, &q->err);
		live(R, q, false, !q->st);
		for (int k = 0; k < q->n && !q->st && !R->tty; k++) {
			const struct gen_cand *c = q->cands[k];
			char lost[64] = "";
			if (c->lost_tokens)
				snprintf(lost, sizeof lost, ", %ld more lost to failed tries", c->lost_tokens);
			say(R, "run: %s %s: generated, %d tokens (%s)%s, finish %s, %.1f s\n", R->ts[q->task].name,
			    c->id, c->completion_tokens, c->count_src, lost, c->finish, c->gen_s);
		}
		pthread_mutex_lock(&R->mu);
		q->done = true;
		R->busy--;
		if (!q->st) {
			R->st.generated += q->n;
			for (int k = 0; k < q->n; k++)
				count_completion(R, q->cands[k]);
		}
		pthread_cond_broadcast(&R->cv_main);
	}
	pthread_mutex_unlock(&R->mu);
	return NULL;
}

/* ---- candidates and requests ---- */

static struct gen_cand *new_cand(struct task_state *t, const char *id, struct cr_err *err)
{
	struct gen_cand *c;
	if (t->n_c == t->cap_c) {
		int cap = t->cap_c ? 2 * t->cap_c : 16;
		struct gen_cand **nc = realloc(t->c, sizeof *nc * (size_t)cap);
		if (!nc) {
			cr_errf(err, CR_ENOMEM, "out of memory");
			return NULL;
		}
		t->c = nc;
		t->cap_c = cap;
	}
	c = calloc(1, sizeof *c);
	if (!c) {
		cr_errf(err, CR_ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(c->id, sizeof c->id, "%s", id);
	c->seq = t->n_c;
	c->group = -1;
	cr_result_init(&c->r);
	t->c[t->n_c++] = c;
	return c;
}

static void free_request(struct request *q)
{
	for (int k = 0; k < q->n; k++) {
		if (q->ids)
			free(q->ids[k]);
		if (q->outs)
			gen_completion_release(&q->outs[k]);
	}
	for (int i = 0; i < q->n_msgs; i++)
		free((char *)q->msgs[i].content);
	free(q->msgs);
	free(q->ids);
	free(q->outs);
	free(q->cands);
	free(q->tok);
	free(q);
}

/* What remains of the task's budget for new requests (LONG_MAX: none). */
static long budget_left(const struct run *R, const struct task_state *t)
{
	if (R->cfg->budget_tokens <= 0)
		return 1L << 60;
	return R->cfg->budget_tokens - t->spent - t->reserved;
}

/* Issues a request for cands[0..n) of task t, with messages msgs (taken:
 * freed here on every path). share: how many requests this wave will issue
 * at once, so the budget is split fairly among them. Returns CR_OK and
 * issues nothing when the budget is spent (t->budget_stop set). */
static enum cr_status issue(struct run *R, struct task_state *t, struct gen_cand **cands, int n,
			    struct gen_msg *msgs, int n_msgs, const char *conv, uint64_t seed,
			    uint64_t sample0, int share, struct cr_err *err)
{
	struct request *q = calloc(1, sizeof *q);
	long left = budget_left(R, t);
	int mt = R->cfg->max_tokens;
	bool all_on_disk = R->cfg->resume;

	if (!q) {
		for (int i = 0; i < n_msgs; i++)
			free((char *)msgs[i].content);
		free(msgs);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	q->msgs = msgs;
	q->n_msgs = n_msgs;
	if (R->cfg->budget_tokens > 0) {
		long per = left / ((long)n * (share > 0 ? share : 1));
		if (per < mt)
			mt = (int)(per > 0 ? per : 0);
	}
	if (mt < MIN_REQUEST_TOKENS && mt < R->cfg->max_tokens) {
		if (!t->budget_stop)
			say(R, "run: %s: token budget %ld reached (%ld spent, %ld held by requests in "
			    "flight); no more requests\n", t->name, R->cfg->budget_tokens, t->spent, t->reserved);
		t->budget_stop = true;
		/* the candidates named for it are dropped: they are the task's last */
		for (int k = 0; k < n; k++) {
			free(t->c[t->n_c - 1]);
			t->n_c--;
		}
		free_request(q);
		return CR_OK;
	}
	q->task = t->idx;
	q->seq0 = cands[0]->seq;
	q->n = n;
	q->seed = seed;
	q->sample0 = sample0;
	q->max_tokens = mt;
	q->reserved = (long)n * mt;
	snprintf(q->conv, sizeof q->conv, "%s", conv ? conv : "");
	q->R = R;
	q->cands = malloc(sizeof *q->cands * (size_t)n);
	q->ids = calloc((size_t)n, sizeof *q->ids);
	q->outs = calloc((size_t)n, sizeof *q->outs);
	q->tok = calloc((size_t)n, sizeof *q->tok);
	if (!q->cands || !q->ids || !q->outs || !q->tok) {
		free_request(q);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	for (int k = 0; k < n; k++) {
		q->cands[k] = cands[k];
		q->ids[k] = xstrdup(cands[k]->id);
	}
	/* --resume: what is on disk is not asked for again */
	for (int k = 0; k < n && all_on_disk; k++) {
		bool found;
		char side[1400];
		struct stat sb;
		enum cr_status st = gen_completion_load(R->cfg->out, t->name, q->ids[k], &q->outs[k], &found, err);
		if (st) {
			free_request(q);
			return st;
		}
		/* whole only with its sidecar, renamed into place after the .txt:
		 * a .txt alone was cut short of its counts by the kill */
		cand_file(R, t->name, q->ids[k], "json", side, sizeof side);
		all_on_disk &= found && !lstat(side, &sb) && S_ISREG(sb.st_mode);
	}
	if (!all_on_disk)
		for (int k = 0; k < n; k++)
			gen_completion_release(&q->outs[k]);
	t->reserved += q->reserved;
	t->outstanding++;
	pthread_mutex_lock(&R->mu);
	q->next = R->queue;
	R->queue = q;
	if (all_on_disk) {
		q->on_disk = q->taken = q->done = true;
		q->st = store(R, q, &q->err);
		R->st.reused += n;
		for (int k = 0; k < n; k++) {
			cands[k]->from_disk = true;
			count_completion(R, cands[k]);
		}
		pthread_mutex_lock(&R->pmu);
		R->p_finished += n;
		pthread_mutex_unlock(&R->pmu);
	}
	pthread_cond_broadcast(&R->cv_gen);
	pthread_mutex_unlock(&R->mu);
	return CR_OK;
}

/* Messages: [system], then the pairs given. Copies every string. */
static struct gen_msg *msgs_new(const struct run *R, int n_extra, int *n_out)
{
	int n = (R->cfg->system ? 1 : 0) + n_extra;
	struct gen_msg *m = calloc((size_t)n, sizeof *m);
	if (m && R->cfg->system) {
		m[0].role = "system";
		m[0].content = xstrdup(R->cfg->system);
	}
	*n_out = R->cfg->system ? 1 : 0;
	return m;
}

static void msg_add(struct gen_msg *m, int *n, const char *role, const char *content)
{
	m[*n].role = role;
	m[*n].content = xstrdup(content);
	(*n)++;
}

/* The single-turn prompt: the task's own prompt. */
static enum cr_status issue_samples(struct run *R, struct task_state *t, int n, const char *prefix,
				    int generation, struct cr_err *err)
{
	int batch = R->cfg->batch > 0 ? R->cfg->batch : n;
	int n_req = (n + batch - 1) / batch;
	enum cr_status st = CR_OK;

	for (int i0 = 0; i0 < n && !st && !t->budget_stop; i0 += batch) {
		int nb = n - i0 < batch ? n - i0 : batch, nm;
		struct gen_cand *cs[256];
		struct gen_msg *m = msgs_new(R, 1, &nm);
		if (!m)
			return cr_errf(err, CR_ENOMEM, "out of memory");
		msg_add(m, &nm, "user", t->prompt);
		for (int k = 0; k < nb; k++) {
			char id[32];
			snprintf(id, sizeof id, "%s%d", prefix, i0 + k);
			if (!(cs[k] = new_cand(t, id, err)))
				return err->status;
			cs[k]->sample = i0 + k;
			cs[k]->generation = generation;
			cs[k]->verify_seed = seed_of(R->cfg->verify_seed, t->name, 0, (uint64_t)(i0 + k));
		}
		/* the stream of sample i is (seed, task, i), as `crucible generate` */
		st = issue(R, t, cs, nb, m, nm, NULL, R->cfg->seed, (uint64_t)i0, n_req, err);
	}
	return st;
}

/* ---- fitness and selection ---- */

static bool correct(const struct gen_cand *c)
{
	return c->verified && c->r.status == CHECK_OK;
}

static double speed(const struct gen_cand *c)
{
	return c->r.timed && isfinite(c->r.speedup) ? c->r.speedup : 0;
}

/* <0 when a is fitter: correct before incorrect; among correct, faster,
 * then fewer tokens; among incorrect, the later the stage that failed
 * (the verdict order), then fewer tokens; then the earlier. */
static int fitter(const struct gen_cand *a, const struct gen_cand *b)
{
	bool ca = correct(a), cb = correct(b);
	if (ca != cb)
		return ca ? -1 : 1;
	if (ca && speed(a) != speed(b))
		return speed(a) > speed(b) ? -1 : 1;
	if (!ca && a->r.status != b->r.status)
		return a->r.status > b->r.status ? -1 : 1;
	if (a->completion_tokens != b->completion_tokens)
		return a->completion_tokens < b->completion_tokens ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_fit(const void *x, const void *y)
{
	return fitter(*(struct gen_cand *const *)x, *(struct gen_cand *const *)y);
}

/* The verifier-based selectors: the fittest of the first n verified. */
static const struct gen_cand *select_best(const struct task_state *t, int n, char *why, size_t cap)
{
	const struct gen_cand *best = NULL;
	for (int i = 0; i < n; i++)
		if (t->c[i]->verified && (!best || fitter(t->c[i], best) < 0))
			best = t->c[i];
	if (!best)
		snprintf(why, cap, "no candidate");
	else if (correct(best) && best->r.timed && isfinite(best->r.speedup))
		snprintf(why, cap, "fastest correct: %.2fx", best->r.speedup);
	else if (correct(best))
		snprintf(why, cap, "correct (untimed), fewest tokens");
	else
		snprintf(why, cap, "no correct candidate: the furthest stage (%s)",
			 check_verdict_name(best->r.status));
	return best;
}

/* Self-consistency's selector over the first n candidates: group those
 * whose probe ran by agreement (each joins the first group whose first
 * member it agrees with), take the largest group (the earliest on a tie),
 * and in it the fastest probe. Uses no verdict. Sets c->group when assign. */
static const struct gen_cand *select_majority(struct run *R, struct task_state *t, int n, bool assign,
					      char *why, size_t cap)
{
	int *grp = malloc(sizeof *grp * (size_t)(n > 0 ? n : 1)), *size = calloc((size_t)(n > 0 ? n : 1), sizeof *size);
	int best = -1, n_ok = 0;
	const struct gen_cand *pick = NULL;

	if (!grp || !size) {
		free(grp);
		free(size);
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		grp[i] = -1;
		if (!t->c[i]->probe_ok)
			continue;
		n_ok++;
		for (int j = 0; j < i && grp[i] < 0; j++)
			if (grp[j] == j && R->v->agree(R->v->ctx, t->name, t->c[j], t->c[i]))
				grp[i] = j;
		if (grp[i] < 0)
			grp[i] = i;
		size[grp[i]]++;
	}
	for (int i = 0; i < n; i++)
		if (grp[i] == i && (best < 0 || size[i] > size[best]))
			best = i;
	for (int i = 0; i < n && best >= 0; i++)
		if (grp[i] == best && (!pick || t->c[i]->probe_us < pick->probe_us))
			pick = t->c[i];
	if (assign)
		for (int i = 0; i < n; i++)
			t->c[i]->group = grp[i];
	if (pick)
		snprintf(why, cap, "largest agreeing group: %d of %d that ran (of %d), fastest probe %.3g us",
			 size[best], n_ok, n, pick->probe_us);
	else
		snprintf(why, cap, "no candidate ran on the probe inputs");
	free(grp);
	free(size);
	return pick;
}

/* One text field of curve.csv through libcsv (quoted, any quote doubled),
 * so a comma, quote or newline in a path or model name stays in its field. */
static void curve_text(FILE *f, const char *s, bool last)
{
	csv_fwrite(f, s, strlen(s));
	fputc(last ? '\n' : ',', f);
}

static void curve_row(struct run *R, struct task_state *t, const struct gen_cand *added,
		      const struct gen_cand *sel)
{
	char sp[32] = "", model[512];
	bool ok = sel && correct(sel);
	const char *label = R->cfg->model_label ? R->cfg->model_label : "";
	/* the selected candidate as results.csv names it (SPEC §1: one name,
	 * one file; a control byte is \xNN) */
	char *path = cr_text_escape_name_dup(sel ? sel->path : "");
	FILE *f = R->curve;

	if (!f || !path) {
		free(path);
		return;
	}
	if (sel && sel->r.timed && isfinite(sel->r.speedup))
		snprintf(sp, sizeof sp, "%.4f", sel->r.speedup);
	cr_text_escape(label, strlen(label), model, sizeof model);
	curve_text(f, gen_strategy_name(R->cfg->strategy), false);
	curve_text(f, model, false);
	curve_text(f, t->name, false);
	fprintf(f, "%d,%ld,%d,", added->seq + 1, added->cumulative_tokens,
		R->cfg->strategy == GEN_EVOLVE ? added->generation : added->turn);
	curve_text(f, path, false);
	curve_text(f, sel ? check_verdict_name(sel->r.status) : "", false);
	/* a noisy figure is not trusted fast */
	fprintf(f, "%s,%d,%d\n", sp, ok, ok && sel->r.timed && !sel->r.noisy && sel->r.speedup > 1);
	free(path);
	fflush(f);
	fsync(fileno(f));
}

/* ---- strategies: what each verdict leads to ---- */

static enum cr_status refine_next(struct run *R, struct task_state *t, struct gen_cand *c,
				  struct cr_err *err)
{
	int turn = c->turn + 1, nm, j = c->trajectory;
	char id[32], conv[160];
	struct gen_cand *hist[256], *nc;
	int nh = 0;
	uint64_t seeds[2] = { R->cfg->verify_seed, R->cfg->seed };

	snprintf(conv, sizeof conv, "%s#r%d", t->name, j);
	if (turn >= R->cfg->turns) {
		if (R->g->end_conv)
			R->g->end_conv(R->g->ctx, conv);
		return CR_OK;
	}
	/* the trajectory so far, turn by turn */
	for (int i = 0; i < t->n_c && nh < 256; i++)
		if (t->c[i]->trajectory == j && t->c[i]->turn < turn && t->c[i]->verified)
			hist[nh++] = t->c[i];
	struct gen_msg *m = msgs_new(R, 1 + 2 * nh, &nm);
	if (!m)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	msg_add(m, &nm, "user", t->prompt);
	for (int i = 0; i < nh; i++) {
		char *fb = gen_feedback(hist[i], seeds, 2);
		msg_add(m, &nm, "assistant", hist[i]->text ? hist[i]->text : "");
		msg_add(m, &nm, "user", fb ? fb : "");
		free(fb);
	}
	snprintf(id, sizeof id, "r%dt%d", j, turn);
	if (!(nc = new_cand(t, id, err))) {
		for (int i = 0; i < nm; i++)
			free((char *)m[i].content);
		free(m);
		return err->status;
	}
	nc->trajectory = j;
	nc->turn = turn;
	nc->sample = j;
	snprintf(nc->parent, sizeof nc->parent, "%s", c->id);
	/* a fresh verification seed per turn: nothing learned from one turn's
	 * feedback can be hard-coded into the next */
	nc->verify_seed = seed_of(R->cfg->verify_seed, t->name, (uint64_t)j, (uint64_t)turn);
	return issue(R, t, &nc, 1, m, nm, conv, seed_of(R->cfg->seed, t->name, (uint64_t)j, (uint64_t)turn),
		     (uint64_t)j, 1, err);
}

static enum cr_status refine_start(struct run *R, struct task_state *t, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	for (int j = 0; j < R->cfg->n && !st && !t->budget_stop; j++) {
		char id[32], conv[160];
		int nm;
		struct gen_cand *c;
		struct gen_msg *m = msgs_new(R, 1, &nm);
		if (!m)
			return cr_errf(err, CR_ENOMEM, "out of memory");
		msg_add(m, &nm, "user", t->prompt);
		snprintf(id, sizeof id, "r%dt0", j);
		snprintf(conv, sizeof conv, "%s#r%d", t->name, j);
		if (!(c = new_cand(t, id, err)))
			return err->status;
		c->trajectory = j;
		c->sample = j;
		c->verify_seed = seed_of(R->cfg->verify_seed, t->name, (uint64_t)j, 0);
		st = issue(R, t, &c, 1, m, nm, conv, seed_of(R->cfg->seed, t->name, (uint64_t)j, 0),
			   (uint64_t)j, R->cfg->n - j, err);
	}
	return st;
}

/* Evolve: after generation g is verified, the K fittest of everything so
 * far parent N children, each prompted with its parent's code and
 * feedback and the task's optimisation memory. */
#define FENCE_TICKS "````````````````````````````````````````````````````````````````"

/* Backticks of a fence that no line of code closes (CommonMark: a closing
 * fence is at least as long as the opening one): one more than the longest
 * run opening a line (after up to 3 spaces), at least 3, at most 64 (a
 * longer run than that in a line of code is cut to fit, never matched). */
static int fence_for(const char *code)
{
	int best = 2;

	for (const char *p = code; *p;) {
		const char *q = p;
		int k = 0, ind = 0;
		while (*q == ' ' && ind < 3)
			q++, ind++;
		while (q[k] == '`')
			k++;
		if (k > best)
			best = k;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return best + 1 > 64 ? 64 : best + 1;
}

static enum cr_status evolve_next(struct run *R, struct task_state *t, struct cr_err *err)
{
	int g = t->evolve_gen + 1, k = R->cfg->keep, n_par;
	struct gen_cand **fit = malloc(sizeof *fit * (size_t)t->n_c);
	uint64_t seeds[2] = { R->cfg->verify_seed, R->cfg->seed };
	enum cr_status st = CR_OK;
	char *memory = NULL;
	size_t mlen = 0;
	FILE *mf;

	if (!fit)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	n_par = 0;
	for (int i = 0; i < t->n_c; i++)
		if (t->c[i]->verified)
			fit[n_par++] = t->c[i];
	qsort(fit, (size_t)n_par, sizeof *fit, cmp_fit);
	if (k > n_par)
		k = n_par;
	/* the optimisation memory: the latest attempts and what they gave */
	mf = open_memstream(&memory, &mlen);
	if (!mf) {
		free(fit);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	for (int i = t->n_c > MEMORY_LINES ? t->n_c - MEMORY_LINES : 0; i < t->n_c; i++) {
		char line[300];
		gen_memory_line(t->c[i], line, sizeof line);
		fprintf(mf, "%s\n", line);
	}
	fclose(mf);
	t->evolve_gen = g;
	for (int c = 0; c < R->cfg->n && k > 0 && !st && !t->budget_stop; c++) {
		const struct gen_cand *par = fit[c % k];
		char id[32], *fb = gen_feedback(par, seeds, 2), *user = NULL;
		size_t ul = 0;
		int nm;
		FILE *uf = open_memstream(&user, &ul);
		struct gen_cand *nc;
		struct gen_msg *m;

		if (!uf || !fb) {
			if (uf)
				fclose(uf);
			free(user);
			free(fb);
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			break;
		}
		/* the fence longer than any backtick run opening a line of the
		 * code, so no line of it closes the block early (a ``` in a
		 * comment would put the rest of the code, and any text it
		 * holds, outside as if it were crucible's words) */
		int fl = fence_for(par->code ? par->code : "");
		fprintf(uf, "%s\n\nAn earlier attempt (%s):\n%.*s\n%s\n%.*s\nHow it fared: %s\n\n"
			"What attempts at this task have tried so far:\n%s\n"
			"Write an improved kernel: correct first, then faster. Answer with one code block.",
			t->prompt, par->id, fl, FENCE_TICKS, par->code ? par->code : "", fl, FENCE_TICKS,
			fb, memory ? memory : "");
		fclose(uf);
		free(fb);
		m = msgs_new(R, 1, &nm);
		if (!m) {
			free(user);
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			break;
		}
		msg_add(m, &nm, "user", user);
		free(user);
		snprintf(id, sizeof id, "g%dc%d", g, c);
		if (!(nc = new_cand(t, id, err))) {
			st = err->status;
			break;
		}
		nc->generation = g;
		nc->sample = c;
		snprintf(nc->parent, sizeof nc->parent, "%s", par->id);
		nc->verify_seed = seed_of(R->cfg->verify_seed, t->name, (uint64_t)g << 20, (uint64_t)c);
		st = issue(R, t, &nc, 1, m, nm, NULL, seed_of(R->cfg->seed, t->name, (uint64_t)g << 20, (uint64_t)c),
			   (uint64_t)c, R->cfg->n - c, err);
	}
	free(memory);
	free(fit);
	return st;
}

static enum cr_status start_task(struct run *R, struct task_state *t, struct cr_err *err)
{
	switch (R->cfg->strategy) {
	case GEN_REFINE:
		return refine_start(R, t, err);
	case GEN_EVOLVE:
		return issue_samples(R, t, R->cfg->n, "g0c", 0, err);
	default:
		return issue_samples(R, t, R->cfg->n, "s", 0, err);
	}
}

/* ---- this thread: candidates in order ---- */

/* The request that fills candidate c (NULL: none issued). */
static struct request *request_of(struct run *R, const struct task_state *t, const struct gen_cand *c)
{
	for (struct request *q = R->queue; q; q = q->next)
		if (q->task == t->idx)
			for (int k = 0; k < q->n; k++)
				if (q->cands[k] == c)
					return q;
	return NULL;
}

/* Waits until c's completion is here; a failed request is the run's end. */
static enum cr_status wait_for(struct run *R, struct task_state *t, struct gen_cand *c,
			       struct request **qout, struct cr_err *err)
{
	struct request *q;

	int64_t t0 = cr_now_ns();

	pthread_mutex_lock(&R->mu);
	q = request_of(R, t, c);
	while (q && !q->done)
		pthread_cond_wait(&R->cv_main, &R->mu);
	pthread_mutex_unlock(&R->mu);
	R->wait_ns += cr_now_ns() - t0;
	*qout = q;
	if (!q)
		return cr_errf(err, CR_EINTERNAL, "%s: candidate %s has no request", t->name, c->id);
	if (q->st)
		return cr_errf(err, q->st, "%s", q->err.msg[0] ? q->err.msg : cr_status_name(q->st));
	return CR_OK;
}

/* The candidate file and its full sidecar, before it is verified. */
static enum cr_status materialize(struct run *R, struct task_state *t, struct gen_cand *c, struct cr_err *err)
{
	const char *ext = strcmp(R->cfg->backend, "cpu") ? "cu" : "c";
	enum cr_status st;

	size_t len = c->text ? strlen(c->text) : 0;

	/* the completions the search received; tokens lost to failed tries are
	 * the server's failure, no strategy's spend (recorded apart) */
	c->cumulative_tokens = (c->seq ? t->c[c->seq - 1]->cumulative_tokens : 0) + c->completion_tokens;
	/* no fence: the file keeps what dec_candidate_code falls back to (the
	 * text after </think>, or all of it), for the reader; it is not compiled */
	c->no_code = !dec_has_code_block(c->text ? c->text : "", len);
	if (c->no_code)
		R->st.no_code++;
	c->code = dec_candidate_code(c->text ? c->text : "", len, t->name);
	if (!c->code)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	cand_file(R, t->name, c->id, ext, c->path, sizeof c->path);
	if ((st = write_atomic(c->path, c->code, strlen(c->code), err)))
		return st;
	return write_sidecar(R, t->name, c, true, err);
}

/* The budget's books once c is verified (or probed): what it spent instead
 * of what its request held: its completion tokens. Tokens lost to retried
 * tries are not charged (a server's failure would otherwise cost one
 * strategy and not another at random; they are recorded apart: sidecar,
 * run.json), so a server that honours max_tokens never takes a task past
 * its budget. A completion past the budget (a replayed one longer than its
 * request) is said, and the task's selection says over_budget. */
static void spend(struct run *R, struct task_state *t, const struct gen_cand *c, const struct request *q)
{
	long b = R->cfg->budget_tokens;

	t->spent += c->completion_tokens;
	t->reserved -= q->max_tokens;
	if (b > 0 && t->spent > b && !t->over_budget) {
		t->over_budget = true;
		R->st.over_budget++;
		say(R, "run: warning: %s %s: %d tokens against its request's max_tokens %d: the task has "
		    "spent %ld of its budget of %ld (stopped = over_budget)\n", t->name, c->id,
		    c->completion_tokens, q->max_tokens, t->spent, b);
	}
}

/* After c's verdict: the budget's books, then what the strategy does next. */
static enum cr_status on_verdict(struct run *R, struct task_state *t, struct gen_cand *c,
				 struct request *q, struct cr_err *err)
{
	char why[200];
	enum cr_status st = CR_OK;

	spend(R, t, c, q);
	if (R->cfg->strategy != GEN_SELF_CONSISTENCY)
		curve_row(R, t, c, select_best(t, c->seq + 1, why, sizeof why));
	if (R->cfg->strategy == GEN_REFINE && !t->budget_stop)
		st = refine_next(R, t, c, err);
	if (R->cfg->strategy == GEN_EVOLVE && !t->budget_stop && t->evolve_gen < R->cfg->turns) {
		/* the generation is complete when every candidate of it is verified */
		bool whole = true;
		for (int i = 0; i < t->n_c; i++)
			whole &= t->c[i]->generation != t->evolve_gen || t->c[i]->verified;
		if (whole)
			st = evolve_next(R, t, err);
	}
	return st;
}

static void progress(struct run *R, const struct task_state *t, const struct gen_cand *c)
{
	say(R, "run: [%d/%d] %s %s: %s%s%s (%d tokens, finish %s, %ld so far)\n", t->idx + 1, R->cfg->n_tasks,
	    t->name, c->id, check_verdict_name(c->r.status), c->r.timed && isfinite(c->r.speedup) ? " " : "",
	    c->r.timed && isfinite(c->r.speedup) ? "timed" : "", c->completion_tokens, c->finish,
	    c->cumulative_tokens);
}

/* The verifier on c, timed for the overhead figure. */
static enum cr_status verify(struct run *R, struct task_state *t, struct gen_cand *c, const char *group,
			     struct cr_err *err)
{
	int64_t t0 = cr_now_ns();
	enum cr_status st;

	quiet(R);
	st = R->v->verify(R->v->ctx, t->name, c, group, err);
	R->verify_ns += cr_now_ns() - t0;
	if (st)
		return st;
	c->verified = true;
	R->n_cands++;
	R->st.verified++;
	progress(R, t, c);
	return CR_OK;
}

/* The candidates a task gets when no budget stops it. */
static int planned_per_task(const struct gen_run_cfg *cfg)
{
	switch (cfg->strategy) {
	case GEN_REFINE:
		return cfg->n * cfg->turns;
	case GEN_EVOLVE:
		return cfg->n * (cfg->turns + 1);
	default:
		return cfg->n;
	}
}

static enum cr_status run_task(struct run *R, struct task_state *t, struct cr_err *err)
{
	enum cr_status st;
	char why[300];
	const struct gen_cand *sel;
	bool sc = R->cfg->strategy == GEN_SELF_CONSISTENCY;

	/* the strategy's candidates, in order, as they come */
	while (t->next < t->n_c) {
		struct gen_cand *c = t->c[t->next];
		struct request *q;
		if ((st = wait_for(R, t, c, &q, err)) || (st = materialize(R, t, c, err)))
			return st;
		if (sc) {
			/* the probe first (no verdict), the verification after the selection */
			/* one draw for the task's probes, from the CSPRNG: a candidate
			 * that knows the run seed (a default, or published) must not
			 * know the probe's inputs and answer them from a table, as the
			 * timing stage's inputs are drawn (docs/VERIFIER.md); every
			 * probe of the task is run by this process, --resume included */
			if (!t->probe_seed)
				t->probe_seed = cr_secure_u64() | 1;
			uint64_t ps = t->probe_seed;
			int64_t t0 = cr_now_ns();
			quiet(R);
			st = R->v->probe(R->v->ctx, t->name, c, ps, err);
			R->verify_ns += cr_now_ns() - t0;
			if (st)
				return st;
			spend(R, t, c, q);
			say(R, "run: [%d/%d] %s %s: probe %s (%d tokens)\n", t->idx + 1, R->cfg->n_tasks,
			    t->name, c->id, c->no_code ? "not run (no code block)" : c->probe_ok ? "ran" : "did not run",
			    c->completion_tokens);
		} else {
			if ((st = verify(R, t, c, NULL, err)) || (st = on_verdict(R, t, c, q, err)))
				return st;
		}
		t->next++;
	}
	if (sc) {
		sel = select_majority(R, t, t->n_c, true, why, sizeof why);
		for (int i = 0; i < t->n_c; i++) {
			struct gen_cand *c = t->c[i];
			char grp[32] = "";
			if (c->group >= 0)
				snprintf(grp, sizeof grp, "%s", t->c[c->group]->id);
			if ((st = verify(R, t, c, grp[0] ? grp : NULL, err)))
				return st;
		}
		/* the curve: the majority of each prefix, judged afterwards */
		for (int i = 0; i < t->n_c; i++) {
			char w2[300];
			curve_row(R, t, t->c[i], select_majority(R, t, i + 1, false, w2, sizeof w2));
		}
	} else {
		sel = select_best(t, t->n_c, why, sizeof why);
	}
	if (t->over_budget) {
		size_t l = strlen(why);
		snprintf(why + l, sizeof why - l, "; a completion took the task past its token budget");
	} else if (t->budget_stop) {
		size_t l = strlen(why);
		snprintf(why + l, sizeof why - l, "; the token budget stopped the search");
	}
	/* the candidates the plan counted that the budget never asked for */
	pthread_mutex_lock(&R->pmu);
	R->p_planned -= planned_per_task(R->cfg) - t->n_c;
	pthread_mutex_unlock(&R->pmu);
	quiet(R);
	return R->v->selected(R->v->ctx, t->name, sel, why, t->spent, t->n_c,
			      t->over_budget ? "over_budget" : t->budget_stop ? "budget" : "done", err);
}

static void task_release(struct run *R, struct task_state *t)
{
	for (int i = 0; i < t->n_c; i++) {
		struct gen_cand *c = t->c[i];
		if (c->probe && R->v->probe_free)
			R->v->probe_free(R->v->ctx, c);
		free(c->text);
		free(c->code);
		free(c);
	}
	free(t->c);
	free(t->prompt);
	t->prompt = NULL;
	t->c = NULL;
	t->n_c = 0;
}

enum cr_status gen_run(const struct gen_run_cfg *cfg, struct gen_generator *g,
		       const struct gen_verifier *v, struct gen_run_stats *stats, struct cr_err *err)
{
	struct run R = { .cfg = cfg, .g = g, .v = v };
	int n_threads = g->max_inflight > 0 ? g->max_inflight : 1;
	pthread_t *th = calloc((size_t)n_threads, sizeof *th);
	int started = 0;
	enum cr_status st = CR_OK;
	char path[1200];

	R.ts = calloc((size_t)(cfg->n_tasks > 0 ? cfg->n_tasks : 1), sizeof *R.ts);
	if (!th || !R.ts) {
		free(th);
		free(R.ts);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&R.mu, NULL);
	pthread_mutex_init(&R.pmu, NULL);
	R.tty = cfg->progress == 2 || (cfg->progress == 0 && isatty(STDERR_FILENO));
	R.p_planned = cfg->n_tasks * planned_per_task(cfg);
	pthread_cond_init(&R.cv_gen, NULL);
	pthread_cond_init(&R.cv_main, NULL);
	snprintf(path, sizeof path, "%s/curve.csv", cfg->out);
	/* resume rewrites the curve: it is recomputed from verdicts on disk */
	R.curve = cr_fopen_out(path, CR_OUT_NEW, err);
	if (!R.curve) {
		st = err->status;
		goto out;
	}
	fprintf(R.curve, "strategy,model,task,step,cumulative_tokens,turn,selected,status,speedup,correct,fast1\n");
	for (int i = 0; i < cfg->n_tasks && !st; i++) {
		struct task_state *t = &R.ts[i];
		char dir[1200];
		t->name = cfg->tasks[i];
		t->idx = i;
		snprintf(dir, sizeof dir, "%s/cand/%s", cfg->out, t->name);
		if ((st = mkdirs(dir, err)))
			break;
		t->prompt = cfg->prompt(cfg->prompt_ctx, t->name, cfg->backend, err);
		if (!t->prompt) {
			st = err->status ? err->status : CR_EINPUT;
			break;
		}
	}
	if (st)
		goto out;
	for (; started < n_threads; started++)
		if (pthread_create(&th[started], NULL, gen_thread, &R)) {
			st = cr_errf(err, CR_EENV, "cannot start a generation thread");
			goto out;
		}
	int64_t wall0 = cr_now_ns();
	/* every task's first requests at once: the generator works ahead on
	 * later tasks while earlier ones are verified */
	for (int i = 0; i < cfg->n_tasks && !st; i++)
		st = start_task(&R, &R.ts[i], err);
	for (int i = 0; i < cfg->n_tasks && !st; i++) {
		st = run_task(&R, &R.ts[i], err);
		task_release(&R, &R.ts[i]);
	}
	if (!st && R.n_cands > 0) {
		int64_t wall = cr_now_ns() - wall0, own = wall - R.wait_ns - R.verify_ns;
		say(&R, "run: loop overhead %.3f ms per candidate (%d candidates: %.2f s wall, "
			"%.2f s verifying, %.2f s waiting for the generator)\n",
			(double)own / 1e6 / R.n_cands, R.n_cands, (double)wall / 1e9,
			(double)R.verify_ns / 1e9, (double)R.wait_ns / 1e9);
	}
out:
	pthread_mutex_lock(&R.mu);
	R.stop = true;
	pthread_cond_broadcast(&R.cv_gen);
	pthread_mutex_unlock(&R.mu);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < cfg->n_tasks; i++)
		task_release(&R, &R.ts[i]);
	while (R.queue) {
		struct request *q = R.queue;
		R.queue = q->next;
		free_request(q);
	}
	if (R.curve && fclose(R.curve) && !st)
		st = cr_errf(err, CR_EIO, "cannot write %s/curve.csv", cfg->out);
	quiet(&R);
	if (stats)
		*stats = R.st;
	pthread_mutex_destroy(&R.pmu);
	pthread_mutex_destroy(&R.mu);
	pthread_cond_destroy(&R.cv_gen);
	pthread_cond_destroy(&R.cv_main);
	free(R.ts);
	free(th);
	return st;
}
