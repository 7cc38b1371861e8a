/* results.c — results.csv rows, resume keys, sidecar metadata. */
#include "harness/results.h"
#include "common/cr_text.h"

#include <csv.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

const char *const cr_results_columns[] = {
	"run_id", "task", "candidate", "sample", "backend", "device", "status", "backward",
	"detail", "max_abs_err", "max_rel_err", "time_us", "time_lo_us", "time_hi_us",
	"baseline_us", "speedup", "speedup_lo", "speedup_hi", "samples", "reasoning_tokens",
	"completion_tokens", "model", "temperature", "top_p", "top_k", "seed", "turn",
	"source_sha256", "err_vs_baseline", "shape", "strategy", "tflops", "tbps", "roofline",
	"verify_seed", "label", "noisy", "load1", "parent", "generation", "prompt_tokens",
	"cumulative_tokens", "gen_s", "verify_s", "group", "gpu_sm_mhz", "gpu_mem_mhz", "gpu_temp_c",
	"gpu_throttle", "gpu", "gpu_uuid", NULL
};

static void put(FILE *f, const char *s, int first)
{
	if (!first)
		fputc(',', f);
	csv_fwrite(f, s, strlen(s));
}

static void num(char *buf, size_t cap, double v, const char *fmt)
{
	if (isnan(v))
		buf[0] = '\0';
	else
		snprintf(buf, cap, fmt, v);
}

/* A results.csv or samples.csv already there (--resume, or a run directory
 * handed over) is appended to only when it is a regular file: a link, FIFO
 * or device in its place is bad input, never followed or waited on. */
static enum cr_status existing_regular(const char *path, bool *fresh, struct cr_err *err)
{
	struct stat sb;
	int fd;

	*fresh = true;
	if (lstat(path, &sb))
		return CR_OK;
	if (S_ISREG(sb.st_mode)) {
		*fresh = sb.st_size == 0;
		return CR_OK;
	}
	/* refused: cr_open_data says what it is, in its words */
	if ((fd = cr_open_data(NULL, path, CR_DATA_MAX_CSV, 0, err)) >= 0)
		close(fd);
	return cr_errf(err, CR_EINPUT, "%s: not a regular file", path);
}

enum cr_status cr_results_open(const char *path, FILE **f, struct cr_err *err)
{
	bool fresh;
	enum cr_status st = existing_regular(path, &fresh, err);

	if (st)
		return st;
	if (!fresh) {
		/* appending (--resume): the header must be this version's */
		FILE *old = cr_fopen_data(NULL, path, CR_DATA_MAX_CSV, 0, err);
		char line[4096], want[4096];
		size_t n = 0;
		want[0] = '\0';
		for (int i = 0; cr_results_columns[i]; i++)
			n += (size_t)snprintf(want + n, sizeof want - n, "%s%s", i ? "," : "",
					      cr_results_columns[i]);
		if (!old)
			return err->status;
		if (!fgets(line, sizeof line, old)) {
			fclose(old);
			return cr_errf(err, CR_EIO, "cannot read %s: %s", path, strerror(errno));
		}
		fclose(old);
		line[strcspn(line, "\r\n")] = '\0';
		n = 0;   /* the header's names without csv quotes */
		for (char *p = line; *p; p++)
			if (*p != '"')
				line[n++] = *p;
		line[n] = '\0';
		if (strcmp(line, want))
			return cr_errf(err, CR_EINPUT,
				       "%s:1: the header is not this crucible's (%d columns ending in gpu_uuid): "
				       "write to a new --out", path, (int)(sizeof cr_results_columns / sizeof *cr_results_columns) - 1);
	}
	/* appended through no link (a folder being resumed may be anyone's) */
	if (!(*f = cr_fopen_out(path, CR_OUT_APPEND, err)))
		return err->status;
	if (fresh) {
		for (int i = 0; cr_results_columns[i]; i++)
			put(*f, cr_results_columns[i], i == 0);
		fputc('\n', *f);
		fflush(*f);
	}
	return CR_OK;
}

enum cr_status cr_results_write(FILE *f, const struct cr_row *row, struct cr_err *err)
{
	return cr_results_write_extra(f, row, NULL, 0, err);
}

enum cr_status cr_results_header(FILE *f, const char *const *extra, int n_extra, struct cr_err *err)
{
	for (int i = 0; cr_results_columns[i]; i++)
		put(f, cr_results_columns[i], i == 0);
	for (int i = 0; i < n_extra; i++)
		put(f, extra[i], 0);
	fputc('\n', f);
	if (fflush(f))
		return cr_errf(err, CR_EIO, "cannot write a header: %s", strerror(errno));
	return CR_OK;
}

enum cr_status cr_results_write_extra(FILE *f, const struct cr_row *row, const char *const *extra,
				      int n_extra, struct cr_err *err)
{
	const struct cr_result *r = row->r;
	const struct cr_meta *m = row->m;
	char b[21][64], detail[sizeof r->detail], *cand;
	const char *cols[64];
	int i = 0;

	/* every field a candidate or its sidecar controls, escaped again here
	 * (escaping is idempotent) so no row can carry a control sequence */
	cr_text_escape(r->detail, strlen(r->detail), detail, sizeof detail);
	/* the file name one to one, whole (a path never cut: --resume, merge
	 * and gate --confirm find the file by it) */
	if (!(cand = cr_text_escape_name_dup(row->candidate)))
		return cr_errf(err, CR_ENOMEM, "out of memory");

	num(b[0], 64, r->max_abs_err, "%.6g");
	num(b[1], 64, r->max_rel_err, "%.6g");
	num(b[2], 64, r->time_us, "%.3f");
	num(b[3], 64, r->time_lo_us, "%.3f");
	num(b[4], 64, r->time_hi_us, "%.3f");
	num(b[5], 64, r->baseline_us, "%.3f");
	/* 4 decimals, unless that reads 0: a speedup is > 0 (report refuses 0) */
	num(b[6], 64, r->speedup, r->speedup > 0 && r->speedup < 5e-5 ? "%.4g" : "%.4f");
	num(b[7], 64, r->speedup_lo, "%.4f");
	num(b[8], 64, r->speedup_hi, "%.4f");
	if (r->samples > 0)
		snprintf(b[9], 64, "%d", r->samples);
	else
		b[9][0] = '\0';
	num(b[10], 64, r->err_vs_baseline, "%.4g");
	num(b[11], 64, r->tflops, "%.4g");
	num(b[12], 64, r->tbps, "%.4g");
	num(b[13], 64, r->roofline, "%.4f");
	cols[i++] = row->run_id;
	cols[i++] = row->task;
	cols[i++] = cand;
	cols[i++] = m->sample;
	cols[i++] = row->backend;
	cols[i++] = row->device;
	cols[i++] = row->no_result ? "" : check_verdict_name(r->status);
	cols[i++] = row->no_result ? "" : r->backward;
	cols[i++] = detail;
	cols[i++] = b[0];
	cols[i++] = b[1];
	cols[i++] = b[2];
	cols[i++] = b[3];
	cols[i++] = b[4];
	cols[i++] = b[5];
	cols[i++] = b[6];
	cols[i++] = b[7];
	cols[i++] = b[8];
	cols[i++] = b[9];
	cols[i++] = m->reasoning_tokens;
	cols[i++] = m->completion_tokens;
	cols[i++] = m->model;
	cols[i++] = m->temperature;
	cols[i++] = m->top_p;
	cols[i++] = m->top_k;
	cols[i++] = m->seed;
	cols[i++] = m->turn;
	cols[i++] = r->sha256;
	cols[i++] = b[10];
	cols[i++] = r->dims;
	cols[i++] = m->strategy;
	cols[i++] = b[11];
	cols[i++] = b[12];
	cols[i++] = b[13];
	cols[i++] = row->verify_seed ? row->verify_seed : "";
	cols[i++] = row->label ? row->label : "";
	cols[i++] = r->timed ? (r->noisy ? "1" : "0") : "";
	{
		/* the machine's load when the row was written: noisy neighbours */
		double la[1];
		if (getloadavg(la, 1) == 1)
			snprintf(b[14], 64, "%.2f", la[0]);
		else
			b[14][0] = '\0';
		cols[i++] = b[14];
	}
	cols[i++] = m->parent;
	cols[i++] = m->generation;
	cols[i++] = m->prompt_tokens;
	cols[i++] = m->cumulative_tokens;
	cols[i++] = m->gen_s;
	num(b[15], 64, row->verify_s, "%.3f");
	cols[i++] = b[15];
	cols[i++] = row->group ? row->group : "";
	/* the GPU's clocks while it was timed (NVML), empty when not sampled */
	b[16][0] = b[17][0] = b[18][0] = b[19][0] = '\0';
	if (r->gpu_sampled) {
		if (r->gpu_sm_min_mhz == r->gpu_sm_max_mhz)
			snprintf(b[16], 64, "%u", r->gpu_sm_max_mhz);
		else
			snprintf(b[16], 64, "%u-%u", r->gpu_sm_min_mhz, r->gpu_sm_max_mhz);
		snprintf(b[17], 64, "%u", r->gpu_mem_mhz);
		snprintf(b[18], 64, "%u", r->gpu_temp_max_c);
		if (r->gpu_retaken)
			snprintf(b[19], 64, "%.40s; %d retaken", r->gpu_reasons, r->gpu_retaken);
		else
			snprintf(b[19], 64, "%.60s", r->gpu_reasons);
	}
	cols[i++] = b[16];
	cols[i++] = b[17];
	cols[i++] = b[18];
	cols[i++] = b[19];
	/* which device ran it: the driver's ordinal (what --gpus takes) and its UUID */
	b[20][0] = '\0';
	if (r->gpu >= 0)
		snprintf(b[20], 64, "%d", r->gpu);
	cols[i++] = b[20];
	cols[i++] = row->gpu_uuid ? row->gpu_uuid : "";
	for (int k = 0; k < n_extra && i < 64; k++)
		cols[i++] = extra[k] ? extra[k] : "";
	for (int k = 0; k < i; k++) {
		size_t len = strlen(cols[k]);
		char *esc = malloc(4 * len + 1);
		if (!esc) {
			free(cand);
			return cr_errf(err, CR_ENOMEM, "out of memory");
		}
		cr_text_escape(cols[k], len, esc, 4 * len + 1);
		put(f, esc, k == 0);
		free(esc);
	}
	free(cand);
	fputc('\n', f);
	if (fflush(f) || fsync(fileno(f)))
		return cr_errf(err, CR_EIO, "cannot write results: %s", strerror(errno));
	return CR_OK;
}

enum cr_status cr_samples_open(const char *path, FILE **f, struct cr_err *err)
{
	bool fresh;
	enum cr_status st = existing_regular(path, &fresh, err);

	if (st)
		return st;
	if (!(*f = cr_fopen_out(path, CR_OUT_APPEND, err)))
		return err->status;
	if (fresh && (fputs("candidate,source_sha256,side,us\n", *f) < 0 || fflush(*f)))
		return cr_errf(err, CR_EIO, "cannot write %s: %s", path, strerror(errno));
	return CR_OK;
}

enum cr_status cr_samples_write(FILE *f, const char *candidate, const struct cr_result *r,
				struct cr_err *err)
{
	char *esc;
	int n = r->n_raw < CR_RAW_MAX ? r->n_raw : CR_RAW_MAX;

	if (!r->timed || n <= 0)
		return CR_OK;
	if (!(esc = cr_text_escape_name_dup(candidate)))
		return cr_errf(err, CR_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		for (int side = 0; side < 2; side++) {
			double us = side ? r->raw_base_us[i] : r->raw_cand_us[i];
			if (!isfinite(us))
				continue;
			csv_fwrite(f, esc, strlen(esc));
			fprintf(f, ",%s,%s,%.4f\n", r->sha256, side ? "base" : "cand", us);
		}
	free(esc);
	if (fflush(f) || fsync(fileno(f)))
		return cr_errf(err, CR_EIO, "cannot write samples: %s", strerror(errno));
	return CR_OK;
}

/* ---- resume ---- */

struct rd {
	int col, row;
	char *cand, sha[80];
	int ncols;
	char **keys;
	int n;
	bool oom;
};

static void rd_field(void *s, size_t len, void *data)
{
	struct rd *d = data;
	if (d->row > 0) {
		if (d->col == 2) {
			free(d->cand);
			if (!(d->cand = strndup(s ? (const char *)s : "", len)))
				d->oom = true;
		}
		if (d->col == 27)
			snprintf(d->sha, sizeof d->sha, "%.*s", (int)len, (const char *)s);
	}
	d->col++;
}

static void rd_row(int c, void *data)
{
	struct rd *d = data;
	(void)c;
	if (d->row > 0 && d->col >= 28 && d->cand) {   /* an unreadable file's row: no sha */
		char **nk = realloc(d->keys, sizeof *nk * (size_t)(d->n + 1));
		if (!nk) {
			d->oom = true;
		} else {
			d->keys = nk;
			if (asprintf(&d->keys[d->n], "%s\t%s", d->cand, d->sha) >= 0)
				d->n++;
			else
				d->oom = true;
		}
	}
	d->row++;
	d->col = 0;
	free(d->cand);
	d->cand = NULL;
	d->sha[0] = '\0';
}

enum cr_status cr_results_done_keys(const char *path, char ***keys, int *n, struct cr_err *err)
{
	struct csv_parser p;
	struct rd d;
	char buf[65536];
	size_t got;
	FILE *f = cr_fopen_data(NULL, path, CR_DATA_MAX_CSV, CR_DATA_OPTIONAL, err);

	*keys = NULL;
	*n = 0;
	if (!f)
		return errno == ENOENT ? CR_OK : err->status;
	memset(&d, 0, sizeof d);
	csv_init(&p, CSV_APPEND_NULL);
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		if (csv_parse(&p, buf, got, rd_field, rd_row, &d) != got)
			break;
	/* an unterminated last line (killed mid-write) is not finished: drop it */
	csv_free(&p);
	fclose(f);
	free(d.cand);   /* an unfinished last row's */
	*keys = d.keys;
	*n = d.n;
	if (d.oom)
		return cr_errf(err, CR_ENOMEM, "out of memory reading %s", path);
	return CR_OK;
}

/* ---- sidecars ---- */

static void get_str(json_t *o, const char *key, char *dst, size_t cap)
{
	json_t *v = json_object_get(o, key);
	if (json_is_string(v))
		snprintf(dst, cap, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(dst, cap, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(dst, cap, "%g", json_real_value(v));
	cr_text_escape_inplace(dst, cap);   /* a sidecar is the candidate's too */
}

/* A numeric field as the results.csv reader takes it (reports/report_csv.c):
 * an integer >= 0 (int_only) or a finite number >= 0, a JSON number or a
 * string holding one; anything else is left empty and named in m->bad. */
static void get_num(json_t *o, const char *key, char *dst, size_t cap, bool int_only,
		    struct cr_meta *m)
{
	json_t *v = json_object_get(o, key);
	char text[128], *end;
	bool ok;

	dst[0] = '\0';
	if (!v || json_is_null(v))
		return;
	if (json_is_string(v) && json_string_length(v) >= sizeof text)
		goto bad;   /* longer than any number it could be */
	text[0] = '\0';
	get_str(o, key, text, sizeof text);
	if (!*text && !json_is_string(v))
		goto bad;   /* true, an array, an object */
	if (!*text)
		return;
	errno = 0;
	if (int_only) {
		long long x = strtoll(text, &end, 10);
		ok = end != text && !*end && errno != ERANGE && x >= 0 &&
		     (json_is_string(v) || json_is_integer(v));
	} else {
		double x = strtod(text, &end);
		ok = end != text && !*end && errno != ERANGE && isfinite(x) && x >= 0;
	}
	for (const char *c = text; ok && *c; c++)
		ok = !isspace((unsigned char)*c);
	/* whole or not at all: a number cut to fit would be another number */
	if (ok && strlen(text) < cap) {
		memcpy(dst, text, strlen(text) + 1);
		return;
	}
bad:
	dst[0] = '\0';
	if (strlen(m->bad) + strlen(key) + 3 < sizeof m->bad)
		snprintf(m->bad + strlen(m->bad), sizeof m->bad - strlen(m->bad), "%s%s",
			 m->bad[0] ? ", " : "", key);
}

enum cr_status cr_meta_read(const char *cand_path, struct cr_meta *m, struct cr_err *err)
{
	char path[PATH_MAX + 8], esc[1100], *buf;
	int pn;
	const char *dot = strrchr(cand_path, '.');
	json_error_t je;
	json_t *o;
	size_t len = 0;

	memset(m, 0, sizeof m[0]);
	pn = snprintf(path, sizeof path, "%.*s.json",
		      (int)(dot ? (size_t)(dot - cand_path) : strlen(cand_path)), cand_path);
	if (pn < 0 || (size_t)pn >= sizeof path) {
		/* never a cut name: that would be another file's */
		cr_text_escape(cand_path, strlen(cand_path), esc, sizeof esc);
		return cr_errf(err, CR_EINPUT, "%s: the sidecar's path is too long", esc);
	}
	/* the sidecar is the candidate's too: a link is not followed, a FIFO
	 * not waited on, and only a regular file's own bytes reach a message */
	if (!(buf = cr_read_data(NULL, path, CR_DATA_MAX_JSON, CR_DATA_OPTIONAL, &len, err)))
		return errno == ENOENT ? CR_OK : err->status ? err->status : CR_EINPUT;
	o = json_loadb(buf, len, 0, &je);
	free(buf);
	cr_text_escape(path, strlen(path), esc, sizeof esc);
	if (!o) {
		cr_text_escape_inplace(je.text, sizeof je.text);
		return cr_errf(err, CR_EINPUT, "%s:%d:%d: %s", esc, je.line, je.column, je.text);
	}
	if (!json_is_object(o)) {
		json_decref(o);
		return cr_errf(err, CR_EINPUT, "%s: expected a JSON object", esc);
	}
	get_str(o, "model", m->model, sizeof m->model);
	get_str(o, "task", m->task, sizeof m->task);
	get_num(o, "sample", m->sample, sizeof m->sample, true, m);
	get_num(o, "seed", m->seed, sizeof m->seed, false, m);
	get_num(o, "temperature", m->temperature, sizeof m->temperature, false, m);
	get_num(o, "top_p", m->top_p, sizeof m->top_p, false, m);
	get_num(o, "top_k", m->top_k, sizeof m->top_k, false, m);
	get_num(o, "min_p", m->min_p, sizeof m->min_p, false, m);
	get_num(o, "turn", m->turn, sizeof m->turn, true, m);
	get_num(o, "prompt_tokens", m->prompt_tokens, sizeof m->prompt_tokens, false, m);
	get_num(o, "reasoning_tokens", m->reasoning_tokens, sizeof m->reasoning_tokens, false, m);
	get_num(o, "completion_tokens", m->completion_tokens, sizeof m->completion_tokens, false, m);
	get_str(o, "strategy", m->strategy, sizeof m->strategy);
	get_str(o, "parent", m->parent, sizeof m->parent);
	get_num(o, "generation", m->generation, sizeof m->generation, true, m);
	get_num(o, "cumulative_tokens", m->cumulative_tokens, sizeof m->cumulative_tokens, false, m);
	get_num(o, "gen_s", m->gen_s, sizeof m->gen_s, false, m);
	get_str(o, "expect", m->expect, sizeof m->expect);
	get_str(o, "expect_compile", m->expect_compile, sizeof m->expect_compile);
	json_decref(o);
	if (m->bad[0]) {
		char keys[sizeof m->bad];
		memcpy(keys, m->bad, sizeof keys);
		snprintf(m->bad, sizeof m->bad, "%.120s: not a number >= 0 (an integer for sample, "
			 "turn, generation), left empty: %s", esc, keys);
	}
	return CR_OK;
}

void cr_csv_drop_partial_row(const char *path)
{
	/* never through a link, never a FIFO: what is not a regular file is
	 * left alone here and refused by the reader that comes next */
	struct stat sb;
	int fd = lstat(path, &sb) || !S_ISREG(sb.st_mode) ? -1 :
		 open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	off_t sz, keep = 0;
	char ch;

	if (fd < 0)
		return;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return;
	}
	sz = lseek(fd, 0, SEEK_END);
	for (off_t p = sz - 1; p >= 0; p--)
		if (pread(fd, &ch, 1, p) == 1 && ch == '\n') {
			keep = p + 1;
			break;
		}
	if (keep < sz && ftruncate(fd, keep)) { /* best effort */ }
	close(fd);
}

enum cr_status cr_json_write(const void *j, const char *path, const char *tmp, size_t flags,
			     struct cr_err *err)
{
	FILE *f = cr_fopen_out(tmp, CR_OUT_NEW, err);

	if (!f)
		return err->status;
	if (json_dumpf((const json_t *)j, f, flags) | fclose(f) || rename(tmp, path)) {
		int e = errno;
		unlink(tmp);
		return cr_errf(err, CR_EIO, "%s: cannot write: %s", path, strerror(e));
	}
	return CR_OK;
}
