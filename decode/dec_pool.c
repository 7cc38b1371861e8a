/* dec_pool.c — a minimal fork-join thread pool (mutex + two condition
 * variables), and the CPU count. Workers sleep between jobs. */
#include "decode/dec_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

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
	uint64_t gen;         /* job number; workers run each job once */
	int pending;          /* workers still running the current job */
	int stop;
	dec_pool_fn fn;
	void *arg;
};

int dec_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

static void *worker_main(void *vw)
{
	struct worker *w = vw;
	struct dec_pool *p = w->p;
	uint64_t seen = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		dec_pool_fn fn;
		void *arg;

		while (p->gen == seen && !p->stop)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		fn = p->fn;
		arg = p->arg;
		pthread_mutex_unlock(&p->mu);
		fn(arg, w->ith, p->n);
		pthread_mutex_lock(&p->mu);
		if (--p->pending == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
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
	p->n = n_threads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	p->th = calloc((size_t)n_threads, sizeof *p->th);
	p->w = calloc((size_t)n_threads, sizeof *p->w);
	if (!p->th || !p->w) {
		p->n = 1;
		dec_pool_free(p);
		return cr_errf(err, CR_ENOMEM, "thread pool: out of memory");
	}
	for (int i = 1; i < n_threads; i++) {
		p->w[i - 1].p = p;
		p->w[i - 1].ith = i;
		if (pthread_create(&p->th[i - 1], NULL, worker_main, &p->w[i - 1]))
			break;
		started++;
	}
	p->n = started + 1; /* run with the threads we got */
	*out = p;
	return CR_OK;
}

void dec_pool_free(struct dec_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
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
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->arg = arg;
	p->pending = p->n - 1;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(arg, 0, p->n);
	pthread_mutex_lock(&p->mu);
	while (p->pending)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

int dec_pool_size(const struct dec_pool *p)
{
	return p->n;
}
