// Honest plain softmax: one thread per row (max, exp-sum, normalise);
// backward dx = y * (dy - <dy, y>).
// @task smoke/softmax
// @forward softmax_fwd<<<cdiv(B, 64), 64>>>(x, y, B, D)
// @backward softmax_bwd<<<cdiv(B, 64), 64>>>(y, dy, dx, B, D)

extern "C" __global__ void softmax_fwd(const float *x, float *y, int b, int d)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= b)
		return;
	const float *xr = x + (long long)r * d;
	float *yr = y + (long long)r * d;
	float m = xr[0], s = 0.0f;
	for (int k = 1; k < d; k++)
		m = fmaxf(m, xr[k]);
	for (int k = 0; k < d; k++) {
		yr[k] = expf(xr[k] - m);
		s += yr[k];
	}
	for (int k = 0; k < d; k++)
		yr[k] /= s;
}

extern "C" __global__ void softmax_bwd(const float *y, const float *dy, float *dx, int b, int d)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= b)
		return;
	long long o = (long long)r * d;
	float dot = 0.0f;
	for (int k = 0; k < d; k++)
		dot += y[o + k] * dy[o + k];
	for (int k = 0; k < d; k++)
		dx[o + k] = y[o + k] * (dy[o + k] - dot);
}
