/* host_memory.c — pinned host memory (wk_host_alloc / wk_host_free). The
 * backend allocates it (page-locked on a GPU, aligned malloc on the cpu)
 * and uses it to copy without staging; the core keeps a list of the
 * blocks handed out, so that wk_host_free needs only the pointer, finds
 * the device that made it, and turns a pointer it did not hand out into
 * an error instead of a crash. Blocks are few and large: a list is
 * enough. See include/wick.h. */
#include <stdlib.h>
#include "core.h"

typedef struct host_block {
    void *ptr;
    size_t bytes;
    wk_device *dev;          /* retained until the block is freed */
} host_block;

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block *blocks;
static size_t n_blocks, cap_blocks;

/* Add a block to the list; false when the list cannot grow. */
static bool list_add(void *p, size_t bytes, wk_device *dev)
{
    pthread_mutex_lock(&host_lock);
    bool ok = true;
    if (n_blocks == cap_blocks) {
        size_t cap = cap_blocks ? 2 * cap_blocks : 16;
        host_block *nb = realloc(blocks, cap * sizeof *nb);
        if (nb) blocks = nb, cap_blocks = cap;
        else ok = false;
    }
    if (ok) blocks[n_blocks++] = (host_block){ p, bytes, dev };
    pthread_mutex_unlock(&host_lock);
    return ok;
}

void *wk_host_alloc(wk_device *dev, size_t bytes)
{
    WK_ENTER("host_alloc");
    void *p = NULL;
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "NULL device");
    } else if (!dev->be->host_alloc || !dev->be->host_free) {
        wk_error(WK_ERR_UNSUPPORTED, "device %s has no pinned host memory", dev->name);
    } else if (dev->be->host_alloc(dev->ctx, bytes ? bytes : 1, &p) != WK_OK) {
        p = NULL;                                  /* the backend set the error */
    } else if (!p) {
        wk_error(WK_ERR_MEMORY, "cannot allocate %zu bytes of pinned host memory on %s", bytes, dev->name);
    } else if (!list_add(p, bytes, wk_device_retain(dev))) {
        dev->be->host_free(dev->ctx, p);
        wk_device_release(dev);
        p = NULL;
        wk_error(WK_ERR_MEMORY, "out of host memory");
    }
    WK_LEAVE();
    return p;
}

bool wk_host_range_pinned(const wk_device *dev, const void *p, size_t bytes)
{
    const uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    bool in = false;
    pthread_mutex_lock(&host_lock);
    for (size_t i = 0; i < n_blocks && !in && hi >= lo; i++)
        in = blocks[i].dev->be == dev->be && lo >= (uintptr_t)blocks[i].ptr &&
             hi <= (uintptr_t)blocks[i].ptr + blocks[i].bytes;
    pthread_mutex_unlock(&host_lock);
    return in;
}

void wk_host_free(void *ptr)
{
    if (!ptr) return;
    host_block b = { NULL, 0, NULL };
    pthread_mutex_lock(&host_lock);
    for (size_t i = 0; i < n_blocks; i++) {
        if (blocks[i].ptr == ptr) {
            b = blocks[i];
            blocks[i] = blocks[--n_blocks];
            break;
        }
    }
    pthread_mutex_unlock(&host_lock);
    if (!b.ptr) {
        WK_ENTER("host_free");
        wk_error(WK_ERR_ARGUMENT, "%p is not a block wk_host_alloc returned (or it was freed already)", ptr);
        WK_LEAVE();
        return;
    }
    b.dev->be->host_free(b.dev->ctx, b.ptr);
    wk_device_release(b.dev);
}
