/* decode_bench.c — decoder throughput on this machine: a synthetic
 * llama-shaped model of ~245M parameters (random weights, built in memory,
 * no file) in F16 and Q8_0; prefill and decode tokens/s; the machine's read
 * bandwidth from a multi-threaded stream loop; and the decode bound it
 * implies (bandwidth / bytes read per token) with the fraction reached.
 * Decode is the best of three runs, bandwidth the best of five passes; then
 * B sequences decoded as one batch (generate --batch), default 8.
 *
 * usage: decode_bench [--threads N] [--types f16,q8_0,q4_k,...] [--prompt N] [--gen N] [--batch B]
 *                     [--dim D --layers L --hidden H --vocab V] (shape)
 *                     [--device cpu|cuda] [--model M.gguf [--reps R] [--block N] [--llama-bench PATH [--llama-args S]]] [--parity N]
 *        decode_bench --kernels [--types ...] [--rounds R]
 *
 * --types takes any weight type by its ggml name in lower case (f16, bf16,
 * q8_0, q4_0, q5_0, q4_1, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl,
 * iq4_xs). --kernels measures one thread's weight bytes per second through
 * a type's one-row kernel and its eight-row kernel on repacked rows (where
 * it has one), pass by pass alternated, each pass timed alone (medians of
 * 50 R passes in cache, a 256 x 1024 matrix, and R out of it, 8192 x 4096;
 * R default 7): the figures that decide whether a type is repacked.
 * --device cuda: the CUDA backend (decode_bench_cuda.c: prefill, batch-1
 * decode and its share of the memory roofline, batch 16 and 64), on each
 * synthetic type or on --model's file; --parity N also decodes N greedy
 * steps on both backends and compares them.
 * --model M.gguf on the CPU: that file's prefill of --prompt tokens (default
 * 256 with a model) and decode of --gen tokens after it, --reps times (default
 * 5) from an empty cache, in forward passes of up to --block tokens (default
 * 256, the engine's default --max-batch-tokens); prints the medians and the
 * best (the machine may be shared). --llama-bench PATH (llama.cpp's llama-bench): each rep becomes a
 * pair, ours then llama-bench -r 1 on the same file and threads (prefill -p N
 * -n 0; decode -p 0 -n G -d N, after the same context), and the prefill and
 * decode ratios are printed pair by pair and as min / median / max.
 * --llama-args "..." is appended to llama-bench's command line (a shell
 * string: e.g. "--repack 0" where its AMX buffers crash a VM). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "decode/be/dec_ref.h"
#include "decode/cpu/dec_cpu.h"
#include "decode/engine/dec_forward.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"
#include "bench/decode_bench.h"

struct shape {
	int dim, layers, heads, kv_heads, hidden, vocab;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 11) * 0x1.0p-53 * 2 - 1);
}

/* The matrices' buffers, freed by free_model (dec_model_pack may point a
 * dec_mat's data at its own copy). */
static void **mat_bufs;
static int n_mat_bufs;

/* A rows×cols matrix of type t with uniform(-a, a) entries, a = 1/sqrt(cols). */
static struct dec_mat make_mat(uint32_t t, int64_t rows, int64_t cols)
{
	struct dec_mat m = { .type = t, .rows = rows, .cols = cols, .row_bytes = dec_row_size(t, cols) };
	float *row = malloc((size_t)cols * sizeof *row);
	uint8_t *d = malloc(m.row_bytes * (size_t)rows);
	void **bufs = realloc(mat_bufs, (size_t)(n_mat_bufs + 1) * sizeof *bufs);
	float a = 1.0f / sqrtf((float)cols);

	if (!row || !d || !bufs) {
		fprintf(stderr, "decode_bench: out of memory\n");
		exit(3);
	}
	mat_bufs = bufs;
	mat_bufs[n_mat_bufs++] = d;
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < cols; j++)
			row[j] = frand() * a;
		dec_quantize_row(t, row, d + (size_t)r * m.row_bytes, cols);
	}
	free(row);
	m.data = d;
	return m;
}

static struct dec_model *make_model(const struct shape *s, uint32_t t)
{
	struct dec_model *m = calloc(1, sizeof *m);
	struct dec_config *c = &m->cfg;
	int hd = s->dim / s->heads;
	size_t nvec = (size_t)s->layers * 2 * s->dim + s->dim;
	struct cr_err err;

	c->arch = DEC_ARCH_LLAMA;
	strcpy(c->arch_name, "llama");
	c->n_vocab = s->vocab;
	c->dim = s->dim;
	c->n_layers = s->layers;
	c->n_heads = s->heads;
	c->n_kv_heads = s->kv_heads;
	c->head_dim = hd;
	c->rope_dim = hd;
	c->hidden_dim = s->hidden;
	c->ctx_len = 4096;
	c->rope_base = 10000;
	c->eps = 1e-5f;
	m->w.vecs = malloc(nvec * sizeof(float));
	for (size_t i = 0; i < nvec; i++)
		m->w.vecs[i] = 1.0f;
	m->w.layers = calloc((size_t)s->layers, sizeof *m->w.layers);
	m->w.tok_embd = make_mat(t, s->vocab, s->dim);
	for (int l = 0; l < s->layers; l++) {
		struct dec_layer *L = &m->w.layers[l];

		L->attn_norm = m->w.vecs + (size_t)l * 2 * s->dim;
		L->ffn_norm = L->attn_norm + s->dim;
		L->wq = make_mat(t, (int64_t)s->heads * hd, s->dim);
		L->wk = make_mat(t, (int64_t)s->kv_heads * hd, s->dim);
		L->wv = make_mat(t, (int64_t)s->kv_heads * hd, s->dim);
		L->wo = make_mat(t, s->dim, (int64_t)s->heads * hd);
		L->w_gate = make_mat(t, s->hidden, s->dim);
		L->w_up = make_mat(t, s->hidden, s->dim);
		L->w_down = make_mat(t, s->dim, s->hidden);
	}
	m->w.out_norm = m->w.vecs + (size_t)s->layers * 2 * s->dim;
	m->w.output = make_mat(t, s->vocab, s->dim);
	cr_err_init(&err);
	if (dec_model_pack(m, &err)) {
		fprintf(stderr, "decode_bench: %s\n", err.msg);
		exit(3);
	}
	return m;
}

static void free_model(struct dec_model *m)
{
	while (n_mat_bufs)
		free(mat_bufs[--n_mat_bufs]);
	free(mat_bufs);
	mat_bufs = NULL;
	m->gguf = NULL;
	dec_model_free(m);
}

/* ---- read bandwidth ----------------------------------------------------- */

struct stream_arg {
	const float *p;
	size_t n;
	double sum;
};

static void *stream_thread(void *va)
{
	struct stream_arg *a = va;
	/* the SIMD f32 dot of the chunk with itself: one pass over memory, and
	 * vectorised, so the loop is bound by memory rather than by adds */
	a->sum = dec_simd_get()->dot_f32(a->p, a->p, (int64_t)a->n);
	return NULL;
}

/* Best of 5 passes over a 1 GiB buffer split across n threads, in GB/s. */
static double read_bandwidth(int n)
{
	size_t total = (size_t)1 << 28; /* floats: 1 GiB */
	float *buf = malloc(total * sizeof *buf);
	pthread_t th[64];
	struct stream_arg a[64];
	double best = 0, sink = 0;

	if (!buf)
		return 0;
	for (size_t i = 0; i < total; i++)
		buf[i] = (float)(i & 1023);
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_s(), dt;

		for (int i = 0; i < n; i++) {
			a[i] = (struct stream_arg){ buf + total / n * i, total / n, 0 };
			pthread_create(&th[i], NULL, stream_thread, &a[i]);
		}
		for (int i = 0; i < n; i++) {
			pthread_join(th[i], NULL);
			sink += a[i].sum;
		}
		dt = now_s() - t0;
		if (total * 4 / dt / 1e9 > best)
			best = total * 4 / dt / 1e9;
	}
	free(buf);
	if (sink == 42)
		printf(" ");
	return best;
}

static int bench_type(const struct shape *sh, uint32_t t, int threads, int n_prompt, int n_gen,
		      double bw, int batch)
{
	struct dec_model *m;
	struct dec_state *s;
	struct cr_err err;
	int32_t *tok = malloc((size_t)(n_prompt + n_gen) * sizeof *tok);
	double t0, t_pre, t_dec, bytes, kv_bytes;
	size_t wb;

	cr_err_init(&err);
	t0 = now_s();
	m = make_model(sh, t);
	fprintf(stderr, "built %s model in %.1fs\n", dec_type_name(t), now_s() - t0);
	if (dec_state_new(m, n_prompt + n_gen, 64, threads, &s, &err)) {
		fprintf(stderr, "decode_bench: %s\n", err.msg);
		return 3;
	}
	for (int i = 0; i < n_prompt + n_gen; i++)
		tok[i] = (int32_t)((i * 2654435761u) % (uint32_t)sh->vocab);
	t0 = now_s();
	dec_forward(s, tok, n_prompt, NULL, &err);
	t_pre = now_s() - t0;
	/* decode: best of 3 runs from the same prefilled cache (the machine may be shared) */
	t_dec = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		s->pos = n_prompt;
		t0 = now_s();
		for (int i = 0; i < n_gen; i++)
			dec_forward(s, tok + n_prompt + i, 1, NULL, &err);
		t0 = now_s() - t0;
		t_dec = t0 < t_dec ? t0 : t_dec;
	}
	wb = dec_model_weight_bytes(m);
	/* KV read per decoded token: all layers, mean position, k and v, f16 */
	kv_bytes = (double)m->cfg.n_layers * (n_prompt + n_gen / 2.0) * m->cfg.n_kv_heads *
		   m->cfg.head_dim * 2 * 2;
	bytes = (double)wb + kv_bytes;
	printf("%-5s params %.0fM  weights %.0f MB  threads %d  kernels %s\n", dec_type_name(t),
	       dec_model_n_params(m) / 1e6, wb / 1e6, s->n_threads, dec_simd_get()->name);
	printf("      prefill %d tokens: %.1f tok/s   decode %d tokens: %.2f tok/s (%.1f ms/token)\n",
	       n_prompt, n_prompt / t_pre, n_gen, n_gen / t_dec, 1e3 * t_dec / n_gen);
	printf("      bandwidth bound %.2f tok/s (%.0f MB/token at %.1f GB/s): %.0f%% reached\n",
	       bw * 1e9 / bytes, bytes / 1e6, bw, 100.0 * (n_gen / t_dec) / (bw * 1e9 / bytes));
	dec_state_free(s);
	if (batch > 1) {
		/* batch sequences stepped together (generate --batch): one pass over
		 * the weights serves them all */
		int *seqs = malloc(sizeof(int) * (size_t)batch), *pos = malloc(sizeof(int) * (size_t)batch);
		int32_t *bt = malloc(sizeof(int32_t) * (size_t)batch);
		float *lg = malloc(sizeof(float) * (size_t)batch * sh->vocab);

		if (dec_state_new_seqs(m, n_prompt + n_gen, batch > 64 ? batch : 64, batch, threads, &s, &err)) {
			fprintf(stderr, "decode_bench: %s\n", err.msg);
			return 3;
		}
		dec_forward(s, tok, n_prompt, NULL, &err);
		for (int k = 1; k < batch; k++)
			dec_state_copy_seq(s, 0, k, n_prompt);
		t0 = now_s();
		for (int i = 0; i < n_gen; i++) {
			for (int k = 0; k < batch; k++) {
				seqs[k] = k;
				pos[k] = n_prompt + i;
				bt[k] = tok[(n_prompt + i + k) % (n_prompt + n_gen)];
			}
			dec_forward_batch(s, bt, seqs, pos, batch, lg, &err);
		}
		t0 = now_s() - t0;
		printf("      batched decode, %d sequences: %.1f tok/s in all (%.2fx one sequence)\n", batch,
		       batch * n_gen / t0, batch * n_gen / t0 / (n_gen / t_dec));
		dec_state_free(s);
		free(seqs);
		free(pos);
		free(bt);
		free(lg);
	}
	free_model(m);
	free(tok);
	return 0;
}

/* ---- kernels ------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Seconds for one pass over the rows×cols matrix: one row at a time
 * (x8 NULL) or eight repacked rows at a time; out[] receives the results. */
static double pass_s(const struct dec_mat *w, const void *x8, const void *act, float *out)
{
	double t0 = now_s();

	if (!x8) {
		dec_vec_dot_t dot = dec_vec_dot_fn(w->type);

		for (int64_t r = 0; r < w->rows; r++)
			out[r] = dot((const uint8_t *)w->data + (size_t)r * w->row_bytes, act, w->cols);
	} else {
		dec_gemv8_fn g8 = dec_vec_gemv8_fn(w->type);
		size_t gb = dec_x8_group_bytes(w->type, w->cols);

		for (int64_t r = 0; r < w->rows; r += 8)
			g8((const uint8_t *)x8 + (size_t)(r / 8) * gb, act, w->cols, out + r);
	}
	return now_s() - t0;
}

/* Passes one thread makes over the matrix, one row at a time and eight
 * repacked rows at a time alternated pass by pass, each pass timed alone:
 * the medians are robust to the preemptions of a shared machine, as long
 * as a pass is short beside a time slice. */
static void bench_kernel(uint32_t t, int64_t rows, int64_t cols, int rounds)
{
	struct dec_mat w = make_mat(t, rows, cols);
	size_t gb = dec_x8_group_bytes(t, cols), bytes = w.row_bytes * (size_t)rows;
	void *x8 = gb ? malloc(gb * (size_t)(rows / 8)) : NULL;
	float *x = malloc((size_t)cols * sizeof *x), *o1 = malloc((size_t)rows * sizeof *o1),
	      *o8 = malloc((size_t)rows * sizeof *o8);
	void *act = malloc(dec_row_size(DEC_T_Q8_K, cols) + dec_row_size(DEC_T_F32, cols));
	int n = bytes < (1u << 20) ? 50 * rounds : rounds, same = 1;
	double *g1 = malloc((size_t)n * sizeof *g1), *g8 = malloc((size_t)n * sizeof *g8);

	if (!x || !o1 || !o8 || !act || !g1 || !g8 || (gb && !x8)) {
		fprintf(stderr, "decode_bench: out of memory\n");
		exit(3);
	}
	for (int64_t j = 0; j < cols; j++)
		x[j] = frand();
	dec_quantize_row(dec_vec_type(t), x, act, cols);
	for (int64_t g = 0; gb && g < rows / 8; g++)
		dec_pack_x8(t, (const uint8_t *)w.data + (size_t)g * 8 * w.row_bytes, w.row_bytes, cols,
			    (uint8_t *)x8 + (size_t)g * gb);
	pass_s(&w, NULL, act, o1); /* warm */
	for (int k = 0; k < n; k++) {
		g1[k] = (double)bytes / pass_s(&w, NULL, act, o1) / 1e9;
		g8[k] = gb ? (double)bytes / pass_s(&w, x8, act, o8) / 1e9 : 0;
	}
	if (gb)
		same = !memcmp(o1, o8, (size_t)rows * sizeof *o1);
	printf("%-6s %5lld x %-5lld %7.1f MB  one row %6.2f GB/s", dec_type_name(t), (long long)rows,
	       (long long)cols, bytes / 1e6, median(g1, n));
	if (gb)
		printf("  eight rows %6.2f GB/s (%.2fx)%s", median(g8, n), median(g8, n) / median(g1, n),
		       same ? "" : "  RESULTS DIFFER");
	printf("\n");
	free(x8);
	free(x);
	free(o1);
	free(o8);
	free(act);
	free(g1);
	free(g8);
}

static const uint32_t bench_types[] = {
	DEC_T_F16, DEC_T_BF16, DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_1, DEC_T_Q5_1, DEC_T_Q2_K,
	DEC_T_Q3_K, DEC_T_Q4_K, DEC_T_Q5_K, DEC_T_Q6_K, DEC_T_IQ4_NL, DEC_T_IQ4_XS,
};

/* 1 when the comma-separated list names t (lower case) */
static int listed(const char *list, uint32_t t)
{
	char name[16];
	size_t n = strlen(dec_type_name(t));

	for (size_t i = 0; i <= n && i < sizeof name; i++)
		name[i] = (char)(dec_type_name(t)[i] >= 'A' && dec_type_name(t)[i] <= 'Z' ? dec_type_name(t)[i] + 32
											   : dec_type_name(t)[i]);
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

/* One run of llama.cpp's llama-bench on the same file: prefill of n_prompt
 * tokens (-p N -n 0) and decode of n_gen after an n_prompt context (-p 0
 * -n G -d N), one repetition each (it warms up first), JSON on a pipe.
 * Returns 0 with *pp and *tg in tokens/s. */
static int llama_once(const char *bench, const char *extra, const char *model, int threads, int n_prompt,
		      int n_gen, double *pp, double *tg)
{
	char np[16], ng[16], th[16], cmd[4096];
	const char *sh_args[2][2] = { { np, "0" }, { "0", ng } };

	/* quoted for sh: the paths as single-quoted words */
	if (strchr(bench, '\'') || strchr(model, '\'')) {
		fprintf(stderr, "decode_bench: --llama-bench and --model paths may not contain a quote\n");
		return 2;
	}
	snprintf(np, sizeof np, "%d", n_prompt);
	snprintf(ng, sizeof ng, "%d", n_gen);
	snprintf(th, sizeof th, "%d", threads);
	for (int k = 0; k < 2; k++) {
		json_error_t je;
		json_t *root;
		FILE *f;
		double ts = -1;

		snprintf(cmd, sizeof cmd, "'%s' -m '%s' -t %s -r 1 -o json -p %s -n %s -d %s %s 2>/dev/null", bench,
			 model, th, sh_args[k][0], sh_args[k][1], k ? np : "0", extra ? extra : "");
		f = popen(cmd, "r");
		if (!f) {
			fprintf(stderr, "decode_bench: cannot run %s\n", bench);
			return 3;
		}
		root = json_loadf(f, 0, &je);
		if (pclose(f) != 0 || !root || !json_is_array(root) || json_array_size(root) != 1) {
			fprintf(stderr, "decode_bench: `%s` gave no result (%s)\n", cmd,
				root ? "unexpected JSON" : je.text);
			json_decref(root);
			return 3;
		}
		ts = json_number_value(json_object_get(json_array_get(root, 0), "avg_ts"));
		json_decref(root);
		if (!(ts > 0)) {
			fprintf(stderr, "decode_bench: %s printed no avg_ts\n", bench);
			return 3;
		}
		*(k ? tg : pp) = ts;
	}
	return 0;
}

static void print_spread(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	printf("%s min %.2f median %.2f max %.2f", what, v[0], n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2,
	       v[n - 1]);
}

/* --model on the CPU: the file's prefill and decode, medians of reps; with
 * --llama-bench, each rep is a pair (ours, then llama-bench on the same file
 * and thread count) and the ratios are taken pair by pair */
static int bench_model_cpu(const char *path, int threads, int n_prompt, int n_gen, int reps, int block,
			   const char *llama_bench, const char *llama_args)
{
	struct dec_model *m;
	struct dec_state *s;
	struct cr_err err;
	int32_t *tok = malloc((size_t)(n_prompt + n_gen) * sizeof *tok);
	double tp[64], td[64], lp[64], ld[64], rp[64], rd[64];
	int rc = 0;

	cr_err_init(&err);
	if (!tok || dec_model_open(path, &m, &err)) {
		fprintf(stderr, "decode_bench: %s\n", tok ? err.msg : "out of memory");
		free(tok);
		return 2;
	}
	if (dec_state_new(m, n_prompt + n_gen, block, threads, &s, &err)) {
		fprintf(stderr, "decode_bench: %s\n", err.msg);
		dec_model_free(m);
		free(tok);
		return 3;
	}
	for (int i = 0; i < n_prompt + n_gen; i++)
		tok[i] = (int32_t)((i * 2654435761u) % (uint32_t)m->cfg.n_vocab);
	printf("%s  threads %d  kernels %s  prefill blocks of %d tokens\n", path, s->n_threads, dec_simd_get()->name,
	       block);
	if (llama_bench)
		printf("side by side with %s -t %d %s, %d pairs, ours first in each\n", llama_bench, s->n_threads,
		       llama_args ? llama_args : "", reps);
	for (int r = -1; r < reps; r++) { /* the first a warm-up */
		double t0, t1;

		s->pos = 0;
		t0 = now_s();
		dec_forward(s, tok, n_prompt, NULL, &err);
		t1 = now_s();
		for (int i = 0; i < n_gen; i++)
			dec_forward(s, tok + n_prompt + i, 1, NULL, &err);
		if (r < 0)
			continue;
		tp[r] = n_prompt / (t1 - t0);
		td[r] = n_gen / (now_s() - t1);
		if (!llama_bench)
			continue;
		rc = llama_once(llama_bench, llama_args, path, s->n_threads, n_prompt, n_gen, &lp[r], &ld[r]);
		if (rc)
			goto out;
		rp[r] = tp[r] / lp[r];
		rd[r] = td[r] / ld[r];
		printf("pair %d: prefill ours %.1f llama.cpp %.1f tok/s (%.2fx), decode ours %.2f llama.cpp %.2f tok/s (%.2fx)\n",
		       r + 1, tp[r], lp[r], rp[r], td[r], ld[r], rd[r]);
		fflush(stdout);
	}
	if (llama_bench) {
		print_spread("prefill ratio (ours / llama.cpp):", rp, reps);
		print_spread("\ndecode ratio (ours / llama.cpp): ", rd, reps);
		printf("\n");
	}
	qsort(tp, (size_t)reps, sizeof *tp, cmp_d);
	qsort(td, (size_t)reps, sizeof *td, cmp_d);
	printf("prefill %d tokens: %.1f tok/s (median of %d, best %.1f)  decode %d tokens: %.2f tok/s (best %.2f)\n",
	       n_prompt, tp[reps / 2], reps, tp[reps - 1], n_gen, td[reps / 2], td[reps - 1]);
out:
	dec_state_free(s);
	dec_model_free(m);
	free(tok);
	return rc;
}

/* --device cuda: --model's file, else each synthetic type */
static int bench_cuda_all(const struct shape *sh, const char *types, const char *model, int n_prompt, int n_gen,
			  int parity)
{
	int rc = 0;

	if (model) {
		struct dec_model *m;
		struct cr_err err;
		const char *base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;

		cr_err_init(&err);
		if (dec_model_open(model, &m, &err)) {
			fprintf(stderr, "decode_bench: %s\n", err.msg);
			return 2;
		}
		rc = bench_cuda(m, base, n_prompt, n_gen);
		if (!rc && parity)
			rc = bench_cuda_parity(m, parity);
		dec_model_free(m);
		return rc;
	}
	for (size_t i = 0; i < sizeof bench_types / sizeof bench_types[0]; i++) {
		struct dec_model *m;

		if (!listed(types, bench_types[i]))
			continue;
		m = make_model(sh, bench_types[i]);
		rc |= bench_cuda(m, dec_type_name(bench_types[i]), n_prompt, n_gen);
		if (!rc && parity)
			rc |= bench_cuda_parity(m, parity);
		free_model(m);
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct shape sh = { 1024, 16, 16, 4, 2816, 32000 };
	int threads = dec_cpu_count(), n_prompt = 128, n_gen = 32, batch = 8, rc = 0;
	const char *types = "f16,q8_0", *device = "cpu", *model = NULL, *llama_bench = NULL, *llama_args = NULL;
	int parity = 0;
	double bw;
	int kernels = 0, rounds = 7, reps = 5, prompt_set = 0, block = 256;

	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(a, "--kernels")) {
			kernels = 1;
			i--;
		} else if (!strcmp(a, "--rounds")) rounds = atoi(v);
		else if (!strcmp(a, "--threads")) threads = atoi(v);
		else if (!strcmp(a, "--types")) types = v;
		else if (!strcmp(a, "--prompt")) {
			n_prompt = atoi(v);
			prompt_set = 1;
		} else if (!strcmp(a, "--reps")) reps = atoi(v);
		else if (!strcmp(a, "--gen")) n_gen = atoi(v);
		else if (!strcmp(a, "--batch")) batch = atoi(v);
		else if (!strcmp(a, "--dim")) sh.dim = atoi(v);
		else if (!strcmp(a, "--layers")) sh.layers = atoi(v);
		else if (!strcmp(a, "--hidden")) sh.hidden = atoi(v);
		else if (!strcmp(a, "--vocab")) sh.vocab = atoi(v);
		else if (!strcmp(a, "--device")) device = v;
		else if (!strcmp(a, "--model")) model = v;
		else if (!strcmp(a, "--llama-bench")) llama_bench = v;
		else if (!strcmp(a, "--llama-args")) llama_args = v;
		else if (!strcmp(a, "--block")) block = atoi(v);
		else if (!strcmp(a, "--parity")) parity = atoi(v);
		else {
			fprintf(stderr, "decode_bench: unknown option %s\n", a);
			return 2;
		}
	}
	if (threads < 1 || n_prompt < 1 || n_gen < 1 || sh.dim % 256 || sh.hidden % 256) {
		fprintf(stderr, "decode_bench: bad arguments (dim and hidden must be multiples of 256)\n");
		return 2;
	}
	if (kernels) {
		if (rounds < 1 || rounds > 64) {
			fprintf(stderr, "decode_bench: --rounds 1..64\n");
			return 2;
		}
		printf("one thread, kernels %s, medians of passes timed alone (%d rounds)\n", dec_simd_get()->name, rounds);
		for (size_t k = 0; k < sizeof bench_types / sizeof bench_types[0]; k++)
			if (listed(types, bench_types[k])) {
				bench_kernel(bench_types[k], 256, 1024, rounds);
				bench_kernel(bench_types[k], 8192, 4096, rounds);
			}
		return 0;
	}
	if (!strcmp(device, "cuda"))
		return bench_cuda_all(&sh, types, model, n_prompt, n_gen, parity);
	if (llama_bench && (!model || strcmp(device, "cpu"))) {
		fprintf(stderr, "decode_bench: --llama-bench needs --model (on the CPU)\n");
		return 2;
	}
	if (strcmp(device, "cpu") || parity) {
		fprintf(stderr, "decode_bench: --device cpu|cuda (--parity with cuda only)\n");
		return 2;
	}
	if (model) {
		if (reps < 1 || reps > 64 || block < 1 || block > 4096) {
			fprintf(stderr, "decode_bench: --reps 1..64, --block 1..4096\n");
			return 2;
		}
		return bench_model_cpu(model, threads, prompt_set ? n_prompt : 256, n_gen, reps, block, llama_bench, llama_args);
	}
	bw = read_bandwidth(threads);
	printf("read bandwidth (%d threads, 1 GiB stream): %.1f GB/s\n", threads, bw);
	for (size_t k = 0; k < sizeof bench_types / sizeof bench_types[0]; k++)
		if (listed(types, bench_types[k]))
			rc |= bench_type(&sh, bench_types[k], threads, n_prompt, n_gen, bw, batch);
	return rc;
}
