// GPU baseline for smoke/cross_entropy: a block per row with block-wide reductions
// (what a framework's fused kernel does). crucible times CUDA candidates
// against it.
// @task smoke/cross_entropy
// @scratch rowloss f32[B]
// @forward xent_rows_blk<<<B, 256>>>(logits, target, rowloss, B, C)
// @forward xent_mean_blk<<<1, 1024>>>(rowloss, loss, B)
// @backward xent_bwd_blk<<<B, 256>>>(logits, target, dloss, dlogits, B, C)

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

extern "C" __global__ void xent_rows_blk(const float *__restrict__ x, const long long *__restrict__ t,
					 float *__restrict__ rowloss, int b, int c)
{
	__shared__ float sh[32];
	const float *xr = x + (long long)blockIdx.x * c;
	float m = NEG_INF, s = 0.0f;
	for (int k = threadIdx.x; k < c; k += blockDim.x)
		m = fmaxf(m, xr[k]);
	m = block_max(m, sh);
	for (int k = threadIdx.x; k < c; k += blockDim.x)
		s += expf(xr[k] - m);
	s = block_sum(s, sh);
	if (threadIdx.x == 0)
		rowloss[blockIdx.x] = m + logf(s) - xr[t[blockIdx.x]];
}

extern "C" __global__ void xent_mean_blk(const float *__restrict__ rowloss, float *__restrict__ loss, int b)
{
	__shared__ float sh[32];
	float s = 0.0f;
	for (int r = threadIdx.x; r < b; r += blockDim.x)
		s += rowloss[r];
	s = block_sum(s, sh);
	if (threadIdx.x == 0)
		loss[0] = s / (float)b;
}

extern "C" __global__ void xent_bwd_blk(const float *__restrict__ x, const long long *__restrict__ t,
					const float *__restrict__ dl, float *__restrict__ dx, int b, int c)
{
	__shared__ float sh[32];
	const float *xr = x + (long long)blockIdx.x * c;
	float *dr = dx + (long long)blockIdx.x * c;
	float m = NEG_INF, s = 0.0f, g = dl[0] / (float)b;
	long long tr = t[blockIdx.x];
	for (int k = threadIdx.x; k < c; k += blockDim.x)
		m = fmaxf(m, xr[k]);
	m = block_max(m, sh);
	for (int k = threadIdx.x; k < c; k += blockDim.x)
		s += expf(xr[k] - m);
	s = block_sum(s, sh);
	float inv = 1.0f / s;
	for (int k = threadIdx.x; k < c; k += blockDim.x)
		dr[k] = g * (expf(xr[k] - m) * inv - (k == tr ? 1.0f : 0.0f));
}
