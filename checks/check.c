/* check.c — tolerance comparison (worst element, aggregate error, bias),
 * degeneracy tests, guard patterns. */
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

void check_tol_default(struct check_tol *tol, double atol, double rtol, double scale)
{
	memset(tol, 0, sizeof *tol);
	tol->atol = atol;
	tol->rtol = rtol;
	tol->scale = scale;
	tol->allow_factor = CHECK_ALLOW_FACTOR;
	tol->dist = true;
	tol->agg_factor = CHECK_AGG_FACTOR;
	tol->agg_floor = CHECK_AGG_FLOOR;
	tol->bias_factor = CHECK_BIAS_FACTOR;
	tol->bias_floor = CHECK_BIAS_FLOOR;
	tol->few_floor = CHECK_FEW_FLOOR;
	tol->cond_factor = CHECK_COND_FACTOR;
	tol->cond_factor_later = CHECK_COND_FACTOR_LATER;
}

double check_scale(const double *rms, int n_out, int k)
{
	double top = 0;
	for (int j = 0; j < n_out; j++)
		if (rms[j] > top)
			top = rms[j];
	return rms[k] < CHECK_NEAR_ZERO * top ? top : rms[k];
}

double check_cond_allowance(const struct check_tol *tol, int64_t i)
{
	double a = tol->cond_factor * (tol->spread_first ? tol->spread_first[i] : tol->spread[i]);
	if (tol->spread_first)
		a = fmax(a, tol->cond_factor_later * tol->spread[i]);
	return isfinite(a) ? a : 0;
}

/* The conditioning allowance of element i (check.h): check_cond_allowance
 * where that exceeds its tolerance lim, else 0. */
static double cond_allow(const struct check_tol *tol, int64_t i, double lim)
{
	double a;
	if (!tol->spread)
		return 0;
	a = check_cond_allowance(tol, i);
	return a > lim ? a : 0;
}

/* The worst-element bound; fills everything but the distribution figures. */
static void compare_elements(const double *got, const double *exp, const double *base, int64_t n,
			     const struct check_tol *tol, struct check_cmp *out)
{
	double worst_excess = -INFINITY, allow, top = 0;

	for (int64_t i = 0; base && i < n; i++)
		if (isfinite(base[i]) && isfinite(exp[i]))
			out->base_max_abs = fmax(out->base_max_abs, fabs(base[i] - exp[i]));
	allow = tol->allow_factor * out->base_max_abs;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs(got[i] - exp[i]);
		double lim = tol->atol * tol->scale + tol->rtol * fabs(exp[i]);
		double excess;
		bool bad = !(d <= lim || d <= allow || got[i] == exp[i] ||
			     (base && !isfinite(base[i]) && got[i] == base[i]));
		if (bad && d <= cond_allow(tol, i, lim)) {
			bad = false;
			out->n_cond++;
		}
		if (!isnan(d)) {
			if (d > top) {
				top = d;
				out->max_abs_at = i;
			}
			if (d > out->max_abs)
				out->max_abs = d;
			if (exp[i] != 0 && d / fabs(exp[i]) > out->max_rel)
				out->max_rel = d / fabs(exp[i]);
		} else if (bad) {
			out->max_abs = out->max_rel = INFINITY;
		}
		excess = !bad ? -INFINITY : isnan(d) ? INFINITY : d - lim;
		if (bad) {
			out->n_bad++;
			out->pass = false;
		}
		if (excess > worst_excess || (i == 0 && out->pass)) {
			worst_excess = excess;
			out->worst = i;
		}
	}
}

/* e less what the conditioning allowance a explains: 0 within ±a. */
static double beyond(double e, double a)
{
	return e > a ? e - a : e < -a ? e + a : 0;
}

/* The error distribution: rms and mean of the signed error over the
 * elements whose reference (and, for the baseline, baseline) is finite and
 * that got right or within reach (an element the element bound accepted
 * as a shared overflow is left out). With the conditioning measured, each
 * error counts only beyond cond_factor × the reference's spread there
 * (candidate and baseline alike): what float-level noise moves the
 * reference by is no systematic error (a ReLU flip before a BatchNorm
 * shifts a whole channel's gradient a little), and an ill-conditioned
 * element within its allowance counts as 0. */
static void compare_distribution(const double *got, const double *exp, const double *base,
				 int64_t n, const struct check_tol *tol, struct check_cmp *out)
{
	double se = 0, me = 0, sb = 0, mb = 0, f = tol->atol + tol->rtol;
	int64_t m = 0, mbn = 0;

	for (int64_t i = 0; i < n; i++) {
		double a = tol->spread ? check_cond_allowance(tol, i) : 0, e;
		if (!isfinite(exp[i]) || !isfinite(got[i]))
			continue;
		if (a > tol->atol * tol->scale + tol->rtol * fabs(exp[i]))
			out->n_ill++;
		e = beyond(got[i] - exp[i], a);
		se += e * e;
		me += e;
		m++;
		if (isfinite(base[i])) {
			e = beyond(base[i] - exp[i], a);
			sb += e * e;
			mb += e;
			mbn++;
		}
	}
	if (!m || !(tol->scale > 0))
		return;
	out->agg = sqrt(se / (double)m) / tol->scale;
	out->bias = fabs(me / (double)m) / tol->scale;
	if (mbn) {
		out->base_agg = sqrt(sb / (double)mbn) / tol->scale;
		out->base_bias = fabs(mb / (double)mbn) / tol->scale;
	}
	/* The floors are fractions of the element tolerance that a
	 * distribution of honest errors stays within, mostly far below its
	 * worst element. Over few elements there is no distribution: one
	 * element at its element tolerance, the others exact, has an rms of
	 * (atol+rtol)/sqrt(m) of the scale, and m independent errors within
	 * it a mean of that order, so neither floor is below few_floor times
	 * that (the baseline's own figures already scale so: its rms over m
	 * elements is at least its worst over sqrt(m)). At m = 1 both bounds
	 * then allow all the element bound does: a table GELU within a third
	 * of its element tolerance on smoke/gelu's {N=1} under the small
	 * profile was up to 2.4x over the fixed floor of 2e-5
	 * (honest/tol_gelu_table_n1.c) */
	out->agg_floor = fmax(tol->agg_floor, tol->few_floor / sqrt((double)m));
	out->bias_floor = fmax(tol->bias_floor, tol->few_floor / sqrt((double)m));
	out->agg_bound = tol->agg_factor * out->base_agg + out->agg_floor * f;
	out->bias_bound = tol->bias_factor * (out->base_bias + out->base_agg / sqrt((double)m)) +
			  out->bias_floor * f;
	if (out->pass && !(out->agg <= out->agg_bound)) {
		out->pass = false;
		out->failed = CHECK_BOUND_AGGREGATE;
	} else if (out->pass && !(out->bias <= out->bias_bound)) {
		out->pass = false;
		out->failed = CHECK_BOUND_BIAS;
	}
}

void check_compare_tol(const double *got, const double *exp, const double *base, int64_t n,
		       const struct check_tol *tol, struct check_cmp *out)
{
	memset(out, 0, sizeof *out);
	out->n = n;
	out->pass = true;
	out->worst = n > 0 ? 0 : -1;
	out->max_abs_at = out->worst;
	out->scale = tol->scale;
	compare_elements(got, exp, base, n, tol, out);
	if (!out->pass)
		out->failed = CHECK_BOUND_ELEMENT;
	out->spread = out->spread_first = NAN;
	if (out->worst >= 0) {
		out->got = got[out->worst];
		out->exp = exp[out->worst];
		if (tol->spread)
			out->spread = tol->spread[out->worst];
		if (tol->spread_first)
			out->spread_first = tol->spread_first[out->worst];
	}
	if (tol->dist && base)
		compare_distribution(got, exp, base, n, tol, out);
}

void check_compare(const double *got, const double *exp, const double *base, int64_t n,
		   double atol, double rtol, double allow_factor, struct check_cmp *out)
{
	struct check_tol tol;
	check_tol_default(&tol, atol, rtol, check_rms(exp, n));
	tol.allow_factor = allow_factor;
	tol.dist = allow_factor > 0;
	check_compare_tol(got, exp, base, n, &tol, out);
}

/* What the distribution bounds counted, after a measurement (snprintf's
 * return). */
static int cond_str(const struct check_tol *tol, const struct check_cmp *c, char *buf, size_t cap)
{
	if (!tol->spread_first)
		return snprintf(buf, cap, "; errors counted beyond %g × the reference's spread under "
				"float-level noise, %lld elements ill-conditioned", tol->cond_factor,
				(long long)c->n_ill);
	return snprintf(buf, cap, "; errors counted beyond the larger of %g × the reference's "
			"spread under float-level noise in the first of %d measurements and %g × "
			"its spread in all, %lld elements ill-conditioned", tol->cond_factor,
			tol->cond_rounds, tol->cond_factor_later, (long long)c->n_ill);
}

void check_cmp_str(const struct check_cmp *c, const struct check_tol *tol, char *buf, size_t cap)
{
	int w = 0;
	switch (c->failed) {
	case CHECK_BOUND_AGGREGATE:
		w = snprintf(buf, cap, "rms error %.3g of the output's scale %.3g, above the bound %.3g "
			     "(%g × the f32 baseline's %.3g + %.3g × (atol+rtol)",
			     c->agg, c->scale, c->agg_bound, tol->agg_factor, c->base_agg, c->agg_floor);
		if (tol->spread && w >= 0 && (size_t)w < cap)
			w += cond_str(tol, c, buf + w, cap - (size_t)w);
		break;
	case CHECK_BOUND_BIAS:
		w = snprintf(buf, cap, "mean signed error %.3g of the output's scale %.3g, above the bound %.3g "
			     "(%g × the f32 baseline's %.3g + its noise, + %.3g × (atol+rtol)",
			     c->bias, c->scale, c->bias_bound, tol->bias_factor, c->base_bias, c->bias_floor);
		if (tol->spread && w >= 0 && (size_t)w < cap)
			w += cond_str(tol, c, buf + w, cap - (size_t)w);
		break;
	default:
		w = snprintf(buf, cap, "element %lld: got %.9g, expected %.9g (%lld of %lld outside "
			     "atol %g × scale %.3g + rtol %g × |expected|",
			     (long long)c->worst, c->got, c->exp, (long long)c->n_bad, (long long)c->n,
			     tol->atol, c->scale, tol->rtol);
		if (tol->spread && w >= 0 && (size_t)w < cap && !tol->spread_first)
			w += snprintf(buf + w, cap - (size_t)w, "; the reference moves by %.3g there "
				      "under float-level noise, %g × that allowed", c->spread,
				      tol->cond_factor);
		else if (tol->spread && w >= 0 && (size_t)w < cap)
			w += snprintf(buf + w, cap - (size_t)w, "; the reference moves by %.3g there "
				      "under float-level noise in the first of %d measurements, %.3g "
				      "in all: the larger of %g × the first and %g × all allowed",
				      c->spread_first, tol->cond_rounds, c->spread, tol->cond_factor,
				      tol->cond_factor_later);
		break;
	}
	if (w >= 0 && (size_t)w < cap)
		snprintf(buf + w, cap - (size_t)w, ")");
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
