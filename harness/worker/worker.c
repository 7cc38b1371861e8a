/* worker.c — the worker side of the orchestrator/worker protocol.
 * The worker holds inputs and its own outputs only; it never sees the
 * reference outputs it is checked against, nor the seed. */
#include "harness/worker/worker.h"
#include "harness/worker/sandbox.h"
#include "harness/worker/shm.h"
#include "tasks/task_exec.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMD_FD 3
#define REP_FD 4
#define SHM_FD 5

typedef void (*launch_fn)(void **p, const int64_t *a);

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
	char m[116];
	snprintf(m, sizeof m, fmt, arg ? arg : "");
	reply(CR_REP_FAIL, 0, -1, m);
	_exit(71);
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
	if (cand) {
		if (cr_sandbox_stage1(REP_FD, &err))
			fail("%s", err.msg);
		so = dlopen(h->so_path, RTLD_NOW | RTLD_LOCAL);
		if (!so)
			fail("dlopen: %s", dlerror());
		for (uint32_t i = 0; i < h->n_launch; i++) {
			char sym[64];
			snprintf(sym, sizeof sym, "__crucible_s%u_%u", h->stage, i);
			fns[i] = (launch_fn)(uintptr_t)dlsym(so, sym);
			if (!fns[i])
				fail("missing launch symbol %s", sym);
		}
		if (cr_sandbox_stage2(REP_FD, &err))
			fail("%s", err.msg);
	} else {
		struct task_dimset d;
		if (task_load(&task, h->task_path, h->task_name, &err))
			fail("%s", err.msg);
		memcpy(d.v, h->dims, sizeof d.v);
		if (task_exec_init(&ex, &task, &d, false, false, &err))
			fail("%s", err.msg);
	}
	reply(CR_REP_READY, 0, 0, NULL);
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
				fns[i](p, h->argv[i]);
		} else {
			for (int i = 0; i < task.n_tensors; i++)
				task_exec_bind(&ex, i, p[i]);
			task_exec_forward(&ex);
		}
		reply(CR_REP_DONE, c.seq, 0, NULL);
	}
}
