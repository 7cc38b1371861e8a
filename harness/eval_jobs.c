/* eval_jobs.c — the job pool of `crucible eval --jobs N` (eval_jobs.h).
 *
 * N processes forked from the run when the pool opens, so a job starts from
 * the run's state (options parsed, candidate list, tasks loaded), and kept
 * for the run: a command pipe brings each candidate's index, a result pipe
 * takes its verdict back as one struct. A job that dies, or whose pipe ends
 * before its verdict, is an error of the run (the rows written stay). A
 * job's workers inherit its affinity (sched_setaffinity when it starts) and
 * die with it, as it dies with the run (PR_SET_PDEATHSIG).
 *
 * The locks are flock(2) on two files of the run's work root, so a job
 * that dies gives them back: "t" is the turnstile, "l" the room. A
 * checking job holds l shared; a timing job (exclusive mode) takes t, then
 * l exclusively, so once a timing job waits, no new stage starts (a
 * checking job enters through t) and it runs when the stages in flight
 * end. Serial mode takes l exclusively around timing only; with several
 * devices (eval --gpus) each device has its own l (".jobs-lock-dev<k>",
 * k = the job's slot mod the devices), so a device times one candidate at a
 * time while the devices time side by side. */
#include "harness/eval_jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cr_text.h"

const char *const eval_job_timing_names[] = { "pinned", "serial", "exclusive" };

struct job {
	pid_t pid;
	int fd;                   /* the result pipe's read end */
	int cmd;                  /* the command pipe's write end */
	bool busy;
	int idx;
	char name[128];
	struct eval_job_msg msg;
	size_t got;               /* bytes of msg read */
};

struct eval_jobs {
	int n;
	enum eval_job_timing mode;
	bool pinned;
	cpu_set_t *sets;          /* job i's cores (n of them) */
	char cpusets[512];
	char lock_t[4200], lock_l[4200];
	int n_dev;                /* devices with a timing lock each (serial); <= 1: one lock */
	struct job *jobs;
	int in_flight;
	pid_t parent;
	eval_job_fn fn;
	void *fctx;
	volatile sig_atomic_t *stop; /* set: the run is stopping (SIGINT, SIGTERM) */
	void (*tick)(void *);      /* called about once a second while waiting */
	void *tick_ctx;
	bool stopped;             /* ... and a wait saw it */
};

/* In a job process: the lock files and the mode (eval_jobs_timing_hook). */
static struct {
	bool on;
	enum eval_job_timing mode;
	int ft, fl;
	int slot;
} self = { .ft = -1, .fl = -1, .slot = -1 };

/* A descriptor of the run that its jobs must not keep (the --out lock: a
 * job outliving a killed run by a moment would hold the folder). */
static int private_fd = -1;

void eval_jobs_private_fd(int fd)
{
	private_fd = fd;
}

int eval_jobs_slot(void)
{
	return self.on ? self.slot : -1;
}

int eval_job_timing_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, eval_job_timing_names[i]))
			return i;
	return -1;
}

int eval_jobs_cores(void)
{
	cpu_set_t s;
	if (sched_getaffinity(0, sizeof s, &s))
		return 1;
	return CPU_COUNT(&s) > 0 ? CPU_COUNT(&s) : 1;
}

enum eval_job_timing eval_jobs_mode(const struct eval_jobs *p)
{
	return p->mode;
}

const char *eval_jobs_cpusets(const struct eval_jobs *p)
{
	return p->cpusets;
}

int eval_jobs_in_flight(const struct eval_jobs *p)
{
	return p->in_flight;
}

void eval_jobs_names(const struct eval_jobs *p, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < p->n; i++)
		if (p->jobs[i].busy && n < cap)
			n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", p->jobs[i].name);
}

/* The cores in the affinity mask dealt round-robin into n sets: set i holds
 * every n-th core from the i-th. The topology is not read: where SMT
 * siblings are numbered apart, a set may hold half of a physical core whose
 * other half is another job's (docs/SCALE.md). */
static bool split_cores(struct eval_jobs *p)
{
	cpu_set_t all;
	int k = 0;
	size_t w = 0;

	if (sched_getaffinity(0, sizeof all, &all) || CPU_COUNT(&all) < p->n)
		return false;
	for (int i = 0; i < p->n; i++)
		CPU_ZERO(&p->sets[i]);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all))
			CPU_SET(c, &p->sets[k++ % p->n]);
	for (int i = 0; i < p->n && w < sizeof p->cpusets; i++) {
		int first = 1;
		w += (size_t)snprintf(p->cpusets + w, sizeof p->cpusets - w, "%s", i ? " | " : "");
		for (int c = 0; c < CPU_SETSIZE && w < sizeof p->cpusets; c++)
			if (CPU_ISSET(c, &p->sets[i])) {
				w += (size_t)snprintf(p->cpusets + w, sizeof p->cpusets - w, "%s%d",
						      first ? "" : ",", c);
				first = 0;
			}
	}
	return true;
}

static void lock(int fd, int how)
{
	while (flock(fd, how) && errno == EINTR)
		;
}

/* Entering a stage (checking): through the turnstile, then the room shared. */
static void enter_shared(void)
{
	lock(self.ft, LOCK_EX);
	lock(self.ft, LOCK_UN);
	lock(self.fl, LOCK_SH);
}

void eval_jobs_timing_hook(void *ctx, bool start)
{
	(void)ctx;
	if (!self.on)
		return;
	if (self.mode == EJ_SERIAL) {
		lock(self.fl, start ? LOCK_EX : LOCK_UN);
	} else if (self.mode == EJ_EXCLUSIVE) {
		if (start) {
			lock(self.fl, LOCK_UN);
			lock(self.ft, LOCK_EX);
			lock(self.fl, LOCK_EX);
		} else {
			lock(self.fl, LOCK_UN);
			lock(self.ft, LOCK_UN);
			enter_shared();
		}
	}
}

static void write_all(int fd, const void *buf, size_t n)
{
	const char *b = buf;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		b += w;
		n -= (size_t)w;
	}
}

/* Reads exactly n bytes; 0 at a clean end of the pipe before any. */
static int read_all(int fd, void *buf, size_t n)
{
	char *b = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, b + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return got ? -1 : 0;
		got += (size_t)r;
	}
	return 1;
}

static void job_fail(int fd, struct eval_job_msg *m, const char *what)
{
	m->st = CR_EENV;
	snprintf(m->err, sizeof m->err, "--jobs: %s: %s", what, strerror(errno));
	write_all(fd, m, sizeof *m);
	_exit(0);
}

static void job_signal(int sig)
{
	(void)sig;
}

/* A job: set up once (death with the run, cores, lock files), then one
 * candidate per command until the command pipe ends. */
static void job_main(struct eval_jobs *p, int slot, int cmd_fd, int res_fd)
{
	struct eval_job_msg *m = calloc(1, sizeof *m);
	struct eval_job_cmd c;
	int r;

	/* the run decides what a Ctrl-C stops (it kills the jobs in flight);
	 * a handler, not SIG_IGN, so the workers exec'd from here get the
	 * default back */
	signal(SIGINT, job_signal);
	signal(SIGTERM, job_signal);
	if (private_fd >= 0)
		close(private_fd);
	if (!m)
		_exit(4);
	/* a run killed outright takes its jobs with it (and they their
	 * workers, sandbox/proc.c); the parent may already be gone */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != p->parent)
		_exit(5);
	if (p->pinned && sched_setaffinity(0, sizeof p->sets[slot], &p->sets[slot]))
		job_fail(res_fd, m, "sched_setaffinity");
	self.on = true;
	self.mode = p->mode;
	self.slot = slot;
	if (p->mode == EJ_EXCLUSIVE || p->mode == EJ_SERIAL) {
		char dev_lock[4300];
		snprintf(dev_lock, sizeof dev_lock, "%s-dev%d", p->lock_l, slot % p->n_dev);
		self.ft = open(p->lock_t, O_RDWR | O_CLOEXEC);
		self.fl = open(p->mode == EJ_SERIAL && p->n_dev > 1 ? dev_lock : p->lock_l,
			       O_RDWR | O_CLOEXEC);
		if (self.ft < 0 || self.fl < 0)
			job_fail(res_fd, m, "cannot open the lock files");
	}
	while ((r = read_all(cmd_fd, &c, sizeof c)) == 1) {
		memset(m, 0, sizeof *m);
		if (p->mode == EJ_EXCLUSIVE)
			enter_shared();
		p->fn(&c, p->fctx, m);
		m->idx = c.idx;
		/* the lock goes before the verdict, so the parent never sees a
		 * job finished that still holds it */
		if (p->mode == EJ_EXCLUSIVE)
			lock(self.fl, LOCK_UN);
		write_all(res_fd, m, sizeof *m);
	}
	_exit(r == 0 ? 0 : 6);
}

static enum cr_status start_job(struct eval_jobs *p, int slot, struct cr_err *err)
{
	int cp[2], rp[2];
	pid_t pid;

	if (pipe2(cp, O_CLOEXEC))
		return cr_errf(err, CR_EENV, "--jobs: pipe: %s", strerror(errno));
	if (pipe2(rp, O_CLOEXEC)) {
		close(cp[0]);
		close(cp[1]);
		return cr_errf(err, CR_EENV, "--jobs: pipe: %s", strerror(errno));
	}
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) < 0) {
		close(cp[0]), close(cp[1]), close(rp[0]), close(rp[1]);
		return cr_errf(err, CR_EENV, "--jobs: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(cp[1]);
		close(rp[0]);
		/* the other jobs' pipes are not this job's: their command pipes
		 * must end when the parent closes them */
		for (int i = 0; i < slot; i++)
			close(p->jobs[i].fd), close(p->jobs[i].cmd);
		job_main(p, slot, cp[0], rp[1]);
	}
	close(cp[0]);
	close(rp[1]);
	p->jobs[slot] = (struct job){ .pid = pid, .fd = rp[0], .cmd = cp[1] };
	return CR_OK;
}

enum cr_status eval_jobs_open(struct eval_jobs **pp, int n, enum eval_job_timing mode, int n_dev,
			      const char *lockdir, eval_job_fn fn, void *fctx, struct cr_err *err)
{
	struct eval_jobs *p = calloc(1, sizeof *p);
	enum cr_status st;
	int fd;

	*pp = NULL;
	if (!p || !(p->jobs = calloc((size_t)n, sizeof *p->jobs)) ||
	    !(p->sets = calloc((size_t)n, sizeof *p->sets))) {
		if (p)
			free(p->jobs);
		free(p);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	p->n = n;
	p->n_dev = n_dev > 1 ? n_dev : 1;
	p->mode = mode;
	p->fn = fn;
	p->fctx = fctx;
	p->parent = getpid();
	p->pinned = split_cores(p);
	if (!p->pinned) {
		snprintf(p->cpusets, sizeof p->cpusets, "shared");
		if (mode != EJ_EXCLUSIVE)
			fprintf(stderr, "crucible eval: --jobs %d on %d core(s): the jobs share cores, so "
					"timing is exclusive (no other job runs meanwhile)\n", n,
				eval_jobs_cores());
		p->mode = EJ_EXCLUSIVE;
	}
	snprintf(p->lock_t, sizeof p->lock_t, "%s/.jobs-turnstile", lockdir);
	snprintf(p->lock_l, sizeof p->lock_l, "%s/.jobs-lock", lockdir);
	for (int i = 0; i < 2 + (p->n_dev > 1 ? p->n_dev : 0); i++) {
		char dev_lock[4300];
		const char *path = i == 0 ? p->lock_t : i == 1 ? p->lock_l : dev_lock;
		snprintf(dev_lock, sizeof dev_lock, "%s-dev%d", p->lock_l, i - 2);
		if ((fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600)) < 0) {
			st = cr_errf(err, CR_EENV, "--jobs: cannot create %s: %s", path, strerror(errno));
			free(p->sets);
			free(p->jobs);
			free(p);
			return st;
		}
		close(fd);
	}
	for (int i = 0; i < n; i++)
		if ((st = start_job(p, i, err))) {
			p->n = i;
			eval_jobs_close(p);
			return st;
		}
	*pp = p;
	return CR_OK;
}

static void describe_exit(int ws, char *buf, size_t cap)
{
	if (WIFSIGNALED(ws))
		snprintf(buf, cap, "was killed by signal %d (%s)", WTERMSIG(ws), strsignal(WTERMSIG(ws)));
	else if (WIFEXITED(ws))
		snprintf(buf, cap, "exited with status %d", WEXITSTATUS(ws));
	else
		snprintf(buf, cap, "ended");
}

/* Job j's verdict is whole, or its pipe ended (r < 0). */
static enum cr_status job_done(struct eval_jobs *p, struct job *j, int r, eval_job_done_fn done,
			       void *dctx, struct cr_err *err)
{
	char how[128], esc[400];
	int ws = 0;

	j->busy = false;
	j->got = 0;
	p->in_flight--;
	if (r < 0) {
		kill(j->pid, SIGKILL);
		while (waitpid(j->pid, &ws, 0) < 0 && errno == EINTR)
			;
		close(j->fd);
		close(j->cmd);
		j->pid = 0;
		describe_exit(ws, how, sizeof how);
		cr_text_escape_name(j->name, strlen(j->name), esc, sizeof esc);
		return cr_errf(err, CR_EENV, "the job verifying %s %s before it reported (a fault of "
			       "crucible, not of the candidate; the rows before it are kept)", esc, how);
	}
	if (j->msg.st != CR_OK)
		return cr_errf(err, (enum cr_status)j->msg.st, "%s", j->msg.err);
	return done(&j->msg, dctx, err);
}

/* Reads what job j has sent: 1 when its verdict is whole, 0 when more is
 * to come, -1 when the pipe ended first. */
static int job_read(struct job *j)
{
	for (;;) {
		ssize_t r = read(j->fd, (char *)&j->msg + j->got, sizeof j->msg - j->got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0)
			return -1;
		j->got += (size_t)r;
		if (j->got == sizeof j->msg)
			return 1;
	}
}

/* Waits until at least one busy job has finished. */
static enum cr_status wait_one(struct eval_jobs *p, eval_job_done_fn done, void *dctx,
			       struct cr_err *err)
{
	struct pollfd pf[256];
	int map[256], n = 0;

	for (int i = 0; i < p->n && n < 256; i++)
		if (p->jobs[i].busy) {
			pf[n].fd = p->jobs[i].fd;
			pf[n].events = POLLIN;
			pf[n].revents = 0;
			map[n++] = i;
		}
	if (!n)
		return CR_OK;
	for (;;) {
		if (p->stop && *p->stop) {
			p->stopped = true;   /* before poll: a signal just missed */
			return CR_OK;
		}
		/* a bounded wait: a signal between the check above and poll is seen
		 * within half a second */
		int r = poll(pf, (nfds_t)n, p->stop || p->tick ? 500 : -1), finished = 0;
		if (r == 0 && p->tick)
			p->tick(p->tick_ctx);
		if (r < 0 && errno == EINTR) {
			if (p->stop && *p->stop) {
				p->stopped = true;
				return CR_OK;
			}
			continue;
		}
		if (r < 0)
			return cr_errf(err, CR_EENV, "--jobs: poll: %s", strerror(errno));
		for (int k = 0; k < n; k++) {
			struct job *j = &p->jobs[map[k]];
			enum cr_status st;
			int w;
			if (!pf[k].revents || !j->busy)
				continue;
			if ((w = job_read(j)) == 0)
				continue;
			finished = 1;
			if ((st = job_done(p, j, w, done, dctx, err)))
				return st;
		}
		if (finished)
			return CR_OK;
	}
}

enum cr_status eval_jobs_submit(struct eval_jobs *p, const struct eval_job_cmd *cmd,
				const char *name, eval_job_done_fn done, void *dctx,
				struct cr_err *err)
{
	struct job *j = NULL;
	enum cr_status st;
	const char *b = (const char *)cmd;
	size_t left = sizeof *cmd;

	if (p->stop && *p->stop)
		p->stopped = true;
	while (p->in_flight == p->n && !p->stopped)
		if ((st = wait_one(p, done, dctx, err)))
			return st;
	if (p->stopped)
		return CR_OK;   /* not handed out: the run is stopping */
	for (int i = 0; i < p->n && !j; i++)
		if (!p->jobs[i].busy)
			j = &p->jobs[i];
	if (!j || !j->pid)
		return cr_errf(err, CR_EENV, "--jobs: no job left to run %s", name);
	while (left) {
		ssize_t w = write(j->cmd, b, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return cr_errf(err, CR_EENV, "--jobs: the job for %s is gone: %s", name,
				       strerror(errno));
		b += w;
		left -= (size_t)w;
	}
	j->busy = true;
	j->got = 0;
	j->idx = cmd->idx;
	snprintf(j->name, sizeof j->name, "%s", name);
	p->in_flight++;
	return CR_OK;
}

enum cr_status eval_jobs_drain(struct eval_jobs *p, eval_job_done_fn done, void *dctx,
			       struct cr_err *err)
{
	enum cr_status st;
	while (p->in_flight && !p->stopped)
		if ((st = wait_one(p, done, dctx, err)))
			return st;
	return CR_OK;
}

void eval_jobs_close(struct eval_jobs *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		struct job *j = &p->jobs[i];
		if (!j->pid)
			continue;
		/* an idle job ends at the end of its command pipe; a busy one
		 * is stopped (the run is failing) */
		close(j->cmd);
		if (j->busy)
			kill(j->pid, SIGKILL);
		close(j->fd);
		while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
			;
		j->pid = 0;
	}
	unlink(p->lock_t);
	unlink(p->lock_l);
	for (int i = 0; p->n_dev > 1 && i < p->n_dev; i++) {
		char dev_lock[4300];
		snprintf(dev_lock, sizeof dev_lock, "%s-dev%d", p->lock_l, i);
		unlink(dev_lock);
	}
	free(p->sets);
	free(p->jobs);
	free(p);
}

void eval_jobs_stop_on(struct eval_jobs *p, volatile sig_atomic_t *flag)
{
	p->stop = flag;
}

bool eval_jobs_stopped(const struct eval_jobs *p)
{
	return p && (p->stopped || (p->stop && *p->stop));
}

void eval_jobs_on_tick(struct eval_jobs *p, void (*fn)(void *), void *ctx)
{
	p->tick = fn;
	p->tick_ctx = ctx;
}
