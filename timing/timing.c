/* timing.c — medians, bootstrap intervals, the stopping rule, cache flush. */
#include "timing/timing.h"
#include "tasks/task_rng.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BOOT 400

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_inplace(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double timing_median(const double *x, int n)
{
	double *v, m;
	if (n <= 0 || !(v = malloc(sizeof *v * (size_t)n)))
		return 0;
	memcpy(v, x, sizeof *v * (size_t)n);
	m = median_inplace(v, n);
	free(v);
	return m;
}

/* B bootstrap medians of x into out[B]. */
static int boot_medians(const double *x, int n, struct task_rng *r, double *out)
{
	double *v = malloc(sizeof *v * (size_t)n);
	if (!v)
		return -1;
	for (int b = 0; b < BOOT; b++) {
		for (int i = 0; i < n; i++)
			v[i] = x[task_rng_next(r) % (uint64_t)n];
		out[b] = median_inplace(v, n);
	}
	free(v);
	return 0;
}

void timing_summarize(const double *x, int n, uint64_t seed, struct timing_stats *out)
{
	double meds[BOOT];
	struct task_rng r;

	memset(out, 0, sizeof *out);
	out->n = n;
	if (n <= 0)
		return;
	out->median = out->lo = out->hi = timing_median(x, n);
	task_rng_seed(&r, seed);
	if (n >= 2 && !boot_medians(x, n, &r, meds)) {
		qsort(meds, BOOT, sizeof *meds, cmp_d);
		out->lo = meds[(int)(0.025 * BOOT)];
		out->hi = meds[(int)(0.975 * BOOT) - 1];
	}
	out->rel_halfwidth = out->median > 0 ? (out->hi - out->lo) / 2 / out->median : 0;
}

void timing_speedup(const double *base, const double *cand, int n, uint64_t seed, double *med,
		    double *lo, double *hi)
{
	double meds[BOOT], *ratio;
	struct task_rng r;
	int m = 0;

	*med = *lo = *hi = 0;
	if (n <= 0 || !(ratio = malloc(sizeof *ratio * (size_t)n)))
		return;
	for (int i = 0; i < n; i++)
		if (cand[i] > 0)
			ratio[m++] = base[i] / cand[i];
	if (m) {
		*med = *lo = *hi = timing_median(ratio, m);
		task_rng_seed(&r, seed);
		if (m >= 2 && !boot_medians(ratio, m, &r, meds)) {
			qsort(meds, BOOT, sizeof *meds, cmp_d);
			*lo = meds[(int)(0.025 * BOOT)];
			*hi = meds[(int)(0.975 * BOOT) - 1];
		}
	}
	free(ratio);
}

bool timing_should_stop(const struct timing_rule *r, const double *a, int na, const double *b,
			int nb, double elapsed_s, bool *noisy)
{
	struct timing_stats sa, sb;
	*noisy = false;
	if (na >= r->max_samples || nb >= r->max_samples)
		goto capped;
	/* the minimum holds whatever the clock says: a candidate that sleeps
	 * through its first calls cannot end the measurement (and its checks)
	 * early; each call is bounded by its own timeout */
	if (na < r->min_samples || nb < r->min_samples)
		return false;
	timing_summarize(a, na, 1, &sa);
	timing_summarize(b, nb, 2, &sb);
	if (sa.rel_halfwidth <= r->rel_target && sb.rel_halfwidth <= r->rel_target)
		return true;
	if (elapsed_s < r->max_seconds)
		return false;
capped:
	if (na >= 2 && nb >= 2) {
		timing_summarize(a, na, 1, &sa);
		timing_summarize(b, nb, 2, &sb);
		*noisy = sa.rel_halfwidth > r->rel_target || sb.rel_halfwidth > r->rel_target;
	}
	return true;
}

double timing_uncontended_ns(const struct timing_call *c, enum timing_adj *how)
{
	double w = (double)c->wall_ns, f = (double)c->stall_full_ns, cpu = (double)c->cpu_ns;
	/* off the CPU for over a fifth of the call (30 us for the bracket's
	 * own thaw and freeze) */
	bool off = c->cpu_ns >= 0 && cpu < 0.8 * w - 30000.0;

	if (c->stall_full_ns >= 0 && c->ncpu == 1 && c->cpu_ns >= 0) {
		if (f > w - cpu)
			f = w - cpu > 0 ? w - cpu : 0;
		if (f > 0.05 * w + 20000.0) {
			*how = TIMING_CORRECTED;
			return w - f;
		}
		/* no stall recorded: the kernel weighs a CPU in whole ticks, so a
		 * call preempted for less than a tick shows none */
		*how = off ? TIMING_PREEMPTED : TIMING_CLEAN;
		return w - f;
	}
	/* several CPUs, or no records: the kernel averages "full" over the
	 * CPUs, so a thread of the worker's starving on one while another
	 * computes would count; nothing is taken out */
	*how = off || (c->stall_full_ns >= 0 && f > 0.05 * w + 20000.0) ? TIMING_PREEMPTED : TIMING_CLEAN;
	return w;
}

int timing_boost_self(int *old)
{
	id_t tid = (id_t)syscall(SYS_gettid);
	errno = 0;
	*old = getpriority(PRIO_PROCESS, tid);
	if (errno)
		return -1;
	return setpriority(PRIO_PROCESS, tid, TIMING_NICE);
}

void timing_unboost_self(int old)
{
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), old)) { /* as it was, or as near as allowed */ }
}

void timing_flush_cpu_cache(void)
{
	static volatile unsigned char *buf;
	static const size_t n = 64u << 20;
	unsigned sum = 0;
	if (!buf && !(buf = malloc(n)))
		return;
	for (size_t i = 0; i < n; i += 64)
		buf[i] = (unsigned char)(buf[i] + 1);
	for (size_t i = 0; i < n; i += 64)
		sum += buf[i];
	(void)sum;
}

void timing_pipe_guard_begin(sigset_t *old)
{
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, old);
}

void timing_pipe_guard_end(const sigset_t *old)
{
	sigset_t pipe;
	struct timespec zero = { 0, 0 };
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	while (sigtimedwait(&pipe, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, old, NULL);
}
