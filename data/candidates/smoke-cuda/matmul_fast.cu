// Honest optimised matmul: 32x32 shared-memory tiles, 4 outputs per
// thread. One strided kernel serves c = a b, da = dc b^T and db = a^T dc:
// C[i][j] = sum_r A[i*sai + r*sap] * Bm[r*sbp + j*sbj], C row-major Mo x No.
// @task smoke/matmul
// @forward gemm_tiled<<<(cdiv(N, 32), cdiv(M, 32)), (32, 8)>>>(a, b, c, M, N, K, K, 1, N, 1)
// @backward gemm_tiled<<<(cdiv(K, 32), cdiv(M, 32)), (32, 8)>>>(dc, b, da, M, K, N, N, 1, 1, N)
// @backward gemm_tiled<<<(cdiv(N, 32), cdiv(K, 32)), (32, 8)>>>(a, dc, db, K, N, M, 1, K, N, 1)

#define T 32

extern "C" __global__ void gemm_tiled(const float *__restrict__ A, const float *__restrict__ Bm,
				      float *__restrict__ C, int mo, int no, int r, long long sai,
				      long long sap, long long sbp, long long sbj)
{
	__shared__ float as[T][T + 1], bs[T][T + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row0 = blockIdx.y * T, col0 = blockIdx.x * T;
	float acc[4] = { 0.0f, 0.0f, 0.0f, 0.0f };

	for (int r0 = 0; r0 < r; r0 += T) {
		for (int q = 0; q < 4; q++) {
			int li = ty + 8 * q;
			int gi = row0 + li, gr = r0 + tx;
			as[li][tx] = gi < mo && gr < r ? A[gi * sai + gr * sap] : 0.0f;
			int br = r0 + li, gj = col0 + tx;
			bs[li][tx] = br < r && gj < no ? Bm[br * sbp + gj * sbj] : 0.0f;
		}
		__syncthreads();
#pragma unroll 8
		for (int kk = 0; kk < T; kk++) {
			float bv = bs[kk][tx];
			for (int q = 0; q < 4; q++)
				acc[q] += as[ty + 8 * q][kk] * bv;
		}
		__syncthreads();
	}
	for (int q = 0; q < 4; q++) {
		int gi = row0 + ty + 8 * q, gj = col0 + tx;
		if (gi < mo && gj < no)
			C[(long long)gi * no + gj] = acc[q];
	}
}
