// Bad sample: stores through a null pointer (CUDA_ERROR_ILLEGAL_ADDRESS,
// a sticky error that ends only this worker -> runtime_error).
// @task smoke/relu
// @forward relu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)

extern "C" __global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float *volatile nowhere = 0;
	if (i < n)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
	if (i == 0)
		nowhere[i] = 1.0f;
}
