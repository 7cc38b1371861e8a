/* page_fixture.c — renders the rankings page (serve/srv_page.c) from a JSON
 * file, so page_chromium.sh can load it in a browser without a server:
 *   page_fixture BOARDS.json OUT.html [TITLE]
 * BOARDS.json holds a JSON array of BOARDVIEW objects, or the API's
 * {"boards": [...]}. Exit 0 written, 1 unreadable input or output. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/srv_page.h"

int main(int argc, char **argv)
{
	json_error_t jerr;
	json_t *root, *boards;
	char *html;
	FILE *f;
	int rc = 1;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: page_fixture BOARDS.json OUT.html [TITLE]\n");
		return 1;
	}
	if (!(root = json_load_file(argv[1], 0, &jerr))) {
		fprintf(stderr, "page_fixture: %s:%d: %s\n", argv[1], jerr.line, jerr.text);
		return 1;
	}
	boards = json_is_array(root) ? root : json_object_get(root, "boards");
	html = srv_page_html(boards, argc > 3 ? argv[3] : "crucible fixture", "2026-12-06T18:00:00Z");
	if (!html) {
		fprintf(stderr, "page_fixture: out of memory\n");
		goto out;
	}
	if (!(f = fopen(argv[2], "w"))) {
		perror(argv[2]);
		goto out;
	}
	if (fputs(html, f) < 0 || fclose(f)) {
		fprintf(stderr, "page_fixture: cannot write %s\n", argv[2]);
		goto out;
	}
	rc = 0;
out:
	free(html);
	json_decref(root);
	return rc;
}
