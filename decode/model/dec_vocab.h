/* dec_vocab.h — the tokenizer a GGUF file describes (dec_vocab.c). */
#ifndef DEC_VOCAB_H
#define DEC_VOCAB_H

#include "common/cr_status.h"
#include "decode/model/gguf.h"
#include "decode/tok/dec_tok.h"

/* The tokenizer described by g's tokenizer.* metadata. */
enum cr_status dec_vocab_tokenizer(const struct dec_gguf *g, struct dec_tok **out,
				   struct cr_err *err);

#endif
