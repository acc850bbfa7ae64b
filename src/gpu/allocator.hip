/* allocator.hip — device memory for the GPU backend: a caching,
 * stream-ordered allocator; host transfers through pinned staging
 * buffers, or straight from and to pinned host memory (wk_host_alloc).
 *
 * Allocator: cudaMalloc/hipMalloc are slow and synchronize; model code
 * allocates and frees thousands of temporaries. Freed blocks go to a cache
 * and are handed out again by size class: sizes up to 4 KiB round up to
 * 512 bytes, then 8 classes per power of two (at most 12.5% slack); above
 * 64 MiB sizes round to 2 MiB and a free block is reused when it is at
 * most 12.5% larger than asked. Every op of a context runs on its one
 * stream, so a block freed after the launches that use it can be handed
 * to later launches on that stream without waiting (stream order). When
 * the runtime runs out of memory the cache is emptied (after the stream
 * drains) and the allocation retried once; then WK_ERR_MEMORY.
 *
 * Staging: two pinned chunks of 4 MiB per context (allocated at the first
 * transfer). write copies host data into a chunk and queues the DMA, so it
 * returns as soon as the host data is copied; the next chunk fills while
 * the previous one transfers. read queues chunk i+1 before copying chunk i
 * out. Without pinned memory, transfers fall back to plain synchronous
 * copies.
 *
 * Pinned host memory (wk_host_alloc): blocks from hipHostMalloc, portable
 * (pinned for every device of this plugin), listed by address range in
 * one list shared by every context. write and read look the host range
 * up there (a binary search under a mutex: cheap next to any copy, and
 * exact, unlike asking the runtime about one pointer, which cannot tell
 * whether the whole range is pinned and whose answer differs between
 * HIP versions). A range inside one block is copied straight, with one
 * async copy on the stream and a wait for it: write must not return
 * before the caller may reuse the block, read before the data is there.
 * read_async (wk_to_host_async) takes pinned ranges only and queues the
 * copy without the wait.
 */
#include "gpu_internal.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define AL_SMALL_MAX 4096u
#define AL_LARGE_MIN ((size_t)64 << 20)
#define AL_LARGE_STEP ((size_t)2 << 20)
#define AL_CLASSES (8 + 52 * 8)
#define AL_STAGE_CHUNK ((size_t)4 << 20)

typedef struct al_block {
    void *ptr;
    size_t size;              /* rounded size actually allocated     */
    int cls;                  /* size class; -1 for large blocks      */
    struct al_block *next;
    struct wk_gpu_graph_mem *graph;   /* the graph record owning it, or NULL */
    bool held;                /* freed, kept for its graph (in no list) */
} al_block;

/* A graph's blocks (wk_gpu_mem_capture_begin): every one it owns, live
 * or held. */
struct wk_gpu_graph_mem {
    al_block **v;
    size_t n, cap;
};

struct wk_gpu_pool {
    pthread_mutex_t lock;
    al_block *free_cls[AL_CLASSES];
    al_block *free_large;
    al_block **live;          /* hash of blocks in use, by pointer    */
    size_t live_cap, live_n;
    uint64_t cached, in_use;
    struct wk_gpu_graph_mem *capture;   /* the recording's record, or NULL */
};

struct wk_gpu_staging {
    pthread_mutex_t lock;
    int state;                /* 0 not tried, 1 ready, -1 unavailable */
    void *buf[2];
    hipEvent_t ev[2];
};

static bool al_graph_own(struct wk_gpu_graph_mem *g, al_block *b);

/* ---- size classes ------------------------------------------------------ */

static size_t al_round(size_t b, int *cls)
{
    if (b <= AL_SMALL_MAX) {
        size_t r = b ? (b + 511) & ~(size_t)511 : 512;
        *cls = (int)(r / 512) - 1;
        return r;
    }
    if (b > AL_LARGE_MIN) {
        *cls = -1;
        return (b + AL_LARGE_STEP - 1) & ~(AL_LARGE_STEP - 1);
    }
    int p = 63 - __builtin_clzll((unsigned long long)(b - 1));   /* 2^p < b <= 2^(p+1) */
    size_t step = (size_t)1 << (p - 3);
    size_t k = (b - ((size_t)1 << p) + step - 1) / step;         /* 1..8 */
    *cls = 8 + (p - 12) * 8 + (int)(k - 1);
    return ((size_t)1 << p) + k * step;
}

/* ---- the live-block hash ------------------------------------------------- */

static size_t al_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p >> 8;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 20) & (cap - 1);
}

static bool al_live_grow(wk_gpu_pool *pl)
{
    size_t cap = pl->live_cap ? pl->live_cap * 2 : 1024;
    al_block **t = (al_block **)calloc(cap, sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < pl->live_cap; i++) {
        al_block *b = pl->live[i];
        while (b) {
            al_block *nx = b->next;
            size_t h = al_hash(b->ptr, cap);
            b->next = t[h];
            t[h] = b;
            b = nx;
        }
    }
    free(pl->live);
    pl->live = t;
    pl->live_cap = cap;
    return true;
}

static al_block *al_live_take(wk_gpu_pool *pl, void *p)
{
    if (!pl->live_cap) return NULL;
    al_block **pp = &pl->live[al_hash(p, pl->live_cap)];
    for (; *pp; pp = &(*pp)->next) {
        if ((*pp)->ptr == p) {
            al_block *b = *pp;
            *pp = b->next;
            b->next = NULL;
            pl->live_n--;
            return b;
        }
    }
    return NULL;
}

/* ---- the cache ------------------------------------------------------------- */

static al_block *al_cache_take(wk_gpu_pool *pl, size_t r, int cls)
{
    if (cls >= 0) {
        al_block *b = pl->free_cls[cls];
        if (b) pl->free_cls[cls] = b->next;
        return b;
    }
    al_block **best = NULL;
    for (al_block **pp = &pl->free_large; *pp; pp = &(*pp)->next)
        if ((*pp)->size >= r && (*pp)->size - r <= r / 8 && (!best || (*pp)->size < (*best)->size)) best = pp;
    if (!best) return NULL;
    al_block *b = *best;
    *best = b->next;
    return b;
}

/* Free every cached block (the caller holds the lock; the stream is idle). */
static wk_status al_release_cached(wk_gpu_pool *pl)
{
    wk_status st = WK_OK;
    for (int k = -1; k < AL_CLASSES; k++) {
        al_block **head = k < 0 ? &pl->free_large : &pl->free_cls[k];
        while (*head) {
            al_block *b = *head;
            *head = b->next;
            WK_GPU_TRY(st, hipFree(b->ptr));
            pl->cached -= b->size;
            free(b);
        }
    }
    return st;
}

wk_status wk_gpu_pool_create(wk_gpu_ctx *c)
{
    wk_gpu_pool *pl = (wk_gpu_pool *)calloc(1, sizeof *pl);
    wk_gpu_staging *sg = (wk_gpu_staging *)calloc(1, sizeof *sg);
    if (!pl || !sg || !al_live_grow(pl)) {
        free(pl);
        free(sg);
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory creating the device allocator");
    }
    pthread_mutex_init(&pl->lock, NULL);
    pthread_mutex_init(&sg->lock, NULL);
    c->pool = pl;
    c->staging = sg;
    return WK_OK;
}

void wk_gpu_pool_destroy(wk_gpu_ctx *c)
{
    wk_gpu_pool *pl = c->pool;
    if (!pl) return;
    (void)al_release_cached(pl);
    for (size_t i = 0; i < pl->live_cap; i++) {
        while (pl->live[i]) {                  /* blocks never freed: give them back */
            al_block *b = pl->live[i];
            pl->live[i] = b->next;
            (void)hipFree(b->ptr);
            free(b);
        }
    }
    (void)hipGetLastError();
    free(pl->live);
    pthread_mutex_destroy(&pl->lock);
    free(pl);
    c->pool = NULL;
}

wk_status wk_gpu_mem_alloc(wk_gpu_ctx *c, size_t bytes, void **ptr)
{
    wk_gpu_pool *pl = c->pool;
    *ptr = NULL;
    if (bytes == 0) return WK_OK;
    if (bytes > ((size_t)1 << 60))
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "cannot allocate %zu bytes on %s:%d", bytes,
                                      WK_GPU_PLATFORM, c->device);
    int cls;
    size_t r = al_round(bytes, &cls);
    pthread_mutex_lock(&pl->lock);
    if (pl->live_n + 1 > pl->live_cap && !al_live_grow(pl)) {
        pthread_mutex_unlock(&pl->lock);
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory in the device allocator");
    }
    al_block *b = al_cache_take(pl, r, cls);
    if (b) {
        pl->cached -= b->size;
    } else {
        b = (al_block *)malloc(sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&pl->lock);
            return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory in the device allocator");
        }
        b->size = r;
        b->cls = cls;
        b->graph = NULL;
        b->held = false;
        /* only a miss calls the runtime, so only a miss makes the device
         * current (rt_alloc does not enter); hipSetDevice, which also
         * makes its primary context current, where the memory must be */
        hipError_t e = hipSetDevice(c->device);
        if (e != hipSuccess) {
            free(b);
            pthread_mutex_unlock(&pl->lock);
            return wk_gpu_fail(c, e, "hipSetDevice(c->device)", __FILE__, __LINE__);
        }
        e = hipMalloc(&b->ptr, r);
        if (e == hipErrorOutOfMemory && pl->cached) {
            /* empty the cache once the stream has drained, then retry */
            (void)hipGetLastError();
            wk_status st = WK_OK;
            WK_GPU_TRY(st, hipStreamSynchronize(c->stream));
            if (st == WK_OK) st = al_release_cached(pl);
            if (st != WK_OK) {
                free(b);
                pthread_mutex_unlock(&pl->lock);
                return st;
            }
            e = hipMalloc(&b->ptr, r);
        }
        if (e != hipSuccess) {
            free(b);
            uint64_t in_use = pl->in_use;
            pthread_mutex_unlock(&pl->lock);
            (void)hipGetLastError();            /* not sticky: clear it */
            if (e == hipErrorOutOfMemory)
                return wk_gpu_host->set_error(WK_ERR_MEMORY,
                                              "out of device memory on %s:%d allocating %zu bytes (%llu bytes in use by wick)",
                                              WK_GPU_PLATFORM, c->device, bytes, (unsigned long long)in_use);
            return wk_gpu_fail(c, e, "hipMalloc(&b->ptr, r)", __FILE__, __LINE__);
        }
    }
    if (pl->capture && !al_graph_own(pl->capture, b)) {
        al_block **head = b->cls < 0 ? &pl->free_large : &pl->free_cls[b->cls];
        b->next = *head;
        *head = b;
        pl->cached += b->size;
        pthread_mutex_unlock(&pl->lock);
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory in the device allocator");
    }
    size_t h = al_hash(b->ptr, pl->live_cap);
    b->next = pl->live[h];
    pl->live[h] = b;
    pl->live_n++;
    pl->in_use += b->size;
    *ptr = b->ptr;
    pthread_mutex_unlock(&pl->lock);
    return WK_OK;
}

void wk_gpu_mem_free(wk_gpu_ctx *c, void *ptr)
{
    if (!ptr) return;
    wk_gpu_pool *pl = c->pool;
    pthread_mutex_lock(&pl->lock);
    al_block *b = al_live_take(pl, ptr);
    if (b) {
        pl->in_use -= b->size;
        /* a graph's block, or one freed while recording (the recorded
           work may still use it at every replay): kept for the graph */
        if (!b->graph && pl->capture && !al_graph_own(pl->capture, b)) {
            /* no host memory to record it: lost, rather than handed out
               while the graph may still write it */
            pthread_mutex_unlock(&pl->lock);
            return;
        }
        if (b->graph) {
            b->held = true;
        } else {
            pl->cached += b->size;
            al_block **head = b->cls < 0 ? &pl->free_large : &pl->free_cls[b->cls];
            b->next = *head;
            *head = b;
        }
    }
    pthread_mutex_unlock(&pl->lock);
    if (!b)
        wk_gpu_host->set_error(WK_ERR_ARGUMENT, "free of %p, which %s:%d did not allocate (or freed already)", ptr,
                               WK_GPU_PLATFORM, c->device);
}

/* ---- graphs' blocks ---------------------------------------------------------- */

/* Add b to g (the caller holds the pool's lock); false when out of host memory. */
static bool al_graph_own(struct wk_gpu_graph_mem *g, al_block *b)
{
    if (g->n == g->cap) {
        const size_t cap = g->cap ? 2 * g->cap : 256;
        al_block **v = (al_block **)realloc(g->v, cap * sizeof *v);
        if (!v) return false;
        g->v = v, g->cap = cap;
    }
    g->v[g->n++] = b;
    b->graph = g;
    return true;
}

wk_status wk_gpu_mem_capture_begin(wk_gpu_ctx *c)
{
    wk_gpu_pool *pl = c->pool;
    struct wk_gpu_graph_mem *g = (struct wk_gpu_graph_mem *)calloc(1, sizeof *g);
    if (!g) return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory for a graph");
    pthread_mutex_lock(&pl->lock);
    const bool busy = pl->capture != NULL;
    if (!busy) pl->capture = g;
    pthread_mutex_unlock(&pl->lock);
    if (busy) {
        free(g);
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s:%d is recording a graph already", WK_GPU_PLATFORM, c->device);
    }
    return WK_OK;
}

struct wk_gpu_graph_mem *wk_gpu_mem_capture_end(wk_gpu_ctx *c)
{
    wk_gpu_pool *pl = c->pool;
    pthread_mutex_lock(&pl->lock);
    struct wk_gpu_graph_mem *g = pl->capture;
    pl->capture = NULL;
    pthread_mutex_unlock(&pl->lock);
    return g;
}

void wk_gpu_mem_graph_release(wk_gpu_ctx *c, struct wk_gpu_graph_mem *g)
{
    if (!g) return;
    wk_gpu_pool *pl = c->pool;
    pthread_mutex_lock(&pl->lock);
    for (size_t i = 0; i < g->n; i++) {
        al_block *b = g->v[i];
        b->graph = NULL;
        if (!b->held) continue;            /* still in use: an ordinary block now */
        b->held = false;
        pl->cached += b->size;
        al_block **head = b->cls < 0 ? &pl->free_large : &pl->free_cls[b->cls];
        b->next = *head;
        *head = b;
    }
    pthread_mutex_unlock(&pl->lock);
    free(g->v);
    free(g);
}

wk_status wk_gpu_mem_trim(wk_gpu_ctx *c)
{
    WK_GPU_ENTER(c);
    WK_GPU_CHECK_C(c, hipStreamSynchronize(c->stream));
    pthread_mutex_lock(&c->pool->lock);
    wk_status st = al_release_cached(c->pool);
    pthread_mutex_unlock(&c->pool->lock);
    return st;
}

uint64_t wk_gpu_mem_cached(wk_gpu_ctx *c)
{
    pthread_mutex_lock(&c->pool->lock);
    uint64_t n = c->pool->cached;
    pthread_mutex_unlock(&c->pool->lock);
    return n;
}

/* ---- pinned host memory -------------------------------------------------------- */

typedef struct al_pinned {
    uintptr_t lo, hi;         /* [lo, hi): one block                  */
} al_pinned;

static pthread_mutex_t al_pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static al_pinned *al_pinned_v;           /* sorted by lo, disjoint     */
static size_t al_pinned_n, al_pinned_cap;

/* Index of the first block with lo > p (under the lock). */
static size_t al_pinned_upper(uintptr_t p)
{
    size_t a = 0, b = al_pinned_n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (al_pinned_v[m].lo <= p) a = m + 1;
        else b = m;
    }
    return a;
}

/* true when [p, p + bytes) lies inside one block of wk_gpu_host_alloc */
static bool al_is_pinned(const void *p, size_t bytes)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    if (hi < lo) return false;
    pthread_mutex_lock(&al_pinned_lock);
    size_t i = al_pinned_upper(lo);
    bool in = i > 0 && hi <= al_pinned_v[i - 1].hi;
    pthread_mutex_unlock(&al_pinned_lock);
    return in;
}

wk_status wk_gpu_host_alloc(void *ctx, size_t bytes, void **ptr)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    *ptr = NULL;
    WK_GPU_ENTER(c);
    void *p = NULL;
    hipError_t e = hipHostMalloc(&p, bytes, hipHostMallocPortable);
    if (e != hipSuccess || !p) {
        (void)hipGetLastError();
        if (e == hipErrorOutOfMemory || e == hipSuccess)
            return wk_gpu_host->set_error(WK_ERR_MEMORY, "cannot pin %zu bytes of host memory for %s:%d", bytes,
                                          WK_GPU_PLATFORM, c->device);
        return wk_gpu_fail(c, e, "hipHostMalloc(&p, bytes, hipHostMallocPortable)", __FILE__, __LINE__);
    }
    pthread_mutex_lock(&al_pinned_lock);
    if (al_pinned_n == al_pinned_cap) {
        size_t cap = al_pinned_cap ? 2 * al_pinned_cap : 16;
        al_pinned *v = (al_pinned *)realloc(al_pinned_v, cap * sizeof *v);
        if (v) al_pinned_v = v, al_pinned_cap = cap;
    }
    bool ok = al_pinned_n < al_pinned_cap;
    if (ok) {
        size_t i = al_pinned_upper((uintptr_t)p);
        memmove(al_pinned_v + i + 1, al_pinned_v + i, (al_pinned_n - i) * sizeof *al_pinned_v);
        al_pinned_v[i].lo = (uintptr_t)p;
        al_pinned_v[i].hi = (uintptr_t)p + bytes;
        al_pinned_n++;
    }
    pthread_mutex_unlock(&al_pinned_lock);
    if (!ok) {
        (void)hipHostFree(p);
        (void)hipGetLastError();
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory");
    }
    *ptr = p;
    return WK_OK;
}

void wk_gpu_host_free(void *ctx, void *ptr)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (!ptr) return;
    pthread_mutex_lock(&al_pinned_lock);
    size_t i = al_pinned_upper((uintptr_t)ptr);
    bool found = i > 0 && al_pinned_v[i - 1].lo == (uintptr_t)ptr;
    if (found) {
        memmove(al_pinned_v + i - 1, al_pinned_v + i, (al_pinned_n - i) * sizeof *al_pinned_v);
        al_pinned_n--;
    }
    pthread_mutex_unlock(&al_pinned_lock);
    if (!found) {
        wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%p is not pinned memory of the %s plugin", ptr, WK_GPU_PLATFORM);
        return;
    }
    hipError_t e = hipSetDevice(c->device);
    if (e == hipSuccess) e = hipHostFree(ptr);
    if (e != hipSuccess) wk_gpu_fail(c, e, "hipHostFree(ptr)", __FILE__, __LINE__);
}

/* ---- host transfers ---------------------------------------------------------- */

/* Pinned chunks on first use; false when pinned memory is unavailable. */
static bool al_staging_ready(wk_gpu_staging *sg)
{
    if (sg->state == 0) {
        sg->state = -1;
        for (int k = 0; k < 2; k++) {
            if (hipHostMalloc(&sg->buf[k], AL_STAGE_CHUNK, hipHostMallocDefault) != hipSuccess) sg->buf[k] = NULL;
            if (hipEventCreateWithFlags(&sg->ev[k], hipEventDisableTiming) != hipSuccess) sg->ev[k] = NULL;
        }
        if (sg->buf[0] && sg->buf[1] && sg->ev[0] && sg->ev[1]) {
            sg->state = 1;
        } else {
            for (int k = 0; k < 2; k++) {
                if (sg->buf[k]) (void)hipHostFree(sg->buf[k]);
                if (sg->ev[k]) (void)hipEventDestroy(sg->ev[k]);
                sg->buf[k] = NULL;
                sg->ev[k] = NULL;
            }
        }
        (void)hipGetLastError();
    }
    return sg->state == 1;
}

void wk_gpu_staging_destroy(wk_gpu_ctx *c)
{
    wk_gpu_staging *sg = c->staging;
    if (!sg) return;
    for (int k = 0; k < 2; k++) {
        if (sg->ev[k]) {
            (void)hipEventSynchronize(sg->ev[k]);
            (void)hipEventDestroy(sg->ev[k]);
        }
        if (sg->buf[k]) (void)hipHostFree(sg->buf[k]);
    }
    (void)hipGetLastError();
    pthread_mutex_destroy(&sg->lock);
    free(sg);
    c->staging = NULL;
}

static wk_status al_write_locked(wk_gpu_ctx *c, wk_gpu_staging *sg, char *dst, const char *host, size_t bytes)
{
    if (!al_staging_ready(sg)) {
        WK_GPU_CHECK_C(c, hipMemcpyAsync(dst, host, bytes, hipMemcpyHostToDevice, c->stream));
        WK_GPU_CHECK_C(c, hipStreamSynchronize(c->stream));
        return WK_OK;
    }
    for (size_t off = 0, i = 0; off < bytes; off += AL_STAGE_CHUNK, i++) {
        int k = (int)(i & 1);
        size_t n = bytes - off < AL_STAGE_CHUNK ? bytes - off : AL_STAGE_CHUNK;
        WK_GPU_CHECK_C(c, hipEventSynchronize(sg->ev[k]));     /* chunk k free again */
        memcpy(sg->buf[k], host + off, n);
        WK_GPU_CHECK_C(c, hipMemcpyAsync(dst + off, sg->buf[k], n, hipMemcpyHostToDevice, c->stream));
        WK_GPU_CHECK_C(c, hipEventRecord(sg->ev[k], c->stream));
    }
    return WK_OK;
}

wk_status wk_gpu_write(void *ctx, void *dst, const void *host, size_t bytes)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (bytes == 0) return WK_OK;
    WK_GPU_NOT_RECORDING(c, "a copy from the host");
    WK_GPU_ENTER(c);
    if (al_is_pinned(host, bytes)) {         /* one DMA from the caller's block */
        WK_GPU_CHECK_C(c, hipMemcpyAsync(dst, host, bytes, hipMemcpyHostToDevice, c->stream));
        WK_GPU_CHECK_C(c, hipStreamSynchronize(c->stream));   /* the block is the caller's again */
        return WK_OK;
    }
    pthread_mutex_lock(&c->staging->lock);
    wk_status st = al_write_locked(c, c->staging, (char *)dst, (const char *)host, bytes);
    pthread_mutex_unlock(&c->staging->lock);
    return st;
}

static wk_status al_read_locked(wk_gpu_ctx *c, wk_gpu_staging *sg, char *host, const char *src, size_t bytes)
{
    if (!al_staging_ready(sg)) {
        WK_GPU_CHECK_C(c, hipMemcpyAsync(host, src, bytes, hipMemcpyDeviceToHost, c->stream));
        WK_GPU_CHECK_C(c, hipStreamSynchronize(c->stream));
        return WK_OK;
    }
    size_t nchunks = (bytes + AL_STAGE_CHUNK - 1) / AL_STAGE_CHUNK;
    for (size_t i = 0; i <= nchunks; i++) {
        if (i < nchunks) {             /* queue chunk i (its buffer was emptied at i-1) */
            int k = (int)(i & 1);
            size_t off = i * AL_STAGE_CHUNK;
            size_t n = bytes - off < AL_STAGE_CHUNK ? bytes - off : AL_STAGE_CHUNK;
            WK_GPU_CHECK_C(c, hipMemcpyAsync(sg->buf[k], src + off, n, hipMemcpyDeviceToHost, c->stream));
            WK_GPU_CHECK_C(c, hipEventRecord(sg->ev[k], c->stream));
        }
        if (i > 0) {                   /* copy chunk i-1 out */
            size_t j = i - 1;
            int k = (int)(j & 1);
            size_t off = j * AL_STAGE_CHUNK;
            size_t n = bytes - off < AL_STAGE_CHUNK ? bytes - off : AL_STAGE_CHUNK;
            WK_GPU_CHECK_C(c, hipEventSynchronize(sg->ev[k]));
            memcpy(host + off, sg->buf[k], n);
        }
    }
    return WK_OK;
}

wk_status wk_gpu_read(void *ctx, void *host, const void *src, size_t bytes)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (bytes == 0) return WK_OK;
    WK_GPU_NOT_RECORDING(c, "a copy to the host");
    WK_GPU_ENTER(c);
    if (al_is_pinned(host, bytes)) {         /* one DMA into the caller's block */
        WK_GPU_CHECK_C(c, hipMemcpyAsync(host, src, bytes, hipMemcpyDeviceToHost, c->stream));
        WK_GPU_CHECK_C(c, hipStreamSynchronize(c->stream));
        return WK_OK;
    }
    pthread_mutex_lock(&c->staging->lock);
    wk_status st = al_read_locked(c, c->staging, (char *)host, (const char *)src, bytes);
    pthread_mutex_unlock(&c->staging->lock);
    return st;
}

/* backend.h's read_async: one DMA into the caller's pinned block (the
 * core checked that it is one), queued */
wk_status wk_gpu_read_async(void *ctx, void *host, const void *src, size_t bytes)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (bytes == 0) return WK_OK;
    WK_GPU_NOT_RECORDING(c, "a copy to the host");
    WK_GPU_ENTER(c);
    WK_GPU_CHECK_C(c, hipMemcpyAsync(host, src, bytes, hipMemcpyDeviceToHost, c->stream));
    return WK_OK;
}
