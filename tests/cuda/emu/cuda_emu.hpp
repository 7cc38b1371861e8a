// cuda_emu.hpp — a CPU emulation of the small CUDA subset the smoke-cuda
// samples use, so their arithmetic and indexing can be checked on a machine
// without a GPU (tests/cuda/emu/emu_samples.c). It is a sanity check, not a
// GPU: one block at a time, one std::thread per CUDA thread, __syncthreads
// and warp shuffles by barriers, __shared__ as static storage, fast-math
// intrinsics as their libm forms. Included before a sample with
// `c++ -std=c++20 -include cuda_emu.hpp -x c++ sample.cu`.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
struct float4 { float x, y, z, w; };

inline thread_local uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __shared__ static

inline std::barrier<> *emu_block_bar;
inline std::barrier<> *emu_warp_bar[32];
inline float emu_warp_val[1024];

inline void __syncthreads() { emu_block_bar->arrive_and_wait(); }

inline int emu_tid() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }

inline float __shfl_xor_sync(unsigned, float v, int lane_mask)
{
	int t = emu_tid(), w = t / 32, l = t % 32;
	emu_warp_val[t] = v;
	emu_warp_bar[w]->arrive_and_wait();
	float r = emu_warp_val[w * 32 + (l ^ lane_mask)];
	emu_warp_bar[w]->arrive_and_wait();
	return r;
}

inline float __int_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __expf(float x) { return expf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline long long clock64() { return 0; }

// Every sample kernel takes at most 10 pointer or integer parameters: on
// x86-64 they travel in integer registers and 8-byte stack slots, so one
// all-int64 signature calls any of them (an int parameter reads the low half).
typedef void (*emu_kernel)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
			   int64_t, int64_t);

// One std::thread per CUDA thread of a block, kept for every block of the
// launch; blocks run one after another (an end-of-block barrier keeps a fast
// thread from starting the next block while __shared__ data is in use).
extern "C" void emu_launch(void *fn, const unsigned *g, const unsigned *b, const int64_t *a)
{
	unsigned nt = b[0] * b[1] * b[2], nw = (nt + 31) / 32;
	std::barrier<> bar(nt), end(nt);
	std::vector<std::thread> th;
	gridDim = { g[0], g[1], g[2] };
	blockDim = { b[0], b[1], b[2] };
	emu_block_bar = &bar;
	for (unsigned w = 0; w < nw; w++)
		emu_warp_bar[w] = new std::barrier<>(nt - w * 32 < 32 ? nt - w * 32 : 32);
	for (unsigned t = 0; t < nt; t++)
		th.emplace_back([=, &end] {
			threadIdx = { t % b[0], t / b[0] % b[1], t / (b[0] * b[1]) };
			for (unsigned bz = 0; bz < g[2]; bz++)
				for (unsigned by = 0; by < g[1]; by++)
					for (unsigned bx = 0; bx < g[0]; bx++) {
						blockIdx = { bx, by, bz };
						((emu_kernel)fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
						end.arrive_and_wait();
					}
		});
	for (auto &x : th)
		x.join();
	for (unsigned w = 0; w < nw; w++)
		delete emu_warp_bar[w];
}
