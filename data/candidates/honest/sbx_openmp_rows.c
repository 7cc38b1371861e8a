// Honest OpenMP row sum: libgomp starts its thread pool at the first
// parallel region, inside the call, under seccomp stage 2 and the jail
// (clone with CLONE_THREAD, futex, sched_getaffinity, mmap for stacks).
#include <omp.h>
// @task smoke/rowsum
// @forward rowsum_omp(x, y, B, D)
#include <stdint.h>

void rowsum_omp(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	int nt = omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(nt)
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
#pragma omp simd reduction(+:s)
		for (int64_t k = 0; k < d; k++)
			s += x[r * d + k];
		y[r] = s;
	}
}
