/* cmd_eval.c — `crucible eval` and `crucible check`: find candidates,
 * verify and time each, write results.csv rows as they finish. */
#include "harness/cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cr_config.h"
#include "cr_version.h"
#include "checks/cuda_build.h"
#include "checks/stage.h"
#include "common/cr_cli.h"
#include "common/cr_text.h"
#include "common/sha256.h"
#include "cuda/cuda_dev.h"
#include "harness/eval_gpus.h"
#include "harness/backend.h"
#include "cand/cand.h"
#include "harness/results.h"
#include "harness/eval_jobs.h"
#include "harness/eval_out.h"
#include "harness/machine.h"
#include "sandbox/compile.h"
#include "harness/seed.h"
#include "harness/verify.h"
#include "sandbox/proc.h"
#include "sandbox/sandbox.h"
#include "reports/report.h"
#include "tasks/task_registry.h"

/* Text a candidate controls (its file name, @task, any detail), safe to
 * print: control bytes (a newline in a file name too), invalid UTF-8 and
 * bidi overrides escaped. */
static const char *safe(const char *s, char *buf, size_t cap)
{
	cr_text_escape_name(s, strlen(s), buf, cap);
	return buf;
}

struct cands {
	char **paths;
	int n, cap;
};

static int add_path(struct cands *c, const char *p)
{
	if (c->n == c->cap) {
		int nc = c->cap ? c->cap * 2 : 64;
		char **np = realloc(c->paths, sizeof *np * (size_t)nc);
		if (!np)
			return -1;
		c->paths = np;
		c->cap = nc;
	}
	if (!(c->paths[c->n] = strdup(p)))
		return -1;
	c->n++;
	return 0;
}

static bool has_ext(const char *p, const char *ext)
{
	size_t l = strlen(p), e = strlen(ext);
	return l > e && !strcmp(p + l - e, ext);
}

/* What an entry of a walked tree is when it is not a file or a folder to
 * take (lstat's mode), for the line that says it was skipped. */
static const char *walk_kind(mode_t m)
{
	return S_ISDIR(m) || S_ISREG(m) ? "not a regular file or folder" : cr_file_kind(m);
}

/* An entry of a walked tree left out: one line naming it, and the batch
 * goes on (a submitted folder is the candidates', SPEC §3). */
static void walk_skip(const char *path, const char *why)
{
	char sb[1100];
	fprintf(stderr, "crucible eval: skipped %s: %s\n", safe(path, sb, sizeof sb), why);
}

/* Collects .c and .cu files under path (recursively, sorted). A path named
 * on the command line (depth 0) is the user's: a folder there may be a link
 * they chose; a file must be the file itself (a candidate is never read
 * through a link), and anything else is bad input. Beneath it nothing is
 * followed: a link (to a file or a folder, inside the tree or out of it), a
 * FIFO, a socket, a device, an unreadable folder or one more than 16 deep
 * is skipped with a line on stderr, never read. */
static enum cr_status collect(struct cands *c, const char *path, int depth, struct cr_err *err)
{
	struct stat sb;
	struct dirent **ents = NULL;
	int n;

	if (lstat(path, &sb)) {
		if (depth) {
			walk_skip(path, strerror(errno));
			return CR_OK;
		}
		return cr_errf(err, CR_EINPUT, "%s: %s", path, strerror(errno));
	}
	if (!depth && S_ISLNK(sb.st_mode)) {
		if (stat(path, &sb))
			return cr_errf(err, CR_EINPUT, "%s: a symbolic link to nothing: %s", path,
				       strerror(errno));
		if (!S_ISDIR(sb.st_mode))
			return cr_errf(err, CR_EINPUT, "%s: is a symbolic link: name the candidate "
				       "itself (crucible reads no file through a link)", path);
	}
	if (S_ISREG(sb.st_mode)) {
		if (!has_ext(path, ".c") && !has_ext(path, ".cu"))
			return depth ? CR_OK : cr_errf(err, CR_EINPUT, "%s: not a candidate (.c or .cu)", path);
		return add_path(c, path) ? cr_errf(err, CR_ENOMEM, "out of memory") : CR_OK;
	}
	if (!S_ISDIR(sb.st_mode)) {
		if (!depth)
			return cr_errf(err, CR_EINPUT, "%s: is %s", path, walk_kind(sb.st_mode));
		walk_skip(path, walk_kind(sb.st_mode));
		return CR_OK;
	}
	if (depth > 16) {
		walk_skip(path, "more than 16 folders deep");
		return CR_OK;
	}
	n = scandir(path, &ents, NULL, alphasort);
	if (n < 0) {
		if (!depth)
			return cr_errf(err, CR_EINPUT, "%s: %s", path, strerror(errno));
		walk_skip(path, strerror(errno));
		return CR_OK;
	}
	for (int i = 0; i < n; i++) {
		char sub[PATH_MAX];
		if (ents[i]->d_name[0] != '.' && !err->status) {
			if (snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name) >= (int)sizeof sub)
				walk_skip(path, "a name in it is too long");
			else
				collect(c, sub, depth + 1, err);
		}
		free(ents[i]);
	}
	free(ents);
	return err->status;
}

struct eval_opts {
	const char *tasks, *out, *backend;
	uint64_t seed;
	int argc;                /* the command line, for run.json */
	char **argv;
	const char *label;       /* --label NAME (run.json and every row) */
	bool json;               /* check --json */
	char sandbox_seen[sizeof ((struct cr_result *)0)->sandbox]; /* the first candidate worker's sandbox line */
	double load_start;       /* 1-minute load average when the run began */
	bool seed_given;         /* --seed N on the command line */
	char seed_str[32];       /* the row's verify_seed: the number, or "secret" */
	const char *seed_source; /* "--seed", "drawn", "secret" */
	bool resume, no_timing, quick, check_expect, verbose, compile_only;
	bool lock_clocks;        /* --lock-clocks: NVML locks the SM clock for the run */
	bool clocks_locked;      /* ... and it did */
	const char *arch;
	double timeout, time_cap;
	bool cuda;               /* run .cu candidates on the GPU */
	const char *gpus_arg;    /* --gpus LIST as given (NULL: every visible device) */
	struct eval_gpus gpus;   /* cuda: the run's devices (a job uses gpus for its slot) */
	char dev_arch[16];       /* cuda: the first device's arch (the compile-ahead pass) */
	char baseline_dir[1024]; /* cuda: the GPU baselines */
	double peak_tflops, peak_tbps;
	unsigned shard_i, shard_n;   /* --shard i/n (shard_n 0: the whole set) */
	char shard_str[24];          /* "i/n" as given, for run.json */
	int jobs;                    /* --jobs N (0: not given: the cores) */
	int job_timing;              /* --job-timing MODE (enum eval_job_timing) */
	const char *job_cpusets;     /* the jobs' core sets, for run.json ("" with --jobs 1) */
	struct cr_cost cost;         /* this invocation's rows, summed (run.json "cost") */
	struct machine_snap snap0, snap1; /* the machine at the start and the end */
	struct machine_tally tally;  /* this invocation's timed rows (run.json "machine") */
	int cost_n;
	double cost_verify_s;
	char started[32];            /* UTC, ISO 8601: run.json "started" */
	int seen_n;                  /* run.json "candidates_seen": every collected candidate */
	char seen_sha[65];
	int stopped_by;              /* SIGINT or SIGTERM stopped the run (0: it ran to its end) */
};

static void cpu_model(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	snprintf(buf, cap, "cpu");
	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "model name", 10)) {
			char *c = strchr(line, ':');
			if (c) {
				c += 2;
				c[strcspn(c, "\n")] = '\0';
				snprintf(buf, cap, "%s", c);
			}
			break;
		}
	fclose(f);
}

/* First line of `cc --version`: the candidates' compiler, for run.json. */
static void compiler_version(const char *workroot, char *buf, size_t cap)
{
	char log[700], *argv[] = { "cc", "--version", NULL };
	FILE *f;
	snprintf(buf, cap, "unknown");
	snprintf(log, sizeof log, "%s/cc-version.log", workroot);
	if (cr_run_argv(argv, log, 10, false) == 0 && (f = fopen(log, "r"))) {
		if (fgets(buf, (int)cap, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	unlink(log);
}

/* A JSON string of text crucible did not write itself: escaped first. */
static json_t *jstr(const char *s)
{
	char esc[4096];
	cr_text_escape(s ? s : "", s ? strlen(s) : 0, esc, sizeof esc);
	return json_string(esc);
}

/* The CPU frequency governor of cpu0 ("" when the kernel does not say). */
static void cpu_governor(char *buf, size_t cap)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "r");
	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)cap, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

/* sha256 of the seed's decimal text: lets --resume compare seeds, also a
 * secret one, without writing it down. */
static void seed_check(uint64_t seed, char *hex)
{
	char t[32];
	int n = snprintf(t, sizeof t, "%llu", (unsigned long long)seed);
	cr_sha256_hex(t, (size_t)n, hex);
}

/* The isolation of this run (SPEC §4): what the candidate's worker said it
 * got (its READY line; probed when no worker ran yet), how workers are
 * spawned, and how the compiler is confined. A missing layer reads "NO ...". */
static json_t *sandbox_json(const char *worker_line)
{
	json_t *j = json_object();
	char probe[300];
	if (worker_line && worker_line[0]) {
		json_object_set_new(j, "worker", jstr(worker_line));
	} else {
		/* no candidate worker ran: what a probe finds (marked as such) */
		int rc = cr_sandbox_probe(probe, sizeof probe);
		json_object_set_new(j, rc ? "worker_probe_failed" : "worker_probed", jstr(probe));
	}
	json_object_set_new(j, "spawn", jstr(cr_proc_ns_level()));
	/* the workers' container: a cgroup per worker, or what replaced it */
	json_object_set_new(j, "containment", jstr(cr_cg_mode()));
	if (cr_proc_ns_why()[0])
		json_object_set_new(j, "spawn_missing", jstr(cr_proc_ns_why()));
	json_object_set_new(j, "compiler", jstr(cr_compile_sandbox()));
	return j;
}

/* The distinct models of the run's devices, "A; B" (resume compares them). */
static void gpu_models(const struct eval_opts *o, char *buf, size_t cap)
{
	size_t w = 0;

	buf[0] = '\0';
	for (int i = 0; i < o->gpus.n && w < cap; i++) {
		bool seen = false;
		for (int k = 0; k < i; k++)
			seen |= !strcmp(o->gpus.dev[k].name, o->gpus.dev[i].name);
		if (!seen)
			w += (size_t)snprintf(buf + w, cap - w, "%s%s", w ? "; " : "", o->gpus.dev[i].name);
	}
}

/* run.json (SPEC §6) through jansson, written to a temp file and renamed,
 * so a killed run never leaves it empty or half written. Written at the
 * start of a run and again at its end (load average, task set). */
static void write_run_json(const char *dir, const char *run_id, const struct eval_opts *o,
			   const char *device, int n_tasks, const char *taskhash,
			   json_t *task_hashes, const char *workroot, bool final)
{
	char ccv[256], path[1024], tmp[1100], host[256] = "", gov[64], sc[65];
	struct utsname u;
	double la[3] = { NAN, NAN, NAN };
	json_t *j = json_object(), *cmd = json_array();

	uname(&u);
	gethostname(host, sizeof host - 1);
	compiler_version(workroot, ccv, sizeof ccv);
	cpu_governor(gov, sizeof gov);
	getloadavg(la, 3);
	seed_check(o->seed, sc);
	for (int i = 0; i < o->argc; i++)
		json_array_append_new(cmd, jstr(o->argv[i]));
	json_object_set_new(j, "tool", json_string("crucible"));
	json_object_set_new(j, "version", json_string(CRUCIBLE_VERSION));
	json_object_set_new(j, "revision", json_string(CRUCIBLE_REVISION));
	json_object_set_new(j, "run_id", json_string(run_id));
	json_object_set_new(j, "command", cmd);
	json_object_set_new(j, "label", jstr(o->label ? o->label : ""));
	json_object_set_new(j, "backend", json_string(o->cuda ? "cuda" : "cpu"));
	if (o->cuda && getenv("CRUCIBLE_LIBCUDA") && *getenv("CRUCIBLE_LIBCUDA"))
		json_object_set_new(j, "libcuda", jstr(getenv("CRUCIBLE_LIBCUDA")));
	json_object_set_new(j, "device", jstr(device));
	if (o->cuda) {
		char clk[400], models[1024];
		cr_cuda_clocks_line(o->gpus.dev[0].bus_id, clk, sizeof clk);
		json_object_set_new(j, "gpu_clocks", jstr(clk));
		json_object_set_new(j, "clocks_locked", json_boolean(o->clocks_locked));
		json_object_set_new(j, "gpus", eval_gpus_json(&o->gpus));
		gpu_models(o, models, sizeof models);
		json_object_set_new(j, "gpu_models", jstr(models));
	}
	json_object_set_new(j, "compiler", jstr(ccv));
	json_object_set_new(j, "host", jstr(host));
	json_object_set_new(j, "cores", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
	json_object_set_new(j, "cpu_governor", jstr(gov[0] ? gov : "unknown"));
	json_object_set_new(j, "kernel", jstr(u.release));
	json_object_set_new(j, "task_set", jstr(o->tasks ? o->tasks : ""));
	json_object_set_new(j, "tasks", json_integer(n_tasks));
	json_object_set_new(j, "task_set_sha256", json_string(taskhash));
	if (task_hashes)
		json_object_set(j, "tasks_sha256", task_hashes);
	if (o->shard_n)
		json_object_set_new(j, "shard", json_string(o->shard_str));
	json_object_set_new(j, "jobs", json_integer(o->jobs));
	if (o->jobs > 1) {
		json_object_set_new(j, "job_timing", json_string(eval_job_timing_names[o->job_timing]));
		json_object_set_new(j, "job_cpusets", jstr(o->job_cpusets ? o->job_cpusets : ""));
	}
	if (cr_seed_is_secret())
		json_object_set_new(j, "seed", json_string("secret"));
	else
		json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(j, "seed_source", json_string(o->seed_source));
	json_object_set_new(j, "seed_sha256", json_string(sc));
	json_object_set_new(j, "timing", json_boolean(!o->no_timing));
	json_object_set_new(j, "quick", json_boolean(o->quick));
	json_object_set_new(j, "time_cap_s", json_real(o->time_cap));
	json_object_set_new(j, "timeout_s", json_real(o->timeout));
	json_object_set_new(j, "load_start", json_real(o->load_start));
	if (final)
		json_object_set_new(j, "load_end", json_real(la[0]));
	if (final && o->snap1.t > 0) {
		char line[600];
		json_object_set_new(j, "machine", machine_json(&o->snap0, &o->snap1, &o->tally, o->jobs, line, sizeof line));
	}
	if (final && o->cost_n)
		json_object_set_new(j, "cost", json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:i, s:i}",
			"candidates", o->cost_n, "verify_s", o->cost_verify_s,
			"prepare_s", o->cost.prepare_s, "stages_s", o->cost.stages_s,
			"cases_s", o->cost.cases_s, "worker_start_s", o->cost.worker_start_s,
			"timing_s", o->cost.timing_s, "timing_wait_s", o->cost.timing_wait_s,
			"cases_reused", o->cost.cases_reused,
			"cases_computed", o->cost.cases_computed,
			"cond_s", o->cost.cond_s, "cases_cond", o->cost.cases_cond,
			"cond_rounds", o->cost.cond_rounds));
	json_object_set_new(j, "sandbox", sandbox_json(o->sandbox_seen));
	json_object_set_new(j, "complete", json_boolean(final && !o->stopped_by));
	/* when: written at the start with "finished" null, so a killed run
	 * still says what it was and since when */
	json_object_set_new(j, "started", json_string(o->started));
	if (final) {
		char now[32];
		cr_utc_now(now);
		json_object_set_new(j, "finished", json_string(now));
	} else {
		json_object_set_new(j, "finished", json_null());
	}
	json_object_set_new(j, "interrupted", o->stopped_by ?
			    json_string(o->stopped_by == SIGINT ? "SIGINT" : "SIGTERM") : json_null());
	json_object_set_new(j, "slurm", (json_t *)eval_out_slurm_json());
	json_object_set_new(j, "candidates_seen", json_pack("{s:i, s:s}", "count", o->seen_n,
							     "sha256", o->seen_sha));
	snprintf(path, sizeof path, "%s/run.json", dir);
	snprintf(tmp, sizeof tmp, "%s/.run.json.%d", dir, (int)getpid());
	{
		struct cr_err e;

		cr_err_init(&e);
		/* 12 significant digits: 0.3, not 0.29999999999999999 */
		if (cr_json_write(j, path, tmp, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12), &e))
			fprintf(stderr, "crucible eval: %s\n", e.msg);
	}
	json_decref(j);
}

/* --resume continues a run only under its own options: the ones that
 * change verdicts or figures must match run.json (named when they do not),
 * and a drawn seed is taken over. Returns 0, or 2 with the reason printed. */
static int resume_check(struct eval_opts *o)
{
	char path[1024], sc[65], diff[1024] = "";
	size_t n = 0;
	json_error_t je;
	json_t *j, *v;

	snprintf(path, sizeof path, "%s/run.json", o->out);
	if (access(path, F_OK) && errno == ENOENT)
		return 0;                 /* nothing to compare (a run killed before it) */
	/* an output folder may be someone else's: read as data (no link, no
	 * FIFO, bounded), and a parse error quotes nothing of it */
	{
		struct cr_err e;
		size_t len = 0;
		char *txt;

		cr_err_init(&e);
		if (!(txt = cr_read_data(NULL, path, CR_DATA_MAX_JSON, 0, &len, &e))) {
			fprintf(stderr, "crucible eval: --resume: %s\n", e.msg);
			return 2;
		}
		j = json_loadb(txt, len, 0, &je);
		free(txt);
		if (!j) {
			fprintf(stderr, "crucible eval: --resume: %s:%d: not valid JSON\n", path, je.line);
			return 2;
		}
	}
#define DIFF(...) (n += (size_t)snprintf(diff + n, n < sizeof diff ? sizeof diff - n : 0, __VA_ARGS__))
	v = json_object_get(j, "version");
	if (!json_is_string(v) || strcmp(json_string_value(v), CRUCIBLE_VERSION))
		DIFF(" version %s (was %s);", CRUCIBLE_VERSION, json_is_string(v) ? json_string_value(v) : "?");
	v = json_object_get(j, "backend");
	if (json_is_string(v) && strcmp(json_string_value(v), o->cuda ? "cuda" : "cpu"))
		DIFF(" --backend %s (was %s);", o->cuda ? "cuda" : "cpu", json_string_value(v));
	v = json_object_get(j, "timing");
	if (json_is_boolean(v) && json_is_true(v) != !o->no_timing)
		DIFF(" %s (was %s);", o->no_timing ? "--no-timing" : "timed", json_is_true(v) ? "timed" : "--no-timing");
	v = json_object_get(j, "quick");
	if (json_is_boolean(v) && json_is_true(v) != o->quick)
		DIFF(" --quick %s (was %s);", o->quick ? "on" : "off", json_is_true(v) ? "on" : "off");
	v = json_object_get(j, "time_cap_s");
	if (json_is_number(v) && fabs(json_number_value(v) - o->time_cap) > 1e-9 * fmax(1, o->time_cap))
		DIFF(" --time-cap %g (was %g);", o->time_cap, json_number_value(v));
	v = json_object_get(j, "shard");
	if (strcmp(json_is_string(v) ? json_string_value(v) : "", o->shard_str))
		DIFF(" --shard %s (was %s);", o->shard_n ? o->shard_str : "none",
		     json_is_string(v) ? json_string_value(v) : "none");
	if (o->cuda) {
		/* rows timed on another model are not comparable with these */
		char models[1024];
		gpu_models(o, models, sizeof models);
		v = json_object_get(j, "gpu_models");
		if (json_is_string(v) && strcmp(json_string_value(v), models))
			DIFF(" GPUs %s (were %s);", models, json_string_value(v));
	}
	v = json_object_get(j, "label");
	if (json_is_string(v) && strcmp(json_string_value(v), o->label ? o->label : ""))
		DIFF(" --label '%s' (was '%s');", o->label ? o->label : "", json_string_value(v));
	v = json_object_get(j, "seed");
	if (!o->seed_given && !cr_seed_is_secret() && json_is_integer(v)) {
		/* the run's own drawn seed goes on */
		o->seed = (uint64_t)json_integer_value(v);
		snprintf(o->seed_str, sizeof o->seed_str, "%llu", (unsigned long long)o->seed);
	}
	seed_check(o->seed, sc);
	v = json_object_get(j, "seed_sha256");
	if (json_is_string(v) && strcmp(json_string_value(v), sc))
		DIFF(" the seed (%s, was %s);", o->seed_str,
		     json_is_integer(json_object_get(j, "seed")) ? "another" : "a secret one");
#undef DIFF
	json_decref(j);
	if (n) {
		fprintf(stderr, "crucible eval: --resume: %s was made under other options:%s start a new --out, "
				"or resume with the same options\n", path, diff);
		return 2;
	}
	return 0;
}

/* The run's seed (SPEC §1): --seed N, mixed with CRUCIBLE_SEED when that is
 * set (then "secret"); without either, drawn from the kernel's CSPRNG so no
 * input of a default run is known in advance. 53 bits, so every JSON
 * reader keeps it exact. */
static void settle_seed(struct eval_opts *o)
{
	if (!o->seed_given && !cr_seed_is_secret())
		o->seed = cr_secure_u64() >> 11;
	o->seed = cr_seed(o->seed);
	o->seed_source = cr_seed_is_secret() ? "secret" : o->seed_given ? "--seed" : "drawn";
	if (cr_seed_is_secret())
		snprintf(o->seed_str, sizeof o->seed_str, "secret");
	else
		snprintf(o->seed_str, sizeof o->seed_str, "%llu", (unsigned long long)o->seed);
}

static int cmp_task_name(const void *a, const void *b)
{
	return strverscmp(((const struct task *)a)->name, ((const struct task *)b)->name);
}

/* sha256 over "name\0file contents" of every task, sorted by name. */
static void task_set_hash(struct task *ts, int n, char out[65])
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (n > 0)
		qsort(ts, (size_t)n, sizeof *ts, cmp_task_name);
	for (int i = 0; m && i < n; i++) {
		size_t fl = 0;
		char *src = cr_read_file(ts[i].path, CR_CAND_MAX_FILE, &fl);
		fwrite(ts[i].name, 1, strlen(ts[i].name) + 1, m);
		if (src)
			fwrite(src, 1, fl, m);
		free(src);
	}
	if (m)
		fclose(m);
	cr_sha256_hex(buf ? buf : "", buf ? len : 0, out);
	free(buf);
}

static void print_usage_eval(FILE *f)
{
	fprintf(f,
		"usage: crucible eval [PATH...] [options]\n"
		"Verifies and times every candidate (.c, .cu) under PATH; with no PATH, the\n"
		"bundled sample candidates (data/candidates/smoke) with their expected statuses.\n"
		"Writes DIR/results.csv (a row per candidate, flushed as it finishes) and run.json.\n\n"
		"OPTIONS\n"
		"  --tasks SPEC        only candidates of these tasks: smoke, L1/23, L1/1-10,\n"
		"                      L1/softmax, 'L2/*Conv*' (comma-separated)\n"
		"  --backend B         auto (default), cpu, or cuda\n"
		"  --out DIR           output directory (default crucible-out)\n"
		"  --resume            skip candidates already in DIR/results.csv (same file hash)\n"
		"  --label NAME        a name for this run (run.json, every row; report shows it)\n"
		"  --seed N            seed of the correctness cases (mixed with $CRUCIBLE_SEED);\n"
		"                      without it one is drawn per run and recorded (run.json, rows)\n"
		"  --no-timing         correctness only\n"
		"  --quick             three init profiles instead of six\n"
		"  --timeout S         wall-clock budget of one call (default 5)\n"
		"  --time-cap S        timing budget per candidate (default 1)\n"
		"  --gpus LIST         cuda: the devices to use, driver ordinals (0,1,...; default:\n"
		"                      every visible one); each job is bound to one, a device\n"
		"                      times one candidate at a time; models that differ must\n"
		"                      be listed (rows say which device: columns gpu, gpu_uuid)\n"
		"  --lock-clocks       cuda: lock the SM clock at its maximum through NVML for the run\n"
		"                      (refused, exit 3, when NVML cannot: it needs root)\n"
		"  --check-expect      exit 1 when a status differs from its sidecar's \"expect\"\n"
		"                      (\"expect_compile\" with --compile-only; on by default\n"
		"                      when no PATH is given)\n"
		"  --compile-only      cuda backend: NVRTC compile verdicts of the .cu candidates,\n"
		"                      no GPU needed (registers and spills in the detail)\n"
		"  --jobs N            verify N candidates at a time, each job on its own cores\n"
		"                      (default: the cores this process may use; 1: one by one)\n"
		"  --job-timing MODE   with --jobs > 1: serial (default: one timing at a time,\n"
		"                      other jobs' checks on their own cores), exclusive (a\n"
		"                      timing runs while no other job does anything), or\n"
		"                      pinned (jobs time side by side, each on its own cores);\n"
		"                      the cuda backend times one at a time\n"
		"  --shard I/N         only the I-th of N deterministic shards of the candidates\n"
		"                      (by content and task; join them with `crucible merge`)\n"
		"  --arch SM           compile-only target (default sm_90)\n"
		"  -h, --help          this help\n\n"
		"The same file named twice (a.c ./a.c, or a folder holding a.c) is evaluated once.\n"
		"DIR is made with its parents and locked for the run: a second eval into it is\n"
		"refused, naming the one that holds it. At the end the rows are sorted by\n"
		"(task, candidate). Progress (finished candidates, elapsed, ETA) goes to stderr,\n"
		"then one closing line (\"18 evaluated: 14 ok, 1 mismatch, 3 compile_error in 76 s\").\n"
		"Ctrl-C (or SIGTERM) stops the run: the finished rows are kept, --resume goes on.\n");
	cr_cli_help_tail(f,
			 "  0    every candidate has a verdict (--check-expect: the expected one)\n"
			 "  1    --check-expect: a candidate did not get its expected status\n"
			 "  2    bad usage or bad input (an unknown task, DIR in use by another run)\n"
			 "  3    the environment: no GPU or compiler for the backend, a write failed\n"
			 "  5    nothing evaluated (no candidate, or --tasks matched none)\n"
			 "  130  stopped by SIGINT (Ctrl-C), 143 by SIGTERM: rerun with --resume\n",
			 CR_ENV_DATADIR | CR_ENV_SEED | CR_ENV_CACHE | CR_ENV_CUDA | CR_ENV_TMPDIR |
			 CR_ENV_REFCACHE);
}

static void print_usage_check(FILE *f)
{
	fprintf(f,
		"usage: crucible check FILE [--task T] [--seed N] [--no-timing] [--timeout S]\n"
		"                       [--backend auto|cpu|cuda] [--compile-only [--arch SM]] [--json]\n"
		"Verifies one candidate and prints the full verdict with diagnostics\n"
		"(--json: the same as one JSON object).\n"
		"A .cu candidate takes --compile-only (NVRTC, no GPU needed).\n"
		"\nOPTIONS\n"
		"  --task T          the task, in any single-task form (L1/23, L1/softmax,\n"
		"                    L1/23_Softmax); default: the candidate's @task line\n"
		"  --seed N          seed of the correctness cases (mixed with $CRUCIBLE_SEED);\n"
		"                    without it one is drawn and printed\n"
		"  --no-timing       correctness only\n"
		"  --quick           three init profiles instead of six\n"
		"  --timeout S       wall-clock budget of one call (default 5)\n"
		"  --time-cap S      timing budget (default 1)\n"
		"  --backend B       auto (default), cpu, or cuda\n"
		"  --compile-only    cuda: NVRTC compile verdict only, no GPU needed\n"
		"  --arch SM         with --compile-only: the target (e.g. sm_90)\n"
		"  --lock-clocks     cuda: lock the SM clock through NVML (exit 3 when it cannot)\n"
		"  --json            the verdict as one JSON object\n"
		"  -h, --help        this page\n");
	cr_cli_help_tail(f,
			 "  0  the candidate is ok (--compile-only: compiled)\n"
			 "  1  it is not (its status says why)\n"
			 "  2  bad usage or bad input (no such file, an unknown --task)\n"
			 "  3  the environment: no GPU or compiler for the backend\n",
			 CR_ENV_DATADIR | CR_ENV_SEED | CR_ENV_CACHE | CR_ENV_CUDA | CR_ENV_TMPDIR |
			 CR_ENV_REFCACHE);
}

/* The candidate's task: --task, else its @task line (found even when a
 * later directive is broken), else the sidecar's "task", else the one task
 * of --tasks (fallback). The row names it whenever any of them does and
 * the task exists; a name no task has gives way to the fallback when that
 * one exists, else the row names no task. A
 * task file that exists but does not load is an input error (CR_EINPUT,
 * naming the task file and line), not the candidate's. *out is NULL with a
 * format_error in r when no task is named or an unknown one is; *tasks may
 * move: pointers into it are valid until the next call. */
static enum cr_status task_for(const struct cr_cand_file *f, const char *override,
			       const char *fallback, bool asked, struct task **tasks, int *n_tasks,
			       struct cr_result *r, char *tname, size_t tcap,
			       const struct task **out, struct cr_err *err)
{
	const char *path = f->path;
	int line = 0;
	struct cr_err e;
	struct task *nt;

	*out = NULL;
	tname[0] = '\0';
	if (override) {
		snprintf(tname, tcap, "%s", override);
	} else if (f->parsed) {
		snprintf(tname, tcap, "%s", f->cand.task);
		line = f->cand.task_line;
	} else if (f->task_hint[0]) {
		snprintf(tname, tcap, "%s", f->task_hint);
	} else if (fallback && fallback[0]) {
		snprintf(tname, tcap, "%s", fallback);
	}
	if (!tname[0]) {
		r->status = CHECK_FORMAT_ERROR;
		snprintf(r->detail, sizeof r->detail, "%s", f->error);
		return CR_OK;
	}
	/* the generator asked for another task that exists (its sidecar's
	 * "task"): the candidate answers that one, wrongly; a candidate may
	 * not move its failure to a task of its choosing */
	if (!override && asked && fallback && strcmp(fallback, tname) &&
	    task_registry_exists(fallback)) {
		char a[CR_CAND_TASK * 4], b[CR_CAND_TASK * 4];
		cr_text_escape(tname, strlen(tname), a, sizeof a);
		cr_text_escape(fallback, strlen(fallback), b, sizeof b);
		r->status = CHECK_FORMAT_ERROR;
		snprintf(r->detail, sizeof r->detail, "%s:%d: @task %s, but it was asked for %s "
			 "(its sidecar's task)", path, line, a, b);
		snprintf(tname, tcap, "%s", fallback);
		return CR_OK;
	}
	for (int i = 0; i < *n_tasks; i++)
		if (!strcmp((*tasks)[i].name, tname)) {
			*out = &(*tasks)[i];
			return CR_OK;
		}
	nt = realloc(*tasks, sizeof **tasks * (size_t)(*n_tasks + 1));
	if (!nt)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	*tasks = nt;
	cr_err_init(&e);
	/* a candidate names its task by the full name (SPEC §3): @task L1/23
	 * would load L1/23_Softmax under a row named "L1/23"; --task was made
	 * canonical by check */
	if (task_registry_find_exact(tname, &nt[*n_tasks], &e)) {
		if (task_registry_exists(tname))
			return cr_errf(err, CR_EINPUT, "%s", e.msg);
		r->status = CHECK_FORMAT_ERROR;
		if (f->parsed)
			snprintf(r->detail, sizeof r->detail, "%s:%d: @task: %s", path, line, e.msg);
		else
			snprintf(r->detail, sizeof r->detail, "%s", f->error);
		/* a name no task has: the row names the task the generator asked
		 * for (the sidecar's, or the one of --tasks) when that one exists,
		 * else none (reports would count it as one more task, failed) */
		if (!override && fallback && strcmp(fallback, tname) &&
		    task_registry_exists(fallback))
			snprintf(tname, tcap, "%s", fallback);
		else
			tname[0] = '\0';
		return CR_OK;
	}
	*out = &nt[(*n_tasks)++];
	return CR_OK;
}

/* --backend auto (or none): the choice may follow the candidates given. */
static bool backend_auto(const struct eval_opts *o)
{
	return !o->backend || !strcmp(o->backend, "auto");
}

/* The cuda backend's device facts: its description for results and
 * run.json, its arch for NVRTC, the GPU baselines' folder. */
static int cuda_setup(struct eval_opts *o, char *device, size_t cap, const char *who)
{
	int rc = eval_gpus_open(&o->gpus, who);
	if (rc)
		return rc;
	if (o->jobs && o->jobs < o->gpus.n) {
		char list[256];
		eval_gpus_str(&o->gpus, list, sizeof list);
		fprintf(stderr, "%s: --jobs %d with %d devices (--gpus %s): every device needs a job of "
			"its own (--jobs %d or more, or fewer --gpus)\n", who, o->jobs, o->gpus.n, list,
			o->gpus.n);
		return 2;
	}
	snprintf(device, cap, "%s", o->gpus.mixed ? "mixed (run.json gpus; rows: device, gpu)" :
		 o->gpus.dev[0].desc);
	snprintf(o->dev_arch, sizeof o->dev_arch, "%s", o->gpus.dev[0].arch);
	o->peak_tflops = o->gpus.dev[0].peak_tflops;
	o->peak_tbps = o->gpus.dev[0].peak_tbps;
	if (o->arch && o->arch[0] && strcmp(o->arch, o->dev_arch)) {
		fprintf(stderr, "%s: --arch %s: the device is %s (--arch is for --compile-only)\n", who,
			o->arch, o->dev_arch);
		return 2;
	}
	o->cuda = true;
	snprintf(o->baseline_dir, sizeof o->baseline_dir, "%s/baselines/cuda", task_datadir());
	return 0;
}

/* --lock-clocks: 0, or 3 when the lock failed (the run is refused). */
static int cuda_lock(struct eval_opts *o, const char *who)
{
	if (o->lock_clocks && o->cuda) {
		/* a run whose requested lock failed is not comparable: refuse it */
		if (eval_gpus_lock(&o->gpus, who))
			return 3;
		o->clocks_locked = true;
	}
	return 0;
}

/* Releases what --lock-clocks locked. */
static void cuda_unlock(struct eval_opts *o, const char *who)
{
	if (o->clocks_locked)
		eval_gpus_unlock(&o->gpus, who);
	o->clocks_locked = false;
}

static const char *row_task(const struct cr_cand_file *cf, const char *fallback, bool asked);

/* The task a candidate was asked for: its sidecar's "task" when that task
 * exists, else NULL (a made-up one is no request: the row falls to the
 * one task of --tasks, as without a sidecar). */
static const char *asked_task(const struct cr_meta *m)
{
	return m->task[0] && task_registry_exists(m->task) ? m->task : NULL;
}

static enum cr_status verify_one(struct cr_cand_file *f, const char *task_override,
				 const char *fallback, bool asked, struct task **tasks, int *n_tasks, const struct eval_opts *o,
				 const char *workroot, struct cr_result *r, char *task_name,
				 size_t tcap, struct cr_err *err)
{
	struct cr_verify_opts vo = { .seed = o->seed, .call_timeout_s = o->timeout,
				     .compile_timeout_s = 60, .time_cap_s = o->time_cap,
				     .rel_target = 0.02, .min_samples = 10, .no_timing = o->no_timing,
				     .quick = o->quick, .workroot = workroot, .cuda = o->cuda,
				     .arch = o->dev_arch, .baseline_dir = o->baseline_dir,
				     .peak_tflops = o->peak_tflops, .peak_tbps = o->peak_tbps,
				     .on_timing = o->jobs > 1 ? eval_jobs_timing_hook : NULL };
	const struct task *t = NULL;
	const struct cr_gpu *gpu = o->cuda ? eval_gpus_for(&o->gpus, eval_jobs_slot()) : NULL;
	enum cr_status st;

	/* on cuda the job's own device (--gpus): its ordinal, UUID, arch, peaks */
	if (gpu)
		eval_gpus_verify_opts(gpu, &vo);
	cr_result_init(r);
	r->gpu = gpu ? gpu->ordinal : -1;
	task_name[0] = '\0';
	if (!f->src) {
		/* unreadable: the row names the task it was asked for, if any */
		r->status = CHECK_FORMAT_ERROR;
		snprintf(r->detail, sizeof r->detail, "%s", f->error);
		snprintf(task_name, tcap, "%s", row_task(f, fallback, asked));
		cr_text_escape_inplace(task_name, tcap);
		return CR_OK;
	}
	snprintf(r->sha256, sizeof r->sha256, "%s", f->sha256);
	if (!(st = task_for(f, task_override, fallback, asked, tasks, n_tasks, r, task_name, tcap, &t, err)) && t)
		st = cr_verify(t, f, &vo, r, err);
	r->gpu = gpu ? gpu->ordinal : -1;
	if (r->status <= CHECK_TIMEOUT) {
		/* nothing was compared to the end: unknown, not 0 (which reads as exact) */
		r->max_abs_err = r->max_rel_err = r->err_vs_baseline = NAN;
	}
	cr_text_escape_inplace(r->detail, sizeof r->detail);
	cr_text_escape_inplace(task_name, tcap);
	return st;
}

static const char *fmt_speed(const struct cr_result *r, char *b, size_t cap)
{
	if (!r->timed || isnan(r->speedup))
		snprintf(b, cap, "-");
	else
		snprintf(b, cap, "%.2fx [%.2f,%.2f]", r->speedup, r->speedup_lo, r->speedup_hi);
	return b;
}

/* --shard i/n: decimal digits only, 1 <= i <= n <= 10000. 0, or -1. */
static int parse_shard(const char *s, struct eval_opts *o)
{
	const char *slash = strchr(s, '/');
	char a[16];
	uint64_t i, n;

	if (!slash || (size_t)(slash - s) >= sizeof a)
		return -1;
	snprintf(a, sizeof a, "%.*s", (int)(slash - s), s);
	for (const char *p = s; *p; p++)
		if (p != slash && (*p < '0' || *p > '9'))
			return -1;
	if (!cr_parse_u64(a, &i) || !cr_parse_u64(slash + 1, &n) || i < 1 || n > 10000 || i > n)
		return -1;
	o->shard_i = (unsigned)i;
	o->shard_n = (unsigned)n;
	snprintf(o->shard_str, sizeof o->shard_str, "%u/%u", o->shard_i, o->shard_n);
	return 0;
}

/* The task a loaded candidate's row will name, as task_for() names it
 * without loading a task: its @task, else the fallback (the sidecar's, or
 * the one task of --tasks); a name no task has gives way to the fallback
 * when that one exists, else "" (the row names none). --tasks and --shard
 * choose by it, so a row is where its task says. */
static const char *row_task(const struct cr_cand_file *cf, const char *fallback, bool asked)
{
	bool fb_ok = fallback && *fallback && task_registry_exists(fallback);
	const char *tn;

	if (!cf->src)
		return fb_ok ? fallback : "";
	tn = cf->parsed ? cf->cand.task : cf->task_hint[0] ? cf->task_hint :
	     fallback ? fallback : "";
	if (*tn && fb_ok && strcmp(fallback, tn) && (asked || !task_registry_exists(tn)))
		return fallback;
	if (*tn && !task_registry_exists(tn))
		return "";
	return tn;
}

/* The fallback task of a candidate: the one it was asked for, else the
 * one task of --tasks, else NULL. */
static const char *fallback_of(const struct cr_meta *m, const struct task *filter, int n_filter)
{
	const char *a = asked_task(m);
	return a ? a : n_filter == 1 ? filter[0].name : NULL;
}

/* --tasks (n_filter > 0) keeps a candidate whose row will name one of its
 * tasks, or none (a row naming no task is never dropped). */
static bool in_tasks(const struct cr_cand_file *cf, const struct cr_meta *m,
		     const struct task *filter, int n_filter)
{
	const char *tn;

	if (!n_filter)
		return true;
	tn = row_task(cf, fallback_of(m, filter, n_filter), asked_task(m) != NULL);
	for (int k = 0; k < n_filter; k++)
		if (!strcmp(filter[k].name, tn))
			return true;
	return !*tn;
}

/* --resume: results.csv has a row of this file as it is now (keys: the
 * name escaped one to one, a tab, source_sha256; none for an unreadable
 * file). */
static bool in_results(const char *path, const struct cr_cand_file *cf, char **keys, int n_keys)
{
	char *en = cr_text_escape_name_dup(path), *key = NULL;
	bool hit = false;

	if (en && asprintf(&key, "%s\t%s", en, cf->src ? cf->sha256 : "") >= 0)
		for (int k = 0; k < n_keys && !hit; k++)
			hit = !strcmp(keys[k], key);
	free(en);
	free(key);
	return hit;
}

/* The shard (1..n) of a loaded candidate: sha256 over its content's
 * sha256 and the task its row will name (the content's alone when it
 * names none), first 64 bits mod n. No path, no order: every machine
 * agrees. The task is named as task_for() names it, escaped as the row. */
static unsigned shard_of(const struct cr_cand_file *cf, const char *fallback, bool asked,
			 unsigned n)
{
	char t[CR_CAND_TASK * 4], buf[sizeof t + 80], h[65];
	const char *tn = row_task(cf, fallback, asked);
	uint64_t v = 0;
	int len;

	cr_text_escape(tn, strlen(tn), t, sizeof t);
	if (t[0])
		len = snprintf(buf, sizeof buf, "%s\n%s", cf->sha256, t);
	else
		len = snprintf(buf, sizeof buf, "%s", cf->sha256);
	cr_sha256_hex(buf, (size_t)len, h);
	for (int k = 0; k < 16; k++)
		v = v << 4 | (uint64_t)(h[k] <= '9' ? h[k] - '0' : h[k] - 'a' + 10);
	return (unsigned)(v % n) + 1;
}

/* Keeps in cs only the candidates of shard o->shard_i. The fallback task
 * is the one eval's loop gives verify_one (sidecar, else the one task of
 * --tasks), compile-only rows alike. */
static void shard_filter(struct cands *cs, const struct eval_opts *o, const struct task *filter,
			 int n_filter)
{
	int kept = 0;

	for (int i = 0; i < cs->n; i++) {
		struct cr_cand_file cf;
		struct cr_meta m;
		struct cr_err e;
		const char *fb = NULL;

		cr_err_init(&e);
		if (cr_meta_read(cs->paths[i], &m, &e))
			memset(&m, 0, sizeof m);   /* the loop reports it */
		/* as the rows will name the task */
		fb = fallback_of(&m, filter, n_filter);
		cr_cand_load(&cf, cs->paths[i]);
		if (shard_of(&cf, fb, asked_task(&m) != NULL, o->shard_n) == o->shard_i)
			cs->paths[kept++] = cs->paths[i];
		else
			free(cs->paths[i]);
		cr_cand_file_release(&cf);
	}
	cs->n = kept;
}

/* The same file named more than once (a.c ./a.c, a folder holding a.c, a
 * hard link) is one candidate: the first name is kept (device and inode;
 * a path that cannot be stat'ed stays, its row says why). Returns how many
 * names were dropped. */
static int dedupe(struct cands *cs)
{
	struct id { dev_t dev; ino_t ino; } *seen = calloc((size_t)cs->n + 1, sizeof *seen);
	int kept = 0, n_seen = 0, dropped = 0;

	if (!seen)
		return 0;
	for (int i = 0; i < cs->n; i++) {
		struct stat sb;
		bool dup = false;

		if (!stat(cs->paths[i], &sb)) {
			for (int k = 0; k < n_seen && !dup; k++)
				dup = seen[k].dev == sb.st_dev && seen[k].ino == sb.st_ino;
			if (!dup)
				seen[n_seen++] = (struct id){ sb.st_dev, sb.st_ino };
		}
		if (dup) {
			free(cs->paths[i]);
			dropped++;
			continue;
		}
		cs->paths[kept++] = cs->paths[i];
	}
	cs->n = kept;
	free(seen);
	return dropped;
}

static int cmp_strp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;

	return strcmp(x ? x : "", y ? y : "");
}

/* run.json "candidates_seen" (SPEC §6): every collected candidate, before
 * --shard: sha256 over the sorted lines "<source sha256> <task its row
 * names, or empty>\n" (an unreadable file's sha256 is empty). Shards that
 * saw the same folders agree; merge refuses those that do not. */
static void candidates_seen(const struct cands *cs, const struct task *filter, int n_filter,
			    char hex[65])
{
	char **lines = calloc((size_t)cs->n + 1, sizeof *lines), *buf = NULL;
	size_t len = 0;
	FILE *m;

	hex[0] = '\0';
	if (!lines)
		return;
	for (int i = 0; i < cs->n; i++) {
		struct cr_cand_file cf;
		struct cr_meta md;
		struct cr_err e;
		const char *tn;
		char t[CR_CAND_TASK * 4];

		cr_err_init(&e);
		if (cr_meta_read(cs->paths[i], &md, &e))
			memset(&md, 0, sizeof md);
		cr_cand_load(&cf, cs->paths[i]);
		tn = row_task(&cf, fallback_of(&md, filter, n_filter), asked_task(&md) != NULL);
		cr_text_escape(tn, strlen(tn), t, sizeof t);
		if (asprintf(&lines[i], "%s %s\n", cf.src ? cf.sha256 : "", t) < 0)
			lines[i] = NULL;
		cr_cand_file_release(&cf);
	}
	qsort(lines, (size_t)cs->n, sizeof *lines, cmp_strp);
	if ((m = open_memstream(&buf, &len))) {
		for (int i = 0; i < cs->n; i++)
			if (lines[i])
				fputs(lines[i], m);
		fclose(m);
	}
	cr_sha256_hex(buf ? buf : "", buf ? len : 0, hex);
	free(buf);
	for (int i = 0; i < cs->n; i++)
		free(lines[i]);
	free(lines);
}

/* run.json "tasks_sha256": each task used, sha256 of its file, so merge
 * can tell shards of one task set (which load different tasks) apart
 * from shards of two. */
static json_t *task_hashes(const struct task *ts, int n)
{
	json_t *j = json_object();
	for (int i = 0; j && i < n; i++) {
		size_t fl = 0;
		char *src = cr_read_file(ts[i].path, CR_CAND_MAX_FILE, &fl), h[65];
		cr_sha256_hex(src ? src : "", src ? fl : 0, h);
		json_object_set_new(j, ts[i].name, json_string(h));
		free(src);
	}
	return j;
}

static int parse_common(int argc, char **argv, struct eval_opts *o, const char **task,
			bool check)
{
	static const struct option lo[] = {
		{ "tasks", required_argument, 0, 't' }, { "task", required_argument, 0, 'T' },
		{ "backend", required_argument, 0, 'b' }, { "out", required_argument, 0, 'o' },
		{ "resume", no_argument, 0, 'r' }, { "seed", required_argument, 0, 's' },
		{ "no-timing", no_argument, 0, 'n' }, { "quick", no_argument, 0, 'q' },
		{ "timeout", required_argument, 0, 'x' }, { "time-cap", required_argument, 0, 'c' },
		{ "check-expect", no_argument, 0, 'e' }, { "help", no_argument, 0, 'h' },
		{ "compile-only", no_argument, 0, 'C' }, { "arch", required_argument, 0, 'A' },
		{ "label", required_argument, 0, 'L' }, { "json", no_argument, 0, 'J' },
		{ "lock-clocks", no_argument, 0, 'K' }, { "gpus", required_argument, 0, 'G' },
		{ "shard", required_argument, 0, 'S' },
		{ "jobs", required_argument, 0, 'j' }, { "job-timing", required_argument, 0, 'M' },
		{ 0, 0, 0, 0 }
	};
	int c;
	char *end;
	optind = 1;
	while ((c = cr_cli_getopt(argv[0], argc, argv, "h", lo)) != -1) {
		switch (c) {
		case 't': o->tasks = optarg; break;
		case 'T': *task = optarg; break;
		case 'b': o->backend = optarg; break;
		case 'o': o->out = optarg; break;
		case 'r': o->resume = true; break;
		case 's':
			o->seed_given = true;
			if (!cr_parse_u64(optarg, &o->seed)) {
				return cr_cli_usage(argv[0], "--seed: '%s' is not a non-negative integer", optarg);
			}
			break;
		case 'n': o->no_timing = true; break;
		case 'q': o->quick = true; break;
		case 'x': case 'c': {
			double d = strtod(optarg, &end);
			if (*end || !(d > 0) || d > 3600) {
				return cr_cli_usage(argv[0], "--%s: '%s' is not a number of seconds in (0, 3600]", c == 'x' ? "timeout" : "time-cap", optarg);
			}
			if (c == 'x') o->timeout = d; else o->time_cap = d;
			break;
		}
		case 'e': o->check_expect = true; break;
		case 'C': o->compile_only = true; break;
		case 'K': o->lock_clocks = true; break;
		case 'G':
			if (check) {
				return cr_cli_usage(argv[0], "--gpus is for `crucible eval`");
			}
			if (eval_gpus_parse(&o->gpus, optarg, "crucible eval"))
				return 2;
			o->gpus_arg = optarg;
			break;
		case 'A': o->arch = optarg; break;
		case 'S':
			if (check) {
				return cr_cli_usage(argv[0], "--shard is for `crucible eval`");
			}
			if (parse_shard(optarg, o)) {
				return cr_cli_usage(argv[0], "--shard: '%s' is not i/n with 1 <= i <= n <= 10000", optarg);
			}
			break;
		case 'j': case 'M': {
			uint64_t v = 0;
			if (check) {
				return cr_cli_usage(argv[0], "--%s is for `crucible eval`",
					c == 'j' ? "jobs" : "job-timing");
			}
			if (c == 'M') {
				if ((o->job_timing = eval_job_timing_parse(optarg)) < 0) {
					return cr_cli_usage(argv[0], "--job-timing: '%s' is not pinned, serial "
							"or exclusive", optarg);
				}
				break;
			}
			if (!cr_parse_u64(optarg, &v) || v < 1 || v > 256) {
				return cr_cli_usage(argv[0], "--jobs: '%s' is not a number of jobs in [1, 256]", optarg);
			}
			o->jobs = (int)v;
			break;
		}
		case 'J':
			if (!check) {
				return cr_cli_usage(argv[0], "--json is for `crucible check` (eval writes results.csv)");
			}
			o->json = true;
			break;
		case 'L':
			if (!optarg[0] || strlen(optarg) > 64) {
				return cr_cli_usage(argv[0], "--label: give a name of 1 to 64 characters");
			}
			o->label = optarg;
			break;
		case 'h':
			if (check) print_usage_check(stdout); else print_usage_eval(stdout);
			return -1;
		default:
			return CR_EXIT_USAGE;   /* cr_cli_getopt said what */
		}
	}
	return 0;
}

/* Whether dir/run.json is a `crucible run`'s (command "run"). */
static bool holds_run(const char *dir)
{
	char p[PATH_MAX];
	struct cr_err e;
	size_t len = 0;
	char *buf;
	json_t *j;
	bool run;

	snprintf(p, sizeof p, "%s/run.json", dir);
	cr_err_init(&e);
	if (!(buf = cr_read_data(NULL, p, CR_DATA_MAX_JSON, CR_DATA_OPTIONAL, &len, &e)))
		return false;
	j = json_loadb(buf, len, 0, NULL);
	free(buf);
	run = json_is_object(j) && !strcmp(json_string_value(json_object_get(j, "command")) ?: "", "run");
	json_decref(j);
	return run;
}

/* eval --backend cuda --compile-only: every .cu candidate through NVRTC in
 * parallel, then a row each. Task pointers are resolved after all tasks
 * are loaded (the array may move while loading). */
/* --compile-only takes the candidates the main loop would: the .cu files
 * whose row's task is in --tasks (or names none), less those --resume
 * finds in results.csv (keys: escaped name, tab, source_sha256). */
static void compile_only_select(struct cands *cs, const struct task *filter, int n_filter,
				char **keys, int n_keys, int *filtered, int *resumed)
{
	int kept = 0;

	for (int i = 0; i < cs->n; i++) {
		struct cr_cand_file cf;
		struct cr_meta m;
		struct cr_err e;
		bool in, skip;

		cr_err_init(&e);
		if (cr_meta_read(cs->paths[i], &m, &e))
			memset(&m, 0, sizeof m);   /* reported when its row is written */
		cr_cand_load(&cf, cs->paths[i]);
		in = in_tasks(&cf, &m, filter, n_filter);
		skip = in && n_keys && in_results(cs->paths[i], &cf, keys, n_keys);
		cr_cand_file_release(&cf);
		if (!in || skip) {
			*(in ? resumed : filtered) += 1;
			free(cs->paths[i]);
			continue;
		}
		cs->paths[kept++] = cs->paths[i];
	}
	cs->n = kept;
}

/* How many candidates eval's loop will verify: those of the backend's
 * kind, of --tasks, not found by --resume (the loop decides the same way,
 * saying why for each). For the progress line's N. */
static int count_todo(const struct cands *cs, bool cuda, const struct task *filter, int n_filter,
		      char **keys, int n_keys)
{
	int n = 0;

	for (int i = 0; i < cs->n; i++) {
		struct cr_cand_file cf;
		struct cr_meta m;
		struct cr_err e;

		if (has_ext(cs->paths[i], ".cu") != cuda)
			continue;
		cr_err_init(&e);
		if (cr_meta_read(cs->paths[i], &m, &e))
			memset(&m, 0, sizeof m);
		cr_cand_load(&cf, cs->paths[i]);
		n += in_tasks(&cf, &m, filter, n_filter) &&
		     !(n_keys && in_results(cs->paths[i], &cf, keys, n_keys));
		cr_cand_file_release(&cf);
	}
	return n;
}

static enum cr_status eval_cuda_compile(struct cands *cs, const struct eval_opts *o,
					const char *dflt, struct task **tasks, int *n_tasks,
					const char *run_id, FILE *res, int *done, int *unexpected,
					struct eval_progress *prog, struct cr_err *err)
{
	int n = 0;
	struct cr_cand_file *fs = calloc((size_t)cs->n + 1, sizeof *fs);
	char (*tnames)[256] = calloc((size_t)cs->n + 1, sizeof *tnames);
	int *tidx = calloc((size_t)cs->n + 1, sizeof *tidx);
	struct cr_result *rs = calloc((size_t)cs->n + 1, sizeof *rs);
	struct check_cuda_job *jobs = calloc((size_t)cs->n + 1, sizeof *jobs);
	int *of = calloc((size_t)cs->n + 1, sizeof *of), m = 0;
	struct cr_cuda_opts co = { .arch = check_cuda_arch(o->arch), .timeout_s = 60 };
	struct cr_meta meta;
	enum cr_status st = CR_OK;
	char device[64];

	if (!fs || !tnames || !tidx || !rs || !jobs || !of) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	snprintf(device, sizeof device, "compile-only %s", check_cuda_arch(o->arch));
	for (int i = 0; i < cs->n; i++) {
		const struct task *t;
		if (!has_ext(cs->paths[i], ".cu"))
			continue;
		struct cr_meta am;
		struct cr_err ae;
		const char *asked;
		cr_result_init(&rs[n]);
		cr_cand_load(&fs[n], cs->paths[i]);
		tidx[n] = -1;
		/* the task it was asked for (its sidecar's), as eval's rows take it */
		cr_err_init(&ae);
		if (cr_meta_read(cs->paths[i], &am, &ae))
			memset(&am, 0, sizeof am);   /* reported when its row is written */
		asked = asked_task(&am);
		if (!fs[n].src) {
			rs[n].status = CHECK_FORMAT_ERROR;
			snprintf(rs[n].detail, sizeof rs[n].detail, "%s", fs[n].error);
			snprintf(tnames[n], sizeof tnames[n], "%s",
				 row_task(&fs[n], asked ? asked : dflt, asked != NULL));
			cr_text_escape_inplace(tnames[n], sizeof tnames[n]);
		} else {
			snprintf(rs[n].sha256, sizeof rs[n].sha256, "%s", fs[n].sha256);
			if ((st = task_for(&fs[n], NULL, asked ? asked : dflt, asked != NULL, tasks,
					   n_tasks, &rs[n], tnames[n], sizeof tnames[n], &t, err)))
				goto out;
			if (t)
				tidx[n] = (int)(t - *tasks);
		}
		n++;
	}
	/* task pointers only now: the array may move while tasks load */
	for (int i = 0; i < n; i++) {
		if (tidx[i] >= 0 && !fs[i].parsed) {
			/* a task named (by @task, the sidecar or --tasks) but the
			 * directives do not parse: its parse error, never "compiled" */
			rs[i].status = CHECK_FORMAT_ERROR;
			snprintf(rs[i].detail, sizeof rs[i].detail, "%s", fs[i].error);
			continue;
		}
		if (tidx[i] < 0)
			continue;
		jobs[m] = (struct check_cuda_job){ .t = &(*tasks)[tidx[i]], .path = fs[i].path,
						   .src = fs[i].src, .len = fs[i].len, .cand = fs[i].cand,
						   .r = rs[i] };
		memset(&fs[i].cand, 0, sizeof fs[i].cand);   /* moved into the job */
		fs[i].parsed = false;
		of[m++] = i;
	}
	fprintf(stderr, "crucible eval: compiling %d CUDA candidate(s) for %s with NVRTC\n", n,
		check_cuda_arch(o->arch));
	st = check_cuda_compile_many(jobs, m, &co, 0, err);
	for (int k = 0; k < m; k++)
		rs[of[k]] = jobs[k].r;
	for (int i = 0; i < n; i++) {
		if (rs[i].status == CHECK_OK)
			rs[i].status = CHECK_COMPILED;   /* built, never run: not "ok" */
		cr_text_escape_inplace(rs[i].detail, sizeof rs[i].detail);
		cr_text_escape_inplace(tnames[i], sizeof tnames[i]);
	}
	if (st || !res) /* !res: only warming the compile cache for a run on the GPU */
		goto out;
	for (int i = 0; i < n; i++) {
		struct cr_row row;
		const char *want;
		bool bad;
		if (cr_meta_read(fs[i].path, &meta, err)) {
			fprintf(stderr, "crucible eval: %s\n", err->msg);
			cr_err_init(err);
			memset(&meta, 0, sizeof meta);
		} else if (meta.bad[0]) {
			fprintf(stderr, "crucible eval: %s\n", meta.bad);
		}
		row = (struct cr_row){ .run_id = run_id, .task = tnames[i], .candidate = fs[i].path, .verify_s = NAN,
				       .backend = "cuda", .device = device, .r = &rs[i], .m = &meta,
				       .verify_seed = o->seed_str, .label = o->label };
		if ((st = cr_results_write(res, &row, err)))
			goto out;
		(*done)++;
		if (prog)
			eval_progress_clear(prog);   /* the row goes where the line was */
		want = meta.expect_compile[0] ? meta.expect_compile : "";
		bad = o->check_expect && want[0] && strcmp(want, check_verdict_name(rs[i].status));
		*unexpected += bad;
		char s1[300], s2[1100];
		printf("%-22s %-34s %-16s %-8s %-22s %.*s%s\n", safe(tnames[i], s1, sizeof s1),
		       safe(strrchr(fs[i].path, '/') ? strrchr(fs[i].path, '/') + 1 : fs[i].path, s2,
			    sizeof s2),
		       check_verdict_name(rs[i].status), rs[i].backward, "-", 90, rs[i].detail,
		       bad ? "  <-- UNEXPECTED" : "");
		if (bad)
			printf("%-22s   expected compile status %s\n", "", want);
		if (prog) {
			fflush(stdout);
			eval_progress_finished(prog, 0, fs[i].path, (int)rs[i].status);
		}
	}
	fflush(stdout);
out:
	for (int i = 0; fs && i < n; i++)
		cr_cand_file_release(&fs[i]);
	free(fs);
	free(tnames);
	free(tidx);
	free(rs);
	free(jobs);
	free(of);
	return st;
}

static int check_compile_only(const char *path, const char *task_override,
			      const struct eval_opts *o)
{
	struct task *tasks = NULL;
	int n_tasks = 0, rc;
	struct cr_result r;
	struct cr_err err;
	char tname[256];
	struct cr_cand_file f;
	const struct task *t;
	struct cr_cuda_opts co = { .arch = check_cuda_arch(o->arch), .timeout_s = 60 };

	cr_cand_load(&f, path);
	if (!f.src) {
		fprintf(stderr, "crucible check: %s\n", f.error);
		return 2;
	}
	cr_result_init(&r);
	snprintf(r.sha256, sizeof r.sha256, "%s", f.sha256);
	cr_err_init(&err);
	if (task_for(&f, task_override, NULL, false, &tasks, &n_tasks, &r, tname, sizeof tname, &t,
		     &err))
		goto fail;
	if (t && !f.parsed) {
		r.status = CHECK_FORMAT_ERROR;
		snprintf(r.detail, sizeof r.detail, "%s", f.error);
	} else if (t) {
		struct check_cuda_job j = { .t = t, .path = path, .src = f.src, .len = f.len,
					    .cand = f.cand, .r = r };
		memset(&f.cand, 0, sizeof f.cand);
		f.parsed = false;
		if (check_cuda_compile_many(&j, 1, &co, 1, &err))
			goto fail;
		r = j.r;
		if (r.status == CHECK_OK)
			r.status = CHECK_COMPILED;
	}
	cr_text_escape_inplace(r.detail, sizeof r.detail);
	char s1[300], s2[1100];
	printf("candidate   %s\ntask        %s\nbackend     cuda, compile only (%s)\nstatus      %s\n",
	       safe(path, s2, sizeof s2), tname[0] ? safe(tname, s1, sizeof s1) : "?",
	       check_cuda_arch(o->arch), check_verdict_name(r.status));
	if (r.detail[0])
		printf("detail      %s\n", r.detail);
	printf("sha256      %s\n", r.sha256);
	cr_cand_file_release(&f);
	task_list_free(tasks, n_tasks);
	return r.status == CHECK_COMPILED ? 0 : 1;
fail:
	fprintf(stderr, "crucible check: %s\n", err.msg);
	rc = cr_status_exit_code(err.status);
	cr_cand_file_release(&f);
	task_list_free(tasks, n_tasks);
	return rc;
}

/* What a finished candidate needs to become a row: shared by the one-by-one
 * loop and the --jobs pool's callback (eval_jobs.h). */
struct eval_emit {
	const struct eval_opts *o;
	const char *run_id, *device;
	FILE *res, *samples;
	struct cands *cs;
	struct eval_progress *prog;
	struct eval_jobs *pool;     /* --jobs: how many are in flight */
	struct cr_meta *metas;     /* --jobs: the sidecar of each candidate, by index */
	int done, unexpected;      /* done counts the cuda compile-only rows too */
	int verified;              /* rows written here: what cost and verify_s sum over */
	struct cr_cost cost;
	struct machine_tally tally;
	double verify_s;
};

static enum cr_status emit_row(struct eval_emit *x, const char *cand, const struct cr_meta *m,
			       const struct cr_result *r, const char *tname, double verify_s,
			       struct cr_err *err)
{
	const struct eval_opts *o = x->o;
	const struct cr_gpu *gpu = o->cuda ? eval_gpus_find(&o->gpus, r->gpu) : NULL;
	struct cr_row row = { .run_id = x->run_id, .task = tname, .candidate = cand,
			      .verify_s = verify_s, .backend = o->cuda ? "cuda" : "cpu",
			      .device = gpu ? gpu->desc : x->device, .r = r, .m = m,
			      .verify_seed = o->seed_str, .label = o->label,
			      .gpu_uuid = gpu ? gpu->uuid : NULL };
	char sb[1100], sp[64];
	bool bad;

	if (cr_results_write(x->res, &row, err) || cr_samples_write(x->samples, cand, r, err))
		return err->status;
	x->done++;
	x->verified++;
	x->verify_s += verify_s;
	x->cost.prepare_s += r->cost.prepare_s;
	x->cost.stages_s += r->cost.stages_s;
	x->cost.cases_s += r->cost.cases_s;
	x->cost.worker_start_s += r->cost.worker_start_s;
	x->cost.timing_s += r->cost.timing_s;
	x->cost.timing_wait_s += r->cost.timing_wait_s;
	x->cost.cases_reused += r->cost.cases_reused;
	x->cost.cases_computed += r->cost.cases_computed;
	x->cost.cond_s += r->cost.cond_s;
	x->cost.cases_cond += r->cost.cases_cond;
	x->cost.cond_rounds += r->cost.cond_rounds;
	machine_tally_add(&x->tally, r);
	bad = o->check_expect && m->expect[0] && strcmp(m->expect, check_verdict_name(r->status));
	eval_progress_clear(x->prog); /* the row goes where the progress line was */
	x->unexpected += bad;
	printf("%-22s %-34s %-16s %-8s %-22s %.*s%s\n", tname,
	       safe(strrchr(cand, '/') ? strrchr(cand, '/') + 1 : cand, sb, sizeof sb),
	       check_verdict_name(r->status), r->backward, fmt_speed(r, sp, sizeof sp), 70,
	       r->detail, bad ? "  <-- UNEXPECTED" : "");
	if (bad)
		printf("%-22s   expected status %s\n", "", m->expect);
	fflush(stdout);
	eval_progress_finished(x->prog, x->pool ? eval_jobs_in_flight(x->pool) : 0, cand, (int)r->status);
	return CR_OK;
}

/* --jobs: the progress line's clock while the jobs work. */
static void progress_tick(void *ctx)
{
	struct eval_emit *x = ctx;

	eval_progress_tick(x->prog, eval_jobs_in_flight(x->pool));
}

/* --jobs: what a job process works from (its own copy, by fork). */
struct eval_job_in {
	struct cands *cs;
	struct task **tasks;
	int *n_tasks;
	struct eval_opts *o;
	const char *workroot;
};

/* In a job: candidate cmd->idx read, hashed and parsed (as the one-by-one
 * loop does), then verified; cmd->arg is its fallback task name. */
static void eval_job(const struct eval_job_cmd *cmd, void *ctx, struct eval_job_msg *out)
{
	struct eval_job_in *in = ctx;
	struct cr_cand_file cf;
	struct cr_err e;
	int64_t t0 = cr_now_ns();

	cr_err_init(&e);
	cr_cand_load(&cf, in->cs->paths[cmd->idx]);
	out->st = verify_one(&cf, NULL, cmd->arg[0] ? cmd->arg : NULL, cmd->asked, in->tasks,
			     in->n_tasks, in->o,
			     in->workroot, &out->r, out->tname, sizeof out->tname, &e);
	cr_cand_file_release(&cf);
	if (out->st)
		snprintf(out->err, sizeof out->err, "%s", e.msg);
	out->verify_s = (double)(cr_now_ns() - t0) / 1e9;
}

static enum cr_status eval_job_done(const struct eval_job_msg *msg, void *ctx, struct cr_err *err)
{
	struct eval_emit *x = ctx;
	struct eval_opts *o = (struct eval_opts *)x->o;

	if (!o->sandbox_seen[0] && msg->r.sandbox[0])
		snprintf(o->sandbox_seen, sizeof o->sandbox_seen, "%s", msg->r.sandbox);
	return emit_row(x, x->cs->paths[msg->idx], &x->metas[msg->idx], &msg->r, msg->tname,
			msg->verify_s, err);
}

int cr_cmd_eval(int argc, char **argv)
{
	struct eval_opts o = { .out = "crucible-out", .timeout = 5, .time_cap = 1,
			       .job_timing = EJ_SERIAL };
	struct eval_jobs *pool = NULL;
	struct eval_emit emit = { 0 };
	struct eval_job_in job_in = { 0 };
	struct cands cs = { 0 };
	struct task *tasks = NULL, *filter = NULL;
	int n_tasks = 0, n_filter = 0, rc = 0, unexpected = 0, skipped = 0, done = 0;
	int filtered = 0, resumed = 0, n_all = 0;
	char **keys = NULL, path[1024], run_id[64], device[256], *workroot = NULL;
	int n_keys = 0, lock_fd = -1, dropped = 0;
	bool sort_failed = false;
	struct eval_progress prog = { 0 };
	const char *dummy = NULL;
	struct cr_err err;
	FILE *res = NULL, *samples = NULL;
	bool defaulted = false;
	enum cr_backend backend = CR_BACKEND_CPU;
	int prc = parse_common(argc, argv, &o, &dummy, false);
	double la[1] = { NAN };

	if (prc)
		return prc < 0 ? 0 : prc;
	o.argc = argc;
	o.argv = argv;
	getloadavg(la, 1);
	o.load_start = la[0];
	machine_snap(&o.snap0);
	if (dummy)
		return cr_cli_usage("eval", "--task is for `crucible check`; use --tasks");
	cr_utc_now(o.started);
	if ((rc = cr_backend_pick(o.backend, o.compile_only, &backend, "crucible eval")))
		return rc;
	if (o.lock_clocks && (backend != CR_BACKEND_CUDA || o.compile_only)) {
		return cr_cli_usage("eval", "--lock-clocks is for timing on the GPU (--backend cuda)");
	}
	if (o.gpus_arg && (backend != CR_BACKEND_CUDA || o.compile_only)) {
		return cr_cli_usage("eval", "--gpus %s: devices are for running .cu candidates on the "
				    "GPU (--backend cuda), not for %s", o.gpus_arg,
				    o.compile_only ? "--compile-only" : "the cpu backend");
	}
	settle_seed(&o);
	cr_err_init(&err);
	if (optind >= argc) {
		snprintf(path, sizeof path, "%s/candidates/%s", task_datadir(),
			 backend == CR_BACKEND_CUDA ? "smoke-cuda" : "smoke");
		defaulted = true;
		o.check_expect = true;
		if (collect(&cs, path, 0, &err))
			goto fail;
	}
	for (int i = optind; i < argc; i++)
		if (collect(&cs, argv[i], 0, &err))
			goto fail;
	if ((dropped = dedupe(&cs)))
		fprintf(stderr, "crucible eval: %d name(s) of a file already named, counted once\n", dropped);
	if (backend == CR_BACKEND_CUDA && !o.compile_only && backend_auto(&o)) {
		/* auto chose the GPU: unless there is a .cu candidate, run the .c ones on the cpu */
		bool any_cu = false;
		for (int i = 0; i < cs.n; i++)
			any_cu |= has_ext(cs.paths[i], ".cu");
		if (!any_cu && cs.n > 0) {
			fprintf(stderr, "crucible eval: backend auto: no .cu candidate, using cpu\n");
			backend = CR_BACKEND_CPU;
			if (o.gpus_arg) {
				fprintf(stderr, "crucible eval: --gpus %s: no .cu candidate to run on them "
					"(the run would be on the cpu backend)\n", o.gpus_arg);
				rc = 2;
				goto out;
			}
		}
	}
	if (backend == CR_BACKEND_CUDA && !o.compile_only &&
	    ((rc = cuda_setup(&o, device, sizeof device, "crucible eval")) || (rc = cuda_lock(&o, "crucible eval"))))
		goto out;
	if (o.tasks && task_registry_load(o.tasks, &filter, &n_filter, &err)) {
		if (err.status != CR_EINPUT)
			goto fail;
		rc = cr_cli_usage("eval", "--tasks: %s", err.msg);
		goto out;
	}
	n_all = cs.n;
	/* what this run saw, before --shard keeps its part (merge compares) */
	o.seen_n = cs.n;
	candidates_seen(&cs, filter, n_filter, o.seen_sha);
	if (o.shard_n) {
		/* after the backend is settled on the whole set: every shard picks the same */
		shard_filter(&cs, &o, filter, n_filter);
		fprintf(stderr, "crucible eval: --shard %s: %d of the %d candidate(s)%s\n", o.shard_str,
			cs.n, n_all, cs.n ? "" : "; none fell in this shard (not an error: the shards of a "
			"small set can be empty)");
	}
	/* made with its parents, and this run's alone until it ends */
	if (cr_out_lock(o.out, "eval", &lock_fd, &err)) {
		if (err.status == CR_EUSAGE) {
			cr_cli_error("eval", "%s", err.msg);
			rc = CR_EXIT_USAGE;
			goto out;
		}
		goto fail;
	}
	if (holds_run(o.out)) {
		/* its results.csv, run.json and cand/ are the search's: an eval
		 * there would replace them and leave a folder of neither */
		rc = cr_cli_usage("eval", "%s holds a crucible run (its run.json): choose another --out",
				  o.out);
		goto out;
	}
	snprintf(path, sizeof path, "%s/results.csv", o.out);
	if (o.resume && (rc = resume_check(&o)))
		goto out;
	if (o.resume) {
		/* drop a row cut short by a kill, then collect finished keys */
		cr_csv_drop_partial_row(path);
		if (eval_out_unreadable(path)) {
			char moved[1200], sp[1100];

			snprintf(sp, sizeof sp, "%s/samples.csv", o.out);
			if (eval_out_keep_aside(path, sp, moved, sizeof moved, &err))
				goto fail;
			fprintf(stderr, "crucible eval: --resume: %s cannot be read (not CSV, or not a "
				"results file): kept aside as %s; starting afresh\n", path, moved);
		}
		if (cr_results_done_keys(path, &keys, &n_keys, &err))
			goto fail;
	} else {
		struct stat sb;
		if (!stat(path, &sb)) {
			char old[1100];
			snprintf(old, sizeof old, "%s.prev", path);
			rename(path, old);
			fprintf(stderr, "crucible eval: previous %s kept as %s\n", path, old);
		}
	}
	if (cr_results_open(path, &res, &err))
		goto fail;
	{
		char sp[1100];
		snprintf(sp, sizeof sp, "%s/samples.csv", o.out);
		if (!o.resume) {
			/* results.csv went to .prev: its samples go with it */
			char old[1200];
			snprintf(old, sizeof old, "%s.prev", sp);
			rename(sp, old);
		}
		if (cr_samples_open(sp, &samples, &err))
			goto fail;
	}
	workroot = eval_workroot_new();
	if (!workroot) {
		cr_errf(&err, CR_EENV, "cannot create a work folder under %s: %s", eval_tmp_base(), strerror(errno));
		goto fail;
	}
	job_in = (struct eval_job_in){ .cs = &cs, .tasks = &tasks, .n_tasks = &n_tasks, .o = &o,
				       .workroot = workroot };
	if (!o.jobs)
		o.jobs = o.compile_only ? 1 : eval_jobs_cores();
	if (o.cuda && o.jobs < o.gpus.n)
		o.jobs = o.gpus.n;          /* by default every device gets a job */
	if (o.cuda && o.job_timing == EJ_PINNED)
		o.job_timing = EJ_SERIAL;   /* a device times one candidate at a time */
	/* every job may hold two workers (candidate and baseline): their task
	 * quotas together must fit what the host allows, or one worker's full
	 * quota would fail a neighbour's start (docs/VERIFIER.md) */
	if (cr_cg_available() && cr_cg_plan(2 * o.jobs) < 0) {
		cr_errf(&err, CR_EENV, "%s", cr_cg_mode());
		goto fail;
	}
	/* Ctrl-C and SIGTERM from here on: stop taking candidates, keep the
	 * rows written (before the jobs fork: they inherit it, then set their own) */
	eval_signals_install();
	if (o.jobs > 1 && (backend == CR_BACKEND_CPU || o.cuda)) {
		/* the jobs are forked now: the options they read are final */
		vr_ref_cache_share(o.jobs);
		eval_jobs_private_fd(lock_fd);
		if (eval_jobs_open(&pool, o.jobs, (enum eval_job_timing)o.job_timing,
				   o.cuda ? o.gpus.n : 0, workroot, eval_job, &job_in, &err))
			goto fail;
		eval_jobs_stop_on(pool, eval_stop_flag());
		o.job_timing = (int)eval_jobs_mode(pool);
		o.job_cpusets = eval_jobs_cpusets(pool);
		fprintf(stderr, "crucible eval: --jobs %d, timing %s, cores %s\n", o.jobs,
			eval_job_timing_names[o.job_timing], o.job_cpusets);
		if (o.cuda && o.gpus.n > 1) {
			char list[256];
			eval_gpus_str(&o.gpus, list, sizeof list);
			fprintf(stderr, "crucible eval: --gpus %s: job i on device i mod %d of the list, "
				"one timing stage per device at a time\n", list, o.gpus.n);
		}
	} else {
		o.jobs = 1;
	}
	snprintf(run_id, sizeof run_id, "%lld-%d", (long long)time(NULL), (int)getpid());
	if (!o.cuda)
		cpu_model(device, sizeof device);
	write_run_json(o.out, run_id, &o, device, 0, "", NULL, workroot, false);
	printf("%-22s %-34s %-16s %-8s %-22s %s\n", "task", "candidate", "status", "backward",
	       "speedup [95% in run]", "detail");
	eval_progress_start(&prog, 0);   /* the count once known; the clock from now */
	if (o.cuda) {
		/* NVRTC in parallel (a pool sized to the cores) before the one-at-a-time
		 * runs, which then take their cubins from the compile cache */
		struct eval_opts oc = o;
		int d0 = 0, u0 = 0;
		oc.arch = o.dev_arch;
		if (eval_cuda_compile(&cs, &oc, n_filter == 1 ? filter[0].name : NULL, &tasks,
				      &n_tasks, run_id, NULL, &d0, &u0, NULL, &err))
			goto fail;
	}
	if (backend == CR_BACKEND_CUDA && !o.cuda) {
		int unexp = 0;
		compile_only_select(&cs, filter, n_filter, keys, n_keys, &filtered, &resumed);
		for (int i = 0; i < cs.n; i++)
			prog.n += has_ext(cs.paths[i], ".cu");
		if (eval_cuda_compile(&cs, &o, n_filter == 1 ? filter[0].name : NULL, &tasks,
				      &n_tasks, run_id, res, &done, &unexp, &prog, &err))
			goto fail;
		unexpected += unexp;
	}
	emit = (struct eval_emit){ .o = &o, .run_id = run_id, .device = device, .res = res,
				   .samples = samples, .cs = &cs, .done = done, .unexpected = unexpected,
				   .prog = &prog, .pool = pool };
	if (pool)
		eval_jobs_on_tick(pool, progress_tick, &emit);
	if (backend == CR_BACKEND_CPU || o.cuda)
		prog.n = count_todo(&cs, o.cuda, filter, n_filter, o.resume ? keys : NULL,
				    o.resume ? n_keys : 0);
	if (pool && !(emit.metas = calloc((size_t)(cs.n ? cs.n : 1), sizeof *emit.metas))) {
		cr_errf(&err, CR_ENOMEM, "out of memory");
		goto fail;
	}
	for (int i = 0; (backend == CR_BACKEND_CPU || o.cuda) && i < cs.n && !eval_interrupted(); i++) {
		struct cr_result r;
		struct cr_meta m;
		char tname[256];
		const char *cand = cs.paths[i];
		struct cr_cand_file cf;
		enum cr_status st_one;

		if (has_ext(cand, ".cu") != o.cuda) {
			skipped++;
			continue;
		}
		if (cr_meta_read(cand, &m, &err)) {
			eval_progress_clear(&prog);
			fprintf(stderr, "crucible eval: %s\n", err.msg);
			cr_err_init(&err);
			memset(&m, 0, sizeof m);
		} else if (m.bad[0]) {
			eval_progress_clear(&prog);
			fprintf(stderr, "crucible eval: %s\n", m.bad);
		}
		/* the file is read, hashed and parsed once; that travels on */
		cr_cand_load(&cf, cand);
		if (!in_tasks(&cf, &m, filter, n_filter)) {
			filtered++;
			cr_cand_file_release(&cf);
			continue;
		}
		if (o.resume && n_keys && in_results(cand, &cf, keys, n_keys)) {
			char sb[1024];
			eval_progress_clear(&prog);
			fprintf(stderr, "[%d/%d] %s: already in results.csv, skipped (--resume)\n",
				i + 1, cs.n, safe(cand, sb, sizeof sb));
			resumed++;
			cr_cand_file_release(&cf);
			continue;
		}
		const char *fallback = fallback_of(&m, filter, n_filter);
		const bool asked = asked_task(&m) != NULL;
		if (pool) {
			/* the task is loaded here, so every job inherits it and run.json
			 * names it; a broken task file is the run's error, as without --jobs */
			const struct task *tp;
			char sb[1100];
			struct eval_job_cmd jc = { .idx = i };
			snprintf(jc.arg, sizeof jc.arg, "%s", fallback ? fallback : "");
			jc.asked = asked;
			cr_result_init(&r);
			if (cf.src && task_for(&cf, NULL, fallback, jc.asked, &tasks, &n_tasks, &r, tname,
					       sizeof tname, &tp, &err)) {
				cr_cand_file_release(&cf);
				goto fail;
			}
			emit.metas[i] = m;
			st_one = eval_jobs_submit(pool, &jc,
						  safe(strrchr(cand, '/') ? strrchr(cand, '/') + 1 : cand,
						       sb, sizeof sb),
						  eval_job_done, &emit, &err);
			cr_cand_file_release(&cf);
			if (st_one)
				goto fail;
			if (eval_jobs_stopped(pool))
				break;   /* not handed out: the run is stopping */
			eval_progress_started(&prog, eval_jobs_in_flight(pool), cand);
			continue;
		}
		eval_progress_started(&prog, 1, cand);
		int64_t t0 = cr_now_ns();
		st_one = verify_one(&cf, NULL, fallback, asked, &tasks, &n_tasks, &o,
				    workroot, &r, tname,
				    sizeof tname, &err);
		cr_cand_file_release(&cf);
		if (st_one)
			goto fail;
		if (!o.sandbox_seen[0] && r.sandbox[0])
			snprintf(o.sandbox_seen, sizeof o.sandbox_seen, "%s", r.sandbox);
		if (emit_row(&emit, cand, &m, &r, tname, (double)(cr_now_ns() - t0) / 1e9, &err))
			goto fail;
	}
	if (pool && eval_jobs_drain(pool, eval_job_done, &emit, &err))
		goto fail;
	done = emit.done;
	unexpected = emit.unexpected;
	eval_progress_clear(&prog);
	o.stopped_by = eval_interrupted();
	if (skipped && o.cuda)
		fprintf(stderr, "crucible eval: %d C candidate(s) (.c) not run: the cuda backend runs .cu candidates "
				"(--backend cpu runs them)\n", skipped);
	else if (skipped)
		fprintf(stderr, "crucible eval: %d CUDA candidate(s) (.cu) not run: the cpu backend runs .c candidates "
				"(--backend cuda --compile-only gives their compile verdicts)\n", skipped);
	if (emit.verified) {
		const struct cr_cost *c = &emit.cost;
		double n = emit.verified;
		fprintf(stderr, "crucible eval: per candidate: %.2f s verifying: bind+compile %.2f s, "
				"correctness %.2f s (cases %.2f s: %d of %d from the reference cache; "
				"worker starts %.2f s; conditioning of %d failing cases, %d measurements, %.2f s), "
				"timing %.2f s (+ %.2f s waiting for the timing lock)\n",
			emit.verify_s / n, c->prepare_s / n, c->stages_s / n, c->cases_s / n,
			c->cases_reused, c->cases_reused + c->cases_computed, c->worker_start_s / n,
			c->cases_cond, c->cond_rounds, c->cond_s / n, c->timing_s / n, c->timing_wait_s / n);
		o.cost = emit.cost;
		o.tally = emit.tally;
		o.cost_n = emit.verified;
		o.cost_verify_s = emit.verify_s;
	}
	fclose(res);
	res = NULL;
	if (samples)
		fclose(samples);
	samples = NULL;
	{
		/* rows sorted by (task, candidate), so two runs diff line by line */
		char sp[1100];

		snprintf(sp, sizeof sp, "%s/samples.csv", o.out);
		if (eval_out_sort(path, sp, &err)) {
			fprintf(stderr, "crucible eval: %s (the rows are all there, in the order they finished)\n", err.msg);
			cr_err_init(&err);
			sort_failed = true;
		}
	}
	{
		/* the task set actually used: a hash over the files, in name order */
		char h[65];
		task_set_hash(tasks, n_tasks, h);
		json_t *th = task_hashes(tasks, n_tasks);
		char line[600];
		machine_snap(&o.snap1);
		write_run_json(o.out, run_id, &o, device, n_tasks, h, th, workroot, true);
		json_decref(th);
		/* once per run: what the machine was like, and what it did to
		 * the figures (the rows it made untrustworthy say so each) */
		json_decref(machine_json(&o.snap0, &o.snap1, &o.tally, o.jobs, line, sizeof line));
		if (o.tally.rows)
			fprintf(stderr, "crucible eval: machine %s\n", line);
	}
	if ((done > 0 || n_keys > 0) && (backend == CR_BACKEND_CPU || o.cuda)) {
		printf("\n");
		fflush(stdout);
		report_print_summary(path, stdout);
	}
	if (o.check_expect && unexpected) {
		fprintf(stderr, "crucible eval: %d candidate(s) did not get their expected status\n", unexpected);
		rc = 1;
	}
	if (defaulted && !unexpected)
		fprintf(stderr, "crucible eval: every bundled sample got its expected status\n");
	fprintf(stderr, "crucible eval: %d candidate(s) evaluated, results in %s\n", done, path);
	if (o.stopped_by) {
		eval_progress_close(&prog, resumed);
		fprintf(stderr, "crucible eval: interrupted after %d of %d: rerun with --resume\n",
			prog.done, prog.n);
		rc = 128 + o.stopped_by;
		goto out;
	}
	if (done == 0 && resumed == 0 && o.shard_n && n_all > 0) {
		/* a shard's share of a set may be empty or all filtered: merge judges the whole */
		fprintf(stderr, "crucible eval: --shard %s: nothing evaluated in this shard (%d of %d "
				"candidate(s) fell in it); crucible merge exits 5 when no shard has a row\n",
			o.shard_str, cs.n, n_all);
	} else if (done == 0 && resumed == 0) {
		/* nothing evaluated is not success (SPEC §1: exit 5, as pytest) */
		if (cs.n == 0)
			fprintf(stderr, "crucible eval: nothing evaluated: no candidate file (.c, .cu) under the paths given\n");
		else if (filtered && filtered + skipped == cs.n)
			fprintf(stderr, "crucible eval: nothing evaluated: --tasks %s matched none of the %d candidate(s)%s\n",
				o.tasks, cs.n, skipped ? " of this backend" : "");
		else
			fprintf(stderr, "crucible eval: nothing evaluated: the %d candidate(s) are all for the other backend\n",
				cs.n);
		rc = 5;
	}
	if (done > 0 || resumed > 0)
		eval_progress_close(&prog, resumed);
	if (sort_failed && !rc)
		rc = CR_EXIT_ENV;
	goto out;
fail:
	fprintf(stderr, "crucible eval: %s\n", err.msg);
	rc = cr_status_exit_code(err.status);
out:
	eval_jobs_close(pool);
	/* the run's task reservation, once its jobs (and their workers) are gone */
	cr_cg_unplan();
	cr_cg_sweep();
	free(emit.metas);
	cuda_unlock(&o, "crucible eval");
	if (res)
		fclose(res);
	if (samples)
		fclose(samples);
	cr_out_unlock(lock_fd);
	if (workroot) {
		rmdir(workroot);
		free(workroot);
	}
	for (int i = 0; i < cs.n; i++)
		free(cs.paths[i]);
	free(cs.paths);
	for (int i = 0; i < n_keys; i++)
		free(keys[i]);
	free(keys);
	task_list_free(tasks, n_tasks);
	task_list_free(filter, n_filter);
	return rc;
}

/* check's worst element (struct cr_worst), one line: where, then got,
 * expected and the errors; got and expected in full, so they differ by abs. */
static void worst_line(const struct cr_worst *w, char *buf, size_t cap)
{
	char sb[200];
	snprintf(buf, cap, "%s {%s} %s '%s'[%lld]: got %.9g expected %.9g abs %.3g rel %.3g", w->stage,
		 w->shape, w->profile, safe(w->output, sb, sizeof sb), w->index, w->got, w->expected,
		 w->abs_err, w->rel_err);
}

/* The same as check --json's "worst" object (null: nothing compared); a
 * NaN or infinite figure is null. */
static json_t *worst_json(const struct cr_worst *w)
{
	json_t *j;
	if (!w->set)
		return json_null();
	j = json_object();
	json_object_set_new(j, "stage", json_string(w->stage));
	json_object_set_new(j, "shape", jstr(w->shape));
	json_object_set_new(j, "profile", json_string(w->profile));
	json_object_set_new(j, "output", jstr(w->output));
	json_object_set_new(j, "index", json_integer((json_int_t)w->index));
#define JNUM(k, x) json_object_set_new(j, k, isfinite(x) ? json_real(x) : json_null())
	JNUM("got", w->got);
	JNUM("expected", w->expected);
	JNUM("abs_err", w->abs_err);
	JNUM("rel_err", w->rel_err);
#undef JNUM
	return j;
}

int cr_cmd_check(int argc, char **argv)
{
	struct eval_opts o = { .timeout = 5, .time_cap = 1 };
	const char *task = NULL;
	struct task *tasks = NULL;
	int n_tasks = 0, rc;
	struct cr_result r;
	struct cr_err err;
	char canon_task[256];
	char tname[256], *workroot;
	int prc = parse_common(argc, argv, &o, &task, true);

	if (prc)
		return prc < 0 ? 0 : prc;
	if (optind != argc - 1)
		return cr_cli_usage("check", optind >= argc ? "give one candidate FILE" :
				    "one candidate at a time ('%s' is one too many)", argv[optind + 1 < argc ? optind + 1 : optind]);
	if (task) {
		/* an unknown --task is a usage error, not the candidate's format_error */
		struct cr_err te;

		cr_err_init(&te);
		if (task_registry_resolve(task, canon_task, sizeof canon_task, &te))
			return te.status == CR_EINPUT || te.status == CR_EUSAGE ?
				cr_cli_usage("check", "--task: %s", te.msg) : cr_cli_status("check", &te);
		task = canon_task;
	}
	enum cr_backend backend;
	if ((rc = cr_backend_pick(o.backend, o.compile_only, &backend, "crucible check")))
		return rc;
	if (o.lock_clocks && (backend != CR_BACKEND_CUDA || o.compile_only)) {
		return cr_cli_usage("check", "--lock-clocks is for timing on the GPU (--backend cuda)");
	}
	if (backend == CR_BACKEND_CUDA && o.compile_only)
		return check_compile_only(argv[optind], task, &o);
	if (backend == CR_BACKEND_CUDA && backend_auto(&o) && !has_ext(argv[optind], ".cu"))
		backend = CR_BACKEND_CPU; /* auto: a .c candidate runs on the cpu */
	if (backend == CR_BACKEND_CUDA) {
		char device[256];
		/* one candidate, one device: the driver's device 0 */
		o.gpus.n_list = 1;
		o.gpus.list[0] = 0;
		if ((rc = cuda_setup(&o, device, sizeof device, "crucible check")))
			return rc;
		if (!has_ext(argv[optind], ".cu")) {
			fprintf(stderr, "crucible check: %s is a C candidate; the cuda backend runs .cu candidates "
					"(--backend cpu runs it)\n", argv[optind]);
			return 3;
		}
	} else if (has_ext(argv[optind], ".cu")) {
		fprintf(stderr, "crucible check: %s is a CUDA candidate; the cpu backend runs .c candidates "
				"(--compile-only gives its compile verdict)\n", argv[optind]);
		return 3;
	}
	/* read once, here: a file that is not one (a link, a FIFO, too big) is
	 * bad input naming it, not a verdict */
	struct cr_cand_file cf;
	cr_cand_load(&cf, argv[optind]);
	if (!cf.src) {
		fprintf(stderr, "crucible check: %s\n", cf.error);
		return 2;
	}
	settle_seed(&o);
	cr_err_init(&err);
	if (cr_cg_available() && cr_cg_plan(2) < 0) {
		fprintf(stderr, "crucible check: %s\n", cr_cg_mode());
		cr_cand_file_release(&cf);
		return 3;
	}
	workroot = eval_workroot_new();
	if (!workroot) {
		fprintf(stderr, "crucible check: cannot create a temporary directory\n");
		cr_cand_file_release(&cf);
		return 3;
	}
	if ((rc = cuda_lock(&o, "crucible check"))) {
		rmdir(workroot);
		free(workroot);
		cr_cand_file_release(&cf);
		return rc;
	}
	enum cr_status st_one = verify_one(&cf, task, NULL, false, &tasks, &n_tasks, &o, workroot,
					   &r, tname,
					   sizeof tname, &err);
	cr_cand_file_release(&cf);
	cuda_unlock(&o, "crucible check");
	if (st_one) {
		fprintf(stderr, "crucible check: %s\n", err.msg);
		rmdir(workroot);
		free(workroot);
		cr_cg_unplan();
		task_list_free(tasks, n_tasks);
		return cr_status_exit_code(err.status);
	}
	rmdir(workroot);
	free(workroot);
	cr_cg_unplan();
	if (o.json) {
		json_t *j = json_object();
		json_object_set_new(j, "candidate", jstr(argv[optind]));
		json_object_set_new(j, "task", jstr(tname));
		json_object_set_new(j, "status", json_string(check_verdict_name(r.status)));
		json_object_set_new(j, "backward", json_string(r.backward));
		json_object_set_new(j, "detail", jstr(r.detail));
#define JNUM(k, x) json_object_set_new(j, k, isnan(x) ? json_null() : json_real(x))
		JNUM("max_abs_err", r.max_abs_err);
		JNUM("max_rel_err", r.max_rel_err);
		JNUM("err_vs_baseline", r.err_vs_baseline);
		JNUM("time_us", r.time_us);
		JNUM("time_lo_us", r.time_lo_us);
		JNUM("time_hi_us", r.time_hi_us);
		JNUM("baseline_us", r.baseline_us);
		JNUM("speedup", r.speedup);
		JNUM("speedup_lo", r.speedup_lo);
		JNUM("speedup_hi", r.speedup_hi);
#undef JNUM
		json_object_set_new(j, "worst", worst_json(&r.worst));
		json_object_set_new(j, "samples", json_integer(r.samples));
		json_object_set_new(j, "noisy", json_boolean(r.noisy));
		json_object_set_new(j, "shape", jstr(r.dims));
		json_object_set_new(j, "sha256", json_string(r.sha256));
		json_object_set_new(j, "seed", json_string(o.seed_str));
		json_object_set_new(j, "seed_source", json_string(o.seed_source));
		json_object_set_new(j, "sandbox", sandbox_json(r.sandbox));
		json_object_set_new(j, "cost", json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:i, s:i}",
			"prepare_s", r.cost.prepare_s, "stages_s", r.cost.stages_s,
			"cases_s", r.cost.cases_s, "worker_start_s", r.cost.worker_start_s,
			"timing_s", r.cost.timing_s, "cases_reused", r.cost.cases_reused,
			"cases_computed", r.cost.cases_computed,
			"cond_s", r.cost.cond_s, "cases_cond", r.cost.cases_cond,
			"cond_rounds", r.cost.cond_rounds));
		char *txt = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
		if (txt)
			printf("%s\n", txt);
		free(txt);
		json_decref(j);
		task_list_free(tasks, n_tasks);
		return r.status == CHECK_OK ? 0 : 1;
	}
	char sb[1100];
	printf("candidate   %s\ntask        %s\nstatus      %s\nbackward    %s\n",
	       safe(argv[optind], sb, sizeof sb), tname[0] ? tname : "?", check_verdict_name(r.status),
	       r.backward);
	if (r.detail[0])
		printf("detail      %s\n", r.detail);
	if (!isnan(r.max_abs_err))
		printf("max error   abs %.3g, rel %.3g (%.2fx the f32 baseline's)\n", r.max_abs_err,
		       r.max_rel_err, r.err_vs_baseline);
	if (r.worst.set) {
		char wl[600];
		worst_line(&r.worst, wl, sizeof wl);
		printf("worst       %s\n", wl);
	}
	if (r.timed)
		printf("time        %.2f us [%.2f, %.2f] at %s, %d samples%s\n", r.time_us, r.time_lo_us,
		       r.time_hi_us, r.dims, r.samples, r.noisy ? " (noisy)" : "");
	if (r.timed && !isnan(r.speedup))
		printf("baseline    %.2f us\nspeedup     %.3fx [%.3f, %.3f]\n", r.baseline_us, r.speedup,
		       r.speedup_lo, r.speedup_hi);
	if (r.timed && (!isnan(r.tflops) || !isnan(r.tbps))) {
		printf("achieved    %.3g TFLOP/s, %.3g TB/s", r.tflops, r.tbps);
		if (!isnan(r.roofline))
			printf("; %.1f%% of the device's roofline", 100 * r.roofline);
		printf("\n");
	}
	printf("sha256      %s\n", r.sha256);
	{
		char probe[300];
		if (!r.sandbox[0] && !cr_sandbox_probe(probe, sizeof probe))
			snprintf(r.sandbox, sizeof r.sandbox, "(probed) %s", probe);
		printf("sandbox     worker: %s\n            spawn: %s%s%s; compiler: %s\n",
		       r.sandbox[0] ? r.sandbox : "unknown", cr_proc_ns_level(),
		       cr_proc_ns_why()[0] ? " — missing: " : "", cr_proc_ns_why(), cr_compile_sandbox());
	}
	printf("seed        %s (%s)\n", o.seed_str, !strcmp(o.seed_source, "drawn") ?
	       "drawn for this run; --seed with it reproduces the fixed cases" : o.seed_source);
	task_list_free(tasks, n_tasks);
	return r.status == CHECK_OK ? 0 : 1;
}
