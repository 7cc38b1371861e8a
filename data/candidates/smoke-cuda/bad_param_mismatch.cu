// Bad sample: the launch passes a buffer where the kernel takes an int
// (and an int where it takes a pointer) -> format_error at compile time,
// before any garbage reaches the GPU.
// @task smoke/relu
// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, N, y)

extern "C" __global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
