/* decode_bench_cuda.c — decode_bench --device cuda: the decoder's CUDA
 * backend on one model (decode_bench's synthetic one, or a GGUF file):
 *   - prefill tokens/s (one sequence, chunks of up to 512 tokens);
 *   - batch-1 decode tokens/s and the fraction of the memory roofline it
 *     reaches: (weight bytes + KV bytes read per token) / step time, over
 *     the device's peak bandwidth (2 × memory clock × bus width from the
 *     driver, else a table of known parts);
 *   - batch 16 and 64 decode throughput (tokens/s in all), and batch 16
 *     sampled with the draws on the device against the logits copied to
 *     the host and drawn there;
 * and, with --parity N, greedy decoding of N steps on the CPU and CUDA
 * backends from the same prompt: where the tokens part, and the largest
 * |logprob difference| over the CPU's top 5 while they agree.
 * Steps go through dec_graph_step, so the backend's graphs are in play
 * (a step shape is captured the second time it is seen). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda_drv.h"
#include "decode/cpu/dec_cpu.h"
#include "decode/cuda/dec_be_cuda.h"
#include "decode/engine/dec_forward.h"
#include "decode/quant/dec_quant.h"
#include "bench/decode_bench.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Peak memory bandwidth in bytes/s, and where the figure came from. */
static double peak_bw(const struct cr_cuda_device *d, const char **src)
{
	static const struct { const char *name; double bw; } parts[] = {
		{ "H200", 4.8e12 }, { "H100 NVL", 3.9e12 }, { "H100 PCIe", 2.0e12 }, { "H100", 3.35e12 },
		{ "A100-SXM4-80GB", 2.039e12 }, { "A100 80GB PCIe", 1.935e12 }, { "A100", 1.555e12 },
		{ "L40S", 0.864e12 }, { "L4", 0.3e12 }, { "A10", 0.6e12 },
	};

	if (d->mem_clock_khz > 0 && d->bus_bits > 0) {
		*src = "driver: 2 x memory clock x bus width";
		return 2.0 * d->mem_clock_khz * 1e3 * d->bus_bits / 8;
	}
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (strstr(d->name, parts[i].name)) {
			*src = "table of known parts";
			return parts[i].bw;
		}
	*src = "unknown (no driver figures, not in the table)";
	return 0;
}

struct ctx {
	struct dec_be *be;
	struct dec_graph g;
	int mb, nv;
	int32_t *tok, *pos, *seq, *out, *btab;
	float *logits;
};

static int ctx_open(struct ctx *c, const struct dec_model *m, int gpu, int max_ctx, int max_seqs)
{
	struct dec_be_cfg cfg = { .max_tokens = 512, .max_out = 64, .max_seqs = max_seqs, .max_ctx = max_ctx,
				  .block_size = 16, .n_threads = 0, .device = 0 };
	struct cr_err e;

	memset(c, 0, sizeof *c);
	c->mb = dec_be_max_blocks(&cfg);
	cfg.n_blocks = max_seqs * c->mb;
	c->nv = m->cfg.n_vocab;
	cr_err_init(&e);
	if ((gpu ? dec_be_cuda_open : dec_be_cpu_open)(m, &cfg, &c->be, &e) || dec_graph_init(&c->g, c->be, &e)) {
		fprintf(stderr, "decode_bench: %s\n", e.msg);
		dec_be_free(c->be);
		return 3;
	}
	c->tok = malloc(512 * sizeof *c->tok);
	c->pos = malloc(512 * sizeof *c->pos);
	c->seq = malloc(512 * sizeof *c->seq);
	c->out = malloc(64 * sizeof *c->out);
	c->btab = malloc((size_t)max_seqs * c->mb * sizeof *c->btab);
	c->logits = malloc((size_t)64 * c->nv * sizeof *c->logits);
	for (int s = 0; s < max_seqs; s++)
		for (int j = 0; j < c->mb; j++)
			c->btab[s * c->mb + j] = s * c->mb + j;
	return 0;
}

static void ctx_close(struct ctx *c)
{
	dec_be_free(c->be);
	free(c->tok);
	free(c->pos);
	free(c->seq);
	free(c->out);
	free(c->btab);
	free(c->logits);
}

static int step(struct ctx *c, int nb, int n_seq, int n_out)
{
	struct dec_step st = { .nb = nb, .tok = c->tok, .pos = c->pos, .seq = c->seq, .n_seq = n_seq,
			       .btab = c->btab, .n_out = n_out, .out = c->out };
	struct cr_err e;

	cr_err_init(&e);
	if (dec_graph_step(&c->g, &st, c->logits, &e)) {
		fprintf(stderr, "decode_bench: %s\n", e.msg);
		return 3;
	}
	return 0;
}

static int argmax(const float *x, int n)
{
	int b = 0;

	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* Prefills sequence s with prompt[0..n) in chunks of 512; the last chunk's
 * last token's logits are wanted. */
static int prefill(struct ctx *c, int s, const int32_t *prompt, int n)
{
	for (int p0 = 0; p0 < n; p0 += 512) {
		int nb = n - p0 < 512 ? n - p0 : 512;

		for (int i = 0; i < nb; i++) {
			c->tok[i] = prompt[p0 + i];
			c->pos[i] = p0 + i;
			c->seq[i] = s;
		}
		c->out[0] = nb - 1;
		if (step(c, nb, s + 1, p0 + nb == n))
			return 3;
	}
	return 0;
}

/* n_gen steps of B sequences, every row's token drawn with temperature 0.8
 * and top-p 0.95: on the device (dec_graph_forward, then the sample op: ids
 * come back) or on the host (the logits come back, dec_sample draws).
 * Returns the seconds, or -1. */
static double sampled_steps(struct ctx *c, const int32_t *prompt, int n_prompt, int B, int n_gen, int on_device)
{
	struct dec_sampling samp = { 0.8f, 0, 0.95f, 0 };
	struct dec_draw d[64];
	struct dec_sampler smp;
	struct dec_rng rng[64];
	struct cr_err e;
	double t0;
	int32_t next[64];

	cr_err_init(&e);
	if (dec_sampler_init(&smp, &samp, c->nv, &e))
		return -1;
	for (int s = 0; s < B; s++) {
		dec_rng_seed(&rng[s], 1, "bench", (uint64_t)s);
		next[s] = prompt[s % n_prompt];
	}
	t0 = now_s();
	for (int i = 0; i < n_gen; i++) {
		struct dec_step st = { .nb = B, .tok = c->tok, .pos = c->pos, .seq = c->seq, .n_seq = B,
				       .btab = c->btab, .n_out = B, .out = c->out };

		for (int s = 0; s < B; s++) {
			c->tok[s] = next[s];
			c->pos[s] = n_prompt + i;
			c->seq[s] = s;
			c->out[s] = s;
		}
		if (on_device) {
			for (int s = 0; s < B; s++)
				d[s] = (struct dec_draw){ .row = s, .samp = samp, .u53 = dec_rng_next(&rng[s]) >> 11 };
			if (dec_graph_forward(&c->g, &st, &e) || dec_graph_sample(&c->g, d, B, &e))
				goto fail;
			for (int s = 0; s < B; s++)
				next[s] = d[s].id;
		} else {
			if (dec_graph_step(&c->g, &st, c->logits, &e))
				goto fail;
			for (int s = 0; s < B; s++)
				next[s] = dec_sample(&smp, c->logits + (size_t)s * c->nv, &rng[s]);
		}
	}
	dec_sampler_release(&smp);
	return now_s() - t0;
fail:
	fprintf(stderr, "decode_bench: %s\n", e.msg);
	dec_sampler_release(&smp);
	return -1;
}

int bench_cuda(const struct dec_model *m, const char *label, int n_prompt, int n_gen)
{
	struct cr_cuda_device d;
	struct cr_err e;
	struct ctx c;
	const char *src;
	int max_ctx = n_prompt + n_gen + 1, batches[2] = { 16, 64 };
	int32_t *prompt = malloc((size_t)n_prompt * sizeof *prompt);
	double bw, t0, t_pre, t_dec, kv, bytes;
	size_t wb = dec_model_weight_bytes(m);

	cr_err_init(&e);
	if (cr_cuda_device_info(0, &d, &e)) {
		fprintf(stderr, "decode_bench: %s\n", e.msg);
		return 3;
	}
	bw = peak_bw(&d, &src);
	for (int i = 0; i < n_prompt; i++)
		prompt[i] = (int32_t)((i * 2654435761u) % (uint32_t)m->cfg.n_vocab);
	if (ctx_open(&c, m, 1, max_ctx, 64))
		return 3;
	printf("%-5s %s on %s (%s): weights %.0f MB, peak bandwidth %.0f GB/s (%s)\n", label,
	       m->cfg.arch_name, d.name, d.arch, wb / 1e6, bw / 1e9, src);
	/* prefill: the first pass loads and warms everything, the second is timed */
	if (prefill(&c, 0, prompt, n_prompt))
		goto fail;
	t0 = now_s();
	if (prefill(&c, 0, prompt, n_prompt))
		goto fail;
	t_pre = now_s() - t0;
	/* batch 1: n_gen steps after the prompt, twice (the second timed: every
	 * step shape captured by then) */
	for (int rep = 0; rep < 2; rep++) {
		int32_t next = argmax(c.logits, c.nv);

		t0 = now_s();
		for (int i = 0; i < n_gen; i++) {
			c.tok[0] = next;
			c.pos[0] = n_prompt + i;
			c.seq[0] = 0;
			c.out[0] = 0;
			if (step(&c, 1, 1, 1))
				goto fail;
			next = argmax(c.logits, c.nv);
		}
		t_dec = now_s() - t0;
	}
	kv = (double)m->cfg.n_layers * (n_prompt + n_gen / 2.0) * m->cfg.n_kv_heads * m->cfg.head_dim * 2 * 2;
	bytes = (double)wb + kv;
	printf("      prefill %d tokens: %.0f tok/s   decode batch 1: %.1f tok/s (%.3f ms/token)\n", n_prompt,
	       n_prompt / t_pre, n_gen / t_dec, 1e3 * t_dec / n_gen);
	if (bw > 0)
		printf("      memory roofline: %.0f MB/token (weights %.0f, KV %.1f) -> %.0f tok/s at peak: %.0f%% reached\n",
		       bytes / 1e6, wb / 1e6, kv / 1e6, bw / bytes, 100.0 * (n_gen / t_dec) / (bw / bytes));
	/* batches: every sequence its own copy of the prompt, then n_gen steps together */
	for (int k = 0; k < 2; k++) {
		int B = batches[k];
		double t_b = 0;

		for (int s = 0; s < B; s++)
			if (prefill(&c, s, prompt, n_prompt))
				goto fail;
		for (int rep = 0; rep < 2; rep++) {
			t0 = now_s();
			for (int i = 0; i < n_gen; i++) {
				for (int s = 0; s < B; s++) {
					c.tok[s] = prompt[(i + s) % n_prompt];
					c.pos[s] = n_prompt + i;
					c.seq[s] = s;
					c.out[s] = s;
				}
				if (step(&c, B, B, B))
					goto fail;
			}
			t_b = now_s() - t0;
		}
		printf("      decode batch %d: %.0f tok/s in all (%.1fx batch 1)\n", B, B * n_gen / t_b,
		       B * n_gen / t_b / (n_gen / t_dec));
		if (B == 16) {
			/* sampled: drawn on the device against drawn on the host,
			 * interleaved pairs (the step shapes were captured above) */
			double td = 1e30, th = 1e30;

			for (int rep = 0; rep < 3; rep++) {
				double a = sampled_steps(&c, prompt, n_prompt, B, n_gen, 1);
				double h = sampled_steps(&c, prompt, n_prompt, B, n_gen, 0);

				if (a < 0 || h < 0)
					goto fail;
				td = a < td ? a : td;
				th = h < th ? h : th;
			}
			printf("      decode batch 16 sampled (T 0.8, top-p 0.95, best of 3): drawn on the device %.0f "
			       "tok/s, logits to the host and drawn there %.0f tok/s (%.2fx)\n", B * n_gen / td,
			       B * n_gen / th, th / td);
		}
	}
	ctx_close(&c);
	free(prompt);
	return 0;
fail:
	ctx_close(&c);
	free(prompt);
	return 3;
}

static void log_softmax(const float *x, int n, double *out)
{
	double mx = x[argmax(x, n)], s = 0;

	for (int i = 0; i < n; i++)
		s += exp((double)x[i] - mx);
	for (int i = 0; i < n; i++)
		out[i] = (double)x[i] - mx - log(s);
}

int bench_cuda_parity(const struct dec_model *m, int n_steps)
{
	struct ctx c[2];
	int nv = m->cfg.n_vocab, n_prompt = 16, parted = -1, rc = 0;
	int32_t prompt[16], next[2];
	double *l0 = malloc(nv * sizeof *l0), *l1 = malloc(nv * sizeof *l1), worst = 0, worst_all = 0;

	for (int i = 0; i < n_prompt; i++)
		prompt[i] = (int32_t)((i * 2654435761u + 7) % (uint32_t)nv);
	for (int g = 0; g < 2; g++)
		if (ctx_open(&c[g], m, g, n_prompt + n_steps + 1, 1))
			return 3;
	for (int i = 0; i <= n_steps && !rc; i++) {
		for (int g = 0; g < 2; g++) {
			if (i == 0)
				rc |= prefill(&c[g], 0, prompt, n_prompt);
			else {
				c[g].tok[0] = next[g];
				c[g].pos[0] = n_prompt + i - 1;
				c[g].seq[0] = 0;
				c[g].out[0] = 0;
				rc |= step(&c[g], 1, 1, 1);
			}
			next[g] = argmax(c[g].logits, nv);
		}
		if (rc)
			break;
		log_softmax(c[0].logits, nv, l0);
		log_softmax(c[1].logits, nv, l1);
		for (int k = 0, top[5]; k < 5; k++) {
			top[k] = -1;
			for (int t = 0; t < nv; t++) {
				int taken = 0;

				for (int j = 0; j < k; j++)
					taken |= top[j] == t;
				if (!taken && (top[k] < 0 || l0[t] > l0[top[k]]))
					top[k] = t;
			}
			if (parted < 0)
				worst = fmax(worst, fabs(l0[top[k]] - l1[top[k]]));
		}
		for (int t = 0; t < nv && parted < 0; t++)
			worst_all = fmax(worst_all, fabs(l0[t] - l1[t]));
		if (parted < 0 && next[0] != next[1]) {
			parted = i;
			printf("      parity: greedy tokens part at step %d: cpu %d (logprob %.5f), cuda %d (cpu's "
			       "logprob of it %.5f)\n", i, next[0], l0[next[0]], next[1], l0[next[1]]);
		}
	}
	if (!rc)
		printf("      parity: %s, %d steps; while they agree, top-5 logprobs max |diff| %.3g, all logprobs "
		       "%.3g\n", parted < 0 ? "greedy tokens identical" : "greedy tokens parted", n_steps + 1, worst,
		       worst_all);
	ctx_close(&c[0]);
	ctx_close(&c[1]);
	free(l0);
	free(l1);
	return rc ? 3 : parted >= 0;
}
