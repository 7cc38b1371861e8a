/* fake_openai.c — a scripted OpenAI-compatible server for the tests of the
 * endpoint generator and of `crucible run`.
 *
 *   fake_openai --port-file F --script S --log DIR [--max-requests N]
 *
 * Listens on 127.0.0.1, port 0, and writes the port to F (F.tmp, then
 * renamed, so a reader never sees half a number). Serves each connection
 * on a thread of its own (a slow stream does not hold up a /tokenize), one
 * HTTP/1.1 request per connection (Content-Length bodies, "Expect:
 * 100-continue" answered, every answer "Connection: close"). A POST to
 * /tokenize is answered apart (below); every other request i (0-based,
 * arrival order) is logged before it is answered: DIR/req-<i>.json holds the
 * body exactly, DIR/req-<i>.head the request line and headers. It is
 * answered by line i of the script (blank lines, lines starting with '#'
 * and `tokenize` lines are not counted):
 *
 *   [sleep MS] STATUS FILE [retry-after=N]
 *                       status, body from FILE (relative to the script's
 *                       folder), application/json, after MS milliseconds
 *   [sleep MS] close    the connection closed without an answer
 *   [sleep MS] echo [OPTION...]
 *                       200, n choices (the request's n) of the file
 *                       $FAKE_OPENAI_ECHO_FILE, made and counted with the toy
 *                       tokenizer (below); at most the request's max_tokens
 *                       tokens a choice, finish_reason "length" when cut
 *                       there, else "stop". Streamed as server-sent events
 *                       (chunked, one token a chunk, choices in turn,
 *                       [DONE] last) when the request has "stream": true,
 *                       else one JSON body. DIR/gen-<i>.json, written before
 *                       the answer ends, says what was made: {"tokens": [each choice's tokens, reasoning
 *                       included], "reasoning": [...], "sent": [tokens that
 *                       went out], "usage": U or null, "dropped": bool}.
 *                       OPTIONs:
 *     usage=sum|one|each|none  usage.completion_tokens: the sum over the
 *                       choices (vLLM, OpenAI; the default), choice 0's alone
 *                       (llama.cpp's server with n > 1, not streaming), each
 *                       choice's in a usage chunk after its end (llama.cpp's
 *                       server streaming; a JSON body: choice 0's), or none
 *     chunk-ms=MS       MS milliseconds before each chunk (a slow stream)
 *     drop-after=K      the connection closed after K chunks (all choices),
 *                       the stream unfinished
 *     stall-after=K stall-ms=MS  silent for MS milliseconds after K chunks
 *     nocode            the text is prose with no code block
 *     think             each choice carries reasoning_content first
 *     vary              choice k has k more lines ("// variant k") after the
 *                       text, so the choices' counts differ
 *     nostream          one JSON body even when the request asks a stream
 *   refuse MS           the request is closed unanswered, the listening
 *                       socket closed, and the SAME port listened on again
 *                       after MS milliseconds (a server restart)
 *   tokenize [llama|vllm] [fail-from=J | drop-from=J]
 *                       (anywhere; not a request) serve POST /tokenize
 *                       with the toy tokenizer: llama.cpp's shape
 *                       ({"content": text} -> {"tokens": [...]}; the default)
 *                       or vLLM's ({"prompt": text} -> {"count": N, "tokens":
 *                       [...]}, 400 without "prompt"). Without the line,
 *                       /tokenize is 404. Each call is logged as
 *                       DIR/tok-<j>.json. fail-from=J: calls j >= J (from
 *                       0) answer 503 (a /tokenize that breaks after the
 *                       probe); drop-from=J: they are closed unanswered.
 *
 * The toy tokenizer (about 0.4 tokens a byte on C; BPE gives 0.25-0.35):
 * greedy from the left, a token is a space and up to 8 of [A-Za-z0-9_]
 * after it, up to 8 of [A-Za-z0-9_], up to 8 of space, tab, CR, LF,
 * another ASCII character and up to 3 more but space, tab, CR, LF, or one
 * non-ASCII UTF-8 character; a prefix of whole tokens tokenizes to those
 * tokens.
 *
 * Past the script's end: 500 {"error":{"message":"script exhausted"}}.
 * Exits on SIGTERM, after --max-requests answers, or when its parent dies.
 * A bad script or a missing FILE is exit status 2 at start, before F exists. */
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
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

enum kind { REPLY, CLOSE, ECHO, REFUSE };
enum usage { U_SUM, U_ONE, U_EACH, U_NONE };

struct line {
	enum kind kind;
	int status;
	int sleep_ms;
	int retry_after;          /* -1: no header */
	char *body;
	size_t len;
	/* echo */
	enum usage usage;
	int chunk_ms, drop_after, stall_after, stall_ms;
	bool nocode, think, vary, nostream;
	int refuse_ms;
};

static const char *log_dir;
static const char exhausted[] = "{\"error\":{\"message\":\"script exhausted\"}}";
static struct line *g_lines;
static int g_n_lines;
static int g_tokenize;        /* 0: off, 1: llama.cpp, 2: vLLM */
static int g_tok_fail_from = -1; /* /tokenize calls from this one on answer 503 (-1: none) */
static int g_tok_drop_from = -1; /* ... are closed unanswered (-1: none) */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_next, g_next_tok;         /* request numbers given */
static atomic_int g_answered, g_refuse_ms;

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

static void echo_option(struct line *l, const char *t, const char *raw)
{
	if (!strcmp(t, "usage=sum"))
		l->usage = U_SUM;
	else if (!strcmp(t, "usage=one"))
		l->usage = U_ONE;
	else if (!strcmp(t, "usage=each"))
		l->usage = U_EACH;
	else if (!strcmp(t, "usage=none"))
		l->usage = U_NONE;
	else if (!strncmp(t, "chunk-ms=", 9))
		l->chunk_ms = parse_int(t + 9, "chunk-ms", raw);
	else if (!strncmp(t, "drop-after=", 11))
		l->drop_after = parse_int(t + 11, "drop-after", raw);
	else if (!strncmp(t, "stall-after=", 12))
		l->stall_after = parse_int(t + 12, "stall-after", raw);
	else if (!strncmp(t, "stall-ms=", 9))
		l->stall_ms = parse_int(t + 9, "stall-ms", raw);
	else if (!strcmp(t, "nocode"))
		l->nocode = true;
	else if (!strcmp(t, "think"))
		l->think = true;
	else if (!strcmp(t, "vary"))
		l->vary = true;
	else if (!strcmp(t, "nostream"))
		l->nostream = true;
	else
		die("unknown echo option '%s' in '%s'", t, raw);
}

/* false: a line that is no request (tokenize) */
static bool parse_line(char *s, const char *dir, struct line *l)
{
	char raw[512], *tok[16] = { 0 }, *save = NULL, path[PATH_MAX];
	int nt = 0, i = 0;

	snprintf(raw, sizeof raw, "%s", s);
	for (char *t = strtok_r(s, " \t", &save); t && nt < 16; t = strtok_r(NULL, " \t", &save))
		tok[nt++] = t;
	memset(l, 0, sizeof *l);
	l->retry_after = -1;
	l->drop_after = l->stall_after = -1;
	if (!nt)
		die("an empty script line%s%s", "", "");
	if (!strcmp(tok[0], "tokenize")) {
		int k = 1;
		if (nt > k && (!strcmp(tok[k], "llama") || !strcmp(tok[k], "vllm")))
			g_tokenize = !strcmp(tok[k++], "vllm") ? 2 : 1;
		else
			g_tokenize = 1;
		if (nt > k && !strncmp(tok[k], "fail-from=", 10))
			g_tok_fail_from = parse_int(tok[k++] + 10, "a /tokenize call", raw);
		else if (nt > k && !strncmp(tok[k], "drop-from=", 10))
			g_tok_drop_from = parse_int(tok[k++] + 10, "a /tokenize call", raw);
		if (nt > k)
			die("tokenize takes llama or vllm, then fail-from=J or drop-from=J: '%s'%s", raw, "");
		return false;
	}
	if (!strcmp(tok[0], "refuse")) {
		if (nt != 2)
			die("refuse takes milliseconds: '%s'%s", raw, "");
		l->kind = REFUSE;
		l->refuse_ms = parse_int(tok[1], "milliseconds", raw);
		return true;
	}
	if (!strcmp(tok[0], "sleep")) {
		if (nt < 3)
			die("sleep without milliseconds or answer: '%s'%s", raw, "");
		l->sleep_ms = parse_int(tok[1], "milliseconds", raw);
		i = 2;
	}
	if (nt - i == 1 && !strcmp(tok[i], "close")) {
		l->kind = CLOSE;
		return true;
	}
	if (!strcmp(tok[i], "echo")) {
		l->kind = ECHO;
		for (int j = i + 1; j < nt; j++)
			echo_option(l, tok[j], raw);
		return true;
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
	return true;
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
		if (parse_line(s, dir, &ls[*n]))
			(*n)++;
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

static void answer_json(int fd, int status, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (s)
		answer(fd, status, s, strlen(s), -1);
	else
		answer(fd, 500, "{}", 2, -1);
	free(s);
	json_decref(j);
}

static void write_log(const char *kind, int i, const char *ext, const char *p, size_t n)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s-%d.%s", log_dir, kind, i, ext);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		die("cannot write %s%s", path, "");
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static bool is_word(unsigned char c)
{
	return c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The toy tokenizer: the byte length of the token at s[0..n). */
static size_t toy_next(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t k = 1;

	if (u[0] == ' ' && n > 1 && is_word(u[1])) {
		while (k < n && k < 9 && is_word(u[k]))
			k++;
	} else if (is_word(u[0])) {
		while (k < n && k < 8 && is_word(u[k]))
			k++;
	} else if (is_space(u[0])) {
		while (k < n && k < 8 && is_space(u[k]))
			k++;
	} else if (u[0] >= 0x80) {
		while (k < n && (u[k] & 0xc0) == 0x80)
			k++;
	} else {
		while (k < n && k < 4 && u[k] < 0x80 && !is_space(u[k]))
			k++;
	}
	return k;
}

/* Token boundaries of s: off[0..*nt] (off[*nt] == n), malloc'd. */
static size_t *toy_tokens(const char *s, size_t n, size_t *nt)
{
	size_t *off = malloc((n + 1) * sizeof *off), i = 0, k = 0;

	if (!off)
		die("out of memory%s%s", "", "");
	while (i < n) {
		off[k++] = i;
		i += toy_next(s + i, n - i);
	}
	off[k] = n;
	*nt = k;
	return off;
}

static const char prose[] =
	"I cannot write this kernel without knowing more about the shapes it will see, "
	"so here is what I would try first: fuse the loads, keep the loop simple and "
	"let the compiler vectorise it.";

struct choice {
	char *reason, *text;      /* malloc'd */
	size_t rl, tl;
	size_t *roff, *toff;      /* token boundaries */
	size_t rn, tn;            /* tokens made (after max_tokens) */
	bool length;
	size_t sent;              /* tokens that went out */
	bool finished;
};

static void send_event(int fd, json_t *j, bool *ok)
{
	char *s = json_dumps(j, JSON_COMPACT), head[32];
	size_t n = s ? strlen(s) + 8 : 0;

	json_decref(j);
	if (!s || !*ok) {
		free(s);
		*ok = false;
		return;
	}
	snprintf(head, sizeof head, "%zx\r\ndata: ", n);
	*ok = send_all(fd, head, strlen(head)) && send_all(fd, s, strlen(s)) &&
	      send_all(fd, "\n\n\r\n", 4);
	free(s);
}

static json_t *chunk(const char *model, int k, const char *field, const char *p, size_t n,
		     const char *finish)
{
	json_t *d = json_object();
	if (field)
		json_object_set_new(d, field, json_stringn(p, n));
	return json_pack("{s:s, s:s, s:s, s:[{s:i, s:o, s:o}]}", "id", "fake", "object",
			 "chat.completion.chunk", "model", model, "choices", "index", k, "delta", d,
			 "finish_reason", finish ? json_string(finish) : json_null());
}

/* DIR/gen-I.json: what the echo made and sent. */
static void log_gen(int i, const struct choice *ch, long long n, json_t *ju, bool dropped)
{
	json_t *log = json_pack("{s:[], s:[], s:[], s:O, s:b}", "tokens", "reasoning", "sent",
				"usage", json_is_null(ju) ? ju : json_object_get(ju, "completion_tokens"),
				"dropped", dropped);
	char *s;

	for (long long k = 0; k < n; k++) {
		json_array_append_new(json_object_get(log, "tokens"),
				      json_integer((json_int_t)(ch[k].rn + ch[k].tn)));
		json_array_append_new(json_object_get(log, "reasoning"),
				      json_integer((json_int_t)ch[k].rn));
		json_array_append_new(json_object_get(log, "sent"),
				      json_integer((json_int_t)ch[k].sent));
	}
	s = json_dumps(log, JSON_COMPACT);
	if (s)
		write_log("gen", i, "json", s, strlen(s));
	free(s);
	json_decref(log);
}

/* The echo line's answer for request i. */
static void echo(int fd, int i, const struct line *l, const char *req, size_t len)
{
	const char *path = getenv("FAKE_OPENAI_ECHO_FILE");
	json_t *rq = json_loadb(req, len, 0, NULL), *v, *ju;
	size_t cl = 0;
	char *cand = l->nocode ? strdup(prose) : path ? slurp(path, &cl) : NULL;
	long long n = 1, maxt = -1, U = 0;
	const char *model;
	struct choice *ch;
	bool stream, ok = true, dropped = false;
	int sent = 0;

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
	if (l->nocode)
		cl = strlen(cand);
	v = json_object_get(rq, "n");
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 64)
		n = json_integer_value(v);
	v = json_object_get(rq, "max_tokens");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		maxt = json_integer_value(v);
	v = json_object_get(rq, "model");
	model = json_is_string(v) ? json_string_value(v) : "fake";
	stream = json_is_true(json_object_get(rq, "stream")) && !l->nostream;
	ch = calloc((size_t)n, sizeof *ch);
	if (!ch)
		die("out of memory%s%s", "", "");
	for (long long k = 0; k < n; k++) {
		struct choice *c = &ch[k];
		size_t rn, tn, cap = cl + 32 * (size_t)(l->vary ? k : 0) + 1;
		c->text = malloc(cap);
		c->reason = malloc(128);
		if (!c->text || !c->reason)
			die("out of memory%s%s", "", "");
		memcpy(c->text, cand, cl);
		c->tl = cl;
		for (long long j = 0; l->vary && j < k; j++)
			c->tl += (size_t)snprintf(c->text + c->tl, cap - c->tl, "\n// variant %lld", k);
		c->text[c->tl] = '\0';
		c->rl = l->think ? (size_t)snprintf(c->reason, 128,
			"Let me think about choice %lld: a plain loop will do.", k) : 0;
		c->roff = toy_tokens(c->reason, c->rl, &rn);
		c->toff = toy_tokens(c->text, c->tl, &tn);
		c->rn = maxt >= 0 && (long long)rn > maxt ? (size_t)maxt : rn;
		c->tn = maxt >= 0 && (long long)(c->rn + tn) > maxt ? (size_t)maxt - c->rn : tn;
		c->length = c->rn + c->tn < rn + tn;
		U += l->usage == U_SUM || k == 0 ? (long long)(c->rn + c->tn) : 0;
	}
	ju = l->usage == U_NONE ? json_null()
		: json_pack("{s:i, s:I, s:I}", "prompt_tokens", 11, "completion_tokens", U,
			    "total_tokens", 11 + U);
	if (!stream) {
		json_t *arr = json_array(), *resp;
		for (long long k = 0; k < n; k++) {
			struct choice *c = &ch[k];
			json_t *m = json_pack("{s:s, s:s%}", "role", "assistant", "content", c->text,
					      c->toff[c->tn]);
			if (c->rl)
				json_object_set_new(m, "reasoning_content",
						    json_stringn(c->reason, c->roff[c->rn]));
			json_array_append_new(arr, json_pack("{s:I, s:o, s:s}", "index", k,
				"message", m, "finish_reason", c->length ? "length" : "stop"));
			c->sent = c->rn + c->tn;
		}
		resp = json_pack("{s:s, s:s, s:s, s:o, s:O}", "id", "fake", "object",
				 "chat.completion", "model", model, "choices", arr, "usage", ju);
		log_gen(i, ch, n, ju, false);   /* before the answer: a client that has it finds the log */
		answer_json(fd, 200, resp);
	} else {
		static const char done[] = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
		static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
		bool more = true;
		ok = send_all(fd, head, sizeof head - 1);
		while (ok && more && !dropped) {
			more = false;
			for (long long k = 0; k < n && ok && !dropped; k++) {
				struct choice *c = &ch[k];
				size_t t = c->sent;
				if (c->finished)
					continue;
				more = true;
				if (l->chunk_ms)
					sleep_ms(l->chunk_ms);
				if (t < c->rn)
					send_event(fd, chunk(model, (int)k, "reasoning_content",
							     c->reason + c->roff[t],
							     c->roff[t + 1] - c->roff[t], NULL), &ok);
				else if (t < c->rn + c->tn)
					send_event(fd, chunk(model, (int)k, "content",
							     c->text + c->toff[t - c->rn],
							     c->toff[t - c->rn + 1] - c->toff[t - c->rn],
							     NULL), &ok);
				if (t < c->rn + c->tn) {
					c->sent++;
					sent++;
					if (sent == l->drop_after)
						dropped = true;
					if (sent == l->stall_after)
						sleep_ms(l->stall_ms);
				} else {
					send_event(fd, chunk(model, (int)k, NULL, NULL, 0,
							     c->length ? "length" : "stop"), &ok);
					c->finished = true;
					if (l->usage == U_EACH)   /* llama.cpp's server, streaming */
						send_event(fd, json_pack("{s:s, s:s, s:s, s:[], s:{s:i, s:I}}",
							"id", "fake", "object", "chat.completion.chunk",
							"model", model, "choices", "usage", "prompt_tokens", 11,
							"completion_tokens", (json_int_t)(c->rn + c->tn)), &ok);
				}
			}
		}
		log_gen(i, ch, n, ju, dropped);   /* before the stream's end (or the drop) */
		if (ok && !dropped && !json_is_null(ju) && l->usage != U_EACH)
			send_event(fd, json_pack("{s:s, s:s, s:s, s:[], s:O}", "id", "fake", "object",
						 "chat.completion.chunk", "model", model, "choices",
						 "usage", ju), &ok);
		if (ok && !dropped)
			ok = send_all(fd, done, sizeof done - 1);
	}
	for (long long k = 0; k < n; k++) {
		free(ch[k].text);
		free(ch[k].reason);
		free(ch[k].roff);
		free(ch[k].toff);
	}
	json_decref(ju);
	free(ch);
	free(cand);
	json_decref(rq);
}

/* POST /tokenize with the toy tokenizer, in the configured server's shape. */
static void tokenize(int fd, const char *req, size_t len)
{
	json_t *rq = json_loadb(req, len, 0, NULL);
	json_t *t = json_object_get(rq, g_tokenize == 2 ? "prompt" : "content"), *ids;
	size_t nt, *off;

	if (!json_is_string(t)) {
		answer_json(fd, g_tokenize == 2 ? 400 : 500, json_pack("{s:{s:s, s:i}}", "error",
			"message", g_tokenize == 2 ? "prompt: field required" : "content missing",
			"code", g_tokenize == 2 ? 400 : 500));
		json_decref(rq);
		return;
	}
	off = toy_tokens(json_string_value(t), json_string_length(t), &nt);
	ids = json_array();
	for (size_t k = 0; k < nt; k++) {
		unsigned h = 5381;
		for (size_t b = off[k]; b < off[k + 1]; b++)
			h = h * 33 + (unsigned char)json_string_value(t)[b];
		json_array_append_new(ids, json_integer(h % 32000));
	}
	free(off);
	if (g_tokenize == 2)
		answer_json(fd, 200, json_pack("{s:I, s:i, s:o}", "count", (json_int_t)nt,
					       "max_model_len", 8192, "tokens", ids));
	else
		answer_json(fd, 200, json_pack("{s:o}", "tokens", ids));
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

static atomic_int g_lfd = -1;

static void *serve(void *p)
{
	int fd = (int)(intptr_t)p, i;
	char *head, *body;
	size_t hlen, blen;
	const struct line *l;
	struct timeval tv = { 10, 0 };   /* a silent client does not hang its thread */

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (!read_request(fd, &head, &hlen, &body, &blen))
		goto out;   /* a connection that sent no request is not counted */
	if (strstr(head, "/tokenize ") && strstr(head, "/tokenize ") < strstr(head, "\r\n")) {
		pthread_mutex_lock(&g_lock);
		i = g_next_tok++;
		pthread_mutex_unlock(&g_lock);
		write_log("tok", i, "json", body, blen);
		if (g_tokenize && g_tok_drop_from >= 0 && i >= g_tok_drop_from)
			;   /* closed unanswered */
		else if (g_tokenize && g_tok_fail_from >= 0 && i >= g_tok_fail_from)
			answer(fd, 503, "{\"error\":{\"code\":503,\"message\":\"busy\"}}", 39, -1);
		else if (g_tokenize)
			tokenize(fd, body, blen);
		else
			answer(fd, 404, "{\"error\":{\"code\":404,\"message\":\"File Not Found\"}}",
			       49, -1);
		goto done;
	}
	pthread_mutex_lock(&g_lock);
	i = g_next++;
	pthread_mutex_unlock(&g_lock);
	write_log("req", i, "json", body, blen);
	write_log("req", i, "head", head, hlen);
	l = i < g_n_lines ? &g_lines[i] : NULL;
	if (l && l->sleep_ms)
		sleep_ms(l->sleep_ms);
	if (!l) {
		answer(fd, 500, exhausted, sizeof exhausted - 1, -1);
	} else if (l->kind == ECHO) {
		echo(fd, i, l, body, blen);
	} else if (l->kind == REPLY) {
		answer(fd, l->status, l->body, l->len, l->retry_after);
	} else if (l->kind == REFUSE) {
		atomic_store(&g_refuse_ms, l->refuse_ms);
		shutdown(atomic_load(&g_lfd), SHUT_RDWR);   /* wakes the accept loop */
	}
	atomic_fetch_add(&g_answered, 1);
done:
	free(head);
	free(body);
out:
	shutdown(fd, SHUT_WR);
	close(fd);
	return NULL;
}

static int listen_on(struct sockaddr_in *a)
{
	int one = 1;

	for (int tries = 0; tries < 200; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) &&
		    !bind(fd, (struct sockaddr *)a, sizeof *a) && !listen(fd, 64))
			return fd;
		if (fd >= 0)
			close(fd);
		if (errno != EADDRINUSE)
			break;
		sleep_ms(10);
	}
	die("cannot listen on 127.0.0.1 (%s)%s", strerror(errno), "");
	return -1;
}

int main(int argc, char **argv)
{
	const char *port_file = NULL, *script = NULL;
	long max_req = -1;
	int lfd;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	pid_t parent = getppid();
	char tmp[PATH_MAX];
	FILE *f;
	pthread_attr_t attr;

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
	g_lines = read_script(script, &g_n_lines);
	atomic_store(&g_refuse_ms, -1);
	if (mkdir(log_dir, 0755) && errno != EEXIST)
		die("cannot create %s (%s)", log_dir, strerror(errno));
	lfd = listen_on(&a);
	if (getsockname(lfd, (struct sockaddr *)&a, &al))
		die("getsockname: %s%s", strerror(errno), "");
	atomic_store(&g_lfd, lfd);
	snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) || rename(tmp, port_file))
		die("cannot write %s (%s)", port_file, strerror(errno));
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (max_req < 0 || atomic_load(&g_answered) < max_req) {
		struct pollfd pf = { .fd = lfd, .events = POLLIN };
		int ms = atomic_exchange(&g_refuse_ms, -1), fd;
		pthread_t th;
		if (ms >= 0) {
			close(lfd);   /* a restart: refused until it listens again */
			sleep_ms(ms);
			lfd = listen_on(&a);
			atomic_store(&g_lfd, lfd);
			continue;
		}
		if (poll(&pf, 1, 50) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EINVAL ||
			    errno == EAGAIN)
				continue;
			die("accept: %s%s", strerror(errno), "");
		}
		if (pthread_create(&th, &attr, serve, (void *)(intptr_t)fd)) {
			close(fd);
			continue;
		}
	}
	sleep_ms(50);   /* the last answers go out */
	return 0;
}
