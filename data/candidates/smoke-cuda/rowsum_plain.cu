// Honest plain row sum: one thread per row, sequential float sum.
// @task smoke/rowsum
// @forward rowsum_fwd<<<cdiv(B, 128), 128>>>(x, y, B, D)
// @backward rowsum_bwd<<<cdiv(B * D, 256), 256>>>(dy, dx, B, D)

extern "C" __global__ void rowsum_fwd(const float *x, float *y, int b, int d)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= b)
		return;
	float s = 0.0f;
	for (int k = 0; k < d; k++)
		s += x[(long long)r * d + k];
	y[r] = s;
}

extern "C" __global__ void rowsum_bwd(const float *dy, float *dx, int b, int d)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i < (long long)b * d)
		dx[i] = dy[i / d];
}
