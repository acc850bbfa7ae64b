/* wick.h — the public C API of wick, a tensor library with a CPU backend and
 * one GPU kernel source for AMD (ROCm) and NVIDIA (CUDA).
 *
 * Conventions
 *   - Every name starts with wk_ / WK_. Objects are opaque handles.
 *   - Functions that make a tensor return it, or NULL on error; functions
 *     that act return a wk_status. After an error wk_last_error() gives a
 *     message naming the op and the offending values (thread-local).
 *     No function aborts or exits on user error.
 *   - Tensors are reference counted: every tensor a function returns is
 *     owned by the caller (release it with wk_release), unless a scope is
 *     open (see wk_scope_begin), in which case the scope owns it.
 *   - Ops accept any strided, broadcast or offset view and return a new
 *     tensor, row-major contiguous except that elementwise ops on inputs
 *     that share one dense non-row-major layout (a transposed matrix)
 *     return that layout (docs/semantics.md). In-place ops (wk_const_set, wk_scatter_set,
 *     wk_scatter_add, wk_index_add, wk_copy_into) write the destination's
 *     storage, so every view of it sees the change.
 *   - Thread safety: see docs/threads.md. In short: every function may be
 *     called from several threads at once, on distinct or shared tensors,
 *     as long as no tensor is written (in-place op) by one thread while
 *     another reads or writes it. Errors and scopes are per thread.
 */
#ifndef WICK_H
#define WICK_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define WK_VERSION_MAJOR 0
#define WK_VERSION_MINOR 1
#define WK_VERSION_PATCH 0
#define WK_MAX_RANK 8

/* ------------------------------------------------------------------ */
/* status and errors                                                   */

typedef enum wk_status {
    WK_OK = 0,
    WK_ERR_ARGUMENT,      /* a NULL handle, a bad value                  */
    WK_ERR_SHAPE,         /* shapes or ranks that do not fit             */
    WK_ERR_DTYPE,         /* a dtype the op does not take, or mismatched */
    WK_ERR_DEVICE,        /* no such device, or tensors on two devices   */
    WK_ERR_INDEX,         /* an id or a dim out of range                 */
    WK_ERR_MEMORY,        /* allocation failed                           */
    WK_ERR_UNSUPPORTED,   /* the backend does not implement this op      */
    WK_ERR_BACKEND,       /* a runtime (HIP/CUDA/BLAS) call failed       */
    WK_ERR_IO,            /* a file could not be read or is corrupt      */
    WK_STATUS_COUNT
} wk_status;

const char *wk_last_error(void);      /* "" when there is none        */
wk_status wk_last_status(void);
void wk_clear_error(void);
const char *wk_status_name(wk_status s);

/* ------------------------------------------------------------------ */
/* dtypes                                                              */

typedef enum wk_dtype {
    WK_U8 = 0,
    WK_U32,
    WK_I16,
    WK_I32,
    WK_I64,
    WK_BF16,
    WK_F16,
    WK_F32,
    WK_F64,
    WK_F8E4M3,          /* OCP E4M3FN: no Inf, saturating to +-448 */
    /* Block-quantized dtypes (GGUF's layouts, byte for byte): `block`
     * elements packed into `block_bytes` bytes. A tensor of one is
     * row-contiguous: its last dim a multiple of the block, views narrow
     * or select rows only. Ops that do not take them say so. */
    WK_Q4_0,            /*  32 elements in  18 bytes */
    WK_Q4_1,            /*  32 elements in  20 bytes */
    WK_Q5_0,            /*  32 elements in  22 bytes */
    WK_Q5_1,            /*  32 elements in  24 bytes */
    WK_Q8_0,            /*  32 elements in  34 bytes */
    WK_Q8_1,            /*  32 elements in  36 bytes */
    WK_Q2_K,            /* 256 elements in  84 bytes */
    WK_Q3_K,            /* 256 elements in 110 bytes */
    WK_Q4_K,            /* 256 elements in 144 bytes */
    WK_Q5_K,            /* 256 elements in 176 bytes */
    WK_Q6_K,            /* 256 elements in 210 bytes */
    WK_Q8_K,            /* 256 elements in 292 bytes */
    /* GGUF's IQ types: codes that index fixed lattices (iq2/iq3/iq1) or a
     * nonlinear 4-bit value list (iq4), with block scales. */
    WK_IQ4_NL,          /*  32 elements in  18 bytes */
    WK_IQ4_XS,          /* 256 elements in 136 bytes */
    WK_IQ3_XXS,         /* 256 elements in  98 bytes */
    WK_IQ3_S,           /* 256 elements in 110 bytes */
    WK_IQ2_XXS,         /* 256 elements in  66 bytes */
    WK_IQ2_XS,          /* 256 elements in  74 bytes */
    WK_IQ2_S,           /* 256 elements in  82 bytes */
    WK_IQ1_S,           /* 256 elements in  50 bytes */
    WK_IQ1_M,           /* 256 elements in  56 bytes */
    WK_DTYPE_COUNT
} wk_dtype;
/* The dense dtypes are the first WK_DENSE_DTYPE_COUNT (u8 .. f8e4m3). */
#define WK_DENSE_DTYPE_COUNT 10

const char *wk_dtype_name(wk_dtype dt);   /* "f32", "q4_k", ...; "?" if invalid */
/* Bytes of one element of a dense dtype; 0 for block-quantized and
 * invalid dtypes (see wk_dtype_block_bytes, wk_tensor_nbytes). */
size_t wk_dtype_size(wk_dtype dt);
size_t wk_dtype_block_size(wk_dtype dt);  /* elements per block: 1 if dense; 0 if invalid */
size_t wk_dtype_block_bytes(wk_dtype dt); /* bytes per block; 0 if invalid */
bool wk_dtype_is_float(wk_dtype dt);
bool wk_dtype_is_quantized(wk_dtype dt);
bool wk_dtype_from_name(const char *name, wk_dtype *out);

/* ------------------------------------------------------------------ */
/* shapes                                                              */

typedef struct wk_shape {
    int rank;
    int64_t dims[WK_MAX_RANK];
} wk_shape;

#define WK_NARGS_(a, b, c, d, e, f, g, h, N, ...) N
#define WK_NARGS(...) WK_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
/* WK_SHAPE(4, 3) is a rank-2 shape; WK_SCALAR is rank 0. */
#define WK_SHAPE(...) ((wk_shape){ WK_NARGS(__VA_ARGS__), { __VA_ARGS__ } })
#define WK_SCALAR ((wk_shape){ 0, { 0 } })

/* ------------------------------------------------------------------ */
/* devices                                                             */

typedef struct wk_device wk_device;

typedef struct wk_device_info {
    char name[64];          /* "cpu", "cuda:0", "rocm:1"                */
    char model[128];        /* "NVIDIA H100 80GB HBM3", CPU model, ...  */
    uint64_t total_memory;  /* bytes                                    */
    uint64_t free_memory;   /* bytes                                    */
    int compute_units;      /* multiprocessors / CUs / CPU threads      */
    int warp_size;          /* 32 or 64 on GPUs; 1 on the CPU            */
} wk_device_info;

/* "cpu", "cuda:N", "rocm:N" (N defaults to 0). NULL + error if absent.
 * Opening the same name twice returns the same device with a new
 * reference; each open needs one close. */
wk_device *wk_device_open(const char *name);
void wk_device_close(wk_device *dev);
const char *wk_device_name(const wk_device *dev);
wk_status wk_device_info_get(wk_device *dev, wk_device_info *out);
wk_status wk_device_synchronize(wk_device *dev);
/* Number of devices of a kind ("cpu", "cuda", "rocm"); 0 when the plugin
 * is absent or finds none. */
int wk_device_count(const char *kind);
/* Why a GPU plugin did not load ("" when it loaded or was not looked for). */
const char *wk_plugin_status(const char *kind);
/* Seed the device's generator; also resets its offset to 0. */
wk_status wk_device_set_seed(wk_device *dev, uint64_t seed);

/* ------------------------------------------------------------------ */
/* tensors                                                             */

typedef struct wk_tensor wk_tensor;

wk_tensor *wk_retain(wk_tensor *t);   /* returns t                       */
void wk_release(wk_tensor *t);        /* NULL is fine                    */

wk_dtype wk_tensor_dtype(const wk_tensor *t);
int wk_tensor_rank(const wk_tensor *t);
wk_shape wk_tensor_shape(const wk_tensor *t);
int64_t wk_tensor_dim(const wk_tensor *t, int dim);     /* dim may be < 0 */
int64_t wk_tensor_stride(const wk_tensor *t, int dim);  /* in elements    */
int64_t wk_tensor_offset(const wk_tensor *t);           /* in elements    */
int64_t wk_tensor_numel(const wk_tensor *t);
/* Bytes the view's elements take when laid out contiguously (what
 * wk_to_host writes): numel x element size, or whole blocks for a
 * block-quantized dtype. */
size_t wk_tensor_nbytes(const wk_tensor *t);
bool wk_tensor_is_contiguous(const wk_tensor *t);
wk_device *wk_tensor_device(const wk_tensor *t);
/* true when both views share one storage */
bool wk_tensor_same_storage(const wk_tensor *a, const wk_tensor *b);

/* Scopes: model code makes many temporaries. Every tensor made while a
 * scope is open belongs to the innermost scope; wk_scope_end releases them
 * all except those passed to wk_keep, which move to the enclosing scope
 * (or to the caller when no scope encloses it). Scopes are per thread and
 * nest. wk_release on a scope-owned tensor is allowed: the scope then
 * forgets it. */
void wk_scope_begin(void);
void wk_scope_end(void);
wk_tensor *wk_keep(wk_tensor *t);     /* returns t */

/* What is alive now, in this process: tensor handles (views included) not
 * yet released, storages (buffers) not yet freed and their bytes, over
 * every device. Counted with relaxed atomics as handles come and go, so
 * it costs next to nothing; for finding leaks (a server's /metrics shows
 * it: a steady state comes back to the same numbers). */
typedef struct wk_live_stats {
    int64_t tensors;          /* handles: wk_release not yet brought to 0 */
    int64_t storages;         /* buffers held by one or more handles       */
    int64_t storage_bytes;    /* their bytes                               */
} wk_live_stats;
wk_live_stats wk_live_stats_get(void);

/* ------------------------------------------------------------------ */
/* creation and transfer                                               */

wk_tensor *wk_empty(wk_device *dev, wk_dtype dt, wk_shape shape);
wk_tensor *wk_zeros(wk_device *dev, wk_dtype dt, wk_shape shape);
wk_tensor *wk_ones(wk_device *dev, wk_dtype dt, wk_shape shape);
wk_tensor *wk_full(wk_device *dev, wk_dtype dt, wk_shape shape, double value);
/* start, start+step, ... while < end (> end for a negative step); 1-d */
wk_tensor *wk_arange(wk_device *dev, wk_dtype dt, double start, double end, double step);
/* Copies wk_tensor_nbytes of the new tensor from host memory (row-major;
 * for a block-quantized dtype, whole blocks as GGUF stores them). */
wk_tensor *wk_from_host(wk_device *dev, wk_dtype dt, wk_shape shape, const void *data);
/* Copies the tensor (any view) to host memory, row-major, synchronizing.
 * bytes must be at least wk_tensor_nbytes(t). */
wk_status wk_to_host(const wk_tensor *t, void *dst, size_t bytes);
/* Copies host memory (row-major, wk_tensor_nbytes of t; bytes must be at
 * least that) into an existing tensor (any view), in place. Returns once
 * the host data has been read; the copy is ordered with the device's ops. */
wk_status wk_write(wk_tensor *t, const void *src, size_t bytes);
/* One element as a double (for tests and scalars). */
wk_status wk_item(const wk_tensor *t, const int64_t *index, double *out);
wk_tensor *wk_to_device(const wk_tensor *t, wk_device *dev);
/* Uniform in [lo, hi) and normal(mean, std), from the device's
 * counter-based generator (docs/random.md): the same seed gives the same
 * values on every device. Float dtypes only. */
wk_tensor *wk_rand_uniform(wk_device *dev, wk_dtype dt, wk_shape shape, double lo, double hi);
wk_tensor *wk_rand_normal(wk_device *dev, wk_dtype dt, wk_shape shape, double mean, double std);

/* ------------------------------------------------------------------ */
/* memory shared with other libraries (DLPack, buffers, numpy)          */

/* The address of t's first element (its storage's start + its offset):
 * host memory on the cpu, a device address on a GPU, where work that
 * writes it may still be queued (wk_device_synchronize before another
 * stream or the host reads it). Valid while a view of the storage lives;
 * NULL for NULL. */
void *wk_tensor_data(const wk_tensor *t);
/* A tensor over memory that wick did not allocate, without a copy: data
 * is the address of element [0, ..., 0] on dev (host memory for the cpu,
 * a device address of dev on a GPU), aligned to the element size;
 * strides in elements, none negative (0 broadcasts), NULL for row-major.
 * The owner keeps the memory valid until release(ctx), which wick calls
 * once, from whichever thread lets go of the last view of it (release
 * may be NULL). On error: NULL, and release is not called. */
wk_tensor *wk_from_external(wk_device *dev, wk_dtype dt, wk_shape shape, const int64_t *strides, void *data,
                            void (*release)(void *ctx), void *ctx);

/* ------------------------------------------------------------------ */
/* pinned host memory                                                  */

/* Page-locked ("pinned") host memory for fast transfers. wk_from_host
 * from, and wk_to_host into, any range that lies inside one such block
 * move in one direct DMA copy at the bus rate; ordinary (pageable) memory
 * is copied through the device's staging buffers. The block is fast with
 * every device of dev's kind ("cuda", "rocm"); on the cpu device it is
 * ordinary 64-byte-aligned memory. Use it as malloc'd
 * memory; free it with wk_host_free. Pinning is slow and the memory is
 * taken from the OS's pageable pool: allocate large buffers once and
 * reuse them. bytes == 0 gives a minimal block. NULL + error on failure.
 * A block keeps dev open until it is freed. */
void *wk_host_alloc(wk_device *dev, size_t bytes);
/* Queue a copy of t (any view, row-major as wk_to_host writes it) into
 * dst, which must lie inside one wk_host_alloc block of a device of t's
 * kind (else WK_ERR_ARGUMENT), behind the work queued on t's device so
 * far, and return without waiting for it: dst holds the data once an
 * event recorded after this call has been passed (wk_event_synchronize)
 * or after wk_device_synchronize. The host must not read dst before, nor
 * free it. On the cpu the copy is done when this returns. A copy cannot
 * be recorded in a graph (WK_ERR_UNSUPPORTED while recording). */
wk_status wk_to_host_async(const wk_tensor *t, void *dst, size_t bytes);
/* NULL is fine; a pointer wk_host_alloc did not return (or an inner
 * pointer, or one freed already) sets WK_ERR_ARGUMENT and frees nothing. */
void wk_host_free(void *ptr);

/* ------------------------------------------------------------------ */
/* events: markers in a device's stream of work, for timing             */

/* An event marks a point in the work a device has been given. On a GPU,
 * work runs asynchronously on the device's one stream; an event recorded
 * there takes its timestamp when the device reaches it, so the time
 * between two events is device time, free of launch and synchronization
 * latency on the host (as CUDA/HIP events). On the cpu, whose ops are
 * done when they return, recording takes the host's monotonic clock.
 *
 *   wk_event *a = wk_event_new(dev), *b = wk_event_new(dev);
 *   wk_event_record(a);  y = wk_exp(x);  wk_event_record(b);
 *   double ms;  wk_event_elapsed_ms(a, b, &ms);     // waits for b
 *
 * An event keeps its device open until wk_event_free. Recording an event
 * again moves its mark. An event may be used from any thread, but not
 * recorded by one thread while another uses it. */
typedef struct wk_event wk_event;

/* A new event of dev, not yet recorded; NULL + error on failure. */
wk_event *wk_event_new(wk_device *dev);
/* NULL is fine. An event whose mark the device has not reached yet may
 * be freed; the device lets go of it when it gets there. */
void wk_event_free(wk_event *ev);
/* Mark the point the device's work has reached: everything called on
 * the device before this (from any thread) comes before the mark. */
wk_status wk_event_record(wk_event *ev);
/* Wait until the device has passed the event's mark. An event never
 * recorded is an error (WK_ERR_ARGUMENT). */
wk_status wk_event_synchronize(wk_event *ev);
/* Milliseconds from start's mark to end's (waits for both): device time
 * on a GPU (resolution about 0.5 us), host time on the cpu; negative when
 * end's mark comes first. Both must be recorded (WK_ERR_ARGUMENT) and of
 * the same device (WK_ERR_DEVICE). */
wk_status wk_event_elapsed_ms(const wk_event *start, const wk_event *end, double *ms);

/* ------------------------------------------------------------------ */
/* graphs: a stretch of a device's work recorded once, replayed often   */

/* Between wk_graph_begin and wk_graph_end the ops called on a GPU device
 * are recorded instead of run (CUDA/HIP graphs); wk_graph_launch then
 * queues the whole stretch again at the cost of one launch, on the
 * device's stream like any op. A replay reads and writes the same
 * memory the recording did: the inputs it reads are tensors to refill
 * (wk_write) before a launch, its outputs are tensors made while
 * recording, which keep being rewritten by every replay. Parameters the
 * host passes to an op (shapes, offsets, scalars) are frozen in the
 * graph; what must change between replays has to come from device
 * memory: a position as wk_rope_kv's pos tensor, rows picked by
 * wk_index_select / wk_scatter_set with device ids, the keys attention
 * sees as wk_attention_opts.mask.
 *
 *   wk_graph_begin(dev);  y = f(x);  wk_graph *g = wk_graph_end(dev);
 *   for (...) { wk_write(x, host);  wk_graph_launch(g);  wk_to_host(y, ...); }
 *   wk_graph_free(g);  // then free y
 *
 * While recording, one thread calls ops on the device; host transfers,
 * synchronizations and ops that would wait for the device (an index op's
 * check of its ids, which inside a graph is not made: a read through an
 * out-of-range id gives zeros, a write through one writes nothing) are
 * refused or skipped. Memory the recorded ops allocate or free stays
 * with the graph until wk_graph_free, so the tensors of the recorded
 * stretch may be freed as usual. wk_supports(dev, "graph", dt) says
 * whether dev records (GPUs; not the cpu). */
typedef struct wk_graph wk_graph;

/* Start recording dev's work on this thread. */
wk_status wk_graph_begin(wk_device *dev);
/* Stop recording: the graph, or NULL + error (an op failed or was not
 * recordable; the recording is dropped either way). */
wk_graph *wk_graph_end(wk_device *dev);
/* Queue one replay (returns before it runs, as ops do). */
wk_status wk_graph_launch(wk_graph *g);
/* NULL is fine. Waits for the graph's replays queued so far. */
void wk_graph_free(wk_graph *g);

/* ------------------------------------------------------------------ */
/* views (share storage) and layout ops                                */

wk_tensor *wk_reshape(const wk_tensor *t, wk_shape shape);  /* copies only when strides forbid a view; one dim may be -1 */
wk_tensor *wk_narrow(const wk_tensor *t, int dim, int64_t start, int64_t len);
wk_tensor *wk_transpose(const wk_tensor *t, int dim0, int dim1);
wk_tensor *wk_permute(const wk_tensor *t, const int *perm);  /* rank entries */
wk_tensor *wk_broadcast_as(const wk_tensor *t, wk_shape shape);
wk_tensor *wk_squeeze(const wk_tensor *t, int dim);          /* dim must have size 1 */
wk_tensor *wk_unsqueeze(const wk_tensor *t, int dim);        /* dim in [-rank-1, rank] */
wk_tensor *wk_flatten(const wk_tensor *t, int start_dim, int end_dim);
wk_tensor *wk_contiguous(const wk_tensor *t);  /* a new reference to t when already contiguous */
wk_tensor *wk_copy(const wk_tensor *t);        /* always a fresh contiguous copy */
wk_tensor *wk_to_dtype(const wk_tensor *t, wk_dtype dt);
wk_tensor *wk_cat(wk_tensor *const *ts, int n, int dim);
wk_tensor *wk_stack(wk_tensor *const *ts, int n, int dim);
/* Splits dim into n chunks of ceil(size/n) (the last smaller, as many as
 * needed); writes up to n views into out and returns how many, or -1. */
int wk_chunk(const wk_tensor *t, int n, int dim, wk_tensor **out);

/* ------------------------------------------------------------------ */
/* elementwise ops                                                     */

typedef enum wk_unary_op {
    WK_EXP, WK_LOG, WK_SIN, WK_COS, WK_TANH, WK_ABS, WK_NEG, WK_RECIP,
    WK_SQR, WK_SQRT, WK_GELU, WK_GELU_ERF, WK_ERF, WK_RELU, WK_SILU,
    WK_FLOOR, WK_CEIL, WK_ROUND, WK_SIGN, WK_SIGMOID,
    WK_UNARY_COUNT
} wk_unary_op;

typedef enum wk_binary_op {
    WK_ADD, WK_SUB, WK_MUL, WK_DIV, WK_MINIMUM, WK_MAXIMUM,
    WK_BINARY_COUNT
} wk_binary_op;

typedef enum wk_cmp_op {
    WK_EQ, WK_NE, WK_LT, WK_LE, WK_GT, WK_GE,
    WK_CMP_COUNT
} wk_cmp_op;

const char *wk_unary_name(wk_unary_op op);
const char *wk_binary_name(wk_binary_op op);
const char *wk_cmp_name(wk_cmp_op op);

wk_tensor *wk_unary(wk_unary_op op, const wk_tensor *t);
wk_tensor *wk_exp(const wk_tensor *t);
wk_tensor *wk_log(const wk_tensor *t);
wk_tensor *wk_sin(const wk_tensor *t);
wk_tensor *wk_cos(const wk_tensor *t);
wk_tensor *wk_tanh(const wk_tensor *t);
wk_tensor *wk_abs(const wk_tensor *t);
wk_tensor *wk_neg(const wk_tensor *t);
wk_tensor *wk_recip(const wk_tensor *t);
wk_tensor *wk_sqr(const wk_tensor *t);
wk_tensor *wk_sqrt(const wk_tensor *t);
wk_tensor *wk_gelu(const wk_tensor *t);      /* tanh approximation */
wk_tensor *wk_gelu_erf(const wk_tensor *t);
wk_tensor *wk_erf(const wk_tensor *t);
wk_tensor *wk_relu(const wk_tensor *t);
wk_tensor *wk_silu(const wk_tensor *t);
wk_tensor *wk_floor(const wk_tensor *t);
wk_tensor *wk_ceil(const wk_tensor *t);
wk_tensor *wk_round(const wk_tensor *t);     /* half to even */
wk_tensor *wk_sign(const wk_tensor *t);
wk_tensor *wk_sigmoid(const wk_tensor *t);   /* 1 / (1 + e^-x) */
wk_tensor *wk_affine(const wk_tensor *t, double mul, double add);  /* x*mul+add */
wk_tensor *wk_powf(const wk_tensor *t, double e);                  /* x^e      */
wk_tensor *wk_elu(const wk_tensor *t, double alpha);

/* Binary ops broadcast both operands (numpy rules); same dtype required.
 * Integer division by zero gives 0; integers wrap. */
wk_tensor *wk_binary(wk_binary_op op, const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_add(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_sub(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_mul(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_div(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_minimum(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_maximum(const wk_tensor *a, const wk_tensor *b);
/* Comparisons broadcast and give u8 (1 true, 0 false). */
wk_tensor *wk_cmp(wk_cmp_op op, const wk_tensor *a, const wk_tensor *b);
/* cond (u8, u32 or i64; nonzero is true) ? a : b, all three broadcast. */
wk_tensor *wk_where(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b);

/* ------------------------------------------------------------------ */
/* reductions                                                          */

typedef enum wk_reduce_op {
    WK_SUM, WK_MIN, WK_MAX, WK_ARGMIN, WK_ARGMAX,
    WK_REDUCE_COUNT
} wk_reduce_op;

/* Reduce over the listed dims (negative allowed, no repeats); dims ==
 * NULL reduces over every dim. An empty reduced extent gives 0 for sum and
 * is an error for min/max/argmin/argmax.
 * Sum/min/max keep the dtype; argmin/argmax give u32 indices into the
 * reduced dims flattened in row-major order. */
wk_tensor *wk_reduce(wk_reduce_op op, const wk_tensor *t, const int *dims, int ndims, bool keepdim);
wk_tensor *wk_sum(const wk_tensor *t, const int *dims, int ndims, bool keepdim);
wk_tensor *wk_mean(const wk_tensor *t, const int *dims, int ndims, bool keepdim);  /* float dtypes */
wk_tensor *wk_max(const wk_tensor *t, const int *dims, int ndims, bool keepdim);
wk_tensor *wk_min(const wk_tensor *t, const int *dims, int ndims, bool keepdim);
wk_tensor *wk_argmax(const wk_tensor *t, int dim, bool keepdim);
wk_tensor *wk_argmin(const wk_tensor *t, int dim, bool keepdim);

/* ------------------------------------------------------------------ */
/* matmul                                                              */

/* a [..., m, k] x b [..., k, n] -> [..., m, n]; batch dims broadcast;
 * f16, bf16, f32, f64 (f16/bf16 accumulate in f32). Rank >= 2. */
wk_tensor *wk_matmul(const wk_tensor *a, const wk_tensor *b);

/* ------------------------------------------------------------------ */
/* fused NN ops (docs/nn.md)                                           */
/* f16, bf16, f32 and f64 on every device (attention: f16, bf16, f32 on */
/* GPUs); every input in one dtype unless said otherwise; f16/bf16     */
/* compute and accumulate in f32. Results are new contiguous tensors.  */

/* exp(x - max) / sum(exp(x - max)) along dim (negative allowed); a row
 * whose values are all -inf gives NaN, as PyTorch does. */
wk_tensor *wk_softmax(const wk_tensor *x, int dim);
/* x - max - log(sum(exp(x - max))) along dim. */
wk_tensor *wk_log_softmax(const wk_tensor *x, int dim);

/* x / sqrt(mean(x^2) + eps) * weight over the last dim; weight is 1-d of
 * the last dim's size, or NULL for none. */
wk_tensor *wk_rms_norm(const wk_tensor *x, const wk_tensor *weight, double eps);
/* The Gemma form: x / sqrt(mean(x^2) + eps) * (1 + weight). */
wk_tensor *wk_rms_norm_gemma(const wk_tensor *x, const wk_tensor *weight, double eps);
/* The residual stream in one pass: *sum = x + residual (a new tensor,
 * x's shape; x and residual of one shape), and the result is
 * wk_rms_norm(*sum, weight, eps) (gemma: the Gemma form). On error *sum
 * is NULL. */
wk_tensor *wk_add_rms_norm(const wk_tensor *x, const wk_tensor *residual, const wk_tensor *weight, double eps,
                           bool gemma, wk_tensor **sum);
/* (x - mean) / sqrt(var + eps) * weight + bias over the last dim (var
 * biased); weight and bias 1-d of the last dim's size, or NULL. */
wk_tensor *wk_layer_norm(const wk_tensor *x, const wk_tensor *weight, const wk_tensor *bias, double eps);

/* silu(a) * b (the SwiGLU gate); a and b broadcast as wk_binary. */
wk_tensor *wk_silu_mul(const wk_tensor *a, const wk_tensor *b);
/* A SwiGLU feed-forward's first half in one call: w [2F, K] holds the
 * gate projection's F rows, then the up projection's F rows (any row
 * stride, last stride 1), x is [..., K], and the result [..., F] is
 * wk_silu_mul(x . w[:F]^T, x . w[F:]^T), each product as wk_matmul makes
 * it (a dense w has x's dtype; the result is x's dtype) or, for a
 * block-quantized w or an f16/bf16 one under x of another dtype, as
 * wk_qmatmul does; the same bits as those calls. */
wk_tensor *wk_linear_silu_mul(const wk_tensor *x, const wk_tensor *w);

/* Rotary embeddings. x is [B, H, T, D] (wk_rope, wk_rope_i) or
 * [B, T, H, D] (wk_rope_thd), D even; cos and sin are [n_pos, D/2]
 * tables (any float dtype; used as f32), and position t of x rotates by
 * row t + pos_offset (pos_offset + T <= n_pos), so a decode step passes
 * its absolute position. With c = cos[p][i], s = sin[p][i]:
 *   wk_rope, wk_rope_thd (halves, Llama/NeoX): the pair (x[i], x[i + D/2])
 *   wk_rope_i (interleaved, GPT-J):           the pair (x[2i], x[2i + 1])
 * becomes (x0 c - x1 s, x0 s + x1 c). */
wk_tensor *wk_rope(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset);
wk_tensor *wk_rope_i(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset);
wk_tensor *wk_rope_thd(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset);

/* A decoding step's rotary embedding and KV-cache append in one launch.
 * qkv [B, T, Hq + 2 Hkv, D] holds each token's n_q query heads, then its
 * key heads, then its value heads (one fused q/k/v projection's output,
 * reshaped; any strides with the last 1). The query and key heads rotate
 * as wk_rope_thd's (interleaved false: halves) or wk_rope_i's (true:
 * adjacent pairs) at positions p .. p + T - 1; the rotated keys and the
 * values are written to rows p .. p + T - 1 of k_cache and v_cache
 * [B, Hkv, C, D] (any views with the last stride 1); the rotated queries
 * are returned, [B, T, Hq, D] contiguous. p is pos_offset, or, when pos is
 * given, its value read on the device (a u32 or i64 tensor of one
 * element: a recorded graph's position, wk_graph_begin): then a row whose
 * position is past the tables or the caches writes no cache row and
 * gives zero queries; pos_offset out of range is an error. */
wk_tensor *wk_rope_kv(const wk_tensor *qkv, int64_t n_q, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset,
                      const wk_tensor *pos, bool interleaved, wk_tensor *k_cache, wk_tensor *v_cache);
/* The fused q/k/v projection and wk_rope_kv in one call: x [T, K], w
 * [H D, K] (the query heads' rows, then the keys', then the values'; any
 * row stride, last stride 1; D is twice cos's last dim), and the result
 * is wk_rope_kv(x . w^T as [1, T, H, D], ...): the product as wk_matmul
 * makes it (a dense w has x's dtype) or, for a block-quantized w or an
 * f16/bf16 one under x of another dtype, as wk_qmatmul does; the same
 * bits as those calls. On a GPU one row of a
 * dense f16/bf16 w is one launch. */
wk_tensor *wk_linear_rope_kv(const wk_tensor *x, const wk_tensor *w, int64_t n_q, const wk_tensor *cos,
                             const wk_tensor *sin, int64_t pos_offset, const wk_tensor *pos, bool interleaved,
                             wk_tensor *k_cache, wk_tensor *v_cache);

typedef enum wk_rope_scaling_type {
    WK_ROPE_SCALING_NONE,
    WK_ROPE_SCALING_LINEAR,   /* positions divided by factor                  */
    WK_ROPE_SCALING_LLAMA3    /* Llama 3.1's frequency-dependent scaling      */
} wk_rope_scaling_type;

typedef struct wk_rope_scaling {
    wk_rope_scaling_type type;
    double factor;                 /* LINEAR, LLAMA3 (8 for Llama 3.1)          */
    double low_freq_factor;        /* LLAMA3 (1)                                */
    double high_freq_factor;       /* LLAMA3 (4)                                */
    double original_max_position;  /* LLAMA3 (8192)                             */
} wk_rope_scaling;

/* cos and sin tables for positions 0 .. n_pos-1 of a head of dim
 * head_dim (even): frequency i = base^(-2i/head_dim), scaled as asked
 * (scaling NULL: none); f32 [n_pos, head_dim/2] on dev, computed in
 * double. On error both are NULL. */
wk_status wk_rope_tables(wk_device *dev, int64_t head_dim, double base, int64_t n_pos,
                         const wk_rope_scaling *scaling, wk_tensor **cos, wk_tensor **sin);

/* Options of wk_attention; zero-initialised means the defaults. */
typedef struct wk_attention_opts {
    double scale;            /* 0: 1/sqrt(D)                                  */
    bool causal;             /* query i sees keys j <= i + Tk - Tq            */
    int64_t window;          /* > 0: query i sees only keys j > i + Tk - Tq - window */
    double softcap;          /* > 0: scores become softcap * tanh(s / softcap) */
    const wk_tensor *mask;   /* additive, broadcastable to [B, Hq, Tq, Tk],
                                any float dtype (used as f32); NULL: none      */
    /* NULL: all Tk keys. Else one element, u32 or i64, on q's device: a
     * count L of keys read when the op runs (so it may come from device
     * memory a recorded graph rewrites): only keys j < min(L, Tk) exist,
     * and L takes Tk's place above (query i sits at key i + L - Tq).
     * L <= 0: no key (zeros). The KV cache of a decode step: its length. */
    const wk_tensor *kv_len;
} wk_attention_opts;

/* out [B, Hq, Tq, D] = softmax(scale * q k^T (soft-capped) + mask) v, in
 * q's dtype, accumulated in f32 (f64 for f64). q [B, Hq, Tq, D]; k and v
 * [B, Hkv, Tk, D] with Hq a multiple of Hkv (grouped-query heads: query
 * head h reads kv head h / (Hq / Hkv)); any strides (a transposed view of
 * [B, T, H, D] goes in without a copy). A query that sees no key gets
 * zeros. D: a multiple of 8 up to 256 on GPUs, any on the cpu. opts NULL:
 * the defaults. */
wk_tensor *wk_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v, const wk_attention_opts *opts);

/* Ids the caller has checked: while set (on this thread), the ops that
 * take ids (index_select, gather, scatter_set/add, index_add, qgather,
 * paged_attention) are told so, and a GPU does not check them again (the
 * host no longer waits for each check's answer, so back-to-back ops stay
 * queued); an id out of range then reads zeros and writes nothing, with
 * no error, as inside a recorded graph. The cpu checks them anyway (on
 * the host, no wait). Returns the previous setting, to restore. */
bool wk_set_ids_checked(bool on);

/* Options of wk_paged_attention; zero-initialised means the defaults. */
typedef struct wk_paged_attention_opts {
    double scale;            /* 0: 1/sqrt(D)                                  */
    int64_t window;          /* > 0: a query at position p sees only keys at
                                positions > p - window                        */
    double softcap;          /* > 0: scores become softcap * tanh(s / softcap) */
} wk_paged_attention_opts;

/* Attention of a flat batch of query tokens from many sequences over a
 * paged KV cache (docs/nn.md, "Paged attention"): the batched engine's
 * attention, decode rows and prefill chunks in one call.
 *   q [T, Hq, D]: T query tokens (any strides, the last 1)
 *   k_pool, v_pool [NB, BS, Hkv, D]: NB blocks of BS positions (any
 *     strides, the last 1); Hq a multiple of Hkv (grouped-query heads)
 *   block_table u32 [S, MB]: block i of sequence s is block
 *     block_table[s, i] of the pools
 *   seq u32 [T]: the sequence of each query token (a row of block_table)
 *   pos u32 [T]: its position in that sequence
 * Query t sees the keys of its sequence at positions j <= pos[t] (and
 * j > pos[t] - window), key j at row j % BS of block block_table[seq[t],
 * j / BS]: causal attention, the token's own key included (write it to the
 * pools first). out [T, Hq, D] in q's dtype, accumulated in f32 (f64 for
 * f64): softmax(scale q k^T, soft-capped) v. seq[t] >= S, pos[t] >= MB BS,
 * or a block id >= NB among the blocks a query reads: WK_ERR_INDEX.
 * f16, bf16, f32 on every device (f64 on the cpu); D a multiple of 8 up to
 * 256 on GPUs. opts NULL: the defaults. */
wk_tensor *wk_paged_attention(const wk_tensor *q, const wk_tensor *k_pool, const wk_tensor *v_pool,
                              const wk_tensor *block_table, const wk_tensor *seq, const wk_tensor *pos,
                              const wk_paged_attention_opts *opts);

/* ------------------------------------------------------------------ */
/* quantized tensors (docs/quantization.md)                            */
/* GGUF's block types (WK_Q4_0 .. WK_IQ1_M) as data: convert them to and */
/* from floats, multiply by a quantized weight matrix, look rows up.   */
/* Float results are f32, f16 or bf16 (the f32 value rounded once to   */
/* nearest even) and new contiguous tensors. Each op is filed in       */
/* wk_supports under the block dtype: wk_supports(dev, "qmatmul",      */
/* WK_Q4_K) says whether dev multiplies by a q4_k matrix.              */

/* t (block-quantized, any shape and view) decoded to dt (WK_F32, WK_F16
 * or WK_BF16), t's shape. The f32 values are bit for bit those of the
 * gguf Python package's dequantize (and ggml's dequantize_row_*); q8_1
 * and q8_k, which that package does not take, as ggml defines them
 * (d * q). */
wk_tensor *wk_dequantize(const wk_tensor *t, wk_dtype dt);
/* t (f32, any view, rank >= 1, last dim a multiple of qtype's block: 32
 * or 256 elements) quantized to the block dtype qtype, t's shape. Byte
 * for byte llama.cpp's reference quantizer of the type
 * (quantize_row_*_ref, the one that writes GGUF files without an
 * importance matrix); for q4_0, q4_1, q5_0, q5_1 and q8_0 also the gguf
 * package's quantize. Of the IQ types only iq4_nl and iq4_xs: the
 * lattice types (iq3_xxs .. iq1_m) are WK_ERR_UNSUPPORTED (their
 * quantizers need an importance matrix). Every block is quantized on its own. Non-finite
 * values give blocks that are defined but meaningless. */
wk_tensor *wk_quantize(const wk_tensor *t, wk_dtype qtype);
/* y [..., n] = x [..., k] . w^T: w a 2-d block-quantized [n, k] matrix
 * (k a multiple of its block; rows may be a view), x f32, f16 or bf16 of
 * any rank >= 1 and any strides; y in x's dtype. The cpu multiplies x by
 * w dequantized to f32, accumulating in f32; with WICK_CPU_QDOT=1 it
 * quantizes x to 8-bit blocks and takes integer dot products, as
 * llama.cpp does (docs/cpu-qdot.md). w may also be a dense f16 or bf16
 * [n, k] matrix (a model file's, kept as stored), where the device takes
 * it (wk_supports(dev, "qmatmul", WK_BF16): the cpu; not GPUs): each
 * product exact in f32, summed in f32, one order per (row of x, row of
 * w) whatever the batch. */
wk_tensor *wk_qmatmul(const wk_tensor *x, const wk_tensor *w);
/* Rows of a quantized table (an embedding lookup): table 2-d
 * block-quantized [rows, cols], ids u8, u32 or i64 of any shape of rank
 * < 8; the result has ids' shape + [cols] in dt (WK_F32, WK_F16,
 * WK_BF16), row ids[i] decoded as wk_dequantize does. An id out of
 * range is WK_ERR_INDEX. */
wk_tensor *wk_qgather(const wk_tensor *table, const wk_tensor *ids, wk_dtype dt);

/* ------------------------------------------------------------------ */
/* convolutions, pooling, upsampling (docs/conv.md)                     */
/* f16, bf16, f32, f64 on the cpu (wk_supports says which elsewhere);   */
/* every tensor of one call in one dtype; f16/bf16 compute and         */
/* accumulate in f32. Inputs any view; results new contiguous tensors. */
/* Per-dim options: index 0 is H (L for the 1-d forms), 1 is W.        */

/* Options of the convolutions; zero-initialised means PyTorch's
 * defaults (stride 1, padding 0, dilation 1, groups 1). */
typedef struct wk_conv_opts {
    int64_t stride[2];          /* 0: 1                                     */
    int64_t padding[2];         /* zeros on both sides                      */
    int64_t dilation[2];        /* 0: 1                                     */
    int64_t output_padding[2];  /* transposed forms: < stride or < dilation */
    int64_t groups;             /* 0: 1; divides Cin and Cout               */
} wk_conv_opts;

/* x [N, Cin, L] or [N, Cin, H, W]; w [Cout, Cin/groups, k..]; bias [Cout]
 * or NULL; out [N, Cout, Lo..] with Lo = (L + 2p - d(k-1) - 1) / s + 1.
 * opts NULL: the defaults. */
wk_tensor *wk_conv1d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias, const wk_conv_opts *opts);
wk_tensor *wk_conv2d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias, const wk_conv_opts *opts);
/* The transposed forms (the gradient of conv with respect to its input):
 * w [Cin, Cout/groups, k..]; Lo = (L - 1)s - 2p + d(k-1) + output_padding + 1. */
wk_tensor *wk_conv_transpose1d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias,
                               const wk_conv_opts *opts);
wk_tensor *wk_conv_transpose2d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias,
                               const wk_conv_opts *opts);

/* Options of the 2-d pools (x [N, C, H, W] -> [N, C, Ho, Wo]). */
typedef struct wk_pool_opts {
    int64_t kernel[2];          /* >= 1                                     */
    int64_t stride[2];          /* 0: the kernel                            */
    int64_t padding[2];         /* <= kernel / 2                            */
    bool ceil_mode;             /* Ho rounds up (a window must start inside x or its left padding) */
    bool exclude_pad;           /* avg: divide by the cells inside x only
                                   (PyTorch's count_include_pad=False)      */
} wk_pool_opts;
wk_tensor *wk_avg_pool2d(const wk_tensor *x, const wk_pool_opts *opts);
/* indices NULL, or it receives a u32 tensor of the result's shape: the
 * index h * W + w in x's plane of each maximum (the first one; a NaN
 * wins, the last NaN of the window). */
wk_tensor *wk_max_pool2d(const wk_tensor *x, const wk_pool_opts *opts, wk_tensor **indices);

/* Upsampling to the given output sizes, x [N, C, L] or [N, C, H, W].
 * scale: the factor the output sizes came from (PyTorch's scale_factor,
 * which then sets the source positions), or <= 0 to use in/out. */
wk_tensor *wk_upsample_nearest1d(const wk_tensor *x, int64_t out_l, double scale);
wk_tensor *wk_upsample_nearest2d(const wk_tensor *x, int64_t out_h, int64_t out_w, double scale_h, double scale_w);
/* align_corners true: corners map to corners and the scales are ignored. */
wk_tensor *wk_upsample_bilinear2d(const wk_tensor *x, int64_t out_h, int64_t out_w, bool align_corners,
                                  double scale_h, double scale_w);

/* ------------------------------------------------------------------ */
/* sorting (docs/conv.md): along the last dim, every dense dtype       */

/* u32 indices that sort each row (stable: equal values keep their
 * order). NaN counts as larger than +inf (last ascending, first
 * descending, as in PyTorch); -0 equals +0. Rows < 2^32 long. */
wk_tensor *wk_arg_sort(const wk_tensor *x, bool descending);
/* The sorted values; indices NULL or it receives wk_arg_sort's result. */
wk_tensor *wk_sort(const wk_tensor *x, bool descending, wk_tensor **indices);
/* The k largest (or smallest) of each row, sorted (largest first, or
 * smallest first), 0 <= k <= the last dim; indices as wk_sort. */
wk_tensor *wk_topk(const wk_tensor *x, int64_t k, bool largest, wk_tensor **indices);

/* ------------------------------------------------------------------ */
/* indexing (ids: u8, u32 or i64; an id out of range is an error and,   */
/* for in-place ops, leaves the destination unchanged)                 */

/* ids 1-d; result has t's shape with dim replaced by len(ids). */
wk_tensor *wk_index_select(const wk_tensor *t, const wk_tensor *ids, int dim);
/* ids has t's rank (and t's sizes except on dim); result has ids' shape:
 * out[i][j][k] = t[i][ids[i][j][k]][k] for dim 1. */
wk_tensor *wk_gather(const wk_tensor *t, const wk_tensor *ids, int dim);
/* dst[... ids[i,j,k] ...] = src[i,j,k] (set) or += (add), along dim;
 * ids and src have the same shape; in place on dst. Where two ids name
 * one element, scatter_set keeps one of the values (unspecified which). */
wk_status wk_scatter_set(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim);
wk_status wk_scatter_add(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim);
/* dst.narrow(dim, ids[i], 1) += src.narrow(dim, i, 1); ids 1-d; in place. */
wk_status wk_index_add(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim);

/* ------------------------------------------------------------------ */
/* in-place copies and fills                                           */

/* Every element of dst (any view without overlapping elements) = value. */
wk_status wk_const_set(wk_tensor *dst, double value);
/* dst (a view) = src broadcast to dst's shape, converted to dst's dtype. */
wk_status wk_copy_into(wk_tensor *dst, const wk_tensor *src);
/* Row copy: for r < rows, copy cols elements from src's storage at
 * src_offset + r*src_stride to dst's storage at dst_offset + r*dst_stride
 * (offsets and strides in elements of the shared dtype, relative to each
 * storage's start). Bounds are checked. */
wk_status wk_copy2d(wk_tensor *dst, const wk_tensor *src, int64_t rows, int64_t cols,
                    int64_t src_stride, int64_t dst_stride, int64_t src_offset, int64_t dst_offset);

/* ------------------------------------------------------------------ */
/* introspection                                                       */

/* Whether the device's backend implements op (an operation name such as
 * "exp", "add", "matmul", "index_select"; see wk_op_names) for dtype.
 * "graph" (any dtype): whether dev records graphs (wk_graph_begin).
 * "rtc" (any dtype): whether dev compiles kernels at run time
 * (wick_ext.h: custom ops and run-time compiled kernels). "all_reduce",
 * "all_gather", "broadcast": whether dev has collectives for dtype
 * (wick_comm.h). */
bool wk_supports(wk_device *dev, const char *op, wk_dtype dt);
/* All op names, NULL-terminated. */
const char *const *wk_op_names(void);
/* Build description: version, compiler, BLAS, plugins found. */
const char *wk_build_info(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* WICK_H */
