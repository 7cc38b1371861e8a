/* sha256.h — SHA-256 of a byte string, as lowercase hex (source_sha256). */
#ifndef CR_SHA256_H
#define CR_SHA256_H
#include <stddef.h>
void cr_sha256_hex(const void *data, size_t len, char out[65]);
#endif
