/* engine_bench.c — continuous batching (decode/engine/dec_engine.c) against the
 * static batching `generate` did before it (per task: the prompt prefilled
 * once, then its samples in batches of B that each run until their longest
 * sample ends), on the same requests, side by side.
 *
 * The model is generated (tests/decode/dec_testutil.c: a llama-shaped model
 * with random weights and a byte-level vocabulary), so sample lengths come
 * from stop strings: a sample ends at the first of a few letters, or at
 * --max-tokens, which gives the long-tailed lengths real completions have.
 * Both ways produce the same tokens (checked: the total of each run); the
 * figure is generated tokens per second of wall time, prefill included.
 * Pairs alternate which runs first.
 *
 * usage: engine_bench [--tasks T] [--n N] [--batches 1,8,32] [--max-tokens M]
 *                     [--dim D --layers L --hidden H] [--threads N] [--rounds R]
 *                     [--only static|engine]   (one side, to be timed as a process) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decode/engine/dec_engine.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/dec_run.h"
#include "dec_testutil.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *const stops[] = { "q", "z", "Q", "Z", "x", "J" };

struct setup {
	struct dec_model *m;
	struct dec_tok *tok;
	int n_tasks, n, max_tokens, threads, n_prompt;
	int32_t **prompts;
};

static struct dec_gen_params params(const struct setup *S, int task)
{
	static char names[64][16];

	snprintf(names[task % 64], sizeof names[0], "task%d", task);
	return (struct dec_gen_params){ .max_tokens = S->max_tokens, .samp = { 0.8f, 0, 1.0f, 0 }, .seed = 42,
					.task = names[task % 64], .stops = stops, .n_stops = 6 };
}

/* generate before the engine: per task, prefill once, then batches of B. */
static long run_static(const struct setup *S, int B, double *secs, long *max_len)
{
	struct dec_gen_out *outs = calloc((size_t)B, sizeof *outs);
	float *logits = malloc((size_t)S->m->cfg.n_vocab * sizeof *logits);
	struct cr_err e;
	long total = 0;
	double t0 = now_s();

	cr_err_init(&e);
	for (int t = 0; t < S->n_tasks; t++) {
		struct dec_state *s;
		struct dec_gen_params p = params(S, t);

		if (dec_state_new_seqs(S->m, S->n_prompt + S->max_tokens + 1, B > 64 ? B : 64, B, S->threads, &s, &e) ||
		    dec_forward(s, S->prompts[t], S->n_prompt, NULL, &e)) {
			fprintf(stderr, "engine_bench: %s\n", e.msg);
			exit(3);
		}
		memcpy(logits, s->logits, (size_t)S->m->cfg.n_vocab * sizeof *logits);
		for (int i0 = 0; i0 < S->n; i0 += B) {
			int nb = S->n - i0 < B ? S->n - i0 : B;

			p.sample = (uint64_t)i0;
			if (dec_generate_n(s, S->tok, S->prompts[t], S->n_prompt, logits, &p, nb, outs, &e)) {
				fprintf(stderr, "engine_bench: %s\n", e.msg);
				exit(3);
			}
			for (int k = 0; k < nb; k++) {
				total += outs[k].n_tokens;
				if (outs[k].n_tokens > *max_len)
					*max_len = outs[k].n_tokens;
				dec_gen_out_release(&outs[k]);
			}
		}
		dec_state_free(s);
	}
	*secs = now_s() - t0;
	free(outs);
	free(logits);
	return total;
}

/* generate now: every task's request into one engine of B sequences. */
static long run_engine(const struct setup *S, int B, double *secs, struct dec_engine_stats *st)
{
	struct dec_engine_cfg cfg = { .device = DEC_DEV_CPU, .max_seqs = B,
				      .max_ctx = S->n_prompt + S->max_tokens + 1, .n_threads = S->threads };
	struct dec_engine *eng;
	struct dec_req *r = calloc((size_t)S->n_tasks, sizeof *r);
	struct dec_gen_out *outs = calloc((size_t)S->n_tasks * S->n, sizeof *outs);
	struct cr_err e;
	long total = 0;
	double t0 = now_s();

	cr_err_init(&e);
	if (dec_engine_new(S->m, &cfg, &eng, &e)) {
		fprintf(stderr, "engine_bench: %s\n", e.msg);
		exit(3);
	}
	for (int t = 0; t < S->n_tasks; t++) {
		r[t] = (struct dec_req){ .prompt = S->prompts[t], .n_prompt = S->n_prompt, .n = S->n, .p = params(S, t),
					 .tok = S->tok, .outs = outs + (size_t)t * S->n };
		if (dec_engine_submit(eng, &r[t], &e)) {
			fprintf(stderr, "engine_bench: %s\n", e.msg);
			exit(3);
		}
	}
	if (dec_engine_run(eng, &e)) {
		fprintf(stderr, "engine_bench: %s\n", e.msg);
		exit(3);
	}
	*secs = now_s() - t0;
	*st = *dec_engine_stats(eng);
	for (int i = 0; i < S->n_tasks * S->n; i++) {
		total += outs[i].n_tokens;
		dec_gen_out_release(&outs[i]);
	}
	dec_engine_free(eng);
	free(outs);
	free(r);
	return total;
}

int main(int argc, char **argv)
{
	struct setup S = { .n_tasks = 4, .n = 16, .max_tokens = 256, .threads = 0, .n_prompt = 48 };
	struct tiny_spec spec;
	const char *batches = "1,8,32", *only = NULL;
	int rounds = 2;
	char path[256], load[128] = "";
	struct cr_err e;
	FILE *f;

	tiny_spec_default(&spec, "llama", DEC_T_Q8_0);
	spec.dim = 512;
	spec.n_layers = 8;
	spec.n_heads = 8;
	spec.n_kv_heads = 4;
	spec.head_dim = 64;
	spec.hidden = 1536;
	spec.ctx_len = 4096;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];

		if (!strcmp(a, "--tasks")) S.n_tasks = atoi(v);
		else if (!strcmp(a, "--n")) S.n = atoi(v);
		else if (!strcmp(a, "--batches")) batches = v;
		else if (!strcmp(a, "--max-tokens")) S.max_tokens = atoi(v);
		else if (!strcmp(a, "--dim")) spec.dim = atoi(v);
		else if (!strcmp(a, "--layers")) spec.n_layers = atoi(v);
		else if (!strcmp(a, "--hidden")) spec.hidden = atoi(v);
		else if (!strcmp(a, "--threads")) S.threads = atoi(v);
		else if (!strcmp(a, "--rounds")) rounds = atoi(v);
		else if (!strcmp(a, "--only")) only = v; /* "static" or "engine": one side, for farm-bench */
		else {
			fprintf(stderr, "engine_bench: unknown option %s\n", a);
			return 2;
		}
	}
	if (S.n_tasks < 1 || S.n_tasks > 64 || S.n < 1 || S.max_tokens < 1 || rounds < 1 || spec.dim % 256 ||
	    spec.hidden % 256 || spec.n_layers < 1) {
		fprintf(stderr, "engine_bench: bad arguments (dim and hidden multiples of 256, tasks 1..64)\n");
		return 2;
	}
	tiny_tmpname(path, sizeof path, ".gguf");
	cr_err_init(&e);
	if (tiny_model_write(&spec, path) || dec_model_open(path, &S.m, &e) ||
	    dec_vocab_tokenizer(S.m->gguf, &S.tok, &e)) {
		fprintf(stderr, "engine_bench: cannot build the model: %s\n", e.msg);
		unlink(path);
		return 3;
	}
	unlink(path);
	S.prompts = calloc((size_t)S.n_tasks, sizeof *S.prompts);
	for (int t = 0; t < S.n_tasks; t++) {
		S.prompts[t] = malloc((size_t)S.n_prompt * sizeof *S.prompts[t]);
		for (int i = 0; i < S.n_prompt; i++)
			S.prompts[t][i] = (int32_t)((t * 7919 + i * 104729 + 17) % S.m->cfg.n_vocab);
	}
	if ((f = fopen("/proc/loadavg", "r"))) {
		if (!fgets(load, sizeof load, f))
			load[0] = 0;
		fclose(f);
		load[strcspn(load, "\n")] = 0;
	}
	printf("engine_bench: %.1fM params Q8_0 (dim %d, %d layers), %d tasks x %d samples, prompt %d, "
	       "max %d tokens, stops at q z Q Z x J; load %s\n", dec_model_n_params(S.m) / 1e6, spec.dim,
	       spec.n_layers, S.n_tasks, S.n, S.n_prompt, S.max_tokens, load);
	if (only) { /* one side once per batch size: a process to time from outside */
		for (const char *b = batches; *b;) {
			double t = 0;
			long longest = 0, n;
			struct dec_engine_stats st;

			n = strcmp(only, "static") ? run_engine(&S, atoi(b), &t, &st) : run_static(&S, atoi(b), &t, &longest);
			printf("%s batch %d: %ld tokens in %.3fs (%.1f/s)\n", only, atoi(b), n, t, n / t);
			b = strchr(b, ',');
			b = b ? b + 1 : "";
		}
		return 0;
	}
	printf("%6s %5s %10s %10s %8s %10s %8s\n", "batch", "round", "static/s", "engine/s", "ratio", "tokens",
	       "longest");
	for (const char *b = batches; *b;) {
		int B = atoi(b);
		double sum_ratio = 0;

		for (int r = 0; r < rounds; r++) {
			double ts = 0, te = 0;
			long ns, ne, longest = 0;
			struct dec_engine_stats st;

			if (r % 2) {
				ne = run_engine(&S, B, &te, &st);
				ns = run_static(&S, B, &ts, &longest);
			} else {
				ns = run_static(&S, B, &ts, &longest);
				ne = run_engine(&S, B, &te, &st);
			}
			if (ns != ne) {
				fprintf(stderr, "engine_bench: static made %ld tokens, the engine %ld: not the same samples\n",
					ns, ne);
				return 1;
			}
			printf("%6d %5d %10.1f %10.1f %8.2f %10ld %8ld\n", B, r, ns / ts, ne / te, ts / te, ns, longest);
			sum_ratio += ts / te;
		}
		printf("%6d  mean ratio %.2f (engine tokens/s over static)\n", B, sum_ratio / rounds);
		b = strchr(b, ',');
		b = b ? b + 1 : "";
		fflush(stdout);
	}
	for (int t = 0; t < S.n_tasks; t++)
		free(S.prompts[t]);
	free(S.prompts);
	dec_tok_free(S.tok);
	dec_model_free(S.m);
	return 0;
}
