/* dec_kv.c — the paged KV cache's bookkeeping (see dec_kv.h).
 *
 * Every block is in exactly one of: held (refs > 0), free (refs 0, not
 * published: the free stack), cached (refs 0, published: the LRU list,
 * oldest at the head). Published blocks, held or not, are in two
 * open-addressing indexes (linear probing, tombstones on removal, twice as
 * many slots as blocks): full blocks by their chain hash, and every
 * published block, full or partial, by its parent's hash — the second one
 * finds the block that shares the longest prefix with what follows a
 * parent, for the tokens after the last full match. */
#include "decode/engine/dec_kv.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY (-1)
#define TOMB (-2)

/* Blocks by a 64-bit key: key_of(kv, b) gives a block's key. */
struct index {
	int32_t *slot; /* [n_slots] block or EMPTY / TOMB */
	int n_slots, n_tombs;
};

struct dec_kv {
	int n_blocks, bs;
	int32_t *refs;           /* [n_blocks] */
	uint8_t *published;      /* [n_blocks] */
	int16_t *n_tok;          /* [n_blocks] positions of a published block: bs, or fewer (partial) */
	uint64_t *hash, *parent; /* [n_blocks] of a published block (hash: full blocks) */
	int32_t *tokens;         /* [n_blocks, bs] of a published block */
	int32_t *free_stack;     /* [n_blocks] */
	int n_free;
	int32_t *prev, *next;    /* LRU links of cached blocks, -1 ends */
	int lru_head, lru_tail, n_cached_lru, n_published, n_held;
	struct index by_hash, by_parent;
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

static uint64_t parent_key(uint64_t parent)
{
	return mix(parent ^ 0x5851f42d4c957f2dull);
}

/* ---- indexes ---- */

static int ix_init(struct index *ix, int n_blocks)
{
	ix->n_slots = 2 * n_blocks + 1;
	ix->n_tombs = 0;
	if (!(ix->slot = malloc((size_t)ix->n_slots * sizeof *ix->slot)))
		return -1;
	for (int i = 0; i < ix->n_slots; i++)
		ix->slot[i] = EMPTY;
	return 0;
}

static int ix_start(const struct index *ix, uint64_t key)
{
	return (int)(key % (uint64_t)ix->n_slots);
}

static void ix_put(struct index *ix, uint64_t key, int b)
{
	int i = ix_start(ix, key);

	while (ix->slot[i] >= 0)
		i = (i + 1) % ix->n_slots;
	ix->n_tombs -= ix->slot[i] == TOMB;
	ix->slot[i] = b;
}

static void ix_remove(struct index *ix, uint64_t key, int b)
{
	for (int i = ix_start(ix, key), n = 0; n < ix->n_slots && ix->slot[i] != EMPTY;
	     n++, i = (i + 1) % ix->n_slots)
		if (ix->slot[i] == b) {
			ix->slot[i] = TOMB;
			ix->n_tombs++;
			return;
		}
}

/* ---- setup ---- */

enum cr_status dec_kv_new(int n_blocks, int block_size, struct dec_kv **out, struct cr_err *err)
{
	struct dec_kv *kv = calloc(1, sizeof *kv);

	*out = NULL;
	if (!kv)
		return cr_errf(err, CR_ENOMEM, "KV cache: out of memory");
	if (n_blocks < 1 || block_size < 1 || block_size > 4096) {
		free(kv);
		return cr_errf(err, CR_EUSAGE, "KV cache: %d blocks of %d positions", n_blocks, block_size);
	}
	kv->n_blocks = n_blocks;
	kv->bs = block_size;
	kv->refs = calloc((size_t)n_blocks, sizeof *kv->refs);
	kv->published = calloc((size_t)n_blocks, 1);
	kv->n_tok = calloc((size_t)n_blocks, sizeof *kv->n_tok);
	kv->hash = calloc((size_t)n_blocks, sizeof *kv->hash);
	kv->parent = calloc((size_t)n_blocks, sizeof *kv->parent);
	kv->tokens = calloc((size_t)n_blocks * block_size, sizeof *kv->tokens);
	kv->free_stack = malloc((size_t)n_blocks * sizeof *kv->free_stack);
	kv->prev = malloc((size_t)n_blocks * sizeof *kv->prev);
	kv->next = malloc((size_t)n_blocks * sizeof *kv->next);
	if (!kv->refs || !kv->published || !kv->n_tok || !kv->hash || !kv->parent || !kv->tokens ||
	    !kv->free_stack || !kv->prev || !kv->next || ix_init(&kv->by_hash, n_blocks) ||
	    ix_init(&kv->by_parent, n_blocks)) {
		dec_kv_free(kv);
		return cr_errf(err, CR_ENOMEM, "KV cache: out of memory for %d blocks", n_blocks);
	}
	/* block 0 on top of the stack: blocks are handed out in order */
	for (int i = 0; i < n_blocks; i++)
		kv->free_stack[i] = n_blocks - 1 - i;
	kv->n_free = n_blocks;
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
	free(kv->by_hash.slot);
	free(kv->by_parent.slot);
	free(kv);
}

/* ---- publication ---- */

/* Both indexes rebuilt without tombstones once they would slow probing. */
static void rebuild(struct dec_kv *kv)
{
	for (int i = 0; i < kv->by_hash.n_slots; i++)
		kv->by_hash.slot[i] = kv->by_parent.slot[i] = EMPTY;
	kv->by_hash.n_tombs = kv->by_parent.n_tombs = 0;
	for (int b = 0; b < kv->n_blocks; b++) {
		if (!kv->published[b])
			continue;
		if (kv->n_tok[b] == kv->bs)
			ix_put(&kv->by_hash, kv->hash[b], b);
		ix_put(&kv->by_parent, parent_key(kv->parent[b]), b);
	}
}

static void unpublish(struct dec_kv *kv, int b)
{
	if (kv->n_tok[b] == kv->bs)
		ix_remove(&kv->by_hash, kv->hash[b], b);
	ix_remove(&kv->by_parent, parent_key(kv->parent[b]), b);
	kv->published[b] = 0;
	kv->n_published--;
}

static void enter(struct dec_kv *kv, int b, uint64_t hash, uint64_t parent, const int32_t *tokens, int n)
{
	kv->published[b] = 1;
	kv->n_published++;
	kv->hash[b] = hash;
	kv->parent[b] = parent;
	kv->n_tok[b] = (int16_t)n;
	memcpy(kv->tokens + (size_t)b * kv->bs, tokens, (size_t)n * sizeof *tokens);
	if (n == kv->bs)
		ix_put(&kv->by_hash, hash, b);
	ix_put(&kv->by_parent, parent_key(parent), b);
	if (kv->by_hash.n_tombs + kv->by_parent.n_tombs > kv->by_hash.n_slots / 4)
		rebuild(kv);
}

/* The published full block with hash, parent and tokens, or -1. */
static int find_full(const struct dec_kv *kv, uint64_t hash, uint64_t parent, const int32_t *tokens)
{
	const struct index *ix = &kv->by_hash;

	for (int i = ix_start(ix, hash), n = 0; n < ix->n_slots && ix->slot[i] != EMPTY;
	     n++, i = (i + 1) % ix->n_slots) {
		int b = ix->slot[i];

		if (b >= 0 && kv->hash[b] == hash && kv->parent[b] == parent &&
		    !memcmp(kv->tokens + (size_t)b * kv->bs, tokens, (size_t)kv->bs * sizeof *tokens))
			return b;
	}
	return -1;
}

void dec_kv_publish(struct dec_kv *kv, int b, uint64_t hash, uint64_t parent, const int32_t *tokens)
{
	if (kv->published[b] || find_full(kv, hash, parent, tokens) >= 0)
		return;
	enter(kv, b, hash, parent, tokens, kv->bs);
}

/* The published block after parent sharing the longest prefix (at most
 * max_n tokens) with tokens; its length in *n_match. */
static int longest_after(const struct dec_kv *kv, uint64_t parent, const int32_t *tokens, int max_n,
			 int *n_match)
{
	const struct index *ix = &kv->by_parent;
	uint64_t key = parent_key(parent);
	int best = -1, best_n = 0;

	for (int i = ix_start(ix, key), k = 0; k < ix->n_slots && ix->slot[i] != EMPTY;
	     k++, i = (i + 1) % ix->n_slots) {
		int b = ix->slot[i], n = 0;
		const int32_t *t;

		if (b < 0 || kv->parent[b] != parent)
			continue;
		t = kv->tokens + (size_t)b * kv->bs;
		while (n < kv->n_tok[b] && n < max_n && t[n] == tokens[n])
			n++;
		if (n > best_n) {
			best = b;
			best_n = n;
		}
	}
	*n_match = best_n;
	return best;
}

void dec_kv_publish_partial(struct dec_kv *kv, int b, uint64_t parent, const int32_t *tokens, int n)
{
	int m;

	if (kv->published[b] || kv->refs[b] != 1 || n < 1 || n >= kv->bs)
		return;
	/* nothing new when a published block already starts with these tokens */
	if (longest_after(kv, parent, tokens, n, &m) >= 0 && m == n)
		return;
	enter(kv, b, 0, parent, tokens, n);
}

/* ---- blocks ---- */

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
	int b = find_full(kv, hash, parent, tokens);

	if (b >= 0) {
		dec_kv_ref(kv, b);
		kv->stats.hits++;
	}
	return b;
}

int dec_kv_lookup_partial(struct dec_kv *kv, uint64_t parent, const int32_t *tokens, int max_n,
			  int *n_match)
{
	int b = longest_after(kv, parent, tokens, max_n, n_match);

	if (b >= 0) {
		dec_kv_ref(kv, b);
		kv->stats.hits++;
	}
	return b;
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
