/* srv_model.c — the model server: OpenAI-compatible routes over one
 * decoder engine driven by its own thread (srv_model.h).
 *
 * A request's life: a connection thread checks and renders it (the chat
 * template, the tokenizer), refuses what does not fit (4xx, 429 when the
 * queue is full), and queues a job. The engine thread submits queued jobs
 * and cancels abandoned ones between steps, steps the engine, and after each
 * step publishes, under the server's lock, how many tokens each sample has
 * drawn and which samples are whole. Only the engine thread touches the
 * engine; a connection thread reads a sample's tokens below its published
 * count (the engine writes only past it) and its text once it is whole.
 *
 * Streaming: the text sent is a prefix of the final text. It is built from
 * the tokens' pieces as the engine builds it (end-of-generation tokens add
 * nothing) and held back by the longest stop string less one byte (a stop
 * string not yet complete could still cut there) and by an unfinished UTF-8
 * sequence; the sample's end sends the rest of its final text. */
#include "serve/srv_model.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "decode/dec_run.h"

#define MAX_STOPS 16
#define MAX_STOP_BYTES 256
#define MAX_TOP_LOGPROBS 20
#define MAX_WHOLE_LOGPROBS (1 << 21) /* logprob entries in one whole answer */
#define WAIT_MS 20          /* a connection thread's wait for progress, between hang-up checks */
#define RATE_SLOTS 32       /* tokens/s over the last RATE_SLOTS half-seconds */

enum job_state { J_QUEUED, J_RUNNING, J_DONE, J_FAILED, J_CANCELLED };
enum api { API_CHAT, API_COMPLETION };
/* How a completion request ended, once each (/metrics). */
enum outcome { O_OK, O_BAD, O_BUSY, O_FAILED, O_CANCELLED, O_STOPPED };
static const char *const outcome_name[] = { "ok", "bad_request", "queue_full", "failed", "client_gone",
					    "server_stopping" };

struct sbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

/* One sample as a stream sends it (read side only). */
struct sstate {
	struct sbuf raw;  /* the pieces of tokens [0, seen), end-of-generation excluded */
	int seen;         /* tokens whose pieces are in raw */
	int tok_sent;     /* tokens whose logprobs / ids went out */
	size_t text_sent; /* bytes of raw (and of the final text) sent */
	size_t raw_at;    /* bytes of the pieces of tokens [0, tok_sent): the next token's text_offset */
	bool fin_sent;
};

struct job {
	struct srv_model *sm;
	int refs;                 /* the connection's and the engine thread's (under sm->lock) */
	enum job_state state;
	bool cancel;              /* asked by the connection (hang-up) or the stop */
	char err[256];            /* J_FAILED: why */
	struct job *next;         /* in the queue or the running list */
	/* the request */
	enum api api;
	int n, max_tokens, top_logprobs;
	bool logprobs, stream, include_usage, return_ids;
	int32_t *prompt;
	int n_prompt;
	char *stops[MAX_STOPS];
	int n_stops;
	size_t longest_stop;
	char *task;               /* the stream key, NULL: none */
	uint64_t seed;
	struct dec_req r;
	struct dec_gen_out *outs;
	/* published by the engine thread under sm->lock */
	int *pub_n;               /* tokens drawn by sample i */
	bool *pub_done;           /* sample i whole (outs[i] final) */
	bool *eng_done;           /* engine thread only: on_sample seen */
	int cached;               /* prompt tokens from the prefix cache (at the end) */
	/* the answer */
	char id[48];
	long long created;
	struct sstate *ss;        /* [n] streaming (the connection's thread only) */
	int *snap_n;              /* [n] streaming: pub_n as last read under the lock */
	bool *snap_done;          /* [n] streaming: pub_done as last read */
	enum job_state snap_state;
	struct sbuf out;          /* stream bytes not yet sent */
	size_t out_off;
	bool head_sent, tail_sent;
};

struct srv_model {
	struct srv_model_opts o;
	char *name, *path;
	struct dec_engine *e;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t work;      /* the engine thread waits for jobs */
	pthread_cond_t progress;  /* connection threads wait for a step */
	struct job *queue, **queue_tail, *running;
	bool stopping, quit;
	uint64_t gen;             /* bumped at every broadcast of progress */
	int samples_in;           /* samples queued or running */
	int kv_positions;         /* what the KV pool holds for one sequence, drafts left room */
	/* held for writing by the engine thread around a step (whose failure
	 * releases the outputs of the samples not done), for reading by a
	 * stream thread reading them */
	pthread_rwlock_t outs_lock;
	/* metrics */
	int64_t outcome[6];       /* requests by how they ended (enum outcome) */
	int64_t prompt_tokens, gen_tokens, cached_tokens, samples_done, done_tokens;
	int running_jobs, queued_jobs;
	double rate_t[RATE_SLOTS];
	int64_t rate_tok[RATE_SLOTS];
	int rate_i;
	struct dec_engine_stats stats;
	double t_start;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void timed_wait(pthread_cond_t *c, pthread_mutex_t *m, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(c, m, &ts);
}

/* ---- jobs ---- */

static void job_free(struct job *j)
{
	if (!j)
		return;
	for (int i = 0; j->outs && i < j->n; i++)
		dec_gen_out_release(&j->outs[i]);
	for (int i = 0; j->ss && i < j->n; i++)
		free(j->ss[i].raw.p);
	for (int i = 0; i < j->n_stops; i++)
		free(j->stops[i]);
	free(j->outs);
	free(j->ss);
	free(j->snap_n);
	free(j->snap_done);
	free(j->pub_n);
	free(j->pub_done);
	free(j->eng_done);
	free(j->prompt);
	free(j->task);
	free(j->out.p);
	free(j);
}

/* Drops a reference; the last frees. Under sm->lock. */
static void job_unref_locked(struct job *j)
{
	if (--j->refs == 0)
		job_free(j);
}

/* The engine thread is done with j (finished, failed or cancelled): its
 * reference dropped, its samples no longer counted. Under sm->lock. */
static void job_leave(struct srv_model *sm, struct job *j, enum job_state st)
{
	j->state = st;
	sm->samples_in -= j->n;
	if (st == J_DONE) {
		sm->cached_tokens += j->cached;
		sm->samples_done += j->n;
		for (int i = 0; i < j->n; i++)
			sm->done_tokens += j->pub_n[i];
	}
	sm->gen++;
	pthread_cond_broadcast(&sm->progress);
	job_unref_locked(j);
}

static void on_sample(void *ctx, struct dec_req *r, int i)
{
	struct job *j = ctx;
	(void)r;
	j->eng_done[i] = true;
}

/* ---- the engine thread ---- */

static void rate_push(struct srv_model *sm, double t)
{
	int last = (sm->rate_i + RATE_SLOTS - 1) % RATE_SLOTS;
	if (sm->rate_t[last] && t - sm->rate_t[last] < 0.5)
		return;
	sm->rate_t[sm->rate_i] = t;
	sm->rate_tok[sm->rate_i] = sm->gen_tokens;
	sm->rate_i = (sm->rate_i + 1) % RATE_SLOTS;
}

/* Tokens per second over the window kept (0 when idle). Under sm->lock. */
static double rate_now(const struct srv_model *sm)
{
	int last = (sm->rate_i + RATE_SLOTS - 1) % RATE_SLOTS, first = sm->rate_i;
	if (!sm->rate_t[first])
		first = 0;
	if (!sm->rate_t[last] || first == last || sm->rate_t[last] <= sm->rate_t[first])
		return 0;
	if (now_s() - sm->rate_t[last] > 2)
		return 0;
	return (double)(sm->rate_tok[last] - sm->rate_tok[first]) / (sm->rate_t[last] - sm->rate_t[first]);
}

/* After a step: each running job's samples' token counts and ends, and
 * the jobs that are whole leave. Under sm->lock. */
static void publish(struct srv_model *sm)
{
	struct job **pp = &sm->running;

	while (*pp) {
		struct job *j = *pp;
		for (int i = 0; i < j->n; i++) {
			if (j->pub_done[i])
				continue;
			sm->gen_tokens += j->outs[i].n_tokens - j->pub_n[i];
			j->pub_n[i] = j->outs[i].n_tokens;
			j->pub_done[i] = j->eng_done[i];
		}
		if (j->r.n_done == j->n) {
			j->cached = j->n_prompt - j->r.prefill_tokens;
			if (j->cached < 0)
				j->cached = 0;
			*pp = j->next;
			sm->running_jobs--;
			job_leave(sm, j, J_DONE);
		} else {
			pp = &j->next;
		}
	}
}

static void *engine_main(void *arg)
{
	struct srv_model *sm = arg;
	struct cr_err err;

	pthread_mutex_lock(&sm->lock);
	for (;;) {
		/* the queue into the engine */
		while (sm->queue) {
			struct job *j = sm->queue;
			sm->queue = j->next;
			if (!sm->queue)
				sm->queue_tail = &sm->queue;
			sm->queued_jobs--;
			if (j->cancel) {
				job_leave(sm, j, J_CANCELLED);
				continue;
			}
			cr_err_init(&err);
			if (dec_engine_submit(sm->e, &j->r, &err)) {
				snprintf(j->err, sizeof j->err, "%s", err.msg);
				job_leave(sm, j, J_FAILED);
				continue;
			}
			j->state = J_RUNNING;
			j->next = sm->running;
			sm->running = j;
			sm->running_jobs++;
		}
		/* abandoned requests out of the engine */
		for (struct job **pp = &sm->running; *pp;) {
			struct job *j = *pp;
			if (!j->cancel) {
				pp = &j->next;
				continue;
			}
			dec_engine_cancel(sm->e, &j->r);
			*pp = j->next;
			sm->running_jobs--;
			job_leave(sm, j, J_CANCELLED);
		}
		sm->stats = *dec_engine_stats(sm->e); /* cancels give blocks back without a step */
		if (sm->quit && !sm->running && !sm->queue)
			break;
		if (!dec_engine_busy(sm->e)) {
			/* every request the engine holds is whole; one it does not
			 * hold and that is not whole would wait for ever: failed */
			publish(sm);
			while (sm->running) {
				struct job *j = sm->running;
				sm->running = j->next;
				sm->running_jobs--;
				snprintf(j->err, sizeof j->err, "internal error: the engine dropped the request");
				job_leave(sm, j, J_FAILED);
			}
			if (!sm->queue && !sm->quit)
				pthread_cond_wait(&sm->work, &sm->lock);
			continue;
		}
		pthread_mutex_unlock(&sm->lock);
		cr_err_init(&err);
		/* the outputs are held until the step's outcome is published: a
		 * stream reads them only under a snapshot taken after it */
		pthread_rwlock_wrlock(&sm->outs_lock);
		enum cr_status st = dec_engine_step(sm->e, &err);
		pthread_mutex_lock(&sm->lock);
		sm->stats = *dec_engine_stats(sm->e);
		if (st) {
			/* every unfinished sample was dropped by the engine: the
			 * requests running fail, the engine is empty */
			srv_log(sm->o.log, "crucible serve: ", "engine step failed: %s", err.msg);
			while (sm->running) {
				struct job *j = sm->running;
				sm->running = j->next;
				sm->running_jobs--;
				for (int i = 0; i < j->n; i++)
					if (!j->eng_done[i])
						memset(&j->outs[i], 0, sizeof j->outs[i]); /* released by the engine */
				snprintf(j->err, sizeof j->err, "the engine failed: %s", err.msg);
				job_leave(sm, j, J_FAILED);
			}
		} else {
			publish(sm);
		}
		pthread_rwlock_unlock(&sm->outs_lock);
		rate_push(sm, now_s());
		sm->gen++;
		pthread_cond_broadcast(&sm->progress);
	}
	pthread_mutex_unlock(&sm->lock);
	return NULL;
}

/* ---- setup ---- */

static char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	char *s = strdup(b ? b + 1 : path);
	size_t n = s ? strlen(s) : 0;
	if (n > 5 && !strcmp(s + n - 5, ".gguf"))
		s[n - 5] = 0;
	return s;
}

enum cr_status srv_model_new(const struct srv_model_opts *o, struct srv_model **out, struct cr_err *err)
{
	struct srv_model *sm = calloc(1, sizeof *sm);
	enum cr_status st;

	*out = NULL;
	if (!sm)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	sm->o = *o;
	sm->name = o->name ? strdup(o->name) : base_name(o->path);
	sm->path = strdup(o->path ? o->path : "");
	if (!sm->name || !sm->path) {
		free(sm->name);
		free(sm->path);
		free(sm);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	sm->o.name = sm->name;
	sm->o.path = sm->path;
	if (sm->o.max_n < 1)
		sm->o.max_n = 64;
	pthread_mutex_init(&sm->lock, NULL);
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	/* the engine thread must not wait behind a stream of readers */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&sm->outs_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_cond_init(&sm->work, NULL);
	pthread_cond_init(&sm->progress, NULL);
	sm->queue_tail = &sm->queue;
	sm->t_start = now_s();
	if ((st = dec_engine_new(o->m, &o->cfg, &sm->e, err))) {
		srv_model_free(sm);
		return st;
	}
	sm->stats = *dec_engine_stats(sm->e);
	sm->kv_positions = sm->stats.n_blocks * sm->stats.block_size - 1 - o->cfg.draft_tokens;
	if (pthread_create(&sm->thread, NULL, engine_main, sm)) {
		srv_model_free(sm);
		return cr_errf(err, CR_EENV, "cannot start the engine thread");
	}
	sm->thread_started = true;
	*out = sm;
	return CR_OK;
}

const char *srv_model_name(const struct srv_model *sm)
{
	return sm->name;
}

const char *srv_model_device(const struct srv_model *sm)
{
	return dec_engine_device(sm->e);
}

const char *srv_model_device_note(const struct srv_model *sm)
{
	return dec_engine_device_note(sm->e);
}

/* Waits on progress until the engine thread holds no job or until end (a
 * CLOCK_MONOTONIC-free deadline in now_s() seconds). Under sm->lock. */
static void wait_idle(struct srv_model *sm, double end)
{
	while ((sm->running || sm->queue) && now_s() < end)
		timed_wait(&sm->progress, &sm->lock, 50);
}

void srv_model_stop(struct srv_model *sm, int drain_ms)
{
	if (!sm)
		return;
	pthread_mutex_lock(&sm->lock);
	sm->stopping = true;
	wait_idle(sm, now_s() + drain_ms / 1000.0);
	/* what is left is cancelled: each request answers 503 (a stream, an
	 * error event and [DONE]) once the engine thread has retired it, at
	 * its next turn between steps */
	for (struct job *j = sm->running; j; j = j->next)
		j->cancel = true;
	for (struct job *j = sm->queue; j; j = j->next)
		j->cancel = true;
	pthread_cond_signal(&sm->work);
	wait_idle(sm, now_s() + 5);
	pthread_mutex_unlock(&sm->lock);
}

void srv_model_free(struct srv_model *sm)
{
	if (!sm)
		return;
	if (sm->thread_started) {
		pthread_mutex_lock(&sm->lock);
		sm->stopping = sm->quit = true;
		for (struct job *j = sm->running; j; j = j->next)
			j->cancel = true;
		for (struct job *j = sm->queue; j; j = j->next)
			j->cancel = true;
		pthread_cond_signal(&sm->work);
		pthread_mutex_unlock(&sm->lock);
		pthread_join(sm->thread, NULL);
	}
	dec_engine_free(sm->e);
	pthread_mutex_destroy(&sm->lock);
	pthread_rwlock_destroy(&sm->outs_lock);
	pthread_cond_destroy(&sm->work);
	pthread_cond_destroy(&sm->progress);
	free(sm->name);
	free(sm->path);
	free(sm);
}

/* ---- checking a request ---- */

/* A 4xx said while checking: status and message. */
struct bad {
	int status;
	char msg[512];
};

__attribute__((format(printf, 3, 4))) static bool bad(struct bad *b, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->msg, sizeof b->msg, fmt, ap);
	va_end(ap);
	b->status = status;
	return false;
}

/* An optional number field in [lo, hi]; absent or null: def. */
static bool get_real(json_t *root, const char *key, double lo, double hi, double def, double *out,
		     struct bad *b)
{
	json_t *v = json_object_get(root, key);
	*out = def;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_number(v))
		return bad(b, 400, "'%s' must be a number", key);
	double x = json_number_value(v);
	if (!isfinite(x) || x < lo || x > hi)
		return bad(b, 400, "'%s' must be in [%g, %g], got %g", key, lo, hi, x);
	*out = x;
	return true;
}

static bool get_int(json_t *root, const char *key, long long lo, long long hi, long long def,
		    long long *out, struct bad *b)
{
	json_t *v = json_object_get(root, key);
	*out = def;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v))
		return bad(b, 400, "'%s' must be an integer", key);
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return bad(b, 400, "'%s' must be in %lld..%lld, got %lld", key, lo, hi, x);
	*out = x;
	return true;
}

static bool get_bool(json_t *root, const char *key, bool def, bool *out, struct bad *b)
{
	json_t *v = json_object_get(root, key);
	*out = def;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v))
		return bad(b, 400, "'%s' must be true or false", key);
	*out = json_is_true(v);
	return true;
}

/* Fields a client may send that this server cannot honour: refused when
 * they would change the answer, never ignored. */
static bool refuse_unsupported(json_t *root, struct bad *b)
{
	static const char *const zero[] = { "presence_penalty", "frequency_penalty" };
	for (size_t i = 0; i < sizeof zero / sizeof *zero; i++) {
		json_t *v = json_object_get(root, zero[i]);
		if (v && !json_is_null(v) && (!json_is_number(v) || json_number_value(v) != 0))
			return bad(b, 400, "'%s' is not supported (only 0)", zero[i]);
	}
	json_t *v = json_object_get(root, "repetition_penalty");
	if (v && !json_is_null(v) && (!json_is_number(v) || json_number_value(v) != 1))
		return bad(b, 400, "'repetition_penalty' is not supported (only 1)");
	v = json_object_get(root, "logit_bias");
	if (v && !json_is_null(v) && (!json_is_object(v) || json_object_size(v)))
		return bad(b, 400, "'logit_bias' is not supported");
	static const char *const none[] = { "tools", "functions", "tool_choice", "function_call", "suffix",
					    "best_of", "guided_json", "guided_regex", "guided_choice",
					    "guided_grammar", "grammar", "json_schema" };
	for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
		v = json_object_get(root, none[i]);
		if (v && !json_is_null(v) &&
		    !(!strcmp(none[i], "tool_choice") && json_is_string(v) && !strcmp(json_string_value(v), "none")) &&
		    !(!strcmp(none[i], "best_of") && json_is_integer(v) && json_integer_value(v) == 1) &&
		    !(json_is_array(v) && !json_array_size(v)))
			return bad(b, 400, "'%s' is not supported", none[i]);
	}
	v = json_object_get(root, "response_format");
	if (v && !json_is_null(v)) {
		json_t *t = json_object_get(v, "type");
		if (!json_is_string(t) || strcmp(json_string_value(t), "text"))
			return bad(b, 400, "'response_format' is not supported (only {\"type\": \"text\"})");
	}
	v = json_object_get(root, "echo");
	if (v && json_is_true(v))
		return bad(b, 400, "'echo' is not supported");
	return true;
}

/* The model a request names: ours by its id or the path it was served from. */
static bool check_model(const struct srv_model *sm, json_t *root, struct bad *b)
{
	json_t *v = json_object_get(root, "model");
	if (!v || json_is_null(v))
		return true; /* the one model served */
	if (!json_is_string(v))
		return bad(b, 400, "'model' must be a string");
	const char *s = json_string_value(v);
	if (!strcmp(s, sm->name) || !strcmp(s, sm->path))
		return true;
	return bad(b, 404, "the model '%.200s' does not exist: this server serves '%.200s' (GET /v1/models)", s,
		   sm->name);
}

/* One message's content: a string, or an array of text parts. malloc'd. */
static char *content_text(json_t *c, int i, struct bad *b)
{
	if (json_is_string(c))
		return strndup(json_string_value(c), json_string_length(c));
	if (json_is_null(c))
		return strdup("");
	if (!json_is_array(c)) {
		bad(b, 400, "messages[%d].content must be a string or an array of text parts", i);
		return NULL;
	}
	struct sbuf s = { 0 };
	size_t k;
	json_t *part;
	sb_add(&s, "", 0);
	json_array_foreach(c, k, part) {
		json_t *t = json_object_get(part, "type"), *x = json_object_get(part, "text");
		if (!json_is_string(t) || strcmp(json_string_value(t), "text") || !json_is_string(x)) {
			free(s.p);
			bad(b, 400, "messages[%d].content[%zu]: only {\"type\": \"text\", \"text\": ...} parts are "
				    "supported", i, k);
			return NULL;
		}
		sb_add(&s, json_string_value(x), json_string_length(x));
	}
	if (s.oom) {
		free(s.p);
		bad(b, 500, "out of memory");
		return NULL;
	}
	return s.p;
}

/* The chat's prompt ids (the template's text, special tokens parsed, BOS as
 * the template writes it). */
static bool chat_prompt(const struct srv_model *sm, json_t *msgs, int32_t **ids, size_t *n, struct bad *b)
{
	if (!json_is_array(msgs) || !json_array_size(msgs))
		return bad(b, 400, "'messages' must be a non-empty array");
	size_t nm = json_array_size(msgs);
	if (nm > 4096)
		return bad(b, 400, "'messages': at most 4096 messages");
	struct dec_chat_msg *m = calloc(nm, sizeof *m);
	char **texts = calloc(nm, sizeof *texts);
	bool ok = m && texts;
	if (!ok)
		bad(b, 500, "out of memory");
	for (size_t i = 0; ok && i < nm; i++) {
		json_t *o = json_array_get(msgs, i), *role = json_object_get(o, "role");
		if (!json_is_object(o) || !json_is_string(role)) {
			ok = bad(b, 400, "messages[%zu] must be an object with a 'role'", i);
			break;
		}
		const char *r = json_string_value(role);
		if (!strcmp(r, "developer"))
			r = "system";
		if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant")) {
			ok = bad(b, 400, "messages[%zu].role '%.40s': only system, developer, user and assistant", i,
				 json_string_value(role));
			break;
		}
		if (!(texts[i] = content_text(json_object_get(o, "content"), (int)i, b))) {
			ok = false;
			break;
		}
		m[i].role = r;
		m[i].content = texts[i];
	}
	char *chat = NULL;
	struct cr_err err;
	cr_err_init(&err);
	if (ok && dec_chat_format_msgs(sm->o.tok, m, (int)nm, &chat, &err))
		ok = bad(b, err.status == CR_ENOMEM ? 500 : 400, "messages: %s", err.msg);
	if (ok && dec_tok_encode(sm->o.tok, chat, strlen(chat), 1, 0, ids, n, &err))
		ok = bad(b, err.status == CR_ENOMEM ? 500 : 400, "messages: %s", err.msg);
	free(chat);
	for (size_t i = 0; texts && i < nm; i++)
		free(texts[i]);
	free(texts);
	free(m);
	return ok;
}

/* A completion's prompt: a string (BOS as the model says, special tokens
 * parsed, as `crucible decode --prompt`), an array of token ids, or an
 * array holding one of either. */
static bool completion_prompt(const struct srv_model *sm, json_t *p, int32_t **ids, size_t *n,
			      struct bad *b)
{
	if (json_is_array(p) && json_array_size(p) == 1 &&
	    (json_is_string(json_array_get(p, 0)) || json_is_array(json_array_get(p, 0))))
		p = json_array_get(p, 0);
	if (json_is_string(p)) {
		struct cr_err err;
		cr_err_init(&err);
		if (dec_tok_encode(sm->o.tok, json_string_value(p), json_string_length(p), 1, -1, ids, n, &err))
			return bad(b, err.status == CR_ENOMEM ? 500 : 400, "prompt: %s", err.msg);
		return true;
	}
	if (!json_is_array(p))
		return bad(b, 400, "'prompt' must be a string or an array of token ids (one prompt a request)");
	size_t k = json_array_size(p), nv = dec_tok_n_vocab(sm->o.tok);
	int32_t *v = malloc((k ? k : 1) * sizeof *v);
	if (!v)
		return bad(b, 500, "out of memory");
	for (size_t i = 0; i < k; i++) {
		json_t *x = json_array_get(p, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 || (size_t)json_integer_value(x) >= nv) {
			free(v);
			if (json_is_string(x))
				return bad(b, 400, "'prompt': one prompt a request (an array of %zu strings)", k);
			return bad(b, 400, "prompt[%zu] must be a token id in 0..%zu", i, nv - 1);
		}
		v[i] = (int32_t)json_integer_value(x);
	}
	*ids = v;
	*n = k;
	return true;
}

static bool get_stops(json_t *root, struct job *j, struct bad *b)
{
	json_t *v = json_object_get(root, "stop");
	if (!v || json_is_null(v))
		return true;
	json_t *one = json_is_string(v) ? v : NULL;
	size_t n = one ? 1 : json_is_array(v) ? json_array_size(v) : 0;
	if (!one && !json_is_array(v))
		return bad(b, 400, "'stop' must be a string or an array of strings");
	if (n > MAX_STOPS)
		return bad(b, 400, "'stop': at most %d strings", MAX_STOPS);
	for (size_t i = 0; i < n; i++) {
		json_t *s = one ? one : json_array_get(v, i);
		if (!json_is_string(s) || !json_string_length(s) || json_string_length(s) > MAX_STOP_BYTES)
			return bad(b, 400, "'stop' strings must be non-empty strings of at most %d bytes",
				   MAX_STOP_BYTES);
		if (!(j->stops[j->n_stops] = strndup(json_string_value(s), json_string_length(s))))
			return bad(b, 500, "out of memory");
		if (strlen(j->stops[j->n_stops]) != json_string_length(s)) {
			free(j->stops[j->n_stops]);
			j->stops[j->n_stops] = NULL;
			return bad(b, 400, "'stop' strings may not hold a NUL");
		}
		if (json_string_length(s) > j->longest_stop)
			j->longest_stop = json_string_length(s);
		j->n_stops++;
	}
	return true;
}

/* The request's job, checked, or NULL with b set. */
static struct job *parse_job(struct srv_model *sm, enum api api, const char *body, size_t len, struct bad *b)
{
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	struct job *j = NULL;
	int32_t *ids = NULL;
	size_t n_ids = 0;

	if (!root) {
		bad(b, 400, "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
		return NULL;
	}
	if (!json_is_object(root)) {
		bad(b, 400, "the body must be a JSON object");
		goto fail;
	}
	if (!check_model(sm, root, b) || !refuse_unsupported(root, b))
		goto fail;
	j = calloc(1, sizeof *j);
	if (!j) {
		bad(b, 500, "out of memory");
		goto fail;
	}
	j->sm = sm;
	j->api = api;
	double temp, top_p, min_p;
	long long n, top_k, mt, mct, tl = 0;
	bool has_seed = json_object_get(root, "seed") && !json_is_null(json_object_get(root, "seed"));
	if (!get_int(root, "n", 1, sm->o.max_n, 1, &n, b) || !get_real(root, "temperature", 0, 2, 1, &temp, b) ||
	    !get_real(root, "top_p", 0, 1, 1, &top_p, b) || !get_real(root, "min_p", 0, 1, 0, &min_p, b) ||
	    !get_int(root, "top_k", -1, 1 << 30, -1, &top_k, b) ||
	    !get_int(root, "max_tokens", 1, INT32_MAX, 0, &mt, b) ||
	    !get_int(root, "max_completion_tokens", 1, INT32_MAX, 0, &mct, b) ||
	    !get_bool(root, "stream", false, &j->stream, b) ||
	    !get_bool(root, "return_token_ids", false, &j->return_ids, b) || !get_stops(root, j, b))
		goto fail;
	if (top_p == 0)
		top_p = 1e-9; /* only the most likely token survives, as a client means by 0 */
	if (has_seed) {
		json_t *s = json_object_get(root, "seed");
		if (!json_is_integer(s)) {
			bad(b, 400, "'seed' must be an integer");
			goto fail;
		}
		j->seed = (uint64_t)json_integer_value(s);
	} else {
		j->seed = cr_secure_u64();
	}
	json_t *task = json_object_get(root, "task");
	if (task && !json_is_null(task)) {
		if (!json_is_string(task) || !json_string_length(task) || json_string_length(task) > 256 ||
		    strlen(json_string_value(task)) != json_string_length(task)) {
			bad(b, 400, "'task' must be a task name (a string of 1..256 bytes)");
			goto fail;
		}
		if (!(j->task = strdup(json_string_value(task)))) {
			bad(b, 500, "out of memory");
			goto fail;
		}
	}
	json_t *so = json_object_get(root, "stream_options");
	if (so && !json_is_null(so)) {
		if (!json_is_object(so) || !get_bool(so, "include_usage", false, &j->include_usage, b)) {
			if (!b->status)
				bad(b, 400, "'stream_options' must be an object");
			goto fail;
		}
	}
	/* logprobs: chat a boolean with top_logprobs 0..20; completions the
	 * legacy integer (the top count) */
	json_t *lp = json_object_get(root, "logprobs");
	if (api == API_CHAT) {
		if (!get_bool(root, "logprobs", false, &j->logprobs, b) ||
		    !get_int(root, "top_logprobs", 0, MAX_TOP_LOGPROBS, 0, &tl, b))
			goto fail;
		if (tl && !j->logprobs) {
			bad(b, 400, "'top_logprobs' needs \"logprobs\": true");
			goto fail;
		}
	} else if (lp && !json_is_null(lp)) {
		if (json_is_boolean(lp)) {
			j->logprobs = json_is_true(lp);
		} else if (!get_int(root, "logprobs", 0, MAX_TOP_LOGPROBS, 0, &tl, b)) {
			goto fail;
		} else {
			j->logprobs = true;
		}
	}
	j->top_logprobs = (int)tl;
	j->n = (int)n;
	/* the prompt */
	if (api == API_CHAT) {
		if (!chat_prompt(sm, json_object_get(root, "messages"), &ids, &n_ids, b))
			goto fail;
	} else {
		json_t *p = json_object_get(root, "prompt");
		if (!p) {
			bad(b, 400, "'prompt' is required");
			goto fail;
		}
		if (!completion_prompt(sm, p, &ids, &n_ids, b))
			goto fail;
	}
	/* one sequence holds at most the context, and at most what the KV pool
	 * holds (the others are preempted for it): past that it could never run */
	int ctx = sm->o.cfg.max_ctx, pool = sm->kv_positions, lim = ctx < pool ? ctx : pool;
	const char *what = ctx <= pool ? "this model's context" : "the KV cache (--kv-mem)";
	if (n_ids == 0) {
		bad(b, 400, "the prompt is empty (no token)");
		goto fail;
	}
	if ((long long)n_ids >= lim) {
		bad(b, 400, "the prompt has %zu tokens: %s is %d tokens (at most %d for the prompt, leaving one "
			    "to generate)", n_ids, what, lim, lim - 1);
		goto fail;
	}
	if (mct && mt && mct != mt) {
		bad(b, 400, "'max_tokens' and 'max_completion_tokens' differ");
		goto fail;
	}
	if (!mt)
		mt = mct;
	if (mt && (long long)n_ids + mt > lim) {
		bad(b, 400, "%s is %d tokens: a prompt of %zu tokens leaves %lld to generate, and 'max_tokens' "
			    "asks %lld", what, lim, n_ids, (long long)lim - (long long)n_ids, mt);
		goto fail;
	}
	/* absent: OpenAI's 16 for a completion, the rest of the context for a chat */
	if (!mt)
		mt = api == API_COMPLETION ? (16 < lim - (long long)n_ids ? 16 : lim - (long long)n_ids)
					   : lim - (long long)n_ids;
	j->max_tokens = (int)mt;
	/* a whole answer's logprobs are one JSON tree: bounded (a stream sends
	 * them as they come) */
	if (j->logprobs && !j->stream && (long long)j->n * mt * (1 + j->top_logprobs) > MAX_WHOLE_LOGPROBS) {
		bad(b, 400, "logprobs for n %d x max_tokens %lld x (1 + top_logprobs %d) entries: a whole answer "
			    "holds at most %d (stream it, or ask for fewer)", j->n, mt, j->top_logprobs,
		    MAX_WHOLE_LOGPROBS);
		goto fail;
	}
	j->prompt = ids;
	j->n_prompt = (int)n_ids;
	ids = NULL;
	/* the engine's request */
	j->outs = calloc((size_t)j->n, sizeof *j->outs);
	j->pub_n = calloc((size_t)j->n, sizeof *j->pub_n);
	j->pub_done = calloc((size_t)j->n, sizeof *j->pub_done);
	j->eng_done = calloc((size_t)j->n, sizeof *j->eng_done);
	if (j->stream) {
		j->ss = calloc((size_t)j->n, sizeof *j->ss);
		j->snap_n = calloc((size_t)j->n, sizeof *j->snap_n);
		j->snap_done = calloc((size_t)j->n, sizeof *j->snap_done);
	}
	if (!j->outs || !j->pub_n || !j->pub_done || !j->eng_done ||
	    (j->stream && (!j->ss || !j->snap_n || !j->snap_done))) {
		bad(b, 500, "out of memory");
		goto fail;
	}
	struct dec_gen_params p = { .max_tokens = j->max_tokens,
				    .samp = { (float)temp, top_k > 0 ? (int)top_k : 0, (float)top_p, (float)min_p },
				    .seed = j->seed, .task = j->task, .sample = 0,
				    .stops = (const char *const *)j->stops, .n_stops = j->n_stops,
				    .top_logprobs = j->top_logprobs, .logprobs = j->logprobs };
	j->r = (struct dec_req){ .prompt = j->prompt, .n_prompt = j->n_prompt, .n = j->n, .p = p,
				 .tok = sm->o.tok, .outs = j->outs, .on_sample = on_sample, .ctx = j };
	json_decref(root);
	return j;
fail:
	free(ids);
	job_free(j);
	json_decref(root);
	return NULL;
}

/* ---- answers ---- */

/* A token's piece (raw bytes, possibly part of a UTF-8 sequence). */
static char *piece(const struct srv_model *sm, int32_t id, size_t *n)
{
	size_t k = dec_tok_piece(sm->o.tok, id, NULL, 0);
	char *s = malloc(k + 1);
	if (!s)
		return NULL;
	dec_tok_piece(sm->o.tok, id, s, k + 1);
	*n = k;
	return s;
}

static json_t *real_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* {token, logprob, bytes} of one id (chat's shape). */
static json_t *tok_obj(const struct srv_model *sm, int32_t id, float lp)
{
	size_t n = 0;
	char *p = piece(sm, id, &n), *t = p ? dec_utf8_repair(p, n) : NULL;
	json_t *bytes = json_array(), *o;
	for (size_t i = 0; p && i < n; i++)
		json_array_append_new(bytes, json_integer((unsigned char)p[i]));
	o = json_pack("{s:s, s:o, s:o}", "token", t ? t : "", "logprob", real_or_null(lp), "bytes", bytes);
	free(t);
	free(p);
	return o;
}

/* Chat's logprobs.content entries of tokens [from, to) of sample o. */
static json_t *chat_logprobs(const struct srv_model *sm, const struct job *j, const struct dec_gen_out *o,
			     int from, int to)
{
	json_t *a = json_array();
	for (int k = from; k < to; k++) {
		json_t *e = tok_obj(sm, o->tokens[k], o->token_lp[k]), *tops = json_array();
		for (int t = 0; t < j->top_logprobs; t++)
			json_array_append_new(tops, tok_obj(sm, o->top_ids[(size_t)k * j->top_logprobs + t],
							    o->top_lp[(size_t)k * j->top_logprobs + t]));
		json_object_set_new(e, "top_logprobs", tops);
		json_array_append_new(a, e);
	}
	return json_pack("{s:o}", "content", a);
}

/* The legacy completions logprobs of tokens [from, to): tokens,
 * token_logprobs, top_logprobs ({token: logprob}), text_offset (bytes from
 * the text's start, text_at the offset of token `from`). */
static json_t *legacy_logprobs(const struct srv_model *sm, const struct job *j, const struct dec_gen_out *o,
			       int from, int to, size_t text_at)
{
	json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
	size_t at = text_at;
	for (int k = from; k < to; k++) {
		size_t n = 0;
		char *p = piece(sm, o->tokens[k], &n), *t = p ? dec_utf8_repair(p, n) : NULL;
		json_array_append_new(toks, json_string(t ? t : ""));
		json_array_append_new(lps, real_or_null(o->token_lp[k]));
		json_array_append_new(offs, json_integer((json_int_t)at));
		if (!dec_tok_is_eog(sm->o.tok, o->tokens[k]))
			at += n;
		free(t);
		free(p);
		if (!j->top_logprobs) {
			json_array_append_new(tops, json_null());
			continue;
		}
		json_t *d = json_object();
		for (int q = 0; q < j->top_logprobs; q++) {
			int32_t id = o->top_ids[(size_t)k * j->top_logprobs + q];
			char *pp = piece(sm, id, &n), *tt = pp ? dec_utf8_repair(pp, n) : NULL;
			if (tt && !json_object_get(d, tt))
				json_object_set_new(d, tt, real_or_null(o->top_lp[(size_t)k * j->top_logprobs + q]));
			free(tt);
			free(pp);
		}
		json_array_append_new(tops, d);
	}
	return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops,
			 "text_offset", offs);
}

static const char *finish_reason(const char *f)
{
	if (!f)
		return "stop";
	if (!strcmp(f, "length") || !strcmp(f, "context"))
		return "length";
	return "stop"; /* eog, stop */
}

static json_t *ids_json(const int32_t *ids, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_integer(ids[i]));
	return a;
}

static json_t *usage_json(const struct job *j)
{
	long long c = 0;
	for (int i = 0; i < j->n; i++)
		c += j->pub_n[i];
	return json_pack("{s:i, s:I, s:I, s:{s:i}}", "prompt_tokens", j->n_prompt, "completion_tokens",
			 (json_int_t)c, "total_tokens", (json_int_t)(c + j->n_prompt), "prompt_tokens_details",
			 "cached_tokens", j->cached);
}

/* The whole answer of a finished job. */
static json_t *whole_answer(const struct srv_model *sm, const struct job *j)
{
	json_t *choices = json_array();
	for (int i = 0; i < j->n; i++) {
		const struct dec_gen_out *o = &j->outs[i];
		char *text = dec_utf8_repair(o->text ? o->text : "", o->text ? o->text_len : 0);
		json_t *c;
		if (j->api == API_CHAT)
			c = json_pack("{s:i, s:{s:s, s:s}, s:o, s:s}", "index", i, "message", "role", "assistant",
				      "content", text ? text : "", "logprobs",
				      j->logprobs ? chat_logprobs(sm, j, o, 0, o->n_tokens) : json_null(),
				      "finish_reason", finish_reason(o->finish));
		else
			c = json_pack("{s:i, s:s, s:o, s:s}", "index", i, "text", text ? text : "", "logprobs",
				      j->logprobs ? legacy_logprobs(sm, j, o, 0, o->n_tokens, 0) : json_null(),
				      "finish_reason", finish_reason(o->finish));
		free(text);
		/* crucible's: this choice's own count (usage sums them) */
		json_object_set_new(c, "completion_tokens", json_integer(o->n_tokens));
		if (j->return_ids)
			json_object_set_new(c, "token_ids", ids_json(o->tokens, o->n_tokens));
		json_array_append_new(choices, c);
	}
	json_t *a = json_pack("{s:s, s:s, s:I, s:s, s:o, s:o}", "id", j->id, "object",
			      j->api == API_CHAT ? "chat.completion" : "text_completion", "created",
			      (json_int_t)j->created, "model", sm->name, "choices", choices, "usage", usage_json(j));
	if (j->return_ids)
		json_object_set_new(a, "prompt_token_ids", ids_json(j->prompt, j->n_prompt));
	return a;
}

/* ---- streaming ---- */

static void sse(struct job *j, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s) {
		j->out.oom = true;
		return;
	}
	sb_add(&j->out, "data: ", 6);
	sb_add(&j->out, s, strlen(s));
	sb_add(&j->out, "\n\n", 2);
	free(s);
}

static json_t *chunk(const struct srv_model *sm, const struct job *j, json_t *choices)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", j->id, "object",
			 j->api == API_CHAT ? "chat.completion.chunk" : "text_completion", "created",
			 (json_int_t)j->created, "model", sm->name, "choices", choices);
}

/* How much of raw[0..n) may go out while the sample runs: a stop string
 * could still complete over the last longest-1 bytes, and an unfinished
 * UTF-8 sequence waits for its end. */
static size_t sendable(const struct job *j, const char *raw, size_t n)
{
	size_t end = n;
	if (j->longest_stop)
		end = n >= j->longest_stop - 1 ? n - (j->longest_stop - 1) : 0;
	for (size_t back = 1; back <= 3 && back <= end; back++) {
		unsigned char c = (unsigned char)raw[end - back];
		if ((c & 0xC0) == 0x80)
			continue;
		size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		if (need > back)
			end -= back;
		break;
	}
	return end;
}

/* New events of sample i into j->out; whether any. Reads the snapshot and
 * what it makes stable (tokens below it; the text of a whole sample): no
 * lock. */
static bool stream_sample(const struct srv_model *sm, struct job *j, int i)
{
	struct sstate *s = &j->ss[i];
	const struct dec_gen_out *o = &j->outs[i];
	int n = j->snap_n[i];
	bool done = j->snap_done[i];

	if (s->fin_sent)
		return false;
	for (; s->seen < n; s->seen++) {
		int32_t id = o->tokens[s->seen];
		if (dec_tok_is_eog(sm->o.tok, id))
			continue;
		size_t pn = 0;
		char *p = piece(sm, id, &pn);
		if (!p) {
			j->out.oom = true;
			return false;
		}
		sb_add(&s->raw, p, pn);
		free(p);
	}
	const char *text = done ? (o->text ? o->text : "") : s->raw.p ? s->raw.p : "";
	size_t tlen = done ? (o->text ? o->text_len : 0) : s->raw.n;
	size_t end = done ? tlen : sendable(j, text, tlen);
	if (end < s->text_sent)
		end = s->text_sent; /* cannot happen: the final text extends what was sent */
	if (end == s->text_sent && s->tok_sent == n && !done)
		return false;
	char *delta = dec_utf8_repair(text + s->text_sent, end - s->text_sent);
	if (!delta) {
		j->out.oom = true;
		return false;
	}
	json_t *c;
	if (j->api == API_CHAT)
		c = json_pack("{s:i, s:{s:s}, s:o, s:o}", "index", i, "delta", "content", delta, "logprobs",
			      j->logprobs ? chat_logprobs(sm, j, o, s->tok_sent, n) : json_null(), "finish_reason",
			      done ? json_string(finish_reason(o->finish)) : json_null());
	else
		c = json_pack("{s:i, s:s, s:o, s:o}", "index", i, "text", delta, "logprobs",
			      j->logprobs ? legacy_logprobs(sm, j, o, s->tok_sent, n, s->raw_at) : json_null(),
			      "finish_reason", done ? json_string(finish_reason(o->finish)) : json_null());
	free(delta);
	if (done) {
		json_object_set_new(c, "completion_tokens", json_integer(o->n_tokens));
		s->fin_sent = true;
	}
	if (j->return_ids)
		json_object_set_new(c, "token_ids", ids_json(o->tokens + s->tok_sent, n - s->tok_sent));
	s->tok_sent = n;
	s->raw_at = s->raw.n; /* raw holds the pieces of [0, n) */
	s->text_sent = end;
	sse(j, chunk(sm, j, json_pack("[o]", c)));
	return true;
}

/* More of the stream into j->out, from the snapshot; whether anything was
 * added. No lock. */
static bool stream_more(struct srv_model *sm, struct job *j)
{
	bool any = false;

	if (!j->head_sent) {
		json_t *cs = json_array();
		for (int i = 0; i < j->n; i++)
			json_array_append_new(cs, j->api == API_CHAT
				? json_pack("{s:i, s:{s:s, s:s}, s:n, s:n}", "index", i, "delta", "role", "assistant",
					    "content", "", "logprobs", "finish_reason")
				: json_pack("{s:i, s:s, s:n, s:n}", "index", i, "text", "", "logprobs",
					    "finish_reason"));
		json_t *c = chunk(sm, j, cs);
		if (j->return_ids)
			json_object_set_new(c, "prompt_token_ids", ids_json(j->prompt, j->n_prompt));
		sse(j, c);
		j->head_sent = any = true;
	}
	if (j->snap_state == J_FAILED || j->snap_state == J_CANCELLED) {
		if (!j->tail_sent) {
			sse(j, json_pack("{s:{s:s, s:i}}", "error", "message",
					 j->snap_state == J_FAILED ? j->err : "the server is stopping", "code",
					 j->snap_state == J_FAILED ? 500 : 503));
			sb_add(&j->out, "data: [DONE]\n\n", 14);
			j->tail_sent = any = true;
		}
		return any;
	}
	for (int i = 0; i < j->n; i++)
		any |= stream_sample(sm, j, i);
	if (j->snap_state == J_DONE && !j->tail_sent) {
		if (j->include_usage) { /* choices empty, the request's usage */
			json_t *c = chunk(sm, j, json_array());
			json_object_set_new(c, "usage", usage_json(j));
			sse(j, c);
		}
		sb_add(&j->out, "data: [DONE]\n\n", 14);
		j->tail_sent = any = true;
	}
	return any;
}

struct stream_ctx {
	struct srv_model *sm;
	struct job *j;
};

/* The job's published state into its snapshot; the progress generation it
 * is of. Under sm->lock. */
static uint64_t snapshot(struct srv_model *sm, struct job *j)
{
	j->snap_state = j->state;
	memcpy(j->snap_n, j->pub_n, (size_t)j->n * sizeof *j->snap_n);
	memcpy(j->snap_done, j->pub_done, (size_t)j->n * sizeof *j->snap_done);
	return sm->gen;
}

/* A snapshot and stream_more over it, with the engine's outputs held for
 * reading: a step (whose failure releases the outputs of unfinished
 * samples) waits, and a failed one is published before the outputs are
 * let go, so the snapshot never counts released tokens. *g: the progress
 * generation of the snapshot. */
static bool stream_more_locked(struct srv_model *sm, struct job *j, uint64_t *g)
{
	pthread_rwlock_rdlock(&sm->outs_lock);
	pthread_mutex_lock(&sm->lock);
	*g = snapshot(sm, j);
	pthread_mutex_unlock(&sm->lock);
	bool any = stream_more(sm, j);
	pthread_rwlock_unlock(&sm->outs_lock);
	return any;
}


/* The events are built outside the lock: what they read below a published
 * count, or of a whole sample, the engine no longer writes; only the
 * counts are read under it. */
static ssize_t stream_fn(void *ctx, char *buf, size_t max)
{
	struct stream_ctx *sc = ctx;
	struct srv_model *sm = sc->sm;
	struct job *j = sc->j;

	if (j->out_off == j->out.n) {
		j->out.n = j->out_off = 0;
		if (j->tail_sent)
			return -1;
		uint64_t g;
		if (!stream_more_locked(sm, j, &g)) {
			/* nothing new: wait for the next step (unless one came
			 * meanwhile), then once more */
			pthread_mutex_lock(&sm->lock);
			if (sm->gen == g)
				timed_wait(&sm->progress, &sm->lock, WAIT_MS);
			pthread_mutex_unlock(&sm->lock);
			if (!stream_more_locked(sm, j, &g) && !j->out.oom)
				return 0;
		}
	}
	if (j->out.oom)
		return -2; /* out of memory: the stream ends with an error */
	size_t k = j->out.n - j->out_off;
	if (k > max)
		k = max;
	memcpy(buf, j->out.p + j->out_off, k);
	j->out_off += k;
	return (ssize_t)k;
}

/* The stream is over (its end, a hang-up, the server stopping): a job
 * still running is cancelled, the connection's reference dropped. */
static void stream_free(void *ctx)
{
	struct stream_ctx *sc = ctx;
	struct srv_model *sm = sc->sm;
	struct job *j = sc->j;

	pthread_mutex_lock(&sm->lock);
	if (j->state == J_QUEUED || j->state == J_RUNNING) {
		j->cancel = true;
		pthread_cond_signal(&sm->work);
	}
	/* sent to its end: as the job ended; cut before: the client went (or
	 * the stream could not be built) */
	sm->outcome[j->out.oom ? O_FAILED : !j->tail_sent ? O_CANCELLED : j->snap_state == J_DONE ? O_OK
		    : j->snap_state == J_FAILED ? O_FAILED : O_STOPPED]++;
	job_unref_locked(j);
	pthread_mutex_unlock(&sm->lock);
	free(sc);
}

/* ---- routes ---- */

/* Retry-After: the samples that must finish before n fit, plus a batch
 * (the running ones finish together, not one by one), at the tokens a
 * finished sample has taken on average and the recent tokens/s; 1..60 s. */
static void retry_after(struct srv_model *sm, struct srv_resp *r, int n, int room)
{
	double rate = rate_now(sm), per = sm->samples_done ? (double)sm->done_tokens / sm->samples_done : 0;
	long s = 1;
	if (rate > 0 && per > 0)
		s = (long)ceil((sm->samples_in + n - room + sm->o.cfg.max_seqs) * per / rate);
	if (s < 1)
		s = 1;
	if (s > 60)
		s = 60;
	char v[32];
	snprintf(v, sizeof v, "%ld", s);
	srv_resp_header(r, "Retry-After", v);
}

static void completions(struct srv_model *sm, enum api api, const struct srv_req *q, struct srv_resp *r)
{
	struct bad b = { 0 };
	struct job *j = parse_job(sm, api, q->body, q->body_len, &b);

	if (!j) {
		pthread_mutex_lock(&sm->lock);
		sm->outcome[O_BAD]++;
		pthread_mutex_unlock(&sm->lock);
		srv_resp_error(r, b.status ? b.status : 400, "%s", b.msg);
		return;
	}
	snprintf(j->id, sizeof j->id, "%s-%016" PRIx64, api == API_CHAT ? "chatcmpl" : "cmpl", cr_secure_u64());
	j->created = (long long)time(NULL);
	pthread_mutex_lock(&sm->lock);
	if (sm->stopping) {
		sm->outcome[O_STOPPED]++;
		pthread_mutex_unlock(&sm->lock);
		job_free(j);
		srv_resp_error(r, 503, "the server is stopping");
		return;
	}
	int room = sm->o.cfg.max_seqs + sm->o.max_queue;
	if (j->n > room) {
		sm->outcome[O_BAD]++;
		pthread_mutex_unlock(&sm->lock);
		job_free(j);
		srv_resp_error(r, 400, "'n' is %d: the queue has room for %d samples in all (--batch + --max-queue)",
			       j->n, room);
		return;
	}
	if (sm->samples_in + j->n > room) {
		int queued = sm->samples_in;
		sm->outcome[O_BUSY]++;
		retry_after(sm, r, j->n, room);
		pthread_mutex_unlock(&sm->lock);
		job_free(j);
		srv_resp_error(r, 429, "the queue is full (%d samples running or waiting, room for %d): retry later",
			       queued, room);
		return;
	}
	j->refs = 2;
	j->state = J_QUEUED;
	*sm->queue_tail = j;
	sm->queue_tail = &j->next;
	sm->queued_jobs++;
	sm->samples_in += j->n;
	sm->prompt_tokens += j->n_prompt;
	pthread_cond_signal(&sm->work);
	if (j->stream) {
		pthread_mutex_unlock(&sm->lock);
		struct stream_ctx *sc = malloc(sizeof *sc);
		if (!sc) {
			pthread_mutex_lock(&sm->lock);
			j->cancel = true;
			sm->outcome[O_FAILED]++;
			pthread_cond_signal(&sm->work);
			job_unref_locked(j);
			pthread_mutex_unlock(&sm->lock);
			srv_resp_error(r, 500, "out of memory");
			return;
		}
		*sc = (struct stream_ctx){ sm, j };
		srv_resp_header(r, "X-Accel-Buffering", "no");
		srv_resp_stream(r, 200, "text/event-stream", stream_fn, sc, stream_free);
		return;
	}
	/* whole: wait, watching the client */
	while (j->state == J_QUEUED || j->state == J_RUNNING) {
		timed_wait(&sm->progress, &sm->lock, 50);
		if (j->state != J_QUEUED && j->state != J_RUNNING)
			break;
		if (srv_req_peer_gone(q)) {
			j->cancel = true;
			sm->outcome[O_CANCELLED]++;
			pthread_cond_signal(&sm->work);
			job_unref_locked(j);
			pthread_mutex_unlock(&sm->lock);
			srv_resp_error(r, 499, "the client closed the connection");
			return;
		}
	}
	enum job_state st = j->state;
	sm->outcome[st == J_DONE ? O_OK : st == J_FAILED ? O_FAILED : O_STOPPED]++;
	pthread_mutex_unlock(&sm->lock);
	/* the engine is done with it: read without the lock */
	if (st == J_DONE)
		srv_resp_json(r, 200, whole_answer(sm, j));
	else if (st == J_FAILED)
		srv_resp_error(r, 500, "%s", j->err);
	else
		srv_resp_error(r, 503, "the server is stopping: the request was cancelled");
	pthread_mutex_lock(&sm->lock);
	job_unref_locked(j);
	pthread_mutex_unlock(&sm->lock);
}

static json_t *body_json(const struct srv_req *q, struct srv_resp *r)
{
	json_error_t je;
	json_t *root = json_loadb(q->body, q->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		srv_resp_error(r, 400, "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
	else if (!json_is_object(root)) {
		json_decref(root);
		root = NULL;
		srv_resp_error(r, 400, "the body must be a JSON object");
	}
	return root;
}

/* POST /tokenize: llama.cpp's shape {"content", "add_special"} or vLLM's
 * {"prompt" | "messages", "add_special_tokens"}; answers both shapes'
 * fields: tokens, count, max_model_len. */
static void tokenize(struct srv_model *sm, const struct srv_req *q, struct srv_resp *r)
{
	json_t *root = body_json(q, r);
	struct bad b = { 0 };
	int32_t *ids = NULL;
	size_t n = 0;
	bool special;

	if (!root)
		return;
	json_t *content = json_object_get(root, "content"), *prompt = json_object_get(root, "prompt"),
	       *msgs = json_object_get(root, "messages");
	if (!check_model(sm, root, &b))
		goto bad;
	if (msgs) {
		if (!chat_prompt(sm, msgs, &ids, &n, &b))
			goto bad;
	} else {
		json_t *t = content ? content : prompt;
		if (!json_is_string(t)) {
			bad(&b, 400, "/tokenize needs \"content\" (llama.cpp), \"prompt\" or \"messages\" (vLLM): a "
				     "string");
			goto bad;
		}
		if (!get_bool(root, content ? "add_special" : "add_special_tokens", !content, &special, &b))
			goto bad;
		struct cr_err err;
		cr_err_init(&err);
		if (dec_tok_encode(sm->o.tok, json_string_value(t), json_string_length(t), 1, special ? -1 : 0, &ids,
				   &n, &err)) {
			bad(&b, err.status == CR_ENOMEM ? 500 : 400, "%s", err.msg);
			goto bad;
		}
	}
	json_decref(root);
	srv_resp_json(r, 200, json_pack("{s:o, s:I, s:i}", "tokens", ids_json(ids, (int)n), "count", (json_int_t)n,
					"max_model_len", sm->o.cfg.max_ctx));
	free(ids);
	return;
bad:
	json_decref(root);
	free(ids);
	srv_resp_error(r, b.status, "%s", b.msg);
}

/* POST /detokenize {"tokens": [...]} -> {"content", "prompt"} (llama.cpp's
 * and vLLM's names for the one text; special tokens written out). */
static void detokenize(struct srv_model *sm, const struct srv_req *q, struct srv_resp *r)
{
	json_t *root = body_json(q, r);
	struct bad b = { 0 };

	if (!root)
		return;
	json_t *t = json_object_get(root, "tokens");
	if (!check_model(sm, root, &b)) {
		json_decref(root);
		srv_resp_error(r, b.status, "%s", b.msg);
		return;
	}
	if (!json_is_array(t)) {
		json_decref(root);
		srv_resp_error(r, 400, "/detokenize needs \"tokens\": an array of token ids");
		return;
	}
	for (size_t i = 0; i < json_array_size(t); i++)
		if (!json_is_integer(json_array_get(t, i))) {
			json_decref(root);
			srv_resp_error(r, 400, "tokens[%zu] must be a token id", i);
			return;
		}
	json_t *wrap = json_pack("{s:O}", "prompt", t);
	int32_t *ids = NULL;
	size_t n = 0;
	bool ok = json_array_size(t) == 0 || completion_prompt(sm, json_object_get(wrap, "prompt"), &ids, &n, &b);
	json_decref(wrap);
	json_decref(root);
	if (!ok) {
		srv_resp_error(r, b.status, "tokens: %s", b.msg);
		return;
	}
	char *text = NULL;
	size_t len = 0;
	struct cr_err err;
	cr_err_init(&err);
	if (dec_tok_decode(sm->o.tok, ids, n, 1, &text, &len, &err)) {
		free(ids);
		srv_resp_error(r, 500, "%s", err.msg);
		return;
	}
	char *fixed = dec_utf8_repair(text, len);
	srv_resp_json(r, 200, json_pack("{s:s, s:s}", "content", fixed ? fixed : "", "prompt", fixed ? fixed : ""));
	free(fixed);
	free(text);
	free(ids);
}

/* GET /metrics: Prometheus' text format. */
static void metrics(struct srv_model *sm, struct srv_resp *r)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (!f) {
		srv_resp_error(r, 500, "out of memory");
		return;
	}
	pthread_mutex_lock(&sm->lock);
	const struct dec_engine_stats *es = &sm->stats;
	fputs("# HELP crucible_requests_total Completion requests by how they ended.\n"
	      "# TYPE crucible_requests_total counter\n", f);
	for (int k = 0; k < (int)(sizeof sm->outcome / sizeof *sm->outcome); k++)
		fprintf(f, "crucible_requests_total{outcome=\"%s\"} %lld\n", outcome_name[k],
			(long long)sm->outcome[k]);
	fprintf(f,
		"# HELP crucible_requests_running Requests the engine holds (admitted or waiting in it).\n"
		"# TYPE crucible_requests_running gauge\n"
		"crucible_requests_running %d\n"
		"# HELP crucible_samples_in Samples running or waiting (the queue's fill; room: %d).\n"
		"# TYPE crucible_samples_in gauge\n"
		"crucible_samples_in %d\n"
		"# TYPE crucible_prompt_tokens_total counter\n"
		"crucible_prompt_tokens_total %lld\n"
		"# HELP crucible_prompt_tokens_cached_total Prompt tokens served from the prefix cache.\n"
		"# TYPE crucible_prompt_tokens_cached_total counter\n"
		"crucible_prompt_tokens_cached_total %lld\n"
		"# TYPE crucible_generation_tokens_total counter\n"
		"crucible_generation_tokens_total %lld\n"
		"# HELP crucible_generation_tokens_per_second Over the last ~15 s.\n"
		"# TYPE crucible_generation_tokens_per_second gauge\n"
		"crucible_generation_tokens_per_second %.2f\n"
		"# HELP crucible_kv_blocks KV cache blocks (of %d positions).\n"
		"# TYPE crucible_kv_blocks gauge\n"
		"crucible_kv_blocks{state=\"total\"} %d\n"
		"crucible_kv_blocks{state=\"used\"} %d\n"
		"crucible_kv_blocks{state=\"peak_used\"} %d\n"
		"# TYPE crucible_engine_steps_total counter\n"
		"crucible_engine_steps_total %lld\n"
		"# TYPE crucible_preemptions_total counter\n"
		"crucible_preemptions_total %lld\n"
		"# TYPE crucible_prefill_tokens_total counter\n"
		"crucible_prefill_tokens_total %lld\n",
		sm->running_jobs + sm->queued_jobs, sm->o.cfg.max_seqs + sm->o.max_queue, sm->samples_in,
		(long long)sm->prompt_tokens, (long long)sm->cached_tokens, (long long)sm->gen_tokens, rate_now(sm),
		es->block_size, es->n_blocks, es->n_blocks - es->free_blocks, es->peak_blocks, (long long)es->steps,
		(long long)es->preemptions, (long long)es->prefill_tokens);
	pthread_mutex_unlock(&sm->lock);
	if (fclose(f)) {
		free(s);
		srv_resp_error(r, 500, "out of memory");
		return;
	}
	srv_resp_body(r, 200, "text/plain; version=0.0.4", s, n);
}

void srv_model_handle(void *ctx, const struct srv_req *q, struct srv_resp *r)
{
	struct srv_model *sm = ctx;
	const char *p = q->path;
	bool get = !strcmp(q->method, "GET") || !strcmp(q->method, "HEAD"), post = !strcmp(q->method, "POST");
	const char *allow = "GET, HEAD";

	while (p[0] == '/' && p[1] == '/')
		p++; /* a base URL ending in / joined to /v1/...: one slash */

	if (!strcmp(p, "/health") || !strcmp(p, "/v1/health")) {
		if (!get)
			goto method;
		pthread_mutex_lock(&sm->lock);
		bool stopping = sm->stopping;
		pthread_mutex_unlock(&sm->lock);
		if (stopping)
			srv_resp_error(r, 503, "the server is stopping");
		else
			srv_resp_json(r, 200, json_pack("{s:s, s:s, s:s}", "status", "ok", "model", sm->name, "device",
							dec_engine_device(sm->e)));
		return;
	}
	if (!strncmp(p, "/v1/", 4) && (!strncmp(p + 3, "/models", 7)))
		p += 3; /* /v1/models... and /models... alike */
	if (!strcmp(p, "/models")) {
		if (!get)
			goto method;
		srv_resp_json(r, 200, json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data",
						"id", sm->name, "object", "model", "created", (json_int_t)0,
						"owned_by", "crucible", "max_model_len", sm->o.cfg.max_ctx));
		return;
	}
	if (!strncmp(p, "/models/", 8)) {
		if (!get)
			goto method;
		if (strcmp(p + 8, sm->name) && strcmp(p + 8, sm->path)) {
			srv_resp_error(r, 404, "the model '%.200s' does not exist: this server serves '%.200s'", p + 8,
				       sm->name);
			return;
		}
		srv_resp_json(r, 200, json_pack("{s:s, s:s, s:I, s:s, s:i}", "id", sm->name, "object", "model",
						"created", (json_int_t)0, "owned_by", "crucible", "max_model_len",
						sm->o.cfg.max_ctx));
		return;
	}
	if (!strcmp(p, "/metrics")) {
		if (!get)
			goto method;
		metrics(sm, r);
		return;
	}
	if (!strcmp(p, "/v1/chat/completions") || !strcmp(p, "/chat/completions")) {
		if (!post) {
			allow = "POST";
			goto method;
		}
		completions(sm, API_CHAT, q, r);
		return;
	}
	if (!strcmp(p, "/v1/completions") || !strcmp(p, "/completions")) {
		if (!post) {
			allow = "POST";
			goto method;
		}
		completions(sm, API_COMPLETION, q, r);
		return;
	}
	if (!strcmp(p, "/tokenize") || !strcmp(p, "/v1/tokenize")) {
		if (!post) {
			allow = "POST";
			goto method;
		}
		tokenize(sm, q, r);
		return;
	}
	if (!strcmp(p, "/detokenize") || !strcmp(p, "/v1/detokenize")) {
		if (!post) {
			allow = "POST";
			goto method;
		}
		detokenize(sm, q, r);
		return;
	}
	srv_resp_error(r, 404, "no route %.200s: the model server has /v1/chat/completions, /v1/completions, "
			       "/v1/models, /tokenize, /detokenize, /health and /metrics", p);
	return;
method:
	srv_resp_header(r, "Allow", allow);
	srv_resp_error(r, 405, "%s is not allowed on %.200s", q->method, p);
}
