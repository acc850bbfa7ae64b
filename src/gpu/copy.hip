/* copy.hip — strided copy with conversion between all 10 dtypes (to_dtype,
 * contiguous, copy_strided_src, copy_into), copy2d and const_set on the
 * GPU. Conversions follow the cast rules through wk_cast (gpu_internal.h,
 * from src/core/scalar.h): integers wrap, float -> integer truncates and
 * saturates (NaN -> 0), narrow floats round to nearest even in one
 * rounding.
 *
 * How it is made fast:
 *  - same dtype, both contiguous: one device memcpy (copy engine speed);
 *  - casts between contiguous views: a kernel per (dst, src) dtype pair,
 *    each thread converting 16-byte units of the wider side (wk_vec),
 *    wk_gpu_stream_units of them loaded before any is converted
 *    (wk_gpu_stream), one tile per block, 64-bit indices;
 *  - same dtype, strided: a kernel per element size (a pure move), offsets
 *    by multiply-high division (wk_gpu_offsets) over merged dims;
 *  - casts between strided views: one kernel that switches on both dtypes
 *    per element (rare in practice; keeps 90 strided kernels out);
 *  - copy2d: rows of contiguous elements become a 2-d strided move in the
 *    widest unit (up to 16 bytes) that the sizes, strides and addresses
 *    allow; one memcpy when rows are back to back;
 *  - const_set: memset when the value is one repeated byte (zeros), else a
 *    fill kernel writing 16-byte units.
 */
#include "gpu_internal.h"

/* a 16-byte unit of raw data (a plain struct, not a wk_vec, so that the
 * kernel's name carries no nested template) */
struct alignas(16) cp_u128 {
    uint32_t w[4];
};

/* ---- casts between contiguous views ------------------------------------------ */

/* bytes of the narrower of two element types (units per thread: casts
 * take at most 16 elements per thread, 90 kernels' worth of code) */
template <typename S, typename D> __host__ __device__ constexpr int cp_min_size()
{
    return (int)(sizeof(S) < sizeof(D) ? sizeof(S) : sizeof(D));
}

template <typename D, typename S>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
cp_cast_contig(const S *__restrict__ src, D *__restrict__ dst, int64_t n, int vec)
{
    constexpr int V = wk_vec_width<S, D>, U = wk_gpu_stream_units(V, cp_min_size<S, D>(), 16);
    if (vec) {
        const int64_t nv = n / V;
        const wk_vec<S, V> *vs = (const wk_vec<S, V> *)src;
        wk_vec<D, V> *vd = (wk_vec<D, V> *)dst;
        wk_gpu_stream<U>(nv, [&](int64_t i) { return vs[i]; }, [&](int64_t i, const wk_vec<S, V> &x) {
            wk_vec<D, V> y;
#pragma unroll
            for (int k = 0; k < V; k++) y.v[k] = wk_cast<D>(x.v[k]);
            vd[i] = y;
        });
        WK_GPU_FOR(i, n - nv * V) {
            const int64_t j = nv * V + i;
            dst[j] = wk_cast<D>(src[j]);
        }
    } else {
        wk_gpu_stream<U>(n, [&](int64_t i) { return src[i]; }, [&](int64_t i, S x) { dst[i] = wk_cast<D>(x); });
    }
}

template <typename D, typename S>
static void cp_cast_launch(wk_gpu_ctx *c, void *d, const void *s, int64_t n)
{
    if constexpr (!std::is_same<D, S>::value) {     /* same dtype: a memcpy */
        constexpr int V = wk_vec_width<S, D>;
        int vec = wk_gpu_aligned(s, sizeof(S) * V) && wk_gpu_aligned(d, sizeof(D) * V);
        constexpr int U = wk_gpu_stream_units(V, cp_min_size<S, D>(), 16);
        const int sblock = wk_gpu_stream_block(c);
        const unsigned grid = wk_gpu_stream_grid(vec ? n / V : n, sblock, U);
        cp_cast_contig<D, S><<<grid, sblock, 0, c->stream>>>((const S *)s, (D *)d, n, vec);
    }
}

/* ---- moves (same dtype) --------------------------------------------------------- */

template <typename E>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
cp_move_strided(wk_gpu_layout<2> L, const E *src, E *dst)
{
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[2];
        wk_gpu_offsets(L, i, o);
        dst[o[0]] = src[o[1]];
    }
}

/* ---- transposes (same dtype) ------------------------------------------------------- */

/* dst [B, R, C] contiguous = src whose dim 1 (R) has unit stride: the
 * layout of a transposed view made contiguous. Reading along R and
 * writing along C are both coalesced through a CP_TILE x CP_TILE tile in
 * shared memory (padded by one column against bank conflicts). A block
 * is CP_TILE x CP_ROWS threads whatever the warp size (CP_TILE is a tile
 * edge, not a warp width); each thread loads CP_TILE / CP_ROWS = 16
 * elements before the barrier (an unrolled loop of constant trip count:
 * 97% of the copy rate for f32 on an H200, bench/TUNING-gpu.md), and a
 * block takes
 * one tile, found from its index with 32-bit division when the tile
 * count allows. */
#ifndef CP_TILE            /* -D overrides are for tuning builds */
#define CP_TILE 64
#endif
#ifndef CP_ROWS
#define CP_ROWS 4
#endif

template <typename E>
__global__ void __launch_bounds__(CP_TILE * CP_ROWS)
cp_transpose_tiled(const E *__restrict__ src, E *__restrict__ dst, int64_t B, int64_t R, int64_t C,
                   int64_t s_b, int64_t s_c)
{
    __shared__ E tile[CP_TILE][CP_TILE + 1];
    const int tx = (int)(threadIdx.x % CP_TILE), ty = (int)(threadIdx.x / CP_TILE);
    const int64_t tr = (R + CP_TILE - 1) / CP_TILE, tc = (C + CP_TILE - 1) / CP_TILE;
    const int64_t per_b = tr * tc, tiles = B * per_b;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        int64_t b, rem, rt, ct;
        if (tiles <= (int64_t)UINT32_MAX) {
            const uint32_t t32 = (uint32_t)t, pb = (uint32_t)per_b, tc32 = (uint32_t)tc;
            b = t32 / pb;
            rem = t32 - (uint32_t)b * pb;
            rt = (uint32_t)rem / tc32;
            ct = (uint32_t)rem - (uint32_t)rt * tc32;
        } else {
            b = t / per_b;
            rem = t - b * per_b;
            rt = rem / tc;
            ct = rem - rt * tc;
        }
        const int64_t r0 = rt * CP_TILE, c0 = ct * CP_TILE;
        const E *sb = src + b * s_b;
        const bool full = r0 + CP_TILE <= R && c0 + CP_TILE <= C;
        if (full) {
#pragma unroll
            for (int k = 0; k < CP_TILE / CP_ROWS; k++) {
                const int j = ty + k * CP_ROWS;
                tile[j][tx] = sb[(r0 + tx) + (c0 + j) * s_c];
            }
        } else {
            for (int j = ty; j < CP_TILE; j += CP_ROWS) {
                const int64_t r = r0 + tx, cc = c0 + j;
                if (r < R && cc < C) tile[j][tx] = sb[r + cc * s_c];
            }
        }
        __syncthreads();
        E *db = dst + b * R * C;
        if (full) {
#pragma unroll
            for (int k = 0; k < CP_TILE / CP_ROWS; k++) {
                const int j = ty + k * CP_ROWS;
                db[(r0 + j) * C + c0 + tx] = tile[tx][j];
            }
        } else {
            for (int j = ty; j < CP_TILE; j += CP_ROWS) {
                const int64_t r = r0 + j, cc = c0 + tx;
                if (r < R && cc < C) db[r * C + cc] = tile[tx][j];
            }
        }
        __syncthreads();
    }
}

/* true (and the shape) when dst is contiguous [B?, R, C] and src's R dim
 * has unit stride while its C dim does not */
static bool cp_is_transpose(const wk_view *dst, const wk_view *src, int64_t *B, int64_t *R, int64_t *C, int64_t *s_b,
                            int64_t *s_c)
{
    if (dst->rank < 2 || dst->rank > 3 || !wk_gpu_is_contiguous(dst)) return false;
    const int k = dst->rank - 2;
    if (src->strides[k] != 1 || src->strides[k + 1] <= 1) return false;
    *B = k ? dst->dims[0] : 1;
    *s_b = k ? src->strides[0] : 0;
    *R = dst->dims[k];
    *C = dst->dims[k + 1];
    *s_c = src->strides[k + 1];
    return *R >= 32 && *C >= 32;
}

/* ---- casts between strided views: dtypes known at run time ---------------------- */

/* An element's exact value: integers as i64/u64, f32 and narrow floats as
 * f32, f64 as f64 (so each store rounds once, as the contiguous path). */
struct cp_val {
    int kind;          /* 0 signed, 1 unsigned, 2 f32, 3 f64 */
    int64_t i;
    uint64_t u;
    float f;
    double d;
};

WK_DEV cp_val cp_load(const void *base, int dt, int64_t o)
{
    cp_val v;
    v.kind = 0; v.i = 0; v.u = 0; v.f = 0; v.d = 0;
    switch (dt) {
    case WK_U8: v.kind = 1; v.u = ((const uint8_t *)base)[o]; break;
    case WK_U32: v.kind = 1; v.u = ((const uint32_t *)base)[o]; break;
    case WK_I16: v.i = ((const int16_t *)base)[o]; break;
    case WK_I32: v.i = ((const int32_t *)base)[o]; break;
    case WK_I64: v.i = ((const int64_t *)base)[o]; break;
    case WK_BF16: v.kind = 2; v.f = wk_load_c(((const wk_bf16_t *)base)[o]); break;
    case WK_F16: v.kind = 2; v.f = wk_load_c(((const wk_f16_t *)base)[o]); break;
    case WK_F32: v.kind = 2; v.f = ((const float *)base)[o]; break;
    case WK_F64: v.kind = 3; v.d = ((const double *)base)[o]; break;
    case WK_F8E4M3: v.kind = 2; v.f = wk_load_c(((const wk_f8_t *)base)[o]); break;
    default: break;
    }
    return v;
}

template <typename D> WK_DEV D cp_conv(const cp_val &v)
{
    switch (v.kind) {
    case 0: return wk_to<D>(v.i);
    case 1: return wk_to<D>(v.u);
    case 2: return wk_to<D>(v.f);
    default: return wk_to<D>(v.d);
    }
}

WK_DEV void cp_store(void *base, int dt, int64_t o, const cp_val &v)
{
    switch (dt) {
    case WK_U8: ((uint8_t *)base)[o] = cp_conv<uint8_t>(v); break;
    case WK_U32: ((uint32_t *)base)[o] = cp_conv<uint32_t>(v); break;
    case WK_I16: ((int16_t *)base)[o] = cp_conv<int16_t>(v); break;
    case WK_I32: ((int32_t *)base)[o] = cp_conv<int32_t>(v); break;
    case WK_I64: ((int64_t *)base)[o] = cp_conv<int64_t>(v); break;
    case WK_BF16: ((wk_bf16_t *)base)[o] = cp_conv<wk_bf16_t>(v); break;
    case WK_F16: ((wk_f16_t *)base)[o] = cp_conv<wk_f16_t>(v); break;
    case WK_F32: ((float *)base)[o] = cp_conv<float>(v); break;
    case WK_F64: ((double *)base)[o] = cp_conv<double>(v); break;
    case WK_F8E4M3: ((wk_f8_t *)base)[o] = cp_conv<wk_f8_t>(v); break;
    default: break;
    }
}

__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
cp_cast_strided(wk_gpu_layout<2> L, const void *src, int sdt, void *dst, int ddt)
{
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[2];
        wk_gpu_offsets(L, i, o);
        cp_store(dst, ddt, o[0], cp_load(src, sdt, o[1]));
    }
}

/* ---- copy -------------------------------------------------------------------------- */

static wk_status cp_bad_dtype(const char *what, wk_dtype dt)
{
    return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: bad dtype %d", what, (int)dt);
}

wk_status wk_gpu_copy(void *ctx, const wk_view *dst, const wk_view *src)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if ((unsigned)dst->dtype >= WK_DTYPE_COUNT) return cp_bad_dtype("copy", dst->dtype);
    if ((unsigned)src->dtype >= WK_DTYPE_COUNT) return cp_bad_dtype("copy", src->dtype);
    int64_t n = wk_gpu_numel(dst);
    if (n == 0) return WK_OK;
    WK_GPU_ENTER(c);
    const int block = wk_gpu_ew_block(c);
    const bool contig = wk_gpu_is_contiguous(dst) && wk_gpu_is_contiguous(src);
    if (dst->dtype == src->dtype && contig) {
        WK_GPU_CHECK_C(c, hipMemcpyAsync(wk_gpu_view_ptr(dst), wk_gpu_view_ptr(src),
                                         (size_t)n * wk_gpu_dtype_size(dst->dtype), hipMemcpyDeviceToDevice,
                                         c->stream));
        return WK_OK;
    }
    if (contig) {
        void *d = wk_gpu_view_ptr(dst);
        const void *s = wk_gpu_view_ptr(src);
        WK_GPU_DISPATCH_ALL(dst->dtype, D, {
            WK_GPU_DISPATCH_ALL(src->dtype, S, { cp_cast_launch<D, S>(c, d, s, n); })
        })
        WK_GPU_LAUNCH_CHECK(c, "cast");
        return WK_OK;
    }
    wk_gpu_layout<2> L;
    const wk_view *v[2] = { dst, src };
    wk_gpu_layout_make<2>(&L, v);
    const unsigned grid = wk_gpu_grid(c, n, block, 4);
    int64_t tB, tR, tC, tsb, tsc;
    if (dst->dtype == src->dtype && cp_is_transpose(dst, src, &tB, &tR, &tC, &tsb, &tsc)) {
        const int64_t tiles = tB * ((tR + CP_TILE - 1) / CP_TILE) * ((tC + CP_TILE - 1) / CP_TILE);
        const unsigned tgrid = (unsigned)(tiles < ((int64_t)1 << 20) ? tiles : ((int64_t)1 << 20));
        WK_GPU_DISPATCH_SIZE(wk_gpu_dtype_size(dst->dtype), E, {
            cp_transpose_tiled<E><<<tgrid, CP_TILE * CP_ROWS, 0, c->stream>>>(
                (const E *)wk_gpu_view_ptr(src), (E *)wk_gpu_view_ptr(dst), tB, tR, tC, tsb, tsc);
        })
        WK_GPU_LAUNCH_CHECK(c, "transposed copy");
        return WK_OK;
    }
    if (dst->dtype == src->dtype) {
        WK_GPU_DISPATCH_SIZE(wk_gpu_dtype_size(dst->dtype), E, {
            cp_move_strided<E><<<grid, block, 0, c->stream>>>(L, (const E *)src->base, (E *)dst->base);
        })
        WK_GPU_LAUNCH_CHECK(c, "strided copy");
    } else {
        cp_cast_strided<<<grid, block, 0, c->stream>>>(L, src->base, (int)src->dtype, dst->base, (int)dst->dtype);
        WK_GPU_LAUNCH_CHECK(c, "strided cast");
    }
    return WK_OK;
}

/* ---- copy2d ------------------------------------------------------------------------- */

wk_status wk_gpu_copy2d(void *ctx, void *dst_base, const void *src_base, wk_dtype dtype, int64_t rows, int64_t cols,
                        int64_t dst_stride, int64_t src_stride, int64_t dst_offset, int64_t src_offset)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const int64_t esz = (int64_t)wk_gpu_dtype_size(dtype);
    if (esz == 0) return cp_bad_dtype("copy2d", dtype);
    if (rows <= 0 || cols <= 0) return WK_OK;
    WK_GPU_ENTER(c);
    char *d = (char *)dst_base + dst_offset * esz;
    const char *s = (const char *)src_base + src_offset * esz;
    if ((rows == 1 || (dst_stride == cols && src_stride == cols))) {
        WK_GPU_CHECK_C(c, hipMemcpyAsync(d, s, (size_t)(rows * cols * esz), hipMemcpyDeviceToDevice, c->stream));
        return WK_OK;
    }
    /* widest unit dividing the row bytes, both strides and both addresses */
    const uint64_t all = (uint64_t)(cols * esz) | (uint64_t)(dst_stride * esz) | (uint64_t)(src_stride * esz) |
                         (uint64_t)(uintptr_t)d | (uint64_t)(uintptr_t)s;
    int64_t ub = 16;
    while (ub > 1 && (all & (uint64_t)(ub - 1))) ub /= 2;
    wk_view vd, vs;
    memset(&vd, 0, sizeof vd);
    memset(&vs, 0, sizeof vs);
    vd.base = d; vs.base = (void *)s;
    vd.rank = vs.rank = 2;
    vd.dims[0] = vs.dims[0] = rows;
    vd.dims[1] = vs.dims[1] = cols * esz / ub;
    vd.strides[0] = dst_stride * esz / ub;
    vs.strides[0] = src_stride * esz / ub;
    vd.strides[1] = vs.strides[1] = 1;
    wk_gpu_layout<2> L;
    const wk_view *v[2] = { &vd, &vs };
    int64_t n = wk_gpu_layout_make<2>(&L, v);
    const int block = wk_gpu_ew_block(c);
    const unsigned grid = wk_gpu_grid(c, n, block, 4);
    if (ub == 16) {
        cp_move_strided<cp_u128><<<grid, block, 0, c->stream>>>(L, (const cp_u128 *)s, (cp_u128 *)d);
    } else {
        WK_GPU_DISPATCH_SIZE(ub, E, {
            cp_move_strided<E><<<grid, block, 0, c->stream>>>(L, (const E *)s, (E *)d);
        })
    }
    WK_GPU_LAUNCH_CHECK(c, "copy2d");
    return WK_OK;
}

/* ---- const_set ------------------------------------------------------------------------ */

template <typename E>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
cp_fill_contig(E *__restrict__ dst, int64_t n, E value, int vec)
{
    constexpr int V = wk_vec_width<E>;
    const int64_t nv = vec ? n / V : 0;
    wk_vec<E, V> u;
#pragma unroll
    for (int k = 0; k < V; k++) u.v[k] = value;
    wk_vec<E, V> *vd = (wk_vec<E, V> *)dst;
    WK_GPU_FOR(i, nv) vd[i] = u;
    WK_GPU_FOR(i, n - nv * V) dst[nv * V + i] = value;
}

template <typename E>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
cp_fill_strided(wk_gpu_layout<1> L, E *dst, E value)
{
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[1];
        wk_gpu_offsets(L, i, o);
        dst[o[0]] = value;
    }
}

wk_status wk_gpu_const_set(void *ctx, const wk_view *dst, const void *value)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const size_t esz = wk_gpu_dtype_size(dst->dtype);
    if (esz == 0) return cp_bad_dtype("const_set", dst->dtype);
    int64_t n = wk_gpu_numel(dst);
    if (n == 0) return WK_OK;
    WK_GPU_ENTER(c);
    unsigned char bytes[8];
    memcpy(bytes, value, esz);
    const int block = wk_gpu_ew_block(c);
    if (wk_gpu_is_contiguous(dst)) {
        void *d = wk_gpu_view_ptr(dst);
        bool same = true;
        for (size_t k = 1; k < esz; k++) same = same && bytes[k] == bytes[0];
        if (same) {
            WK_GPU_CHECK_C(c, hipMemsetAsync(d, bytes[0], (size_t)n * esz, c->stream));
            return WK_OK;
        }
        WK_GPU_DISPATCH_SIZE(esz, E, {
            constexpr int V = wk_vec_width<E>;
            E val;
            memcpy(&val, bytes, sizeof val);
            int vec = wk_gpu_aligned(d, 16);
            cp_fill_contig<E><<<wk_gpu_grid(c, (n + V - 1) / V, block, 4), block, 0, c->stream>>>((E *)d, n, val,
                                                                                                 vec);
        })
    } else {
        wk_gpu_layout<1> L;
        const wk_view *v[1] = { dst };
        wk_gpu_layout_make<1>(&L, v);
        WK_GPU_DISPATCH_SIZE(esz, E, {
            E val;
            memcpy(&val, bytes, sizeof val);
            cp_fill_strided<E><<<wk_gpu_grid(c, n, block, 4), block, 0, c->stream>>>(L, (E *)dst->base, val);
        })
    }
    WK_GPU_LAUNCH_CHECK(c, "const_set");
    return WK_OK;
}
