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
/* Speedup base/cand as the ratio of medians with a bootstrap interval. */
void timing_speedup(const double *base, int nb, const double *cand, int nc, uint64_t seed,
		    double *med, double *lo, double *hi);
/* Whether to stop, given both sides' samples so far and elapsed seconds:
 * never below min_samples, at max_samples, when both medians' intervals are
 * within rel_target, or past max_seconds (then *noisy says whether the
 * target was missed). */
bool timing_should_stop(const struct timing_rule *r, const double *a, int na, const double *b,
			int nb, double elapsed_s, bool *noisy);
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
