// Honest row sum that pins itself to the CPUs it may run on (as tuned
// code does) and ignores a failure. sched_setaffinity fails with EPERM in
// the sandbox; it must not kill the worker. (Raw system calls: the
// trampoline includes libc headers before _GNU_SOURCE could be defined.)
#include <sys/syscall.h>
#include <unistd.h>
// @task smoke/rowsum
// @forward rowsum_pinned(x, y, B, D)
#include <stdint.h>

void rowsum_pinned(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	unsigned long mask[16];
	long n = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
	if (n > 0)
		(void)syscall(SYS_sched_setaffinity, 0, (size_t)n, mask);
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
		for (int64_t k = 0; k < d; k++)
			s += x[r * d + k];
		y[r] = s;
	}
}
