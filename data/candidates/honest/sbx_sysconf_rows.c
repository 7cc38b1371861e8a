// Honest row sum that asks libc how many CPUs are online and splits the
// rows into that many OpenMP chunks. sysconf(_SC_NPROCESSORS_ONLN) opens a
// /sys file (then /proc/stat) before it falls back to sched_getaffinity:
// the sandbox must let those opens fail (EACCES), never kill the worker.
#include <unistd.h>
// @task smoke/rowsum
// @forward rowsum_sysconf(x, y, B, D)
#include <stdint.h>

void rowsum_sysconf(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t chunks = ncpu > 0 ? ncpu : 1;
	int64_t per = (b + chunks - 1) / chunks;
#pragma omp parallel for num_threads(chunks > 64 ? 64 : chunks)
	for (int64_t c = 0; c < chunks; c++)
		for (int64_t r = c * per; r < b && r < (c + 1) * per; r++) {
			float s = 0;
			for (int64_t k = 0; k < d; k++)
				s += x[r * d + k];
			y[r] = s;
		}
}
