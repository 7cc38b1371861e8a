/* report_meta.c — a run's provenance in every report format (issue 32): what
 * the run.json beside its results.csv says of the tool and the run (crucible
 * version and revision, device, backend, the seed and where it came from,
 * start and end, whether it was timed), the rows marked noisy, and the
 * report tool's own version, revision and date. Nothing is invented: a field
 * run.json lacks, or a missing run.json, reads "unknown" (json null). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cr_cli.h"
#include "common/cr_status.h"
#include "common/cr_text.h"
#include "cr_config.h"
#include "cr_version.h"
#include "reports/report_impl.h"

/* A run.json string (or number) into out, made safe for a terminal, a
 * markdown table and html (control bytes escaped; | ` * < > & replaced). */
static void str_field(json_t *root, const char *key, char *out, size_t len)
{
	json_t *v = json_object_get(root, key);

	out[0] = '\0';
	if (json_is_string(v))
		snprintf(out, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(out, len, "%lld", (long long)json_integer_value(v));
	else
		return;
	cr_text_escape_inplace(out, len);
	for (char *p = out; *p; p++)
		if (strchr("|`*<>&", *p))
			*p = '_';
}

static int bool_field(json_t *root, const char *key)
{
	json_t *v = json_object_get(root, key);

	return json_is_boolean(v) ? json_is_true(v) : -1;
}

json_t *report_run_json_beside(const char *csv_path)
{
	char *path = malloc(strlen(csv_path) + sizeof "run.json"), *slash, *buf;
	json_t *root;
	size_t len = 0;
	struct cr_err e;

	if (!path)
		return NULL;
	cr_err_init(&e);
	strcpy(path, csv_path);
	slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "run.json");
	/* untrusted like the run it names; absent or malformed: not found (the
	 * run names say a malformed one is an error, report_name_runs) */
	buf = cr_read_data(NULL, path, CR_DATA_MAX_JSON, CR_DATA_OPTIONAL, &len, &e);
	free(path);
	if (!buf)
		return NULL;
	root = json_loadb(buf, len, 0, NULL);
	free(buf);
	if (!json_is_object(root)) {
		json_decref(root);
		return NULL;
	}
	return root;
}

void report_prov_read(const char *csv_path, struct report_prov *p)
{
	const char *ss;
	json_t *root, *seed;

	memset(p, 0, sizeof *p);
	p->timing = p->complete = p->secret = -1;
	if (!(root = report_run_json_beside(csv_path)))
		return;
	p->found = 1;
	/* eval writes "version", crucible run "crucible" */
	str_field(root, "version", p->version, sizeof p->version);
	if (!p->version[0])
		str_field(root, "crucible", p->version, sizeof p->version);
	str_field(root, "revision", p->revision, sizeof p->revision);
	str_field(root, "run_id", p->run_id, sizeof p->run_id);
	str_field(root, "device", p->device, sizeof p->device);
	str_field(root, "backend", p->backend, sizeof p->backend);
	str_field(root, "started", p->started, sizeof p->started);
	/* eval: "finished" (issue 32); crucible run: "ended" */
	str_field(root, "finished", p->finished, sizeof p->finished);
	if (!p->finished[0])
		str_field(root, "ended", p->finished, sizeof p->finished);
	str_field(root, "seed_source", p->seed_source, sizeof p->seed_source);
	seed = json_object_get(root, "seed");
	if (json_is_integer(seed)) {
		p->has_seed = 1;
		p->seed = (long long)json_integer_value(seed);
	}
	ss = json_string_value(seed);
	if ((ss && !strcmp(ss, "secret")) || !strcmp(p->seed_source, "secret"))
		p->secret = 1;
	else if (p->has_seed)
		p->secret = 0;
	p->timing = bool_field(root, "timing");
	if (p->timing < 0) { /* crucible run: "options": {"no_timing": true} */
		int nt = bool_field(json_object_get(root, "options"), "no_timing");
		p->timing = nt < 0 ? -1 : !nt;
	}
	p->complete = bool_field(root, "complete");
	json_decref(root);
}

const char *report_prov_seed(const struct report_prov *p, char *buf, size_t len)
{
	if (!p->found)
		snprintf(buf, len, "unknown (no run.json)");
	else if (p->secret == 1)
		snprintf(buf, len, "secret: a CRUCIBLE_SEED secret was mixed in (the seed is not "
			 "recorded)");
	else if (!p->has_seed)
		snprintf(buf, len, "unknown (run.json has no seed)");
	else if (!strcmp(p->seed_source, "--seed"))
		snprintf(buf, len, "%lld (given with --seed; no secret)", p->seed);
	else if (!strcmp(p->seed_source, "drawn"))
		snprintf(buf, len, "%lld (drawn for this run; no secret)", p->seed);
	else
		snprintf(buf, len, "%lld (source not recorded; no secret)", p->seed);
	return buf;
}

static const char *or_unknown(const struct report_prov *p, const char *v)
{
	return *v ? v : p->found ? "unknown (not in run.json)" : "unknown (no run.json)";
}

void report_tool_version(char *out, size_t len)
{
	char now[32];

	cr_utc_now(now);
	snprintf(out, len, "crucible %s (revision %s), %s", CRUCIBLE_VERSION, CRUCIBLE_REVISION, now);
}

void report_print_prov_md(FILE *f, const struct report_summary *s)
{
	const struct report_prov *p = &s->prov;
	char seed[160];

	fprintf(f, "| run | |\n|---|---|\n");
	fprintf(f, "| crucible version | %s |\n", or_unknown(p, p->version));
	fprintf(f, "| revision | %s |\n", or_unknown(p, p->revision));
	fprintf(f, "| device | %s%s%s%s |\n", or_unknown(p, p->device), *p->backend ? " (" : "",
		p->backend, *p->backend ? ")" : "");
	fprintf(f, "| seed | %s |\n", report_prov_seed(p, seed, sizeof seed));
	fprintf(f, "| started | %s |\n", or_unknown(p, p->started));
	fprintf(f, "| finished | %s%s |\n", or_unknown(p, p->finished),
		p->complete == 0 ? " (run.json says the run did not finish)" : "");
	fprintf(f, "| run id | %s |\n", or_unknown(p, p->run_id));
	fprintf(f, "| timing | %s |\n", !s->correct_measured ? "not measured (compile-only run)" :
		!s->timing_measured ? (p->timing == 0 ? "not measured (run without timing)" :
				       "not measured (no timed row)") :
		"measured");
	fprintf(f, "| noisy rows | %d of %d timed |\n\n", s->n_noisy, s->n_timed);
}

static json_t *jstr_or_null(const char *v)
{
	return *v ? json_string(v) : json_null();
}

struct json_t *report_prov_json(const struct report_summary *s)
{
	const struct report_prov *p = &s->prov;
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "run_json", json_boolean(p->found));
	json_object_set_new(o, "version", jstr_or_null(p->version));
	json_object_set_new(o, "revision", jstr_or_null(p->revision));
	json_object_set_new(o, "run_id", jstr_or_null(p->run_id));
	json_object_set_new(o, "device", jstr_or_null(p->device));
	json_object_set_new(o, "backend", jstr_or_null(p->backend));
	json_object_set_new(o, "seed", p->secret == 1 ? json_string("secret") :
			    p->has_seed ? json_integer((json_int_t)p->seed) : json_null());
	json_object_set_new(o, "seed_source", *p->seed_source ? json_string(p->seed_source) :
			    p->secret == 1 ? json_string("secret") : json_null());
	json_object_set_new(o, "secret_seed", p->secret < 0 ? json_null() : json_boolean(p->secret));
	json_object_set_new(o, "started", jstr_or_null(p->started));
	json_object_set_new(o, "finished", jstr_or_null(p->finished));
	json_object_set_new(o, "complete", p->complete < 0 ? json_null() : json_boolean(p->complete));
	json_object_set_new(o, "timing", p->timing < 0 ? json_null() : json_boolean(p->timing));
	json_object_set_new(o, "noisy_rows", json_integer(s->n_noisy));
	json_object_set_new(o, "timed_rows", json_integer(s->n_timed));
	return o;
}

struct json_t *report_tool_json(void)
{
	char now[32];

	cr_utc_now(now);
	return json_pack("{s:s, s:s, s:s, s:s}", "tool", "crucible", "version", CRUCIBLE_VERSION,
			 "revision", CRUCIBLE_REVISION, "date", now);
}

void report_print_prov_csv(FILE *f, const struct report_summary *s)
{
	const struct report_prov *p = &s->prov;
	char seed[160];
	const char *key[] = { "run_json", "version", "revision", "device", "backend", "seed",
			      "started", "finished", "run_id" };
	const char *val[] = { p->found ? "yes" : "no", p->version, p->revision, p->device,
			      p->backend, p->found ? report_prov_seed(p, seed, sizeof seed) : "",
			      p->started, p->finished, p->run_id };

	for (size_t k = 0; k < sizeof key / sizeof key[0]; k++) {
		report_csv_field(f, s->label, 0);
		report_csv_field(f, s->path, 0);
		report_csv_field(f, "provenance", 0);
		report_csv_field(f, "all", 0);
		report_csv_field(f, key[k], 0);
		report_csv_field(f, val[k], 1);
	}
}
