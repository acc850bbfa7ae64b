/* backend.h — the interface between wick's core and a backend (cpu, cuda,
 * rocm). One struct of function pointers per backend; the core validates
 * every call (shapes, dtypes, devices, bounds of views) before it reaches a
 * backend, so backends trust their arguments except where stated (ids of
 * the indexing ops are data and must be range-checked by the backend).
 *
 * Backends never see a wk_tensor. They see wk_view: a storage base pointer
 * (a device address for GPUs), a dtype and a strided layout in elements.
 * Unless an op says otherwise the destination view is contiguous (offset
 * may be non-zero) and every source view has the destination's dims, with
 * stride 0 where it is broadcast.
 *
 * GPU backends are shared-library plugins: they export one function,
 * WK_BACKEND_ENTRY, which receives the core's wk_host_api and returns the
 * backend's wk_backend_iface. Plugins report errors only through
 * host->set_error, so the core owns the (thread-local) error state.
 *
 * This header is C and is also included by C++/HIP plugin sources.
 */
#ifndef WICK_BACKEND_H
#define WICK_BACKEND_H

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when the structs below change layout or meaning. The core and a
 * plugin each check the other's number (wk_host_api.abi before the plugin
 * fills its table, wk_backend_iface.abi after), so a plugin built from
 * another version refuses to load instead of being misread. The entry
 * point's name stays: its signature has not changed since v1.
 *   1  the first interface
 *   2  events (event_new .. event_elapsed_ms) and pinned host memory
 *      (host_alloc, host_free), appended to wk_backend_iface */
#define WK_BACKEND_ABI 2
#define WK_BACKEND_ENTRY wk_backend_entry_v1

/* ------------------------------------------------------------------ */
/* Every operation a backend may implement. Adding one: append it before
 * WK_OP_COUNT, add its name to wk_op_name_table (src/core/ops_table.c; a
 * static_assert there checks the count) and to every per-op table a
 * backend keeps (each has its own static_assert on WK_OP_COUNT). */
typedef enum wk_op {
    /* unary family: wk_unary_op order, then the parametrised ones */
    WK_OP_EXP = 0, WK_OP_LOG, WK_OP_SIN, WK_OP_COS, WK_OP_TANH, WK_OP_ABS,
    WK_OP_NEG, WK_OP_RECIP, WK_OP_SQR, WK_OP_SQRT, WK_OP_GELU,
    WK_OP_GELU_ERF, WK_OP_ERF, WK_OP_RELU, WK_OP_SILU, WK_OP_FLOOR,
    WK_OP_CEIL, WK_OP_ROUND, WK_OP_SIGN,
    WK_OP_AFFINE,         /* p0 = mul, p1 = add                        */
    WK_OP_POWF,           /* p0 = exponent                             */
    WK_OP_ELU,            /* p0 = alpha                                */
    /* binary family: wk_binary_op order */
    WK_OP_ADD, WK_OP_SUB, WK_OP_MUL, WK_OP_DIV, WK_OP_MINIMUM, WK_OP_MAXIMUM,
    /* cmp family: wk_cmp_op order; dst is u8 */
    WK_OP_EQ, WK_OP_NE, WK_OP_LT, WK_OP_LE, WK_OP_GT, WK_OP_GE,
    WK_OP_WHERE,
    /* reduce family: wk_reduce_op order */
    WK_OP_SUM, WK_OP_MIN, WK_OP_MAX, WK_OP_ARGMIN, WK_OP_ARGMAX,
    WK_OP_MATMUL,
    WK_OP_INDEX_SELECT, WK_OP_GATHER, WK_OP_SCATTER_SET, WK_OP_SCATTER_ADD,
    WK_OP_INDEX_ADD,
    WK_OP_COPY,           /* strided copy with dtype conversion (to_dtype,
                             contiguous, copy_strided_src, copy_into)   */
    WK_OP_COPY2D,
    WK_OP_CONST_SET,
    WK_OP_RAND_UNIFORM, WK_OP_RAND_NORMAL,
    /* reserved for the layers that come next (no backend implements them
     * yet; wk_supports answers false) */
    WK_OP_CONV1D, WK_OP_CONV_TRANSPOSE1D, WK_OP_CONV2D, WK_OP_CONV_TRANSPOSE2D,
    WK_OP_AVG_POOL2D, WK_OP_MAX_POOL2D, WK_OP_UPSAMPLE_NEAREST1D,
    WK_OP_UPSAMPLE_NEAREST2D, WK_OP_UPSAMPLE_BILINEAR2D, WK_OP_ARG_SORT,
    WK_OP_SOFTMAX, WK_OP_RMS_NORM, WK_OP_LAYER_NORM, WK_OP_ROPE,
    WK_OP_ATTENTION, WK_OP_QMATMUL, WK_OP_CUSTOM,
    WK_OP_COUNT
} wk_op;

#define WK_OP_UNARY_FIRST WK_OP_EXP
#define WK_OP_BINARY_FIRST WK_OP_ADD
#define WK_OP_CMP_FIRST WK_OP_EQ
#define WK_OP_REDUCE_FIRST WK_OP_SUM

/* Name of an op ("exp", "matmul", ...); "?" when out of range. */
const char *wk_op_name(wk_op op);

/* A strided view of raw storage. Offsets and strides are in elements. */
typedef struct wk_view {
    void *base;                    /* storage start                     */
    wk_dtype dtype;
    int rank;                      /* 0..WK_MAX_RANK                    */
    int64_t offset;
    int64_t dims[WK_MAX_RANK];
    int64_t strides[WK_MAX_RANK];  /* >= 0; 0 on broadcast dims         */
} wk_view;

/* Services the core gives a backend. */
typedef struct wk_host_api {
    int abi;                                   /* WK_BACKEND_ABI            */
    /* Set the thread's error (printf-style). The core prefixes the name
     * of the op being run when one is. Returns status for chaining. */
    wk_status (*set_error)(wk_status status, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* Name of the public op being run on this thread, or NULL. */
    const char *(*current_op)(void);
} wk_host_api;

typedef struct wk_backend_iface {
    int abi;                       /* WK_BACKEND_ABI                    */
    const char *kind;              /* "cpu", "cuda", "rocm"             */

    /* ---- devices ---- */
    int (*device_count)(void);     /* 0 when none; never an error       */
    wk_status (*device_open)(int index, void **ctx);
    void (*device_close)(void *ctx);
    wk_status (*device_info)(void *ctx, wk_device_info *out);
    wk_status (*synchronize)(void *ctx);
    /* bytes == 0 may return NULL. */
    wk_status (*alloc)(void *ctx, size_t bytes, void **ptr);
    void (*free)(void *ctx, void *ptr);
    /* host <-> device; read synchronizes; write may return before the
     * copy ends only if it copied the host data first. */
    wk_status (*write)(void *ctx, void *dst, const void *host, size_t bytes);
    wk_status (*read)(void *ctx, void *host, const void *src, size_t bytes);
    /* device -> device within this backend (ctx of dst and src may differ;
     * NULL if the backend cannot, and the core stages through the host). */
    wk_status (*copy_peer)(void *dst_ctx, void *dst, void *src_ctx, const void *src, size_t bytes);

    /* ---- ops ---- */
    bool (*supports)(void *ctx, wk_op op, wk_dtype dtype);

    /* Unary family (WK_OP_EXP..WK_OP_ELU) and to its dtype: dst and src
     * share a dtype. p0/p1: parameters of affine/powf/elu. */
    wk_status (*unary)(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, double p0, double p1);
    /* Binary (ADD..MAXIMUM: dst dtype = a dtype) and cmp (EQ..GE: dst u8).
     * a and b share a dtype and dst's dims. */
    wk_status (*binary)(void *ctx, wk_op op, const wk_view *dst, const wk_view *a, const wk_view *b);
    /* dst = cond != 0 ? a : b; cond u8/u32/i64; a, b, dst one dtype. */
    wk_status (*where_cond)(void *ctx, const wk_view *dst, const wk_view *cond, const wk_view *a, const wk_view *b);
    /* Strided copy with conversion: dst may be any non-overlapping view
     * (not only contiguous) and dtype may differ from src's; src has
     * dst's dims (stride 0 where broadcast). */
    wk_status (*copy)(void *ctx, const wk_view *dst, const wk_view *src);
    /* Rows of contiguous elements; offsets and strides in elements. */
    wk_status (*copy2d)(void *ctx, void *dst_base, const void *src_base, wk_dtype dtype,
                        int64_t rows, int64_t cols, int64_t dst_stride, int64_t src_stride,
                        int64_t dst_offset, int64_t src_offset);
    /* Every element of dst (any non-overlapping view) = *value, which
     * points to one element of dst's dtype in host memory. */
    wk_status (*const_set)(void *ctx, const wk_view *dst, const void *value);
    /* Reduce (SUM..ARGMAX). src is the full input; dst is contiguous with
     * src's rank, dims equal to src's except 1 on every dim whose bit is
     * set in dim_mask. dst dtype = src dtype, u32 for argmin/argmax
     * (index into the reduced dims flattened row-major). The core never
     * calls min/max/arg* with an empty reduced extent. */
    wk_status (*reduce)(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, uint32_t dim_mask);
    /* dst [B.., m, n] = a [B.., m, k] x b [B.., k, n]; all three of one
     * rank >= 2 and one dtype; a and b have dst's batch dims (stride 0
     * where broadcast) and any strides. */
    wk_status (*matmul)(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b);
    /* dst = src with dims[dim] = n_ids, rows picked by ids (1-d view). */
    wk_status (*index_select)(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim);
    /* dst (ids' dims) = src[... ids[i] ...] along dim; src's dims equal
     * ids' dims except on dim. */
    wk_status (*gather)(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim);
    /* In place: dst (any non-overlapping view) [.. ids[i] ..] = / += src[i]
     * along dim; ids and src share dims; dst's dims equal them except on
     * dim. op is WK_OP_SCATTER_SET or WK_OP_SCATTER_ADD. All ids are
     * checked before anything is written. */
    wk_status (*scatter)(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim);
    /* In place: dst.narrow(dim, ids[i], 1) += src.narrow(dim, i, 1); ids
     * 1-d; src's dims equal dst's except dims[dim] = n_ids. */
    wk_status (*index_add)(void *ctx, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim);
    /* Fill contiguous dst from the generator (docs/random.md): key = seed,
     * first block = offset. The core advances the offset. */
    wk_status (*rand_uniform)(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double lo, double hi);
    wk_status (*rand_normal)(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double mean, double std);

    /* ---- events (ABI 2) ---- */
    /* A backend event handle (*ev), not yet recorded. */
    wk_status (*event_new)(void *ctx, void **ev);
    /* May be called while the event's mark is still ahead of the device. */
    void (*event_free)(void *ctx, void *ev);
    /* Mark the point ctx's stream has reached (asynchronous on a GPU: the
     * timestamp is taken when the device gets there). */
    wk_status (*event_record)(void *ctx, void *ev);
    /* Wait until the device has passed the mark. */
    wk_status (*event_synchronize)(void *ctx, void *ev);
    /* ms from start's mark to end's (waits for both). The core checks
     * that both were recorded on ctx. */
    wk_status (*event_elapsed_ms)(void *ctx, void *start, void *end, double *ms);

    /* ---- pinned host memory (ABI 2) ---- */
    /* Page-locked host memory (bytes > 0). write and read of a host range
     * that lies inside one such block copy it directly (one DMA, no
     * staging), still keeping their contract above. */
    wk_status (*host_alloc)(void *ctx, size_t bytes, void **ptr);
    /* Free a block host_alloc returned (the core checks that it did). */
    void (*host_free)(void *ctx, void *ptr);
} wk_backend_iface;

/* A plugin's one exported symbol. Returns NULL (after set_error) when the
 * plugin cannot work with this core. */
typedef const wk_backend_iface *(*wk_backend_entry_fn)(const wk_host_api *host);

/* Philox blocks a rand call of n elements of dtype uses; the core adds it
 * to the device's offset after each call (docs/random.md). */
static inline uint64_t wk_rand_blocks(wk_dtype dt, int64_t n, bool normal)
{
    (void)normal;
    if (n <= 0) return 0;
    if (dt == WK_F64) return (uint64_t)(n + 1) / 2;
    return (uint64_t)(n + 3) / 4;
}

#ifdef __cplusplus
}
#endif
#endif /* WICK_BACKEND_H */
