/* timing.h — measurement statistics and the stopping rule (nvbench's
 * split: measuring is the caller's, statistics and stopping are here).
 * Times are in microseconds. */
#ifndef TIMING_H
#define TIMING_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct timing_rule {
	int min_samples;      /* at least this many samples of each side, whatever the time cap */
	int max_samples;
	double rel_target;    /* stop when the 95% CI half-width of the median is under this fraction */
	double max_seconds;   /* time cap for the whole measurement */
};

struct timing_stats {
	int n;
	double median, lo, hi;   /* median with a bootstrap 95% interval */
	double rel_halfwidth;    /* (hi - lo) / 2 / median */
};

/* Median of x[0..n) (x is not modified). */
double timing_median(const double *x, int n);
/* Bootstrap (B resamples, fixed seed) 95% interval of the median. */
void timing_summarize(const double *x, int n, uint64_t seed, struct timing_stats *out);
/* Speedup from n interleaved pairs (base[i] and cand[i] timed back to
 * back): the median of the pairs' ratios base[i] / cand[i], with a
 * bootstrap 95% interval over the pairs. Neighbours in time share the
 * machine's state, so what a load does to both sides of a pair cancels in
 * its ratio (measured on the smoke set, three runs: the median over
 * candidates of the largest/smallest figure was 1.036 against 1.078 for
 * the ratio of the two sides' medians). The gate's per-sample speedups are
 * the same ratios. */
void timing_speedup(const double *base, const double *cand, int n, uint64_t seed, double *med,
		    double *lo, double *hi);
/* Whether to stop, given both sides' samples so far and elapsed seconds:
 * never below min_samples, at max_samples, when both medians' intervals are
 * within rel_target, or past max_seconds (then *noisy says whether the
 * target was missed). */
bool timing_should_stop(const struct timing_rule *r, const double *a, int na, const double *b,
			int nb, double elapsed_s, bool *noisy);
/* One timed call as the scheduler saw it (ns; -1 where unknown): the
 * bracket's wall time, the worker group's CPU over all its threads, and
 * the group's CPU stall (cpu.pressure): some = a task of the group waited
 * runnable for a CPU, full = all did and none of them ran. */
struct timing_call {
	int64_t wall_ns, cpu_ns, stall_some_ns, stall_full_ns;
	int ncpu;           /* CPUs the worker may run on (its affinity); 0: unknown */
};
enum timing_adj {
	TIMING_CLEAN,       /* nothing to take out: the wall time stands */
	TIMING_CORRECTED,   /* stalled by other work: the full stall taken out */
	TIMING_PREEMPTED    /* off the CPU for over a fifth of the call with no
			     * stall that can be taken out (preempted for less
			     * than a tick, on several CPUs, no pressure records, or
			     * waiting by itself): nothing is taken out */
};
/* The call's time as if nothing else had wanted the CPU (ns), and how it
 * was obtained. With the worker on one CPU (ncpu 1: its job's core): the
 * wall time less the group's full CPU stall, the time when every task of
 * the worker was runnable and none ran, at most wall - cpu. Only the
 * machine's other work can cause that (a thread of the worker's that runs
 * ends it), so a candidate cannot shorten its time by stalling itself: a
 * partial stall (its threads waiting for each other) and sleeping are never
 * taken out. On several CPUs nothing is taken out: the kernel averages
 * "full" over the CPUs weighted by busy time, so one thread starving on a
 * CPU while another computes counts (attack round 2: up to half a call).
 * The kernel weighs a CPU in whole ticks (4 ms at HZ=250), so a call
 * preempted for less than a tick shows no stall: counted as preempted,
 * never corrected. */
double timing_uncontended_ns(const struct timing_call *c, enum timing_adj *how);

/* The nice value the orchestrator's timing thread runs at, so the
 * machine's other work waits for it, not a sample for it (root only;
 * elsewhere the call fails and says so). The workers keep the default
 * priority: a candidate's threads must not outrank its neighbours. */
#define TIMING_NICE (-20)
/* Sets the calling thread's nice value to TIMING_NICE, *old its previous
 * one: 0 done, -1 refused. timing_unboost_self restores it. */
int timing_boost_self(int *old);
void timing_unboost_self(int old);

/* Evicts the CPU caches by writing and reading a buffer larger than the
 * last-level cache (64 MiB, allocated once). */
void timing_flush_cpu_cache(void);

/* SIGPIPE blocked for the calling thread while a timing stage talks to
 * workers that may have exited (a candidate's thread can exit right after
 * its reply): a write to a dead worker's pipe then fails with EPIPE, which
 * sandbox/proc.c handles, instead of killing the orchestrator and the
 * batch. _end drains a SIGPIPE raised meanwhile and restores the mask. */
void timing_pipe_guard_begin(sigset_t *old);
void timing_pipe_guard_end(const sigset_t *old);

#endif
