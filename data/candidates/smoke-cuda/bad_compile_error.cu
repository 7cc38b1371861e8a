// Bad sample: does not compile (undeclared identifier on line 8).
// @task smoke/relu
// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)

extern "C" __global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = x[i] > 0.0f ? x[i] : undeclared_zero;
}
