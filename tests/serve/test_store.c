/* test_store.c — the service's tables and queue (serve/srv_store.c,
 * serve/srv_view.c) without a worker: outcomes are handed to
 * srv_job_finish directly. On SQLite, and on PostgreSQL when
 * CRUCIBLE_TEST_PG names a server (tests/serve/db_pg.sh): users and
 * tokens, boards, a submission's life to its rank, a claim taken back
 * (its late outcome writes nothing: exactly once), harness failures
 * retried then harness_error, the quota, reward jobs first, the ranking
 * rule (both runs ok, the secret run's speedup, each user's best, ties to
 * the earlier, geomean over every task), and the signed text. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "serve/srv_store.h"

static char loc[4096];
static bool use_pg;

static struct srv_db *fresh(void)
{
	struct srv_db *db = NULL;
	struct cr_err e;
	cr_err_init(&e);
	if (!use_pg) {
		char dir[] = "/tmp/crstore.XXXXXX";
		assert_non_null(mkdtemp(dir));
		snprintf(loc, sizeof loc, "%s/s.db", dir);
	}
	if (srv_db_open(loc, &db, &e)) {
		print_error("open: %s\n", e.msg);
		fail();
	}
	if (use_pg)
		assert_int_equal(srv_db_script(db,
					       "DROP TABLE IF EXISTS jobs, submissions, rewards, boards, "
					       "users, meta CASCADE",
					       &e),
				 CR_OK);
	if (srv_store_init(db, &e)) {
		print_error("init: %s\n", e.msg);
		fail();
	}
	return db;
}

static void done_db(struct srv_db *db)
{
	srv_db_close(db);
	if (!use_pg) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "rm -rf \"$(dirname '%s')\"", loc);
		assert_int_equal(system(cmd), 0);
	}
}

static struct srv_user user(struct srv_db *db, const char *name, int quota)
{
	char tok[48];
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_user_add(db, name, false, quota, 0, tok, &e), CR_OK);
	struct srv_user u;
	bool found = false;
	assert_int_equal(srv_user_auth(db, tok, &u, &found, &e), CR_OK);
	assert_true(found);
	return u;
}

static void board(struct srv_db *db, struct srv_board *b, const char *name, const char *tasks,
		  const char *rank)
{
	struct cr_err e;
	cr_err_init(&e);
	memset(b, 0, sizeof *b);
	snprintf(b->name, sizeof b->name, "%s", name);
	snprintf(b->backend, sizeof b->backend, "cpu");
	snprintf(b->rank, sizeof b->rank, "%s", rank);
	b->timing = true;
	if (srv_board_add(db, b, tasks, &e)) {
		print_error("board add: %s\n", e.msg);
		fail();
	}
}

static int64_t submit(struct srv_db *db, const struct srv_board *b, const struct srv_user *u,
		      const char *task)
{
	int64_t id = 0;
	bool over = false;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_sub_create(db, b, u, task, "k.c", "// @task x\n", &id, &over, &e), CR_OK);
	assert_false(over);
	return id;
}

static struct srv_job_out verdict(const char *status, double speedup)
{
	struct srv_job_out o;
	memset(&o, 0, sizeof o);
	snprintf(o.status, sizeof o.status, "%s", status);
	o.speedup = o.speedup_lo = o.speedup_hi = speedup;
	snprintf(o.detail, sizeof o.detail, "detail of %s", status);
	return o;
}

/* Claims the next job and records o for it. */
static void score_next(struct srv_db *db, struct srv_job_out o, char *kind_out)
{
	struct srv_claim c;
	bool got = false, lost = true;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_job_claim(db, "w:1:0", true, &c, &got, &e), CR_OK);
	assert_true(got);
	if (kind_out)
		strcpy(kind_out, c.kind);
	assert_int_equal(srv_job_finish(db, &c, &o, &lost, &e), CR_OK);
	assert_false(lost);
	srv_claim_release(&c);
}

static json_t *sub_view(struct srv_db *db, int64_t id)
{
	json_t *v = NULL;
	bool found = false;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_sub_json(db, id, NULL, &v, &found, &e), CR_OK);
	assert_true(found);
	return v;
}

static void test_users(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct cr_err e;
	char tok[48], tok2[48];
	cr_err_init(&e);
	assert_int_equal(srv_user_add(db, "alice", false, 4, 60, tok, &e), CR_OK);
	cr_err_init(&e);
	assert_int_equal(srv_user_add(db, "alice", false, 4, 60, tok2, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "exists"));
	cr_err_init(&e);
	assert_int_equal(srv_user_add(db, "a b", false, 4, 60, tok2, &e), CR_EUSAGE);
	struct srv_user u;
	bool found = false;
	cr_err_init(&e);
	assert_int_equal(srv_user_auth(db, tok, &u, &found, &e), CR_OK);
	assert_true(found);
	assert_string_equal(u.name, "alice");
	assert_int_equal(u.quota, 4);
	tok[10] ^= 1;
	assert_int_equal(srv_user_auth(db, tok, &u, &found, &e), CR_OK);
	assert_false(found);
	tok[10] ^= 1;
	assert_int_equal(srv_user_token(db, "alice", tok2, &e), CR_OK);
	assert_int_equal(srv_user_auth(db, tok, &u, &found, &e), CR_OK);
	assert_false(found); /* the old token stops working */
	assert_int_equal(srv_user_auth(db, tok2, &u, &found, &e), CR_OK);
	assert_true(found);
	assert_int_equal(srv_user_auth(db, "", &u, &found, &e), CR_OK);
	assert_false(found);
	done_db(db);
}

static void test_board(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b, g;
	board(db, &b, "b1", "smoke/softmax,smoke/relu", "geomean");
	assert_string_equal(b.tasks, "smoke/relu,smoke/softmax");
	bool found = false;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_board_get(db, "b1", false, &g, &found, &e), CR_OK);
	assert_true(found);
	assert_true(srv_board_has_task(&g, "smoke/relu"));
	assert_false(srv_board_has_task(&g, "smoke/rel"));
	assert_string_equal(g.secret, ""); /* not asked for */
	srv_board_release(&g);
	assert_int_equal(srv_board_get(db, "b1", true, &g, &found, &e), CR_OK);
	assert_true(strlen(g.secret) > 0);
	srv_board_release(&g);
	struct srv_board x;
	memset(&x, 0, sizeof x);
	strcpy(x.name, "x");
	strcpy(x.backend, "cpu");
	strcpy(x.rank, "geomean");
	assert_int_not_equal(srv_board_add(db, &x, "L9/nothing", &e), CR_OK);
	srv_board_release(&x);
	srv_board_release(&b);
	done_db(db);
}

static void test_life_and_rank(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b;
	board(db, &b, "b", "smoke/relu", "geomean");
	struct srv_user a = user(db, "a", 10);
	int64_t id = submit(db, &b, &a, "smoke/relu");
	json_t *v = sub_view(db, id);
	assert_string_equal(json_string_value(json_object_get(v, "state")), "queued");
	assert_true(json_is_null(json_object_get(v, "signed")) || !json_object_get(v, "signed"));
	assert_null(srv_sub_signed(v));
	json_decref(v);
	char k1[8], k2[8];
	score_next(db, verdict("ok", 2.0), k1);
	score_next(db, verdict("ok", 1.5), k2);
	assert_string_equal(k1, "public");
	assert_string_equal(k2, "secret");
	v = sub_view(db, id);
	assert_string_equal(json_string_value(json_object_get(v, "state")), "scored");
	assert_true(json_is_true(json_object_get(v, "ranked")));
	/* the score: the public run's low end; the secret run's speedup is not kept */
	assert_true(fabs(json_real_value(json_object_get(v, "score")) - 2.0) < 1e-12);
	assert_int_equal(json_integer_value(json_object_get(v, "rank")), 1);
	/* the secret run's detail is never stored */
	json_t *sec = json_object_get(v, "secret");
	assert_null(json_object_get(sec, "detail"));
	assert_null(json_object_get(sec, "speedup"));
	json_t *so = srv_sub_signed(v);
	assert_non_null(so);
	char *text = srv_signed_canon(so);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"score\":2.0"));
	assert_non_null(strstr(text, "\"ranked\":true"));
	assert_non_null(strstr(text, "\"secret_status\":\"ok\""));
	assert_null(strstr(text, "\"rank\""));
	/* the canonical text is a fixed point: parsed and dumped again, the same bytes */
	json_t *back = json_loads(text, 0, NULL);
	char *again = srv_signed_canon(back);
	assert_string_equal(text, again);
	free(again);
	json_decref(back);
	free(text);
	json_object_set_new(so, "nested", json_object());
	assert_null(srv_signed_canon(so)); /* only scalars are signed */
	json_decref(so);
	json_decref(v);
	srv_board_release(&b);
	done_db(db);
}

static void test_taken_back_once(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b;
	board(db, &b, "b", "smoke/relu", "geomean");
	struct srv_user a = user(db, "a", 10);
	int64_t id = submit(db, &b, &a, "smoke/relu");
	struct cr_err e;
	cr_err_init(&e);
	struct srv_claim c1, c2;
	bool got = false, lost = false;
	assert_int_equal(srv_job_claim(db, "w:1:0", true, &c1, &got, &e), CR_OK);
	assert_true(got);
	usleep(20 * 1000);
	int n = 0;
	assert_int_equal(srv_job_reap(db, 1, &n, &e), CR_OK); /* its heartbeat is 20 ms old */
	assert_int_equal(n, 1);
	assert_int_equal(srv_job_beat(db, &c1, &lost, &e), CR_OK);
	assert_true(lost);
	assert_int_equal(srv_job_claim(db, "w:2:0", true, &c2, &got, &e), CR_OK);
	assert_true(got);
	assert_int_equal(c2.job, c1.job); /* the same job, claimed again */
	struct srv_job_out late = verdict("mismatch", NAN), good = verdict("ok", 3.0);
	assert_int_equal(srv_job_finish(db, &c1, &late, &lost, &e), CR_OK);
	assert_true(lost); /* the first claim's outcome writes nothing */
	assert_int_equal(srv_job_finish(db, &c2, &good, &lost, &e), CR_OK);
	assert_false(lost);
	assert_int_equal(srv_job_finish(db, &c2, &good, &lost, &e), CR_OK);
	assert_true(lost); /* and no claim records twice */
	srv_claim_release(&c1);
	srv_claim_release(&c2);
	score_next(db, verdict("ok", 2.5), NULL);
	json_t *v = sub_view(db, id);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "public"), "status")),
			    "ok");
	assert_string_equal(json_string_value(json_object_get(v, "state")), "scored");
	json_decref(v);
	srv_board_release(&b);
	done_db(db);
}

static void test_harness_retry(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b;
	board(db, &b, "b", "smoke/relu", "geomean");
	struct srv_user a = user(db, "a", 10);
	int64_t id = submit(db, &b, &a, "smoke/relu");
	struct srv_job_out h;
	memset(&h, 0, sizeof h);
	h.harness_failed = true;
	strcpy(h.why, "exit 3");
	char kind[8];
	for (int i = 0; i < SRV_MAX_ATTEMPTS; i++) {
		score_next(db, h, kind);
		assert_string_equal(kind, "public"); /* retried, first in line again */
		if (i + 1 == SRV_MAX_ATTEMPTS)
			break;
		/* not before its pause: the secret job is next, then nothing */
		struct srv_claim c;
		bool got = false, lost = false;
		struct cr_err e;
		cr_err_init(&e);
		assert_int_equal(srv_job_claim(db, "w:1:0", false, &c, &got, &e), CR_OK);
		assert_true(got);
		assert_string_equal(c.kind, "secret");
		int n = 0;
		usleep(5 * 1000);
		assert_int_equal(srv_job_reap(db, 1, &n, &e), CR_OK); /* put it back */
		srv_claim_release(&c);
		(void)lost;
		assert_int_equal(srv_db_exec(db, "UPDATE jobs SET not_before_ms = NULL, attempts = 0 "
					     "WHERE kind = 'secret'", 0, NULL, NULL, &e), CR_OK);
		assert_int_equal(srv_db_exec(db, "UPDATE jobs SET not_before_ms = NULL WHERE kind = "
					     "'public'", 0, NULL, NULL, &e), CR_OK);
	}
	/* the public run's final harness failure skips the secret run */
	json_t *v = sub_view(db, id);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "secret"), "status")),
			    "skipped");
	assert_string_equal(json_string_value(json_object_get(v, "state")), "error");
	assert_false(json_is_true(json_object_get(v, "ranked")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "public"), "status")),
			    "harness_error");
	json_decref(v);
	int q = -1, r = -1;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_queue_counts(db, &q, &r, &e), CR_OK);
	assert_int_equal(q + r, 0);
	srv_board_release(&b);
	done_db(db);
}

static void test_quota_and_reward_first(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b;
	board(db, &b, "b", "smoke/relu", "geomean");
	struct srv_user a = user(db, "a", 3);
	submit(db, &b, &a, "smoke/relu");
	int64_t id = 0, gid = 0;
	bool over = false;
	struct cr_err e;
	cr_err_init(&e);
	const char *comps[] = { "```c\n// @task smoke/relu\nint x;\n```", "no code here",
				"<think>hm</think>\n```c\nint y;\n```" };
	assert_int_equal(srv_reward_create(db, &a, "smoke/relu", "cpu", false, comps, 3, &gid, &over, &e),
			 CR_OK);
	assert_true(over); /* 1 submission + 3 completions > 3 */
	assert_int_equal(srv_reward_create(db, &a, "smoke/relu", "cpu", false, comps, 2, &gid, &over, &e),
			 CR_OK);
	assert_false(over);
	/* the completion without code was done at once: 1 submission + 1 job wait */
	assert_int_equal(srv_sub_create(db, &b, &a, "smoke/relu", "k.c", "x", &id, &over, &e), CR_OK);
	assert_false(over);
	assert_int_equal(srv_sub_create(db, &b, &a, "smoke/relu", "k.c", "x", &id, &over, &e), CR_OK);
	assert_true(over);
	/* the reward job is claimed before the older submission's */
	struct srv_claim c;
	bool got = false, lost = false, found = false, done = true;
	assert_int_equal(srv_job_claim(db, "w:1:0", true, &c, &got, &e), CR_OK);
	assert_true(got);
	assert_string_equal(c.kind, "reward");
	assert_non_null(strstr(c.source, "int x;"));
	struct srv_job_out ok = verdict("ok", NAN);
	assert_int_equal(srv_job_finish(db, &c, &ok, &lost, &e), CR_OK);
	srv_claim_release(&c);
	json_t *v = NULL;
	assert_int_equal(srv_reward_json(db, gid, &a, &v, &found, &done, &e), CR_OK);
	assert_true(found);
	assert_true(done); /* the completion without code was done at once */
	json_t *r0 = json_array_get(json_object_get(v, "results"), 0);
	json_t *r1 = json_array_get(json_object_get(v, "results"), 1);
	assert_true(json_real_value(json_object_get(r0, "reward")) == 1.0);
	assert_string_equal(json_string_value(json_object_get(r1, "status")), "no_code");
	assert_true(json_real_value(json_object_get(r1, "reward")) == 0.0);
	json_decref(v);
	struct srv_user other = user(db, "o", 3);
	assert_int_equal(srv_reward_json(db, gid, &other, &v, &found, &done, &e), CR_OK);
	assert_false(found); /* another user's group */
	srv_board_release(&b);
	done_db(db);
}

static void test_removed_and_taken_back(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b;
	board(db, &b, "b", "smoke/relu", "per-task");
	struct srv_user a = user(db, "a", 10), u2 = user(db, "gone", 10);
	int64_t ia = submit(db, &b, &a, "smoke/relu");
	score_next(db, verdict("ok", 2.0), NULL);
	score_next(db, verdict("ok", 2.0), NULL);
	int64_t ig = submit(db, &b, &u2, "smoke/relu");
	score_next(db, verdict("ok", 3.0), NULL);
	score_next(db, verdict("ok", 3.0), NULL);
	struct cr_err e;
	cr_err_init(&e);
	/* a job of theirs running at the removal, later taken back: cancelled,
	 * not scored again */
	int64_t ir = submit(db, &b, &u2, "smoke/relu");
	struct srv_claim cr;
	bool got = false;
	assert_int_equal(srv_job_claim(db, "w:9:0", true, &cr, &got, &e), CR_OK);
	assert_true(got);
	assert_int_equal(srv_user_disable(db, "gone", &e), CR_OK);
	usleep(5 * 1000);
	int nr = 0;
	assert_int_equal(srv_job_reap(db, 1, &nr, &e), CR_OK);
	srv_claim_release(&cr);
	json_t *vr = sub_view(db, ir);
	assert_string_equal(json_string_value(json_object_get(json_object_get(vr, "public"), "status")),
			    "cancelled");
	assert_string_equal(json_string_value(json_object_get(vr, "state")), "error");
	json_decref(vr);
	json_t *v = sub_view(db, ig);
	assert_false(json_is_true(json_object_get(v, "ranked")));
	assert_string_equal(json_string_value(json_object_get(v, "why_not_ranked")),
			    "its user was removed");
	json_t *so = srv_sub_signed(v);
	assert_true(json_is_false(json_object_get(so, "ranked")));
	json_decref(so);
	json_decref(v);
	v = sub_view(db, ia);
	assert_int_equal(json_integer_value(json_object_get(v, "rank")), 1);
	assert_int_equal(json_integer_value(json_object_get(v, "of")), 1);
	json_decref(v);
	char tok[48];
	assert_int_equal(srv_user_token(db, "gone", tok, &e), CR_EINPUT); /* not revived */
	/* a public run taken back three times (its worker kept dying) ends
	 * harness_error, and the secret run is skipped on that path too */
	int64_t id = submit(db, &b, &a, "smoke/relu");
	for (int i = 0; i < SRV_MAX_ATTEMPTS; i++) {
		struct srv_claim c;
		bool got = false;
		cr_err_init(&e);
		assert_int_equal(srv_job_claim(db, "w:1:0", true, &c, &got, &e), CR_OK);
		assert_true(got);
		assert_string_equal(c.kind, "public");
		usleep(5 * 1000);
		int n = 0;
		assert_int_equal(srv_job_reap(db, 1, &n, &e), CR_OK);
		assert_int_equal(n, 1);
		srv_claim_release(&c);
	}
	v = sub_view(db, id);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "public"), "status")),
			    "harness_error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "secret"), "status")),
			    "skipped");
	assert_string_equal(json_string_value(json_object_get(v, "state")), "error");
	json_decref(v);
	srv_board_release(&b);
	done_db(db);
}

static void test_fair_claims(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b;
	board(db, &b, "b", "smoke/relu", "geomean");
	struct srv_user a = user(db, "a", 50), u2 = user(db, "b", 50);
	for (int i = 0; i < 3; i++)
		submit(db, &b, &a, "smoke/relu");
	submit(db, &b, &u2, "smoke/relu"); /* queued after a's three */
	struct cr_err e;
	cr_err_init(&e);
	struct srv_claim c1, c2;
	bool got = false;
	assert_int_equal(srv_job_claim(db, "w:1:0", true, &c1, &got, &e), CR_OK);
	assert_true(got);
	assert_int_equal(srv_job_claim(db, "w:1:1", true, &c2, &got, &e), CR_OK);
	assert_true(got);
	/* a has a job running: b's, though queued last, comes next */
	json_t *v = sub_view(db, 4);
	assert_string_equal(json_string_value(json_object_get(v, "user")), "b");
	assert_string_equal(json_string_value(json_object_get(v, "state")), "running");
	json_decref(v);
	/* a cuda job is not claimed by a worker without a GPU */
	struct srv_board g;
	memset(&g, 0, sizeof g);
	strcpy(g.name, "g");
	strcpy(g.backend, "cuda");
	strcpy(g.rank, "geomean");
	assert_int_equal(srv_board_add(db, &g, "smoke/relu", &e), CR_OK);
	struct srv_db *db2 = db;
	assert_int_equal(srv_db_exec(db2, "UPDATE jobs SET state = 'done' WHERE state = 'queued'", 0,
				     NULL, NULL, &e), CR_OK);
	submit(db, &g, &u2, "smoke/relu");
	struct srv_claim c3;
	assert_int_equal(srv_job_claim(db, "w:1:2", false, &c3, &got, &e), CR_OK);
	assert_false(got);
	assert_int_equal(srv_job_claim(db, "w:1:2", true, &c3, &got, &e), CR_OK);
	assert_true(got);
	assert_string_equal(c3.backend, "cuda");
	srv_claim_release(&c1);
	srv_claim_release(&c2);
	srv_claim_release(&c3);
	srv_board_release(&g);
	srv_board_release(&b);
	done_db(db);
}

/* One submission of u on task, scored with these two runs. */
static int64_t scored(struct srv_db *db, const struct srv_board *b, const struct srv_user *u,
		      const char *task, const char *pub, const char *sec, double speed)
{
	int64_t id = submit(db, b, u, task);
	score_next(db, verdict(pub, speed * 1.1), NULL);
	if (!strcmp(pub, "ok"))
		score_next(db, verdict(sec, speed), NULL);
	else { /* a public run that did not pass skips the secret one */
		json_t *v = sub_view(db, id);
		assert_string_equal(json_string_value(json_object_get(json_object_get(v, "secret"),
								      "status")), "skipped");
		assert_string_equal(json_string_value(json_object_get(v, "state")), "scored");
		json_decref(v);
	}
	return id;
}

static void test_ranking(void **state)
{
	(void)state;
	struct srv_db *db = fresh();
	struct srv_board b;
	board(db, &b, "g", "smoke/relu,smoke/softmax", "geomean");
	struct srv_user a = user(db, "a", 50), u2 = user(db, "b", 50), c = user(db, "c", 50);
	scored(db, &b, &a, "smoke/relu", "ok", "ok", 2.0);
	int64_t a_best = scored(db, &b, &a, "smoke/relu", "ok", "ok", 4.0);
	scored(db, &b, &a, "smoke/relu", "ok", "mismatch", 9.0); /* fails the secret run */
	scored(db, &b, &a, "smoke/softmax", "ok", "ok", 1.0);
	int64_t b_first = scored(db, &b, &u2, "smoke/relu", "ok", "ok", 4.0); /* ties a, later */
	scored(db, &b, &u2, "smoke/softmax", "ok", "ok", 4.0);
	scored(db, &b, &c, "smoke/relu", "mismatch", "ok", 50.0); /* fails the public run */
	scored(db, &b, &c, "smoke/softmax", "ok", "ok", 8.0);     /* c has no ranked relu */
	json_t *v = NULL;
	bool found = false;
	struct cr_err e;
	cr_err_init(&e);
	assert_int_equal(srv_board_view(db, "g", &v, &found, &e), CR_OK);
	assert_true(found);
	json_t *rk = json_object_get(v, "ranking");
	assert_int_equal(json_array_size(rk), 2); /* c is not on every task */
	json_t *first = json_array_get(rk, 0), *second = json_array_get(rk, 1);
	/* scores are the public runs' (x1.1 here) */
	assert_string_equal(json_string_value(json_object_get(first, "user")), "b"); /* 4.4 */
	assert_true(fabs(json_real_value(json_object_get(first, "score")) - 4.4) < 1e-9);
	assert_string_equal(json_string_value(json_object_get(second, "user")), "a"); /* sqrt(4.4 x 1.1) */
	assert_true(fabs(json_real_value(json_object_get(second, "score")) - 2.2) < 1e-9);
	json_t *relu = json_object_get(json_array_get(json_object_get(v, "task_rankings"), 0), "ranking");
	assert_int_equal(json_array_size(relu), 2);
	/* a and b tie at 4.0 on relu: the earlier submission first */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(relu, 0), "submission")), a_best);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(relu, 1), "submission")), b_first);
	json_t *subs = json_object_get(v, "submissions");
	size_t i;
	json_t *s;
	int n_ranked = 0;
	json_array_foreach(subs, i, s)
	{
		n_ranked += json_is_true(json_object_get(s, "ranked"));
		assert_null(json_object_get(json_object_get(s, "public"), "seed"));
	}
	assert_int_equal(n_ranked, 6);
	json_decref(v);
	srv_board_release(&b);
	done_db(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_users),
		cmocka_unit_test(test_board),
		cmocka_unit_test(test_life_and_rank),
		cmocka_unit_test(test_taken_back_once),
		cmocka_unit_test(test_harness_retry),
		cmocka_unit_test(test_quota_and_reward_first),
		cmocka_unit_test(test_ranking),
		cmocka_unit_test(test_fair_claims),
		cmocka_unit_test(test_removed_and_taken_back),
	};
	int rc = cmocka_run_group_tests_name("store_sqlite", tests, NULL, NULL);
	const char *pg = getenv("CRUCIBLE_TEST_PG");
	if (rc || !pg || !*pg)
		return rc;
	use_pg = true;
	snprintf(loc, sizeof loc, "%s", pg);
	return cmocka_run_group_tests_name("store_pg", tests, NULL, NULL);
}
