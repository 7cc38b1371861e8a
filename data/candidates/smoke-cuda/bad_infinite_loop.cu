// Bad sample: never finishes (clock64() keeps the loop from being
// optimised away) -> timeout; the worker is killed, the device recovers.
// @task smoke/relu
// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)

extern "C" __global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	long long spins = 0;
	while (clock64() >= 0)
		spins++;
	if (i < n)
		y[i] = x[i] > 0.0f ? x[i] : (float)spins;
}
