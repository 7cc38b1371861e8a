/* cmd_run.c — `crucible run`: inference-time search (gen/gen_run.c) with
 * this file's verifier: each candidate verified as `eval` verifies it
 * (harness/verify.c), its verdict kept beside it (<id>.verdict.json, so
 * --resume recomputes none), its row appended to results.csv and
 * samples.csv; the probe of self-consistency; the selection in
 * selected.csv; run.json. Docs: docs/RUN.md. */
#include "harness/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/sha256.h"
#include "sandbox/cgroup.h"
#include "cr_config.h"
#include "cr_version.h"
#include "common/cr_text.h"
#include "cuda/cuda_dev.h"
#include "decode/be/dec_be.h"
#include "decode/dec_run.h"
#include "common/cr_cli.h"
#include "gen/gen.h"
#include "gen/gen_run.h"
#include "harness/backend.h"
#include "harness/eval_out.h"
#include "harness/results.h"
#include "harness/seed.h"
#include "harness/verify.h"
#include "tasks/task_registry.h"
#include "tasks/task_rng.h"

static const char usage[] =
	"usage: crucible run --strategy best-of-n|refine|evolve|self-consistency\n"
	"                    (--model M.gguf | --endpoint URL --api-model NAME [--api-key-env VAR]\n"
	"                     | --replay DIR)\n"
	"                    (--tasks SET | --task NAME ...) --out DIR [options]\n"
	"Searches for a kernel per task, verifying every candidate; writes DIR/cand/<task>/,\n"
	"results.csv, samples.csv, selected.csv, curve.csv and run.json (docs/RUN.md).\n"
	"\n"
	"OPTIONS\n"
	"  --out DIR           the run's folder, made with its missing parents (mkdir -p) and\n"
	"                      locked for the run: a second run into it is refused (exit 2)\n"
	"                      naming the one that holds it\n"
	"  --strategy S        best-of-n (width), refine (depth), evolve (search),\n"
	"                      self-consistency (majority of agreeing outputs, no verifier)\n"
	"  --n N               samples (best-of-n, self-consistency), trajectories (refine),\n"
	"                      population (evolve); default 4\n"
	"  --turns T           turns per trajectory (refine, default 2), generations after the\n"
	"                      draft (evolve, default 2)\n"
	"  --keep K            evolve: parents kept per generation (default 2)\n"
	"  --budget-tokens B   completion tokens per task, all samples and turns (default: none)\n"
	"  --max-tokens N      per completion (default 4096)\n"
	"  --temperature T --top-p P --top-k K --min-p P   sampling (0.6, 0.95, off, off)\n"
	"  --seed S            generation and verification seed (default: drawn, kept in run.json)\n"
	"  --backend auto|cpu|cuda  candidate kind and where it runs (default cpu;\n"
	"                    auto: cuda when a GPU and the CUDA build are there)\n"
	"  --concurrency C     requests in flight (default 4): HTTP requests to an endpoint;\n"
	"                      for the built-in decoder, requests whose samples it batches\n"
	"  --batch B           built-in decoder: sequences decoded together (default 8)\n"
	"  --threads N --ctx N built-in decoder threads and context\n"
	"  --device D          built-in decoder: cpu, cuda or auto (default auto)\n"
	"  --kv-mem BYTES      built-in decoder: KV cache size, e.g. 512M (default: derived)\n"
	"  --max-batch-tokens N built-in decoder: tokens per step (default 256)\n"
	"  --draft ngram | --draft-model D.gguf [--draft-tokens K]\n"
	"                      built-in decoder: speculative decoding (docs/DECODER.md)\n"
	"  --chat-template NAME built-in decoder: chatml, llama3, deepseek-r1, phi3 or gemma\n"
	"                      over the one detected from the GGUF (docs/TOKENIZER.md)\n"
	"  --no-think          built-in decoder: Qwen3's thinking switch off\n"
	"  --reasoning EFFORT  endpoint: reasoning_effort low, medium or high in every request\n"
	"  --stream | --no-stream  endpoint: server-sent events (default), so a slow request\n"
	"                      shows progress and loses nothing to a timeout; or one answer\n"
	"  --request-timeout S endpoint: one HTTP request, whole (default 0: none when streaming,\n"
	"                      600 s when not)\n"
	"  --connect-timeout S endpoint: connecting (default 30)\n"
	"  --idle-timeout S    endpoint: no byte from the server for S seconds fails the try\n"
	"                      (default 300)\n"
	"  --retry-window S    endpoint: failed tries (a dropped or refused connection, a 429 or\n"
	"                      5xx) are retried with backoff until S seconds after a request's\n"
	"                      first failure (default 600), so a server restart is survived;\n"
	"                      when it is spent the run stops (exit 3), its rows kept: --resume\n"
	"  --max-retries N     endpoint: at most N retries of one request (default: the window's)\n"
	"  --tokenizer T       endpoint: how completion tokens are counted: FILE.gguf (that\n"
	"                      model's tokenizer), server (its /tokenize), usage (the server's\n"
	"                      usage only); default: server when it answers, else usage\n"
	"  --system TEXT       system message\n"
	"  --no-timing --quick --timeout S   as for eval (--timeout: a candidate's call)\n"
	"  --resume            continue a killed or stopped run in DIR (same options); says how\n"
	"                      many completions it reused and how many it generated\n"
	"  -h, --help          this page\n"
	"\n"
	"Progress: on a terminal one status line (candidates done/planned, requests in flight\n"
	"with their tokens so far, tokens, tokens/s); otherwise a line per generated completion.\n";

static const char exit_lines[] =
	"  0  done\n"
	"  2  bad usage or bad input; --out held by another run\n"
	"  3  the environment (generator unreachable after its retry window, no GPU, a\n"
	"     write that failed): the rows so far are kept and --resume finishes the run\n"
	"  5  --tasks names no task\n";

struct run_opts {
	int strategy;
	const char *model, *endpoint, *api_model, *api_key_env, *replay, *tasks, *out, *backend,
		*system;
	const char **task_list;
	int n_task_list;
	int n, turns, keep, max_tokens, top_k, concurrency, batch, threads, ctx;
	int device, max_batch_tokens; /* built-in decoder: enum dec_device; 0: default */
	int draft_ngram, draft_tokens, no_think;
	const char *draft_model, *chat_template, *reasoning;
	uint64_t kv_mem;
	long budget;
	float temperature, top_p, min_p;
	uint64_t seed;
	bool seed_given, resume, no_timing, quick;
	double timeout;
	/* endpoint: gen_endpoint_cfg's; 0 its default */
	double req_timeout, connect_timeout, idle_timeout, retry_window;
	int max_retries, stream;     /* stream: 1 on, -1 off, 0 default (on) */
	const char *tokenizer;
	bool endpoint_opt;           /* one of them was given */
};

/* ---- the verifier side ---- */

struct vctx {
	const struct run_opts *o;
	struct gen_generator *g;
	FILE *res, *samples, *sel;
	char run_id[64], device[256], seed_str[32], *workroot;
	char **keys;
	int n_keys;
	struct task *tasks;
	int n_tasks;
	bool cuda;
	char arch[16], baseline_dir[1024];
	double peak_tflops, peak_tbps;
	struct cr_gpu gpu;      /* cuda: the driver's device 0, the one crucible run uses */
	struct cr_result *last; /* the rows of the selection come from verdicts */
};

static const struct task *find_task(struct vctx *x, const char *name, struct cr_err *err)
{
	struct task *nt;
	for (int i = 0; i < x->n_tasks; i++)
		if (!strcmp(x->tasks[i].name, name))
			return &x->tasks[i];
	nt = realloc(x->tasks, sizeof *nt * (size_t)(x->n_tasks + 1));
	if (!nt) {
		cr_errf(err, CR_ENOMEM, "out of memory");
		return NULL;
	}
	x->tasks = nt;
	if (task_registry_find(name, &nt[x->n_tasks], err))
		return NULL;
	return &nt[x->n_tasks++];
}

static void on_timing(void *ctx, bool start)
{
	struct vctx *x = ctx;
	if (x->g->pause)
		x->g->pause(x->g->ctx, start);
}

static void verify_opts(struct vctx *x, uint64_t seed, struct cr_verify_opts *vo)
{
	*vo = (struct cr_verify_opts){ .seed = seed, .call_timeout_s = x->o->timeout,
				       .compile_timeout_s = 60, .time_cap_s = 1, .rel_target = 0.02,
				       .min_samples = 10, .no_timing = x->o->no_timing,
				       .quick = x->o->quick, .workroot = x->workroot, .cuda = x->cuda,
				       .arch = x->arch, .baseline_dir = x->cuda ? x->baseline_dir : NULL,
				       .peak_tflops = x->peak_tflops, .peak_tbps = x->peak_tbps,
				       .gpu = 0, .gpu_uuid = x->cuda ? x->gpu.uuid : NULL,
				       .gpu_bus_id = x->cuda ? x->gpu.bus_id : NULL,
				       .on_timing = on_timing, .hook_ctx = x };
}

static void verdict_path(const struct gen_cand *c, char *buf, size_t cap)
{
	const char *dot = strrchr(c->path, '.');
	snprintf(buf, cap, "%.*s.verdict.json", (int)(dot ? (size_t)(dot - c->path) : strlen(c->path)),
		 c->path);
}

static json_t *jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static double gnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void gstr(json_t *o, const char *k, char *dst, size_t cap)
{
	json_t *v = json_object_get(o, k);
	snprintf(dst, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
}

/* Ctrl-C or SIGTERM stops a run as kill -9 would (every completion received
 * and every row written is on disk, and --resume goes on from them), and
 * says so: the signal's own exit (130, 143) follows. */
static void on_stop(int sig)
{
	static const char msg[] = "\ncrucible run: interrupted: the completions received and the rows so "
				  "far are on disk; run the same command with --resume to finish\n";

	if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
	signal(sig, SIG_DFL);
	raise(sig);
}

static void stop_signals_say(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* What a verdict is the verdict of: this candidate's source (its sha256 as
 * it is on disk now) under this verification seed (hashed: a secret seed's
 * derivative is never written). --resume takes a verdict only when its
 * binding is the one computed afresh (round 3's seventh attacker swapped
 * the code behind a saved `ok`). */
static void verdict_binding(const struct gen_cand *c, const char *sha, char out[65])
{
	char buf[8 + 65];

	for (int i = 0; i < 8; i++)
		buf[i] = (char)(c->verify_seed >> (8 * i));
	snprintf(buf + 8, sizeof buf - 8, "%s", sha);
	cr_sha256_hex(buf, 8 + strlen(sha), out);
}

/* The verdict beside the candidate: what --resume reads instead of
 * verifying again (the raw timing samples stay in samples.csv). */
static enum cr_status save_verdict(const struct gen_cand *c, double verify_s, struct cr_err *err)
{
	const struct cr_result *r = &c->r;
	char path[1100], tmp[1200];
	json_t *j = json_object(), *w = json_object();

	json_object_set_new(j, "status", json_string(check_verdict_name(r->status)));
	json_object_set_new(j, "detail", json_string(r->detail));
	json_object_set_new(j, "backward", json_string(r->backward));
	json_object_set_new(j, "max_abs_err", jnum(r->max_abs_err));
	json_object_set_new(j, "max_rel_err", jnum(r->max_rel_err));
	json_object_set_new(j, "err_vs_baseline", jnum(r->err_vs_baseline));
	json_object_set_new(j, "time_us", jnum(r->time_us));
	json_object_set_new(j, "time_lo_us", jnum(r->time_lo_us));
	json_object_set_new(j, "time_hi_us", jnum(r->time_hi_us));
	json_object_set_new(j, "baseline_us", jnum(r->baseline_us));
	json_object_set_new(j, "speedup", jnum(r->speedup));
	json_object_set_new(j, "speedup_lo", jnum(r->speedup_lo));
	json_object_set_new(j, "speedup_hi", jnum(r->speedup_hi));
	json_object_set_new(j, "samples", json_integer(r->samples));
	json_object_set_new(j, "noisy", json_boolean(r->noisy));
	json_object_set_new(j, "timed", json_boolean(r->timed));
	json_object_set_new(j, "sha256", json_string(r->sha256));
	{
		char b[65];
		verdict_binding(c, r->sha256, b);
		json_object_set_new(j, "binding", json_string(b));
	}
	json_object_set_new(j, "dims", json_string(r->dims));
	json_object_set_new(j, "tflops", jnum(r->tflops));
	json_object_set_new(j, "tbps", jnum(r->tbps));
	json_object_set_new(j, "roofline", jnum(r->roofline));
	json_object_set_new(j, "sandbox", json_string(r->sandbox));
	json_object_set_new(j, "verify_s", jnum(verify_s));
	if (r->worst.set) {
		json_object_set_new(w, "stage", json_string(r->worst.stage));
		json_object_set_new(w, "shape", json_string(r->worst.shape));
		json_object_set_new(w, "profile", json_string(r->worst.profile));
		json_object_set_new(w, "output", json_string(r->worst.output));
		json_object_set_new(w, "index", json_integer(r->worst.index));
		json_object_set_new(w, "got", jnum(r->worst.got));
		json_object_set_new(w, "expected", jnum(r->worst.expected));
		json_object_set_new(w, "abs_err", jnum(r->worst.abs_err));
		json_object_set_new(w, "rel_err", jnum(r->worst.rel_err));
		json_object_set_new(j, "worst", w);
	} else {
		json_decref(w);
	}
	verdict_path(c, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (cr_json_write(j, path, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(9), err)) {
		json_decref(j);
		return err->status;
	}
	json_decref(j);
	return CR_OK;
}

/* false when there is none; CR_EINPUT in err when it is broken. */
static bool load_verdict(const struct gen_cand *c, struct cr_result *r, double *verify_s,
			 struct cr_err *err)
{
	char path[1100], st[32], *buf;
	json_error_t je;
	json_t *j, *w;
	size_t len = 0;
	int v;

	verdict_path(c, path, sizeof path);
	/* a run directory is untrusted: no link followed, no FIFO waited on */
	if (!(buf = cr_read_data(NULL, path, CR_DATA_MAX_JSON, CR_DATA_OPTIONAL, &len, err)))
		return false;   /* none, or err says why it cannot be read */
	j = json_loadb(buf, len, 0, &je);
	free(buf);
	gstr(j, "status", st, sizeof st);
	if (!j || (v = check_verdict_parse(st)) < 0) {
		cr_text_escape_inplace(path, sizeof path);
		cr_text_escape_inplace(st, sizeof st);
		cr_text_escape_inplace(je.text, sizeof je.text);
		cr_errf(err, CR_EINPUT, "%s:%d: not a verdict (%s)", path, j ? 1 : je.line, j ? st : je.text);
		json_decref(j);
		return false;
	}
	{
		/* the verdict of this source under this seed, or verified again */
		struct cr_cand_file f;
		char want[65] = "", have[65];

		cr_cand_load(&f, c->path);
		if (f.src)
			verdict_binding(c, f.sha256, want);
		cr_cand_file_release(&f);
		gstr(j, "binding", have, sizeof have);
		if (!want[0] || strcmp(want, have)) {
			cr_text_escape_inplace(path, sizeof path);
			fprintf(stderr, "run: %s: not the verdict of %s as it is now under this seed: verified again\n",
				path, c->id);
			json_decref(j);
			return false;
		}
	}
	cr_result_init(r);
	r->status = (enum check_verdict)v;
	gstr(j, "detail", r->detail, sizeof r->detail);
	gstr(j, "backward", r->backward, sizeof r->backward);
	r->max_abs_err = gnum(j, "max_abs_err");
	r->max_rel_err = gnum(j, "max_rel_err");
	r->err_vs_baseline = gnum(j, "err_vs_baseline");
	r->time_us = gnum(j, "time_us");
	r->time_lo_us = gnum(j, "time_lo_us");
	r->time_hi_us = gnum(j, "time_hi_us");
	r->baseline_us = gnum(j, "baseline_us");
	r->speedup = gnum(j, "speedup");
	r->speedup_lo = gnum(j, "speedup_lo");
	r->speedup_hi = gnum(j, "speedup_hi");
	r->samples = isfinite(gnum(j, "samples")) ? (int)gnum(j, "samples") : 0;
	r->noisy = json_is_true(json_object_get(j, "noisy"));
	r->timed = json_is_true(json_object_get(j, "timed"));
	gstr(j, "sha256", r->sha256, sizeof r->sha256);
	gstr(j, "dims", r->dims, sizeof r->dims);
	r->tflops = gnum(j, "tflops");
	r->tbps = gnum(j, "tbps");
	r->roofline = gnum(j, "roofline");
	gstr(j, "sandbox", r->sandbox, sizeof r->sandbox);
	*verify_s = gnum(j, "verify_s");
	if ((w = json_object_get(j, "worst")) && json_is_object(w)) {
		r->worst.set = true;
		gstr(w, "stage", r->worst.stage, sizeof r->worst.stage);
		gstr(w, "shape", r->worst.shape, sizeof r->worst.shape);
		gstr(w, "profile", r->worst.profile, sizeof r->worst.profile);
		gstr(w, "output", r->worst.output, sizeof r->worst.output);
		r->worst.index = (long long)gnum(w, "index");
		r->worst.got = gnum(w, "got");
		r->worst.expected = gnum(w, "expected");
		r->worst.abs_err = gnum(w, "abs_err");
		r->worst.rel_err = gnum(w, "rel_err");
	}
	json_decref(j);
	return true;
}

static bool row_done(const struct vctx *x, const struct gen_cand *c)
{
	char key[1200];
	snprintf(key, sizeof key, "%s\t%s", c->path, c->r.sha256);
	for (int k = 0; k < x->n_keys; k++)
		if (!strcmp(x->keys[k], key))
			return true;
	return false;
}

static enum cr_status v_verify(void *ctx, const char *task, struct gen_cand *c, const char *group,
			       struct cr_err *err)
{
	struct vctx *x = ctx;
	struct cr_verify_opts vo;
	struct cr_cand_file f;
	struct cr_meta m;
	struct cr_row row;
	const struct task *t;
	double verify_s = NAN;
	enum cr_status st = CR_OK;
	char vseed[32];

	if (x->o->resume && load_verdict(c, &c->r, &verify_s, err)) {
		if (row_done(x, c))
			return CR_OK;
	} else if (err->status) {
		return err->status;
	} else {
		int64_t t0 = cr_now_ns();
		if (!(t = find_task(x, task, err)))
			return err->status;
		verify_opts(x, c->verify_seed, &vo);
		cr_result_init(&c->r);
		cr_cand_load(&f, c->path);
		if (c->no_code) {
			/* prose is not compiled: what the model answered without a
			 * fence says so, not a compiler's complaint about it */
			c->r.status = CHECK_NO_CODE;
			snprintf(c->r.detail, sizeof c->r.detail,
				 "no code block found in the completion (%zu bytes)", c->text ? strlen(c->text) : 0);
			if (f.src)
				snprintf(c->r.sha256, sizeof c->r.sha256, "%s", f.sha256);
		} else if (!f.src) {
			c->r.status = CHECK_FORMAT_ERROR;
			snprintf(c->r.detail, sizeof c->r.detail, "%s", f.error);
		} else {
			snprintf(c->r.sha256, sizeof c->r.sha256, "%s", f.sha256);
			st = cr_verify(t, &f, &vo, &c->r, err);
			c->r.gpu = x->cuda ? 0 : -1;
		}
		cr_cand_file_release(&f);
		if (st)
			return st;
		if (c->r.status <= CHECK_TIMEOUT)
			c->r.max_abs_err = c->r.max_rel_err = c->r.err_vs_baseline = NAN;
		cr_text_escape_inplace(c->r.detail, sizeof c->r.detail);
		verify_s = (double)(cr_now_ns() - t0) / 1e9;
		if ((st = save_verdict(c, verify_s, err)))
			return st;
	}
	if ((st = cr_meta_read(c->path, &m, err)))
		return st;
	if (cr_seed_is_secret())
		snprintf(vseed, sizeof vseed, "secret");
	else
		snprintf(vseed, sizeof vseed, "%" PRIu64, c->verify_seed);
	row = (struct cr_row){ .run_id = x->run_id, .task = task, .candidate = c->path,
			       .backend = x->cuda ? "cuda" : "cpu", .device = x->device,
			       .verify_seed = vseed, .r = &c->r, .m = &m, .verify_s = verify_s,
			       .group = group, .gpu_uuid = c->r.gpu >= 0 ? x->gpu.uuid : NULL };
	if ((st = cr_results_write(x->res, &row, err)))
		return st;
	return cr_samples_write(x->samples, c->path, &c->r, err);
}

static enum cr_status v_probe(void *ctx, const char *task, struct gen_cand *c, uint64_t seed,
			      struct cr_err *err)
{
	struct vctx *x = ctx;
	struct cr_verify_opts vo;
	struct cr_cand_file f;
	struct cr_probe *p = calloc(1, sizeof *p);
	const struct task *t;
	enum cr_status st;

	if (!p)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	if (!(t = find_task(x, task, err))) {
		free(p);
		return err->status;
	}
	if (c->no_code) {
		/* nothing to run: it joins no group */
		free(p);
		c->probed = true;
		c->probe_ok = false;
		return CR_OK;
	}
	verify_opts(x, seed, &vo);
	vo.on_timing = NULL;
	cr_cand_load(&f, c->path);
	st = cr_probe(t, &f, &vo, seed, p, err);
	cr_cand_file_release(&f);
	if (st) {
		free(p);
		return st;
	}
	c->probe = p;
	c->probed = true;
	c->probe_ok = p->status == CHECK_OK;
	c->probe_us = p->call_us;
	return CR_OK;
}

static bool v_agree(void *ctx, const char *task, const struct gen_cand *a, const struct gen_cand *b)
{
	struct vctx *x = ctx;
	struct cr_err e;
	const struct task *t;

	cr_err_init(&e);
	t = find_task(x, task, &e);
	return t && a->probe && b->probe && cr_probe_agree(t, a->probe, b->probe);
}

static void v_probe_free(void *ctx, struct gen_cand *c)
{
	(void)ctx;
	cr_probe_release(c->probe);
	free(c->probe);
	c->probe = NULL;
}

static enum cr_status v_selected(void *ctx, const char *task, const struct gen_cand *c,
				 const char *reason, long tokens_spent, int n_cands, const char *stopped,
				 struct cr_err *err)
{
	struct vctx *x = ctx;
	char spent[32], nc[16], why[400];
	const char *extra[4] = { why, spent, nc, stopped };
	struct cr_meta m;
	struct cr_result none;
	struct cr_row row;
	enum cr_status st;

	snprintf(spent, sizeof spent, "%ld", tokens_spent);
	snprintf(nc, sizeof nc, "%d", n_cands);
	cr_text_escape(reason, strlen(reason), why, sizeof why);
	memset(&m, 0, sizeof m);
	if (c && (st = cr_meta_read(c->path, &m, err)))
		return st;
	if (!c) {
		cr_result_init(&none);
		none.max_abs_err = none.max_rel_err = none.err_vs_baseline = NAN;
	}
	row = (struct cr_row){ .run_id = x->run_id, .task = task, .candidate = c ? c->path : "",
			       .backend = x->cuda ? "cuda" : "cpu", .device = x->device,
			       .verify_seed = "", .r = c ? &c->r : &none, .m = &m, .verify_s = NAN,
			       .no_result = !c, .gpu_uuid = c && c->r.gpu >= 0 ? x->gpu.uuid : NULL };
	if ((st = cr_results_write_extra(x->sel, &row, extra, 4, err)))
		return st;
	fprintf(stderr, "run: %s: selected %s (%s)\n", task, c ? c->id : "nothing", reason);
	return CR_OK;
}

/* ---- options ---- */

static int bad(const char *opt, const char *v, const char *want)
{
	return cr_cli_usage("run", "%s: expected %s, got '%s'", opt, want, v);
}

static int int_arg(const char *opt, const char *v, long lo, long hi, long *out)
{
	uint64_t u;
	if (!cr_parse_u64(v, &u) || u > (uint64_t)hi || (long)u < lo || (long)u > hi) {
		char want[64];
		snprintf(want, sizeof want, "an integer in %ld..%ld", lo, hi);
		return bad(opt, v, want);
	}
	*out = (long)u;
	return 0;
}

static int float_arg(const char *opt, const char *v, double lo, double hi, float *out)
{
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !(d >= lo && d <= hi)) {
		char want[64];
		snprintf(want, sizeof want, "a number in [%g, %g]", lo, hi);
		return bad(opt, v, want);
	}
	*out = (float)d;
	return 0;
}

static int double_arg(const char *opt, const char *v, double lo, double hi, double *out)
{
	float f;
	int rc = float_arg(opt, v, lo, hi, &f);

	*out = rc ? 0 : strtod(v, NULL);
	return rc;
}

/* --tokenizer: server, usage, or a GGUF file that is there to read. */
static int tokenizer_arg(const char *v)
{
	struct stat sb;
	size_t n = strlen(v);

	if (!strcmp(v, "server") || !strcmp(v, "usage"))
		return 0;
	if (n < 5 || strcmp(v + n - 5, ".gguf"))
		return bad("--tokenizer", v, "a .gguf file, server or usage");
	errno = 0;
	if (stat(v, &sb) || !S_ISREG(sb.st_mode) || access(v, R_OK)) {
		char esc[1100];
		cr_text_escape(v, n, esc, sizeof esc);
		return cr_cli_usage("run", "--tokenizer %s: %s", esc,
			errno == ENOENT ? "no such file" : "not a readable file");
	}
	return 0;
}

static int parse(int argc, char **argv, struct run_opts *o)
{
	enum { O_STRATEGY = 256, O_MODEL, O_ENDPOINT, O_API_MODEL, O_API_KEY_ENV, O_REPLAY, O_TASKS,
	       O_TASK, O_BACKEND, O_OUT, O_N, O_TURNS, O_KEEP, O_BUDGET, O_MAX_TOKENS, O_TEMP, O_TOP_P,
	       O_TOP_K, O_MIN_P, O_SEED, O_RESUME, O_CONC, O_BATCH, O_THREADS, O_CTX, O_SYSTEM,
	       O_NO_TIMING, O_QUICK, O_TIMEOUT, O_DEVICE, O_KV_MEM, O_MBT, O_DRAFT, O_DRAFT_MODEL,
	       O_DRAFT_TOKENS, O_CHAT_TEMPLATE, O_NO_THINK, O_REASONING, O_STREAM, O_NO_STREAM,
	       O_REQ_TIMEOUT, O_CONNECT_TIMEOUT, O_IDLE_TIMEOUT, O_RETRY_WINDOW, O_MAX_RETRIES,
	       O_TOKENIZER, O_HELP };
	static const struct option opts[] = {
		{ "strategy", 1, 0, O_STRATEGY }, { "model", 1, 0, O_MODEL },
		{ "endpoint", 1, 0, O_ENDPOINT }, { "api-model", 1, 0, O_API_MODEL },
		{ "api-key-env", 1, 0, O_API_KEY_ENV }, { "replay", 1, 0, O_REPLAY },
		{ "tasks", 1, 0, O_TASKS }, { "task", 1, 0, O_TASK }, { "backend", 1, 0, O_BACKEND },
		{ "out", 1, 0, O_OUT }, { "n", 1, 0, O_N }, { "turns", 1, 0, O_TURNS },
		{ "keep", 1, 0, O_KEEP }, { "budget-tokens", 1, 0, O_BUDGET },
		{ "max-tokens", 1, 0, O_MAX_TOKENS }, { "temperature", 1, 0, O_TEMP },
		{ "top-p", 1, 0, O_TOP_P }, { "top-k", 1, 0, O_TOP_K }, { "min-p", 1, 0, O_MIN_P },
		{ "seed", 1, 0, O_SEED }, { "resume", 0, 0, O_RESUME }, { "concurrency", 1, 0, O_CONC },
		{ "batch", 1, 0, O_BATCH }, { "threads", 1, 0, O_THREADS }, { "ctx", 1, 0, O_CTX },
		{ "system", 1, 0, O_SYSTEM }, { "no-timing", 0, 0, O_NO_TIMING },
		{ "quick", 0, 0, O_QUICK }, { "timeout", 1, 0, O_TIMEOUT }, { "help", 0, 0, O_HELP },
		{ "device", 1, 0, O_DEVICE }, { "kv-mem", 1, 0, O_KV_MEM },
		{ "max-batch-tokens", 1, 0, O_MBT }, { "draft", 1, 0, O_DRAFT },
		{ "draft-model", 1, 0, O_DRAFT_MODEL }, { "draft-tokens", 1, 0, O_DRAFT_TOKENS },
		{ "chat-template", 1, 0, O_CHAT_TEMPLATE }, { "no-think", 0, 0, O_NO_THINK },
		{ "reasoning", 1, 0, O_REASONING }, { "stream", 0, 0, O_STREAM },
		{ "no-stream", 0, 0, O_NO_STREAM }, { "request-timeout", 1, 0, O_REQ_TIMEOUT },
		{ "connect-timeout", 1, 0, O_CONNECT_TIMEOUT }, { "idle-timeout", 1, 0, O_IDLE_TIMEOUT },
		{ "retry-window", 1, 0, O_RETRY_WINDOW }, { "max-retries", 1, 0, O_MAX_RETRIES },
		{ "tokenizer", 1, 0, O_TOKENIZER },
		{ 0, 0, 0, 0 } };
	int c, rc = 0, sources;
	long l;
	float f;

	optind = 1;
	while ((c = cr_cli_getopt("run", argc, argv, "h", opts)) != -1 && !rc) {
		switch (c) {
		case O_STRATEGY:
			if ((o->strategy = gen_strategy_parse(optarg)) < 0)
				rc = bad("--strategy", optarg, "best-of-n, refine, evolve or self-consistency");
			break;
		case O_MODEL: o->model = optarg; break;
		case O_ENDPOINT: o->endpoint = optarg; break;
		case O_API_MODEL: o->api_model = optarg; break;
		case O_API_KEY_ENV: o->api_key_env = optarg; break;
		case O_REPLAY: o->replay = optarg; break;
		case O_TASKS: o->tasks = optarg; break;
		case O_TASK: {
			const char **nl = realloc(o->task_list, sizeof *nl * (size_t)(o->n_task_list + 1));
			if (!nl)
				return 2;
			o->task_list = nl;
			nl[o->n_task_list++] = optarg;
			break;
		}
		case O_BACKEND:
			if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda") && strcmp(optarg, "auto"))
				rc = bad("--backend", optarg, "auto, cpu or cuda");
			o->backend = optarg;
			break;
		case O_OUT: o->out = optarg; break;
		case O_N: rc = int_arg("--n", optarg, 1, 256, &l); o->n = (int)l; break;
		case O_TURNS: rc = int_arg("--turns", optarg, 1, 64, &l); o->turns = (int)l; break;
		case O_KEEP: rc = int_arg("--keep", optarg, 1, 256, &l); o->keep = (int)l; break;
		case O_BUDGET: rc = int_arg("--budget-tokens", optarg, 1, 1L << 40, &o->budget); break;
		case O_MAX_TOKENS: rc = int_arg("--max-tokens", optarg, 1, 1 << 20, &l); o->max_tokens = (int)l; break;
		case O_TEMP: rc = float_arg("--temperature", optarg, 0, 100, &o->temperature); break;
		case O_TOP_P: rc = float_arg("--top-p", optarg, 0, 1, &o->top_p); break;
		case O_TOP_K: rc = int_arg("--top-k", optarg, 0, 1 << 20, &l); o->top_k = (int)l; break;
		case O_MIN_P: rc = float_arg("--min-p", optarg, 0, 1, &o->min_p); break;
		case O_SEED: {
			uint64_t u;
			if (!cr_parse_u64(optarg, &u))
				rc = bad("--seed", optarg, "a non-negative integer");
			o->seed = u;
			o->seed_given = true;
			break;
		}
		case O_RESUME: o->resume = true; break;
		case O_CONC: rc = int_arg("--concurrency", optarg, 1, 256, &l); o->concurrency = (int)l; break;
		case O_BATCH: rc = int_arg("--batch", optarg, 1, 256, &l); o->batch = (int)l; break;
		case O_THREADS: rc = int_arg("--threads", optarg, 1, 256, &l); o->threads = (int)l; break;
		case O_CTX: rc = int_arg("--ctx", optarg, 16, 1 << 20, &l); o->ctx = (int)l; break;
		case O_MBT:
			rc = int_arg("--max-batch-tokens", optarg, 1, 1 << 16, &l);
			o->max_batch_tokens = (int)l;
			break;
		case O_DRAFT:
			if (strcmp(optarg, "ngram"))
				rc = bad("--draft", optarg, "ngram");
			o->draft_ngram = 1;
			break;
		case O_DRAFT_MODEL: o->draft_model = optarg; break;
		case O_CHAT_TEMPLATE: o->chat_template = optarg; break;
		case O_NO_THINK: o->no_think = 1; break;
		case O_REASONING:
			if (strcmp(optarg, "low") && strcmp(optarg, "medium") && strcmp(optarg, "high"))
				rc = bad("--reasoning", optarg, "low, medium or high");
			o->reasoning = optarg;
			break;
		case O_STREAM:
		case O_NO_STREAM:
			if (o->stream && o->stream != (c == O_STREAM ? 1 : -1)) {
				rc = cr_cli_usage("run", "--stream and --no-stream exclude each other");
			}
			o->stream = c == O_STREAM ? 1 : -1;
			o->endpoint_opt = true;
			break;
		case O_REQ_TIMEOUT:
			rc = double_arg("--request-timeout", optarg, 0, 86400, &o->req_timeout);
			o->endpoint_opt = true;
			break;
		case O_CONNECT_TIMEOUT:
			rc = double_arg("--connect-timeout", optarg, 0.01, 3600, &o->connect_timeout);
			o->endpoint_opt = true;
			break;
		case O_IDLE_TIMEOUT:
			rc = double_arg("--idle-timeout", optarg, 0.01, 86400, &o->idle_timeout);
			o->endpoint_opt = true;
			break;
		case O_RETRY_WINDOW:
			rc = double_arg("--retry-window", optarg, 0.01, 86400, &o->retry_window);
			o->endpoint_opt = true;
			break;
		case O_MAX_RETRIES:
			rc = int_arg("--max-retries", optarg, 1, 100000, &l);
			o->max_retries = (int)l;
			o->endpoint_opt = true;
			break;
		case O_TOKENIZER:
			rc = tokenizer_arg(optarg);
			o->tokenizer = optarg;
			o->endpoint_opt = true;
			break;
		case O_DRAFT_TOKENS:
			rc = int_arg("--draft-tokens", optarg, 1, 64, &l);
			o->draft_tokens = (int)l;
			break;
		case O_DEVICE: {
			struct cr_err de;
			enum dec_device d;

			cr_err_init(&de);
			if (dec_device_parse(optarg, &d, &de)) {
				rc = cr_cli_usage("run", "%s", de.msg);
			}
			o->device = (int)d;
			break;
		}
		case O_KV_MEM: {
			struct cr_err de;

			cr_err_init(&de);
			if (dec_opt_bytes("--kv-mem", optarg, 1, (uint64_t)1 << 50, &o->kv_mem, &de)) {
				rc = cr_cli_usage("run", "%s", de.msg);
			}
			break;
		}
		case O_SYSTEM: o->system = optarg; break;
		case O_NO_TIMING: o->no_timing = true; break;
		case O_QUICK: o->quick = true; break;
		case O_TIMEOUT:
			rc = float_arg("--timeout", optarg, 0.1, 3600, &f);
			o->timeout = f;
			break;
		case 'h':
		case O_HELP:
			fputs(usage, stdout);
			cr_cli_help_tail(stdout, exit_lines,
					 CR_ENV_DATADIR | CR_ENV_SEED | CR_ENV_CACHE | CR_ENV_CUDA | CR_ENV_TMPDIR |
						 CR_ENV_DECODER | CR_ENV_COLOR);
			return -1;
		default: return CR_EXIT_USAGE; /* said by cr_cli_getopt */
		}
	}
	if (rc)
		return rc;
	if (optind < argc)
		return cr_cli_usage("run", "unexpected argument '%s'", argv[optind]);
	(void)f;
	sources = !!o->model + !!o->endpoint + !!o->replay;
	if (o->strategy < 0 || sources != 1 || (!o->tasks && !o->n_task_list) || !o->out)
		return cr_cli_usage("run", "need --strategy, one of --model, --endpoint or --replay, "
					   "--tasks or --task, and --out");
	if (o->endpoint && !o->api_model)
		return cr_cli_usage("run", "--endpoint needs --api-model NAME");
	if ((o->draft_ngram || o->draft_model || o->draft_tokens || o->device || o->kv_mem || o->max_batch_tokens ||
	     o->chat_template || o->no_think) && !o->model) {
		return cr_cli_usage("run", "--device, --kv-mem, --max-batch-tokens, --chat-template, --no-think "
				"and the --draft options are the built-in decoder's: they need --model");
	}
	if (o->reasoning && !o->endpoint) {
		return cr_cli_usage("run", "--reasoning is sent to an endpoint (--endpoint); the built-in "
				"decoder's templates (chatml, llama3, deepseek-r1, phi3, gemma) have no reasoning-effort "
				"setting (Qwen3's thinking switch is --no-think)");
	}
	if (o->endpoint_opt && !o->endpoint) {
		return cr_cli_usage("run", "--stream, --no-stream, --request-timeout, --connect-timeout, "
				"--idle-timeout, --retry-window, --max-retries and --tokenizer are the endpoint's: "
				"they need --endpoint");
	}
	if (o->draft_ngram && o->draft_model) {
		return cr_cli_usage("run", "--draft ngram and --draft-model exclude each other");
	}
	if (o->draft_tokens && !o->draft_ngram && !o->draft_model) {
		return cr_cli_usage("run", "--draft-tokens needs --draft or --draft-model");
	}
	if (o->strategy == GEN_EVOLVE && o->keep > o->n) {
		return cr_cli_usage("run", "--keep %d is more than the population --n %d", o->keep, o->n);
	}
	return 0;
}

/* ---- run.json ---- */

static json_t *options_json(const struct run_opts *o, const char *const *tasks, int n_tasks)
{
	json_t *t = json_array();
	for (int i = 0; i < n_tasks; i++)
		json_array_append_new(t, json_string(tasks[i]));
	return json_pack("{s:s, s:o, s:s, s:i, s:i, s:i, s:I, s:i, s:f, s:f, s:i, s:f, s:b, s:b, s:f, s:s*}",
			 "strategy", gen_strategy_name(o->strategy), "tasks", t, "backend", o->backend,
			 "n", o->n, "turns", o->turns, "keep", o->keep, "budget_tokens", (json_int_t)o->budget,
			 "max_tokens", o->max_tokens, "temperature", (double)o->temperature,
			 "top_p", (double)o->top_p, "top_k", o->top_k, "min_p", (double)o->min_p,
			 "no_timing", o->no_timing, "quick", o->quick, "timeout", o->timeout,
			 "system", o->system);
}

static void seed_hash(uint64_t seed, char hex[65])
{
	char t[32];
	int n = snprintf(t, sizeof t, "%" PRIu64, seed);
	cr_sha256_hex(t, (size_t)n, hex);
}

/* --resume: the run must be the same one. Takes its seed when not given. */
static int resume_check(struct run_opts *o, json_t *opts, const char *path)
{
	json_error_t je;
	struct cr_err e;
	size_t len = 0;
	char *buf;
	json_t *j, *old, *s;
	int rc = 0;

	cr_err_init(&e);
	if (!(buf = cr_read_data(NULL, path, CR_DATA_MAX_JSON, 0, &len, &e))) {
		fprintf(stderr, "crucible run: --resume: %s\n", e.msg);
		return 2;
	}
	j = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!j) {
		cr_text_escape_inplace(je.text, sizeof je.text);
		fprintf(stderr, "crucible run: --resume: %s: %s\n", path, je.text);
		return 2;
	}
	old = json_object_get(j, "options");
	if (!json_equal(old, opts)) {
		fprintf(stderr, "crucible run: --resume: the options differ from %s's (strategy, tasks, n, "
				"turns, budget, sampling, timing): start a new --out\n", path);
		rc = 2;
	}
	s = json_object_get(j, "seed");
	if (!rc && !o->seed_given && json_is_integer(s)) {
		o->seed = (uint64_t)json_integer_value(s);
		o->seed_given = true;
	} else if (!rc && json_is_integer(s) && (uint64_t)json_integer_value(s) != o->seed) {
		fprintf(stderr, "crucible run: --resume: --seed differs from %s's\n", path);
		rc = 2;
	}
	json_decref(j);
	return rc;
}

static void utc_now(char when[32])
{
	time_t now = time(NULL);
	strftime(when, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
}

/* The endpoint's connection options as given (0: the generator's default;
 * its describe() says what it used). Kept apart from "options", which
 * --resume compares: a resumed run may wait longer for its server. */
static json_t *endpoint_json(const struct run_opts *o)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:i, s:s, s:s}", "request_timeout", o->req_timeout,
			 "connect_timeout", o->connect_timeout, "idle_timeout", o->idle_timeout,
			 "retry_window", o->retry_window, "max_retries", o->max_retries,
			 "stream", o->stream < 0 ? "off" : "on", "tokenizer",
			 o->tokenizer ? o->tokenizer : "default");
}

/* What the run did (end): its completions and tokens by where their
 * counts came from, and for --resume what it reused. */
static json_t *stats_json(const struct run_opts *o, const struct gen_run_stats *s, bool complete)
{
	json_t *src = json_object(), *j;

	for (int i = 0; i < GEN_RUN_COUNT_SRCS; i++)
		if (s->by_src[i])
			json_object_set_new(src, gen_run_count_srcs[i], json_integer(s->by_src[i]));
	j = json_pack("{s:b, s:i, s:i, s:i, s:i, s:I, s:I, s:o}", "complete", complete,
		      "completions", s->reused + s->generated, "verified", s->verified, "no_code", s->no_code,
		      "tasks_over_budget", s->over_budget, "completion_tokens", (json_int_t)s->completion_tokens,
		      "lost_tokens", (json_int_t)s->lost_tokens, "count_src", src);
	if (o->resume)
		json_object_set_new(j, "resume", json_pack("{s:i, s:i}", "reused", s->reused,
							   "generated", s->generated));
	return j;
}

/* path through tmp (a fresh file: whatever is planted there is removed,
 * never written through), fsynced before the rename, so a crash leaves the
 * old run.json or the new one, whole: --resume reads it. */
static int write_whole(const char *path, const char *tmp, const char *txt)
{
	size_t n = strlen(txt), off = 0;
	int fd;

	if (unlink(tmp) && errno != ENOENT)
		goto fail;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0)
		goto fail;
	while (off < n) {
		ssize_t w = write(fd, txt + off, n - off);
		if (w <= 0) {
			close(fd);
			unlink(tmp);
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) | close(fd) || rename(tmp, path)) {
		unlink(tmp);
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "crucible run: cannot write %s: %s\n", path, strerror(errno));
	return 3;
}

/* run.json, written whole (tmp + rename) at the start and again at the end
 * (end != NULL): the generator's describe() then holds what is only known
 * at the end (an endpoint's token-count statistics). */
static int write_run_json(const char *path, const struct run_opts *o, json_t *opts,
			  struct gen_generator *g, uint64_t seed, const char *run_id, const char *device,
			  const char *started, const struct gen_run_stats *end, bool complete)
{
	char hex[65], tmp[1200];
	json_t *j = json_object();

	json_object_set_new(j, "command", json_string("run"));
	json_object_set_new(j, "run_id", json_string(run_id));
	json_object_set_new(j, "crucible", json_string(CRUCIBLE_VERSION));
	json_object_set_new(j, "revision", json_string(CRUCIBLE_REVISION));
	json_object_set_new(j, "started", json_string(started));
	if (end) {
		char when[32];
		json_t *sj = stats_json(o, end, complete), *r = json_object_get(sj, "resume");

		utc_now(when);
		json_object_set_new(j, "ended", json_string(when));
		if (r)
			json_object_set(j, "resume", r);
		json_object_del(sj, "resume");
		json_object_set_new(j, "run", sj);
	}
	json_object_set_new(j, "strategy", json_string(gen_strategy_name(o->strategy)));
	json_object_set_new(j, "generator", g->describe ? g->describe(g->ctx) : json_null());
	if (o->endpoint)
		json_object_set_new(j, "endpoint_options", endpoint_json(o));
	json_object_set_new(j, "options", json_incref(opts));
	json_object_set_new(j, "device", json_string(device));
	if (cr_seed_is_secret()) {
		json_object_set_new(j, "seed", json_string("secret"));
	} else {
		json_object_set_new(j, "seed", json_integer((json_int_t)seed));
	}
	seed_hash(seed, hex);
	json_object_set_new(j, "seed_sha256", json_string(hex));
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	{
		char *txt = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
		int rc = txt ? write_whole(path, tmp, txt) : 3;

		free(txt);
		json_decref(j);
		return rc;
	}
}

/* ---- the command ---- */

static char *prompt_cb(void *ctx, const char *task, const char *backend, struct cr_err *err)
{
	const struct dec_task_source *src = ctx;
	return src->prompt(src->ctx, task, backend, err);
}

int cr_cmd_run(int argc, char **argv)
{
	struct run_opts o = { .strategy = -1, .backend = "cpu", .n = 4, .turns = 2, .keep = 2,
			      .max_tokens = 4096, .temperature = 0.6f, .top_p = 0.95f, .concurrency = 4,
			      .batch = 8, .timeout = 5 };
	struct gen_generator g = { 0 };
	struct vctx x = { .o = &o, .g = &g };
	struct dec_task_source src;
	struct gen_run_stats stats = { 0 };
	struct cr_err err;
	char **names = NULL, path[1200], label[256] = "", started[32] = "";
	size_t n_names = 0;
	json_t *opts = NULL;
	enum cr_backend be;
	uint64_t mixed;
	int rc = parse(argc, argv, &o);
	enum cr_status st = CR_OK;
	int lock_fd = -1;

	if (rc) {
		free(o.task_list);
		return rc < 0 ? 0 : rc;
	}
	cr_err_init(&err);
	gen_task_source(&src);
	/* the task list: --tasks sets and --task names, in order */
	if (o.tasks && src.list(src.ctx, o.tasks, &names, &n_names, &err))
		goto fail;
	for (int i = 0; i < o.n_task_list; i++) {
		struct task t;
		char **nn;
		if (task_registry_find(o.task_list[i], &t, &err))
			goto fail;
		nn = realloc(names, sizeof *nn * (n_names + 1));
		if (!nn) {
			task_release(&t);
			cr_errf(&err, CR_ENOMEM, "out of memory");
			goto fail;
		}
		names = nn;
		/* the canonical name: --task L1/23 is L1/23_Softmax in every row */
		names[n_names++] = strdup(t.name);
		task_release(&t);
	}
	if (n_names == 0) {
		fprintf(stderr, "crucible run: --tasks %s names no task\n", o.tasks ? o.tasks : "");
		rc = 5;
		goto out;
	}
	if ((rc = cr_backend_pick(o.backend, false, &be, "crucible run")))
		goto out;
	x.cuda = be == CR_BACKEND_CUDA;
	if (x.cuda) {
		if (cr_cuda_dev_get(0, &x.gpu, &err)) {
			fprintf(stderr, "crucible run: --backend cuda: %s\n", err.msg);
			rc = 3;
			goto out;
		}
		snprintf(x.device, sizeof x.device, "%s", x.gpu.desc);
		snprintf(x.arch, sizeof x.arch, "%s", x.gpu.arch);
		x.peak_tflops = x.gpu.peak_tflops;
		x.peak_tbps = x.gpu.peak_tbps;
		snprintf(x.baseline_dir, sizeof x.baseline_dir, "%s/baselines/cuda", task_datadir());
	} else {
		snprintf(x.device, sizeof x.device, "cpu");
	}
	/* the folder with its parents, and this run's alone until it ends: a
	 * second run into it is refused, naming the one that holds it */
	if (cr_out_lock(o.out, "run", &lock_fd, &err))
		goto fail;
	stop_signals_say();
	opts = options_json(&o, (const char *const *)names, (int)n_names);
	snprintf(path, sizeof path, "%s/run.json", o.out);
	if (o.resume && (rc = resume_check(&o, opts, path)))
		goto out;
	if (!o.resume && !access(path, F_OK)) {
		fprintf(stderr, "crucible run: %s holds a run already: --resume it or choose a new --out\n", o.out);
		rc = 2;
		goto out;
	}
	if (!o.seed_given && !cr_seed_is_secret())
		o.seed = cr_secure_u64() >> 11;
	mixed = cr_seed(o.seed);
	/* the generator */
	if (o.model) {
		struct gen_local_cfg lc = { .model = o.model, .threads = o.threads, .ctx = o.ctx,
					    .concurrency = o.concurrency, .batch = o.batch, .device = o.device,
					    .kv_mem = (size_t)o.kv_mem, .max_batch_tokens = o.max_batch_tokens,
					    .draft_ngram = o.draft_ngram, .draft_model = o.draft_model,
					    .draft_tokens = o.draft_tokens, .chat_template = o.chat_template,
					    .no_think = o.no_think };
		st = gen_local_open(&lc, &g, &err);
		const char *b = strrchr(o.model, '/');
		snprintf(label, sizeof label, "%s", b ? b + 1 : o.model);
	} else if (o.endpoint) {
		struct gen_endpoint_cfg ec = { .url = o.endpoint, .model = o.api_model,
					       .api_key_env = o.api_key_env, .concurrency = o.concurrency,
					       .timeout_s = o.req_timeout, .connect_timeout_s = o.connect_timeout,
					       .idle_timeout_s = o.idle_timeout, .retry_window_s = o.retry_window,
					       .max_retries = o.max_retries, .stream = o.stream ? o.stream : 1,
					       .tokenizer = o.tokenizer, .reasoning_effort = o.reasoning };
		st = gen_endpoint_open(&ec, &g, &err);
		snprintf(label, sizeof label, "%s", o.api_model);
	} else {
		st = gen_replay_open(o.replay, &g, &err);
		snprintf(label, sizeof label, "replay");
	}
	if (st)
		goto fail;
	snprintf(x.run_id, sizeof x.run_id, "%lld-%d", (long long)time(NULL), (int)getpid());
	utc_now(started);
	if ((rc = write_run_json(path, &o, opts, &g, o.seed, x.run_id, x.device, started, NULL, false)))
		goto out;
	/* results.csv and samples.csv are appended (resume keeps what is done);
	 * selected.csv is written anew: the selection is recomputed from verdicts */
	snprintf(path, sizeof path, "%s/results.csv", o.out);
	if (o.resume) {
		cr_csv_drop_partial_row(path);
		if (cr_results_done_keys(path, &x.keys, &x.n_keys, &err))
			goto fail;
	}
	if (cr_results_open(path, &x.res, &err))
		goto fail;
	snprintf(path, sizeof path, "%s/samples.csv", o.out);
	if (o.resume)
		cr_csv_drop_partial_row(path);
	if (cr_samples_open(path, &x.samples, &err))
		goto fail;
	snprintf(path, sizeof path, "%s/selected.csv", o.out);
	if (!(x.sel = cr_fopen_out(path, CR_OUT_NEW, &err)))
		goto fail;
	{
		const char *extra[4] = { "reason", "tokens_spent", "candidates", "stopped" };
		if (cr_results_header(x.sel, extra, 4, &err))
			goto fail;
	}
	/* a candidate's and a baseline's worker at a time: their task quotas
	 * reserved beside other crucible runs' (sandbox/cgroup.h), or refused
	 * now rather than charged to a candidate later */
	if (cr_cg_available() && cr_cg_plan(2) < 0) {
		cr_errf(&err, CR_EENV, "%s", cr_cg_mode());
		goto fail;
	}
	/* under TMPDIR as eval's (a Slurm job's scratch), else /tmp */
	if (!(x.workroot = eval_workroot_new())) {
		cr_errf(&err, CR_EENV, "cannot create a work folder under %s: %s", eval_tmp_base(),
			strerror(errno));
		goto fail;
	}
	{
		struct gen_run_cfg cfg = {
			.strategy = (enum gen_strategy)o.strategy, .out = o.out, .backend = x.cuda ? "cuda" : "cpu",
			.model_label = label, .tasks = (const char *const *)names, .n_tasks = (int)n_names,
			.n = o.n, .turns = o.turns, .keep = o.keep, .budget_tokens = o.budget,
			.max_tokens = o.max_tokens, .temperature = o.temperature, .top_p = o.top_p,
			.min_p = o.min_p, .top_k = o.top_k,
			/* generation as `crucible generate`: the flag's seed, unless a secret
			 * is mixed in (then one derived apart); verification from a seed
			 * derived apart from both, so no request carries it */
			.seed = cr_seed_is_secret() ? task_mix(mixed, 0x67656e) >> 1 : o.seed, .verify_seed = task_mix(mixed, 0x766572696679),
			.system = o.system, .batch = o.model ? o.batch : 0, .resume = o.resume,
			.progress = 0, .prompt = prompt_cb, .prompt_ctx = &src };
		struct gen_verifier v = { .ctx = &x, .verify = v_verify, .probe = v_probe, .agree = v_agree,
					  .probe_free = v_probe_free, .selected = v_selected,
					  .on_timing = on_timing };
		fprintf(stderr, "run: %s, %zu task(s), generator %s (%s), out %s\n",
			gen_strategy_name(cfg.strategy), n_names, g.kind, label, o.out);
		st = gen_run(&cfg, &g, &v, &stats, &err);
	}
	rmdir(x.workroot);
	free(x.workroot);
	x.workroot = NULL;
	/* run.json again: what the run did, and the generator's end-of-run
	 * figures; a stopped run's too (--resume rewrites it) */
	snprintf(path, sizeof path, "%s/run.json", o.out);
	if ((rc = write_run_json(path, &o, opts, &g, o.seed, x.run_id, x.device, started, &stats, !st)))
		goto out;
	if (o.resume)
		fprintf(stderr, "run: --resume reused %d completion(s) from disk and generated %d\n",
			stats.reused, stats.generated);
	if (st == CR_EENV) {
		fprintf(stderr, "crucible run: %s\n", err.msg[0] ? err.msg : cr_status_name(err.status));
		fprintf(stderr, "run: stopped: the %d row(s) so far are in %s/results.csv and every completion "
			"received is on disk; run the same command with --resume to finish\n",
			stats.verified, o.out);
		rc = 3;
		goto out;
	}
	if (st)
		goto fail;
	fprintf(stderr, "run: done: %s/results.csv, selected.csv, curve.csv\n", o.out);
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "crucible run: %s\n", err.msg[0] ? err.msg : cr_status_name(err.status));
	rc = cr_status_exit_code(err.status);
out:
	cr_cg_unplan();
	if (x.workroot) {
		rmdir(x.workroot);
		free(x.workroot);
	}
	if (x.res)
		fclose(x.res);
	if (x.samples)
		fclose(x.samples);
	if (x.sel && fclose(x.sel) && !rc) {
		fprintf(stderr, "crucible run: cannot write %s/selected.csv\n", o.out);
		rc = 3;
	}
	if (g.release)
		g.release(g.ctx);
	json_decref(opts);
	for (size_t i = 0; i < n_names; i++)
		free(names[i]);
	free(names);
	for (int i = 0; i < x.n_keys; i++)
		free(x.keys[i]);
	free(x.keys);
	task_list_free(x.tasks, x.n_tasks);
	free(o.task_list);
	cr_out_unlock(lock_fd);
	return rc;
}
