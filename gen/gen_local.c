/* gen_local.c — the "builtin" generator: decode/'s CPU decoder on a GGUF
 * file behind the table of gen_gen.h.
 *
 * One model, one tokenizer and one run state for the generator's life. The
 * state has batch + max_seqs sequences: 0 .. batch-1 decode one request's
 * completions together exactly as `crucible generate` does (the prompt
 * prefilled into sequence 0, then dec_generate_n in batches sharing it), and
 * batch + i keeps conversation i's cache.
 *
 * Sequence 0 remembers the ids it holds (the last prompt and the tokens
 * generated after it that were fed back), so a request computes only from
 * the first id where its prompt differs: a conversation's next turn, or the
 * same prompt asked again. The prefix kept is at most n_prompt - 1 ids, so
 * the last prompt token is always computed and gives the logits. A
 * conversation being extended stays in sequence 0 (it is "resident") and is
 * copied to its own slot only when another request needs sequence 0; on its
 * next turn the common prefix is copied back. A token's cache entries do not
 * depend on how they were computed (prefill blocks, one token at a time, a
 * batch: docs/DECODER.md, Exactness), so reuse changes no token.
 *
 * pause(true) makes the request thread wait at its next wait point (before
 * each prefill chunk of 64 tokens, after each decode step) and returns once
 * it waits, or at once when no request runs; pause(false) lets it go on.
 * gen_s leaves out the time spent waiting. */
#include "gen/gen_gen.h"
#include "gen/gen_local.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "decode/dec_model.h"
#include "decode/dec_run.h"

#define PREFILL_CHUNK 64
#define CTX_CAP 16384   /* the context when the configuration names none */
#define BATCH_DEFAULT 8 /* generate's --batch */

struct conv {
	char *key;     /* NULL: a free entry */
	int32_t *ids;  /* [n] the ids in its cache (its slot's; sequence 0's while resident) */
	int n;
	uint64_t used; /* LRU clock */
};

struct local {
	char *path;
	char sha256[65];
	struct dec_model *m;
	struct dec_tok *tok;
	struct dec_state *s;
	int ctx, batch, max_seqs;
	float *logits;       /* [n_vocab] the prompt's last logits */
	struct dec_gen_out *outs; /* [batch] */
	int32_t *s0;         /* [ctx] the ids sequence 0 holds */
	int s0_n;
	int resident;        /* the conversation whose cache is sequence 0's; -1: none */
	struct conv *convs;  /* [max_seqs], slot batch + i */
	uint64_t clock;
	pthread_mutex_t run; /* complete and end_conv, one at a time */
	pthread_mutex_t mu;  /* what pause shares with the request thread */
	pthread_cond_t cv;
	bool paused, parked, running;
	double paused_s;     /* time the running request spent parked */
	uint64_t progress;   /* wait points passed */
};

/* Where the request thread may stop while paused. */
static void wait_point(struct local *L)
{
	pthread_mutex_lock(&L->mu);
	L->progress++;
	if (L->paused) {
		int64_t t0 = cr_now_ns();

		L->parked = true;
		pthread_cond_broadcast(&L->cv);
		while (L->paused)
			pthread_cond_wait(&L->cv, &L->mu);
		L->parked = false;
		L->paused_s += (double)(cr_now_ns() - t0) * 1e-9;
	}
	pthread_mutex_unlock(&L->mu);
}

static void on_token(void *ctx, int n_generated)
{
	(void)n_generated;
	wait_point(ctx);
}

static void set_running(struct local *L, bool on)
{
	pthread_mutex_lock(&L->mu);
	L->running = on;
	if (on)
		L->paused_s = 0;
	pthread_cond_broadcast(&L->cv);
	pthread_mutex_unlock(&L->mu);
}

static void local_pause(void *ctx, bool on)
{
	struct local *L = ctx;

	pthread_mutex_lock(&L->mu);
	L->paused = on;
	pthread_cond_broadcast(&L->cv);
	while (on && L->running && !L->parked)
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

static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb)
{
	int i = 0;

	while (i < na && i < nb && a[i] == b[i])
		i++;
	return i;
}

/* Sequence 0's cache back to the resident conversation's slot. */
static void flush_resident(struct local *L)
{
	if (L->resident < 0)
		return;
	dec_state_copy_seq(L->s, 0, L->batch + L->resident, L->convs[L->resident].n);
	L->resident = -1;
}

/* Computes ids[from..n) after the from ids sequence 0 holds; the last
 * token's logits land in L->logits and sequence 0 then holds ids[0..n). */
static enum cr_status prefill(struct local *L, const int32_t *ids, int from, int n,
			      struct cr_err *err)
{
	struct dec_state *s = L->s;
	enum cr_status st;

	s->seq = 0;
	s->pos = from;
	L->s0_n = from;
	for (int i = from; i < n; i += PREFILL_CHUNK) {
		int nb = n - i < PREFILL_CHUNK ? n - i : PREFILL_CHUNK;

		wait_point(L);
		if ((st = dec_forward(s, ids + i, nb, NULL, err))) {
			L->s0_n = 0;
			return st;
		}
	}
	memcpy(L->s0, ids, (size_t)n * sizeof *ids);
	L->s0_n = n;
	memcpy(L->logits, s->logits, (size_t)L->m->cfg.n_vocab * sizeof *L->logits);
	return CR_OK;
}

/* After a batch: sequence 0 holds the prompt and the tokens of the batch's
 * first sample that were fed back (all but its last). */
static void note_fed(struct local *L, const struct dec_gen_out *o)
{
	int fed = o->n_tokens > 0 ? o->n_tokens - 1 : 0;

	if (L->s0_n + fed > L->ctx)
		fed = L->ctx - L->s0_n;
	memcpy(L->s0 + L->s0_n, o->tokens, (size_t)fed * sizeof *o->tokens);
	L->s0_n += fed;
}

static void fill(struct local *L, struct dec_gen_out *o, int n_prompt, struct gen_completion *c)
{
	c->text = o->text;
	c->len = o->text_len;
	o->text = NULL;
	c->prompt_tokens = n_prompt;
	c->completion_tokens = o->n_tokens;
	c->reasoning_tokens = dec_gen_reasoning_tokens(L->tok, o);
	snprintf(c->finish, sizeof c->finish, "%s", o->finish ? o->finish : "");
}

/* rq's n completions after ids[0..n_ids), the first `from` of which
 * sequence 0 already holds; batches of L->batch as generate runs them. */
static enum cr_status generate(struct local *L, const struct gen_req *rq, const int32_t *ids,
			       int n_ids, int from, struct gen_completion *out, struct cr_err *err)
{
	struct dec_gen_params gp = {
		.max_tokens = rq->max_tokens,
		.samp = { rq->temperature, rq->top_k, rq->top_p, rq->min_p },
		.seed = rq->seed, .task = rq->task,
		.stops = rq->stops, .n_stops = rq->n_stops,
		.on_token = on_token, .ctx = L,
	};
	enum cr_status st;

	if ((st = prefill(L, ids, from, n_ids, err)))
		return st;
	for (int i0 = 0; i0 < rq->n; i0 += L->batch) {
		int nb = rq->n - i0 < L->batch ? rq->n - i0 : L->batch;

		gp.sample = rq->sample0 + (uint64_t)i0;
		L->s0_n = n_ids;
		st = dec_generate_n(L->s, L->tok, ids, n_ids, L->logits, &gp, nb, L->outs, err);
		if (st) {
			L->s0_n = 0;
			return st;
		}
		note_fed(L, &L->outs[0]);
		for (int k = 0; k < nb; k++) {
			fill(L, &L->outs[k], n_ids, &out[i0 + k]);
			dec_gen_out_release(&L->outs[k]);
		}
	}
	out[0].prefill_tokens = n_ids - from; /* the completions share one prefill */
	return CR_OK;
}

static int find_conv(const struct local *L, const char *key)
{
	for (int i = 0; i < L->max_seqs; i++)
		if (L->convs[i].key && !strcmp(L->convs[i].key, key))
			return i;
	return -1;
}

static void drop_conv(struct local *L, int i)
{
	if (L->resident == i)
		L->resident = -1; /* sequence 0 keeps the ids as a plain prefix */
	free(L->convs[i].key);
	L->convs[i].key = NULL;
	L->convs[i].n = 0;
}

/* An entry for key: a free one, else the least recently used one's. */
static enum cr_status take_conv(struct local *L, const char *key, int *out, struct cr_err *err)
{
	int best = -1;
	char *k = strdup(key);

	if (!k)
		return cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
	for (int i = 0; i < L->max_seqs; i++) {
		if (!L->convs[i].key) {
			best = i;
			break;
		}
		if (best < 0 || L->convs[i].used < L->convs[best].used)
			best = i;
	}
	if (L->convs[best].key)
		drop_conv(L, best);
	L->convs[best].key = k;
	L->convs[best].n = 0;
	*out = best;
	return CR_OK;
}

/* One completion extending conversation rq->conv. */
static enum cr_status complete_conv(struct local *L, const struct gen_req *rq, const int32_t *ids,
				    int n_ids, struct gen_completion *out, struct cr_err *err)
{
	int e = find_conv(L, rq->conv), from;
	enum cr_status st;
	struct conv *c;

	if (e < 0 && (st = take_conv(L, rq->conv, &e, err)))
		return st;
	c = &L->convs[e];
	if (L->resident != e) {
		int in_slot = common_prefix(c->ids, c->n, ids, n_ids);

		flush_resident(L);
		/* its slot, unless sequence 0 already holds a longer prefix */
		if (in_slot > common_prefix(L->s0, L->s0_n, ids, n_ids)) {
			dec_state_copy_seq(L->s, L->batch + e, 0, in_slot);
			memcpy(L->s0, c->ids, (size_t)in_slot * sizeof *ids);
			L->s0_n = in_slot;
		}
		L->resident = e;
	}
	from = common_prefix(L->s0, L->s0_n, ids, n_ids);
	if (from > n_ids - 1)
		from = n_ids - 1;
	st = generate(L, rq, ids, n_ids, from, out, err);
	if (st) {
		L->resident = -1;
		c->n = 0;
		return st;
	}
	memcpy(c->ids, L->s0, (size_t)L->s0_n * sizeof *c->ids);
	c->n = L->s0_n;
	c->used = ++L->clock;
	return CR_OK;
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
	enum cr_status st = CR_OK;
	int64_t t0 = cr_now_ns();
	double gen_s;

	for (int k = 0; k < rq->n; k++) {
		memset(&out[k], 0, sizeof out[k]);
		out[k].prompt_tokens = out[k].completion_tokens = out[k].reasoning_tokens = -1;
	}
	if (rq->n < 1 || rq->n_msgs < 1 || !rq->msgs || rq->max_tokens < 0)
		return cr_errf(err, CR_EUSAGE,
			       "builtin generator: %s: bad request (%d completions, %d messages, "
			       "%d max tokens)", task, rq->n, rq->n_msgs, rq->max_tokens);
	pthread_mutex_lock(&L->run);
	set_running(L, true);
	msgs = malloc((size_t)rq->n_msgs * sizeof *msgs);
	if (!msgs) {
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
	if (rq->conv && rq->n == 1 && L->max_seqs > 0) {
		st = complete_conv(L, rq, ids, (int)n_ids, out, err);
	} else {
		int from;

		flush_resident(L);
		from = common_prefix(L->s0, L->s0_n, ids, (int)n_ids);
		if (from > (int)n_ids - 1)
			from = (int)n_ids - 1;
		st = generate(L, rq, ids, (int)n_ids, from, out, err);
	}
out:
	set_running(L, false);
	gen_s = (double)(cr_now_ns() - t0) * 1e-9 - L->paused_s;
	pthread_mutex_unlock(&L->run);
	for (int k = 0; k < rq->n; k++) {
		if (st)
			gen_completion_release(&out[k]);
		else
			out[k].gen_s = gen_s;
	}
	free(ids);
	free(chat);
	free(msgs);
	return st;
}

static void local_end_conv(void *ctx, const char *conv)
{
	struct local *L = ctx;
	int i;

	if (!conv)
		return;
	pthread_mutex_lock(&L->run);
	if ((i = find_conv(L, conv)) >= 0)
		drop_conv(L, i);
	pthread_mutex_unlock(&L->run);
}

static json_t *local_describe(void *ctx)
{
	struct local *L = ctx;
	json_t *j = json_object();

	if (!j)
		return NULL;
	json_object_set_new(j, "kind", json_string("builtin"));
	json_object_set_new(j, "model", json_string(L->path));
	json_object_set_new(j, "model_sha256", json_string(L->sha256));
	json_object_set_new(j, "arch", json_string(L->m->cfg.arch_name));
	json_object_set_new(j, "chat_template", json_string(dec_chat_template_name(L->tok)));
	json_object_set_new(j, "ctx", json_integer(L->ctx));
	return j;
}

static void local_release(void *ctx)
{
	struct local *L = ctx;

	if (!L)
		return;
	for (int i = 0; L->convs && i < L->max_seqs; i++) {
		free(L->convs[i].key);
		free(L->convs[i].ids);
	}
	free(L->convs);
	free(L->outs);
	free(L->s0);
	free(L->logits);
	dec_state_free(L->s);
	dec_tok_free(L->tok);
	dec_model_free(L->m);
	free(L->path);
	pthread_cond_destroy(&L->cv);
	pthread_mutex_destroy(&L->mu);
	pthread_mutex_destroy(&L->run);
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
	if (!strcmp(dec_chat_template_name(L->tok), "none"))
		return cr_errf(err, CR_EINPUT, "builtin generator: %s: no known chat template "
			       "(chatml, llama3, deepseek-r1)", path);
	/* the bytes loaded, through the model's own mapping of the file */
	cr_sha256_hex(L->m->gguf->base, L->m->gguf->size, L->sha256);
	return CR_OK;
}

enum cr_status gen_local_open(const struct gen_local_cfg *c, struct gen_generator *g,
			      struct cr_err *err)
{
	struct local *L;
	enum cr_status st;
	int n_vocab;

	memset(g, 0, sizeof *g);
	if (!c || !c->model || !*c->model)
		return cr_errf(err, CR_EUSAGE, "builtin generator: no model file");
	if (c->ctx < 0 || c->max_seqs < 0 || c->batch > 256)
		return cr_errf(err, CR_EUSAGE,
			       "builtin generator: %s: bad context %d, conversations %d or batch "
			       "%d (batch at most 256)", c->model, c->ctx, c->max_seqs, c->batch);
	L = calloc(1, sizeof *L);
	if (!L)
		return cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
	pthread_mutex_init(&L->run, NULL);
	pthread_mutex_init(&L->mu, NULL);
	pthread_cond_init(&L->cv, NULL);
	L->resident = -1;
	L->batch = c->batch > 0 ? c->batch : BATCH_DEFAULT;
	L->max_seqs = c->max_seqs;
	if (!(L->path = strdup(c->model))) {
		st = cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
		goto fail;
	}
	if ((st = open_model(L, c->model, err)))
		goto fail;
	L->ctx = c->ctx ? c->ctx : L->m->cfg.ctx_len < CTX_CAP ? L->m->cfg.ctx_len : CTX_CAP;
	if (L->ctx < 2) {
		st = cr_errf(err, CR_EINPUT, "builtin generator: %s: context of %d tokens",
			     c->model, L->ctx);
		goto fail;
	}
	n_vocab = L->m->cfg.n_vocab;
	L->logits = malloc((size_t)n_vocab * sizeof *L->logits);
	L->s0 = malloc((size_t)L->ctx * sizeof *L->s0);
	L->outs = calloc((size_t)L->batch, sizeof *L->outs);
	L->convs = calloc((size_t)(L->max_seqs ? L->max_seqs : 1), sizeof *L->convs);
	if (!L->logits || !L->s0 || !L->outs || !L->convs) {
		st = cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
		goto fail;
	}
	for (int i = 0; i < L->max_seqs; i++)
		if (!(L->convs[i].ids = malloc((size_t)L->ctx * sizeof *L->convs[i].ids))) {
			st = cr_errf(err, CR_ENOMEM, "builtin generator: out of memory");
			goto fail;
		}
	st = dec_state_new_seqs(L->m, L->ctx, L->batch > PREFILL_CHUNK ? L->batch : PREFILL_CHUNK,
				L->batch + L->max_seqs, c->threads, &L->s, err);
	if (st)
		goto fail;
	*g = (struct gen_generator){
		.kind = "builtin", .ctx = L, .max_inflight = 1, .complete = local_complete,
		.end_conv = local_end_conv, .pause = local_pause, .describe = local_describe,
		.release = local_release,
	};
	return CR_OK;
fail:
	local_release(L);
	return st;
}
