/* cmd_tasks.c — `crucible list`, `crucible dump` and `crucible lint`: the
 * commands that look at the task registry itself. */
#include "harness/cli.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cand/expr.h"
#include "cand/plan.h"
#include "tasks/task_exec.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"
#include "tasks/task_rng.h"

/* Formats a flops/bytes expression at the bench shape ("" when absent). */
static void eval_metric(const struct task *t, const char *text, char *out, size_t cap)
{
	double v;
	if (!text[0])
		out[0] = '\0';
	else if (cr_task_metric(t, text, &t->bench, &v))
		snprintf(out, cap, "%.3g", v);
	else
		snprintf(out, cap, "?");
}

/* Excluded KernelBench problems of a set: data/excluded/<SET>*.json, each an
 * array of {"source", "reason"}. Returns the count, -1 on a malformed file
 * (reported on stderr). */
static int count_excluded(const char *set)
{
	char dir[1024];
	DIR *d;
	struct dirent *e;
	int total = 0;

	snprintf(dir, sizeof dir, "%s/excluded", task_datadir());
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d))) {
		char path[2048];
		json_error_t je;
		json_t *a;
		size_t l = strlen(set), el = strlen(e->d_name);
		if (strncmp(e->d_name, set, l) || (e->d_name[l] != '.' && e->d_name[l] != '-') ||
		    el < 5 || strcmp(e->d_name + el - 5, ".json"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		a = json_load_file(path, 0, &je);
		if (!json_is_array(a)) {
			fprintf(stderr, "crucible list: %s:%d: expected an array of {\"source\", \"reason\"}\n",
				path, je.line);
			json_decref(a);
			total = -1;
			break;
		}
		total += (int)json_array_size(a);
		json_decref(a);
	}
	closedir(d);
	return total;
}

/* Per set: tasks, how many mirror a KernelBench problem, how many of those
 * were repaired, how many problems were excluded. */
static void coverage(const struct task *ts, int n)
{
	char sets[16][TASK_NAME_MAX];
	int ns = 0;
	for (int i = 0; i < n; i++) {
		char set[TASK_NAME_MAX];
		int k;
		snprintf(set, sizeof set, "%.*s", (int)strcspn(ts[i].name, "/"), ts[i].name);
		for (k = 0; k < ns && strcmp(sets[k], set); k++)
			;
		if (k == ns && ns < 16)
			snprintf(sets[ns++], TASK_NAME_MAX, "%s", set);
	}
	printf("\ncoverage: set, tasks, mirroring a KernelBench problem, of those repaired, excluded\n");
	for (int k = 0; k < ns; k++) {
		int tasks = 0, mirrored = 0, repaired = 0;
		size_t l = strlen(sets[k]);
		for (int i = 0; i < n; i++) {
			if (strncmp(ts[i].name, sets[k], l) || ts[i].name[l] != '/')
				continue;
			tasks++;
			mirrored += ts[i].source[0] != '\0';
			repaired += ts[i].source[0] && ts[i].repair[0];
		}
		printf("  %-8s %4d tasks  %4d mirrored  %4d repaired  %4d excluded\n", sets[k], tasks,
		       mirrored, repaired, count_excluded(sets[k]));
	}
}

int cr_cmd_list(int argc, char **argv)
{
	struct task *ts = NULL;
	struct task_broken *bad = NULL;
	int n = 0, n_bad = 0, rc = 0, w[6] = { 4, 10, 4, 8, 5, 5 };
	struct cr_err err;
	char *spec = NULL;
	size_t sl = 0;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: crucible list [SET|TASK...] [--json]\n"
			       "Lists tasks: name, primitives, bench dims, backward, flops and bytes at the\n"
			       "bench shape, and the KernelBench source each mirrors. No argument: every set.\n"
			       "--json: one JSON array of the same, for scripts.\n"
			       "A task file that fails to load is listed with its error (\"error\" in\n"
			       "--json) and fails only itself: exit 0, or 2 when a TASK named on the\n"
			       "command line is broken (`crucible lint` fails on any).\n");
			return 0;
		}
		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		if (argv[i][0] == '-') {
			fprintf(stderr, "crucible list: unknown option '%s' (see --help)\n", argv[i]);
			return 2;
		}
		spec = realloc(spec, sl + strlen(argv[i]) + 2);
		if (!spec)
			return 2;
		sprintf(spec + sl, "%s%s", sl ? "," : "", argv[i]);
		sl = strlen(spec);
	}
	cr_err_init(&err);
	if (task_registry_scan(spec, &ts, &n, &bad, &n_bad, &err)) {
		fprintf(stderr, "crucible list: %s\n", err.msg);
		free(spec);
		return cr_status_exit_code(err.status);
	}
	/* a broken file fails only itself (SPEC §2): its row says why; the
	 * exit status only when the command line named it */
	for (int i = 0; i < n_bad; i++) {
		fprintf(stderr, "crucible list: %s: %s\n", bad[i].name, bad[i].msg);
		if (bad[i].named)
			rc = 2;
	}
	struct row { char prims[512], dims[256], fl[32], by[32]; } *rows = calloc((size_t)n + 1, sizeof *rows);
	if (!rows) {
		fprintf(stderr, "crucible list: out of memory\n");
		task_list_free(ts, n);
		free(bad);
		free(spec);
		return 3;
	}
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		/* each primitive once, in the order of first use (a whole
		 * network repeats a handful of ops hundreds of times) */
		for (int k = 0; k < ts[i].n_nodes; k++) {
			bool seen = false;
			for (int q = 0; q < k && !seen; q++)
				seen = !strcmp(ts[i].nodes[q].op, ts[i].nodes[k].op);
			if (seen)
				continue;
			if (strlen(r->prims) + strlen(ts[i].nodes[k].op) + 5 >= sizeof r->prims) {
				strcat(r->prims, ",...");
				break;
			}
			if (r->prims[0])
				strcat(r->prims, ",");
			strcat(r->prims, ts[i].nodes[k].op);
		}
		task_dims_str(&ts[i], &ts[i].bench, r->dims, sizeof r->dims);
		eval_metric(&ts[i], ts[i].flops, r->fl, sizeof r->fl);
		eval_metric(&ts[i], ts[i].bytes, r->by, sizeof r->by);
		/* column widths from the data */
		int lens[6] = { (int)strlen(ts[i].name), (int)strlen(r->prims), (int)strlen(r->dims), 8,
				(int)strlen(r->fl), (int)strlen(r->by) };
		for (int k = 0; k < 6; k++)
			if (lens[k] > w[k])
				w[k] = lens[k];
	}
	if (json) {
		json_t *a = json_array();
		for (int i = 0; i < n; i++) {
			json_t *o = json_object();
			json_object_set_new(o, "task", json_string(ts[i].name));
			json_object_set_new(o, "primitives", json_string(rows[i].prims));
			json_object_set_new(o, "dims", json_string(rows[i].dims));
			json_object_set_new(o, "backward", json_boolean(ts[i].backward));
			json_object_set_new(o, "flops", json_string(rows[i].fl));
			json_object_set_new(o, "bytes", json_string(rows[i].by));
			json_object_set_new(o, "source", json_string(ts[i].source));
			json_array_append_new(a, o);
		}
		for (int i = 0; i < n_bad; i++) {
			json_t *o = json_object();
			json_object_set_new(o, "task", json_string(bad[i].name));
			json_object_set_new(o, "error", json_string(bad[i].msg));
			json_array_append_new(a, o);
		}
		char *txt = json_dumps(a, JSON_INDENT(2));
		if (txt)
			printf("%s\n", txt);
		free(txt);
		json_decref(a);
	} else {
		printf("%-*s %-*s %-*s %-*s %-*s %-*s %s\n", w[0], "task", w[1], "primitives", w[2], "dims",
		       w[3], "backward", w[4], "flops", w[5], "bytes", "source");
		for (int i = 0; i < n; i++)
			printf("%-*s %-*s %-*s %-*s %-*s %-*s %s\n", w[0], ts[i].name, w[1], rows[i].prims,
			       w[2], rows[i].dims, w[3], ts[i].backward ? "yes" : "no", w[4], rows[i].fl,
			       w[5], rows[i].by, ts[i].source[0] ? ts[i].source : "-");
		for (int i = 0; i < n_bad; i++)
			printf("%-*s error: %s\n", w[0], bad[i].name, bad[i].msg);
		printf("%d task(s)", n);
		if (n_bad)
			printf(", %d broken (listed with their error)", n_bad);
		printf("\n");
		coverage(ts, n);
	}
	free(rows);
	task_list_free(ts, n);
	free(bad);
	free(spec);
	return rc;
}

/* ---- dump ---- */

static int write_npy(const char *path, const char *descr, const int64_t *shape, int rank,
		     const void *data, size_t bytes)
{
	char hdr[256];
	int len;
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int i = 0; i < rank; i++)
		len += snprintf(hdr + len, sizeof hdr - (size_t)len, "%lld,%s", (long long)shape[i],
				i + 1 < rank ? " " : "");
	len += snprintf(hdr + len, sizeof hdr - (size_t)len, "), }");
	/* magic(6) + version(2) + header length(2) + header, padded to 64 */
	int total = 10 + len + 1;
	int pad = (64 - total % 64) % 64;
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	uint16_t hl = (uint16_t)(len + pad + 1);
	unsigned char hlb[2] = { (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8) };
	fwrite(hlb, 1, 2, f);
	fwrite(hdr, 1, (size_t)len, f);
	for (int i = 0; i < pad; i++)
		fputc(' ', f);
	fputc('\n', f);
	fwrite(data, 1, bytes, f);
	return fclose(f);
}

static const char *npy_descr(enum task_dtype dt)
{
	switch (dt) {
	case TASK_F32: return "<f4";
	case TASK_F16: return "<f2";
	case TASK_I32: return "<i4";
	case TASK_I64: return "<i8";
	default: return "<u2";
	}
}

static int parse_dims_arg(const struct task *t, const char *s, struct task_dimset *d)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int rc = 0;
	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		int k;
		long long v;
		if (!eq) { rc = -1; break; }
		*eq = '\0';
		k = task_find_dim(t, tok, strlen(tok));
		v = strtoll(eq + 1, &end, 10);
		if (k < 0 || *end || v < 1) { rc = -1; break; }
		d->v[k] = v;
	}
	free(copy);
	return rc;
}

int cr_cmd_dump(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dims", required_argument, 0, 'd' }, { "profile", required_argument, 0, 'p' },
		{ "seed", required_argument, 0, 's' }, { "out", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
	};
	const char *dims = NULL, *out = NULL, *profile = "own";
	uint64_t seed = 0;
	struct task t;
	struct task_dimset d;
	struct task_exec x;
	struct cr_err err;
	FILE *man;
	char path[1200];
	int c, prof;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': dims = optarg; break;
		case 'p': profile = optarg; break;
		case 's':
			if (!cr_parse_u64(optarg, &seed)) {
				fprintf(stderr, "crucible dump: --seed: '%s' is not a non-negative integer\n", optarg);
				return 2;
			}
			break;
		case 'o': out = optarg; break;
		case 'h':
			printf("usage: crucible dump TASK [--dims K=V,...] [--profile P] [--seed N] --out DIR\n"
			       "Writes one case's inputs, params, reference outputs (float64, the truth)\n"
			       "and, for tasks with a backward, the upstream gradients d<out> and the\n"
			       "reference gradients d<in>, as .npy files with a manifest.json.\n"
			       "Default dims: the first check shape. Profiles: own large small offset sparse mixed.\n");
			return 0;
		default:
			fprintf(stderr, "crucible dump: unknown or incomplete option '%s' (see --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1 || !out) {
		fprintf(stderr, "usage: crucible dump TASK [--dims K=V,...] [--profile P] [--seed N] --out DIR\n");
		return 2;
	}
	cr_err_init(&err);
	if (task_registry_find(argv[optind], &t, &err)) {
		fprintf(stderr, "crucible dump: %s\n", err.msg);
		return 2;
	}
	d = t.checks[0];
	if (dims && parse_dims_arg(&t, dims, &d)) {
		fprintf(stderr, "crucible dump: --dims '%s': expected NAME=POSITIVE,... over the dims of %s\n",
			dims, t.name);
		task_release(&t);
		return 2;
	}
	/* the shape the reference runs on, checked before it is allocated:
	 * counts, the size caps (SPEC §2), the ops' rules */
	if (task_check_dims(&t, &d, dims ? "--dims" : "check_dims[0]", true, &err)) {
		fprintf(stderr, "crucible dump: %s\n", err.msg);
		task_release(&t);
		return 2;
	}
	if ((prof = task_profile_parse(profile)) < 0) {
		fprintf(stderr, "crucible dump: unknown profile '%s'\n", profile);
		task_release(&t);
		return 2;
	}
	if (mkdir(out, 0755) && errno != EEXIST) {
		fprintf(stderr, "crucible dump: cannot create %s: %s\n", out, strerror(errno));
		task_release(&t);
		return 2;
	}
	if (task_exec_init(&x, &t, &d, true, t.backward, &err)) {
		fprintf(stderr, "crucible dump: %s\n", err.msg);
		task_release(&t);
		return 2;
	}
	for (int i = 0; i < t.n_tensors; i++)
		if (t.tensors[i].role != TASK_OUTPUT)
			task_gen_tensor(&t, i, &d, (enum task_profile)prof, seed, x.v[i].d);
	task_exec_forward(&x);
	snprintf(path, sizeof path, "%s/manifest.json", out);
	man = fopen(path, "w");
	if (!man) {
		fprintf(stderr, "crucible dump: cannot write %s\n", path);
		task_exec_release(&x);
		task_release(&t);
		return 2;
	}
	{
		char ds[256];
		task_dims_str(&t, &d, ds, sizeof ds);
		fprintf(man, "{\n  \"task\": \"%s\",\n  \"source\": \"%s\",\n  \"dims\": \"%s\",\n"
			     "  \"profile\": \"%s\",\n  \"seed\": %llu,\n  \"atol\": %g,\n  \"rtol\": %g,\n  \"arrays\": [\n",
			t.name, t.source, ds, profile, (unsigned long long)seed, t.atol, t.rtol);
	}
	int first = 1;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (!t.backward)
				break;
			struct task_rng r;
			task_rng_seed(&r, task_mix(seed, 0xd0u));
			for (int i = 0; i < t.n_tensors; i++)
				if (t.tensors[i].role == TASK_OUTPUT) {
					task_gen_round(t.tensors[i].dtype, x.v[i].d, x.v[i].n);
					for (int64_t k = 0; k < x.v[i].n; k++)
						((double *)x.g[i].d)[k] = (float)task_rng_normal(&r);
				}
			task_exec_backward(&x);
		}
		for (int i = 0; i < t.n_tensors; i++) {
			const struct task_tensor *tt = &t.tensors[i];
			bool isout = tt->role == TASK_OUTPUT;
			const struct task_val *val;
			char file[256], kind[32];
			void *buf;
			size_t bytes;
			if (pass == 0) {
				val = &x.v[i];
				snprintf(file, sizeof file, "%s.npy", tt->name);
				snprintf(kind, sizeof kind, "%s", isout ? "reference_output" : task_role_name(tt->role));
			} else {
				if (!isout && !tt->grad)
					continue;
				val = &x.g[i];
				snprintf(file, sizeof file, "d%s.npy", tt->name);
				snprintf(kind, sizeof kind, "%s", isout ? "upstream_grad" : "reference_grad");
			}
			bool ref = isout != (pass == 1); /* reference values: float64 */
			if (pass == 1 && !isout)
				ref = true;
			bytes = (size_t)val->n * (ref ? 8 : task_dtype_size(tt->dtype));
			buf = malloc(bytes ? bytes : 1);
			if (!buf)
				continue;
			if (ref)
				memcpy(buf, val->d, bytes);
			else
				task_gen_store(tt->dtype, val->d, buf, val->n);
			snprintf(path, sizeof path, "%s/%s", out, file);
			write_npy(path, ref ? "<f8" : npy_descr(tt->dtype), val->shape, val->rank, buf, bytes);
			free(buf);
			fprintf(man, "%s    {\"file\": \"%s\", \"tensor\": \"%s\", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": [",
				first ? "" : ",\n", file, tt->name, kind, ref ? "f64" : task_dtype_name(tt->dtype));
			for (int k = 0; k < val->rank; k++)
				fprintf(man, "%s%lld", k ? ", " : "", (long long)val->shape[k]);
			fprintf(man, "]}");
			first = 0;
		}
	}
	fprintf(man, "\n  ]\n}\n");
	fclose(man);
	task_exec_release(&x);
	task_release(&t);
	printf("wrote %s/manifest.json\n", out);
	return 0;
}

/* ---- lint ---- */

/* Checks one output of one case; writes a reason and returns false when
 * the task would accept a degenerate kernel. a: the case; b: the same task
 * with the inputs redrawn and the params kept (does the output follow its
 * inputs?); c: everything redrawn (does each element vary across seeds?
 * An element fixed by the params alone, such as the bias at a transposed
 * conv's structural holes, varies here and not in b). */
static bool lint_output(const double *a, const double *b, const double *c,
			const struct task_val *v, const struct task *t, bool own, char *why,
			size_t cap)
{
	int64_t same_in = 0, same = 0;
	double lo = INFINITY, hi = -INFINITY, rms = 0, amax = 0, dmax = 0, tol;
	for (int64_t i = 0; i < v->n; i++) {
		lo = fmin(lo, a[i]);
		hi = fmax(hi, a[i]);
		rms += a[i] * a[i];
		amax = fmax(amax, fabs(a[i]));
		dmax = fmax(dmax, fabs(a[i] - b[i]));
		same_in += a[i] == b[i];
		same += a[i] == c[i];
	}
	rms = sqrt(rms / (double)(v->n ? v->n : 1));
	/* the verifier's tolerance at this scale: if one constant lies within it
	 * of every element, a constant kernel would pass the comparison */
	tol = t->atol * fmax(1.0, rms) + t->rtol * amax;
	if (own && v->n > 1 && (hi - lo) / 2 <= tol) {
		snprintf(why, cap, "reference spread %.3g is within the tolerance %.3g: a constant output would pass",
			 (hi - lo) / 2, tol);
		return false;
	}
	if (same_in == v->n) {
		snprintf(why, cap, "reference does not change when the inputs change");
		return false;
	}
	/* a kernel that ignores the inputs (the output of a fixed input, or a
	 * parameter-only chain) is off by dmax, and passes within tol */
	if (own && dmax <= tol) {
		snprintf(why, cap,
			 "reference moves by at most %.3g when the inputs are redrawn (params kept), within the tolerance %.3g: a kernel ignoring the inputs would pass",
			 dmax, tol);
		return false;
	}
	/* per-element variation is judged on the task's own init: sparse and
	 * large profiles legitimately produce many exact zeros */
	if (own && v->n > 1 && same * 2 > v->n) {
		snprintf(why, cap, "%lld of %lld reference elements equal across seeds", (long long)same,
			 (long long)v->n);
		return false;
	}
	for (int ax = 0; ax < v->rank; ax++) {
		int64_t stride = 1, len = v->shape[ax];
		bool varies = false;
		if (len < 2)
			continue;
		for (int k = ax + 1; k < v->rank; k++)
			stride *= v->shape[k];
		for (int64_t i = 0; i < v->n && !varies; i++)
			if ((i / stride) % len + 1 < len && a[i] != a[i + stride])
				varies = true;
		if (!varies) {
			snprintf(why, cap, "reference is constant along axis %d", ax);
			return false;
		}
	}
	return true;
}

int cr_cmd_lint(int argc, char **argv)
{
	struct task *ts = NULL;
	struct task_broken *broken = NULL;
	int n = 0, n_broken = 0, bad = 0, checked = 0, notes = 0;
	struct cr_err err;
	const char *spec = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: crucible lint [SET]\n"
			       "Checks the registry: on every shape and init profile each task's reference\n"
			       "output spreads beyond the task's tolerance under its own init (so a constant cannot pass; this\n"
			       "replaces robust-kbench's fixed +-0.01), changes with the inputs beyond that tolerance\n"
			       "(the inputs redrawn, the params kept), varies across seeds per element (all\n"
			       "redrawn) and along every axis. The task's own init decides; other init\n"
			       "profiles that saturate the chain are reported as notes.\n"
			       "Shapes where an input has fewer than 16\n"
			       "elements are edge cases for the verifier and are not judged here.\n"
			       "A task file that does not load fails (with its error); the others are\n"
			       "still checked. Exit 1 when a task fails.\n");
			return 0;
		}
		if (argv[i][0] == '-' || spec) {
			fprintf(stderr, "crucible lint: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
		spec = argv[i];
	}
	cr_err_init(&err);
	if (task_registry_scan(spec, &ts, &n, &broken, &n_broken, &err)) {
		fprintf(stderr, "crucible lint: %s\n", err.msg);
		return cr_status_exit_code(err.status);
	}
	for (int i = 0; i < n_broken; i++) {
		printf("FAIL %-24s does not load: %s\n", broken[i].name, broken[i].msg);
		checked++;
		bad++;
	}
	free(broken);
	for (int i = 0; i < n; i++) {
		const struct task *t = &ts[i];
		bool ok = true;
		for (int s = 0; s <= t->n_checks && ok; s++) {
			const struct task_dimset *d = s < t->n_checks ? &t->checks[s] : &t->cpu;
			bool tiny = false;
			/* edge shapes (a handful of elements) are for the verifier, not
			 * for judging whether the task is degenerate */
			for (int k = 0; k < t->n_tensors; k++)
				if (t->tensors[k].role != TASK_OUTPUT &&
				    task_dtype_is_float(t->tensors[k].dtype) &&
				    task_tensor_numel(t, k, d) < 16)
					tiny = true;
			if (tiny && s < t->n_checks)
				continue;
			for (int p = 0; p < TASK_PROF_COUNT && ok; p++) {
				struct task_exec xa, xb, xc;
				char why[200], ds[128];
				if (task_exec_init(&xa, t, d, true, false, &err) ||
				    task_exec_init(&xb, t, d, true, false, &err) ||
				    task_exec_init(&xc, t, d, true, false, &err)) {
					fprintf(stderr, "crucible lint: %s\n", err.msg);
					task_list_free(ts, n);
					return 2;
				}
				/* xb: the inputs redrawn, the params kept (redrawing
				 * the params too would hide an output that depends on
				 * them only: a deep chain that forgets x, a layer dead
				 * at a check shape); xc: everything redrawn */
				for (int k = 0; k < t->n_tensors; k++)
					if (t->tensors[k].role != TASK_OUTPUT) {
						bool in = t->tensors[k].role == TASK_INPUT;
						task_gen_tensor(t, k, d, (enum task_profile)p, 11, xa.v[k].d);
						task_gen_tensor(t, k, d, (enum task_profile)p, in ? 12 : 11, xb.v[k].d);
						task_gen_tensor(t, k, d, (enum task_profile)p, 12, xc.v[k].d);
					}
				task_exec_forward(&xa);
				task_exec_forward(&xb);
				task_exec_forward(&xc);
				for (int k = 0; k < t->n_tensors && ok; k++) {
					if (t->tensors[k].role != TASK_OUTPUT)
						continue;
					if (!lint_output(xa.v[k].d, xb.v[k].d, xc.v[k].d, &xa.v[k], t,
							 p == TASK_PROF_OWN, why, sizeof why)) {
						/* the task's own init decides; a stress profile
						 * that saturates the chain (tanh of large values,
						 * clamp of shifted ones) is reported, not failed:
						 * the own profile already rejects constant kernels */
						bool own = p == TASK_PROF_OWN;
						task_dims_str(t, d, ds, sizeof ds);
						printf("%s %-24s {%s} %-7s %s: %s\n", own ? "FAIL" : "note", t->name, ds,
						       task_profile_name((enum task_profile)p), t->tensors[k].name, why);
						if (own)
							ok = false;
						else
							notes++;
						break;
					}
				}
				task_exec_release(&xa);
				task_exec_release(&xb);
				task_exec_release(&xc);
			}
		}
		checked++;
		if (ok)
			printf("ok   %s\n", t->name);
		else
			bad++;
	}
	printf("%d task(s) checked, %d failed, %d note(s) on stress profiles\n", checked, bad, notes);
	task_list_free(ts, n);
	return bad ? 1 : 0;
}
