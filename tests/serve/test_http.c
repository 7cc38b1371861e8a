/* test_http.c — the HTTP layer (serve/srv_http.c) through a real client
 * (libcurl) and raw sockets, on 127.0.0.1 and an ephemeral port: echo of
 * method, path, body, query and header; the JSON error shape and the
 * headers every response carries; 413 for a body past the limit (declared,
 * declared with 100-continue, chunked) without the handler seeing it; a
 * handler that answers nothing or nonsense answered 500; handlers running
 * at once; an access log without body, query or token; --listen parsing;
 * an address in use; streams (whole, and a client leaving mid-stream); and
 * malformed or cut-off requests never reaching the handler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/srv_http.h"

#define N_CONC 8

static atomic_int calls;       /* handler entries */
static atomic_int active, peak; /* /sleep handlers running at once, and the most seen */
static atomic_int streams_freed;

/* ---- the handler --------------------------------------------------------- */

struct stream {
	int n;     /* chunks sent */
	bool hang; /* after 3 chunks: nothing ready, forever */
};

static ssize_t stream_fn(void *ctx, char *buf, size_t max)
{
	struct stream *s = ctx;

	if (s->n < 3) {
		int k = snprintf(buf, max, "data: %d\n\n", s->n);
		s->n++;
		return k;
	}
	return s->hang ? 0 : -1;
}

static void stream_free(void *ctx)
{
	free(ctx);
	atomic_fetch_add(&streams_freed, 1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Enters, waits (up to 5 s) until all N_CONC are in, then 200 ms more: the
 * peak reaches N_CONC only if the handlers truly ran at once. */
static void sleeper(void)
{
	int now = atomic_fetch_add(&active, 1) + 1;
	int p = atomic_load(&peak);
	while (now > p && !atomic_compare_exchange_weak(&peak, &p, now))
		;
	int64_t deadline = cr_now_ns() + 5000000000LL;
	while (atomic_load(&peak) < N_CONC && cr_now_ns() < deadline)
		sleep_ms(1);
	sleep_ms(200);
	atomic_fetch_sub(&active, 1);
}

static void handler(void *ctx, const struct srv_req *q, struct srv_resp *r)
{
	(void)ctx;
	atomic_fetch_add(&calls, 1);
	if (!strcmp(q->path, "/echo")) {
		const char *x = srv_req_query(q, "x");
		const char *h = srv_req_header(q, "x-test");
		json_t *j = json_pack("{s:s, s:s, s:s%, s:I, s:s?, s:s?, s:s}", "method", q->method,
				      "path", q->path, "body", q->body, q->body_len, "body_len",
				      (json_int_t)q->body_len, "x", x, "h", h, "remote", q->remote);
		srv_resp_json(r, 200, j);
	} else if (!strcmp(q->path, "/error")) {
		srv_resp_error(r, 400, "bad \"%s\"\n<%d>", "q\\", 7);
	} else if (!strcmp(q->path, "/hdr")) {
		srv_resp_header(r, "Retry-After", "7");
		srv_resp_json(r, 202, json_pack("{s:b}", "ok", 1));
	} else if (!strcmp(q->path, "/badhdr")) {
		srv_resp_header(r, "X-Bad", "a\r\nSet-Cookie: x=1");
		srv_resp_json(r, 200, json_pack("{s:b}", "ok", 1));
	} else if (!strcmp(q->path, "/badstatus")) {
		srv_resp_body(r, 42, "text/plain", strdup("x"), 1);
	} else if (!strcmp(q->path, "/replaced")) {
		struct stream *s = calloc(1, sizeof *s);
		srv_resp_stream(r, 200, "text/event-stream", stream_fn, s, stream_free);
		srv_resp_body(r, 200, "text/plain", strdup("second"), 6);
	} else if (!strcmp(q->path, "/sleep")) {
		sleeper();
		srv_resp_json(r, 200, json_pack("{s:b}", "ok", 1));
	} else if (!strcmp(q->path, "/stream") || !strcmp(q->path, "/stream_hang")) {
		struct stream *s = calloc(1, sizeof *s);
		s->hang = !strcmp(q->path, "/stream_hang");
		srv_resp_stream(r, 200, "text/event-stream", stream_fn, s, stream_free);
	}
	/* anything else ("/none"): no response */
}

static struct srv_http *start(FILE *log, size_t max_body)
{
	struct srv_http_opts o = { .host = "127.0.0.1", .port = 0, .max_body = max_body,
				   .fn = handler, .log = log };
	struct srv_http *h = NULL;
	struct cr_err err;

	cr_err_init(&err);
	enum cr_status st = srv_http_start(&o, &h, &err);
	if (st != CR_OK)
		fail_msg("srv_http_start: %s", err.msg);
	assert_true(srv_http_port(h) > 0);
	atomic_store(&calls, 0);
	return h;
}

/* ---- the client ---------------------------------------------------------- */

enum { NO_EXPECT = 1, EXPECT = 2, CHUNKED = 4 };

struct reply {
	long status;
	char *body;
	size_t len;
	char hdrs[8192];
	size_t hlen;
	const char *abort_at; /* the body callback fails once this arrived */
};

struct upload {
	const char *p;
	size_t len, pos;
};

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	struct reply *r = u;
	char *b = realloc(r->body, r->len + sz * n + 1);

	assert_non_null(b);
	memcpy(b + r->len, p, sz * n);
	r->len += sz * n;
	b[r->len] = '\0';
	r->body = b;
	if (r->abort_at && strstr(r->body, r->abort_at))
		return 0;
	return sz * n;
}

static size_t on_hdr(char *p, size_t sz, size_t n, void *u)
{
	struct reply *r = u;
	size_t k = sz * n;

	if (r->hlen + k < sizeof r->hdrs) {
		memcpy(r->hdrs + r->hlen, p, k);
		r->hlen += k;
		r->hdrs[r->hlen] = '\0';
	}
	return k;
}

static size_t on_read(char *buf, size_t sz, size_t n, void *u)
{
	struct upload *up = u;
	size_t k = sz * n < up->len - up->pos ? sz * n : up->len - up->pos;

	if (k > (up->len > 1000000 ? 65536u : 1000u))
		k = up->len > 1000000 ? 65536 : 1000; /* several chunks */
	memcpy(buf, up->p + up->pos, k);
	up->pos += k;
	return k;
}

static CURLcode request(struct srv_http *h, const char *method, const char *path,
			const char *body, size_t len, const char *header, int mode,
			struct reply *r)
{
	char url[512];
	struct curl_slist *hl = NULL;
	struct upload up = { body, len, 0 };
	CURL *c = curl_easy_init();

	assert_non_null(c);
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", srv_http_port(h), path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_hdr);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (header)
		hl = curl_slist_append(hl, header);
	if (mode & NO_EXPECT)
		hl = curl_slist_append(hl, "Expect:");
	if (mode & EXPECT)
		hl = curl_slist_append(hl, "Expect: 100-continue");
	if (body && (mode & CHUNKED)) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &up);
		hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
	} else if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, body ? "POST" : "GET"))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	CURLcode rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hl);
	return rc;
}

static json_t *reply_json(const struct reply *r)
{
	json_error_t e;
	assert_non_null(r->body);
	assert_true(r->len > 0 && r->body[r->len - 1] == '\n');
	json_t *j = json_loadb(r->body, r->len, JSON_ALLOW_NUL, &e);
	if (!j)
		fail_msg("not JSON (%s): %s", e.text, r->body);
	return j;
}

static const char *jstr(json_t *j, const char *k)
{
	return json_string_value(json_object_get(j, k));
}

/* The error shape: {"error": {"message": MSG, "code": status}}. */
static void assert_error(const struct reply *r, long status, const char *msg)
{
	assert_int_equal(r->status, status);
	json_t *j = reply_json(r);
	json_t *e = json_object_get(j, "error");
	assert_non_null(e);
	assert_int_equal(json_object_size(j), 1);
	assert_int_equal(json_integer_value(json_object_get(e, "code")), status);
	if (msg)
		assert_string_equal(jstr(e, "message"), msg);
	json_decref(j);
	assert_non_null(strcasestr(r->hdrs, "content-type: application/json"));
}

static void reply_free(struct reply *r)
{
	free(r->body);
	memset(r, 0, sizeof *r);
}

/* ---- tests --------------------------------------------------------------- */

static void test_get_echo(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 0);
	struct reply r = { 0 };

	assert_int_equal(request(h, "GET", "/echo?x=a%20b&y=2", NULL, 0, "X-Test: hello", 0, &r),
			 CURLE_OK);
	assert_int_equal(r.status, 200);
	json_t *j = reply_json(&r);
	assert_string_equal(jstr(j, "method"), "GET");
	assert_string_equal(jstr(j, "path"), "/echo");
	assert_string_equal(jstr(j, "body"), "");
	assert_string_equal(jstr(j, "x"), "a b");
	assert_string_equal(jstr(j, "h"), "hello");
	assert_string_equal(jstr(j, "remote"), "127.0.0.1");
	json_decref(j);
	assert_non_null(strcasestr(r.hdrs, "content-type: application/json\r\n"));
	assert_non_null(strcasestr(r.hdrs, "cache-control: no-store\r\n"));
	assert_non_null(strcasestr(r.hdrs, "x-content-type-options: nosniff\r\n"));
	reply_free(&r);
	/* absent query and header: NULL */
	assert_int_equal(request(h, "DELETE", "/echo", NULL, 0, NULL, 0, &r), CURLE_OK);
	j = reply_json(&r);
	assert_string_equal(jstr(j, "method"), "DELETE");
	assert_true(json_is_null(json_object_get(j, "x")));
	assert_true(json_is_null(json_object_get(j, "h")));
	json_decref(j);
	reply_free(&r);
	srv_http_stop(h);
	srv_http_stop(NULL);
}

static void test_post_echo(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 0);
	struct reply r = { 0 };

	assert_int_equal(request(h, "POST", "/echo?x=1", "hello world", 11, NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	json_t *j = reply_json(&r);
	assert_string_equal(jstr(j, "method"), "POST");
	assert_string_equal(jstr(j, "body"), "hello world");
	assert_string_equal(jstr(j, "x"), "1");
	json_decref(j);
	reply_free(&r);
	/* a NUL byte inside: passed whole with body_len */
	assert_int_equal(request(h, "PUT", "/echo", "a\0b", 3, NULL, 0, &r), CURLE_OK);
	j = reply_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "body_len")), 3);
	assert_int_equal(json_string_length(json_object_get(j, "body")), 3);
	assert_memory_equal(jstr(j, "body"), "a\0b", 3);
	json_decref(j);
	reply_free(&r);
	/* chunked, within the limit: read whole */
	char big[5000];
	memset(big, 'z', sizeof big);
	assert_int_equal(request(h, "POST", "/echo", big, sizeof big, NULL, CHUNKED, &r), CURLE_OK);
	j = reply_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "body_len")), sizeof big);
	json_decref(j);
	reply_free(&r);
	srv_http_stop(h);
}

static void test_error_and_headers(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 0);
	struct reply r = { 0 };

	assert_int_equal(request(h, "GET", "/error", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_error(&r, 400, "bad \"q\\\"\n<7>");
	assert_non_null(strcasestr(r.hdrs, "x-content-type-options: nosniff"));
	reply_free(&r);
	assert_int_equal(request(h, "GET", "/hdr", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, 202);
	assert_non_null(strcasestr(r.hdrs, "retry-after: 7\r\n"));
	assert_non_null(strcasestr(r.hdrs, "cache-control: no-store\r\n"));
	assert_string_equal(r.body, "{\"ok\":true}\n");
	reply_free(&r);
	/* HEAD: headers, no body */
	assert_int_equal(request(h, "HEAD", "/hdr", NULL, 0, NULL, 0, &r), CURLE_OK);
	reply_free(&r);
	srv_http_stop(h);
}

static void test_handler_bugs_500(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 0);
	struct reply r = { 0 };

	assert_int_equal(request(h, "GET", "/none", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_error(&r, 500, "internal error: no response");
	reply_free(&r);
	assert_int_equal(request(h, "GET", "/badstatus", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_error(&r, 500, "internal error: HTTP status 42");
	reply_free(&r);
	assert_int_equal(request(h, "GET", "/badhdr", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_error(&r, 500, "internal error: a malformed response header");
	assert_null(strcasestr(r.hdrs, "set-cookie"));
	reply_free(&r);
	/* a later srv_resp_* call replaces a stream: its ctx is freed */
	atomic_store(&streams_freed, 0);
	assert_int_equal(request(h, "GET", "/replaced", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "second");
	assert_int_equal(atomic_load(&streams_freed), 1);
	reply_free(&r);
	srv_http_stop(h);
}

static void test_too_large(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 1024);
	struct reply r = { 0 };
	size_t big_n = (size_t)3 << 20;
	char *big = malloc(big_n);
	const char *msg = "request body larger than 1024 bytes";

	assert_non_null(big);
	memset(big, 'x', big_n);
	/* exactly the limit: accepted */
	assert_int_equal(request(h, "POST", "/echo", big, 1024, NULL, NO_EXPECT, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	int before = atomic_load(&calls);
	/* declared by Content-Length, body sent anyway: read, dropped, 413 */
	assert_int_equal(request(h, "POST", "/echo", big, 1025, NULL, NO_EXPECT, &r), CURLE_OK);
	assert_error(&r, 413, msg);
	reply_free(&r);
	assert_int_equal(request(h, "POST", "/echo", big, big_n, NULL, NO_EXPECT, &r), CURLE_OK);
	assert_error(&r, 413, msg);
	reply_free(&r);
	/* declared, the client waiting for 100 Continue: answered before it sends */
	assert_int_equal(request(h, "POST", "/echo", big, big_n, NULL, EXPECT, &r), CURLE_OK);
	assert_error(&r, 413, msg);
	reply_free(&r);
	/* chunked: the limit is passed while reading */
	assert_int_equal(request(h, "POST", "/echo", big, 5000, NULL, CHUNKED | NO_EXPECT, &r),
			 CURLE_OK);
	assert_error(&r, 413, msg);
	reply_free(&r);
	assert_int_equal(request(h, "POST", "/echo", big, 5000, NULL, CHUNKED, &r), CURLE_OK);
	assert_error(&r, 413, msg);
	reply_free(&r);
	/* chunked and endless: dropped up to 64 MiB, then the connection is cut */
	size_t huge_n = (size_t)80 << 20;
	char *huge = calloc(1, huge_n);
	assert_non_null(huge);
	assert_int_not_equal(request(h, "POST", "/echo", huge, huge_n, NULL, CHUNKED | NO_EXPECT, &r),
			     CURLE_OK);
	reply_free(&r);
	free(huge);
	assert_int_equal(atomic_load(&calls), before);
	free(big);
	srv_http_stop(h);
}

struct conc_arg {
	struct srv_http *h;
	long status;
};

static void *conc_client(void *u)
{
	struct conc_arg *a = u;
	struct reply r = { 0 };

	if (request(a->h, "GET", "/sleep", NULL, 0, NULL, 0, &r) == CURLE_OK)
		a->status = r.status;
	free(r.body);
	return NULL;
}

static void test_concurrent(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 0);
	pthread_t t[N_CONC];
	struct conc_arg a[N_CONC];

	atomic_store(&active, 0);
	atomic_store(&peak, 0);
	int64_t t0 = cr_now_ns();
	for (int i = 0; i < N_CONC; i++) {
		a[i] = (struct conc_arg){ h, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, conc_client, &a[i]), 0);
	}
	for (int i = 0; i < N_CONC; i++)
		pthread_join(t[i], NULL);
	double secs = (double)(cr_now_ns() - t0) / 1e9;
	for (int i = 0; i < N_CONC; i++)
		assert_int_equal(a[i].status, 200);
	/* the real check: all N_CONC handlers were inside at one moment */
	assert_int_equal(atomic_load(&peak), N_CONC);
	/* loose: serial handlers would take N_CONC * 200 ms at the least, and
	 * the wait for the peak 5 s */
	assert_true(secs < 4.0);
	srv_http_stop(h);
}

static char *slurp(FILE *f)
{
	long n;
	char *b;

	fflush(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = calloc(1, (size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	return b;
}

static void test_access_log(void **s)
{
	(void)s;
	FILE *log = tmpfile();
	assert_non_null(log);
	struct srv_http *h = start(log, 0);
	struct reply r = { 0 };

	assert_int_equal(request(h, "POST", "/echo?token=QSECRET", "BSECRET", 7,
				 "Authorization: Bearer TSECRET", 0, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	assert_int_equal(request(h, "GET", "/a%0Ab%20c%FF", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, 500);
	reply_free(&r);
	char longpath[600] = "/";
	memset(longpath + 1, 'p', 500);
	assert_int_equal(request(h, "GET", longpath, NULL, 0, NULL, 0, &r), CURLE_OK);
	reply_free(&r);
	assert_int_equal(request(h, "GET", "/stream", NULL, 0, NULL, 0, &r), CURLE_OK);
	reply_free(&r);
	srv_http_stop(h);

	char *text = slurp(log);
	assert_null(strstr(text, "SECRET"));
	assert_null(strstr(text, "token"));
	assert_null(strstr(text, "Bearer"));
	int lines = 0;
	for (char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 4);
	/* TIME REMOTE METHOD PATH STATUS BYTES MS; a line is written when its
	 * request completes, after the client has its answer: the order of the
	 * lines need not be that of the requests */
	char t[64], rem[64], m[16], path[256];
	int st;
	unsigned long long bytes, ms;
	char *post = strstr(text, " POST ");
	assert_non_null(post);
	while (post > text && post[-1] != '\n')
		post--;
	assert_int_equal(sscanf(post, "%63s %63s %15s %255s %d %llu %llu", t, rem, m, path, &st,
				&bytes, &ms), 7);
	assert_int_equal(strlen(t), 24);
	assert_int_equal(t[23], 'Z');
	assert_string_equal(rem, "127.0.0.1");
	assert_string_equal(m, "POST");
	assert_string_equal(path, "/echo");
	assert_int_equal(st, 200);
	assert_true(bytes > 0);
	assert_non_null(strstr(text, " GET /a\\x0ab\\x20c\\xff 500 "));
	/* 200 characters of a long path, then "..." */
	char want[220] = " /";
	memset(want + 2, 'p', 199);
	strcat(want, "... 500 ");
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, " GET /stream 200 27 "));
	free(text);
	fclose(log);
}

static void test_parse_listen(void **s)
{
	(void)s;
	char host[64];
	int port = -1;
	struct cr_err err;
	static const struct {
		const char *in, *host;
		int port;
	} good[] = {
		{ "127.0.0.1:8080", "127.0.0.1", 8080 },
		{ "0.0.0.0:0", "0.0.0.0", 0 },
		{ "localhost:65535", "localhost", 65535 },
		{ "[::1]:9000", "::1", 9000 },
		{ "[::]:80", "::", 80 },
		{ "8080", "127.0.0.1", 8080 },
		{ "0", "127.0.0.1", 0 },
	};
	static const char *const bad[] = {
		"", ":80", "host:", "host:abc", "host:70000", "host:65536", "host:+80", "host:-1",
		"host: 80", "host:80 ", "80x", "[::1]", "[::1", "[]:80", "[::1]80", "::1:80",
		"1.2.3.4:99999999999999999999999",
	};

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		cr_err_init(&err);
		assert_int_equal(srv_parse_listen(good[i].in, host, sizeof host, &port, &err), CR_OK);
		assert_string_equal(host, good[i].host);
		assert_int_equal(port, good[i].port);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_err_init(&err);
		if (srv_parse_listen(bad[i], host, sizeof host, &port, &err) != CR_EUSAGE)
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(err.status, CR_EUSAGE);
		assert_non_null(strstr(err.msg, "listen address"));
	}
	cr_err_init(&err);
	assert_int_equal(srv_parse_listen("a-rather-long-host-name:80", host, 8, &port, &err),
			 CR_EUSAGE);
	assert_non_null(strstr(err.msg, "longer than 7 bytes"));
}

static void test_bind_in_use(void **s)
{
	(void)s;
	struct srv_http *a = start(NULL, 0), *b = NULL;
	struct srv_http_opts o = { .host = "127.0.0.1", .port = srv_http_port(a), .fn = handler };
	struct cr_err err;
	char want[64];

	cr_err_init(&err);
	assert_int_equal(srv_http_start(&o, &b, &err), CR_EENV);
	assert_null(b);
	snprintf(want, sizeof want, "127.0.0.1:%d", o.port);
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.msg, "Address already in use"));
	/* a host that is no address */
	o.host = "no.such.host.invalid";
	o.port = 0;
	cr_err_init(&err);
	assert_int_equal(srv_http_start(&o, &b, &err), CR_EENV);
	assert_non_null(strstr(err.msg, "no.such.host.invalid:0"));
	srv_http_stop(a);
}

/* "::" takes IPv4 clients too (dual stack), shown without "::ffff:". */
static void test_dual_stack(void **s)
{
	(void)s;
	struct srv_http_opts o = { .host = "::", .port = 0, .fn = handler };
	struct srv_http *h = NULL;
	struct cr_err err;
	struct reply r = { 0 };

	cr_err_init(&err);
	if (srv_http_start(&o, &h, &err) != CR_OK) {
		print_message("no IPv6 here: %s\n", err.msg);
		skip();
	}
	assert_int_equal(request(h, "GET", "/echo", NULL, 0, NULL, 0, &r), CURLE_OK);
	json_t *j = reply_json(&r);
	assert_string_equal(jstr(j, "remote"), "127.0.0.1");
	json_decref(j);
	reply_free(&r);
	srv_http_stop(h);
}

static bool wait_freed(int want)
{
	int64_t deadline = cr_now_ns() + 5000000000LL;

	while (atomic_load(&streams_freed) < want && cr_now_ns() < deadline)
		sleep_ms(5);
	return atomic_load(&streams_freed) == want;
}

static void *hang_client(void *u)
{
	struct conc_arg *a = u;
	struct reply r = { 0 };

	request(a->h, "GET", "/stream_hang", NULL, 0, NULL, 0, &r);
	a->status = r.status;
	free(r.body);
	return NULL;
}

static void test_stream(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 0);
	struct reply r = { 0 };

	atomic_store(&streams_freed, 0);
	assert_int_equal(request(h, "GET", "/stream", NULL, 0, NULL, 0, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
	assert_non_null(strcasestr(r.hdrs, "content-type: text/event-stream\r\n"));
	assert_non_null(strcasestr(r.hdrs, "transfer-encoding: chunked\r\n"));
	assert_non_null(strcasestr(r.hdrs, "cache-control: no-store\r\n"));
	assert_true(wait_freed(1));
	reply_free(&r);
	/* the client leaves while the stream has nothing to say: freed */
	r.abort_at = "data: 2";
	assert_int_equal(request(h, "GET", "/stream_hang", NULL, 0, NULL, 0, &r),
			 CURLE_WRITE_ERROR);
	assert_true(wait_freed(2));
	reply_free(&r);
	/* stopping the server ends a stream no client leaves */
	pthread_t t;
	struct conc_arg a = { h, 0 };
	atomic_store(&calls, 0);
	assert_int_equal(pthread_create(&t, NULL, hang_client, &a), 0);
	int64_t deadline = cr_now_ns() + 5000000000LL;
	while (atomic_load(&calls) < 1 && cr_now_ns() < deadline)
		sleep_ms(5);
	sleep_ms(50);
	srv_http_stop(h);
	pthread_join(t, NULL);
	assert_int_equal(a.status, 200);
	assert_true(wait_freed(3));
}

/* ---- raw sockets: what libcurl would never send ---------------------------- */

static int raw_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { 5, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

/* Sends what, half-closes, reads until the server closes (5 s at most). */
static void raw_exchange(int port, const char *what, char *out, size_t cap)
{
	int fd = raw_connect(port);
	size_t n = 0;
	ssize_t k;

	assert_int_equal(send(fd, what, strlen(what), MSG_NOSIGNAL), (ssize_t)strlen(what));
	shutdown(fd, SHUT_WR);
	while (n + 1 < cap && (k = recv(fd, out + n, cap - 1 - n, 0)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(fd);
}

static void test_malformed(void **s)
{
	(void)s;
	struct srv_http *h = start(NULL, 0);
	static const char *const cases[] = {
		"GARBAGE\r\n\r\n",
		"\x01\x02\xff\xfe garbage \x00\r\n\r\n",
		"GET /echo HT",
		"GET /echo HTTP/1.1\r\nHost: x\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
		"GET /echo HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
	};
	char out[4096];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		raw_exchange(srv_http_port(h), cases[i], out, sizeof out);
		/* either nothing (closed) or a 400-class answer from MHD */
		if (out[0] && !(strncmp(out, "HTTP/1.", 7) == 0 && out[9] == '4'))
			fail_msg("case %zu answered: %.80s", i, out);
	}
	/* a well-formed raw request still works */
	raw_exchange(srv_http_port(h), "GET /echo?x=1 HTTP/1.0\r\n\r\n", out, sizeof out);
	assert_int_equal(strncmp(out, "HTTP/1.", 7), 0);
	assert_non_null(strstr(out, " 200 "));
	srv_http_stop(h);
	assert_int_equal(atomic_load(&calls), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_echo),
		cmocka_unit_test(test_post_echo),
		cmocka_unit_test(test_error_and_headers),
		cmocka_unit_test(test_handler_bugs_500),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_access_log),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_bind_in_use),
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_malformed),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
