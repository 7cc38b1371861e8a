/* cuda_cupti.c — CUPTI's activity API loaded with dlopen: kernel, memset
 * and memcpy records collected from CUPTI's buffer callbacks into a
 * process-wide list that the timing code drains after each sample.
 *
 * The record layouts are this toolkit's (CUpti_ActivityKernel10, Memset4,
 * Memcpy6, CUPTI API 13.0), so the library is looked up in the same
 * toolkit first. NOT RUN on a GPU yet (see docs/CUDA.md). */
#include "cuda/cuda_drv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>

#define BUF_BYTES (1 << 20)
#define MAX_RECS 65536

static struct {
	int state;                 /* 0 not tried, 1 running, -1 failed */
	void *lib;
	CUptiResult (*Enable)(CUpti_ActivityKind k);
	CUptiResult (*Disable)(CUpti_ActivityKind k);
	CUptiResult (*RegisterCallbacks)(CUpti_BuffersCallbackRequestFunc a, CUpti_BuffersCallbackCompleteFunc b);
	CUptiResult (*FlushAll)(uint32_t flag);
	CUptiResult (*GetNextRecord)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
	CUptiResult (*GetResultString)(CUptiResult r, const char **s);
	pthread_mutex_t lock;
	struct cr_cupti_rec *recs; /* [MAX_RECS] */
	int n;
	uint64_t dropped;
} cp = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Every CUPTI call is checked through this macro (needs st, err, out:). */
#define CUPTI_CHECK(call) do { \
	CUptiResult cp_r_ = (call); \
	if (cp_r_ != CUPTI_SUCCESS) { \
		const char *cp_s_ = NULL; \
		if (!cp.GetResultString || cp.GetResultString(cp_r_, &cp_s_) != CUPTI_SUCCESS) \
			cp_s_ = NULL; \
		st = cr_errf(err, CR_EENV, "%s: CUPTI error %d%s%s", #call, (int)cp_r_, \
			     cp_s_ ? ": " : "", cp_s_ ? cp_s_ : ""); \
		goto out; \
	} } while (0)

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	*buf = aligned_alloc(8, BUF_BYTES);
	*size = *buf ? BUF_BYTES : 0;
	*max_records = 0;
}

static void add(enum cr_cupti_kind kind, uint64_t s, uint64_t e, uint32_t corr, uint32_t stream,
		const char *name)
{
	if (cp.n == MAX_RECS) {
		cp.dropped++;
		return;
	}
	struct cr_cupti_rec *r = &cp.recs[cp.n++];
	r->kind = kind;
	r->start_ns = s;
	r->end_ns = e;
	r->correlation = corr;
	r->stream = stream;
	snprintf(r->name, sizeof r->name, "%s", name ? name : "");
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				   size_t valid)
{
	CUpti_Activity *rec = NULL;
	(void)ctx;
	(void)stream;
	(void)size;
	pthread_mutex_lock(&cp.lock);
	while (cp.GetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
			const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
			add(CR_CUPTI_KERNEL, k->start, k->end, k->correlationId, k->streamId, k->name);
		} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
			const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
			add(CR_CUPTI_MEMSET, m->start, m->end, m->correlationId, m->streamId, NULL);
		} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
			add(CR_CUPTI_MEMCPY, m->start, m->end, m->correlationId, m->streamId, NULL);
		}
	}
	pthread_mutex_unlock(&cp.lock);
	free(buf);
}

static void *open_cupti(void)
{
	const char *home = getenv("CUDA_HOME");
	char p[1100];
	void *h;
	if (home && *home) {
		snprintf(p, sizeof p, "%s/extras/CUPTI/lib64/libcupti.so", home);
		if ((h = dlopen(p, RTLD_NOW | RTLD_LOCAL)))
			return h;
		snprintf(p, sizeof p, "%s/lib64/libcupti.so", home);
		if ((h = dlopen(p, RTLD_NOW | RTLD_LOCAL)))
			return h;
	}
	static const char *paths[] = { "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
				       "/usr/local/cuda/lib64/libcupti.so", "libcupti.so.13", "libcupti.so" };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		if ((h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)))
			return h;
	return NULL;
}

enum cr_status cr_cupti_start(struct cr_err *err)
{
	enum cr_status st = CR_OK;

	if (cp.state == 1)
		return CR_OK;
	if (cp.state == -1)
		return cr_errf(err, CR_EENV, "CUPTI unavailable");
	cp.state = -1;
	if (!(cp.lib = open_cupti()))
		return cr_errf(err, CR_EENV, "no libcupti.so (CUPTI) in the CUDA toolkit");
#define S(f, n) *(void **)&cp.f = dlsym(cp.lib, n)
	S(Enable, "cuptiActivityEnable");
	S(Disable, "cuptiActivityDisable");
	S(RegisterCallbacks, "cuptiActivityRegisterCallbacks");
	S(FlushAll, "cuptiActivityFlushAll");
	S(GetNextRecord, "cuptiActivityGetNextRecord");
	S(GetResultString, "cuptiGetResultString");
#undef S
	if (!cp.Enable || !cp.Disable || !cp.RegisterCallbacks || !cp.FlushAll || !cp.GetNextRecord)
		return cr_errf(err, CR_EENV, "libcupti.so lacks the activity API");
	if (!cp.recs && !(cp.recs = calloc(MAX_RECS, sizeof *cp.recs)))
		return cr_errf(err, CR_ENOMEM, "out of memory for CUPTI records");
	CUPTI_CHECK(cp.RegisterCallbacks(buf_requested, buf_completed));
	CUPTI_CHECK(cp.Enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	CUPTI_CHECK(cp.Enable(CUPTI_ACTIVITY_KIND_MEMSET));
	CUPTI_CHECK(cp.Enable(CUPTI_ACTIVITY_KIND_MEMCPY));
	cp.state = 1;
out:
	return st;
}

enum cr_status cr_cupti_collect(struct cr_cupti_rec *out, int cap, int *n, uint64_t *dropped,
				struct cr_err *err)
{
	enum cr_status st = CR_OK;
	*n = 0;
	*dropped = 0;
	if (cp.state != 1)
		return cr_errf(err, CR_EENV, "CUPTI not started");
	CUPTI_CHECK(cp.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
	pthread_mutex_lock(&cp.lock);
	*n = cp.n < cap ? cp.n : cap;
	memcpy(out, cp.recs, sizeof *out * (size_t)*n);
	*dropped = cp.dropped + (uint64_t)(cp.n - *n);
	cp.n = 0;
	cp.dropped = 0;
	pthread_mutex_unlock(&cp.lock);
out:
	return st;
}

void cr_cupti_stop(void)
{
	if (cp.state != 1)
		return;
	cp.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cp.Disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cp.Disable(CUPTI_ACTIVITY_KIND_MEMSET);
	cp.Disable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cp.state = 0;
}
