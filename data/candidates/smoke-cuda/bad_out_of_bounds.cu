// Bad sample: the launch covers N + 16 elements and the kernel writes them
// all: 16 floats past the end of y land in its guard zone -> out_of_bounds.
// @task smoke/relu
// @forward relu_fwd<<<cdiv(N + 16, 256), 256>>>(x, y, N)

extern "C" __global__ void relu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
	else if (i < n + 16)
		y[i] = 0.0f;
}
