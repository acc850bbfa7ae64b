/* gpu_context.h — the device context (one stream per context), error checking
 * of runtime calls and launches, and the caching allocator's interface.
 * Part of the GPU backend's shared headers: include gpu_internal.h. */
#ifndef WICK_GPU_GPU_CONTEXT_H
#define WICK_GPU_GPU_CONTEXT_H

#include "compat.h"
#include <stddef.h>
#include <stdint.h>
#include "../backend.h"
#include "gpu_entry.h"

/* ------------------------------------------------------------------ */
/* Context                                                             */

/* Per-context state of other files (kept opaque here), freed at close. */
enum { WK_GPU_EXT_BLAS = 0, WK_GPU_EXT_INDEX = 1, WK_GPU_EXT_ATTN = 2, WK_GPU_EXT_PAGED = 3, WK_GPU_EXT_SLOTS = 4 };   /* matmul.hip, index.hip, attention.hip, paged_attention.hip */

struct wk_gpu_pool;       /* allocator.hip */
struct wk_gpu_staging;    /* allocator.hip */

typedef struct wk_gpu_ctx {
    int device;                  /* runtime device index                  */
    hipStream_t stream;          /* every op of this context runs here    */
    int warp_size;               /* 32 or 64: picks the W instantiation
                                    (64 in the virtual-wave64 build)      */
    int hw_warp_size;            /* what the hardware reports             */
    int sm_count;                /* multiprocessors / compute units       */
    int max_threads_per_block;
    int max_threads_per_sm;
    int stream_block;            /* threads per streaming-kernel block    */
    size_t shared_per_block;     /* bytes of static+dynamic shared memory */
    size_t l2_bytes;
    int cc_major, cc_minor;      /* NVIDIA compute capability (0 on AMD)  */
    char arch[64];               /* "sm_90", "gfx90a", ...                */
    char model[128];
    int sync_launches;           /* WICK_GPU_SYNC=1: sync after launches  */
    int multi_device;            /* the process sees more than one device */
    int recording;               /* a graph is being recorded on stream
                                    (graph.hip): no host waits          */
    const char *last_op;         /* op of the last launch, for errors that
                                    surface later: a string constant (the
                                    core's op name, else the kernel's);
                                    NULL before the first. Any thread may
                                    launch: read and written atomically  */
    hipEvent_t order_ev;         /* stream_order's event, reused (taken
                                    and put back atomically: NULL while a
                                    thread holds it)                      */
    struct wk_gpu_pool *pool;
    struct wk_gpu_staging *staging;
    void *ext[WK_GPU_EXT_SLOTS];
    void (*ext_free[WK_GPU_EXT_SLOTS])(struct wk_gpu_ctx *c, void *state);
} wk_gpu_ctx;

/* The op's name as the core spells it (the plugin does not link the
 * core's wk_op_name), for error messages and last_op. */
static inline const char *wk_gpu_op_name(wk_op op)
{
    static const char *const names[] = {
#define WK_GPU_OPNAME_(K, N, S, P, D) S,
        WK_OP_LIST(WK_GPU_OPNAME_)
#undef WK_GPU_OPNAME_
    };
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */

/* Report a failed runtime call: "<call> failed: <name>: <text> (file:line)"
 * plus the last launched op when the error may be a late kernel fault.
 * Returns WK_ERR_BACKEND (WK_ERR_MEMORY for out-of-memory). */
wk_status wk_gpu_fail(wk_gpu_ctx *c, hipError_t err, const char *call, const char *file, int line);
/* Same for a library call (BLAS) whose status is not a hipError_t. */
wk_status wk_gpu_fail_lib(const char *call, const char *what, long code, const char *file, int line);

/* Check a HIP/CUDA call; on failure report it and return its status from
 * the calling function. WK_GPU_CHECK_C also names the context, so that
 * the message carries the last launched op (for syncs and copies, where
 * an earlier kernel's fault surfaces). */
#define WK_GPU_CHECK(call)                                                   \
    do {                                                                     \
        hipError_t wk_e_ = (call);                                           \
        if (wk_e_ != hipSuccess) return wk_gpu_fail(NULL, wk_e_, #call, __FILE__, __LINE__); \
    } while (0)
#define WK_GPU_CHECK_C(c, call)                                              \
    do {                                                                     \
        hipError_t wk_e_ = (call);                                           \
        if (wk_e_ != hipSuccess) return wk_gpu_fail((c), wk_e_, #call, __FILE__, __LINE__); \
    } while (0)
/* For cleanup paths: run call only while st is WK_OK; record a failure. */
#define WK_GPU_TRY(st, call)                                                 \
    do {                                                                     \
        if ((st) == WK_OK) {                                                 \
            hipError_t wk_e_ = (call);                                       \
            if (wk_e_ != hipSuccess) (st) = wk_gpu_fail(NULL, wk_e_, #call, __FILE__, __LINE__); \
        }                                                                    \
    } while (0)

/* After every kernel launch: catches bad launch configurations at once
 * (and, with WICK_GPU_SYNC=1, faults, by synchronizing); remembers the
 * op for errors that surface at a later sync. `what` names the kernel. */
wk_status wk_gpu_launched(wk_gpu_ctx *c, const char *what, const char *file, int line);
#define WK_GPU_LAUNCH_CHECK(c, what)                                         \
    do {                                                                     \
        wk_status wk_s_ = wk_gpu_launched((c), (what), __FILE__, __LINE__); \
        if (wk_s_ != WK_OK) return wk_s_;                                    \
    } while (0)

/* Make c's device current on this thread: every entry point that calls
 * the runtime, first. The current device belongs to the thread, and the
 * caller or another library may change it between wick's calls, so it is
 * checked at every entry, never remembered: in a process that sees one
 * device no other can be current (no call at all); with several,
 * hipGetDevice, and hipSetDevice only when another device is current.
 * wick works in each device's primary context (the runtime's): a thread
 * that made another context current through the driver API gets launch
 * errors until it makes the primary one current again. */
wk_status wk_gpu_enter(wk_gpu_ctx *c);
#define WK_GPU_ENTER(c)                                                      \
    do {                                                                     \
        if ((c)->multi_device) {                                             \
            wk_status wk_s_ = wk_gpu_enter(c);                               \
            if (wk_s_ != WK_OK) return wk_s_;                                \
        }                                                                    \
    } while (0)

/* What cannot happen while c records a graph (host transfers and
 * waits): a clear error instead of the runtime's invalidated capture. */
#define WK_GPU_NOT_RECORDING(c, what)                                        \
    do {                                                                     \
        if ((c)->recording)                                                  \
            return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s on %s:%d while it records a graph (wk_graph_begin)", \
                                          (what), WK_GPU_PLATFORM, (c)->device); \
    } while (0)

/* ------------------------------------------------------------------ */
/* Memory (allocator.hip)                                              */

/* Device memory from the context's cache (size-classed; blocks freed
 * earlier on this stream are reused). On out-of-memory the cache is
 * emptied and the allocation retried once; then WK_ERR_MEMORY. bytes == 0
 * gives NULL. Alignment: 256 bytes. */
wk_status wk_gpu_mem_alloc(wk_gpu_ctx *c, size_t bytes, void **ptr);
/* Return a block to the cache (stream-ordered: later work may reuse it). */
void wk_gpu_mem_free(wk_gpu_ctx *c, void *ptr);
/* Give every cached free block back to the runtime. */
wk_status wk_gpu_mem_trim(wk_gpu_ctx *c);
/* Bytes held in the cache, free for reuse. */
uint64_t wk_gpu_mem_cached(wk_gpu_ctx *c);
wk_status wk_gpu_pool_create(wk_gpu_ctx *c);
/* Graphs (graph.hip): between capture_begin and capture_end every block
 * allocated, and every block freed, belongs to the recording's record,
 * and a block of a record goes back to the cache only at graph_release
 * (a replay rewrites what the recording used; nothing else may get it
 * meanwhile). Blocks still live at release become ordinary ones. */
struct wk_gpu_graph_mem;
wk_status wk_gpu_mem_capture_begin(wk_gpu_ctx *c);
struct wk_gpu_graph_mem *wk_gpu_mem_capture_end(wk_gpu_ctx *c);
void wk_gpu_mem_graph_release(wk_gpu_ctx *c, struct wk_gpu_graph_mem *g);
void wk_gpu_pool_destroy(wk_gpu_ctx *c);

/* Scratch for an op: the same memory, named for intent. Free it right
 * after the launches that use it (see "Streams" above). */
static inline wk_status wk_gpu_scratch_alloc(wk_gpu_ctx *c, size_t bytes, void **ptr)
{
    return wk_gpu_mem_alloc(c, bytes, ptr);
}
static inline void wk_gpu_scratch_free(wk_gpu_ctx *c, void *ptr) { wk_gpu_mem_free(c, ptr); }

/* Host transfers through pinned staging buffers: write returns once the
 * host data is copied out; read waits for the data (allocator.hip). A
 * host range inside a block of wk_gpu_host_alloc is copied directly. */
/* wk_gpu_write, wk_gpu_read: declared in gpu_entry.h (C linkage) */
void wk_gpu_staging_destroy(wk_gpu_ctx *c);
#endif /* WICK_GPU_GPU_CONTEXT_H */
