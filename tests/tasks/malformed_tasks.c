/* malformed_tasks.c — issue 30's malformed-input replay for task files and
 * candidate directives: structured mutations of the registry's own files,
 * each run through crucible, checked for exit 2 (a task) or a verdict (a
 * candidate; a format_error names FILE:LINE, SPEC §4) with a message naming
 * the file and the field, and for no sanitizer report, no signal, no hang.
 *
 * usage: malformed_tasks CRUCIBLE [--full] [--kind tasks,cand] [--jobs N]
 *                        [--timeout S] [--keep DIR] [--report CSV]
 *                        [--count] [--asan]
 *
 * Without --full: a fixed sample that runs in seconds on a release build
 * (the test suite's `malformed_tasks`); --full: every mutation of a base
 * task per op of the registry (the issue's replay, meant for an ASan+UBSan
 * build, with --asan: no address-space limit). --keep DIR keeps the
 * generated files (DIR/data/tasks/m/NAME.json, DIR/cands/candN.c) for a
 * replay by hand; --report writes one CSV row per command run. Needs
 * CRUCIBLE_DATADIR (the registry). Exit 0 when every input passes.
 *
 * The files written are byte for byte those of the Python driver this
 * replaces (json.dumps' layout: ", " and ": ", \uXXXX escapes, floats as
 * repr), so the mutant names and counts of both agree. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- small helpers ------------------------------------------------------- */

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("malformed_tasks: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		die("out of memory");
	return d;
}

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_addn(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_adds(struct sbuf *b, const char *s) { sb_addn(b, s, strlen(s)); }

static void sb_addf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("out of memory");
	sb_addn(b, s, (size_t)n);
	free(s);
}

static char *sb_take(struct sbuf *b)
{
	char *p = b->p ? b->p : xstrdup("");

	b->p = NULL;
	b->n = b->cap = 0;
	return p;
}

static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		die("out of memory");
	va_end(ap);
	return s;
}

/* the field names a message may use */
struct strlist {
	char **v;
	int n;
};

static void sl_add(struct strlist *l, const char *s)
{
	l->v = xrealloc(l->v, sizeof *l->v * (size_t)(l->n + 1));
	l->v[l->n++] = xstrdup(s);
}

static void sl_free(struct strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the names in a folder, sorted as Python's sorted(os.listdir()) */
static char **list_dir(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;

	*n = 0;
	if (!d)
		die("cannot read %s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		v = xrealloc(v, sizeof *v * (size_t)(*n + 1));
		v[(*n)++] = xstrdup(e->d_name);
	}
	closedir(d);
	qsort(v, (size_t)*n, sizeof *v, cmp_str);
	return v;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct sbuf b = { 0 };
	char buf[65536];
	size_t k;

	if (!f)
		die("cannot read %s: %s", path, strerror(errno));
	while ((k = fread(buf, 1, sizeof buf, f)) > 0)
		sb_addn(&b, buf, k);
	fclose(f);
	if (len)
		*len = b.n;
	return sb_take(&b);
}

static void write_file(const char *path, const char *s, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(s, 1, n, f) != n || fclose(f))
		die("cannot write %s: %s", path, strerror(errno));
}

static void mkdir_p(const char *path)
{
	char *p = xstrdup(path);

	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		mkdir(p, 0777);
		*s = '/';
	}
	if (mkdir(p, 0777) && errno != EEXIST)
		die("cannot create %s: %s", p, strerror(errno));
	free(p);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(p);
	return 0;
}

static void rm_rf(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* zlib's crc32, the sample the Python driver drew */
static uint32_t crc32_str(const char *s)
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
	struct sbuf b = { 0 };

	for (size_t i = 0; i < n; ) {
		unsigned c = u[i];
		size_t k = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		size_t j = 1;

		if (k == 1) {
			sb_addn(&b, s + i, 1);
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
			sb_addn(&b, s + i, k);
		else
			sb_adds(&b, "\xef\xbf\xbd");
		i += j;
	}
	*outn = b.n;
	return b.p ? b.p : xstrdup("");
}

/* Python's " ".join(s.split())[-keep:] (code points, not bytes) of s
 * decoded as Python does */
static char *squash_tail(const char *raw, size_t rawn, size_t keep)
{
	struct sbuf b = { 0 };
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
				sb_addn(&b, " ", 1);
			sb_addn(&b, s + i, j - i);
		}
		i = j;
	}
	free(s);
	if (!b.p)
		return xstrdup("");
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

/* argv under env with stdout and stderr in *out, in a session of its own
 * (a hang kills its group) and under an address-space limit (0: none).
 * Returns the exit status, -SIG on a signal; *hung when killed at the
 * timeout. */
static int run_cmd(char *const *argv, char *const *envp, double timeout, rlim_t as,
		   char **out, size_t *outn, int *hung)
{
	struct sbuf b = { 0 };
	struct timespec t0, t;
	int fd[2], st = 0, killed = 0;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pipe2(fd, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
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
			die("poll: %s", strerror(errno));
		}
		if (!p.revents)
			continue;
		k = read(fd[0], buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		sb_addn(&b, buf, (size_t)k);
	}
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*outn = b.n;
	*out = sb_take(&b);
	*hung = killed;
	if (killed)
		return -SIGKILL;
	return WIFSIGNALED(st) ? -WTERMSIG(st) : WEXITSTATUS(st);
}

static int has(const char *out, size_t n, const char *needle)
{
	return memmem(out, n, needle, strlen(needle)) != NULL;
}

static const char *const SAN[] = { "AddressSanitizer", "LeakSanitizer",
	"UndefinedBehaviorSanitizer", "runtime error:" };

/* the first sanitizer word in out, the one Python's SAN.search() finds */
static const char *san_hit(const char *out, size_t n)
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

/* ---- cases ----------------------------------------------------------------- */

struct result {
	const char *cmd; /* list, dump, check */
	int rc, hung;
	char *verdict;   /* NULL: right */
	char *out;
	size_t outn;
};

struct tcase {
	const char *kind; /* task, cand */
	char *name, *why;
	struct strlist fields;
	int must_fail;
	struct result res[3];
	int nres;
};

/* NULL when the outcome is right, else what is wrong (heap) */
static char *judge(const struct tcase *c, int rc, int hung, const char *out, size_t n,
		   const char *fname, const int *want, int nwant, const int *ok, int nok)
{
	const char *s = san_hit(out, n);
	int in = 0;

	if (s)
		return fmt("sanitizer: %s", s);
	if (hung)
		return xstrdup("hang");
	if (rc < 0 || rc >= 128)
		return fmt("signal %d", rc < 0 ? -rc : rc - 128);
	for (int i = 0; i < nok; i++)
		if (rc == ok[i] && !c->must_fail)
			return NULL;
	for (int i = 0; i < nwant; i++)
		in |= rc == want[i];
	if (!in)
		return fmt("exit %d", rc);
	if (!has(out, n, fname))
		return xstrdup("message does not name the file");
	for (int i = 0; i < c->fields.n; i++)
		if (has(out, n, c->fields.v[i]))
			return NULL;
	{
		struct sbuf b = { 0 };

		sb_adds(&b, "message names none of ");
		for (int i = 0; i < c->fields.n; i++) {
			if (i)
				sb_adds(&b, "/");
			sb_adds(&b, c->fields.v[i]);
		}
		return sb_take(&b);
	}
}

/* ---- json.dumps ------------------------------------------------------------ */

/* a string holding BIG then digits stands for an integer past int64 (2^64,
 * 10^30), written bare */
#define BIG "\001BIG"

/* repr() of a float: the shortest digits that read back, positional
 * for 1e-4 <= |r| < 1e16, else d.ddde+XX */
static void py_float(struct sbuf *b, double r)
{
	char t[64], dig[32];
	int nd = 0, e, p;

	if (isnan(r)) {
		sb_adds(b, "NaN");
		return;
	}
	if (isinf(r)) {
		sb_adds(b, r > 0 ? "Infinity" : "-Infinity");
		return;
	}
	for (p = 0; p < 17; p++) {
		snprintf(t, sizeof t, "%.*e", p, r);
		if (strtod(t, NULL) == r)
			break;
	}
	{
		const char *s = t;

		if (*s == '-') {
			sb_adds(b, "-");
			s++;
		}
		for (; *s != 'e'; s++)
			if (*s != '.')
				dig[nd++] = *s;
		e = atoi(s + 1);
	}
	while (nd > 1 && dig[nd - 1] == '0')
		nd--;
	dig[nd] = 0;
	if (e < -4 || e >= 16) {
		sb_addn(b, dig, 1);
		if (nd > 1) {
			sb_adds(b, ".");
			sb_adds(b, dig + 1);
		}
		sb_addf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	} else if (e >= 0) {
		for (int i = 0; i <= e; i++)
			sb_addn(b, i < nd ? dig + i : "0", 1);
		sb_adds(b, ".");
		sb_adds(b, nd > e + 1 ? dig + e + 1 : "0");
	} else {
		sb_adds(b, "0.");
		for (int i = 0; i < -e - 1; i++)
			sb_adds(b, "0");
		sb_adds(b, dig);
	}
}

/* a JSON string with ensure_ascii's escapes */
static void py_str(struct sbuf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	sb_adds(b, "\"");
	for (size_t i = 0; i < n; ) {
		uint32_t cp = u[i];
		int k = cp < 0x80 ? 1 : cp < 0xe0 ? 2 : cp < 0xf0 ? 3 : 4;

		if (k > 1) {
			cp &= 0x3f >> (k - 1);
			for (int j = 1; j < k && i + (size_t)j < n; j++)
				cp = (cp << 6) | (u[i + (size_t)j] & 0x3f);
		}
		i += (size_t)k;
		switch (cp) {
		case '"': sb_adds(b, "\\\""); continue;
		case '\\': sb_adds(b, "\\\\"); continue;
		case '\n': sb_adds(b, "\\n"); continue;
		case '\r': sb_adds(b, "\\r"); continue;
		case '\t': sb_adds(b, "\\t"); continue;
		case '\b': sb_adds(b, "\\b"); continue;
		case '\f': sb_adds(b, "\\f"); continue;
		}
		if (cp >= 0x20 && cp < 0x7f) {
			char c = (char)cp;

			sb_addn(b, &c, 1);
		} else if (cp >= 0x10000) {
			cp -= 0x10000;
			sb_addf(b, "\\u%04x\\u%04x", 0xd800 | (cp >> 10), 0xdc00 | (cp & 0x3ff));
		} else {
			sb_addf(b, "\\u%04x", cp);
		}
	}
	sb_adds(b, "\"");
}

/* json.dumps(v) */
static void py_dump(struct sbuf *b, const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	int first = 1;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		sb_adds(b, "{");
		json_object_foreach((json_t *)v, k, x) {
			if (!first)
				sb_adds(b, ", ");
			first = 0;
			py_str(b, k, strlen(k));
			sb_adds(b, ": ");
			py_dump(b, x);
		}
		sb_adds(b, "}");
		break;
	case JSON_ARRAY:
		sb_adds(b, "[");
		json_array_foreach(v, i, x) {
			if (i)
				sb_adds(b, ", ");
			py_dump(b, x);
		}
		sb_adds(b, "]");
		break;
	case JSON_STRING:
		if (!strncmp(json_string_value(v), BIG, strlen(BIG)))
			sb_adds(b, json_string_value(v) + strlen(BIG));
		else
			py_str(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER: sb_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
	case JSON_REAL: py_float(b, json_real_value(v)); break;
	case JSON_TRUE: sb_adds(b, "true"); break;
	case JSON_FALSE: sb_adds(b, "false"); break;
	case JSON_NULL: sb_adds(b, "null"); break;
	}
}

static char *dumps(const json_t *v)
{
	struct sbuf b = { 0 };

	py_dump(&b, v);
	return sb_take(&b);
}

/* ---- the values a number is set to ------------------------------------------ */

enum { V_INT, V_BIG, V_REAL, V_STR, V_NULL, V_PAIR };

struct val {
	int k;
	long long i, i2; /* V_INT; V_PAIR: [i, i2] */
	double r;
	const char *s;   /* V_STR; V_BIG: the digits */
};

#define VI(x) { V_INT, (x), 0, 0, NULL }
static const struct val NUMS[] = { VI(0), VI(-1), VI(1), VI(1LL << 31), VI((1LL << 32) + 1),
	VI(1LL << 62), VI(INT64_MAX), VI(INT64_MIN), { V_BIG, 0, 0, 0, "18446744073709551616" },
	{ V_REAL, 0, 0, 1.5, NULL }, { V_STR, 0, 0, 0, "x" }, { V_NULL, 0, 0, 0, NULL } };
static const struct val NUMS_QUICK[] = { VI(0), VI(-1), VI((1LL << 32) + 1), VI(INT64_MAX),
	{ V_REAL, 0, 0, 1.5, NULL }, { V_NULL, 0, 0, 0, NULL } };
/* attributes an op may read, added to every op with these values */
static const struct val ATTR_VALS[] = { VI(0), VI(-1), VI(1LL << 40), VI(1LL << 62), VI(INT64_MIN),
	{ V_PAIR, 0, 0, 0, NULL }, { V_PAIR, -1, 1LL << 62, 0, NULL }, { V_STR, 0, 0, 0, "x" },
	{ V_REAL, 0, 0, 1.5, NULL } };
static const struct val ATTR_QUICK[] = { VI(0), VI(-1), VI(1LL << 62) };

static json_t *val_json(const struct val *v)
{
	switch (v->k) {
	case V_INT: return json_integer(v->i);
	case V_BIG: {
		char *s = fmt("%s%s", BIG, v->s);
		json_t *j = json_string(s);

		free(s);
		return j;
	}
	case V_REAL: return json_real(v->r);
	case V_STR: return json_string(v->s);
	case V_PAIR: return json_pack("[II]", (json_int_t)v->i, (json_int_t)v->i2);
	default: return json_null();
	}
}

static char *val_dumps(const struct val *v)
{
	json_t *j = val_json(v);
	char *s = dumps(j);

	json_decref(j);
	return s;
}

/* Python's v == v0 */
static int val_eq(const struct val *v, const json_t *j)
{
	switch (v->k) {
	case V_NULL: return json_is_null(j);
	case V_STR: return json_is_string(j) && !strcmp(json_string_value(j), v->s);
	case V_REAL: return json_is_real(j) && json_real_value(j) == v->r;
	case V_BIG: return json_is_real(j) && json_real_value(j) == 18446744073709551616.0;
	case V_PAIR:
		return json_is_array(j) && json_array_size(j) == 2 &&
		       json_is_integer(json_array_get(j, 0)) && json_is_integer(json_array_get(j, 1)) &&
		       json_integer_value(json_array_get(j, 0)) == v->i &&
		       json_integer_value(json_array_get(j, 1)) == v->i2;
	default:
		if (json_is_integer(j))
			return json_integer_value(j) == v->i;
		if (json_is_boolean(j))
			return v->i == json_is_true(j);
		if (json_is_real(j)) {
			double r = json_real_value(j);

			return r == floor(r) && fabs(r) < 9.2e18 && (long long)r == v->i;
		}
		return 0;
	}
}

/* a Python int in [1, 2^34] */
static int small_pos_int(const struct val *v)
{
	return v->k == V_INT && v->i >= 1 && v->i <= (1LL << 34);
}

/* ---- task files ---------------------------------------------------------------- */

/* a path into a task: object keys and array indices */
struct pel {
	const char *key; /* NULL: idx */
	size_t idx;
};

struct leaf {
	struct pel p[4];
	int np;
	json_t *v0;
	char field[256];
};

static void leaf_push(struct leaf **l, int *n, const struct leaf *x)
{
	*l = xrealloc(*l, sizeof **l * (size_t)(*n + 1));
	(*l)[(*n)++] = *x;
}

/* every number and shape entry of a task, and the field a message may use */
static struct leaf *leaves(json_t *doc, int *n)
{
	static const char *const dk[] = { "dims", "cpu_dims" };
	struct leaf *l = NULL, x;
	const char *k;
	json_t *v, *o;
	size_t i;

	*n = 0;
	for (int d = 0; d < 2; d++) {
		json_object_foreach(json_object_get(doc, dk[d]), k, v) {
			x = (struct leaf){ { { dk[d], 0 }, { k, 0 } }, 2, v, "" };
			snprintf(x.field, sizeof x.field, "%s", dk[d]);
			leaf_push(&l, n, &x);
		}
	}
	json_array_foreach(json_object_get(doc, "check_dims"), i, o) {
		if (i >= 2)
			break;
		json_object_foreach(o, k, v) {
			x = (struct leaf){ { { "check_dims", 0 }, { NULL, i }, { k, 0 } }, 3, v, "" };
			snprintf(x.field, sizeof x.field, "check_dims[%zu]", i);
			leaf_push(&l, n, &x);
		}
	}
	json_object_foreach(json_object_get(doc, "tensors"), k, o) {
		size_t j;

		json_array_foreach(json_object_get(o, "shape"), j, v) {
			x = (struct leaf){ { { "tensors", 0 }, { k, 0 }, { "shape", 0 }, { NULL, j } }, 4, v, "" };
			snprintf(x.field, sizeof x.field, "tensors.%s", k);
			leaf_push(&l, n, &x);
		}
	}
	json_array_foreach(json_object_get(doc, "graph"), i, o) {
		json_object_foreach(o, k, v) {
			if (!strcmp(k, "op") || !strcmp(k, "in") || !strcmp(k, "out"))
				continue;
			if (json_is_array(v)) {
				for (size_t j = 0; j < json_array_size(v); j++) {
					x = (struct leaf){ { { "graph", 0 }, { NULL, i }, { k, 0 }, { NULL, j } }, 4,
							   json_array_get(v, j), "" };
					snprintf(x.field, sizeof x.field, "graph[%zu]", i);
					leaf_push(&l, n, &x);
				}
			} else {
				x = (struct leaf){ { { "graph", 0 }, { NULL, i }, { k, 0 } }, 3, v, "" };
				snprintf(x.field, sizeof x.field, "graph[%zu]", i);
				leaf_push(&l, n, &x);
			}
		}
	}
	{
		static const char *const tk[] = { "atol", "rtol" };
		json_t *tol = json_object_get(doc, "tolerance");

		for (int t = 0; t < 2; t++) {
			if (!json_object_get(tol, tk[t]))
				continue;
			x = (struct leaf){ { { "tolerance", 0 }, { tk[t], 0 } }, 2, json_object_get(tol, tk[t]), "tolerance" };
			leaf_push(&l, n, &x);
		}
	}
	return l;
}

/* doc at path := v (stolen); or, with v NULL, del doc at path */
static void put(json_t *doc, const struct leaf *l, json_t *v)
{
	json_t *d = doc;

	for (int i = 0; i < l->np - 1; i++)
		d = l->p[i].key ? json_object_get(d, l->p[i].key) : json_array_get(d, l->p[i].idx);
	if (!v)
		json_object_del(d, l->p[l->np - 1].key);
	else if (l->p[l->np - 1].key)
		json_object_set_new(d, l->p[l->np - 1].key, v);
	else
		json_array_set_new(d, l->p[l->np - 1].idx, v);
}

static char *path_str(const struct leaf *l)
{
	struct sbuf b = { 0 };

	for (int i = 0; i < l->np; i++) {
		if (i)
			sb_adds(&b, ".");
		if (l->p[i].key)
			sb_adds(&b, l->p[i].key);
		else
			sb_addf(&b, "%zu", l->p[i].idx);
	}
	return sb_take(&b);
}

/* where the mutants of one base go */
struct gen {
	const char *dir;   /* WORK/data/tasks/m */
	char stem[64];     /* the base's name, [^A-Za-z0-9_] as _, 40 at most */
	const char *base;  /* its file name */
	int i;             /* mutants of this base so far */
	struct tcase *cases;
	int ncases;
};

/* one mutant: doc (stolen) or text (stolen) into DIR/STEM__I.json */
static void emit(struct gen *g, const char *suffix, json_t *doc, char *text, const char *const *fields,
		 int nf, int must, const char *why)
{
	struct tcase *c;
	char *path;

	g->cases = xrealloc(g->cases, sizeof *g->cases * (size_t)(g->ncases + 1));
	c = &g->cases[g->ncases++];
	memset(c, 0, sizeof *c);
	c->kind = "task";
	c->name = fmt("%s__%d", g->stem, g->i++);
	c->why = fmt("%s %s: %s", g->base, why, suffix);
	for (int k = 0; k < nf; k++)
		sl_add(&c->fields, fields[k]);
	c->must_fail = must;
	if (doc) {
		text = dumps(doc);
		json_decref(doc);
	}
	path = fmt("%s/%s.json", g->dir, c->name);
	write_file(path, text, strlen(text));
	free(path);
	free(text);
}

#define F(...) (const char *const[]){ __VA_ARGS__ }, (int)(sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *))

static int in_idx(const size_t *v, int n, size_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* the ops the registry has and the attributes each reads */
struct reg {
	char **ops;    /* sorted */
	int nops;
	char **aop;    /* attrs of aop[i]: attr[i] */
	struct strlist *attr;
	int naop;
};

static const struct strlist *reg_attrs(const struct reg *r, const char *op)
{
	for (int i = 0; i < r->naop; i++)
		if (!strcmp(r->aop[i], op))
			return &r->attr[i];
	return NULL;
}

static void mut_leaves(struct gen *g, json_t *doc, const size_t *nodes, int nn, int full)
{
	const struct val *nums = full ? NUMS : NUMS_QUICK;
	int nnum = full ? (int)(sizeof NUMS / sizeof *NUMS) : (int)(sizeof NUMS_QUICK / sizeof *NUMS_QUICK);
	const char *t3[3];
	int nt3 = 0, nl;
	const char *k;
	json_t *v;
	struct leaf *l = leaves(doc, &nl);

	json_object_foreach(json_object_get(doc, "tensors"), k, v) {
		if (nt3 < 3)
			t3[nt3++] = k;
	}
	for (int li = 0; li < nl; li++) {
		const char *p0 = l[li].p[0].key;
		int is_graph = !strcmp(p0, "graph"), is_tens = !strcmp(p0, "tensors");
		int is_tol = !strcmp(p0, "tolerance");
		int is_dims = !strcmp(p0, "dims") || !strcmp(p0, "cpu_dims") || !strcmp(p0, "check_dims");

		if (is_graph && !in_idx(nodes, nn, l[li].p[1].idx))
			continue;
		if (is_tens) {
			int in = 0;

			for (int t = 0; t < nt3; t++)
				in |= !strcmp(t3[t], l[li].p[1].key);
			if (!in)
				continue;
		}
		for (int vi = 0; vi < nnum; vi++) {
			const struct val *nv = &nums[vi];
			const char *f[8];
			int nf = 0, must;
			json_t *d;
			char *ps, *vs, *suffix;

			if (val_eq(nv, l[li].v0))
				continue;
			d = json_deep_copy(doc);
			put(d, &l[li], val_json(nv));
			/* a dim that stays positive and small may be valid; a bad
			 * attribute value may be one the op ignores */
			must = !(small_pos_int(nv) && !is_graph) && !is_graph && !is_tol;
			if (is_tol)
				must = !((nv->k == V_INT || nv->k == V_BIG || nv->k == V_REAL) &&
					 (nv->k == V_REAL ? nv->r >= 0 && nv->r <= 1 : nv->k == V_INT && nv->i >= 0 && nv->i <= 1));
			if (is_tens && small_pos_int(nv))
				must = 0;
			f[nf++] = l[li].field;
			if (is_tens) {
				f[nf++] = "dims";
				f[nf++] = "cpu_dims";
				f[nf++] = "check_dims";
			}
			/* a dim value that breaks a shape rule is blamed on the op
			 * or the tensor that needs it */
			if (is_dims) {
				f[nf++] = "tensors.";
				f[nf++] = "graph[";
			}
			if (is_tens)
				f[nf++] = "graph[";
			if (is_graph) { /* a later op may be the one that cannot take it */
				f[0] = "graph[";
				nf = 1;
			}
			ps = path_str(&l[li]);
			vs = val_dumps(nv);
			suffix = fmt("%s=%s", ps, vs);
			emit(g, suffix, d, NULL, f, nf, must, "set");
			free(ps);
			free(vs);
			free(suffix);
		}
	}
	free(l);
}

static void mut_shapes_missing(struct gen *g, json_t *doc, const size_t *nodes, int nn, int full)
{
	static const char *const sv_full[] = { "ZZ", "B*2", "", "N+1" };
	json_t *tens = json_object_get(doc, "tensors"), *t, *v;
	const char *tn, *k;
	int nt = 0;

	/* strings in shapes: undefined dims and expressions */
	json_object_foreach(tens, tn, t) {
		size_t ns = json_array_size(json_object_get(t, "shape"));
		char *fld = fmt("tensors.%s", tn);

		for (size_t j = 0; j < ns; j++) {
			for (int s = 0; s < (full ? 4 : 2); s++) {
				json_t *d = json_deep_copy(doc), *sh;
				char *vs, *suffix;

				sh = json_object_get(json_object_get(json_object_get(d, "tensors"), tn), "shape");
				json_array_set_new(sh, j, json_string(sv_full[s]));
				if (json_object_get(json_object_get(d, "dims"), sv_full[s])) {
					json_decref(d);
					continue;
				}
				vs = dumps(json_array_get(sh, j));
				suffix = fmt("tensors.%s.shape.%zu=%s", tn, j, vs);
				emit(g, suffix, d, NULL, F(fld), 1, "undefined dim");
				free(vs);
				free(suffix);
			}
		}
		free(fld);
		if (!full)
			break;
	}
	/* missing fields */
	json_object_foreach(doc, k, v) {
		static const char *const skip[] = { "description", "source", "notes", "repair", "flops",
			"bytes", "tolerance", "backward" };
		int sk = 0;
		char *suffix;
		json_t *d;

		for (size_t s = 0; s < sizeof skip / sizeof *skip; s++)
			sk |= !strcmp(k, skip[s]);
		if (sk)
			continue;
		d = json_deep_copy(doc);
		json_object_del(d, k);
		suffix = fmt("-%s", k);
		emit(g, suffix, d, NULL, F(k), 1, "missing");
		free(suffix);
	}
	json_object_foreach(tens, tn, t) {
		char *fld = fmt("tensors.%s", tn);
		const char *role = json_string_value(json_object_get(t, "role"));

		if (nt++ >= 3) {
			free(fld);
			break;
		}
		json_object_foreach(t, k, v) {
			json_t *d;
			char *suffix;

			if (!strcmp(k, "grad") || (!strcmp(k, "init") && role && !strcmp(role, "output")))
				continue;
			d = json_deep_copy(doc);
			json_object_del(json_object_get(json_object_get(d, "tensors"), tn), k);
			suffix = fmt("-tensors.%s.%s", tn, k);
			emit(g, suffix, d, NULL, F(fld), 1, "missing");
			free(suffix);
		}
		free(fld);
	}
	for (int ni = 0; ni < nn; ni++) {
		json_object_foreach(json_array_get(json_object_get(doc, "graph"), nodes[ni]), k, v) {
			json_t *d = json_deep_copy(doc);
			char *suffix = fmt("-graph.%zu.%s", nodes[ni], k);

			json_object_del(json_array_get(json_object_get(d, "graph"), nodes[ni]), k);
			emit(g, suffix, d, NULL, F("graph["), !strcmp(k, "op") || !strcmp(k, "in") ||
			     !strcmp(k, "out"), "missing");
			free(suffix);
		}
	}
	for (int c = 0; c < (full ? 2 : 1); c++) {
		const char *ck = c ? "check_dims" : "cpu_dims";
		json_t *dd = c ? json_array_get(json_object_get(doc, ck), 0) : json_object_get(doc, ck);
		void *it = json_object_iter(dd);

		if (it) {
			const char *dn = json_object_iter_key(it);
			json_t *d = json_deep_copy(doc);
			json_t *dd2 = c ? json_array_get(json_object_get(d, ck), 0) : json_object_get(d, ck);
			char *suffix = fmt("-%s.%s", ck, dn);

			json_object_del(dd2, dn);
			emit(g, suffix, d, NULL, F(ck), 1, "missing dim");
			free(suffix);
		}
	}
}

static void mut_huge(struct gen *g, json_t *doc)
{
	json_t *d, *a, *graph = json_object_get(doc, "graph");
	const char *t0 = json_object_iter_key(json_object_iter(json_object_get(doc, "tensors")));
	size_t ng = json_array_size(graph);

	/* huge arrays and objects */
	d = json_deep_copy(doc);
	a = json_array();
	for (int i = 0; i < 100000; i++)
		json_array_append(a, json_array_get(json_object_get(d, "check_dims"), 0));
	json_object_set_new(d, "check_dims", a);
	emit(g, "check_dims*100000", d, NULL, F("check_dims"), 1, "huge array");
	for (int r = 0; r < 2; r++) {
		int n = r ? 100000 : 7;
		char *suffix = fmt("tensors.%s.shape*%d", t0, n), *fld = fmt("tensors.%s", t0);

		d = json_deep_copy(doc);
		a = json_array();
		for (int i = 0; i < n; i++)
			json_array_append_new(a, json_integer(1));
		json_object_set_new(json_object_get(json_object_get(d, "tensors"), t0), "shape", a);
		emit(g, suffix, d, NULL, F(fld), 1, "huge array");
		free(suffix);
		free(fld);
	}
	d = json_deep_copy(doc);
	a = json_array();
	for (size_t r = 0; r < 3000 / ng + 1; r++)
		for (size_t i = 0; i < ng; i++)
			json_array_append(a, json_array_get(json_object_get(d, "graph"), i));
	json_object_set_new(d, "graph", a);
	emit(g, "graph*3000", d, NULL, F("graph"), 1, "huge array");
	{
		json_t *n0, *in;

		d = json_deep_copy(doc);
		n0 = json_array_get(json_object_get(d, "graph"), 0);
		in = json_object_get(n0, "in");
		a = json_array();
		for (int r = 0; r < 1000; r++)
			for (size_t i = 0; i < json_array_size(in); i++)
				json_array_append(a, json_array_get(in, i));
		json_object_set_new(n0, "in", a);
		emit(g, "graph.0.in*1000", d, NULL, F("graph[0]"), 1, "huge array");
	}
	d = json_deep_copy(doc);
	for (int i = 0; i < 600; i++) {
		char k[32];

		snprintf(k, sizeof k, "extra%d", i);
		json_object_set_new(json_object_get(d, "tensors"), k,
				    json_pack("{s:s, s:s, s:[i], s:s}", "role", "input", "dtype", "f32", "shape", 1,
					      "init", "normal"));
	}
	emit(g, "tensors+600", d, NULL, F("tensors"), 1, "huge object");
	d = json_deep_copy(doc);
	for (int i = 0; i < 20; i++) {
		char k[32];

		snprintf(k, sizeof k, "X%d", i);
		json_object_set_new(json_object_get(d, "dims"), k, json_integer(2));
	}
	emit(g, "dims+20", d, NULL, F("dims"), 1, "huge object");
	d = json_deep_copy(doc);
	a = json_array();
	for (int i = 0; i < 100000; i++)
		json_array_append_new(a, json_integer(i));
	json_object_set_new(json_array_get(json_object_get(d, "graph"), 0), "attrs0", a);
	emit(g, "graph.0.list*100000", d, NULL, F("graph[0]"), 1, "huge array");
}

static void mut_rest(struct gen *g, json_t *doc, const size_t *nodes, int nn, const struct reg *reg, int full)
{
	static const char *const inits[] = { "indices[0,ZZ)", "kaiming(ZZ)", "kaiming(99999999999999999999)",
		"kaiming(0)", "kaiming(-1)", "normal(0,-1)", "uniform(1,0)", "normal(1e999,1)", "" };
	json_t *graph = json_object_get(doc, "graph"), *t, *d;
	const char *tn;

	/* inits naming dims that do not exist, and literal fan-ins out of range */
	json_object_foreach(json_object_get(doc, "tensors"), tn, t) {
		const char *role = json_string_value(json_object_get(t, "role"));
		json_t *dt = json_object_get(t, "dtype");
		const char *dtype = dt ? json_string_value(dt) : "f32";
		char *fld;

		if ((role && !strcmp(role, "output")) || !dtype ||
		    (strcmp(dtype, "f32") && strcmp(dtype, "f16") && strcmp(dtype, "bf16")))
			continue;
		fld = fmt("tensors.%s", tn);
		for (size_t i = 0; i < sizeof inits / sizeof *inits; i++) {
			char *suffix = fmt("tensors.%s.init=%s", tn, inits[i]);

			d = json_deep_copy(doc);
			json_object_set_new(json_object_get(json_object_get(d, "tensors"), tn), "init",
					    json_string(inits[i]));
			emit(g, suffix, d, NULL, F(fld), 1, "init");
			free(suffix);
		}
		free(fld);
		break;
	}
	/* attributes every op might read, on each distinct op of the graph */
	for (int ni = 0; ni < nn; ni++) {
		const char *op = json_string_value(json_object_get(json_array_get(graph, nodes[ni]), "op"));
		const struct strlist *al = reg_attrs(reg, op);
		int na = al ? al->n : 0;

		for (int ai = 0; ai < na + 2; ai++) {
			const char *a = ai < na ? al->v[ai] : ai == na ? "stride" : "dim";
			const struct val *vals = full ? ATTR_VALS : ATTR_QUICK;
			int nv = full ? (int)(sizeof ATTR_VALS / sizeof *ATTR_VALS) : 3;

			for (int vi = 0; vi < nv; vi++) {
				char *vs = val_dumps(&vals[vi]), *suffix = fmt("graph.%zu.%s=%s", nodes[ni], a, vs);

				d = json_deep_copy(doc);
				json_object_set_new(json_array_get(json_object_get(d, "graph"), nodes[ni]), a,
						    val_json(&vals[vi]));
				emit(g, suffix, d, NULL, F("graph["), 0, "attr");
				free(vs);
				free(suffix);
			}
		}
	}
	/* every op in place of each distinct op (shape rules on what they do
	 * not expect) */
	if (full) {
		for (int ni = 0; ni < nn; ni++) {
			const char *op = json_string_value(json_object_get(json_array_get(graph, nodes[ni]), "op"));

			for (int oi = 0; oi < reg->nops; oi++) {
				char *suffix;

				if (!strcmp(reg->ops[oi], op))
					continue;
				suffix = fmt("graph.%zu.op=%s", nodes[ni], reg->ops[oi]);
				d = json_deep_copy(doc);
				json_object_set_new(json_array_get(json_object_get(d, "graph"), nodes[ni]), "op",
						    json_string(reg->ops[oi]));
				emit(g, suffix, d, NULL, F("graph["), 0, "op swap");
				free(suffix);
			}
		}
	}
	/* text that is not JSON, or not a task */
	{
		char *all = dumps(doc), *dims = dumps(json_object_get(doc, "dims")), *hit;
		struct sbuf big = { 0 }, txt = { 0 };
		const char *k;
		json_t *v;
		int first = 1;

		emit(g, "truncated", NULL, strndup(all, strlen(all) / 2), F("json", ":"), 1, "truncated");
		emit(g, "array", NULL, xstrdup("[]"), F("top level"), 1, "not an object");
		sb_adds(&big, "{");
		json_object_foreach(json_object_get(doc, "dims"), k, v) {
			if (!first)
				sb_adds(&big, ", ");
			first = 0;
			py_str(&big, k, strlen(k));
			sb_adds(&big, ": 1000000000000000000000000000000");
		}
		sb_adds(&big, "}");
		hit = strstr(all, dims);
		if (hit) {
			sb_addn(&txt, all, (size_t)(hit - all));
			sb_adds(&txt, big.p);
			sb_adds(&txt, hit + strlen(dims));
		} else {
			sb_adds(&txt, all);
		}
		emit(g, "bigint", NULL, sb_take(&txt), F(":"), 1, "big integer");
		free(all);
		free(dims);
		free(big.p);
	}
}

static void task_mutations(struct gen *g, json_t *doc, const struct reg *reg, char **mine, int nmine, int full)
{
	json_t *graph = json_object_get(doc, "graph"), *node;
	size_t nodes[64], n;
	int nn = 0;
	const char *seen[64];
	int nseen = 0;

	/* the first node of each op this base stands for */
	json_array_foreach(graph, n, node) {
		const char *op = json_string_value(json_object_get(node, "op"));
		int m = 0, s = 0;

		for (int i = 0; i < nmine; i++)
			m |= op && !strcmp(mine[i], op);
		for (int i = 0; i < nseen; i++)
			s |= !strcmp(seen[i], op);
		if (m && !s && nn < 64) {
			seen[nseen++] = op;
			nodes[nn++] = n;
		}
	}
	mut_leaves(g, doc, nodes, nn, full);
	mut_shapes_missing(g, doc, nodes, nn, full);
	mut_huge(g, doc);
	mut_rest(g, doc, nodes, nn, reg, full);
}

/* one task per op of the registry (the smallest that has it), or a few
 * shape-heavy ops for the quick sample; bases[i] stands for mine[i] */
struct base {
	char *path;
	struct strlist mine;
};

static size_t utf8_len(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

static int cmp_base(const void *a, const void *b)
{
	return strcmp(((const struct base *)a)->path, ((const struct base *)b)->path);
}

static struct base *base_tasks(const char *datadir, int full, struct reg *reg, int *nbase)
{
	static const char *const quick[] = { "conv", "conv_transpose", "maxpool", "matmul", "softmax" };
	char *td = fmt("%s/tasks", datadir), **sets;
	int nsets;
	/* op -> (length, path) of the smallest task that has it */
	char **uop = NULL, **upath = NULL;
	size_t *ulen = NULL;
	int nu = 0;
	struct base *bases = NULL;

	*nbase = 0;
	sets = list_dir(td, &nsets);
	for (int si = 0; si < nsets; si++) {
		char *sd = fmt("%s/%s", td, sets[si]), **files;
		struct stat st;
		int nf;

		if (stat(sd, &st) || !S_ISDIR(st.st_mode)) {
			free(sd);
			continue;
		}
		files = list_dir(sd, &nf);
		for (int fi = 0; fi < nf; fi++) {
			size_t len, gi;
			char *p, *txt;
			json_t *doc, *node;
			json_error_t err;

			if (strlen(files[fi]) < 5 || strcmp(files[fi] + strlen(files[fi]) - 5, ".json"))
				continue;
			p = fmt("%s/%s", sd, files[fi]);
			txt = read_file(p, &len);
			doc = json_loadb(txt, len, 0, &err);
			if (!doc)
				die("%s: %s", p, err.text);
			len = utf8_len(txt, len);
			json_array_foreach(json_object_get(doc, "graph"), gi, node) {
				const char *op = json_string_value(json_object_get(node, "op")), *k;
				struct strlist *al = NULL;
				json_t *v;
				int ui;

				for (int i = 0; i < reg->naop; i++)
					if (!strcmp(reg->aop[i], op))
						al = &reg->attr[i];
				if (!al) {
					reg->aop = xrealloc(reg->aop, sizeof *reg->aop * (size_t)(reg->naop + 1));
					reg->attr = xrealloc(reg->attr, sizeof *reg->attr * (size_t)(reg->naop + 1));
					reg->aop[reg->naop] = xstrdup(op);
					reg->attr[reg->naop] = (struct strlist){ 0 };
					al = &reg->attr[reg->naop++];
				}
				json_object_foreach(node, k, v) {
					int dup = 0;

					if (!strcmp(k, "op") || !strcmp(k, "in") || !strcmp(k, "out"))
						continue;
					for (int i = 0; i < al->n; i++)
						dup |= !strcmp(al->v[i], k);
					if (!dup)
						sl_add(al, k);
				}
				for (ui = 0; ui < nu; ui++)
					if (!strcmp(uop[ui], op))
						break;
				if (ui == nu) {
					uop = xrealloc(uop, sizeof *uop * (size_t)(nu + 1));
					upath = xrealloc(upath, sizeof *upath * (size_t)(nu + 1));
					ulen = xrealloc(ulen, sizeof *ulen * (size_t)(nu + 1));
					uop[nu] = xstrdup(op);
					upath[nu] = NULL;
					nu++;
				}
				if (!upath[ui] || len < ulen[ui]) {
					free(upath[ui]);
					upath[ui] = xstrdup(p);
					ulen[ui] = len;
				}
			}
			json_decref(doc);
			free(txt);
			free(p);
		}
		for (int fi = 0; fi < nf; fi++)
			free(files[fi]);
		free(files);
		free(sd);
	}
	/* every op, sorted */
	reg->ops = xrealloc(NULL, sizeof *reg->ops * (size_t)nu);
	for (int i = 0; i < nu; i++)
		reg->ops[i] = xstrdup(uop[i]);
	reg->nops = nu;
	qsort(reg->ops, (size_t)nu, sizeof *reg->ops, cmp_str);
	for (int w = 0; w < (full ? nu : 5); w++) {
		const char *o = full ? reg->ops[w] : quick[w];
		int ui, bi;

		for (ui = 0; ui < nu && strcmp(uop[ui], o); ui++)
			;
		if (ui == nu)
			die("the registry has no task with op %s", o);
		for (bi = 0; bi < *nbase && strcmp(bases[bi].path, upath[ui]); bi++)
			;
		if (bi == *nbase) {
			bases = xrealloc(bases, sizeof *bases * (size_t)(*nbase + 1));
			bases[bi] = (struct base){ xstrdup(upath[ui]), { 0 } };
			(*nbase)++;
		}
		sl_add(&bases[bi].mine, o);
	}
	qsort(bases, (size_t)*nbase, sizeof *bases, cmp_base);
	for (int i = 0; i < nu; i++) {
		free(uop[i]);
		free(upath[i]);
	}
	free(uop);
	free(upath);
	free(ulen);
	for (int i = 0; i < nsets; i++)
		free(sets[i]);
	free(sets);
	free(td);
	return bases;
}

static struct tcase *task_cases(const char *datadir, const char *work, int full, int *ncases)
{
	struct reg reg = { 0 };
	struct base *bases;
	int nb;
	char *dir = fmt("%s/data/tasks/m", work), *lnk = fmt("%s/data/baselines", work);
	char *bl = fmt("%s/baselines", datadir);
	struct gen g = { 0 };

	bases = base_tasks(datadir, full, &reg, &nb);
	mkdir_p(dir);
	if (symlink(bl, lnk))
		die("cannot link %s: %s", lnk, strerror(errno));
	g.dir = dir;
	for (int b = 0; b < nb; b++) {
		json_error_t err;
		json_t *doc = json_load_file(bases[b].path, 0, &err);
		const char *fn = strrchr(bases[b].path, '/') + 1;
		size_t k;

		if (!doc)
			die("%s: %s", bases[b].path, err.text);
		for (k = 0; fn[k] && k < 40 && strcmp(fn + k, ".json"); k++)
			g.stem[k] = (fn[k] >= 'A' && fn[k] <= 'Z') || (fn[k] >= 'a' && fn[k] <= 'z') ||
				    (fn[k] >= '0' && fn[k] <= '9') || fn[k] == '_' ? fn[k] : '_';
		g.stem[k] = 0;
		g.base = fn;
		g.i = 0;
		task_mutations(&g, doc, &reg, bases[b].mine.v, bases[b].mine.n, full);
		json_decref(doc);
		free(bases[b].path);
		sl_free(&bases[b].mine);
	}
	free(bases);
	for (int i = 0; i < reg.nops; i++)
		free(reg.ops[i]);
	for (int i = 0; i < reg.naop; i++) {
		free(reg.aop[i]);
		sl_free(&reg.attr[i]);
	}
	free(reg.ops);
	free(reg.aop);
	free(reg.attr);
	free(dir);
	free(lnk);
	free(bl);
	*ncases = g.ncases;
	return g.cases;
}

/* ---- candidates ---------------------------------------------------------------- */

#define CAND_BASE "smoke/softmax_plain.c"

struct lines {
	char **v;
	int n;
};

/* src split on \n; join() puts them back */
static struct lines split_lines(const char *src)
{
	struct lines l = { 0 };
	const char *s = src;

	for (;;) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		l.v = xrealloc(l.v, sizeof *l.v * (size_t)(l.n + 1));
		l.v[l.n++] = strndup(s, n);
		if (!e)
			break;
		s = e + 1;
	}
	return l;
}

/* lines with line i replaced (rep) or, with ins > 0, ins copies of each
 * of the lines in add[] inserted before line i, add[0] ending first */
static char *join_edit(const struct lines *l, int i, const char *rep, const char *const *add, int nadd)
{
	struct sbuf b = { 0 };

	for (int k = 0; k < l->n; k++) {
		if (k == i && add)
			for (int a = 0; a < nadd; a++) {
				sb_adds(&b, add[a]);
				sb_adds(&b, "\n");
			}
		sb_adds(&b, k == i && rep ? rep : l->v[k]);
		if (k + 1 < l->n)
			sb_adds(&b, "\n");
	}
	if (add && i == l->n) {
		for (int a = 0; a < nadd; a++) {
			if (b.n)
				sb_adds(&b, "\n");
			sb_adds(&b, add[a]);
		}
	}
	return sb_take(&b);
}

struct cgen {
	const char *dir; /* WORK/cands */
	struct tcase *cases;
	int n;
};

static void cemit(struct cgen *g, const char *suffix, char *text /*stolen*/)
{
	struct tcase *c;
	char *p, *fld;

	g->cases = xrealloc(g->cases, sizeof *g->cases * (size_t)(g->n + 1));
	c = &g->cases[g->n];
	memset(c, 0, sizeof *c);
	c->kind = "cand";
	c->name = fmt("cand%d", g->n++);
	c->why = xstrdup(suffix);
	fld = fmt("%s.c:", c->name);
	sl_add(&c->fields, fld);
	c->must_fail = 1;
	p = fmt("%s/%s.c", g->dir, c->name);
	write_file(p, text, strlen(text));
	free(p);
	free(fld);
	free(text);
}

/* suffix: a prefix of s, at most n characters */
static char *pfx(const char *lead, const char *s, size_t n)
{
	return fmt("%s%.*s", lead, (int)(strlen(s) < n ? strlen(s) : n), s);
}

static char *rep(const char *s, int n)
{
	struct sbuf b = { 0 };

	for (int i = 0; i < n; i++)
		sb_adds(&b, s);
	return sb_take(&b);
}

static void cand_mutations(struct cgen *g, const char *src, int full)
{
	struct lines l = split_lines(src);
	int ti = -1, fi = -1;
	char *s, *t;

	for (int i = 0; i < l.n; i++) {
		if (ti < 0 && strstr(l.v[i], "@task"))
			ti = i;
		if (fi < 0 && strstr(l.v[i], "@forward"))
			fi = i;
	}
	if (ti < 0 || fi < 0)
		die("%s has no @task or @forward", CAND_BASE);
#define WITH(i, new) join_edit(&l, (i), (new), NULL, 0)
#define ADD(new) join_edit(&l, fi + 1, NULL, (const char *const[]){ new }, 1)
	{
		char *a1000 = rep("a", 1000), *long_task = fmt("smoke/%s", a1000);
		const char *tv[] = { "", "smoke/nope", "../etc/passwd", long_task, "smoke", "/x", "smoke/softmax extra" };

		for (size_t i = 0; i < sizeof tv / sizeof *tv; i++) {
			s = pfx("@task=", tv[i], 20);
			t = fmt("// @task %s", tv[i]);
			cemit(g, s, WITH(ti, t));
			free(s);
			free(t);
		}
		free(a1000);
		free(long_task);
	}
	cemit(g, "-@task", WITH(ti, ""));
	cemit(g, "@task*2", ADD("// @task smoke/softmax"));
	cemit(g, "-@forward", WITH(fi, ""));
	{
		char *open = rep("(", 10000), *close = rep(")", 10000), *minus = rep("-", 10000);
		char *paren = fmt("%sB%s", open, close), *neg = fmt("%sB", minus);
		const char *exprs[] = { "B*B*B*B*B*B*B*B*B*B", "B/0", "B%0", "cdiv(B,0)",
			"(-9223372036854775807-1)/-1", "99999999999999999999", "-9223372036854775808",
			"9223372036854775807+B", "min(B)", "max(B,D,1)", paren, neg, "B*", "", "ZZ", "B D", "1.5",
			"0x10", "B-9223372036854775807-2", "4611686018427387904*2", "D*-1" };
		int ne = (int)(sizeof exprs / sizeof *exprs);

		for (int i = 0; i < ne; i++) {
			if (!full && i >= 12)
				break;
			if (!full && (i == 8 || i == 9))
				continue;
			s = pfx("@forward arg=", exprs[i], 24);
			t = fmt("// @forward softmax_fwd(x, y, %s, D)", exprs[i]);
			cemit(g, s, WITH(fi, t));
			free(s);
			free(t);
			s = pfx("@scratch=", exprs[i], 24);
			t = fmt("// @scratch s f32[%s]", exprs[i]);
			cemit(g, s, ADD(t));
			free(s);
			free(t);
		}
		free(open);
		free(close);
		free(minus);
		free(paren);
		free(neg);
	}
	{
		char *xs = NULL, *a100 = rep("a", 100), *a100x = fmt("%s(x)", a100), *sp = rep(" ", 70000);
		char *spaced = fmt("softmax_fwd(x, y, B, D)%s", sp);
		struct sbuf b = { 0 };

		sb_adds(&b, "softmax_fwd(");
		for (int i = 0; i < 1200; i++)
			sb_adds(&b, i ? ", x" : "x");
		sb_adds(&b, ")");
		xs = sb_take(&b);
		const char *fv[] = { "softmax_fwd(x, y, B, D", "softmax_fwd x, y", "(x)", "softmax_fwd()", xs, a100x,
			spaced, "softmax_fwd<<<B, 0>>>(x, y, B, D)", "softmax_fwd<<<0, 1>>>(x, y, B, D)",
			"softmax_fwd<<<(1,1,1,1), 1>>>(x, y, B, D)", "softmax_fwd(zz, y, B, D)",
			"softmax_fwd(x, x, B, D)", "softmax_fwd(1e999, y, B, D)" };

		for (size_t i = 0; i < sizeof fv / sizeof *fv; i++) {
			s = pfx("@forward=", fv[i], 24);
			t = fmt("// @forward %s", fv[i]);
			cemit(g, s, WITH(fi, t));
			free(s);
			free(t);
		}
		free(xs);
		free(a100);
		free(a100x);
		free(sp);
		free(spaced);
	}
	{
		char *s100 = rep("s", 100), *s100f = fmt("%s f32[4]", s100);
		const char *sv[] = { "s f32[-1]", "s f32[0]", "s q8[4]", "s f32", "s f32[4611686018427387904]",
			"s f32[B*D*B*D]", "x f32[4]", "s f32[4] extra", s100f };

		for (size_t i = 0; i < sizeof sv / sizeof *sv; i++) {
			s = pfx("@scratch=", sv[i], 24);
			t = fmt("// @scratch %s", sv[i]);
			cemit(g, s, ADD(t));
			free(s);
			free(t);
		}
		free(s100);
		free(s100f);
	}
	{
		/* inserted at fi+1 one after the other: the last one first */
		char *sc[70];

		for (int k = 0; k < 70; k++)
			sc[k] = fmt("// @scratch s%d f32[4]", 69 - k);
		cemit(g, "@scratch*70", join_edit(&l, fi + 1, NULL, (const char *const *)sc, 70));
		for (int k = 0; k < 70; k++)
			free(sc[k]);
	}
	{
		const char **fw = xrealloc(NULL, sizeof *fw * 2100);

		for (int k = 0; k < 2100; k++)
			fw[k] = "// @forward softmax_fwd(x, y, B, D)";
		cemit(g, "@forward*2100", join_edit(&l, fi + 1, NULL, fw, 2100));
		free(fw);
	}
	{
		const char *dv[] = { "@dims B=4", "@dims B=-1,D=99999999999999999999", "@backward", "@unknown x", "@" };

		for (size_t i = 0; i < sizeof dv / sizeof *dv; i++) {
			s = pfx("", dv[i], 24);
			t = fmt("// %s", dv[i]);
			cemit(g, s, ADD(t));
			free(s);
			free(t);
		}
	}
#undef WITH
#undef ADD
	for (int i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
}

static struct tcase *cand_cases(const char *datadir, const char *work, int full, int *n)
{
	char *p = fmt("%s/candidates/%s", datadir, CAND_BASE), *dir = fmt("%s/cands", work);
	char *src = read_file(p, NULL);
	struct cgen g = { dir, NULL, 0 };

	mkdir_p(dir);
	cand_mutations(&g, src, full);
	free(src);
	free(p);
	free(dir);
	*n = g.n;
	return g.cases;
}

/* ---- checks ------------------------------------------------------------------- */

struct opts {
	const char *crucible, *work, *datadir;
	char **env, **cenv; /* tasks: the mutants' registry; candidates: the real one */
	double timeout;
	rlim_t rlimit;
	int full;
};

static void add_result(struct tcase *c, const char *cmd, int rc, int hung, char *verdict, char *out, size_t n)
{
	struct result *r = &c->res[c->nres++];

	r->cmd = cmd;
	r->rc = rc;
	r->hung = hung;
	r->verdict = verdict;
	r->out = out;
	r->outn = n;
}

/* list m/NAME: exit 2 naming the file and the field, or (a mutation that
 * may be valid) 0; then dump (the reference on it) and, for a broken task
 * of the full replay, check of a candidate that names it */
static void task_check(struct tcase *c, const struct opts *o)
{
	static const int two[] = { 2 }, zero[] = { 0 };
	char *fname = fmt("%s.json", c->name), *tname = fmt("m/%s", c->name);
	char *dd = fmt("%s/dump/%s", o->work, c->name), *out, *v;
	size_t n;
	int rc, rc2, hung;

	{
		char *argv[] = { (char *)o->crucible, "list", tname, NULL };

		rc = run_cmd(argv, o->env, o->timeout, o->rlimit, &out, &n, &hung);
		v = judge(c, rc, hung, out, n, fname, two, 1, zero, 1);
		add_result(c, "list", hung ? 0 : rc, hung, v, out, n);
	}
	if (v)
		goto out;
	{
		char *argv[] = { (char *)o->crucible, "dump", tname, "--out", dd, NULL };
		char *dumpdir = fmt("%s/dump", o->work);

		mkdir_p(dumpdir);
		free(dumpdir);
		rc2 = run_cmd(argv, o->env, o->timeout, o->rlimit, &out, &n, &hung);
		v = judge(c, rc2, hung, out, n, fname, two, 1, zero, rc == 0 ? 1 : 0);
		add_result(c, "dump", hung ? 0 : rc2, hung, v, out, n);
		rm_rf(dd);
	}
	if (rc == 2 && o->full && crc32_str(c->name) % 8 == 0) {
		char *cand = fmt("%s/cand/%s.c", o->work, c->name);
		char *src = fmt("// @task m/%s\n// @forward f(x)\nvoid f(float *x) { (void)x; }\n", c->name);
		char *argv[] = { (char *)o->crucible, "check", cand, "--no-timing", NULL };
		int rc3;

		write_file(cand, src, strlen(src));
		rc3 = run_cmd(argv, o->env, o->timeout, o->rlimit, &out, &n, &hung);
		v = judge(c, rc3, hung, out, n, fname, two, 1, zero, 1);
		add_result(c, "check", hung ? 0 : rc3, hung, v, out, n);
		free(cand);
		free(src);
	}
out:
	free(fname);
	free(tname);
	free(dd);
}

/* check: a malformed header is a format_error naming the file and the
 * line (exit 1), or a bad task name an input error (exit 2); never a crash */
static void cand_check(struct tcase *c, const struct opts *o)
{
	static const int two[] = { 2 }, ok[] = { 0, 1, 2 };
	char *p = fmt("%s/cands/%s.c", o->work, c->name), *fname = fmt("%s.c", c->name), *out, *v;
	char *argv[] = { (char *)o->crucible, "check", p, "--no-timing", NULL };
	size_t n;
	int rc, hung;

	rc = run_cmd(argv, o->cenv, o->timeout, o->rlimit, &out, &n, &hung);
	/* a header that parses may still be a wrong call (a literal that
	 * crashes the candidate, an alias): any verdict, but a format_error
	 * names the file and the line */
	c->must_fail = 0;
	v = judge(c, rc, hung, out, n, fname, two, 1, ok, 3);
	if (!v && rc != 0 && !has(out, n, fname))
		v = xstrdup("the message does not name the file");
	if (!v && has(out, n, "format_error")) {
		/* NAME.c:DIGIT somewhere */
		const char *s = out, *e = out + n;
		size_t fl = strlen(fname);
		int found = 0;

		while (!found && (s = memmem(s, (size_t)(e - s), fname, fl))) {
			s += fl;
			found = s + 1 < e && *s == ':' && s[1] >= '0' && s[1] <= '9';
		}
		if (!found)
			v = xstrdup("format_error without FILE:LINE");
	}
	add_result(c, "check", hung ? 0 : rc, hung, v, out, n);
	free(p);
	free(fname);
}

/* ---- the pool ----------------------------------------------------------------- */

struct pool {
	struct tcase *cases;
	int n, next;
	const struct opts *o;
	pthread_mutex_t mu;
};

static void *worker(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		int i;

		pthread_mutex_lock(&p->mu);
		i = p->next++;
		pthread_mutex_unlock(&p->mu);
		if (i >= p->n)
			return NULL;
		if (!strcmp(p->cases[i].kind, "task"))
			task_check(&p->cases[i], p->o);
		else
			cand_check(&p->cases[i], p->o);
	}
}

/* environ with NAME=VALUE set (or, keep_old, kept when set) */
static char **env_with(char **base, const char *name, const char *value, int keep_old)
{
	size_t n = 0, nl = strlen(name);
	char **e;
	int found = 0;

	while (base[n])
		n++;
	e = xrealloc(NULL, sizeof *e * (n + 2));
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(base[i], name, nl) && base[i][nl] == '=') {
			found = 1;
			e[i] = keep_old ? xstrdup(base[i]) : fmt("%s=%s", name, value);
		} else {
			e[i] = xstrdup(base[i]);
		}
	}
	if (!found)
		e[n++] = fmt("%s=%s", name, value);
	e[n] = NULL;
	return e;
}

static void env_free(char **e)
{
	for (size_t i = 0; e[i]; i++)
		free(e[i]);
	free(e);
}

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

/* word is one of the comma-separated list */
static int in_list(const char *list, const char *word)
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

static void usage(void)
{
	fprintf(stderr, "usage: malformed_tasks CRUCIBLE [--full] [--kind tasks,cand] [--jobs N] [--timeout S]\n"
			"                       [--keep DIR] [--report CSV] [--count] [--asan]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *crucible = NULL, *kind = "tasks,cand", *keep = NULL, *report = NULL;
	int full = 0, jobs = 2, count = 0, asan = 0, nt = 0, nc = 0, ncases, bad = 0;
	double timeout = 30;
	char *work, *mdata, **env, **e2, **cenv;
	struct tcase *tc = NULL, *cc = NULL, *cases;
	struct opts o;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t kl = eq && !strncmp(a, "--", 2) ? (size_t)(eq - a) : strlen(a);
		const char *val = NULL;

#define OPT(name) (kl == strlen(name) && !strncmp(a, name, kl))
#define VAL() (val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : (usage(), "")))
		if (OPT("--full"))
			full = 1;
		else if (OPT("--count"))
			count = 1;
		else if (OPT("--asan"))
			asan = 1;
		else if (OPT("--kind"))
			kind = VAL();
		else if (OPT("--jobs"))
			jobs = atoi(VAL());
		else if (OPT("--timeout"))
			timeout = atof(VAL());
		else if (OPT("--keep"))
			keep = VAL();
		else if (OPT("--report"))
			report = VAL();
		else if (!strcmp(a, "-h") || !strcmp(a, "--help") || (a[0] == '-' && a[1]) || crucible)
			usage();
		else
			crucible = a;
		(void)val;
#undef OPT
#undef VAL
	}
	if (!crucible)
		usage();
	if (jobs < 1)
		jobs = 1;
	o.datadir = getenv("CRUCIBLE_DATADIR");
	if (!o.datadir || !*o.datadir)
		die("CRUCIBLE_DATADIR is not set");
	if (keep) {
		rm_rf(keep);
		mkdir_p(keep);
		work = xstrdup(keep);
	} else {
		const char *tmp = getenv("TMPDIR");

		work = fmt("%s/crucible-malformed-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(work))
			die("mkdtemp: %s", strerror(errno));
	}
	{
		char *cd = fmt("%s/cand", work);

		mkdir_p(cd);
		free(cd);
	}
	mdata = fmt("%s/data", work);
	/* a huge allocation aborts with a report (instrumented) or fails under
	 * 8 GiB of address space (release) */
	e2 = env_with(environ, "ASAN_OPTIONS", "max_allocation_size_mb=4096:allocator_may_return_null=0", 1);
	env = env_with(e2, "UBSAN_OPTIONS", "print_stacktrace=1", 1);
	env_free(e2);
	cenv = env_with(env, "CRUCIBLE_DATADIR", o.datadir, 0);
	e2 = env_with(env, "CRUCIBLE_DATADIR", mdata, 0);
	env_free(env);
	env = e2;
	if (in_list(kind, "tasks"))
		tc = task_cases(o.datadir, work, full, &nt);
	if (in_list(kind, "cand"))
		cc = cand_cases(o.datadir, work, full, &nc);
	ncases = nt + nc;
	cases = xrealloc(NULL, sizeof *cases * (size_t)ncases);
	if (nt)
		memcpy(cases, tc, sizeof *cases * (size_t)nt);
	if (nc)
		memcpy(cases + nt, cc, sizeof *cases * (size_t)nc);
	free(tc);
	free(cc);
	if (count) {
		printf("%d inputs\n", ncases);
		goto done;
	}
	o.crucible = crucible;
	o.work = work;
	o.env = env;
	o.cenv = cenv;
	o.timeout = timeout;
	o.rlimit = asan ? 0 : (rlim_t)8 << 30;
	o.full = full;
	{
		struct pool p = { cases, ncases, 0, &o, PTHREAD_MUTEX_INITIALIZER };
		pthread_t *th = xrealloc(NULL, sizeof *th * (size_t)jobs);

		for (int i = 0; i < jobs; i++)
			if (pthread_create(&th[i], NULL, worker, &p))
				die("pthread_create failed");
		for (int i = 0; i < jobs; i++)
			pthread_join(th[i], NULL);
		free(th);
	}
	for (int i = 0; i < ncases; i++)
		for (int r = 0; r < cases[i].nres; r++) {
			struct result *x = &cases[i].res[r];
			char *msg;

			if (!x->verdict)
				continue;
			bad++;
			msg = squash_tail(x->out, x->outn, 400);
			printf("FAIL %s %s [%s] %s: %s -- %s\n", cases[i].kind, cases[i].name, cases[i].why, x->cmd,
			       x->verdict, msg);
			free(msg);
		}
	if (report) {
		FILE *f = fopen(report, "w");

		if (!f)
			die("cannot write %s: %s", report, strerror(errno));
		fputs("kind,name,mutation,command,rc,verdict,message\r\n", f);
		for (int i = 0; i < ncases; i++)
			for (int r = 0; r < cases[i].nres; r++) {
				struct result *x = &cases[i].res[r];
				char rcs[16], *msg = squash_tail(x->out, x->outn, 300);

				snprintf(rcs, sizeof rcs, "%d", x->rc);
				csv_field(f, cases[i].kind, 0);
				csv_field(f, cases[i].name, 0);
				csv_field(f, cases[i].why, 0);
				csv_field(f, x->cmd, 0);
				csv_field(f, x->hung ? "" : rcs, 0);
				csv_field(f, x->verdict ? x->verdict : "ok", 0);
				csv_field(f, msg, 1);
				free(msg);
			}
		fclose(f);
	}
	for (int k = 0; k < 2; k++) {
		const char *kn = k ? "cand" : "task";
		int n = 0, failed = 0, valid = 0;

		for (int i = 0; i < ncases; i++) {
			int f = 0, ok = 0;

			if (strcmp(cases[i].kind, kn))
				continue;
			n++;
			for (int r = 0; r < cases[i].nres; r++) {
				f |= cases[i].res[r].verdict != NULL;
				ok |= !strcmp(cases[i].res[r].cmd, "list") && !cases[i].res[r].hung &&
				      cases[i].res[r].rc == 0;
			}
			failed += f;
			valid += ok;
		}
		if (n)
			printf("%s: %d inputs, %d failed, %d accepted as valid\n", kn, n, failed, valid);
	}
done:
	fflush(stdout);
	if (!keep)
		rm_rf(work);
	for (int i = 0; i < ncases; i++) {
		free(cases[i].name);
		free(cases[i].why);
		sl_free(&cases[i].fields);
		for (int r = 0; r < cases[i].nres; r++) {
			free(cases[i].res[r].verdict);
			free(cases[i].res[r].out);
		}
	}
	free(cases);
	free(work);
	free(mdata);
	env_free(env);
	env_free(cenv);
	return bad ? 1 : 0;
}
