/* dec_run.c — what the decoder's commands and gen/ share: option parsing
 * (dec_opts), the engine's configuration from them, opening a draft model,
 * and a completion's reasoning tokens. The generation loop is
 * engine/dec_gen.c. */
#include "decode/dec_run.h"
#include "decode/engine/dec_engine.h"
#include "common/cr_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char dec_opts_help[] =
	"  --model FILE         GGUF model (llama, qwen2, qwen3, qwen3moe, phi3, gemma3; F32 F16 BF16 Q8_0\n"
	"                       Q4_0 Q5_0 Q4_1 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS)\n"
	"  --max-tokens N       tokens to generate at most\n"
	"  --temperature T      0 = greedy\n"
	"  --top-k K            keep the K most likely tokens (0 = off)\n"
	"  --top-p P            keep the smallest set with mass >= P (1 = off)\n"
	"  --min-p P            keep tokens with prob >= P * max prob (0 = off)\n"
	"  --seed N             RNG seed; sample i of a task draws from (seed, task, i)\n"
	"  --stop TEXT          stop when the text contains TEXT (repeatable, up to 16)\n"
	"  --threads N          worker threads (default: online CPUs, at most 16)\n"
	"  --ctx N              context length (default: prompt + max tokens, capped by the model)\n"
	"  --device D           cpu, cuda or auto (default auto: cuda when a GPU is usable)\n"
	"  --kv-mem BYTES       KV cache size, e.g. 512M or 2G (default: every sequence's whole\n"
	"                       context, at most a quarter of the available memory)\n"
	"  --max-batch-tokens N tokens per engine step, decode and prefill chunks (default 256)\n"
	"  --draft ngram        speculative decoding with drafts from prompt lookup (the tokens\n"
	"                       that followed the last earlier occurrence of the last 3, 2 or 1\n"
	"                       tokens), checked by the model: greedy output unchanged, sampled\n"
	"                       output from the model's own distribution\n"
	"  --draft-model D.gguf speculative decoding with drafts from a smaller model (or a\n"
	"                       lower-bit file of the same one) with the same tokenizer (checked)\n"
	"  --draft-tokens K     drafts per step, 1..64 (default 4)\n"
	"Sampling order: temperature, top-k, softmax, top-p, min-p, draw.\n";

enum cr_status dec_opt_int(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out,
			   struct cr_err *err)
{
	uint64_t u;

	if (!cr_parse_u64(v, &u) || u < lo || u > hi) {
		if (hi == UINT64_MAX && lo == 0)
			return cr_errf(err, CR_EUSAGE,
				       "%s: expected a non-negative integer, got '%s'", opt, v);
		return cr_errf(err, CR_EUSAGE, "%s: expected an integer in %llu..%llu, got '%s'",
			       opt, (unsigned long long)lo, (unsigned long long)hi, v);
	}
	*out = u;
	return CR_OK;
}

enum cr_status dec_opt_real(const char *opt, const char *v, double lo, double hi, double *out,
			    struct cr_err *err)
{
	char *end;
	double d;

	/* decimal only: no sign, blanks, hex, inf or nan, as for the integers */
	if ((*v < '0' || *v > '9') && *v != '.')
		goto bad;
	if (v[strspn(v, "0123456789.eE+-")])
		goto bad;
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || !(d >= lo && d <= hi))
		goto bad;
	*out = d;
	return CR_OK;
bad:
	return cr_errf(err, CR_EUSAGE, "%s: expected a number in [%g, %g], got '%s'", opt, lo, hi,
		       v);
}

enum cr_status dec_opt_bytes(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out,
			     struct cr_err *err)
{
	size_t n = strlen(v);
	char num[32];
	uint64_t u, mul = 1;

	if (n && strchr("KMG", v[n - 1])) {
		mul = v[n - 1] == 'K' ? 1u << 10 : v[n - 1] == 'M' ? 1u << 20 : 1u << 30;
		n--;
	}
	if (n == 0 || n >= sizeof num)
		goto bad;
	memcpy(num, v, n);
	num[n] = 0;
	if (!cr_parse_u64(num, &u) || u > hi / mul || u * mul < lo || u * mul > hi)
		goto bad;
	*out = u * mul;
	return CR_OK;
bad:
	return cr_errf(err, CR_EUSAGE,
		       "%s: expected a byte count (digits, optionally K, M or G) in %llu..%llu, got '%s'",
		       opt, (unsigned long long)lo, (unsigned long long)hi, v);
}

/* An integer option into an int field. */
static enum cr_status int_opt(const char *opt, const char *v, int lo, int hi, int *out,
			      struct cr_err *err)
{
	uint64_t u;
	enum cr_status st = dec_opt_int(opt, v, (uint64_t)lo, (uint64_t)hi, &u, err);

	if (!st)
		*out = (int)u;
	return st;
}

static enum cr_status float_opt(const char *opt, const char *v, double lo, double hi, float *out,
				struct cr_err *err)
{
	double d;
	enum cr_status st = dec_opt_real(opt, v, lo, hi, &d, err);

	if (!st)
		*out = (float)d;
	return st;
}

enum cr_status dec_opts_apply(struct dec_opts *o, int code, const char *v, struct cr_err *err)
{
	switch (code) {
	case DEC_OPT_MODEL:
		o->model = v;
		return CR_OK;
	case DEC_OPT_MAX_TOKENS: return int_opt("--max-tokens", v, 0, 1 << 24, &o->max_tokens, err);
	case DEC_OPT_TEMPERATURE:
		return float_opt("--temperature", v, 0, 100, &o->samp.temperature, err);
	case DEC_OPT_TOP_K: return int_opt("--top-k", v, 0, 1 << 24, &o->samp.top_k, err);
	case DEC_OPT_TOP_P: return float_opt("--top-p", v, 0, 1, &o->samp.top_p, err);
	case DEC_OPT_MIN_P: return float_opt("--min-p", v, 0, 1, &o->samp.min_p, err);
	case DEC_OPT_SEED: return dec_opt_int("--seed", v, 0, UINT64_MAX, &o->seed, err);
	case DEC_OPT_THREADS: return int_opt("--threads", v, 1, 256, &o->threads, err);
	case DEC_OPT_CTX: return int_opt("--ctx", v, 1, 1 << 24, &o->ctx, err);
	case DEC_OPT_DEVICE:
		if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto"))
			return cr_errf(err, CR_EUSAGE, "--device: expected cpu, cuda or auto, got '%s'", v);
		o->device = v;
		return CR_OK;
	case DEC_OPT_KV_MEM: return dec_opt_bytes("--kv-mem", v, 1, (uint64_t)1 << 50, &o->kv_mem, err);
	case DEC_OPT_MAX_BATCH_TOKENS:
		return int_opt("--max-batch-tokens", v, 1, 1 << 16, &o->max_batch_tokens, err);
	case DEC_OPT_DRAFT:
		if (strcmp(v, "ngram"))
			return cr_errf(err, CR_EUSAGE, "--draft: expected ngram, got '%s'", v);
		o->draft = v;
		return CR_OK;
	case DEC_OPT_DRAFT_TOKENS: return int_opt("--draft-tokens", v, 1, 64, &o->draft_tokens, err);
	case DEC_OPT_DRAFT_MODEL:
		o->draft_model = v;
		return CR_OK;
	case DEC_OPT_STOP:
		if (o->n_stops >= (int)(sizeof o->stops / sizeof o->stops[0]))
			return cr_errf(err, CR_EUSAGE, "--stop: at most %zu stop strings, '%s' is one more",
				       sizeof o->stops / sizeof o->stops[0], v);
		o->stops[o->n_stops++] = v;
		return CR_OK;
	}
	return cr_errf(err, CR_EINTERNAL, "dec_opts_apply: code %d is not a shared option", code);
}

void dec_usage_say(const char *cmd, struct cr_err *err)
{
	if (err->msg[0])
		cr_cli_usage(cmd, "%s", err->msg);
	err->msg[0] = '\0';
}

enum cr_status dec_opts_getopt(struct dec_opts *o, int argc, char **argv, const struct option *opts,
			       enum cr_status (*own)(void *ctx, int code, const char *arg,
						     struct cr_err *err),
			       void *ctx, int *help, struct cr_err *err)
{
	const char *cmd = argc > 0 && argv[0] && argv[0][0] ? argv[0] : "decode";
	enum cr_status st = CR_OK;
	int c;

	*help = 0;
	optind = 1;
	opterr = 0;
	/* after an error or --help the rest is still read, unused and unsaid:
	 * a parse left inside a short-option cluster would carry into the
	 * next call */
	for (;;) {
		c = st || *help ? getopt_long(argc, argv, ":h", opts, NULL)
				: cr_cli_getopt(cmd, argc, argv, "h", opts);
		if (c == -1)
			break;
		if (st || *help)
			continue;
		if (c == 'h' || c == DEC_OPT_HELP)
			*help = 1;
		else if (c == '?') /* said by cr_cli_getopt, with the --help hint */
			st = cr_errf(err, CR_EUSAGE, "%s", "");
		else if (c >= DEC_OPT_MODEL && c < DEC_OPT_HELP)
			st = dec_opts_apply(o, c, optarg, err);
		else
			st = own(ctx, c, optarg, err);
	}
	if (!st && !*help && optind < argc)
		st = cr_errf(err, CR_EUSAGE, "unexpected argument '%s'", argv[optind]);
	if (!st && !*help && o->draft_tokens && !o->draft && !o->draft_model)
		st = cr_errf(err, CR_EUSAGE, "--draft-tokens needs --draft or --draft-model");
	if (!st && !*help && o->draft && o->draft_model)
		st = cr_errf(err, CR_EUSAGE, "--draft ngram and --draft-model exclude each other");
	if (st == CR_EUSAGE)
		dec_usage_say(cmd, err);
	return st;
}

void dec_opts_engine_cfg(const struct dec_opts *o, int max_ctx, int max_seqs, const struct dec_model *draft,
			 struct dec_engine_cfg *cfg)
{
	enum dec_device dev = DEC_DEV_AUTO;

	if (o->device)
		dec_device_parse(o->device, &dev, NULL); /* checked when parsed */
	*cfg = (struct dec_engine_cfg){ .device = dev, .max_seqs = max_seqs, .max_ctx = max_ctx,
					.max_batch_tokens = o->max_batch_tokens, .kv_mem = (size_t)o->kv_mem,
					.n_threads = o->threads,
					.draft_tokens = o->draft || draft ? (o->draft_tokens ? o->draft_tokens : 4) : 0,
					.draft_model = draft };
	if (cfg->max_batch_tokens && cfg->max_batch_tokens < max_seqs)
		cfg->max_seqs = cfg->max_batch_tokens; /* at most one token per sequence a step */
}

enum cr_status dec_open_draft(const char *path, const char *target_path, const struct dec_tok *tok,
			      struct dec_model **out, struct cr_err *err)
{
	struct dec_model *m = NULL;
	struct dec_tok *dt = NULL;
	enum cr_status st;
	char a[256], b[256];

	*out = NULL;
	if ((st = dec_model_open(path, &m, err)) || (st = dec_vocab_tokenizer(m->gguf, &dt, err)))
		goto out;
	if (dec_tok_n_vocab(dt) != dec_tok_n_vocab(tok)) {
		st = cr_errf(err, CR_EUSAGE, "--draft-model %s has %zu tokens, %s has %zu: not the same tokenizer",
			     path, dec_tok_n_vocab(dt), target_path, dec_tok_n_vocab(tok));
		goto out;
	}
	for (size_t id = 0; id < dec_tok_n_vocab(tok); id++) {
		size_t na = dec_tok_piece(tok, (int32_t)id, a, sizeof a), nb = dec_tok_piece(dt, (int32_t)id, b, sizeof b);

		if (na != nb || memcmp(a, b, na < sizeof a ? na : sizeof a) ||
		    dec_tok_is_eog(tok, (int32_t)id) != dec_tok_is_eog(dt, (int32_t)id)) {
			st = cr_errf(err, CR_EUSAGE, "--draft-model %s: token %zu differs from %s's: not the same tokenizer",
				     path, id, target_path);
			goto out;
		}
	}
	if (m->cfg.n_vocab != (int)dec_tok_n_vocab(tok)) {
		st = cr_errf(err, CR_EUSAGE, "--draft-model %s: %d output rows for %zu tokens", path, m->cfg.n_vocab,
			     dec_tok_n_vocab(tok));
		goto out;
	}
	*out = m;
	m = NULL;
out:
	dec_tok_free(dt);
	dec_model_free(m);
	return st;
}

int dec_gen_reasoning_tokens(const struct dec_tok *tok, const struct dec_gen_out *o)
{
	size_t *ends = malloc((size_t)(o->n_tokens ? o->n_tokens : 1) * sizeof *ends), len = 0;
	int r;

	if (!ends)
		return -1;
	for (int i = 0; i < o->n_tokens; i++) {
		len += dec_tok_is_eog(tok, o->tokens[i]) ? 0 : dec_tok_piece(tok, o->tokens[i], NULL, 0);
		ends[i] = len;
	}
	r = dec_reasoning_tokens(o->text ? o->text : "", ends, o->n_tokens);
	free(ends);
	return r;
}
