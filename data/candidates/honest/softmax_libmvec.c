// Honest softmax through glibc's vector expf (libmvec): `declare simd` on
// expf lets the compiler call _ZGV*_expf for a `#pragma omp simd` loop, and
// -lm links libmvec as needed. Round 2 rejected it (runtime_error: the
// worker preloaded libm and libgomp only, so the jailed loader could not
// find libmvec.so.1); round 3 preloads libmvec (issue 28, item 6).
// @task smoke/softmax
// @forward softmax_fwd(x, y, B, D)
#include <math.h>
#include <stdint.h>

#pragma omp declare simd notinbranch
float expf(float);
void softmax_fwd(const float *x, float *y, int64_t B, int64_t D)
{
	for (int64_t b = 0; b < B; b++) {
		const float *xr = x + b * D;
		float *yr = y + b * D;
		float m = -INFINITY, s = 0.0f;
		for (int64_t i = 0; i < D; i++)
			m = xr[i] > m ? xr[i] : m;
#pragma omp simd reduction(+:s)
		for (int64_t i = 0; i < D; i++) {
			yr[i] = expf(xr[i] - m);
			s += yr[i];
		}
		float inv = 1.0f / s;
		for (int64_t i = 0; i < D; i++)
			yr[i] *= inv;
	}
}
