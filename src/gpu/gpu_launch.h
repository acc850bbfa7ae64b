/* gpu_launch.h — how kernels walk their data and are launched: 64-bit strided
 * index arithmetic with fast dividers, dtype dispatch on the host, block
 * and grid sizes, and the streaming tile loop (wk_gpu_stream).
 * Part of the GPU backend's shared headers: include gpu_internal.h. */
#ifndef WICK_GPU_GPU_LAUNCH_H
#define WICK_GPU_GPU_LAUNCH_H

#include "gpu_context.h"
#include "gpu_types.h"
#include "../view.h"

/* ------------------------------------------------------------------ */
/* Strided index arithmetic                                            */

/* n / d for n, d < 2^32 by multiply-high: q = (mulhi(n, m) + n) >> s with
 * s = ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1 (exact for every
 * n < 2^32; the sum is taken in 64 bits). */
struct wk_divmod32 {
    uint32_t d, m, s;
};
static inline wk_divmod32 wk_divmod32_make(uint32_t d)
{
    wk_divmod32 r;
    uint32_t s = 0;
    while (s < 32 && ((uint64_t)1 << s) < d) s++;
    r.d = d;
    r.s = s;
    r.m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << s) - d)) / d + 1);
    return r;
}
WK_DEV uint32_t wk_divmod32_div(wk_divmod32 dm, uint32_t n)
{
    return (uint32_t)(((uint64_t)__umulhi(n, dm.m) + n) >> dm.s);
}

/* The dims of one elementwise launch (shared by its operands), innermost
 * last, with fast dividers for launches under 2^32 elements. */
struct wk_gpu_dims {
    int rank;
    int64_t n;                           /* elements                 */
    int64_t dims[WK_MAX_RANK];
    wk_divmod32 div[WK_MAX_RANK];
};

/* N operands' element offsets (storage base + offset + sum i_d st_d). */
template <int N> struct wk_gpu_layout {
    wk_gpu_dims d;
    int64_t off[N];
    int64_t st[N][WK_MAX_RANK];
};

/* 64-bit division out of line: its long instruction sequence once per
 * kernel, not once per dim and op (only launches over 2^32 elements). */
__device__ __noinline__ static inline int64_t wk_div64(int64_t a, int64_t b) { return a / b; }

/* Offsets of linear (row-major) element i in each operand. */
template <int N> WK_DEV void wk_gpu_offsets(const wk_gpu_layout<N> &L, int64_t i, int64_t (&o)[N])
{
    for (int k = 0; k < N; k++) o[k] = L.off[k];
    if (L.d.n <= (int64_t)UINT32_MAX) {
        uint32_t r = (uint32_t)i;
        for (int d = L.d.rank - 1; d >= 0; d--) {
            uint32_t q = wk_divmod32_div(L.d.div[d], r);
            int64_t idx = (int64_t)(r - q * L.d.div[d].d);
            for (int k = 0; k < N; k++) o[k] += idx * L.st[k][d];
            r = q;
        }
    } else {
        for (int d = L.d.rank - 1; d >= 0; d--) {
            int64_t q = wk_div64(i, L.d.dims[d]);
            int64_t idx = i - q * L.d.dims[d];
            for (int k = 0; k < N; k++) o[k] += idx * L.st[k][d];
            i = q;
        }
    }
}

/* Host: layout of N views sharing views[0]'s dims; size-1 dims dropped
 * and dims merged where every operand allows. Returns the element count. */
template <int N> static inline int64_t wk_gpu_layout_make(wk_gpu_layout<N> *L, const wk_view *const *v)
{
    int64_t dims[WK_MAX_RANK], st[N][WK_MAX_RANK];
    const int r = wk_views_merge_dims(N, v, NULL, dims, st);
    memset(L, 0, sizeof *L);
    L->d.rank = r;
    L->d.n = wk_view_numel(v[0]);
    for (int d = 0; d < r; d++) {
        L->d.dims[d] = dims[d];
        L->d.div[d] = wk_divmod32_make(dims[d] <= (int64_t)UINT32_MAX ? (uint32_t)dims[d] : 1u);
        for (int k = 0; k < N; k++) L->st[k][d] = st[k][d];
    }
    for (int k = 0; k < N; k++) L->off[k] = v[k]->offset;
    return L->d.n;
}

/* view helpers shared with the core and the cpu (src/view.h), and the
 * dtype traits (src/dtype_traits.h) under this backend's names */
static inline int64_t wk_gpu_numel(const wk_view *v) { return wk_view_numel(v); }
static inline bool wk_gpu_is_contiguous(const wk_view *v) { return wk_view_is_contiguous(v); }
static inline size_t wk_gpu_dtype_size(wk_dtype dt) { return (size_t)wk_dt_elem_bytes(dt); }
static inline const char *wk_gpu_dtype_name(wk_dtype dt) { return wk_dt_name(dt); }

/* Address of element 0 of a view (base + offset elements). */
static inline char *wk_gpu_view_ptr(const wk_view *v)
{
    return (char *)v->base + v->offset * (int64_t)wk_gpu_dtype_size(v->dtype);
}

/* ------------------------------------------------------------------ */
/* dtype dispatch (host): run BODY with T the storage type of dt.      */

#define WK_GPU_CASE_(ID_, TY_, T, ...) case ID_: { typedef TY_ T; __VA_ARGS__; } break;
#define WK_GPU_DISPATCH_ALL(dt, T, ...)                                      \
    switch (dt) {                                                            \
    WK_GPU_CASE_(WK_U8, uint8_t, T, __VA_ARGS__)                             \
    WK_GPU_CASE_(WK_U32, uint32_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_I16, int16_t, T, __VA_ARGS__)                            \
    WK_GPU_CASE_(WK_I32, int32_t, T, __VA_ARGS__)                            \
    WK_GPU_CASE_(WK_I64, int64_t, T, __VA_ARGS__)                            \
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, __VA_ARGS__)                         \
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_F32, float, T, __VA_ARGS__)                              \
    WK_GPU_CASE_(WK_F64, double, T, __VA_ARGS__)                             \
    WK_GPU_CASE_(WK_F8E4M3, wk_f8_t, T, __VA_ARGS__)                         \
    default: break;                                                          \
    }
#define WK_GPU_DISPATCH_FLOAT(dt, T, ...)                                    \
    switch (dt) {                                                            \
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, __VA_ARGS__)                         \
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_F32, float, T, __VA_ARGS__)                              \
    WK_GPU_CASE_(WK_F64, double, T, __VA_ARGS__)                             \
    WK_GPU_CASE_(WK_F8E4M3, wk_f8_t, T, __VA_ARGS__)                         \
    default: break;                                                          \
    }
/* By element size only (pure data movement): T is uintN_t. */
#define WK_GPU_DISPATCH_SIZE(bytes, T, ...)                                  \
    switch (bytes) {                                                         \
    WK_GPU_CASE_(1, uint8_t, T, __VA_ARGS__)                                 \
    WK_GPU_CASE_(2, uint16_t, T, __VA_ARGS__)                                \
    WK_GPU_CASE_(4, uint32_t, T, __VA_ARGS__)                                \
    WK_GPU_CASE_(8, uint64_t, T, __VA_ARGS__)                                \
    default: break;                                                          \
    }

/* ------------------------------------------------------------------ */
/* Launch sizes                                                        */

/* Threads per block of the elementwise kernels: 8 warps (256 on wave32,
 * 512 on wave64), so the wave64 paths run with wave64 shapes. */
static inline int wk_gpu_ew_block(const wk_gpu_ctx *c) { return 8 * c->warp_size; }

/* Threads per block of the streaming kernels (wk_gpu_stream), which use
 * no warp-level operations: 128 (the best of 128, 256 and 512 for every
 * case of bench/tune_stream.sh on an H200); the environment variable
 * WICK_GPU_STREAM_BLOCK (a multiple of the warp size, at most
 * WK_GPU_EW_MAX_BLOCK) overrides it for tuning runs. Kernels launched
 * with either size declare __launch_bounds__(WK_GPU_EW_MAX_BLOCK), so
 * that no build (wave64 included) compiles them for more registers per
 * thread than a launch of that size can hold. */
#define WK_GPU_EW_MAX_BLOCK 512
static inline int wk_gpu_stream_block(const wk_gpu_ctx *c) { return c->stream_block; }

/* Blocks for `items` work items of `block` threads each, grid-striding
 * beyond `waves` full waves of the device. */
static inline unsigned wk_gpu_grid(const wk_gpu_ctx *c, int64_t items, int block, int waves)
{
    int64_t per_sm = c->max_threads_per_sm > 0 ? c->max_threads_per_sm / block : 1;
    if (per_sm < 1) per_sm = 1;
    int64_t cap = (int64_t)c->sm_count * per_sm * waves;
    int64_t b = (items + block - 1) / block;
    if (b > cap) b = cap;
    if (b < 1) b = 1;
    return (unsigned)b;
}

/* Grid-stride loop over [0, n) with 64-bit indices (not unrolled: one
 * copy of the body per kernel). */
#define WK_GPU_FOR(i, n)                                                     \
    _Pragma("unroll 1")                                                      \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

/* Streaming kernels (elementwise, casts): each block owns tiles of
 * U x blockDim consecutive units (16-byte vectors on the
 * fast paths); a thread issues all U loads of its tile (units blockDim
 * apart, so every load instruction of a warp is coalesced) before it
 * computes and stores any, which keeps U x 16 bytes per thread in flight.
 * The grid covers the whole range in one pass when it can
 * (wk_gpu_stream_grid) and strides over tiles beyond that.
 *   load(i)      -> the unit's input (any copyable type)
 *   store(i, x)  computes and writes unit i
 * The body of store is unrolled U times: keep U small for heavy math. */
/* Units per thread (measured with bench/tune_stream.sh on an H200, where
 * both rules beat the other choices by 1-10%): kernels whose operands
 * are all 4 bytes or wider stream best one 16-byte unit per thread
 * (WK_GPU_STREAM_WIDE_U); narrower ones (bf16, f16, u8, casts to them)
 * want WK_GPU_STREAM_NARROW_BYTES (32; 64 was best before bf16 results
 * were rounded in pairs) of the narrow operand in flight per thread,
 * within WK_GPU_STREAM_ELEMS elements (the body is unrolled
 * U x v times). v: elements per unit; min_size: bytes of the narrowest
 * operand. Host and kernel use the same value, so the grid covers the
 * range once. The -D overrides are for tuning builds. */
#ifndef WK_GPU_STREAM_WIDE_U
#define WK_GPU_STREAM_WIDE_U 1
#endif
#ifndef WK_GPU_STREAM_NARROW_BYTES
#define WK_GPU_STREAM_NARROW_BYTES 32
#endif
#ifndef WK_GPU_STREAM_ELEMS
#define WK_GPU_STREAM_ELEMS 32
#endif
__host__ __device__ constexpr int wk_gpu_stream_units(int v, int min_size, int max_elems = WK_GPU_STREAM_ELEMS)
{
    if (min_size >= 4) return WK_GPU_STREAM_WIDE_U;
    int u = WK_GPU_STREAM_NARROW_BYTES / (v * min_size);
    if (u > max_elems / v) u = max_elems / v;
    return u < 1 ? 1 : u;
}
/* the choices bench/TUNING-gpu.md measured (checked in default builds;
 * tuning builds override the knobs) */
#if WK_GPU_STREAM_WIDE_U == 1 && WK_GPU_STREAM_NARROW_BYTES == 32 && WK_GPU_STREAM_ELEMS == 32
static_assert(wk_gpu_stream_units(4, 4) == 1 && wk_gpu_stream_units(8, 2) == 2 && wk_gpu_stream_units(16, 1) == 2 &&
                  wk_gpu_stream_units(4, 2, 16) == 4 && wk_gpu_stream_units(2, 8) == 1,
              "units per thread: f32 1, bf16 2, u8 2, casts f32->bf16 4, f64 1");
#endif

template <int U, typename Load, typename Store>
WK_DEV void wk_gpu_stream(int64_t nv, Load load, Store store)
{
    typedef decltype(load((int64_t)0)) In;
    const int64_t tile = (int64_t)U * blockDim.x;
    _Pragma("unroll 1")
    for (int64_t t0 = (int64_t)blockIdx.x * tile; t0 < nv; t0 += (int64_t)gridDim.x * tile) {
        In x[U];
        if (t0 + tile <= nv) {                       /* a whole tile: no guards */
#pragma unroll
            for (int k = 0; k < U; k++) x[k] = load(t0 + k * (int64_t)blockDim.x + threadIdx.x);
#pragma unroll
            for (int k = 0; k < U; k++) store(t0 + k * (int64_t)blockDim.x + threadIdx.x, x[k]);
        } else {
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int64_t i = t0 + k * (int64_t)blockDim.x + threadIdx.x;
                if (i < nv) x[k] = load(i);
            }
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int64_t i = t0 + k * (int64_t)blockDim.x + threadIdx.x;
                if (i < nv) store(i, x[k]);
            }
        }
    }
}

/* Blocks for wk_gpu_stream over nv units: one tile per block, at most
 * 2^20 blocks (within every runtime's grid limits; beyond that the
 * blocks stride over the tiles). */
static inline unsigned wk_gpu_stream_grid(int64_t nv, int block, int u)
{
    int64_t b = (nv + (int64_t)block * u - 1) / ((int64_t)block * u);
    if (b > ((int64_t)1 << 20)) b = (int64_t)1 << 20;
    if (b < 1) b = 1;
    return (unsigned)b;
}
#endif /* WICK_GPU_GPU_LAUNCH_H */
