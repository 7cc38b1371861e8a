/* gen_http.c — the endpoint generator: an OpenAI-compatible server (vLLM,
 * SGLang, llama.cpp's server, OpenAI, DeepSeek) reached over libcurl.
 *
 * One request is one POST of <url>/chat/completions carrying model,
 * messages, n, seed, temperature, top_p, max_tokens, reasoning_effort (when
 * configured), stop (only when there
 * are stop strings) and top_k / min_p (only when set: the open servers
 * accept them as extra fields). The seed goes out as its low 63 bits, the
 * range of a JSON integer every server parses.
 *
 * The answer: choices[i].message.content, the reasoning the server returns
 * apart (`reasoning_content`: vLLM, SGLang, DeepSeek; `reasoning`: newer
 * vLLM, OpenRouter, Ollama) put in front as "<think>" reasoning
 * "</think>\n" content, finish_reason, and usage. Choices land in out[] by
 * their `index`; fewer valid choices than n is an error.
 *
 * Token counts. usage counts the whole request, all n choices together, so
 * with n > 1 the per-completion counts are estimates:
 * - prompt_tokens: usage.prompt_tokens for every choice (they share it);
 * - prefill_tokens: prompt_tokens - usage.prompt_tokens_details.cached_tokens
 *   for choice 0 and 0 for the others (the prompt is computed once), -1 for
 *   all when the server does not report cached tokens;
 * - completion_tokens: usage.completion_tokens split over the choices in
 *   proportion to their text bytes (largest remainders, so the parts sum to
 *   the total; equal parts when every text is empty). When the reasoning
 *   total R is known, R is split by reasoning bytes and the rest by content
 *   bytes, and a choice's completion tokens are its two parts, so reasoning
 *   never exceeds completion;
 * - reasoning_tokens: usage.completion_tokens_details.reasoning_tokens split
 *   in proportion to each choice's reasoning bytes (by text bytes when the
 *   server hides its reasoning); when the server does not report it: -1 for
 *   a choice with reasoning, 0 for one without. Reasoning is the separate
 *   field or, from a server without a reasoning parser, a leading
 *   "<think>...</think>" in the content.
 * With n = 1 the counts are the server's own.
 *
 * Failures. HTTP 429, 5xx, timeouts and dropped connections are retried
 * max_retries times, waiting backoff_s, doubled each time, or the server's
 * Retry-After (seconds), at most 60 s, with one line per retry on stderr;
 * then CR_EENV naming the endpoint and the last status. A refused
 * connection or an unknown host is CR_EENV at once; another 4xx is
 * CR_EINPUT with the server's message (about 300 bytes, control characters
 * escaped). The API key is read once at open, sent only as the
 * Authorization header and cut out of anything a server sends back.
 *
 * complete() is re-entrant: each call takes an easy handle from a locked
 * pool (kept for connection reuse) and shares nothing else mutable. */
#include "gen/gen_gen.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RESP_MAX (64u << 20)  /* bytes of one response body */
#define MSG_MAX 300           /* bytes of a server's error message kept */
#define DELAY_MAX 60.0        /* seconds between two tries */

struct ep {
	char *base;               /* the url as given, less a trailing '/' (messages) */
	char *post;               /* base + "/chat/completions" */
	char *model;
	char *key_env;            /* NULL: no key */
	char *key;                /* the key (NULL: none); wiped at release */
	struct curl_slist *hdrs;  /* Content-Type, Expect, Authorization: read-only once built */
	int concurrency;
	char *effort;             /* reasoning_effort sent, or NULL */
	long timeout_ms;
	int max_retries;
	double backoff_s;
	pthread_mutex_t lock;     /* guards pool */
	CURL **pool;              /* [concurrency] idle handles */
	int n_pool;
};

struct buf {
	char *p;
	size_t len, cap;
	bool over;                /* more than RESP_MAX arrived */
};

/* What one try gave. */
struct try {
	CURLcode cc;
	long status;              /* HTTP status, 0: none */
	long os_errno;
	double retry_after;       /* seconds, < 0: no header */
	char cerr[CURL_ERROR_SIZE];
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
	json_object_seed(0);      /* before threads race to seed it */
}

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
	struct buf *b = ud;
	size_t n = sz * nm;

	if (b->len + n > RESP_MAX) {
		b->over = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *q;
		while (cap < b->len + n + 1)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q)
			return 0;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
	struct try *t = ud;
	size_t n = sz * nm;
	static const char name[] = "retry-after:";

	if (n > sizeof name - 1 && !strncasecmp(p, name, sizeof name - 1)) {
		char tmp[32], *end;
		size_t k = n - (sizeof name - 1);
		double v;
		if (k >= sizeof tmp)
			k = sizeof tmp - 1;
		memcpy(tmp, p + sizeof name - 1, k);
		tmp[k] = '\0';
		errno = 0;
		v = strtod(tmp, &end);   /* seconds; an HTTP date is not honoured */
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		if (!errno && end != tmp && !*end && v >= 0 && isfinite(v))
			t->retry_after = v;
	}
	return n;
}

static CURL *pool_get(struct ep *e)
{
	CURL *h = NULL;

	pthread_mutex_lock(&e->lock);
	if (e->n_pool > 0)
		h = e->pool[--e->n_pool];
	pthread_mutex_unlock(&e->lock);
	if (h)
		curl_easy_reset(h);   /* keeps its live connections */
	else
		h = curl_easy_init();
	return h;
}

static void pool_put(struct ep *e, CURL *h)
{
	pthread_mutex_lock(&e->lock);
	if (e->n_pool < e->concurrency) {
		e->pool[e->n_pool++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&e->lock);
	if (h)
		curl_easy_cleanup(h);
}

/* s with every occurrence of the key replaced (malloc'd; NULL: no memory). */
static char *redact(const struct ep *e, const char *s, size_t n)
{
	static const char mark[] = "[redacted]";
	size_t kl = e->key ? strlen(e->key) : 0, o = 0;
	char *r = malloc(n * (kl && kl < sizeof mark ? sizeof mark : 1) + 1);

	if (!r)
		return NULL;
	for (size_t i = 0; i < n;) {
		if (kl && n - i >= kl && !memcmp(s + i, e->key, kl)) {
			memcpy(r + o, mark, sizeof mark - 1);
			o += sizeof mark - 1;
			i += kl;
		} else {
			r[o++] = s[i++];
		}
	}
	r[o] = '\0';
	return r;
}

/* At most MSG_MAX bytes of s (cut at a UTF-8 boundary), control characters
 * escaped, into dst. */
static void escape_msg(const char *s, size_t n, char *dst, size_t cap)
{
	size_t o = 0, lim;

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	lim = n > MSG_MAX ? MSG_MAX : n;
	while (lim < n && lim > 0 && ((unsigned char)s[lim] & 0xc0) == 0x80)
		lim--;
	for (size_t i = 0; i < lim && o + 8 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n')
			o += (size_t)snprintf(dst + o, cap - o, "\\n");
		else if (c == '\t')
			o += (size_t)snprintf(dst + o, cap - o, "\\t");
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
		else
			dst[o++] = (char)c;
	}
	if (lim < n && o + 4 < cap)
		o += (size_t)snprintf(dst + o, cap - o, "...");
	dst[o] = '\0';
}

/* The server's own words from an error body: error.message, error,
 * message or detail when it is JSON, else the body itself. */
static void server_message(const struct ep *e, const struct buf *b, char *dst, size_t cap)
{
	json_t *root = b->len ? json_loadb(b->p, b->len, 0, NULL) : NULL;
	const char *s = b->p ? b->p : "";
	size_t n = b->len;
	char *r;

	if (json_is_object(root)) {
		json_t *er = json_object_get(root, "error"), *m = NULL;
		if (json_is_object(er))
			m = json_object_get(er, "message");
		else if (json_is_string(er))
			m = er;
		if (!json_is_string(m))
			m = json_object_get(root, "message");
		if (!json_is_string(m))
			m = json_object_get(root, "detail");
		if (json_is_string(m)) {
			s = json_string_value(m);
			n = json_string_length(m);
		}
	}
	r = redact(e, s, n);
	if (r)
		escape_msg(r, strlen(r), dst, cap);
	else
		snprintf(dst, cap, "(out of memory)");
	free(r);
	json_decref(root);
}

static enum cr_status build_body(const struct ep *e, const struct gen_req *rq, char **out,
				 struct cr_err *err)
{
	json_t *root, *msgs, *stop = NULL;
	enum cr_status st = CR_OK;
	int bad = 0;              /* a set or append failed: out of memory */

	*out = NULL;
	if (!isfinite(rq->temperature) || !isfinite(rq->top_p) || !isfinite(rq->min_p))
		return cr_errf(err, CR_EUSAGE, "%s: temperature, top_p or min_p is not finite",
			       e->base);
	root = json_object();
	msgs = json_array();
	if (!root || !msgs)
		goto nomem;
	bad |= json_object_set_new(root, "model", json_string(e->model));
	bad |= json_object_set(root, "messages", msgs);
	for (int i = 0; i < rq->n_msgs; i++) {
		const struct gen_msg *m = &rq->msgs[i];
		json_t *o, *c;
		if (!m->role || !m->content) {
			st = cr_errf(err, CR_EINTERNAL, "%s: message %d has no %s", e->base, i,
				     m->role ? "content" : "role");
			goto out;
		}
		o = json_object();
		c = json_string(m->content);
		if (!o || !c) {
			json_decref(o);
			json_decref(c);
			if (!c && o) {
				st = cr_errf(err, CR_EINPUT,
					     "%s: message %d (%s) is not valid UTF-8", e->base, i,
					     m->role);
				goto out;
			}
			goto nomem;
		}
		bad |= json_object_set_new(o, "role", json_string(m->role));
		bad |= json_object_set_new(o, "content", c);
		bad |= json_array_append_new(msgs, o);
	}
	bad |= json_object_set_new(root, "n", json_integer(rq->n));
	bad |= json_object_set_new(root, "seed", json_integer((json_int_t)(rq->seed & INT64_MAX)));
	bad |= json_object_set_new(root, "temperature", json_real(rq->temperature));
	bad |= json_object_set_new(root, "top_p", json_real(rq->top_p));
	bad |= json_object_set_new(root, "max_tokens", json_integer(rq->max_tokens));
	if (e->effort)
		bad |= json_object_set_new(root, "reasoning_effort", json_string(e->effort));
	if (rq->n_stops > 0) {
		stop = json_array();
		if (!stop)
			goto nomem;
		for (int i = 0; i < rq->n_stops; i++) {
			json_t *s = json_string(rq->stops[i]);
			if (!s) {
				st = cr_errf(err, CR_EINPUT,
					     "%s: stop string %d is not valid UTF-8", e->base, i);
				goto out;
			}
			bad |= json_array_append_new(stop, s);
		}
		bad |= json_object_set(root, "stop", stop);
	}
	if (rq->top_k > 0)
		bad |= json_object_set_new(root, "top_k", json_integer(rq->top_k));
	if (rq->min_p > 0)
		bad |= json_object_set_new(root, "min_p", json_real(rq->min_p));
	if (bad)
		goto nomem;
	/* 7 digits: a float's 0.7f goes out as 0.7 */
	*out = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(7));
	if (!*out)
		goto nomem;
	goto out;
nomem:
	st = cr_errf(err, CR_ENOMEM, "%s: out of memory building the request", e->base);
out:
	json_decref(stop);
	json_decref(msgs);
	json_decref(root);
	return st;
}

static void try_once(struct ep *e, CURL *h, const char *body, struct buf *b, struct try *t)
{
	free(b->p);
	memset(b, 0, sizeof *b);
	memset(t, 0, sizeof *t);
	t->retry_after = -1;
	curl_easy_setopt(h, CURLOPT_URL, e->post);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, e->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 e->timeout_ms < 30000 ? e->timeout_ms : 30000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);   /* threads: no SIGALRM for DNS timeouts */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->cerr);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	t->cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t->status);
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &t->os_errno);
	if (!t->cerr[0])
		snprintf(t->cerr, sizeof t->cerr, "%s", curl_easy_strerror(t->cc));
}

/* What a failed try was, for a message ("HTTP 503", "timed out"). */
static void try_what(const struct try *t, char *dst, size_t cap)
{
	if (t->cc == CURLE_OK)
		snprintf(dst, cap, "HTTP %ld", t->status);
	else if (t->cc == CURLE_OPERATION_TIMEDOUT)
		snprintf(dst, cap, "timed out");
	else if (t->cc == CURLE_GOT_NOTHING)
		snprintf(dst, cap, "connection closed without an answer");
	else
		snprintf(dst, cap, "connection lost (%s)", t->cerr);
}

static bool retryable(const struct try *t)
{
	switch (t->cc) {
	case CURLE_OK:
		return t->status == 429 || (t->status >= 500 && t->status <= 599);
	case CURLE_OPERATION_TIMEDOUT: case CURLE_GOT_NOTHING: case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR: case CURLE_PARTIAL_FILE:
		return true;
	default:
		return false;
	}
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The error a failed try ends the request with, CR_OK when it is worth
 * another try. */
static enum cr_status final_error(const struct ep *e, const struct try *t, const struct buf *b,
				  struct cr_err *err)
{
	char smsg[MSG_MAX * 4 + 16];

	if (retryable(t))
		return CR_OK;
	if (t->cc == CURLE_WRITE_ERROR && b->over)
		return cr_errf(err, CR_EENV, "%s: the response is larger than %u MiB", e->base,
			       RESP_MAX >> 20);
	if (t->cc == CURLE_COULDNT_CONNECT)
		return cr_errf(err, CR_EENV, "%s: %s", e->base,
			       t->os_errno == ECONNREFUSED ? "connection refused" : t->cerr);
	if (t->cc == CURLE_COULDNT_RESOLVE_HOST || t->cc == CURLE_COULDNT_RESOLVE_PROXY)
		return cr_errf(err, CR_EENV, "%s: host not found (%s)", e->base, t->cerr);
	if (t->cc != CURLE_OK)
		return cr_errf(err, CR_EENV, "%s: %s", e->base, t->cerr);
	/* a 4xx but 429 is the request refused; a 1xx or 3xx (redirects are not
	 * followed) is a server this generator cannot talk to */
	server_message(e, b, smsg, sizeof smsg);
	return cr_errf(err, t->status >= 400 && t->status <= 499 ? CR_EINPUT : CR_EENV,
		       "%s: HTTP %ld: %s", e->base, t->status, smsg[0] ? smsg : "(no message)");
}

/* POST body until a 2xx arrives (its body in b) or the failure is final. */
static enum cr_status post(struct ep *e, const char *body, struct buf *b, struct cr_err *err)
{
	CURL *h = pool_get(e);
	struct try t;
	char what[CURL_ERROR_SIZE + 64], smsg[MSG_MAX * 4 + 16] = "";
	double delay = e->backoff_s, d;
	enum cr_status st = CR_OK;

	if (!h)
		return cr_errf(err, CR_ENOMEM, "%s: curl_easy_init failed", e->base);
	for (int attempt = 0;; attempt++, delay *= 2) {
		try_once(e, h, body, b, &t);
		if (t.cc == CURLE_OK && t.status >= 200 && t.status <= 299)
			break;
		if ((st = final_error(e, &t, b, err)))
			break;
		try_what(&t, what, sizeof what);
		if (attempt >= e->max_retries) {
			if (t.cc == CURLE_OK)
				server_message(e, b, smsg, sizeof smsg);
			st = cr_errf(err, CR_EENV, "%s: %s after %d %s%s%s", e->base, what,
				     attempt + 1, attempt ? "tries" : "try", smsg[0] ? ": " : "",
				     smsg);
			break;
		}
		d = t.retry_after >= 0 ? t.retry_after : delay;
		if (d > DELAY_MAX)
			d = DELAY_MAX;
		fprintf(stderr, "run: %s: %s, retry %d/%d in %.*f s\n", e->base, what, attempt + 1,
			e->max_retries, d < 0.1 ? 2 : 1, d);
		sleep_s(d);
	}
	pool_put(e, h);
	return st;
}

/* Per-choice byte counts: the weights of the token split. */
struct weights {
	size_t *r, *c, *t;        /* [n] reasoning, content, both */
	unsigned long long *rem;  /* [n] scratch */
	int *part;                /* [n] scratch */
};

/* part[k] = total split in proportion to w[k] (fall back to fw, then to
 * equal parts, when the weights are all 0), the leftover units to the
 * largest remainders, ties to the lower index: the parts sum to total. */
static void split(long long total, const size_t *w, const size_t *fw, int n,
		  const struct weights *ws)
{
	unsigned long long W = 0, given = 0;

	for (int k = 0; k < n; k++)
		W += w[k];
	if (!W && fw) {
		split(total, fw, NULL, n, ws);
		return;
	}
	for (int k = 0; k < n; k++) {
		unsigned long long wk = W ? w[k] : 1, ww = W ? W : (unsigned long long)n;
		unsigned long long num = (unsigned long long)total * wk;
		ws->part[k] = (int)(num / ww);
		ws->rem[k] = num % ww;
		given += (unsigned long long)ws->part[k];
	}
	for (; given < (unsigned long long)total; given++) {
		int best = 0;
		for (int k = 1; k < n; k++)
			if (ws->rem[k] > ws->rem[best])
				best = k;
		ws->part[best]++;
		ws->rem[best] = 0;
	}
}

/* A non-negative integer field of o (capped at INT32_MAX), -1 when absent. */
static long long count_of(json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
	json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
	return x < 0 ? -1 : x > INT32_MAX ? INT32_MAX : x;
}

/* Bytes of a leading "<think>...</think>" in content (a server without a
 * reasoning parser), 0 if none. */
static size_t inline_reasoning(const char *s, size_t n)
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

static const char *str_of(json_t *o, const char *key, size_t *len)
{
	json_t *v = json_object_get(o, key);
	*len = json_is_string(v) ? json_string_length(v) : 0;
	return json_is_string(v) ? json_string_value(v) : "";
}

/* choices[i] into out[its index], its bytes into ws. */
static enum cr_status take_choice(const struct ep *e, json_t *c, size_t i, int n,
				  struct gen_completion *out, const struct weights *ws,
				  struct cr_err *err)
{
	json_t *msg = json_object_get(c, "message"), *ix = json_object_get(c, "index");
	json_t *fr = json_object_get(c, "finish_reason");
	long long k = json_is_integer(ix) ? json_integer_value(ix) : (long long)i;
	const char *content, *rs;
	size_t cl, rl;
	struct gen_completion *o;

	if (!json_is_object(msg))
		return cr_errf(err, CR_EENV, "%s: choices[%zu] has no message", e->base, i);
	if (k < 0 || k >= n || out[k].text)
		return cr_errf(err, CR_EENV, "%s: choices[%zu]: index %lld %s (n=%d)", e->base, i,
			       k, k >= 0 && k < n ? "repeated" : "out of range", n);
	o = &out[k];
	content = str_of(msg, "content", &cl);
	rs = str_of(msg, "reasoning_content", &rl);
	if (!rl)
		rs = str_of(msg, "reasoning", &rl);
	o->len = rl ? 7 + rl + 9 + cl : cl;
	o->text = malloc(o->len + 1);
	if (!o->text)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", e->base);
	if (rl) {
		memcpy(o->text, "<think>", 7);
		memcpy(o->text + 7, rs, rl);
		memcpy(o->text + 7 + rl, "</think>\n", 9);
	}
	memcpy(o->text + o->len - cl, content, cl);
	o->text[o->len] = '\0';
	snprintf(o->finish, sizeof o->finish, "%s",
		 json_is_string(fr) ? json_string_value(fr) : "");
	ws->r[k] = rl ? rl : inline_reasoning(content, cl);
	ws->c[k] = cl - (rl ? 0 : ws->r[k]);
	ws->t[k] = ws->r[k] + ws->c[k];
	return CR_OK;
}

/* The token counts of out[0..n) from usage (the estimates of the file's
 * comment). */
static void take_usage(json_t *usage, int n, struct gen_completion *out, const struct weights *ws)
{
	long long P = count_of(usage, "prompt_tokens"), C = count_of(usage, "completion_tokens");
	long long R = count_of(json_object_get(usage, "completion_tokens_details"),
			       "reasoning_tokens");
	long long cached = count_of(json_object_get(usage, "prompt_tokens_details"),
				    "cached_tokens");

	if (C >= 0 && R > C)
		R = C;
	for (int k = 0; k < n; k++) {
		out[k].prompt_tokens = (int)P;
		out[k].prefill_tokens = P < 0 || cached < 0 ? -1
			: k || cached > P ? 0 : (int)(P - cached);
		out[k].completion_tokens = -1;
		out[k].reasoning_tokens = ws->r[k] ? -1 : 0;
	}
	if (R >= 0) {
		split(R, ws->r, ws->t, n, ws);
		for (int k = 0; k < n; k++)
			out[k].reasoning_tokens = ws->part[k];
	}
	if (C >= 0 && R >= 0) {
		split(C - R, ws->c, ws->t, n, ws);
		for (int k = 0; k < n; k++)
			out[k].completion_tokens = out[k].reasoning_tokens + ws->part[k];
	} else if (C >= 0) {
		split(C, ws->t, NULL, n, ws);
		for (int k = 0; k < n; k++)
			out[k].completion_tokens = ws->part[k];
	}
}

/* The choices of a 2xx body into out[0..n). */
static enum cr_status parse(const struct ep *e, const struct gen_req *rq, const struct buf *b,
			    struct gen_completion *out, struct cr_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(b->p ? b->p : "", b->len, 0, &je), *ch;
	int n = rq->n, got = 0;
	struct weights ws = {
		calloc((size_t)n, sizeof *ws.r), calloc((size_t)n, sizeof *ws.c),
		calloc((size_t)n, sizeof *ws.t), calloc((size_t)n, sizeof *ws.rem),
		calloc((size_t)n, sizeof *ws.part),
	};
	enum cr_status st = CR_OK;
	char smsg[MSG_MAX * 4 + 16];

	if (!ws.r || !ws.c || !ws.t || !ws.rem || !ws.part) {
		st = cr_errf(err, CR_ENOMEM, "%s: out of memory", e->base);
		goto out;
	}
	ch = json_object_get(root, "choices");
	if (!root || !json_is_array(ch)) {
		server_message(e, b, smsg, sizeof smsg);
		if (!root)
			st = cr_errf(err, CR_EENV,
				     "%s: the response is not JSON (%s at byte %d): %s", e->base,
				     je.text, je.position, smsg);
		else
			st = cr_errf(err, CR_EENV, "%s: the response has no choices: %s", e->base,
				     smsg);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(ch); i++, got++)
		if ((st = take_choice(e, json_array_get(ch, i), i, n, out, &ws, err)))
			goto out;
	if (got < n) {
		st = cr_errf(err, CR_EENV,
			     "%s: %d choice%s for n=%d (does the server support n > 1?)", e->base,
			     got, got == 1 ? "" : "s", n);
		goto out;
	}
	take_usage(json_object_get(root, "usage"), n, out, &ws);
out:
	if (st)
		for (int k = 0; k < n; k++)
			gen_completion_release(&out[k]);
	free(ws.r);
	free(ws.c);
	free(ws.t);
	free(ws.rem);
	free(ws.part);
	json_decref(root);
	return st;
}

static enum cr_status ep_complete(void *ctx, const struct gen_req *rq, struct gen_completion *out,
				  struct cr_err *err)
{
	struct ep *e = ctx;
	struct buf b = { 0 };
	char *body = NULL;
	int64_t t0 = cr_now_ns();
	enum cr_status st;

	if (rq->n < 1)
		return cr_errf(err, CR_EINTERNAL, "%s: a request for %d completions", e->base,
			       rq->n);
	for (int k = 0; k < rq->n; k++)
		memset(&out[k], 0, sizeof out[k]);
	st = build_body(e, rq, &body, err);
	if (!st)
		st = post(e, body, &b, err);
	if (!st)
		st = parse(e, rq, &b, out, err);
	if (!st)
		for (int k = 0; k < rq->n; k++)
			out[k].gen_s = (double)(cr_now_ns() - t0) * 1e-9;
	free(body);
	free(b.p);
	return st;
}

static json_t *ep_describe(void *ctx)
{
	struct ep *e = ctx;
	return json_pack("{s:s, s:s, s:s, s:o, s:o}", "kind", "endpoint", "url", e->base,
			 "model", e->model, "api_key_env",
			 e->key_env ? json_string(e->key_env) : json_null(), "reasoning_effort",
			 e->effort ? json_string(e->effort) : json_null());
}

static void ep_release(void *ctx)
{
	struct ep *e = ctx;

	if (!e)
		return;
	for (int i = 0; i < e->n_pool; i++)
		curl_easy_cleanup(e->pool[i]);
	free(e->pool);
	for (struct curl_slist *s = e->hdrs; s; s = s->next)
		explicit_bzero(s->data, strlen(s->data));
	curl_slist_free_all(e->hdrs);
	if (e->key) {
		explicit_bzero(e->key, strlen(e->key));
		free(e->key);
	}
	pthread_mutex_destroy(&e->lock);
	free(e->base);
	free(e->post);
	free(e->model);
	free(e->effort);
	free(e->key_env);
	free(e);
}

static enum cr_status read_key(struct ep *e, struct cr_err *err)
{
	const char *v = getenv(e->key_env);
	size_t hl;
	char *h;
	struct curl_slist *s;

	if (!v || !*v)
		return cr_errf(err, CR_EUSAGE, "%s: the API key variable %s is %s", e->base,
			       e->key_env, v ? "empty" : "not set");
	if (strpbrk(v, "\r\n"))
		return cr_errf(err, CR_EUSAGE, "%s: the API key variable %s holds a line break",
			       e->base, e->key_env);
	e->key = strdup(v);
	hl = strlen(v) + sizeof "Authorization: Bearer ";
	h = malloc(hl);
	if (!e->key || !h) {
		free(h);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	snprintf(h, hl, "Authorization: Bearer %s", v);
	s = curl_slist_append(e->hdrs, h);
	explicit_bzero(h, hl);
	free(h);
	if (!s)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	e->hdrs = s;
	return CR_OK;
}

enum cr_status gen_endpoint_open(const struct gen_endpoint_cfg *c, struct gen_generator *g,
				 struct cr_err *err)
{
	struct ep *e;
	size_t ul;
	enum cr_status st = CR_OK;
	struct curl_slist *s;

	memset(g, 0, sizeof *g);
	if (!c->url || (strncmp(c->url, "http://", 7) && strncmp(c->url, "https://", 8)))
		return cr_errf(err, CR_EUSAGE, "endpoint: the url '%s' is not http:// or https://",
			       c->url ? c->url : "");
	if (!c->model || !*c->model)
		return cr_errf(err, CR_EUSAGE, "%s: no model named", c->url);
	if (c->concurrency < 0 || c->timeout_s < 0 || c->backoff_s < 0 || !isfinite(c->timeout_s) ||
	    !isfinite(c->backoff_s))
		return cr_errf(err, CR_EUSAGE, "%s: negative concurrency, timeout or backoff",
			       c->url);
	pthread_once(&global_once, global_init);
	if (global_rc)
		return cr_errf(err, CR_EENV, "%s: curl_global_init: %s", c->url,
			       curl_easy_strerror(global_rc));
	e = calloc(1, sizeof *e);
	if (!e)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	pthread_mutex_init(&e->lock, NULL);
	ul = strlen(c->url);
	while (ul > 8 && c->url[ul - 1] == '/')
		ul--;
	e->base = strndup(c->url, ul);
	e->post = malloc(ul + sizeof "/chat/completions");
	e->model = strdup(c->model);
	e->key_env = c->api_key_env ? strdup(c->api_key_env) : NULL;
	e->concurrency = c->concurrency ? c->concurrency : 1;
	if (c->reasoning_effort && strcmp(c->reasoning_effort, "low") && strcmp(c->reasoning_effort, "medium") &&
	    strcmp(c->reasoning_effort, "high")) {
		ep_release(e);
		return cr_errf(err, CR_EUSAGE, "--reasoning: expected low, medium or high, got '%s'",
			       c->reasoning_effort);
	}
	e->effort = c->reasoning_effort ? strdup(c->reasoning_effort) : NULL;
	e->timeout_ms = (long)((c->timeout_s > 0 ? c->timeout_s : 600) * 1000);
	if (e->timeout_ms < 1)
		e->timeout_ms = 1;
	e->max_retries = c->max_retries ? (c->max_retries < 0 ? 0 : c->max_retries) : 5;
	e->backoff_s = c->backoff_s > 0 ? c->backoff_s : 1;
	e->pool = calloc((size_t)e->concurrency, sizeof *e->pool);
	if (!e->base || !e->post || !e->model || (c->api_key_env && !e->key_env) || !e->pool ||
	    (c->reasoning_effort && !e->effort)) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	snprintf(e->post, ul + sizeof "/chat/completions", "%s/chat/completions", e->base);
	/* the handles made here, so a failure shows at open and the calls only pop them */
	for (; e->n_pool < e->concurrency; e->n_pool++)
		if (!(e->pool[e->n_pool] = curl_easy_init())) {
			st = cr_errf(err, CR_ENOMEM, "%s: curl_easy_init failed", e->base);
			goto out;
		}
	e->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	/* no "Expect: 100-continue" round trip before a long prompt */
	s = e->hdrs ? curl_slist_append(e->hdrs, "Expect:") : NULL;
	if (!s) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	if (e->key_env && !*e->key_env) {
		st = cr_errf(err, CR_EUSAGE, "%s: the API key variable has an empty name", e->base);
		goto out;
	}
	if (e->key_env && (st = read_key(e, err)))
		goto out;
	g->kind = "endpoint";
	g->ctx = e;
	g->max_inflight = e->concurrency;
	g->complete = ep_complete;
	g->describe = ep_describe;
	g->release = ep_release;
out:
	if (st)
		ep_release(e);
	return st;
}
