// Bad sample: computes once, keeps the result in a __device__ global and
// replays it on every later call (the module stays loaded between calls).
// Caught: the output does not depend on the input (degenerate), and on
// shapes where the replay is stale, mismatch/stale_result.
// @task smoke/relu
// @forward relu_cached<<<cdiv(N, 256), 256>>>(x, y, N)

__device__ float cache[1 << 20];
__device__ int cached_n;

extern "C" __global__ void relu_cached(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int have = *(volatile int *)&cached_n;
	if (i >= n)
		return;
	if (have == 0) {
		float v = x[i] > 0.0f ? x[i] : 0.0f;
		y[i] = v;
		if (i < (1 << 20))
			cache[i] = v;
		if (i == 0)
			cached_n = n;  /* later blocks may still see 0: they compute too */
	} else {
		y[i] = i < (1 << 20) ? cache[i] : 0.0f;
	}
}
