/* gen_http_impl.h — what the endpoint generator's files share: the answer
 * of one try as choices (gen_sse.c parses it from an event stream or a JSON
 * body) and the token counting over those choices (gen_count.c). Nothing
 * outside gen_http.c, gen_sse.c and gen_count.c uses it. */
#ifndef GEN_HTTP_IMPL_H
#define GEN_HTTP_IMPL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include "gen/gen_gen.h"

#define GEN_RESP_MAX (64u << 20)  /* bytes of one response (body or streamed text) */

struct gen_sbuf {
	char *p;                  /* NUL-terminated when len > 0 */
	size_t len, cap;
};

/* One choice of an answer. */
struct gen_choice {
	struct gen_sbuf content, reasoning; /* reasoning: the field the server returns apart */
	int chunks;               /* stream chunks that carried text (one token each on
	                           * llama.cpp and vLLM) */
	char finish[16];          /* "" until the server says */
	bool seen;
	/* this choice's own usage (completion, reasoning tokens; -1: none):
	 * llama.cpp's server streams a usage chunk after each choice's end */
	long long usage_c, usage_r;
};

/* What one try answered, streamed or whole. */
struct gen_ans {
	int n;
	struct gen_choice *c;     /* [n] by index */
	json_t *usage;            /* the last usage object seen, or NULL; when several
	                           * usage-only chunks came (one a choice), their sum */
	int n_usage;              /* usage-only chunks (choices empty) */
	int last_end;             /* the choice that ended last, -1: none yet */
	bool done;                /* "data: [DONE]" seen */
	size_t bytes;             /* text bytes of all choices */
	/* an error object in the stream: its code (HTTP-like, 0: none) and message */
	int err_code;
	char *err_msg;
	/* a malformed stream: why (the try failed for good) */
	char bad[200];
	/* the event stream's state */
	struct gen_sbuf line, data;
	bool cr, has_data;
	void (*on_progress)(void *pctx, int k, int tokens, size_t bytes);
	void *pctx;
};

int gen_ans_init(struct gen_ans *a, int n);
void gen_ans_release(struct gen_ans *a);
/* Bytes of an event stream; 0, or -1 when the try must stop (a. bad, an
 * error object, or out of memory: a.bad says). */
int gen_sse_feed(struct gen_ans *a, const char *p, size_t n);
/* The end of the stream: an event not closed by a blank line is taken. */
void gen_sse_end(struct gen_ans *a);
/* Whether every choice finished (or [DONE] came). */
bool gen_ans_complete(const struct gen_ans *a);
/* A whole chat.completion JSON body into a (choices by index, usage);
 * CR_EENV naming base when it is not one. */
enum cr_status gen_ans_from_json(struct gen_ans *a, const char *base, const char *body,
				 size_t len, struct cr_err *err);
/* Bytes of a leading "<think>...</think>" in s (a server without a reasoning
 * parser), 0 if none. */
size_t gen_inline_reasoning(const char *s, size_t n);

/* Token counting (gen_count.c). */
enum gen_count_how { GEN_COUNT_USAGE, GEN_COUNT_GGUF, GEN_COUNT_SERVER };

struct gen_count_stats {
	pthread_mutex_t lock;
	long requests;            /* completed requests */
	long matched_sum, matched_one, absent, disagreed;
	long split_all, split_one, estimated; /* without a tokenizer: how usage was read */
	long per_choice;          /* ... as each choice's own (a usage chunk a choice) */
	long tok_failed;          /* requests a tokenizer could not count (usage used) */
	long worst_req;           /* -1: none */
	char worst_id[64];
	long worst_usage, worst_count;
	long retries, lost_tokens;
	long floored;             /* requests where a count was raised to a lower bound the
	                           * answer itself gives (gen_count_floor) */
};

void gen_count_stats_init(struct gen_count_stats *s);
json_t *gen_count_stats_json(struct gen_count_stats *s);

/* A GGUF file's tokenizer alone (no weights read); its count of text,
 * without BOS, special tokens written in the text recognised. */
enum cr_status gen_count_gguf_open(const char *path, void **tok, struct cr_err *err);
void gen_count_gguf_free(void *tok);
long gen_count_gguf(void *tok, const char *text, size_t len);

/* Counts from the server's usage alone (no tokenizer): fills
 * completion/reasoning tokens and count_src of out[0..n) from a's texts, the
 * request's max_tokens and usage; returns 's' (usage read as the sum of the
 * choices), 'o' (as one choice's), 'p' (each choice had its own), 'u' (n = 1),
 * 'e' (no usage: estimate). */
int gen_count_from_usage(const struct gen_ans *a, int max_tokens, struct gen_completion *out);
/* Raises each completion's count to what the answer itself proves it
 * holds, when it is short of that beyond a re-tokenization's slack: its
 * stream chunks with text (each carries a token at least), its own usage
 * chunk when every choice had one, and with n = 1 the request's usage;
 * with n > 1 the choices' sum is topped up to the request's usage by their
 * bytes (it counts all of them or one: either way they hold that much) (count_src "chunks" or
 * "usage"). A text can re-tokenize far shorter than what was sampled (one
 * character a token, control tokens a server strips) and a server can
 * report 0; the budget must not spend less than was seen. Returns how many
 * completions were raised (counted in s). */
int gen_count_floor(struct gen_count_stats *s, const struct gen_ans *a, struct gen_completion *out);
/* prompt_tokens, prefill_tokens, usage_tokens of out[0..n) from usage. */
void gen_count_prompt(const struct gen_ans *a, struct gen_completion *out);
/* The cross-check of counted (tokenizer) totals against usage, into s:
 * the request's own classification ('s' sum, 'o' one choice, 'a' absent,
 * 'd' disagreed). */
int gen_count_check(struct gen_count_stats *s, const struct gen_ans *a,
		    const struct gen_completion *out, const char *id);

#endif
