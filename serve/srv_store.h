/* srv_store.h — the service's tables and everything done with them
 * (srv_store.c: users, boards, submissions, the job queue, reward groups;
 * srv_view.c: the JSON views the API serves and the rankings). Every
 * function takes one connection (srv_db.h), owned by the calling thread;
 * times are epoch milliseconds. */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "common/cr_status.h"
#include "serve/srv_db.h"
#include "serve/srv_job.h"

enum { SRV_NAME_MAX = 64, SRV_MAX_ATTEMPTS = 3 };

/* Creates the tables when missing (both databases), records the schema
 * version, refuses a store of another version (CR_EINPUT). */
enum cr_status srv_store_init(struct srv_db *db, struct cr_err *err);
int64_t srv_now_ms(void);
/* The store takes writes (a read-only file, a read-only database user):
 * CR_EENV saying so otherwise. */
enum cr_status srv_store_writable(struct srv_db *db, struct cr_err *err);

/* ---- users ---- */
struct srv_user {
	int64_t id;
	char name[SRV_NAME_MAX + 1];
	bool admin;
	int quota;               /* submissions and reward completions queued or running at once */
	int rate;                /* requests per minute */
};
/* A name is 1..64 of [A-Za-z0-9_.-]: CR_EUSAGE otherwise; CR_EINPUT when
 * taken. tok receives the token, shown once; only its hash is stored. */
enum cr_status srv_user_add(struct srv_db *db, const char *name, bool admin, int quota, int rate,
			    char tok[48], struct cr_err *err);
/* A new token for a user (the old one stops working). */
enum cr_status srv_user_token(struct srv_db *db, const char *name, char tok[48], struct cr_err *err);
/* quota or rate < 0: kept. CR_EINPUT when there is no such user. */
enum cr_status srv_user_set(struct srv_db *db, const char *name, int quota, int rate,
			    struct cr_err *err);
/* The user's token stops working (no token can match again); its
 * submissions stay. */
enum cr_status srv_user_disable(struct srv_db *db, const char *name, struct cr_err *err);
/* *found false when no user has this token. */
enum cr_status srv_user_auth(struct srv_db *db, const char *tok, struct srv_user *u, bool *found,
			     struct cr_err *err);
enum cr_status srv_user_list(struct srv_db *db, json_t **out, struct cr_err *err);

/* ---- boards ---- */
struct srv_board {
	char name[SRV_NAME_MAX + 1];
	char *tasks;             /* canonical names, comma-separated (malloc'd) */
	char backend[8];         /* cpu | cuda */
	char rank[16];           /* geomean | per-task */
	bool timing, quick;
	double time_cap_s;       /* 0: check's default */
	char secret[24];         /* filled only by srv_board_get(..., with_secret) */
};
void srv_board_release(struct srv_board *b);
/* tasks_spec is any task spec (L1/23, L1/1-10, a glob); it is resolved
 * to canonical names here. A secret is drawn. */
enum cr_status srv_board_add(struct srv_db *db, struct srv_board *b, const char *tasks_spec,
			     struct cr_err *err);
/* *found false when there is no such board. */
enum cr_status srv_board_get(struct srv_db *db, const char *name, bool with_secret,
			     struct srv_board *b, bool *found, struct cr_err *err);
bool srv_board_has_task(const struct srv_board *b, const char *task);

/* ---- submissions ---- */
/* Inserts the submission and its two jobs (public, secret) at once, after
 * checking the user's quota: *over_quota true (nothing inserted) when the
 * user has quota submissions or reward jobs queued or running. */
enum cr_status srv_sub_create(struct srv_db *db, const struct srv_board *b, const struct srv_user *u,
			      const char *task, const char *file_name, const char *source,
			      int64_t *id, bool *over_quota, struct cr_err *err);
/* The SUBMISSION view (docs/SERVE.md), without the signature. viewer NULL:
 * anyone's (admin, verify); else only the viewer's own (*found false
 * otherwise, the same answer as for no such id). */
enum cr_status srv_sub_json(struct srv_db *db, int64_t id, const struct srv_user *viewer,
			    json_t **out, bool *found, struct cr_err *err);
/* The object a scored submission's signature covers, built from its view:
 * the fields a published score stands on (board, id, user, task, file,
 * sha256, state, times, the public run's seed, status and speedups, the
 * secret run's status, ranked, score; not the rank, which moves). NULL
 * when the view is not scored. */
json_t *srv_sub_signed(const json_t *sub);
/* The text the HMAC is taken of: obj as compact JSON, keys sorted, reals at
 * 17 digits (a double read back from it is the same double). NULL unless
 * obj is an object of scalars. malloc'd. */
char *srv_signed_canon(const json_t *obj);

/* ---- reward groups ---- */
/* One job per completion; a completion without a code block is done at
 * once (status no_code). */
enum cr_status srv_reward_create(struct srv_db *db, const struct srv_user *u, const char *task,
				 const char *backend, bool timing, const char *const *completions,
				 int n, int64_t *id, bool *over_quota, struct cr_err *err);
/* The group's view; *done true when every completion is scored. */
enum cr_status srv_reward_json(struct srv_db *db, int64_t id, const struct srv_user *viewer,
			       json_t **out, bool *found, bool *done, struct cr_err *err);

/* ---- the queue ---- */
struct srv_claim {
	int64_t job, lease;
	char kind[8];            /* public | secret | reward */
	char task[160], file_name[128], backend[8];
	char *source;            /* malloc'd */
	uint64_t seed;
	char secret[65];         /* secret jobs: this run's own secret, HMAC-SHA256 of the
				  * submission id under the board's secret (so what one run's
				  * verdict gives away about its cases says nothing of
				  * another's); else "" */
	bool timing, quick;
	double time_cap_s;
};
void srv_claim_release(struct srv_claim *c);
/* Takes the oldest queued job (reward jobs first) whose retry pause is
 * over, a cuda job only when cuda is true (the worker has a GPU): *got
 * false when none. PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: under
 * BEGIN IMMEDIATE. */
enum cr_status srv_job_claim(struct srv_db *db, const char *worker, bool cuda, struct srv_claim *c,
			     bool *got, struct cr_err *err);
/* The job is still this claim's: its heartbeat moves on. *lost true when it
 * was taken back (the worker must drop its result). */
enum cr_status srv_job_beat(struct srv_db *db, const struct srv_claim *c, bool *lost,
			    struct cr_err *err);
/* Records the outcome, once: a verdict finishes the job (and the
 * submission when both its runs are done); a harness failure puts it back
 * in the queue, up to SRV_MAX_ATTEMPTS, then finishes it as harness_error
 * (the submission's state "error": not ranked, not charged), each retry
 * after a pause of 5 s times the tries so far. A public run that is not ok
 * finishes its secret run, when still queued, as "skipped". *lost true
 * when the job was no longer this claim's (nothing written). */
enum cr_status srv_job_finish(struct srv_db *db, const struct srv_claim *c,
			      const struct srv_job_out *o, bool *lost, struct cr_err *err);
/* Running jobs whose heartbeat is older than lease_ms go back to the
 * queue (a worker that died); *n how many. */
enum cr_status srv_job_reap(struct srv_db *db, int64_t lease_ms, int *n, struct cr_err *err);
/* Running jobs claimed by workers whose names start with prefix (a
 * process of this machine that is gone) go back to the queue at once. */
enum cr_status srv_job_requeue_prefix(struct srv_db *db, const char *prefix, int *n,
				      struct cr_err *err);
/* The names of the workers holding running jobs (malloc'd, [*n]). */
enum cr_status srv_job_workers(struct srv_db *db, char ***names, int *n, struct cr_err *err);
/* The store at a glance (`serve status`): boards, users, submissions, jobs
 * queued and running, the oldest queued job's age, harness errors, and each
 * running job with its worker and its heartbeat's age. */
enum cr_status srv_status_json(struct srv_db *db, json_t **out, struct cr_err *err);
/* queued and running job counts (metrics, tests). */
enum cr_status srv_queue_counts(struct srv_db *db, int *queued, int *running, struct cr_err *err);

/* ---- views (srv_view.c) ---- */
/* BOARDVIEW of one board (*found false when none) or of all ({"boards": [...]}). */
enum cr_status srv_board_view(struct srv_db *db, const char *name, json_t **out, bool *found,
			      struct cr_err *err);
enum cr_status srv_boards_view(struct srv_db *db, json_t **out, struct cr_err *err);

#endif
