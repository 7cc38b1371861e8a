/* test_job.c — scoring a job through `crucible check` (serve/srv_job.c).
 * With the real executable ($CRUCIBLE_EXE) on the bundled smoke candidates
 * ($CRUCIBLE_SRC/data/candidates/smoke, each sidecar's "expect" the
 * verdict): an ok run untimed and timed, every non-ok verdict, harness
 * failures (no executable, an unknown task, the wall limit, after which
 * check's process group is gone), the secret run (same verdict, nothing of
 * the secret anywhere in the result or on disk), runs from several threads
 * at once. With a stand-in shell script for crucible: the child's
 * arguments, file name, environment (the secret and the device in, the
 * server's own CRUCIBLE_SEED out) and descriptors (none of the server's),
 * and output that is not check's verdict. And the reward formula. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/cr_status.h"
#include "common/sha256.h"
#include "serve/srv_job.h"

#define SECRET "123456789"

static const char *g_exe;       /* $CRUCIBLE_EXE */
static char g_smoke[PATH_MAX];  /* $CRUCIBLE_SRC/data/candidates/smoke */
static char g_dir[PATH_MAX];    /* the test's scratch folder */
static char g_tmp[PATH_MAX];    /* g_dir/tmp: srv_job_run's work folders go here */
static char g_fake[PATH_MAX];   /* g_dir/fake-crucible: the stand-in */
static char g_log[PATH_MAX];    /* g_dir/fake.log: what the stand-in saw */

/* The stand-in for crucible: logs its arguments, working folder, the two
 * variables that matter and where its descriptors lead, then answers as
 * $FAKE_MODE says. */
static const char fake_script[] =
	"#!/bin/sh\n"
	"{\n"
	"  for a in \"$@\"; do printf 'arg %s\\n' \"$a\"; done\n"
	"  printf 'cwd %s\\n' \"$PWD\"\n"
	"  ls\n"
	"  env | grep -E '^(CRUCIBLE_SEED|CUDA_VISIBLE_DEVICES)=' | sed 's/^/env /'\n"
	"  for f in /proc/$$/fd/*; do printf 'fd %s %s\\n' \"${f##*/}\" \"$(readlink \"$f\")\"; done\n"
	"} > \"$FAKE_LOG\"\n"
	"case \"$FAKE_MODE\" in\n"
	"json) printf '%s\\n' \"$FAKE_JSON\"; exit \"${FAKE_RC:-0}\" ;;\n"
	"garbage) echo 'this is not json'; exit 0 ;;\n"
	"stderr) echo \"check failed badly: $CRUCIBLE_SEED\" >&2; exit 3 ;;\n"
	"signal) kill -SEGV $$ ;;\n"
	"big) head -c 5000000 /dev/zero | tr '\\0' x; exit 0 ;;\n"
	"stray) sleep 60 & printf '{\"status\": \"ok\", \"seed\": \"1\"}\\n'; exit 0 ;;\n"
	"esac\n"
	"exit 9\n";

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static char *smoke_source(const char *name)
{
	char path[PATH_MAX];
	char *s;
	snprintf(path, sizeof path, "%s/%s.c", g_smoke, name);
	s = slurp(path);
	if (!s)
		fail_msg("cannot read %s", path);
	return s;
}

/* The sidecar's "expect" and the source's "// @task" line. */
static void smoke_expect(const char *name, char *expect, size_t ecap, char *task, size_t tcap)
{
	char path[PATH_MAX];
	json_error_t je;
	json_t *j;
	char *src = smoke_source(name), *t;

	snprintf(path, sizeof path, "%s/%s.json", g_smoke, name);
	j = json_load_file(path, 0, &je);
	assert_non_null(j);
	assert_true(json_is_string(json_object_get(j, "expect")));
	snprintf(expect, ecap, "%s", json_string_value(json_object_get(j, "expect")));
	json_decref(j);
	t = strstr(src, "// @task ");
	assert_non_null(t);
	t += 9;
	snprintf(task, tcap, "%.*s", (int)strcspn(t, " \r\n"), t);
	free(src);
}

static struct srv_job_spec spec(const char *source, const char *file_name, const char *task)
{
	return (struct srv_job_spec){ .crucible = g_exe, .source = source, .file_name = file_name,
				      .task = task, .backend = "cpu", .seed = 42, .secret = NULL,
				      .timing = false, .quick = true, .gpu = -1, .wall_limit_s = 120,
				      .tmpdir = g_tmp };
}

/* No process of group pgid is alive when srv_job_run returns (a zombie,
 * killed, may wait a moment for init to reap it), and soon none is left. */
static void group_gone(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[512], state, *p;
		int pg = 0, ppid;
		FILE *f;

		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || !(f = fopen(path, "r")))
			continue;
		p = fgets(buf, sizeof buf, f);
		fclose(f);
		if (p && (p = strrchr(buf, ')')) && sscanf(p + 1, " %c %d %d", &state, &ppid, &pg) == 3 &&
		    pg == pgid && state != 'Z')
			fail_msg("process %s of group %d alive (%c)", e->d_name, (int)pgid, state);
	}
	closedir(d);
	for (int i = 0; i < 1000 && !kill(-pgid, 0); i++)
		usleep(10000);
	assert_int_equal(kill(-pgid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

/* Runs s; CR_OK, the work folder gone, check's process group gone. */
static void run(const struct srv_job_spec *s, struct srv_job_out *o)
{
	struct cr_err err;

	cr_err_init(&err);
	if (srv_job_run(s, o, &err))
		fail_msg("srv_job_run: %s", err.msg);
	assert_int_equal(count_entries(g_tmp), 0);
	if (o->pgid > 0)
		group_gone(o->pgid);
}

static void test_ok_untimed(void **state)
{
	char *src = smoke_source("cross_entropy_fast"), sha[65];
	struct srv_job_spec s = spec(src, "cross_entropy_fast.c", "smoke/cross_entropy");
	struct srv_job_out o;
	(void)state;

	run(&s, &o);
	if (o.harness_failed)
		fail_msg("harness failed: %s", o.why);
	assert_string_equal(o.status, "ok");
	assert_true(isnan(o.speedup) && isnan(o.speedup_lo) && isnan(o.speedup_hi));
	cr_sha256_hex(src, strlen(src), sha);
	assert_string_equal(o.sha256, sha);
	assert_non_null(strstr(o.feedback, "correct"));
	assert_true(o.pgid > 0);
	assert_true(srv_reward(&o) == 1.0);
	free(src);
}

static void test_ok_timed(void **state)
{
	char *src = smoke_source("cross_entropy_fast");
	struct srv_job_spec s = spec(src, "ce.c", "smoke/cross_entropy");
	struct srv_job_out o;
	double l;
	(void)state;

	s.timing = true;
	s.time_cap_s = 0.3;
	run(&s, &o);
	if (o.harness_failed)
		fail_msg("harness failed: %s", o.why);
	assert_string_equal(o.status, "ok");
	assert_true(isfinite(o.speedup) && isfinite(o.speedup_lo) && isfinite(o.speedup_hi));
	assert_true(o.speedup_lo <= o.speedup && o.speedup <= o.speedup_hi);
	assert_non_null(strstr(o.feedback, "speedup"));
	l = log2(o.speedup_lo);
	l = l < 0 ? 0 : l > 4 ? 4 : l;
	assert_true(fabs(srv_reward(&o) - (1 + l)) < 1e-12);
	free(src);
}

/* Every bad smoke candidate gets its sidecar's verdict; a public run keeps
 * the detail and tells the model about it, naming the file as submitted
 * and never the work folder. */
static void test_bad_verdicts(void **state)
{
	static const char *names[] = { "bad_wrong_result", "bad_compile_error", "bad_crash",
				       "bad_infinite_loop" };
	(void)state;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char expect[64], task[128], fname[128];
		char *src = smoke_source(names[i]);
		struct srv_job_spec s;
		struct srv_job_out o;

		smoke_expect(names[i], expect, sizeof expect, task, sizeof task);
		snprintf(fname, sizeof fname, "%s.c", names[i]);
		s = spec(src, fname, task);
		run(&s, &o);
		if (o.harness_failed)
			fail_msg("%s: harness failed: %s", names[i], o.why);
		if (strcmp(o.status, expect))
			fail_msg("%s: %s, expected %s", names[i], o.status, expect);
		assert_true(o.detail[0] != '\0');
		assert_true(o.feedback[0] != '\0');
		assert_null(strstr(o.detail, g_tmp));
		assert_null(strstr(o.feedback, g_tmp));
		assert_true(srv_reward(&o) == 0);
		if (!strcmp(expect, "mismatch")) {
			assert_non_null(strstr(o.feedback, "wrong values"));
			assert_non_null(strstr(o.feedback, "element"));
			assert_non_null(strstr(o.feedback, "expected"));
		}
		if (!strcmp(expect, "compile_error")) {
			assert_non_null(strstr(o.detail, fname));
			assert_non_null(strstr(o.feedback, "did not compile"));
		}
		free(src);
	}
}

static void test_no_executable(void **state)
{
	struct srv_job_spec s = spec("int x;\n", "a.c", "smoke/relu");
	struct srv_job_out o;
	(void)state;

	s.crucible = "/nonexistent/crucible";
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_non_null(strstr(o.why, "cannot run /nonexistent/crucible"));
	assert_non_null(strstr(o.why, "No such file"));
	assert_string_equal(o.status, "");
	assert_true(srv_reward(&o) == 0);
}

static void test_unknown_task(void **state)
{
	char *src = smoke_source("cross_entropy_fast");
	struct srv_job_spec s = spec(src, "a.c", "smoke/no_such_task");
	struct srv_job_out o;
	(void)state;

	run(&s, &o);
	assert_true(o.harness_failed);
	assert_memory_equal(o.why, "exit 2: ", 8);
	assert_non_null(strstr(o.why, "unknown task"));
	/* a secret run says the exit code alone: check's stderr is never kept */
	s.secret = SECRET;
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_string_equal(o.why, "exit 2");
	free(src);
}

/* The wall limit kills check's whole process group: a harness failure,
 * soon, and nothing of the group left. */
static void test_wall_limit(void **state)
{
	char *src = smoke_source("bad_infinite_loop");
	struct srv_job_spec s = spec(src, "loop.c", "smoke/relu");
	struct srv_job_out o;
	int64_t t0 = cr_now_ns();
	double took;
	(void)state;

	s.wall_limit_s = 0.5;
	run(&s, &o);
	took = (double)(cr_now_ns() - t0) * 1e-9;
	assert_true(o.harness_failed);
	assert_string_equal(o.why, "timed out after 0.5 s");
	assert_string_equal(o.status, "");
	assert_true(isnan(o.speedup));
	assert_true(took < 3.0);
	assert_true(o.pgid > 0);
	assert_int_equal(kill(-o.pgid, 0), -1);
	assert_int_equal(kill(o.pgid, 0), -1);
	free(src);
}

static bool has_bytes(const void *p, size_t n, const char *needle)
{
	return memmem(p, n, needle, strlen(needle)) != NULL;
}

/* A secret run: the same verdicts as the public run, check saw a secret
 * seed (srv_job_run refuses a verdict whose JSON does not say "secret"),
 * and the secret, the detail and the feedback are nowhere in the result. */
static void test_secret(void **state)
{
	static const char *names[] = { "cross_entropy_fast", "bad_wrong_result" };
	(void)state;

	for (size_t i = 0; i < 2; i++) {
		char expect[64], task[128];
		char *src = smoke_source(names[i]);
		struct srv_job_spec s;
		struct srv_job_out pub, sec;

		smoke_expect(names[i], expect, sizeof expect, task, sizeof task);
		s = spec(src, "k.c", task);
		run(&s, &pub);
		s.secret = SECRET;
		run(&s, &sec);
		if (sec.harness_failed)
			fail_msg("%s: secret run: %s", names[i], sec.why);
		assert_string_equal(sec.status, expect);
		assert_string_equal(sec.status, pub.status);
		assert_string_equal(sec.sha256, pub.sha256);
		assert_string_equal(sec.detail, "");
		assert_string_equal(sec.feedback, "");
		assert_false(has_bytes(&sec, sizeof sec, SECRET));
		assert_int_equal(count_entries(g_tmp), 0);
		free(src);
	}
}

struct par {
	const char *name, *task, *expect;
	struct srv_job_out o;
	enum cr_status rc;
};

static void *par_run(void *arg)
{
	struct par *p = arg;
	char *src = smoke_source(p->name);
	struct srv_job_spec s = spec(src, "p.c", p->task);
	struct cr_err err;

	cr_err_init(&err);
	p->rc = srv_job_run(&s, &p->o, &err);
	free(src);
	return NULL;
}

static void test_threads(void **state)
{
	struct par p[4] = {
		{ .name = "cross_entropy_fast", .task = "smoke/cross_entropy", .expect = "ok" },
		{ .name = "bad_wrong_result", .task = "smoke/relu", .expect = "mismatch" },
		{ .name = "relu_plain", .task = "smoke/relu", .expect = "ok" },
		{ .name = "bad_compile_error", .task = "smoke/relu", .expect = "compile_error" },
	};
	pthread_t th[4];
	(void)state;

	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, par_run, &p[i]), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(p[i].rc, CR_OK);
		if (p[i].o.harness_failed)
			fail_msg("%s: %s", p[i].name, p[i].o.why);
		assert_string_equal(p[i].o.status, p[i].expect);
	}
	assert_int_equal(count_entries(g_tmp), 0);
}

/* ---- with the stand-in ---- */

static struct srv_job_spec fake_spec(const char *mode)
{
	struct srv_job_spec s = spec("int main;\n", "a.c", "smoke/relu");
	s.crucible = g_fake;
	setenv("FAKE_MODE", mode, 1);
	unlink(g_log);
	return s;
}

static bool log_has(const char *line)
{
	char *log = slurp(g_log), want[512];
	bool has;
	assert_non_null(log);
	snprintf(want, sizeof want, "\n%s\n", line);
	has = strstr(log, want) || !strncmp(log, want + 1, strlen(want + 1));
	free(log);
	return has;
}

static void test_fake_args_env_fds(void **state)
{
	struct srv_job_spec s = fake_spec("json");
	struct srv_job_out o;
	char marker[PATH_MAX], line[PATH_MAX + 16];
	int fd;
	(void)state;

	/* a descriptor of the server's, inheritable: the child must not get it */
	snprintf(marker, sizeof marker, "%s/server-db", g_dir);
	fd = open(marker, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	setenv("FAKE_JSON", "{\"status\": \"ok\", \"seed\": \"42\", \"detail\": \"\"}", 1);
	s.timing = false;
	s.quick = true;
	s.time_cap_s = 0.25;
	s.seed = 18446744073709551615ull;
	s.gpu = 3;
	run(&s, &o);
	if (o.harness_failed)
		fail_msg("%s", o.why);
	assert_true(log_has("arg check"));
	assert_true(log_has("arg a.c"));
	assert_true(log_has("a.c"));          /* `ls` in its folder: the file alone */
	assert_true(log_has("arg --task"));
	assert_true(log_has("arg smoke/relu"));
	assert_true(log_has("arg --seed"));
	assert_true(log_has("arg 18446744073709551615"));
	assert_true(log_has("arg --json"));
	assert_true(log_has("arg --backend"));
	assert_true(log_has("arg cpu"));
	assert_true(log_has("arg --no-timing"));
	assert_true(log_has("arg --quick"));
	assert_true(log_has("arg --time-cap"));
	assert_true(log_has("arg 0.25"));
	assert_true(log_has("env CUDA_VISIBLE_DEVICES=3"));
	assert_false(log_has("env CRUCIBLE_SEED=from-the-server")); /* main sets it in the server */
	snprintf(line, sizeof line, "fd 0 /dev/null");
	assert_true(log_has(line));
	{
		char *log = slurp(g_log);
		assert_null(strstr(log, marker));
		assert_null(strstr(log, "CRUCIBLE_SEED"));
		free(log);
	}
	close(fd);

	/* the secret in its environment, nowhere in the arguments */
	s = fake_spec("json");
	s.secret = SECRET;
	s.timing = true;
	s.quick = false;
	s.gpu = -1;
	setenv("FAKE_JSON", "{\"status\": \"ok\", \"seed\": \"secret\", \"speedup\": 2.0, \"speedup_lo\": 1.5,"
			    " \"speedup_hi\": 2.5, \"noisy\": true, \"detail\": \"case " SECRET "\"}", 1);
	run(&s, &o);
	assert_false(o.harness_failed);
	assert_true(log_has("env CRUCIBLE_SEED=" SECRET));
	{
		char *log = slurp(g_log), *l = log;
		for (; l && *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
			if (!strncmp(l, "arg ", 4))
				assert_null(memmem(l, strcspn(l, "\n"), SECRET, strlen(SECRET)));
		free(log);
	}
	assert_false(log_has("arg --no-timing"));
	assert_false(log_has("arg --quick"));
	assert_false(log_has("arg --time-cap"));
	assert_false(log_has("env CUDA_VISIBLE_DEVICES=3"));
	assert_true(o.speedup == 2.0 && o.speedup_lo == 1.5 && o.speedup_hi == 2.5 && o.noisy);
	assert_string_equal(o.detail, "");
	assert_false(has_bytes(&o, sizeof o, SECRET));
	assert_true(fabs(srv_reward(&o) - (1 + log2(1.5))) < 1e-12);
	unlink(marker);
}

static void test_fake_file_names(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "softmax.c", "softmax.c" }, { "k-2_v.1.cu", "k-2_v.1.cu" }, { "../up.c", "cand.c" },
		{ "a/b.cu", "cand.cu" }, { ".hidden.c", "cand.c" }, { "-rf.c", "cand.c" },
		{ "sp ace.c", "cand.c" }, { "notes.txt", "cand.c" }, { "", "cand.c" }, { ".c", "cand.c" },
		{ ".cu", "cand.cu" }, { "x.c\n.cu", "cand.cu" }, { NULL, "cand.c" },
	};
	char line[256];
	(void)state;

	setenv("FAKE_JSON", "{\"status\": \"compile_error\", \"seed\": \"42\", \"detail\": \"x\"}", 1);
	setenv("FAKE_RC", "1", 1);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct srv_job_spec s = fake_spec("json");
		struct srv_job_out o;
		s.file_name = cases[i].in;
		run(&s, &o);
		assert_false(o.harness_failed);
		snprintf(line, sizeof line, "arg %s", cases[i].out);
		if (!log_has(line))
			fail_msg("'%s' should be named %s", cases[i].in ? cases[i].in : "(null)", cases[i].out);
	}
	unsetenv("FAKE_RC");
}

/* Output that is not check's verdict is a harness failure, never a verdict. */
static void test_fake_not_a_verdict(void **state)
{
	static const struct { const char *json; int rc; const char *why; } bad[] = {
		{ "{\"status\": \"ok\", \"seed\": \"1\"", 0, "not check's JSON" },
		{ "[1, 2]", 0, "not check's JSON" },
		{ "{\"seed\": \"1\"}", 1, "no verdict" },
		{ "{\"status\": 3}", 1, "no verdict" },
		{ "{\"status\": \"splendid\"}", 0, "no verdict" },
		{ "{\"status\": \"mismatch\", \"seed\": \"1\"}", 0, "exits with another" },
		{ "{\"status\": \"ok\", \"seed\": \"1\"}", 1, "exits with another" },
		{ "", 0, "not check's JSON" },
	};
	struct srv_job_spec s;
	struct srv_job_out o;
	char rc[8];
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		s = fake_spec("json");
		setenv("FAKE_JSON", bad[i].json, 1);
		snprintf(rc, sizeof rc, "%d", bad[i].rc);
		setenv("FAKE_RC", rc, 1);
		run(&s, &o);
		assert_true(o.harness_failed);
		if (!strstr(o.why, bad[i].why))
			fail_msg("%s: why '%s', expected '%s'", bad[i].json, o.why, bad[i].why);
		assert_string_equal(o.status, "");
	}
	unsetenv("FAKE_RC");

	/* a secret run whose check saw no secret is no secret run */
	s = fake_spec("json");
	s.secret = SECRET;
	setenv("FAKE_JSON", "{\"status\": \"ok\", \"seed\": \"42\"}", 1);
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_non_null(strstr(o.why, "the secret did not reach check"));

	s = fake_spec("garbage");
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_non_null(strstr(o.why, "exit 0 with output that is not check's JSON"));

	s = fake_spec("big");
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_non_null(strstr(o.why, "more than"));

	s = fake_spec("signal");
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_memory_equal(o.why, "killed by signal 11 (SEGV)", 26);

	/* stderr's tail explains a public run's failure; a secret run's never */
	s = fake_spec("stderr");
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_string_equal(o.why, "exit 3: check failed badly:");
	s.secret = SECRET;
	run(&s, &o);
	assert_true(o.harness_failed);
	assert_string_equal(o.why, "exit 3");
	assert_false(has_bytes(&o, sizeof o, SECRET));

	/* check's leftovers in its process group go with it */
	s = fake_spec("stray");
	run(&s, &o);
	assert_false(o.harness_failed);
}

static void test_reward(void **state)
{
	struct srv_job_out o = { .status = "ok", .speedup = NAN, .speedup_lo = NAN, .speedup_hi = NAN };
	static const struct { double lo, r; } timed[] = {
		{ 2.0, 2.0 }, { 1.0, 1.0 }, { 0.5, 1.0 }, { 0.0, 1.0 }, { 16.0, 5.0 }, { 64.0, 5.0 },
		{ 1.41421356237309515, 1.5 }, { INFINITY, 5.0 },
	};
	(void)state;

	assert_true(srv_reward(&o) == 1.0); /* ok, untimed */
	for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
		o.speedup_lo = timed[i].lo;
		o.speedup = o.speedup_hi = timed[i].lo * 1.1;
		if (fabs(srv_reward(&o) - timed[i].r) > 1e-9)
			fail_msg("lo %g: reward %g, expected %g", timed[i].lo, srv_reward(&o), timed[i].r);
	}
	o.speedup_lo = 8;
	snprintf(o.status, sizeof o.status, "mismatch");
	assert_true(srv_reward(&o) == 0);
	snprintf(o.status, sizeof o.status, "timeout");
	assert_true(srv_reward(&o) == 0);
	snprintf(o.status, sizeof o.status, "ok");
	o.harness_failed = true;
	assert_true(srv_reward(&o) == 0);
}

static int setup(void **state)
{
	const char *src = getenv("CRUCIBLE_SRC"), *t = getenv("TMPDIR");
	FILE *f;
	(void)state;

	g_exe = getenv("CRUCIBLE_EXE");
	if (!g_exe || !src) {
		fprintf(stderr, "test_job: CRUCIBLE_EXE and CRUCIBLE_SRC must be set (meson test sets them)\n");
		return -1;
	}
	snprintf(g_smoke, sizeof g_smoke, "%s/data/candidates/smoke", src);
	snprintf(g_dir, sizeof g_dir, "%s/test_job-XXXXXX", t && t[0] == '/' ? t : "/tmp");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_tmp, sizeof g_tmp, "%s/tmp", g_dir);
	snprintf(g_fake, sizeof g_fake, "%s/fake-crucible", g_dir);
	snprintf(g_log, sizeof g_log, "%s/fake.log", g_dir);
	if (mkdir(g_tmp, 0700) || !(f = fopen(g_fake, "w")))
		return -1;
	fputs(fake_script, f);
	fclose(f);
	chmod(g_fake, 0755);
	setenv("FAKE_LOG", g_log, 1);
	/* the server's own environment may hold one: a public run's check must not see it */
	setenv("CRUCIBLE_SEED", "from-the-server", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rm_rf(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reward),
		cmocka_unit_test(test_fake_args_env_fds),
		cmocka_unit_test(test_fake_file_names),
		cmocka_unit_test(test_fake_not_a_verdict),
		cmocka_unit_test(test_no_executable),
		cmocka_unit_test(test_unknown_task),
		cmocka_unit_test(test_ok_untimed),
		cmocka_unit_test(test_ok_timed),
		cmocka_unit_test(test_bad_verdicts),
		cmocka_unit_test(test_wall_limit),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
