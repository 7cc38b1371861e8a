/* test_forward.c — models and the forward pass: for every architecture
 * (llama, qwen2, qwen3) and weight type (F32, F16, BF16, Q8_0, Q4_0, Q5_0,
 * Q4_1, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS), the optimised forward (blocks, threads, encoded
 * activations) against the double-precision reference; each quantized file
 * against its F32 twin (the same weights before quantization); incremental decode with the KV
 * cache against a full prefill; tied embeddings; loader errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/be/dec_ref.h"
#include "decode/cpu/dec_cpu.h"
#include "decode/engine/dec_forward.h"
#include "decode/model/dec_model.h"
#include "decode/quant/dec_quant.h"
#include "decode/quant/dec_simd.h"
#include "dec_testutil.h"

static const uint32_t types[] = {
	DEC_T_F32, DEC_T_F16, DEC_T_BF16, DEC_T_Q8_0, DEC_T_Q4_0, DEC_T_Q5_0, DEC_T_Q4_K, DEC_T_Q6_K,
	DEC_T_Q4_1, DEC_T_Q5_1, DEC_T_Q2_K, DEC_T_Q3_K, DEC_T_Q5_K, DEC_T_IQ4_NL, DEC_T_IQ4_XS,
};
static const char *const archs[] = { "llama", "qwen2", "qwen3", "phi3", "qwen3moe", "gemma3" };
#define N_TOK 11

static void tokens(int32_t *t, int n, int n_vocab)
{
	for (int i = 0; i < n; i++)
		t[i] = (int32_t)((i * 37 + 11) % n_vocab);
}

/* max |a-b| relative to the spread of b; infinite where either holds a
 * NaN (fmax would drop it) */
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

static double tolerance(uint32_t t)
{
	/* q, k, v meet in f16 (the KV cache); F16/BF16 weights see F16/BF16
	 * activations, as in llama.cpp;
	 * the quantized types see Q8 activations */
	switch (t) {
	case DEC_T_F32: return 2e-3; /* the f16 KV cache */
	case DEC_T_F16: return 5e-3;
	case DEC_T_BF16: return 3e-2;
	default: return 4e-2;
	}
}

static void check_arch_type(const char *arch, uint32_t type, uint32_t vtype)
{
	struct tiny_spec s;
	uint8_t *img;
	struct dec_model *m;
	struct dec_state *st;
	struct cr_err e;
	int32_t tok[N_TOK];
	int nv;
	float *ref, *opt;
	double err;

	tiny_spec_default(&s, arch, type);
	s.vtype = vtype;
	/* top-2 of 4 experts where the two forwards' inputs agree to rounding
	 * (F32): a near tie flipping the choice would be a jump, not an error */
	if (type == DEC_T_F32)
		s.n_expert_used = 2;
	m = tiny_load(&s, &img);
	nv = m->cfg.n_vocab;
	tokens(tok, N_TOK, nv);
	ref = malloc(sizeof(float) * N_TOK * (size_t)nv);
	opt = malloc(sizeof(float) * N_TOK * (size_t)nv);
	cr_err_init(&e);
	assert_int_equal(dec_forward_ref(m, tok, N_TOK, ref, &e), CR_OK);
	/* block 4 with 2 threads: three blocks, the last one partial */
	assert_int_equal(dec_state_new(m, 64, 4, 2, &st, &e), CR_OK);
	assert_int_equal(dec_forward(st, tok, N_TOK, opt, &e), CR_OK);
	err = rel_err(opt, ref, (size_t)N_TOK * nv);
	if (getenv("DEC_TEST_VERBOSE"))
		print_message("%s/%s: optimised vs reference %.3g\n", arch, dec_type_name(type), err);
	if (err > tolerance(type))
		fail_msg("%s/%s: optimised vs reference error %g", arch, dec_type_name(type), err);
	assert_memory_equal(st->logits, opt + (size_t)(N_TOK - 1) * nv, sizeof(float) * (size_t)nv);
	/* logits must not be degenerate: the model says something input-dependent */
	assert_true(rel_err(ref, ref + nv, (size_t)nv) > 0.05);
	dec_state_free(st);
	free(ref);
	free(opt);
	dec_model_free(m);
	free(img);
}

static void test_all(void **state)
{
	(void)state;
	for (size_t a = 0; a < 6; a++)
		for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
			check_arch_type(archs[a], types[t], 0);
	/* mixed files: Q8_0- and Q8_K-encoded inputs in one fused product */
	check_arch_type("llama", DEC_T_Q4_0, DEC_T_Q6_K);
	check_arch_type("qwen2", DEC_T_Q4_K, DEC_T_Q8_0);
	/* Q8_1-encoded inputs beside Q8_0 and Q8_K ones */
	check_arch_type("llama", DEC_T_Q4_1, DEC_T_Q8_0);
	check_arch_type("qwen3", DEC_T_Q5_1, DEC_T_Q4_K);
}

/* Optimised logits of an arch/type file vs the reference logits of its F32
 * twin (tiny_model draws the same weights whatever the type). */
static double twin_err(const char *arch, uint32_t type)
{
	struct tiny_spec s;
	uint8_t *img[2];
	struct dec_model *m[2];
	struct dec_state *st;
	struct cr_err e;
	int32_t tok[N_TOK];
	int nv;
	float *ref, *opt;
	double err;

	tiny_spec_default(&s, arch, DEC_T_F32);
	m[0] = tiny_load(&s, &img[0]);
	tiny_spec_default(&s, arch, type);
	m[1] = tiny_load(&s, &img[1]);
	nv = m[0]->cfg.n_vocab;
	tokens(tok, N_TOK, nv);
	ref = malloc(sizeof(float) * N_TOK * (size_t)nv);
	opt = malloc(sizeof(float) * N_TOK * (size_t)nv);
	cr_err_init(&e);
	assert_int_equal(dec_forward_ref(m[0], tok, N_TOK, ref, &e), CR_OK);
	assert_int_equal(dec_state_new(m[1], 64, 4, 2, &st, &e), CR_OK);
	assert_int_equal(dec_forward(st, tok, N_TOK, opt, &e), CR_OK);
	err = rel_err(opt, ref, (size_t)N_TOK * nv);
	if (getenv("DEC_TEST_VERBOSE"))
		print_message("%s/%s: vs the F32 twin %.3g\n", arch, dec_type_name(type), err);
	dec_state_free(st);
	free(ref);
	free(opt);
	for (int k = 0; k < 2; k++) {
		dec_model_free(m[k]);
		free(img[k]);
	}
	return err;
}

/* Q4_1 and Q5_1 files agree with their F32 twins about as well as the
 * existing types of as many bits, Q4_0 and Q5_0 (within a margin of 1.25
 * for the draw: an asymmetric range (d, m) should not be worse on the same
 * values); measured 0.17-0.21 (Q4_1) and 0.08-0.10 (Q5_1) relative error. */
static void test_f32_twin(void **state)
{
	(void)state;
	for (size_t a = 0; a < 6; a++) {
		double q40 = twin_err(archs[a], DEC_T_Q4_0), q50 = twin_err(archs[a], DEC_T_Q5_0);
		double q41 = twin_err(archs[a], DEC_T_Q4_1), q51 = twin_err(archs[a], DEC_T_Q5_1);

		if (q41 > 1.25 * q40 || q51 > 1.25 * q50)
			fail_msg("%s: vs the F32 twin Q4_1 %g (Q4_0 %g), Q5_1 %g (Q5_0 %g)", archs[a], q41, q40,
				 q51, q50);
		assert_true(q41 > 0 && q51 > 0);
	}
}

/* The low-bit types against their F32 twins: each K type between its
 * neighbours in bits (round-to-nearest quantizers: Q2_K > Q3_K > Q4_K >
 * Q5_K > Q6_K), the IQ4 types (4 bits, a non-linear codebook) no worse than
 * 1.25 × Q4_0. */
static void test_f32_twin_k(void **state)
{
	(void)state;
	for (size_t a = 0; a < 3; a++) {
		double q2 = twin_err(archs[a], DEC_T_Q2_K), q3 = twin_err(archs[a], DEC_T_Q3_K);
		double q4 = twin_err(archs[a], DEC_T_Q4_K), q5 = twin_err(archs[a], DEC_T_Q5_K);
		double q6 = twin_err(archs[a], DEC_T_Q6_K), q40 = twin_err(archs[a], DEC_T_Q4_0);
		double nl = twin_err(archs[a], DEC_T_IQ4_NL), xs = twin_err(archs[a], DEC_T_IQ4_XS);

		if (!(q2 > q3 && q3 > q4 && q4 > q5 && q5 > q6))
			fail_msg("%s: vs the F32 twin Q2_K %g Q3_K %g Q4_K %g Q5_K %g Q6_K %g: not in order of bits",
				 archs[a], q2, q3, q4, q5, q6);
		if (nl > 1.25 * q40 || xs > 1.25 * q40)
			fail_msg("%s: vs the F32 twin IQ4_NL %g IQ4_XS %g (Q4_0 %g)", archs[a], nl, xs, q40);
	}
}

/* Token by token through the cache == one prefill; and reset works. */
static void test_kv_cache(void **state)
{
	(void)state;
	/* every arch on Q8_0, then qwen2 on every other weight type */
	for (size_t a = 0; a < 6 + sizeof types / sizeof types[0]; a++) {
		const char *arch = a < 6 ? archs[a] : "qwen2";
		uint32_t type = a < 6 ? DEC_T_Q8_0 : types[a - 6];
		struct tiny_spec s;
		uint8_t *img;
		struct dec_model *m;
		struct dec_state *st;
		struct cr_err e;
		int32_t tok[N_TOK];
		float *all;
		int nv;

		tiny_spec_default(&s, arch, type);
		m = tiny_load(&s, &img);
		nv = m->cfg.n_vocab;
		tokens(tok, N_TOK, nv);
		all = malloc(sizeof(float) * N_TOK * (size_t)nv);
		cr_err_init(&e);
		assert_int_equal(dec_state_new(m, N_TOK, 32, 1, &st, &e), CR_OK);
		assert_int_equal(dec_forward(st, tok, N_TOK, all, &e), CR_OK);
		dec_state_reset(st);
		for (int i = 0; i < N_TOK; i++) {
			assert_int_equal(dec_forward(st, tok + i, 1, NULL, &e), CR_OK);
			/* bit for bit: the block kernels round exactly like the one-token ones */
			if (memcmp(st->logits, all + (size_t)i * nv, sizeof(float) * (size_t)nv))
				fail_msg("%s/%s: step %d differs from prefill (max rel %g)", arch, dec_type_name(type), i,
					 rel_err(st->logits, all + (size_t)i * nv, (size_t)nv));
		}
		/* context is full now */
		assert_int_equal(dec_forward(st, tok, 1, NULL, &e), CR_EUSAGE);
		dec_state_free(st);
		free(all);
		dec_model_free(m);
		free(img);
	}
}

/* Three sequences sharing a prompt, stepped in one batch, give bit for bit
 * the logits each would get alone. */
static void test_batch_seqs(void **state)
{
	struct tiny_spec s;
	uint8_t *img;
	struct dec_model *m;
	struct dec_state *bs, *one;
	struct cr_err e;
	int32_t prompt[5] = { 3, 1, 4, 1, 5 }, step1[3] = { 9, 2, 6 }, step2[2] = { 5, 3 };
	int seqs1[3] = { 0, 1, 2 }, pos1[3] = { 5, 5, 5 }, seqs2[2] = { 2, 0 }, pos2[2] = { 6, 6 };
	float *lg;
	int nv;

	(void)state;
	tiny_spec_default(&s, "qwen2", DEC_T_Q4_K);
	m = tiny_load(&s, &img);
	nv = m->cfg.n_vocab;
	lg = malloc(sizeof(float) * 3 * (size_t)nv);
	cr_err_init(&e);
	assert_int_equal(dec_state_new_seqs(m, 16, 8, 3, 2, &bs, &e), CR_OK);
	assert_int_equal(dec_state_new(m, 16, 8, 1, &one, &e), CR_OK);
	assert_int_equal(dec_forward(bs, prompt, 5, NULL, &e), CR_OK);
	dec_state_copy_seq(bs, 0, 1, 5);
	dec_state_copy_seq(bs, 0, 2, 5);
	assert_int_equal(dec_forward_batch(bs, step1, seqs1, pos1, 3, lg, &e), CR_OK);
	for (int k = 0; k < 3; k++) {
		dec_state_reset(one);
		assert_int_equal(dec_forward(one, prompt, 5, NULL, &e), CR_OK);
		assert_int_equal(dec_forward(one, &step1[k], 1, NULL, &e), CR_OK);
		assert_memory_equal(one->logits, lg + (size_t)k * nv, sizeof(float) * (size_t)nv);
		if (k == 2 || k == 0) {
			int j = k == 2 ? 0 : 1; /* its place in the second batch */
			float *l2 = malloc(sizeof(float) * 2 * (size_t)nv);

			assert_int_equal(dec_forward_batch(bs, step2, seqs2, pos2, 2, l2, &e), CR_OK);
			assert_int_equal(dec_forward(one, &step2[j], 1, NULL, &e), CR_OK);
			assert_memory_equal(one->logits, l2 + (size_t)j * nv, sizeof(float) * (size_t)nv);
			free(l2);
		}
	}
	/* misuse is refused */
	assert_int_equal(dec_forward_batch(bs, step1, (int[]){ 1, 1 }, pos1, 2, lg, &e), CR_EUSAGE);
	dec_state_free(one);
	dec_state_free(bs);
	free(lg);
	dec_model_free(m);
	free(img);
}

static void test_tied_and_rope_freqs(void **state)
{
	struct tiny_spec s;
	uint8_t *img;
	struct dec_model *m;
	struct dec_state *st;
	struct cr_err e;
	int32_t tok[5] = { 1, 2, 3, 4, 5 };
	float *ref;

	(void)state;
	tiny_spec_default(&s, "llama", DEC_T_F32);
	s.tied = 1;
	s.rope_freqs = 1;
	m = tiny_load(&s, &img);
	assert_ptr_equal(m->w.output.data, m->w.tok_embd.data);
	assert_non_null(m->w.rope_freqs);
	ref = malloc(sizeof(float) * 5 * (size_t)m->cfg.n_vocab);
	cr_err_init(&e);
	assert_int_equal(dec_forward_ref(m, tok, 5, ref, &e), CR_OK);
	assert_int_equal(dec_state_new(m, 8, 2, 2, &st, &e), CR_OK);
	assert_int_equal(dec_forward(st, tok, 5, NULL, &e), CR_OK);
	assert_true(rel_err(st->logits, ref + 4 * (size_t)m->cfg.n_vocab, (size_t)m->cfg.n_vocab) < 2e-3);
	assert_int_equal(dec_forward(st, (int32_t[]){ 99999 }, 1, NULL, &e), CR_EINPUT);
	dec_state_free(st);
	free(ref);
	dec_model_free(m);
	free(img);
}

static void test_config(void **state)
{
	struct tiny_spec s;
	uint8_t *img;
	struct dec_model *m;

	(void)state;
	tiny_spec_default(&s, "qwen3", DEC_T_F16);
	m = tiny_load(&s, &img);
	assert_int_equal(m->cfg.arch, DEC_ARCH_QWEN3);
	assert_int_equal(m->cfg.head_dim, 64);
	assert_int_equal(m->cfg.n_heads, 8);
	assert_int_equal(m->cfg.n_kv_heads, 2);
	assert_true(m->cfg.rope_neox);
	assert_true(m->cfg.rope_base == 1e6f);
	assert_non_null(m->w.layers[1].q_norm);
	assert_null(m->w.layers[1].bq);
	assert_true(dec_model_n_params(m) > 0);
	dec_model_free(m);
	free(img);
	tiny_spec_default(&s, "llama", DEC_T_F16);
	s.rope_linear = 4;
	m = tiny_load(&s, &img);
	assert_false(m->cfg.rope_neox);
	assert_true(m->cfg.rope_scale == 0.25f);
	assert_int_equal(m->cfg.head_dim, 64);
	dec_model_free(m);
	free(img);
}

/* RoPE by hand: rope_dim 4, base 10000, so θ0 = pos and θ1 = pos / 100.
 * Normal rotates (0,1) by θ0 and (2,3) by θ1; NEOX (0,2) by θ0, (1,3) by θ1.
 * Frequency factors divide θ; linear scaling multiplies it. */
static void test_rope(void **state)
{
	struct dec_model m;
	float cs[4], v[4];
	const float x[4] = { 1, 2, 3, 4 }, ff[2] = { 2, 4 };
	double t0 = 3, t1 = 0.03;

	(void)state;
	memset(&m, 0, sizeof m);
	m.cfg.rope_dim = 4;
	m.cfg.head_dim = 4;
	m.cfg.rope_base = 10000;
	m.cfg.rope_scale = 1;
	dec_rope_cs(&m, 3, cs);
	memcpy(v, x, sizeof v);
	dec_rope(v, &m.cfg, cs);
	assert_true(fabs(v[0] - (1 * cos(t0) - 2 * sin(t0))) < 1e-5);
	assert_true(fabs(v[1] - (1 * sin(t0) + 2 * cos(t0))) < 1e-5);
	assert_true(fabs(v[2] - (3 * cos(t1) - 4 * sin(t1))) < 1e-5);
	assert_true(fabs(v[3] - (3 * sin(t1) + 4 * cos(t1))) < 1e-5);
	m.cfg.rope_neox = 1;
	memcpy(v, x, sizeof v);
	dec_rope(v, &m.cfg, cs);
	assert_true(fabs(v[0] - (1 * cos(t0) - 3 * sin(t0))) < 1e-5);
	assert_true(fabs(v[2] - (1 * sin(t0) + 3 * cos(t0))) < 1e-5);
	assert_true(fabs(v[1] - (2 * cos(t1) - 4 * sin(t1))) < 1e-5);
	assert_true(fabs(v[3] - (2 * sin(t1) + 4 * cos(t1))) < 1e-5);
	m.w.rope_freqs = ff;
	m.cfg.rope_scale = 0.5f;
	dec_rope_cs(&m, 3, cs);
	assert_true(fabs(cs[0] - cos(t0 / 2 * 0.5)) < 1e-6 && fabs(cs[3] - sin(t1 / 4 * 0.5)) < 1e-6);
}

static void test_load_errors(void **state)
{
	struct gw *w = gw_new();
	size_t n;
	uint8_t *p;
	struct dec_gguf *g;
	struct dec_model *m;
	struct cr_err e;
	float d[32] = { 0 };
	uint64_t ne[2] = { 32, 4 };

	(void)state;
	gw_kv_str(w, "general.architecture", "gpt-neox");
	p = gw_finish(w, &n);
	cr_err_init(&e);
	assert_int_equal(dec_gguf_from_buffer(p, n, "neox.gguf", &g, &e), CR_OK);
	assert_int_equal(dec_model_load(g, &m, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "gpt-neox"));
	free(p);
	gw_free(w);
	w = gw_new();
	gw_kv_str(w, "general.architecture", "llama");
	gw_kv_u32(w, "llama.embedding_length", 32);
	gw_kv_u32(w, "llama.block_count", 1);
	gw_kv_u32(w, "llama.feed_forward_length", 64);
	gw_kv_u32(w, "llama.attention.head_count", 2);
	gw_tensor(w, "token_embd.weight", 2, ne, DEC_T_F32, (float[128]){ 0 }, 512);
	gw_tensor(w, "blk.0.attn_norm.weight", 1, ne, DEC_T_F32, d, sizeof d);
	p = gw_finish(w, &n);
	cr_err_init(&e);
	assert_int_equal(dec_gguf_from_buffer(p, n, "partial.gguf", &g, &e), CR_OK);
	assert_int_equal(dec_model_load(g, &m, &e), CR_EINPUT);
	assert_non_null(strstr(e.msg, "blk.0.attn_q.weight"));
	assert_non_null(strstr(e.msg, "partial.gguf"));
	free(p);
	gw_free(w);
}

/* A ggml type the decoder does not run (IQ2_XXS, 66 bytes a 256 values) in
 * a needed matrix: the file parses, and the loader names the tensor and
 * the type. */
static void test_unsupported_type(void **state)
{
	struct gw *w = gw_new();
	size_t n;
	uint8_t *p, q[4 * 66] = { 0 };
	struct dec_gguf *g;
	struct dec_model *m;
	struct cr_err e;
	uint64_t ne[2] = { 256, 4 };

	(void)state;
	gw_kv_str(w, "general.architecture", "llama");
	gw_kv_u32(w, "llama.embedding_length", 256);
	gw_kv_u32(w, "llama.block_count", 1);
	gw_kv_u32(w, "llama.feed_forward_length", 512);
	gw_kv_u32(w, "llama.attention.head_count", 4);
	gw_tensor(w, "token_embd.weight", 2, ne, DEC_T_IQ2_XXS, q, sizeof q);
	p = gw_finish(w, &n);
	cr_err_init(&e);
	assert_int_equal(dec_gguf_from_buffer(p, n, "iq2.gguf", &g, &e), CR_OK);
	assert_int_equal(dec_model_load(g, &m, &e), CR_EINPUT);
	if (!strstr(e.msg, "token_embd.weight") || !strstr(e.msg, "IQ2_XXS") || !strstr(e.msg, "IQ4_XS"))
		fail_msg("message: %s", e.msg);
	free(p);
	gw_free(w);
}

int main(void)
{
	const char *want = getenv("CRUCIBLE_DEC_SIMD");

	/* a run asked for a table this CPU lacks would test the fallback */
	if (want && *want && strcmp(want, dec_simd_get()->name)) {
		printf("skipped: CRUCIBLE_DEC_SIMD=%s, but this CPU runs the %s table\n", want, dec_simd_get()->name);
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_rope),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_unsupported_type),
		cmocka_unit_test(test_tied_and_rope_freqs),
		cmocka_unit_test(test_kv_cache),
		cmocka_unit_test(test_batch_seqs),
		cmocka_unit_test(test_all),
		cmocka_unit_test(test_f32_twin),
		cmocka_unit_test(test_f32_twin_k),
	};

	return cmocka_run_group_tests_name("decode_forward", tests, NULL, NULL);
}
