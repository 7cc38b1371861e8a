/* cmd_submit.c — `crucible submit`: the client of `crucible serve`. Each
 * FILE becomes one submission to the board (POST
 * /v1/boards/NAME/submissions, libcurl); then the submissions are followed
 * (GET /v1/submissions/ID) and each change is printed as it arrives: the
 * public run's verdict and speedup, the secret run's verdict, the place.
 * The token comes from CRUCIBLE_TOKEN, never from the command line (where
 * ps would show it). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>
#include <jansson.h>
#include "common/cr_cli.h"
#include "common/cr_status.h"
#include "decode/dec_run.h"
#include "harness/cli.h"

#define CMD "submit"

static void usage_submit(FILE *f)
{
	fprintf(f,
		"usage: crucible submit FILE... --server URL --board NAME [--task T] [--no-wait]\n"
		"                       [--json] [--timeout S] [--retry-window S]\n"
		"       crucible submit --follow ID... --server URL [--json]\n"
		"Submits each candidate FILE to a board of `crucible serve` and follows it: the\n"
		"public run's verdict and speedup (its seed is shown), the secret run's verdict,\n"
		"and the submission's place. A submission ranks when both runs pass.\n\n"
		"OPTIONS\n"
		"  --server URL   the service (e.g. http://127.0.0.1:8080)\n"
		"  --board NAME   the board\n"
		"  --task T       the task (default: each file's @task line)\n"
		"  --no-wait      submit and print the ids; do not follow\n"
		"  --json         print each submission's final state as one JSON line on\n"
		"                 stdout (the progress lines go to stderr)\n"
		"  --timeout S    stop following after S seconds (default 3600)\n"
		"  --follow       the arguments are submission ids, not files: follow them\n"
		"  --retry-window S  keep trying a server that answers 429 or 5xx, or cannot\n"
		"                 be reached, for S seconds before giving up (default 120)\n"
		"  -h, --help     this page\n");
	cr_cli_help_tail(f,
			 "  0  every submission was scored and ranks (--no-wait: every one accepted)\n"
			 "  1  a submission was scored and does not rank (a run did not pass)\n"
			 "  2  bad usage or a request the server refused (4xx: its message is shown)\n"
			 "  3  the server cannot be reached, failed (5xx), the harness failed on a\n"
			 "     submission, or --timeout passed\n",
			 0);
	fputs("\nENVIRONMENT\n  CRUCIBLE_TOKEN  the API token (from `crucible serve user add`)\n", f);
}

struct http {
	CURL *c;
	double retry_after; /* the last answer's Retry-After, seconds */
	char auth[128];
	struct curl_slist *headers;
	const char *server;
};

struct buf {
	char *p;
	size_t n;
};

static size_t take(char *p, size_t sz, size_t n, void *ud)
{
	struct buf *b = ud;
	size_t add = sz * n;
	if (b->n + add > (64u << 20))
		return 0;
	char *q = realloc(b->p, b->n + add + 1);
	if (!q)
		return 0;
	memcpy(q + b->n, p, add);
	b->p = q;
	b->n += add;
	b->p[b->n] = 0;
	return add;
}

/* One request: *code the HTTP status (0 when none came), *out the body as
 * JSON (NULL when it was not). false with the message said when the server
 * could not be reached. */
static size_t header_cb(char *p, size_t sz, size_t n, void *ud)
{
	struct http *h = ud;
	size_t len = sz * n;
	if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		double v = strtod(p + 12, NULL);
		h->retry_after = v > 0 && v < 3600 ? v : 5;
	}
	return len;
}

static bool request(struct http *h, const char *method, const char *path, const char *body,
		    long *code, json_t **out, bool quiet)
{
	h->retry_after = 5;
	char url[2048];
	snprintf(url, sizeof url, "%s%s", h->server, path);
	struct buf b = { 0 };
	curl_easy_reset(h->c);
	curl_easy_setopt(h->c, CURLOPT_URL, url);
	curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(h->c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h->c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT, 20L);
	curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->c, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(h->c, CURLOPT_HEADERDATA, h);
	if (!strcmp(method, "POST")) {
		curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	CURLcode cc = curl_easy_perform(h->c);
	*code = 0;
	*out = NULL;
	if (cc != CURLE_OK) {
		if (!quiet)
			cr_cli_error(CMD, "%s: %s (is the server running? check --server)", url,
				     curl_easy_strerror(cc));
		free(b.p);
		return false;
	}
	curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, code);
	*out = b.p ? json_loads(b.p, 0, NULL) : NULL;
	free(b.p);
	return true;
}

/* request(), again while the answer is 429 or 5xx or no answer came, for
 * up to window_s (429: after its Retry-After). *code as request's. */
static bool request_retry(struct http *h, const char *method, const char *path, const char *body,
			  double window_s, long *code, json_t **out)
{
	int64_t end = cr_now_ns() + (int64_t)(window_s * 1e9);
	for (int tries = 0;; tries++) {
		bool reached = request(h, method, path, body, code, out, tries > 0);
		bool again = !reached || *code == 429 || *code >= 500;
		if (!again || cr_now_ns() >= end)
			return reached;
		if (tries == 0)
			cr_cli_error(CMD, "%s %s: %s; trying again for up to %g s (--retry-window)",
				     method, path, reached ? "the server is busy or failing" : "no answer",
				     window_s);
		double wait = *code == 429 ? h->retry_after : 1.0 + tries;
		if (wait > 30)
			wait = 30;
		json_decref(*out);
		*out = NULL;
		usleep((useconds_t)(wait * 1e6));
	}
}

static const char *err_msg(const json_t *j)
{
	const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	return m ? m : "(no message)";
}

struct sub {
	const char *file;
	long long id;
	char last[512]; /* the last line printed for it */
	bool final;
	int rc;
	json_t *view;
};

static const char *s_(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* The submission's state in one line; final when scored or failed. */
static void describe(const json_t *v, char *line, size_t cap, bool *final, int *rc)
{
	const json_t *pub = json_object_get(v, "public"), *sec = json_object_get(v, "secret");
	const char *state = s_(v, "state");
	char p[160] = "", s[96] = "";
	const json_t *sp = json_object_get(pub, "speedup");
	if (json_is_string(json_object_get(pub, "status")))
		snprintf(p, sizeof p, "public %s%s", s_(pub, "status"), "");
	else
		snprintf(p, sizeof p, "public %s", s_(pub, "state"));
	if (json_is_number(sp))
		snprintf(p + strlen(p), sizeof p - strlen(p), " %#.3gx", json_number_value(sp));
	if (json_is_string(json_object_get(sec, "status")))
		snprintf(s, sizeof s, "secret %s", s_(sec, "status"));
	else
		snprintf(s, sizeof s, "secret %s", s_(sec, "state"));
	*final = !strcmp(state, "scored") || !strcmp(state, "error");
	if (!*final) {
		snprintf(line, cap, "%s; %s; %s", state, p, s);
		return;
	}
	if (!strcmp(state, "error")) {
		const char *why = s_(pub, "harness_error");
		if (!*why)
			why = s_(sec, "harness_error");
		snprintf(line, cap, "not scored: %s%s%s", s_(v, "why_not_ranked"), *why ? ": " : "", why);
		*rc = CR_EXIT_ENV;
	} else if (json_is_true(json_object_get(v, "ranked"))) {
		const json_t *sc = json_object_get(v, "score");
		snprintf(line, cap, "%s; %s; ranks %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
				    " (score %s%.3g%s)",
			 p, s, json_integer_value(json_object_get(v, "rank")),
			 json_integer_value(json_object_get(v, "of")), json_is_number(sc) ? "" : "n/a",
			 json_is_number(sc) ? json_number_value(sc) : 0.0, json_is_number(sc) ? "x" : "");
		if (!json_is_number(sc)) /* an untimed board: no number to show */
			snprintf(line, cap, "%s; %s; ranks %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT,
				 p, s, json_integer_value(json_object_get(v, "rank")),
				 json_integer_value(json_object_get(v, "of")));
		*rc = 0;
	} else {
		snprintf(line, cap, "%s; %s; not ranked: %s", p, s, s_(v, "why_not_ranked"));
		*rc = CR_EXIT_FAIL;
	}
	const char *detail = s_(pub, "detail");
	if (*detail && strcmp(s_(pub, "status"), "ok"))
		snprintf(line + strlen(line), cap - strlen(line), "\n    %.300s", detail);
}

static int submit_one(struct http *h, const char *board, const char *task, double window_s,
		      FILE *out, struct sub *s)
{
	/* the user's own file, named on the command line: a pipe or a
	 * process substitution (<(...)) is read as well as a regular file */
	FILE *f = fopen(s->file, "rbe");
	if (!f) {
		cr_cli_error(CMD, "%s: %s", s->file, strerror(errno));
		return CR_EXIT_USAGE;
	}
	enum { MAX_SRC = 8 << 20 };
	char *src = malloc(MAX_SRC + 1);
	size_t len = src ? fread(src, 1, MAX_SRC + 1, f) : 0;
	bool read_err = !src || ferror(f);
	fclose(f);
	if (read_err || len > MAX_SRC) {
		cr_cli_error(CMD, "%s: %s", s->file,
			     read_err ? "cannot be read" : "larger than 8 MiB: not a candidate");
		free(src);
		return CR_EXIT_USAGE;
	}
	/* the name the service shows: the file's, with what it does not take
	 * (spaces, other bytes, a leading '.') as '_'; none when it does not
	 * end in .c or .cu (the service names it submission.c) */
	const char *base = strrchr(s->file, '/') ? strrchr(s->file, '/') + 1 : s->file;
	char name[101];
	snprintf(name, sizeof name, "%s", base);
	for (char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
			*c = '_';
	if (name[0] == '.')
		name[0] = '_';
	size_t nl = strlen(name);
	bool named = strlen(base) <= 100 && ((nl > 2 && !strcmp(name + nl - 2, ".c")) ||
					     (nl > 3 && !strcmp(name + nl - 3, ".cu")));
	json_t *body = json_pack("{s:s%}", "source", src, len);
	free(src);
	if (!body) {
		cr_cli_error(CMD, "%s: not UTF-8 text (the service takes a source as JSON text; "
				  "convert it, e.g. iconv -f latin1 -t utf-8)",
			     s->file);
		return CR_EXIT_USAGE;
	}
	if (named)
		json_object_set_new(body, "file_name", json_string(name));
	if (task)
		json_object_set_new(body, "task", json_string(task));
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	char path[256];
	char *eb = curl_easy_escape(h->c, board, 0);
	snprintf(path, sizeof path, "/v1/boards/%s/submissions", eb ? eb : board);
	curl_free(eb);
	long code = 0;
	json_t *r = NULL;
	bool reached = request_retry(h, "POST", path, text ? text : "", window_s, &code, &r);
	free(text);
	if (!reached)
		return CR_EXIT_ENV;
	int rc = 0;
	if (code == 202 && json_is_integer(json_object_get(r, "id"))) {
		s->id = json_integer_value(json_object_get(r, "id"));
		fprintf(out, "%s: submission %lld to board %s (task %s, public seed %s)\n", s->file,
			s->id, board, s_(r, "task"), s_(json_object_get(r, "public"), "seed"));
	} else {
		cr_cli_error(CMD, "%s: HTTP %ld: %s", s->file, code, err_msg(r));
		rc = code >= 400 && code < 500 ? CR_EXIT_USAGE : CR_EXIT_ENV;
	}
	json_decref(r);
	fflush(out);
	return rc;
}

int cr_cmd_submit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' }, { "board", required_argument, NULL, 'b' },
		{ "task", required_argument, NULL, 't' },   { "no-wait", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },         { "timeout", required_argument, NULL, 'T' },
		{ "follow", no_argument, NULL, 'f' },       { "retry-window", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	const char *server = NULL, *board = NULL, *task = NULL;
	bool no_wait = false, as_json = false, follow = false;
	double timeout_s = 3600, window_s = 120;
	optind = 1;
	int c;
	struct cr_err oerr;
	cr_err_init(&oerr);
	while ((c = cr_cli_getopt(CMD, argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 's': server = optarg; break;
		case 'b': board = optarg; break;
		case 't': task = optarg; break;
		case 'n': no_wait = true; break;
		case 'j': as_json = true; break;
		case 'T': /* more than 0: a microsecond at least */
			if (dec_opt_real("--timeout", optarg, 1e-6, 1e7, &timeout_s, &oerr))
				return cr_cli_usage(CMD, "%s", oerr.msg);
			break;
		case 'r':
			if (dec_opt_real("--retry-window", optarg, 0, 86400, &window_s, &oerr))
				return cr_cli_usage(CMD, "%s", oerr.msg);
			break;
		case 'f': follow = true; break;
		case 'h': usage_submit(stdout); return 0;
		default: return CR_EXIT_USAGE;
		}
	}
	if (optind == argc)
		return cr_cli_usage(CMD, follow ? "--follow needs submission ids" : "no FILE to submit");
	if (!server)
		return cr_cli_usage(CMD, "--server URL is needed (the crucible serve to submit to)");
	if (!board && !follow)
		return cr_cli_usage(CMD, "--board NAME is needed");
	if (follow && (no_wait || task))
		return cr_cli_usage(CMD, "--follow takes no --no-wait or --task");
	for (int i = optind; follow && i < argc; i++) {
		uint64_t v;
		if (!cr_parse_u64(argv[i], &v) || v == 0)
			return cr_cli_usage(CMD, "--follow: '%s' is not a submission id", argv[i]);
	}
	/* --json: stdout holds the JSON lines alone; progress goes to stderr */
	FILE *out = as_json ? stderr : stdout;
	if (strncmp(server, "http://", 7) && strncmp(server, "https://", 8))
		return cr_cli_usage(CMD, "--server '%s': an http:// or https:// URL", server);
	const char *tok = getenv("CRUCIBLE_TOKEN");
	if (!tok || !*tok)
		return cr_cli_usage(CMD, "CRUCIBLE_TOKEN is not set (the token `crucible serve user "
					 "add` printed)");
	if (strlen(tok) > 100 || strpbrk(tok, "\r\n"))
		return cr_cli_usage(CMD, "CRUCIBLE_TOKEN is not a token");
	char srv[1024];
	snprintf(srv, sizeof srv, "%s", server);
	while (strlen(srv) && srv[strlen(srv) - 1] == '/')
		srv[strlen(srv) - 1] = 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct http h = { .c = curl_easy_init(), .server = srv };
	snprintf(h.auth, sizeof h.auth, "Authorization: Bearer %s", tok);
	h.headers = curl_slist_append(NULL, h.auth);
	h.headers = curl_slist_append(h.headers, "Content-Type: application/json");
	int n = argc - optind, rc = 0;
	struct sub *subs = calloc((size_t)n, sizeof *subs);
	if (!h.c || !h.headers || !subs) {
		cr_cli_error(CMD, "out of memory");
		return CR_EXIT_ENV;
	}
	for (int i = 0; i < n; i++) {
		subs[i].file = argv[optind + i];
		if (follow) {
			subs[i].id = strtoll(argv[optind + i], NULL, 10);
			continue;
		}
		int r = submit_one(&h, board, task, window_s, out, &subs[i]);
		if (r && (!rc || r > rc))
			rc = r;
		if (r == CR_EXIT_ENV && !subs[i].id)
			break; /* the server is not there: the rest would say the same */
	}
	int64_t deadline = cr_now_ns() + (int64_t)(timeout_s * 1e9);
	bool open = !no_wait;
	while (open) {
		open = false;
		for (int i = 0; i < n; i++) {
			struct sub *s = &subs[i];
			if (!s->id || s->final)
				continue;
			char path[64];
			snprintf(path, sizeof path, "/v1/submissions/%lld", s->id);
			long code = 0;
			json_t *v = NULL;
			if (!request_retry(&h, "GET", path, NULL, window_s, &code, &v) || code != 200) {
				if (code)
					cr_cli_error(CMD, "%s: HTTP %ld: %s", s->file, code, err_msg(v));
				if (!code || code == 429 || code >= 500)
					cr_cli_error(CMD, "submission %lld is still at the server: follow "
							  "it later with `crucible submit --follow %lld "
							  "--server %s`",
						     s->id, s->id, srv);
				json_decref(v);
				s->final = true;
				s->rc = code >= 400 && code < 500 && code != 429 ? CR_EXIT_USAGE : CR_EXIT_ENV;
				continue;
			}
			char line[1024];
			describe(v, line, sizeof line, &s->final, &s->rc);
			if (strcmp(line, s->last)) {
				fprintf(out, "%s: #%lld %s\n", s->file, s->id, line);
				fflush(out);
				snprintf(s->last, sizeof s->last, "%s", line);
			}
			json_decref(s->view);
			s->view = v;
			open |= !s->final;
		}
		if (open && cr_now_ns() > deadline) {
			cr_cli_error(CMD, "--timeout: %g s passed with submissions still queued or "
					  "running (they go on at the server)",
				     timeout_s);
			rc = rc ? rc : CR_EXIT_ENV;
			break;
		}
		if (open)
			usleep(500 * 1000);
	}
	for (int i = 0; i < n; i++) {
		if (subs[i].final && subs[i].rc > rc)
			rc = subs[i].rc;
		if (as_json && subs[i].view) {
			char *t = json_dumps(subs[i].view, JSON_COMPACT);
			if (t)
				printf("%s\n", t);
			free(t);
		}
		json_decref(subs[i].view);
	}
	free(subs);
	explicit_bzero(h.auth, sizeof h.auth);
	curl_slist_free_all(h.headers);
	curl_easy_cleanup(h.c);
	curl_global_cleanup();
	return rc;
}
