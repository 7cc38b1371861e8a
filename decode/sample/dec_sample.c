/* dec_sample.c — the sampler pipeline documented in dec_sample.h, the
 * xoshiro256** stream and top-k log-probabilities. Sorting the whole vocab
 * every step would dominate decode time, so top-p first sorts only the tokens
 * within a factor 1e-6 of the best and falls back to a full sort when their
 * mass does not reach p (exact either way). */
#include "decode/sample/dec_sample.h"
#include "decode/quant/dec_exp.h"
#include "decode/quant/dec_simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Without top-p, a distribution over more tokens than this stays in id order:
 * sorting a 150k vocabulary every step would cost more than the forward. */
#define SORT_MAX 4096

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void dec_rng_seed(struct dec_rng *r, uint64_t seed, const char *task, uint64_t sample)
{
	uint64_t h = 0xcbf29ce484222325ull, x; /* FNV-1a of the task name */

	for (const unsigned char *p = (const unsigned char *)(task ? task : ""); *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	x = seed;
	x = splitmix64(&x) ^ h;
	x = splitmix64(&x) ^ (sample * 0xd1342543de82ef95ull + 1);
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t dec_rng_next(struct dec_rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double dec_rng_uniform(struct dec_rng *r)
{
	return (double)(dec_rng_next(r) >> 11) * 0x1.0p-53;
}

enum cr_status dec_sampler_init(struct dec_sampler *s, const struct dec_sampling *cfg,
				int n_vocab, struct cr_err *err)
{
	s->cfg = *cfg;
	s->n_vocab = n_vocab;
	s->cand = malloc((size_t)(n_vocab > 0 ? n_vocab : 1) * sizeof *s->cand);
	s->work = malloc((size_t)(n_vocab > 0 ? n_vocab : 1) * sizeof *s->work);
	if (!s->cand || !s->work) {
		dec_sampler_release(s);
		return cr_errf(err, CR_ENOMEM, "sampler: out of memory");
	}
	return CR_OK;
}

void dec_sampler_release(struct dec_sampler *s)
{
	free(s->cand);
	free(s->work);
	s->cand = NULL;
	s->work = NULL;
}

static int cmp_desc(const void *a, const void *b)
{
	const struct dec_cand *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int argmax(const float *v, int n)
{
	int best = 0;

	for (int i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

/* Keeps the k best of c[0..n) (unordered beyond that): a heap would do too;
 * partial quickselect keeps it O(n). Returns k. */
static int select_top(struct dec_cand *c, int n, int k)
{
	int lo = 0, hi = n - 1;

	if (k >= n)
		return n;
	while (lo < hi) {
		struct dec_cand piv = c[(lo + hi) / 2], t;
		int i = lo, j = hi;

		while (i <= j) {
			while (cmp_desc(&c[i], &piv) < 0)
				i++;
			while (cmp_desc(&c[j], &piv) > 0)
				j--;
			if (i <= j) {
				t = c[i];
				c[i] = c[j];
				c[j] = t;
				i++;
				j--;
			}
		}
		if (k - 1 <= j)
			hi = j;
		else if (k - 1 >= i)
			lo = i;
		else
			break;
	}
	return k;
}

/* The one candidate of a greedy step: the argmax, p = 1. */
static int greedy(struct dec_sampler *s, const float *logits)
{
	s->cand[0].id = argmax(logits, s->n_vocab);
	s->cand[0].p = 1;
	return 1;
}

int dec_sampler_dist(struct dec_sampler *s, const float *logits)
{
	const struct dec_sampling *cfg = &s->cfg;
	struct dec_cand *c = s->cand;
	int n = s->n_vocab;
	float mx, pmax;
	double sum = 0;

	if (cfg->temperature <= 0)
		return greedy(s, logits);
	if (cfg->top_k > 0 && cfg->top_k < n) {
		for (int i = 0; i < n; i++) {
			c[i].id = i;
			c[i].p = logits[i] / cfg->temperature;
		}
		n = select_top(c, n, cfg->top_k);
		mx = c[0].p;
		for (int i = 1; i < n; i++)
			mx = c[i].p > mx ? c[i].p : mx;
		for (int i = 0; i < n; i++) {
			c[i].p = logits[c[i].id] == -INFINITY ? 0.0f : dec_exp_cephes(c[i].p - mx);
			sum += c[i].p;
		}
		for (int i = 0; i < n; i++)
			c[i].p = (float)(c[i].p * (1.0 / sum));
		if (cfg->top_p >= 1 && n > SORT_MAX) {
			/* left unsorted: put the survivors in id order (select_top's
			 * order is an accident of the partitioning) */
			float *w = s->work;
			int m = 0;

			for (int i = 0; i < s->n_vocab; i++)
				w[i] = -1;
			for (int i = 0; i < n; i++)
				w[c[i].id] = c[i].p;
			for (int i = 0; i < s->n_vocab; i++)
				if (w[i] >= 0) {
					c[m].id = i;
					c[m++].p = w[i];
				}
		}
	} else {
		/* the whole vocabulary: a vectorised exp over a plain array */
		float *w = s->work;

		for (int i = 0; i < n; i++)
			w[i] = logits[i] / cfg->temperature;
		mx = w[argmax(w, n)];
		dec_simd_get()->exp_sum(w, n, mx);
		/* the vector exp clamps its input at -87: a -inf logit (a masked
		 * token) gets p = 0 */
		for (int i = 0; i < n; i++)
			sum += logits[i] == -INFINITY ? 0.0 : (double)w[i];
		for (int i = 0; i < n; i++) {
			c[i].id = i;
			c[i].p = logits[i] == -INFINITY ? 0.0f : (float)(w[i] * (1.0 / sum));
		}
	}
	if (!(sum > 0) || isinf(sum))
		/* no distribution (a temperature so small that w overflows, every
		 * logit -inf, NaN logits): the temperature's limit */
		return greedy(s, logits);
	pmax = (float)(1.0 / sum);
	if (cfg->top_p < 1) {
		/* move the plausible head to the front, sort it, and see if it suffices */
		int m = 0, cut = -1;
		double cum = 0;

		for (int i = 0; i < n; i++)
			if (c[i].p >= pmax * 1e-6f) {
				struct dec_cand t = c[m];

				c[m++] = c[i];
				c[i] = t;
			}
		qsort(c, (size_t)m, sizeof *c, cmp_desc);
		for (int i = 0; i < m && cut < 0; i++)
			if ((cum += c[i].p) >= cfg->top_p)
				cut = i + 1;
		if (cut < 0) {
			qsort(c, (size_t)n, sizeof *c, cmp_desc);
			cum = 0;
			for (int i = 0; i < n && cut < 0; i++)
				if ((cum += c[i].p) >= cfg->top_p)
					cut = i + 1;
		}
		n = cut < 0 ? n : cut;
	} else if (n <= SORT_MAX) {
		qsort(c, (size_t)n, sizeof *c, cmp_desc);
	}
	if (cfg->min_p > 0) {
		/* pmax is still the best survivor: top-k and top-p keep the head */
		int keep = 0;

		for (int i = 0; i < n; i++)
			if (c[i].p >= cfg->min_p * pmax)
				c[keep++] = c[i];
		n = keep;
		if (!n) /* min-p above 1 keeps nothing */
			return greedy(s, logits);
	}
	sum = 0;
	for (int i = 0; i < n; i++)
		sum += c[i].p;
	for (int i = 0; i < n; i++)
		c[i].p = (float)(c[i].p / sum);
	return n;
}

/* The last candidate with a probability above 0 (a token whose logit is
 * -inf survives when no filter removes it, with p = 0: never drawn). */
static int32_t last_positive(const struct dec_cand *c, int n)
{
	while (n > 1 && !(c[n - 1].p > 0))
		n--;
	return c[n - 1].id;
}

int32_t dec_sample_u(struct dec_sampler *s, const float *logits, uint64_t u53, int *n_kept)
{
	int n = dec_sampler_dist(s, logits);
	double u = (double)u53 * 0x1.0p-53, cum = 0;

	*n_kept = n;
	if (n == 1)
		return s->cand[0].id;
	for (int i = 0; i < n; i++)
		if (u < (cum += s->cand[i].p))
			return s->cand[i].id;
	return last_positive(s->cand, n); /* rounding left u above the total */
}

int32_t dec_sample(struct dec_sampler *s, const float *logits, struct dec_rng *rng)
{
	struct dec_rng keep = *rng;
	int n;
	int32_t id = dec_sample_u(s, logits, dec_rng_next(rng) >> 11, &n);

	if (n <= 1)
		*rng = keep; /* the uniform was not needed */
	return id;
}

int32_t dec_spec_accept(struct dec_sampler *s, const float *logits, int32_t d, const float *q,
			struct dec_rng *rng, int *accepted)
{
	int n = dec_sampler_dist(s, logits);
	const struct dec_cand *c = s->cand;
	double pd = 0, qd = q ? q[d] : 1, u, sum = 0, cum = 0;

	*accepted = 0;
	if (s->cfg.temperature <= 0) { /* greedy: the target's argmax, d or not */
		*accepted = c[0].id == d;
		return c[0].id;
	}
	for (int i = 0; i < n; i++)
		if (c[i].id == d)
			pd = c[i].p;
	u = dec_rng_uniform(rng);
	if (qd > 0 && u * qd < pd) {
		*accepted = 1;
		return d;
	}
	/* rejected: the residual norm(max(0, p - q)) over p's support */
	for (int i = 0; i < n; i++) {
		double r = c[i].p - (q ? q[c[i].id] : c[i].id == d);

		sum += r > 0 ? r : 0;
	}
	u = dec_rng_uniform(rng);
	if (sum <= 0) { /* p <= q everywhere: only rounding gets here; draw from p */
		for (int i = 0; i < n; i++)
			if (u < (cum += c[i].p))
				return c[i].id;
		return last_positive(c, n);
	}
	for (int i = 0; i < n; i++) {
		double r = c[i].p - (q ? q[c[i].id] : c[i].id == d);

		if (r > 0 && u * sum < (cum += r))
			return c[i].id;
	}
	for (int i = n - 1; i >= 0; i--) /* rounding: the last token with residual */
		if (c[i].p - (q ? q[c[i].id] : c[i].id == d) > 0)
			return c[i].id;
	return c[0].id;
}

/* log Σ e^logits, as every logprob here normalises: max + log Σ e^(l - max) */
static float log_sum_exp(const float *logits, int n)
{
	float mx = logits[argmax(logits, n)];

	return mx + logf(dec_simd_get()->sum_exp(logits, n, mx));
}

float dec_token_logprob(const float *logits, int n, int32_t id)
{
	return logits[id] - log_sum_exp(logits, n);
}

void dec_top_logprobs(const float *logits, int n, int k, int32_t *ids, float *logprobs)
{
	float lse = log_sum_exp(logits, n);

	/* k is small: insertion into a sorted list */
	for (int j = 0; j < k; j++)
		ids[j] = -1;
	for (int i = 0; i < n; i++) {
		int j = k;

		while (j > 0 && (ids[j - 1] < 0 || logits[i] > logits[ids[j - 1]]))
			j--;
		if (j >= k)
			continue;
		memmove(ids + j + 1, ids + j, (size_t)(k - j - 1) * sizeof *ids);
		ids[j] = i;
	}
	for (int j = 0; j < k; j++)
		logprobs[j] = ids[j] >= 0 ? logits[ids[j]] - lse : -INFINITY;
}
