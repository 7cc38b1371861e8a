/* test_cli.c — `crucible decode` and `crucible generate` through their entry
 * points on tiny generated models: decode --json fields, greedy tokens and
 * top logprobs against the reference forward, tokenize-only, usage errors
 * and exit codes; generate with a fake task source writes well-formed
 * candidates, sidecars and completions, reproducibly per sample. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decode/dec.h"
#include "decode/dec_run.h"
#include "decode/be/dec_ref.h"
#include "decode/engine/dec_forward.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "dec_testutil.h"

static char model_path[256];

static int setup(void **state)
{
	struct tiny_spec s;

	(void)state;
	tiny_spec_default(&s, "qwen2", DEC_T_Q8_0);
	tiny_tmpname(model_path, sizeof model_path, ".gguf");
	return tiny_model_write(&s, model_path);
}

static int teardown(void **state)
{
	(void)state;
	unlink(model_path);
	return 0;
}

/* Runs a main with stdout captured into *out and, when errout is not NULL,
 * stderr into *errout (both malloc'd). */
static int capture2(int (*fn)(int, char **), int argc, char **argv, char **out, char **errout)
{
	char path[256], epath[256];
	int fd, saved, esaved = -1, rc;

	tiny_tmpname(path, sizeof path, ".out");
	tiny_tmpname(epath, sizeof epath, ".err");
	fflush(stdout);
	fflush(stderr);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	saved = dup(1);
	dup2(fd, 1);
	close(fd);
	if (errout) {
		fd = open(epath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
		esaved = dup(2);
		dup2(fd, 2);
		close(fd);
	}
	rc = fn(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved, 1);
	close(saved);
	if (errout) {
		dup2(esaved, 2);
		close(esaved);
		*errout = tiny_slurp(epath, NULL);
		unlink(epath);
	}
	*out = tiny_slurp(path, NULL);
	unlink(path);
	return rc;
}

/* Runs a main with stdout captured into *out (malloc'd). */
static int capture(int (*fn)(int, char **), int argc, char **argv, char **out)
{
	return capture2(fn, argc, argv, out, NULL);
}

static json_t *decode_json(char **argv, int argc)
{
	char *out;
	json_t *j;
	json_error_t je;

	assert_int_equal(capture(dec_decode_main, argc, argv, &out), 0);
	j = json_loads(out, 0, &je);
	if (!j)
		fail_msg("bad JSON (%s): %s", je.text, out);
	free(out);
	return j;
}

static void test_decode_json_tokens(void **state)
{
	char *argv[] = { "decode", "--model", model_path, "--tokens", "10,20,30,40", "--max-tokens", "6",
			 "--top-logprobs", "3", "--json", "--threads", "2" };
	json_t *j = decode_json(argv, 12), *toks, *tl;
	struct dec_model *m;
	struct cr_err e;
	int32_t seq[10] = { 10, 20, 30, 40 };
	float *ref;
	int nv;

	(void)state;
	toks = json_object_get(j, "tokens");
	tl = json_object_get(j, "top_logprobs");
	assert_int_equal(json_array_size(json_object_get(j, "prompt_tokens")), 4);
	assert_int_equal(json_array_size(toks), 6);
	assert_int_equal(json_array_size(tl), 6);
	assert_true(json_is_string(json_object_get(j, "text")));
	/* greedy tokens and logprobs agree with the reference forward */
	cr_err_init(&e);
	assert_int_equal(dec_model_open(model_path, &m, &e), CR_OK);
	nv = m->cfg.n_vocab;
	for (int i = 0; i < 6; i++)
		seq[4 + i] = (int32_t)json_integer_value(json_array_get(toks, (size_t)i));
	ref = malloc(sizeof(float) * 10 * (size_t)nv);
	assert_int_equal(dec_forward_ref(m, seq, 10, ref, &e), CR_OK);
	for (int i = 0; i < 6; i++) {
		const float *l = ref + (size_t)(3 + i) * nv;
		json_t *top = json_array_get(tl, (size_t)i);
		double mx = -INFINITY, sum = 0;
		int best = 0;

		for (int v = 0; v < nv; v++)
			if (l[v] > l[best])
				best = v;
		mx = l[best];
		for (int v = 0; v < nv; v++)
			sum += exp(l[v] - mx);
		assert_int_equal(json_array_size(top), 3);
		for (int r = 0; r < 3; r++) {
			json_t *pair = json_array_get(top, (size_t)r);
			int id = (int)json_integer_value(json_array_get(pair, 0));
			double lp = json_real_value(json_array_get(pair, 1));

			if (fabs(lp - (l[id] - mx - log(sum))) > 0.1)
				fail_msg("step %d rank %d: logprob %g vs reference %g", i, r, lp,
					 l[id] - mx - log(sum));
			if (r > 0)
				assert_true(lp <= json_real_value(json_array_get(json_array_get(top, (size_t)r - 1), 1)));
		}
		/* the greedy choice is the top-1 */
		assert_int_equal(json_integer_value(json_array_get(json_array_get(top, 0), 0)), seq[4 + i]);
	}
	free(ref);
	dec_model_free(m);
	json_decref(j);
}

/* --score: per position the logprob of the next prompt token, against the
 * reference forward, and equal to what generation reports for the same
 * token after the same context. */
static void test_decode_score(void **state)
{
	char *argv[] = { "decode", "--model", model_path, "--tokens", "10,20,30,40,50,60,70", "--score",
			 "--json", "--threads", "2" };
	char *gen[] = { "decode", "--model", model_path, "--tokens", "10,20,30", "--max-tokens", "1",
			"--top-logprobs", "1", "--json" };
	char ids[64], *out;
	char *forced[] = { "decode", "--model", model_path, "--tokens", ids, "--score", "--json" };
	char *one[] = { "decode", "--model", model_path, "--tokens", "10", "--score" };
	json_t *j = decode_json(argv, 9), *sc = json_object_get(j, "score_logprobs"), *g, *f;
	int32_t seq[7] = { 10, 20, 30, 40, 50, 60, 70 };
	struct dec_model *m;
	struct cr_err e;
	float *ref;
	int nv, tok;
	double lp;

	(void)state;
	assert_int_equal(json_array_size(sc), 6);
	assert_int_equal(json_array_size(json_object_get(j, "tokens")), 0); /* no generation */
	cr_err_init(&e);
	assert_int_equal(dec_model_open(model_path, &m, &e), CR_OK);
	nv = m->cfg.n_vocab;
	ref = malloc(sizeof(float) * 7 * (size_t)nv);
	assert_int_equal(dec_forward_ref(m, seq, 7, ref, &e), CR_OK);
	for (int i = 0; i < 6; i++) {
		const float *l = ref + (size_t)i * nv;
		double mx = l[0], sum = 0, want;

		for (int v = 1; v < nv; v++)
			mx = l[v] > mx ? l[v] : mx;
		for (int v = 0; v < nv; v++)
			sum += exp(l[v] - mx);
		want = l[seq[i + 1]] - mx - log(sum);
		lp = json_real_value(json_array_get(sc, (size_t)i));
		if (fabs(lp - want) > 0.1)
			fail_msg("position %d: score %g vs reference %g", i, lp, want);
	}
	free(ref);
	dec_model_free(m);
	json_decref(j);
	/* the greedy token after 10,20,30 and its logprob, then scored */
	g = decode_json(gen, 10);
	tok = (int)json_integer_value(json_array_get(json_object_get(g, "tokens"), 0));
	lp = json_real_value(json_array_get(json_array_get(json_array_get(json_object_get(g, "top_logprobs"), 0), 0), 1));
	snprintf(ids, sizeof ids, "10,20,30,%d", tok);
	f = decode_json(forced, 7);
	sc = json_object_get(f, "score_logprobs");
	assert_int_equal(json_array_size(sc), 3);
	if (fabs(json_real_value(json_array_get(sc, 2)) - lp) > 1e-5)
		fail_msg("score %g vs generation's logprob %g", json_real_value(json_array_get(sc, 2)), lp);
	json_decref(g);
	json_decref(f);
	assert_int_equal(capture(dec_decode_main, 6, one, &out), 2); /* nothing to score */
	free(out);
}

static void test_decode_prompt_tokenize_only(void **state)
{
	char *argv[] = { "decode", "--model", model_path, "--prompt", "the cat<|im_end|>", "--max-tokens",
			 "0", "--json" };
	json_t *j = decode_json(argv, 8), *pt;

	(void)state;
	pt = json_object_get(j, "prompt_tokens");
	assert_true(json_array_size(pt) >= 3);
	/* the special token is parsed, not spelled out */
	assert_int_equal(json_integer_value(json_array_get(pt, json_array_size(pt) - 1)), 264);
	assert_int_equal(json_array_size(json_object_get(j, "tokens")), 0);
	json_decref(j);
}

static void test_decode_sampling_reproducible(void **state)
{
	char *argv[] = { "decode", "--model", model_path, "--prompt", "hello", "--max-tokens", "8",
			 "--temperature", "1.0", "--top-k", "50", "--top-p", "0.9", "--seed", "7", "--json" };
	json_t *a = decode_json(argv, 16), *b = decode_json(argv, 16);

	(void)state;
	assert_true(json_equal(json_object_get(a, "tokens"), json_object_get(b, "tokens")));
	json_decref(a);
	json_decref(b);
}

/* A stop string taken from a first greedy run cuts the second one there. */
static void test_decode_stop(void **state)
{
	static char *prompts[] = { "40,50,60", "1,2,3", "100,7", "33,34,35,36", "200,201" };

	(void)state;
	for (size_t k = 0; k < sizeof prompts / sizeof prompts[0]; k++) {
		char *argv[] = { "decode", "--model", model_path, "--tokens", prompts[k], "--max-tokens",
				 "16", "--json", "--stop", NULL };
		json_t *a = decode_json(argv, 8), *b;
		const char *text = json_string_value(json_object_get(a, "text")), *at;
		char stop[2] = { 0 };

		/* an ASCII byte after the first one: bytes are kept as they are by
		 * the JSON UTF-8 repair, so offsets compare */
		for (at = text + 1; *text && *at && (unsigned char)*at >= 0x80; at++)
			;
		if (!*text || !*at) {
			json_decref(a);
			continue;
		}
		stop[0] = *at;
		argv[9] = stop;
		b = decode_json(argv, 10);
		assert_string_equal(json_string_value(json_object_get(b, "finish_reason")), "stop");
		assert_int_equal(strlen(json_string_value(json_object_get(b, "text"))),
				 (size_t)(strstr(text, stop) - text));
		assert_true(json_array_size(json_object_get(b, "tokens")) <=
			    json_array_size(json_object_get(a, "tokens")));
		json_decref(a);
		json_decref(b);
		return;
	}
	fail_msg("no prompt gave ASCII text to stop on");
}

/* A model without tokenizer metadata: ids still run (text empty), text cannot. */
static void test_decode_no_tokenizer(void **state)
{
	struct tiny_spec s;
	char path[256], *out;

	(void)state;
	tiny_spec_default(&s, "llama", DEC_T_F16);
	s.no_vocab = 1;
	tiny_tmpname(path, sizeof path, ".gguf");
	assert_int_equal(tiny_model_write(&s, path), 0);
	{
		char *argv[] = { "decode", "--model", path, "--tokens", "5 6 7", "--max-tokens", "3", "--json" };
		json_t *j = decode_json(argv, 8);

		assert_int_equal(json_array_size(json_object_get(j, "tokens")), 3);
		assert_string_equal(json_string_value(json_object_get(j, "text")), "");
		json_decref(j);
	}
	{
		char *argv[] = { "decode", "--model", path, "--prompt", "hi" };

		assert_int_equal(capture(dec_decode_main, 5, argv, &out), 2);
		free(out);
	}
	unlink(path);
}

static void test_decode_errors(void **state)
{
	char *out;
	char *no_model[] = { "decode", "--tokens", "1" };
	char *bad_file[] = { "decode", "--model", "/nonexistent.gguf", "--tokens", "1" };
	char *bad_ids[] = { "decode", "--model", model_path, "--tokens", "1,x" };
	char *bad_id[] = { "decode", "--model", model_path, "--tokens", "99999" };
	char *bad_opt[] = { "decode", "--model", model_path, "--tokens", "1", "--top-p", "2" };
	char *help[] = { "decode", "--help" };

	(void)state;
	assert_int_equal(capture(dec_decode_main, 3, no_model, &out), 2);
	free(out);
	assert_int_equal(capture(dec_decode_main, 5, bad_file, &out), 2);
	free(out);
	assert_int_equal(capture(dec_decode_main, 5, bad_ids, &out), 2);
	free(out);
	assert_int_equal(capture(dec_decode_main, 5, bad_id, &out), 2);
	free(out);
	assert_int_equal(capture(dec_decode_main, 7, bad_opt, &out), 2);
	free(out);
	assert_int_equal(capture(dec_decode_main, 2, help, &out), 0);
	assert_non_null(strstr(out, "--top-logprobs"));
	assert_non_null(strstr(out, "--score"));
	free(out);
}

/* A bad model file (issue 30): `decode --prompt` exits 2 naming the file
 * and the key, for a context_length of 1 and for a tokenizer with more
 * tokens than the embedding has rows. */
static void test_decode_bad_model(void **state)
{
	static const struct {
		const char *key, *tensor; /* the u32 key set to value, or a file whose token_embd has value rows */
		uint64_t value;
		const char *want;
	} cases[] = {
		{ "llama.context_length", NULL, 1, "key 'llama.context_length'" },
		{ NULL, "token_embd.weight", 200, "key 'tokenizer.ggml.tokens'" },
	};

	int bad = 0;

	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		struct tiny_spec s;
		char path[256], *out, *err;
		uint8_t *img;
		size_t n;
		FILE *f;
		int rc;

		tiny_spec_default(&s, "llama", DEC_T_F32);
		s.tied = 1;
		if (cases[c].tensor) /* a consistent file whose embedding has these rows */
			s.embd_rows = (int)cases[c].value;
		img = tiny_model(&s, &n);
		assert_non_null(img);
		if (cases[c].key)
			assert_int_equal(gw_patch_u32(img, n, cases[c].key, (uint32_t)cases[c].value), 0);
		tiny_tmpname(path, sizeof path, ".gguf");
		assert_non_null(f = fopen(path, "wb"));
		assert_int_equal(fwrite(img, 1, n, f), n);
		assert_int_equal(fclose(f), 0);
		free(img);
		{
			char *argv[] = { "decode", "--model", path, "--prompt", "the theory", "--max-tokens", "2" };

			rc = capture2(dec_decode_main, 7, argv, &out, &err);
		}
		if (rc != 2 || !err || !strstr(err, path) || !strstr(err, cases[c].want)) {
			print_error("exit %d, want 2 naming %s and \"%s\": %s\n", rc, path, cases[c].want,
				    err ? err : "");
			bad++;
		}
		free(out);
		free(err);
		unlink(path);
	}
	assert_int_equal(bad, 0);
}

/* ---- the command line: getopt_long, one rule per kind of value ---------- */

struct bad_case {
	const char *args[3]; /* appended to a valid command line */
	const char *want[3]; /* each in the message */
};

/* Each case exits exactly 2 with a message naming the option and the value. */
static void expect_usage(int (*fn)(int, char **), char *const *base, int n_base,
			 const struct bad_case *cases, size_t n_cases)
{
	for (size_t c = 0; c < n_cases; c++) {
		char *argv[16], line[512] = "", *out, *err;
		int argc = 0, rc;

		for (int i = 0; i < n_base; i++)
			argv[argc++] = base[i];
		for (int i = 0; i < 3 && cases[c].args[i]; i++) {
			argv[argc++] = (char *)cases[c].args[i];
			snprintf(line + strlen(line), sizeof line - strlen(line), " %s", cases[c].args[i]);
		}
		rc = capture2(fn, argc, argv, &out, &err);
		if (rc != 2)
			fail_msg("%s ...%s: exit %d, want 2 (%s)", base[0], line, rc, err ? err : "");
		assert_non_null(err);
		for (int i = 0; i < 3 && cases[c].want[i]; i++)
			if (!strstr(err, cases[c].want[i]))
				fail_msg("%s ...%s: \"%s\" not in the message: %s", base[0], line,
					 cases[c].want[i], err);
		free(out);
		free(err);
	}
}

static void test_decode_bad_options(void **state)
{
	char *base[] = { "decode", "--model", model_path, "--tokens", "1,2" };
	static const struct bad_case cases[] = {
		{ { "--max-tokens", "12abc" }, { "--max-tokens", "'12abc'" } },
		{ { "--max-tokens=12abc" }, { "--max-tokens", "'12abc'", "0..16777216" } },
		{ { "--max-tokens", "-5" }, { "--max-tokens", "'-5'" } },
		{ { "--max-tokens", "32.5" }, { "--max-tokens", "'32.5'" } },
		{ { "--top-k=x" }, { "--top-k", "'x'" } },
		{ { "--top-k", "" }, { "--top-k", "''" } },
		{ { "--top-k=" }, { "--top-k", "''" } },
		{ { "--seed", "18446744073709551616" }, { "--seed", "'18446744073709551616'" } },
		{ { "--seed=-5" }, { "--seed", "'-5'" } },
		{ { "--seed", "0x10" }, { "--seed", "'0x10'" } },
		{ { "--threads", "0" }, { "--threads", "'0'" } },
		{ { "--ctx=12abc" }, { "--ctx", "'12abc'" } },
		{ { "--temperature", "x" }, { "--temperature", "'x'", "[0, 100]" } },
		{ { "--temperature=-0.5" }, { "--temperature", "'-0.5'" } },
		{ { "--temperature", "0.5x" }, { "--temperature", "'0.5x'" } },
		{ { "--temperature", " 0.5" }, { "--temperature", "' 0.5'" } },
		{ { "--top-p", "1.5" }, { "--top-p", "'1.5'", "[0, 1]" } },
		{ { "--min-p=nan" }, { "--min-p", "'nan'" } },
		{ { "--min-p", "inf" }, { "--min-p", "'inf'" } },
		{ { "--top-logprobs", "12abc" }, { "--top-logprobs", "'12abc'" } },
		{ { "--top-logprobs=1001" }, { "--top-logprobs", "'1001'", "0..1000" } },
		{ { "--max-tokens" }, { "--max-tokens", "needs a value" } },
		{ { "--top-logprobs" }, { "--top-logprobs", "needs a value" } },
		{ { "--stop" }, { "--stop", "needs a value" } },
		{ { "--frobnicate" }, { "'--frobnicate'" } },
		{ { "--frobnicate=3" }, { "'--frobnicate=3'" } },
		{ { "-x" }, { "'-x'" } },
		{ { "--json=1" }, { "--json", "takes no value" } },
		{ { "extra" }, { "unexpected argument", "'extra'" } },
		{ { "--", "--json" }, { "unexpected argument", "'--json'" } },
	};
	char *out;

	(void)state;
	expect_usage(dec_decode_main, base, 5, cases, sizeof cases / sizeof cases[0]);
	/* 16 stops are fine, a 17th is not */
	{
		char *argv[5 + 2 * 17];
		int argc = 0;

		for (int i = 0; i < 5; i++)
			argv[argc++] = base[i];
		argv[argc++] = "--max-tokens=0";
		for (int i = 0; i < 16; i++)
			argv[argc++] = "--stop=x";
		assert_int_equal(capture(dec_decode_main, argc, argv, &out), 0);
		free(out);
		argv[argc++] = "--stop=x";
		assert_int_equal(capture(dec_decode_main, argc, argv, &out), 2);
		free(out);
	}
}

/* --opt=value is --opt value; the values are applied (not ignored), and a
 * parse that stopped inside a short-option cluster leaves nothing behind
 * for the next one. */
static void test_decode_option_forms(void **state)
{
	char *spaced[] = { "decode", "--model", model_path, "--tokens", "10,20,30,40", "--max-tokens", "8",
			   "--top-logprobs", "2", "--temperature", "1.0", "--top-k", "50", "--top-p", "0.9",
			   "--min-p", "0.01", "--seed", "7", "--threads", "2", "--ctx", "64", "--json" };
	char *joined[] = { "decode", "--model=", "--tokens=10,20,30,40", "--max-tokens=8",
			   "--top-logprobs=2", "--temperature=1.0", "--top-k=50", "--top-p=0.9",
			   "--min-p=0.01", "--seed=7", "--threads=2", "--ctx=64", "--json" };
	char *greedy[] = { "decode", "--model", model_path, "--tokens", "10,20,30,40", "--max-tokens", "8",
			   "--json" };
	char *cluster[] = { "decode", "-xhh" };
	char model_opt[300], *out;
	json_t *a, *b, *g;

	(void)state;
	snprintf(model_opt, sizeof model_opt, "--model=%s", model_path);
	joined[1] = model_opt;
	a = decode_json(spaced, 24);
	b = decode_json(joined, 13);
	g = decode_json(greedy, 8);
	assert_true(json_equal(json_object_get(a, "tokens"), json_object_get(b, "tokens")));
	assert_true(json_equal(json_object_get(a, "top_logprobs"), json_object_get(b, "top_logprobs")));
	assert_int_equal(json_array_size(json_object_get(b, "tokens")), 8);
	assert_int_equal(json_array_size(json_array_get(json_object_get(b, "top_logprobs"), 0)), 2);
	/* sampled at temperature 1, not greedy: 8 draws all equal to the top-1
	 * (p ~ 0.25 each here) would be a fluke of ~1e-5, and the seed is fixed */
	assert_false(json_equal(json_object_get(b, "tokens"), json_object_get(g, "tokens")));
	json_decref(a);
	json_decref(b);
	json_decref(g);
	assert_int_equal(capture(dec_decode_main, 2, cluster, &out), 2);
	free(out);
	g = decode_json(greedy, 8); /* not a -h left over from "-xhh" */
	assert_int_equal(json_array_size(json_object_get(g, "tokens")), 8);
	json_decref(g);
}

/* ---- generate with a fake task source ---------------------------------- */

static enum cr_status fake_list(void *ctx, const char *sets, char ***names, size_t *n,
				struct cr_err *err)
{
	(void)ctx;
	(void)err;
	*names = malloc(2 * sizeof **names);
	(*names)[0] = strdup("smoke/relu");
	if (!strcmp(sets, "bad")) { /* a name that would escape --out */
		(*names)[1] = strdup("../escape");
	} else {
		assert_string_equal(sets, "smoke");
		(*names)[1] = strdup("smoke/gelu");
	}
	*n = 2;
	return CR_OK;
}

static char *fake_prompt(void *ctx, const char *task, const char *backend, struct cr_err *err)
{
	char buf[256];

	(void)ctx;
	(void)err;
	snprintf(buf, sizeof buf, "Write %s for %s in a ```cuda block.", task, backend);
	return strdup(buf);
}

static const struct dec_task_source fake = { .list = fake_list, .prompt = fake_prompt };

static int gen_main(int argc, char **argv)
{
	return dec_generate_main(argc, argv, &fake);
}

static void test_generate(void **state)
{
	char dir[256], path[512], *out, *c1, *c2;
	json_t *j;
	json_error_t je;

	(void)state;
	tiny_tmpname(dir, sizeof dir, "_gen");
	{
		char *argv[] = { "generate", "--model", model_path, "--tasks", "smoke", "--n", "3",
				 "--max-tokens", "12", "--seed", "5", "--out", dir, "--threads", "1" };

		assert_int_equal(capture(gen_main, 15, argv, &out), 0);
		free(out);
	}
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < 3; i++) {
			const char *task = t ? "smoke/gelu" : "smoke/relu";
			char *cand;

			snprintf(path, sizeof path, "%s/%s_s%d.cu", dir, task, i);
			cand = tiny_slurp(path, NULL);
			assert_non_null(cand);
			assert_non_null(strstr(cand, "// @task smoke/"));
			free(cand);
			snprintf(path, sizeof path, "%s/%s_s%d.json", dir, task, i);
			j = json_load_file(path, 0, &je);
			assert_non_null(j);
			assert_int_equal(json_integer_value(json_object_get(j, "sample")), i);
			assert_int_equal(json_integer_value(json_object_get(j, "seed")), 5);
			assert_true(json_integer_value(json_object_get(j, "completion_tokens")) >= 1);
			assert_true(json_integer_value(json_object_get(j, "completion_tokens")) <= 12);
			assert_true(json_integer_value(json_object_get(j, "prompt_tokens")) > 10);
			assert_true(json_integer_value(json_object_get(j, "reasoning_tokens")) >= 0);
			assert_string_equal(json_string_value(json_object_get(j, "task")), task);
			/* every generated id, as many as completion_tokens */
			assert_true(json_is_array(json_object_get(j, "token_ids")));
			assert_int_equal(json_array_size(json_object_get(j, "token_ids")),
					 json_integer_value(json_object_get(j, "completion_tokens")));
			for (const char *const *k = (const char *const[]){ "model", "temperature", "top_p", "top_k",
							   "min_p", "turn", "strategy", NULL }; *k; k++)
				assert_non_null(json_object_get(j, *k));
			json_decref(j);
			snprintf(path, sizeof path, "%s/%s_s%d.txt", dir, task, i);
			assert_true(access(path, R_OK) == 0);
		}
	/* sample 1 is the same whatever n: rerun with n = 2 into another dir */
	snprintf(path, sizeof path, "%s/smoke/relu_s1.txt", dir);
	c1 = tiny_slurp(path, NULL);
	{
		char dir2[256];
		char *argv[] = { "generate", "--model", model_path, "--tasks", "smoke", "--n", "2",
				 "--max-tokens", "12", "--seed", "5", "--out", dir2, "--threads", "2" };

		tiny_tmpname(dir2, sizeof dir2, "_gen2");
		argv[12] = dir2;
		assert_int_equal(capture(gen_main, 15, argv, &out), 0);
		free(out);
		snprintf(path, sizeof path, "%s/smoke/relu_s1.txt", dir2);
		c2 = tiny_slurp(path, NULL);
		assert_non_null(c2);
		assert_string_equal(c1, c2);
		snprintf(path, sizeof path, "rm -rf '%s'", dir2);
		assert_int_equal(system(path), 0);
	}
	/* batching does not change any sample: n = 3 one at a time */
	{
		char dir3[256], p1[512], p3[512];
		char *argv[] = { "generate", "--model", model_path, "--tasks", "smoke", "--n", "3",
				 "--max-tokens", "12", "--seed", "5", "--out", dir3, "--batch", "1" };

		tiny_tmpname(dir3, sizeof dir3, "_gen3");
		argv[12] = dir3;
		assert_int_equal(capture(gen_main, 15, argv, &out), 0);
		free(out);
		for (int t = 0; t < 2; t++)
			for (int i = 0; i < 3; i++) {
				const char *task = t ? "smoke/gelu" : "smoke/relu";
				char *a, *b;

				snprintf(p1, sizeof p1, "%s/%s_s%d.txt", dir, task, i);
				snprintf(p3, sizeof p3, "%s/%s_s%d.txt", dir3, task, i);
				a = tiny_slurp(p1, NULL);
				b = tiny_slurp(p3, NULL);
				assert_non_null(a);
				assert_non_null(b);
				assert_string_equal(a, b);
				free(a);
				free(b);
			}
		snprintf(p1, sizeof p1, "rm -rf '%s'", dir3);
		assert_int_equal(system(p1), 0);
	}
	free(c1);
	free(c2);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* The generated ids of a sidecar, into ids[cap]; their count. */
static int sidecar_ids(const char *path, int32_t *ids, int cap)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je), *a;
	int n;

	if (!j)
		fail_msg("%s: %s", path, je.text);
	a = json_object_get(j, "token_ids");
	assert_true(json_is_array(a));
	n = (int)json_array_size(a);
	assert_true(n <= cap);
	for (int i = 0; i < n; i++)
		ids[i] = (int32_t)json_integer_value(json_array_get(a, (size_t)i));
	json_decref(j);
	return n;
}

/* generate --prompt: one user message after --system, rendered by the chat
 * template; sample i draws from the stream (seed, no task, i) — the tokens
 * of dec_generate_n with task NULL on the same rendered prompt, which the
 * sidecar's token_ids carry exactly; prompt_s<i>.txt and .json, no code
 * file; the text ends as the ids do. */
static void test_generate_prompt(void **state)
{
	char dir[256], path[600], *out, *err;
	char *argv[] = { "generate", "--model", model_path, "--prompt", "Say hi.", "--system", "be brief", "--n", "3",
			 "--max-tokens", "10", "--seed", "5", "--temperature", "0.9", "--out", dir, "--threads", "1" };
	struct dec_model *m;
	struct dec_tok *tok;
	struct dec_state *st;
	struct dec_gen_out ref[3];
	struct dec_gen_params p = { .max_tokens = 10, .samp = { 0.9f, 0, 0.95f, 0 }, .seed = 5 };
	struct cr_err e;
	char *chat;
	int32_t *prompt, ids[16];
	size_t n_prompt;
	json_t *j;
	json_error_t je;

	(void)state;
	tiny_tmpname(dir, sizeof dir, "_prompt");
	assert_int_equal(capture2(gen_main, 19, argv, &out, &err), 0);
	assert_non_null(strstr(err, "a prompt x 3 samples"));
	assert_non_null(strstr(err, "generate: prompt sample 1/3"));
	free(out);
	free(err);
	/* the reference: the same chat, the streams (5, NULL, i) */
	cr_err_init(&e);
	assert_int_equal(dec_model_open(model_path, &m, &e), CR_OK);
	assert_int_equal(dec_vocab_tokenizer(m->gguf, &tok, &e), CR_OK);
	assert_int_equal(dec_chat_format(tok, "be brief", "Say hi.", &chat, &e), CR_OK);
	assert_int_equal(dec_tok_encode(tok, chat, strlen(chat), 1, 0, &prompt, &n_prompt, &e), CR_OK);
	assert_int_equal(dec_state_new_seqs(m, (int)n_prompt + 11, 8, 3, 1, &st, &e), CR_OK);
	assert_int_equal(dec_generate_n(st, tok, prompt, (int)n_prompt, NULL, &p, 3, ref, &e), CR_OK);
	for (int i = 0; i < 3; i++) {
		char *txt;
		int n;

		snprintf(path, sizeof path, "%s/prompt_s%d.json", dir, i);
		n = sidecar_ids(path, ids, 16);
		assert_int_equal(n, ref[i].n_tokens);
		assert_memory_equal(ids, ref[i].tokens, sizeof(int32_t) * (size_t)n);
		j = json_load_file(path, 0, &je);
		assert_non_null(j);
		assert_true(json_is_null(json_object_get(j, "task")));
		assert_int_equal(json_integer_value(json_object_get(j, "sample")), i);
		assert_int_equal(json_integer_value(json_object_get(j, "prompt_tokens")), (json_int_t)n_prompt);
		assert_int_equal(json_integer_value(json_object_get(j, "completion_tokens")), n);
		assert_string_equal(json_string_value(json_object_get(j, "finish_reason")), ref[i].finish);
		json_decref(j);
		snprintf(path, sizeof path, "%s/prompt_s%d.txt", dir, i);
		txt = tiny_slurp(path, NULL);
		assert_non_null(txt);
		assert_int_equal(strlen(txt), ref[i].text_len);
		assert_memory_equal(txt, ref[i].text, ref[i].text_len);
		free(txt);
		for (const char *ext = "c"; ext; ext = *ext == 'c' && !ext[1] ? "cu" : NULL) {
			snprintf(path, sizeof path, "%s/prompt_s%d.%s", dir, i, ext);
			assert_false(access(path, F_OK) == 0);
		}
		dec_gen_out_release(&ref[i]);
	}
	/* the streams are not a task's: --tasks with one task differs */
	p.task = "smoke/relu";
	assert_int_equal(dec_generate_n(st, tok, prompt, (int)n_prompt, NULL, &p, 1, ref, &e), CR_OK);
	snprintf(path, sizeof path, "%s/prompt_s0.json", dir);
	assert_false(sidecar_ids(path, ids, 16) == ref[0].n_tokens &&
		     !memcmp(ids, ref[0].tokens, sizeof(int32_t) * (size_t)ref[0].n_tokens));
	dec_gen_out_release(&ref[0]);
	dec_state_free(st);
	free(prompt);
	free(chat);
	dec_tok_free(tok);
	dec_model_free(m);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void test_generate_usage(void **state)
{
	char *out;
	char dir[256], path[512];
	char *bad[] = { "generate", "--model", model_path, "--tasks", "bad", "--n", "1", "--max-tokens", "4",
			 "--out", dir };
	char *missing[] = { "generate", "--model", model_path };
	char *help[] = { "generate", "--help" };
	char *both[] = { "generate", "--model", model_path, "--tasks", "smoke", "--prompt", "hi", "--out", dir };
	char *backend[] = { "generate", "--model", model_path, "--prompt", "hi", "--backend", "auto", "--out", dir };
	char *toolong[] = { "generate", "--model", model_path, "--prompt", "hi", "--ctx", "4", "--out", dir };
	char *err;

	(void)state;
	assert_int_equal(capture(gen_main, 3, missing, &out), 2);
	free(out);
	assert_int_equal(capture(gen_main, 2, help, &out), 0);
	assert_non_null(strstr(out, "--tasks"));
	assert_non_null(strstr(out, "--prompt TEXT"));
	assert_non_null(strstr(out, "no code file"));
	free(out);
	/* --prompt: not with --tasks or --backend; a prompt that does not fit
	 * is the command's failure, and nothing is made */
	tiny_tmpname(dir, sizeof dir, "_bad");
	assert_int_equal(capture2(gen_main, 9, both, &out, &err), 2);
	assert_non_null(strstr(err, "--tasks and --prompt exclude each other"));
	free(out);
	free(err);
	assert_int_equal(capture2(gen_main, 9, backend, &out, &err), 2);
	assert_non_null(strstr(err, "--prompt writes none"));
	free(out);
	free(err);
	assert_int_equal(capture2(gen_main, 9, toolong, &out, &err), 2);
	assert_non_null(strstr(err, "prompt: prompt of"));
	assert_non_null(strstr(err, "does not fit the context of 4"));
	free(out);
	free(err);
	assert_false(access(dir, F_OK) == 0);
	/* a bad task is skipped, the others written, and the exit code says so */
	tiny_tmpname(dir, sizeof dir, "_bad");
	assert_int_equal(capture(gen_main, 11, bad, &out), 2);
	free(out);
	snprintf(path, sizeof path, "%s/smoke/relu_s0.json", dir);
	assert_true(access(path, R_OK) == 0);
	snprintf(path, sizeof path, "%s/../escape_s0.txt", dir);
	assert_false(access(path, F_OK) == 0);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void test_generate_bad_options(void **state)
{
	char dir[256];
	char *base[] = { "generate", "--model", model_path, "--tasks", "smoke", "--out", dir };
	static const struct bad_case cases[] = {
		{ { "--n", "12abc" }, { "--n", "'12abc'", "1..1000000" } },
		{ { "--n=-5" }, { "--n", "'-5'" } },
		{ { "--n", "0" }, { "--n", "'0'" } },
		{ { "--n=" }, { "--n", "''" } },
		{ { "--n" }, { "--n", "needs a value" } },
		{ { "--batch=257" }, { "--batch", "'257'", "1..256" } },
		{ { "--batch", "12abc" }, { "--batch", "'12abc'" } },
		{ { "--backend=tpu" }, { "--backend", "'tpu'" } },
		{ { "--system" }, { "--system", "needs a value" } },
		{ { "--temperature", "x" }, { "--temperature", "'x'" } },
		{ { "--top-p=1.5" }, { "--top-p", "'1.5'" } },
		{ { "--max-tokens", "-5" }, { "--max-tokens", "'-5'" } },
		{ { "--seed", "12abc" }, { "--seed", "'12abc'" } },
		{ { "--seed=-5" }, { "--seed", "'-5'" } },
		{ { "--seed" }, { "--seed", "needs a value" } },
		{ { "--frobnicate" }, { "'--frobnicate'" } },
		{ { "--json" }, { "'--json'" } },
		{ { "extra" }, { "unexpected argument", "'extra'" } },
		{ { "--chat-template", "jinja" }, { "--chat-template", "'jinja'" } },
		{ { "--no-think" }, { "--no-think", "'chatml'", "no thinking switch" } },
		{ { "--device", "tpu" }, { "--device", "'tpu'" } },
		{ { "--kv-mem", "12x" }, { "--kv-mem", "'12x'" } },
		{ { "--kv-mem", "0" }, { "--kv-mem", "'0'" } },
		{ { "--max-batch-tokens", "0" }, { "--max-batch-tokens", "'0'" } },
		{ { "--draft", "magic" }, { "--draft", "'magic'" } },
		{ { "--draft-tokens", "3" }, { "--draft-tokens needs --draft" } },
		{ { "--draft=ngram", "--draft-tokens=65" }, { "--draft-tokens", "'65'" } },
		{ { "--draft-model", "/nonexistent.gguf" }, { "/nonexistent.gguf" } },
	};

	(void)state;
	tiny_tmpname(dir, sizeof dir, "_badopt");
	expect_usage(gen_main, base, 7, cases, sizeof cases / sizeof cases[0]);
	/* refused before anything is written */
	assert_false(access(dir, F_OK) == 0);
}

/* --opt=value is --opt value for every option of generate: the same files,
 * and the sidecars carry the values given. */
static void test_generate_option_forms(void **state)
{
	char d1[256], d2[256], o[8][300], path[600], *out;
	char *spaced[] = { "generate", "--model", model_path, "--tasks", "smoke", "--n", "2", "--out", d1,
			   "--max-tokens", "5", "--seed", "9", "--temperature", "0.8", "--top-p", "0.5",
			   "--top-k", "3", "--min-p", "0.1", "--batch", "1", "--backend", "cpu",
			   "--system", "be brief", "--threads", "1", "--stop", "}" };
	char *joined[] = { "generate", o[0], o[1], "--n=2", o[2], "--max-tokens=5", "--seed=9",
			   "--temperature=0.8", "--top-p=0.5", "--top-k=3", "--min-p=0.1", "--batch=1",
			   "--backend=cpu", "--system=be brief", "--threads=1", "--stop=}" };

	(void)state;
	tiny_tmpname(d1, sizeof d1, "_form1");
	tiny_tmpname(d2, sizeof d2, "_form2");
	snprintf(o[0], sizeof o[0], "--model=%s", model_path);
	snprintf(o[1], sizeof o[1], "--tasks=smoke");
	snprintf(o[2], sizeof o[2], "--out=%s", d2);
	assert_int_equal(capture(gen_main, 31, spaced, &out), 0);
	free(out);
	assert_int_equal(capture(gen_main, 16, joined, &out), 0);
	free(out);
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < 3; i++) {
			const char *task = t ? "smoke/gelu" : "smoke/relu";
			char *a, *b;
			json_t *j;
			json_error_t je;

			snprintf(path, sizeof path, "%s/%s_s%d.c", d2, task, i);
			if (i == 2) { /* --n=2: two samples */
				assert_false(access(path, F_OK) == 0);
				continue;
			}
			assert_true(access(path, R_OK) == 0); /* --backend=cpu: .c */
			snprintf(path, sizeof path, "%s/%s_s%d.txt", d1, task, i);
			a = tiny_slurp(path, NULL);
			snprintf(path, sizeof path, "%s/%s_s%d.txt", d2, task, i);
			b = tiny_slurp(path, NULL);
			assert_non_null(a);
			assert_non_null(b);
			assert_string_equal(a, b);
			free(a);
			free(b);
			snprintf(path, sizeof path, "%s/%s_s%d.json", d2, task, i);
			j = json_load_file(path, 0, &je);
			assert_non_null(j);
			assert_int_equal(json_integer_value(json_object_get(j, "seed")), 9);
			assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 5);
			assert_int_equal(json_integer_value(json_object_get(j, "top_k")), 3);
			assert_true(fabs(json_real_value(json_object_get(j, "temperature")) - 0.8) < 1e-6);
			assert_true(fabs(json_real_value(json_object_get(j, "top_p")) - 0.5) < 1e-6);
			assert_true(fabs(json_real_value(json_object_get(j, "min_p")) - 0.1) < 1e-6);
			assert_true(json_integer_value(json_object_get(j, "completion_tokens")) <= 5);
			json_decref(j);
		}
	snprintf(path, sizeof path, "rm -rf '%s' '%s'", d1, d2);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_json_tokens),
		cmocka_unit_test(test_decode_score),
		cmocka_unit_test(test_decode_prompt_tokenize_only),
		cmocka_unit_test(test_decode_sampling_reproducible),
		cmocka_unit_test(test_decode_stop),
		cmocka_unit_test(test_decode_no_tokenizer),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_decode_bad_model),
		cmocka_unit_test(test_decode_bad_options),
		cmocka_unit_test(test_decode_option_forms),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_generate_prompt),
		cmocka_unit_test(test_generate_usage),
		cmocka_unit_test(test_generate_bad_options),
		cmocka_unit_test(test_generate_option_forms),
	};

	return cmocka_run_group_tests_name("decode_cli", tests, setup, teardown);
}
