/* dec_vocab.c — the glue between the GGUF reader and the tokenizer: fills
 * struct dec_tok_vocab from the tokenizer.* metadata (arrays point into the
 * mapping; dec_tok_new copies what it keeps) and builds the tokenizer. */
#include "decode/model/dec_vocab.h"
#include "decode/model/gguf.h"

#include <stdlib.h>
#include <string.h>

static int32_t id_or_none(const struct dec_gguf *g, const char *key, size_t n_tokens)
{
	int64_t v;

	if (!dec_gguf_get_int(g, key, &v) || v < 0 || (uint64_t)v >= n_tokens)
		return -1;
	return (int32_t)v;
}

static int flag(const struct dec_gguf *g, const char *key)
{
	int v;

	return dec_gguf_get_bool(g, key, &v) ? v : -1;
}

/* A string array as the pointer and length arrays dec_tok_vocab wants. */
static enum cr_status str_array(const struct dec_gguf *g, const char *key, int required,
				const char ***ptrs, size_t **lens, size_t *n, struct cr_err *err)
{
	const struct dec_gguf_kv *kv = dec_gguf_find(g, key);

	*ptrs = NULL;
	*lens = NULL;
	*n = 0;
	if (!kv)
		return required ? cr_errf(err, CR_EINPUT, "%s: metadata '%s' is missing (no tokenizer)",
					  g->path, key) : CR_OK;
	if (kv->type != DEC_GGUF_ARRAY || kv->arr_type != DEC_GGUF_STRING)
		return cr_errf(err, CR_EINPUT, "%s: metadata '%s' is not an array of strings", g->path, key);
	*ptrs = malloc((kv->n ? kv->n : 1) * sizeof **ptrs);
	*lens = malloc((kv->n ? kv->n : 1) * sizeof **lens);
	if (!*ptrs || !*lens)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", g->path);
	for (uint64_t i = 0; i < kv->n; i++) {
		(*ptrs)[i] = kv->strs[i].ptr;
		(*lens)[i] = (size_t)kv->strs[i].len;
	}
	*n = (size_t)kv->n;
	return CR_OK;
}

static enum cr_status num_array(const struct dec_gguf *g, const char *key, size_t n, int as_float,
				void **out, struct cr_err *err)
{
	const struct dec_gguf_kv *kv = dec_gguf_find(g, key);

	*out = NULL;
	if (!kv)
		return CR_OK;
	if (kv->type != DEC_GGUF_ARRAY || !dec_gguf_vtype_size(kv->arr_type) || kv->n != n)
		return cr_errf(err, CR_EINPUT, "%s: metadata '%s' is not a numeric array of %zu values",
			       g->path, key, n);
	*out = malloc((n ? n : 1) * 4);
	if (!*out)
		return cr_errf(err, CR_ENOMEM, "%s: out of memory", g->path);
	for (size_t i = 0; i < n; i++) {
		if (as_float)
			((float *)*out)[i] = (float)dec_gguf_arr_float(kv, i);
		else
			((int32_t *)*out)[i] = (int32_t)dec_gguf_arr_int(kv, i);
	}
	return CR_OK;
}

/* A token id past the embedding's rows would index past the tensor: the
 * tokenizer may be smaller than the embedding (padded rows), not larger. */
static enum cr_status fits_embedding(const struct dec_gguf *g, size_t n_tokens, struct cr_err *err)
{
	const struct dec_gguf_tensor *te = dec_gguf_tensor(g, "token_embd.weight");

	if (te && te->n_dims == 2 && n_tokens > te->ne[1])
		return cr_errf(err, CR_EINPUT,
			       "%s: key 'tokenizer.ggml.tokens': %zu tokens, but tensor 'token_embd.weight' has "
			       "%llu rows (the ids past them have no embedding)", g->path, n_tokens,
			       (unsigned long long)te->ne[1]);
	return CR_OK;
}

enum cr_status dec_vocab_tokenizer(const struct dec_gguf *g, struct dec_tok **out, struct cr_err *err)
{
	struct dec_tok_vocab v;
	const char **toks = NULL, **merges = NULL;
	size_t *tlens = NULL, *mlens = NULL;
	void *scores = NULL, *types = NULL;
	char *model = dec_gguf_get_strdup(g, "tokenizer.ggml.model");
	char *pre = dec_gguf_get_strdup(g, "tokenizer.ggml.pre");
	char *arch = dec_gguf_get_strdup(g, "general.architecture");
	char *tmpl = dec_gguf_get_strdup(g, "tokenizer.chat_template");
	struct cr_err terr;
	enum cr_status st;

	*out = NULL;
	memset(&v, 0, sizeof v);
	if (!model) {
		st = cr_errf(err, CR_EINPUT, "%s: metadata 'tokenizer.ggml.model' is missing (no tokenizer)",
			     g->path);
		goto out;
	}
	if ((st = str_array(g, "tokenizer.ggml.tokens", 1, &toks, &tlens, &v.n_tokens, err)) ||
	    (st = fits_embedding(g, v.n_tokens, err)) ||
	    (st = str_array(g, "tokenizer.ggml.merges", 0, &merges, &mlens, &v.n_merges, err)) ||
	    (st = num_array(g, "tokenizer.ggml.scores", v.n_tokens, 1, &scores, err)) ||
	    (st = num_array(g, "tokenizer.ggml.token_type", v.n_tokens, 0, &types, err)))
		goto out;
	v.model = model;
	v.pre = pre;
	v.arch = arch;
	v.tokens = toks;
	v.token_lens = tlens;
	v.scores = scores;
	v.types = types;
	v.merges = merges;
	v.merge_lens = mlens;
	v.bos_id = id_or_none(g, "tokenizer.ggml.bos_token_id", v.n_tokens);
	v.eos_id = id_or_none(g, "tokenizer.ggml.eos_token_id", v.n_tokens);
	v.eot_id = id_or_none(g, "tokenizer.ggml.eot_token_id", v.n_tokens);
	v.eom_id = id_or_none(g, "tokenizer.ggml.eom_token_id", v.n_tokens);
	v.pad_id = id_or_none(g, "tokenizer.ggml.padding_token_id", v.n_tokens);
	v.unk_id = id_or_none(g, "tokenizer.ggml.unknown_token_id", v.n_tokens);
	v.add_bos = flag(g, "tokenizer.ggml.add_bos_token");
	v.add_eos = flag(g, "tokenizer.ggml.add_eos_token");
	v.chat_template = tmpl;
	cr_err_init(&terr);
	st = dec_tok_new(&v, out, &terr);
	if (st)
		cr_errf(err, st, "%s: %s", g->path, terr.msg);
	else if (flag(g, "tokenizer.ggml.add_space_prefix") >= 0) /* gemma's is false */
		dec_tok_set_add_space_prefix(*out, flag(g, "tokenizer.ggml.add_space_prefix"));
out:
	free(toks);
	free(tlens);
	free(merges);
	free(mlens);
	free(scores);
	free(types);
	free(model);
	free(pre);
	free(arch);
	free(tmpl);
	return st;
}
