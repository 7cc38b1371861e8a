/* srv_page.c — the rankings page (srv_page.h): one self-contained HTML5
 * document (inline CSS, no script, no external resource, a CSP that forbids
 * everything else) built from the BOARDVIEW JSON the API serves. Every
 * string of that JSON is attacker-controlled (user, file and task names,
 * details): it reaches the page only through put_text, which applies the
 * project's rule for candidate text (cr_text_escape: controls, invalid UTF-8
 * and bidi overrides as \xNN) and then the HTML entities for & < > " '.
 * Element ids come only from sanitize_id ([A-Za-z0-9_-]) or integers, class
 * names only from literals. Malformed input (a missing field, a wrong type)
 * renders as "—", never as "nan" or "0" and never as a crash. */
#include "serve/srv_page.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cr_text.h"

#define DASH "\xe2\x80\x94"     /* "—": a number or field that is absent */
#define DETAIL_MAX 200          /* bytes of a detail shown in the history */

/* A growable output buffer; after a failed allocation every append is a
 * no-op and oom stays set, so callers check once at the end. */
struct buf {
	char *p;
	size_t n, cap;
	int oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[256], *p = tmp;
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if ((size_t)n >= sizeof tmp) {
		if (!(p = malloc((size_t)n + 1))) {
			b->oom = 1;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	put(b, p, (size_t)n);
	if (p != tmp)
		free(p);
}

/* The HTML entities for text already made safe by cr_text_escape. */
static void put_entities(struct buf *b, const char *s, size_t n)
{
	size_t from = 0;

	for (size_t i = 0; i < n; i++) {
		const char *e = NULL;
		switch (s[i]) {
		case '&': e = "&amp;"; break;
		case '<': e = "&lt;"; break;
		case '>': e = "&gt;"; break;
		case '"': e = "&quot;"; break;
		case '\'': e = "&#39;"; break;
		default: continue;
		}
		put(b, s + from, i - from);
		puts_(b, e);
		from = i + 1;
	}
	put(b, s + from, n - from);
}


/* s[0..n) made safe by the project's rule (cr_text_escape), NUL bytes (JSON
 * allows \u0000) as \x00: malloc'd, length in *len, NULL when out of memory. */
static char *safe_text(const char *s, size_t n, size_t *len)
{
	char *t = malloc(4 * n + 1);
	size_t w = 0;

	if (!t)
		return NULL;
	while (n) {
		size_t seg = strnlen(s, n);
		if (seg)
			w += cr_text_escape(s, seg, t + w, 4 * seg + 1);
		s += seg;
		n -= seg;
		if (n) {
			memcpy(t + w, "\\x00", 4);
			w += 4;
			s++;
			n--;
		}
	}
	t[w] = '\0';
	*len = w;
	return t;
}

/* s[0..n) as HTML text; at most max bytes of safe text (0: all), then "…".
 * The cut never splits a UTF-8 sequence or a \xNN escape. */
static void put_text_n(struct buf *b, const char *s, size_t n, size_t max)
{
	size_t len;
	char *t = safe_text(s, n, &len);

	if (!t) {
		b->oom = 1;
		return;
	}
	if (max && len > max) {
		size_t cut = max;
		while (cut && ((unsigned char)t[cut] & 0xc0) == 0x80)
			cut--;
		for (size_t k = 1; k <= 3 && k <= cut; k++)
			if (t[cut - k] == '\\' && t[cut - k + 1] == 'x') {
				cut -= k;
				break;
			}
		put_entities(b, t, cut);
		puts_(b, "\xe2\x80\xa6");
	} else {
		put_entities(b, t, len);
	}
	free(t);
}

static void put_text(struct buf *b, const char *s)
{
	put_text_n(b, s, strlen(s), 0);
}

/* A JSON string as text, "—" for anything else. */
static void put_jstr(struct buf *b, const json_t *v, size_t max)
{
	if (json_is_string(v))
		put_text_n(b, json_string_value(v), json_string_length(v), max);
	else
		puts_(b, DASH);
}

/* A number to 3 significant digits ("1.23", "12.0", "1234"), "—" when it
 * is not finite. */
static void fmt3(double v, char *out, size_t cap)
{
	if (!isfinite(v)) {
		snprintf(out, cap, "%s", DASH);
	} else if (fabs(v) >= 999.5) {
		snprintf(out, cap, "%.0f", v);
	} else {
		snprintf(out, cap, "%#.3g", v);
		size_t n = strlen(out);
		if (n && out[n - 1] == '.')
			out[n - 1] = '\0';
	}
}

/* A speedup or score: "1.23x", or "—" when null, missing, not a number or
 * not finite. */
static void put_speedup(struct buf *b, const json_t *v)
{
	char tmp[64];

	if (!json_is_number(v) || !isfinite(json_number_value(v))) {
		puts_(b, DASH);
		return;
	}
	fmt3(json_number_value(v), tmp, sizeof tmp);
	puts_(b, tmp);
	puts_(b, "x");
}

static void put_int(struct buf *b, const json_t *v)
{
	if (json_is_integer(v))
		putf(b, "%lld", (long long)json_integer_value(v));
	else
		puts_(b, DASH);
}

/* The status cell's class: a literal, never text from the JSON. */
static const char *status_class(const json_t *status)
{
	if (!json_is_string(status))
		return "st-na";
	return strcmp(json_string_value(status), "ok") ? "st-bad" : "st-ok";
}

static int jstr_eq(const json_t *a, const json_t *b)
{
	return json_is_string(a) && json_is_string(b) &&
	       json_string_length(a) == json_string_length(b) &&
	       !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
}

/* The id of a board: its name with every byte outside [A-Za-z0-9_-] as
 * '_', "_" when it has none, made unique among the n ids before it by a
 * "-2", "-3", ... suffix. malloc'd; NULL when out of memory. */
static char *board_id(const json_t *name, char **before, size_t n)
{
	const char *s = json_is_string(name) ? json_string_value(name) : "";
	size_t len = json_is_string(name) ? json_string_length(name) : 0;
	if (len > 64)
		len = 64; /* an id, not a copy of the name */
	char *id = malloc(len + 24);

	if (!id)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		id[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '-' || c == '_') ? c : '_';
	}
	if (!len)
		id[len++] = '_';
	id[len] = '\0';
	for (unsigned k = 2;; k++) {
		size_t i = 0;
		while (i < n && strcmp(before[i], id))
			i++;
		if (i == n)
			return id;
		snprintf(id + len, 24, "-%u", k);
	}
}

static const char css[] =
	"body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:14px;"
	"max-width:1240px;margin:24px auto;padding:0 16px;color:#222}"
	"h1{font-size:24px}h2{font-size:20px;border-bottom:1px solid #ddd;padding-bottom:4px;"
	"margin-top:36px}h3{font-size:16px;margin:22px 0 6px}h4{font-size:14px;margin:14px 0 4px}"
	"nav a{margin-right:12px}.meta{color:#444;line-height:1.6}.meta b{color:#222}"
	".scroll{overflow-x:auto}"
	"table{border-collapse:collapse;margin:6px 0 14px}"
	"th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}"
	"th{background:#f3f3f3}tr:nth-child(even) td{background:#fafafa}"
	"td.r,th.r{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
	"td.created{white-space:nowrap}td.user,td.file{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:nowrap}"
	"td.detail{max-width:380px;color:#555;font-size:12px;word-break:break-word}"
	".sub{color:#777;font-size:12px}.st-ok{color:#1a7f37}.st-bad{color:#b42318}.st-na{color:#888}"
	"tr.empty td,p.empty{color:#777;font-style:italic}"
	"footer{margin-top:36px;color:#777;font-size:12px;border-top:1px solid #eee;padding-top:8px}";

static void rule_text(struct buf *b, const json_t *bd)
{
	const json_t *rank = json_object_get(bd, "rank");
	bool untimed = json_is_false(json_object_get(bd, "timing"));
	size_t n_tasks = json_array_size(json_object_get(bd, "tasks"));
	if (untimed && json_is_string(rank) && !strcmp(json_string_value(rank), "geomean"))
		putf(b, "untimed: users with a ranked submission on every task (%zu) ranked by when "
			"their set was complete, earliest first",
		     n_tasks);
	else if (untimed)
		puts_(b, "untimed: each task ranked on its own by time of submission, earliest first");
	else if (json_is_string(rank) && !strcmp(json_string_value(rank), "geomean"))
		putf(b, "geomean: the geometric mean of each user's best score over "
			"every task of the board; a user ranks once they have a ranked submission on "
			"all %zu task%s",
		     n_tasks, n_tasks == 1 ? "" : "s");
	else if (json_is_string(rank) && !strcmp(json_string_value(rank), "per-task"))
		puts_(b, "per-task: each task ranked on its own by each user's best score");
	else
		put_jstr(b, rank, 0);
}

/* The board's task columns: its "tasks", then any task a ranking row names
 * that the list lacks (borrowed JSON strings). */
static const json_t **task_columns(const json_t *bd, const json_t *ranking, size_t *n_out)
{
	const json_t *tasks = json_object_get(bd, "tasks");
	size_t cap = json_array_size(tasks) + 8, n = 0, i, j;
	const json_t **col = malloc(cap * sizeof *col);
	const json_t *v, *row;

	if (!col)
		return NULL;
	json_array_foreach(tasks, i, v)
		if (json_is_string(v))
			col[n++] = v;
	json_array_foreach(ranking, i, row) {
		const json_t *pt;
		json_array_foreach(json_object_get(row, "per_task"), j, pt) {
			const json_t *t = json_object_get(pt, "task");
			size_t k = 0;
			if (!json_is_string(t))
				continue;
			while (k < n && !jstr_eq(col[k], t))
				k++;
			if (k < n)
				continue;
			if (n == cap) {
				const json_t **c = realloc(col, 2 * cap * sizeof *col);
				if (!c) {
					free(col);
					return NULL;
				}
				col = c;
				cap *= 2;
			}
			col[n++] = t;
		}
	}
	*n_out = n;
	return col;
}

/* A user's speedup on one task in the ranking row, with its submission. */
static void per_task_cell(struct buf *b, const json_t *row, const json_t *task)
{
	size_t i;
	const json_t *pt;

	json_array_foreach(json_object_get(row, "per_task"), i, pt) {
		if (!jstr_eq(json_object_get(pt, "task"), task))
			continue;
		put_speedup(b, json_object_get(pt, "speedup"));
		if (json_is_integer(json_object_get(pt, "submission")))
			putf(b, " <span class=\"sub\">#%lld</span>",
			     (long long)json_integer_value(json_object_get(pt, "submission")));
		return;
	}
	puts_(b, DASH);
}

static void ranking_table(struct buf *b, const json_t *bd, const char *id)
{
	const json_t *ranking = json_object_get(bd, "ranking"), *row, *rank = json_object_get(bd, "rank");
	int geomean = json_is_string(rank) && !strcmp(json_string_value(rank), "geomean");
	size_t n_col = 0, i;
	const json_t **col = NULL;

	json_array_foreach(ranking, i, row)
		if (json_array_size(json_object_get(row, "per_task")))
			geomean = 1;
	if (geomean && !(col = task_columns(bd, ranking, &n_col))) {
		b->oom = 1;
		return;
	}
	putf(b, "<h3>Ranking</h3>\n<div class=\"scroll\"><table class=\"ranking\" id=\"ranking-%s\">"
	     "<thead><tr><th class=\"r\">rank</th><th>user</th><th class=\"r\">score</th>", id);
	for (size_t c = 0; c < n_col; c++) {
		puts_(b, "<th class=\"r\">");
		put_jstr(b, col[c], 0);
		puts_(b, "</th>");
	}
	puts_(b, "</tr></thead><tbody>\n");
	json_array_foreach(ranking, i, row) {
		puts_(b, "<tr class=\"rank-row\"><td class=\"rank r\">");
		put_int(b, json_object_get(row, "rank"));
		puts_(b, "</td><td class=\"user\">");
		put_jstr(b, json_object_get(row, "user"), 0);
		puts_(b, "</td><td class=\"score r\">");
		put_speedup(b, json_object_get(row, "score"));
		puts_(b, "</td>");
		for (size_t c = 0; c < n_col; c++) {
			puts_(b, "<td class=\"r\">");
			per_task_cell(b, row, col[c]);
			puts_(b, "</td>");
		}
		puts_(b, "</tr>\n");
	}
	if (!json_array_size(ranking))
		putf(b, "<tr class=\"empty\"><td colspan=\"%zu\">no ranked submission yet</td></tr>\n",
		     3 + n_col);
	puts_(b, "</tbody></table></div>\n");
	free(col);
}

static void task_rankings(struct buf *b, const json_t *bd, const char *id)
{
	const json_t *trs = json_object_get(bd, "task_rankings"), *tr, *row;
	size_t i, j;

	puts_(b, "<h3>Per-task rankings</h3>\n");
	if (!json_array_size(trs))
		puts_(b, "<p class=\"empty\">no ranked submission yet</p>\n");
	json_array_foreach(trs, i, tr) {
		const json_t *ranking = json_object_get(tr, "ranking");
		puts_(b, "<h4 class=\"task-name\">");
		put_jstr(b, json_object_get(tr, "task"), 0);
		putf(b, "</h4>\n<table class=\"task-ranking\" id=\"task-ranking-%s-%zu\"><thead><tr>"
		     "<th class=\"r\">rank</th><th>user</th><th class=\"r\">speedup</th>"
		     "<th class=\"r\">submission</th></tr></thead><tbody>\n", id, i);
		json_array_foreach(ranking, j, row) {
			puts_(b, "<tr class=\"task-rank-row\"><td class=\"rank r\">");
			put_int(b, json_object_get(row, "rank"));
			puts_(b, "</td><td class=\"user\">");
			put_jstr(b, json_object_get(row, "user"), 0);
			puts_(b, "</td><td class=\"r\">");
			put_speedup(b, json_object_get(row, "speedup"));
			puts_(b, "</td><td class=\"r\"><span class=\"sub\">#");
			put_int(b, json_object_get(row, "submission"));
			puts_(b, "</span></td></tr>\n");
		}
		if (!json_array_size(ranking))
			puts_(b, "<tr class=\"empty\"><td colspan=\"4\">no ranked submission yet</td></tr>\n");
		puts_(b, "</tbody></table>\n");
	}
}

/* A run's cell: its status and, when it has one, its speedup. */
static void run_cell(struct buf *b, const json_t *run)
{
	const json_t *status = json_object_get(run, "status"), *sp = json_object_get(run, "speedup");

	putf(b, "<td class=\"%s\">", status_class(status));
	if (json_is_string(status))
		put_jstr(b, status, 0);
	else if (json_is_string(json_object_get(run, "state")))
		put_jstr(b, json_object_get(run, "state"), 0); /* queued or running: no status yet */
	else
		puts_(b, DASH);
	if (json_is_number(sp) && isfinite(json_number_value(sp))) {
		puts_(b, " ");
		put_speedup(b, sp);
	}
	puts_(b, "</td>");
}

static void sub_row(struct buf *b, const json_t *s)
{
	const json_t *id = json_object_get(s, "id"), *ranked = json_object_get(s, "ranked");
	const json_t *why = json_object_get(s, "why_not_ranked");

	if (json_is_integer(id))
		putf(b, "<tr class=\"sub-row\" data-id=\"%lld\">", (long long)json_integer_value(id));
	else
		puts_(b, "<tr class=\"sub-row\" data-id=\"\">");
	puts_(b, "<td class=\"r\">");
	put_int(b, id);
	puts_(b, "</td><td class=\"user\">");
	put_jstr(b, json_object_get(s, "user"), 0);
	puts_(b, "</td><td class=\"task\">");
	put_jstr(b, json_object_get(s, "task"), 0);
	puts_(b, "</td><td class=\"file\">");
	put_jstr(b, json_object_get(s, "file_name"), 0);
	puts_(b, "</td><td class=\"created\">");
	put_jstr(b, json_object_get(s, "created"), 0);
	puts_(b, "</td><td class=\"state\">");
	put_jstr(b, json_object_get(s, "state"), 0);
	puts_(b, "</td>");
	run_cell(b, json_object_get(s, "public"));
	run_cell(b, json_object_get(s, "secret")); /* its detail is never shown */
	if (json_is_true(ranked)) {
		puts_(b, "<td class=\"ranked st-ok\">yes</td>");
	} else if (json_is_false(ranked)) {
		puts_(b, "<td class=\"ranked st-na\">no");
		if (json_is_string(why)) {
			puts_(b, ": ");
			put_jstr(b, why, DETAIL_MAX);
		}
		puts_(b, "</td>");
	} else {
		puts_(b, "<td class=\"ranked st-na\">" DASH "</td>");
	}
	puts_(b, "<td class=\"detail\">");
	put_jstr(b, json_object_get(json_object_get(s, "public"), "detail"), DETAIL_MAX);
	puts_(b, "</td></tr>\n");
}

static void subs_table(struct buf *b, const json_t *bd, const char *id)
{
	const json_t *subs = json_object_get(bd, "submissions"), *s;
	size_t i;

	putf(b, "<h3>Submissions (%zu)</h3>\n<div class=\"scroll\"><table class=\"subs\" id=\"subs-%s\">"
	     "<thead><tr><th class=\"r\">id</th><th>user</th><th>task</th><th>file</th>"
	     "<th>created</th><th>state</th><th>public run</th><th>secret run</th><th>ranked</th>"
	     "<th>public detail</th></tr></thead><tbody>\n", json_array_size(subs), id);
	json_array_foreach(subs, i, s)
		sub_row(b, s);
	if (!json_array_size(subs))
		puts_(b, "<tr class=\"empty\"><td colspan=\"10\">no submissions</td></tr>\n");
	puts_(b, "</tbody></table></div>\n");
}

static void board(struct buf *b, const json_t *bd, const char *id)
{
	const json_t *tasks = json_object_get(bd, "tasks"), *t;
	size_t i;

	putf(b, "<section class=\"board\" id=\"board-%s\">\n<h2 class=\"board-name\">", id);
	put_jstr(b, json_object_get(bd, "name"), 0);
	puts_(b, "</h2>\n<p class=\"meta\"><b>tasks:</b> ");
	json_array_foreach(tasks, i, t) {
		if (i)
			puts_(b, ", ");
		put_jstr(b, t, 0);
	}
	if (!json_array_size(tasks))
		puts_(b, DASH);
	puts_(b, "<br><b>backend:</b> ");
	put_jstr(b, json_object_get(bd, "backend"), 0);
	puts_(b, "<br><b>ranking rule:</b> ");
	rule_text(b, bd);
	if (json_is_false(json_object_get(bd, "timing")))
		puts_(b, "<br>A submission ranks when its public and its secret run are both ok.</p>\n");
	else
		puts_(b, "<br>A submission ranks when its public and its secret run are both ok; its "
			 "score is the public run's speedup over the baseline at the low end of its 95% "
			 "interval (resubmitting to catch a lucky measurement earns nothing); the "
			 "secret run must pass, and only its verdict is shown.</p>\n");
	/* a per-task board has no overall ranking: its tasks' tables are it */
	const json_t *rank = json_object_get(bd, "rank");
	if (!(json_is_string(rank) && !strcmp(json_string_value(rank), "per-task")))
		ranking_table(b, bd, id);
	task_rankings(b, bd, id);
	subs_table(b, bd, id);
	puts_(b, "</section>\n");
}

char *srv_page_html(const json_t *boards, const char *title, const char *generated)
{
	struct buf b = { 0 };
	size_t n = json_array_size(boards), i;
	char **ids = calloc(n ? n : 1, sizeof *ids);
	const json_t *bd;

	if (!ids)
		return NULL;
	if (!title)
		title = "crucible";
	for (i = 0; i < n; i++)
		if (!(ids[i] = board_id(json_object_get(json_array_get(boards, i), "name"), ids, i)))
			b.oom = 1;
	puts_(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		  "style-src 'unsafe-inline'\">\n<meta name=\"referrer\" content=\"no-referrer\">\n"
		  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
	put_text(&b, title);
	puts_(&b, "</title>\n<style>");
	puts_(&b, css);
	puts_(&b, "</style>\n</head><body>\n<h1>");
	put_text(&b, title);
	puts_(&b, "</h1>\n");
	if (n > 1) {
		puts_(&b, "<nav>");
		for (i = 0; i < n && !b.oom; i++) {
			putf(&b, "<a href=\"#board-%s\">", ids[i]);
			put_jstr(&b, json_object_get(json_array_get(boards, i), "name"), 0);
			puts_(&b, "</a>");
		}
		puts_(&b, "</nav>\n");
	}
	if (!n)
		puts_(&b, "<p class=\"empty\">no boards</p>\n");
	json_array_foreach(boards, i, bd)
		if (!b.oom)
			board(&b, bd, ids[i]);
	puts_(&b, "<footer>generated ");
	if (generated)
		put_text(&b, generated);
	else
		puts_(&b, DASH);
	puts_(&b, " &middot; a secret run's detail is never shown</footer>\n</body></html>\n");
	for (i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

char *srv_html_text(const char *s, size_t n, size_t max)
{
	struct buf b = { 0 };

	put(&b, "", 0); /* "" for empty text, not NULL */
	put_text_n(&b, s ? s : "", s ? n : 0, max);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
