// GPU baseline for smoke/gelu: one thread per element (a framework's plain
// elementwise kernel). crucible times CUDA candidates against it.
// @task smoke/gelu
// @forward gelu_fwd<<<cdiv(N, 256), 256>>>(x, y, N)
// @backward gelu_bwd<<<cdiv(N, 256), 256>>>(x, dy, dx, N)

extern "C" __global__ void gelu_fwd(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
}

extern "C" __global__ void gelu_bwd(const float *x, const float *dy, float *dx, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float cdf = 0.5f * (1.0f + erff(x[i] * 0.70710678f));
		float pdf = expf(-0.5f * x[i] * x[i]) * 0.39894228f;
		dx[i] = dy[i] * (cdf + x[i] * pdf);
	}
}
