/* dec_run.h — what the two commands and gen/ share: command-line options
 * for sampling and the engine, a completion's reasoning tokens, and small
 * text helpers (UTF-8 repair for JSON, reasoning and code-block
 * extraction). It includes the generation loop (engine/dec_gen.h) and the
 * tokenizer of a GGUF file (model/dec_vocab.h) for its users. */
#ifndef DEC_RUN_H
#define DEC_RUN_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"
#include "decode/engine/dec_gen.h"
#include "decode/model/dec_model.h"
#include "decode/model/dec_vocab.h"
#include "decode/sample/dec_sample.h"
#include "decode/tok/dec_tok.h"

/* dec_reasoning_tokens of a generated completion, the token ends taken from
 * tok's pieces (an end-of-generation token adds no text); -1 when out of
 * memory. What `generate` writes as reasoning_tokens. */
int dec_gen_reasoning_tokens(const struct dec_tok *tok, const struct dec_gen_out *o);

/* Options both commands take. */
struct dec_opts {
	const char *model;
	int max_tokens;
	struct dec_sampling samp;
	uint64_t seed;
	int threads;
	int ctx;            /* 0: prompt + max tokens, capped at the model's */
	const char *stops[16];
	int n_stops;
	const char *device;      /* "cpu", "cuda", "auto" (default auto) */
	uint64_t kv_mem;         /* KV cache bytes; 0: derived (docs/DECODER.md) */
	int max_batch_tokens;    /* tokens per engine step; 0: the engine's default */
	const char *draft;       /* speculative decoding: "ngram" (prompt lookup); NULL: off */
	const char *draft_model; /* speculative decoding with this GGUF as the draft */
	int draft_tokens;        /* drafts per step (default 4) */
};

/* getopt_long codes of the shared options; a command numbers its own from
 * DEC_OPT_OWN. */
enum dec_opt_code {
	DEC_OPT_MODEL = 0x100, DEC_OPT_MAX_TOKENS, DEC_OPT_TEMPERATURE, DEC_OPT_TOP_K,
	DEC_OPT_TOP_P, DEC_OPT_MIN_P, DEC_OPT_SEED, DEC_OPT_STOP, DEC_OPT_THREADS, DEC_OPT_CTX,
	DEC_OPT_DEVICE, DEC_OPT_KV_MEM, DEC_OPT_MAX_BATCH_TOKENS, DEC_OPT_DRAFT, DEC_OPT_DRAFT_TOKENS,
	DEC_OPT_DRAFT_MODEL,
	DEC_OPT_HELP, DEC_OPT_OWN
};

/* The shared options' struct option entries, to open a command's table:
 *   static const struct option opts[] = { DEC_OPTS_LONG, { "json", ... }, ..., { 0 } };
 * --help is among them (-h is getopt_long's short option). */
#define DEC_OPTS_LONG                                                                             \
	{ "model", required_argument, NULL, DEC_OPT_MODEL },                                      \
	{ "max-tokens", required_argument, NULL, DEC_OPT_MAX_TOKENS },                            \
	{ "temperature", required_argument, NULL, DEC_OPT_TEMPERATURE },                          \
	{ "top-k", required_argument, NULL, DEC_OPT_TOP_K },                                      \
	{ "top-p", required_argument, NULL, DEC_OPT_TOP_P },                                      \
	{ "min-p", required_argument, NULL, DEC_OPT_MIN_P },                                      \
	{ "seed", required_argument, NULL, DEC_OPT_SEED },                                        \
	{ "stop", required_argument, NULL, DEC_OPT_STOP },                                        \
	{ "threads", required_argument, NULL, DEC_OPT_THREADS },                                  \
	{ "ctx", required_argument, NULL, DEC_OPT_CTX },                                          \
	{ "device", required_argument, NULL, DEC_OPT_DEVICE },                                    \
	{ "kv-mem", required_argument, NULL, DEC_OPT_KV_MEM },                                    \
	{ "max-batch-tokens", required_argument, NULL, DEC_OPT_MAX_BATCH_TOKENS },                \
	{ "draft", required_argument, NULL, DEC_OPT_DRAFT },                                      \
	{ "draft-tokens", required_argument, NULL, DEC_OPT_DRAFT_TOKENS },                        \
	{ "draft-model", required_argument, NULL, DEC_OPT_DRAFT_MODEL },                          \
	{ "help", no_argument, NULL, DEC_OPT_HELP }

/* Sets the shared option code (DEC_OPT_MODEL .. DEC_OPT_MAX_BATCH_TOKENS) to arg.
 * CR_EUSAGE naming the option and the value when arg is not valid. */
enum cr_status dec_opts_apply(struct dec_opts *o, int code, const char *arg, struct cr_err *err);
extern const char dec_opts_help[]; /* the shared options' --help lines */

/* Parses argv[1..argc) with cr_cli_getopt (common/cr_cli.h) over opts
 * (DEC_OPTS_LONG, the command's own entries, a zero entry; "--opt value"
 * and "--opt=value" alike); argv[0] is the command's name ("decode",
 * "generate") for the messages. The shared codes go to dec_opts_apply, the
 * command's to own(ctx, code, arg, err). --help or -h sets *help and ends
 * the parse with CR_OK. CR_EUSAGE for a bad or missing value, an unknown or
 * ambiguous option, a value given to a flag, a positional argument: said
 * here on stderr in the shared wording with the --help hint (did you mean,
 * "Try 'crucible CMD --help'."), err's message then left empty, so the
 * caller says nothing more. The first problem in argv order wins. getopt's
 * state is reset first and argv is always read to its end, so the commands
 * can be called again in one process. getopt_long permutes argv. */
/* A usage error in err said as cr_cli_usage(cmd, ...) does (the message,
 * then the --help hint) unless its message is empty (already said); the
 * message is then emptied. */
void dec_usage_say(const char *cmd, struct cr_err *err);
enum cr_status dec_opts_getopt(struct dec_opts *o, int argc, char **argv, const struct option *opts,
			       enum cr_status (*own)(void *ctx, int code, const char *arg,
						     struct cr_err *err),
			       void *ctx, int *help, struct cr_err *err);

struct dec_engine_cfg;
/* An engine configuration from the shared options: device, threads,
 * kv-mem, max-batch-tokens, speculative decoding (draft is the draft model
 * opened by dec_open_draft, or NULL), and the context and sequences given. */
void dec_opts_engine_cfg(const struct dec_opts *o, int max_ctx, int max_seqs, const struct dec_model *draft,
			 struct dec_engine_cfg *cfg);
/* The draft model at path for a target whose tokenizer is tok: refused
 * (CR_EUSAGE naming both files and the first difference) unless its
 * tokenizer has the same tokens, the same pieces and the same
 * end-of-generation tokens. */
enum cr_status dec_open_draft(const char *path, const char *target_path, const struct dec_tok *tok,
			      struct dec_model **out, struct cr_err *err);

/* The number rules of every option (the same as the harness's commands).
 * dec_opt_int: a non-negative decimal filling all of v (cr_parse_u64) in
 * lo..hi; dec_opt_real: a non-negative decimal number (digits, point,
 * exponent) filling all of v in [lo, hi]. Otherwise CR_EUSAGE:
 * "OPT: expected an integer in LO..HI, got 'V'". */
enum cr_status dec_opt_int(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out,
			   struct cr_err *err);
enum cr_status dec_opt_real(const char *opt, const char *v, double lo, double hi, double *out,
			    struct cr_err *err);
/* A byte count: a non-negative decimal, optionally followed by K, M or G
 * (binary: 2^10, 2^20, 2^30), in lo..hi bytes. */
enum cr_status dec_opt_bytes(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out,
			     struct cr_err *err);

/* [*b, *e) = the body of the last fenced (```) code block of the answer in
 * text[0..n): the answer is what follows the last </think> (nothing when a
 * <think> never closes; all of it without markers), fences as CommonMark
 * reads them (up to 3 spaces of indent, 3 or more backticks, the closing
 * fence at least as long and bare); an unterminated last block runs to the
 * end; without any block, the answer itself. */
void dec_extract_code(const char *text, size_t n, size_t *b, size_t *e);
/* Whether the answer in text[0..n) has a fenced code block, as
 * dec_extract_code reads it: 0 when the candidate would be the fallback text. */
int dec_has_code_block(const char *text, size_t n);
/* The candidate file of a completion: its code block (dec_extract_code)
 * with a `// @task TASK` line put first when it has none. malloc'd. */
char *dec_candidate_code(const char *text, size_t n, const char *task);
/* Whether s[0..n) has a `// @task` line. */
int dec_has_task_line(const char *s, size_t n);
/* Reasoning tokens of a completion whose token i ends at byte ends[i] of
 * text: the tokens inside <think>…</think> (from the start when only
 * </think> appears: the template opened the block), to the end when the
 * block never closes; without think markers, the tokens before the first
 * code fence; with neither, the tokens before the text dec_extract_code
 * takes as the candidate (none: it takes the whole text). */
int dec_reasoning_tokens(const char *text, const size_t *ends, int n_tok);

/* Copy of s[0..n) with invalid UTF-8 replaced by U+FFFD (malloc'd, NUL-terminated). */
char *dec_utf8_repair(const char *s, size_t n);

#endif
