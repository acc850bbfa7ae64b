/* attention.hip — the GPU's attention (placeholder: being written). */
#include "gpu_internal.h"

wk_status wk_gpu_attention(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "op %d is not written yet", (int)a->op);
}
