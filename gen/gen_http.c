/* gen_http.c — the endpoint generator: an OpenAI-compatible server (vLLM,
 * SGLang, llama.cpp's server, OpenAI, DeepSeek) reached over libcurl.
 *
 * One request is one POST of <url>/chat/completions carrying model,
 * messages, n, seed, temperature, top_p, max_tokens, reasoning_effort (when
 * configured), stop (only when there are stop strings), top_k / min_p (only
 * when set: the open servers accept them as extra fields) and, streaming
 * (the default; cfg.stream -1 turns it off), "stream": true with
 * "stream_options": {"include_usage": true}. The seed goes out as its low
 * 63 bits, the range of a JSON integer every server parses.
 *
 * The answer: an event stream (gen_sse.c: data: chunks of choices[].delta,
 * [DONE], usage in the last chunk; on_progress is called as chunks arrive,
 * a chunk with text counting one token) or, from a server that answers
 * application/json, a whole chat.completion. Each choice's content, the
 * reasoning the server returns apart (`reasoning_content`: vLLM, SGLang,
 * DeepSeek; `reasoning`: newer vLLM, OpenRouter, Ollama) put in front as
 * "<think>" reasoning "</think>\n" content, finish_reason. Choices land in
 * out[] by their `index`; fewer valid choices than n is an error.
 *
 * Token counts (gen_count.c). Servers disagree on usage with n > 1 (llama.cpp's
 * server counts one choice, vLLM and OpenAI all, some report none), so each
 * choice's completion tokens are counted from its text when a tokenizer is
 * at hand (count_src "tokenizer"):
 * - cfg.tokenizer a .gguf path: that file's tokenizer alone (no weights),
 *   no BOS added, special tokens written in the text recognised;
 * - "server": POST <url less a trailing /v1>/tokenize, llama.cpp's shape
 *   {"content", "add_special": false} -> {"tokens": [...]}, else vLLM's
 *   {"model", "prompt", "add_special_tokens": false} -> {"count", "tokens"};
 *   the shape is probed once, at the first completion (one try, no retry);
 * - NULL: "server" when the probe answers, else usage;
 * - "usage": the server's usage read as gen_count.c says ("usage" n = 1 or
 *   a usage chunk for each choice, "usage-split" n > 1, "estimate" without
 *   usage).
 * Reasoning is counted apart (the field, or a leading <think>...</think> of
 * the content, whose tags count with the content). Re-tokenizing a text can
 * differ from the ids the server sampled by a token or so a choice (an end
 * token the text does not hold, merges across a boundary). Every counted
 * request is checked against usage.completion_tokens (usage_tokens, all
 * choices of the request): equal to the sum, to one choice's count, absent,
 * or neither; describe()'s "token_counts" keeps the tallies, the worst
 * disagreement, the retries and the tokens lost to failed tries. No count
 * is left below what the answer proves (gen_count_floor: its stream chunks
 * with text, every choice's own usage, usage with n = 1, and with n > 1 the
 * sum at least usage), beyond a re-tokenization's slack. A /tokenize call is one try of at most
 * TOKENIZE_S; a probe that fails in any way means none works there.
 * prompt_tokens is usage.prompt_tokens for every choice; prefill_tokens is
 * prompt_tokens less usage.prompt_tokens_details.cached_tokens for choice 0
 * and 0 for the others, -1 when cached tokens are not reported.
 *
 * Timeouts: connecting connect_timeout_s (0: 30); a streamed try with no
 * byte for idle_timeout_s (0: 300) failed, however long it runs while bytes
 * come (a progress callback watches the last byte's time; an answer not
 * streamed is silent until it is whole, so only the request timeout bounds
 * it); the whole try timeout_s (0: none when streaming, 600 when not).
 *
 * Failures. HTTP 429, 5xx, timeouts, dropped connections, a stream cut
 * before its end (no [DONE] and a choice unfinished) or carrying an error
 * object without a 4xx code, and, once this endpoint has answered anything
 * with a 2xx, a refused connection or an unknown host (the server
 * restarting) are retried: the wait is backoff_s (0: 1) doubled each time up
 * to 30 s, or the server's Retry-After (seconds, at most 60 s), never past
 * the window's end; until retry_window_s (0: 600) has passed since the
 * request's first failure, or max_retries retries (0: only the window; < 0:
 * no retry). One line per retry on stderr names the endpoint, what failed,
 * the attempt and the seconds left of the window; then CR_EENV naming the
 * endpoint, the last failure, the tries and how long they took. A retried
 * stream is asked for whole again; what the failed try generated (its
 * text's tokens counted as above, its chunks without a tokenizer) goes to
 * lost_tokens. A refused connection or an unknown host before any success
 * is CR_EENV at once (a wrong port fails in milliseconds); another 4xx is
 * CR_EINPUT with the server's message (about 300 bytes, control characters
 * escaped). The API key is read once at open, sent only as the
 * Authorization header and cut out of anything a server sends back.
 *
 * complete() is re-entrant: each call takes an easy handle from a locked
 * pool (kept for connection reuse); the tokenizer probe is done once under
 * a lock, the statistics are locked, the rest is read-only. */
#include "gen/gen_gen.h"
#include "gen/gen_http_impl.h"

#include <curl/curl.h>
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOKENIZE_S 30          /* a /tokenize call, whole, connecting included */
#define MSG_MAX 300           /* bytes of a server's error message kept */
#define RETRY_AFTER_MAX 60.0  /* seconds of a server's Retry-After honoured */
#define BACKOFF_MAX 30.0      /* seconds between two tries, doubling */

enum tok_how { TOK_AUTO, TOK_GGUF, TOK_SERVER, TOK_USAGE };
enum tok_api { API_UNKNOWN, API_LLAMA, API_VLLM, API_NONE };

struct ep {
	char *base;               /* the url as given, less a trailing '/' (messages) */
	char *post;               /* base + "/chat/completions" */
	char *tok_url;            /* base less a trailing "/v1", + "/tokenize" */
	char *model;
	char *key_env;            /* NULL: no key */
	char *key;                /* the key (NULL: none); wiped at release */
	struct curl_slist *hdrs;  /* Content-Type, Expect, Authorization: read-only once built */
	int concurrency;
	char *effort;             /* reasoning_effort sent, or NULL */
	bool stream;
	double connect_s, idle_s, request_s; /* request_s 0: none */
	double window_s, backoff_s;
	int max_retries;          /* 0: only the window; < 0: none */
	enum tok_how how;
	char *tok_path;           /* the .gguf of TOK_GGUF */
	void *gguf;               /* its tokenizer */
	_Atomic int api;          /* enum tok_api: the server's /tokenize */
	pthread_mutex_t probe;    /* one probe of /tokenize */
	atomic_bool ever_ok;      /* a 2xx came from this endpoint */
	struct gen_count_stats stats;
	pthread_mutex_t lock;     /* guards pool */
	CURL **pool;              /* [concurrency] idle handles */
	int n_pool;
};

/* One try: what came back and how. */
struct xfer {
	struct gen_sbuf body;     /* a body not streamed */
	bool over;                /* more than GEN_RESP_MAX arrived */
	struct gen_ans *ans;      /* a streamed answer goes here (NULL: never) */
	bool sse;                 /* the answer is an event stream */
	bool sse_stop;            /* gen_sse_feed stopped it */
	long hstatus;             /* the last status line's code */
	char ctype[64];
	double retry_after;       /* seconds, < 0: no header */
	bool watch_idle;
	int64_t last_ns;          /* the last byte's time */
	double idle_s;
	bool idle;                /* the idle timeout ended it */
	CURLcode cc;
	long status, os_errno;
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
	struct xfer *x = ud;
	size_t n = sz * nm;

	x->last_ns = cr_now_ns();
	if (!x->sse && x->ans && x->hstatus >= 200 && x->hstatus <= 299 &&
	    strstr(x->ctype, "text/event-stream"))
		x->sse = true;
	if (x->sse) {
		if (gen_sse_feed(x->ans, p, n)) {
			x->sse_stop = true;
			return 0;
		}
		return n;
	}
	if (x->body.len + n > GEN_RESP_MAX) {
		x->over = true;
		return 0;
	}
	if (x->body.len + n + 1 > x->body.cap) {
		size_t cap = x->body.cap ? x->body.cap : 4096;
		char *q;
		while (cap < x->body.len + n + 1)
			cap *= 2;
		q = realloc(x->body.p, cap);
		if (!q)
			return 0;
		x->body.p = q;
		x->body.cap = cap;
	}
	memcpy(x->body.p + x->body.len, p, n);
	x->body.len += n;
	x->body.p[x->body.len] = '\0';
	return n;
}

/* Header line p[0..n) without its line end, NUL-terminated in tmp, or NULL
 * when it does not start with name. */
static const char *header_value(const char *p, size_t n, const char *name, char *tmp,
				size_t cap)
{
	size_t nl = strlen(name), k;

	if (n <= nl || strncasecmp(p, name, nl))
		return NULL;
	p += nl;
	n -= nl;
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' '))
		n--;
	k = n < cap - 1 ? n : cap - 1;
	memcpy(tmp, p, k);
	tmp[k] = '\0';
	return tmp;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
	struct xfer *x = ud;
	size_t n = sz * nm;
	char tmp[64], *end;
	const char *v;

	x->last_ns = cr_now_ns();
	if (n > 9 && !strncmp(p, "HTTP/", 5)) {
		const char *sp = memchr(p, ' ', n);
		x->hstatus = sp ? strtol(sp + 1, NULL, 10) : 0;
		x->ctype[0] = '\0';
		x->retry_after = -1;
	} else if ((v = header_value(p, n, "content-type:", tmp, sizeof tmp))) {
		snprintf(x->ctype, sizeof x->ctype, "%s", v);
		for (char *c = x->ctype; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
	} else if ((v = header_value(p, n, "retry-after:", tmp, sizeof tmp))) {
		double s;
		errno = 0;
		s = strtod(v, &end);   /* seconds; an HTTP date is not honoured */
		if (!errno && end != v && !*end && s >= 0 && isfinite(s))
			x->retry_after = s;
	}
	return n;
}

/* Ends a streamed try that has been silent for idle_s. */
static int on_xfer(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct xfer *x = ud;
	(void)dt; (void)dn; (void)ut; (void)un;
	if (x->watch_idle && (double)(cr_now_ns() - x->last_ns) * 1e-9 > x->idle_s) {
		x->idle = true;
		return 1;
	}
	return 0;
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
static void server_message(const struct ep *e, const struct gen_sbuf *b, char *dst, size_t cap)
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
	if (e->stream) {
		bad |= json_object_set_new(root, "stream", json_true());
		bad |= json_object_set_new(root, "stream_options",
					   json_pack("{s:b}", "include_usage", 1));
	}
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

static void try_once(struct ep *e, CURL *h, const char *url, const char *body, bool stream,
		     struct xfer *x)
{
	free(x->body.p);
	memset(x, 0, offsetof(struct xfer, ans));
	x->sse = x->sse_stop = x->idle = false;
	x->hstatus = x->status = x->os_errno = 0;
	x->ctype[0] = x->cerr[0] = '\0';
	x->retry_after = -1;
	x->watch_idle = stream;
	x->idle_s = e->idle_s;
	x->last_ns = cr_now_ns();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, e->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_xfer);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	/* 0: none; a stream is bounded by its idle timeout; a /tokenize call
	 * (no answer struct) by TOKENIZE_S */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 (long)(!x->ans ? TOKENIZE_S * 1000 : stream ? e->request_s * 1000
				: (e->request_s > 0 ? e->request_s : 600) * 1000));
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(e->connect_s * 1000));
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);   /* threads: no SIGALRM for DNS timeouts */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->cerr);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	x->cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &x->os_errno);
	if (x->sse && x->cc == CURLE_OK)
		gen_sse_end(x->ans);
	if (!x->cerr[0])
		snprintf(x->cerr, sizeof x->cerr, "%s", curl_easy_strerror(x->cc));
}

enum verdict { V_OK, V_RETRY, V_FINAL };

static int chunks_of(const struct gen_ans *a)
{
	int c = 0;
	for (int k = 0; a && k < a->n; k++)
		c += a->c[k].chunks;
	return c;
}

/* What a try came to; what[] says what failed, *st the final error's status. */
static enum verdict judge(struct ep *e, struct xfer *x, char *what, size_t cap,
			  enum cr_status *st)
{
	bool ok2xx = x->status >= 200 && x->status <= 299;
	bool restart = atomic_load(&e->ever_ok);

	*st = CR_EENV;
	what[0] = '\0';
	if (ok2xx)
		atomic_store(&e->ever_ok, true);
	if (x->sse) {
		struct gen_ans *a = x->ans;
		if (a->err_msg) {
			char m[MSG_MAX * 4 + 16];
			escape_msg(a->err_msg, strlen(a->err_msg), m, sizeof m);
			snprintf(what, cap, "the stream carried an error%s%.0d: %s",
				 a->err_code ? " " : "", a->err_code, m);
			if (a->err_code >= 400 && a->err_code <= 499 && a->err_code != 429) {
				*st = CR_EINPUT;
				return V_FINAL;
			}
			return V_RETRY;
		}
		if (a->bad[0]) {
			snprintf(what, cap, "%s", a->bad);
			return V_FINAL;
		}
		if (x->cc == CURLE_OK && gen_ans_complete(a))
			return V_OK;
		snprintf(what, cap, "the stream was cut after %d chunks (%s)", chunks_of(a),
			 x->idle ? "idle timeout" : x->cc == CURLE_OK ? "no [DONE]" : x->cerr);
		return V_RETRY;
	}
	if (x->cc == CURLE_OK && ok2xx)
		return V_OK;
	if (x->cc == CURLE_OK) {
		snprintf(what, cap, "HTTP %ld", x->status);
		if (x->status == 429 || (x->status >= 500 && x->status <= 599))
			return V_RETRY;
		*st = x->status >= 400 && x->status <= 499 ? CR_EINPUT : CR_EENV;
		return V_FINAL;
	}
	switch (x->cc) {
	case CURLE_ABORTED_BY_CALLBACK:
		snprintf(what, cap, "no byte for %g s (idle timeout)", e->idle_s);
		return x->idle ? V_RETRY : V_FINAL;
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(what, cap, "timed out (%s)", x->cerr);
		return V_RETRY;
	case CURLE_GOT_NOTHING:
		snprintf(what, cap, "connection closed without an answer");
		return V_RETRY;
	case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_PARTIAL_FILE:
		snprintf(what, cap, "connection lost (%s)", x->cerr);
		return V_RETRY;
	case CURLE_COULDNT_CONNECT:
		snprintf(what, cap, "%s", x->os_errno == ECONNREFUSED ? "connection refused" : x->cerr);
		return restart ? V_RETRY : V_FINAL;
	case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY:
		snprintf(what, cap, "host not found (%s)", x->cerr);
		return restart ? V_RETRY : V_FINAL;
	case CURLE_WRITE_ERROR:
		if (x->over) {
			snprintf(what, cap, "the response is larger than %u MiB", GEN_RESP_MAX >> 20);
			return V_FINAL;
		}
		/* fall through */
	default:
		snprintf(what, cap, "%s", x->cerr);
		return V_FINAL;
	}
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static long lost_of(struct ep *e, const struct gen_choice *c);

/* POST body to url until an answer comes (the event stream into ans, or a
 * body into x->body) or the failure is final. lost[] (may be NULL) gains
 * the tokens each choice of a failed stream had generated. */
static enum cr_status exchange(struct ep *e, const char *url, const char *body,
			       const struct gen_req *rq, struct gen_ans *ans, long *lost,
			       struct xfer *x, struct cr_err *err)
{
	CURL *h = pool_get(e);
	char what[CURL_ERROR_SIZE + MSG_MAX * 4 + 64], smsg[MSG_MAX * 4 + 16];
	double delay = e->backoff_s, d, spent = 0;
	int64_t first = 0;
	enum cr_status st = CR_OK;
	bool stream = ans && e->stream;

	if (!h)
		return cr_errf(err, CR_ENOMEM, "%s: curl_easy_init failed", e->base);
	x->ans = ans;
	for (int attempt = 1;; attempt++) {
		enum verdict v;
		if (ans) {
			gen_ans_release(ans);
			if (gen_ans_init(ans, rq->n)) {
				st = cr_errf(err, CR_ENOMEM, "%s: out of memory", e->base);
				break;
			}
			ans->on_progress = rq->on_progress;
			ans->pctx = rq->pctx;
		}
		try_once(e, h, url, body, stream, x);
		v = judge(e, x, what, sizeof what, &st);
		if (v == V_RETRY && !ans) {
			/* /tokenize (asked right after a completion arrived, so the
			 * server is up) failed: a probe learns there is no such
			 * service (answered) or none that works (dropped, timed
			 * out); a count is not worth a retry window (the completion
			 * is counted from usage and its stream, tokenizer_failed) */
			v = V_FINAL;
			st = x->status ? CR_EINPUT : CR_EENV;
		}
		if (v == V_OK) {
			st = CR_OK;
			break;
		}
		smsg[0] = '\0';
		if (x->body.len && x->status && !x->sse)
			server_message(e, &x->body, smsg, sizeof smsg);
		if (v == V_FINAL) {
			st = cr_errf(err, st, "%s: %s%s%s", e->base, what, smsg[0] ? ": " : "", smsg);
			break;
		}
		if (lost && ans && x->sse)
			for (int k = 0; k < ans->n; k++)
				lost[k] += lost_of(e, &ans->c[k]);
		if (!first)
			first = cr_now_ns();
		spent = (double)(cr_now_ns() - first) * 1e-9;
		if ((e->max_retries && attempt > e->max_retries) || spent >= e->window_s) {
			st = cr_errf(err, CR_EENV, "%s: %s after %d %s, retried for %.1f s (%s)%s%s",
				     e->base, what, attempt, attempt > 1 ? "tries" : "try", spent,
				     spent >= e->window_s ? "the retry window is spent"
				     : "the most retries", smsg[0] ? ": " : "", smsg);
			break;
		}
		d = x->retry_after >= 0 ? fmin(x->retry_after, RETRY_AFTER_MAX) : delay;
		if (d > e->window_s - spent)
			d = e->window_s - spent;
		fprintf(stderr, "run: %s: %s; retry %d in %.*f s, %.*f s left of the retry window\n",
			e->base, what, attempt, d < 0.1 ? 2 : 1, d, e->window_s - spent < 10 ? 1 : 0,
			e->window_s - spent);
		pthread_mutex_lock(&e->stats.lock);
		e->stats.retries++;
		pthread_mutex_unlock(&e->stats.lock);
		sleep_s(d);
		delay = fmin(delay * 2, BACKOFF_MAX);
	}
	pool_put(e, h);
	return st;
}

/* The server's count of text in the shape api, -1 when it did not answer
 * one; *refused set when it answered an error (the shape is not its own, or
 * no /tokenize works there). One try, at most TOKENIZE_S. */
static long server_count(struct ep *e, int api, const char *text, size_t len, bool *refused)
{
	struct xfer x = { 0 };
	struct cr_err err;
	json_t *req, *root = NULL, *v;
	char *body = NULL;
	long n = -1;

	*refused = false;
	if (!len)
		return 0;
	req = api == API_LLAMA
		? json_pack("{s:s%, s:b}", "content", text, len, "add_special", 0)
		: json_pack("{s:s, s:s%, s:b}", "model", e->model, "prompt", text, len,
			    "add_special_tokens", 0);
	body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body)
		return -1;
	cr_err_init(&err);
	switch (exchange(e, e->tok_url, body, NULL, NULL, NULL, &x, &err)) {
	case CR_OK:
		root = json_loadb(x.body.p ? x.body.p : "", x.body.len, 0, NULL);
		v = json_object_get(root, "count");
		if (json_is_integer(v) && json_integer_value(v) >= 0)
			n = (long)json_integer_value(v);
		else if (json_is_array(v = json_object_get(root, "tokens")))
			n = (long)json_array_size(v);
		else
			*refused = true;
		break;
	case CR_EINPUT:
		*refused = true;
		break;
	default:
		break;
	}
	json_decref(root);
	free(x.body.p);
	free(body);
	return n;
}

/* The server's /tokenize shape, probed once (on text, the first completion's);
 * API_NONE when it has none, API_UNKNOWN when it could not be asked now. */
static int server_api(struct ep *e, const char *text, size_t len)
{
	int api = atomic_load(&e->api);
	bool refused;

	if (api != API_UNKNOWN)
		return api;
	pthread_mutex_lock(&e->probe);
	if ((api = atomic_load(&e->api)) == API_UNKNOWN) {
		static const char probe[] = "int main(void) { return 0; }";
		if (!len) {
			text = probe;
			len = sizeof probe - 1;
		}
		if (server_count(e, API_LLAMA, text, len, &refused) >= 0)
			api = API_LLAMA;
		else if (refused && server_count(e, API_VLLM, text, len, &refused) >= 0)
			api = API_VLLM;
		else
			api = API_NONE;   /* refused, dropped or timed out: not asked again */
		if (api == API_NONE && e->how == TOK_SERVER)
			fprintf(stderr, "run: %s: the server has no working /tokenize%s; tokens are "
				"counted from its usage and stream\n", e->base,
				refused ? "" : " (it failed to answer)");
		atomic_store(&e->api, api);
	}
	pthread_mutex_unlock(&e->probe);
	return api;
}

/* Tokens of text by the configured tokenizer; -1: none counts. */
static long count_text(struct ep *e, int api, const char *text, size_t len)
{
	bool refused;

	if (e->how == TOK_GGUF)
		return gen_count_gguf(e->gguf, text, len);
	if (api == API_LLAMA || api == API_VLLM)
		return server_count(e, api, text, len, &refused);
	return -1;
}

/* The tokens a failed try generated for choice c: its text counted, or its
 * chunks when no tokenizer is decided. */
static long lost_of(struct ep *e, const struct gen_choice *c)
{
	int api = atomic_load(&e->api);
	long r, t;

	if (!c->content.len && !c->reasoning.len)
		return 0;
	if (e->how == TOK_GGUF || api == API_LLAMA || api == API_VLLM) {
		r = count_text(e, api, c->reasoning.p, c->reasoning.len);
		t = count_text(e, api, c->content.p, c->content.len);
		if (r >= 0 && t >= 0)
			return r + t;
	}
	return c->chunks;
}

/* Each choice's tokens by the tokenizer; false when it cannot count. */
static bool count_tokens(struct ep *e, const struct gen_ans *a, struct gen_completion *out)
{
	int api = API_NONE;

	if (e->how == TOK_USAGE)
		return false;
	if (e->how != TOK_GGUF) {
		const struct gen_choice *c0 = &a->c[0];
		api = server_api(e, c0->content.len ? c0->content.p : c0->reasoning.p,
				 c0->content.len ? c0->content.len : c0->reasoning.len);
		if (api != API_LLAMA && api != API_VLLM)
			return false;
	}
	for (int k = 0; k < a->n; k++) {
		const struct gen_choice *c = &a->c[k];
		size_t inl = c->reasoning.len ? 0
			: gen_inline_reasoning(c->content.p ? c->content.p : "", c->content.len);
		long r, t;
		if (c->reasoning.len) {
			r = count_text(e, api, c->reasoning.p, c->reasoning.len);
			t = count_text(e, api, c->content.p, c->content.len);
			t = r >= 0 && t >= 0 ? r + t : -1;
		} else {
			const char *open = inl ? strstr(c->content.p, "<think>") + 7 : NULL;
			r = inl ? count_text(e, api, open, inl) : 0;
			t = count_text(e, api, c->content.p, c->content.len);
		}
		if (r < 0 || t < 0)
			return false;
		out[k].completion_tokens = (int)(t > INT32_MAX ? INT32_MAX : t);
		out[k].reasoning_tokens = (int)(r > t ? t : r);
		snprintf(out[k].count_src, sizeof out[k].count_src, "tokenizer");
	}
	return true;
}

/* out[0..n) from a whole answer: texts, counts, statistics. */
static enum cr_status take_answer(struct ep *e, const struct gen_req *rq, const struct gen_ans *a,
				  const long *lost, struct gen_completion *out, struct cr_err *err)
{
	long lost_all = 0;

	for (int k = 0; k < a->n; k++) {
		const struct gen_choice *c = &a->c[k];
		struct gen_completion *o = &out[k];
		size_t rl = c->reasoning.len, cl = c->content.len;
		o->len = rl ? 7 + rl + 9 + cl : cl;
		o->text = malloc(o->len + 1);
		if (!o->text)
			return cr_errf(err, CR_ENOMEM, "%s: out of memory", e->base);
		if (rl) {
			memcpy(o->text, "<think>", 7);
			memcpy(o->text + 7, c->reasoning.p, rl);
			memcpy(o->text + 7 + rl, "</think>\n", 9);
		}
		if (cl)
			memcpy(o->text + o->len - cl, c->content.p, cl);
		o->text[o->len] = '\0';
		snprintf(o->finish, sizeof o->finish, "%s", c->finish);
		o->lost_tokens = lost[k];
		lost_all += lost[k];
	}
	gen_count_prompt(a, out);
	if (count_tokens(e, a, out)) {
		gen_count_check(&e->stats, a, out, rq->ids ? rq->ids[0] : NULL);
		gen_count_floor(&e->stats, a, out);
	} else {
		int how = gen_count_from_usage(a, rq->max_tokens, out);
		pthread_mutex_lock(&e->stats.lock);
		e->stats.requests++;
		e->stats.tok_failed += e->how == TOK_GGUF ||
			(e->how != TOK_USAGE && atomic_load(&e->api) != API_NONE);
		e->stats.split_all += how == 's';
		e->stats.split_one += how == 'o';
		e->stats.per_choice += how == 'p';
		e->stats.estimated += how == 'e';
		e->stats.absent += how == 'e';
		pthread_mutex_unlock(&e->stats.lock);
		gen_count_floor(&e->stats, a, out);
	}
	pthread_mutex_lock(&e->stats.lock);
	e->stats.lost_tokens += lost_all;
	pthread_mutex_unlock(&e->stats.lock);
	for (int k = 0; rq->on_progress && k < a->n; k++)
		rq->on_progress(rq->pctx, k, out[k].completion_tokens, out[k].len);
	return CR_OK;
}

static enum cr_status ep_complete(void *ctx, const struct gen_req *rq, struct gen_completion *out,
				  struct cr_err *err)
{
	struct ep *e = ctx;
	struct xfer x = { 0 };
	struct gen_ans a = { 0 };
	char *body = NULL, smsg[MSG_MAX * 4 + 16];
	long *lost = NULL;
	int64_t t0 = cr_now_ns();
	enum cr_status st;

	if (rq->n < 1)
		return cr_errf(err, CR_EINTERNAL, "%s: a request for %d completions", e->base,
			       rq->n);
	for (int k = 0; k < rq->n; k++)
		memset(&out[k], 0, sizeof out[k]);
	lost = calloc((size_t)rq->n, sizeof *lost);
	if (!lost)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", e->base);
	st = build_body(e, rq, &body, err);
	if (!st)
		st = exchange(e, e->post, body, rq, &a, lost, &x, err);
	if (!st && !x.sse && gen_ans_from_json(&a, e->base, x.body.p, x.body.len, err) &&
	    (st = CR_EENV) && a.bad[0]) {
		server_message(e, &x.body, smsg, sizeof smsg);
		st = cr_errf(err, CR_EENV, "%s: %s: %s", e->base, a.bad, smsg);
	}
	if (!st && x.sse)
		for (int k = 0; k < rq->n && !st; k++)
			if (!a.c[k].seen)
				st = cr_errf(err, CR_EENV,
					     "%s: the stream held no choice %d for n=%d (does the "
					     "server support n > 1?)", e->base, k, rq->n);
	if (!st)
		st = take_answer(e, rq, &a, lost, out, err);
	if (!st)
		for (int k = 0; k < rq->n; k++)
			out[k].gen_s = (double)(cr_now_ns() - t0) * 1e-9;
	else
		for (int k = 0; k < rq->n; k++)
			gen_completion_release(&out[k]);
	gen_ans_release(&a);
	free(x.body.p);
	free(body);
	free(lost);
	return st;
}

static json_t *ep_describe(void *ctx)
{
	struct ep *e = ctx;
	int api = atomic_load(&e->api);
	const char *src = e->how == TOK_GGUF ? "gguf" : e->how == TOK_USAGE ? "usage"
		: api == API_LLAMA || api == API_VLLM ? "server"
		: api == API_NONE ? "usage" : NULL;
	json_t *tc = gen_count_stats_json(&e->stats);
	json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:o, s:b, s:{s:f, s:f, s:o}, s:{s:f, s:o, s:f}}",
			      "kind", "endpoint", "url", e->base, "model", e->model,
			      "api_key_env", e->key_env ? json_string(e->key_env) : json_null(),
			      "reasoning_effort", e->effort ? json_string(e->effort) : json_null(),
			      "stream", e->stream,
			      "timeouts", "connect_s", e->connect_s, "idle_s", e->idle_s,
			      "request_s", e->request_s > 0 ? json_real(e->request_s)
			      : e->stream ? json_null() : json_real(600),
			      "retry", "window_s", e->window_s,
			      "max_retries", e->max_retries > 0 ? json_integer(e->max_retries)
			      : e->max_retries < 0 ? json_integer(0) : json_null(),
			      "backoff_s", e->backoff_s);

	if (!j || !tc) {
		json_decref(j);
		json_decref(tc);
		return NULL;
	}
	json_object_set_new(tc, "tokenizer", json_string(e->how == TOK_GGUF ? e->tok_path
		: e->how == TOK_SERVER ? "server" : e->how == TOK_USAGE ? "usage" : "auto"));
	json_object_set_new(tc, "source", src ? json_string(src) : json_null());
	json_object_set_new(tc, "server_api", api == API_LLAMA ? json_string("llama.cpp")
			    : api == API_VLLM ? json_string("vllm") : json_null());
	json_object_set_new(j, "token_counts", tc);
	return j;
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
	gen_count_gguf_free(e->gguf);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->probe);
	pthread_mutex_destroy(&e->stats.lock);
	free(e->base);
	free(e->post);
	free(e->tok_url);
	free(e->tok_path);
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

static bool bad_num(double v)
{
	return v < 0 || !isfinite(v);
}

enum cr_status gen_endpoint_open(const struct gen_endpoint_cfg *c, struct gen_generator *g,
				 struct cr_err *err)
{
	struct ep *e;
	size_t ul, bl;
	enum cr_status st = CR_OK;
	struct curl_slist *s;

	memset(g, 0, sizeof *g);
	if (!c->url || (strncmp(c->url, "http://", 7) && strncmp(c->url, "https://", 8)))
		return cr_errf(err, CR_EUSAGE, "endpoint: the url '%s' is not http:// or https://",
			       c->url ? c->url : "");
	if (!c->model || !*c->model)
		return cr_errf(err, CR_EUSAGE, "%s: no model named", c->url);
	if (c->concurrency < 0 || bad_num(c->timeout_s) || bad_num(c->backoff_s) ||
	    bad_num(c->connect_timeout_s) || bad_num(c->idle_timeout_s) ||
	    bad_num(c->retry_window_s))
		return cr_errf(err, CR_EUSAGE,
			       "%s: a negative concurrency, timeout, retry window or backoff", c->url);
	if (c->tokenizer && !*c->tokenizer)
		return cr_errf(err, CR_EUSAGE, "%s: an empty tokenizer (a .gguf, server or usage)",
			       c->url);
	pthread_once(&global_once, global_init);
	if (global_rc)
		return cr_errf(err, CR_EENV, "%s: curl_global_init: %s", c->url,
			       curl_easy_strerror(global_rc));
	e = calloc(1, sizeof *e);
	if (!e)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->probe, NULL);
	gen_count_stats_init(&e->stats);
	atomic_init(&e->api, API_UNKNOWN);
	atomic_init(&e->ever_ok, false);
	ul = strlen(c->url);
	while (ul > 8 && c->url[ul - 1] == '/')
		ul--;
	e->base = strndup(c->url, ul);
	e->post = malloc(ul + sizeof "/chat/completions");
	bl = ul >= 3 && !memcmp(c->url + ul - 3, "/v1", 3) ? ul - 3 : ul;
	e->tok_url = malloc(bl + sizeof "/tokenize");
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
	e->stream = c->stream >= 0;
	e->connect_s = c->connect_timeout_s > 0 ? c->connect_timeout_s : 30;
	e->idle_s = c->idle_timeout_s > 0 ? c->idle_timeout_s : 300;
	e->request_s = c->timeout_s;
	e->window_s = c->retry_window_s > 0 ? c->retry_window_s : 600;
	e->max_retries = c->max_retries;
	e->backoff_s = c->backoff_s > 0 ? c->backoff_s : 1;
	e->how = !c->tokenizer ? TOK_AUTO : !strcmp(c->tokenizer, "server") ? TOK_SERVER
		: !strcmp(c->tokenizer, "usage") ? TOK_USAGE : TOK_GGUF;
	if (e->how == TOK_USAGE)
		atomic_store(&e->api, API_NONE);
	e->pool = calloc((size_t)e->concurrency, sizeof *e->pool);
	if (!e->base || !e->post || !e->tok_url || !e->model || (c->api_key_env && !e->key_env) ||
	    !e->pool || (c->reasoning_effort && !e->effort)) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	snprintf(e->post, ul + sizeof "/chat/completions", "%s/chat/completions", e->base);
	snprintf(e->tok_url, bl + sizeof "/tokenize", "%.*s/tokenize", (int)bl, e->base);
	if (e->how == TOK_GGUF) {
		e->tok_path = strdup(c->tokenizer);
		if (!e->tok_path) {
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			goto out;
		}
		if ((st = gen_count_gguf_open(c->tokenizer, &e->gguf, err)))
			goto out;
	}
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
