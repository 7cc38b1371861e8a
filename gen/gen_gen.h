/* gen_gen.h — generators: where `crucible run` gets its completions.
 * Three kinds share one table: the built-in decoder (gen_local.c), an
 * OpenAI-compatible endpoint over libcurl (gen_http.c) and a replay of
 * completions on disk (gen_replay.c). The strategies (gen_run.c) know only
 * this table. */
#ifndef GEN_GEN_H
#define GEN_GEN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"

/* One chat message. role: "system", "user" or "assistant". */
struct gen_msg {
	const char *role;
	const char *content;
};

/* One request: n completions of one conversation. */
struct gen_req {
	const char *task;            /* the registry task (RNG stream key, replay folder) */
	const char *conv;            /* conversation key: a later request with the same key
	                              * extends an earlier one (refine's next turn), so a
	                              * generator may keep its cache; NULL: none */
	const struct gen_msg *msgs;  /* the conversation, ending with a user message */
	int n_msgs;
	int n;                       /* completions wanted; they share the prompt */
	const char *const *ids;      /* [n] the candidate id of each completion (replay's key) */
	uint64_t seed;               /* the request's seed (endpoint: sent as "seed") */
	uint64_t sample0;            /* completion k draws from stream (seed, task, sample0 + k) */
	int max_tokens;              /* completion tokens, reasoning included */
	float temperature, top_p, min_p;
	int top_k;                   /* 0: off */
	const char *const *stops;    /* stop strings */
	int n_stops;
	/* Progress while the request runs (may be NULL): called from the
	 * generator's own thread, any number of times, with completion k's
	 * tokens so far (an estimate while streaming: chunks or bytes / 4) and
	 * its bytes so far; the callee must be thread-safe and quick. */
	void (*on_progress)(void *pctx, int k, int tokens, size_t bytes);
	void *pctx;
};

struct gen_completion {
	char *text;                  /* the completion (malloc'd, NUL-terminated); for an
	                              * endpoint that returns reasoning apart, "<think>" +
	                              * reasoning + "</think>\n" + content, so the text on
	                              * disk is the whole completion */
	size_t len;
	int prompt_tokens;           /* -1: unknown */
	int completion_tokens;       /* reasoning included; -1: unknown */
	int reasoning_tokens;        /* -1: unknown */
	int prefill_tokens;          /* prompt tokens actually computed (not from a cache); -1: unknown */
	char finish[16];             /* "stop", "length", "eog", "context", ... */
	double gen_s;                /* wall time of the request */
	/* Where completion_tokens came from: "decoder" (the built-in decoder
	 * counted what it sampled), "tokenizer" (this completion's text
	 * tokenized with the model's tokenizer: a GGUF file or the server's
	 * /tokenize), "usage" (the server's usage, n = 1), "usage-split"
	 * (one usage over n > 1 choices), "sidecar" (replay), "estimate"
	 * (bytes / 4), "chunks" (its stream chunks with text, a token each at
	 * least: a floor the others fell below, gen_http.c) */
	char count_src[16];
	int usage_tokens;            /* the server's usage.completion_tokens for this
	                              * completion's request as it was sent (all its
	                              * choices), -1: none or not an endpoint */
	long lost_tokens;            /* tokens generated for this completion by tries
	                              * that failed (a stream cut and retried), as
	                              * counted; 0: none */
};

struct gen_generator {
	const char *kind;            /* "builtin", "endpoint", "replay" */
	void *ctx;
	/* most requests in flight at once (1: complete is not re-entrant) */
	int max_inflight;
	/* out[0..rq->n). Errors: CR_EENV when the generator cannot be reached
	 * (connection refused, retries exhausted), CR_EINPUT/CR_EUSAGE for a
	 * request it refuses (an HTTP 4xx other than 429, a replay file that is
	 * missing), each message naming the endpoint or file. */
	enum cr_status (*complete)(void *ctx, const struct gen_req *rq, struct gen_completion *out,
				   struct cr_err *err);
	/* the conversation will not be extended again (may be NULL) */
	void (*end_conv)(void *ctx, const char *conv);
	/* while on, a generator that computes on this machine's CPUs waits (the
	 * verifier is timing); may be NULL */
	void (*pause)(void *ctx, bool on);
	/* what run.json records of it (model file and sha256, or endpoint and
	 * model; never an API key); new reference */
	json_t *(*describe)(void *ctx);
	void (*release)(void *ctx);
};

void gen_completion_release(struct gen_completion *c);

/* An OpenAI-compatible server: POST url + "/chat/completions". */
struct gen_endpoint_cfg {
	const char *url;             /* "http://127.0.0.1:8000/v1" */
	const char *model;           /* "model" in the request */
	const char *api_key_env;     /* environment variable holding the key (NULL: none) */
	int concurrency;             /* requests in flight (max_inflight) */
	double timeout_s;            /* one HTTP request, whole; 0: none when streaming, 600 not */
	double connect_timeout_s;    /* connecting; 0: 30 */
	double idle_timeout_s;       /* no byte from the server for this long: the try failed; 0: 300 */
	double retry_window_s;       /* failed tries are retried (backoff, refused connections
	                              * included) until this long after the first failure of a
	                              * request; 0: 600 */
	int max_retries;             /* at most this many retries of one request; 0: no limit
	                              * but the window */
	double backoff_s;            /* first retry delay, doubled each time up to 30 s; 0: 1 */
	int stream;                  /* 1: "stream": true (server-sent events, default), -1: off */
	const char *tokenizer;       /* how completion tokens are counted: a GGUF file's tokenizer,
	                              * "server" (POST <url without /v1>/tokenize), "usage" (the
	                              * server's usage only), NULL: "server" when it answers,
	                              * else usage (run.json says which) */
	const char *reasoning_effort; /* "low", "medium", "high": sent as reasoning_effort (NULL: not sent) */
};
enum cr_status gen_endpoint_open(const struct gen_endpoint_cfg *c, struct gen_generator *g,
				 struct cr_err *err);

/* The built-in decoder on a GGUF file (decode/'s engine). */
struct gen_local_cfg {
	const char *model;           /* path of the .gguf */
	int threads;                 /* <= 0: the CPUs */
	int ctx;                     /* 0: the model's context length (at most 16384) */
	int concurrency;             /* requests in flight (max_inflight; 0: 1) */
	int batch;                   /* sequences decoded together, of any requests (0: 8) */
	int device;                  /* enum dec_device: 0 auto, 1 cpu, 2 cuda */
	size_t kv_mem;               /* KV cache bytes (0: the engine's default) */
	int max_batch_tokens;        /* tokens per engine step (0: the engine's default) */
	int draft_ngram;             /* speculative decoding by prompt lookup */
	const char *draft_model;     /* speculative decoding with this GGUF as the draft (or NULL) */
	int draft_tokens;            /* drafts per step (0: 4) */
	const char *chat_template;   /* a built-in template by name, over the detected one (NULL: detected) */
	int no_think;                /* Qwen3's thinking switch off (an empty think block opens the answer) */
};
enum cr_status gen_local_open(const struct gen_local_cfg *c, struct gen_generator *g,
			      struct cr_err *err);

/* Completions on disk: DIR/cand/<task>/<id>.txt, with the sidecar
 * <id>.json's token counts when present (a run directory replays as it
 * is). A completion without token counts is counted at one token per
 * four bytes (the sidecar says "tokens_estimated"). */
enum cr_status gen_replay_open(const char *dir, struct gen_generator *g, struct cr_err *err);

#endif
