// Honest plain cross-entropy: a thread per row (max-subtracted
// log-sum-exp) into scratch, then one thread averages in double.
// @task smoke/cross_entropy
// @scratch rowloss f32[B]
// @forward xent_rows<<<cdiv(B, 128), 128>>>(logits, target, rowloss, B, C)
// @forward xent_mean<<<1, 1>>>(rowloss, loss, B)
// @backward xent_bwd<<<cdiv(B, 128), 128>>>(logits, target, dloss, dlogits, B, C)

extern "C" __global__ void xent_rows(const float *x, const long long *t, float *rowloss, int b, int c)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= b)
		return;
	const float *xr = x + (long long)r * c;
	float m = xr[0], s = 0.0f;
	for (int k = 1; k < c; k++)
		m = fmaxf(m, xr[k]);
	for (int k = 0; k < c; k++)
		s += expf(xr[k] - m);
	rowloss[r] = m + logf(s) - xr[t[r]];
}

extern "C" __global__ void xent_mean(const float *rowloss, float *loss, int b)
{
	double s = 0.0;
	for (int r = 0; r < b; r++)
		s += rowloss[r];
	loss[0] = (float)(s / b);
}

extern "C" __global__ void xent_bwd(const float *x, const long long *t, const float *dl, float *dx,
				    int b, int c)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= b)
		return;
	const float *xr = x + (long long)r * c;
	float g = dl[0] / (float)b, m = xr[0], s = 0.0f;
	for (int k = 1; k < c; k++)
		m = fmaxf(m, xr[k]);
	for (int k = 0; k < c; k++)
		s += expf(xr[k] - m);
	for (int k = 0; k < c; k++)
		dx[(long long)r * c + k] = g * (expf(xr[k] - m) / s - (k == t[r] ? 1.0f : 0.0f));
}
