// For proc_contain.sh: a correct kernel (ok) whose worker, named
// "crproc_left", leaves a thread sleeping for ever; after the eval no
// process of that name may be left.
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <pthread.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <time.h>
__attribute__((constructor)) static void name(void)
{
	prctl(PR_SET_NAME, "crproc_left");
}
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
	if (!started++ && !pthread_create(&t, NULL, forever, NULL))
		pthread_detach(t);
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}
