/* dec_cmd_decode.c — `crucible decode`: raw completion without a chat
 * template, for debugging and for comparing with other runtimes. Prints the
 * prompt token ids, the generated ids, the text and per step the top-K
 * (id, logprob) under log-softmax of the raw logits; --json for machines. */
#include "decode/dec.h"
#include "decode/dec_run.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: crucible decode --model M.gguf (--prompt TEXT | --tokens IDS) [options]\n"
	"Raw completion with no chat template. IDS: comma- or space-separated token ids.\n"
	"  --prompt TEXT        text to tokenize (BOS as the model says; special tokens parsed)\n"
	"  --tokens IDS         token ids, used as given\n"
	"  --top-logprobs K     per step, the K most likely (id, logprob), raw logits\n"
	"  --json               one JSON object: prompt_tokens, tokens, text, top_logprobs,\n"
	"                       finish_reason, timings\n"
	"  --max-tokens 0 only tokenizes. Defaults: --max-tokens 32, greedy.\n";

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

static void print_json(const int32_t *prompt, int n_prompt, const struct dec_gen_out *o, int k,
		       const char *model)
{
	json_t *root = json_object(), *steps = json_array(), *tim = json_object();
	char *text = dec_utf8_repair(o->text ? o->text : "", o->text_len);

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
	json_object_set_new(root, "timings", tim);
	json_dumpf(root, stdout, JSON_INDENT(0) | JSON_COMPACT | JSON_REAL_PRECISION(9));
	fputc('\n', stdout);
	json_decref(root);
	free(text);
}

static void print_text(const int32_t *prompt, int n_prompt, const struct dec_gen_out *o, int k)
{
	printf("prompt_tokens:");
	for (int i = 0; i < n_prompt; i++)
		printf(" %d", prompt[i]);
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
	int json, k, help;
};

enum { O_PROMPT = DEC_OPT_OWN, O_TOKENS, O_TOP_LOGPROBS, O_JSON };

static const struct option opts[] = {
	DEC_OPTS_LONG,
	{ "prompt", required_argument, NULL, O_PROMPT },
	{ "tokens", required_argument, NULL, O_TOKENS },
	{ "top-logprobs", required_argument, NULL, O_TOP_LOGPROBS },
	{ "json", no_argument, NULL, O_JSON },
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
	if (!a->o.model || (!a->prompt_text == !a->ids_text))
		return cr_errf(err, CR_EUSAGE, "need --model and exactly one of --prompt, --tokens (see --help)");
	return CR_OK;
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
	struct dec_state *s = NULL;
	struct dec_gen_out out = { 0 };
	struct dec_gen_params gp;
	enum cr_status st = parse_args(&a, argc, argv, err);

	if (st || a.help) {
		if (a.help)
			printf("%s%s", usage, dec_opts_help);
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
	if (o.max_tokens > 0) {
		if (n_prompt == 0) {
			st = cr_errf(err, CR_EUSAGE, "the prompt is empty: nothing to continue");
			goto out;
		}
		ctx = o.ctx ? o.ctx : n_prompt + o.max_tokens;
		if (ctx > m->cfg.ctx_len && !o.ctx)
			ctx = m->cfg.ctx_len;
		if (n_prompt >= ctx) {
			st = cr_errf(err, CR_EUSAGE, "prompt of %d tokens does not fit the context of %d",
				     n_prompt, ctx);
			goto out;
		}
		if ((st = dec_state_new(m, ctx, 64, o.threads, &s, err)))
			goto out;
		gp = (struct dec_gen_params){ o.max_tokens, o.samp, o.seed, NULL, 0, o.stops, o.n_stops, k,
					      NULL, NULL };
		if ((st = dec_generate(s, tok, prompt, n_prompt, NULL, &gp, &out, err)))
			goto out;
	}
	if (json)
		print_json(prompt, n_prompt, &out, k, o.model);
	else
		print_text(prompt, n_prompt, &out, k);
	if (o.max_tokens > 0)
		fprintf(stderr, "decode: prompt %d tokens in %.2fs (%.1f tok/s), %d tokens in %.2fs (%.1f tok/s)\n",
			n_prompt, out.prefill_s, out.prefill_s > 0 ? n_prompt / out.prefill_s : 0,
			out.n_tokens, out.decode_s, dec_gen_rate(&out));
out:
	dec_gen_out_release(&out);
	dec_state_free(s);
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
	if (st)
		fprintf(stderr, "crucible decode: %s\n", err.msg[0] ? err.msg : cr_status_name(st));
	fflush(stdout);
	return cr_status_exit_code(st);
}
