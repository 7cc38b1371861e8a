/* srv_sign.c — the service's secrets: the server key file (read, or made
 * once with O_EXCL and fsync'd), HMAC-SHA256 signatures and their
 * constant-time check, API tokens and the SHA-256 stored in their place,
 * board secrets and public seeds. Every random byte comes from OpenSSL's
 * RAND_bytes; when it fails the process aborts (a predictable token or
 * secret is worse than no service). */
#include "serve/srv_sign.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/sha256.h"

/* the key file: 64 hex digits and a newline */
enum { KEY_HEX = 2 * SRV_KEY_BYTES, KEY_FILE_LEN = KEY_HEX + 1 };

static void random_bytes(unsigned char *buf, size_t n)
{
	if (RAND_bytes(buf, (int)n) != 1) {
		/* no honest fallback: a guessable token or secret is worse than none */
		fprintf(stderr, "crucible serve: RAND_bytes failed: no random bytes for a key, token or "
				"secret; stopping\n");
		abort();
	}
}

static void to_hex(const unsigned char *b, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[b[i] >> 4];
		hex[2 * i + 1] = digits[b[i] & 15];
	}
	hex[2 * n] = '\0';
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The folder of path, fsync'd so a freshly made key file's name survives a
 * crash as well as its bytes. */
static enum cr_status sync_dir(const char *path, struct cr_err *err)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int fd;

	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cr_errf(err, CR_EIO, "%s: cannot open its folder to sync it: %s", path,
			       strerror(errno));
	if (fsync(fd) && errno != EINVAL) {
		int e = errno;
		close(fd);
		return cr_errf(err, CR_EIO, "%s: cannot sync its folder: %s", path, strerror(e));
	}
	close(fd);
	return CR_OK;
}

/* Makes the key file: O_EXCL (a file that appeared meanwhile is not
 * overwritten: EEXIST goes back to the caller, which reads it), mode 0600,
 * the bytes and the folder fsync'd. A failed write leaves no half key. */
static enum cr_status key_create(const char *path, unsigned char key[SRV_KEY_BYTES], struct cr_err *err)
{
	char text[KEY_FILE_LEN + 1];
	enum cr_status st;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t off = 0;

	if (fd < 0) {
		if (errno == EEXIST)
			return CR_OK; /* made by someone else since: read it */
		return cr_errf(err, CR_EIO, "%s: cannot create the key file: %s", path, strerror(errno));
	}
	random_bytes(key, SRV_KEY_BYTES);
	to_hex(key, SRV_KEY_BYTES, text);
	text[KEY_HEX] = '\n';
	text[KEY_FILE_LEN] = '\0';
	while (off < KEY_FILE_LEN) {
		ssize_t w = write(fd, text + off, KEY_FILE_LEN - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd))
		goto fail;
	OPENSSL_cleanse(text, sizeof text);
	if (close(fd))
		goto fail_closed;
	return sync_dir(path, err);
fail:
	close(fd);
fail_closed:
	st = cr_errf(err, CR_EIO, "%s: cannot write the key file: %s", path, strerror(errno));
	OPENSSL_cleanse(text, sizeof text);
	OPENSSL_cleanse(key, SRV_KEY_BYTES);
	unlink(path);
	return st;
}

/* Reads an existing key file: a regular file, not a link, readable by its
 * owner alone, holding 64 hex digits and a newline. The message names the
 * file and says why; it never quotes what the file holds. */
static enum cr_status key_read(const char *path, unsigned char key[SRV_KEY_BYTES], struct cr_err *err)
{
	char text[KEY_FILE_LEN + 2];
	struct stat st;
	ssize_t n;
	size_t len = 0;
	enum cr_status rc = CR_OK;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ELOOP)
			return cr_errf(err, CR_EINPUT, "%s: the key file is a symbolic link (not followed)",
				       path);
		return cr_errf(err, errno == ENOENT ? CR_EINPUT : CR_EIO, "%s: cannot open the key file: %s",
			       path, strerror(errno));
	}
	if (fstat(fd, &st)) {
		rc = cr_errf(err, CR_EIO, "%s: cannot stat the key file: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = cr_errf(err, CR_EINPUT, "%s: the key file is not a regular file", path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		rc = cr_errf(err, CR_EINPUT, "%s: the key file is open to group or others (mode %04o); "
			     "it must be the owner's alone (chmod 600)", path,
			     (unsigned)(st.st_mode & 07777));
		goto out;
	}
	while (len < sizeof text) {
		n = read(fd, text + len, sizeof text - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = cr_errf(err, CR_EIO, "%s: cannot read the key file: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* exactly 64 hex digits, then a newline (or the end) */
	if (len < KEY_HEX || len > KEY_FILE_LEN || (len == KEY_FILE_LEN && text[KEY_HEX] != '\n')) {
		rc = cr_errf(err, CR_EINPUT, "%s: malformed key file (expected 64 hex digits and a newline)",
			     path);
		goto out;
	}
	for (int i = 0; i < SRV_KEY_BYTES; i++) {
		int hi = hex_val(text[2 * i]), lo = hex_val(text[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			rc = cr_errf(err, CR_EINPUT,
				     "%s: malformed key file (expected 64 hex digits and a newline)", path);
			OPENSSL_cleanse(key, SRV_KEY_BYTES);
			goto out;
		}
		key[i] = (unsigned char)(hi << 4 | lo);
	}
out:
	OPENSSL_cleanse(text, sizeof text);
	close(fd);
	return rc;
}

enum cr_status srv_key_load(const char *path, bool create, unsigned char key[SRV_KEY_BYTES],
			    struct cr_err *err)
{
	struct stat st;

	if (create && lstat(path, &st) && errno == ENOENT) {
		enum cr_status rc = key_create(path, key, err);
		if (rc)
			return rc;
		/* read back what is there: ours, or another process's made meanwhile */
	}
	return key_read(path, key, err);
}

void srv_hmac_hex(const unsigned char key[SRV_KEY_BYTES], const char *msg, size_t n, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	if (!HMAC(EVP_sha256(), key, SRV_KEY_BYTES, (const unsigned char *)msg, n, md, &md_len) ||
	    md_len != 32) {
		/* only an allocation failure inside OpenSSL gets here: sign nothing */
		fprintf(stderr, "crucible serve: HMAC-SHA256 failed\n");
		abort();
	}
	to_hex(md, 32, hex);
}

bool srv_hmac_check(const unsigned char key[SRV_KEY_BYTES], const char *msg, size_t n,
		    const char *hex)
{
	char want[65], got[65];
	size_t i;

	if (!hex)
		return false;
	for (i = 0; i < 64 && hex[i]; i++) {
		char c = hex[i];
		got[i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
	}
	if (i != 64 || hex[64])
		return false;
	got[64] = '\0';
	srv_hmac_hex(key, msg, n, want);
	return CRYPTO_memcmp(want, got, 64) == 0;
}

void srv_token_new(char tok[48])
{
	static const char b64url[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char b[33]; /* 32 random bytes and a zero pad: 43 characters, 256 bits */
	char *p = tok;

	random_bytes(b, 32);
	b[32] = 0;
	memcpy(p, "crt_", 4);
	p += 4;
	for (int i = 0; i < 33; i += 3) {
		unsigned v = (unsigned)b[i] << 16 | (unsigned)b[i + 1] << 8 | b[i + 2];
		*p++ = b64url[v >> 18 & 63];
		*p++ = b64url[v >> 12 & 63];
		*p++ = b64url[v >> 6 & 63];
		*p++ = b64url[v & 63];
	}
	/* 44 characters were written for 33 bytes; the last one is padding's */
	tok[4 + 43] = '\0';
	OPENSSL_cleanse(b, sizeof b);
}

void srv_token_hash(const char *tok, char hex[65])
{
	cr_sha256_hex(tok, strlen(tok), hex);
}

unsigned long long srv_random_u64(void)
{
	unsigned char b[8];
	unsigned long long v = 0;

	random_bytes(b, sizeof b);
	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

void srv_secret_new(char out[24])
{
	snprintf(out, 24, "%llu", srv_random_u64());
}

bool srv_ct_equal(const char *a, const char *b)
{
	size_t n = strlen(a);

	/* the length is not the secret: only the bytes are compared in constant time */
	if (n != strlen(b))
		return false;
	return CRYPTO_memcmp(a, b, n) == 0;
}
