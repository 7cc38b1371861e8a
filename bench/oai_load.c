/* oai_load.c — a load generator for OpenAI-compatible model servers
 * (`crucible serve --model`, llama.cpp's llama-server): C clients, each a
 * thread sending one request at a time on a fresh connection, send R
 * requests in all (request i takes prompt i mod P and seed S + i), and the
 * run prints one line of key=value figures for bench/model_server_bench.sh:
 *
 *   requests errors wall_s         the run, first send to last byte
 *   completion_tokens tok_s        usage.completion_tokens summed, over wall_s
 *   prompt_tokens cached_tokens    usage.prompt_tokens and
 *                                  usage.prompt_tokens_details.cached_tokens
 *   ttft_med_ms ttft_p90_ms        time to the first chunk with content
 *                                  (streaming only), median and p90
 *   chunks no_usage                content chunks seen; requests without usage
 *                                  (their chunks stand in for their tokens)
 *   srv_prompt_ms srv_gen_tok_s    llama-server's own "timings" (summed
 *                                  prompt_ms; predicted_n / predicted_ms over
 *                                  the requests), absent elsewhere: a check
 *                                  of the figures above against the server's
 *
 * Streaming requests ask for stream_options.include_usage, so the last chunk
 * carries the usage. Nothing asks the server to ignore end-of-sequence: a
 * sample ends where the server ends it and the figures count what came back.
 *
 * usage: oai_load --url URL --prompts FILE [--clients C] [--requests R]
 *                 [--max-tokens M] [--temperature T] [--top-p P] [--seed S]
 *                 [--n N] [--completions] [--no-stream] [--model ID] [-v]
 *   FILE holds one prompt a line. Without --model the first id of
 *   GET /v1/models is sent. -v: one line per request on stderr.
 *   Exit: 0, or 1 when a request failed (the first error on stderr), 2 on
 *   bad usage. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

struct opts {
	const char *url;        /* base, no trailing slash */
	const char *prompts;    /* file: one prompt a line */
	const char *model;      /* NULL: the first of /v1/models, or none */
	int clients, requests, max_tokens, n;
	double temperature, top_p;
	long seed;
	int completions;        /* /v1/completions, not /v1/chat/completions */
	int stream;
	int verbose;
};

/* What one request gave back; times in seconds from its send. */
struct result {
	int ok;
	double ttft;            /* < 0: no content chunk came */
	double total;
	long completion_tokens, prompt_tokens, cached_tokens;
	int has_usage;
	long chunks;            /* SSE chunks with content, over all choices */
	/* llama-server's "timings" of the request, when it sends them */
	int has_timings;
	double prompt_ms, predicted_ms;
	long predicted_n, cache_n;
	char finish[16];
	char err[256];
};

struct run {
	const struct opts *o;
	char **prompts;
	int n_prompts;
	const char *model;
	struct result *res;     /* [requests] */
	int next;               /* the next request to send, under lock */
	pthread_mutex_t lock;
};

/* One request in flight: the stream parser's state. */
struct call {
	const struct opts *o;
	struct result *r;
	double t0;
	char *buf;              /* bytes not yet split into lines */
	size_t len, cap;
	char *body;             /* the whole body (non-streaming, or an error) */
	size_t blen, bcap;
	int done;               /* data: [DONE] seen */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int grow(char **p, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 4096;
	char *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static long jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? (long)json_number_value(v) : 0;
}

static double jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : 0;
}

/* One response object (a chunk, or a whole non-streaming answer): counts
 * its content, takes its usage and timings. */
static void take_object(struct call *c, json_t *j)
{
	struct result *r = c->r;
	json_t *ch = json_object_get(j, "choices"), *u, *t, *e;
	size_t i;

	e = json_object_get(j, "error");
	if (e && !r->err[0]) {
		char *s = json_dumps(e, JSON_COMPACT);

		snprintf(r->err, sizeof r->err, "error: %s", s ? s : "?");
		free(s);
	}
	for (i = 0; json_is_array(ch) && i < json_array_size(ch); i++) {
		json_t *c1 = json_array_get(ch, i), *d, *txt, *fr;

		if (c->o->completions)
			txt = json_object_get(c1, "text");
		else if ((d = json_object_get(c1, c->o->stream ? "delta" : "message")))
			txt = json_object_get(d, "content");
		else
			txt = NULL;
		if (json_is_string(txt) && json_string_length(txt) > 0) {
			if (r->ttft < 0)
				r->ttft = now_s() - c->t0;
			r->chunks++;
		}
		fr = json_object_get(c1, "finish_reason");
		if (json_is_string(fr))
			snprintf(r->finish, sizeof r->finish, "%s", json_string_value(fr));
	}
	u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		json_t *d = json_object_get(u, "prompt_tokens_details");

		r->has_usage = 1;
		r->completion_tokens = jint(u, "completion_tokens");
		r->prompt_tokens = jint(u, "prompt_tokens");
		r->cached_tokens = json_is_object(d) ? jint(d, "cached_tokens") : 0;
	}
	t = json_object_get(j, "timings");
	if (json_is_object(t)) {
		r->has_timings = 1;
		r->prompt_ms = jnum(t, "prompt_ms");
		r->predicted_ms = jnum(t, "predicted_ms");
		r->predicted_n = jint(t, "predicted_n");
		r->cache_n = jint(t, "cache_n");
	}
}

/* One SSE line: "data: {...}" or "data: [DONE]"; the rest (blank lines,
 * comments, event names) carry nothing counted here. */
static void take_line(struct call *c, char *line)
{
	json_t *j;
	json_error_t je;

	if (strncmp(line, "data:", 5))
		return;
	line += 5;
	while (*line == ' ')
		line++;
	if (!strcmp(line, "[DONE]")) {
		c->done = 1;
		return;
	}
	j = json_loads(line, 0, &je);
	if (!j) {
		if (!c->r->err[0])
			snprintf(c->r->err, sizeof c->r->err, "bad chunk JSON (%s): %.80s", je.text, line);
		return;
	}
	take_object(c, j);
	json_decref(j);
}

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
	struct call *c = ud;
	size_t n = sz * nm, start = 0, i;

	/* the body is kept whole too, up to 1 MiB: a non-streaming answer, or
	 * the error a server sends instead of a stream */
	if (c->blen + n < (1u << 20)) {
		if (grow(&c->body, &c->bcap, c->blen + n + 1))
			return 0;
		memcpy(c->body + c->blen, p, n);
		c->blen += n;
		c->body[c->blen] = 0;
	}
	if (!c->o->stream)
		return n;
	if (grow(&c->buf, &c->cap, c->len + n + 1))
		return 0;
	memcpy(c->buf + c->len, p, n);
	c->len += n;
	for (i = 0; i < c->len; i++) {
		if (c->buf[i] != '\n')
			continue;
		c->buf[i] = 0;
		if (i > start && c->buf[i - 1] == '\r')
			c->buf[i - 1] = 0;
		take_line(c, c->buf + start);
		start = i + 1;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	return n;
}

static char *request_body(const struct run *R, int i)
{
	const struct opts *o = R->o;
	const char *p = R->prompts[i % R->n_prompts];
	json_t *j = json_object();
	char *s;

	if (R->model)
		json_object_set_new(j, "model", json_string(R->model));
	if (o->completions) {
		json_object_set_new(j, "prompt", json_string(p));
	} else {
		json_t *msg = json_pack("{s:s, s:s}", "role", "user", "content", p);

		json_object_set_new(j, "messages", json_pack("[o]", msg));
	}
	json_object_set_new(j, "max_tokens", json_integer(o->max_tokens));
	json_object_set_new(j, "temperature", json_real(o->temperature));
	json_object_set_new(j, "top_p", json_real(o->top_p));
	json_object_set_new(j, "seed", json_integer(o->seed + i));
	if (o->n > 1)
		json_object_set_new(j, "n", json_integer(o->n));
	if (o->stream) {
		json_object_set_new(j, "stream", json_true());
		json_object_set_new(j, "stream_options", json_pack("{s:b}", "include_usage", 1));
	}
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* Sends request i on the client's handle and fills R->res[i]. */
static void one_request(struct run *R, CURL *h, struct curl_slist *hdr, int i)
{
	const struct opts *o = R->o;
	struct result *r = &R->res[i];
	struct call c = { .o = o, .r = r };
	char url[1024], *body = request_body(R, i);
	long code = 0;
	CURLcode cc;

	memset(r, 0, sizeof *r);
	r->ttft = -1;
	snprintf(url, sizeof url, "%s%s", o->url, o->completions ? "/v1/completions" : "/v1/chat/completions");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &c);
	c.t0 = now_s();
	cc = curl_easy_perform(h);
	r->total = now_s() - c.t0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OK) {
		snprintf(r->err, sizeof r->err, "curl: %s", curl_easy_strerror(cc));
	} else if (code != 200) {
		snprintf(r->err, sizeof r->err, "HTTP %ld: %.200s", code, c.body ? c.body : "");
	} else if (!o->stream) {
		json_error_t je;
		json_t *j = c.body ? json_loads(c.body, 0, &je) : NULL;

		if (j) {
			take_object(&c, j);
			json_decref(j);
		} else {
			snprintf(r->err, sizeof r->err, "bad JSON answer");
		}
	} else if (!c.done && !r->err[0]) {
		snprintf(r->err, sizeof r->err, "stream ended without data: [DONE]");
	}
	r->ok = !r->err[0];
	if (o->verbose)
		fprintf(stderr, "req %d: %s ttft %.1f ms total %.1f ms completion %ld prompt %ld cached %ld "
			"chunks %ld finish %s%s%s\n", i, r->ok ? "ok" : "FAIL", r->ttft * 1e3, r->total * 1e3,
			r->completion_tokens, r->prompt_tokens, r->cached_tokens, r->chunks,
			r->finish[0] ? r->finish : "-", r->err[0] ? " " : "", r->err);
	if (o->verbose && r->has_timings)
		fprintf(stderr, "req %d: server timings: prompt %.1f ms, %ld tokens in %.1f ms (%.1f tok/s), cache_n %ld\n",
			i, r->prompt_ms, r->predicted_n, r->predicted_ms,
			r->predicted_ms > 0 ? r->predicted_n * 1e3 / r->predicted_ms : 0, r->cache_n);
	free(body);
	free(c.buf);
	free(c.body);
}

static void *client(void *arg)
{
	struct run *R = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	int i;

	if (!h || !hdr)
		goto out;	/* its requests stay "not sent" */
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	/* a connection a request: a kept-alive one that the server has just
	 * timed out (llama-server's httplib: 5 s) fails the next send, and a
	 * POST is not retried; a connect on the loopback costs well under 1 ms */
	curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 600L);
	for (;;) {
		pthread_mutex_lock(&R->lock);
		i = R->next < R->o->requests ? R->next++ : -1;
		pthread_mutex_unlock(&R->lock);
		if (i < 0)
			break;
		one_request(R, h, hdr, i);
	}
out:
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return NULL;
}

static size_t to_call_body(char *p, size_t sz, size_t nm, void *ud)
{
	struct call *c = ud;
	size_t n = sz * nm;

	if (grow(&c->body, &c->bcap, c->blen + n + 1))
		return 0;
	memcpy(c->body + c->blen, p, n);
	c->blen += n;
	c->body[c->blen] = 0;
	return n;
}

/* The first model id of GET /v1/models, or NULL. */
static char *first_model(const char *base)
{
	CURL *h = curl_easy_init();
	struct call c = { 0 };
	char url[1024], *id = NULL;
	json_t *j;
	json_error_t je;

	snprintf(url, sizeof url, "%s/v1/models", base);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_call_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &c);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(h) == CURLE_OK && c.body && (j = json_loads(c.body, 0, &je))) {
		json_t *m = json_array_get(json_object_get(j, "data"), 0);
		json_t *s = json_object_get(m, "id");

		if (json_is_string(s))
			id = strdup(json_string_value(s));
		json_decref(j);
	}
	free(c.body);
	curl_easy_cleanup(h);
	return id;
}

static int read_prompts(const char *path, char ***out)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, **v = NULL;
	size_t cap = 0;
	ssize_t len;
	int n = 0;

	if (!f)
		return -1;
	while ((len = getline(&line, &cap, f)) >= 0) {
		char **w;

		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len)
			continue;
		w = realloc(v, (size_t)(n + 1) * sizeof *v);
		if (!w)
			break;
		v = w;
		v[n++] = strdup(line);
	}
	free(line);
	fclose(f);
	*out = v;
	return n;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* q-quantile of sorted v[n] (nearest rank; the median averages the middle
 * two); NAN for none. */
static double quantile(const double *v, int n, double q)
{
	int k;

	if (n <= 0)
		return NAN;
	if (q == 0.5)
		return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	k = (int)ceil(q * n) - 1;
	return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void usage(void)
{
	fprintf(stderr, "usage: oai_load --url URL --prompts FILE [--clients C] [--requests R]\n"
			"                [--max-tokens M] [--temperature T] [--top-p P] [--seed S]\n"
			"                [--n N] [--completions] [--no-stream] [--model ID] [-v]\n");
	exit(2);
}

static long num_arg(const char *name, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		fprintf(stderr, "oai_load: %s wants a whole number in [%ld, %ld], not '%s'\n", name, lo, hi, s);
		exit(2);
	}
	return v;
}

static double real_arg(const char *name, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || !(v >= 0)) {
		fprintf(stderr, "oai_load: %s wants a number >= 0, not '%s'\n", name, s);
		exit(2);
	}
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--completions")) {
			o->completions = 1;
			continue;
		} else if (!strcmp(a, "--no-stream")) {
			o->stream = 0;
			continue;
		} else if (!strcmp(a, "-v")) {
			o->verbose = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--url"))
			o->url = v;
		else if (!strcmp(a, "--prompts"))
			o->prompts = v;
		else if (!strcmp(a, "--model"))
			o->model = v;
		else if (!strcmp(a, "--clients"))
			o->clients = (int)num_arg(a, v, 1, 1024);
		else if (!strcmp(a, "--requests"))
			o->requests = (int)num_arg(a, v, 1, 1000000);
		else if (!strcmp(a, "--max-tokens"))
			o->max_tokens = (int)num_arg(a, v, 1, 1000000);
		else if (!strcmp(a, "--n"))
			o->n = (int)num_arg(a, v, 1, 1024);
		else if (!strcmp(a, "--seed"))
			o->seed = num_arg(a, v, 0, 1L << 40);
		else if (!strcmp(a, "--temperature"))
			o->temperature = real_arg(a, v);
		else if (!strcmp(a, "--top-p"))
			o->top_p = real_arg(a, v);
		else
			usage();
	}
	if (!o->url || !o->prompts)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = { .clients = 1, .requests = 1, .max_tokens = 128, .n = 1,
			  .temperature = 0.7, .top_p = 1.0, .seed = 1, .stream = 1 };
	struct run R = { .o = &o };
	pthread_t *th;
	double t0, wall, *ttft, prompt_ms = 0, pred_ms = 0;
	long comp = 0, prompt = 0, cached = 0, chunks = 0, pred_n = 0;
	int i, errors = 0, no_usage = 0, n_ttft = 0, n_timed = 0;
	char *model_alloc = NULL, *ul;
	const char *first_err = NULL;

	parse_args(argc, argv, &o);
	/* "http://h:p/" and "http://h:p" alike (a ready file may end in /) */
	ul = strdup(o.url);
	if (!ul)
		return 1;
	while (*ul && ul[strlen(ul) - 1] == '/')
		ul[strlen(ul) - 1] = 0;
	o.url = ul;
	R.n_prompts = read_prompts(o.prompts, &R.prompts);
	if (R.n_prompts <= 0) {
		fprintf(stderr, "oai_load: no prompts in %s\n", o.prompts);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	R.model = o.model ? o.model : (model_alloc = first_model(o.url));
	R.res = calloc((size_t)o.requests, sizeof *R.res);
	th = calloc((size_t)o.clients, sizeof *th);
	ttft = calloc((size_t)o.requests, sizeof *ttft);
	if (!R.res || !th || !ttft)
		return 1;
	for (i = 0; i < o.requests; i++)
		snprintf(R.res[i].err, sizeof R.res[i].err, "not sent (a client could not start)");
	pthread_mutex_init(&R.lock, NULL);
	t0 = now_s();
	for (i = 0; i < o.clients; i++)
		if (pthread_create(&th[i], NULL, client, &R))
			break;
	while (i-- > 0)
		pthread_join(th[i], NULL);
	wall = now_s() - t0;

	for (i = 0; i < o.requests; i++) {
		const struct result *r = &R.res[i];

		if (!r->ok) {
			errors++;
			if (!first_err)
				first_err = r->err;
			continue;
		}
		if (r->has_usage) {
			comp += r->completion_tokens;
		} else {
			comp += r->chunks;
			no_usage++;
		}
		prompt += r->prompt_tokens;
		cached += r->cached_tokens;
		chunks += r->chunks;
		if (r->ttft >= 0)
			ttft[n_ttft++] = r->ttft * 1e3;
		if (r->has_timings) {
			n_timed++;
			prompt_ms += r->prompt_ms;
			pred_ms += r->predicted_ms;
			pred_n += r->predicted_n;
		}
	}
	qsort(ttft, (size_t)n_ttft, sizeof *ttft, cmp_d);
	printf("requests=%d errors=%d clients=%d n=%d wall_s=%.3f completion_tokens=%ld tok_s=%.2f "
	       "prompt_tokens=%ld cached_tokens=%ld ttft_med_ms=%.1f ttft_p90_ms=%.1f chunks=%ld no_usage=%d",
	       o.requests, errors, o.clients, o.n, wall, comp, comp / wall, prompt, cached,
	       quantile(ttft, n_ttft, 0.5), quantile(ttft, n_ttft, 0.9), chunks, no_usage);
	/* the server's own rate: its decode time summed over requests, so with
	 * C clients in flight it is a per-sequence rate, not the throughput */
	if (n_timed)
		printf(" srv_prompt_ms=%.1f srv_gen_tok_s=%.2f", prompt_ms, pred_ms > 0 ? pred_n * 1e3 / pred_ms : 0);
	printf("\n");
	if (first_err)
		fprintf(stderr, "oai_load: %d of %d requests failed; first: %s\n", errors, o.requests, first_err);
	for (i = 0; i < R.n_prompts; i++)
		free(R.prompts[i]);
	free(R.prompts);
	free(R.res);
	free(th);
	free(ttft);
	free(model_alloc);
	free(ul);
	curl_global_cleanup();
	return errors ? 1 : 0;
}
