/* dec_engine.c — the serving engine of dec_engine.h: the scheduler, the
 * sequences' block tables and their prefix-cache hashes, sampling, and the
 * choice of backend.
 *
 * A sequence is a token list (a prompt, then the tokens drawn after it) of
 * which the first n_computed have K/V in its blocks. Prefill and decode are
 * one thing: computing toks[n_computed, n_computed + c); decode is c = 1
 * with one token pending. A request's prompt is computed once, by a
 * "leader" sequence; when its last token's logits come back the leader is
 * forked into the request's n samples, which take its blocks (one more
 * reference each) and draw their first tokens from those logits.
 *
 * Each step, oldest sequence first:
 *   1. every active sequence with one pending token gets it computed (a
 *      block for it, taken from the newest sequence if none is free:
 *      preemption; the partial block of a fork is copied before the first
 *      write if another sequence still holds it);
 *   2. the rest of max_batch_tokens goes to prefill: active sequences with
 *      more pending, then waiting ones admitted in order while fewer than
 *      max_seqs are active and blocks are free (a sequence without blocks
 *      first takes what the prefix cache has of its tokens);
 *   3. the step runs; logits come back for each sequence whose pending
 *      tokens are now all computed; full blocks are published; samples that
 *      end give their blocks back.
 * A preempted sequence keeps its tokens and recomputes them when admitted
 * again; its stream and its draws are unchanged, so are its tokens. */
#include "decode/engine/dec_engine.h"
#include "decode/be/dec_be.h"
#include "decode/engine/dec_gen.h"
#include "decode/engine/dec_kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SQ_WAIT, SQ_ACTIVE, SQ_DONE };

struct group {
	struct dec_req *r;
	int32_t *prompt;  /* [n_prompt] */
	int counted;      /* prefill_tokens set (first admission) */
	int max_tok;      /* tokens drawn by its most advanced sample (on_token) */
	int refs;         /* sequences pointing at it: freed at 0 */
	int64_t stamp;    /* the step its progress was last reported */
	double t_admit, t_first;
};

struct seq {
	int64_t id;       /* place in line (requests in arrival order, a request's samples
	                     after its leader): the last is preempted first */
	struct group *g;
	int sample;       /* -1: the request's prompt (leader) */
	int state;
	int32_t *toks;    /* [cap] the prompt, then drawn tokens */
	int n_toks, cap, n_computed;
	int32_t *blocks;  /* [max_blocks] */
	uint64_t *hashes; /* [max_blocks] chain hashes of the published prefix */
	int n_blk, n_hashed;
	struct dec_gen_sample gs;
	double t_first;
	int step_n, step_row, step_out; /* this step: tokens, block-table row, first logits row (-1) */
	int step_k;       /* this step: draft tokens checked after the pending one */
	int step_tok0;    /* this step: index of its first token in the step */
	int32_t *draft;   /* [draft_tokens] proposed tokens */
	int n_dcomp;      /* draft model: positions with the draft's K/V (<= n_computed + k) */
	int slot;         /* draft model: this step's row of qrows */
	struct dec_rng drng; /* draft model: its draws' stream */
};

struct dec_engine {
	const struct dec_model *m;
	struct dec_engine_cfg cfg;
	struct dec_be *be;
	struct dec_graph graph;
	struct dec_kv *kv;
	int bs, max_blocks, n_active;
	struct seq **seqs; /* ascending id */
	int n_seqs, cap_seqs;
	int64_t next_id;
	/* a step */
	int32_t *tok, *pos, *row, *out, *btab;
	struct seq **rows;
	float *logits;     /* [max_seqs, n_vocab] host (host_sample) */
	struct dec_sampler smp;
	int host_sample;   /* draws on the host (cfg, or speculative decoding) */
	struct dec_draw *draws; /* a step's draws by the backend (host_sample off) */
	struct pend {
		struct seq *s;       /* whose draw */
		struct dec_rng keep; /* its stream before the draw's uniform */
	} *pend;
	int n_draws, cap_draws;
	/* the draft model (cfg.draft_model): its backend over the same block ids */
	struct dec_be *dbe;
	struct dec_graph dgraph;
	int32_t *dtok, *dpos, *drow, *dout, *dbtab;
	float *dlogits;    /* [max_seqs, n_vocab] a draft pass's logits */
	float *qrows;      /* [max_seqs, draft_tokens, n_vocab] the draft's logits of each proposal */
	float *qdense;     /* [n_vocab] a draft distribution, dense */
	struct dec_sampler dsmp;
	struct dec_engine_stats stats;
	const char *device;
	char note[512];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- sequences ---- */

static void seq_free(struct seq *s)
{
	if (!s)
		return;
	if (s->g && --s->g->refs == 0) {
		free(s->g->prompt);
		free(s->g);
	}
	free(s->toks);
	free(s->draft);
	free(s->blocks);
	free(s->hashes);
	free(s->gs.tb.p);
	free(s);
}

/* A new sequence: appended (the newest), or for a sample right after its
 * leader `after`, whose place in line it takes. */
static enum cr_status seq_new(struct dec_engine *e, struct group *g, int sample, int cap,
			      const struct seq *after, struct seq **out, struct cr_err *err)
{
	int at;

	struct seq *s = calloc(1, sizeof *s);
	struct seq **ns;

	*out = NULL;
	if (!s)
		return cr_errf(err, CR_ENOMEM, "engine: out of memory");
	s->sample = sample;
	s->cap = cap;
	s->toks = malloc((size_t)cap * sizeof *s->toks);
	s->blocks = malloc((size_t)e->max_blocks * sizeof *s->blocks);
	s->hashes = malloc((size_t)e->max_blocks * sizeof *s->hashes);
	s->draft = malloc((size_t)(e->cfg.draft_tokens + 1) * sizeof *s->draft);
	if (e->n_seqs == e->cap_seqs) {
		int nc = e->cap_seqs ? 2 * e->cap_seqs : 64;

		if ((ns = realloc(e->seqs, (size_t)nc * sizeof *ns))) {
			e->seqs = ns;
			e->cap_seqs = nc;
		}
	}
	if (!s->toks || !s->blocks || !s->hashes || !s->draft || e->n_seqs == e->cap_seqs) {
		seq_free(s);
		return cr_errf(err, CR_ENOMEM, "engine: out of memory");
	}
	s->g = g;
	g->refs++;
	s->state = SQ_WAIT;
	s->step_out = -1;
	at = e->n_seqs;
	if (after) {
		/* samples keep their request's place: ids lead + 1 + i, after any
		 * sibling already there */
		s->id = after->id + 1 + sample;
		for (at = 0; at < e->n_seqs && e->seqs[at]->id <= s->id; at++)
			;
		memmove(e->seqs + at + 1, e->seqs + at, (size_t)(e->n_seqs - at) * sizeof *e->seqs);
	} else {
		s->id = e->next_id;
		e->next_id += (int64_t)1 << 21; /* room for a request's samples (n <= 10^6) */
	}
	e->seqs[at] = s;
	e->n_seqs++;
	*out = s;
	return CR_OK;
}

static void release_blocks(struct dec_engine *e, struct seq *s)
{
	for (int j = 0; j < s->n_blk; j++)
		dec_kv_unref(e->kv, s->blocks[j]);
	s->n_blk = s->n_hashed = 0;
}

/* A block copied in the target's cache and the draft model's. */
static enum cr_status kv_copy(struct dec_engine *e, int src, int dst, struct cr_err *err)
{
	enum cr_status st = e->be->ops->kv_copy(e->be, src, dst, err);

	if (!st && e->dbe)
		st = e->dbe->ops->kv_copy(e->dbe, src, dst, err);
	return st;
}

/* Positions whose K/V both models have (the draft's may lag the target's). */
static int both_computed(const struct dec_engine *e, const struct seq *s)
{
	return e->dbe && s->n_dcomp < s->n_computed ? s->n_dcomp : s->n_computed;
}

static void set_state(struct dec_engine *e, struct seq *s, int state)
{
	e->n_active += (state == SQ_ACTIVE) - (s->state == SQ_ACTIVE);
	s->state = state;
}

/* Before s gives its blocks back: its unfilled last block into the cache. */
static void keep_partial(struct dec_engine *e, struct seq *s)
{
	int n = both_computed(e, s) % e->bs, j = both_computed(e, s) / e->bs;

	if (n && j < s->n_blk && s->n_hashed == j)
		dec_kv_publish_partial(e->kv, s->blocks[j], j ? s->hashes[j - 1] : 0,
				       s->toks + (size_t)j * e->bs, n);
}

/* Gives s's blocks back; s will recompute its tokens when admitted again. */
static void preempt(struct dec_engine *e, struct seq *s)
{
	keep_partial(e, s);
	release_blocks(e, s);
	s->n_computed = s->n_dcomp = 0;
	set_state(e, s, SQ_WAIT);
	e->stats.preemptions++;
}

/* The newest sequence other than s (and newer than it when `newer`)
 * holding blocks, or NULL. */
static struct seq *newest_holder(struct dec_engine *e, const struct seq *s, int newer)
{
	for (int i = e->n_seqs - 1; i >= 0; i--) {
		struct seq *v = e->seqs[i];

		if (newer && v->id <= s->id)
			break;
		if (v != s && v->n_blk && v->state != SQ_DONE && v->step_n == 0)
			return v;
	}
	return NULL;
}

/* A free block for s; with may_preempt, newer sequences give theirs back
 * until one is free. -1 when none. */
static int get_block(struct dec_engine *e, struct seq *s, int may_preempt)
{
	int b;
	struct seq *v;

	while ((b = dec_kv_alloc(e->kv)) < 0) {
		if (!may_preempt || !(v = newest_holder(e, s, 1)))
			return -1;
		preempt(e, v);
	}
	return b;
}

/* Blocks for s's next c tokens: the number of them that now have one
 * (0..c), after copying a shared partial block. */
static int ensure(struct dec_engine *e, struct seq *s, int c, int may_preempt, enum cr_status *st,
		  struct cr_err *err)
{
	int j = s->n_computed / e->bs, last = (s->n_computed + c - 1) / e->bs, have;

	*st = CR_OK;
	if (s->n_computed % e->bs && dec_kv_refs(e->kv, s->blocks[j]) > 1) {
		int b = get_block(e, s, may_preempt);

		if (b < 0)
			return 0;
		if ((*st = kv_copy(e, s->blocks[j], b, err))) {
			dec_kv_unref(e->kv, b);
			return 0;
		}
		dec_kv_unref(e->kv, s->blocks[j]);
		s->blocks[j] = b;
		e->stats.cow_copies++;
	}
	while (s->n_blk <= last) {
		int b = get_block(e, s, may_preempt);

		if (b < 0)
			break;
		s->blocks[s->n_blk++] = b;
	}
	have = s->n_blk * e->bs - s->n_computed;
	return have < c ? (have > 0 ? have : 0) : c;
}

/* A sequence without blocks takes what the prefix cache has of its tokens
 * (never the last one: its logits are needed): the full blocks, then a copy
 * of the partial block that matches most of what follows. */
static enum cr_status take_cached(struct dec_engine *e, struct seq *s, struct cr_err *err)
{
	uint64_t parent = 0;
	int limit = s->n_toks - 1, m = 0, part, b;
	enum cr_status st = CR_OK;

	while ((s->n_blk + 1) * e->bs <= limit) {
		const int32_t *t = s->toks + (size_t)s->n_blk * e->bs;
		uint64_t h = dec_kv_hash(parent, t, e->bs);

		if ((b = dec_kv_lookup(e->kv, h, parent, t)) < 0)
			break;
		s->blocks[s->n_blk] = b;
		s->hashes[s->n_blk++] = h;
		parent = h;
	}
	s->n_hashed = s->n_blk;
	s->n_computed = s->n_blk * e->bs;
	if (limit > s->n_computed &&
	    (part = dec_kv_lookup_partial(e->kv, parent, s->toks + s->n_computed,
					  limit - s->n_computed < e->bs ? limit - s->n_computed : e->bs, &m)) >= 0) {
		if ((b = dec_kv_alloc(e->kv)) >= 0) {
			if ((st = kv_copy(e, part, b, err)))
				dec_kv_unref(e->kv, b);
			else {
				s->blocks[s->n_blk++] = b;
				s->n_computed += m;
			}
		}
		dec_kv_unref(e->kv, part);
	}
	s->n_dcomp = s->n_computed;
	e->stats.cached_tokens += s->n_computed;
	if (s->sample < 0 && !s->g->counted) {
		s->g->r->prefill_tokens = s->g->r->n_prompt - s->n_computed;
		s->g->counted = 1;
	}
	return st;
}


static void publish(struct dec_engine *e, struct seq *s)
{
	while ((s->n_hashed + 1) * e->bs <= both_computed(e, s)) {
		const int32_t *t = s->toks + (size_t)s->n_hashed * e->bs;
		uint64_t parent = s->n_hashed ? s->hashes[s->n_hashed - 1] : 0;
		uint64_t h = dec_kv_hash(parent, t, e->bs);

		dec_kv_publish(e->kv, s->blocks[s->n_hashed], h, parent, t);
		s->hashes[s->n_hashed++] = h;
	}
}

/* ---- samples ---- */

static void finish(struct dec_engine *e, struct seq *s)
{
	struct dec_req *r = s->g->r;
	struct dec_gen_out *o = s->gs.o;
	double t = now_s();

	o->text = s->gs.tb.p;
	o->text_len = s->gs.tb.n;
	s->gs.tb.p = NULL;
	o->prefill_s = s->g->t_first - s->g->t_admit;
	o->decode_s = t - s->g->t_first;
	keep_partial(e, s);
	release_blocks(e, s);
	set_state(e, s, SQ_DONE);
	r->n_done++;
	if (r->on_sample)
		r->on_sample(r->ctx, r, s->sample);
}

/* s takes token id (drawn from logits, or a speculative step's choice):
 * recorded, appended; ends s when done or out of context. */
static enum cr_status record(struct dec_engine *e, struct seq *s, const float *logits, int32_t id,
			     struct cr_err *err)
{
	struct dec_req *r = s->g->r;
	enum cr_status st;

	if ((st = dec_gen_record(&s->gs, r->tok, logits, e->m->cfg.n_vocab, &r->p, id, err)))
		return st;
	s->toks[s->n_toks++] = id;
	if (s->gs.o->n_tokens > s->g->max_tok)
		s->g->max_tok = s->gs.o->n_tokens;
	if (!s->gs.done && s->n_toks > e->cfg.max_ctx) {
		s->gs.o->finish = "context";
		s->gs.done = 1;
	}
	if (s->gs.done)
		finish(e, s);
	return CR_OK;
}

/* s draws its next token from logits (its stream). */
static enum cr_status draw(struct dec_engine *e, struct seq *s, const float *logits, struct cr_err *err)
{
	e->smp.cfg = s->g->r->p.samp;
	return record(e, s, logits, dec_sample(&e->smp, logits, &s->gs.rng), err);
}

/* s will draw its next token from logits row `row` by the backend's sample
 * op: the draw is queued with its uniform (taken from s's stream now, put
 * back by take_draws when not needed) and where its top logprobs go. */
static enum cr_status queue_draw(struct dec_engine *e, struct seq *s, int row, struct cr_err *err)
{
	const struct dec_gen_params *p = &s->g->r->p;
	struct dec_draw *d;

	if (e->n_draws == e->cap_draws) {
		int cap = e->cap_draws ? 2 * e->cap_draws : 64;
		struct dec_draw *nd = realloc(e->draws, (size_t)cap * sizeof *nd);
		struct pend *np;

		if (nd)
			e->draws = nd;
		if (!nd || !(np = realloc(e->pend, (size_t)cap * sizeof *np)))
			return cr_errf(err, CR_ENOMEM, "engine: out of memory");
		e->pend = np;
		e->cap_draws = cap;
	}
	d = &e->draws[e->n_draws];
	e->pend[e->n_draws++] = (struct pend){ s, s->gs.rng };
	memset(d, 0, sizeof *d);
	d->row = row;
	d->samp = p->samp;
	d->u53 = dec_rng_next(&s->gs.rng) >> 11;
	d->n_logprobs = p->top_logprobs;
	d->want_lp = p->logprobs;
	if (p->top_logprobs) {
		d->top_ids = s->gs.o->top_ids + (size_t)s->gs.o->n_tokens * p->top_logprobs;
		d->top_lp = s->gs.o->top_lp + (size_t)s->gs.o->n_tokens * p->top_logprobs;
	}
	return CR_OK;
}

/* The queued draws, done: each sequence takes its token and its logprob
 * (its stream given back the uniform when the draw did not use it). */
static enum cr_status take_draws(struct dec_engine *e, struct cr_err *err)
{
	enum cr_status st = dec_graph_sample(&e->graph, e->draws, e->n_draws, err);

	for (int i = 0; i < e->n_draws && !st; i++) {
		struct seq *s = e->pend[i].s;

		if (e->draws[i].n_kept <= 1)
			s->gs.rng = e->pend[i].keep;
		if (e->draws[i].want_lp)
			s->gs.o->token_lp[s->gs.o->n_tokens] = e->draws[i].lp;
		st = record(e, s, NULL, e->draws[i].id, err);
	}
	e->n_draws = 0;
	return st;
}

/* s's next token: drawn now from host logits, or queued for the backend
 * (logits NULL: row `row` of the step's). */
static enum cr_status draw_or_queue(struct dec_engine *e, struct seq *s, const float *logits, int row,
				   struct cr_err *err)
{
	return logits ? draw(e, s, logits, err) : queue_draw(e, s, row, err);
}

/* The leader's prompt is computed: its samples take its blocks and draw
 * their first tokens from logits (host), or from the step's row `row`. */
static enum cr_status fork_samples(struct dec_engine *e, struct seq *lead, const float *logits, int row,
				   struct cr_err *err)
{
	struct group *g = lead->g;
	struct dec_req *r = g->r;
	enum cr_status st = CR_OK;

	g->t_first = now_s();
	for (int i = 0; i < r->n && !st; i++) {
		struct seq *s;

		if ((st = seq_new(e, g, i, r->n_prompt + (r->p.max_tokens > 0 ? r->p.max_tokens : 0) + 1, lead,
				  &s, err)))
			break;
		memcpy(s->toks, g->prompt, (size_t)r->n_prompt * sizeof *s->toks);
		s->n_toks = s->n_computed = r->n_prompt;
		for (int j = 0; j < lead->n_blk; j++) {
			dec_kv_ref(e->kv, lead->blocks[j]);
			s->blocks[j] = lead->blocks[j];
			s->hashes[j] = lead->hashes[j];
		}
		s->n_blk = lead->n_blk;
		s->n_hashed = lead->n_hashed;
		s->n_dcomp = lead->n_dcomp;
		dec_rng_seed(&s->drng, r->p.seed ^ 0xd4af7e5eedull, r->p.task, r->p.sample + (uint64_t)i);
		e->stats.shared_blocks += lead->n_blk;
		/* the first sample takes the leader's place among the active */
		if (i == 0 && lead->state == SQ_ACTIVE)
			set_state(e, s, SQ_ACTIVE);
		if ((st = dec_gen_sample_init(&s->gs, &r->outs[i], &r->p, r->p.sample + (uint64_t)i, err)))
			break;
		st = draw_or_queue(e, s, logits, row, err);
	}
	release_blocks(e, lead);
	set_state(e, lead, SQ_DONE);
	return st;
}

/* ---- the step ---- */

/* s's next c tokens into the step; logits come back for the last of them
 * when that completes s's pending tokens, or for each of the 1 + k tokens of
 * a speculative check (k drafts after the pending token). */
static void schedule(struct dec_engine *e, struct seq *s, int c, int k, int *nb, int *n_rows, int *n_out)
{
	int r = (*n_rows)++;

	s->step_tok0 = *nb;
	for (int t = 0; t < c; t++) {
		e->tok[*nb] = t ? (k ? s->draft[t - 1] : s->toks[s->n_computed + t]) : s->toks[s->n_computed];
		e->pos[*nb] = s->n_computed + t;
		e->row[(*nb)++] = r;
		if (k) {
			if (!t)
				s->step_out = *n_out;
			e->out[(*n_out)++] = *nb - 1;
		}
	}
	for (int j = 0; j < e->max_blocks; j++)
		e->btab[(size_t)r * e->max_blocks + j] = j < s->n_blk ? s->blocks[j] : -1;
	e->rows[r] = s;
	s->step_n = c;
	s->step_k = k;
	s->step_row = r;
	if (!k) {
		s->step_out = -1;
		if (s->n_computed + c == s->n_toks) {
			s->step_out = (*n_out)++;
			e->out[s->step_out] = *nb - 1;
		}
	}
}

/* Prompt lookup (n-gram drafting): the tokens that followed the most recent
 * earlier occurrence of the sequence's last 3 (else 2, else 1) tokens, at
 * most kmax of them. */
static int propose_ngram(const struct seq *s, int kmax)
{
	const int32_t *t = s->toks;
	int n = s->n_toks;

	for (int m = 3; m >= 1; m--) {
		if (n <= m)
			continue;
		for (int j = n - m - 1; j >= 0; j--) {
			int k = 0;

			if (memcmp(t + j, t + n - m, (size_t)m * sizeof *t))
				continue;
			while (k < kmax && j + m + k < n) {
				((struct seq *)s)->draft[k] = t[j + m + k];
				k++;
			}
			return k;
		}
	}
	return 0;
}

static int holders(const struct dec_engine *e)
{
	int n = 0;

	for (int i = 0; i < e->n_seqs; i++)
		n += e->seqs[i]->n_blk > 0 && e->seqs[i]->state != SQ_DONE;
	return n;
}

static enum cr_status too_small(struct dec_engine *e, const struct seq *s, struct cr_err *err)
{
	return cr_errf(err, CR_EUSAGE,
		       "KV cache too small: %d blocks of %d positions (%zu bytes) cannot hold one sequence "
		       "of %d tokens; raise --kv-mem", dec_kv_n_blocks(e->kv), e->bs,
		       (size_t)dec_kv_n_blocks(e->kv) * dec_be_block_bytes(e->m, e->bs), s->n_toks);
}

/* The draft model's passes for this step, its rows already scheduled for
 * the target: pass 1 brings every row's draft K/V up to what the target
 * computes this step (a prefill chunk; a decoder's catch-up and pending
 * token) and gives each checking decoder its first draft; pass j gives the
 * j-th, one token each. The drafts go into the target step's tokens; the
 * draft's logits of each are kept for the acceptance rule. */
static enum cr_status draft_passes(struct dec_engine *e, int n_rows, struct cr_err *err)
{
	size_t nv = (size_t)e->m->cfg.n_vocab;
	int kmax = 0, slot = 0, mb = e->max_blocks;
	enum cr_status st;

	for (int pass = 1; pass == 1 || pass <= kmax; pass++) {
		int nb = 0, n_out = 0, nr = 0;
		struct dec_step ds;

		for (int r = 0; r < n_rows; r++) {
			struct seq *s = e->rows[r];
			int from, end, row = nr;

			if (pass == 1) {
				from = s->n_dcomp;
				end = s->n_computed + (s->step_k ? 1 : s->step_n);
				if (s->step_k) {
					s->slot = slot++;
					kmax = s->step_k > kmax ? s->step_k : kmax;
				}
			} else {
				if (s->step_k < pass)
					continue;
				from = s->n_computed + pass - 1;
				end = from + 1;
			}
			if (from >= end)
				continue;
			nr++;
			for (int t = from; t < end; t++) {
				e->dtok[nb] = pass == 1 ? s->toks[t] : s->draft[pass - 2];
				e->dpos[nb] = t;
				e->drow[nb++] = row;
			}
			memcpy(e->dbtab + (size_t)row * mb, e->btab + (size_t)s->step_row * mb, (size_t)mb * sizeof *e->dbtab);
			if (s->step_k >= pass)
				e->dout[n_out++] = nb - 1;
			s->n_dcomp = end;
		}
		if (!nb)
			continue;
		ds = (struct dec_step){ .nb = nb, .tok = e->dtok, .pos = e->dpos, .seq = e->drow, .n_seq = nr,
					.btab = e->dbtab, .n_out = n_out, .out = e->dout };
		if ((st = dec_graph_step(&e->dgraph, &ds, e->dlogits, err)))
			return st;
		n_out = 0;
		for (int r = 0; r < n_rows; r++) {
			struct seq *s = e->rows[r];
			const float *lg;

			if (s->step_k < pass)
				continue;
			lg = e->dlogits + (size_t)(n_out++) * nv;
			memcpy(e->qrows + ((size_t)s->slot * e->cfg.draft_tokens + (size_t)(pass - 1)) * nv, lg,
			       nv * sizeof *lg);
			e->dsmp.cfg = s->g->r->p.samp;
			s->draft[pass - 1] = dec_sample(&e->dsmp, lg, &s->drng);
			e->tok[s->step_tok0 + pass] = s->draft[pass - 1];
		}
	}
	return CR_OK;
}

/* The draft model's distribution of s's i-th draft, dense in e->qdense
 * (NULL when greedy: the rule needs no q then). */
static const float *draft_q(struct dec_engine *e, const struct seq *s, int i)
{
	size_t nv = (size_t)e->m->cfg.n_vocab;
	int n;

	if (!e->dbe || s->g->r->p.samp.temperature <= 0)
		return NULL;
	e->dsmp.cfg = s->g->r->p.samp;
	n = dec_sampler_dist(&e->dsmp, e->qrows + ((size_t)s->slot * e->cfg.draft_tokens + (size_t)i) * nv);
	memset(e->qdense, 0, nv * sizeof *e->qdense);
	for (int j = 0; j < n; j++)
		e->qdense[e->dsmp.cand[j].id] = e->dsmp.cand[j].p;
	return e->qdense;
}

/* A speculative check came back: logits for the pending token and each of
 * the k drafts. Draft i is accepted by dec_spec_accept against the target's
 * logits before it; the first rejection's replacement, or after k
 * acceptances one more token drawn from the last logits, ends the check.
 * K/V written for rejected drafts lie past n_computed and are rewritten
 * before they are read. */
static enum cr_status check_drafts(struct dec_engine *e, struct seq *s, struct cr_err *err)
{
	struct dec_req *r = s->g->r;
	size_t nv = (size_t)e->m->cfg.n_vocab;
	enum cr_status st = CR_OK;
	int i;

	e->stats.decode_tokens += 1;
	s->n_computed += 1; /* the pending token's K/V */
	e->smp.cfg = r->p.samp;
	for (i = 0; i < s->step_k; i++) {
		const float *lg = e->logits + (s->step_out + i) * nv;
		int acc;
		int32_t id = dec_spec_accept(&e->smp, lg, s->draft[i], draft_q(e, s, i), &s->gs.rng, &acc);

		if (acc) {
			e->stats.draft_accepted++;
			s->n_computed++; /* the draft's K/V stand */
		}
		if ((st = record(e, s, lg, id, err)) || s->state == SQ_DONE || !acc)
			break;
	}
	if (!st && i == s->step_k && s->state != SQ_DONE)
		st = draw(e, s, e->logits + (s->step_out + s->step_k) * nv, err);
	if (s->n_dcomp > s->n_computed) /* the draft's K/V of rejected drafts */
		s->n_dcomp = s->n_computed;
	if (s->state != SQ_DONE)
		publish(e, s);
	return st;
}

/* Tokens s has still to prefill: a leader its whole prompt (the last one
 * gives the logits); a sample up to, not including, its pending token,
 * which a decode step computes, drafts and all, so that a sample recomputed
 * after preemption draws exactly as if it had never been preempted. */
static int prefill_left(const struct seq *s)
{
	return (s->sample >= 0 ? s->n_toks - 1 : s->n_toks) - s->n_computed;
}

static int is_decoder(const struct seq *s)
{
	return s->sample >= 0 && s->n_computed == s->n_toks - 1;
}

/* One decode for sample s: its pending token and k drafts, k depending on
 * s alone (never on the batch or the memory: a sampled sequence's draws
 * must not either). Not scheduled (*done 0) when the budget is short; s
 * preempted when blocks are. */
static enum cr_status decode_one(struct dec_engine *e, struct seq *s, int *budget, int *nb, int *n_rows,
				 int *n_out, int *done, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	int k = 0, kmax = e->cfg.draft_tokens, c;

	*done = 0;
	if (kmax) {
		int left = s->gs.cap - s->gs.o->n_tokens - 1, room = e->cfg.max_ctx - s->n_toks - 1;

		kmax = kmax < left ? kmax : left;
		kmax = kmax < room ? kmax : room;
		if (kmax > 0)
			k = e->dbe ? kmax : propose_ngram(s, kmax); /* the model's drafts come later */
	}
	if (1 + k > *budget)
		return CR_OK;
	if ((c = ensure(e, s, 1 + k, 1, &st, err)) < 1 + k) {
		if (st)
			return st;
		if (holders(e) < 2)
			return too_small(e, s, err);
		preempt(e, s);
		return CR_OK;
	}
	schedule(e, s, c, k, nb, n_rows, n_out);
	*budget -= c;
	*done = 1;
	if (k) {
		e->stats.draft_proposed += k;
		e->stats.spec_checks++;
	}
	return CR_OK;
}

static enum cr_status step(struct dec_engine *e, struct cr_err *err)
{
	int budget = e->cfg.max_batch_tokens, nb = 0, n_rows = 0, n_out = 0, done;
	enum cr_status st = CR_OK;
	struct dec_step ds;
	const float *lg;

	for (int i = 0; i < e->n_seqs; i++)
		e->seqs[i]->step_n = 0;
	/* 1. decode: the pending token of each active sample (with its drafts,
	 * checked in the same pass); the budget holds them all */
	for (int i = 0; i < e->n_seqs; i++) {
		struct seq *s = e->seqs[i];

		if (s->state == SQ_ACTIVE && is_decoder(s) &&
		    (st = decode_one(e, s, &budget, &nb, &n_rows, &n_out, &done, err)))
			return st;
	}
	/* 2. prefill: active sequences with more to compute, then the waiting */
	for (int i = 0; i < e->n_seqs && budget > 0; i++) {
		struct seq *s = e->seqs[i];
		int c, left = prefill_left(s);

		if (s->state != SQ_ACTIVE || s->step_n || left < 1)
			continue;
		c = ensure(e, s, left < budget ? left : budget, 0, &st, err);
		if (st)
			return st;
		if (c) {
			schedule(e, s, c, 0, &nb, &n_rows, &n_out);
			budget -= c;
		}
	}
	for (int i = 0; i < e->n_seqs && budget > 0 && e->n_active < e->cfg.max_seqs; i++) {
		struct seq *s = e->seqs[i];
		int c, left;

		if (s->state != SQ_WAIT)
			continue;
		if (!s->n_blk && !s->n_computed && (st = take_cached(e, s, err)))
			return st;
		if (s->sample < 0 && !s->g->t_admit)
			s->g->t_admit = now_s();
		if (is_decoder(s)) {
			set_state(e, s, SQ_ACTIVE);
			if ((st = decode_one(e, s, &budget, &nb, &n_rows, &n_out, &done, err)))
				return st;
			if (!done && s->state == SQ_ACTIVE)
				set_state(e, s, SQ_WAIT); /* its turn next step */
			if (!done)
				break; /* first come, first served */
			continue;
		}
		left = prefill_left(s);
		c = ensure(e, s, left < budget ? left : budget, 0, &st, err);
		if (st)
			return st;
		if (!c)
			break; /* first come, first served: no overtaking for memory */
		set_state(e, s, SQ_ACTIVE);
		schedule(e, s, c, 0, &nb, &n_rows, &n_out);
		budget -= c;
	}
	if (!nb) {
		/* nothing could run for want of blocks: the newest holder other
		 * than the oldest sequence yields (if none, one sequence does not fit) */
		struct seq *old = NULL, *v;

		for (int i = 0; i < e->n_seqs && !old; i++)
			if (e->seqs[i]->state != SQ_DONE)
				old = e->seqs[i];
		if (!old)
			return CR_OK;
		if (!(v = newest_holder(e, old, 0)))
			return too_small(e, old, err);
		preempt(e, v);
		return CR_OK;
	}
	if (e->dbe && (st = draft_passes(e, n_rows, err)))
		return st;
	ds = (struct dec_step){ .nb = nb, .tok = e->tok, .pos = e->pos, .seq = e->row, .n_seq = n_rows,
				.btab = e->btab, .n_out = n_out, .out = e->out };
	if ((st = e->host_sample ? dec_graph_step(&e->graph, &ds, e->logits, err)
				 : dec_graph_forward(&e->graph, &ds, err)))
		return st;
	e->stats.steps++;
	/* 3. what came back */
	for (int r = 0; r < n_rows && !st; r++) {
		struct seq *s = e->rows[r];

		if (s->step_k) {
			st = check_drafts(e, s, err);
			continue;
		}
		if (is_decoder(s))
			e->stats.decode_tokens++;
		else
			e->stats.prefill_tokens += s->step_n;
		s->n_computed += s->step_n;
		publish(e, s);
		if (s->step_out < 0)
			continue;
		lg = e->host_sample ? e->logits + (size_t)s->step_out * e->m->cfg.n_vocab : NULL;
		if (s->sample < 0)
			st = fork_samples(e, s, lg, s->step_out, err);
		else
			st = draw_or_queue(e, s, lg, s->step_out, err);
	}
	if (!st && !e->host_sample)
		st = take_draws(e, err);
	e->n_draws = 0;
	for (int r = 0; r < n_rows; r++)
		e->rows[r]->step_n = 0;
	return st;
}

/* Drops finished sequences from the list (a group goes with its last). */
static void sweep(struct dec_engine *e)
{
	int k = 0;

	for (int i = 0; i < e->n_seqs; i++) {
		if (e->seqs[i]->state == SQ_DONE)
			seq_free(e->seqs[i]);
		else
			e->seqs[k++] = e->seqs[i];
	}
	e->n_seqs = k;
}

/* on_token once a step for each request with a sample drawing. */
static void progress(struct dec_engine *e)
{
	for (int i = 0; i < e->n_seqs; i++) {
		struct group *g = e->seqs[i]->g;

		if (g->r->p.on_token && g->max_tok && g->stamp != e->stats.steps) {
			g->stamp = e->stats.steps;
			g->r->p.on_token(g->r->p.ctx, g->max_tok);
		}
	}
}

/* After an error: every unfinished sample dropped, its outputs released. */
static void drop_all(struct dec_engine *e)
{
	for (int i = 0; i < e->n_seqs; i++) {
		struct seq *s = e->seqs[i];

		release_blocks(e, s);
		if (s->sample >= 0 && s->state != SQ_DONE && s->gs.o)
			dec_gen_out_release(s->gs.o);
		if (s->state != SQ_DONE)
			set_state(e, s, SQ_DONE);
	}
	sweep(e);
}

void dec_engine_cancel(struct dec_engine *e, struct dec_req *r)
{
	double t = now_s();
	int hit = 0, leader = 0;

	for (int i = 0; i < e->n_seqs; i++) {
		struct seq *s = e->seqs[i];

		if (s->g->r != r || s->state == SQ_DONE)
			continue;
		hit = 1;
		keep_partial(e, s);
		release_blocks(e, s);
		set_state(e, s, SQ_DONE);
		if (s->sample < 0) {
			leader = 1; /* no sample forked yet: none has an out in use */
			continue;
		}
		/* its text goes with the sequence; the tokens stay in the out */
		s->gs.o->finish = "cancelled";
		s->gs.o->prefill_s = s->g->t_first - s->g->t_admit;
		s->gs.o->decode_s = t - s->g->t_first;
		r->n_done++;
	}
	if (!hit)
		return;
	if (leader) {
		for (int i = 0; i < r->n; i++)
			r->outs[i].finish = "cancelled";
		r->n_done = r->n;
	}
	sweep(e);
}

enum cr_status dec_engine_step(struct dec_engine *e, struct cr_err *err)
{
	enum cr_status st;

	if (!e->n_seqs)
		return CR_OK;
	if (e->cfg.on_step)
		e->cfg.on_step(e->cfg.ctx);
	st = step(e, err);
	progress(e);
	sweep(e);
	if (st)
		drop_all(e);
	return st;
}

int dec_engine_busy(const struct dec_engine *e)
{
	return e->n_seqs > 0;
}

enum cr_status dec_engine_run(struct dec_engine *e, struct cr_err *err)
{
	enum cr_status st = CR_OK;

	while (e->n_seqs && !st)
		st = dec_engine_step(e, err);
	return st;
}

enum cr_status dec_engine_submit(struct dec_engine *e, struct dec_req *r, struct cr_err *err)
{
	struct group *g;
	struct seq *s;
	enum cr_status st;

	r->prefill_tokens = 0;
	r->n_done = 0;
	if (r->n < 1 || r->n >= (1 << 21) - 1 || r->n_prompt < 1 || !r->prompt || !r->outs)
		return cr_errf(err, CR_EUSAGE,
			       "engine: a request needs a prompt and 1..2097150 samples (n %d, prompt %d)",
			       r->n, r->n_prompt);
	if (r->n_prompt >= e->cfg.max_ctx)
		return cr_errf(err, CR_EUSAGE, "prompt of %d tokens: need 1..%d", r->n_prompt,
			       e->cfg.max_ctx - 1);
	for (int i = 0; i < r->n_prompt; i++)
		if (r->prompt[i] < 0 || r->prompt[i] >= e->m->cfg.n_vocab)
			return cr_errf(err, CR_EINPUT, "token id %d out of range [0, %d)", r->prompt[i],
				       e->m->cfg.n_vocab);
	for (int i = 0; i < r->n; i++)
		memset(&r->outs[i], 0, sizeof r->outs[i]);
	if (r->p.max_tokens <= 0) { /* nothing to generate: nothing to compute */
		for (int i = 0; i < r->n; i++) {
			struct dec_gen_sample gs;

			if ((st = dec_gen_sample_init(&gs, &r->outs[i], &r->p, 0, err)))
				return st;
			r->outs[i].text = gs.tb.p;
			r->n_done++;
			if (r->on_sample)
				r->on_sample(r->ctx, r, i);
		}
		return CR_OK;
	}
	g = calloc(1, sizeof *g);
	if (!g || !(g->prompt = malloc((size_t)r->n_prompt * sizeof *g->prompt))) {
		free(g);
		return cr_errf(err, CR_ENOMEM, "engine: out of memory");
	}
	g->r = r;
	memcpy(g->prompt, r->prompt, (size_t)r->n_prompt * sizeof *g->prompt);
	if ((st = seq_new(e, g, -1, r->n_prompt, NULL, &s, err))) {
		free(g->prompt);
		free(g);
		return st;
	}
	memcpy(s->toks, g->prompt, (size_t)r->n_prompt * sizeof *s->toks);
	s->n_toks = r->n_prompt;
	return CR_OK;
}

/* ---- setup ---- */

/* MemAvailable from /proc/meminfo in bytes, 0 when unknown. */
static size_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (size_t)kb * 1024;
}

enum cr_status dec_engine_new(const struct dec_model *m, const struct dec_engine_cfg *cfg,
			      struct dec_engine **out, struct cr_err *err)
{
	struct dec_engine *e = calloc(1, sizeof *e);
	struct dec_be_cfg bc = { 0 };
	size_t bb, mb;
	enum cr_status st = CR_OK;
	int n_blocks;

	*out = NULL;
	if (!e)
		return cr_errf(err, CR_ENOMEM, "engine: out of memory");
	e->m = m;
	e->cfg = *cfg;
	if (!e->cfg.max_seqs)
		e->cfg.max_seqs = 8;
	if (e->cfg.draft_model && !e->cfg.draft_tokens)
		e->cfg.draft_tokens = 4;
	if (!e->cfg.max_batch_tokens) {
		e->cfg.max_batch_tokens = 256;
		/* every decoding sequence's token and drafts fit one step */
		if (e->cfg.max_batch_tokens < e->cfg.max_seqs * (e->cfg.draft_tokens + 1))
			e->cfg.max_batch_tokens = e->cfg.max_seqs * (e->cfg.draft_tokens + 1);
	}
	if (!e->cfg.block_size)
		e->cfg.block_size = 16;
	if (e->cfg.max_ctx < 2 || e->cfg.max_seqs < 1 || e->cfg.draft_tokens < 0 || e->cfg.draft_tokens > 64 ||
	    e->cfg.max_batch_tokens < e->cfg.max_seqs * (e->cfg.draft_tokens + 1) ||
	    e->cfg.block_size < 1 || (e->cfg.block_size & (e->cfg.block_size - 1))) {
		st = cr_errf(err, CR_EUSAGE,
			     "engine: context %d, %d sequences, %d drafts, %d batch tokens (at least "
			     "sequences x (1 + drafts)), block size %d (a power of two)", e->cfg.max_ctx,
			     e->cfg.max_seqs, e->cfg.draft_tokens, e->cfg.max_batch_tokens, e->cfg.block_size);
		goto out;
	}
	if ((st = dec_model_check_ctx(m, e->cfg.max_ctx, err)) ||
	    (e->cfg.draft_model && (st = dec_model_check_ctx(e->cfg.draft_model, e->cfg.max_ctx, err))))
		goto out;
	e->bs = e->cfg.block_size;
	bc.max_ctx = e->cfg.max_ctx;
	bc.block_size = e->bs;
	e->max_blocks = dec_be_max_blocks(&bc);
	bb = dec_be_block_bytes(m, e->bs);
	if (e->cfg.draft_model) {
		const struct dec_config *dc = &e->cfg.draft_model->cfg;

		if (dc->n_vocab != m->cfg.n_vocab) {
			st = cr_errf(err, CR_EUSAGE, "the draft model's vocabulary has %d tokens, the model's %d",
				     dc->n_vocab, m->cfg.n_vocab);
			goto out;
		}
		bb += dec_be_block_bytes(e->cfg.draft_model, e->bs); /* both caches use a block id */
	}
	if (e->cfg.kv_mem) {
		if (e->cfg.kv_mem / bb < 1 || e->cfg.kv_mem / bb > (1u << 30)) {
			st = cr_errf(err, CR_EUSAGE,
				     "--kv-mem %zu bytes: a block of %d positions takes %zu bytes (at least one)",
				     e->cfg.kv_mem, e->bs, bb);
			goto out;
		}
		n_blocks = (int)(e->cfg.kv_mem / bb);
	} else {
		size_t want = (size_t)(e->cfg.max_seqs + 1) * e->max_blocks, avail = mem_available() / 4 / bb;

		n_blocks = (int)(avail && avail < want ? avail : want);
		if (n_blocks < 1)
			n_blocks = 1;
	}
	bc.max_tokens = e->cfg.max_batch_tokens;
	bc.max_out = e->cfg.max_seqs * (e->cfg.draft_tokens + 1);
	if (bc.max_out > bc.max_tokens)
		bc.max_out = bc.max_tokens;
	bc.max_seqs = e->cfg.max_seqs;
	bc.n_blocks = n_blocks;
	bc.n_threads = e->cfg.n_threads;
	bc.device = e->cfg.cuda_device;
	if ((st = dec_be_open(m, &bc, e->cfg.device, &e->be, e->note, sizeof e->note, err)))
		goto out;
	e->device = e->be->ops->name;
	e->host_sample = e->cfg.host_sample || e->cfg.draft_tokens > 0 || !e->be->ops->sample;
	if (e->cfg.draft_model) {
		struct dec_be_cfg dcfg = bc;
		size_t nv = (size_t)m->cfg.n_vocab;

		dcfg.max_tokens = bc.max_tokens + bc.max_seqs; /* a step's tokens and each one's catch-up */
		dcfg.max_out = bc.max_seqs;
		if ((st = dec_be_open(e->cfg.draft_model, &dcfg, e->cfg.device == DEC_DEV_AUTO ? DEC_DEV_CPU : e->cfg.device,
				      &e->dbe, NULL, 0, err)))
			goto out;
		if (strcmp(e->dbe->ops->name, e->be->ops->name) && e->cfg.device == DEC_DEV_AUTO) {
			dec_be_free(e->dbe);
			e->dbe = NULL;
			if ((st = dec_be_open(e->cfg.draft_model, &dcfg, !strcmp(e->be->ops->name, "cuda") ? DEC_DEV_CUDA : DEC_DEV_CPU,
					      &e->dbe, NULL, 0, err)))
				goto out;
		}
		if ((st = dec_graph_init(&e->dgraph, e->dbe, err)) ||
		    (st = dec_sampler_init(&e->dsmp, &(struct dec_sampling){ 0 }, m->cfg.n_vocab, err)))
			goto out;
		e->dtok = malloc(((size_t)3 * dcfg.max_tokens + dcfg.max_out + (size_t)dcfg.max_seqs * dec_be_max_blocks(&dcfg)) *
				 sizeof(int32_t));
		e->dlogits = malloc((size_t)dcfg.max_out * nv * sizeof *e->dlogits);
		e->qrows = malloc((size_t)bc.max_seqs * e->cfg.draft_tokens * nv * sizeof *e->qrows);
		e->qdense = malloc(nv * sizeof *e->qdense);
		if (!e->dtok || !e->dlogits || !e->qrows || !e->qdense) {
			st = cr_errf(err, CR_ENOMEM, "engine: out of memory for the draft model");
			goto out;
		}
		e->dpos = e->dtok + dcfg.max_tokens;
		e->drow = e->dpos + dcfg.max_tokens;
		e->dout = e->drow + dcfg.max_tokens;
		e->dbtab = e->dout + dcfg.max_out;
	}
	if ((st = dec_graph_init(&e->graph, e->be, err)) ||
	    (st = dec_kv_new(n_blocks, e->bs, &e->kv, err)) ||
	    (st = dec_sampler_init(&e->smp, &(struct dec_sampling){ 0 }, m->cfg.n_vocab, err)))
		goto out;
	mb = (size_t)e->max_blocks;
	e->tok = malloc(((size_t)4 * bc.max_tokens + bc.max_seqs * (mb + 1)) * sizeof(int32_t));
	e->rows = malloc((size_t)bc.max_seqs * sizeof *e->rows);
	/* host logits only where the host draws */
	e->logits = malloc((size_t)(e->host_sample ? bc.max_out : 1) * m->cfg.n_vocab * sizeof *e->logits);
	if (!e->tok || !e->rows || !e->logits) {
		st = cr_errf(err, CR_ENOMEM, "engine: out of memory");
		goto out;
	}
	e->pos = e->tok + bc.max_tokens;
	e->row = e->pos + bc.max_tokens;
	e->out = e->row + bc.max_tokens;
	e->btab = e->out + bc.max_tokens;
	e->stats.n_blocks = n_blocks;
	e->stats.block_size = e->bs;
	*out = e;
	e = NULL;
out:
	dec_engine_free(e);
	return st;
}

void dec_engine_free(struct dec_engine *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->n_seqs; i++)
		seq_free(e->seqs[i]);
	free(e->seqs);
	dec_be_free(e->be);
	dec_be_free(e->dbe);
	dec_sampler_release(&e->dsmp);
	free(e->dtok);
	free(e->dlogits);
	free(e->qrows);
	free(e->qdense);
	dec_kv_free(e->kv);
	dec_sampler_release(&e->smp);
	free(e->tok);
	free(e->rows);
	free(e->logits);
	free(e->draws);
	free(e->pend);
	free(e);
}

const char *dec_engine_device(const struct dec_engine *e)
{
	return e->device;
}

const char *dec_engine_device_note(const struct dec_engine *e)
{
	return e->note;
}

const struct dec_engine_stats *dec_engine_stats(const struct dec_engine *e)
{
	struct dec_engine_stats *s = (struct dec_engine_stats *)&e->stats;

	s->evictions = dec_kv_stats(e->kv)->evictions;
	s->peak_blocks = dec_kv_stats(e->kv)->peak_used;
	s->free_blocks = dec_kv_n_free(e->kv);
	return s;
}
