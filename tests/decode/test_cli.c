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
#include "decode/dec_model.h"
#include "decode/dec_quant.h"
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

/* Runs a main with stdout captured into *out (malloc'd). */
static int capture(int (*fn)(int, char **), int argc, char **argv, char **out)
{
	char path[256];
	int fd, saved, rc;

	tiny_tmpname(path, sizeof path, ".out");
	fflush(stdout);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	saved = dup(1);
	dup2(fd, 1);
	close(fd);
	rc = fn(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	*out = tiny_slurp(path, NULL);
	unlink(path);
	return rc;
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
	free(out);
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

static const struct dec_task_source fake = { NULL, fake_list, fake_prompt };

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

static void test_generate_usage(void **state)
{
	char *out;
	char dir[256], path[512];
	char *bad[] = { "generate", "--model", model_path, "--tasks", "bad", "--n", "1", "--max-tokens", "4",
			 "--out", dir };
	char *missing[] = { "generate", "--model", model_path };
	char *help[] = { "generate", "--help" };

	(void)state;
	assert_int_equal(capture(gen_main, 3, missing, &out), 2);
	free(out);
	assert_int_equal(capture(gen_main, 2, help, &out), 0);
	assert_non_null(strstr(out, "--tasks"));
	free(out);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_json_tokens),
		cmocka_unit_test(test_decode_prompt_tokenize_only),
		cmocka_unit_test(test_decode_sampling_reproducible),
		cmocka_unit_test(test_decode_stop),
		cmocka_unit_test(test_decode_no_tokenizer),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_generate_usage),
	};

	return cmocka_run_group_tests_name("decode_cli", tests, setup, teardown);
}
