/* cgroup.c — a control group per worker (cgroup.h). Every wait is bounded;
 * every file is written with open/write/close so the child can join its
 * groups between clone and exec. */
#include "sandbox/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "common/cr_status.h"

static int cg_probed;          /* 0 not yet, 1 done */
static bool cg_ok;             /* a freezer group can be made */
static char cg_line[320];      /* cr_cg_mode's answer */
static char v2_base[256];      /* the v2 group we live in, "" without v2 */
static char v1_base[4][256];   /* freezer, cpuacct, pids, memory groups we live in */
static const char *const v1_names[4] = { "freezer", "cpuacct", "pids", "memory" };
enum { V1_FREEZER, V1_CPUACCT, V1_PIDS, V1_MEMORY };
static unsigned long cg_seq;
static long cg_quota = 512;    /* tasks a worker may hold (cr_cg_plan) */
static char run_pids[384];     /* the run's pids group, holding its reservation ("" none) */
static bool cg_planned;        /* cr_cg_plan ran (and succeeded) in this run */

static int open_in(const char *dir, const char *file, int flags)
{
	char p[512];

	if (!dir[0] || (size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p)
		return -1;
	return open(p, flags | O_CLOEXEC);
}

/* The whole of a small cgroup file read through a kept descriptor. */
static ssize_t pread_str(int fd, char *buf, size_t cap)
{
	ssize_t n = fd >= 0 ? pread(fd, buf, cap - 1, 0) : -1;

	buf[n > 0 ? n : 0] = 0;
	return n;
}

static int pwrite_str(int fd, const char *s)
{
	size_t n = strlen(s);

	return fd >= 0 && pwrite(fd, s, n, 0) == (ssize_t)n ? 0 : -1;
}

/* One write or read of dir/file, opened for it (open, write, close only:
 * the child joins its groups with it between clone and exec). */
static int write_str(const char *dir, const char *file, const char *s)
{
	int fd = open_in(dir, file, O_WRONLY), rc = pwrite_str(fd, s);

	if (fd >= 0)
		close(fd);
	return rc;
}

static ssize_t read_str(const char *dir, const char *file, char *buf, size_t cap)
{
	int fd = open_in(dir, file, O_RDONLY);
	ssize_t n = pread_str(fd, buf, cap);

	if (fd >= 0)
		close(fd);
	return n;
}

static bool is_file(const char *dir, const char *file)
{
	char p[512];
	struct stat sb;

	snprintf(p, sizeof p, "%s/%s", dir, file);
	return stat(p, &sb) == 0;
}

/* Our own groups, from /proc/self/cgroup and the usual mount points. */
static void find_bases(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[512], v2mnt[64] = "";

	if (is_file("/sys/fs/cgroup", "cgroup.freeze") || is_file("/sys/fs/cgroup", "cgroup.controllers"))
		snprintf(v2mnt, sizeof v2mnt, "/sys/fs/cgroup");
	else if (is_file("/sys/fs/cgroup/unified", "cgroup.controllers"))
		snprintf(v2mnt, sizeof v2mnt, "/sys/fs/cgroup/unified");
	while (f && fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *path;

		if (!c2)
			continue;
		*c2 = 0;
		path = c2 + 1;
		path[strcspn(path, "\n")] = 0;
		if (!strcmp(path, "/"))
			path[0] = 0;
		if (c1[1] == 0 && v2mnt[0]) {   /* "0::path": the v2 hierarchy */
			snprintf(v2_base, sizeof v2_base, "%s%s", v2mnt, path);
			continue;
		}
		for (int i = 0; i < 4; i++) {
			/* the controller list, e.g. "cpu,cpuacct" */
			char list[128], *tok, *save = NULL;

			snprintf(list, sizeof list, "%s", c1 + 1);
			for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				char mnt[256];

				if (strcmp(tok, v1_names[i]))
					continue;
				snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", v1_names[i]);
				if (!is_file(mnt, "cgroup.procs"))
					snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", c1 + 1);
				if (is_file(mnt, "cgroup.procs"))
					snprintf(v1_base[i], sizeof v1_base[i], "%s%s", mnt, path);
			}
		}
	}
	if (f)
		fclose(f);
}

/* A fresh group under base (mkdir), its path in out; 0 or -1 (errno). */
static int make_group(const char *base, const char *name, char *out, size_t cap)
{
	if (!base[0]) {
		errno = ENOENT;
		return -1;
	}
	if ((size_t)snprintf(out, cap, "%s/%s", base, name) >= cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* never adopt a group already there (a stale one of a process whose
	 * pid came round again): removed if empty, else refused */
	if (mkdir(out, 0700) && (errno != EEXIST || rmdir(out) || mkdir(out, 0700))) {
		out[0] = 0;
		return -1;
	}
	return 0;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* rmdir, retried while tasks leave (bounded: 2 s). */
static void remove_group(char *dir)
{
	if (!dir[0])
		return;
	for (int i = 0; i < 400 && rmdir(dir) && errno == EBUSY; i++)
		sleep_ns(5000000);
	dir[0] = 0;
}

static void probe(void);

/* The empty groups named crucible-PID-... of a PID that is gone. */
static void sweep_dir(const char *base)
{
	static int depth;
	DIR *d;
	struct dirent *e;

	if (!base[0] || depth > 1 || !(d = opendir(base)))
		return;
	depth++;
	while ((e = readdir(d))) {
		char p[640];
		long pid;

		if (strncmp(e->d_name, "crucible-", 9) || (pid = strtol(e->d_name + 9, NULL, 10)) <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(p, sizeof p, "%s/%s", base, e->d_name);
		sweep_dir(p); /* a run's group holds its workers' */
		rmdir(p); /* fails, harmlessly, while a task is still inside */
	}
	closedir(d);
	depth--;
}

void cr_cg_sweep(void)
{
	if (!cg_probed)
		find_bases();
	sweep_dir(v2_base);
	for (int i = 0; i < 4; i++)
		sweep_dir(v1_base[i]);
}

/* A number in dir/file; -1 when absent or "max" (no limit). */
static long read_long(const char *dir, const char *file)
{
	char buf[64];

	if (read_str(dir, file, buf, sizeof buf) <= 0)
		return -1;
	return !strncmp(buf, "max", 3) ? -1 : strtol(buf, NULL, 10);
}

/* Tasks a pids group still admits (pids.max less pids.current), -1 when
 * it has no limit or no pids files. */
static long pids_free(const char *dir)
{
	long mx = read_long(dir, "pids.max"), cur = read_long(dir, "pids.current");

	return mx >= 0 && cur >= 0 ? mx - cur : -1;
}

/* Tasks the host still allows us: the kernel's limits less what runs,
 * and every pids group from ours up to its hierarchy's root. */
static long host_headroom(void)
{
	long best = -1, pid_max = read_long("/proc/sys/kernel", "pid_max"),
	     threads_max = read_long("/proc/sys/kernel", "threads-max"), total = -1;
	FILE *f = fopen("/proc/loadavg", "re");
	const char *bases[2] = { v1_base[V1_PIDS], v2_base };

	if (f) {
		double a, b, c;
		long run;

		if (fscanf(f, "%lf %lf %lf %ld/%ld", &a, &b, &c, &run, &total) != 5)
			total = -1;
		fclose(f);
	}
#define CAP(v) do { long v_ = (v); if (v_ >= 0 && (best < 0 || v_ < best)) best = v_; } while (0)
	if (total >= 0) {
		if (pid_max > 0)
			CAP(pid_max - total);
		if (threads_max > 0)
			CAP(threads_max - total);
	}
	for (int k = 0; k < 2; k++) {
		char dir[256];

		/* from our group up to the hierarchy's root (which has no limit) */
		snprintf(dir, sizeof dir, "%s", bases[k]);
		while (strlen(dir) > strlen("/sys/fs/cgroup/")) {
			CAP(pids_free(dir));
			*strrchr(dir, '/') = 0;
		}
	}
#undef CAP
	return best;
}

/* What the other crucible runs beside ours have reserved and not yet
 * used: their run groups' pids.max less pids.current. */
static long reserved_by_others(const char *base)
{
	DIR *d;
	struct dirent *e;
	long sum = 0;

	if (!base[0] || !(d = opendir(base)))
		return 0;
	while ((e = readdir(d))) {
		char dir[640];
		long pid, left;
		size_t n = strlen(e->d_name);

		if (strncmp(e->d_name, "crucible-", 9) || n < 4 || strcmp(e->d_name + n - 4, "-run") ||
		    (pid = strtol(e->d_name + 9, NULL, 10)) <= 0 || pid == (long)getpid() ||
		    (kill((pid_t)pid, 0) && errno == ESRCH))
			continue;
		snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
		if ((left = pids_free(dir)) > 0)
			sum += left;
	}
	closedir(d);
	return sum;
}

long cr_cg_plan(int workers)
{
	char lock_path[] = "/run/crucible-cgroup.lock", num[32], dir[384];
	int lk;

	if (!cg_probed)
		probe();
	find_bases(); /* where we are now */
	if (workers < 1)
		workers = 1;
	/* one planner at a time on the machine: each sees what the others
	 * reserved (a file of root's in /run, never through a link) */
	lk = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lk >= 0)
		while (flock(lk, LOCK_EX) && errno == EINTR)
			;
	long headroom = host_headroom();   /* tasks the host still allows */
	if (headroom >= 0)
		headroom -= reserved_by_others(v1_base[V1_PIDS]);
	/* at most half of what is free: a run beside ours gets its share too */
	cg_quota = 512;
	if (headroom >= 0 && headroom / (2 * (workers + 1)) < cg_quota)
		cg_quota = headroom / (2 * (workers + 1));
	if (cg_quota < 64) {
		snprintf(cg_line, sizeof cg_line, "the host allows %ld more tasks (less what other crucible runs "
			 "reserved): %d workers at once would get %ld each, fewer than the 64 a worker needs "
			 "(fewer --jobs, or a higher pids limit)", headroom, workers, cg_quota);
		if (lk >= 0)
			close(lk);
		return -1;
	}
	/* the reservation, held by the kernel: the run's workers' groups (and
	 * its compilers') live in it, one share kept for the compilers */
	snprintf(dir, sizeof dir, "crucible-%ld-run", (long)getpid());
	snprintf(num, sizeof num, "%ld", cg_quota * (workers + 1));
	if (v1_base[V1_PIDS][0] && !run_pids[0] &&
	    make_group(v1_base[V1_PIDS], dir, run_pids, sizeof run_pids) == 0 &&
	    write_str(run_pids, "pids.max", num))
		remove_group(run_pids);
	else if (run_pids[0])
		write_str(run_pids, "pids.max", num);
	if (lk >= 0)
		close(lk);
	cg_planned = true;
	return cg_quota;
}

/* A worker or compiler group is never made outside a reservation: a
 * command that did not plan (crucible run, a test) plans for two workers
 * now (round 3's eighth attacker: `run` reserved nothing, and its hoarding
 * candidate starved a planned eval's compiler). */
static int ensure_plan(void)
{
	if (cg_planned)
		return 0;
	if (cr_cg_plan(2) < 0) {
		errno = EAGAIN;
		return -1;
	}
	return 0;
}

void cr_cg_unplan(void)
{
	if (run_pids[0] && getpid() == (pid_t)strtol(strrchr(run_pids, '/') + 10, NULL, 10))
		remove_group(run_pids);
}

int cr_cg_create_tasks(struct cr_cg *g, const char *name)
{
	char leaf[128], num[32];

	memset(g, 0, sizeof *g);
	g->freeze_fd = g->state_fd = g->cpu_fd = g->psi_fd = -1;
	if (!cg_probed)
		probe();
	if (!cg_ok) {
		errno = ENOTSUP;
		return -1;
	}
	if (ensure_plan())
		return -1;
	snprintf(leaf, sizeof leaf, "crucible-%ld-%lu-%s", (long)getpid(), ++cg_seq, name);
	snprintf(num, sizeof num, "%ld", cg_quota);
	if (make_group(run_pids[0] ? run_pids : v1_base[V1_PIDS], leaf, g->pids_dir, sizeof g->pids_dir))
		return -1;
	if (write_str(g->pids_dir, "pids.max", num)) {
		remove_group(g->pids_dir);
		return -1;
	}
	return 0;
}

bool cr_cg_hit_max(const struct cr_cg *g)
{
	char buf[128];
	const char *p;

	if (!g->pids_dir[0] || read_str(g->pids_dir, "pids.events", buf, sizeof buf) <= 0 ||
	    !(p = strstr(buf, "max ")))
		return false;
	return strtol(p + 4, NULL, 10) > 0;
}

long cr_cg_quota(bool cuda)
{
	/* a cuda worker's driver starts its own threads: up to 8 shares */
	if (cuda)
		return cg_quota * 8 < 4096 ? cg_quota * 8 : 4096;
	return cg_quota;
}

static void probe(void)
{
	struct cr_cg g;
	char why[160] = "";

	cg_probed = 1;
	find_bases();
	if (geteuid() == 0)
		cr_cg_sweep();
	if (geteuid() != 0)
		snprintf(why, sizeof why, "not root: no cgroup can be created");
	else if (!v2_base[0] && !v1_base[V1_FREEZER][0])
		snprintf(why, sizeof why, "neither a cgroup v2 hierarchy nor a v1 freezer is mounted");
	if (!why[0]) {
		if (cr_cg_create(&g, "probe", 64, 1ull << 40) == 0) {
			cg_ok = true;
			snprintf(cg_line, sizeof cg_line, "cgroup %s (freeze, kill, cpu), %s pids, %s memory",
				 g.v2 ? "v2" : "v1", g.pids_dir[0] ? (g.pids_v2 ? "v2" : "v1") : "no",
				 g.mem_dir[0] ? (g.mem_v2 ? "v2" : "v1") : "no");
			if (!g.pids_dir[0])
				snprintf(cg_line + strlen(cg_line), sizeof cg_line - strlen(cg_line),
					 " (tasks bounded by the per-uid RLIMIT_NPROC)");
			cr_cg_destroy(&g);
		} else {
			snprintf(why, sizeof why, "cannot create a group under %s: %s",
				 v2_base[0] ? v2_base : v1_base[V1_FREEZER], strerror(errno));
		}
	}
	if (!cg_ok)
		snprintf(cg_line, sizeof cg_line, "none (%s): SIGSTOP freeze that a worker's SIGCONT can "
			 "cancel, process CPU clock, per-uid RLIMIT_NPROC", why);
}

const char *cr_cg_mode(void)
{
	if (!cg_probed)
		probe();
	return cg_line;
}

bool cr_cg_available(void)
{
	if (!cg_probed)
		probe();
	return cg_ok;
}

int cr_cg_create(struct cr_cg *g, const char *name, long pids_max, uint64_t mem_max)
{
	char leaf[128], num[32];

	memset(g, 0, sizeof *g);
	g->freeze_fd = g->state_fd = g->cpu_fd = g->psi_fd = -1;
	if (!cg_probed && strcmp(name, "probe"))
		probe();
	if (cg_probed && !cg_ok && strcmp(name, "probe")) {
		errno = ENOTSUP;
		return -1;
	}
	if (strcmp(name, "probe") && ensure_plan())
		return -1;
	snprintf(leaf, sizeof leaf, "crucible-%ld-%lu-%s", (long)getpid(), ++cg_seq, name);
	/* freeze, kill and cpu: v2 where it is mounted (its freezer is core),
	 * else the v1 freezer and cpuacct */
	if (v2_base[0] && make_group(v2_base, leaf, g->dir, sizeof g->dir) == 0 &&
	    is_file(g->dir, "cgroup.freeze")) {
		g->v2 = true;
	} else {
		remove_group(g->dir);
		if (make_group(v1_base[V1_FREEZER], leaf, g->dir, sizeof g->dir))
			return -1;
		if (make_group(v1_base[V1_CPUACCT], leaf, g->cpu_dir, sizeof g->cpu_dir))
			g->cpu_dir[0] = 0;
	}
	/* the files every call touches, opened once: a freeze and a thaw are
	 * then one write each, the frozen test and the CPU one read */
	g->freeze_fd = open_in(g->dir, g->v2 ? "cgroup.freeze" : "freezer.state", O_RDWR);
	g->state_fd = g->v2 ? open_in(g->dir, "cgroup.events", O_RDONLY) : g->freeze_fd;
	g->cpu_fd = g->v2 ? open_in(g->dir, "cpu.stat", O_RDONLY) : open_in(g->cpu_dir, "cpuacct.usage", O_RDONLY);
	g->psi_fd = g->v2 ? open_in(g->dir, "cpu.pressure", O_RDONLY) : -1;
	if (g->freeze_fd < 0 || g->state_fd < 0) {
		int e = errno;
		g->on = true;
		cr_cg_destroy(g);
		errno = e;
		return -1;
	}
	g->on = true;
	/* pids: v2 when the controller is enabled for our children, else v1 */
	snprintf(num, sizeof num, "%ld", pids_max);
	if (g->v2 && is_file(g->dir, "pids.max") && write_str(g->dir, "pids.max", num) == 0) {
		snprintf(g->pids_dir, sizeof g->pids_dir, "%s", g->dir);
		g->pids_v2 = true;
	} else if (make_group(run_pids[0] ? run_pids : v1_base[V1_PIDS], leaf, g->pids_dir, sizeof g->pids_dir) == 0 &&
		   write_str(g->pids_dir, "pids.max", num)) {
		remove_group(g->pids_dir);
	}
	if (mem_max) {
		snprintf(num, sizeof num, "%llu", (unsigned long long)mem_max);
		if (g->v2 && is_file(g->dir, "memory.max") && write_str(g->dir, "memory.max", num) == 0) {
			snprintf(g->mem_dir, sizeof g->mem_dir, "%s", g->dir);
			g->mem_v2 = true;
		} else if (make_group(v1_base[V1_MEMORY], leaf, g->mem_dir, sizeof g->mem_dir) == 0 &&
			   write_str(g->mem_dir, "memory.limit_in_bytes", num)) {
			remove_group(g->mem_dir);
		}
	}
	return 0;
}

int cr_cg_enter(const struct cr_cg *g)
{
	if (!g->on)
		return g->pids_dir[0] ? write_str(g->pids_dir, "cgroup.procs", "0") : 0;
	if (write_str(g->dir, "cgroup.procs", "0") ||
	    (g->cpu_dir[0] && write_str(g->cpu_dir, "cgroup.procs", "0")) ||
	    (g->pids_dir[0] && !g->pids_v2 && write_str(g->pids_dir, "cgroup.procs", "0")) ||
	    (g->mem_dir[0] && !g->mem_v2 && write_str(g->mem_dir, "cgroup.procs", "0")))
		return -1;
	return 0;
}

static bool frozen_now(const struct cr_cg *g)
{
	char buf[256];

	if (g->v2) {
		const char *p;

		if (pread_str(g->state_fd, buf, sizeof buf) <= 0)
			return false;
		p = strstr(buf, "frozen ");
		return p && p[7] == '1';
	}
	return pread_str(g->state_fd, buf, sizeof buf) > 0 && !strncmp(buf, "FROZEN", 6);
}

int cr_cg_freeze(const struct cr_cg *g, int64_t timeout_ns)
{
	int64_t t0 = cr_now_ns(), pause = 20000;

	if (!g->on)
		return -1;
	if (pwrite_str(g->freeze_fd, g->v2 ? "1" : "FROZEN"))
		return -1;
	/* an idle group (its threads blocked in read) is frozen at once;
	 * a running one within microseconds: look a few times before sleeping
	 * (a sleep costs the timer slack, 50 us, inside every timed sample) */
	for (int spin = 0;; spin++) {
		if (frozen_now(g))
			return 0;
		if (cr_now_ns() - t0 > timeout_ns)
			return -1;
		if (spin < 64) {
			sched_yield();
			continue;
		}
		sleep_ns(pause);
		pause = pause < 1000000 ? pause * 2 : pause;
		/* a v1 freezer left FREEZING retries only when asked again */
		if (!g->v2)
			pwrite_str(g->freeze_fd, "FROZEN");
	}
}

void cr_cg_thaw(const struct cr_cg *g)
{
	if (g->on)
		pwrite_str(g->freeze_fd, g->v2 ? "0" : "THAWED");
}

int64_t cr_cg_cpu_ns(const struct cr_cg *g)
{
	char buf[512];

	if (!g->on)
		return -1;
	if (g->v2) {
		const char *p;

		if (pread_str(g->cpu_fd, buf, sizeof buf) <= 0 || !(p = strstr(buf, "usage_usec ")))
			return -1;
		return strtoll(p + 11, NULL, 10) * 1000;
	}
	if (pread_str(g->cpu_fd, buf, sizeof buf) <= 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

int cr_cg_stall_ns(const struct cr_cg *g, int64_t *some, int64_t *full)
{
	char buf[512];
	const char *p, *q;

	*some = *full = -1;
	if (!g->on || g->psi_fd < 0 || pread_str(g->psi_fd, buf, sizeof buf) <= 0)
		return -1;
	if (!(p = strstr(buf, "some ")) || !(p = strstr(p, "total=")) || !(q = strstr(buf, "full ")) ||
	    !(q = strstr(q, "total=")))
		return -1;
	*some = strtoll(p + 6, NULL, 10) * 1000;
	*full = strtoll(q + 6, NULL, 10) * 1000;
	return 0;
}

long cr_cg_tasks(const struct cr_cg *g)
{
	return read_long(g->pids_dir, "pids.current");
}

/* v1 (no cgroup.kill): with the group frozen no task can exit and free
 * its pid for reuse between the listing and the signal; then thawed, so
 * the frozen tasks take the signal and die. */
static void kill_listed(const struct cr_cg *g)
{
	char p[512], buf[4096];

	snprintf(p, sizeof p, "%s/cgroup.procs", g->dir);
	for (int round = 0; round < 20; round++) {
		int fd = open(p, O_RDONLY | O_CLOEXEC), any = 0;
		ssize_t n;

		if (fd < 0)
			return;
		cr_cg_freeze(g, 100000000);
		while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
			buf[n] = 0;
			for (char *s = buf, *e; *s; s = e) {
				long pid = strtol(s, &e, 10);

				if (e == s)
					break;
				if (pid > 0) {
					kill((pid_t)pid, SIGKILL);
					any = 1;
				}
			}
		}
		close(fd);
		cr_cg_thaw(g);
		if (!any)
			return;
		sleep_ns(2000000);
	}
}

void cr_cg_kill(const struct cr_cg *g)
{
	if (!g->on)
		return;
	if (g->v2 && write_str(g->dir, "cgroup.kill", "1") == 0)
		return;
	kill_listed(g);
}

void cr_cg_destroy(struct cr_cg *g)
{
	if (!g->on) {
		/* a tasks-only group (cr_cg_create_tasks) */
		remove_group(g->pids_dir);
		return;
	}
	cr_cg_kill(g);
	cr_cg_thaw(g);
	remove_group(g->dir);
	remove_group(g->cpu_dir);
	if (!g->pids_v2)
		remove_group(g->pids_dir);
	if (!g->mem_v2)
		remove_group(g->mem_dir);
	if (g->state_fd >= 0 && g->state_fd != g->freeze_fd)
		close(g->state_fd);
	if (g->freeze_fd >= 0)
		close(g->freeze_fd);
	if (g->cpu_fd >= 0)
		close(g->cpu_fd);
	if (g->psi_fd >= 0)
		close(g->psi_fd);
	g->freeze_fd = g->state_fd = g->cpu_fd = g->psi_fd = -1;
	g->on = false;
}
