// GPU baseline for smoke/layernorm: a block per row with block-wide reductions
// (what a framework's fused kernel does). crucible times CUDA candidates
// against it.
// @task smoke/layernorm
// @scratch mean f32[B]
// @scratch rstd f32[B]
// @forward ln_rows<<<B, 256>>>(x, w, b, y, B, D)
// @backward ln_rows_stats<<<B, 256>>>(x, mean, rstd, B, D)
// @backward ln_rows_dx<<<B, 256>>>(x, w, dy, mean, rstd, dx, B, D)
// @backward ln_dwdb<<<cdiv(D, 256), 256>>>(x, dy, mean, rstd, dw, db, B, D)

#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* blockDim.x a multiple of 32; every thread gets the result; sh[32] */
__device__ float block_sum(float v, float *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum(v);
	__syncthreads();
	if (lane == 0)
		sh[w] = v;
	__syncthreads();
	if (w == 0) {
		v = lane < nw ? sh[lane] : 0.0f;
		v = warp_sum(v);
		if (lane == 0)
			sh[0] = v;
	}
	__syncthreads();
	return sh[0];
}

__device__ float block_max(float v, float *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0)
		sh[w] = v;
	__syncthreads();
	if (w == 0) {
		v = lane < nw ? sh[lane] : NEG_INF;
		v = warp_max(v);
		if (lane == 0)
			sh[0] = v;
	}
	__syncthreads();
	return sh[0];
}

__device__ void block_stats(const float *xr, int d, float *sh, float *mu, float *rs)
{
	float s = 0.0f, v = 0.0f;
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		s += xr[k];
	float m = block_sum(s, sh) / d;
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		v += (xr[k] - m) * (xr[k] - m);
	v = block_sum(v, sh) / d;
	*mu = m;
	*rs = rsqrtf(v + 1e-5f);
}

extern "C" __global__ void ln_rows(const float *__restrict__ x, const float *__restrict__ w,
				   const float *__restrict__ bias, float *__restrict__ y, int b, int d)
{
	__shared__ float sh[32];
	const float *xr = x + (long long)blockIdx.x * d;
	float *yr = y + (long long)blockIdx.x * d;
	float mu, rs;
	block_stats(xr, d, sh, &mu, &rs);
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		yr[k] = (xr[k] - mu) * rs * w[k] + bias[k];
}

extern "C" __global__ void ln_rows_stats(const float *__restrict__ x, float *__restrict__ mean,
					 float *__restrict__ rstd, int b, int d)
{
	__shared__ float sh[32];
	float mu, rs;
	block_stats(x + (long long)blockIdx.x * d, d, sh, &mu, &rs);
	if (threadIdx.x == 0) {
		mean[blockIdx.x] = mu;
		rstd[blockIdx.x] = rs;
	}
}

extern "C" __global__ void ln_rows_dx(const float *__restrict__ x, const float *__restrict__ w,
				      const float *__restrict__ dy, const float *__restrict__ mean,
				      const float *__restrict__ rstd, float *__restrict__ dx, int b, int d)
{
	__shared__ float sh[32];
	long long o = (long long)blockIdx.x * d;
	float mu = mean[blockIdx.x], rs = rstd[blockIdx.x], s1 = 0.0f, s2 = 0.0f;
	for (int k = threadIdx.x; k < d; k += blockDim.x) {
		float g = dy[o + k] * w[k];
		s1 += g;
		s2 += g * (x[o + k] - mu) * rs;
	}
	s1 = block_sum(s1, sh) / d;
	s2 = block_sum(s2, sh) / d;
	for (int k = threadIdx.x; k < d; k += blockDim.x)
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
