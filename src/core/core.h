/* core.h — the core's internal types and helpers, shared by the files of
 * src/core/. Nothing here is public.
 *
 * File map of src/core/:
 *   error.c          thread-local error state, the host API given to backends
 *   dtype.c          dtype names and sizes
 *   ops_table.c      what the core knows of each op (src/op_list.h):
 *                    names, families, public enums, wk_supports
 *   frontend.c       steps every op's front-end shares: argument checks,
 *                    results, copies and fills used by other ops
 *   device.c         device registry, GPU plugin loading, seeds
 *   tensor.c         storage and tensors: refcounts, scopes, accessors,
 *                    host transfers
 *   layout.c         shape/stride arithmetic: broadcasting, coalescing
 *                    (wk_view_of, a tensor as a wk_view, is inline here)
 *   views.c          view ops (reshape, narrow, transpose, ...), contiguous,
 *                    to_dtype, cat, stack, chunk
 *   ops_elementwise.c unary, binary, cmp, where
 *   ops_fill.c       creation fills (zeros, ones, full, arange), const_set,
 *                    copy_into, copy2d
 *   ops_reduce.c     reductions and mean
 *   ops_matmul.c     matmul
 *   ops_index.c      index_select, gather, scatter, index_add
 *   ops_nn.c         softmax, log_softmax, norms, rope and its tables,
 *                    attention (silu_mul is binary: ops_elementwise.c)
 *   ops_quant.c      dequantize, quantize, qmatmul, qgather (block-quantized
 *                    tensors)
 *   ops_conv.c       conv1d/2d and transposed, avg/max_pool2d, upsampling
 *   ops_sort.c       arg_sort, sort, topk
 *   random.c         rand_uniform / rand_normal front-end
 *   event.c          device events (wk_event_*)
 *   host_memory.c    pinned host memory (wk_host_alloc / wk_host_free)
 *   custom.c         custom ops (wick_ext.h: wk_apply_op*, wk_apply_inplace*)
 *   rtc.c            kernels compiled at run time (wk_rtc_*) and their disk
 *                    cache (rtc_cache.h)
 */
#ifndef WICK_CORE_H
#define WICK_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include "../backend.h"

/* ---- errors (error.c) --------------------------------------------- */

/* Set the thread's error, prefixed with the current op's name when one is
 * set. Returns status. */
wk_status wk_error(wk_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The op a public function is running (for error messages); returns the
 * previous one so calls can nest. */
const char *wk_op_enter(const char *name);
void wk_op_leave(const char *prev);
extern const wk_host_api wk_host;

/* Enter a public op: sets the name used in error messages. Use with
 * WK_LEAVE on every return path. The name must be a string constant:
 * GPU backends keep the pointer to name the op of their last launch in
 * errors that surface later. */
#define WK_ENTER(name) const char *wk_prev_op_ = wk_op_enter(name)
#define WK_LEAVE() wk_op_leave(wk_prev_op_)

/* ---- devices (device.c) -------------------------------------------- */

struct wk_device {
    const wk_backend_iface *be;
    void *ctx;
    int index;
    char name[32];
    atomic_int refs;                 /* opens + tensors alive on it      */
    int opens;                       /* under the registry lock          */
    pthread_mutex_t rng_lock;
    uint64_t seed, rng_offset;
};

wk_device *wk_device_retain(wk_device *dev);
void wk_device_release(wk_device *dev);
/* host_memory.c: whether [p, p + bytes) lies inside one wk_host_alloc
 * block of a device of dev's backend (no error set). */
bool wk_host_range_pinned(const wk_device *dev, const void *p, size_t bytes);
/* graph.c: whether dev's backend records graphs (no error set). */
bool wk_graph_supported(wk_device *dev);
/* Reserve n Philox blocks of the device's generator: returns the offset
 * to use and advances it (thread-safe). */
uint64_t wk_device_rng_take(wk_device *dev, uint64_t blocks, uint64_t *seed);

/* ---- storage and tensors (tensor.c) -------------------------------- */

/* A storage lives in one allocation with the tensor that wk_tensor_alloc
 * made for it and is freed, with that block, at its last release. */
typedef struct wk_storage {
    atomic_int refs;
    wk_device *dev;
    void *ptr;           /* backend pointer (device address for GPUs)    */
    size_t bytes;
    void (*release)(void *ctx);   /* memory of another owner (wk_from_external): */
    void *release_ctx;            /* called instead of the backend's free; or NULL */
} wk_storage;

struct wk_tensor {
    atomic_int refs;
    int scoped;          /* owned by a scope (0 or 1)                     */
    wk_storage *st;
    wk_dtype dtype;
    int rank;
    int64_t offset;
    int64_t dims[WK_MAX_RANK];     /* past rank: 0 (tensor.c keeps it so) */
    int64_t strides[WK_MAX_RANK];
#ifdef WK_DEBUG_HANDLES
    uint64_t gen;        /* this handle's number: a serial given when made */
    atomic_bool dead;    /* released: its header stays, in a quarantine    */
#endif
};

/* Handles after wk_release. A build with -DWK_DEBUG_HANDLES (make debug)
 * gives each tensor header a generation (a serial) and keeps released
 * headers, marked dead, in a quarantine of the last WK_DEBUG_QUARANTINE
 * (tensor.c) instead of freeing them, so that every public function can
 * refuse a released handle with an error naming the op, the argument and
 * the handle (WK_DEAD, in the argument checks). Other builds compile the
 * checks to nothing. */
#ifdef WK_DEBUG_HANDLES
bool wk_handle_dead(const wk_tensor *t, const char *what);   /* sets the error */
#define WK_DEAD(t, what) ((t) && wk_handle_dead((t), (what)))
#else
#define WK_DEAD(t, what) false
#endif

/* New contiguous tensor with uninitialised storage. */
wk_tensor *wk_tensor_alloc(wk_device *dev, wk_dtype dt, int rank, const int64_t *dims);
/* New view of t's storage with the given layout (retains storage). */
wk_tensor *wk_tensor_view(const wk_tensor *t, int rank, const int64_t *dims, const int64_t *strides, int64_t offset);
/* Register a freshly made tensor with the thread's scope (if any); returns t. */
wk_tensor *wk_track(wk_tensor *t);

/* ---- layout helpers (layout.c) ------------------------------------ */

/* numel of dims; for views of existing tensors (their size was checked
 * when they were made: wk_tensor_alloc, wk_tensor_view). */
int64_t wk_numel(int rank, const int64_t *dims);
/* numel of new dims: false + error when a dim is negative (WK_ERR_SHAPE)
 * or the count passes 2^63 (too_big: WK_ERR_MEMORY for an allocation,
 * WK_ERR_SHAPE for a view). */
bool wk_numel_checked(int rank, const int64_t *dims, int64_t *out, wk_status too_big);
/* Bytes of n elements of dt (dtype_traits.h's wk_dt_bytes): false +
 * error on overflow or a partial block. Every byte count from an element
 * count goes through here or wk_dt_bytes. */
bool wk_bytes_checked(wk_dtype dt, int64_t n, int64_t *out);
/* The layout rule of block-quantized dtypes (dtype_traits.h): last dim a
 * multiple of the block with stride 1, other strides and the offset
 * multiples of it. Always true for dense dtypes; false + error. */
bool wk_layout_fits_dtype(wk_dtype dt, int rank, const int64_t *dims, const int64_t *strides, int64_t offset);
bool wk_shape_valid(const char *what, wk_shape s);     /* sets an error  */
void wk_contiguous_strides(int rank, const int64_t *dims, int64_t *strides);
bool wk_layout_is_contiguous(int rank, const int64_t *dims, const int64_t *strides);
/* Normalise dim (may be negative) for a rank; -1 + error if out of range. */
int wk_norm_dim(int dim, int rank);
/* numpy broadcasting of two shapes; false + error on mismatch. */
bool wk_broadcast_shapes(int ra, const int64_t *da, int rb, const int64_t *db, int *rout, int64_t *dout);
/* t's layout expanded to (rank, dims) with stride 0 on broadcast dims. */
bool wk_broadcast_strides(const wk_tensor *t, int rank, const int64_t *dims, int64_t *strides);
/* t as a wk_view (layout unchanged). Inline: built in the caller's
 * variable, not copied out of a call (every op makes two to four). */
static inline wk_view wk_view_of(const wk_tensor *t)
{
    wk_view v;
    v.base = t->st->ptr;
    v.dtype = t->dtype;
    v.rank = t->rank;
    v.offset = t->offset;
    for (int d = 0; d < WK_MAX_RANK; d++) {      /* 0 past rank in both */
        v.dims[d] = t->dims[d];
        v.strides[d] = t->strides[d];
    }
    return v;
}
/* Merge dims that are contiguous in every view, drop size-1 dims; the n
 * views must share dims. Keeps element order. */
void wk_views_coalesce(int n, wk_view **views);
/* true when some two distinct indices of the view hit one element */
bool wk_view_overlaps(int rank, const int64_t *dims, const int64_t *strides);
/* true when the layout covers exactly numel consecutive elements in an
 * order other than row-major (a transpose or permute of a contiguous
 * tensor); out gets strides laying a fresh tensor of these dims out the
 * same way. False for row-major, empty, overlapping or gapped layouts. */
bool wk_layout_dense_permuted(int rank, const int64_t *dims, const int64_t *strides, int64_t *out);

/* ---- op table (ops_table.c) and the front-end's shared steps (frontend.c)
 * Every public op is written as: enter (names the op for errors), check
 * the arguments, allocate the result, fill a wk_op_args, wk_run it, and
 * leave. WK_API wraps an implementation function in the enter/leave pair.
 */

/* The op behind a public enum value; WK_OP_COUNT when out of range. */
wk_op wk_op_of_unary(wk_unary_op op);
wk_op wk_op_of_binary(wk_binary_op op);
wk_op wk_op_of_cmp(wk_cmp_op op);
wk_op wk_op_of_reduce(wk_reduce_op op);
/* Whether dev's backend implements op for dt (no error set). */
static inline bool wk_device_supports(const wk_device *dev, wk_op op, wk_dtype dt)
{
    return wk_op_impl_supports(dev->be->ops, dev->be->n_ops, dev->ctx, op, dt);
}
/* Check that dev's backend implements op for dt; sets an error. */
bool wk_check_supported(wk_device *dev, wk_op op, wk_dtype dt);
/* comm.c: whether dev has collectives that sum dt (wk_supports("all_reduce")) */
bool wk_comm_supports(wk_device *dev, wk_dtype dt);

/* ops_matmul.c: MATMUL's view of an operand t (rank >= 2) in a product
 * whose br batch dims are dims[0 .. br): t's batch dims aligned to the
 * right, stride 0 where t lacks one or has it 1 (broadcast); its last two
 * dims as they are. What wk_matmul passes, and the LINEAR ops' record. */
void wk_matmul_view(const wk_view *t, int br, const int64_t *dims, wk_view *v);

/* Run one op on dev's backend (args->op names it). An op the backend's
 * table lacks is WK_ERR_UNSUPPORTED, never a crash. */
/* this thread's wk_set_ids_checked (frontend.c) */
extern _Thread_local bool wk_tls_ids_checked;
static inline wk_status wk_run(wk_device *dev, const wk_op_args *args)
{
    const wk_backend_iface *be = dev->be;
    if ((unsigned)args->op >= (unsigned)be->n_ops || !be->ops[args->op].run)
        return wk_error(WK_ERR_UNSUPPORTED, "%s is not implemented on %s", wk_op_name(args->op), dev->name);
    if (__builtin_expect(wk_tls_ids_checked, 0)) {   /* the caller vouches for the ids */
        wk_op_args a = *args;
        a.flags |= WK_OPF_IDS_CHECKED;
        return be->ops[args->op].run(dev->ctx, &a);
    }
    return be->ops[args->op].run(dev->ctx, args);
}

/* Body of a public function: `T f(args) WK_API(T, "name", impl(args))`
 * runs impl with the op's name set for error messages. */
#define WK_API(T, name, call)                                                \
    {                                                                        \
        WK_ENTER(name);                                                      \
        T wk_r_ = (call);                                                    \
        WK_LEAVE();                                                          \
        return wk_r_;                                                        \
    }

/* Check that n tensors are non-NULL and on one device; sets an error.
 * (Inline, as the other checks on every op's path: the launch chain of
 * bench/launch_overhead.c counts their instructions.) */
static inline bool wk_check_tensors(int n, const wk_tensor *const *ts, const char *const *names)
{
    for (int i = 0; i < n; i++)
        if (!ts[i] || WK_DEAD(ts[i], names[i])) {
            if (!ts[i]) wk_error(WK_ERR_ARGUMENT, "%s is NULL", names[i]);
            return false;
        }
    for (int i = 1; i < n; i++)
        if (ts[i]->st->dev != ts[0]->st->dev) {
            wk_error(WK_ERR_DEVICE, "%s is on %s but %s is on %s", names[0], ts[0]->st->dev->name, names[i],
                     ts[i]->st->dev->name);
            return false;
        }
    return true;
}
/* Check that a and b share a dtype; sets an error naming both. */
static inline bool wk_check_same_dtype(const wk_tensor *a, const wk_tensor *b, const char *na, const char *nb)
{
    if (a->dtype == b->dtype) return true;
    wk_error(WK_ERR_DTYPE, "dtypes differ: %s is %s, %s is %s", na, wk_dtype_name(a->dtype), nb,
             wk_dtype_name(b->dtype));
    return false;
}
/* add_rms_norm's operand checks (ops_nn.c) without running it, for
 * wk_all_reduce_add_rms_norm, which must refuse before any rank sums;
 * sets the error. */
bool wk_add_rms_norm_check(const wk_tensor *x, const wk_tensor *residual, const wk_tensor *weight, double eps,
                           wk_tensor **sum);
/* Status from a backend call; on failure releases out (if any). */
wk_tensor *wk_finish(wk_status st, wk_tensor *out);
/* dst (any layout) = src broadcast to dst's dims, converted to dst's
 * dtype; both on one device, no checks beyond shapes. Block-quantized
 * tensors of one dtype copy as their bytes. */
wk_status wk_copy_raw(wk_tensor *dst, const wk_tensor *src);
/* Zero every element of dst (a fresh contiguous tensor). */
wk_status wk_fill_zero(wk_tensor *dst);
/* Common argument check of one-tensor ops: sets an error for NULL. */
#define WK_CHECK_T(t) ((t) ? !WK_DEAD((t), "the tensor") : (wk_error(WK_ERR_ARGUMENT, "NULL tensor"), false))
/* Convert a double to one element of dt (cast rules) into buf[8]. */
void wk_scalar_to_bytes(double v, wk_dtype dt, void *buf);
bool wk_dtype_valid(wk_dtype dt);

#ifdef WK_FAULT_INJECT
/* Fault-injection build: perturbs the result of one op so the test suite
 * can prove it notices (see Makefile: fault-check). */
void wk_fault_perturb(wk_op op, wk_tensor *out);
#define WK_FAULT(op, out) wk_fault_perturb((op), (out))
#else
#define WK_FAULT(op, out) ((void)0)
#endif

#endif /* WICK_CORE_H */
