/* srv_sign.h — the service's secrets (srv_sign.c): the server key and the
 * HMAC-SHA256 that signs a scored submission, API tokens and their hashes,
 * board secrets. Everything random comes from OpenSSL's RAND_bytes. */
#ifndef SRV_SIGN_H
#define SRV_SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include "common/cr_status.h"

enum { SRV_KEY_BYTES = 32 };

/* Reads the key file (64 hex digits and a newline), or creates it (mode
 * 0600, O_EXCL, fsync'd) when create is true and it is missing. A key file
 * readable by group or others is refused (CR_EINPUT naming it). */
enum cr_status srv_key_load(const char *path, bool create, unsigned char key[SRV_KEY_BYTES],
			    struct cr_err *err);
/* HMAC-SHA256 of msg[0..n) under key, as 64 lowercase hex digits + NUL. */
void srv_hmac_hex(const unsigned char key[SRV_KEY_BYTES], const char *msg, size_t n, char hex[65]);
/* hex (any case) is the HMAC of msg: compared in constant time. */
bool srv_hmac_check(const unsigned char key[SRV_KEY_BYTES], const char *msg, size_t n,
		    const char *hex);
/* A fresh API token: "crt_" + 43 base64url characters (256 bits) + NUL. */
void srv_token_new(char tok[48]);
/* The stored form of a token: its SHA-256, 64 hex digits + NUL. */
void srv_token_hash(const char *tok, char hex[65]);
/* A fresh board secret: 64 random bits as a decimal + NUL. */
void srv_secret_new(char out[24]);
/* 64 random bits (seeds of public runs). */
unsigned long long srv_random_u64(void);
/* Constant-time equality of two NUL-terminated strings of equal length. */
bool srv_ct_equal(const char *a, const char *b);

#endif
