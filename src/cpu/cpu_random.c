/* cpu_random.c — rand_uniform / rand_normal on the CPU: fills a contiguous
 * float tensor from Philox4x32-10 with the element mapping of
 * docs/random.md (src/core/philox.h holds the generator, shared with the
 * GPU kernels, so every device gives the same values).
 *
 * Fast: the generator is counter based, so any block can be computed on
 * its own; the fill is split over the thread pool by block, each thread
 * turning whole blocks (4 values, 2 for f64) into its stretch of dst. */
#include <math.h>
#include "cpu_internal.h"
#include "../core/philox.h"

typedef struct rand_job {
    void *base;            /* dst element 0                              */
    wk_dtype dt;
    int64_t n;             /* elements                                   */
    uint64_t seed, offset;
    bool normal;
    wk_rand_params_f32 p32;
    double a, b;           /* f64: lo/hi or mean/std                     */
} rand_job;

static void store_f32_as(void *base, wk_dtype dt, int64_t i, float v)
{
    switch (dt) {
    case WK_F32: ((float *)base)[i] = v; break;
    case WK_BF16: ((uint16_t *)base)[i] = wk_f32_to_bf16(v); break;
    case WK_F16: ((uint16_t *)base)[i] = wk_f32_to_f16(v); break;
    case WK_F8E4M3: ((uint8_t *)base)[i] = wk_f32_to_f8e4m3(v); break;
    default: break;
    }
}

/* blocks [begin, end) of the call */
static inline __attribute__((always_inline)) void rand_range_body(void *arg, int64_t begin, int64_t end)
{
    const rand_job *j = (const rand_job *)arg;
    if (j->dt == WK_F64) {
        double *d = (double *)j->base;
        for (int64_t b = begin; b < end; b++) {
            double v[2];
            if (j->normal) wk_rand_normal_block_f64x2(j->seed, j->offset, (uint64_t)b, j->a, j->b, v);
            else wk_rand_uniform_block_f64(j->seed, j->offset, (uint64_t)b, j->a, j->b, v);
            int64_t i0 = 2 * b;
            d[i0] = v[0];
            if (i0 + 1 < j->n) d[i0 + 1] = v[1];
        }
        return;
    }
    for (int64_t b = begin; b < end; b++) {
        float v[4];
        if (j->normal) wk_rand_normal_block_f32(j->seed, j->offset, (uint64_t)b, j->p32, v);
        else wk_rand_uniform_block_f32(j->seed, j->offset, (uint64_t)b, j->p32, v);
        int64_t i0 = 4 * b;
        int64_t cnt = j->n - i0 < 4 ? j->n - i0 : 4;
        if (j->dt == WK_F32 && cnt == 4) {
            memcpy((float *)j->base + i0, v, sizeof v);
        } else {
            for (int64_t k = 0; k < cnt; k++) store_f32_as(j->base, j->dt, i0 + k, v[k]);
        }
    }
}

static void rand_range(void *arg, int64_t begin, int64_t end) { rand_range_body(arg, begin, end); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__FMA__)
/* The same code with FMA enabled, so fmaf/fma become one instruction
 * instead of a library call (the result is the same: fma is exactly
 * rounded either way); picked at run time. */
__attribute__((target("fma")))
static void rand_range_fma(void *arg, int64_t begin, int64_t end) { rand_range_body(arg, begin, end); }

static wk_range_fn pick_range(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("fma") ? rand_range_fma : rand_range;
}
#else
static wk_range_fn pick_range(void) { return rand_range; }
#endif

static wk_status rand_fill(const wk_view *dst, uint64_t seed, uint64_t offset, bool normal, double a, double b)
{
    wk_dtype dt = dst->dtype;
    if (dt != WK_F32 && dt != WK_F64 && dt != WK_BF16 && dt != WK_F16 && dt != WK_F8E4M3)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "random numbers need a float dtype");
    int64_t n = wk_view_numel(dst);
    if (n <= 0) return WK_OK;
    rand_job j;
    j.base = (char *)dst->base + (size_t)dst->offset * wk_cpu_dtype_size(dt);
    j.dt = dt;
    j.n = n;
    j.seed = seed;
    j.offset = offset;
    j.normal = normal;
    j.a = a;
    j.b = b;
    j.p32 = normal ? wk_rand_normal_params_f32(a, b) : wk_rand_uniform_params_f32(a, b);
    int64_t blocks = (int64_t)wk_rand_blocks(dt, n, normal);
    /* a block costs about as much as 100 simple element ops */
    wk_parallel_for(blocks, normal ? 64 : 256, pick_range(), &j);
    return WK_OK;
}

wk_status wk_cpu_rand_uniform(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double lo, double hi)
{
    (void)ctx;
    return rand_fill(dst, seed, offset, false, lo, hi);
}

wk_status wk_cpu_rand_normal(void *ctx, const wk_view *dst, uint64_t seed, uint64_t offset, double mean, double std)
{
    (void)ctx;
    return rand_fill(dst, seed, offset, true, mean, std);
}
