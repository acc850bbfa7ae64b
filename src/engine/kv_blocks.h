/* kv_blocks.h — the engine's KV blocks (kv_blocks.c): which of the paged
 * cache's blocks are free, which sequences hold each (a reference count),
 * and the prefix cache: full blocks keyed by a hash of their tokens and of
 * everything before them, kept after their sequences end and handed to
 * later sequences that begin the same way, evicted least recently used.
 * Every operation is O(1) (a lookup: O(1) expected). Not thread-safe: the
 * engine's step owns it. */
#ifndef WICK_ENGINE_KV_BLOCKS_H
#define WICK_ENGINE_KV_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct kv_blocks kv_blocks;

kv_blocks *kvb_new(int64_t n_blocks, int64_t block_size);
void kvb_free(kv_blocks *b);

/* A block for a sequence (reference count 1): a free one, else the least
 * recently used cached one (its prefix forgotten). -1 when every block is
 * held. */
int32_t kvb_alloc(kv_blocks *b);
/* A sequence lets go of a block: at count 0 it is free, or cached when it
 * keeps a prefix (then most recently used). */
void kvb_release(kv_blocks *b, int32_t id);

/* The key of a full block: its tokens [block_size] after the key of the
 * block before it (0 for the first block). */
uint64_t kvb_hash(const kv_blocks *b, uint64_t parent, const int32_t *tokens);
/* Remember that block id (held, full, computed) holds the block with this
 * key and these tokens; a key already known keeps its block. */
void kvb_publish(kv_blocks *b, int32_t id, uint64_t key, uint64_t parent, const int32_t *tokens);
/* The block holding this key and these tokens, now also held by the
 * caller (count + 1); -1 when none. */
int32_t kvb_lookup(kv_blocks *b, uint64_t key, uint64_t parent, const int32_t *tokens);

int64_t kvb_total(const kv_blocks *b);
int64_t kvb_used(const kv_blocks *b);      /* held by a sequence              */
int64_t kvb_cached(const kv_blocks *b);    /* free, keeping a prefix          */
/* the blocks a new sequence could get now (free + cached) */
int64_t kvb_available(const kv_blocks *b);
/* forget every prefix (cached blocks become free) */
void kvb_clear_cache(kv_blocks *b);
/* the counts agree with the lists (tests; false: a leak or a double free) */
bool kvb_consistent(const kv_blocks *b);

#endif
