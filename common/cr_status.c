/* cr_status.c — status names, exit codes and the error context. */
#include "common/cr_status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void cr_err_init(struct cr_err *e)
{
	e->status = CR_OK;
	e->msg[0] = '\0';
}

enum cr_status cr_errf(struct cr_err *e, enum cr_status st, const char *fmt, ...)
{
	va_list ap;

	if (!e || e->status != CR_OK)
		return st;
	e->status = st;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return st;
}

const char *cr_status_name(enum cr_status st)
{
	switch (st) {
	case CR_OK: return "ok";
	case CR_EUSAGE: return "usage error";
	case CR_EINPUT: return "bad input";
	case CR_EIO: return "i/o error";
	case CR_ENOMEM: return "out of memory";
	case CR_EENV: return "environment";
	case CR_EFAIL: return "check failed";
	case CR_EINTERNAL: return "internal error";
	}
	return "unknown";
}

int cr_status_exit_code(enum cr_status st)
{
	switch (st) {
	case CR_OK: return 0;
	case CR_EFAIL: return 1;
	case CR_EUSAGE: case CR_EINPUT: return 2;
	case CR_EENV: return 3;
	default: return 2;
	}
}

int64_t cr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

char *cr_read_file(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long sz;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || (size_t)sz > max || fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)sz + 1);
	if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
		free(buf);
		buf = NULL;
	}
	if (buf) {
		buf[sz] = '\0';
		*len = (size_t)sz;
	}
out:
	fclose(f);
	return buf;
}

uint64_t cr_secure_u64(void)
{
	uint64_t v;
	size_t got = 0;
	while (got < sizeof v) {
		ssize_t n = getrandom((char *)&v + got, sizeof v - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "crucible: getrandom: %s\n", strerror(errno));
			abort();
		}
		got += (size_t)n;
	}
	return v;
}

bool cr_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	if (!s || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = (uint64_t)v;
	return true;
}
