// @task smoke/relu
// @forward f(x, y, N * 9223372036854775807)
#include <stdint.h>
void f(const float *x, float *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = x[i]; }
