/* op_table.hip — the GPU backend's op table: one entry per op of
 * src/op_list.h that the plugin implements, wiring it to the entry point
 * of the file that holds its kernels, with the dtypes it takes. The
 * families the list describes fill themselves from it (a new unary op
 * needs no line here, only its kernel body in elementwise.hip). The
 * table is filled once, when the plugin's entry point runs (C++ has no
 * designated array initializers). */
#include "gpu_internal.h"

/* ---- adapters: a wk_op_args record -> the family entry points ---------- */

static wk_status ot_unary(void *ctx, const wk_op_args *a)
{
    return wk_gpu_unary(ctx, a->op, a->dst, a->src[0], a->p[0], a->p[1]);
}
static wk_status ot_binary(void *ctx, const wk_op_args *a)
{
    return wk_gpu_binary(ctx, a->op, a->dst, a->src[0], a->src[1]);
}
static wk_status ot_where(void *ctx, const wk_op_args *a)
{
    return wk_gpu_where_cond(ctx, a->dst, a->src[0], a->src[1], a->src[2]);
}
static wk_status ot_reduce(void *ctx, const wk_op_args *a)
{
    return wk_gpu_reduce(ctx, a->op, a->dst, a->src[0], a->dim_mask);
}
static wk_status ot_matmul(void *ctx, const wk_op_args *a) { return wk_gpu_matmul(ctx, a->dst, a->src[0], a->src[1]); }
static wk_status ot_index_select(void *ctx, const wk_op_args *a)
{
    return wk_gpu_index_select(ctx, a->dst, a->src[0], a->src[1], a->dim, a->flags & WK_OPF_IDS_CHECKED);
}
static wk_status ot_gather(void *ctx, const wk_op_args *a)
{
    return wk_gpu_gather(ctx, a->dst, a->src[0], a->src[1], a->dim, a->flags & WK_OPF_IDS_CHECKED);
}
static wk_status ot_scatter(void *ctx, const wk_op_args *a)
{
    return wk_gpu_scatter(ctx, a->op, a->dst, a->src[0], a->src[1], a->dim, a->flags & WK_OPF_IDS_CHECKED);
}
static wk_status ot_index_add(void *ctx, const wk_op_args *a)
{
    return wk_gpu_index_add(ctx, a->dst, a->src[0], a->src[1], a->dim, a->flags & WK_OPF_IDS_CHECKED);
}
static wk_status ot_copy(void *ctx, const wk_op_args *a) { return wk_gpu_copy(ctx, a->dst, a->src[0]); }
static wk_status ot_copy2d(void *ctx, const wk_op_args *a)
{
    const wk_view *d = a->dst, *s = a->src[0];
    return wk_gpu_copy2d(ctx, d->base, s->base, d->dtype, d->dims[0], d->dims[1], d->strides[0], s->strides[0],
                         d->offset, s->offset);
}
static wk_status ot_const_set(void *ctx, const wk_op_args *a) { return wk_gpu_const_set(ctx, a->dst, a->value); }
static wk_status ot_rand(void *ctx, const wk_op_args *a)
{
    return a->op == WK_OP_RAND_UNIFORM ? wk_gpu_rand_uniform(ctx, a->dst, a->seed, a->offset, a->p[0], a->p[1])
                                       : wk_gpu_rand_normal(ctx, a->dst, a->seed, a->offset, a->p[0], a->p[1]);
}

/* run function of each family the list describes (NULL: none here) */
#define OT_FAMILY_UNARY ot_unary
#define OT_FAMILY_BINARY ot_binary
#define OT_FAMILY_CMP ot_binary
#define OT_FAMILY_WHERE ot_where
#define OT_FAMILY_REDUCE ot_reduce
#define OT_FAMILY_MATMUL ot_matmul
#define OT_FAMILY_INDEX_SELECT ot_index_select
#define OT_FAMILY_GATHER ot_gather
#define OT_FAMILY_SCATTER ot_scatter
#define OT_FAMILY_INDEX_ADD ot_index_add
#define OT_FAMILY_COPY ot_copy
#define OT_FAMILY_COPY2D ot_copy2d
#define OT_FAMILY_CONST_SET ot_const_set
#define OT_FAMILY_RAND ot_rand
#define OT_FAMILY_SOFTMAX wk_gpu_softmax
#define OT_FAMILY_NORM wk_gpu_norm
#define OT_FAMILY_ROPE wk_gpu_rope
#define OT_FAMILY_ROPE_KV wk_gpu_rope_kv
#define OT_FAMILY_ATTENTION wk_gpu_attention
/* block-quantized ops (quant.hip); quantize is cleared below */
#define OT_FAMILY_QCONVERT wk_gpu_qconvert
#define OT_FAMILY_QMATMUL wk_gpu_qmatmul
#define OT_FAMILY_QGATHER wk_gpu_qgather
/* convolutions (conv.hip), pools and upsampling (pool.hip), arg_sort (sort.hip) */
#define OT_FAMILY_CONV wk_gpu_conv
#define OT_FAMILY_POOL wk_gpu_pool2d
#define OT_FAMILY_UPSAMPLE wk_gpu_upsample
#define OT_FAMILY_SORT wk_gpu_arg_sort
/* the fused products (gemv.hip) */
#define OT_FAMILY_LINEAR wk_gpu_linear
/* paged attention (paged_attention.hip) */
#define OT_FAMILY_PAGED_ATTENTION wk_gpu_paged_attention
#define OT_FAMILY_RESERVED NULL
#define OT_RUN_U(P) ot_unary
#define OT_RUN_P(P) ot_unary
#define OT_RUN_B(P) ot_binary
#define OT_RUN_C(P) ot_binary
#define OT_RUN_R(P) ot_reduce
#define OT_RUN_O(P) OT_FAMILY_##P

static wk_op_impl ot_ops[WK_OP_COUNT];

const wk_op_impl *wk_gpu_op_table(void)
{
    if (!ot_ops[WK_OP_COPY].run) {          /* first call: fill it (idempotent) */
#define OT_ENTRY_(K, N, S, P, D) ot_ops[WK_OP_##N] = wk_op_impl{ OT_RUN_##K(P), D, NULL };
        WK_OP_LIST(OT_ENTRY_)
#undef OT_ENTRY_
        /* attention, paged attention: no f64 kernel on the GPU */
        ot_ops[WK_OP_ATTENTION].dtypes &= ~WK_DT_BIT(WK_F64);
        ot_ops[WK_OP_PAGED_ATTENTION].dtypes &= ~WK_DT_BIT(WK_F64);
        /* qmatmul of a dense f16/bf16 weight: the cpu only (GPUs widen
           such weights at load and run matmul) */
        ot_ops[WK_OP_QMATMUL].dtypes &= WK_DT_QUANTS;
        /* quantize: the cpu only (llama.cpp's reference quantizers) */
        ot_ops[WK_OP_QUANTIZE] = wk_op_impl{ NULL, WK_DT_NONE, NULL };
    }
    return ot_ops;
}

bool wk_gpu_op_takes(wk_op op, wk_dtype dt)
{
    return (unsigned)op < WK_OP_COUNT && (unsigned)dt < WK_DTYPE_COUNT && (wk_op_dtypes(op) & WK_DT_BIT(dt)) != 0;
}
