/* dec_text.c — text helpers of the commands, kept apart so they can be
 * tested without a model: code-block extraction and the `@task` check for
 * candidates, reasoning-length counting, UTF-8 repair for JSON output. */
#include "decode/dec_run.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t fence_len(const char *p, const char *le, size_t need, char *ch);

/* Where the answer starts. Reasoning is a <think> that opens the text
 * (after blanks: how gen/ writes a server's reasoning field, and how a
 * model thinks) up to the first </think> after it, all of the text when it
 * never closes (a completion cut inside its reasoning); or, where the
 * chat template opened the think block in the prompt, the text up to the
 * first </think> alone on its line, else up to a </think> that comes
 * before any fence line. A marker anywhere else is
 * text (a kernel's string, prose about tags), and a fence inside the
 * reasoning is the model's sketch, not its reply. */
static size_t answer_start(const char *text, size_t n)
{
	const char *end = text + n, *p = text, *close;
	char ch;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	if (end - p >= 7 && !memcmp(p, "<think>", 7)) {
		close = memmem(p + 7, (size_t)(end - p - 7), "</think>", 8);
		return close ? (size_t)(close + 8 - text) : n;
	}
	/* a </think> alone on its line ends reasoning wherever it falls: models
	 * write it so, and no kernel has such a line (its sketches do have
	 * fences) */
	for (p = text; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end, *q = p;
		while (q < le && (*q == ' ' || *q == '\t'))
			q++;
		if (le - q >= 8 && !memcmp(q, "</think>", 8)) {
			const char *r = q + 8;
			while (r < le && (*r == ' ' || *r == '\t' || *r == '\r'))
				r++;
			if (r == le)
				return (size_t)(q + 8 - text);
		}
		p = nl ? nl + 1 : end;
	}
	close = memmem(text, n, "</think>", 8);
	if (!close)
		return 0;
	for (p = text; p < close;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		if (fence_len(p, le, 0, &ch))
			return 0;   /* a fence first: the </think> is in the answer */
		p = nl ? nl + 1 : end;
	}
	return (size_t)(close + 8 - text);
}

/* A fence line at p..le (CommonMark's rule): up to 3 spaces, then 3 or more
 * backticks or tildes; an opening fence (need 0) sets *ch, and its info
 * string holds no backtick after backticks; a closing one (need > 0) is at
 * least need of the opening's *ch and nothing but blanks after. Returns
 * the fence's length, 0 when it is no such fence. */
static size_t fence_len(const char *p, const char *le, size_t need, char *ch)
{
	size_t ind = 0, k = 0;
	char c;

	while (p < le && *p == ' ' && ind < 4)
		p++, ind++;
	if (ind > 3 || p >= le || (*p != '`' && *p != '~') || (need && *p != *ch))
		return 0;
	c = *p;
	while (p + k < le && p[k] == c)
		k++;
	if (k < 3 || (need && k < need))
		return 0;
	for (p += k; p < le; p++)
		if (need ? (*p != ' ' && *p != '\t' && *p != '\r') : (c == '`' && *p == '`'))
			return 0;
	if (!need)
		*ch = c;
	return k;
}

/* The body [*b, *e) of the last fenced code block of text[from, n): the
 * last closed one, or an unclosed one after it (to the end). false: none. */
static bool last_block(const char *text, size_t from, size_t n, size_t *b, size_t *e)
{
	const char *p = text + from, *end = text + n, *open = NULL;
	size_t k = 0;
	char ch = '`';
	bool found = false;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		size_t f;

		if (!open && (f = fence_len(p, le, 0, &ch))) {
			open = nl ? nl + 1 : end;
			k = f;
		} else if (open && fence_len(p, le, k, &ch)) {
			*b = (size_t)(open - text);
			*e = (size_t)(p - text);
			found = true;
			open = NULL;
		}
		p = nl ? nl + 1 : end;
	}
	if (open) { /* unterminated last block: take it to the end */
		*b = (size_t)(open - text);
		*e = n;
		found = true;
	}
	return found;
}

void dec_extract_code(const char *text, size_t n, size_t *b, size_t *e)
{
	size_t from = answer_start(text, n);

	if (!last_block(text, from, n, b, e)) {
		*b = from;
		*e = n;
	}
}

int dec_has_code_block(const char *text, size_t n)
{
	size_t b, e;

	return last_block(text, answer_start(text, n), n, &b, &e);
}

int dec_has_task_line(const char *s, size_t n)
{
	for (const char *p = s; p && p < s + n;) {
		const char *q = p;

		while (q < s + n && (*q == ' ' || *q == '\t'))
			q++;
		if (s + n - q >= 8 && !memcmp(q, "//", 2)) {
			q += 2;
			while (q < s + n && *q == ' ')
				q++;
			if (s + n - q >= 5 && !memcmp(q, "@task", 5))
				return 1;
		}
		p = memchr(p, '\n', (size_t)(s + n - p));
		p = p ? p + 1 : NULL;
	}
	return 0;
}

/* Index of the token whose text covers byte offset off (n_tok if past the end). */
static int tok_at(const size_t *ends, int n_tok, size_t off)
{
	int i = 0;

	while (i < n_tok && ends[i] <= off)
		i++;
	return i;
}

int dec_reasoning_tokens(const char *text, const size_t *ends, int n_tok)
{
	const char *open = strstr(text, "<think>"), *close = strstr(text, "</think>");
	const char *fence = strstr(text, "```");
	int r, start = 0;

	/* the thinking starts after the token that completes "<think>" (or at
	 * the start when the chat template opened it in the prompt) */
	if (open && (!close || open < close))
		start = tok_at(ends, n_tok, (size_t)(open - text) + 6) + 1;
	if (close)
		r = tok_at(ends, n_tok, (size_t)(close - text)) - start;
	else if (open)
		r = n_tok - start;
	else if (fence)
		r = tok_at(ends, n_tok, (size_t)(fence - text));
	else {
		/* neither markers nor a fence: the candidate is what
		 * dec_extract_code takes (today the whole text), and only the
		 * tokens wholly before it are reasoning, so a completion that is
		 * all kernel counts none (every token counted before) */
		size_t b, e;

		dec_extract_code(text, strlen(text), &b, &e);
		r = tok_at(ends, n_tok, b);
	}
	return r < 0 ? 0 : r;
}

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_ok(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, cp = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, cp = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
		return 0;
	return len;
}

/* The bytes one U+FFFD replaces at an ill-formed s[0..n): the longest
 * prefix that could still begin a well-formed sequence (Unicode's "maximal
 * subpart", as WHATWG's decoder, Python's and jq's replace), at least 1. */
static size_t ill_formed_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t len, k = 1;

	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		len = 2;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		len = 3;
		lo = s[0] == 0xE0 ? 0xA0 : 0x80; /* no overlong form */
		hi = s[0] == 0xED ? 0x9F : 0xBF; /* no surrogate */
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		len = 4;
		lo = s[0] == 0xF0 ? 0x90 : 0x80;
		hi = s[0] == 0xF4 ? 0x8F : 0xBF; /* nothing past U+10FFFF */
	} else {
		return 1;
	}
	if (k < n && s[k] >= lo && s[k] <= hi)
		for (k++; k < len - 1 && k < n && (s[k] & 0xC0) == 0x80; k++)
			;
	return k;
}

char *dec_utf8_repair(const char *s, size_t n)
{
	char *out = malloc(3 * n + 1), *o = out;
	const unsigned char *u = (const unsigned char *)s;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = u[i] ? utf8_ok(u + i, n - i) : 0;

		if (l) {
			memcpy(o, s + i, l);
			o += l;
			i += l;
		} else {
			/* NUL and each ill-formed subpart become U+FFFD */
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
			i += u[i] ? ill_formed_len(u + i, n - i) : 1;
		}
	}
	*o = 0;
	return out;
}

char *dec_candidate_code(const char *text, size_t n, const char *task)
{
	size_t b, e, cap;
	char *code;
	int has;

	dec_extract_code(text, n, &b, &e);
	has = dec_has_task_line(text + b, e - b);
	cap = e - b + strlen(task) + 32;
	code = malloc(cap);
	if (code)
		snprintf(code, cap, "%s%s%s%.*s", has ? "" : "// @task ", has ? "" : task,
			 has ? "" : "\n", (int)(e - b), text + b);
	return code;
}
