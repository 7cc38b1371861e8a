/* dec_cmd_gen.c — `crucible generate`: for each task and sample, renders the
 * task prompt with the model's chat template, generates, and writes
 *   OUT/<task>_s<i>.cu|.c   the last fenced code block, `// @task` ensured
 *   OUT/<task>_s<i>.json    sidecar metadata (SPEC §3), the token ids too
 *   OUT/<task>_s<i>.txt     the full completion
 * With --prompt TEXT instead of tasks: one user message, its samples drawn
 * from the streams (seed, no task, i) and written as OUT/prompt_s<i>.txt
 * and .json (no code file: there is no task).
 * Every task goes to one engine (dec_engine.h): a task's prompt is
 * prefilled once and its samples share its blocks; samples of all tasks are
 * batched continuously. Progress and tokens/s go to stderr. */
#include "decode/dec.h"
#include "common/cr_cli.h"
#include "decode/engine/dec_engine.h"
#include "decode/dec_run.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: crucible generate --model M.gguf (--tasks SET | --prompt TEXT) --n N --out DIR [options]\n"
	"Writes N candidates per task: DIR/<task>_s<i>.cu (or .c), a .json sidecar (with the\n"
	"generated token ids) and the full completion as .txt. With --prompt: N completions\n"
	"of one user message, DIR/prompt_s<i>.txt and .json (no code file: there is no task).\n"
	"Defaults: --max-tokens 4096, --temperature 0.6, --top-p 0.95.\n"
	"\n"
	"OPTIONS\n"
	"  --tasks SET          comma-separated sets or task names (smoke, L1, smoke/relu)\n"
	"  --prompt TEXT        instead of --tasks: TEXT as the user message (after --system),\n"
	"                       rendered by the chat template; sample i draws from the stream\n"
	"                       (seed, no task, i), as the model server's choice i with that seed\n"
	"  --n N                samples per task (default 1)\n"
	"  --out DIR            output directory, made with its missing parents\n"
	"  --backend auto|cuda|cpu  which candidate kind to ask for (default: the one this\n"
	"                       machine can run, as eval decides: cuda when a GPU and the\n"
	"                       CUDA build are there, else cpu; said on stderr)\n"
	"  --batch B            decode B samples together, of any tasks (default 8): one pass\n"
	"                       over the weights serves B tokens; results do not depend on B\n"
	"  --system TEXT        system message (default: none)\n"
	"  --chat-template NAME chatml, llama3, deepseek-r1, phi3 or gemma over the template\n"
	"                       detected from the GGUF (docs/TOKENIZER.md)\n"
	"  --no-think           Qwen3's thinking switch off: the answer opens with an empty\n"
	"                       think block (recorded in the sidecar)\n"
	"  -h, --help           this page\n";

static void help_page(void)
{
	fputs(usage, stdout);
	fputs(dec_opts_help, stdout);
	cr_cli_help_tail(stdout,
			 "  0  every sample written\n"
			 "  2  bad usage or bad input (a task that does not fit is skipped, the\n"
			 "     others written)\n"
			 "  3  the environment (no GPU for --device cuda, out of memory, a write\n"
			 "     that failed)\n",
			 CR_ENV_DATADIR | CR_ENV_SEED | CR_ENV_CUDA | CR_ENV_DECODER);
}

struct gen_cfg {
	struct dec_opts o;
	const char *tasks, *prompt, *out, *backend, *system, *chat_template;
	int no_think;
	int backend_given; /* --backend, auto included */
	int n;
	int batch; /* samples decoded together */
};

/* mkdir -p of the directory part of path. */
static enum cr_status make_parents(const char *path, struct cr_err *err)
{
	char *p = strdup(path);
	enum cr_status st = CR_OK;

	if (!p)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0777) && errno != EEXIST) {
			st = cr_errf(err, CR_EIO, "%s: cannot create directory: %s", p, strerror(errno));
			break;
		}
		*s = '/';
	}
	free(p);
	return st;
}

static enum cr_status write_file(const char *path, const char *data, size_t n, struct cr_err *err)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return cr_errf(err, CR_EIO, "%s: cannot write: %s", path, strerror(errno));
	if (fwrite(data, 1, n, f) != n || fclose(f))
		return cr_errf(err, CR_EIO, "%s: write failed", path);
	return CR_OK;
}

/* The generated ids, all of them (an end-of-generation token included):
 * what a client compares with another generator's tokens exactly. */
static json_t *token_ids(const struct dec_gen_out *o)
{
	json_t *a = json_array();

	for (int i = 0; a && i < o->n_tokens; i++)
		if (json_array_append_new(a, json_integer(o->tokens[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* Sample i's files: its text, its code file (a task's only), its sidecar.
 * task NULL: the --prompt completion, files named prompt_s<i>. */
static enum cr_status write_sample(const struct gen_cfg *g, const struct dec_tok *tok,
				   const char *task, int i, int n_prompt, const struct dec_gen_out *o,
				   struct cr_err *err)
{
	const char *stem = task ? task : "prompt";
	size_t plen = strlen(g->out) + strlen(stem) + 64;
	char *path = malloc(plen), *code = NULL, *txt = NULL, *ids_txt = NULL;
	const char *base = strrchr(g->o.model, '/');
	json_t *j = NULL, *ids = NULL;
	enum cr_status st;

	if (!path)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	snprintf(path, plen, "%s/%s_s%d.txt", g->out, stem, i);
	if ((st = make_parents(path, err)) || (st = write_file(path, o->text, o->text_len, err)))
		goto out;
	if (task) {
		code = dec_candidate_code(o->text, o->text_len, task);
		if (!code) {
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			goto out;
		}
		snprintf(path, plen, "%s/%s_s%d.%s", g->out, task, i, strcmp(g->backend, "cpu") ? "cu" : "c");
		if ((st = write_file(path, code, strlen(code), err)))
			goto out;
	}
	if (!(j = json_object()) || !(ids = token_ids(o))) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	json_object_set_new(j, "model", json_string(base ? base + 1 : g->o.model));
	json_object_set_new(j, "task", task ? json_string(task) : json_null());
	json_object_set_new(j, "sample", json_integer(i));
	json_object_set_new(j, "seed", json_integer((json_int_t)g->o.seed));
	json_object_set_new(j, "temperature", json_real(g->o.samp.temperature));
	json_object_set_new(j, "top_p", json_real(g->o.samp.top_p));
	json_object_set_new(j, "top_k", json_integer(g->o.samp.top_k));
	json_object_set_new(j, "min_p", json_real(g->o.samp.min_p));
	json_object_set_new(j, "turn", json_integer(0));
	json_object_set_new(j, "prompt_tokens", json_integer(n_prompt));
	json_object_set_new(j, "reasoning_tokens", json_integer(dec_gen_reasoning_tokens(tok, o)));
	json_object_set_new(j, "completion_tokens", json_integer(o->n_tokens));
	json_object_set_new(j, "strategy", json_string("best-of-n"));
	json_object_set_new(j, "max_tokens", json_integer(g->o.max_tokens));
	json_object_set_new(j, "finish_reason", json_string(o->finish));
	json_object_set_new(j, "chat_template", json_string(dec_chat_template_name(tok)));
	if (g->no_think)
		json_object_set_new(j, "no_think", json_true());
	json_object_set_new(j, "decode_tokens_per_s", json_real(dec_gen_rate(o)));
	snprintf(path, plen, "%s/%s_s%d.json", g->out, stem, i);
	/* the fields a line each, then the ids on one line of their own (a
	 * field last, spliced in before the closing brace) */
	txt = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	ids_txt = json_dumps(ids, JSON_COMPACT);
	if (!txt || !ids_txt) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	{
		size_t tl = strlen(txt) - 2, il = strlen(ids_txt); /* txt ends "\n}" */
		char *nl = realloc(txt, tl + il + 32);

		if (!nl) {
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			goto out;
		}
		txt = nl;
		tl += (size_t)sprintf(txt + tl, ",\n  \"token_ids\": ");
		memcpy(txt + tl, ids_txt, il);
		tl += il;
		memcpy(txt + tl, "\n}\n", 4);
		st = write_file(path, txt, tl + 3, err);
	}
out:
	free(txt);
	free(ids_txt);
	json_decref(ids);
	json_decref(j);
	free(code);
	free(path);
	return st;
}

static double dec_gen_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One task in flight: its prompt, its request and what became of it. */
struct task_run {
	const struct gen_cfg *g;
	const struct dec_tok *tok;
	char *task;          /* NULL: the --prompt request */
	int32_t *ids;
	size_t n_ids;
	struct dec_req r;
	struct dec_gen_out *outs;
	enum cr_status st;   /* the first failure writing its samples */
	struct cr_err err;
	int total;           /* tokens generated */
	double t0;
};

static const char *run_name(const struct task_run *t)
{
	return t->task ? t->task : "prompt";
}

/* The task's prompt (or --prompt's text) rendered and encoded; a bad name
 * or a prompt that does not fit is the task's failure. */
static enum cr_status prepare(const struct gen_cfg *g, struct dec_tok *tok, const struct dec_task_source *src,
			      struct task_run *t, int ctx, struct cr_err *err)
{
	const char *task = t->task;
	char *user = NULL, *chat = NULL;
	enum cr_status st;

	if (!task) {
		if (!(user = strdup(g->prompt)))
			return cr_errf(err, CR_ENOMEM, "out of memory");
	} else {
		/* the name becomes a path under --out: no absolute paths, no ".." */
		if (!*task || task[0] == '/' || !strncmp(task, "../", 3) || strstr(task, "/../") ||
		    (strlen(task) >= 3 && !strcmp(task + strlen(task) - 3, "/..")) || !strcmp(task, ".."))
			return cr_errf(err, CR_EINPUT, "task name '%s' is not a relative path", task);
		user = src->prompt(src->ctx, task, g->backend, err);
		if (!user)
			return err->status ? err->status : CR_EINPUT;
	}
	/* the templates write BOS as text where the family has one: add_bos 0 */
	if (!(st = dec_chat_format(tok, g->system, user, &chat, err)))
		st = dec_tok_encode(tok, chat, strlen(chat), 1, 0, &t->ids, &t->n_ids, err);
	free(chat);
	free(user);
	if (!st && (t->n_ids == 0 || (ctx && (int)t->n_ids >= ctx)))
		st = cr_errf(err, CR_EUSAGE, "%s: prompt of %zu tokens does not fit the context of %d",
			     run_name(t), t->n_ids, ctx);
	return st;
}

/* Each sample as it ends: its files, a line on stderr; the task's summary
 * with its last sample. */
static void on_sample(void *ctx, struct dec_req *r, int i)
{
	struct task_run *t = ctx;
	struct dec_gen_out *o = &r->outs[i];
	struct cr_err e;

	cr_err_init(&e);
	if (!t->st && write_sample(t->g, t->tok, t->task, i, (int)t->n_ids, o, &e)) {
		t->st = e.status;
		t->err = e;
	}
	t->total += o->n_tokens;
	fprintf(stderr, "generate: %s sample %d/%d: %d tokens, %s\n", run_name(t), i + 1, r->n, o->n_tokens,
		o->finish);
	dec_gen_out_release(o);
	if (r->n_done == r->n) {
		double s = dec_gen_now() - t->t0;

		fprintf(stderr, "generate: %s: %d samples, %d tokens in %.1fs (%.1f tok/s), prompt %zu tokens\n",
			run_name(t), r->n, t->total, s, s > 0 ? t->total / s : 0, t->n_ids);
	}
}

/* A line every few seconds: samples done and tokens/s. */
struct progress {
	struct task_run *t;
	int n_tasks, n, tty;
	double t0, last;
};

static void on_step(void *ctx)
{
	struct progress *p = ctx;
	double now = dec_gen_now();
	int done = 0, all = 0, tok = 0;

	if (now - p->last < 10)
		return;
	p->last = now;
	for (int k = 0; k < p->n_tasks; k++) {
		done += p->t[k].r.n_done;
		all += p->t[k].st || !p->t[k].ids ? 0 : p->n;
		tok += p->t[k].total;
	}
	fprintf(stderr, "generate: %d/%d samples done, %d tokens written, %.0fs\n", done, all, tok, now - p->t0);
}

enum { O_TASKS = DEC_OPT_OWN, O_PROMPT, O_OUT, O_SYSTEM, O_BACKEND, O_N, O_BATCH, O_CHAT_TEMPLATE, O_NO_THINK };

static const struct option opts[] = {
	DEC_OPTS_LONG,
	{ "tasks", required_argument, NULL, O_TASKS },
	{ "prompt", required_argument, NULL, O_PROMPT },
	{ "out", required_argument, NULL, O_OUT },
	{ "system", required_argument, NULL, O_SYSTEM },
	{ "backend", required_argument, NULL, O_BACKEND },
	{ "n", required_argument, NULL, O_N },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "chat-template", required_argument, NULL, O_CHAT_TEMPLATE },
	{ "no-think", no_argument, NULL, O_NO_THINK },
	{ NULL, 0, NULL, 0 }
};

static enum cr_status own_opt(void *ctx, int code, const char *v, struct cr_err *err)
{
	struct gen_cfg *g = ctx;
	uint64_t n;

	switch (code) {
	case O_TASKS: g->tasks = v; return CR_OK;
	case O_PROMPT: g->prompt = v; return CR_OK;
	case O_OUT: g->out = v; return CR_OK;
	case O_SYSTEM: g->system = v; return CR_OK;
	case O_CHAT_TEMPLATE: g->chat_template = v; return CR_OK;
	case O_NO_THINK: g->no_think = 1; return CR_OK;
	case O_BACKEND:
		if (strcmp(v, "cuda") && strcmp(v, "cpu") && strcmp(v, "auto"))
			return cr_errf(err, CR_EUSAGE, "--backend: expected auto, cuda or cpu, got '%s'",
				       v);
		g->backend = strcmp(v, "auto") ? v : NULL; /* auto: as without --backend */
		g->backend_given = 1;
		return CR_OK;
	case O_N:
		if (dec_opt_int("--n", v, 1, 1000000, &n, err))
			return CR_EUSAGE;
		g->n = (int)n;
		return CR_OK;
	case O_BATCH:
		if (dec_opt_int("--batch", v, 1, 256, &n, err))
			return CR_EUSAGE;
		g->batch = (int)n;
		return CR_OK;
	}
	return cr_errf(err, CR_EINTERNAL, "generate: option code %d has no case", code);
}

static enum cr_status parse(struct gen_cfg *g, int argc, char **argv, int *help, struct cr_err *err)
{
	enum cr_status st = dec_opts_getopt(&g->o, argc, argv, opts, own_opt, g, help, err);

	if (st || *help)
		return st;
	if (g->tasks && g->prompt)
		cr_errf(err, CR_EUSAGE, "--tasks and --prompt exclude each other");
	else if (!g->o.model || !(g->tasks || g->prompt) || !g->out)
		cr_errf(err, CR_EUSAGE, "need --model, --tasks or --prompt, and --out");
	else if (g->prompt && g->backend_given)
		cr_errf(err, CR_EUSAGE, "--backend picks the code file's kind: --prompt writes none");
	else
		return CR_OK;
	dec_usage_say("generate", err);
	return CR_EUSAGE;
}

/* Every task's request into one engine: samples of all tasks are decoded
 * together (at most --batch at a time), each written as it ends. A task
 * that fails (its prompt does not fit, its files cannot be written) is
 * reported and skipped; the exit code is the first failure's. */
static enum cr_status run_all(const struct gen_cfg *g, int *lock, struct dec_model *m, struct dec_tok *tok,
			      const struct dec_task_source *src, char **names, size_t n_names,
			      struct cr_err *err)
{
	struct task_run *t = calloc(n_names ? n_names : 1, sizeof *t);
	struct dec_engine *e = NULL;
	struct dec_model *dm = NULL;
	struct dec_engine_cfg cfg;
	struct progress pr = { t, (int)n_names, g->n, isatty(2), dec_gen_now(), dec_gen_now() };
	enum cr_status st = CR_OK;
	int failed = 0, ctx = g->o.ctx, longest = 0;

	if (!t)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n_names; i++) {
		t[i].g = g;
		t[i].tok = tok;
		t[i].task = names[i];
		cr_err_init(&t[i].err);
		if ((t[i].st = prepare(g, tok, src, &t[i], ctx ? ctx : m->cfg.ctx_len, &t[i].err)) == CR_ENOMEM) {
			st = cr_errf(err, CR_ENOMEM, "%s", t[i].err.msg);
			goto out;
		}
		if (!t[i].st && (int)t[i].n_ids + g->o.max_tokens + 1 > longest)
			longest = (int)t[i].n_ids + g->o.max_tokens + 1;
	}
	if (g->prompt && t[0].st) { /* the one request: nothing else to do, no folder made */
		st = cr_errf(err, t[0].st, "%s", t[0].err.msg[0] ? t[0].err.msg : cr_status_name(t[0].st));
		goto out;
	}
	/* the context: --ctx, else the longest prompt + max tokens, capped by the model's */
	if (!ctx)
		ctx = longest < m->cfg.ctx_len ? longest : m->cfg.ctx_len;
	if (ctx < 2)
		ctx = 2;
	if (g->o.draft_model && (st = dec_open_draft(g->o.draft_model, g->o.model, tok, &dm, err)))
		goto out;
	dec_opts_engine_cfg(&g->o, ctx, g->batch, dm, &cfg);
	cfg.on_step = on_step;
	cfg.ctx = &pr;
	if ((st = dec_engine_new(m, &cfg, &e, err)))
		goto out;
	/* --out made with its parents and ours alone while we write it (a second
	 * generate into it is refused, naming this one); taken once every input
	 * (the model, a draft model, the device) has been checked, so a refused
	 * command leaves no folder behind */
	if ((st = cr_out_lock(g->out, "generate", lock, err)))
		goto out;
	fprintf(stderr, "generate: device %s%s%s, context %d, %d samples at a time, KV cache %d blocks of %d\n",
		dec_engine_device(e), dec_engine_device_note(e)[0] ? "; " : "", dec_engine_device_note(e), ctx,
		cfg.max_seqs, dec_engine_stats(e)->n_blocks, dec_engine_stats(e)->block_size);
	for (size_t i = 0; i < n_names; i++) {
		struct task_run *k = &t[i];

		if (k->st)
			continue;
		k->outs = calloc((size_t)g->n, sizeof *k->outs);
		if (!k->outs) {
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			goto out;
		}
		k->r = (struct dec_req){ .prompt = k->ids, .n_prompt = (int)k->n_ids, .n = g->n, .tok = tok,
					 .outs = k->outs, .on_sample = on_sample, .ctx = k,
					 .p = { g->o.max_tokens, g->o.samp, g->o.seed, k->task, 0, g->o.stops,
						g->o.n_stops, 0, NULL, NULL, 0 } };
		k->t0 = dec_gen_now();
		if ((k->st = dec_engine_submit(e, &k->r, &k->err)) == CR_ENOMEM) {
			st = cr_errf(err, CR_ENOMEM, "%s", k->err.msg);
			goto out;
		}
	}
	if ((st = dec_engine_run(e, err)))
		goto out;
	{
		const struct dec_engine_stats *es = dec_engine_stats(e);

		fprintf(stderr, "generate: %lld steps, %lld tokens decoded, %lld prefilled, %lld from the prefix "
			"cache, %lld preemptions, %.1fs\n", (long long)es->steps, (long long)es->decode_tokens,
			(long long)es->prefill_tokens, (long long)es->cached_tokens, (long long)es->preemptions,
			dec_gen_now() - pr.t0);
		if (cfg.draft_tokens)
			fprintf(stderr, "generate: drafts %lld proposed, %lld accepted (%.0f%%)\n",
				(long long)es->draft_proposed, (long long)es->draft_accepted,
				es->draft_proposed ? 100.0 * es->draft_accepted / es->draft_proposed : 0);
	}
	for (size_t i = 0; i < n_names; i++)
		if (t[i].st) {
			fprintf(stderr, "crucible generate: %s: skipped: %s\n", run_name(&t[i]),
				t[i].err.msg[0] ? t[i].err.msg : cr_status_name(t[i].st));
			failed++;
			if (!st)
				st = t[i].st;
		}
	if (failed)
		cr_errf(err, st, "%d of %zu tasks failed (see above)", failed, n_names);
out:
	dec_engine_free(e);
	dec_model_free(dm);
	for (size_t i = 0; i < n_names; i++) {
		for (int k = 0; t[i].outs && k < g->n; k++)
			dec_gen_out_release(&t[i].outs[k]);
		free(t[i].outs);
		free(t[i].ids);
	}
	free(t);
	return st;
}

int dec_generate_main(int argc, char **argv, const struct dec_task_source *src)
{
	struct gen_cfg g = { .o = { .max_tokens = 4096, .samp = { 0.6f, 0, 0.95f, 0 } },
			     .backend = NULL, .n = 1, .batch = 8 };
	struct cr_err err;
	struct dec_model *m = NULL;
	struct dec_tok *tok = NULL;
	char **names = NULL;
	size_t n_names = 0;
	int help = 0, lock = -1;
	enum cr_status st;

	cr_err_init(&err);
	if ((st = parse(&g, argc, argv, &help, &err)))
		goto out;
	if (help) {
		help_page();
		goto out;
	}
	if (g.prompt) { /* one request, no task: names[0] NULL */
		if (!(names = calloc(1, sizeof *names))) {
			st = cr_errf(&err, CR_ENOMEM, "out of memory");
			goto out;
		}
		n_names = 1;
	} else {
		if (!src || !src->list || !src->prompt) {
			st = cr_errf(&err, CR_EINTERNAL, "no task source");
			goto out;
		}
		/* no --backend: the kind this machine can run, as eval decides */
		if (!g.backend && src->default_backend &&
		    (st = src->default_backend(src->ctx, &g.backend, &err)))
			goto out;
		if (!g.backend)
			g.backend = "cuda";
		if ((st = src->list(src->ctx, g.tasks, &names, &n_names, &err)))
			goto out;
	}
	if ((st = dec_model_open(g.o.model, &m, &err)) || (st = dec_vocab_tokenizer(m->gguf, &tok, &err)) ||
	    (g.chat_template && (st = dec_chat_set_template(tok, g.chat_template, &err))) ||
	    (g.no_think && (st = dec_chat_set_no_think(tok, &err))))
		goto out;
	if (g.prompt)
		fprintf(stderr, "generate: %s (%s, %d layers, %.1fM params, template %s), a prompt x %d samples\n",
			g.o.model, m->cfg.arch_name, m->cfg.n_layers, dec_model_n_params(m) / 1e6,
			dec_chat_template_name(tok), g.n);
	else
		fprintf(stderr, "generate: %s (%s, %d layers, %.1fM params, template %s), %zu tasks x %d samples\n",
			g.o.model, m->cfg.arch_name, m->cfg.n_layers, dec_model_n_params(m) / 1e6,
			dec_chat_template_name(tok), n_names, g.n);
	st = run_all(&g, &lock, m, tok, src, names, n_names, &err);
out:
	for (size_t i = 0; i < n_names; i++)
		free(names[i]);
	free(names);
	dec_tok_free(tok);
	dec_model_free(m);
	cr_out_unlock(lock);
	/* a usage error with no message left was said with its --help hint */
	if (st && (err.msg[0] || st != CR_EUSAGE))
		cr_cli_error("generate", "%s", err.msg[0] ? err.msg : cr_status_name(st));
	return cr_status_exit_code(st);
}
