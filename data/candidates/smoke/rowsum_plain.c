// Honest plain row sum: sequential summation in float.
// @task smoke/rowsum
// @forward rowsum_fwd(x, y, B, D)
// @backward rowsum_bwd(dy, dx, B, D)
#include <stdint.h>

void rowsum_fwd(const float *x, float *y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++) {
		float s = 0;
		for (int64_t k = 0; k < d; k++)
			s += x[r * d + k];
		y[r] = s;
	}
}

void rowsum_bwd(const float *dy, float *dx, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++)
		for (int64_t k = 0; k < d; k++)
			dx[r * d + k] = dy[r];
}
