/* test_local.c — the builtin generator (gen/gen_local.c) on a tiny GGUF
 * model from tests/decode/dec_testutil.c:
 *   - n = 3 completions (batches of 2) byte for byte the .txt files and
 *     sidecar counts of `crucible generate` (dec_generate_main) for the same
 *     seed, task and samples; a later request for samples 1-2 of the same
 *     prompt gives them again, computing one prompt token;
 *   - conversations: turn 2 (and 3) through the engine's prefix cache equal
 *     a fresh generator's greedy completion, prefill_tokens = prompt_tokens
 *     minus the longest common prefix with any turn computed before
 *     (computed here with the decoder directly); interleaved conversations
 *     both cached; a KV pool too small for two, where A's blocks are
 *     evicted and its next turn computes more; end_conv;
 *   - pause: no progress and no CPU time for 200 ms while paused, during a
 *     request and before one; the completion is the unpaused one and gen_s
 *     leaves the pause out;
 *   - describe: kind, path, the file's sha256, arch, template;
 *   - errors: missing file, a file that is not GGUF, no tokenizer, a prompt
 *     that does not fit, a malformed conversation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/sha256.h"
#include "decode/dec.h"
#include "decode/be/dec_be.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/dec_run.h"
#include "dec_testutil.h"
#include "gen/gen_gen.h"
#include "gen/gen_local.h"

static char model_path[256];

static int setup(void **state)
{
	struct tiny_spec s;

	(void)state;
	tiny_tmpname(model_path, sizeof model_path, ".gguf");
	tiny_spec_default(&s, "qwen2", DEC_T_Q8_0);
	return tiny_model_write(&s, model_path);
}

static int teardown(void **state)
{
	(void)state;
	unlink(model_path);
	return 0;
}

static struct gen_generator open_gen_kv(int concurrency, int batch, int threads, int ctx, size_t kv_mem)
{
	struct gen_local_cfg c = { .model = model_path, .threads = threads, .ctx = ctx,
				   .concurrency = concurrency, .batch = batch, .device = DEC_DEV_CPU,
				   .kv_mem = kv_mem };
	struct gen_generator g;
	struct cr_err e;

	cr_err_init(&e);
	if (gen_local_open(&c, &g, &e) != CR_OK)
		fail_msg("gen_local_open: %s", e.msg);
	assert_string_equal(g.kind, "builtin");
	assert_int_equal(g.max_inflight, concurrency ? concurrency : 1);
	return g;
}

static struct gen_generator open_gen(int concurrency, int batch, int threads, int ctx)
{
	return open_gen_kv(concurrency, batch, threads, ctx, 0);
}

static struct gen_req greedy_req(const char *conv, const struct gen_msg *m, int n_msgs,
				 int max_tokens)
{
	struct gen_req rq = { 0 };

	rq.task = "smoke/relu";
	rq.conv = conv;
	rq.msgs = m;
	rq.n_msgs = n_msgs;
	rq.n = 1;
	rq.seed = 1;
	rq.max_tokens = max_tokens;
	rq.temperature = 0;
	rq.top_p = 1;
	return rq;
}

static void complete_ok(struct gen_generator *g, const struct gen_req *rq,
			struct gen_completion *out)
{
	struct cr_err e;

	cr_err_init(&e);
	if (g->complete(g->ctx, rq, out, &e) != CR_OK)
		fail_msg("complete: %s", e.msg);
}

/* ---- byte for byte `crucible generate` ---------------------------------- */

static const char user_prompt[] = "Write smoke/relu for cuda in a ```cuda block.";
static const char system_prompt[] = "You write kernels.";

static enum cr_status fake_list(void *ctx, const char *sets, char ***names, size_t *n,
				struct cr_err *err)
{
	(void)ctx;
	(void)err;
	assert_string_equal(sets, "smoke");
	*names = malloc(sizeof **names);
	(*names)[0] = strdup("smoke/relu");
	*n = 1;
	return CR_OK;
}

static char *fake_prompt(void *ctx, const char *task, const char *backend, struct cr_err *err)
{
	(void)ctx;
	(void)err;
	assert_string_equal(task, "smoke/relu");
	assert_string_equal(backend, "cuda");
	return strdup(user_prompt);
}

static const struct dec_task_source fake = { .list = fake_list, .prompt = fake_prompt };

/* Sample i of generate's output in dir against completion c. */
static void expect_generated(const char *dir, int i, const struct gen_completion *c)
{
	char path[512];
	size_t len;
	char *txt;
	json_t *j;
	json_error_t je;

	snprintf(path, sizeof path, "%s/smoke/relu_s%d.txt", dir, i);
	txt = tiny_slurp(path, &len);
	assert_non_null(txt);
	if (len != c->len || memcmp(txt, c->text, len))
		fail_msg("sample %d: %zu bytes from generate, %zu from the generator", i, len, c->len);
	free(txt);
	snprintf(path, sizeof path, "%s/smoke/relu_s%d.json", dir, i);
	j = json_load_file(path, 0, &je);
	assert_non_null(j);
#define FIELD(k) json_integer_value(json_object_get(j, k))
	assert_int_equal(FIELD("prompt_tokens"), c->prompt_tokens);
	assert_int_equal(FIELD("completion_tokens"), c->completion_tokens);
	assert_int_equal(FIELD("reasoning_tokens"), c->reasoning_tokens);
#undef FIELD
	assert_string_equal(json_string_value(json_object_get(j, "finish_reason")), c->finish);
	json_decref(j);
}

static void test_same_as_generate(void **state)
{
	char dir[256];
	char *argv[] = { "generate", "--model", model_path, "--tasks", "smoke", "--n", "3", "--batch", "2",
			 "--max-tokens", "24", "--seed", "5", "--temperature", "0.8", "--top-p", "0.95",
			 "--system", (char *)system_prompt, "--out", dir, "--threads", "1" };
	const struct gen_msg msgs[] = { { "system", system_prompt }, { "user", user_prompt } };
	struct gen_completion out[3];
	struct gen_req rq = { 0 };
	struct gen_generator g;
	size_t total = 0;

	(void)state;
	tiny_tmpname(dir, sizeof dir, "_gen");
	assert_int_equal(dec_generate_main((int)(sizeof argv / sizeof argv[0]), argv, &fake), 0);

	rq.task = "smoke/relu";
	rq.msgs = msgs;
	rq.n_msgs = 2;
	rq.n = 3;
	rq.seed = 5;
	rq.max_tokens = 24;
	rq.temperature = 0.8f;
	rq.top_p = 0.95f;
	/* the same batches as generate, then other batches and threads */
	for (int v = 0; v < 2; v++) {
		g = open_gen(2, v ? 3 : 2, v ? 1 : 2, 0);
		complete_ok(&g, &rq, out);
		for (int i = 0; i < 3; i++) {
			expect_generated(dir, i, &out[i]);
			assert_true(out[i].gen_s > 0);
			total += out[i].len;
		}
		/* one prefill for the three */
		assert_int_equal(out[0].prefill_tokens, out[0].prompt_tokens);
		assert_int_equal(out[1].prefill_tokens, 0);
		assert_int_equal(out[2].prefill_tokens, 0);
		assert_false(out[0].len == out[1].len && !memcmp(out[0].text, out[1].text, out[0].len) &&
			     out[1].len == out[2].len && !memcmp(out[1].text, out[2].text, out[1].len));
		for (int i = 0; i < 3; i++)
			gen_completion_release(&out[i]);
		/* samples 1 and 2 again: the prefix cache holds the prompt, one token is computed */
		rq.sample0 = 1;
		rq.n = 2;
		complete_ok(&g, &rq, out);
		expect_generated(dir, 1, &out[0]);
		expect_generated(dir, 2, &out[1]);
		assert_int_equal(out[0].prefill_tokens, 1);
		gen_completion_release(&out[0]);
		gen_completion_release(&out[1]);
		rq.sample0 = 0;
		rq.n = 3;
		g.release(g.ctx);
	}
	assert_true(total > 0); /* the comparison saw text */
}

/* ---- conversations ------------------------------------------------------ */

/* A greedy turn computed with the decoder alone: the prompt's ids, the
 * generated ids and the text. */
struct turn {
	int32_t *prompt;
	size_t n_prompt;
	int32_t *gen;
	int n_gen;
	char *text;
	size_t len;
};

static void ref_turn(const struct gen_msg *m, int n, int max_tokens, struct turn *t)
{
	struct dec_model *mod;
	struct dec_tok *tok;
	struct dec_state *s;
	struct dec_chat_msg cm[16];
	struct dec_gen_params p = { .max_tokens = max_tokens, .samp = { 0, 0, 1, 0 }, .seed = 1,
				    .task = "smoke/relu" };
	struct dec_gen_out o;
	struct cr_err e;
	char *chat;

	cr_err_init(&e);
	assert_true(n <= 16);
	for (int i = 0; i < n; i++)
		cm[i] = (struct dec_chat_msg){ m[i].role, m[i].content };
	assert_int_equal(dec_model_open(model_path, &mod, &e), CR_OK);
	assert_int_equal(dec_vocab_tokenizer(mod->gguf, &tok, &e), CR_OK);
	assert_int_equal(dec_chat_format_msgs(tok, cm, n, &chat, &e), CR_OK);
	assert_int_equal(dec_tok_encode(tok, chat, strlen(chat), 1, 0, &t->prompt, &t->n_prompt, &e),
			 CR_OK);
	assert_int_equal(dec_state_new(mod, mod->cfg.ctx_len, 64, 1, &s, &e), CR_OK);
	assert_int_equal(dec_generate(s, tok, t->prompt, (int)t->n_prompt, NULL, &p, &o, &e), CR_OK);
	t->gen = malloc((size_t)(o.n_tokens + 1) * sizeof *t->gen);
	memcpy(t->gen, o.tokens, (size_t)o.n_tokens * sizeof *t->gen);
	t->n_gen = o.n_tokens;
	t->text = malloc(o.text_len + 1);
	memcpy(t->text, o.text, o.text_len + 1);
	t->len = o.text_len;
	dec_gen_out_release(&o);
	dec_state_free(s);
	free(chat);
	dec_tok_free(tok);
	dec_model_free(mod);
}

static void turn_release(struct turn *t)
{
	free(t->prompt);
	free(t->gen);
	free(t->text);
}

/* The tokens computed for prompt `next` by an engine whose prefix cache
 * holds every turn of kept[] (its prompt and its fed-back tokens: all
 * generated but the last): n minus the longest common prefix with any of
 * them, at least 1 (the last prompt token gives the logits). */
static int expected_prefill(const struct turn *const *kept, int n_kept, const struct turn *next)
{
	int n = (int)next->n_prompt, best = 0;

	for (int k = 0; k < n_kept; k++) {
		const struct turn *t = kept[k];
		int lcp = 0, fed = t->n_gen > 0 ? t->n_gen - 1 : 0, nk = (int)t->n_prompt + fed;

		while (lcp < nk && lcp < n - 1) {
			int32_t id = lcp < (int)t->n_prompt ? t->prompt[lcp] : t->gen[lcp - (int)t->n_prompt];

			if (id != next->prompt[lcp])
				break;
			lcp++;
		}
		best = lcp > best ? lcp : best;
	}
	return n - best;
}

/* c came from the generator with its cache; t is the decoder's own turn. */
static void expect_turn(const struct gen_completion *c, const struct turn *t)
{
	assert_int_equal(c->prompt_tokens, (int)t->n_prompt);
	assert_int_equal(c->completion_tokens, t->n_gen);
	assert_int_equal(c->len, t->len);
	assert_memory_equal(c->text, t->text, c->len);
}

#define MAXT 16

static void test_conv_reuse(void **state)
{
	struct gen_generator g = open_gen(2, 2, 2, 0), fresh;
	struct gen_msg a[5] = { { "system", system_prompt }, { "user", "Write a relu kernel." } };
	struct gen_msg b[2] = { { "system", system_prompt }, { "user", "Write a gelu kernel, please." } };
	struct gen_msg a5[6];
	struct gen_completion a1, a2, a3, b1, f;
	struct turn ta1, ta2, ta3, tb1;
	struct gen_req rq;
	struct dec_model *mod;
	struct cr_err e;
	size_t bb;
	int small;

	(void)state;
	/* turn 1: nothing cached, the whole prompt computed */
	ref_turn(a, 2, MAXT, &ta1);
	rq = greedy_req("A", a, 2, MAXT);
	complete_ok(&g, &rq, &a1);
	expect_turn(&a1, &ta1);
	assert_int_equal(a1.prefill_tokens, a1.prompt_tokens);

	/* turn 2: only what follows the common prefix */
	a[2] = (struct gen_msg){ "assistant", a1.text };
	a[3] = (struct gen_msg){ "user", "Make it faster." };
	ref_turn(a, 4, MAXT, &ta2);
	rq = greedy_req("A", a, 4, MAXT);
	complete_ok(&g, &rq, &a2);
	expect_turn(&a2, &ta2);
	assert_true(a2.prefill_tokens < a2.prompt_tokens);
	assert_int_equal(a2.prefill_tokens, expected_prefill((const struct turn *[]){ &ta1 }, 1, &ta2));
	assert_true(a2.prefill_tokens <= a2.prompt_tokens - (int)ta1.n_prompt);
	/* a fresh generator gives the same tokens, computing everything */
	fresh = open_gen(1, 1, 1, 0);
	rq = greedy_req(NULL, a, 4, MAXT);
	complete_ok(&fresh, &rq, &f);
	assert_int_equal(f.len, a2.len);
	assert_memory_equal(f.text, a2.text, f.len);
	assert_int_equal(f.completion_tokens, a2.completion_tokens);
	assert_string_equal(f.finish, a2.finish);
	assert_int_equal(f.prefill_tokens, f.prompt_tokens);
	gen_completion_release(&f);
	fresh.release(fresh.ctx);

	/* another conversation: it shares the system prompt's tokens */
	ref_turn(b, 2, MAXT, &tb1);
	rq = greedy_req("B", b, 2, MAXT);
	complete_ok(&g, &rq, &b1);
	expect_turn(&b1, &tb1);
	assert_int_equal(b1.prefill_tokens, expected_prefill((const struct turn *[]){ &ta1, &ta2 }, 2, &tb1));
	assert_true(b1.prefill_tokens < b1.prompt_tokens);
	/* turn 3 of A: A's blocks are still cached beside B's */
	a[4] = (struct gen_msg){ "assistant", a2.text };
	memcpy(a5, a, sizeof a);
	a5[5] = (struct gen_msg){ "user", "Now vectorise it." };
	ref_turn(a5, 6, MAXT, &ta3);
	rq = greedy_req("A", a5, 6, MAXT);
	complete_ok(&g, &rq, &a3);
	expect_turn(&a3, &ta3);
	assert_int_equal(a3.prefill_tokens,
			 expected_prefill((const struct turn *[]){ &ta1, &ta2, &tb1 }, 3, &ta3));
	assert_true(a3.prefill_tokens < expected_prefill((const struct turn *[]){ &tb1 }, 1, &ta3));
	/* end_conv forgets nothing the cache needs; the same request again
	 * computes only its last prompt token */
	g.end_conv(g.ctx, "A");
	g.end_conv(g.ctx, "never-seen");
	complete_ok(&g, &rq, &f);
	expect_turn(&f, &ta3);
	assert_int_equal(f.prefill_tokens, 1);
	gen_completion_release(&f);
	g.release(g.ctx);

	/* a KV cache of one turn and a bit: B's turn evicts A's blocks (least
	 * recently used), so A's turn 2 computes more, with the same tokens */
	cr_err_init(&e);
	assert_int_equal(dec_model_open(model_path, &mod, &e), CR_OK);
	bb = dec_be_block_bytes(mod, 16);
	dec_model_free(mod);
	small = ((int)ta1.n_prompt + MAXT + 15) / 16 + 2;
	g = open_gen_kv(1, 1, 2, 0, (size_t)small * bb);
	rq = greedy_req("A", a, 2, MAXT);
	complete_ok(&g, &rq, &f);
	expect_turn(&f, &ta1);
	gen_completion_release(&f);
	rq = greedy_req("B", b, 2, MAXT);
	complete_ok(&g, &rq, &f);
	expect_turn(&f, &tb1);
	gen_completion_release(&f);
	rq = greedy_req("A", a, 4, MAXT);
	complete_ok(&g, &rq, &f);
	expect_turn(&f, &ta2);
	assert_true(f.prefill_tokens > expected_prefill((const struct turn *[]){ &ta1 }, 1, &ta2));
	assert_true(f.prefill_tokens <= f.prompt_tokens);
	gen_completion_release(&f);
	g.release(g.ctx);

	gen_completion_release(&a1);
	gen_completion_release(&a2);
	gen_completion_release(&a3);
	gen_completion_release(&b1);
	turn_release(&ta1);
	turn_release(&ta2);
	turn_release(&ta3);
	turn_release(&tb1);
}

/* ---- pause -------------------------------------------------------------- */

struct bg {
	struct gen_generator *g;
	struct gen_req rq;
	struct gen_completion out;
	enum cr_status st;
	int done; /* atomic */
};

static void *bg_main(void *arg)
{
	struct bg *b = arg;
	struct cr_err e;

	cr_err_init(&e);
	b->st = b->g->complete(b->g->ctx, &b->rq, &b->out, &e);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static double mono_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* 200 ms paused: no wait point passed, the request still running, and the
 * process spends (almost) no CPU time. */
static void expect_still(struct gen_generator *g, struct bg *b)
{
	uint64_t p0 = gen_local_progress(g);
	double c0 = mono_s(CLOCK_PROCESS_CPUTIME_ID), c1;

	sleep_ms(200);
	c1 = mono_s(CLOCK_PROCESS_CPUTIME_ID);
	assert_int_equal(gen_local_progress(g), p0);
	assert_false(__atomic_load_n(&b->done, __ATOMIC_ACQUIRE));
	if (c1 - c0 > 0.05)
		fail_msg("%.3f s of CPU time in 200 ms paused", c1 - c0);
}

#define PAUSE_TOKENS 480 /* the search: a greedy prompt that does not end early */
#define PAUSE_LONG 3000  /* the paused request: long enough to be caught running */

static void test_pause(void **state)
{
	struct gen_generator g = open_gen(0, 1, 1, 4096); /* beyond the model's 512: tokens to spare */
	struct gen_msg m[1] = { { "user", NULL } };
	char prompt[64];
	struct gen_completion ref = { 0 };
	struct bg b;
	pthread_t th;
	double t0;
	int found = 0;

	(void)state;
	/* idle: pause returns at once, and resumes */
	g.pause(g.ctx, true);
	g.pause(g.ctx, false);
	/* a greedy prompt that runs to max_tokens, so the request lasts */
	for (int i = 0; i < 64 && !found; i++) {
		struct gen_req rq;

		snprintf(prompt, sizeof prompt, "Count to %d.", i);
		m[0].content = prompt;
		rq = greedy_req(NULL, m, 1, PAUSE_TOKENS);
		gen_completion_release(&ref);
		complete_ok(&g, &rq, &ref);
		found = !strcmp(ref.finish, "length");
	}
	if (!found)
		fail_msg("no prompt ran to %d tokens", PAUSE_TOKENS);
	{
		struct gen_req rq = greedy_req(NULL, m, 1, PAUSE_LONG);

		gen_completion_release(&ref);
		complete_ok(&g, &rq, &ref);
		assert_true(ref.completion_tokens >= PAUSE_TOKENS);
	}

	/* paused during a request */
	memset(&b, 0, sizeof b);
	b.g = &g;
	b.rq = greedy_req(NULL, m, 1, PAUSE_LONG);
	{
		uint64_t p0 = gen_local_progress(&g);

		t0 = mono_s(CLOCK_MONOTONIC);
		assert_int_equal(pthread_create(&th, NULL, bg_main, &b), 0);
		while (gen_local_progress(&g) < p0 + 4 && !__atomic_load_n(&b.done, __ATOMIC_ACQUIRE))
			sleep_ms(1);
	}
	g.pause(g.ctx, true);
	expect_still(&g, &b);
	g.pause(g.ctx, true); /* twice is once */
	g.pause(g.ctx, false);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.st, CR_OK);
	assert_int_equal(b.out.len, ref.len);
	assert_memory_equal(b.out.text, ref.text, ref.len);
	assert_string_equal(b.out.finish, ref.finish);
	assert_true(b.out.gen_s < mono_s(CLOCK_MONOTONIC) - t0 - 0.19);
	gen_completion_release(&b.out);

	/* paused before a request: it waits at its first wait point */
	memset(&b, 0, sizeof b);
	b.g = &g;
	b.rq = greedy_req(NULL, m, 1, PAUSE_LONG);
	g.pause(g.ctx, true);
	assert_int_equal(pthread_create(&th, NULL, bg_main, &b), 0);
	sleep_ms(20);
	expect_still(&g, &b);
	g.pause(g.ctx, false);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.st, CR_OK);
	assert_memory_equal(b.out.text, ref.text, ref.len);
	gen_completion_release(&b.out);

	gen_completion_release(&ref);
	g.release(g.ctx);
}

/* ---- describe and errors ------------------------------------------------ */

/* issue 31: the decoder reports each sample's tokens as they are sampled
 * (from its serving thread), and counts them itself ("decoder") */
struct prog {
	pthread_mutex_t mu;
	int calls, last[2], bad;
};

static void on_prog(void *pctx, int k, int tokens, size_t bytes)
{
	struct prog *p = pctx;

	(void)bytes;
	pthread_mutex_lock(&p->mu);
	p->calls++;
	if (k < 0 || k > 1 || tokens < p->last[k])
		p->bad++;
	else
		p->last[k] = tokens;
	pthread_mutex_unlock(&p->mu);
}

static void test_progress(void **state)
{
	struct gen_generator g = open_gen(1, 2, 1, 0);
	const struct gen_msg m[] = { { "user", "Write relu." } };
	struct gen_req rq = greedy_req(NULL, m, 1, 12);
	struct gen_completion out[2] = { { 0 } };
	struct prog p = { .mu = PTHREAD_MUTEX_INITIALIZER };

	(void)state;
	rq.n = 2;
	rq.temperature = 1;
	rq.on_progress = on_prog;
	rq.pctx = &p;
	complete_ok(&g, &rq, out);
	assert_int_equal(p.bad, 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(p.last[k], out[k].completion_tokens);
		assert_string_equal(out[k].count_src, "decoder");
		assert_int_equal(out[k].usage_tokens, -1);
		assert_int_equal(out[k].lost_tokens, 0);
	}
	/* one call per token at most, and more than one for a sample of many */
	assert_true(p.calls >= 2 && p.calls <= out[0].completion_tokens + out[1].completion_tokens);
	assert_true(out[0].completion_tokens > 1 || out[1].completion_tokens > 1);
	for (int k = 0; k < 2; k++)
		gen_completion_release(&out[k]);
	g.release(g.ctx);
}

static void test_describe(void **state)
{
	struct gen_generator g = open_gen(1, 1, 1, 0);
	json_t *j = g.describe(g.ctx);
	size_t len;
	char *file = tiny_slurp(model_path, &len), hex[65];

	(void)state;
	assert_non_null(file);
	cr_sha256_hex(file, len, hex);
	free(file);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "builtin");
	assert_string_equal(json_string_value(json_object_get(j, "model")), model_path);
	assert_string_equal(json_string_value(json_object_get(j, "model_sha256")), hex);
	assert_int_equal(strlen(hex), 64);
	assert_string_equal(json_string_value(json_object_get(j, "arch")), "qwen2");
	assert_string_equal(json_string_value(json_object_get(j, "chat_template")), "chatml");
	assert_int_equal(json_integer_value(json_object_get(j, "ctx")), 512); /* the model's */
	json_decref(j);
	g.release(g.ctx);
}

static void expect_open_error(const char *path, enum cr_status want, const char *needle)
{
	struct gen_local_cfg c = { .model = path, .threads = 1, .concurrency = 1, .batch = 1,
				   .device = DEC_DEV_CPU };
	struct gen_generator g;
	struct cr_err e;

	cr_err_init(&e);
	assert_int_equal(gen_local_open(&c, &g, &e), want);
	if (!strstr(e.msg, path) || (needle && !strstr(e.msg, needle)))
		fail_msg("'%s' does not name %s (%s)", e.msg, path, needle ? needle : "");
}

static void test_errors(void **state)
{
	char path[256];
	FILE *f;
	struct tiny_spec s;
	struct gen_generator g;
	struct gen_completion out = { 0 };
	struct gen_req rq;
	struct cr_err e;
	char *big = malloc(4096);
	const struct gen_msg ends_assistant[] = { { "user", "A" }, { "assistant", "B" } };
	struct gen_msg m[1] = { { "user", big } };

	(void)state;
	tiny_tmpname(path, sizeof path, ".gguf");
	expect_open_error(path, CR_EINPUT, NULL); /* missing */
	f = fopen(path, "wb");
	assert_non_null(f);
	fputs("this is not a GGUF file, only some text that is long enough", f);
	fclose(f);
	expect_open_error(path, CR_EINPUT, NULL);
	tiny_spec_default(&s, "qwen2", DEC_T_F32);
	s.no_vocab = 1;
	assert_int_equal(tiny_model_write(&s, path), 0);
	expect_open_error(path, CR_EINPUT, "tokenizer");
	unlink(path);

	/* a prompt beyond the context (64 here) names the task and the sizes */
	g = open_gen(1, 1, 1, 64);
	memset(big, 'x', 4095);
	big[4095] = 0;
	for (int i = 0; i < 4095; i += 3)
		big[i] = ' ';
	rq = greedy_req("A", m, 1, 8);
	cr_err_init(&e);
	assert_int_equal(g.complete(g.ctx, &rq, &out, &e), CR_EUSAGE);
	assert_non_null(strstr(e.msg, "smoke/relu"));
	assert_non_null(strstr(e.msg, "does not fit the context of 64"));
	assert_null(out.text);
	rq = greedy_req(NULL, ends_assistant, 2, 8);
	cr_err_init(&e);
	assert_int_equal(g.complete(g.ctx, &rq, &out, &e), CR_EUSAGE);
	assert_non_null(strstr(e.msg, "expected user"));
	/* still usable; a completion that reaches the context ends there */
	big[30] = 0;
	rq = greedy_req("A", m, 1, 200);
	complete_ok(&g, &rq, &out);
	assert_true(out.prompt_tokens < 64);
	assert_true(out.prompt_tokens + out.completion_tokens <= 65);
	assert_true(!strcmp(out.finish, "context") || !strcmp(out.finish, "eog"));
	gen_completion_release(&out);
	g.release(g.ctx);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_generate),
		cmocka_unit_test(test_conv_reuse),
		cmocka_unit_test(test_pause),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
