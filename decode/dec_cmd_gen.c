/* dec_cmd_gen.c — `crucible generate`: for each task and sample, renders the
 * task prompt with the model's chat template, generates, and writes
 *   OUT/<task>_s<i>.cu|.c   the last fenced code block, `// @task` ensured
 *   OUT/<task>_s<i>.json    sidecar metadata (SPEC §3)
 *   OUT/<task>_s<i>.txt     the full completion
 * The prompt is prefilled once per task; every sample restarts from that
 * cache. Progress and tokens/s go to stderr. */
#include "decode/dec.h"
#include "decode/dec_run.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
	"usage: crucible generate --model M.gguf --tasks SET --n N --out DIR [options]\n"
	"Writes N candidates per task: DIR/<task>_s<i>.cu (or .c), a .json sidecar and the\n"
	"full completion as .txt.\n"
	"  --tasks SET          comma-separated sets or task names (smoke, L1, smoke/relu)\n"
	"  --n N                samples per task (default 1)\n"
	"  --out DIR            output directory\n"
	"  --backend cuda|cpu   which candidate kind to ask for (default cuda)\n"
	"  --batch B            decode B samples together (default 8): one pass over the\n"
	"                       weights serves B tokens; results do not depend on B\n"
	"  --system TEXT        system message (default: none)\n"
	"  Defaults: --max-tokens 4096, --temperature 0.6, --top-p 0.95.\n";

struct gen_cfg {
	struct dec_opts o;
	const char *tasks, *out, *backend, *system;
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

static enum cr_status write_sample(const struct gen_cfg *g, const struct dec_tok *tok,
				   const char *task, int i, int n_prompt, const struct dec_gen_out *o,
				   struct cr_err *err)
{
	size_t plen = strlen(g->out) + strlen(task) + 64;
	char *path = malloc(plen), *code = NULL, *txt = NULL;
	const char *base = strrchr(g->o.model, '/');
	json_t *j = NULL;
	enum cr_status st;

	if (!path)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	snprintf(path, plen, "%s/%s_s%d.txt", g->out, task, i);
	if ((st = make_parents(path, err)) || (st = write_file(path, o->text, o->text_len, err)))
		goto out;
	code = dec_candidate_code(o->text, o->text_len, task);
	if (!code) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	snprintf(path, plen, "%s/%s_s%d.%s", g->out, task, i, strcmp(g->backend, "cpu") ? "cu" : "c");
	if ((st = write_file(path, code, strlen(code), err)))
		goto out;
	j = json_object();
	json_object_set_new(j, "model", json_string(base ? base + 1 : g->o.model));
	json_object_set_new(j, "task", json_string(task));
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
	json_object_set_new(j, "decode_tokens_per_s", json_real(dec_gen_rate(o)));
	snprintf(path, plen, "%s/%s_s%d.json", g->out, task, i);
	txt = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	if (!txt) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	{
		size_t tl = strlen(txt);
		char *nl = realloc(txt, tl + 2);

		if (!nl) {
			st = cr_errf(err, CR_ENOMEM, "out of memory");
			goto out;
		}
		txt = nl;
		memcpy(txt + tl, "\n", 2);
		st = write_file(path, txt, tl + 1, err);
	}
out:
	free(txt);
	json_decref(j);
	free(code);
	free(path);
	return st;
}

struct progress {
	const char *task;
	int first, count, n; /* samples first+1 .. first+count of n */
	int tty;             /* stderr is a terminal: redraw one line */
};

/* A line redrawn in place on a terminal, a line every 256 tokens in a pipe. */
static void on_token(void *ctx, int k)
{
	const struct progress *p = ctx;

	if (p->tty && k % 16 == 0)
		fprintf(stderr, "\rgenerate: %s samples %d-%d/%d: %d tokens", p->task, p->first + 1,
			p->first + p->count, p->n, k);
	else if (!p->tty && k % 256 == 0)
		fprintf(stderr, "generate: %s samples %d-%d/%d: %d tokens each\n", p->task, p->first + 1,
			p->first + p->count, p->n, k);
}

static enum cr_status run_task(const struct gen_cfg *g, struct dec_model *m, struct dec_tok *tok,
			       const struct dec_task_source *src, const char *task, struct cr_err *err)
{
	char *user = NULL, *chat = NULL;
	int32_t *ids = NULL;
	size_t n_ids = 0;
	float *logits = NULL;
	struct dec_state *s = NULL;
	struct dec_gen_out *outs = NULL;
	enum cr_status st = CR_OK;
	int ctx, batch;

	/* the name becomes a path under --out: no absolute paths, no ".." */
	if (!*task || task[0] == '/' || !strncmp(task, "../", 3) || strstr(task, "/../") ||
	    (strlen(task) >= 3 && !strcmp(task + strlen(task) - 3, "/..")) || !strcmp(task, "..")) {
		st = cr_errf(err, CR_EINPUT, "task name '%s' is not a relative path", task);
		goto out;
	}
	user = src->prompt(src->ctx, task, g->backend, err);
	if (!user) {
		st = err->status ? err->status : CR_EINPUT;
		goto out;
	}
	/* the templates write BOS as text where the family has one: add_bos 0 */
	if ((st = dec_chat_format(tok, g->system, user, &chat, err)) ||
	    (st = dec_tok_encode(tok, chat, strlen(chat), 1, 0, &ids, &n_ids, err)))
		goto out;
	ctx = g->o.ctx ? g->o.ctx : (int)n_ids + g->o.max_tokens;
	if (ctx > m->cfg.ctx_len && !g->o.ctx)
		ctx = m->cfg.ctx_len;
	if ((int)n_ids >= ctx || n_ids == 0) {
		st = cr_errf(err, CR_EUSAGE, "%s: prompt of %zu tokens does not fit the context of %d",
			     task, n_ids, ctx);
		goto out;
	}
	logits = malloc((size_t)m->cfg.n_vocab * sizeof *logits);
	if (!logits) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	batch = g->batch < g->n ? g->batch : g->n;
	outs = calloc((size_t)batch, sizeof *outs);
	if (!outs) {
		st = cr_errf(err, CR_ENOMEM, "out of memory");
		goto out;
	}
	if ((st = dec_state_new_seqs(m, ctx, batch > 64 ? batch : 64, batch, g->o.threads, &s, err)) ||
	    (st = dec_forward(s, ids, (int)n_ids, NULL, err)))
		goto out;
	memcpy(logits, s->logits, (size_t)m->cfg.n_vocab * sizeof *logits);
	/* samples i0 .. i0+nb-1 as one batch, each from its own RNG stream */
	for (int i0 = 0; i0 < g->n; i0 += batch) {
		int nb = g->n - i0 < batch ? g->n - i0 : batch, total = 0;
		struct progress pr = { task, i0, nb, g->n, isatty(2) };
		struct dec_gen_params gp = { g->o.max_tokens, g->o.samp, g->o.seed, task, (uint64_t)i0,
					     g->o.stops, g->o.n_stops, 0, on_token, &pr };

		if ((st = dec_generate_n(s, tok, ids, (int)n_ids, logits, &gp, nb, outs, err)))
			goto out;
		if (pr.tty)
			fputc('\n', stderr);
		for (int k = 0; k < nb && !st; k++) {
			st = write_sample(g, tok, task, i0 + k, (int)n_ids, &outs[k], err);
			total += outs[k].n_tokens;
			fprintf(stderr, "generate: %s sample %d/%d: %d tokens, %s\n", task, i0 + k + 1, g->n,
				outs[k].n_tokens, outs[k].finish);
		}
		fprintf(stderr, "generate: %s: %d samples, %d tokens in %.1fs (%.1f tok/s)\n", task, nb, total,
			outs[0].decode_s, outs[0].decode_s > 0 ? total / outs[0].decode_s : 0);
		for (int k = 0; k < nb; k++)
			dec_gen_out_release(&outs[k]);
		if (st)
			goto out;
	}
out:
	free(outs);
	dec_state_free(s);
	free(logits);
	free(ids);
	free(chat);
	free(user);
	return st;
}

enum { O_TASKS = DEC_OPT_OWN, O_OUT, O_SYSTEM, O_BACKEND, O_N, O_BATCH };

static const struct option opts[] = {
	DEC_OPTS_LONG,
	{ "tasks", required_argument, NULL, O_TASKS },
	{ "out", required_argument, NULL, O_OUT },
	{ "system", required_argument, NULL, O_SYSTEM },
	{ "backend", required_argument, NULL, O_BACKEND },
	{ "n", required_argument, NULL, O_N },
	{ "batch", required_argument, NULL, O_BATCH },
	{ NULL, 0, NULL, 0 }
};

static enum cr_status own_opt(void *ctx, int code, const char *v, struct cr_err *err)
{
	struct gen_cfg *g = ctx;
	uint64_t n;

	switch (code) {
	case O_TASKS: g->tasks = v; return CR_OK;
	case O_OUT: g->out = v; return CR_OK;
	case O_SYSTEM: g->system = v; return CR_OK;
	case O_BACKEND:
		if (strcmp(v, "cuda") && strcmp(v, "cpu"))
			return cr_errf(err, CR_EUSAGE, "--backend: expected cuda or cpu, got '%s'",
				       v);
		g->backend = v;
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
	if (!g->o.model || !g->tasks || !g->out)
		return cr_errf(err, CR_EUSAGE, "need --model, --tasks and --out (see --help)");
	return CR_OK;
}

int dec_generate_main(int argc, char **argv, const struct dec_task_source *src)
{
	struct gen_cfg g = { .o = { .max_tokens = 4096, .samp = { 0.6f, 0, 0.95f, 0 } },
			     .backend = "cuda", .n = 1, .batch = 8 };
	struct cr_err err;
	struct dec_model *m = NULL;
	struct dec_tok *tok = NULL;
	char **names = NULL;
	size_t n_names = 0;
	int help = 0, failed = 0;
	enum cr_status st;

	cr_err_init(&err);
	if ((st = parse(&g, argc, argv, &help, &err)))
		goto out;
	if (help) {
		printf("%s%s", usage, dec_opts_help);
		goto out;
	}
	if (!src || !src->list || !src->prompt) {
		st = cr_errf(&err, CR_EINTERNAL, "no task source");
		goto out;
	}
	if ((st = src->list(src->ctx, g.tasks, &names, &n_names, &err)))
		goto out;
	if ((st = dec_model_open(g.o.model, &m, &err)) || (st = dec_vocab_tokenizer(m->gguf, &tok, &err)))
		goto out;
	fprintf(stderr, "generate: %s (%s, %d layers, %.1fM params, template %s), %zu tasks x %d samples\n",
		g.o.model, m->cfg.arch_name, m->cfg.n_layers, dec_model_n_params(m) / 1e6,
		dec_chat_template_name(tok), n_names, g.n);
	/* a task that fails (its prompt does not fit, its files cannot be
	 * written) is reported and skipped; the exit code is the first failure's */
	for (size_t i = 0; i < n_names; i++) {
		struct cr_err terr;
		enum cr_status ts;

		cr_err_init(&terr);
		ts = run_task(&g, m, tok, src, names[i], &terr);
		if (ts == CR_ENOMEM) {
			st = cr_errf(&err, ts, "%s", terr.msg);
			break;
		}
		if (ts) {
			fprintf(stderr, "crucible generate: %s: skipped: %s\n", names[i],
				terr.msg[0] ? terr.msg : cr_status_name(ts));
			failed++;
			if (!st)
				st = ts;
		}
	}
	if (failed)
		cr_errf(&err, st, "%d of %zu tasks failed (see above)", failed, n_names);
out:
	for (size_t i = 0; i < n_names; i++)
		free(names[i]);
	free(names);
	dec_tok_free(tok);
	dec_model_free(m);
	if (st)
		fprintf(stderr, "crucible generate: %s\n", err.msg[0] ? err.msg : cr_status_name(st));
	return cr_status_exit_code(st);
}
