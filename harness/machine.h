/* machine.h — the machine's state around a run, for run.json's "machine"
 * and the line `eval` ends with: what else wanted the CPUs (load, CPU
 * pressure, a hypervisor's steal, other crucible runs) and what the timing
 * stage saw of it (samples stalled by other work, rows not trusted), with
 * a verdict: quiet, busy or oversubscribed. */
#ifndef HARNESS_MACHINE_H
#define HARNESS_MACHINE_H

#include <jansson.h>
#include <stdbool.h>

#include "checks/result.h"

struct machine_snap {
	double t;              /* CLOCK_MONOTONIC, s */
	double load1;          /* 1-minute load average (NaN: unknown) */
	long long psi_some_us; /* /proc/pressure/cpu "some" total (-1: none) */
	long long steal, jiffies; /* /proc/stat: steal and all ticks (-1: none) */
	int other_runs;        /* other crucible processes that lead a run (not ours) */
};

/* The timed rows of a run, summed as they are written. */
struct machine_tally {
	int rows, noisy, boosted;
	long samples, corrected, preempted; /* samples of both sides */
};

void machine_snap(struct machine_snap *s);
void machine_tally_add(struct machine_tally *t, const struct cr_result *r);
/* run.json's "machine" from the run's first and last snapshots and its
 * rows (jobs: the run's own job processes, part of the load); line gets
 * the verdict and why, for the terminal. The verdict is the machine's,
 * not the rows': oversubscribed when over 20% of the timed samples were
 * stalled by other work, the hypervisor stole over 10%, or the load beyond
 * the run's own jobs exceeded the cores; busy when over 2% were stalled,
 * another crucible run was seen, the hypervisor stole over 2%, or that
 * load exceeded half the cores; else quiet. */
json_t *machine_json(const struct machine_snap *a, const struct machine_snap *b,
		     const struct machine_tally *t, int jobs, char *line, size_t cap);

#endif
