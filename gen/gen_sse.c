/* gen_sse.c — an OpenAI-compatible answer as choices: the server-sent
 * events of a streamed chat completion, or a whole chat.completion body.
 *
 * The event stream (the WHATWG rules): lines end with LF, CRLF or CR; a
 * line starting with ':' is a comment; "data:" lines (one space after the
 * colon dropped) are joined with LF into one event, which a blank line
 * ends; other fields are ignored. An event's data is "[DONE]" or a JSON
 * chunk: choices[] of {index, delta: {content, reasoning_content |
 * reasoning}, finish_reason}, and usage (the last chunk, choices empty,
 * when the request asked stream_options.include_usage; llama.cpp's server
 * with n > 1 sends such a chunk after each choice's end: each is kept on
 * the choice that ended last, and the stream's usage is their sum; usage
 * on chunks with choices, vLLM's continuous stats, counts only when no
 * usage-only chunk came). A chunk holding an
 * "error" object ends the try with the error's code and message. A chunk
 * whose choice carries text counts one chunk for that choice: llama.cpp's
 * server and vLLM send one token a chunk, so chunks are the tokens so far
 * that on_progress reports. Text past GEN_RESP_MAX bytes in all is refused. */
#include "gen/gen_http_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sbuf_add(struct gen_sbuf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *q;
		while (cap < b->len + n + 1)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q)
			return -1;
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int gen_ans_init(struct gen_ans *a, int n)
{
	memset(a, 0, sizeof *a);
	a->n = n;
	a->c = calloc((size_t)n, sizeof *a->c);
	a->last_end = -1;
	for (int k = 0; a->c && k < n; k++)
		a->c[k].usage_c = a->c[k].usage_r = -1;
	return a->c ? 0 : -1;
}

void gen_ans_release(struct gen_ans *a)
{
	for (int k = 0; a->c && k < a->n; k++) {
		free(a->c[k].content.p);
		free(a->c[k].reasoning.p);
	}
	free(a->c);
	json_decref(a->usage);
	free(a->err_msg);
	free(a->line.p);
	free(a->data.p);
	memset(a, 0, sizeof *a);
}

bool gen_ans_complete(const struct gen_ans *a)
{
	if (a->done)
		return true;
	for (int k = 0; k < a->n; k++)
		if (!a->c[k].finish[0])
			return false;
	return true;
}

size_t gen_inline_reasoning(const char *s, size_t n)
{
	size_t i = 0;
	const char *end;

	while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
		i++;
	if (n - i < 7 || memcmp(s + i, "<think>", 7))
		return 0;
	end = memmem(s + i + 7, n - i - 7, "</think>", 8);
	return end ? (size_t)(end - (s + i + 7)) : n - i - 7;
}

/* Text into b with every NUL as U+FFFD: a model may sample a byte token
 * <0x00> and a server send it as \u0000, which is valid JSON; the text is
 * a C string from here on (files, prompts), so it never holds a NUL. */
static int sbuf_add_text(struct gen_sbuf *b, const char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		const char *z = memchr(p + i, '\0', n - i);
		size_t k = z ? (size_t)(z - (p + i)) : n - i;
		if (sbuf_add(b, p + i, k))
			return -1;
		i += k;
		if (z) {
			if (sbuf_add(b, "\xEF\xBF\xBD", 3))
				return -1;
			i++;
		}
	}
	return 0;
}

static const char *str_of(json_t *o, const char *key, size_t *len)
{
	json_t *v = json_object_get(o, key);
	*len = json_is_string(v) ? json_string_length(v) : 0;
	return json_is_string(v) ? json_string_value(v) : "";
}

/* One choice object (a chunk's delta or a body's message) into a. */
static int take(struct gen_ans *a, json_t *c, size_t i, const char *field, bool stream)
{
	json_t *m = json_object_get(c, field), *ix = json_object_get(c, "index");
	json_t *fr = json_object_get(c, "finish_reason");
	long long k = json_is_integer(ix) ? json_integer_value(ix) : (long long)i;
	const char *s, *r;
	size_t sl, rl;
	struct gen_choice *ch;

	if (!json_is_object(m) && !stream) {
		snprintf(a->bad, sizeof a->bad, "choices[%zu] has no message", i);
		return -1;
	}
	if (k < 0 || k >= a->n || (!stream && a->c[k].seen)) {
		snprintf(a->bad, sizeof a->bad, "choices[%zu]: index %lld %s (n=%d)", i, k,
			 k >= 0 && k < a->n ? "repeated" : "out of range", a->n);
		return -1;
	}
	ch = &a->c[k];
	ch->seen = true;
	s = str_of(m, "content", &sl);
	r = str_of(m, "reasoning_content", &rl);
	if (!rl)
		r = str_of(m, "reasoning", &rl);
	if (a->bytes + sl + rl > GEN_RESP_MAX) {
		snprintf(a->bad, sizeof a->bad, "the answer is larger than %u MiB",
			 GEN_RESP_MAX >> 20);
		return -1;
	}
	if (sbuf_add_text(&ch->content, s, sl) || sbuf_add_text(&ch->reasoning, r, rl)) {
		snprintf(a->bad, sizeof a->bad, "out of memory");
		return -1;
	}
	a->bytes += sl + rl;
	if (json_is_string(fr)) {
		snprintf(ch->finish, sizeof ch->finish, "%s", json_string_value(fr));
		a->last_end = (int)k;
	}
	if (stream && (sl || rl)) {
		ch->chunks++;
		if (a->on_progress)
			a->on_progress(a->pctx, (int)k, ch->chunks,
				       ch->content.len + ch->reasoning.len);
	}
	return 0;
}

static void take_usage(struct gen_ans *a, json_t *root)
{
	json_t *u = json_object_get(root, "usage");
	if (json_is_object(u)) {
		json_decref(a->usage);
		a->usage = json_incref(u);
	}
}

static long long count_in(json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
	return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

/* A chunk whose choices are empty and that carries usage: the stream's
 * usage, or (llama.cpp's server, n > 1) one choice's, the one that just
 * ended: kept on it, and a->usage becomes the sum of them all. */
static void take_usage_chunk(struct gen_ans *a, json_t *u)
{
	json_t *d = json_object_get(u, "completion_tokens_details");
	long long c = count_in(u, "completion_tokens"), r = count_in(d, "reasoning_tokens");
	bool fresh = a->last_end >= 0 && a->c[a->last_end].usage_c < 0;

	if (fresh) {
		a->c[a->last_end].usage_c = c;
		a->c[a->last_end].usage_r = r;
	}
	/* the sum only of llama.cpp's usage chunk a choice (n > 1, each after a
	 * choice's end); with n = 1, or a chunk no new choice ended before, a
	 * usage chunk repeated (a proxy) replaces the last, never adds */
	if (++a->n_usage == 1 || !a->usage || a->n == 1 || !fresh) {
		json_decref(a->usage);
		a->usage = json_deep_copy(u);
		return;
	}
	if (c >= 0) {
		long long s = count_in(a->usage, "completion_tokens");
		json_object_set_new(a->usage, "completion_tokens",
				    json_integer(s < 0 ? c : s > INT32_MAX - c ? INT32_MAX : s + c));
	}
	if (r >= 0) {
		json_t *sd = json_object_get(a->usage, "completion_tokens_details");
		long long s = count_in(sd, "reasoning_tokens");
		if (!json_is_object(sd))
			json_object_set_new(a->usage, "completion_tokens_details",
					    sd = json_object());
		json_object_set_new(sd, "reasoning_tokens",
				    json_integer(s < 0 ? r : s > INT32_MAX - r ? INT32_MAX : s + r));
	}
}

/* An error object ({"error": {"code", "message"}} or {"error": "text"}). */
static int take_error(struct gen_ans *a, json_t *er)
{
	json_t *m = json_is_object(er) ? json_object_get(er, "message") : er;
	json_t *c = json_is_object(er) ? json_object_get(er, "code") : NULL;

	a->err_code = json_is_integer(c) ? (int)json_integer_value(c) : 0;
	free(a->err_msg);
	a->err_msg = strdup(json_is_string(m) ? json_string_value(m) : "(no message)");
	return -1;
}

static int dispatch(struct gen_ans *a)
{
	json_error_t je;
	json_t *root, *ch, *er;
	char *d = a->data.p ? a->data.p : "";
	size_t n = a->data.len;
	int rc = 0;

	if (n && d[n - 1] == '\n')
		d[--n] = '\0';
	a->data.len = 0;
	a->has_data = false;
	if (n == 6 && !memcmp(d, "[DONE]", 6)) {
		a->done = true;
		return 0;
	}
	root = json_loadb(d, n, JSON_ALLOW_NUL, &je);
	if (!json_is_object(root)) {
		snprintf(a->bad, sizeof a->bad, "a stream event is not a JSON object (%s)",
			 root ? "not an object" : je.text);
		json_decref(root);
		return -1;
	}
	er = json_object_get(root, "error");
	if (er && !json_is_null(er)) {
		rc = take_error(a, er);
		goto out;
	}
	ch = json_object_get(root, "choices");
	for (size_t i = 0; i < json_array_size(ch) && !rc; i++)
		rc = take(a, json_array_get(ch, i), i, "delta", true);
	if (!json_array_size(ch) && json_is_object(json_object_get(root, "usage")))
		take_usage_chunk(a, json_object_get(root, "usage"));
	else if (!a->n_usage)
		take_usage(a, root);   /* usage on every chunk (vLLM's continuous stats) */
out:
	json_decref(root);
	return rc;
}

static int end_line(struct gen_ans *a)
{
	char *l = a->line.p ? a->line.p : "";
	size_t n = a->line.len, f;
	int rc = 0;

	a->line.len = 0;
	if (!n)
		return a->has_data ? dispatch(a) : 0;
	if (l[0] == ':')
		return 0;
	for (f = 0; f < n && l[f] != ':'; f++)
		;
	if (f == 4 && !memcmp(l, "data", 4)) {
		size_t v = f < n ? f + 1 : n;
		if (v < n && l[v] == ' ')
			v++;
		/* one event's data lines in all, not each alone: many lines with
		 * no blank line between them are one event */
		if (a->data.len + (n - v) + 1 > GEN_RESP_MAX) {
			snprintf(a->bad, sizeof a->bad, "an event's data is over %u MiB",
				 GEN_RESP_MAX >> 20);
			return -1;
		}
		if (sbuf_add(&a->data, l + v, n - v) || sbuf_add(&a->data, "\n", 1)) {
			snprintf(a->bad, sizeof a->bad, "out of memory");
			rc = -1;
		}
		a->has_data = true;
	}
	return rc;
}

int gen_sse_feed(struct gen_ans *a, const char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;
		while (j < n && p[j] != '\n' && p[j] != '\r')
			j++;
		if (j > i) {
			if (a->line.len + (j - i) > GEN_RESP_MAX) {
				snprintf(a->bad, sizeof a->bad, "a stream line is longer than %u MiB",
					 GEN_RESP_MAX >> 20);
				return -1;
			}
			if (sbuf_add(&a->line, p + i, j - i)) {
				snprintf(a->bad, sizeof a->bad, "out of memory");
				return -1;
			}
			a->cr = false;
		}
		if (j == n)
			break;
		/* the LF of a CRLF ends nothing */
		if (!(p[j] == '\n' && a->cr) && end_line(a))
			return -1;
		a->cr = p[j] == '\r';
		i = j + 1;
	}
	return 0;
}

void gen_sse_end(struct gen_ans *a)
{
	if (a->line.len)
		end_line(a);
	if (a->has_data)
		dispatch(a);
}

enum cr_status gen_ans_from_json(struct gen_ans *a, const char *base, const char *body,
				 size_t len, struct cr_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(body ? body : "", len, JSON_ALLOW_NUL, &je), *ch;
	enum cr_status st = CR_OK;
	int got = 0;

	ch = json_object_get(root, "choices");
	if (!root || !json_is_array(ch)) {
		st = CR_EENV;   /* the caller words it with the server's message */
		if (!root)
			snprintf(a->bad, sizeof a->bad, "the response is not JSON (%s at byte %d)",
				 je.text, je.position);
		else
			snprintf(a->bad, sizeof a->bad, "the response has no choices");
		goto out;
	}
	for (size_t i = 0; i < json_array_size(ch); i++, got++)
		if (take(a, json_array_get(ch, i), i, "message", false)) {
			st = cr_errf(err, CR_EENV, "%s: %s", base, a->bad);
			goto out;
		}
	if (got < a->n) {
		st = cr_errf(err, CR_EENV,
			     "%s: %d choice%s for n=%d (does the server support n > 1?)", base,
			     got, got == 1 ? "" : "s", a->n);
		goto out;
	}
	take_usage(a, root);
out:
	json_decref(root);
	return st;
}
