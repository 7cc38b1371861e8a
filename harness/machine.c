/* machine.c — the machine's state around a run (machine.h). */
#include "harness/machine.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing/timing.h"

static long long psi_some_us(void)
{
	char buf[256];
	const char *p;
	FILE *f = fopen("/proc/pressure/cpu", "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	if (!n || !(p = strstr(buf, "some ")) || !(p = strstr(p, "total=")))
		return -1;
	return strtoll(p + 6, NULL, 10);
}

static void steal(long long *st, long long *all)
{
	long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n = f ? fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3],
			   &v[4], &v[5], &v[6], &v[7]) : 0;

	if (f)
		fclose(f);
	*st = *all = -1;
	if (n == 8) {
		*st = v[7];
		*all = 0;
		for (int i = 0; i < 8; i++)
			*all += v[i];
	}
}

/* The exe of a pid, "" if unreadable. */
static void exe_of(long pid, char *buf, size_t cap)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof p, "/proc/%ld/exe", pid);
	n = readlink(p, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
}

static long parent_of(long pid)
{
	char p[64], buf[512], *q;
	FILE *f;
	size_t n;
	long pp = -1;

	snprintf(p, sizeof p, "/proc/%ld/stat", pid);
	if (!(f = fopen(p, "r")))
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid": comm may hold anything but ends at the last ')' */
	if ((q = strrchr(buf, ')')) && sscanf(q + 1, " %*c %ld", &pp) != 1)
		pp = -1;
	return pp;
}

/* Processes running the same crucible binary as this one whose parent
 * does not (a run's leader: its jobs and workers are its children), other
 * than this run. */
static int other_runs(void)
{
	char self[1024], exe[1024], pexe[1024];
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	long me = (long)getpid(), up = (long)getppid();

	exe_of(me, self, sizeof self);
	if (!d || !self[0]) {
		if (d)
			closedir(d);
		return 0;
	}
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10), pp;

		if (*end || pid <= 0 || pid == me)
			continue;
		exe_of(pid, exe, sizeof exe);
		if (strcmp(exe, self) || (pp = parent_of(pid)) <= 0)
			continue;
		exe_of(pp, pexe, sizeof pexe);
		/* our own jobs, and the command that started us (a gate's
		 * --confirm runs eval from the same binary) */
		if (!strcmp(pexe, self) || pid == up)
			continue;
		n++;
	}
	closedir(d);
	return n;
}

void machine_snap(struct machine_snap *s)
{
	struct timespec ts;
	double la[1] = { NAN };

	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (getloadavg(la, 1) != 1)
		la[0] = NAN;
	s->load1 = la[0];
	s->psi_some_us = psi_some_us();
	steal(&s->steal, &s->jiffies);
	s->other_runs = other_runs();
}

void machine_tally_add(struct machine_tally *t, const struct cr_result *r)
{
	if (!r->timed)
		return;
	t->rows++;
	t->noisy += r->noisy;
	t->boosted += r->boosted;
	t->samples += 2L * r->samples;
	t->corrected += r->n_corrected;
	t->preempted += r->n_preempted;
}

json_t *machine_json(const struct machine_snap *a, const struct machine_snap *b,
		     const struct machine_tally *t, int jobs, char *line, size_t cap)
{
	json_t *j = json_object();
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	double load = fmax(a->load1, b->load1), dt = b->t - a->t;
	double psi = a->psi_some_us >= 0 && b->psi_some_us >= 0 && dt > 0 ?
			     (double)(b->psi_some_us - a->psi_some_us) / 1e6 / dt : NAN;
	double stl = a->steal >= 0 && b->jiffies > a->jiffies ?
			     (double)(b->steal - a->steal) / (double)(b->jiffies - a->jiffies) : NAN;
	double stalled = t->samples ? (double)t->corrected / (double)t->samples : 0;
	double other = load - (jobs > 0 ? jobs : 1); /* the load beyond the run's own jobs */
	int others = a->other_runs > b->other_runs ? a->other_runs : b->other_runs;
	bool boosted = t->rows && t->boosted == t->rows;
	const char *verdict;
	size_t w = 0;

	if (cores < 1)
		cores = 1;
	if (stalled > 0.20 || stl > 0.10 || other > (double)cores)
		verdict = "oversubscribed";
	else if (stalled > 0.02 || others > 0 || stl > 0.02 || other > 0.5 * (double)cores)
		verdict = "busy";
	else
		verdict = "quiet";
	w += (size_t)snprintf(line + w, cap - w, "load %.1f on %ld cores", load, cores);
	if (others)
		w += (size_t)snprintf(line + w, cap - w, "; %d other crucible run%s", others, others > 1 ? "s" : "");
	if (psi == psi)
		w += (size_t)snprintf(line + w, cap - w, "; CPU pressure %.0f%%", 100 * psi);
	if (stl == stl && stl > 0.005)
		w += (size_t)snprintf(line + w, cap - w, "; %.0f%% stolen by the hypervisor", 100 * stl);
	if (t->rows) {
		w += (size_t)snprintf(line + w, cap - w, "; %.0f%% of timed samples stalled by other work (taken out)",
				      100 * stalled);
		if (t->preempted)
			w += (size_t)snprintf(line + w, cap - w, ", %ld preempted beyond correction", t->preempted);
		w += (size_t)snprintf(line + w, cap - w, "; %d of %d timed rows not trusted", t->noisy, t->rows);
		if (!boosted)
			snprintf(line + w, cap - w, "; timed at the default priority (%d of %d rows at nice %d)",
				 t->boosted, t->rows, TIMING_NICE);
	}
	json_object_set_new(j, "verdict", json_string(verdict));
	json_object_set_new(j, "why", json_string(line));
	json_object_set_new(j, "cores", json_integer(cores));
	json_object_set_new(j, "load1_max", load == load ? json_real(load) : json_null());
	json_object_set_new(j, "cpu_pressure", psi == psi ? json_real(psi) : json_null());
	json_object_set_new(j, "steal", stl == stl ? json_real(stl) : json_null());
	json_object_set_new(j, "other_crucible_runs", json_integer(others));
	json_object_set_new(j, "timed_rows", json_integer(t->rows));
	json_object_set_new(j, "noisy_rows", json_integer(t->noisy));
	json_object_set_new(j, "rows_at_timing_priority", json_integer(t->boosted));
	json_object_set_new(j, "timing_nice", json_integer(TIMING_NICE));
	json_object_set_new(j, "samples", json_integer(t->samples));
	json_object_set_new(j, "samples_stalled", json_integer(t->corrected));
	json_object_set_new(j, "samples_preempted", json_integer(t->preempted));
	/* the line names the verdict too */
	{
		char tmp[600];
		snprintf(tmp, sizeof tmp, "%s: %s", verdict, line);
		snprintf(line, cap, "%s", tmp);
	}
	return j;
}
