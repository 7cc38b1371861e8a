/* dec_cmd_decode.c — `crucible decode`: raw completion without a chat
 * template, for debugging and for comparing with other runtimes. Prints the
 * prompt token ids, the generated ids, the text and per step the top-K
 * (id, logprob) under log-softmax of the raw logits; --json for machines. */
#include "decode/dec.h"
#include "common/cr_cli.h"
#include "decode/engine/dec_engine.h"
#include "decode/dec_run.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: crucible decode --model M.gguf (--prompt TEXT | --tokens IDS) [options]\n"
	"Raw completion with no chat template. IDS: comma- or space-separated token ids.\n"
	"--max-tokens 0 only tokenizes. Defaults: --max-tokens 32, greedy.\n"
	"\n"
	"OPTIONS\n"
	"  --prompt TEXT        text to tokenize (BOS as the model says; special tokens parsed)\n"
	"  --tokens IDS         token ids, used as given\n"
	"  --top-logprobs K     per step, the K most likely (id, logprob), raw logits\n"
	"  --score              teacher-forced: no generation; for each prompt position i the\n"
	"                       logprob of token i+1 given tokens 0..i (log-softmax of the raw\n"
	"                       logits), as score_logprobs in --json, a 'score:' line otherwise\n"
	"  --json               one JSON object: prompt_tokens, tokens, text, top_logprobs,\n"
	"                       finish_reason, timings (and score_logprobs with --score)\n";

/* The help page: usage, the options (decode's, then the shared ones), the
 * common tail. */
static void help_page(void)
{
	fputs(usage, stdout);
	fputs("  -h, --help           this page\n", stdout);
	fputs(dec_opts_help, stdout);
	cr_cli_help_tail(stdout,
			 "  0  done\n"
			 "  2  bad usage or bad input (a model file that does not load names it)\n"
			 "  3  the environment (no GPU for --device cuda, out of memory, a write\n"
			 "     that failed)\n",
			 CR_ENV_CUDA | CR_ENV_DECODER);
}

static enum cr_status parse_ids(const char *s, int32_t **ids, int *n, struct cr_err *err)
{
	size_t cap = strlen(s) / 2 + 2;
	int32_t *v = malloc(cap * sizeof *v);
	int k = 0;

	if (!v)
		return cr_errf(err, CR_ENOMEM, "out of memory");
	while (*s) {
		char *end;
		long x;

		while (*s == ',' || *s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (!*s)
			break;
		errno = 0;
		x = strtol(s, &end, 10);
		if (end == s || errno || x < 0 || x > INT32_MAX) {
			free(v);
			return cr_errf(err, CR_EUSAGE, "--tokens: '%.20s' is not a token id", s);
		}
		v[k++] = (int32_t)x;
		s = end;
	}
	*ids = v;
	*n = k;
	return CR_OK;
}

static json_t *ids_json(const int32_t *ids, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_integer(ids[i]));
	return a;
}

/* The engine's counts of the last generation (speculative decoding). */
static struct dec_engine_stats last_stats;
static int spec_on;

static void print_json(const int32_t *prompt, int n_prompt, const struct dec_gen_out *o, int k,
		       const char *model, const double *score)
{
	json_t *root = json_object(), *steps = json_array(), *tim = json_object();
	char *text = dec_utf8_repair(o->text ? o->text : "", o->text_len);

	if (score) {
		json_t *a = json_array();

		for (int i = 0; i + 1 < n_prompt; i++)
			json_array_append_new(a, json_real(score[i]));
		json_object_set_new(root, "score_logprobs", a);
	}

	json_object_set_new(root, "model", json_string(model));
	json_object_set_new(root, "prompt_tokens", ids_json(prompt, n_prompt));
	json_object_set_new(root, "tokens", ids_json(o->tokens, o->n_tokens));
	json_object_set_new(root, "text", json_string(text ? text : ""));
	for (int i = 0; i < o->n_tokens; i++) {
		json_t *step = json_array();

		for (int j = 0; j < k; j++) {
			json_t *pair = json_array();

			json_array_append_new(pair, json_integer(o->top_ids[i * k + j]));
			json_array_append_new(pair, json_real(o->top_lp[i * k + j]));
			json_array_append_new(step, pair);
		}
		json_array_append_new(steps, step);
	}
	json_object_set_new(root, "top_logprobs", steps);
	json_object_set_new(root, "finish_reason", json_string(o->finish ? o->finish : "length"));
	json_object_set_new(tim, "prefill_s", json_real(o->prefill_s));
	json_object_set_new(tim, "decode_s", json_real(o->decode_s));
	json_object_set_new(tim, "decode_tokens_per_s",
			    json_real(dec_gen_rate(o)));
	if (spec_on) {
		const struct dec_engine_stats *es = &last_stats;

		json_object_set_new(tim, "target_passes", json_integer(es->decode_tokens));
		json_object_set_new(tim, "draft_proposed", json_integer(es->draft_proposed));
		json_object_set_new(tim, "draft_accepted", json_integer(es->draft_accepted));
		json_object_set_new(tim, "acceptance_rate",
				    json_real(es->draft_proposed ? (double)es->draft_accepted / es->draft_proposed : 0));
		json_object_set_new(tim, "tokens_per_target_pass",
				    json_real(es->decode_tokens && o->n_tokens > 1
						      ? (double)(o->n_tokens - 1) / es->decode_tokens : 0));
	}
	json_object_set_new(root, "timings", tim);
	json_dumpf(root, stdout, JSON_INDENT(0) | JSON_COMPACT | JSON_REAL_PRECISION(9));
	fputc('\n', stdout);
	json_decref(root);
	free(text);
}

static void print_text(const int32_t *prompt, int n_prompt, const struct dec_gen_out *o, int k,
		       const double *score)
{
	printf("prompt_tokens:");
	for (int i = 0; i < n_prompt; i++)
		printf(" %d", prompt[i]);
	if (score) {
		printf("\nscore:");
		for (int i = 0; i + 1 < n_prompt; i++)
			printf(" %.6f", score[i]);
	}
	printf("\ntokens:");
	for (int i = 0; i < o->n_tokens; i++)
		printf(" %d", o->tokens[i]);
	printf("\ntext: %.*s\n", (int)o->text_len, o->text ? o->text : "");
	for (int i = 0; i < o->n_tokens && k; i++) {
		printf("step %d:", i);
		for (int j = 0; j < k; j++)
			printf(" %d:%.4f", o->top_ids[i * k + j], o->top_lp[i * k + j]);
		printf("\n");
	}
	printf("finish: %s\n", o->finish);
}

struct decode_args {
	struct dec_opts o;
	const char *prompt_text, *ids_text;
	int json, k, help, score;
};

enum { O_PROMPT = DEC_OPT_OWN, O_TOKENS, O_TOP_LOGPROBS, O_JSON, O_SCORE };

static const struct option opts[] = {
	DEC_OPTS_LONG,
	{ "prompt", required_argument, NULL, O_PROMPT },
	{ "tokens", required_argument, NULL, O_TOKENS },
	{ "top-logprobs", required_argument, NULL, O_TOP_LOGPROBS },
	{ "json", no_argument, NULL, O_JSON },
	{ "score", no_argument, NULL, O_SCORE },
	{ NULL, 0, NULL, 0 }
};

static enum cr_status own_opt(void *ctx, int code, const char *v, struct cr_err *err)
{
	struct decode_args *a = ctx;
	uint64_t k;

	switch (code) {
	case O_PROMPT: a->prompt_text = v; return CR_OK;
	case O_TOKENS: a->ids_text = v; return CR_OK;
	case O_JSON: a->json = 1; return CR_OK;
	case O_SCORE: a->score = 1; return CR_OK;
	case O_TOP_LOGPROBS:
		if (dec_opt_int("--top-logprobs", v, 0, 1000, &k, err))
			return CR_EUSAGE;
		a->k = (int)k;
		return CR_OK;
	}
	return cr_errf(err, CR_EINTERNAL, "decode: option code %d has no case", code);
}

static enum cr_status parse_args(struct decode_args *a, int argc, char **argv, struct cr_err *err)
{
	enum cr_status st = dec_opts_getopt(&a->o, argc, argv, opts, own_opt, a, &a->help, err);

	if (st || a->help)
		return st;
	if (!a->o.model || (!a->prompt_text == !a->ids_text)) {
		cr_errf(err, CR_EUSAGE, "need --model and exactly one of --prompt, --tokens");
		dec_usage_say("decode", err);
		return CR_EUSAGE;
	}
	return CR_OK;
}

/* Teacher forcing: one forward over the whole prompt with every position's
 * logits, score[i] = log p(prompt[i + 1] | prompt[0..i]) in double. */
static enum cr_status score_prompt(const struct dec_model *m, const struct dec_opts *o,
				   const int32_t *prompt, int n_prompt, double **out,
				   struct cr_err *err)
{
	int nv = m->cfg.n_vocab, ctx = o->ctx ? o->ctx : n_prompt;
	struct dec_state *s = NULL;
	float *lg = NULL;
	double *sc = NULL;
	enum cr_status st;

	if (n_prompt < 2)
		return cr_errf(err, CR_EUSAGE, "--score needs a prompt of at least 2 tokens (has %d)", n_prompt);
	if (n_prompt > ctx)
		return cr_errf(err, CR_EUSAGE, "prompt of %d tokens does not fit the context of %d", n_prompt,
			       ctx);
	lg = malloc((size_t)n_prompt * (size_t)nv * sizeof *lg);
	sc = malloc((size_t)n_prompt * sizeof *sc);
	if (!lg || !sc) {
		st = cr_errf(err, CR_ENOMEM, "--score: out of memory for %d x %d logits", n_prompt, nv);
		goto out;
	}
	{
		enum dec_device dev = DEC_DEV_AUTO;
		char note[512];

		if (o->device)
			dec_device_parse(o->device, &dev, NULL);
		if ((st = dec_state_new_dev(m, ctx, 64, 1, o->threads, dev, note, sizeof note, &s, err)))
			goto out;
		if (note[0])
			fprintf(stderr, "decode: %s\n", note);
		if ((st = dec_forward(s, prompt, n_prompt, lg, err)))
			goto out;
	}
	for (int i = 0; i + 1 < n_prompt; i++) {
		const float *l = lg + (size_t)i * nv;
		double mx = l[0], sum = 0;

		for (int j = 1; j < nv; j++)
			mx = l[j] > mx ? l[j] : mx;
		for (int j = 0; j < nv; j++)
			sum += exp((double)l[j] - mx);
		sc[i] = (double)l[prompt[i + 1]] - mx - log(sum);
	}
	*out = sc;
	sc = NULL;
out:
	dec_state_free(s);
	free(lg);
	free(sc);
	return st;
}

/* One completion through the engine (one sequence). */
static enum cr_status generate_one(const struct dec_model *m, const struct dec_tok *tok,
				   const struct dec_opts *o, int ctx, const int32_t *prompt, int n_prompt,
				   const struct dec_gen_params *gp, struct dec_gen_out *out, struct cr_err *err)
{
	struct dec_engine_cfg cfg;
	struct dec_engine *e = NULL;
	struct dec_model *dm = NULL;
	struct dec_req r = { .prompt = prompt, .n_prompt = n_prompt, .n = 1, .p = *gp, .tok = tok, .outs = out };
	enum cr_status st;

	if (o->draft_model) {
		if (!tok)
			return cr_errf(err, CR_EUSAGE, "--draft-model: %s has no tokenizer to check the draft's against",
				       o->model);
		if ((st = dec_open_draft(o->draft_model, o->model, tok, &dm, err)))
			return st;
	}
	dec_opts_engine_cfg(o, ctx, 1, dm, &cfg);
	if ((st = dec_engine_new(m, &cfg, &e, err))) {
		dec_model_free(dm);
		return st;
	}
	if (dec_engine_device_note(e)[0])
		fprintf(stderr, "decode: %s\n", dec_engine_device_note(e));
	if (!(st = dec_engine_submit(e, &r, err)))
		st = dec_engine_run(e, err);
	last_stats = *dec_engine_stats(e);
	spec_on = cfg.draft_tokens > 0;
	dec_engine_free(e);
	dec_model_free(dm);
	return st;
}

static int run(int argc, char **argv, struct cr_err *err)
{
	struct decode_args a = { .o = { .max_tokens = 32, .samp = { 0, 0, 1, 0 } } };
	struct dec_opts o;
	const char *prompt_text, *ids_text;
	int json, k, n_prompt = 0, ctx;
	int32_t *prompt = NULL;
	struct dec_model *m = NULL;
	struct dec_tok *tok = NULL;
	struct dec_gen_out out = { 0 };
	struct dec_gen_params gp;
	double *score = NULL;
	enum cr_status st = parse_args(&a, argc, argv, err);

	if (st || a.help) {
		if (a.help)
			help_page();
		return st;
	}
	o = a.o;
	prompt_text = a.prompt_text;
	ids_text = a.ids_text;
	json = a.json;
	k = a.k;
	if ((st = dec_model_open(o.model, &m, err)))
		goto out;
	if (ids_text) {
		/* ids need no tokenizer: without one, run and leave the text empty */
		struct cr_err terr;

		cr_err_init(&terr);
		if (dec_vocab_tokenizer(m->gguf, &tok, &terr))
			fprintf(stderr, "crucible decode: %s; continuing without text\n", terr.msg);
	} else if ((st = dec_vocab_tokenizer(m->gguf, &tok, err))) {
		goto out;
	}
	if (k > m->cfg.n_vocab)
		k = m->cfg.n_vocab;
	if (prompt_text) {
		size_t n = 0;

		st = dec_tok_encode(tok, prompt_text, strlen(prompt_text), 1, -1, &prompt, &n, err);
		n_prompt = (int)n;
	} else {
		st = parse_ids(ids_text, &prompt, &n_prompt, err);
	}
	if (st)
		goto out;
	for (int i = 0; i < n_prompt; i++)
		if (prompt[i] < 0 || prompt[i] >= m->cfg.n_vocab) {
			st = cr_errf(err, CR_EUSAGE, "--tokens: id %d is outside the vocabulary [0, %d)",
				     prompt[i], m->cfg.n_vocab);
			goto out;
		}
	if (a.score) {
		if ((st = score_prompt(m, &o, prompt, n_prompt, &score, err)))
			goto out;
		o.max_tokens = 0; /* scoring only */
	}
	if (o.max_tokens > 0) {
		if (n_prompt == 0) {
			/* a non-empty text that encodes as nothing: the model's
			 * vocabulary has no token for its bytes */
			st = prompt_text && prompt_text[0]
				     ? cr_errf(err, CR_EINPUT, "%s: key 'tokenizer.ggml.tokens': the vocabulary of %d tokens "
					       "encodes the prompt as no token", o.model, (int)dec_tok_n_vocab(tok))
				     : cr_errf(err, CR_EUSAGE, "the prompt is empty: nothing to continue");
			goto out;
		}
		ctx = o.ctx ? o.ctx : n_prompt + o.max_tokens;
		if (ctx > m->cfg.ctx_len && !o.ctx)
			ctx = m->cfg.ctx_len;
		if (n_prompt >= ctx) {
			/* the model's own bound, or the one --ctx gave */
			st = o.ctx ? cr_errf(err, CR_EUSAGE, "prompt of %d tokens does not fit the context of %d (--ctx)",
					     n_prompt, ctx)
				   : cr_errf(err, CR_EUSAGE, "prompt of %d tokens does not fit the context of %d (%s: key "
					     "'%s.context_length')", n_prompt, ctx, o.model, m->cfg.arch_name);
			goto out;
		}
		gp = (struct dec_gen_params){ o.max_tokens, o.samp, o.seed, NULL, 0, o.stops, o.n_stops, k,
					      NULL, NULL, 0 };
		if ((st = generate_one(m, tok, &o, ctx, prompt, n_prompt, &gp, &out, err)))
			goto out;
	}
	if (json)
		print_json(prompt, n_prompt, &out, k, o.model, score);
	else
		print_text(prompt, n_prompt, &out, k, score);
	if (o.max_tokens > 0)
		fprintf(stderr, "decode: prompt %d tokens in %.2fs (%.1f tok/s), %d tokens in %.2fs (%.1f tok/s)\n",
			n_prompt, out.prefill_s, out.prefill_s > 0 ? n_prompt / out.prefill_s : 0,
			out.n_tokens, out.decode_s, dec_gen_rate(&out));
	if (o.max_tokens > 0 && spec_on)
		fprintf(stderr, "decode: drafts %lld proposed, %lld accepted (%.0f%%), %.2f tokens per target pass\n",
			(long long)last_stats.draft_proposed, (long long)last_stats.draft_accepted,
			last_stats.draft_proposed ? 100.0 * last_stats.draft_accepted / last_stats.draft_proposed : 0,
			last_stats.decode_tokens && out.n_tokens > 1
				? (double)(out.n_tokens - 1) / last_stats.decode_tokens : 0);
out:
	free(score);
	dec_gen_out_release(&out);
	free(prompt);
	dec_tok_free(tok);
	dec_model_free(m);
	return st;
}

int dec_decode_main(int argc, char **argv)
{
	struct cr_err err;
	enum cr_status st;

	cr_err_init(&err);
	st = run(argc, argv, &err);
	/* a usage error with no message left was said with its --help hint */
	if (st && (err.msg[0] || st != CR_EUSAGE))
		cr_cli_error("decode", "%s", err.msg[0] ? err.msg : cr_status_name(st));
	fflush(stdout);
	return cr_status_exit_code(st);
}
