/* test_sample.c — the sampler: greedy, each filter's effect (temperature,
 * top-k, top-p, min-p) on a known distribution, a chi-square test of the
 * draws against the filtered distribution, reproducibility of a sample's
 * stream from (seed, task, index) alone, and top-k log-probabilities. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode/sample/dec_sample.h"

#define NV 8
/* probabilities 0.4 0.2 0.15 0.1 0.07 0.05 0.02 0.01 as logits */
static const double probs[NV] = { 0.4, 0.2, 0.15, 0.1, 0.07, 0.05, 0.02, 0.01 };

static void logits_of(float *l)
{
	/* shuffle the ids so ordering is not by id */
	static const int perm[NV] = { 3, 0, 6, 1, 7, 2, 5, 4 };

	for (int i = 0; i < NV; i++)
		l[perm[i]] = (float)log(probs[i]) + 1.5f;
}

static int id_of_rank(int r)
{
	static const int perm[NV] = { 3, 0, 6, 1, 7, 2, 5, 4 };

	return perm[r];
}

static int dist(const struct dec_sampling *cfg, double *p /* [NV] by id */)
{
	struct dec_sampler s;
	float l[NV];
	int n;

	logits_of(l);
	assert_int_equal(dec_sampler_init(&s, cfg, NV, NULL), CR_OK);
	n = dec_sampler_dist(&s, l);
	memset(p, 0, NV * sizeof *p);
	for (int i = 0; i < n; i++)
		p[s.cand[i].id] = s.cand[i].p;
	dec_sampler_release(&s);
	return n;
}

static void test_greedy(void **st)
{
	struct dec_sampling cfg = { 0, 0, 1, 0 };
	struct dec_sampler s;
	struct dec_rng r;
	float l[NV];

	(void)st;
	logits_of(l);
	dec_rng_seed(&r, 1, "t", 0);
	assert_int_equal(dec_sampler_init(&s, &cfg, NV, NULL), CR_OK);
	for (int i = 0; i < 10; i++)
		assert_int_equal(dec_sample(&s, l, &r), id_of_rank(0));
	/* ties go to the lowest id */
	for (int i = 0; i < NV; i++)
		l[i] = 1;
	assert_int_equal(dec_sample(&s, l, &r), 0);
	dec_sampler_release(&s);
}

static void test_filters(void **st)
{
	double p[NV];
	struct dec_sampling cfg = { 1, 0, 1, 0 };

	(void)st;
	assert_int_equal(dist(&cfg, p), NV);
	for (int r = 0; r < NV; r++)
		assert_true(fabs(p[id_of_rank(r)] - probs[r]) < 1e-6);
	/* top-k 3: the three best, renormalised */
	cfg.top_k = 3;
	assert_int_equal(dist(&cfg, p), 3);
	assert_true(fabs(p[id_of_rank(0)] - 0.4 / 0.75) < 1e-6);
	assert_true(p[id_of_rank(3)] == 0);
	/* top-p 0.7: 0.4 + 0.2 = 0.6 < 0.7, + 0.15 = 0.75 >= 0.7 -> 3 tokens */
	cfg.top_k = 0;
	cfg.top_p = 0.7f;
	assert_int_equal(dist(&cfg, p), 3);
	/* top-p 0.6 exactly reached by two */
	cfg.top_p = 0.59f;
	assert_int_equal(dist(&cfg, p), 2);
	/* min-p 0.2: keep p >= 0.08 -> 0.4 0.2 0.15 0.1 */
	cfg.top_p = 1;
	cfg.min_p = 0.2f;
	assert_int_equal(dist(&cfg, p), 4);
	assert_true(fabs(p[id_of_rank(3)] - 0.1 / 0.85) < 1e-6);
	/* temperature 0.5 squares then renormalises */
	cfg.min_p = 0;
	cfg.temperature = 0.5f;
	{
		double z = 0;

		for (int r = 0; r < NV; r++)
			z += probs[r] * probs[r];
		dist(&cfg, p);
		assert_true(fabs(p[id_of_rank(1)] - 0.04 / z) < 1e-5);
	}
	/* temperature before top-p: a sharper distribution needs fewer tokens */
	cfg.top_p = 0.7f;
	assert_int_equal(dist(&cfg, p), 2);
}

/* Pearson chi-square of 20000 draws against the filtered distribution:
 * with 4 degrees of freedom, 18.47 is the 0.999 quantile. */
static void test_chi_square(void **st)
{
	struct dec_sampling cfg = { 1, 0, 1, 0.15f }; /* min-p keeps 5 tokens (>= 0.06) */
	struct dec_sampler s;
	struct dec_rng r;
	double p[NV], chi = 0;
	int count[NV] = { 0 }, n = 20000, k;
	float l[NV];

	(void)st;
	k = dist(&cfg, p);
	assert_int_equal(k, 5);
	logits_of(l);
	assert_int_equal(dec_sampler_init(&s, &cfg, NV, NULL), CR_OK);
	dec_rng_seed(&r, 42, "chi", 0);
	for (int i = 0; i < n; i++)
		count[dec_sample(&s, l, &r)]++;
	for (int id = 0; id < NV; id++) {
		if (p[id] == 0) {
			assert_int_equal(count[id], 0);
			continue;
		}
		chi += (count[id] - n * p[id]) * (count[id] - n * p[id]) / (n * p[id]);
	}
	if (chi > 18.47)
		fail_msg("chi-square %g over 4 dof", chi);
	dec_sampler_release(&s);
}

static void test_rng_streams(void **st)
{
	struct dec_rng a, b, c;
	double mean = 0;

	(void)st;
	dec_rng_seed(&a, 9, "L1/softmax", 3);
	dec_rng_seed(&b, 9, "L1/softmax", 3);
	for (int i = 0; i < 100; i++)
		assert_true(dec_rng_next(&a) == dec_rng_next(&b));
	dec_rng_seed(&a, 9, "L1/softmax", 3);
	dec_rng_seed(&c, 9, "L1/softmax", 4);
	assert_true(dec_rng_next(&a) != dec_rng_next(&c));
	dec_rng_seed(&c, 9, "L1/relu", 3);
	dec_rng_seed(&a, 9, "L1/softmax", 3);
	assert_true(dec_rng_next(&a) != dec_rng_next(&c));
	dec_rng_seed(&c, 10, "L1/softmax", 3);
	dec_rng_seed(&a, 9, "L1/softmax", 3);
	assert_true(dec_rng_next(&a) != dec_rng_next(&c));
	for (int i = 0; i < 10000; i++) {
		double u = dec_rng_uniform(&a);

		assert_true(u >= 0 && u < 1);
		mean += u;
	}
	assert_true(fabs(mean / 10000 - 0.5) < 0.02);
}

static void test_top_logprobs(void **st)
{
	float l[NV];
	int32_t ids[3];
	float lp[3];

	(void)st;
	logits_of(l);
	dec_top_logprobs(l, NV, 3, ids, lp);
	for (int r = 0; r < 3; r++) {
		assert_int_equal(ids[r], id_of_rank(r));
		assert_true(fabs(lp[r] - log(probs[r])) < 1e-5);
	}
}

/* A large vocab exercises the partial-sort path of top-p and top-k. */
static void test_large_vocab(void **st)
{
	enum { N = 50000 };
	float *l = malloc(N * sizeof *l);
	struct dec_sampling cfg = { 0.8f, 0, 0.9f, 0 };
	struct dec_sampler s;
	double mass = 0, pmax = 0;
	int n;

	(void)st;
	for (int i = 0; i < N; i++)
		l[i] = (float)(-0.001 * i + ((i * 7919) % 13) * 0.1);
	assert_int_equal(dec_sampler_init(&s, &cfg, N, NULL), CR_OK);
	n = dec_sampler_dist(&s, l);
	assert_true(n > 1 && n < N);
	for (int i = 0; i < n; i++) {
		mass += s.cand[i].p;
		if (i)
			assert_true(s.cand[i].p <= s.cand[i - 1].p);
		pmax = fmax(pmax, s.cand[i].p);
	}
	assert_true(fabs(mass - 1) < 1e-4);
	s.cfg.top_p = 1;
	s.cfg.top_k = 40;
	assert_int_equal(dec_sampler_dist(&s, l), 40);
	for (int i = 1; i < 40; i++)
		assert_true(s.cand[i].p <= s.cand[i - 1].p);
	/* temperature + min-p over the whole vocab: the unsorted path */
	s.cfg.top_k = 0;
	s.cfg.min_p = 0.05f;
	n = dec_sampler_dist(&s, l);
	mass = 0;
	pmax = 0;
	for (int i = 0; i < n; i++) {
		mass += s.cand[i].p;
		pmax = fmax(pmax, s.cand[i].p);
	}
	assert_true(n > 1 && n < N);
	assert_true(fabs(mass - 1) < 1e-4);
	for (int i = 0; i < n; i++)
		assert_true(s.cand[i].p >= 0.05 * pmax * 0.999);
	dec_sampler_release(&s);
	free(l);
}

/* What the CUDA sampler relies on the CPU's for (dec_sample_u is the CPU
 * backend's sample op): a -inf logit (a masked token) is never drawn, not
 * even when u is the largest uniform; more than 4096 survivors of top-k
 * without top-p are in id order; a draw with one survivor leaves the stream
 * where it was (dec_sample), and one with more takes exactly one uniform. */
static void test_sample_op(void **st)
{
	enum { N = 6000 };
	float *l = malloc(N * sizeof *l);
	struct dec_sampling cfg = { 1, 0, 1, 0 };
	struct dec_sampler s;
	struct dec_rng r, r0;
	int n;

	(void)st;
	for (int i = 0; i < N; i++)
		l[i] = i % 3 ? (float)((i * 7919) % 101) * 0.05f : -INFINITY;
	assert_int_equal(dec_sampler_init(&s, &cfg, N, NULL), CR_OK);
	for (int k = 0; k < 2; k++) {
		s.cfg.top_k = k ? N - 1 : 0; /* the top-k path keeps some -inf tokens too */
		for (uint64_t u = (1ull << 53) - 64; u < (1ull << 53); u++) {
			int32_t id = dec_sample_u(&s, l, u, &n);

			assert_true(l[id] > -INFINITY);
			assert_true(n > 1);
		}
	}
	s.cfg.top_k = 5000;
	n = dec_sampler_dist(&s, l);
	assert_int_equal(n, 5000);
	for (int i = 1; i < n; i++)
		assert_true(s.cand[i].id > s.cand[i - 1].id);
	dec_rng_seed(&r, 1, "t", 0);
	r0 = r;
	s.cfg.top_k = 1;
	dec_sample(&s, l, &r);
	assert_memory_equal(&r, &r0, sizeof r);
	s.cfg.top_k = 0;
	dec_sample(&s, l, &r);
	dec_rng_next(&r0);
	assert_memory_equal(&r, &r0, sizeof r);
	dec_sampler_release(&s);
	free(l);
}

/* Speculative sampling's rule (dec_spec_accept): 20000 draws of the token
 * chosen after a draft, against the target's distribution p. Three drafts:
 * a point mass on the second most likely token (prompt lookup), a draft
 * model's distribution q unlike p (d drawn from q each time), and under a
 * min-p filter a point mass on a token p excludes. Pearson chi-square at
 * the 0.999 quantile (7 dof: 24.32; 4 dof: 18.47). A rule that resamples
 * from p instead of the residual fails the first case (d is then drawn
 * with p_d + (1 - p_d) p_d). */
static double spec_chi(const struct dec_sampling *cfg, int mode, int *n_acc)
{
	struct dec_sampler s;
	struct dec_rng r, rq;
	double p[NV], q[NV], chi = 0;
	float l[NV], qf[NV];
	int count[NV] = { 0 }, n = 20000, d2 = id_of_rank(1), d_out = id_of_rank(7);

	dist(cfg, p);
	logits_of(l);
	/* q: ranks reversed, as unlike p as a distribution can be */
	for (int i = 0; i < NV; i++) {
		q[id_of_rank(i)] = probs[NV - 1 - i];
		qf[id_of_rank(i)] = (float)q[id_of_rank(i)];
	}
	assert_int_equal(dec_sampler_init(&s, cfg, NV, NULL), CR_OK);
	dec_rng_seed(&r, 7, "spec", (uint64_t)mode);
	dec_rng_seed(&rq, 8, "draft", (uint64_t)mode);
	*n_acc = 0;
	for (int i = 0; i < n; i++) {
		int32_t d = mode == 0 ? d2 : mode == 2 ? d_out : -1, t;
		int acc;

		if (mode == 1) { /* d ~ q */
			double u = dec_rng_uniform(&rq), cum = 0;

			for (d = 0; d < NV - 1 && u >= (cum += q[d]); d++)
				;
		}
		t = dec_spec_accept(&s, l, d, mode == 1 ? qf : NULL, &r, &acc);
		assert_true(!acc || t == d);
		*n_acc += acc;
		count[t]++;
	}
	for (int id = 0; id < NV; id++) {
		if (p[id] == 0) {
			assert_int_equal(count[id], 0);
			continue;
		}
		chi += (count[id] - n * p[id]) * (count[id] - n * p[id]) / (n * p[id]);
	}
	dec_sampler_release(&s);
	return chi;
}

static void test_spec_accept(void **st)
{
	struct dec_sampling plain = { 1, 0, 1, 0 }, minp = { 1, 0, 1, 0.15f }, greedy = { 0, 0, 1, 0 };
	struct dec_sampler s;
	struct dec_rng r;
	float l[NV];
	double chi;
	int acc, n_acc;

	(void)st;
	chi = spec_chi(&plain, 0, &n_acc);
	if (chi > 24.32)
		fail_msg("point-mass draft: chi-square %g over 7 dof", chi);
	/* accepted about p(d) = 0.2 of the time */
	assert_true(n_acc > 3600 && n_acc < 4400);
	chi = spec_chi(&plain, 1, &n_acc);
	if (chi > 24.32)
		fail_msg("draft distribution: chi-square %g over 7 dof", chi);
	/* sum over d of min(p, q) = 0.30 here */
	assert_true(n_acc > 5600 && n_acc < 6400);
	chi = spec_chi(&minp, 2, &n_acc);
	if (chi > 18.47)
		fail_msg("a draft outside p: chi-square %g over 4 dof", chi);
	assert_int_equal(n_acc, 0);
	/* greedy: the target's argmax, accepted or not */
	logits_of(l);
	assert_int_equal(dec_sampler_init(&s, &greedy, NV, NULL), CR_OK);
	dec_rng_seed(&r, 1, "g", 0);
	assert_int_equal(dec_spec_accept(&s, l, id_of_rank(0), NULL, &r, &acc), id_of_rank(0));
	assert_int_equal(acc, 1);
	assert_int_equal(dec_spec_accept(&s, l, id_of_rank(3), NULL, &r, &acc), id_of_rank(0));
	assert_int_equal(acc, 0);
	dec_sampler_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_chi_square),
		cmocka_unit_test(test_spec_accept),
		cmocka_unit_test(test_rng_streams),
		cmocka_unit_test(test_top_logprobs),
		cmocka_unit_test(test_large_vocab),
		cmocka_unit_test(test_sample_op),
	};

	return cmocka_run_group_tests_name("decode_sample", tests, NULL, NULL);
}
