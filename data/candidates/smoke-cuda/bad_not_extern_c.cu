// Bad sample: the kernel is not extern "C", so its symbol is C++-mangled
// and the launch names nothing -> format_error at compile time.
// @task smoke/relu
// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)

__global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
