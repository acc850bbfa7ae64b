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
#include "dtype_traits.h"
#include "op_list.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when the structs below change layout or meaning. The core and a
 * plugin each check the other's number (wk_host_api.abi before the plugin
 * fills its table, wk_backend_iface.abi after), so a plugin built from
 * another version refuses to load instead of being misread. Adding an op
 * (op_list.h) does not change the ABI: a plugin's op table says how many
 * ops it knows (n_ops) and the core treats the rest as unsupported. The
 * entry point's name stays: its signature has not changed since v1.
 *   1  the first interface
 *   2  events (event_new .. event_elapsed_ms) and pinned host memory
 *      (host_alloc, host_free), appended to wk_backend_iface
 *   3  ops through one per-op table (ops, n_ops) of run functions taking
 *      a wk_op_args record, replacing one member per op family and
 *      supports(); block-quantized dtypes
 *   4  the device's stream for custom ops (stream) and kernels compiled
 *      at run time (rtc_target .. rtc_launch), appended to
 *      wk_backend_iface
 *   5  rtc_target no longer opens the compiler (a disk-cache hit needs
 *      none; the cache key leaves the compiler's version out) and
 *      rtc_compiler says whether it opens; collectives (comm_available
 *      .. comm_run) appended; stream_order after stream
 *   6  the fused collective WK_COLL_ALL_REDUCE_ADD_RMS_NORM and
 *      comm_fuses, appended
 *   7  graphs (graph_begin .. graph_free), appended
 *   8  linear_silu_mul (one row's gate/up product and its gate in one
 *      launch) and read_async, appended; wk_attention_params.kv_len
 *   9  linear_rope_kv (one row's q/k/v product with its rope_kv in one
 *      launch), appended
 *  10  fused products are ops of the op table (op_list.h's LINEAR family:
 *      LINEAR_SILU_MUL, LINEAR_ROPE_KV), so wk_supports, the coverage
 *      suite and the benches see them and a future fusion appends an op
 *      instead of bumping the ABI; the members linear_silu_mul and
 *      linear_rope_kv removed; the members grouped by concern (devices
 *      and memory, ops, streams and events, run-time compilation,
 *      collectives, graphs); env_refresh (the knobs read once) appended */
/*  11  wk_op_args.flags (WK_OPF_IDS_CHECKED: ids the caller checked);
 *      paged_attention appended (family PAGED_ATTENTION)
 *  12  comm_abort and comm_aborted (a failing rank makes the others'
 *      collectives fail instead of waiting), appended */
#define WK_BACKEND_ABI 12
#define WK_BACKEND_ENTRY wk_backend_entry_v1

/* ------------------------------------------------------------------ */
/* Every operation a backend may implement, from src/op_list.h (append
 * new ops there, never insert). */
typedef enum wk_op {
#define WK_OP_ENUM_(K, N, S, P, D) WK_OP_##N,
    WK_OP_LIST(WK_OP_ENUM_)
#undef WK_OP_ENUM_
    WK_OP_COUNT
} wk_op;

/* What an op's wk_op_args mean is set by its family (op_list.h). */
typedef enum wk_op_family {
    WK_FAMILY_UNARY,         /* dst = f(src[0]); one dtype; p[0], p[1]: affine (mul, add),
                                powf (exponent), elu (alpha)                         */
    WK_FAMILY_BINARY,        /* dst = src[0] op src[1]; one dtype; src have dst's dims
                                (stride 0 where broadcast). SILU_MUL: silu(a) * b    */
    WK_FAMILY_CMP,           /* as BINARY, dst u8                                    */
    WK_FAMILY_WHERE,         /* dst = src[0] != 0 ? src[1] : src[2]; src[0] u8/u32/i64;
                                src[1], src[2], dst one dtype                        */
    WK_FAMILY_REDUCE,        /* dst = reduce src[0] over the dims of dim_mask (below) */
    WK_FAMILY_MATMUL,        /* dst [B.., m, n] = src[0] [B.., m, k] x src[1] [B.., k, n] */
    WK_FAMILY_INDEX_SELECT,  /* dst = src[0] with dims[dim] = n ids, rows picked by
                                src[1] (1-d ids)                                     */
    WK_FAMILY_GATHER,        /* dst (ids' dims) = src[0][.. src[1][i] ..] along dim  */
    WK_FAMILY_SCATTER,       /* in place: dst[.. src[0][i] ..] = / += src[1][i] along dim */
    WK_FAMILY_INDEX_ADD,     /* in place: dst.narrow(dim, src[0][i], 1) += src[1].narrow(dim, i, 1) */
    WK_FAMILY_COPY,          /* dst (any non-overlapping view) = src[0] converted to dst's
                                dtype; src[0] has dst's dims                         */
    WK_FAMILY_COPY2D,        /* rows of contiguous elements: dst and src[0] are [rows, cols]
                                views with strides [row stride, 1]; one dtype        */
    WK_FAMILY_CONST_SET,     /* every element of dst (any non-overlapping view) = *value */
    WK_FAMILY_RAND,          /* contiguous dst from the generator: key seed, first block
                                offset (docs/random.md); p[0], p[1]: lo, hi or mean, std */
    WK_FAMILY_SOFTMAX,       /* softmax / log_softmax: src[0] and dst are rank 3
                                [outer, n, inner], the op runs along dim 1 (n >= 1);
                                src[0] any strides, dst contiguous; one dtype; f16/bf16
                                computed in f32                                      */
    WK_FAMILY_NORM,          /* over the last dim of rows: src[0] x [rows, D] with strides
                                [row stride, 1]; dst [rows, D] contiguous; p[0] eps.
                                RMS_NORM: src[1] weight [D] contiguous or NULL; p[1] = 1:
                                the weight is applied as (1 + w) (Gemma).
                                LAYER_NORM: src[1] weight or NULL, src[2] bias or NULL.
                                ADD_RMS_NORM: src[1] residual (as x), src[2] weight or
                                NULL, p[1] as RMS_NORM; src[3] is a second destination
                                (contiguous, x's dims) that receives x + residual, and
                                dst the rms_norm of that sum. One dtype throughout.  */
    WK_FAMILY_ROPE,          /* rotary embedding: src[0] x rank 4, strides with the last
                                1, [B, H, T, D] (ROPE: halves rotate together; ROPE_I:
                                interleaved pairs) or [B, T, H, D] (ROPE_THD: halves);
                                dst x's dims, contiguous; src[1] cos and src[2] sin f32
                                [n_pos, D/2] contiguous; position t uses table row
                                t + p[0] (the core checks it is in the table)        */
    WK_FAMILY_ATTENTION,     /* dst [B, Hq, Tq, D] contiguous = softmax(scale q k^T +
                                mask) v; src[0] q [B, Hq, Tq, D], src[1] k and src[2] v
                                [B, Hkv, Tk, D] (last stride 1, others any; Hq a multiple
                                of Hkv), src[3] mask f32 [B, Hq, Tq, Tk] with stride 0 on
                                broadcast dims, or NULL; params: wk_attention_params */
    WK_FAMILY_QCONVERT,      /* block-quantized <-> float by rows (docs/quantization.md):
                                dst and src[0] are [rows, cols], cols whole blocks;
                                src[0] has strides [row stride, 1], dst is contiguous.
                                DEQUANTIZE: src[0] a block dtype, dst f32/f16/bf16 (the
                                f32 decode rounded once). QUANTIZE: src[0] f32, dst a
                                block dtype (llama.cpp's reference quantizers)       */
    WK_FAMILY_QMATMUL,       /* dst [m, n] contiguous = src[1] x [m, k] . src[0] w [n,
                                k]^T; w a block dtype with strides [row stride, 1]; x
                                f32/f16/bf16 of dst's dtype, any strides             */
    WK_FAMILY_QGATHER,       /* dst [n, cols] contiguous: row i is row src[1][i] of
                                src[0] [rows, cols] (a block dtype, strides [row
                                stride, 1]) decoded as DEQUANTIZE; src[1] 1-d ids
                                u8/u32/i64, any stride, range-checked by the backend */
    WK_FAMILY_CONV,          /* dst [N, Cout, (H,) W] contiguous = conv of src[0] x [N, Cin,
                                (H,) W] (any strides) with src[1] w [Cout, Cin/g, (kh,) kw]
                                (transposed: [Cin, Cout/g, (kh,) kw]; any strides) + src[2]
                                bias [Cout] or NULL; one dtype; params: wk_conv_params */
    WK_FAMILY_POOL,          /* dst [N, C, Ho, Wo] contiguous = pool of src[0] x [N, C, H, W]
                                (any strides) by windows of wk_pool_params; MAX_POOL2D:
                                src[1] is a second destination (u32, dst's dims,
                                contiguous) for the index h * W + w of each max, or NULL */
    WK_FAMILY_UPSAMPLE,      /* dst [N, C, (Ho,) Wo] contiguous from src[0] x [N, C, (H,) W]
                                (any strides); p[0], p[1]: the user's scale factors of
                                H and W (of L: p[1]), <= 0 when not given; p[2] = 1:
                                align_corners (bilinear)                             */
    WK_FAMILY_SORT,          /* dst u32 [rows, k] contiguous = the first k (k <= n) of the
                                stable order of each row of src[0] [rows, n] (any strides,
                                any dense dtype); p[0] = 1: descending. NaN is above
                                +inf, -0 equals +0                                   */
    WK_FAMILY_ROPE_KV,       /* rope of q and k and the KV-cache append, one launch:
                                src[0] qkv [B, T, Hq + 2 Hkv, D] (last stride 1, others
                                any), src[1] cos and src[2] sin as ROPE, src[3] the
                                position: u32 or i64, one element (device memory), or
                                NULL for p[0]; params: wk_rope_kv_params. Query and key
                                heads rotate at table row pos + t (halves, or pairs
                                when interleaved); dst [B, T, Hq, D] contiguous gets the
                                queries, rows pos + t of the caches the keys and the
                                values. A row whose position is past the tables or the
                                caches (possible only for src[3]; the core checks p[0])
                                writes no cache row and zero queries.                */
    WK_FAMILY_LINEAR,        /* a one-row product and the op that follows it, as one op
                                (docs/fused-ops.md). src[0] a [.., 1, K] and src[1] b
                                [.., K, N] are MATMUL's operands (batch dims 1, stride
                                0): b the transposed view of a row-major W [N, K]
                                (strides [.., 1, W's row stride]), a contiguous, K > 0.
                                src[2] y [.., 1, N] is MATMUL's destination for them
                                (contiguous) with base NULL: it is in no memory, the
                                backend places it. params: the wk_op_args of the op
                                that follows, as the core would run it on y; its views
                                of y have base NULL (none of its other operands does),
                                and its dst is dst. LINEAR_SILU_MUL: SILU_MUL of y's
                                halves (dst [.., F], N = 2F); LINEAR_ROPE_KV: ROPE_KV of
                                y as qkv [1, 1, H, D] (N = H D). The result has the bits
                                of this backend's MATMUL into y, rounded to the dtype,
                                then that op (src/fused.h runs the two); a backend may
                                make them in one launch.                             */
    WK_FAMILY_PAGED_ATTENTION, /* dst [T, Hq, D] contiguous: attention of query tokens
                                of many sequences over a paged KV cache (wk_paged_attention);
                                src[0] q [T, Hq, D], src[1] k and src[2] v pools [NB, BS,
                                Hkv, D] (last stride 1, others any; Hq a multiple of Hkv);
                                params: wk_paged_attention_params (the block table, each
                                token's sequence and position). Ids are data: a backend
                                range-checks them (WK_ERR_INDEX), writing nothing it has not
                                checked where it can (a GPU may have written dst)    */
    WK_FAMILY_RESERVED,      /* named for a layer still to come; no front-end yet    */
    WK_FAMILY_COUNT
} wk_op_family;

/* The dtypes an op takes in the reference (cpu) backend: op_list.h's
 * DTYPES column (0 when out of range). Host and device code; constexpr in
 * C++, so kernels can test it at compile time. */
#ifdef __cplusplus
#define WK_OP_CONSTEXPR_ constexpr
#else
#define WK_OP_CONSTEXPR_
#endif
WK_DT_FN WK_OP_CONSTEXPR_ wk_dtype_mask wk_op_dtypes(int op)
{
    switch (op) {
#define WK_OP_DT_(K, N, S, P, D) case WK_OP_##N: return D;
    WK_OP_LIST(WK_OP_DT_)
#undef WK_OP_DT_
    default: return 0;
    }
}

/* Name of an op ("exp", "matmul", ...); "?" when out of range. */
const char *wk_op_name(wk_op op);
/* Family of an op; WK_FAMILY_COUNT when out of range. */
wk_op_family wk_op_family_of(wk_op op);

/* A strided view of raw storage. Offsets and strides are in elements. */
typedef struct wk_view {
    void *base;                    /* storage start                     */
    wk_dtype dtype;
    int rank;                      /* 0..WK_MAX_RANK                    */
    int64_t offset;
    int64_t dims[WK_MAX_RANK];
    int64_t strides[WK_MAX_RANK];  /* >= 0; 0 on broadcast dims         */
} wk_view;

/* One call of an op: what the core passes to a backend's run function.
 * Which fields an op reads is set by its family (wk_op_family above);
 * unused fields are zero. Views are validated by the core: shapes agree,
 * dtypes are the ones the op takes, views lie inside their storage;
 * unless the family says otherwise dst is contiguous (its offset may be
 * non-zero). Index ids are data: backends range-check them and report
 * WK_ERR_INDEX, writing nothing to an in-place destination. */
typedef struct wk_op_args {
    wk_op op;
    const wk_view *dst;          /* the result, or the in-place destination  */
    const wk_view *src[4];       /* inputs, in the family's order            */
    int dim;                     /* index ops: the dim indexed               */
    uint32_t dim_mask;           /* REDUCE: bit d set when dim d is reduced; dst has
                                    src's rank with dims 1 there. dst dtype = src
                                    dtype, u32 for argmin/argmax (index into the
                                    reduced dims flattened row-major); the core never
                                    asks min/max/arg* over an empty extent */
    double p[4];                 /* scalar parameters (family comments)      */
    uint64_t seed, offset;       /* RAND                                     */
    const void *value;           /* CONST_SET: one element of dst's dtype (host memory) */
    const void *params;          /* op-specific parameters, for ops that need more */
    uint32_t flags;              /* WK_OPF_* (ABI 11)                        */
} wk_op_args;

/* wk_op_args.flags. IDS_CHECKED: the caller has checked the op's ids
 * (wk_set_ids_checked): a backend need not check them again (a GPU skips
 * the check whose answer the host waits for); its kernels still read
 * through no bad id (zeros) and write through none, as in a recorded
 * graph, with no error. */
#define WK_OPF_IDS_CHECKED 1u

/* The parameters of a ROPE_KV op (wk_op_args.params): the caches
 * [B, Hkv, C, D] (any strides, the last 1; written in place), the query
 * heads Hq (qkv's heads are Hq + 2 Hkv), the pair layout. */
typedef struct wk_rope_kv_params {
    const wk_view *k_cache, *v_cache;
    int64_t n_q;
    int interleaved;
} wk_rope_kv_params;

/* The options of an ATTENTION op (wk_op_args.params). A key j is visible
 * to query i when (with pos = i + Tk - Tq, its position among the keys)
 * !causal || j <= pos, and window <= 0 || j > pos - window. Scores are
 * s = scale * q.k, then softcap * tanh(s / softcap) when softcap > 0,
 * then + mask. A row with no visible key (or every score -inf) is 0. */
typedef struct wk_attention_params {
    double scale;
    double softcap;              /* <= 0: none                               */
    int64_t window;              /* <= 0: none                               */
    int causal;
    /* ABI 8: NULL, or one u32/i64 element L read when the op runs: the
     * keys are [0, min(L, Tk)) (L <= 0: none), and L is the Tk of pos */
    const wk_view *kv_len;
} wk_attention_params;

/* The parameters of a PAGED_ATTENTION op (wk_op_args.params). Query t
 * (its sequence s = seq[t], its position p = pos[t]) sees key j of s when
 * j <= p and (window <= 0 || j > p - window); key j is row j % BS of pool
 * block block_table[s, j / BS]. Scores as ATTENTION's, no mask. The ids
 * are u32 and contiguous: block_table [S, MB], seq and pos [T]. */
typedef struct wk_paged_attention_params {
    double scale;
    double softcap;              /* <= 0: none                               */
    int64_t window;              /* <= 0: none                               */
    const wk_view *block_table, *seq, *pos;
} wk_paged_attention_params;

/* The options of a CONV op (wk_op_args.params); index 0 is H, 1 is W.
 * The 1-d forms (views of rank 3) are 2-d with H = 1: L's options are
 * index 1, index 0 is stride 1, padding 0. Output sizes are dst's. */
typedef struct wk_conv_params {
    int nsp;                     /* spatial dims: 1 or 2                     */
    int64_t stride[2], padding[2], dilation[2], output_padding[2];
    int64_t groups;
} wk_conv_params;

/* The options of a POOL op (wk_op_args.params). dst's Ho, Wo already
 * follow ceil_mode; a window starts at o * stride - padding. */
typedef struct wk_pool_params {
    int64_t kernel[2], stride[2], padding[2];
    int count_include_pad;       /* AVG_POOL2D: padded cells count in the divisor */
} wk_pool_params;

/* A backend's implementation of one op. */
typedef wk_status (*wk_op_run_fn)(void *ctx, const wk_op_args *args);
typedef struct wk_op_impl {
    wk_op_run_fn run;            /* NULL: not implemented                    */
    wk_dtype_mask dtypes;        /* the dtypes it takes (of dst, or of src[0]
                                    for COPY/CMP/WHERE/REDUCE where they differ;
                                    the block dtype for the quantized families:
                                    dst's for QUANTIZE, src[0]'s for DEQUANTIZE,
                                    QMATMUL, QGATHER) */
    /* Optional run-time rule on top of the mask (a library found or not);
     * NULL: the mask decides. */
    bool (*available)(void *ctx, wk_op op, wk_dtype dt);
} wk_op_impl;

/* Whether a backend's table implements op for dt (the mask and the
 * run-time rule). */
static inline bool wk_op_impl_supports(const wk_op_impl *ops, int n_ops, void *ctx, wk_op op, wk_dtype dt)
{
    if ((unsigned)op >= (unsigned)n_ops || (unsigned)dt >= (unsigned)WK_DTYPE_COUNT) return false;
    const wk_op_impl *e = &ops[op];
    if (!e->run || !(e->dtypes & WK_DT_BIT(dt))) return false;
    return !e->available || e->available(ctx, op, dt);
}

/* What a kernel compiled at run time is built for (rtc_target). */
typedef struct wk_rtc_target {
    char arch[64];               /* "sm_90", "gfx90a:sramecc+:xnack-"        */
    int warp_size;               /* the hardware's: 32 or 64                 */
    int driver_version;          /* cudaDriverGetVersion / hipDriverGetVersion */
    const char *compiler;        /* "nvrtc", "hiprtc" (a string constant)    */
    const char *prelude;         /* text the plugin puts in front of every
                                    source (a string constant: part of the
                                    cache key)                               */
} wk_rtc_target;

/* One collective (comm_run): count elements of dtype from send to recv,
 * device addresses of the rank's device (send == recv: in place). For
 * ALL_GATHER recv holds size x count elements, rank r's at r x count. */
typedef enum wk_coll_kind {
    WK_COLL_ALL_REDUCE_SUM, WK_COLL_ALL_GATHER, WK_COLL_BROADCAST,
    /* ALL_REDUCE_SUM in place on recv = [rows, D] (count = rows x D),
       then norm = rms_norm(recv + residual) x weight, sum = recv +
       residual (wk_all_reduce_add_rms_norm); every operand contiguous,
       of dtype. Only where comm_fuses says yes. (ABI 6) */
    WK_COLL_ALL_REDUCE_ADD_RMS_NORM
} wk_coll_kind;
typedef struct wk_coll_args {
    wk_coll_kind kind;
    wk_dtype dtype;              /* ALL_GATHER and BROADCAST: any (bytes)  */
    const void *send;
    void *recv;
    size_t count;
    int root;                    /* BROADCAST                              */
    /* ALL_REDUCE_ADD_RMS_NORM */
    const void *residual, *weight;   /* weight [D] or NULL                 */
    void *norm, *sum;
    int64_t rows, D;
    double eps;
    int gemma;                   /* weight applied as (1 + weight)         */
} wk_coll_args;

/* A compiled kernel (rtc_compile): code the device's loader takes (a
 * CUBIN, an AMD code object) and the kernel's symbol (its lowered name).
 * Both malloc'd by the plugin; the core frees them with free(). */
typedef struct wk_rtc_code {
    void *code;
    size_t size;
    char *symbol;
} wk_rtc_code;

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

    /* ---- devices and memory ---- */
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
    /* Transfers that do not wait (ABI 8; NULL: the core uses read): queue
     * device -> host of bytes from src into host, which lies inside one
     * host_alloc block (the core checks), on ctx's stream, and return;
     * the host's copy is complete once an event recorded after it has
     * been passed. */
    wk_status (*read_async)(void *ctx, void *host, const void *src, size_t bytes);
    /* device -> device within this backend (ctx of dst and src may differ;
     * NULL if the backend cannot, and the core stages through the host). */
    wk_status (*copy_peer)(void *dst_ctx, void *dst, void *src_ctx, const void *src, size_t bytes);
    /* Pinned host memory (ABI 2): page-locked host memory (bytes > 0).
     * write and read of a host range that lies inside one such block
     * copy it directly (one DMA, no staging), still keeping their
     * contract above. */
    wk_status (*host_alloc)(void *ctx, size_t bytes, void **ptr);
    /* Free a block host_alloc returned (the core checks that it did). */
    void (*host_free)(void *ctx, void *ptr);

    /* ---- ops (ABI 3) ---- */
    /* The backend's op table, indexed by wk_op, n_ops entries long (the
     * WK_OP_COUNT it was built with). An entry whose run is NULL, an op
     * at or past n_ops, or a dtype outside the entry's mask is
     * unsupported. Fused products are ops too (the LINEAR family). */
    const struct wk_op_impl *ops;
    int n_ops;

    /* ---- streams and events ---- */
    /* Make ctx's device current on the calling thread and give its
     * stream (cudaStream_t / hipStream_t), on which every op of ctx runs
     * in order; NULL for a backend without streams (the cpu). (ABI 4:
     * custom ops) */
    wk_status (*stream)(void *ctx, void **stream);
    /* Order ctx's stream and another stream of its device (a framework's,
     * as a handle: cudaStream_t / hipStream_t, or CUDA's legacy (1) and
     * per-thread (2) default streams) without blocking the host: when
     * ctx_waits, work queued on ctx's stream from now on starts after the
     * work queued on other so far; else the reverse. (ABI 5) */
    wk_status (*stream_order)(void *ctx, void *other, bool ctx_waits);
    /* Events (ABI 2): a backend event handle (*ev), not yet recorded. */
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

    /* ---- kernels compiled at run time (ABI 5; NULL on the cpu) ---- */
    /* The target of ctx's device, without opening the compiler (what a
     * disk-cache lookup needs; opening NVRTC alone costs milliseconds),
     * or WK_ERR_UNSUPPORTED when the device cannot load code. */
    wk_status (*rtc_target)(void *ctx, wk_rtc_target *out);
    /* WK_OK when the compiler library (NVRTC, hiprtc) opens, else
     * WK_ERR_UNSUPPORTED saying why. */
    wk_status (*rtc_compiler)(void);
    /* Compile source (HIP dialect; the plugin puts t->prelude in front,
     * its own when NULL) for t (from rtc_target, or filled by hand:
     * arch and warp_size are what it reads); name is the kernel's name
     * expression
     * ("scale", "scale<float>"); opts are passed to the compiler. Needs no
     * device. A compile error is WK_ERR_ARGUMENT with the compiler's log
     * in the message. */
    wk_status (*rtc_compile)(const wk_rtc_target *t, const char *source, const char *name,
                             const char *const *opts, int n_opts, wk_rtc_code *out);
    /* Load code on ctx's device and find symbol in it: *fn is the
     * backend's handle of the kernel. A code object the loader refuses
     * is WK_ERR_BACKEND. */
    wk_status (*rtc_load)(void *ctx, const void *code, size_t size, const char *symbol, void **fn);
    void (*rtc_unload)(void *ctx, void *fn);
    /* Launch fn on stream (NULL: ctx's stream); args as cuLaunchKernel's
     * kernelParams (one pointer to each argument's value). */
    wk_status (*rtc_launch)(void *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                            unsigned shared_bytes, void *stream, void **args);

    /* ---- collectives (ABI 5; NULL: the backend has none) ---- */
    /* WK_OK when the collective library (NCCL, RCCL) opens, else
     * WK_ERR_UNSUPPORTED saying why; whether comm_run takes dt. */
    wk_status (*comm_available)(void);
    bool (*comm_dtype)(wk_dtype dt);
    /* A fresh rendezvous id of WK_COMM_ID_BYTES (wick_comm.h); NULL
     * where ranks cannot live in separate processes (the cpu). */
    wk_status (*comm_unique_id)(void *id);
    /* comms[i] for rank i on ctxs[i], i < n, for n threads of this
     * process; all or none are made. */
    wk_status (*comm_init_all)(void *const *ctxs, int n, void **comms);
    /* Rank `rank` of `world` on ctx, joining through id (NULL with
     * comm_unique_id). */
    wk_status (*comm_init_rank)(void *ctx, const void *id, int rank, int world, void **comm);
    /* Waits for the comm's queued work, then frees it. */
    void (*comm_free)(void *comm);
    /* One collective, on the comm's device's stream (the cpu: done on
     * return). Every rank calls it with the same kind, count, dtype and
     * root. */
    wk_status (*comm_run)(void *comm, const wk_coll_args *a);
    /* Fused collectives (ABI 6; NULL: none): whether comm_run takes a (a
     * kind that is not one of the three plain ones) on this comm; false
     * sets no error. Every rank of a comm answers alike for the same
     * arguments. */
    bool (*comm_fuses)(void *comm, const wk_coll_args *a);

    /* ---- graphs (ABI 7; NULL: the backend records none) ---- */
    /* From graph_begin to graph_end, the work ops queue on ctx's stream
     * is recorded instead of run (one thread records; host transfers and
     * synchronizations fail meanwhile). Memory allocated, or freed,
     * while recording belongs to the graph until graph_free: a replay
     * finds it as the recording left it. graph_end always ends the
     * recording; on failure *graph is NULL and what was recorded is
     * dropped. graph_launch queues one replay on ctx's stream. */
    wk_status (*graph_begin)(void *ctx);
    wk_status (*graph_end)(void *ctx, void **graph);
    wk_status (*graph_launch)(void *ctx, void *graph);
    void (*graph_free)(void *ctx, void *graph);

    /* ---- environment knobs (ABI 10; NULL: the backend reads none) ---- */
    /* The WICK_* variables a backend consults on its ops' paths are read
     * once (when the backend is made), not on every op; env_refresh reads
     * them again (wk_env_refresh, when no op runs). Those read when
     * something is opened (a library, a device, a communicator) are not
     * its business. */
    void (*env_refresh)(void);

    /* ---- aborting a communicator (ABI 12; NULL: not abortable) ---- */
    /* Marks the communicator of comm's group aborted, from any thread:
     * every rank's collective waiting now returns an error within a
     * bounded time (the cpu: at once; NCCL/RCCL: ncclCommAbort, and the
     * peer-memory kernels stop waiting), and every later one fails at
     * once. Sets no error. comm_aborted says whether it happened (to any
     * rank of the group, for whatever reason: an abort, a timeout). */
    void (*comm_abort)(void *comm);
    bool (*comm_aborted)(void *comm);
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
