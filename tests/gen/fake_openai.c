/* fake_openai.c — a scripted OpenAI-compatible server for the tests of the
 * endpoint generator and of `crucible run`.
 *
 *   fake_openai --port-file F --script S --log DIR [--max-requests N]
 *
 * Listens on 127.0.0.1, port 0, and writes the port to F (F.tmp, then
 * renamed, so a reader never sees half a number). Serves one connection at
 * a time, one HTTP/1.1 request per connection (Content-Length bodies,
 * "Expect: 100-continue" answered, every answer "Connection: close").
 * Request i (0-based, arrival order) is logged before it is answered:
 * DIR/req-<i>.json holds the body exactly, DIR/req-<i>.head the request line
 * and headers. It is answered by line i of the script (blank lines and lines
 * starting with '#' are not counted):
 *
 *   STATUS FILE [retry-after=N]  status, body from FILE (relative to the
 *                                script's folder), application/json
 *   sleep MS STATUS FILE [...]   the same after MS milliseconds
 *   close                        the connection closed without an answer
 *   echo                         200, n choices (the request's n) whose
 *                                content is the file $FAKE_OPENAI_ECHO_FILE,
 *                                usage at 4 bytes a token
 *
 * Past the script's end: 500 {"error":{"message":"script exhausted"}}.
 * Exits on SIGTERM, after --max-requests answers, or when its parent dies.
 * A bad script or a missing FILE is exit status 2 at start, before F exists. */
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 << 10)
#define BODY_MAX (64 << 20)

enum kind { REPLY, CLOSE, ECHO };

struct line {
	enum kind kind;
	int status;
	int sleep_ms;
	int retry_after;          /* -1: no header */
	char *body;
	size_t len;
};

static const char *log_dir;
static const char exhausted[] = "{\"error\":{\"message\":\"script exhausted\"}}";

static void die(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "fake_openai: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	exit(2);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			p = realloc(p, cap);
			if (!p)
				die("out of memory reading %s%s", path, "");
		}
		size_t k = fread(p + n, 1, cap - n - 1, f);
		n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	p[n] = '\0';
	*len = n;
	return p;
}

static int parse_int(const char *s, const char *what, const char *raw)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT_MAX)
		die("bad %s in script line '%s'", what, raw);
	return (int)v;
}

static void parse_line(char *s, const char *dir, struct line *l)
{
	char raw[512], *tok[6], *save = NULL, path[PATH_MAX];
	int nt = 0, i = 0;

	snprintf(raw, sizeof raw, "%s", s);
	for (char *t = strtok_r(s, " \t", &save); t && nt < 6; t = strtok_r(NULL, " \t", &save))
		tok[nt++] = t;
	memset(l, 0, sizeof *l);
	l->retry_after = -1;
	if (nt == 1 && !strcmp(tok[0], "close")) {
		l->kind = CLOSE;
		return;
	}
	if (nt == 1 && !strcmp(tok[0], "echo")) {
		l->kind = ECHO;
		return;
	}
	if (nt >= 1 && !strcmp(tok[0], "sleep")) {
		if (nt < 2)
			die("sleep without milliseconds: '%s'%s", raw, "");
		l->sleep_ms = parse_int(tok[1], "milliseconds", raw);
		i = 2;
	}
	if (nt - i < 2 || nt - i > 3)
		die("cannot read script line '%s'%s", raw, "");
	l->kind = REPLY;
	l->status = parse_int(tok[i], "status", raw);
	if (l->status < 100 || l->status > 599)
		die("bad status in script line '%s'%s", raw, "");
	if (nt - i == 3) {
		if (strncmp(tok[i + 2], "retry-after=", 12))
			die("unknown option in script line '%s'%s", raw, "");
		l->retry_after = parse_int(tok[i + 2] + 12, "retry-after", raw);
	}
	if (tok[i + 1][0] == '/')
		snprintf(path, sizeof path, "%s", tok[i + 1]);
	else
		snprintf(path, sizeof path, "%s/%s", dir, tok[i + 1]);
	l->body = slurp(path, &l->len);
	if (!l->body)
		die("cannot read %s (%s)", path, strerror(errno));
}

static struct line *read_script(const char *path, int *n)
{
	size_t len;
	char *text = slurp(path, &len), *save = NULL, *dcopy = strdup(path), *dir;
	struct line *ls = NULL;
	int cap = 0;

	if (!text)
		die("cannot read the script %s (%s)", path, strerror(errno));
	dir = dirname(dcopy);
	*n = 0;
	for (char *s = strtok_r(text, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
		size_t k = strlen(s);
		while (k && (s[k - 1] == '\r' || s[k - 1] == ' ' || s[k - 1] == '\t'))
			s[--k] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			ls = realloc(ls, (size_t)cap * sizeof *ls);
			if (!ls)
				die("out of memory%s%s", "", "");
		}
		parse_line(s, dir, &ls[(*n)++]);
	}
	free(text);
	free(dcopy);
	return ls;
}

static bool send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

static const char *reason(int st)
{
	switch (st) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	}
	return "Status";
}

static void answer(int fd, int status, const char *body, size_t len, int retry_after)
{
	char head[512], ra[64] = "";

	if (retry_after >= 0)
		snprintf(ra, sizeof ra, "Retry-After: %d\r\n", retry_after);
	snprintf(head, sizeof head,
		 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n%s\r\n", status, reason(status), len, ra);
	if (send_all(fd, head, strlen(head)))
		send_all(fd, body, len);
}

static void write_log(int i, const char *ext, const char *p, size_t n)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/req-%d.%s", log_dir, i, ext);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		die("cannot write %s%s", path, "");
}

/* ceil(bytes / 4): the echo's token count */
static long long tokens(size_t bytes)
{
	return (long long)((bytes + 3) / 4);
}

/* The echo line's answer: n copies of the candidate as a completion. */
static void echo(int fd, const char *req, size_t len)
{
	const char *path = getenv("FAKE_OPENAI_ECHO_FILE");
	json_t *rq = json_loadb(req, len, 0, NULL), *resp, *ch, *v;
	size_t cl = 0, pb = 0;
	char *cand = path ? slurp(path, &cl) : NULL, *out;
	long long n = 1;

	if (!cand || !rq) {
		static const char e1[] =
			"{\"error\":{\"message\":\"FAKE_OPENAI_ECHO_FILE unreadable\"}}";
		static const char e2[] = "{\"error\":{\"message\":\"the request is not JSON\"}}";
		if (!cand)
			answer(fd, 500, e1, sizeof e1 - 1, -1);
		else
			answer(fd, 400, e2, sizeof e2 - 1, -1);
		free(cand);
		json_decref(rq);
		return;
	}
	v = json_object_get(rq, "n");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		n = json_integer_value(v);
	v = json_object_get(rq, "messages");
	for (size_t i = 0; i < json_array_size(v); i++)
		pb += json_string_length(json_object_get(json_array_get(v, i), "content"));
	ch = json_array();
	for (long long k = 0; k < n; k++)
		json_array_append_new(ch, json_pack("{s:I, s:{s:s, s:s%}, s:s}", "index", k,
			"message", "role", "assistant", "content", cand, cl,
			"finish_reason", "stop"));
	v = json_object_get(rq, "model");
	resp = json_pack("{s:s, s:s, s:O, s:o, s:{s:I, s:I, s:I}}", "id", "fake", "object",
			 "chat.completion", "model", json_is_string(v) ? v : json_null(),
			 "choices", ch, "usage", "prompt_tokens", tokens(pb),
			 "completion_tokens", n * tokens(cl), "total_tokens",
			 tokens(pb) + n * tokens(cl));
	out = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
	if (out)
		answer(fd, 200, out, strlen(out), -1);
	else
		answer(fd, 500, "{}", 2, -1);
	free(out);
	free(cand);
	json_decref(resp);
	json_decref(rq);
}

/* One request off fd into head (NUL-terminated, up to the blank line) and
 * body; false when the client sent nothing usable. */
static bool read_request(int fd, char **head, size_t *hlen, char **body, size_t *blen)
{
	char *buf = malloc(HEAD_MAX + 1), *end = NULL, *cl, *bd;
	size_t n = 0, want = 0, have;

	*head = *body = NULL;
	if (!buf)
		return false;
	while (!end) {
		ssize_t k = n < HEAD_MAX ? recv(fd, buf + n, HEAD_MAX - n, 0) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			goto bad;
		n += (size_t)k;
		buf[n] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	*hlen = (size_t)(end - buf) + 4;
	for (char *p = buf; p && p < end; p = strstr(p, "\r\n"), p = p ? p + 2 : p) {
		if (!strncasecmp(p, "Content-Length:", 15))
			want = strtoull(p + 15, NULL, 10);
		if (!strncasecmp(p, "Expect: 100-continue", 20))
			send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	}
	cl = strcasestr(buf, "\r\ntransfer-encoding:");
	if ((cl && cl < end) || want > BODY_MAX)
		goto bad;   /* curl sends a Content-Length for a POSTFIELDS body */
	bd = malloc(want + 1);
	if (!bd)
		goto bad;
	have = n - *hlen;
	if (have > want)
		have = want;
	memcpy(bd, buf + *hlen, have);
	while (have < want) {
		ssize_t k = recv(fd, bd + have, want - have, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(bd);
			goto bad;
		}
		have += (size_t)k;
	}
	bd[want] = '\0';
	buf[*hlen] = '\0';
	*head = buf;
	*body = bd;
	*blen = want;
	return true;
bad:
	free(buf);
	return false;
}

static bool serve(int fd, int i, const struct line *ls, int n_lines)
{
	char *head, *body;
	size_t hlen, blen;
	const struct line *l = i < n_lines ? &ls[i] : NULL;

	if (!read_request(fd, &head, &hlen, &body, &blen))
		return false;
	write_log(i, "json", body, blen);
	write_log(i, "head", head, hlen);
	if (!l) {
		answer(fd, 500, exhausted, sizeof exhausted - 1, -1);
	} else if (l->kind == ECHO) {
		echo(fd, body, blen);
	} else if (l->kind == REPLY) {
		if (l->sleep_ms) {
			struct timespec ts = { l->sleep_ms / 1000,
						(l->sleep_ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
		answer(fd, l->status, l->body, l->len, l->retry_after);
	}
	free(head);
	free(body);
	return true;
}

int main(int argc, char **argv)
{
	const char *port_file = NULL, *script = NULL;
	long max_req = -1;
	struct line *ls;
	int n_lines, lfd, one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	pid_t parent = getppid();
	char tmp[PATH_MAX];
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			die("%s needs a value%s", argv[i], "");
		if (!strcmp(argv[i], "--port-file"))
			port_file = argv[++i];
		else if (!strcmp(argv[i], "--script"))
			script = argv[++i];
		else if (!strcmp(argv[i], "--log"))
			log_dir = argv[++i];
		else if (!strcmp(argv[i], "--max-requests"))
			max_req = parse_int(argv[i + 1], "--max-requests", argv[i + 1]), i++;
		else
			die("unknown option %s%s", argv[i], "");
	}
	if (!port_file || !script || !log_dir)
		die("usage: fake_openai --port-file F --script S --log DIR [--max-requests N]%s%s",
		    "", "");
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
		return 0;   /* the parent is already gone */
	signal(SIGPIPE, SIG_IGN);
	ls = read_script(script, &n_lines);
	if (mkdir(log_dir, 0755) && errno != EEXIST)
		die("cannot create %s (%s)", log_dir, strerror(errno));
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
	    bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		die("cannot listen on 127.0.0.1 (%s)%s", strerror(errno), "");
	snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) || rename(tmp, port_file))
		die("cannot write %s (%s)", port_file, strerror(errno));
	for (int i = 0; max_req < 0 || i < max_req;) {
		struct timeval tv = { 10, 0 };   /* a silent client does not hang the server */
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept: %s%s", strerror(errno), "");
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		if (serve(fd, i, ls, n_lines))
			i++;   /* a connection that sent no request is not counted */
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	close(lfd);
	for (int i = 0; i < n_lines; i++)
		free(ls[i].body);
	free(ls);
	return 0;
}
