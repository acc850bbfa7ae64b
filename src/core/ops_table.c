/* ops_table.c — the name of every backend op (wk_op), and wk_supports,
 * which answers by name for a device. */
#include <string.h>
#include "core.h"

static const char *const op_names[] = {
    "exp", "log", "sin", "cos", "tanh", "abs", "neg", "recip", "sqr", "sqrt",
    "gelu", "gelu_erf", "erf", "relu", "silu", "floor", "ceil", "round", "sign",
    "affine", "powf", "elu",
    "add", "sub", "mul", "div", "minimum", "maximum",
    "eq", "ne", "lt", "le", "gt", "ge",
    "where_cond",
    "sum", "min", "max", "argmin", "argmax",
    "matmul",
    "index_select", "gather", "scatter_set", "scatter_add", "index_add",
    "copy", "copy2d", "const_set",
    "rand_uniform", "rand_normal",
    "conv1d", "conv_transpose1d", "conv2d", "conv_transpose2d",
    "avg_pool2d", "max_pool2d", "upsample_nearest1d",
    "upsample_nearest2d", "upsample_bilinear2d", "arg_sort",
    "softmax", "rms_norm", "layer_norm", "rope",
    "attention", "qmatmul", "custom",
    NULL,
};
_Static_assert(sizeof op_names / sizeof op_names[0] == WK_OP_COUNT + 1, "one name per wk_op");

const char *wk_op_name(wk_op op) { return (unsigned)op < WK_OP_COUNT ? op_names[op] : "?"; }
const char *const *wk_op_names(void) { return op_names; }

const char *wk_unary_name(wk_unary_op op)
{
    return (unsigned)op < WK_UNARY_COUNT ? op_names[WK_OP_UNARY_FIRST + op] : "?";
}
const char *wk_binary_name(wk_binary_op op)
{
    return (unsigned)op < WK_BINARY_COUNT ? op_names[WK_OP_BINARY_FIRST + op] : "?";
}
const char *wk_cmp_name(wk_cmp_op op)
{
    return (unsigned)op < WK_CMP_COUNT ? op_names[WK_OP_CMP_FIRST + op] : "?";
}

bool wk_supports(wk_device *dev, const char *op, wk_dtype dt)
{
    if (!dev || !op || !wk_dtype_valid(dt)) return false;
    for (int i = 0; i < WK_OP_COUNT; i++)
        if (strcmp(op, op_names[i]) == 0) return dev->be->supports(dev->ctx, (wk_op)i, dt);
    return false;
}

bool wk_check_supported(wk_device *dev, wk_op op, wk_dtype dt)
{
    if (dev->be->supports(dev->ctx, op, dt)) return true;
    wk_error(WK_ERR_UNSUPPORTED, "%s is not supported for %s on %s", wk_op_name(op), wk_dtype_name(dt), dev->name);
    return false;
}
