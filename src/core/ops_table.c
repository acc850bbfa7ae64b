/* ops_table.c — what the core knows of every op, generated from
 * src/op_list.h: names, families, the ops behind the public enums
 * (wk_unary_op, wk_binary_op, wk_cmp_op, wk_reduce_op, with static
 * asserts that those enums match the list), and wk_supports, which asks
 * a device's op table. */
#include <string.h>
#include "core.h"
#include "wick_comm.h"
#include "wick_ext.h"

static const char *const op_names[] = {
#define NAME_(K, N, S, P, D) S,
    WK_OP_LIST(NAME_)
#undef NAME_
    NULL,
};
_Static_assert(sizeof op_names / sizeof op_names[0] == WK_OP_COUNT + 1, "one name per wk_op");

static const unsigned char op_families[WK_OP_COUNT] = {
#define FAM_(K, N, S, P, D) [WK_OP_##N] = WK_OP_FAMILY(K, P),
    WK_OP_LIST(FAM_)
#undef FAM_
};

/* ---- the public enums against the list --------------------------------
 * For each kind with a public enum: the enum has exactly one value per
 * line of that kind (count), each line's value is in range, and the
 * designated initializers below give each value one op (a value listed
 * twice is a duplicate initializer, which -Woverride-init reports; with
 * the count, a missing one is impossible). */
#define COUNT_U_(K, N, S, P, D) +WK_OP_IS_##K##_U
#define WK_OP_IS_U_U 1
#define WK_OP_IS_B_U 0
#define WK_OP_IS_C_U 0
#define WK_OP_IS_R_U 0
#define WK_OP_IS_O_U 0
#define WK_OP_IS_U_B 0
#define WK_OP_IS_B_B 1
#define WK_OP_IS_C_B 0
#define WK_OP_IS_R_B 0
#define WK_OP_IS_O_B 0
#define WK_OP_IS_U_C 0
#define WK_OP_IS_B_C 0
#define WK_OP_IS_C_C 1
#define WK_OP_IS_R_C 0
#define WK_OP_IS_O_C 0
#define WK_OP_IS_U_R 0
#define WK_OP_IS_B_R 0
#define WK_OP_IS_C_R 0
#define WK_OP_IS_R_R 1
#define WK_OP_IS_O_R 0
#define WK_OP_IS_P_U 0
#define WK_OP_IS_P_B 0
#define WK_OP_IS_P_C 0
#define WK_OP_IS_P_R 0
#define COUNT_B_(K, N, S, P, D) +WK_OP_IS_##K##_B
#define COUNT_C_(K, N, S, P, D) +WK_OP_IS_##K##_C
#define COUNT_R_(K, N, S, P, D) +WK_OP_IS_##K##_R
_Static_assert(0 WK_OP_LIST(COUNT_U_) == WK_UNARY_COUNT, "wk_unary_op has one value per U line of op_list.h");
_Static_assert(0 WK_OP_LIST(COUNT_B_) == WK_BINARY_COUNT, "wk_binary_op has one value per B line of op_list.h");
_Static_assert(0 WK_OP_LIST(COUNT_C_) == WK_CMP_COUNT, "wk_cmp_op has one value per C line of op_list.h");
_Static_assert(0 WK_OP_LIST(COUNT_R_) == WK_REDUCE_COUNT, "wk_reduce_op has one value per R line of op_list.h");

/* public value -> op, one table per kind */
#define PUB_(K, N, S, P, D) PUB_##K(N, P)
#define PUB_TABLE_(KIND, COUNT)                                                                     \
    static const wk_op KIND##_ops[COUNT] = { WK_OP_LIST(PUB_) };
#define PUB_U(N, P) [P] = WK_OP_##N,
#define PUB_B(N, P)
#define PUB_C(N, P)
#define PUB_R(N, P)
#define PUB_O(N, P)
#define PUB_P(N, P)
PUB_TABLE_(unary, WK_UNARY_COUNT)
#undef PUB_U
#undef PUB_B
#define PUB_U(N, P)
#define PUB_B(N, P) [P] = WK_OP_##N,
PUB_TABLE_(binary, WK_BINARY_COUNT)
#undef PUB_B
#undef PUB_C
#define PUB_B(N, P)
#define PUB_C(N, P) [P] = WK_OP_##N,
PUB_TABLE_(cmp, WK_CMP_COUNT)
#undef PUB_C
#undef PUB_R
#define PUB_C(N, P)
#define PUB_R(N, P) [P] = WK_OP_##N,
PUB_TABLE_(reduce, WK_REDUCE_COUNT)

wk_op wk_op_of_unary(wk_unary_op op) { return (unsigned)op < WK_UNARY_COUNT ? unary_ops[op] : WK_OP_COUNT; }
wk_op wk_op_of_binary(wk_binary_op op) { return (unsigned)op < WK_BINARY_COUNT ? binary_ops[op] : WK_OP_COUNT; }
wk_op wk_op_of_cmp(wk_cmp_op op) { return (unsigned)op < WK_CMP_COUNT ? cmp_ops[op] : WK_OP_COUNT; }
wk_op wk_op_of_reduce(wk_reduce_op op) { return (unsigned)op < WK_REDUCE_COUNT ? reduce_ops[op] : WK_OP_COUNT; }

/* ---- names and families -------------------------------------------------- */

const char *wk_op_name(wk_op op) { return (unsigned)op < WK_OP_COUNT ? op_names[op] : "?"; }
const char *const *wk_op_names(void) { return op_names; }
wk_op_family wk_op_family_of(wk_op op)
{
    return (unsigned)op < WK_OP_COUNT ? (wk_op_family)op_families[op] : WK_FAMILY_COUNT;
}

const char *wk_unary_name(wk_unary_op op) { return wk_op_name(wk_op_of_unary(op)); }
const char *wk_binary_name(wk_binary_op op) { return wk_op_name(wk_op_of_binary(op)); }
const char *wk_cmp_name(wk_cmp_op op) { return wk_op_name(wk_op_of_cmp(op)); }

/* ---- support ------------------------------------------------------------- */

bool wk_supports(wk_device *dev, const char *op, wk_dtype dt)
{
    if (!dev || !op || !wk_dtype_valid(dt)) return false;
    if (strcmp(op, "rtc") == 0) return wk_rtc_available(dev);   /* kernels compiled at run time */
    if (strcmp(op, "graph") == 0) return wk_graph_supported(dev);   /* recorded work (graph.c) */
    if (strcmp(op, "all_reduce") == 0) return wk_comm_supports(dev, dt);   /* collectives (wick_comm.h) */
    if (strcmp(op, "all_gather") == 0 || strcmp(op, "broadcast") == 0)
        return !wk_dtype_is_quantized(dt) && wk_comm_available(dev);
    for (int i = 0; i < WK_OP_COUNT; i++)
        if (strcmp(op, op_names[i]) == 0) return wk_device_supports(dev, (wk_op)i, dt);
    return false;
}

bool wk_check_supported(wk_device *dev, wk_op op, wk_dtype dt)
{
    if (wk_device_supports(dev, op, dt)) return true;
    if (wk_dtype_is_quantized(dt))
        wk_error(WK_ERR_UNSUPPORTED, "%s does not take block-quantized tensors (%s) on %s", wk_op_name(op),
                 wk_dtype_name(dt), dev->name);
    else
        wk_error(WK_ERR_UNSUPPORTED, "%s is not supported for %s on %s", wk_op_name(op), wk_dtype_name(dt), dev->name);
    return false;
}
