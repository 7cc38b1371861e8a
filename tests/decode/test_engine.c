/* test_engine.c — the serving engine (decode/engine/dec_engine.c) and the paged
 * KV bookkeeping (dec_kv.c) on tiny generated models:
 *   - the block pool: references, the free list, the prefix cache's
 *     lookups and LRU eviction;
 *   - continuous batching of requests whose samples end at very different
 *     lengths gives every sample the tokens, text and finish it gets from
 *     the static batch of dec_generate_n (itself equal to one at a time,
 *     test_forward.c), greedy and sampled;
 *   - the same under a KV pool so small that sequences are preempted and
 *     recomputed, and cached blocks evicted;
 *   - prefix sharing: a request's samples hold the prompt's blocks (counted)
 *     and the prompt is computed once; a conversation's next turn and a
 *     repeated prompt compute only what the cache does not hold (counted
 *     exactly);
 *   - errors: a pool that cannot hold one sequence, a prompt too long, a
 *     bad token id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/be/dec_be.h"
#include "decode/engine/dec_engine.h"
#include "decode/engine/dec_kv.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/dec_run.h"
#include "dec_testutil.h"

static void test_kv_pool(void **state)
{
	struct dec_kv *kv;
	struct cr_err e;
	int32_t t1[4] = { 1, 2, 3, 4 }, t2[4] = { 5, 6, 7, 8 }, t3[4] = { 1, 2, 3, 5 };
	uint64_t h1 = dec_kv_hash(0, t1, 4), h2 = dec_kv_hash(h1, t2, 4);
	int a, b, c, d;

	(void)state;
	cr_err_init(&e);
	assert_int_equal(dec_kv_new(3, 4, &kv, &e), CR_OK);
	a = dec_kv_alloc(kv);
	b = dec_kv_alloc(kv);
	c = dec_kv_alloc(kv);
	assert_true(a >= 0 && b >= 0 && c >= 0 && a != b && b != c && a != c);
	assert_int_equal(dec_kv_alloc(kv), -1);
	assert_int_equal(dec_kv_n_free(kv), 0);
	/* a published block outlives its holders, cached */
	dec_kv_publish(kv, a, h1, 0, t1);
	dec_kv_publish(kv, b, h2, h1, t2);
	assert_int_equal(dec_kv_hash(0, t3, 4) == h1, 0);
	dec_kv_unref(kv, a);
	dec_kv_unref(kv, b);
	assert_int_equal(dec_kv_n_free(kv), 2);
	assert_int_equal(dec_kv_n_cached(kv), 2);
	/* a lookup needs hash, parent and tokens to agree */
	assert_int_equal(dec_kv_lookup(kv, h1, 0, t3), -1);
	assert_int_equal(dec_kv_lookup(kv, h2, 0, t2), -1);
	assert_int_equal(dec_kv_lookup(kv, h1, 0, t1), a);
	assert_int_equal(dec_kv_refs(kv, a), 1);
	/* shared: two references, one release keeps it held */
	dec_kv_ref(kv, a);
	dec_kv_unref(kv, a);
	assert_int_equal(dec_kv_refs(kv, a), 1);
	/* with nothing free the least recently released cached block goes:
	 * b (a is held) */
	d = dec_kv_alloc(kv);
	assert_int_equal(d, b);
	assert_int_equal(dec_kv_stats(kv)->evictions, 1);
	assert_int_equal(dec_kv_lookup(kv, h2, h1, t2), -1);
	assert_int_equal(dec_kv_n_cached(kv), 1);
	/* an unpublished block goes back to the free list, before any cached */
	dec_kv_unref(kv, c);
	dec_kv_unref(kv, a); /* a cached again */
	assert_int_equal(dec_kv_alloc(kv), c);
	assert_int_equal(dec_kv_lookup(kv, h1, 0, t1), a);
	/* a second block with a published hash stays unpublished */
	dec_kv_unref(kv, d);
	d = dec_kv_alloc(kv);
	dec_kv_publish(kv, d, h1, 0, t1);
	assert_int_equal(dec_kv_n_cached(kv), 1);
	assert_int_equal(dec_kv_stats(kv)->peak_used, 3);
	dec_kv_free(kv);
	/* partial blocks: found by the longest shared prefix after their
	 * parent, never by a full lookup, only when their holder is alone */
	{
		int32_t p1[4] = { 9, 8, 7, 0 }, p2[4] = { 9, 8, 1, 0 }, q[4] = { 9, 8, 7, 6 };
		int m = -1;

		assert_int_equal(dec_kv_new(4, 4, &kv, &e), CR_OK);
		a = dec_kv_alloc(kv);
		b = dec_kv_alloc(kv);
		c = dec_kv_alloc(kv);
		dec_kv_ref(kv, c);
		dec_kv_publish_partial(kv, c, h1, p1, 2); /* held twice: not published */
		assert_int_equal(dec_kv_n_cached(kv), 0);
		dec_kv_publish_partial(kv, a, h1, p1, 3);
		dec_kv_publish_partial(kv, b, h1, p2, 3);
		dec_kv_unref(kv, a);
		dec_kv_unref(kv, b);
		assert_int_equal(dec_kv_lookup(kv, h1, h1, p1), -1);
		assert_int_equal(dec_kv_lookup_partial(kv, 0, q, 4, &m), -1);
		assert_int_equal(m, 0);
		assert_int_equal(dec_kv_lookup_partial(kv, h1, q, 4, &m), a);
		assert_int_equal(m, 3);
		assert_int_equal(dec_kv_refs(kv, a), 1);
		dec_kv_unref(kv, a);
		assert_int_equal(dec_kv_lookup_partial(kv, h1, q, 2, &m) >= 0, 1);
		assert_int_equal(m, 2);
		/* a full block serves a prefix too */
		d = dec_kv_alloc(kv);
		dec_kv_publish(kv, d, dec_kv_hash(h2, q, 4), h2, q);
		dec_kv_unref(kv, d);
		assert_int_equal(dec_kv_lookup_partial(kv, h2, (int32_t[]){ 9, 8, 7, 1 }, 4, &m), d);
		assert_int_equal(m, 3);
		dec_kv_free(kv);
	}
	assert_int_equal(dec_kv_new(0, 4, &kv, &e), CR_EUSAGE);
}

struct fixture {
	uint8_t *img;
	struct dec_model *m;
	struct dec_tok *tok;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	struct tiny_spec s;
	struct cr_err e;

	tiny_spec_default(&s, "qwen2", DEC_T_Q8_0);
	s.dim = 64;
	s.hidden = 128;
	s.n_heads = 4;
	s.n_kv_heads = 2;
	s.head_dim = 16;
	f->m = tiny_load(&s, &f->img);
	cr_err_init(&e);
	if (dec_vocab_tokenizer(f->m->gguf, &f->tok, &e))
		fail_msg("%s", e.msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	dec_tok_free(f->tok);
	dec_model_free(f->m);
	free(f->img);
	free(f);
	return 0;
}

#define N_REQ 5

/* Request k: its prompt, sample count, token cap and sampling. */
struct reqdef {
	int32_t prompt[80];
	int n_prompt, n, max_tokens;
	float temperature;
	struct dec_gen_out outs[4];
	struct dec_req r;
};

static const char *const stops[] = { "e" };

static void make_reqs(struct reqdef *d, int n_vocab, int sampled)
{
	static const int np[N_REQ] = { 7, 40, 16, 33, 3 }, ns[N_REQ] = { 1, 4, 2, 3, 1 };
	static const int mt[N_REQ] = { 50, 3, 24, 1, 70 };

	memset(d, 0, sizeof *d * N_REQ);
	for (int k = 0; k < N_REQ; k++) {
		d[k].n_prompt = np[k];
		/* requests 1 and 3 share their first 32 tokens */
		for (int i = 0; i < np[k]; i++)
			d[k].prompt[i] = (int32_t)(((k == 3 && i < 32 ? 1 : k) * 131 + i * 17 + 3) % n_vocab);
		d[k].n = ns[k];
		d[k].max_tokens = mt[k];
		d[k].temperature = sampled ? 0.9f : 0;
	}
}

static struct dec_gen_params params(const struct reqdef *d, int k)
{
	struct dec_gen_params p = { .max_tokens = d->max_tokens,
				    .samp = { d->temperature, 0, 1.0f, 0 },
				    .seed = 1234, .task = k % 2 ? "odd" : "even",
				    .sample = (uint64_t)k * 10, .top_logprobs = 2, .logprobs = 1 };

	/* the odd requests stop at an "e": samples end at different lengths */
	if (k % 2) {
		p.stops = stops;
		p.n_stops = 1;
	}
	return p;
}

/* The engine's outputs of every request equal the static batch's. */
static void check_against_static(const struct fixture *f, struct reqdef *d)
{
	struct cr_err e;

	cr_err_init(&e);
	for (int k = 0; k < N_REQ; k++) {
		struct dec_state *s;
		struct dec_gen_out ref[4];
		struct dec_gen_params p = params(&d[k], k);

		assert_int_equal(dec_state_new_seqs(f->m, d[k].n_prompt + d[k].max_tokens + 1, 8, d[k].n, 1, &s,
						    &e), CR_OK);
		assert_int_equal(dec_generate_n(s, f->tok, d[k].prompt, d[k].n_prompt, NULL, &p, d[k].n, ref, &e),
				 CR_OK);
		assert_int_equal(d[k].r.n_done, d[k].n);
		for (int i = 0; i < d[k].n; i++) {
			const struct dec_gen_out *o = &d[k].outs[i];

			assert_int_equal(o->n_tokens, ref[i].n_tokens);
			assert_memory_equal(o->tokens, ref[i].tokens, sizeof(int32_t) * (size_t)o->n_tokens);
			assert_memory_equal(o->top_ids, ref[i].top_ids, sizeof(int32_t) * 2 * (size_t)o->n_tokens);
			assert_memory_equal(o->top_lp, ref[i].top_lp, sizeof(float) * 2 * (size_t)o->n_tokens);
			/* drawn by the backend's sample op here, on the host there */
			assert_memory_equal(o->token_lp, ref[i].token_lp, sizeof(float) * (size_t)o->n_tokens);
			assert_string_equal(o->finish, ref[i].finish);
			assert_int_equal(o->text_len, ref[i].text_len);
			assert_memory_equal(o->text, ref[i].text, o->text_len);
			dec_gen_out_release(&ref[i]);
		}
		dec_state_free(s);
	}
}

/* Runs the requests through one engine; returns its stats. */
static struct dec_engine_stats run_engine(const struct fixture *f, struct reqdef *d, size_t kv_mem,
					  int max_seqs, int max_batch)
{
	struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = max_seqs,
				      .max_batch_tokens = max_batch, .max_ctx = 160, .kv_mem = kv_mem,
				      .n_threads = 2 };
	struct dec_engine *eng;
	struct dec_engine_stats st;
	struct cr_err e;

	cr_err_init(&e);
	assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
	assert_string_equal(dec_engine_device(eng), "cpu");
	for (int k = 0; k < N_REQ; k++) {
		d[k].r = (struct dec_req){ .prompt = d[k].prompt, .n_prompt = d[k].n_prompt, .n = d[k].n,
					   .p = params(&d[k], k), .tok = f->tok, .outs = d[k].outs };
		assert_int_equal(dec_engine_submit(eng, &d[k].r, &e), CR_OK);
	}
	if (dec_engine_run(eng, &e))
		fail_msg("%s", e.msg);
	st = *dec_engine_stats(eng);
	dec_engine_free(eng);
	return st;
}

static void release_all(struct reqdef *d)
{
	for (int k = 0; k < N_REQ; k++)
		for (int i = 0; i < d[k].n; i++)
			dec_gen_out_release(&d[k].outs[i]);
}

static void test_continuous_batching(void **state)
{
	struct fixture *f = *state;
	struct reqdef d[N_REQ];

	for (int sampled = 0; sampled < 2; sampled++) {
		struct dec_engine_stats st;
		int lens_differ = 0;

		make_reqs(d, f->m->cfg.n_vocab, sampled);
		/* 3 sequences at a time, 24 tokens a step: prefill chunks of
		 * the 40-token prompt share steps with decoding */
		st = run_engine(f, d, 0, 3, 24);
		check_against_static(f, d);
		for (int k = 0; k < N_REQ; k++)
			for (int i = 1; i < d[k].n; i++)
				lens_differ |= d[k].outs[i].n_tokens != d[k].outs[0].n_tokens;
		assert_true(lens_differ || !sampled);
		assert_int_equal(st.preemptions, 0);
		/* every prompt computed once (request 3 took request 1's first 32
		 * tokens from the cache when it came after it) */
		assert_int_equal(st.prefill_tokens + st.cached_tokens, 7 + 40 + 16 + 33 + 3);
		release_all(d);
	}
}

static void test_preemption(void **state)
{
	struct fixture *f = *state;
	struct reqdef d[N_REQ];
	size_t bb = (size_t)2 * f->m->cfg.n_layers * 16 * f->m->cfg.n_kv_heads * f->m->cfg.head_dim * 2;

	for (int sampled = 0; sampled < 2; sampled++) {
		struct dec_engine_stats st;

		make_reqs(d, f->m->cfg.n_vocab, sampled);
		/* 6 blocks of 16 positions: the longest sequence (3 + 70 tokens)
		 * needs 5 of them, so it cannot run beside the others */
		st = run_engine(f, d, 6 * bb, 4, 32);
		print_message("preemptions %lld evictions %lld cow %lld peak %d\n", (long long)st.preemptions,
			      (long long)st.evictions, (long long)st.cow_copies, st.peak_blocks);
		check_against_static(f, d);
		assert_true(st.preemptions > 0);
		assert_true(st.evictions > 0);
		assert_int_equal(st.n_blocks, 6);
		assert_true(st.peak_blocks <= 6);
		release_all(d);
	}
}

static void test_prefix_sharing(void **state)
{
	struct fixture *f = *state;
	struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = 4, .max_ctx = 200, .n_threads = 2 };
	struct dec_engine *eng;
	struct dec_engine_stats st;
	struct dec_gen_out outs[4], o2, o3;
	int32_t prompt[150];
	struct dec_req r = { .prompt = prompt, .n_prompt = 37, .n = 4, .outs = outs,
			     .p = { .max_tokens = 20, .samp = { 0.8f, 0, 1.0f, 0 }, .seed = 7, .task = "t" } };
	struct dec_req r2, r3;
	struct cr_err e;
	int n2, cached;

	cr_err_init(&e);
	for (int i = 0; i < 150; i++)
		prompt[i] = (int32_t)((i * 29 + 5) % f->m->cfg.n_vocab);
	assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
	assert_int_equal(dec_engine_submit(eng, &r, &e), CR_OK);
	assert_int_equal(dec_engine_run(eng, &e), CR_OK);
	st = *dec_engine_stats(eng);
	/* the prompt once: 37 tokens; its 3 blocks (2 full, 1 partial)
	 * held by each of the 4 samples; the partial one copied by the first 3
	 * that wrote into it (the last writer had it alone) */
	assert_int_equal(r.prefill_tokens, 37);
	assert_int_equal(st.prefill_tokens, 37);
	assert_int_equal(st.shared_blocks, 4 * 3);
	assert_int_equal(st.cow_copies, 3);
	assert_int_equal(st.decode_tokens, 4 * 19);
	/* the next turn: the prompt, sample 0's completion, new tokens.
	 * Computed: what follows the prompt + the 19 tokens sample 0 fed back
	 * (3 full blocks and sample 0's partial last block, cached when it
	 * ended): its last drawn token and the 11 new ones */
	n2 = 37;
	for (int i = 0; i < outs[0].n_tokens; i++)
		prompt[n2++] = outs[0].tokens[i];
	for (int i = 0; i < 11; i++)
		prompt[n2++] = (int32_t)((i * 7 + 1) % f->m->cfg.n_vocab);
	r2 = (struct dec_req){ .prompt = prompt, .n_prompt = n2, .n = 1, .outs = &o2,
			       .p = { .max_tokens = 5, .seed = 7, .task = "t" } };
	assert_int_equal(dec_engine_submit(eng, &r2, &e), CR_OK);
	assert_int_equal(dec_engine_run(eng, &e), CR_OK);
	cached = 37 + 19;
	assert_int_equal(r2.prefill_tokens, n2 - cached);
	assert_int_equal(r2.prefill_tokens, 12);
	/* the same prompt again: only its last token */
	r3 = r2;
	r3.outs = &o3;
	assert_int_equal(dec_engine_submit(eng, &r3, &e), CR_OK);
	assert_int_equal(dec_engine_run(eng, &e), CR_OK);
	assert_int_equal(r3.prefill_tokens, 1);
	assert_int_equal(o3.n_tokens, o2.n_tokens);
	assert_memory_equal(o3.tokens, o2.tokens, sizeof(int32_t) * (size_t)o2.n_tokens);
	for (int i = 0; i < 4; i++)
		dec_gen_out_release(&outs[i]);
	dec_gen_out_release(&o2);
	dec_gen_out_release(&o3);
	dec_engine_free(eng);
}

/* Speculative decoding by prompt lookup: greedy output is the target's own
 * at every draft length (drafts accepted and rejected, so the rollback of
 * rejected K/V is exercised), and sampled output does not depend on the
 * batch it ran in. */
static void test_speculative(void **state)
{
	struct fixture *f = *state;
	int32_t prompt[3][40];
	struct dec_gen_out ref[3], out[3];
	struct dec_req r[3];
	struct cr_err e;

	cr_err_init(&e);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 40; i++) /* repeating patterns: lookup finds drafts */
			prompt[k][i] = (int32_t)(((i % (5 + k)) * 37 + k * 11 + 3) % f->m->cfg.n_vocab);
	for (int sampled = 0; sampled < 2; sampled++) {
		for (int K = 0; K <= 6; K++) {
			for (int B = 1; B <= 3; B += 2) {
				struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = B, .max_ctx = 128,
							      .n_threads = 2, .draft_tokens = K };
				struct dec_engine *eng;
				struct dec_gen_out *o = K == 0 && B == 1 ? ref : out;

				assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
				for (int k = 0; k < 3; k++) {
					r[k] = (struct dec_req){ .prompt = prompt[k], .n_prompt = 40, .n = 1, .outs = &o[k],
								 .tok = f->tok,
								 .p = { .max_tokens = 30 + 7 * k,
									.samp = { sampled ? 0.7f : 0, 0, 1.0f, 0 },
									.seed = 5, .task = "spec", .sample = (uint64_t)k,
									.top_logprobs = 2, .logprobs = 1 } };
					assert_int_equal(dec_engine_submit(eng, &r[k], &e), CR_OK);
				}
				assert_int_equal(dec_engine_run(eng, &e), CR_OK);
				if (K && !sampled) {
					const struct dec_engine_stats *st = dec_engine_stats(eng);

					assert_true(st->draft_proposed > 0);
					assert_true(st->draft_accepted > 0);
					assert_true(st->draft_accepted < st->draft_proposed);
				}
				dec_engine_free(eng);
				if (o == ref)
					continue;
				/* sampled: the reference for B = 3 is this K's B = 1 run */
				if (sampled && B == 1) {
					for (int k = 0; k < 3; k++)
						dec_gen_out_release(&ref[k]);
					memcpy(ref, out, sizeof ref);
					memset(out, 0, sizeof out);
					continue;
				}
				for (int k = 0; k < 3; k++) {
					/* greedy: every K gives the plain tokens; sampled: the
					 * same K gives the same tokens in any batch */
					const struct dec_gen_out *want = ref + k;

					assert_int_equal(out[k].n_tokens, want->n_tokens);
					assert_memory_equal(out[k].tokens, want->tokens,
							    sizeof(int32_t) * (size_t)out[k].n_tokens);
					assert_memory_equal(out[k].top_lp, want->top_lp,
							    sizeof(float) * 2 * (size_t)out[k].n_tokens);
					/* accepted drafts and replacements: the target's logprob */
					assert_memory_equal(out[k].token_lp, want->token_lp,
							    sizeof(float) * (size_t)out[k].n_tokens);
					assert_string_equal(out[k].finish, want->finish);
					dec_gen_out_release(&out[k]);
				}
			}
		}
		for (int k = 0; k < 3; k++)
			dec_gen_out_release(&ref[k]);
	}
}

/* A draft model: the same model in Q4_0 (accepted often) and an unrelated
 * one (other weights: accepted rarely). Greedy output is the target's own
 * at every K, roomy pool or one small enough to preempt; sampled output
 * does not depend on the batch. */
static void test_draft_model(void **state)
{
	struct fixture *f = *state;
	struct tiny_spec s;
	uint8_t *img[2];
	struct dec_model *dm[2];
	int32_t prompt[3][24];
	struct dec_gen_out ref[3], out[3];
	struct dec_req r[3];
	struct cr_err e;
	size_t bb;

	cr_err_init(&e);
	tiny_spec_default(&s, "qwen2", DEC_T_Q4_0); /* the fixture's model, 4-bit */
	s.dim = 64;
	s.hidden = 128;
	s.n_heads = 4;
	s.n_kv_heads = 2;
	s.head_dim = 16;
	dm[0] = tiny_load(&s, &img[0]);
	s.seed = 99;                                   /* another model */
	s.wtype = DEC_T_Q8_0;
	s.n_layers = 1;
	dm[1] = tiny_load(&s, &img[1]);
	bb = dec_be_block_bytes(f->m, 16) + dec_be_block_bytes(dm[0], 16);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 24; i++)
			prompt[k][i] = (int32_t)((i * 53 + k * 29 + 7) % f->m->cfg.n_vocab);
	for (int sampled = 0; sampled < 2; sampled++) {
		for (int v = -1; v < 6; v++) { /* v = -1: no draft (the reference) */
			int which = v < 0 ? 0 : v % 2, K = v < 0 ? 0 : 1 + v % 5;
			int B = (sampled && v >= 0 && v % 3 == 2) || v == 4 ? 3 : 1;
			size_t kv = v == 4 ? 5 * bb : 0;
			struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = B, .max_ctx = 96, .n_threads = 2,
						      .draft_tokens = K, .draft_model = v < 0 ? NULL : dm[which],
						      .kv_mem = kv };
			struct dec_engine *eng;
			struct dec_gen_out *o = v < 0 ? ref : out;

			if (sampled && v >= 0 && B == 1)
				continue; /* sampled: compare B = 3 against B = 1 of the same draft */
			assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
			for (int run = 0; run < (sampled && v >= 0 ? 2 : 1); run++) {
				if (run) { /* the same draft at batch 1: the reference */
					dec_engine_free(eng);
					cfg.max_seqs = 1;
					assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
					o = ref;
					for (int k = 0; k < 3; k++)
						dec_gen_out_release(&ref[k]);
				}
				for (int k = 0; k < 3; k++) {
					r[k] = (struct dec_req){ .prompt = prompt[k], .n_prompt = 24, .n = 1, .outs = &o[k],
								 .tok = f->tok,
								 .p = { .max_tokens = 25 + 9 * k,
									.samp = { sampled ? 0.8f : 0, 0, 1.0f, 0 },
									.seed = 3, .task = "draft", .sample = (uint64_t)k,
									.top_logprobs = 2 } };
					assert_int_equal(dec_engine_submit(eng, &r[k], &e), CR_OK);
				}
				if (dec_engine_run(eng, &e))
					fail_msg("%s", e.msg);
			}
			if (v >= 0) {
				const struct dec_engine_stats *st = dec_engine_stats(eng);

				assert_true(st->draft_proposed > 0);
				if (which == 0 && !sampled)
					assert_true(st->draft_accepted > st->draft_proposed / 4);
				if (v == 4 && !sampled) /* (sampled: these are the batch-1 run's counts) */
					assert_true(st->preemptions > 0);
			}
			dec_engine_free(eng);
			if (v < 0)
				continue;
			for (int k = 0; k < 3; k++) {
				print_message("sampled %d v %d k %d: %d tokens\n", sampled, v, k, out[k].n_tokens);
				assert_int_equal(out[k].n_tokens, ref[k].n_tokens);
				assert_memory_equal(out[k].tokens, ref[k].tokens, sizeof(int32_t) * (size_t)out[k].n_tokens);
				assert_memory_equal(out[k].top_lp, ref[k].top_lp, sizeof(float) * 2 * (size_t)out[k].n_tokens);
				dec_gen_out_release(&out[k]);
			}
		}
		for (int k = 0; k < 3; k++)
			dec_gen_out_release(&ref[k]);
	}
	for (int i = 0; i < 2; i++) {
		dec_model_free(dm[i]);
		free(img[i]);
	}
}

/* A mixture-of-experts model (qwen3moe, top 2 of 4 experts: a batch's
 * tokens are routed to experts together) and gemma3 (a window of 4 on
 * every other layer): each token gets the bits it gets alone (batch 1 and
 * 4, greedy and sampled, prefill chunks of 7). */
static void test_arch_batching(void **state)
{
	for (int a = 0; a < 2; a++) {
		struct tiny_spec s;
		uint8_t *img;
		struct dec_model *m;
		struct dec_tok *tok;
		int32_t prompt[4][20];
		struct dec_gen_out out[2][4];
		struct cr_err e;

		(void)state;
		tiny_spec_default(&s, a ? "gemma3" : "qwen3moe", DEC_T_Q8_0);
		s.n_expert_used = 2;
		s.dim = 64;
		s.hidden = 128;
		s.n_heads = 4;
		s.n_kv_heads = 2;
		s.head_dim = 16;
		m = tiny_load(&s, &img);
		cr_err_init(&e);
		if (!a) {
			assert_int_equal(m->cfg.n_expert, 4);
			assert_int_equal(m->cfg.n_expert_used, 2);
		} else {
			assert_int_equal(m->cfg.n_swa, 4);
			assert_true(m->w.layers[0].swa && !m->w.layers[1].swa);
		}
		assert_int_equal(dec_vocab_tokenizer(m->gguf, &tok, &e), CR_OK);
		for (int k = 0; k < 4; k++)
			for (int i = 0; i < 20; i++)
				prompt[k][i] = (int32_t)((i * 41 + k * 13 + 5) % m->cfg.n_vocab);
		for (int sampled = 0; sampled < 2; sampled++) {
			for (int v = 0; v < 2; v++) {
				struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = v ? 4 : 1, .max_ctx = 64,
							      .max_batch_tokens = v ? 7 : 0, .n_threads = 2 };
				struct dec_engine *eng;
				struct dec_req r[4];

				assert_int_equal(dec_engine_new(m, &cfg, &eng, &e), CR_OK);
				for (int k = 0; k < 4; k++) {
					r[k] = (struct dec_req){ .prompt = prompt[k], .n_prompt = 20, .n = 1, .outs = &out[v][k],
								 .tok = tok,
								 .p = { .max_tokens = 12 + 3 * k,
									.samp = { sampled ? 0.9f : 0, 0, 1.0f, 0 }, .seed = 2,
									.task = "moe", .sample = (uint64_t)k, .top_logprobs = 2 } };
					assert_int_equal(dec_engine_submit(eng, &r[k], &e), CR_OK);
				}
				if (dec_engine_run(eng, &e))
					fail_msg("%s", e.msg);
				dec_engine_free(eng);
			}
			for (int k = 0; k < 4; k++) {
				assert_int_equal(out[0][k].n_tokens, out[1][k].n_tokens);
				assert_memory_equal(out[0][k].tokens, out[1][k].tokens, sizeof(int32_t) * (size_t)out[0][k].n_tokens);
				assert_memory_equal(out[0][k].top_lp, out[1][k].top_lp, sizeof(float) * 2 * (size_t)out[0][k].n_tokens);
				dec_gen_out_release(&out[0][k]);
				dec_gen_out_release(&out[1][k]);
			}
		}
		dec_tok_free(tok);
		dec_model_free(m);
		free(img);
	}
}

/* token_lp live: what a caller reading between steps saw of each sample
 * (n_tokens and the entries below it), checked against the end. */
struct live {
	struct dec_gen_out *outs;
	int n, steps, bad;
	int seen_n[4];
	float seen[4][64];
};

static void live_step(void *ctx)
{
	struct live *l = ctx;

	l->steps++;
	for (int i = 0; i < l->n; i++) {
		const struct dec_gen_out *o = &l->outs[i];

		if (!o->token_lp) /* not initialised yet: not submitted or not forked */
			continue;
		/* earlier entries never change; the new ones are whole */
		for (int k = 0; k < l->seen_n[i]; k++)
			l->bad += o->token_lp[k] != l->seen[i][k];
		for (int k = l->seen_n[i]; k < o->n_tokens; k++)
			l->seen[i][k] = o->token_lp[k];
		l->seen_n[i] = o->n_tokens;
	}
}

/* Each generated token's logprob (p.logprobs): exactly dec_top_logprobs'
 * value for that token (top_logprobs over the whole vocabulary), on the
 * backend's sample op and on the host, greedy and sampled, at batch 1 and
 * 4, bit for bit the same everywhere; readable between steps. */
static void test_token_logprob(void **state)
{
	struct fixture *f = *state;
	int nv = f->m->cfg.n_vocab;
	int32_t prompt[4][12];
	struct dec_gen_out out[2][2][4]; /* [host_sample][batch 1, 4][request] */
	struct cr_err e;
	int checked = 0;

	cr_err_init(&e);
	assert_true(nv <= DEC_MAX_LOGPROBS);
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 12; i++)
			prompt[k][i] = (int32_t)((i * 19 + k * 7 + 1) % nv);
	for (int hs = 0; hs < 2; hs++)
		for (int b = 0; b < 2; b++) {
			struct live live = { .outs = out[hs][b], .n = 4 };
			struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = b ? 4 : 1, .max_ctx = 64,
						      .n_threads = 2, .host_sample = hs, .on_step = live_step,
						      .ctx = &live };
			struct dec_engine *eng;
			struct dec_req r[4];

			memset(out[hs][b], 0, sizeof out[hs][b]);
			assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
			for (int k = 0; k < 4; k++) {
				r[k] = (struct dec_req){ .prompt = prompt[k], .n_prompt = 12, .n = 1, .outs = &out[hs][b][k],
							 .tok = f->tok,
							 .p = { .max_tokens = 10 + 5 * k,
								.samp = { k % 2 ? 0.8f : 0, k == 3 ? 30 : 0, k == 1 ? 0.9f : 1.0f, 0 },
								.seed = 11, .task = "lp", .sample = (uint64_t)k,
								.top_logprobs = nv, .logprobs = 1 } };
				assert_int_equal(dec_engine_submit(eng, &r[k], &e), CR_OK);
			}
			if (dec_engine_run(eng, &e))
				fail_msg("%s", e.msg);
			dec_engine_free(eng);
			live_step(&live);
			assert_int_equal(live.bad, 0);
			assert_true(live.steps > 10);
			for (int k = 0; k < 4; k++) {
				const struct dec_gen_out *o = &out[hs][b][k], *want = &out[0][0][k];

				assert_int_equal(live.seen_n[k], o->n_tokens);
				assert_memory_equal(live.seen[k], o->token_lp, sizeof(float) * (size_t)o->n_tokens);
				for (int t = 0; t < o->n_tokens; t++) {
					int j = 0;

					while (j < nv && o->top_ids[(size_t)t * nv + j] != o->tokens[t])
						j++;
					assert_true(j < nv);
					if (o->token_lp[t] != o->top_lp[(size_t)t * nv + j])
						fail_msg("host_sample %d batch %d request %d token %d: logprob %.9g, "
							 "dec_top_logprobs %.9g", hs, b, k, t, (double)o->token_lp[t],
							 (double)o->top_lp[(size_t)t * nv + j]);
					checked += j > 0; /* not always the argmax */
				}
				assert_int_equal(o->n_tokens, want->n_tokens);
				assert_memory_equal(o->tokens, want->tokens, sizeof(int32_t) * (size_t)o->n_tokens);
				assert_memory_equal(o->token_lp, want->token_lp, sizeof(float) * (size_t)o->n_tokens);
			}
		}
	assert_true(checked > 0);
	for (int hs = 0; hs < 2; hs++)
		for (int b = 0; b < 2; b++)
			for (int k = 0; k < 4; k++)
				dec_gen_out_release(&out[hs][b][k]);
	/* not asked: no array */
	{
		struct dec_gen_sample g;
		struct dec_gen_out o;
		struct dec_gen_params p = { .max_tokens = 3 };

		assert_int_equal(dec_gen_sample_init(&g, &o, &p, 0, &e), CR_OK);
		assert_null(o.token_lp);
		free(g.tb.p);
		dec_gen_out_release(&o);
	}
}

/* ---- cancel ---- */

enum { AT_WAITING, AT_PREFILL, AT_FORKED, AT_PREEMPTED, AT_DRAWING };

/* Two requests; request 1 is cancelled. With seed 7 its samples end
 * after 28, 40 and 40 tokens (a stop string, then max tokens). */
struct cx {
	int32_t prompt[2][48];
	int n_prompt[2];
	struct dec_req r[2];
	struct dec_gen_out outs[2][3], ref[2][3];
	int on_sample[2];
};

static void cx_on_sample(void *ctx, struct dec_req *r, int i)
{
	(void)r;
	(void)i;
	(*(int *)ctx)++;
}

static void cx_submit(const struct fixture *f, struct dec_engine *eng, struct cx *c, int k,
		      struct dec_gen_out *outs, int max_tokens, int n)
{
	struct cr_err e;

	cr_err_init(&e);
	c->r[k] = (struct dec_req){ .prompt = c->prompt[k], .n_prompt = c->n_prompt[k], .n = n, .outs = outs,
				    .tok = f->tok, .on_sample = cx_on_sample, .ctx = &c->on_sample[k],
				    .p = { .max_tokens = max_tokens, .samp = { 0.9f, 0, 1.0f, 0 }, .seed = 7,
					   .task = k ? "one" : "zero", .stops = stops, .n_stops = k, .logprobs = 1 } };
	assert_int_equal(dec_engine_submit(eng, &c->r[k], &e), CR_OK);
}

/* Whether the engine is where `at` wants request 1 to be cancelled. */
static int cx_ready(struct cx *c, const struct dec_engine_stats *st, int at, int steps)
{
	switch (at) {
	case AT_WAITING:
		return steps == 2; /* max_seqs 1: request 0 holds the one place */
	case AT_PREFILL:
		return c->r[1].prefill_tokens > 0 && st->prefill_tokens > c->n_prompt[0] && !c->outs[1][0].tokens;
	case AT_FORKED:
		return c->r[1].n_done >= 1;
	case AT_PREEMPTED:
		return st->preemptions > 0;
	default:
		return c->outs[1][0].n_tokens >= 6 && c->outs[1][1].n_tokens >= 6;
	}
}

/* Request 1 (3 samples, a stop string: they end at different lengths) is
 * cancelled in state `at` beside request 0; request 0 still gets the tokens
 * it gets alone, request 1 keeps a prefix of its own, every block comes
 * back, and a request that needs the whole pool fits afterwards. */
static void cancel_case(const struct fixture *f, struct dec_engine_cfg cfg, int at)
{
	struct cx *c = calloc(1, sizeof *c);
	struct dec_engine *eng;
	const struct dec_engine_stats *st;
	struct cr_err e;
	int mt[2] = { 30, 40 }, steps = 0, n_done, cancelled = 0;

	cr_err_init(&e);
	c->n_prompt[0] = 10;
	c->n_prompt[1] = at == AT_PREFILL ? 44 : 12;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < c->n_prompt[k]; i++) /* a repeating pattern: lookup finds drafts */
			c->prompt[k][i] = (int32_t)(((i % (4 + k)) * 37 + k * 11 + 3) % f->m->cfg.n_vocab);
	/* the references: each request alone, to the end */
	for (int k = 0; k < 2; k++) {
		struct dec_engine_cfg one = cfg;

		one.max_seqs = 3;
		one.max_batch_tokens = 0;
		one.kv_mem = 0;
		assert_int_equal(dec_engine_new(f->m, &one, &eng, &e), CR_OK);
		cx_submit(f, eng, c, k, c->ref[k], mt[k], k ? 3 : 1);
		if (dec_engine_run(eng, &e))
			fail_msg("%s", e.msg);
		dec_engine_free(eng);
	}
	c->on_sample[0] = c->on_sample[1] = 0;
	assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
	cx_submit(f, eng, c, 0, c->outs[0], mt[0], 1);
	cx_submit(f, eng, c, 1, c->outs[1], mt[1], 3);
	while (!cx_ready(c, dec_engine_stats(eng), at, steps)) {
		if (!dec_engine_busy(eng) || steps >= 400)
			fail_msg("cancel at %d: the engine ended after %d steps (%lld preemptions, request 1: %d done, "
				 "%d %d %d tokens)", at, steps, (long long)dec_engine_stats(eng)->preemptions,
				 c->r[1].n_done, c->outs[1][0].n_tokens, c->outs[1][1].n_tokens, c->outs[1][2].n_tokens);
		if (dec_engine_step(eng, &e))
			fail_msg("%s", e.msg);
		steps++;
	}
	n_done = c->r[1].n_done;
	assert_true(n_done < 3);
	if (at == AT_FORKED)
		assert_true(n_done >= 1);
	dec_engine_cancel(eng, &c->r[1]);
	assert_int_equal(c->r[1].n_done, 3);
	assert_int_equal(c->on_sample[1], n_done); /* none for the cancelled */
	dec_engine_cancel(eng, &c->r[1]);         /* done: a no-op */
	assert_int_equal(c->on_sample[1], n_done);
	for (int i = 0; i < 3; i++) {
		const struct dec_gen_out *o = &c->outs[1][i], *want = &c->ref[1][i];

		assert_true(o->n_tokens <= want->n_tokens);
		if (o->n_tokens)
			assert_memory_equal(o->tokens, want->tokens, sizeof(int32_t) * (size_t)o->n_tokens);
		if (strcmp(o->finish, "cancelled")) { /* finished before: untouched */
			assert_int_equal(o->n_tokens, want->n_tokens);
			assert_string_equal(o->finish, want->finish);
			assert_non_null(o->text);
			continue;
		}
		cancelled++;
		assert_null(o->text);
		assert_int_equal(o->text_len, 0);
		if (at == AT_WAITING || at == AT_PREFILL) {
			assert_int_equal(o->n_tokens, 0);
		} else {
			assert_true(o->n_tokens > 0 && o->n_tokens < want->n_tokens);
			assert_memory_equal(o->token_lp, want->token_lp, sizeof(float) * (size_t)o->n_tokens);
		}
	}
	assert_int_equal(cancelled, 3 - n_done);
	if (dec_engine_run(eng, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c->on_sample[0], 1);
	assert_int_equal(c->outs[0][0].n_tokens, c->ref[0][0].n_tokens);
	assert_memory_equal(c->outs[0][0].tokens, c->ref[0][0].tokens, sizeof(int32_t) * (size_t)c->ref[0][0].n_tokens);
	assert_false(dec_engine_busy(eng));
	st = dec_engine_stats(eng);
	assert_int_equal(st->free_blocks, st->n_blocks);
	print_message("cancel at %d after %d steps: %d of 3 samples cancelled (%d, %d, %d tokens kept), %lld "
		      "preemptions, %d blocks\n", at, steps, cancelled, c->outs[1][0].n_tokens, c->outs[1][1].n_tokens,
		      c->outs[1][2].n_tokens, (long long)st->preemptions, st->n_blocks);
	/* a request as long as the pool allows fits: no block was kept */
	{
		int32_t big[48];
		struct dec_gen_out o;
		struct dec_req r = { .prompt = big, .n_prompt = 40, .n = 1, .outs = &o,
				     .p = { .max_tokens = st->n_blocks * st->block_size - 41 } };

		if (r.p.max_tokens > cfg.max_ctx - 41)
			r.p.max_tokens = cfg.max_ctx - 41;
		for (int i = 0; i < 40; i++)
			big[i] = (int32_t)((i * 13 + 100) % f->m->cfg.n_vocab);
		assert_int_equal(dec_engine_submit(eng, &r, &e), CR_OK);
		if (dec_engine_run(eng, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(o.n_tokens, r.p.max_tokens);
		dec_gen_out_release(&o);
	}
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 3; i++) {
			dec_gen_out_release(&c->outs[k][i]);
			dec_gen_out_release(&c->ref[k][i]);
		}
	dec_engine_free(eng);
	free(c);
}

static void test_cancel(void **state)
{
	struct fixture *f = *state;
	size_t bb = dec_be_block_bytes(f->m, 16);
	struct dec_engine_cfg base = { .device = DEC_DEV_CPU, .max_seqs = 4, .max_ctx = 96, .n_threads = 2 };
	struct dec_engine_cfg cfg;
	struct dec_engine *eng;
	struct dec_gen_out o;
	int32_t prompt[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct dec_req r = { .prompt = prompt, .n_prompt = 8, .n = 1, .outs = &o, .p = { .max_tokens = 40 } };
	struct cr_err e;

	/* not admitted: one place, request 0 holds it */
	cfg = base;
	cfg.max_seqs = 1;
	cancel_case(f, cfg, AT_WAITING);
	/* in prefill: 8 tokens a step, a 44-token prompt */
	cfg = base;
	cfg.max_batch_tokens = 8;
	cancel_case(f, cfg, AT_PREFILL);
	/* forked, a sample finished */
	cancel_case(f, base, AT_FORKED);
	/* preempted: 7 blocks for 4 sequences of up to 3 blocks */
	cfg = base;
	cfg.kv_mem = 7 * bb;
	cancel_case(f, cfg, AT_PREEMPTED);
	/* drawing, on the host from downloaded logits, by the backend op, and
	 * with drafts (prompt lookup, a draft model: here the model itself) */
	for (int v = 0; v < 4; v++) {
		cfg = base;
		cfg.host_sample = v == 1;
		cfg.draft_tokens = v >= 2 ? 3 : 0;
		cfg.draft_model = v == 3 ? f->m : NULL;
		cancel_case(f, cfg, AT_DRAWING);
	}
	/* alone, the engine idle after it; unknown and done requests: no-ops */
	cr_err_init(&e);
	assert_int_equal(dec_engine_new(f->m, &base, &eng, &e), CR_OK);
	dec_engine_cancel(eng, &r); /* never submitted */
	assert_int_equal(dec_engine_submit(eng, &r, &e), CR_OK);
	for (int i = 0; i < 5; i++)
		assert_int_equal(dec_engine_step(eng, &e), CR_OK);
	assert_true(dec_engine_busy(eng));
	dec_engine_cancel(eng, &r);
	assert_false(dec_engine_busy(eng));
	assert_int_equal(dec_engine_stats(eng)->free_blocks, dec_engine_stats(eng)->n_blocks);
	assert_string_equal(o.finish, "cancelled");
	assert_int_equal(o.n_tokens, 5); /* the prompt's step drew the first */
	dec_gen_out_release(&o);
	r.p.max_tokens = 0; /* done at submit */
	assert_int_equal(dec_engine_submit(eng, &r, &e), CR_OK);
	dec_engine_cancel(eng, &r);
	assert_string_equal(o.finish, "length");
	dec_gen_out_release(&o);
	dec_engine_free(eng);
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = 2, .max_ctx = 64, .n_threads = 1 };
	struct dec_engine *eng;
	struct dec_gen_out o;
	int32_t prompt[64] = { 0 };
	struct dec_req r = { .prompt = prompt, .n_prompt = 64, .n = 1, .outs = &o, .p = { .max_tokens = 4 } };
	size_t bb = (size_t)2 * f->m->cfg.n_layers * 16 * f->m->cfg.n_kv_heads * f->m->cfg.head_dim * 2;
	struct cr_err e;

	cr_err_init(&e);
	assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
	assert_int_equal(dec_engine_submit(eng, &r, &e), CR_EUSAGE);
	assert_non_null(strstr(e.msg, "prompt of 64 tokens"));
	cr_err_init(&e);
	prompt[3] = f->m->cfg.n_vocab;
	r.n_prompt = 10;
	assert_int_equal(dec_engine_submit(eng, &r, &e), CR_EINPUT);
	dec_engine_free(eng);
	/* two blocks cannot hold a 40-token prompt */
	cr_err_init(&e);
	prompt[3] = 1;
	cfg.kv_mem = 2 * bb;
	assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_OK);
	r.n_prompt = 40;
	assert_int_equal(dec_engine_submit(eng, &r, &e), CR_OK);
	assert_int_equal(dec_engine_run(eng, &e), CR_EUSAGE);
	assert_non_null(strstr(e.msg, "KV cache too small"));
	dec_engine_free(eng);
	/* too few batch tokens for the sequences */
	cr_err_init(&e);
	cfg.kv_mem = 0;
	cfg.max_batch_tokens = 1;
	assert_int_equal(dec_engine_new(f->m, &cfg, &eng, &e), CR_EUSAGE);
	/* no CUDA in this build or on this machine: a clear CR_EENV */
	cr_err_init(&e);
	cfg.max_batch_tokens = 0;
	cfg.device = DEC_DEV_CUDA;
	if (dec_engine_new(f->m, &cfg, &eng, &e) == CR_OK)
		dec_engine_free(eng); /* a machine with a GPU */
	else
		assert_int_equal(e.status, CR_EENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kv_pool),
		cmocka_unit_test(test_continuous_batching),
		cmocka_unit_test(test_preemption),
		cmocka_unit_test(test_prefix_sharing),
		cmocka_unit_test(test_speculative),
		cmocka_unit_test(test_draft_model),
		cmocka_unit_test(test_arch_batching),
		cmocka_unit_test(test_token_logprob),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
