/* task_rng.h — the one PRNG crucible uses for inputs, seeds and bootstrap:
 * xoshiro256** seeded through splitmix64, so a (seed, stream) pair gives a
 * reproducible independent stream. */
#ifndef TASK_RNG_H
#define TASK_RNG_H

#include <math.h>
#include <stdint.h>

struct task_rng {
	uint64_t s[4];
};

static inline uint64_t task_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t task_mix(uint64_t a, uint64_t b)
{
	uint64_t x = a ^ (b * 0xd1342543de82ef95ull);
	return task_splitmix64(&x);
}

static inline void task_rng_seed(struct task_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = task_splitmix64(&seed);
}

static inline uint64_t task_rng_next(struct task_rng *r)
{
	uint64_t *s = r->s, res = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = s[3] << 45 | s[3] >> 19;
	return res;
}

/* Uniform in [0, 1). */
static inline double task_rng_uniform(struct task_rng *r)
{
	return (double)(task_rng_next(r) >> 11) * 0x1.0p-53;
}

static inline double task_rng_normal(struct task_rng *r)
{
	double u = task_rng_uniform(r), v = task_rng_uniform(r);
	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

#endif
