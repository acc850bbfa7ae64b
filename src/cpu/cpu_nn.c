/* cpu_nn.c — the cpu's softmax/log_softmax, norms and ropes (placeholder:
 * being written). */
#include "cpu_internal.h"

wk_status wk_cpu_softmax(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "%s is not written yet", wk_op_name(a->op));
}
wk_status wk_cpu_norm(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "%s is not written yet", wk_op_name(a->op));
}
wk_status wk_cpu_rope(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "%s is not written yet", wk_op_name(a->op));
}
