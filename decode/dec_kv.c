/* dec_kv.c — the paged KV cache's bookkeeping (see dec_kv.h).
 *
 * Every block is in exactly one of: held (refs > 0), free (refs 0, not
 * published: the free stack), cached (refs 0, published: the LRU list,
 * oldest at the head). Published blocks, held or not, are in an
 * open-addressing table keyed by their chain hash (linear probing,
 * tombstones on removal, twice as many slots as blocks). */
#include "decode/dec_kv.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY (-1)
#define TOMB (-2)

struct dec_kv {
	int n_blocks, bs;
	int32_t *refs;           /* [n_blocks] */
	uint8_t *published;      /* [n_blocks] */
	int16_t *n_tok;          /* [n_blocks] positions of a published block: bs, or fewer (partial) */
	uint64_t *hash, *parent; /* [n_blocks] of a published block */
	int32_t *tokens;         /* [n_blocks, bs] of a published block */
	int32_t *free_stack;     /* [n_blocks] */
	int n_free;
	int32_t *prev, *next;    /* LRU links of cached blocks, -1 ends */
	int lru_head, lru_tail, n_cached_lru, n_published, n_held;
	int32_t *table;          /* [n_slots] block or EMPTY / TOMB */
	int n_slots, n_tombs;
	struct dec_kv_stats stats;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t dec_kv_hash(uint64_t parent, const int32_t *tokens, int block_size)
{
	uint64_t h = mix(parent ^ 0x9e3779b97f4a7c15ull);

	for (int i = 0; i < block_size; i++)
		h = mix(h + (uint32_t)tokens[i] + 0x632be59bd9b4e019ull * (uint64_t)(i + 1));
	return h ? h : 1; /* 0 is "no parent" */
}

enum cr_status dec_kv_new(int n_blocks, int block_size, struct dec_kv **out, struct cr_err *err)
{
	struct dec_kv *kv = calloc(1, sizeof *kv);

	*out = NULL;
	if (!kv)
		return cr_errf(err, CR_ENOMEM, "KV cache: out of memory");
	if (n_blocks < 1 || block_size < 1) {
		free(kv);
		return cr_errf(err, CR_EUSAGE, "KV cache: %d blocks of %d positions", n_blocks, block_size);
	}
	kv->n_blocks = n_blocks;
	kv->bs = block_size;
	kv->n_slots = 2 * n_blocks + 1;
	kv->refs = calloc((size_t)n_blocks, sizeof *kv->refs);
	kv->published = calloc((size_t)n_blocks, 1);
	kv->n_tok = calloc((size_t)n_blocks, sizeof *kv->n_tok);
	kv->hash = calloc((size_t)n_blocks, sizeof *kv->hash);
	kv->parent = calloc((size_t)n_blocks, sizeof *kv->parent);
	kv->tokens = calloc((size_t)n_blocks * block_size, sizeof *kv->tokens);
	kv->free_stack = malloc((size_t)n_blocks * sizeof *kv->free_stack);
	kv->prev = malloc((size_t)n_blocks * sizeof *kv->prev);
	kv->next = malloc((size_t)n_blocks * sizeof *kv->next);
	kv->table = malloc((size_t)kv->n_slots * sizeof *kv->table);
	if (!kv->refs || !kv->published || !kv->n_tok || !kv->hash || !kv->parent || !kv->tokens || !kv->free_stack ||
	    !kv->prev || !kv->next || !kv->table) {
		dec_kv_free(kv);
		return cr_errf(err, CR_ENOMEM, "KV cache: out of memory for %d blocks", n_blocks);
	}
	/* block 0 on top of the stack: blocks are handed out in order */
	for (int i = 0; i < n_blocks; i++)
		kv->free_stack[i] = n_blocks - 1 - i;
	kv->n_free = n_blocks;
	for (int i = 0; i < kv->n_slots; i++)
		kv->table[i] = EMPTY;
	kv->lru_head = kv->lru_tail = -1;
	*out = kv;
	return CR_OK;
}

void dec_kv_free(struct dec_kv *kv)
{
	if (!kv)
		return;
	free(kv->refs);
	free(kv->published);
	free(kv->n_tok);
	free(kv->hash);
	free(kv->parent);
	free(kv->tokens);
	free(kv->free_stack);
	free(kv->prev);
	free(kv->next);
	free(kv->table);
	free(kv);
}

static void lru_remove(struct dec_kv *kv, int b)
{
	if (kv->prev[b] >= 0)
		kv->next[kv->prev[b]] = kv->next[b];
	else
		kv->lru_head = kv->next[b];
	if (kv->next[b] >= 0)
		kv->prev[kv->next[b]] = kv->prev[b];
	else
		kv->lru_tail = kv->prev[b];
	kv->n_cached_lru--;
}

static void lru_push(struct dec_kv *kv, int b)
{
	kv->prev[b] = kv->lru_tail;
	kv->next[b] = -1;
	if (kv->lru_tail >= 0)
		kv->next[kv->lru_tail] = b;
	else
		kv->lru_head = b;
	kv->lru_tail = b;
	kv->n_cached_lru++;
}

/* The slot holding block b (published under kv->hash[b]), or -1. */
static int find_slot(const struct dec_kv *kv, uint64_t h, int want)
{
	for (int i = (int)(h % (uint64_t)kv->n_slots), n = 0; n < kv->n_slots; n++, i = (i + 1) % kv->n_slots) {
		int b = kv->table[i];

		if (b == EMPTY)
			return -1;
		if (b >= 0 && kv->hash[b] == h && (want < 0 || b == want))
			return i;
	}
	return -1;
}

static void unpublish(struct dec_kv *kv, int b)
{
	int i = find_slot(kv, kv->hash[b], b);

	if (i >= 0) {
		kv->table[i] = TOMB;
		kv->n_tombs++;
	}
	kv->published[b] = 0;
	kv->n_published--;
}

/* Rebuilds the table without tombstones once they would slow probing. */
static void rehash(struct dec_kv *kv)
{
	for (int i = 0; i < kv->n_slots; i++)
		kv->table[i] = EMPTY;
	kv->n_tombs = 0;
	for (int b = 0; b < kv->n_blocks; b++) {
		int i;

		if (!kv->published[b])
			continue;
		for (i = (int)(kv->hash[b] % (uint64_t)kv->n_slots); kv->table[i] != EMPTY; i = (i + 1) % kv->n_slots)
			;
		kv->table[i] = b;
	}
}

static void hold(struct dec_kv *kv, int b)
{
	if (kv->refs[b]++ == 0) {
		kv->n_held++;
		if (kv->n_held > kv->stats.peak_used)
			kv->stats.peak_used = kv->n_held;
	}
}

int dec_kv_alloc(struct dec_kv *kv)
{
	int b;

	if (kv->n_free) {
		b = kv->free_stack[--kv->n_free];
	} else if (kv->lru_head >= 0) {
		b = kv->lru_head;
		lru_remove(kv, b);
		unpublish(kv, b);
		kv->stats.evictions++;
	} else {
		return -1;
	}
	hold(kv, b);
	return b;
}

void dec_kv_ref(struct dec_kv *kv, int b)
{
	if (kv->refs[b] == 0 && kv->published[b])
		lru_remove(kv, b);
	hold(kv, b);
}

void dec_kv_unref(struct dec_kv *kv, int b)
{
	if (kv->refs[b] <= 0)
		return;
	if (--kv->refs[b])
		return;
	kv->n_held--;
	if (kv->published[b])
		lru_push(kv, b);
	else
		kv->free_stack[kv->n_free++] = b;
}

int dec_kv_refs(const struct dec_kv *kv, int b)
{
	return kv->refs[b];
}

int dec_kv_lookup(struct dec_kv *kv, uint64_t hash, uint64_t parent, const int32_t *tokens)
{
	for (int i = (int)(hash % (uint64_t)kv->n_slots), n = 0; n < kv->n_slots; n++, i = (i + 1) % kv->n_slots) {
		int b = kv->table[i];

		if (b == EMPTY)
			break;
		if (b >= 0 && kv->hash[b] == hash && kv->parent[b] == parent && kv->n_tok[b] == kv->bs &&
		    !memcmp(kv->tokens + (size_t)b * kv->bs, tokens, (size_t)kv->bs * sizeof *tokens)) {
			dec_kv_ref(kv, b);
			kv->stats.hits++;
			return b;
		}
	}
	return -1;
}

/* Enters b in the table under hash with n of its tokens. */
static void enter(struct dec_kv *kv, int b, uint64_t hash, uint64_t parent, const int32_t *tokens, int n)
{
	int i;

	for (i = (int)(hash % (uint64_t)kv->n_slots); kv->table[i] >= 0; i = (i + 1) % kv->n_slots)
		;
	kv->n_tombs -= kv->table[i] == TOMB;
	kv->table[i] = b;
	kv->published[b] = 1;
	kv->n_published++;
	kv->hash[b] = hash;
	kv->parent[b] = parent;
	kv->n_tok[b] = (int16_t)n;
	memcpy(kv->tokens + (size_t)b * kv->bs, tokens, (size_t)n * sizeof *tokens);
	if (kv->n_tombs > kv->n_slots / 4)
		rehash(kv);
}

void dec_kv_publish(struct dec_kv *kv, int b, uint64_t hash, uint64_t parent, const int32_t *tokens)
{
	if (kv->published[b] || find_slot(kv, hash, -1) >= 0)
		return;
	enter(kv, b, hash, parent, tokens, kv->bs);
}

/* Partial blocks live under a key derived from their parent alone: the
 * entries after one parent share it (linear probing keeps them all). */
static uint64_t partial_key(uint64_t parent)
{
	uint64_t h = mix(parent ^ 0x5851f42d4c957f2dull);

	return h ? h : 1;
}

void dec_kv_publish_partial(struct dec_kv *kv, int b, uint64_t parent, const int32_t *tokens, int n)
{
	uint64_t key = partial_key(parent);

	if (kv->published[b] || kv->refs[b] != 1 || n < 1 || n >= kv->bs)
		return;
	/* one entry per content: a longer one replaces a prefix of itself */
	for (int i = (int)(key % (uint64_t)kv->n_slots), k = 0; k < kv->n_slots; k++, i = (i + 1) % kv->n_slots) {
		int o = kv->table[i];

		if (o == EMPTY)
			break;
		if (o < 0 || kv->hash[o] != key || kv->parent[o] != parent || kv->n_tok[o] == kv->bs)
			continue;
		if (kv->n_tok[o] >= n && !memcmp(kv->tokens + (size_t)o * kv->bs, tokens, (size_t)n * sizeof *tokens))
			return; /* already cached, as long or longer */
	}
	enter(kv, b, key, parent, tokens, n);
}

int dec_kv_lookup_partial(struct dec_kv *kv, uint64_t parent, const int32_t *tokens, int max_n,
			  int *n_match)
{
	uint64_t key = partial_key(parent);
	int best = -1, best_n = 0;

	for (int i = (int)(key % (uint64_t)kv->n_slots), k = 0; k < kv->n_slots; k++, i = (i + 1) % kv->n_slots) {
		int o = kv->table[i], n = 0;

		if (o == EMPTY)
			break;
		if (o < 0 || kv->hash[o] != key || kv->parent[o] != parent || kv->n_tok[o] == kv->bs)
			continue;
		while (n < kv->n_tok[o] && n < max_n && kv->tokens[(size_t)o * kv->bs + n] == tokens[n])
			n++;
		if (n > best_n) {
			best = o;
			best_n = n;
		}
	}
	*n_match = best_n;
	if (best >= 0) {
		dec_kv_ref(kv, best);
		kv->stats.hits++;
	}
	return best;
}

int dec_kv_n_free(const struct dec_kv *kv)
{
	return kv->n_free + kv->n_cached_lru;
}

int dec_kv_n_blocks(const struct dec_kv *kv)
{
	return kv->n_blocks;
}

int dec_kv_n_cached(const struct dec_kv *kv)
{
	return kv->n_published;
}

const struct dec_kv_stats *dec_kv_stats(const struct dec_kv *kv)
{
	return &kv->stats;
}
