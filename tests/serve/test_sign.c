/* test_sign.c — the service's secrets (serve/srv_sign.c): HMAC-SHA256
 * against RFC 4231's vectors, the signature check (case, a flipped digit,
 * a wrong length, another key or message), the key file (made once with
 * mode 0600, read back, never overwritten; refused when open to group or
 * others, a link, not a regular file, or malformed, the message naming
 * it), API tokens (format, 256 bits, unique) and their stored hash, board
 * secrets, random seeds, and the constant-time comparison. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/cr_status.h"
#include "serve/srv_sign.h"

static char g_dir[PATH_MAX];

static int dir_setup(void **state)
{
	const char *t = getenv("TMPDIR");
	(void)state;
	snprintf(g_dir, sizeof g_dir, "%s/test_sign-XXXXXX", t && t[0] == '/' ? t : "/tmp");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int dir_teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void in_dir(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", g_dir, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* RFC 4231 test cases 1 and 2: their keys are shorter than 32 bytes, and
 * HMAC pads a short key with zeros to its block, so the key zero-padded to
 * 32 bytes gives the same MAC. */
static void test_hmac_rfc4231(void **state)
{
	unsigned char key[SRV_KEY_BYTES] = { 0 };
	char hex[65];
	(void)state;

	memset(key, 0x0b, 20);
	srv_hmac_hex(key, "Hi There", 8, hex);
	assert_string_equal(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

	memset(key, 0, sizeof key);
	memcpy(key, "Jefe", 4);
	srv_hmac_hex(key, "what do ya want for nothing?", 28, hex);
	assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_hmac_check(void **state)
{
	unsigned char key[SRV_KEY_BYTES], other[SRV_KEY_BYTES];
	const char *msg = "crucible-result v1\nid 17\nstatus ok\n";
	size_t n = strlen(msg);
	char hex[65], up[65], bad[65];
	(void)state;

	for (int i = 0; i < SRV_KEY_BYTES; i++) {
		key[i] = (unsigned char)i;
		other[i] = (unsigned char)(i + 1);
	}
	srv_hmac_hex(key, msg, n, hex);
	assert_int_equal(strlen(hex), 64);
	assert_true(srv_hmac_check(key, msg, n, hex));
	for (int i = 0; i < 65; i++)
		up[i] = (hex[i] >= 'a' && hex[i] <= 'f') ? (char)(hex[i] - 32) : hex[i];
	assert_true(srv_hmac_check(key, msg, n, up)); /* any case */
	for (int i = 0; i < 64; i += 21) {
		memcpy(bad, hex, 65);
		bad[i] = bad[i] == '0' ? '1' : '0';
		assert_false(srv_hmac_check(key, msg, n, bad));
	}
	memcpy(bad, hex, 65);
	bad[63] = '\0';
	assert_false(srv_hmac_check(key, msg, n, bad));          /* short */
	char longer[70];
	snprintf(longer, sizeof longer, "%s0", hex);
	assert_false(srv_hmac_check(key, msg, n, longer));       /* long */
	assert_false(srv_hmac_check(key, msg, n, ""));
	assert_false(srv_hmac_check(key, msg, n, NULL));
	assert_false(srv_hmac_check(key, msg, n - 1, hex));      /* another message */
	assert_false(srv_hmac_check(other, msg, n, hex));        /* another key */
	/* the length counts, not a NUL: a message with a NUL inside is signed whole */
	srv_hmac_hex(key, "a\0b", 3, hex);
	assert_false(srv_hmac_check(key, "a\0c", 3, hex));
	assert_true(srv_hmac_check(key, "a\0b", 3, hex));
}

static void test_key_create_load(void **state)
{
	unsigned char k1[SRV_KEY_BYTES], k2[SRV_KEY_BYTES], k3[SRV_KEY_BYTES];
	char path[PATH_MAX], text[128];
	struct cr_err err;
	struct stat st;
	FILE *f;
	(void)state;

	in_dir(path, sizeof path, "server.key");
	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, false, k1, &err), CR_EINPUT); /* missing, not made */
	assert_non_null(strstr(err.msg, path));
	assert_int_equal(access(path, F_OK), -1);

	umask(0); /* the file's mode is the code's, not the umask's */
	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, true, k1, &err), CR_OK);
	umask(022);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 65);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof text, f));
	fclose(f);
	assert_int_equal(strlen(text), 65);
	assert_int_equal(text[64], '\n');
	assert_int_equal(strspn(text, "0123456789abcdef"), 64);
	for (int i = 0; i < SRV_KEY_BYTES; i++) {
		unsigned v;
		assert_int_equal(sscanf(text + 2 * i, "%2x", &v), 1);
		assert_int_equal(v, k1[i]);
	}

	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, false, k2, &err), CR_OK);
	assert_memory_equal(k1, k2, SRV_KEY_BYTES);
	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, true, k3, &err), CR_OK); /* there: read, not remade */
	assert_memory_equal(k1, k3, SRV_KEY_BYTES);

	/* a key written by hand, upper case and without the newline, is read */
	in_dir(path, sizeof path, "hand.key");
	write_file(path, "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F", 0600);
	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, false, k2, &err), CR_OK);
	for (int i = 0; i < SRV_KEY_BYTES; i++)
		assert_int_equal(k2[i], i);

	/* two fresh keys differ */
	in_dir(path, sizeof path, "second.key");
	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, true, k2, &err), CR_OK);
	assert_memory_not_equal(k1, k2, SRV_KEY_BYTES);
}

static void expect_refused(const char *path, bool create, const char *why)
{
	unsigned char k[SRV_KEY_BYTES];
	struct cr_err err;

	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, create, k, &err), CR_EINPUT);
	if (!strstr(err.msg, path) || !strstr(err.msg, why))
		fail_msg("'%s': expected the path and '%s' in it", err.msg, why);
}

static void test_key_refuse_mode(void **state)
{
	char path[PATH_MAX];
	unsigned char k[SRV_KEY_BYTES];
	struct cr_err err;
	const char *good = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
	(void)state;

	in_dir(path, sizeof path, "open.key");
	write_file(path, good, 0644);
	expect_refused(path, false, "group or others");
	expect_refused(path, true, "0644");
	write_file(path, good, 0640);
	expect_refused(path, false, "group or others");
	write_file(path, good, 0602); /* writable by others: replaceable, so refused too */
	expect_refused(path, false, "group or others");
	write_file(path, good, 0600);
	cr_err_init(&err);
	assert_int_equal(srv_key_load(path, false, k, &err), CR_OK);
	assert_int_equal(k[1], 0x11);
}

static void test_key_refuse_link(void **state)
{
	char path[PATH_MAX], target[PATH_MAX], link[PATH_MAX];
	const char *good = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
	(void)state;

	in_dir(target, sizeof target, "real.key");
	write_file(target, good, 0600);
	in_dir(path, sizeof path, "link.key");
	assert_int_equal(symlink(target, path), 0);
	expect_refused(path, false, "symbolic link");
	expect_refused(path, true, "symbolic link");

	/* a dangling link is not followed to make a key where it points */
	in_dir(link, sizeof link, "dangling.key");
	in_dir(target, sizeof target, "made-through-link.key");
	assert_int_equal(symlink(target, link), 0);
	expect_refused(link, true, "symbolic link");
	assert_int_equal(access(target, F_OK), -1);

	/* a folder, a FIFO (opening it must not block) */
	in_dir(path, sizeof path, "dir.key");
	assert_int_equal(mkdir(path, 0700), 0);
	expect_refused(path, false, "not a regular file");
	in_dir(path, sizeof path, "fifo.key");
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_refused(path, false, "not a regular file");
}

static void test_key_refuse_malformed(void **state)
{
	static const char *bad[] = {
		"",
		"\n",
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddee\n",     /* 62 digits */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeef\n",    /* 63 */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00\n", /* 66 */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n\n", /* a blank line */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff \n",  /* a blank */
		"0011223344556677889Xaabbccddeeff00112233445566778899aabbccddeeff\n",   /* not hex */
		" 0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
	};
	char path[PATH_MAX];
	(void)state;

	in_dir(path, sizeof path, "bad.key");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_file(path, bad[i], 0600);
		expect_refused(path, false, "malformed");
		expect_refused(path, true, "malformed"); /* there: never remade over */
	}
}

static bool is_b64url(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '_';
}

static int cmp_tok(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static void test_token(void **state)
{
	enum { N = 2000 };
	char (*toks)[48] = calloc(N, sizeof *toks);
	int ones = 0;
	(void)state;

	assert_non_null(toks);
	for (int i = 0; i < N; i++) {
		char *t = toks[i];
		srv_token_new(t);
		assert_int_equal(strlen(t), 47);
		assert_memory_equal(t, "crt_", 4);
		for (int k = 4; k < 47; k++)
			assert_true(is_b64url(t[k]));
		/* 43 characters carry 258 bits; the last one's two low bits are padding */
		assert_non_null(strchr("AEIMQUYcgkosw048", t[46]));
		for (int k = 4; k < 46; k++)
			ones += t[k] >= 'a'; /* a rough look at the spread below */
	}
	qsort(toks, N, sizeof *toks, cmp_tok);
	for (int i = 1; i < N; i++)
		assert_string_not_equal(toks[i - 1], toks[i]);
	/* 26 of 64 characters are lower case: about 40.6% of 84000 */
	assert_in_range(ones, 32000, 36300);
	free(toks);
}

static void test_token_hash(void **state)
{
	char hex[65], a[48], b[48], ha[65], hb[65];
	(void)state;

	srv_token_hash("crt_abc", hex); /* sha256sum of the 7 bytes "crt_abc" */
	assert_string_equal(hex, "b07bdccc486b331dde48fbbc8112b163616a1894f66e831c37df966b5813d4b3");
	srv_token_hash("abc", hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	srv_token_new(a);
	srv_token_new(b);
	srv_token_hash(a, ha);
	srv_token_hash(b, hb);
	assert_int_equal(strspn(ha, "0123456789abcdef"), 64);
	assert_int_equal(strlen(ha), 64);
	assert_string_not_equal(ha, hb);
	assert_null(strstr(ha, a + 4)); /* the hash holds nothing of the token */
}

static void test_secret_random(void **state)
{
	char s1[24], s2[24];
	uint64_t v;
	unsigned long long r[64];
	int high = 0;
	(void)state;

	srv_secret_new(s1);
	srv_secret_new(s2);
	assert_true(cr_parse_u64(s1, &v));
	assert_true(cr_parse_u64(s2, &v));
	assert_string_not_equal(s1, s2);
	for (int i = 0; i < 64; i++) {
		r[i] = srv_random_u64();
		high += (int)(r[i] >> 63);
		for (int k = 0; k < i; k++)
			assert_true(r[i] != r[k]);
	}
	assert_in_range(high, 8, 56); /* all 64 bits are drawn, the top one too */
}

static void test_ct_equal(void **state)
{
	(void)state;
	assert_true(srv_ct_equal("", ""));
	assert_true(srv_ct_equal("abcdef", "abcdef"));
	assert_false(srv_ct_equal("abcdef", "abcdeg"));
	assert_false(srv_ct_equal("abcdef", "bbcdef"));
	assert_false(srv_ct_equal("abcdef", "abcde"));
	assert_false(srv_ct_equal("abc", "abcdef"));
	assert_false(srv_ct_equal("", "a"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hmac_rfc4231),
		cmocka_unit_test(test_hmac_check),
		cmocka_unit_test(test_key_create_load),
		cmocka_unit_test(test_key_refuse_mode),
		cmocka_unit_test(test_key_refuse_link),
		cmocka_unit_test(test_key_refuse_malformed),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_token_hash),
		cmocka_unit_test(test_secret_random),
		cmocka_unit_test(test_ct_equal),
	};
	return cmocka_run_group_tests(tests, dir_setup, dir_teardown);
}
