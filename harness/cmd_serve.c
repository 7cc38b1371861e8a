/* cmd_serve.c — `crucible serve`: the leaderboard and reward service
 * (serve/), and its administration: boards, users and their tokens, a
 * worker on another machine, checking a published result's signature, the
 * queue's state. The service's own pieces live in serve/; this file reads
 * options and wires them. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curl/curl.h>
#include <jansson.h>
#include "common/cr_cli.h"
#include "common/cr_status.h"
#include "decode/dec_run.h"
#include "harness/cli.h"
#include "serve/srv_api.h"
#include "serve/srv_db.h"
#include "serve/srv_http.h"
#include "serve/srv_sign.h"
#include "serve/srv_store.h"
#include "serve/srv_worker.h"

#define CMD "serve"
#define DEFAULT_DB "crucible-serve.sqlite"

static void usage_serve(FILE *f)
{
	fprintf(f,
		"usage: crucible serve [--db DB] [--listen HOST:PORT] [--workers N] [options]\n"
		"       crucible serve board add NAME --tasks SET [--backend cpu|cuda]\n"
		"                                [--rank geomean|per-task] [--no-timing] [--quick]\n"
		"                                [--time-cap S]\n"
		"       crucible serve board list\n"
		"       crucible serve user add NAME [--admin] [--quota N] [--rate N]\n"
		"       crucible serve user token NAME     a new token (the old one stops working)\n"
		"       crucible serve user set NAME [--quota N] [--rate N]\n"
		"       crucible serve user remove NAME    the token stops working; submissions stay\n"
		"       crucible serve user list\n"
		"       crucible serve worker --db postgresql://... [--workers N] [--gpus LIST]\n"
		"       crucible serve verify RESULT.json [--key FILE | --server URL]\n"
		"       crucible serve status\n"
		"       crucible serve --model M.gguf [options]   an OpenAI-compatible model server\n"
		"                                (`crucible serve --model M --help`)\n"
		"A leaderboard and an RL reward service on crucible's verifier (docs/SERVE.md).\n"
		"Submissions (POST /v1/boards/NAME/submissions, or `crucible submit`) are scored\n"
		"twice, on a public seed shown to the submitter and on the board's secret one;\n"
		"a submission ranks when both runs pass. POST /v1/reward scores a group of\n"
		"completions for RL. The rankings page is at /. Every score is signed.\n\n"
		"The store is a SQLite file (the default, WAL) or PostgreSQL (DB =\n"
		"postgresql://...), where `crucible serve worker` on other machines claims jobs.\n\n"
		"OPTIONS (every subcommand)\n"
		"  --db DB             the store: a SQLite file (default " DEFAULT_DB ",\n"
		"                      or $CRUCIBLE_SERVE_DB) or a postgresql:// URL\n"
		"OPTIONS (the server)\n"
		"  --listen HOST:PORT  where to listen (default 127.0.0.1:8080; PORT 0: any free)\n"
		"  --workers N         jobs scored at once by this process (default 1; 0: none,\n"
		"                      workers elsewhere); each runs `crucible check`\n"
		"  --gpus LIST         cuda boards: device ordinals, worker i uses LIST[i %% n]\n"
		"  --key FILE          the signing key (default DB.key beside a SQLite store;\n"
		"                      required with PostgreSQL); made, mode 0600, when missing\n"
		"  --log FILE          the service's log (default stderr): requests, jobs\n"
		"  --ready-file FILE   written with the server's URL once it listens\n"
		"  --max-body BYTES    the largest request (default 1M; K, M, G suffixes; larger: 413)\n"
		"  --max-conns N       connections at once (default 512)\n"
		"  --max-conns-per-ip N  connections at once from one address (default: a\n"
		"                      quarter of --max-conns)\n"
		"  --lease S           a job whose worker stops beating for S seconds goes back\n"
		"                      to the queue (default 30)\n"
		"  --check-timeout S   one scoring's wall-clock limit; past it the harness failed\n"
		"                      and the job is retried (default 900)\n"
		"  --reward-backend B  the backend of /v1/reward: auto (default), cpu, cuda\n"
		"  --max-completions N a reward group's largest size (default 64)\n"
		"  --reward-wait S     the longest a reward request waits before it answers 202\n"
		"                      with what is done (default 600; GET /v1/reward/ID polls)\n"
		"  --title TEXT        the rankings page's heading (default crucible)\n"
		"OPTIONS (board add)\n"
		"  --tasks SET         the board's tasks: L1/23, L1/1-10, 'L2/*Conv*', ...\n"
		"  --backend B         cpu (default) or cuda\n"
		"  --rank R            geomean (default: users with every task, by the geometric\n"
		"                      mean of their best speedups) or per-task\n"
		"  --no-timing         correctness only (ranked by time of submission)\n"
		"  --quick, --time-cap S   passed to check\n"
		"OPTIONS (user add)\n"
		"  --admin             may read every submission\n"
		"  --quota N           submissions and reward completions waiting at once\n"
		"                      (default 64; over it: 429)\n"
		"  --rate N            requests a minute (default 600; over it: 429, Retry-After)\n"
		"  -h, --help          this page\n\n"
		"A token is printed once, at `user add` or `user token`; only its hash is kept.\n"
		"SIGINT or SIGTERM stops the server: no new job starts, the jobs being scored\n"
		"are recorded, then it exits 0. A server or worker killed outright loses\n"
		"nothing: its jobs go back to the queue and are scored once.\n");
	cr_cli_help_tail(f,
			 "  0  done (the server stopped on a signal; verify: the signature holds)\n"
			 "  1  verify: the signature does not hold\n"
			 "  2  bad usage or bad input (an unknown task, a name taken, a bad store)\n"
			 "  3  the environment: the store or the address cannot be opened\n",
			 CR_ENV_DATADIR | CR_ENV_TMPDIR | CR_ENV_CUDA);
	fputs("  CRUCIBLE_SERVE_DB  the store when --db is not given\n", f);
}

struct opts {
	const char *db, *listen, *key, *log, *ready, *title, *reward_backend, *gpus, *server;
	const char *tasks, *backend, *rank;
	long workers, max_conns, max_completions, quota, rate, per_ip;
	double lease_s, check_timeout_s, time_cap_s;
	unsigned long long max_body;
	double reward_wait_s;
	bool admin, no_timing, quick, quota_given, rate_given;
};

/* The numbers of options follow the rule every command's do
 * (dec_opt_real, dec_opt_int: decode/dec_run.h); a bad one is exit 2. */
static int num_opt(const char *name, const char *v, double lo, double hi, double *out)
{
	struct cr_err err;
	cr_err_init(&err);
	return dec_opt_real(name, v, lo, hi, out, &err) ? cr_cli_usage(CMD, "%s", err.msg) : 0;
}

static int int_opt(const char *name, const char *v, long lo, long hi, long *out)
{
	struct cr_err err;
	cr_err_init(&err);
	uint64_t u = 0;
	if (dec_opt_int(name, v, (uint64_t)lo, (uint64_t)hi, &u, &err))
		return cr_cli_usage(CMD, "%s", err.msg);
	*out = (long)u;
	return 0;
}

enum {
	O_DB = 256, O_LISTEN, O_WORKERS, O_GPUS, O_KEY, O_LOG, O_READY, O_MAXBODY, O_MAXCONNS,
	O_LEASE, O_CHECKTO, O_RBACKEND, O_MAXCOMP, O_TITLE, O_TASKS, O_BACKEND, O_RANK, O_NOTIMING,
	O_QUICK, O_TIMECAP, O_ADMIN, O_QUOTA, O_RATE, O_SERVER, O_RWAIT, O_PERIP
};

static const struct option longopts[] = {
	{ "db", required_argument, NULL, O_DB },
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "workers", required_argument, NULL, O_WORKERS },
	{ "gpus", required_argument, NULL, O_GPUS },
	{ "key", required_argument, NULL, O_KEY },
	{ "log", required_argument, NULL, O_LOG },
	{ "ready-file", required_argument, NULL, O_READY },
	{ "max-body", required_argument, NULL, O_MAXBODY },
	{ "max-conns", required_argument, NULL, O_MAXCONNS },
	{ "max-conns-per-ip", required_argument, NULL, O_PERIP },
	{ "lease", required_argument, NULL, O_LEASE },
	{ "check-timeout", required_argument, NULL, O_CHECKTO },
	{ "reward-backend", required_argument, NULL, O_RBACKEND },
	{ "max-completions", required_argument, NULL, O_MAXCOMP },
	{ "title", required_argument, NULL, O_TITLE },
	{ "tasks", required_argument, NULL, O_TASKS },
	{ "backend", required_argument, NULL, O_BACKEND },
	{ "rank", required_argument, NULL, O_RANK },
	{ "no-timing", no_argument, NULL, O_NOTIMING },
	{ "quick", no_argument, NULL, O_QUICK },
	{ "time-cap", required_argument, NULL, O_TIMECAP },
	{ "admin", no_argument, NULL, O_ADMIN },
	{ "quota", required_argument, NULL, O_QUOTA },
	{ "rate", required_argument, NULL, O_RATE },
	{ "server", required_argument, NULL, O_SERVER },
	{ "reward-wait", required_argument, NULL, O_RWAIT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options anywhere among the words; the words (subcommand, names, files)
 * are left in argv[optind..] by getopt's permutation. */
static int parse(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof *o);
	o->db = getenv("CRUCIBLE_SERVE_DB") && *getenv("CRUCIBLE_SERVE_DB") ?
			getenv("CRUCIBLE_SERVE_DB") : DEFAULT_DB;
	o->listen = "127.0.0.1:8080";
	o->workers = 1;
	o->max_conns = 512;
	o->per_ip = 0;
	o->max_completions = 64;
	o->quota = 64;
	o->rate = 600;
	o->lease_s = 30;
	o->check_timeout_s = 900;
	o->reward_wait_s = 600;
	o->max_body = 1 << 20;
	o->backend = "cpu";
	o->rank = "geomean";
	o->reward_backend = "auto";
	o->title = "crucible";
	optind = 1;
	int c, rc = 0;
	while ((c = cr_cli_getopt(CMD, argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 'h': usage_serve(stdout); return -1;
		case O_DB: o->db = optarg; break;
		case O_LISTEN: o->listen = optarg; break;
		case O_WORKERS: rc = int_opt("--workers", optarg, 0, 256, &o->workers); break;
		case O_GPUS: o->gpus = optarg; break;
		case O_KEY: o->key = optarg; break;
		case O_LOG: o->log = optarg; break;
		case O_READY: o->ready = optarg; break;
		case O_MAXBODY: {
			struct cr_err err;
			cr_err_init(&err);
			uint64_t bytes = 0;
			if (dec_opt_bytes("--max-body", optarg, 1024, 1u << 30, &bytes, &err))
				return cr_cli_usage(CMD, "%s", err.msg);
			o->max_body = bytes;
			break;
		}
		case O_MAXCONNS: rc = int_opt("--max-conns", optarg, 1, 100000, &o->max_conns); break;
		case O_PERIP: rc = int_opt("--max-conns-per-ip", optarg, 1, 100000, &o->per_ip); break;
		case O_LEASE: rc = num_opt("--lease", optarg, 1, 86400, &o->lease_s); break;
		case O_CHECKTO: rc = num_opt("--check-timeout", optarg, 1, 86400, &o->check_timeout_s); break;
		case O_RBACKEND: o->reward_backend = optarg; break;
		case O_MAXCOMP: rc = int_opt("--max-completions", optarg, 1, 1024, &o->max_completions); break;
		case O_TITLE: o->title = optarg; break;
		case O_TASKS: o->tasks = optarg; break;
		case O_BACKEND: o->backend = optarg; break;
		case O_RANK: o->rank = optarg; break;
		case O_NOTIMING: o->no_timing = true; break;
		case O_QUICK: o->quick = true; break;
		case O_TIMECAP: rc = num_opt("--time-cap", optarg, 0.01, 3600, &o->time_cap_s); break;
		case O_ADMIN: o->admin = true; break;
		case O_QUOTA:
			rc = int_opt("--quota", optarg, 1, 1000000, &o->quota);
			o->quota_given = true;
			break;
		case O_RATE:
			rc = int_opt("--rate", optarg, 0, 1000000, &o->rate);
			o->rate_given = true;
			break;
		case O_RWAIT: rc = num_opt("--reward-wait", optarg, 1, 86400, &o->reward_wait_s); break;
		case O_SERVER: o->server = optarg; break;
		default: return CR_EXIT_USAGE;
		}
		if (rc)
			return rc;
	}
	if (strcmp(o->reward_backend, "auto") && strcmp(o->reward_backend, "cpu") &&
	    strcmp(o->reward_backend, "cuda"))
		return cr_cli_usage(CMD, "--reward-backend '%s': auto, cpu or cuda", o->reward_backend);
	return 0;
}

enum store_use {
	STORE_READ,   /* list, status: the store must exist */
	STORE_WRITE,  /* a worker, a token, a user changed: must exist and take writes */
	STORE_CREATE, /* board add, user add, the server: made when missing */
};

static int open_store(const struct opts *o, struct srv_db **db, enum store_use use)
{
	struct cr_err err;
	cr_err_init(&err);
	struct stat sb;
	if (use != STORE_CREATE && !srv_db_is_pg_url(o->db) && stat(o->db, &sb) && errno == ENOENT)
		return cr_cli_usage(CMD, "no store '%s' here: give --db DB or set CRUCIBLE_SERVE_DB "
					 "(`serve board add` and `serve user add` make a new one)",
				    o->db);
	enum cr_status st = srv_db_open(o->db, db, &err);
	if (!st)
		st = srv_store_init(*db, &err);
	if (!st && use != STORE_READ)
		st = srv_store_writable(*db, &err);
	if (st) {
		if (st == CR_EIO)
			st = CR_EENV; /* the store cannot be reached: the environment */
		err.status = st;
		srv_db_close(*db);
		*db = NULL;
		return cr_cli_status(CMD, &err);
	}
	return 0;
}

/* The key beside a SQLite store, or --key. */
static int key_path(const struct opts *o, char *buf, size_t cap)
{
	if (o->key)
		snprintf(buf, cap, "%s", o->key);
	else if (srv_db_is_pg_url(o->db))
		return cr_cli_usage(CMD, "a PostgreSQL store needs --key FILE (the signing key)");
	else if ((size_t)snprintf(buf, cap, "%s.key", o->db) >= cap)
		return cr_cli_usage(CMD, "--db is too long");
	return 0;
}

static bool want(int argc, char **argv, int at, const char *word)
{
	return at < argc && !strcmp(argv[at], word);
}

static int board_cmd(const struct opts *o, int argc, char **argv, int at)
{
	struct srv_db *db = NULL;
	struct cr_err err;
	cr_err_init(&err);
	if (want(argc, argv, at, "add")) {
		if (at + 2 != argc)
			return cr_cli_usage(CMD, "board add takes one NAME");
		if (!o->tasks)
			return cr_cli_usage(CMD, "board add needs --tasks SET");
		int rc = open_store(o, &db, STORE_CREATE);
		if (rc)
			return rc;
		struct srv_board b;
		memset(&b, 0, sizeof b);
		snprintf(b.name, sizeof b.name, "%s", argv[at + 1]);
		if (strlen(argv[at + 1]) >= sizeof b.name) {
			srv_db_close(db);
			return cr_cli_usage(CMD, "board name longer than %d characters", SRV_NAME_MAX);
		}
		snprintf(b.backend, sizeof b.backend, "%.7s", o->backend);
		snprintf(b.rank, sizeof b.rank, "%.15s", o->rank);
		if (strlen(o->backend) > 7 || strlen(o->rank) > 15)
			b.backend[0] = 0; /* refused below, named */
		b.timing = !o->no_timing;
		b.quick = o->quick;
		b.time_cap_s = o->time_cap_s;
		enum cr_status st = srv_board_add(db, &b, o->tasks, &err);
		if (!st)
			printf("board '%s': %s, %s, ranked by %s%s\n", b.name, b.tasks, b.backend, b.rank,
			       b.timing ? "" : " (untimed: by time of submission)");
		srv_board_release(&b);
		srv_db_close(db);
		return st ? cr_cli_status(CMD, &err) : 0;
	}
	if (want(argc, argv, at, "list")) {
		if (at + 1 != argc)
			return cr_cli_usage(CMD, "board list takes no argument");
		int rc = open_store(o, &db, STORE_READ);
		if (rc)
			return rc;
		json_t *v = NULL;
		enum cr_status st = srv_boards_view(db, &v, &err);
		srv_db_close(db);
		if (st)
			return cr_cli_status(CMD, &err);
		size_t i;
		json_t *b;
		json_array_foreach(json_object_get(v, "boards"), i, b)
		{
			json_t *t;
			size_t k;
			printf("%s\t%s\t%s\t%s\t%" JSON_INTEGER_FORMAT " submissions\t",
			       json_string_value(json_object_get(b, "name")),
			       json_string_value(json_object_get(b, "backend")),
			       json_string_value(json_object_get(b, "rank")),
			       json_is_true(json_object_get(b, "timing")) ? "timed" : "untimed",
			       json_integer_value(json_object_get(b, "n_submissions")));
			json_array_foreach(json_object_get(b, "tasks"), k, t)
				printf("%s%s", k ? "," : "", json_string_value(t));
			putchar('\n');
		}
		json_decref(v);
		return 0;
	}
	static const char *const words[] = { "add", "list" };
	const char *near = at < argc ? cr_cli_suggest(argv[at], words, 2) : NULL;
	if (near)
		return cr_cli_usage(CMD, "board: unknown '%s' (did you mean 'board %s'?)", argv[at], near);
	return cr_cli_usage(CMD, "board: add NAME --tasks SET, or list");
}

static int user_cmd(const struct opts *o, int argc, char **argv, int at)
{
	struct srv_db *db = NULL;
	struct cr_err err;
	cr_err_init(&err);
	bool add = want(argc, argv, at, "add"), token = want(argc, argv, at, "token");
	if (add || token) {
		if (at + 2 != argc)
			return cr_cli_usage(CMD, "user %s takes one NAME", argv[at]);
		int rc = open_store(o, &db, add ? STORE_CREATE : STORE_WRITE);
		if (rc)
			return rc;
		char tok[48];
		enum cr_status st = add ? srv_user_add(db, argv[at + 1], o->admin, (int)o->quota,
						       (int)o->rate, tok, &err)
					: srv_user_token(db, argv[at + 1], tok, &err);
		srv_db_close(db);
		if (st)
			return cr_cli_status(CMD, &err);
		/* the token on stdout alone, so a script can take it; it is shown once */
		printf("%s\n", tok);
		fprintf(stderr, "crucible serve: the token of user '%s' (shown once; only its hash "
				"is kept): give it as CRUCIBLE_TOKEN\n",
			argv[at + 1]);
		explicit_bzero(tok, sizeof tok);
		return 0;
	}
	if (want(argc, argv, at, "set") || want(argc, argv, at, "remove")) {
		bool set = want(argc, argv, at, "set");
		if (at + 2 != argc)
			return cr_cli_usage(CMD, "user %s takes one NAME", argv[at]);
		if (set && !o->quota_given && !o->rate_given)
			return cr_cli_usage(CMD, "user set NAME needs --quota N or --rate N");
		int rc = open_store(o, &db, STORE_WRITE);
		if (rc)
			return rc;
		enum cr_status st = set ? srv_user_set(db, argv[at + 1], o->quota_given ? (int)o->quota : -1,
						       o->rate_given ? (int)o->rate : -1, &err)
					: srv_user_disable(db, argv[at + 1], &err);
		srv_db_close(db);
		if (st)
			return cr_cli_status(CMD, &err);
		if (set)
			printf("user '%s': quota and rate set\n", argv[at + 1]);
		else
			printf("user '%s': removed (the token no longer works; submissions kept)\n",
			       argv[at + 1]);
		return 0;
	}
	if (want(argc, argv, at, "list")) {
		if (at + 1 != argc)
			return cr_cli_usage(CMD, "user list takes no argument");
		int rc = open_store(o, &db, STORE_READ);
		if (rc)
			return rc;
		json_t *v = NULL;
		enum cr_status st = srv_user_list(db, &v, &err);
		srv_db_close(db);
		if (st)
			return cr_cli_status(CMD, &err);
		size_t i;
		json_t *u;
		json_array_foreach(v, i, u)
			printf("%s\t%s\tquota %" JSON_INTEGER_FORMAT "\trate %" JSON_INTEGER_FORMAT "/min\n",
			       json_string_value(json_object_get(u, "name")),
			       json_is_true(json_object_get(u, "removed")) ? "removed"
			       : json_is_true(json_object_get(u, "admin")) ? "admin"
									 : "user",
			       json_integer_value(json_object_get(u, "quota")),
			       json_integer_value(json_object_get(u, "rate")));
		json_decref(v);
		return 0;
	}
	static const char *const words[] = { "add", "token", "set", "remove", "list" };
	const char *near = at < argc ? cr_cli_suggest(argv[at], words, 5) : NULL;
	if (near)
		return cr_cli_usage(CMD, "user: unknown '%s' (did you mean 'user %s'?)", argv[at], near);
	return cr_cli_usage(CMD, "user: add NAME, token NAME, set NAME, remove NAME, or list");
}

static int parse_gpus(const char *s, int *gpus, int cap, int *n)
{
	*n = 0;
	if (!s)
		return 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (!cr_parse_u64(t, &v) || v > 64 || *n == cap)
			return cr_cli_usage(CMD, "--gpus '%s': device ordinals, comma-separated", s);
		gpus[(*n)++] = (int)v;
	}
	return 0;
}

sigset_t cr_serve_stop_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	return set;
}

static int start_workers(const struct opts *o, FILE *log, struct srv_workers **w)
{
	static char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		cr_cli_error(CMD, "cannot find the crucible executable (/proc/self/exe): %s",
			     strerror(errno));
		return CR_EXIT_ENV;
	}
	exe[n] = 0;
	static int gpus[64];
	int n_gpus = 0, rc = parse_gpus(o->gpus, gpus, 64, &n_gpus);
	if (rc)
		return rc;
	struct srv_worker_opts wo = {
		.db = o->db,
		.crucible = exe,
		.n = (int)o->workers,
		.gpus = gpus,
		.n_gpus = n_gpus,
		.wall_limit_s = o->check_timeout_s,
		.lease_ms = (int64_t)(o->lease_s * 1000),
		.log = log,
	};
	struct cr_err err;
	cr_err_init(&err);
	if (srv_workers_start(&wo, w, &err))
		return cr_cli_status(CMD, &err);
	return 0;
}

static int worker_cmd(const struct opts *o)
{
	struct srv_db *db = NULL;
	int rc = open_store(o, &db, STORE_WRITE);
	if (rc)
		return rc;
	srv_db_close(db);
	sigset_t set = cr_serve_stop_signals();
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	struct srv_workers *w = NULL;
	if ((rc = start_workers(o, stderr, &w)))
		return rc;
	fprintf(stderr, "crucible serve worker: %ld worker(s) on %s\n", o->workers, o->db);
	int sig = 0;
	sigwait(&set, &sig);
	fprintf(stderr, "crucible serve worker: %s: finishing the jobs being scored\n",
		strsignal(sig));
	srv_workers_stop(w);
	return 0;
}

static FILE *open_log(const struct opts *o)
{
	if (!o->log)
		return stderr;
	FILE *f = fopen(o->log, "ae");
	if (!f)
		cr_cli_error(CMD, "--log %s: %s", o->log, strerror(errno));
	return f;
}

static int server(const struct opts *o)
{
	char host[256], kp[PATH_MAX];
	int port = 0, rc;
	struct cr_err err;
	cr_err_init(&err);
	if (srv_parse_listen(o->listen, host, sizeof host, &port, &err))
		return cr_cli_usage(CMD, "--listen: %s", err.msg);
	if ((rc = key_path(o, kp, sizeof kp)))
		return rc;
	struct srv_db *db = NULL;
	if ((rc = open_store(o, &db, STORE_CREATE)))
		return rc;
	srv_db_close(db);
	unsigned char key[SRV_KEY_BYTES];
	if (srv_key_load(kp, true, key, &err))
		return cr_cli_status(CMD, &err);
	FILE *log = open_log(o);
	if (!log)
		return CR_EXIT_ENV;
	sigset_t set = cr_serve_stop_signals();
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread started below inherits it */
	struct srv_api_opts ao = {
		.db = o->db,
		.key = key,
		.title = o->title,
		.reward_backend = o->reward_backend,
		.max_completions = (int)o->max_completions,
		.reward_wait_s = o->reward_wait_s,
		.log = log,
	};
	struct srv_api *api = NULL;
	struct srv_http *http = NULL;
	struct srv_workers *w = NULL;
	if (srv_api_new(&ao, &api, &err)) {
		rc = cr_cli_status(CMD, &err);
		goto out;
	}
	explicit_bzero(key, sizeof key);
	struct srv_http_opts ho = {
		.host = host,
		.port = port,
		.max_body = (size_t)o->max_body,
		.max_conns = (unsigned)o->max_conns,
		.per_ip_conns = (unsigned)o->per_ip,
		.conn_timeout_s = 60,
		.fn = srv_api_handle,
		.ctx = api,
		.log = log,
	};
	if (srv_http_start(&ho, &http, &err)) {
		rc = cr_cli_status(CMD, &err);
		fprintf(stderr, "  choose another --listen HOST:PORT (PORT 0 picks a free one)\n");
		goto out;
	}
	if ((rc = start_workers(o, log, &w)))
		goto out;
	char url[320];
	snprintf(url, sizeof url, strchr(host, ':') ? "http://[%s]:%d/" : "http://%s:%d/", host,
		 srv_http_port(http));
	fprintf(log, "crucible serve: listening on %s (store %s, %ld worker(s))\n", url,
		srv_db_is_pg_url(o->db) ? "postgresql" : o->db, o->workers);
	fflush(log);
	if (log != stderr)
		fprintf(stderr, "crucible serve: listening on %s (log: %s)\n", url, o->log);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (o->workers > 1 && o->workers * 2 > cores)
		fprintf(stderr, "crucible serve: warning: %ld workers on %ld cores: timed scorings "
				"will share cores, and their speedups will be noisy\n",
			o->workers, cores);
	if (o->workers == 0)
		fprintf(stderr, "crucible serve: no worker in this process: jobs wait for `crucible "
				"serve worker --db ...`\n");
	if (o->ready) {
		FILE *f = fopen(o->ready, "we");
		if (!f || fprintf(f, "%s\n", url) < 0 || fclose(f)) {
			cr_cli_error(CMD, "--ready-file %s: %s", o->ready, strerror(errno));
			rc = CR_EXIT_ENV;
			goto out;
		}
	}
	int sig = 0;
	sigwait(&set, &sig);
	fprintf(log, "crucible serve: %s: stopping; the jobs being scored are recorded first\n",
		strsignal(sig));
	fflush(log);
out:
	/* first nothing new: no job claimed, every wait answered; then the
	 * connections end, then the jobs being scored are recorded */
	srv_workers_signal(w);
	if (api)
		srv_api_stop(api, 5000);
	srv_http_drain(http, 2000); /* the answers just given go out whole */
	srv_http_stop(http);
	srv_workers_stop(w);
	srv_api_free(api);
	if (log != stderr)
		fclose(log);
	return rc;
}

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
	FILE *f = ud;
	return fwrite(p, sz, n, f);
}

static int verify_cmd(const struct opts *o, int argc, char **argv, int at)
{
	if (at + 2 != argc)
		return cr_cli_usage(CMD, "verify takes one RESULT.json (a submission as served)");
	const char *path = argv[at + 1];
	struct cr_err err;
	cr_err_init(&err);
	size_t len = 0;
	char *text = cr_read_data(NULL, path, CR_DATA_MAX_JSON, 0, &len, &err);
	if (!text)
		return cr_cli_usage(CMD, "%s", err.msg);
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		free(text);
		return cr_cli_usage(CMD, "%s:%d: not JSON: %s", path, je.line, je.text);
	}
	const json_t *sig = json_object_get(j, "signature");
	char *signed_text = srv_signed_canon(json_object_get(j, "signed"));
	if (!signed_text || !json_is_string(sig)) {
		free(signed_text);
		free(text);
		json_decref(j);
		return cr_cli_usage(CMD, "%s: not a scored submission with its signature "
					 "(as GET /v1/submissions/ID serves it)",
				    path);
	}
	bool valid = false;
	int rc = 0;
	if (o->server) {
		/* the server checks it with its key */
		CURL *c = curl_easy_init();
		char url[1024];
		snprintf(url, sizeof url, "%s%sv1/verify", o->server,
			 o->server[strlen(o->server) - 1] == '/' ? "" : "/");
		char *resp = NULL;
		size_t rlen = 0;
		FILE *mf = open_memstream(&resp, &rlen);
		struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, mf);
		curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
		CURLcode cc = curl_easy_perform(c);
		long code = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		fclose(mf);
		curl_slist_free_all(h);
		curl_easy_cleanup(c);
		json_t *rj = cc == CURLE_OK ? json_loads(resp ? resp : "", 0, NULL) : NULL;
		if (cc != CURLE_OK) {
			cr_cli_error(CMD, "%s: %s", url, curl_easy_strerror(cc));
			rc = CR_EXIT_ENV;
		} else if (code != 200 || !json_is_boolean(json_object_get(rj, "valid"))) {
			cr_cli_error(CMD, "%s: HTTP %ld: %.300s", url, code, resp ? resp : "");
			rc = code >= 400 && code < 500 ? CR_EXIT_USAGE : CR_EXIT_ENV;
		} else
			valid = json_is_true(json_object_get(rj, "valid"));
		json_decref(rj);
		free(resp);
	} else {
		char kp[PATH_MAX];
		unsigned char key[SRV_KEY_BYTES];
		if (!(rc = key_path(o, kp, sizeof kp))) {
			if (srv_key_load(kp, false, key, &err)) {
				rc = cr_cli_status(CMD, &err);
				fprintf(stderr, "  give the server's key with --key FILE, or ask the "
						"server with --server URL\n");
			}
			else
				valid = srv_hmac_check(key, signed_text, strlen(signed_text),
						       json_string_value(sig));
			explicit_bzero(key, sizeof key);
		}
	}
	if (!rc) {
		printf("%s: %s\n", path,
		       valid ? "the signature holds for its \"signed\" object (the rest of the "
			       "file is not vouched for)"
			     : "the signature does NOT hold");
		rc = valid ? 0 : CR_EXIT_FAIL;
	}
	free(signed_text);
	free(text);
	json_decref(j);
	return rc;
}

static int status_cmd(const struct opts *o)
{
	struct srv_db *db = NULL;
	int rc = open_store(o, &db, STORE_READ);
	if (rc)
		return rc;
	struct cr_err err;
	cr_err_init(&err);
	json_t *v = NULL;
	enum cr_status st = srv_status_json(db, &v, &err);
	srv_db_close(db);
	if (st)
		return cr_cli_status(CMD, &err);
	printf("boards %" JSON_INTEGER_FORMAT "\nusers %" JSON_INTEGER_FORMAT
	       "\nsubmissions %" JSON_INTEGER_FORMAT "\nqueued %" JSON_INTEGER_FORMAT
	       "\nrunning %" JSON_INTEGER_FORMAT "\nharness_errors %" JSON_INTEGER_FORMAT "\n",
	       json_integer_value(json_object_get(v, "boards")),
	       json_integer_value(json_object_get(v, "users")),
	       json_integer_value(json_object_get(v, "submissions")),
	       json_integer_value(json_object_get(v, "queued")),
	       json_integer_value(json_object_get(v, "running")),
	       json_integer_value(json_object_get(v, "harness_errors")));
	if (json_is_number(json_object_get(v, "oldest_queued_s")))
		printf("oldest_queued %.0f s\n", json_number_value(json_object_get(v, "oldest_queued_s")));
	size_t i;
	json_t *j;
	json_array_foreach(json_object_get(v, "running_jobs"), i, j)
		printf("job %" JSON_INTEGER_FORMAT "\t%s\t%s\t%s\theartbeat %.0f s ago\ttry %" JSON_INTEGER_FORMAT "\n",
		       json_integer_value(json_object_get(j, "job")),
		       json_string_value(json_object_get(j, "kind")),
		       json_string_value(json_object_get(j, "task")),
		       json_string_value(json_object_get(j, "worker")),
		       json_number_value(json_object_get(j, "heartbeat_s")),
		       json_integer_value(json_object_get(j, "attempts")) + 1);
	json_decref(v);
	return 0;
}

int cr_cmd_serve(int argc, char **argv)
{
	/* --model: the model server, options of its own (cmd_serve_model.c) */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--model") || !strncmp(argv[i], "--model=", 8))
			return cr_cmd_serve_model(argc, argv);
	struct opts o;
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	int at = optind;
	if (at == argc)
		return server(&o);
	const char *sub = argv[at];
	if (!strcmp(sub, "board"))
		return board_cmd(&o, argc, argv, at + 1);
	if (!strcmp(sub, "user"))
		return user_cmd(&o, argc, argv, at + 1);
	if (!strcmp(sub, "worker")) {
		if (at + 1 != argc)
			return cr_cli_usage(CMD, "worker takes options only");
		return worker_cmd(&o);
	}
	if (!strcmp(sub, "verify"))
		return verify_cmd(&o, argc, argv, at);
	if (!strcmp(sub, "status"))
		return status_cmd(&o);
	static const char *const subs[] = { "board", "user", "worker", "verify", "status" };
	const char *near = cr_cli_suggest(sub, subs, 5);
	if (near)
		return cr_cli_usage(CMD, "unknown subcommand '%s' (did you mean '%s'?)", sub, near);
	return cr_cli_usage(CMD, "unknown subcommand '%s' (board, user, worker, verify, status)",
			    sub);
}
