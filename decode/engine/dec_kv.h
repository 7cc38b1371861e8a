/* dec_kv.h — the paged KV cache's bookkeeping (vLLM's PagedAttention
 * scheme), independent of where the blocks live: which blocks are free,
 * how many sequences hold each, and the prefix cache.
 *
 * A block holds block_size consecutive positions of one sequence's K/V. A
 * sequence holds a block table; blocks are reference-counted, so the N
 * samples of one prompt hold the prompt's blocks once (a block shared and
 * about to be written is copied first: copy-on-write, by the engine).
 *
 * Prefix cache: a full block is published under the hash of its tokens and
 * of every token before it (a chain: h_j = H(h_{j-1}, tokens of block j)),
 * so it can serve any later sequence with the same prefix — the next turn of
 * a conversation, the same prompt again. A lookup checks the block's own
 * tokens and its parent's hash, not just its hash. A published block nobody
 * holds stays cached in LRU order and is evicted only when a block is
 * needed and none is free. The last, unfilled block of a finished sequence
 * is kept the same way (partial blocks, below), so a conversation's next
 * turn computes exactly the tokens that are new. */
#ifndef DEC_KV_H
#define DEC_KV_H

#include <stddef.h>
#include <stdint.h>
#include "common/cr_status.h"

struct dec_kv_stats {
	int64_t hits;       /* blocks found by lookups */
	int64_t evictions;  /* cached blocks taken for reuse */
	int peak_used;      /* most blocks held at once */
};

struct dec_kv;

enum cr_status dec_kv_new(int n_blocks, int block_size, struct dec_kv **out, struct cr_err *err);
void dec_kv_free(struct dec_kv *kv);

/* A block for a sequence (reference count 1): a free one, else the least
 * recently released cached one (unpublished first); -1 when every block is
 * held. */
int dec_kv_alloc(struct dec_kv *kv);
void dec_kv_ref(struct dec_kv *kv, int blk);
/* Drops one reference; at zero a published block stays cached (most
 * recent in LRU order), another goes back to the free list. */
void dec_kv_unref(struct dec_kv *kv, int blk);
int dec_kv_refs(const struct dec_kv *kv, int blk);

/* The chain hash of a block: its tokens after its parent's hash (0 for the
 * first block). */
uint64_t dec_kv_hash(uint64_t parent, const int32_t *tokens, int block_size);
/* The cached block with this hash, parent and tokens, referenced for the
 * caller (its count + 1); -1 when none. */
int dec_kv_lookup(struct dec_kv *kv, uint64_t hash, uint64_t parent, const int32_t *tokens);
/* Publishes a full block the caller holds under (hash, parent, tokens).
 * When another block already has that hash it stays the published one and
 * blk is left unpublished (freed when its holders release it). */
void dec_kv_publish(struct dec_kv *kv, int blk, uint64_t hash, uint64_t parent,
		    const int32_t *tokens);

/* Partial blocks: the last, unfilled block of a sequence that ends (or is
 * preempted) is published with its n < block_size tokens after parent, if
 * the caller is its only holder. Nobody holds or writes a partial block
 * again: a later sequence whose tokens after parent start with some of them
 * copies it into a block of its own (the positions it matches are valid,
 * what follows in the copy is rewritten). */
void dec_kv_publish_partial(struct dec_kv *kv, int blk, uint64_t parent, const int32_t *tokens, int n);
/* The published block after parent — partial, or full but differing
 * further on — sharing the longest prefix (1..max_n tokens, in *n_match)
 * with tokens, referenced for the caller to copy and release; -1 (n_match
 * 0) when none. What follows the match in the copy is rewritten by the
 * caller before it is read. */
int dec_kv_lookup_partial(struct dec_kv *kv, uint64_t parent, const int32_t *tokens, int max_n,
			  int *n_match);

int dec_kv_n_free(const struct dec_kv *kv);   /* free + cached-and-unheld: allocatable now */
int dec_kv_n_blocks(const struct dec_kv *kv);
int dec_kv_n_cached(const struct dec_kv *kv); /* published blocks (held or not) */
const struct dec_kv_stats *dec_kv_stats(const struct dec_kv *kv);

#endif
