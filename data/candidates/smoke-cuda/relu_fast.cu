// Honest optimised ReLU: float4 loads and stores, grid-stride loop, 64-bit
// sizes; the last n % 4 elements by the first threads.
// @task smoke/relu
// @forward relu_fwd4<<<min(cdiv(N, 1024), 8192), 256>>>(x, y, N)
// @backward relu_bwd4<<<min(cdiv(N, 1024), 8192), 256>>>(x, dy, dx, N)

__device__ __forceinline__ float relu1(float v) { return v > 0.0f ? v : 0.0f; }

extern "C" __global__ void relu_fwd4(const float *__restrict__ x, float *__restrict__ y, long long n)
{
	long long n4 = n / 4, tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	long long stride = (long long)gridDim.x * blockDim.x;
	const float4 *x4 = reinterpret_cast<const float4 *>(x);
	float4 *y4 = reinterpret_cast<float4 *>(y);
	for (long long i = tid; i < n4; i += stride) {
		float4 v = x4[i];
		v.x = relu1(v.x); v.y = relu1(v.y); v.z = relu1(v.z); v.w = relu1(v.w);
		y4[i] = v;
	}
	if (tid < n - n4 * 4)
		y[n4 * 4 + tid] = relu1(x[n4 * 4 + tid]);
}

extern "C" __global__ void relu_bwd4(const float *__restrict__ x, const float *__restrict__ dy,
				     float *__restrict__ dx, long long n)
{
	long long n4 = n / 4, tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	long long stride = (long long)gridDim.x * blockDim.x;
	const float4 *x4 = reinterpret_cast<const float4 *>(x);
	const float4 *g4 = reinterpret_cast<const float4 *>(dy);
	float4 *d4 = reinterpret_cast<float4 *>(dx);
	for (long long i = tid; i < n4; i += stride) {
		float4 v = x4[i], g = g4[i], o;
		o.x = v.x > 0.0f ? g.x : 0.0f;
		o.y = v.y > 0.0f ? g.y : 0.0f;
		o.z = v.z > 0.0f ? g.z : 0.0f;
		o.w = v.w > 0.0f ? g.w : 0.0f;
		d4[i] = o;
	}
	if (tid < n - n4 * 4) {
		long long k = n4 * 4 + tid;
		dx[k] = x[k] > 0.0f ? dy[k] : 0.0f;
	}
}
