// Honest optimised exact GELU: float4 vectors and a grid-stride loop (erff
// kept: the tanh approximation is not within tolerance of the erf form).
// @task smoke/gelu
// @forward gelu_fwd4<<<min(cdiv(N, 1024), 8192), 256>>>(x, y, N)
// @backward gelu_bwd4<<<min(cdiv(N, 1024), 8192), 256>>>(x, dy, dx, N)

__device__ __forceinline__ float gelu1(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__device__ __forceinline__ float dgelu1(float v, float g)
{
	float cdf = 0.5f * (1.0f + erff(v * 0.70710678f));
	float pdf = __expf(-0.5f * v * v) * 0.39894228f;
	return g * (cdf + v * pdf);
}

extern "C" __global__ void gelu_fwd4(const float *__restrict__ x, float *__restrict__ y, long long n)
{
	long long n4 = n / 4, tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	long long stride = (long long)gridDim.x * blockDim.x;
	const float4 *x4 = reinterpret_cast<const float4 *>(x);
	float4 *y4 = reinterpret_cast<float4 *>(y);
	for (long long i = tid; i < n4; i += stride) {
		float4 v = x4[i];
		v.x = gelu1(v.x); v.y = gelu1(v.y); v.z = gelu1(v.z); v.w = gelu1(v.w);
		y4[i] = v;
	}
	if (tid < n - n4 * 4)
		y[n4 * 4 + tid] = gelu1(x[n4 * 4 + tid]);
}

extern "C" __global__ void gelu_bwd4(const float *__restrict__ x, const float *__restrict__ dy,
				     float *__restrict__ dx, long long n)
{
	long long n4 = n / 4, tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	long long stride = (long long)gridDim.x * blockDim.x;
	const float4 *x4 = reinterpret_cast<const float4 *>(x);
	const float4 *g4 = reinterpret_cast<const float4 *>(dy);
	float4 *d4 = reinterpret_cast<float4 *>(dx);
	for (long long i = tid; i < n4; i += stride) {
		float4 v = x4[i], g = g4[i], o;
		o.x = dgelu1(v.x, g.x); o.y = dgelu1(v.y, g.y);
		o.z = dgelu1(v.z, g.z); o.w = dgelu1(v.w, g.w);
		d4[i] = o;
	}
	if (tid < n - n4 * 4) {
		long long k = n4 * 4 + tid;
		dx[k] = dgelu1(x[k], dy[k]);
	}
}
