// Honest row sum by pairwise (tree) summation in float, right half first:
// more accurate than the baseline's sequential loop and differently
// rounded. The tolerance must not reject a kernel for being more accurate.
// @task smoke/rowsum
// @forward rowsum_pw(x, y, B, D)
#include <stdint.h>

static float pw(const float *x, int64_t n)
{
	if (n <= 8) {
		float s = 0;
		for (int64_t k = n - 1; k >= 0; k--)
			s += x[k];
		return s;
	}
	int64_t h = n / 2;
	float right = pw(x + h, n - h);
	return right + pw(x, h);
}

void rowsum_pw(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	for (int64_t r = 0; r < b; r++)
		y[r] = pw(x + r * d, d);
}
