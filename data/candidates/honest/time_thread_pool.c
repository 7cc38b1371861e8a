// Honest row sum on a persistent pthread pool (created on the first call,
// reused by every later one): workers spin briefly on a generation counter
// before blocking on a condition variable, as hand-written pools and
// OpenMP runtimes do. The timing stage freezes the worker (SIGSTOP) right
// after each reply, often with these threads mid-spin, and thaws it for the
// next call: a pool that survives freezing must still get ok, and nothing
// it does between calls (spinning, going to sleep) may count against it.
// @task smoke/rowsum
// @forward rowsum_pool(x, y, B, D)
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define NT 4
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static atomic_uint gen, done;
static const float *jx;
static float *jy;
static int64_t jb, jd;
static int started, nw; /* workers running besides the caller */

static void rows(int id)
{
	int64_t lo = jb * id / (nw + 1), hi = jb * (id + 1) / (nw + 1);
	for (int64_t r = lo; r < hi; r++) {
		float s = 0;
		for (int64_t k = 0; k < jd; k++)
			s += jx[r * jd + k];
		jy[r] = s;
	}
}

static void *worker(void *p)
{
	int id = (int)(intptr_t)p;
	unsigned seen = 0;
	for (;;) {
		/* spin a while, then sleep until the next generation */
		for (int i = 0; i < 20000 && atomic_load(&gen) == seen; i++)
			;
		pthread_mutex_lock(&mu);
		while (atomic_load(&gen) == seen)
			pthread_cond_wait(&go, &mu);
		pthread_mutex_unlock(&mu);
		seen = atomic_load(&gen);
		rows(id);
		pthread_mutex_lock(&mu);
		if (atomic_fetch_add(&done, 1) + 1 == (unsigned)nw)
			pthread_cond_signal(&done_cv);
		pthread_mutex_unlock(&mu);
	}
	return 0;
}

void rowsum_pool(const float *restrict x, float *restrict y, int64_t b, int64_t d)
{
	if (!started) {
		/* fewer threads if the process limit says so */
		for (int i = 1; i < NT; i++) {
			pthread_t t;
			if (pthread_create(&t, 0, worker, (void *)(intptr_t)i))
				break;
			nw = i;
		}
		started = 1;
	}
	pthread_mutex_lock(&mu);
	jx = x;
	jy = y;
	jb = b;
	jd = d;
	atomic_store(&done, 0);
	atomic_fetch_add(&gen, 1);
	pthread_cond_broadcast(&go);
	pthread_mutex_unlock(&mu);
	rows(0);
	pthread_mutex_lock(&mu);
	while (atomic_load(&done) < (unsigned)nw)
		pthread_cond_wait(&done_cv, &mu);
	pthread_mutex_unlock(&mu);
}
