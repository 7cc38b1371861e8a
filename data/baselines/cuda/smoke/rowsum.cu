// GPU baseline for smoke/rowsum: a block per row with block-wide reductions
// (what a framework's fused kernel does). crucible times CUDA candidates
// against it.
// @task smoke/rowsum
// @forward rowsum_block<<<B, 256>>>(x, y, B, D)
// @backward rowsum_bcast<<<(cdiv(D, 256), B), 256>>>(dy, dx, B, D)

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

extern "C" __global__ void rowsum_block(const float *__restrict__ x, float *__restrict__ y, int b, int d)
{
	__shared__ float sh[32];
	const float *xr = x + (long long)blockIdx.x * d;
	float s = 0.0f;
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		s += xr[k];
	s = block_sum(s, sh);
	if (threadIdx.x == 0)
		y[blockIdx.x] = s;
}

extern "C" __global__ void rowsum_bcast(const float *__restrict__ dy, float *__restrict__ dx, int b, int d)
{
	int k = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
	if (k < d)
		dx[(long long)r * d + k] = dy[r];
}
