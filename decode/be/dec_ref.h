/* dec_ref.h — the model's own arithmetic that every backend shares (RMS
 * norm, RoPE tables and rotation, the gated unit) and the reference forward
 * the tests hold the backends to (dec_ref.c). */
#ifndef DEC_REF_H
#define DEC_REF_H

#include <stdint.h>
#include "common/cr_status.h"
#include "decode/model/dec_model.h"

void dec_rmsnorm(float *y, const float *x, const float *w, int n, float eps);
void dec_rope_cs(const struct dec_model *m, int pos, float *cs);
void dec_rope_cs_layer(const struct dec_model *m, int pos, int local, float *cs);
void dec_glu(const struct dec_config *c, float *g, const float *u, int64_t n);
void dec_rope(float *v, const struct dec_config *c, const float *cs);

/* Reference forward: no cache, every weight dequantized row by row, sums in
 * double. Writes logits [n, n_vocab] for tokens[0..n) from position 0. */
enum cr_status dec_forward_ref(const struct dec_model *m, const int32_t *tokens, int n,
			       float *logits, struct cr_err *err);

#endif
