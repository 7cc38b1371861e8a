/* ref_bench.c — the double references' cost: for every task of the given
 * sets (default L1), every check shape and the cpu bench shape × every init
 * profile, input generation + forward (+ backward where the task has one),
 * as the verifier runs them. Prints per-task seconds and the total.
 * usage: ref_bench [SET[,SET]]   (L1, L2, L3, smoke; CRUCIBLE_DATADIR as for crucible) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tasks/task_exec.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"
#include "tasks/task_rng.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_case(const struct task *t, const struct task_dimset *d, enum task_profile p)
{
	struct task_exec x;
	struct cr_err e;
	struct task_rng r;
	cr_err_init(&e);
	if (task_exec_init(&x, t, d, true, t->backward, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	for (int i = 0; i < t->n_tensors; i++)
		if (t->tensors[i].role != TASK_OUTPUT)
			task_gen_tensor(t, i, d, p, 1, x.v[i].d);
	task_exec_forward(&x);
	if (t->backward) {
		task_rng_seed(&r, 2);
		for (int i = 0; i < t->n_tensors; i++)
			if (t->tensors[i].role == TASK_OUTPUT)
				for (int64_t k = 0; k < x.v[i].n; k++)
					((double *)x.g[i].d)[k] = task_rng_normal(&r);
		task_exec_backward(&x);
	}
	task_exec_release(&x);
	return 0;
}

int main(int argc, char **argv)
{
	struct task *ts = NULL;
	int n = 0, cases = 0;
	struct cr_err e;
	double total = 0, worst = 0;
	const char *worst_name = "";

	cr_err_init(&e);
	if (task_registry_load(argc > 1 ? argv[1] : "L1", &ts, &n, &e)) {
		fprintf(stderr, "ref_bench: %s\n", e.msg);
		return 2;
	}
	printf("%-60s %6s %10s\n", "task", "cases", "seconds");
	for (int i = 0; i < n; i++) {
		double t0 = now();
		int c = 0;
		for (int s = 0; s <= ts[i].n_checks; s++)
			for (int p = 0; p < TASK_PROF_COUNT; p++) {
				const struct task_dimset *d = s < ts[i].n_checks ? &ts[i].checks[s] : &ts[i].cpu;
				if (run_case(&ts[i], d, (enum task_profile)p))
					return 1;
				c++;
			}
		double dt = now() - t0;
		printf("%-60s %6d %10.3f\n", ts[i].name, c, dt);
		total += dt;
		cases += c;
		if (dt > worst) {
			worst = dt;
			worst_name = ts[i].name;
		}
	}
	printf("\n%d tasks, %d cases (shapes x profiles, forward%s): %.1f s in all "
	       "(target: under 600 s a set); slowest task %s at %.2f s\n",
	       n, cases, " + backward where the task has one", total, worst_name, worst);
	task_list_free(ts, n);
	return 0;
}
