/* cr_status.h — the one status enum every crucible function returns, and the
 * error context that carries the human-readable message (file, line, what was
 * expected) back to the caller. No globals: the caller owns the context. */
#ifndef CR_STATUS_H
#define CR_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cr_status {
	CR_OK = 0,
	CR_EUSAGE,   /* bad command line */
	CR_EINPUT,   /* bad input file (task, candidate, csv, gguf, ...) */
	CR_EIO,      /* read/write failed */
	CR_ENOMEM,   /* allocation failed */
	CR_EENV,     /* the environment cannot do it (no GPU, no compiler) */
	CR_EFAIL,    /* a required check failed (gate) */
	CR_EINTERNAL /* a bug: an invariant did not hold */
};

/* Error context: the first error wins (later calls do not overwrite), so the
 * innermost, most specific message reaches the user. */
struct cr_err {
	enum cr_status status;
	char msg[1024];
};

void cr_err_init(struct cr_err *e);
/* Sets status and message (printf-style) unless one is already set; returns
 * the status so callers can `return cr_errf(e, CR_EINPUT, "...")`. e may be
 * NULL. */
enum cr_status cr_errf(struct cr_err *e, enum cr_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* 64 bits from the kernel's CSPRNG (getrandom): for what a candidate must
 * not predict or replay (timing inputs, which outputs are re-checked, guard
 * patterns, per-run shapes). Never derived from the run seed; aborts the
 * process if the kernel cannot supply them (there is no honest fallback). */
uint64_t cr_secure_u64(void);
/* The monotonic clock in nanoseconds (deadlines, compile times). */
int64_t cr_now_ns(void);
/* A non-negative decimal integer filling all of s (no sign, no blanks, no
 * trailing text, within 64 bits): the one rule every option's number
 * follows. false otherwise. */
bool cr_parse_u64(const char *s, uint64_t *out);
/* Opening a file as data. What crucible is handed (a candidate, its
 * sidecar, a completion to replay, another run's csv or json) may have been
 * planted by whoever wrote it: a link to a file only root can read, a FIFO
 * that never delivers, a device, something huge. So a link is never
 * followed, an open never blocks, and nothing but a regular file of a
 * bounded size is read; the message names the file and says why, and
 * never quotes a byte of what was refused. */
enum {
	CR_DATA_FOLLOW = 1u,   /* the last component may be a link: crucible's own
				* files only (data/baselines/cuda/smoke links to candidates) */
	CR_DATA_OPTIONAL = 2u, /* absent is not an error: -1, errno ENOENT, err untouched */
};
#define CR_DATA_MAX_JSON ((size_t)16 << 20) /* a sidecar, run.json, a verdict */
#define CR_DATA_MAX_CSV ((size_t)1 << 34)   /* results.csv, samples.csv: read row by row */
/* Opens path for reading: O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC after an lstat
 * that refuses anything but a regular file (opening a device can act), then
 * fstat: a regular file of at most max bytes. With root, path is relative
 * to root (which is opened as given: the user named it) and no component
 * of path may be a link or "..": the file is inside root. Returns the
 * descriptor (blocking again), or -1 with errno set and err saying "PATH:
 * is a symbolic link (not followed)", "PATH: is a FIFO, not a regular
 * file", "PATH: larger than N bytes", ... */
int cr_open_data(const char *root, const char *path, size_t max, unsigned flags,
		 struct cr_err *err);
/* cr_open_data, then the whole file, NUL-terminated, into a malloc'd
 * buffer (*len bytes); NULL with err set (or, CR_DATA_OPTIONAL, errno
 * ENOENT) otherwise. */
char *cr_read_data(const char *root, const char *path, size_t max, unsigned flags, size_t *len,
		   struct cr_err *err);
/* An output file in a folder that may not be only crucible's (an --out
 * folder being resumed, a published run directory): never written through
 * a link, never opened on a FIFO, never a file someone else planted.
 * CR_OUT_NEW: whatever is at path is removed, then path is created
 * exclusively (O_CREAT|O_EXCL|O_NOFOLLOW) — for temporary files renamed
 * into place and for files rewritten whole; CR_OUT_APPEND: path is opened
 * O_APPEND|O_NOFOLLOW|O_NONBLOCK (created when absent) and must then be a
 * regular file (fstat). Returns a stream ("w"/"a"), or NULL with err naming
 * the path and why. */
enum cr_out_mode { CR_OUT_NEW, CR_OUT_APPEND };
/* What a file of mode m (lstat's) is when it is not a regular one, for a
 * message: "a symbolic link (not followed)", "a FIFO, not a regular file"... */
const char *cr_file_kind(unsigned m);
FILE *cr_fopen_out(const char *path, enum cr_out_mode mode, struct cr_err *err);
/* cr_open_data as a stdio stream ("rb"), for the csv readers. */
FILE *cr_fopen_data(const char *root, const char *path, size_t max, unsigned flags,
		    struct cr_err *err);
/* The whole of one of crucible's own files (CR_DATA_FOLLOW): NULL when it
 * cannot be read, is not a regular file or is larger than max bytes (errno
 * says which). */
char *cr_read_file(const char *path, size_t max, size_t *len);
const char *cr_status_name(enum cr_status st);
/* SPEC §1 exit codes: 0 ok, 1 check failed, 2 usage/input, 3 environment. */
int cr_status_exit_code(enum cr_status st);

#ifdef __cplusplus
}
#endif
#endif
