// Honest plain matmul: a thread per output element, float accumulation.
// Backward: da = dc b^T, db = a^T dc, a thread per element each.
// @task smoke/matmul
// @forward mm<<<(cdiv(N, 16), cdiv(M, 16)), (16, 16)>>>(a, b, c, M, K, N)
// @backward mm_da<<<(cdiv(K, 16), cdiv(M, 16)), (16, 16)>>>(b, dc, da, M, K, N)
// @backward mm_db<<<(cdiv(N, 16), cdiv(K, 16)), (16, 16)>>>(a, dc, db, M, K, N)

extern "C" __global__ void mm(const float *a, const float *b, float *c, int m, int k, int n)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
	if (i >= m || j >= n)
		return;
	float s = 0.0f;
	for (int p = 0; p < k; p++)
		s += a[(long long)i * k + p] * b[(long long)p * n + j];
	c[(long long)i * n + j] = s;
}

extern "C" __global__ void mm_da(const float *b, const float *dc, float *da, int m, int k, int n)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
	if (i >= m || p >= k)
		return;
	float s = 0.0f;
	for (int j = 0; j < n; j++)
		s += dc[(long long)i * n + j] * b[(long long)p * n + j];
	da[(long long)i * k + p] = s;
}

extern "C" __global__ void mm_db(const float *a, const float *dc, float *db, int m, int k, int n)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x, p = blockIdx.y * blockDim.y + threadIdx.y;
	if (p >= k || j >= n)
		return;
	float s = 0.0f;
	for (int i = 0; i < m; i++)
		s += a[(long long)i * k + p] * dc[(long long)i * n + j];
	db[(long long)p * n + j] = s;
}
