/* srv_http.h — the HTTP layer of `crucible serve` (srv_http.c) over
 * libmicrohttpd: one thread per connection, the request body read whole up
 * to a limit, one handler callback per request, JSON replies and errors in
 * one shape, an access log that never records a body or a header. Shared by
 * the leaderboard/reward service and the model server. */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <jansson.h>
#include "common/cr_status.h"

struct srv_http;

/* One request, valid for the handler's call only. */
struct srv_req {
	const char *method;      /* "GET", "POST", ... */
	const char *path;        /* the URL's path, without the query, percent-decoded by
				  * libmicrohttpd: "%2F" arrives as "/" */
	const char *body;        /* the whole body, NUL-terminated ("" when none) */
	size_t body_len;
	char remote[64];         /* the client's address, "127.0.0.1" */
	void *conn_;             /* private: the MHD connection */
};

/* A header of the request (case-insensitive name), NULL when absent. */
const char *srv_req_header(const struct srv_req *q, const char *name);
/* A query-string argument, percent-decoded, NULL when absent. */
const char *srv_req_query(const struct srv_req *q, const char *key);

/* Whether the client has hung up (its end of the connection closed), at
 * once: a handler that waits long (the model server generating a whole
 * answer) asks between waits, and stops the work when it did. */
bool srv_req_peer_gone(const struct srv_req *q);

/* A streamed body (server-sent events, the model server): writes at most max
 * bytes into buf and returns how many; 0: nothing yet (the layer waits for a
 * hang-up, 20 ms less the time the call took, then calls again), -1: the end
 * of the stream. It runs on the connection's thread and may block: a
 * function waiting for data blocks up to 20 ms and returns 0, so new data
 * goes out at once and a disconnect is noticed within 20 ms. */
typedef ssize_t (*srv_stream_fn)(void *ctx, char *buf, size_t max);

/* What the handler answers. Filled through the srv_resp_* calls; the layer
 * owns and frees what they were given. A handler that sets nothing answers
 * 500 "internal error: no response". The last srv_resp_json/_error/_body/
 * _stream call wins (what an earlier one was given is freed); the headers
 * add up. content_type must outlive the handler's call (a literal). */
struct srv_resp {
	int status;
	const char *content_type;
	char *body;              /* malloc'd */
	size_t len;
	int n_headers;
	char headers[8][2][128]; /* extra headers (Retry-After, ...) */
	/* private to srv_http.c */
	srv_stream_fn stream_;  /* non-NULL: a streamed body (body unused) */
	void *stream_ctx_;
	void (*stream_free_)(void *ctx);
	const char *bug_;       /* a misuse (a bad header): answered 500 */
};

/* j is stolen (json_decref'd by the layer); compact JSON + "\n". */
void srv_resp_json(struct srv_resp *r, int status, json_t *j);
/* {"error": {"message": MSG, "code": status}}; status is 4xx or 5xx. */
void srv_resp_error(struct srv_resp *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* body is stolen (free'd). */
void srv_resp_body(struct srv_resp *r, int status, const char *content_type, char *body, size_t len);
/* Up to 8 headers, name and value under 128 bytes, no CR/LF: otherwise the
 * handler has a bug and the answer is 500. Cache-Control: no-store and
 * X-Content-Type-Options: nosniff are added to every response (a handler's
 * own Cache-Control replaces the first). */
void srv_resp_header(struct srv_resp *r, const char *name, const char *value);
/* A streamed body: chunked (HTTP/1.1) or until the connection closes (1.0).
 * free_ctx(ctx) runs exactly once (NULL: none) when the stream ended, the
 * client went away or the server stopped; ctx may learn from it that the
 * client is gone (a generating thread stops). */
void srv_resp_stream(struct srv_resp *r, int status, const char *content_type,
		     srv_stream_fn fn, void *ctx, void (*free_ctx)(void *ctx));

/* Runs on a connection thread; may block (a reward request waits for its
 * group). Many run at once: ctx must be thread-safe. */
typedef void (*srv_handler_fn)(void *ctx, const struct srv_req *q, struct srv_resp *r);

struct srv_http_opts {
	const char *host;        /* "127.0.0.1" (default), "0.0.0.0", "::1" */
	int port;                /* 0: an ephemeral port (srv_http_port tells) */
	size_t max_body;         /* larger: 413 with a message, body never buffered (0: 1 MiB) */
	unsigned max_conns;      /* connections at once (default 256) */
	unsigned conn_timeout_s; /* an idle connection is closed (default 60) */
	unsigned per_ip_conns;   /* connections at once from one address (default: a
				  * quarter of max_conns) */
	srv_handler_fn fn;
	void *ctx;
	FILE *log;               /* access log: one line per request, NULL: none */
};

/* Binds and starts serving (CR_EENV naming host:port when it cannot bind). */
enum cr_status srv_http_start(const struct srv_http_opts *o, struct srv_http **out,
			      struct cr_err *err);
int srv_http_port(const struct srv_http *h);
/* Stops accepting connections (the listening socket is closed) and waits
 * up to wait_ms for the requests in flight to be answered whole: their
 * responses sent, their streams ended. Before srv_http_stop, which cuts
 * whatever is still open. NULL: no-op. */
void srv_http_drain(struct srv_http *h, int wait_ms);
/* Stops accepting, waits for the handlers running, frees. NULL: no-op. */
void srv_http_stop(struct srv_http *h);

/* "HOST:PORT", "[V6]:PORT" or "PORT" into host (cap bytes) and port;
 * "PORT" alone listens on 127.0.0.1; CR_EUSAGE with a message otherwise. */
enum cr_status srv_parse_listen(const char *s, char *host, size_t cap, int *port,
				struct cr_err *err);

/* One line of the service's log: "UTC-time PREFIX" then the message and a
 * newline, written whole (flockfile: lines of the access log, the API and
 * the workers never interleave in the one FILE) and flushed. f NULL: none. */
void srv_log(FILE *f, const char *prefix, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void srv_vlog(FILE *f, const char *prefix, const char *fmt, va_list ap);

#endif
