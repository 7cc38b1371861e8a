/* srv_api.h — the routes of `crucible serve` (srv_api.c): authentication
 * by token, per-user rate limits, each endpoint's checks of its request,
 * and the answers (docs/SERVE.md). Its handler is what srv_http calls. */
#ifndef SRV_API_H
#define SRV_API_H

#include <stddef.h>
#include <stdio.h>
#include "common/cr_status.h"
#include "serve/srv_db.h"
#include "serve/srv_http.h"
#include "serve/srv_sign.h"

struct srv_api;

struct srv_api_opts {
	const char *db;          /* the store's location (each thread opens its own connection) */
	const unsigned char *key; /* [SRV_KEY_BYTES], the signing key (copied) */
	const char *title;       /* the rankings page's heading */
	const char *reward_backend; /* cpu | cuda | auto */
	int max_completions;     /* a reward group's limit */
	double reward_wait_s;    /* the longest a reward request waits (default 600) */
	FILE *log;               /* errors of the service itself (never a token or a secret) */
};

enum cr_status srv_api_new(const struct srv_api_opts *o, struct srv_api **out, struct cr_err *err);
void srv_api_free(struct srv_api *a);
/* Shutting down: requests waiting on reward groups answer at once (202
 * with what is done), new ones are 503; waits up to drain_ms for the
 * handlers running to answer. Called before srv_http_stop, which closes
 * the connections. */
void srv_api_stop(struct srv_api *a, int drain_ms);
/* srv_handler_fn: ctx is the struct srv_api. */
void srv_api_handle(void *ctx, const struct srv_req *q, struct srv_resp *r);

/* A connection of the store from a small pool shared by the threads of one
 * process (opened on demand; one that failed is closed, not reused). */
struct srv_db_pool;
enum cr_status srv_pool_new(const char *location, struct srv_db_pool **out, struct cr_err *err);
void srv_pool_free(struct srv_db_pool *p);
enum cr_status srv_pool_take(struct srv_db_pool *p, struct srv_db **db, struct cr_err *err);
/* broken: close it instead of keeping it (after CR_EIO). */
void srv_pool_give(struct srv_db_pool *p, struct srv_db *db, bool broken);

#endif
