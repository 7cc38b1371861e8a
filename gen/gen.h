/* gen.h — generation: what the decoder is asked for each task (gen_prompt.c).
 * The room of the generation strategies; it depends on decode/ and tasks/,
 * never on the CLI. */
#ifndef GEN_H
#define GEN_H

#include "decode/dec.h"

/* The registry as a decoder task source: task names by set, and each
 * task's prompt for a backend. */
void gen_task_source(struct dec_task_source *src);

#endif
