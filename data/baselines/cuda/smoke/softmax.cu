// GPU baseline for smoke/softmax: a block per row with block-wide reductions
// (what a framework's fused kernel does). crucible times CUDA candidates
// against it.
// @task smoke/softmax
// @forward softmax_rows<<<B, 256>>>(x, y, B, D)
// @backward softmax_rows_bwd<<<B, 256>>>(y, dy, dx, B, D)

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

extern "C" __global__ void softmax_rows(const float *__restrict__ x, float *__restrict__ y, int b, int d)
{
	__shared__ float sh[32];
	const float *xr = x + (long long)blockIdx.x * d;
	float *yr = y + (long long)blockIdx.x * d;
	float m = NEG_INF, s = 0.0f;
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		m = fmaxf(m, xr[k]);
	m = block_max(m, sh);
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		s += expf(xr[k] - m);
	s = block_sum(s, sh);
	float inv = 1.0f / s;
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		yr[k] = expf(xr[k] - m) * inv;
}

extern "C" __global__ void softmax_rows_bwd(const float *__restrict__ y, const float *__restrict__ dy,
					    float *__restrict__ dx, int b, int d)
{
	__shared__ float sh[32];
	long long o = (long long)blockIdx.x * d;
	float dot = 0.0f;
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		dot += y[o + k] * dy[o + k];
	dot = block_sum(dot, sh);
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		dx[o + k] = y[o + k] * (dy[o + k] - dot);
}
