// Bad sample: a .cu candidate with the CPU launch form (no <<<grid, block>>>)
// -> format_error on the cuda backend.
// @task smoke/relu
// @forward relu_fwd(x, y, N)

extern "C" __global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
