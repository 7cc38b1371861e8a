/* gen_local.c — the "builtin" generator: decode/'s serving engine
 * (dec_engine.h) on a GGUF file behind the table of gen_gen.h.
 *
 * One model, one tokenizer and one engine for the generator's life, driven
 * by one serving thread. Up to `concurrency` requests may be in flight
 * (gen_run's generator threads each wait in complete()); the serving thread
 * hands them to the engine as they come, so their samples are batched
 * together continuously, and steps the engine while any is unfinished.
 *
 * Conversations need no bookkeeping here: the engine's prefix cache keeps
 * the blocks of every prompt and completion it computed (least recently
 * used first out), so a conversation's next turn, or the same prompt asked
 * again, computes only the tokens the cache does not hold. A token's cache
 * entries do not depend on how they were computed (docs/DECODER.md,
 * Exactness), so reuse and batching change no token.
 *
 * pause(true) makes the serving thread wait at its next wait point (before
 * each engine step) and returns once it waits, or at once when nothing is
 * in flight; pause(false) lets it go on. gen_s leaves out the time a
 * request spent paused. */
#include "gen/gen_gen.h"
#include "gen/gen_local.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "decode/engine/dec_engine.h"
#include "decode/model/dec_model.h"
#include "decode/dec_run.h"

#define CTX_CAP 16384   /* the context when the configuration names none */
#define BATCH_DEFAULT 8 /* generate's --batch */

/* One request in flight. */
struct job {
	struct dec_req r;
	struct dec_gen_out *outs; /* [r.n] */
	struct job *next;         /* the queue, then the list in the engine */
	enum cr_status st;
	struct cr_err err;
	int done;
	double paused0;           /* L->paused_total when it was queued */
	const struct gen_req *rq; /* its on_progress */
	int *told;                /* [r.n] the token counts last reported */
};

struct local {
	char *path;
	char sha256[65];
	struct dec_model *m;
	struct dec_tok *tok;
	struct dec_engine *eng;
	struct dec_model *draft;  /* the draft model, or NULL */
	int ctx, batch, concurrency, no_think;
	pthread_t th;
	int th_started;
	pthread_mutex_t mu;       /* everything below */
	pthread_cond_t cv;
	struct job *queue, *in_engine;
	bool stop, paused, parked;
	double paused_total;      /* seconds the serving thread spent parked */
	uint64_t progress;        /* wait points passed */
};

static double now_s(void)
{
	return (double)cr_now_ns() * 1e-9;
}

/* Where the serving thread may stop while paused (the engine's on_step). */
static void wait_point(void *ctx)
{
	struct local *L = ctx;

	pthread_mutex_lock(&L->mu);
	L->progress++;
	if (L->paused) {
		double t0 = now_s();

		L->parked = true;
		pthread_cond_broadcast(&L->cv);
		while (L->paused)
			pthread_cond_wait(&L->cv, &L->mu);
		L->parked = false;
		L->paused_total += now_s() - t0;
	}
	pthread_mutex_unlock(&L->mu);
}

static bool busy(const struct local *L)
{
	return L->queue || L->in_engine;
}

static void local_pause(void *ctx, bool on)
{
	struct local *L = ctx;

	pthread_mutex_lock(&L->mu);
	L->paused = on;
	pthread_cond_broadcast(&L->cv);
	while (on && busy(L) && !L->parked)
		pthread_cond_wait(&L->cv, &L->mu);
	pthread_mutex_unlock(&L->mu);
}

uint64_t gen_local_progress(const struct gen_generator *g)
{
	struct local *L = g->ctx;
	uint64_t p;

	pthread_mutex_lock(&L->mu);
	p = L->progress;
	pthread_mutex_unlock(&L->mu);
	return p;
}

/* With mu held: jobs the engine finished (or that failed with st) leave
 * the list and wake their callers. */
static void reap(struct local *L, enum cr_status st, const struct cr_err *e)
{
	struct job **pp = &L->in_engine;

	while (*pp) {
		struct job *j = *pp;

		if (st || j->r.n_done == j->r.n) {
			if (st) {
				j->st = st;
				j->err = *e;
			}
			j->done = 1;
			*pp = j->next;
		} else {
			pp = &j->next;
		}
	}
	pthread_cond_broadcast(&L->cv);
}

/* After a step, on the serving thread: each sample's tokens so far to its
 * request's on_progress, when they moved. The list of jobs in the engine
 * is this thread's own (complete() only queues and waits), and no job
 * leaves it before reap, so it is read without the lock. */
static void report_progress(struct local *L)
{
	for (struct job *j = L->in_engine; j; j = j->next) {
		if (!j->rq->on_progress || !j->told)
			continue;
		for (int k = 0; k < j->r.n; k++)
			if (j->outs[k].n_tokens != j->told[k]) {
				j->told[k] = j->outs[k].n_tokens;
				j->rq->on_progress(j->rq->pctx, k, j->outs[k].n_tokens, j->outs[k].text_len);
			}
	}
}

static void *serve(void *arg)
{
	struct local *L = arg;
	struct cr_err e;
	enum cr_status st;

	pthread_mutex_lock(&L->mu);
	for (;;) {
		while (!L->stop && !busy(L))
			pthread_cond_wait(&L->cv, &L->mu);
		if (L->stop)
			break;
		while (L->queue) {
			struct job *j = L->queue;

			L->queue = j->next;
			j->next = L->in_engine;
			L->in_engine = j;
			cr_err_init(&j->err);
			if ((j->st = dec_engine_submit(L->eng, &j->r, &j->err))) {
				L->in_engine = j->next;
				j->done = 1;
			}
		}
		pthread_mutex_unlock(&L->mu);
		cr_err_init(&e);
		st = dec_engine_step(L->eng, &e);
		if (!st)
			report_progress(L);
		pthread_mutex_lock(&L->mu);
		reap(L, st, &e);
	}
	pthread_mutex_unlock(&L->mu);
	return NULL;
}

static void fill(struct local *L, const struct job *j, int n_prompt, struct gen_completion *out)
{
	for (int k = 0; k < j->r.n; k++) {
		struct dec_gen_out *o = &j->outs[k];
		struct gen_completion *c = &out[k];

		c->text = o->text;
		c->len = o->text_len;
		o->text = NULL;
		c->prompt_tokens = n_prompt;
		c->completion_tokens = o->n_tokens;
		c->reasoning_tokens = dec_gen_reasoning_tokens(L->tok, o);
		/* the completions share one prefill: the first one carries it */
		c->prefill_tokens = k ? 0 : j->r.prefill_tokens;
		snprintf(c->finish, sizeof c->finish, "%s", o->finish ? o->finish : "");
		/* the decoder counted what it sampled; no server, nothing lost */
		snprintf(c->count_src, sizeof c->count_src, "decoder");
		c->usage_tokens = -1;
		c->lost_tokens = 0;
	}
}

static enum cr_status local_complete(void *ctx, const struct gen_req *rq,
				     struct gen_completion *out, struct cr_err *err)
{
	struct local *L = ctx;
	const char *task = rq->task ? rq->task : "(no task)";
	struct dec_chat_msg *msgs = NULL;
	char *chat = NULL;
	int32_t *ids = NULL;
	size_t n_ids = 0;
	struct job j = { 0 };
	enum cr_status st = CR_OK;
	double t0 = now_s(), paused = 0;

	for (int k = 0; k < rq->n; k++) {
		memset(&out[k], 0, sizeof out[k]);
		out[k].prompt_tokens = out[k].completion_tokens = out[k].reasoning_tokens = -1;
	}
	if (rq->n < 1 || rq->n_msgs < 1 || !rq->msgs || rq->max_tokens < 0)
		return cr_errf(err, CR_EUSAGE,
			       "builtin generator: %s: bad request (%d completions, %d messages, "
			       "%d max tokens)", task, rq->n, rq->n_msgs, rq->max_tokens);
	msgs = malloc((size_t)rq->n_msgs * sizeof *msgs);
	j.outs = calloc((size_t)rq->n, sizeof *j.outs);
	j.told = calloc((size_t)rq->n, sizeof *j.told);
	j.rq = rq;
	if (!msgs || !j.outs || !j.told) {
		st = cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
		goto out;
	}
	for (int i = 0; i < rq->n_msgs; i++)
		msgs[i] = (struct dec_chat_msg){ rq->msgs[i].role, rq->msgs[i].content };
	/* as generate: the templates write BOS as text, so add_bos 0 */
	if ((st = dec_chat_format_msgs(L->tok, msgs, rq->n_msgs, &chat, err)) ||
	    (st = dec_tok_encode(L->tok, chat, strlen(chat), 1, 0, &ids, &n_ids, err)))
		goto out;
	if ((int)n_ids >= L->ctx || n_ids == 0) {
		st = cr_errf(err, CR_EUSAGE,
			     "%s: prompt of %zu tokens does not fit the context of %d", task, n_ids,
			     L->ctx);
		goto out;
	}
	j.r = (struct dec_req){
		.prompt = ids, .n_prompt = (int)n_ids, .n = rq->n, .tok = L->tok, .outs = j.outs,
		.p = { .max_tokens = rq->max_tokens,
		       .samp = { rq->temperature, rq->top_k, rq->top_p, rq->min_p },
		       .seed = rq->seed, .task = rq->task, .sample = rq->sample0,
		       .stops = rq->stops, .n_stops = rq->n_stops },
	};
	pthread_mutex_lock(&L->mu);
	j.paused0 = L->paused_total;
	j.next = L->queue;
	L->queue = &j;
	pthread_cond_broadcast(&L->cv);
	while (!j.done)
		pthread_cond_wait(&L->cv, &L->mu);
	paused = L->paused_total - j.paused0;
	pthread_mutex_unlock(&L->mu);
	if ((st = j.st)) {
		cr_errf(err, st, "builtin generator: %s: %s", task, j.err.msg);
		goto out;
	}
	fill(L, &j, (int)n_ids, out);
out:
	for (int k = 0; k < rq->n; k++) {
		if (st)
			gen_completion_release(&out[k]);
		else
			out[k].gen_s = now_s() - t0 - paused;
		if (j.outs)
			dec_gen_out_release(&j.outs[k]);
	}
	free(j.outs);
	free(j.told);
	free(ids);
	free(chat);
	free(msgs);
	return st;
}

/* The prefix cache keeps conversations: nothing to forget by name. */
static void local_end_conv(void *ctx, const char *conv)
{
	(void)ctx;
	(void)conv;
}

static json_t *local_describe(void *ctx)
{
	struct local *L = ctx;
	const struct dec_engine_stats *s = dec_engine_stats(L->eng);
	json_t *j = json_object();

	if (!j)
		return NULL;
	json_object_set_new(j, "kind", json_string("builtin"));
	json_object_set_new(j, "model", json_string(L->path));
	json_object_set_new(j, "model_sha256", json_string(L->sha256));
	json_object_set_new(j, "arch", json_string(L->m->cfg.arch_name));
	json_object_set_new(j, "chat_template", json_string(dec_chat_template_name(L->tok)));
	json_object_set_new(j, "no_think", json_boolean(L->no_think));
	json_object_set_new(j, "ctx", json_integer(L->ctx));
	json_object_set_new(j, "device", json_string(dec_engine_device(L->eng)));
	json_object_set_new(j, "batch", json_integer(L->batch));
	json_object_set_new(j, "kv_blocks", json_integer(s->n_blocks));
	json_object_set_new(j, "kv_block_size", json_integer(s->block_size));
	if (L->draft)
		json_object_set_new(j, "draft_model_arch", json_string(L->draft->cfg.arch_name));
	return j;
}

static void local_release(void *ctx)
{
	struct local *L = ctx;

	if (!L)
		return;
	if (L->th_started) {
		pthread_mutex_lock(&L->mu);
		L->stop = true;
		pthread_cond_broadcast(&L->cv);
		pthread_mutex_unlock(&L->mu);
		pthread_join(L->th, NULL);
	}
	dec_engine_free(L->eng);
	dec_model_free(L->draft);
	dec_tok_free(L->tok);
	dec_model_free(L->m);
	free(L->path);
	pthread_cond_destroy(&L->cv);
	pthread_mutex_destroy(&L->mu);
	free(L);
}

/* The model and its tokenizer; every error names the file. */
static enum cr_status open_model(struct local *L, const char *path, struct cr_err *err)
{
	struct cr_err e;
	enum cr_status st;

	cr_err_init(&e);
	if (!(st = dec_model_open(path, &L->m, &e)))
		st = dec_vocab_tokenizer(L->m->gguf, &L->tok, &e);
	if (st)
		return strstr(e.msg, path)
			       ? cr_errf(err, st, "builtin generator: %s", e.msg)
			       : cr_errf(err, st, "builtin generator: %s: %s", path, e.msg);
	/* the bytes loaded, through the model's own mapping of the file */
	cr_sha256_hex(L->m->gguf->base, L->m->gguf->size, L->sha256);
	return CR_OK;
}

/* --chat-template and --no-think, then a template must be known. */
static enum cr_status set_template(struct local *L, const struct gen_local_cfg *c, struct cr_err *err)
{
	enum cr_status st;

	if (c->chat_template && (st = dec_chat_set_template(L->tok, c->chat_template, err)))
		return st;
	if (!strcmp(dec_chat_template_name(L->tok), "none"))
		return cr_errf(err, CR_EINPUT, "builtin generator: %s: no known chat template "
			       "(chatml, llama3, deepseek-r1, phi3, gemma; --chat-template names one)", c->model);
	if (c->no_think && (st = dec_chat_set_no_think(L->tok, err)))
		return st;
	return CR_OK;
}

enum cr_status gen_local_open(const struct gen_local_cfg *c, struct gen_generator *g,
			      struct cr_err *err)
{
	struct local *L;
	struct dec_engine_cfg ec;
	enum cr_status st;

	memset(g, 0, sizeof *g);
	if (!c || !c->model || !*c->model)
		return cr_errf(err, CR_EUSAGE, "builtin generator: no model file");
	if (c->ctx < 0 || c->concurrency < 0 || c->concurrency > 256 || c->batch < 0 || c->batch > 256)
		return cr_errf(err, CR_EUSAGE,
			       "builtin generator: %s: bad context %d, concurrency %d or batch "
			       "%d (at most 256 each)", c->model, c->ctx, c->concurrency, c->batch);
	L = calloc(1, sizeof *L);
	if (!L)
		return cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
	pthread_mutex_init(&L->mu, NULL);
	pthread_cond_init(&L->cv, NULL);
	L->batch = c->batch > 0 ? c->batch : BATCH_DEFAULT;
	L->no_think = c->no_think;
	L->concurrency = c->concurrency > 0 ? c->concurrency : 1;
	if (!(L->path = strdup(c->model))) {
		st = cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
		goto fail;
	}
	if ((st = open_model(L, c->model, err)) || (st = set_template(L, c, err)))
		goto fail;
	L->ctx = c->ctx ? c->ctx : L->m->cfg.ctx_len < CTX_CAP ? L->m->cfg.ctx_len : CTX_CAP;
	if (L->ctx < 2) {
		st = cr_errf(err, CR_EINPUT, "builtin generator: %s: context of %d tokens",
			     c->model, L->ctx);
		goto fail;
	}
	if (c->draft_model && (st = dec_open_draft(c->draft_model, c->model, L->tok, &L->draft, err)))
		goto fail;
	ec = (struct dec_engine_cfg){ .device = c->device, .max_seqs = L->batch, .max_ctx = L->ctx,
				      .max_batch_tokens = c->max_batch_tokens, .kv_mem = c->kv_mem,
				      .n_threads = c->threads, .on_step = wait_point, .ctx = L,
				      .draft_model = L->draft,
				      .draft_tokens = c->draft_ngram || L->draft ? (c->draft_tokens ? c->draft_tokens : 4) : 0 };
	if (ec.max_batch_tokens && ec.max_batch_tokens < ec.max_seqs)
		ec.max_seqs = ec.max_batch_tokens;
	if ((st = dec_engine_new(L->m, &ec, &L->eng, err)))
		goto fail;
	if (dec_engine_device_note(L->eng)[0])
		fprintf(stderr, "builtin generator: %s\n", dec_engine_device_note(L->eng));
	if (pthread_create(&L->th, NULL, serve, L)) {
		st = cr_errf(err, CR_EENV, "builtin generator: cannot start its serving thread");
		goto fail;
	}
	L->th_started = 1;
	*g = (struct gen_generator){
		.kind = "builtin", .ctx = L, .max_inflight = L->concurrency, .complete = local_complete,
		.end_conv = local_end_conv, .pause = local_pause, .describe = local_describe,
		.release = local_release,
	};
	return CR_OK;
fail:
	local_release(L);
	return st;
}
