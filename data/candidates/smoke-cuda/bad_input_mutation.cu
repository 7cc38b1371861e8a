// Bad sample: uses its input as scratch space (writes x in place, then
// copies) -> input_mutated.
// @task smoke/relu
// @forward relu_inplace<<<cdiv(N, 256), 256>>>(x, y, N)

extern "C" __global__ void relu_inplace(float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		x[i] = x[i] > 0.0f ? x[i] : 0.0f;
		y[i] = x[i];
	}
}
