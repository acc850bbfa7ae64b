/* cpu_backend.c — the CPU backend's vtable: device functions (host memory
 * is the device memory), events (host timestamps), the (op, dtype) support
 * table, and the wiring of the op entry points implemented in the other
 * files of src/cpu/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include "cpu_internal.h"

const wk_host_api *wk_cpu_host;

/* ---- support table --------------------------------------------------- */

static bool is_float(wk_dtype dt)
{
    return dt == WK_BF16 || dt == WK_F16 || dt == WK_F32 || dt == WK_F64 || dt == WK_F8E4M3;
}

bool wk_cpu_supports(void *ctx, wk_op op, wk_dtype dt)
{
    (void)ctx;
    if ((unsigned)dt >= WK_DTYPE_COUNT) return false;
    switch (op) {
    /* integer dtypes: the unary ops that are exact on integers */
    case WK_OP_ABS: case WK_OP_NEG: case WK_OP_SQR: case WK_OP_RELU:
    case WK_OP_SIGN: case WK_OP_FLOOR: case WK_OP_CEIL: case WK_OP_ROUND:
    case WK_OP_AFFINE:
        return true;
    case WK_OP_EXP: case WK_OP_LOG: case WK_OP_SIN: case WK_OP_COS:
    case WK_OP_TANH: case WK_OP_RECIP: case WK_OP_SQRT: case WK_OP_GELU:
    case WK_OP_GELU_ERF: case WK_OP_ERF: case WK_OP_SILU: case WK_OP_POWF:
    case WK_OP_ELU:
        return is_float(dt);
    case WK_OP_ADD: case WK_OP_SUB: case WK_OP_MUL: case WK_OP_DIV:
    case WK_OP_MINIMUM: case WK_OP_MAXIMUM:
    case WK_OP_EQ: case WK_OP_NE: case WK_OP_LT: case WK_OP_LE:
    case WK_OP_GT: case WK_OP_GE: case WK_OP_WHERE:
    case WK_OP_SUM: case WK_OP_MIN: case WK_OP_MAX: case WK_OP_ARGMIN:
    case WK_OP_ARGMAX:
    case WK_OP_INDEX_SELECT: case WK_OP_GATHER: case WK_OP_SCATTER_SET:
    case WK_OP_SCATTER_ADD: case WK_OP_INDEX_ADD:
    case WK_OP_COPY: case WK_OP_COPY2D: case WK_OP_CONST_SET:
        return true;
    case WK_OP_MATMUL:
        return dt == WK_F16 || dt == WK_BF16 || dt == WK_F32 || dt == WK_F64;
    case WK_OP_RAND_UNIFORM: case WK_OP_RAND_NORMAL:
        return is_float(dt);
    default:
        return false;
    }
}

/* ---- device functions ------------------------------------------------ */

static int cpu_device_count(void) { return 1; }

static wk_status cpu_device_open(int index, void **ctx)
{
    if (index != 0) return WK_CPU_ERROR(WK_ERR_DEVICE, "there is one cpu device, not %d", index + 1);
    *ctx = NULL;
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
static wk_status cpu_aligned_alloc(size_t bytes, void **ptr)
{
    size_t align = bytes >= ((size_t)4 << 20) ? (size_t)2 << 20 : 64;
    size_t rounded = (bytes + align - 1) & ~(align - 1);
    if (rounded < bytes) return WK_CPU_ERROR(WK_ERR_MEMORY, "cannot allocate %zu bytes", bytes);
    void *p = aligned_alloc(align, rounded);
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

static void cpu_free(void *ctx, void *ptr) { (void)ctx; free(ptr); }

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
    .supports = wk_cpu_supports,
    .unary = wk_cpu_unary,
    .binary = wk_cpu_binary,
    .where_cond = wk_cpu_where_cond,
    .copy = wk_cpu_copy,
    .copy2d = wk_cpu_copy2d,
    .const_set = wk_cpu_const_set,
    .reduce = wk_cpu_reduce,
    .matmul = wk_cpu_matmul,
    .index_select = wk_cpu_index_select,
    .gather = wk_cpu_gather,
    .scatter = wk_cpu_scatter,
    .index_add = wk_cpu_index_add,
    .rand_uniform = wk_cpu_rand_uniform,
    .rand_normal = wk_cpu_rand_normal,
    .event_new = cpu_event_new,
    .event_free = cpu_free,          /* events and host blocks are malloc'd */
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_free,
};

const wk_backend_iface *wk_cpu_backend(const wk_host_api *host)
{
    wk_cpu_host = host;
    return &cpu_iface;
}
