/* malformed_run.h — what the malformed-input replays of issue 30
 * (tests/tasks/malformed_tasks.c, tests/decode/malformed_gguf.c) share:
 * small helpers that die on failure, the process runner (crucible under a
 * timeout, in a session of its own, under an address-space limit), the
 * judging of an outcome, output decoding as the Python drivers did it, the
 * environment, the work folder, options, the CSV report and a thread pool.
 *
 * A driver is one program: anything that cannot go on (out of memory, an
 * unreadable file, a fork that fails) ends it with mr_die(), exit 1. */
#ifndef MALFORMED_RUN_H
#define MALFORMED_RUN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

/* ---- small helpers ---------------------------------------------------- */

/* the name mr_die() puts before its message ("malformed_tasks") */
void mr_set_prog(const char *prog);
void mr_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *mr_xrealloc(void *p, size_t n);
char *mr_xstrdup(const char *s);
/* a formatted string (heap) */
char *mr_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* a growing string, always NUL-terminated once written to */
struct mr_sbuf {
	char *p;
	size_t n, cap;
};

void mr_sb_addn(struct mr_sbuf *b, const char *s, size_t n);
void mr_sb_adds(struct mr_sbuf *b, const char *s);
void mr_sb_addf(struct mr_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the string (heap, "" when empty); b is empty again */
char *mr_sb_take(struct mr_sbuf *b);

/* the field names a message may use */
struct mr_strlist {
	char **v;
	int n;
};

void mr_sl_add(struct mr_strlist *l, const char *s);
void mr_sl_free(struct mr_strlist *l);

/* strcmp of two char *, for qsort */
int mr_cmp_str(const void *a, const void *b);
/* the names in a folder, sorted as Python's sorted(os.listdir()) */
char **mr_list_dir(const char *dir, int *n);
/* a file's bytes (heap, NUL-terminated), *len of them when len */
char *mr_read_file(const char *path, size_t *len);
void mr_write_file(const char *path, const char *s, size_t n);
void mr_mkdir_p(const char *path);
void mr_rm_rf(const char *path);
/* zlib's crc32, the sample the Python drivers drew */
uint32_t mr_crc32_str(const char *s);

/* Python's " ".join(s.split())[-keep:] (code points, not bytes) of raw
 * decoded as Python does (ill-formed UTF-8 as U+FFFD) */
char *mr_squash_tail(const char *raw, size_t rawn, size_t keep);

/* ---- running crucible ------------------------------------------------- */

/* the address-space limit of a run: 8 GiB, none (0) under --asan */
rlim_t mr_as_limit(int asan);

/* argv under env with stdout and stderr in *out, in a session of its own
 * (a hang kills its group) and under an address-space limit (0: none).
 * Returns the exit status, -SIG on a signal; *hung when killed at the
 * timeout. */
int mr_run(char *const *argv, char *const *envp, double timeout, rlim_t as, char **out, size_t *outn, int *hung);

/* needle is in the n bytes of out */
int mr_has(const char *out, size_t n, const char *needle);
/* the first sanitizer word in out, the one Python's SAN.search() finds */
const char *mr_san_hit(const char *out, size_t n);

/* a sanitizer report, a hang or a signal (heap), else NULL */
char *mr_judge_crash(int rc, int hung, const char *out, size_t n);
/* a refusal's message: NULL when it names fname and one of f, else what
 * is wrong (heap), the first most of f joined by sep (most < 0: all) */
char *mr_judge_names(const char *out, size_t n, const char *fname, const struct mr_strlist *f, const char *sep,
		     int most);

/* ---- the environment, the work folder, options ------------------------ */

/* environ with NAME=VALUE set (or, keep_old, kept when set) */
char **mr_env_with(char **base, const char *name, const char *value, int keep_old);
void mr_env_free(char **e);
/* environ with the sanitizers' options for a run (kept when set) */
char **mr_san_env(void);

/* keep emptied and made, or a new TMPDIR/STEM-XXXXXX (heap) */
char *mr_workdir(const char *keep, const char *stem);

/* word is one of the comma-separated list */
int mr_in_list(const char *list, const char *word);

/* argv[*i] is the option name (--name, or --name=VALUE). With val, its
 * value: after '=', else the next argument (usage() when none). */
int mr_opt(int argc, char **argv, int *i, const char *name, const char **val, void (*usage)(void));

/* the options both drivers take */
struct mr_args {
	int full, count, asan, jobs; /* jobs >= 1 */
	double timeout;              /* seconds a run may take */
	const char *keep, *report;   /* NULL: none */
};

/* argv[*i] is one of mr_args' options (--full, --count, --asan, --jobs N,
 * --timeout S, --keep DIR, --report CSV), now in a */
int mr_args_opt(struct mr_args *a, int argc, char **argv, int *i, void (*usage)(void));
/* arg is -h, --help or an option no one took */
int mr_bad_arg(const char *arg);

/* ---- the report --------------------------------------------------------- */

/* path opened for writing, with its CSV header line */
FILE *mr_report_open(const char *path, const char *header);
/* one row: the three names of an input, the command, its exit status
 * (empty on a hang), the verdict ("ok" when NULL), the output's tail */
void mr_report_row(FILE *f, const char *const id[3], const char *cmd, int rc, int hung, const char *verdict,
		   const char *out, size_t outn);

/* ---- the pool ------------------------------------------------------------- */

/* nth threads run(arg, item) on the items put, through a queue of cap
 * (the Python drivers kept 2 * jobs in flight) */
struct mr_pool {
	void (*run)(void *arg, void *item);
	void *arg;
	void **q;
	int cap, head, count, closed, nth;
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t put, get;
};

/* nth may be 0: nothing will be put */
void mr_pool_start(struct mr_pool *p, int nth, int cap, void (*run)(void *arg, void *item), void *arg);
/* waits while the queue is full */
void mr_pool_put(struct mr_pool *p, void *item);
/* every item run; the threads joined and the pool released */
void mr_pool_finish(struct mr_pool *p);

#endif
