/* cr_cli.h — the one command layer every crucible subcommand shares: option
 * errors worded one way ("crucible CMD: unknown option '--x' (did you mean
 * '--y'?)"), help pages laid out one way (usage, options, EXIT STATUS,
 * ENVIRONMENT), git's "did you mean", output folders made (mkdir -p) and
 * locked (flock, naming the holder), and standard output's write errors
 * turned into the exit code. Messages go to stderr; nothing here exits. */
#ifndef CR_CLI_H_COMMON
#define CR_CLI_H_COMMON

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/cr_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The exit codes of SPEC §1, for every command. */
enum {
	CR_EXIT_OK = 0,      /* done; every check (and gate) passed */
	CR_EXIT_FAIL = 1,    /* a check, the gate or a candidate's verdict failed */
	CR_EXIT_USAGE = 2,   /* bad usage or bad input (names the file and line) */
	CR_EXIT_ENV = 3,     /* the environment: no GPU, no compiler, a write failed */
	CR_EXIT_NOTHING = 5, /* eval evaluated nothing */
};

/* "crucible CMD: message\n" on stderr (CMD may be NULL: "crucible: ..."). */
void cr_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: the message, then "Try 'crucible CMD --help'." Returns
 * CR_EXIT_USAGE, so `return cr_cli_usage(cmd, "...")`. */
int cr_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The exit code of a status (cr_status_exit_code: CR_OK 0, CR_EFAIL 1,
 * CR_EENV 3, the rest 2) and, when err carries a message, that message said once. */
int cr_cli_status(const char *cmd, const struct cr_err *err);

/* getopt_long with the shared wording. opterr is cleared and a ':' is put in
 * front of shortopts, so getopt itself prints nothing; an unknown option or
 * one missing its value is said here ("unknown option '--outt' (did you mean
 * '--out'?)", "option '--out' needs a value") followed by the --help hint,
 * and '?' is returned: the caller returns CR_EXIT_USAGE. Otherwise exactly
 * getopt_long's return. Reset optind = 1 (or 0) before the first call as
 * with getopt. */
int cr_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
		  const struct option *longopts);

/* The nearest of cands (n of them) to word, as git words it: edit distance
 * (with transpositions) at most 2 and less than half word's length, or cands
 * starting with word; NULL when nothing is near. */
const char *cr_cli_suggest(const char *word, const char *const *cands, int n);

/* The help page's common tail: an EXIT STATUS section (the lines given,
 * e.g. "0  every candidate ok\n1  ...", or the standard ones when NULL) and
 * an ENVIRONMENT section listing the variables in env (bitmask below). */
enum {
	CR_ENV_DATADIR = 1u << 0,  /* CRUCIBLE_DATADIR: the task registry */
	CR_ENV_SEED = 1u << 1,     /* CRUCIBLE_SEED: a secret mixed into the run seed */
	CR_ENV_CACHE = 1u << 2,    /* CRUCIBLE_CACHE / XDG_CACHE_HOME: compiled candidates */
	CR_ENV_CUDA = 1u << 3,     /* CRUCIBLE_LIBCUDA, CRUCIBLE_NVRTC, CUDA_VISIBLE_DEVICES */
	CR_ENV_TMPDIR = 1u << 4,   /* TMPDIR: work folders */
	CR_ENV_REFCACHE = 1u << 5, /* CRUCIBLE_REF_CACHE_MB */
	CR_ENV_DECODER = 1u << 6,  /* CRUCIBLE_DEC_SIMD, CRUCIBLE_CUDA_IMAGE */
	CR_ENV_COLOR = 1u << 7,    /* NO_COLOR, and whether stderr is a terminal */
	CR_ENV_ALL = 0xffu,
};
void cr_cli_help_tail(FILE *f, const char *exit_lines, unsigned env);

/* Flushes and closes standard output: a write that failed (a full disk,
 * /dev/full, a closed pipe's EPIPE) is said and turns an exit code of 0 into
 * CR_EXIT_ENV; any other rc is returned unchanged. Called once, by main. */
int cr_cli_close_stdout(const char *cmd, int rc);

/* mkdir -p: path and every missing parent, mode 0755 (umask applies). A
 * folder that cannot be made (an existing non-directory on the way, no
 * permission, a full disk) is CR_EENV (exit 3) naming it. */
enum cr_status cr_mkdir_p(const char *path, struct cr_err *err);

/* An output folder for this process alone: creates it (cr_mkdir_p), then
 * takes an exclusive flock on DIR/.crucible.lock without waiting, and writes
 * who holds it ("crucible eval, pid 123 on host, since 2026-12-06T14:00:00Z").
 * Held by another process: CR_EUSAGE with "DIR is in use by crucible eval,
 * pid 123 on host, since ...: wait for it or choose another --out". *fd is
 * the lock (-1 on failure); the lock is released by cr_out_unlock or at
 * exit. The descriptor is close-on-exec. */
enum cr_status cr_out_lock(const char *dir, const char *cmd, int *fd, struct cr_err *err);
void cr_out_unlock(int fd);

/* UTC now as "2026-12-06T14:00:00Z" (21 bytes with the NUL). */
void cr_utc_now(char out[32]);

#ifdef __cplusplus
}
#endif
#endif
