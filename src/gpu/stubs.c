/* stubs.c — weak stand-ins for the GPU backend's op entry points that
 * live in other files (reduce, matmul, indexing): each reports
 * WK_ERR_UNSUPPORTED and its supports() hook answers false, so the plugin
 * links and loads whichever of those files exist. A file that defines the
 * real function overrides the stand-in at link time. Plain C, compiled
 * apart from the .hip sources (the ROCm plugin builds those as one
 * translation unit, where a weak and a strong definition would clash). */
#include "gpu_entry.h"

static wk_status stub_unsupported(const char *what)
{
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "%s is not implemented by this GPU backend", what);
}

__attribute__((weak)) wk_status wk_gpu_reduce(void *ctx, wk_op op, const wk_view *dst, const wk_view *src,
                                              uint32_t dim_mask)
{
    (void)ctx; (void)op; (void)dst; (void)src; (void)dim_mask;
    return stub_unsupported("reduce");
}

__attribute__((weak)) wk_status wk_gpu_matmul(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b)
{
    (void)ctx; (void)dst; (void)a; (void)b;
    return stub_unsupported("matmul");
}

__attribute__((weak)) wk_status wk_gpu_index_select(void *ctx, const wk_view *dst, const wk_view *src,
                                                    const wk_view *ids, int dim)
{
    (void)ctx; (void)dst; (void)src; (void)ids; (void)dim;
    return stub_unsupported("index_select");
}

__attribute__((weak)) wk_status wk_gpu_gather(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids,
                                              int dim)
{
    (void)ctx; (void)dst; (void)src; (void)ids; (void)dim;
    return stub_unsupported("gather");
}

__attribute__((weak)) wk_status wk_gpu_scatter(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids,
                                               const wk_view *src, int dim)
{
    (void)ctx; (void)op; (void)dst; (void)ids; (void)src; (void)dim;
    return stub_unsupported("scatter");
}

__attribute__((weak)) wk_status wk_gpu_index_add(void *ctx, const wk_view *dst, const wk_view *ids,
                                                 const wk_view *src, int dim)
{
    (void)ctx; (void)dst; (void)ids; (void)src; (void)dim;
    return stub_unsupported("index_add");
}

__attribute__((weak)) bool wk_gpu_reduce_supports(void *ctx, wk_op op, wk_dtype dt)
{
    (void)ctx; (void)op; (void)dt;
    return false;
}

__attribute__((weak)) bool wk_gpu_matmul_supports(void *ctx, wk_op op, wk_dtype dt)
{
    (void)ctx; (void)op; (void)dt;
    return false;
}

__attribute__((weak)) bool wk_gpu_index_supports(void *ctx, wk_op op, wk_dtype dt)
{
    (void)ctx; (void)op; (void)dt;
    return false;
}
