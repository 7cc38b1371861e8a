/* srv_job.c — scoring one job: the candidate written into a private work
 * folder, `crucible check FILE --task T --seed S --json ...` run there as a
 * child (its own process group, killed with the server and after the wall
 * limit; the secret run's CRUCIBLE_SEED in its environment only), check's
 * JSON read back into a verdict, or the run called a harness failure (a
 * kill, exit 2 or 3, output that is not check's JSON) so that the caller
 * retries it rather than charging the submission. A secret run keeps
 * nothing of check's output but the status, the speedups, noisy and the
 * source's hash: its detail and stderr can describe cases drawn from the
 * secret seed. Also the feedback text a model reads, and the reward.
 *
 * Called from several worker threads at once: nothing here is global, the
 * parent never touches its own environment, every descriptor is made
 * close-on-exec, and the forked child calls only async-signal-safe
 * functions before execve. */
#include "serve/srv_job.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cr_text.h"
#include "common/cr_verdict.h"

extern char **environ;

#define OUT_MAX ((size_t)4 << 20) /* check's JSON is a few KiB; more is not check */
enum { ERR_TAIL = 2048, NAME_MAX_LEN = 100 };

/* What the child said: its stdout whole (up to OUT_MAX), the last
 * ERR_TAIL bytes of its stderr. */
struct child_io {
	char *out;
	size_t out_len, out_cap;
	bool out_overflow;
	char err[ERR_TAIL];
	size_t err_len;
};

/* ---- the work folder and the candidate file ---- */

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcmp(s + n - m, suf);
}

/* The candidate's file name in the work folder: the submitted name when it
 * is a plain one ([A-Za-z0-9._-], not starting with '.' or '-', ending .c or
 * .cu), else cand.c or cand.cu by its extension (.c when it has neither).
 * The name reaches compiler messages, so a model sees its own name. */
static void cand_name(const char *file_name, char *out, size_t cap)
{
	const char *f = file_name ? file_name : "";
	bool cu = has_suffix(f, ".cu"), ok = (cu || has_suffix(f, ".c")) && strlen(f) <= NAME_MAX_LEN &&
						 f[0] != '.' && f[0] != '-';

	for (const char *p = f; ok && *p; p++)
		ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		     *p == '.' || *p == '_' || *p == '-';
	/* ".c" or ".cu" alone is no name */
	if (ok && strlen(f) > (cu ? 3u : 2u))
		snprintf(out, cap, "%s", f);
	else
		snprintf(out, cap, "cand.%s", cu ? "cu" : "c");
}

/* Removes the folder at dfd/name and what it holds (links are removed, not
 * followed). Depth-limited: check leaves at most a file or two here. */
static void rm_tree_at(int dfd, const char *name, int depth)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;

	if (fd >= 0 && depth < 16 && (d = fdopendir(fd))) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (unlinkat(fd, e->d_name, 0) && (errno == EISDIR || errno == EPERM))
				rm_tree_at(fd, e->d_name, depth + 1);
		}
		closedir(d); /* closes fd */
	} else if (fd >= 0) {
		close(fd);
	}
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static enum cr_status write_source(const char *path, const char *src, struct cr_err *err)
{
	size_t n = strlen(src), off = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return cr_errf(err, CR_EIO, "cannot create the candidate file in the work folder: %s",
			       strerror(errno));
	while (off < n) {
		ssize_t w = write(fd, src + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			close(fd);
			return cr_errf(err, CR_EIO, "cannot write the candidate file: %s", strerror(e));
		}
		off += (size_t)w;
	}
	if (close(fd))
		return cr_errf(err, CR_EIO, "cannot write the candidate file: %s", strerror(errno));
	return CR_OK;
}

/* ---- the child ---- */

/* The child's environment: the server's, less any CRUCIBLE_SEED (and any
 * CUDA_VISIBLE_DEVICES when a device is named), plus the secret and the
 * device. environ is only read: nobody in the server writes it. */
static char **child_env(const struct srv_job_spec *s)
{
	size_t n = 0, k = 0, base;
	char **env;

	while (environ && environ[n])
		n++;
	env = calloc(n + 3, sizeof *env);
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "CRUCIBLE_SEED=", 14) ||
		    (s->gpu >= 0 && !strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21)))
			continue;
		env[k++] = environ[i];
	}
	/* the two added entries sit last: env_free frees exactly those */
	base = k;
	if (s->gpu >= 0 && asprintf(&env[k++], "CUDA_VISIBLE_DEVICES=%d", s->gpu) < 0)
		goto fail;
	if (s->secret && asprintf(&env[k++], "CRUCIBLE_SEED=%s", s->secret) < 0)
		goto fail;
	return env;
fail:
	for (size_t i = base; i + 1 < k; i++)
		free(env[i]); /* the one that failed holds nothing */
	free(env);
	return NULL;
}

static void env_free(char **env, const struct srv_job_spec *s)
{
	size_t n = 0;
	int own = (s->gpu >= 0) + (s->secret != NULL);

	if (!env)
		return;
	while (env[n])
		n++;
	for (size_t i = n - (size_t)own; i < n; i++) {
		explicit_bzero(env[i], strlen(env[i])); /* the secret leaves no copy behind */
		free(env[i]);
	}
	free(env);
}

/* The forked child could not start check: errno up the exec pipe (the
 * parent reports it), then exit. Async-signal-safe. */
static void child_fail(int fd, int e)
{
	(void)!write(fd, &e, sizeof e);
	_exit(127);
}

/* In the forked child: own process group, killed with the thread that
 * forked it, default signals, stdin /dev/null, stdout/stderr the pipes,
 * cwd the work folder, no other descriptor, then check. */
static void child_exec(const char *exe, char **argv, char **envp, const char *dir, int out_w, int err_w,
		       int exec_w, pid_t parent)
{
	sigset_t none;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int null_fd;

	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127); /* the server is already gone */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL); /* an ignored SIGPIPE would survive exec */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* above 2 first: a server started with stdio closed can hold a pipe
	 * there, and dup2 of a descriptor onto itself would keep its close-on-exec */
	if ((out_w = fcntl(out_w, F_DUPFD_CLOEXEC, 3)) < 0 || (err_w = fcntl(err_w, F_DUPFD_CLOEXEC, 3)) < 0 ||
	    (exec_w = fcntl(exec_w, F_DUPFD_CLOEXEC, 3)) < 0)
		_exit(127);
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || (null_fd ? dup2(null_fd, 0) : fcntl(0, F_SETFD, 0)) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		child_fail(exec_w, errno);
	if (chdir(dir))
		child_fail(exec_w, errno);
	/* the server's sockets and database stay with it; exec_w is close-on-exec */
	if (exec_w != 3 && dup3(exec_w, 3, O_CLOEXEC) < 0)
		child_fail(exec_w, errno);
	if (syscall(SYS_close_range, 4u, ~0u, 0u)) {
		struct rlimit rl;
		long top = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur > 1 << 20 ? 1 << 20 : (long)rl.rlim_cur;
		for (long fd = 4; fd < top; fd++)
			close((int)fd);
	}
	execve(exe, argv, envp);
	child_fail(3, errno);
}

static void keep_err(struct child_io *io, const char *b, size_t n)
{
	if (n >= ERR_TAIL) {
		memcpy(io->err, b + n - ERR_TAIL, ERR_TAIL);
		io->err_len = ERR_TAIL;
		return;
	}
	if (io->err_len + n > ERR_TAIL) {
		size_t drop = io->err_len + n - ERR_TAIL;
		memmove(io->err, io->err + drop, io->err_len - drop);
		io->err_len -= drop;
	}
	memcpy(io->err + io->err_len, b, n);
	io->err_len += n;
}

/* Reads what fd has now (it is non-blocking); false at its end. */
static bool drain(int fd, bool is_out, struct child_io *io)
{
	char b[16384];

	for (;;) {
		ssize_t r = read(fd, b, sizeof b);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == EAGAIN;
		if (r == 0)
			return false;
		if (!is_out) {
			keep_err(io, b, (size_t)r);
			continue;
		}
		if (io->out_len + (size_t)r > OUT_MAX) {
			io->out_overflow = true;
			continue;
		}
		if (io->out_len + (size_t)r + 1 > io->out_cap) {
			size_t cap = io->out_cap ? io->out_cap : 65536;
			char *p;
			while (cap < io->out_len + (size_t)r + 1)
				cap *= 2;
			if (!(p = realloc(io->out, cap))) {
				io->out_overflow = true; /* reported as unreadable output: a retry */
				continue;
			}
			io->out = p;
			io->out_cap = cap;
		}
		memcpy(io->out + io->out_len, b, (size_t)r);
		io->out_len += (size_t)r;
		io->out[io->out_len] = '\0';
	}
}

/* Whether a process of group pgid is still alive (not a zombie). */
static bool group_alive(pid_t pgid)
{
	DIR *d;
	struct dirent *e;
	bool alive = false;

	if (kill(-pgid, 0) && errno == ESRCH)
		return false; /* the usual case: check reaped its own */
	if (!(d = opendir("/proc")))
		return true;
	while (!alive && (e = readdir(d))) {
		char path[300], buf[512], *p;
		int fd, pgrp = 0, ppid;
		char state;
		ssize_t n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "pid (comm) state ppid pgrp ...": comm may hold anything, so after its last ')' */
		if ((p = strrchr(buf, ')')) && sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
		    pgrp == pgid && state != 'Z' && state != 'X')
			alive = true;
	}
	closedir(d);
	return alive;
}

/* Waits for the child while reading its pipes, until it exits or the
 * deadline passes. The child is not reaped here (WNOWAIT): while it is a
 * zombie its pid and process group cannot be reused, so the caller's kill
 * of the group reaches check's leftovers and nobody else's. */
static bool watch(pid_t pid, int out_r, int err_r, double wall_limit_s, struct child_io *io)
{
	int64_t deadline = wall_limit_s > 0 ? cr_now_ns() + (int64_t)(wall_limit_s * 1e9) : INT64_MAX;
	int fds[2] = { out_r, err_r };
	int pidfd = -1;

#ifdef SYS_pidfd_open
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
	for (;;) {
		struct pollfd p[3];
		nfds_t n = 0;
		siginfo_t si = { 0 };
		int64_t left, tick;

		if (!waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) ? si.si_pid == pid : errno == ECHILD)
			break; /* exited (ECHILD: reaped by someone else; the caller says so) */
		left = deadline - cr_now_ns();
		if (left <= 0) {
			if (pidfd >= 0)
				close(pidfd);
			return false;
		}
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				p[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (pidfd >= 0)
			p[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		/* without a pidfd the exit is noticed by the waitid above, at a tick */
		tick = left / 1000000 + 1;
		if (tick > (pidfd < 0 ? 20 : 1000))
			tick = pidfd < 0 ? 20 : 1000;
		if (poll(p, n, (int)tick) < 0 && errno != EINTR)
			usleep(10000); /* no memory for a moment: the waitid above still watches */
		for (nfds_t i = 0; i < n; i++) {
			for (int k = 0; k < 2; k++)
				if (p[i].fd == fds[k] && p[i].revents && !drain(fds[k], k == 0, io))
					fds[k] = -1; /* at its end: closed by the caller */
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	return true;
}

static void json_num(const json_t *j, const char *k, double *v)
{
	json_t *x = json_object_get(j, k);
	*v = json_is_number(x) ? json_number_value(x) : NAN;
}

/* Copies at most cap-1 bytes of src, never cutting a UTF-8 sequence. */
static void copy_utf8(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	bool cut = n >= cap;

	if (cut) { /* room for the "…" that says so */
		n = cap > 4 ? cap - 4 : 0;
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	if (cut && cap > 4)
		memcpy(dst + n, "\xe2\x80\xa6", 3);
	dst[n + (cut && cap > 4 ? 3 : 0)] = '\0';
}

static void feedback(const json_t *j, struct srv_job_out *o);

/* check's JSON into o; false (o->why set) when it is not check's verdict.
 * A secret run reads only status, speedups, noisy, sha256 and seed. */
static bool read_verdict(const struct srv_job_spec *s, const struct child_io *io, int code,
			 struct srv_job_out *o)
{
	json_error_t je;
	json_t *j, *st, *sha, *seed;
	int v;
	bool ok = false;

	if (io->out_overflow) {
		snprintf(o->why, sizeof o->why, "exit %d with more than %zu bytes of output: not check's "
			 "JSON", code, OUT_MAX);
		return false;
	}
	j = json_loadb(io->out ? io->out : "", io->out_len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		if (s->secret)
			snprintf(o->why, sizeof o->why, "exit %d with output that is not check's JSON", code);
		else
			snprintf(o->why, sizeof o->why, "exit %d with output that is not check's JSON "
				 "(line %d: %s)", code, je.line, j ? "not an object" : je.text);
		goto out;
	}
	st = json_object_get(j, "status");
	if (!json_is_string(st) || (v = check_verdict_parse(json_string_value(st))) < 0) {
		snprintf(o->why, sizeof o->why, "exit %d: check's JSON has no verdict in \"status\"", code);
		goto out;
	}
	/* check exits 0 exactly when the verdict is ok */
	if ((v == CHECK_OK) != (code == 0)) {
		snprintf(o->why, sizeof o->why, "exit %d with status %s: check says one thing and exits with "
			 "another", code, check_verdict_name((enum check_verdict)v));
		goto out;
	}
	seed = json_object_get(j, "seed");
	if (s->secret && !(json_is_string(seed) && !strcmp(json_string_value(seed), "secret"))) {
		/* check ran on a seed of its own: the run is no secret run */
		snprintf(o->why, sizeof o->why, "the secret did not reach check (its JSON names no secret "
			 "seed)");
		goto out;
	}
	snprintf(o->status, sizeof o->status, "%s", check_verdict_name((enum check_verdict)v));
	json_num(j, "speedup", &o->speedup);
	json_num(j, "speedup_lo", &o->speedup_lo);
	json_num(j, "speedup_hi", &o->speedup_hi);
	o->noisy = json_is_true(json_object_get(j, "noisy"));
	sha = json_object_get(j, "sha256");
	if (json_is_string(sha) && strlen(json_string_value(sha)) == 64)
		snprintf(o->sha256, sizeof o->sha256, "%s", json_string_value(sha));
	if (!s->secret) {
		const char *d = json_string_value(json_object_get(j, "detail"));
		copy_utf8(o->detail, sizeof o->detail, d ? d : "");
		feedback(j, o);
	}
	ok = true;
out:
	json_decref(j);
	return ok;
}

/* ---- feedback ---- */

/* A short text for a model, in the spirit of gen/gen_feedback.c: what
 * failed and why, the worst element of a wrong answer, or the speedup of a
 * correct one. Public runs only (the seed is the submitter's own). */
static void feedback(const json_t *j, struct srv_job_out *o)
{
	char *f = o->feedback;
	size_t cap = sizeof o->feedback;
	const char *d = o->detail, *st = o->status;
	const json_t *w = json_object_get(j, "worst");

	if (!strcmp(st, "ok")) {
		double t, b;
		json_num(j, "time_us", &t);
		json_num(j, "baseline_us", &b);
		if (isfinite(o->speedup) && isfinite(t) && isfinite(b))
			snprintf(f, cap, "Your kernel is correct. It runs in %.3g us against the baseline's "
				 "%.3g us: speedup %.2fx [%.2f, %.2f] (95%% interval)%s. Make it faster, keeping "
				 "it correct.", t, b, o->speedup, o->speedup_lo, o->speedup_hi,
				 o->noisy ? "; the timing was noisy, so the figure is not trusted" : "");
		else
			snprintf(f, cap, "Your kernel is correct (not timed). Make it faster, keeping it "
				 "correct.");
	} else if (!strcmp(st, "format_error")) {
		snprintf(f, cap, "Your answer could not be used as a candidate (format error):\n%s\n"
			 "Answer with one code block in the format asked for.", d);
	} else if (!strcmp(st, "compile_error")) {
		snprintf(f, cap, "Your kernel did not compile:\n%s\nFix it.", d);
	} else if (!strcmp(st, "runtime_error")) {
		snprintf(f, cap, "Your kernel failed at run time:\n%s\nFix it.", d);
	} else if (!strcmp(st, "timeout")) {
		snprintf(f, cap, "Your kernel ran out of time:\n%s\nMake it terminate, and faster.", d);
	} else if (!strcmp(st, "mismatch") && json_is_object(w)) {
		const char *stage = json_string_value(json_object_get(w, "stage"));
		const char *shape = json_string_value(json_object_get(w, "shape"));
		const char *prof = json_string_value(json_object_get(w, "profile"));
		const char *out = json_string_value(json_object_get(w, "output"));
		json_t *idx = json_object_get(w, "index");
		double got, exp, ae, re;
		char rel[32] = "";
		json_num(w, "got", &got);
		json_num(w, "expected", &exp);
		json_num(w, "abs_err", &ae);
		json_num(w, "rel_err", &re);
		if (isfinite(re)) /* none where the expected value is 0 */
			snprintf(rel, sizeof rel, ", rel %.3g", re);
		snprintf(f, cap, "Your kernel computes wrong values. %s stage, shape {%s}, inputs '%s': "
			 "output '%s' element %" JSON_INTEGER_FORMAT " is %.6g, expected %.6g (abs error %.3g%s).\n"
			 "Verifier: %s\nFix it.", stage ? stage : "?", shape ? shape : "", prof ? prof : "?",
			 out ? out : "?", json_is_integer(idx) ? json_integer_value(idx) : -1, got, exp, ae, rel, d);
	} else if (!strcmp(st, "mismatch")) {
		snprintf(f, cap, "Your kernel computes wrong values:\n%s\nFix it.", d);
	} else {
		snprintf(f, cap, "Your kernel was rejected (%s):\n%s\nCompute the result honestly from the "
			 "inputs, within the outputs' bounds.", st, d);
	}
}

/* ---- the run ---- */

static void set_why_exit(const struct srv_job_spec *s, const struct child_io *io, const char *what,
			 struct srv_job_out *o)
{
	char tail[ERR_TAIL * 4 + 1];
	size_t n = io->err_len, off = 0;

	/* a secret run's stderr can quote its cases: never kept */
	if (s->secret || !n) {
		snprintf(o->why, sizeof o->why, "%s", what);
		return;
	}
	while (n > 0 && (io->err[n - 1] == '\n' || io->err[n - 1] == ' '))
		n--;
	cr_text_escape(io->err, n, tail, sizeof tail);
	n = strlen(tail);
	/* the end says most: keep it, cut at a character */
	if (strlen(what) + 2 + n >= sizeof o->why) {
		off = n - (sizeof o->why - strlen(what) - 6);
		while (off < n && ((unsigned char)tail[off] & 0xC0) == 0x80)
			off++;
	}
	snprintf(o->why, sizeof o->why, "%s: %s%s", what, off ? "..." : "", tail + off);
}

enum cr_status srv_job_run(const struct srv_job_spec *s, struct srv_job_out *o, struct cr_err *err)
{
	char dir[PATH_MAX], name[NAME_MAX_LEN + 8], path[PATH_MAX + NAME_MAX_LEN + 8];
	char seed[24], cap_s[32], what[96];
	const char *argv[20];
	const char *base = s->tmpdir ? s->tmpdir : getenv("TMPDIR");
	char **envp = NULL;
	int out_p[2] = { -1, -1 }, err_p[2] = { -1, -1 }, exec_p[2] = { -1, -1 };
	int a = 0, status = 0, exec_errno = 0, w;
	struct child_io io = { 0 };
	enum cr_status rc = CR_OK;
	bool exited;
	pid_t pid, parent;

	memset(o, 0, sizeof *o);
	o->speedup = o->speedup_lo = o->speedup_hi = NAN;
	o->pgid = -1;
	if (!base || base[0] != '/')
		base = "/tmp";
	snprintf(dir, sizeof dir, "%s/crucible-job-XXXXXX", base);
	if (!mkdtemp(dir)) /* mode 0700: check reads the file as the server's user */
		return cr_errf(err, CR_EENV, "cannot create a work folder under %s: %s", base, strerror(errno));
	cand_name(s->file_name, name, sizeof name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((rc = write_source(path, s->source ? s->source : "", err)))
		goto out;

	snprintf(seed, sizeof seed, "%" PRIu64, s->seed);
	argv[a++] = s->crucible;
	argv[a++] = "check";
	argv[a++] = name; /* relative to the work folder, the child's cwd: messages name the file alone */
	if (s->task) {
		argv[a++] = "--task";
		argv[a++] = s->task;
	}
	argv[a++] = "--seed";
	argv[a++] = seed;
	argv[a++] = "--json";
	argv[a++] = "--backend";
	argv[a++] = s->backend ? s->backend : "auto";
	if (!s->timing)
		argv[a++] = "--no-timing";
	if (s->quick)
		argv[a++] = "--quick";
	if (s->time_cap_s > 0) {
		snprintf(cap_s, sizeof cap_s, "%g", s->time_cap_s);
		argv[a++] = "--time-cap";
		argv[a++] = cap_s;
	}
	argv[a] = NULL;
	if (!(envp = child_env(s))) {
		rc = cr_errf(err, CR_ENOMEM, "out of memory for the child's environment");
		goto out;
	}
	if (pipe2(out_p, O_CLOEXEC) || pipe2(err_p, O_CLOEXEC) || pipe2(exec_p, O_CLOEXEC)) {
		rc = cr_errf(err, CR_EENV, "cannot make a pipe: %s", strerror(errno));
		goto out;
	}
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		rc = cr_errf(err, CR_EENV, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child_exec(s->crucible, (char **)argv, envp, dir, out_p[1], err_p[1], exec_p[1], parent);
	setpgid(pid, pid); /* both sides: the group exists before any kill below */
	o->pgid = pid;
	for (int i = 0; i < 2; i++) {
		int *p = i ? err_p : out_p;
		close(p[1]);
		p[1] = -1;
		fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
	}
	close(exec_p[1]);
	exec_p[1] = -1;
	fcntl(exec_p[0], F_SETFL, O_NONBLOCK); /* a sibling thread's child may hold a copy a moment */
	exited = watch(pid, out_p[0], err_p[0], s->wall_limit_s, &io);
	/* check's leftovers (and on a timeout check itself) go with its group,
	 * while the unreaped leader still holds the group's id */
	kill(-pid, SIGKILL);
	if (!exited)
		kill(pid, SIGKILL);
	drain(out_p[0], true, &io);
	drain(err_p[0], false, &io);
	while ((w = (int)waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	/* the killed members die in a moment (a zombie, reaped by init, holds
	 * nothing): waited for, within a bound, so the next job finds the
	 * machine free; never signalled again, as the group's id may be free now */
	for (int i = 0; i < 200 && group_alive(pid); i++)
		usleep(10000);
	if (read(exec_p[0], &exec_errno, sizeof exec_errno) != (ssize_t)sizeof exec_errno)
		exec_errno = 0;

	o->harness_failed = true;
	if (!exited) {
		snprintf(o->why, sizeof o->why, "timed out after %g s", s->wall_limit_s);
	} else if (w < 0) {
		snprintf(o->why, sizeof o->why, "the exit status of check was lost (SIGCHLD ignored?)");
	} else if (exec_errno) {
		snprintf(o->why, sizeof o->why, "cannot run %s: %s", s->crucible, strerror(exec_errno));
	} else if (WIFSIGNALED(status)) {
		snprintf(what, sizeof what, "killed by signal %d (%s)", WTERMSIG(status),
			 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
		set_why_exit(s, &io, what, o);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) <= 1) {
		o->harness_failed = !read_verdict(s, &io, WEXITSTATUS(status), o);
	} else {
		snprintf(what, sizeof what, "exit %d", WEXITSTATUS(status));
		set_why_exit(s, &io, what, o);
	}
	if (o->harness_failed) {
		/* a harness failure carries no verdict */
		o->status[0] = o->detail[0] = o->feedback[0] = '\0';
		o->speedup = o->speedup_lo = o->speedup_hi = NAN;
	}
out:
	for (int i = 0; i < 2; i++) {
		if (out_p[i] >= 0)
			close(out_p[i]);
		if (err_p[i] >= 0)
			close(err_p[i]);
		if (exec_p[i] >= 0)
			close(exec_p[i]);
	}
	env_free(envp, s);
	explicit_bzero(io.err, sizeof io.err);
	if (io.out) {
		explicit_bzero(io.out, io.out_cap);
		free(io.out);
	}
	rm_tree_at(AT_FDCWD, dir, 0);
	return rc;
}

double srv_reward(const struct srv_job_out *o)
{
	double l;

	if (o->harness_failed || strcmp(o->status, "ok"))
		return 0;
	if (isnan(o->speedup_lo))
		return 1; /* ok, untimed */
	l = log2(o->speedup_lo);
	if (!(l > 0))
		l = 0; /* slower than the baseline, or an interval reaching down to 0 */
	return 1 + (l > 4 ? 4 : l);
}
