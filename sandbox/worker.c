/* worker.c — the worker side of the orchestrator/worker protocol.
 * The worker holds inputs and its own outputs only; it never sees the
 * reference outputs it is checked against, nor the seed. */
#include "sandbox/worker.h"
#include "sandbox/jail.h"
#include "sandbox/sandbox.h"
#include "common/cr_verdict.h"
#include "sandbox/shm.h"
#include "tasks/task_exec.h"
#include "common/cr_status.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD_FD 3
#define REP_FD 4
#define SHM_FD 5

typedef void (*launch_fn)(void **p, const int64_t *a);
/* libgcc's, in this process (initialised by __builtin_cpu_init) */
extern unsigned int __cpu_model[4];
extern unsigned int __cpu_features2[];

static void reply(uint32_t kind, uint32_t seq, int code, const char *msg)
{
	struct cr_reply r;
	memset(&r, 0, sizeof r);
	r.kind = kind;
	r.seq = seq;
	r.code = code;
	if (msg)
		snprintf(r.msg, sizeof r.msg, "%s", msg);
	if (write(REP_FD, &r, sizeof r) != (ssize_t)sizeof r)
		_exit(70);
}

static int read_cmd(struct cr_cmd *c)
{
	size_t got = 0;
	while (got < sizeof *c) {
		ssize_t n = read(CMD_FD, (char *)c + got, sizeof *c - got);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

static void fail(const char *fmt, const char *arg)
{
	char m[sizeof ((struct cr_reply *)0)->msg];
	snprintf(m, sizeof m, fmt, arg ? arg : "");
	reply(CR_REP_FAIL, 0, -1, m);
	_exit(71);
}

/* Loading the candidate failed for a reason of the candidate's (its .so
 * cannot be mapped, a launch symbol is missing): the verdict it names. */
static void fail_as(int verdict, const char *fmt, const char *arg)
{
	char m[sizeof ((struct cr_reply *)0)->msg];
	snprintf(m, sizeof m, fmt, arg ? arg : "");
	reply(CR_REP_FAIL, 0, verdict, m);
	_exit(71);
}

/* Libraries a compiled candidate may need (the DT_NEEDED entries
 * sandbox/elfcheck.c allows: cc -fopenmp ... -lm, and glibc's vector math,
 * which -lm pulls in when the compiler vectorises expf and friends), loaded
 * from the real filesystem before the jail hides it; the loader then finds
 * them by soname. libmvec is optional: a libc without it makes no
 * candidate that needs it. */
static const char *const preload[] = { "libm.so.6", "libgomp.so.1", "libmvec.so.1" };
static const bool preload_optional[] = { false, false, true };

/* Every layer the probe found, in order: jail (namespaces, empty root),
 * Landlock layer 1 (only the library readable), seccomp stage 1 (tsync),
 * the candidate loaded, Landlock layer 2 (nothing readable), seccomp stage
 * 2 (tsync). A layer the probe found but that fails here is a setup
 * failure. Returns the library handle, or NULL after a FAIL reply. */
static void *load_candidate(struct cr_shm_hdr *h, launch_fn *fns, char *level, size_t cap)
{
	struct cr_sandbox_layers l;
	struct cr_err err;
	const char *so_path = h->so_path;
	void *so;

	cr_err_init(&err);
	if (cr_sandbox_probe_layers(&l, &err))
		fail("%s", err.msg);
	if (!l.seccomp_tsync)
		fail("sandbox: %s", l.why);
	cr_sandbox_level(&l, level, cap);
	for (size_t i = 0; i < sizeof preload / sizeof preload[0]; i++)
		if (!dlopen(preload[i], RTLD_NOW | RTLD_GLOBAL) && !preload_optional[i])
			fail("preload: %s", dlerror());
	if (cr_sandbox_prepare(REP_FD, &err))
		fail("%s", err.msg);
	if (l.ns && cr_jail_unshare(&err))
		fail("%s", err.msg);
	if (l.empty_root) {
		if (cr_jail_root(so_path, &err))
			fail("%s", err.msg);
		so_path = CR_JAIL_SO;
	}
	if (l.landlock_abi > 0 && cr_landlock_restrict(l.landlock_abi, so_path, &err))
		fail("%s", err.msg);
	if (cr_sandbox_stage1(REP_FD, &err))
		fail("%s", err.msg);
	/* from here a failure may be the candidate's (a .so too large to map);
	 * nothing of its runs until the first call (no constructors, no ifunc
	 * resolvers: sandbox/elfcheck.c refused the build otherwise) */
	reply(CR_REP_LOADING, 0, 0, NULL);
	so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
	if (!so)
		fail_as(CHECK_RUNTIME_ERROR, "dlopen: %s", dlerror());
	/* the CPU model __builtin_cpu_supports reads, from ours (compile.c's
	 * shim defines the candidate's copy, without libgcc's constructor) */
	{
		unsigned int *m = dlsym(so, "__cpu_model"), *f2 = dlsym(so, "__cpu_features2");

		__builtin_cpu_init();
		if (m)
			memcpy(m, &__cpu_model, 4 * sizeof(unsigned int));
		/* libgcc 12's array is 3 words (nm -S: 12 bytes); a later one's
		 * extra words stay 0 in the shim: its newest features read as
		 * absent, never another variable's bytes */
		if (f2)
			memcpy(f2, __cpu_features2, 3 * sizeof(unsigned int));
	}
	for (uint32_t i = 0; i < h->n_launch; i++) {
		char sym[64];
		snprintf(sym, sizeof sym, "__crucible_s%u_%u", h->stage, i);
		fns[i] = (launch_fn)(uintptr_t)dlsym(so, sym);
		if (!fns[i])
			fail_as(CHECK_FORMAT_ERROR, "missing launch symbol %s", sym);
	}
	/* nothing of the candidate's has run (no constructors): a failure
	 * here is the host's */
	if (l.landlock_abi > 0 && cr_landlock_restrict(l.landlock_abi, NULL, &err))
		fail("after loading: %s", err.msg);
	if (cr_sandbox_stage2(REP_FD, &err))
		fail("after loading: %s", err.msg);
	return so;
}

/* The baseline is our code: no seccomp, but the same jail when the kernel
 * has it, entered once the task is loaded (nothing is read later). */
static void jail_baseline(char *level, size_t cap)
{
	struct cr_sandbox_layers l;
	struct cr_err err;

	cr_err_init(&err);
	if (cr_sandbox_probe_layers(&l, &err))
		fail("%s", err.msg);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		fail("prctl(NO_NEW_PRIVS): %s", strerror(errno));
	if (l.ns && cr_jail_unshare(&err))
		fail("%s", err.msg);
	if (l.empty_root && cr_jail_root(NULL, &err))
		fail("%s", err.msg);
	if (l.landlock_abi > 0 && cr_landlock_restrict(l.landlock_abi, NULL, &err))
		fail("%s", err.msg);
	{
		char line[sizeof ((struct cr_reply *)0)->msg];
		cr_sandbox_level(&l, line, sizeof line);
		/* the seccomp part (first field) does not apply to our own code */
		snprintf(level, cap, "baseline, no seccomp%s", strchr(line, ';'));
	}
}

int cr_worker_main(int argc, char **argv, cr_worker_cuda_fn cuda_main)
{
	struct stat sb;
	struct cr_shm_hdr *h;
	char *base;
	launch_fn fns[CR_MAX_LAUNCH];
	struct task task;
	struct task_exec ex;
	struct cr_err err;
	bool cand;
	void *so = NULL;
	char level[sizeof ((struct cr_reply *)0)->msg] = "";

	if (argc < 2 || (strcmp(argv[1], "cand") && strcmp(argv[1], "base") && strcmp(argv[1], "cuda"))) {
		fprintf(stderr, "crucible __worker is internal (started by eval/check)\n");
		return 2;
	}
	cand = !strcmp(argv[1], "cand");
	cr_err_init(&err);
	if (fstat(SHM_FD, &sb))
		fail("no shared memory fd", NULL);
	base = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, SHM_FD, 0);
	if (base == MAP_FAILED)
		fail("cannot map shared memory", NULL);
	h = (struct cr_shm_hdr *)base;
	if (h->magic != CR_SHM_MAGIC || h->n_launch > CR_MAX_LAUNCH || h->n_slots > CR_MAX_SLOTS ||
	    h->n_sets > CR_MAX_SETS || h->n_sets == 0)
		fail("bad shared memory header", NULL);
	/* a CUDA candidate: no host code of the candidate's runs here, only
	 * our launches of its kernels (cuda/cuda_worker.c) */
	if (!strcmp(argv[1], "cuda"))
		return cuda_main(base, (size_t)sb.st_size);
	/* the memory stays mapped; the fd is not needed again, and a candidate
	 * holding it could shrink the region under the orchestrator */
	close(SHM_FD);
	if (cand) {
		if (!(so = load_candidate(h, fns, level, sizeof level)))
			_exit(71);
	} else {
		struct task_dimset d;
		if (task_load(&task, h->task_path, h->task_name, &err))
			fail("%s", err.msg);
		memcpy(d.v, h->dims, sizeof d.v);
		if (task_exec_init(&ex, &task, &d, false, false, &err))
			fail("%s", err.msg);
		jail_baseline(level, sizeof level);
	}
	reply(CR_REP_READY, 0, 0, level);
	for (;;) {
		struct cr_cmd c;
		void *p[CR_MAX_SLOTS];
		if (read_cmd(&c))
			_exit(0);
		if (c.op == CR_CMD_QUIT)
			_exit(0);
		if (c.op == CR_CMD_NOP || c.set >= h->n_sets) {
			reply(CR_REP_DONE, c.seq, 0, NULL);
			continue;
		}
		for (uint32_t s = 0; s < h->n_slots && s < CR_MAX_SLOTS; s++)
			p[s] = base + h->off[c.set][s];
		if (cand) {
			for (uint32_t i = 0; i < h->n_launch; i++)
				fns[i](p, h->argv);
		} else {
			for (int i = 0; i < task.n_tensors; i++)
				task_exec_bind(&ex, i, p[i]);
			task_exec_forward(&ex);
		}
		/* the reply says only that the call is over: the candidate can write
		 * this pipe too, and the orchestrator reads nothing else from it */
		reply(CR_REP_DONE, c.seq, 0, NULL);
	}
}
