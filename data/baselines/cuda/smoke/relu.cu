// GPU baseline for smoke/relu: one thread per element (a framework's plain
// elementwise kernel). crucible times CUDA candidates against it.
// @task smoke/relu
// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)
// @backward relu_bwd<<<cdiv(N, 256), 256>>>(x, dy, dx, N)

extern "C" __global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

extern "C" __global__ void relu_bwd(const float *x, const float *dy, float *dx, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}
