/* test_page.c — the rankings page (serve/srv_page.c) as HTML text: hostile
 * names, file names, details, task and board names come out as text (no
 * element, no attribute they could open), numbers to 3 significant digits
 * and "—" for a null, the empty states, malformed BOARDVIEWs (missing
 * fields, wrong types) shown as "—", a 5000-submission board in bounded
 * size, the CSP; srv_html_text's cuts. page_chromium.sh checks the same page
 * as a browser builds it. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "serve/srv_page.h"

#define DASH "\xe2\x80\x94"
#define CSP "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; " \
	    "style-src 'unsafe-inline'\">"

/* The page of a JSON text (an array of BOARDVIEWs, or any JSON at all). */
static char *page_of(const char *json)
{
	json_error_t jerr;
	json_t *j = json_loads(json, JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
	char *html;

	if (!j)
		fail_msg("test JSON: %s at %d", jerr.text, jerr.position);
	html = srv_page_html(j, "t", "2026-12-06T18:00:00Z");
	json_decref(j);
	assert_non_null(html);
	return html;
}

/* Failing allocations: the test executable interposes malloc, calloc,
 * realloc and free over glibc's (its __libc_ entry points) to fail the k-th
 * allocation and count the blocks still held. Not under AddressSanitizer,
 * which owns malloc itself. */
#if defined(__SANITIZE_ADDRESS__)
#define NO_INTERPOSE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define NO_INTERPOSE 1
#endif
#endif
#if defined(__GLIBC__) && !defined(NO_INTERPOSE)
#define INTERPOSE 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
static long fail_after = -1; /* allocations that succeed before one fails; -1: none fails */
static long held;            /* blocks allocated and not freed, while counting */
static int counting;

static int fail_now(void)
{
	if (fail_after < 0)
		return 0;
	if (fail_after-- == 0) {
		fail_after = -1;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	void *p = fail_now() ? NULL : __libc_malloc(n);
	held += counting && p;
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = fail_now() ? NULL : __libc_calloc(n, size);
	held += counting && p;
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p = fail_now() ? NULL : __libc_realloc(old, n);
	held += counting && p && !old;
	return p;
}

void free(void *p)
{
	held -= counting && p;
	__libc_free(p);
}
#endif

#define assert_has(h, s) do { if (!strstr((h), (s))) fail_msg("missing: %s", (s)); } while (0)
#define assert_hasnt(h, s) do { if (strstr((h), (s))) fail_msg("present: %s", (s)); } while (0)

static size_t count(const char *h, const char *s)
{
	size_t n = 0;

	for (const char *p = h; (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

/* Every element the page opens it closes; "<<" would be a cut tag. */
static void assert_balanced(const char *h)
{
	assert_int_equal(count(h, "<table"), count(h, "</table>"));
	assert_int_equal(count(h, "<tr"), count(h, "</tr>"));
	assert_int_equal(count(h, "<td"), count(h, "</td>"));
	assert_int_equal(count(h, "<th>") + count(h, "<th "), count(h, "</th>"));
	assert_int_equal(count(h, "<section"), count(h, "</section>"));
	assert_int_equal(count(h, "<"), count(h, ">"));
	assert_hasnt(h, "<<");
}

static int valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 :
			(*p & 0xf8) == 0xf0 ? 3 : -1;
		if (n < 0)
			return 0;
		p++;
		while (n--)
			if ((*p++ & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

static const char hostile[] =
	"[{\"name\": \"my board <b>\\\"x\\\"\", \"tasks\": [\"L1/<i>1</i>\"], \"backend\": \"<u>cpu\","
	" \"rank\": \"geomean\","
	" \"ranking\": [{\"rank\": 1, \"user\": \"<script>alert(1)</script>\", \"score\": 1.5,"
	"   \"per_task\": [{\"task\": \"L1/<i>1</i>\", \"speedup\": 1.5, \"submission\": 3}]}],"
	" \"task_rankings\": [{\"task\": \"L1/<i>1</i>\", \"ranking\": [{\"rank\": 1,"
	"   \"user\": \"<SCRIPT>alert(1)</SCRIPT>\", \"speedup\": 1.5, \"submission\": 3}]}],"
	" \"submissions\": [{\"id\": 3, \"user\": \"o'brien \\\"q\\\"\","
	"   \"task\": \"L1/<i>1</i>\", \"file_name\": \"\\\"><img src=x onerror=alert(1)>\","
	"   \"created\": \"<b>now\", \"state\": \"scored\","
	"   \"public\": {\"status\": \"<s>ok\", \"speedup\": 1.5,"
	"              \"detail\": \"</td></tr></table><script>alert(2)</script>\"},"
	"   \"secret\": {\"status\": \"ok\", \"detail\": \"SECRET CASE 7\"}, \"ranked\": false,"
	"   \"why_not_ranked\": \"<iframe src=//evil>\"}]}]";

static void test_hostile_strings_are_text(void **state)
{
	(void)state;
	char *h = page_of(hostile);

	assert_null(strcasestr(h, "<script"));
	assert_null(strcasestr(h, "<img"));
	assert_null(strcasestr(h, "<iframe"));
	assert_null(strcasestr(h, "<i>"));
	assert_null(strcasestr(h, "<u>"));
	assert_null(strcasestr(h, "<s>"));
	assert_has(h, "<td class=\"user\">&lt;script&gt;alert(1)&lt;/script&gt;</td>");
	assert_has(h, "<td class=\"user\">&lt;SCRIPT&gt;alert(1)&lt;/SCRIPT&gt;</td>");
	assert_has(h, "<td class=\"file\">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</td>");
	assert_has(h, "<td class=\"user\">o&#39;brien &quot;q&quot;</td>");
	assert_has(h, "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;script&gt;alert(2)&lt;/script&gt;");
	assert_has(h, "<h2 class=\"board-name\">my board &lt;b&gt;&quot;x&quot;</h2>");
	assert_has(h, "L1/&lt;i&gt;1&lt;/i&gt;");
	assert_has(h, "&lt;u&gt;cpu");
	assert_has(h, "no: &lt;iframe src=//evil&gt;</td>");
	/* the id carries only [A-Za-z0-9_-]: no quote can close the attribute */
	assert_has(h, "id=\"ranking-my_board__b__x_\"");
	assert_has(h, "id=\"subs-my_board__b__x_\"");
	/* the status class is a literal, not the status text */
	assert_has(h, "<td class=\"st-bad\">&lt;s&gt;ok 1.50x</td>");
	/* a secret run's detail is never shown */
	assert_hasnt(h, "SECRET CASE");
	assert_has(h, CSP);
	assert_balanced(h);
	free(h);
}

static void test_title_and_footer_escaped(void **state)
{
	(void)state;
	json_t *b = json_array();
	char *h = srv_page_html(b, "<script>x</script>&", "<b>\"when\"");

	assert_non_null(h);
	assert_null(strcasestr(h, "<script"));
	assert_has(h, "<title>&lt;script&gt;x&lt;/script&gt;&amp;</title>");
	assert_has(h, "<h1>&lt;script&gt;x&lt;/script&gt;&amp;</h1>");
	assert_has(h, "generated &lt;b&gt;&quot;when&quot;");
	free(h);
	h = srv_page_html(b, NULL, NULL);
	assert_non_null(h);
	assert_has(h, "generated " DASH);
	free(h);
	json_decref(b);
}

static void test_controls_and_bidi(void **state)
{
	(void)state;
	char *h = page_of("[{\"name\": \"b\", \"submissions\": [{\"id\": 1,"
			  " \"user\": \"a\\u0001b\\u202ec\\u0000d\\nz\", \"file_name\": \"\\u001b[31mred\"}]}]");

	assert_has(h, "<td class=\"user\">a\\x01b\\xe2\\x80\\xaec\\x00d z</td>");
	assert_has(h, "<td class=\"file\">\\x1b[31mred</td>");
	assert_null(memchr(h, 0x1b, strlen(h)));
	assert_true(valid_utf8(h));
	free(h);
}

static void test_numbers(void **state)
{
	(void)state;
	char *h = page_of("[{\"name\": \"b\", \"rank\": \"geomean\", \"tasks\": [\"t1\", \"t2\"], \"ranking\": ["
			  "{\"rank\": 1, \"user\": \"u1\", \"score\": 2000.4},"
			  "{\"rank\": 2, \"user\": \"u2\", \"score\": 12.345},"
			  "{\"rank\": 3, \"user\": \"u3\", \"score\": 2},"
			  "{\"rank\": 4, \"user\": \"u4\", \"score\": 1.2345,"
			  "  \"per_task\": [{\"task\": \"t1\", \"speedup\": null, \"submission\": 9},"
			  "                {\"task\": \"t2\", \"speedup\": 0.5}]},"
			  "{\"rank\": 5, \"user\": \"u5\", \"score\": 0.0123},"
			  "{\"rank\": 6, \"user\": \"u6\", \"score\": null},"
			  "{\"rank\": 7, \"user\": \"u7\", \"score\": \"1.5\"},"
			  "{\"rank\": 8, \"user\": \"u8\"}]}]");

	assert_has(h, "<td class=\"score r\">2000x</td>");
	assert_has(h, "<td class=\"score r\">12.3x</td>");
	assert_has(h, "<td class=\"score r\">2.00x</td>");
	assert_has(h, "<td class=\"score r\">1.23x</td>");
	assert_has(h, "<td class=\"score r\">0.0123x</td>");
	assert_int_equal(count(h, "<td class=\"score r\">" DASH "</td>"), 3); /* null, a string, missing */
	assert_has(h, "<td class=\"r\">" DASH " <span class=\"sub\">#9</span></td>");
	assert_has(h, "<td class=\"r\">0.500x</td>");
	/* the ranks in the order given */
	const char *p = h;
	for (int r = 1; r <= 8; r++) {
		char want[96];
		snprintf(want, sizeof want, "<td class=\"rank r\">%d</td><td class=\"user\">u%d</td>", r, r);
		assert_non_null(p = strstr(p, want));
	}
	assert_null(strcasestr(h, "nan"));
	assert_null(strcasestr(h, "inf"));
	assert_hasnt(h, ">0x");
	assert_int_equal(count(h, "class=\"rank-row\""), 8);
	free(h);
}

static void test_runs_and_ranked(void **state)
{
	(void)state;
	char *h = page_of("[{\"name\": \"b\", \"submissions\": ["
			  "{\"id\": 1, \"public\": {\"status\": \"ok\", \"speedup\": null}, \"secret\": {\"status\": \"ok\"},"
			  " \"ranked\": true},"
			  "{\"id\": 2, \"state\": \"queued\", \"public\": {\"state\": \"running\", \"status\": null},"
			  " \"secret\": {\"state\": \"queued\"}, \"ranked\": false, \"why_not_ranked\": null},"
			  "{\"id\": 3, \"public\": {\"status\": \"mismatch\", \"speedup\": 3},"
			  " \"secret\": null, \"ranked\": \"yes\"}]}]");

	assert_has(h, "<tr class=\"sub-row\" data-id=\"1\"><td class=\"r\">1</td>");
	assert_has(h, "<td class=\"st-ok\">ok</td><td class=\"st-ok\">ok</td><td class=\"ranked st-ok\">yes</td>");
	assert_has(h, "<td class=\"st-na\">running</td><td class=\"st-na\">queued</td>"
		      "<td class=\"ranked st-na\">no</td>");
	assert_has(h, "<td class=\"st-bad\">mismatch 3.00x</td><td class=\"st-na\">" DASH "</td>"
		      "<td class=\"ranked st-na\">" DASH "</td>");
	free(h);
}

static void test_empty(void **state)
{
	(void)state;
	char *h = page_of("[]");

	assert_has(h, "no boards");
	assert_has(h, CSP);
	assert_hasnt(h, "<nav>"); /* one board or none: no index */
	free(h);
	h = page_of("[{\"name\": \"b\", \"tasks\": [\"t\"], \"backend\": \"cpu\", \"rank\": \"per-task\","
		    " \"ranking\": [], \"task_rankings\": [{\"task\": \"t\", \"ranking\": []}],"
		    " \"submissions\": []}]");
	assert_hasnt(h, "id=\"ranking-b\""); /* a per-task board: its tasks' tables only */
	assert_has(h, "id=\"task-ranking-b-0\"");
	assert_has(h, "id=\"subs-b\"");
	assert_int_equal(count(h, "no ranked submission yet"), 1); /* task t */
	assert_has(h, "no submissions");
	assert_has(h, "Submissions (0)");
	assert_hasnt(h, "class=\"rank-row\"");
	assert_hasnt(h, "class=\"sub-row\"");
	assert_balanced(h);
	free(h);
}

static void test_malformed(void **state)
{
	(void)state;
	static const char *const cases[] = {
		"{}", "null", "\"boards\"", "[null, 1, \"x\", [], {}]",
		"[{\"name\": 5, \"tasks\": \"t\", \"backend\": [], \"rank\": 2, \"ranking\": {},"
		" \"task_rankings\": [1, {\"task\": 3, \"ranking\": \"no\"}], \"submissions\": 7}]",
		"[{\"name\": \"b\", \"ranking\": [1, null, {\"rank\": \"1\", \"user\": {}, \"score\": [],"
		"  \"per_task\": [5, {\"task\": null}]}],"
		" \"submissions\": [1, \"s\", {\"id\": \"7\", \"user\": 3, \"public\": [], \"secret\": \"ok\","
		"  \"file_name\": null, \"created\": 17, \"ranked\": 1}]}]",
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *h = page_of(cases[i]);
		assert_has(h, "</html>");
		assert_null(strcasestr(h, "nan"));
		assert_balanced(h);
		free(h);
	}
	char *h = page_of(cases[5]);
	assert_has(h, "<td class=\"rank r\">" DASH "</td><td class=\"user\">" DASH "</td>"
		      "<td class=\"score r\">" DASH "</td>");
	assert_int_equal(count(h, "class=\"rank-row\""), 3);
	assert_int_equal(count(h, "<tr class=\"sub-row\" data-id=\"\">"), 3);
	assert_has(h, "<td class=\"r\">" DASH "</td><td class=\"user\">" DASH "</td>");
	free(h);
	h = srv_page_html(NULL, "t", "g");
	assert_non_null(h);
	assert_has(h, "no boards");
	free(h);
}

static void test_duplicate_ids(void **state)
{
	(void)state;
	char *h = page_of("[{\"name\": \"a b\"}, {\"name\": \"a_b\"}, {\"name\": \"a<b\"}, {}, {\"name\": \"\"}]");

	assert_int_equal(count(h, "id=\"ranking-a_b\""), 1);
	assert_int_equal(count(h, "id=\"ranking-a_b-2\""), 1);
	assert_int_equal(count(h, "id=\"ranking-a_b-3\""), 1);
	assert_int_equal(count(h, "id=\"ranking-_\""), 1);
	assert_int_equal(count(h, "id=\"ranking-_-2\""), 1);
	assert_has(h, "<a href=\"#board-a_b-3\">a&lt;b</a>");
	free(h);
}

/* 5000 submissions, each with a 1000-byte detail: the page shows every row
 * and stays near 1 KB a row (the detail cut to 200 bytes). */
static void test_large_board(void **state)
{
	(void)state;
	json_t *subs = json_array(), *bd, *boards;
	char detail[1001];

	memset(detail, 'd', 1000);
	detail[1000] = '\0';
	for (int i = 0; i < 5000; i++)
		json_array_append_new(subs, json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:f, s:s},"
						      " s:{s:s, s:f}, s:b, s:n}",
						      "id", 5000 - i, "user", "user_with_a_name", "task", "L1/23_Softmax",
						      "file_name", "softmax_candidate.c", "created", "2026-12-06T18:00:00Z",
						      "state", "scored", "public", "status", "ok", "speedup", 1.234,
						      "detail", detail, "secret", "status", "ok", "speedup", 1.2,
						      "ranked", 1, "why_not_ranked"));
	bd = json_pack("{s:s, s:[s], s:s, s:s, s:[], s:[], s:o}", "name", "big", "tasks", "L1/23_Softmax",
		       "backend", "cpu", "rank", "geomean", "ranking", "task_rankings", "submissions", subs);
	boards = json_pack("[o]", bd);
	assert_non_null(boards);
	char *h = srv_page_html(boards, "t", "g");
	assert_non_null(h);
	size_t n = strlen(h);
	print_message("5000 submissions: %zu bytes\n", n);
	assert_int_equal(count(h, "class=\"sub-row\""), 5000);
	assert_has(h, "data-id=\"5000\"");
	assert_has(h, "data-id=\"1\"");
	assert_true(n < 5000 * 1024);
	assert_true(n > 5000 * 200);
	memset(detail, 'd', 201); /* no detail longer than 200 bytes */
	detail[201] = '\0';
	assert_hasnt(h, detail);
	free(h);
	json_decref(boards);
}

static void test_html_text_cuts(void **state)
{
	(void)state;
	char in[301], *t;

	/* 150 two-byte characters: cut at 200 bytes, never inside one */
	for (int i = 0; i < 150; i++)
		memcpy(in + 2 * i, "\xc3\xa9", 2);
	in[300] = '\0';
	assert_non_null(t = srv_html_text(in, 300, 199));
	assert_true(valid_utf8(t));
	assert_int_equal(strlen(t), 198 + 3); /* 99 characters and "…" */
	free(t);
	/* escapes of 4 bytes: cut between two, never inside one */
	memset(in, 1, 100);
	assert_non_null(t = srv_html_text(in, 100, 10));
	assert_string_equal(t, "\\x01\\x01\xe2\x80\xa6");
	free(t);
	/* short text: whole, entities after the cut's count */
	assert_non_null(t = srv_html_text("<a href='x'>&", 13, 200));
	assert_string_equal(t, "&lt;a href=&#39;x&#39;&gt;&amp;");
	free(t);
	assert_non_null(t = srv_html_text("a\0b", 3, 0));
	assert_string_equal(t, "a\\x00b");
	free(t);
	assert_non_null(t = srv_html_text(NULL, 5, 0));
	assert_string_equal(t, "");
	free(t);
}

/* Each allocation of srv_page_html failed in turn: NULL, nothing held;
 * once none fails, the page is the one rendered without failures. */
static void test_alloc_failures(void **state)
{
	(void)state;
#ifdef INTERPOSE
	json_t *j = json_loads(hostile, 0, NULL);
	char *want, *h;
	long k;

	assert_non_null(j);
	assert_non_null(want = srv_page_html(j, "t", "g"));
	for (k = 0;; k++) {
		held = 0;
		counting = 1;
		fail_after = k;
		h = srv_page_html(j, "t", "g");
		int fired = fail_after < 0;
		fail_after = -1;
		counting = 0;
		if (!fired) {
			assert_non_null(h);
			assert_string_equal(h, want);
			free(h);
			break;
		}
		if (h)
			fail_msg("allocation %ld failed, yet a page came back", k);
		assert_int_equal(held, 0);
	}
	assert_true(k > 3);
	free(want);
	json_decref(j);
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_strings_are_text),
		cmocka_unit_test(test_title_and_footer_escaped),
		cmocka_unit_test(test_controls_and_bidi),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_runs_and_ranked),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_duplicate_ids),
		cmocka_unit_test(test_large_board),
		cmocka_unit_test(test_html_text_cuts),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
