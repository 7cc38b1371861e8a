// Bad sample: a ReLU that leaks negative inputs through at a tenth (wrong result).
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>

void relu_fwd(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.1f * x[i];
}
