/* test_be_cuda.c — the decoder's CUDA backend (decode/cuda/dec_be_cuda.c) against
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
#include "decode/be/dec_ref.h"
#include "decode/cpu/dec_cpu.h"
#include "decode/cuda/dec_be_cuda.h"
#include "decode/engine/dec_forward.h"
#include "decode/engine/dec_engine.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"
#include "decode/cuda/dec_cu_host.h"
#include "decode/model/gguf.h"
#include "../decode/dec_testutil.h"

static const uint32_t types[] = {
	DEC_T_F32, DEC_T_F16, DEC_T_BF16, DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_1, DEC_T_Q5_1,
	DEC_T_Q4_K, DEC_T_Q6_K, DEC_T_Q2_K, DEC_T_Q3_K, DEC_T_Q5_K, DEC_T_IQ4_NL, DEC_T_IQ4_XS,
};
#define N_TYPES (sizeof types / sizeof types[0])

static const struct cr_cu *cu;   /* the driver the CUDA backend uses (uploads in tests) */
static int verbose;
/* The CPU backend runs the AVX2 table, whose arithmetic the kernels repeat:
 * the matrix products and SiLU are then equal bit for bit (on a GPU too:
 * integer sums, IEEE products, explicit FMAs in the same order), and so is
 * attention over one split on the emulated driver (whose expf is the
 * CPU's; a GPU's expf, used for a context's last n % 8 positions, is not). */
static int avx2, emulated;
#define EXACT(tol) (avx2 ? 0.0 : (tol))

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
	if (is_gpu(be)) {
		/* the backend's ops may run on a stream of their own: wait */
		assert_int_equal(cu->CtxSynchronize(), CUDA_SUCCESS);
		assert_int_equal(cu->MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, n * sizeof *src), CUDA_SUCCESS);
		assert_int_equal(cu->CtxSynchronize(), CUDA_SUCCESS);
	}
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

/* max |a - b| / max |b|; infinite where either holds a NaN (fmax would
 * drop it) */
static double rel_err(const float *a, const float *b, size_t n)
{
	double d = 0, m = 0;

	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);

		if (isnan(e))
			return INFINITY;
		d = fmax(d, e);
		m = fmax(m, fabs((double)b[i]));
	}
	return d / (m > 0 ? m : 1);
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
	check(p, 2, "matmul q", p->q, (size_t)nb * qd, EXACT(1e-5));
	check(p, 2, "matmul k", p->k, (size_t)nb * kvd, EXACT(1e-5));
	check(p, 2, "matmul v", p->v, (size_t)nb * kvd, EXACT(1e-5));
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
	check(p, 3, "matmul o (add)", p->x, (size_t)nb * c->dim, EXACT(1e-5));
	/* gate, up; down (add) */
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], 1, 2, gu, (float *const[]){ p->h[0], p->h2[0] }, p->x[0], nb, 0);
	o1->matmul(p->be[1], 1, 2, gu, (float *const[]){ p->h[1], p->h2[1] }, p->x[1], nb, 0);
	check(p, 2, "matmul gate", p->h, (size_t)nb * c->hidden_dim, EXACT(1e-5));
	check(p, 2, "matmul up", p->h2, (size_t)nb * c->hidden_dim, EXACT(1e-5));
	fill(p->hh, (size_t)nb * c->hidden_dim, 31 + nb, 1.0f);
	both(p, p->h, p->hh, (size_t)nb * c->hidden_dim);
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], 1, 1, wd, (float *const[]){ p->x[0] }, p->h[0], nb, 1);
	o1->matmul(p->be[1], 1, 1, wd, (float *const[]){ p->x[1] }, p->h[1], nb, 1);
	check(p, 3, "matmul down (add)", p->x, (size_t)nb * c->dim, EXACT(1e-5));
	/* the output head */
	both(p, p->x, p->hx, (size_t)nb * c->dim);
	o0->matmul(p->be[0], -1, 1, wout, (float *const[]){ p->lg[0] }, p->x[0], nb, 0);
	o1->matmul(p->be[1], -1, 1, wout, (float *const[]){ p->lg[1] }, p->x[1], nb, 0);
	check(p, 2, "matmul output", p->lg, (size_t)nb * c->n_vocab, EXACT(1e-5));
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
	/* sequence 2's 6 positions are one split: the CPU's arithmetic */
	check(p, 5, "attention (one split)", (float *const[]){ p->o[0] + 2 * qd, p->o[1] + 2 * qd }, qd,
	      avx2 && emulated ? 0.0 : 1e-5);
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
	check(p, 7, "silu_mul", p->h, (size_t)nb * c->hidden_dim, EXACT(1e-6));
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
	/* splits of 32 positions: the 72- and 41-position contexts below are
	 * merged from 3 and 2 splits */
	setenv("CRUCIBLE_CUDA_ATT_SPLIT", "32", 1);
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
	unsetenv("CRUCIBLE_CUDA_ATT_SPLIT");
}

/* The tensor-core products (MMQ, from DEC_CU_MMQ_MIN tokens) of every
 * block type at 16 tokens (the threshold), 64 (one tile) and 70
 * (two tiles, the second of 6 tokens), over rows that are not a multiple
 * of the 64-row tile (the output head's 267): bit for bit the CPU's, where
 * its table is AVX2's; and a token's row alone (mmv) equals its row in the
 * 70-token launch (MMQ). */
static void test_mmq(void **state)
{
	static const uint32_t qt[] = { DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_1, DEC_T_Q5_1, DEC_T_IQ4_NL,
				       DEC_T_Q2_K, DEC_T_Q3_K, DEC_T_Q4_K, DEC_T_Q5_K, DEC_T_Q6_K, DEC_T_IQ4_XS };
	struct dec_be_cfg cfg = test_cfg();

	(void)state;
	cfg.max_tokens = cfg.max_out = 80;
	for (size_t t = 0; t < sizeof qt / sizeof qt[0]; t++) {
		struct tm tm;
		struct pair p;

		tm_load(&tm, "llama", qt[t], 0);
		pair_open(&p, tm.m, &cfg);
		p.type = dec_type_name(qt[t]);
		op_matmuls(&p, 16);
		op_matmuls(&p, 64);
		op_matmuls(&p, 70);
		print_message("  %-5s MMQ at 16, 64, 70 tokens: worst rel err %.2g (matmul) %.2g (with add)\n", p.type,
			      p.worst[2], p.worst[3]);
		pair_close(&p);
		tm_free(&tm);
	}
}

/* A kv head's group of query heads shared by one attention block, or split
 * over several: qwen3's 8 heads on 2 kv heads (groups of 4) with splits of
 * 1024 positions (a block per group), 2048 (two blocks of 2 heads) and
 * 4096 (a block per head); qwen2's 4 on 2 (groups of 2) at 4096. The
 * contexts fit one split: attention is the CPU's bit for bit each time. */
static void test_attention_groups(void **state)
{
	static const struct { const char *arch, *split; } v[] = {
		{ "qwen3", "1024" }, { "qwen3", "2048" }, { "qwen3", "4096" }, { "qwen2", "4096" },
	};
	struct dec_be_cfg cfg = test_cfg();
	int mb = dec_be_max_blocks(&cfg);

	(void)state;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct tm tm;
		struct pair p;
		struct stepbuf sb;

		setenv("CRUCIBLE_CUDA_ATT_SPLIT", v[i].split, 1);
		tm_load(&tm, v[i].arch, DEC_T_F32, 0);
		pair_open(&p, tm.m, &cfg);
		p.type = "F32";
		memset(&sb, 0, sizeof sb);
		op_attention(&p, &sb, mb);
		print_message("  %s (%d heads on %d kv heads), splits of %s: attention max rel err %.2g\n", v[i].arch,
			      tm.m->cfg.n_heads, tm.m->cfg.n_kv_heads, v[i].split, p.worst[5]);
		assert_true(p.worst[5] == 0);
		pair_close(&p);
		tm_free(&tm);
	}
	unsetenv("CRUCIBLE_CUDA_ATT_SPLIT");
}

/* Prefill attention tiles (k_att_tile): one step of 24 tokens of sequence
 * 0 (positions 48..71), 6 of sequence 1 (35..40) and 1 of sequence 2 (5),
 * with tiles of up to 16 tokens (the default: sequence 0 in a tile of 16
 * and one of 8), of 5 (uneven), and none (k_attention, a block a token).
 * Splits of 32 positions (the first tile spans splits 1 and 2; its tokens
 * below position 64 have no part in split 2) and of 4096 (one split). The
 * tiled results equal the untiled ones bit for bit, and the CPU's: within
 * 1e-5 when splits are merged, bit for bit in one split. */
static void test_attention_tiles(void **state)
{
	static const char *const split[] = { "32", "4096" }, *const tile[] = { "0", "5", "" };
	static const char *const tname[] = { "none", "5 tokens", "16 tokens (the default)" };
	const int lens[3] = { 72, 41, 6 };
	struct dec_be_cfg cfg = test_cfg();
	int mb = dec_be_max_blocks(&cfg);

	(void)state;
	for (size_t sp = 0; sp < 2; sp++) {
		float *ref = NULL;

		setenv("CRUCIBLE_CUDA_ATT_SPLIT", split[sp], 1);
		for (size_t ti = 0; ti < 3; ti++) {
			struct tm tm;
			struct pair p;
			struct stepbuf sb;
			const struct dec_config *c;
			size_t qd;
			int nb = 0;
			float *got;

			setenv("CRUCIBLE_CUDA_ATT_TILE", tile[ti], 1);
			tm_load(&tm, "qwen3", DEC_T_F32, 0);
			pair_open(&p, tm.m, &cfg);
			p.type = "F32";
			c = &tm.m->cfg;
			qd = (size_t)c->n_heads * c->head_dim;
			memset(&sb, 0, sizeof sb);
			btab_fill(sb.btab, 3, mb);
			fill_caches(&p, &sb, lens, mb);
			for (int s = 0; s < 3; s++)
				for (int P = (int[]){ 48, 35, 5 }[s]; P < lens[s]; P++) {
					sb.tok[nb] = 2;
					sb.pos[nb] = P;
					sb.seq[nb++] = s;
				}
			sb.st = (struct dec_step){ .nb = nb, .tok = sb.tok, .pos = sb.pos, .seq = sb.seq, .n_seq = 3,
						   .btab = sb.btab, .n_out = 0, .out = sb.out };
			step_both(&p, &sb.st);
			/* tokens per tile as asked: 16 by default, 5, or no tiles */
			assert_int_equal(((struct be_cuda *)p.be[1])->cfg->att_tq, ti == 0 ? 0 : ti == 1 ? 5 : 16);
			assert_int_equal(((struct be_cuda *)p.be[1])->n_tiles, ti == 0 ? 0 : ti == 1 ? 8 : 4);
			fill(p.hq, nb * qd, 17, 2.0f);
			both(&p, p.q, p.hq, nb * qd);
			p.be[0]->ops->attention(p.be[0], 1, p.q[0], p.o[0]);
			p.be[1]->ops->attention(p.be[1], 1, p.q[1], p.o[1]);
			check(&p, 5, "attention (prefill tiles)", p.o, nb * qd, sp == 1 && avx2 && emulated ? 0.0 : 1e-5);
			got = malloc(nb * qd * 4);
			down(p.be[1], got, p.o[1], nb * qd);
			if (ref) {
				assert_memory_equal(got, ref, nb * qd * 4);
				free(got);
			} else
				ref = got;
			print_message("  splits of %s, tiles of %s: attention of %d tokens, max rel err %.2g against the "
				      "CPU%s\n", split[sp], tname[ti], nb, p.worst[5],
				      ti ? ", bits equal to no tiles" : "");
			pair_close(&p);
			tm_free(&tm);
		}
		free(ref);
	}
	unsetenv("CRUCIBLE_CUDA_ATT_SPLIT");
	unsetenv("CRUCIBLE_CUDA_ATT_TILE");
}

/* ---- whole forwards (dec_graph.c) -------------------------------------- */

/* One run: n_seq sequences, prompts of plen[s] tokens prefilled together in
 * one step, then n_gen greedy steps of one token per sequence. logits
 * [step][seq][n_vocab] of every step's output rows, tokens [step][seq]. */
struct run {
	int n_seq, n_gen;
	float *logits;
	int32_t *tok;
};

static int argmax(const float *x, int n)
{
	int b = 0;

	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

static void run_greedy(struct dec_be *be, int n_seq, const int *plen, int n_gen, struct run *r)
{
	const struct dec_config *c = &be->m->cfg;
	int mb = dec_be_max_blocks(&be->cfg), nv = c->n_vocab;
	struct dec_graph g;
	struct stepbuf sb;
	struct cr_err e;
	int pos[4] = { 0 };

	memset(&sb, 0, sizeof sb);
	btab_fill(sb.btab, n_seq, mb);
	cr_err_init(&e);
	if (dec_graph_init(&g, be, &e))
		fail_msg("%s", e.msg);
	r->n_seq = n_seq;
	r->n_gen = n_gen;
	r->logits = malloc((size_t)(n_gen + 1) * n_seq * nv * 4);
	r->tok = malloc((size_t)(n_gen + 1) * n_seq * 4);
	for (int step = 0; step <= n_gen; step++) {
		int nb = 0;

		for (int s = 0; s < n_seq; s++) {
			int n = step ? 1 : plen[s];

			for (int i = 0; i < n; i++, nb++) {
				/* prompts: ids spread over the vocabulary; then the last greedy token */
				sb.tok[nb] = step ? r->tok[(size_t)(step - 1) * n_seq + s] : (s * 53 + i * 37 + 11) % nv;
				sb.pos[nb] = pos[s]++;
				sb.seq[nb] = s;
			}
			sb.out[s] = nb - 1;
		}
		sb.st = (struct dec_step){ .nb = nb, .tok = sb.tok, .pos = sb.pos, .seq = sb.seq, .n_seq = n_seq,
					   .btab = sb.btab, .n_out = n_seq, .out = sb.out };
		if (dec_graph_step(&g, &sb.st, r->logits + (size_t)step * n_seq * nv, &e))
			fail_msg("%s step %d: %s", be->ops->name, step, e.msg);
		for (int s = 0; s < n_seq; s++)
			r->tok[(size_t)step * n_seq + s] = argmax(r->logits + ((size_t)step * n_seq + s) * nv, nv);
	}
}

static void run_free(struct run *r)
{
	free(r->logits);
	free(r->tok);
}

static void log_softmax(const float *x, int n, double *out)
{
	double mx = x[argmax(x, n)], s = 0;

	for (int i = 0; i < n; i++)
		s += exp((double)x[i] - mx);
	for (int i = 0; i < n; i++)
		out[i] = (double)x[i] - mx - log(s);
}

/* Greedy tokens identical; for the CPU's top 5 ids of every output row,
 * |logprob(cuda) - logprob(cpu)| <= tol. Returns the largest difference. */
static double compare_runs(const struct run *a, const struct run *b, int nv, double tol, const char *what)
{
	double *la = malloc(nv * sizeof *la), *lb = malloc(nv * sizeof *lb), worst = 0;

	for (int step = 0; step <= a->n_gen; step++)
		for (int s = 0; s < a->n_seq; s++) {
			size_t row = (size_t)step * a->n_seq + s;
			int top[5] = { -1, -1, -1, -1, -1 };

			log_softmax(a->logits + row * nv, nv, la);
			log_softmax(b->logits + row * nv, nv, lb);
			for (int k = 0; k < 5; k++)
				for (int i = 0; i < nv; i++) {
					int taken = 0;

					for (int j = 0; j < k; j++)
						taken |= top[j] == i;
					if (!taken && (top[k] < 0 || la[i] > la[top[k]]))
						top[k] = i;
				}
			for (int k = 0; k < 5; k++)
				worst = fmax(worst, fabs(la[top[k]] - lb[top[k]]));
			if (a->tok[row] != b->tok[row])
				fail_msg("%s: greedy tokens differ at step %d of sequence %d: cpu %d, cuda %d "
					 "(logprobs %.6f / %.6f vs %.6f / %.6f)", what, step, s, a->tok[row], b->tok[row],
					 la[a->tok[row]], la[b->tok[row]], lb[a->tok[row]], lb[b->tok[row]]);
		}
	free(la);
	free(lb);
	if (worst > tol)
		fail_msg("%s: top-5 logprobs differ by %.3g (tolerance %.3g)", what, worst, tol);
	return worst;
}

#define N_GEN 12

/* Greedy decoding of every weight type and every architecture on both
 * backends: type t on architecture t % 3, so each architecture runs five
 * types (a float, a legacy and K-quants among them). The two do not meet
 * in the code: a weight type is its matrix kernels (compared op by op for
 * every type in test_ops and test_mmq), an architecture its qkv_post and
 * attention (type-blind); the whole 15 x 3 product took three times as
 * long on the emulated driver (103 s of the suite's 181) for no path more. */
static void test_forward(void **state)
{
	static const char *const archs[] = { "llama", "qwen2", "qwen3" };
	struct dec_be_cfg cfg = test_cfg();
	const int plen[1] = { 10 };

	(void)state;
	for (size_t t = 0; t < N_TYPES; t++) {
		double tol = types[t] == DEC_T_F32 ? 1e-3 : 2e-2, worst;
		const char *arch = archs[t % 3];
		struct tm tm;
		struct run rc, rg;
		struct dec_be *cpu, *gpu;
		char what[64];

		tm_load(&tm, arch, types[t], 0);
		cpu = open_be(tm.m, &cfg, 0);
		gpu = open_be(tm.m, &cfg, 1);
		run_greedy(cpu, 1, plen, N_GEN, &rc);
		run_greedy(gpu, 1, plen, N_GEN, &rg);
		snprintf(what, sizeof what, "%s %s", arch, dec_type_name(types[t]));
		worst = compare_runs(&rc, &rg, tm.m->cfg.n_vocab, tol, what);
		if (verbose) {
			print_message("  %-12s tokens", what);
			for (int i = 0; i <= N_GEN; i++)
				print_message(" %d", rc.tok[i]);
			print_message("\n");
		}
		print_message("  %-5s %-5s: greedy tokens identical (%d steps), top-5 logprobs max |diff| %.3g "
			      "(tol %.3g)\n", dec_type_name(types[t]), arch, N_GEN + 1, worst, tol);
		run_free(&rc);
		run_free(&rg);
		dec_be_free(cpu);
		dec_be_free(gpu);
		tm_free(&tm);
	}
}

/* Several sequences in one step (prompts of different lengths prefilled
 * together, then decoded together) and a mixed-type file (Q4_K with Q6_K
 * attn_v and ffn_up, as the _K_M files are). */
static void test_forward_batch(void **state)
{
	struct dec_be_cfg cfg = test_cfg();
	const int plen[3] = { 9, 3, 14 };
	static const uint32_t t2[][2] = { { DEC_T_Q8_0, 0 }, { DEC_T_Q4_K, DEC_T_Q6_K }, { DEC_T_F16, 0 } };

	(void)state;
	for (int t = 0; t < 3; t++) {
		struct tm tm;
		struct run rc, rg;
		struct dec_be *cpu, *gpu;
		char what[64];
		double w;

		tm_load(&tm, "llama", t2[t][0], t2[t][1]);
		cpu = open_be(tm.m, &cfg, 0);
		gpu = open_be(tm.m, &cfg, 1);
		run_greedy(cpu, 3, plen, 8, &rc);
		run_greedy(gpu, 3, plen, 8, &rg);
		snprintf(what, sizeof what, "llama %s%s%s, 3 sequences", dec_type_name(t2[t][0]), t2[t][1] ? "+" : "",
			 t2[t][1] ? dec_type_name(t2[t][1]) : "");
		w = compare_runs(&rc, &rg, tm.m->cfg.n_vocab, 2e-2, what);
		print_message("  %s: greedy tokens identical, top-5 logprobs max |diff| %.3g\n", what, w);
		run_free(&rc);
		run_free(&rg);
		dec_be_free(cpu);
		dec_be_free(gpu);
		tm_free(&tm);
	}
}

/* ---- graphs --------------------------------------------------------------- */

static const struct dec_be_ops *real_ops;
static int replays, begins;

static int counting_graph_begin(struct dec_be *be)
{
	int r = real_ops->graph_begin(be);

	begins++;
	replays += r;
	return r;
}

/* The same steps with and without graphs give the same logits, bit for bit,
 * and the graph path did replay. */
static void test_graphs(void **state)
{
	struct dec_be_cfg cfg = test_cfg();
	const int plen[2] = { 6, 11 };
	struct dec_be_ops wrapped;
	struct tm tm;
	struct run ra, rb;
	struct dec_be *eager, *graph;

	(void)state;
	tm_load(&tm, "qwen2", DEC_T_Q4_0, 0);
	setenv("CRUCIBLE_CUDA_GRAPHS", "0", 1);
	eager = open_be(tm.m, &cfg, 1);
	unsetenv("CRUCIBLE_CUDA_GRAPHS");
	graph = open_be(tm.m, &cfg, 1);
	real_ops = graph->ops;
	wrapped = *graph->ops;
	wrapped.graph_begin = counting_graph_begin;
	graph->ops = &wrapped;
	run_greedy(eager, 2, plen, 8, &ra);
	run_greedy(graph, 2, plen, 8, &rb);
	/* step 0 (prefill) and 1 run eagerly, step 2 is captured, 3..8 replayed */
	assert_int_equal(begins, 9);
	assert_int_equal(replays, 6);
	assert_memory_equal(ra.logits, rb.logits, (size_t)9 * 2 * tm.m->cfg.n_vocab * 4);
	assert_memory_equal(ra.tok, rb.tok, (size_t)9 * 2 * 4);
	print_message("  graphs: %d of %d steps replayed, logits identical to the eager path\n", replays, begins);
	graph->ops = real_ops;
	run_free(&ra);
	run_free(&rb);
	dec_be_free(eager);
	dec_be_free(graph);
	tm_free(&tm);
}

/* ---- errors --------------------------------------------------------------- */

/* dec_be_cuda_open in a fresh process (this program with --child-open: the
 * driver table is loaded once per process) with CRUCIBLE_LIBCUDA=lib: its
 * status (the exit code) and message (its output). */
static enum cr_status open_in_child(const char *lib, char *msg, size_t cap)
{
	int fd[2], status;
	pid_t pid;
	ssize_t n, got = 0;

	assert_int_equal(pipe(fd), 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		close(fd[0]);
		dup2(fd[1], 1);
		setenv("CRUCIBLE_LIBCUDA", lib, 1);
		execl("/proc/self/exe", "test_be_cuda", "--child-open", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (got < (ssize_t)cap - 1 && (n = read(fd[0], msg + got, cap - 1 - (size_t)got)) > 0)
		got += n;
	msg[got] = '\0';
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return (enum cr_status)WEXITSTATUS(status);
}

static int child_open(void)
{
	struct dec_be_cfg cfg = test_cfg();
	struct dec_be *be;
	struct cr_err e;
	struct tm tm;
	enum cr_status st;

	tm_load(&tm, "llama", DEC_T_Q8_0, 0);
	cr_err_init(&e);
	st = dec_be_cuda_open(tm.m, &cfg, &be, &e);
	fputs(e.msg, stdout);
	dec_be_free(be);
	tm_free(&tm);
	return (int)st;
}

static void test_errors(void **state)
{
	struct dec_be_cfg cfg = test_cfg();
	struct tm tm;
	struct dec_be *be;
	struct cr_err e;
	struct stepbuf sb;
	char msg[1024];
	float *x;
	int mb = dec_be_max_blocks(&cfg);

	(void)state;
	tm_load(&tm, "llama", DEC_T_Q8_0, 0);
	/* no driver, and a library that is no driver: CR_EENV, one line each */
	assert_int_equal(open_in_child("/nonexistent/libcuda.so.1", msg, sizeof msg), CR_EENV);
	print_message("  no driver: %s\n", msg);
	assert_non_null(strstr(msg, "/nonexistent/libcuda.so.1"));
	assert_null(strchr(msg, '\n'));
	assert_int_equal(open_in_child("libm.so.6", msg, sizeof msg), CR_EENV);
	print_message("  not a driver: %s\n", msg);
	assert_non_null(strstr(msg, "cuGetProcAddress_v2"));
	assert_null(strchr(msg, '\n'));

	/* the model does not fit (the fake's memory is what FAKECUDA_MEM says) */
	{
		char why[256];

		cr_cuda_available(why, sizeof why);
		if (strstr(why, "fake")) {
			setenv("FAKECUDA_MEM", "1000000", 1);
			cr_err_init(&e);
			assert_int_equal(dec_be_cuda_open(tm.m, &cfg, &be, &e), CR_EENV);
			unsetenv("FAKECUDA_MEM");
			print_message("  out of memory: %s\n", e.msg);
			assert_non_null(strstr(e.msg, "MiB of device memory"));
			assert_non_null(strstr(e.msg, "MiB of 1.0 are free"));
			assert_null(be);
		}
	}

	/* every weight type the CPU reads has kernels, and test_ops compares
	 * each (a type added to the CPU without kernels fails here; the
	 * backend would refuse its file at open, naming the tensor) */
	for (uint32_t t = 0; t < 64; t++) {
		size_t i = 0;

		while (i < N_TYPES && types[i] != t)
			i++;
		if (dec_type_supported(t) && i == N_TYPES)
			fail_msg("the CPU reads %s; test_ops does not compare it", dec_type_name(t));
	}

	/* bad steps */
	be = open_be(tm.m, &cfg, 1);
	memset(&sb, 0, sizeof sb);
	btab_fill(sb.btab, 1, mb);
	sb.tok[0] = tm.m->cfg.n_vocab;
	sb.st = (struct dec_step){ .nb = 1, .tok = sb.tok, .pos = sb.pos, .seq = sb.seq, .n_seq = 1,
				   .btab = sb.btab, .n_out = 1, .out = sb.out };
	cr_err_init(&e);
	assert_int_equal(be->ops->set_step(be, &sb.st, &e), CR_EINPUT);
	sb.tok[0] = 1;
	sb.pos[0] = 40;
	sb.btab[1] = -1;
	cr_err_init(&e);
	assert_int_equal(be->ops->set_step(be, &sb.st, &e), CR_EINTERNAL);
	assert_non_null(strstr(e.msg, "no block for positions 16..31"));
	btab_fill(sb.btab, 1, mb);
	set_step(be, &sb.st);

	/* a capture cannot download or copy blocks; the shape's second step is captured */
	{
		struct dec_be_ops const *o = be->ops;

		assert_int_equal(o->graph_begin(be), 0); /* first of its shape: eager */
		assert_int_equal(o->graph_end(be, &e), CR_OK);
		set_step(be, &sb.st);
		assert_int_equal(o->graph_begin(be), 0); /* second: captured */
		x = o->scratch(be, 16);
		cr_err_init(&e);
		assert_int_equal(o->download(be, (float *)(void *)msg, x, 4, &e), CR_EINTERNAL);
		cr_err_init(&e);
		assert_int_equal(o->kv_copy(be, 0, 1, &e), CR_EINTERNAL);
		assert_int_equal(o->graph_end(be, &e), CR_OK);
		set_step(be, &sb.st);
		assert_int_equal(o->graph_begin(be), 1); /* third: replayed */
		assert_int_equal(o->download(be, NULL, NULL, 0, &e), CR_OK);
	}

	/* a failing op sticks, names its kernel, and every later status call says it */
	x = be->ops->scratch(be, 16);
	be->ops->add(be, x, x, (size_t)1 << 40);
	cr_err_init(&e);
	assert_int_equal(be->ops->download(be, NULL, NULL, 0, &e), CR_EENV);
	print_message("  sticky: %s\n", e.msg);
	assert_non_null(strstr(e.msg, "k_add"));
	cr_err_init(&e);
	assert_int_equal(be->ops->set_step(be, &sb.st, &e), CR_EENV);
	assert_non_null(strstr(e.msg, "k_add"));
	dec_be_free(be);

	/* CRUCIBLE_CUDA_SYNC=1: a synchronisation after every launch, the same results */
	{
		const int plen[1] = { 5 };
		struct run ra, rb;
		struct dec_be *a, *b;

		setenv("CRUCIBLE_CUDA_SYNC", "1", 1);
		a = open_be(tm.m, &cfg, 1);
		unsetenv("CRUCIBLE_CUDA_SYNC");
		b = open_be(tm.m, &cfg, 1);
		run_greedy(a, 1, plen, 3, &ra);
		run_greedy(b, 1, plen, 3, &rb);
		assert_memory_equal(ra.logits, rb.logits, (size_t)4 * tm.m->cfg.n_vocab * 4);
		run_free(&ra);
		run_free(&rb);
		dec_be_free(a);
		dec_be_free(b);
	}
	tm_free(&tm);
}

/* ---- sampling on the device ------------------------------------------------ */

/* The sample op's settings: temperature, top-k, top-p, min-p, logprobs. */
static const struct { struct dec_sampling s; int lp; } smp_cfgs[] = {
	{ { 0, 0, 1, 0 }, 5 },            /* greedy */
	{ { 1, 0, 1, 0 }, 0 },            /* the whole vocabulary (id order above 4096) */
	{ { 0.7f, 40, 1, 0 }, 3 },
	{ { 1, 1, 1, 0 }, 0 },            /* one survivor: the uniform unused */
	{ { 0.9f, 0, 0.9f, 0 }, 0 },
	{ { 1.2f, 100, 0.5f, 0 }, 2 },
	{ { 1, 0, 1, 0.05f }, 0 },
	{ { 0.8f, 50, 0.95f, 0.02f }, 1 },
	{ { 1.5f, 5000, 1, 0 }, 0 },      /* top-k above 4096: id order */
	{ { 1, 0, 1e-9f, 0 }, 0 },        /* top-p: the best alone */
	{ { 1, 0, 0.999999f, 0 }, 0 },    /* a cut in the tail, where rounding decides */
	{ { 2, 0, 1, 0 }, 1000 },         /* many logprobs */
	{ { 1e-39f, 0, 0.9f, 0 }, 0 },    /* w overflows to ±inf: degenerate, the same on both */
	{ { 1, 0, 1, 1.5f }, 0 },         /* min-p above 1 keeps nothing: greedy on both */
};
#define N_SMP_CFG (sizeof smp_cfgs / sizeof smp_cfgs[0])
#define SMP_ROWS 4
#define SMP_US 5

/* Row r of width n: flat, peaked, ties (values on a 0.5 grid), a wide range
 * with -inf entries. */
static void smp_row(float *x, int n, int r, uint64_t seed)
{
	fill(x, (size_t)n, seed, r == 3 ? 12.0f : 3.0f);
	for (int i = 0; i < n; i++) {
		if (r == 1 && i % 97 == 5)
			x[i] += 9.0f;
		if (r == 2)
			x[i] = roundf(x[i] * 2) / 2;
		if (r == 3 && i % 13 == 0)
			x[i] = -INFINITY;
	}
}

static void smp_draws(struct dec_draw *d, int32_t *ids, float *lps, uint64_t seed)
{
	int k = 0;

	for (size_t c = 0; c < N_SMP_CFG; c++)
		for (int r = 0; r < SMP_ROWS; r++)
			for (int u = 0; u < SMP_US; u++, k++) {
				d[k] = (struct dec_draw){ .row = r, .samp = smp_cfgs[c].s, .n_logprobs = smp_cfgs[c].lp,
							  .top_ids = ids + (size_t)k * DEC_MAX_LOGPROBS,
							  .top_lp = lps + (size_t)k * DEC_MAX_LOGPROBS,
							  .want_lp = u != 2 };
				/* 0, the largest, and random uniforms */
				d[k].u53 = u == 0 ? 0 : u == 1 ? (1ull << 53) - 1 : (uint64_t)((rnd(&seed) + 1) * 0x1p52);
				d[k].id = -1;
			}
}

/* Whether the device's draw d differs from the CPU's token cpu_id only
 * where the CPU's own rounding decides (it normalises in float: ~1e-7 of the
 * mass): the CPU's distribution over the tokens it kept (dec_sampler_dist,
 * in its drawing order) puts u within SMP_EPS of the device token's interval,
 * or the two are neighbours with probabilities within SMP_EPS (a near-tie
 * that rounding may order either way); a survivor count may differ by tokens
 * whose mass together is below SMP_EPS. */
#define SMP_EPS 1e-5
static int within_rounding(const float *row, int width, const struct dec_draw *d, int32_t cpu_id)
{
	struct dec_sampler smp;
	struct cr_err e;
	double u = (double)d->u53 * 0x1p-53, cum = 0, lo = -1, hi = -1, tail = 0;
	int n, pi = -1, pj = -1, ok;

	cr_err_init(&e);
	assert_int_equal(dec_sampler_init(&smp, &d->samp, width, &e), CR_OK);
	n = dec_sampler_dist(&smp, row);
	for (int i = 0; i < n; i++) {
		if (smp.cand[i].id == d->id) {
			lo = cum;
			hi = cum + smp.cand[i].p;
			pj = i;
		}
		if (smp.cand[i].id == cpu_id)
			pi = i;
		if (i >= (n < d->n_kept ? n : d->n_kept))
			tail += smp.cand[i].p;
		cum += smp.cand[i].p;
	}
	ok = pj >= 0 && pi >= 0 && tail < SMP_EPS;
	if (ok && d->id != cpu_id)
		ok = (u >= lo - SMP_EPS && u <= hi + SMP_EPS) ||
		     (abs(pi - pj) == 1 && fabs((double)smp.cand[pi].p - smp.cand[pj].p) < SMP_EPS);
	if (!ok && pj < 0 && pi >= 0 && d->n_kept > n && d->n_kept - n <= 3 && u >= cum - SMP_EPS) {
		/* the device kept a token or two more, and u fell past the CPU's
		 * tokens: fine if the token drawn is one of almost no mass (an upper
		 * bound: the survivors include every token above it) */
		double w = row[d->id] / d->samp.temperature, mx = -INFINITY, sum = 0;

		for (int i = 0; i < width; i++)
			mx = fmax(mx, (double)(row[i] / d->samp.temperature));
		for (int i = 0; i < width; i++)
			if ((double)(row[i] / d->samp.temperature) >= w)
				sum += exp((double)(row[i] / d->samp.temperature) - mx);
		ok = exp(w - mx) / sum < SMP_EPS;
	}
	if (verbose || !ok)
		print_message("  draw from row %d: cuda %d (%d kept), cpu %d (%d kept); u %.9f, cuda's interval "
			      "[%.9f, %.9f]: %s\n", d->row, d->id, d->n_kept, cpu_id, n, u, lo, hi,
			      ok ? "within rounding" : "NOT within rounding");
	dec_sampler_release(&smp);
	return ok;
}

static void smp_run(struct dec_be *be, float *lg, int width, struct dec_draw *d, int n, int one_by_one)
{
	struct cr_err e;

	cr_err_init(&e);
	for (int i = 0; i < n;) {
		int m = one_by_one ? 1 : n - i < DEC_BE_MAX_DRAWS ? n - i : DEC_BE_MAX_DRAWS;

		if (be->ops->sample(be, lg, width, d + i, m, &e))
			fail_msg("%s sample: %s", be->ops->name, e.msg);
		i += m;
	}
}

/* The CUDA sample op against the CPU's (dec_sample's code) on the same
 * logits and uniforms: the same token and survivor count for every draw,
 * the same top logprob ids (values within 1e-5); each draw is the same
 * launched alone as among the others. Widths: the tiny model's, and two
 * above 4096 (where the CPU keeps id order without top-p). */
static void test_sample(void **state)
{
	struct dec_be_cfg cfg = test_cfg();
	const int n = (int)(N_SMP_CFG * SMP_ROWS * SMP_US);
	struct tm tm;
	struct dec_be *cpu, *gpu;

	(void)state;
	tm_load(&tm, "llama", DEC_T_F32, 0);
	cpu = open_be(tm.m, &cfg, 0);
	gpu = open_be(tm.m, &cfg, 1);
	for (int wi = 0; wi < 3; wi++) {
		int width = wi == 0 ? tm.m->cfg.n_vocab : wi == 1 ? 5000 : 20000, kept1 = 0, idorder = 0, near = 0, cut = 0;
		float *host = malloc((size_t)SMP_ROWS * width * 4), *lc, *lgp, worst = 0, worst_tok = 0;
		struct dec_draw *dc = calloc((size_t)n, sizeof *dc), *dg = calloc((size_t)n, sizeof *dg);
		struct dec_draw *d1 = calloc((size_t)n, sizeof *d1);
		int32_t *ic = malloc((size_t)n * DEC_MAX_LOGPROBS * 4), *ig = malloc((size_t)n * DEC_MAX_LOGPROBS * 4);
		int32_t *i1 = malloc((size_t)n * DEC_MAX_LOGPROBS * 4);
		float *pc = malloc((size_t)n * DEC_MAX_LOGPROBS * 4), *pg = malloc((size_t)n * DEC_MAX_LOGPROBS * 4);
		float *p1 = malloc((size_t)n * DEC_MAX_LOGPROBS * 4);

		for (int r = 0; r < SMP_ROWS; r++)
			smp_row(host + (size_t)r * width, width, r, 77 + (uint64_t)r * 1000 + (uint64_t)width);
		assert_non_null(lc = cpu->ops->scratch(cpu, (size_t)SMP_ROWS * width));
		assert_non_null(lgp = gpu->ops->scratch(gpu, (size_t)SMP_ROWS * width));
		up(cpu, lc, host, (size_t)SMP_ROWS * width);
		up(gpu, lgp, host, (size_t)SMP_ROWS * width);
		smp_draws(dc, ic, pc, 5);
		smp_draws(dg, ig, pg, 5);
		smp_draws(d1, i1, p1, 5);
		smp_run(cpu, lc, width, dc, n, 0);
		smp_run(gpu, lgp, width, dg, n, 0);
		/* one launch per draw: a subset (the emulator is slow), every setting */
		for (int k = 0; k < n; k += 7)
			smp_run(gpu, lgp, width, d1 + k, 1, 1);
		for (int k = 0; k < n; k++) {
			int lp = dc[k].n_logprobs;

			if ((dc[k].id != dg[k].id || dc[k].n_kept != dg[k].n_kept) &&
			    within_rounding(host + (size_t)dg[k].row * width, width, &dg[k], dc[k].id)) {
				near += dc[k].id != dg[k].id;
				cut += dc[k].id == dg[k].id;
			}
			else if (dc[k].id != dg[k].id || dc[k].n_kept != dg[k].n_kept)
				fail_msg("width %d, draw %d (setting %d, row %d, u53 %llu): cpu token %d of %d survivors, "
					 "cuda %d of %d", width, k, k / (SMP_ROWS * SMP_US), k / SMP_US % SMP_ROWS,
					 (unsigned long long)dc[k].u53, dc[k].id, dc[k].n_kept, dg[k].id, dg[k].n_kept);
			/* the token's logprob: the host's function on the CPU, bit for
			 * bit; on CUDA within 1e-5 (its normaliser sums in double) */
			if (dc[k].want_lp) {
				float want = dec_token_logprob(host + (size_t)dc[k].row * width, width, dc[k].id);

				if (memcmp(&dc[k].lp, &want, 4))
					fail_msg("width %d, draw %d: cpu op's token logprob %.9g, dec_token_logprob %.9g",
						 width, k, (double)dc[k].lp, (double)want);
				if (dc[k].id == dg[k].id && !(isinf(dc[k].lp) && dc[k].lp == dg[k].lp))
					worst_tok = fmaxf(worst_tok, fabsf(dc[k].lp - dg[k].lp));
				if (!(dg[k].lp <= 0))
					fail_msg("width %d, draw %d: cuda's token logprob %g", width, k, (double)dg[k].lp);
			} else if (dg[k].lp != 0) {
				fail_msg("width %d, draw %d: a token logprob not asked for: %g", width, k, (double)dg[k].lp);
			}
			kept1 += dg[k].n_kept == 1;
			idorder += dg[k].samp.temperature > 0 && dg[k].samp.top_p >= 1 && dg[k].n_kept > 4096;
			for (int j = 0; j < lp; j++) {
				if (dc[k].top_ids[j] != dg[k].top_ids[j])
					fail_msg("width %d, draw %d: top logprob %d is token %d on the cpu, %d on cuda", width,
						 k, j, dc[k].top_ids[j], dg[k].top_ids[j]);
				if (dc[k].top_ids[j] >= 0)
					worst = fmaxf(worst, fabsf(dc[k].top_lp[j] - dg[k].top_lp[j]));
			}
			if (k % 7 == 0 && (d1[k].id != dg[k].id || d1[k].n_kept != dg[k].n_kept ||
					   memcmp(&d1[k].lp, &dg[k].lp, 4) ||
					   memcmp(d1[k].top_ids, dg[k].top_ids, (size_t)lp * 4) ||
					   memcmp(d1[k].top_lp, dg[k].top_lp, (size_t)lp * 4)))
				fail_msg("width %d, draw %d: alone it drew %d, among %d draws %d", width, k, d1[k].id, n,
					 dg[k].id);
		}
		print_message("  width %5d: %d draws, %d identical to the CPU's, %d the same token with a survivor "
			      "count within rounding, %d another token within rounding (%d with one survivor, %d drawn "
			      "in id order over > 4096), top logprobs max |diff| %.3g, token logprobs %.3g; alone == "
			      "batched\n", width, n, n - near - cut, cut, near, kept1, idorder, (double)worst,
			      (double)worst_tok);
		/* a systematic error would not hide here: other tokens at most 2% */
		assert_true(near * 50 <= n);
		assert_true(worst <= 1e-5f);
		assert_true(worst_tok <= 1e-5f);
		assert_true(kept1 > 0);
		if (width > 4096)
			assert_true(idorder > 0);
		free(host);
		free(dc);
		free(dg);
		free(d1);
		free(ic);
		free(ig);
		free(i1);
		free(pc);
		free(pg);
		free(p1);
	}
	dec_be_free(cpu);
	dec_be_free(gpu);
	tm_free(&tm);
}

/* The serving engine drawing on the device: sampled requests (several
 * samples each, top-p, top logprobs) on the CUDA backend give the tokens of
 * the same engine drawing on the host from downloaded logits, and of the
 * CPU backend. */
static void eng_run(const struct dec_model *m, enum dec_device dev, int host_sample, struct dec_gen_out *outs,
		    int32_t prompt[2][12])
{
	struct dec_engine_cfg cfg = { .device = dev, .max_seqs = 4, .max_batch_tokens = 32, .max_ctx = 64,
				      .n_threads = 2, .host_sample = host_sample };
	struct dec_req r[2];
	struct dec_engine *eng;
	struct cr_err e;

	cr_err_init(&e);
	if (dec_engine_new(m, &cfg, &eng, &e))
		fail_msg("%s", e.msg);
	assert_string_equal(dec_engine_device(eng), dev == DEC_DEV_CUDA ? "cuda" : "cpu");
	for (int k = 0; k < 2; k++) {
		r[k] = (struct dec_req){ .prompt = prompt[k], .n_prompt = 12, .n = 3, .outs = outs + 3 * k,
					 .p = { .max_tokens = 20, .seed = 99, .task = k ? "b" : "a", .top_logprobs = 2,
						.logprobs = 1,
						.samp = { k ? 1.1f : 0.8f, k ? 0 : 20, k ? 0.9f : 1.0f, k ? 0 : 0.01f } } };
		if (dec_engine_submit(eng, &r[k], &e))
			fail_msg("%s", e.msg);
	}
	if (dec_engine_run(eng, &e))
		fail_msg("%s", e.msg);
	dec_engine_free(eng);
}

static void test_sample_engine(void **state)
{
	struct tm tm;
	struct dec_gen_out o[3][6];
	int32_t prompt[2][12];
	double worst = 0, worst_tok[3] = { 0 };
	int n_tok = 0;

	(void)state;
	tm_load(&tm, "llama", DEC_T_F32, 0);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 12; i++)
			prompt[k][i] = (k * 71 + i * 29 + 5) % tm.m->cfg.n_vocab;
	eng_run(tm.m, DEC_DEV_CUDA, 0, o[0], prompt);
	eng_run(tm.m, DEC_DEV_CUDA, 1, o[1], prompt);
	eng_run(tm.m, DEC_DEV_CPU, 0, o[2], prompt);
	for (int v = 1; v < 3; v++)
		for (int i = 0; i < 6; i++) {
			assert_int_equal(o[0][i].n_tokens, o[v][i].n_tokens);
			for (int t = 0; t < o[0][i].n_tokens; t++) {
				if (o[0][i].tokens[t] != o[v][i].tokens[t])
					fail_msg("sample %d token %d: cuda draws %d, %s %d", i, t, o[0][i].tokens[t],
						 v == 1 ? "cuda drawing on the host" : "cpu", o[v][i].tokens[t]);
				worst_tok[v] = fmax(worst_tok[v], fabs((double)o[0][i].token_lp[t] - o[v][i].token_lp[t]));
				for (int j = 0; j < 2; j++) {
					assert_int_equal(o[0][i].top_ids[2 * t + j], o[v][i].top_ids[2 * t + j]);
					worst = fmax(worst, fabs((double)o[0][i].top_lp[2 * t + j] - o[v][i].top_lp[2 * t + j]));
				}
			}
		}
	for (int i = 0; i < 6; i++) {
		n_tok += o[0][i].n_tokens;
		for (int v = 0; v < 3; v++)
			dec_gen_out_release(&o[v][i]);
	}
	print_message("  engine: %d sampled tokens (2 requests x 3 samples) drawn on the device = on the host = "
		      "on the cpu backend; top logprobs max |diff| %.3g; token logprobs against the host's "
		      "%.3g, the cpu backend's %.3g\n", n_tok, worst, worst_tok[1], worst_tok[2]);
	assert_true(worst <= 1e-3);
	/* the same logits: only the normaliser's order of summation differs */
	assert_true(worst_tok[1] <= 1e-5);
	assert_true(worst_tok[2] <= 1e-3);
	tm_free(&tm);
}

/* ---- setup -------------------------------------------------------------- */

static int setup(void **state)
{
	char why[256];

	(void)state;
	verbose = getenv("DEC_CUDA_TEST_VERBOSE") != NULL;
	if (!(cu = cr_cu_load(why, sizeof why)))
		return -1;
	cr_cuda_available(why, sizeof why);
	emulated = strstr(why, "fake GPU") != NULL;
	/* the AVX-512 table is AVX2's with wider prefill kernels, bit for bit the same */
	avx2 = !strcmp(dec_simd_get()->name, "avx2") || !strcmp(dec_simd_get()->name, "avx512");
	print_message("# CPU table %s%s\n", dec_simd_get()->name,
		      avx2 ? ": matrix products and SiLU must match the CPU bit for bit" : "");
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops),
		cmocka_unit_test(test_attention_groups),
		cmocka_unit_test(test_attention_tiles),
		cmocka_unit_test(test_mmq),
		cmocka_unit_test(test_forward),
		cmocka_unit_test(test_forward_batch),
		cmocka_unit_test(test_graphs),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_sample_engine),
	};
	char why[256];

	if (argc == 2 && !strcmp(argv[1], "--child-open"))
		return child_open();
	if (!cr_cuda_available(why, sizeof why)) {
		printf("skip: no CUDA device (%s)\n", why);
		return 77;
	}
	printf("# device: %s\n", why);
	if (getenv("DEC_CUDA_TEST_FILTER")) /* e.g. "test_sample*": a part, while working on it */
		cmocka_set_test_filter(getenv("DEC_CUDA_TEST_FILTER"));
	return cmocka_run_group_tests_name("decode_cuda", tests, setup, NULL);
}
