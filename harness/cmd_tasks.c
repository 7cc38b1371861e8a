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
#include <unistd.h>

#include "common/cr_cli.h"
#include "cand/expr.h"
#include "cand/plan.h"
#include "tasks/task_exec.h"
#include "tasks/task_gen.h"
#include "tasks/task_registry.h"
#include "tasks/task_rng.h"

/* Formats a flops/bytes expression at the bench shape ("" when absent, "?"
 * when it does not evaluate); *v is the value, NAN when there is none. */
static void eval_metric(const struct task *t, const char *text, char *out, size_t cap, double *v)
{
	*v = NAN;
	if (!text[0])
		out[0] = '\0';
	else if (cr_task_metric(t, text, &t->bench, v))
		snprintf(out, cap, "%.3g", *v);
	else {
		*v = NAN;
		snprintf(out, cap, "?");
	}
}

/* A count as a JSON number: an integer when it is whole (and fits), else a
 * real (printed with 6 significant digits); null when there is none. */
static json_t *json_count(double v)
{
	if (!isfinite(v))
		return json_null();
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		return json_integer((json_int_t)v);
	return json_real(v);
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
			cr_cli_error("list", "%s:%d: expected an array of {\"source\", \"reason\"}", path, je.line);
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

static const char list_help[] =
	"usage: crucible list [SET|TASK...] [--json]\n"
	"Lists tasks: name, primitives, bench dims, backward, flops and bytes at the\n"
	"bench shape, and the KernelBench source each mirrors. No argument: every set.\n"
	"Tasks are named as KernelBench names problems: a level (L1, L2, L3, smoke),\n"
	"L1/23 (problem 23 of level 1), L1/1-10, L1/softmax, 'L2/*Conv*'.\n"
	"\n"
	"OPTIONS\n"
	"  --json      one JSON array of the same, for scripts: flops and bytes are\n"
	"              numbers (integers when whole, else 6 significant digits; null\n"
	"              when the task gives none), backward a boolean\n"
	"  -h, --help  this page\n"
	"\n"
	"A task file that fails to load is listed with its error (\"error\" in --json)\n"
	"and fails only itself (`crucible lint` fails on any).\n";

int cr_cmd_list(int argc, char **argv)
{
	static const struct option lo[] = { { "json", no_argument, 0, 'j' },
					    { "help", no_argument, 0, 'h' },
					    { 0, 0, 0, 0 } };
	struct task *ts = NULL;
	struct task_broken *bad = NULL;
	int n = 0, n_bad = 0, rc = 0, c, w[6] = { 4, 10, 4, 8, 5, 5 };
	struct cr_err err;
	char *spec = NULL;
	size_t sl = 0;
	bool json = false;

	optind = 1;
	while ((c = cr_cli_getopt("list", argc, argv, "h", lo)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h':
			fputs(list_help, stdout);
			cr_cli_help_tail(stdout,
					 "  0  listed (a broken task file is listed with its error)\n"
					 "  2  bad usage, an unknown set, or a TASK named here is broken\n"
					 "  3  a write failed (standard output included)\n",
					 CR_ENV_DATADIR);
			return CR_EXIT_OK;
		default: return CR_EXIT_USAGE;
		}
	}
	for (int i = optind; i < argc; i++) {
		char *ns = realloc(spec, sl + strlen(argv[i]) + 2);

		if (!ns) {
			free(spec);
			cr_cli_error("list", "out of memory");
			return CR_EXIT_ENV;
		}
		spec = ns;
		sprintf(spec + sl, "%s%s", sl ? "," : "", argv[i]);
		sl = strlen(spec);
	}
	cr_err_init(&err);
	if (task_registry_scan(spec, &ts, &n, &bad, &n_bad, &err)) {
		cr_cli_error("list", "%s", err.msg);
		free(spec);
		return cr_status_exit_code(err.status);
	}
	/* a broken file fails only itself (SPEC §2): its row says why; the
	 * exit status only when the command line named it */
	for (int i = 0; i < n_bad; i++) {
		cr_cli_error("list", "%s: %s", bad[i].name, bad[i].msg);
		if (bad[i].named)
			rc = 2;
	}
	struct row { char prims[512], dims[256], fl[32], by[32]; double flv, byv; } *rows = calloc((size_t)n + 1, sizeof *rows);
	if (!rows) {
		cr_cli_error("list", "out of memory");
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
		eval_metric(&ts[i], ts[i].flops, r->fl, sizeof r->fl, &r->flv);
		eval_metric(&ts[i], ts[i].bytes, r->by, sizeof r->by, &r->byv);
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
			json_object_set_new(o, "flops", json_count(rows[i].flv));
			json_object_set_new(o, "bytes", json_count(rows[i].byv));
			json_object_set_new(o, "source", json_string(ts[i].source));
			json_array_append_new(a, o);
		}
		for (int i = 0; i < n_bad; i++) {
			json_t *o = json_object();
			json_object_set_new(o, "task", json_string(bad[i].name));
			json_object_set_new(o, "error", json_string(bad[i].msg));
			json_array_append_new(a, o);
		}
		char *txt = json_dumps(a, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
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
	if (ferror(f)) {
		fclose(f);
		return -1;
	}
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

static const char dump_help[] =
	"usage: crucible dump TASK [--dims K=V,...] [--profile P] [--seed N] --out DIR\n"
	"Writes one case's inputs, params, reference outputs (float64, the truth)\n"
	"and, for tasks with a backward, the upstream gradients d<out> and the\n"
	"reference gradients d<in>, as .npy files with a manifest.json.\n"
	"TASK: its full name, L1/23 (problem 23 of level 1) or L1/softmax.\n"
	"\n"
	"OPTIONS\n"
	"  --out DIR       the folder, made with its missing parents (mkdir -p)\n"
	"  --dims K=V,...  the shape (default: the task's first check shape)\n"
	"  --profile P     the init profile: own large small offset sparse mixed\n"
	"                  (default own)\n"
	"  --seed N        the case's seed (default 0)\n"
	"  -h, --help      this page\n";

/* The manifest's JSON: what each .npy file holds. */
static json_t *manifest_head(const struct task *t, const struct task_dimset *d, const char *profile,
			     uint64_t seed)
{
	char ds[256];
	json_t *m = json_object();

	task_dims_str(t, d, ds, sizeof ds);
	json_object_set_new(m, "task", json_string(t->name));
	json_object_set_new(m, "source", json_string(t->source));
	json_object_set_new(m, "dims", json_string(ds));
	json_object_set_new(m, "profile", json_string(profile));
	json_object_set_new(m, "seed", json_integer((json_int_t)seed));
	json_object_set_new(m, "atol", json_real(t->atol));
	json_object_set_new(m, "rtol", json_real(t->rtol));
	json_object_set_new(m, "arrays", json_array());
	return m;
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
	json_t *man = NULL, *arrays;
	char path[1200];
	int c, prof, rc = CR_EXIT_OK;

	optind = 1;
	while ((c = cr_cli_getopt("dump", argc, argv, "h", lo)) != -1) {
		switch (c) {
		case 'd': dims = optarg; break;
		case 'p': profile = optarg; break;
		case 's':
			/* the manifest's seed is a JSON integer: at most 2^63 - 1 */
			if (!cr_parse_u64(optarg, &seed) || seed > (uint64_t)INT64_MAX)
				return cr_cli_usage("dump", "--seed: expected an integer in 0..%lld, got '%s'",
						    (long long)INT64_MAX, optarg);
			break;
		case 'o': out = optarg; break;
		case 'h':
			fputs(dump_help, stdout);
			cr_cli_help_tail(stdout,
					 "  0  written\n"
					 "  2  bad usage or bad input (an unknown task, dims or profile)\n"
					 "  3  a folder or file could not be written\n",
					 CR_ENV_DATADIR);
			return CR_EXIT_OK;
		default: return CR_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cr_cli_usage("dump", "which task? (crucible dump TASK --out DIR)");
	if (optind + 1 < argc)
		return cr_cli_usage("dump", "unexpected argument '%s' (one TASK at a time)", argv[optind + 1]);
	if (!out)
		return cr_cli_usage("dump", "--out DIR is needed");
	cr_err_init(&err);
	if (task_registry_find(argv[optind], &t, &err))
		return cr_cli_usage("dump", "%s", err.msg);
	d = t.checks[0];
	if (dims && parse_dims_arg(&t, dims, &d)) {
		cr_cli_error("dump", "--dims '%s': expected NAME=POSITIVE,... over the dims of %s", dims, t.name);
		task_release(&t);
		return CR_EXIT_USAGE;
	}
	/* the shape the reference runs on, checked before it is allocated:
	 * counts, the size caps (SPEC §2), the ops' rules */
	if (task_check_dims(&t, &d, dims ? "--dims" : "check_dims[0]", true, &err)) {
		cr_cli_error("dump", "%s", err.msg);
		task_release(&t);
		return CR_EXIT_USAGE;
	}
	if ((prof = task_profile_parse(profile)) < 0) {
		cr_cli_error("dump", "--profile: unknown profile '%s' (own, large, small, offset, sparse, mixed)",
			     profile);
		task_release(&t);
		return CR_EXIT_USAGE;
	}
	if (cr_mkdir_p(out, &err)) {
		cr_cli_error("dump", "%s", err.msg);
		task_release(&t);
		return CR_EXIT_ENV;
	}
	if (task_exec_init(&x, &t, &d, true, t.backward, &err)) {
		cr_cli_error("dump", "%s", err.msg);
		task_release(&t);
		return CR_EXIT_USAGE;
	}
	for (int i = 0; i < t.n_tensors; i++)
		if (t.tensors[i].role != TASK_OUTPUT)
			task_gen_tensor(&t, i, &d, (enum task_profile)prof, seed, x.v[i].d);
	task_exec_forward(&x);
	man = manifest_head(&t, &d, profile, seed);
	arrays = json_object_get(man, "arrays");
	for (int pass = 0; pass < 2 && !rc; pass++) {
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
		for (int i = 0; i < t.n_tensors && !rc; i++) {
			const struct task_tensor *tt = &t.tensors[i];
			bool isout = tt->role == TASK_OUTPUT;
			const struct task_val *val;
			char file[256], kind[32];
			void *buf;
			size_t bytes;
			json_t *shape;
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
			if (!buf) {
				cr_cli_error("dump", "out of memory for %s", file);
				rc = CR_EXIT_ENV;
				break;
			}
			if (ref)
				memcpy(buf, val->d, bytes);
			else
				task_gen_store(tt->dtype, val->d, buf, val->n);
			snprintf(path, sizeof path, "%s/%s", out, file);
			if (write_npy(path, ref ? "<f8" : npy_descr(tt->dtype), val->shape, val->rank, buf, bytes)) {
				cr_cli_error("dump", "cannot write %s: %s", path, strerror(errno));
				rc = CR_EXIT_ENV;
			}
			free(buf);
			shape = json_array();
			for (int k = 0; k < val->rank; k++)
				json_array_append_new(shape, json_integer((json_int_t)val->shape[k]));
			json_array_append_new(arrays, json_pack("{s:s, s:s, s:s, s:s, s:o}", "file", file,
								"tensor", tt->name, "kind", kind, "dtype",
								ref ? "f64" : task_dtype_name(tt->dtype), "shape",
								shape));
		}
	}
	task_exec_release(&x);
	task_release(&t);
	if (!rc) {
		snprintf(path, sizeof path, "%s/manifest.json", out);
		FILE *f = fopen(path, "w");
		int bad = !f || json_dumpf(man, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) ||
			  fputc('\n', f) == EOF;

		if (f && fclose(f))
			bad = 1;
		if (bad) {
			cr_cli_error("dump", "cannot write %s", path);
			rc = CR_EXIT_ENV;
		} else {
			printf("wrote %s\n", path);
		}
	}
	json_decref(man);
	return rc;
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

static const char lint_help[] =
	"usage: crucible lint [SET]\n"
	"Checks the registry: on every shape and init profile each task's reference\n"
	"output spreads beyond the task's tolerance under its own init (so a constant\n"
	"cannot pass; this replaces robust-kbench's fixed +-0.01), changes with the\n"
	"inputs beyond that tolerance (the inputs redrawn, the params kept), varies\n"
	"across seeds per element (all redrawn) and along every axis. The task's own\n"
	"init decides; other init profiles that saturate the chain are reported as\n"
	"notes. Shapes where an input has fewer than 16 elements are edge cases for\n"
	"the verifier and are not judged here. A task file that does not load fails\n"
	"(with its error); the others are still checked.\n"
	"\n"
	"Each task's line is written (and flushed) as soon as it is judged; \"[i/N]\n"
	"TASK\" on stderr says which task is being checked (one line per task when\n"
	"stderr is not a terminal, one redrawn line on a terminal).\n"
	"\n"
	"OPTIONS\n"
	"  -h, --help  this page\n";

int cr_cmd_lint(int argc, char **argv)
{
	static const struct option lo[] = { { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	struct task *ts = NULL;
	struct task_broken *broken = NULL;
	int n = 0, n_broken = 0, bad = 0, checked = 0, notes = 0, c;
	struct cr_err err;
	const char *spec = NULL;
	const char *nc = getenv("NO_COLOR");
	bool redraw = isatty(STDERR_FILENO) && !(nc && nc[0]);

	optind = 1;
	while ((c = cr_cli_getopt("lint", argc, argv, "h", lo)) != -1) {
		switch (c) {
		case 'h':
			fputs(lint_help, stdout);
			cr_cli_help_tail(stdout,
					 "  0  every task passed\n"
					 "  1  a task failed (or its file does not load)\n"
					 "  2  bad usage or an unknown set\n"
					 "  3  a write failed (standard output included)\n",
					 CR_ENV_DATADIR | CR_ENV_COLOR);
			return CR_EXIT_OK;
		default: return CR_EXIT_USAGE;
		}
	}
	if (optind < argc)
		spec = argv[optind];
	if (optind + 1 < argc)
		return cr_cli_usage("lint", "unexpected argument '%s' (one SET at a time)", argv[optind + 1]);
	cr_err_init(&err);
	if (task_registry_scan(spec, &ts, &n, &broken, &n_broken, &err)) {
		cr_cli_error("lint", "%s", err.msg);
		return cr_status_exit_code(err.status);
	}
	for (int i = 0; i < n_broken; i++) {
		printf("FAIL %-24s does not load: %s\n", broken[i].name, broken[i].msg);
		checked++;
		bad++;
	}
	/* L1/23 names one task only while each set's ids are unique */
	cr_err_init(&err);
	if (task_registry_check_ids(&err)) {
		printf("FAIL %-24s %s\n", "(registry ids)", err.msg);
		bad++;
	}
	fflush(stdout);
	free(broken);
	for (int i = 0; i < n; i++) {
		const struct task *t = &ts[i];
		bool ok = true;
		/* which task is being checked: a piped run shows its progress
		 * and a timeout loses only the task it was on */
		if (redraw)
			fprintf(stderr, "\r\033[K[%d/%d] %s", i + 1, n, t->name);
		else
			fprintf(stderr, "[%d/%d] %s\n", i + 1, n, t->name);
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
					if (redraw)
						fputs("\r\033[K", stderr);
					cr_cli_error("lint", "%s: %s", t->name, err.msg);
					task_list_free(ts, n);
					return CR_EXIT_USAGE;
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
						if (redraw)
							fputs("\r\033[K", stderr);
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
		if (redraw)
			fputs("\r\033[K", stderr);
		if (ok)
			printf("ok   %s\n", t->name);
		else
			bad++;
		fflush(stdout);
	}
	printf("%d task(s) checked, %d failed, %d note(s) on stress profiles\n", checked, bad, notes);
	task_list_free(ts, n);
	return bad ? 1 : 0;
}
