/* malformed_run.c — the pieces the malformed-input replays share
 * (malformed_run.h): helpers, the process runner, judging, output
 * decoding, environment, options, the CSV report, the pool. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "malformed_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- small helpers ------------------------------------------------------- */

static const char *prog = "malformed_run";

void mr_set_prog(const char *p) { prog = p; }

void mr_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

void *mr_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		mr_die("out of memory");
	return p;
}

char *mr_xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		mr_die("out of memory");
	return d;
}

void mr_sb_addn(struct mr_sbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = mr_xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

void mr_sb_adds(struct mr_sbuf *b, const char *s) { mr_sb_addn(b, s, strlen(s)); }

void mr_sb_addf(struct mr_sbuf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		mr_die("out of memory");
	mr_sb_addn(b, s, (size_t)n);
	free(s);
}

char *mr_sb_take(struct mr_sbuf *b)
{
	char *p = b->p ? b->p : mr_xstrdup("");

	b->p = NULL;
	b->n = b->cap = 0;
	return p;
}

char *mr_fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		mr_die("out of memory");
	va_end(ap);
	return s;
}

void mr_sl_add(struct mr_strlist *l, const char *s)
{
	l->v = mr_xrealloc(l->v, sizeof *l->v * (size_t)(l->n + 1));
	l->v[l->n++] = mr_xstrdup(s);
}

void mr_sl_free(struct mr_strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int mr_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **mr_list_dir(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;

	*n = 0;
	if (!d)
		mr_die("cannot read %s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		v = mr_xrealloc(v, sizeof *v * (size_t)(*n + 1));
		v[(*n)++] = mr_xstrdup(e->d_name);
	}
	closedir(d);
	qsort(v, (size_t)*n, sizeof *v, mr_cmp_str);
	return v;
}

char *mr_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct mr_sbuf b = { 0 };
	char buf[65536];
	size_t k;

	if (!f)
		mr_die("cannot read %s: %s", path, strerror(errno));
	while ((k = fread(buf, 1, sizeof buf, f)) > 0)
		mr_sb_addn(&b, buf, k);
	fclose(f);
	if (len)
		*len = b.n;
	return mr_sb_take(&b);
}

void mr_write_file(const char *path, const char *s, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(s, 1, n, f) != n || fclose(f))
		mr_die("cannot write %s: %s", path, strerror(errno));
}

void mr_mkdir_p(const char *path)
{
	char *p = mr_xstrdup(path);

	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		mkdir(p, 0777);
		*s = '/';
	}
	if (mkdir(p, 0777) && errno != EEXIST)
		mr_die("cannot create %s: %s", p, strerror(errno));
	free(p);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(p);
	return 0;
}

void mr_rm_rf(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

uint32_t mr_crc32_str(const char *s)
{
	uint32_t c = 0xffffffffu;

	for (; *s; s++) {
		c ^= (unsigned char)*s;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

/* s with each ill-formed UTF-8 sequence as U+FFFD (Python's
 * decode("utf-8", "replace")) */
static char *utf8_clean(const char *s, size_t n, size_t *outn)
{
	const unsigned char *u = (const unsigned char *)s;
	struct mr_sbuf b = { 0 };

	for (size_t i = 0; i < n; ) {
		unsigned c = u[i];
		size_t k = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		size_t j = 1;

		if (k == 1) {
			mr_sb_addn(&b, s + i, 1);
			i++;
			continue;
		}
		for (; k && j < k && i + j < n; j++) {
			unsigned d = u[i + j], lo = 0x80, hi = 0xbf;

			if (j == 1) {
				lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
				hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
			}
			if (d < lo || d > hi)
				break;
		}
		if (k && j == k)
			mr_sb_addn(&b, s + i, k);
		else
			mr_sb_adds(&b, "\xef\xbf\xbd");
		i += j;
	}
	*outn = b.n;
	return b.p ? b.p : mr_xstrdup("");
}

char *mr_squash_tail(const char *raw, size_t rawn, size_t keep)
{
	struct mr_sbuf b = { 0 };
	size_t i = 0, start, n;
	char *s = utf8_clean(raw, rawn, &n);

	while (i < n) {
		size_t j;

		while (i < n && (strchr(" \t\n\r\v\f\x1c\x1d\x1e\x1f", s[i]) && s[i]))
			i++;
		j = i;
		while (j < n && !(strchr(" \t\n\r\v\f\x1c\x1d\x1e\x1f", s[j]) && s[j]))
			j++;
		if (j > i) {
			if (b.n)
				mr_sb_addn(&b, " ", 1);
			mr_sb_addn(&b, s + i, j - i);
		}
		i = j;
	}
	free(s);
	if (!b.p)
		return mr_xstrdup("");
	start = b.n;
	for (size_t cp = 0; start > 0 && cp < keep; ) {
		start--;
		if (((unsigned char)b.p[start] & 0xc0) != 0x80)
			cp++;
	}
	memmove(b.p, b.p + start, b.n - start + 1);
	return b.p;
}

/* ---- running crucible ----------------------------------------------------- */

rlim_t mr_as_limit(int asan) { return asan ? 0 : (rlim_t)8 << 30; }

int mr_run(char *const *argv, char *const *envp, double timeout, rlim_t as,
		   char **out, size_t *outn, int *hung)
{
	struct mr_sbuf b = { 0 };
	struct timespec t0, t;
	int fd[2], st = 0, killed = 0;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pipe2(fd, O_CLOEXEC))
		mr_die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		mr_die("fork: %s", strerror(errno));
	if (pid == 0) {
		setsid();
		if (as) {
			struct rlimit rl = { as, as };

			setrlimit(RLIMIT_AS, &rl);
		}
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(fd[1]);
	for (;;) {
		struct pollfd p = { fd[0], POLLIN, 0 };
		char buf[65536];
		ssize_t k;
		int ms = -1;

		if (!killed) {
			double el;

			clock_gettime(CLOCK_MONOTONIC, &t);
			el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
			if (el >= timeout) {
				kill(-pid, SIGKILL);
				killed = 1;
				continue;
			}
			ms = (int)((timeout - el) * 1000) + 1;
		}
		if (poll(&p, 1, ms) < 0) {
			if (errno == EINTR)
				continue;
			mr_die("poll: %s", strerror(errno));
		}
		if (!p.revents)
			continue;
		k = read(fd[0], buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		mr_sb_addn(&b, buf, (size_t)k);
	}
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*outn = b.n;
	*out = mr_sb_take(&b);
	*hung = killed;
	if (killed)
		return -SIGKILL;
	return WIFSIGNALED(st) ? -WTERMSIG(st) : WEXITSTATUS(st);
}

int mr_has(const char *out, size_t n, const char *needle)
{
	return memmem(out, n, needle, strlen(needle)) != NULL;
}

static const char *const SAN[] = { "AddressSanitizer", "LeakSanitizer",
	"UndefinedBehaviorSanitizer", "runtime error:" };

const char *mr_san_hit(const char *out, size_t n)
{
	const char *best = NULL, *bw = NULL;

	for (size_t i = 0; i < sizeof SAN / sizeof *SAN; i++) {
		const char *p = memmem(out, n, SAN[i], strlen(SAN[i]));

		if (p && (!best || p < best)) {
			best = p;
			bw = SAN[i];
		}
	}
	return bw;
}

char *mr_judge_crash(int rc, int hung, const char *out, size_t n)
{
	const char *s = mr_san_hit(out, n);

	if (s)
		return mr_fmt("sanitizer: %s", s);
	if (hung)
		return mr_xstrdup("hang");
	if (rc < 0 || rc >= 128)
		return mr_fmt("signal %d", rc < 0 ? -rc : rc - 128);
	return NULL;
}

char *mr_judge_names(const char *out, size_t n, const char *fname, const struct mr_strlist *f, const char *sep,
		     int most)
{
	struct mr_sbuf b = { 0 };

	if (!mr_has(out, n, fname))
		return mr_xstrdup("message does not name the file");
	for (int i = 0; i < f->n; i++)
		if (mr_has(out, n, f->v[i]))
			return NULL;
	mr_sb_adds(&b, "message names none of ");
	for (int i = 0; i < f->n && (most < 0 || i < most); i++) {
		if (i)
			mr_sb_adds(&b, sep);
		mr_sb_adds(&b, f->v[i]);
	}
	return mr_sb_take(&b);
}

/* ---- the environment, the work folder, options ------------------------ */

char **mr_env_with(char **base, const char *name, const char *value, int keep_old)
{
	size_t n = 0, nl = strlen(name);
	char **e;
	int found = 0;

	while (base[n])
		n++;
	e = mr_xrealloc(NULL, sizeof *e * (n + 2));
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(base[i], name, nl) && base[i][nl] == '=') {
			found = 1;
			e[i] = keep_old ? mr_xstrdup(base[i]) : mr_fmt("%s=%s", name, value);
		} else {
			e[i] = mr_xstrdup(base[i]);
		}
	}
	if (!found)
		e[n++] = mr_fmt("%s=%s", name, value);
	e[n] = NULL;
	return e;
}

void mr_env_free(char **e)
{
	for (size_t i = 0; e[i]; i++)
		free(e[i]);
	free(e);
}

/* a huge allocation aborts with a report (instrumented) or fails under
 * the address-space limit (release) */
char **mr_san_env(void)
{
	char **e2 = mr_env_with(environ, "ASAN_OPTIONS", "max_allocation_size_mb=4096:allocator_may_return_null=0", 1);
	char **env = mr_env_with(e2, "UBSAN_OPTIONS", "print_stacktrace=1", 1);

	mr_env_free(e2);
	return env;
}

char *mr_workdir(const char *keep, const char *stem)
{
	const char *tmp = getenv("TMPDIR");
	char *work;

	if (keep) {
		mr_rm_rf(keep);
		mr_mkdir_p(keep);
		return mr_xstrdup(keep);
	}
	work = mr_fmt("%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", stem);
	if (!mkdtemp(work))
		mr_die("mkdtemp: %s", strerror(errno));
	return work;
}

int mr_in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *s = list; s && *s; ) {
		const char *e = strchr(s, ',');
		size_t k = e ? (size_t)(e - s) : strlen(s);

		if (k == n && !strncmp(s, word, n))
			return 1;
		s = e ? e + 1 : NULL;
	}
	return 0;
}

int mr_opt(int argc, char **argv, int *i, const char *name, const char **val, void (*usage)(void))
{
	const char *a = argv[*i], *eq = strchr(a, '=');
	size_t kl = eq && !strncmp(a, "--", 2) ? (size_t)(eq - a) : strlen(a);

	if (kl != strlen(name) || strncmp(a, name, kl))
		return 0;
	if (!val)
		return 1;
	if (eq) {
		*val = eq + 1;
	} else if (*i + 1 < argc) {
		*val = argv[++*i];
	} else {
		usage();
		*val = "";
	}
	return 1;
}

int mr_args_opt(struct mr_args *a, int argc, char **argv, int *i, void (*usage)(void))
{
	const char *v;

	if (mr_opt(argc, argv, i, "--full", NULL, usage))
		a->full = 1;
	else if (mr_opt(argc, argv, i, "--count", NULL, usage))
		a->count = 1;
	else if (mr_opt(argc, argv, i, "--asan", NULL, usage))
		a->asan = 1;
	else if (mr_opt(argc, argv, i, "--jobs", &v, usage))
		a->jobs = atoi(v) < 1 ? 1 : atoi(v);
	else if (mr_opt(argc, argv, i, "--timeout", &v, usage))
		a->timeout = atof(v);
	else if (!mr_opt(argc, argv, i, "--keep", &a->keep, usage) && !mr_opt(argc, argv, i, "--report", &a->report, usage))
		return 0;
	return 1;
}

int mr_bad_arg(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help") || (arg[0] == '-' && arg[1]);
}

/* ---- the report --------------------------------------------------------- */

/* a CSV field as Python's csv module writes it (QUOTE_MINIMAL) */
static void csv_field(FILE *f, const char *s, int last)
{
	if (strpbrk(s, ",\"\r\n")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		fputs(s, f);
	}
	fputs(last ? "\r\n" : ",", f);
}

FILE *mr_report_open(const char *path, const char *header)
{
	FILE *f = fopen(path, "w");

	if (!f)
		mr_die("cannot write %s: %s", path, strerror(errno));
	fputs(header, f);
	return f;
}

void mr_report_row(FILE *f, const char *const id[3], const char *cmd, int rc, int hung, const char *verdict,
		   const char *out, size_t outn)
{
	char rcs[16], *msg = mr_squash_tail(out, outn, 300);

	snprintf(rcs, sizeof rcs, "%d", rc);
	for (int i = 0; i < 3; i++)
		csv_field(f, id[i], 0);
	csv_field(f, cmd, 0);
	csv_field(f, hung ? "" : rcs, 0);
	csv_field(f, verdict ? verdict : "ok", 0);
	csv_field(f, msg, 1);
	free(msg);
}

/* ---- the pool ------------------------------------------------------------- */

static void *worker(void *arg)
{
	struct mr_pool *p = arg;

	for (;;) {
		void *item;

		pthread_mutex_lock(&p->mu);
		while (!p->count && !p->closed)
			pthread_cond_wait(&p->get, &p->mu);
		if (!p->count) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		item = p->q[p->head];
		p->head = (p->head + 1) % p->cap;
		p->count--;
		pthread_cond_signal(&p->put);
		pthread_mutex_unlock(&p->mu);
		p->run(p->arg, item);
	}
}

void mr_pool_start(struct mr_pool *p, int nth, int cap, void (*run)(void *arg, void *item), void *arg)
{
	*p = (struct mr_pool){ .run = run, .arg = arg, .cap = cap, .nth = nth };
	p->q = mr_xrealloc(NULL, sizeof *p->q * (size_t)cap);
	p->th = mr_xrealloc(NULL, sizeof *p->th * (size_t)nth);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->put, NULL);
	pthread_cond_init(&p->get, NULL);
	for (int i = 0; i < nth; i++)
		if (pthread_create(&p->th[i], NULL, worker, p))
			mr_die("pthread_create failed");
}

void mr_pool_put(struct mr_pool *p, void *item)
{
	pthread_mutex_lock(&p->mu);
	while (p->count == p->cap)
		pthread_cond_wait(&p->put, &p->mu);
	p->q[(p->head + p->count) % p->cap] = item;
	p->count++;
	pthread_cond_signal(&p->get);
	pthread_mutex_unlock(&p->mu);
}

void mr_pool_finish(struct mr_pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->closed = 1;
	pthread_cond_broadcast(&p->get);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	pthread_cond_destroy(&p->get);
	pthread_cond_destroy(&p->put);
	pthread_mutex_destroy(&p->mu);
	free(p->th);
	free(p->q);
}
