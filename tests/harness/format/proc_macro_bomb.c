// Exploit: a preprocessor bomb. Each level expands its argument ten times,
// so the innermost token is repeated 10^9 times: unconfined, the compiler
// used gigabytes and tens of seconds. Caught: the compiler runs under
// RLIMIT_AS (2 GiB) and RLIMIT_CPU (30 s) per process and a wall-clock
// limit, in its own PID namespace; it dies of its limits (compile_error),
// and nothing it started outlives it. Had it compiled, the kernel is correct.
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>
#define A0(x) x x x x x x x x x x
#define A1(x) A0(A0(x))
#define A2(x) A1(A1(x))
#define A3(x) A2(A2(x))
#define A4(x) A3(A3(x))
#define A5(x) A4(A4(x))
static const char bomb[] = A5("spam ");
void relu_fwd(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f + 0 * bomb[0];
}
