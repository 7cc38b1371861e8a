/* srv_model.h — the model server (srv_model.c): `crucible serve --model`,
 * an OpenAI-compatible endpoint on the decoder's engine (decode/engine/).
 *
 * One engine thread owns the engine: requests from every connection are
 * submitted to it between steps, so they share its batches (continuous
 * batching), its prefix cache (a group of samples, or requests with the
 * same prompt, compute the prompt once) and its KV pool (preemption under
 * pressure). After each step the thread publishes what each sample drew;
 * the connection threads read it under the server's lock to stream tokens
 * or, at the end, to answer whole. A client that hangs up has its request
 * cancelled between steps: its sequences leave the engine at once.
 *
 * Choice i of a request with seed S draws from the sampling stream
 * (S, T, i), T the request's "task" (a crucible extension; none without
 * it): the stream `crucible generate --seed S` gives sample i of task T
 * (or of --prompt, without a task), whatever else shares the batch.
 * The routes and fields are in docs/SERVE.md ("The model server"). */
#ifndef SRV_MODEL_H
#define SRV_MODEL_H

#include <stdio.h>
#include "common/cr_status.h"
#include "decode/engine/dec_engine.h"
#include "decode/model/dec_model.h"
#include "decode/tok/dec_tok.h"
#include "serve/srv_http.h"

struct srv_model_opts {
	const struct dec_model *m;    /* borrowed: outlives the server */
	const struct dec_tok *tok;    /* borrowed */
	struct dec_engine_cfg cfg;    /* max_ctx, max_seqs, ... (dec_opts_engine_cfg) */
	const char *name;             /* the model's id in requests and /v1/models */
	const char *path;             /* the GGUF path given: also accepted as the model's id */
	int max_queue;                /* samples waiting beyond the engine's max_seqs; more: 429 */
	int max_n;                    /* the largest n of one request */
	FILE *log;                    /* errors and the stop line (never a prompt or a token) */
};

struct srv_model;

/* Opens the engine (the device as cfg says) and starts its thread. */
enum cr_status srv_model_new(const struct srv_model_opts *o, struct srv_model **out, struct cr_err *err);
/* The model's id in requests. */
const char *srv_model_name(const struct srv_model *sm);
/* "cpu" or "cuda", and why (dec_engine_device, _note). */
const char *srv_model_device(const struct srv_model *sm);
const char *srv_model_device_note(const struct srv_model *sm);
/* Shutting down: new requests are 503; the requests running get up to
 * drain_ms to finish, then are cancelled (a stream ends with an error
 * event, a waiting request answers 503). Called before srv_http_stop. */
void srv_model_stop(struct srv_model *sm, int drain_ms);
/* Stops the engine thread and frees. NULL: no-op. After srv_http_stop. */
void srv_model_free(struct srv_model *sm);
/* srv_handler_fn: ctx is the struct srv_model. */
void srv_model_handle(void *ctx, const struct srv_req *q, struct srv_resp *r);

#endif
