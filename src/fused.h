/* fused.h — what a fused op of the LINEAR family (backend.h) stands for,
 * run through a backend's own op table: MATMUL of its two operands into
 * y, then the op that follows (its params). The cpu runs every LINEAR op
 * this way, and a GPU wherever its one-launch kernel does not take the
 * operands, so the result has the bits of the two ops the core would
 * otherwise have run on that device (docs/fused-ops.md). Host code; C
 * and C++. */
#ifndef WICK_FUSED_H
#define WICK_FUSED_H

#include <string.h>
#include "view.h"

/* The op that follows the product of LINEAR op a. */
static inline const wk_op_args *wk_linear_then(const wk_op_args *a) { return (const wk_op_args *)a->params; }

/* Bytes of y, the product of LINEAR op a (src[2]). */
static inline size_t wk_linear_y_bytes(const wk_op_args *a)
{
    return (size_t)wk_dt_bytes_of(a->src[2]->dtype, wk_view_numel(a->src[2]));
}

/* Run LINEAR op a as its two ops on the backend whose table is ops (and
 * context ctx), with y (wk_linear_y_bytes of that backend's memory)
 * holding the product: MATMUL into y, then the op that follows with its
 * views of y (base NULL) pointed at y. */
static inline wk_status wk_linear_composed(const wk_op_impl *ops, void *ctx, const wk_op_args *a, void *y)
{
    wk_view yv = *a->src[2];
    yv.base = y;
    wk_op_args m;
    memset(&m, 0, sizeof m);
    m.op = WK_OP_MATMUL;
    m.dst = &yv;
    m.src[0] = a->src[0];
    m.src[1] = a->src[1];
    wk_status st = ops[WK_OP_MATMUL].run(ctx, &m);
    if (st != WK_OK) return st;
    wk_op_args t = *wk_linear_then(a);
    wk_view v[4];
    for (int i = 0; i < 4; i++)
        if (t.src[i] && !t.src[i]->base) {
            v[i] = *t.src[i];
            v[i].base = y;
            t.src[i] = &v[i];
        }
    return ops[t.op].run(ctx, &t);
}

#endif /* WICK_FUSED_H */
