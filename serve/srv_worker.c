/* srv_worker.c — the workers: each thread claims a job, scores it through
 * `crucible check` (srv_job_run) and records the outcome once
 * (srv_job_finish: a claim taken back meanwhile writes nothing). One
 * heartbeat thread beats every claim of this process, takes back the jobs
 * whose heartbeat stopped (a worker that died anywhere), and at once those
 * of a process of this machine that is gone (a server killed with -9 and
 * restarted does not wait out the lease). A worker is named HOST:PID:I. */
#include "serve/srv_worker.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cuda/cuda_dev.h"
#include "serve/srv_db.h"
#include "serve/srv_http.h"
#include "serve/srv_job.h"
#include "serve/srv_sign.h"
#include "serve/srv_store.h"

struct slot {
	struct srv_workers *w;
	int index;
	pthread_t th;
	char name[256];
	pthread_mutex_t mu;      /* claim, busy */
	struct srv_claim claim;  /* the job being scored (copy without source) */
	bool busy;
};

struct srv_workers {
	struct srv_worker_opts o;
	char host[200];          /* HOST:BOOT.PIDNS, the start of this process's worker names */
	bool cuda;               /* cuda jobs are claimed: --gpus, or a device here */
	atomic_bool stop;        /* no new claim */
	atomic_bool beat_stop;   /* the heartbeat ends: only once every job is recorded */
	atomic_long done;
	pthread_t beat_th;
	int n;
	struct slot *slots;
};

static void wlog(struct srv_workers *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wlog(struct srv_workers *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	srv_vlog(w->o.log, "", fmt, ap);
	va_end(ap);
}

/* Sleeps up to ms, waking early when the workers stop. */
static void nap(struct srv_workers *w, int ms)
{
	for (int t = 0; t < ms && !atomic_load(&w->stop); t += 50)
		usleep(50 * 1000);
}

/* A store call failed: reconnect (after a pause) before the next. */
static void reconnect(struct srv_workers *w, struct srv_db **db, const char *who,
		      const struct cr_err *err)
{
	wlog(w, "%s: store: %s; reconnecting", who, err->msg);
	srv_db_close(*db);
	*db = NULL;
	while (!atomic_load(&w->stop)) {
		struct cr_err e;
		cr_err_init(&e);
		if (!srv_db_open(w->o.db, db, &e))
			return;
		nap(w, 2000);
	}
}

static void score(struct slot *s, struct srv_db **db, struct srv_claim *c)
{
	struct srv_workers *w = s->w;
	struct srv_job_spec spec = {
		.crucible = w->o.crucible,
		.source = c->source,
		.file_name = c->file_name,
		.task = c->task,
		.backend = c->backend,
		.seed = c->seed,
		.secret = !strcmp(c->kind, "secret") ? c->secret : NULL,
		.timing = c->timing,
		.quick = c->quick,
		.time_cap_s = isfinite(c->time_cap_s) ? c->time_cap_s : 0,
		.gpu = w->o.n_gpus ? w->o.gpus[s->index % w->o.n_gpus] : -1,
		.wall_limit_s = w->o.wall_limit_s,
		.tmpdir = w->o.tmpdir,
	};
	struct srv_job_out out;
	memset(&out, 0, sizeof out);
	struct cr_err err;
	cr_err_init(&err);
	int64_t t0 = srv_now_ms();
	if (srv_job_run(&spec, &out, &err)) {
		/* nothing could be started here: a harness failure of this machine */
		out.harness_failed = true;
		snprintf(out.why, sizeof out.why, "%s", err.msg);
	}
	double secs = (double)(srv_now_ms() - t0) / 1000.0;
	if (spec.secret) /* a secret run's speedup is neither kept nor logged */
		out.speedup = out.speedup_lo = out.speedup_hi = NAN;
	for (int tries = 0;; tries++) {
		bool lost = false;
		cr_err_init(&err);
		if (*db && !srv_job_finish(*db, c, &out, &lost, &err)) {
			atomic_fetch_add(&w->done, 1);
			if (lost)
				wlog(w, "%s: job %" PRId64 " was taken back while it ran; its outcome is "
					"dropped", s->name, c->job);
			else if (out.harness_failed)
				wlog(w, "%s: job %" PRId64 " (%s, %s): harness failure in %.1f s: %s",
				     s->name, c->job, c->kind, c->task, secs,
				     spec.secret ? "(secret run: see the worker's machine)" : out.why);
			else if (isfinite(out.speedup))
				wlog(w, "%s: job %" PRId64 " (%s, %s): %s %.3gx in %.1f s", s->name, c->job,
				     c->kind, c->task, out.status, out.speedup, secs);
			else
				wlog(w, "%s: job %" PRId64 " (%s, %s): %s in %.1f s", s->name, c->job,
				     c->kind, c->task, out.status, secs);
			return;
		}
		if (*db && err.status != CR_EIO) {
			wlog(w, "%s: job %" PRId64 ": cannot record it: %s", s->name, c->job, err.msg);
			return;
		}
		/* the store went away: keep the outcome and try again, until the
		 * lease runs out (then the job is scored again elsewhere) */
		if (tries * 2000 > w->o.lease_ms || atomic_load(&w->stop))
			return;
		reconnect(w, db, s->name, &err);
	}
}

static void *worker_main(void *arg)
{
	struct slot *s = arg;
	struct srv_workers *w = s->w;
	struct srv_db *db = NULL;
	struct cr_err err;
	cr_err_init(&err);
	if (srv_db_open(w->o.db, &db, &err))
		reconnect(w, &db, s->name, &err);
	while (!atomic_load(&w->stop)) {
		struct srv_claim c;
		bool got = false;
		cr_err_init(&err);
		if (!db || srv_job_claim(db, s->name, w->cuda, &c, &got, &err)) {
			/* a store that fails at once (read-only, gone) is not asked again
			 * in a loop: a pause after every failure */
			wlog(w, "%s: claim: %s", s->name, db ? err.msg : "no store connection");
			nap(w, 2000);
			if (err.status == CR_EIO || !db)
				reconnect(w, &db, s->name, &err);
			continue;
		}
		if (!got) {
			nap(w, 200);
			continue;
		}
		pthread_mutex_lock(&s->mu);
		s->claim = c;
		s->claim.source = NULL;
		memset(s->claim.secret, 0, sizeof s->claim.secret);
		s->busy = true;
		pthread_mutex_unlock(&s->mu);
		score(s, &db, &c);
		pthread_mutex_lock(&s->mu);
		s->busy = false;
		pthread_mutex_unlock(&s->mu);
		srv_claim_release(&c);
	}
	srv_db_close(db);
	return NULL;
}

/* HOST:PID:I of a process of this machine that is gone. */
/* A worker named "HOST:BOOT.PIDNS:PID:I" whose HOST, boot and PID namespace
 * are this process's, and whose PID no longer exists: provably gone, its
 * jobs can be taken back without waiting out the lease. A pid means
 * something only in its own PID namespace of one boot of one machine (a
 * container, a cloned VM with the same hostname: another), so w->host
 * holds "HOST:BOOT.PIDNS". */
static bool local_dead(const struct srv_workers *w, const char *name, char *prefix, size_t cap)
{
	size_t hl = strlen(w->host);
	if (strncmp(name, w->host, hl) || name[hl] != ':')
		return false;
	char *end = NULL;
	long pid = strtol(name + hl + 1, &end, 10);
	if (pid <= 0 || !end || *end != ':' || pid == (long)getpid())
		return false;
	if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return false;
	snprintf(prefix, cap, "%.*s", (int)(end - name + 1), name);
	return true;
}

/* Sleeps up to ms, waking early when the heartbeat is to end. */
static void beat_nap(struct srv_workers *w, int ms)
{
	for (int t = 0; t < ms && !atomic_load(&w->beat_stop); t += 50)
		usleep(50 * 1000);
}

static void *beat_main(void *arg)
{
	struct srv_workers *w = arg;
	struct srv_db *db = NULL;
	int64_t every = w->o.lease_ms / 4 > 250 ? w->o.lease_ms / 4 : 250;
	while (!atomic_load(&w->beat_stop)) {
		struct cr_err err;
		cr_err_init(&err);
		if (!db && srv_db_open(w->o.db, &db, &err)) {
			wlog(w, "heartbeat: store: %s", err.msg);
			beat_nap(w, 2000);
			continue;
		}
		for (int i = 0; i < w->n && !err.status; i++) {
			struct slot *s = &w->slots[i];
			pthread_mutex_lock(&s->mu);
			struct srv_claim c = s->claim;
			bool busy = s->busy;
			pthread_mutex_unlock(&s->mu);
			bool lost = false;
			if (busy)
				srv_job_beat(db, &c, &lost, &err);
		}
		int n = 0;
		if (!err.status)
			srv_job_reap(db, w->o.lease_ms, &n, &err);
		if (!err.status && n)
			wlog(w, "took back %d job(s) whose worker stopped answering", n);
		char **names = NULL;
		int nn = 0;
		if (!err.status)
			srv_job_workers(db, &names, &nn, &err);
		for (int i = 0; i < nn; i++) {
			char prefix[256];
			if (!err.status && local_dead(w, names[i], prefix, sizeof prefix) &&
			    !srv_job_requeue_prefix(db, prefix, &n, &err) && n)
				wlog(w, "took back %d job(s) of %s (that process is gone)", n, names[i]);
			free(names[i]);
		}
		free(names);
		if (err.status) {
			wlog(w, "heartbeat: store: %s", err.msg);
			srv_db_close(db);
			db = NULL;
		}
		beat_nap(w, (int)every);
	}
	srv_db_close(db);
	return NULL;
}

enum cr_status srv_workers_start(const struct srv_worker_opts *o, struct srv_workers **out,
				 struct cr_err *err)
{
	*out = NULL;
	struct srv_workers *w = calloc(1, sizeof *w);
	if (!w)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	w->o = *o;
	if (w->o.lease_ms <= 0)
		w->o.lease_ms = 30000;
	if (w->o.wall_limit_s <= 0)
		w->o.wall_limit_s = 900;
	w->n = o->n > 0 ? o->n : 0;
	char why[256];
	w->cuda = o->n_gpus > 0 || cr_cuda_dev_available(why, sizeof why);
	char host[64] = "", ns[128] = "";
	gethostname(host, sizeof host - 1);
	for (char *c = host; *c; c++)
		if (*c == ':')
			*c = '_';
	/* a pid namespace's inode names it only within one boot of one kernel
	 * (the root namespace's is the same number on every Linux machine):
	 * the boot id goes with it. Without either, a random one, never equal
	 * to another's: nothing is then taken back but by the lease */
	struct stat nsb;
	char boot[64] = "";
	FILE *bf = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (bf) {
		if (!fgets(boot, sizeof boot, bf))
			boot[0] = 0;
		fclose(bf);
		boot[strcspn(boot, "\n")] = 0;
		for (char *c = boot; *c; c++)
			if (*c == ':')
				*c = '_';
	}
	if (boot[0] && stat("/proc/self/ns/pid", &nsb) == 0)
		snprintf(ns, sizeof ns, "%.40s.%lu", boot, (unsigned long)nsb.st_ino);
	else
		snprintf(ns, sizeof ns, "x%llx", srv_random_u64());
	snprintf(w->host, sizeof w->host, "%s:%s", host, ns);
	w->slots = calloc((size_t)w->n + 1, sizeof *w->slots);
	if (!w->slots) {
		free(w);
		return cr_errf(err, CR_ENOMEM, "out of memory");
	}
	/* the heartbeat runs even with no worker thread: an API-only server
	 * still takes back the jobs of workers that died */
	if (pthread_create(&w->beat_th, NULL, beat_main, w)) {
		free(w->slots);
		free(w);
		return cr_errf(err, CR_EENV, "cannot start the heartbeat thread");
	}
	for (int i = 0; i < w->n; i++) {
		struct slot *s = &w->slots[i];
		s->w = w;
		s->index = i;
		snprintf(s->name, sizeof s->name, "%s:%ld:%d", w->host, (long)getpid(), i);
		pthread_mutex_init(&s->mu, NULL);
		if (pthread_create(&s->th, NULL, worker_main, s)) {
			w->n = i;
			srv_workers_stop(w);
			return cr_errf(err, CR_EENV, "cannot start worker thread %d", i);
		}
	}
	*out = w;
	return CR_OK;
}

void srv_workers_signal(struct srv_workers *w)
{
	if (w)
		atomic_store(&w->stop, true);
}

void srv_workers_stop(struct srv_workers *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	for (int i = 0; i < w->n; i++) {
		pthread_join(w->slots[i].th, NULL);
		pthread_mutex_destroy(&w->slots[i].mu);
	}
	/* the claims were beaten until their outcomes were recorded */
	atomic_store(&w->beat_stop, true);
	pthread_join(w->beat_th, NULL);
	free(w->slots);
	free(w);
}

long srv_workers_done(const struct srv_workers *w)
{
	return atomic_load(&((struct srv_workers *)w)->done);
}
