// Honest ReLU that asks the CPU at run time (__builtin_cpu_supports,
// __builtin_cpu_is), as kernels picking a SIMD path do; wrong by 1000 if the
// answers are not this CPU's. libgcc answers through a constructor, which a
// built candidate may not have (round 3): crucible's compile adds its own
// copy of libgcc's CPU model without one, and the worker fills it from its
// own (round 3's eighth attacker found the false rejection).
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>
void relu_fwd(const float *x, float *y, int64_t n)
{
	float off = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("sse4.2") && __builtin_cpu_is("intel") + __builtin_cpu_is("amd") ? 0.0f : 1000.0f;
	for (int64_t i = 0; i < n; i++)
		y[i] = (x[i] > 0 ? x[i] : 0.0f) + off;
}
