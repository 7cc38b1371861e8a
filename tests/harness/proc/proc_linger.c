// For proc_contain.sh: a correct kernel that sleeps 30 s in every call, so
// the script finds the worker (crucible's child) mid-call,
// checks its namespaces, kills crucible with SIGKILL and expects the worker
// gone (PR_SET_PDEATHSIG is set after the uid change that used to clear it).
// @task smoke/relu
// @forward relu_fwd(x, y, N)
#include <stdint.h>
#include <time.h>
void relu_fwd(const float *x, float *y, int64_t n)
{
	struct timespec ts = { 30, 0 };
	nanosleep(&ts, NULL);
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}
