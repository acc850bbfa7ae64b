/* cpu_backend.c — the CPU backend's vtable: device functions (host memory
 * is the device memory), events (host timestamps), the op table that
 * wires each op (src/op_list.h) to the kernels of the other files of
 * src/cpu/, with the dtypes it takes (the fused products, LINEAR family,
 * run as their two ops: src/fused.h), and the environment knobs its ops
 * consult, read when the backend is made and by env_refresh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include "cpu_internal.h"
#include "../fused.h"

const wk_host_api *wk_cpu_host;

/* ---- the op table ------------------------------------------------------
 * One entry per op the cpu implements, indexed by wk_op: its run function
 * (the adapters below unpack a wk_op_args for the kernels of the other
 * files) and the dtypes it takes, which are the reference sets of
 * src/op_list.h: the families the list describes fill themselves from it,
 * so a new unary op needs no line here. */

static wk_status run_unary(void *ctx, const wk_op_args *a)
{
    return wk_cpu_unary(ctx, a->op, a->dst, a->src[0], a->p[0], a->p[1]);
}
static wk_status run_binary(void *ctx, const wk_op_args *a)
{
    return wk_cpu_binary(ctx, a->op, a->dst, a->src[0], a->src[1]);
}
static wk_status run_where(void *ctx, const wk_op_args *a)
{
    return wk_cpu_where_cond(ctx, a->dst, a->src[0], a->src[1], a->src[2]);
}
static wk_status run_reduce(void *ctx, const wk_op_args *a)
{
    return wk_cpu_reduce(ctx, a->op, a->dst, a->src[0], a->dim_mask);
}
static wk_status run_matmul(void *ctx, const wk_op_args *a) { return wk_cpu_matmul(ctx, a->dst, a->src[0], a->src[1]); }
static wk_status run_index_select(void *ctx, const wk_op_args *a)
{
    return wk_cpu_index_select(ctx, a->dst, a->src[0], a->src[1], a->dim);
}
static wk_status run_gather(void *ctx, const wk_op_args *a)
{
    return wk_cpu_gather(ctx, a->dst, a->src[0], a->src[1], a->dim);
}
static wk_status run_scatter(void *ctx, const wk_op_args *a)
{
    return wk_cpu_scatter(ctx, a->op, a->dst, a->src[0], a->src[1], a->dim);
}
static wk_status run_index_add(void *ctx, const wk_op_args *a)
{
    return wk_cpu_index_add(ctx, a->dst, a->src[0], a->src[1], a->dim);
}
static wk_status run_copy(void *ctx, const wk_op_args *a) { return wk_cpu_copy(ctx, a->dst, a->src[0]); }
static wk_status run_copy2d(void *ctx, const wk_op_args *a)
{
    const wk_view *d = a->dst, *s = a->src[0];
    return wk_cpu_copy2d(ctx, d->base, s->base, d->dtype, d->dims[0], d->dims[1], d->strides[0], s->strides[0],
                         d->offset, s->offset);
}
static wk_status run_const_set(void *ctx, const wk_op_args *a) { return wk_cpu_const_set(ctx, a->dst, a->value); }
static wk_status run_rand(void *ctx, const wk_op_args *a)
{
    return a->op == WK_OP_RAND_UNIFORM ? wk_cpu_rand_uniform(ctx, a->dst, a->seed, a->offset, a->p[0], a->p[1])
                                       : wk_cpu_rand_normal(ctx, a->dst, a->seed, a->offset, a->p[0], a->p[1]);
}

/* run function of each family the list describes (NULL: none here) */
/* LINEAR: the product into a buffer, then the op after it, through this
 * table (fused.h): the cpu has no one-pass kernel, so its bits are those
 * of its matmul and of that op */
static const wk_op_impl cpu_ops[WK_OP_COUNT];
static wk_status cpu_alloc(void *ctx, size_t bytes, void **ptr);
static void cpu_free(void *ctx, void *ptr);
static wk_status run_linear(void *ctx, const wk_op_args *a)
{
    void *y = NULL;
    wk_status st = cpu_alloc(ctx, wk_linear_y_bytes(a), &y);
    if (st == WK_OK) st = wk_linear_composed(cpu_ops, ctx, a, y);
    cpu_free(ctx, y);
    return st;
}

#define FAMILY_RUN_UNARY run_unary
#define FAMILY_RUN_BINARY run_binary
#define FAMILY_RUN_CMP run_binary
#define FAMILY_RUN_WHERE run_where
#define FAMILY_RUN_REDUCE run_reduce
#define FAMILY_RUN_MATMUL run_matmul
#define FAMILY_RUN_INDEX_SELECT run_index_select
#define FAMILY_RUN_GATHER run_gather
#define FAMILY_RUN_SCATTER run_scatter
#define FAMILY_RUN_INDEX_ADD run_index_add
#define FAMILY_RUN_COPY run_copy
#define FAMILY_RUN_COPY2D run_copy2d
#define FAMILY_RUN_CONST_SET run_const_set
#define FAMILY_RUN_RAND run_rand
#define FAMILY_RUN_SOFTMAX wk_cpu_softmax
#define FAMILY_RUN_NORM wk_cpu_norm
#define FAMILY_RUN_ROPE wk_cpu_rope
#define FAMILY_RUN_ROPE_KV wk_cpu_rope_kv
#define FAMILY_RUN_ATTENTION wk_cpu_attention
#define FAMILY_RUN_QCONVERT wk_cpu_qconvert
#define FAMILY_RUN_QMATMUL wk_cpu_qmatmul
#define FAMILY_RUN_QGATHER wk_cpu_qgather
#define FAMILY_RUN_CONV wk_cpu_conv
#define FAMILY_RUN_POOL wk_cpu_pool
#define FAMILY_RUN_UPSAMPLE wk_cpu_upsample
#define FAMILY_RUN_SORT wk_cpu_arg_sort
#define FAMILY_RUN_LINEAR run_linear
#define FAMILY_RUN_PAGED_ATTENTION wk_cpu_paged_attention
#define FAMILY_RUN_RESERVED NULL
#define RUN_OF_U(P) run_unary
#define RUN_OF_P(P) run_unary
#define RUN_OF_B(P) run_binary
#define RUN_OF_C(P) run_binary
#define RUN_OF_R(P) run_reduce
#define RUN_OF_O(P) FAMILY_RUN_##P
#define CPU_ENTRY_(K, N, S, P, D) [WK_OP_##N] = { RUN_OF_##K(P), D, NULL },

static const wk_op_impl cpu_ops[WK_OP_COUNT] = { WK_OP_LIST(CPU_ENTRY_) };

/* ---- device functions ------------------------------------------------ */

static int cpu_device_count(void) { return 1; }

static wk_status cpu_device_open(int index, void **ctx)
{
    if (index != 0) return WK_CPU_ERROR(WK_ERR_DEVICE, "there is one cpu device, not %d", index + 1);
    *ctx = NULL;
    /* the BLAS loaded now, when a program opens the cpu (before its own
       threads, usually), not at the first product: loading may set
       OPENBLAS_CORETYPE (cpu_matmul.c), which is best done early */
    (void)wk_cpu_blas_name();
    return WK_OK;
}

static void cpu_device_close(void *ctx) { (void)ctx; }

static void cpu_model(char *out, size_t n)
{
    snprintf(out, n, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ') p++;
                p[strcspn(p, "\n")] = 0;
                snprintf(out, n, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

static wk_status cpu_device_info(void *ctx, wk_device_info *out)
{
    (void)ctx;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "cpu");
    cpu_model(out->model, sizeof out->model);
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    out->total_memory = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    out->free_memory = avail > 0 && psz > 0 ? (uint64_t)avail * (uint64_t)psz : 0;
    out->compute_units = wk_cpu_num_threads();
    out->warp_size = 1;
    return WK_OK;
}

static wk_status cpu_synchronize(void *ctx) { (void)ctx; return WK_OK; }

/* 64-byte alignment for SIMD. Large buffers are aligned to 2 MiB and
 * asked to use transparent huge pages: a fresh output otherwise takes a
 * page fault every 4 KiB, which costs more than the op that fills it. */
/* The machine's memory and swap, bytes (read once; UINT64_MAX when unknown). */
static uint64_t cpu_memory_limit(void)
{
    static _Atomic uint64_t limit;
    uint64_t v = atomic_load_explicit(&limit, memory_order_relaxed);
    if (v) return v;
    struct sysinfo si;
    v = sysinfo(&si) == 0 && si.mem_unit ? ((uint64_t)si.totalram + (uint64_t)si.totalswap) * si.mem_unit : 0;
    if (!v) v = UINT64_MAX;
    atomic_store_explicit(&limit, v, memory_order_relaxed);
    return v;
}

/* Freed large blocks kept for the next allocation of a like size (at most
 * CACHE_N blocks and CACHE_BYTES in all, process-wide). An LLM's forward
 * frees and allocates the same few sizes every layer; through malloc each
 * such block came back from the kernel as fresh zeroed pages (a third of a
 * prefill's time on the cpu). A block is reused for a request of between
 * half its size and its size, when its address has the alignment asked;
 * an allocation that fails empties the cache and tries again. */
#define CACHE_N 32
#define CACHE_MIN ((size_t)256 << 10)
#define CACHE_BYTES ((size_t)256 << 20)
static struct cached_block {
    void *p;
    size_t n;
} cache[CACHE_N];
static size_t cache_total;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void *cache_take(size_t bytes, size_t align)
{
    void *p = NULL;
    pthread_mutex_lock(&cache_mu);
    int best = -1;
    for (int i = 0; i < CACHE_N; i++)
        if (cache[i].p && cache[i].n >= bytes && cache[i].n / 2 <= bytes && (uintptr_t)cache[i].p % align == 0 &&
            (best < 0 || cache[i].n < cache[best].n))
            best = i;
    if (best >= 0) {
        p = cache[best].p;
        cache_total -= cache[best].n;
        cache[best].p = NULL;
    }
    pthread_mutex_unlock(&cache_mu);
    return p;
}

/* true when p went into the cache */
static bool cache_put(void *p)
{
    const size_t n = malloc_usable_size(p);
    if (n < CACHE_MIN || n > CACHE_BYTES) return false;
    bool kept = false;
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < CACHE_N && !kept; i++)
        if (!cache[i].p && cache_total + n <= CACHE_BYTES) {
            cache[i].p = p, cache[i].n = n;
            cache_total += n;
            kept = true;
        }
    pthread_mutex_unlock(&cache_mu);
    return kept;
}

static void cache_empty(void)
{
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < CACHE_N; i++) {
        free(cache[i].p);
        cache[i].p = NULL;
    }
    cache_total = 0;
    pthread_mutex_unlock(&cache_mu);
}

static wk_status cpu_aligned_alloc(size_t bytes, void **ptr)
{
    size_t align = bytes >= ((size_t)4 << 20) ? (size_t)2 << 20 : 64;
    size_t rounded = (bytes + align - 1) & ~(align - 1);
    if (rounded < bytes) return WK_CPU_ERROR(WK_ERR_MEMORY, "cannot allocate %zu bytes", bytes);
    /* more than the machine has fails now, with the sizes, not later (with
     * the kernel's overcommit the allocation could succeed and the first
     * write past the memory kill the process) */
    if ((uint64_t)bytes > cpu_memory_limit())
        return WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory: %zu bytes (%.3g GB) asked, the machine has %llu bytes (%.3g GB) of "
                            "memory and swap", bytes, (double)bytes / 1e9, (unsigned long long)cpu_memory_limit(),
                            (double)cpu_memory_limit() / 1e9);
    void *p = rounded >= CACHE_MIN ? cache_take(rounded, align) : NULL;
    if (p) {
        *ptr = p;
        return WK_OK;
    }
    if (!(p = aligned_alloc(align, rounded))) {
        cache_empty();
        p = aligned_alloc(align, rounded);
    }
    if (!p) return WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory allocating %zu bytes", bytes);
    if (align > 64) madvise(p, rounded, MADV_HUGEPAGE);
    *ptr = p;
    return WK_OK;
}

static wk_status cpu_alloc(void *ctx, size_t bytes, void **ptr)
{
    (void)ctx;
    *ptr = NULL;
    if (bytes == 0) return WK_OK;
    /* Small buffers: plain malloc (16-byte aligned, enough for any dtype;
     * no kernel needs more). aligned_alloc of small blocks costs several
     * times a malloc and fragments the heap, and one-element ops are all
     * allocation. */
    if (bytes < 1024) {
        void *p = malloc(bytes);
        if (!p) return WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory allocating %zu bytes", bytes);
        *ptr = p;
        return WK_OK;
    }
    return cpu_aligned_alloc(bytes, ptr);
}

static void cpu_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (ptr && !cache_put(ptr)) free(ptr);
}

static wk_status cpu_write(void *ctx, void *dst, const void *host, size_t bytes)
{
    (void)ctx;
    if (bytes) memcpy(dst, host, bytes);
    return WK_OK;
}

static wk_status cpu_read(void *ctx, void *host, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes) memcpy(host, src, bytes);
    return WK_OK;
}

static wk_status cpu_copy_peer(void *dst_ctx, void *dst, void *src_ctx, const void *src, size_t bytes)
{
    (void)dst_ctx; (void)src_ctx;
    if (bytes) memcpy(dst, src, bytes);
    return WK_OK;
}

/* ---- events: cpu ops are done when they return, so an event is the
 * host's monotonic clock read when it is recorded ------------------------ */

typedef struct cpu_event {
    int64_t ns;
} cpu_event;

static wk_status cpu_event_new(void *ctx, void **ev)
{
    (void)ctx;
    *ev = calloc(1, sizeof(cpu_event));
    return *ev ? WK_OK : WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for an event");
}

static wk_status cpu_event_record(void *ctx, void *ev)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ((cpu_event *)ev)->ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return WK_OK;
}

static wk_status cpu_event_synchronize(void *ctx, void *ev)
{
    (void)ctx; (void)ev;
    return WK_OK;
}

static wk_status cpu_event_elapsed_ms(void *ctx, void *start, void *end, double *ms)
{
    (void)ctx;
    *ms = (double)(((cpu_event *)end)->ns - ((cpu_event *)start)->ns) * 1e-6;
    return WK_OK;
}

/* ---- "pinned" host memory: the cpu's device memory is host memory, so
 * this is plain aligned memory, copied with memcpy like any other -------- */

static wk_status cpu_host_alloc(void *ctx, size_t bytes, void **ptr)
{
    (void)ctx;
    *ptr = NULL;
    return cpu_aligned_alloc(bytes, ptr);
}

/* ---- environment knobs (cpu_internal.h) ------------------------------- */

wk_cpu_knobs wk_cpu_env;

static void cpu_env_refresh(void)
{
    const char *e = getenv("WICK_MATMUL_GEMV");
    wk_cpu_env.gemv_off = e && !strcmp(e, "0");
    wk_cpu_env.qdot = wk_cpu_qdot_mode();
}

/* ---- the vtable ------------------------------------------------------- */

static const wk_backend_iface cpu_iface = {
    .abi = WK_BACKEND_ABI,
    .kind = "cpu",
    .device_count = cpu_device_count,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .device_info = cpu_device_info,
    .synchronize = cpu_synchronize,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .write = cpu_write,
    .read = cpu_read,
    .copy_peer = cpu_copy_peer,
    .ops = cpu_ops,
    .n_ops = WK_OP_COUNT,
    .event_new = cpu_event_new,
    .event_free = cpu_free,          /* events and host blocks are malloc'd */
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_free,
    .comm_available = wk_cpu_comm_available,
    .comm_dtype = wk_cpu_comm_dtype,
    .comm_init_all = wk_cpu_comm_init_all,
    .comm_free = wk_cpu_comm_free,
    .comm_run = wk_cpu_comm_run,
    .env_refresh = cpu_env_refresh,
    .comm_abort = wk_cpu_comm_abort,
    .comm_aborted = wk_cpu_comm_aborted,
};

const wk_backend_iface *wk_cpu_backend(const wk_host_api *host)
{
    wk_cpu_host = host;
    cpu_env_refresh();
    return &cpu_iface;
}
