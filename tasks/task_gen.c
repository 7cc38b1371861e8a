/* task_gen.c — init families × profiles, and dtype conversion. */
#include "tasks/task_gen.h"
#include "tasks/task_rng.h"

#include <string.h>

static const char *prof_names[] = { "own", "large", "small", "offset", "sparse", "mixed" };

const char *task_profile_name(enum task_profile p)
{
	return p < TASK_PROF_COUNT ? prof_names[p] : "?";
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

static double base_value(const struct task_init *in, double fan_bound, struct task_rng *r)
{
	switch (in->kind) {
	case TASK_INIT_NORMAL: return in->a + in->b * task_rng_normal(r);
	case TASK_INIT_UNIFORM: return in->a + (in->b - in->a) * task_rng_uniform(r);
	case TASK_INIT_POSITIVE: return in->a + in->b * fabs(task_rng_normal(r));
	case TASK_INIT_KAIMING: return fan_bound * (2 * task_rng_uniform(r) - 1);
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
	task_rng_seed(&r, task_mix(seed, (uint64_t)i + 1));
	if (tt->init.kind == TASK_INIT_INDICES) {
		int64_t hi = d->v[tt->init.bound_dim];
		for (int64_t k = 0; k < n; k++)
			dst[k] = (double)(int64_t)(task_rng_uniform(&r) * (double)hi);
		return;
	}
	if (tt->init.kind == TASK_INIT_PROBS) {
		int64_t last = shape[tt->rank - 1];
		for (int64_t row = 0; row < n / last; row++) {
			double s = 0;
			for (int64_t k = 0; k < last; k++) {
				double u = task_rng_uniform(&r);
				if (p == TASK_PROF_SPARSE && task_rng_uniform(&r) < 0.8)
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
		default: break;
		}
		dst[k] = v;
	}
	task_gen_round(tt->dtype, dst, n);
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
