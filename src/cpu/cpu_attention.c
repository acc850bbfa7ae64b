/* cpu_attention.c — the cpu's attention (placeholder: being written). */
#include "cpu_internal.h"

wk_status wk_cpu_attention(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "%s is not written yet", wk_op_name(a->op));
}
