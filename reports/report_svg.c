/* report_svg.c — inline SVG plots for the html report, drawn by hand: a
 * small plot frame (linear or log2 axes with "nice" ticks, grid, axis
 * labels, a legend below the axes so long run labels never overlap the data)
 * and the four plots: pass@k vs k, Fast_p vs p, the speedup distribution
 * (histogram on log2 bins) and reasoning length vs speedup (scatter). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

static const char *const palette[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
				       "#9467bd", "#8c564b", "#e377c2", "#17becf" };
#define COLOR(i) palette[(i) % 8]
/* Dash pattern per run, so curves that coincide stay distinguishable. */
static const char *const dashes[] = { "", "6 3", "2 2", "8 3 2 3" };
#define DASH(i) dashes[(i) % 4]

struct plot {
	FILE *f;
	double w, h;              /* plot area in px */
	double ml, mt;            /* left and top margins in px */
	double x0, x1, y0, y1;    /* data range (log2 values on a log axis) */
	int xlog, ylog;
	int xint, yint;            /* integer data: ticks at least 1 apart */
	int xcount;               /* log x axis of counts: ticks read 512, 1k, 2M, not 512× */
};

static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

static double px(const struct plot *p, double x)
{
	if (p->xlog)
		x = log2(x);
	return p->ml + (x - p->x0) / (p->x1 - p->x0) * p->w;
}

static double py(const struct plot *p, double y)
{
	if (p->ylog)
		y = log2(y);
	return p->mt + p->h - (y - p->y0) / (p->y1 - p->y0) * p->h;
}

/* Tick step of 1, 2 or 5 × 10^k giving about `want` ticks. */
static double nice_step(double range, int want)
{
	double raw = range / want, mag = pow(10, floor(log10(raw))), r = raw / mag;
	return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

static void tick_label(char *b, size_t n, double v, int islog)
{
	if (islog == 2) {
		double x = exp2(v);
		if (x >= 1 << 20)
			snprintf(b, n, "%gM", x / (1 << 20));
		else if (x >= 1024)
			snprintf(b, n, "%gk", x / 1024);
		else
			snprintf(b, n, "%g", x);
	} else if (islog) {
		double x = exp2(v);
		snprintf(b, n, x >= 1 ? "%.0f×" : "%g×", x);
	} else if (fabs(v) >= 1000) {
		snprintf(b, n, "%.0f", v);
	} else {
		snprintf(b, n, "%g", fabs(v) < 1e-12 ? 0.0 : v);
	}
}

/* Opens the svg: title, frame, ticks, grid, axis labels. Legend rows below. */
static void plot_begin(struct plot *p, FILE *f, const char *title, const char *xlabel,
		       const char *ylabel, int n_legend)
{
	double step, W, H;
	char b[32];

	p->f = f;
	p->w = 460;
	p->h = 260;
	p->ml = 64;
	p->mt = 34;
	W = p->ml + p->w + 24;
	H = p->mt + p->h + 56 + 18 * n_legend;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%.0f\" y=\"20\" font-size=\"14\" font-weight=\"bold\" "
		"text-anchor=\"middle\">", W, H, W, H, p->ml + p->w / 2);
	esc(f, title);
	fprintf(f, "</text>\n");
	/* x ticks */
	if (p->xlog) {
		int k0 = (int)ceil(p->x0 - 1e-9), k1 = (int)floor(p->x1 + 1e-9);
		int every = (k1 - k0) / 8 + 1;
		for (int k = k0; k <= k1; k++) {
			double x = p->ml + (k - p->x0) / (p->x1 - p->x0) * p->w;
			if ((k - k0) % every)
				continue;
			tick_label(b, sizeof b, k, p->xcount ? 2 : 1);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
				x, p->mt, x, p->mt + p->h, x, p->mt + p->h + 15, b);
		}
	} else {
		step = nice_step(p->x1 - p->x0, 6);
		if (p->xint)
			step = fmax(1, round(step));
		for (double v = ceil(p->x0 / step - 1e-9) * step; v <= p->x1 + step * 1e-9; v += step) {
			double x = px(p, v);
			tick_label(b, sizeof b, v, 0);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
				x, p->mt, x, p->mt + p->h, x, p->mt + p->h + 15, b);
		}
	}
	/* y ticks */
	if (p->ylog) {
		int k0 = (int)ceil(p->y0 - 1e-9), k1 = (int)floor(p->y1 + 1e-9);
		int every = (k1 - k0) / 7 + 1;
		for (int k = k0; k <= k1; k++) {
			double y = p->mt + p->h - (k - p->y0) / (p->y1 - p->y0) * p->h;
			if ((k - k0) % every)
				continue;
			tick_label(b, sizeof b, k, 1);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
				p->ml, y, p->ml + p->w, y, p->ml - 6, y + 4, b);
		}
	} else {
		step = nice_step(p->y1 - p->y0, 5);
		if (p->yint)
			step = fmax(1, round(step));
		for (double v = ceil(p->y0 / step - 1e-9) * step; v <= p->y1 + step * 1e-9; v += step) {
			double y = py(p, v);
			tick_label(b, sizeof b, v, 0);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
				p->ml, y, p->ml + p->w, y, p->ml - 6, y + 4, b);
		}
	}
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		"stroke=\"#333\"/>\n", p->ml, p->mt, p->w, p->h);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">",
		p->ml + p->w / 2, p->mt + p->h + 34);
	esc(f, xlabel);
	fprintf(f, "</text>\n<text transform=\"translate(16 %.1f) rotate(-90)\" "
		"text-anchor=\"middle\" font-size=\"12\">", p->mt + p->h / 2);
	esc(f, ylabel);
	fprintf(f, "</text>\n");
}

/* Marker of run i: circle, square, triangle, diamond (then again), hollow
 * for runs past the fourth, so markers that coincide stay visible. */
static void marker(FILE *f, size_t i, double x, double y, double r)
{
	const char *c = COLOR(i);
	const char *fill = i >= 4 ? "white" : c;

	switch (i % 4) {
	case 0:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" stroke=\"%s\" "
			"fill-opacity=\"0.7\"/>", x, y, r, fill, c);
		break;
	case 1:
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
			"stroke=\"%s\" fill-opacity=\"0.7\"/>", x - r, y - r, 2 * r, 2 * r, fill, c);
		break;
	case 2:
		fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\" "
			"stroke=\"%s\" fill-opacity=\"0.7\"/>", x, y - 1.3 * r, x - 1.2 * r,
			y + r, x + 1.2 * r, y + r, fill, c);
		break;
	default:
		fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\" "
			"stroke=\"%s\" fill-opacity=\"0.7\"/>", x, y - 1.4 * r, x + 1.4 * r, y, x,
			y + 1.4 * r, x - 1.4 * r, y, fill, c);
	}
}

/* Legend row i (below the axes): line and marker of series i, its name. */
static void legend_row(const struct plot *p, size_t i, const char *name, int points)
{
	double y = p->mt + p->h + 54 + 18 * (double)i;

	if (!points)
		fprintf(p->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"/>",
			p->ml - 2, y - 4, p->ml + 22, y - 4, COLOR(i), DASH(i));
	marker(p->f, i, p->ml + 10, y - 4, 4);
	fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\">", p->ml + 28, y);
	esc(p->f, name);
	fprintf(p->f, "</text>\n");
}

static void legend(const struct plot *p, const struct report_summary *s, size_t n,
		   int points)
{
	for (size_t i = 0; i < n; i++)
		legend_row(p, i, s[i].label, points);
}

static void no_data(const struct plot *p, const char *what)
{
	fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#888\">%s</text>\n",
		p->ml + p->w / 2, p->mt + p->h / 2, what);
}

static void vline(const struct plot *p, double x, const char *label)
{
	double X = px(p, x);
	fprintf(p->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
		"stroke-dasharray=\"4 3\"/>\n", X, p->mt, X, p->mt + p->h);
	if (label)
		fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">%s</text>\n", X + 3,
			p->mt + 12, label);
}

/* A note in place of a plot that has nothing measured to draw (issue 32: no
 * axes with invented ranges, no flat zeros). */
static void plot_note(FILE *f, const char *title, const char *why)
{
	fputs("<p class=\"note\"><b>", f);
	esc(f, title);
	fputs("</b>: ", f);
	esc(f, why);
	fputs(".</p>\n", f);
}

/* Legend row with an explicit colour and dash (a run's two pass@k curves). */
static void legend_row_cd(const struct plot *p, size_t row, size_t ci, const char *dash,
			  const char *name, int line)
{
	double y = p->mt + p->h + 54 + 18 * (double)row;

	if (line)
		fprintf(p->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"/>",
			p->ml - 2, y - 4, p->ml + 22, y - 4, COLOR(ci), dash);
	if (line)
		marker(p->f, ci, p->ml + 10, y - 4, 4);
	fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\">", p->ml + 28, y);
	esc(p->f, name);
	fprintf(p->f, "</text>\n");
}

/* pass@k over a fixed set of tasks: those with at least kmin units (kmin 0:
 * every task, a task without any counting 0), at k; *m the tasks in it. */
static double pass_fixed(const struct report_summary *s, int kmin, int k, size_t *m)
{
	double sum = 0;

	*m = 0;
	for (size_t t = 0; t < s->n_tasks; t++) {
		const struct report_task *T = &s->tasks[t];
		if (kmin > 0 && T->nu < kmin)
			continue;
		(*m)++;
		sum += T->nu ? report_pass_at_k(T->nu, T->cu, k) : 0;
	}
	return *m ? sum / (double)*m : NAN;
}

/* The smallest number of units of a task that has any (0: none has). */
static int units_min(const struct report_summary *s)
{
	int m = 0;

	for (size_t t = 0; t < s->n_tasks; t++)
		if (s->tasks[t].nu && (!m || s->tasks[t].nu < m))
			m = s->tasks[t].nu;
	return m;
}

static void passk_curve(const struct plot *p, FILE *f, const struct report_summary *s, size_t i,
			int kmin, int kmax, const char *dash, double width, double r)
{
	size_t m;

	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
		"stroke-dasharray=\"%s\" points=\"", COLOR(i), width, dash);
	for (int k = 1; k <= kmax; k++)
		fprintf(f, "%.1f,%.1f ", px(p, k), py(p, pass_fixed(s, kmin, k, &m)));
	fprintf(f, "\"/>\n");
	for (int k = 1; k <= kmax; k++)
		marker(f, i, px(p, k), py(p, pass_fixed(s, kmin, k, &m)), r);
	fprintf(f, "\n");
}

/* pass@k vs k, each curve over one fixed task set (issue 32: leaving out the
 * tasks with n < k at each k made the curve dip where tasks dropped out):
 * per run, a solid curve over all its N tasks up to the smallest n of a task
 * that has candidates (every task has n >= k there; a task with none counts
 * 0, as in the table), and when some tasks have more, a dashed curve over
 * the tasks with the run's largest n, up to it. The legend names each set. */
void report_svg_pass_at_k(FILE *f, const struct report_summary *s, size_t n)
{
	struct plot p = { 0 };
	int kmax = 1, rows = 0, any = 0;
	size_t row = 0;

	for (size_t i = 0; i < n; i++) {
		rows++;
		if (!s[i].correct_measured || !s[i].nu_max)
			continue;
		any = 1;
		kmax = s[i].nu_max > kmax ? s[i].nu_max : kmax;
		rows += s[i].nu_max > units_min(&s[i]);
	}
	if (!any) {
		plot_note(f, "pass@k vs k", "not measured (a compile-only run: nothing was run)");
		return;
	}
	p.xint = 1;
	p.x0 = 1;
	p.x1 = kmax > 1 ? kmax : 2;
	p.y0 = 0;
	p.y1 = 1.04; /* a curve at 1 stays visible above the frame's edge */
	plot_begin(&p, f, "pass@k vs k (each curve over a fixed task set)",
		   "k (independent draws per task)", "pass@k", rows);
	for (size_t i = 0; i < n; i++) {
		char name[400];
		int kmin = units_min(&s[i]);
		size_t m;

		if (!s[i].correct_measured || !s[i].nu_max) {
			snprintf(name, sizeof name, "%s: %s", s[i].label, !s[i].correct_measured ?
				 "not measured (compile-only)" : "no candidate");
			legend_row_cd(&p, row++, i, "", name, 0);
			continue;
		}
		/* later runs thinner, drawn on top: coinciding curves show */
		passk_curve(&p, f, &s[i], i, 0, kmin, DASH(i), fmax(1, 3.0 - (double)i * 0.5),
			    kmax > 60 ? 2 : 3.5);
		{
			size_t none = 0;
			for (size_t t = 0; t < s[i].n_tasks; t++)
				none += s[i].tasks[t].nu == 0;
			if (none)
				snprintf(name, sizeof name, "%s: all %zu tasks, k <= %d (n >= %d where "
					 "a task has candidates; %zu without count 0)", s[i].label,
					 s[i].n_tasks, kmin, kmin, none);
			else
				snprintf(name, sizeof name, "%s: all %zu tasks (each has n >= %d), "
					 "k <= %d", s[i].label, s[i].n_tasks, kmin, kmin);
		}
		legend_row_cd(&p, row++, i, DASH(i), name, 1);
		if (s[i].nu_max > kmin) {
			(void)pass_fixed(&s[i], s[i].nu_max, 1, &m);
			passk_curve(&p, f, &s[i], i, s[i].nu_max, s[i].nu_max, "2 3", 1.2,
				    kmax > 60 ? 1.5 : 2.5);
			snprintf(name, sizeof name, "%s: the %zu of %zu tasks with n = %d, k <= %d",
				 s[i].label, m, s[i].n_tasks, s[i].nu_max, s[i].nu_max);
			legend_row_cd(&p, row++, i, "2 3", name, 1);
		}
	}
	fprintf(f, "</svg>\n");
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void report_svg_fast_p(FILE *f, const struct report_summary *s, size_t n)
{
	struct plot p = { 0 };
	double pmax = 2;

	for (size_t i = 0; i < n; i++)
		for (size_t t = 0; t < s[i].n_tasks; t++)
			if (s[i].tasks[t].best_speedup * 1.1 > pmax)
				pmax = s[i].tasks[t].best_speedup * 1.1;
	{
		int any = 0;
		for (size_t i = 0; i < n; i++)
			any |= s[i].timing_measured;
		if (!any) {
			plot_note(f, "Fast_p vs p", "not measured (no run was timed)");
			return;
		}
	}
	p.x0 = 0;
	p.x1 = pmax; /* never clip the largest speedup */
	p.y0 = 0;
	p.y1 = 1.04;
	plot_begin(&p, f, "Fast_p vs p (best-of-n, trusted figures)", "p (speedup threshold, strict >)",
		   "fast_p", (int)n);
	vline(&p, 1, NULL);
	for (size_t i = 0; i < n; i++) {
		double *b = malloc((s[i].n_tasks + 1) * sizeof *b), y;
		size_t m = 0;
		if (!b)
			continue;
		if (!s[i].timing_measured) { /* no flat zero for a run never timed */
			free(b);
			continue;
		}
		for (size_t t = 0; t < s[i].n_tasks; t++)
			if (!isnan(s[i].tasks[t].best_speedup))
				b[m++] = s[i].tasks[t].best_speedup;
		qsort(b, m, sizeof *b, cmp_dbl);
		/* Exact step function: fast_p drops right after each best speedup,
		 * and right after 0 for tasks whose only figures are noisy. */
		y = report_summary_fast_at(&s[i], 0);
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
			"stroke-dasharray=\"%s\" points=\"%.1f,%.1f ", COLOR(i),
			fmax(1, 3.0 - (double)i * 0.5), DASH(i), px(&p, 0), py(&p, y));
		y = report_summary_fast_at(&s[i], DBL_MIN);
		fprintf(f, "%.1f,%.1f ", px(&p, 0), py(&p, y));
		for (size_t j = 0; j < m && b[j] <= p.x1; j++) {
			if (b[j] <= 0 || (j && b[j] == b[j - 1]))
				continue;
			fprintf(f, "%.1f,%.1f ", px(&p, b[j]), py(&p, y));
			y = report_summary_fast_at(&s[i], b[j]);
			fprintf(f, "%.1f,%.1f ", px(&p, b[j]), py(&p, y));
		}
		fprintf(f, "%.1f,%.1f\"/>\n", px(&p, p.x1), py(&p, y));
		free(b);
	}
	for (size_t i = 0; i < n; i++) {
		char name[300];
		snprintf(name, sizeof name, "%s%s", s[i].label, s[i].timing_measured ? "" :
			 ": not measured (not timed)");
		legend_row_cd(&p, i, i, DASH(i), name, s[i].timing_measured);
	}
	fprintf(f, "</svg>\n");
}

void report_svg_histogram(FILE *f, const struct report_summary *s, size_t n)
{
	struct plot p = { 0 };
	double lo = 0, hi = 0, binw = 0.25;
	int any = 0, nb, ymax = 1;
	int *counts;

	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < s[i].gm_n; j++) {
			double v = log2(s[i].speedups[j]);
			lo = any ? fmin(lo, v) : v;
			hi = any ? fmax(hi, v) : v;
			any = 1;
		}
	if (!any) {
		int timed = 0;
		for (size_t i = 0; i < n; i++)
			timed |= s[i].timing_measured;
		plot_note(f, "Speedup distribution", timed ? "no correct candidate with a trusted "
			  "speedup" : "not measured (no run was timed)");
		return;
	}
	/* the axis covers every speedup: no clipping at either end */
	lo = floor(fmin(lo, -1));
	hi = ceil(fmax(hi, 1) + 1e-9);
	nb = (int)lround((hi - lo) / binw);
	counts = calloc((size_t)nb * n + 1, sizeof *counts);
	if (!counts)
		return;
	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < s[i].gm_n; j++) {
			int b = (int)floor((log2(s[i].speedups[j]) - lo) / binw);
			b = b < 0 ? 0 : b >= nb ? nb - 1 : b;
			if (++counts[i * (size_t)nb + (size_t)b] > ymax)
				ymax = counts[i * (size_t)nb + (size_t)b];
		}
	p.xlog = 1;
	p.yint = 1;
	p.x0 = lo;
	p.x1 = hi;
	p.y0 = 0;
	p.y1 = ymax < 5 ? ymax + 1 : ymax * 1.1;
	plot_begin(&p, f, "Speedup distribution (correct candidates, trusted figures)",
		   "speedup over the baseline (log scale, bins of 2^0.25)", "candidates", (int)n);
	for (size_t i = 0; i < n; i++) {
		for (int b = 0; b < nb; b++) {
			int c = counts[i * (size_t)nb + (size_t)b];
			double x0 = p.ml + (b * binw) / (hi - lo) * p.w, x1 = p.ml + ((b + 1) * binw) / (hi - lo) * p.w;
			if (!c)
				continue;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
				"fill-opacity=\"%.2f\" stroke=\"%s\"/>\n", x0 + 0.5, py(&p, c),
				x1 - x0 - 1, py(&p, 0) - py(&p, c), COLOR(i), n > 1 ? 0.35 : 0.6, COLOR(i));
		}
	}
	vline(&p, 1, NULL);
	legend(&p, s, n, 0);
	fprintf(f, "</svg>\n");
	free(counts);
}

void report_svg_scatter(FILE *f, const struct report_summary *s, size_t n)
{
	struct plot p = { 0 };
	double xmax = 0, ylo = 0, yhi = 0;
	int any = 0;

	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < s[i].r_speed_n; j++) {
			double x = s[i].scatter[2 * j], y = log2(s[i].scatter[2 * j + 1]);
			xmax = fmax(xmax, x);
			ylo = any ? fmin(ylo, y) : y;
			yhi = any ? fmax(yhi, y) : y;
			any = 1;
		}
	if (!any) {
		int rl = 0;
		for (size_t i = 0; i < n; i++)
			rl += s[i].rl_n;
		plot_note(f, "Reasoning length vs speedup", rl ? "no correct candidate with "
			  "reasoning_tokens and a trusted speedup" : "no reasoning-length data (no row "
			  "has reasoning_tokens)");
		return;
	}
	p.x0 = 0;
	p.x1 = fmax(xmax * 1.05, 10000);
	p.ylog = 1;
	p.y0 = floor(fmin(ylo, -1));
	p.y1 = ceil(fmax(yhi, 1) + 1e-9);
	plot_begin(&p, f, "Reasoning length vs speedup (correct, trusted figures)",
		   "reasoning tokens", "speedup (log scale)", (int)n);
	vline(&p, 4000, NULL);
	vline(&p, 8500, NULL);
	/* Bucket names centred in their band, where the band is wide enough. */
	{
		double edges[4] = { 0, 4000, 8500, p.x1 };
		for (int b = 0; b < 3; b++) {
			double a = px(&p, edges[b]), z = px(&p, fmin(edges[b + 1], p.x1));
			if (z - a > 50)
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">"
					"%s</text>\n", (a + z) / 2, p.mt + 12, report_bucket_names[b]);
		}
	}
	for (size_t i = 0; i < n; i++) {
		for (int j = 0; j < s[i].r_speed_n; j++) {
			double y = s[i].scatter[2 * j + 1];
			marker(f, i, px(&p, s[i].scatter[2 * j]), py(&p, y), 4);
		}
		fprintf(f, "\n");
	}
	legend(&p, s, n, 1);
	fprintf(f, "</svg>\n");
}

/* Scaling curves of the run directories: a line per series, the fraction of
 * its run's tasks whose pick is correct (or fast_1) against the budget
 * (completion tokens per task, log2 axis; a budget of 0 is left off the log
 * axis) or the step. Each curve holds its value until the next grid point,
 * as the pick does. */
void report_svg_scaling(FILE *f, const struct report_runs *R, int by_step, int fast)
{
	struct plot p = { 0 };
	double lo = INFINITY, hi = 0;
	char title[96], ylabel[64];
	size_t n = by_step ? R->n_steps : R->n_grid;

	for (size_t g = 0; g < n; g++) {
		double x = by_step ? (double)R->steps[g] : R->grid[g];
		if (by_step || x > 0) {
			lo = fmin(lo, x);
			hi = fmax(hi, x);
		}
	}
	if (!(hi > 0)) {
		lo = 1;
		hi = 2;
	}
	if (by_step) {
		p.xint = 1;
		p.x0 = 1;
		p.x1 = hi > 1 ? hi : 2;
	} else {
		p.xlog = 1;
		p.xcount = 1;
		p.x0 = floor(log2(lo));
		p.x1 = ceil(log2(hi) + 1e-9);
		if (p.x1 <= p.x0)
			p.x1 = p.x0 + 1;
	}
	p.y0 = 0;
	p.y1 = 1.04;
	snprintf(title, sizeof title, "%s of the selected candidate vs %s",
		 fast ? "fast_1" : "Correctness", by_step ? "step" : "tokens");
	snprintf(ylabel, sizeof ylabel, "fraction of tasks %s", fast ? "fast_1" : "correct");
	plot_begin(&p, f, title, by_step ? "candidates evaluated per task (step: samples / turns)" :
		   "completion tokens per task (log scale)", ylabel, (int)R->n_ser);
	for (size_t i = 0; i < R->n_ser; i++) {
		const struct report_series *s = &R->ser[i];
		const double *v = by_step ? (fast ? s->step_fast1 : s->step_correct) :
				  (fast ? s->tok_fast1 : s->tok_correct);
		int started = 0;
		double prev_y = 0;

		if (fast && R->dirs[s->dir].untimed)
			continue; /* not timed: no flat zero (issue 32), the legend says so */
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
			"stroke-dasharray=\"%s\" points=\"", COLOR(i), fmax(1, 3.0 - (double)i * 0.5),
			DASH(i));
		for (size_t g = 0; g < n; g++) {
			double x = by_step ? (double)R->steps[g] : R->grid[g];
			if (!by_step && x <= 0)
				continue;
			if (started)
				fprintf(f, "%.1f,%.1f ", px(&p, x), prev_y);
			prev_y = py(&p, v[g]);
			fprintf(f, "%.1f,%.1f ", px(&p, x), prev_y);
			started = 1;
		}
		fprintf(f, "\"/>\n");
		for (size_t g = 0; g < n; g++) {
			double x = by_step ? (double)R->steps[g] : R->grid[g];
			if (by_step || x > 0)
				marker(f, i, px(&p, x), py(&p, v[g]), 3);
		}
		fprintf(f, "\n");
	}
	if (n == 0)
		no_data(&p, "no curve.csv row");
	for (size_t i = 0; i < R->n_ser; i++) {
		char name[320];
		int unmeasured = fast && R->dirs[R->ser[i].dir].untimed;
		snprintf(name, sizeof name, "%s (n = %zu tasks)%s", R->ser[i].label,
			 R->dirs[R->ser[i].dir].n_tasks, unmeasured ? ": not measured (not timed)" : "");
		legend_row_cd(&p, i, i, DASH(i), name, !unmeasured);
	}
	fprintf(f, "</svg>\n");
}
