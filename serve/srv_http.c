/* srv_http.c — the HTTP layer of `crucible serve` (srv_http.h) over
 * libmicrohttpd: a daemon with one thread per connection bound to the
 * address given; per request, the body read into a buffer up to the limit
 * (past it: 413, the rest read and dropped, never kept); the handler called
 * once the whole request is in (a half request never reaches it: MHD answers
 * malformed ones with 400 and drops cut-off ones); its struct srv_resp
 * turned into an MHD response (a buffer, or a callback for a stream); the
 * access log line written when the request completes. Also the srv_resp_*
 * builders and --listen parsing. */
#include "serve/srv_http.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY ((size_t)1 << 20)
#define DEFAULT_MAX_CONNS 256u
#define DEFAULT_TIMEOUT_S 60u
/* A body past the limit is read and dropped (so the client, still sending,
 * gets to read the 413) up to this much; beyond, the connection is cut. */
#define DISCARD_MAX ((uint64_t)64 << 20)
#define STREAM_BLOCK 4096 /* the most a stream callback is asked for at once */
#define STREAM_WAIT_MS 20 /* a stream with nothing ready is asked again after this */
#define LOG_PATH_MAX 200  /* characters of a path in the access log */

struct srv_http {
	struct MHD_Daemon *d;
	srv_handler_fn fn;
	void *ctx;
	size_t max_body;
	FILE *log;
	pthread_mutex_t log_mu; /* one line at a time, from every connection thread */
	int port;
	atomic_int in_flight;   /* requests begun and not yet completed (sent whole or cut) */
	bool quiesced;
};

/* One request, MHD's con_cls: from its headers to its completion, and as
 * long as a stream response that reads through it lives (refs). */
struct rq {
	struct srv_http *h;
	struct MHD_Connection *c;
	atomic_int refs;
	int64_t t0_ns;
	char *body;          /* len bytes + NUL; cap allocated; NULL when none */
	size_t len, cap;
	uint64_t discarded;  /* bytes dropped after the limit was passed */
	bool too_large, answered;
	int status;          /* queued (0: none, for the log) */
	uint64_t bytes;      /* body bytes queued or streamed */
	int fd;              /* the connection's socket (a stream watches it) */
	srv_stream_fn sfn;
	void *sctx;
	void (*sfree)(void *ctx);
	char remote[64];
	char lmethod[32];    /* escaped for the log */
	char lpath[LOG_PATH_MAX + 8];
};

/* ---- building a response ------------------------------------------------- */

/* Drops the body or stream an earlier srv_resp_* call set. */
static void resp_drop(struct srv_resp *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
	if (r->stream_ && r->stream_free_)
		r->stream_free_(r->stream_ctx_);
	r->stream_ = NULL;
	r->stream_ctx_ = NULL;
	r->stream_free_ = NULL;
}

static void set_bug(struct srv_resp *r, const char *what)
{
	if (!r->bug_)
		r->bug_ = what;
}

void srv_resp_body(struct srv_resp *r, int status, const char *content_type, char *body, size_t len)
{
	resp_drop(r);
	r->status = status;
	r->content_type = content_type ? content_type : "application/octet-stream";
	r->body = body;
	r->len = body ? len : 0;
}

/* The error shape; a message that is not UTF-8 (it may quote what a client
 * sent) has its non-ASCII bytes replaced by '?' so jansson takes it. */
static void error_body(struct srv_resp *r, int status, char *msg)
{
	static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"code\":500}}\n";
	json_t *m = msg ? json_string(msg) : NULL;

	if (!m && msg) {
		for (char *p = msg; *p; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
		m = json_string(msg);
	}
	json_t *j = json_object();
	if (j && m) {
		json_t *e = json_object();
		json_object_set_new(e, "message", m);
		json_object_set_new(e, "code", json_integer(status));
		m = NULL;
		json_object_set_new(j, "error", e);
	}
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(m);
	json_decref(j);
	size_t n = s ? strlen(s) : 0;
	char *t = s ? realloc(s, n + 2) : NULL;
	if (!t) {
		free(s);
		t = strdup(oom);
		status = 500;
		n = t ? strlen(t) - 1 : 0;
	}
	if (t) {
		t[n] = '\n';
		t[n + 1] = '\0';
	}
	srv_resp_body(r, status, "application/json", t, t ? n + 1 : 0);
}

void srv_resp_error(struct srv_resp *r, int status, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (status < 400 || status > 599)
		status = 500;
	error_body(r, status, msg);
	free(msg);
}

void srv_resp_json(struct srv_resp *r, int status, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	json_decref(j);
	size_t n = s ? strlen(s) : 0;
	char *t = s ? realloc(s, n + 2) : NULL;
	if (!t) {
		free(s);
		srv_resp_error(r, 500, "internal error: the reply could not be encoded");
		return;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	srv_resp_body(r, status, "application/json", t, n + 1);
}

void srv_resp_stream(struct srv_resp *r, int status, const char *content_type,
		     srv_stream_fn fn, void *ctx, void (*free_ctx)(void *ctx))
{
	resp_drop(r);
	if (!fn) {
		if (free_ctx)
			free_ctx(ctx);
		set_bug(r, "a stream without a function");
		return;
	}
	r->status = status;
	r->content_type = content_type ? content_type : "application/octet-stream";
	r->stream_ = fn;
	r->stream_ctx_ = ctx;
	r->stream_free_ = free_ctx;
}

/* A header name is a token; a value has no control character but tab. */
static bool header_ok(const char *s, bool name)
{
	size_t n = strlen(s);

	if (n >= 128 || (name && n == 0))
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == 0x7f || (*p < 0x20 && (name || *p != '\t')))
			return false;
		if (name && (*p <= ' ' || strchr("\"(),/:;<=>?@[\\]{}", *p)))
			return false;
	}
	return true;
}

void srv_resp_header(struct srv_resp *r, const char *name, const char *value)
{
	if (r->n_headers < 0 || r->n_headers >= 8) {
		set_bug(r, "more than 8 response headers");
		return;
	}
	if (!name || !value || !header_ok(name, true) || !header_ok(value, false)) {
		set_bug(r, "a malformed response header");
		return;
	}
	strcpy(r->headers[r->n_headers][0], name);
	strcpy(r->headers[r->n_headers][1], value);
	r->n_headers++;
}

/* ---- the access log ------------------------------------------------------ */

/* s (n bytes) into out with every byte but printable ASCII (space and
 * backslash included) as \xNN, at most max characters then "...": out holds
 * max + 4 bytes. The log line stays one line of space-separated fields
 * whatever a client put in its path. */
static void escape(const char *s, size_t n, char *out, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool plain = c > ' ' && c < 0x7f && c != '\\';
		size_t need = plain ? 1 : 4;
		if (o + need > max) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

static void utc_now(char *buf, size_t cap)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 ts.tv_nsec / 1000000);
}

/* `TIME REMOTE METHOD PATH STATUS BYTES MS`: never a body, the query or a
 * header (an Authorization header carries a token). STATUS is "-" when the
 * request ended before an answer (the client went away mid-body). */
static void log_request(struct rq *q)
{
	struct srv_http *h = q->h;
	char t[40], st[16];

	if (!h->log)
		return;
	utc_now(t, sizeof t);
	if (q->status)
		snprintf(st, sizeof st, "%d", q->status);
	else
		strcpy(st, "-");
	long long ms = (long long)((cr_now_ns() - q->t0_ns) / 1000000);
	pthread_mutex_lock(&h->log_mu);
	fprintf(h->log, "%s %s %s %s %s %llu %lld\n", t, q->remote, q->lmethod, q->lpath, st,
		(unsigned long long)q->bytes, ms);
	fflush(h->log);
	pthread_mutex_unlock(&h->log_mu);
}

/* MHD's own messages (MHD_USE_ERROR_LOG): into the log, else stderr. They
 * may quote a request's path: escaped like the access log's. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct srv_http *h = cls;
	FILE *f = h->log ? h->log : stderr;
	char raw[512], esc[512 * 4 + 4];

	int n = vsnprintf(raw, sizeof raw, fmt, ap);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
	while (len && (raw[len - 1] == '\n' || raw[len - 1] == '\r'))
		len--;
	escape(raw, len, esc, sizeof esc - 4);
	for (char *p = esc; (p = strstr(p, "\\x20")); ) { /* spaces read better as spaces */
		*p = ' ';
		memmove(p + 1, p + 4, strlen(p + 4) + 1);
	}
	pthread_mutex_lock(&h->log_mu);
	fprintf(f, "libmicrohttpd: %s\n", esc);
	fflush(f);
	pthread_mutex_unlock(&h->log_mu);
}

/* ---- requests ------------------------------------------------------------ */

static void rq_release(struct rq *q)
{
	if (atomic_fetch_sub(&q->refs, 1) != 1)
		return;
	free(q->body);
	free(q);
}

/* The client's numeric address; "::ffff:1.2.3.4" (a v4 client of a
 * dual-stack socket) as "1.2.3.4". */
static void remote_text(struct MHD_Connection *c, char *out, size_t cap)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(out, cap, "-");
	if (!sa)
		return;
	socklen_t len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);
	if (getnameinfo(sa, len, out, (socklen_t)cap, NULL, 0, NI_NUMERICHOST) != 0) {
		snprintf(out, cap, "-");
		return;
	}
	if (!strncmp(out, "::ffff:", 7) && strchr(out, '.'))
		memmove(out, out + 7, strlen(out + 7) + 1);
}

static struct rq *rq_new(struct srv_http *h, struct MHD_Connection *c, const char *method,
			 const char *url)
{
	struct rq *q = calloc(1, sizeof *q);

	if (!q)
		return NULL;
	q->h = h;
	q->c = c;
	atomic_init(&q->refs, 1);
	atomic_fetch_add(&h->in_flight, 1);
	q->t0_ns = cr_now_ns();
	q->fd = -1;
	remote_text(c, q->remote, sizeof q->remote);
	escape(method, strlen(method), q->lmethod, sizeof q->lmethod - 4);
	escape(url, strlen(url), q->lpath, LOG_PATH_MAX);
	return q;
}

/* Waits up to wait_ms for the client to hang up (or the server to shut
 * the socket at stop); true when it did. Only hang-ups are asked for: bytes
 * of a next request do not wake it. */
static bool peer_gone(int fd, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	int n = poll(&p, 1, wait_ms);
	return n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

bool srv_req_peer_gone(const struct srv_req *q)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(q->conn_, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci && peer_gone(ci->connect_fd, 0);
}

/* MHD's content reader over a srv_stream_fn: never returns 0 (with internal
 * polling MHD would spin on it). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct rq *q = cls;
	(void)pos;

	for (;;) {
		int64_t t0 = cr_now_ns();
		ssize_t n = q->sfn(q->sctx, buf, max);
		if (n > 0 && (size_t)n <= max) {
			q->bytes += (uint64_t)n;
			return n;
		}
		if (n == -1)
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* the wait between calls is STREAM_WAIT_MS in all, the time the
		 * function blocked waiting for data included */
		int64_t spent_ms = (cr_now_ns() - t0) / 1000000;
		int wait = spent_ms >= STREAM_WAIT_MS ? 0 : STREAM_WAIT_MS - (int)spent_ms;
		if (n != 0 || peer_gone(q->fd, wait))
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

/* The stream's response is destroyed: its end, the client gone, or stop. */
static void stream_done(void *cls)
{
	struct rq *q = cls;

	if (q->sfree)
		q->sfree(q->sctx);
	q->sfree = NULL;
	rq_release(q);
}

/* r into an MHD response, queued; what r owned is taken or freed. A
 * handler's mistake (no answer, a status that is no HTTP status, a bad
 * header) is answered 500. */
static enum MHD_Result send_resp(struct rq *q, struct srv_resp *r)
{
	struct MHD_Response *m = NULL;

	if (r->bug_ || (!r->status && !r->body && !r->stream_) || r->status < 200 ||
	    r->status > 599) {
		const char *bug = r->bug_;
		int st = r->status;
		bool none = !st && !r->body && !r->stream_;
		r->bug_ = NULL;
		r->n_headers = 0;
		if (bug)
			srv_resp_error(r, 500, "internal error: %s", bug);
		else if (none)
			srv_resp_error(r, 500, "internal error: no response");
		else
			srv_resp_error(r, 500, "internal error: HTTP status %d", st);
	}
	if (r->stream_) {
		q->sfn = r->stream_;
		q->sctx = r->stream_ctx_;
		q->sfree = r->stream_free_;
		r->stream_ = NULL;
		r->stream_free_ = NULL;
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(q->c, MHD_CONNECTION_INFO_CONNECTION_FD);
		q->fd = ci ? ci->connect_fd : -1;
		atomic_fetch_add(&q->refs, 1);
		m = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, q,
						      stream_done);
		if (!m) {
			stream_done(q);
			r->n_headers = 0;
			srv_resp_error(r, 500, "internal error: out of memory");
		}
	}
	if (!m) {
		if (r->len) {
			m = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
			if (m)
				r->body = NULL;
		} else {
			m = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		}
		q->bytes = r->len;
	}
	if (!m) {
		resp_drop(r);
		return MHD_NO;
	}
	bool own_cache = false;
	if (r->content_type)
		MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	for (int i = 0; i < r->n_headers; i++) {
		MHD_add_response_header(m, r->headers[i][0], r->headers[i][1]);
		own_cache |= !strcasecmp(r->headers[i][0], MHD_HTTP_HEADER_CACHE_CONTROL);
	}
	if (!own_cache)
		MHD_add_response_header(m, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(m, "X-Content-Type-Options", "nosniff");
	q->status = r->status;
	q->answered = true;
	enum MHD_Result ok = MHD_queue_response(q->c, (unsigned)r->status, m);
	MHD_destroy_response(m);
	resp_drop(r);
	return ok;
}

static enum MHD_Result answer_too_large(struct rq *q)
{
	struct srv_resp r;

	memset(&r, 0, sizeof r);
	srv_resp_error(&r, 413, "request body larger than %zu bytes", q->h->max_body);
	return send_resp(q, &r);
}

/* Keeps a piece of the body, or drops it once the limit is passed. */
static enum MHD_Result take_body(struct rq *q, const char *data, size_t n)
{
	size_t max = q->h->max_body;

	if (!q->too_large && n > max - q->len) {
		q->too_large = true;
		free(q->body);
		q->body = NULL;
		q->len = q->cap = 0;
	}
	if (q->too_large || q->answered) {
		q->discarded += n;
		return q->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	if (q->len + n + 1 > q->cap) {
		size_t cap = q->cap ? q->cap : 4096;
		while (cap < q->len + n + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		char *b = realloc(q->body, cap);
		if (!b)
			return MHD_NO;
		q->body = b;
		q->cap = cap;
	}
	memcpy(q->body + q->len, data, n);
	q->len += n;
	q->body[q->len] = '\0';
	return MHD_YES;
}

static enum MHD_Result run_handler(struct rq *q, const char *method, const char *url)
{
	struct srv_req req = {
		.method = method,
		.path = url,
		.body = q->body ? q->body : "",
		.body_len = q->len,
		.conn_ = q->c,
	};
	struct srv_resp r;

	memcpy(req.remote, q->remote, sizeof req.remote);
	memset(&r, 0, sizeof r);
	q->h->fn(q->h->ctx, &req, &r);
	free(q->body);
	q->body = NULL;
	q->len = q->cap = 0;
	return send_resp(q, &r);
}

/* MHD's access handler: called with the headers (*con_cls NULL), then with
 * each piece of the body, then once with nothing: the request is whole. A
 * response may be queued only on the first or the last call. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct srv_http *h = cls;
	struct rq *q = *con_cls;

	if (!q) {
		q = rq_new(h, c, method, url);
		if (!q)
			return MHD_NO;
		*con_cls = q;
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		uint64_t n;
		if (cl && cr_parse_u64(cl, &n) && n > h->max_body)
			q->too_large = true;
		/* a client waiting for "100 Continue" gets the 413 before sending */
		const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_EXPECT);
		if (q->too_large && ex && !strcasecmp(ex, "100-continue") &&
		    !strcmp(version, MHD_HTTP_VERSION_1_1))
			return answer_too_large(q);
		return MHD_YES;
	}
	if (*upload_size) {
		enum MHD_Result ok = take_body(q, upload, *upload_size);
		*upload_size = 0;
		return ok;
	}
	if (q->answered)
		return MHD_YES;
	if (q->too_large)
		return answer_too_large(q);
	return run_handler(q, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct rq *q = *con_cls;
	(void)cls;
	(void)c;
	(void)toe;

	if (!q)
		return;
	*con_cls = NULL;
	log_request(q);
	atomic_fetch_sub(&q->h->in_flight, 1);
	rq_release(q);
}

const char *srv_req_header(const struct srv_req *q, const char *name)
{
	return MHD_lookup_connection_value(q->conn_, MHD_HEADER_KIND, name);
}

const char *srv_req_query(const struct srv_req *q, const char *key)
{
	return MHD_lookup_connection_value(q->conn_, MHD_GET_ARGUMENT_KIND, key);
}

/* ---- the daemon ---------------------------------------------------------- */

/* Why binding failed: MHD does not say, so a socket of the same kind is
 * bound to the same address to learn errno (0: it could be bound). */
static int bind_errno(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, e = 0;

	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
		e = errno;
	close(fd);
	return e;
}

enum cr_status srv_http_start(const struct srv_http_opts *o, struct srv_http **out,
			      struct cr_err *err)
{
	const char *host = o->host && *o->host ? o->host : "127.0.0.1";
	bool v6 = strchr(host, ':') != NULL;
	struct addrinfo hints, *ai = NULL;
	char port_s[16];

	*out = NULL;
	if (!o->fn)
		return cr_errf(err, CR_EINTERNAL, "srv_http_start: no handler");
	if (o->port < 0 || o->port > 65535)
		return cr_errf(err, CR_EUSAGE, "port %d: not in 0..65535", o->port);
	snprintf(port_s, sizeof port_s, "%d", o->port);
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int g = getaddrinfo(host, port_s, &hints, &ai);
	if (g != 0)
		return cr_errf(err, CR_EENV, "cannot listen on %s%s%s:%d: %s", v6 ? "[" : "", host,
			       v6 ? "]" : "", o->port, gai_strerror(g));
	struct srv_http *h = calloc(1, sizeof *h);
	if (!h) {
		freeaddrinfo(ai);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	h->fn = o->fn;
	h->ctx = o->ctx;
	h->max_body = o->max_body ? o->max_body : DEFAULT_MAX_BODY;
	h->log = o->log;
	pthread_mutex_init(&h->log_mu, NULL);
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC; /* ITC: quiesce (srv_http_drain) */
	if (ai->ai_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ai->ai_addr;
		flags |= IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
	}
	h->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, h,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, /* first: it then gets every message */
				MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_CONNECTION_LIMIT,
				o->max_conns ? o->max_conns : DEFAULT_MAX_CONNS,
				MHD_OPTION_CONNECTION_TIMEOUT,
				o->conn_timeout_s ? o->conn_timeout_s : DEFAULT_TIMEOUT_S,
				/* one address holds a share of the connections, not all:
				 * a client that trickles its headers cannot shut out others */
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				o->per_ip_conns ? o->per_ip_conns
						: ((o->max_conns ? o->max_conns : DEFAULT_MAX_CONNS) + 3) / 4,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
	if (!h->d) {
		int e = bind_errno(ai);
		freeaddrinfo(ai);
		pthread_mutex_destroy(&h->log_mu);
		free(h);
		return cr_errf(err, CR_EENV, "cannot listen on %s%s%s:%d: %s", v6 ? "[" : "", host,
			       v6 ? "]" : "", o->port,
			       e ? strerror(e) : "libmicrohttpd could not start (see its log)");
	}
	freeaddrinfo(ai);
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di && di->port ? di->port : o->port;
	*out = h;
	return CR_OK;
}

int srv_http_port(const struct srv_http *h)
{
	return h->port;
}

void srv_http_drain(struct srv_http *h, int wait_ms)
{
	if (!h)
		return;
	if (!h->quiesced) {
		MHD_socket ls = MHD_quiesce_daemon(h->d);
		if (ls != MHD_INVALID_SOCKET)
			close(ls);
		h->quiesced = true;
	}
	for (int waited = 0; atomic_load(&h->in_flight) > 0 && waited < wait_ms; waited += 10) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

void srv_http_stop(struct srv_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	pthread_mutex_destroy(&h->log_mu);
	free(h);
}

enum cr_status srv_parse_listen(const char *s, char *host, size_t cap, int *port,
				struct cr_err *err)
{
	const char *h, *p;
	size_t hn;
	uint64_t v;

	if (!s || !*s)
		return cr_errf(err, CR_EUSAGE,
			       "listen address: empty (HOST:PORT, [IPV6]:PORT or PORT)");
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close)
			return cr_errf(err, CR_EUSAGE, "listen address '%s': no ']' after the IPv6 address", s);
		h = s + 1;
		hn = (size_t)(close - h);
		if (hn == 0)
			return cr_errf(err, CR_EUSAGE, "listen address '%s': no address between [ and ]", s);
		if (close[1] != ':')
			return cr_errf(err, CR_EUSAGE, "listen address '%s': expected :PORT after ]", s);
		p = close + 2;
	} else {
		const char *colon = strrchr(s, ':');
		if (!colon) {
			h = "127.0.0.1";
			hn = strlen(h);
			p = s;
		} else {
			if (memchr(s, ':', (size_t)(colon - s)))
				return cr_errf(err, CR_EUSAGE,
					       "listen address '%s': an IPv6 address goes in brackets, [ADDR]:PORT", s);
			h = s;
			hn = (size_t)(colon - s);
			if (hn == 0)
				return cr_errf(err, CR_EUSAGE, "listen address '%s': no host before ':' (HOST:PORT)", s);
			p = colon + 1;
		}
	}
	if (!cr_parse_u64(p, &v) || v > 65535)
		return cr_errf(err, CR_EUSAGE, "listen address '%s': the port must be a number in 0..65535", s);
	if (hn + 1 > cap)
		return cr_errf(err, CR_EUSAGE, "listen address '%s': the host is longer than %zu bytes", s,
			       cap ? cap - 1 : 0);
	memcpy(host, h, hn);
	host[hn] = '\0';
	*port = (int)v;
	return CR_OK;
}

void srv_vlog(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	if (!f)
		return;
	char t[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
	flockfile(f);
	fprintf(f, "%s %s", t, prefix ? prefix : "");
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fflush(f);
	funlockfile(f);
}

void srv_log(FILE *f, const char *prefix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	srv_vlog(f, prefix, fmt, ap);
	va_end(ap);
}
