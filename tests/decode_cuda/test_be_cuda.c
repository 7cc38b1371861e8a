/* test_be_cuda.c — the decoder's CUDA backend (decode/dec_be_cuda.c) against
 * the CPU backend, ggml-style: every op of the table on both backends on the
 * same inputs, for every weight type; then whole forwards (dec_graph.c) on
 * tiny generated models: greedy tokens and top-5 logprobs; the graph path
 * against the eager one; errors.
 *
 * Without a GPU (CI) CRUCIBLE_LIBCUDA names the test suite's emulated driver
 * (tests/cuda/fakecuda), which runs the same kernels compiled as C++ against
 * tests/cuda/emu/cuda_emu.hpp; on a GPU machine (scripts/gpu-check.sh) the
 * same test runs on the real driver. Exits 77 when neither is usable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/cuda_drv_impl.h"
#include "decode/dec_be.h"
#include "decode/dec_model.h"
#include "decode/dec_quant.h"
#include "decode/gguf.h"
#include "../decode/dec_testutil.h"

static const uint32_t types[] = {
	DEC_T_F32, DEC_T_F16, DEC_T_BF16, DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_1, DEC_T_Q5_1,
	DEC_T_Q4_K, DEC_T_Q6_K,
};
#define N_TYPES (sizeof types / sizeof types[0])

static const struct cr_cu *cu;   /* the driver the CUDA backend uses (uploads in tests) */
static int verbose;

/* ---- models and backends ------------------------------------------------ */

struct tm {
	uint8_t *img;
	struct dec_model *m;
};

static void tm_load(struct tm *t, const char *arch, uint32_t type, uint32_t vtype)
{
	struct tiny_spec s;
	struct dec_gguf *g;
	struct cr_err e;
	size_t n;

	tiny_spec_default(&s, arch, type);
	s.vtype = vtype;
	t->img = tiny_model(&s, &n);
	assert_non_null(t->img);
	cr_err_init(&e);
	if (dec_gguf_from_buffer(t->img, n, "tiny.gguf", &g, &e) || dec_model_load(g, &t->m, &e))
		fail_msg("%s", e.msg);
}

static void tm_free(struct tm *t)
{
	dec_model_free(t->m);
	free(t->img);
}

static struct dec_be_cfg test_cfg(void)
{
	struct dec_be_cfg c = { .max_tokens = 32, .max_out = 32, .max_seqs = 4, .max_ctx = 96,
				.block_size = 16, .n_blocks = 32, .n_threads = 2, .device = 0 };
	return c;
}

static struct dec_be *open_be(const struct dec_model *m, const struct dec_be_cfg *c, int gpu)
{
	struct dec_be *be = NULL;
	struct cr_err e;

	cr_err_init(&e);
	if ((gpu ? dec_be_cuda_open : dec_be_cpu_open)(m, c, &be, &e))
		fail_msg("%s backend: %s", gpu ? "cuda" : "cpu", e.msg);
	return be;
}

static int is_gpu(const struct dec_be *be)
{
	return !strcmp(be->ops->name, "cuda");
}

/* host → backend memory */
static void up(struct dec_be *be, float *dst, const float *src, size_t n)
{
	if (is_gpu(be))
		assert_int_equal(cu->MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, n * sizeof *src), CUDA_SUCCESS);
	else
		memcpy(dst, src, n * sizeof *src);
}

static void down(struct dec_be *be, float *dst, const float *src, size_t n)
{
	struct cr_err e;

	cr_err_init(&e);
	if (be->ops->download(be, dst, src, n, &e))
		fail_msg("%s download: %s", be->ops->name, e.msg);
}

static void set_step(struct dec_be *be, const struct dec_step *st)
{
	struct cr_err e;

	cr_err_init(&e);
	if (be->ops->set_step(be, st, &e))
		fail_msg("%s set_step: %s", be->ops->name, e.msg);
}

static float rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((double)(z >> 11) * 0x1.0p-53 * 2 - 1);
}

static void fill(float *x, size_t n, uint64_t seed, float scale)
{
	for (size_t i = 0; i < n; i++)
		x[i] = rnd(&seed) * scale;
}

/* max |a - b| / max |b| */
static double rel_err(const float *a, const float *b, size_t n)
{
	double d = 0, m = 0;

	for (size_t i = 0; i < n; i++) {
		d = fmax(d, fabs((double)a[i] - b[i]));
		m = fmax(m, fabs((double)b[i]));
	}
	return isnan(d) ? INFINITY : d / (m > 0 ? m : 1);
}

/* ---- every op, both backends, the same inputs ------------------------- */

/* A pair of backends over one model, with a buffer of each size on both. */
struct pair {
	const struct dec_model *m;
	struct dec_be *be[2];           /* cpu, cuda */
	float *x[2], *y[2], *q[2], *k[2], *v[2], *o[2], *h[2], *h2[2], *lg[2];
	float *hx, *hy, *hq, *hk, *hv, *ho, *hh, *hh2, *hlg;   /* host */
	const char *type;
	double worst[16];
};

#define SCR(p, f, n) do { for (int i_ = 0; i_ < 2; i_++) \
	assert_non_null(p->f[i_] = p->be[i_]->ops->scratch(p->be[i_], n)); } while (0)

static void pair_open(struct pair *p, const struct dec_model *m, const struct dec_be_cfg *cfg)
{
	const struct dec_config *c = &m->cfg;
	size_t mt = (size_t)cfg->max_tokens, qd = (size_t)c->n_heads * c->head_dim;
	size_t kvd = (size_t)c->n_kv_heads * c->head_dim, w = qd > (size_t)c->dim ? qd : (size_t)c->dim;

	memset(p, 0, sizeof *p);
	p->m = m;
	p->be[0] = open_be(m, cfg, 0);
	p->be[1] = open_be(m, cfg, 1);
	SCR(p, x, mt * w);
	SCR(p, y, mt * w);
	SCR(p, q, mt * qd);
	SCR(p, k, mt * kvd);
	SCR(p, v, mt * kvd);
	SCR(p, o, mt * qd);
	SCR(p, h, mt * c->hidden_dim);
	SCR(p, h2, mt * c->hidden_dim);
	SCR(p, lg, mt * c->n_vocab);
	p->hx = calloc(mt * w, 4);
	p->hy = calloc(mt * w, 4);
	p->hq = calloc(mt * qd, 4);
	p->hk = calloc(mt * kvd, 4);
	p->hv = calloc(mt * kvd, 4);
	p->ho = calloc(mt * qd, 4);
	p->hh = calloc(mt * c->hidden_dim, 4);
	p->hh2 = calloc(mt * c->hidden_dim, 4);
	p->hlg = calloc(mt * c->n_vocab, 4);
}

static void pair_close(struct pair *p)
{
	dec_be_free(p->be[0]);
	dec_be_free(p->be[1]);
	free(p->hx);
	free(p->hy);
	free(p->hq);
	free(p->hk);
	free(p->hv);
	free(p->ho);
	free(p->hh);
	free(p->hh2);
	free(p->hlg);
}

/* The CUDA result of an op against the CPU's: tol is relative to the CPU
 * output's largest value (0: bit for bit). */
static void check(struct pair *p, int slot, const char *op, float *const *buf, size_t n, double tol)
{
	float *a = malloc(n * 4), *b = malloc(n * 4);
	double r;

	down(p->be[0], a, buf[0], n);
	down(p->be[1], b, buf[1], n);
	r = rel_err(b, a, n);
	if (tol == 0 && memcmp(a, b, n * 4))
		r = r > 0 ? r : 1e-30;
	if (r > p->worst[slot])
		p->worst[slot] = r;
	if (verbose || r > tol)
		print_message("  %-5s %-22s max rel err %.3g (tol %.3g)\n", p->type, op, r, tol);
	assert_true(r <= tol);
	free(a);
	free(b);
}

/* buf on both backends := host */
static void both(struct pair *p, float *const *buf, const float *host, size_t n)
{
	up(p->be[0], buf[0], host, n);
	up(p->be[1], buf[1], host, n);
}

static void step_both(struct pair *p, const struct dec_step *st)
{
	set_step(p->be[0], st);
	set_step(p->be[1], st);
}

/* One sequence's token positions [p0, p0 + n) as a step. */
struct stepbuf {
	int32_t tok[32], pos[32], seq[32], out[32], btab[4 * 6];
	struct dec_step st;
};

static void op_matmuls(struct pair *p, int nb)
{
	const struct dec_config *c = &p->m->cfg;
	const struct dec_be_ops *o0 = p->be[0]->ops, *o1 = p->be[1]->ops;
	size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
	const enum dec_wkind qkv[] = { DEC_W_Q, DEC_W_K, DEC_W_V }, gu[] = { DEC_W_GATE, DEC_W_UP };
	const enum dec_wkind wo[] = { DEC_W_O }, wd[] = { DEC_W_DOWN }, wout[] = { DEC_W_OUTPUT };
	float *one = malloc(qd * 4), *all = malloc(qd * nb * 4);

	/* q, k, v = W · x: three products of one input */
	fill(p->hx, (size_t)nb * c->dim, 11 + nb, 1.0f);
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], 1, 3, qkv, (float *const[]){ p->q[0], p->k[0], p->v[0] }, p->x[0], nb, 0);
	o1->matmul(p->be[1], 1, 3, qkv, (float *const[]){ p->q[1], p->k[1], p->v[1] }, p->x[1], nb, 0);
	check(p, 2, "matmul q", p->q, (size_t)nb * qd, 1e-5);
	check(p, 2, "matmul k", p->k, (size_t)nb * kvd, 1e-5);
	check(p, 2, "matmul v", p->v, (size_t)nb * kvd, 1e-5);
	/* a token's row does not depend on the others in the launch: token nb-1 alone */
	down(p->be[1], all, p->q[1], (size_t)nb * qd);
	both(p, p->y, p->hx + (size_t)(nb - 1) * c->dim, c->dim);
	o1->matmul(p->be[1], 1, 1, qkv, (float *const[]){ p->o[1] }, p->y[1], 1, 0);
	down(p->be[1], one, p->o[1], qd);
	assert_memory_equal(one, all + (size_t)(nb - 1) * qd, qd * 4);
	/* x += Wo · y */
	fill(p->hy, (size_t)nb * qd, 21 + nb, 1.0f);
	both(p, p->y, p->hy, (size_t)nb * qd);
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], 0, 1, wo, (float *const[]){ p->x[0] }, p->y[0], nb, 1);
	o1->matmul(p->be[1], 0, 1, wo, (float *const[]){ p->x[1] }, p->y[1], nb, 1);
	check(p, 3, "matmul o (add)", p->x, (size_t)nb * c->dim, 1e-5);
	/* gate, up; down (add) */
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], 1, 2, gu, (float *const[]){ p->h[0], p->h2[0] }, p->x[0], nb, 0);
	o1->matmul(p->be[1], 1, 2, gu, (float *const[]){ p->h[1], p->h2[1] }, p->x[1], nb, 0);
	check(p, 2, "matmul gate", p->h, (size_t)nb * c->hidden_dim, 1e-5);
	check(p, 2, "matmul up", p->h2, (size_t)nb * c->hidden_dim, 1e-5);
	fill(p->hh, (size_t)nb * c->hidden_dim, 31 + nb, 1.0f);
	both(p, p->h, p->hh, (size_t)nb * c->hidden_dim);
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], 1, 1, wd, (float *const[]){ p->x[0] }, p->h[0], nb, 1);
	o1->matmul(p->be[1], 1, 1, wd, (float *const[]){ p->x[1] }, p->h[1], nb, 1);
	check(p, 3, "matmul down (add)", p->x, (size_t)nb * c->dim, 1e-5);
	/* the output head */
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], -1, 1, wout, (float *const[]){ p->lg[0] }, p->x[0], nb, 0);
	o1->matmul(p->be[1], -1, 1, wout, (float *const[]){ p->lg[1] }, p->x[1], nb, 0);
	check(p, 2, "matmul output", p->lg, (size_t)nb * c->n_vocab, 1e-5);
	free(one);
	free(all);
}

/* Sequence s's block table: blocks taken from a shuffled pool, so
 * neighbouring positions live in distant blocks. */
static void btab_fill(int32_t *bt, int n_seq, int mb)
{
	static const int order[] = { 7, 3, 19, 11, 0, 25, 14, 5, 30, 9, 22, 1, 17, 28, 4, 12,
				     26, 8, 2, 21, 15, 29, 6, 18, 10, 24, 13, 27, 16, 23, 20, 31 };
	for (int s = 0; s < n_seq; s++)
		for (int j = 0; j < mb; j++)
			bt[s * mb + j] = s * mb + j < 32 ? order[s * mb + j] : -1;
}

/* Fills the caches of sequences 0..2 up to lens[s] positions with qkv_post
 * on random q, k, v (the same on both backends), comparing qkv_post's
 * outputs on the way. */
static void fill_caches(struct pair *p, struct stepbuf *sb, const int *lens, int mb)
{
	const struct dec_config *c = &p->m->cfg;
	size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
	const struct dec_be_ops *o0 = p->be[0]->ops, *o1 = p->be[1]->ops;
	uint64_t seed = 99;

	for (int s = 0; s < 3; s++)
		for (int p0 = 0; p0 < lens[s]; p0 += 24) {
			int nb = lens[s] - p0 < 24 ? lens[s] - p0 : 24;

			for (int i = 0; i < nb; i++) {
				sb->tok[i] = 1;
				sb->pos[i] = p0 + i;
				sb->seq[i] = s;
			}
			sb->st = (struct dec_step){ .nb = nb, .tok = sb->tok, .pos = sb->pos, .seq = sb->seq,
						    .n_seq = 3, .btab = sb->btab, .n_out = 0, .out = sb->out };
			step_both(p, &sb->st);
			fill(p->hq, nb * qd, seed++, 2.0f);
			fill(p->hk, nb * kvd, seed++, 2.0f);
			fill(p->hv, nb * kvd, seed++, 2.0f);
			both(p, p->q, p->hq, nb * qd);
			both(p, p->k, p->hk, nb * kvd);
			both(p, p->v, p->hv, nb * kvd);
			o0->qkv_post(p->be[0], 1, p->q[0], p->k[0], p->v[0]);
			o1->qkv_post(p->be[1], 1, p->q[1], p->k[1], p->v[1]);
			check(p, 4, "qkv_post q", p->q, nb * qd, 1e-6);
			check(p, 4, "qkv_post k", p->k, nb * kvd, 1e-6);
			check(p, 4, "qkv_post v", p->v, nb * kvd, 0);
		}
	(void)mb;
}

static void op_attention(struct pair *p, struct stepbuf *sb, int mb)
{
	const struct dec_config *c = &p->m->cfg;
	size_t qd = (size_t)c->n_heads * c->head_dim;
	const struct dec_be_ops *o0 = p->be[0]->ops, *o1 = p->be[1]->ops;
	const int lens[3] = { 72, 41, 6 };
	struct cr_err e;
	float *a = malloc(qd * 4 * 4), *b2 = malloc(qd * 4 * 4);

	btab_fill(sb->btab, 3, mb);
	fill_caches(p, sb, lens, mb);
	/* one decode token per sequence, at the end of its context (three
	 * splits of 32 positions for the first), and a prefill-style chunk:
	 * positions 66..71 of sequence 0 again (their cache rows rewritten
	 * with the same values) */
	for (int i = 0; i < 3; i++) {
		sb->tok[i] = 2;
		sb->pos[i] = lens[i] - 1;
		sb->seq[i] = i;
	}
	sb->st = (struct dec_step){ .nb = 3, .tok = sb->tok, .pos = sb->pos, .seq = sb->seq, .n_seq = 3,
				    .btab = sb->btab, .n_out = 0, .out = sb->out };
	step_both(p, &sb->st);
	fill(p->hq, 3 * qd, 7, 2.0f);
	both(p, p->q, p->hq, 3 * qd);
	o0->attention(p->be[0], 1, p->q[0], p->o[0]);
	o1->attention(p->be[1], 1, p->q[1], p->o[1]);
	check(p, 5, "attention (decode)", p->o, 3 * qd, 1e-5);
	/* copy-on-write: sequence 3 = sequence 0 with its second block copied
	 * to a free one; its attention must be sequence 0's, bit for bit */
	{
		int src = sb->btab[1], dst = 31;

		cr_err_init(&e);
		assert_int_equal(o0->kv_copy(p->be[0], src, dst, &e), CR_OK);
		assert_int_equal(o1->kv_copy(p->be[1], src, dst, &e), CR_OK);
		memcpy(sb->btab + 3 * mb, sb->btab, mb * sizeof *sb->btab);
		sb->btab[3 * mb + 1] = dst;
		sb->seq[0] = 0;
		sb->seq[1] = 3;
		sb->pos[0] = sb->pos[1] = lens[0] - 1;
		sb->st.nb = 2;
		sb->st.n_seq = 4;
		step_both(p, &sb->st);
		memcpy(p->hq + qd, p->hq, qd * 4);
		both(p, p->q, p->hq, 2 * qd);
		o0->attention(p->be[0], 1, p->q[0], p->o[0]);
		o1->attention(p->be[1], 1, p->q[1], p->o[1]);
		check(p, 6, "attention after kv_copy", p->o, 2 * qd, 1e-5);
		down(p->be[1], a, p->o[1], 2 * qd);
		assert_memory_equal(a, a + qd, qd * 4);
	}
	free(a);
	free(b2);
}

static void op_rest(struct pair *p, struct stepbuf *sb, int mb)
{
	const struct dec_config *c = &p->m->cfg;
	const struct dec_be_ops *o0 = p->be[0]->ops, *o1 = p->be[1]->ops;
	int nb = 20;

	/* a prefill chunk of 20 tokens of sequence 0 (ids spread over the vocabulary) */
	btab_fill(sb->btab, 3, mb);
	for (int i = 0; i < nb; i++) {
		sb->tok[i] = (i * 37 + 11) % c->n_vocab;
		sb->pos[i] = i;
		sb->seq[i] = 0;
	}
	sb->out[0] = 3;
	sb->out[1] = 19;
	sb->st = (struct dec_step){ .nb = nb, .tok = sb->tok, .pos = sb->pos, .seq = sb->seq, .n_seq = 1,
				    .btab = sb->btab, .n_out = 2, .out = sb->out };
	step_both(p, &sb->st);
	o0->embed(p->be[0], p->x[0]);
	o1->embed(p->be[1], p->x[1]);
	check(p, 0, "embed", p->x, (size_t)nb * c->dim, 0);
	fill(p->hx, (size_t)nb * c->dim, 5, 3.0f);
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->rmsnorm(p->be[0], p->y[0], p->x[0], 1, DEC_W_FFN_NORM, nb);
	o1->rmsnorm(p->be[1], p->y[1], p->x[1], 1, DEC_W_FFN_NORM, nb);
	check(p, 1, "rmsnorm", p->y, (size_t)nb * c->dim, 1e-6);
	o0->rmsnorm(p->be[0], p->y[0], p->x[0], -1, DEC_W_OUT_NORM, 2);
	o1->rmsnorm(p->be[1], p->y[1], p->x[1], -1, DEC_W_OUT_NORM, 2);
	check(p, 1, "rmsnorm out_norm", p->y, 2 * (size_t)c->dim, 1e-6);
	fill(p->hh, (size_t)nb * c->hidden_dim, 6, 4.0f);
	fill(p->hh2, (size_t)nb * c->hidden_dim, 8, 2.0f);
	both(p, p->h, p->hh, (size_t)nb * c->hidden_dim);
	both(p, p->h2, p->hh2, (size_t)nb * c->hidden_dim);
	o0->silu_mul(p->be[0], p->h[0], p->h2[0], nb);
	o1->silu_mul(p->be[1], p->h[1], p->h2[1], nb);
	check(p, 7, "silu_mul", p->h, (size_t)nb * c->hidden_dim, 1e-6);
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	both(p, p->y, p->hx + 7, (size_t)nb * c->dim);
	o0->add(p->be[0], p->x[0], p->y[0], (size_t)nb * c->dim);
	o1->add(p->be[1], p->x[1], p->y[1], (size_t)nb * c->dim);
	check(p, 8, "add", p->x, (size_t)nb * c->dim, 0);
	o0->gather(p->be[0], p->y[0], p->x[0], c->dim);
	o1->gather(p->be[1], p->y[1], p->x[1], c->dim);
	check(p, 8, "gather", p->y, 2 * (size_t)c->dim, 0);
}

static void test_ops(void **state)
{
	struct dec_be_cfg cfg = test_cfg();
	int mb = dec_be_max_blocks(&cfg);

	(void)state;
	for (size_t t = 0; t < N_TYPES; t++) {
		struct tm tm;
		struct pair p;
		struct stepbuf sb;

		/* qwen3: per-head norms, GQA 8/2; qwen2 (biases) for the quantized ones */
		tm_load(&tm, t % 2 ? "qwen2" : "qwen3", types[t], 0);
		pair_open(&p, tm.m, &cfg);
		p.type = dec_type_name(types[t]);
		memset(&sb, 0, sizeof sb);
		op_rest(&p, &sb, mb);
		op_matmuls(&p, 1);
		op_matmuls(&p, 5);
		op_matmuls(&p, 20);
		op_attention(&p, &sb, mb);
		print_message("  %-5s worst rel err: embed %.2g rmsnorm %.2g matmul %.2g matmul+add %.2g "
			      "qkv_post %.2g attention %.2g silu %.2g add/gather %.2g\n", p.type, p.worst[0],
			      p.worst[1], p.worst[2], p.worst[3], p.worst[4], p.worst[5], p.worst[7], p.worst[8]);
		pair_close(&p);
		tm_free(&tm);
	}
}

/* ---- setup -------------------------------------------------------------- */

static int setup(void **state)
{
	char why[256];

	(void)state;
	verbose = getenv("DEC_CUDA_TEST_VERBOSE") != NULL;
	if (!(cu = cr_cu_load(why, sizeof why)))
		return -1;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops),
	};
	char why[256];

	if (!cr_cuda_available(why, sizeof why)) {
		printf("skip: no CUDA device (%s)\n", why);
		return 77;
	}
	printf("# device: %s\n", why);
	return cmocka_run_group_tests_name("decode_cuda", tests, setup, NULL);
}
