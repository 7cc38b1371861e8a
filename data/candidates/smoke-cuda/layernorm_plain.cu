// Honest plain layer norm: one thread per row, two passes (mean, centred
// variance). Backward: per-row statistics into scratch, dx per row, dw/db
// per column.
// @task smoke/layernorm
// @scratch mean f32[B]
// @scratch rstd f32[B]
// @forward ln_fwd<<<cdiv(B, 64), 64>>>(x, w, b, y, B, D)
// @backward ln_stats<<<cdiv(B, 64), 64>>>(x, mean, rstd, B, D)
// @backward ln_dx<<<cdiv(B, 64), 64>>>(x, w, dy, mean, rstd, dx, B, D)
// @backward ln_dwdb<<<cdiv(D, 128), 128>>>(x, dy, mean, rstd, dw, db, B, D)

__device__ void row_stats(const float *xr, int d, float *mu, float *rs)
{
	float m = 0.0f, v = 0.0f;
	for (int k = 0; k < d; k++)
		m += xr[k];
	m /= d;
	for (int k = 0; k < d; k++)
		v += (xr[k] - m) * (xr[k] - m);
	*mu = m;
	*rs = rsqrtf(v / d + 1e-5f);
}

extern "C" __global__ void ln_fwd(const float *x, const float *w, const float *bias, float *y, int b, int d)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= b)
		return;
	const float *xr = x + (long long)r * d;
	float mu, rs;
	row_stats(xr, d, &mu, &rs);
	for (int k = 0; k < d; k++)
		y[(long long)r * d + k] = (xr[k] - mu) * rs * w[k] + bias[k];
}

extern "C" __global__ void ln_stats(const float *x, float *mean, float *rstd, int b, int d)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r < b)
		row_stats(x + (long long)r * d, d, &mean[r], &rstd[r]);
}

extern "C" __global__ void ln_dx(const float *x, const float *w, const float *dy, const float *mean,
				 const float *rstd, float *dx, int b, int d)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= b)
		return;
	long long o = (long long)r * d;
	float mu = mean[r], rs = rstd[r], s1 = 0.0f, s2 = 0.0f;
	for (int k = 0; k < d; k++) {
		float g = dy[o + k] * w[k];
		s1 += g;
		s2 += g * (x[o + k] - mu) * rs;
	}
	s1 /= d;
	s2 /= d;
	for (int k = 0; k < d; k++)
		dx[o + k] = rs * (dy[o + k] * w[k] - s1 - (x[o + k] - mu) * rs * s2);
}

/* dw, db: a thread per column, rows in order (deterministic, coalesced) */
extern "C" __global__ void ln_dwdb(const float *__restrict__ x, const float *__restrict__ dy,
				   const float *__restrict__ mean, const float *__restrict__ rstd,
				   float *__restrict__ dw, float *__restrict__ db, int b, int d)
{
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= d)
		return;
	float sw = 0.0f, sb = 0.0f;
	for (int r = 0; r < b; r++) {
		long long i = (long long)r * d + k;
		sw += dy[i] * (x[i] - mean[r]) * rstd[r];
		sb += dy[i];
	}
	dw[k] = sw;
	db[k] = sb;
}
