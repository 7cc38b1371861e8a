/* cuda_compile.c — NVRTC in forked children, the compile cache, the
 * parallel pool, and the compile-only verdict of a CUDA candidate. */
#include "cuda/cuda_compile.h"

#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <nvrtc.h>

#include "common/cr_status.h"
#include "common/sha256.h"

#define PROG_NAME "cand.cu"        /* NVRTC's name for the source, rewritten in details */
#define MAX_OPTS 12
#define OPT_LEN 1100
#define CACHE_MAGIC "CRCUBIN1"

/* NVRTC is opened at run time (the binary starts without the CUDA toolkit;
 * only CUDA candidates need it): the toolkit's soname, then the unversioned
 * name, found through the binary's RUNPATH or the loader's paths
 * ($CRUCIBLE_NVRTC: that file instead). Opened
 * by the orchestrator before any compile child forks. */
static struct {
	nvrtcResult (*Version)(int *, int *);
	nvrtcResult (*GetNumSupportedArchs)(int *);
	nvrtcResult (*GetSupportedArchs)(int *);
	const char *(*GetErrorString)(nvrtcResult);
	nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
				     const char *const *);
	nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
	nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
	nvrtcResult (*DestroyProgram)(nvrtcProgram *);
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static char nv_why[512]; /* why NVRTC could not be opened; "" once it is */

static void nv_open(void)
{
	const char *env = getenv("CRUCIBLE_NVRTC");
	char so[32];
	void *h;

	/* $CRUCIBLE_NVRTC alone when set; else the major version of the
	 * toolkit this was built with, then any */
	snprintf(so, sizeof so, "libnvrtc.so.%d", CUDA_VERSION / 1000);
	if (!(h = dlopen(env && *env ? env : so, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(nv_why, sizeof nv_why, "%s", dlerror());
		if (!env || !*env)
			h = dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
	}
	if (!h)
		return;
#define NV_SYM(f) \
	if (!(*(void **)&nv.f = dlsym(h, "nvrtc" #f))) { \
		snprintf(nv_why, sizeof nv_why, "libnvrtc lacks nvrtc%s", #f); \
		return; \
	}
	NV_SYM(Version) NV_SYM(GetNumSupportedArchs) NV_SYM(GetSupportedArchs) NV_SYM(GetErrorString)
	NV_SYM(CreateProgram) NV_SYM(CompileProgram) NV_SYM(GetProgramLogSize) NV_SYM(GetProgramLog)
	NV_SYM(GetCUBINSize) NV_SYM(GetCUBIN) NV_SYM(DestroyProgram)
#undef NV_SYM
	nv_why[0] = '\0';
}

/* NULL once NVRTC is usable, else why not */
static const char *nv_load(void)
{
	pthread_once(&nv_once, nv_open);
	return nv_why[0] || !nv.DestroyProgram ? nv_why : NULL;
}

/* Child exit codes */
enum { CHILD_OK = 0, CHILD_FAILED = 1, CHILD_NVRTC = 3, CHILD_IO = 4 };

/* Every NVRTC call goes through here: a result other than NVRTC_SUCCESS or
 * `allowed` (NVRTC_ERROR_COMPILATION for the compile itself) runs `on_fail`
 * with r_ naming the result; nv_res keeps the last result. In the child,
 * on_fail writes the call and NVRTC's message to the log and exits. */
#define NVRTC_CHECK(call, allowed, on_fail) do { \
	nvrtcResult r_ = (call); \
	if (r_ != NVRTC_SUCCESS && r_ != (allowed)) { \
		on_fail; \
	} \
	nv_res = r_; } while (0)
/* in the compile child: log the failing call and exit */
#define NV_CHILD(call, allowed) NVRTC_CHECK(call, allowed, nvrtc_die(log_fd, #call, r_))
static void nvrtc_die(int log_fd, const char *call, nvrtcResult r)
{
	dprintf(log_fd, "NVRTC: %s failed: %s\n", call, nv.GetErrorString(r));
	_exit(CHILD_NVRTC);
}

void cr_cuda_build_init(struct cr_cuda_build *b)
{
	memset(b, 0, sizeof *b);
	b->res = CR_COMPILE_ENV;
}

void cr_cuda_build_release(struct cr_cuda_build *b)
{
	free(b->cubin);
	free(b->log);
	cr_cuda_build_init(b);
}

const char *cr_cuda_cache_dir(char *buf, size_t cap)
{
	const char *e;
	if ((e = getenv("CRUCIBLE_CACHE")) && *e)
		snprintf(buf, cap, "%s", e);
	else if ((e = getenv("XDG_CACHE_HOME")) && *e)
		snprintf(buf, cap, "%s/crucible", e);
	else if ((e = getenv("HOME")) && *e)
		snprintf(buf, cap, "%s/.cache/crucible", e);
	else
		return NULL;
	return buf;
}

void cr_cuda_nvrtc_version(char *buf, size_t cap, char *archs, size_t archs_cap)
{
	nvrtcResult nv_res = NVRTC_SUCCESS;
	int maj = 0, min = 0, n = 0, a[256];
	size_t used = 0;

	if (archs && archs_cap)
		archs[0] = '\0';
	if (nv_load()) {
		snprintf(buf, cap, "NVRTC unavailable");
		return;
	}
	NVRTC_CHECK(nv.Version(&maj, &min), NVRTC_SUCCESS, maj = min = 0);
	snprintf(buf, cap, "NVRTC %d.%d", maj, min);
	if (!archs || !archs_cap)
		return;
	NVRTC_CHECK(nv.GetNumSupportedArchs(&n), NVRTC_SUCCESS, return);
	if (n <= 0 || n > 256)
		return;
	NVRTC_CHECK(nv.GetSupportedArchs(a), NVRTC_SUCCESS, return);
	for (int i = 0; i < n && used + 8 < archs_cap; i++)
		used += (size_t)snprintf(archs + used, archs_cap - used, "%ssm_%d", i ? " " : "", a[i]);
	(void)nv_res;
}

/* The toolkit root whose include/ has cuda_fp16.h: $CUDA_HOME, $CUDA_PATH,
 * the directory above the libnvrtc we run, /usr/local/cuda. */
static void cuda_root(char *buf, size_t cap)
{
	const char *cands[3] = { getenv("CUDA_HOME"), getenv("CUDA_PATH"), NULL };
	char probe[1200], lib[1024];
	Dl_info di;

	if (!nv_load() && dladdr(*(void **)&nv.Version, &di) && di.dli_fname) {
		snprintf(lib, sizeof lib, "%s", di.dli_fname);
		cands[2] = dirname(dirname(lib));
	}
	for (int i = 0; i < 3; i++) {
		if (!cands[i] || !*cands[i])
			continue;
		snprintf(probe, sizeof probe, "%s/include/cuda_fp16.h", cands[i]);
		if (!access(probe, R_OK)) {
			snprintf(buf, cap, "%s", cands[i]);
			return;
		}
	}
	snprintf(buf, cap, "/usr/local/cuda");
}

void cr_cuda_toolkit_lib(const char *name, char *out, size_t cap)
{
	static const char *const sub[] = { "lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib" };
	char root[1000];

	cuda_root(root, sizeof root);
	for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
		snprintf(out, cap, "%s/%s/%s", root, sub[i], name);
		if (!access(out, R_OK))
			return;
	}
	snprintf(out, cap, "%s", name);
}

static bool arch_ok(const char *a)
{
	if (strncmp(a, "sm_", 3) || strlen(a) < 5 || strlen(a) > 8)
		return false;
	for (const char *p = a + 3; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')))
			return false;
	return true;
}

static int build_options(const char *arch, char opts[MAX_OPTS][OPT_LEN])
{
	char root[1000];
	int n = 0;
	cuda_root(root, sizeof root);
	snprintf(opts[n++], OPT_LEN, "--gpu-architecture=%s", arch);
	snprintf(opts[n++], OPT_LEN, "-default-device");
	snprintf(opts[n++], OPT_LEN, "-lineinfo");
	snprintf(opts[n++], OPT_LEN, "--std=c++17");
	snprintf(opts[n++], OPT_LEN, "--ptxas-options=-v");
	snprintf(opts[n++], OPT_LEN, "-I%s/include", root);
	snprintf(opts[n++], OPT_LEN, "-I%s/include/cccl", root);
	return n;
}

/* sha256 over NVRTC's version, the options and the source. */
static enum cr_status make_key(const char *src, size_t len, char opts[MAX_OPTS][OPT_LEN],
			       int n_opts, char key[65], struct cr_err *err)
{
	char ver[64];
	size_t cap = len + 64 + (size_t)n_opts * OPT_LEN + 8, used;
	char *buf = malloc(cap);
	if (!buf)
		return cr_errf(err, CR_ENOMEM, "out of memory hashing a CUDA source");
	cr_cuda_nvrtc_version(ver, sizeof ver, NULL, 0);
	used = (size_t)snprintf(buf, cap, "%s", ver) + 1;
	for (int i = 0; i < n_opts; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s", opts[i]) + 1;
	memcpy(buf + used, src, len);
	cr_sha256_hex(buf, used + len, key);
	free(buf);
	return CR_OK;
}

/* ---- files ---- */

static bool read_file(const char *path, unsigned char **out, size_t *n)
{
	FILE *f = fopen(path, "rb");
	long sz;
	*out = NULL;
	*n = 0;
	if (!f)
		return false;
	if (fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return false;
	}
	*out = malloc((size_t)sz + 1);
	if (!*out || fread(*out, 1, (size_t)sz, f) != (size_t)sz) {
		free(*out);
		*out = NULL;
		fclose(f);
		return false;
	}
	(*out)[sz] = '\0';
	*n = (size_t)sz;
	fclose(f);
	return true;
}

static bool write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w;
		n -= (size_t)w;
	}
	return true;
}

static int mkdir_p(const char *dir)
{
	char tmp[1024];
	snprintf(tmp, sizeof tmp, "%s", dir);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, 0700) && errno != EEXIST)
				return -1;
			*p = '/';
		}
	return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

/* Cache entry: magic, u32 res, u32 0, u64 log_len, u64 cubin_len, log, cubin. */
static bool cache_load(const char *dir, struct cr_cuda_build *b)
{
	char path[1200];
	unsigned char *d;
	size_t n;
	uint32_t res;
	uint64_t ll, cl;

	snprintf(path, sizeof path, "%s/%s.nvrtc", dir, b->key);
	if (!read_file(path, &d, &n))
		return false;
	if (n < 32 || memcmp(d, CACHE_MAGIC, 8))
		goto bad;
	memcpy(&res, d + 8, 4);
	memcpy(&ll, d + 16, 8);
	memcpy(&cl, d + 24, 8);
	if ((res != CR_COMPILED && res != CR_COMPILE_FAILED) || ll > n - 32 || cl != n - 32 - ll ||
	    (res == CR_COMPILED) != (cl > 0))
		goto bad;
	b->log = malloc(ll + 1);
	if (!b->log)
		goto bad;
	memcpy(b->log, d + 32, ll);
	b->log[ll] = '\0';
	if (cl) {
		b->cubin = malloc(cl);
		if (!b->cubin)
			goto bad;
		memcpy(b->cubin, d + 32 + ll, cl);
		b->cubin_len = cl;
	}
	b->res = (enum cr_compile_result)res;
	b->cached = true;
	free(d);
	return true;
bad:
	free(b->log);
	free(b->cubin);
	b->log = NULL;
	b->cubin = NULL;
	b->cubin_len = 0;
	free(d);
	return false;
}

/* Best effort: a cache that cannot be written only costs time. */
static void cache_store(const char *dir, const struct cr_cuda_build *b)
{
	char tmp[1200], path[1200], hdr[32] = CACHE_MAGIC;
	uint32_t res = (uint32_t)b->res;
	uint64_t ll = strlen(b->log), cl = b->cubin_len;
	int fd;

	if (mkdir_p(dir))
		return;
	snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
	snprintf(path, sizeof path, "%s/%s.nvrtc", dir, b->key);
	if ((fd = mkstemp(tmp)) < 0)
		return;
	memcpy(hdr + 8, &res, 4);
	memset(hdr + 12, 0, 4);
	memcpy(hdr + 16, &ll, 8);
	memcpy(hdr + 24, &cl, 8);
	bool ok = write_all(fd, hdr, sizeof hdr) && write_all(fd, b->log, ll) &&
		  (!cl || write_all(fd, b->cubin, cl));
	if (close(fd) || !ok || rename(tmp, path))
		unlink(tmp);
}

/* ---- the child ---- */

/* Runs NVRTC and writes dir/out.cubin and dir/out.log; never returns. */
static void child_compile(const char *src, size_t len, char opts[MAX_OPTS][OPT_LEN], int n_opts,
			  const char *dir, double timeout_s)
{
	char lpath[1100], cpath[1100];
	const char *ov[MAX_OPTS];
	nvrtcProgram prog;
	nvrtcResult nv_res = NVRTC_SUCCESS;
	size_t n;
	char *buf, *text;
	int log_fd, fd;
	struct rlimit cpu = { (rlim_t)timeout_s + 2, (rlim_t)timeout_s + 3 };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setrlimit(RLIMIT_CPU, &cpu);
	snprintf(lpath, sizeof lpath, "%s/out.log", dir);
	snprintf(cpath, sizeof cpath, "%s/out.cubin", dir);
	log_fd = open(lpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (log_fd < 0)
		_exit(CHILD_IO);
	/* NVRTC wants a NUL-terminated source */
	if (!(text = malloc(len + 1)))
		_exit(CHILD_IO);
	memcpy(text, src, len);
	text[len] = '\0';
	for (int i = 0; i < n_opts; i++)
		ov[i] = opts[i];
	NV_CHILD(nv.CreateProgram(&prog, text, PROG_NAME, 0, NULL, NULL), NVRTC_SUCCESS);
	NV_CHILD(nv.CompileProgram(prog, n_opts, ov), NVRTC_ERROR_COMPILATION);
	bool compiled = nv_res == NVRTC_SUCCESS;
	NV_CHILD(nv.GetProgramLogSize(prog, &n), NVRTC_SUCCESS);
	if (!(buf = malloc(n + 1)))
		_exit(CHILD_IO);
	NV_CHILD(nv.GetProgramLog(prog, buf), NVRTC_SUCCESS);
	buf[n] = '\0';
	if (!write_all(log_fd, buf, strlen(buf)))
		_exit(CHILD_IO);
	free(buf);
	if (!compiled)
		_exit(CHILD_FAILED);
	NV_CHILD(nv.GetCUBINSize(prog, &n), NVRTC_SUCCESS);
	if (!(buf = malloc(n ? n : 1)))
		_exit(CHILD_IO);
	NV_CHILD(nv.GetCUBIN(prog, buf), NVRTC_SUCCESS);
	fd = open(cpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !write_all(fd, buf, n) || close(fd))
		_exit(CHILD_IO);
	NV_CHILD(nv.DestroyProgram(&prog), NVRTC_SUCCESS);
	(void)nv_res;
	_exit(CHILD_OK);
}

/* ---- the pool ---- */

struct slot {
	pid_t pid;
	int job;
	int64_t start, deadline;
	char dir[1100];
	char opts[MAX_OPTS][OPT_LEN];
	int n_opts;
};

static void rm_dir(const char *dir)
{
	char p[1200];
	snprintf(p, sizeof p, "%s/out.log", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/out.cubin", dir);
	unlink(p);
	rmdir(dir);
}

static void set_log(struct cr_cuda_build *b, const char *fmt, const char *arg)
{
	char m[1200];
	snprintf(m, sizeof m, fmt, arg);
	free(b->log);
	b->log = strdup(m);
}

/* Collects a finished child's files into its build. */
static void finish(struct slot *s, struct cr_cuda_build *b, int status, bool timed_out,
		   double timeout_s)
{
	char p[1200];
	size_t n;
	unsigned char *log = NULL;

	b->seconds = (double)(cr_now_ns() - s->start) / 1e9;
	snprintf(p, sizeof p, "%s/out.log", s->dir);
	read_file(p, &log, &n);
	free(b->log);
	b->log = log ? (char *)log : strdup("");
	if (timed_out) {
		char m[64];
		snprintf(m, sizeof m, "%.0f", timeout_s);
		set_log(b, "NVRTC did not finish within %s s (killed)", m);
		b->res = CR_COMPILE_TIMEOUT;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_OK) {
		snprintf(p, sizeof p, "%s/out.cubin", s->dir);
		if (read_file(p, &b->cubin, &b->cubin_len) && b->cubin_len) {
			b->res = CR_COMPILED;
		} else {
			b->res = CR_COMPILE_ENV;
			set_log(b, "NVRTC reported success but wrote no cubin%s", "");
		}
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_FAILED) {
		b->res = CR_COMPILE_FAILED;
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
		b->res = CR_COMPILE_TIMEOUT;
		set_log(b, "NVRTC exceeded its CPU time limit%s", "");
	} else {
		char m[64];
		b->res = CR_COMPILE_ENV;
		if (WIFSIGNALED(status)) {
			/* NVRTC crashing on a source is the compiler's fault, but the
			 * source is what made it crash: report it as a compile error */
			snprintf(m, sizeof m, "NVRTC crashed (signal %d)", WTERMSIG(status));
			b->res = CR_COMPILE_FAILED;
			set_log(b, "%s", m);
		} else if (!b->log || !b->log[0]) {
			snprintf(m, sizeof m, "%d", WEXITSTATUS(status));
			set_log(b, "the NVRTC child failed (exit %s)", m);
		}
	}
	if (!b->log)
		b->log = strdup("");
	if (b->res == CR_COMPILED && !cr_cubin_parse(b->cubin, b->cubin_len, &b->info)) {
		b->res = CR_COMPILE_ENV;
		set_log(b, "NVRTC's output is not a cubin (ELF) file%s", "");
	}
	if (b->res == CR_COMPILED)
		cr_cubin_add_ptxas_log(&b->info, b->log);
	rm_dir(s->dir);
}

static int cores(void)
{
	cpu_set_t set;
	if (!sched_getaffinity(0, sizeof set, &set) && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

static bool start(struct slot *s, struct cr_cuda_job *j, double timeout_s)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(s->dir, sizeof s->dir, "%s/crucible-nvrtc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir)) {
		set_log(&j->b, "cannot create a directory for NVRTC under %s", tmp && *tmp ? tmp : "/tmp");
		return false;
	}
	fflush(NULL);
	s->start = cr_now_ns();
	s->deadline = s->start + (int64_t)(timeout_s * 1e9);
	s->pid = fork();
	if (s->pid < 0) {
		rmdir(s->dir);
		set_log(&j->b, "cannot fork for NVRTC: %s", strerror(errno));
		return false;
	}
	if (s->pid == 0)
		child_compile(j->src, j->len, s->opts, s->n_opts, s->dir, timeout_s);
	return true;
}

enum cr_status cr_cuda_compile_many(struct cr_cuda_job *jobs, int n, const struct cr_cuda_opts *o,
				    int max_par, struct cr_err *err)
{
	const char *arch = o && o->arch ? o->arch : CR_CUDA_ARCH_DEFAULT;
	double timeout_s = o && o->timeout_s > 0 ? o->timeout_s : CR_CUDA_TIMEOUT_S;
	char cdir_buf[1024];
	const char *cdir = o && o->cache_dir ? o->cache_dir : cr_cuda_cache_dir(cdir_buf, sizeof cdir_buf);
	struct slot *slots = NULL;
	char opts[MAX_OPTS][OPT_LEN];
	int n_opts, running = 0, next = 0;
	enum cr_status st = CR_OK;

	if (cdir && !*cdir)
		cdir = NULL;
	for (int i = 0; i < n; i++)
		cr_cuda_build_init(&jobs[i].b);
	if (!arch_ok(arch))
		return cr_errf(err, CR_EUSAGE, "CUDA arch '%s': expected sm_NN (e.g. sm_90)", arch);
	if (n > 0 && nv_load())
		return cr_errf(err, CR_EENV,
			       "CUDA candidates need NVRTC, which could not be opened (%s): install the CUDA toolkit, "
			       "or evaluate CPU candidates only", nv_load());
	if (max_par <= 0)
		max_par = cores();
	if (max_par > n)
		max_par = n > 0 ? n : 1;
	slots = calloc((size_t)max_par, sizeof *slots);
	if (!slots)
		return cr_errf(err, CR_ENOMEM, "out of memory for the compile pool");
	n_opts = build_options(arch, opts);
	for (int i = 0; i < max_par; i++) {
		slots[i].pid = 0;
		memcpy(slots[i].opts, opts, sizeof opts);
		slots[i].n_opts = n_opts;
	}
	for (;;) {
		/* fill free slots, answering cache hits on the way */
		for (int i = 0; i < max_par && next < n; i++) {
			if (slots[i].pid)
				continue;
			while (next < n) {
				struct cr_cuda_job *j = &jobs[next];
				snprintf(j->b.arch, sizeof j->b.arch, "%s", arch);
				if ((st = make_key(j->src, j->len, opts, n_opts, j->b.key, err)))
					goto out;
				if (cdir && cache_load(cdir, &j->b)) {
					if (j->b.res == CR_COMPILED &&
					    cr_cubin_parse(j->b.cubin, j->b.cubin_len, &j->b.info)) {
						cr_cubin_add_ptxas_log(&j->b.info, j->b.log);
						next++;
						continue;
					}
					if (j->b.res == CR_COMPILE_FAILED) {
						next++;
						continue;
					}
					cr_cuda_build_release(&j->b);  /* a bad entry: compile again */
					snprintf(j->b.arch, sizeof j->b.arch, "%s", arch);
					make_key(j->src, j->len, opts, n_opts, j->b.key, NULL);
				}
				slots[i].job = next++;
				if (start(&slots[i], j, timeout_s)) {
					running++;
				} else {
					j->b.res = CR_COMPILE_ENV;
					slots[i].pid = 0;
					cr_errf(err, CR_EENV, "%s", j->b.log);
					st = CR_EENV;
				}
				break;
			}
		}
		if (!running && next >= n)
			break;
		for (int i = 0; i < max_par; i++) {
			struct slot *s = &slots[i];
			int status = 0;
			pid_t r;
			if (!s->pid)
				continue;
			r = waitpid(s->pid, &status, WNOHANG);
			if (r == 0 && cr_now_ns() <= s->deadline)
				continue;
			bool timed_out = r == 0;
			if (timed_out) {
				kill(s->pid, SIGKILL);
				waitpid(s->pid, &status, 0);
			} else if (r < 0) {
				if (errno == EINTR)
					continue;
				status = 0x7f00;  /* lost the child: reported as exit 127 */
			}
			struct cr_cuda_build *b = &jobs[s->job].b;
			finish(s, b, status, timed_out, timeout_s);
			if (b->res == CR_COMPILE_ENV) {
				cr_errf(err, CR_EENV, "%s", b->log);
				st = CR_EENV;
			} else if (cdir && b->res != CR_COMPILE_TIMEOUT) {
				cache_store(cdir, b);
			}
			s->pid = 0;
			running--;
		}
		usleep(2000);
	}
out:
	for (int i = 0; i < max_par; i++)
		if (slots[i].pid > 0) {
			kill(slots[i].pid, SIGKILL);
			waitpid(slots[i].pid, NULL, 0);
			rm_dir(slots[i].dir);
		}
	free(slots);
	return st;
}

enum cr_status cr_cuda_compile(const char *src, size_t len, const struct cr_cuda_opts *o,
			       struct cr_cuda_build *b, struct cr_err *err)
{
	struct cr_cuda_job j = { .src = src, .len = len };
	enum cr_status st = cr_cuda_compile_many(&j, 1, o, 1, err);
	*b = j.b;
	return st;
}
