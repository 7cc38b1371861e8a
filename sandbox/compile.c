/* compile.c — the cpu backend's compile step, confined: the compiler runs
 * as nobody, PID 1 of fresh PID, network and IPC namespaces, in a directory
 * of its own that holds only cand.c and tramp.c, with limits on memory, CPU,
 * file size and wall-clock time, and (Landlock) read access to the
 * toolchain and system headers only. Root never opens a path in that
 * directory but the produced cand.so, without following links, and copies
 * it into the root-owned run directory. */
#include "sandbox/compile.h"
#include "sandbox/cgroup.h"
#include "sandbox/elfcheck.h"
#include "sandbox/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CC_AS_LIMIT (2ull << 30)   /* address space of each compiler process */
#define CC_CPU_LIMIT 30            /* CPU seconds of each compiler process */
#define CC_FSIZE_LIMIT (64 << 20)  /* largest file the compiler may write */
#define SO_CAP (64 << 20)          /* largest cand.so root copies */
#define NOBODY 65534
#define CHILD_SETUP_FAILED 125     /* the child's confinement failed (message in the log) */

/* rights of the Landlock ABIs after the kernel headers' (v3 truncate,
 * v5 device ioctls) */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

static int ll_abi = -1;         /* the kernel's Landlock ABI, 0 if none */
static char ll_why[96];

static int landlock_abi(void)
{
	if (ll_abi < 0) {
		long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
		ll_abi = v > 0 ? (int)v : 0;
		if (v <= 0)
			snprintf(ll_why, sizeof ll_why, "Landlock unavailable (%s)", strerror(errno));
	}
	return ll_abi;
}

const char *cr_compile_sandbox(void)
{
	static char buf[256];
	int abi = landlock_abi();
	if (abi)
		snprintf(buf, sizeof buf, "landlock v%d, namespaces %s%s", abi, cr_proc_ns_level(),
			 geteuid() == 0 ? ", uid nobody" : "");
	else
		snprintf(buf, sizeof buf, "no landlock: %s; namespaces %s%s", ll_why, cr_proc_ns_level(),
			 geteuid() == 0 ? ", uid nobody" : "");
	return buf;
}

static uint64_t ll_handled(int abi)
{
	uint64_t a = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;   /* ABI 1: bits 0..12 */
	if (abi >= 2)
		a |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		a |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		a |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return a;
}

static void child_fail(const char *what, const char *arg)
{
	dprintf(2, "crucible: cannot confine the compiler: %s %s: %s\n", what, arg, strerror(errno));
	_exit(CHILD_SETUP_FAILED);
}

static void ll_allow(int rs, const char *path, uint64_t access, bool optional)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = access };
	struct stat sb;
	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0) {
		if (optional && errno == ENOENT)
			return;
		child_fail("open", path);
	}
	/* a file takes only the rights that apply to files */
	if (!fstat(pb.parent_fd, &sb) && !S_ISDIR(sb.st_mode))
		pb.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
				     LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
				     LANDLOCK_ACCESS_FS_IOCTL_DEV;
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
		child_fail("landlock_add_rule", path);
	close(pb.parent_fd);
}

/* In the child: read-only toolchain and headers, read-write cwd. Not the
 * rest of the system: a candidate's `.incbin "/etc/passwd"` or `#include`
 * of a private file would carry its bytes into the build log and a row's
 * detail. /etc only for the loader's cache (the toolchain's own programs
 * find their libraries through it). */
static void confine_fs(const char *cwd, int abi)
{
	uint64_t all = ll_handled(abi);
	uint64_t ro = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
		      LANDLOCK_ACCESS_FS_READ_DIR;
	struct landlock_ruleset_attr ra = { .handled_access_fs = all };
	static const char *ro_dirs[] = { "/usr/bin", "/usr/lib", "/usr/libexec", "/usr/include",
					 "/usr/lib64", "/usr/local/include", "/lib", "/lib64", "/bin",
					 "/etc/ld.so.cache", NULL };
	int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
	if (rs < 0)
		child_fail("landlock_create_ruleset", "");
	for (int i = 0; ro_dirs[i]; i++)
		ll_allow(rs, ro_dirs[i], ro, i != 0);
	ll_allow(rs, "/dev/null", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE, false);
	ll_allow(rs, cwd, all, false);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		child_fail("prctl", "NO_NEW_PRIVS");
	if (syscall(SYS_landlock_restrict_self, rs, 0))
		child_fail("landlock_restrict_self", cwd);
	close(rs);
}

struct run_opts {
	int log_fd;          /* stdout and stderr */
	const struct cr_cg *cg; /* a task quota to join first (NULL: none) */
	const char *cwd;     /* NULL: stay */
	double timeout_s;
	bool unprivileged;   /* as nobody when root */
	bool confine;        /* limits and Landlock (cwd is then the only writable place) */
};

static void run_child(char *const argv[], const struct run_opts *o, int abi)
{
	char tmpdir[700];
	char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", tmpdir, NULL };
	struct rlimit rl;

	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", o->cwd ? o->cwd : "/tmp");
	if (o->cg && cr_cg_enter(o->cg))
		_exit(CHILD_SETUP_FAILED);
	signal(SIGPIPE, SIG_DFL);
	setpgid(0, 0);
	if (dup2(o->log_fd, 1) < 0 || dup2(o->log_fd, 2) < 0)
		_exit(CHILD_SETUP_FAILED);
	int nul = open("/dev/null", O_RDONLY);
	if (nul < 0 || dup2(nul, 0) < 0)
		child_fail("open", "/dev/null");
	if (syscall(SYS_close_range, 3u, ~0u, 0u))
		child_fail("close_range", "");
	if (o->cwd && chdir(o->cwd))
		child_fail("chdir", o->cwd);
	/* a clean environment, and never root: `#include "/root/..."` or
	 * "/proc/<orchestrator>/..." in a candidate must not read anything
	 * a compile error could then print into the results */
	if (o->unprivileged && (getuid() == 0 || geteuid() == 0) && cr_proc_drop_to_nobody())
		child_fail("setuid", "nobody");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		child_fail("prctl", "PDEATHSIG");
	rl.rlim_cur = rl.rlim_max = o->confine ? CC_FSIZE_LIMIT : (1u << 30);
	setrlimit(RLIMIT_FSIZE, &rl);
	if (o->confine) {
		rl.rlim_cur = rl.rlim_max = CC_AS_LIMIT;
#ifndef __SANITIZE_ADDRESS__
		if (setrlimit(RLIMIT_AS, &rl))
			child_fail("setrlimit", "AS");
#endif
		rl.rlim_cur = rl.rlim_max = CC_CPU_LIMIT;
		if (setrlimit(RLIMIT_CPU, &rl))
			child_fail("setrlimit", "CPU");
		rl.rlim_cur = rl.rlim_max = 0;
		setrlimit(RLIMIT_CORE, &rl);
		if (abi)
			confine_fs(o->cwd, abi);
	}
	execvpe(argv[0], argv, envp);
	_exit(127);
}

/* Returns the exit status (>= 0), -1 on timeout, -2 if it could not run. */
static int run(char *const argv[], const struct run_opts *o)
{
	int64_t deadline = cr_now_ns() + (int64_t)(o->timeout_s * 1e9);
	int status = 0, abi = o->confine ? landlock_abi() : 0;
	pid_t pid;

	pid = cr_proc_spawn();
	if (pid < 0)
		return -2;
	if (pid == 0)
		run_child(argv, o, abi);
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			cr_proc_kill(pid);
			return -2;
		}
		if (cr_now_ns() > deadline) {
			cr_proc_kill(pid);
			return -1;
		}
		usleep(2000);
	}
	/* the compiler's init is gone; whatever it left is killed with it */
	cr_proc_kill(pid);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int cr_run_argv(char *const argv[], const char *log_path, double timeout_s, bool unprivileged)
{
	struct run_opts o = { .timeout_s = timeout_s, .unprivileged = unprivileged };
	int rc;
	o.log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			0644);
	if (o.log_fd < 0)
		return -2;
	rc = run(argv, &o);
	close(o.log_fd);
	return rc;
}

/* Removes name (under the directory parent) and everything in it, through
 * descriptors only: no link inside is followed. */
static int remove_at(int parent, const char *name, int depth)
{
	int fd, rc = 0;
	DIR *d;
	struct dirent *e;

	if (!unlinkat(parent, name, 0) || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth > 32)
		return -1;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			rc |= remove_at(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) && errno != ENOENT)
		rc = -1;
	return rc;
}

int cr_remove_tree(const char *path)
{
	return remove_at(AT_FDCWD, path, 0);
}

static const char *ptr_type(const struct cr_slot *s)
{
	if (s->role == CR_SLOT_SCRATCH)
		return "void";
	switch (s->dtype) {
	case TASK_F32: return "float";
	case TASK_I32: return "__INT32_TYPE__";
	case TASK_I64: return "__INT64_TYPE__";
	default: return "void";
	}
}

/* The candidate comes first: a `#define _GNU_SOURCE` (or any feature
 * macro) it starts with must precede every system header, so the
 * trampoline includes nothing and names its types by the compiler's
 * builtins (the same types as int32_t/int64_t). */
static int write_tramp(const struct cr_plan *p, FILE *f)
{
	fprintf(f, "#include \"cand.c\"\n/* generated by crucible: one entry point per launch */\n");
	for (int s = 0; s < 2; s++) {
		const struct cr_pstage *st = &p->st[s];
		for (int i = 0; i < st->n_launch; i++) {
			const struct cr_plaunch *l = &st->launch[i];
			fprintf(f, "void __crucible_s%d_%d(void **p, const __INT64_TYPE__ *a);\n", s, i);
			fprintf(f, "void __crucible_s%d_%d(void **p, const __INT64_TYPE__ *a)\n{\n"
				   "\t(void)p; (void)a;\n#line %d \"cand.c\"\n\t%s(", s, i, l->line, l->fn);
			for (int k = 0; k < l->n_args; k++) {
				const struct cr_parg *a = &l->args[k];
				if (k)
					fputs(", ", f);
				if (a->kind == CR_PARG_SLOT)
					fprintf(f, "(%s *)p[%d]", ptr_type(&st->slots[a->slot]), a->slot);
				else if (a->kind == CR_PARG_INT)
					fprintf(f, "a[%d]", l->arg0 + k);
				else
					fprintf(f, "%.17g", a->f);
			}
			fputs(");\n}\n", f);
		}
	}
	return ferror(f) ? -1 : 0;
}

/* Creates name in dirfd (never an existing one) holding len bytes of buf,
 * or the trampoline when p is set. */
/* libgcc's CPU model for __builtin_cpu_supports and __builtin_cpu_is
 * without libgcc's constructor (a built candidate may have none:
 * elfcheck.c): defined here so the linker takes these instead of libgcc.a's
 * member, and filled by the worker from its own, libgcc-initialised copy
 * right after loading (sandbox/worker.c). Sizes at least libgcc's. */
static const char cpu_shim[] =
	"/* generated by crucible (sandbox/compile.c) */\n"
	"struct cr_processor_model { unsigned int vendor, type, subtype, features[1]; };\n"
	"struct cr_processor_model __cpu_model;\n"
	"unsigned int __cpu_features2[8];\n"
	"int __cpu_indicator_init(void) { return 0; }\n";

static int write_new(int dirfd, const char *name, const char *buf, size_t len,
		     const struct cr_plan *p)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f;
	int rc;
	if (fd < 0 || !(f = fdopen(fd, "wb"))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rc = p ? write_tramp(p, f) : (fwrite(buf, 1, len, f) == len ? 0 : -1);
	return fclose(f) || rc ? -1 : 0;
}

/* Copies the compiler's cand.so (in the directory the compiler could
 * write) into the run directory: opened without following a link and
 * without blocking on a FIFO, and taken only if it is a regular file of
 * the compiler's uid with one link and a bounded size. */
static int take_so(int ccfd, const char *dst, uid_t uid, char *log, size_t cap)
{
	struct stat sb;
	char buf[65536];
	int in, out = -1, rc = -1;
	ssize_t n;
	off_t done = 0;

	in = openat(ccfd, "cand.so", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 || fstat(in, &sb)) {
		snprintf(log, cap, "the compiler produced no cand.so: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_uid != uid || sb.st_nlink != 1 || sb.st_size > SO_CAP) {
		snprintf(log, cap, "cand.so is not a regular file of the compiler's own below %d bytes",
			 SO_CAP);
		goto out;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		snprintf(log, cap, "cannot create %s: %s", dst, strerror(errno));
		goto out;
	}
	while (done <= sb.st_size && (n = read(in, buf, sizeof buf)) > 0) {
		if (write(out, buf, (size_t)n) != n)
			break;
		done += n;
	}
	if (done != sb.st_size || close(out)) {
		out = -1;
		snprintf(log, cap, "cannot copy cand.so to %s", dst);
		goto out;
	}
	out = -1;
	rc = 0;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* The candidate may run code only in its launches (elfcheck.h). */
static enum cr_compile_result check_so(const char *path, char *log, size_t cap)
{
	char why[200];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		snprintf(log, cap, "cannot open %s: %s", path, strerror(errno));
		return CR_COMPILE_ENV;
	}
	if (cr_elf_check_so(fd, why, sizeof why)) {
		close(fd);
		snprintf(log, cap, "error: the built candidate is refused: %s; a candidate's code may run "
			 "only in its launches (SPEC §3)", why);
		return CR_COMPILE_FAILED;
	}
	close(fd);
	return CR_COMPILED;
}

static void read_tail(int fd, char *log, size_t cap)
{
	struct stat sb;
	ssize_t n = -1;
	if (!fstat(fd, &sb))
		n = pread(fd, log, cap - 1,
			  sb.st_size > (off_t)cap - 1 ? sb.st_size - (off_t)cap + 1 : 0);
	log[n > 0 ? n : 0] = '\0';
}

enum cr_compile_result cr_compile_cpu(const struct cr_plan *p, const char *src, size_t len,
				      const char *workdir, double timeout_s, char *log,
				      size_t cap)
{
	char ccdir[700], sopath[700], lpath[700];
	uid_t uid = geteuid() == 0 ? NOBODY : geteuid();
	enum cr_compile_result res = CR_COMPILE_ENV;
	int ccfd = -1, rc;
	struct run_opts o = { .log_fd = -1, .cwd = ccdir, .timeout_s = timeout_s,
			      .unprivileged = true, .confine = true };
	/* -nostartfiles: no crti/crtbeginS, so a clean build has no
	 * constructor at all and any the candidate adds is refused
	 * (elfcheck.c); -z defs: an undefined symbol is the compiler's error
	 * here, not a failed load in the worker */
	char *argv[] = { "cc", "-std=gnu11", "-O3", "-march=native", "-fopenmp", "-fPIC",
			 "-shared", "-nostartfiles", "-Wl,-z,defs", "-fno-gnu-unique",
			 "-Werror=implicit-function-declaration",
			 "-Werror=incompatible-pointer-types", "-Werror=int-conversion",
			 "-Werror=return-type", "-Werror=discarded-qualifiers",
			 "-o", "cand.so", "tramp.c", "cpu.c", "-lm", NULL };

	snprintf(ccdir, sizeof ccdir, "%s/cc", workdir);
	snprintf(sopath, sizeof sopath, "%s/cand.so", workdir);
	snprintf(lpath, sizeof lpath, "%s/compile.log", workdir);
	log[0] = '\0';
	/* made by root, filled, then handed to the compiler's uid: it holds the
	 * candidate and the trampoline only */
	if (mkdir(ccdir, 0700) ||
	    (ccfd = open(ccdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		snprintf(log, cap, "cannot create %s: %s", ccdir, strerror(errno));
		goto out;
	}
	if (write_new(ccfd, "cand.c", src, len, NULL) || write_new(ccfd, "tramp.c", NULL, 0, p) ||
	    write_new(ccfd, "cpu.c", cpu_shim, sizeof cpu_shim - 1, NULL)) {
		snprintf(log, cap, "cannot write the candidate into %s: %s", ccdir, strerror(errno));
		goto out;
	}
	if (geteuid() == 0 && fchown(ccfd, NOBODY, NOBODY)) {
		snprintf(log, cap, "cannot hand %s to the unprivileged user: %s", ccdir, strerror(errno));
		goto out;
	}
	/* the log is root's, in the root-owned run directory */
	o.log_fd = open(lpath, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (o.log_fd < 0) {
		snprintf(log, cap, "cannot create %s: %s", lpath, strerror(errno));
		goto out;
	}
	/* the compiler's processes in the run's reservation, under a quota of
	 * their own: a process it could not start for that quota is the
	 * host's failure (the kernel's count, never the log's words, which the
	 * candidate's source can write), not a compile_error */
	struct cr_cg cg;
	bool have_cg = cr_cg_available() && cr_cg_create_tasks(&cg, "cc") == 0;
	o.cg = have_cg ? &cg : NULL;
	rc = run(argv, &o);
	bool starved = have_cg && cr_cg_hit_max(&cg);
	if (have_cg)
		cr_cg_destroy(&cg);
	read_tail(o.log_fd, log, cap);
	if (rc != 0 && starved) {
		snprintf(log, cap, "the compiler could not start a process within its task quota (the host's "
			 "limit, or other runs' reservations)");
		res = CR_COMPILE_ENV;
	} else if (rc == -1) {
		snprintf(log, cap, "compiler did not finish within %.0f s", timeout_s);
		res = CR_COMPILE_TIMEOUT;
	} else if (rc == -2 || rc == 127) {
		snprintf(log, cap, "cannot run the C compiler 'cc'");
	} else if (rc == CHILD_SETUP_FAILED) {
		/* the log says which step; no compile runs unconfined */
	} else if (rc == 128 + SIGXCPU || rc == 128 + SIGKILL) {
		snprintf(log, cap, "error: the compiler exceeded its limits (%d CPU s, %llu MiB)",
			 CC_CPU_LIMIT, CC_AS_LIMIT >> 20);
		res = CR_COMPILE_FAILED;
	} else if (rc) {
		res = CR_COMPILE_FAILED;
	} else {
		res = take_so(ccfd, sopath, uid, log, cap) ? CR_COMPILE_FAILED : CR_COMPILED;
		if (res == CR_COMPILED)
			res = check_so(sopath, log, cap);
	}
out:
	if (o.log_fd >= 0)
		close(o.log_fd);
	if (ccfd >= 0)
		close(ccfd);
	/* nothing of the compiler's survives it (cr_proc_kill), and the
	 * workers never see this directory */
	if (cr_remove_tree(ccdir) && res == CR_COMPILED) {
		snprintf(log, cap, "cannot remove %s: %s", ccdir, strerror(errno));
		res = CR_COMPILE_ENV;
	}
	return res;
}
