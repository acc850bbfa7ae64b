/* kv_blocks.c — the engine's KV blocks (kv_blocks.h).
 *
 * State of a block: held (ref > 0), cached (ref 0, keeps a prefix: in the
 * LRU list and the key table) or free (ref 0, on the free stack). A held
 * block may also carry a key (published while its sequence runs, found by
 * others). The free stack and the LRU list (doubly linked through arrays)
 * make alloc and release O(1); the key table is open addressing with
 * linear probing and tombstones, sized to twice the blocks. A lookup
 * compares the stored tokens and parent key too, so a hash collision
 * never shares the wrong block. */
#include <stdlib.h>
#include <string.h>
#include "kv_blocks.h"

enum { SLOT_EMPTY = -1, SLOT_DEAD = -2 };

struct kv_blocks {
    int64_t n, bs;
    int32_t *ref;
    bool *keyed;                 /* the block is in the key table            */
    uint64_t *key, *parent;
    int32_t *tokens;             /* [n, bs]: a keyed block's tokens          */
    int32_t *free_stack;
    int64_t n_free;
    int32_t *prev, *next;        /* the LRU list of cached blocks            */
    int32_t lru_head, lru_tail;  /* head: least recently used                */
    int64_t n_cached, n_used;
    int32_t *table;              /* key slots: a block id, or SLOT_*         */
    int64_t table_n;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

uint64_t kvb_hash(const kv_blocks *b, uint64_t parent, const int32_t *tokens)
{
    uint64_t h = mix(0x51ed270b27a1c3e5ull, parent);
    for (int64_t i = 0; i < b->bs; i++) h = mix(h, (uint32_t)tokens[i]);
    return h ? h : 1;
}

kv_blocks *kvb_new(int64_t n, int64_t bs)
{
    if (n <= 0 || bs <= 0 || n > INT32_MAX / 4) return NULL;
    kv_blocks *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->n = n;
    b->bs = bs;
    b->table_n = 2 * n + 1;
    b->ref = calloc((size_t)n, sizeof *b->ref);
    b->keyed = calloc((size_t)n, sizeof *b->keyed);
    b->key = calloc((size_t)n, sizeof *b->key);
    b->parent = calloc((size_t)n, sizeof *b->parent);
    b->tokens = malloc((size_t)(n * bs) * sizeof *b->tokens);
    b->free_stack = malloc((size_t)n * sizeof *b->free_stack);
    b->prev = malloc((size_t)n * sizeof *b->prev);
    b->next = malloc((size_t)n * sizeof *b->next);
    b->table = malloc((size_t)b->table_n * sizeof *b->table);
    if (!b->ref || !b->keyed || !b->key || !b->parent || !b->tokens || !b->free_stack || !b->prev || !b->next ||
        !b->table) {
        kvb_free(b);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) b->free_stack[i] = (int32_t)(n - 1 - i);   /* block 0 first */
    b->n_free = n;
    b->lru_head = b->lru_tail = -1;
    for (int64_t i = 0; i < b->table_n; i++) b->table[i] = SLOT_EMPTY;
    return b;
}

void kvb_free(kv_blocks *b)
{
    if (!b) return;
    free(b->ref);
    free(b->keyed);
    free(b->key);
    free(b->parent);
    free(b->tokens);
    free(b->free_stack);
    free(b->prev);
    free(b->next);
    free(b->table);
    free(b);
}

/* ---- the key table ------------------------------------------------------- */

static int64_t slot_of(const kv_blocks *b, uint64_t key) { return (int64_t)(key % (uint64_t)b->table_n); }

static void table_remove(kv_blocks *b, int32_t id)
{
    for (int64_t i = slot_of(b, b->key[id]), k = 0; k < b->table_n; k++, i = (i + 1) % b->table_n) {
        if (b->table[i] == SLOT_EMPTY) break;
        if (b->table[i] == id) {
            b->table[i] = SLOT_DEAD;
            break;
        }
    }
    b->keyed[id] = false;
}

static bool same(const kv_blocks *b, int32_t id, uint64_t key, uint64_t parent, const int32_t *tokens)
{
    return b->key[id] == key && b->parent[id] == parent &&
           !memcmp(b->tokens + (int64_t)id * b->bs, tokens, (size_t)b->bs * sizeof *tokens);
}

static int32_t table_find(const kv_blocks *b, uint64_t key, uint64_t parent, const int32_t *tokens)
{
    for (int64_t i = slot_of(b, key), k = 0; k < b->table_n; k++, i = (i + 1) % b->table_n) {
        const int32_t id = b->table[i];
        if (id == SLOT_EMPTY) return -1;
        if (id >= 0 && same(b, id, key, parent, tokens)) return id;
    }
    return -1;
}

/* ---- the LRU list of cached blocks ---------------------------------------- */

static void lru_unlink(kv_blocks *b, int32_t id)
{
    if (b->prev[id] >= 0) b->next[b->prev[id]] = b->next[id];
    else b->lru_head = b->next[id];
    if (b->next[id] >= 0) b->prev[b->next[id]] = b->prev[id];
    else b->lru_tail = b->prev[id];
    b->n_cached--;
}

static void lru_push(kv_blocks *b, int32_t id)   /* most recently used */
{
    b->prev[id] = b->lru_tail;
    b->next[id] = -1;
    if (b->lru_tail >= 0) b->next[b->lru_tail] = id;
    else b->lru_head = id;
    b->lru_tail = id;
    b->n_cached++;
}

/* ---- blocks ----------------------------------------------------------------- */

int32_t kvb_alloc(kv_blocks *b)
{
    int32_t id;
    if (b->n_free > 0) id = b->free_stack[--b->n_free];
    else if (b->lru_head >= 0) {   /* the least recently used prefix is forgotten */
        id = b->lru_head;
        lru_unlink(b, id);
        table_remove(b, id);
    } else return -1;
    b->ref[id] = 1;
    b->n_used++;
    return id;
}

void kvb_release(kv_blocks *b, int32_t id)
{
    if (id < 0 || id >= b->n || b->ref[id] <= 0) return;
    if (--b->ref[id] > 0) return;
    b->n_used--;
    if (b->keyed[id]) lru_push(b, id);
    else b->free_stack[b->n_free++] = id;
}

void kvb_publish(kv_blocks *b, int32_t id, uint64_t key, uint64_t parent, const int32_t *tokens)
{
    if (id < 0 || id >= b->n || b->keyed[id] || table_find(b, key, parent, tokens) >= 0) return;
    int64_t i = slot_of(b, key);
    while (b->table[i] >= 0) i = (i + 1) % b->table_n;   /* at most n keys in 2n + 1 slots */
    b->table[i] = id;
    b->keyed[id] = true;
    b->key[id] = key;
    b->parent[id] = parent;
    memcpy(b->tokens + (int64_t)id * b->bs, tokens, (size_t)b->bs * sizeof *tokens);
}

int32_t kvb_lookup(kv_blocks *b, uint64_t key, uint64_t parent, const int32_t *tokens)
{
    const int32_t id = table_find(b, key, parent, tokens);
    if (id < 0) return -1;
    if (b->ref[id] == 0) {   /* cached: held again */
        lru_unlink(b, id);
        b->n_used++;
    }
    b->ref[id]++;
    return id;
}

int64_t kvb_total(const kv_blocks *b) { return b->n; }
int64_t kvb_used(const kv_blocks *b) { return b->n_used; }
int64_t kvb_cached(const kv_blocks *b) { return b->n_cached; }
int64_t kvb_available(const kv_blocks *b) { return b->n_free + b->n_cached; }

void kvb_clear_cache(kv_blocks *b)
{
    while (b->lru_head >= 0) {
        const int32_t id = b->lru_head;
        lru_unlink(b, id);
        table_remove(b, id);
        b->free_stack[b->n_free++] = id;
    }
}

bool kvb_consistent(const kv_blocks *b)
{
    int64_t held = 0, cached = 0;
    for (int64_t i = 0; i < b->n; i++) {
        if (b->ref[i] < 0) return false;
        held += b->ref[i] > 0;
    }
    for (int32_t id = b->lru_head; id >= 0; id = b->next[id]) {
        if (b->ref[id] != 0 || !b->keyed[id] || ++cached > b->n) return false;
    }
    for (int64_t i = 0; i < b->n_free; i++)
        if (b->ref[b->free_stack[i]] != 0 || b->keyed[b->free_stack[i]]) return false;
    return held == b->n_used && cached == b->n_cached && held + cached + b->n_free == b->n;
}
