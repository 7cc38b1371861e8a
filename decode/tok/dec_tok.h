/* dec_tok.h — tokenizer and chat templates for the built-in decoder.
 *
 * Built from the vocabulary arrays a GGUF file carries (the GGUF reader fills
 * struct dec_tok_vocab; this module never reads files). Two models:
 *   "gpt2"  byte-level BPE with the pre-tokenizer regexes chosen by `pre`
 *           (llama3: "llama-bpe"/"llama3"; qwen2: "qwen2", "deepseek-r1-qwen";
 *           smollm; gpt2: "gpt-2"; llama.cpp's "default", also for no name;
 *           any other name is an error naming tokenizer.ggml.pre)
 *   "llama" SentencePiece-style BPE over scores with byte fallback (<0xNN>).
 * Encoding then decoding returns exactly the original text. */
#ifndef DEC_TOK_H
#define DEC_TOK_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"

struct dec_tok_vocab {
	const char *model;          /* tokenizer.ggml.model */
	const char *pre;            /* tokenizer.ggml.pre, or NULL */
	const char *arch;           /* general.architecture, or NULL */
	size_t n_tokens;
	const char *const *tokens;  /* [n_tokens], not NUL-terminated: see token_lens */
	const size_t *token_lens;   /* [n_tokens] */
	const float *scores;        /* [n_tokens] or NULL */
	const int32_t *types;       /* [n_tokens] (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte) or NULL */
	size_t n_merges;
	const char *const *merges;  /* [n_merges] "a b", see merge_lens */
	const size_t *merge_lens;
	int32_t bos_id, eos_id, eot_id, eom_id, pad_id, unk_id; /* -1 when absent */
	int add_bos;                /* 1, 0, or -1 for "not in the file" (use the model's default) */
	int add_eos;
	const char *chat_template;  /* tokenizer.chat_template, or NULL */
};

struct dec_tok;

/* The vocab's arrays are copied; the caller may free them afterwards. */
enum cr_status dec_tok_new(const struct dec_tok_vocab *v, struct dec_tok **out,
			   struct cr_err *err);
void dec_tok_free(struct dec_tok *t); /* NULL is a no-op */

size_t dec_tok_n_vocab(const struct dec_tok *t);
int32_t dec_tok_bos(const struct dec_tok *t); /* -1 when none */
int dec_tok_add_bos(const struct dec_tok *t); /* whether encode adds BOS by default */
/* End-of-generation: eos, eot, eom, <|im_end|>, <|eot_id|>, <|end_of_text|>, ... */
int dec_tok_is_eog(const struct dec_tok *t, int32_t id);

/* text[0..len) -> ids (malloc'd into *ids). parse_special: recognise control
 * and user-defined tokens written literally in the text ("<|im_start|>").
 * add_bos: 1 add, 0 don't, -1 as the vocab says. */
enum cr_status dec_tok_encode(const struct dec_tok *t, const char *text, size_t len,
			      int parse_special, int add_bos, int32_t **ids,
			      size_t *n, struct cr_err *err);

/* The raw bytes one token stands for (byte-level mapping undone, SPM '▁'
 * turned into ' ', <0xNN> into the byte). May be a partial UTF-8 sequence.
 * Returns the number of bytes; writes at most cap (the return value may
 * exceed cap, like snprintf). */
size_t dec_tok_piece(const struct dec_tok *t, int32_t id, char *buf, size_t cap);

/* ids -> text (malloc'd, NUL-terminated, *len without the NUL). Special
 * tokens are rendered as their text when render_special, else dropped. */
enum cr_status dec_tok_decode(const struct dec_tok *t, const int32_t *ids, size_t n,
			      int render_special, char **text, size_t *len,
			      struct cr_err *err);

/* Chat templates: ChatML (qwen2/qwen3), Llama 3, DeepSeek-R1 (distill),
 * chosen from the vocab's chat_template text (recognised by markers) or the
 * arch. Renders one system message (may be NULL) and one user message and
 * opens the assistant turn, ready for generation. */
enum cr_status dec_chat_format(const struct dec_tok *t, const char *system,
			       const char *user, char **out, struct cr_err *err);
/* Name of the template dec_chat_format uses ("chatml", "llama3",
 * "deepseek-r1", "phi3", "gemma"; "none"). */
const char *dec_chat_template_name(const struct dec_tok *t);
/* Overrides the detected template by name (--chat-template); CR_EUSAGE
 * naming the value and the known names otherwise. */
enum cr_status dec_chat_set_template(struct dec_tok *t, const char *name, struct cr_err *err);
/* --no-think: the generation prompt opens the answer with an empty think
 * block, as Qwen3's template does with enable_thinking=False. CR_EUSAGE
 * naming the template when it has no such switch (only chatml templates
 * that know </think> have it). */
enum cr_status dec_chat_set_no_think(struct dec_tok *t, struct cr_err *err);

/* Added after the first version (the declarations above are fixed). */
int32_t dec_tok_eos(const struct dec_tok *t); /* -1 when none */
/* The id of the token whose text is text[0..len), or -1. */
int32_t dec_tok_lookup(const struct dec_tok *t, const char *text, size_t len);
/* A token's stored text (byte-level/SPM spelling, not NUL-terminated), or NULL. */
const char *dec_tok_text(const struct dec_tok *t, int32_t id, size_t *len);
/* Control or unknown token: what dec_tok_decode drops unless render_special. */
int dec_tok_is_special(const struct dec_tok *t, int32_t id);
/* The pre-tokenizer in use: "llama3", "qwen2", "gpt2", "smollm", "default" or "spm". */
const char *dec_tok_pre_name(const struct dec_tok *t);
/* SPM only: tokenizer.ggml.add_space_prefix when the file has it (default
 * 1: a U+2581 before the text and after each special token). */
void dec_tok_set_add_space_prefix(struct dec_tok *t, int on);

/* One message of a conversation. role: "system", "user" or "assistant". */
struct dec_chat_msg {
	const char *role;
	const char *content;
};
/* Renders msgs[0..n) with the model's template and opens the assistant turn
 * (the generation prompt). A system message may only come first; the last
 * message must be a user message (CR_EUSAGE otherwise). An earlier assistant
 * turn is written as its template writes it: whole for llama3 and for chatml
 * whose template never mentions </think> (Qwen2.5); only the text after its
 * last </think> for deepseek-r1 and for chatml whose template does (Qwen3,
 * QwQ, which also drop the newlines opening the answer).
 * dec_chat_format(t, system, user) is this with the messages {system, user}
 * ({user} when system is NULL), byte for byte. */
enum cr_status dec_chat_format_msgs(const struct dec_tok *t, const struct dec_chat_msg *msgs,
				    int n, char **out, struct cr_err *err);

#endif
