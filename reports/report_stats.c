/* report_stats.c — the statistics behind the tables: unbiased pass@k in the
 * stable product form, median and type-7 quantiles, Pearson r, the Student t
 * quantile (regularized incomplete beta + bisection) and the geometric mean
 * with its 95% t-interval on log values, and the reasoning-length buckets. */
#include <math.h>
#include <stdlib.h>

#include "reports/report_impl.h"

const char *const report_bucket_names[3] = { "Easy", "Medium", "Hard" };

double report_pass_at_k(int n, int c, int k)
{
	double prod = 1.0;

	if (k < 1 || k > n || c < 0 || c > n)
		return NAN;
	/* C(n-c,k)/C(n,k) = prod_{i=n-c+1..n} (1 - k/i); zero when n - c < k. */
	if (n - c < k)
		return 1.0;
	for (int i = n - c + 1; i <= n; i++)
		prod *= 1.0 - (double)k / (double)i;
	return 1.0 - prod;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double report_quantile(const double *sorted, size_t n, double q)
{
	double h, lo;
	size_t i;

	if (n == 0)
		return NAN;
	h = (double)(n - 1) * q;
	lo = floor(h);
	i = (size_t)lo;
	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (h - lo) * (sorted[i + 1] - sorted[i]);
}

double report_median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	return report_quantile(v, n, 0.5);
}

double report_pearson(const double *x, const double *y, size_t n)
{
	double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;

	if (n < 2)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (size_t i = 0; i < n; i++) {
		double dx = x[i] - mx, dy = y[i] - my;
		sxx += dx * dx;
		syy += dy * dy;
		sxy += dx * dy;
	}
	if (sxx <= 0 || syy <= 0)
		return NAN;
	return sxy / sqrt(sxx * syy);
}

/* Continued fraction of the incomplete beta (modified Lentz). */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, aa, del;
		aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + aa / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return h;
}

/* Regularized incomplete beta I_x(a, b). */
static double ibeta(double a, double b, double x)
{
	double bt;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return bt * betacf(a, b, x) / a;
	return 1 - bt * betacf(b, a, 1 - x) / b;
}

double report_t_two_sided(double t, double df)
{
	return ibeta(df / 2, 0.5, df / (df + t * t));
}

static double t_cdf(double t, double df)
{
	double tail = 0.5 * ibeta(df / 2, 0.5, df / (df + t * t));
	return t >= 0 ? 1 - tail : tail;
}

double report_t_quantile(double prob, double df)
{
	double lo = 0, hi = 1e6;

	if (!(prob > 0 && prob < 1) || !(df > 0))
		return NAN;
	if (prob < 0.5)
		return -report_t_quantile(1 - prob, df);
	for (int i = 0; i < 200; i++) {
		double mid = 0.5 * (lo + hi);
		if (t_cdf(mid, df) < prob)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

void report_geomean(const double *v, size_t n, double *gm, double *lo, double *hi)
{
	double m = 0, ss = 0, half;

	*gm = *lo = *hi = NAN;
	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++)
		m += log(v[i]);
	m /= (double)n;
	*gm = exp(m);
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		ss += (log(v[i]) - m) * (log(v[i]) - m);
	half = report_t_quantile(0.975, (double)(n - 1)) * sqrt(ss / (double)(n - 1)) /
	       sqrt((double)n);
	*lo = exp(m - half);
	*hi = exp(m + half);
}

int report_bucket(double arl)
{
	if (arl < 4000)
		return 0;
	if (arl <= 8500)
		return 1;
	return 2;
}

/* Exact null distribution of U for m a's and n b's without ties: prob[u],
 * u = 0..m*n (malloc'd, NULL when out of memory), from the counts
 * f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u) over C(m + n, m). */
static double *mw_null(size_t m, size_t n)
{
	size_t umax = m * n, w = umax + 1;
	double *f = calloc((m + 1) * (n + 1) * w, sizeof *f), *prob = malloc(w * sizeof *prob);
	double tot = 0;

	if (!f || !prob) {
		free(f);
		free(prob);
		return NULL;
	}
#define F(i, j, k) f[((i) * (n + 1) + (j)) * w + (k)]
	for (size_t i = 0; i <= m; i++)
		for (size_t j = 0; j <= n; j++)
			for (size_t k = 0; k <= i * j; k++) {
				if (i == 0 || j == 0) {
					F(i, j, k) = k == 0;
					continue;
				}
				F(i, j, k) = (k >= j ? F(i - 1, j, k - j) : 0) + F(i, j - 1, k);
			}
	for (size_t k = 0; k <= umax; k++)
		tot += F(m, n, k);
	for (size_t k = 0; k <= umax; k++)
		prob[k] = F(m, n, k) / tot;
#undef F
	free(f);
	return prob;
}

/* U = #(a_i > b_j) + 0.5 #(a_i == b_j), O(na nb) (fine for the gate);
 * *ties gets sum(t^3 - t) over the tie groups of a and b together (0 when
 * there is none), and the return is 1 when a value of a equals one of b. */
static int u_stat(const double *a, size_t na, const double *b, size_t nb, double *u,
		  double *ties)
{
	int any_tie = 0;
	double *all;
	size_t n = 0;

	*u = 0;
	*ties = 0;
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			*u += a[i] > b[j] ? 1 : a[i] == b[j] ? (any_tie = 1, 0.5) : 0;
	if (!any_tie)
		return 0;
	if (!(all = malloc((na + nb) * sizeof *all))) {
		*ties = NAN;
		return 1;
	}
	for (size_t i = 0; i < na; i++)
		all[n++] = a[i];
	for (size_t j = 0; j < nb; j++)
		all[n++] = b[j];
	qsort(all, n, sizeof *all, cmp_double);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && all[j] == all[i])
			j++;
		*ties += pow((double)(j - i), 3) - (double)(j - i);
		i = j;
	}
	free(all);
	return 1;
}

/* Variance of U under the null, with the tie correction. */
static double u_var(size_t na, size_t nb, double ties)
{
	double nt = (double)(na + nb);
	return (double)na * (double)nb / 12 * ((nt + 1) - ties / (nt * (nt - 1)));
}

double report_mann_whitney(const double *a, size_t na, const double *b, size_t nb)
{
	struct report_stratum s = { a, na, b, nb };
	double lo, hi;

	report_mw_strata(&s, 1, &lo, &hi);
	if (isnan(lo) || isnan(hi))
		return NAN;
	return fmin(1, 2 * fmin(lo, hi));
}

/* Exact tails of the summed U: the strata's null distributions convolved. */
static int strata_exact(const struct report_stratum *s, size_t k, double u, double *lo, double *hi)
{
	size_t len = 1, pm = 0, pn = 0;
	double *d = malloc(sizeof *d), *f = NULL;

	if (!d)
		return -1;
	d[0] = 1;
	for (size_t i = 0; i < k; i++) {
		size_t m = s[i].na, n = s[i].nb, w = m * n + 1;
		double *nd;
		if (!m || !n)
			continue;
		if (!f || m != pm || n != pn) {
			free(f);
			if (!(f = mw_null(m, n)))
				goto fail;
			pm = m, pn = n;
		}
		if (!(nd = calloc(len + w - 1, sizeof *nd)))
			goto fail;
		for (size_t x = 0; x < len; x++)
			if (d[x] != 0)
				for (size_t y = 0; y < w; y++)
					nd[x + y] += d[x] * f[y];
		free(d);
		d = nd;
		len += w - 1;
	}
	*lo = *hi = 0;
	for (size_t x = 0; x < len; x++) {
		if ((double)x <= u + 1e-9)
			*lo += d[x];
		if ((double)x >= u - 1e-9)
			*hi += d[x];
	}
	*lo = fmin(*lo, 1);
	*hi = fmin(*hi, 1);
	free(d);
	free(f);
	return 0;
fail:
	free(d);
	free(f);
	return -1;
}

void report_mw_strata(const struct report_stratum *s, size_t k, double *p_less,
		      double *p_greater)
{
	double u = 0, mu = 0, var = 0, sd;
	int exact = 1, used = 0;

	*p_less = *p_greater = NAN;
	for (size_t i = 0; i < k; i++) {
		double ui, ties;
		if (!s[i].na || !s[i].nb)
			continue;
		used = 1;
		if (u_stat(s[i].a, s[i].na, s[i].b, s[i].nb, &ui, &ties) || s[i].na > 25 ||
		    s[i].nb > 25)
			exact = 0;
		if (isnan(ties))
			return;
		u += ui;
		mu += (double)s[i].na * (double)s[i].nb / 2;
		var += u_var(s[i].na, s[i].nb, ties);
	}
	if (!used)
		return;
	if (exact && strata_exact(s, k, u, p_less, p_greater) == 0)
		return;
	if (exact) {
		*p_less = *p_greater = NAN; /* out of memory */
		return;
	}
	/* normal approximation with the tie and continuity corrections */
	if (var <= 0) {
		*p_less = *p_greater = 1;
		return;
	}
	sd = sqrt(var);
	*p_less = 0.5 * erfc(-(u - mu + 0.5) / sd / sqrt(2));
	*p_greater = 0.5 * erfc((u - mu - 0.5) / sd / sqrt(2));
	*p_less = fmin(*p_less, 1);
	*p_greater = fmin(*p_greater, 1);
}
