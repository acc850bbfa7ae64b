/* random.c — front-end of rand_uniform / rand_normal: reserves the
 * generator blocks a call uses (docs/random.md) and lets the backend fill
 * a fresh contiguous tensor. */
#include <math.h>
#include "core.h"

static wk_tensor *rand_impl(wk_op op, wk_device *dev, wk_dtype dt, wk_shape shape, double p0, double p1)
{
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "NULL device");
        return NULL;
    }
    if (!wk_dtype_valid(dt) || !wk_dtype_is_float(dt)) {
        wk_error(WK_ERR_DTYPE, "needs a float dtype, not %s", wk_dtype_name(dt));
        return NULL;
    }
    if (!isfinite(p0) || !isfinite(p1) || (op == WK_OP_RAND_UNIFORM && p1 < p0) || (op == WK_OP_RAND_NORMAL && p1 < 0)) {
        wk_error(WK_ERR_ARGUMENT, op == WK_OP_RAND_UNIFORM ? "bad bounds lo %g, hi %g" : "bad mean %g or std %g", p0, p1);
        return NULL;
    }
    if (!wk_shape_valid("shape", shape) || !wk_check_supported(dev, op, dt)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, dt, shape.rank, shape.dims);
    if (!out) return NULL;
    int64_t n = wk_numel(shape.rank, shape.dims);
    if (n == 0) return out;
    uint64_t seed, off = wk_device_rng_take(dev, wk_rand_blocks(dt, n, op == WK_OP_RAND_NORMAL), &seed);
    wk_view v = wk_view_of(out);
    wk_op_args a = { .op = op, .dst = &v, .p = { p0, p1 }, .seed = seed, .offset = off };
    wk_status st = wk_run(dev, &a);
    return wk_finish(st, out);
}

wk_tensor *wk_rand_uniform(wk_device *dev, wk_dtype dt, wk_shape shape, double lo, double hi)
    WK_API(wk_tensor *, "rand_uniform", rand_impl(WK_OP_RAND_UNIFORM, dev, dt, shape, lo, hi))
wk_tensor *wk_rand_normal(wk_device *dev, wk_dtype dt, wk_shape shape, double mean, double std)
    WK_API(wk_tensor *, "rand_normal", rand_impl(WK_OP_RAND_NORMAL, dev, dt, shape, mean, std))
