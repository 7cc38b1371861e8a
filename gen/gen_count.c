/* gen_count.c — the endpoint generator's token counts: a GGUF file's
 * tokenizer, the server's usage read honestly when no tokenizer counts, the
 * cross-check of counted tokens against usage, and the statistics run.json
 * keeps of both.
 *
 * Usage without a tokenizer. Servers differ: llama.cpp's server reports
 * usage.completion_tokens U of ONE choice when n > 1 (streaming, a usage
 * chunk for each choice: then every choice has its own, "usage"), vLLM and
 * OpenAI the sum over all choices, some none. With n = 1 U is the count
 * ("usage").
 * With n > 1 the reading is decided from facts ("usage-split"):
 * - a streamed answer whose text chunks sum to U, or whose one choice's
 *   chunks are U, sends one token a chunk (llama.cpp's server, vLLM): each
 *   choice's chunks are its tokens, exactly; otherwise
 * - a choice that finished by "length" generated exactly max_tokens M
 *   tokens (L such choices): U < L*M cannot be the sum, U > M cannot be one
 *   choice's;
 * - when both readings are possible, the one whose tokens per byte (U over
 *   all the text bytes, or over one choice's mean bytes) is nearer 0.35 (in
 *   ratio: BPE tokenizers give 0.25-0.35 on code and English; the reading is
 *   right for any true ratio r with 0.35/sqrt(n) < r <= 0.35*sqrt(n)) wins.
 * Read as the sum: the length choices get M each and the rest is split by
 * text bytes (largest remainders, so the parts sum to U); with no length
 * choice, a reported reasoning total R is split by reasoning bytes and the
 * rest by content bytes. Read as one choice's: the length choices get M and
 * every other choice U scaled by its bytes over their mean bytes. A choice's
 * reasoning is its share of its own tokens by bytes (R itself with n = 1),
 * -1 when the server reports none and the choice has reasoning. No usage:
 * a quarter of the bytes ("estimate"). */
#include "gen/gen_http_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode/model/dec_vocab.h"
#include "decode/model/gguf.h"
#include "decode/tok/dec_tok.h"

#define TOKENS_PER_BYTE 0.35

void gen_count_stats_init(struct gen_count_stats *s)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	s->worst_req = -1;
}

json_t *gen_count_stats_json(struct gen_count_stats *s)
{
	json_t *j, *w = json_null();

	pthread_mutex_lock(&s->lock);
	if (s->worst_req >= 0)
		w = json_pack("{s:I, s:s, s:I, s:I}", "request", (json_int_t)s->worst_req, "id",
			      s->worst_id, "usage", (json_int_t)s->worst_usage, "counted",
			      (json_int_t)s->worst_count);
	j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		      "requests", (json_int_t)s->requests,
		      "usage_matched_sum", (json_int_t)s->matched_sum,
		      "usage_matched_one_choice", (json_int_t)s->matched_one,
		      "usage_absent", (json_int_t)s->absent,
		      "usage_disagreed", (json_int_t)s->disagreed,
		      "worst_disagreement", w ? w : json_null(),
		      "usage_read_as_sum", (json_int_t)s->split_all,
		      "usage_read_as_one_choice", (json_int_t)s->split_one,
		      "usage_per_choice", (json_int_t)s->per_choice,
		      "estimated", (json_int_t)s->estimated,
		      "tokenizer_failed", (json_int_t)s->tok_failed,
		      "retries", (json_int_t)s->retries,
		      "lost_tokens", (json_int_t)s->lost_tokens,
		      "raised_to_stream_or_usage", (json_int_t)s->floored);
	pthread_mutex_unlock(&s->lock);
	return j;
}

enum cr_status gen_count_gguf_open(const char *path, void **tok, struct cr_err *err)
{
	struct dec_gguf *g = NULL;
	struct dec_tok *t = NULL;
	enum cr_status st = dec_gguf_open(path, &g, err);

	*tok = NULL;
	if (!st)
		st = dec_vocab_tokenizer(g, &t, err);
	dec_gguf_free(g);    /* the tokenizer copied what it needs */
	*tok = t;
	return st;
}

void gen_count_gguf_free(void *tok)
{
	dec_tok_free(tok);
}

long gen_count_gguf(void *tok, const char *text, size_t len)
{
	int32_t *ids = NULL;
	size_t n = 0;
	struct cr_err err;

	cr_err_init(&err);
	if (!len)
		return 0;
	if (dec_tok_encode(tok, text, len, 1, 0, &ids, &n, &err))
		return -1;
	free(ids);
	return (long)n;
}

/* A non-negative integer field of o (capped at INT32_MAX), -1 when absent. */
static long long count_of(json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
	json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
	return x < 0 ? -1 : x > INT32_MAX ? INT32_MAX : x;
}

/* part[k] = total split in proportion to w[k] over the k with use[k] (all
 * when use is NULL), equal parts when those weights are all 0; leftover
 * units to the largest remainders, ties to the lower index. */
static void split(long long total, const size_t *w, const bool *use, int n, long long *part)
{
	unsigned long long W = 0, given = 0, m = 0;
	unsigned long long *rem = calloc((size_t)n, sizeof *rem);

	if (!rem)
		return;
	for (int k = 0; k < n; k++)
		if (!use || use[k]) {
			W += w[k];
			m++;
		}
	if (total < 0)
		total = 0;
	for (int k = 0; k < n; k++) {
		unsigned long long wk, ww, num;
		if (use && !use[k])
			continue;
		wk = W ? w[k] : 1;
		ww = W ? W : m;
		num = (unsigned long long)total * wk;
		part[k] = (long long)(num / ww);
		rem[k] = num % ww + 1;   /* +1: a used slot beats an unused one */
		given += (unsigned long long)part[k];
	}
	for (; m && given < (unsigned long long)total; given++) {
		int best = -1;
		for (int k = 0; k < n; k++)
			if (rem[k] && (best < 0 || rem[k] > rem[best]))
				best = k;
		if (best < 0)
			break;
		part[best]++;
		rem[best] = 1;
	}
	free(rem);
}

struct bytes {
	size_t *r, *c, *t;        /* [n] reasoning, content, both */
};

static void choice_bytes(const struct gen_ans *a, const struct bytes *b)
{
	for (int k = 0; k < a->n; k++) {
		const struct gen_choice *c = &a->c[k];
		size_t rl = c->reasoning.len;
		size_t inl = rl ? 0 : gen_inline_reasoning(c->content.p ? c->content.p : "",
							   c->content.len);
		b->r[k] = rl ? rl : inl;
		b->c[k] = c->content.len - inl;
		b->t[k] = b->r[k] + b->c[k];
	}
}

/* Read as one choice's (true) or the sum (false). */
static bool read_as_one(long long U, int max_tokens, const struct gen_ans *a,
			const struct bytes *b)
{
	int n = a->n, L = 0;
	long long M = max_tokens;
	bool can_sum, can_one;
	double tb = 0;

	for (int k = 0; k < n; k++) {
		L += M > 0 && !strcmp(a->c[k].finish, "length");
		tb += (double)b->t[k];
	}
	can_sum = M <= 0 || (U >= L * M && (L < n || llabs(U - n * M) <= n));
	can_one = M <= 0 || (U <= M && (L < n || llabs(U - M) <= 1));
	if (can_sum != can_one)
		return can_one;
	if (tb <= 0 || U <= 0)
		return false;
	/* nearer TOKENS_PER_BYTE in ratio */
	return fabs(log(U / (tb / n) / TOKENS_PER_BYTE)) < fabs(log(U / tb / TOKENS_PER_BYTE));
}

/* Whether a's stream chunks are its tokens: every choice streamed, and the
 * chunks sum to U ('s') or one choice's chunks are U ('o', llama.cpp's
 * server), U over 1 so an empty stream proves nothing. A server that sends
 * several tokens in a chunk (a held-back stop string, a split UTF-8
 * character) fails the test and is read from bytes. */
static bool chunks_are_tokens(const struct gen_ans *a, long long U, int *rc)
{
	long long sum = 0;
	bool one = false;

	for (int k = 0; k < a->n; k++) {
		const struct gen_choice *c = &a->c[k];
		if (!c->chunks && (c->content.len || c->reasoning.len))
			return false;
		sum += c->chunks;
		one |= c->chunks == U;
	}
	if (U <= 1 || !sum)
		return false;
	*rc = sum == U ? 's' : one ? 'o' : 0;
	return *rc != 0;
}

int gen_count_from_usage(const struct gen_ans *a, int max_tokens, struct gen_completion *out)
{
	int n = a->n, rc;
	long long U = count_of(a->usage, "completion_tokens");
	long long R = count_of(json_object_get(a->usage, "completion_tokens_details"),
			       "reasoning_tokens");
	struct bytes b = { calloc((size_t)n, sizeof *b.r), calloc((size_t)n, sizeof *b.c),
			   calloc((size_t)n, sizeof *b.t) };
	long long *part = calloc((size_t)n, sizeof *part), *tk = calloc((size_t)n, sizeof *tk);
	bool *use = calloc((size_t)n, sizeof *use);

	if (!b.r || !b.c || !b.t || !part || !tk || !use) {
		rc = 'e';
		for (int k = 0; k < n; k++) {
			out[k].completion_tokens = (int)((a->c[k].content.len +
							  a->c[k].reasoning.len + 3) / 4);
			out[k].reasoning_tokens = -1;
			snprintf(out[k].count_src, sizeof out[k].count_src, "estimate");
		}
		goto out;
	}
	choice_bytes(a, &b);
	if (U >= 0 && R > U)
		R = U;
	for (int k = 0; k < n; k++)
		out[k].reasoning_tokens = b.r[k] ? -1 : 0;
	for (int k = 0; k < n; k++)
		if (a->c[k].usage_c < 0)
			break;
		else if (k == n - 1 && n > 1) {
			rc = 'p';   /* every choice its own usage (llama.cpp's stream) */
			for (int j = 0; j < n; j++) {
				const struct gen_choice *c = &a->c[j];
				out[j].completion_tokens = (int)c->usage_c;
				if (c->usage_r >= 0)
					out[j].reasoning_tokens = (int)(c->usage_r < c->usage_c
									? c->usage_r : c->usage_c);
				snprintf(out[j].count_src, sizeof out[j].count_src, "usage");
			}
			goto out;
		}
	if (U < 0) {
		rc = 'e';
		for (int k = 0; k < n; k++) {
			out[k].completion_tokens = (int)((b.t[k] + 3) / 4);
			out[k].reasoning_tokens = (int)((b.r[k] + 3) / 4);
		}
	} else if (n == 1) {
		rc = 'u';
		out[0].completion_tokens = (int)U;
		if (R >= 0)
			out[0].reasoning_tokens = (int)R;
	} else if (chunks_are_tokens(a, U, &rc)) {
		/* a streamed answer whose chunks add up to usage (the sum, or one
		 * choice's): one token a chunk, each choice counted exactly */
		for (int k = 0; k < n; k++) {
			const struct gen_choice *c = &a->c[k];
			out[k].completion_tokens = c->chunks;
			if (b.r[k] && (R >= 0 || !b.c[k]))
				out[k].reasoning_tokens = (int)llround(
					(double)c->chunks * (double)b.r[k] / (double)b.t[k]);
		}
	} else {
		long long M = max_tokens, L = 0;
		bool one = read_as_one(U, max_tokens, a, &b);
		rc = one ? 'o' : 's';
		for (int k = 0; k < n; k++) {
			use[k] = !(M > 0 && !strcmp(a->c[k].finish, "length"));
			L += !use[k];
			tk[k] = use[k] ? 0 : M;
		}
		if (!one && !L && R >= 0) {
			/* the sum, reasoning reported: R by reasoning bytes, the rest by content */
			split(R, b.r, NULL, n, part);
			for (int k = 0; k < n; k++)
				out[k].reasoning_tokens = (int)part[k];
			split(U - R, b.c, NULL, n, part);
			for (int k = 0; k < n; k++)
				tk[k] = out[k].reasoning_tokens + part[k];
		} else {
			long long rest = one ? U * (n - L) : U - L * M;
			if (L < n)
				split(rest, b.t, use, n, part);
			for (int k = 0; k < n; k++)
				if (use[k])
					tk[k] = part[k];
			for (int k = 0; k < n; k++)
				if (b.r[k] && (R >= 0 || b.c[k] == 0))
					out[k].reasoning_tokens = (int)llround(
						(double)tk[k] * (double)b.r[k] / (double)b.t[k]);
		}
		for (int k = 0; k < n; k++)
			out[k].completion_tokens = (int)(tk[k] > INT32_MAX ? INT32_MAX : tk[k]);
	}
	for (int k = 0; k < n; k++)
		snprintf(out[k].count_src, sizeof out[k].count_src, "%s",
			 rc == 'e' ? "estimate" : rc == 'u' ? "usage" : "usage-split");
out:
	free(b.r);
	free(b.c);
	free(b.t);
	free(part);
	free(tk);
	free(use);
	return rc;
}

void gen_count_prompt(const struct gen_ans *a, struct gen_completion *out)
{
	long long P = count_of(a->usage, "prompt_tokens");
	long long U = count_of(a->usage, "completion_tokens");
	long long cached = count_of(json_object_get(a->usage, "prompt_tokens_details"),
				    "cached_tokens");

	for (int k = 0; k < a->n; k++) {
		out[k].prompt_tokens = (int)P;
		out[k].prefill_tokens = P < 0 || cached < 0 ? -1
			: k || cached > P ? 0 : (int)(P - cached);
		out[k].usage_tokens = (int)U;
	}
}

/* Counts of n tokens re-tokenized from text may differ from the sampled
 * ones by a token or so a choice (an end-of-generation token the text does
 * not hold, a merge across a chunk boundary). */
static bool near(long long u, long long c, int n)
{
	return llabs(u - c) <= n + c / 50;
}

int gen_count_floor(struct gen_count_stats *s, const struct gen_ans *a, struct gen_completion *out)
{
	long long U = count_of(a->usage, "completion_tokens");
	int raised = 0;
	bool own = true;   /* every choice had its own usage chunk (llama.cpp's stream) */

	for (int k = 0; k < a->n; k++)
		own &= a->c[k].usage_c >= 0;
	for (int k = 0; k < a->n; k++) {
		const struct gen_choice *c = &a->c[k];
		long long f = c->chunks, have = out[k].completion_tokens;
		const char *src = "chunks";
		if (own && c->usage_c > f) {
			f = c->usage_c;
			src = "usage";
		}
		if (a->n == 1 && U > f) {
			f = U;
			src = "usage";
		}
		if (have < 0 || (f > have && !near(f, have, 1))) {
			out[k].completion_tokens = (int)(f > INT32_MAX ? INT32_MAX : f);
			snprintf(out[k].count_src, sizeof out[k].count_src, "%s", src);
			raised++;
		}
	}
	/* n > 1: the choices hold U tokens at least whether usage counts all
	 * of them or one (llama.cpp's server): a sum short of it beyond the
	 * slack is topped up by the choices' text bytes */
	if (a->n > 1 && U > 0) {
		long long S = 0;
		for (int k = 0; k < a->n; k++)
			S += out[k].completion_tokens;
		if (U > S && !near(U, S, a->n)) {
			size_t *w = calloc((size_t)a->n, sizeof *w);
			long long *part = calloc((size_t)a->n, sizeof *part);
			if (w && part) {
				for (int k = 0; k < a->n; k++)
					w[k] = a->c[k].content.len + a->c[k].reasoning.len;
				split(U - S, w, NULL, a->n, part);
				for (int k = 0; k < a->n; k++) {
					long long t = out[k].completion_tokens + part[k];
					if (!part[k])
						continue;
					out[k].completion_tokens = (int)(t > INT32_MAX ? INT32_MAX : t);
					snprintf(out[k].count_src, sizeof out[k].count_src, "usage");
				}
				raised++;
			}
			free(w);
			free(part);
		}
	}
	if (raised) {
		pthread_mutex_lock(&s->lock);
		s->floored++;
		pthread_mutex_unlock(&s->lock);
	}
	return raised;
}

int gen_count_check(struct gen_count_stats *s, const struct gen_ans *a,
		    const struct gen_completion *out, const char *id)
{
	long long U = count_of(a->usage, "completion_tokens"), S = 0;
	int rc;

	for (int k = 0; k < a->n; k++)
		S += out[k].completion_tokens;
	if (U < 0) {
		rc = 'a';
	} else if (near(U, S, a->n)) {
		rc = 's';
	} else {
		rc = 'd';
		for (int k = 0; k < a->n && a->n > 1; k++)
			if (near(U, out[k].completion_tokens, 1))
				rc = 'o';
	}
	pthread_mutex_lock(&s->lock);
	s->requests++;
	s->absent += rc == 'a';
	s->matched_sum += rc == 's';
	s->matched_one += rc == 'o';
	if (rc == 'd') {
		s->disagreed++;
		if (s->worst_req < 0 || llabs(U - S) > labs(s->worst_usage - s->worst_count)) {
			s->worst_req = s->requests - 1;
			snprintf(s->worst_id, sizeof s->worst_id, "%s", id ? id : "");
			s->worst_usage = (long)U;
			s->worst_count = (long)S;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}
