/* check.c — tolerance comparison, degeneracy tests, guard patterns. */
#include "checks/check.h"
#include "tasks/task_rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double check_rms(const double *v, int64_t n)
{
	double s = 0;
	int64_t m = 0;
	for (int64_t i = 0; i < n; i++)
		if (isfinite(v[i])) {
			s += v[i] * v[i];
			m++;
		}
	return m ? sqrt(s / (double)m) : 0;
}

void check_compare(const double *got, const double *exp, const double *base, int64_t n,
		   double atol, double rtol, double allow_factor, struct check_cmp *out)
{
	double scale = fmax(1.0, check_rms(exp, n)), worst_excess = -INFINITY, allow;

	memset(out, 0, sizeof *out);
	out->n = n;
	out->pass = true;
	out->worst = n > 0 ? 0 : -1;
	for (int64_t i = 0; base && i < n; i++)
		if (isfinite(base[i]) && isfinite(exp[i]))
			out->base_max_abs = fmax(out->base_max_abs, fabs(base[i] - exp[i]));
	allow = allow_factor * out->base_max_abs;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs(got[i] - exp[i]);
		double tol = atol * scale + rtol * fabs(exp[i]);
		double excess;
		bool bad = !(d <= tol || d <= allow || got[i] == exp[i] ||
			     (base && !isfinite(base[i]) && got[i] == base[i]));
		if (!isnan(d)) {
			if (d > out->max_abs)
				out->max_abs = d;
			if (exp[i] != 0 && d / fabs(exp[i]) > out->max_rel)
				out->max_rel = d / fabs(exp[i]);
		} else if (bad) {
			out->max_abs = out->max_rel = INFINITY;
		}
		excess = !bad ? -INFINITY : isnan(d) ? INFINITY : d - tol;
		if (bad) {
			out->n_bad++;
			out->pass = false;
		}
		if (excess > worst_excess || (i == 0 && out->pass)) {
			worst_excess = excess;
			out->worst = i;
		}
	}
	if (out->worst >= 0) {
		out->got = got[out->worst];
		out->exp = exp[out->worst];
	}
}

bool check_degenerate(const double *got, const double *ref, const double *base, int64_t n,
		      double tol, char *why, size_t cap)
{
	bool ref_const = true, got_const = true, ref_zero = true, got_zero = true;

	for (int64_t i = 0; i < n; i++) {
		if (!isfinite(got[i]) && isfinite(ref[i]) && !(base && got[i] == base[i])) {
			snprintf(why, cap, "%s at element %lld (reference %.6g)",
				 isnan(got[i]) ? "NaN" : "Inf", (long long)i, ref[i]);
			return true;
		}
		if (fabs(ref[i] - ref[0]) > tol)
			ref_const = false;
		if (got[i] != got[0])
			got_const = false;
		if (fabs(ref[i]) > tol)
			ref_zero = false;
		if (got[i] != 0)
			got_zero = false;
	}
	if (n >= 2 && got_const && !ref_const) {
		snprintf(why, cap, "constant output %.6g where the reference varies", got[0]);
		return true;
	}
	if (got_zero && !ref_zero) {
		snprintf(why, cap, "all-zero output where the reference is not");
		return true;
	}
	return false;
}

bool check_equals_input(const double *got, const double *inp, const double *ref, int64_t n,
			double tol)
{
	bool ref_differs = false;
	for (int64_t i = 0; i < n; i++) {
		if (got[i] != inp[i] && !(isnan(got[i]) && isnan(inp[i])))
			return false;
		if (fabs(ref[i] - inp[i]) > tol)
			ref_differs = true;
	}
	return ref_differs;
}

void check_fill_pattern(void *p, size_t n, uint64_t key)
{
	struct task_rng r;
	unsigned char *b = p;
	size_t i = 0;
	task_rng_seed(&r, key);
	for (; i + 8 <= n; i += 8) {
		uint64_t v = task_rng_next(&r);
		memcpy(b + i, &v, 8);
	}
	if (i < n) {
		uint64_t v = task_rng_next(&r);
		memcpy(b + i, &v, n - i);
	}
}

int64_t check_verify_pattern(const void *p, size_t n, uint64_t key)
{
	struct task_rng r;
	const unsigned char *b = p;
	size_t i = 0;
	task_rng_seed(&r, key);
	for (; i < n; i += 8) {
		uint64_t v = task_rng_next(&r);
		size_t m = n - i < 8 ? n - i : 8;
		if (memcmp(b + i, &v, m)) {
			for (size_t k = 0; k < m; k++)
				if (b[i + k] != ((unsigned char *)&v)[k])
					return (int64_t)(i + k);
		}
	}
	return -1;
}

void check_poison(void *p, size_t n, int kind, uint64_t key)
{
	if (kind == 0) {
		uint32_t nan = 0x7fc0dead;
		unsigned char *b = p;
		size_t i = 0;
		for (; i + 4 <= n; i += 4)
			memcpy(b + i, &nan, 4);
		memset(b + i, 0xff, n - i);
	} else {
		check_fill_pattern(p, n, key);
	}
}
