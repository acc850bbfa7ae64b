/* random.hip — rand_uniform and rand_normal on the GPU: Philox4x32-10 and
 * the float mapping of docs/random.md, through the same inline functions
 * the CPU backend uses (src/core/philox.h), so uniform values match the
 * CPU bit for bit and normal values within the platform's logf/cosf/sinf.
 *
 * Each thread computes whole Philox blocks (grid-stride, 64-bit block
 * index): 4 elements per block for every dtype but f64, 2 for f64; the
 * dtype rounding happens after the f32 (or f64) value is made. Where dst
 * is aligned, a block's elements are stored as one unit. The build
 * compiles this file without a*b+c contraction (nvcc -fmad=false), so no
 * step is fused beyond the explicit fmaf of the spec.
 */
#include "gpu_internal.h"
#include "../core/philox.h"

struct rnd_args {
    uint64_t seed, offset;
    wk_rand_params_f32 pf;     /* not f64: (lo, span) or (mean, std) in f32 */
    double a, b;               /* f64: (lo, hi) or (mean, std)              */
};

template <typename T, bool NORMAL>
__global__ void rnd_fill(T *__restrict__ dst, int64_t n, rnd_args r, int vec)
{
    if constexpr (std::is_same<T, double>::value) {
        const int64_t nb = (n + 1) / 2;
        WK_GPU_FOR(b, nb) {
            double v[2];
            if (NORMAL) wk_rand_normal_block_f64x2(r.seed, r.offset, (uint64_t)b, r.a, r.b, v);
            else wk_rand_uniform_block_f64(r.seed, r.offset, (uint64_t)b, r.a, r.b, v);
            int64_t e = 2 * b;
            if (vec && e + 1 < n) {
                wk_vec<double, 2> u;
                u.v[0] = v[0];
                u.v[1] = v[1];
                *(wk_vec<double, 2> *)(dst + e) = u;
            } else {
                for (int k = 0; k < 2 && e + k < n; k++) dst[e + k] = v[k];
            }
        }
    } else {
        const int64_t nb = (n + 3) / 4;
        WK_GPU_FOR(b, nb) {
            float v[4];
            if (NORMAL) wk_rand_normal_block_f32(r.seed, r.offset, (uint64_t)b, r.pf, v);
            else wk_rand_uniform_block_f32(r.seed, r.offset, (uint64_t)b, r.pf, v);
            int64_t e = 4 * b;
            if (vec && e + 3 < n) {
                wk_vec<T, 4> u;
#pragma unroll
                for (int k = 0; k < 4; k++) u.v[k] = wk_to<T>(v[k]);
                *(wk_vec<T, 4> *)(dst + e) = u;
            } else {
                for (int k = 0; k < 4 && e + k < n; k++) dst[e + k] = wk_to<T>(v[k]);
            }
        }
    }
}

static wk_status rnd_run(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double a, double b,
                         bool normal)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_dtype dt = dst->dtype;
    if (!wk_gpu_op_takes(normal ? WK_OP_RAND_NORMAL : WK_OP_RAND_UNIFORM, dt))
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtype %s is not a float dtype",
                                      normal ? "rand_normal" : "rand_uniform", wk_gpu_dtype_name(dt));
    if (!wk_gpu_is_contiguous(dst))
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s: the destination must be contiguous",
                                      normal ? "rand_normal" : "rand_uniform");
    int64_t n = wk_gpu_numel(dst);
    if (n == 0) return WK_OK;
    WK_GPU_ENTER(c);
    rnd_args r;
    r.seed = seed;
    r.offset = offset;
    r.pf = normal ? wk_rand_normal_params_f32(a, b) : wk_rand_uniform_params_f32(a, b);
    r.a = a;
    r.b = b;
    void *d = wk_gpu_view_ptr(dst);
    const int block = wk_gpu_ew_block(c);
    const int per_block = dt == WK_F64 ? 2 : 4;
    const unsigned grid = wk_gpu_grid(c, (n + per_block - 1) / per_block, block, 4);
    const int vec = wk_gpu_aligned(d, wk_gpu_dtype_size(dt) * (size_t)per_block);
    WK_GPU_DISPATCH_FLOAT(dt, T, {
        if (normal) rnd_fill<T, true><<<grid, block, 0, c->stream>>>((T *)d, n, r, vec);
        else rnd_fill<T, false><<<grid, block, 0, c->stream>>>((T *)d, n, r, vec);
    })
    WK_GPU_LAUNCH_CHECK(c, normal ? "rand_normal" : "rand_uniform");
    return WK_OK;
}

wk_status wk_gpu_rand_uniform(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double lo, double hi)
{
    return rnd_run(ctx, dst, seed, offset, lo, hi, false);
}

wk_status wk_gpu_rand_normal(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double mean, double std)
{
    return rnd_run(ctx, dst, seed, offset, mean, std, true);
}
