/* dec_pool.c — a fork-join thread pool for the forward pass, and the CPU
 * count. A decoded token runs ~5 jobs per layer, so waking workers must be
 * cheap: workers and the caller spin briefly on atomics before sleeping on
 * a condition variable; the mutex is only taken when someone sleeps.
 *
 * Invariants: `gen` counts jobs; a worker runs job `gen` once. A sleeper
 * registers (seq_cst), then re-checks its condition under the mutex before
 * waiting; whoever changes the condition does so (seq_cst) before looking
 * for sleepers and wakes them under the mutex: Dekker-style, so either the
 * sleeper sees the change or the changer sees the sleeper. No lost wake-up. */
#include "decode/cpu/dec_cpu.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN 2000 /* polls before sleeping (pause: ~10-150 cycles each) */

struct worker {
	struct dec_pool *p;
	int ith;
};

struct dec_pool {
	int n;
	pthread_t *th;        /* [n - 1] */
	struct worker *w;     /* [n - 1] */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	uint64_t gen;         /* atomic: job number */
	int pending;          /* atomic: workers still running the current job */
	int stop;             /* atomic */
	int sleepers;         /* workers waiting on go (under mu) */
	int caller_sleeping;  /* caller waiting on done (under mu) */
	dec_pool_fn fn;
	void *arg;
};

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

int dec_cpu_count(void)
{
	cpu_set_t set;
	long n;

	/* the CPUs this process may run on (a container's cpuset), else online */
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

static void *worker_main(void *vw)
{
	struct worker *w = vw;
	struct dec_pool *p = w->p;
	uint64_t seen = 0;

	for (;;) {
		uint64_t g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);

		for (int i = 0; i < SPIN && g == seen && !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE); i++) {
			cpu_relax();
			g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
		}
		if (g == seen) {
			pthread_mutex_lock(&p->mu);
			__atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
			while ((g = __atomic_load_n(&p->gen, __ATOMIC_SEQ_CST)) == seen &&
			       !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
				pthread_cond_wait(&p->go, &p->mu);
			__atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
			pthread_mutex_unlock(&p->mu);
		}
		if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
			break;
		seen = g;
		p->fn(p->arg, w->ith, p->n);
		if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_SEQ_CST) == 0 &&
		    __atomic_load_n(&p->caller_sleeping, __ATOMIC_SEQ_CST)) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

enum cr_status dec_pool_new(int n_threads, struct dec_pool **out, struct cr_err *err)
{
	struct dec_pool *p = calloc(1, sizeof *p);
	int started = 0;

	*out = NULL;
	if (n_threads < 1)
		n_threads = 1;
	if (!p)
		return cr_errf(err, CR_ENOMEM, "thread pool: out of memory");
	p->n = 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	p->th = calloc((size_t)n_threads, sizeof *p->th);
	p->w = calloc((size_t)n_threads, sizeof *p->w);
	if (!p->th || !p->w) {
		dec_pool_free(p);
		return cr_errf(err, CR_ENOMEM, "thread pool: out of memory");
	}
	/* workers read p->n: fix it before starting them, then trim on failure */
	p->n = n_threads;
	for (int i = 1; i < n_threads; i++) {
		p->w[i - 1].p = p;
		p->w[i - 1].ith = i;
		if (pthread_create(&p->th[i - 1], NULL, worker_main, &p->w[i - 1]))
			break;
		started++;
	}
	if (started + 1 < n_threads) {
		/* no job has run yet, so shrinking n is safe once they see stop */
		p->n = started + 1;
	}
	*out = p;
	return CR_OK;
}

void dec_pool_free(struct dec_pool *p)
{
	if (!p)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; p->th && i < p->n - 1; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->th);
	free(p->w);
	free(p);
}

void dec_pool_run(struct dec_pool *p, dec_pool_fn fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	p->fn = fn;
	p->arg = arg;
	__atomic_store_n(&p->pending, p->n - 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&p->gen, 1, __ATOMIC_SEQ_CST); /* publishes fn, arg, pending */
	if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
	}
	fn(arg, 0, p->n);
	for (int i = 0; i < SPIN && __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE); i++)
		cpu_relax();
	if (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&p->mu);
		__atomic_store_n(&p->caller_sleeping, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&p->pending, __ATOMIC_SEQ_CST))
			pthread_cond_wait(&p->done, &p->mu);
		__atomic_store_n(&p->caller_sleeping, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&p->mu);
	}
}

int dec_pool_size(const struct dec_pool *p)
{
	return p->n;
}
