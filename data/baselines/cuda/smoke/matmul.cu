// GPU baseline for smoke/matmul: cuBLAS sgemm (FP32, TF32 off), what a
// framework calls for a float32 matmul. The launch below is not run as a
// kernel: in a trusted launch table (files under data/baselines/cuda only)
// the cuda worker calls cublasSgemm with these arguments instead; the empty
// kernel gives the compile-time checks its parameter list.
// @task smoke/matmul
// @forward crucible_cublas_sgemm<<<1, 1>>>(a, b, c, M, K, N)

extern "C" __global__ void crucible_cublas_sgemm(const float *a, const float *b, float *c, int m,
						 int k, int n)
{
}
