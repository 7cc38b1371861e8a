/* cr_status.c — status names, exit codes and the error context. */
#include "common/cr_status.h"
#include "common/cr_text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

const char *cr_file_kind(unsigned m)
{
	if (S_ISLNK(m))
		return "a symbolic link (not followed)";
	if (S_ISFIFO(m))
		return "a FIFO, not a regular file";
	if (S_ISDIR(m))
		return "a directory, not a regular file";
	if (S_ISSOCK(m))
		return "a socket, not a regular file";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device, not a regular file";
	return "not a regular file";
}

/* What a file that is not a regular one is, for the message ("is a ..."),
 * and the errno that goes with it. */
static const char *not_regular(mode_t m, int *e)
{
	static __thread char buf[64];

	*e = S_ISLNK(m) ? ELOOP : S_ISDIR(m) ? EISDIR : EINVAL;
	snprintf(buf, sizeof buf, "is %s", cr_file_kind(m));
	return buf;
}

/* "PATH: why" into err with errno e; the path escaped (a candidate names
 * its files), nothing of the file's bytes. Returns -1. */
static int data_fail(struct cr_err *err, unsigned flags, int e, const char *root, const char *path,
		     int plen, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int data_fail(struct cr_err *err, unsigned flags, int e, const char *root, const char *path,
		     int plen, const char *fmt, ...)
{
	char raw[2048], name[2048], why[256];
	va_list ap;

	if (e == ENOENT && (flags & CR_DATA_OPTIONAL)) {
		errno = e;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	snprintf(raw, sizeof raw, "%s%s%.*s", root ? root : "", root ? "/" : "", plen, path);
	cr_text_escape(raw, strlen(raw), name, sizeof name);
	cr_errf(err, e == ENOMEM ? CR_ENOMEM : CR_EINPUT, "%s: %s", name, why);
	errno = e;
	return -1;
}

int cr_open_data(const char *root, const char *path, size_t max, unsigned flags,
		 struct cr_err *err)
{
	const bool follow = flags & CR_DATA_FOLLOW;
	const char *rel = path, *sl;
	int dfd = AT_FDCWD, fd = -1, e = 0, plen = (int)strlen(path);
	struct stat sb;
	char comp[NAME_MAX + 1];

	if (root && (dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		e = errno;
		return data_fail(err, flags, e, NULL, root, (int)strlen(root), "cannot open: %s",
				 strerror(e));
	}
	/* under root, each folder of path in turn: opened, never followed */
	while (root && (sl = strchr(rel, '/'))) {
		size_t n = (size_t)(sl - rel);
		int nd;
		if (n >= sizeof comp) {
			fd = data_fail(err, flags, ENAMETOOLONG, root, path, (int)(sl - path), "cannot open: %s",
				       strerror(ENAMETOOLONG));
			goto out;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		rel = sl + 1;
		if (!n || !strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			fd = data_fail(err, flags, EINVAL, root, path, plen, "leaves its folder (\"..\")");
			goto out;
		}
		if ((nd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			e = errno;
			if (!fstatat(dfd, comp, &sb, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(sb.st_mode))
				fd = data_fail(err, flags, e, root, path, (int)(sl - path), "%s",
					       S_ISLNK(sb.st_mode) ? "is a symbolic link (not followed)"
								   : "is not a folder");
			else
				fd = data_fail(err, flags, e, root, path, (int)(sl - path), "cannot open: %s",
					       strerror(e));
			goto out;
		}
		if (dfd != AT_FDCWD)
			close(dfd);
		dfd = nd;
	}
	if (root && (!*rel || !strcmp(rel, "..") || !strcmp(rel, "."))) {
		fd = data_fail(err, flags, EINVAL, root, path, plen, "not a file name");
		goto out;
	}
	/* lstat first: opening a device can act, even without a read */
	if (fstatat(dfd, rel, &sb, follow ? 0 : AT_SYMLINK_NOFOLLOW)) {
		e = errno;
		fd = data_fail(err, flags, e, root, path, plen, "cannot open: %s", strerror(e));
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		const char *why = not_regular(sb.st_mode, &e);
		fd = data_fail(err, flags, e, root, path, plen, "%s", why);
		goto out;
	}
	if ((uint64_t)sb.st_size > (uint64_t)max) {
		fd = data_fail(err, flags, EFBIG, root, path, plen, "larger than %zu bytes", max);
		goto out;
	}
	/* the flags are the second line: the entry may have changed since */
	fd = openat(dfd, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		e = errno;
		if (e == ELOOP)
			fd = data_fail(err, flags, e, root, path, plen, "is a symbolic link (not followed)");
		else
			fd = data_fail(err, flags, e, root, path, plen, "cannot open: %s", strerror(e));
		goto out;
	}
	if (fstat(fd, &sb)) {
		e = errno;
		close(fd);
		fd = data_fail(err, flags, e, root, path, plen, "cannot open: %s", strerror(e));
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > (uint64_t)max) {
		const char *why = S_ISREG(sb.st_mode) ? "" : not_regular(sb.st_mode, &e);
		close(fd);
		if (S_ISREG(sb.st_mode))
			fd = data_fail(err, flags, EFBIG, root, path, plen, "larger than %zu bytes", max);
		else
			fd = data_fail(err, flags, e, root, path, plen, "%s", why);
		goto out;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) { /* a regular file reads the same */ }
out:
	if (dfd != AT_FDCWD) {
		e = errno;
		close(dfd);
		errno = e;
	}
	return fd;
}

char *cr_read_data(const char *root, const char *path, size_t max, unsigned flags, size_t *len,
		   struct cr_err *err)
{
	int fd = cr_open_data(root, path, max, flags, err), e;
	struct stat sb;
	size_t n = 0, size;
	char *buf;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb)) {
		e = errno;
		close(fd);
		data_fail(err, flags & ~CR_DATA_OPTIONAL, e, root, path, (int)strlen(path), "cannot open: %s",
			  strerror(e));
		return NULL;
	}
	size = (size_t)sb.st_size;
	if (!(buf = malloc(size + 1))) {
		close(fd);
		data_fail(err, 0, ENOMEM, root, path, (int)strlen(path), "out of memory (%zu bytes)", size);
		return NULL;
	}
	while (n < size) {   /* what fstat said, or less when it shrank */
		ssize_t r = read(fd, buf + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			free(buf);
			close(fd);
			data_fail(err, 0, e, root, path, (int)strlen(path), "cannot read: %s", strerror(e));
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

FILE *cr_fopen_data(const char *root, const char *path, size_t max, unsigned flags,
		    struct cr_err *err)
{
	int fd = cr_open_data(root, path, max, flags, err), e;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (!(f = fdopen(fd, "rb"))) {
		e = errno;
		close(fd);
		data_fail(err, 0, e, root, path, (int)strlen(path), "cannot open: %s", strerror(e));
	}
	return f;
}

char *cr_read_file(const char *path, size_t max, size_t *len)
{
	return cr_read_data(NULL, path, max, CR_DATA_FOLLOW, len, NULL);
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

FILE *cr_fopen_out(const char *path, enum cr_out_mode mode, struct cr_err *err)
{
	struct stat sb;
	FILE *f;
	int fd, e;

	if (mode == CR_OUT_NEW) {
		/* a link or a hard link planted under this name is unlinked, not
		 * written through; O_EXCL then creates our own file or fails */
		if (unlink(path) && errno != ENOENT) {
			e = errno;
			data_fail(err, 0, e, NULL, path, (int)strlen(path), "cannot replace: %s", strerror(e));
			return NULL;
		}
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	}
	if (fd < 0) {
		e = errno;
		data_fail(err, 0, e, NULL, path, (int)strlen(path), "%s",
			  e == ELOOP ? "is a symbolic link (not written through)" : strerror(e));
		return NULL;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || (mode == CR_OUT_APPEND && sb.st_nlink != 1)) {
		close(fd);
		data_fail(err, 0, EINVAL, NULL, path, (int)strlen(path), "%s",
			  S_ISREG(sb.st_mode) ? "has other links (not appended to)" : "is not a regular file");
		return NULL;
	}
	if (mode == CR_OUT_APPEND)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (!(f = fdopen(fd, mode == CR_OUT_NEW ? "w" : "a"))) {
		e = errno;
		close(fd);
		data_fail(err, 0, e, NULL, path, (int)strlen(path), "cannot open: %s", strerror(e));
	}
	return f;
}
