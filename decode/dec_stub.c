/* dec_stub.c — placeholder: replaced by the decoder implementation. */
#include <stdio.h>
#include "decode/dec.h"
int dec_decode_main(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "crucible decode: not built yet\n"); return 3; }
int dec_generate_main(int argc, char **argv, const struct dec_task_source *src) { (void)argc; (void)argv; (void)src; fprintf(stderr, "crucible generate: not built yet\n"); return 3; }
