/* cpu_internal.h — what the files of the CPU backend share: the entry
 * points the vtable (cpu_backend.c) points at, the thread pool, element
 * access helpers and a strided multi-operand iterator.
 *
 * File map of src/cpu/:
 *   cpu_backend.c     vtable, device functions (alloc, read, write), the op
 *                     table (src/op_list.h -> kernels, dtypes)
 *   threadpool.c      wk_parallel_for: a persistent pthread pool
 *   cpu_elementwise.c unary/affine/powf/elu, binary, cmp, where_cond
 *   cpu_copy.c        copy (strided, with dtype conversion), copy2d, const_set
 *   cpu_reduce.c      sum/min/max/argmin/argmax over a dim mask
 *   cpu_matmul.c      batched strided matmul; BLAS (OpenBLAS, loaded at run
 *                     time) when present, own blocked kernel otherwise
 *   cpu_index.c       index_select, gather, scatter_set/add, index_add
 *   cpu_random.c      Philox4x32-10 uniform/normal (docs/random.md)
 *   cpu_quant.c       GGUF block types: dequantize, quantize (llama.cpp's
 *                     reference quantizers), qmatmul, qgather
 *   cpu_qdot.c        qmatmul's integer path (quantized activations,
 *                     integer dot products, as llama.cpp's CPU kernels)
 *   cpu_conv.c        conv1d/2d and their transposed forms
 *   cpu_pool.c        avg/max pooling, nearest and bilinear upsampling
 *   cpu_sort.c        arg_sort (radix sort, insertion sort for short rows)
 *   cpu_ew.c/.h       the strided elementwise driver (wk_ew_run) and CPU
 *                     feature checks; cpu_ew.h, private to the elementwise
 *                     files, also holds the fast narrow-float conversions
 */
#ifndef WICK_CPU_INTERNAL_H
#define WICK_CPU_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include "../backend.h"
#include "../view.h"
#include "../core/scalar.h"

/* The core's services (error reporting), set when the backend is made. */
extern const wk_host_api *wk_cpu_host;
#define WK_CPU_ERROR(st, ...) (wk_cpu_host->set_error((st), __VA_ARGS__))

/* The environment knobs the cpu consults on its ops' paths, read when the
 * backend is made and again by its env_refresh (wk_env_refresh), never
 * per op (cpu_backend.c). WICK_BLAS and WICK_NUM_THREADS are read once,
 * when the library is loaded and the pool started. */
typedef struct wk_cpu_knobs {
    int qdot;                    /* WICK_CPU_QDOT: WK_QDOT_* (cpu_qdot.c)      */
    bool gemv_off;               /* WICK_MATMUL_GEMV=0: matmul's GEMM paths only */
} wk_cpu_knobs;
extern wk_cpu_knobs wk_cpu_env;

/* The backend's vtable; host gives the error service. */
const wk_backend_iface *wk_cpu_backend(const wk_host_api *host);

/* ---- thread pool (threadpool.c) ----------------------------------- */

/* Calls fn(arg, begin, end) over [0, n) split into chunks of at least
 * grain items, on the pool's threads and the caller's; returns when all
 * are done. Runs inline when n <= grain, when there is one thread, or
 * when called from inside a pool task (no nested parallelism). Safe to
 * call from several user threads at once (calls are serialised). */
typedef void (*wk_range_fn)(void *arg, int64_t begin, int64_t end);
void wk_parallel_for(int64_t n, int64_t grain, wk_range_fn fn, void *arg);
/* Coarse tasks: fn(arg, begin, end) over [0, ntasks) where each task costs
 * about work_per_task elementary steps; inline when the whole job is
 * below WK_CPU_GRAIN steps, otherwise grouped so that a chunk holds at
 * least WK_CPU_GRAIN steps. */
void wk_parallel_tasks(int64_t ntasks, double work_per_task, wk_range_fn fn, void *arg);
/* Threads used (the caller counts); WICK_NUM_THREADS overrides. */
int wk_cpu_num_threads(void);

/* Work below this many elements stays on the calling thread. */
#define WK_CPU_GRAIN 32768

/* ---- op entry points ---------------------------------------------- */

wk_status wk_cpu_unary(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, double p0, double p1);
wk_status wk_cpu_binary(void *ctx, wk_op op, const wk_view *dst, const wk_view *a, const wk_view *b);
wk_status wk_cpu_where_cond(void *ctx, const wk_view *dst, const wk_view *cond, const wk_view *a, const wk_view *b);
wk_status wk_cpu_copy(void *ctx, const wk_view *dst, const wk_view *src);
wk_status wk_cpu_copy2d(void *ctx, void *dst_base, const void *src_base, wk_dtype dtype,
                        int64_t rows, int64_t cols, int64_t dst_stride, int64_t src_stride,
                        int64_t dst_offset, int64_t src_offset);
wk_status wk_cpu_const_set(void *ctx, const wk_view *dst, const void *value);
wk_status wk_cpu_reduce(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, uint32_t dim_mask);
wk_status wk_cpu_matmul(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b);
wk_status wk_cpu_index_select(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim);
wk_status wk_cpu_gather(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim);
wk_status wk_cpu_scatter(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim);
wk_status wk_cpu_index_add(void *ctx, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim);
wk_status wk_cpu_rand_uniform(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double lo, double hi);
wk_status wk_cpu_rand_normal(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double mean, double std);
/* Name of the BLAS matmul uses ("openblas" or "none"), for wick info. */
/* cpu_nn.c: softmax/log_softmax, the norms, the ropes (wk_op_args as
 * backend.h's families SOFTMAX, NORM, ROPE describe them) */
/* Rows in and out of the NN ops' compute type (cpu_nn.c): n elements of
 * dt at base[off + i * st] as float (f16/bf16/f32) or double (f64 only),
 * and back, rounded once. */
void wk_cpu_ld_row_f(const void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, float *out);
void wk_cpu_st_row_f(void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, const float *in);
void wk_cpu_ld_row_d(const void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, double *out);
void wk_cpu_st_row_d(void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, const double *in);
wk_status wk_cpu_softmax(void *ctx, const wk_op_args *a);
wk_status wk_cpu_norm(void *ctx, const wk_op_args *a);
wk_status wk_cpu_rope(void *ctx, const wk_op_args *a);
wk_status wk_cpu_rope_kv(void *ctx, const wk_op_args *a);
/* cpu_attention.c: the ATTENTION family */
wk_status wk_cpu_attention(void *ctx, const wk_op_args *a);
/* cpu_paged_attention.c: the PAGED_ATTENTION family */
wk_status wk_cpu_paged_attention(void *ctx, const wk_op_args *a);
/* cpu_quant.c: the block-quantized families QCONVERT (dequantize,
 * quantize), QMATMUL and QGATHER */
wk_status wk_cpu_qconvert(void *ctx, const wk_op_args *a);
wk_status wk_cpu_qmatmul(void *ctx, const wk_op_args *a);
/* x [m, k] (a 2-d view, any float dtype) as f32 rows of unit stride:
 * *rows and *stride in place when x is so already (*owned NULL), else a
 * copy in *owned for the caller to free (cpu_quant.c) */
wk_status wk_cpu_rows_f32(const wk_view *x, int64_t m, int64_t k, const float **rows, int64_t *stride, float **owned);
/* QMATMUL of a dense f16/bf16 weight (cpu_qmatmul_half.c) */
wk_status wk_cpu_qmatmul_half(const wk_op_args *a);
wk_status wk_cpu_qgather(void *ctx, const wk_op_args *a);
/* cpu_quant.c: llama.cpp's reference quantizer of one block of dt */
typedef void (*wk_cpu_qblock_fn)(const float *x, uint8_t *block);
wk_cpu_qblock_fn wk_cpu_quantizer(wk_dtype dt);
/* cpu_iq.c: GGUF's IQ types, one block -> f32 (all nine), f32 -> one
 * block (iq4_nl, iq4_xs; NULL for the others) */
typedef void (*wk_cpu_dblock_fn)(const uint8_t *block, float *y);
wk_cpu_dblock_fn wk_cpu_iq_dequantizer(wk_dtype dt);
wk_cpu_qblock_fn wk_cpu_iq_quantizer(wk_dtype dt);
/* cpu_qdot.c: qmatmul with quantized activations and integer dot
 * products (WICK_CPU_QDOT; docs/cpu-qdot.md) */
/* cpu_attention.c's AVX-512 rows, shared with cpu_paged_attention.c:
 * blocks of WK_CPU_ATT_BK keys; kt [nk][D] -> kT [D][WK_CPU_ATT_BK]; one
 * row's online softmax over keys [lo, hi] of the block at k0 (f32, no
 * mask or softcap, D a multiple of 16; the CPU has AVX-512) */
#define WK_CPU_ATT_BK 64
void wk_cpu_att_keys_t(const float *kt, int64_t nk, int64_t D, float *kT);
void wk_cpu_att_row_f512(const float *qr, const float *kT, const float *vt, int64_t k0, int64_t lo, int64_t hi,
                         int64_t D, float scale, float *m, float *l, float *ar, float *sc);

enum { WK_QDOT_OFF = 0, WK_QDOT_ON = 1, WK_QDOT_PORTABLE = 2, WK_QDOT_AVX2 = 3 };
/* WICK_CPU_QDOT's value as WK_QDOT_* (wk_cpu_env.qdot holds it) */
int wk_cpu_qdot_mode(void);
bool wk_cpu_qdot_supports(wk_dtype dt);
wk_status wk_cpu_qmatmul_qdot(const wk_op_args *a, int mode);
const char *wk_cpu_blas_name(void);
/* cpu_conv.c: the CONV family (im2col / col2im around wk_cpu_matmul) */
wk_status wk_cpu_conv(void *ctx, const wk_op_args *a);
/* cpu_pool.c: the POOL and UPSAMPLE families */
wk_status wk_cpu_pool(void *ctx, const wk_op_args *a);
wk_status wk_cpu_upsample(void *ctx, const wk_op_args *a);
/* cpu_comm.c: collectives among threads of this process (backend.h's
 * comm_* members) */
wk_status wk_cpu_comm_available(void);
bool wk_cpu_comm_dtype(wk_dtype dt);
wk_status wk_cpu_comm_init_all(void *const *ctxs, int n, void **comms);
void wk_cpu_comm_free(void *comm);
wk_status wk_cpu_comm_run(void *comm, const wk_coll_args *a);
void wk_cpu_comm_abort(void *comm);
bool wk_cpu_comm_aborted(void *comm);
/* cpu_sort.c: the SORT family (arg_sort) */
wk_status wk_cpu_arg_sort(void *ctx, const wk_op_args *a);

/* ---- element access ------------------------------------------------ */

/* Bytes of one element of a dense dtype (dtype_traits.h). */
static inline size_t wk_cpu_dtype_size(wk_dtype dt) { return (size_t)wk_dt_elem_bytes(dt); }

/* Element idx (in elements from base) as a double. Exact for every dtype
 * except i64 beyond 2^53 (use wk_cpu_load_i64 for integer paths). */
static inline double wk_cpu_load_f64(const void *base, wk_dtype dt, int64_t idx)
{
    switch (dt) {
    case WK_U8: return ((const uint8_t *)base)[idx];
    case WK_U32: return ((const uint32_t *)base)[idx];
    case WK_I16: return ((const int16_t *)base)[idx];
    case WK_I32: return ((const int32_t *)base)[idx];
    case WK_I64: return (double)((const int64_t *)base)[idx];
    case WK_BF16: return wk_bf16_to_f32(((const uint16_t *)base)[idx]);
    case WK_F16: return wk_f16_to_f32(((const uint16_t *)base)[idx]);
    case WK_F32: return ((const float *)base)[idx];
    case WK_F64: return ((const double *)base)[idx];
    case WK_F8E4M3: return wk_f8e4m3_to_f32(((const uint8_t *)base)[idx]);
    default: return 0;
    }
}

/* Integer element as i64 (floats truncate/saturate as in a cast). */
static inline int64_t wk_cpu_load_i64(const void *base, wk_dtype dt, int64_t idx)
{
    switch (dt) {
    case WK_U8: return ((const uint8_t *)base)[idx];
    case WK_U32: return ((const uint32_t *)base)[idx];
    case WK_I16: return ((const int16_t *)base)[idx];
    case WK_I32: return ((const int32_t *)base)[idx];
    case WK_I64: return ((const int64_t *)base)[idx];
    default: return wk_f64_to_i64(wk_cpu_load_f64(base, dt, idx));
    }
}

/* Store a double with the cast rules (round to nearest even for narrow
 * floats, truncate + saturate + NaN->0 for integers). */
static inline void wk_cpu_store_f64(void *base, wk_dtype dt, int64_t idx, double v)
{
    switch (dt) {
    case WK_U8: ((uint8_t *)base)[idx] = wk_f64_to_u8(v); break;
    case WK_U32: ((uint32_t *)base)[idx] = wk_f64_to_u32(v); break;
    case WK_I16: ((int16_t *)base)[idx] = wk_f64_to_i16(v); break;
    case WK_I32: ((int32_t *)base)[idx] = wk_f64_to_i32(v); break;
    case WK_I64: ((int64_t *)base)[idx] = wk_f64_to_i64(v); break;
    case WK_BF16: ((uint16_t *)base)[idx] = wk_f64_to_bf16(v); break;
    case WK_F16: ((uint16_t *)base)[idx] = wk_f64_to_f16(v); break;
    case WK_F32: ((float *)base)[idx] = (float)v; break;
    case WK_F64: ((double *)base)[idx] = v; break;
    case WK_F8E4M3: ((uint8_t *)base)[idx] = wk_f64_to_f8e4m3(v); break;
    default: break;
    }
}

/* Store an integer value with wrap-around for integer dtypes (two's
 * complement) and one rounding for float dtypes. */
static inline void wk_cpu_store_i64(void *base, wk_dtype dt, int64_t idx, int64_t v)
{
    switch (dt) {
    case WK_U8: ((uint8_t *)base)[idx] = (uint8_t)v; break;
    case WK_U32: ((uint32_t *)base)[idx] = (uint32_t)v; break;
    case WK_I16: ((int16_t *)base)[idx] = (int16_t)(uint16_t)v; break;
    case WK_I32: ((int32_t *)base)[idx] = (int32_t)(uint32_t)v; break;
    case WK_I64: ((int64_t *)base)[idx] = v; break;
    case WK_BF16: ((uint16_t *)base)[idx] = (uint16_t)wk_i64_to_narrow(WK_NARROW_BF16, v); break;
    case WK_F16: ((uint16_t *)base)[idx] = (uint16_t)wk_i64_to_narrow(WK_NARROW_F16, v); break;
    case WK_F32: ((float *)base)[idx] = (float)v; break;
    case WK_F64: ((double *)base)[idx] = (double)v; break;
    case WK_F8E4M3: ((uint8_t *)base)[idx] = (uint8_t)wk_i64_to_narrow(WK_NARROW_F8E4M3, v); break;
    default: break;
    }
}

/* ---- strided iteration -------------------------------------------- */

/* Walks the elements of up to 4 views that share dims, in row-major
 * order, keeping each view's element offset. Start anywhere with
 * wk_cpu_iter_seek; advance with wk_cpu_iter_next. */
typedef struct wk_cpu_iter {
    int rank, nops;
    int64_t dims[WK_MAX_RANK];
    int64_t idx[WK_MAX_RANK];
    int64_t strides[4][WK_MAX_RANK];
    int64_t base[4];
    int64_t off[4];
} wk_cpu_iter;

static inline void wk_cpu_iter_init(wk_cpu_iter *it, int nops, const wk_view *const *views)
{
    it->rank = views[0]->rank;
    it->nops = nops;
    for (int d = 0; d < it->rank; d++) it->dims[d] = views[0]->dims[d];
    for (int k = 0; k < nops; k++) {
        it->base[k] = views[k]->offset;
        for (int d = 0; d < it->rank; d++) it->strides[k][d] = views[k]->strides[d];
    }
}

static inline void wk_cpu_iter_seek(wk_cpu_iter *it, int64_t linear)
{
    for (int k = 0; k < it->nops; k++) it->off[k] = it->base[k];
    for (int d = it->rank - 1; d >= 0; d--) {
        int64_t n = it->dims[d] ? it->dims[d] : 1;
        it->idx[d] = linear % n;
        linear /= n;
        for (int k = 0; k < it->nops; k++) it->off[k] += it->idx[d] * it->strides[k][d];
    }
}

static inline void wk_cpu_iter_next(wk_cpu_iter *it)
{
    for (int d = it->rank - 1; d >= 0; d--) {
        if (++it->idx[d] < it->dims[d]) {
            for (int k = 0; k < it->nops; k++) it->off[k] += it->strides[k][d];
            return;
        }
        it->idx[d] = 0;
        for (int k = 0; k < it->nops; k++) it->off[k] -= (it->dims[d] - 1) * it->strides[k][d];
    }
}

#endif /* WICK_CPU_INTERNAL_H */
