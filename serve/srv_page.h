/* srv_page.h — the rankings page (srv_page.c): boards, their rankings,
 * every submission's history and verdicts, rendered from the same JSON
 * views the API serves (docs/SERVE.md: BOARDVIEW), every string escaped
 * for HTML. Self-contained: no script, no external resource. */
#ifndef SRV_PAGE_H
#define SRV_PAGE_H

#include <jansson.h>
#include <stddef.h>

/* boards: a JSON array of BOARDVIEW objects (borrowed); title: the page's
 * heading (the server's name); generated: a UTC time shown at the foot.
 * Returns malloc'd HTML, NUL-terminated (NULL only when memory runs out). */
char *srv_page_html(const json_t *boards, const char *title, const char *generated);

/* s[0..n) (may hold NUL bytes) as HTML text, safe in an element and in a
 * quoted attribute: the project's rule for candidate text (common/cr_text.h:
 * controls, invalid UTF-8 and bidi overrides as \xNN), then &amp; &lt; &gt;
 * &quot; &#39;. At most max bytes of that text (0: no limit), then "…"; a
 * cut never splits a character or an escape. malloc'd; NULL when out of
 * memory. */
char *srv_html_text(const char *s, size_t n, size_t max);

#endif
