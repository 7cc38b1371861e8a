// Bad sample: dereferences a null pointer (crash -> runtime_error with SIGSEGV).
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>

void relu_fwd(const float *x, float *y, int64_t n)
{
	volatile float *p = 0;
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
	*p = 1.0f;
}
