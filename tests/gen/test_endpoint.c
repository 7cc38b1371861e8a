/* test_endpoint.c — the endpoint generator (gen/gen_http.c) against
 * fake_openai, a scripted server started as a child for each test: what the
 * request carries, how the answer becomes completions and token counts,
 * retries, the errors and their statuses, the API key kept out of every
 * message, concurrent calls. $FAKE_OPENAI is the server, $FAKE_OPENAI_FIXTURES
 * the folder of scripts and bodies (tests/gen/meson.build sets both). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "gen/gen_gen.h"
#include "gen/gen_http_impl.h"
#include "decode/model/dec_vocab.h"
#include "decode/model/gguf.h"
#include "decode/quant/dec_quant.h"
#include "decode/tok/dec_tok.h"
#include "dec_testutil.h"

#define KEY_ENV "CRUCIBLE_TEST_ENDPOINT_KEY"
#define KEY "sk-crucible-test-4242"

struct fake {
	pid_t pid;
	char dir[PATH_MAX];       /* the test's scratch folder (port file, log/) */
	char url[128];            /* http://127.0.0.1:PORT/v1 */
};

static struct fake g_fake;
static const char *fixtures;

static double now_s(void)
{
	return (double)cr_now_ns() * 1e-9;
}

static char *fixture_path(const char *name)
{
	static char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", fixtures, name);
	return p;
}

/* fake_openai on fixtures/SCRIPT, its port known when this returns. */
static void fake_start(const char *script)
{
	struct fake *f = &g_fake;
	char port_file[PATH_MAX + 8], log[PATH_MAX + 8], scr[PATH_MAX];
	const char *exe = getenv("FAKE_OPENAI");
	double t0 = now_s();

	assert_non_null(exe);
	snprintf(f->dir, sizeof f->dir, "%s/crucible-ep-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	snprintf(port_file, sizeof port_file, "%s/port", f->dir);
	snprintf(log, sizeof log, "%s/log", f->dir);
	snprintf(scr, sizeof scr, "%s", fixture_path(script));
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		execl(exe, exe, "--port-file", port_file, "--script", scr, "--log", log,
		      (char *)NULL);
		_exit(127);
	}
	for (;;) {
		size_t len;
		char *s = cr_read_file(port_file, 64, &len);
		int st;
		if (s) {
			snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/v1", atoi(s));
			free(s);
			return;
		}
		if (waitpid(f->pid, &st, WNOHANG) == f->pid) {
			f->pid = 0;
			fail_msg("fake_openai exited at start (status %d)", st);
		}
		if (now_s() - t0 > 10)
			fail_msg("fake_openai wrote no port in 10 s");
		usleep(2000);
	}
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

static int fake_stop(void **state)
{
	struct fake *f = &g_fake;
	(void)state;
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
	}
	if (f->dir[0])
		nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	memset(f, 0, sizeof *f);
	return 0;
}

/* log/req-I.EXT of the running fake, NULL when there is none. */
static char *req_log(int i, const char *ext)
{
	char p[PATH_MAX + 32];
	size_t len;
	snprintf(p, sizeof p, "%s/log/req-%d.%s", g_fake.dir, i, ext);
	return cr_read_file(p, 1 << 24, &len);
}

static json_t *req_json(int i)
{
	char *s = req_log(i, "json");
	json_error_t je;
	json_t *j;
	assert_non_null(s);
	j = json_loads(s, 0, &je);
	if (!j)
		fail_msg("req-%d.json is not JSON: %s", i, je.text);
	free(s);
	return j;
}

/* log/gen-I.json of the running fake: what its echo made. */
static json_t *gen_log(int i)
{
	char *s = req_log(i, "json"), p[PATH_MAX + 32];
	json_t *j;
	free(s);
	snprintf(p, sizeof p, "%s/log/gen-%d.json", g_fake.dir, i);
	j = json_load_file(p, 0, NULL);
	if (!j)
		fail_msg("no %s", p);
	return j;
}

static int n_logged(void)
{
	int n = 0;
	char *s;
	while ((s = req_log(n, "json"))) {
		free(s);
		n++;
	}
	return n;
}

static struct gen_endpoint_cfg cfg_for(const char *url)
{
	struct gen_endpoint_cfg c = {
		.url = url, .model = "qwen-test", .api_key_env = KEY_ENV,
		.concurrency = 1, .timeout_s = 10, .max_retries = 3, .backoff_s = 0.01,
	};
	return c;
}

static const struct gen_msg conv[] = {
	{ "system", "You write fast kernels." },
	{ "user", "Write smoke/add." },
	{ "assistant", "```c\nvoid add(void);\n```" },
	{ "user", "It did not compile: add needs four arguments." },
};
static const char *const stops[] = { "\n```\n", "</code>" };
static const char *const ids[] = { "c0", "c1", "c2", "c3" };

static struct gen_req req_n(int n)
{
	struct gen_req r = {
		.task = "smoke/add", .msgs = conv, .n_msgs = 4, .n = n, .ids = ids,
		.seed = 0x123456789abcULL, .max_tokens = 256, .temperature = 0.7f, .top_p = 0.95f,
		.stops = stops, .n_stops = 2,
	};
	return r;
}

static void open_ok(const struct gen_endpoint_cfg *c, struct gen_generator *g)
{
	struct cr_err err;
	cr_err_init(&err);
	if (gen_endpoint_open(c, g, &err))
		fail_msg("gen_endpoint_open: %s", err.msg);
	assert_string_equal(g->kind, "endpoint");
}

/* g->complete of rq into out, failing the test with its message. */
static void complete_ok(struct gen_generator *g, const struct gen_req *rq, struct gen_completion *out)
{
	struct cr_err err;
	cr_err_init(&err);
	if (g->complete(g->ctx, rq, out, &err))
		fail_msg("complete: %s", err.msg);
}

static void release_all(struct gen_completion *out, int n)
{
	for (int k = 0; k < n; k++)
		gen_completion_release(&out[k]);
}

static const char ok1_text[] = "```c\n// @task smoke/add\nvoid add(void) {}\n```";

/* Every field of the request, the answer's text and counts, describe(). */
static void test_request_fields(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	char url[160], *head, *desc;
	json_t *b, *m, *d;
	(void)state;

	fake_start("ok.script");
	snprintf(url, sizeof url, "%s/", g_fake.url);   /* a trailing '/' is dropped */
	c = cfg_for(url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_OK);
	assert_string_equal(out[0].text, ok1_text);
	assert_int_equal(out[0].len, strlen(ok1_text));
	assert_int_equal(out[0].prompt_tokens, 42);
	assert_int_equal(out[0].completion_tokens, 17);
	assert_int_equal(out[0].reasoning_tokens, 0);
	assert_int_equal(out[0].prefill_tokens, -1);
	assert_string_equal(out[0].finish, "stop");
	assert_true(out[0].gen_s > 0 && out[0].gen_s < 10);

	b = req_json(0);
	assert_string_equal(json_string_value(json_object_get(b, "model")), "qwen-test");
	m = json_object_get(b, "messages");
	assert_int_equal(json_array_size(m), 4);
	for (int i = 0; i < 4; i++) {
		json_t *o = json_array_get(m, (size_t)i);
		assert_string_equal(json_string_value(json_object_get(o, "role")), conv[i].role);
		assert_string_equal(json_string_value(json_object_get(o, "content")),
				    conv[i].content);
	}
	assert_int_equal(json_integer_value(json_object_get(b, "n")), 1);
	assert_int_equal(json_integer_value(json_object_get(b, "seed")), 0x123456789abcLL);
	assert_true(fabs(json_number_value(json_object_get(b, "temperature")) - 0.7) < 1e-6);
	assert_true(fabs(json_number_value(json_object_get(b, "top_p")) - 0.95) < 1e-6);
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 256);
	m = json_object_get(b, "stop");
	assert_int_equal(json_array_size(m), 2);
	assert_string_equal(json_string_value(json_array_get(m, 0)), stops[0]);
	assert_string_equal(json_string_value(json_array_get(m, 1)), stops[1]);
	assert_null(json_object_get(b, "top_k"));
	assert_null(json_object_get(b, "min_p"));
	json_decref(b);

	head = req_log(0, "head");
	assert_non_null(head);
	assert_true(!strncmp(head, "POST /v1/chat/completions HTTP/1.1\r\n", 36));
	assert_non_null(strstr(head, "Authorization: Bearer " KEY "\r\n"));
	assert_non_null(strcasestr(head, "Content-Type: application/json\r\n"));
	free(head);

	d = g.describe(g.ctx);
	assert_string_equal(json_string_value(json_object_get(d, "kind")), "endpoint");
	assert_string_equal(json_string_value(json_object_get(d, "url")), g_fake.url);
	assert_string_equal(json_string_value(json_object_get(d, "model")), "qwen-test");
	assert_string_equal(json_string_value(json_object_get(d, "api_key_env")), KEY_ENV);
	desc = json_dumps(d, 0);
	assert_null(strstr(desc, KEY));
	free(desc);
	json_decref(d);
	assert_int_equal(n_logged(), 1);
	release_all(out, 1);
	g.release(g.ctx);
}

/* top_k and min_p go out only when set, stop only with stop strings; no
 * key variable: no Authorization header. */
static void test_optional_fields(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	char *head;
	json_t *b, *d;
	(void)state;

	fake_start("ok.script");
	c = cfg_for(g_fake.url);
	c.api_key_env = NULL;
	open_ok(&c, &g);
	rq.top_k = 40;
	rq.min_p = 0.05f;
	rq.n_stops = 0;
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_OK);
	b = req_json(0);
	assert_int_equal(json_integer_value(json_object_get(b, "top_k")), 40);
	assert_true(fabs(json_number_value(json_object_get(b, "min_p")) - 0.05) < 1e-6);
	assert_null(json_object_get(b, "stop"));
	json_decref(b);
	head = req_log(0, "head");
	assert_null(strcasestr(head, "Authorization"));
	free(head);
	d = g.describe(g.ctx);
	assert_true(json_is_null(json_object_get(d, "api_key_env")));
	json_decref(d);
	release_all(out, 1);
	g.release(g.ctx);
}

/* n=3: the choices arrive as 2, 0, 1 and land by index. Choice 1 finished
 * by "length", so it made max_tokens (256) tokens and usage 100 cannot be
 * the sum: it is one choice's, and the other two get 100 scaled by their
 * bytes over their mean bytes (10:30 of 20): 50 and 150. */
static void test_n3_index_order(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(3);
	struct gen_completion out[3];
	struct cr_err err;
	json_t *b;
	(void)state;

	fake_start("n3.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_OK);
	b = req_json(0);
	assert_int_equal(json_integer_value(json_object_get(b, "n")), 3);
	json_decref(b);
	assert_string_equal(out[0].text, "choice 0..");
	assert_string_equal(out[1].text, "choice one is 20 b..");
	assert_string_equal(out[2].text, "choice two: thirty bytes long!");
	assert_string_equal(out[1].finish, "length");
	assert_int_equal(out[0].completion_tokens, 50);
	assert_int_equal(out[1].completion_tokens, 256);
	assert_int_equal(out[2].completion_tokens, 150);
	for (int k = 0; k < 3; k++) {
		assert_string_equal(out[k].count_src, "usage-split");
		assert_int_equal(out[k].usage_tokens, 100);
	}
	for (int k = 0; k < 3; k++) {
		assert_int_equal(out[k].prompt_tokens, 50);
		assert_int_equal(out[k].reasoning_tokens, 0);
		assert_true(out[k].gen_s > 0);
	}
	release_all(out, 3);
	g.release(g.ctx);
}

/* reasoning_content becomes <think>...</think>; the reported reasoning and
 * cached tokens are kept (prefill = 20 prompt - 8 cached). */
static void test_reasoning_content(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	(void)state;

	fake_start("reasoning.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_OK);
	assert_string_equal(out[0].text, "<think>Let me think.</think>\nanswer");
	assert_int_equal(out[0].len, strlen(out[0].text));
	assert_int_equal(out[0].reasoning_tokens, 5);
	assert_int_equal(out[0].completion_tokens, 9);
	assert_int_equal(out[0].prompt_tokens, 20);
	assert_int_equal(out[0].prefill_tokens, 12);
	release_all(out, 1);
	g.release(g.ctx);
}

/* `reasoning`, none, and an inline <think>, no reasoning count reported:
 * reasoning -1, 0, -1. Choice 2 finished by "length" (256 tokens), so
 * usage 30 is one choice's: the others get 30 scaled by their bytes over
 * their mean (15:5 of 10): 45 and 15. */
static void test_reasoning_unreported(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(3);
	struct gen_completion out[3];
	struct cr_err err;
	(void)state;

	fake_start("reasoning2.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_OK);
	assert_string_equal(out[0].text, "<think>hmm hmm hmm</think>\naaaa");
	assert_string_equal(out[1].text, "bbbbb");
	assert_string_equal(out[2].text, "<think>abc</think>\nx");
	assert_int_equal(out[0].reasoning_tokens, -1);
	assert_int_equal(out[1].reasoning_tokens, 0);
	assert_int_equal(out[2].reasoning_tokens, -1);
	assert_int_equal(out[0].completion_tokens, 45);
	assert_int_equal(out[1].completion_tokens, 15);
	assert_int_equal(out[2].completion_tokens, 256);
	assert_string_equal(out[2].finish, "length");
	release_all(out, 3);
	g.release(g.ctx);
}

/* Reported reasoning (20 of 80) split by reasoning bytes 30:10 -> 15, 5;
 * the other 60 by content bytes 10:30 -> 15, 45; completion 30 and 50. */
static void test_reasoning_reported_n2(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(2);
	struct gen_completion out[2];
	struct cr_err err;
	(void)state;

	fake_start("reasoning3.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_OK);
	assert_int_equal(out[0].reasoning_tokens, 15);
	assert_int_equal(out[1].reasoning_tokens, 5);
	assert_int_equal(out[0].completion_tokens, 30);
	assert_int_equal(out[1].completion_tokens, 50);
	assert_int_equal(out[0].prefill_tokens, -1);
	release_all(out, 2);
	g.release(g.ctx);
}

/* A 429 with Retry-After: 1, then the answer: two requests, the same body,
 * and the wait was the server's second, not the 0.01 s backoff. */
static void test_retry_429(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	char *b0, *b1;
	(void)state;

	fake_start("retry429.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_OK);
	assert_string_equal(out[0].text, ok1_text);
	assert_int_equal(n_logged(), 2);
	b0 = req_log(0, "json");
	b1 = req_log(1, "json");
	assert_string_equal(b0, b1);
	free(b0);
	free(b1);
	assert_true(out[0].gen_s >= 0.9);
	release_all(out, 1);
	g.release(g.ctx);
}

/* 503 on every try: max_retries 2 is three requests, then CR_EENV naming
 * the endpoint and the status; the script's fourth line is never asked for. */
static void test_503_exhausted(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	(void)state;

	fake_start("exhaust503.script");
	c = cfg_for(g_fake.url);
	c.max_retries = 2;
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EENV);
	assert_non_null(strstr(err.msg, g_fake.url));
	assert_non_null(strstr(err.msg, "HTTP 503"));
	assert_non_null(strstr(err.msg, "3 tries"));
	assert_non_null(strstr(err.msg, "The model is loading"));
	assert_int_equal(n_logged(), 3);
	assert_null(out[0].text);
	g.release(g.ctx);
}

/* A 401: CR_EINPUT with the status and the server's message; the key went
 * out in the header and nowhere else. */
static void test_401(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	char *head, *body;
	(void)state;

	fake_start("err401.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EINPUT);
	assert_non_null(strstr(err.msg, "HTTP 401"));
	assert_non_null(strstr(err.msg, "Incorrect API key provided"));
	assert_non_null(strstr(err.msg, g_fake.url));
	assert_null(strstr(err.msg, KEY));
	assert_int_equal(n_logged(), 1);   /* not retried */
	head = req_log(0, "head");
	body = req_log(0, "json");
	assert_non_null(strstr(head, KEY));
	assert_null(strstr(body, KEY));
	free(head);
	free(body);
	g.release(g.ctx);
}

/* A server that quotes the key back: it is cut out of the message. */
static void test_401_key_quoted(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	(void)state;

	fake_start("err401_echo.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EINPUT);
	assert_null(strstr(err.msg, KEY));
	assert_non_null(strstr(err.msg, "Incorrect API key provided: [redacted]. Find yours"));
	g.release(g.ctx);
}

/* A 400 whose message is long and holds a newline and a tab: trimmed to
 * about 300 bytes, control characters escaped. */
static void test_400_message_trimmed(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	(void)state;

	fake_start("err400.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EINPUT);
	assert_non_null(strstr(err.msg, "HTTP 400: first line\\nsecond line\\txxx"));
	assert_null(strchr(err.msg, '\n'));
	assert_null(strchr(err.msg, '\t'));
	assert_non_null(strstr(err.msg, "xxx..."));
	assert_true(strlen(err.msg) < strlen(g_fake.url) + 340);
	assert_true(strlen(err.msg) > 300);
	g.release(g.ctx);
}

/* Nobody listens: CR_EENV at once, not after the retries' backoff. */
static void test_connection_refused(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char url[128], want[160];
	double t0;
	(void)state;

	/* a port bound but never listened on: nobody else can take it */
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", ntohs(a.sin_port));
	c = cfg_for(url);
	c.max_retries = 5;
	c.backoff_s = 1;
	open_ok(&c, &g);
	cr_err_init(&err);
	t0 = now_s();
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EENV);
	assert_true(now_s() - t0 < 0.9);
	snprintf(want, sizeof want, "%s: connection refused", url);
	assert_string_equal(err.msg, want);
	close(fd);
	g.release(g.ctx);
}

/* The key's variable unset or empty: CR_EUSAGE at open, naming it. */
static void test_key_unset(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c = cfg_for("http://127.0.0.1:9/v1");
	struct cr_err err;
	(void)state;

	c.api_key_env = "CRUCIBLE_TEST_NO_SUCH_KEY";
	unsetenv(c.api_key_env);
	cr_err_init(&err);
	assert_int_equal(gen_endpoint_open(&c, &g, &err), CR_EUSAGE);
	assert_non_null(strstr(err.msg, "CRUCIBLE_TEST_NO_SUCH_KEY"));
	assert_non_null(strstr(err.msg, "not set"));
	setenv(c.api_key_env, "", 1);
	cr_err_init(&err);
	assert_int_equal(gen_endpoint_open(&c, &g, &err), CR_EUSAGE);
	assert_non_null(strstr(err.msg, "CRUCIBLE_TEST_NO_SUCH_KEY"));
	assert_non_null(strstr(err.msg, "empty"));
	unsetenv(c.api_key_env);
	/* not a url */
	c = cfg_for("127.0.0.1:8000/v1");
	cr_err_init(&err);
	assert_int_equal(gen_endpoint_open(&c, &g, &err), CR_EUSAGE);
}

/* Content that is not UTF-8 cannot go into JSON: CR_EINPUT, nothing sent. */
static void test_bad_utf8(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c = cfg_for("http://127.0.0.1:9/v1");
	struct gen_msg bad[] = { { "user", "caf\xe9 kernel" } };
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	(void)state;

	open_ok(&c, &g);
	rq.msgs = bad;
	rq.n_msgs = 1;
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EINPUT);
	assert_non_null(strstr(err.msg, "message 0 (user) is not valid UTF-8"));
	g.release(g.ctx);
}

/* The client timed out on a slow answer and the retry got the next one. */
static void test_timeout_retry(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	(void)state;

	fake_start("timeout.script");
	c = cfg_for(g_fake.url);
	c.timeout_s = 0.3;
	c.backoff_s = 0.6;   /* the retry arrives when the server is done sleeping */
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	assert_string_equal(out[0].text, ok1_text);
	assert_int_equal(n_logged(), 2);
	assert_true(out[0].gen_s >= 0.85);
	release_all(out, 1);
	g.release(g.ctx);
}

/* A connection closed without an answer is retried. */
static void test_close_retry(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	(void)state;

	fake_start("close.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	assert_string_equal(out[0].text, ok1_text);
	assert_int_equal(n_logged(), 2);
	release_all(out, 1);
	g.release(g.ctx);
}

/* n=3 answered with one choice: an error naming the endpoint, nothing kept. */
static void test_fewer_choices(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(3);
	struct gen_completion out[3];
	struct cr_err err;
	(void)state;

	fake_start("ok.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EENV);
	assert_non_null(strstr(err.msg, g_fake.url));
	assert_non_null(strstr(err.msg, "1 choice for n=3"));
	for (int k = 0; k < 3; k++)
		assert_null(out[k].text);
	g.release(g.ctx);
}

static void test_not_json(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	(void)state;

	fake_start("notjson.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	cr_err_init(&err);
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EENV);
	assert_non_null(strstr(err.msg, "not JSON"));
	assert_non_null(strstr(err.msg, "upstream proxy error"));
	g.release(g.ctx);
}

struct worker {
	struct gen_generator *g;
	pthread_barrier_t *bar;
	struct gen_completion out[2];
	struct cr_err err;
	enum cr_status st;
};

static void *work(void *p)
{
	struct worker *w = p;
	struct gen_req rq = req_n(2);
	cr_err_init(&w->err);
	pthread_barrier_wait(w->bar);
	w->st = w->g->complete(w->g->ctx, &rq, w->out, &w->err);
	return NULL;
}

/* Four complete() calls at once from four threads, concurrency 4, against
 * the echo: all succeed with the candidate, counted as the fake made it
 * (its usage is the sum: the bytes say so). */
static void test_concurrent(void **state)
{
	json_t *gl;
	int toy;
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct worker w[4];
	pthread_t th[4];
	pthread_barrier_t bar;
	size_t len;
	char *cand = cr_read_file(fixture_path("echo_cand.txt"), 1 << 20, &len);
	(void)state;

	assert_non_null(cand);
	setenv("FAKE_OPENAI_ECHO_FILE", fixture_path("echo_cand.txt"), 1);
	fake_start("echo4.script");
	c = cfg_for(g_fake.url);
	c.concurrency = 4;
	open_ok(&c, &g);
	assert_int_equal(g.max_inflight, 4);
	pthread_barrier_init(&bar, NULL, 4);
	for (int i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].g = &g;
		w[i].bar = &bar;
		assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	gl = gen_log(0);
	toy = (int)json_integer_value(json_array_get(json_object_get(gl, "tokens"), 0));
	json_decref(gl);
	assert_true(toy > 0);
	for (int i = 0; i < 4; i++) {
		if (w[i].st)
			fail_msg("thread %d: %s", i, w[i].err.msg);
		for (int k = 0; k < 2; k++) {
			assert_string_equal(w[i].out[k].text, cand);
			assert_int_equal(w[i].out[k].completion_tokens, toy);
		}
		release_all(w[i].out, 2);
	}
	assert_int_equal(n_logged(), 4);
	free(cand);
	g.release(g.ctx);
}

/* ---- issue 31: streaming, timeouts, retries over a window, token counts ---- */

/* The echo's candidate for every test below. */
static void echo_file(void)
{
	setenv("FAKE_OPENAI_ECHO_FILE", fixture_path("echo_cand.txt"), 1);
}

/* gen-I.json's per-choice array FIELD, element k. */
static int gen_at(int i, const char *field, int k)
{
	json_t *g = gen_log(i);
	int v = (int)json_integer_value(json_array_get(json_object_get(g, field), (size_t)k));
	json_decref(g);
	return v;
}

static json_t *token_counts(struct gen_generator *g)
{
	json_t *d = g->describe(g->ctx), *tc;
	assert_non_null(d);
	tc = json_incref(json_object_get(d, "token_counts"));
	assert_non_null(tc);
	json_decref(d);
	return tc;
}

static long long tc_int(json_t *tc, const char *key)
{
	json_t *v = json_object_get(tc, key);
	if (!json_is_integer(v))
		fail_msg("token_counts.%s is not an integer", key);
	return json_integer_value(v);
}

/* The event stream parser alone: CRLF, CR and LF line ends, comments,
 * fields other than data, a multi-line data event, three choices
 * interleaved with reasoning, usage in the last chunk, [DONE]; fed whole
 * and one byte at a time. */
static const char sse_text[] =
	": keep-alive\r\n\r\n"
	"event: message\r\n"
	"data: {\"choices\":[{\"index\":2,\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n"
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Hm\"}}]}\n\n"
	"data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B1\"}}]}\r\r"
	"data: {\"choices\":[{\"index\":2,\r\n"
	"data: \"delta\":{\"reasoning\":\"r2\"}}]}\n\n"
	"data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\\n\"}}]}\n\n"
	"data: {\"choices\":[{\"index\":2,\"delta\":{\"content\":\"C\"},\"finish_reason\":\"length\"}]}\n\n"
	"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"},"
	"{\"index\":1,\"delta\":{\"content\":\"2\"},\"finish_reason\":\"stop\"}]}\n\n"
	"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":7}}\n\n"
	"data: [DONE]\n\n";

struct prog {
	pthread_mutex_t lock;
	int calls, last_tokens[4];
	size_t last_bytes[4];
	bool backwards;
};

static void on_prog(void *p, int k, int tokens, size_t bytes)
{
	struct prog *g = p;
	pthread_mutex_lock(&g->lock);
	g->calls++;
	if (k >= 0 && k < 4) {
		if (bytes < g->last_bytes[k])
			g->backwards = true;
		g->last_tokens[k] = tokens;
		g->last_bytes[k] = bytes;
	}
	pthread_mutex_unlock(&g->lock);
}

static void check_sse(struct gen_ans *a, const struct prog *p)
{
	assert_true(a->done);
	assert_true(gen_ans_complete(a));
	assert_string_equal(a->c[0].reasoning.p, "Hm");
	assert_string_equal(a->c[0].content.p, "A\n");
	assert_string_equal(a->c[1].content.p, "B12");
	assert_int_equal(a->c[1].reasoning.len, 0);
	assert_string_equal(a->c[2].reasoning.p, "r2");
	assert_string_equal(a->c[2].content.p, "C");
	assert_string_equal(a->c[0].finish, "stop");
	assert_string_equal(a->c[1].finish, "stop");
	assert_string_equal(a->c[2].finish, "length");
	assert_int_equal(a->c[0].chunks, 2);
	assert_int_equal(a->c[1].chunks, 2);
	assert_int_equal(a->c[2].chunks, 2);
	assert_int_equal(json_integer_value(json_object_get(a->usage, "completion_tokens")), 7);
	assert_int_equal(p->calls, 6);
	assert_int_equal(p->last_tokens[1], 2);
	assert_int_equal(p->last_bytes[1], 3);
	assert_false(p->backwards);
}

static void test_sse_parse(void **state)
{
	struct gen_ans a;
	struct prog p;
	size_t n = sizeof sse_text - 1;
	(void)state;

	for (int way = 0; way < 2; way++) {
		memset(&p, 0, sizeof p);
		pthread_mutex_init(&p.lock, NULL);
		assert_int_equal(gen_ans_init(&a, 3), 0);
		a.on_progress = on_prog;
		a.pctx = &p;
		if (way == 0) {
			assert_int_equal(gen_sse_feed(&a, sse_text, n), 0);
		} else {
			for (size_t i = 0; i < n; i++)
				assert_int_equal(gen_sse_feed(&a, sse_text + i, 1), 0);
		}
		gen_sse_end(&a);
		if (a.bad[0])
			fail_msg("%s", a.bad);
		check_sse(&a, &p);
		gen_ans_release(&a);
		pthread_mutex_destroy(&p.lock);
	}
	/* data lines with no blank line between them are one event: their sum
	 * is held to the response cap, not each line alone */
	{
		size_t ln = 1u << 20;
		char *big = malloc(ln + 8);
		int rc = 0;
		assert_non_null(big);
		memcpy(big, "data: ", 6);
		memset(big + 6, 'x', ln);
		big[ln + 6] = '\n';
		assert_int_equal(gen_ans_init(&a, 1), 0);
		for (int i = 0; i < 80 && !rc; i++)
			rc = gen_sse_feed(&a, big, ln + 7);
		assert_int_equal(rc, -1);
		assert_non_null(strstr(a.bad, "MiB"));
		assert_true(a.data.len <= GEN_RESP_MAX);
		gen_ans_release(&a);
		free(big);
	}
	/* an error object in the stream stops it with its code and message */
	assert_int_equal(gen_ans_init(&a, 1), 0);
	assert_int_equal(gen_sse_feed(&a, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":"
				      "\"x\"}}]}\n\ndata: {\"error\":{\"code\":503,\"message\":"
				      "\"overloaded\"}}\n\n", 112), -1);
	assert_int_equal(a.err_code, 503);
	assert_string_equal(a.err_msg, "overloaded");
	assert_false(gen_ans_complete(&a));
	gen_ans_release(&a);
	/* an index past n is malformed */
	assert_int_equal(gen_ans_init(&a, 1), 0);
	assert_int_equal(gen_sse_feed(&a, "data: {\"choices\":[{\"index\":1,\"delta\":{}}]}\n\n", 46),
			 -1);
	assert_non_null(strstr(a.bad, "out of range"));
	gen_ans_release(&a);
}

/* llama.cpp's way: n = 3 streamed, reasoning apart, usage of choice 0 alone,
 * /tokenize offered: every choice's count is the toy tokenizer's, exactly;
 * usage matched one choice and describe() says so. The request asked a
 * stream with usage. */
static void test_llama_usage_n3(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(3);
	struct gen_completion out[3];
	struct prog p = { 0 };
	json_t *b, *tc, *d;
	(void)state;

	echo_file();
	fake_start("llama_n3.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	pthread_mutex_init(&p.lock, NULL);
	rq.on_progress = on_prog;
	rq.pctx = &p;
	complete_ok(&g, &rq, out);
	b = req_json(0);
	assert_true(json_is_true(json_object_get(b, "stream")));
	assert_true(json_is_true(json_object_get(json_object_get(b, "stream_options"),
						 "include_usage")));
	json_decref(b);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(out[k].completion_tokens, gen_at(0, "tokens", k));
		assert_int_equal(out[k].reasoning_tokens, gen_at(0, "reasoning", k));
		assert_string_equal(out[k].count_src, "tokenizer");
		assert_int_equal(out[k].usage_tokens, gen_at(0, "tokens", 0));
		assert_int_equal(out[k].lost_tokens, 0);
		assert_true(!strncmp(out[k].text, "<think>Let me think about choice", 32));
		assert_string_equal(out[k].finish, "stop");
	}
	assert_true(out[2].completion_tokens > out[0].completion_tokens);
	assert_true(p.calls >= out[0].completion_tokens);
	assert_int_equal(p.last_tokens[2], out[2].completion_tokens);
	tc = token_counts(&g);
	assert_string_equal(json_string_value(json_object_get(tc, "source")), "server");
	assert_string_equal(json_string_value(json_object_get(tc, "server_api")), "llama.cpp");
	assert_string_equal(json_string_value(json_object_get(tc, "tokenizer")), "auto");
	assert_int_equal(tc_int(tc, "requests"), 1);
	assert_int_equal(tc_int(tc, "usage_matched_one_choice"), 1);
	assert_int_equal(tc_int(tc, "usage_matched_sum"), 0);
	assert_int_equal(tc_int(tc, "usage_disagreed"), 0);
	json_decref(tc);
	d = g.describe(g.ctx);
	assert_true(json_is_true(json_object_get(d, "stream")));
	assert_true(json_is_object(json_object_get(d, "timeouts")));
	assert_true(json_is_object(json_object_get(d, "retry")));
	json_decref(d);
	release_all(out, 3);
	g.release(g.ctx);
	pthread_mutex_destroy(&p.lock);
}

/* vLLM's /tokenize shape (probed after llama.cpp's is refused), usage the
 * sum; the stream off: one JSON answer, no stream fields sent. */
static void test_vllm_usage_sum(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(3);
	struct gen_completion out[3];
	json_t *tc, *b;
	(void)state;

	echo_file();
	fake_start("vllm_n3.script");
	c = cfg_for(g_fake.url);
	c.stream = -1;
	c.tokenizer = "server";
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	b = req_json(0);
	assert_null(json_object_get(b, "stream"));
	json_decref(b);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(out[k].completion_tokens, gen_at(0, "tokens", k));
		assert_string_equal(out[k].count_src, "tokenizer");
	}
	tc = token_counts(&g);
	assert_string_equal(json_string_value(json_object_get(tc, "server_api")), "vllm");
	assert_int_equal(tc_int(tc, "usage_matched_sum"), 1);
	json_decref(tc);
	release_all(out, 3);
	g.release(g.ctx);
}

/* llama.cpp's usage with no /tokenize. Streamed: one choice's chunks equal
 * usage, so chunks are tokens and each choice is counted exactly. Not
 * streamed: read as one choice's from the bytes (never the sum split three
 * ways), each choice within a tenth of what the fake made. */
static void test_one_choice_usage_no_tokenizer(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(3);
	struct gen_completion out[3];
	struct cr_err err;
	json_t *tc;
	(void)state;

	echo_file();
	fake_start("one_notok.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(out[k].completion_tokens, gen_at(0, "tokens", k));
		assert_string_equal(out[k].count_src, "usage-split");
	}
	release_all(out, 3);
	g.release(g.ctx);
	c.stream = -1;
	open_ok(&c, &g);
	if (g.complete(g.ctx, &rq, out, &err))
		fail_msg("complete: %s", err.msg);
	for (int k = 0; k < 3; k++) {
		int made = gen_at(1, "tokens", k);
		assert_string_equal(out[k].count_src, "usage-split");
		if (abs(out[k].completion_tokens - made) * 10 > made)
			fail_msg("choice %d: %d tokens counted, %d made", k,
				 out[k].completion_tokens, made);
	}
	tc = token_counts(&g);
	assert_string_equal(json_string_value(json_object_get(tc, "source")), "usage");
	assert_int_equal(tc_int(tc, "usage_read_as_one_choice"), 1);
	json_decref(tc);
	release_all(out, 3);
	g.release(g.ctx);
}

/* No usage: counted by the tokenizer, usage absent; with tokenizer "usage",
 * not the estimate of 4 bytes a token, which is below what the stream
 * proves (a chunk with text is a token at least; the toy tokenizer makes
 * about 0.4 a byte): the chunks (gen_count_floor). */
static void test_usage_absent(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(2);
	struct gen_completion out[2];
	json_t *tc;
	(void)state;

	echo_file();
	fake_start("nousage.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(out[k].completion_tokens, gen_at(0, "tokens", k));
		assert_int_equal(out[k].usage_tokens, -1);
	}
	tc = token_counts(&g);
	assert_int_equal(tc_int(tc, "usage_absent"), 1);
	json_decref(tc);
	release_all(out, 2);
	g.release(g.ctx);
	fake_stop(NULL);

	fake_start("nousage.script");
	c = cfg_for(g_fake.url);
	c.tokenizer = "usage";
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	for (int k = 0; k < 2; k++) {
		assert_string_equal(out[k].count_src, "chunks");
		assert_int_equal(out[k].completion_tokens, gen_at(0, "tokens", k));
		assert_true(out[k].completion_tokens > (int)((out[k].len + 3) / 4));
	}
	tc = token_counts(&g);
	assert_string_equal(json_string_value(json_object_get(tc, "source")), "usage");
	assert_int_equal(tc_int(tc, "estimated"), 1);
	json_decref(tc);
	release_all(out, 2);
	g.release(g.ctx);
}

/* /tokenize answers the probe, then 503 for every count: the completion is
 * counted from usage at once (a /tokenize that answers an error is not
 * worth a retry window; the default window is 600 s), and describe()
 * counts the failure. */
static void test_tokenize_fails_after_probe(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(2);
	struct gen_completion out[2];
	struct cr_err err;
	json_t *tc;
	int64_t t0;
	(void)state;

	echo_file();
	fake_start("tokfail.script");
	c = cfg_for(g_fake.url);
	c.retry_window_s = 600;
	c.max_retries = 0;   /* only the window: retried, a count would wait minutes */
	open_ok(&c, &g);
	cr_err_init(&err);
	t0 = cr_now_ns();
	if (g.complete(g.ctx, &rq, out, &err))
		fail_msg("complete: %s", err.msg);
	assert_true(cr_now_ns() - t0 < 20 * 1000000000LL);
	for (int k = 0; k < 2; k++) {
		assert_string_not_equal(out[k].count_src, "tokenizer");
		assert_int_equal(out[k].usage_tokens,
				 gen_at(0, "tokens", 0) + gen_at(0, "tokens", 1));
	}
	assert_int_equal(out[0].completion_tokens + out[1].completion_tokens,
			 gen_at(0, "tokens", 0) + gen_at(0, "tokens", 1));
	tc = token_counts(&g);
	assert_true(tc_int(tc, "tokenizer_failed") >= 1);
	json_decref(tc);
	release_all(out, 2);
	g.release(g.ctx);
}

/* /tokenize closes every call unanswered, the probe included: the first
 * completion is counted from usage and its stream at once (no retry window
 * spent on a count), /tokenize is not asked again for the second, and the
 * counts are exact (the toy stream is a token a chunk). */
static void test_tokenize_drops(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(2);
	struct gen_completion out[2];
	char tp[PATH_MAX + 16];
	int64_t t0;
	(void)state;

	echo_file();
	fake_start("tokdrop.script");
	c = cfg_for(g_fake.url);
	c.retry_window_s = 600;
	c.max_retries = 0;
	open_ok(&c, &g);
	t0 = cr_now_ns();
	for (int r = 0; r < 2; r++) {
		complete_ok(&g, &rq, out);
		for (int k = 0; k < 2; k++) {
			assert_string_not_equal(out[k].count_src, "tokenizer");
			assert_int_equal(out[k].completion_tokens, gen_at(r, "tokens", k));
		}
		release_all(out, 2);
	}
	assert_true(cr_now_ns() - t0 < 20 * 1000000000LL);
	snprintf(tp, sizeof tp, "%s/log/tok-0.json", g_fake.dir);
	assert_int_equal(access(tp, F_OK), 0);    /* the probe was made */
	snprintf(tp, sizeof tp, "%s/log/tok-1.json", g_fake.dir);
	assert_int_equal(access(tp, F_OK), -1);   /* and not again */
	g.release(g.ctx);
}

/* b holds n bytes of text (what gen_ans_release frees). */
static int sbuf_fill(struct gen_sbuf *b, size_t n)
{
	if (!(b->p = malloc(n + 1)))
		return -1;
	memset(b->p, 'x', n);
	b->p[n] = '\0';
	b->len = n;
	b->cap = n + 1;
	return 0;
}

/* The counts never fall below what the answer itself proves
 * (gen_count_floor): a text that re-tokenizes to 108 tokens while 870
 * chunks streamed with usage 871 (n = 1) is counted 871 from usage; with
 * n = 2, a choice counted 10 that streamed 50 chunks is 50 ("chunks"), one
 * usage chunk that not every choice had is no floor, a count within a
 * re-tokenization's slack is kept, and the choices' sum is at least the
 * request's usage. */
static void test_count_floor(void **state)
{
	struct gen_ans a;
	struct gen_completion out[2];
	struct gen_count_stats s;
	(void)state;

	gen_count_stats_init(&s);
	assert_int_equal(gen_ans_init(&a, 1), 0);
	a.c[0].chunks = 870;
	a.usage = json_pack("{s:i}", "completion_tokens", 871);   /* the end token too */
	memset(out, 0, sizeof out);
	out[0].completion_tokens = 108;
	snprintf(out[0].count_src, sizeof out[0].count_src, "tokenizer");
	assert_int_equal(gen_count_floor(&s, &a, out), 1);
	assert_int_equal(out[0].completion_tokens, 871);
	assert_string_equal(out[0].count_src, "usage");
	out[0].completion_tokens = 870;   /* the end token the text does not hold */
	snprintf(out[0].count_src, sizeof out[0].count_src, "tokenizer");
	assert_int_equal(gen_count_floor(&s, &a, out), 0);
	assert_string_equal(out[0].count_src, "tokenizer");
	gen_ans_release(&a);

	assert_int_equal(gen_ans_init(&a, 2), 0);
	a.c[0].chunks = 50;
	a.c[1].chunks = 60;
	a.c[1].usage_c = 100;             /* not every choice's own: no floor */
	a.usage = json_pack("{s:i}", "completion_tokens", 100);   /* below the sum */
	memset(out, 0, sizeof out);
	out[0].completion_tokens = 10;
	out[1].completion_tokens = 60;
	assert_int_equal(gen_count_floor(&s, &a, out), 1);
	assert_int_equal(out[0].completion_tokens, 50);
	assert_string_equal(out[0].count_src, "chunks");
	assert_int_equal(out[1].completion_tokens, 60);
	gen_ans_release(&a);

	/* n = 2, not streamed, a tokenizer counting 209 + 209 where usage says
	 * 1800: the choices hold 1800 at least under either reading of usage
	 * (the sum, or one choice's), so the sum is topped up by bytes */
	assert_int_equal(gen_ans_init(&a, 2), 0);
	assert_int_equal(sbuf_fill(&a.c[0].content, 300), 0);
	assert_int_equal(sbuf_fill(&a.c[1].content, 100), 0);
	a.usage = json_pack("{s:i}", "completion_tokens", 1800);
	memset(out, 0, sizeof out);
	out[0].completion_tokens = out[1].completion_tokens = 209;
	assert_int_equal(gen_count_floor(&s, &a, out), 1);
	assert_int_equal(out[0].completion_tokens + out[1].completion_tokens, 1800);
	assert_true(out[0].completion_tokens > out[1].completion_tokens);
	assert_string_equal(out[0].count_src, "usage");
	gen_ans_release(&a);
	assert_int_equal(s.floored, 3);
	pthread_mutex_destroy(&s.lock);
}

/* n = 1: a usage chunk repeated (a proxy) replaces the last, never adds
 * (it counted 248 for 124) */
static void test_usage_chunk_repeated(void **state)
{
	static const char s[] =
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
		"data: {\"choices\":[],\"usage\":{\"completion_tokens\":124}}\n\n"
		"data: {\"choices\":[],\"usage\":{\"completion_tokens\":124}}\n\n"
		"data: [DONE]\n\n";
	struct gen_ans a;
	(void)state;
	assert_int_equal(gen_ans_init(&a, 1), 0);
	assert_int_equal(gen_sse_feed(&a, s, sizeof s - 1), 0);
	gen_sse_end(&a);
	assert_int_equal(json_integer_value(json_object_get(a.usage, "completion_tokens")), 124);
	gen_ans_release(&a);
}

/* A \u0000 in a chunk or a body is valid JSON (a byte token <0x00>): it
 * is taken as U+FFFD, never ending the request nor cutting the text */
static void test_nul_in_text(void **state)
{
	static const char s[] =
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\\u0000b\"}}]}\n\n"
		"data: [DONE]\n\n";
	static const char body[] =
		"{\"choices\":[{\"index\":0,\"message\":{\"content\":\"x\\u0000y\"},"
		"\"finish_reason\":\"stop\"}]}";
	struct gen_ans a;
	struct cr_err err;
	(void)state;
	assert_int_equal(gen_ans_init(&a, 1), 0);
	assert_int_equal(gen_sse_feed(&a, s, sizeof s - 1), 0);
	gen_sse_end(&a);
	assert_int_equal(a.c[0].content.len, 5);
	assert_memory_equal(a.c[0].content.p, "a\xEF\xBF\xBD" "b", 5);
	gen_ans_release(&a);
	assert_int_equal(gen_ans_init(&a, 1), 0);
	cr_err_init(&err);
	assert_int_equal(gen_ans_from_json(&a, "test", body, sizeof body - 1, &err), CR_OK);
	assert_memory_equal(a.c[0].content.p, "x\xEF\xBF\xBD" "y", 5);
	gen_ans_release(&a);
}

/* A stream slower than the idle timeout in all (60-odd chunks 20 ms apart,
 * idle 0.4 s, no request timeout) but never silent that long completes. */
static void test_slow_stream(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	double t0;
	(void)state;

	echo_file();
	fake_start("slow.script");
	c = cfg_for(g_fake.url);
	c.timeout_s = 0;
	c.idle_timeout_s = 0.4;
	open_ok(&c, &g);
	cr_err_init(&err);
	t0 = now_s();
	if (g.complete(g.ctx, &rq, out, &err))
		fail_msg("complete: %s", err.msg);
	assert_true(now_s() - t0 > 0.6);
	assert_int_equal(n_logged(), 1);
	assert_int_equal(out[0].completion_tokens, gen_at(0, "tokens", 0));
	release_all(out, 1);
	g.release(g.ctx);
}

/* Silent for 3 s after 5 chunks: the idle timeout (0.5 s) ends the try, the
 * request is retried whole, and the 5 tokens of the failed try are lost. */
static void test_idle_timeout_retried(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	json_t *tc;
	double t0;
	(void)state;

	echo_file();
	fake_start("stall.script");
	c = cfg_for(g_fake.url);
	c.idle_timeout_s = 0.5;
	c.timeout_s = 0;
	open_ok(&c, &g);
	cr_err_init(&err);
	t0 = now_s();
	if (g.complete(g.ctx, &rq, out, &err))
		fail_msg("complete: %s", err.msg);
	assert_true(now_s() - t0 < 2.9);
	assert_int_equal(n_logged(), 2);
	assert_int_equal(out[0].completion_tokens, gen_at(1, "tokens", 0));
	assert_int_equal(out[0].lost_tokens, 5);
	tc = token_counts(&g);
	assert_int_equal(tc_int(tc, "retries"), 1);
	assert_int_equal(tc_int(tc, "lost_tokens"), 5);
	json_decref(tc);
	release_all(out, 1);
	g.release(g.ctx);
}

/* The connection dropped after 7 chunks: retried whole, 7 tokens lost. */
static void test_drop_mid_stream(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	(void)state;

	echo_file();
	fake_start("drop.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	assert_int_equal(n_logged(), 2);
	assert_int_equal(gen_at(0, "sent", 0), 7);
	assert_int_equal(out[0].lost_tokens, 7);
	assert_int_equal(out[0].completion_tokens, gen_at(1, "tokens", 0));
	assert_string_equal(out[0].count_src, "tokenizer");
	release_all(out, 1);
	g.release(g.ctx);
}

/* After a success the server restarts: the request is closed unanswered and
 * the port refuses for 1.5 s; the request is retried through it. */
static void test_restart_survived(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	double t0;
	(void)state;

	echo_file();
	fake_start("restart.script");
	c = cfg_for(g_fake.url);
	c.max_retries = 0;
	c.backoff_s = 0.1;
	c.retry_window_s = 20;
	c.tokenizer = "usage";
	open_ok(&c, &g);
	cr_err_init(&err);
	if (g.complete(g.ctx, &rq, out, &err))
		fail_msg("complete 1: %s", err.msg);
	release_all(out, 1);
	t0 = now_s();
	if (g.complete(g.ctx, &rq, out, &err))
		fail_msg("complete 2: %s", err.msg);
	assert_true(now_s() - t0 > 1.2);
	assert_true(now_s() - t0 < 10);
	assert_int_equal(n_logged(), 3);
	release_all(out, 1);
	g.release(g.ctx);
}

/* 503 until the window (0.6 s) is spent: CR_EENV naming the endpoint, the
 * failure and the window. */
static void test_window_spent(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	struct cr_err err;
	double t0;
	(void)state;

	fake_start("window.script");
	c = cfg_for(g_fake.url);
	c.max_retries = 0;
	c.backoff_s = 0.05;
	c.retry_window_s = 0.6;
	open_ok(&c, &g);
	cr_err_init(&err);
	t0 = now_s();
	assert_int_equal(g.complete(g.ctx, &rq, out, &err), CR_EENV);
	assert_true(now_s() - t0 >= 0.55);
	assert_true(now_s() - t0 < 5);
	assert_non_null(strstr(err.msg, g_fake.url));
	assert_non_null(strstr(err.msg, "HTTP 50"));
	assert_non_null(strstr(err.msg, "retry window"));
	assert_true(n_logged() >= 3);
	g.release(g.ctx);
}

/* cfg.tokenizer a .gguf: its tokenizer alone counts each choice (as
 * dec_tok_encode does, no BOS), no /tokenize is asked, and the toy usage
 * disagrees with it: describe() keeps the worst disagreement. */
static void test_gguf_tokenizer(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(2);
	struct gen_completion out[2];
	struct cr_err err;
	struct tiny_spec s;
	struct dec_gguf *gg;
	struct dec_tok *tok;
	char path[PATH_MAX];
	json_t *tc, *w;
	(void)state;

	tiny_spec_default(&s, "qwen2", DEC_T_F32);
	s.dim = 64;
	s.hidden = 64;
	s.n_layers = 1;
	tiny_tmpname(path, sizeof path, ".gguf");
	assert_int_equal(tiny_model_write(&s, path), 0);
	echo_file();
	fake_start("one_notok.script");
	c = cfg_for(g_fake.url);
	c.tokenizer = path;
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	assert_int_equal(dec_gguf_open(path, &gg, &err), CR_OK);
	assert_int_equal(dec_vocab_tokenizer(gg, &tok, &err), CR_OK);
	for (int k = 0; k < 2; k++) {
		int32_t *ids;
		size_t n;
		assert_int_equal(dec_tok_encode(tok, out[k].text, out[k].len, 1, 0, &ids, &n, &err),
				 CR_OK);
		assert_int_equal(out[k].completion_tokens, (int)n);
		assert_string_equal(out[k].count_src, "tokenizer");
		free(ids);
	}
	dec_tok_free(tok);
	dec_gguf_free(gg);
	{
		char tp[PATH_MAX + 32];
		snprintf(tp, sizeof tp, "%s/log/tok-0.json", g_fake.dir);
		assert_int_equal(access(tp, F_OK), -1);   /* no /tokenize asked */
	}
	tc = token_counts(&g);
	assert_string_equal(json_string_value(json_object_get(tc, "source")), "gguf");
	assert_string_equal(json_string_value(json_object_get(tc, "tokenizer")), path);
	assert_int_equal(tc_int(tc, "usage_disagreed"), 1);
	w = json_object_get(tc, "worst_disagreement");
	assert_int_equal(json_integer_value(json_object_get(w, "usage")), out[0].usage_tokens);
	assert_int_equal(json_integer_value(json_object_get(w, "counted")),
			 out[0].completion_tokens + out[1].completion_tokens);
	assert_string_equal(json_string_value(json_object_get(w, "id")), "c0");
	json_decref(tc);
	release_all(out, 2);
	g.release(g.ctx);
	unlink(path);
}

/* An answer with no code block comes back as it is (the strategies say
 * "no code block found"); the fake made it with the toy tokenizer. */
static void test_nocode_answer(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(1);
	struct gen_completion out[1];
	(void)state;

	echo_file();
	fake_start("nocode.script");
	c = cfg_for(g_fake.url);
	c.tokenizer = "usage";
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	assert_null(strstr(out[0].text, "```"));
	assert_true(out[0].len > 40);
	assert_int_equal(out[0].completion_tokens, gen_at(0, "tokens", 0));
	assert_string_equal(out[0].count_src, "usage");
	release_all(out, 1);
	g.release(g.ctx);
}

/* llama.cpp's server streaming n = 3 sends a usage chunk after each
 * choice's end: without a tokenizer each choice gets its own count
 * exactly; with one, the chunks' sum matches the counted sum. */
static void test_usage_each_choice(void **state)
{
	struct gen_generator g;
	struct gen_endpoint_cfg c;
	struct gen_req rq = req_n(3);
	struct gen_completion out[3];
	json_t *tc;
	int sum = 0;
	(void)state;

	echo_file();
	fake_start("each_n3.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(out[k].completion_tokens, gen_at(0, "tokens", k));
		assert_string_equal(out[k].count_src, "usage");
		sum += out[k].completion_tokens;
	}
	assert_int_equal(out[0].usage_tokens, sum);
	tc = token_counts(&g);
	assert_int_equal(tc_int(tc, "usage_per_choice"), 1);
	json_decref(tc);
	release_all(out, 3);
	g.release(g.ctx);
	fake_stop(NULL);

	fake_start("each_tok.script");
	c = cfg_for(g_fake.url);
	open_ok(&c, &g);
	complete_ok(&g, &rq, out);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(out[k].completion_tokens, gen_at(0, "tokens", k));
		assert_string_equal(out[k].count_src, "tokenizer");
	}
	tc = token_counts(&g);
	assert_int_equal(tc_int(tc, "usage_matched_sum"), 1);
	json_decref(tc);
	release_all(out, 3);
	g.release(g.ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_request_fields, fake_stop),
		cmocka_unit_test_teardown(test_optional_fields, fake_stop),
		cmocka_unit_test_teardown(test_n3_index_order, fake_stop),
		cmocka_unit_test_teardown(test_reasoning_content, fake_stop),
		cmocka_unit_test_teardown(test_reasoning_unreported, fake_stop),
		cmocka_unit_test_teardown(test_reasoning_reported_n2, fake_stop),
		cmocka_unit_test_teardown(test_retry_429, fake_stop),
		cmocka_unit_test_teardown(test_503_exhausted, fake_stop),
		cmocka_unit_test_teardown(test_401, fake_stop),
		cmocka_unit_test_teardown(test_401_key_quoted, fake_stop),
		cmocka_unit_test_teardown(test_400_message_trimmed, fake_stop),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_key_unset),
		cmocka_unit_test(test_bad_utf8),
		cmocka_unit_test_teardown(test_timeout_retry, fake_stop),
		cmocka_unit_test_teardown(test_close_retry, fake_stop),
		cmocka_unit_test_teardown(test_fewer_choices, fake_stop),
		cmocka_unit_test_teardown(test_not_json, fake_stop),
		cmocka_unit_test_teardown(test_concurrent, fake_stop),
		cmocka_unit_test(test_sse_parse),
		cmocka_unit_test_teardown(test_llama_usage_n3, fake_stop),
		cmocka_unit_test_teardown(test_vllm_usage_sum, fake_stop),
		cmocka_unit_test_teardown(test_one_choice_usage_no_tokenizer, fake_stop),
		cmocka_unit_test_teardown(test_usage_absent, fake_stop),
		cmocka_unit_test_teardown(test_slow_stream, fake_stop),
		cmocka_unit_test_teardown(test_idle_timeout_retried, fake_stop),
		cmocka_unit_test_teardown(test_drop_mid_stream, fake_stop),
		cmocka_unit_test_teardown(test_restart_survived, fake_stop),
		cmocka_unit_test_teardown(test_window_spent, fake_stop),
		cmocka_unit_test_teardown(test_gguf_tokenizer, fake_stop),
		cmocka_unit_test_teardown(test_tokenize_fails_after_probe, fake_stop),
		cmocka_unit_test_teardown(test_tokenize_drops, fake_stop),
		cmocka_unit_test(test_count_floor),
		cmocka_unit_test(test_usage_chunk_repeated),
		cmocka_unit_test(test_nul_in_text),
		cmocka_unit_test_teardown(test_nocode_answer, fake_stop),
		cmocka_unit_test_teardown(test_usage_each_choice, fake_stop),
	};
	fixtures = getenv("FAKE_OPENAI_FIXTURES");
	if (!fixtures || !getenv("FAKE_OPENAI")) {
		fprintf(stderr, "test_endpoint: set FAKE_OPENAI and FAKE_OPENAI_FIXTURES\n");
		return 1;
	}
	setenv(KEY_ENV, KEY, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
