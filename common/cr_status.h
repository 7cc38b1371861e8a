/* cr_status.h — the one status enum every crucible function returns, and the
 * error context that carries the human-readable message (file, line, what was
 * expected) back to the caller. No globals: the caller owns the context. */
#ifndef CR_STATUS_H
#define CR_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* The whole file at path, NUL-terminated, into a malloc'd buffer; NULL when
 * it cannot be read or is larger than max bytes. */
char *cr_read_file(const char *path, size_t max, size_t *len);
const char *cr_status_name(enum cr_status st);
/* SPEC §1 exit codes: 0 ok, 1 check failed, 2 usage/input, 3 environment. */
int cr_status_exit_code(enum cr_status st);

#ifdef __cplusplus
}
#endif
#endif
