/* cr_text.c — escaping candidate-controlled text (cr_text.h). */
#include "common/cr_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1..4), 0 if invalid; *cp gets
 * the code point. */
static int utf8_len(const unsigned char *p, size_t n, uint32_t *cp)
{
	int len;
	uint32_t c, min;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2; c = p[0] & 0x1f; min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3; c = p[0] & 0x0f; min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4; c = p[0] & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)len > n)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static int unsafe(uint32_t c)
{
	return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) ||
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

static size_t escape(const char *in, size_t n, char *out, size_t cap, int ws_to_space)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0, i = 0;

	if (!cap)
		return 0;
	while (i < n && p[i]) {
		uint32_t c = 0;
		int len = utf8_len(p + i, n - i, &c);
		if (ws_to_space && len && (c == '\n' || c == '\r' || c == '\t')) {
			if (o + 1 >= cap)
				break;
			out[o++] = ' ';
			i++;
		} else if (len && !unsafe(c) && (ws_to_space || c != '\\')) {
			if (o + (size_t)len >= cap)
				break;
			memcpy(out + o, p + i, (size_t)len);
			o += (size_t)len;
			i += (size_t)len;
		} else {
			/* the whole sequence when it is valid but unsafe, else one byte */
			size_t k = len ? (size_t)len : 1;
			if (o + 4 * k >= cap)
				break;
			for (size_t j = 0; j < k; j++) {
				out[o++] = '\\';
				out[o++] = 'x';
				out[o++] = hex[p[i + j] >> 4];
				out[o++] = hex[p[i + j] & 15];
			}
			i += k;
		}
	}
	out[o] = '\0';
	return o;
}

size_t cr_text_escape(const char *in, size_t n, char *out, size_t cap)
{
	return escape(in, n, out, cap, 1);
}

size_t cr_text_escape_name(const char *in, size_t n, char *out, size_t cap)
{
	return escape(in, n, out, cap, 0);
}

char *cr_text_escape_name_dup(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * n + 1);
	if (out)
		escape(s, n, out, 4 * n + 1, 0);
	return out;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

char *cr_text_unescape_name(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (s[i] == '\\' && s[i + 1] == 'x' && (hi = hexval(s[i + 2])) >= 0 &&
		    (lo = hexval(s[i + 3])) >= 0 && (hi || lo)) {
			out[o++] = (char)(hi << 4 | lo);
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	return out;
}

void cr_text_escape_inplace(char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	char *tmp = malloc(cap);
	if (!tmp) {
		/* no memory for a copy: keep only the safe ASCII bytes */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
				s[i] = '?';
		return;
	}
	cr_text_escape(s, n, tmp, cap);
	memcpy(s, tmp, strlen(tmp) + 1);
	free(tmp);
}
