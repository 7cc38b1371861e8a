// A tensor passed where the function takes an integer: the compiler says so.
// @task smoke/relu
// @forward f(x, y, y)
#include <stdint.h>
void f(const float *x, float *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = x[i]; }
