/* cr_cli.c — the shared command layer: option errors, "did you mean", help
 * tails, stdout's write errors, output folders made and locked. */
#include "common/cr_cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void vsay(const char *cmd, const char *fmt, va_list ap)
{
	if (cmd)
		fprintf(stderr, "crucible %s: ", cmd);
	else
		fputs("crucible: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cr_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(cmd, fmt, ap);
	va_end(ap);
}

static void hint(const char *cmd)
{
	if (cmd)
		fprintf(stderr, "Try 'crucible %s --help'.\n", cmd);
	else
		fputs("Try 'crucible --help'.\n", stderr);
}

int cr_cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(cmd, fmt, ap);
	va_end(ap);
	hint(cmd);
	return CR_EXIT_USAGE;
}

int cr_cli_status(const char *cmd, const struct cr_err *err)
{
	int rc = cr_status_exit_code(err->status);

	if (!rc)
		return CR_EXIT_OK;
	if (err->msg[0])
		cr_cli_error(cmd, "%s", err->msg);
	return rc;
}

/* Optimal string alignment distance (Levenshtein with adjacent
 * transpositions), case ignored (EVAL is eval), capped: words are option
 * and command names. */
static int osa(const char *a, const char *b)
{
	enum { MAXL = 64 };
	int la = (int)strlen(a), lb = (int)strlen(b);
	int d[MAXL + 1][MAXL + 1];

	if (la > MAXL || lb > MAXL)
		return INT_MAX;
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int c = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			int v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + c < v)
				v = d[i - 1][j - 1] + c;
			if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

const char *cr_cli_suggest(const char *word, const char *const *cands, int n)
{
	const char *best = NULL;
	int best_d = INT_MAX;
	size_t wl = strlen(word);

	if (!wl)
		return NULL;
	for (int i = 0; i < n; i++) {
		int d = osa(word, cands[i]);

		if (d < best_d) {
			best_d = d;
			best = cands[i];
		}
	}
	if (best && best_d <= 2 && (size_t)best_d * 2 < wl + 1)
		return best;
	for (int i = 0; i < n; i++)
		if (!strncmp(cands[i], word, wl))
			return cands[i];
	return NULL;
}

int cr_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
		  const struct option *longopts)
{
	char so[128];
	int c;

	snprintf(so, sizeof so, ":%s", shortopts && shortopts[0] == ':' ? shortopts + 1 : shortopts ? shortopts : "");
	opterr = 0;
	c = getopt_long(argc, argv, so, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	/* optind has moved past the offending word (or its missing value) */
	const char *bad = optind - 1 < argc && optind >= 1 ? argv[optind - 1] : "";

	if (c == ':') {
		if (optopt && !(bad[0] == '-' && bad[1] == '-'))
			cr_cli_error(cmd, "option '-%c' needs a value", optopt);
		else
			cr_cli_error(cmd, "option '%.*s' needs a value", (int)strcspn(bad, "="), bad);
		hint(cmd);
		return '?';
	}
	if (optopt && !(bad[0] == '-' && bad[1] == '-')) {
		cr_cli_error(cmd, "unknown option '-%c'", optopt);
		hint(cmd);
		return '?';
	}
	/* a long option: unknown, ambiguous, or given a value it does not take */
	char name[96];
	size_t nl = strcspn(bad + 2, "=");
	const char *names[256];
	int n = 0;

	snprintf(name, sizeof name, "%.*s", (int)(nl < 90 ? nl : 90), bad + 2);
	for (const struct option *o = longopts; o && o->name && n < 256; o++) {
		if (!strcmp(o->name, name) && o->has_arg == no_argument && bad[2 + nl] == '=') {
			cr_cli_error(cmd, "option '--%s' takes no value", name);
			hint(cmd);
			return '?';
		}
		names[n++] = o->name;
	}
	int prefixed = 0;

	for (int i = 0; i < n; i++)
		prefixed += nl && !strncmp(names[i], name, nl);
	if (prefixed > 1) {
		cr_cli_error(cmd, "option '--%s' is ambiguous (give more of its name)", name);
		hint(cmd);
		return '?';
	}
	const char *s = cr_cli_suggest(name, names, n);

	if (s)
		cr_cli_error(cmd, "unknown option '--%s' (did you mean '--%s'?)", name, s);
	else
		cr_cli_error(cmd, "unknown option '%s'", bad);
	hint(cmd);
	return '?';
}

static const struct {
	unsigned bit;
	const char *text;
} env_doc[] = {
	{ CR_ENV_DATADIR, "  CRUCIBLE_DATADIR      the data folder (tasks/, baselines/, samples/); default:\n"
			  "                        the installed one, or the source tree's data/\n" },
	{ CR_ENV_SEED, "  CRUCIBLE_SEED         a secret mixed into the run seed (hex or text); never\n"
		       "                        written anywhere; run.json says only that one was used\n" },
	{ CR_ENV_CACHE, "  CRUCIBLE_CACHE        compiled-candidate cache; default $XDG_CACHE_HOME/crucible,\n"
			"                        else ~/.cache/crucible\n" },
	{ CR_ENV_CUDA, "  CRUCIBLE_LIBCUDA      the driver library to dlopen (default libcuda.so.1)\n"
		       "  CRUCIBLE_NVRTC        the NVRTC library to dlopen (default the toolkit's)\n"
		       "  CUDA_VISIBLE_DEVICES  which GPUs the driver shows\n" },
	{ CR_ENV_TMPDIR, "  TMPDIR                where work folders are made (default /tmp)\n" },
	{ CR_ENV_REFCACHE, "  CRUCIBLE_REF_CACHE_MB memory for cached references (0 turns the cache off)\n" },
	{ CR_ENV_DECODER, "  CRUCIBLE_DEC_SIMD     generic|avx2: force the decoder's CPU kernels\n"
			  "  CRUCIBLE_CUDA_IMAGE   ptx|sm_80|sm_90: force the decoder's GPU image\n" },
	{ CR_ENV_COLOR, "  NO_COLOR              no colour or status-line redraws on a terminal\n" },
};

void cr_cli_help_tail(FILE *f, const char *exit_lines, unsigned env)
{
	fputs("\nEXIT STATUS\n", f);
	if (exit_lines)
		fputs(exit_lines, f);
	else
		fputs("  0  done\n"
		      "  1  a check failed\n"
		      "  2  bad usage or bad input (the message names the file and line)\n"
		      "  3  the environment (no GPU, no compiler, a write that failed)\n",
		      f);
	if (!env)
		return;
	fputs("\nENVIRONMENT\n", f);
	for (size_t i = 0; i < sizeof env_doc / sizeof env_doc[0]; i++)
		if (env & env_doc[i].bit)
			fputs(env_doc[i].text, f);
}

int cr_cli_close_stdout(const char *cmd, int rc)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);
	int e = errno;

	if (fclose(stdout) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (!bad)
		return rc;
	/* a reader that closed the pipe early chose to (head, grep -q): as
	 * silent as SIGPIPE would have been, but not exit 0 */
	if (e != EPIPE)
		cr_cli_error(cmd, "cannot write standard output: %s", strerror(e ? e : EIO));
	return rc ? rc : CR_EXIT_ENV;
}

enum cr_status cr_mkdir_p(const char *path, struct cr_err *err)
{
	char p[PATH_MAX];
	struct stat st;
	size_t n = strlen(path);

	if (!n)
		return cr_errf(err, CR_EUSAGE, "an empty folder name");
	if (n >= sizeof p)
		return cr_errf(err, CR_EUSAGE, "%.64s...: path too long", path);
	memcpy(p, path, n + 1);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST) {
			int e = errno;

			*s = '/';
			return cr_errf(err, CR_EENV, "%s: cannot create folder: %s", path, strerror(e));
		}
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return cr_errf(err, CR_EENV, "%s: cannot create folder: %s", path, strerror(errno));
	if (stat(p, &st) || !S_ISDIR(st.st_mode))
		return cr_errf(err, CR_EENV, "%s: exists and is not a folder", path);
	return CR_OK;
}

void cr_utc_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

enum cr_status cr_out_lock(const char *dir, const char *cmd, int *fd, struct cr_err *err)
{
	char path[PATH_MAX], who[256], host[64] = "?", now[32];
	enum cr_status st;
	int f;

	*fd = -1;
	if ((st = cr_mkdir_p(dir, err)))
		return st;
	if (snprintf(path, sizeof path, "%s/.crucible.lock", dir) >= (int)sizeof path)
		return cr_errf(err, CR_EUSAGE, "%.64s...: path too long", dir);
	f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (f < 0)
		return cr_errf(err, CR_EENV, "%s: cannot open the folder's lock: %s", path, strerror(errno));
	if (flock(f, LOCK_EX | LOCK_NB)) {
		int e = errno;
		ssize_t r;

		if (e != EWOULDBLOCK) {
			close(f);
			return cr_errf(err, CR_EENV, "%s: cannot lock: %s", path, strerror(e));
		}
		r = pread(f, who, sizeof who - 1, 0);
		who[r > 0 ? r : 0] = 0;
		who[strcspn(who, "\n")] = 0;
		for (char *s = who; *s; s++)
			if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
				*s = '?';
		close(f);
		return cr_errf(err, CR_EUSAGE,
			       "%s is in use by %s: wait for it to finish or choose another --out",
			       dir, who[0] ? who : "another crucible process");
	}
	gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = 0;
	cr_utc_now(now);
	int len = snprintf(who, sizeof who, "crucible %s, pid %ld on %s, since %s\n", cmd ? cmd : "",
			   (long)getpid(), host, now);
	if (ftruncate(f, 0) || pwrite(f, who, (size_t)len, 0) != len) {
		int e = errno;

		close(f);
		return cr_errf(err, CR_EENV, "%s: cannot write: %s", path, strerror(e));
	}
	*fd = f;
	return CR_OK;
}

void cr_out_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}
