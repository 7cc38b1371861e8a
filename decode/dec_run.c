/* dec_run.c — the generation loop (prefill → sample → append until an
 * end-of-generation token, a stop string, max tokens or a full context),
 * shared option parsing, and UTF-8 repair for JSON output. */
#include "decode/dec_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct textbuf {
	char *p;
	size_t n, cap;
};

static int tb_reserve(struct textbuf *t, size_t more)
{
	if (t->n + more + 1 > t->cap) {
		size_t cap = (t->n + more + 1) * 2;
		char *p = realloc(t->p, cap);

		if (!p)
			return -1;
		t->p = p;
		t->cap = cap;
	}
	return 0;
}

/* Appends the token's text; returns -1 on allocation failure. */
static int append_piece(struct textbuf *t, const struct dec_tok *tok, int32_t id)
{
	size_t n = dec_tok_piece(tok, id, NULL, 0);

	if (tb_reserve(t, n))
		return -1;
	dec_tok_piece(tok, id, t->p + t->n, n + 1);
	t->n += n;
	t->p[t->n] = 0;
	return 0;
}

/* The earliest stop string that now occurs, searching only where a new one
 * can start (from old_len - longest stop + 1); its offset, or -1. */
static long find_stop(const struct textbuf *t, size_t old_len, const struct dec_gen_params *p)
{
	long best = -1;

	for (int k = 0; k < p->n_stops; k++) {
		size_t sl = strlen(p->stops[k]), from = old_len >= sl ? old_len - sl + 1 : 0;
		const char *hit;

		if (!sl)
			continue;
		hit = memmem(t->p + from, t->n - from, p->stops[k], sl);
		if (hit && (best < 0 || hit - t->p < best))
			best = hit - t->p;
	}
	return best;
}

enum cr_status dec_generate(struct dec_state *s, const struct dec_tok *tok,
			    const int32_t *prompt, int n_prompt, const float *prompt_logits,
			    const struct dec_gen_params *p, struct dec_gen_out *out,
			    struct cr_err *err)
{
	struct dec_sampler smp = { 0 };
	struct dec_rng rng;
	struct textbuf tb = { 0 };
	int n_vocab = s->m->cfg.n_vocab, k = p->top_logprobs, cap = p->max_tokens > 0 ? p->max_tokens : 0;
	enum cr_status st;
	double t0;

	memset(out, 0, sizeof *out);
	out->finish = "length";
	if ((st = dec_sampler_init(&smp, &p->samp, n_vocab, err)))
		return st;
	out->tokens = malloc((size_t)(cap ? cap : 1) * sizeof *out->tokens);
	out->top_ids = malloc((size_t)(cap && k ? cap * k : 1) * sizeof *out->top_ids);
	out->top_lp = malloc((size_t)(cap && k ? cap * k : 1) * sizeof *out->top_lp);
	if (!out->tokens || !out->top_ids || !out->top_lp || tb_reserve(&tb, 64)) {
		st = cr_errf(err, CR_ENOMEM, "generate: out of memory");
		goto out;
	}
	tb.p[0] = 0;
	dec_rng_seed(&rng, p->seed, p->task, p->sample);
	t0 = now_s();
	if (prompt_logits) {
		s->pos = n_prompt;
		memcpy(s->logits, prompt_logits, (size_t)n_vocab * sizeof(float));
	} else {
		dec_state_reset(s);
		if (n_prompt > s->max_ctx) {
			st = cr_errf(err, CR_EUSAGE, "prompt of %d tokens exceeds the context (%d)",
				     n_prompt, s->max_ctx);
			goto out;
		}
		if (n_prompt > 0 && (st = dec_forward(s, prompt, n_prompt, NULL, err)))
			goto out;
	}
	out->prefill_s = now_s() - t0;
	t0 = now_s();
	while (out->n_tokens < cap) {
		int32_t id;
		size_t old = tb.n;
		long stop;

		if (n_prompt == 0 && out->n_tokens == 0) {
			st = cr_errf(err, CR_EUSAGE, "generation needs at least one prompt token");
			goto out;
		}
		if (k)
			dec_top_logprobs(s->logits, n_vocab, k, out->top_ids + (size_t)out->n_tokens * k,
					 out->top_lp + (size_t)out->n_tokens * k);
		id = dec_sample(&smp, s->logits, &rng);
		out->tokens[out->n_tokens++] = id;
		if (p->on_token)
			p->on_token(p->ctx, out->n_tokens);
		if (tok && dec_tok_is_eog(tok, id)) {
			out->finish = "eog";
			break;
		}
		if (tok && append_piece(&tb, tok, id)) {
			st = cr_errf(err, CR_ENOMEM, "generate: out of memory");
			goto out;
		}
		if ((stop = find_stop(&tb, old, p)) >= 0) {
			tb.n = (size_t)stop;
			tb.p[tb.n] = 0;
			out->finish = "stop";
			break;
		}
		if (out->n_tokens == cap)
			break;
		if (s->pos >= s->max_ctx) {
			out->finish = "context";
			break;
		}
		if ((st = dec_forward(s, &id, 1, NULL, err)))
			goto out;
	}
	out->decode_s = now_s() - t0;
	out->text = tb.p;
	out->text_len = tb.n;
	tb.p = NULL;
out:
	free(tb.p);
	dec_sampler_release(&smp);
	if (st)
		dec_gen_out_release(out);
	return st;
}

void dec_gen_out_release(struct dec_gen_out *o)
{
	free(o->tokens);
	free(o->top_ids);
	free(o->top_lp);
	free(o->text);
	memset(o, 0, sizeof *o);
}

const char dec_opts_help[] =
	"  --model FILE         GGUF model (llama, qwen2, qwen3; F32 F16 BF16 Q8_0 Q4_0 Q5_0 Q4_K Q6_K)\n"
	"  --max-tokens N       tokens to generate at most\n"
	"  --temperature T      0 = greedy\n"
	"  --top-k K            keep the K most likely tokens (0 = off)\n"
	"  --top-p P            keep the smallest set with mass >= P (1 = off)\n"
	"  --min-p P            keep tokens with prob >= P * max prob (0 = off)\n"
	"  --seed N             RNG seed; sample i of a task draws from (seed, task, i)\n"
	"  --stop TEXT          stop when the text contains TEXT (repeatable, up to 16)\n"
	"  --threads N          worker threads (default: online CPUs, at most 16)\n"
	"  --ctx N              context length (default: prompt + max tokens, capped by the model)\n"
	"Sampling order: temperature, top-k, softmax, top-p, min-p, draw.\n";

static int num(const char *opt, const char *v, double lo, double hi, double *out, struct cr_err *err)
{
	char *end;
	double d;

	errno = 0;
	d = v ? strtod(v, &end) : 0;
	if (!v || errno || end == v || *end || d < lo || d > hi) {
		cr_errf(err, CR_EUSAGE, "%s: expected a number in [%g, %g], got '%s'", opt, lo, hi,
			v ? v : "(nothing)");
		return -1;
	}
	*out = d;
	return 0;
}

int dec_opts_parse(struct dec_opts *o, int argc, char **argv, int *i, struct cr_err *err)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	double d;

	if (!strcmp(a, "--model")) {
		if (!v)
			return cr_errf(err, CR_EUSAGE, "--model: expected a file"), -1;
		o->model = v;
	} else if (!strcmp(a, "--max-tokens")) {
		if (num(a, v, 0, 1 << 24, &d, err))
			return -1;
		o->max_tokens = (int)d;
	} else if (!strcmp(a, "--temperature")) {
		if (num(a, v, 0, 100, &d, err))
			return -1;
		o->samp.temperature = (float)d;
	} else if (!strcmp(a, "--top-k")) {
		if (num(a, v, 0, 1 << 24, &d, err))
			return -1;
		o->samp.top_k = (int)d;
	} else if (!strcmp(a, "--top-p")) {
		if (num(a, v, 0, 1, &d, err))
			return -1;
		o->samp.top_p = (float)d;
	} else if (!strcmp(a, "--min-p")) {
		if (num(a, v, 0, 1, &d, err))
			return -1;
		o->samp.min_p = (float)d;
	} else if (!strcmp(a, "--seed")) {
		char *end;

		errno = 0;
		o->seed = v ? strtoull(v, &end, 0) : 0;
		if (!v || errno || end == v || *end)
			return cr_errf(err, CR_EUSAGE, "--seed: expected an integer, got '%s'", v ? v : ""), -1;
	} else if (!strcmp(a, "--threads")) {
		if (num(a, v, 1, 256, &d, err))
			return -1;
		o->threads = (int)d;
	} else if (!strcmp(a, "--ctx")) {
		if (num(a, v, 1, 1 << 24, &d, err))
			return -1;
		o->ctx = (int)d;
	} else if (!strcmp(a, "--stop")) {
		if (!v || o->n_stops >= 16)
			return cr_errf(err, CR_EUSAGE, "--stop: expected text (at most 16 stops)"), -1;
		o->stops[o->n_stops++] = v;
	} else {
		return 0;
	}
	*i += 1;
	return 1;
}

