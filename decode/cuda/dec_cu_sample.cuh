// dec_cu_sample.cuh — sampling on the device: one block of
// DEC_CU_SAMPLE_THREADS threads per draw reads one row of logits and returns
// a token id, how many tokens survived the filters, the top logprobs of the
// raw logits and the token's own logprob. Only those come back to the host,
// never the row.
//
// What it computes is dec_sample.h's pipeline, step for step:
//   greedy (temperature <= 0): the argmax, lowest id on ties;
//   w = logit / temperature; top-k keeps the k best by (w, then lower id);
//   p = e^(w - max) / Σ over the survivors (e^ as the CPU's: Cephes'
//   polynomial with the same fused multiply-adds); top-p keeps the shortest prefix,
//   in order of (p descending, id ascending), whose mass reaches top_p;
//   min-p keeps p >= min_p · p_max; the draw walks the kept tokens in that
//   order (or in id order when top-p is off and more than 4096 tokens
//   survive top-k, as the CPU does) and takes the first whose running mass
//   exceeds u times the kept mass. One survivor: u is not used (the host
//   then puts the uniform back in the stream, as dec_sample does).
//
// How, without sorting the vocabulary. Every token gets a 64-bit key that
// orders it: the order-preserving bits of its value above, the complement of
// its id below, so keys are distinct and "larger" means "earlier". A
// k-th-best or a running-mass crossing is then found by radix descent over
// the key, 8 bits a pass (a histogram of counts, or of masses, of the tokens
// that share the prefix so far; usually 2-4 passes, a pass ends the descent
// when one token is left). Masses are fixed-point integers (p · 2^60) so
// every sum is exact and the result does not depend on the order in which
// the block's threads add: a draw is a function of its row and its settings
// alone, whatever else shares the launch. Floating-point sums (the softmax
// normaliser, log-sum-exp) use the fixed-order block reductions of
// dec_cu_common.cuh.
//
// It agrees with the CPU sampler up to rounding: the probabilities are the
// CPU's bit for bit but for the order of the normaliser's sum (a tree here,
// a loop there), so the same tokens survive and the same token is drawn
// unless u or a top-p cut falls within ~1e-7 of a boundary (the CPU's
// running sums round; here they are exact).
#ifndef DEC_CU_SAMPLE_CUH
#define DEC_CU_SAMPLE_CUH

#include "decode/cuda/dec_cu_common.cuh"

typedef unsigned long long u64;

#define SMP_SORT_MAX 4096 // dec_sample.c's SORT_MAX: above it, without top-p, id order

struct smp_shared {
	int hist[256];
	u64 mass[256];
	u64 red[32];
	double redd[32];
	float redf[32];
	int digit, cnt, found;
	u64 rest;
	int n_top;
	u64 top[DEC_CU_MAX_LOGPROBS];
};

// log Σ e^l over the raw row: max + log Σ e^(l - max), the sum in double
// (fixed-order block reduction), as the top logprobs and the token's
// logprob normalise; agrees with the CPU's float sum to ~1e-6.
static __device__ float raw_lse(const float *l, int n, smp_shared *sh)
{
	float mx = -INFINITY;
	double s = 0.0;

	for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x)
		mx = fmaxf(mx, l[i]);
	mx = block_max(mx, sh->redf);
	for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x)
		s += (double)expf(l[i] - mx);
	s = block_sum_d(s, sh->redd);
	return mx + (float)log(s);
}

// Order-preserving bits of a float (NaN below everything, -0 as +0).
static __device__ __forceinline__ uint32_t fkey(float x)
{
	uint32_t u = __float_as_uint(x == 0.0f ? 0.0f : x);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0;
	return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}
// larger = earlier: value descending, then id ascending
static __device__ __forceinline__ u64 ckey(float x, int id)
{
	return ((u64)fkey(x) << 32) | (u64)(~(uint32_t)id);
}
static __device__ __forceinline__ int ckey_id(u64 k)
{
	return (int)~(uint32_t)k;
}
// a probability in fixed point: 2^60 is 1
static __device__ __forceinline__ u64 fix60(float p)
{
	return p > 0.0f ? (u64)((double)p * 0x1p60) : 0;
}

static __device__ __forceinline__ u64 block_max_u64(u64 v, u64 *red)
{
	int w = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32, nw = (int)blockDim.x / 32;
	for (int o = 16; o; o >>= 1) {
		u64 t = __shfl_xor_sync(FULL, v, o);
		v = t > v ? t : v;
	}
	__syncthreads();
	if (l == 0)
		red[w] = v;
	__syncthreads();
	v = l < nw ? red[l] : 0;
	for (int o = 16; o; o >>= 1) {
		u64 t = __shfl_xor_sync(FULL, v, o);
		v = t > v ? t : v;
	}
	return v;
}
static __device__ __forceinline__ u64 block_sum_u64(u64 v, u64 *red)
{
	int w = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32, nw = (int)blockDim.x / 32;
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(FULL, v, o);
	__syncthreads();
	if (l == 0)
		red[w] = v;
	__syncthreads();
	v = l < nw ? red[l] : 0;
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(FULL, v, o);
	return v;
}
// The sum of v over the threads before this one (thread order), and the
// block's total in *total.
static __device__ __forceinline__ u64 block_excl_scan_u64(u64 v, u64 *red, u64 *total)
{
	int w = (int)threadIdx.x / 32, l = (int)threadIdx.x % 32, nw = (int)blockDim.x / 32;
	u64 inc = v;
	for (int o = 1; o < 32; o <<= 1) {
		u64 y = __shfl_up_sync(FULL, inc, o);
		if (l >= o)
			inc += y;
	}
	__syncthreads();
	if (l == 31)
		red[w] = inc;
	__syncthreads();
	if (w == 0) {
		u64 s = l < nw ? red[l] : 0;
		for (int o = 1; o < 32; o <<= 1) {
			u64 y = __shfl_up_sync(FULL, s, o);
			if (l >= o)
				s += y;
		}
		__syncwarp();
		if (l < nw)
			red[l] = s;
	}
	__syncthreads();
	u64 base = w ? red[w - 1] : 0;
	*total = red[nw - 1];
	__syncthreads();
	return base + inc - v;
}

// The key of the token ranked r (1-based, r <= the set's size) among those
// f admits, keys descending: exactly r admitted tokens have a key >= it.
// f(i, &key) says whether token i is in the set and gives its key.
template <class F>
static __device__ u64 select_rank(int n, const F &f, u64 r, smp_shared *sh)
{
	int t = (int)threadIdx.x, nt = (int)blockDim.x;
	u64 prefix = 0, mask = 0;

	for (int shift = 56; shift >= 0; shift -= 8) {
		for (int b = t; b < 256; b += nt)
			sh->hist[b] = 0;
		__syncthreads();
		for (int i = t; i < n; i += nt) {
			u64 k;
			if (f(i, &k) && (k & mask) == prefix)
				atomicAdd(&sh->hist[(k >> shift) & 255], 1);
		}
		__syncthreads();
		if (t == 0) {
			u64 above = 0;
			int b = 255;
			while (b > 0 && above + (u64)sh->hist[b] < r)
				above += (u64)sh->hist[b--];
			sh->digit = b;
			sh->cnt = sh->hist[b];
			sh->rest = r - above;
		}
		__syncthreads();
		prefix |= (u64)sh->digit << shift;
		mask |= (u64)255 << shift;
		r = sh->rest;
		int cnt = sh->cnt;
		__syncthreads();
		if (cnt == 1 && shift) { // one token has this prefix: its whole key
			u64 best = 0;
			for (int i = t; i < n; i += nt) {
				u64 k;
				if (f(i, &k) && (k & mask) == prefix)
					best = k;
			}
			return block_max_u64(best, sh->red);
		}
	}
	return prefix;
}

// The key of the first token, keys descending over the set f admits, at
// which the running sum of the masses exceeds x; 0 (no token has that key)
// when the set's mass is <= x. f(i, &key, &mass).
template <class F>
static __device__ u64 select_mass(int n, const F &f, u64 x, smp_shared *sh)
{
	int t = (int)threadIdx.x, nt = (int)blockDim.x;
	u64 prefix = 0, mask = 0;

	for (int shift = 56; shift >= 0; shift -= 8) {
		for (int b = t; b < 256; b += nt) {
			sh->hist[b] = 0;
			sh->mass[b] = 0;
		}
		__syncthreads();
		for (int i = t; i < n; i += nt) {
			u64 k, m;
			if (f(i, &k, &m) && (k & mask) == prefix) {
				atomicAdd(&sh->hist[(k >> shift) & 255], 1);
				atomicAdd(&sh->mass[(k >> shift) & 255], m);
			}
		}
		__syncthreads();
		if (t == 0) {
			u64 above = 0;
			int b = 255;
			while (b >= 0 && above + sh->mass[b] <= x)
				above += sh->mass[b--];
			sh->digit = b;
			sh->cnt = b >= 0 ? sh->hist[b] : 0;
			sh->rest = x - above;
		}
		__syncthreads();
		int digit = sh->digit, cnt = sh->cnt;
		x = sh->rest;
		__syncthreads();
		if (digit < 0)
			return 0;
		prefix |= (u64)digit << shift;
		mask |= (u64)255 << shift;
		if (cnt == 1 && shift) {
			u64 best = 0;
			for (int i = t; i < n; i += nt) {
				u64 k, m;
				if (f(i, &k, &m) && (k & mask) == prefix)
					best = k;
			}
			return block_max_u64(best, sh->red);
		}
	}
	return prefix;
}

// The greedy token: the largest logit, the lowest id on ties.
static __device__ int argmax_raw(const float *l, int n, smp_shared *sh)
{
	u64 best = 0;
	for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x) {
		u64 k = ckey(l[i], i);
		best = k > best ? k : best;
	}
	return ckey_id(block_max_u64(best, sh->red));
}

// The top K (K <= DEC_CU_MAX_LOGPROBS, K <= n) of the raw logits and their
// log-softmax (lse: raw_lse of the row): ids and logprobs, best first, ties
// to the lower id.
static __device__ void top_logprobs(const float *l, int n, int K, float lse, int32_t *ids, float *lps,
				    smp_shared *sh)
{
	int t = (int)threadIdx.x, nt = (int)blockDim.x, m = 1;
	u64 th = select_rank(n, [&](int i, u64 *k) { *k = ckey(l[i], i); return true; }, (u64)K, sh);
	while (m < K)
		m <<= 1;
	for (int i = t; i < m; i += nt)
		sh->top[i] = 0;
	if (t == 0)
		sh->n_top = 0;
	__syncthreads();
	for (int i = t; i < n; i += nt) {
		u64 k = ckey(l[i], i);
		if (k >= th) {
			int slot = atomicAdd(&sh->n_top, 1);
			if (slot < K)
				sh->top[slot] = k;
		}
	}
	__syncthreads();
	// bitonic sort, descending
	for (int k = 2; k <= m; k <<= 1)
		for (int j = k >> 1; j > 0; j >>= 1) {
			for (int i = t; i < m; i += nt) {
				int p = i ^ j;
				if (p > i) {
					u64 a = sh->top[i], b = sh->top[p];
					if ((i & k) == 0 ? a < b : a > b) {
						sh->top[i] = b;
						sh->top[p] = a;
					}
				}
			}
			__syncthreads();
		}
	for (int i = t; i < K; i += nt) {
		int id = ckey_id(sh->top[i]);
		ids[i] = id;
		lps[i] = l[id] - lse;
	}
	__syncthreads();
}

// res[4 * draw] = the token, res[4 * draw + 1] = how many survived the
// filters (1 for greedy), res[4 * draw + 2] = with want_lp, the token's
// logprob under the raw logits (f32 bits; 0 otherwise); top_ids / top_lp
// [draws, kmax].
extern "C" __global__ void __launch_bounds__(DEC_CU_SAMPLE_THREADS)
k_sample(const float *logits, int n, const struct dec_cu_draw *draws, int32_t *res, int32_t *top_ids,
	 float *top_lp, int kmax)
{
	__shared__ smp_shared sh;
	const struct dec_cu_draw *d = &draws[blockIdx.x];
	const float *l = logits + (size_t)d->row * n;
	int t = (int)threadIdx.x, nt = (int)blockDim.x, id = 0, kept = 1;
	float T = fbits(d->temp_bits), lse = 0.0f;

	if (d->n_logprobs > 0 || d->want_lp)
		lse = raw_lse(l, n, &sh);
	if (d->n_logprobs > 0)
		top_logprobs(l, n, d->n_logprobs < n ? d->n_logprobs : n, lse, top_ids + (size_t)blockIdx.x * kmax,
			     top_lp + (size_t)blockIdx.x * kmax, &sh);
	if (T <= 0.0f) {
		id = argmax_raw(l, n, &sh);
	} else {
		int top_k = d->top_k, use_k = top_k > 0 && top_k < n;
		float top_p = fbits(d->top_p_bits), min_p = fbits(d->min_p_bits), mx = -INFINITY;
		u64 tk = 0, tp = 0;
		double sum = 0.0;

		if (use_k)
			tk = select_rank(n, [&](int i, u64 *k) { *k = ckey(l[i] / T, i); return true; }, (u64)top_k, &sh);
		for (int i = t; i < n; i += nt)
			mx = fmaxf(mx, l[i] / T);
		mx = block_max(mx, sh.redf);
		// in S: the survivors of top-k
		auto in_s = [&](int i, float w) { return !use_k || ckey(w, i) >= tk; };
		// e^(w - max) as the CPU computes it: Cephes' exp on the top-k path,
		// and on the whole vocabulary the AVX2 table's vector exp (Cephes'
		// for all but the last n % 8, expf for those); a -inf logit gives 0
		int nvec = use_k ? n : n & ~7;
		auto ex = [&](int i, float w) {
			return l[i] == -INFINITY ? 0.0f : i < nvec ? exp_cephes(w - mx) : expf(w - mx);
		};
		for (int i = t; i < n; i += nt) {
			float w = l[i] / T;
			if (in_s(i, w))
				sum += (double)ex(i, w);
		}
		sum = block_sum_d(sum, sh.redd);
		if (!(sum > 0.0 && sum < (double)INFINITY)) { // no distribution: greedy, as the CPU
			id = argmax_raw(l, n, &sh);
			goto done;
		}
		double inv = 1.0 / sum;
		float pmax = (float)inv, thr = min_p * pmax;
		// p of token i (-1 outside S), as dec_sampler_dist computes it
		auto prob = [&](int i) {
			float w = l[i] / T;
			return in_s(i, w) ? (float)((double)ex(i, w) * inv) : -1.0f;
		};
		if (top_p < 1.0f) {
			double need = ceil((double)top_p * 0x1p60);
			auto f = [&](int i, u64 *k, u64 *m) {
				float p = prob(i);
				*k = ckey(p, i);
				*m = fix60(p);
				return p >= 0.0f;
			};
			if (need <= 0.0) { // the first token alone reaches it
				u64 best = 0;
				for (int i = t; i < n; i += nt) {
					u64 k, m;
					if (f(i, &k, &m))
						best = k > best ? k : best;
				}
				tp = block_max_u64(best, sh.red);
			} else {
				tp = select_mass(n, f, (u64)need - 1, &sh); // 0: all of S
			}
		}
		auto keep = [&](int i, u64 *k, u64 *m) {
			float p = prob(i);
			*k = ckey(p, i);
			*m = fix60(p);
			return p >= 0.0f && *k >= tp && (!(min_p > 0.0f) || p >= thr);
		};
		int cnt = 0;
		u64 best = 0, total = 0;
		for (int i = t; i < n; i += nt) {
			u64 k, m;
			if (keep(i, &k, &m)) {
				cnt++;
				total += m;
				best = k > best ? k : best;
			}
		}
		cnt = (int)block_sum_u64((u64)cnt, sh.red);
		total = block_sum_u64(total, sh.red);
		best = block_max_u64(best, sh.red);
		kept = cnt;
		id = ckey_id(best);
		if (cnt == 0) { // min-p above 1 leaves nothing: greedy, as the CPU
			id = argmax_raw(l, n, &sh);
			kept = 1;
		}
		if (cnt > 1 && total > 0) {
			double u = (double)d->u53 * 0x1p-53;
			u64 x = (u64)(u * (double)total);
			x = x < total ? x : total - 1;
			if (top_p < 1.0f || (use_k ? top_k : n) <= SMP_SORT_MAX) {
				u64 k = select_mass(n, keep, x, &sh);
				if (k)
					id = ckey_id(k);
			} else { // id order: each thread a contiguous chunk, scanned
				int chunk = (n + nt - 1) / nt, lo = t * chunk, hi = imin(n, lo + chunk);
				u64 own = 0, all;
				for (int i = lo; i < hi; i++) {
					u64 k, m;
					if (keep(i, &k, &m))
						own += m;
				}
				u64 cum = block_excl_scan_u64(own, sh.red, &all);
				if (t == 0)
					sh.found = -1;
				__syncthreads();
				if (cum <= x && x < cum + own)
					for (int i = lo; i < hi; i++) {
						u64 k, m;
						if (keep(i, &k, &m) && (cum += m) > x) {
							sh.found = i;
							break;
						}
					}
				__syncthreads();
				if (sh.found >= 0)
					id = sh.found;
			}
		}
	}
done:
	if (t == 0) {
		int32_t *o = res + (size_t)DEC_CU_SAMPLE_RES * blockIdx.x;
		o[0] = id;
		o[1] = kept;
		o[2] = d->want_lp ? (int32_t)__float_as_uint(l[id] - lse) : 0;
		o[3] = 0;
	}
}

#endif
