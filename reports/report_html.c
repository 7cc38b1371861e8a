/* report_html.c — the html printer: one self-contained page (inline CSS, no
 * scripts, no external resources) with the four SVG plots of report_svg.c and
 * the same tables as the markdown report. The tables are rendered once as
 * markdown and converted here (headings, paragraphs, pipe tables, `code`,
 * **bold**), so markdown and html can never disagree on a number. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_impl.h"

static const char css[] =
	"body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:14px;"
	"max-width:1160px;margin:24px auto;padding:0 16px;color:#222}"
	"h1{font-size:24px}h2{font-size:19px;border-bottom:1px solid #ddd;padding-bottom:4px;"
	"margin-top:32px}h3{font-size:16px;margin-top:22px}"
	"table{border-collapse:collapse;margin:8px 0 14px}"
	"th,td{border:1px solid #d0d0d0;padding:3px 8px}th{background:#f3f3f3}"
	"tr:nth-child(even) td{background:#fafafa}"
	"td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}"
	"p{line-height:1.6}code{background:#f3f3f3;padding:0 3px}"
	".plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}"
	".plots svg{border:1px solid #e0e0e0}.note{color:#555}";

static void esc_char(FILE *f, char c)
{
	if (c == '<')
		fputs("&lt;", f);
	else if (c == '>')
		fputs("&gt;", f);
	else if (c == '&')
		fputs("&amp;", f);
	else
		fputc(c, f);
}

/* Inline markdown: `code`, **bold**, \| escapes; the rest escaped. */
static void inline_md(FILE *f, const char *s, size_t n)
{
	int code = 0, bold = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n && s[i + 1] == '|') {
			fputc('|', f);
			i++;
		} else if (s[i] == '`') {
			fputs(code ? "</code>" : "<code>", f);
			code = !code;
		} else if (!code && s[i] == '*' && i + 1 < n && s[i + 1] == '*') {
			fputs(bold ? "</b>" : "<b>", f);
			bold = !bold;
			i++;
		} else {
			esc_char(f, s[i]);
		}
	}
	if (code)
		fputs("</code>", f);
	if (bold)
		fputs("</b>", f);
}

/* Splits a pipe-table line into cells (start, length), trimmed. */
static size_t cells(const char *line, const char **start, size_t *len, size_t max)
{
	size_t n = 0;
	const char *p = line;

	if (*p == '|')
		p++;
	while (*p && n < max) {
		const char *q = p;
		while (*q && !(*q == '|' && q[-1] != '\\'))
			q++;
		if (!*q && q == p)
			break;
		{
			const char *a = p, *z = q;
			while (a < z && *a == ' ')
				a++;
			while (z > a && (z[-1] == ' ' || z[-1] == '\n'))
				z--;
			start[n] = a;
			len[n] = (size_t)(z - a);
		}
		n++;
		if (!*q)
			break;
		p = q + 1;
		while (*p == ' ')
			p++;
		if (!*p)
			break;
	}
	return n;
}

static void table(FILE *f, char **lines, size_t n)
{
	const char *st[64];
	size_t ln[64], nc = cells(lines[0], st, ln, 64);
	int right[64] = { 0 };

	if (n > 1) {
		const char *as[64];
		size_t al[64], na = cells(lines[1], as, al, 64);
		for (size_t c = 0; c < na && c < 64; c++)
			right[c] = al[c] > 0 && as[c][al[c] - 1] == ':';
	}
	fputs("<table>\n<tr>", f);
	for (size_t c = 0; c < nc; c++) {
		fprintf(f, "<th%s>", right[c] ? " class=\"r\"" : "");
		inline_md(f, st[c], ln[c]);
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	for (size_t r = 2; r < n; r++) {
		size_t m = cells(lines[r], st, ln, 64);
		fputs("<tr>", f);
		for (size_t c = 0; c < m; c++) {
			fprintf(f, "<td%s>", right[c] ? " class=\"r\"" : "");
			inline_md(f, st[c], ln[c]);
			fputs("</td>", f);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* Converts the markdown of report_md.c (lines split in place) to html. */
static void md_to_html(FILE *f, char *md)
{
	char **lines = NULL;
	size_t n = 0, cap = 0, i = 0;

	for (char *p = md; *p;) {
		char *nl = strchr(p, '\n');
		if (n == cap) {
			size_t c2 = cap ? 2 * cap : 256;
			char **nn = realloc(lines, c2 * sizeof *nn);
			if (!nn)
				goto out;
			lines = nn;
			cap = c2;
		}
		lines[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	while (i < n) {
		char *l = lines[i];
		if (!*l) {
			i++;
		} else if (l[0] == '|') {
			size_t j = i;
			while (j < n && lines[j][0] == '|')
				j++;
			table(f, lines + i, j - i);
			i = j;
		} else if (l[0] == '#') {
			int lvl = 0;
			while (l[lvl] == '#')
				lvl++;
			fprintf(f, "<h%d>", lvl);
			inline_md(f, l + lvl + 1, strlen(l + lvl + 1));
			fprintf(f, "</h%d>\n", lvl);
			i++;
		} else {
			fputs("<p>", f);
			while (i < n && lines[i][0] && lines[i][0] != '|' && lines[i][0] != '#') {
				size_t len = strlen(lines[i]);
				int br = len >= 2 && !strcmp(lines[i] + len - 2, "  ");
				inline_md(f, lines[i], br ? len - 2 : len);
				fputs(br ? "<br>\n" : "\n", f);
				i++;
			}
			fputs("</p>\n", f);
		}
	}
out:
	free(lines);
}

void report_print_html(FILE *f, const struct report_summary *s, size_t n)
{
	report_print_html_runs(f, s, n, NULL);
}

void report_print_html_runs(FILE *f, const struct report_summary *s, size_t n,
			    const struct report_runs *R)
{
	char *md = NULL, tool[160];
	size_t len = 0;
	FILE *m = open_memstream(&md, &len);

	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		"<title>crucible report</title>\n<style>%s</style>\n</head>\n<body>\n"
		"<h1>crucible report</h1>\n<p>", css);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "<br>\n" : "", f);
		fprintf(f, "Run %zu: <b>", i + 1);
		inline_md(f, s[i].label, strlen(s[i].label));
		fputs("</b> — <code>", f);
		inline_md(f, s[i].path, strlen(s[i].path));
		fprintf(f, "</code>, N = %zu tasks; revision <code>", s[i].n_tasks);
		inline_md(f, s[i].prov.revision[0] ? s[i].prov.revision : "unknown",
			  strlen(s[i].prov.revision[0] ? s[i].prov.revision : "unknown"));
		fputs("</code>", f);
	}
	report_tool_version(tool, sizeof tool);
	fputs("<br>\nMade by ", f);
	inline_md(f, tool, strlen(tool));
	fputs("</p>\n<h2>Plots</h2>\n<div class=\"plots\">\n", f);
	if (R && R->n_ser) {
		for (int by_step = 0; by_step < 2; by_step++)
			for (int fast = 0; fast < 2; fast++)
				report_svg_scaling(f, R, by_step, fast);
	}
	report_svg_pass_at_k(f, s, n);
	report_svg_fast_p(f, s, n);
	report_svg_histogram(f, s, n);
	report_svg_scatter(f, s, n);
	fputs("</div>\n", f);
	if (m) {
		report_print_md_runs(m, s, n, R);
		fclose(m);
		md_to_html(f, md);
	}
	free(md);
	fputs("</body>\n</html>\n", f);
}
