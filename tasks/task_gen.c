/* task_gen.c — init families × profiles (fixed and drawn), drawn shapes,
 * and dtype conversion. */
#include "tasks/task_gen.h"
#include "tasks/task_ops.h"
#include "tasks/task_rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *prof_names[] = { "own", "large", "small", "offset", "sparse", "mixed", "drawn" };

const char *task_profile_name(enum task_profile p)
{
	return p <= TASK_PROF_DRAWN ? prof_names[p] : "?";
}

int task_profile_parse(const char *s)
{
	for (int i = 0; i < TASK_PROF_COUNT; i++)
		if (!strcmp(s, prof_names[i]))
			return i;
	return -1;
}

double task_profile_scale(enum task_profile p)
{
	switch (p) {
	case TASK_PROF_LARGE: return 1e3;
	case TASK_PROF_SMALL: return 1e-3;
	case TASK_PROF_OFFSET: return 10;
	case TASK_PROF_MIXED: return 1e3;
	default: return 1;
	}
}

void task_prof_draw_params(const struct task *t, int i, uint64_t seed, struct task_prof_draw *pd)
{
	const struct task_tensor *tt = &t->tensors[i];
	struct task_rng r;

	task_rng_seed(&r, task_mix(seed, 0xd5a3ull + (uint64_t)i));
	memset(pd, 0, sizeof *pd);
	/* never within 2x of a fixed profile's scale (1e-3, 1, 1e3) */
	do
		pd->scale = pow(10.0, 6 * task_rng_uniform(&r) - 3);
	while (fabs(log10(pd->scale)) < 0.3 || fabs(fabs(log10(pd->scale)) - 3) < 0.3);
	/* a shift up, as the fixed offset profile's +10: a shift down would put
	 * every input in a tail where an op's honest float formula keeps its
	 * absolute accuracy but loses all relative accuracy (GELU's
	 * 0.5x(1 + erf) below -5.3 rounds to 0), at outputs' own scale a false
	 * mismatch; the fixed profiles never go there either */
	if (task_rng_uniform(&r) < 0.5)
		pd->offset = 12 * task_rng_uniform(&r);
	if (task_rng_uniform(&r) < 1.0 / 3)
		pd->sparsity = 0.3 + 0.65 * task_rng_uniform(&r);
	if (task_rng_uniform(&r) < 1.0 / 3)
		pd->spread = 0.5 + 2.5 * task_rng_uniform(&r);
	if (tt->init.kind == TASK_INIT_PROBS) /* only zeros keep the domain */
		pd->scale = 1, pd->offset = pd->spread = 0;
}

void task_prof_draw_str(const struct task *t, uint64_t seed, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < t->n_tensors && n < cap; i++) {
		const struct task_tensor *tt = &t->tensors[i];
		struct task_prof_draw pd;
		if (tt->role != TASK_INPUT || !task_dtype_is_float(tt->dtype) ||
		    tt->init.kind == TASK_INIT_ONES || tt->init.kind == TASK_INIT_ZEROS)
			continue;
		task_prof_draw_params(t, i, seed, &pd);
		n += (size_t)snprintf(buf + n, cap - n, "%s%s: x%.3g", n ? "; " : "", tt->name, pd.scale);
		if (pd.offset != 0 && n < cap)
			n += (size_t)snprintf(buf + n, cap - n, " %+.3g", pd.offset);
		if (pd.spread > 0 && n < cap)
			n += (size_t)snprintf(buf + n, cap - n, " spread 10^±%.2g", pd.spread);
		if (pd.sparsity > 0 && n < cap)
			n += (size_t)snprintf(buf + n, cap - n, " sparse %.0f%%", 100 * pd.sparsity);
	}
}

static double base_value(const struct task_init *in, double fan_bound, struct task_rng *r)
{
	switch (in->kind) {
	case TASK_INIT_NORMAL: return in->a + in->b * task_rng_normal(r);
	case TASK_INIT_UNIFORM: return in->a + (in->b - in->a) * task_rng_uniform(r);
	case TASK_INIT_POSITIVE: return in->a + in->b * fabs(task_rng_normal(r));
	case TASK_INIT_KAIMING: /* a: the gain (kaiming_relu: sqrt(6), He's bound); 0 reads as 1 */
		return (in->a > 0 ? in->a : 1) * fan_bound * (2 * task_rng_uniform(r) - 1);
	case TASK_INIT_ONES: return 1;
	default: return 0;
	}
}

void task_gen_tensor(const struct task *t, int i, const struct task_dimset *d,
		     enum task_profile p, uint64_t seed, double *dst)
{
	const struct task_tensor *tt = &t->tensors[i];
	int64_t shape[TASK_MAX_RANK], n = task_tensor_numel(t, i, d), fan = 1;
	struct task_rng r;

	/* profiles stress the kernel's numerics on its inputs; parameters
	 * (weights, norm affines) keep their own init, since a model whose
	 * weights are scaled by 1e3 or shifted by 10 saturates every bounded
	 * op and tests nothing */
	if (tt->role != TASK_INPUT)
		p = TASK_PROF_OWN;
	task_tensor_shape(t, i, d, shape);
	for (int k = 1; k < tt->rank; k++)
		fan *= shape[k];
	if (tt->rank == 1)
		fan = shape[0];
	if (tt->init.kind == TASK_INIT_KAIMING && tt->init.fan_dim >= 0)
		fan = d->v[tt->init.fan_dim];
	else if (tt->init.kind == TASK_INIT_KAIMING && tt->init.b > 0)
		fan = (int64_t)tt->init.b;
	task_rng_seed(&r, task_mix(seed, (uint64_t)i + 1));
	if (tt->init.kind == TASK_INIT_INDICES) {
		int64_t hi = d->v[tt->init.bound_dim];
		for (int64_t k = 0; k < n; k++)
			dst[k] = (double)(int64_t)(task_rng_uniform(&r) * (double)hi);
		return;
	}
	struct task_prof_draw pd;
	if (p == TASK_PROF_DRAWN)
		task_prof_draw_params(t, i, seed, &pd);
	if (tt->init.kind == TASK_INIT_PROBS) {
		int64_t last = shape[tt->rank - 1];
		for (int64_t row = 0; row < n / last; row++) {
			double s = 0;
			for (int64_t k = 0; k < last; k++) {
				double u = task_rng_uniform(&r);
				if (p == TASK_PROF_SPARSE && task_rng_uniform(&r) < 0.8)
					u = 0;
				if (p == TASK_PROF_DRAWN && task_rng_uniform(&r) < pd.sparsity)
					u = 0;
				dst[row * last + k] = u;
				s += u;
			}
			if (s == 0) {
				dst[row * last] = 1;
				s = 1;
			}
			for (int64_t k = 0; k < last; k++)
				dst[row * last + k] /= s;
		}
		task_gen_round(tt->dtype, dst, n);
		return;
	}
	for (int64_t k = 0; k < n; k++) {
		double v = base_value(&tt->init, 1.0 / sqrt((double)fan), &r);
		bool positive = tt->init.kind == TASK_INIT_POSITIVE;
		if (tt->init.kind == TASK_INIT_ONES || tt->init.kind == TASK_INIT_ZEROS) {
			dst[k] = v;
			continue;
		}
		switch (p) {
		case TASK_PROF_LARGE: v *= 1e3; break;
		case TASK_PROF_SMALL: v *= 1e-3; break;
		case TASK_PROF_OFFSET: v += 10; break;
		case TASK_PROF_SPARSE:
			if (task_rng_uniform(&r) < 0.8)
				v = positive ? tt->init.a : 0;
			break;
		case TASK_PROF_MIXED: v *= pow(10.0, 6 * task_rng_uniform(&r) - 3); break;
		case TASK_PROF_DRAWN:
			if (pd.spread > 0)
				v *= pow(10.0, pd.spread * (2 * task_rng_uniform(&r) - 1));
			v = pd.scale * (v + pd.offset);
			if (pd.sparsity > 0 && task_rng_uniform(&r) < pd.sparsity)
				v = positive ? tt->init.a : 0;
			break;
		default: break;
		}
		dst[k] = v;
	}
	task_gen_round(tt->dtype, dst, n);
}

/* ---- drawn shapes ---- */

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t m = a % b;
		a = b;
		b = m;
	}
	return a;
}

void task_shape_range(const struct task *t, struct task_shape_range *r)
{
	bool in_in[TASK_MAX_DIMS] = { 0 }, in_out[TASK_MAX_DIMS] = { 0 };

	memset(r, 0, sizeof *r);
	for (int i = 0; i < t->n_tensors; i++)
		for (int k = 0; k < t->tensors[i].rank; k++)
			if (t->tensors[i].dim[k] >= 0) {
				if (t->tensors[i].role == TASK_OUTPUT)
					in_out[t->tensors[i].dim[k]] = true;
				else
					in_in[t->tensors[i].dim[k]] = true;
			}
	for (int q = 0; q <= t->n_checks; q++) {
		const struct task_dimset *d = q < t->n_checks ? &t->checks[q] : &t->cpu;
		int64_t total = 0;
		for (int i = 0; i < t->n_tensors; i++)
			total += task_tensor_numel(t, i, d);
		if (total > r->budget)
			r->budget = total;
		for (int k = 0; k < t->n_dims; k++) {
			r->gcd[k] = gcd64(r->gcd[k], d->v[k]);
			if (q == 0 || d->v[k] < r->lo[k])
				r->lo[k] = d->v[k];
			if (q == 0 || d->v[k] > r->hi[k])
				r->hi[k] = d->v[k];
		}
	}
	for (int k = 0; k < t->n_dims; k++) {
		r->kind[k] = in_in[k] ? 1 : in_out[k] ? 2 : 0;
		if (r->kind[k] == 1 && r->lo[k] == r->hi[k])
			r->kind[k] = 0;
		if (r->kind[k] == 0)
			r->lo[k] = r->hi[k] = t->cpu.v[k];
	}
}

static bool is_prime(int64_t v)
{
	if (v < 2)
		return false;
	for (int64_t q = 2; q * q <= v; q++)
		if (v % q == 0)
			return false;
	return true;
}

/* The multiple of m in [lo, hi] nearest v (an odd multiple with odd_only);
 * -1 when the range holds none. */
static int64_t near_multiple(int64_t v, int64_t m, int64_t lo, int64_t hi, bool odd_only)
{
	int64_t kl = (lo + m - 1) / m, kh = hi / m, k = (v + m / 2) / m;

	if (k < kl)
		k = kl;
	if (k > kh)
		k = kh;
	if (odd_only && !(k & 1))
		k = k + 1 <= kh && (k - 1 < kl || v >= k * m) ? k + 1 : k - 1;
	return k >= kl && k <= kh && k >= 1 && (!odd_only || (k & 1)) ? k * m : -1;
}

/* v made no multiple of 8 where [lo, hi] holds such a value: odd, or
 * 32q±(1..7) (the ragged tails of a 32-wide loop, evens included). */
static int64_t ragged(int64_t v, int64_t lo, int64_t hi, uint64_t (*r64)(void *), void *ctx)
{
	if ((r64(ctx) & 1) && hi - lo >= 40) {
		int64_t off = 1 + (int64_t)(r64(ctx) % 7), q = (v + 16) / 32 * 32;
		v = (r64(ctx) & 1) ? q + off : q - off;
	} else {
		v |= 1;
	}
	if (v > hi)
		v = hi % 8 ? hi : hi - 1;
	if (v < lo)
		v = lo % 8 ? lo : lo + 1;
	return v;
}

/* One value in [lo, hi], log-uniform, then made a member of cls where the
 * range holds one: a multiple of 32 (else of 16, else 8), 8 or 16 times an
 * odd number, a prime (else odd), or ragged. A range that holds no member
 * (no multiple of 8 in [3, 7]) gets a ragged value instead: forcing the
 * nearest power of two there could give a value the task never accepts
 * (an even kernel size). g > 1: a multiple of g (channels divisible by the
 * groups); an aligned one where the range holds a multiple of both, else
 * g times a member of cls. */
static int64_t draw_dim(int64_t lo, int64_t hi, int64_t g, enum task_shape_class cls,
			uint64_t (*r64)(void *), void *ctx)
{
	double u = (double)(r64(ctx) >> 11) * 0x1.0p-53;
	int64_t v = (int64_t)exp(log((double)lo) + u * (log((double)hi + 1) - log((double)lo))), p = -1;

	if (v < lo)
		v = lo;
	if (v > hi)
		v = hi;
	if (g > 1) {
		for (int64_t m = 32; cls == TASK_SHAPE_ALIGNED && m >= 8 && p < 0; m /= 2)
			p = near_multiple(v, m / gcd64(m, g) * g, lo, hi, false);
		return p > 0 ? p : g * draw_dim((lo + g - 1) / g, hi / g, 1, cls, r64, ctx);
	}
	switch (cls) {
	case TASK_SHAPE_ALIGNED:
		for (int64_t m = 32; m >= 8 && p < 0; m /= 2)
			p = near_multiple(v, m, lo, hi, false);
		break;
	case TASK_SHAPE_MID8: {
		int64_t m = (r64(ctx) & 1) ? 16 : 8;
		p = near_multiple(v, m, lo, hi, true);
		if (p < 0)
			p = near_multiple(v, 24 - m, lo, hi, true);
		if (p < 0)
			p = near_multiple(v, 8, lo, hi, false);
		break;
	}
	case TASK_SHAPE_PRIME:
		for (p = v; p <= hi && !is_prime(p); p++)
			;
		if (p > hi)
			for (p = v; p >= lo && !is_prime(p); p--)
				;
		if (p < lo)
			p = -1;
		break;
	default:
		break;
	}
	if (p < 0)
		p = ragged(v, lo, hi, r64, ctx);
	return p < lo || p > hi ? lo : p;
}

enum task_shape_class task_shape_class_pick(int i, int want, uint64_t word)
{
	static const enum task_shape_class order[] = { TASK_SHAPE_ALIGNED, TASK_SHAPE_PRIME,
						       TASK_SHAPE_MID8, TASK_SHAPE_RAGGED };
	if (want == 1)
		return order[word & 1];
	if (i < 4)
		return order[i];
	return order[word % 4];
}

/* Shape inference over a dim set, solving derived dims from what the ops
 * produce; false when an op rejects it or a declared shape disagrees. */
static bool solve_shapes(const struct task *t, const struct task_shape_range *r, struct task_dimset *d)
{
	struct task_val *v = calloc((size_t)t->n_values, sizeof *v);
	bool set[TASK_MAX_DIMS], ok = false;

	if (!v)
		return false;
	for (int k = 0; k < t->n_dims; k++)
		set[k] = r->kind[k] != 2;
	for (int i = 0; i < t->n_tensors; i++) {
		v[i].rank = t->tensors[i].rank;
		if (t->tensors[i].role == TASK_OUTPUT)
			continue;
		task_tensor_shape(t, i, d, v[i].shape);
		/* a drawn combination of listed extents may hold more than any
		 * listed shape: counted with overflow checks, refused over the cap */
		if (!task_shape_numel(v[i].shape, v[i].rank, &v[i].n))
			goto out;
	}
	for (int n = 0; n < t->n_nodes; n++) {
		const struct task_node *nd = &t->nodes[n];
		struct task_val in[TASK_MAX_IN], out[TASK_MAX_OUT];
		struct cr_err e;
		for (int k = 0; k < nd->n_in; k++)
			in[k] = v[nd->in[k]];
		memset(out, 0, sizeof out);
		cr_err_init(&e);
		if (nd->def->infer(nd, in, nd->n_in, out, &e))
			goto out;
		for (int k = 0; k < nd->n_out; k++) {
			int o = nd->out[k];
			if (o >= t->n_tensors) {
				v[o] = out[k];
				continue;
			}
			const struct task_tensor *tt = &t->tensors[o];
			if (out[k].rank != tt->rank)
				goto out;
			for (int a = 0; a < tt->rank; a++) {
				int dim = tt->dim[a];
				if (dim < 0 ? out[k].shape[a] != tt->lit[a]
					    : set[dim] && d->v[dim] != out[k].shape[a])
					goto out;
				if (dim >= 0 && !set[dim]) {
					if (out[k].shape[a] < 1)
						goto out;
					d->v[dim] = out[k].shape[a];
					set[dim] = true;
				}
			}
			v[o] = out[k];
		}
	}
	ok = true;
	for (int k = 0; k < t->n_dims; k++)
		ok &= set[k];
out:
	free(v);
	return ok;
}

bool task_gen_shape(const struct task *t, const struct task_shape_range *r, int attempt,
		    enum task_shape_class cls, uint64_t (*r64)(void *), void *ctx,
		    struct task_dimset *out)
{
	int64_t total = 0;
	double shrink = attempt < 8 ? 1 : pow(0.8, (attempt - 4) / 4);

	memset(out, 0, sizeof *out);
	for (int k = 0; k < t->n_dims; k++) {
		int64_t lo = r->lo[k], hi = r->hi[k], g = (attempt & 1) ? r->gcd[k] : 1;
		if (r->kind[k] != 1) {
			out->v[k] = lo;
			continue;
		}
		hi = lo + (int64_t)((double)(hi - lo) * shrink);
		out->v[k] = draw_dim(lo, hi, g > 1 && hi / g >= (lo + g - 1) / g ? g : 1, cls, r64, ctx);
	}
	if (!solve_shapes(t, r, out))
		return false;
	for (int i = 0; i < t->n_tensors; i++) {
		int64_t shape[TASK_MAX_RANK], n;
		task_tensor_shape(t, i, out, shape);
		if (!task_shape_numel(shape, t->tensors[i].rank, &n) || !task_add(total, n, &total))
			return false;
	}
	/* a listed shape is checked anyway: a drawn one must be new */
	for (int q = 0; q <= t->n_checks; q++)
		if (!memcmp(q < t->n_checks ? &t->checks[q] : &t->cpu, out, sizeof *out))
			return false;
	return total <= r->budget;
}

static uint16_t f32_to_f16(float f)
{
	_Float16 h = (_Float16)f;
	uint16_t u;
	memcpy(&u, &h, 2);
	return u;
}

static float f16_to_f32(uint16_t u)
{
	_Float16 h;
	memcpy(&h, &u, 2);
	return (float)h;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
	return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

void task_gen_round(enum task_dtype dt, double *v, int64_t n)
{
	for (int64_t k = 0; k < n; k++) {
		switch (dt) {
		case TASK_F32: v[k] = (float)v[k]; break;
		case TASK_F16: v[k] = f16_to_f32(f32_to_f16((float)v[k])); break;
		case TASK_BF16: v[k] = bf16_to_f32(f32_to_bf16((float)v[k])); break;
		default: break;
		}
	}
}

void task_gen_store(enum task_dtype dt, const double *src, void *dst, int64_t n)
{
	for (int64_t k = 0; k < n; k++) {
		switch (dt) {
		case TASK_F32: ((float *)dst)[k] = (float)src[k]; break;
		case TASK_F16: ((uint16_t *)dst)[k] = f32_to_f16((float)src[k]); break;
		case TASK_BF16: ((uint16_t *)dst)[k] = f32_to_bf16((float)src[k]); break;
		case TASK_I32: ((int32_t *)dst)[k] = (int32_t)src[k]; break;
		case TASK_I64: ((int64_t *)dst)[k] = (int64_t)src[k]; break;
		}
	}
}

void task_gen_load(enum task_dtype dt, const void *src, double *dst, int64_t n)
{
	for (int64_t k = 0; k < n; k++) {
		switch (dt) {
		case TASK_F32: dst[k] = ((const float *)src)[k]; break;
		case TASK_F16: dst[k] = f16_to_f32(((const uint16_t *)src)[k]); break;
		case TASK_BF16: dst[k] = bf16_to_f32(((const uint16_t *)src)[k]); break;
		case TASK_I32: dst[k] = ((const int32_t *)src)[k]; break;
		case TASK_I64: dst[k] = (double)((const int64_t *)src)[k]; break;
		}
	}
}
