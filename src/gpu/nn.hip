/* nn.hip — the GPU's softmax/log_softmax, norms and ropes (placeholder:
 * being written). */
#include "gpu_internal.h"

wk_status wk_gpu_softmax(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "op %d is not written yet", (int)a->op);
}
wk_status wk_gpu_norm(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "op %d is not written yet", (int)a->op);
}
wk_status wk_gpu_rope(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "op %d is not written yet", (int)a->op);
}
