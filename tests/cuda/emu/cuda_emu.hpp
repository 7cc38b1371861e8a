// cuda_emu.hpp — a CPU emulation of the small CUDA subset the smoke-cuda
// samples and the decoder's kernels (decode/cuda/) use, so their arithmetic
// and indexing can be checked on a machine without a GPU
// (tests/cuda/emu/emu_samples.c, the fake driver tests/cuda/fakecuda). It is
// a sanity check, not a GPU: one block at a time, __shared__ as static
// storage, fast-math intrinsics as their libm forms. Included before a
// kernel file with `c++ -std=c++20 -include cuda_emu.hpp -x c++ file.cu`.
//
// Two ways to run a block's threads:
//   - default: one std::thread per CUDA thread, __syncthreads and warp
//     operations by std::barrier. Threads really run concurrently, so a
//     kernel that spins on another thread's write terminates (some samples
//     are such exploits).
//   - -DCUDA_EMU_FIBERS: every CUDA thread of a block is a fiber on the
//     calling thread (x86-64 only), switched only at __syncthreads,
//     __syncwarp and warp shuffles. Deterministic and two orders of
//     magnitude faster on a small machine (the decoder's kernels run
//     thousands of blocks per token), but a thread that spins waiting for
//     another never yields. It also checks what the hardware leaves
//     undefined: a warp operation whose full mask names an exited lane, and
//     a block where some threads wait at __syncthreads while others wait at
//     a warp operation (divergent barriers) abort with a message.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };

#ifdef CUDA_EMU_FIBERS
inline uint3 threadIdx, blockIdx;   // set by the scheduler when a fiber runs
#else
inline thread_local uint3 threadIdx, blockIdx;
#endif
inline dim3 blockDim, gridDim;
constexpr int warpSize = 32;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(...)

// Dynamic shared memory (cuLaunchKernel's sharedMemBytes): one buffer per
// launch, filled with 0xff bytes (NaN as floats, -1 as integers) before each
// block in the fiber build, so a read before the block's own write shows. A
// kernel reaches it through emu_dyn_smem where nvcc has `extern __shared__`.
inline unsigned char *emu_dyn_smem;

// The launch's dynamic shared memory (nullptr when the launch asks for
// none); the launch poisons it.
inline void emu_dyn_smem_open(unsigned smem)
{
	emu_dyn_smem = nullptr;
	if (smem && !(emu_dyn_smem = (unsigned char *)std::aligned_alloc(128, (smem + 127u) & ~127u))) {
		std::fprintf(stderr, "cuda_emu: no memory for %u bytes of dynamic shared memory\n", smem);
		std::abort();
	}
}
inline void emu_dyn_smem_close()
{
	std::free(emu_dyn_smem);
	emu_dyn_smem = nullptr;
}

inline int emu_tid() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }

// ---- barriers: the two execution models --------------------------------

#ifdef CUDA_EMU_FIBERS
#if !defined(__x86_64__)
#error "CUDA_EMU_FIBERS: the fiber switch is x86-64 assembly"
#endif

// emu_ctx_switch(&save, to): saves the callee-saved registers, MXCSR and the
// x87 control word on the current stack, stores the stack pointer in *save
// and resumes the context whose stack pointer is `to`. Weak, so several
// translation units of one library may include this header.
asm(R"(
	.text
	.weak emu_ctx_switch
	.type emu_ctx_switch,@function
emu_ctx_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $8, %rsp
	stmxcsr (%rsp)
	fnstcw 4(%rsp)
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	ldmxcsr (%rsp)
	fldcw 4(%rsp)
	addq $8, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size emu_ctx_switch, .-emu_ctx_switch
)");
extern "C" void emu_ctx_switch(void **save, void *to);

enum { EMU_RUN, EMU_WARP_WAIT, EMU_BLOCK_WAIT, EMU_DONE };
constexpr size_t EMU_STACK = 256 * 1024;   // per fiber; mapped once, touched as used

struct emu_fiber {
	void *sp;
	int state;
	unsigned mask;  // the warp wait's member mask
};
inline emu_fiber emu_fib[1024];
inline void *emu_sched_sp;
inline int emu_cur;
inline char *emu_stacks;
inline void *emu_fn;
inline const int64_t *emu_args;

[[noreturn]] inline void emu_die(const char *what)
{
	fprintf(stderr, "cuda_emu: %s (block %u,%u,%u thread %d)\n", what, blockIdx.x, blockIdx.y, blockIdx.z,
		emu_cur);
	abort();
}

inline void emu_wait(int state, unsigned mask = 0xffffffffu)
{
	emu_fib[emu_cur].state = state;
	emu_fib[emu_cur].mask = mask;
	emu_ctx_switch(&emu_fib[emu_cur].sp, emu_sched_sp);
}

inline void __syncthreads() { emu_wait(EMU_BLOCK_WAIT); }
inline void emu_warp_sync(unsigned mask = 0xffffffffu) { emu_wait(EMU_WARP_WAIT, mask); }
#else
inline std::barrier<> *emu_block_bar;
inline std::barrier<> *emu_warp_bar[32];
inline void __syncthreads() { emu_block_bar->arrive_and_wait(); }
inline void emu_warp_sync(unsigned = 0xffffffffu) { emu_warp_bar[emu_tid() / 32]->arrive_and_wait(); }
#endif

inline void __syncwarp(unsigned mask = 0xffffffffu) { emu_warp_sync(mask); }

// ---- warp shuffles (any 4- or 8-byte type) -----------------------------

inline uint64_t emu_warp_val[1024];

// Every lane publishes v, the warp meets, each reads lane src's value (its
// own when src is out of the warp), and the warp meets again before a slot
// may be overwritten.
template <class T> inline T emu_shfl(unsigned mask, T v, int src)
{
	static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
	int t = emu_tid(), w = t / 32, l = t % 32;
	uint64_t u = 0;
	T r;
	std::memcpy(&u, &v, sizeof v);
	emu_warp_val[t] = u;
	emu_warp_sync(mask);
	if (src < 0 || src >= 32 || w * 32 + src >= (int)(blockDim.x * blockDim.y * blockDim.z))
		src = l;
	u = emu_warp_val[w * 32 + src];
	std::memcpy(&r, &u, sizeof r);
	emu_warp_sync(mask);
	return r;
}

template <class T> inline T __shfl_xor_sync(unsigned m, T v, int lane_mask, int width = 32)
{
	int l = emu_tid() % 32;
	return emu_shfl(m, v, (l ^ lane_mask) / width == l / width ? l ^ lane_mask : l);
}
template <class T> inline T __shfl_down_sync(unsigned m, T v, unsigned d, int width = 32)
{
	int l = emu_tid() % 32;
	return emu_shfl(m, v, l % width + (int)d < width ? l + (int)d : l);
}
template <class T> inline T __shfl_up_sync(unsigned m, T v, unsigned d, int width = 32)
{
	int l = emu_tid() % 32;
	return emu_shfl(m, v, l % width >= (int)d ? l - (int)d : l);
}
template <class T> inline T __shfl_sync(unsigned m, T v, int src, int width = 32)
{
	int l = emu_tid() % 32;
	return emu_shfl(m, v, l / width * width + (src % width + width) % width);
}

// ---- atomics (real ones: the thread model runs concurrently) -----------

template <class T> inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline float atomicAdd(float *p, float v)
{
	float old, want;
	__atomic_load(p, &old, __ATOMIC_RELAXED);
	do
		want = old + v;
	while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return old;
}
inline int atomicMax(int *p, int v)
{
	int old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return old;
}
inline int atomicCAS(int *p, int cmp, int v)
{
	__atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return cmp;
}

// ---- bit casts, conversions, integer SIMD ------------------------------

inline float __int_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline float __expf(float x) { return expf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline long long clock64() { return 0; }
template <class T> inline T __ldg(const T *p) { return *p; }
// round to nearest, ties to even (the default rounding mode)
inline int __float2int_rn(float x) { return (int)lrintf(x); }

// sum of the four signed byte products of a and b, plus c
inline int __dp4a(int a, int b, int c)
{
	for (int k = 0; k < 4; k++)
		c += (int)(int8_t)(a >> (8 * k)) * (int)(int8_t)(b >> (8 * k));
	return c;
}
// per-byte a - b, modulo 256
inline unsigned __vsub4(unsigned a, unsigned b)
{
	unsigned r = 0;
	for (int k = 0; k < 4; k++)
		r |= ((((a >> (8 * k)) & 0xff) - ((b >> (8 * k)) & 0xff)) & 0xffu) << (8 * k);
	return r;
}

// IEEE half: storage and the two conversions (round to nearest even,
// subnormals, overflow to infinity), as the hardware converts.
struct __half { unsigned short x; };
inline __half __ushort_as_half(unsigned short h) { return __half{ h }; }
inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline float __half2float(__half h)
{
	uint32_t sign = (uint32_t)(h.x & 0x8000) << 16, exp = (h.x >> 10) & 0x1f, man = h.x & 0x3ff, u;
	if (exp == 0) {
		float f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	u = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
	return __uint_as_float(u);
}
inline __half __float2half_rn(float f)
{
	uint32_t u = __float_as_uint(f), sign = (u >> 16) & 0x8000, man = u & 0x7fffff;
	int32_t exp = (int32_t)((u >> 23) & 0xff);
	if (exp == 255)
		return __half{ (unsigned short)(sign | 0x7c00 | (man ? 0x200 : 0)) };
	exp -= 112;
	if (exp >= 31)
		return __half{ (unsigned short)(sign | 0x7c00) };
	if (exp <= 0) {
		if (exp < -10)
			return __half{ (unsigned short)sign };
		uint32_t m = man | 0x800000, shift = (uint32_t)(14 - exp), r = m >> shift, half = 1u << (shift - 1);
		uint32_t rest = m & ((half << 1) - 1);
		if (rest > half || (rest == half && (r & 1)))
			r++;
		return __half{ (unsigned short)(sign | r) };
	}
	uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++;
	return __half{ (unsigned short)h };
}

// ---- tensor cores: nvcuda::wmma, int8 m16n16k16 -------------------------
//
// What the decoder's MMQ kernels use (decode/cuda/dec_cu_mmq.cuh). A
// fragment is opaque and warp-wide on the hardware; here every lane holds
// the whole tile, so the results are those of the API's definition (row i,
// column j, ldm elements between rows or columns) whatever the hardware's
// register layout. The sums are int32, exact in any order.
[[noreturn]] inline void emu_wmma_die(const char *what)
{
	fprintf(stderr, "cuda_emu: wmma::%s: a pointer not 256-bit aligned\n", what);
	abort();
}

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment;
template <class Use, class L> struct fragment<Use, 16, 16, 16, signed char, L> {
	signed char x[16 * 16];   // matrix_a: A(i, k) at i * 16 + k; matrix_b: B(k, j) at k * 16 + j
};
template <> struct fragment<accumulator, 16, 16, 16, int, void> {
	int x[16 * 16];           // C(i, j) at i * 16 + j
};
inline void fill_fragment(fragment<accumulator, 16, 16, 16, int, void> &f, int v)
{
	for (int i = 0; i < 256; i++)
		f.x[i] = v;
}
// matrix_a's A(i, k) or matrix_b's B(k, j): element (r, c) of a tile, from
// row r, column c of a row-major or column-major matrix with ldm between them
template <class Use, class L> inline void load_matrix_sync(fragment<Use, 16, 16, 16, signed char, L> &f,
							   const signed char *p, unsigned ldm)
{
	if ((uintptr_t)p % 32)
		emu_wmma_die("load_matrix_sync");
	for (int r = 0; r < 16; r++)
		for (int c = 0; c < 16; c++)
			f.x[r * 16 + c] = std::is_same_v<L, row_major> ? p[r * ldm + c] : p[c * ldm + r];
	emu_warp_sync();
}
template <class LA, class LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, int, void> &d,
		     const fragment<matrix_a, 16, 16, 16, signed char, LA> &a,
		     const fragment<matrix_b, 16, 16, 16, signed char, LB> &b,
		     const fragment<accumulator, 16, 16, 16, int, void> &c)
{
	int r[256];
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			int s = c.x[i * 16 + j];
			for (int k = 0; k < 16; k++)
				s += (int)a.x[i * 16 + k] * (int)b.x[k * 16 + j];
			r[i * 16 + j] = s;
		}
	std::memcpy(d.x, r, sizeof r);
	emu_warp_sync();
}
inline void store_matrix_sync(int *p, const fragment<accumulator, 16, 16, 16, int, void> &f, unsigned ldm,
			      layout_t l)
{
	if ((uintptr_t)p % 32)
		emu_wmma_die("store_matrix_sync");
	emu_warp_sync();   // every lane has computed before one writes
	if (emu_tid() % 32 == 0)
		for (int i = 0; i < 16; i++)
			for (int j = 0; j < 16; j++)
				p[l == mem_row_major ? i * ldm + j : j * ldm + i] = f.x[i * 16 + j];
	emu_warp_sync();
}
} // namespace wmma
} // namespace nvcuda

// ---- launching ---------------------------------------------------------

// Every kernel takes at most 10 pointer or integer parameters: on x86-64
// they travel in integer registers and 8-byte stack slots, so one all-int64
// signature calls any of them (an int parameter reads the low half).
typedef void (*emu_kernel)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
			   int64_t, int64_t);

#ifdef CUDA_EMU_FIBERS
[[noreturn]] inline void emu_fiber_entry()
{
	const int64_t *a = emu_args;
	((emu_kernel)emu_fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
	emu_fib[emu_cur].state = EMU_DONE;
	emu_ctx_switch(&emu_fib[emu_cur].sp, emu_sched_sp);
	abort(); // a finished fiber is never resumed
}

// A fresh stack that "returns" into emu_fiber_entry on its first switch:
// MXCSR/x87 word, six zeroed registers, then the return address, placed so
// that the entry sees the stack alignment of a called function.
inline void *emu_fiber_init(int t)
{
	uint64_t *top = (uint64_t *)(emu_stacks + (size_t)(t + 1) * EMU_STACK);
	uint64_t *sp = top - 9;
	uint32_t ctl[2] = { 0x1f80, 0x037f };
	std::memcpy(sp, ctl, 8);
	for (int i = 1; i <= 6; i++)
		sp[i] = 0;
	sp[7] = (uint64_t)(uintptr_t)&emu_fiber_entry;
	sp[8] = 0;
	return sp;
}

// Runs every fiber until it waits or ends, then releases each warp whose
// lanes named in the operation's mask all wait at it, and the block when all
// its live threads wait at __syncthreads. Nothing runnable and nothing released is a
// deadlock (divergent barriers).
inline void emu_run_block(unsigned nt)
{
	for (unsigned t = 0; t < nt; t++) {
		emu_fib[t].sp = emu_fiber_init((int)t);
		emu_fib[t].state = EMU_RUN;
	}
	for (;;) {
		bool ran = false, released = false;
		unsigned live = 0, at_block = 0;
		for (unsigned t = 0; t < nt; t++) {
			if (emu_fib[t].state != EMU_RUN)
				continue;
			emu_cur = (int)t;
			threadIdx = { t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y) };
			emu_ctx_switch(&emu_sched_sp, emu_fib[t].sp);
			ran = true;
		}
		for (unsigned w = 0; w * 32 < nt; w++) {
			unsigned n = nt - w * 32 < 32 ? nt - w * 32 : 32, mask = 0, ready = 1;
			for (unsigned l = 0; l < n && !mask; l++)
				if (emu_fib[w * 32 + l].state == EMU_WARP_WAIT)
					mask = emu_fib[w * 32 + l].mask;
			if (!mask)
				continue;
			for (unsigned l = 0; l < n; l++) {
				int s = emu_fib[w * 32 + l].state;
				if (!(mask >> l & 1))
					continue;
				if (s == EMU_DONE) {
					emu_cur = (int)(w * 32 + l);
					emu_die("a warp operation's mask names a lane that has exited");
				}
				ready &= s == EMU_WARP_WAIT;
			}
			if (!ready)
				continue;
			for (unsigned l = 0; l < n; l++)
				if (mask >> l & 1)
					emu_fib[w * 32 + l].state = EMU_RUN;
			released = true;
		}
		for (unsigned t = 0; t < nt; t++) {
			live += emu_fib[t].state != EMU_DONE;
			at_block += emu_fib[t].state == EMU_BLOCK_WAIT;
		}
		if (!live)
			return;
		if (at_block == live) {
			for (unsigned t = 0; t < nt; t++)
				if (emu_fib[t].state == EMU_BLOCK_WAIT)
					emu_fib[t].state = EMU_RUN;
			released = true;
		}
		if (!ran && !released)
			emu_die("deadlock: threads wait at different barriers (__syncthreads and a warp operation)");
	}
}

extern "C" void emu_launch(void *fn, const unsigned *g, const unsigned *b, unsigned smem, const int64_t *a)
{
	unsigned nt = b[0] * b[1] * b[2];
	if (!emu_stacks) {
		void *p = std::malloc(1024 * EMU_STACK + 64);
		if (!p)
			emu_die("no memory for the fiber stacks");
		emu_stacks = (char *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
	}
	gridDim = { g[0], g[1], g[2] };
	blockDim = { b[0], b[1], b[2] };
	emu_fn = fn;
	emu_args = a;
	emu_dyn_smem_open(smem);
	for (unsigned bz = 0; bz < g[2]; bz++)
		for (unsigned by = 0; by < g[1]; by++)
			for (unsigned bx = 0; bx < g[0]; bx++) {
				blockIdx = { bx, by, bz };
				if (smem)
					std::memset(emu_dyn_smem, 0xff, smem);
				emu_run_block(nt);
			}
	emu_dyn_smem_close();
}
#else
// One std::thread per CUDA thread of a block, kept for every block of the
// launch; blocks run one after another (an end-of-block barrier keeps a fast
// thread from starting the next block while __shared__ data is in use).
extern "C" void emu_launch(void *fn, const unsigned *g, const unsigned *b, unsigned smem, const int64_t *a)
{
	unsigned nt = b[0] * b[1] * b[2], nw = (nt + 31) / 32;
	std::barrier<> bar(nt), end(nt);
	std::vector<std::thread> th;
	gridDim = { g[0], g[1], g[2] };
	blockDim = { b[0], b[1], b[2] };
	emu_block_bar = &bar;
	emu_dyn_smem_open(smem);
	if (smem)
		std::memset(emu_dyn_smem, 0xff, smem);
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
	emu_dyn_smem_close();
}
#endif
