// For proc_contain.sh: a correct kernel (ok) whose worker leaves a thread
// sleeping for ever, and whose first call takes 300 ms so the script sees
// the worker; after the eval none of the workers it saw may be left.
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <pthread.h>
#include <stdint.h>
#include <time.h>
static void *forever(void *p)
{
	struct timespec ts = { 1000, 0 };
	(void)p;
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}
void relu_fwd(const float *x, float *y, int64_t n)
{
	static int started;
	pthread_t t;
	if (!started++ && !pthread_create(&t, NULL, forever, NULL)) {
		struct timespec ts = { 0, 300 * 1000 * 1000 };
		pthread_detach(t);
		nanosleep(&ts, NULL);
	}
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}
