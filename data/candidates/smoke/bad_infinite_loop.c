// Bad sample: never returns (timeout).
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>

void relu_fwd(const float *x, float *y, int64_t n)
{
	volatile int forever = 1;
	while (forever)
		;
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i];
}
